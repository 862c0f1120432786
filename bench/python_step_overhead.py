"""python_step_overhead.py - what clgrad's Python layer adds per opt.step
beyond the C call: N path-B micro-steps (k large, so that no update runs and
the device does nothing) through opt.step(weight) and through
lib.clg_step called directly by cffi; prints microseconds per call of each
and their difference.   python3 bench/python_step_overhead.py [N]"""
import sys
import time

import clgrad
from clgrad import ffi, lib


def per_call(fn, n):
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def main(n):
    ctx = clgrad.Context()
    opt = clgrad.AdamW(ctx, {"w": (256, 256)}, accum_steps=1 << 30)
    updated = ffi.new("int *")
    c_call = lambda: lib.clg_step(opt._model, ffi.NULL, 1.0, updated, ffi.NULL)  # noqa: E731
    py_call = lambda: opt.step(1.0)  # noqa: E731
    per_call(py_call, 1000)  # warm up
    c_us, py_us = per_call(c_call, n), per_call(py_call, n)
    print("clg_step via cffi %.2f us, opt.step %.2f us, Python layer %.2f us per step"
          % (c_us, py_us, py_us - c_us))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100000)
