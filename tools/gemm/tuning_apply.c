/* tuning_apply.c - finding, checking and applying a device's tuning (see
 * tuning_apply.h). */
#define _GNU_SOURCE
#include "tuning_apply.h"
#include "input_file.h"
#include "tuning_spec.h"
#include "clgrad_advanced.h"
#include "clblast_params.h"
#include "clblast_status.h"
#include "errmsg.h"
#include "tuning_constraints.h"
#include "tuning_verify.h"

#include <clblast_c.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define STR2(x) #x
#define STR(x) STR2(x)
#define CLBLAST_VERSION_TEXT                                                                      \
    STR(CLBLAST_VERSION_MAJOR) "." STR(CLBLAST_VERSION_MINOR) "." STR(CLBLAST_VERSION_PATCH)

const char *tuning_clblast_version(void)
{
    return CLBLAST_VERSION_TEXT;
}

int tuning_path(const clg_context *ctx, const char *task, char *path, size_t size, char *err,
                size_t errlen)
{
    char dir[1024], key[65];
    clg_status st = clg_cache_dir(dir, sizeof dir);
    if (st != CLG_SUCCESS)
        return errmsg_set(err, errlen, "%s", clg_last_error(NULL));
    st = clg_context_device_key(ctx, key);
    if (st != CLG_SUCCESS)
        return errmsg_set(err, errlen, "%s", clg_last_error(ctx));
    if ((size_t)snprintf(path, size, "%s/clblast-%s%s%s.tune", dir, key, task ? "-" : "",
                         task ? task : "") >= size)
        return errmsg_set(err, errlen, "the cache directory's path is too long");
    return 0;
}

void tuning_share_pocl_cache(void)
{
    char dir[1024];
    if (getenv("POCL_CACHE_DIR") || clg_cache_dir(dir, sizeof dir - 8) != CLG_SUCCESS)
        return;
    strcat(dir, "/pocl");
    setenv("POCL_CACHE_DIR", dir, 0);
}

/* ------------------------------------------------------------- load */

static int read_file(const char *path, char **buf, size_t *len, char *err, size_t errlen)
{
    *buf = NULL;
    size_t size;
    char why[256];
    int fd = input_open(path, TUNING_MAX_BYTES, &size, why, sizeof why);
    if (fd < 0) {
        if (errno == ENOENT)
            return 1;
        return errmsg_set(err, errlen, "%s", why);
    }
    int rc = -1;
    *buf = malloc(size + 1);
    if (!*buf) {
        errmsg_set(err, errlen, "out of host memory");
        goto out;
    }
    if (input_read(fd, *buf, size, err, errlen) != 0)
        goto out;
    *len = size;
    rc = 0;
out:
    close(fd);
    if (rc != 0) {
        free(*buf);
        *buf = NULL;
    }
    return rc;
}

/* The device's limits that CLBlast's kernels must keep to. */
static int device_limits(cl_device_id dev, tuning_device_limits *lim, char *err, size_t errlen)
{
    size_t items[3] = {0, 0, 0};
    cl_ulong local = 0;
    cl_uint dims = 0;
    cl_int e = clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof lim->max_work_group,
                               &lim->max_work_group, NULL);
    if (e == CL_SUCCESS)
        e = clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, sizeof dims, &dims, NULL);
    if (e == CL_SUCCESS && dims >= 2 && dims <= 3)
        e = clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_ITEM_SIZES, dims * sizeof *items, items,
                            NULL);
    if (e == CL_SUCCESS)
        e = clGetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, NULL);
    if (e != CL_SUCCESS)
        return errmsg_set(err, errlen, "cannot read the device's work-group and local memory "
                          "limits (OpenCL status %d)", (int)e);
    lim->max_work_item[0] = items[0];
    lim->max_work_item[1] = items[1];
    lim->local_mem = local;
    return 0;
}

