"""clgrad.Context: a clgrad context on its own device, or wrapping a pyopencl
queue (clg_context_wrap), with the device and clgrad's memory as properties."""
import pyopencl as cl

from ._clgrad_cffi import ffi, lib
from ._errors import c_string, check, refuse, whole


def _int_ptr(handle):
    return int(ffi.cast("intptr_t", handle))


class Context:
    """Context(device=None) picks a device as clg_context_create does (an
    index "N", "P:D", or a substring of the platform, vendor or device name;
    None: CLGRAD_DEVICE, else the first GPU, else the first device).
    Context(queue=q) wraps a pyopencl CommandQueue (in order) and its
    context: clgrad then enqueues its work on q."""

    def __init__(self, device=None, *, queue=None):
        out = ffi.new("clg_context **")
        if queue is not None:
            if device is not None:
                raise TypeError("Context: give a device selector or a queue, not both")
            if not isinstance(queue, cl.CommandQueue):
                refuse(ffi.NULL, "clgrad.Context: queue must be a pyopencl.CommandQueue, not %s"
                       % type(queue).__name__)
            check(lib.clg_context_wrap(out, ffi.cast("cl_context", queue.context.int_ptr),
                                       ffi.cast("cl_device_id", queue.device.int_ptr),
                                       ffi.cast("cl_command_queue", queue.int_ptr)))
            self.queue = queue
        else:
            selector = (ffi.NULL if device is None
                        else c_string(ffi.NULL, str(device), "Context: device selector"))
            check(lib.clg_context_create(out, selector))
            self.queue = cl.CommandQueue.from_int_ptr(
                _int_ptr(lib.clg_context_queue(out[0])), retain=True)
        self._ptr = ffi.gc(out[0], lib.clg_context_destroy)
        self.cl_context = self.queue.context
        self.device = self.queue.device

    @property
    def device_name(self):
        return ffi.string(lib.clg_context_device_info(self._ptr).name).decode()

    @property
    def global_mem_size(self):
        """The device's memory in bytes."""
        return int(lib.clg_context_device_info(self._ptr).global_mem_size)

    @property
    def max_alloc(self):
        """The largest buffer clgrad will create (bytes)."""
        return int(lib.clg_context_max_alloc(self._ptr))

    @property
    def device_bytes(self):
        """What clgrad holds on the device now (bytes)."""
        return int(lib.clg_context_device_bytes(self._ptr))

    @property
    def peak_device_bytes(self):
        return int(lib.clg_context_peak_device_bytes(self._ptr))

    @property
    def budget(self):
        """clgrad's device memory cap in bytes (0: none); settable."""
        return int(lib.clg_context_budget(self._ptr))

    @budget.setter
    def budget(self, nbytes):
        check(lib.clg_context_set_budget(self._ptr, whole(self._ptr, nbytes, "budget")), self._ptr)

    @property
    def last_error(self):
        return ffi.string(lib.clg_last_error(self._ptr)).decode(errors="replace")

    def __repr__(self):
        return "clgrad.Context(%r)" % self.device_name
