#!/usr/bin/env python3
"""torch_gemm.py - clgrad-train's 8 GEMM shapes (micro-batch 32) in PyTorch
on the CPU, through the BLAS torch runs (compare.py selects OpenBLAS): the
per-shape peer of clgrad-bench's GEMM section. Row-major view as
tools/gemm/mlp_gemms.h: C[m x n] = op(A) op(B); each shape is timed as the
trainer's layers compute it (x @ w.t(), dy.t() @ x, dy @ w). Medians of
rounds over all shapes. Prints one JSON object on stdout.
"""

import argparse
import json
import statistics
import time

import torch

DIMS = [784, 512, 256, 10]


def shapes(b):
    out = []
    for l in range(len(DIMS) - 1):
        out.append(("fc%d forward" % (l + 1), b, DIMS[l + 1], DIMS[l], "N", "T"))
    for l in range(len(DIMS) - 2, -1, -1):
        out.append(("fc%d dW" % (l + 1), DIMS[l + 1], DIMS[l], b, "T", "N"))
        if l > 0:
            out.append(("fc%d dX" % (l + 1), b, DIMS[l], DIMS[l + 1], "N", "N"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--micro-batch", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--target-ms", type=float, default=40.0)
    args = ap.parse_args()
    torch.manual_seed(0)
    cases = []
    for role, m, n, k, ta, tb in shapes(args.micro_batch):
        # operands stored as the trainer stores them
        a = torch.rand(k, m) if ta == "T" else torch.rand(m, k)
        bm = torch.rand(n, k) if tb == "T" else torch.rand(k, n)
        c = torch.empty(m, n)
        opa = a.t() if ta == "T" else a
        opb = bm.t() if tb == "T" else bm

        def call(opa=opa, opb=opb, c=c):
            torch.mm(opa, opb, out=c)

        call()
        t0 = time.perf_counter()
        call()
        one = max(time.perf_counter() - t0, 1e-6)
        reps = max(1, int(args.target_ms / 1e3 / one))
        cases.append({"role": role, "m": m, "n": n, "k": k, "transa": ta, "transb": tb,
                      "call": call, "reps": reps, "ms": []})
    for _ in range(args.rounds):
        for cs in cases:
            t0 = time.perf_counter()
            for _ in range(cs["reps"]):
                cs["call"]()
            cs["ms"].append((time.perf_counter() - t0) * 1e3 / cs["reps"])
    out = []
    for cs in cases:
        med = statistics.median(cs["ms"])
        out.append({k: cs[k] for k in ("role", "m", "n", "k", "transa", "transb")} |
                   {"ms": med, "ms_min": min(cs["ms"]), "ms_max": max(cs["ms"]),
                    "gflops": 2.0 * cs["m"] * cs["n"] * cs["k"] / (med * 1e6)})
    step = sum(x["ms"] for x in out)
    print(json.dumps({"peer": "pytorch", "torch": torch.__version__,
                      "torch_threads": torch.get_num_threads(), "gemm": out,
                      "step_ms": step}))


if __name__ == "__main__":
    main()
