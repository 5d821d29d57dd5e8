#!/bin/sh
# iwarp-perf's options, each shown to take effect: -a sweeps every power
# of two from 2 octets to 8 MiB, --duration runs that long, -D is the
# depth the header names and the Read depth the handshake carries (as
# tshark reads the MPA frames), --rx-depth the receives the server
# grants for Sends (a server refuses too many, and grants an older
# client's Request, which names none, the depth), --mpa-rev 1, --crc on
# and --markers on are what the handshake settled, and a server and a
# client in two processes run every mode over the native exchange, and a
# server that refuses a Request names it; --watch-only asks the server
# for write lat's memory-only wait; --progress runs each mode,
# --threads runs a thread per QP at both ends, -q takes 1024 QPs, --idle
# reports what its idle QPs cost, and the table has its CPU and ratio
# columns.  Every JSON row is read by jq, and every figure its mode
# measures must be positive.
set -eu

perf="$abs_top_builddir/tools/iwarp-perf"
. "$top_srcdir/test/testlib.sh"
need jq jq

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

# traced_run NAME HEADER ROW ARGS...: iwarp-perf --loopback ARGS, traced
# to $work/NAME.pcap, must print a header that begins with HEADER and a
# row that begins with ROW (a grep pattern)
traced_run() {
	name=$1 header=$2 want=$3
	shift 3
	IWARP_TRACE="$work/$name.pcap" timeout 60 "$perf" --loopback "$@" \
		>"$work/$name.txt" || fail "$*: exit $?"
	grep -q "^# iwarp-perf $header, " "$work/$name.txt" ||
		fail "$*: $(head -n 1 "$work/$name.txt")"
	grep -q "^ *$want " "$work/$name.txt" ||
		fail "$*: no row $want: $(tail -n 1 "$work/$name.txt")"
}

# --rx-depth: the receives the server posts for Sends, granted to the
# client in the MPA Reply (after the 4 RFC 6581 octets, perf_rep's
# credits at its octet 20), and named in the header
traced_run rx "rate send: 1 QP, depth 128, 40 receives" "64 *2000" \
	-m rate -t send -s 64 -n 2000 --rx-depth 40
credits=$(tshark_r "$work/rx.pcap" -Y "iwarp_mpa.rep" -T fields \
	-e iwarp_mpa.privatedata | cut -c49-56)
[ "$credits" = "00000028" ] || fail "--rx-depth 40: credits $credits"
# a Request (RFC 6581 words, then perf_req: a send bw run of depth 128)
# that asks for more receives than a server takes is refused, saying so;
# one with none named (an older client) is granted the depth
peer="$abs_top_builddir/test/hostile_peer"
req=000100014957504601000000000000010000000100000080
req=${req}0000000000001000000000000000000000000000
# raw_request RX-DEPTH-HEX: the server's answer in $work/reply
raw_request() {
	port=$(free_port_pair)
	timeout 60 "$perf" -B 127.0.0.1 -p "$port" 2>"$work/server.err" &
	server=$!
	wait_tcp "$port" 0A
	"$peer" "$port" request "${req}${1}00000000" >"$work/reply" ||
		fail "hostile_peer request: exit $?"
	wait "$server" || true
	server=
}
raw_request 00004e20
grep -q "^reply R1: .*20000 receives; this server takes 1 to 16383\$" \
	"$work/reply" || fail "20000 receives: $(cat "$work/reply")"
grep -qx "iwarp-perf: refused client 127.0.0.1: 20000 receives; this server takes 1 to 16383" \
	"$work/server.err" || fail "20000 receives: $(cat "$work/server.err")"
raw_request 00000000
grep -q "^reply R0: " "$work/reply" ||
	fail "no receives named: $(cat "$work/reply")"
[ "$(sed -n 's/^hex: //p' "$work/reply" | cut -c49-56)" = 00000080 ] ||
	fail "an older client's grant: $(cat "$work/reply")"

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

