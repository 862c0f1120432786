/* watch.c - the watchdog (clgrad_mpi.h): every wait on other ranks against
 * a deadline, and the roll call that names the ranks a wait lacks.
 *
 * Why a roll call: a collective that does not complete says nothing of
 * who is missing, and the library cannot run a heartbeat thread (the
 * caller's MPI may be initialised for one thread only). So the waits are
 * non-blocking collectives completed by MPI_Test, and between two tests a
 * waiting rank answers the calls that other ranks' expired waits sent it.
 * A rank that is itself in a wait therefore answers within microseconds;
 * one that is stopped, hung or working outside any wait does not, and the
 * rank that called names exactly those: a claim it has seen to be true,
 * not a guess from which collective stalled. Nothing is sent before a
 * deadline passes, so a healthy run exchanges what it did without a watch.
 *
 * Messages are 4 bytes, the roll call's number (an answer that arrives
 * after its call gave up is told from the answer to the current one), each
 * in a buffer of its own that stays put while its request is in flight. */
#include "dist.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Failures recorded on the model's context, and the text of an MPI error
 * or of an expired wait: here, below every file that waits. */
clg_model *clg__dist_model(const clg_dist *d)
{
    return d ? d->model : NULL;
}

clg_status clg__dist_fail(const clg_model *m, clg_status st, const char *fmt, ...)
{
    /* fmt may print the context's last message itself: format aside */
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return clg_context_fail(m ? clg_model_context(m) : NULL, st, buf);
}

const char *clg__dist_mpi_string(const clg_dist *d, int err, char *buf, size_t size)
{
    if (err == DIST_TIMED_OUT) {
        snprintf(buf, size, "%s", clg__watch_expired(d->watch));
        return buf;
    }
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(err, s, &len) != MPI_SUCCESS)
        snprintf(s, sizeof s, "MPI error %d", err);
    snprintf(buf, size, "%s", s);
    return buf;
}


#define TAG_CALL CLG_DIST_WATCH_TAG
#define TAG_ANSWER (CLG_DIST_WATCH_TAG + 1)
#define MAX_TIMEOUT 1e9

/* What passes between this rank and one other: the last call sent to it,
 * the answer heard from it (its receive stays posted until one comes), and
 * the last answer sent to its call. */
typedef struct peer {
    unsigned call, heard, answer;
    MPI_Request call_req, heard_req, answer_req;
} peer;

struct clg_dist_watch {
    MPI_Comm comm; /* the caller's, borrowed: the roll calls' tags only */
    int rank, size;
    double timeout; /* seconds; 0: none */
    unsigned calls; /* roll calls made; the current one's number */
    peer *peers;
    char expired[512]; /* "" until a wait gave up */
};

