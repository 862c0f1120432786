/* clgrad.h - public API of clgrad: fused gradient accumulation and optimizer
 * updates on any OpenCL device.
 *
 * Conventions
 *  - Every function that can fail returns a clg_status; 0 is success, negative
 *    values in (-10000, 0) are OpenCL's own codes passed through unchanged,
 *    values <= CLG_ERR_FIRST are clgrad's own. The one translation: a failed
 *    device allocation (clCreateBuffer, or the zero fill that follows it,
 *    failing with CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_RESOURCES or
 *    CL_INVALID_BUFFER_SIZE) is CLG_ERR_OUT_OF_DEVICE_MEMORY. The same codes
 *    from any other call (a kernel launch, a copy) pass through as they are.
 *    clg_model_finalize gives CLG_ERR_OUT_OF_DEVICE_MEMORY, too, for a model
 *    above the device's global memory, before allocating (see
 *    clg_config.allow_over_device_memory).
 *  - After a failure, clg_last_error(ctx) names the failing call and why.
 *  - Invalid input changes no state.
 *  - Device work is enqueued on the context's in-order queue and is
 *    asynchronous, like CLBlast: nothing blocks unless a function says so.
 *    Calls that enqueue work take an optional clg_events (wait list in,
 *    event out) for callers that use more than one queue.
 *  - Host copies take the element count of the host buffer and check it.
 *  - Structs that grow (clg_config, clg_stats, clg_device_info,
 *    clg_model_plan) start with struct_size, the sizeof the caller was
 *    compiled with, set by their init functions below. The library reads
 *    and writes only the first struct_size bytes: fields a caller's older
 *    struct lacks take their defaults (input) or are not written (output).
 *    A struct_size larger than the library's own is accepted when the bytes
 *    it does not know are zero (input) and refused otherwise.
 *  - The library never prints and never exits.
 */
#ifndef CLGRAD_H
#define CLGRAD_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 200
#endif
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif
#include <CL/cl.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(CLGRAD_BUILDING) && defined(__GNUC__)
#define CLG_API __attribute__((visibility("default")))
#else
#define CLG_API
#endif

/* CLGRAD_VERSION_MAJOR/MINOR/PATCH, CLGRAD_VERSION_STRING,
 * CLGRAD_VERSION_NUMBER (major * 10000 + minor * 100 + patch) and
 * CLGRAD_ABI_VERSION (the soname's number), generated from meson.build. */
#include "clgrad_version.h"

/* The version of the library loaded at run time, which may differ from the
 * header a program was compiled with: "0.4.0". */
CLG_API const char *clg_version(void);
/* The same as a number, comparable with CLGRAD_VERSION_NUMBER. */
CLG_API unsigned clg_version_number(void);
/* The ABI version of the loaded library (its soname's number). */
CLG_API unsigned clg_abi_version(void);

/* ---------------------------------------------------------------- status */

typedef enum clg_status {
    CLG_SUCCESS = 0,
    /* OpenCL error codes (CL_OUT_OF_RESOURCES, ...) pass through as is,
     * except allocation failures (see Conventions above). */
    CLG_ERR_FIRST = -10000,
    CLG_ERR_INVALID_ARGUMENT = -10001,   /* bad value, NULL handle, bad name  */
    CLG_ERR_OUT_OF_DEVICE_MEMORY = -10002, /* device allocation failed, or a
                                              model above the device's memory
                                              (clg_config.allow_over_device_memory) */
    CLG_ERR_OVER_BUDGET = -10003,        /* would exceed the memory budget    */
    CLG_ERR_UNSUPPORTED = -10004,        /* feature not available here        */
    CLG_ERR_NO_DEVICE = -10005,          /* no platform/device, or no match   */
    CLG_ERR_BUILD = -10006,              /* kernel build failed (log in msg)  */
    CLG_ERR_IO = -10007,                 /* file system error                 */
    CLG_ERR_CORRUPT_FILE = -10008,       /* malformed or damaged file         */
    CLG_ERR_MISMATCH = -10009,           /* file does not match live model    */
    CLG_ERR_NONFINITE = -10010,          /* inf/NaN gradient (error policy)   */
    CLG_ERR_STATE = -10011,              /* call not valid in current state   */
    CLG_ERR_OUT_OF_HOST_MEMORY = -10012, /* malloc failed                     */
    CLG_ERR_LAST = -10012
} clg_status;

/* A constant, never NULL, for every clg_status and every OpenCL code
 * ("CL_OUT_OF_RESOURCES"); "CLG_UNKNOWN_STATUS" for anything else. */
CLG_API const char *clg_status_string(clg_status status);

/* --------------------------------------------------------------- devices */

typedef struct clg_device_info {
    size_t struct_size;          /* set by clg_devices_list */
    unsigned platform_index;
    unsigned device_index;       /* within its platform */
    cl_platform_id platform;
    cl_device_id device;
    char platform_name[128];
    char platform_version[128];
    char name[128];
    char vendor[128];
    char driver_version[128];
    char device_version[128];    /* "OpenCL 3.0 ..." */
    char opencl_c_version[128];  /* "OpenCL C 1.2 ..." */
    cl_device_type type;
    cl_ulong global_mem_size;
    cl_ulong max_mem_alloc_size;
    cl_uint compute_units;
    size_t max_work_group_size;
    size_t preferred_work_group_multiple;
    int has_fp16;                /* cl_khr_fp16 (clgrad does not need it) */
    int has_fp64;
} clg_device_info;

/* Lists every device of every platform into an array whose elements are
 * struct_size bytes apart (each element's struct_size says so). *out is freed
 * with clg_devices_free. Returns CLG_ERR_NO_DEVICE (count 0) when no platform
 * exists. Call it through clg_devices_list, which passes the caller's size. */
CLG_API clg_status clg_devices_list_sized(size_t struct_size, clg_device_info **out,
                                          size_t *count);
static inline clg_status clg_devices_list(clg_device_info **out, size_t *count)
{
    return clg_devices_list_sized(sizeof(clg_device_info), out, count);
}
CLG_API void clg_devices_free(clg_device_info *devices);

/* Picks a device: selector is "N" (N-th device overall), "P:D" (platform P,
 * device D), or a case-insensitive substring of platform, vendor or device
 * name. NULL or "" means the CLGRAD_DEVICE environment variable, and without
 * it the first GPU, else the first device. devices is an array from
 * clg_devices_list (its elements' struct_size gives the stride). */
CLG_API clg_status clg_device_select(const clg_device_info *devices, size_t count,
                                     const char *selector, size_t *chosen);

