/* tuning_verify.c - a tuning's GEMMs checked on the device (see
 * tuning_verify.h). */
#include "tuning_verify.h"
#include "clblast_params.h"
#include "clblast_status.h"
#include "errmsg.h"
#include "gemm_timing.h"

#include <stdio.h>
#include <string.h>

/* XGEMM_MIN_INDIRECT_SIZE as CLBlast holds it now: t's, else CLBlast's. */
static size_t min_indirect_now(const clg_context *ctx, const tuning *t)
{
    const tuning_kernel *r = tuning_find_kernel(t, "GemmRoutine");
    for (size_t i = 0; r && i < r->n; i++)
        if (strcmp(r->param[i], "XGEMM_MIN_INDIRECT_SIZE") == 0)
            return r->value[i];
    clblast_param p[4];
    size_t np = 0;
    if (clblast_params_get(clg_context_device(ctx), "GemmRoutine", 32, p, 4, &np) == 0 && np == 1)
        return p[0].value;
    return 0;
}

/* "XgemmDirect (KWID=2 ... WGD=32)", and for Xgemm the helpers t tunes. */
static void kernel_text(const tuning *t, const char *kernel, char *out, size_t size)
{
    const tuning_kernel *k = tuning_find_kernel(t, kernel);
    char line[512];
    if (k)
        tuning_kernel_text(k, line, sizeof line);
    size_t used = (size_t)snprintf(out, size, "%s (%s)", kernel,
                                   k ? line + strlen(kernel) + 1 : "CLBlast's own parameters");
    if (strcmp(kernel, "Xgemm") != 0)
        return;
    static const char *const helpers[] = {"Copy", "Pad", "Transpose", "Padtranspose"};
    for (size_t i = 0; i < sizeof helpers / sizeof *helpers && used < size; i++)
        if ((k = tuning_find_kernel(t, helpers[i])) != NULL) {
            tuning_kernel_text(k, line, sizeof line);
            used += (size_t)snprintf(out + used, size - used, " with %s (%s)", helpers[i],
                                     line + strlen(helpers[i]) + 1);
        }
}

int tuning_verify(const clg_context *ctx, const tuning *t, const mlp_gemm_shape *shapes,
                  size_t n, char *err, size_t errlen)
{
    gemm_bufs g;
    cl_int e = gemm_bufs_create(clg_context_cl(ctx), clg_context_queue(ctx), shapes, n, &g);
    if (e != CL_SUCCESS)
        return errmsg_set(err, errlen, "allocating the buffers to check its GEMMs: OpenCL "
                          "status %d", (int)e);
    size_t min_indirect = min_indirect_now(ctx, t);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const mlp_gemm_shape *s = &shapes[i];
        double worst;
        int st = gemm_check(&g, s, &worst);
        if (st == 0)
            continue;
        char kernel[1024], what[96], status[64];
        kernel_text(t, mlp_gemm_kernel(s, min_indirect), kernel, sizeof kernel);
        if (worst < 0) /* the call failed: st is its status */
            snprintf(what, sizeof what, "fails with %s",
                     clblast_status_text(st, status, sizeof status));
        else
            snprintf(what, sizeof what, "is wrong (relative error %.3g, tolerance 1e-4)", worst);
        rc = errmsg_set(err, errlen, "on this device its %s: %s %zux%zux%zu %c%c %s", kernel,
                        s->role, s->m, s->n, s->k, s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', what);
    }
    gemm_bufs_release(&g);
    return rc;
}
