"""Misuse raises a clgrad.Error subclass with the status and the library's
message (clg_last_error); Python's own refusals (shape, dtype, foreign
buffers) are recorded the same way, before anything reaches the device."""
import numpy as np
import pytest

import clgrad


def make(ctx, **kw):
    return clgrad.AdamW(ctx, {"w": (4, 3), "b": 4}, **kw)


def raised(excinfo, ctx, status, message):
    err = excinfo.value
    assert err.status == status and err.message == message
    assert ctx is None or ctx.last_error == message


def test_library_messages(ctx):
    with pytest.raises(clgrad.InvalidArgument) as e:
        make(ctx, lr=-1.0)
    raised(e, ctx, -10001, "clg_model_create: lr -1 must be finite and >= 0")
    with pytest.raises(clgrad.InvalidArgument) as e:
        make(ctx, accum_steps=0)
    raised(e, ctx, -10001, "clg_model_create: accum_steps (k) 0 must be >= 1")
    opt = make(ctx)
    with pytest.raises(clgrad.InvalidArgument) as e:
        opt.step(-2.0)
    raised(e, ctx, -10001, "clg_step: weight -2 must be finite and > 0")
    with pytest.raises(clgrad.StateError) as e:
        opt.flush()
    raised(e, ctx, -10011, "clg_flush: the current cycle holds no gradients")
    with pytest.raises(clgrad.FileError) as e:
        opt.load("/nonexistent/dir/x.safetensors")
    assert e.value.status == -10007 and "/nonexistent/dir/x.safetensors" in e.value.message
    with pytest.raises(clgrad.NoDevice) as e:
        clgrad.Context("no such device anywhere")
    assert e.value.status == -10005 and "no such device anywhere" in e.value.message


def test_python_refusals_reach_nothing(ctx):
    opt = make(ctx)
    before = opt.download("w")
    with pytest.raises(clgrad.InvalidArgument) as e:
        opt.upload("w", np.ones((3, 4), np.float32))
    raised(e, ctx, -10001, "clgrad: w: shape (3, 4), expected (4, 3)")
    with pytest.raises(clgrad.InvalidArgument) as e:
        opt.upload("w", np.ones((4, 3), np.float64))
    raised(e, ctx, -10001, "clgrad: w: dtype float64, expected float32")
    with pytest.raises(clgrad.InvalidArgument) as e:
        opt.step(1.0, {"nope": np.ones(4, np.float32)})
    raised(e, ctx, -10001, "clgrad: no tensor named 'nope'")
    other = make(ctx)
    with pytest.raises(clgrad.InvalidArgument) as e:
        opt.step(1.0, other.grads())
    raised(e, ctx, -10001, "clgrad: step: grads must be None, a dict of numpy arrays "
           "or this optimizer's own Grads (opt.grads()), not Grads")
    np.testing.assert_array_equal(opt.download("w"), before)
    assert opt.stats()["micro_steps"] == 0  # no refused call took a micro-step
    with pytest.raises(ValueError):
        make(ctx, state_dtype="fp8")


def test_budget(ctx):
    opt = make(ctx)
    with pytest.raises(clgrad.OverBudget) as e:
        ctx.budget = 1
    assert e.value.status == -10003 and e.value.message == ctx.last_error
    assert ctx.budget == 0
    del opt


def test_checkpoint_roundtrip(ctx, tmp_path):
    a, b = make(ctx, lr=0.1), make(ctx, lr=0.1)
    a.step(1.0, {"w": np.ones((4, 3), np.float32), "b": np.ones(4, np.float32)})
    a.save(tmp_path / "a.safetensors", {"epoch": 3})
    assert b.load(tmp_path / "a.safetensors") == {"epoch": "3"}
    for opt in (a, b):
        opt.step(1.0, {"w": np.full((4, 3), 2, np.float32), "b": np.ones(4, np.float32)})
    for n in ("w", "b"):
        np.testing.assert_array_equal(a.download(n), b.download(n))
    c = clgrad.AdamW(ctx, {"w": (3, 4), "b": 4})
    with pytest.raises(clgrad.Mismatch):
        c.load(tmp_path / "a.safetensors")


def test_estimate():
    plan = clgrad.estimate(1 << 20, "adamw")
    assert plan["params"] == plan["accumulators"] == 4 << 20 and plan["states"] == 8 << 20
    assert clgrad.estimate(1 << 20, "adamw", state_dtype="q8")["states"] < 4 << 20
    n = clgrad.max_params(8 << 30)
    assert clgrad.estimate(n)["total"] <= 8 << 30 < clgrad.estimate(n + 2048)["total"]


def test_wrap_refuses_out_of_order_queue():
    import pyopencl as cl
    clctx = cl.create_some_context(interactive=False)
    try:
        queue = cl.CommandQueue(
            clctx, properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
    except cl.Error:
        pytest.skip("this device has no out-of-order queues")
    with pytest.raises(clgrad.InvalidArgument) as e:
        clgrad.Context(queue=queue)
    raised(e, None, -10001, "clg_context_wrap: the queue is out-of-order; clgrad needs an "
           "in-order queue")
    with pytest.raises(clgrad.InvalidArgument) as e:
        clgrad.Context(queue=clctx)
    raised(e, None, -10001, "clgrad.Context: queue must be a pyopencl.CommandQueue, not Context")
