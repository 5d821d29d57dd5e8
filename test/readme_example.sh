#!/bin/sh
# The example program README.md shows is the one in examples/, it compiles
# against the library with nothing but the public headers, it runs, and
# under valgrind it leaks nothing.
set -eu

fail() {
	echo "FAIL: $*" >&2
	exit 1
}
command -v valgrind >/dev/null 2>&1 ||
	{ echo "valgrind not found: install the Debian package valgrind" >&2; exit 99; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# the first C block after the "## Example" heading
awk '/^## Example/ { want = 1 } want && /^```c$/ { grab = 1; next }
     grab && /^```$/ { exit } grab' "$top_srcdir/README.md" >"$work/example.c"
[ -s "$work/example.c" ] || fail "README.md has no example program"
diff -u "$top_srcdir/examples/rdma_write_read.c" "$work/example.c" ||
	fail "README.md's example differs from examples/rdma_write_read.c"

${CC:-cc} -Wall -Wextra -Werror -I"$top_srcdir/include" \
	-o "$work/example" "$work/example.c" \
	-L"$abs_top_builddir/.libs" -liwarp -Wl,-rpath,"$abs_top_builddir/.libs" ||
	fail "the README example does not compile"
out=$(timeout 30 "$work/example") || fail "the README example failed"
[ "$out" = "read back: hello, iWARP" ] || fail "unexpected output: $out"
timeout 300 valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
	--error-exitcode=9 "$work/example" >/dev/null ||
	fail "valgrind found errors or leaks in the README example"
echo "README example: compiles, runs, reads back what it wrote, leaks nothing"
