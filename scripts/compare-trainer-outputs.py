#!/usr/bin/env python3
"""compare-trainer-outputs.py - does a change leave clgrad-train's outputs
as they were? Runs the same cases with two binaries (an earlier commit's
and the working tree's) and compares, byte for byte once the timings are
stripped, what each wrote: stdout, stderr and the exit status of every
run, --json, --metrics, --log, --dump-weights, --save-initial and the
checkpoints (issue 34's target: the 16 cases issue 21 compared, and the
GPT task).

usage: compare-trainer-outputs.py OLD_CLGRAD_TRAIN NEW_CLGRAD_TRAIN
           [--mpirun PATH] [--keep DIR] [--only NAME...]

Each case runs in a fresh directory per binary (DIR/old/CASE, DIR/new/CASE,
the outputs named relative to it, so the paths printed are equal), on
synthetic data written once (IDX files for classify and contrastive, a text
corpus for gpt). Prints a line per case (same, differs: which file, first
differing line; unstable) and exits 1 if any case is not the same. The
--dist cases need mpirun (--mpirun, default: the one on PATH; without one
they are skipped and said so). The kernel caches are the environment's
(CLGRAD_CACHE_DIR, PoCL's): old runs first and builds them, new reuses
them where its kernels are the same; a build prints nothing but times.

What is stripped (STRIP below, each with its reason; nothing else): the
values of the timing fields of --json and --log ("time", "seconds",
"*_seconds", "*_per_s", "profile_*_s") and of the timing columns of
--metrics; on stdout and stderr a duration ("11.7 s"), a rate ("33
samples/s"), an ETA, a pid, a date, mpirun's banners; and the progress
lines before the last update, which print when 10 s have passed since the
previous one, so that a cold kernel cache adds one (the loss they show is
in --metrics and --log too). A loss, lr, accuracy or count is never
stripped. Lock files (PATH.lock) hold their writer's pid: only whether one
is left behind is compared. Under mpirun each line is tagged with its rank
(--tag-output) and the lines are grouped by rank, in each rank's order: the
order in which two ranks' lines reach mpirun races.

The two checkpoint-write failures do not race: where the tests rename the
checkpoint's directory away mid-run (which lands after a varying number of
updates), here every temporary name the writer can try
(PATH.tmp.PID.N, src/checkpoint.c: 100 tries) is taken before the trainer
starts (a wrapper that execs it, keeping its pid), so the first
save fails, after the same update each time. A case that still came out
differently is run once more with the old binary: if that run differs from
old's first, the case races (timing that STRIP does not cover) and is
reported 'unstable' instead of 'differs'.

Standard library only."""
import argparse
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "mpi"))
from train_dist_util import write_data as write_idx  # noqa: E402

KILL_S = 300  # a cold kernel cache costs a GPT or contrastive run about a minute
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none", "POCL_MAX_PTHREAD_COUNT": "1"}
TIMING_KEY = r"time|seconds|\w+_seconds|\w+_per_s|profile_\w+_s"

# (pattern, replacement, why) applied to stdout, stderr and --log lines.
STRIP = [
    (r'"(%s)":-?[0-9][0-9.eE+-]*' % TIMING_KEY, r'"\1":T', "a timing field of --json/--log"),
    (r"\b[0-9]+(\.[0-9]+)? (samples|tokens)/s\b", r"T \2/s", "a rate"),
    (r"\b[0-9]+(\.[0-9]+)? s\b", "T s", "a duration"),
    (r"\bETA (warming up|--:--|[0-9:]+)", "ETA T", "the progress line's ETA"),
    (r"\.tmp\.[0-9]+\.", ".tmp.PID.", "a temporary file's name holds the writer's pid"),
    (r"\b(pid|PID) [0-9]+", r"\1 PID", "a pid (the writer's lock, mpirun's messages)"),
    (r"\b[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9:.]+", "DATE", "a date"),
]
STRIP = [(re.compile(p), r, why) for p, r, why in STRIP]
PROGRESS = re.compile(r"^update ([0-9]+)/([0-9]+) \(")
BANNER = re.compile(r"^-{20,}$")      # mpirun's boxed messages: job ids, who exited first
MPI_NOTE = re.compile(r"^\[[^\]\s]+:[0-9]+\] ")  # "[host:pid] 1 more process has sent..."
RANK_TAG = re.compile(r"^\[[0-9]+,([0-9]+)\]<(?:stdout|stderr)>:")


