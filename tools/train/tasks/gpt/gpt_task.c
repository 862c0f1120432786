/* gpt_task.c - the GPT task as clgrad-train runs it (task.h): its flags
 * and the core's defaults it changes (gpt_options.c), their checks, and
 * gpt_main (gpt_run.c). */
#include "gpt_options.h"
#include "gpt_run.h"
#include "task.h"

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
};
