/* test_dist_watch.c - libclgrad-mpi's watchdog (clgrad_mpi.h) on its own.
 *  - Its refusals, each with the message naming what was wrong; a refused
 *    timeout leaves the one set before (the next case runs under it).
 *  - The last rank sleeps before it joins a barrier: in no wait, it is as
 *    silent as a stopped rank. Rank 0, the lowest rank that answers, gives
 *    up after the timeout naming that rank and no other; every other
 *    waiting rank waits on (it answered rank 0's call) and completes the
 *    barrier when the sleeper comes, which then has given up nowhere.
 *    Rank 0's next wait fails at once with the same message.
 *  - Every rank waits, but rank 0 in a barrier on one communicator and the
 *    others on another: every rank answers every roll call, and every rank
 *    gives up at its second deadline, saying so (out of step).
 *  - clg_dist_create_watched with a watch on the ranks in another order
 *    fails on every rank; with a fitting one a cycle updates. */
#include "dist_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank, R;

/* The call returned want with exactly the message msg (the context-less
 * one: the watch has no model). */
static void expect(clg_status st, clg_status want, const char *msg, const char *what)
{
    if (st != want || strcmp(clg_last_error(NULL), msg) != 0)
        du_fail("%s: %s '%s', want %s '%s'", what, clg_status_string(st), clg_last_error(NULL),
                clg_status_string(want), msg);
}

static void refusals(void)
{
    clg_dist_watch *w = (clg_dist_watch *)(uintptr_t)1;
    expect(clg_dist_watch_create(MPI_COMM_WORLD, NULL), CLG_ERR_INVALID_ARGUMENT,
           "clg_dist_watch_create: out is NULL", "create, out NULL");
    expect(clg_dist_watch_create(MPI_COMM_NULL, &w), CLG_ERR_STATE,
           "clg_dist_watch_create: comm is MPI_COMM_NULL", "create on MPI_COMM_NULL");
    if (w != NULL)
        du_fail("*out not NULL after a refused create");
    expect(clg_dist_watch_set_timeout(NULL, 1), CLG_ERR_INVALID_ARGUMENT,
           "clg_dist_watch_set_timeout: watch is NULL", "set_timeout on NULL");
    DU_OK(clg_dist_watch_create(MPI_COMM_WORLD, &w));
    const double bad[] = {-1, NAN, INFINITY, 1.5e9};
    const char *shown[] = {"-1", "nan", "inf", "1.5e+09"};
    for (int i = 0; i < 4; i++) {
        char want[160];
        snprintf(want, sizeof want,
                 "clg_dist_watch_set_timeout: timeout_s %s must be 0 (none) or seconds up to "
                 "1e+09",
                 shown[i]);
        expect(clg_dist_watch_set_timeout(w, bad[i]), CLG_ERR_INVALID_ARGUMENT, want, shown[i]);
    }
    MPI_Request req = MPI_REQUEST_NULL;
    expect(clg_dist_watch_wait(NULL, &req), CLG_ERR_INVALID_ARGUMENT,
           "clg_dist_watch_wait: watch is NULL", "wait on NULL");
    expect(clg_dist_watch_wait(w, NULL), CLG_ERR_INVALID_ARGUMENT,
           "clg_dist_watch_wait: request is NULL", "wait for NULL");
    if (clg_dist_watch_expired(w) != NULL || clg_dist_watch_expired(NULL) != NULL)
        du_fail("a watch that never waited has expired");
    clg_dist_watch_destroy(w);
    clg_dist_watch_destroy(NULL);
}

/* "rank <me> waited <s> s for <rest>": the seconds, or -1 if it is not so. */
static double waited(const char *msg, int me, const char *rest)
{
    char head[32];
    double s = -1;
    int n = 0;
    snprintf(head, sizeof head, "rank %d waited ", me);
    if (!msg || strncmp(msg, head, strlen(head)) != 0 ||
        sscanf(msg + strlen(head), "%lf s for %n", &s, &n) != 1 || n == 0 ||
        strcmp(msg + strlen(head) + n, rest) != 0)
        return -1;
    return s;
}