def write_data(d):
    """The --dist tests' IDX files (256 training and 128 test images whose
    class the pixels tell apart) in d/idx, and a text corpus."""
    write_idx(os.path.join(d, "idx"))
    with open(os.path.join(d, "corpus.txt"), "w") as f:
        f.write("the cat sees the moon and a dog finds the sea.\n" * 200)


def cases(data):
    """name -> [(ranks (0: no mpirun), argv after the binary, blocks the
    checkpoint's writes)]: each case's runs, in order, in one directory."""
    idx, corpus = os.path.join(data, "idx"), os.path.join(data, "corpus.txt")
    c = ["--data", idx, "--hidden", "16", "--batch", "64", "--micro-batch", "16", "--steps", "6",
         "--lr", "0.01", "--clip", "1", "--train-limit", "256", "--test-limit", "128",
         "--tuning", "off"]
    out = ["--json", "--metrics", "m.csv", "--log", "run.jsonl", "--dump-weights", "w.bin",
           "--checkpoint", "ck.st"]
    stop = ["--stop-after", "3", "--checkpoint", "ck.st", "--log", "run.jsonl", "--metrics",
            "m1.csv", "--json"]
    resume = ["--resume", "ck.st", "--checkpoint", "ck.st", "--log", "run.jsonl", "--metrics",
              "m2.csv", "--dump-weights", "w.bin", "--json"]
    ddp, zero1 = c + ["--dist", "ddp"], c + ["--dist", "zero1"]
    con = ["--task", "contrastive", "--data", idx, "--hidden", "16", "--embed-dim", "8",
           "--batch", "32", "--micro-batch", "16", "--steps", "4", "--knn", "5",
           "--train-limit", "256", "--test-limit", "128"]
    acc = con + ["--contrastive", "contaccum", "--bank-size", "32"]
    gpt = ["--task", "gpt", "--preset", "tiny", "--data", corpus, "--steps", "4",
           "--test-limit", "16", "--tuning", "off"]
    fails = ["--checkpoint", "ck.st", "--save-every", "2", "--log", "run.jsonl", "--json"]
    return {
        "plain": [(0, c, 0)],
        "outputs": [(0, c + out + ["--save-initial", "init.st"], 0)],
        "resume": [(0, c + stop, 0), (0, c + resume, 0)],
        "path-a-bf16": [(0, c + out + ["--grad-path", "A", "--accum-dtype", "bf16",
                                       "--master-dtype", "bf16"], 0)],
        "ddp": [(2, ddp + out, 0)],
        "zero1-stop-resume": [(2, zero1 + stop, 0), (2, zero1 + resume, 0)],
        "ddp-path-c": [(2, ddp + out + ["--grad-path", "C"], 0)],
        "ddp-resumed-at-end": [(2, ddp + out, 0), (2, ddp + resume, 0)],
        "ddp-refused-batch": [(2, ddp + ["--batch", "48"], 0)],
        "ddp-refused-auto-micro-batch": [(2, ddp + ["--auto-micro-batch"], 0)],
        "ddp-refused-bf16-accum": [(2, ddp + ["--accum-dtype", "bf16"], 0)],
        "contrastive-gradcache": [(0, con + ["--contrastive", "gradcache", "--json",
                                             "--dump-weights", "w.bin", "--checkpoint", "ck.st"],
                                   0)],
        "contaccum-resume": [(0, acc + ["--stop-after", "2", "--checkpoint", "ck.st"], 0),
                             (0, acc + ["--resume", "ck.st", "--checkpoint", "ck.st", "--json",
                                        "--dump-weights", "w.bin"], 0)],
        "resumed-at-end": [(0, c + out, 0), (0, c + resume, 0)],
        "checkpoint-write-fails": [(0, c + fails, 1)],
        "ddp-checkpoint-write-fails": [(2, ddp + fails, 1)],
        "gpt": [(0, gpt + ["--plan"], 0),
                (0, gpt + ["--stop-after", "2", "--checkpoint", "g.st", "--log", "run.jsonl",
                           "--metrics", "m1.csv", "--json"], 0),
                (0, gpt + ["--resume", "g.st", "--checkpoint", "g.st", "--log", "run.jsonl",
                           "--metrics", "m2.csv", "--json", "--dump-weights", "w.bin",
                           "--sample", "16"], 0)],
    }


