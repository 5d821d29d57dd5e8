#!/bin/sh
# iwarp-stat against running programs: iwarp-perf, and perftest's
# ib_write_bw -R under iwarp-run, are listed with their connection's
# addresses and MPA options, and their octet counters grow between two
# reads by what went from one end to the other; a reader of another user
# gets nothing; a program killed with SIGKILL leaves a socket that the
# next iwarp-stat recognises as stale and removes; IWARP_STATS=0 leaves
# no endpoint; -p names a process that is gone.  (The hostile readers
# that never read or send garbage are test_stats' business.)
set -eu

. "$top_srcdir/test/testlib.sh"
need jq jq
need ib_write_bw perftest
need setpriv util-linux
stat="$abs_top_builddir/tools/iwarp-stat"
perf="$abs_top_builddir/tools/iwarp-perf"
run="$abs_top_builddir/tools/run/iwarp-run"

# endpoints of this run only, in a directory of its own (0700)
IWARP_STATS_DIR="$work/stats"
export IWARP_STATS_DIR
unset IWARP_STATS XDG_RUNTIME_DIR
mkdir -m 700 "$IWARP_STATS_DIR"

# The program timeout(1) $1 runs (10 s at most to appear).
child_of() {
	for _ in $(seq 100); do
		_c=$(cat /proc/[0-9]*/stat 2>/dev/null |
			awk -v p="$1" '$4 == p { print $1; exit }') || :
		[ -n "$_c" ] && { echo "$_c"; return 0; }
		sleep 0.1
	done
	fail "timeout $1 started nothing"
}

# Waits until process $1's endpoint exists (10 s at most).
wait_endpoint() {
	for _ in $(seq 100); do
		[ -S "$IWARP_STATS_DIR/$1.sock" ] && return 0
		sleep 0.1
	done
	fail "no endpoint for process $1: $(ls -l "$IWARP_STATS_DIR")"
}

# An iwarp-perf server on a free port of 127.0.0.1 in the background, with
# the environment $2... added, its output in $work/$1: once it listens,
# $srv is its timeout(1), which $bg holds (killed on exit), and $srvp the
# program itself.
perf_server() {
	_log=$1
	shift
	port=$(free_port)
	env "$@" timeout -k 5 60 "$perf" -p "$port" -B 127.0.0.1 \
		>"$work/$_log" 2>&1 &
	srv=$!
	bg="$bg $srv"
	wait_tcp "$port" 0A
	srvp=$(child_of "$srv")
}

# ---- iwarp-perf: both ends in one process, RDMA Writes ------------------
timeout -k 5 60 "$perf" --loopback -t write -s 64k --duration 4 \
	>"$work/perf" 2>&1 &
t=$!
bg="$bg $t"
p=$(child_of "$t")
wait_endpoint "$p"
sleep 0.5
"$stat" -p "$p" --json >"$work/a.json" || fail "iwarp-stat -p $p: exit $?"
sleep 1
"$stat" -p "$p" --json >"$work/b.json" || fail "iwarp-stat -p $p: exit $?"
"$stat" -p "$p" >"$work/table" || fail "iwarp-stat table: exit $?"
grep -q "^process $p (iwarp-perf)" "$work/table" ||
	fail "table: $(cat "$work/table")"
jq -e --argjson p "$p" '.processes | length == 1 and .[0].pid == $p and
	.[0].comm == "iwarp-perf" and (.[0].contexts | length) == 2 and
	(.[0].listeners | length) == 1 and (.[0].connections | length) == 2' \
	"$work/a.json" >/dev/null || fail "iwarp-perf listing: $(cat "$work/a.json")"
# the initiator's peer is the listener, the responder's peer the initiator
jq -e '.processes[0] as $q |
	($q.connections | map(select(.role == "initiator")))[0] as $i |
	($q.connections | map(select(.role == "responder")))[0] as $r |
	$i.peer == $r.local and $r.peer == $i.local and
	($q.listeners[0].local | endswith(":" + ($r.local | split(":")[1]))) and
	($i.local | startswith("127.0.0.1:")) and
	$i.state == "RTS" and $i.mpa_rev == 2 and $i.crc == 0 and
	$i.markers_tx == 0 and $i.markers_rx == 0 and $i.rtr == "none" and
	$i.mulpdu > 0 and ($i | has("tcp_rtt_us")) and ($i | has("tcp_cwnd"))' \
	"$work/a.json" >/dev/null || fail "connection fields: $(cat "$work/a.json")"
