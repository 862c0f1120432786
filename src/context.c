/* context.c - the clgrad context: an OpenCL context, device and in-order
 * queue (own or the caller's), the memory budget and the launch counter. */
#include "internal.h"
#include "device_info.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CLGRAD_MAX_ALLOC: a positive decimal byte count and nothing else; tests use
 * it to force tiny arena chunks on a device with a large limit. */
static clg_status read_max_alloc_env(uint64_t *value, const char *who)
{
    const char *s = getenv("CLGRAD_MAX_ALLOC");
    *value = 0;
    if (!s || !*s)
        return CLG_SUCCESS;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT,
                             "%s: CLGRAD_MAX_ALLOC=\"%s\" is not a byte count "
                             "(decimal digits only)",
                             who, s);
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (v == 0)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT,
                         "%s: CLGRAD_MAX_ALLOC=\"%s\" must be positive", who, s);
    *value = v;
    return CLG_SUCCESS;
}

/* Allocates and fills everything but the OpenCL objects; who is the
 * public function, for the messages. */
static clg_status context_new(const clg_device_info *info, clg_context **out, const char *who)
{
    uint64_t env_max;
    clg_status st = read_max_alloc_env(&env_max, who);
    if (st != CLG_SUCCESS)
        return st;
    clg_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return clg__fail(NULL, CLG_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", who);
    /* Recursive: clg__fail may be called by code that already holds the lock. */
    if (mtx_init(&ctx->lock, mtx_plain | mtx_recursive) != thrd_success) {
        free(ctx);
        return clg__fail(NULL, CLG_ERR_OUT_OF_HOST_MEMORY, "%s: mtx_init failed", who);
    }
    ctx->info = *info;
    clg__parse_cl_version(info->opencl_c_version, "OpenCL C ", &ctx->opencl_c_major,
                          &ctx->opencl_c_minor);
    if (ctx->opencl_c_major == 0) { /* unparsable: assume the 1.2 baseline */
        ctx->opencl_c_major = 1;
        ctx->opencl_c_minor = 2;
    }
    ctx->max_alloc = info->max_mem_alloc_size;
    if (env_max && env_max < ctx->max_alloc)
        ctx->max_alloc = env_max;
    *out = ctx;
    return CLG_SUCCESS;
}

/* A failure of a function called on behalf of who (device listing and
 * selection, program building): its message, prefixed with who, so that
 * clg_last_error names the function the caller called. */
static clg_status fail_within(clg_context *ctx, clg_status st, const char *who)
{
    char inner[CLG_ERROR_MAX];
    snprintf(inner, sizeof inner, "%s", clg_last_error(ctx));
    return clg__fail(ctx, st, "%s: %s", who, inner);
}

static void context_free(clg_context *ctx)
{
    mtx_destroy(&ctx->lock);
    free(ctx);
}

clg_status clg_context_create(clg_context **out, const char *selector)
{
    if (!out)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_context_create: out is NULL");
    *out = NULL;

    clg_device_info *devices = NULL;
    size_t count = 0, chosen = 0;
    clg_status st = clg_devices_list(&devices, &count);
    if (st != CLG_SUCCESS)
        return fail_within(NULL, st, "clg_context_create");
    st = clg_device_select(devices, count, selector, &chosen);
    if (st != CLG_SUCCESS) {
        clg_devices_free(devices);
        return fail_within(NULL, st, "clg_context_create");
    }
    clg_context *ctx = NULL;
    st = context_new(&devices[chosen], &ctx, "clg_context_create");
    clg_devices_free(devices);
    if (st != CLG_SUCCESS)
        return st;

    cl_int err;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)ctx->info.platform,
                                     0};
    ctx->device = ctx->info.device;
    ctx->cl = clCreateContext(props, 1, &ctx->device, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        context_free(ctx);
        return clg__cl_fail(NULL, err, "clg_context_create", "clCreateContext");
    }
    int major, minor;
    clg__parse_cl_version(ctx->info.device_version, "OpenCL ", &major, &minor);
    /* The 2.0 entry point does not exist in 1.x drivers; the 1.2 one is
     * deprecated from 2.0 on. Properties 0: in order, no profiling. */
    if (major >= 2) {
        ctx->queue = clCreateCommandQueueWithProperties(ctx->cl, ctx->device, NULL, &err);
    } else {
        ctx->queue = clCreateCommandQueue(ctx->cl, ctx->device, 0, &err);
    }
    if (err != CL_SUCCESS) {
        clReleaseContext(ctx->cl);
        context_free(ctx);
        return clg__cl_fail(NULL, err, "clg_context_create",
                            major >= 2 ? "clCreateCommandQueueWithProperties"
                                       : "clCreateCommandQueue");
    }
    *out = ctx;
    return CLG_SUCCESS;
}

