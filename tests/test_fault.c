/* test_fault.c - error paths by fault injection (src/fault.c): for every n,
 *  - the n-th device allocation of clg_model_finalize / clg_grads_create
 *    fails: an error, no device bytes left charged, the model can retry
 *    and be destroyed;
 *  - the n-th enqueue of a clg_step fails (an update on paths A and C, a
 *    noise-scale first micro-step, a skip-micro update): an error, host
 *    counters, parameters, optimizer states and param copy as before; at
 *    the first enqueue nothing changed and a retry matches a fault-free
 *    run bit for bit; after earlier launches the model refuses to go on
 *    (CLG_ERR_STATE, saves too) until a checkpoint is loaded, through
 *    failed loads too, and then matches a fault-free run bit for bit;
 *  - the n-th enqueue of clg_checkpoint_load fails: the live state is
 *    restored byte for byte;
 *  - the n-th write of clg_checkpoint_save fails: an error, no temporary
 *    file left, the old file intact (byte for byte, and it loads into a
 *    fresh model as the state it was saved from), until a save succeeds
 *    and its file loads into a fresh model bit-identically.
 * Each loop ends at the first n the call completes without reaching. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"
#include "checkpoint.h"
#include "fault.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { K = 3, MAX_N = 500 };

/* Two groups (two segments of the one update launch), clipping and loss
 * scaling (statistics and prologue launches), a param copy and tensor
 * norms (more buffers), the noise scale (its first-micro-step fold). */
static clg_config fault_config(clg_optimizer opt)
{
    clg_config c = clg_config_init(opt);
    c.accum_steps = K;
    c.amsgrad = opt == CLG_ADAM || opt == CLG_ADAMW;
    c.clip_norm = 1.0f;
    c.nonfinite = CLG_NONFINITE_SKIP_UPDATE;
    c.loss_scale = CLG_LOSS_SCALE_DYNAMIC;
    c.param_copy_dtype = CLG_BF16;
    c.tensor_norms = 1;
    c.noise_scale = 1;
    return c;
}

static clg_model *unfinalized_model(const clg_config *cfg)
{
    clg_model *m = NULL;
    OK(clg_model_create(tu_ctx, cfg, &m));
    int g1, t;
    OK(clg_model_add_group(m, "bias", 2.0f, 0.0f, &g1));
    OK(clg_model_add_tensor(m, "w1", 40, 0, &t));
    OK(clg_model_add_tensor(m, "b1", 5, g1, &t));
    OK(clg_model_add_tensor(m, "w2", 21, 0, &t));
    return m;
}

static clg_model *ready_model(const clg_config *cfg, uint64_t seed)
{
    clg_model *m = unfinalized_model(cfg);
    OK(clg_model_finalize(m));
    tu_upload_uniform_params(m, seed);
    return m;
}

/* The ready model of fault_config(opt), for a test that needs no config of
 * its own. */
static clg_model *fault_model(clg_optimizer opt, uint64_t seed)
{
    clg_config cfg = fault_config(opt);
    return ready_model(&cfg, seed);
}

static clg_status micro_step(clg_model *m, clg_grads *g, unsigned u, unsigned mi)
{
    size_t n = clg_model_param_count(m);
    float *buf = tu_xmalloc(n * sizeof *buf);
    tu_fill_normal(buf, n, 100u * u + mi + 1, 1.0f);
    clg_status st = clg_grads_upload(g, CLG_ALL_TENSORS, buf, n, NULL);
    free(buf);
    return st == CLG_SUCCESS ? clg_step(m, g, 1.0f + 0.5f * (float)mi, NULL, NULL) : st;
}

static void disarm(void)
{
    for (int k = 0; k < CLG_FAULT_KINDS; k++)
        clg__fault_arm((clg_fault_kind)k, 0);
}

/* ------------------------------------------------------------ allocation */

