#!/bin/sh
# Every function libiwarp exports and every tool it installs has a manual
# page under its own name that names it, every option of a tool is in its
# page's OPTIONS and its --help and every option documented exists, and
# every page renders without a warning (groff -ww) in an 80-column
# terminal, its tables included.
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
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

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

# every tool installs with a section-1 page under its own name: the
# programs, and the scripts (run/iwarp-run) by their file names
programs=$(sed -n 's/^bin_PROGRAMS *= *//p' "$top_srcdir/tools/Makefile.am")
scripts=$(sed -n 's/^bin_SCRIPTS *= *//p' "$top_srcdir/tools/Makefile.am")
[ -n "$programs" ] || fail "no tool in tools/Makefile.am"
[ -n "$scripts" ] || fail "no script in tools/Makefile.am"
tools="$programs"
for sc in $scripts; do
	tools="$tools ${sc##*/}"
done
for t in $tools; do
	[ -f "$man/man1/$t.1" ] || fail "tool $t has no page man1/$t.1"
	grep -q "man1/$t\.1" "$man/Makefile.am" ||
		fail "man1/$t.1 is not installed by man/Makefile.am"
	sed -n '/^\.SH NAME/,/^\.SH/p' "$man/man1/$t.1" | grep -q "^$t " ||
		fail "$t: not in the NAME section of man1/$t.1"
done

# Every option a tool takes (its getopt_long tables in tools/) has an
# entry of its own in the OPTIONS section of its page and is in its --help,
# and every option the OPTIONS section lists is one the tool takes.
# Options, one a line: "-x" and "--long".
source_options() {
	sed -n 's/.*getopt_long(argc, argv, "\([^"]*\)".*/\1/p' "$1" |
		tr -d ':' | sed 's/./-&\n/g' | grep .
	sed -n '/struct option longopts\[\] = {/,/};/p' "$1" |
		sed -n 's/^[^"]*{ *"\([a-z0-9-]*\)".*/--\1/p'
}
# A script's options are the patterns of its case over "$1": "-x|--xx)".
script_options() {
	sed -n 's/^[[:space:]]*\(-[A-Za-z]\(|--[a-z0-9-]*\)*\))$/\1/p' "$1" |
		tr -d ')' | tr '|' '\n'
}
man_options() {
	awk '/^\.SH OPTIONS/ { o = 1; next } /^\.SH/ { o = 0 }
		o && prev == ".TP" { print } { prev = $0 }' "$1" |
		sed 's/\\-/-/g' |
		awk '{
			for (i = 1; i <= NF; i++) {
				w = $i
				gsub(/^"|"$/, "", w)
				if (w ~ /^--[a-z0-9][a-z0-9-]*$/ || w ~ /^-[A-Za-z]$/)
					print w
			}
		}'
}
help_options() {
	"$abs_top_builddir/tools/$1" --help |
		tr ' [],|' '\n\n\n\n\n' | sed -n 's/^\(--\?[A-Za-z][a-z0-9-]*\).*/\1/p'
}
for t in $tools; do
	case " $scripts " in
	*"/$t "*)
		src="$top_srcdir/tools/${t#iwarp-}/$t.in"
		bin="${t#iwarp-}/$t"
		[ -f "$src" ] || fail "$t: no $src"
		script_options "$src" | sort -u >"$tmp/src"
		;;
	*)
		src="$top_srcdir/tools/${t#iwarp-}/$t.c"
		bin=$t
		[ -f "$src" ] || fail "$t: no $src"
		source_options "$src" | sort -u >"$tmp/src"
		;;
	esac
	[ "$(wc -l <"$tmp/src")" -ge 4 ] || fail "$t: no options read from $src"
	man_options "$man/man1/$t.1" | sort -u >"$tmp/man"
	help_options "$bin" | sort -u >"$tmp/help"
	missing=$(comm -23 "$tmp/src" "$tmp/man" | tr '\n' ' ')
	[ -z "$missing" ] || fail "$t takes $missing but man1/$t.1 has no OPTIONS entry for it"
	extra=$(comm -13 "$tmp/src" "$tmp/man" | tr '\n' ' ')
	[ -z "$extra" ] || fail "man1/$t.1 documents $extra, which $t does not take"
	missing=$(comm -23 "$tmp/src" "$tmp/help" | tr '\n' ' ')
	[ -z "$missing" ] || fail "$t --help does not mention $missing"
done

pages=0
for page in "$man"/man*/*.[0-9]; do
	grep -q '^\.so ' "$page" && continue
	out=$(cd "$man" && groff -t -ww -z -Tutf8 -rLL=78n -man "$page" 2>&1)
	[ -z "$out" ] || fail "$page: $out"
	pages=$((pages + 1))
done
echo "man_pages: $n exported functions and $(echo $tools | wc -w) tools documented, $pages pages render cleanly"
