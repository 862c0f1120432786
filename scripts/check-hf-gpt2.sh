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
# then the same with vocab 50257 on token shards, and a and b again at GPT-2
# small itself (12/12/768/1024, vocab 50257).
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
# the same with GPT-2's vocabulary, on token shards the check writes
echo "== tests/gpt/hf_gpt2_check.py --vocab 50257"
"$py" tests/gpt/hf_gpt2_check.py --train "$train" --logits "$logits" --data docs/semantics.md \
    --vocab 50257
# a and b again at GPT-2 small itself (12 layers, 12 heads, 768 wide, 1024
# positions, vocab 50257)
echo "== tests/gpt/hf_gpt2_check.py --gpt2-small-shape --vocab 50257"
"$py" tests/gpt/hf_gpt2_check.py --train "$train" --logits "$logits" --data docs/semantics.md \
    --gpt2-small-shape --vocab 50257

# the README's fine-tuning flow, on a GPT-2 with random weights whose
# tokenizer.json is a 4096-token BPE of the fortunes: shards of the
# project's docs through it, --auto-micro-batch in 8 GiB, a prompt from
# --encode-prompt, the export loaded by transformers
echo "== the README's fine-tuning flow (random weights, a 4096-token BPE)"
flow=$(mktemp -d)
trap 'rm -rf "$flow"' EXIT INT TERM
"$py" scripts/prepare-tokens.py --out "$flow/bpe" --name fortunes --train-bpe 4096 \
    "${CLGRAD_FORTUNES:-/usr/share/games/fortunes}"
"$py" tests/gpt/hf_gpt2_check.py --save-random "$flow/gpt2" --vocab 4096
cp "$flow/bpe/tokenizer.json" "$flow/gpt2/"
"$py" scripts/prepare-tokens.py --tokenizer "$flow/gpt2/tokenizer.json" --out "$flow/shards" \
    --name docs docs/semantics.md docs/train.md docs/library.md
prompt=$("$py" scripts/prepare-tokens.py --tokenizer "$flow/gpt2/tokenizer.json" \
    --encode-prompt 'Once upon a time')
"$train" --task gpt --init-from "$flow/gpt2" --data "$flow/shards" \
    --batch 64 --memory 8G --auto-micro-batch --steps 3 --lr 1e-4 \
    --checkpoint "$flow/ft.st" --export-hf "$flow/gpt2-docs" \
    --sample 20 --prompt-tokens "$prompt" > "$flow/run.txt" ||
    fail "the fine-tuning flow's clgrad-train failed"
cat "$flow/run.txt"
grep -q "nats/token" "$flow/run.txt" && grep -q "sample (20 tokens" "$flow/run.txt" ||
    fail "the fine-tuning flow printed no loss per token or no sample"
"$py" - "$flow/gpt2-docs" <<'PY' || fail "transformers did not load the flow's export"
import sys
from transformers import GPT2LMHeadModel
m = GPT2LMHeadModel.from_pretrained(sys.argv[1])
assert m.config.vocab_size == 4096, m.config.vocab_size
print("check-hf-gpt2: the flow's export loads in transformers, vocab", m.config.vocab_size)
PY

echo "check-hf-gpt2: passed in $(( $(date +%s) - start )) s"
