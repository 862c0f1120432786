/* contrastive_task.c - the contrastive task as clgrad-train runs it
 * (task.h): its flags (contrastive_options.c), their checks and
 * contrastive_main (contrastive_run.c). */
#include "contrastive_options.h"
#include "contrastive_run.h"
#include "task.h"

static void defaults(void *c)
{
    con_options_default(c);
}

static int check(void *c, const train_options *o, char *err, size_t errlen)
{
    ((con_options *)c)->enabled = 1;
    return con_options_check(c, o, err, errlen);
}

static int run_main(const train_options *o, const void *c)
{
    return contrastive_main(o, c);
}

const train_task contrastive_task = {
    .name = CONTRASTIVE_TASK_NAME,
    .flags = &con_flag_table,
    .options_size = sizeof(con_options),
    .defaults = defaults,
    .wrong_task = "the contrastive flags (--contrastive, --temperature, ...) need --task "
                  "contrastive",
    .check = check,
    .main = run_main,
};
