#!/bin/sh
# lsan-retry.sh - `make asan`'s test wrapper: runs one test command, and if
# LeakSanitizer's own tracer crashed at exit, runs it once more.
#   usage: lsan-retry.sh COMMAND [ARGS...]
#
# At exit LeakSanitizer stops every thread with a tracer before it scans
# memory. With PoCL's worker threads alive that tracer has crashed now and
# then ("Tracer caught signal 11 ... LeakSanitizer has encountered a fatal
# error"; twice in a day of CI runs, in two different tests that had
# passed). Then no leak check ran at all: the run says nothing either way,
# and a second run gives the verdict. Anything else is passed through as it
# is: a failed test (CMocka's "[  FAILED  ]"), a leak report, an
# AddressSanitizer or UBSan error fails at once, and a second crash of the
# tracer fails too. One cause is known and switched off in the Makefile
# (intercept_tls_get_addr=0: the runtime misread a dynamic TLS block, and
# then crashed on every try); this stays for any other.
log=$(mktemp "${TMPDIR:-/tmp}/lsan-retry.XXXXXX") || exit 1
"$@" 2>"$log"
rc=$?
cat "$log" >&2
if [ "$rc" -ne 0 ] &&
    grep -q "LeakSanitizer has encountered a fatal error" "$log" &&
    ! grep -q "ERROR: LeakSanitizer: detected memory leaks" "$log" &&
    ! grep -q "ERROR: AddressSanitizer" "$log" &&
    ! grep -q "\[  FAILED  \]" "$log" &&
    ! grep -q "runtime error:" "$log"; then
    echo "lsan-retry: LeakSanitizer's tracer crashed, so no leak check ran; running the test once more" >&2
    "$@"
    rc=$?
fi
rm -f "$log"
exit "$rc"
