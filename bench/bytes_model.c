/* bytes_model.c - bytes moved per parameter by each pass of a cycle, bytes
 * held per parameter, and budget arithmetic (see docs/design.md, "Bytes
 * moved per parameter"). All traffic counts each array read or written once per
 * pass, fp32 unless said otherwise, as STREAM counts its arrays. */
#include "bytes_model.h"
#include "clgrad.h"

#include <math.h>

const char *bench_variant_name(bench_variant variant)
{
    switch (variant) {
    case BENCH_FUSED:
        return "fused";
    case BENCH_UNFUSED:
        return "unfused";
    case BENCH_PER_TENSOR:
        return "per_tensor";
    }
    return "?";
}

double bm_state_bytes(int state_dtype)
{
    switch (state_dtype) {
    case CLG_BF16:
        return 2.0;
    case CLG_Q8: /* a code, and an absmax per 256 */
        return 1.0 + 4.0 / 256.0;
    case CLG_Q4: /* half a code, an absmax per 128 */
        return 0.5 + 4.0 / 128.0;
    default:
        return 4.0;
    }
}

static double state_bytes(bm_shape s) { return s.state_bytes > 0 ? s.state_bytes : 4.0; }
static double param_bytes(bm_shape s) { return s.param_bytes ? s.param_bytes : 4.0; }

double bm_update_inplace(bm_shape shape)
{
    /* acc (r) + params (r+w) + each state (r+w; Q8/Q4: codes and absmax) */
    return 4.0 + 2.0 * param_bytes(shape) + 2.0 * state_bytes(shape) * shape.states;
}

double bm_handrolled_update(bm_shape shape)
{
    double bytes = 8.0;          /* scal 1/k (and 1/loss_scale): acc r+w */
    if (shape.stats)
        bytes += 4.0;            /* nrm2: acc r (inf/NaN shows in the norm) */
    if (shape.clip)
        bytes += 8.0;            /* scal clip: acc r+w */
    bytes += bm_update_inplace(shape);
    bytes += 4.0;                /* zero fill: acc w */
    return bytes;
}

/* clgrad's cycle. A: micro-step 1 writes acc = w*g (no read), later ones
 * read and write acc; the norm is fused into the last accumulate. B: the
 * backward writes the accumulator; the update (after a norm pass reading
 * acc when needed) is all. C: the last micro-step's gradients go straight
 * into the update (g + acc read once, acc not written). When the cycle
 * needs statistics, src/cycle.c does not take path C: its last micro-step
 * runs as on path A (the norm needs the whole sum before the update), and
 * so does this model. */
static void fused_cycle(bm_shape s, char path, unsigned k, bm_cycle *c)
{
    double g = s.grad_bytes;
    double update = bm_update_inplace(s);
    switch (path) {
    case 'A':
        c->first_micro = g + 4.0;
        c->later_micro = g + 8.0;
        c->final_step = (k == 1 ? g + 4.0 : g + 8.0) + update;
        break;
    case 'B':
        c->first_micro = 0.0;
        c->later_micro = 0.0;
        c->final_step = (s.stats ? 4.0 : 0.0) + update;
        break;
    default: /* 'C' */
        c->first_micro = g + 4.0;
        c->later_micro = g + 8.0;
        if (s.stats) /* as path A */
            c->final_step = (k == 1 ? g + 4.0 : g + 8.0) + update;
        else /* k == 1: acc holds nothing, so only g is read */
            c->final_step = g + (k == 1 ? 0.0 : 4.0) + (update - 4.0);
        break;
    }
}

/* The hand-rolled cycle: one saxpy (r g, r+w acc) per micro-step on path
 * A (acc was zero-filled by the previous cycle), nothing on path B. */
static void unfused_cycle(bm_shape s, char path, bm_cycle *c)
{
    double micro = path == 'A' ? s.grad_bytes + 8.0 : 0.0;
    c->first_micro = micro;
    c->later_micro = micro;
    c->final_step = micro + bm_handrolled_update(s);
}

int bm_cycle_bytes(bm_shape shape, bench_variant variant, char path, unsigned k,
                   bm_cycle *out)
{
    if (k == 0 || !out)
        return -1;
    if (path != 'A' && path != 'B' && path != 'C')
        return -1;
    bm_cycle c = {0};
    if (variant == BENCH_UNFUSED) {
        if (path == 'C')
            return -1;
        unfused_cycle(shape, path, &c);
    } else {
        fused_cycle(shape, path, k, &c);
    }
    if (k == 1)
        c.cycle = c.final_step;
    else
        c.cycle = c.first_micro + (double)(k - 2) * c.later_micro + c.final_step;
    *out = c;
    return 0;
}

bm_memory bm_memory_per_param(bm_shape shape, unsigned acc_bytes, unsigned copy_bytes,
                              int grads)
{
    bm_memory m;
    m.params = param_bytes(shape);
    m.accumulators = acc_bytes;
    m.states = state_bytes(shape) * shape.states;
    m.param_copy = copy_bytes;
    m.grad_buffers = grads ? shape.grad_bytes : 0.0;
    m.total = m.params + m.accumulators + m.states + m.param_copy + m.grad_buffers;
    return m;
}

uint64_t bm_max_params(uint64_t budget, bm_total_fn total, void *user, uint64_t align)
{
    if (align == 0)
        align = 1;
    /* every parameter costs at least one byte, so budget bounds n */
    uint64_t lo = 0, hi = budget / align; /* in units of align */
    if (hi == 0 || total(align, user) > budget)
        return 0;
    lo = 1;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        if (total(mid * align, user) <= budget)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo * align;
}

uint64_t bm_max_params_linear(uint64_t budget, uint64_t fixed, double bytes_per_param,
                              uint64_t align)
{
    if (align == 0)
        align = 1;
    if (budget <= fixed || !(bytes_per_param > 0.0))
        return 0;
    double n = floor((double)(budget - fixed) / bytes_per_param);
    uint64_t ni = (uint64_t)n;
    /* floating point may round up across an integer: step back */
    while (ni > 0 && (double)fixed + ceil((double)ni * bytes_per_param) > (double)budget)
        ni--;
    return ni / align * align;
}
