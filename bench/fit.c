/* fit.c - the planner's numbers and its table (see fit.h). Everything comes
 * from clg_model_estimate: AdamW (two states) for n parameters of one
 * tensor, plus one gradient buffer of the accumulator's dtype on paths A/C,
 * plus what cutting the model into buffers of the device's max allocation
 * adds (a padding of at most one 1024-element segment per buffer). */
#include "fit.h"
#include "json_fields.h"

#include <stdlib.h>
#include <string.h>

static clg_config row_config(const bench_fit_row *row)
{
    clg_config c = clg_config_init(CLG_ADAMW);
    c.state_dtype = row->state_dtype;
    c.acc_dtype = row->acc_dtype;
    c.master_dtype = row->master_dtype;
    c.param_copy_dtype = row->copy_dtype;
    return c;
}

/* The estimate of the largest of the row's shards (the whole model's for
 * one); *st: the status of a refusal. */
static uint64_t largest_shard(const bench_fit_row *row, uint64_t n, clg_status *st)
{
    clg_config c = row_config(row);
    uint64_t most = 0;
    for (unsigned i = 0; i < row->shards; i++) {
        clg_model_plan plan = clg_model_plan_init();
        *st = row->shards > 1 ? clg_model_estimate_shard(&c, n, i, row->shards, &plan)
                              : clg_model_estimate(&c, n, &plan);
        if (*st != CLG_SUCCESS)
            return UINT64_MAX;
        most = plan.total > most ? plan.total : most;
    }
    return most;
}

/* The whole state of n parameters on the fullest card (UINT64_MAX if the
 * estimate refuses). */
static uint64_t state_bytes(const bench_fit_row *row, uint64_t n, uint64_t max_alloc)
{
    clg_status st;
    uint64_t est = largest_shard(row, n, &st);
    if (est == UINT64_MAX)
        return UINT64_MAX;
    uint64_t total = est;
    uint64_t grad = strcmp(row->path, "B") ? (row->acc_dtype == CLG_BF16 ? 2 : 4) : 0;
    total += n * grad;
    /* buffers of at most max_alloc bytes of fp32: each may end in a
     * partly used segment of 1024 elements */
    uint64_t per_buffer = max_alloc / 4 / 1024 * 1024;
    uint64_t buffers = per_buffer ? (n + per_buffer - 1) / per_buffer : 1;
    if (buffers > 1 && n > 0)
        total += (buffers - 1) * 1024 * ((est + n * grad + n - 1) / n);
    return total;
}

uint64_t bench_fit_max_params(const bench_fit_row *row, uint64_t budget, uint64_t max_alloc)
{
    /* bisection over multiples of 1024: the state grows with n */
    uint64_t lo = 0, hi = budget / 1024 + 1;
    while (lo + 1 < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (state_bytes(row, mid * 1024, max_alloc) <= budget)
            lo = mid;
        else
            hi = mid;
    }
    return lo * 1024;
}

/* Most bytes per parameter first; equal ones by name, so that the order
 * does not depend on qsort's. */
static int by_bytes_desc(const void *a, const void *b)
{
    const bench_fit_row *x = a, *y = b;
    if (x->bytes_per_param != y->bytes_per_param)
        return x->bytes_per_param > y->bytes_per_param ? -1 : 1;
    return strcmp(x->config, y->config);
}

int bench_fit_compute(bench_fit *f, uint64_t memory, uint64_t reserve, uint64_t max_alloc,
                      unsigned shards)
{
    memset(f, 0, sizeof *f);
    if (shards == 0) {
        fprintf(stderr, "clgrad-bench: --shards must be >= 1\n");
        return -1;
    }
    if (reserve >= memory) {
        fprintf(stderr, "clgrad-bench: --reserve %llu leaves nothing of --fit %llu\n",
                (unsigned long long)reserve, (unsigned long long)memory);
        return -1;
    }
    f->memory = memory;
    f->reserve = reserve;
    f->max_alloc = max_alloc;
    f->shards = shards;
    static const clg_dtype states[] = {CLG_FP32, CLG_BF16, CLG_Q8, CLG_Q4};
    static const clg_dtype accs[] = {CLG_FP32, CLG_BF16};
    static const clg_dtype masters[] = {CLG_FP32, CLG_BF16};
    static const clg_dtype copies[] = {CLG_DTYPE_NONE, CLG_FP16};
    static const char *const paths[] = {"B", "A/C"};
    for (int s = 0; s < 4; s++)
        for (int a = 0; a < 2; a++)
            for (int m = 0; m < 2; m++)
                for (int p = 0; p < 2; p++)
                    for (int c = 0; c < 2; c++) {
                        bench_fit_row *r = &f->rows[f->n];
                        r->state_dtype = states[s];
                        r->acc_dtype = accs[a];
                        r->master_dtype = masters[m];
                        r->copy_dtype = copies[c];
                        snprintf(r->path, sizeof r->path, "%s", paths[p]);
                        r->shards = shards;
                        snprintf(r->config, sizeof r->config,
                                 "%s states, %s acc, %s master, path %s%s",
                                 clg_dtype_name(states[s]), clg_dtype_name(accs[a]),
                                 clg_dtype_name(masters[m]), paths[p],
                                 copies[c] == CLG_FP16 ? ", fp16 copy" : "");
                        /* not with ZeRO-1 yet, left out: what the sharded estimate
                         * refuses, and bf16 accumulators (clg_dist_create sums
                         * fp32 ones only) */
                        clg_status st;
                        if (shards > 1 &&
                            (accs[a] != CLG_FP32 ||
                             (largest_shard(r, 1u << 20, &st) == UINT64_MAX &&
                              st == CLG_ERR_UNSUPPORTED)))
                            continue;
                        uint64_t t1 = state_bytes(r, 1u << 20, UINT64_MAX);
                        uint64_t t2 = state_bytes(r, 2u << 20, UINT64_MAX);
                        if (t1 == UINT64_MAX || t2 == UINT64_MAX) {
                            fprintf(stderr, "clgrad-bench: --fit: %s: %s\n", r->config,
                                    clg_last_error(NULL));
                            return -1;
                        }
                        r->bytes_per_param = (double)(t2 - t1) / (double)(1u << 20);
                        r->fixed_bytes = 2 * t1 > t2 ? 2 * t1 - t2 : 0;
                        r->max_params = bench_fit_max_params(r, memory - reserve, max_alloc);
                        f->n++;
                    }
    qsort(f->rows, f->n, sizeof f->rows[0], by_bytes_desc);
    return 0;
}

