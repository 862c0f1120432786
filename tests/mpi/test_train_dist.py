"""clgrad-train --dist ddp and --dist zero1 against a plain process: argv:
mpirun, clgrad-train. R = 2 ranks (and R = 3 under zero1) and one process
take the same samples per update (the same effective batch): the final
weights (--dump-weights) must agree within rel L2 1e-6, the test
accuracy exactly and the last epoch's train loss (summed over the ranks)
within 1e-5; checkpoints cross R (2 -> 1 and 1 -> 2) and modes
(zero1 -> ddp, ddp -> zero1) and continue to the same weights; Q8 and Q4
states under zero1 against one process and across a checkpoint; a batch
the ranks cannot share and a bad data file on one rank fail on every
rank with a message saying what was wrong."""
import os
import sys
import tempfile

from train_dist_util import (BASE, fail, mpirun_args, read_weights, rel_l2, run, summary,
                             write_data)

TOL = 1e-6

mpirun, exe = sys.argv[1], sys.argv[2]
tmp = tempfile.mkdtemp(prefix="clgrad-train-dist-")
data = os.path.join(tmp, "data")
write_data(data)
args = [exe, "--data", data] + BASE
ddp = mpirun_args(mpirun, 2) + args + ["--dist", "ddp"]


def path(name):
    return os.path.join(tmp, name)


def compare(what, a, b):
    d = rel_l2(read_weights(a), read_weights(b))
    print("%s: rel L2 %.3g (limit %g)" % (what, d, TOL), flush=True)
    if not d <= TOL:
        fail("%s: rel L2 %.3g > %g" % (what, d, TOL))


# Equivalence: R = 2 vs one process.
one = summary(run(args + ["--dump-weights", path("w1")]))
two = summary(run(ddp + ["--dump-weights", path("w2")]))
compare("R=2 vs 1 process", path("w2"), path("w1"))
for k in ("updates", "samples", "batch", "test_accuracy"):
    if one[k] != two[k]:
        fail("%s: %r on 1 process, %r on 2 ranks" % (k, one[k], two[k]))
print("test accuracy %.4f on both; %d updates of %d samples" %
      (one["test_accuracy"], one["updates"], one["batch"]), flush=True)
# The last epoch's running loss and accuracy are summed over the ranks'
# shares: the plain run's (the loss up to the order of the sums).
if (two["train_accuracy"] != one["train_accuracy"] or
        not abs(two["train_loss"] - one["train_loss"]) <= 1e-5 * abs(one["train_loss"])):
    fail("train loss %r accuracy %r on 2 ranks, %r %r on 1 process" %
         (two["train_loss"], two["train_accuracy"], one["train_loss"], one["train_accuracy"]))
print("train loss %.6f / %.6f, accuracy %.4f on both" %
      (one["train_loss"], two["train_loss"], one["train_accuracy"]), flush=True)
# The weights differ from the initial ones (the comparison means something).
summary(run(args + ["--steps", "1", "--dump-weights", path("w0")]))
d0 = rel_l2(read_weights(path("w0")), read_weights(path("w1")))
if not d0 > 1e3 * TOL:
    fail("1 update and 6 updates are too close (rel L2 %.3g): the test cannot tell" % d0)

# A checkpoint of 2 ranks resumed on 1 process, and one of 1 process on 2.
run(ddp + ["--stop-after", "3", "--checkpoint", path("ck2")])
run(args + ["--resume", path("ck2"), "--dump-weights", path("w21")])
compare("checkpoint of R=2 at update 3 resumed on 1 process", path("w21"), path("w1"))
run(args + ["--stop-after", "3", "--checkpoint", path("ck1")])
run(ddp + ["--resume", path("ck1"), "--dump-weights", path("w12")])
compare("checkpoint of 1 process at update 3 resumed on R=2", path("w12"), path("w1"))

# ZeRO-1: R = 2 against the same process, and R = 3 (2 micro-steps of 16
# per rank, --batch 96 over 192 samples) against a process of its own.
zero1 = mpirun_args(mpirun, 2) + args + ["--dist", "zero1"]
z2 = summary(run(zero1 + ["--dump-weights", path("z2")]))
compare("zero1 R=2 vs 1 process", path("z2"), path("w1"))
if z2["test_accuracy"] != one["test_accuracy"] or z2["updates"] != one["updates"]:
    fail("zero1 R=2: accuracy %r updates %r, 1 process %r %r" %
         (z2["test_accuracy"], z2["updates"], one["test_accuracy"], one["updates"]))
three = ["--batch", "96", "--train-limit", "192"]
one3 = summary(run(args + three + ["--dump-weights", path("w1_96")]))
z3 = summary(run(mpirun_args(mpirun, 3) + args + three +
                 ["--dist", "zero1", "--dump-weights", path("z3")]))
compare("zero1 R=3 vs 1 process", path("z3"), path("w1_96"))
if z3["test_accuracy"] != one3["test_accuracy"]:
    fail("zero1 R=3: accuracy %r, 1 process %r" % (z3["test_accuracy"], one3["test_accuracy"]))
