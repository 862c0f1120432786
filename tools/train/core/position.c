/* position.c - run position as checkpoint metadata (see position.h). */
#include "position.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_FIELDS 8
static const char *const keys[N_FIELDS + 1] = {
    "train.seed",    "train.batch",       "train.n_train", "train.epoch", "train.next_batch",
    "train.updates", "train.micro_steps", "train.samples", "train.order"};
/* How the order is derived, for a reader of the file. */
static const char order_kind[] = "xoshiro256** stream per (seed, epoch), Fisher-Yates";

static uint64_t *field(train_position *p, int i)
{
    uint64_t *f[N_FIELDS] = {&p->seed,       &p->batch,   &p->n_train,     &p->epoch,
                             &p->next_batch, &p->updates, &p->micro_steps, &p->samples};
    return f[i];
}

clg_status position_save(clg_model *model, const char *path, const train_position *p,
                         const char *const *extra_keys, const char *const *extra_values,
                         size_t n_extra)
{
    return position_save_with(model, path, p, extra_keys, extra_values, n_extra, NULL, NULL);
}

clg_status position_save_with(clg_model *model, const char *path, const train_position *p,
                              const char *const *extra_keys, const char *const *extra_values,
                              size_t n_extra, position_saver save, void *user)
{
    char v[N_FIELDS][24];
    size_t n = N_FIELDS + 1 + n_extra;
    const char **all_keys = malloc(n * sizeof *all_keys);
    const char **vals = malloc(n * sizeof *vals);
    if (!all_keys || !vals) {
        free(all_keys);
        free(vals);
        return CLG_ERR_OUT_OF_HOST_MEMORY;
    }
    train_position copy = *p;
    for (int i = 0; i < N_FIELDS; i++) {
        snprintf(v[i], sizeof v[i], "%" PRIu64, *field(&copy, i));
        all_keys[i] = keys[i];
        vals[i] = v[i];
    }
    all_keys[N_FIELDS] = keys[N_FIELDS];
    vals[N_FIELDS] = order_kind;
    for (size_t i = 0; i < n_extra; i++) {
        all_keys[N_FIELDS + 1 + i] = extra_keys[i];
        vals[N_FIELDS + 1 + i] = extra_values[i];
    }
    clg_status st = save ? save(user, model, path, all_keys, vals, n)
                         : clg_checkpoint_save(model, path, all_keys, vals, n);
    free(all_keys);
    free(vals);
    return st;
}

typedef struct reader {
    train_position p;
    int have[N_FIELDS];
    clg_meta_fn other;
    void *other_user;
} reader;

static void on_meta(const char *key, const char *value, void *user)
{
    reader *r = user;
    for (int i = 0; i < N_FIELDS; i++) {
        if (strcmp(key, keys[i]) != 0)
            continue;
        char *end;
        errno = 0;
        unsigned long long x = strtoull(value, &end, 10);
        if (!errno && *value >= '0' && *value <= '9' && !*end) {
            *field(&r->p, i) = x;
            r->have[i] = 1;
        }
        return;
    }
    if (r->other)
        r->other(key, value, r->other_user);
}

int position_load(clg_model *model, const char *path, train_position *p, clg_meta_fn other,
                  void *other_user, char *err, size_t errlen)
{
    reader r;
    memset(&r, 0, sizeof r);
    r.other = other;
    r.other_user = other_user;
    clg_status st = clg_checkpoint_load(model, path, on_meta, &r);
    if (st != CLG_SUCCESS) {
        snprintf(err, errlen, "%s (%s)", clg_last_error(clg_model_context(model)),
                 clg_status_string(st));
        return -1;
    }
    for (int i = 0; i < N_FIELDS; i++) {
        if (!r.have[i]) {
            snprintf(err, errlen, "%s: not a clgrad-train checkpoint (no valid %s)", path,
                     keys[i]);
            return -1;
        }
    }
    *p = r.p;
    return 0;
}