static void test_alloc_finalize(void **state)
{
    (void)state;
    const clg_optimizer opts[] = {CLG_ADAMW, CLG_SGD};
    for (size_t o = 0; o < 2; o++) {
        clg_config cfg = fault_config(opts[o]);
        uint64_t base = clg_context_device_bytes(tu_ctx);
        unsigned failures = 0;
        for (unsigned n = 1; n <= MAX_N; n++) {
            clg_model *m = unfinalized_model(&cfg);
            clg__fault_arm(CLG_FAULT_ALLOC, n);
            clg_status st = clg_model_finalize(m);
            int fired = clg__fault_fired(CLG_FAULT_ALLOC);
            disarm();
            if (st == CLG_SUCCESS) {
                assert_false(fired);
                clg_model_destroy(m);
                break;
            }
            failures++;
            assert_true(fired);
            if (st != CLG_ERR_OUT_OF_DEVICE_MEMORY)
                fail_msg("alloc %u: finalize returned %s: %s", n, clg_status_string(st),
                         clg_last_error(tu_ctx));
            /* nothing stays charged, and the model is still usable */
            assert_true(clg_context_device_bytes(tu_ctx) == base);
            OK(clg_model_finalize(m));
            int t = -1;
            OK(clg_model_find_tensor(m, "w2", &t));
            float p[21];
            OK(clg_model_download_params(m, t, p, clg_model_tensor_size(m, t), NULL));
            clg_model_destroy(m);
            assert_true(clg_context_device_bytes(tu_ctx) == base);
        }
        /* params, acc, 1..3 states, copy, step block, partials, norms */
        assert_true(failures >= 6);
        print_message("%s: finalize failed cleanly at each of its %u allocations\n",
                      opts[o] == CLG_SGD ? "sgd" : "adamw", failures);
    }
}

static void test_alloc_grads(void **state)
{
    (void)state;
    clg_model *m = fault_model(CLG_ADAMW, 1);
    uint64_t base = clg_context_device_bytes(tu_ctx);
    unsigned n;
    for (n = 1; n <= MAX_N; n++) {
        clg_grads *g = NULL;
        clg__fault_arm(CLG_FAULT_ALLOC, n);
        clg_status st = clg_grads_create(m, CLG_FP16, &g);
        disarm();
        if (st == CLG_SUCCESS) {
            clg_grads_destroy(g);
            break;
        }
        assert_null(g);
        assert_int_equal(st, CLG_ERR_OUT_OF_DEVICE_MEMORY);
        assert_true(clg_context_device_bytes(tu_ctx) == base);
    }
    assert_true(n > 1);
    clg_model_destroy(m);
}

/* ------------------------------------------------------------ enqueue */

/* Everything a checkpoint holds, through the checkpoint's own reader. */
typedef struct full_state {
    clg_ckpt_layout layout;
    uint8_t *raw;
    clg_cycle_state cs;
    unsigned micro;
} full_state;

static void take_state(clg_model *m, full_state *s)
{
    char err[256];
    OK(clg__ckpt_layout_model(m, &s->layout, err, sizeof err));
    OK(clg__ckpt_collect(m, &s->layout, NULL, &s->raw, &s->cs));
    s->micro = clg_micro_step_index(m);
}

static void free_state(full_state *s)
{
    clg__ckpt_layout_free(&s->layout);
    free(s->raw);
}

/* Compares two states of models with the same layout. update_only: only the
 * entries the update writes (parameters, optimizer states, param copy);
 * otherwise every entry, the step block and the host counters too.
 * Returns the first differing key, or NULL. */
static const char *state_differs(const full_state *a, const full_state *b, int update_only)
{
    assert_true(a->layout.n == b->layout.n && a->layout.data_size == b->layout.data_size);
    for (size_t i = 0; i < a->layout.n; i++) {
        const clg_ckpt_entry *e = &a->layout.entries[i];
        if (update_only && (e->source == CLG_ARENA_ACC || e->source == CLG_CKPT_SRC_STEP_BLOCK))
            continue;
        if (memcmp(a->raw + e->begin, b->raw + e->begin, (size_t)(e->end - e->begin)) != 0)
            return e->key;
    }
    if (update_only)
        return NULL;
    if (memcmp(a->cs.step_block, b->cs.step_block, sizeof a->cs.step_block) != 0)
        return "step block";
    if (a->micro != b->micro || a->cs.micro != b->cs.micro || a->cs.cycles != b->cs.cycles ||
        a->cs.micro_total != b->cs.micro_total ||
        memcmp(&a->cs.weight_sum, &b->cs.weight_sum, sizeof(float)) != 0)
        return "host counters";
    return NULL;
}

/* The run of every enqueue test: micro-step i (0-based, over all cycles)
 * has its own gradient and weight. */
static float weight_at(unsigned i) { return 1.0f + 0.5f * (float)(i % K); }

