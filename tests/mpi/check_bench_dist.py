#!/usr/bin/env python3
"""check_bench_dist.py MPIRUN BENCH R - runs `mpirun -np R clgrad-bench --dist
--quick --json FILE` and checks its `dist` rows against libclgrad-mpi's byte
counts: per update, DDP moves the ordered reduce-scatter + allgather of the
accumulator, (len - mine) + mine (R-1) floats per round of 2^20 elements,
which is 2 (R-1)/R x 4 bytes x N each way (exactly so when R divides every
round), plus R-1 agreement records of 256 bytes for each of the 3
agreements of a cycle end; the every-micro-step baseline k times that, so
the measured ratio is k exactly; every time is positive. Its `dist_zero1`
rows, one per DDP row: rank r's ZeRO-1 update reduce-scatters the
accumulators into its shard and all-gathers the params from the shards,
(total - shard_r) + shard_r (R-1) floats each way (total: the layout
space, shard_r: rank r's part, from the JSON), plus R-1 agreement records
for each of the 5 agreements of a ZeRO-1 cycle end; within 1% of DDP's;
the baseline k times that; each rank's optimizer states at most 1/R of the
unsharded model's plus one 1024-element segment of its 2 fp32 states
(AdamW). Exits with the
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
ZERO1_AGREEMENTS = 5  # weights, reduce-scatter, norm, update, all-gather
SEGMENT, STATES = 1024, 2  # the shards' granularity (elements); AdamW's m and v


def expected_bytes(n, ranks, rank=0):
    """What the library's counters must say rank `rank` sent per update."""
    total = 0
    for a in range(0, n, ROUND):
        length = min(ROUND, n - a)
        mine = length * (rank + 1) // ranks - length * rank // ranks
        total += ((length - mine) + mine * (ranks - 1)) * 4
    return total + AGREEMENTS * (ranks - 1) * AGREE_RECORD


def expected_zero1_bytes(total, shard, ranks):
    """What a ZeRO-1 rank holding `shard` of `total` layout elements sends
    (and receives) per update: the others' parts of its accumulator, then
    its shard's params to each other rank; the reverse coming in."""
    return (((total - shard) + shard * (ranks - 1)) * 4
            + ZERO1_AGREEMENTS * (ranks - 1) * AGREE_RECORD)


