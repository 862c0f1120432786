"""clgrad.Contrastive: in-batch contrastive losses over a representation
cache (clg_contrastive, clgrad.h's "contrastive losses"): GradCache (fill
every micro-batch's rows, one compute over the whole batch, then each
micro-batch's backward with its rows' gradient) and ContAccum's memory
banks; and sample_seed, the replay seed of a sample's randomness."""
import weakref

import numpy as np
import pyopencl.array as cla

from ._clgrad_cffi import ffi, lib
from ._errors import c_string, check, real, refuse, whole
from ._host import host_array
from ._optim import Optimizer, _choice, _device_view, _plan_dict

_SIDES = {"query": lib.CLG_SIDE_QUERY, "key": lib.CLG_SIDE_KEY}
# Cache and bank dtypes reach clgrad as given, which refuses all but fp32
# and bf16; rows come and go as fp32 or fp16 arrays.
_CACHE_DTYPES = {"fp32": lib.CLG_FP32, "fp16": lib.CLG_FP16, "bf16": lib.CLG_BF16}
_ROW_DTYPES = {np.dtype(np.float32): lib.CLG_FP32, np.dtype(np.float16): lib.CLG_FP16}


def _contrastive_config(ctx_ptr, batch, dim, temperature, symmetric, normalize, dtype, bank_size):
    cfg = ffi.new("clg_contrastive_config *", lib.clg_contrastive_config_init())
    cfg.batch = whole(ctx_ptr, batch, "contrastive: batch")
    cfg.dim = whole(ctx_ptr, dim, "contrastive: dim")
    cfg.temperature = real(ctx_ptr, temperature, "contrastive: temperature")
    cfg.symmetric, cfg.normalize = bool(symmetric), bool(normalize)
    cfg.dtype = _choice(_CACHE_DTYPES, dtype, "dtype")
    cfg.bank_size = whole(ctx_ptr, bank_size, "contrastive: bank_size")
    return cfg


def contrastive_estimate(batch, dim, *, temperature=0.05, symmetric=True, normalize=True,
                         dtype="fp32", bank_size=0):
    """The device bytes Contrastive(ctx, batch, dim, ...) allocates, as a dict
    (clg_contrastive_estimate): cache, grads, banks, rows, total."""
    cfg = _contrastive_config(ffi.NULL, batch, dim, temperature, symmetric, normalize, dtype,
                              bank_size)
    return _plan_dict(lib.clg_contrastive_estimate, cfg, plan="clg_contrastive_plan")


def sample_seed(seed, update, position):
    """clg_sample_seed: a seed for one sample's randomness that depends only
    on (seed, update, position in the effective batch), so that GradCache's
    second forward replays the first."""
    return int(lib.clg_sample_seed(whole(ffi.NULL, seed, "sample_seed: seed"),
                                   whole(ffi.NULL, update, "sample_seed: update"),
                                   whole(ffi.NULL, position, "sample_seed: position")))