/* --------------------------------------------------------------- context */

typedef struct clg_context clg_context;

/* Creates its own OpenCL context and in-order queue on the selected device. */
CLG_API clg_status clg_context_create(clg_context **out, const char *selector);
/* Wraps the caller's objects; clgrad retains them and releases its own
 * references on destroy, never the caller's. queue must be in-order. */
CLG_API clg_status clg_context_wrap(clg_context **out, cl_context context,
                                    cl_device_id device, cl_command_queue queue);
CLG_API void clg_context_destroy(clg_context *ctx);

CLG_API cl_context clg_context_cl(const clg_context *ctx);
CLG_API cl_device_id clg_context_device(const clg_context *ctx);
CLG_API cl_command_queue clg_context_queue(const clg_context *ctx);
CLG_API const clg_device_info *clg_context_device_info(const clg_context *ctx);

/* Message of this thread's last failure if that was on ctx; otherwise of
 * the last failure on ctx in any thread. ctx == NULL: of this thread's
 * last failed context-less call. Like errno, another thread failing on a
 * shared context does not replace what this thread sees of its own failure.
 * The pointer stays valid until the next call on this thread. Never NULL. */
CLG_API const char *clg_last_error(const clg_context *ctx);

/* Memory clgrad itself holds on the device, and its high-water mark. */
CLG_API uint64_t clg_context_device_bytes(const clg_context *ctx);
CLG_API uint64_t clg_context_peak_device_bytes(const clg_context *ctx);
/* Caps what clgrad allocates from now on (0 = no cap). Fails with
 * CLG_ERR_OVER_BUDGET if more than budget is already allocated. */
CLG_API clg_status clg_context_set_budget(clg_context *ctx, uint64_t budget_bytes);
CLG_API uint64_t clg_context_budget(const clg_context *ctx);
/* Largest single buffer clgrad will create: the device's
 * CL_DEVICE_MAX_MEM_ALLOC_SIZE, or CLGRAD_MAX_ALLOC (bytes) if smaller. */
CLG_API uint64_t clg_context_max_alloc(const clg_context *ctx);
/* ----------------------------------------------------------------- types */

typedef enum clg_dtype {
    CLG_FP32 = 0,
    CLG_FP16 = 1, /* IEEE binary16 through vload_half/vstore_half */
    CLG_BF16 = 2, /* bfloat16 as ushort bits */
    CLG_DTYPE_NONE = 3,
    /* Optimizer states only (clg_config.state_dtype), blockwise with one
     * fp32 absmax per block: see docs/design.md, "Quantized states". */
    CLG_Q8 = 4, /* 8-bit codes, blocks of 256, bitsandbytes' dynamic maps */
    CLG_Q4 = 5  /* 4-bit codes (two per byte), blocks of 128 */
} clg_dtype;

/* The dtype's lower-case name as flags, checkpoints and tables spell it
 * ("fp32", "fp16", "bf16", "q8", "q4"), "none" for CLG_DTYPE_NONE and for
 * anything else. A constant, never NULL. */
CLG_API const char *clg_dtype_name(clg_dtype dtype);

/* How a value is rounded to a low-precision state (clg_config.state_rounding). */
typedef enum clg_rounding {
    CLG_ROUND_NEAREST = 0,   /* the nearest value (ties: the smaller magnitude) */
    CLG_ROUND_STOCHASTIC = 1 /* one of the two neighbours, unbiased, seeded by seed */
} clg_rounding;

/* clg_optimizer and clg_dtype are the one list of their members: the build
 * makes the kernels' codes (OPT_<X>, DT_<X>) from them, and each member's
 * name is its own in lower case (CLG_ADAMW: "adamw", CLG_DTYPE_NONE:
 * "none"). Every member takes an explicit number; a number, once given, is
 * kept (checkpoints and bindings hold it). Adding an optimizer:
 * docs/design.md, "Adding an optimizer". */
typedef enum clg_optimizer {
    CLG_SGD = 0,   /* momentum, dampening, Nesterov, L2 weight decay */
    CLG_ADAM = 1,  /* L2 weight decay added to the gradient, AMSGrad */
    CLG_ADAMW = 2, /* decoupled weight decay, AMSGrad */
    CLG_LION = 3   /* sign update, decoupled weight decay */
} clg_optimizer;

/* The optimizer's lower-case name as flags, checkpoints and tables spell it
 * ("sgd", "adam", "adamw", "lion"), "unknown" for anything else. A
 * constant, never NULL. */
CLG_API const char *clg_optimizer_name(clg_optimizer optimizer);

typedef enum clg_schedule_kind {
    CLG_SCHED_CONSTANT = 0, /* lr (after warmup) */
    CLG_SCHED_LINEAR = 1,   /* linear decay to min_lr after warmup */
    CLG_SCHED_COSINE = 2    /* cosine decay to min_lr after warmup */
} clg_schedule_kind;

/* lr(t), t = number of updates already applied (0 for the first update):
 *   t <  warmup:  lr * (t + 1) / warmup
 *   else:         decay from lr to min_lr over [warmup, total); min_lr after.
 */
typedef struct clg_schedule {
    clg_schedule_kind kind;
    uint64_t warmup;
    uint64_t total;
    float min_lr;
} clg_schedule;

typedef enum clg_normalize {
    CLG_NORM_MEAN = 0, /* divide the sum by the sum of micro-step weights */
    CLG_NORM_SUM = 1   /* use the weighted sum as is */
} clg_normalize;

typedef enum clg_nonfinite_policy {
    CLG_NONFINITE_IGNORE = 0,     /* no check: inf/NaN flow into the update */
    CLG_NONFINITE_SKIP_UPDATE = 1,/* skip the whole update (GradScaler)      */
    CLG_NONFINITE_SKIP_MICRO = 2, /* drop only the offending micro-step (optax) */
    CLG_NONFINITE_ERROR = 3       /* CLG_ERR_NONFINITE at the next sync point */
} clg_nonfinite_policy;

typedef enum clg_loss_scale_mode {
    CLG_LOSS_SCALE_NONE = 0,
    CLG_LOSS_SCALE_STATIC = 1,
    CLG_LOSS_SCALE_DYNAMIC = 2
} clg_loss_scale_mode;

/* Number of micro-steps of cycle `update_index` (optax every_k_schedule);
 * must be >= 1. update_index counts completed cycles, including those whose
 * update was skipped for non-finite gradients: the host knows it without a
 * device sync. */
typedef unsigned (*clg_k_schedule_fn)(uint64_t update_index, void *user);

