/* model.h - the model's internal layout: tensors, groups, flat chunked
 * arenas, the device step block, and the host side of the cycle. */
#ifndef CLGRAD_MODEL_H
#define CLGRAD_MODEL_H

#include "internal.h"
#include "clg_layout.h"
#include "sizing.h"

/* Every tensor starts at a multiple of this many elements, so that kernels
 * may use aligned vector loads; the padding stays zero forever. */
#define CLG_TENSOR_ALIGN 16
/* Every segment (a group's run within a chunk) starts and ends at a multiple
 * of this many elements: a whole number of work-groups of up to 256
 * work-items with one float4 each. The update kernel then needs no bounds
 * check and the global index is the element index (see update.cl). */
#define CLG_SEGMENT_ALIGN 1024

/* One flat array (params, accumulators, a state, the copy) in chunks. All
 * arenas share the model's chunk layout (same element counts per chunk).
 * A Q8/Q4 state arena is the one kind whose element size differs by chunk:
 * codes in quantized chunks, fp32 in the chunks of small tensors (dtype
 * CLG_Q8/CLG_Q4, elem_size 0; src/qstate.h gives each chunk's format). */
typedef struct clg_arena {
    clg_dtype dtype;
    size_t elem_size; /* bytes per element; 0 where it differs by chunk */
    cl_mem *chunks;   /* model->n_chunks entries, NULL when not allocated */
    uint64_t *bytes;  /* per chunk: the size of its buffer (0: none) */
} clg_arena;

typedef struct clg_tensor_slot {
    char *name;
    size_t count;
    size_t ndim;                /* the caller's shape: 1-D [count] unless set */
    size_t dims[CLG_MAX_DIMS];
    int group;
    size_t chunk;  /* the chunk it lives in */
    size_t offset; /* first element within the chunk */
} clg_tensor_slot;

typedef struct clg_group_slot {
    char *name;
    float lr_mult;
    float weight_decay;
} clg_group_slot;

/* A contiguous run of one group within one chunk. */
typedef struct clg_segment {
    int group;
    size_t chunk;
    size_t offset;
    size_t count; /* padded element count, a multiple of CLG_SEGMENT_ALIGN */
} clg_segment;

enum { CLG_MAX_STATES = 3 };

/* The host side of the cycle at the moment a step-block read was enqueued,
 * so that a non-blocking clg_model_stats returns one moment, not two. */
typedef struct clg_sb_moment {
    uint64_t cycles;
    uint64_t micro_total;
    float weight_sum;
} clg_sb_moment;

/* The launch plan, resolved at finalize (src/plan.h). */
struct clg_plan;

struct clg_model {
    clg_context *ctx;
    clg_config cfg;
    bool finalized;

    clg_group_slot *groups;
    size_t n_groups;
    clg_tensor_slot *tensors;
    size_t n_tensors;

    size_t n_chunks;
    size_t *chunk_elems; /* padded element count of each chunk */
    clg_segment *segments;
    size_t n_segments;
    cl_mem *group_params; /* per chunk with several segments: (lr_mult, weight
                             decay) per work-group of its update launch */
    size_t *chunk_segs;   /* per chunk: its segment count */
    size_t *chunk_first_seg; /* per chunk: index of its first segment */

    clg_arena params, acc, copy;
    clg_arena states[CLG_MAX_STATES];
    size_t n_states;
    /* Q8/Q4 states (src/qstate.h): states 0..n_qstates-1 are quantized in
     * every chunk but those of small tensors, which come last and keep
     * fp32 states; scales[s] holds their per-block absmax. */
    bool qstates;
    size_t n_qstates;
    bool *chunk_small;  /* per chunk: holds tensors below state_min_size */
    clg_arena scales[2];
    float qmap[2][256]; /* signed and unsigned maps (qmaps.c) */

    cl_mem step_block; /* CLG_SB_WORDS uint32 words */
    cl_mem partials;   /* float reduction partials, CLG_REGIONS regions */
    size_t n_partials;
    size_t wg;            /* work-group size of every kernel */
    size_t *chunk_pbase;  /* per chunk: its first partial within a region */
    size_t region_size;   /* partials per region: one per work-group of a pass */
    cl_mem tensor_sumsq;  /* float per tensor (tensor_norms), chunk order */
    cl_mem *norm_offsets; /* per chunk: ulong offset4 of its tensors */
    cl_mem *norm_counts;  /* per chunk: ulong count4 of its tensors */
    size_t *norm_first;   /* per chunk: index of its first tensor in tensor_sumsq */
    size_t *norm_n;       /* per chunk: its tensor count */
    size_t *norm_index;   /* per tensor: its index in tensor_sumsq */

    /* host side of the cycle */
    unsigned micro;       /* micro-steps taken in the current cycle */
    float weight_sum;     /* their weights */
    uint64_t cycles;      /* completed cycles (applied or skipped updates) */
    uint64_t micro_total; /* all micro-steps ever taken */
    /* clg_step_collect took the cycle's last micro-step (micro == k, its
     * weights in weight_sum) and the end of the cycle waits for
     * clg_finish_cycle: every other step, flush and save refuses. */
    bool pending;

    /* non-blocking read-back of the step block */
    uint32_t sb_host[CLG_SB_WORDS];    /* last completed read (initial block
                                          from finalize on) */
    clg_sb_moment sb_host_at;          /* the host counters of that read */
    uint32_t sb_pending[CLG_SB_WORDS]; /* target of the read in flight */
    clg_sb_moment sb_pending_at;       /* the host counters when it was enqueued */
    cl_event sb_event;                 /* that read, or NULL */

