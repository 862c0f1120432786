/* checkpoint.h - the checkpoint file format shared by the writer
 * (checkpoint.c), the strict in-memory parser (checkpoint_parse.c) and the
 * loader (checkpoint_load.c).
 *
 * A checkpoint (format version 2) is a safetensors file:
 *     [u64 LE header length][JSON header, space-padded to 8][data]
 * The header maps each tensor key to {"dtype", "shape", "data_offsets"}
 * (offsets relative to the start of the data, contiguous, no holes) and
 * holds a "__metadata__" string map. Keys of a model tensor <name>, each
 * with the tensor's own shape (clg_model_tensor_shape; 1-D [count] unless
 * the caller set one):
 *     <name>            parameters, F32 (BF16 under master_dtype bf16)
 *     <name>.state<i>   optimizer state i as stored: F32, BF16, or the U8
 *                       codes of Q8/Q4 states (Q4: [bytes], two codes per
 *                       byte as clg_model_download_state_raw gives them)
 *     <name>.state<i>.absmax  Q8/Q4: its fp32 absmax per block, F32
 *     <name>.copy       low-precision parameter copy, F16 or BF16 (if any)
 *     <name>.acc        accumulator, F32 or BF16
 *     <key>             a part another object attached (ckpt_ext.h), e.g.
 *                       a clg_contrastive's banks, in the part's shape
 *     clgrad.step_block the device step block, I32 [32]: its uint32 words
 *                       (float bits or counters, cl/layout.py) stored as
 *                       int32 with the same bytes, since torch 1.13
 *                       (Debian 12's) has no uint32 and cannot load U32
 * Every dtype is one torch 1.13 loads (F32, F16, BF16, I32, U8).
 *
 * The header is protected like the data. It begins with exactly
 *     {"__metadata__":{"clgrad.header_crc32":"0x<8 lowercase hex digits>",
 * (CLG_CKPT_HEADER_PREFIX, then the digits and a closing quote), and those
 * digits are the CRC-32 of the 8 length bytes and the whole header (its
 * padding included) with the 8 digits taken as '0'. The reader checks it
 * first, on the raw bytes, before it parses any JSON. A fixed-width value
 * at a fixed place in the first metadata entry was chosen over a footer
 * after the data: it keeps the file plain safetensors (safetensors refuses
 * bytes after the last tensor), it is found without parsing, and it covers
 * the caller's metadata and the header length too.
 *
 * The rest of clgrad's metadata ("clgrad." keys; every other key is the
 * caller's): format, version, optimizer; the training configuration a
 * checkpoint must match (CLG_CKPT_CONFIG_KEYS in checkpoint_parse.c: what
 * changes the meaning of the saved state); the host cycle counters (micro,
 * weight_sum as exact float bits "0x3f800000", cycles, micro_total); the
 * step block's counters again in decimal (updates, skipped_updates,
 * skipped_micro_steps), which the reader cross-checks with the step block
 * and with each other; and "clgrad.crc32.<key>" for every tensor.
 *
 * Version 1 files (no header CRC, 1-D shapes, a U32 step block) are
 * refused with a message saying so: their header cannot be verified.
 *
 * Nothing else is needed mid-cycle: the noise-scale estimate's first
 * micro-step statistics and weight, and skip-micro mode's counters, live in
 * the step block; the reduction partials never outlive the call that
 * wrote them.
 *
 * Host memory: a save stages the whole state once; a load stages the file
 * and a copy of the live state (to undo a device failure half-way through).
 *
 * The layout (which tensors, which dtypes and shapes, in which order, and
 * the configuration values) is derived from the live model, so the writer
 * and the reader agree by construction; the layout helpers and the parser
 * (checkpoint_parse.c) work on bytes in memory and need no device (fuzz/
 * links them alone). */
#ifndef CLGRAD_CHECKPOINT_H
#define CLGRAD_CHECKPOINT_H

#include "ckpt_ext.h"
#include "model.h"

#define CLG_CKPT_FORMAT "clgrad-checkpoint"
#define CLG_CKPT_VERSION 2
/* The header's first bytes; the CRC's 8 hex digits follow, then '"'. */
#define CLG_CKPT_HEADER_PREFIX "{\"__metadata__\":{\"clgrad.header_crc32\":\"0x"
#define CLG_CKPT_HEADER_PREFIX_LEN (sizeof CLG_CKPT_HEADER_PREFIX - 1)
/* Largest JSON header the reader accepts (safetensors uses 100 MB too). */
#define CLG_CKPT_HEADER_MAX ((uint64_t)100 * 1000 * 1000)
#define CLG_CKPT_STEP_BLOCK_KEY "clgrad.step_block"
#define CLG_CKPT_META_PREFIX "clgrad."

typedef enum clg_ckpt_dtype {
    CLG_CKPT_F32 = 0,
    CLG_CKPT_F16 = 1,
    CLG_CKPT_BF16 = 2,
    CLG_CKPT_I32 = 3, /* uint32 words with the same bytes (the step block) */
    CLG_CKPT_U8 = 4   /* Q8/Q4 state codes */
} clg_ckpt_dtype;

/* Where an entry's bytes live on the device: an arena id of model.h
 * (CLG_ARENA_PARAMS, CLG_ARENA_ACC, CLG_ARENA_STATE0 + i) or one of these. */
enum {
    CLG_CKPT_SRC_COPY = -1,       /* model->copy                       */
    CLG_CKPT_SRC_STEP_BLOCK = -2, /* clg_cycle_state.step_block        */
    CLG_CKPT_SRC_EXT = -3,        /* an attached part (ckpt_ext.h):
                                     tensor = its index in model->ckpt_ext */
    CLG_CKPT_SRC_SCALE0 = -4,     /* Q8/Q4 absmax of state 0 (-5: state 1) */
};

