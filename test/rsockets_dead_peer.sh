#!/bin/sh
# rsockets whose peer vanishes: rdma-core's rstream under iwarp-run, its
# client in one network namespace streaming to its server in another
# over a veth pair, until the server's link drops.  libiwarp's own
# keepalive is off (IWARP_KEEPALIVE=0), so only what rstream -k asks for
# (SO_KEEPALIVE, TCP_KEEPIDLE) keeps probing, and the ACK timeout is
# short (IWARP_ACK_TIMEOUT_MS).  Both ends must exit with an error, not
# hang: the client (its Writes unacknowledged) within ACK_MS + MARGIN_MS,
# the server (a receiver: its credits may be in flight, or nothing) within
# the longer of ACK_MS and the keepalive's idle time and probes, plus
# MARGIN_MS; each saying its connection timed out (or, where a flushed
# receive is seen before the CM's news, was reset).  test_rsockets reads
# the options back from the TCP socket itself.  SKIP (77) without the
# privilege to make namespaces.
set -eu

. "$top_srcdir/test/testlib.sh"
. "$top_srcdir/test/netns_lib.sh"
run="$abs_top_builddir/tools/run/iwarp-run"
need rstream rdmacm-utils
ns_pair rsd

ACK_MS=3000
KEEPIDLE_S=1 # rstream -k
PROBES_MS=$((2000 * 3)) # libiwarp's keepalive interval and count
MARGIN_MS=4000 # timers, a busy machine, rstream's teardown
port=7472

# rstream $3... under iwarp-run in namespace $1; its exit status and
# CLOCK_MONOTONIC time go to $work/$2.rc
rstream_in() {
	_ns=$1 _name=$2
	shift 2
	(
		rc=0
		ip netns exec "$_ns" env IWARP_DEBUG=1 IWARP_KEEPALIVE=0 \
			IWARP_ACK_TIMEOUT_MS="$ACK_MS" timeout -k 5 120 \
			"$run" rstream -k "$KEEPIDLE_S" -S 65536 -C 100000000 \
			-p "$port" "$@" >"$work/$_name.out" 2>"$work/$_name.err" ||
			rc=$?
		echo "$rc $(now_ms)" >"$work/$_name.rc"
	) &
	pids="$pids $!"
}

rstream_in "$ns_b" server
wait_tcp "$port" 0A "$ns_b" "rstream's server does not listen" "$work/server.out"
rstream_in "$ns_a" client -s "$addr_b"
wait_connected "$port" "$ns_a" "rstream's client did not connect" "$work/client.err"
sleep 2 # into the stream
[ ! -e "$work/client.rc" ] || fail "the client ended early: $(cat "$work/client.out" "$work/client.err")"
drop=$(now_ms)
in_b ip link set "$if_b" down

# $1 (client or server) exited with an error within $2 ms of the drop,
# its error one of $3 (an extended regular expression)
ended() {
	wait_line "$work/$1.rc" . $((drop + $2 + 1000 - $(now_ms))) \
		"rstream's $1 still runs $2 ms after its peer's link dropped"
	set -- "$1" "$2" "$3" $line
	took=$(($5 - drop))
	[ "$4" -ne 0 ] && [ "$4" -ne 124 ] ||
		fail "rstream's $1 exited $4: $(tail -n 5 "$work/$1.err")"
	[ "$took" -le "$2" ] ||
		fail "rstream's $1 took $took ms, over its bound of $2 ms"
	grep -Eq "^r(send|recv): ($3)" "$work/$1.err" ||
		fail "rstream's $1 did not say '$3': $(tail -n 4 "$work/$1.err")"
	echo "rstream's $1: exit $4 after $took ms (bound $2 ms): $(grep -E '^r(send|recv):' "$work/$1.err")"
}
ended client $((ACK_MS + MARGIN_MS)) "Connection timed out|Connection reset by peer"
ended server $((KEEPIDLE_S * 1000 + PROBES_MS + MARGIN_MS)) "Connection timed out|Connection reset by peer"
for side in client server; do
	grep -q "no acknowledgement from" "$work/$side.err" ||
		fail "the $side's log does not say who went silent: $(grep '^iwarp:' "$work/$side.err" | tail -n 3)"
done
# (rstream's output is buffered: what it says of its options comes at exit)
for side in client server; do
	grep -q "Keepalive: ON" "$work/$side.out" ||
		fail "rstream -k did not set SO_KEEPALIVE on the $side: $(cat "$work/$side.out")"
done
