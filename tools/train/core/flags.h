/* flags.h - clgrad-train's flags as tables: one row per flag says how it is
 * spelled, what value it takes and in which range, its help, where the
 * parsed value goes, and whether and how the run configuration that
 * checkpoints store (runconfig.h) records it. --help, the parser, the range
 * checks and the stored configuration are all generated from the rows, so
 * that a flag is written once. The core's table is in options.c; a task
 * adds its own table (task.h). */
#ifndef TRAIN_FLAGS_H
#define TRAIN_FLAGS_H

#include "clgrad.h"

#include <stddef.h>
#include <stdint.h>

struct train_options;

/* What a stored setting's value is made of: the parsed options, the clgrad
 * configuration the run trains with, the micro-batch it trains with (after
 * --auto-micro-batch), and the training samples it uses (count, CRC-32 of
 * images and labels). opts: the options struct of the table being stored
 * (the train_options for the core's, the task's own for a task's). */
typedef struct flag_run {
    const struct train_options *o;
    const clg_config *cfg;
    unsigned micro_batch;
    uint64_t n_train;
    uint32_t data_crc;
    const void *opts;
} flag_run;

typedef enum flag_kind {
    FLAG_NONE = 0, /* no flag: a stored setting the run derives (beta1, data, ...) */
    FLAG_SWITCH,   /* no value: sets an int to 1 */
    FLAG_HELP,     /* --help (and -h): the parser returns 1 */
    FLAG_TEXT,     /* a string kept as given; '' refused as "expected <expect>" unless
                      expect is NULL */
    FLAG_UINT,     /* an integer in [lo, hi] into an unsigned or a uint64_t field */
    FLAG_FLOAT,    /* a float in [lo, hi] (lo excluded with open_lo): train_parse_float */
    FLAG_NUMBER,   /* a number in [lo, hi] into a float (the contrastive flags' wording) */
    FLAG_INTEGER,  /* an integer in [lo, hi] into an unsigned or uint64_t (same wording) */
    FLAG_CHOICE,   /* one of choices ("a|b|c", case-insensitive unless exact_case) into
                      an int-sized enum: values[i] for the i-th name */
    FLAG_CUSTOM,   /* parse() does it all */
} flag_kind;

typedef struct flag_def flag_def;
struct flag_def {
    const char *name;    /* "--batch" (NULL with FLAG_NONE) */
    const char *metavar; /* "B" in the usage line; NULL for switches */
    const char *help;    /* usage text; each '\n' continues under the first line */
    flag_kind kind;
    size_t offset, size; /* the field of the options struct the value goes to */
    double lo, hi;       /* FLAG_UINT/FLOAT/NUMBER/INTEGER: the accepted range */
    int open_lo;
    const char *choices; /* FLAG_CHOICE: "adamw|adam|sgd|lion" */
    const int *values;
    int exact_case;
    const char *expect; /* FLAG_TEXT/CHOICE: what the message says was expected
                           (NULL: CHOICE lists its names "one of a|b|c") */
    unsigned given;     /* bit set in train_options.given when parsed (core rows) */
    int (*parse)(const char *flag, const char *val, void *opts, char *err, size_t errlen);
    const char *example; /* a legal value other than the default (for the tests);
                            "" for a switch */
    const char *needs;   /* the one argument the example needs beside it
                            ("--checkpoint=c.st" for --save-every), or NULL */
    int output;          /* a file the run writes: flags_parse refuses it twice
                            (the second would silently replace the first) */

    /* The stored run configuration: stored > 0 is the setting's position
     * among the stored ones (checkpoints keep that order; messages list
     * differences in it), 0: not stored. */
    int stored;
    const char *key;    /* the setting's name ("train.config.<key>") */
    const char *label;  /* how a message names it (NULL: the flag) */
    const char *locked; /* why --override cannot accept a change, or NULL */
    const char *before; /* the value of a checkpoint saved before the setting was
                           recorded (NULL: none, a difference) */
    void (*store)(const flag_def *f, const flag_run *r, char *buf, size_t len); /* NULL:
                                     flags_store_field */
};

