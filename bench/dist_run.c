/* dist_run.c - clgrad-bench --dist under mpirun: MPI and a context on every
 * rank, the rows of dist_measure.c for every N and k, and rank 0's table and
 * JSON. The only file of clgrad-bench that initializes MPI; main() comes
 * here for --dist alone. */
#include "dist_bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int my_rank;

void bench_dist_die(const char *what, clg_status st)
{
    fprintf(stderr, "clgrad-bench --dist: rank %d: %s failed: %s: %s%s%s\n", my_rank, what,
            clg_status_string(st), clg_dist_last_error(), *clg_dist_last_error() ? " " : "",
            clg_last_error(NULL));
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

static int note_setup(bench_report *r, int size)
{
    return note_hosts(r, size) || bench_report_note(r,
                             "--dist: %d ranks, libclgrad-mpi's replicated mode (DDP), plain "
                             "SGD, path A, fp32 accumulator. ddp: one cycle of k micro-steps "
                             "through clg_dist_step, one reduction at its end. sync (the "
                             "baseline, as DDP without no_sync): a model with accum_steps = 1 "
                             "stepped k times, i.e. k cycle ends with k reductions of one "
                             "micro-step's gradient (and k optimizer updates, not timed here). "
                             "Bytes and comm ms: rank 0's clg_dist_counters, per update; each "
                             "cycle end is preceded by clFinish and MPI_Barrier outside the "
                             "counters",
                             size)
           || bench_report_note(r,
                                "--dist: repetitions alternate which of ddp and sync runs first; "
                                "comm_ratio is the median over repetitions of sync / ddp comm ms "
                                "of the same repetition");
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
    if (clg_context_set_budget(ctx, o->vram) != CLG_SUCCESS)
        bench_dist_die("--vram", CLG_ERR_INVALID_ARGUMENT);
    bench_report r = {0};
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
            bench_dist_measure(ctx, o, o->sizes[i], o->dist_k[j], &row);
            bench_dist *slot = my_rank == 0 ? bench_report_add_dist(&r) : NULL;
            if (my_rank == 0 && !slot)
                bench_dist_die("a row", CLG_ERR_OUT_OF_HOST_MEMORY);
            if (slot)
                *slot = row;
        }
    }
    if (my_rank == 0) {
        bench_print_table(&r);
        if (o->json_path && bench_write_json(&r, o->json_path))
            rc = 1;
    }
    bench_report_free(&r);
    clg_context_destroy(ctx);
    MPI_Finalize();
    return rc;
}
