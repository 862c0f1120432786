#!/usr/bin/env python3
"""gpt_compare.py - clgrad-train --task gpt against PyTorch on the CPU, interleaved.

First one `clgrad-train --task gpt --profile` run: clgrad's training time
split into CLBlast's GEMMs, the attention's kernels, the other kernels and
the optimizer's update (each launch waited for, so it is slower than a
plain run and not timed against the peer); it also writes the initial
parameters (--save-initial) that the PyTorch runs start from. Then --rounds
rounds of the plain `clgrad-train --task gpt --json` and the same run in
PyTorch (torch_gpt_train.py: the same model, windows, batches, micro-batches,
AdamW, schedule and updates; float32), the order rotating from round to
round so that drift in the machine's load hits both alike. The summary:
tokens/s, time per update and validation loss side by side, medians and
ranges, the ratio of the medians and the per-round ratios' range, the host
(CPU, cores, load before and after every run) and the BLAS PyTorch mapped
(peer_common.py: OpenBLAS through LD_LIBRARY_PATH; OpenBLAS one thread per
core, as PoCL runs clgrad's kernels; torch's intra-op threads at its default,
--threads to change).

--tokens V trains a token model instead of the byte model: first a byte-level
BPE of vocabulary V of --corpus (scripts/prepare-tokens.py --train-bpe V, run
by --tokens-python, a Python with `tokenizers`) into llm.c shards in the run's
temporary directory, which both sides then read (`--data DIR`: the same
windows, the "val" shard validating; PyTorch's wte has the tokenizer's V rows).

--split puts the --profile runs into the rounds, both sides': each round
then runs clgrad-train, clgrad-train --profile, PyTorch and PyTorch --profile
(torch_gpt_train.py --profile, bench/peer/torch_gpt_profile.py), rotating;
round 1's clgrad-train --profile writes the initial parameters. The report
gives each part's medians and ranges for both, PyTorch's classifier (the
head's matmul and the cross-entropy) apart; clgrad's split has the head's
GEMMs in its GEMMs and its cross-entropy kernel in its other kernels.

Usage:
  python3 bench/peer/gpt_compare.py --build build [--rounds 5] [--updates N]
                                    [--tokens V] [--split]
                                    [--out bench/results/gpt-peer-HOST]
Writes OUT.json (every run, the machine, the load) and OUT.md (the tables).
--updates N shortens both (default: the task's default run, 2000 updates).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

from peer_common import (blas_text, check_blas, finish, fmt, machine, peer_env,
                         report_head, rotated, run_json, summary)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OWN_KERNELS_TARGET = 0.25  # issue 22: attention + other at most 25% of the step
PARTS = [("profile_gemm_s", "GEMMs (CLBlast: the linear layers and the head)"),
         ("profile_attention_s", "attention kernels (gpt_flash.cl: forward, two backward)"),
         ("profile_other_s", "other kernels (embedding, LayerNorm, bias, GELU, residual, "
                         "cross-entropy, loss sums)"),
         ("profile_optimizer_s", "optimizer (the update: clg_step at the cycle end)")]
# --split's table: (key, what); a side without the key shows a dash
SPLIT_ROWS = [
    ("gemm", "GEMMs: the linear layers (clgrad: CLBlast, the head's GEMMs too; PyTorch: "
             "addmm, their bias adds and bias gradients too)"),
    ("classifier", "classifier: the head's matmul + cross-entropy (PyTorch only; clgrad: "
                   "in its GEMMs and other kernels)"),
    ("head", "  of which the head's matmul (ln_f @ wte^T), forward and backward"),
    ("xent", "  of which the cross-entropy over the vocabulary and the loss sums"),
    ("attention", "attention (clgrad: gpt_flash.cl; PyTorch: split, 2 bmm, mask, softmax)"),
    ("other", "other kernels (embedding, LayerNorm, GELU, residual; clgrad: bias grads and "
              "gpt_xent too; PyTorch: AccumulateGrad too)"),
    ("optimizer", "optimizer (the update)"),
    ("rest", "rest (host, Python, hooks, waits between launches)"),
    ("total", "the profiled training time"),
    ("gemm_with_head", "PyTorch as clgrad groups it: GEMMs + the head's matmul"),
    ("other_with_xent", "PyTorch as clgrad groups it: other + the cross-entropy"),
]


def clgrad_cmd(args, *extra):
    cmd = [os.path.join(args.build, "tools", "train", "clgrad-train"), "--task", "gpt", "--json",
           "--quiet"]
    cmd += ["--data", args.data] if args.data else []
    return cmd + (["--steps", str(args.updates)] if args.updates else []) + list(extra)


def prepare_tokens(args, result, tmp):
    """--tokens: the BPE shards of --corpus in tmp/tokens; args.data names them."""
    out = os.path.join(tmp, "tokens")
    cmd = [args.tokens_python, os.path.join(REPO, "scripts", "prepare-tokens.py"), "--out", out,
           "--name", "corpus", "--train-bpe", str(args.tokens), args.corpus]
    print(" ".join(cmd), file=sys.stderr)
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("gpt_compare.py: %s failed (exit %d):\n%s" % (" ".join(cmd), p.returncode,
                                                               p.stderr[-3000:]))
    result["tokens"] = {"vocab": args.tokens, "corpus": args.corpus, "seconds": time.time() - t0,
                        "prepare": ((p.stdout + p.stderr).strip().splitlines() or [""])[-1],
                        "command": "scripts/prepare-tokens.py --out DIR --name corpus "
                                   "--train-bpe %d %s" % (args.tokens, args.corpus)}
    args.data = out


def split_parts(run):
    """A --profile run's parts, seconds: clgrad-train's four (and PyTorch's
    classifier), the rest of the training time, the total."""
    p = {key[len("profile_"):-2]: run[key] for key in run
         if key.startswith("profile_") and key.endswith("_s")}
    p.pop("accumulate", None)  # inside other
    own = ("gemm", "attention", "other", "optimizer", "classifier")
    p["rest"] = run["train_seconds"] - sum(p[k] for k in own if k in p)
    p["total"] = run["train_seconds"]
    if "classifier" in p:
        p["gemm_with_head"] = p["gemm"] + p["head"]
        p["other_with_xent"] = p["other"] + p["xent"]
    return p


def split_summary(runs):
    """Each part's ms per update and share of the training time over the
    runs: summaries (median, min, max)."""
    parts = [split_parts(r) for r in runs]
    return {k: {"ms_per_update": summary([1e3 * p[k] / r["updates"]
                                          for p, r in zip(parts, runs)]),
                "share": summary([p[k] / p["total"] for p in parts])}
            for k in parts[0]}


def per_update(run):
    return run.get("seconds_per_update", run["train_seconds"] / run["updates"])


def profile(args, result, init):
    """The --profile run: the split of its training time."""
    print("clgrad-train --profile", file=sys.stderr)
    run = run_json(clgrad_cmd(args, "--profile", "--save-initial", init), None,
                   "clgrad-train --profile")
    train = run["train_seconds"]
    parts = [{"part": key, "what": what, "seconds": run[key],
              "ms_per_update": 1e3 * run[key] / run["updates"], "share": run[key] / train}
             for key, what in PARTS]
    rest = train - sum(p["seconds"] for p in parts)
    parts.append({"part": "rest", "what": "rest (host, waits between launches)", "seconds": rest,
                  "ms_per_update": 1e3 * rest / run["updates"], "share": rest / train})
    own = (run["profile_attention_s"] + run["profile_other_s"]) / train
    result["profile"] = {"run": run, "train_seconds": train, "updates": run["updates"],
                         "parts": parts, "own_kernels_share": own,
                         "own_kernels_target": OWN_KERNELS_TARGET,
                         "own_kernels_met": own <= OWN_KERNELS_TARGET}


def side_summary(rs):
    """One contender's runs: summaries of the speed, the time, the load and
    the validation loss."""
    return {
        "tokens_per_s": summary([x["tokens_per_s"] for x in rs]),
        "seconds_per_update": summary([per_update(x) for x in rs]),
        "train_seconds": summary([x["train_seconds"] for x in rs]),
        "cpu_seconds": summary([x["_cpu_s"] for x in rs]),
        "load_before": summary([x["_load_before"][0] for x in rs]),
        "val_loss": summary([x["val_loss"] for x in rs]),
        "val_losses": sorted(set(round(x["val_loss"], 6) for x in rs)),
    }


def rounds(args, result, init):
    peer = [args.python, os.path.join(HERE, "torch_gpt_train.py"), "--init", init]
    peer += ["--threads", str(args.threads)] if args.threads else []
    peer += ["--data", args.data] if args.data else []
    contenders = [("clgrad-train", clgrad_cmd(args), None),
                  ("pytorch", peer, peer_env(args.blas))]
    if args.split:  # round 1 starts with the run that writes init
        contenders = [("clgrad-train --profile", clgrad_cmd(args, "--profile"), None)] + \
            contenders + [("pytorch --profile", peer + ["--profile"], peer_env(args.blas))]
    runs = {name: [] for name, _, _ in contenders}
    for r in range(args.rounds):
        print("round %d/%d" % (r + 1, args.rounds), file=sys.stderr)
        for name, cmd, env in rotated(contenders, r):
            first = args.split and r == 0 and name == "clgrad-train --profile"
            runs[name].append(run_json(cmd + (["--save-initial", init] if first else []),
                                       env, name))
    updates = {x["updates"] for rs in runs.values() for x in rs}
    if len(updates) != 1:
        sys.exit("gpt_compare.py: the runs took different numbers of updates: %s" % updates)
    if args.split:
        result["split"] = {}
        for side in ("clgrad-train", "pytorch"):
            rs = runs.pop(side + " --profile")
            result["split"][side] = dict(side_summary(rs), parts=split_summary(rs), runs=rs)
    table = {name: side_summary(rs) for name, rs in runs.items()}
    per_round = [a["tokens_per_s"] / b["tokens_per_s"]
                 for a, b in zip(runs["clgrad-train"], runs["pytorch"])]
    table["clgrad-train"]["ratio_to_pytorch"] = {
        "of_medians": table["clgrad-train"]["tokens_per_s"]["median"] /
                      table["pytorch"]["tokens_per_s"]["median"],
        "per_round": summary(per_round)}
    c, p = runs["clgrad-train"][0], runs["pytorch"][0]
    result["rounds"] = {"runs": runs, "summary": table, "updates": updates.pop(),
                        "blas": p.get("blas"), "torch_threads": p.get("torch_threads"),
                        "shape": {k: c[k] for k in ("layers", "heads", "width", "context",
                                                    "params", "batch", "micro_batch",
                                                    "accum_steps", "optimizer", "lr")},
                        "vocab": c.get("vocab", 256), "device": c.get("device"),
                        "clblast_tuning": c.get("clblast_tuning") or "none (CLBlast's defaults)",
                        "baselines": {"unigram": c["unigram_loss"], "bigram": c["bigram_loss"]}}


def split_markdown(split):
    """--split's section: each part of both sides, medians [min-max]."""
    c, p = split["clgrad-train"], split["pytorch"]
    n = c["tokens_per_s"]["n"]
    lines = ["## The training time split, %d --profile runs of each side in the same rounds" % n,
             "", "clgrad-train --profile waits for each launch (clFinish before and after); "
             "torch_gpt_train.py --profile times the stretches between module hooks forward and "
             "each autograd node backward (bench/peer/torch_gpt_profile.py); the profiled runs "
             "are compared with each other, not with the plain runs. Their speed: clgrad %s tokens/s, PyTorch %s "
             "(validation loss %s and %s). clgrad's split has no classifier: the head's GEMMs are "
             "in its GEMMs, its cross-entropy kernel (gpt_xent) in its other kernels; the last "
             "two rows group PyTorch's parts the same way. ms per update and share of the "
             "training time, medians [min-max]." % (
                 fmt(c["tokens_per_s"]), fmt(p["tokens_per_s"]),
                 ", ".join("%.4f" % v for v in c["val_losses"]),
                 ", ".join("%.4f" % v for v in p["val_losses"])), "",
             "| part | clgrad-train ms/update | share | PyTorch ms/update | share |",
             "|---|---|---|---|---|"]

    def cells(side, key):
        part = side["parts"].get(key)
        if part is None:
            return ["-", "-"]
        sh = {k: 100 * v if k != "n" else v for k, v in part["share"].items()}
        return [fmt(part["ms_per_update"]), fmt(sh, "%")]
    for key, what in SPLIT_ROWS:
        lines.append("| %s |" % " | ".join([what] + cells(c, key) + cells(p, key)))
    return lines + [""]


