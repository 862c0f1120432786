/* internal.h - what the library's own files share and users never see:
 * the context, error reporting, program building, budgeted buffers. */
#ifndef CLGRAD_INTERNAL_H
#define CLGRAD_INTERNAL_H

#include "clgrad_advanced.h"

#include <stdarg.h>
#include <stdbool.h>
#include <threads.h>

#define CLG_ERROR_MAX 8192

/* A program built for this context, keyed by name, options and whose
 * source it is: clgrad's embedded cl/<name>.cl, or a caller's
 * (clg_context_program_source), told apart from other sources under the
 * same name by its SHA-256. */
typedef struct clg_program_entry {
    char *name;
    char *options;
    bool caller_source;
    uint8_t source_digest[32]; /* of the caller's chunks; zero for clgrad's */
    cl_program program;
    struct clg_program_entry *next;
} clg_program_entry;

struct clg_context {
    cl_context cl;
    cl_device_id device;
    cl_command_queue queue;
    clg_device_info info;
    int opencl_c_major, opencl_c_minor; /* from CL_DEVICE_OPENCL_C_VERSION */

    mtx_t lock; /* guards error, budget counters and the program list */
    char error[CLG_ERROR_MAX];

    uint64_t budget;   /* 0 = no cap */
    uint64_t in_use;   /* clgrad's buffers + caller reservations */
    uint64_t peak;
    uint64_t max_alloc; /* min(device max alloc, CLGRAD_MAX_ALLOC) */
    uint64_t launches;

    clg_program_entry *programs;
    /* kernel-cache entries found unusable and rebuilt (program.c), and the
     * last one's description (clg_context_cache_repairs) */
    uint64_t cache_repairs;
    char cache_note[512];
};

/* ----------------------------------------------------------- errors */

/* Records a message for ctx (or the thread's context-less slot when ctx is
 * NULL) and returns status, so that callers write
 *     return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "clg_step: weight %g", w);
 */
