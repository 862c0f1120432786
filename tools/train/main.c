/* main.c - clgrad-train: trains an MLP on Fashion-MNIST with CLBlast and
 * clgrad's gradient accumulation; prints a summary (and with --json a JSON
 * object as the last line) on stdout, progress on stderr. */
#include "contrastive_run.h"
#include "options.h"
#include "outpaths.h"
#include "trainer.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef CLGRAD_TRAIN_MPI
#include "train_mpi.h"
#include <mpi.h>
#endif

static void print_json(const train_options *o, const train_result *r)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "test_accuracy", r->test_accuracy);
    cJSON_AddNumberToObject(j, "test_loss", r->test_loss);
    cJSON_AddNumberToObject(j, "train_accuracy", r->train_accuracy);
    cJSON_AddNumberToObject(j, "train_loss", r->train_loss);
    cJSON_AddNumberToObject(j, "updates", (double)r->updates);
    cJSON_AddNumberToObject(j, "skipped_updates", (double)r->skipped_updates);
    cJSON_AddNumberToObject(j, "micro_steps", (double)r->micro_steps);
    cJSON_AddNumberToObject(j, "samples", (double)r->samples);
    cJSON_AddNumberToObject(j, "epochs", r->epochs);
    cJSON_AddNumberToObject(j, "batch", r->batch);
    cJSON_AddNumberToObject(j, "update_samples", r->update_samples);
    cJSON_AddNumberToObject(j, "micro_batch", r->micro_batch);
    cJSON_AddNumberToObject(j, "accum_steps", r->accum_steps);
    cJSON_AddNumberToObject(j, "auto_halvings", r->halvings);
    cJSON_AddStringToObject(j, "optimizer", train_optimizer_name(o->optimizer));
    cJSON_AddNumberToObject(j, "lr", r->lr);
    cJSON_AddStringToObject(j, "grad_path", o->path == GRAD_PATH_A ? "A"
                                            : o->path == GRAD_PATH_B ? "B" : "C");
    cJSON_AddStringToObject(j, "grad_dtype", clg_dtype_name(o->grad_dtype));
    cJSON_AddNumberToObject(j, "params", (double)r->params);
    cJSON_AddNumberToObject(j, "samples_per_s", r->samples_per_s);
    cJSON_AddNumberToObject(j, "train_seconds", r->train_seconds);
    cJSON_AddNumberToObject(j, "total_seconds", r->total_seconds);
    cJSON_AddNumberToObject(j, "peak_device_bytes", (double)r->peak_device_bytes);
    cJSON_AddNumberToObject(j, "data_bytes", (double)r->data_bytes);
    cJSON_AddNumberToObject(j, "activation_bytes", (double)r->activation_bytes);
    cJSON_AddStringToObject(j, "device", r->device);
    cJSON_AddStringToObject(j, "clblast_tuning", r->clblast_tuning);
    cJSON_AddStringToObject(j, "overridden", r->overridden);
    char *s = cJSON_PrintUnformatted(j);
    if (s)
        printf("%s\n", s);
    free(s);
    cJSON_Delete(j);
}

static int print_summary(const train_options *opt, const train_result *res)
{
    char split[64];
    train_split_text(split, sizeof split, res->update_samples, res->micro_batch);
    printf("test accuracy %.4f (loss %.4f) after %llu updates of %u samples (%s)%s in %u "
           "epoch(s): %.1f s training, %.0f samples/s, peak device bytes %llu\n",
           res->test_accuracy, res->test_loss, (unsigned long long)res->updates,
           res->update_samples, split,
           res->update_samples < res->batch ? ", the whole training set" : "", res->epochs,
           res->train_seconds, res->samples_per_s, (unsigned long long)res->peak_device_bytes);
    if (res->overridden[0])
        printf("resumed from %s with settings overridden: %s\n", opt->resume, res->overridden);
    if (opt->json)
        print_json(opt, res);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* --dist: one rank of an mpirun job. MPI is initialised here and only
 * here: a run without --dist never calls MPI. Every rank prints its
 * failure (the same one: train_run agrees on it); rank 0 alone the
 * summary. */
static int dist_main(train_options *opt)
{
#ifndef CLGRAD_TRAIN_MPI
    (void)opt;
    fputs("clgrad-train: --dist: this clgrad-train was built without MPI (it needs "
          "libclgrad-mpi: install Open MPI's libopenmpi-dev and reconfigure with "
          "meson -Dmpi=enabled)\n",
          stderr);
    return 2;
#else
    char err[4096] = "";
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
    train_result res;
    int rc = train_run_dist(opt, NULL, &d, &res, err, sizeof err);
    train_mpi_close(&d);
    if (rc != 0)
        fprintf(stderr, "clgrad-train (rank %d of %d): %s\n", rank, size, err);
    else if (rank == 0)
        rc = print_summary(opt, &res);
    MPI_Finalize();
    return rc != 0 ? 1 : 0;
#endif
}

int main(int argc, char **argv)
{
    train_options opt;
    char err[4096] = "";
    train_options_default(&opt);
    /* --task contrastive and its flags (contrastive_options.h) first */
    con_options con;
    int rc = con_options_extract(&argc, argv, &con, err, sizeof err);
    if (rc == 0)
        rc = train_options_parse(argc, argv, &opt, err, sizeof err);
    if (rc == 1) {
        fputs(train_usage(), stdout);
        fputs(con_usage(), stdout);
        return 0;
    }
    if (rc == 0)
        rc = con_options_check(&con, &opt, err, sizeof err);
    /* The files before anything else (train_run checks them again). */
    if (rc == 0)
        rc = outpaths_check(&opt, 1, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "clgrad-train: %s\n", err);
        return 2;
    }
    if (opt.dist && con.enabled) {
        fputs("clgrad-train: --dist: not with --task contrastive (the MLP task only)\n", stderr);
        return 2;
    }
    if (opt.dist)
        return dist_main(&opt);
    if (con.enabled)
        return contrastive_main(&opt, &con);
    train_result res;
    if (train_run(&opt, NULL, &res, err, sizeof err) != 0) {
        fprintf(stderr, "clgrad-train: %s\n", err);
        return 1;
    }
    return print_summary(&opt, &res);
}
