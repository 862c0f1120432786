#!/bin/sh
# test-rusticl.sh [BUILD_DIR] - runs the device suites of an existing build
# (default: build) on a second OpenCL implementation, Mesa's rusticl over
# llvmpipe, as `make test-rusticl` does.
#
# Only rusticl is visible: OCL_ICD_VENDORS points at a directory holding
# just its .icd, so PoCL cannot be picked, and the script checks that every
# device clgrad-info lists is rusticl's before running anything.
# CLGRAD_REQUIRE_DEVICE=1 turns a missing device into a failure, not a skip.
# rusticl exposes llvmpipe only with RUSTICL_ENABLE=llvmpipe.
# Kernel cache entries of the two implementations share the build's cache
# directory: the cache key holds the device, driver and platform versions.
set -eu

build=${1:-build}
icd=${RUSTICL_ICD:-/etc/OpenCL/vendors/rusticl.icd}
if [ ! -f "$build/build.ninja" ]; then
    echo "test-rusticl: $build is not a Meson build directory (run make build first)" >&2
    exit 1
fi
if [ ! -f "$icd" ]; then
    echo "test-rusticl: $icd not found: install mesa-opencl-icd (scripts/install-deps.sh)" >&2
    exit 1
fi
build=$(cd "$build" && pwd)
vendors="$build/rusticl-vendors"
rm -rf "$vendors"
mkdir -p "$vendors"
cp "$icd" "$vendors/rusticl.icd"

export OCL_ICD_VENDORS="$vendors"
unset OCL_ICD_FILENAMES CLGRAD_DEVICE
export RUSTICL_ENABLE=llvmpipe
export CLGRAD_REQUIRE_DEVICE=1
# Mesa's own disk cache, kept out of $HOME
export MESA_SHADER_CACHE_DIR="$build/tests/mesa-shader-cache"

echo "test-rusticl: OCL_ICD_VENDORS=$OCL_ICD_VENDORS RUSTICL_ENABLE=$RUSTICL_ENABLE"
"$build/tools/clgrad-info"
"$build/tools/clgrad-info" --json >"$vendors/devices.json"
python3 - "$vendors/devices.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
devs = d["devices"]
if not devs:
    sys.exit("test-rusticl: no device visible")
other = [x for x in devs if x["platform_name"] != "rusticl"]
if other:
    sys.exit("test-rusticl: devices of other platforms are visible: "
             + ", ".join(f'{x["name"]} ({x["platform_name"]})' for x in other))
sel = devs[d["selected"]]
print(f'test-rusticl: the device suites run on {sel["name"]} '
      f'({sel["platform_name"]}, {sel["device_version"].strip()}, '
      f'{sel["opencl_c_version"].strip()}, driver {sel["driver_version"]})')
PY

start=$(date +%s)
status=0
# The timeouts are set for PoCL; llvmpipe runs the same tests up to 8 times
# slower. Suite 'e2e' (a tool's whole program: gpt_cli, tune, bench_quick;
# 425 s, 35 s and 121 s here) stays on PoCL: its kernels are the ones the
# device suites check here, the rest is host logic.
meson test -C "$build" --suite device --no-suite e2e --print-errorlogs \
    --logbase testlog-rusticl --timeout-multiplier 2 || status=$?
echo "test-rusticl: device suites on rusticl took $(($(date +%s) - start)) s (exit $status)"
exit $status