static void upload_at(clg_model *m, clg_grads *g, unsigned i)
{
    size_t n = clg_model_param_count(m);
    float *buf = tu_xmalloc(n * sizeof *buf);
    tu_fill_normal(buf, n, 1000u + i, 1.0f);
    OK(clg_grads_upload(g, CLG_ALL_TENSORS, buf, n, NULL));
    free(buf);
}

/* Micro-steps [from, to) of the run. */
static void run_steps(clg_model *m, clg_grads *g, unsigned from, unsigned to)
{
    for (unsigned i = from; i < to; i++) {
        upload_at(m, g, i);
        OK(clg_step(m, g, weight_at(i), NULL, NULL));
    }
}

typedef struct step_case {
    const char *name;
    clg_config cfg;
    unsigned at;          /* the micro-step that fails: cycle 1, step `at % K` */
    unsigned min_enqueues; /* the step enqueues at least this many times */
} step_case;

enum { RUN_END = 3 * K }; /* three cycles */

/* The fault-free run of cfg from seed's params, micro-steps [0, RUN_END):
 * its whole state at the end in *want, what every faulted run must end
 * in. Returns the model's number of chunks. */
static size_t fault_free_state(const clg_config *cfg, uint64_t seed, full_state *want)
{
    clg_model *ref = ready_model(cfg, seed);
    size_t chunks = ref->n_chunks;
    clg_grads *g = NULL;
    OK(clg_grads_create(ref, CLG_FP32, &g));
    run_steps(ref, g, 0, RUN_END);
    clg_grads_destroy(g);
    take_state(ref, want);
    clg_model_destroy(ref);
    return chunks;
}

/* Refused: every call that would advance the cycle says CLG_ERR_STATE and
 * to load a checkpoint, and so does a save of the inconsistent state. */
static void expect_refused(clg_model *m, clg_grads *g, unsigned at, const char *what)
{
    int updated = -1;
    clg_status st = clg_step(m, g, weight_at(at), &updated, NULL);
    if (st != CLG_ERR_STATE || !strstr(clg_last_error(tu_ctx), "load a checkpoint"))
        fail_msg("%s: clg_step on a model whose step failed half-way returned %s: %s", what,
                 clg_status_string(st), clg_last_error(tu_ctx));
    assert_int_equal(updated, 0);
    assert_int_equal(clg_flush(m, NULL), CLG_ERR_STATE);
    char *path = tu_tmp_path("refused.ckpt");
    assert_int_equal(clg_checkpoint_save(m, path, NULL, NULL, 0), CLG_ERR_STATE);
    assert_int_equal(access(path, F_OK), -1);
    free(path);
}

/* Micro-step c->at fails at each of its enqueues in turn (n = 1, 2, ...
 * until the step completes without reaching its n-th). Each time: an
 * error; host counters, parameters, optimizer states and param copy as
 * before (single-chunk model: the update is one launch). A failure at the
 * first enqueue changed nothing: the whole state is as before and a retry
 * finishes the run exactly as a fault-free one. A later failure leaves
 * part of the step on the device: the model refuses to go on until the
 * checkpoint saved before the step is loaded, and then finishes the run
 * exactly as a fault-free one. */
