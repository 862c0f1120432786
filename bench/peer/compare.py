#!/usr/bin/env python3
"""compare.py - clgrad against PyTorch on the CPU, in one run, interleaved.

End to end: clgrad-train's default job (tuned by clgrad-tune when the device
has a tuning, and with --tuning off, CLBlast's defaults) against the same
MLP, batch, micro-batch, schedule and epochs in PyTorch (torch_mlp.py).
The GEMMs: clgrad-bench's GEMM section (the trainer's 8 shapes, CLBlast's
defaults against the tuning) against the same shapes through PyTorch's BLAS
(torch_gemm.py). The optimizer step: clgrad-bench's fused AdamW cycle (k = 4, N = 2^24)
against PyTorch's AdamW, for-loop and foreach, flat and 256 tensors
(torch_adamw.py). Each round runs every contender once, the order rotating
from round to round, so that drift in the machine's load hits all of them
alike; the summary gives medians, ranges and the ratio of the medians, and
the per-round ratios' range.

The BLAS: Debian's torch links the generic libblas.so.3 (BLAS_INFO=generic),
which is the reference BLAS unless the alternatives system points it
elsewhere. This script selects one explicitly for the PyTorch processes by
putting its directory first on LD_LIBRARY_PATH (--blas openblas: Debian's
libopenblas0-pthread, /usr/lib/x86_64-linux-gnu/openblas-pthread), and the
PyTorch scripts report the library actually mapped, so the results say
which BLAS ran. OpenBLAS runs its own 2 threads; torch's intra-op pool stays
at its default (1 here; 2 threads oversubscribe the 2 cores with OpenBLAS's
and ran 10x slower in a trial).

Usage:
  python3 bench/peer/compare.py --build build [--rounds 5] [--out bench/results/peer-HOST]
Writes OUT.json (every run, the machine, the load) and OUT.md (the tables).
Python: Debian's /usr/bin/python3 with python3-torch for the peers.
"""

import argparse
import json
import os
import subprocess
import sys
import time

from peer_common import (blas_text, check_blas, finish, fmt, loadavg, machine,
                         peer_env, report_head, rotated, run_json, summary)

HERE = os.path.dirname(os.path.abspath(__file__))


def e2e(args, result):
    train = os.path.join(args.build, "tools", "train", "clgrad-train")
    contenders = [
        ("clgrad-train", [train, "--json", "--quiet", "--epochs", str(args.epochs)]),
        ("pytorch", [args.python, os.path.join(HERE, "torch_mlp.py"), "--epochs",
                     str(args.epochs)]),
    ]
    if not args.no_untuned:
        contenders.insert(1, ("clgrad-train --tuning off",
                              [train, "--json", "--quiet", "--tuning", "off", "--epochs",
                               str(args.epochs)]))
    runs = {name: [] for name, _ in contenders}
    for r in range(args.rounds):
        print("e2e round %d/%d" % (r + 1, args.rounds), file=sys.stderr)
        for name, cmd in rotated(contenders, r):
            env = peer_env(args.blas) if name == "pytorch" else None
            runs[name].append(run_json(cmd, env, name))
    table = {}
    for name, rs in runs.items():
        table[name] = {
            "samples_per_s": summary([x["samples_per_s"] for x in rs]),
            "train_seconds": summary([x["train_seconds"] for x in rs]),
            "total_seconds": summary([x["total_seconds"] for x in rs]),
            "cpu_seconds": summary([x["_cpu_s"] for x in rs]),
            "load_before": summary([x["_load_before"][0] for x in rs]),
            "test_accuracy": summary([x["test_accuracy"] for x in rs]),
            "test_accuracies": sorted(set(round(x["test_accuracy"], 6) for x in rs)),
        }
    torch_sps = [x["samples_per_s"] for x in runs["pytorch"]]
    for name in runs:
        if name == "pytorch":
            continue
        per_round = [a["samples_per_s"] / b for a, b in zip(runs[name], torch_sps)]
        table[name]["ratio_to_pytorch"] = {
            "of_medians": table[name]["samples_per_s"]["median"] /
                          table["pytorch"]["samples_per_s"]["median"],
            "per_round": summary(per_round)}
    result["e2e"] = {"runs": runs, "summary": table,
                     "blas": runs["pytorch"][0].get("blas"),
                     "clblast_tuning": runs["clgrad-train"][0].get("clblast_tuning")}


