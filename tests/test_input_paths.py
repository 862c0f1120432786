#!/usr/bin/env python3
"""test_input_paths.py - every input flag of clgrad-train, clgrad-bench and
clgrad-tune, given what is not a regular file (a FIFO nobody writes,
/dev/zero, a directory, a dangling symbolic link, a symbolic link loop) or
a file that holds more than its size when read, ends at once: a non-zero
exit naming the flag, within LIMIT_S seconds.
Before the rule of tools/common/input_file.h, --data FIFO, --data
/dev/zero (--task gpt) and --tuning FIFO hung.

Every flag that a tool's --help lists is classified below as an input,
an output or neither: a new flag fails this test until it is given a
place, and an input flag a case.

Every output flag is walked too (issue 37): given an existing FIFO, a
character device made under the temporary directory (never the system's
/dev/null), a directory, or a symbolic link to the FIFO or the device, it
is refused within LIMIT_S, naming the flag, and the node is still what it
was. Before, clgrad-tune --output FIFO tuned for its whole budget, then
replaced the FIFO (or the device, or the link) with a regular file.

usage: test_input_paths.py CLGRAD_TRAIN CLGRAD_BENCH CLGRAD_TUNE"""
import os
import re
import stat
import subprocess
import sys
import tempfile

from cli_run import finish, run_bounded

LIMIT_S = 2.0
# A hang is ended here; only LIMIT_S decides the verdict.
KILL_S = 20.0
# A file that grows is found only when it is read, which for --resume comes
# after the device and its kernels are set up: it must end, not within 2 s.
LIMIT_OF_KIND = {"grows": KILL_S}

# Token shards (the committed fixture, with its tokenizer.bin) for the
# flags that go with them.
SHARDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "tokens")
ON_SHARDS = ["--task", "gpt", "--preset", "tiny", "--data", SHARDS, "--steps", "1"]

# Input flags: the arguments of a run around them, and the bad kinds that
# apply (a directory is a valid --data and --val-data).
TRAIN_INPUTS = {
    "--data": [(["--steps", "1"], ["fifo", "zero", "dangling", "loop", "fifo_in_dir"]),
               (["--task", "gpt", "--preset", "tiny", "--steps", "1"],
                ["fifo", "zero", "dangling", "loop", "grows"])],
    "--tuning": [(["--steps", "1"], ["fifo", "zero", "dir", "dangling", "loop"])],
    "--resume": [(["--steps", "1"], ["fifo", "zero", "dir", "dangling", "loop", "grows"])],
    # a Hugging Face directory (config.json, model.safetensors): a directory is its kind
    "--init-from": [(["--task", "gpt", "--steps", "1"], ["fifo", "zero", "dangling", "loop"])],
    # the decode table of token shards, and their validation shards
    "--tokenizer": [(ON_SHARDS, ["fifo", "zero", "dir", "dangling", "loop", "grows"])],
    "--val-data": [(ON_SHARDS, ["fifo", "zero", "dangling", "loop", "grows"])],
}
# "grows" (a regular file with more in it than its size: procfs says 0) is
# no case of --tuning: a tuning file whose content cannot be used is ignored
# with a warning, as a damaged one is (tests/test_tune.c), and the run goes on.
TRAIN_OUTPUTS = {"--checkpoint", "--metrics", "--dump-weights", "--save-initial", "--log"}
TRAIN_OTHER = set("""--accum-dtype --allow-over-device-memory --aug-noise --aug-shift
--auto-micro-batch --bank-size --base-batch --batch --clip --context --contrastive --device
--dist --dist-timeout --embed-dim --epochs --grad-dtype --grad-path --heads --help --hidden
--json --knn --knn-init --knn-on --layers --loss-scale --lr --lr-scale --master-dtype --memory
--micro-batch --one-way --optimizer --override --plan --preset --profile --prompt --quiet
--sample --save-every --schedule --seed --state-dtype --state-min-size --state-rounding
--steps --stop-after --task --temperature --test-limit --train-limit --vram --warmup
--weight-decay --width --recompute --vocab --prompt-tokens""".split())
# --export-hf names a directory it writes two files into (made if missing):
# an existing directory is its valid kind, so it is no case of the output
# walk; the refusals of its files are tests/test_gpt_hf.c's.
TRAIN_OTHER.add("--export-hf")

BENCH_INPUTS = {"--tuning": [(["--quick", "--no-cases"], ["fifo", "zero", "dir", "dangling",
                                                           "loop"])]}
BENCH_OUTPUTS = {"--json", "--csv", "--plot"}
BENCH_OTHER = set("""--configs --device --dist --e2e --fit --fit-params --k --no-cases
--no-gemm --quick --reps --reserve --shards --sizes --stream-n --target-ms --tensors --vram
--vw --warmup --wg""".split())

# The arguments of a run around each tool's output flags.
OUTPUT_RUNS = {"clgrad-train": ["--steps", "1"], "clgrad-bench": ["--quick", "--no-cases"],
               "clgrad-tune": ["--shape", "8x8x8", "--budget", "5"]}
OUTPUT_KINDS = ["fifo", "chardev", "dir", "link_fifo", "link_chardev"]

