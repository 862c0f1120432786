/* error.c - last-error messages: one per context (guarded by its lock) and
 * one per thread for calls that have no context yet. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

/* Message of the last failed context-less call on this thread. */
static _Thread_local char thread_error[CLG_ERROR_MAX];
/* What clg_last_error hands out: a private copy per thread, so that another
 * thread failing on the same context cannot change it while it is read. */
static _Thread_local char thread_copy[CLG_ERROR_MAX];

static void set_message(clg_context *ctx, const char *msg)
{
    if (!ctx) {
        snprintf(thread_error, sizeof thread_error, "%s", msg);
        return;
    }
    mtx_lock(&ctx->lock);
    snprintf(ctx->error, sizeof ctx->error, "%s", msg);
    mtx_unlock(&ctx->lock);
}

clg_status clg__fail(clg_context *ctx, clg_status status, const char *fmt, ...)
{
    char msg[CLG_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    set_message(ctx, msg);
    return status;
}

static clg_status record_cl(clg_context *ctx, clg_status status, cl_int err, const char *what,
                            const char *call)
{
    const char *name = clg__cl_error_name(err);
    return clg__fail(ctx, status, "%s: %s failed: %s (%d)", what ? what : "clgrad",
                     call ? call : "OpenCL call", name ? name : "unknown OpenCL error", (int)err);
}

clg_status clg__cl_fail(clg_context *ctx, cl_int err, const char *what, const char *call)
{
    return record_cl(ctx, (clg_status)err, err, what, call);
}

clg_status clg__cl_alloc_fail(clg_context *ctx, cl_int err, const char *what, const char *call)
{
    /* Drivers report a full device with any of these three. */
    bool full = err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
                err == CL_INVALID_BUFFER_SIZE;
    return record_cl(ctx, full ? CLG_ERR_OUT_OF_DEVICE_MEMORY : (clg_status)err, err, what, call);
}

const char *clg_last_error(const clg_context *ctx)
{
    if (!ctx) {
        snprintf(thread_copy, sizeof thread_copy, "%s", thread_error);
    } else {
        /* The lock is not part of the context's logical state. */
        clg_context *c = (clg_context *)ctx;
        mtx_lock(&c->lock);
        snprintf(thread_copy, sizeof thread_copy, "%s", c->error);
        mtx_unlock(&c->lock);
    }
    if (!thread_copy[0])
        return "no error recorded";
    return thread_copy;
}
