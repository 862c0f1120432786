/* test_layout.c - the flat arenas: views, per-tensor copies, edge tensor
 * sizes (many small tensors beside a large one), chunking under a forced
 * tiny max-alloc (bitwise identical results), a tensor larger than the max
 * alloc, and the memory budget. */
#include <stdarg.h>
#include "clgrad_advanced.h"
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"
#include "twin.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Views: right counts, disjoint ranges within a buffer, and the view's
 * bytes are the tensor's params; per-tensor upload/download round trip. */
static void test_views(void **state)
{
    (void)state;
    clg_config cfg = clg_config_init(CLG_ADAM);
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &twin_default_layout, 11);
    const twin_layout *lay = &twin_default_layout;
    cl_command_queue q = clg_context_queue(tu_ctx);
    clg_view pv[16], av[16];
    size_t off = 0;
    for (size_t t = 0; t < lay->n_tensors; t++) {
        OK(clg_model_param_view(tw.model, (int)t, &pv[t]));
        OK(clg_model_acc_view(tw.model, (int)t, &av[t]));
        assert_int_equal(pv[t].count, lay->counts[t]);
        assert_int_equal(av[t].count, lay->counts[t]);
        assert_int_equal(clg_model_tensor_size(tw.model, (int)t), lay->counts[t]);
        char name[32];
        snprintf(name, sizeof name, "t%zu", t);
        assert_string_equal(clg_model_tensor_name(tw.model, (int)t), name);
        int found = -1;
        OK(clg_model_find_tensor(tw.model, name, &found));
        assert_int_equal(found, (int)t);
        /* the view holds this tensor's uploaded params */
        float *buf = tu_xmalloc(pv[t].count * sizeof(float));
        assert_int_equal(clEnqueueReadBuffer(q, pv[t].mem, CL_TRUE, pv[t].offset * sizeof(float),
                                             pv[t].count * sizeof(float), buf, 0, NULL, NULL),
                         CL_SUCCESS);
        for (size_t i = 0; i < pv[t].count; i++)
            assert_true(buf[i] == (float)tw.ref.p[off + i]);
        free(buf);
        off += lay->counts[t];
    }
    for (size_t a = 0; a < lay->n_tensors; a++)
        for (size_t b = 0; b < lay->n_tensors; b++) {
            if (a == b)
                continue;
            if (pv[a].mem == pv[b].mem)
                assert_true(pv[a].offset + pv[a].count <= pv[b].offset ||
                            pv[b].offset + pv[b].count <= pv[a].offset);
            if (av[a].mem == av[b].mem)
                assert_true(av[a].offset + av[a].count <= av[b].offset ||
                            av[b].offset + av[b].count <= av[a].offset);
            assert_true(pv[a].mem != av[b].mem);
        }
    /* per-tensor upload touches only that tensor */
    float *all = tu_xmalloc(tw.n * sizeof(float));
    float *mine = tu_xmalloc(37 * sizeof(float));
    for (size_t i = 0; i < 37; i++)
        mine[i] = (float)i * 0.25f - 3.0f;
    OK(clg_model_upload_params(tw.model, 2, mine, clg_model_tensor_size(tw.model, 2), NULL));
    OK(clg_model_download_params(tw.model, CLG_ALL_TENSORS, all, (size_t)clg_model_param_count(tw.model), NULL));
    off = 1009 + 1;
    for (size_t i = 0; i < tw.n; i++) {
        float want = (i >= off && i < off + 37) ? mine[i - off] : (float)tw.ref.p[i];
        assert_true(all[i] == want);
    }
    float back[37];
    OK(clg_model_download_params(tw.model, 2, back, clg_model_tensor_size(tw.model, 2), NULL));
    assert_memory_equal(back, mine, sizeof back);
    free(mine);
    free(all);
    twin_free(&tw);
}

/* 200 tiny tensors (1..7 elements) around one of 5003 elements, in two
 * groups, against the reference. */
