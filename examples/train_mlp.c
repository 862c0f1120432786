/* train_mlp.c - a first clgrad program: one whole training run, to read top
 * to bottom. A one-hidden-layer MLP (2 -> 64 -> 3, ReLU, softmax cross-entropy)
 * learns the three arms of a spiral, made here from a fixed seed (nothing to
 * download); no linear model can tell them apart. It shows:
 *  1. a clgrad context and a model: four tensors in clgrad's device arenas;
 *  2. a backward whose CLBlast GEMMs write the gradients straight into
 *     clgrad's accumulator (path B: GEMM beta = clg_accum_beta);
 *  3. gradient accumulation: one update is K micro-batches of M rows;
 *  4. AdamW with clipping by global norm, on the device;
 *  5. a checkpoint that a fresh model loads and resumes from, bit for bit.
 * It prints each update's loss, and exits 1 if the model did not learn or the
 * resumed one differs (77: no OpenCL device). From the source tree:
 *   meson compile -C build examples/train_mlp && build/examples/train_mlp [CHECKPOINT]
 */
#include <clblast_c.h>
#include <clgrad.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { D = 2, H = 64, C = 3 };         /* input, hidden and output widths */
enum { M = 32, K = 4, BATCH = M * K }; /* rows per micro-batch, micro-batches per update */
enum { N = 3072, EPOCHS = 5 };          /* rows in the data set, passes over it */
enum { W1, B1, W2, B2, N_TENSORS };    /* tensor ids, in the order they are added */

/* ------------------------------------------------------------------ errors */

static clg_context *ctx; /* global, so that every check can ask it what failed */
static cl_command_queue queue;

/* clgrad's calls return a clg_status, and clg_last_error(ctx) names the call
 * and what was wrong; OpenCL's and CLBlast's return a status (CLBlast's
 * extend OpenCL's). */
