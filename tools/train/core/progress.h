/* progress.h - training progress on stderr: a bar with rate and ETA on a
 * terminal, plain lines every few seconds otherwise; silent when quiet. */
#ifndef TRAIN_PROGRESS_H
#define TRAIN_PROGRESS_H

#include <stdint.h>

typedef struct progress {
    int quiet, tty;
    uint64_t total_updates;
    double last_print;   /* wall clock of the last bar or line */
    int bar_shown;
    /* the rate's unit: "samples" (1 per sample) or the GPT's "tokens" */
    const char *unit;
    double unit_per_sample;
    /* the first update of this run, when it ended: the ETA's start (the
     * first update builds the kernels: a poor guide to the others) */
    uint64_t first_updates;
    double first_seconds;
    int have_first;
} progress;

/* Sets quiet and the total, and starts again from no update (the unit
 * stays). */
void progress_init(progress *p, int quiet, uint64_t total_updates);
/* The rate in unit, per_sample of them to a sample (progress_init keeps
 * it; the default is 1 sample). The summary's unit should be the same. */
void progress_unit(progress *p, const char *unit, double per_sample);
/* Whether progress_update would print now (so that the caller reads the
 * running loss from the device only then). */
int progress_due(const progress *p, uint64_t updates);
/* Called after each update; rate and ETA from training time only: the
 * rate over all of it (the summary's), the ETA from the updates after this
 * run's first ("ETA warming up" until there is one). */
void progress_update(progress *p, uint64_t updates, uint64_t samples, double train_seconds,
                     unsigned epoch, double loss);
/* A line on stderr (clears the bar first); printf-style. Nothing under
 * --quiet. */
void progress_log(progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same under --quiet too: a warning about something the user asked
 * for that the run does not do. */
void progress_warn(progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Clears the bar before the program prints something else. */
void progress_clear(progress *p);

/* Monotonic wall clock in seconds. */
double progress_now(void);

#endif /* TRAIN_PROGRESS_H */
