/* run_log.c - a run's --log, its lines as run_log.h lists them, each
 * written through jsonl_log.h the moment it is made. */
#define _POSIX_C_SOURCE 200809L
#include "run_log.h"
#include "dist.h"
#include "errmsg.h"
#include "jsonl_log.h"
#include "summary.h"
#include "task_settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct run_log {
    jsonl_log file;
    double t0; /* progress_now() at the open: the lines' "seconds" */
};

int run_logs_every_update(const run_state *r)
{
    return train_options_watch_updates(r->opt);
}

/* Wall-clock (Unix) time: a reader compares it with its own clock, e.g.
 * to see how late a line arrives. */
static double unix_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Writes j (NULL: out of memory) as a line, and deletes it. */
static int put(run_state *r, cJSON *j)
{
    char why[512];
    int rc = j ? jsonl_log_write(&r->log->file, j, why, sizeof why)
               : errmsg_set(why, sizeof why, "out of host memory");
    cJSON_Delete(j);
    return rc == 0 ? 0 : run_fail(r, "--log %s: %s", r->opt->log, why);
}

/* A line of the type with what each one carries: where the run is (the
 * count of the progress unit besides samples: the GPT's tokens), its
 * seconds since the open and the wall clock. */
static cJSON *line_of(const run_state *r, const char *type)
{
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    cJSON_AddStringToObject(j, "type", type);
    cJSON_AddNumberToObject(j, "update", (double)r->updates);
    cJSON_AddNumberToObject(j, "micro_steps", (double)r->micro_steps);
    cJSON_AddNumberToObject(j, "samples", (double)r->samples);
    if (strcmp(r->prog.unit, "samples") != 0)
        cJSON_AddNumberToObject(j, r->prog.unit, (double)r->samples * r->prog.unit_per_sample);
    cJSON_AddNumberToObject(j, "seconds", progress_now() - r->log->t0);
    cJSON_AddNumberToObject(j, "time", unix_time());
    return j;
}

/* "<unit>_per_s": this run's training rate (run_samples_per_s). */
static void add_rate(cJSON *j, const run_state *r)
{
    char name[64];
    snprintf(name, sizeof name, "%s_per_s", r->prog.unit);
    jsonl_add_number(j, name, run_samples_per_s(r) * r->prog.unit_per_sample);
}

static int read_stats(run_state *r, clg_stats *st)
{
    *st = clg_stats_init();
    clg_status cs = clg_model_stats(r->model, 1, st);
    return cs == CLG_SUCCESS ? 0 : run_fail_clg(r, "clg_model_stats", cs);
}

/* The settings checkpoints store, by name (runconfig.h), and the task's
 * own (task_settings.h) without their "train.<task>." prefix. */
static void add_settings(cJSON *j, const run_state *r, const task_settings *s)
{
    cJSON *core = cJSON_AddObjectToObject(j, "settings");
    for (int i = 0; core && i < r->config.n; i++)
        cJSON_AddStringToObject(core, r->config.items[i].name, r->config.items[i].value);
    cJSON *own = s ? cJSON_AddObjectToObject(j, "task_settings") : NULL;
    size_t prefix = s ? strlen("train.") + strlen(s->task) + 1 : 0;
    for (int i = 0; own && i < s->n; i++)
        cJSON_AddStringToObject(own, s->keys[i] + prefix, s->values[i]);
}

static cJSON *header(const run_state *r, const run_log_info *info)
{
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    cJSON_AddStringToObject(j, "type", "header");
    cJSON_AddStringToObject(j, "task", r->task);
    cJSON_AddStringToObject(j, "clgrad", clg_version());
    cJSON_AddStringToObject(j, "device", info->device);
    cJSON *tuning = cJSON_AddObjectToObject(j, "tuning");
    if (tuning) {
        cJSON_AddStringToObject(tuning, "flag", r->opt->tuning ? r->opt->tuning : "auto");
        if (info->tuning[0])
            cJSON_AddStringToObject(tuning, "file", info->tuning);
        else
            cJSON_AddNullToObject(tuning, "file"); /* CLBlast's default parameters */
    }
    cJSON_AddStringToObject(j, "unit", r->prog.unit);
    cJSON_AddNumberToObject(j, "unit_per_sample", r->prog.unit_per_sample);
    if (r->opt->resume)
        cJSON_AddStringToObject(j, "resume", r->opt->resume);
    else
        cJSON_AddNullToObject(j, "resume");
    cJSON_AddNumberToObject(j, "from_update", (double)r->updates);
    cJSON_AddNumberToObject(j, "total_updates", (double)r->total_updates);
    cJSON_AddNumberToObject(j, "batch", r->opt->batch);
    cJSON_AddNumberToObject(j, "micro_batch", r->b);
    cJSON_AddNumberToObject(j, "k", r->k);
    cJSON_AddNumberToObject(j, "ranks", r->dist ? r->dist->size : 1);
    add_settings(j, r, info->settings);
    cJSON_AddNumberToObject(j, "time", unix_time());
    return j;
}

