"""Path B (a pyopencl kernel writes w*g into opt.grad_acc, with
opt.accum_beta) and path A (the same gradients in clgrad's external
buffers, weight w) give the same params after the same updates: equal to
fp32 rounding (|difference| <= 1e-6 + 1e-6 |p|)."""
import numpy as np
import pyopencl as cl
from pyopencl.elementwise import ElementwiseKernel

import clgrad
from conftest import micro_grads

SHAPES = {"w": (32, 24), "b": (32,)}
WEIGHTS = [3.0, 1.0, 0.5, 2.0]


def test_path_b_matches_path_a(ctx):
    # Like a GEMM's beta: 0 overwrites the last cycle's gradient, 1 adds.
    write = ElementwiseKernel(ctx.cl_context, "float *acc, const float *g, float w, float beta",
                              "acc[i] = beta == 0.0f ? w * g[i] : acc[i] + w * g[i]")
    rng = np.random.default_rng(3)
    init = {n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in SHAPES.items()}
    a = clgrad.AdamW(ctx, init, lr=1e-2, accum_steps=4, clip_norm=0.5)
    b = clgrad.AdamW(ctx, init, lr=1e-2, accum_steps=4, clip_norm=0.5)
    grads_a = a.grads()
    for update in micro_grads(SHAPES, 4, 10, len(WEIGHTS)):
        for w, g in zip(WEIGHTS, update):
            for n in SHAPES:  # path A: the device buffers clgrad reads
                grads_a.upload(n, g[n])
            a.step(w, grads_a)
            beta = b.accum_beta
            for n in SHAPES:  # path B: our kernel writes into clgrad's accumulator
                src = cl.array.to_device(ctx.queue, g[n])
                write(b.grad_acc[n], src, np.float32(w), np.float32(beta))
            b.step(w)
    assert b.stats()["updates"] == a.stats()["updates"] == 10
    for n in SHAPES:
        pa, pb = a.download(n), b.params[n].get()
        np.testing.assert_allclose(pb, pa, rtol=1e-6, atol=1e-6, err_msg=n)
        assert not np.array_equal(pb, init[n])
