#!/bin/sh
# iwarp-perf runs every pattern end to end and reports what it moved: one
# JSON row per run (read by jq) whose counts match the request and whose
# figures are all positive, TCP figures beside them and their ratio, the
# CPU time of each side; the same with a thread per QP (--threads) and
# in slices that alternate the stacks (--slices); a server that is not
# there fails fast with a reason.
# (Speed is not judged here: that is what the tool is for.)
set -eu

perf="$abs_top_builddir/tools/iwarp-perf"
. "$top_srcdir/test/testlib.sh"
need jq jq
# the value of a top-level field of a one-row JSON file
field() {
	jq -er ".$2" "$1" || fail "$1: no $2: $(cat "$1")"
}

size=4096
iters=300
qps=2
for mode in bw lat rate; do
	for test in send write read; do
		out="$work/$mode-$test.json"
		timeout 120 "$perf" --loopback --tcp --json -m "$mode" -t "$test" \
			-s "$size" -n "$iters" -q "$qps" >"$out" ||
			fail "$mode $test: exit $?"
		[ "$(wc -l <"$out")" -eq 1 ] || fail "$mode $test: not one row"
		perf_rows_ok "$out"
		[ "$(field "$out" mode)/$(field "$out" test)" = "$mode/$test" ] ||
			fail "$mode $test: row names another pattern"
		n=$(field "$out" iterations)
		b=$(field "$out" bytes)
		[ "$n" -eq $((iters * qps)) ] || fail "$mode $test: $n iterations"
		[ "$b" -eq $((iters * qps * size)) ] || fail "$mode $test: $b octets"
		[ "$(field "$out" tcp.iterations)" -eq "$n" ] &&
			[ "$(field "$out" tcp.bytes)" -eq "$b" ] ||
			fail "$mode $test: TCP did not run the same count"
		# both ends in the process: their CPU time, for each side
		jq -e '.qps == 2 and .threads == 1 and .cpu.scope == "both" and
			.tcp.cpu.scope == "both"' "$out" \
			>/dev/null || fail "$mode $test: CPU: $(cat "$out")"
	done
done

# --threads: every pattern with a thread per QP (and per TCP socket) at
# both ends; rates add up over the threads, so the counts must too
for mode in bw lat rate; do
	for test in send write read; do
		out="$work/threads-$mode-$test.json"
		timeout 120 "$perf" --loopback --tcp --json -m "$mode" -t "$test" \
			-s "$size" -n "$iters" --threads "$qps" >"$out" ||
			fail "--threads $mode $test: exit $?"
		[ "$(wc -l <"$out")" -eq 1 ] ||
			fail "--threads $mode $test: not one row"
		perf_rows_ok "$out"
		jq -e ".mode == \"$mode\" and .test == \"$test\" and
			.qps == $qps and .threads == $qps and
			.iterations == $((iters * qps)) and
			.bytes == $((iters * qps * size)) and
			.tcp.iterations == .iterations and .tcp.bytes == .bytes and
			.cpu.scope == \"both\" and .tcp.cpu.scope == \"both\"" \
			"$out" \
			>/dev/null || fail "--threads $mode $test: $(cat "$out")"
	done
done

# the RFC 7306 tests: Fetch and Add (8 octets, each result checked by the
# client) and Write with Immediate Data, which takes receives as a Send
for mode in bw lat rate; do
	for test in atomic write_imm; do
		s=$size
		[ "$test" = atomic ] && s=8
		out="$work/$mode-$test.json"
		timeout 120 "$perf" --loopback --tcp --json -m "$mode" -t "$test" \
			-s "$s" -n "$iters" -q "$qps" >"$out" ||
			fail "$mode $test: exit $?"
		perf_rows_ok "$out"
		[ "$(field "$out" mode)/$(field "$out" test)" = "$mode/$test" ] ||
			fail "$mode $test: row names another pattern"
		[ "$(field "$out" iterations)" -eq $((iters * qps)) ] &&
			[ "$(field "$out" bytes)" -eq $((iters * qps * s)) ] ||
			fail "$mode $test: $(cat "$out")"
	done
done
set +e
"$perf" --loopback -t atomic -s 16 2>"$work/err"
rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "atomic works on 8 octets" "$work/err" ||
	fail "-t atomic -s 16: exit $rc: $(cat "$work/err")"

# --slices: the two stacks take turns, slice by slice: TCP repeats each
# of libiwarp's slices, count for count, and starts only once it is over;
# the row is their sum.  The same with a thread per QP.
for threads in "" "--threads 2"; do
	out="$work/slices.json"
	# shellcheck disable=SC2086 # "--threads 2" is two words
	timeout 120 "$perf" --loopback --tcp --json -m bw -t write -s "$size" \
		--duration 0.8 --slices 4 $threads >"$out" ||
		fail "--slices $threads: exit $?"
	perf_rows_ok "$out"
	jq -e '(.slices | length) == 4 and (.tcp.slices | length) == 4 and
		([.slices[].iterations] | add) == .iterations and
		[.slices[].iterations] == [.tcp.slices[].iterations] and
		.tcp.iterations == .iterations and
		all(.slices[]; .iterations > 0) and
		([range(4) as $k | .slices[$k].monotonic_s[1] <=
			.tcp.slices[$k].monotonic_s[0]] | all) and
		([range(3) as $k | .tcp.slices[$k].monotonic_s[1] <=
			.slices[$k + 1].monotonic_s[0]] | all) and
		.cpu.monotonic_s[0] == .slices[0].monotonic_s[0] and
		.cpu.monotonic_s[1] == .slices[3].monotonic_s[1]' "$out" \
		>/dev/null || fail "--slices $threads: $(cat "$out")"
done
# a row without --slices is one step of each, and says nothing of slices
jq -e '.slices == null and .tcp.slices == null' "$work/bw-write.json" \
	>/dev/null || fail "an unsliced row: $(cat "$work/bw-write.json")"
# each refusal a usage error, in the words that name its reason
alone="iwarp-perf: --slices alternates the two stacks: --duration and --tcp"
range="iwarp-perf: --slices takes 1 to 64"
while IFS='|' read -r bad why; do
	set +e
	# shellcheck disable=SC2086
	"$perf" --loopback $bad 2>"$work/err"
	rc=$?
	set -e
	[ "$rc" -eq 2 ] && [ "$(cat "$work/err")" = "$why" ] ||
		fail "$bad: exit $rc: $(cat "$work/err")"
done <<EOF
--slices 4|$alone
--slices 4 --tcp|$alone
--slices 4 --duration 1|$alone
--tcp --duration 0.3 --slices 4|iwarp-perf: --slices 4: a slice of 0.075 s is under 0.1 s
--tcp --duration 1 --slices 0|$range
--tcp --duration 10 --slices 65|$range
EOF

# nothing listens on port 1: a refusal, named, within a second or two
start=$(date +%s)
if timeout 20 "$perf" 127.0.0.1 -p 1 2>"$work/err"; then
	fail "a run against a closed port succeeded"
fi
grep -q "cannot reach 127.0.0.1:1" "$work/err" || fail "no reason: $(cat "$work/err")"
[ $(($(date +%s) - start)) -le 3 ] || fail "the refusal took too long"
echo "perf_smoke: every pattern ran and reported"
