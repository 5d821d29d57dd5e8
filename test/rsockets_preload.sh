#!/bin/sh
# Two ordinary TCP programs (tcp_pair) moved onto rsockets by Debian's
# librspreload.so, both ends under iwarp-run: one streams 4 MB and
# compares a CRC, one exchanges 2000 small requests and replies (its
# server forks first: the child's send on the connection fails, and the
# parent's exchanges go on undisturbed).  Each
# end's trace (IWARP_TRACE) must show the octets went as iWARP
# Writes and Sends, with no rule broken, not over a plain socket.
set -eu

. "$top_srcdir/test/testlib.sh"
run="$abs_top_builddir/tools/run/iwarp-run"
pair="$abs_top_builddir/test/tcp_pair"
preload=
for f in /usr/lib/*/rsocket/librspreload.so /usr/lib/rsocket/librspreload.so; do
	[ -e "$f" ] && preload=$f && break
done
[ -n "$preload" ] ||
	{ echo "SKIP: librspreload.so not found (Debian package librdmacm1)"; exit 77; }

# $1 $2: server mode, client mode, $3: client argument, $4: octets the
# client must have sent as payload at least
preloaded() {
	port=$(free_port)
	rm -f "$work/s.pcap" "$work/c.pcap"
	timeout -k 5 60 "$run" -t "$work/s.pcap" env LD_PRELOAD="$preload" \
		"$pair" "$1" "$port" >"$work/server" 2>&1 &
	server=$!
	wait_tcp "$port" 0A
	timeout -k 5 60 "$run" -t "$work/c.pcap" env LD_PRELOAD="$preload" \
		"$pair" "$2" "$port" "$3" >"$work/client" 2>&1 ||
		fail "$2: exit $?: $(cat "$work/client" "$work/server")"
	status=0
	wait "$server" || status=$?
	server=
	[ "$status" -eq 0 ] || fail "$1: exit $status: $(cat "$work/server")"
	for end in s c; do
		run_dump 0 -q "$work/$end.pcap"
		totals
		[ "$violations" -eq 0 ] || fail "$1 $end: $(cat "$work/out")"
		[ "$fpdus" -gt 0 ] || fail "$1 $end: no iWARP traffic traced"
		# the client's direction: payload octets N (Write W, Send S)
		sent=$(sed -n "s/^  127\.0\.0\.1:[0-9]* → 127\.0\.0\.1:$port: .*payload octets \([0-9]*\) (Write.*/\1/p" \
			"$work/out")
		[ -n "$sent" ] && [ "$sent" -ge "$4" ] ||
			fail "$1 $end: client payload '$sent' < $4: $(cat "$work/out")"
	done
}

preloaded stream-server stream-client 4000000 4000000
grep -q '^stream-client: 4000000 octets, crc [0-9a-f]* matches$' "$work/client" ||
	fail "stream: $(cat "$work/client")"
preloaded fork-echo-server echo-client 2000 300000
grep -q '^fork-child: send: Bad file descriptor$' "$work/server" ||
	fail "fork: the child's send: $(cat "$work/server")"
grep -q '^echo-client: 2000 exchanges verified$' "$work/client" ||
	fail "echo: $(cat "$work/client")"
echo "rsockets_preload: tcp_pair stream (4 MB) and 2000 request/replies through librspreload.so over libiwarp"
