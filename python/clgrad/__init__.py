"""clgrad: fused gradient accumulation and optimizer updates on OpenCL, for
pyopencl programs. See python/README.md."""
from ._clgrad_cffi import ffi, lib
from ._context import Context
from ._errors import (BuildError, CorruptFile, Error, FileError, InvalidArgument, Mismatch,
                      NoDevice, NonFinite, OpenCLError, OutOfDeviceMemory, OutOfHostMemory,
                      OverBudget, StateError, Unsupported)
from ._optim import SGD, Adam, AdamW, Grads, Lion, Optimizer, estimate, max_params
from ._contrastive import Contrastive, contrastive_estimate, sample_seed

__version__ = ffi.string(lib.clg_version()).decode()

__all__ = ["Context", "Optimizer", "AdamW", "Adam", "SGD", "Lion", "Grads", "estimate",
           "max_params", "Contrastive", "contrastive_estimate", "sample_seed", "Error",
           "InvalidArgument", "OutOfDeviceMemory", "OverBudget",
           "Unsupported", "NoDevice", "BuildError", "FileError", "CorruptFile", "Mismatch",
           "NonFinite", "StateError", "OutOfHostMemory", "OpenCLError"]
