/* dist.c - the core's side of --dist (see dist.h). */
#include "dist.h"

#include <inttypes.h>

int run_rank0(const run_state *r)
{
    return !r->dist || r->dist->rank == 0;
}

/* The hooks with the run's --dist-timeout in force (dist_hooks.h). */
static train_dist_hooks *hooks(run_state *r)
{
    const train_options *o = r->opt;
    r->dist->timeout_s = o->given & TRAIN_GIVEN_DIST_TIMEOUT ? (double)o->dist_timeout
                                                              : TRAIN_DIST_TIMEOUT_DEFAULT;
    return r->dist;
}

int run_agree(run_state *r, int rc, unsigned *flags)
{
    if (!r->dist)
        return rc != 0 ? -1 : 0;
    return r->dist->agree(hooks(r), rc, flags, r->err, r->errlen);
}

int run_sum(run_state *r, int rc, float *s, int n)
{
    if (!r->dist)
        return rc != 0 ? -1 : 0;
    return r->dist->sum(hooks(r), rc, s, n, r->err, r->errlen);
}

int run_dist_check(run_state *r)
{
    if (!r->dist)
        return 0;
    unsigned R = (unsigned)r->dist->size, batch = r->opt->batch;
    uint64_t rb = (uint64_t)R * r->b;
    size_t n = r->order.n;
    if (n >= batch && batch % rb != 0)
        return run_fail(r,
                        "--dist: --batch %u is not a multiple of %u ranks x --micro-batch %u "
                        "= %" PRIu64 " (each rank takes an equal share of every batch)",
                        batch, R, r->b, rb);
    /* The last batch of an epoch (or the whole set when it is smaller than
     * --batch) is split too: it must split evenly across the ranks. */
    size_t last = n < batch ? n : n % batch;
    if (last && last % R != 0)
        return run_fail(r,
                        "--dist: the last batch of an epoch has %zu samples (%zu training "
                        "samples, --batch %u), which %u ranks cannot share equally; pick "
                        "--train-limit or --batch so that it is a multiple of %u",
                        last, n, batch, R, R);
    return 0;
}
