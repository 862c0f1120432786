/* twin.c - a clgrad model and the double reference run side by side (see
 * twin.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "twin.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const float default_lr_mult[] = {1.0f, 0.5f};
static const float default_wd[] = {-1.0f, 0.0f};
static const size_t default_counts[] = {1009, 1, 37, 24, 16, 3};
static const int default_groups[] = {0, 1, 0, 1, 0, 1};

const twin_layout twin_default_layout = {
    .n_groups = 2,
    .lr_mult = default_lr_mult,
    .wd = default_wd,
    .n_tensors = 6,
    .counts = default_counts,
    .groups = default_groups,
};

const float twin_one_group_lr_mult[1] = {1.0f};
const float twin_one_group_wd[1] = {-1.0f};
const int twin_one_group_groups[TWIN_ONE_GROUP_MAX] = {0};

#define CHECK_OK(call)                                                                             \
    do {                                                                                           \
        clg_status st_ = (call);                                                                   \
        if (st_ != CLG_SUCCESS) {                                                                  \
            fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call,                    \
                    clg_status_string(st_), clg_last_error(tw->ctx));                              \
            fail();                                                                                \
        }                                                                                          \
    } while (0)

/* "<prefix><i>" in name (32 bytes): the groups' and tensors' names. */
static const char *numbered(char name[32], const char *prefix, size_t i)
{
    snprintf(name, 32, "%s%zu", prefix, i);
    return name;
}

void twin_init(twin *tw, clg_context *ctx, const clg_config *cfg, const twin_layout *lay,
               uint64_t seed)
{
    /* TWIN_ONE_GROUP's groups are zeros for TWIN_ONE_GROUP_MAX tensors */
    assert_true(lay->groups != twin_one_group_groups || lay->n_tensors <= TWIN_ONE_GROUP_MAX);
    memset(tw, 0, sizeof *tw);
    tw->ctx = ctx;
    tw->seed = seed;
    CHECK_OK(clg_model_create(ctx, cfg, &tw->model));
    char name[32];
    for (size_t g = 1; g < lay->n_groups; g++) {
        int id = -1;
        CHECK_OK(clg_model_add_group(tw->model, numbered(name, "group", g), lay->lr_mult[g],
                                     lay->wd[g], &id));
        assert_int_equal(id, (int)g);
    }
    for (size_t t = 0; t < lay->n_tensors; t++) {
        int id = -1;
        CHECK_OK(clg_model_add_tensor(tw->model, numbered(name, "t", t), lay->counts[t],
                                      lay->groups[t], &id));
        assert_int_equal(id, (int)t);
    }
    CHECK_OK(clg_model_finalize(tw->model));
    tw->n = (size_t)clg_model_param_count(tw->model);
    size_t n = 0;
    for (size_t t = 0; t < lay->n_tensors; t++)
        n += lay->counts[t];
    assert_int_equal(tw->n, n);
    assert_int_equal(clg_model_state_count(tw->model), ref_state_count(cfg));
    CHECK_OK(clg_grads_create(tw->model, CLG_FP32, &tw->grads));

    tw->host = tu_xmalloc(n * sizeof(float));
    tu_fill_uniform(tw->host, n, seed, -1.0f, 1.0f);
    CHECK_OK(clg_model_upload_params(tw->model, CLG_ALL_TENSORS, tw->host, (size_t)clg_model_param_count(tw->model), NULL));

    double lr_mult[8], wd[8];
    assert_true(lay->n_groups <= 8);
    for (size_t g = 0; g < lay->n_groups; g++) {
        lr_mult[g] = lay->lr_mult[g];
        wd[g] = lay->wd[g];
    }
    assert_int_equal(ref_model_init(&tw->ref, cfg, lay->n_groups, lr_mult, wd, lay->n_tensors,
                                    lay->counts, lay->groups, tw->host),
                     0);
}

void twin_free(twin *tw)
{
    clg_grads_destroy(tw->grads);
    clg_model_destroy(tw->model);
    ref_model_free(&tw->ref);
    free(tw->host);
    memset(tw, 0, sizeof *tw);
}

void twin_gradient(const twin *tw, uint64_t cycle, unsigned micro, float *g)
{
    /* the base's magnitude is fixed per element; its sign is drawn per
     * cycle, so that momentum and new gradients disagree in sign often
     * (Lion's sign(c) and nesterov terms are then really exercised) */
    tu_rng base = tu_rng_seed(tw->seed * 7919u + 1);
    tu_rng sign = tu_rng_seed(tw->seed * 15485863u + cycle * 2654435761u + 5);
    tu_rng noise = tu_rng_seed(tw->seed * 104729u + cycle * 1000003u + micro * 7u + 3);
    for (size_t i = 0; i < tw->n; i++) {
        float b = tu_rng_uniform(&base, 0.5f, 1.0f);
        if (tu_rng_u64(&sign) & 1)
            b = -b;
        g[i] = b + tu_rng_uniform(&noise, -0.5f, 0.5f);
    }
}

