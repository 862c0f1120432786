#!/usr/bin/env python3
"""test_output_paths.py - no output of clgrad-train may name a file the run
reads (issue 37): for every task and every output flag, an output that is
the --data file, a file of a --data directory (by its name, through a hard
link or a symbolic link: the same device and inode), or an IDX file of the
classifier's --data, is refused before anything runs, with exit 2, a
message naming both flags and the path, and the input left byte for byte
as it was. Before, `--task gpt --data v.txt --checkpoint v.txt` exited 0
with v.txt replaced by a checkpoint.

usage: test_output_paths.py CLGRAD_TRAIN"""
import os
import sys
import tempfile

from cli_run import finish, run_bounded

OUTPUTS = ["--checkpoint", "--metrics", "--dump-weights", "--save-initial"]
KILL_S = 60.0
TEXT = b"Nothing lost, nothing silently ignored.\n" * 64
IDX = "train-images-idx3-ubyte"


def cases(tmp):
    """(task arguments, the input file an output names, how it is named)."""
    corpus = os.path.join(tmp, "v.txt")
    d = os.path.join(tmp, "corpus")
    os.mkdir(d)
    for name in ("a.txt", "b.txt"):
        with open(os.path.join(d, name), "wb") as f:
            f.write(TEXT)
    with open(corpus, "wb") as f:
        f.write(TEXT)
    hard = os.path.join(tmp, "hard.txt")
    os.link(os.path.join(d, "b.txt"), hard)
    alias = os.path.join(tmp, "alias.txt")
    os.symlink(os.path.join(d, "a.txt"), alias)
    idx = os.path.join(tmp, "idx")
    os.mkdir(idx)
    with open(os.path.join(idx, IDX), "wb") as f:
        f.write(b"\0\0\x08\x03 an IDX file's first bytes")
    gpt = ["--task", "gpt", "--preset", "tiny", "--steps", "1"]
    return [
        (gpt + ["--data", corpus], corpus, corpus),
        (gpt + ["--data", d], os.path.join(d, "b.txt"), os.path.join(d, "b.txt")),
        (gpt + ["--data", d], os.path.join(d, "b.txt"), hard),
        (gpt + ["--data", d], os.path.join(d, "a.txt"), alias),
        (["--steps", "1", "--data", idx], os.path.join(idx, IDX), os.path.join(idx, IDX)),
        (["--task", "contrastive", "--steps", "1", "--data", idx], os.path.join(idx, IDX),
         os.path.join(idx, IDX)),
    ]


def main():
    train = sys.argv[1]
    failures, n = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, CLGRAD_CACHE_DIR=os.path.join(tmp, "cache"))
        for args, target, named in cases(tmp):
            for flag in OUTPUTS:
                if "contrastive" in args and flag == "--metrics":
                    continue  # refused there anyway (it writes no metrics)
                with open(target, "rb") as f:
                    before = f.read()
                cmd = [train] + args + [flag, named]
                rc, err, _ = run_bounded(cmd, env, KILL_S)
                with open(target, "rb") as f:
                    after = f.read()
                n += 1
                what = " ".join(os.path.relpath(a, tmp) if a.startswith(tmp) else a
                                for a in cmd[1:])
                want = f"{flag} {named} and --data "
                if rc != 2 or want not in err or "would destroy the input" not in err:
                    failures.append(f"{what}: exit {rc}: {err.strip()[-300:]}")
                elif after != before:
                    failures.append(f"{what}: refused, but the input changed")
                else:
                    print(f"ok  {what}")
    return finish(failures, n - len(failures))


if __name__ == "__main__":
    sys.exit(main())