static unsigned enqueue_in_step(const step_case *c)
{
    char *ckpt = tu_tmp_path("before-step.ckpt");
    full_state want;
    assert_int_equal(fault_free_state(&c->cfg, 3, &want), 1);
    clg_grads *g = NULL;

    unsigned n, refused = 0;
    for (n = 1; n <= MAX_N; n++) {
        clg_model *m = ready_model(&c->cfg, 3);
        OK(clg_grads_create(m, CLG_FP32, &g));
        run_steps(m, g, 0, c->at);
        OK(clg_checkpoint_save(m, ckpt, NULL, NULL, 0));
        upload_at(m, g, c->at);
        full_state before, after;
        take_state(m, &before);

        clg__fault_arm(CLG_FAULT_ENQUEUE, n);
        int updated = -1;
        clg_status st = clg_step(m, g, weight_at(c->at), &updated, NULL);
        int fired = clg__fault_fired(CLG_FAULT_ENQUEUE);
        disarm();
        if (st == CLG_SUCCESS) {
            assert_false(fired);
            run_steps(m, g, c->at + 1, RUN_END);
        } else {
            assert_true(fired);
            assert_int_equal(updated, 0);
            assert_non_null(strstr(clg_last_error(tu_ctx), "CL_OUT_OF_RESOURCES"));
            take_state(m, &after);
            const char *d = state_differs(&before, &after, 1);
            if (d)
                fail_msg("%s, enqueue %u: '%s' changed by a failed clg_step", c->name, n, d);
            if (memcmp(&before.cs.weight_sum, &after.cs.weight_sum, sizeof(float)) != 0 ||
                before.micro != after.micro || before.cs.cycles != after.cs.cycles ||
                before.cs.micro_total != after.cs.micro_total)
                fail_msg("%s, enqueue %u: host counters changed by a failed clg_step", c->name,
                         n);
            if (n == 1) {
                /* nothing was enqueued: nothing changed, and a retry works */
                d = state_differs(&before, &after, 0);
                if (d)
                    fail_msg("%s: '%s' changed by a clg_step that failed at its first enqueue",
                             c->name, d);
            } else {
                expect_refused(m, g, c->at, c->name);
                refused++;
                OK(clg_checkpoint_load(m, ckpt, NULL, NULL));
                assert_int_equal(clg_micro_step_index(m), c->at % K);
            }
            free_state(&after);
            run_steps(m, g, c->at, RUN_END);
        }
        full_state got;
        take_state(m, &got);
        const char *d = state_differs(&want, &got, 0);
        if (d)
            fail_msg("%s, enqueue %u: after %s the run differs from a fault-free one in '%s'",
                     c->name, n,
                     st == CLG_SUCCESS ? "no fault" : n == 1 ? "a retry" : "loading the checkpoint",
                     d);
        free_state(&got);
        free_state(&before);
        clg_grads_destroy(g);
        clg_model_destroy(m);
        if (st == CLG_SUCCESS)
            break;
    }
    unsigned tried = n - 1;
    if (tried < c->min_enqueues)
        fail_msg("%s: the step failed at only %u enqueues, expected %u or more", c->name, tried,
                 c->min_enqueues);
    assert_int_equal(refused, tried - 1);
    free_state(&want);
    unlink(ckpt);
    free(ckpt);
    return tried;
}

static void run_cases(const step_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned tried = enqueue_in_step(&cases[i]);
        print_message("%s: clg_step failed cleanly at each of its %u enqueues (%u of them "
                      "after earlier launches: refused, then resumed from the checkpoint)\n",
                      cases[i].name, tried, tried - 1);
    }
}

static void test_enqueue_step(void **state)
{
    (void)state;
    step_case cases[3];
    /* path A with statistics: accumulate (fused norm), tensor norms,
     * prologue, update */
    cases[0] = (step_case){"path A, statistics", fault_config(CLG_ADAMW), 2 * K - 1, 4};
    cases[0].cfg.fuse_last_micro_step = 0;
    /* path C proper: prologue, then the update that reads the grads */
    clg_config cc = fault_config(CLG_ADAMW);
    cc.fuse_last_micro_step = 1;
    cc.clip_norm = 0.0f;
    cc.nonfinite = CLG_NONFINITE_IGNORE;
    cc.loss_scale = CLG_LOSS_SCALE_NONE;
    cc.noise_scale = 0;
    cc.tensor_norms = 0;
    cases[1] = (step_case){"path C", cc, 2 * K - 1, 2};
    /* the noise scale's first micro-step: accumulate (its own norm), then
     * fold it into the step block */
    cases[2] = (step_case){"first micro-step, noise scale", fault_config(CLG_ADAMW), K, 2};
    run_cases(cases, 3);
}

static void test_enqueue_step_skip_micro(void **state)
{
    (void)state;
    /* check, verdict, accumulate, count read, statistics, prologue, update */
    clg_config cs = fault_config(CLG_SGD);
    cs.momentum = 0.9f;
    cs.fuse_last_micro_step = 0;
    cs.nonfinite = CLG_NONFINITE_SKIP_MICRO;
    cs.noise_scale = 0;
    step_case c = {"skip-micro, last micro-step", cs, 2 * K - 1, 5};
    run_cases(&c, 1);
}

/* A model refusing steps after a half-done one stays refusing through
 * every failed load (at each of its enqueues, and a missing file), and the
 * first successful load clears it. */
