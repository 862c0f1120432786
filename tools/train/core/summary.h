/* summary.h - what a run reports: the result every task shares
 * (run_result); the --json line, whose fields a task lists in order (name
 * and number or text, the shared ones in groups) and json_print writes as
 * one object on one line of stdout, the last of the run's output; and the
 * lines every task prints with a path in them. */
#ifndef TRAIN_SUMMARY_H
#define TRAIN_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

typedef struct json_field {
    const char *name;
    const char *text; /* a string field, else NULL: number */
    double number;
    int omit; /* left out of the object (a value the run did not measure) */
} json_field;

#define JSON_NUM(n, v)                                                                             \
    {                                                                                              \
        (n), NULL, (double)(v), 0                                                                  \
    }
#define JSON_STR(n, s)                                                                             \
    {                                                                                              \
        (n), (s), 0, 0                                                                             \
    }
#define JSON_NUM_IF(c, n, v)                                                                       \
    {                                                                                              \
        (n), NULL, (double)(v), !(c)                                                               \
    }

/* What every task's result reports, its member `run`: the counters, the
 * shape of the updates, the times, the memory and where it ran. The core
 * fills it (run_start, run_open_context, run_create_model,
 * run_init_params, run_result_setup, the loop, run_end: run.h, loop.h);
 * the task adds what it measures (the peak, the evaluations' time, its
 * activations). */
typedef struct run_result {
    uint64_t updates;                  /* updates taken (incl. skipped) */
    uint64_t micro_steps, samples;
    unsigned epochs;                   /* epochs started */
    unsigned batch;                    /* --batch */
    unsigned update_samples;           /* samples of a full update: --batch, or the
                                          training set when it holds fewer */
    unsigned micro_batch, accum_steps; /* final b and k (after auto halving) */
    uint64_t params;
    float lr;                          /* base lr after --lr-scale */
    double train_seconds, eval_seconds, total_seconds, samples_per_s;
    uint64_t peak_device_bytes;        /* clgrad's peak incl. reservations */
    uint64_t model_bytes;              /* clgrad's arenas and gradient buffers */
    uint64_t activation_bytes;         /* the task's activations (final b) */
    uint64_t data_bytes;               /* the data sets on the device */
    char device[128];
    char clblast_tuning[1024];         /* the tuning file CLBlast's GEMMs ran with, "" for
                                          CLBlast's defaults (--tuning) */
    char overridden[512];              /* settings --override changed on resume, "" if none */
} run_result;

#define JSON_STR_IF(c, n, s)                                                                       \
    {                                                                                              \
        (n), (s), 0, !(c)                                                                          \
    }

/* The --json fields every task has, each group in the order the tasks
 * print it (r: a run_result, o: the train_options). The shape of the
 * run's updates: */
#define JSON_RUN_SHAPE(r)                                                                          \
    JSON_NUM("micro_steps", (r)->micro_steps), JSON_NUM("samples", (r)->samples),                  \
        JSON_NUM("epochs", (r)->epochs), JSON_NUM("batch", (r)->batch),                            \
        JSON_NUM("update_samples", (r)->update_samples),                                           \
        JSON_NUM("micro_batch", (r)->micro_batch), JSON_NUM("accum_steps", (r)->accum_steps)
/* the optimizer and its base lr: */
#define JSON_RUN_OPTIMIZER(o, r)                                                                   \
    JSON_STR("optimizer", clg_optimizer_name((o)->optimizer)), JSON_NUM("lr", (r)->lr)
/* the times: */
#define JSON_RUN_SECONDS(r)                                                                        \
    JSON_NUM("train_seconds", (r)->train_seconds), JSON_NUM("eval_seconds", (r)->eval_seconds),    \
        JSON_NUM("total_seconds", (r)->total_seconds)
/* where it ran (the tuning only for a task that applies tunings, tuned): */
#define JSON_RUN_DEVICE(r, tuned)                                                                  \
    JSON_STR("device", (r)->device), JSON_STR_IF(tuned, "clblast_tuning", (r)->clblast_tuning),    \
        JSON_STR("overridden", (r)->overridden)

/* Prints the n fields as one JSON object and a newline (cJSON's
 * unformatted text). */
void json_print(const json_field *f, size_t n);

/* The end of a task's summary on stdout: with --json (json) the n fields
 * as its last line, then stdout flushed. Returns the exit status: 0, or
 * 1 when stdout could not be written. */
int train_print_json(int json, const json_field *f, size_t n);

/* "clgrad-train: <err>" and a newline on stderr, err escaped
 * (errmsg_escape): a message that names a path is one line whatever the
 * path holds. */
void train_print_error(const char *err);

/* The summary's line of a resume with --override ("resumed from PATH with
 * settings overridden: LIST") on stdout, PATH escaped; nothing when none
 * was overridden. */
void train_print_resumed(const char *path, const char *overridden);

/* The lines of a summary after the task's own: train_print_resumed of
 * --resume (resume) and r's overridden settings, then train_print_written. */
void train_print_outputs(const char *resume, const run_result *r);

/* The files this process's run has written, one per output flag (its last
 * path): noted where each is put in place, named by the summary
 * ("wrote --checkpoint ck.st, --dump-weights w.bin"). A process runs one
 * run at a time; train_check_files starts each run's list afresh. */
void train_note_written(const char *flag, const char *path);
void train_forget_written(void);
/* The line naming them (nothing when there are none). */
void train_print_written(void);

#endif /* TRAIN_SUMMARY_H */
