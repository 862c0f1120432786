# venv-pins.sh - sourced by the check scripts that run Python from PyPI
# (check-torch-interop.sh, check-hf-gpt2.sh, check-tokens.sh): their failure
# message and the one virtual environment they share, $CLGRAD_VENV (default
# .venv, gitignored), of Debian's /usr/bin/python3 made with
# --system-site-packages so that Debian's torch and numpy are seen
# (scripts/install-deps.sh), into which pip installs exactly the releases a
# script pins. The script sets check_name first.

system_python=/usr/bin/python3
venv=${CLGRAD_VENV:-.venv}

fail() {
    echo "$check_name: $*" >&2
    exit 1
}

# venv_with PIN...: the venv (made again when it is of another Python or
# cannot see Debian's torch), each PIN ("name==version") installed unless
# the venv holds that version already; py is then its python (absolute).
venv_with() {
    [ -x "$system_python" ] || fail "$system_python not found (scripts/install-deps.sh)"
    if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
        echo "$check_name: creating $venv (--system-site-packages, $system_python)"
        "$system_python" -m venv --clear --system-site-packages "$venv"
    fi
    py="$(cd "$venv/bin" && pwd)/python"
    if ! "$py" - "$@" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(any(version(p.split("==")[0]) != p.split("==")[1] for p in sys.argv[1:]))
PY
    then
        "$py" -m pip install --disable-pip-version-check -q "$@"
    fi
}

# Debian's torch and numpy, which a script's Python needs.
need_system_torch() {
    "$system_python" -c "import torch, numpy" 2>/dev/null ||
        fail "Debian's python3 cannot import torch and numpy: install python3-torch (scripts/install-deps.sh)"
}