typedef struct clg_config {
    size_t struct_size; /* set by clg_config_init */
    clg_optimizer optimizer;
    float lr;
    float beta1;        /* Adam/AdamW/Lion */
    float beta2;        /* Adam/AdamW/Lion */
    float eps;          /* Adam/AdamW */
    float weight_decay; /* default for groups that don't override it */
    float momentum;     /* SGD */
    float dampening;    /* SGD */
    int nesterov;       /* SGD */
    int amsgrad;        /* Adam/AdamW */
    int maximize;       /* SGD/Adam/AdamW */
    clg_schedule schedule;

    unsigned accum_steps;         /* k, used when k_schedule is NULL */
    clg_k_schedule_fn k_schedule; /* optional */
    void *k_schedule_user;
    clg_normalize normalize;
    /* Path C: when the last micro-step brings external gradients, the update
     * kernel reads them itself instead of adding them into the accumulator
     * first. Default on; off gives path A. */
    int fuse_last_micro_step;

    clg_dtype acc_dtype;        /* CLG_FP32 (default) or CLG_BF16 with
                                   stochastic rounding (memory-starved cases) */
    clg_dtype param_copy_dtype; /* CLG_DTYPE_NONE, CLG_FP16 or CLG_BF16 */

    float clip_norm;  /* > 0: clip by global norm of the normalized gradient */
    float clip_value; /* > 0: clamp each normalized gradient element */
    clg_nonfinite_policy nonfinite;

    clg_loss_scale_mode loss_scale;
    float loss_scale_init;        /* 65536 */
    float loss_scale_growth;      /* 2.0 */
    float loss_scale_backoff;     /* 0.5 */
    unsigned loss_scale_interval; /* 2000 */
    float loss_scale_min;         /* 1.0 */
    float loss_scale_max;         /* 2^24 */

    int noise_scale;       /* estimate the gradient noise scale (McCandlish) */
    float noise_scale_ema; /* smoothing of the estimate, e.g. 0.9 */
    int tensor_norms;      /* keep per-tensor gradient norms for logging */
    uint64_t seed;         /* stochastic rounding */
    /* Added after 0.2.0: a smaller training state (docs/design.md, section
     * 4). A struct_size that ends before them gets the defaults. */
    clg_dtype state_dtype;       /* m, v, SGD momentum, Lion's m: CLG_FP32
                                    (default), CLG_BF16, CLG_Q8 or CLG_Q4; the
                                    AMSGrad max stays fp32 */
    uint64_t state_min_size;     /* Q8/Q4: tensors of fewer elements keep fp32
                                    states (4096, bitsandbytes' min_8bit_size) */
    clg_rounding state_rounding; /* rounding to bf16/Q8/Q4 states: nearest */
    clg_dtype master_dtype;      /* params: CLG_FP32 (default) or CLG_BF16,
                                    updated with stochastic rounding (opt-in) */
    /* Added after 0.4.0 (a struct_size that ends before it: 0). */
    int allow_over_device_memory; /* clg_model_finalize refuses a model whose
                                     device bytes, with what clgrad holds on
                                     the device already, exceed the device's
                                     global memory (CL_DEVICE_GLOBAL_MEM_SIZE)
                                     with CLG_ERR_OUT_OF_DEVICE_MEMORY, before
                                     allocating anything: where device memory
                                     is host memory (PoCL), allocating past it
                                     gets the process killed instead. Nonzero:
                                     no such check, for a device that pages
                                     (unified or swapped memory). Default 0. */
    int grad_norm; /* nonzero: every update computes the global gradient
                      norm (clg_stats.grad_norm) even when nothing else
                      needs it (clipping, a non-finite policy, dynamic loss
                      scaling, the noise scale), for logging; the update is
                      the same. Default 0 (a struct_size that ends before
                      it: 0). */
} clg_config;

/* The one way to make a clg_config: PyTorch's defaults for the optimizer,
 * by value (compiled into the caller, so safe across versions), then set the
 * fields you need. The defaults: lr 1e-3 for Adam and AdamW, 1e-2 for SGD,
 * 1e-4 for Lion; betas (0.9, 0.999) (Lion: (0.9, 0.99)); eps 1e-8; weight
 * decay 0 (AdamW 1e-2); SGD momentum 0, dampening 0; k = 1, mean, fused
 * last micro-step, fp32 accumulator, no clipping, no loss scaling, loss
 * scale 2^16 / growth 2 / backoff 0.5 / interval 2000 / min 1 / max 2^24
 * when dynamic, noise-scale EMA 0.9; fp32 states and params, small tensors
 * below 4096 elements, nearest rounding. An unknown optimizer gives a
 * config of struct_size 0, which clg_model_create refuses.
 * clg_config_init_sized is its entry point in the library, for bindings
 * from other languages: it fills the first struct_size bytes of *config
 * and sets config->struct_size; CLG_ERR_INVALID_ARGUMENT for an unknown
 * optimizer or a struct_size below the first released layout. */
CLG_API clg_status clg_config_init_sized(clg_config *config, size_t struct_size,
                                         clg_optimizer optimizer);
static inline clg_config clg_config_init(clg_optimizer optimizer)
{
    clg_config c;
    if (clg_config_init_sized(&c, sizeof c, optimizer) != CLG_SUCCESS) {
        clg_config zero = {0};
        c = zero;
    }
    return c;
}

/* Returns the learning rate for a new effective batch: linear rule
 * (Goyal et al. 2017, for SGD: lr * new/base) or square-root rule (Adam
 * family: lr * sqrt(new/base)). */
typedef enum clg_lr_rule { CLG_LR_RULE_NONE = 0, CLG_LR_RULE_LINEAR = 1, CLG_LR_RULE_SQRT = 2 } clg_lr_rule;
CLG_API clg_status clg_lr_scale(clg_lr_rule rule, float lr, uint64_t base_batch,
                                uint64_t new_batch, float *scaled_lr);

/* ----------------------------------------------------------------- model */

typedef struct clg_model clg_model;

/* A model is built in two phases: add groups and tensors, then
 * clg_model_finalize allocates the arenas on the device. */
CLG_API clg_status clg_model_create(clg_context *ctx, const clg_config *config,
                                    clg_model **out);
CLG_API void clg_model_destroy(clg_model *model);

/* lr_mult scales the schedule's lr; weight_decay < 0 means the config's. */
CLG_API clg_status clg_model_add_group(clg_model *model, const char *name, float lr_mult,
                                       float weight_decay, int *group);
