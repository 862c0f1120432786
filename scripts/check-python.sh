#!/bin/sh
# check-python.sh - the Python package as a user installs it: a fresh
# virtual environment of Debian's python3 (--system-site-packages, for
# Debian's pyopencl, cffi, meson-python, pytest and torch: scripts/
# install-deps.sh), `pip install ./python` (meson-python builds the cffi
# extension with libclgrad from the repository's sources), then pytest on
# python/tests (torch.optim parity, path B, lifetimes, misuse, struct
# layout), examples/python/train_mlp.py on a Fashion-MNIST subset against
# clgrad-train's accuracy for the same configuration, then pytest again on
# Mesa's rusticl (llvmpipe) with PoCL hidden. About 70 s with warm kernel
# caches (the install's compile is most of it).
#   CLGRAD_PY_VENV  the virtual environment (default build/python-venv)
#   CLGRAD_TRAIN    the clgrad-train to compare with (default
#                   build/tools/train/clgrad-train; none there: not compared)
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
venv=${CLGRAD_PY_VENV:-build/python-venv}
case $venv in /*) ;; *) venv=$root/$venv ;; esac  # pytest runs from python/tests
start=$(date +%s)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

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
(cd python/tests && "$venv/bin/python" -m pytest -q -p no:cacheprovider .)

# The example and clgrad-train on the same configuration (4096 training
# rows, 2 epochs, 1000 test rows) and seeds. Not bitwise: another init
# (numpy's generator), data order and GEMM (CLBlast's summation order), so
# each run is a draw of the same training. Over seeds 1..16 on PoCL both
# averaged 0.761-0.762 with a standard deviation of 0.012 a run (0.017 for
# the difference of two runs); the mean of 4 seeds each differs by 0.008
# (one sd), so 0.025 is 3 sd: a wrong gradient, lr or schedule moves it more.
subset="--train-limit 4096 --test-limit 1000 --epochs 2"
trainer=${CLGRAD_TRAIN:-build/tools/train/clgrad-train}
[ -x "$trainer" ] || echo "== no $trainer (a build with -Dtrainer=enabled): not compared"
for seed in 1 2 3 4; do
    echo "== examples/python/train_mlp.py $subset --seed $seed"
    "$venv/bin/python" examples/python/train_mlp.py $subset --seed $seed >"$tmp/py.out"
    cat "$tmp/py.out"
    tail -n 1 "$tmp/py.out" >>"$tmp/py.acc"
    [ -x "$trainer" ] || continue
    "$trainer" --hidden 64 --lr 2e-3 --schedule constant --warmup 0 --tuning off --quiet --json \
        $subset --seed $seed >"$tmp/c.out"
    echo "   clgrad-train: $(head -n 1 "$tmp/c.out")"
    tail -n 1 "$tmp/c.out" >>"$tmp/c.json"
done
if [ -x "$trainer" ]; then
    "$venv/bin/python" - "$tmp/py.acc" "$tmp/c.json" <<'PY'
import json, sys
TOL = 0.025
py = [float(line.split()[-1]) for line in open(sys.argv[1])]  # "epoch E: test accuracy A"
c = [json.loads(line)["test_accuracy"] for line in open(sys.argv[2])]
diff = sum(py) / len(py) - sum(c) / len(c)
print("mean test accuracy over %d seeds: example %.4f, clgrad-train %.4f, difference %+.4f "
      "(tolerance %.3f)" % (len(py), sum(py) / len(py), sum(c) / len(c), diff, TOL))
sys.exit(abs(diff) > TOL or len(py) != len(c))
PY
fi

echo "== pytest python/tests on rusticl"
rusticl_icd=${RUSTICL_ICD:-/etc/OpenCL/vendors/rusticl.icd}
vendors=$tmp/vendors
mkdir "$vendors"
cp "$rusticl_icd" "$vendors/"
(cd python/tests &&
    OCL_ICD_VENDORS="$vendors" RUSTICL_ENABLE=llvmpipe CLGRAD_DEVICE=rusticl \
    MESA_SHADER_CACHE_DIR="$root/build/tests/mesa-shader-cache" \
    "$venv/bin/python" -m pytest -q -p no:cacheprovider .)

echo "check-python: passed in $(( $(date +%s) - start )) s"
