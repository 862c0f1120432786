/* contrastive_batch.c - the checks a call that consumes the current batch
 * makes (clg_contrastive_compute, clg_contrastive_bank_push): its row count
 * and that those rows of both sides were filled. Under both the contrastive
 * core and its banks, so that neither reaches into the other. */
#include "contrastive.h"

#include <string.h>

clg_status clg__con_check_filled(const clg_contrastive *c, size_t rows, const char *who)
{
    for (int s = 0; s < 2; s++) {
        if (c->n_filled[s] >= rows && memchr(c->filled[s], 0, rows) == NULL)
            continue;
        const unsigned char *z = memchr(c->filled[s], 0, rows);
        return clg__fail(c->ctx, CLG_ERR_STATE,
                         "%s: row %zu of the %s side is not filled (rows [0, %zu) of both sides "
                         "must be, by clg_contrastive_fill since the last compute's batch)",
                         who, (size_t)(z - c->filled[s]), s == CLG_SIDE_QUERY ? "query" : "key",
                         rows);
    }
    return CLG_SUCCESS;
}

clg_status clg__con_check_batch(const clg_contrastive *c, size_t rows, const clg_events *events,
                                const char *who)
{
    clg_status st =
        rows >= 1 && rows <= c->cfg.batch
            ? CLG_SUCCESS
            : clg__fail(c->ctx, CLG_ERR_INVALID_ARGUMENT,
                        "%s: rows %zu is outside 1..%zu (the batch)", who, rows, c->cfg.batch);
    if (st == CLG_SUCCESS)
        st = clg__con_check_filled(c, rows, who);
    if (st == CLG_SUCCESS)
        st = clg__events_check(c->ctx, events, who);
    if (st == CLG_SUCCESS)
        st = clg__events_wait(c->ctx, events, who);
    return st;
}