static void test_failed_until_load(void **state)
{
    (void)state;
    clg_config cfg = fault_config(CLG_ADAMW);
    cfg.fuse_last_micro_step = 0;
    char *ckpt = tu_tmp_path("failed.ckpt");
    full_state want;
    fault_free_state(&cfg, 5, &want);

    const unsigned at = 2 * K - 1;
    clg_model *m = ready_model(&cfg, 5);
    clg_grads *g = NULL;
    OK(clg_grads_create(m, CLG_FP32, &g));
    run_steps(m, g, 0, at);
    OK(clg_checkpoint_save(m, ckpt, NULL, NULL, 0));
    upload_at(m, g, at);
    clg__fault_arm(CLG_FAULT_ENQUEUE, 2);
    clg_status st = clg_step(m, g, weight_at(at), NULL, NULL);
    disarm();
    assert_int_not_equal(st, CLG_SUCCESS);
    expect_refused(m, g, at, "after a failed step");

    char *missing = tu_tmp_path("missing.ckpt");
    assert_int_equal(clg_checkpoint_load(m, missing, NULL, NULL), CLG_ERR_IO);
    free(missing);
    expect_refused(m, g, at, "after a load of a missing file");
    unsigned n;
    for (n = 1; n <= MAX_N; n++) {
        clg__fault_arm(CLG_FAULT_ENQUEUE, n);
        st = clg_checkpoint_load(m, ckpt, NULL, NULL);
        disarm();
        if (st == CLG_SUCCESS)
            break;
        char what[64];
        snprintf(what, sizeof what, "after a load that failed at enqueue %u", n);
        expect_refused(m, g, at, what);
    }
    assert_true(n > 10);
    /* loaded: the run goes on as if nothing had happened */
    run_steps(m, g, at, RUN_END);
    full_state got;
    take_state(m, &got);
    const char *d = state_differs(&want, &got, 0);
    if (d)
        fail_msg("resumed after the load, the run differs from a fault-free one in '%s'", d);
    print_message("a failed model refused steps through %u failed loads, then resumed\n", n);
    free_state(&got);
    free_state(&want);
    clg_grads_destroy(g);
    clg_model_destroy(m);
    unlink(ckpt);
    free(ckpt);
}

/* ------------------------------------------------------------ checkpoints */

static void snapshot(clg_model *m, uint8_t **raw, size_t *n, clg_cycle_state *cs)
{
    char err[256];
    clg_ckpt_layout layout;
    OK(clg__ckpt_layout_model(m, &layout, err, sizeof err));
    OK(clg__ckpt_collect(m, &layout, NULL, raw, cs));
    *n = (size_t)layout.data_size;
    clg__ckpt_layout_free(&layout);
}

