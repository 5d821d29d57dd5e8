# What the network-namespace tests of dead peers share (dead_peer.sh,
# cluster.sh, compat_dead_peer.sh); sourced after testlib.sh, not run.
# Each test makes namespaces of its own (names with its PID, addresses in
# 198.18.0.0/15, the benchmarking range of RFC 2544) and decides itself
# when a link dies: `ip link set ... down` in the dying host's namespace.

dp="$abs_top_builddir/test/dead_peer"

skip() {
	echo "SKIP: $*"
	exit 77
}

# Namespaces and veth pairs, and with "bridge" a bridge, or SKIP (77).
need_netns() {
	[ "$(id -u)" -eq 0 ] || skip "not root: cannot make network namespaces"
	command -v ip >/dev/null 2>&1 || skip "no ip (iproute2)"
	ip netns add "iwprobe$$" 2>"$work/err" ||
		skip "cannot make network namespaces: $(cat "$work/err")"
	_why=
	ip -n "iwprobe$$" link add p0 type veth peer name p1 2>"$work/err" ||
		_why="no veth pairs: $(cat "$work/err")"
	if [ -z "$_why" ] && [ "${1:-}" = bridge ]; then
		ip -n "iwprobe$$" link add br0 type bridge 2>"$work/err" ||
			_why="no bridges: $(cat "$work/err")"
	fi
	ip netns del "iwprobe$$"
	[ -z "$_why" ] || skip "$_why"
}

# CLOCK_MONOTONIC in milliseconds, the clock of dead_peer's lines.
now_ms() {
	"$dp" now
}

# Waits until file $1 has a line matching the extended regex $2, at most
# $3 ms; the first such line is in $line.  Fails the test with $4 if not.
wait_line() {
	_end=$(($(now_ms) + $3))
	while :; do
		line=$(grep -E -m 1 "$2" "$1" 2>/dev/null || true)
		[ -z "$line" ] || return 0
		[ "$(now_ms)" -lt "$_end" ] || fail "$4: $(tail -n 5 "$1")"
		sleep 0.05
	done
}

# The time (first field) of the line in $1 matching $2, or empty.
line_ms() {
	grep -E -m 1 "$2" "$1" 2>/dev/null | cut -d' ' -f1
}

# Ends dead_peer process $1 (SIGTERM) and requires its clean exit: every
# work request of an ended connection completed exactly once, all data
# verified.  $2 names it in a failure.
stop_peer() {
	kill -TERM "$1" 2>/dev/null || true
	_rc=0
	wait "$1" || _rc=$?
	[ "$_rc" -eq 0 ] || fail "$2 exited $_rc: $(grep -m 3 FAIL "$work/$2.out")"
}