# clgrad-tune reads no file a flag names (the trainer's flags it takes shape
# the GEMMs; it reads neither --data nor --tuning).
TUNE_INPUTS = {}
TUNE_OUTPUTS = {"--output"}
TUNE_OTHER = set("--budget --build-jobs --device --fresh --help --quiet --shape --show --top"
                 .split())


def help_flags(exe):
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=KILL_S)
    text = out.stdout + out.stderr
    return set(re.findall(r"^\s+(--[a-z0-9][a-z0-9-]*)", text, re.M)) | \
        set(re.findall(r"\s{2,}(--[a-z0-9][a-z0-9-]*) [A-Z]", text))


def make_kinds(tmp):
    paths = {"zero": "/dev/zero", "grows": "/proc/self/status"}
    paths["fifo"] = os.path.join(tmp, "fifo")
    os.mkfifo(paths["fifo"])
    paths["dir"] = os.path.join(tmp, "dir")
    os.mkdir(paths["dir"])
    paths["dangling"] = os.path.join(tmp, "dangling")
    os.symlink(os.path.join(tmp, "nothing-here"), paths["dangling"])
    paths["loop"] = os.path.join(tmp, "loop")
    os.symlink(paths["loop"], paths["loop"])
    # IDX data whose first file is a FIFO
    paths["fifo_in_dir"] = os.path.join(tmp, "idx")
    os.mkdir(paths["fifo_in_dir"])
    os.mkfifo(os.path.join(paths["fifo_in_dir"], "train-images-idx3-ubyte.gz"))
    return paths


def make_output_kinds(tmp):
    """Nodes an output must not replace, and what each is (mode, rdev)."""
    paths = {}
    for kind in OUTPUT_KINDS:
        paths[kind] = os.path.join(tmp, "out-" + kind)
    os.mkfifo(paths["fifo"])
    # the same device numbers as /dev/null, but our own node: root only
    os.mknod(paths["chardev"], 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    os.mkdir(paths["dir"])
    os.symlink(paths["fifo"], paths["link_fifo"])
    os.symlink(paths["chardev"], paths["link_chardev"])
    return paths


def node(path):
    st = os.lstat(path)
    return stat.S_IFMT(st.st_mode), st.st_rdev


def walk_outputs(name, exe, outputs, kinds, failures, env):
    count = 0
    for flag in sorted(outputs):
        for kind in OUTPUT_KINDS:
            path = kinds[kind]
            before = {p: node(p) for p in kinds.values()}
            rc, err, dt = run_bounded([exe] + OUTPUT_RUNS[name] + [flag, path], env, KILL_S)
            count += 1
            after = {p: node(p) for p in kinds.values()}
            what = f"{name} {flag} <{kind}>"
            if rc is None or rc == 0 or dt > LIMIT_S or flag not in err:
                failures.append(f"{what}: exit {rc} after {dt:.1f} s: {err.strip()[-300:]}")
            elif after != before:
                failures.append(f"{what}: refused, but a node changed: {before} -> {after}")
            else:
                print(f"ok  {what}: exit {rc} in {dt:.2f} s")
    return count


def check_classified(name, exe, inputs, outputs, other, failures):
    listed = help_flags(exe)
    known = set(inputs) | outputs | other
    for flag in sorted(listed - known):
        failures.append(f"{name}: --help lists {flag}, which this test does not classify "
                        "(an input needs its cases)")
    for flag in sorted(known - listed):
        failures.append(f"{name}: {flag} is classified here but --help does not list it")


def walk(name, exe, inputs, kinds, failures, env):
    count = 0
    for flag, runs in inputs.items():
        for args, bad in runs:
            for kind in bad:
                rc, err, dt = run_bounded([exe] + args + [flag, kinds[kind]], env, KILL_S)
                count += 1
                what = f"{name} {' '.join(args)} {flag} <{kind}>"
                limit = LIMIT_OF_KIND.get(kind, LIMIT_S)
                if rc is None or rc == 0 or dt > limit or flag not in err:
                    failures.append(f"{what}: exit {rc} after {dt:.1f} s: "
                                    f"{err.strip()[-300:]}")
                else:
                    print(f"ok  {what}: exit {rc} in {dt:.2f} s")
    return count


def main():
    train, bench, tune = sys.argv[1:4]
    failures = []
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        kinds = make_kinds(tmp)
        out_kinds = make_output_kinds(tmp)
        env["CLGRAD_CACHE_DIR"] = os.path.join(tmp, "cache")
        n = 0
        for name, exe, ins, outs, other in [
                ("clgrad-train", train, TRAIN_INPUTS, TRAIN_OUTPUTS, TRAIN_OTHER),
                ("clgrad-bench", bench, BENCH_INPUTS, BENCH_OUTPUTS, BENCH_OTHER),
                ("clgrad-tune", tune, TUNE_INPUTS, TUNE_OUTPUTS, TUNE_OTHER)]:
            check_classified(name, exe, ins, outs, other, failures)
            n += walk(name, exe, ins, kinds, failures, env)
            n += walk_outputs(name, exe, outs, out_kinds, failures, env)
    return finish(failures, n - len([f for f in failures if "<" in f]))


if __name__ == "__main__":
    sys.exit(main())
