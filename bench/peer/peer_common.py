"""peer_common.py - what the peer comparisons (compare.py: the MLP, the GEMMs
and AdamW; gpt_compare.py: the GPT task) share: the host and its load,
running a contender that prints one JSON line, the BLAS the PyTorch
processes load, and summaries of rounds (median, min, max).

The BLAS: Debian's torch links the generic libblas.so.3 (BLAS_INFO=generic),
which is the reference BLAS unless the alternatives system points it
elsewhere. peer_env selects one explicitly for the PyTorch processes by
putting its directory first on LD_LIBRARY_PATH (openblas: Debian's
libopenblas0-pthread), and the PyTorch scripts report the library actually
mapped (torch_mlp.blas_in_use), so the results say which BLAS ran."""

import json
import os
import platform
import resource
import socket
import statistics
import subprocess
import sys
import time

BLAS_DIRS = {
    "openblas": "/usr/lib/x86_64-linux-gnu/openblas-pthread",
    "reference": "/usr/lib/x86_64-linux-gnu/blas",
}


def prog():
    return os.path.basename(sys.argv[0])


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def machine(blas):
    """The host, named in every result: CPU, cores, kernel, load now."""
    return {"host": socket.gethostname(), "cpu": cpu_model(), "cpus": os.cpu_count(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "load_start": loadavg(),
            "kernel": platform.release(), "torch_blas": "PyTorch BLAS: --blas %s" % blas}


def check_blas(blas):
    if blas == "openblas" and not os.path.isdir(BLAS_DIRS["openblas"]):
        sys.exit("%s: OpenBLAS is not installed (%s): apt-get install libopenblas0-pthread, "
                 "or pass --blas system" % (prog(), BLAS_DIRS["openblas"]))


def blas_text(b):
    """The machine's torch_blas line from a PyTorch run's blas_in_use."""
    b = b or {}
    return "PyTorch BLAS: %s (%s)" % (b.get("name"), b.get("openblas_config") or b.get("resolved"))


def run_json(cmd, env=None, what=""):
    """Runs cmd; its last stdout line that starts with '{' is a JSON object."""
    t0 = time.time()
    load0 = loadavg()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit("%s: %s failed (exit %d):\n%s" % (prog(), " ".join(cmd), p.returncode,
                                                   p.stderr[-3000:]))
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if not lines:
        sys.exit("%s: %s printed no JSON" % (prog(), " ".join(cmd)))
    out = json.loads(lines[-1])
    out["_wall_s"] = time.time() - t0
    # CPU time of the process and its threads: less sensitive to other
    # processes on a shared machine than the wall time (spinning threads
    # count too)
    out["_cpu_s"] = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    out["_load_before"] = load0
    out["_load_after"] = loadavg()
    print("  %-28s %7.1f s  cpu %7.1f s  load %.2f -> %.2f" % (
        what, out["_wall_s"], out["_cpu_s"], load0[0], out["_load_after"][0]), file=sys.stderr)
    return out


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values)}


def peer_env(blas):
    env = dict(os.environ)
    if blas in BLAS_DIRS:
        env["LD_LIBRARY_PATH"] = BLAS_DIRS[blas] + (
            ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def rotated(contenders, r):
    """Round r's order: the list rotated by r, so that each contender goes
    first in turn and drift in the machine's load hits all alike."""
    k = r % len(contenders)
    return contenders[k:] + contenders[:k]


def fmt(s, unit=""):
    return "%.4g%s [%.4g-%.4g]" % (s["median"], unit, s["min"], s["max"])


def report_head(title, m):
    """The report's first lines: the title on the host, then the host's CPU,
    the BLAS and the load."""
    return ["# %s on %s" % (title, m["host"]), "",
            "%s, %d CPUs; %s; %s. Load average (1 min) from %.2f to %.2f over the run." % (
                m["cpu"], m["cpus"], m["date"], m["torch_blas"], m["load_start"][0],
                m["load_end"][0]), ""]


def finish(result, markdown, out):
    """The load at the end; the report on stdout, and into OUT.json (every
    run) and OUT.md when out is given."""
    result["machine"]["load_end"] = loadavg()
    md = markdown(result)
    print(md)
    if out:
        with open(out + ".json", "w") as f:
            json.dump(result, f, indent=1)
        with open(out + ".md", "w") as f:
            f.write(md)