static int dir_entries(void)
{
    DIR *d = opendir(tu_tmpdir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void test_enqueue_load(void **state)
{
    (void)state;
    clg_config cfg = fault_config(CLG_ADAMW);
    char *path = tu_tmp_path("load.ckpt");
    clg_model *a = ready_model(&cfg, 1);
    clg_grads *g = NULL;
    OK(clg_grads_create(a, CLG_FP32, &g));
    for (unsigned mi = 0; mi < K + 1; mi++)
        OK(micro_step(a, g, 0, mi % K));
    clg_grads_destroy(g);
    OK(clg_checkpoint_save(a, path, NULL, NULL, 0));
    clg_model_destroy(a);

    clg_model *m = ready_model(&cfg, 2);
    OK(clg_grads_create(m, CLG_FP32, &g));
    OK(micro_step(m, g, 5, 0));
    clg_grads_destroy(g);
    uint8_t *before, *after;
    size_t nb, na;
    clg_cycle_state cb, ca;
    snapshot(m, &before, &nb, &cb);
    unsigned n;
    for (n = 1; n <= MAX_N; n++) {
        clg__fault_arm(CLG_FAULT_ENQUEUE, n);
        clg_status st = clg_checkpoint_load(m, path, NULL, NULL);
        int fired = clg__fault_fired(CLG_FAULT_ENQUEUE);
        disarm();
        if (st == CLG_SUCCESS) {
            assert_false(fired);
            break;
        }
        assert_true(fired);
        snapshot(m, &after, &na, &ca);
        if (na != nb || memcmp(before, after, nb) != 0 ||
            memcmp(cb.step_block, ca.step_block, sizeof cb.step_block) != 0 ||
            cb.micro != ca.micro || cb.cycles != ca.cycles || cb.micro_total != ca.micro_total)
            fail_msg("enqueue %u of a load: live state not restored (%s)", n,
                     clg_last_error(tu_ctx));
        free(after);
    }
    assert_true(n > 10);
    print_message("clg_checkpoint_load restored the live state after a failure at each of its "
                  "%u enqueues\n",
                  n - 1);
    free(before);
    clg_model_destroy(m);
    unlink(path);
    free(path);
}

/* Loads path into a fresh model (other initial params) and checks that it
 * holds exactly raw/cs, the state of the model that saved it. */
static void expect_file_holds(const char *path, const clg_config *cfg, const uint8_t *raw,
                              size_t n, const clg_cycle_state *cs, const char *what)
{
    clg_model *fresh = ready_model(cfg, 99);
    uint8_t *got;
    size_t got_n;
    clg_cycle_state gcs;
    snapshot(fresh, &got, &got_n, &gcs);
    assert_true(got_n == n);
    if (memcmp(got, raw, n) == 0)
        fail_msg("%s: a fresh model already holds the saved state: the check proves nothing",
                 what);
    free(got);
    clg_status st = clg_checkpoint_load(fresh, path, NULL, NULL);
    if (st != CLG_SUCCESS)
        fail_msg("%s: the file on disk does not load: %s: %s", what, clg_status_string(st),
                 clg_last_error(tu_ctx));
    snapshot(fresh, &got, &got_n, &gcs);
    if (got_n != n || memcmp(got, raw, n) != 0)
        fail_msg("%s: the file loads, but its tensors differ from what was saved", what);
    if (memcmp(gcs.step_block, cs->step_block, sizeof gcs.step_block) != 0 ||
        gcs.micro != cs->micro || gcs.cycles != cs->cycles || gcs.micro_total != cs->micro_total ||
        memcmp(&gcs.weight_sum, &cs->weight_sum, sizeof(float)) != 0)
        fail_msg("%s: the file loads, but its step block or counters differ from what was saved",
                 what);
    free(got);
    clg_model_destroy(fresh);
}

/* The n-th write of a save fails, for n = 1, 2, ... until a save succeeds
 * (it must, within MAX_N). After each failure: CLG_ERR_IO, no temporary
 * file left, and the file on disk is the previous one byte for byte and
 * loads into a fresh model as the state saved before - or, when only the
 * directory fsync after the rename failed, the complete new file, which
 * loads as the new state. After the successful save the file loads into a
 * fresh model bit-identically to the live model. */
static void test_write_save(void **state)
{
    (void)state;
    clg_config cfg = fault_config(CLG_ADAMW);
    char *path = tu_tmp_path("save.ckpt");
    clg_model *m = ready_model(&cfg, 4);
    OK(clg_checkpoint_save(m, path, NULL, NULL, 0));
    size_t old_n;
    uint8_t *old = tu_read_file(path, &old_n);
    uint8_t *old_raw, *new_raw;
    size_t old_raw_n, new_raw_n;
    clg_cycle_state old_cs, new_cs;
    snapshot(m, &old_raw, &old_raw_n, &old_cs);
    expect_file_holds(path, &cfg, old_raw, old_raw_n, &old_cs, "the first save");

    /* one update and one more micro-step: every entry and counter moves */
    clg_grads *g = NULL;
    OK(clg_grads_create(m, CLG_FP32, &g));
    for (unsigned mi = 0; mi < K + 1; mi++)
        OK(micro_step(m, g, 0, mi % K));
    clg_grads_destroy(g);
    snapshot(m, &new_raw, &new_raw_n, &new_cs);
    assert_true(new_raw_n == old_raw_n);
    assert_memory_not_equal(new_raw, old_raw, old_raw_n);

    int entries = dir_entries();
    unsigned n, renamed = 0;
    int saved = 0;
    for (n = 1; n <= MAX_N; n++) {
        clg__fault_arm(CLG_FAULT_WRITE, n);
        clg_status st = clg_checkpoint_save(m, path, NULL, NULL, 0);
        int fired = clg__fault_fired(CLG_FAULT_WRITE);
        disarm();
        if (st == CLG_SUCCESS) {
            assert_false(fired);
            saved = 1;
            break;
        }
        assert_true(fired);
        assert_int_equal(st, CLG_ERR_IO);
        assert_non_null(strstr(clg_last_error(tu_ctx), "injected fault"));
        assert_int_equal(dir_entries(), entries); /* no temporary file left */
        char what[96];
        snprintf(what, sizeof what, "after a save whose write %u failed", n);
        size_t got_n;
        uint8_t *got = tu_read_file(path, &got_n);
        if (got_n == old_n && memcmp(got, old, old_n) == 0) {
            /* the previous file, intact */
            free(got);
            expect_file_holds(path, &cfg, renamed ? new_raw : old_raw, old_raw_n,
                              renamed ? &new_cs : &old_cs, what);
        } else {
            /* only a failed directory fsync comes after the rename, when
             * the new file is complete */
            if (!strstr(clg_last_error(tu_ctx), "fsync of its directory"))
                fail_msg("%s: the file on disk changed, and the failure was not the directory "
                         "fsync: %s",
                         what, clg_last_error(tu_ctx));
            expect_file_holds(path, &cfg, new_raw, new_raw_n, &new_cs, what);
            free(old);
            old = got;
            old_n = got_n;
            renamed++;
        }
        /* a failed save changes nothing of the live model */
        uint8_t *live;
        size_t live_n;
        clg_cycle_state live_cs;
        snapshot(m, &live, &live_n, &live_cs);
        assert_true(live_n == new_raw_n);
        assert_memory_equal(live, new_raw, new_raw_n);
        assert_memory_equal(live_cs.step_block, new_cs.step_block, sizeof new_cs.step_block);
        free(live);
    }
    if (!saved)
        fail_msg("clg_checkpoint_save never succeeded in %d tries with one failing write", MAX_N);
    /* prefix + header, each tensor, fsync, rename, directory fsync */
    assert_true(n > 8);
    expect_file_holds(path, &cfg, new_raw, new_raw_n, &new_cs, "after the successful save");
    print_message("clg_checkpoint_save failed cleanly at each of its %u writes (%u after the "
                  "rename), then saved\n",
                  n - 1, renamed);
    free(old);
    free(old_raw);
    free(new_raw);
    clg_model_destroy(m);
    unlink(path);
    free(path);
}

static void test_enqueue_save(void **state)
{
    (void)state;
    char *path = tu_tmp_path("esave.ckpt");
    clg_model *m = fault_model(CLG_SGD, 4);
    int entries = dir_entries();
    unsigned n;
    for (n = 1; n <= MAX_N; n++) {
        clg__fault_arm(CLG_FAULT_ENQUEUE, n);
        clg_status st = clg_checkpoint_save(m, path, NULL, NULL, 0);
        disarm();
        if (st == CLG_SUCCESS)
            break;
        assert_int_equal(dir_entries(), entries); /* nothing written */
    }
    assert_true(n > 3);
    clg_model_destroy(m);
    unlink(path);
    free(path);
}

/* ------------------------------------------------------------ the hook */

static void test_env_arming(void **state)
{
    (void)state;
    /* the hook counts every operation and fails only the n-th */
    clg__fault_arm(CLG_FAULT_WRITE, 3);
    assert_false(clg__fault_hit(CLG_FAULT_WRITE));
    assert_false(clg__fault_hit(CLG_FAULT_WRITE));
    assert_false(clg__fault_fired(CLG_FAULT_WRITE));
    assert_true(clg__fault_hit(CLG_FAULT_WRITE));
    assert_true(clg__fault_fired(CLG_FAULT_WRITE));
    assert_false(clg__fault_hit(CLG_FAULT_WRITE));
    assert_true(clg__fault_count(CLG_FAULT_WRITE) == 4);
    disarm();
    assert_false(clg__fault_hit(CLG_FAULT_WRITE));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_arming),
        cmocka_unit_test(test_alloc_finalize),
        cmocka_unit_test(test_alloc_grads),
        cmocka_unit_test(test_enqueue_step),
        cmocka_unit_test(test_enqueue_step_skip_micro),
        cmocka_unit_test(test_failed_until_load),
        cmocka_unit_test(test_enqueue_load),
        cmocka_unit_test(test_write_save),
        cmocka_unit_test(test_enqueue_save),
    };
    return cmocka_run_group_tests(tests, tu_group_setup_tmpdir, tu_group_teardown);
}
