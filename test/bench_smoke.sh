#!/bin/sh
# make bench's script runs and writes a well-formed table.  With a few of
# its runs (one round of short runs, a few idle QPs, no peers): every run
# recorded, every table row of those runs with a median in each progress
# mode (and N = 2 also with two library threads), a best mode and a
# verdict (none for a row without a target); a
# Markdown line per row; --readme replaces only the marked block; with
# three rounds, the best mode's range beside its median.  No
# speed is judged here: a miss is as good as a pass.
set -eu

. "$top_srcdir/test/testlib.sh"
need jq jq
out="$work/bench"
readme="$work/README.md"
printf 'before\n<!-- bench:start -->\nold table\n<!-- bench:end -->\nafter\n' \
	>"$readme"
BENCH_OUT=$out BENCH_RUNS=1 BENCH_DURATION=0.3 BENCH_IDLE=40 \
	BENCH_ROWS="lat_send rate_write_64 rate_send_64 threads_2 idle" \
	timeout 600 "$top_srcdir/scripts/bench" --readme "$readme" \
	>"$work/stdout" 2>"$work/stderr" ||
	fail "bench: exit $?: $(cat "$work/stderr") $(tail -n 5 "$out/bench.log")"

r="$out/results.json"
# 5 runs in 2 modes, N = 2 in a third, none failed
jq -e '[.raw[] | select(.failed)] == [] and (.raw | length) == 11 and
	.rounds == 1 and .idle_qps == 40 and .host.cores > 0 and
	(.host.kernel | length) > 0 and .peers == []' "$r" >/dev/null ||
	fail "results: $(jq -c 'del(.raw, .rows)' "$r")"
# the string copy's rates by distance in the results and the table's
# header, where scripts/copy-distance can time them (x86-64 with cc)
if [ "$(uname -m)" = x86_64 ] && command -v cc >/dev/null 2>&1; then
	jq -e '.host.copy_distance | .near > 0 and .mid > 0 and .far > 0 and
		.rest > 0' "$r" >/dev/null ||
		fail "copy distance: $(jq -c .host.copy_distance "$r")"
	# shellcheck disable=SC2016 # the backquotes are Markdown's
	grep -q ' `rep movsb` copies 4 KiB at [0-9.]* GB/s when the destination lies 1 to 15 octets past the source within a page, at [0-9.]* at 16 to 31, [0-9.]* at 32 to 63 and [0-9.]* elsewhere\.' \
		"$work/stdout" || fail "copy distance: $(head -n 1 "$work/stdout")"
fi
# the rows of those runs: Send latency p50 and p99, the two rates and
# their quotient, N = 2, and the three idle rows
jq -e '[.rows[].run] == ["lat_send", "lat_send", "rate_write_64",
	"rate_send_64", "rate_send_64", "threads_2", "idle", "idle", "idle"]' \
	"$r" >/dev/null || fail "rows: $(jq -c '[.rows[].run]' "$r")"
jq -e 'all(.rows[];
	(.modes.manual.median > 0) and (.modes.thread.median > 0) and
	(.best.mode == "manual" or .best.mode == "thread" or
	 .best.mode == "2") and
	.best.value == .modes[.best.mode].median and
	(if .target == null then .result == null
	 else .result == "pass" or .result == "miss" end))' "$r" >/dev/null ||
	fail "a row without its figures: $(jq -c '.rows[]' "$r" | head -c 600)"
jq -e '.rows[5].modes["2"].median > 0 and .rows[0].modes["2"].median == null' \
	"$r" >/dev/null || fail "N = 2 threads: $(jq -c '.rows[5]' "$r")"
grep -q '^| N = 2: .* | [0-9.]* ([0-9.]* / [0-9.]* Gbit/s) | [0-9.]* [a-z0-9 ]* | ' \
	"$work/stdout" || fail "N = 2 row: $(grep '^| N = 2' "$work/stdout")"
# the send rate over the write rate is what the two rows measured, each
# against TCP's rate in its own run
jq -e 'def rel($id): .raw | map(select(.bench.id == $id and
		.bench.progress == "manual"))[0] | .mmsgps / .tcp.mmsgps;
	(.rows[4].modes.manual.median * 1e6 | round) ==
	(rel("rate_send_64") / rel("rate_write_64") * 1e6 | round)' \
	"$r" >/dev/null ||
	fail "send/write quotient: $(jq -c '.rows[4]' "$r")"
# one round: each mode's lowest and highest are its one value
jq -e 'all(.rows[].modes[]; .low == .median and .high == .median)' \
	"$r" >/dev/null || fail "one round's range: $(jq -c '.rows[0]' "$r")"

# three rounds of the Send latency run: the best mode's median, with the
# lowest and highest of its rounds, in the table
jq -c 'select(.bench.id == "lat_send") as $x |
	($x.bench.progress | if . == "manual" then [1.0, 1.2, 1.1]
			     else [1.4, 1.4, 1.4] end) as $ratios |
	range(3) as $i | $x | .bench.run = $i + 1 | .ratio = $ratios[$i]' \
	"$out/raw.jsonl" >"$work/rounds.jsonl"
jq -s --slurpfile spec "$out/rows.json" --argjson host '{}' \
	--argjson seconds 1 --argjson runs 3 --argjson duration 1 \
	-f "$top_srcdir/scripts/bench.jq" "$work/rounds.jsonl" \
	>"$work/rounds.json" || fail "bench.jq over three rounds"
jq -e '.rows[0].best == {mode: "manual", value: 1.1, low: 1.0, high: 1.2}' \
	"$work/rounds.json" >/dev/null ||
	fail "three rounds: $(jq -c '.rows[0]' "$work/rounds.json")"
