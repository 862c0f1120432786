/* json_fields.h - the JSON objects clgrad-bench writes, as data: one table
 * (json_schema.c) with a row per key, saying which object it belongs to,
 * what kind of value it is and where it sits in the object's struct, in the
 * order written. report_json.c (the report), dist_report.c (the ZeRO-1
 * rows of --dist) and fit.c (the --fit planner) write their objects from
 * it, so that a key is one row and how each kind of value is written is
 * said once (json_fields.c). */
#ifndef BENCH_JSON_FIELDS_H
#define BENCH_JSON_FIELDS_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* The objects, by the struct their values come from. */
typedef enum json_object {
    JO_DEVICE,             /* bench_device: the report's "device" */
    JO_CASE,               /* bench_case: each of "cases" */
    JO_SPEEDUP,            /* bench_speedup: each of "speedup" */
    JO_MEMORY,             /* bench_memory: each of "memory" */
    JO_LAUNCH,             /* bench_launch_check: each of "launches" */
    JO_E2E,                /* bench_e2e: each of "e2e" */
    JO_GEMM,               /* bench_gemm: each of "gemm" */
    JO_DIST,               /* bench_dist: each of "dist" */
    JO_SWEEP,              /* bench_stream_trial: each of "stream"."sweep" */
    JO_TOP,                /* bench_report, at the top (after "tool", "schema_version") */
    JO_STREAM,             /* bench_report, in "stream" before "sweep" */
    JO_STREAM_AFTER_SWEEP, /* bench_report, in "stream" after "sweep" */
    JO_GEMM_TUNING,        /* bench_report, in "gemm_tuning" before "speedup" */
    JO_ZERO1,              /* bench_dist_zero1: each of "dist_zero1", after "mode" */
    JO_FIT_ROW,            /* bench_fit_row: each of --fit's "fit" */
    JO_FIT,                /* bench_fit: --fit's top, before "optimizer" */
} json_object;

typedef enum json_kind {
    JF_TEXT,     /* char array: a string */
    JF_LETTER,   /* char: a one-letter string */
    JF_BOOL,     /* int: true or false */
    JF_INT,      /* int */
    JF_UNSIGNED, /* unsigned */
    JF_U64,      /* uint64_t */
    JF_SIZE,     /* size_t */
    JF_DOUBLE,   /* double */
    JF_STAT,     /* bench_stat: key (the median), key_min, key_max, key_q1, key_q3 */
    JF_VARIANT,  /* bench_variant: its name */
    JF_DTYPE,    /* clg_dtype: clg_dtype_name */
} json_kind;

typedef struct json_field {
    json_object object;
    const char *key;
    json_kind kind;
    size_t offset; /* of the value in the object's struct */
} json_field;

/* Every key of every object (json_schema.c). */
extern const json_field bench_json_fields[];
extern const size_t bench_json_n_fields;

/* Adds the fields of object `object` to o from rec (a struct of the
 * object's type), in the table's order. */
void json_add_fields(cJSON *o, json_object object, const void *rec);

/* An array under key in parent: count structs of item_size bytes from
 * items, each an object of `object`'s fields. */
void json_add_list(cJSON *parent, const char *key, json_object object, const void *items,
                   size_t count, size_t item_size);

/* Writes root to path as cJSON_Print's text and a newline. 0; -2 when
 * root is NULL or out of memory; -1 when the file cannot be written. No
 * message: the caller says what it was writing. */
int json_write_file(const cJSON *root, const char *path);

#endif /* BENCH_JSON_FIELDS_H */