/* Group 0 exists from the start (lr_mult 1, config weight decay). Tensors
 * are numbered 0, 1, 2, ... in the order they are added (*tensor), and
 * CLG_ALL_TENSORS copies them in that order. */
CLG_API clg_status clg_model_add_tensor(clg_model *model, const char *name, size_t count,
                                        int group, int *tensor);
/* The shape a tensor has for the caller (checkpoints store it, so that
 * safetensors and PyTorch see fc1.weight as [512, 784]). The product of the
 * ndim dims must equal the tensor's count; before finalize only. Without a
 * call, a tensor is 1-D [count]. */
#define CLG_MAX_DIMS 8
CLG_API clg_status clg_model_set_tensor_shape(clg_model *model, int tensor, size_t ndim,
                                              const size_t *dims);
/* Its shape: *ndim dims into dims (room for CLG_MAX_DIMS). */
CLG_API clg_status clg_model_tensor_shape(const clg_model *model, int tensor, size_t *ndim,
                                          size_t *dims);
/* Plans the model's device bytes and allocates them. Before allocating
 * anything it refuses a model that, with what clgrad holds on the device
 * already, exceeds the device's global memory (CLG_ERR_OUT_OF_DEVICE_MEMORY,
 * unless clg_config.allow_over_device_memory) or the context's budget
 * (CLG_ERR_OVER_BUDGET); the message names the bytes of both sides. */
CLG_API clg_status clg_model_finalize(clg_model *model);

CLG_API size_t clg_model_tensor_count(const clg_model *model);
CLG_API uint64_t clg_model_param_count(const clg_model *model);
CLG_API clg_status clg_model_find_tensor(const clg_model *model, const char *name, int *tensor);
CLG_API const char *clg_model_tensor_name(const clg_model *model, int tensor);
CLG_API size_t clg_model_tensor_size(const clg_model *model, int tensor);
CLG_API clg_context *clg_model_context(const clg_model *model);
CLG_API const clg_config *clg_model_get_config(const clg_model *model);

/* The learning rate after creation: clg_model_set_lr replaces config.lr
 * (with a schedule, the lr it warms up to and decays from; min_lr stays),
 * clg_model_set_group_lr_mult a group's lr_mult (clg_model_add_group).
 * Before or after finalize, and at any point of a cycle: the change counts
 * from the next update enqueued (the current cycle's, however many of its
 * micro-steps were taken, a collected cycle pending for clg_finish_cycle
 * included); updates enqueued before keep theirs. Refused, changing
 * nothing, as clg_model_create refuses config.lr (finite, >= 0, and >=
 * schedule.min_lr) and clg_model_add_group an lr_mult (finite, >= 0).
 * clg_model_get_config shows the new lr. Host only, except that after
 * finalize a group sharing a chunk with another has its lr_mult written
 * into the chunk's device table, blocking (behind the work already
 * enqueued). Checkpoints keep neither: a resumed run sets its own. */
CLG_API clg_status clg_model_set_lr(clg_model *model, float lr);
CLG_API clg_status clg_model_set_group_lr_mult(clg_model *model, int group, float lr_mult);

/* Device bytes of the model's arenas (params, accumulators, states, copy),
 * of its live clg_grads buffers (clg_model_estimate leaves grad_buffers 0:
 * add n * dtype size per gradient buffer you plan), and of the step block
 * with its reduction partials. states counts every state array as stored
 * (fp32, bf16 or Q8/Q4 codes; the fp32 states of small tensors and the
 * AMSGrad max included). total is everything clg_model_memory's model holds
 * on the device: the sum of all the fields, those added later included. */
typedef struct clg_model_plan {
    size_t struct_size; /* set by clg_model_plan_init */
    uint64_t params, accumulators, states, param_copy, grad_buffers, step_block;
    uint64_t total;
    /* Added after 0.2.0 (not written for a struct_size that ends before): */
    uint64_t state_scales; /* Q8/Q4 states: one fp32 absmax per block */
    uint64_t tables;       /* small tables: per-work-group group parameters,
                              per-tensor norm offsets */
} clg_model_plan;
static inline clg_model_plan clg_model_plan_init(void)
{
    clg_model_plan p = {0};
    p.struct_size = sizeof p;
    return p;
}
CLG_API clg_status clg_model_memory(const clg_model *model, clg_model_plan *plan);
/* The same numbers for a model not yet built: n parameters under config,
 * as one tensor in one group (so Q8/Q4 states only when n >= state_min_size),
 * with the partials of a 256-wide work-group (the widest clgrad uses). For n
 * a multiple of 1024 within one buffer it is what such a model allocates.
 * config is refused as clg_model_create refuses it (the same status and
 * message, after "clg_model_estimate: "). */
CLG_API clg_status clg_model_estimate(const clg_config *config, uint64_t n, clg_model_plan *plan);
/* The same for shard `index` of `count` of that model (ZeRO-1,
 * clg_model_set_shard): the optimizer states of the shard's part only,
 * everything else whole. CLG_ERR_UNSUPPORTED for what a sharded model
 * refuses at finalize, naming it. */
CLG_API clg_status clg_model_estimate_shard(const clg_config *config, uint64_t n, unsigned index,
                                            unsigned count, clg_model_plan *plan);

/* Where tensor lives: the buffer and the element offset in it. The element
 * type is fp32 for params and accumulators (bf16 accumulators, and params
 * under master_dtype CLG_BF16: ushort bf16 bits). */
typedef struct clg_view {
    cl_mem mem;
    size_t offset; /* in elements */
    size_t count;
} clg_view;
CLG_API clg_status clg_model_param_view(const clg_model *model, int tensor, clg_view *view);
CLG_API clg_status clg_model_acc_view(const clg_model *model, int tensor, clg_view *view);
/* The low-precision copy of the params (param_copy_dtype). */
CLG_API clg_status clg_model_param_copy_view(const clg_model *model, int tensor, clg_view *view);

/* Optional event handling of the calls that enqueue work, for callers that
 * use more than one queue (as CLBlast's event argument). The call's first
 * command waits for the num_wait events of wait_list; if event is not NULL
 * it receives a new event (the caller releases it) that completes when the
 * call's last command has, even when the call enqueued nothing else. On
 * failure *event is NULL. A clg_events pointer may be NULL: no wait, no event.
 * It mirrors OpenCL's own (count, list, event) triple and will not grow. */
typedef struct clg_events {
    cl_uint num_wait;
    const cl_event *wait_list;
    cl_event *event;
} clg_events;

/* Every tensor of the model, in tensor order, for the per-tensor calls. Any
 * other negative index is invalid. */