# Run in place of the trainer for a failing checkpoint write: takes every
# name the writer tries for PATH (argv[1]) under this pid, which exec keeps.
BLOCKER = ("import os, sys\n"
           "for i in range(200):\n"
           "    open('%s.tmp.%d.%d' % (sys.argv[1], os.getpid(), i), 'x').close()\n"
           "os.execv(sys.argv[2], sys.argv[2:])\n")
BLOCKED = re.compile(r"\.tmp\.[0-9]+\.[0-9]+$")


def run_case(exe, runs, d, mpirun):
    """Runs a case's runs in d; each run's stdout, stderr and exit status go
    to d/runN.*."""
    os.makedirs(d)
    for n, (ranks, args, block) in enumerate(runs, 1):
        argv = [exe] + args
        if block:
            argv = [sys.executable, "-c", BLOCKER, args[args.index("--checkpoint") + 1]] + argv
        env = dict(os.environ)
        if ranks:
            argv = [mpirun, "--oversubscribe", "--tag-output", "-np", str(ranks)] + argv
            env.update(MPI_ENV)
        p = subprocess.Popen(argv, cwd=d, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
        try:
            out, err = p.communicate(timeout=KILL_S)
            rc = str(p.returncode)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            rc = "killed after %d s" % KILL_S
        for ext, data in (("stdout", out), ("stderr", err), ("exit", rc.encode() + b"\n")):
            with open(os.path.join(d, "run%d.%s" % (n, ext)), "wb") as f:
                f.write(data)
        if block:  # the names it took (empty files, no output of the trainer's)
            for name in os.listdir(d):
                path = os.path.join(d, name)
                if BLOCKED.search(name) and os.path.getsize(path) == 0:
                    os.remove(path)


def by_rank(text):
    """mpirun --tag-output's lines grouped by rank (each in its order),
    untagged lines (mpirun's own) after them."""
    ranks, rest = {}, []
    for line in text.split("\n"):
        m = RANK_TAG.match(line)
        if m:
            ranks.setdefault(int(m.group(1)), []).append(line[m.end():])
        elif line:
            rest.append(line)
    lines = []
    for r in sorted(ranks):
        lines += ["[rank %d] %s" % (r, line) for line in ranks[r]]
    return "\n".join(lines + rest) + "\n"


def strip_text(text, mpi):
    """stdout, stderr or --log with the timings out (STRIP)."""
    if mpi:
        text = by_rank(text)
    kept, in_banner = [], False
    for line in text.split("\n"):
        body = re.sub(r"^\[rank [0-9]+\] ", "", line)
        if BANNER.match(body):
            in_banner = not in_banner
            continue
        m = PROGRESS.match(body)
        if in_banner or MPI_NOTE.match(body) or (m and int(m.group(1)) < int(m.group(2))):
            continue
        for pattern, repl, _ in STRIP:
            line = pattern.sub(repl, line)
        kept.append(line)
    return "\n".join(kept)


def strip_csv(text):
    """--metrics with the values of its timing columns out."""
    rows = [line.split(",") for line in text.split("\n")]
    timing = {i for i, name in enumerate(rows[0]) if re.fullmatch(TIMING_KEY, name)}
    return "\n".join([",".join(rows[0])] + [
        ",".join("T" if i in timing else v for i, v in enumerate(row)) for row in rows[1:]])


def normalized(path, mpi):
    """What is compared of a file: text with the timings out, or bytes."""
    with open(path, "rb") as f:
        data = f.read()
    name = os.path.basename(path)
    if name.endswith(".lock"):
        return b"(a lock file)"
    text = data.decode("latin-1")  # every byte is a character: nothing is lost
    if name.endswith(".csv"):
        return strip_csv(text).encode("latin-1")
    if name.endswith((".stdout", ".stderr")):
        return strip_text(text, mpi).encode("latin-1")
    if name.endswith(".jsonl"):
        return strip_text(text, False).encode("latin-1")
    return data


TEXT = (".stdout", ".stderr", ".exit", ".csv", ".jsonl")


def safetensors(data):
    """(metadata, {tensor: bytes}) of a checkpoint, or None if it is none."""
    try:
        n = struct.unpack("<Q", data[:8])[0]
        header = json.loads(data[8:8 + n])
        meta = header.pop("__metadata__", {})
        body = data[8 + n:]
        return meta, {k: body[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in header.items()}
    except (struct.error, ValueError, KeyError, TypeError, AttributeError):
        return None


def few(items, n=4):
    """The first n of items, and how many there are in all."""
    return ", ".join(items[:n]) + (" (%d in all)" % len(items) if len(items) > n else "")


def first_difference(name, a, b):
    """Where a and b (the normalized files) first differ, in words."""
    if name.endswith(TEXT):
        la, lb = a.split(b"\n"), b.split(b"\n")
        for i, (x, y) in enumerate(zip(la, lb)):
            if x != y:
                return "line %d: old %r, new %r" % (i + 1, x.decode("latin-1")[:240],
                                                    y.decode("latin-1")[:240])
        return "old has %d lines, new %d" % (len(la), len(lb))
    i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    where = "byte %d (sizes %d and %d)" % (i, len(a), len(b))
    sa, sb = safetensors(a), safetensors(b)
    if sa and sb:  # a checkpoint: which tensors and stored keys (beside their CRCs)
        (ma, ta), (mb, tb) = sa, sb
        tensors = [k for k in sorted(set(ta) | set(tb)) if ta.get(k) != tb.get(k)]
        keys = ["%s: %r -> %r" % (k, ma.get(k), mb.get(k)) for k in sorted(set(ma) | set(mb))
                if ma.get(k) != mb.get(k) and "crc32" not in k]
        where += "; tensors differ: %s; metadata differs: %s" % (few(tensors) or "none",
                                                                  few(keys) or "only CRCs")
    return where


def compare_dirs(da, db, mpi):
    """None when da and db hold the same files, or what differs: the first
    text file that differs in detail (else the first file), then the others'
    names."""
    na, nb = sorted(os.listdir(da)), sorted(os.listdir(db))
    if na != nb:
        return "files: only old has %s, only new has %s" % (
            sorted(set(na) - set(nb)) or "none", sorted(set(nb) - set(na)) or "none")
    diff = {}
    for name in na:
        a = normalized(os.path.join(da, name), mpi)
        b = normalized(os.path.join(db, name), mpi)
        if a != b:
            diff[name] = (a, b)
    if not diff:
        return None
    first = next((n for n in diff if n.endswith(TEXT)), next(iter(diff)))
    others = [n for n in diff if n != first]
    return "%s: %s%s" % (first, first_difference(first, *diff[first]),
                         "; also differ: " + few(others, 8) if others else "")


def compare_case(name, runs, root, old, new, mpirun):
    """Runs a case with both binaries under root; its report line and
    whether it is the same."""
    mpi = any(ranks for ranks, _, _ in runs)
    if mpi and not mpirun:
        return "skipped   %s (no mpirun)" % name, True
    for side, exe in (("old", old), ("new", new)):
        run_case(exe, runs, os.path.join(root, side, name), mpirun)
    diff = compare_dirs(os.path.join(root, "old", name), os.path.join(root, "new", name), mpi)
    if not diff:
        return "same      %s" % name, True
    run_case(old, runs, os.path.join(root, "old-again", name), mpirun)
    racy = compare_dirs(os.path.join(root, "old", name), os.path.join(root, "old-again", name),
                        mpi)
    if racy:
        return "unstable  %s: old's two runs differ: %s" % (name, racy), False
    return "differs   %s: %s" % (name, diff), False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--mpirun", default=shutil.which("mpirun"))
    ap.add_argument("--keep", metavar="DIR", help="run in DIR (new or empty) and keep it")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="these cases only")
    a = ap.parse_args()
    old, new = os.path.abspath(a.old), os.path.abspath(a.new)
    names = a.only or list(cases(""))
    unknown = [n for n in names if n not in cases("")]
    if unknown:
        ap.error("unknown case %s (cases: %s)" % (", ".join(unknown), ", ".join(cases(""))))
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        if os.listdir(a.keep):
            ap.error("--keep %s: not empty" % a.keep)
    root = os.path.abspath(a.keep) if a.keep else tempfile.mkdtemp(prefix="compare-train-")
    bad, t0 = 0, time.monotonic()
    try:
        data = os.path.join(root, "data")
        write_data(data)
        table = cases(data)
        for name in names:
            line, same = compare_case(name, table[name], root, old, new, a.mpirun)
            print(line, flush=True)
            bad += not same
    finally:
        if not a.keep:
            shutil.rmtree(root)
    print("%d of %d cases differ (%.0f s)%s" % (bad, len(names), time.monotonic() - t0,
                                               "; kept in " + root if a.keep else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