/* A combination refused before the run: under a condition, the flag named
 * `flag` (a core flag) may take only the values in `takes` ("fp32", "A|B":
 * names of its row's choices, or texts of a text row, which may also keep
 * its default), or, with takes
 * NULL, must keep its default (it is refused when given another value).
 * The condition is `when`, "--flag=value" (a choice row holds that value)
 * or "--flag" (the flag holds a value other than its default); NULL in a
 * task's table: the task runs. why: the reason, in the message and in
 * --help. */
typedef struct flag_limit {
    const char *when;
    const char *flag;
    const char *takes;
    const char *why;
} flag_limit;

/* A table: a task's rows (or the core's) and the text around them in
 * --help. given_offset: where the given bits of its rows go (only a table
 * whose rows have them, the core's, sets it).
 * limits: the combinations refused (--help lists them after the rows);
 * scope: what a limit without `when` is under ("--task contrastive"). */
typedef struct flag_table {
    const flag_def *rows;
    int n;
    const char *preface, *footer;
    size_t given_offset;
    const flag_limit *limits;
    int n_limits;
    const char *scope;
} flag_table;

/* Parses argv[1 .. argc) against the tables; table i writes into opts[i]
 * (which the caller set to its defaults). seen[i] (may be NULL) becomes 1
 * when a flag of table i was given. An output row given twice is refused;
 * any other flag given again takes the last value. Returns 0, 1 for
 * --help, or -1 with a message naming the flag. */
int flags_parse(int argc, char **argv, const flag_table *tables, int n_tables, void *const *opts,
                int *seen, char *err, size_t errlen);

/* Parses one value for row f into opts (as flags_parse does). */
int flags_parse_value(const flag_def *f, const char *val, void *opts, char *err, size_t errlen);

/* The i-th name of "a|b|c" into buf: 0, or -1 past the last. */
int flags_choice_at(const char *choices, int i, char *buf, size_t len);

/* The condition of limit l of table t as text: "--dist zero1" for
 * "--dist=zero1", the table's scope ("--task contrastive") for none. */
void flags_limit_condition(const flag_table *t, const flag_limit *l, char *cond, size_t len);

/* The usage text of a table into buf (preface, one line per flag with its
 * help, footer). Returns buf. */
char *flags_usage(const flag_table *t, char *buf, size_t len);

/* The limits of `limits` (the table that holds them: task, or the core's)
 * against the core's options o, with its rows `core` and its defaults
 * `dflt` (what "not given" is). 0, or -1 with the first refused
 * combination: "<flag>[ <value>]: not with <condition> (<why>)". */
int flags_check_limits(const flag_table *limits, const flag_table *core, const void *o,
                       const void *dflt, char *err, size_t errlen);

/* The row of a table for a flag or a stored key (NULL when none). */
const flag_def *flags_find(const flag_table *t, const char *name);
const flag_def *flags_find_key(const flag_table *t, const char *key);
/* The row stored at position k (1, 2, ...; NULL past the last). */
const flag_def *flags_stored_at(const flag_table *t, int k);

/* The stored value of a row whose store is NULL: the field as its kind
 * reads it (a choice's name, an integer, a float's shortest text). */
void flags_store_field(const flag_def *f, const flag_run *r, char *buf, size_t len);

/* The field of a row in an options struct, read as an unsigned integer. */
uint64_t flags_get_u64(const flag_def *f, const void *opts);

/* Parses a number for flag: the whole of s, finite, in [lo, hi] (lo
 * excluded when open_lo), and one that survives the conversion to float
 * (a non-zero value that would become 0 or a subnormal is refused). */
int train_parse_float(const char *flag, const char *s, float lo, float hi, int open_lo, float *out,
                      char *err, size_t errlen);

/* An unsigned decimal integer in [lo, hi], the whole of s. */
int flags_parse_u64(const char *flag, const char *s, uint64_t lo, uint64_t hi, uint64_t *out,
                    char *err, size_t errlen);

/* Shortest text that reads back as the same float ("0.003", not
 * "0.00300000003"): how stored settings write floats. */
void flags_format_float(char *buf, size_t len, float x);

/* A choice row's name for the value in its field ("?" when none). */
const char *flags_choice_name(const flag_def *f, int value, char *buf, size_t len);

#endif /* TRAIN_FLAGS_H */