clg_status clg__fail(clg_context *ctx, clg_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Drops this thread's record of a failure on ctx (ctx is being destroyed). */
void clg__error_forget(const clg_context *ctx);
/* For a failed OpenCL call: passes the code through and records
 * "<what>: <call> failed: CL_XXX (code)". */
clg_status clg__cl_fail(clg_context *ctx, cl_int err, const char *what, const char *call);
/* The same for a failed device allocation (clCreateBuffer and the zero fill
 * of a new buffer): the codes drivers use for a full device become
 * CLG_ERR_OUT_OF_DEVICE_MEMORY, the only translation clgrad makes. */
clg_status clg__cl_alloc_fail(clg_context *ctx, cl_int err, const char *what, const char *call);
/* The name of an OpenCL error code ("CL_INVALID_VALUE"), or NULL. */
const char *clg__cl_error_name(cl_int err);

/* ----------------------------------------------------------- events */

/* The first thing a call with clg_events does: its event is NULL until the
 * call succeeds. */
static inline void clg__events_clear(const clg_events *ev)
{
    if (ev != NULL && ev->event != NULL)
        *ev->event = NULL;
}
/* Validates a call's clg_events (NULL is fine) before it changes anything. */
clg_status clg__events_check(clg_context *ctx, const clg_events *ev, const char *who);
/* Makes the call's commands wait for the caller's wait list. */
clg_status clg__events_wait(clg_context *ctx, const clg_events *ev, const char *who);
/* After the call's commands (st: how they went): the caller's event, a
 * marker behind them. Returns st, or the marker's failure. */
clg_status clg__events_finish(clg_context *ctx, const clg_events *ev, clg_status st,
                              const char *who);

/* ----------------------------------------------------------- programs */

/* Embedded kernel source: the chunks of cl/<name>.cl, NULL-terminated.
 * NULL if no such file was embedded. (generated: clg_kernels.c) */
const char *const *clg__kernel_source(const char *name);

/* Builds (or fetches from the in-memory list, or from the disk cache)
 * program name with options; common.cl is compiled in front of every
 * program. The program stays owned by ctx. */
clg_status clg__program(clg_context *ctx, const char *name, const char *options,
                        cl_program *program, int *from_cache);
/* The same for a caller's source (clg_context_program_source): chunks,
 * NULL-terminated, compiled after common.cl. */
clg_status clg__program_source(clg_context *ctx, const char *name, const char *const *chunks,
                               const char *options, cl_program *program, int *from_cache);
/* Creates a kernel from a program; the caller releases it. */
clg_status clg__kernel(clg_context *ctx, cl_program program, const char *kernel_name,
                       cl_kernel *kernel);

/* ----------------------------------------------------------- buffers */

/* Creates a buffer charged to the budget and touched once (so lazy drivers
 * fail here, not at the first kernel). */
clg_status clg__buffer_create(clg_context *ctx, uint64_t bytes, cl_mem *out);
/* Releases a buffer made by clg__buffer_create and refunds its bytes. */
void clg__buffer_release(clg_context *ctx, cl_mem mem, uint64_t bytes);

/* A failed clSetKernelArg (a clgrad bug or a lost device), reported with
 * the argument list and the argument's index and name. */
clg_status clg__args_failed(clg_context *ctx, cl_int err, const char *list, const char *arg);
/* Sets every argument of kernel k from *args with the setter of argument
 * list `list` (clg__set_args_<list>, generated into clg_layout.h from
 * cl/layout.py), returning the failure from the calling function. */
#define CLG_SET_ARGS(ctx, list, k, args)                                       \
    do {                                                                       \
        const char *bad_ = NULL;                                               \
        cl_int e_ = clg__set_args_##list((k), (args), &bad_);                  \
        if (e_ != CL_SUCCESS)                                                  \
            return clg__args_failed((ctx), e_, #list, bad_);                   \
    } while (0)

/* Enqueues a 1-D NDRange and counts it as one launch. */
clg_status clg__launch(clg_context *ctx, cl_kernel kernel, size_t global, size_t local,
                       const char *what);

/* A work-group size for streaming kernels on this device: the preferred
 * multiple times a small factor, clamped to the device and kernel maxima. */
size_t clg__stream_local_size(clg_context *ctx, cl_kernel kernel);

/* ----------------------------------------------------------- hashing */

typedef struct clg_sha256 {
    uint32_t state[8];
    uint64_t length;
    uint8_t block[64];
    size_t fill;
} clg_sha256;
void clg__sha256_init(clg_sha256 *s);
void clg__sha256_update(clg_sha256 *s, const void *data, size_t n);
void clg__sha256_final(clg_sha256 *s, uint8_t digest[32]);

/* CRC-32 (IEEE 802.3, as zlib's crc32) */
uint32_t clg__crc32(uint32_t crc, const void *data, size_t n);

/* ----------------------------------------------------------- fault injection */

/* Test hook: arms a failure of the n-th (1-based) operation of a kind from
 * now on; 0 disarms. Also armed by CLGRAD_FAULT="alloc:N" (or enqueue:N,
 * write:N) at the first check. Compiled only into the test build
 * (CLG_FAULT_INJECTION, fault.c); in the installed library every check is a
 * constant false that the compiler removes. */
typedef enum clg_fault_kind {
    CLG_FAULT_ALLOC = 0,   /* clCreateBuffer in clg__buffer_create          */
    CLG_FAULT_ENQUEUE = 1, /* every clEnqueue* clgrad issues                */
    CLG_FAULT_WRITE = 2,   /* every write(2)/fsync of a checkpoint save     */
    CLG_FAULT_KINDS = 3
} clg_fault_kind;
#ifdef CLG_FAULT_INJECTION
void clg__fault_arm(clg_fault_kind kind, uint64_t n);
/* True if this operation must fail (counts the operation). */
bool clg__fault_hit(clg_fault_kind kind);
#else
static inline bool clg__fault_hit(clg_fault_kind kind)
{
    (void)kind;
    return false;
}
#endif

#endif /* CLGRAD_INTERNAL_H */