    struct clg_plan *plan;
    uint64_t launched;    /* kernels this model enqueued */
    uint64_t grads_bytes; /* device bytes of its live clg_grads */
    /* Set when a call failed after some of its device work was enqueued:
     * the device state no longer matches the host counters, so every later
     * call refuses until a checkpoint is loaded. */
    clg_status failed;
    /* Parts of other objects its checkpoints carry (src/ckpt_ext.h). */
    struct clg_ckpt_ext *ckpt_ext;

    /* ZeRO-1 (src/shard.c): the model keeps optimizer states for shard
     * shard_index of shard_count only, a contiguous range of the layout
     * space (the chunks end to end, padding included), in whole segments.
     * Per chunk: the first owned element and the owned count (0: none), and
     * sub-buffers of params and accumulators over that range, which the
     * update and the norm pass read instead of the whole chunk. */
    bool sharded;
    unsigned shard_index, shard_count;
    size_t *own_lo, *own_n;
    cl_mem *params_sub, *acc_sub;
};

/* External gradient buffers, laid out like the accumulator. */
struct clg_grads {
    clg_model *model;
    clg_dtype dtype;
    clg_arena arena;
};

/* Host copy of everything in the cycle that a checkpoint must keep. */
typedef struct clg_cycle_state {
    unsigned micro;
    float weight_sum;
    uint64_t cycles;
    uint64_t micro_total;
    uint32_t step_block[CLG_SB_WORDS];
} clg_cycle_state;

/* Which arena, for the generic per-tensor copies below. */
typedef enum clg_arena_id {
    CLG_ARENA_PARAMS = 0,
    CLG_ARENA_ACC = 1,
    CLG_ARENA_STATE0 = 2, /* + state index */
} clg_arena_id;

/* Partials regions (see stats.cl): main statistics, first micro-step
 * (noise scale), finiteness of one micro-step (skip-micro). */
enum { CLG_REGION_MAIN = 0, CLG_REGION_SMALL = 1, CLG_REGION_CHECK = 2, CLG_REGIONS = 3 };

/* A group's lr_mult is finite and >= 0 (clg_model_add_group and
 * clg_model_set_group_lr_mult); the message names the group and who. */
clg_status clg__lr_mult_check(clg_context *ctx, float lr_mult, const char *group, const char *who);

clg_arena *clg__model_arena(clg_model *model, int arena_id);
/* Blocking copies of one tensor of an arena, raw bytes in the arena's dtype
 * (count * elem_size bytes). */
clg_status clg__arena_read(clg_model *model, int arena_id, int tensor, void *host);
clg_status clg__arena_write(clg_model *model, int arena_id, int tensor, const void *host);
/* Blocking read / write of the cycle state (host counters + step block). */
clg_status clg__cycle_state_get(clg_model *model, clg_cycle_state *state);
clg_status clg__cycle_state_set(clg_model *model, const clg_cycle_state *state);

/* Shards (src/shard.c; their bounds and sizes are in sizing.h). At finalize: the shard's range per chunk (after the layout), its
 * sub-buffers (after the params and accumulators); and their release. */
clg_status clg__shard_layout(clg_model *model);
/* CLG_ERR_UNSUPPORTED naming what a sharded model cannot hold yet. */
clg_status clg__shard_config_check(clg_context *ctx, const clg_config *config, const char *who);
clg_status clg__shard_buffers(clg_model *model);
void clg__shard_free(clg_model *model);
/* Refuses calls that would need the states of other shards. */
clg_status clg__shard_refuse(const clg_model *model, const char *who);
/* The params (CLG_ARENA_PARAMS) or accumulator (CLG_ARENA_ACC) buffer over
 * the shard's part of chunk c: a sub-buffer, or the chunk's own. */
cl_mem clg__shard_mem(const clg_model *model, int arena_id, size_t chunk);
/* The states of a shard on the host (src/shard_state.c), in the gathered
 * images clg_checkpoint_save_gathered takes (every chunk's codes, then
 * every chunk's absmax values, as stored).
 * clg_model_download_state_raw's CLG_SHARD_RANGE: state s of this model's
 * shard as stored, its codes and its absmax values (clg_model_state_extent's
 * sizes); blocking. */
clg_status clg__shard_download_state(clg_model *model, int s, void *codes, size_t code_bytes,
                                     float *scales, size_t n_scales, const char *who);
/* Checkpoint load: the part of tensor t's state s (host: the whole
 * tensor, as stored), or of its absmax values, that lies in the shard. */
clg_status clg__shard_state_write(clg_model *model, size_t s, size_t t, const void *host);
clg_status clg__shard_scales_write(clg_model *model, size_t s, size_t t, const void *host);
/* Tensor t's state s (or its absmax values, scales) out of a gathered
 * image, as the per-tensor download would give it. */
void clg__shard_image_read(const clg_model *model, const void *image, size_t s, size_t t,
                           bool scales, uint8_t *dst);
/* Images of every state holding this shard's part (zeros elsewhere), for
 * a checkpoint load's backup; and their release (images may be NULL). */
clg_status clg__shard_images(clg_model *model, void ***images);
void clg__shard_images_free(const clg_model *model, void **images);
/* The shard's sum of squares from the main region's partials (after
 * clg__launch_shard_sumsq), and the main region set to one partial, the
 * sum over every shard, for the prologue. Blocking. */
clg_status clg__partials_shard_sum(clg_model *model, double *sumsq, const char *who);
clg_status clg__partials_set_main(clg_model *model, float sumsq, const char *who);

#endif /* CLGRAD_MODEL_H */
