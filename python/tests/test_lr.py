"""The lr after creation, as torch.optim users change it (issue 35: `opt.lr
= 0.0` used to be ignored, the next update still used the old lr):
opt.lr (the optimizer's; every group's lr is a multiple of it) and
opt.param_groups[i]["lr"] (one group), from the next update on, in the
middle of a cycle too. Checked against torch.optim in float64 given the
same lrs (the tolerances of test_torch_parity.py), against the header's
schedule formula, and param_groups' keys and values against torch.optim's
own param_groups."""
import numpy as np
import pytest
import torch

import clgrad
from conftest import micro_grads

SHAPES = {"fc.weight": (16, 8), "fc.bias": (16,)}
WEIGHTS = [1.0, 2.5]  # k = 2
ATOL, RTOL = 2e-6, 2e-5


def test_lr_zero_freezes_the_params(ctx):
    rng = np.random.default_rng(7)
    init, g = (rng.standard_normal(32).astype(np.float32) for _ in range(2))
    opt = clgrad.SGD(ctx, {"w": init}, lr=0.01)
    opt.step(1.0, {"w": g})
    before = opt.download("w")
    assert not np.array_equal(before, init)
    opt.lr = 0.0
    opt.step(1.0, {"w": g})
    assert opt.lr == 0.0 and opt.stats()["lr"] == 0.0
    np.testing.assert_array_equal(opt.download("w"), before)


def test_lr_is_the_schedules_peak(ctx):
    """With warmup, opt.lr is the lr warmup climbs to: lr (t + 1) / warmup
    with the new lr from the next update on (clgrad.h's formula)."""
    opt = clgrad.SGD(ctx, {"w": 8}, lr=0.1, warmup=4)
    seen = []
    for t in range(6):
        if t == 2:
            opt.lr = 0.2
        opt.step(1.0, {"w": np.ones(8, np.float32)})
        seen.append(opt.stats()["lr"])
    want = [0.1 * 1 / 4, 0.1 * 2 / 4, 0.2 * 3 / 4, 0.2 * 4 / 4, 0.2, 0.2]
    np.testing.assert_allclose(seen, want, rtol=1e-6)


def test_lr_changes_match_torch(ctx):
    """AdamW, the biases in a group of half the lr and no decay. After
    update 3 (between cycles) each group gets an lr of its own through
    param_groups; in the middle of update 6's cycle opt.lr changes, which
    scales both groups. torch.optim gets the lrs clgrad reports."""
    rng = np.random.default_rng(1)
    init = {n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in SHAPES.items()}
    ref = {n: torch.tensor(v, dtype=torch.float64, requires_grad=True) for n, v in init.items()}
    kw = dict(lr=1e-2, betas=(0.9, 0.99), weight_decay=0.05)
    opt = clgrad.AdamW(ctx, [{"params": {"fc.weight": init["fc.weight"]}},
                             {"params": {"fc.bias": init["fc.bias"]}, "lr": 5e-3,
                              "weight_decay": 0.0}], accum_steps=len(WEIGHTS), **kw)
    topt = torch.optim.AdamW([{"params": [ref["fc.weight"]]},
                              {"params": [ref["fc.bias"]], "lr": 5e-3, "weight_decay": 0.0}],
                             **kw)
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([1e-2, 5e-3], rel=1e-7)
    for update, grads in enumerate(micro_grads(SHAPES, 2, 9, len(WEIGHTS))):
        if update == 3:
            for group, lr in zip(opt.param_groups, (3e-3, 1e-3)):
                group["lr"] = lr
            assert opt.lr == pytest.approx(1e-2, rel=1e-7)  # the optimizer's own stays
        for j, (w, g) in enumerate(zip(WEIGHTS, grads)):
            if update == 6 and j == 1:
                opt.lr = 2e-3  # mid-cycle: both groups scale with it
                assert [g["lr"] for g in opt.param_groups] == pytest.approx([6e-4, 2e-4],
                                                                            rel=1e-6)
            assert opt.step(w, g) == (j == len(WEIGHTS) - 1)
        for group, cgroup in zip(topt.param_groups, opt.param_groups):
            group["lr"] = cgroup["lr"]
        for n, t in ref.items():
            t.grad = sum(w * torch.tensor(g[n], dtype=torch.float64)
                         for w, g in zip(WEIGHTS, grads)) / sum(WEIGHTS)
        topt.step()
    for n, t in ref.items():
        np.testing.assert_allclose(opt.download(n), t.detach().numpy(), rtol=RTOL, atol=ATOL,
                                   err_msg=n)


@pytest.mark.parametrize("kind, theirs, kw", [
    (clgrad.AdamW, torch.optim.AdamW, dict(lr=1e-2, betas=(0.8, 0.9), eps=1e-7, amsgrad=True)),
    (clgrad.Adam, torch.optim.Adam, dict(lr=1e-2, weight_decay=0.01, maximize=True)),
    (clgrad.SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
], ids=["adamw", "adam", "sgd"])
def test_param_groups_as_torch(ctx, kind, theirs, kw):
    """Every key of a group is one torch.optim's group has, with its value
    (clgrad's float32 rounding aside); "params" names the tensors."""
    opt = kind(ctx, [{"params": {"w": 4}}, {"params": {"b": 2}, "lr": kw["lr"] / 4,
                                           "weight_decay": 0.0}], **kw)
    w, b = torch.zeros(4, requires_grad=True), torch.zeros(2, requires_grad=True)
    topt = theirs([{"params": [w]}, {"params": [b], "lr": kw["lr"] / 4, "weight_decay": 0.0}],
                  **kw)
    for ours, group, names in zip(opt.param_groups, topt.param_groups, (["w"], ["b"])):
        assert set(ours) < set(group) and ours["params"] == names
        for key in set(ours) - {"params"}:
            assert ours[key] == pytest.approx(group[key], rel=1e-6), key
