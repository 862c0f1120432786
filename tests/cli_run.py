"""cli_run.py - one run of a tool for the tests that walk its flags
(test_input_paths.py, test_output_paths.py): with no stdin, its output
captured, and killed if it has not ended after kill_s seconds."""
import subprocess
import time


def run_bounded(cmd, env, kill_s):
    """(exit status or None when it hung and was killed, stdout + stderr,
    seconds it took)."""
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=kill_s,
                           stdin=subprocess.DEVNULL, env=env)
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        rc, out = None, "(hung: killed)"
    return rc, out, time.monotonic() - t0