# --watch-only: write lat as ib_write_lat waits, named in the header and
# asked of the server in the Request's flags (octet 7 of perf_req, after
# the 4 RFC 6581 octets); a server in manual mode refuses it, saying why
traced_run watch "lat write: 1 QP, depth 1, watching memory only" "8 *500" \
	-m lat -t write -s 8 -n 500 --watch-only
flags=$(tshark_r "$work/watch.pcap" -Y "iwarp_mpa.req" -T fields \
	-e iwarp_mpa.privatedata | cut -c23-24)
# (once tshark found no Request in this trace: say what the trace held)
[ "$flags" = 04 ] || fail "--watch-only: Request flags '$flags'; the trace \
($(wc -c <"$work/watch.pcap") octets): $("$abs_top_builddir/tools/iwarp-dump" \
	"$work/watch.pcap" 2>&1 | head -n 4); tshark: $("$TSHARK" -r \
	"$work/watch.pcap" 2>/dev/null | head -n 4)"
port=$(free_port_pair)
timeout 60 "$perf" -B 127.0.0.1 -p "$port" --progress manual \
	2>"$work/server.err" &
server=$!
wait_tcp "$port" 0A
if timeout 60 "$perf" -p "$port" -m lat -t write -n 10 --watch-only \
	127.0.0.1 2>"$work/client.err"; then
	fail "a manual server took --watch-only"
fi
wait "$server" || true
server=
grep -q "refused client 127.0.0.1: --watch-only leaves each ping to a library thread; this server runs --progress manual" \
	"$work/server.err" || fail "manual server: $(cat "$work/server.err")"

# --progress: each mode runs every pattern's kind of wait (a manual client
# and server must run the library's loop themselves, or nothing moves)
for prog in manual thread 2; do
	for run in "lat send" "lat write" "bw read" "rate send"; do
		# shellcheck disable=SC2086 # word splitting wanted
		set -- $run
		out="$work/progress-$prog-$1-$2.json"
		timeout 60 "$perf" --loopback --tcp --json --progress "$prog" \
			-m "$1" -t "$2" -s 64 -n 300 >"$out" ||
			fail "--progress $prog $run: exit $?"
		perf_rows_ok "$out"
		row "$out" '.iterations == 300 and .tcp.iterations == 300'
	done
done
bad_usage() {
	want=$1
	shift
	status=0
	"$perf" "$@" >/dev/null 2>"$work/usage.err" || status=$?
	[ "$status" -eq 2 ] && grep -q -- "$want" "$work/usage.err" ||
		fail "$*: exit $status: $(cat "$work/usage.err")"
}
bad_usage "--progress takes" --loopback --progress sometimes
bad_usage "write lat's" --loopback -m bw -t write --watch-only
bad_usage "write lat's" --loopback -m lat -t send --watch-only
bad_usage "no -e" --loopback -m lat -t write -e --watch-only
bad_usage "no --progress manual" --loopback -m lat -t write \
	--progress manual --watch-only
bad_usage "the server follows it" -m lat -t write --watch-only
bad_usage "--progress takes" --loopback --progress 0

# --threads: a server and a client in two processes, a thread per QP at
# both ends (the server learns it from the Request) and per TCP socket;
# the client's row counts every thread's QP, the server ends cleanly
port=$(free_port_pair "$port" $((port + 1)))
for run in "lat write manual" "bw send thread" "rate read manual"; do
	# shellcheck disable=SC2086 # word splitting wanted
	set -- $run
	timeout 60 "$perf" -B 127.0.0.1 -p "$port" --json --progress "$3" \
		>"$work/server.out" 2>"$work/server.err" &
	server=$!
	wait_tcp "$port" 0A
	out="$work/threads-$1-$2.json"
	timeout 60 "$perf" --json --tcp -p "$port" -m "$1" -t "$2" \
		--threads 3 --progress "$3" -s 4096 -n 200 127.0.0.1 >"$out" ||
		fail "--threads client $run: exit $?"
	status=0
	wait "$server" || status=$?
	server=
	[ "$status" -eq 0 ] ||
		fail "--threads server $run: exit $status: $(cat "$work/server.err")"
	[ ! -s "$work/server.out" ] && [ ! -s "$work/server.err" ] ||
		fail "--threads server $run said: $(cat "$work/server.out" "$work/server.err")"
	perf_rows_ok "$out"
	# a client on its own counts its own CPU time only
	row "$out" ".qps == 3 and .threads == 3 and .iterations == 600 and
		.tcp.iterations == 600 and .cpu.scope == \"client\""
