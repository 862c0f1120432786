/* checkpoint_format.h - the checkpoint file format, the one thing the
 * writer (checkpoint.c) and the reader (checkpoint_parse.c,
 * checkpoint_load.c) share: its constants, dtype names, the configuration
 * values it records, the header CRC's framing (checkpoint_format.c) and the
 * layout of a model's entries (checkpoint_layout.c). Neither side uses the
 * other's code.
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
 * checkpoint must match (clg__ckpt_config_fields in checkpoint_format.c: what
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
 * and the reader agree by construction; this module and the parser
 * (checkpoint_parse.c) work on bytes in memory and need no device (fuzz/
 * links them alone). */
#ifndef CLGRAD_CHECKPOINT_FORMAT_H
#define CLGRAD_CHECKPOINT_FORMAT_H

#include "ckpt_ext.h"
#include "model.h"

#define CLG_CKPT_FORMAT  "clgrad-checkpoint"
#define CLG_CKPT_VERSION 2
/* The header's first bytes; the CRC's 8 hex digits follow, then '"'. */
#define CLG_CKPT_HEADER_PREFIX     "{\"__metadata__\":{\"clgrad.header_crc32\":\"0x"
#define CLG_CKPT_HEADER_PREFIX_LEN (sizeof CLG_CKPT_HEADER_PREFIX - 1)
/* Largest JSON header the reader accepts (safetensors uses 100 MB too). */
#define CLG_CKPT_HEADER_MAX     ((uint64_t)100 * 1000 * 1000)
#define CLG_CKPT_STEP_BLOCK_KEY "clgrad.step_block"
#define CLG_CKPT_META_PREFIX    "clgrad."
/* clgrad's metadata keys (the configuration's are "clgrad.<field>") */
#define CLG_CKPT_KEY_HEADER_CRC    "clgrad.header_crc32"
#define CLG_CKPT_KEY_FORMAT        "clgrad.format"
#define CLG_CKPT_KEY_VERSION       "clgrad.version"
#define CLG_CKPT_KEY_OPTIMIZER     "clgrad.optimizer"
#define CLG_CKPT_KEY_MICRO         "clgrad.micro"
#define CLG_CKPT_KEY_WEIGHT_SUM    "clgrad.weight_sum"
#define CLG_CKPT_KEY_CYCLES        "clgrad.cycles"
#define CLG_CKPT_KEY_MICRO_TOTAL   "clgrad.micro_total"
#define CLG_CKPT_KEY_UPDATES       "clgrad.updates"
#define CLG_CKPT_KEY_SKIPPED       "clgrad.skipped_updates"
#define CLG_CKPT_KEY_SKIPPED_MICRO "clgrad.skipped_micro_steps"
/* "clgrad.crc32.<tensor key>": each tensor's CRC-32, 8 lowercase hex digits */
#define CLG_CKPT_CRC_PREFIX     "clgrad.crc32."
#define CLG_CKPT_CRC_PREFIX_LEN (sizeof CLG_CKPT_CRC_PREFIX - 1)

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
    int source; /* arena id or CLG_CKPT_SRC_* */
    int tensor; /* model tensor index (-1 for the step block) */
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

/* The live loss-scale configuration, as numbers, for the value checks
 * (checkpoint_values.c): by the time they run, the file's recorded values
 * have been found equal to these. */
typedef struct clg_ckpt_loss_scale {
    clg_loss_scale_mode mode;
    float init, min, max;
    unsigned interval;
} clg_ckpt_loss_scale;

typedef struct clg_ckpt_layout {
    clg_ckpt_entry *entries; /* in file order */
    size_t n;
    size_t *by_key;     /* entry indices sorted by key */
    uint64_t data_size; /* sum of all entries' bytes */
    char optimizer[16]; /* "sgd", "adam", "adamw", "lion" */
    /* the live configuration values that apply (clg__ckpt_layout_config) */
    clg_ckpt_setting config[CLG_CKPT_MAX_CONFIG];
    size_t n_config;
    clg_ckpt_loss_scale loss_scale;
} clg_ckpt_layout;

/* ------------------------------------------------ names and sizes (checkpoint_format.c) */