int tuning_load(const clg_context *ctx, const char *path, tuning *t, char *err, size_t errlen)
{
    char *buf;
    size_t len = 0;
    char why[512];
    int rc = read_file(path, &buf, &len, why, sizeof why);
    if (rc != 0)
        return rc == 1 ? 1 : errmsg_set(err, errlen, "%s", why);
    rc = tuning_parse(buf, len, t, why, sizeof why);
    free(buf);
    if (rc != 0)
        return errmsg_set(err, errlen, "%s", why);
    char key[65];
    if (clg_context_device_key(ctx, key) != CLG_SUCCESS)
        return errmsg_set(err, errlen, "%s", clg_last_error(ctx));
    if (strcmp(key, t->key) != 0)
        return errmsg_set(err, errlen,
                          "it was made for another device or driver ('%s', driver %s), "
                          "not %s (driver %s)",
                          t->device, t->driver, clg_context_device_info(ctx)->name,
                          clg_context_device_info(ctx)->driver_version);
    if (strcmp(t->clblast, CLBLAST_VERSION_TEXT) != 0)
        return errmsg_set(err, errlen, "it was made with CLBlast %s, this program uses %s",
                          t->clblast, CLBLAST_VERSION_TEXT);
    tuning_device_limits lim;
    if (device_limits(clg_context_device(ctx), &lim, why, sizeof why) != 0 ||
        tuning_check_device(t, &lim, why, sizeof why) != 0)
        return errmsg_set(err, errlen, "%s", why);
    return 0;
}

/* ----------------------------------------------------- apply, restore */

/* CLBlast's own parameters of the kernels this process changed, per
 * device, saved before the first change (CLBlast cannot be asked for its
 * defaults once they are overridden). */
#define SAVED_MAX 16
typedef struct saved_kernel {
    cl_device_id device;
    char kernel[TUNING_NAME];
    int overridden;
    size_t n;
    clblast_param param[TUNING_MAX_PARAMS];
} saved_kernel;
static saved_kernel saved[SAVED_MAX];
static size_t n_saved;

static saved_kernel *find_saved(cl_device_id dev, const char *kernel)
{
    for (size_t i = 0; i < n_saved; i++)
        if (saved[i].device == dev && strcmp(saved[i].kernel, kernel) == 0)
            return &saved[i];
    return NULL;
}

/* The saved defaults of kernel on dev, read from CLBlast when first asked. */
static saved_kernel *defaults_of(cl_device_id dev, const char *kernel, char *err, size_t errlen)
{
    saved_kernel *s = find_saved(dev, kernel);
    if (s)
        return s;
    if (n_saved == SAVED_MAX) {
        errmsg_set(err, errlen, "too many tuned kernels in one process");
        return NULL;
    }
    s = &saved[n_saved];
    memset(s, 0, sizeof *s);
    s->device = dev;
    snprintf(s->kernel, sizeof s->kernel, "%s", kernel);
    int st = clblast_params_get(dev, kernel, 32, s->param, TUNING_MAX_PARAMS, &s->n);
    if (st != 0) {
        char name[64];
        errmsg_set(err, errlen, "CLBlast has no parameters for kernel %s (%s)", kernel,
                   clblast_status_text(st, name, sizeof name));
        return NULL;
    }
    if (s->n > TUNING_MAX_PARAMS) {
        errmsg_set(err, errlen, "CLBlast's kernel %s has %zu parameters (more than %d)", kernel,
                   s->n, TUNING_MAX_PARAMS);
        return NULL;
    }
    n_saved++;
    return s;
}

int tuning_restore_defaults(const clg_context *ctx, char *err, size_t errlen)
{
    cl_device_id dev = clg_context_device(ctx);
    for (size_t i = 0; i < n_saved; i++) {
        saved_kernel *s = &saved[i];
        if (s->device != dev || !s->overridden)
            continue;
        int st = clblast_params_set(dev, s->kernel, 32, s->param, s->n);
        char name[64];
        if (st != 0)
            return errmsg_set(err, errlen, "restoring CLBlast's parameters of %s: %s", s->kernel,
                              clblast_status_text(st, name, sizeof name));
        s->overridden = 0;
    }
    return 0;
}

static int in_record(const tuning_kernel *k, const char *name)
{
    for (size_t p = 0; p < k->n; p++)
        if (strcmp(k->param[p], name) == 0)
            return 1;
    return 0;
}

static int in_defaults(const saved_kernel *d, const char *name)
{
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->param[i].name, name) == 0)
            return 1;
    return 0;
}

/* Record k names exactly the parameters CLBlast has for its kernel. */
static int same_names(const tuning_kernel *k, const saved_kernel *d, char *err, size_t errlen)
{
    for (size_t i = 0; i < d->n; i++)
        if (!in_record(k, d->param[i].name))
            return errmsg_set(err, errlen, "kernel %s: no value for CLBlast's parameter %s",
                              k->name, d->param[i].name);
    /* every name of d is in k: with as many, k has no other (no name twice) */
    for (size_t p = 0; k->n != d->n && p < k->n; p++)
        if (!in_defaults(d, k->param[p]))
            return errmsg_set(err, errlen, "kernel %s: CLBlast has no parameter %s", k->name,
                              k->param[p]);
    return 0;
}

