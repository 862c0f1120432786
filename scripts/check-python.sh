#!/bin/sh
# check-python.sh - the Python package as a user installs it: a fresh
# virtual environment of Debian's python3 (--system-site-packages, for
# Debian's pyopencl, cffi, meson-python, pytest and torch: scripts/
# install-deps.sh), `pip install ./python` (meson-python builds the cffi
# extension with libclgrad from the repository's sources), then pytest on
# python/tests (torch.optim parity, path B, lifetimes, misuse, struct
# layout) and examples/python/train_mlp.py (3072 rows, 5 epochs), then pytest again
# on Mesa's rusticl (llvmpipe) with PoCL hidden. About 70 s with warm kernel
# caches (the install's compile is most of it).
#   CLGRAD_PY_VENV  the virtual environment (default build/python-venv)
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
venv=${CLGRAD_PY_VENV:-build/python-venv}
start=$(date +%s)

# Kernel caches of `make test` when there are any: the same kernels.
[ -d build/tests/kernel-cache ] && export CLGRAD_CACHE_DIR="${CLGRAD_CACHE_DIR:-$root/build/tests/kernel-cache}"
[ -d build/tests/pocl-cache ] && export POCL_CACHE_DIR="${POCL_CACHE_DIR:-$root/build/tests/pocl-cache}"

echo "== fresh venv $venv, pip install ./python"
rm -rf "$venv"
/usr/bin/python3 -m venv --system-site-packages "$venv"
# No build isolation: Debian's meson-python and cffi build it, and the cffi
# that generated the extension is the one that runs it.
"$venv/bin/pip" install --disable-pip-version-check -q --no-build-isolation ./python

echo "== pytest python/tests"
# From outside the source tree, so that the installed package is imported.
(cd python/tests && "$root/$venv/bin/python" -m pytest -q -p no:cacheprovider .)

echo "== examples/python/train_mlp.py"
"$venv/bin/python" examples/python/train_mlp.py

echo "== pytest python/tests on rusticl"
rusticl_icd=${RUSTICL_ICD:-/etc/OpenCL/vendors/rusticl.icd}
vendors=$(mktemp -d)
trap 'rm -rf "$vendors"' EXIT INT TERM
cp "$rusticl_icd" "$vendors/"
(cd python/tests &&
    OCL_ICD_VENDORS="$vendors" RUSTICL_ENABLE=llvmpipe CLGRAD_DEVICE=rusticl \
    MESA_SHADER_CACHE_DIR="$root/build/tests/mesa-shader-cache" \
    "$root/$venv/bin/python" -m pytest -q -p no:cacheprovider .)

echo "check-python: passed in $(( $(date +%s) - start )) s"
