#!/bin/sh
# check-tokens.sh - scripts/prepare-tokens.py offline on the fortunes corpus:
# tests/python/test_prepare_tokens.py trains a 4096-token byte-level BPE on it,
# checks the shards and tokenizer.bin, decodes every document back to its
# exact bytes, runs it twice for the same bytes, and checks the refusals;
# then the committed fixture tests/data/tokens/ is made again and must come
# out byte for byte as committed (tests/test_gpt_shards.c reads it); then
# clgrad-train trains on the fortunes' 4096-token BPE shards (500 updates of
# the default model, lr 8e-3: about a minute on 2 CPU cores with PoCL) and
# must end below the same shards' bigram baseline, per token and per byte.
# Python is Debian's /usr/bin/python3 in a virtual environment .venv made with
# --system-site-packages (as scripts/check-torch-interop.sh makes it), into
# which pip installs tokenizers.
#   CLGRAD_VENV       the virtual environment (default .venv, gitignored)
#   CLGRAD_FORTUNES   the corpus (default /usr/share/games/fortunes:
#                     scripts/install-deps.sh installs it)
#   CLGRAD_BUILD      the build directory (default build)
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
corpus=${CLGRAD_FORTUNES:-/usr/share/games/fortunes}
# 0.19.1: the release transformers 4.40.x requires, so that installing that
# transformers into the same venv later does not change it.
tokenizers_version=0.19.1
start=$(date +%s)
check_name=check-tokens
. scripts/venv-pins.sh

[ -d "$corpus" ] || fail "no corpus at $corpus (install fortunes: scripts/install-deps.sh)"
venv_with "tokenizers==$tokenizers_version"

echo "== tests/python/test_prepare_tokens.py on $corpus"
"$py" tests/python/test_prepare_tokens.py --corpus "$corpus"

echo "== tests/data/tokens/ made again"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
cp tests/data/tokens/fortunes.txt "$tmp/"
(cd "$tmp" && "$py" "$root/scripts/prepare-tokens.py" --out . --name fortunes \
    --train-bpe 320 fortunes.txt)
for f in fortunes_train_000000.bin fortunes_val_000000.bin tokenizer.bin tokenizer.json; do
    cmp "$tmp/$f" "tests/data/tokens/$f" ||
        fail "tests/data/tokens/$f differs from what scripts/prepare-tokens.py makes now"
done

echo "== clgrad-train on the fortunes' 4096-token BPE shards"
train=${CLGRAD_BUILD:-build}/tools/train/clgrad-train
[ -x "$train" ] || fail "no trainer at $train (build first, or set CLGRAD_BUILD)"
"$py" scripts/prepare-tokens.py --out "$tmp/bpe" --name fortunes --train-bpe 4096 "$corpus"
"$train" --task gpt --data "$tmp/bpe" --steps 500 --lr 8e-3 --json > "$tmp/run.txt" ||
    fail "clgrad-train on the BPE shards failed"
grep -v '^{' "$tmp/run.txt"
"$py" - "$tmp/run.txt" <<'PY' || fail "the token model did not end below the bigram baseline"
import json, math, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
bpt = r["bytes_per_token"]
val, bigram = r["val_loss"], r["bigram_loss"]
print("check-tokens: vocab %d, validation %.4f nats a token (bigram %.4f), %.4f nats a byte "
      "(bigram %.4f) at %.3f bytes a token" % (r["vocab"], val, bigram, val / bpt, bigram / bpt,
                                              bpt))
ok = r["vocab"] == 4096 and val < bigram and val / bpt < bigram / bpt
ok = ok and abs(r["val_bits_per_byte"] - val / bpt / math.log(2)) < 1e-9
sys.exit(0 if ok else 1)
PY

echo "check-tokens: passed in $(( $(date +%s) - start )) s"
