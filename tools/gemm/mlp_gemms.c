/* mlp_gemms.c - the MLP's GEMM shapes and its GEMM call (see mlp_gemms.h). */
#include "mlp_gemms.h"
#include "tuning_file.h"

#include <clblast_c.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

size_t mlp_gemm_shape_add(mlp_gemm_shape *out, size_t n, size_t cap, mlp_gemm_shape s)
{
    /* Layers of equal widths give equal shapes: count them once. */
    for (size_t i = 0; i < n && i < cap; i++)
        if (out[i].m == s.m && out[i].n == s.n && out[i].k == s.k && out[i].ta == s.ta &&
            out[i].tb == s.tb && mlp_gemm_batch(&out[i]) == mlp_gemm_batch(&s)) {
            out[i].count += s.count;
            return n;
        }
    if (n < cap)
        out[n] = s;
    return n + 1;
}

size_t mlp_gemm_shapes(const unsigned *dims, int n_dims, size_t b, mlp_gemm_shape *out, size_t cap)
{
    static const char *const fwd[] = {"fc1 forward", "fc2 forward", "fc3 forward",
                                      "fc4 forward", "fc5 forward", "fc6 forward",
                                      "fc7 forward", "fc8 forward", "fc9 forward"};
    static const char *const dw[] = {"fc1 dW", "fc2 dW", "fc3 dW", "fc4 dW", "fc5 dW",
                                     "fc6 dW", "fc7 dW", "fc8 dW", "fc9 dW"};
    static const char *const dx[] = {"fc1 dX", "fc2 dX", "fc3 dX", "fc4 dX", "fc5 dX",
                                     "fc6 dX", "fc7 dX", "fc8 dX", "fc9 dX"};
    size_t n = 0;
    for (int l = 0; l + 1 < n_dims && l < 9; l++) {
        size_t in = dims[l], o = dims[l + 1];
        n = mlp_gemm_shape_add(out, n, cap, (mlp_gemm_shape){b, o, in, 0, 1, 1, fwd[l], 1});
    }
    for (int l = n_dims - 2; l >= 0; l--) {
        if (l >= 9)
            continue;
        size_t in = dims[l], o = dims[l + 1];
        n = mlp_gemm_shape_add(out, n, cap, (mlp_gemm_shape){o, in, b, 1, 0, 1, dw[l], 1});
        if (l > 0)
            n = mlp_gemm_shape_add(out, n, cap, (mlp_gemm_shape){b, in, o, 0, 0, 1, dx[l], 1});
    }
    return n;
}

void mlp_gemm_shape_text(const mlp_gemm_shape *s, char *out, size_t size)
{
    int used = snprintf(out, size, "%zux%zux%zu:%c%c", s->m, s->n, s->k, s->ta ? 'T' : 'N',
                        s->tb ? 'T' : 'N');
    if (mlp_gemm_batch(s) > 1 && used >= 0 && (size_t)used < size)
        snprintf(out + used, size - (size_t)used, "@%zu", s->batch);
}

int mlp_gemm_shape_parse(const char *text, mlp_gemm_shape *s)
{
    unsigned long v[4] = {0, 0, 0, 1};
    char t[2] = {'N', 'N'};
    const char *c = text;
    for (int i = 0; i < 4; i++) {
        if (i == 3) {
            if (*c != '@')
                break;
            c++;
        }
        char *end;
        if (*c < '0' || *c > '9')
            return -1;
        errno = 0;
        v[i] = strtoul(c, &end, 10);
        if (errno || v[i] == 0 || v[i] > 65536)
            return -1;
        c = end;
        if (i < 2 && *c++ != 'x')
            return -1;
        if (i == 2 && *c == ':') {
            for (int j = 0; j < 2; j++) {
                t[j] = c[1 + j];
                if (t[j] != 'N' && t[j] != 'T')
                    return -1;
            }
            c += 3;
        }
    }
    if (*c)
        return -1;
    *s = (mlp_gemm_shape){v[0], v[1], v[2], t[0] == 'T', t[1] == 'T', 1, "--shape", v[3]};
    return 0;
}

size_t mlp_gemm_batch(const mlp_gemm_shape *s)
{
    return s->batch > 1 ? s->batch : 1;
}

double mlp_gemm_flops(const mlp_gemm_shape *s)
{
    return 2.0 * (double)s->m * (double)s->n * (double)s->k * (double)mlp_gemm_batch(s);
}

