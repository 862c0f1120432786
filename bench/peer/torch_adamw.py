#!/usr/bin/env python3
"""torch_adamw.py - PyTorch's AdamW on the CPU at clgrad-bench's size: the
peer of clgrad's fused cycle that bench/peer/compare.py runs interleaved
with `clgrad-bench --configs adamw`.

N parameters (default 2^24) as one flat tensor or as 256 equal tensors,
k = 4 micro-steps of fp32 gradients, AdamW with clgrad-bench's settings
(lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 1e-2), in torch's two
implementations: the for-loop over tensors (foreach=False) and the
multi-tensor one (foreach=True). Two times per variant, medians over
repetitions:
  step_ms   optimizer.step() alone, with the gradients in place: the peer
            of clgrad's update step on path B (the backward wrote the
            accumulator; the update reads it, p, m, v and writes p, m, v).
  cycle_ms  k micro-steps that add prepared gradients into .grad (the first
            copies, as a backward into a zeroed .grad would write) and the
            step: the peer of clgrad's whole cycle on path A (gradient
            buffers accumulated, then the update).
The gradients are prepared once, scaled by 1/k as a mean-loss backward
would make them, so that no extra pass divides the sum.

Prints one JSON object on stdout.
"""

import argparse
import json
import statistics
import time

import torch


def one_variant(n, tensors, foreach, k, reps, warmup):
    torch.manual_seed(0)
    size = n // tensors
    params = [torch.nn.Parameter(torch.empty(size).uniform_(-1, 1)) for _ in range(tensors)]
    grads = [[torch.empty(size).uniform_(-1, 1).mul_(1.0 / k) for _ in range(tensors)]
             for _ in range(k)]
    opt = torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                            foreach=foreach)
    for p in params:
        p.grad = torch.zeros_like(p)

    def micro(i):
        for p, g in zip(params, grads[i]):
            if i == 0:
                p.grad.copy_(g)
            else:
                p.grad.add_(g)

    def cycle():
        for i in range(k):
            micro(i)
        opt.step()

    for _ in range(warmup):
        cycle()
    step_ms, cycle_ms = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        cycle()
        cycle_ms.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        opt.step()
        step_ms.append((time.perf_counter() - t0) * 1e3)
    return {
        "variant": ("foreach" if foreach else "for-loop") + (" flat" if tensors == 1 else
                                                              " %d tensors" % tensors),
        "foreach": foreach, "tensors": tensors, "n": size * tensors, "k": k, "reps": reps,
        "step_ms": statistics.median(step_ms), "step_ms_min": min(step_ms),
        "step_ms_max": max(step_ms),
        "cycle_ms": statistics.median(cycle_ms), "cycle_ms_min": min(cycle_ms),
        "cycle_ms_max": max(cycle_ms),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1 << 24)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--tensors", type=int, default=256)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    out = {"peer": "pytorch", "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
           "variants": []}
    for tensors in (1, args.tensors):
        for foreach in (False, True):
            out["variants"].append(one_variant(args.n, tensors, foreach, args.k, args.reps,
                                               args.warmup))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