typedef struct clg_ckpt_entry {
    char *key; /* owned */
    clg_ckpt_dtype dtype;
    uint64_t count; /* elements */
    size_t ndim;    /* shape: dims[0..ndim), product count ([count] by default) */
    uint64_t dims[CLG_MAX_DIMS];
    int source;     /* arena id or CLG_CKPT_SRC_* */
    int tensor;     /* model tensor index (-1 for the step block) */
    /* Canonical place in the data section (layout order, contiguous),
     * set by clg__ckpt_layout_finish; the writer uses it. */
    uint64_t begin, end;
    /* Filled by the parser: where the file puts it (a file re-saved by
     * another safetensors writer may order entries differently). */
    uint64_t file_begin, file_end;
    uint32_t crc; /* writer: computed; parser: verified */
    int seen;
} clg_ckpt_entry;

/* One configuration value a checkpoint records and the reader compares:
 * the metadata key "clgrad.<field>" and its canonical text. */
enum { CLG_CKPT_MAX_CONFIG = 16 };
typedef struct clg_ckpt_setting {
    const char *field; /* clg_config's field name, a static string */
    char value[32];
} clg_ckpt_setting;

typedef struct clg_ckpt_layout {
    clg_ckpt_entry *entries; /* in file order */
    size_t n;
    size_t *by_key;          /* entry indices sorted by key */
    uint64_t data_size;      /* sum of all entries' bytes */
    char optimizer[16];      /* "sgd", "adam", "adamw", "lion" */
    /* the live configuration values that apply (clg__ckpt_layout_config) */
    clg_ckpt_setting config[CLG_CKPT_MAX_CONFIG];
    size_t n_config;
} clg_ckpt_layout;

/* ------------------------------------------------------------ layout (checkpoint_parse.c) */

const char *clg__ckpt_dtype_name(clg_ckpt_dtype dtype);
size_t clg__ckpt_dtype_size(clg_ckpt_dtype dtype);
const char *clg__ckpt_optimizer_name(clg_optimizer optimizer);

/* Appends an entry (copies key); used by clg__ckpt_layout_model and by the
 * device-free fuzz harness and tests. */
clg_status clg__ckpt_layout_add(clg_ckpt_layout *layout, const char *key, clg_ckpt_dtype dtype,
                                uint64_t count, int source, int tensor);
/* Gives the entry added last the shape dims[0..ndim); their product must
 * be its count (CLG_ERR_INVALID_ARGUMENT otherwise). */
clg_status clg__ckpt_layout_shape(clg_ckpt_layout *layout, size_t ndim, const uint64_t *dims);
/* Sets the optimizer name and the configuration values a checkpoint of a
 * model with config cfg records (and a load compares). */
void clg__ckpt_layout_config(clg_ckpt_layout *layout, const clg_config *cfg);
/* Sorts keys, rejects duplicate or reserved keys, sums the data size. */
clg_status clg__ckpt_layout_finish(clg_ckpt_layout *layout, char *err, size_t errlen);
/* The layout of a finalized model. */
clg_status clg__ckpt_layout_model(clg_model *model, clg_ckpt_layout *layout, char *err,
                                  size_t errlen);
void clg__ckpt_layout_free(clg_ckpt_layout *layout);
/* True if s is well-formed UTF-8 (JSON headers must be). */
bool clg__ckpt_utf8_valid(const char *s);
/* Entry index for key, or -1. */
long clg__ckpt_layout_find(const clg_ckpt_layout *layout, const char *key);

/* The CRC-32 the header field must hold: over the 8 length bytes and the
 * header of hlen bytes (which begins with CLG_CKPT_HEADER_PREFIX and its 8
 * digits, at least CLG_CKPT_HEADER_PREFIX_LEN + 9 bytes), the digits taken
 * as '0'. */
uint32_t clg__ckpt_header_crc(const uint8_t len_bytes[8], const uint8_t *header, size_t hlen);
/* Writes the right header CRC into a whole file image whose header begins
 * with CLG_CKPT_HEADER_PREFIX; false (nothing written) when it does not or
 * the header length does not fit in size. For tests and the fuzz harness,
 * which edit headers and still want to reach the JSON parser. */
bool clg__ckpt_header_seal(uint8_t *file, size_t size);

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
 * dtype/shape/offsets, contiguity, CRCs, and the counters stored twice. On success the layout's
 * entries hold their offsets and *out is filled (free with
 * clg__ckpt_parsed_free). On failure *out is empty and err says why:
 * CLG_ERR_CORRUPT_FILE (damaged or not a checkpoint), CLG_ERR_MISMATCH
 * (valid, but for another model), CLG_ERR_OUT_OF_HOST_MEMORY. */
clg_status clg__ckpt_parse(const uint8_t *file, size_t size, clg_ckpt_layout *layout,
                           clg_ckpt_parsed *out, char *err, size_t errlen);
void clg__ckpt_parsed_free(clg_ckpt_parsed *parsed);

/* ------------------------------------------------------------ device side */

/* clg__ckpt_collect is in checkpoint.c; clg__ckpt_apply and
 * clg__ckpt_copy_io in checkpoint_load.c. */

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

/* Blocking transfer of one tensor of the low-precision parameter copy
 * (write != 0: host to device). */
clg_status clg__ckpt_copy_io(clg_model *model, int tensor, void *host, int write);

#endif /* CLGRAD_CHECKPOINT_H */
