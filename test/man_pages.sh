#!/bin/sh
# Every function libiwarp exports and every tool it installs has a manual
# page under its own name that names it, and every page renders without a
# warning (groff -ww).
set -eu

lib="$abs_top_builddir/.libs/libiwarp.so"
man=$(cd "$top_srcdir/man" && pwd)
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
command -v groff >/dev/null 2>&1 ||
	{ echo "groff not found: install the Debian package groff-base" >&2; exit 99; }
[ -f "$lib" ] || fail "no $lib"

symbols=$(nm -D --defined-only "$lib" | awk '$2 == "T" && $3 ~ /^iw_/ { sub(/@.*/, "", $3); print $3 }')
[ -n "$symbols" ] || fail "no iw_ symbol exported"
n=0
for s in $symbols; do
	page="$man/man3/$s.3"
	[ -f "$page" ] || fail "$s has no page man3/$s.3"
	# a link page names the page that documents the function
	target=$(sed -n 's/^\.so \(.*\)/\1/p' "$page")
	[ -z "$target" ] || page="$man/$target"
	[ -f "$page" ] || fail "$s: man3/$s.3 links to a missing $target"
	sed -n '/^\.SH NAME/,/^\.SH/p' "$page" | grep -q "$s" ||
		fail "$s: not in the NAME section of $page"
	sed -n '/^\.SH SYNOPSIS/,/^\.SH/p' "$page" | grep -q "$s" ||
		fail "$s: not in the SYNOPSIS of $page"
	n=$((n + 1))
done

# every tool installs with a section-1 page under its own name
tools=$(sed -n 's/^bin_PROGRAMS *= *//p' "$top_srcdir/tools/Makefile.am")
[ -n "$tools" ] || fail "no tool in tools/Makefile.am"
for t in $tools; do
	[ -f "$man/man1/$t.1" ] || fail "tool $t has no page man1/$t.1"
	grep -q "man1/$t\.1" "$man/Makefile.am" ||
		fail "man1/$t.1 is not installed by man/Makefile.am"
	sed -n '/^\.SH NAME/,/^\.SH/p' "$man/man1/$t.1" | grep -q "^$t " ||
		fail "$t: not in the NAME section of man1/$t.1"
done

pages=0
for page in "$man"/man*/*.[0-9]; do
	grep -q '^\.so ' "$page" && continue
	out=$(cd "$man" && groff -ww -z -man "$page" 2>&1)
	[ -z "$out" ] || fail "$page: $out"
	pages=$((pages + 1))
done
echo "man_pages: $n exported functions and $(echo $tools | wc -w) tools documented, $pages pages render cleanly"
