"""The deferred end of a cycle, step_collect + finish_cycle (clg_step_collect,
clg_finish_cycle): with nothing done in between, bitwise the params of
step() on paths A and B (clgrad.h: bitwise without statistics); with the
accumulators of two "ranks" summed in between (a data-parallel all-reduce
done by hand on grad_acc), the update of torch.optim.AdamW in float64 on
the mean over both ranks' weighted gradients, clipped by the norm of that
sum (the statistics read grad_acc as it is at finish_cycle)."""
import numpy as np
import pyopencl as cl
import pytest
import torch

import clgrad
from conftest import micro_grads

SHAPES = {"w": (24, 16), "b": (24,)}
WEIGHTS = [1.0, 3.0, 0.5]  # k = 3
CLIP = 0.1
ATOL, RTOL = 2e-6, 2e-5


def initial():
    rng = np.random.default_rng(11)
    return {n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in SHAPES.items()}


@pytest.mark.parametrize("path", ["A", "B"])
def test_nothing_between_is_step(ctx, path):
    a = clgrad.AdamW(ctx, initial(), lr=1e-2, accum_steps=len(WEIGHTS))
    b = clgrad.AdamW(ctx, initial(), lr=1e-2, accum_steps=len(WEIGHTS))
    for update in micro_grads(SHAPES, 5, 4, len(WEIGHTS)):
        for j, (w, g) in enumerate(zip(WEIGHTS, update)):
            last = j == len(WEIGHTS) - 1
            if path == "A":
                assert a.step(w, g) == last and b.step_collect(w, g) == last
            else:  # path B: w * g into the accumulator, with accum_beta
                for opt in (a, b):
                    for n in SHAPES:
                        acc = opt.grad_acc[n]
                        acc.set(w * g[n] + (acc.get() if opt.accum_beta else 0))
                assert a.step(w) == last and b.step_collect(w) == last
        b.finish_cycle(sum(WEIGHTS))
    assert a.stats()["updates"] == b.stats()["updates"] == 4
    for n in SHAPES:
        np.testing.assert_array_equal(b.download(n), a.download(n), err_msg=n)


def test_summed_accumulators_match_torch(ctx):
    ranks = [clgrad.AdamW(ctx, initial(), lr=1e-2, accum_steps=len(WEIGHTS), clip_norm=CLIP)
             for _ in range(2)]
    ref = {n: torch.tensor(v, dtype=torch.float64, requires_grad=True)
           for n, v in initial().items()}
    topt = torch.optim.AdamW(list(ref.values()), lr=1e-2)
    data = [micro_grads(SHAPES, 20 + r, 5, len(WEIGHTS)) for r in range(2)]
    for update in range(5):
        for rank, opt in enumerate(ranks):
            for j, (w, g) in enumerate(zip(WEIGHTS, data[rank][update])):
                assert opt.step_collect(w, g) == (j == len(WEIGHTS) - 1)
        for n in SHAPES:  # the all-reduce: both accumulators become their sum
            a, b = ranks[0].grad_acc[n], ranks[1].grad_acc[n]
            a += b
            cl.enqueue_copy(ctx.queue, b.base_data, a.base_data, byte_count=a.nbytes,
                            src_offset=a.offset, dst_offset=b.offset)
        for opt in ranks:
            opt.finish_cycle(2 * sum(WEIGHTS))
        for n, t in ref.items():
            t.grad = sum(w * torch.tensor(g[n], dtype=torch.float64) for rank in range(2)
                         for w, g in zip(WEIGHTS, data[rank][update])) / (2 * sum(WEIGHTS))
        norm = torch.nn.utils.clip_grad_norm_(list(ref.values()), CLIP)
        assert ranks[0].stats()["grad_norm"] == pytest.approx(float(norm), rel=1e-5)
        assert float(norm) > CLIP  # clipping bites
        topt.step()
    for n, t in ref.items():
        np.testing.assert_array_equal(ranks[0].download(n), ranks[1].download(n))
        np.testing.assert_allclose(ranks[0].download(n), t.detach().numpy(), rtol=RTOL,
                                   atol=ATOL, err_msg=n)


def test_reset_drops_a_pending_cycle(ctx):
    opt = clgrad.SGD(ctx, {"w": np.ones(4, np.float32)}, lr=0.5)
    assert opt.step_collect(1.0, {"w": np.ones(4, np.float32)})
    opt.reset_cycle()
    assert opt.step(1.0, {"w": np.full(4, 2.0, np.float32)})  # no longer pending
    np.testing.assert_array_equal(opt.download("w"), np.zeros(4, np.float32))
