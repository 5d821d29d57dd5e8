# What the network-namespace tests that run dead_peer share (dead_peer.sh,
# path_change.sh, cluster.sh, compat_dead_peer.sh); sourced after
# testlib.sh (whose ns_pair, ns_add and need_netns make the namespaces),
# not run.  Each test decides itself when a link dies: `ip link set ...
# down` in the dying host's namespace.

dp="$abs_top_builddir/test/dead_peer"

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
