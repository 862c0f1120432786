#!/usr/bin/env python3
"""test_flags_neutral.py - the flags that only watch a run change nothing
in it (issue 35): for every task, a run with --metrics, --log, --json and
--quiet (and the GPT's --profile) writes the checkpoint of the same run
without them: every tensor (weights, optimizer states) and every stored
setting and counter byte for byte, and of the step block every word but
the statistics that --metrics and --log ask clgrad to compute (the
gradient's sum of squares, its norm, the clipping coefficient: they steer
nothing without --clip or a non-finite policy), their indices read from
cl/layout.py. Before, --metrics turned on skipping non-finite updates, so
that a later --sample --resume of its checkpoint was refused ("saved
skip-update, now ignore"). That resume is checked here too: a checkpoint
written with them resumes, without --override, in a run without them.

usage: test_flags_neutral.py CLGRAD_TRAIN"""
import json
import os
import random
import struct
import sys
import tempfile

from cli_run import finish, run_bounded

KILL_S = 300.0
# all of them at once (each run costs seconds: make test's budget), and the
# GPT's --profile on its own (it waits after every launch)
WATCHERS = [["--metrics", "{tmp}/m.csv", "--log", "{tmp}/run.log", "--json", "--quiet"]]
GPT_WATCHERS = WATCHERS + [["--profile"]]


def write_idx(d, prefix, count, seed):
    """An IDX pair of count 28 x 28 images and labels 0..9, seeded."""
    rnd = random.Random(seed)
    with open(os.path.join(d, prefix + "-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 0x803, count, 28, 28))
        f.write(bytes(rnd.randrange(256) for _ in range(count * 784)))
    with open(os.path.join(d, prefix + "-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 0x801, count))
        f.write(bytes(rnd.randrange(10) for _ in range(count)))


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cl"))
import layout  # noqa: E402  (the step block's words, as the kernels have them)

OBSERVED = {i for name, i, _, _ in layout.STEP_BLOCK if name in ("SUMSQ", "GRAD_NORM", "CLIP_COEF")}
STEP_BLOCK = "clgrad.step_block"


def read_checkpoint(path):
    """(metadata, {tensor: bytes}) of a checkpoint (safetensors)."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    body = data[8 + n:]
    return meta, {k: body[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in header.items()}


def differences(a, b):
    """What differs between two checkpoints, beside the observed words."""
    (ma, ta), (mb, tb) = read_checkpoint(a), read_checkpoint(b)
    diff = [k for k in sorted(set(ta) | set(tb)) if k != STEP_BLOCK and ta.get(k) != tb.get(k)]
    wa = struct.unpack("<%dI" % (len(ta[STEP_BLOCK]) // 4), ta[STEP_BLOCK])
    wb = struct.unpack("<%dI" % (len(tb[STEP_BLOCK]) // 4), tb[STEP_BLOCK])
    diff += ["step block word %d" % i for i in range(len(wa)) if i not in OBSERVED and wa[i] != wb[i]]
    # the CRCs of the step block and of the header follow the observed words
    skip = {"clgrad.header_crc32", "clgrad.crc32." + STEP_BLOCK}
    diff += [k for k in sorted(set(ma) | set(mb)) if k not in skip and ma.get(k) != mb.get(k)]
    return diff


def main():
    train = sys.argv[1]
    failures, n = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, CLGRAD_CACHE_DIR=os.environ.get("CLGRAD_CACHE_DIR",
                                                               os.path.join(tmp, "cache")))
        idx = os.path.join(tmp, "idx")
        os.mkdir(idx)
        write_idx(idx, "train", 256, 1)
        write_idx(idx, "t10k", 64, 2)
        corpus = os.path.join(tmp, "corpus.txt")
        with open(corpus, "w") as f:
            f.write("the cat sees the moon and a dog finds the sea.\n" * 200)
        tasks = [
            ("classify", ["--data", idx, "--hidden", "16", "--batch", "32", "--micro-batch", "16",
                          "--steps", "4"], WATCHERS),
            ("contrastive", ["--task", "contrastive", "--data", idx, "--hidden", "16",
                             "--embed-dim", "8", "--batch", "32", "--micro-batch", "16",
                             "--steps", "3", "--knn", "5"],
             [["--json", "--quiet"]]),  # it writes no metrics
            ("gpt", ["--task", "gpt", "--preset", "tiny", "--data", corpus, "--steps", "4",
                     "--test-limit", "16"], GPT_WATCHERS),
        ]
        for name, args, watchers in tasks:
            base = os.path.join(tmp, name + "-base.st")
            rc, out, _ = run_bounded([train] + args + ["--checkpoint", base], env, KILL_S)
            if rc != 0:
                failures.append(f"{name}: the plain run: exit {rc}: {out.strip()[-300:]}")
                continue
            for watch in watchers:
                flags = [w.format(tmp=tmp) for w in watch]
                ck = os.path.join(tmp, name + "-watched.st")
                rc, out, _ = run_bounded([train] + args + flags + ["--checkpoint", ck], env,
                                         KILL_S)
                n += 1
                what = f"{name} {' '.join(watch)}"
                if rc != 0:
                    failures.append(f"{what}: exit {rc}: {out.strip()[-300:]}")
                    continue
                diff = differences(base, ck)
                if diff:
                    failures.append(f"{what}: the checkpoint differs ({', '.join(diff[:6])})")
                else:
                    print(f"ok  {what}: the same checkpoint")
                if "--metrics" in watch:
                    # resumed without them (and without --override): accepted
                    rc, out, _ = run_bounded([train] + args + ["--resume", ck], env, KILL_S)
                    n += 1
                    if rc != 0:
                        failures.append(f"{what}: its checkpoint does not resume without it: "
                                        f"exit {rc}: {out.strip()[-300:]}")
                    else:
                        print(f"ok  {what}: its checkpoint resumes without it")
    return finish(failures, n - len(failures))


if __name__ == "__main__":
    sys.exit(main())
