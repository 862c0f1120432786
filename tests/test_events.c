/* test_events.c - the optional clg_events of clg_step, clg_flush and the
 * host copies (work ordered across queues without clFinish), and what a
 * non-blocking clg_model_stats returns (one consistent snapshot, at most
 * one cycle behind, taken without waiting for the device's pending work). */
#include "clgrad.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>
#include <stdatomic.h>
#include <threads.h>

#include <cmocka.h>

enum { N = 5000 };
static const float LR = 0.125f;

/* SGD without momentum: p' = p - lr * g exactly as the host computes it in
 * fp32 (one multiply, one subtract: the device's result must be within one
 * rounding of it). */
static clg_model *sgd_model(unsigned k)
{
    clg_config cfg = tu_config(CLG_SGD, LR, k);
    clg_model *m = NULL;
    OK(clg_model_create(tu_ctx, &cfg, &m));
    int t;
    OK(clg_model_add_tensor(m, "w", N, 0, &t));
    OK(clg_model_finalize(m));
    return m;
}

static void expect_sgd(const float *p0, const float *g, const float *got)
{
    for (size_t i = 0; i < N; i++) {
        double want = (double)p0[i] - (double)LR * (double)g[i];
        double tol = 1e-6 * (fabs(want) + 1.0);
        if (fabs((double)got[i] - want) > tol)
            fail_msg("element %zu: %.9g, expected %.9g", i, (double)got[i], want);
    }
}

static cl_int event_status(cl_event e)
{
    cl_int s = CL_QUEUED;
    assert_int_equal(clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL),
                     CL_SUCCESS);
    return s;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* One SGD update (k = 1) of params p0 by gradients g (uniform from seed
 * and seed + 1), nothing uploaded yet; got receives the params after. */
typedef struct sgd_case {
    clg_model *m;
    clg_grads *grads;
    float *p0, *g, *got;
} sgd_case;

static sgd_case sgd_case_open(uint64_t seed)
{
    sgd_case c = {sgd_model(1), NULL, tu_xmalloc(N * sizeof(float)), tu_xmalloc(N * sizeof(float)),
                  tu_xmalloc(N * sizeof(float))};
    tu_fill_uniform(c.p0, N, seed, -1.0f, 1.0f);
    tu_fill_uniform(c.g, N, seed + 1, -1.0f, 1.0f);
    OK(clg_grads_create(c.m, CLG_FP32, &c.grads));
    return c;
}

/* got is the host's p0 - lr * g; frees the case. */
static void sgd_case_close(sgd_case *c)
{
    expect_sgd(c->p0, c->g, c->got);
    clg_grads_destroy(c->grads);
    clg_model_destroy(c->m);
    free(c->p0);
    free(c->g);
    free(c->got);
}

/* The update does not start before the caller's event, and the returned
 * event completes only after it. */
