"""clgrad's failures as Python exceptions: one class per clg_status, each
carrying the status and clg_last_error's message."""
import numbers
import os

import numpy as np

from ._clgrad_cffi import ffi, lib
from ._host import host_array, is_torch_tensor


class Error(RuntimeError):
    """A clgrad call failed: .status (the clg_status or OpenCL code),
    .status_name ("CLG_ERR_INVALID_ARGUMENT") and .message (clg_last_error)."""

    def __init__(self, status, message):
        self.status = status
        self.status_name = ffi.string(lib.clg_status_string(status)).decode()
        self.message = message
        super().__init__("%s (%s)" % (message, self.status_name))


class InvalidArgument(Error, ValueError):
    pass


class OutOfDeviceMemory(Error, MemoryError):
    pass


class OverBudget(Error, MemoryError):
    pass


class Unsupported(Error):
    pass


class NoDevice(Error):
    pass


class BuildError(Error):
    pass


class FileError(Error, OSError):
    pass


class CorruptFile(Error):
    pass


class Mismatch(Error):
    pass


class NonFinite(Error, FloatingPointError):
    pass


class StateError(Error):
    pass


class OutOfHostMemory(Error, MemoryError):
    pass


class OpenCLError(Error):
    """An OpenCL code passed through (CL_OUT_OF_RESOURCES, ...)."""


_BY_STATUS = {
    lib.CLG_ERR_INVALID_ARGUMENT: InvalidArgument,
    lib.CLG_ERR_OUT_OF_DEVICE_MEMORY: OutOfDeviceMemory,
    lib.CLG_ERR_OVER_BUDGET: OverBudget,
    lib.CLG_ERR_UNSUPPORTED: Unsupported,
    lib.CLG_ERR_NO_DEVICE: NoDevice,
    lib.CLG_ERR_BUILD: BuildError,
    lib.CLG_ERR_IO: FileError,
    lib.CLG_ERR_CORRUPT_FILE: CorruptFile,
    lib.CLG_ERR_MISMATCH: Mismatch,
    lib.CLG_ERR_NONFINITE: NonFinite,
    lib.CLG_ERR_STATE: StateError,
    lib.CLG_ERR_OUT_OF_HOST_MEMORY: OutOfHostMemory,
}


def raise_status(status, ctx_ptr=ffi.NULL):
    """Raises the Error of a failed call, with clg_last_error(ctx_ptr)."""
    message = ffi.string(lib.clg_last_error(ctx_ptr)).decode(errors="replace")
    raise _BY_STATUS.get(status, OpenCLError)(status, message)


def check(status, ctx_ptr=ffi.NULL):
    if status != lib.CLG_SUCCESS:
        raise_status(status, ctx_ptr)


def refuse(ctx_ptr, message, status=lib.CLG_ERR_INVALID_ARGUMENT):
    """A misuse caught in Python, before anything reaches the device:
    recorded as clgrad records its own (clg_context_fail), then raised."""
    raise_status(lib.clg_context_fail(ctx_ptr, status, message.encode()), ctx_ptr)


def whole(ctx_ptr, value, what, limit=(1 << 64) - 1):
    """value as an int in [0, limit] (what a C count or size takes), or a
    refusal naming it; cffi's own OverflowError or TypeError would not say
    which argument was wrong."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
            or not 0 <= value <= limit):
        refuse(ctx_ptr, "clgrad: %s %r must be an integer in [0, %d]" % (what, value, limit))
    return int(value)


def real(ctx_ptr, value, what):
    """value as a Python float (what a C float takes, which the library
    then range-checks), or a refusal naming it: a str (float() would
    parse it), a bool, None. A one-element numpy array or torch tensor is
    its element, as torch.optim takes a tensor lr."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, np.ndarray) or is_torch_tensor(value):
        host = host_array(value, what)
        if host.size == 1 and host.dtype.kind in "fiu":
            return float(host.reshape(()))
    refuse(ctx_ptr, "clgrad: %s %r must be a real number" % (what, value))


def _no_nul(ctx_ptr, value, what):
    if "\0" in value:  # C would end the string there, silently
        refuse(ctx_ptr, "clgrad: %s contains a NUL character: %r" % (what, value))


def c_string(ctx_ptr, value, what):
    """value (a str) as the UTF-8 bytes of a C string, or a refusal naming
    it."""
    _no_nul(ctx_ptr, value, what)
    return value.encode()


def c_path(ctx_ptr, value, what):
    """A str or os.PathLike as the file name C opens, or a refusal naming
    it: bytes (str() of them would name a file "b'...'") and a NUL."""
    name = os.fspath(value) if isinstance(value, os.PathLike) else value
    if not isinstance(name, str):
        refuse(ctx_ptr, "clgrad: %s must be a str or os.PathLike, not %s (%r)"
               % (what, type(name).__name__, name))
    _no_nul(ctx_ptr, name, what)
    return os.fsencode(name)
