#!/bin/sh
# libiwarp's libibverbs.so.1 and librdmacm.so.1 export what Debian 12's
# rdma-core 44 exports: the same soname, the same version nodes with the
# same parents, and the same symbols at the same versions (default or
# not), of the same kind (function or object, and an object's size).
# Both are bound at load time (BIND_NOW), as Debian's are.
set -eu

. "$top_srcdir/test/testlib.sh"
need readelf binutils
sys=/usr/lib/x86_64-linux-gnu
ours="$abs_top_builddir/compat"

# defined dynamic symbols: "name@[@]version type binding [size of an object]"
symbols() {
	readelf --dyn-syms -W "$1" | awk 'NR > 3 && $7 != "UND" && $8 != "" {
		size = $4 == "OBJECT" ? " " $3 : ""
		print $8, $4, $5 size }' | sort
}

# version definitions with their parents, one a line
nodes() {
	readelf -V -W "$1" | awk '
	/Version definition section/ { on = 1; next }
	/Version needs section/ { on = 0 }
	on && /Name:/ { for (i = 1; i <= NF; i++) if ($i == "Name:") n = $(i + 1); print "node", n }
	on && /Parent 1:/ { print "parent-of", n, $NF }' | sort
}

for lib in ibverbs/libibverbs.so.1 rdmacm/librdmacm.so.1; do
	name=${lib#*/}
	[ -f "$sys/$name" ] || { echo "$sys/$name not found: install the Debian package ${name%%.so*}1" >&2; exit 99; }
	mine="$ours/${lib%/*}/.libs/$name"
	[ -f "$mine" ] || fail "$mine not built"
	symbols "$sys/$name" >"$work/want"
	symbols "$mine" >"$work/have"
	[ "$(wc -l <"$work/want")" -gt 50 ] || fail "$name: no symbols read"
	if ! diff "$work/want" "$work/have" >"$work/diff"; then
		fail "$name exports differ from Debian's (< Debian, > ours): $(cat "$work/diff")"
	fi
	nodes "$sys/$name" >"$work/want"
	nodes "$mine" >"$work/have"
	diff "$work/want" "$work/have" >"$work/diff" ||
		fail "$name version nodes differ: $(cat "$work/diff")"
	readelf -d "$mine" | grep -q "(SONAME).*\[$name\]" ||
		fail "$name: soname $(readelf -d "$mine" | grep SONAME)"
	readelf -d "$mine" | grep -q '(FLAGS).*BIND_NOW' ||
		fail "$name is not linked BIND_NOW"
	echo "$name: $(symbols "$mine" | wc -l) symbols in $(grep -c '^node' "$work/have") version definitions, as Debian's"
done
