"""train_mlp.py - examples/train_mlp.c in Python: a 2 -> 64 -> 3 MLP learns three spiral
arms. pyopencl kernels run the forward and backward and write the gradients straight into
clgrad's accumulator (path B, with opt.accum_beta); clgrad's fused AdamW (k = 4
micro-batches, clipping) steps on the device, and a fresh optimizer resumes from the
checkpoint bit for bit. Exits 1 if it did not learn or the resumed one differs.
    python3 examples/python/train_mlp.py [--epochs N]
"""
import argparse
import sys
import tempfile

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import clgrad

D, H, C = 2, 64, 3           # input, hidden and output widths
M, K, N = 32, 4, 3072        # rows per micro-batch, micro-batches per update, rows
# Every array is a (buffer, element offset) pair: clgrad's tensors live inside its arenas.
SRC = """
#define ARR(t, a) __global t *a##_buf, uint a##_off
#define AT(a) (a##_buf + a##_off)
__kernel void dense(ARR(const float, x), ARR(const float, w), ARR(const float, b),
                    ARR(float, y), uint in, int relu) {   /* y = x w^T + b, ReLU or not */
    uint r = get_global_id(0), j = get_global_id(1), out = get_global_size(1);
    float s = AT(b)[j];
    for (uint d = 0; d < in; d++) s += AT(x)[r * in + d] * AT(w)[j * in + d];
    AT(y)[r * out + j] = relu ? fmax(s, 0.0f) : s;
}
__kernel void xent(ARR(float, z), ARR(const int, y), ARR(float, loss)) { /* z -> dloss/dz */
    uint r = get_global_id(0);
    __global float *zr = AT(z) + r * 3;
    int label = AT(y)[r];
    float mx = fmax(fmax(zr[0], zr[1]), zr[2]), s = 0.0f;
    for (uint j = 0; j < 3; j++) s += exp(zr[j] - mx);
    AT(loss)[r] = log(s) + mx - zr[label];
    for (uint j = 0; j < 3; j++) zr[j] = exp(zr[j] - mx) / s - (j == label ? 1.0f : 0.0f);
}
__kernel void back(ARR(const float, dz), ARR(const float, w), ARR(const float, h),
                   ARR(float, dh)) {                      /* dh = dz w * relu'(h) */
    uint r = get_global_id(0), j = get_global_id(1), n = get_global_size(1);
    float s = 0.0f;
    for (uint c = 0; c < 3; c++) s += AT(dz)[r * 3 + c] * AT(w)[c * n + j];
    AT(dh)[r * n + j] = AT(h)[r * n + j] > 0.0f ? s : 0.0f;
}
/* g = beta g + a^T b over the micro-batch's rows (b_buf NULL: ones, a bias), as a GEMM */
__kernel void grad(ARR(float, g), ARR(const float, a), ARR(const float, b), uint rows,
                   float beta) {
    uint i = get_global_id(0), k = get_global_id(1), ni = get_global_size(0);
    uint nk = get_global_size(1);
    float s = 0.0f;
    for (uint r = 0; r < rows; r++) s += AT(a)[r * ni + i] * (b_buf ? AT(b)[r * nk + k] : 1.0f);
    AT(g)[i * nk + k] = beta == 0.0f ? s : AT(g)[i * nk + k] + s;
}"""


def spirals(rng):  # CS231n's: class c's points at radius t and angle 4 (c + t) plus noise
    t, y = rng.random(N), rng.integers(0, C, N)
    a = 4 * (y + t) + 0.2 * rng.standard_normal(N)
    return np.stack([t * np.cos(a), t * np.sin(a)], 1).astype(np.float32), y.astype(np.int32)


def arg(a, rows=0, width=1):  # an array, from row `rows` of `width` elements, as (buffer, offset)
    return a.base_data, np.uint32(a.offset // a.dtype.itemsize + rows * width)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    epochs = parser.parse_args().epochs
    ctx = clgrad.Context()  # CLGRAD_DEVICE, else the first GPU, else any device
    q, prg = ctx.queue, cl.Program(ctx.cl_context, SRC).build()
    rng = np.random.default_rng(42)
    xs, ys = spirals(rng)
    x, y, loss = cla.to_device(q, xs), cla.to_device(q, ys), cla.zeros(q, N, np.float32)
    h, z, dh = (cla.zeros(q, (M, n), np.float32) for n in (H, C, H))
    shapes = {"fc1.weight": (H, D), "fc1.bias": (H,), "fc2.weight": (C, H), "fc2.bias": (C,)}
    init = {k: (rng.uniform(-1, 1, s) / np.sqrt(D if k.startswith("fc1") else H))
            .astype(np.float32) for k, s in shapes.items()}  # nn.Linear's U(+-1/sqrt(fan-in))
    # AdamW, weight decay 0.01 except on the biases, gradient clipped to global norm 0.3
    make = lambda: clgrad.AdamW(  # noqa: E731
        ctx, [{"params": {k: v for k, v in init.items() if "weight" in k}},
              {"params": {k: v for k, v in init.items() if "bias" in k}, "weight_decay": 0.0}],
        lr=2e-2, accum_steps=K, clip_norm=0.3)
    none = (None, np.uint32(0))

    def update(opt, first):  # K micro-steps of M rows, weight M each: the mean over K*M rows
        p, g = (lambda n: arg(opt.params[n])), (lambda n: arg(opt.grad_acc[n]))
        for row in range(first, first + K * M, M):
            prg.dense(q, (M, H), None, *arg(x, row, D), *p("fc1.weight"), *p("fc1.bias"),
                      *arg(h), np.uint32(D), np.int32(1))
            prg.dense(q, (M, C), None, *arg(h), *p("fc2.weight"), *p("fc2.bias"), *arg(z),
                      np.uint32(H), np.int32(0))
            prg.xent(q, (M,), None, *arg(z), *arg(y, row), *arg(loss, row))
            prg.back(q, (M, H), None, *arg(z), *p("fc2.weight"), *arg(h), *arg(dh))
            beta = np.float32(opt.accum_beta)  # 0 on a cycle's first micro-step: overwrite
            for name, shape, a, b in (("fc2.weight", (C, H), z, arg(h)),
                                      ("fc2.bias", (C, 1), z, none),
                                      ("fc1.weight", (H, D), dh, arg(x, row, D)),
                                      ("fc1.bias", (H, 1), dh, none)):
                prg.grad(q, shape, None, *g(name), *arg(a), *b, np.uint32(M), beta)
            opt.step(float(M))
        return float(loss[first:first + K * M].get().mean())  # the batch's loss before its update

    opt, per_epoch = make(), N // (M * K)
    losses = [update(opt, (u % per_epoch) * M * K) for u in range(epochs * per_epoch)]
    last = float(np.mean(losses[-per_epoch:]))
    print("device: %s\nloss: first update %.4f, last epoch %.4f"
          % (ctx.device_name, losses[0], last))
    with tempfile.TemporaryDirectory() as tmp:  # the whole training state, then one more update
        opt.save(tmp + "/mlp.safetensors")
        again = make()
        again.load(tmp + "/mlp.safetensors")
    update(opt, 0), update(again, 0)
    same = all(np.array_equal(opt.download(n), again.download(n)) for n in init)
    print("resumed: params", "equal" if same else "DIFFER")
    sys.exit(0 if same and last < 0.3 * losses[0] else 1)


if __name__ == "__main__":
    main()