def optim(args, result):
    bench = os.path.join(args.build, "bench", "clgrad-bench")
    n = 1 << 24
    runs = {"clgrad": [], "pytorch": []}
    for r in range(args.rounds):
        print("optimizer round %d/%d" % (r + 1, args.rounds), file=sys.stderr)
        jpath = os.path.join(args.tmp, "bench-%d.json" % r)
        steps = [
            ("clgrad", lambda: bench_run(bench, jpath)),
            ("pytorch", lambda: [run_json([args.python, os.path.join(HERE, "torch_adamw.py"),
                                           "--n", str(n), "--k", "4", "--threads", str(t)],
                                          peer_env(args.blas), "pytorch adamw, %d thread(s)" % t)
                                 for t in (1, 2)]),
        ]
        if r % 2:
            steps.reverse()
        for name, fn in steps:
            runs[name].append(fn())
    # clgrad: the fused AdamW cases (256 tensors, one param group)
    clg = {}
    for b in runs["clgrad"]:
        for c in b["cases"]:
            if c["optimizer"] == "adamw" and c["variant"] == "fused":
                clg.setdefault(c["path"], {"update_ms": [], "cycle_ms": []})
                clg[c["path"]]["update_ms"].append(c["update_ms"])
                clg[c["path"]]["cycle_ms"].append(c["cycle_ms"])
    # pytorch: the best of 1 and 2 threads per variant and round
    pt = {}
    for rnd in runs["pytorch"]:
        best = {}
        for out in rnd:
            for v in out["variants"]:
                key = v["variant"]
                for field in ("step_ms", "cycle_ms"):
                    if key not in best or v[field] < best[key].get(field, 1e30):
                        best.setdefault(key, {})[field] = v[field]
                        best[key][field + "_threads"] = out["torch_threads"]
        for key, v in best.items():
            pt.setdefault(key, {"step_ms": [], "cycle_ms": []})
            pt[key]["step_ms"].append(v["step_ms"])
            pt[key]["cycle_ms"].append(v["cycle_ms"])
    table = {"clgrad fused": {p: {k: summary(v) for k, v in d.items()} for p, d in clg.items()},
             "pytorch": {k: {f: summary(x) for f, x in d.items()} for k, d in pt.items()}}
    result["optim"] = {"n": n, "k": 4, "runs": runs, "summary": table}


def gemm(args, result):
    """clgrad-bench's GEMM section (CLBlast's defaults and the tuning)
    against the same 8 shapes through PyTorch's BLAS (torch_gemm.py)."""
    bench = os.path.join(args.build, "bench", "clgrad-bench")
    runs = {"clgrad": [], "pytorch": []}
    for r in range(args.rounds):
        print("GEMM round %d/%d" % (r + 1, args.rounds), file=sys.stderr)
        jpath = os.path.join(args.tmp, "bench-gemm-%d.json" % r)
        steps = [("clgrad", lambda: bench_run(bench, jpath, ["--no-cases", "--stream-n", "2^22"])),
                 ("pytorch", lambda: run_json([args.python, os.path.join(HERE, "torch_gemm.py")],
                                              peer_env(args.blas), "pytorch gemm"))]
        if r % 2:
            steps.reverse()
        for name, fn in steps:
            runs[name].append(fn())
    rows = []
    for i, g in enumerate(runs["clgrad"][0]["gemm"]):
        d = [b["gemm"][i]["gflops_default"] for b in runs["clgrad"]]
        t = [b["gemm"][i]["gflops_tuned"] for b in runs["clgrad"]]
        p = [x["gemm"][i]["gflops"] for x in runs["pytorch"]]
        rows.append({"role": g["role"], "m": g["m"], "n": g["n"], "k": g["k"],
                     "transa": g["transa"], "transb": g["transb"],
                     "kernel_default": g["kernel_default"], "kernel_tuned": g["kernel_tuned"],
                     "gflops_default": summary(d), "gflops_tuned": summary(t),
                     "gflops_pytorch": summary(p),
                     "gflops_triad_bound": g["gflops_triad_bound"]})
    steps = {"clgrad_default_ms": summary([b["gemm_tuning"]["step_ms_default"]
                                           for b in runs["clgrad"]]),
             "clgrad_tuned_ms": summary([b["gemm_tuning"]["step_ms_tuned"]
                                         for b in runs["clgrad"]]),
             "pytorch_ms": summary([x["step_ms"] for x in runs["pytorch"]])}
    result["gemm"] = {"rows": rows, "step": steps,
                      "tuning": runs["clgrad"][0]["gemm_tuning"], "runs": runs}


def bench_run(bench, jpath, flags=None):
    cmd = [bench] + (flags or ["--configs", "adamw", "--sizes", "2^24", "--k", "4", "--reps",
                               "5,10", "--target-ms", "400", "--stream-n", "2^24",
                               "--no-gemm"]) + ["--json", jpath]
    t0 = time.time()
    load0 = loadavg()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("compare.py: %s failed:\n%s" % (" ".join(cmd), p.stderr[-3000:]))
    with open(jpath) as f:
        out = json.load(f)
    out["_wall_s"] = time.time() - t0
    out["_load_before"] = load0
    out["_load_after"] = loadavg()
    print("  %-28s %7.1f s  load %.2f -> %.2f" % ("clgrad-bench " + (" ".join(flags) if flags
                                                                    else "adamw 2^24"),
                                                  out["_wall_s"],
                                                  load0[0], out["_load_after"][0]),
          file=sys.stderr)
    return out


