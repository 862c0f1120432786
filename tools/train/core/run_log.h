/* run_log.h - a run's --log: JSON Lines (io/jsonl_log.h), each line
 * written whole the moment it is known, so that the file can be tailed
 * or plotted (clgrad-plot) while the run goes on and a killed run leaves
 * every finished line. Every line has a "type":
 *   header  the run's settings (the ones its checkpoints store, the
 *           task's own), device, clgrad's version, the CLBlast tuning,
 *           the unit of progress ("tokens" for the GPT, else "samples")
 *           and, after --resume, the file and the update it resumes from;
 *   update  after every update: its mean training loss and clgrad's
 *           statistics (lr, gradient norm, loss scale, skipped updates),
 *           the counters, the seconds since the log was opened and the
 *           rate in the unit;
 *   eval    after every evaluation: its split, loss and accuracy;
 *   end     the run's counters and times (status "done"), or its error
 *           (status "failed") when it stops on one.
 * A fresh run empties the file; --resume appends a new header to it.
 * Under --dist rank 0 alone writes it; every rank reads the update's sums
 * (run_logs_every_update). Each returns 0, or -1 with a message. */
#ifndef TRAIN_RUN_LOG_H
#define TRAIN_RUN_LOG_H

#include "run.h"

struct task_settings;

/* What the header says that the run's state does not hold. */
typedef struct run_log_info {
    const char *device;                   /* the device's name */
    const char *tuning;                   /* the tuning file applied; "": none */
    const struct task_settings *settings; /* the task's stored settings, or NULL */
} run_log_info;

/* Whether the run reads its loss and statistics back after every update:
 * for --metrics or --log (the same on every rank). */
int run_logs_every_update(const run_state *r);

/* Opens --log (on rank 0; nothing without the flag) and writes the
 * header: after the run's settings are built and --resume loaded. */
int run_log_open(run_state *r, const run_log_info *info);
/* After the update just done (loss: its mean training loss), with
 * --metrics or --log: clgrad's statistics read once, then the --metrics
 * row and the --log line. */
int run_watch_update(run_state *r, double loss);
/* An evaluation on split ("test", "validation"); accuracy NULL when the
 * task measures none. */
int run_log_eval(run_state *r, const char *split, double loss, const double *accuracy);
/* The "end" line, and the file closed (and named in the summary). */
int run_log_close(run_state *r);
/* At the end of the task's run, whatever happened: a log still open (the
 * run failed) gets a "failed" end line with r->err, and is closed. */
void run_log_release(run_state *r);

#endif /* TRAIN_RUN_LOG_H */