class Contrastive:
    """Contrastive(ctx, batch, dim, temperature=0.05, symmetric=True,
    normalize=True, dtype="fp32", bank_size=0): B = batch rows per side
    ("query", "key") of dim values; the loss and its gradient with respect
    to every cached row as clgrad.h defines them. Rows are [n, dim] arrays:
    pyopencl arrays (read on the device, no copy) or numpy arrays / torch
    tensors (uploaded first), float32 or float16."""

    def __init__(self, ctx, batch, dim, *, temperature=0.05, symmetric=True, normalize=True,
                 dtype="fp32", bank_size=0):
        self.ctx = ctx
        cfg = _contrastive_config(ctx._ptr, batch, dim, temperature, symmetric, normalize, dtype,
                                  bank_size)
        out = ffi.new("clg_contrastive **")
        check(lib.clg_contrastive_create(ctx._ptr, cfg, out), ctx._ptr)
        # The destructor holds the Context (it detaches from a model itself).
        self._ptr = ffi.gc(out[0], lambda p, keep=ctx: lib.clg_contrastive_destroy(p))
        self.batch, self.dim, self.bank_size = cfg.batch, cfg.dim, cfg.bank_size
        self._model = None  # weakref to the optimizer attached to (attach)

    def _side(self, side):
        return _choice(_SIDES, side, "side")

    def _rows(self, what, rows):
        """(cl_mem, offset and row stride in elements, clg_dtype, row count,
        the array that holds the buffer) of an [n, dim] array, or a refusal.
        A host array goes up in a buffer of its own: the caller holds it
        until clgrad has enqueued the copy (OpenCL then keeps the buffer
        until that copy is done)."""
        device = isinstance(rows, cla.Array)
        if not device:
            rows = np.ascontiguousarray(host_array(rows, what))
        item, offset = rows.dtype.itemsize, rows.offset if device else 0
        rows_of_dim = rows.dtype in _ROW_DTYPES and rows.ndim == 2 and rows.shape[1] == self.dim
        if rows_of_dim and rows.shape[0] == 0:  # no buffer: clgrad names the empty range
            return ffi.NULL, 0, self.dim, _ROW_DTYPES[rows.dtype], 0, None
        if (not rows_of_dim or rows.strides[1] != item or rows.strides[0] % item
                or offset % item):
            refuse(self.ctx._ptr, "clgrad: %s: a %s array of shape %s, expected rows of shape "
                   "(n, %d), float32 or float16, each row contiguous"
                   % (what, rows.dtype, rows.shape, self.dim))
        dtype, n = _ROW_DTYPES[rows.dtype], rows.shape[0]
        if not device:
            rows = cla.to_device(self.ctx.queue, rows)
        return (ffi.cast("cl_mem", rows.base_data.int_ptr), offset // item,
                rows.strides[0] // item, dtype, n, rows)

    def fill(self, side, row, rows):
        """Copies rows (an [n, dim] array) into rows [row, row + n) of one
        side's cache; the first fill after a compute starts a new batch."""
        side, row = self._side(side), whole(self.ctx._ptr, row, "fill: row")
        mem, offset, stride, dtype, n, held = self._rows("fill: rows", rows)
        check(lib.clg_contrastive_fill(self._ptr, side, row, n, mem, offset, stride, dtype,
                                       ffi.NULL), self.ctx._ptr)
        del held  # enqueued: the buffer may go

    def compute(self, rows):
        """The loss and gradients of rows [0, rows) of both sides (all
        filled), the banks' rows as extra negatives."""
        check(lib.clg_contrastive_compute(self._ptr, whole(self.ctx._ptr, rows, "compute: rows"),
                                          ffi.NULL), self.ctx._ptr)

    @property
    def loss(self):
        """The last compute's loss (a blocking read)."""
        out = ffi.new("float *")
        check(lib.clg_contrastive_loss(self._ptr, out), self.ctx._ptr)
        return float(out[0])

    def grad(self, side, row, rows, scale=1.0, out=None):
        """scale * dL/d(row) of rows [row, row + rows) of one side (of the
        last compute): into out (a pyopencl [rows, dim] array, float32 or
        float16, returned), or as a new numpy float32 array."""
        side, row = self._side(side), whole(self.ctx._ptr, row, "grad: row")
        rows = whole(self.ctx._ptr, rows, "grad: rows")
        scale = real(self.ctx._ptr, scale, "grad: scale")
        target = out if out is not None else cla.empty(self.ctx.queue, (rows, self.dim),
                                                       np.float32)
        if not isinstance(target, cla.Array):
            refuse(self.ctx._ptr, "clgrad: grad: out must be a pyopencl array or None, not %s"
                   % type(target).__name__)
        mem, offset, stride, dtype, n, _ = self._rows("grad: out", target)
        if n != rows:
            refuse(self.ctx._ptr, "clgrad: grad: out holds %d rows, not %d" % (n, rows))
        check(lib.clg_contrastive_grad(self._ptr, side, row, rows, scale, mem, offset, stride,
                                       dtype, ffi.NULL), self.ctx._ptr)
        return target if out is not None else target.get()

    def grad_view(self, side):
        """One side's fp32 gradient in place, a pyopencl [batch, dim] array
        (no copy), valid until the next compute."""
        view = ffi.new("clg_view *")
        check(lib.clg_contrastive_grad_view(self._ptr, self._side(side), view), self.ctx._ptr)
        return _device_view(self, view, (self.batch, self.dim), np.float32)

    # ------------------------------------------------------------ banks
    def bank_push(self, rows):
        """Appends rows [0, rows) of both sides to the banks (FIFO)."""
        check(lib.clg_contrastive_bank_push(self._ptr, whole(self.ctx._ptr, rows,
                                                             "bank_push: rows"), ffi.NULL),
              self.ctx._ptr)

    def bank_info(self):
        """(rows in use, the slot the next push writes)."""
        count, head = ffi.new("size_t *"), ffi.new("size_t *")
        check(lib.clg_contrastive_bank_info(self._ptr, count, head), self.ctx._ptr)
        return int(count[0]), int(head[0])

    def bank_reset(self):
        check(lib.clg_contrastive_bank_reset(self._ptr), self.ctx._ptr)

    def bank_download(self, side):
        """One bank in slot order, as a numpy [bank_size, dim] float32 array."""
        host = np.empty((self.bank_size, self.dim), np.float32)
        check(lib.clg_contrastive_bank_download(self._ptr, self._side(side),
                                                ffi.from_buffer("float[]", host), host.size,
                                                ffi.NULL), self.ctx._ptr)
        return host

    def attach(self, opt, name=None):
        """Makes the banks part of opt's checkpoints (tensors name.bank_q,
        name.bank_k, name.bank_state); opt keeps this object alive while it
        is attached. opt None detaches."""
        if opt is not None and not isinstance(opt, Optimizer):
            refuse(self.ctx._ptr, "clgrad: attach: opt must be a clgrad optimizer or None, not %s"
                   % type(opt).__name__)
        c_name = (c_string(self.ctx._ptr, name, "attach: name")
                  if opt is not None and name is not None else ffi.NULL)
        check(lib.clg_contrastive_attach(self._ptr, opt._model if opt is not None else ffi.NULL,
                                         c_name), self.ctx._ptr)
        before = self._model() if self._model is not None else None
        if before is not None:
            before._attached.discard(self)
        self._model = weakref.ref(opt) if opt is not None else None
        if opt is not None:
            opt._attached.add(self)

    def memory(self):
        """clg_contrastive_memory as a dict of device bytes."""
        return _plan_dict(lib.clg_contrastive_memory, self._ptr, self.ctx._ptr,
                          plan="clg_contrastive_plan")