int tuning_apply(const clg_context *ctx, const tuning *t, char *err, size_t errlen)
{
    cl_device_id dev = clg_context_device(ctx);
    char why[512];
    if (tuning_check(t, why, sizeof why) != 0)
        return errmsg_set(err, errlen, "%s", why);
    if (tuning_restore_defaults(ctx, err, errlen) != 0)
        return -1;
    /* Check every record before changing anything. */
    for (size_t i = 0; i < t->n_kernels; i++) {
        const saved_kernel *d = defaults_of(dev, t->kernel[i].name, err, errlen);
        if (!d || same_names(&t->kernel[i], d, err, errlen) != 0)
            return -1;
    }
    for (size_t i = 0; i < t->n_kernels; i++) {
        const tuning_kernel *k = &t->kernel[i];
        saved_kernel *d = find_saved(dev, k->name);
        clblast_param p[TUNING_MAX_PARAMS];
        for (size_t j = 0; j < k->n; j++) {
            snprintf(p[j].name, sizeof p[j].name, "%s", k->param[j]);
            p[j].value = k->value[j];
        }
        d->overridden = 1; /* restore it even if the override half happened */
        int st = clblast_params_set(dev, k->name, 32, p, k->n);
        if (st != 0) {
            char name[64];
            tuning_restore_defaults(ctx, NULL, 0);
            return errmsg_set(err, errlen, "CLBlast refused the parameters of %s (%s)", k->name,
                              clblast_status_text(st, name, sizeof name));
        }
    }
    return 0;
}

/* ------------------------------------------------------------ setup */

static void tune_command(const clg_context *ctx, const char *task, char *out, size_t size)
{
    const clg_device_info *d = clg_context_device_info(ctx);
    snprintf(out, size, "clgrad-tune --device %u:%u%s%s", d->platform_index, d->device_index,
             task ? " --task " : "", task ? task : "");
}

void tuning_setup(const clg_context *ctx, const char *spec, const char *task,
                  const mlp_gemm_shape *shapes, size_t n_shapes, tuning_status *st)
{
    memset(st, 0, sizeof *st);
    char why[1536], cmd[96];
    tune_command(ctx, task, cmd, sizeof cmd);
    const char *file = tuning_spec_file(spec);
    if (tuning_spec_is_off(spec)) {
        if (tuning_restore_defaults(ctx, why, sizeof why) != 0) {
            st->warning = 1;
            snprintf(st->message, sizeof st->message, "CLBlast GEMMs: %s", why);
            return;
        }
        snprintf(st->message, sizeof st->message,
                 "CLBlast GEMMs: CLBlast's default parameters (tuning off)");
        return;
    }
    if (file) {
        snprintf(st->path, sizeof st->path, "%s", file);
    } else if (tuning_path(ctx, task, st->path, sizeof st->path, why, sizeof why) != 0) {
        st->path[0] = '\0';
        tuning_restore_defaults(ctx, NULL, 0);
        snprintf(st->message, sizeof st->message,
                 "CLBlast GEMMs: CLBlast's default parameters (no tuning can be stored: %s)", why);
        return;
    }
    int rc = tuning_load(ctx, st->path, &st->t, why, sizeof why);
    if (rc == 0)
        rc = tuning_apply(ctx, &st->t, why, sizeof why);
    if (rc == 0)
        rc = tuning_verify(ctx, &st->t, shapes, n_shapes, why, sizeof why);
    if (rc == 0) {
        st->applied = 1;
        snprintf(st->message, sizeof st->message,
                 "CLBlast GEMMs: tuned for this device by clgrad-tune on %s (%s), from %s",
                 st->t.created, st->t.model, st->path);
        return;
    }
    tuning_restore_defaults(ctx, NULL, 0);
    if (rc == 1 && !file) {
        snprintf(st->message, sizeof st->message,
                 "CLBlast GEMMs: CLBlast's default parameters (no tuning for this device yet: "
                 "`%s`%s tunes them in about 3 minutes)", cmd, task ? "" : ", or `make tune`,");
        return;
    }
    st->warning = 1;
    snprintf(st->message, sizeof st->message,
             "warning: CLBlast tuning %.900s ignored: %.1500s; running on CLBlast's default "
             "parameters (`%s` makes a new one)", st->path, rc == 1 ? "no such file" : why, cmd);
}
