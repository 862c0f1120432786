#!/bin/sh
# check-torch-interop.sh - a checkpoint written by clgrad-train opens in other
# tools: trains a short run with --checkpoint and --dump-weights, then
#   tests/python/test_torch_interop.py  loads the file with Python's
#       safetensors (safe_open, numpy) and with safetensors.torch.load_file on
#       Debian's torch, and checks names, shapes and values against the dump;
#   docs/pytorch.md's example  loads it into a torch.nn.Sequential, evaluates
#       it on the Fashion-MNIST test set and compares with the accuracy
#       clgrad-train reported (within 0.002), so that the page cannot rot.
# Python is Debian's /usr/bin/python3 (python3-torch and numpy are Debian
# packages: scripts/install-deps.sh), in a virtual environment .venv made
# with --system-site-packages, into which pip installs safetensors.
#   CLGRAD_TRAIN   the trainer (default build/tools/train/clgrad-train)
#   CLGRAD_VENV    the virtual environment (default .venv, gitignored)
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
train=${CLGRAD_TRAIN:-build/tools/train/clgrad-train}
# 0.8.0 loads torch 1.13's tensors and works with Debian 12's numpy 1.24.
safetensors_version=0.8.0
start=$(date +%s)
check_name=check-torch-interop
. scripts/venv-pins.sh

[ -x "$train" ] || fail "no trainer at $train (build first, or set CLGRAD_TRAIN)"
need_system_torch
venv_with "safetensors==$safetensors_version"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# A short run of the default 784-512-256-10 MLP, evaluated on the whole test
# set (no --test-limit: the example evaluates all 10000 images).
echo "== clgrad-train: 1 epoch on 2048 samples"
"$train" --epochs 1 --train-limit 2048 --seed 7 --quiet --json \
    --checkpoint "$tmp/run.safetensors" --dump-weights "$tmp/weights.bin" >"$tmp/run.out"
tail -n 1 "$tmp/run.out" >"$tmp/run.json"

echo "== tests/python/test_torch_interop.py"
"$py" tests/python/test_torch_interop.py --checkpoint "$tmp/run.safetensors" \
    --weights "$tmp/weights.bin" --dims 784,512,256,10

echo "== docs/pytorch.md example"
awk '/scripts\/check-torch-interop.sh extracts/ { armed = 1; next }
     armed && /^```python/ { inside = 1; next }
     inside && /^```/ { exit }
     inside { print }' docs/pytorch.md >"$tmp/load_clgrad.py"
[ -s "$tmp/load_clgrad.py" ] || fail "no marked python block in docs/pytorch.md"
"$py" "$tmp/load_clgrad.py" "$tmp/run.safetensors" "$tmp/run.json"

echo "check-torch-interop: passed in $(( $(date +%s) - start )) s"