jq -r -f "$top_srcdir/scripts/bench-md.jq" "$work/rounds.json" \
	>"$work/rounds.md"
grep -q '^| 8 B Send ping-pong latency, p50 | .* | 1.1 manual (1–1.2) | ' \
	"$work/rounds.md" || fail "three rounds' row: $(grep p50 "$work/rounds.md")"

# rows run in slices (BENCH_DURATION of half a second or more): the
# table's header says how many
jq -c '.slices = [range(8) | {monotonic_s: [0, 0], iterations: 1}]' \
	"$work/rounds.jsonl" >"$work/sliced.jsonl"
jq -s --slurpfile spec "$out/rows.json" --argjson host '{}' \
	--argjson seconds 1 --argjson runs 3 --argjson duration 2 \
	-f "$top_srcdir/scripts/bench.jq" "$work/sliced.jsonl" \
	>"$work/sliced.json" || fail "bench.jq over sliced rows"
jq -e '.slices == 8' "$work/sliced.json" >/dev/null &&
	jq -e '.slices == 1' "$work/rounds.json" >/dev/null ||
	fail "slices: $(jq -c .slices "$work/sliced.json" "$work/rounds.json")"
# shellcheck disable=SC2016 # the backquotes are Markdown's
jq -r -f "$top_srcdir/scripts/bench-md.jq" "$work/sliced.json" |
	grep -q ' in 8 slices that alternate libiwarp and TCP (`--slices 8`), ' ||
	fail "the sliced table's header: $(jq -r -f "$top_srcdir/scripts/bench-md.jq" "$work/sliced.json" | head -n 1)"
! grep -q 'slices' "$work/rounds.md" ||
	fail "an unsliced table speaks of slices: $(head -n 1 "$work/rounds.md")"
! grep -q 'rep movsb' "$work/rounds.md" ||
	fail "a table of no copy rates speaks of them: $(head -n 1 "$work/rounds.md")"

# Markdown: a line per row after the header, and the same in the README
[ "$(grep -c '^| ' "$work/stdout")" -eq 10 ] ||
	fail "table: $(cat "$work/stdout")"
grep -q '^| 8 B Send ping-pong latency, p50 | [0-9.]* (' "$work/stdout" ||
	fail "latency row: $(grep 'p50' "$work/stdout")"
cmp -s "$out/results.md" "$work/stdout" || fail "results.md is not the table"
[ "$(head -n 2 "$readme")" = "before
<!-- bench:start -->" ] && [ "$(tail -n 2 "$readme")" = "<!-- bench:end -->
after" ] && ! grep -q "old table" "$readme" &&
	[ "$(grep -c '^| ' "$readme")" -eq 10 ] ||
	fail "--readme: $(cat "$readme")"

# libfabric's rows, a few iterations each: fi_pingpong over libiwarp and
# over libfabric's tcp providers and iwarp-perf between two namespaces,
# ten rows with both figures and a verdict; without root or
# libfabric-bin, one line that says why they were skipped
BENCH_OUT="$work/fab" BENCH_RUNS=1 BENCH_FI_ITERS=100 BENCH_ROWS=fabric \
	timeout 600 "$top_srcdir/scripts/bench" >"$work/fab.md" \
	2>"$work/stderr" ||
	fail "bench, libfabric's rows: exit $?: $(cat "$work/stderr") $(tail -n 5 "$work/fab/bench.log")"
f="$work/fab/results.json"
if [ "$(id -u)" -eq 0 ] && command -v fi_pingpong >/dev/null 2>&1 &&
	command -v ip >/dev/null 2>&1; then
	# 10 rows held against a target, 4 that show what a layer adds
	jq -e '.fabric.skipped == null and (.fabric.rows | length) == 14 and
		all(.fabric.rows[]; .libiwarp > 0 and .peer > 0 and
			.ratio == .libiwarp / .peer) and
		([.fabric.rows[] | select(.result == "pass" or
					  .result == "miss")] | length) == 10 and
		([.fabric.rows[] | select(.target == "—" and .result == "")] |
			length) == 4' "$f" >/dev/null ||
		fail "libfabric's rows: $(jq -c .fabric "$f") $(grep -v '^{' "$work/fab/bench.log" | tail -n 3)"
	[ "$(grep -c '^| [0-9].* | [0-9.]* \(µs\|Gbit/s\) | [0-9.]* \(µs\|Gbit/s\) | [0-9.]* | [≤≥] 1[.0-9]* | \(pass\|miss\) |$' "$work/fab.md")" -eq 10 ] ||
		fail "libfabric's table: $(cat "$work/fab.md")"
	[ "$(grep -c '^| 8 B latency, .* | [0-9.]* µs | [0-9.]* µs | [0-9.]* | — |  |$' "$work/fab.md")" -eq 4 ] ||
		fail "libfabric's table, the rows without a target: $(cat "$work/fab.md")"
	fab="14 libfabric rows"
else
	jq -e '(.fabric.skipped | length) > 0 and .fabric.rows == []' "$f" \
		>/dev/null || fail "libfabric's rows not run: $(jq -c .fabric "$f")"
	grep -q "^libfabric's rows: skipped, " "$work/fab.md" ||
		fail "libfabric's rows not run: $(cat "$work/fab.md")"
	fab="libfabric's rows skipped: $(jq -r .fabric.skipped "$f")"
fi
echo "bench_smoke: 5 runs in 2 modes (N = 2 in 3), 9 rows, the Markdown and"
echo "  the README; $fab"