/* Closes and frees the log; 0, or -1 with why. */
static int drop(run_state *r, char *why, size_t len)
{
    int rc = jsonl_log_close(&r->log->file, why, len);
    free(r->log);
    r->log = NULL;
    return rc;
}

int run_log_open(run_state *r, const run_log_info *info)
{
    if (!r->opt->log || !run_rank0(r))
        return 0;
    char why[1024];
    r->log = malloc(sizeof *r->log);
    if (!r->log)
        return run_fail(r, "--log: out of host memory");
    r->log->t0 = progress_now();
    if (jsonl_log_open(&r->log->file, r->opt->log, r->opt->resume != NULL, why, sizeof why)) {
        free(r->log);
        r->log = NULL;
        return run_fail(r, "--log: %s", why);
    }
    return put(r, header(r, info));
}

static int log_update(run_state *r, double loss, const clg_stats *stats)
{
    if (!r->log)
        return 0;
    const clg_stats st = *stats;
    cJSON *j = line_of(r, "update");
    if (j) {
        cJSON_AddNumberToObject(j, "epoch", (double)r->epoch + 1);
        jsonl_add_number(j, "loss", loss);
        jsonl_add_float(j, "lr", st.lr);
        jsonl_add_float(j, "grad_norm", st.grad_norm);
        jsonl_add_float(j, "loss_scale", st.loss_scale);
        cJSON_AddNumberToObject(j, "skipped", (double)st.skipped_updates);
        cJSON_AddNumberToObject(j, "train_seconds", r->train_seconds);
        add_rate(j, r);
    }
    return put(r, j);
}

int run_watch_update(run_state *r, double loss)
{
    clg_stats st;
    if (!run_logs_every_update(r))
        return 0;
    /* one read of clgrad's statistics for the --metrics row and the line */
    if (read_stats(r, &st) != 0 || run_metrics_row(r, loss, &st) != 0)
        return -1;
    return log_update(r, loss, &st);
}

int run_log_eval(run_state *r, const char *split, double loss, const double *accuracy)
{
    if (!r->log)
        return 0;
    cJSON *j = line_of(r, "eval");
    if (j) {
        cJSON_AddNumberToObject(j, "epoch", (double)r->epoch + 1); /* the pass it ends */
        cJSON_AddStringToObject(j, "split", split);
        jsonl_add_number(j, "loss", loss);
        if (accuracy)
            jsonl_add_number(j, "accuracy", *accuracy);
    }
    return put(r, j);
}

int run_log_close(run_state *r)
{
    clg_stats st;
    if (!r->log)
        return 0;
    int rc = read_stats(r, &st);
    cJSON *j = rc == 0 ? line_of(r, "end") : NULL;
    if (j) {
        cJSON_AddStringToObject(j, "status", "done");
        cJSON_AddNumberToObject(j, "skipped", (double)st.skipped_updates);
        cJSON_AddNumberToObject(j, "train_seconds", r->train_seconds);
        add_rate(j, r);
    }
    if (rc == 0)
        rc = put(r, j);
    char why[512];
    if (drop(r, why, sizeof why) != 0 && rc == 0)
        return run_fail(r, "--log %s: %s", r->opt->log, why);
    if (rc == 0)
        train_note_written("--log", r->opt->log);
    return rc;
}

void run_log_release(run_state *r)
{
    if (!r->log)
        return;
    cJSON *j = line_of(r, "end");
    if (j) {
        cJSON_AddStringToObject(j, "status", "failed");
        cJSON_AddStringToObject(j, "error", r->err ? r->err : "");
        char why[512];
        jsonl_log_write(&r->log->file, j, why, sizeof why); /* the run's own error stands */
    }
    cJSON_Delete(j);
    char why[512];
    drop(r, why, sizeof why);
}
