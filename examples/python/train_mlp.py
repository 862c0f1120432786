"""train_mlp.py - examples/train_mlp.c in Python: a 2 -> 64 -> 3 MLP learns
three spiral arms. pyopencl kernels run the forward and backward and write
the gradients straight into clgrad's accumulator (path B, with
opt.accum_beta); clgrad's fused AdamW (k = 4 micro-batches, clipping) steps
on the device, and a fresh optimizer resumes from the checkpoint bit for bit.
Exits 1 if it did not learn.   python3 examples/python/train_mlp.py [--epochs N]
"""
import argparse, sys, tempfile
import numpy as np
import pyopencl as cl, pyopencl.array as cla
import clgrad

D, H, C, M, K, N = 2, 64, 3, 32, 4, 3072  # widths, rows per micro-batch, micro-batches, rows
SRC = """
#define P(a) (a + a##_off)
__kernel void dense(__global const float *x, uint x_off, __global const float *w, uint w_off,
                    __global const float *b, uint b_off, __global float *y, uint in, int relu) {
    uint r = get_global_id(0), j = get_global_id(1), out = get_global_size(1);
    float s = P(b)[j];
    for (uint d = 0; d < in; d++) s += P(x)[r * in + d] * P(w)[j * in + d];
    y[r * out + j] = relu ? fmax(s, 0.0f) : s;
}
__kernel void xent(__global float *z, __global const int *y, uint y_off, __global float *loss) {
    uint r = get_global_id(0); __global float *zr = z + r * 3; y += y_off;
    float mx = fmax(fmax(zr[0], zr[1]), zr[2]), s = 0.0f;
    for (uint j = 0; j < 3; j++) s += exp(zr[j] - mx);
    loss[r] = log(s) + mx - zr[y[r]];
    for (uint j = 0; j < 3; j++) zr[j] = exp(zr[j] - mx) / s - (j == y[r] ? 1.0f : 0.0f);
}
__kernel void back(__global const float *dz, __global const float *w, uint w_off,
                   __global const float *h, __global float *dh) {   /* dh = dz W2 * relu' */
    uint r = get_global_id(0), j = get_global_id(1), n = get_global_size(1);
    float s = 0.0f;
    for (uint c = 0; c < 3; c++) s += dz[r * 3 + c] * P(w)[c * n + j];
    dh[r * n + j] = h[r * n + j] > 0.0f ? s : 0.0f;
}
/* g[i][k] = beta g[i][k] + sum_r a[r][i] b[r][k] (b NULL: ones): a weight or bias gradient */
__kernel void grad(__global float *g, uint g_off, __global const float *a, __global const float *b,
                   uint b_off, uint rows, float beta) {
    uint i = get_global_id(0), k = get_global_id(1), ni = get_global_size(0), nk = get_global_size(1);
    float s = 0.0f;
    for (uint r = 0; r < rows; r++) s += a[r * ni + i] * (b ? P(b)[r * nk + k] : 1.0f);
    P(g)[i * nk + k] = beta == 0.0f ? s : P(g)[i * nk + k] + s;
}"""

def spirals(rng):
    t, y = rng.random(N), rng.integers(0, C, N)
    a = 4 * (y + t) + 0.2 * rng.standard_normal(N)
    return np.stack([t * np.cos(a), t * np.sin(a)], 1).astype(np.float32), y.astype(np.int32)

def main():
    args = argparse.ArgumentParser(); args.add_argument("--epochs", type=int, default=5)
    epochs = args.parse_args().epochs
    ctx = clgrad.Context(); q = ctx.queue
    prg = cl.Program(ctx.cl_context, SRC).build()
    rng = np.random.default_rng(42)
    xs, ys = spirals(rng)
    x, y, loss = cla.to_device(q, xs), cla.to_device(q, ys), cla.zeros(q, M, np.float32)
    h, z, dh = (cla.zeros(q, (M, n), np.float32) for n in (H, C, H))
    init = {"fc1.weight": (H, D), "fc1.bias": (H,), "fc2.weight": (C, H), "fc2.bias": (C,)}
    init = {k: rng.uniform(-1, 1, s).astype(np.float32) / np.sqrt(s[-1] if len(s) > 1 else H)
            for k, s in init.items()}
    make = lambda: clgrad.AdamW(ctx, [{"params": {k: v for k, v in init.items() if "weight" in k}},
                                      {"params": {k: v for k, v in init.items() if "bias" in k},
                                       "weight_decay": 0.0}],
                                lr=2e-2, accum_steps=K, clip_norm=0.3)
    opt = make()
    # clgrad's tensors as (buffer, element offset) kernel arguments
    at = lambda a: (a.base_data, np.uint32(a.offset // a.dtype.itemsize))

    def update(o, first):  # K micro-steps of M rows, each of weight M (clgrad: mean over K*M)
        p, g = (lambda n: at(o.params[n])), (lambda n: at(o.grad_acc[n]))
        for j in range(K):
            rows = first + j * M
            xb = (x.base_data, np.uint32(rows * D))
            prg.dense(q, (M, H), None, *xb, *p("fc1.weight"), *p("fc1.bias"), h.data, np.uint32(D), np.int32(1))
            prg.dense(q, (M, C), None, h.data, np.uint32(0), *p("fc2.weight"), *p("fc2.bias"), z.data, np.uint32(H), np.int32(0))
            prg.xent(q, (M,), None, z.data, y.data, np.uint32(rows), loss.data)
            beta = np.float32(o.accum_beta)  # 0 on a cycle's first micro-step: overwrite
            prg.back(q, (M, H), None, z.data, *p("fc2.weight"), h.data, dh.data)
            prg.grad(q, (C, H), None, *g("fc2.weight"), z.data, h.data, np.uint32(0), np.uint32(M), beta)
            prg.grad(q, (C, 1), None, *g("fc2.bias"), z.data, None, np.uint32(0), np.uint32(M), beta)
            prg.grad(q, (H, D), None, *g("fc1.weight"), dh.data, *xb, np.uint32(M), beta)
            prg.grad(q, (H, 1), None, *g("fc1.bias"), dh.data, None, np.uint32(0), np.uint32(M), beta)
            o.step(float(M))
        return float(loss.get().mean())

    losses = [update(opt, (u % (N // (M * K))) * M * K) for u in range(epochs * N // (M * K))]
    print("device: %s  loss: first update %.4f, last epoch %.4f" % (ctx.device_name, losses[0], np.mean(losses[-N // (M * K):])))
    with tempfile.TemporaryDirectory() as tmp:
        opt.save(tmp + "/mlp.safetensors")
        again = make(); again.load(tmp + "/mlp.safetensors")
    update(opt, 0); update(again, 0)
    same = all(np.array_equal(opt.download(n), again.download(n)) for n in init)
    print("resumed: params", "equal" if same else "DIFFER")
    sys.exit(0 if same and np.mean(losses[-N // (M * K):]) < 0.5 * losses[0] else 1)

if __name__ == "__main__":
    main()
