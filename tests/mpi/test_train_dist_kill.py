"""A rank of `mpirun -np 2 clgrad-train --dist MODE` killed outright
(SIGKILL) mid-run, saving a checkpoint after every update: mpirun must
exit non-zero within LIMIT_S seconds, naming the dead rank, and the
checkpoint on disk must be a whole one (a plain process resumes from it:
clg_checkpoint_load checks every CRC). Once for rank 1 and once for rank
0, the rank that writes the file. And a checkpoint write that fails on
rank 0 (its directory removed mid-run): every rank exits with rank 0's
message. argv: mpirun, clgrad-train, and the mode (ddp, the default, or
zero1, whose checkpoint rank 0 writes from every rank's shard)."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from train_dist_util import BASE, fail, mpirun_args, rank_pid, run, start_saving, write_data

LIMIT_S = 30.0

mpirun, exe = sys.argv[1], sys.argv[2]
mode = sys.argv[3] if len(sys.argv) > 3 else "ddp"
tmp = tempfile.mkdtemp(prefix="clgrad-train-kill-")
data = os.path.join(tmp, "data")
write_data(data)
# Long enough that the kill lands mid-run: the checkpoint after every update.
args = [exe, "--data", data] + [a if a != "6" else "100000" for a in BASE]


def start(ck):
    """mpirun -np 2 of the training, saving ck after every update."""
    return start_saving(mpirun_args(mpirun, 2) + args +
                        ["--dist", mode, "--checkpoint", ck, "--save-every", "1"], ck)


def wait_exit(p, what):
    """(stderr, seconds) of p's exit, which must come within LIMIT_S."""
    t0 = time.time()
    try:
        _, err = p.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        fail("mpirun still running %.0f s after %s" % (LIMIT_S, what))
    return err, time.time() - t0


def kill_one(rank):
    ck = os.path.join(tmp, "ck%d.safetensors" % rank)
    p = start(ck)
    time.sleep(0.5)  # some updates (and saves) later
    pid = rank_pid(p.pid, rank)
    if pid is None:
        p.kill()
        fail("rank %d not found among mpirun's children" % rank)
    os.kill(pid, signal.SIGKILL)
    err, dt = wait_exit(p, "rank %d was killed" % rank)
    if p.returncode == 0:
        fail("mpirun exited 0 after rank %d was killed" % rank)
    # Open MPI 4.1 names the rank (its PID there reads 0 in containers).
    named = "process rank %d with PID" % rank
    if named not in err or "signal 9" not in err:
        fail("mpirun's message does not name the dead rank ('%s', signal 9):\n%s" % (named, err))
    print("rank %d (pid %d) killed: mpirun exited %d after %.2f s (limit %.0f s):\n%s" %
          (rank, pid, p.returncode, dt, LIMIT_S, err.strip()), flush=True)
    # The file is the last complete checkpoint: a plain process resumes it.
    r = run(args + ["--resume", ck, "--stop-after", "1"], expect_ok=False)
    if r.returncode != 0:
        fail("the checkpoint left by the killed run does not resume:\n%s" % r.stderr)
    print("its checkpoint resumes on a plain process", flush=True)


def failed_write():
    d = os.path.join(tmp, "ckdir")
    os.mkdir(d)
    ck = os.path.join(d, "ck.safetensors")
    p = start(ck)
    # The next save cannot create its temporary file (nor rename one in
    # flight into place). A rename, not rmtree: a save may create a file
    # in it between rmtree's listing and its rmdir.
    os.rename(d, d + ".gone")
    err, dt = wait_exit(p, "the checkpoint directory went away")
    for r in (0, 1):
        line = "clgrad-train (rank %d of 2): rank 0: --checkpoint" % r
        if line not in err:
            fail("failed checkpoint write: expected '%s...' (exit %d):\n%s" %
                 (line, p.returncode, err))
    if p.returncode == 0:
        fail("failed checkpoint write: mpirun exited 0")
    print("checkpoint write failed on rank 0: mpirun exited %d after %.2f s:\n%s" %
          (p.returncode, dt, err.strip()), flush=True)
    shutil.rmtree(d + ".gone")


print("--dist %s" % mode, flush=True)
kill_one(1)
kill_one(0)
failed_write()
print("PASS")