# what the initiator sent between the two reads, the responder received
# (within what sits in the sockets between the two ends)
jq -s -e '
	def conn(role): .processes[0].connections[] | select(.role == role);
	((.[1] | conn("initiator").tx_octets) - (.[0] | conn("initiator").tx_octets)) as $tx |
	((.[1] | conn("responder").rx_octets) - (.[0] | conn("responder").rx_octets)) as $rx |
	$tx > 1000000 and $rx > 1000000 and
	($tx - $rx | fabs) <= 0.1 * $tx' \
	"$work/a.json" "$work/b.json" >/dev/null ||
	fail "octets did not grow alike: $(cat "$work/a.json" "$work/b.json")"
# --watch: rates per second, one JSON document a round
"$stat" -p "$p" -w 0.5 -c 2 --json >"$work/w.json" || fail "--watch: exit $?"
[ "$(wc -l <"$work/w.json")" -eq 2 ] || fail "--watch: $(cat "$work/w.json")"
tail -n 1 "$work/w.json" | jq -e '[.processes[0].connections[] |
	select(.role == "initiator")][0].tx_octets_per_s > 1000000' >/dev/null ||
	fail "--watch rate: $(cat "$work/w.json")"

# another user: the directory is ours alone (0700); opened up to show
# that the endpoint itself checks who asks (SO_PEERCRED), a symlink from
# nobody's own directory reaches the socket, and nothing is answered
other="$work/other"
mkdir -m 700 "$other"
chown nobody "$other"
chmod 711 "$work" "$IWARP_STATS_DIR"
chmod 666 "$IWARP_STATS_DIR/$p.sock"
ln -s "$IWARP_STATS_DIR/$p.sock" "$other/$p.sock"
rc=0
IWARP_STATS_DIR="$other" setpriv --reuid nobody --regid nogroup \
	--clear-groups "$stat" -p "$p" >"$work/o.out" 2>"$work/o.err" || rc=$?
[ "$rc" -eq 1 ] && grep -q "answered nothing" "$work/o.err" ||
	fail "another user: exit $rc: $(cat "$work/o.out" "$work/o.err")"
rc=0
setpriv --reuid nobody --regid nogroup --clear-groups "$stat" -p "$p" \
	>"$work/o.out" 2>"$work/o.err" || rc=$?
[ "$rc" -eq 1 ] && grep -q "not a directory of this user's own" "$work/o.err" ||
	fail "another user's directory: exit $rc: $(cat "$work/o.err")"
chmod 700 "$work" "$IWARP_STATS_DIR"
# still serving its own user
"$stat" -p "$p" --json | jq -e '.processes[0].connections | length == 2' \
	>/dev/null || fail "endpoint gone after another user's visit"
wait "$t" || fail "iwarp-perf: exit $?: $(tail -n 5 "$work/perf")"
bg=
grep -q "^ *65536 " "$work/perf" || fail "iwarp-perf: $(cat "$work/perf")"
[ ! -e "$IWARP_STATS_DIR/$p.sock" ] || fail "endpoint left after exit"
rc=0
"$stat" -p "$p" 2>"$work/gone" || rc=$?
[ "$rc" -eq 1 ] && grep -q "does not exist" "$work/gone" ||
	fail "-p of a gone process: exit $rc: $(cat "$work/gone")"

# ---- ib_write_bw -R under iwarp-run ---------------------------------------
port=$(free_port)
timeout -k 5 60 "$run" ib_write_bw -R -D 4 -s 65536 -p "$port" \
	>"$work/pts" 2>&1 &
pts=$!
bg="$bg $pts"
wait_tcp "$port" 0A
timeout -k 5 60 "$run" ib_write_bw -R -D 4 -s 65536 -p "$port" 127.0.0.1 \
	>"$work/ptc" 2>&1 &
