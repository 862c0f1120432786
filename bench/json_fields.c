/* json_fields.c - see json_fields.h. */
#include "json_fields.h"
#include "bytes_model.h"
#include "timing.h"

#include "clgrad.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* name (the median), then name_min, name_max, name_q1, name_q3. */
static void add_stat(cJSON *o, const char *name, const bench_stat *s)
{
    const char *suffix[] = {"", "_min", "_max", "_q1", "_q3"};
    const double v[] = {s->median, s->min, s->max, s->q1, s->q3};
    for (int i = 0; i < 5; i++) {
        char key[64];
        snprintf(key, sizeof key, "%s%s", name, suffix[i]);
        cJSON_AddNumberToObject(o, key, v[i]);
    }
}

/* A value that is not a string, a bool or a stat, as a JSON number. */
static double number_at(const char *at, json_kind kind)
{
    switch (kind) {
    case JF_INT:
        return *(const int *)at;
    case JF_UNSIGNED:
        return *(const unsigned *)at;
    case JF_U64:
        return (double)*(const uint64_t *)at;
    case JF_SIZE:
        return (double)*(const size_t *)at;
    default:
        return *(const double *)at;
    }
}

static void add_field(cJSON *o, const char *rec, const json_field *f)
{
    const char *at = rec + f->offset;
    char letter[2] = {*at, '\0'}; /* cJSON copies it */
    switch (f->kind) {
    case JF_TEXT:
        cJSON_AddStringToObject(o, f->key, at);
        break;
    case JF_LETTER:
        cJSON_AddStringToObject(o, f->key, letter);
        break;
    case JF_BOOL:
        cJSON_AddBoolToObject(o, f->key, *(const int *)at);
        break;
    case JF_STAT:
        add_stat(o, f->key, (const bench_stat *)at);
        break;
    case JF_VARIANT:
        cJSON_AddStringToObject(o, f->key, bench_variant_name(*(const bench_variant *)at));
        break;
    case JF_DTYPE:
        cJSON_AddStringToObject(o, f->key, clg_dtype_name(*(const clg_dtype *)at));
        break;
    default:
        cJSON_AddNumberToObject(o, f->key, number_at(at, f->kind));
        break;
    }
}

void json_add_fields(cJSON *o, json_object object, const void *rec)
{
    for (size_t i = 0; i < bench_json_n_fields; i++)
        if (bench_json_fields[i].object == object)
            add_field(o, rec, &bench_json_fields[i]);
}

void json_add_list(cJSON *parent, const char *key, json_object object, const void *items,
                   size_t count, size_t item_size)
{
    cJSON *list = cJSON_AddArrayToObject(parent, key);
    for (size_t i = 0; list && i < count; i++) {
        cJSON *o = cJSON_CreateObject();
        json_add_fields(o, object, (const char *)items + i * item_size);
        cJSON_AddItemToArray(list, o);
    }
}

int json_write_file(const cJSON *root, const char *path)
{
    char *text = root ? cJSON_Print(root) : NULL;
    if (!text)
        return -2;
    FILE *f = fopen(path, "w");
    int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0)
        ok = 0;
    free(text);
    return ok ? 0 : -1;
}
