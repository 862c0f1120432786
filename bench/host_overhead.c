/* host_overhead.c - host microseconds per update: the time clg_step spends
 * on the host deciding and enqueuing a cycle's launches, not the device's.
 *
 * Each update runs on an idle queue (clFinish before it, untimed) and the
 * timer stops when the update's last clg_step returns, before the clFinish
 * that waits for the device; the work per launch is tiny (1024 params per
 * tensor), so what is timed is the host's part. The median over many
 * updates is printed per case, as wall time and as the CPU time of the
 * calling thread (which a loaded machine's preemption does not inflate);
 * run the program a few times and compare medians of runs.
 *
 * Cases: 1 tensor of 1024 params at k = 1 and k = 4, with and without
 * clipping by global norm, and 64 tensors of 1024 params; each on path B
 * (the gradients already in the accumulator: clg_step without grads, the
 * cycle end alone) and path A/C (fp32 gradient buffers: each micro-step
 * accumulates, the last one fused into the update when nothing needs the
 * norm first).
 *
 * Usage: clgrad-host-overhead [updates] (default 2000) */
#include "timing.h"

#include <clgrad_advanced.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct host_case {
    const char *name;
    size_t tensors;
    unsigned k;
    int clip;
    int grads; /* 1: path A/C (external fp32 gradients), 0: path B */
} host_case;

static const host_case cases[] = {
    {"1x1024 k=1", 1, 1, 0, 0},
    {"1x1024 k=4", 1, 4, 0, 0},
    {"1x1024 k=1 clip", 1, 1, 1, 0},
    {"1x1024 k=4 clip", 1, 4, 1, 0},
    {"64x1024 k=1", 64, 1, 0, 0},
    {"1x1024 k=1 grads", 1, 1, 0, 1},
    {"1x1024 k=4 grads", 1, 4, 0, 1},
    {"1x1024 k=1 clip grads", 1, 1, 1, 1},
    {"1x1024 k=4 clip grads", 1, 4, 1, 1},
    {"64x1024 k=1 grads", 64, 1, 0, 1},
};

enum { PARAMS = 1024, WARMUP = 50 };

static int failed(clg_context *ctx, clg_status st, const char *what)
{
    if (st == CLG_SUCCESS)
        return 0;
    fprintf(stderr, "clgrad-host-overhead: %s: %s\n", what, clg_last_error(ctx));
    return 1;
}

/* CPU time of the calling thread in microseconds. */
static double thread_cpu_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

/* The median wall and thread CPU time of one update of case hc over
 * `updates` updates. */
static int run_case(clg_context *ctx, const host_case *hc, int updates, double *median,
                    double *cpu_median, unsigned long long *launches)
{
    clg_config cfg = clg_config_init(CLG_ADAMW);
    cfg.accum_steps = hc->k;
    cfg.clip_norm = hc->clip ? 1.0f : 0.0f;
    clg_model *m = NULL;
    clg_grads *g = NULL;
    double *times = calloc((size_t)updates, sizeof *times);
    double *cpu = calloc((size_t)updates, sizeof *cpu);
    int bad = times == NULL || cpu == NULL ||
              failed(ctx, clg_model_create(ctx, &cfg, &m), "clg_model_create");
    for (size_t t = 0; !bad && t < hc->tensors; t++) {
        char name[32];
        snprintf(name, sizeof name, "t%zu", t);
        int tensor;
        bad =
            failed(ctx, clg_model_add_tensor(m, name, PARAMS, 0, &tensor), "clg_model_add_tensor");
    }
    bad = bad || failed(ctx, clg_model_finalize(m), "clg_model_finalize");
    if (!bad && hc->grads)
        bad = failed(ctx, clg_grads_create(m, CLG_FP32, &g), "clg_grads_create");
    cl_command_queue q = clg_context_queue(ctx);
    uint64_t launches_before = 0;
    for (int u = -WARMUP; !bad && u < updates; u++) {
        if (u == 0)
            launches_before = clg_context_launches(ctx);
        clFinish(q);
        double t0 = bench_now_ms(), c0 = thread_cpu_us();
        for (unsigned i = 0; !bad && i < hc->k; i++)
            bad = failed(ctx, clg_step(m, g, 1.0f, NULL, NULL), "clg_step");
        double t1 = bench_now_ms(), c1 = thread_cpu_us();
        if (u >= 0) {
            times[u] = (t1 - t0) * 1e3; /* us */
            cpu[u] = c1 - c0;
        }
    }
    clFinish(q);
    if (!bad) {
        *median = bench_summarize(times, (size_t)updates).median;
        *cpu_median = bench_summarize(cpu, (size_t)updates).median;
        *launches = (unsigned long long)(clg_context_launches(ctx) - launches_before);
    }
    clg_grads_destroy(g);
    clg_model_destroy(m);
    free(times);
    free(cpu);
    return bad;
}

int main(int argc, char **argv)
{
    int updates = argc > 1 ? atoi(argv[1]) : 2000;
    if (updates < 1) {
        fprintf(stderr, "usage: clgrad-host-overhead [updates >= 1]\n");
        return 2;
    }
    clg_context *ctx = NULL;
    if (failed(NULL, clg_context_create(&ctx, NULL), "clg_context_create"))
        return 1;
    printf("# device: %s; %d updates per case, host us per update (median): wall time and "
           "the calling thread's CPU time\n",
           clg_context_device_info(ctx)->name, updates);
    printf("%-24s %10s %10s %10s\n", "case", "wall us", "cpu us", "launches");
    int bad = 0;
    for (size_t i = 0; !bad && i < sizeof cases / sizeof cases[0]; i++) {
        double median = 0.0, cpu_median = 0.0;
        unsigned long long launches = 0;
        bad = run_case(ctx, &cases[i], updates, &median, &cpu_median, &launches);
        if (!bad)
            printf("%-24s %10.2f %10.2f %10.2f\n", cases[i].name, median, cpu_median,
                   (double)launches / (double)updates);
    }
    clg_context_destroy(ctx);
    return bad;
}