def markdown(result):
    lines = report_head("clgrad-train --task gpt against PyTorch", result["machine"])
    if "rounds" in result:
        e = result["rounds"]
        s = e["shape"]
        n = e["summary"]["pytorch"]["tokens_per_s"]["n"]
        tok = result.get("tokens")
        if "command" in result:
            lines += ["Command: `python3 %s`" % result["command"], ""]
        if tok:
            lines += ["Data: `%s` in the run's temporary directory (%.1f s: %s); both sides read "
                      "its shards (`--data DIR`), the \"val\" shard validating." % (
                          tok["command"], tok["seconds"], tok["prepare"]), ""]
        lines += ["## The same run, %d round%s interleaved" % (n, "s" if n > 1 else ""), "",
                  "%d layers, %d heads, %d wide, context %d, vocabulary %d (%d parameters); %d "
                  "updates of %d windows as %d x %d, %s lr %g, warmup + cosine; clgrad on %s, "
                  "CLBlast tuning: %s; PyTorch from clgrad's initial parameters, float32, %d "
                  "intra-op thread(s). Validation loss in nats/%s (baselines of the same split: "
                  "unigram %.4f, bigram %.4f). Medians [min-max]." % (
                      s["layers"], s["heads"], s["width"], s["context"], e["vocab"], s["params"],
                      e["updates"], s["batch"], s["accum_steps"], s["micro_batch"],
                      s["optimizer"], s["lr"], e["device"], e["clblast_tuning"],
                      e["torch_threads"], "token" if tok else "byte",
                      e["baselines"]["unigram"], e["baselines"]["bigram"]), "",
                  "| run | tokens/s | ms per update | training s | validation loss | "
                  "CPU s (all threads, whole process) | load before | tokens/s vs PyTorch "
                  "(of medians; per-round range) |", "|---|---|---|---|---|---|---|---|"]
        for name, t in e["summary"].items():
            ratio = t.get("ratio_to_pytorch")
            ms = {k: 1e3 * v if k != "n" else v for k, v in t["seconds_per_update"].items()}
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                name, fmt(t["tokens_per_s"]), fmt(ms), fmt(t["train_seconds"]),
                ", ".join("%.4f" % v for v in t["val_losses"]), fmt(t["cpu_seconds"]),
                fmt(t["load_before"]),
                "%.3fx (%.3f-%.3f)" % (ratio["of_medians"], ratio["per_round"]["min"],
                                        ratio["per_round"]["max"]) if ratio else "1"))
        lines.append("")
    if "split" in result:
        lines += split_markdown(result["split"])
    if "profile" in result:
        p = result["profile"]
        lines += ["## clgrad's training time split (one clgrad-train --task gpt --profile run)",
                  "", "Each launch waited for (clFinish before and after), so this run is "
                  "slower than the plain ones: %.2f s of training for %d updates (%.1f ms per "
                  "update)." % (p["train_seconds"], p["updates"],
                                1e3 * p["train_seconds"] / p["updates"]), "",
                  "| part | s | ms per update | share of the training time |",
                  "|---|---|---|---|"]
        for part in p["parts"]:
            lines.append("| %s | %.3f | %.2f | %.1f%% |" % (
                part["what"], part["seconds"], part["ms_per_update"], 100 * part["share"]))
        lines += ["", "clgrad's own kernels (attention + other) as a share of the step: "
                  "**%.1f%%** (issue 22's target: at most %.0f%% at the default size: %s)." % (
                      100 * p["own_kernels_share"], 100 * p["own_kernels_target"],
                      "met" if p["own_kernels_met"] else "not met"), ""]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="the Meson build directory")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--updates", type=int, default=0,
                    help="updates of every run (default: the task's default run)")
    ap.add_argument("--blas", default="openblas", choices=["openblas", "reference", "system"])
    ap.add_argument("--python", default="/usr/bin/python3", help="a Python with torch")
    ap.add_argument("--threads", type=int, default=0,
                    help="PyTorch's intra-op threads (0: torch's default)")
    ap.add_argument("--out", default=None, help="OUT.json and OUT.md (default: none)")
    ap.add_argument("--tokens", type=int, default=0,
                    help="a token model: a BPE of this vocabulary (default 0: bytes)")
    ap.add_argument("--corpus", default="/usr/share/games/fortunes",
                    help="--tokens: the text the BPE is trained on and encodes")
    venv = os.path.join(REPO, ".venv", "bin", "python")
    ap.add_argument("--tokens-python", default=venv if os.path.exists(venv) else sys.executable,
                    help="--tokens: a Python with tokenizers (default: the repo's .venv's)")
    ap.add_argument("--split", action="store_true",
                    help="the --profile runs of both sides in every round")
    args = ap.parse_args()
    if args.rounds < 1 or args.updates < 0:
        sys.exit("gpt_compare.py: --rounds must be at least 1 and --updates positive")
    check_blas(args.blas)
    result = {"machine": machine(args.blas), "command": " ".join(sys.argv)}
    args.data = None
    with tempfile.TemporaryDirectory(prefix="gpt-compare-") as tmp:
        if args.tokens:
            prepare_tokens(args, result, tmp)
        init = os.path.join(tmp, "initial.safetensors")
        if not args.split:
            profile(args, result, init)
        rounds(args, result, init)
    result["machine"]["torch_blas"] = blas_text(result["rounds"]["blas"])
    finish(result, markdown, args.out)

if __name__ == "__main__":
    main()
