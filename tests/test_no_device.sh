#!/bin/sh
# test_no_device.sh - what the device tests and clgrad-info do when no OpenCL
# platform is visible (OCL_ICD_VENDORS pointing at an empty directory, which
# both the ocl-icd and the Khronos loader honour):
#   - without CLGRAD_REQUIRE_DEVICE (or with it "0") a device test exits 77,
#     meson's SKIP;
#   - with CLGRAD_REQUIRE_DEVICE=1 it fails with another code and says why,
#     for the CMocka suites (tests/testutil.c), for the programs wrapped by
#     tests/require_device.sh and for scripts/oclgrind-check.sh without
#     Oclgrind;
#   - clgrad-info fails in table and in --json mode, and --json still prints
#     one JSON object with no devices and the error.
# usage: test_no_device.sh TEST_DEVICE TEST_ACCUM CLGRAD_INFO OCLGRIND_KERNELS
#                          REQUIRE_DEVICE_SH OCLGRIND_CHECK_SH
set -u

test_device=$1 test_accum=$2 info=$3 kernels=$4 require=$5 ogcheck=$6
scratch=$(mktemp -d "${TMPDIR:-/tmp}/clgrad-no-device.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/vendors" "$scratch/bin"
# hide every installed OpenCL driver, and CLGRAD_DEVICE cannot bring one back
export OCL_ICD_VENDORS="$scratch/vendors"
unset OCL_ICD_FILENAMES CLGRAD_DEVICE
export CLGRAD_CACHE_DIR=off

failures=0
bad() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# run LABEL REQUIRE CMD... : runs CMD with CLGRAD_REQUIRE_DEVICE=REQUIRE
# ("-" for unset); leaves the exit code in $rc, stdout and stderr in files.
run() {
    label=$1 req=$2
    shift 2
    if [ "$req" = - ]; then
        (unset CLGRAD_REQUIRE_DEVICE; exec "$@") >"$scratch/out" 2>"$scratch/err"
    else
        CLGRAD_REQUIRE_DEVICE=$req "$@" >"$scratch/out" 2>"$scratch/err"
    fi
    rc=$?
    echo "$label (CLGRAD_REQUIRE_DEVICE=$req): exit $rc"
}

expect_skip() {
    run "$@"
    [ "$rc" -eq 77 ] || { bad "$1: expected exit 77 (SKIP), got $rc"; cat "$scratch/err" >&2; }
}

# A failure: non-zero, not 77, and stderr names the variable that made it one.
expect_required_failure() {
    run "$@"
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ]; then
        bad "$1: expected a failure (not 0, not 77), got $rc"
        cat "$scratch/err" >&2
    elif ! grep -q "CLGRAD_REQUIRE_DEVICE" "$scratch/err"; then
        bad "$1: exit $rc, but stderr does not say CLGRAD_REQUIRE_DEVICE caused it:"
        cat "$scratch/err" >&2
    fi
}

for t in "$test_device" "$test_accum"; do
    name=$(basename "$t")
    expect_skip "$name" - "$t"
    expect_skip "$name" 0 "$t"
    expect_required_failure "$name" 1 "$t"
done

expect_skip "oclgrind_kernels via require_device.sh" - "$require" "$kernels"
expect_required_failure "oclgrind_kernels via require_device.sh" 1 "$require" "$kernels"
# the wrapper passes other codes through
run "require_device.sh false" 1 "$require" false
[ "$rc" -eq 1 ] || bad "require_device.sh false: expected 1, got $rc"
run "require_device.sh true" 1 "$require" true
[ "$rc" -eq 0 ] || bad "require_device.sh true: expected 0, got $rc"

# oclgrind-check.sh where no oclgrind is on PATH (only what it needs first)
ln -s "$(command -v dirname)" "$scratch/bin/dirname"
expect_skip "oclgrind-check.sh without oclgrind" - env PATH="$scratch/bin" /bin/sh "$ogcheck" "$kernels" "$scratch/logs"
expect_required_failure "oclgrind-check.sh without oclgrind" 1 env PATH="$scratch/bin" /bin/sh "$ogcheck" "$kernels" "$scratch/logs"

for req in - 1; do
    run "clgrad-info" "$req" "$info"
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ]; then bad "clgrad-info: expected a failure, got $rc"; fi
    grep -q "no OpenCL platform" "$scratch/err" ||
        bad "clgrad-info: stderr does not say there is no OpenCL platform"
    run "clgrad-info --json" "$req" "$info" --json
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ]; then bad "clgrad-info --json: expected a failure, got $rc"; fi
    grep -q '"devices":\[\]' "$scratch/out" || bad "clgrad-info --json: no empty device list in: $(cat "$scratch/out")"
    grep -q '"error":"[^"]*no OpenCL platform' "$scratch/out" ||
        bad "clgrad-info --json: no error naming the missing platform in: $(cat "$scratch/out")"
done

if [ "$failures" -ne 0 ]; then
    echo "test_no_device: $failures failure(s)" >&2
    exit 1
fi
echo "test_no_device: ok"
