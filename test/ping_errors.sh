#!/bin/sh
# iwarp-ping's client against servers that misbehave: data that comes back
# altered fails a verified run with one line naming the ping and octet, a
# Terminate the server sends is given in words, and a Write under a key
# never granted (iwarp-ping -s --wrong-rkey) ends both sides with the
# Terminate named, sent on one side and received on the other.
set -eu

ping="$abs_top_builddir/tools/iwarp-ping"
peer="$abs_top_builddir/test/ping_peer"
. "$top_srcdir/test/testlib.sh"

# client PORT ARGS...: runs the client, which must fail with status 1,
# print no summary and say one line on stderr, into $work/client
client() {
	_port=$1
	shift
	_rc=0
	timeout 60 "$ping" -c -a 127.0.0.1 -p "$_port" "$@" >"$work/out" \
		2>"$work/client" || _rc=$?
	[ "$_rc" -eq 1 ] || fail "client $*: exit $_rc: $(cat "$work/client")"
	[ ! -s "$work/out" ] || fail "client $*: a summary: $(cat "$work/out")"
	[ "$(wc -l <"$work/client")" -eq 1 ] ||
		fail "client $*: not one line: $(cat "$work/client")"
}

# ping 2 comes back with octet 20 altered: rping's pattern has 'J' there
# (0x4a: "rdma-ping-2: " and letters from 'C'), the peer flips bit 0x20
port=$(free_port)
server_start 60 "$port" "$peer" "$port" corrupt 2 20
client "$port" -C 5 -V
grep -qx "iwarp-ping: data mismatch in ping 2 from 127.0.0.1:$port: octet 20 of 64 came back 0x6a, sent 0x4a" \
	"$work/client" || fail "mismatch: $(cat "$work/client")"
server_end "corrupting peer"

# the peer posts no receive: the client's first Send finds no buffer, and
# the peer's Terminate is what the client names
port=$(free_port "$port")
server_start 60 "$port" "$peer" "$port" terminate
client "$port" -C 1 -V
grep -q "^iwarp-ping: connection error with 127.0.0.1:$port: .*; Terminate received: layer 1 type 2 code 0x02 (DDP untagged buffer error: invalid MSN, no buffer available)$" \
	"$work/client" || fail "received Terminate: $(cat "$work/client")"
server_end "terminating peer"

# iwarp-ping's own server Writes under a key the client never granted:
# the client sends the Terminate, the server receives it, both say so
port=$(free_port "$port")
timeout 60 "$ping" -s -a 127.0.0.1 -p "$port" -S 1024 --wrong-rkey \
	2>"$work/server" &
server=$!
wait_tcp "$port" 0A
client "$port" -C 1 -S 1024 -V
grep -q "^iwarp-ping: connection error with 127.0.0.1:$port: .*; Terminate sent: layer 1 type 1 code 0x00 (DDP tagged buffer error: invalid STag)$" \
	"$work/client" || fail "sent Terminate: $(cat "$work/client")"
status=0
wait "$server" || status=$?
server=
[ "$status" -eq 1 ] || fail "--wrong-rkey server: exit $status"
[ "$(wc -l <"$work/server")" -eq 1 ] &&
	grep -q "^iwarp-ping: connection error with client 127.0.0.1: .*; Terminate received: layer 1 type 1 code 0x00 (DDP tagged buffer error: invalid STag)$" \
		"$work/server" || fail "--wrong-rkey server: $(cat "$work/server")"
echo "ping_errors: a mismatch and Terminates both ways named"
