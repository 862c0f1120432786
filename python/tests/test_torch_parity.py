"""clgrad's AdamW, Adam (AMSGrad, maximize) and SGD (weight decay, momentum,
Nesterov, maximize) against torch.optim in float64, and Lion (torch has
none) against a float64 numpy Lion written from optax's formula, under
accumulation (k = 4, uneven weights) and clipping by global norm: params
after 20 updates, fed the same gradients through path A. clgrad computes in
fp32: tolerance |clgrad - reference| <= 2e-6 + 2e-5 |reference| per element
(20 updates of fp32 rounding on values of order 1)."""
import numpy as np
import pytest
import torch

import clgrad
from conftest import micro_grads

SHAPES = {"fc.weight": (16, 8), "fc.bias": (16,), "out.weight": (3, 16)}
WEIGHTS = [1.0, 2.5, 0.5, 3.0]  # k = 4, uneven: mean mode divides by their sum
N_UPDATES, CLIP = 20, 0.25
ATOL, RTOL = 2e-6, 2e-5



class NumpyLion:
    """optax.lion (Chen et al. 2023) in float64 numpy, on the reference's
    tensors: c = b1 m + (1 - b1) g; p -= lr (sign(c) + wd p);
    m = b2 m + (1 - b2) g. (clgrad writes the decay as p *= 1 - lr wd before
    the sign step: the same update.)"""

    def __init__(self, params, lr, betas, weight_decay):
        self.params, self.lr, self.betas, self.wd = params, lr, betas, weight_decay
        self.m = [np.zeros(tuple(p.shape)) for p in params]

    def step(self):
        b1, b2 = self.betas
        for p, m in zip(self.params, self.m):
            g, value = p.grad.numpy(), p.detach().numpy()  # value shares p's memory
            c = b1 * m + (1 - b1) * g
            value -= self.lr * (np.sign(c) + self.wd * value)
            m *= b2
            m += (1 - b2) * g


CASES = {
    "adamw": (clgrad.AdamW, torch.optim.AdamW,
              dict(lr=1e-2, betas=(0.9, 0.99), weight_decay=0.05)),
    "adam": (clgrad.Adam, torch.optim.Adam, dict(lr=1e-2, betas=(0.8, 0.999), weight_decay=0.01)),
    "adam_amsgrad": (clgrad.Adam, torch.optim.Adam,
                     dict(lr=1e-2, betas=(0.9, 0.6), weight_decay=0.02, amsgrad=True)),
    "adamw_amsgrad_maximize": (clgrad.AdamW, torch.optim.AdamW,
                               dict(lr=1e-2, betas=(0.8, 0.7), weight_decay=0.1, amsgrad=True,
                                    maximize=True)),
    "sgd_weight_decay": (clgrad.SGD, torch.optim.SGD, dict(lr=5e-2, weight_decay=0.05)),
    "sgd_momentum_maximize": (clgrad.SGD, torch.optim.SGD,
                              dict(lr=5e-2, momentum=0.8, weight_decay=0.02, maximize=True)),
    "lion": (clgrad.Lion, NumpyLion, dict(lr=1e-2, betas=(0.9, 0.99), weight_decay=0.1)),
    "sgd_momentum": (clgrad.SGD, torch.optim.SGD,
                     dict(lr=5e-2, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    "sgd_nesterov": (clgrad.SGD, torch.optim.SGD,
                     dict(lr=5e-2, momentum=0.9, nesterov=True, weight_decay=0.01)),
}


def run_pair(ctx, ours, theirs, kwargs, groups=False):
    rng = np.random.default_rng(1)
    init = {n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in SHAPES.items()}
    ref = {n: torch.tensor(v, dtype=torch.float64, requires_grad=True) for n, v in init.items()}
    if groups:  # the biases in a group of their own: half the lr, no decay
        bias = {n: v for n, v in init.items() if n.endswith("bias")}
        rest = {n: v for n, v in init.items() if n not in bias}
        opt = ours(ctx, [{"params": rest}, {"params": bias, "lr": kwargs["lr"] / 2,
                                            "weight_decay": 0.0}],
                   accum_steps=len(WEIGHTS), clip_norm=CLIP, **kwargs)
        topt = theirs([{"params": [ref[n] for n in rest]},
                       {"params": [ref[n] for n in bias], "lr": kwargs["lr"] / 2,
                        "weight_decay": 0.0}], **kwargs)
    else:
        opt = ours(ctx, init, accum_steps=len(WEIGHTS), clip_norm=CLIP, **kwargs)
        topt = theirs(list(ref.values()), **kwargs)
    clipped = 0
    for update in micro_grads(SHAPES, 2, N_UPDATES, len(WEIGHTS)):
        for j, (w, g) in enumerate(zip(WEIGHTS, update)):
            assert opt.step(w, g) == (j == len(WEIGHTS) - 1)
        for n, t in ref.items():
            t.grad = sum(w * torch.tensor(g[n], dtype=torch.float64)
                         for w, g in zip(WEIGHTS, update)) / sum(WEIGHTS)
        norm = torch.nn.utils.clip_grad_norm_(list(ref.values()), CLIP)
        clipped += float(norm) > CLIP
        topt.step()
        stats = opt.stats()
        assert stats["grad_norm"] == pytest.approx(float(norm), rel=1e-5)
    assert clipped >= N_UPDATES // 4, "clipping must bite in this test"
    assert opt.stats()["updates"] == N_UPDATES
    return opt, ref


@pytest.mark.parametrize("case", sorted(CASES))
def test_parity(ctx, case):
    opt, ref = run_pair(ctx, *CASES[case])
    for n, t in ref.items():
        np.testing.assert_allclose(opt.download(n), t.detach().numpy(), rtol=RTOL, atol=ATOL,
                                   err_msg=n)


def test_parity_param_groups(ctx):
    opt, ref = run_pair(ctx, *CASES["adamw"], groups=True)
    for n, t in ref.items():
        np.testing.assert_allclose(opt.params[n].get(), t.detach().numpy(), rtol=RTOL,
                                   atol=ATOL, err_msg=n)
