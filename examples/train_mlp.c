/* train_mlp.c - a first clgrad program, to read top to bottom. A 2 -> 64 -> 3 MLP (ReLU,
 * softmax cross-entropy) learns the three arms of a spiral made from a fixed seed, which
 * no linear model can tell apart. CLBlast's GEMMs write the gradients straight into
 * clgrad's accumulator (path B), an update is K micro-batches, AdamW clips and steps on
 * the device, and a fresh model resumes from the checkpoint bit for bit. Exits 1 if the
 * model did not learn or the resumed one differs (77: no OpenCL device).
 *   meson compile -C build examples/train_mlp && build/examples/train_mlp [CHECKPOINT]
 */
#include <clblast_c.h>
#include <clgrad.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { D = 2, H = 64, C = 3 };             /* input, hidden and output widths */
enum { M = 32, K = 4, BATCH = M * K };     /* rows per micro-batch, micro-batches per update */
enum { N = 3072, EPOCHS = 5 };             /* rows in the data set, passes over it */
enum { W1, B1, W2, B2, N_TENSORS };        /* tensor ids: clgrad numbers them as they are added */
enum { N_PARAMS = H * D + H + C * H + C }; /* the four tensors' elements */
static clg_context *ctx;
static cl_command_queue queue; /* clgrad's, in order: CLBlast and our kernels use it too */

/* clgrad's calls return 0 or a CLG_ERR_* (clg_last_error says which call failed and
 * why); OpenCL's and CLBlast's return 0 or an OpenCL error code. */
#define CHECK(call) check((int)(call), __LINE__, #call, NULL)
static void check(int status, int line, const char *call, const char *why)
{
    if (status == 0)
        return;
    int ours = status >= CLG_ERR_LAST && status <= CLG_ERR_FIRST;
    fprintf(stderr, "train_mlp.c:%d: %s: status %d: %s\n", line, call, status,
            why ? why : (ours ? clg_last_error(ctx) : "OpenCL error"));
    exit(1);
}

/* Every product, bias adds and bias gradients included, is a CLBlast GEMM; these
 * kernels do the rest, one work-item per element (xent: per row). */
#define OPENCL_C(...) #__VA_ARGS__
static const char *kernel_source = OPENCL_C(
    __kernel void relu(__global float *h) {
        h[get_global_id(0)] = fmax(h[get_global_id(0)], 0.0f);
    }
    __kernel void relu_grad(__global float *dh, __global const float *h) {
        size_t i = get_global_id(0);
        dh[i] = h[i] > 0.0f ? dh[i] : 0.0f; /* only where the ReLU let its input through */
    }
    /* Data row i (the launch starts at the micro-batch's first; z holds the micro-batch
     * only): its loss -log softmax(z)[label], and z becomes softmax(z) - onehot(label),
     * the gradient of the summed loss (path B wants weight M times the mean gradient). */
    __kernel void xent(__global float *z, __global const int *labels, __global float *loss,
                       uint classes) {
        uint i = get_global_id(0), y = labels[i];
        __global float *zr = z + (i - get_global_offset(0)) * classes;
        float mx = zr[0], s = 0.0f;
        for (uint j = 1; j < classes; j++)
            mx = fmax(mx, zr[j]);
        for (uint j = 0; j < classes; j++)
            s += exp(zr[j] - mx);
        loss[i] = log(s) + mx - zr[y];
        for (uint j = 0; j < classes; j++)
            zr[j] = exp(zr[j] - mx) / s - (j == y ? 1.0f : 0.0f);
    });
enum { RELU, RELU_GRAD, XENT, N_KERNELS };
static cl_kernel kernels[N_KERNELS];

/* The data set (rows of D floats, labels, each row's latest loss), a micro-batch's
 * activations and their gradients, and a column of M ones (a bias enters as ones times
 * b^T, and its gradient is dy^T times ones). */
static clg_view x, y, loss, h, z, dh, ones;

