/* report_json.c - the --json output: one object with device, stream,
 * cases, speedup, memory, launches, e2e, gemm, dist and notes (schema in
 * issue 6 and bench/README.md). Numbers are plain JSON numbers; every one is finite.
 * The keys of each object are in json_schema.c (json_fields.h). */
#include "json_fields.h"
#include "report.h"

#include <stdio.h>

/* A list of the report: its object, items (a pointer member) and count. */
#define REPORT_LIST(parent, key, object, items, count)                                            \
    json_add_list(parent, key, object, items, count, sizeof *(items))

static cJSON *stream_json(const bench_report *r)
{
    cJSON *stream = cJSON_CreateObject();
    json_add_fields(stream, JO_STREAM, r);
    REPORT_LIST(stream, "sweep", JO_SWEEP, r->sweep, r->n_sweep);
    json_add_fields(stream, JO_STREAM_AFTER_SWEEP, r);
    return stream;
}

static cJSON *gemm_tuning_json(const bench_report *r)
{
    cJSON *gt = cJSON_CreateObject();
    json_add_fields(gt, JO_GEMM_TUNING, r);
    cJSON_AddNumberToObject(gt, "speedup", r->gemm_step_ms_tuned > 0
                                               ? r->gemm_step_ms_default / r->gemm_step_ms_tuned
                                               : 0.0);
    return gt;
}

/* Builds the whole document (exposed for tests through bench_write_json). */
static cJSON *report_json(const bench_report *r)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "tool", "clgrad-bench");
    cJSON_AddNumberToObject(root, "schema_version", 1);
    json_add_fields(root, JO_TOP, r);
    cJSON *device = cJSON_CreateObject();
    json_add_fields(device, JO_DEVICE, &r->device);
    cJSON_AddItemToObject(root, "device", device);
    cJSON_AddItemToObject(root, "stream", stream_json(r));
    REPORT_LIST(root, "cases", JO_CASE, r->cases, r->n_cases);
    REPORT_LIST(root, "speedup", JO_SPEEDUP, r->speedups, r->n_speedups);
    REPORT_LIST(root, "memory", JO_MEMORY, r->memory, r->n_memory);
    REPORT_LIST(root, "launches", JO_LAUNCH, r->launch_checks, r->n_launch_checks);
    REPORT_LIST(root, "e2e", JO_E2E, r->e2e, r->n_e2e);
    REPORT_LIST(root, "gemm", JO_GEMM, r->gemm, r->n_gemm);
    REPORT_LIST(root, "dist", JO_DIST, r->dist, r->n_dist);
    cJSON_AddItemToObject(root, "gemm_tuning", gemm_tuning_json(r));
    cJSON *notes = cJSON_AddArrayToObject(root, "notes");
    for (size_t i = 0; i < r->n_notes; i++)
        cJSON_AddItemToArray(notes, cJSON_CreateString(r->notes[i]));
    return root;
}

int bench_write_json(const bench_report *r, const char *path)
{
    cJSON *root = report_json(r);
    int rc = json_write_file(root, path);
    cJSON_Delete(root);
    if (rc == -2)
        fprintf(stderr, "clgrad-bench: --json: out of memory\n");
    else if (rc)
        fprintf(stderr, "clgrad-bench: cannot write %s\n", path);
    return rc ? -1 : 0;
}
