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

/* The activations grow with the micro-batch (the head's logits up to
 * their chunk, then not): the largest b by bisection. */
unsigned gpt_fit_micro_batch(const gpt_act_bytes *a, uint64_t avail, uint64_t fixed, unsigned cap)
{
    if (fixed >= avail)
        return 0;
    unsigned lo = 0, hi = cap; /* lo fits (0 always), hi + 1 does not */
    while (lo < hi) {
        unsigned mid = lo + (hi - lo + 1) / 2;
        if (gpt_act_total(a, mid) <= avail - fixed)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Bytes of the windows on the device (devdata), as the run uploads them:
 * from the sizes of --data's files (text or shards), none of them read. */
static int data_bytes(const train_options *o, const gpt_options *g, const gpt_shape *s,
                      uint64_t *bytes, char *err, size_t errlen)
{
    gpt_source src;
    if (gpt_source_list(o->data_dir, g->val_data, g->tokens, s->context, s->vocab, &src, err,
                        errlen) != 0)
        return -1;
    uint64_t limit[2] = {o->limit_train, o->limit_test};
    *bytes = 0;
    for (int i = 0; i < 2; i++)
        *bytes += devdata_bytes(run_limited(src.windows[i], limit[i]), src.dim);
    gpt_source_free(&src);
    return 0;
}

/* One row of the plan: clgrad's arenas for a state dtype with what the
 * run adds beside them, and the micro-batch x k that fits (b 0: none, or
 * no memory given). */
typedef struct plan_row {
    clg_dtype dtype;
    clg_model_plan p; /* total includes the gradient buffers and the copy */
    uint64_t states, other;
    unsigned b, k;
} plan_row;

static const clg_dtype plan_dtypes[] = {CLG_FP32, CLG_BF16, CLG_Q8, CLG_Q4};
enum { PLAN_ROWS = sizeof plan_dtypes / sizeof *plan_dtypes };

static int plan_rows(const train_options *o, uint64_t n, const gpt_act_bytes *a, uint64_t avail,
                     uint64_t data, plan_row *rows, char *err, size_t errlen)
{
    uint64_t beside = run_grad_buffer_bytes(o, n) + model_fp32_master_bytes(o, n);
    for (int i = 0; i < PLAN_ROWS; i++) {
        plan_row *r = &rows[i];
        clg_config cfg;
        if (train_options_clg_config(o, &cfg, err, errlen) != 0)
            return -1;
        cfg.state_dtype = r->dtype = plan_dtypes[i];
        /* as run_estimate_model: the run's length is not known here, and
         * a schedule takes no bytes */
        cfg.schedule.kind = CLG_SCHED_CONSTANT;
        r->p = clg_model_plan_init();
        clg_status st = clg_model_estimate(&cfg, n, &r->p);
        if (st != CLG_SUCCESS)
            return errmsg_set(err, errlen, "--plan: clg_model_estimate (%s states): %s",
                              clg_dtype_name(r->dtype), clg_status_string(st));
        r->p.total += beside;
        r->states = r->p.states + r->p.state_scales;
        r->other = r->p.total - r->p.params - r->p.accumulators - r->states;
        r->b = avail ? gpt_fit_micro_batch(a, avail, r->p.total + data, o->batch) : 0;
        r->k = r->b ? (o->batch + r->b - 1) / r->b : 0;
    }
    return 0;
}

static void print_text(const train_options *o, const gpt_shape *s, uint64_t n,
                       const gpt_act_bytes *a, uint64_t avail, uint64_t data, const plan_row *rows)
{
    char mem[32], per[32], fix[32], d[32], lps[32], lcap[32];
    memplan_bytes(mem, sizeof mem, avail);
    memplan_bytes(per, sizeof per, a->per_seq);
    memplan_bytes(fix, sizeof fix, a->fixed);
    memplan_bytes(d, sizeof d, data);
    memplan_bytes(lps, sizeof lps, a->logits_per_seq);
    memplan_bytes(lcap, sizeof lcap, a->logits_cap);
    printf("GPT memory plan: %u layers, %u heads, %u wide, context %u, a vocabulary of %u %s: "
           "%" PRIu64 " parameters\n",
           s->layers, s->heads, s->width, s->context, s->vocab,
           s->vocab == GPT_BYTE_VOCAB ? "bytes" : "tokens", n);
    printf("activations per sequence %" PRIu64 " B (%s) + %" PRIu64 " B (%s) once (--recompute "
           "%s); data on the device %" PRIu64 " B (%s)\n",
           a->per_seq, per, a->fixed, fix, gpt_recompute_name(s->recompute), data, d);
    printf("and the head's logits %" PRIu64 " B (%s) a sequence up to %" PRIu64 " B (%s): a "
           "chunk of %u rows\n",
           a->logits_per_seq, lps, a->logits_cap, lcap, gpt_head_chunk_rows(s));
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
    for (int i = 0; i < PLAN_ROWS; i++) {
        const plan_row *r = &rows[i];
        char fit[64] = "";
        if (avail && r->b)
            snprintf(fit, sizeof fit, "%u x %u", r->b, r->k);
        else if (avail)
            snprintf(fit, sizeof fit, "does not fit");
        printf("%-6s %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %s\n",
               clg_dtype_name(r->dtype), r->p.params, r->p.accumulators, r->states, r->other,
               r->p.total, fit);
    }
}

/* A row's fields in the JSON object: its micro-batch and k (the run's
 * --micro-batch without --memory) and the device bytes a run of them
 * needs in all. */
static void print_json_row(const train_options *o, const gpt_act_bytes *a, uint64_t avail,
                           uint64_t data, const plan_row *r)
{
    unsigned b = avail ? r->b : o->micro_batch, k = b ? (o->batch + b - 1) / b : 0;
    uint64_t total = r->p.total + data + gpt_act_total(a, b);
    printf("\"state_dtype\":\"%s\",\"params_bytes\":%" PRIu64 ",\"accumulator_bytes\":%" PRIu64
           ",\"state_bytes\":%" PRIu64 ",\"other_bytes\":%" PRIu64 ",\"model_bytes\":%" PRIu64
           ",\"micro_batch\":%u,\"k\":%u,\"fits\":%s,\"total_bytes\":%" PRIu64,
           clg_dtype_name(r->dtype), r->p.params, r->p.accumulators, r->states, r->other,
           r->p.total, b, k, avail ? (r->b ? "true" : "false") : "null", total);
}

/* The plan as one JSON object on one line: the run's --state-dtype's row
 * at the top level, every dtype's in "by_state_dtype". */
static void print_json(const train_options *o, const gpt_shape *s, uint64_t n,
                       const gpt_act_bytes *a, uint64_t avail, uint64_t data, const plan_row *rows)
{
    printf("{\"plan\":\"gpt\",\"layers\":%u,\"heads\":%u,\"width\":%u,\"context\":%u,\"vocab\":%u,"
           "\"parameters\":%" PRIu64
           ",\"recompute\":\"%s\",\"activation_bytes_per_sequence\":%" PRIu64
           ",\"fixed_bytes\":%" PRIu64 ",\"logits_bytes_per_sequence\":%" PRIu64
           ",\"logits_bytes_max\":%" PRIu64 ",\"head_rows\":%u,\"data_bytes\":%" PRIu64
           ",\"memory_bytes\":",
           s->layers, s->heads, s->width, s->context, s->vocab, n, gpt_recompute_name(s->recompute),
           a->per_seq, a->fixed, a->logits_per_seq, a->logits_cap, gpt_head_chunk_rows(s), data);
    if (avail)
        printf("%" PRIu64, avail);
    else
        printf("null");
    printf(",\"batch\":%u,", o->batch);
    const plan_row *mine = &rows[0];
    for (int i = 0; i < PLAN_ROWS; i++)
        if (rows[i].dtype == o->state_dtype)
            mine = &rows[i];
    print_json_row(o, a, avail, data, mine);
    printf(",\"by_state_dtype\":[");
    for (int i = 0; i < PLAN_ROWS; i++) {
        printf(i ? ",{" : "{");
        print_json_row(o, a, avail, data, &rows[i]);
        printf("}");
    }
    printf("]}\n");
}

int gpt_print_plan(const train_options *o, const gpt_options *g, char *err, size_t errlen)
{
    gpt_shape s = gpt_options_shape(g);
    uint64_t n = gpt_param_count(&s), data;
    if (data_bytes(o, g, &s, &data, err, errlen) != 0)
        return -1;
    data += GPT_SUMS_BYTES;
    gpt_act_bytes a = gpt_activation_bytes(&s);
    uint64_t avail = g->memory ? g->memory : o->vram;
    plan_row rows[PLAN_ROWS];
    if (plan_rows(o, n, &a, avail, data, rows, err, errlen) != 0)
        return -1;
    if (o->json)
        print_json(o, &s, n, &a, avail, data, rows);
    else
        print_text(o, &s, n, &a, avail, data, rows);
    return fflush(stdout) == 0 ? 0 : errmsg_set(err, errlen, "--plan: writing stdout failed");
}