/* Runs a kernel on work-items first .. first + items - 1. */
static void launch(int kernel, size_t first, size_t items)
{
    CHECK(clEnqueueNDRangeKernel(queue, kernels[kernel], 1, &first, &items, NULL, 0, NULL, NULL));
}

/* C[m x n] = op(A) op(B) + beta C, row-major and dense; ta, tb: A, B transposed. */
static void gemm(int ta, int tb, size_t m, size_t n, size_t k, clg_view a, clg_view b, float beta,
                 clg_view c)
{
    CHECK(CLBlastSgemm(CLBlastLayoutRowMajor, ta ? CLBlastTransposeYes : CLBlastTransposeNo,
                       tb ? CLBlastTransposeYes : CLBlastTransposeNo, m, n, k, 1.0f, a.mem,
                       a.offset, ta ? m : k, b.mem, b.offset, tb ? k : n, beta, c.mem, c.offset, n,
                       &queue, NULL));
}

/* One micro-step: M rows from `row` forward (their losses land in loss), then back, the
 * GEMMs writing the four gradients straight into clgrad's accumulator (path B) with
 * beta = clg_accum_beta(model): 0 on an update's first micro-step, so that they
 * overwrite the last update's gradient (no zeroing pass), and 1 after. */
static void micro_step(clg_model *model, size_t row)
{
    clg_view p[N_TENSORS], g[N_TENSORS]; /* where the params and gradients live */
    for (int i = 0; i < N_TENSORS; i++) {
        CHECK(clg_model_param_view(model, i, &p[i]));
        CHECK(clg_model_acc_view(model, i, &g[i]));
    }
    clg_view xb = {x.mem, row * D, M * D};  /* the micro-batch's rows of x */
    gemm(0, 1, M, H, D, xb, p[W1], 0, h);   /* h = x W1^T */
    gemm(0, 0, M, H, 1, ones, p[B1], 1, h); /*   + 1 b1^T */
    launch(RELU, 0, M * H);
    gemm(0, 1, M, C, H, h, p[W2], 0, z);    /* z = h W2^T */
    gemm(0, 0, M, C, 1, ones, p[B2], 1, z); /*   + 1 b2^T */
    launch(XENT, row, M);                   /* z becomes dz */
    float beta = clg_accum_beta(model);
    gemm(1, 0, C, H, M, z, h, beta, g[W2]);    /* dW2 = dz^T h */
    gemm(1, 0, C, 1, M, z, ones, beta, g[B2]); /* db2 = dz^T 1 */
    gemm(0, 0, M, H, C, z, p[W2], 0, dh);      /* dh = dz W2 */
    launch(RELU_GRAD, 0, M * H);
    gemm(1, 0, H, D, M, dh, xb, beta, g[W1]);   /* dW1 = dh^T x */
    gemm(1, 0, H, 1, M, dh, ones, beta, g[B1]); /* db1 = dh^T 1 */
}

/* One update: K micro-steps of M rows from row `first`, each weighted by its row count
 * (clgrad divides the summed gradients by the summed weights: the mean over K*M rows).
 * The K-th clg_step enqueues the gradient's norm, the clipping and AdamW. */
static void train_update(clg_model *model, size_t first)
{
    for (size_t j = 0; j < K; j++) {
        micro_step(model, first + j * M);
        CHECK(clg_step(model, NULL /* path B */, (float)M, NULL, NULL));
    }
}

/* AdamW (weight decay 0.01, not on the biases), lr 0.02, K micro-steps per update, the
 * gradient clipped to global norm 0.3 (it bites in early updates). */
