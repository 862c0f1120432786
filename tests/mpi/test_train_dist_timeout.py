"""--dist-timeout: a rank of `mpirun -np R clgrad-train --dist MODE` stopped
(SIGSTOP: alive, silent, never noticed by Open MPI) mid-run, saving a
checkpoint after every update. The job must end within the timeout and a
margin, non-zero, with one message on stderr naming the flag and the
stopped rank, from the lowest rank that is not stopped:
  clgrad-train: --dist-timeout: rank 0 waited 3.8 s for rank 1, which does
  not answer (stopped or hung?); aborting the job
R = 2 with rank 1 stopped, and rank 0, the rank that writes the
checkpoint; R = 3 with rank 2 stopped (ranks 0 and 1 both wait: one
message). The checkpoint on disk is a whole one: a plain process resumes
from it, with a temporary file of a dead writer beside it, which its save
removes. Before that, valid runs: the weights with --dist-timeout 3 are
bitwise those of the default's. argv: mpirun, clgrad-train, the mode (ddp,
the default, or zero1)."""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

from train_dist_util import BASE, fail, mpirun_args, rank_pid, run, start_saving, write_data

TIMEOUT_S = 3
# The job ends after the timeout, a roll call of at most 0.75 s and
# Open MPI's abort; the margin is for a loaded machine.
LIMIT_S = TIMEOUT_S + 15.0

mpirun, exe = sys.argv[1], sys.argv[2]
mode = sys.argv[3] if len(sys.argv) > 3 else "ddp"
tmp = tempfile.mkdtemp(prefix="clgrad-train-timeout-")
data = os.path.join(tmp, "data")
write_data(data)
args = [exe, "--data", data] + BASE
# R = 3 shares batches of 96 as 2 x 16 a rank (train_dist's R = 3 case).
THREE = ["--batch", "96", "--train-limit", "192"]


def valid_runs():
    """The same 6 updates with the default timeout and with 3 s: the
    watched waits change no result (and the kernel cache is warm after)."""
    w = {}
    for name, extra in (("default", []), ("3s", ["--dist-timeout", str(TIMEOUT_S)])):
        w[name] = os.path.join(tmp, "w_%s.bin" % name)
        run(mpirun_args(mpirun, 2) + args + ["--dist", mode, "--dump-weights", w[name]] + extra)
    with open(w["default"], "rb") as a, open(w["3s"], "rb") as b:
        if a.read() != b.read():
            fail("--dist-timeout %d changed the weights of a valid run" % TIMEOUT_S)
    print("valid runs: the weights with --dist-timeout %d are the default's" % TIMEOUT_S,
          flush=True)


def ended(pid, within=5.0):
    """Whether pid is gone or a zombie (killed; init reaps it) within a
    few seconds."""
    deadline = time.time() + within
    while time.time() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.1)
    return False


def dead_pid():
    """A pid no process has (one that just exited and was reaped)."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def stop_one(np, rank):
    ck = os.path.join(tmp, "ck_r%d_stop%d.safetensors" % (np, rank))
    long_run = [a if a != "6" else "100000" for a in args] + (THREE if np == 3 else [])
    p = start_saving(mpirun_args(mpirun, np) + long_run +
                     ["--dist", mode, "--dist-timeout", str(TIMEOUT_S), "--checkpoint", ck,
                      "--save-every", "1"], ck)
    time.sleep(0.5)  # some updates (and saves) later
    pid = rank_pid(p.pid, rank)
    if pid is None:
        fail("rank %d not found among mpirun's children" % rank)
    os.kill(pid, signal.SIGSTOP)
    t0 = time.time()
    try:
        _, err = p.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        fail("R=%d: mpirun still running %.0f s after rank %d was stopped (--dist-timeout %d)" %
             (np, LIMIT_S, rank, TIMEOUT_S))
    dt = time.time() - t0
    if p.returncode == 0:
        fail("R=%d: mpirun exited 0 after rank %d was stopped" % (np, rank))
    ours = [l for l in err.splitlines() if "--dist-timeout" in l]
    reporter = 1 if rank == 0 else 0  # the lowest rank that answers
    want = re.compile(r"clgrad-train: --dist-timeout: rank %d waited (\d+\.\d) s for rank %d, "
                      r"which does not answer \(stopped or hung\?\); aborting the job$" %
                      (reporter, rank))
    m = want.match(ours[0]) if len(ours) == 1 else None
    if not m or float(m.group(1)) < TIMEOUT_S:
        fail("R=%d, rank %d stopped: expected one line '%s' (waited >= %d s), got:\n%s" %
             (np, rank, want.pattern, TIMEOUT_S, err))
    if not ended(pid):
        fail("R=%d: the stopped rank %d (pid %d) outlived mpirun" % (np, rank, pid))
    print("R=%d, rank %d (pid %d) stopped: mpirun exited %d after %.2f s (limit %.0f s):\n%s" %
          (np, rank, pid, p.returncode, dt, LIMIT_S, ours[0]), flush=True)
    # The last whole checkpoint resumes; the temporary file a writer killed
    # mid-save leaves (here one of a dead pid) is no obstacle, and goes.
    stale = "%s.tmp.%d.0" % (ck, dead_pid())
    with open(stale, "wb") as f:
        f.write(b"half a checkpoint")
    r = run(long_run + ["--resume", ck, "--stop-after", "1", "--checkpoint", ck],
            expect_ok=False)
    if r.returncode != 0:
        fail("the checkpoint left by the stopped run does not resume:\n%s" % r.stderr)
    if os.path.exists(stale):
        fail("the resumed run's save left the stale temporary file %s" % stale)
    print("its checkpoint resumes on a plain process, which removed a stale temporary file",
          flush=True)


print("--dist %s" % mode, flush=True)
valid_runs()
stop_one(2, 1)
stop_one(2, 0)
stop_one(3, 2)
print("PASS")
