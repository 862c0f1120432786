/* main.c - clgrad-train: parses the command line once and runs the task
 * --task names (classify by default; contrastive, gpt: tasks/tasks.c) with
 * CLBlast and clgrad's gradient accumulation, under MPI with --dist; prints
 * a summary (and with --json a JSON object as the last line) on stdout,
 * progress on stderr. */
#include "errmsg.h"
#include "options.h"
#include "summary.h"
#include "task.h"
#include "tasks.h"
#include "tuning_apply.h"

#include <stdio.h>
#include <stdlib.h>

#ifdef CLGRAD_TRAIN_MPI
#include "train_mpi.h"
#include <mpi.h>
#endif

/* --dist: one rank of an mpirun job. MPI is initialised here and only
 * here: a run without --dist never calls MPI. Every rank prints its
 * failure (the same one: the run agrees on it); rank 0 alone the
 * summary (the task's dist_run). */
static int dist_main(train_options *opt, const train_task *task, const void *task_opts)
{
#ifndef CLGRAD_TRAIN_MPI
    (void)opt;
    (void)task;
    (void)task_opts;
    fputs("clgrad-train: --dist: this clgrad-train was built without MPI (it needs "
          "libclgrad-mpi: install Open MPI's libopenmpi-dev and reconfigure with "
          "meson -Dmpi=enabled)\n",
          stderr);
    return 2;
#else
    char err[4096] = "", safe[ERRMSG_ESCAPED_SIZE(4096)];
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS) {
        fputs("clgrad-train: --dist: MPI_Init failed\n", stderr);
        return 1;
    }
    train_dist_hooks d;
    if (train_mpi_open(&d, err, sizeof err) != 0) {
        fprintf(stderr, "clgrad-train: --dist: %s\n", err);
        MPI_Finalize();
        return 1;
    }
    int rank = d.rank, size = d.size;
    if (rank != 0)
        opt->quiet = 1; /* progress and the plan from rank 0 only */
    int rc = task->dist_run(opt, task_opts, &d, err, sizeof err);
    train_mpi_close(&d);
    if (rc < 0)
        fprintf(stderr, "clgrad-train (rank %d of %d): %s\n", rank, size,
                errmsg_escape(err, safe, sizeof safe));
    MPI_Finalize();
    return rc != 0 ? 1 : 0;
#endif
}

int main(int argc, char **argv)
{
    /* the builds of CLBlast's tuned programs that clgrad-tune paid for */
    tuning_share_pocl_cache();
    train_set_tasks(train_tasks, train_n_tasks);
    train_options opt;
    char err[4096] = "";
    /* every task's options, at their defaults: the command line may give
     * any task's flags (and is refused when they are not --task's) */
    void *task_opts[TRAIN_MAX_TASKS];
    int rc = train_cli_parse_all(argc, argv, &opt, task_opts, err, sizeof err);
    int status = 0;
    if (rc == 1) {
        train_cli_usage(stdout);
    } else {
        /* The files before anything else (the run checks them again). */
        if (rc == 0)
            rc = train_check_files(train_tasks[opt.task]->data_files, &opt, 1, err, sizeof err);
        const train_task *task = train_tasks[opt.task];
        if (rc == 0 && opt.dist && !task->dist_run) {
            snprintf(err, sizeof err, "--dist: not with --task %s (the MLP task only)", task->name);
            rc = -1;
        }
        if (rc != 0) {
            train_print_error(err);
            status = 2;
        } else {
            status = opt.dist ? dist_main(&opt, task, task_opts[opt.task])
                              : task->main(&opt, task_opts[opt.task]);
        }
    }
    train_cli_free(task_opts);
    return status;
}
