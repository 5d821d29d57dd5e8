#!/bin/sh
# The path changes under running connections, over a veth pair between two
# network namespaces, with MPA markers and CRC on both ways:
#  - the MTU goes from 9000 to 1500 and back mid-stream: every FPDU in the
#    trace (IWARP_TRACE) sent from GRACE_S after the change fits the EMSS
#    of the moment (RFC 5044 section 4.5: the MULPDU follows it), FPDUs
#    grow again once the MTU is back, and iwarp-dump finds the trace clean;
#    the debug log shows the writes following the MSS too (one GSO
#    packet's whole segments at MTU 9000, 1 MiB at 1500: tp_write_size());
#  - on a connection of its own, untraced, the link goes down for
#    OUTAGE_S, well within the ACK timeout, and comes back: no connection
#    ends, the rounds go on;
# while dead_peer verifies every Send, Write and Read and checks that
# each work request completes exactly once.  SKIP (77) without the
# privilege to make namespaces.
set -eu

. "$top_srcdir/test/testlib.sh"
. "$top_srcdir/test/netns_lib.sh"
dump="$abs_top_builddir/tools/iwarp-dump"
ns_pair iwp 9000

ACK_MS=10000
OUTAGE_S=2
# from an MTU change to the next look at TCP's MSS (one per MiB sent),
# the FPDUs already in the socket and a busy machine's scheduling
GRACE_S=0.5

port=7471
mtu() {
	in_a ip link set "$if_a" mtu "$1"
	in_b ip link set "$if_b" mtu "$1"
}
now_s() { date +%s.%N; }

# the EMSS: the MTU less IP and TCP headers, and TCP's timestamps if on
ts=$(in_a cat /proc/sys/net/ipv4/tcp_timestamps)
hdrs=40
[ "$ts" -eq 0 ] || hdrs=52

# a pace that keeps the trace to some tens of MB: about 8 MB/s each way
opts="--ack-ms $ACK_MS --markers --crc --gap-ms 10 --size 32768"
# shellcheck disable=SC2086 # the options are words
ip netns exec "$ns_b" "$dp" $opts "$addr_b" "$port" >"$work/server.out" 2>&1 &
server=$!
pids="$pids $server"
wait_line "$work/server.out" listening 10000 "the server does not listen"

# ---- the MTU changes, traced ---------------------------------------------
# shellcheck disable=SC2086
ip netns exec "$ns_a" env IWARP_TRACE="$work/trace.pcap" IWARP_DEBUG=1 \
	"$dp" $opts "$addr_a" 7472 "$addr_b:$port" >"$work/client.out" 2>&1 &
client=$!
pids="$pids $client"
wait_line "$work/client.out" "verified .* 10$" 20000 "no rounds"
sleep 0.5
down0=$(now_s)
mtu 1500
down1=$(now_s)
sleep 1.2
up0=$(now_s)
mtu 9000
up1=$(now_s)
sleep 0.8
! grep -v "^iwarp: " "$work/client.out" | grep -q " end " ||
	fail "the connection ended: $(grep " end " "$work/client.out")"
stop_peer "$client" client
# the log's write sizes: at establishment, at 1500, back at 9000
jumbo=$(write_size $((9000 - hdrs)))
small=$(write_size $((1500 - hdrs)))
writes=$(sed -n 's/^iwarp: .*\(established as initiator\|MSS changed\)/&/p' \
	"$work/client.out" | sed -n 's/.*writes of \([0-9]*\) octets.*/\1/p' |
	tr '\n' ' ')
case "$writes" in
"$jumbo "*"$small "*"$jumbo ") ;;
*) fail "writes of $writes octets, not $jumbo, $small, $jumbo:" \
	"$(grep "^iwarp: .*writes of" "$work/client.out")" ;;
esac
echo "writes followed the MSS: ${writes% } octets"

"$dump" "$work/trace.pcap" >"$work/dump" 2>&1 ||
	fail "iwarp-dump: $(grep -m 3 -i violation "$work/dump")"
set -- $(tail -n 1 "$work/dump")
[ "$1" = fpdus ] && [ "$4" -eq 0 ] || fail "trace: $(tail -n 1 "$work/dump")"
grep -q "MPA Request rev 2 M1 C1 " "$work/dump" &&
	grep -q "MPA Reply rev 2 M1 C1 " "$work/dump" ||
	fail "not markers and CRC both ways: $(grep -m 2 'MPA Re' "$work/dump")"
# the capture's first record's time: the base of iwarp-dump's times
set -- $(od -An -tu4 -j24 -N8 "$work/trace.pcap")
base="$1.$(printf '%06d' "$2")"
awk -v base="$base" -v d0="$down0" -v d1="$down1" -v u0="$up0" \
	-v u1="$up1" -v g="$GRACE_S" -v small=$((1500 - hdrs)) \
	-v big=$((9000 - hdrs)) '
	$6 == "FPDU" {
		t = base + $2; len = $7 + 0
		if (len > big) { print "over the EMSS " big ": " $0; bad = 1 }
		if (t > d1 + g && t < u0) {
			n_small++
			if (len > small) { print "over the EMSS " small ": " $0; bad = 1 }
		}
		if (t < d0 && len > small) n_before++
		if (t > u1 + g && len > small) n_after++
	}
	END {
		printf "FPDUs at MTU 1500: %d; over 1500-EMSS before: %d, after: %d\n",
			n_small, n_before, n_after
		if (n_small < 100 || !n_before || !n_after) bad = 1
		exit bad
	}' "$work/dump" >"$work/mtu" || fail "$(tail -n 5 "$work/mtu")"
cat "$work/mtu"
set -- $(tail -n 1 "$work/dump")
echo "trace: $2 FPDUs, markers and CRC, clean"
rm -f "$work/trace.pcap" "$work/dump"

# ---- an outage shorter than the ACK timeout ---------------------------------
# The first client's end may reach the server as an error (it wrote into
# the closed socket: EPIPE); only what the server logs after that counts.
wait_line "$work/server.out" " end " 10000 "the server did not see the first client go"
seen=$(wc -l <"$work/server.out")
# shellcheck disable=SC2086
ip netns exec "$ns_a" "$dp" $opts "$addr_a" 7473 "$addr_b:$port" \
	>"$work/client2.out" 2>&1 &
client=$!
pids="$pids $client"
wait_line "$work/client2.out" "verified .* 10$" 20000 "no rounds"
# the rounds verified so far
rounds() {
	kill -USR1 "$client"
	sleep 0.3
	grep " summary " "$work/client2.out" | tail -n 1 | sed 's/.*rounds=//'
}
before=$(rounds)
in_b ip link set "$if_b" down
sleep "$OUTAGE_S"
in_b ip link set "$if_b" up
sleep 2
after=$(rounds)
tail -n +$((seen + 1)) "$work/server.out" >"$work/server2.out"
! grep -q " end " "$work/client2.out" &&
	! grep -q " end " "$work/server2.out" ||
	fail "a connection ended: $(grep " end " "$work/client2.out" "$work/server2.out")"
[ "$after" -gt "$before" ] ||
	fail "no rounds after a ${OUTAGE_S} s outage: $before, then $after"
echo "outage of $OUTAGE_S s: the connection stayed up, rounds $before -> $after"
stop_peer "$client" client2
stop_peer "$server" server
