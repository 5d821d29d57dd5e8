#!/bin/sh
# An MPI job over libiwarp: Debian's Open MPI, its point-to-point through
# libfabric (--mca pml cm --mca mtl ofi) and libfabric's verbs;ofi_rxm,
# every rank under iwarp-run.  mpi_peer (mpi_peer.c) ping-pongs 0 octets
# to 4 MiB, every octet checked, between pairs of ranks, puts and gets
# 1 MiB one-sided, and checks an MPI_Allreduce, with 2 ranks and with 4.
# One-sided calls take Open MPI's osc pt2pt, over the same path: osc
# rdma would take a BTL, shared memory between ranks of one host (btl
# ofi needs FI_ATOMIC, which the verbs provider does not offer on
# iWARP).  Each rank writes its own trace (iwarp-run -t with %p in the
# name), and iwarp-dump must find on libiwarp's connections, without a
# violation, the ping-pong's octets and the one-sided mebibyte each way,
# as Sends and the RDMA Reads of ofi_rxm's rendezvous: the job's traffic
# went over libiwarp.  The ranks share one network namespace and the
# address of its end of a veth pair (libfabric skips loopback
# interfaces).  Without root, mpirun or libopenmpi-dev the test says
# SKIP (77).
set -eu

. "$top_srcdir/test/testlib.sh"
run="$abs_top_builddir/tools/run/iwarp-run"
peer="$abs_top_builddir/test/mpi_peer"
dump="$abs_top_builddir/tools/iwarp-dump"

[ -x "$peer" ] || skip "built without libopenmpi-dev (no mpi_peer)"
command -v mpirun >/dev/null 2>&1 || skip "no mpirun (Debian package openmpi-bin)"
ns_pair iwm

# mpi_peer's job of $1 ranks in namespace A under iwarp-run, which the
# ranks inherit, each tracing to $work/trace.PID.pcap (iwarp-run -t with
# %p); output in $work/job
job() {
	rm -f "$work"/trace.*.pcap
	in_a timeout 300 "$run" -t "$work/trace.%p.pcap" mpirun \
		--allow-run-as-root --oversubscribe -np "$1" \
		--mca pml cm --mca mtl ofi --mca osc pt2pt \
		--mca mtl_ofi_provider_include 'verbs;ofi_rxm' \
		-x FI_PROVIDER='verbs;ofi_rxm' -x FI_VERBS_IFACE="$if_a" \
		"$peer" >"$work/job" 2>&1 ||
		fail "$1 ranks: mpirun: exit $?: $(tail -n 8 "$work/job")"
	grep -q "^mpi_peer: $1 ranks, ping-pong of 24 sizes (0 to 4194304 octets) checked in $(($1 / 2)) pairs, put and get of 1 MiB checked, allreduce of 100000 doubles checked\$" \
		"$work/job" || fail "$1 ranks: $(tail -n 8 "$work/job")"
}

# Every trace decoded without a violation; $1 of them, one a rank, hold
# both directions of a ping-pong with its 4 rounds of every size
# (4 x (8 MiB - 1) octets each way) and a one-sided MiB (a put one way,
# a get's data the other), as Sends and the Read Responses of the
# rendezvous.  (mpirun's own process may leave a trace of nothing.)
traces() {
	_files=0
	for _t in "$work"/trace.*.pcap; do
		[ -s "$_t" ] || continue
		"$dump" "$_t" >"$work/dump" 2>&1 ||
			fail "$1 ranks: iwarp-dump $_t: $(grep -m 3 'violation' "$work/dump")"
		tail -n 1 "$work/dump" | grep -Eq '^fpdus [0-9]+ violations 0$' ||
			fail "$1 ranks: $_t: $(tail -n 1 "$work/dump")"
		_n=$(awk '/ → .*: FPDUs / && / violations 0,/ {
			for (i = 1; i <= NF; i++)
				if ($i == "payload") octets = $(i + 2) + 0
			if (octets >= 33554428 + 1048576 && / Read Response [1-9]/ &&
			    / Send [1-9]/) n++
		} END { print n + 0 }' "$work/dump")
		[ "$_n" -eq 0 ] && continue
		[ "$_n" -eq 2 ] ||
			fail "$1 ranks: $_t: $_n directions of ping-pong: $(grep ' → ' "$work/dump")"
		_files=$((_files + 1))
	done
	[ "$_files" -eq "$1" ] ||
		fail "$1 ranks: $_files traces show the ping-pong ($(ls "$work"/trace.*.pcap))"
}

job 2
traces 2
echo "2 ranks: ping-pong 0 to 4 MiB, put and get, allreduce checked, all over libiwarp"
job 4
traces 4
echo "4 ranks: the same in 2 pairs at once"