def markdown(result):
    lines = report_head("clgrad against PyTorch", result["machine"])
    if "e2e" in result:
        e = result["e2e"]
        lines += ["## End to end: clgrad-train's default job (%d rounds, interleaved)" %
                  e["summary"]["pytorch"]["samples_per_s"]["n"], "",
                  "clgrad-train: CLBlast tuning %s. Medians [min-max]." % (
                      e["clblast_tuning"] or "none (CLBlast's defaults)"), "",
                  "| run | samples/s | training s | total s | CPU s (all threads) | load before | "
                  "test accuracy | samples/s vs PyTorch (of medians; per-round range) |",
                  "|---|---|---|---|---|---|---|---|"]
        for name, s in e["summary"].items():
            ratio = s.get("ratio_to_pytorch")
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                name, fmt(s["samples_per_s"]), fmt(s["train_seconds"]),
                fmt(s["total_seconds"]), fmt(s["cpu_seconds"]), fmt(s["load_before"]),
                ", ".join("%.4f" % a for a in s["test_accuracies"]),
                "%.3fx (%.3f-%.3f)" % (ratio["of_medians"], ratio["per_round"]["min"],
                                        ratio["per_round"]["max"]) if ratio else "1"))
        lines.append("")
    if "gemm" in result:
        g = result["gemm"]
        lines += ["## clgrad-train's GEMMs (GFLOP/s, medians [min-max] over rounds)", "",
                  "clgrad: clgrad-bench's GEMM section (tuning: %s); PyTorch: the same shapes "
                  "through its BLAS (torch_gemm.py)." % (g["tuning"]["file"] or "none"), "",
                  "| GEMM | m x n x k | CLBlast defaults | tuned | tuned / defaults | "
                  "PyTorch | tuned / PyTorch |", "|---|---|---|---|---|---|---|"]
        for r in g["rows"]:
            lines.append("| %s | %dx%dx%d %s%s | %s (%s) | %s (%s) | %.2fx | %s | %.2fx |" % (
                r["role"], r["m"], r["n"], r["k"], r["transa"], r["transb"],
                fmt(r["gflops_default"]), r["kernel_default"], fmt(r["gflops_tuned"]),
                r["kernel_tuned"], r["gflops_tuned"]["median"] / r["gflops_default"]["median"],
                fmt(r["gflops_pytorch"]),
                r["gflops_tuned"]["median"] / r["gflops_pytorch"]["median"]))
        s = g["step"]
        lines += ["", "One micro-step's 8 GEMMs: CLBlast defaults %s ms, tuned %s ms (%.2fx), "
                  "PyTorch %s ms." % (fmt(s["clgrad_default_ms"]), fmt(s["clgrad_tuned_ms"]),
                                      s["clgrad_default_ms"]["median"] /
                                      s["clgrad_tuned_ms"]["median"], fmt(s["pytorch_ms"])), ""]
    if "optim" in result:
        o = result["optim"]["summary"]
        lines += ["## AdamW, N = 2^24, k = 4 (ms, medians [min-max] over rounds)", "",
                  "| implementation | update step | whole cycle (4 micro-steps + update) |",
                  "|---|---|---|"]
        for path, d in sorted(o["clgrad fused"].items()):
            lines.append("| clgrad fused, path %s, 256 tensors | %s | %s |" % (
                path, fmt(d["update_ms"]), fmt(d["cycle_ms"])))
        for k, d in o["pytorch"].items():
            lines.append("| PyTorch AdamW %s | %s | %s |" % (k, fmt(d["step_ms"]),
                                                             fmt(d["cycle_ms"])))
        lines.append("")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="the Meson build directory")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--blas", default="openblas", choices=["openblas", "reference", "system"])
    ap.add_argument("--python", default="/usr/bin/python3", help="a Python with torch")
    ap.add_argument("--out", default=None, help="OUT.json and OUT.md (default: none)")
    ap.add_argument("--skip-e2e", action="store_true")
    ap.add_argument("--skip-optim", action="store_true")
    ap.add_argument("--skip-gemm", action="store_true")
    ap.add_argument("--no-untuned", action="store_true",
                    help="no clgrad-train --tuning off runs")
    ap.add_argument("--tmp", default="/tmp")
    args = ap.parse_args()
    check_blas(args.blas)
    result = {"machine": machine(args.blas)}
    if not args.skip_e2e:
        e2e(args, result)
        result["machine"]["torch_blas"] = blas_text(result["e2e"]["blas"])
    if not args.skip_gemm:
        gemm(args, result)
    if not args.skip_optim:
        optim(args, result)
    finish(result, markdown, args.out)

if __name__ == "__main__":
    main()
