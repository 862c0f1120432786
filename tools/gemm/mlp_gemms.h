/* mlp_gemms.h - the GEMMs of clgrad-train's MLP: their shapes, and the one
 * function that issues them, so that what clgrad-tune tunes and
 * clgrad-bench measures is what the trainer runs (tools/train/mlp.c calls
 * mlp_gemm for every GEMM).
 *
 * Shapes are in the trainer's row-major view: C[m x n] = alpha op(A) op(B) +
 * beta C with op(A) [m x k], op(B) [k x n]. Per linear layer of in -> out
 * widths and a micro-batch of b rows, one micro-step runs
 *     forward   Y[b x out]  = X[b x in] W^T           (N, T)
 *     backward  dW[out x in] = dY^T[out x b] X[b x in] (T, N)
 *               dX[b x in]  = dY[b x out] W[out x in]  (N, N; not for the first layer)
 *
 * mlp_gemm hands CLBlast the same product in column-major form with the
 * operands swapped (C^T = op(B)^T op(A)^T), which is the same arithmetic on
 * the same memory. Why: for row-major C, CLBlast's indirect GEMM (Xgemm)
 * adds a kernel that transposes C in and out of a temporary buffer, and
 * its direct one (XgemmDirect) stores C transposed; in column-major form C
 * is already the layout both kernels write. Measured on PoCL (2 cores,
 * clgrad-tune's shapes): the tuned indirect GEMMs of one micro-batch take
 * about 25% less time this way.
 *
 * Xgemm needs a temporary buffer for the padded and transposed operands;
 * CLBlast allocates one per call unless given one, and on PoCL a fresh
 * buffer costs page faults and zeroed pages on every call (about 10% of a
 * tuned micro-step in a profile of clgrad-train). An mlp_gemm_scratch is one
 * buffer kept across calls, grown to the largest need. */
#ifndef TUNE_MLP_GEMMS_H
#define TUNE_MLP_GEMMS_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 200
#endif
#include <CL/cl.h>
#include <stddef.h>

#define MLP_GEMMS_MAX 32

typedef struct mlp_gemm_scratch {
    cl_mem buf;      /* NULL until a call needs one */
    size_t bytes;
} mlp_gemm_scratch;

void mlp_gemm_scratch_release(mlp_gemm_scratch *s);

typedef struct mlp_gemm_shape {
    size_t m, n, k;
    int ta, tb;            /* op(A) = A^T, op(B) = B^T (row-major view) */
    unsigned count;        /* calls per micro-step */
    const char *role;      /* "fc1 forward", "fc2 dW", ... (static) */
    size_t batch;          /* matrices per call, one after another in memory
                              (mlp_gemm_batched); 0 or 1: one */
} mlp_gemm_shape;

/* The matrices one call of s multiplies: s->batch, at least 1. */
size_t mlp_gemm_batch(const mlp_gemm_shape *s);

/* The distinct GEMM shapes of one micro-step of an MLP with widths
 * dims[0..n_dims-1] (input first) at micro-batch b, each with its count;
 * returns how many (at most cap are written). */
size_t mlp_gemm_shapes(const unsigned *dims, int n_dims, size_t b, mlp_gemm_shape *out,
                       size_t cap);

/* Adds s to the n shapes of out (at most cap written): a shape already
 * there (same m, n, k, ta, tb) only gains s.count calls. Returns the new
 * number of shapes, which may exceed cap. */
size_t mlp_gemm_shape_add(mlp_gemm_shape *out, size_t n, size_t cap, mlp_gemm_shape s);

/* s as text, "MxNxK:AB" or "MxNxK:AB@BATCH" (clgrad-tune's --shape), and
 * back: 0, or -1 when text is not one (sizes 1..65536); the role is
 * "--shape". */
void mlp_gemm_shape_text(const mlp_gemm_shape *s, char *out, size_t size);
int mlp_gemm_shape_parse(const char *text, mlp_gemm_shape *s);

/* FLOPs of one call: 2 m n k per matrix of the batch. */
double mlp_gemm_flops(const mlp_gemm_shape *s);

/* Whether CLBlast's GEMM routine runs s with its direct kernel
 * (XgemmDirect) rather than Xgemm, when its switch-over size
 * (XGEMM_MIN_INDIRECT_SIZE) is min_indirect: m n k < min_indirect^3. Its
 * strided batched routine decides the same way on one matrix's m n k. */
int mlp_gemm_is_direct(const mlp_gemm_shape *s, size_t min_indirect);
/* Its name: "XgemmDirect" or "Xgemm". */
const char *mlp_gemm_kernel(const mlp_gemm_shape *s, size_t min_indirect);

/* s as a gemm record of a tuning file (tuning_file.h): its shape, count
 * and the kernel each side's switch-over size picks; the GFLOP/s are left
 * 0. clgrad-tune writes these, clgrad-bench reports the same per shape. */
struct tuning_gemm;
void mlp_gemm_record(const mlp_gemm_shape *s, size_t min_indirect_default,
                     size_t min_indirect_tuned, struct tuning_gemm *out);

/* Leading dimensions of dense row-major operands of shape s. */
void mlp_gemm_dense_ld(const mlp_gemm_shape *s, size_t *lda, size_t *ldb, size_t *ldc);

/* C = alpha op(A) op(B) + beta C in the row-major view above, enqueued on
 * queue through CLBlast (see the header comment for the form), with
 * scratch as its temporary buffer (NULL: CLBlast allocates its own).
 * Offsets and leading dimensions are in elements, as CLBlast's. Returns
 * CLBlast's status (OpenCL's codes, or CLBlast's own in -1024..-2048). */
cl_int mlp_gemm(cl_command_queue queue, mlp_gemm_scratch *scratch, int ta, int tb, size_t m,
                size_t n, size_t k, float alpha, cl_mem a, size_t aoff, size_t lda, cl_mem b,
                size_t boff, size_t ldb, float beta, cl_mem c, size_t coff, size_t ldc,
                cl_event *event);

/* batch products C_i = alpha op(A_i) op(B_i) + beta C_i, i < batch, with
 * X_i at X's offset + i x its stride (elements), in mlp_gemm's form and
 * through CLBlast's strided batched GEMM, which takes the same Xgemm,
 * XgemmDirect and switch-over parameters as its GEMM (a program of its
 * own). It takes no temporary buffer: CLBlast allocates one per call when
 * the shape runs Xgemm. */
cl_int mlp_gemm_batched(cl_command_queue queue, int ta, int tb, size_t m, size_t n, size_t k,
                        float alpha, cl_mem a, size_t aoff, size_t lda, size_t astride, cl_mem b,
                        size_t boff, size_t ldb, size_t bstride, float beta, cl_mem c,
                        size_t coff, size_t ldc, size_t cstride, size_t batch, cl_event *event);

#endif /* TUNE_MLP_GEMMS_H */