#define CLG_ALL_TENSORS (-1)
/* clg_model_download_state_raw only: the states of the model's shard
 * (ZeRO-1, clg_model_set_shard) instead of one tensor's. */
#define CLG_SHARD_RANGE (-2)

/* Host <-> device copies of parameters (fp32), blocking. tensor is one
 * tensor or CLG_ALL_TENSORS (clg_model_param_count floats). count is the
 * number of floats of host, and must equal the tensor's (or model's).
 * bf16 master weights are rounded to nearest even on upload, widened
 * exactly on download. */
CLG_API clg_status clg_model_upload_params(clg_model *model, int tensor, const float *host,
                                           size_t count, const clg_events *events);
CLG_API clg_status clg_model_download_params(clg_model *model, int tensor, float *host,
                                             size_t count, const clg_events *events);
/* Accumulated (unnormalized) gradient, blocking. */
CLG_API clg_status clg_model_download_acc(clg_model *model, int tensor, float *host,
                                          size_t count, const clg_events *events);
/* Optimizer state s (0: first moment / momentum, 1: second moment,
 * 2: AMSGrad max), blocking, as fp32: bf16 states widened, Q8/Q4 states
 * dequantized (map[code] * absmax, exactly the value the next update
 * reads). */
CLG_API size_t clg_model_state_count(const clg_model *model);
CLG_API clg_status clg_model_download_state(clg_model *model, int state, int tensor,
                                            float *host, size_t count,
                                            const clg_events *events);
/* How state s of one tensor is stored: *dtype CLG_FP32, CLG_BF16, CLG_Q8 or
 * CLG_Q4 (a tensor below state_min_size, and the AMSGrad max, stay fp32);
 * *code_bytes the bytes of its elements; *n_scales its fp32 absmax count
 * (0 unless Q8/Q4). A pointer may be NULL. */
CLG_API clg_status clg_model_state_format(const clg_model *model, int state, int tensor,
                                          clg_dtype *dtype, size_t *code_bytes,
                                          size_t *n_scales);
/* State s of one tensor as stored, blocking: code_bytes bytes (fp32, bf16
 * bits, Q8 codes, or Q4 codes two per byte, planar in groups of 32
 * elements: byte 16g + j holds element 32g + j in its low nibble and
 * 32g + 16 + j in its high one) and n_scales absmax values of its blocks,
 * which start at the tensor's first element (scales may be NULL when
 * n_scales is 0). Both sizes must equal clg_model_state_format's.
 * tensor CLG_SHARD_RANGE: state s over this model's shard of the layout
 * space (clg_model_shard_range), as stored, chunk after chunk: the codes,
 * and the absmax values of its Q8/Q4 blocks (none for fp32 or bf16
 * states: scales may then be NULL); the sizes must be
 * clg_model_state_extent's for the shard's range. A sharded model refuses
 * the per-tensor downloads and takes this one. */
CLG_API clg_status clg_model_download_state_raw(clg_model *model, int state, int tensor,
                                                void *codes, size_t code_bytes, float *scales,
                                                size_t n_scales, const clg_events *events);

/* --------------------------------------------------- gradient buffers */

/* External gradients (paths A and C): a set of buffers laid out like the
 * accumulator, in fp32, fp16 or bf16. Users' backward kernels write into its
 * views; clg_step reads it. Counted against the budget. */
typedef struct clg_grads clg_grads;
CLG_API clg_status clg_grads_create(clg_model *model, clg_dtype dtype, clg_grads **out);
CLG_API void clg_grads_destroy(clg_grads *grads);
CLG_API clg_status clg_grads_view(const clg_grads *grads, int tensor, clg_view *view);
/* Blocking copy of host data (in the buffer's dtype) into tensor (or
 * CLG_ALL_TENSORS); count is the number of elements of host (not bytes). */
CLG_API clg_status clg_grads_upload(clg_grads *grads, int tensor, const void *host,
                                    size_t count, const clg_events *events);

/* --------------------------------------------------------------- the cycle */

/* Path B: the beta a GEMM-style backward must use when writing into the
 * accumulator views (bf16 bits for a bf16 accumulator, rounded by the
 * caller): 0 on the first micro-step of a cycle, 1 after. */
CLG_API float clg_accum_beta(const clg_model *model);
/* Micro-steps already taken in the current cycle, and its length. */
CLG_API unsigned clg_micro_step_index(const clg_model *model);
CLG_API unsigned clg_cycle_length(const clg_model *model);

/* One micro-step. grads != NULL: paths A/C, its gradients are added with
 * weight into the accumulator. grads == NULL: path B, the caller's backward
 * has already written weight * gradient into the accumulator views.
 * When the cycle is complete the update runs (device only, no host sync).
 * *updated (may be NULL) tells whether an update was enqueued. events may
 * be NULL (see clg_events). */
CLG_API clg_status clg_step(clg_model *model, const clg_grads *grads, float weight,
                            int *updated, const clg_events *events);
/* Applies the update now with what the current cycle holds (a partial last
 * window divides by its own weights). CLG_ERR_STATE if the cycle is empty. */
CLG_API clg_status clg_flush(clg_model *model, const clg_events *events);
/* Drops the current cycle's gradients (accumulator content is ignored),
 * a pending collected cycle (below) included. */
CLG_API clg_status clg_reset_cycle(clg_model *model);

/* The end of a cycle, deferred: for callers that must combine the
 * accumulator before the update sees it (data-parallel ranks summing their
 * accumulators, libclgrad-mpi). clg_step_collect is clg_step (paths A and
 * B, weights, events) except on the cycle's last micro-step: that one only
 * accumulates (never the fused path C, no statistics, no update) and sets
 * *cycle_ready (may be NULL) to 1. The model is then pending: clg_step,
 * clg_step_collect, clg_flush and clg_checkpoint_save refuse with
 * CLG_ERR_STATE until clg_finish_cycle (or clg_reset_cycle, which drops
 * the cycle). In between, the caller may read and overwrite the
 * accumulator through clg_model_acc_view (on the context's queue, or
 * ordered before clg_finish_cycle by its events).
 * clg_finish_cycle runs what clg_step's last micro-step would have: the
 * statistics the config needs (norm, non-finite check, over the
 * accumulator as it is now), the prologue with weight_sum as the cycle's
 * total weight W (mean mode divides by it; pass the sum of every weight
 * that went into the accumulator), and the update; then the cycle counts
 * as done. With nothing done in between, the params are clg_step's
 * (bitwise on paths A and B without statistics; with them, the norm comes
 * from a pass of its own instead of the last accumulate pass, which may
 * round differently on some device: tests/test_cycle_collect.c allows
 * fp32 tolerances there, and saw bitwise equality on PoCL and rusticl).
 * CLG_NONFINITE_SKIP_MICRO is refused (CLG_ERR_UNSUPPORTED):
 * the device decides there which micro-steps count, and the weights the
 * caller would combine would not be known on the host. */
