/* tuners.h - runs one of CLBlast's tuner programs (Debian's clblast-utils:
 * clblast_tuner_xgemm, clblast_tuner_xgemm_direct) for one device and one
 * shape within a time slice, and collects every configuration it verified.
 *
 * Why the programs and their table rather than their JSON: the tuners write
 * their JSON only when they finish, and at the sizes that matter they do not
 * finish within a few minutes; every configuration they try is printed as a
 * table row as soon as it is measured ("results match" once its output
 * equals the reference). So clgrad-tune reads the rows as they come (with
 * stdout line-buffered through coreutils' stdbuf), shows progress, and stops
 * the program when its slice is over, keeping what it measured. The rows'
 * columns follow the "Parameters explored" line the tuner prints first.
 *
 * The tuners explore a random subset (-fraction F: one configuration in F,
 * CLBlast's fixed shuffle), so a run cut short still samples the whole
 * search space. */
#ifndef TUNE_TUNERS_H
#define TUNE_TUNERS_H

#include <stddef.h>

#define TUNER_MAX_PARAMS 24
#define TUNER_NAME 32

typedef struct tuner_config {
    size_t n;
    char name[TUNER_MAX_PARAMS][TUNER_NAME];
    size_t value[TUNER_MAX_PARAMS];
    double ms, gflops;
    int variation;     /* the tuner's search (1 = its first table, ...) */
} tuner_config;

typedef struct tuner_run {
    /* in */
    const char *program;     /* "clblast_tuner_xgemm_direct", "clblast_tuner_xgemm" */
    unsigned platform, device;
    size_t m, n, k;          /* the tuner's own (column-major) arguments */
    double fraction;         /* -fraction */
    double seconds;          /* time slice; the program is stopped at its end */
    /* out */
    tuner_config *configs;   /* verified configurations (malloc'ed) */
    size_t n_configs, cap;
    size_t rows;             /* configurations tried (including failed ones) */
    size_t total;            /* configurations in the current search */
    int variation;
    int finished;            /* the program ended on its own, status 0 */
    int stopped;             /* stopped at the end of the slice */
    double elapsed;
    char error[512];         /* why nothing could be run, "" otherwise */
} tuner_run;

/* Called after every table row (and once at the end) with the run so far. */
typedef void (*tuner_progress_fn)(void *user, const tuner_run *r);

/* Runs r->program; 0 when it ran (r->configs may still be empty: look at
 * r->n_configs), -1 with r->error when it could not be started or found. */
int tuner_run_program(tuner_run *r, tuner_progress_fn progress, void *user);

void tuner_run_free(tuner_run *r);

/* Parses one line of a tuner's output (colour codes already removed): 1 if
 * it is a verified row (stored in *c, with the columns in names[0..n)), 0
 * otherwise. Exposed for the tests. */
int tuner_parse_row(const char *line, char names[][TUNER_NAME], size_t n, tuner_config *c);

/* Sorts configurations by time, fastest first. */
void tuner_sort(tuner_config *c, size_t n);

#endif /* TUNE_TUNERS_H */
