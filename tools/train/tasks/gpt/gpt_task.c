/* gpt_task.c - the GPT task as clgrad-train runs it (task.h): its flags
 * and the core's defaults it changes (gpt_options.c), their checks, and
 * gpt_main (gpt_run.c). */
#include "gpt_options.h"
#include "gpt_run.h"
#include "task.h"

#include <math.h>
#include <stdio.h>

static void defaults(void *g)
{
    gpt_options_default(g);
}

static int check(void *g, const train_options *o, char *err, size_t errlen)
{
    ((gpt_options *)g)->enabled = 1;
    return gpt_options_check(g, o, err, errlen);
}

static int run_main(const train_options *o, const void *g)
{
    return gpt_main(o, g);
}

static int run_dist(const train_options *o, const void *g, train_dist_hooks *d, char *err,
                    size_t errlen)
{
    return gpt_dist_main(o, g, d, err, errlen);
}

/* The model's GEMMs at --micro-batch (gpt_gemm_shapes: what gpt_setup
 * checks a tuning on), for clgrad-tune. */
static int gemms(const train_options *o, const void *g, task_gemms *out, char *err,
                 size_t errlen)
{
    gpt_shape s = gpt_options_shape(g);
    out->n = gpt_gemm_shapes(&s, o->micro_batch, out->shape, MLP_GEMMS_MAX);
    if (out->n > MLP_GEMMS_MAX) {
        snprintf(err, errlen, "--task gpt: %zu GEMM shapes, more than the %d a tuning holds",
                 out->n, MLP_GEMMS_MAX);
        return -1;
    }
    snprintf(out->model, sizeof out->model,
             "gpt layers %u heads %u width %u context %u micro-batch %u", s.layers, s.heads,
             s.width, s.context, o->micro_batch);
    out->tuning_task = GPT_TASK_NAME;
    out->micro_steps = (double)o->steps * ceil((double)o->batch / o->micro_batch);
    return 0;
}

const train_task gpt_task = {
    .name = GPT_TASK_NAME,
    .flags = &gpt_flag_table,
    .options_size = sizeof(gpt_options),
    .defaults = defaults,
    .wrong_task = "the GPT flags (--preset, --layers, --sample, --plan, ...) need --task gpt",
    .core_defaults = gpt_core_defaults,
    .check = check,
    .main = run_main,
    .dist_run = run_dist,
    .gemms = gemms,
    .data_files = gpt_corpus_files,
};
