#!/bin/sh
# libfabric's own API over libiwarp (fabric_peer.c, built against
# libfabric-dev, run under iwarp-run), its ends in two network namespaces
# joined by a veth pair since libfabric skips loopback interfaces:
#  - MSG endpoints (verbs): a rejected connection, an accepted one, Sends
#    of 0 octets to 4 MiB echoed and checked, RDMA Read and Write of
#    4 MiB, a Read of a region since closed failing, the end of the
#    connection seen on the event queue;
#  - RDM endpoints (verbs;ofi_rxm), three peers sending to each other at
#    the same moment: tagged, masked, injected and untagged messages of
#    0 octets to 4 MiB, RDMA Write and Read, fi_cq_sread and fi_cq_read;
#  - faults: a refused and an unreachable connection end in an error
#    event; a peer killed amid traffic makes the survivor's work complete
#    with an error and its event queue report the end.
# Without root, or built without libfabric-dev, the test says SKIP (77).
set -eu

. "$top_srcdir/test/testlib.sh"
run="$abs_top_builddir/tools/run/iwarp-run"
peer="$abs_top_builddir/test/fabric_peer"

[ -x "$peer" ] || { echo "SKIP: built without libfabric-dev (no fabric_peer)"; exit 77; }
ns_pair iwa

# fabric_peer in namespace B under iwarp-run, output in $work/$1
peer_b() {
	_log=$1
	shift
	in_b env FI_VERBS_IFACE="$if_b" "$run" "$peer" "$@" \
		>"$work/$_log" 2>&1
}

# The same in the background, namespace $1: $last is its process itself
# (exec, and iwarp-run execs the program), which testlib_cleanup kills.
bg() {
	_ns=$1 _if=$2 _log=$3
	shift 3
	(exec ip netns exec "$_ns" env FI_VERBS_IFACE="$_if" "$run" "$peer" \
		"$@" >"$work/$_log" 2>&1) &
	last=$!
	pids="$pids $last"
}

# Until $work/$1 has a line $2 (10 s at most).
wait_line() {
	_n=0
	until grep -qx "$2" "$work/$1" 2>/dev/null; do
		_n=$((_n + 1))
		[ "$_n" -lt 100 ] || fail "no '$2' from $1: $(tail -n 5 "$work/$1")"
		sleep 0.1
	done
}

# Waits for background process $1 (bounded by fabric_peer's own waits,
# and by 120 s here); fails with its log $2 unless it exits 0.
reap() {
	_n=0
	while kill -0 "$1" 2>/dev/null; do
		_n=$((_n + 1))
		[ "$_n" -lt 1200 ] || fail "$2 still running after 120 s: $(tail -n 5 "$work/$2")"
		sleep 0.1
	done
	wait "$1" || fail "$2: $(grep -v '^libfabric' "$work/$2" | tail -n 5)"
}

says() {
	grep -v '^libfabric' "$work/$1" | grep -v -x -e listening -e connected \
		-e streaming || true
}

# MSG: server in A, client in B.  Without the verbs provider's MR cache,
# which keeps a closed region registered: the server's window must go when
# it is closed, and the client's Read of it then fail.
export FI_MR_CACHE_MAX_COUNT=0
bg "$ns_a" "$if_a" msg-server msg-server "$addr_a" 7471
srv=$last
wait_line msg-server listening
peer_b msg-client msg-client "$addr_a" 7471 ||
	fail "msg-client: $(grep -v '^libfabric' "$work/msg-client" | tail -n 5)"
reap "$srv" msg-server
unset FI_MR_CACHE_MAX_COUNT
says msg-client
says msg-server

# RDM: peer 0 in A, peers 1 and 2 in B, all started at once
set -- "$addr_a:7481" "$addr_b:7482" "$addr_b:7483"
bg "$ns_a" "$if_a" rdm0 rdm 0 "$@"
r0=$last
bg "$ns_b" "$if_b" rdm1 rdm 1 "$@"
r1=$last
bg "$ns_b" "$if_b" rdm2 rdm 2 "$@"
r2=$last
reap "$r0" rdm0
reap "$r1" rdm1
reap "$r2" rdm2
says rdm0
says rdm1
says rdm2

# a connection refused (nothing listens) and one unreachable (no host)
peer_b refused connect-error "$addr_a" 7499 ||
	fail "refused: $(grep -v '^libfabric' "$work/refused" | tail -n 3)"
says refused
peer_b unreachable connect-error "$subnet.9" 7499 ||
	fail "unreachable: $(grep -v '^libfabric' "$work/unreachable" | tail -n 3)"
says unreachable

# a peer killed in the middle of traffic
bg "$ns_a" "$if_a" survivor msg-survivor "$addr_a" 7491
srv=$last
wait_line survivor listening
bg "$ns_b" "$if_b" victim msg-victim "$addr_a" 7491
victim=$last
wait_line survivor streaming
kill -KILL "$victim"
wait "$victim" 2>/dev/null || true
reap "$srv" survivor
says survivor
