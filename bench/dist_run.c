/* dist_run.c - clgrad-bench --dist under mpirun: MPI and a context on every
 * rank, the DDP and ZeRO-1 rows of dist_measure.c for every N and k, and
 * rank 0's table and JSON. The only file of clgrad-bench that initializes
 * MPI; main() comes here for --dist alone. */
#include "dist_bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int my_rank;
/* This rank's context once open (libclgrad-mpi records its failures on
 * it), NULL before. */
static clg_context *my_ctx;

void bench_dist_die(const char *what, clg_status st)
{
    fprintf(stderr, "clgrad-bench --dist: rank %d: %s failed: %s: %s\n", my_rank, what,
            clg_status_string(st), clg_last_error(my_ctx));
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* A context on every rank, or the same exit status on all: 77 when some
 * rank has no device (the bench's usual skip), 1 on any other failure. */
static int open_context(const bench_options *o, clg_context **ctx)
{
    clg_status st = clg_context_create(ctx, o->device);
    int mine = st == CLG_SUCCESS ? 0 : st == CLG_ERR_NO_DEVICE ? 1 : 2, worst = 0;
    if (st != CLG_SUCCESS)
        fprintf(stderr, "clgrad-bench --dist: rank %d: no device: %s: %s\n", my_rank,
                clg_status_string(st), clg_last_error(NULL));
    MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst == 0)
        return 0;
    if (*ctx)
        clg_context_destroy(*ctx);
    *ctx = NULL;
    return worst == 1 ? 77 : 1;
}

/* Where the ranks ran (MPI_Get_processor_name of each, in rank order), so
 * that a result names its machines. Collective. */
static int note_hosts(bench_report *r, int size)
{
    char name[MPI_MAX_PROCESSOR_NAME] = {0};
    int len = 0;
    MPI_Get_processor_name(name, &len);
    char *all = my_rank == 0 ? calloc((size_t)size, sizeof name) : NULL;
    if (my_rank == 0 && !all)
        return -1;
    MPI_Gather(name, (int)sizeof name, MPI_CHAR, all, (int)sizeof name, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    int rc = 0;
    if (my_rank == 0) {
        char list[400] = "";
        size_t used = 0;
        for (int i = 0; i < size && used + 1 < sizeof list; i++) {
            const char *h = all + (size_t)i * sizeof name;
            int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", h);
            used += w > 0 ? (size_t)w : 0;
        }
        rc = bench_report_note(r, "--dist: hosts of ranks 0..%d: %s", size - 1, list);
        free(all);
    }
    return rc;
}

/* Notes are at most 511 characters (report.c): the setup takes three. */
static int note_setup(bench_report *r, int size)
{
    return note_hosts(r, size) || bench_report_note(r,
                             "--dist: %d ranks, libclgrad-mpi's replicated mode (DDP) and "
                             "ZeRO-1 (each rank's model sharded as (rank, R), "
                             "CLG_DIST_ZERO1), AdamW on every model, path A, fp32 accumulator. "
                             "ddp, zero1: one cycle of k micro-steps through clg_dist_step, one "
                             "exchange at its end (DDP: the summed accumulator; ZeRO-1: a "
                             "reduce-scatter of the accumulators and an all-gather of the "
                             "updated params)",
                             size)
           || bench_report_note(r,
                                "--dist: sync (the baseline of each mode, as without no_sync): "
                                "a model with accum_steps = 1 stepped k times, i.e. k cycle "
                                "ends with k exchanges of one micro-step's gradient (and k "
                                "optimizer updates, not timed here). Bytes and comm ms: rank "
                                "0's clg_dist_counters, per update; each cycle end is preceded "
                                "by clFinish and MPI_Barrier outside the counters")
           || bench_report_note(r,
                                "--dist: the four (ddp, its sync, zero1, its sync) run in "
                                "turn, repetition r starting at the (r mod 4)-th; comm_ratio "
                                "is the median over repetitions of sync / ddp (or zero1) comm "
                                "ms of the same repetition, comm_vs_ddp of zero1 / ddp");
}

/* Rank 0's ZeRO-1 rows, beside the report's DDP rows. */
typedef struct zero1_rows {
    bench_dist_zero1 *row;
    size_t n;
} zero1_rows;

/* The DDP table, the ZeRO-1 table, then the notes (which report_table.c
 * would print right after the DDP table), and the JSON. */
static int write_out(bench_report *r, const zero1_rows *z, const char *json_path)
{
    size_t notes = r->n_notes;
    r->n_notes = 0;
    bench_print_table(r);
    r->n_notes = notes;
    bench_dist_print_zero1(z->row, z->n);
    for (size_t i = 0; i < r->n_notes; i++)
        printf("note: %s\n", r->notes[i]);
    if (!json_path)
        return 0;
    return bench_write_json(r, json_path) || bench_dist_json_add_zero1(json_path, z->row, z->n)
               ? 1
               : 0;
}

int bench_dist_main(const bench_options *o)
{
    int size = 0;
    MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "clgrad-bench: --dist needs at least 2 ranks (this run has %d): "
                        "mpirun -np R clgrad-bench --dist ...\n", size);
        MPI_Finalize();
        return 2;
    }
    clg_context *ctx = NULL;
    int rc = open_context(o, &ctx);
    if (rc) {
        MPI_Finalize();
        return rc;
    }
    my_ctx = ctx;
    if (clg_context_set_budget(ctx, o->vram) != CLG_SUCCESS)
        bench_dist_die("--vram", CLG_ERR_INVALID_ARGUMENT);
    bench_report r = {0};
    zero1_rows z = {0};
    r.dist_run = 1;
    r.quick = o->quick;
    r.k = o->dist_k[0];
    r.tensors = o->tensors;
    r.budget_bytes = o->vram;
    bench_copy_device(&r.device, clg_context_device_info(ctx));
    if (note_setup(&r, size)) /* collective (note_hosts) */
        bench_dist_die("a note", CLG_ERR_OUT_OF_HOST_MEMORY);
    for (size_t i = 0; i < o->n_sizes; i++) {
        for (size_t j = 0; j < o->n_dist_k; j++) {
            if (my_rank == 0)
                fprintf(stderr, "clgrad-bench --dist: %d ranks, N = %llu, k = %u\n", size,
                        (unsigned long long)o->sizes[i], o->dist_k[j]);
            bench_dist row;
            bench_dist_zero1 row1;
            bench_dist_measure(ctx, o, o->sizes[i], o->dist_k[j], &row, &row1);
            if (my_rank != 0)
                continue;
            bench_dist *slot = bench_report_add_dist(&r);
            bench_dist_zero1 *more = realloc(z.row, (z.n + 1) * sizeof *z.row);
            if (!slot || !more)
                bench_dist_die("a row", CLG_ERR_OUT_OF_HOST_MEMORY);
            *slot = row;
            z.row = more;
            z.row[z.n++] = row1;
        }
    }
    if (my_rank == 0)
        rc = write_out(&r, &z, o->json_path);
    free(z.row);
    bench_report_free(&r);
    my_ctx = NULL;
    clg_context_destroy(ctx);
    MPI_Finalize();
    return rc;
}
