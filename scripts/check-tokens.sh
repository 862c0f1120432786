#!/bin/sh
# check-tokens.sh - scripts/prepare-tokens.py offline on the fortunes corpus:
# tests/python/test_prepare_tokens.py trains a 4096-token byte-level BPE on it,
# checks the shards and tokenizer.bin, decodes every document back to its
# exact bytes, runs it twice for the same bytes, and checks the refusals;
# then the committed fixture tests/data/tokens/ is made again and must come
# out byte for byte as committed (tests/test_gpt_shards.c reads it).
# Python is Debian's /usr/bin/python3 in a virtual environment .venv made with
# --system-site-packages (as scripts/check-torch-interop.sh makes it), into
# which pip installs tokenizers.
#   CLGRAD_VENV       the virtual environment (default .venv, gitignored)
#   CLGRAD_FORTUNES   the corpus (default /usr/share/games/fortunes:
#                     scripts/install-deps.sh installs it)
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

echo "check-tokens: passed in $(( $(date +%s) - start )) s"