int mlp_gemm_is_direct(const mlp_gemm_shape *s, size_t min_indirect)
{
    double t = (double)min_indirect;
    return (double)s->m * (double)s->n * (double)s->k < t * t * t;
}

const char *mlp_gemm_kernel(const mlp_gemm_shape *s, size_t min_indirect)
{
    return mlp_gemm_is_direct(s, min_indirect) ? "XgemmDirect" : "Xgemm";
}

void mlp_gemm_record(const mlp_gemm_shape *s, size_t min_indirect_default,
                     size_t min_indirect_tuned, struct tuning_gemm *out)
{
    *out = (tuning_gemm){.m = (unsigned)s->m, .n = (unsigned)s->n, .k = (unsigned)s->k,
                         .ta = s->ta ? 'T' : 'N', .tb = s->tb ? 'T' : 'N', .count = s->count,
                         .batch = (unsigned)mlp_gemm_batch(s)};
    snprintf(out->kernel_default, sizeof out->kernel_default, "%s",
             mlp_gemm_kernel(s, min_indirect_default));
    snprintf(out->kernel_tuned, sizeof out->kernel_tuned, "%s",
             mlp_gemm_kernel(s, min_indirect_tuned));
}

void mlp_gemm_dense_ld(const mlp_gemm_shape *s, size_t *lda, size_t *ldb, size_t *ldc)
{
    *lda = s->ta ? s->m : s->k;
    *ldb = s->tb ? s->k : s->n;
    *ldc = s->n;
}

static CLBlastTranspose op(int transposed)
{
    return transposed ? CLBlastTransposeYes : CLBlastTransposeNo;
}

void mlp_gemm_scratch_release(mlp_gemm_scratch *s)
{
    if (s->buf)
        clReleaseMemObject(s->buf);
    s->buf = NULL;
    s->bytes = 0;
}

cl_int mlp_gemm(cl_command_queue queue, mlp_gemm_scratch *scratch, int ta, int tb, size_t m,
                size_t n, size_t k, float alpha, cl_mem a, size_t aoff, size_t lda, cl_mem b,
                size_t boff, size_t ldb, float beta, cl_mem c, size_t coff, size_t ldc,
                cl_event *event)
{
    /* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: B's
     * memory is the first operand, A's the second, m and n swap. */
    CLBlastTranspose t1 = op(tb), t2 = op(ta);
    size_t need = 0;
    if (scratch && CLBlastSGemmTempBufferSize(CLBlastLayoutColMajor, t1, t2, n, m, k, boff, ldb,
                                              aoff, lda, coff, ldc, &queue,
                                              &need) == CLBlastSuccess &&
        need > 0) {
        if (need > scratch->bytes) {
            cl_context ctx;
            cl_int err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL);
            if (err != CL_SUCCESS)
                return err;
            /* the old buffer stays alive for commands already enqueued */
            mlp_gemm_scratch_release(scratch);
            scratch->buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, need, NULL, &err);
            if (err != CL_SUCCESS) {
                scratch->buf = NULL;
                return err;
            }
            scratch->bytes = need;
        }
        return (cl_int)CLBlastSgemmWithTempBuffer(CLBlastLayoutColMajor, t1, t2, n, m, k, alpha, b,
                                                  boff, ldb, a, aoff, lda, beta, c, coff, ldc,
                                                  &queue, event, scratch->buf);
    }
    return (cl_int)CLBlastSgemm(CLBlastLayoutColMajor, t1, t2, n, m, k, alpha, b, boff, ldb, a, aoff,
                                lda, beta, c, coff, ldc, &queue, event);
}

cl_int mlp_gemm_batched(cl_command_queue queue, int ta, int tb, size_t m, size_t n, size_t k,
                        float alpha, cl_mem a, size_t aoff, size_t lda, size_t astride, cl_mem b,
                        size_t boff, size_t ldb, size_t bstride, float beta, cl_mem c,
                        size_t coff, size_t ldc, size_t cstride, size_t batch, cl_event *event)
{
    /* mlp_gemm's form: B's memory first, m and n swapped */
    CLBlastTranspose t1 = op(tb), t2 = op(ta);
    return (cl_int)CLBlastSgemmStridedBatched(CLBlastLayoutColMajor, t1, t2, n, m, k, alpha, b,
                                              boff, ldb, bstride, a, aoff, lda, astride, beta, c,
                                              coff, ldc, cstride, batch, &queue, event);
}