static clg_model *make_model(void)
{
    static const char *names[N_TENSORS] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};
    static const size_t shapes[N_TENSORS][2] = {{H, D}, {H, 1}, {C, H}, {C, 1}};
    clg_config cfg = clg_config_init(CLG_ADAMW);
    cfg.lr = 2e-2f;
    cfg.accum_steps = K;
    cfg.clip_norm = 0.3f;
    clg_model *model;
    int no_decay, t;
    CHECK(clg_model_create(ctx, &cfg, &model));
    CHECK(clg_model_add_group(model, "no_decay", 1.0f, 0.0f, &no_decay));
    for (int i = 0; i < N_TENSORS; i++) {
        int bias = i == B1 || i == B2;
        size_t count = shapes[i][0] * shapes[i][1];
        CHECK(clg_model_add_tensor(model, names[i], count, bias ? no_decay : 0, &t));
        /* for the checkpoint: PyTorch then sees fc1.weight as [64, 2] */
        CHECK(clg_model_set_tensor_shape(model, t, bias ? 1 : 2, shapes[i]));
    }
    CHECK(clg_model_finalize(model)); /* allocates the arenas on the device */
    return model;
}

/* Uniform in [0, 1) from a fixed seed (Knuth's 64-bit LCG, its top 53 bits). */
static double uniform(void)
{
    static uint64_t state = 42;
    state = state * 6364136223846793005u + 1442695040888963407u;
    return (double)(state >> 11) * 0x1.0p-53;
}

/* CS231n's spirals, in random order: class c's points at radius t and angle 4(c + t)
 * plus noise. */
static void make_spirals(float *xs, cl_int *ys)
{
    for (int i = 0; i < N; i++) {
        double t = uniform(), r = sqrt(-2 * log(1 - uniform())); /* Box-Muller: a normal */
        double noise = r * cos(6.283185 * uniform());
        ys[i] = (cl_int)(uniform() * C);
        xs[i * D] = (float)(t * cos(4 * (ys[i] + t) + 0.2 * noise));
        xs[i * D + 1] = (float)(t * sin(4 * (ys[i] + t) + 0.2 * noise));
    }
}

/* A device buffer of count floats (or cl_ints: as wide), copied from host if not NULL. */
static clg_view buffer(size_t count, void *host)
{
    cl_int err;
    cl_mem mem = clCreateBuffer(clg_context_cl(ctx), host ? CL_MEM_COPY_HOST_PTR : 0,
                                count * sizeof(float), host, &err);
    CHECK(err);
    return (clg_view){mem, 0, count};
}