static void die(int line, const char *call, int status, const char *why)
{
    fprintf(stderr, "train_mlp.c:%d: %s: status %d: %s\n", line, call, status, why);
    exit(1);
}
#define CLG_CHECK(call) \
    do { int s_ = (call); if (s_) die(__LINE__, #call, s_, clg_last_error(ctx)); } while (0)
#define CL_CHECK(call) \
    do { int s_ = (int)(call); if (s_) die(__LINE__, #call, s_, "OpenCL/CLBlast"); } while (0)

/* ------------------------------------------------------------ device code */

/* Every product, bias adds and bias gradients included, is a CLBlast GEMM;
 * these kernels do the rest, one work-item per element (xent: per row). */
#define OPENCL_C(...) #__VA_ARGS__
static const char *kernel_source = OPENCL_C(
    __kernel void relu(__global float *h) {
        size_t i = get_global_id(0);
        h[i] = fmax(h[i], 0.0f);
    }
    /* the gradient goes through the ReLU only where its output was positive */
    __kernel void relu_grad(__global float *dh, __global const float *h) {
        size_t i = get_global_id(0);
        dh[i] = h[i] > 0.0f ? dh[i] : 0.0f;
    }
    /* Row r's loss -log softmax(z)[label]; z becomes dL/dz = softmax(z) -
     * onehot(label), the gradient of the summed loss: path B wants the weight
     * (M rows) times the mean gradient. */
    __kernel void xent(__global float *z, uint classes, __global const int *labels,
                       __global float *loss, uint row) {
        uint r = get_global_id(0), y = labels[row + r];
        __global float *zr = z + r * classes;
        float mx = zr[0], s = 0.0f;
        for (uint j = 1; j < classes; j++)
            mx = fmax(mx, zr[j]);
        for (uint j = 0; j < classes; j++)
            s += exp(zr[j] - mx);
        loss[row + r] = log(s) + mx - zr[y];
        for (uint j = 0; j < classes; j++)
            zr[j] = exp(zr[j] - mx) / s - (j == y ? 1.0f : 0.0f);
    });
enum { RELU, RELU_GRAD, XENT, N_KERNELS };
static const char *kernel_names[N_KERNELS] = {"relu", "relu_grad", "xent"};
static cl_kernel kernels[N_KERNELS];

/* The data set (rows of D floats, labels, and each row's latest loss), a
 * micro-batch's activations and their gradients, and a column of M ones (a
 * bias enters as ones times b^T, and its gradient is dy^T times ones). */
static cl_mem x_dev, y_dev, loss_dev, h, z, dh, ones;

/* Runs a kernel on `items` work-items; main sets the arguments that never change. */
static void launch(int kernel, size_t items)
{
    CL_CHECK(clEnqueueNDRangeKernel(queue, kernels[kernel], 1, NULL, &items, NULL, 0, NULL, NULL));
}

/* C[m x n] = op(A) op(B) + beta C, row-major, on clgrad's (in-order) queue. */
static void gemm(int ta, int tb, size_t m, size_t n, size_t k, cl_mem a, size_t aoff, size_t lda,
                 cl_mem b, size_t boff, size_t ldb, float beta, cl_mem c, size_t coff, size_t ldc)
{
    CL_CHECK(CLBlastSgemm(CLBlastLayoutRowMajor, ta ? CLBlastTransposeYes : CLBlastTransposeNo,
                          tb ? CLBlastTransposeYes : CLBlastTransposeNo, m, n, k, 1.0f, a, aoff,
                          lda, b, boff, ldb, beta, c, coff, ldc, &queue, NULL));
}

/* ------------------------------------------------------ forward and backward */

/* Where a tensor's params (acc 0) or accumulated gradient (acc 1) live. */
static clg_view view(clg_model *model, int tensor, int acc)
{
    clg_view v;
    CLG_CHECK(acc ? clg_model_acc_view(model, tensor, &v) : clg_model_param_view(model, tensor, &v));
    return v;
}

/* One micro-step: M rows from `row` through the network (their losses land in
 * loss_dev), then back, CLBlast writing the four gradients straight into
 * clgrad's accumulator (path B). beta = clg_accum_beta(model) is 0 on an
 * update's first micro-step, so that the GEMMs overwrite the last update's
 * gradient (no zeroing pass), and 1 after, so that they add to it. */
static void micro_step(clg_model *model, size_t row)
{
    clg_view w1 = view(model, W1, 0), b1 = view(model, B1, 0), g1 = view(model, W1, 1);
    clg_view w2 = view(model, W2, 0), b2 = view(model, B2, 0), g2 = view(model, W2, 1);
    clg_view gb1 = view(model, B1, 1), gb2 = view(model, B2, 1);
    gemm(0, 1, M, H, D, x_dev, row * D, D, w1.mem, w1.offset, D, 0.0f, h, 0, H); /* x W1^T */
    gemm(0, 0, M, H, 1, ones, 0, 1, b1.mem, b1.offset, H, 1.0f, h, 0, H);        /* + 1 b1^T */
    launch(RELU, M * H);
    gemm(0, 1, M, C, H, h, 0, H, w2.mem, w2.offset, H, 0.0f, z, 0, C);   /* z = h W2^T */
    gemm(0, 0, M, C, 1, ones, 0, 1, b2.mem, b2.offset, C, 1.0f, z, 0, C); /* + 1 b2^T */
    CL_CHECK(clSetKernelArg(kernels[XENT], 4, sizeof(cl_uint), &(cl_uint){(cl_uint)row}));
    launch(XENT, M);

    float beta = clg_accum_beta(model);
    gemm(1, 0, C, H, M, z, 0, C, h, 0, H, beta, g2.mem, g2.offset, H);            /* dz^T h */
    gemm(1, 0, C, 1, M, z, 0, C, ones, 0, 1, beta, gb2.mem, gb2.offset, 1);       /* dz^T 1 */
    gemm(0, 0, M, H, C, z, 0, C, w2.mem, w2.offset, H, 0.0f, dh, 0, H);           /* dz W2 */
    launch(RELU_GRAD, M * H);
    gemm(1, 0, H, D, M, dh, 0, H, x_dev, row * D, D, beta, g1.mem, g1.offset, D); /* dh^T x */
    gemm(1, 0, H, 1, M, dh, 0, H, ones, 0, 1, beta, gb1.mem, gb1.offset, 1);      /* dh^T 1 */
}

/* One update: K micro-steps of M rows from row `first`, each weighted by its
 * row count: clgrad divides the summed gradients by the summed weights, the
 * mean over all K*M rows. The K-th clg_step enqueues the gradient's norm, the
 * clipping and AdamW; the host does not wait for them. */
static void train_update(clg_model *model, size_t first)
{
    for (size_t j = 0; j < K; j++) {
        micro_step(model, first + j * M);
        CLG_CHECK(clg_step(model, NULL /* path B */, (float)M, NULL, NULL));
    }
}

/* -------------------------------------------------------------- the model */

/* AdamW (weight decay 0.01, not on the biases), lr 0.02, K micro-steps per
 * update, the gradient clipped to global norm 0.3 (it bites in early updates). */
static clg_model *make_model(void)
{
    clg_config cfg = clg_config_init(CLG_ADAMW);
    cfg.lr = 2e-2f;
    cfg.accum_steps = K;
    cfg.clip_norm = 0.3f;
    clg_model *model;
    int no_decay, t;
    CLG_CHECK(clg_model_create(ctx, &cfg, &model));
    CLG_CHECK(clg_model_add_group(model, "no_decay", 1.0f, 0.0f, &no_decay));
    static const char *names[N_TENSORS] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};
    static const size_t shapes[N_TENSORS][2] = {{H, D}, {H, 1}, {C, H}, {C, 1}};
    for (int i = 0; i < N_TENSORS; i++) {
        int bias = i == B1 || i == B2;
        CLG_CHECK(clg_model_add_tensor(model, names[i], shapes[i][0] * shapes[i][1],
                                       bias ? no_decay : 0, &t));
        if (t != i) /* clgrad numbers tensors 0, 1, ... as they are added */
            die(__LINE__, "clg_model_add_tensor", t, "unexpected tensor id");
        /* for the checkpoint: PyTorch then sees fc1.weight as [64, 2] */
        CLG_CHECK(clg_model_set_tensor_shape(model, t, bias ? 1 : 2, shapes[i]));
    }
    CLG_CHECK(clg_model_finalize(model)); /* allocates the arenas on the device */
    return model;
}

/* Uniform in [0, 1) from a fixed seed (Knuth's 64-bit LCG, its top 53 bits). */
static double uniform(void)
{
    static uint64_t state = 42;
    state = state * 6364136223846793005u + 1442695040888963407u;
    return (double)(state >> 11) * 0x1.0p-53;
}

static cl_mem buffer(size_t bytes, void *host)
{
    cl_int err;
    cl_mem mem = clCreateBuffer(clg_context_cl(ctx), host ? CL_MEM_COPY_HOST_PTR : 0, bytes, host,
                                &err);
    CL_CHECK(err);
    return mem;
}

/* ------------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    const char *checkpoint = argc > 1 ? argv[1] : "train_mlp.ckpt";

    /* 1. The device: CLGRAD_DEVICE if set, else the first GPU, else any. */
    clg_status st = clg_context_create(&ctx, NULL);
    if (st == CLG_ERR_NO_DEVICE) {
        fprintf(stderr, "train_mlp: %s\n", clg_last_error(NULL));
        return 77; /* the tests' "skipped" */
    }
    CLG_CHECK(st);
    queue = clg_context_queue(ctx); /* CLBlast, our kernels and clgrad share it */
    printf("device: %s\n", clg_context_device_info(ctx)->name);

    /* 2. The data: class c's points at radius t and angle 4(c + t) plus noise
     * (CS231n's spirals), in random order. It goes to the device once, beside
     * the network's buffers and kernels. */
    static float x[N * D];
    static cl_int y[N];
    for (int i = 0; i < N; i++) {
        double t = uniform(), noise = sqrt(-2 * log(1 - uniform())) * cos(6.283185 * uniform());
        y[i] = (cl_int)(uniform() * C);
        x[i * D] = (float)(t * cos(4 * (y[i] + t) + 0.2 * noise));
        x[i * D + 1] = (float)(t * sin(4 * (y[i] + t) + 0.2 * noise));
    }
    x_dev = buffer(sizeof x, x), y_dev = buffer(sizeof y, y), ones = buffer(sizeof(float) * M, NULL);
    CL_CHECK(clEnqueueFillBuffer(queue, ones, &(float){1.0f}, sizeof(float), 0, sizeof(float) * M,
                                 0, NULL, NULL));
    h = buffer(sizeof(float) * M * H, NULL), dh = buffer(sizeof(float) * M * H, NULL);
    z = buffer(sizeof(float) * M * C, NULL), loss_dev = buffer(sizeof(float) * N, NULL);
    cl_int err;
    cl_device_id device = clg_context_device(ctx);
    cl_program program = clCreateProgramWithSource(clg_context_cl(ctx), 1, &kernel_source, NULL, &err);
    CL_CHECK(err);
    if (clBuildProgram(program, 1, &device, "", NULL, NULL) != CL_SUCCESS) {
        char log[4096] = ""; /* the compiler's messages, for whoever edits the kernels */
        clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        die(__LINE__, "clBuildProgram", CL_BUILD_PROGRAM_FAILURE, log);
    }
    for (int i = 0; i < N_KERNELS; i++) {
        kernels[i] = clCreateKernel(program, kernel_names[i], &err);
        CL_CHECK(err);
    }
    CL_CHECK(clSetKernelArg(kernels[RELU], 0, sizeof h, &h));
    CL_CHECK(clSetKernelArg(kernels[RELU_GRAD], 0, sizeof dh, &dh));
    CL_CHECK(clSetKernelArg(kernels[RELU_GRAD], 1, sizeof h, &h));
    CL_CHECK(clSetKernelArg(kernels[XENT], 0, sizeof z, &z));
    CL_CHECK(clSetKernelArg(kernels[XENT], 1, sizeof(cl_uint), &(cl_uint){C}));
    CL_CHECK(clSetKernelArg(kernels[XENT], 2, sizeof y_dev, &y_dev));
    CL_CHECK(clSetKernelArg(kernels[XENT], 3, sizeof loss_dev, &loss_dev));

    /* 3. The model, with nn.Linear's initialization U(±1/sqrt(fan-in)), in
     * tensor order. */
    clg_model *model = make_model();
    size_t n_params = (size_t)clg_model_param_count(model);
    float *params = malloc(n_params * sizeof *params), *resumed = malloc(n_params * sizeof *resumed);
    if (!params || !resumed)
        die(__LINE__, "malloc", 0, "out of memory");
    for (size_t i = 0; i < n_params; i++)
        params[i] = (float)((2 * uniform() - 1) / sqrt(i < H * D + H ? D : H));
    CLG_CHECK(clg_model_upload_params(model, CLG_ALL_TENSORS, params, n_params, NULL));

    /* 4. Training, in the same order each epoch. The loss printed is the
     * batch's before its update; reading it back (and the norm) is the only wait. */
    double first_loss = 0, epoch_loss = 0;
    for (int u = 0; u < EPOCHS * (N / BATCH); u++) {
        size_t first = (size_t)(u % (N / BATCH)) * BATCH;
        float loss[BATCH], mean = 0;
        train_update(model, first);
        CL_CHECK(clEnqueueReadBuffer(queue, loss_dev, CL_TRUE, first * sizeof(float), sizeof loss,
                                     loss, 0, NULL, NULL));
        for (int r = 0; r < BATCH; r++)
            mean += loss[r] / BATCH;
        first_loss = u == 0 ? mean : first_loss;
        epoch_loss = (first == 0 ? 0 : epoch_loss) + (double)mean * BATCH / N;
        clg_stats stats = clg_stats_init();
        CLG_CHECK(clg_model_stats(model, 1, &stats)); /* the norm before clipping */
        printf("update %3d  loss %.4f  grad norm %.3f%s\n", u + 1, mean, (double)stats.grad_norm,
               stats.clip_coef < 1 ? " (clipped)" : "");
    }

    /* 5. The checkpoint holds the whole training state (params, AdamW's m and
     * v, the update count). A fresh model loads it, and both take the same
     * next update: unless all of it came back, their params differ. */
    CLG_CHECK(clg_checkpoint_save(model, checkpoint, NULL, NULL, 0));
    clg_model *again = make_model();
    CLG_CHECK(clg_checkpoint_load(again, checkpoint, NULL, NULL));
    train_update(model, 0);
    train_update(again, 0);
    CLG_CHECK(clg_model_download_params(model, CLG_ALL_TENSORS, params, n_params, NULL));
    CLG_CHECK(clg_model_download_params(again, CLG_ALL_TENSORS, resumed, n_params, NULL));
    int same = memcmp(params, resumed, n_params * sizeof *params) == 0;
    printf("resumed from %s: params %s\n", checkpoint, same ? "equal" : "DIFFER");

    clg_model_destroy(again);
    clg_model_destroy(model);
    free(params), free(resumed);
    for (int i = 0; i < N_KERNELS; i++)
        clReleaseKernel(kernels[i]);
    clReleaseProgram(program);
    cl_mem mems[] = {x_dev, y_dev, loss_dev, h, z, dh, ones};
    for (size_t i = 0; i < sizeof mems / sizeof *mems; i++)
        clReleaseMemObject(mems[i]);
    clg_context_destroy(ctx);

    /* 6. The verdict: the last epoch's mean loss against the first batch's
     * (ln 3 = 1.10 is chance), with room: on PoCL it goes from 1.06 to 0.18. */
    int learned = epoch_loss < 0.3 * first_loss;
    printf("loss: first update %.4f, last epoch %.4f%s\n", first_loss, epoch_loss,
           learned ? "" : ": did not learn");
    return learned && same ? 0 : 1;
}
