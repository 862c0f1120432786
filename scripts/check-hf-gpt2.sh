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
# transformers 4.40.2 is the last release that runs on torch 1.13 here; it
# takes tokenizers 0.19.x (0.19.1, which the tokenizer script pins too).
# safetensors 0.8.0 as check-torch-interop.sh pins it in the same venv.
pins="transformers==4.40.2 tokenizers==0.19.1 huggingface-hub==0.36.2 safetensors==0.8.0"
start=$(date +%s)
check_name=check-hf-gpt2
. scripts/venv-pins.sh

[ -x "$train" ] || fail "no trainer at $train (build first, or set CLGRAD_BUILD)"
[ -x "$logits" ] || fail "no $logits (build with -Dtests=enabled, or set CLGRAD_BUILD)"
need_system_torch
# shellcheck disable=SC2086
venv_with $pins

echo "== tests/gpt/hf_gpt2_check.py"
"$py" tests/gpt/hf_gpt2_check.py --train "$train" --logits "$logits" --data docs/semantics.md
# a and b again at GPT-2 small's shape, vocab 256 (the model's today):
# 1 to 2.5 minutes on 2 shared CPU cores with PoCL
echo "== tests/gpt/hf_gpt2_check.py --gpt2-small-shape"
"$py" tests/gpt/hf_gpt2_check.py --train "$train" --logits "$logits" --data docs/semantics.md \
    --gpt2-small-shape

echo "check-hf-gpt2: passed in $(( $(date +%s) - start )) s"
