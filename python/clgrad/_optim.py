"""clgrad's optimizers with torch.optim's names: a clg_model built from named
shapes or numpy arrays, its params and accumulators as pyopencl arrays on
clgrad's own buffers, and the accumulation cycle (clg_step)."""

import functools
import inspect
import math
import weakref

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ._clgrad_cffi import ffi, lib
from ._errors import c_path, c_string, check, real, refuse, whole
from ._groups import ParamGroup
from ._host import host_array, is_torch_tensor

_DTYPES = {"fp32": lib.CLG_FP32, "fp16": lib.CLG_FP16, "bf16": lib.CLG_BF16,
           "q8": lib.CLG_Q8, "q4": lib.CLG_Q4, None: lib.CLG_DTYPE_NONE}
# What a device element of each dtype is to numpy (bf16: its bits).
_NUMPY = {lib.CLG_FP32: np.float32, lib.CLG_FP16: np.float16, lib.CLG_BF16: np.uint16}
_SCHEDULES = {"constant": lib.CLG_SCHED_CONSTANT, "linear": lib.CLG_SCHED_LINEAR,
              "cosine": lib.CLG_SCHED_COSINE}
_NONFINITE = {"ignore": lib.CLG_NONFINITE_IGNORE, "skip_update": lib.CLG_NONFINITE_SKIP_UPDATE,
              "skip_micro": lib.CLG_NONFINITE_SKIP_MICRO, "error": lib.CLG_NONFINITE_ERROR}


def _choice(table, value, what):
    try:
        return table[value]
    except (KeyError, TypeError):
        raise ValueError("%s must be one of %s, not %r"
                         % (what, sorted(k for k in table if k), value)) from None


def _initial_values(name, spec):
    """The initial values a tensor's spec gives (a numpy array, a torch
    tensor through numpy), or None for a shape."""
    if isinstance(spec, np.ndarray) or is_torch_tensor(spec):
        return host_array(spec, "tensor %r" % (name,))
    return None


def _shape_of(ctx, name, spec):
    """A tensor's shape from a length or a sequence of dims (each >= 0: a 0
    reaches clgrad, which names the empty tensor)."""
    dims = [spec] if np.ndim(spec) == 0 else list(spec)
    return tuple(whole(ctx._ptr, d, "tensor %r: dim" % (name,)) for d in dims)


def _count(ctx, name, shape):
    """The element count of a shape, in Python's ints (numpy's int64 product
    wraps: (2**32, 2**32, 2) would be 0), or a refusal naming it."""
    count, limit = math.prod(shape), (1 << 8 * ffi.sizeof("size_t")) - 1
    if count > limit:
        refuse(ctx._ptr, "clgrad: tensor %r: shape %s has %d elements, more than a size_t holds "
               "(%d)" % (name, shape, count, limit))
    return count


def _known(ctx, shapes, name):
    """name, if the optimizer has a tensor of that name; else a refusal."""
    if name not in shapes:
        refuse(ctx._ptr, "clgrad: no tensor named %r" % (name,))
    return name


def _device_view(owner, view, shape, dtype):
    """A pyopencl Array on clgrad's buffer (no copy): a sub-buffer where the
    offset is aligned for one (its .data then works in kernels), else an
    array with an offset. The buffer is retained, and the array keeps the
    optimizer alive."""
    itemsize = np.dtype(dtype).itemsize
    buf = cl.Buffer.from_int_ptr(int(ffi.cast("intptr_t", view.mem)), retain=True)
    offset, size = view.offset * itemsize, view.count * itemsize
    ctx = owner.ctx
    align = ctx.device.mem_base_addr_align // 8
    if offset % align == 0:
        arr = cla.Array(ctx.queue, shape, dtype, data=buf.get_sub_region(offset, size))
    else:
        arr = cla.Array(ctx.queue, shape, dtype, data=buf, offset=offset)
    arr.clgrad_owner = owner
    return arr