static void test_many_small_tensors(void **state)
{
    (void)state;
    enum { NT = 201 };
    size_t counts[NT];
    int groups[NT];
    for (size_t t = 0; t < NT; t++) {
        counts[t] = 1 + t % 7;
        groups[t] = (int)(t % 2);
    }
    counts[100] = 5003;
    static const float lr_mult[] = {1.0f, 2.0f};
    static const float wd[] = {-1.0f, 0.0f};
    const twin_layout lay = {2, lr_mult, wd, NT, counts, groups};
    clg_config cfg = tu_config(CLG_ADAMW, 1e-2f, 2);
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &lay, 21);
    for (unsigned u = 0; u < 3; u++) {
        twin_cycle(&tw, u, 2, 0.0f);
        twin_check(&tw, REF_RTOL, REF_ATOL, "many small tensors");
    }
    twin_free(&tw);
}

/* ---------------------------------------------------- chunking */

static const size_t chunk_counts[] = {1000, 17, 600, 450, 1, 1009, 33, 256};
static const int chunk_groups[] = {0, 1, 0, 0, 1, 0, 1, 1};
static const float chunk_lr_mult[] = {1.0f, 0.5f};
static const float chunk_wd[] = {-1.0f, 0.0f};

static void train_chunk_model(clg_context *c, float clip, float *out_params, float **out_states,
                              size_t *n_out, int *n_mem)
{
    const twin_layout lay = {2, chunk_lr_mult, chunk_wd, 8, chunk_counts, chunk_groups};
    clg_config cfg = clg_config_init(CLG_ADAM);
    cfg.lr = 1e-2f;
    cfg.amsgrad = 1;
    cfg.weight_decay = 0.01f;
    cfg.accum_steps = 3;
    cfg.clip_norm = clip;
    twin tw;
    twin_init(&tw, c, &cfg, &lay, 31);
    for (unsigned u = 0; u < 4; u++) {
        twin_cycle(&tw, u, 3, 1.0f);
        twin_check(&tw, REF_RTOL, REF_ATOL, "chunking model");
    }
    if (out_params) {
        assert_int_equal(clg_model_download_params(tw.model, CLG_ALL_TENSORS, out_params, (size_t)clg_model_param_count(tw.model), NULL), CLG_SUCCESS);
        for (int s = 0; s < 3; s++)
            assert_int_equal(clg_model_download_state(tw.model, s, CLG_ALL_TENSORS, out_states[s], (size_t)clg_model_param_count(tw.model), NULL), CLG_SUCCESS);
    }
    *n_out = tw.n;
    /* distinct buffers among the param views */
    cl_mem mems[8];
    int n = 0;
    for (int t = 0; t < 8; t++) {
        clg_view v;
        assert_int_equal(clg_model_param_view(tw.model, t, &v), CLG_SUCCESS);
        int seen = 0;
        for (int i = 0; i < n; i++)
            seen |= mems[i] == v.mem;
        if (!seen)
            mems[n++] = v.mem;
    }
    *n_mem = n;
    twin_free(&tw);
}

