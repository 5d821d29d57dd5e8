#!/bin/sh
# A program that unloads libiwarp, or libiwarp's librdmacm, with dlclose()
# while the library's threads still run (Open MPI unloads libfabric, and
# with it libibverbs and libiwarp, at MPI_Finalize): a connection that
# comes afterwards wakes those threads, which must still find their code.
# The libraries are linked NODELETE.  unload_peer dies of SIGSEGV without.
set -eu

. "$top_srcdir/test/testlib.sh"
peer="$abs_top_builddir/test/unload_peer"
run="$abs_top_builddir/tools/run/iwarp-run"

for lib in "$abs_top_builddir/.libs/libiwarp.so" \
	"$abs_top_builddir/compat/ibverbs/.libs/libibverbs.so" \
	"$abs_top_builddir/compat/rdmacm/.libs/librdmacm.so"; do
	readelf -d "$lib" | grep -q 'Flags:.*NODELETE' ||
		fail "$(basename "$lib") is not linked NODELETE"
done
"$peer" iwarp "$abs_top_builddir/.libs/libiwarp.so" >"$work/iwarp" 2>&1 ||
	fail "libiwarp unloaded: exit $?: $(cat "$work/iwarp")"
"$run" "$peer" rdmacm >"$work/rdmacm" 2>&1 ||
	fail "librdmacm unloaded: exit $?: $(cat "$work/rdmacm")"
cat "$work/iwarp" "$work/rdmacm"