done
bad_usage "no other -q" --loopback --threads 2 -q 3
bad_usage "--threads takes" --loopback --threads 0
bad_usage "--threads takes" --loopback --threads 257

# -q: up to 1024 connections in one run
out="$work/q1024.json"
timeout 120 "$perf" --loopback --tcp --json -t write -q 1024 -s 64 -n 2 \
	>"$out" || fail "-q 1024: exit $?"
perf_rows_ok "$out"
row "$out" '.qps == 1024 and .iterations == 2048 and .tcp.iterations == 2048'
bad_usage "-q takes 1 to 1024" --loopback -q 1025
bad_usage "no --rx-depth" --loopback -m lat -t send --rx-depth 8
bad_usage "--rx-depth takes" --loopback -t send --rx-depth 16384

# --idle: idle QPs on the client's device, their far ends in a child; the
# busy QP's row carries what they cost, and the table's first line says it
out="$work/idle.json"
timeout 120 "$perf" --loopback --tcp --json -m lat -s 8 -n 500 --idle 300 \
	>"$out" || fail "--idle: exit $?"
perf_rows_ok "$out"
row "$out" '.iterations == 500 and .idle.qps == 300 and .idle.setup_s > 0 and
	.idle.rss_kib_per_qp > 0 and .idle.heap_kib_per_qp > 0 and
	.idle.send_wr == 1 and .idle.recv_wr == 1'
timeout 120 "$perf" --loopback -t write -s 64 -n 500 --idle 50 \
	--progress manual >"$work/idle.txt" || fail "--idle table: exit $?"
head -n 1 "$work/idle.txt" | grep -Eq '^# idle: 50 QPs .* per QP: resident set \+[0-9.]+ KiB, heap \+[0-9.]+ KiB$' ||
	fail "--idle header: $(head -n 1 "$work/idle.txt")"
bad_usage "--idle is the client's" --idle 10
bad_usage "--idle takes" --loopback --idle 0

# the table: CPU s/GB on each side, and the three ratios; p99's is a lat
# row's only
timeout 60 "$perf" --loopback --tcp -m lat -s 8 -n 300 >"$work/lat.txt" ||
	fail "lat table: exit $?"
timeout 60 "$perf" --loopback --tcp -t write -s 4096 -n 300 \
	>"$work/bw.txt" || fail "bw table: exit $?"
num='[0-9.e+-]+' # %g may print 7.6e-05
grep -q '^ *#bytes .* CPU s/GB | *TCP Gb/s .* CPU s/GB | *ratio *p99 r *CPU r$' \
	"$work/lat.txt" || fail "table header: $(grep '#bytes' "$work/lat.txt")"
# (a run this short may have no CPU tick on one side: no CPU ratio then)
grep -Eq "^ +8 +300( +$num){6} \|( +$num){6} \|( +$num){2} +($num|-)\$" \
	"$work/lat.txt" || fail "lat row: $(tail -n 1 "$work/lat.txt")"
grep -Eq "^ +4096 +300( +$num){6} \|( +$num){6} \| +$num +- +($num|-)\$" \
	"$work/bw.txt" || fail "bw row: $(tail -n 1 "$work/bw.txt")"
echo "perf_options: -a, --duration, -D, --rx-depth, MPA options, two processes,"
echo "  a refusal, --watch-only, --progress, --threads, -q 1024, --idle, the"
echo "  CPU and ratio columns"
