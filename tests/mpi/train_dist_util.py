"""Shared by the clgrad-train --dist tests: a small synthetic data set in
IDX files, running the trainer (plain or under mpirun, or a long job
saving checkpoints, ended with the test), reading --dump-weights files and
their relative L2 distance."""
import atexit
import math
import os
import random
import signal
import struct
import subprocess
import sys
import time

TRAIN_N, TEST_N = 256, 128
# Small and quick: 784-16-10, effective batch 64 = 4 x 16 (2 x 16 per rank
# for R = 2), 6 updates across an epoch boundary (4 batches per epoch).
BASE = ["--hidden", "16", "--batch", "64", "--micro-batch", "16", "--steps", "6",
        "--lr", "0.01", "--clip", "1", "--train-limit", str(TRAIN_N), "--test-limit", str(TEST_N),
        "--quiet", "--json", "--tuning", "off"]


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def write_idx(path, dims, data):
    with open(path, "wb") as f:
        f.write(bytes([0, 0, 8, len(dims)]))
        for d in dims:
            f.write(struct.pack(">I", d))
        f.write(data)


def write_data(d):
    """Fashion-MNIST-shaped files whose class the pixels tell apart."""
    os.makedirs(d, exist_ok=True)
    rng = random.Random(5)
    for prefix, n in (("train", TRAIN_N), ("t10k", TEST_N)):
        labels = bytes(rng.randrange(10) for _ in range(n))
        img = bytearray()
        for lab in labels:
            img += bytes(min(255, lab * 25 + rng.randrange(40)) for _ in range(784))
        write_idx(os.path.join(d, prefix + "-images-idx3-ubyte"), [n, 28, 28], bytes(img))
        write_idx(os.path.join(d, prefix + "-labels-idx1-ubyte"), [n], labels)


def mpirun_args(mpirun, np):
    return [mpirun, "--oversubscribe", "--allow-run-as-root", "-np", str(np)]


def rank_pid(parent, rank):
    """The pid of MPI rank `rank` among mpirun's children (Open MPI sets
    OMPI_COMM_WORLD_RANK in each rank's environment)."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != parent:
                continue
            with open("/proc/%s/environ" % d, "rb") as f:
                env = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if ("OMPI_COMM_WORLD_RANK=%d" % rank).encode() in env:
            return int(d)
    return None


_jobs = []


@atexit.register
def _end_jobs():
    """A failed check must not leave a long run behind: every job started
    here is ended with all its processes (its own session; SIGKILL ends a
    stopped rank too)."""
    for p in _jobs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()


def start_saving(argv, ck):
    """argv (mpirun of a long training saving ck after every update) as a
    job, once its first checkpoint is there (the ranks are training)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    _jobs.append(p)
    deadline = time.time() + 120
    while not os.path.exists(ck):
        if p.poll() is not None or time.time() > deadline:
            out, err = p.communicate()
            fail("no checkpoint appeared (exit %s):\n%s\n%s" % (p.returncode, out, err))
        time.sleep(0.05)
    return p


def run(argv, timeout=300, expect_ok=True):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    if expect_ok and p.returncode != 0:
        fail("%s exited %d\nstdout:\n%s\nstderr:\n%s" % (" ".join(argv), p.returncode,
                                                       p.stdout, p.stderr))
    return p


def summary(p):
    import json
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if len(lines) != 1:
        fail("expected one JSON line (rank 0's) on stdout, got %d:\n%s" % (len(lines), p.stdout))
    return json.loads(lines[0])


def read_weights(path):
    with open(path, "rb") as f:
        b = f.read()
    return struct.unpack("<%df" % (len(b) // 4), b)


def rel_l2(a, b):
    if len(a) != len(b):
        fail("weight files differ in length: %d and %d floats" % (len(a), len(b)))
    num = sum((x - y) ** 2 for x, y in zip(a, b))
    den = sum(y * y for y in b)
    return math.sqrt(num / den) if den > 0 else math.sqrt(num)
