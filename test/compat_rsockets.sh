#!/bin/sh
# rdma-core's rsocket programs (Debian's rdmacm-utils) at both ends under
# iwarp-run: rstream in its blocking, non-blocking and async (rpoll)
# modes with several sizes and counts, its data verified; riostream,
# whose data goes by riowrite into the peer's riomap; rcopy of a file
# whose checksum must come out the same.  Every run is bounded by
# timeout(1), and a server left running is killed on exit.
set -eu

. "$top_srcdir/test/testlib.sh"
run="$abs_top_builddir/tools/run/iwarp-run"
for prog in rstream riostream rcopy; do
	command -v "$prog" >/dev/null 2>&1 ||
		{ echo "SKIP: $prog not found (Debian package rdmacm-utils)"; exit 77; }
done
server=
cleanup() {
	if [ -n "$server" ]; then
		kill "$server" 2>/dev/null || :
		wait "$server" 2>/dev/null || :
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# $1: program, $2: arguments of both ends, $3: a line both must print
pair() {
	port=$(free_port)
	# shellcheck disable=SC2086 # word splitting wanted
	timeout -k 5 60 "$run" $1 $2 -p "$port" >"$work/server" 2>&1 &
	server=$!
	wait_tcp "$port" 0A
	# shellcheck disable=SC2086
	timeout -k 5 60 "$run" $1 -s 127.0.0.1 $2 -p "$port" >"$work/client" 2>&1 ||
		fail "$1 $2: client exit $?: $(cat "$work/client")"
	status=0
	wait "$server" || status=$?
	server=
	[ "$status" -eq 0 ] ||
		fail "$1 $2: server exit $status: $(cat "$work/server")"
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
# every size rstream knows, latency and bandwidth
pair rstream "-T v" '^1m_bw +1m +100 +1 '
n=$((n + 4))

for mode in "" "-T b" "-T n" "-T a"; do
	pair riostream "$mode -T v -S 4096 -C 200" '^custom +4k +200 +1 '
	n=$((n + 1))
done
pair riostream "-T v -S 1000000 -C 10" '^custom +976k +10 +1 '
n=$((n + 1))

# rcopy: the server runs until killed; the file must arrive whole
head -c 3000017 /dev/urandom >"$work/src"
port=$(free_port)
timeout -k 5 60 "$run" rcopy -p "$port" >"$work/server" 2>&1 &
server=$!
wait_tcp "$port" 0A
timeout -k 5 60 "$run" rcopy "$work/src" "127.0.0.1:$work/dst" -p "$port" \
	>"$work/client" 2>&1 || fail "rcopy: client exit $?: $(cat "$work/client")"
kill "$server" 2>/dev/null || :
wait "$server" 2>/dev/null || :
server=
[ "$(sha256sum <"$work/src")" = "$(sha256sum <"$work/dst")" ] ||
	fail "rcopy: the copy differs: $(cat "$work/client" "$work/server")"

echo "compat_rsockets: $n rstream/riostream runs and rcopy of 3 MB, both ends over libiwarp"
