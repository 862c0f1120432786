/* report_json.c - the --json output: one object with device, stream,
 * cases, speedup, memory, launches, e2e, gemm, dist and notes (schema in
 * issue 6 and bench/README.md). Numbers are plain JSON numbers; every one is finite. */
#include "report.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

static char path_str[2][2];

/* A one-character string for a path letter (two slots: enough for one
 * object's calls, since cJSON copies the string). */
static const char *letter(char c, int slot)
{
    path_str[slot][0] = c;
    path_str[slot][1] = '\0';
    return path_str[slot];
}

/* Adds name (the median), name_min, name_max, name_q1, name_q3. */
static void add_stat(cJSON *o, const char *name, bench_stat s)
{
    char key[64];
    cJSON_AddNumberToObject(o, name, s.median);
    snprintf(key, sizeof key, "%s_min", name);
    cJSON_AddNumberToObject(o, key, s.min);
    snprintf(key, sizeof key, "%s_max", name);
    cJSON_AddNumberToObject(o, key, s.max);
    snprintf(key, sizeof key, "%s_q1", name);
    cJSON_AddNumberToObject(o, key, s.q1);
    snprintf(key, sizeof key, "%s_q3", name);
    cJSON_AddNumberToObject(o, key, s.q3);
}

static cJSON *device_json(const bench_device *d)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", d->name);
    cJSON_AddStringToObject(o, "vendor", d->vendor);
    cJSON_AddStringToObject(o, "driver", d->driver);
    cJSON_AddStringToObject(o, "platform", d->platform);
    cJSON_AddStringToObject(o, "version", d->version);
    cJSON_AddNumberToObject(o, "global_mem_bytes", (double)d->global_mem_bytes);
    cJSON_AddNumberToObject(o, "max_alloc_bytes", (double)d->max_alloc_bytes);
    cJSON_AddNumberToObject(o, "compute_units", d->compute_units);
    return o;
}

static cJSON *case_json(const bench_case *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "optimizer", c->optimizer);
    cJSON_AddStringToObject(o, "variant", bench_variant_name(c->variant));
    cJSON_AddStringToObject(o, "path", letter(c->path, 0));
    cJSON_AddStringToObject(o, "feed", letter(c->feed, 1));
    cJSON_AddBoolToObject(o, "clip", c->clip);
    cJSON_AddNumberToObject(o, "n", (double)c->n);
    cJSON_AddNumberToObject(o, "k", c->k);
    cJSON_AddNumberToObject(o, "tensors", c->tensors);
    cJSON_AddNumberToObject(o, "groups", c->groups);
    cJSON_AddNumberToObject(o, "reps", c->reps);
    add_stat(o, "micro_ms", c->micro_ms);
    add_stat(o, "update_ms", c->update_ms);
    add_stat(o, "cycle_ms", c->cycle_ms);
    cJSON_AddNumberToObject(o, "micro_bytes_per_param", c->micro_bytes);
    cJSON_AddNumberToObject(o, "update_bytes_per_param", c->update_bytes);
    cJSON_AddNumberToObject(o, "cycle_bytes_per_param", c->cycle_bytes);
    cJSON_AddNumberToObject(o, "micro_gbs", c->micro_gbs);
    cJSON_AddNumberToObject(o, "update_gbs", c->update_gbs);
    cJSON_AddNumberToObject(o, "gbs", c->gbs);
    cJSON_AddNumberToObject(o, "triad_gbs", c->triad_gbs);
    add_stat(o, "micro_frac_of_triad", c->micro_frac_reps);
    add_stat(o, "update_frac_of_triad", c->update_frac_reps);
    add_stat(o, "frac_of_triad", c->frac_reps);
    cJSON_AddNumberToObject(o, "launches_per_update", c->launches_per_update);
    cJSON_AddNumberToObject(o, "launches_per_cycle", c->launches_per_cycle);
    cJSON_AddNumberToObject(o, "host_syncs_per_update", c->host_syncs_per_update);
    return o;
}

static cJSON *speedup_json(const bench_speedup *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "optimizer", s->optimizer);
    cJSON_AddStringToObject(o, "path", letter(s->path, 0));
    cJSON_AddBoolToObject(o, "clip", s->clip);
    cJSON_AddNumberToObject(o, "n", (double)s->n);
    cJSON_AddNumberToObject(o, "k", s->k);
    cJSON_AddNumberToObject(o, "vs_unfused", s->vs_unfused);
    cJSON_AddNumberToObject(o, "vs_per_tensor", s->vs_per_tensor);
    return o;
}

