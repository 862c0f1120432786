"""clgrad-train --dist ddp against a plain process: argv: mpirun,
clgrad-train. R = 2 ranks and one process take the same samples per
update (the same effective batch): the final weights (--dump-weights)
must agree within rel L2 1e-6 and the test accuracy exactly; checkpoints
cross R (2 -> 1 and 1 -> 2) and continue to the same weights; a batch
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