def fail(msg):
    print("check_bench_dist: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def row_place(row, label):
    """The row's N and k and its name in messages ("<label>N = .., k = .."),
    once every float of it is checked finite."""
    n, k = int(row["n"]), int(row["k"])
    where = "%sN = %d, k = %d" % (label, n, k)
    for key, v in row.items():
        if isinstance(v, float) and not math.isfinite(v):
            fail("%s: %s is %r" % (where, key, v))
    return n, k, where


def check_bytes_per_update(row, where, side, want, k):
    """`side`'s bytes sent and received per update are want exactly, the
    every-micro-step baseline's ("sync") k times that: the ratio is k."""
    for name, mult in ((side, 1), ("sync", k)):
        for way in ("sent", "received"):
            got = row["%s_bytes_%s_per_update" % (name, way)]
            if got != want * mult:
                fail("%s: %s bytes %s per update %r, want %d" % (where, name, way, got,
                                                                 want * mult))
    if row["bytes_ratio"] != k:
        fail("%s: bytes_ratio %r, want exactly %d" % (where, row["bytes_ratio"], k))


def positive(row, where, keys):
    for key in keys:
        if not row[key + "_min"] > 0:
            fail("%s: %s_min %r is not positive" % (where, key, row[key + "_min"]))


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
        n, k, where = row_place(row, "")
        if row["mode"] != "ddp" or row["ranks"] != ranks:
            fail("%s: mode %s ranks %s" % (where, row["mode"], row["ranks"]))
        doc_bytes = 2 * (ranks - 1) / ranks * 4 * n
        if abs(row["model_bytes_per_update"] - doc_bytes) > 0.5:
            fail("%s: model_bytes_per_update %r, want %r" % (where, row["model_bytes_per_update"],
                                                             doc_bytes))
        want = expected_bytes(n, ranks)
        check_bytes_per_update(row, where, "ddp", want, k)
        # the accumulator's part alone is the documented figure when R divides the rounds
        divides = all(min(ROUND, n - a) % ranks == 0 for a in range(0, n, ROUND))
        if divides and want - AGREEMENTS * (ranks - 1) * AGREE_RECORD != doc_bytes:
            fail("%s: the exchange is not 2 (R-1)/R x 4 bytes x N" % where)
        positive(row, where, ("ddp_comm_ms", "sync_comm_ms", "ddp_staging_ms", "sync_staging_ms",
                              "ddp_update_ms", "sync_update_ms", "comm_ratio"))
        print("%s, R = %d: %d bytes per update each way (ddp), %d (sync), ratio %g; comm "
              "%.3f ms vs %.3f ms, paired ratio %.2f" % (where, ranks, row["ddp_bytes_sent_per_update"],
                                                       row["sync_bytes_sent_per_update"],
                                                       row["bytes_ratio"], row["ddp_comm_ms"],
                                                       row["sync_comm_ms"], row["comm_ratio"]))

    check_zero1(doc, rows, ranks)


def check_zero1(doc, ddp_rows, ranks):
    rows = doc.get("dist_zero1")
    if not isinstance(rows, list) or len(rows) != len(ddp_rows):
        fail("dist_zero1: %r rows for %d DDP rows" % (None if rows is None else len(rows),
                                                       len(ddp_rows)))
    ddp = {(int(r["n"]), int(r["k"])): r for r in ddp_rows}
    for row in rows:
        n, k, where = row_place(row, "ZeRO-1 ")
        if row["mode"] != "zero1" or row["ranks"] != ranks or (n, k) not in ddp:
            fail("%s: mode %s ranks %s, DDP row %s" % (where, row["mode"], row["ranks"],
                                                       (n, k) in ddp))
        total, shard = int(row["layout_elements"]), int(row["shard_elements"])
        if total < n or shard % SEGMENT or abs(shard - total / ranks) > SEGMENT:
            fail("%s: rank 0's shard %d of %d elements is not 1/%d in whole segments"
                 % (where, shard, total, ranks))
        check_bytes_per_update(row, where, "zero1", expected_zero1_bytes(total, shard, ranks), k)
        ddp_bytes = ddp[(n, k)]["ddp_bytes_sent_per_update"]
        if abs(row["zero1_bytes_sent_per_update"] - ddp_bytes) > 0.01 * ddp_bytes:
            fail("%s: %r bytes per update, not within 1%% of DDP's %r"
                 % (where, row["zero1_bytes_sent_per_update"], ddp_bytes))
        whole, mine, largest = (row["state_bytes_unsharded"], row["state_bytes_rank0"],
                                row["state_bytes_max_rank"])
        bound = whole / ranks + STATES * 4 * SEGMENT
        if not (whole > 0 and 0 < mine <= largest <= bound):
            fail("%s: state bytes rank 0 %r, largest %r, unsharded %r: want 0 < rank 0 <= "
                 "largest <= unsharded/R + one segment = %r" % (where, mine, largest, whole,
                                                                bound))
        positive(row, where, ("zero1_comm_ms", "sync_comm_ms", "zero1_staging_ms",
                              "sync_staging_ms", "zero1_update_ms", "sync_update_ms",
                              "comm_ratio", "comm_vs_ddp"))
        print("%s, R = %d: %d bytes per update each way (zero1), %d (sync), ratio %g; comm "
              "%.3f ms vs %.3f ms, paired ratio %.2f, %.2f x ddp's; states %d of %d bytes "
              "(largest rank %d)" % (where, ranks, row["zero1_bytes_sent_per_update"],
                                     row["sync_bytes_sent_per_update"], row["bytes_ratio"],
                                     row["zero1_comm_ms"], row["sync_comm_ms"],
                                     row["comm_ratio"], row["comm_vs_ddp"], mine, whole,
                                     largest))


if __name__ == "__main__":
    main()
