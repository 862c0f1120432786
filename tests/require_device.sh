#!/bin/sh
# require_device.sh PROGRAM [ARGS...] - runs a device test program that
# exits 77 (meson's SKIP) when it finds no OpenCL device, and turns that 77
# into a failure when CLGRAD_REQUIRE_DEVICE is set (to anything but "" or
# "0"), as tests/testutil.c does for the CMocka suites. It wraps the
# programs that do not use testutil (tests/oclgrind_kernels.c and
# test_bench --smoke, whose 77 comes from clgrad-bench), so that CI and
# `make test` cannot pass with those tests silently skipped.
"$@"
rc=$?
if [ "$rc" -eq 77 ] && [ -n "${CLGRAD_REQUIRE_DEVICE:-}" ] && [ "$CLGRAD_REQUIRE_DEVICE" != 0 ]; then
    echo "require_device: FAIL: $1 found no OpenCL device (exit 77, SKIP), and" \
        "CLGRAD_REQUIRE_DEVICE=$CLGRAD_REQUIRE_DEVICE forbids skipping device tests;" \
        "install an OpenCL driver (e.g. pocl-opencl-icd) or check OCL_ICD_VENDORS" >&2
    exit 1
fi
exit "$rc"