print("zero1: test accuracy %.4f (R=2) and %.4f (R=3) as one process" %
      (z2["test_accuracy"], z3["test_accuracy"]), flush=True)
# Its one checkpoint holds every shard's states: it resumes on 1 process
# and under ddp; a ddp checkpoint resumes under zero1.
run(zero1 + ["--stop-after", "3", "--checkpoint", path("ckz")])
run(args + ["--resume", path("ckz"), "--dump-weights", path("wz1")])
compare("zero1 checkpoint of R=2 at update 3 resumed on 1 process", path("wz1"), path("w1"))
run(ddp + ["--resume", path("ckz"), "--dump-weights", path("wzd")])
compare("zero1 checkpoint of R=2 resumed under ddp R=2", path("wzd"), path("w1"))
run(zero1 + ["--resume", path("ck2"), "--dump-weights", path("wdz")])
compare("ddp checkpoint of R=2 resumed under zero1 R=2", path("wdz"), path("w1"))

# Q8 and Q4 states under zero1 (each rank keeps its shard's codes and
# absmax values). Against one process the limit is QTOL, not TOL: the
# ranks' sum of real gradients rounds otherwise than one accumulator, and a
# state next to a code boundary then takes the neighbouring code (a 1/127
# step of its block's absmax under Q8), as under ddp (measured: q8 1.9e-5
# under both ddp and zero1, q4 4.8e-8). tests/mpi/test_dist_qstate.c has
# the exact sums that make ZeRO-1 one process's bits. A zero1 checkpoint
# resumed under zero1 continues bit for bit; resumed on one process, within
# QTOL of that process's uninterrupted run.
QTOL = 1e-4
for sd in ("q8", "q4"):
    q = ["--state-dtype", sd]
    run(args + q + ["--dump-weights", path("q1")])
    run(zero1 + q + ["--dump-weights", path("qz")])
    d = rel_l2(read_weights(path("qz")), read_weights(path("q1")))
    print("zero1 R=2 %s states vs 1 process: rel L2 %.3g (limit %g)" % (sd, d, QTOL), flush=True)
    if not d <= QTOL:
        fail("zero1 %s: rel L2 %.3g > %g" % (sd, d, QTOL))
    run(zero1 + q + ["--stop-after", "3", "--checkpoint", path("ckq")])
    run(zero1 + q + ["--resume", path("ckq"), "--dump-weights", path("qzr")])
    if read_weights(path("qzr")) != read_weights(path("qz")):
        fail("zero1 %s: resumed at update 3 under zero1, the weights are not the "
             "uninterrupted run's bits" % sd)
    print("zero1 R=2 %s checkpoint at update 3 resumed under zero1: bitwise" % sd, flush=True)
    run(args + q + ["--resume", path("ckq"), "--dump-weights", path("qr1")])
    d = rel_l2(read_weights(path("qr1")), read_weights(path("q1")))
    print("zero1 R=2 %s checkpoint resumed on 1 process: rel L2 %.3g (limit %g)" %
          (sd, d, QTOL), flush=True)
    if not d <= QTOL:
        fail("zero1 %s checkpoint on 1 process: rel L2 %.3g > %g" % (sd, d, QTOL))

# A batch the ranks cannot share: refused on every rank, naming the numbers.
p = run(mpirun_args(mpirun, 2) + [exe, "--data", data, "--dist", "ddp"] +
        BASE + ["--batch", "48"], expect_ok=False)
want = "--batch 48 is not a multiple of 2 ranks x --micro-batch 16"
if p.returncode == 0 or p.stderr.count(want) != 2:
    fail("--batch 48 on 2 ranks: exit %d, expected '%s' from both ranks; stderr:\n%s" %
         (p.returncode, want, p.stderr))

# A bad data file on rank 1 only (an MPMD launch gives it its own --data):
# both ranks exit with rank 1's message.
bad = path("bad")
write_data(bad)
with open(os.path.join(bad, "train-labels-idx1-ubyte"), "r+b") as f:
    f.truncate(20)
p = run(mpirun_args(mpirun, 1) + [exe, "--data", data, "--dist", "ddp"] + BASE +
        [":", "-np", "1", exe, "--data", bad, "--dist", "ddp"] + BASE,
        timeout=120, expect_ok=False)
for r in (0, 1):
    line = "clgrad-train (rank %d of 2): rank 1: " % r
    if line not in p.stderr or "train-labels-idx1-ubyte" not in p.stderr:
        fail("bad data on rank 1: expected '%s...' naming the file; exit %d, stderr:\n%s" %
             (line, p.returncode, p.stderr))
if p.returncode == 0:
    fail("bad data on rank 1: mpirun exited 0")
print("bad data on rank 1: exit %d on every rank:\n%s" % (p.returncode, p.stderr.strip()))
print("PASS")