static void test_step_waits_for_user_event(void **state)
{
    (void)state;
    sgd_case sc = sgd_case_open(1);
    clg_model *m = sc.m;
    OK(clg_model_upload_params(m, CLG_ALL_TENSORS, sc.p0, N, NULL));
    OK(clg_grads_upload(sc.grads, CLG_ALL_TENSORS, sc.g, N, NULL));

    cl_int err;
    cl_event gate = clCreateUserEvent(clg_context_cl(tu_ctx), &err);
    assert_int_equal(err, CL_SUCCESS);
    cl_event done = NULL;
    int updated = 0;
    clg_events ev = {1, &gate, &done};
    OK(clg_step(m, sc.grads, 1.0f, &updated, &ev));
    assert_int_equal(updated, 1);
    assert_non_null(done);
    sleep_ms(100);
    assert_int_not_equal(event_status(done), CL_COMPLETE);

    assert_int_equal(clSetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
    assert_int_equal(clWaitForEvents(1, &done), CL_SUCCESS);
    assert_int_equal(event_status(done), CL_COMPLETE);
    OK(clg_model_download_params(m, CLG_ALL_TENSORS, sc.got, N, NULL));
    clReleaseEvent(done);
    clReleaseEvent(gate);
    sgd_case_close(&sc);
}

/* A second queue writes the gradients and reads the params; clgrad's queue
 * is ordered against it by events only. */
static void test_two_queues(void **state)
{
    (void)state;
    sgd_case sc = sgd_case_open(3);
    clg_model *m = sc.m;

    cl_int err;
    cl_command_queue q2 =
        clCreateCommandQueue(clg_context_cl(tu_ctx), clg_context_device(tu_ctx), 0, &err);
    assert_int_equal(err, CL_SUCCESS);

    cl_event uploaded = NULL;
    OK(clg_model_upload_params(m, CLG_ALL_TENSORS, sc.p0, N, &(clg_events){0, NULL, &uploaded}));
    assert_non_null(uploaded);
    clg_view gv;
    OK(clg_grads_view(sc.grads, 0, &gv));
    cl_event written = NULL;
    assert_int_equal(clEnqueueWriteBuffer(q2, gv.mem, CL_FALSE, gv.offset * 4, N * 4, sc.g, 1,
                                          &uploaded, &written),
                     CL_SUCCESS);
    clFlush(q2);
    cl_event stepped = NULL;
    OK(clg_step(m, sc.grads, 1.0f, NULL, &(clg_events){1, &written, &stepped}));
    clg_view pv;
    OK(clg_model_param_view(m, 0, &pv));
    assert_int_equal(clEnqueueReadBuffer(q2, pv.mem, CL_TRUE, pv.offset * 4, N * 4, sc.got, 1,
                                         &stepped, NULL),
                     CL_SUCCESS);
    clReleaseEvent(uploaded);
    clReleaseEvent(written);
    clReleaseEvent(stepped);
    clReleaseCommandQueue(q2);
    sgd_case_close(&sc);
}

/* Path B's intermediate micro-step and a flush: an event even when the
 * call launches nothing, complete once waited for. */
static void test_event_without_work_and_flush(void **state)
{
    (void)state;
    clg_model *m = sgd_model(3);
    tu_upload_uniform_params(m, 5);
    cl_event e = NULL;
    int updated = -1;
    OK(clg_step(m, NULL, 1.0f, &updated, &(clg_events){0, NULL, &e}));
    assert_int_equal(updated, 0);
    assert_non_null(e);
    assert_int_equal(clWaitForEvents(1, &e), CL_SUCCESS);
    clReleaseEvent(e);
    e = NULL;
    OK(clg_flush(m, &(clg_events){0, NULL, &e}));
    assert_non_null(e);
    assert_int_equal(clWaitForEvents(1, &e), CL_SUCCESS);
    clReleaseEvent(e);
    clg_stats s = clg_stats_init();
    OK(clg_model_stats(m, 1, &s));
    assert_true(s.updates == 1);
    clg_model_destroy(m);
}

/* A malformed clg_events is refused before anything changes. */
static void test_bad_events(void **state)
{
    (void)state;
    clg_model *m = sgd_model(2);
    tu_upload_uniform_params(m, 6);
    cl_int err;
    cl_event u = clCreateUserEvent(clg_context_cl(tu_ctx), &err);
    assert_int_equal(err, CL_SUCCESS);
    cl_event none[1] = {NULL};
    cl_event out = u; /* must be set to NULL on refusal */
    const clg_events bad[] = {
        {1, NULL, &out}, /* a count without a list */
        {0, &u, &out},   /* a list without a count */
        {1, none, &out}, /* a NULL event in the list */
    };
    float host[N];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        out = u;
        assert_int_equal(clg_step(m, NULL, 1.0f, NULL, &bad[i]), CLG_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(clg_last_error(tu_ctx), "clg_step: events"));
        assert_int_equal(clg_micro_step_index(m), 0);
        assert_null(out);
        assert_int_equal(clg_model_download_params(m, CLG_ALL_TENSORS, host, N, &bad[i]),
                         CLG_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(clg_last_error(tu_ctx), "clg_model_download_params: events"));
    }
    /* clg_flush checks its events before the cycle's state */
    assert_int_equal(clg_flush(m, &bad[0]), CLG_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clg_last_error(tu_ctx), "clg_flush: events"));
    clSetUserEventStatus(u, CL_COMPLETE);
    clReleaseEvent(u);
    clg_model_destroy(m);
}

/* ------------------------------------------------------------ stats */

/* A snapshot is of one moment: the device's update counter equals the
 * host's cycle count of the same moment (no update is skipped here), and
 * micro_steps = k * cycles at cycle ends. */
static void check_snapshot(const clg_stats *s, unsigned k, uint64_t host_cycles)
{
    assert_true(s->cycles_behind <= 1);
    assert_true(s->cycles + s->cycles_behind == host_cycles);
    assert_true(s->updates == s->cycles);
    assert_true(s->micro_steps == (uint64_t)k * s->cycles);
}

