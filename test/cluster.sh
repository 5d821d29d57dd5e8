#!/bin/sh
# A small cluster, the shape of a real deployment: four network namespaces
# on one bridge (in a fifth), each host serving and connecting to each of
# the other three: 12 connections, each running verified Send, RDMA Write
# and RDMA Read rounds both ways (dead_peer).  Then host 4's link drops:
# hosts 1 to 3 must each find their two connections to it dead within
# IDLE_BOUND_MS (ACK timeout ACK_MS, keepalive KEEPALIVE, as in
# dead_peer.sh), host 4 its six by its own timers, and the survivors keep
# talking: every connection among them verifies more rounds afterwards.
# Every work request completes exactly once.  Under a minute; SKIP (77)
# without the privilege to make namespaces.
set -eu

. "$top_srcdir/test/testlib.sh"
. "$top_srcdir/test/netns_lib.sh"
need_netns bridge

ACK_MS=3000
KEEPALIVE=1,1,2
MARGIN_MS=2000
IDLE_BOUND_MS=$((ACK_MS + 1000 + MARGIN_MS))
port=7471
net=$((($$ % 200) + 20))
sw=iwc$$s
hosts="1 2 3 4"

ns() { echo "iwc$$h$1"; }
addr() { echo "198.18.$net.$1"; }

ns_add "$sw"
ip -n "$sw" link add br0 type bridge
ip -n "$sw" link set br0 up
for h in $hosts; do
	ns_add "$(ns "$h")"
	ip link add "c$$h$h" netns "$(ns "$h")" type veth peer name "p$h" \
		netns "$sw"
	ip -n "$sw" link set "p$h" master br0 up
	ip -n "$(ns "$h")" addr add "$(addr "$h")/24" dev "c$$h$h"
	ip -n "$(ns "$h")" link set "c$$h$h" up
done

# every host listens, then connects to the other three at one moment
at=$(($(now_ms) + 2000))
for h in $hosts; do
	peers=
	for o in $hosts; do
		[ "$o" = "$h" ] || peers="$peers $(addr "$o"):$port"
	done
	# shellcheck disable=SC2086 # the peers are words
	ip netns exec "$(ns "$h")" env IWARP_DEBUG=1 "$dp" --ack-ms "$ACK_MS" \
		--keepalive "$KEEPALIVE" --gap-ms 50 --size 65536 \
		--start-at "$at" "$(addr "$h")" "$port" $peers \
		>"$work/h$h.out" 2>"$work/h$h.err" &
	eval "pid$h=$!"
	pids="$pids $!"
done

# each host: six connections (three made, three taken), each verified
for h in $hosts; do
	n=0
	until [ "$(grep -c "verified .* 10$" "$work/h$h.out")" -eq 6 ]; do
		n=$((n + 1))
		[ "$n" -lt 300 ] ||
			fail "host $h: not six connections verified: $(cat "$work/h$h.out")"
		sleep 0.1
	done
	! grep -q " end " "$work/h$h.out" ||
		fail "host $h: a connection ended: $(grep " end " "$work/h$h.out")"
done
ups=$(cat "$work"/h*.out | grep -c " up ")
[ "$ups" -eq 24 ] || fail "$ups connection ends up, not 24 (12 connections)"
echo "12 connections up, every one verified both ways"

dead=$(addr 4)
drop=$(now_ms)
ip -n "$(ns 4)" link set "c$$h4" down
for h in 1 2 3 4; do
	want=2
	[ "$h" -eq 4 ] && want=6
	wait_line "$work/h$h.out" "^[0-9]+ end .*" $((drop + IDLE_BOUND_MS - $(now_ms))) \
		"host $h: nothing ended"
	n=0
	while [ "$(grep -c " end " "$work/h$h.out")" -lt "$want" ]; do
		[ "$(now_ms)" -lt $((drop + IDLE_BOUND_MS)) ] ||
			fail "host $h: not $want connections ended within $IDLE_BOUND_MS ms: $(grep " end " "$work/h$h.out")"
		sleep 0.05
	done
	grep " end " "$work/h$h.out" >"$work/ends"
	while read -r t _ peer ev st _; do
		case $peer in "$dead":*) ;; *) [ "$h" -eq 4 ] ||
			fail "host $h: the connection to $peer ended: $ev $st" ;; esac
		[ "$ev" = ERROR ] && [ "$st" = -110 ] ||
			fail "host $h: $peer ended with $ev $st, not ERROR -110"
		echo "host $h: the connection to $peer ended after $((t - drop)) ms (bound $IDLE_BOUND_MS)"
	done <"$work/ends"
done
[ "$(grep -c " end " "$work/h4.out")" -eq 6 ] ||
	fail "host 4: $(grep " end " "$work/h4.out")"

# the survivors keep talking: more rounds on every connection among them
rounds() {
	: >"$work/r$1"
	for h in 1 2 3; do
		kill -USR1 "$(eval echo "\$pid$h")"
	done
	sleep 0.5
	for h in 1 2 3; do
		grep " summary " "$work/h$h.out" | grep -v " ended" |
			tail -n 4 | awk -v h="$h" '{ print h, $3, $NF }' >>"$work/r$1"
	done
}
rounds 1
sleep 2
rounds 2
[ "$(wc -l <"$work/r2")" -ge 12 ] || fail "survivors: $(cat "$work/r2")"
awk 'NR == FNR { a[$1 " " $2] = $3; next }
	{ k = $1 " " $2; sub("rounds=", "", a[k]); r = $3; sub("rounds=", "", r)
	  if (!(k in a) || r + 0 <= a[k] + 0) { print "stalled: " k; bad = 1 } }
	END { exit bad }' "$work/r1" "$work/r2" ||
	fail "the survivors stopped talking: $(cat "$work/r1" "$work/r2")"
echo "hosts 1-3: all six connections among them kept verifying rounds"

for h in $hosts; do
	stop_peer "$(eval echo "\$pid$h")" "h$h"
done
