"""Lifetimes: views outlive the optimizer's name, arrays outlive the
context, and optimizers made and dropped in a loop leave nothing behind."""
import gc
import weakref

import numpy as np
import pyopencl.array as cla

import clgrad


def test_view_outlives_optimizer_name(ctx):
    opt = clgrad.SGD(ctx, {"w": np.full(8, 2.0, np.float32)}, lr=0.5, fuse_last_micro_step=False)
    params, acc = opt.params["w"], opt.grad_acc["w"]
    del opt
    gc.collect()
    owner = params.clgrad_owner  # the view kept the optimizer alive
    assert owner.step(1.0, {"w": np.ones(8, np.float32)})
    np.testing.assert_array_equal(params.get(), np.full(8, 1.5, np.float32))
    np.testing.assert_array_equal(acc.get(), np.ones(8, np.float32))


def test_arrays_outlive_context():
    ctx = clgrad.Context()
    opt = clgrad.AdamW(ctx, {"w": np.arange(6, dtype=np.float32).reshape(2, 3)})
    view = opt.params["w"]
    derived = view.reshape(6)  # a new Array on the same buffer, no owner
    alive = weakref.ref(ctx), weakref.ref(opt)
    del ctx, opt, view
    gc.collect()
    assert alive[0]() is None and alive[1]() is None, "model and context must be gone"
    # The buffer is retained by pyopencl: still readable, and usable.
    np.testing.assert_array_equal(derived.get(), np.arange(6, dtype=np.float32))
    np.testing.assert_array_equal((derived * 2).get(), 2 * np.arange(6, dtype=np.float32))


def test_many_optimizers_no_leak(ctx):
    base = ctx.device_bytes
    for i in range(200):
        kind = (clgrad.AdamW, clgrad.SGD, clgrad.Adam, clgrad.Lion)[i % 4]
        opt = kind(ctx, {"a": (64, 32), "b": 100}, accum_steps=2)
        views = [opt.params["a"], opt.grad_acc["b"], opt.grads()["a"]]
        assert ctx.device_bytes > base
        opt.step(1.0, {"a": np.ones((64, 32), np.float32), "b": np.ones(100, np.float32)})
        del opt, views
    gc.collect()
    assert ctx.device_bytes == base


def test_context_wraps_pyopencl_queue():
    import pyopencl as cl
    clctx = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(clctx)
    ctx = clgrad.Context(queue=queue)
    opt = clgrad.AdamW(ctx, {"w": np.ones(4, np.float32)})
    assert opt.params["w"].queue is queue
    x = cla.to_device(queue, np.ones(4, np.float32))
    np.testing.assert_array_equal((opt.params["w"] + x).get(), np.full(4, 2, np.float32))
