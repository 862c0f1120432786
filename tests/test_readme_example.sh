#!/bin/sh
# test_readme_example.sh - the README's C example compiles as written: its
# first ```c block (the API tour's), against the headers of include/ and the
# generated clgrad_version.h, with warnings as errors. A block that defines
# no main() is taken as the statements of a function body (its #include
# lines at file scope), so that a fragment is held to the same rule.
# Usage: test_readme_example.sh SOURCE_ROOT BUILD_ROOT [CC]
set -eu
src=$1 build=$2 cc=${3:-cc}
fail() { echo "FAIL: $*" >&2; exit 1; }

[ -f "$build/include/clgrad_version.h" ] ||
    fail "no $build/include/clgrad_version.h (configure the build first)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

awk '/^```c[ \t]*$/ && !done { inside = 1; next }
     inside && /^```/ { inside = 0; done = 1 }
     inside' "$src/README.md" > "$tmp/block.c"
[ -s "$tmp/block.c" ] || fail "README.md has no \`\`\`c code block"

if grep -q '^int main *(' "$tmp/block.c"; then
    cp "$tmp/block.c" "$tmp/example.c"
else
    { grep '^#' "$tmp/block.c"; echo 'void readme_example(void) {'
      grep -v '^#' "$tmp/block.c"; echo '}'; } > "$tmp/example.c"
fi
$cc -std=c11 -Wall -Wextra -Werror -fsyntax-only -I"$src/include" -I"$build/include" \
    "$tmp/example.c" || fail "README.md's C example does not compile (errors above)"
echo "README.md's C example: $(wc -l < "$tmp/block.c") lines, compiles with -Wall -Wextra -Werror"
