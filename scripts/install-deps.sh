#!/bin/sh
# install-deps.sh - installs the Debian packages clgrad needs to build, test
# and run. Idempotent and non-interactive: runs apt-get (update + install)
# only when something is missing. Needs root, or sudo.
set -eu

# Two OpenCL implementations, both on the CPU: PoCL (pocl-opencl-icd), which
# `make test` uses, and Mesa's rusticl over llvmpipe (mesa-opencl-icd, with
# libclc-15 for its OpenCL C built-ins), which `make test-rusticl` uses.
# clblast-utils: CLBlast's tuners, which clgrad-tune drives. libopenblas0-
# pthread: an optimized BLAS for the PyTorch peer of bench/peer/compare.py
# (Debian's torch links the generic libblas.so.3; installing it also makes
# OpenBLAS that library's default through the alternatives system).
# libopenmpi-dev and openmpi-bin: Open MPI, for libclgrad-mpi (data-parallel
# training over MPI) and mpirun, which runs its tests. python3-pyopencl,
# python3-cffi, python3-mesonpy, python3-pytest: the Python package
# (python/, scripts/check-python.sh) builds and tests with Debian's own.
# fortunes: 2.5 MB of English text in /usr/share/games/fortunes, the default
# corpus of clgrad-train --task gpt (its plain files; not the .dat indexes).
PACKAGES="
build-essential
pkg-config
python3
meson
ninja-build
ocl-icd-opencl-dev
opencl-c-headers
pocl-opencl-icd
mesa-opencl-icd
libclc-15
clinfo
libclblast-dev
libcmocka-dev
zlib1g-dev
libcjson-dev
dataset-fashion-mnist
gnuplot-nox
oclgrind
clang
libclang-rt-14-dev
python3-venv
python3-torch
python3-pyopencl
python3-cffi
python3-mesonpy
python3-pytest
clblast-utils
libopenblas0-pthread
libopenmpi-dev
openmpi-bin
fortunes
"

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "install-deps: missing:$missing; run as root (or install sudo)" >&2
        exit 1
    fi
fi

echo "install-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
# shellcheck disable=SC2086
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing
