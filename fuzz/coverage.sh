#!/bin/sh
# Line coverage of the protocol layers (mpa/, ddp/, rdmap/) from `make
# check` and the fuzz corpora, measured with clang's source-based
# coverage (Debian packages clang and llvm for llvm-profdata and llvm-cov).
#
# Usage: fuzz/coverage.sh BUILDDIR [CORPUS_DIR...]
#   BUILDDIR    an out-of-tree build configured with CC=clang
#               CFLAGS="-g -gdwarf-4 -O2" --enable-coverage (configured
#               so here if it is new)
#   CORPUS_DIR  more inputs, in a directory named after the target whose
#               inputs they are, as `make fuzz` keeps them:
#               BUILD/fuzz/work/fuzz_NAME
# Prints the lines covered per directory and per file; the lines not
# covered go to BUILDDIR/coverage/uncovered.txt.  The test suite must
# pass, or nothing is reported.
set -eu

[ $# -ge 1 ] || { echo "usage: $0 BUILDDIR [CORPUS_DIR...]" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
build=$(cd "$1" && pwd)
shift
prof="$build/coverage"
for tool in llvm-profdata llvm-cov jq; do
	command -v "$tool" >/dev/null ||
		{ echo "$0: $tool not found (Debian packages llvm, jq)" >&2; exit 2; }
done

# DWARF 4: Debian 12's valgrind, which two tests run, cannot read clang
# 14's default DWARF 5
if [ ! -f "$build/Makefile" ]; then
	(cd "$build" && "$src/configure" CC=clang CFLAGS="-g -gdwarf-4 -O2" \
		--enable-coverage)
fi
grep -q -- '-fcoverage-mapping' "$build/Makefile" ||
	{ echo "$0: $build is not configured with --enable-coverage" >&2; exit 2; }
make -C "$build" -j"$(nproc)" >/dev/null

rm -rf "$prof"
mkdir -p "$prof"
LLVM_PROFILE_FILE="$prof/%p.profraw"
export LLVM_PROFILE_FILE
make -C "$build" -j"$(nproc)" check >/dev/null
# the committed corpora and regressions are replayed by make check; these
# are the extra ones
for dir in "$@"; do
	t=$(basename "$dir")
	"$build/fuzz/replay_${t#fuzz_}" "$dir" >/dev/null
done
llvm-profdata merge -sparse -o "$prof/all.profdata" "$prof"/*.profraw
rm -f "$prof"/*.profraw

# every instrumented program and library of the build
objects=$(find "$build" -type f \( -perm -u+x -o -name '*.so*' \) \
	! -name '*.o' ! -name '*.la' ! -name '*.sh' ! -name config.status \
	! -name libtool | while read -r f; do
	if [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then
		echo "-object $f"
	fi
done)
# shellcheck disable=SC2086
set -- $objects
first=$2
shift 2

# An out-of-tree build names its sources through itself
# (BUILD/rdmap/../../rdmap/rx.c): each name is made relative to the source
# tree and its ".." taken out before it is counted, and a header counted
# from several objects is counted once, as the one that covers most.
# shellcheck disable=SC2086
llvm-cov export -summary-only -instr-profile="$prof/all.profdata" \
	"$first" "$@" 2>/dev/null >"$prof/summary.json"
jq -r --arg src "$src/" '
	def tidy: ltrimstr($src) | split("/") |
		reduce .[] as $s ([]; if $s == ".." then .[:-1]
			elif $s == "." then . else . + [$s] end) | join("/");
	[.data[0].files[] | {
		file: (.filename | tidy),
		n: .summary.lines.count, c: .summary.lines.covered }
	 | select(.file | test("^(mpa|ddp|rdmap)/"))]
	| group_by(.file) | map(max_by(.c))
	| (group_by(.file | split("/")[0])[] |
	   "\(.[0].file | split("/")[0])/: \(map(.c) | add) of \(map(.n) | add) lines, \(100 * (map(.c) | add) / (map(.n) | add) * 10 | round / 10)%"),
	  "",
	  (.[] | select(.n > 0) |
	   "  \(.file): \(.c) of \(.n), \(100 * .c / .n * 10 | round / 10)%")
' "$prof/summary.json"

# the lines no run reached, in the protocol layers' own files
# shellcheck disable=SC2086
llvm-cov show -instr-profile="$prof/all.profdata" "$first" "$@" \
	2>/dev/null | awk -v src="$src/" '
	function tidy(path,   n, i, k, part, out) {
		sub("^" src, "", path)
		n = split(path, part, "/")
		k = 0
		for (i = 1; i <= n; i++) {
			if (part[i] == "..") { if (k) k-- }
			else if (part[i] != ".") out[++k] = part[i]
		}
		path = out[1]
		for (i = 2; i <= k; i++) path = path "/" out[i]
		return path
	}
	/^\// { file = $0; sub(":$", "", file); file = tidy(file); next }
	file ~ /^(mpa|ddp|rdmap)\/[^\/]*\.c$/ && /^ *[0-9]+\| *0\|/ {
		split($0, f, "|"); line = f[1]; gsub(/ /, "", line)
		code = substr($0, index($0, f[3]))
		print file ":" line ":" code
	}' | sort -u >"$prof/uncovered.txt"
echo
echo "lines not covered: $prof/uncovered.txt"
