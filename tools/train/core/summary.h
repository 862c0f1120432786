/* summary.h - the --json line of a run: a task lists its fields in order
 * (name and number or text), and json_print writes them as one object on
 * one line of stdout, the last of the run's output; and the lines every
 * task prints with a path in them. */
#ifndef TRAIN_SUMMARY_H
#define TRAIN_SUMMARY_H

#include <stddef.h>

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

/* The shape of a run's updates, from a result struct with these members
 * (train_result, con_result, gpt_result), in the order the tasks print them. */
#define JSON_RUN_SHAPE(r)                                                                          \
    JSON_NUM("micro_steps", (r)->micro_steps), JSON_NUM("samples", (r)->samples),                  \
        JSON_NUM("epochs", (r)->epochs), JSON_NUM("batch", (r)->batch),                            \
        JSON_NUM("update_samples", (r)->update_samples),                                           \
        JSON_NUM("micro_batch", (r)->micro_batch), JSON_NUM("accum_steps", (r)->accum_steps)

/* Prints the n fields as one JSON object and a newline (cJSON's
 * unformatted text). */
void json_print(const json_field *f, size_t n);

/* "clgrad-train: <err>" and a newline on stderr, err escaped
 * (errmsg_escape): a message that names a path is one line whatever the
 * path holds. */
void train_print_error(const char *err);

/* The summary's line of a resume with --override ("resumed from PATH with
 * settings overridden: LIST") on stdout, PATH escaped; nothing when none
 * was overridden. */
void train_print_resumed(const char *path, const char *overridden);

/* The files this process's run has written, one per output flag (its last
 * path): noted where each is put in place, named by the summary
 * ("wrote --checkpoint ck.st, --dump-weights w.bin"). A process runs one
 * run at a time; train_check_files starts each run's list afresh. */
void train_note_written(const char *flag, const char *path);
void train_forget_written(void);
/* The line naming them (nothing when there are none). */
void train_print_written(void);

#endif /* TRAIN_SUMMARY_H */