static double gib(uint64_t b) { return (double)b / 1073741824.0; }

/* How much a configuration rounds, smaller first: bf16 master weights
 * round every parameter at every update, a bf16 accumulator every gradient
 * at every micro-step, the states' rounding is damped by their averages
 * (fp32 < bf16 < Q8 < Q4); path and param copy change no value. */
static int rounding_rank(const bench_fit_row *r)
{
    int st = r->state_dtype == CLG_FP32 ? 0 : r->state_dtype == CLG_BF16 ? 1
             : r->state_dtype == CLG_Q8 ? 2 : 3;
    return (r->master_dtype != CLG_FP32) * 8 + (r->acc_dtype != CLG_FP32) * 4 + st;
}

const bench_fit_row *bench_fit_choose(const bench_fit *f, uint64_t params)
{
    const bench_fit_row *best = NULL;
    for (size_t i = 0; i < f->n; i++) {
        const bench_fit_row *r = &f->rows[i];
        if (r->max_params < params)
            continue;
        if (!best || rounding_rank(r) < rounding_rank(best) ||
            (rounding_rank(r) == rounding_rank(best) && r->bytes_per_param < best->bytes_per_param))
            best = r;
    }
    return best;
}

void bench_fit_print(const bench_fit *f, FILE *out, uint64_t want)
{
    fprintf(out,
            "What fits: %.2f GiB, %.2f GiB reserved for activations: %.2f GiB of training "
            "state (AdamW; buffers of at most %.2f GiB)\n\n",
            gib(f->memory), gib(f->reserve), gib(f->memory - f->reserve), gib(f->max_alloc));
    if (f->shards > 1)
        fprintf(out,
                "ZeRO-1 over %u cards: the memory of each card, whose optimizer states are one "
                "shard; left out, what ZeRO-1 does not hold yet (bf16 master weights, a param "
                "copy, a bf16 accumulator)\n\n",
                f->shards);
    fprintf(out, "| configuration | bytes/param | largest model |\n|---|---|---|\n");
    for (size_t i = 0; i < f->n; i++)
        fprintf(out, "| %s | %.3f | %.3f B params |\n", f->rows[i].config,
                f->rows[i].bytes_per_param, (double)f->rows[i].max_params / 1e9);
    static const uint64_t defaults[] = {500000000ull, 1000000000ull, 2000000000ull,
                                        4000000000ull};
    const uint64_t *sizes = want ? &want : defaults;
    size_t n_sizes = want ? 1 : 4;
    fprintf(out, "\n");
    for (size_t k = 0; k < n_sizes; k++) {
        const bench_fit_row *first = bench_fit_choose(f, sizes[k]);
        if (first)
            fprintf(out, "%.2f B params: the most precise configuration that fits is %s "
                    "(%.3f bytes/param)\n",
                    (double)sizes[k] / 1e9, first->config, first->bytes_per_param);
        else
            fprintf(out, "%.2f B params: no configuration fits\n", (double)sizes[k] / 1e9);
    }
}

int bench_fit_write_json(const bench_fit *f, const char *path)
{
    cJSON *root = cJSON_CreateObject();
    json_add_fields(root, JO_FIT, f);
    cJSON_AddStringToObject(root, "optimizer", "adamw");
    json_add_list(root, "fit", JO_FIT_ROW, f->rows, f->n, sizeof f->rows[0]);
    int rc = json_write_file(root, path);
    cJSON_Delete(root);
    if (rc)
        fprintf(stderr, "clgrad-bench: --json %s: cannot write it\n", path);
    return rc ? -1 : 0;
}