/* Whether the ranks agree that exactly `want` of them flagged. */
static void count_everywhere(int flagged, int want, const char *what)
{
    int all = 0;
    MPI_Allreduce(&flagged, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (all != want)
        du_fail("%s: %d ranks, want %d", what, all, want);
}

static void sleeper(void)
{
    /* rank 0 gives up at ~2.5 s; another would at ~6.5 s (2 + 0.5, then 2 +
     * 2 x 0.5 + 1 more), and the sleeper comes at 4.5 s */
    const double T = 2, sleep_s = 4.5;
    clg_dist_watch *w;
    DU_OK(clg_dist_watch_create(MPI_COMM_WORLD, &w));
    DU_OK(clg_dist_watch_set_timeout(w, T));
    clg_dist_watch_set_timeout(w, -1); /* refused: T stays */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Request req;
    if (rank == R - 1)
        nanosleep(&(struct timespec){.tv_sec = 4, .tv_nsec = 500000000}, NULL);
    double t0 = MPI_Wtime();
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    clg_status st = clg_dist_watch_wait(w, &req);
    double dt = MPI_Wtime() - t0;
    const char *msg = clg_dist_watch_expired(w);
    char rest[96];
    snprintf(rest, sizeof rest, "rank %d, which does not answer (stopped or hung?)", R - 1);
    if (rank == 0) {
        double s = waited(msg, 0, rest);
        char full[512];
        snprintf(full, sizeof full, "clg_dist_watch_wait: %s", msg ? msg : "");
        if (st != CLG_ERR_IO || s < T || s > sleep_s || strcmp(clg_last_error(NULL), full) != 0)
            du_fail("the sleeper: %s '%s' (expired: '%s'), want CLG_ERR_IO 'rank 0 waited "
                    ">= %g s for %s'",
                    clg_status_string(st), clg_last_error(NULL), msg ? msg : "(none)", T, rest);
        printf("rank 0 gave up after %.2f s: %s\n", dt, msg);
        /* the watch stays expired: the next wait fails at once, the same */
        MPI_Request again;
        MPI_Ibarrier(MPI_COMM_WORLD, &again);
        double t1 = MPI_Wtime();
        st = clg_dist_watch_wait(w, &again);
        if (st != CLG_ERR_IO || MPI_Wtime() - t1 > 0.1 || strcmp(clg_last_error(NULL), full) != 0)
            du_fail("a wait after expiry: %s '%s' after %.2f s", clg_status_string(st),
                    clg_last_error(NULL), MPI_Wtime() - t1);
        MPI_Wait(&req, MPI_STATUS_IGNORE); /* the sleeper came */
        MPI_Wait(&again, MPI_STATUS_IGNORE);
    } else {
        if (st != CLG_SUCCESS || msg != NULL)
            du_fail("the sleeper: rank %d %s after %.2f s (expired: '%s'), want a complete "
                    "barrier",
                    rank, clg_status_string(st), dt, msg ? msg : "(none)");
        MPI_Request again;
        MPI_Ibarrier(MPI_COMM_WORLD, &again);
        MPI_Wait(&again, MPI_STATUS_IGNORE);
    }
    count_everywhere(msg != NULL, 1, "the sleeper: ranks that gave up");
    clg_dist_watch_destroy(w);
}

static void out_of_step(void)
{
    const double T = 1;
    MPI_Comm a, b;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    clg_dist_watch *w, *after;
    DU_OK(clg_dist_watch_create(MPI_COMM_WORLD, &w));
    DU_OK(clg_dist_watch_set_timeout(w, T));
    /* answers the others' calls while the barriers are completed below */
    DU_OK(clg_dist_watch_create(MPI_COMM_WORLD, &after));
    MPI_Request mine, theirs;
    MPI_Ibarrier(rank == 0 ? a : b, &mine);
    clg_status st = clg_dist_watch_wait(w, &mine);
    const char *msg = clg_dist_watch_expired(w);
    double s = waited(msg, rank, "an exchange that every rank answers to but that does not "
                                 "complete (the ranks are out of step?)");
    if (st != CLG_ERR_IO || s < 2 * T)
        du_fail("out of step: %s, expired '%s', want CLG_ERR_IO after >= %g s",
                clg_status_string(st), msg ? msg : "(none)", 2 * T);
    if (rank == 0)
        printf("out of step: %s\n", msg);
    /* every rank has given up (answering the calls of those still
     * waiting) before any completes the others' barrier */
    MPI_Request all;
    MPI_Ibarrier(MPI_COMM_WORLD, &all);
    DU_OK(clg_dist_watch_wait(after, &all));
    MPI_Ibarrier(rank == 0 ? b : a, &theirs);
    DU_OK(clg_dist_watch_wait(after, &theirs));
    DU_OK(clg_dist_watch_wait(after, &mine));
    count_everywhere(1, R, "out of step: ranks that gave up");
    clg_dist_watch_destroy(after);
    clg_dist_watch_destroy(w);
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
}

static void dist_under_watch(clg_context *ctx)
{
    const size_t counts[3] = {1000, 37, 24};
    clg_config c = clg_config_init(CLG_ADAMW);
    c.accum_steps = 1;
    clg_model *m = du_model(ctx, &c, counts, 3);
    MPI_Comm reversed;
    MPI_Comm_split(MPI_COMM_WORLD, 0, R - 1 - rank, &reversed);
    clg_dist_watch *w;
    DU_OK(clg_dist_watch_create(reversed, &w));
    clg_dist *d = (clg_dist *)(uintptr_t)1;
    clg_status st = clg_dist_create_watched(m, MPI_COMM_WORLD, CLG_DIST_DDP, w, &d);
    char want[256];
    snprintf(want, sizeof want,
             "clg_dist_create: rank 0 of %d failed: clg_dist_create: the watch's communicator "
             "does not hold comm's ranks (rank 0 of %d here)",
             R, R);
    const char *msg = clg_last_error(ctx);
    if (st != CLG_ERR_INVALID_ARGUMENT || d != NULL || strcmp(msg, want) != 0)
        du_fail("a watch on other ranks: %s '%s', want CLG_ERR_INVALID_ARGUMENT '%s'",
                clg_status_string(st), msg, want);
    clg_dist_watch_destroy(w);
    MPI_Comm_free(&reversed);
    DU_OK(clg_dist_watch_create(MPI_COMM_WORLD, &w));
    DU_OK(clg_dist_watch_set_timeout(w, 60));
    DU_OK(clg_dist_create_watched(m, MPI_COMM_WORLD, CLG_DIST_DDP, w, &d));
    clg_grads *g;
    DU_OK(clg_grads_create(m, CLG_FP32, &g));
    size_t n = (size_t)clg_model_param_count(m);
    float *host = malloc(n * sizeof *host);
    if (!host)
        du_fail("out of memory");
    du_gradient(host, n, 0, (unsigned)rank);
    DU_OK(clg_grads_upload(g, CLG_ALL_TENSORS, host, n, NULL));
    free(host);
    int upd = 0;
    DU_OK(clg_dist_step(d, g, 1.0f, &upd));
    const char *expired = clg_dist_watch_expired(w);
    if (upd != 1 || expired != NULL)
        du_fail("a cycle under a watch: updated %d, expired '%s'", upd,
                expired ? expired : "(none)");
    clg_dist_destroy(d); /* before the watch it borrows */
    clg_dist_watch_destroy(w);
    clg_grads_destroy(g);
    clg_model_destroy(m);
    if (rank == 0)
        printf("a watch on other ranks refused on every rank: %s\n", want);
}

int main(int argc, char **argv)
{
    clg_context *ctx = du_init(&argc, &argv, &rank, &R);
    refusals();
    sleeper();
    out_of_step();
    dist_under_watch(ctx);
    du_finish(ctx);
    return 0;
}
