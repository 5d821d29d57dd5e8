#!/bin/sh
# Hostile peers against a listener (iwarp-ping -s -P), all from 127.0.0.1
# as an attacker on the same host would be: 1000 TCP connections that
# never send their MPA Request and 100 that send it an octet a second,
# each one the server closes opened again, while a good client connects,
# pings and leaves normally, three times.  The server drops the oldest
# handshakes to make room (its debug log names each), keeps accepting and
# keeps serving.  A client that leaves right after its Request is named
# as one, not as a refusal.
set -eu

ping="$abs_top_builddir/tools/iwarp-ping"
peer="$abs_top_builddir/test/hostile_peer"
. "$top_srcdir/test/testlib.sh"

good_client() {
	timeout 30 "$ping" -c -a 127.0.0.1 -p "$port" -C 5 -V >"$work/client" 2>&1 ||
		fail "$1: the good client failed: $(cat "$work/client")"
	grep -q "5 pings of 64 octets with 127.0.0.1:$port, all verified" \
		"$work/client" || fail "$1: $(cat "$work/client")"
}

port=$(free_port)
timeout 120 "$ping" -s -P -d -a 127.0.0.1 -p "$port" 2>"$work/server" &
server=$!
wait_tcp "$port" 0A

"$peer" "$port" 1000 100 15 >"$work/peer" 2>&1 &
attacker=$!
bg=$attacker # killed on exit, as the server is
n=0
until grep -q '^open$' "$work/peer"; do
	kill -0 "$attacker" 2>/dev/null || fail "the attacker stopped: $(cat "$work/peer")"
	n=$((n + 1))
	[ "$n" -lt 600 ] || fail "the attacker could not open its connections"
	sleep 0.1
done

for i in 1 2 3; do
	good_client "during the attack ($i)"
	sleep 1
done
wait "$attacker" || fail "the attacker failed: $(cat "$work/peer")"
bg=

# every idle connection but those the backlog (8) still held was closed
# (give or take those whose close was on its way), and those opened again
# were accepted too
set -- $(tail -n 1 "$work/peer")
[ "$#" -eq 8 ] && [ "$1" = idle ] && [ "$5" = slow ] ||
	fail "no counts from the attacker: $(cat "$work/peer")"
[ "$2" -gt 1000 ] && [ "$4" -ge $(($2 - 16)) ] ||
	fail "idle connections not dropped or not accepted again: $*"
[ "$8" -ge $(($6 - 16)) ] ||
	fail "slow connections not dropped: $*"

dropped=$(grep -c "dropped after .* octets of its MPA Request: the oldest of 8 connections" \
	"$work/server") || true
[ "$dropped" -ge 1000 ] || fail "the server logged $dropped drops"

good_client "after the attack"

# a client that leaves right after its Request is named as such, and the
# server goes on serving
# (its FIN rides with the Request, and the server reads that far before
# it answers; test_hostile holds that in each progress mode.  A few tries
# here, for a FIN that should leave in a segment of its own.)
n=0
until grep -q "client 127.0.0.1 left after sending its MPA Request, before our answer" \
	"$work/server"; do
	n=$((n + 1))
	[ "$n" -le 10 ] ||
		fail "a client that left: $(grep -v '^iwarp: ' "$work/server" | tail -n 3)"
	"$peer" "$port" leave || fail "could not send a Request"
	sleep 0.5
done
! grep -q "Invalid argument" "$work/server" ||
	fail "$(grep "Invalid argument" "$work/server")"
good_client "after a client left"
kill -0 "$server" 2>/dev/null || fail "the server is gone: $(tail -n 5 "$work/server")"