def _host_array(ctx, shapes, name, host, dtype):
    """host as a C-contiguous numpy array of the tensor's shape and dtype,
    or a refusal naming what is wrong (nothing reaches the device)."""
    _known(ctx, shapes, name)
    host = host_array(host, name)
    if host.dtype != dtype:
        refuse(ctx._ptr, "clgrad: %s: dtype %s, expected %s" % (name, host.dtype, np.dtype(dtype)))
    if host.shape != shapes[name]:
        refuse(ctx._ptr, "clgrad: %s: shape %s, expected %s" % (name, host.shape, shapes[name]))
    return np.ascontiguousarray(host)


class _Views:
    """opt.params / opt.grad_acc / grads[name]: a mapping of names to device
    arrays. An array keeps its owner alive; the owner holds its arrays only
    weakly (made again when none is alive), so that no reference cycle holds
    clgrad's handles, whose destructors the cycle collector may not run."""

    def __init__(self, ctx, shapes, names, make):
        self._ctx, self._shapes, self._names, self._make = ctx, shapes, list(names), make
        self._arrays = weakref.WeakValueDictionary()

    def __getitem__(self, name):
        arr = self._arrays.get(name)
        if arr is None:
            _known(self._ctx, self._shapes, name)
            arr = self._arrays[name] = self._make(self._names.index(name), name)
        return arr

    def __iter__(self):
        return iter(self._names)

    def __len__(self):
        return len(self._names)

    def keys(self):
        return list(self._names)

    def items(self):
        return [(n, self[n]) for n in self._names]


class Grads:
    """External gradient buffers (paths A and C, clg_grads), laid out like
    the accumulator, in fp32, fp16 or bf16: opt.grads(dtype)."""

    def __init__(self, opt, dtype="fp32"):
        # Weak: the optimizer keeps the Grads its step(dict) uploads into.
        self._optimizer = weakref.ref(opt)
        self.ctx, self._index, self._shapes = opt.ctx, opt._index, opt.shapes
        self.dtype = _choice({k: v for k, v in _DTYPES.items() if v in _NUMPY}, dtype, "dtype")
        out = ffi.new("clg_grads **")
        check(lib.clg_grads_create(opt._model, self.dtype, out), opt.ctx._ptr)
        # The destructor keeps the model's handle (not the optimizer: no
        # cycle through a cdata, which the garbage collector cannot see).
        self._ptr = ffi.gc(out[0], lambda p, keep=opt._model: lib.clg_grads_destroy(p))

        shapes, dtype = opt.shapes, _NUMPY[self.dtype]
        me = weakref.ref(self)  # no cycle (see _Views)

        def make(i, name):
            view = ffi.new("clg_view *")
            check(lib.clg_grads_view(me()._ptr, i, view), me().ctx._ptr)
            return _device_view(me(), view, shapes[name], dtype)
        self.views = _Views(opt.ctx, shapes, opt.names, make)

    def __getitem__(self, name):
        return self.views[name]

    def upload(self, name, host):
        """Copies a numpy array of the tensor's shape and the buffer's dtype."""
        host = _host_array(self.ctx, self._shapes, name, host, _NUMPY[self.dtype])
        check(lib.clg_grads_upload(self._ptr, self._index[name], ffi.from_buffer(host),
                                   host.size, ffi.NULL), self.ctx._ptr)


