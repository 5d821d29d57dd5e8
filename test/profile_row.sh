#!/bin/sh
# scripts/profile-row cuts samples to each stack's step and divides them
# by its operations: a made-up profile (two steps, samples before, between
# and after them, a symbol of two words) read with --from gives exactly
# the nanoseconds per operation it holds, by thread, by kind of code and
# by function, the largest differences first, of all threads or of those
# -t names; bad options and a row without TCP's figures are refused.  No
# perf is run here.
set -eu

. "$top_srcdir/test/testlib.sh"
need jq jq
pr="$top_srcdir/scripts/profile-row"

row="$work/row.json"
printf '%s\n' '{"mode":"bw","test":"write","size":4096,"iterations":1000,' \
	'"cpu":{"monotonic_s":[100.0,102.0]},"tcp":{"iterations":500,' \
	'"cpu":{"monotonic_s":[102.0,103.0]}}}' | tr -d '\n' >"$row"
echo >>"$row"
k='ffffffff81000000 copy ([kernel.kallsyms])'
{
	echo "1 99.500000: $k"
	for t in 100.1 100.5 101.2 101.9; do echo "1 $t: $k"; done
	echo "2 100.2: 7f0000001000 engine (/usr/lib/libiwarp.so.0.1.0)"
	echo "2 101.99: 7f0000001000 sort lines (/usr/lib/libiwarp.so.0.1.0)"
	echo "2 101.5: 7f0000003000 crc32_iscsi_01 (/usr/lib/libisal.so.2.0.30)"
	echo "1 102.0: $k"
	echo "1 102.7: $k"
	echo "3 102.3: 7f0000002000 recv (/usr/lib/x86_64-linux-gnu/libc.so.6)"
	echo "1 103.0: $k"
} >"$work/samples.txt"

"$pr" --from "$work/samples.txt" "$row" >"$work/out" 2>"$work/err" ||
	fail "profile-row: $(cat "$work/err")"
cat >"$work/want" <<'EOF2'
# write bw, 4096 octets: libiwarp 1000 operations in 2.000 s, TCP 500 in 1.000 s; a sample each 250000 ns of CPU
# busy ns per operation by thread, libiwarp: 1000.0 (tid 1) 750.0 (tid 2)
# busy ns per operation by thread, TCP: 1000.0 (tid 1) 500.0 (tid 3)

| code | in | libiwarp ns/op | TCP ns/op | difference |
|---|---|---|---|---|
| all | everywhere | 1750.0 | 1500.0 | 250.0 |
| all | kernel | 1000.0 | 1000.0 | 0.0 |
| all | libiwarp | 500.0 | 0.0 | 500.0 |
| all | libc | 0.0 | 500.0 | -500.0 |
| all | ISA-L | 250.0 | 0.0 | 250.0 |
| recv | libc | 0.0 | 500.0 | -500.0 |
| crc32_iscsi_01 | ISA-L | 250.0 | 0.0 | 250.0 |
| engine | libiwarp | 250.0 | 0.0 | 250.0 |
| sort lines | libiwarp | 250.0 | 0.0 | 250.0 |
| copy | kernel | 1000.0 | 1000.0 | 0.0 |
EOF2
diff -u "$work/want" "$work/out" >&2 || fail "profile-row's table differs"

# TOP functions only, and another sampling period
"$pr" -n 1 -p 500000 --from "$work/samples.txt" "$row" >"$work/out"
grep -q '^| recv | libc | 0.0 | 1000.0 | -1000.0 |$' "$work/out" ||
	fail "-n 1 -p 500000: $(cat "$work/out")"
[ "$(grep -c -v -e '^#' -e '^$' -e '^| all |' -e '^| code |' -e '^|---' \
	"$work/out")" = 1 ] ||
	fail "-n 1 shows more than one function: $(cat "$work/out")"

# one thread's samples only: tid 2 ran in libiwarp's step alone
"$pr" -t 2,5 --from "$work/samples.txt" "$row" >"$work/out"
grep -q '^| all | everywhere | 750.0 | 0.0 | 750.0 |$' "$work/out" &&
	grep -q '^# busy ns per operation by thread, TCP:$' "$work/out" &&
	! grep -q '^| copy |' "$work/out" ||
	fail "-t 2,5: $(cat "$work/out")"

# a count of zero, a period that is no number, an option without its
# value: each gets the usage
for bad in "-n 0" "-p x" "-t"; do
	# shellcheck disable=SC2086
	if "$pr" $bad --from "$work/samples.txt" "$row" >/dev/null \
		2>"$work/err"; then
		fail "$bad was taken"
	fi
	grep -q "^usage:" "$work/err" || fail "$bad: $(cat "$work/err")"
done

# a row measured without --tcp says nothing about TCP
jq -c 'del(.tcp)' "$row" >"$work/notcp.json"
if "$pr" --from "$work/samples.txt" "$work/notcp.json" >/dev/null \
	2>"$work/err"; then
	fail "a row without TCP's figures was profiled"
fi
grep -q "no row with TCP's figures" "$work/err" ||
	fail "refusal: $(cat "$work/err")"