/* One cycle of k micro-steps on path B. */
static void one_cycle(clg_model *m, unsigned k)
{
    for (unsigned i = 0; i < k; i++)
        OK(clg_step(m, NULL, 1.0f, NULL, NULL));
}

static clg_stats stats_of(clg_model *m, int blocking)
{
    clg_stats s = clg_stats_init();
    OK(clg_model_stats(m, blocking, &s));
    return s;
}

static void test_nonblocking_stats(void **state)
{
    (void)state;
    const unsigned k = 2;
    clg_model *m = sgd_model(k);
    tu_upload_uniform_params(m, 8);
    uint64_t cycles = 0;
    unsigned behind_seen[2] = {0, 0};
    for (int u = 0; u < 20; u++) {
        one_cycle(m, k);
        clg_stats s = stats_of(m, 0);
        check_snapshot(&s, k, ++cycles);
        behind_seen[s.cycles_behind]++;
    }
    /* many cycles without a look: still at most one behind */
    for (int u = 0; u < 6; u++, cycles++)
        one_cycle(m, k);
    clg_stats s = stats_of(m, 0);
    check_snapshot(&s, k, cycles);
    /* blocking: now */
    s = stats_of(m, 1);
    assert_int_equal(s.cycles_behind, 0);
    assert_true(s.updates == cycles && s.cycles == cycles);
    print_message("non-blocking snapshots: %u current, %u one cycle behind\n", behind_seen[0],
                  behind_seen[1]);
    clg_model_destroy(m);
}

/* The gate of the queue, released by a thread after ms: a call that
 * waits for the queue returns then instead of hanging the test. */
typedef struct gate_timer {
    cl_event gate;
    long ms;
    atomic_int released;
} gate_timer;

static int release_later(void *p)
{
    gate_timer *t = p;
    sleep_ms(t->ms);
    atomic_store(&t->released, 1);
    clSetUserEventStatus(t->gate, CL_COMPLETE);
    return 0;
}

/* A non-blocking snapshot does not wait for the device: with the second
 * cycle's update held on the queue by a user event, it returns before the
 * gate opens, with the first cycle's stats (one behind); once the queue has
 * run, the read it started gives the second's without a blocking call. A
 * blocking snapshot would return only when the thread opens the gate
 * (2 s), with the current stats. */
static void test_nonblocking_stats_while_device_busy(void **state)
{
    (void)state;
    clg_model *m = sgd_model(1);
    tu_upload_uniform_params(m, 9);
    one_cycle(m, 1);
    clg_stats s = stats_of(m, 1);
    check_snapshot(&s, 1, 1);

    cl_int err;
    gate_timer t = {clCreateUserEvent(clg_context_cl(tu_ctx), &err), 2000, 0};
    assert_int_equal(err, CL_SUCCESS);
    cl_event done = NULL;
    OK(clg_step(m, NULL, 1.0f, NULL, &(clg_events){1, &t.gate, &done}));
    thrd_t th;
    assert_int_equal(thrd_create(&th, release_later, &t), thrd_success);
    s = clg_stats_init(); /* not stats_of: the thread is joined before anything fails */
    clg_status st = clg_model_stats(m, 0, &s);
    const cl_int update_status = event_status(done); /* read while the gate held */
    const int gate_was_open = atomic_load(&t.released);
    assert_int_equal(thrd_join(th, NULL), thrd_success);
    OK(st);
    if (gate_was_open)
        fail_msg("the non-blocking snapshot waited for the gated update");
    assert_int_not_equal(update_status, CL_COMPLETE);
    assert_int_equal(s.cycles_behind, 1);
    check_snapshot(&s, 1, 2);

    assert_int_equal(clWaitForEvents(1, &done), CL_SUCCESS);
    OK(clg_model_sync(m)); /* the snapshot's read, queued behind the update */
    s = stats_of(m, 0);
    assert_int_equal(s.cycles_behind, 0);
    check_snapshot(&s, 1, 2);
    clReleaseEvent(done);
    clReleaseEvent(t.gate);
    clg_model_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step_waits_for_user_event),
        cmocka_unit_test(test_two_queues),
        cmocka_unit_test(test_event_without_work_and_flush),
        cmocka_unit_test(test_bad_events),
        cmocka_unit_test(test_nonblocking_stats),
        cmocka_unit_test(test_nonblocking_stats_while_device_busy),
    };
    return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
