#!/bin/sh
# test_mpi_lib.sh - the split between the libraries: libclgrad never needs
# MPI (no libmpi among its NEEDED entries), libclgrad-mpi exports only its
# clg_dist_ API (no internal clg__dist_ symbol), needs libclgrad, and has
# its own pkg-config file requiring clgrad.
# Usage: test_mpi_lib.sh LIBCLGRAD_SO LIBCLGRAD_MPI_SO BUILD_ROOT
set -eu
core=$1 mpi=$2 build=$3
fail() { echo "FAIL: $*" >&2; exit 1; }

readelf -d "$core" | grep NEEDED | grep -q 'libmpi' && fail "$core needs MPI"
readelf -d "$mpi" | grep NEEDED | grep -q 'libclgrad\.so' || fail "$mpi does not need libclgrad"
exported=$(nm -D --defined-only "$mpi" | awk '{print $3}')
echo "$exported" | grep -q '^clg_dist_step$' || fail "clg_dist_step is not exported from $mpi"
bad=$(echo "$exported" | grep -v '^clg_dist_' || true)
[ -z "$bad" ] || fail "$mpi exports more than clg_dist_: $bad"
pc="$build/meson-private/clgrad-mpi.pc"
[ -f "$pc" ] || fail "missing $pc"
grep -q '^Requires:.*clgrad' "$pc" || fail "$pc does not require clgrad"
echo "libclgrad without MPI; libclgrad-mpi: $(echo "$exported" | tr '\n' ' ')"
