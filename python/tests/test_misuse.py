"""Misuse raises a clgrad.Error subclass with the status and the library's
message (clg_last_error); Python's own refusals (shape, dtype, names,
counts, foreign buffers) are recorded the same way and name what was wrong,
before anything reaches the device.

MISUSE walks what of the C library's error walk (tests/test_errors.c, its
CASES table) Python can express through this API: each case asserts the
exception class, the status, the exact message (a device list or a
temporary file's name left open), that the context's clg_last_error holds
it, and that nothing changed: a mid-cycle optimizer's params, micro-step
index and counters, the context's budget and device bytes. What Python
cannot express is not walked: NULL arguments and out-pointers, struct_size,
tensor and group indices, raw host counts (Python passes an array's own
size after checking its shape), malformed clg_events, a queue of another
cl_context (Context(queue=q) passes q's own), and calls the package does not
expose (sharding, state downloads, the param copy, tensor norms,
clg_lr_scale, programs and caches). Beside it, the traps of issue 35: an
assignment that would be ignored (a fixed hyperparameter, a param_groups
key), a value of the wrong type read as something else, a group's negative
weight decay that clgrad would take as "the optimizer's"."""
import gc
import os
import re
import signal
import stat

import numpy as np
import pytest

import clgrad
from clgrad import lib

S = {"w": (4, 3), "b": 4}
STATUS = {clgrad.InvalidArgument: "CLG_ERR_INVALID_ARGUMENT", clgrad.StateError: "CLG_ERR_STATE",
          clgrad.Unsupported: "CLG_ERR_UNSUPPORTED", clgrad.NoDevice: "CLG_ERR_NO_DEVICE",
          clgrad.FileError: "CLG_ERR_IO", clgrad.CorruptFile: "CLG_ERR_CORRUPT_FILE",
          clgrad.Mismatch: "CLG_ERR_MISMATCH", clgrad.OverBudget: "CLG_ERR_OVER_BUDGET"}
STATUS[clgrad.OutOfDeviceMemory] = "CLG_ERR_OUT_OF_DEVICE_MEMORY"
U64 = "18446744073709551615"


class Like:
    """A message with gaps (a device list, a process id): its parts in
    order, anything between them."""

    def __init__(self, *parts):
        self.parts = parts


class World:
    """What a case acts on: the session's context, an AdamW with k = 3 one
    micro-step into its cycle, a fresh one, a scratch directory."""

    def __init__(self, ctx, tmp, monkeypatch):
        self.ctx, self.tmp, self.monkeypatch = ctx, tmp, monkeypatch
        self.opt = clgrad.AdamW(ctx, {"w": np.arange(12, dtype=np.float32).reshape(4, 3),
                                      "b": np.ones(4, np.float32)}, accum_steps=3)
        self.opt.step(1.5, self.grads())
        self.fresh = clgrad.AdamW(ctx, S)

    @staticmethod
    def grads(**override):
        g = {"w": np.ones((4, 3), np.float32), "b": np.ones(4, np.float32)}
        g.update(override)
        return {n: v for n, v in g.items() if v is not None}

    def saved(self, opt, name="x.ckpt"):
        opt.save(self.tmp / name)
        return self.tmp / name

    def written(self, name, data):
        (self.tmp / name).write_bytes(data)
        return self.tmp / name

    def not_a_file(self, kind):
        """A path that is no regular file: a FIFO nobody writes, a
        directory, a dangling symbolic link, a symbolic link loop."""
        path = self.tmp / kind
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "dir":
            path.mkdir()
        else:
            path.symlink_to(path if kind == "loop" else self.tmp / "nothing-here")
        return path

    def env_context(self, value, wrap=False):
        self.monkeypatch.setenv("CLGRAD_MAX_ALLOC", value)
        return clgrad.Context(queue=self.ctx.queue) if wrap else clgrad.Context()

    def over_budget(self):
        self.ctx.budget = self.ctx.device_bytes + 1
        try:
            clgrad.AdamW(self.ctx, {"big": 100000})
        finally:
            self.ctx.budget = 0


def case(id, call, exc, message, on_ctx=True):
    return pytest.param(call, exc, message, on_ctx, id=id)


def create(kind=clgrad.AdamW, params=S, **kw):
    return lambda w: kind(w.ctx, params, **kw)


def bounded(call, seconds=2.0):
    """call() within seconds: the timer's signal interrupts a blocking open
    of a FIFO (EINTR: Python's handlers do not restart system calls) and
    raises, so that a regression fails here instead of hanging."""
    def expired(signum, frame):
        raise TimeoutError(f"still blocked after {seconds} s")

    def run(w):
        old = signal.signal(signal.SIGALRM, expired)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            return call(w)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    return run