int main(int argc, char **argv)
{
    const char *checkpoint = argc > 1 ? argv[1] : "train_mlp.ckpt";

    /* 1. The device: CLGRAD_DEVICE if set, else the first GPU, else any. */
    clg_status st = clg_context_create(&ctx, NULL);
    if (st == CLG_ERR_NO_DEVICE) {
        fprintf(stderr, "train_mlp: %s\n", clg_last_error(NULL));
        return 77; /* the tests' "skipped" */
    }
    CHECK(st);
    queue = clg_context_queue(ctx);
    printf("device: %s\n", clg_context_device_info(ctx)->name);

    /* 2. The data, on the device once, the network's buffers and its kernels. */
    static float xs[N * D];
    static cl_int ys[N];
    make_spirals(xs, ys);
    x = buffer(N * D, xs), y = buffer(N, ys), loss = buffer(N, NULL), ones = buffer(M, NULL);
    h = buffer(M * H, NULL), z = buffer(M * C, NULL), dh = buffer(M * H, NULL);
    CHECK(clEnqueueFillBuffer(queue, ones.mem, &(float){1}, sizeof(float), 0, M * sizeof(float), 0,
                              NULL, NULL));
    cl_int err;
    cl_device_id device = clg_context_device(ctx);
    cl_program program =
        clCreateProgramWithSource(clg_context_cl(ctx), 1, &kernel_source, NULL, &err);
    CHECK(err);
    if (clBuildProgram(program, 1, &device, "", NULL, NULL) != CL_SUCCESS) {
        char log[4096] = ""; /* the compiler's messages, for whoever edits the kernels */
        clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        check(CL_BUILD_PROGRAM_FAILURE, __LINE__, "clBuildProgram", log);
    }
    const char *names[N_KERNELS] = {"relu", "relu_grad", "xent"};
    cl_mem *args[N_KERNELS][3] = {{&h.mem}, {&dh.mem, &h.mem}, {&z.mem, &y.mem, &loss.mem}};
    for (int i = 0; i < N_KERNELS; i++) {
        kernels[i] = clCreateKernel(program, names[i], &err);
        CHECK(err);
        for (cl_uint a = 0; a < 3 && args[i][a]; a++) /* they never change */
            CHECK(clSetKernelArg(kernels[i], a, sizeof(cl_mem), args[i][a]));
    }
    CHECK(clSetKernelArg(kernels[XENT], 3, sizeof(cl_uint), &(cl_uint){C}));

    /* 3. The model, with nn.Linear's initialization U(±1/sqrt(fan-in)). */
    clg_model *model = make_model();
    static float params[N_PARAMS], resumed[N_PARAMS];
    for (size_t i = 0; i < N_PARAMS; i++)
        params[i] = (float)((2 * uniform() - 1) / sqrt(i < H * D + H ? D : H));
    CHECK(clg_model_upload_params(model, CLG_ALL_TENSORS, params, N_PARAMS, NULL));

    /* 4. Training, in the same order each epoch. The loss printed is the batch's before
     * its update; reading it back (and the norm) is the only wait. */
    double first_loss = 0, epoch_loss = 0;
    for (int u = 0; u < EPOCHS * (N / BATCH); u++) {
        size_t first = (size_t)(u % (N / BATCH)) * BATCH;
        float losses[BATCH], mean = 0;
        train_update(model, first);
        CHECK(clEnqueueReadBuffer(queue, loss.mem, CL_TRUE, first * sizeof(float), sizeof losses,
                                  losses, 0, NULL, NULL));
        for (int r = 0; r < BATCH; r++)
            mean += losses[r] / BATCH;
        first_loss = u == 0 ? mean : first_loss;
        epoch_loss = (first == 0 ? 0 : epoch_loss) + (double)mean * BATCH / N;
        clg_stats stats = clg_stats_init();
        CHECK(clg_model_stats(model, 1, &stats)); /* the norm before clipping */
        printf("update %3d  loss %.4f  grad norm %.3f%s\n", u + 1, mean, (double)stats.grad_norm,
               stats.clip_coef < 1 ? " (clipped)" : "");
    }

    /* 5. The checkpoint holds the whole training state (params, AdamW's m and v, the
     * update count). A fresh model loads it, and both take the same next update: unless
     * all of it came back, their params differ. */
    CHECK(clg_checkpoint_save(model, checkpoint, NULL, NULL, 0));
    clg_model *again = make_model();
    CHECK(clg_checkpoint_load(again, checkpoint, NULL, NULL));
    train_update(model, 0);
    train_update(again, 0);
    CHECK(clg_model_download_params(model, CLG_ALL_TENSORS, params, N_PARAMS, NULL));
    CHECK(clg_model_download_params(again, CLG_ALL_TENSORS, resumed, N_PARAMS, NULL));
    int same = memcmp(params, resumed, sizeof params) == 0;
    printf("resumed from %s: params %s\n", checkpoint, same ? "equal" : "DIFFER");

    /* 6. The verdict: the last epoch's mean loss against the first batch's (ln 3 = 1.10 is
     * chance), with room: on PoCL it goes from 1.06 to 0.18. */
    int learned = epoch_loss < 0.3 * first_loss;
    printf("loss: first update %.4f, last epoch %.4f%s\n", first_loss, epoch_loss,
           learned ? "" : ": did not learn");
    clg_model_destroy(again);
    clg_model_destroy(model);
    for (int i = 0; i < N_KERNELS; i++)
        clReleaseKernel(kernels[i]);
    clReleaseProgram(program);
    clg_view bufs[] = {x, y, loss, h, z, dh, ones};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        clReleaseMemObject(bufs[i].mem);
    clg_context_destroy(ctx);
    return learned && same ? 0 : 1;
}
