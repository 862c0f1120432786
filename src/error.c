/* error.c - last-error messages, errno-like: each thread sees its own last
 * failure. A thread's last failure on a context is kept per thread (so that
 * another thread failing on the same shared context cannot replace it
 * between a failing call and clg_last_error), and each context also keeps
 * its last message from any thread, under its lock, for threads that have
 * no failure of their own on it. Context-less calls use ctx == NULL. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

/* This thread's last context-less failure, and its last failure on a
 * context (which one: ctx_error_of). */
static _Thread_local char null_error[CLG_ERROR_MAX];
static _Thread_local const clg_context *ctx_error_of;
static _Thread_local char ctx_error[CLG_ERROR_MAX];
/* What clg_last_error hands out: a private copy per thread. */
static _Thread_local char thread_copy[CLG_ERROR_MAX];

static void set_message(clg_context *ctx, const char *msg)
{
    if (!ctx) {
        snprintf(null_error, sizeof null_error, "%s", msg);
        return;
    }
    snprintf(ctx_error, sizeof ctx_error, "%s", msg);
    ctx_error_of = ctx;
    mtx_lock(&ctx->lock);
    snprintf(ctx->error, sizeof ctx->error, "%s", msg);
    mtx_unlock(&ctx->lock);
}

void clg__error_forget(const clg_context *ctx)
{
    /* A destroyed context's address may be reused by a new one. */
    if (ctx_error_of == ctx)
        ctx_error_of = NULL;
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
        snprintf(thread_copy, sizeof thread_copy, "%s", null_error);
    } else if (ctx_error_of == ctx) {
        snprintf(thread_copy, sizeof thread_copy, "%s", ctx_error);
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

clg_status clg_context_fail(clg_context *ctx, clg_status status, const char *message)
{
    set_message(ctx, message ? message : clg_status_string(status));
    return status;
}
