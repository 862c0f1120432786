#!/bin/sh
# run-fuzz.sh - builds the libFuzzer harnesses with clang into build-fuzz
# and runs each for a bounded time on a copy of its seed corpus.
#   FUZZ_SECONDS   seconds per harness (default 60)
#   FUZZ_BUILD     build directory (default build-fuzz)
# Exits non-zero if a harness crashes; the reproducer is left in
# $FUZZ_BUILD/fuzz-artifacts/. New corpus entries stay in
# $FUZZ_BUILD/fuzz-corpus/ (the committed seeds are not modified).
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${FUZZ_SECONDS:-60}
build=${FUZZ_BUILD:-build-fuzz}
cd "$root"

if ! command -v clang >/dev/null 2>&1; then
    echo "run-fuzz.sh: clang not found" >&2
    exit 1
fi

if [ ! -f "$build/build.ninja" ]; then
    setup_log=$(mktemp)
    CC=clang meson setup "$build" -Dfuzz=true -Dtests=disabled -Dtrainer=disabled \
        -Dbench=false -Dbuildtype=debugoptimized >"$setup_log" 2>&1 ||
        { cat "$setup_log" >&2; rm -f "$setup_log"; exit 1; }
    rm -f "$setup_log"
fi
ninja -C "$build" fuzz/fuzz_checkpoint fuzz/fuzz_idx fuzz/fuzz_tuning

status=0
for name in checkpoint idx tuning; do
    corpus="$build/fuzz-corpus/$name"
    artifacts="$build/fuzz-artifacts/$name/"
    mkdir -p "$corpus" "$artifacts"
    cp fuzz/corpus/$name/* "$corpus/"
    dict=""
    [ -f "fuzz/$name.dict" ] && dict="-dict=fuzz/$name.dict"
    echo "== fuzz_$name for ${seconds}s"
    # -rss_limit_mb: the checkpoint parser may stage up to a 100 MB header.
    if ! "$build/fuzz/fuzz_$name" -max_total_time="$seconds" -max_len=65536 \
        -rss_limit_mb=4096 -timeout=20 \
        -artifact_prefix="$artifacts" -print_final_stats=1 $dict \
        "$corpus" >"$build/fuzz-$name.log" 2>&1; then
        echo "fuzz_$name FAILED; reproducer(s):" >&2
        ls -l "$artifacts" >&2
        tail -60 "$build/fuzz-$name.log" >&2
        status=1
    else
        grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$build/fuzz-$name.log" || true
        echo "fuzz_$name: no crash in ${seconds}s"
    fi
done
exit $status