CLG_API clg_status clg_step_collect(clg_model *model, const clg_grads *grads, float weight,
                                    int *cycle_ready, const clg_events *events);
CLG_API clg_status clg_finish_cycle(clg_model *model, float weight_sum,
                                    const clg_events *events);

/* ------------------------------------------------- sharded states (ZeRO-1) */

/* The layout space: the model's chunks end to end (clg_model_chunk_view),
 * each a whole number of 1024-element segments, tensor padding included.
 * Data-parallel ranks exchange accumulators and params in it. */
typedef enum clg_part { CLG_PART_PARAMS = 0, CLG_PART_ACC = 1 } clg_part;
CLG_API size_t clg_model_chunk_count(const clg_model *model);
/* Chunk c of the params or accumulators: offset 0, count its elements. */
CLG_API clg_status clg_model_chunk_view(const clg_model *model, clg_part part, size_t chunk,
                                        clg_view *view);

/* Before clg_model_finalize: the model keeps its optimizer states only for
 * shard `index` of `count` equal shards of the layout space (ZeRO-1;
 * libclgrad-mpi, one shard per rank), and its update touches only the
 * params of that shard. Params and accumulators stay whole: the forward
 * and backward need every param, and every micro-step accumulates every
 * gradient. Not with Q8/Q4 states, a param copy, bf16 params, per-tensor
 * norms or CLG_NONFINITE_SKIP_MICRO (CLG_ERR_UNSUPPORTED at finalize). */
CLG_API clg_status clg_model_set_shard(clg_model *model, unsigned index, unsigned count);
/* The model's shard: index 0 of 1 if it has none. */
CLG_API clg_status clg_model_shard(const clg_model *model, unsigned *index, unsigned *count);
/* Shard `index`'s elements [*first, *first + *count) of the layout space
 * (of *total elements); any of the pointers may be NULL. A model without
 * shards has one: index 0 of 1, the whole space. */
CLG_API clg_status clg_model_shard_range(const clg_model *model, unsigned index,
                                         uint64_t *first, uint64_t *count, uint64_t *total);
/* Where elements [first, first + count) of the layout space (whole
 * 1024-element segments, as shard ranges are) lie in the gathered image of
 * state s that clg_checkpoint_save_gathered takes: *code_bytes bytes of
 * codes from byte *code_offset of the image's codes, and *n_scales absmax
 * values from value *scale_offset of its absmax part (0 and 0 for fp32 or
 * bf16 states). The range (0, total) gives the image's sizes. Any pointer
 * may be NULL. */
CLG_API clg_status clg_model_state_extent(const clg_model *model, int state, uint64_t first,
                                          uint64_t count, uint64_t *code_offset,
                                          uint64_t *code_bytes, uint64_t *scale_offset,
                                          uint64_t *n_scales);
/* A sharded model ends its cycles in three calls, so that the ranks can
 * combine what each holds: after clg_step_collect (and the caller's sum of
 * the shard's accumulators across ranks), clg_shard_sumsq returns the sum
 * of squares of the accumulator over this shard (blocking; inf or NaN if an
 * element is not finite; 0, with no pass over the shard, when the config
 * has no clipping, dynamic loss scale, non-finite check or noise scale,
 * since nothing then reads it); clg_finish_cycle_sharded then runs the cycle's
 * prologue and this shard's update, with sumsq the sum over every shard
 * (clipping, the non-finite decision and the loss scale see the whole
 * gradient) and weight_sum the cycle's total weight. clg_step's and
 * clg_flush's own end of cycle, clg_finish_cycle and the per-tensor state
 * downloads refuse on a sharded model. */
CLG_API clg_status clg_shard_sumsq(clg_model *model, double *sumsq);
CLG_API clg_status clg_finish_cycle_sharded(clg_model *model, float weight_sum, double sumsq,
                                            const clg_events *events);

/* ------------------------------------------------------------ statistics */

/* Read back from the device step block.
 * blocking = 1 waits for the queue: the stats of now (cycles_behind 0).
 * blocking = 0 returns the newest finished snapshot, at most one cycle
 * behind the host (cycles_behind 0 or 1), and starts a new read in the
 * background if none is in flight. Every field of a snapshot is of one
 * moment: the host counters (micro_steps, weight_sum, cycles) are those of
 * when its read was enqueued. It waits only when the newest finished
 * snapshot is two or more cycles old: for the read an earlier call started
 * if that one is recent enough (called once per cycle, it finished with the
 * previous update), else for the queue. */
typedef struct clg_stats {
    size_t struct_size;       /* set by clg_stats_init */
    uint64_t updates;         /* applied updates (skipped ones excluded) */
    uint64_t micro_steps;     /* micro-steps taken in total */
    uint64_t skipped_updates; /* skipped for non-finite gradients */
    uint64_t skipped_micro_steps;
    float lr;                 /* lr of the last update */
    float grad_norm;          /* global norm of the last normalized gradient
                                 (NaN if no statistics pass ran) */
    float clip_coef;          /* clipping coefficient applied */
    float loss_scale;         /* current loss scale (1 if none) */
    float weight_sum;         /* weights accumulated in the current cycle */
    int last_nonfinite;       /* last update saw inf/NaN */
    float noise_scale;        /* B_simple EMA (NaN until the first estimate) */
    float noise_g2;           /* EMA of |G|^2 estimate */
    float noise_trace;        /* EMA of tr(Sigma) estimate */
    /* Added in 0.2. A struct_size that ends before them (a consumer built
     * against the smaller layout) is accepted; they are then not written. */
    uint64_t cycles;          /* completed cycles (applied + skipped updates) */
    unsigned cycles_behind;   /* cycles the host completed after the snapshot */
} clg_stats;
static inline clg_stats clg_stats_init(void)
{
    clg_stats s = {0};
    s.struct_size = sizeof s;
    return s;
}
CLG_API clg_status clg_model_stats(clg_model *model, int blocking, clg_stats *stats);
/* Current loss scale to multiply the loss by (1 without loss scaling). */
CLG_API clg_status clg_model_loss_scale(clg_model *model, int blocking, float *scale);
/* Where the current loss scale lives on the device (one fp32 at
 * view.offset of view.mem), so that the caller's loss-gradient kernel can
 * multiply by it with no host sync. Constant within a cycle. */
