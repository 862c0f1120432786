#!/bin/sh
# check-hf-gpt2.sh - clgrad-train's GPT against Hugging Face transformers'
# GPT-2, both ways (issue 32, part 4): tests/gpt/hf_gpt2_check.py builds a
# GPT2LMHeadModel with random weights locally (no hub) and checks
#   a. its logits through gpt_hf_load on the device (build/tests/gpt_hf_logits)
#      against transformers' within 1e-4 relative;
#   b. import then export (gpt_hf_export) gives save_pretrained's tensors bit
#      for bit, and from_pretrained loads them without a weight warning;
#   c. clgrad-train --init-from DIR ... --export-hf OUT: OUT loads with no
#      missing/unexpected-weights warning, and its greedy 32-byte continuation
#      in transformers is --sample 32 --temperature 0's;
#   d. 20 AdamW updates with accumulation from --init-from: the losses of the
#      same fine-tuning of the transformers model in PyTorch within 1e-4;
# then a and b again at GPT-2 small's shape (12/12/768/1024, vocab 256).
# Python is Debian's /usr/bin/python3 (python3-torch 1.13, numpy:
# scripts/install-deps.sh) in the virtual environment .venv, made with
# --system-site-packages (as scripts/check-torch-interop.sh's, which shares
# it), into which pip installs the pinned packages below.
#   CLGRAD_BUILD   the build directory (default build)
#   CLGRAD_VENV    the virtual environment (default .venv, gitignored)
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${CLGRAD_BUILD:-build}
train=$build/tools/train/clgrad-train
logits=$build/tests/gpt_hf_logits
venv=${CLGRAD_VENV:-.venv}
# transformers 4.40.2 is the last release that runs on torch 1.13 here; it
# takes tokenizers 0.19.x (0.19.1, which the tokenizer script pins too).
# safetensors 0.8.0 as check-torch-interop.sh pins it in the same venv.
pins="transformers==4.40.2 tokenizers==0.19.1 huggingface-hub==0.36.2 safetensors==0.8.0"
system_python=/usr/bin/python3
start=$(date +%s)

fail() {
    echo "check-hf-gpt2: $*" >&2
    exit 1
}

[ -x "$train" ] || fail "no trainer at $train (build first, or set CLGRAD_BUILD)"
[ -x "$logits" ] || fail "no $logits (build with -Dtests=enabled, or set CLGRAD_BUILD)"
[ -x "$system_python" ] || fail "$system_python not found (scripts/install-deps.sh)"
"$system_python" -c "import torch, numpy" 2>/dev/null ||
    fail "Debian's python3 cannot import torch and numpy: install python3-torch (scripts/install-deps.sh)"

# A venv of another Python (or one without the system's packages) cannot see
# Debian's torch: make it again.
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
    echo "check-hf-gpt2: creating $venv (--system-site-packages, $system_python)"
    "$system_python" -m venv --clear --system-site-packages "$venv"
fi
py="$venv/bin/python"
# installed only when a pin is not what the venv holds
# shellcheck disable=SC2086
if ! "$py" - $pins <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(any(version(p.split("==")[0]) != p.split("==")[1] for p in sys.argv[1:]))
PY
then
    # shellcheck disable=SC2086
    "$py" -m pip install --disable-pip-version-check -q $pins
fi

echo "== tests/gpt/hf_gpt2_check.py"
"$py" tests/gpt/hf_gpt2_check.py --train "$train" --logits "$logits" --data docs/semantics.md
# a and b again at GPT-2 small's shape, vocab 256 (the model's today):
# 1 to 2.5 minutes on 2 shared CPU cores with PoCL
echo "== tests/gpt/hf_gpt2_check.py --gpt2-small-shape"
"$py" tests/gpt/hf_gpt2_check.py --train "$train" --logits "$logits" --data docs/semantics.md \
    --gpt2-small-shape

echo "check-hf-gpt2: passed in $(( $(date +%s) - start )) s"
