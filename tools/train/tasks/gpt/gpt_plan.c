/* gpt_plan.c - --plan: the memory a GPT run needs, without a device (no
 * OpenCL call): clgrad's arenas for each optimizer-state dtype
 * (clg_model_estimate) with what the run adds beside them (clgrad's fp32
 * gradient buffers on paths A/C, the task's fp32 copy of bf16 master
 * weights: in "other" and the model total), the activations per sequence
 * at the context (gpt_activation_bytes: what gpt_create reserves) and the
 * windows on the device; from them the largest micro-batch that fits in
 * --memory (or --vram) and the micro-steps k of --batch. The run's own
 * plan (gpt_setup.c) adds up the same parts. */
#include "gpt_run_internal.h"
#include "errmsg.h"
#include "memplan.h"

#include <inttypes.h>
#include <stdio.h>

unsigned gpt_fit_micro_batch(const gpt_act_bytes *a, uint64_t avail, uint64_t fixed, unsigned cap)
{
    uint64_t need = fixed + a->fixed;
    if (need >= avail || a->per_seq == 0)
        return need < avail ? cap : 0;
    uint64_t b = (avail - need) / a->per_seq;
    return b < cap ? (unsigned)b : cap;
}

/* Bytes of the windows on the device (devdata), as the run uploads them:
 * from the sizes of the corpus's files, none of them read. */
static int data_bytes(const train_options *o, unsigned T, uint64_t *bytes, char *err, size_t errlen)
{
    path_list files = {0};
    if (gpt_corpus_files(o->data_dir, &files, err, errlen) != 0) {
        path_list_free(&files);
        return -1;
    }
    size_t n[2];
    gpt_corpus_windows(path_list_bytes(&files), T, n);
    path_list_free(&files);
    uint64_t limit[2] = {o->limit_train, o->limit_test};
    *bytes = 0;
    for (int i = 0; i < 2; i++)
        *bytes += devdata_bytes(run_limited(n[i], limit[i]), (size_t)T + 1);
    return 0;
}

int gpt_print_plan(const train_options *o, const gpt_options *g, char *err, size_t errlen)
{
    gpt_shape s = gpt_options_shape(g);
    uint64_t n = gpt_param_count(&s), data;
    if (data_bytes(o, s.context, &data, err, errlen) != 0)
        return -1;
    data += GPT_SUMS_BYTES;
    gpt_act_bytes a = gpt_activation_bytes(&s);
    uint64_t avail = g->memory ? g->memory : o->vram;
    char mem[32], per[32], fix[32], d[32];
    memplan_bytes(mem, sizeof mem, avail);
    memplan_bytes(per, sizeof per, a.per_seq);
    memplan_bytes(fix, sizeof fix, a.fixed);
    memplan_bytes(d, sizeof d, data);
    printf("GPT memory plan: %u layers, %u heads, %u wide, context %u, a vocabulary of %d bytes: "
           "%" PRIu64 " parameters\n",
           s.layers, s.heads, s.width, s.context, GPT_VOCAB, n);
    printf("activations per sequence %" PRIu64 " B (%s) + %" PRIu64 " B (%s) once; data on the "
           "device %" PRIu64 " B (%s)\n",
           a.per_seq, per, a.fixed, fix, data, d);
    /* beside clgrad's arenas, whatever the states */
    uint64_t grads = run_grad_buffer_bytes(o, n), copy = model_fp32_master_bytes(o, n);
    if (grads || copy)
        printf("with gradient buffers (paths A/C) %" PRIu64 " B and an fp32 copy of the bf16 "
               "weights %" PRIu64 " B in \"other\"\n",
               grads, copy);
    if (avail)
        printf("in %s, --batch %u sequences:\n", mem, o->batch);
    printf("%-6s %12s %12s %12s %12s %12s %s\n", "states", "params", "accumulators", "states",
           "other", "model total",
           avail ? "micro-batch x k"
                 : "(give --memory for the "
                   "micro-batch)");
    static const clg_dtype dtypes[] = {CLG_FP32, CLG_BF16, CLG_Q8, CLG_Q4};
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++) {
        clg_config cfg;
        if (train_options_clg_config(o, &cfg, err, errlen) != 0)
            return -1;
        cfg.state_dtype = dtypes[i];
        /* as run_estimate_model: the run's length is not known here, and
         * a schedule takes no bytes */
        cfg.schedule.kind = CLG_SCHED_CONSTANT;
        clg_model_plan p = clg_model_plan_init();
        clg_status st = clg_model_estimate(&cfg, n, &p);
        if (st != CLG_SUCCESS)
            return errmsg_set(err, errlen, "--plan: clg_model_estimate (%s states): %s",
                              clg_dtype_name(dtypes[i]), clg_status_string(st));
        p.total += grads + copy;
        uint64_t states = p.states + p.state_scales;
        uint64_t other = p.total - p.params - p.accumulators - states;
        char fit[64] = "";
        if (avail) {
            unsigned b = gpt_fit_micro_batch(&a, avail, p.total + data, o->batch);
            if (b)
                snprintf(fit, sizeof fit, "%u x %u", b, (o->batch + b - 1) / b);
            else
                snprintf(fit, sizeof fit, "does not fit");
        }
        printf("%-6s %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %s\n",
               clg_dtype_name(dtypes[i]), p.params, p.accumulators, states, other, p.total, fit);
    }
    return fflush(stdout) == 0 ? 0 : errmsg_set(err, errlen, "--plan: writing stdout failed");
}