clg_status clg_dist_watch_create(MPI_Comm comm, clg_dist_watch **out)
{
    const char *who = "clg_dist_watch_create";
    if (out == NULL)
        return clg__dist_fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: out is NULL", who);
    *out = NULL;
    int init = 0;
    MPI_Initialized(&init);
    if (!init || comm == MPI_COMM_NULL)
        return clg__dist_fail(NULL, CLG_ERR_STATE, "%s: %s", who,
                              init ? "comm is MPI_COMM_NULL" : "MPI is not initialized");
    int rank = 0, size = 0;
    int err = MPI_Comm_rank(comm, &rank);
    if (err == MPI_SUCCESS)
        err = MPI_Comm_size(comm, &size);
    if (err != MPI_SUCCESS) {
        char e[256];
        return clg__dist_fail(NULL, CLG_ERR_IO, "%s: %s", who,
                              clg__dist_mpi_string(NULL, err, e, sizeof e));
    }
    clg_dist_watch *w = calloc(1, sizeof *w);
    peer *peers = calloc((size_t)size, sizeof *peers);
    if (w == NULL || peers == NULL) {
        free(w);
        free(peers);
        return clg__dist_fail(NULL, CLG_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", who);
    }
    for (int r = 0; r < size; r++)
        peers[r].call_req = peers[r].heard_req = peers[r].answer_req = MPI_REQUEST_NULL;
    *w = (clg_dist_watch){.comm = comm, .rank = rank, .size = size, .peers = peers};
    *out = w;
    return CLG_SUCCESS;
}

/* Whether *req is done (or null); *err: MPI_Test's error. */
static int settled(MPI_Request *req, int *err)
{
    int done = 1;
    if (*err == MPI_SUCCESS && *req != MPI_REQUEST_NULL)
        *err = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    return *err == MPI_SUCCESS && done;
}

void clg_dist_watch_destroy(clg_dist_watch *w)
{
    if (w == NULL)
        return;
    int in_flight = 0;
    for (int r = 0; r < w->size; r++) {
        peer *p = &w->peers[r];
        if (p->heard_req != MPI_REQUEST_NULL) { /* a receive: cancelled at once */
            MPI_Cancel(&p->heard_req);
            MPI_Wait(&p->heard_req, MPI_STATUS_IGNORE);
        }
        int err = MPI_SUCCESS;
        if (!settled(&p->call_req, &err) || !settled(&p->answer_req, &err))
            in_flight = 1;
    }
    /* A 4-byte send every MPI sends eagerly, so this is for an MPI that
     * does not: its buffer must outlive it, and only a few bytes stay. */
    if (!in_flight)
        free(w->peers);
    free(w);
}

clg_status clg_dist_watch_set_timeout(clg_dist_watch *w, double timeout_s)
{
    const char *who = "clg_dist_watch_set_timeout";
    if (w == NULL)
        return clg__dist_fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: watch is NULL", who);
    if (!(timeout_s >= 0 && timeout_s <= MAX_TIMEOUT)) /* NaN too */
        return clg__dist_fail(NULL, CLG_ERR_INVALID_ARGUMENT,
                              "%s: timeout_s %g must be 0 (none) or seconds up to %g", who,
                              timeout_s, MAX_TIMEOUT);
    w->timeout = timeout_s;
    return CLG_SUCCESS;
}

const char *clg__watch_expired(const clg_dist_watch *w)
{
    return w != NULL && w->expired[0] ? w->expired : NULL;
}

const char *clg_dist_watch_expired(const clg_dist_watch *w) { return clg__watch_expired(w); }

bool clg__watch_fits(const clg_dist_watch *w, int rank, int size)
{
    return w->rank == rank && w->size == size;
}

/* How long a roll call waits for the answers: a rank in a wait answers at
 * once, so this only has to outlast a busy machine's scheduling. */
static double grace(const clg_dist_watch *w)
{
    double g = w->timeout / 4;
    return g < 0.25 ? 0.25 : g > 5 ? 5 : g;
}

/* Answers every call that has come in with its number. A caller that has
 * not taken the last answer yet gets no second one. */
static int answer_calls(clg_dist_watch *w)
{
    for (;;) {
        int flag = 0;
        MPI_Status s;
        int err = MPI_Iprobe(MPI_ANY_SOURCE, TAG_CALL, w->comm, &flag, &s);
        if (err != MPI_SUCCESS || !flag)
            return err;
        unsigned call = 0;
        peer *p = &w->peers[s.MPI_SOURCE];
        /* the message just probed: no wait */
        err = MPI_Recv(&call, 1, MPI_UNSIGNED, s.MPI_SOURCE, TAG_CALL, w->comm,
                       MPI_STATUS_IGNORE);
        if (settled(&p->answer_req, &err)) {
            p->answer = call;
            err = MPI_Isend(&p->answer, 1, MPI_UNSIGNED, s.MPI_SOURCE, TAG_ANSWER, w->comm,
                            &p->answer_req);
        }
        if (err != MPI_SUCCESS)
            return err;
    }
}

/* Whether rank r answered the current call, taking in what it sent
 * (an answer to an earlier call: its receive is posted again). */
static int answered(clg_dist_watch *w, int r, int *err)
{
    peer *p = &w->peers[r];
    if (!settled(&p->heard_req, err))
        return 0;
    if (p->heard == w->calls)
        return 1;
    if (*err == MPI_SUCCESS)
        *err = MPI_Irecv(&p->heard, 1, MPI_UNSIGNED, r, TAG_ANSWER, w->comm, &p->heard_req);
    return 0;
}

/* Calls the roll and waits up to the grace for every other rank's answer,
 * still testing req (*done: it completed meanwhile) and answering others.
 * A rank whose last call has not even left gets no second one. */
static int roll_call(clg_dist_watch *w, MPI_Request *req, int *done)
{
    unsigned n = ++w->calls;
    int err = MPI_SUCCESS;
    for (int r = 0; r < w->size && err == MPI_SUCCESS; r++) {
        peer *p = &w->peers[r];
        if (r == w->rank)
            continue;
        if (p->heard_req == MPI_REQUEST_NULL)
            err = MPI_Irecv(&p->heard, 1, MPI_UNSIGNED, r, TAG_ANSWER, w->comm, &p->heard_req);
        if (settled(&p->call_req, &err)) {
            p->call = n;
            err = MPI_Isend(&p->call, 1, MPI_UNSIGNED, r, TAG_CALL, w->comm, &p->call_req);
        }
    }
    double end = MPI_Wtime() + grace(w);
    for (int missing = 1; err == MPI_SUCCESS && missing && MPI_Wtime() < end;) {
        err = MPI_Test(req, done, MPI_STATUS_IGNORE);
        if (err != MPI_SUCCESS || *done)
            return err;
        err = answer_calls(w);
        missing = 0;
        for (int r = 0; r < w->size; r++)
            missing += r != w->rank && !answered(w, r, &err);
    }
    return err;
}

/* Whether rank r is this one or answered the current roll call. */
static int heard_from(const clg_dist_watch *w, int r)
{
    const peer *p = &w->peers[r];
    return r == w->rank || (p->heard_req == MPI_REQUEST_NULL && p->heard == w->calls);
}

/* After a roll call: the message of a wait that gives up. silent: how
 * many ranks did not answer (0: every rank did, yet req stays pending). */
static void expire(clg_dist_watch *w, int silent, double waited)
{
    char list[384] = "";
    size_t used = 0;
    int listed = 0;
    for (int r = 0; r < w->size && used < sizeof list; r++) {
        if (heard_from(w, r))
            continue;
        listed++;
        const char *sep = listed == 1 ? "" : listed == silent ? " and " : ", ";
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%d", sep, r);
    }
    if (silent > 0)
        snprintf(w->expired, sizeof w->expired,
                 "rank %d waited %.1f s for rank%s %s, which do%s not answer (stopped or hung?)",
                 w->rank, waited, silent > 1 ? "s" : "", list, silent > 1 ? "" : "es");
    else
        snprintf(w->expired, sizeof w->expired,
                 "rank %d waited %.1f s for an exchange that every rank answers to but that "
                 "does not complete (the ranks are out of step?)",
                 w->rank, waited);
}

int clg__watch_wait(clg_dist_watch *w, MPI_Request *req)
{
    if (w->expired[0])
        return DIST_TIMED_OUT;
    const double t0 = MPI_Wtime();
    double deadline = t0 + w->timeout;
    int deferred = 0;
    for (;;) {
        int done = 0;
        int err = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (err == MPI_SUCCESS && !done)
            err = answer_calls(w);
        if (err != MPI_SUCCESS || done)
            return err;
        if (w->timeout <= 0 || MPI_Wtime() < deadline)
            continue;
        err = roll_call(w, req, &done);
        if (err != MPI_SUCCESS || done)
            return err;
        int silent = 0, lowest = w->rank; /* of the ranks that answered, and this one */
        for (int r = w->size - 1; r >= 0; r--) {
            int heard = heard_from(w, r);
            silent += !heard;
            lowest = heard && r < lowest ? r : lowest;
        }
        /* A lower rank that answered is waiting too, with its deadline at
         * most one timeout and two roll calls away: it gives up and reports,
         * this rank waits once more for that (and for the abort to reach
         * it). A wait every rank answers to gets the same second chance. */
        if (deferred || (silent > 0 && lowest == w->rank)) {
            expire(w, silent, MPI_Wtime() - t0);
            return DIST_TIMED_OUT;
        }
        deferred = 1;
        deadline = MPI_Wtime() + w->timeout + 2 * grace(w) + 1.0;
    }
}

int clg__dist_wait(const clg_dist *d, int started, MPI_Request *req)
{
    if (started != MPI_SUCCESS)
        return started;
    return d->watch ? clg__watch_wait(d->watch, req) : MPI_Wait(req, MPI_STATUS_IGNORE);
}

clg_status clg_dist_watch_wait(clg_dist_watch *w, MPI_Request *req)
{
    const char *who = "clg_dist_watch_wait";
    if (w == NULL || req == NULL)
        return clg__dist_fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: %s is NULL", who,
                              w == NULL ? "watch" : "request");
    int err = clg__watch_wait(w, req);
    char e[256];
    if (err == MPI_SUCCESS)
        return CLG_SUCCESS;
    return clg__dist_fail(NULL, CLG_ERR_IO, "%s: %s", who,
                          err == DIST_TIMED_OUT ? w->expired
                                                : clg__dist_mpi_string(NULL, err, e, sizeof e));
}
