#!/bin/sh
# A peer that vanishes without a FIN or RST, over a real link: two network
# namespaces joined by a veth pair, and this script drops the link of the
# one that "dies" (ip link set down in its namespace).  Every QP runs with
# an ACK timeout of ACK_MS and keepalive KEEPALIVE (iw_set_qp_timeouts()),
# small so that the test is short.  Proved here:
#  - Send/Write/Read streams in flight: the sender's outstanding work
#    completes with IW_WC_RETRY_EXC_ERR and its connection ends with
#    IW_CM_EVENT_ERROR, -ETIMEDOUT, within ACK_MS + MARGIN_MS of the drop;
#    the host whose link died flushes its receives by its own timer or
#    keepalive, within IDLE_BOUND_MS; the debug log says who went silent;
#    every work request completes exactly once (dead_peer checks);
#  - a new connection to the peer once its link is back works, and stays
#    up while quiet for several keepalive periods;
#  - that connection, idle, is found dead within IDLE_BOUND_MS of its
#    peer's link dropping;
#  - a connect to a host whose link is down, and one to an address that
#    never answers (its frames go nowhere), end within the CM's reply
#    timeout: UNREACHABLE (-EHOSTUNREACH) or TIMEOUT, and TIMEOUT with
#    -ETIMEDOUT.
# The measured detection times are printed.  Without the privilege to
# make namespaces the test says SKIP (77).
set -eu

. "$top_srcdir/test/testlib.sh"
. "$top_srcdir/test/netns_lib.sh"
ns_pair iwd

ACK_MS=3000
KEEPALIVE=1,1,2 # idle, interval (s), probes
MARGIN_MS=2000	# timers, scheduling on a busy machine
# an idle connection: the first probe that finds the peer silent for
# ACK_MS (Linux: a set TCP_USER_TIMEOUT outranks the probe count), at
# most one interval late; see iwarp(7)
IDLE_BOUND_MS=$((ACK_MS + 1000 + MARGIN_MS))
STREAM_BOUND_MS=$((ACK_MS + MARGIN_MS))
REPLY_TIMEOUT_MS=10000 # the CM's default reply_timeout_ms

nowhere=$subnet.99
port=7471

# dead_peer $2... in namespace $1, named $3 (its output in $work/$3.out,
# its debug log in $work/$3.err); its PID in $pid
start() {
	_ns=$1 _name=$2
	shift 2
	ip netns exec "$_ns" env IWARP_DEBUG=1 "$dp" --ack-ms "$ACK_MS" \
		--keepalive "$KEEPALIVE" "$@" >"$work/$_name.out" \
		2>"$work/$_name.err" &
	pid=$!
	pids="$pids $pid"
}

# Requires that $1's connection to $2 ended within $4 ms of time $3 with
# event $5 and status -ETIMEDOUT; prints the time it took.
ended_within() {
	wait_line "$work/$1.out" "^[0-9]+ end $2[0-9]* " $(($3 + $4 - $(now_ms))) \
		"$1: the connection to $2 did not end within $4 ms"
	_t=$3
	set -- "$1" "$2" "$5" $line # then: MS end PEER EVENT STATUS WORDS
	[ "$7" = "$3" ] && [ "$8" = -110 ] ||
		fail "$1: the connection to $2 ended with $7 $8, not $3 -110"
	took=$(($4 - _t))
}

# B's link is back: A sees the carrier, and has forgotten that B did not
# answer its address resolution while it was away (a connect would fail
# at once with EHOSTUNREACH until the kernel tries again)
link_back() {
	_n=0
	until in_a ip link show "$if_a" | grep -q LOWER_UP; do
		_n=$((_n + 1))
		[ "$_n" -lt 100 ] || fail "the link did not come back"
		sleep 0.05
	done
	in_a ip neigh flush dev "$if_a" nud failed 2>/dev/null || true
	in_a ip neigh del "$addr_b" dev "$if_a" 2>/dev/null || true
}

start "$ns_b" server "$addr_b" "$port"
server=$pid
wait_line "$work/server.out" listening 10000 "the server does not listen"

# ---- streams in flight, the peer's link dropped -----------------------
start "$ns_a" stream --window 4 "$addr_a" 7472 "$addr_b:$port"
stream=$pid
wait_line "$work/stream.out" "verified .* 100$" 30000 "no stream"
drop=$(now_ms)
in_b ip link set "$if_b" down
ended_within stream "$addr_b:$port" "$drop" "$STREAM_BOUND_MS" ERROR
echo "streams: the sender ended after $took ms (bound $ACK_MS + $MARGIN_MS)"
t=$(line_ms "$work/stream.out" "wc .* RETRY_EXC")
[ -n "$t" ] || fail "no work completed with IW_WC_RETRY_EXC_ERR: $(cat "$work/stream.out")"
[ $((t - drop)) -le "$STREAM_BOUND_MS" ] ||
	fail "the first retry-exceeded completion came $((t - drop)) ms after the drop"