const char *clg__ckpt_dtype_name(clg_ckpt_dtype dtype);
size_t clg__ckpt_dtype_size(clg_ckpt_dtype dtype);
/* True if s is well-formed UTF-8 (JSON headers must be); _n: s[0..n). */
bool clg__ckpt_utf8_valid(const char *s);
bool clg__ckpt_utf8_valid_n(const uint8_t *s, size_t n);

/* ------------------------------------------------ configuration (checkpoint_format.c) */

/* The configuration fields a checkpoint records, in the order a load
 * compares them (clg__ckpt_n_config_fields of them, at most
 * CLG_CKPT_MAX_CONFIG). */
extern const char *const clg__ckpt_config_fields[];
extern const size_t clg__ckpt_n_config_fields;
/* Sets the optimizer name and the configuration values a checkpoint of a
 * model with config cfg records (and a load compares), and the loss-scale
 * numbers the value checks use. */
void clg__ckpt_layout_config(clg_ckpt_layout *layout, const clg_config *cfg);
/* The live value of field in layout, or NULL when it does not apply. */
const char *clg__ckpt_layout_setting(const clg_ckpt_layout *layout, const char *field);
/* The value a file saved before field was recorded has, or NULL when every
 * file records it. */
const char *clg__ckpt_config_before(const char *field);
/* Whether a saved value of field (read from a file) and the live one mean
 * the same saved state; both non-NULL. */
bool clg__ckpt_config_same(const char *field, const char *saved, const char *live);

/* ------------------------------------------------ framing, header CRC (checkpoint_format.c) */

/* The file's first 8 bytes: the header length, little-endian. */
void clg__ckpt_put_le64(uint8_t out[8], uint64_t v);
uint64_t clg__ckpt_get_le64(const uint8_t in[8]);
/* The CRC-32 the header field must hold: over the 8 length bytes and the
 * header of hlen bytes (which begins with CLG_CKPT_HEADER_PREFIX and its 8
 * digits, at least CLG_CKPT_HEADER_PREFIX_LEN + 9 bytes), the digits taken
 * as '0'. */
uint32_t clg__ckpt_header_crc(const uint8_t len_bytes[8], const uint8_t *header, size_t hlen);
/* True if the header of hlen bytes begins with CLG_CKPT_HEADER_PREFIX, 8
 * characters and a closing quote. */
bool clg__ckpt_has_crc_field(const uint8_t *header, uint64_t hlen);
/* Writes the header CRC's 8 lowercase hex digits into a header that has
 * its CRC field (clg__ckpt_has_crc_field), for the length bytes given. */
void clg__ckpt_header_sign(const uint8_t len_bytes[8], uint8_t *header, size_t hlen);
/* Writes the right header CRC into a whole file image whose header begins
 * with CLG_CKPT_HEADER_PREFIX; false (nothing written) when it does not or
 * the header length does not fit in size. For tests and the fuzz harness,
 * which edit headers and still want to reach the JSON parser. */
bool clg__ckpt_header_seal(uint8_t *file, size_t size);

/* ------------------------------------------------------------ layout (checkpoint_layout.c) */

/* Appends an entry (copies key); used by clg__ckpt_layout_model and by the
 * device-free fuzz harness and tests. */
clg_status clg__ckpt_layout_add(clg_ckpt_layout *layout, const char *key, clg_ckpt_dtype dtype,
                                uint64_t count, int source, int tensor);
/* Gives the entry added last the shape dims[0..ndim); their product must
 * be its count (CLG_ERR_INVALID_ARGUMENT otherwise). */
clg_status clg__ckpt_layout_shape(clg_ckpt_layout *layout, size_t ndim, const uint64_t *dims);
/* Sorts keys, rejects duplicate or reserved keys, sums the data size. */
clg_status clg__ckpt_layout_finish(clg_ckpt_layout *layout, char *err, size_t errlen);
/* The layout of a finalized model. */
clg_status clg__ckpt_layout_model(clg_model *model, clg_ckpt_layout *layout, char *err,
                                  size_t errlen);
void clg__ckpt_layout_free(clg_ckpt_layout *layout);
/* Entry index for key, or -1. */
long clg__ckpt_layout_find(const clg_ckpt_layout *layout, const char *key);

#endif /* CLGRAD_CHECKPOINT_FORMAT_H */