def _config(kind, ctx_ptr, *, lr=None, betas=None, eps=None, weight_decay=None,
            momentum=None, dampening=None, nesterov=False, amsgrad=False, maximize=False,
            accum_steps=1, normalize="mean", fuse_last_micro_step=True,
            clip_norm=0.0, clip_value=0.0, nonfinite="ignore", loss_scale=None,
            state_dtype="fp32", acc_dtype="fp32", master_dtype="fp32",
            schedule="constant", warmup=0, total_steps=0, min_lr=0.0,
            noise_scale=False, tensor_norms=False, seed=0, allow_over_device_memory=False):
    """The clg_config of an optimizer's keywords (torch.optim's names, None:
    clgrad's default), for clg_model_create and clg_model_estimate alike, so
    that both see every field and refuse a config alike; refusals of Python's
    own (a count, a choice) are recorded on ctx_ptr."""
    cfg = ffi.new("clg_config *", lib.clg_config_init(kind))
    for field, value in (("lr", lr), ("eps", eps), ("weight_decay", weight_decay),
                         ("momentum", momentum), ("dampening", dampening)):
        if value is not None:
            setattr(cfg, field, real(ctx_ptr, value, field))
    if betas is not None:
        if isinstance(betas, (str, bytes)) or np.shape(betas) != (2,):
            refuse(ctx_ptr, "clgrad: betas %r must be a pair of real numbers" % (betas,))
        cfg.beta1, cfg.beta2 = (real(ctx_ptr, b, "betas[%d]" % i) for i, b in enumerate(betas))
    cfg.nesterov, cfg.amsgrad, cfg.maximize = bool(nesterov), bool(amsgrad), bool(maximize)
    cfg.accum_steps = whole(ctx_ptr, accum_steps, "accum_steps", 0xFFFFFFFF)
    cfg.normalize = _choice({"mean": lib.CLG_NORM_MEAN, "sum": lib.CLG_NORM_SUM},
                            normalize, "normalize")
    cfg.fuse_last_micro_step = bool(fuse_last_micro_step)
    cfg.clip_norm = real(ctx_ptr, clip_norm, "clip_norm")
    cfg.clip_value = real(ctx_ptr, clip_value, "clip_value")
    cfg.nonfinite = _choice(_NONFINITE, nonfinite, "nonfinite")
    if loss_scale == "dynamic":
        cfg.loss_scale = lib.CLG_LOSS_SCALE_DYNAMIC
    elif loss_scale is not None:
        cfg.loss_scale = lib.CLG_LOSS_SCALE_STATIC
        cfg.loss_scale_init = real(ctx_ptr, loss_scale, "loss_scale")
    cfg.state_dtype = _choice(_DTYPES, state_dtype, "state_dtype")
    cfg.acc_dtype = _choice(_DTYPES, acc_dtype, "acc_dtype")
    cfg.master_dtype = _choice(_DTYPES, master_dtype, "master_dtype")
    cfg.schedule.kind = _choice(_SCHEDULES, schedule, "schedule")
    cfg.schedule.warmup = whole(ctx_ptr, warmup, "warmup")
    cfg.schedule.total = whole(ctx_ptr, total_steps, "total_steps")
    cfg.schedule.min_lr = real(ctx_ptr, min_lr, "min_lr")
    cfg.noise_scale, cfg.tensor_norms = bool(noise_scale), bool(tensor_norms)
    cfg.seed = whole(ctx_ptr, seed, "seed")
    cfg.allow_over_device_memory = bool(allow_over_device_memory)
    return cfg


_CONFIG_KEYWORDS = [p for p in inspect.signature(_config).parameters.values()
                    if p.kind is inspect.Parameter.KEYWORD_ONLY]


def _takes_config(fn):
    """fn(..., **config) with _config's keywords in its signature (help()
    lists them) and an unknown keyword refused under fn's own name."""
    names = {p.name for p in _CONFIG_KEYWORDS}

    @functools.wraps(fn)
    def checked(*args, **config):
        for key in config:
            if key not in names:
                raise TypeError("%s() got an unexpected keyword argument %r"
                                % (fn.__qualname__, key))
        return fn(*args, **config)
    sig = inspect.signature(fn)
    leading = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    checked.__signature__ = sig.replace(parameters=leading + _CONFIG_KEYWORDS)
    return checked


class _Group:
    """What the optimizer keeps of a parameter group: clgrad's index and
    the values clgrad holds (float32), for param_groups."""

    def __init__(self, index, names, lr_mult, weight_decay):
        self.index, self.names = index, names
        self.lr_mult, self.weight_decay = np.float32(lr_mult), np.float32(weight_decay)