echo "streams: the first retry-exceeded completion after $((t - drop)) ms"
grep -q "no acknowledgement from $addr_b:$port for [0-9.]* s" "$work/stream.err" ||
	fail "the debug log does not say who went silent: $(grep -m 3 -i 'ack\|timed' "$work/stream.err")"
grep "no acknowledgement" "$work/stream.err" | head -n 1
# the host whose link died, on its own timer
ended_within server "$addr_a:" "$drop" "$IDLE_BOUND_MS" ERROR
echo "streams: the host cut off ended after $took ms (bound $IDLE_BOUND_MS)"
grep -Eq "wc $addr_a:[0-9]+ FLUSH recv" "$work/server.out" ||
	fail "the cut-off host's receives were not flushed: $(cat "$work/server.out")"
stop_peer "$stream" stream
grep -q "summary $addr_b:$port .*retry=[1-9].* ended" "$work/stream.out" ||
	fail "stream: $(grep summary "$work/stream.out")"

# ---- the link back: a new connection works and stays up while quiet ----
in_b ip link set "$if_b" up
link_back
start "$ns_a" idle --idle "$addr_a" 7473 "$addr_b:$port"
idle=$pid
wait_line "$work/idle.out" "verified .* 1$" 20000 "no new connection after the link came back"
sleep 6 # six keepalive periods
! grep -q " end " "$work/idle.out" ||
	fail "a quiet connection with its link up ended: $(cat "$work/idle.out")"
[ "$(grep -c " end " "$work/server.out")" -eq 1 ] ||
	fail "the server's quiet connection ended: $(cat "$work/server.out")"
echo "idle: the quiet connection stayed up for 6 s of 1 s keepalive"

# ---- the same connection idle, its peer's link dropped -----------------
drop=$(now_ms)
in_b ip link set "$if_b" down
ended_within idle "$addr_b:$port" "$drop" "$IDLE_BOUND_MS" ERROR
echo "idle: ended after $took ms (bound $IDLE_BOUND_MS)"
grep -Eq "wc $addr_b:$port FLUSH recv" "$work/idle.out" ||
	fail "the idle QP's receives were not flushed: $(cat "$work/idle.out")"
grep -q "no acknowledgement from $addr_b:$port for [0-9.]* s" "$work/idle.err" ||
	fail "the idle QP's log does not say who went silent: $(tail -n 3 "$work/idle.err")"
stop_peer "$idle" idle

# ---- a connect to a host whose link is down -------------------------------
# (still down since the idle test): its address no longer resolves, or
# its SYNs go nowhere; either way the CM ends it within its timeout, as
# UNREACHABLE (EHOSTUNREACH) or TIMEOUT (ETIMEDOUT)
start_ms=$(now_ms)
start "$ns_a" down --exit-on-end "$addr_a" 7475 "$addr_b:$port"
wait_line "$work/down.out" "^[0-9]+ end " $((REPLY_TIMEOUT_MS + MARGIN_MS)) \
	"a connect to a host whose link is down did not end in time"
set -- $line
case "$4 $5" in
"UNREACHABLE -113" | "TIMEOUT -110") ;;
*) fail "a connect to a host whose link is down ended with $4 $5" ;;
esac
echo "connect to a host whose link is down: $4 $5 after $(($1 - start_ms)) ms"
wait "$pid" || fail "down: $(grep FAIL "$work/down.out")"

# ---- a connect to an address that never answers -------------------------
# its frames leave, to a link-layer address no host has: no ARP failure,
# no refusal, nothing comes back
in_a ip neigh replace "$nowhere" lladdr 02:00:00:00:00:99 nud permanent \
	dev "$if_a"
in_b ip link set "$if_b" up
link_back
start_ms=$(now_ms)
start "$ns_a" nowhere --exit-on-end "$addr_a" 7474 "$nowhere:$port"
ended_within nowhere "$nowhere:$port" "$start_ms" \
	$((REPLY_TIMEOUT_MS + MARGIN_MS)) TIMEOUT
[ "$took" -ge $((REPLY_TIMEOUT_MS - 500)) ] ||
	fail "the connect ended after $took ms, before the CM's timeout"
echo "connect to $nowhere: TIMEOUT, -ETIMEDOUT after $took ms (the CM's timeout $REPLY_TIMEOUT_MS ms)"
wait "$pid" || fail "nowhere: $(grep FAIL "$work/nowhere.out")"

stop_peer "$server" server
