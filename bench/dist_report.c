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

/* "a [b-c]" of a stat, in a fixed buffer. */
static const char *stat_str(bench_stat s, char *buf, size_t len)
{
    snprintf(buf, len, "%.4g [%.4g-%.4g]", s.median, s.min, s.max);
    return buf;
}

/* "2^e" for a power of two, else the number (as the DDP table's). */
static const char *size_str(uint64_t n, char *buf, size_t len)
{
    int e = 0;
    while (e < 63 && (1ull << e) < n)
        e++;
    if (n && (1ull << e) == n)
        snprintf(buf, len, "2^%d", e);
    else
        snprintf(buf, len, "%llu", (unsigned long long)n);
    return buf;
}

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
               size_str(z->n, nb, sizeof nb), z->k, z->reps, z->bytes_sent / 1e6,
               z->ddp_bytes_sent / 1e6, z->sync_bytes_sent / 1e6, z->bytes_ratio,
               stat_str(z->comm_ms, a, sizeof a), stat_str(z->sync_comm_ms, b, sizeof b),
               stat_str(z->comm_ratio, c, sizeof c), stat_str(z->vs_ddp, d, sizeof d),
               stat_str(z->staging_ms, e, sizeof e), (double)z->states_rank0 / 1e6,
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
