#!/usr/bin/env python3
"""check_bench_dist.py MPIRUN BENCH R - runs `mpirun -np R clgrad-bench --dist
--quick --json FILE` and checks its `dist` rows against libclgrad-mpi's byte
counts: per update, DDP moves the ordered reduce-scatter + allgather of the
accumulator, (len - mine) + mine (R-1) floats per round of 2^20 elements,
which is 2 (R-1)/R x 4 bytes x N each way (exactly so when R divides every
round), plus R-1 agreement records of 256 bytes for each of the 3
agreements of a cycle end; the every-micro-step baseline k times that, so
the measured ratio is k exactly; every time is positive. Exits with the
bench's status when it fails (77, no device: meson's skip, which
require_device.sh turns into a failure under CLGRAD_REQUIRE_DEVICE)."""
import json
import math
import os
import subprocess
import sys
import tempfile

ROUND = 1 << 20
AGREE_RECORD, AGREEMENTS = 256, 3


def expected_bytes(n, ranks, rank=0):
    """What the library's counters must say rank `rank` sent per update."""
    total = 0
    for a in range(0, n, ROUND):
        length = min(ROUND, n - a)
        mine = length * (rank + 1) // ranks - length * rank // ranks
        total += ((length - mine) + mine * (ranks - 1)) * 4
    return total + AGREEMENTS * (ranks - 1) * AGREE_RECORD


def fail(msg):
    print("check_bench_dist: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    mpirun, bench, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "dist.json")
        cmd = [mpirun, "--oversubscribe", "--allow-run-as-root", "-np", str(ranks), bench,
               "--dist", "--quick", "--json", out]
        print(" ".join(cmd), flush=True)
        rc = subprocess.call(cmd)
        if rc != 0:
            print("check_bench_dist: clgrad-bench --dist exited %d" % rc, file=sys.stderr)
            sys.exit(rc)
        with open(out) as f:
            doc = json.load(f)
    rows = doc.get("dist")
    if not isinstance(rows, list) or not rows:
        fail("no dist rows in the JSON")
    if doc["cases"] or doc["gemm"]:
        fail("--dist ran other sections")
    for row in rows:
        n, k = int(row["n"]), int(row["k"])
        where = "N = %d, k = %d" % (n, k)
        for key, v in row.items():
            if isinstance(v, float) and not math.isfinite(v):
                fail("%s: %s is %r" % (where, key, v))
        if row["mode"] != "ddp" or row["ranks"] != ranks:
            fail("%s: mode %s ranks %s" % (where, row["mode"], row["ranks"]))
        doc_bytes = 2 * (ranks - 1) / ranks * 4 * n
        if abs(row["model_bytes_per_update"] - doc_bytes) > 0.5:
            fail("%s: model_bytes_per_update %r, want %r" % (where, row["model_bytes_per_update"],
                                                             doc_bytes))
        want = expected_bytes(n, ranks)
        for side, mult in (("ddp", 1), ("sync", k)):
            for way in ("sent", "received"):
                got = row["%s_bytes_%s_per_update" % (side, way)]
                if got != want * mult:
                    fail("%s: %s bytes %s per update %r, want %d" % (where, side, way, got,
                                                                     want * mult))
        # the accumulator's part alone is the documented figure when R divides the rounds
        divides = all(min(ROUND, n - a) % ranks == 0 for a in range(0, n, ROUND))
        if divides and want - AGREEMENTS * (ranks - 1) * AGREE_RECORD != doc_bytes:
            fail("%s: the exchange is not 2 (R-1)/R x 4 bytes x N" % where)
        if row["bytes_ratio"] != k:
            fail("%s: bytes_ratio %r, want exactly %d" % (where, row["bytes_ratio"], k))
        for key in ("ddp_comm_ms", "sync_comm_ms", "ddp_staging_ms", "sync_staging_ms",
                    "ddp_update_ms", "sync_update_ms", "comm_ratio"):
            if not row[key + "_min"] > 0:
                fail("%s: %s_min %r is not positive" % (where, key, row[key + "_min"]))
        print("%s, R = %d: %d bytes per update each way (ddp), %d (sync), ratio %g; comm "
              "%.3f ms vs %.3f ms, paired ratio %.2f" % (where, ranks, row["ddp_bytes_sent_per_update"],
                                                       row["sync_bytes_sent_per_update"],
                                                       row["bytes_ratio"], row["ddp_comm_ms"],
                                                       row["sync_comm_ms"], row["comm_ratio"]))


if __name__ == "__main__":
    main()