/* Finds the platform and device indices of dev, as clg_devices_list numbers
 * them; leaves 0:0 for a device not enumerable (e.g. a sub-device). */
static void find_indices(cl_device_id dev, unsigned *pi, unsigned *di)
{
    *pi = *di = 0;
    cl_uint nplat = 0;
    if (clGetPlatformIDs(0, NULL, &nplat) != CL_SUCCESS || nplat == 0)
        return;
    cl_platform_id *plats = malloc(nplat * sizeof *plats);
    if (!plats || clGetPlatformIDs(nplat, plats, NULL) != CL_SUCCESS) {
        free(plats);
        return;
    }
    for (cl_uint p = 0; p < nplat; p++) {
        cl_uint ndev = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &ndev) != CL_SUCCESS || ndev == 0)
            continue;
        cl_device_id *devs = malloc(ndev * sizeof *devs);
        if (devs && clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, ndev, devs, NULL) == CL_SUCCESS)
            for (cl_uint d = 0; d < ndev; d++)
                if (devs[d] == dev) {
                    *pi = p;
                    *di = d;
                }
        free(devs);
    }
    free(plats);
}

clg_status clg_context_wrap(clg_context **out, cl_context context, cl_device_id device,
                            cl_command_queue queue)
{
    if (!out)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_context_wrap: out is NULL");
    *out = NULL;
    if (!context || !device || !queue)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_context_wrap: %s is NULL",
                         !context  ? "context"
                         : !device ? "device"
                                   : "queue");

    /* The queue must belong to this context and device, and run in order:
     * clgrad's passes depend on one another without events. */
    cl_context qctx;
    cl_device_id qdev;
    cl_command_queue_properties qprops;
    cl_int err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL);
    if (err == CL_SUCCESS)
        err = clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof qdev, &qdev, NULL);
    if (err == CL_SUCCESS)
        err = clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof qprops, &qprops, NULL);
    if (err != CL_SUCCESS)
        return clg__cl_fail(NULL, err, "clg_context_wrap", "clGetCommandQueueInfo");
    if (qctx != context)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT,
                         "clg_context_wrap: the queue belongs to another cl_context");
    if (qdev != device)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT,
                         "clg_context_wrap: the queue belongs to another device");
    if (qprops & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT,
                         "clg_context_wrap: the queue is out-of-order; clgrad needs an "
                         "in-order queue");

    cl_platform_id plat;
    err = clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof plat, &plat, NULL);
    if (err != CL_SUCCESS)
        return clg__cl_fail(NULL, err, "clg_context_wrap", "clGetDeviceInfo(CL_DEVICE_PLATFORM)");
    clg_device_info info;
    memset(&info, 0, sizeof info);
    err = clg__device_describe(plat, device, &info);
    if (err != CL_SUCCESS)
        return clg__cl_fail(NULL, err, "clg_context_wrap", "clGetDeviceInfo");
    find_indices(device, &info.platform_index, &info.device_index);

    clg_context *ctx = NULL;
    clg_status st = context_new(&info, &ctx, "clg_context_wrap");
    if (st != CLG_SUCCESS)
        return st;
    /* Our own references, released on destroy; the caller's stay theirs. */
    if ((err = clRetainContext(context)) != CL_SUCCESS) {
        context_free(ctx);
        return clg__cl_fail(NULL, err, "clg_context_wrap", "clRetainContext");
    }
    if ((err = clRetainCommandQueue(queue)) != CL_SUCCESS) {
        clReleaseContext(context);
        context_free(ctx);
        return clg__cl_fail(NULL, err, "clg_context_wrap", "clRetainCommandQueue");
    }
    ctx->cl = context;
    ctx->device = device;
    ctx->queue = queue;
    *out = ctx;
    return CLG_SUCCESS;
}

void clg_context_destroy(clg_context *ctx)
{
    if (!ctx)
        return;
    clg__error_forget(ctx);
    /* Nothing of ours may still run when the programs go away. */
    if (ctx->queue)
        clFinish(ctx->queue);
    clg_program_entry *e = ctx->programs;
    while (e) {
        clg_program_entry *next = e->next;
        if (e->program)
            clReleaseProgram(e->program);
        free(e->name);
        free(e->options);
        free(e);
        e = next;
    }
    if (ctx->queue)
        clReleaseCommandQueue(ctx->queue);
    if (ctx->cl)
        clReleaseContext(ctx->cl);
    context_free(ctx);
}

cl_context clg_context_cl(const clg_context *ctx)
{
    return ctx ? ctx->cl : NULL;
}

cl_device_id clg_context_device(const clg_context *ctx)
{
    return ctx ? ctx->device : NULL;
}

cl_command_queue clg_context_queue(const clg_context *ctx)
{
    return ctx ? ctx->queue : NULL;
}

