#!/bin/sh
# Debian's perftest under iwarp-run when the peer vanishes: ib_write_bw
# over rdma_cm (-R) for a duration (-D) between two network namespaces
# joined by a veth pair; once the stream runs, the server's link drops.
# Both ends must exit with an error, not hang: the client (its Writes in
# flight, completed with IBV_WC_RETRY_EXC_ERR) within ACK_MS + MARGIN_MS,
# the server (its handshake receive posted, nothing in flight) within
# IDLE_BOUND_MS, each by its own timer; the margin holds perftest's own
# teardown too.
# perftest gives rdma_cm no timeout of its own, so the bounds come from
# IWARP_ACK_TIMEOUT_MS and IWARP_KEEPALIVE (iwarp(7)).  Then a client
# that connects to an address that never answers must fail with
# RDMA_CM_EVENT_UNREACHABLE after the CM's timeout.  SKIP (77) without
# the privilege to make namespaces.
set -eu

. "$top_srcdir/test/testlib.sh"
. "$top_srcdir/test/netns_lib.sh"
run="$abs_top_builddir/tools/run/iwarp-run"
need ib_write_bw perftest
ns_pair iwf

ACK_MS=3000
KEEPALIVE=1,1,2
MARGIN_MS=3000 # timers, a busy machine, perftest's teardown
IDLE_BOUND_MS=$((ACK_MS + 1000 + MARGIN_MS))
REPLY_TIMEOUT_MS=10000 # the CM's default reply_timeout_ms
DURATION_S=60 # far beyond the test: the end must come from the drop

port=7471

# perftest $2... under iwarp-run in namespace $1; its exit status and
# CLOCK_MONOTONIC time go to $work/$3.rc
perftest() {
	_ns=$1 _name=$2
	shift 2
	(
		rc=0
		ip netns exec "$_ns" env IWARP_DEBUG=1 \
			IWARP_ACK_TIMEOUT_MS="$ACK_MS" \
			IWARP_KEEPALIVE="$KEEPALIVE" timeout -k 5 120 \
			"$run" ib_write_bw -R -D "$DURATION_S" -p "$port" "$@" \
			>"$work/$_name.out" 2>"$work/$_name.err" || rc=$?
		echo "$rc $(now_ms)" >"$work/$_name.rc"
	) &
	pids="$pids $!"
}

perftest "$ns_b" server
wait_tcp "$port" 0A "$ns_b" "perftest's server does not listen" "$work/server.out"
perftest "$ns_a" client "$addr_b"
# (perftest's output is buffered: its connections tell when it runs)
wait_connected "$port" "$ns_a" "perftest's client did not connect" "$work/client.err"
sleep 2 # into the stream
[ ! -e "$work/client.rc" ] || fail "the client ended early: $(tail -n 5 "$work/client.out")"
drop=$(now_ms)
in_b ip link set "$if_b" down

# $1 (client or server) exited with an error within $2 ms of the drop
ended() {
	wait_line "$work/$1.rc" . $((drop + $2 + 1000 - $(now_ms))) \
		"perftest's $1 still runs $2 ms after its peer's link dropped"
	set -- "$1" "$2" $line
	took=$(($4 - drop))
	[ "$3" -ne 0 ] && [ "$3" -ne 124 ] ||
		fail "perftest's $1 exited $3: $(tail -n 5 "$work/$1.out")"
	[ "$took" -le "$2" ] ||
		fail "perftest's $1 took $took ms, over its bound of $2 ms"
	echo "perftest's $1: exit $3 after $took ms (bound $2 ms)"
}
ended client $((ACK_MS + MARGIN_MS))
ended server "$IDLE_BOUND_MS"
grep -q "no acknowledgement from $addr_b:$port" "$work/client.err" ||
	fail "the client's log does not say who went silent: $(tail -n 5 "$work/client.err")"
# perftest names the completion's status: IBV_WC_RETRY_EXC_ERR is 12
grep -q "Failed status 12:" "$work/client.err" ||
	fail "the client's completion was not IBV_WC_RETRY_EXC_ERR: $(grep -i -m 3 'status' "$work/client.err")"
echo "perftest's client: $(grep -m 1 "Failed status 12:" "$work/client.err")"

# ---- a connect to an address that never answers -------------------------
# its frames leave, to a link-layer address no host has: perftest's client
# gets RDMA_CM_EVENT_UNREACHABLE (its "Unexpected CM event ... 7") after
# the CM's reply timeout, and exits with an error
nowhere=$subnet.99
in_a ip neigh replace "$nowhere" lladdr 02:00:00:00:00:99 nud permanent \
	dev "$if_a"
start_ms=$(now_ms)
rc=0
in_a env IWARP_DEBUG=1 timeout -k 5 60 "$run" ib_write_bw -R -D 5 \
	-p "$port" "$nowhere" >"$work/nowhere.out" 2>&1 || rc=$?
took=$(($(now_ms) - start_ms))
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] ||
	fail "perftest's client to $nowhere exited $rc: $(tail -n 5 "$work/nowhere.out")"
[ "$took" -ge $((REPLY_TIMEOUT_MS - 500)) ] &&
	[ "$took" -le $((REPLY_TIMEOUT_MS + MARGIN_MS)) ] ||
	fail "perftest's client to $nowhere ended after $took ms, not the CM's $REPLY_TIMEOUT_MS"
grep -q "timed out waiting for the TCP connection" "$work/nowhere.out" ||
	fail "no CM timeout in the log: $(tail -n 5 "$work/nowhere.out")"
grep -Eq "CM event.* 7$" "$work/nowhere.out" ||
	fail "not RDMA_CM_EVENT_UNREACHABLE (7): $(grep -i event "$work/nowhere.out")"
echo "perftest to $nowhere: exit $rc after $took ms, RDMA_CM_EVENT_UNREACHABLE (the CM's timeout $REPLY_TIMEOUT_MS ms)"