CLG_API clg_status clg_model_loss_scale_view(const clg_model *model, clg_view *view);
/* Per-tensor gradient norms of the last update (config.tensor_norms), one
 * float per tensor: count must equal clg_model_tensor_count. Blocking. */
CLG_API clg_status clg_model_tensor_norms(clg_model *model, float *norms, size_t count);
/* Waits for the queue; returns CLG_ERR_NONFINITE under the error policy if an
 * update saw inf/NaN since the last sync. */
CLG_API clg_status clg_model_sync(clg_model *model);

/* ------------------------------------------------------------ checkpoints */

/* Saves the whole training state, safetensors-compatible, durably (temp file,
 * fsync, rename, fsync of the directory). meta: n_meta key/value pairs of the
 * caller's own (keys must not start with "clgrad."). Blocking. */
CLG_API clg_status clg_checkpoint_save(clg_model *model, const char *path,
                                       const char *const *meta_keys,
                                       const char *const *meta_values, size_t n_meta);
/* Loads a checkpoint into the model, all or nothing. The caller's metadata is
 * returned through the callback (may be NULL). Blocking. A path that is no
 * regular file (a FIFO, a device, a directory) is refused with CLG_ERR_IO
 * before anything is read, without waiting on it; so is a file that shrank
 * or grew while it was read. */
typedef void (*clg_meta_fn)(const char *key, const char *value, void *user);
CLG_API clg_status clg_checkpoint_load(clg_model *model, const char *path, clg_meta_fn meta,
                                       void *user);
/* The caller's metadata of a checkpoint file, without a model or a device:
 * its header alone is read and verified as clg_checkpoint_load verifies it
 * (length, header CRC before the JSON is read, JSON, clgrad's keys, format
 * and version), then each caller pair goes to meta (may be NULL) in file
 * order. For checking a file before loading it: CLG_ERR_CORRUPT_FILE (a
 * damaged header, nothing handed to meta) or CLG_ERR_IO, with the message
 * in clg_last_error(NULL). The tensors are not read: their CRCs are
 * clg_checkpoint_load's. */
CLG_API clg_status clg_checkpoint_read_meta(const char *path, clg_meta_fn meta, void *user);
/* clg_checkpoint_save for a sharded model, with the states of every shard
 * gathered by the caller: states[s] is state s over the whole layout space
 * as stored: its codes (fp32, bf16, Q8 or Q4), then, for Q8/Q4 states, its
 * absmax values (fp32), each part the shards' clg_model_download_state_raw
 * (..., CLG_SHARD_RANGE, ...) end to end at the offsets
 * clg_model_state_extent gives; n_states must equal clg_model_state_count. The file is the one an unsharded model saves: it
 * loads into a model with any shards or none. A sharded model loads any
 * checkpoint of its layout with clg_checkpoint_load, keeping its shard. */
CLG_API clg_status clg_checkpoint_save_gathered(clg_model *model, const char *path,
                                                const char *const *meta_keys,
                                                const char *const *meta_values, size_t n_meta,
                                                const void *const *states, size_t n_states);

/* ----------------------------------------------------- contrastive losses */

/* In-batch contrastive losses (InfoNCE, CLIP, dense retrieval), where k
 * micro-batches are not one batch of k times the size: each micro-batch
 * would see only its own negatives. Two fixes (docs/library.md,
 * "Contrastive losses"; docs/design.md, section 6):
 *  - GradCache (Gao et al. 2021): forward every micro-batch without
 *    building a graph, fill its representations into the cache, compute
 *    the loss of the whole batch and its gradient with respect to every
 *    cached row, then run each micro-batch's forward again and its backward
 *    with its rows' gradient (clg_contrastive_grad): exactly the big
 *    batch's parameter gradient. Randomness must replay (clg_sample_seed).
 *  - ContAccum (arXiv 2406.12356): FIFO memory banks of past query and key
 *    rows act as extra negatives, with no gradient and no second forward.
 *
 * A clg_contrastive holds B rows per side, queries q and keys k ([B x d]
 * each, row-major, fp32 or bf16). After rows [0, n) of both sides are
 * filled, clg_contrastive_compute computes, with l_ij = u_i.v_j / tau
 * (u, v the rows, L2-normalized unless normalize is 0) and the banks'
 * rows in use as extra columns (keys for the queries' direction, queries
 * for the keys'),
 *     L = c_qk sum_i (log sum_j exp l_ij - l_ii)  [j: keys, then key bank]
 *       + c_kq sum_j (log sum_i exp l_ij - l_jj)  [i: queries, then query bank]
 * with c_qk = 1/n, c_kq = 0 (one-directional) or c_qk = c_kq = 1/(2n)
 * (symmetric), and dL/d(row) for every cached row of both sides, in tiled
 * kernels that never hold more than one 32 x 32 tile of the n x n logits:
 * memory grows with B*d, not B^2 (clg_contrastive_estimate). Results are
 * deterministic: the same rows give the same bits, whichever micro-batches
 * filled them.
 *
 * The gradient of a micro-batch's rows goes into the caller's backward,
 * which writes parameter gradients through clg_step as usual (paths A, B,
 * C, with weights). In mean mode with weight m_j (the micro-batch's row
 * count), hand the backward scale = n / m_j: the cycle's update is then
 * that of one batch of n (clg_contrastive_grad). Calls enqueue on the
 * context's queue and never wait, except those that say they block. A
 * clg_contrastive is not thread-safe. Every buffer is charged to the
 * context's budget. */
typedef struct clg_contrastive clg_contrastive;

typedef enum clg_side { CLG_SIDE_QUERY = 0, CLG_SIDE_KEY = 1 } clg_side;

typedef struct clg_contrastive_config {
    size_t struct_size; /* set by clg_contrastive_config_init */
    size_t batch;       /* B: rows per side, 1 .. 2^24 (default 0: must be set) */
    size_t dim;         /* d: elements per row, 1 .. 65536 (default 0: must be set) */
    clg_dtype dtype;    /* cache and banks: CLG_FP32 (default) or CLG_BF16 */
    float temperature;  /* tau: finite, >= 1e-4 (default 0.05) */
    int symmetric;      /* 1 (default): both directions, averaged; 0: q to k only */
    int normalize;      /* 1 (default): cosine similarity, rows divided by
                           max(|row|, 1e-12) as F.normalize; 0: dot products */
    size_t bank_size;   /* ContAccum: rows per bank, 0 (default: no banks) .. 2^24 */
} clg_contrastive_config;
static inline clg_contrastive_config clg_contrastive_config_init(void)
{
    clg_contrastive_config c = {0};
    c.struct_size = sizeof c;
    c.dtype = CLG_FP32;
    c.temperature = 0.05f;
    c.symmetric = 1;
    c.normalize = 1;
    return c;
}

