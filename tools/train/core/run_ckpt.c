/* run_ckpt.c - a run's checkpoint file (see run.h): the one-writer lock
 * on --checkpoint, the save with the stored run configuration (collective
 * under --dist), and --resume's checks of the file's task and settings
 * before its state is loaded. */
#include "run.h"
#include "summary.h"
#include "file_id.h"
#include "task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int run_lock_files(run_state *r, int writes)
{
    const train_options *o = r->opt;
    if (o->checkpoint && writes &&
        writer_lock_take(&r->lock, "--checkpoint", o->checkpoint, r->err, r->errlen) != 0)
        return -1;
    /* a run continuing its own checkpoint holds the lock itself (rank 0
     * of a --dist run does, for every rank) */
    if (o->resume && !(o->checkpoint && file_same(o->checkpoint, o->resume) == 1))
        return writer_lock_check_free("--resume", o->resume, r->err, r->errlen);
    return 0;
}

/* A --dist run's save: the MPI side's collective one (libclgrad-mpi's). */
typedef struct dist_saver {
    train_dist_hooks *d;
    char msg[1024];
} dist_saver;

static clg_status save_dist(void *user, clg_model *model, const char *path,
                            const char *const *keys, const char *const *values, size_t n)
{
    (void)model;
    dist_saver *s = user;
    return s->d->save(s->d, path, keys, values, n, s->msg, sizeof s->msg);
}

int run_save(run_state *r, const char *const *keys, const char *const *values, size_t n)
{
    size_t total = (size_t)r->config.n + n;
    const char **k = malloc((total ? total : 1) * sizeof *k);
    const char **v = malloc((total ? total : 1) * sizeof *v);
    if (!k || !v) {
        free(k);
        free(v);
        return run_fail(r, "--checkpoint: out of host memory");
    }
    for (int i = 0; i < r->config.n; i++) {
        k[i] = r->config.key_ptr[i];
        v[i] = r->config.value_ptr[i];
    }
    for (size_t i = 0; i < n; i++) {
        k[r->config.n + i] = keys[i];
        v[r->config.n + i] = values[i];
    }
    train_position p = run_position(r);
    dist_saver ds = {r->dist, ""};
    const char *path = r->save_path ? r->save_path : r->opt->checkpoint;
    const char *flag = r->save_path ? "--save-initial" : "--checkpoint";
    clg_status st = position_save_with(r->model, path, &p, k, v, total,
                                       r->dist ? save_dist : NULL, &ds);
    free(k);
    free(v);
    if (st == CLG_SUCCESS) {
        train_note_written(flag, path);
        return 0;
    }
    if (r->dist)
        return run_fail(r, "%s: %s (%s)", flag, ds.msg[0] ? ds.msg : "out of memory",
                        clg_status_string(st));
    return run_fail_clg(r, flag, st);
}

/* --resume's reading of the stored settings: the core's and the task's,
 * and the task that saved the file. */
typedef struct resume_meta {
    run_config saved;
    char saved_task[64]; /* "": not recorded */
    const run_resume_task *task;
} resume_meta;

/* Whether key is a task's record of itself, "train.<task>.task". */
static int is_task_key(const char *key)
{
    static const char head[] = "train.", tail[] = ".task";
    size_t n = strlen(key), h = sizeof head - 1, t = sizeof tail - 1;
    if (n <= h + t || strncmp(key, head, h) != 0 || strcmp(key + n - t, tail) != 0)
        return 0;
    return memchr(key + h, '.', n - h - t) == NULL;
}

static void resume_on_meta(const char *key, const char *value, void *user)
{
    resume_meta *m = user;
    runconfig_add_saved(&m->saved, key, value);
    if (is_task_key(key) && !m->saved_task[0])
        snprintf(m->saved_task, sizeof m->saved_task, "%s", value);
    if (m->task && m->task->on_meta)
        m->task->on_meta(key, value, m->task->user);
}

static void resume_reset(resume_meta *m)
{
    memset(&m->saved, 0, sizeof m->saved);
    m->saved_task[0] = '\0';
    if (m->task && m->task->reset)
        m->task->reset(m->task->user);
}

/* The file is the run's task's: a task other than the default records
 * itself ("train.<task>.task"; contrastive_options.c's row "task"), so a
 * file without that key is the default task's (registry.h; unknown, and
 * not checked, where no tasks were registered: a test's own runs). */
static int check_task(run_state *r, const resume_meta *m)
{
    const char *saved = m->saved_task[0]       ? m->saved_task
                        : train_task_count() > 0 ? train_task_at(0)->name
                                                 : NULL;
    if (!r->task || !saved || !strcmp(saved, r->task))
        return 0;
    return run_fail(r, "--resume: %s is a checkpoint of --task %s, and this run is --task %s: "
                    "a checkpoint resumes only in the task that saved it", r->opt->resume, saved,
                    r->task);
}

static int resume_compare(run_state *r, resume_meta *m, char *overridden, size_t olen)
{
    if (check_task(r, m) != 0)
        return -1;
    if (m->task && m->task->compare && m->task->compare(m->task->user) != 0)
        return -1;
    return runconfig_compare(&m->saved, &r->config, r->opt->overrides, r->opt->resume,
                             overridden, olen, r->err, r->errlen);
}

int run_resume_load(run_state *r, const run_resume_task *task, char *overridden, size_t olen,
                    train_position *p)
{
    resume_meta *m = calloc(1, sizeof *m);
    if (!m)
        return run_fail(r, "out of host memory");
    m->task = task;
    resume_reset(m);
    char why[1024];
    int rc = -1;
    /* The saved task and settings first, from the file's header, verified
     * by clgrad: a run that differs is refused before the model is touched
     * (and before a load that would fail on, e.g., another optimizer's
     * state or bank size). A header that does not verify is left to
     * clg_checkpoint_load, which says what is wrong with it (as it always
     * has): nothing of it is read before. */
    if (runconfig_read_meta(r->opt->resume, resume_on_meta, m, why, sizeof why) == 0 &&
        resume_compare(r, m, overridden, olen) != 0)
        goto out;
    resume_reset(m);
    if (position_load(r->model, r->opt->resume, p, resume_on_meta, m, why, sizeof why) != 0) {
        run_fail(r, "--resume: %s", why);
        goto out;
    }
    rc = resume_compare(r, m, overridden, olen); /* what the library read is what counts */
out:
    free(m);
    return rc;
}