def over_device_memory(w):
    """An AdamW of 16 bytes a parameter just above the device's memory, in
    tensors that each fit one buffer (rusticl's maximum allocation is 2 GiB:
    one larger tensor is refused for that first)."""
    per = w.ctx.max_alloc // 8
    k = -(-(w.ctx.global_mem_size // 16 + 1024) // per)
    return clgrad.AdamW(w.ctx, {f"w{i}": (per,) for i in range(k)})


def pending(w):
    """An SGD whose collected cycle (k = 1) waits for finish_cycle."""
    opt = clgrad.SGD(w.ctx, S)
    assert opt.step_collect(1.0, w.grads())
    return opt


def contrastive(w, computed=False):
    """A Contrastive of 4 rows of 8, its batch filled and computed if asked."""
    c = clgrad.Contrastive(w.ctx, 4, 8)
    if computed:
        for side in ("query", "key"):
            c.fill(side, 0, np.eye(4, 8, dtype=np.float32))
        c.compute(4)
    return c


def half_of(w):
    data = w.saved(w.opt).read_bytes()
    return w.written("trunc.ckpt", data[:len(data) // 2])


MC = "clg_model_create: "
INV, ST, UNS = clgrad.InvalidArgument, clgrad.StateError, clgrad.Unsupported
# Bad configurations, each refused alike by the optimizer (clg_model_create),
# clgrad.estimate (clg_model_estimate) and clgrad.max_params (by way of it):
# the same class and message after the C caller's name (issue 37: estimate
# used to answer for SGD with momentum -1 and for acc_dtype None).
# (id, optimizer, keywords, exception, message as clg_model_create's)
CONFIGS = [
    ("lr", clgrad.SGD, dict(lr=-0.125), INV, MC + "lr -0.125 must be finite and >= 0"),
    ("lr_nan", clgrad.AdamW, dict(lr=float("nan")), INV, MC + "lr nan must be finite and >= 0"),
    ("beta1", clgrad.AdamW, dict(betas=(1.0, 0.9)), INV, MC + "beta1 1 must be in [0, 1)"),
    ("beta2", clgrad.AdamW, dict(betas=(0.9, -0.1)), INV, MC + "beta2 -0.1 must be in [0, 1)"),
    ("eps", clgrad.AdamW, dict(eps=0.0), INV, MC + "eps 0 must be finite and > 0"),
    ("weight_decay", clgrad.AdamW, dict(weight_decay=-0.5), INV,
     MC + "weight_decay -0.5 must be finite and >= 0"),
    ("momentum", clgrad.SGD, dict(momentum=-1.0), INV, MC + "momentum -1 must be finite and >= 0"),
    ("momentum_nan", clgrad.SGD, dict(momentum=float("nan")), INV,
     MC + "momentum nan must be finite and >= 0"),
    ("momentum_adamw", clgrad.AdamW, dict(momentum=-1.0), INV,
     MC + "momentum -1 must be finite and >= 0"),
    ("dampening", clgrad.SGD, dict(momentum=0.9, dampening=1.5), INV,
     MC + "dampening 1.5 must be in [0, 1]"),
    ("nesterov", clgrad.SGD, dict(nesterov=True), INV,
     MC + "nesterov needs momentum > 0 and dampening 0 (momentum 0, dampening 0)"),
    ("nesterov_dampening", clgrad.SGD, dict(momentum=0.9, dampening=0.1, nesterov=True), INV,
     MC + "nesterov needs momentum > 0 and dampening 0 (momentum 0.9, dampening 0.1)"),
    ("amsgrad_sgd", clgrad.SGD, dict(amsgrad=True), INV,
     MC + "amsgrad applies to Adam and AdamW only"),
    ("amsgrad_lion", clgrad.Lion, dict(amsgrad=True), INV,
     MC + "amsgrad applies to Adam and AdamW only"),
    ("min_lr", clgrad.AdamW, dict(lr=1e-3, min_lr=0.01, schedule="cosine", total_steps=10), INV,
     MC + "schedule min_lr 0.01 must be in [0, lr = 0.001]"),
    ("schedule", clgrad.Adam, dict(schedule="cosine", warmup=500, total_steps=400), INV,
     MC + "schedule total 400 must exceed warmup 500 for a decaying schedule"),
    ("schedule_total0", clgrad.AdamW, dict(schedule="linear"), INV,
     MC + "schedule total 0 must exceed warmup 0 for a decaying schedule"),
    ("accum_steps0", clgrad.AdamW, dict(accum_steps=0), INV, MC + "accum_steps (k) 0 must be >= 1"),
    ("acc_dtype", clgrad.AdamW, dict(acc_dtype="q8"), INV,
     MC + "acc_dtype must be CLG_FP32 or CLG_BF16"),
    ("acc_dtype_none", clgrad.AdamW, dict(acc_dtype=None), INV,
     MC + "acc_dtype must be CLG_FP32 or CLG_BF16"),
    ("acc_dtype_q4", clgrad.SGD, dict(acc_dtype="q4"), INV,
     MC + "acc_dtype must be CLG_FP32 or CLG_BF16"),
    ("clip_norm", clgrad.AdamW, dict(clip_norm=-1.0), INV,
     MC + "clip_norm -1 must be finite and >= 0 (0 = off)"),
    ("clip_value", clgrad.AdamW, dict(clip_value=float("nan")), INV,
     MC + "clip_value nan must be finite and >= 0 (0 = off)"),
    ("loss_scale", clgrad.AdamW, dict(loss_scale=-2.0), INV,
     MC + "loss_scale_init -2 must be finite and > 0"),
    ("noise_skip_micro", clgrad.Adam, dict(noise_scale=True, nonfinite="skip_micro"), UNS,
     MC + "the noise-scale estimate is not available with the skip-micro-step policy "
     "(the first micro-step of a cycle is only known on the device)"),
    ("state_dtype", clgrad.AdamW, dict(state_dtype="fp16"), INV,
     MC + "state_dtype 1 must be CLG_FP32, CLG_BF16, CLG_Q8 or CLG_Q4"),
    ("master_dtype", clgrad.AdamW, dict(master_dtype="q8"), INV,
     MC + "master_dtype 4 must be CLG_FP32 or CLG_BF16"),
    ("q4_amsgrad", clgrad.AdamW, dict(state_dtype="q4", amsgrad=True), UNS,
     MC + "state_dtype CLG_Q4 with amsgrad is not supported: the fp32 running max of v would "
     "keep every upward 4-bit rounding error of v for good (use CLG_Q8 or CLG_BF16 states "
     "with AMSGrad)"),
    # Python's own refusals: no C caller's name
    ("accum_steps_negative", clgrad.AdamW, dict(accum_steps=-1), INV,
     "clgrad: accum_steps -1 must be an integer in [0, 4294967295]"),
    ("accum_steps_float", clgrad.AdamW, dict(accum_steps=2.5), INV,
     "clgrad: accum_steps 2.5 must be an integer in [0, 4294967295]"),
    ("warmup_negative", clgrad.AdamW, dict(warmup=-1), INV,
     "clgrad: warmup -1 must be an integer in [0, %s]" % U64),
    ("seed_negative", clgrad.AdamW, dict(seed=-3), INV,
     "clgrad: seed -3 must be an integer in [0, %s]" % U64),
    ("state_dtype_unknown", clgrad.AdamW, dict(state_dtype="fp8"), ValueError,
     "state_dtype must be one of ['bf16', 'fp16', 'fp32', 'q4', 'q8'], not 'fp8'"),
    # a str is no number (float() would parse "0.1"), betas a pair
    ("lr_str", clgrad.AdamW, dict(lr="0.1"), INV, "clgrad: lr '0.1' must be a real number"),
    ("betas_scalar", clgrad.AdamW, dict(betas=0.9), INV,
     "clgrad: betas 0.9 must be a pair of real numbers"),
    ("betas_triple", clgrad.Lion, dict(betas=(0.9, 0.99, 0.5)), INV,
     "clgrad: betas (0.9, 0.99, 0.5) must be a pair of real numbers"),
    ("loss_scale_str", clgrad.AdamW, dict(loss_scale="static"), INV,
     "clgrad: loss_scale 'static' must be a real number"),
]
AVAILABLE = "; available: "
SELECT = "clg_context_create: clg_device_select: "


def selector_case(id, selector, exc, message):
    """clgrad.Context(selector) refused, before any context exists."""
    return case(id, lambda w: clgrad.Context(selector), exc, message, on_ctx=False)


def max_alloc_case(id, value, message, wrap=False):
    """A context made (or wrapped) with CLGRAD_MAX_ALLOC=value refused."""
    return case(id, lambda w: w.env_context(value, wrap=wrap), INV, message, on_ctx=False)


MISUSE = [
    # devices and contexts (clg_device_select through clg_context_create)
    selector_case("select_range", "99", clgrad.NoDevice,
                  Like(SELECT + 'selector "99" is out of range' + AVAILABLE, "")),
    selector_case("select_index", "1:2:3", INV,
                  Like(SELECT + 'selector "1:2:3" is not a valid index '
                       '(use N, P:D or a name substring)' + AVAILABLE, "")),
    selector_case("select_nul", "0\0junk", INV,
                  "clgrad: Context: device selector contains a NUL character: '0\\x00junk'"),
    selector_case("select_blank", "   ", INV, SELECT + "selector is blank"),
    selector_case("select_name", "no-such-device-xyz", clgrad.NoDevice,
                  Like(SELECT + 'selector "no-such-device-xyz" matches no '
                       'platform, vendor or device name' + AVAILABLE, "")),
    max_alloc_case("create_max_alloc", "12abc",
                   'clg_context_create: CLGRAD_MAX_ALLOC="12abc" is not a byte count '
                   '(decimal digits only)'),
    max_alloc_case("create_max_alloc0", "0",
                   'clg_context_create: CLGRAD_MAX_ALLOC="0" must be positive'),
    max_alloc_case("wrap_max_alloc", "12abc",
                   'clg_context_wrap: CLGRAD_MAX_ALLOC="12abc" is not a byte count '
                   '(decimal digits only)', wrap=True),
    case("wrap_not_a_queue", lambda w: clgrad.Context(queue=w.ctx.cl_context), INV,
         "clgrad.Context: queue must be a pyopencl.CommandQueue, not Context", on_ctx=False),
    case("budget_below", lambda w: setattr(w.ctx, "budget", 1), clgrad.OverBudget,
         "clg_context_set_budget: budget 1 bytes is below the {in_use} bytes already in use"),
    case("budget_negative", lambda w: setattr(w.ctx, "budget", -1), INV,
         "clgrad: budget -1 must be an integer in [0, %s]" % U64),
    # configurations (clg_model_create): CONFIGS
    *[case(id, create(kind=kind, **kw), exc, message) for id, kind, kw, exc, message in CONFIGS],
    # building (clg_model_add_group, _add_tensor, _set_tensor_shape, _finalize)
    case("finalize_empty", create(params={}), INV, "clg_model_finalize: no tensors"),
    case("finalize_budget", lambda w: w.over_budget(), clgrad.OverBudget,
         Like("clg_model_finalize: the model needs ", " bytes on the device (100352 parameters: "
              "params, accumulators, 2 optimizer states), {in_use} are in use and the budget is "
              "{in_use1}")),
    case("tensor_empty_name", create(params={"": 4}), INV,
         "clg_model_add_tensor: tensor name must have 1 to 255 characters"),
    case("tensor_long_name", create(params={"x" * 256: 4}), INV,
         "clg_model_add_tensor: tensor name must have 1 to 255 characters"),
    case("tensor_count0", create(params={"t": 0}), INV,
         "clg_model_add_tensor: tensor 't' has 0 elements"),
    case("tensor_dim0", create(params={"t": (2, 0)}), INV,
         "clg_model_add_tensor: tensor 't' has 0 elements"),
    case("tensor_dim_negative", create(params={"t": (2, -3)}), INV,
         "clgrad: tensor 't': dim -3 must be an integer in [0, %s]" % U64),
    case("tensor_name_not_str", create(params={5: 4}), INV,
         "clgrad: tensor names must be str, not int (5)"),
    case("tensor_name_nul", create(params={"w\0b": 4}), INV,
         "clgrad: tensor name contains a NUL character: 'w\\x00b'"),
    # numpy's int64 product of these dims wraps to 0
    case("tensor_count_overflow", create(params={"t": (2**32, 2**32, 2)}), INV,
         "clgrad: tensor 't': shape (4294967296, 4294967296, 2) has 36893488147419103232 "
         "elements, more than a size_t holds (%s)" % U64),
    case("shape_ndim9", create(params={"t": (1,) * 9}), INV,
         "clg_model_set_tensor_shape: tensor 't': bad ndim (ndim 9, must be 1..8)"),
    case("tensor_duplicate", create(params=[{"params": {"w": 4}},
                                            {"params": {"w": 4}, "weight_decay": 0.0}]), INV,
         "clg_model_add_tensor: a tensor named 'w' exists already"),
    case("group_lr_mult", create(lr=1e-3, params=[{"params": {"w": 4}},
                                                  {"params": {"v": 4}, "lr": -2.5e-3}]), INV,
         "clg_model_add_group: lr_mult -2.5 of group 'group1' must be finite and >= 0"),
    case("group_lr_of_zero", create(lr=0.0, params=[{"params": {"w": 4}},
                                                    {"params": {"v": 4}, "lr": 1e-3}]), INV,
         "clgrad: parameter group 1: lr 0.001 cannot be a multiple of the optimizer's lr 0 "
         "(give the optimizer a nonzero lr)"),
    case("group_wd", create(params=[{"params": {"w": 4}},
                                    {"params": {"v": 4}, "weight_decay": float("nan")}]), INV,
         "clg_model_add_group: weight_decay nan of group 'group1' must be finite"),
    case("group_key", create(params=[{"params": {"w": 4}}, {"params": {"v": 4}, "betas": 0}]),
         TypeError, "parameter group: unknown keys ['betas']"),
    # clg_model_add_group takes a negative weight decay as "the optimizer's"
    case("group_wd_negative", create(params=[{"params": {"w": 4}},
                                             {"params": {"v": 4}, "weight_decay": -0.5}]), INV,
         "clgrad: parameter group 1: weight_decay -0.5 must be >= 0"),
    # the lr after creation (clg_model_set_lr, _set_group_lr_mult): refused as at creation
    case("set_lr", lambda w: setattr(w.opt, "lr", -1.0), INV,
         "clg_model_set_lr: lr -1 must be finite and >= 0"),
    case("set_lr_nan", lambda w: setattr(w.opt, "lr", float("nan")), INV,
         "clg_model_set_lr: lr nan must be finite and >= 0"),
    case("set_lr_str", lambda w: setattr(w.opt, "lr", "0.1"), INV,
         "clgrad: lr '0.1' must be a real number"),
    case("set_lr_below_min_lr",
         lambda w: setattr(create(lr=1e-3, schedule="cosine", total_steps=10, min_lr=1e-4)(w),
                           "lr", 5e-5), INV,
         "clg_model_set_lr: schedule min_lr 0.0001 must be in [0, lr = 5e-05]"),
    case("set_group_lr", lambda w: w.opt.param_groups[0].__setitem__("lr", -1e-3), INV,
         "clg_model_set_group_lr_mult: lr_mult -1 of group 'default' must be finite and >= 0"),
    case("set_group_lr_of_zero",
         lambda w: create(lr=0.0)(w).param_groups[0].__setitem__("lr", 1e-3), INV,
         "clgrad: parameter group 0: lr 0.001 cannot be a multiple of the optimizer's lr 0 "
         "(give the optimizer a nonzero lr)"),
    case("set_group_fixed", lambda w: w.opt.param_groups[0].__setitem__("weight_decay", 0.1),
         TypeError, "clgrad: param_groups[0]['weight_decay'] is fixed when the optimizer is "
         "created; only 'lr' can be set"),
    case("set_group_unknown", lambda w: w.opt.param_groups[0].__setitem__("momentum", 0.9),
         KeyError, "\"clgrad: param_groups[0] has no key 'momentum' (clgrad would ignore it); "
         "its keys are ['amsgrad', 'betas', 'eps', 'lr', 'maximize', 'params', "
         "'weight_decay']\""),
    case("set_fixed_attribute", lambda w: setattr(w.opt, "weight_decay", 0.1), AttributeError,
         "clgrad: weight_decay is fixed when the optimizer is created; only the lr can be set "
         "(opt.lr, opt.param_groups[i]['lr'])"),
    # views and host copies: Python checks names, shapes and dtypes itself
    case("param_view_name", lambda w: w.opt.params["nope"], INV, "clgrad: no tensor named 'nope'"),
    case("acc_view_name", lambda w: w.opt.grad_acc["nope"], INV, "clgrad: no tensor named 'nope'"),
    case("grads_view_name", lambda w: w.opt.grads()["nope"], INV,
         "clgrad: no tensor named 'nope'"),
    case("download_name", lambda w: w.opt.download("nope"), INV, "clgrad: no tensor named 'nope'"),
    case("upload_name", lambda w: w.opt.upload("nope", np.ones(4, np.float32)), INV,
         "clgrad: no tensor named 'nope'"),
    case("upload_shape", lambda w: w.opt.upload("w", np.ones((3, 4), np.float32)), INV,
         "clgrad: w: shape (3, 4), expected (4, 3)"),
    case("upload_count", lambda w: w.opt.upload("b", np.ones(5, np.float32)), INV,
         "clgrad: b: shape (5,), expected (4,)"),
    case("upload_dtype", lambda w: w.opt.upload("w", np.ones((4, 3))), INV,
         "clgrad: w: dtype float64, expected float32"),
    case("grads_dtype", lambda w: w.opt.grads("q8"), ValueError,
         "dtype must be one of ['bf16', 'fp16', 'fp32'], not 'q8'"),
    case("grads_upload_dtype", lambda w: w.opt.grads("fp16").upload("b", np.ones(4, np.float32)),
         INV, "clgrad: b: dtype float32, expected float16"),
    # the cycle (clg_step, clg_flush)
    case("step_w0", lambda w: w.opt.step(0.0), INV, "clg_step: weight 0 must be finite and > 0"),
    case("step_wneg", lambda w: w.opt.step(-1.5, w.grads()), INV,
         "clg_step: weight -1.5 must be finite and > 0"),
    case("step_wnan", lambda w: w.opt.step(float("nan")), INV,
         "clg_step: weight nan must be finite and > 0"),
    case("step_winf", lambda w: w.opt.step(float("inf")), INV,
         "clg_step: weight inf must be finite and > 0"),
    case("step_other_grads", lambda w: w.opt.step(1.0, w.fresh.grads()), INV,
         "clgrad: step: grads must be None, a dict of numpy arrays or torch tensors, or this "
         "optimizer's own Grads (opt.grads()), not Grads"),
    case("step_grads_missing", lambda w: w.opt.step(1.0, w.grads(b=None)), INV,
         "clgrad: step: grads has no 'b' (a dict of gradients holds every tensor)"),
    case("step_grads_name", lambda w: w.opt.step(1.0, w.grads(nope=np.ones(4, np.float32))),
         INV, "clgrad: no tensor named 'nope'"),
    case("step_grads_shape", lambda w: w.opt.step(1.0, w.grads(b=np.ones(3, np.float32))), INV,
         "clgrad: b: shape (3,), expected (4,)"),
    case("step_b_skip_micro", lambda w: create(nonfinite="skip_micro")(w).step(1.0), UNS,
         "clg_step: skipping single micro-steps needs external gradients (path A); on path B the "
         "backward has already added them"),
    case("flush_empty", lambda w: w.fresh.flush(), ST,
         "clg_flush: the current cycle holds no gradients"),
    # the deferred end of cycle (clg_step_collect, clg_finish_cycle)
    case("collect_pending", lambda w: pending(w).step(1.0, w.grads()), ST,
         "clg_step: the cycle's last micro-step was collected (clg_step_collect) and is pending; "
         "call clg_finish_cycle (or clg_reset_cycle to drop it) first"),
    case("collect_pending_collect", lambda w: pending(w).step_collect(1.0, w.grads()), ST,
         "clg_step_collect: the cycle's last micro-step was collected (clg_step_collect) and is "
         "pending; call clg_finish_cycle (or clg_reset_cycle to drop it) first"),
    case("collect_w0", lambda w: w.opt.step_collect(0.0), INV,
         "clg_step_collect: weight 0 must be finite and > 0"),
    case("collect_grads_missing", lambda w: w.opt.step_collect(1.0, w.grads(b=None)), INV,
         "clgrad: step_collect: grads has no 'b' (a dict of gradients holds every tensor)"),
    case("collect_skip_micro",
         lambda w: create(nonfinite="skip_micro")(w).step_collect(1.0, w.grads()), UNS,
         "clg_step_collect: CLG_NONFINITE_SKIP_MICRO is not supported with a deferred end of "
         "cycle; use CLG_NONFINITE_SKIP_UPDATE"),
    case("finish_none_pending", lambda w: w.opt.finish_cycle(1.0), ST,
         "clg_finish_cycle: no collected cycle is pending (clg_step_collect has not reported "
         "*cycle_ready = 1 since the last update)"),
    case("finish_weight_sum", lambda w: pending(w).finish_cycle(0.0), INV,
         "clg_finish_cycle: weight_sum 0 must be finite and > 0"),
    case("finish_weight_sum_str", lambda w: pending(w).finish_cycle("1"), INV,
         "clgrad: finish_cycle: weight_sum '1' must be a real number"),
    # checkpoints
    case("save_dir", lambda w: w.opt.save(w.tmp / "no-such-dir" / "x.ckpt"), clgrad.FileError,
         Like("clg_checkpoint_save: cannot create temporary file '{tmp}/no-such-dir/x.ckpt.tmp.",
              "': No such file or directory")),
    case("save_meta_key", lambda w: w.opt.save(w.tmp / "x.ckpt", {"clgrad.step": 1}), INV,
         "clg_checkpoint_save: metadata key 'clgrad.step' is reserved (keys starting with "
         "\"clgrad.\" are clgrad's)"),
    # paths are str or os.PathLike (str() of bytes would name a file "b'...'"),
    # and no name, key or value holds a NUL (C would end it there)
    case("save_bytes", lambda w: w.opt.save(b"x.ckpt"), INV,
         "clgrad: save: path must be a str or os.PathLike, not bytes (b'x.ckpt')"),
    case("save_int", lambda w: w.opt.save(3), INV,
         "clgrad: save: path must be a str or os.PathLike, not int (3)"),
    case("save_nul", lambda w: w.opt.save(str(w.tmp) + "/x\0.ckpt"), INV,
         "clgrad: save: path contains a NUL character: '{tmp}/x\\x00.ckpt'"),
    case("save_meta_key_nul", lambda w: w.opt.save(w.tmp / "x.ckpt", {"ep\0och": 1}), INV,
         "clgrad: save: metadata key contains a NUL character: 'ep\\x00och'"),
    case("save_meta_value_nul", lambda w: w.opt.save(w.tmp / "x.ckpt", {"epoch": "3\0"}), INV,
         "clgrad: save: metadata value of 'epoch' contains a NUL character: '3\\x00'"),
    case("load_bytes", lambda w: w.opt.load(os.fsencode(w.saved(w.opt))), INV,
         "clgrad: load: path must be a str or os.PathLike, not bytes (b'{tmp}/x.ckpt')"),
    case("load_nul", lambda w: w.opt.load(str(w.saved(w.opt)) + "\0junk"), INV,
         "clgrad: load: path contains a NUL character: '{tmp}/x.ckpt\\x00junk'"),
    case("load_missing", lambda w: w.opt.load(w.tmp / "no-such-dir" / "x.ckpt"),
         clgrad.FileError, "clg_checkpoint_load: cannot open '{tmp}/no-such-dir/x.ckpt': No such "
         "file or directory"),
    # what is not a regular file is refused at once (issue 36), and a file
    # whose stat size is short of its content (procfs says 0) as growing
    case("load_fifo", bounded(lambda w: w.opt.load(w.not_a_file("fifo"))), clgrad.FileError,
         "clg_checkpoint_load: '{tmp}/fifo' is not a regular file"),
    case("load_device", bounded(lambda w: w.opt.load("/dev/zero")), clgrad.FileError,
         "clg_checkpoint_load: '/dev/zero' is not a regular file"),
    case("load_dir", bounded(lambda w: w.opt.load(w.not_a_file("dir"))), clgrad.FileError,
         "clg_checkpoint_load: '{tmp}/dir' is not a regular file"),
    case("load_dangling", bounded(lambda w: w.opt.load(w.not_a_file("dangling"))),
         clgrad.FileError,
         "clg_checkpoint_load: cannot open '{tmp}/dangling': No such file or directory"),
    case("load_loop", bounded(lambda w: w.opt.load(w.not_a_file("loop"))), clgrad.FileError,
         "clg_checkpoint_load: cannot open '{tmp}/loop': Too many levels of symbolic links"),
    case("load_grew", bounded(lambda w: w.opt.load("/proc/self/status")), clgrad.FileError,
         "clg_checkpoint_load: reading '/proc/self/status' failed: file grew while reading"),
    case("load_other_layout",
         lambda w: w.opt.load(w.saved(create(params={"w": (3, 4), "b": 4})(w))),
         clgrad.Mismatch, "clg_checkpoint_load: '{tmp}/x.ckpt': tensor 'w' has shape [3, 4] in "
         "the file but [4, 3] in the model"),
    case("load_other_optimizer", lambda w: w.opt.load(w.saved(create(kind=clgrad.SGD)(w))),
         clgrad.Mismatch, "clg_checkpoint_load: '{tmp}/x.ckpt': checkpoint is for optimizer "
         "'sgd', the model uses 'adamw'"),
    case("load_garbage", lambda w: w.opt.load(w.written("junk.ckpt", b"not a checkpoint" * 8)),
         clgrad.CorruptFile, "clg_checkpoint_load: '{tmp}/junk.ckpt': header length "
         "7521891404167278446 exceeds the limit of 100000000 bytes"),
    case("load_truncated", lambda w: w.opt.load(half_of(w)), clgrad.CorruptFile,
         Like("clg_checkpoint_load: '{tmp}/trunc.ckpt': truncated: header length ",
              " bytes follow")),
    # the memory plan (clg_model_estimate: no context)
    case("estimate_count", lambda w: clgrad.estimate(-5), INV,
         "clgrad: estimate: n_params -5 must be an integer in [0, %s]" % U64, on_ctx=False),
    case("estimate_optimizer", lambda w: clgrad.estimate(5, "nope"), ValueError,
         "optimizer must be one of ['adam', 'adamw', 'lion', 'sgd'], not 'nope'", on_ctx=False),
    case("estimate_state_dtype", lambda w: clgrad.estimate(5, state_dtype="fp16"), INV,
         "clg_model_estimate: state_dtype 1 must be CLG_FP32, CLG_BF16, CLG_Q8 or CLG_Q4",
         on_ctx=False),
    case("estimate_master_dtype", lambda w: clgrad.estimate(5, master_dtype="q4"), INV,
         "clg_model_estimate: master_dtype 5 must be CLG_FP32 or CLG_BF16", on_ctx=False),
    case("estimate_q4_amsgrad", lambda w: clgrad.estimate(5, state_dtype="q4", amsgrad=True), UNS,
         "clg_model_estimate: state_dtype CLG_Q4 with amsgrad is not supported: the fp32 running "
         "max of v would keep every upward 4-bit rounding error of v for good (use CLG_Q8 or "
         "CLG_BF16 states with AMSGrad)", on_ctx=False),
    # contrastive losses (clg_contrastive_*)
    case("contrastive_batch", lambda w: clgrad.Contrastive(w.ctx, 0, 8), INV,
         "clg_contrastive_create: batch 0 is outside 1..16777216"),
    case("contrastive_temperature", lambda w: clgrad.Contrastive(w.ctx, 4, 8, temperature=0.0),
         INV, "clg_contrastive_create: temperature 0 must be finite and >= 0.0001"),
    case("contrastive_dtype", lambda w: clgrad.Contrastive(w.ctx, 4, 8, dtype="fp16"), INV,
         "clg_contrastive_create: dtype 1 is not CLG_FP32 or CLG_BF16"),
    case("contrastive_side", lambda w: contrastive(w).fill("value", 0, np.ones((1, 8))),
         ValueError, "side must be one of ['key', 'query'], not 'value'"),
    case("contrastive_fill_dim", lambda w: contrastive(w).fill("query", 0, np.ones((2, 7),
                                                                                    np.float32)),
         INV, "clgrad: fill: rows: a float32 array of shape (2, 7), expected rows of shape "
         "(n, 8), float32 or float16, each row contiguous"),
    case("contrastive_fill_dtype", lambda w: contrastive(w).fill("query", 0, np.ones((2, 8))),
         INV, "clgrad: fill: rows: a float64 array of shape (2, 8), expected rows of shape "
         "(n, 8), float32 or float16, each row contiguous"),
    case("contrastive_fill_empty",
         lambda w: contrastive(w).fill("query", 0, np.ones((0, 8), np.float32)), INV,
         "clg_contrastive_fill: rows [0, 0 + 0) are not a non-empty range within the 4 rows of "
         "the cache"),
    case("contrastive_fill_rows",
         lambda w: contrastive(w).fill("key", 3, np.ones((2, 8), np.float32)), INV,
         "clg_contrastive_fill: rows [3, 3 + 2) are not a non-empty range within the 4 rows of "
         "the cache"),
    case("contrastive_compute_unfilled", lambda w: contrastive(w).compute(4), ST,
         "clg_contrastive_compute: row 0 of the query side is not filled (rows [0, 4) of both "
         "sides must be, by clg_contrastive_fill since the last compute's batch)"),
    case("contrastive_loss_first", lambda w: contrastive(w).loss, ST,
         "clg_contrastive_loss: no loss of the current batch: call clg_contrastive_compute "
         "first"),
    case("contrastive_grad_scale", lambda w: contrastive(w, computed=True).grad(
        "query", 0, 4, scale=float("inf")), INV, "clg_contrastive_grad: scale inf is not finite"),
    case("contrastive_grad_rows", lambda w: contrastive(w, computed=True).grad("key", 2, 3),
         INV, "clg_contrastive_grad: rows [2, 2 + 3) are not a non-empty range within the 4 "
         "rows of the last compute"),
    case("contrastive_no_banks", lambda w: contrastive(w, computed=True).bank_push(4), ST,
         "clg_contrastive_bank_push: this clg_contrastive has no banks (its bank_size is 0)"),
    case("max_params_bytes", lambda w: clgrad.max_params(-1), INV,
         "clgrad: max_params: memory_bytes -1 must be an integer in [0, %s]" % U64, on_ctx=False),
    # a model above the device's global memory (2**31 parameters, 32 GiB, or more on a
    # larger device): refused before anything is allocated, where PoCL's allocations
    # got the process killed by the OOM killer (issue 37)
    case("finalize_device_memory", lambda w: over_device_memory(w),
        clgrad.OutOfDeviceMemory,
        Like("clg_model_finalize: the model needs ", " bytes on the device (", " parameters: "
             "params, accumulators, 2 optimizer states), {in_use} are in use, more than the "
             "device's ", " bytes of global memory; make the model smaller, or set "
             "clg_config.allow_over_device_memory for a device that pages")),
]


def matches(expected, message, fields):
    if isinstance(expected, Like):
        pattern = ".*?".join(re.escape(p.format(**fields)) for p in expected.parts)
        return re.fullmatch(pattern, message, re.S) is not None
    return message == expected.format(**fields)


@pytest.mark.parametrize("call, exc, expected, on_ctx", MISUSE)
def test_misuse(ctx, tmp_path, monkeypatch, call, exc, expected, on_ctx):
    w = World(ctx, tmp_path, monkeypatch)
    params = w.opt.state_dict()
    gc.collect()  # earlier tests' optimizers
    in_use = ctx.device_bytes
    fields = {"tmp": str(tmp_path), "in_use": in_use, "in_use1": in_use + 1}
    with pytest.raises(exc) as e:
        call(w)
    err = e.value
    assert type(err) is exc
    if exc in STATUS:
        assert err.status_name == STATUS[exc] and err.status == getattr(lib, STATUS[exc])
        assert matches(expected, err.message, fields), err.message
        if on_ctx:
            assert ctx.last_error == err.message
    else:
        assert matches(expected, str(err), fields), str(err)
    # Nothing changed: the optimizer mid-cycle, the context's budget and bytes.
    del e, err
    gc.collect()
    assert w.opt.micro_step_index == 1 and w.opt.stats()["micro_steps"] == 1
    for n, v in w.opt.state_dict().items():
        np.testing.assert_array_equal(v, params[n], err_msg=n)
    assert ctx.budget == 0 and ctx.device_bytes == in_use


def test_checkpoint_roundtrip(ctx, tmp_path):
    make = lambda: clgrad.AdamW(ctx, S, lr=0.1)  # noqa: E731
    a, b = make(), make()
    a.step(1.0, World.grads())
    a.save(tmp_path / "a.safetensors", {"epoch": 3})
    assert b.load(tmp_path / "a.safetensors") == {"epoch": "3"}
    for opt in (a, b):
        opt.step(1.0, World.grads(w=np.full((4, 3), 2, np.float32)))
    for n in S:
        np.testing.assert_array_equal(a.download(n), b.download(n))


OPTIMIZER = {clgrad.SGD: "sgd", clgrad.Adam: "adam", clgrad.AdamW: "adamw", clgrad.Lion: "lion"}


@pytest.mark.parametrize("call", ["estimate", "max_params"])
@pytest.mark.parametrize("kind, kw, exc, message",
                         [pytest.param(*c[1:], id=c[0]) for c in CONFIGS])
def test_estimate_refuses_as_create(call, kind, kw, exc, message):
    """What the optimizer refuses (CONFIGS, walked by MISUSE), estimate and
    max_params refuse alike, with clg_model_estimate's name for the C
    library's refusals."""
    if message.startswith(MC):
        message = "clg_model_estimate: " + message[len(MC):]
    with pytest.raises(exc) as e:
        if call == "estimate":
            clgrad.estimate(1000, OPTIMIZER[kind], **kw)
        else:
            clgrad.max_params(8 << 30, OPTIMIZER[kind], **kw)
    assert type(e.value) is exc
    if exc in STATUS:
        assert e.value.status_name == STATUS[exc] and e.value.message == message
    else:
        assert str(e.value) == message


def test_save_load_path_kinds(tmp_path, ctx, monkeypatch):
    """A str, a pathlib.Path and any os.PathLike name the file; bytes, and a
    PathLike whose path is bytes, are refused before a file is written (in
    the working directory too: str(b'/x') is a relative name)."""
    class Where:
        def __init__(self, path):
            self.path = path

        def __fspath__(self):
            return self.path

    monkeypatch.chdir(tmp_path)
    opt = clgrad.AdamW(ctx, S)
    for where in (str(tmp_path / "a.ckpt"), tmp_path / "b.ckpt", Where(str(tmp_path / "c.ckpt"))):
        opt.save(where, {"epoch": 3})
        assert opt.load(where) == {"epoch": "3"}
    for where in (os.fsencode(tmp_path / "d.ckpt"), Where(os.fsencode(tmp_path / "e.ckpt"))):
        with pytest.raises(clgrad.InvalidArgument):
            opt.save(where)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.ckpt", "b.ckpt", "c.ckpt"]


def test_save_refuses_nodes(tmp_path, ctx):
    """opt.save over a FIFO, a character device made here (never the
    system's /dev/null: run as root, a save once replaced it), a directory,
    or a link to the FIFO or the device raises FileError naming it, and
    the node stays what it was, with no temporary file left beside it."""
    fifo, dev, d = tmp_path / "fifo", tmp_path / "null", tmp_path / "dir"
    os.mkfifo(fifo)
    os.mknod(dev, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    d.mkdir()
    (tmp_path / "to_fifo").symlink_to(fifo)
    (tmp_path / "to_null").symlink_to(dev)
    nodes = {p.name: (os.lstat(p).st_mode, os.lstat(p).st_rdev) for p in tmp_path.iterdir()}
    opt = clgrad.AdamW(ctx, S)
    expected = {"fifo": "'{p}' is a FIFO, not a regular file; it would be replaced",
                "null": "'{p}' is a character device, not a regular file; it would be replaced",
                "dir": "'{p}' is a directory, not a regular file; expected a file name",
                "to_fifo": "'{p}' is a symbolic link to a FIFO, not to a regular file; it would "
                           "be replaced",
                "to_null": "'{p}' is a symbolic link to a character device, not to a regular "
                           "file; it would be replaced"}
    for name, message in expected.items():
        with pytest.raises(clgrad.FileError) as e:
            opt.save(tmp_path / name)
        assert e.value.message == "clg_checkpoint_save: " + message.format(p=tmp_path / name)
    assert {p.name: (os.lstat(p).st_mode, os.lstat(p).st_rdev)
            for p in tmp_path.iterdir()} == nodes


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
    assert e.value.status == lib.CLG_ERR_INVALID_ARGUMENT and e.value.message == (
        "clg_context_wrap: the queue is out-of-order; clgrad needs an in-order queue")
