/* memplan.c - computing and printing the memory plan (see memplan.h). */
#include "memplan.h"
#include "errmsg.h"

#include <inttypes.h>

void memplan_bytes(char *buf, size_t len, uint64_t bytes)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, len, "%.1f %s", v, unit[u]);
}

void memplan_total(memplan *p)
{
    p->total = p->model.total + p->activations + p->grad_scratch + p->weights + p->data;
}

static void row(FILE *f, const char *what, uint64_t bytes)
{
    char b[32];
    memplan_bytes(b, sizeof b, bytes);
    fprintf(f, "  %-34s %12llu B  %10s\n", what, (unsigned long long)bytes, b);
}

void memplan_print(FILE *f, const memplan *p, const char *device_name, uint64_t params)
{
    char label[64];
    fprintf(f, "memory plan on %s (%llu parameters):\n", device_name, (unsigned long long)params);
    static const char *const dtype[] = {"fp32", "fp16", "bf16", "none", "q8", "q4"};
    snprintf(label, sizeof label, "parameters (%s)",
             dtype[(unsigned)p->master_dtype < 6 ? p->master_dtype : 3]);
    row(f, label, p->model.params);
    row(f, "accumulators", p->model.accumulators);
    char shard[40] = "";
    if (p->shards > 1)
        snprintf(shard, sizeof shard, ", shard %u of %u", p->shard, p->shards);
    snprintf(label, sizeof label, "optimizer states (%s%s%s)",
             dtype[(unsigned)p->state_dtype < 6 ? p->state_dtype : 3],
             p->state_dtype == CLG_Q8 || p->state_dtype == CLG_Q4 ? ", small fp32" : "", shard);
    row(f, label, p->model.states);
    if (p->model.state_scales)
        row(f, "state absmax (one per block)", p->model.state_scales);
    if (p->model.grad_buffers)
        row(f, "gradient buffers (paths A/C)", p->model.grad_buffers);
    if (p->model.param_copy)
        row(f, "low-precision param copy", p->model.param_copy);
    row(f, "step block", p->model.step_block);
    if (p->model.tables)
        row(f, "group and norm tables", p->model.tables);
    if (p->weights)
        row(f, "fp32 copy of the bf16 weights", p->weights);
    snprintf(label, sizeof label, "activations (micro-batch %u)", p->micro_batch);
    row(f, label, p->activations);
    if (p->grad_scratch)
        row(f, "fp32 gradient scratch", p->grad_scratch);
    row(f, "data set on device", p->data);
    row(f, "total", p->total);
    char a[32];
    memplan_bytes(a, sizeof a, p->available);
    fprintf(f, "  %-34s %12llu B  %10s  (%.1f%% used)\n",
            p->is_budget ? "budget (--vram)" : "device global memory",
            (unsigned long long)p->available, a,
            p->available ? 100.0 * (double)p->total / (double)p->available : 0.0);
}

int memplan_refuse(const memplan *p, memplan_limit limit, const char *shrink, int allow, char *err,
                   size_t errlen)
{
    if (allow || p->total <= limit.bytes)
        return 0;
    char a[32], b[32], what[64];
    memplan_bytes(a, sizeof a, p->total);
    memplan_bytes(b, sizeof b, limit.bytes);
    if (limit.flag)
        snprintf(what, sizeof what, "the %s of", limit.flag);
    else
        snprintf(what, sizeof what, "the device's");
    return errmsg_set(err, errlen,
                      "memory plan: %" PRIu64 " B (%s) in all, more than %s %" PRIu64
                      " B (%s)%s; make %s smaller, or give --allow-over-device-memory for a "
                      "device that pages",
                      p->total, a, what, limit.bytes, b, limit.flag ? "" : " of global memory",
                      shrink);
}