static cJSON *memory_json(const bench_memory *m)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "config", m->config);
    cJSON_AddStringToObject(o, "path", m->path);
    cJSON_AddNumberToObject(o, "bytes_per_param", m->bytes_per_param);
    cJSON_AddNumberToObject(o, "params", m->params);
    cJSON_AddNumberToObject(o, "accumulators", m->accumulators);
    cJSON_AddNumberToObject(o, "states", m->states);
    cJSON_AddNumberToObject(o, "param_copy", m->param_copy);
    cJSON_AddNumberToObject(o, "grad_buffers", m->grad_buffers);
    cJSON_AddNumberToObject(o, "fixed_bytes", (double)m->fixed_bytes);
    cJSON_AddNumberToObject(o, "budget_bytes", (double)m->budget_bytes);
    cJSON_AddNumberToObject(o, "max_params_in_budget", (double)m->max_params_in_budget);
    return o;
}

static cJSON *launch_json(const bench_launch_check *l)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "optimizer", l->optimizer);
    cJSON_AddStringToObject(o, "path", letter(l->path, 0));
    cJSON_AddNumberToObject(o, "tensors_many", l->tensors_many);
    cJSON_AddNumberToObject(o, "launches_1_tensor", l->launches_1);
    cJSON_AddNumberToObject(o, "launches_many_tensors", l->launches_many);
    return o;
}

static cJSON *e2e_json(const bench_e2e *e)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "k", e->k);
    cJSON_AddNumberToObject(o, "micro_batch", e->micro_batch);
    cJSON_AddNumberToObject(o, "samples_per_s", e->samples_per_s);
    cJSON_AddNumberToObject(o, "peak_device_bytes", (double)e->peak_device_bytes);
    return o;
}

/* Builds the whole document (exposed for tests through bench_write_json). */
static cJSON *gemm_json(const bench_gemm *g)
{
    cJSON *o = cJSON_CreateObject();
    char t[2] = {0, 0};
    cJSON_AddStringToObject(o, "role", g->role);
    cJSON_AddNumberToObject(o, "m", g->m);
    cJSON_AddNumberToObject(o, "n", g->n);
    cJSON_AddNumberToObject(o, "k", g->k);
    t[0] = g->transa;
    cJSON_AddStringToObject(o, "transa", t);
    t[0] = g->transb;
    cJSON_AddStringToObject(o, "transb", t);
    cJSON_AddNumberToObject(o, "count", g->count);
    cJSON_AddStringToObject(o, "kernel_default", g->kernel_default);
    cJSON_AddStringToObject(o, "kernel_tuned", g->kernel_tuned);
    add_stat(o, "ms_default", g->ms_default);
    add_stat(o, "ms_tuned", g->ms_tuned);
    cJSON_AddNumberToObject(o, "gflops_default", g->gflops_default);
    cJSON_AddNumberToObject(o, "gflops_tuned", g->gflops_tuned);
    cJSON_AddNumberToObject(o, "speedup", g->speedup);
    cJSON_AddNumberToObject(o, "gflops_triad_bound", g->gflops_triad_bound);
    return o;
}

static cJSON *dist_json(const bench_dist *d)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "mode", d->mode);
    cJSON_AddNumberToObject(o, "ranks", d->ranks);
    cJSON_AddNumberToObject(o, "n", (double)d->n);
    cJSON_AddNumberToObject(o, "k", d->k);
    cJSON_AddNumberToObject(o, "tensors", d->tensors);
    cJSON_AddNumberToObject(o, "reps", d->reps);
    cJSON_AddNumberToObject(o, "model_bytes_per_update", d->model_bytes);
    cJSON_AddNumberToObject(o, "ddp_bytes_sent_per_update", d->ddp_bytes_sent);
    cJSON_AddNumberToObject(o, "ddp_bytes_received_per_update", d->ddp_bytes_received);
    cJSON_AddNumberToObject(o, "sync_bytes_sent_per_update", d->sync_bytes_sent);
    cJSON_AddNumberToObject(o, "sync_bytes_received_per_update", d->sync_bytes_received);
    cJSON_AddNumberToObject(o, "bytes_ratio", d->bytes_ratio);
    add_stat(o, "ddp_comm_ms", d->ddp_comm_ms);
    add_stat(o, "sync_comm_ms", d->sync_comm_ms);
    add_stat(o, "comm_ratio", d->comm_ratio);
    add_stat(o, "ddp_staging_ms", d->ddp_staging_ms);
    add_stat(o, "sync_staging_ms", d->sync_staging_ms);
    add_stat(o, "ddp_update_ms", d->ddp_update_ms);
    add_stat(o, "sync_update_ms", d->sync_update_ms);
    return o;
}

