/* tune_measure.c - clgrad-tune: building, checking and timing one set of
 * CLBlast parameters on the real shapes, in the baseline's terms, and the
 * progress lines (tune_internal.h). */
#include "tune_internal.h"
#include "clblast_status.h"
#include "tuners.h"
#include "tuning_apply.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kernels Xgemm needs around it when operands are not in its layout or
 * sizes not multiples of its tiles (measured on the MLP's shapes: a padded
 * transpose of W for every forward GEMM, padded copies of the others), with
 * the tuner that tunes each. */
const char *const ts_aux_kernels[2] = {"Padtranspose", "Pad"};
const char *const ts_aux_tuners[2] = {"clblast_tuner_transpose_pad", "clblast_tuner_copy_pad"};
#include <time.h>

double ts_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void ts_say(search *s, const char *fmt, ...)
{
    if (s->req->quiet)
        return;
    fprintf(stderr, "[%4.0f s / %.0f s] ", ts_now_s() - s->t0, s->req->budget_s);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void ts_note(search *s, const char *fmt, ...)
{
    size_t used = strlen(s->out->notes);
    if (used + 3 >= sizeof s->out->notes)
        return;
    if (used)
        used += (size_t)snprintf(s->out->notes + used, sizeof s->out->notes - used, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->out->notes + used, sizeof s->out->notes - used, fmt, ap);
    va_end(ap);
}

double ts_mnk(const mlp_gemm_shape *g)
{
    return (double)g->m * (double)g->n * (double)g->k;
}

int ts_get_params(search *s, const char *kernel, param_set *ps, char *err, size_t errlen)
{
    int st = clblast_params_get(s->dev, kernel, 32, ps->p, TUNING_MAX_PARAMS, &ps->n);
    if (st != 0 || ps->n == 0 || ps->n > TUNING_MAX_PARAMS) {
        char name[64];
        snprintf(err, errlen, "CLBlast has no parameters for %s on this device (%s)", kernel,
                 clblast_status_text(st, name, sizeof name));
        return -1;
    }
    return 0;
}

int ts_set_params(search *s, const char *kernel, const param_set *ps, char *err,
                      size_t errlen)
{
    int st = clblast_params_set(s->dev, kernel, 32, ps->p, ps->n);
    if (st != 0) {
        char name[64];
        snprintf(err, errlen, "CLBlast refused parameters for %s (%s)", kernel,
                 clblast_status_text(st, name, sizeof name));
        return -1;
    }
    return 0;
}

param_set ts_routine_params(size_t min_indirect)
{
    param_set r = {1, {{"XGEMM_MIN_INDIRECT_SIZE", min_indirect}}};
    return r;
}

int ts_build(search *s, const param_set *d, const param_set *i, size_t threshold, char *why,
             size_t whylen)
{
    const tune_request *q = s->req;
    param_set r = ts_routine_params(threshold);
    if (ts_set_params(s, "XgemmDirect", d, why, whylen) != 0 ||
        ts_set_params(s, "Xgemm", i, why, whylen) != 0 ||
        ts_set_params(s, "GemmRoutine", &r, why, whylen) != 0 ||
        ts_set_params(s, ts_aux_kernels[0], &s->aux[0], why, whylen) != 0 ||
        ts_set_params(s, ts_aux_kernels[1], &s->aux[1], why, whylen) != 0)
        return -1;
    /* the first call of each shape builds what it needs (one program per
     * CLBlast routine: GEMM, strided batched GEMM) */
    double t = ts_now_s();
    for (size_t k = 0; k < q->n_shapes; k++) {
        cl_int e = gemm_run_once(&s->bufs, &q->shapes[k]);
        if (e != CL_SUCCESS) {
            char name[64];
            snprintf(why, whylen, "CLBlast failed on %zux%zux%zu (%s)", q->shapes[k].m,
                     q->shapes[k].n, q->shapes[k].k, clblast_status_text(e, name, sizeof name));
            return -1;
        }
    }
    s->last_build_s = ts_now_s() - t;
    /* the slowest builds seen: the baseline's may have come from the
     * driver's own cache */
    if (s->last_build_s > s->build_s)
        s->build_s = s->last_build_s;
    return 0;
}

int ts_measure(search *s, const param_set *d, const param_set *i, size_t threshold, double *ms,
               char *why, size_t whylen)
{
    return ts_build(s, d, i, threshold, why, whylen) != 0 ? -1 : ts_time(s, ms, why, whylen);
}

int ts_time(search *s, double *ms, char *why, size_t whylen)
{
    const tune_request *q = s->req;
    for (size_t k = 0; k < q->n_shapes; k++) {
        double worst;
        int rc = gemm_check(&s->bufs, &q->shapes[k], &worst);
        if (rc != 0) {
            snprintf(why, whylen, "%zux%zux%zu: %s (relative error %.2g)", q->shapes[k].m,
                     q->shapes[k].n, q->shapes[k].k,
                     worst < 0 ? "the check could not run" : "wrong result", worst);
            return -1;
        }
    }
    unsigned reps[MLP_GEMMS_MAX];
    double v[MLP_GEMMS_MAX][ROUNDS];
    for (size_t k = 0; k < q->n_shapes; k++)
        reps[k] = gemm_calibrate(&s->bufs, &q->shapes[k], TARGET_MS);
    /* Rounds over all shapes, so that a change of machine load hits every
     * shape alike. */
    for (int round = 0; round < ROUNDS; round++)
        for (size_t k = 0; k < q->n_shapes; k++)
            if (gemm_time(&s->bufs, &q->shapes[k], reps[k], &v[k][round]) != CL_SUCCESS) {
                snprintf(why, whylen, "a timed GEMM failed");
                return -1;
            }
    for (size_t k = 0; k < q->n_shapes; k++)
        ms[k] = gemm_median(v[k], ROUNDS);
    return 0;
}

double ts_step_ms(const search *s, const double *ms)
{
    double t = 0;
    for (size_t k = 0; k < s->req->n_shapes; k++)
        t += s->req->shapes[k].count * ms[k];
    return t;
}

double ts_step_gflop(const tune_request *q)
{
    double f = 0;
    for (size_t k = 0; k < q->n_shapes; k++)
        f += q->shapes[k].count * mlp_gemm_flops(&q->shapes[k]);
    return f * 1e-9;
}

/* The machine's load drifts between candidates (other processes on the
 * same cores): CLBlast's defaults timed right after a candidate (built
 * already, so switching costs nothing) turn its times into the baseline's
 * terms, so that candidates measured minutes apart compare fairly. */
void ts_in_baseline_terms(search *s, double *ms)
{
    double now[MLP_GEMMS_MAX];
    char why[256];
    param_set keep[2] = {s->aux[0], s->aux[1]};
    s->aux[0] = s->aux0[0];
    s->aux[1] = s->aux0[1];
    int rc = ts_measure(s, &s->d0, &s->i0, s->t0_size, now, why, sizeof why);
    s->aux[0] = keep[0];
    s->aux[1] = keep[1];
    if (rc != 0)
        return;
    double f = ts_step_ms(s, s->base) / ts_step_ms(s, now);
    for (size_t k = 0; k < s->req->n_shapes; k++)
        ms[k] *= f;
}

