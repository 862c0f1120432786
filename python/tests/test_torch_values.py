"""torch tensors are values, taken through numpy (issue 35: a tensor given
as an initial value was read as a shape, "dim tensor(1.) must be an
integer"): a torch.nn module's parameters (which require grad) as the
initial values, their .grad as a step's gradients, tensors in upload and
Grads.upload; against numpy's result of the same arrays. A tensor numpy
cannot hold is refused with a TypeError that says so, and one of the wrong
dtype or shape as a numpy array of it would be."""
import numpy as np
import pytest
import torch

import clgrad


def test_module_parameters_and_grads(ctx):
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 4)
    params = dict(lin.named_parameters())
    opt = clgrad.SGD(ctx, params, lr=0.1)
    twin = clgrad.SGD(ctx, {n: p.detach().numpy().copy() for n, p in params.items()}, lr=0.1)
    assert opt.shapes == {"weight": (4, 8), "bias": (4,)}
    for n, p in params.items():
        np.testing.assert_array_equal(opt.download(n), p.detach().numpy())
    lin(torch.randn(5, 8)).square().sum().backward()
    assert opt.step(1.0, {n: p.grad for n, p in params.items()})
    assert twin.step(1.0, {n: p.grad.numpy() for n, p in params.items()})
    for n in params:
        np.testing.assert_array_equal(opt.download(n), twin.download(n))
        assert not np.array_equal(opt.download(n), params[n].detach().numpy())


def test_upload_and_grads_upload(ctx):
    opt = clgrad.AdamW(ctx, {"w": (2, 3)})
    w = torch.arange(6, dtype=torch.float32).reshape(2, 3).requires_grad_()
    opt.upload("w", w)
    np.testing.assert_array_equal(opt.download("w"), w.detach().numpy())
    grads = opt.grads()
    grads.upload("w", torch.ones(2, 3))
    np.testing.assert_array_equal(grads["w"].get(), np.ones((2, 3), np.float32))


def test_lr_as_a_tensor(ctx):
    """torch.optim takes a tensor lr; so does clgrad (its value)."""
    opt = clgrad.SGD(ctx, {"w": 4}, lr=torch.tensor(0.25))
    opt.lr = torch.tensor([0.5])
    assert opt.lr == 0.5


def test_refusals(ctx):
    with pytest.raises(TypeError) as e:
        clgrad.SGD(ctx, {"w": torch.ones(3, dtype=torch.bfloat16)})
    assert str(e.value) == (
        "clgrad: tensor 'w': a torch tensor (torch.bfloat16, torch.strided) is taken through "
        "numpy, which cannot hold it: Got unsupported ScalarType BFloat16; convert it first, "
        "e.g. t.float()")
    with pytest.raises(clgrad.InvalidArgument) as e:
        clgrad.SGD(ctx, {"w": torch.ones(3, dtype=torch.float64)})
    assert e.value.message == "clgrad: w: dtype float64, expected float32"
    opt = clgrad.SGD(ctx, {"w": 3})
    with pytest.raises(clgrad.InvalidArgument) as e:
        opt.step(1.0, {"w": torch.ones(4)})
    assert e.value.message == "clgrad: w: shape (4,), expected (3,)"
    assert opt.micro_step_index == 0
