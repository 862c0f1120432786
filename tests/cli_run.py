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


# The checks of a test script that reports each one as it goes
# (test_gpt_cli.py, test_log_plot.py): what failed, in order.
failures = []


def check(cond, what):
    """Prints ok or FAIL and the check; a failure is kept in failures."""
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def finish(failures, passed):
    """Prints the failures and the counts; the exit status (1: any failed)."""
    for f in failures:
        print("FAIL " + f)
    print(f"{passed} passed, {len(failures)} failed")
    return 1 if failures else 0
