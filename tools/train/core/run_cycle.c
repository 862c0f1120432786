/* run_cycle.c - the micro-batch b, the micro-steps k of a full batch, and
 * the length of each cycle clgrad is told (see run.h): the one owner of
 * all three, so that the tasks, --auto-micro-batch and the loops cannot
 * disagree on them. */
#include "run.h"

void run_set_micro_batch(run_state *r, unsigned b)
{
    r->b = b;
    r->k = (unsigned)order_micro_count(r->opt->batch, b);
}

size_t run_begin_cycle(run_state *r, size_t share)
{
    size_t km = order_micro_count(share, r->b);
    r->cycle_k = (unsigned)km;
    return km;
}

/* Called by clg_step (and by clg_checkpoint_load, before any cycle has
 * begun: a trainer's checkpoint is never inside a cycle, so 1 fits it). */
unsigned run_k_of_cycle(uint64_t update_index, void *user)
{
    (void)update_index;
    const run_state *r = user;
    return r->cycle_k ? r->cycle_k : 1;
}
