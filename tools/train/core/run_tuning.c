/* run_tuning.c - a run's CLBlast tuning (--tuning, see run.h). */
#include "run.h"
#include "errmsg.h"
#include "tuning_apply.h"

#include <stdio.h>
#include <stdlib.h>

int run_apply_tuning(run_state *r, const char *task, const mlp_gemm_shape *shapes,
                     size_t n_shapes, char *applied, size_t size)
{
    applied[0] = '\0';
    tuning_status *ts = malloc(sizeof *ts);
    char *safe = malloc(ERRMSG_ESCAPED_SIZE(sizeof ts->message));
    if (!ts || !safe) {
        free(ts);
        free(safe);
        return run_fail(r, "out of host memory");
    }
    tuning_setup(r->ctx, r->opt->tuning, task, shapes,
                 n_shapes < MLP_GEMMS_MAX ? n_shapes : MLP_GEMMS_MAX, ts);
    if (ts->applied)
        snprintf(applied, size, "%s", ts->path);
    /* the message names a path */
    errmsg_escape(ts->message, safe, ERRMSG_ESCAPED_SIZE(sizeof ts->message));
    if (ts->warning)
        progress_warn(&r->prog, "%s\n", safe);
    else
        progress_log(&r->prog, "%s\n", safe);
    free(safe);
    free(ts);
    return 0;
}