ptc=$!
bg="$bg $ptc"
sleep 1.5
"$stat" --json >"$work/pa.json" || fail "iwarp-stat: exit $?"
sleep 1
"$stat" --json >"$work/pb.json" || fail "iwarp-stat: exit $?"
# perftest makes two connections: one to exchange its buffers' keys, one
# for the RDMA Writes
jq -e --arg port "$port" '[.processes[] | select(.comm == "ib_write_bw")] |
	length == 2 and
	([.[].connections[]] | length == 4) and
	([.[].connections[] | select(.role == "initiator" and .tx_write > 0)][0] |
		.peer == "127.0.0.1:" + $port and .state == "RTS" and
		.mpa_rev == 2 and (.crc | type) == "number" and
		(.markers_tx | type) == "number")' \
	"$work/pa.json" >/dev/null || fail "ib_write_bw listing: $(cat "$work/pa.json")"
jq -s -e '
	def conn(f; role; key): [f.processes[] | select(.comm == "ib_write_bw") |
		.connections[] | select(.role == role and .[key] > 0)][0];
	(conn(.[1]; "initiator"; "tx_write").tx_octets -
	 conn(.[0]; "initiator"; "tx_write").tx_octets) as $tx |
	(conn(.[1]; "responder"; "rx_write").rx_octets -
	 conn(.[0]; "responder"; "rx_write").rx_octets) as $rx |
	$tx > 1000000 and ($tx - $rx | fabs) <= 0.1 * $tx' \
	"$work/pa.json" "$work/pb.json" >/dev/null ||
	fail "ib_write_bw octets: $(cat "$work/pa.json" "$work/pb.json")"
wait "$ptc" || fail "ib_write_bw client: exit $?: $(tail -n 5 "$work/ptc")"
wait "$pts" || fail "ib_write_bw server: exit $?: $(tail -n 5 "$work/pts")"
bg=

# ---- SIGKILL: the socket stays, iwarp-stat removes it ---------------------
perf_server k
k=$srv kp=$srvp # the program itself, not timeout(1), is killed
wait_endpoint "$kp"
kill -KILL "$kp"
wait "$k" 2>/dev/null || :
bg=
[ -S "$IWARP_STATS_DIR/$kp.sock" ] || fail "no socket left to clean up"
# a socket nothing serves, of a process that lives (this shell): skipped
: >"$IWARP_STATS_DIR/$$.sock"
"$stat" -v --json >"$work/s.json" 2>"$work/s.err" ||
	fail "iwarp-stat after SIGKILL: exit $?: $(cat "$work/s.err")"
jq -e '.processes == []' "$work/s.json" >/dev/null ||
	fail "stale endpoints listed: $(cat "$work/s.json")"
grep -q "removed .*$kp.sock" "$work/s.err" || fail "not said: $(cat "$work/s.err")"
[ ! -e "$IWARP_STATS_DIR/$kp.sock" ] || fail "stale socket not removed"
[ -e "$IWARP_STATS_DIR/$$.sock" ] || fail "a live process's file removed"
rm -f "$IWARP_STATS_DIR/$$.sock"
"$stat" | grep -q "no libiwarp processes" || fail "table of none"
# the next program to open an endpoint removes one left behind as well
perf_server k2
k=$srv kp=$srvp
wait_endpoint "$kp"
kill -KILL "$kp"
wait "$k" 2>/dev/null || :
[ -S "$IWARP_STATS_DIR/$kp.sock" ] || fail "no socket left by the second kill"
perf_server k3
k3=$srv
wait_endpoint "$srvp"
[ ! -e "$IWARP_STATS_DIR/$kp.sock" ] ||
	fail "a new program's endpoint left the stale one of $kp"
kill "$k3" 2>/dev/null || :
wait "$k3" 2>/dev/null || :
bg=
rm -f "$IWARP_STATS_DIR"/*.sock

# ---- IWARP_STATS=0: no endpoint ------------------------------------------
perf_server z IWARP_STATS=0
z=$srv zp=$srvp
rc=0
"$stat" -p "$zp" 2>"$work/z.err" || rc=$?
[ "$rc" -eq 1 ] && grep -q "IWARP_STATS=0" "$work/z.err" ||
	fail "IWARP_STATS=0: exit $rc: $(cat "$work/z.err")"
[ -z "$(ls "$IWARP_STATS_DIR")" ] || fail "IWARP_STATS=0 left an endpoint"
kill "$z" 2>/dev/null || :
wait "$z" 2>/dev/null || :
bg=
echo "iwarp-stat: listings, rates, another user, SIGKILL, IWARP_STATS=0 ok"
