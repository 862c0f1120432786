"""train_mlp.py: clgrad-train's Fashion-MNIST MLP (784 -> 64 -> 10) in pyopencl. Its kernels write
each gradient into clgrad's accumulator (path B); clgrad's fused AdamW (lr 2e-3, wd 0.01 except
biases) updates every 4 micro-batches of 32. Prints each epoch's test accuracy, as  clgrad-train
--hidden 64 --lr 2e-3 --schedule constant --warmup 0 [--train-limit N --epochs E ...]  does."""
import argparse
import gzip

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import clgrad

DATA, D, H, B, M = "/usr/share/datasets/fashion-mnist", 784, 64, 128, 32  # M rows a micro-batch
NONE = (None, np.uint32(0))
SRC = """#define ARR(t, a) __global t *a##_buf, uint a##_off
#define AT(a) (a##_buf + a##_off)
/* c[i,j] = bias[j] + sum_k a[i sa+k ta] b[k sb+j tb] (no b: 1); 0: +beta c, 1: ReLU, 2: ReLU' */
__kernel void gemm(ARR(float, c), ARR(const float, a), ARR(const float, b), ARR(const float, bias),
                   uint n, uint sa, uint ta, uint sb, uint tb, float beta, int mode) {
    uint i = get_global_id(0), j = get_global_id(1), ij = i * get_global_size(1) + j;
    float s = bias_buf ? AT(bias)[j] : 0.0f;
    for (uint k = 0; k < n; k++) s += AT(a)[i * sa + k * ta] * (b_buf ? AT(b)[k * sb + j * tb] : 1);
    AT(c)[ij] = mode == 1 ? fmax(s, 0.0f) : mode == 2 ? (AT(c)[ij] > 0.0f ? s : 0.0f)
              : beta == 0.0f ? s : beta * AT(c)[ij] + s;
}
__kernel void xent(ARR(float, z), ARR(const int, y)) {  /* logits -> d(cross-entropy)/dz */
    uint r = get_global_id(0), label = AT(y)[r];
    __global float *zr = AT(z) + r * 10;
    float mx = zr[0], s = 0.0f;
    for (uint j = 1; j < 10; j++) mx = fmax(mx, zr[j]);
    for (uint j = 0; j < 10; j++) s += exp(zr[j] - mx);
    for (uint j = 0; j < 10; j++) zr[j] = exp(zr[j] - mx) / s - (j == label ? 1.0f : 0.0f);
}"""


def arg(a, row=0, width=1):  # an array from row `row` as (buffer, element offset): clgrad's
    return a.base_data, np.uint32(a.offset // a.dtype.itemsize + row * width)  # are in arenas


def load(split, n):  # the first n images (pixels / 255) and labels of an IDX pair
    raw = [np.frombuffer(gzip.open("%s/%s-%s-ubyte.gz" % (DATA, split, kind)).read(), np.uint8)
           for kind in ("images-idx3", "labels-idx1")]
    return raw[0][16:16 + n * D].reshape(n, D) / np.float32(255), raw[1][8:8 + n].astype(np.int32)


def main():
    ap = argparse.ArgumentParser()
    for f, d in (("--train-limit", 4096), ("--test-limit", 1000), ("--epochs", 2), ("--seed", 42)):
        ap.add_argument(f, type=int, default=d)
    o = ap.parse_args()
    ctx = clgrad.Context()  # CLGRAD_DEVICE, else the first GPU, else any device
    q, prg, rng = ctx.queue, cl.Program(ctx.cl_context, SRC).build(), np.random.default_rng(o.seed)
    (xs, ys), (xt, yt) = load("train", o.train_limit), load("t10k", o.test_limit)
    init = {n: (rng.uniform(-1, 1, s) / np.sqrt(D if n[2] == "1" else H)).astype(np.float32)
            for n, s in (("fc1.weight", (H, D)), ("fc1.bias", H), ("fc2.weight", (10, H)),
                         ("fc2.bias", 10))}  # nn.Linear's U(+-1/sqrt(fan-in)), as clgrad-train's
    groups = [{"params": {n: v for n, v in init.items() if k in n}, "weight_decay": wd}
              for k, wd in (("weight", 0.01), ("bias", 0.0))]  # biases do not decay
    opt = clgrad.AdamW(ctx, groups, lr=2e-3, accum_steps=B // M)
    P, G = ({n: arg(v[n]) for n in init} for v in (opt.params, opt.grad_acc))  # fixed views
    p, g = P.__getitem__, G.__getitem__

    def mm(shape, c, a, b, n, strides, bias=NONE, beta=0.0, mode=0):  # c = a b (see SRC)
        prg.gemm(q, shape, None, *c, *a, *b, *bias, *map(np.uint32, (n, *strides)),
                 np.float32(beta), np.int32(mode))

    def forward(xr, rows):  # logits of `rows` rows of x from xr (buffer, offset) into z
        mm((rows, H), arg(h), xr, p("fc1.weight"), D, (D, 1, 1, D), p("fc1.bias"), mode=1)
        mm((rows, 10), arg(z), arg(h), p("fc2.weight"), H, (H, 1, 1, H), p("fc2.bias"))

    h, z = (cla.empty(q, (max(M, len(yt)), n), np.float32) for n in (H, 10))  # hidden, logits
    x_test = cla.to_device(q, xt)
    for epoch in range(o.epochs):
        order = rng.permutation(len(ys))  # a new order each epoch; a last partial batch dropped
        x, y = cla.to_device(q, xs[order]), cla.to_device(q, ys[order])
        for row in range(0, len(ys) // B * B, M):  # micro-batches of M rows, weight M
            forward(arg(x, row, D), M)
            prg.xent(q, (M,), None, *arg(z), *arg(y, row))
            beta = opt.accum_beta  # 0 on a cycle's first micro-step: overwrite, then add
            mm((10, H), g("fc2.weight"), arg(z), arg(h), M, (1, 10, H, 1), beta=beta)
            mm((10, 1), g("fc2.bias"), arg(z), NONE, M, (1, 10, 0, 0), beta=beta)
            mm((M, H), arg(h), arg(z), p("fc2.weight"), 10, (10, 1, H, 1), mode=2)  # h := dh
            mm((H, D), g("fc1.weight"), arg(h), arg(x, row, D), M, (1, H, D, 1), beta=beta)
            mm((H, 1), g("fc1.bias"), arg(h), NONE, M, (1, H, 0, 0), beta=beta)
            opt.step(float(M))  # an update every B rows: the mean over them
        forward(arg(x_test), len(yt))
        print(f"epoch {epoch + 1}: test accuracy {np.mean(z.get()[:len(yt)].argmax(1) == yt):.4f}")


if __name__ == "__main__":
    main()
