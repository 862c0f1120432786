/* checkpoint.h - checkpoint writing and reading: the writer's header
 * (checkpoint.c), the strict in-memory parser (checkpoint_parse.c), and the
 * transfers of a layout's entries between the device and host memory that
 * the save and the load share (checkpoint_transfer.c). The file format they
 * agree on is checkpoint_format.h's. */
#ifndef CLGRAD_CHECKPOINT_H
#define CLGRAD_CHECKPOINT_H

#include "checkpoint_format.h"

/* ------------------------------------------------------------ writer (checkpoint.c) */

/* Builds the space-padded JSON header for data (layout->data_size bytes,
 * entries contiguous in layout order), filling each entry's offsets and
 * CRC. User keys must not start with "clgrad.". *header is malloc'ed; its
 * length *header_len is a multiple of 8. */
clg_status clg__ckpt_header(clg_ckpt_layout *layout, const uint8_t *data,
                            const clg_cycle_state *state, const char *const *meta_keys,
                            const char *const *meta_values, size_t n_meta, char **header,
                            size_t *header_len, char *err, size_t errlen);

/* ------------------------------------------------------------ parser (checkpoint_parse.c) */

typedef struct clg_ckpt_parsed {
    clg_cycle_state state;  /* counters + the step block entry */
    const uint8_t *data;    /* start of the data section (inside the file) */
    size_t n_meta;          /* the caller's metadata, in file order */
    const char **meta_keys; /* point into json */
    const char **meta_values;
    void *json;             /* cJSON root, owned */
} clg_ckpt_parsed;

/* Parses and validates a whole checkpoint file held in memory against the
 * expected layout: header length, header CRC (before any JSON), JSON,
 * format and version, optimizer and configuration values, every entry's
 * dtype/shape/offsets, contiguity, CRCs, and the counters stored twice.
 * On success the layout's entries hold their offsets and *out is filled (free with
 * clg__ckpt_parsed_free). On failure *out is empty and err says why:
 * CLG_ERR_CORRUPT_FILE (damaged or not a checkpoint), CLG_ERR_MISMATCH
 * (valid, but for another model), CLG_ERR_OUT_OF_HOST_MEMORY. */
clg_status clg__ckpt_parse(const uint8_t *file, size_t size, clg_ckpt_layout *layout,
                           clg_ckpt_parsed *out, char *err, size_t errlen);
void clg__ckpt_parsed_free(clg_ckpt_parsed *parsed);
/* The parse's checks of the header alone (length, CRC, JSON, metadata,
 * clgrad's keys, format and version) on a file image of which only the 8
 * length bytes and the header need be present (size may end there); then
 * the caller's metadata, in file order, to meta (may be NULL). Returns as
 * clg__ckpt_parse. */
clg_status clg__ckpt_parse_header(const uint8_t *file, size_t size, clg_meta_fn meta, void *user,
                                  char *err, size_t errlen);

/* ------------------------------------------------------------ values (checkpoint_values.c) */

/* The values of a parsed file (data: its data section, entries at their
 * file offsets) that no update could have produced: a Q8/Q4 absmax that
 * is not finite or is negative; an fp32/bf16 optimizer state that is not
 * finite when policy (the file's clgrad.nonfinite) is not "ignore"; a loss
 * scale or growth tracker in step_block (NULL: the layout has none)
 * outside what layout->loss_scale allows. CLG_ERR_CORRUPT_FILE with err
 * naming the tensor or word, the index and the value: the step block's
 * first, then the first one found in layout order. */
clg_status clg__ckpt_check_values(const clg_ckpt_layout *layout, const uint8_t *data,
                                  const uint32_t *step_block, const char *policy, char *err,
                                  size_t errlen);

/* ------------------------------------------------ device side (checkpoint_transfer.c) */

/* Reads every entry of layout from the device into one malloc'ed buffer
 * (at the canonical offsets) and the cycle state into *state. Blocking.
 * images: NULL, or a host image of every optimizer state over the layout
 * space (a sharded model's, gathered) to take the states from instead. */
clg_status clg__ckpt_collect(clg_model *model, const clg_ckpt_layout *layout,
                             const void *const *images, uint8_t **data, clg_cycle_state *state);
/* Writes every entry from data to the device, then sets the cycle state.
 * Entries are taken at their file offsets (file_offsets != 0, after a
 * parse) or at the canonical ones (a buffer from clg__ckpt_collect).
 * Blocking. */
clg_status clg__ckpt_apply(clg_model *model, const clg_ckpt_layout *layout, const uint8_t *data,
                           int file_offsets, const clg_cycle_state *state);

#endif /* CLGRAD_CHECKPOINT_H */