# Keywords fixed at creation: opt.<name> = value raises instead of being
# ignored (the lr is a property that sets).
_FIXED = {p.name for p in _CONFIG_KEYWORDS} - {"lr"}


class Optimizer:
    """Base of AdamW, Adam, SGD and Lion: see their docstrings and
    python/README.md. params: {name: shape, numpy array or torch tensor}
    (arrays and tensors give the initial values), or a list of groups
    {"params": {...}, "lr": ..., "weight_decay": ...} as torch.optim takes
    them (a group's lr becomes a multiplier of the optimizer's). The
    keywords (lr, betas, ...) are _config's."""
    _KIND = None

    @_takes_config
    def __init__(self, ctx, params, **config):
        self.ctx = ctx
        cfg = _config(self._KIND, ctx._ptr, **config)
        out = ffi.new("clg_model **")
        check(lib.clg_model_create(ctx._ptr, cfg, out), ctx._ptr)
        # The model's destructor holds the Context: the context outlives it.
        self._model = ffi.gc(out[0], lambda p, keep=ctx: lib.clg_model_destroy(p))
        self.names, self.shapes, self._index, self._groups, initial = [], {}, {}, [], {}
        groups = [{"params": params}] if isinstance(params, dict) else list(params)
        for g, group in enumerate(groups):
            self._add_group(g, group, initial)
        check(lib.clg_model_finalize(self._model), ctx._ptr)
        self.param_dtype = np.uint16 if cfg.master_dtype == lib.CLG_BF16 else np.float32
        acc_dtype = np.uint16 if cfg.acc_dtype == lib.CLG_BF16 else np.float32
        me = weakref.ref(self)  # no cycle (see _Views)
        self.params = _Views(ctx, self.shapes, self.names, lambda i, n: me()._view(
            lib.clg_model_param_view, i, n, me().param_dtype))
        self.grad_acc = _Views(ctx, self.shapes, self.names, lambda i, n: me()._view(
            lib.clg_model_acc_view, i, n, acc_dtype))
        self._own_grads = None
        self._attached = set()  # Contrastive objects in its checkpoints (attach)
        for name, values in initial.items():
            self.upload(name, values)

    def __setattr__(self, name, value):
        if name in _FIXED:
            raise AttributeError("clgrad: %s is fixed when the optimizer is created; only the lr "
                                 "can be set (opt.lr, opt.param_groups[i]['lr'])" % name)
        super().__setattr__(name, value)

    def _add_group(self, g, group, initial):
        group = dict(group)
        tensors = group.pop("params")
        index, wd, lr_mult = 0, self._cfg().weight_decay, 1.0
        if g > 0 or group:
            if "weight_decay" in group:
                wd = real(self.ctx._ptr, group.pop("weight_decay"),
                          "parameter group %d: weight_decay" % g)
                if wd < 0:  # clg_model_add_group would take it as "the optimizer's"
                    refuse(self.ctx._ptr, "clgrad: parameter group %d: weight_decay %g must be "
                           ">= 0" % (g, wd))
            if "lr" in group:
                lr_mult = self._lr_mult(g, group.pop("lr"))
            if group:
                raise TypeError("parameter group: unknown keys %s" % sorted(group))
            out = ffi.new("int *")
            check(lib.clg_model_add_group(self._model, b"group%d" % g, lr_mult, wd, out),
                  self.ctx._ptr)
            index = out[0]
        self._groups.append(_Group(index, list(tensors), lr_mult, wd))
        for name, spec in tensors.items():
            if not isinstance(name, str):
                refuse(self.ctx._ptr, "clgrad: tensor names must be str, not %s (%r)"
                       % (type(name).__name__, name))
            c_name = c_string(self.ctx._ptr, name, "tensor name")
            values = _initial_values(name, spec)
            shape = tuple(values.shape) if values is not None else _shape_of(self.ctx, name, spec)
            count = _count(self.ctx, name, shape)
            out = ffi.new("int *")
            check(lib.clg_model_add_tensor(self._model, c_name, count, index, out), self.ctx._ptr)
            if len(shape) > 1:
                check(lib.clg_model_set_tensor_shape(self._model, out[0], len(shape),
                                                     ffi.new("size_t[]", shape)), self.ctx._ptr)
            self._index[name] = out[0]
            self.names.append(name)
            self.shapes[name] = shape
            if values is not None:
                initial[name] = values

    def _view(self, fn, i, name, dtype):
        view = ffi.new("clg_view *")
        check(fn(self._model, i, view), self.ctx._ptr)
        return _device_view(self, view, self.shapes[name], dtype)

    # ---------------------------------------------------------- host copies
    def upload(self, name, values):
        """Copies a float32 numpy array of the tensor's shape into its params."""
        host = _host_array(self.ctx, self.shapes, name, values, np.float32)
        check(lib.clg_model_upload_params(self._model, self._index[name],
                                          ffi.from_buffer("float[]", host), host.size, ffi.NULL),
              self.ctx._ptr)

    def download(self, name):
        """The tensor's params as a new float32 numpy array."""
        host = np.empty(self.shapes[_known(self.ctx, self.shapes, name)], np.float32)
        check(lib.clg_model_download_params(self._model, self._index[name],
                                            ffi.from_buffer("float[]", host), host.size, ffi.NULL),
              self.ctx._ptr)
        return host

    def state_dict(self):
        """{name: params as numpy arrays}."""
        return {n: self.download(n) for n in self.names}

    # ------------------------------------------------------------ the cycle
    @property
    def accum_beta(self):
        """Path B: the beta a backward writing into grad_acc uses (0 on a
        cycle's first micro-step: overwrite; 1 after: add)."""
        return float(lib.clg_accum_beta(self._model))

    @property
    def micro_step_index(self):
        return int(lib.clg_micro_step_index(self._model))

    @property
    def cycle_length(self):
        return int(lib.clg_cycle_length(self._model))

    def grads(self, dtype="fp32"):
        """New external gradient buffers (paths A and C)."""
        return Grads(self, dtype)

    def step(self, weight=1.0, grads=None):
        """One micro-step. grads None: path B (the backward wrote weight *
        gradient into grad_acc); a Grads of this optimizer, or {name: numpy
        array or torch tensor} (uploaded into buffers of its own first):
        paths A/C. Returns whether the cycle ended in an update."""
        return self._micro(lib.clg_step, "step", weight, grads)

    def step_collect(self, weight=1.0, grads=None):
        """step(), except on the cycle's last micro-step (clg_step_collect):
        that one only accumulates (never the fused path C, no statistics,
        no update) and returns True. The cycle is then pending: step,
        step_collect, flush and save raise StateError until finish_cycle
        (or reset_cycle, which drops the cycle). In between, grad_acc may be
        read and overwritten on ctx.queue (e.g. summed across processes)."""
        return self._micro(lib.clg_step_collect, "step_collect", weight, grads)

    def finish_cycle(self, weight_sum):
        """The pending cycle's end (clg_finish_cycle): the statistics the
        configuration needs over grad_acc as it is now, the mean divided by
        weight_sum (the sum of every weight that went into grad_acc), and the
        update."""
        weight_sum = real(self.ctx._ptr, weight_sum, "finish_cycle: weight_sum")
        check(lib.clg_finish_cycle(self._model, weight_sum, ffi.NULL), self.ctx._ptr)

    def _micro(self, fn, who, weight, grads):
        """A micro-step of clg_step or clg_step_collect (fn); -> *updated or
        *cycle_ready."""
        weight = real(self.ctx._ptr, weight, "%s: weight" % who)
        if isinstance(grads, dict):
            # All checked before any upload: a refused dict changes nothing.
            hosts = {n: _host_array(self.ctx, self.shapes, n, h, np.float32)
                     for n, h in grads.items()}
            missing = [n for n in self.names if n not in hosts]
            if missing:  # its buffer would hold the last micro-step's gradient
                refuse(self.ctx._ptr, "clgrad: %s: grads has no %s (a dict of gradients "
                       "holds every tensor)" % (who, ", ".join(map(repr, missing))))
            if self._own_grads is None:
                self._own_grads = Grads(self)
            for name, host in hosts.items():
                self._own_grads.upload(name, host)
            grads = self._own_grads
        if grads is None:
            handle = ffi.NULL
        elif isinstance(grads, Grads) and grads._optimizer() is self:
            handle = grads._ptr
        else:
            refuse(self.ctx._ptr, "clgrad: %s: grads must be None, a dict of numpy arrays or "
                   "torch tensors, or this optimizer's own Grads (opt.grads()), not %s"
                   % (who, type(grads).__name__))
        done = ffi.new("int *")
        check(fn(self._model, handle, weight, done, ffi.NULL), self.ctx._ptr)
        return bool(done[0])

    # ------------------------------------------------------- learning rates
    def _cfg(self):
        return lib.clg_model_get_config(self._model)

    @property
    def lr(self):
        """The optimizer's lr (clgrad's float32; with a schedule, the lr it
        warms up to and decays from). Settable, from the next update on
        (clg_model_set_lr, refused as at creation); every group's lr is a
        multiple of it (param_groups), so setting it scales them all."""
        return float(self._cfg().lr)

    @lr.setter
    def lr(self, value):
        check(lib.clg_model_set_lr(self._model, real(self.ctx._ptr, value, "lr")),
              self.ctx._ptr)

    @property
    def param_groups(self):
        """torch.optim's param_groups: a dict per group ("params": tensor
        names, "lr", "weight_decay", the optimizer's hyperparameters);
        param_groups[i]["lr"] = x sets group i's lr alone, from the next
        update on. See clgrad._groups."""
        return [ParamGroup(self, i) for i in range(len(self._groups))]

    def _lr_mult(self, g, lr):
        """Group g's lr as clgrad keeps it: a multiple of the optimizer's
        (0 stays 0, whatever the optimizer's lr becomes)."""
        lr = real(self.ctx._ptr, lr, "parameter group %d: lr" % g)
        if lr == 0:
            return 0.0
        if self.lr == 0:
            refuse(self.ctx._ptr, "clgrad: parameter group %d: lr %g cannot be a multiple of "
                   "the optimizer's lr 0 (give the optimizer a nonzero lr)" % (g, lr))
        return lr / self.lr

    def _group_lr(self, g):
        """Group g's lr: the optimizer's times the group's multiplier, as
        the update multiplies them (float32)."""
        return float(np.float32(self.lr) * self._groups[g].lr_mult)

    def _set_group_lr(self, g, lr):
        group, lr_mult = self._groups[g], self._lr_mult(g, lr)
        check(lib.clg_model_set_group_lr_mult(self._model, group.index, lr_mult), self.ctx._ptr)
        group.lr_mult = np.float32(lr_mult)

    def flush(self):
        """Updates now with the partial cycle (its own weights)."""
        check(lib.clg_flush(self._model, ffi.NULL), self.ctx._ptr)

    def reset_cycle(self):
        check(lib.clg_reset_cycle(self._model), self.ctx._ptr)

    def sync(self):
        """Waits for the queue (NonFinite under nonfinite="error")."""
        check(lib.clg_model_sync(self._model), self.ctx._ptr)

    def stats(self, blocking=True):
        """clg_model_stats as a dict: updates, micro_steps, skipped_updates,
        skipped_micro_steps, lr, grad_norm, clip_coef, loss_scale,
        weight_sum, last_nonfinite, noise_scale, noise_g2, noise_trace,
        cycles, cycles_behind."""
        s = ffi.new("clg_stats *", lib.clg_stats_init())
        check(lib.clg_model_stats(self._model, int(blocking), s), self.ctx._ptr)
        return {f: getattr(s, f) for f, _ in ffi.typeof("clg_stats").fields
                if f != "struct_size"}

    @property
    def loss_scale(self):
        out = ffi.new("float *")
        check(lib.clg_model_loss_scale(self._model, 1, out), self.ctx._ptr)
        return out[0]

    def memory(self):
        """clg_model_memory as a dict of device bytes."""
        return _plan_dict(lib.clg_model_memory, self._model, self.ctx._ptr)

    # ---------------------------------------------------------- checkpoints
    def save(self, path, meta=None):
        """The C library's checkpoint (safetensors-compatible), durably, at
        path (a str or os.PathLike); meta's keys and values as str."""
        name = c_path(self.ctx._ptr, path, "save: path")
        meta = [(str(k), str(v)) for k, v in (meta or {}).items()]
        keys = [ffi.new("char[]", c_string(self.ctx._ptr, k, "save: metadata key"))
                for k, _ in meta]
        values = [ffi.new("char[]", c_string(self.ctx._ptr, v, "save: metadata value of %r" % k))
                  for k, v in meta]
        check(lib.clg_checkpoint_save(self._model, name,
                                      ffi.new("const char *[]", keys) if keys else ffi.NULL,
                                      ffi.new("const char *[]", values) if values else ffi.NULL,
                                      len(keys)), self.ctx._ptr)

    def load(self, path):
        """Loads a checkpoint from path (a str or os.PathLike), all or
        nothing; returns the caller's metadata."""
        meta = {}

        @ffi.callback("clg_meta_fn")
        def on_meta(key, value, user):
            meta[ffi.string(key).decode()] = ffi.string(value).decode()
        name = c_path(self.ctx._ptr, path, "load: path")
        check(lib.clg_checkpoint_load(self._model, name, on_meta, ffi.NULL), self.ctx._ptr)
        return meta


