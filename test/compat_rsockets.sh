#!/bin/sh
# rdma-core's rsocket programs (Debian's rdmacm-utils) at both ends under
# iwarp-run: rstream in its blocking, non-blocking and async (rpoll)
# modes with several sizes and counts, its data verified; riostream,
# whose data goes by riowrite into the peer's riomap; rcopy of a file
# whose checksum must come out the same; IPv6; a peer killed mid-stream
# is reported at once, not waited for.  Every run is bounded by
# timeout(1), and a server left running is killed on exit.
set -eu

. "$top_srcdir/test/testlib.sh"
run="$abs_top_builddir/tools/run/iwarp-run"
for prog in rstream riostream rcopy; do
	command -v "$prog" >/dev/null 2>&1 ||
		{ echo "SKIP: $prog not found (Debian package rdmacm-utils)"; exit 77; }
done
host=
sargs=

# $1: program, $2: arguments of both ends, $3: a line both must print;
# $host: the server's address (127.0.0.1), $sargs: the server's own arguments
pair() {
	pair_run 60 "$1 $2" "$run $1 $2 $sargs" \
		"$run $1 -s ${host:-127.0.0.1} $2"
	for side in server client; do
		grep -Eq "$3" "$work/$side" ||
			fail "$1 $2 $side: no line '$3': $(cat "$work/$side")"
		! grep -Eq 'fail|error|refused|reset|Broken' "$work/$side" ||
			fail "$1 $2 $side: $(cat "$work/$side")"
	done
}

n=0
for mode in "" "-T b" "-T n" "-T a"; do
	pair rstream "$mode -T v -S 64 -C 2000" '^custom +64 +2k +1 '
	pair rstream "$mode -T v -S 1000000 -C 20" '^custom +976k +20 +1 '
	pair rstream "$mode -S 65536 -C 500 -I 2" '^custom +64k +500 +2 '
	n=$((n + 3))
done
# one byte at a time, and transfers that are not a multiple of anything
pair rstream "-T v -S 1 -C 3000" '^custom +1 +3k +1 '
pair rstream "-T v -S 12345 -C 300" '^custom +12k +300 +1 '
# small buffers and inline size: the ring wraps, credits run out often
pair rstream "-T v -B 8192 -i 16 -S 30000 -C 100" '^custom +29k +100 +1 '
# every size rstream knows, latency and bandwidth, in blocking calls: in
# its default mode rstream spins on MSG_DONTWAIT calls, and 100 000
# round trips of that cost a scheduler's time slice each when make check
# runs other busy tests beside it (a busy TCP ping-pong does no better;
# blocking calls sleep and are woken ahead of the busy threads)
pair rstream "-T b -T v" '^1m_bw +1m +100 +1 '
# a long non-blocking ping-pong of single small messages: each Write and
# the Send that announces it, credits now and then, all from polls
pair rstream "-T n -T v -S 64 -C 1 -I 20000" '^custom +64 +1 +20k '
n=$((n + 5))

if grep -q '^0\{31\}1 ' /proc/net/if_inet6 2>/dev/null; then
	host=::1 sargs="-b ::1"
	pair rstream "-f ipv6 -T v -S 4096 -C 500" '^custom +4k +500 +1 '
	host='' sargs=''
	n=$((n + 1))
fi

for mode in "" "-T b" "-T n" "-T a"; do
	pair riostream "$mode -T v -S 4096 -C 200" '^custom +4k +200 +1 '
	n=$((n + 1))
done
pair riostream "-T v -S 1000000 -C 10" '^custom +976k +10 +1 '
n=$((n + 1))

# rcopy: the server runs until killed; the file must arrive whole
head -c 3000017 /dev/urandom >"$work/src"
port=$(free_port)
server_start 60 "$port" "$run" rcopy -p "$port"
client_run 60 rcopy "$run" rcopy "$work/src" "127.0.0.1:$work/dst" -p "$port"
server_stop
[ "$(sha256sum <"$work/src")" = "$(sha256sum <"$work/dst")" ] ||
	fail "rcopy: the copy differs: $(cat "$work/client" "$work/server")"

# the server killed mid-stream: the client is told within a second or so
port=$(free_port)
server_start 60 "$port" "$run" rstream -S 65536 -C 1000000 -p "$port"
timeout -k 5 60 "$run" rstream -s 127.0.0.1 -S 65536 -C 1000000 -p "$port" \
	>"$work/client" 2>&1 &
client=$!
bg=$client
sleep 1
pid=$(pgrep -P "$server" rstream) || fail "no rstream server under $server"
kill -9 "$pid"
server_stop
t0=$(date +%s)
status=0
wait "$client" || status=$?
bg=
[ "$status" -ne 0 ] || fail "killed server: client exit 0: $(cat "$work/client")"
[ $(($(date +%s) - t0)) -lt 10 ] ||
	fail "killed server: client took $(($(date +%s) - t0)) s to notice"
# told by an error, or, when a send follows the reported reset, killed by
# SIGPIPE (128 + 13) as a program writing to a TCP socket would be
[ "$status" -eq 141 ] || grep -Eq 'reset|Broken pipe' "$work/client" ||
	fail "killed server: client exit $status says $(cat "$work/client")"
n=$((n + 1))

echo "compat_rsockets: $n rstream/riostream runs (IPv6, a killed peer among them) and rcopy of 3 MB, both ends over libiwarp"
