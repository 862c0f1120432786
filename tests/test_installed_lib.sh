#!/bin/sh
# test_installed_lib.sh - what a consumer of the installed library gets:
#   - no test hooks: no fault-injection symbol, no internal (clg__) symbol
#     at all is exported from libclgrad.so, so no environment variable can
#     make a program that links it fail on purpose;
#   - the soname carries the ABI version of clgrad_version.h;
#   - pkg-config (installed and uninstalled .pc) adds no -D flag and no
#     private include directory, so a consumer that sets its own
#     CL_TARGET_OPENCL_VERSION compiles without a redefinition warning.
# Usage: test_installed_lib.sh LIBCLGRAD_SO BUILD_ROOT SOURCE_ROOT CC
set -eu
lib=$1 build=$2 src=$3 cc=$4
fail() { echo "FAIL: $*" >&2; exit 1; }

exported=$(nm -D --defined-only "$lib" | awk '{print $3}')
echo "$exported" | grep -q '^clg_step$' || fail "clg_step is not exported from $lib"
bad=$(echo "$exported" | grep -E 'fault|^clg__' || true)
[ -z "$bad" ] || fail "test hooks or internal symbols exported from $lib: $bad"
strings "$lib" | grep -q CLGRAD_FAULT && fail "$lib still reads CLGRAD_FAULT"

abi=$(sed -n 's/^#define CLGRAD_ABI_VERSION \([0-9]*\)$/\1/p' "$build/include/clgrad_version.h")
[ -n "$abi" ] || fail "no CLGRAD_ABI_VERSION in $build/include/clgrad_version.h"
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libclgrad.so.$abi" ] || fail "soname '$soname', expected libclgrad.so.$abi"

for pc in "$build/meson-private/clgrad.pc" "$build/meson-uninstalled/clgrad-uninstalled.pc"; do
    [ -f "$pc" ] || fail "missing $pc"
    cflags=$(sed -n 's/^Cflags: //p' "$pc")
    case "$cflags" in *-D*) fail "$pc forces a macro on consumers: $cflags" ;; esac
    case "$cflags" in */src*) fail "$pc offers the private src/ directory: $cflags" ;; esac
done

# A consumer with its own OpenCL target, warnings as errors, using only what
# the uninstalled .pc offers.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/consumer.c" <<'C'
#define CL_TARGET_OPENCL_VERSION 300
#include <clgrad.h>
int main(void) { return clg_version_number() == CLGRAD_VERSION_NUMBER ? 0 : 1; }
C
inc=$(sed -n 's/^Cflags: //p' "$build/meson-uninstalled/clgrad-uninstalled.pc" |
      sed "s#\${prefix}#$build#g; s#\${srcdir}#$src#g; s#\${includedir}#$build/include#g")
# shellcheck disable=SC2086
$cc -std=c11 -Wall -Wextra -Werror $inc -c "$tmp/consumer.c" -o "$tmp/consumer.o" ||
    fail "a consumer with CL_TARGET_OPENCL_VERSION 300 does not compile cleanly"
echo "installed library: $(echo "$exported" | wc -l) symbols, soname $soname, no hooks, clean .pc"