def _plan_dict(fn, arg, ctx_ptr=ffi.NULL, plan="clg_model_plan"):
    """fn(arg, &p) for a plan struct p of that type (set by its _init), as a
    dict of its fields."""
    out = ffi.new(plan + " *", getattr(lib, plan + "_init")())
    check(fn(arg, out), ctx_ptr)
    return {f: int(getattr(out, f)) for f, _ in ffi.typeof(plan).fields if f != "struct_size"}


class AdamW(Optimizer):
    """torch.optim.AdamW: lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 1e-2."""
    _KIND = lib.CLG_ADAMW


class Adam(Optimizer):
    """torch.optim.Adam: L2 weight decay added to the gradient."""
    _KIND = lib.CLG_ADAM


class SGD(Optimizer):
    """torch.optim.SGD: lr 1e-2, momentum, dampening, nesterov, weight_decay."""
    _KIND = lib.CLG_SGD


class Lion(Optimizer):
    """Lion: lr 1e-4, betas (0.9, 0.99), decoupled weight decay."""
    _KIND = lib.CLG_LION


_KINDS = {"sgd": lib.CLG_SGD, "adam": lib.CLG_ADAM, "adamw": lib.CLG_ADAMW, "lion": lib.CLG_LION}


@_takes_config
def estimate(n_params, optimizer="adamw", **config):
    """The device bytes clgrad would allocate for n_params parameters under
    this configuration (clg_model_estimate), as a dict; nothing allocated.
    config: the optimizer's keywords, refused as the optimizer refuses them."""
    cfg = _config(_choice(_KINDS, optimizer, "optimizer"), ffi.NULL, **config)
    n_params = whole(ffi.NULL, n_params, "estimate: n_params")
    return _plan_dict(lambda c, p: lib.clg_model_estimate(c, n_params, p), cfg)


@_takes_config
def max_params(memory_bytes, optimizer="adamw", **config):
    """The most parameters whose training state fits in memory_bytes (e.g.
    8 << 30 for an 8 GB card), by bisection over estimate()."""
    memory_bytes = whole(ffi.NULL, memory_bytes, "max_params: memory_bytes")
    lo, hi = 0, 1 << 40
    while hi - lo > 1024:
        mid = (lo + hi) // 2
        if estimate(mid, optimizer, **config)["total"] <= memory_bytes:
            lo = mid
        else:
            hi = mid
    return lo