/* Device bytes of a clg_contrastive, all of them charged to the budget:
 * the cache (2 B d x the dtype's size), the fp32 gradients (2 B d x 4),
 * the banks (2 bank_size d x the dtype's size), the per-row values (8 B +
 * 2 bank_size floats: inverse norms, log-sum-exps, the positives'
 * softmax complements and the rows' losses) and the loss (4 bytes), and
 * total, the sum of all the fields, later ones included. */
typedef struct clg_contrastive_plan {
    size_t struct_size; /* set by clg_contrastive_plan_init */
    uint64_t cache, grads, banks, rows;
    uint64_t total;
} clg_contrastive_plan;
static inline clg_contrastive_plan clg_contrastive_plan_init(void)
{
    clg_contrastive_plan p = {0};
    p.struct_size = sizeof p;
    return p;
}
/* The plan of a configuration, before anything is allocated (no device
 * needed): exactly what clg_contrastive_create allocates. */
CLG_API clg_status clg_contrastive_estimate(const clg_contrastive_config *config,
                                            clg_contrastive_plan *plan);
CLG_API clg_status clg_contrastive_memory(const clg_contrastive *c, clg_contrastive_plan *plan);

/* Allocates the cache (zero-filled) and builds its kernels. */
CLG_API clg_status clg_contrastive_create(clg_context *ctx, const clg_contrastive_config *config,
                                          clg_contrastive **out);
/* Detaches it from its model (clg_contrastive_attach) and frees it. */
CLG_API void clg_contrastive_destroy(clg_contrastive *c);
CLG_API const clg_contrastive_config *clg_contrastive_get_config(const clg_contrastive *c);

/* Copies rows [row, row + rows) of one side from the caller's buffer: row
 * r's d values at src_offset + r * src_stride (elements of src_dtype:
 * CLG_FP32, CLG_FP16 or CLG_BF16; src_stride >= d). A bf16 cache rounds to
 * nearest even. The first fill after a compute starts a new batch: every
 * row is unfilled again. */
CLG_API clg_status clg_contrastive_fill(clg_contrastive *c, clg_side side, size_t row,
                                        size_t rows, cl_mem src, size_t src_offset,
                                        size_t src_stride, clg_dtype src_dtype,
                                        const clg_events *events);
/* Loss and gradients of rows [0, rows) of both sides (all filled, else
 * CLG_ERR_STATE naming the first row missing), with the banks' rows in
 * use as extra negatives. */
CLG_API clg_status clg_contrastive_compute(clg_contrastive *c, size_t rows,
                                           const clg_events *events);
/* The loss of the last compute (blocking read). */
CLG_API clg_status clg_contrastive_loss(clg_contrastive *c, float *loss);
/* Where it lives on the device (one fp32), for a read with no sync. */
CLG_API clg_status clg_contrastive_loss_view(const clg_contrastive *c, clg_view *view);
/* Writes scale * dL/d(row) of rows [row, row + rows) of one side (of the
 * last compute) into the caller's buffer: row r at dst_offset + r *
 * dst_stride, as dst_dtype (CLG_FP32, CLG_FP16 or CLG_BF16, rounded to
 * nearest even). */
CLG_API clg_status clg_contrastive_grad(clg_contrastive *c, clg_side side, size_t row,
                                        size_t rows, float scale, cl_mem dst, size_t dst_offset,
                                        size_t dst_stride, clg_dtype dst_dtype,
                                        const clg_events *events);
/* The fp32 gradient of one side in place: row r's d values at
 * view.offset + r * d of view.mem, valid until the next compute (count: B d). */
CLG_API clg_status clg_contrastive_grad_view(const clg_contrastive *c, clg_side side,
                                             clg_view *view);

/* ContAccum: appends rows [0, rows) of both sides (filled) to the banks,
 * first in, first out: a bank of M rows then holds the last M rows pushed,
 * row j of all pushes in slot j mod M. Call it after the compute that used
 * the bank. Device copies only, no kernel, no sync. */
CLG_API clg_status clg_contrastive_bank_push(clg_contrastive *c, size_t rows,
                                             const clg_events *events);
/* Rows in use (count <= bank_size) and the slot the next push writes. */
CLG_API clg_status clg_contrastive_bank_info(const clg_contrastive *c, size_t *count,
                                             size_t *head);
/* Empties the banks (host counters only). */
CLG_API clg_status clg_contrastive_bank_reset(clg_contrastive *c);
/* One bank, slot order, widened to fp32 (blocking): count must be
 * bank_size * d. */
CLG_API clg_status clg_contrastive_bank_download(clg_contrastive *c, clg_side side, float *host,
                                                 size_t count, const clg_events *events);
/* Makes the banks part of model's checkpoints: tensors "<name>.bank_q" and
 * "<name>.bank_k" ([bank_size, d], F32 or BF16) and "<name>.bank_state"
 * (I32 [2]: the next slot, the rows in use). A load then needs them in the
 * file, checks them before changing anything, and restores them with the
 * model. The cache itself is not saved: checkpoint between updates. model
 * must be finalized and on c's context; name must not start with
 * "clgrad." and its keys must not be the model's. model NULL detaches.
 * Destroying either side detaches. */
CLG_API clg_status clg_contrastive_attach(clg_contrastive *c, clg_model *model, const char *name);

/* Replay: a seed for the randomness of one sample (augmentation, dropout)
 * that depends only on (seed, update, position of the sample in the
 * effective batch), so that GradCache's second forward sees what the first
 * saw, and a sample's views do not depend on the micro-batch size. It is
 *     h = mix(seed ^ 0x636c677261645f73); h = mix(h ^ update); h = mix(h ^ position)
 * with mix(x) splitmix64's output function of x + 0x9e3779b97f4a7c15
 * (z = (z ^ z >> 30) * 0xbf58476d1ce4e5b9; z = (z ^ z >> 27) *
 * 0x94d049bb133111eb; z ^ z >> 31), for device code to compute the same. */
CLG_API uint64_t clg_sample_seed(uint64_t seed, uint64_t update, uint64_t position);

#ifdef __cplusplus
}
#endif
#endif /* CLGRAD_H */