const clg_device_info *clg_context_device_info(const clg_context *ctx)
{
    return ctx ? &ctx->info : NULL;
}

/* The counters are read under the lock; it is not logical state, so the
 * const getters cast it away. */
static uint64_t locked_read(const clg_context *ctx, const uint64_t *field)
{
    if (!ctx)
        return 0;
    clg_context *c = (clg_context *)ctx;
    mtx_lock(&c->lock);
    uint64_t v = *field;
    mtx_unlock(&c->lock);
    return v;
}

uint64_t clg_context_device_bytes(const clg_context *ctx)
{
    return ctx ? locked_read(ctx, &ctx->in_use) : 0;
}

uint64_t clg_context_peak_device_bytes(const clg_context *ctx)
{
    return ctx ? locked_read(ctx, &ctx->peak) : 0;
}

uint64_t clg_context_budget(const clg_context *ctx)
{
    return ctx ? locked_read(ctx, &ctx->budget) : 0;
}

uint64_t clg_context_launches(const clg_context *ctx)
{
    return ctx ? locked_read(ctx, &ctx->launches) : 0;
}

uint64_t clg_context_cache_repairs(const clg_context *ctx, char *note, size_t size)
{
    if (note && size)
        note[0] = '\0';
    if (!ctx)
        return 0;
    clg_context *c = (clg_context *)ctx; /* the lock, as in locked_read */
    mtx_lock(&c->lock);
    uint64_t n = c->cache_repairs;
    if (note && size)
        snprintf(note, size, "%s", c->cache_note);
    mtx_unlock(&c->lock);
    return n;
}

uint64_t clg_context_max_alloc(const clg_context *ctx)
{
    return ctx ? ctx->max_alloc : 0;
}

clg_status clg_context_set_budget(clg_context *ctx, uint64_t budget_bytes)
{
    if (!ctx)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_context_set_budget: ctx is NULL");
    mtx_lock(&ctx->lock);
    clg_status st = CLG_SUCCESS;
    if (budget_bytes != 0 && ctx->in_use > budget_bytes)
        st = clg__fail(ctx, CLG_ERR_OVER_BUDGET,
                       "clg_context_set_budget: budget %llu bytes is below the %llu bytes "
                       "already in use",
                       (unsigned long long)budget_bytes, (unsigned long long)ctx->in_use);
    else
        ctx->budget = budget_bytes;
    mtx_unlock(&ctx->lock);
    return st;
}

clg_status clg_context_reserve(clg_context *ctx, uint64_t bytes)
{
    if (!ctx)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_context_reserve: ctx is NULL");
    mtx_lock(&ctx->lock);
    clg_status st = CLG_SUCCESS;
    if (bytes > UINT64_MAX - ctx->in_use ||
        (ctx->budget != 0 && ctx->in_use + bytes > ctx->budget)) {
        st = clg__fail(ctx, CLG_ERR_OVER_BUDGET,
                       "clg_context_reserve: %llu bytes requested, %llu in use, budget %llu",
                       (unsigned long long)bytes, (unsigned long long)ctx->in_use,
                       (unsigned long long)ctx->budget);
    } else {
        ctx->in_use += bytes;
        if (ctx->in_use > ctx->peak)
            ctx->peak = ctx->in_use;
    }
    mtx_unlock(&ctx->lock);
    return st;
}

void clg_context_unreserve(clg_context *ctx, uint64_t bytes)
{
    if (!ctx)
        return;
    mtx_lock(&ctx->lock);
    ctx->in_use -= bytes < ctx->in_use ? bytes : ctx->in_use;
    mtx_unlock(&ctx->lock);
}

clg_status clg_context_program(clg_context *ctx, const char *name, const char *options,
                               cl_program *program, int *from_cache)
{
    const char *who = "clg_context_program";
    if (from_cache)
        *from_cache = 0;
    if (program)
        *program = NULL;
    if (!ctx || !name || !program)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "%s: %s is NULL", who,
                         !ctx ? "ctx" : !name ? "name" : "program");
    clg_status st = clg__program(ctx, name, options, program, from_cache);
    return st == CLG_SUCCESS ? st : fail_within(ctx, st, who);
}

clg_status clg_context_program_source(clg_context *ctx, const char *name,
                                      const char *const *chunks, const char *options,
                                      cl_program *program, int *from_cache)
{
    const char *who = "clg_context_program_source";
    if (from_cache)
        *from_cache = 0;
    if (program)
        *program = NULL;
    if (!ctx || !name || !chunks || !program)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "%s: %s is NULL", who,
                         !ctx      ? "ctx"
                         : !name   ? "name"
                         : !chunks ? "chunks"
                                   : "program");
    clg_status st = clg__program_source(ctx, name, chunks, options, program, from_cache);
    return st == CLG_SUCCESS ? st : fail_within(ctx, st, who);
}
