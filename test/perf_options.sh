#!/bin/sh
# iwarp-perf's options, each shown to take effect: -a sweeps every power
# of two from 2 octets to 8 MiB, --duration runs that long, -D is the
# depth the header names and the Read depth the handshake carries (as
# tshark reads the MPA frames), --mpa-rev 1, --crc on and --markers on
# are what the handshake settled, and a server and a client in two
# processes run every mode over the native exchange, and a server that
# refuses a Request names it.  Every JSON row is read by jq, and every
# figure its mode measures must be positive.
set -eu

perf="$abs_top_builddir/tools/iwarp-perf"
. "$top_srcdir/test/testlib.sh"
need jq jq
server=
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

# row FILE FILTER: fails unless jq's FILTER is true of every row of FILE
row() {
	jq -e -s "all(.[]; $2)" "$1" >/dev/null ||
		fail "$1: not all rows have $2: $(head -c 400 "$1")"
}

# -a: 23 rows, 2 octets to 8 MiB in order, each the count asked
out="$work/sweep.json"
timeout 120 "$perf" --loopback --json -a -t write -n 20 >"$out" ||
	fail "-a: exit $?"
perf_rows_ok "$out"
jq -e -s '[.[].size] == [range(1; 24) as $i | pow(2; $i)]' "$out" \
	>/dev/null || fail "-a sizes: $(jq -c -s '[.[].size]' "$out")"
row "$out" '.mode == "bw" and .test == "write" and .iterations == 20 and
	.bytes == 20 * .size'
# the table has the same rows
timeout 120 "$perf" --loopback -a -t send -n 20 >"$work/sweep.txt" ||
	fail "-a table: exit $?"
sizes=$(awk '$1 ~ /^[0-9]+$/ && $2 == 20 { printf "%s ", $1 }' "$work/sweep.txt")
want=$(s=2; while [ "$s" -le 8388608 ]; do printf "%s " "$s"; s=$((s * 2)); done)
[ "$sizes" = "$want" ] || fail "-a table sizes: $sizes"

# --duration: each mode runs at least that long, and not the default count
for mode in bw lat rate; do
	out="$work/duration-$mode.json"
	timeout 60 "$perf" --loopback --json -m "$mode" -t send --duration 0.3 \
		>"$out" || fail "--duration $mode: exit $?"
	perf_rows_ok "$out"
	row "$out" '.seconds >= 0.3 and .seconds < 10 and
		.bytes == .iterations * .size'
done

# -D: the header's depth, and a Read test's depth is the client's ORD and
# the server's IRD in the RFC 6581 words of the MPA Request and Reply
IWARP_TRACE="$work/depth.pcap" timeout 60 "$perf" --loopback -t read -D 8 \
	-s 4096 -n 200 >"$work/depth.txt" || fail "-D 8: exit $?"
grep -q "^# iwarp-perf bw read: 1 QP, depth 8, " "$work/depth.txt" ||
	fail "-D 8: $(head -n 1 "$work/depth.txt")"
need_tshark
words=$(tshark_r "$work/depth.pcap" -Y "iwarp_mpa.req or iwarp_mpa.rep" \
	-T fields -e iwarp_mpa.privatedata | cut -c1-8 | tr '\n' ' ')
# Request: IRD 1, ORD 8; Reply: IRD 8, ORD 1
[ "$words" = "00010008 00080001 " ] || fail "-D 8: IRD/ORD words $words"
out="$work/depth.json"
timeout 60 "$perf" --loopback --json -t write -D 4 -q 2 -s 4096 -n 200 \
	>"$out" || fail "-D 4: exit $?"
perf_rows_ok "$out"
row "$out" '.iterations == 400 and .bytes == 400 * 4096'

# the MPA options: what the handshake settled, in the header, and rows
# that count what was asked
for case in "--mpa-rev 1:MPA rev 1, CRC off, markers -/-" \
	"--crc on:MPA rev 2, CRC on, markers -/-" \
	"--markers on:MPA rev 2, CRC off, markers tx/rx" \
	"--mpa-rev 1 --crc on --markers on:MPA rev 1, CRC on, markers tx/rx"; do
	opts=${case%%:*}
	want=${case#*:}
	# shellcheck disable=SC2086 # word splitting wanted
	timeout 60 "$perf" --loopback -t send -s 4096 -n 200 $opts \
		>"$work/mpa.txt" || fail "$opts: exit $?"
	grep -q "^# iwarp-perf bw send: .*, $want, MULPDU " "$work/mpa.txt" ||
		fail "$opts: $(head -n 1 "$work/mpa.txt")"
	# shellcheck disable=SC2086
	timeout 60 "$perf" --loopback --json --tcp -t read -s 4096 -n 200 \
		$opts >"$work/mpa.json" || fail "$opts --json: exit $?"
	perf_rows_ok "$work/mpa.json"
	row "$work/mpa.json" '.iterations == 200 and .tcp.iterations == 200'
done

# a server and a client in two processes, the native exchange: every
# mode, the client's row counts all QPs; the server prints no row
port=$(free_port_pair)
for run in "bw read 2 --tcp" "lat write 1 --tcp" "rate send 2 --crc on"; do
	# shellcheck disable=SC2086 # word splitting wanted
	set -- $run
	mode=$1 test=$2 qps=$3
	shift 3
	timeout 60 "$perf" -B 127.0.0.1 -p "$port" --json >"$work/server.out" \
		2>"$work/server.err" &
	server=$!
	wait_tcp "$port" 0A
	out="$work/two-$mode-$test.json"
	timeout 60 "$perf" --json -p "$port" -m "$mode" -t "$test" -q "$qps" \
		"$@" -s 4096 -n 200 127.0.0.1 >"$out" ||
		fail "client $run: exit $?"
	status=0
	wait "$server" || status=$?
	server=
	[ "$status" -eq 0 ] || fail "server $run: exit $status: $(cat "$work/server.err")"
	[ ! -s "$work/server.out" ] && [ ! -s "$work/server.err" ] ||
		fail "server $run said: $(cat "$work/server.out" "$work/server.err")"
	perf_rows_ok "$out"
	row "$out" ".mode == \"$mode\" and .test == \"$test\" and
		.iterations == 200 * $qps and .bytes == 200 * $qps * 4096"
done
# a server that refuses the client's MPA Request names it: here markers
# required, and a Read test's depth as the Request's ORD
port=$(free_port_pair "$port" $((port + 1)))
timeout 60 "$perf" -B 127.0.0.1 -p "$port" --json --markers off \
	2>"$work/server.err" &
server=$!
wait_tcp "$port" 0A
if timeout 60 "$perf" -p "$port" --markers on -t read -D 4 -n 10 127.0.0.1 \
	2>"$work/client.err"; then
	fail "a client requiring markers was served"
fi
status=0
wait "$server" || status=$?
server=
[ "$status" -eq 1 ] || fail "refusing server: exit $status"
grep -qx "iwarp-perf: cannot accept client 127.0.0.1 (we take MPA rev 2 at most, CRC follow, markers off, RTR any): MPA: peer requires markers, which are disabled locally; peer MPA rev 2, M1 C0 R0, enhanced (RFC 6581), 48 octets of private data, IRD 1 ORD 4, peer-to-peer no, RTR none" \
	"$work/server.err" || fail "refusing server: $(cat "$work/server.err")"
grep -q "rejected the connection (R bit): peer MPA rev 2, M0 C0 R1" \
	"$work/client.err" || fail "refused client: $(cat "$work/client.err")"
echo "perf_options: -a, --duration, -D, MPA options, two processes, a refusal"
