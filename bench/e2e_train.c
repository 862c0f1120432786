/* e2e_train.c - --e2e: clgrad-train's own training run (tools/train,
 * train_core) on Fashion-MNIST for k = 1, 2, 4, 8 micro-steps at a fixed
 * effective batch, reporting samples/s and clgrad's peak device bytes.
 * Each run gets its own context, so the bench's STREAM arrays are not in
 * its peak. */
#include "bench_main.h"

#include "dataset.h"
#include "classify_run.h"

#include <stdio.h>

int bench_e2e_section(bench_report *r, clg_context *ctx, const bench_options *o)
{
    (void)ctx;
    const unsigned batch = 256;
    const unsigned ks[] = {1, 2, 4, 8};
    const uint64_t updates = o->quick ? 10 : 60;
    char err[512];
    dataset train, test;
    if (dataset_load(DATASET_DEFAULT_DIR, "train", &train, err, sizeof err)) {
        bench_report_note(r, "--e2e: %s", err);
        return -1;
    }
    if (dataset_load(DATASET_DEFAULT_DIR, "t10k", &test, err, sizeof err)) {
        dataset_free(&train);
        bench_report_note(r, "--e2e: %s", err);
        return -1;
    }
    /* i == 0 is an untimed warm-up: the first run builds clgrad's and
     * CLBlast's kernels, which later runs find in their caches */
    for (size_t i = 0; i <= sizeof ks / sizeof ks[0]; i++) {
        int warm = i == 0;
        unsigned k = warm ? ks[0] : ks[i - 1];
        train_options opt;
        train_options_default(&opt);
        opt.device = o->device;
        opt.batch = batch;
        opt.micro_batch = batch / k;
        opt.epochs = 1;
        opt.steps = warm ? 2 : updates;
        opt.limit_train = (uint64_t)batch * updates;
        opt.limit_test = 1000;
        opt.quiet = 1;
        if (train_options_check(&opt, err, sizeof err)) {
            bench_report_note(r, "--e2e k=%u: %s", k, err);
            continue;
        }
        fprintf(stderr, "clgrad-bench: e2e k = %u (micro-batch %u, batch %u, %llu updates)%s\n",
                k, opt.micro_batch, batch, (unsigned long long)opt.steps,
                warm ? ", warm-up" : "");
        train_io io = {.train = &train, .test = &test};
        classify_result res = {0};
        if (classify_run(&opt, &io, &res, err, sizeof err)) {
            bench_report_note(r, "--e2e k=%u: %s", k, err);
            continue;
        }
        if (warm)
            continue;
        bench_e2e *e = bench_report_add_e2e(r);
        if (!e)
            break;
        e->k = res.run.accum_steps;
        e->micro_batch = res.run.micro_batch;
        e->samples_per_s = res.run.samples_per_s;
        e->peak_device_bytes = res.run.peak_device_bytes;
    }
    dataset_free(&train);
    dataset_free(&test);
    return 0;
}