static cJSON *report_json(const bench_report *r)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "tool", "clgrad-bench");
    cJSON_AddNumberToObject(root, "schema_version", 1);
    cJSON_AddBoolToObject(root, "quick", r->quick);
    cJSON_AddNumberToObject(root, "k", r->k);
    cJSON_AddNumberToObject(root, "tensors", r->tensors);
    cJSON_AddNumberToObject(root, "budget_bytes", (double)r->budget_bytes);
    cJSON_AddItemToObject(root, "device", device_json(&r->device));

    cJSON *stream = cJSON_CreateObject();
    cJSON_AddNumberToObject(stream, "n", (double)r->stream_n);
    cJSON_AddNumberToObject(stream, "reps", (double)r->triad_gbs.count);
    add_stat(stream, "copy_gbs", r->copy_gbs);
    add_stat(stream, "triad_gbs", r->triad_gbs);
    cJSON_AddStringToObject(stream, "triad_form", r->triad_form);
    cJSON_AddNumberToObject(stream, "vector_width", r->stream_vw);
    cJSON_AddNumberToObject(stream, "work_group_size", (double)r->stream_local);
    cJSON_AddNumberToObject(stream, "copy_vector_width", r->copy_vw);
    cJSON_AddNumberToObject(stream, "copy_work_group_size", (double)r->copy_local);
    add_stat(stream, "triad_classic_gbs", r->triad_classic_gbs);
    cJSON_AddNumberToObject(stream, "classic_vector_width", r->classic_vw);
    cJSON_AddNumberToObject(stream, "classic_work_group_size", (double)r->classic_local);
    cJSON *sweep = cJSON_AddArrayToObject(stream, "sweep");
    for (size_t i = 0; i < r->n_sweep; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "form", r->sweep[i].form);
        cJSON_AddNumberToObject(t, "vector_width", r->sweep[i].vw);
        cJSON_AddNumberToObject(t, "work_group_size", (double)r->sweep[i].wg);
        cJSON_AddNumberToObject(t, "gbs", r->sweep[i].gbs);
        cJSON_AddItemToArray(sweep, t);
    }
    add_stat(stream, "triad_gridstride_gbs", r->triad_gridstride_gbs);
    cJSON_AddNumberToObject(stream, "gridstride_groups", r->gridstride_groups);
    cJSON_AddItemToObject(root, "stream", stream);

    cJSON *cases = cJSON_AddArrayToObject(root, "cases");
    for (size_t i = 0; i < r->n_cases; i++)
        cJSON_AddItemToArray(cases, case_json(&r->cases[i]));
    cJSON *speedup = cJSON_AddArrayToObject(root, "speedup");
    for (size_t i = 0; i < r->n_speedups; i++)
        cJSON_AddItemToArray(speedup, speedup_json(&r->speedups[i]));
    cJSON *memory = cJSON_AddArrayToObject(root, "memory");
    for (size_t i = 0; i < r->n_memory; i++)
        cJSON_AddItemToArray(memory, memory_json(&r->memory[i]));
    cJSON *launches = cJSON_AddArrayToObject(root, "launches");
    for (size_t i = 0; i < r->n_launch_checks; i++)
        cJSON_AddItemToArray(launches, launch_json(&r->launch_checks[i]));
    cJSON *e2e = cJSON_AddArrayToObject(root, "e2e");
    for (size_t i = 0; i < r->n_e2e; i++)
        cJSON_AddItemToArray(e2e, e2e_json(&r->e2e[i]));
    cJSON *gemm = cJSON_AddArrayToObject(root, "gemm");
    for (size_t i = 0; i < r->n_gemm; i++)
        cJSON_AddItemToArray(gemm, gemm_json(&r->gemm[i]));
    cJSON *dist = cJSON_AddArrayToObject(root, "dist");
    for (size_t i = 0; i < r->n_dist; i++)
        cJSON_AddItemToArray(dist, dist_json(&r->dist[i]));
    cJSON *gt = cJSON_AddObjectToObject(root, "gemm_tuning");
    cJSON_AddBoolToObject(gt, "tuned", r->gemm_tuned);
    cJSON_AddStringToObject(gt, "file", r->gemm_tuning);
    cJSON_AddNumberToObject(gt, "micro_batch", r->gemm_micro_batch);
    cJSON_AddNumberToObject(gt, "rounds", r->gemm_rounds);
    cJSON_AddNumberToObject(gt, "step_ms_default", r->gemm_step_ms_default);
    cJSON_AddNumberToObject(gt, "step_ms_tuned", r->gemm_step_ms_tuned);
    cJSON_AddNumberToObject(gt, "speedup", r->gemm_step_ms_tuned > 0
                                               ? r->gemm_step_ms_default / r->gemm_step_ms_tuned
                                               : 0.0);
    cJSON *notes = cJSON_AddArrayToObject(root, "notes");
    for (size_t i = 0; i < r->n_notes; i++)
        cJSON_AddItemToArray(notes, cJSON_CreateString(r->notes[i]));
    return root;
}

int bench_write_json(const bench_report *r, const char *path)
{
    cJSON *root = report_json(r);
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) {
        fprintf(stderr, "clgrad-bench: --json: out of memory\n");
        return -1;
    }
    FILE *f = fopen(path, "w");
    int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0)
        ok = 0;
    free(text);
    if (!ok) {
        fprintf(stderr, "clgrad-bench: cannot write %s\n", path);
        return -1;
    }
    return 0;
}
