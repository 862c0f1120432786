/* tune_prebuild.c - builds of candidates in other processes (see
 * tune_prebuild.h). */
#include "tune_prebuild.h"
#include "clgrad_advanced.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define N_KERNELS 5
#define MAX_ARGV (4 + 3 * N_KERNELS + 2 * MLP_GEMMS_MAX + 1)

int ts_parse_params(const char *text, param_set *ps)
{
    ps->n = 0;
    const char *c = text;
    while (*c) {
        while (*c == ' ')
            c++;
        if (!*c)
            break;
        char name[sizeof ps->p[0].name];
        unsigned long v;
        int used = 0;
        if (ps->n == TUNING_MAX_PARAMS || sscanf(c, "%31[A-Z_]=%lu%n", name, &v, &used) != 2)
            return -1;
        snprintf(ps->p[ps->n].name, sizeof ps->p[ps->n].name, "%s", name);
        ps->p[ps->n++].value = v;
        c += used;
    }
    return ps->n ? 0 : -1;
}

static void params_text(const param_set *ps, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t p = 0; p < ps->n && used < size; p++)
        used += (size_t)snprintf(out + used, size - used, "%s%s=%zu", p ? " " : "", ps->p[p].name,
                                 ps->p[p].value);
}

int ts_prebuild_start(search *s, const param_set *d, const param_set *i, size_t threshold)
{
    if (s->prebuild_jobs <= 1 || s->n_prebuild + 1 >= s->prebuild_jobs ||
        s->n_prebuild == MAX_PREBUILD)
        return -1; /* this process builds on one core: the others are taken */
    const tune_request *q = s->req;
    static char text[N_KERNELS + MLP_GEMMS_MAX][TUNING_MAX_PARAMS * 40];
    char *argv[MAX_ARGV];
    int n = 0;
    argv[n++] = "clgrad-tune";
    argv[n++] = "--prebuild";
    if (q->device) {
        argv[n++] = "--device";
        argv[n++] = (char *)q->device;
    }
    param_set r = ts_routine_params(threshold);
    const char *names[N_KERNELS] = {"XgemmDirect", "Xgemm", "GemmRoutine", ts_aux_kernels[0],
                                    ts_aux_kernels[1]};
    const param_set *sets[N_KERNELS] = {d, i, &r, &s->aux[0], &s->aux[1]};
    for (int k = 0; k < N_KERNELS; k++) {
        params_text(sets[k], text[k], sizeof text[k]);
        argv[n++] = "--params";
        argv[n++] = (char *)names[k];
        argv[n++] = text[k];
    }
    for (size_t k = 0; k < q->n_shapes; k++) {
        mlp_gemm_shape_text(&q->shapes[k], text[N_KERNELS + k], sizeof text[N_KERNELS + k]);
        argv[n++] = "--shape";
        argv[n++] = text[N_KERNELS + k];
    }
    argv[n] = NULL;
    /* its output would interleave with this one's: the build is all it is for */
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return -1;
    pid_t pid;
    int rc = posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0) ||
             posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0) ||
             posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return -1;
    s->prebuild[s->n_prebuild++] = pid;
    return 0;
}

void ts_prebuild_wait(search *s)
{
    for (size_t k = 0; k < s->n_prebuild; k++) {
        int status;
        while (waitpid(s->prebuild[k], &status, 0) < 0 && errno == EINTR)
            ;
    }
    s->n_prebuild = 0;
}

void ts_prebuild_check(search *s, double build_s)
{
    /* a cache hit loads a binary: well under half a build */
    if (s->prebuild_jobs > 1 && build_s > 0.5 * s->build_s) {
        ts_note(s, "builds in other processes stopped: a prebuilt candidate took %.0f s to "
                "build here (the driver keeps no cache of built programs?)", build_s);
        s->prebuild_jobs = 0;
    }
}

/* --prebuild: the parameters set, then every shape once. */
int tune_prebuild_main(int argc, char **argv)
{
    const char *device = NULL;
    static mlp_gemm_shape shapes[MLP_GEMMS_MAX];
    size_t n_shapes = 0;
    struct {
        const char *kernel;
        param_set ps;
    } set[N_KERNELS];
    int n_sets = 0;
    for (int a = 2; a < argc; a++) {
        if (!strcmp(argv[a], "--device") && a + 1 < argc) {
            device = argv[++a];
        } else if (!strcmp(argv[a], "--params") && a + 2 < argc && n_sets < N_KERNELS) {
            set[n_sets].kernel = argv[a + 1];
            if (ts_parse_params(argv[a + 2], &set[n_sets].ps) != 0)
                return 2;
            n_sets++;
            a += 2;
        } else if (!strcmp(argv[a], "--shape") && a + 1 < argc && n_shapes < MLP_GEMMS_MAX) {
            if (mlp_gemm_shape_parse(argv[++a], &shapes[n_shapes++]) != 0)
                return 2;
        } else {
            fprintf(stderr, "clgrad-tune --prebuild: unexpected argument %s\n", argv[a]);
            return 2;
        }
    }
    clg_context *ctx;
    if (clg_context_create(&ctx, device) != CLG_SUCCESS)
        return 1;
    cl_device_id dev = clg_context_device(ctx);
    int rc = 0;
    for (int k = 0; k < n_sets && rc == 0; k++)
        rc = clblast_params_set(dev, set[k].kernel, 32, set[k].ps.p, set[k].ps.n) != 0;
    gemm_bufs bufs;
    if (rc == 0 && gemm_bufs_create(clg_context_cl(ctx), clg_context_queue(ctx), shapes,
                                    n_shapes, &bufs) == CL_SUCCESS) {
        for (size_t k = 0; k < n_shapes && rc == 0; k++)
            rc = gemm_run_once(&bufs, &shapes[k]) != CL_SUCCESS;
        gemm_bufs_release(&bufs);
    } else {
        rc = 1;
    }
    clg_context_destroy(ctx);
    return rc;
}
