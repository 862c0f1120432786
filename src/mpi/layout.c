/* layout.c - clg_dist_create's collective check that every rank holds the
 * same model: each rank describes its layout and update config in a fixed
 * record, the records are all-gathered, and every rank compares each to
 * rank 0's in the same order, so that all ranks report the same first
 * difference. */
#include "dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct layout_record {
    uint64_t v[32];
} layout_record;

/* The fields compared, in order; a value is its uint64 (integers) or the
 * bits of its double (floats), so that -0.0 and NaN compare as bits. */
typedef struct field {
    const char *name;
    int is_float;
} field;

static const field fields[] = {
    {"parameter count", 0}, {"tensor count", 0}, {"tensor names and sizes (hash)", 0},
    {"optimizer", 0},       {"accum_steps", 0},  {"k_schedule (set or not)", 0},
    {"normalize", 0},       {"acc_dtype", 0},    {"nonfinite policy", 0},
    {"loss_scale mode", 0}, {"clip_norm", 1},    {"clip_value", 1},
    {"lr", 1},              {"beta1", 1},        {"beta2", 1},
    {"eps", 1},             {"weight_decay", 1}, {"momentum", 1},
    {"schedule kind", 0},   {"warmup", 0},       {"schedule total", 0},
    {"loss_scale_init", 1}, {"amsgrad", 0},      {"state_dtype", 0},
    {"master_dtype", 0},
    {"mode (DDP or ZeRO-1)", 0},
    {"shard count (clg_model_set_shard)", 0},
    {"chunk count (CLGRAD_MAX_ALLOC)", 0},
    {"layout elements (chunks with padding)", 0},
};
enum { N_FIELDS = sizeof fields / sizeof fields[0] };
_Static_assert(N_FIELDS <= 32, "layout_record holds 32 fields");

static uint64_t fbits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* FNV-1a over every tensor's name (with its NUL) and size. */
static uint64_t layout_hash(const clg_model *m, size_t n_tensors)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t t = 0; t < n_tensors; t++) {
        const char *name = clg_model_tensor_name(m, (int)t);
        size_t len = name ? strlen(name) + 1 : 0;
        uint64_t count = clg_model_tensor_size(m, (int)t);
        for (size_t i = 0; i < len; i++)
            h = (h ^ (unsigned char)name[i]) * 1099511628211ull;
        for (int b = 0; b < 8; b++)
            h = (h ^ ((count >> (8 * b)) & 0xff)) * 1099511628211ull;
    }
    return h;
}

static void describe(const clg_dist *d, layout_record *r)
{
    const clg_model *m = d->model;
    const clg_config *c = clg_model_get_config(m);
    unsigned index = 0, shards = 1;
    clg_model_shard(m, &index, &shards);
    uint64_t total = 0;
    clg_model_shard_range(m, 0, NULL, NULL, &total);
    size_t nt = clg_model_tensor_count(m);
    const uint64_t v[N_FIELDS] = {
        clg_model_param_count(m),  nt,
        layout_hash(m, nt),        (uint64_t)c->optimizer,
        c->accum_steps,            c->k_schedule != NULL,
        (uint64_t)c->normalize,    (uint64_t)c->acc_dtype,
        (uint64_t)c->nonfinite,    (uint64_t)c->loss_scale,
        fbits(c->clip_norm),       fbits(c->clip_value),
        fbits(c->lr),              fbits(c->beta1),
        fbits(c->beta2),           fbits(c->eps),
        fbits(c->weight_decay),    fbits(c->momentum),
        (uint64_t)c->schedule.kind, c->schedule.warmup,
        c->schedule.total,         fbits(c->loss_scale_init),
        (uint64_t)c->amsgrad,      (uint64_t)c->state_dtype,
        (uint64_t)c->master_dtype, (uint64_t)d->mode,
        shards,                    clg_model_chunk_count(m),
        total,
    };
    memset(r, 0, sizeof *r);
    memcpy(r->v, v, sizeof v);
}

static void show(char *buf, size_t size, const field *f, uint64_t v)
{
    if (f->is_float) {
        double x;
        memcpy(&x, &v, sizeof x);
        snprintf(buf, size, "%.9g", x);
    } else if (strstr(f->name, "hash")) {
        snprintf(buf, size, "%016llx", (unsigned long long)v);
    } else {
        snprintf(buf, size, "%llu", (unsigned long long)v);
    }
}

clg_status clg__dist_check_layout(clg_dist *d)
{
    layout_record mine;
    describe(d, &mine);
    layout_record *all = calloc((size_t)d->size, sizeof *all);
    if (all == NULL)
        return clg__dist_fail(clg__dist_model(d), CLG_ERR_OUT_OF_HOST_MEMORY,
                              "clg_dist_create: no host memory for %d layout records", d->size);
    MPI_Request req;
    int err = clg__dist_wait(d, MPI_Iallgather(&mine, (int)sizeof mine, MPI_BYTE, all,
                                               (int)sizeof mine, MPI_BYTE, d->comm, &req),
                             &req);
    if (err != MPI_SUCCESS) {
        if (err != DIST_TIMED_OUT) /* else the request may still write into it */
            free(all);
        char e[256];
        return clg__dist_fail(clg__dist_model(d), CLG_ERR_IO,
                              "clg_dist_create: MPI_Iallgather (layout) failed: %s",
                              clg__dist_mpi_string(d, err, e, sizeof e));
    }
    clg_status st = CLG_SUCCESS;
    for (int r = 1; r < d->size && st == CLG_SUCCESS; r++)
        for (int f = 0; f < N_FIELDS; f++) {
            if (all[r].v[f] == all[0].v[f])
                continue;
            char a[64], b[64];
            show(a, sizeof a, &fields[f], all[0].v[f]);
            show(b, sizeof b, &fields[f], all[r].v[f]);
            st = clg__dist_fail(clg__dist_model(d), CLG_ERR_MISMATCH,
                                "clg_dist_create: rank %d's model differs from rank 0's: %s is "
                                "%s on rank 0, %s on rank %d (every rank must build the same "
                                "model with the same config)",
                                r, fields[f].name, a, b, r);
            break;
        }
    free(all);
    return st;
}
