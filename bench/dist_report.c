/* dist_report.c - the ZeRO-1 rows of clgrad-bench --dist: their table and
 * their JSON section "dist_zero1". report_table.c and report_json.c write
 * the report's own schema (the DDP rows in "dist", unchanged); the ZeRO-1
 * rows carry what bench_dist has no field for (shards, optimizer states),
 * so they are written here, the JSON one added to the file
 * bench_write_json wrote. */
#include "dist_bench.h"
#include "json_fields.h"

#include <stdio.h>
#include <stdlib.h>

void bench_dist_print_zero1(const bench_dist_zero1 *rows, size_t n)
{
    if (!n)
        return;
    printf("\nZeRO-1 over MPI (%d ranks, model sharded as (rank, R)): communication per "
           "update, rank 0's clg_dist_counters;\n  zero1 = one cycle of k micro-steps, one "
           "reduce-scatter and one all-gather at its end; sync = k cycles of one\n  micro-step "
           "(k of each); vs ddp = zero1 / ddp comm ms of the same repetition; ms: median "
           "[min-max] of reps, interleaved\n",
           rows[0].ranks);
    printf("%-6s %3s %4s %12s %12s %12s %7s %-24s %-24s %-22s %-22s %-20s %10s %10s %10s\n", "N",
           "k", "reps", "zero1 MB/upd", "ddp MB/upd", "sync MB/upd", "bytes x", "zero1 comm ms",
           "sync comm ms", "comm x (paired)", "vs ddp (paired)", "zero1 staging ms", "states MB",
           "max MB", "whole MB");
    for (size_t i = 0; i < n; i++) {
        const bench_dist_zero1 *z = &rows[i];
        char nb[32], a[64], b[64], c[64], d[64], e[64];
        printf("%-6s %3u %4u %12.3f %12.3f %12.3f %6.2fx %-24s %-24s %-22s %-22s %-20s "
               "%10.3f %10.3f %10.3f\n",
               bench_size_text(z->n, nb, sizeof nb), z->k, z->reps, z->zero1.bytes_sent / 1e6,
               z->ddp_bytes_sent / 1e6, z->zero1.sync_bytes_sent / 1e6, z->zero1.bytes_ratio,
               bench_stat_text(z->zero1.comm_ms, a, sizeof a),
               bench_stat_text(z->zero1.sync_comm_ms, b, sizeof b),
               bench_stat_text(z->zero1.comm_ratio, c, sizeof c),
               bench_stat_text(z->vs_ddp, d, sizeof d),
               bench_stat_text(z->zero1.staging_ms, e, sizeof e), (double)z->states_rank0 / 1e6,
               (double)z->states_max / 1e6, (double)z->states_unsharded / 1e6);
    }
    printf("  (MB sent per update, as many received, agreement messages included; states = "
           "optimizer-state MB of rank 0, max = the largest rank's, whole = the unsharded "
           "DDP model's)\n");
}

/* The whole file, NUL-terminated, or NULL. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *text = NULL;
    long len = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (len >= 0 && fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)len + 1)) != NULL) {
        if (fread(text, 1, (size_t)len, f) == (size_t)len) {
            text[len] = '\0';
        } else {
            free(text);
            text = NULL;
        }
    }
    fclose(f);
    return text;
}

int bench_dist_json_add_zero1(const char *path, const bench_dist_zero1 *rows, size_t n)
{
    char *text = slurp(path);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    cJSON *section = root ? cJSON_AddArrayToObject(root, "dist_zero1") : NULL;
    for (size_t i = 0; section && i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "mode", "zero1");
        json_add_fields(o, JO_ZERO1, &rows[i]);
        cJSON_AddItemToArray(section, o);
    }
    int rc = section ? json_write_file(root, path) : -1;
    cJSON_Delete(root);
    if (rc) {
        fprintf(stderr, "clgrad-bench: --json: cannot add the ZeRO-1 rows to %s\n", path);
        return -1;
    }
    return 0;
}
