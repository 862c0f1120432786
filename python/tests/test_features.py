"""Keywords that reach clg_config: schedules (lr of each update against the
header's formula), flush of a partial cycle (against torch.optim.SGD on
the partial window's weighted mean), and dynamic loss scaling with skipped
non-finite updates on Q8 states."""
import math

import numpy as np
import pytest
import torch

import clgrad


def test_cosine_schedule_with_warmup(ctx):
    lr, warmup, total, min_lr = 0.1, 2, 6, 1e-3
    opt = clgrad.SGD(ctx, {"w": 8}, lr=lr, schedule="cosine", warmup=warmup,
                     total_steps=total, min_lr=min_lr)
    for t in range(8):
        opt.step(1.0, {"w": np.ones(8, np.float32)})
        if t < warmup:
            want = lr * (t + 1) / warmup
        elif t < total:
            want = min_lr + (lr - min_lr) * 0.5 * (1 + math.cos(math.pi * (t - warmup)
                                                                / (total - warmup)))
        else:
            want = min_lr
        assert opt.stats()["lr"] == pytest.approx(want, rel=1e-6), t


def test_flush_partial_cycle(ctx):
    rng = np.random.default_rng(5)
    init, g1, g2 = (rng.standard_normal(16).astype(np.float32) for _ in range(3))
    # SGD: the update is lr times the gradient itself (Adam's first step is
    # about lr * sign(g), blind to the weights)
    opt = clgrad.SGD(ctx, {"w": init}, lr=0.1, momentum=0.9, accum_steps=4)
    assert not opt.step(1.0, {"w": g1}) and not opt.step(3.0, {"w": g2})
    opt.flush()
    ref = torch.tensor(init, dtype=torch.float64, requires_grad=True)
    topt = torch.optim.SGD([ref], lr=0.1, momentum=0.9)
    g1, g2 = (torch.tensor(g, dtype=torch.float64) for g in (g1, g2))
    ref.grad = (g1 + 3 * g2) / 4  # mean mode: the partial window's own weights
    topt.step()
    np.testing.assert_allclose(opt.download("w"), ref.detach().numpy(), rtol=1e-6, atol=1e-7)
    assert opt.stats()["updates"] == 1 and opt.micro_step_index == 0


def test_dynamic_loss_scale_skips_nonfinite(ctx):
    n = 8192  # above state_min_size: Q8 states
    opt = clgrad.AdamW(ctx, {"w": np.ones(n, np.float32)}, loss_scale="dynamic",
                       state_dtype="q8", nonfinite="skip_update")
    assert opt.loss_scale == 65536.0
    bad = np.ones(n, np.float32)
    bad[7] = np.inf
    opt.step(1.0, {"w": bad})
    stats = opt.stats()
    assert stats["skipped_updates"] == 1 and stats["updates"] == 0
    assert stats["loss_scale"] == 32768.0
    np.testing.assert_array_equal(opt.download("w"), np.ones(n, np.float32))
    opt.step(1.0, {"w": np.full(n, 65536.0 / 2, np.float32)})  # scaled by the loss scale
    assert opt.stats()["updates"] == 1
    assert np.all(opt.download("w") < 1.0)
