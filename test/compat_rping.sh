#!/bin/sh
# Debian's rping under iwarp-run: both ends, at sizes from rping's least
# (23) through odd ones to its largest (65535), every ping verified (-V)
# and shown (-v); then each direction against iwarp-ping, which speaks
# rping's protocol; then a client that creates its QP itself (-q) and
# drives it through INIT, RTR and RTS around rdma_cm.
set -eu

. "$top_srcdir/test/testlib.sh"
run="$abs_top_builddir/tools/run/iwarp-run"
ping="$abs_top_builddir/tools/iwarp-ping"
need rping rdmacm-utils

count=20
# "ping data: rdma-ping-N: ..." for N = 0 .. $2 - 1, in order, in $1
pings_ok() {
	awk -v n="$2" 'BEGIN { seen = 0 }
	/^(server )?ping data: / { split($0, f, ": "); if (f[2] != "rdma-ping-" seen) bad = 1; seen++ }
	END { exit !(seen == n && !bad) }' "$1"
}

# $1: server command, $2: client command (each run with a port as -p),
# $3: what to call it; both must exit 0
pair() {
	pair_run 60 "$3" "$1" "$2"
}

for size in 23 24 33 100 1000 4095 4096 65535; do
	pair "$run rping -s -a 127.0.0.1 -V -v -S $size -C $count" \
		"$run rping -c -a 127.0.0.1 -V -v -S $size -C $count" \
		"rping -S $size"
	pings_ok "$work/client" "$count" ||
		fail "rping -S $size client: $(head -c 400 "$work/client")"
	pings_ok "$work/server" "$count" ||
		fail "rping -S $size server: $(head -c 400 "$work/server")"
done

# rping's client against iwarp-ping's server, and the other way round
pair "$ping -s -a 127.0.0.1 -S 1000" \
	"$run rping -c -a 127.0.0.1 -V -v -S 1000 -C $count" \
	"rping client, iwarp-ping server"
pings_ok "$work/client" "$count" ||
	fail "rping client against iwarp-ping: $(cat "$work/client")"
pair "$run rping -s -a 127.0.0.1 -V -v -S 1000 -C $count" \
	"$ping -c -a 127.0.0.1 -V -S 1000 -C $count" \
	"iwarp-ping client, rping server"
grep -q "$count pings of 1000 octets with 127.0.0.1:$port, all verified" \
	"$work/client" || fail "iwarp-ping against rping: $(cat "$work/client")"
pings_ok "$work/server" "$count" ||
	fail "rping server against iwarp-ping: $(cat "$work/server")"

# -q: the QP made with ibv_create_qp, connected by its number
pair "$run rping -s -a 127.0.0.1 -V -v -q -S 64 -C $count" \
	"$run rping -c -a 127.0.0.1 -V -v -q -S 64 -C $count" "rping -q"
pings_ok "$work/client" "$count" || fail "rping -q: $(cat "$work/client")"
echo "compat_rping: rping at 8 sizes, against iwarp-ping both ways, and -q"
