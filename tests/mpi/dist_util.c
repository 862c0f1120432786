/* dist_util.c - see dist_util.h. */
#include "dist_util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int du_rank;
/* The process's one context: libclgrad-mpi records its failures there. */
static clg_context *du_ctx;

void du_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rank %d: FAIL: ", du_rank);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

void du_ok(clg_status st, const char *what, int line)
{
    if (st != CLG_SUCCESS)
        du_fail("line %d: %s -> %s: '%s'", line, what, clg_status_string(st),
                clg_last_error(du_ctx));
}

clg_context *du_init(int *argc, char ***argv, int *rank, int *size)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    du_rank = *rank;
    clg_context *ctx = NULL;
    clg_status st = clg_context_create(&ctx, NULL);
    int ok = st == CLG_SUCCESS, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        const char *req = getenv("CLGRAD_REQUIRE_DEVICE");
        int require = req && *req && strcmp(req, "0") != 0;
        if (!ok)
            fprintf(stderr, "rank %d: no OpenCL context: %s: %s%s\n", *rank,
                    clg_status_string(st), clg_last_error(NULL),
                    require ? " (CLGRAD_REQUIRE_DEVICE forbids skipping)" : "");
        if (ctx)
            clg_context_destroy(ctx);
        MPI_Finalize();
        exit(require || st != CLG_ERR_NO_DEVICE ? 1 : 77);
    }
    du_ctx = ctx;
    return ctx;
}

void du_finish(clg_context *ctx)
{
    clg_context_destroy(ctx);
    du_ctx = NULL;
    MPI_Finalize();
}

/* x[i] uniform in [-1, 1): splitmix64 from seed, the top 24 bits. */
static void fill_uniform(float *x, size_t n, uint64_t seed)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        s += 0x9e3779b97f4a7c15ull;
        uint64_t z = s;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        x[i] = (float)(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
    }
}

clg_model *du_model(clg_context *ctx, const clg_config *cfg, const size_t *counts, size_t n)
{
    return du_model_sharded(ctx, cfg, counts, n, 0, 0);
}

clg_model *du_model_sharded(clg_context *ctx, const clg_config *cfg, const size_t *counts,
                            size_t n, unsigned shard, unsigned shards)
{
    clg_model *m;
    DU_OK(clg_model_create(ctx, cfg, &m));
    int g1, t;
    DU_OK(clg_model_add_group(m, "no_decay", 0.5f, 0.0f, &g1));
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%zu", i);
        DU_OK(clg_model_add_tensor(m, name, counts[i], i % 2 ? g1 : 0, &t));
    }
    if (shards)
        DU_OK(clg_model_set_shard(m, shard, shards));
    DU_OK(clg_model_finalize(m));
    size_t np = (size_t)clg_model_param_count(m);
    float *p = malloc(np * sizeof *p);
    if (!p)
        du_fail("out of memory");
    fill_uniform(p, np, 12345);
    DU_OK(clg_model_upload_params(m, CLG_ALL_TENSORS, p, np, NULL));
    free(p);
    return m;
}

void du_gradient(float *g, size_t n, unsigned u, unsigned j)
{
    fill_uniform(g, n,
                 0x5851f42d4c957f2dull * (1 + (uint64_t)u) ^ (0x14057b7ef767814full * (1 + j)));
}

double du_rel_l2(const float *a, const float *ref, size_t n)
{
    double d = 0.0, r = 0.0;
    for (size_t i = 0; i < n; i++) {
        double e = (double)a[i] - (double)ref[i];
        d += e * e;
        r += (double)ref[i] * (double)ref[i];
    }
    return sqrt(d / r);
}