static void test_chunking(void **state)
{
    (void)state;
    size_t total = 0;
    for (int t = 0; t < 8; t++)
        total += chunk_counts[t];
    float *p[2], *st[2][3];
    for (int i = 0; i < 2; i++) {
        p[i] = tu_xmalloc(total * sizeof(float));
        for (int s = 0; s < 3; s++)
            st[i][s] = tu_xmalloc(total * sizeof(float));
    }
    /* 4096 bytes = 1024 floats per buffer: the 1009-element tensor still
     * fits (with padding), every other tensor must go to some chunk */
    clg_context *small = tu_context_with_max_alloc("4096");
    assert_int_equal(clg_context_max_alloc(small), 4096);
    assert_true(clg_context_max_alloc(tu_ctx) > 4096);

    size_t n0, n1;
    int mem0, mem1;
    train_chunk_model(tu_ctx, 0.0f, p[0], st[0], &n0, &mem0);
    train_chunk_model(small, 0.0f, p[1], st[1], &n1, &mem1);
    assert_int_equal(n0, total);
    assert_int_equal(n1, total);
    assert_int_equal(mem0, 1);
    /* 3370 floats + padding need at least 4 chunks of 1024 */
    assert_true(mem1 >= 4);
    /* element-wise kernels: chunked and unchunked bitwise identical */
    assert_memory_equal(p[0], p[1], total * sizeof(float));
    for (int s = 0; s < 3; s++)
        assert_memory_equal(st[0][s], st[1][s], total * sizeof(float));

    /* with clipping the global norm reduction spans chunks: only within
     * the reference tolerance (checked inside) */
    train_chunk_model(small, 5.0f, NULL, NULL, &n1, &mem1);

    /* a tensor over the max alloc is a clear error naming the sizes */
    clg_config cfg = clg_config_init(CLG_SGD);
    clg_model *m = NULL;
    assert_int_equal(clg_model_create(small, &cfg, &m), CLG_SUCCESS);
    int id = -1;
    clg_status st_ = clg_model_add_tensor(m, "huge", 2000, 0, &id);
    if (st_ == CLG_SUCCESS)
        st_ = clg_model_finalize(m);
    assert_int_not_equal(st_, CLG_SUCCESS);
    const char *msg = clg_last_error(small);
    if (!strstr(msg, "2000") && !strstr(msg, "8000") && !strstr(msg, "4096"))
        fail_msg("over-max-alloc message does not name the sizes: '%s'", msg);
    clg_model_destroy(m);

    clg_context_destroy(small);
    for (int i = 0; i < 2; i++) {
        free(p[i]);
        for (int s = 0; s < 3; s++)
            free(st[i][s]);
    }
}

/* ---------------------------------------------------- budget */

static void test_budget(void **state)
{
    (void)state;
    uint64_t used = clg_context_device_bytes(tu_ctx);
    /* below what is already allocated: refused, nothing changes */
    if (used > 0) {
        assert_int_equal(clg_context_set_budget(tu_ctx, used - 1), CLG_ERR_OVER_BUDGET);
        assert_int_equal(clg_context_budget(tu_ctx), 0);
    }
    uint64_t budget = used + 65536;
    OK(clg_context_set_budget(tu_ctx, budget));
    assert_int_equal(clg_context_budget(tu_ctx), budget);

    clg_config cfg = clg_config_init(CLG_ADAMW);
    clg_model *m = NULL;
    OK(clg_model_create(tu_ctx, &cfg, &m));
    int id;
    OK(clg_model_add_tensor(m, "big", 100000, 0, &id));
    clg_status st = clg_model_finalize(m);
    assert_int_equal(st, CLG_ERR_OVER_BUDGET);
    const char *msg = clg_last_error(tu_ctx);
    char num[32];
    snprintf(num, sizeof num, "%llu", (unsigned long long)budget);
    if (!strstr(msg, num))
        fail_msg("over-budget message does not give the budget (%s bytes): '%s'", num, msg);
    /* nothing stays allocated */
    assert_int_equal(clg_context_device_bytes(tu_ctx), used);

    /* a caller reservation is charged the same way */
    assert_int_equal(clg_context_reserve(tu_ctx, 65537), CLG_ERR_OVER_BUDGET);
    assert_int_equal(clg_context_device_bytes(tu_ctx), used);
    OK(clg_context_reserve(tu_ctx, 1000));
    clg_context_unreserve(tu_ctx, 1000);

    /* lifting the budget lets the same model finalize */
    OK(clg_context_set_budget(tu_ctx, 0));
    OK(clg_model_finalize(m));
    clg_model_plan plan = clg_model_plan_init();
    OK(clg_model_memory(m, &plan));
    /* AdamW path B/C: params, accumulators, m, v at least 4 B each */
    assert_true(plan.params >= 400000 && plan.accumulators >= 400000 && plan.states >= 800000);
    assert_true(plan.total >= plan.params + plan.accumulators + plan.states);
    assert_true(clg_context_device_bytes(tu_ctx) >=
                used + plan.params + plan.accumulators + plan.states);
    clg_model_destroy(m);
    assert_int_equal(clg_context_device_bytes(tu_ctx), used);
}

TU_MAIN("layout", tu_group_setup, tu_group_teardown,
        cmocka_unit_test(test_views),
        cmocka_unit_test(test_many_small_tensors),
        cmocka_unit_test(test_chunking),
        cmocka_unit_test(test_budget))