int twin_micro(twin *tw, const float *g, float w)
{
    int updated = -1;
    CHECK_OK(clg_grads_upload(tw->grads, CLG_ALL_TENSORS, g, (size_t)clg_model_param_count(tw->model), NULL));
    CHECK_OK(clg_step(tw->model, tw->grads, w, &updated, NULL));
    int ref_updated = ref_micro_f(&tw->ref, g, w);
    if (updated != ref_updated) {
        fprintf(stderr, "twin_micro: device updated=%d, reference %d (micro %u of %u)\n", updated,
                ref_updated, tw->ref.micro, tw->ref.k);
        fail();
    }
    return updated;
}

void twin_cycle(twin *tw, uint64_t cycle, unsigned k, float dw)
{
    float *g = tu_xmalloc(tw->n * sizeof *g);
    for (unsigned m = 0; m < k; m++) {
        twin_gradient(tw, cycle, m, g);
        twin_micro(tw, g, 1.0f + dw * (float)m);
    }
    free(g);
}

int twin_micro_b(twin *tw, const float *g, float w)
{
    cl_command_queue q = clg_context_queue(tw->ctx);
    float beta = clg_accum_beta(tw->model);
    assert_true(beta == 0.0f || beta == 1.0f);
    size_t off = 0;
    for (size_t t = 0; t < clg_model_tensor_count(tw->model); t++) {
        clg_view v;
        CHECK_OK(clg_model_acc_view(tw->model, (int)t, &v));
        float *buf = tu_xmalloc(v.count * sizeof(float));
        if (beta == 1.0f)
            assert_int_equal(clEnqueueReadBuffer(q, v.mem, CL_TRUE, v.offset * sizeof(float),
                                                 v.count * sizeof(float), buf, 0, NULL, NULL),
                             CL_SUCCESS);
        for (size_t i = 0; i < v.count; i++)
            buf[i] = (beta == 1.0f ? buf[i] : 0.0f) + w * g[off + i];
        assert_int_equal(clEnqueueWriteBuffer(q, v.mem, CL_TRUE, v.offset * sizeof(float),
                                              v.count * sizeof(float), buf, 0, NULL, NULL),
                         CL_SUCCESS);
        free(buf);
        off += v.count;
    }
    assert_int_equal(off, tw->n);
    int updated = -1;
    CHECK_OK(clg_step(tw->model, NULL, w, &updated, NULL));
    int ref_updated = ref_micro_f(&tw->ref, g, w);
    if (updated != ref_updated) {
        fprintf(stderr, "twin_micro_b: device updated=%d, reference %d\n", updated, ref_updated);
        fail();
    }
    return updated;
}

void twin_check(twin *tw, double rtol, double atol, const char *what)
{
    char label[160];
    size_t bad = 0;
    CHECK_OK(clg_model_download_params(tw->model, CLG_ALL_TENSORS, tw->host, (size_t)clg_model_param_count(tw->model), NULL));
    snprintf(label, sizeof label, "%s: params", what);
    bad += ref_compare(label, tw->host, tw->ref.p, tw->n, rtol, atol);
    for (size_t s = 0; s < tw->ref.n_states; s++) {
        CHECK_OK(clg_model_download_state(tw->model, (int)s, CLG_ALL_TENSORS, tw->host, (size_t)clg_model_param_count(tw->model), NULL));
        snprintf(label, sizeof label, "%s: state %zu", what, s);
        bad += ref_compare(label, tw->host, tw->ref.st[s], tw->n, rtol, atol);
    }
    if (bad)
        fail_msg("%s: %zu elements differ from the reference", what, bad);
}

float *twin_snapshot(twin *tw)
{
    size_t parts = 1 + tw->ref.n_states;
    float *snap = tu_xmalloc(parts * tw->n * sizeof(float));
    CHECK_OK(clg_model_download_params(tw->model, CLG_ALL_TENSORS, snap, (size_t)clg_model_param_count(tw->model), NULL));
    for (size_t s = 0; s < tw->ref.n_states; s++)
        CHECK_OK(clg_model_download_state(tw->model, (int)s, CLG_ALL_TENSORS, snap + (s + 1) * tw->n, (size_t)clg_model_param_count(tw->model), NULL));
    return snap;
}

void twin_assert_unchanged(twin *tw, const float *snapshot, const char *what)
{
    float *now = twin_snapshot(tw);
    size_t parts = 1 + tw->ref.n_states;
    int same = memcmp(now, snapshot, parts * tw->n * sizeof(float)) == 0;
    if (!same) {
        for (size_t i = 0; i < parts * tw->n; i++) {
            if (memcmp(&now[i], &snapshot[i], sizeof(float))) {
                fprintf(stderr, "%s: %s element %zu changed: %.9g -> %.9g\n", what,
                        i < tw->n ? "param" : "state", i % tw->n, (double)snapshot[i],
                        (double)now[i]);
                break;
            }
        }
    }
    free(now);
    if (!same)
        fail_msg("%s: params/states not bitwise unchanged", what);
}

clg_stats twin_stats(twin *tw)
{
    clg_stats s = clg_stats_init();
    CHECK_OK(clg_model_stats(tw->model, 1, &s));
    return s;
}
