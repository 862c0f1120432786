#!/bin/sh
# test_info_cli.sh - clgrad-info's command line: an unknown option or a
# missing value is named on stderr (not just the usage), with exit status 2.
# Needs no device: options are read before any OpenCL call.
# Usage: test_info_cli.sh CLGRAD_INFO
info=$1
scratch=$(mktemp -d) || exit 1
trap 'rm -rf "$scratch"' EXIT
fail=0
check() { # expected-stderr-line args...
    want=$1
    shift
    "$info" "$@" >"$scratch/out" 2>"$scratch/err"
    rc=$?
    if [ "$rc" -ne 2 ]; then
        echo "clgrad-info $*: exit status $rc, expected 2"
        fail=1
    fi
    if ! grep -qxF "$want" "$scratch/err"; then
        echo "clgrad-info $*: stderr lacks the line: $want"
        sed 's/^/  | /' "$scratch/err"
        fail=1
    fi
    if ! grep -q '^usage: clgrad-info' "$scratch/err"; then
        echo "clgrad-info $*: no usage on stderr"
        fail=1
    fi
}
check "clgrad-info: unknown option '--frob'" --frob
check "clgrad-info: unknown option 'extra'" extra
check "clgrad-info: option '--device' needs a value" --device
exit $fail
