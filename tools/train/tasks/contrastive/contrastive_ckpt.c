/* contrastive_ckpt.c - checkpoints of a contrastive run, as the
 * classifier's (classify_loop.c): the model (with ContAccum's banks, which
 * clg_contrastive_attach put into it), the run's position (position.h), the
 * common settings (runconfig.h, "train.config.*", compared on --resume with
 * --override as usual) and this task's own ("train.contrastive.*": method,
 * temperature, embedding width, bank size, direction, augmentation;
 * task_settings.h), which a resume must match: each of them changes what
 * the saved state means. The representation cache holds nothing between
 * updates, so a checkpoint taken after an update is the whole state. */
#include "contrastive_internal.h"

void con_build_settings(con_trainer *t)
{
    const flag_run r = {.o = t->run.opt, .cfg = &t->run.cfg, .opts = t->c};
    task_settings_build(&t->settings, &con_flag_table, CONTRASTIVE_TASK_NAME, &r);
    t->run.settings = &t->settings; /* its checkpoints' (the core saves them) */
    run_build_config(&t->run);
}

int con_resume(con_trainer *t)
{
    return task_settings_resume(&t->run, &t->settings, t->res->run.overridden,
                                sizeof t->res->run.overridden);
}
