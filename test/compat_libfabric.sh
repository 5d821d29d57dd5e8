#!/bin/sh
# Debian's libfabric (libfabric-bin) over libiwarp, under iwarp-run: its
# verbs provider must find the device, for FI_EP_MSG and, through
# ofi_rxm, for FI_EP_RDM, and fi_pingpong must move every size with its
# data checked (-c) over both, and say no error on its way out.
# libfabric skips loopback interfaces, so the two ends run in two network
# namespaces made here, joined by a veth pair (FI_VERBS_IFACE names it),
# as real_link.sh does, over IPv4 and IPv6.  RDM runs once more with
# tagged messages and ofi_rxm's shared receive queue
# (FI_OFI_RXM_USE_SRX=1), as MPI libraries may set it; rxm then
# deregisters its receive buffers while they are still posted to that
# queue, and closes its domain after.  Without root or without
# libfabric-bin the test says SKIP (77).
set -eu

. "$top_srcdir/test/testlib.sh"
run="$abs_top_builddir/tools/run/iwarp-run"

command -v fi_info >/dev/null 2>&1 && command -v fi_pingpong >/dev/null 2>&1 ||
	skip "fi_info and fi_pingpong not found (Debian package libfabric-bin)"
ns_pair iwf
port=47592 # fi_pingpong's control port: the namespaces are ours alone

# $@ under iwarp-run in namespace A (B), libfabric told its interface
run_a() { in_a env FI_VERBS_IFACE="$if_a" timeout 120 "$run" "$@"; }
run_b() { in_b env FI_VERBS_IFACE="$if_b" timeout 120 "$run" "$@"; }

# fi_info's record for provider $1 and endpoint type $2 names iwarp0
info_lists() {
	run_a fi_info -p "$1" -t "$2" >"$work/info" 2>&1 ||
		fail "fi_info -p '$1' -t $2: $(head -n 5 "$work/info")"
	awk -v p="$1" -v t="$2" '
	$1 == "provider:" { prov = $2 }
	$1 == "fabric:" { fab = $2 }
	$1 == "domain:" { dom = $2 }
	$1 == "type:" && prov == p && fab == "Ethernet-iWARP" &&
		dom == "iwarp0" && $2 == t { found = 1 }
	END { exit !found }' "$work/info" ||
		fail "fi_info -p '$1' -t $2 does not list iwarp0: $(head -n 12 "$work/info")"
}

info_lists verbs FI_EP_MSG
info_lists 'verbs;ofi_rxm' FI_EP_RDM

# fi_pingpong with provider $1 and endpoint type $2 (more options after
# them), server in A, client in B, every size from 0 octets up, data
# checked; both must exit 0 and the client report every size.
pingpong() {
	_p=$1 _e=$2
	shift 2
	run_a fi_pingpong -p "$_p" -e "$_e" "$@" -S all -c -B "$port" \
		>"$work/server" 2>&1 &
	server=$!
	pids=$server
	wait_tcp "$port" 0A "$ns_a" "fi_pingpong's server does not listen" \
		"$work/server"
	run_b fi_pingpong -p "$_p" -e "$_e" "$@" -S all -c -P "$port" "$server_addr" \
		>"$work/client" 2>&1 ||
		fail "fi_pingpong -p '$_p' -e $_e $*: client: $(tail -n 5 "$work/client") / server: $(tail -n 5 "$work/server")"
	wait "$server" ||
		fail "fi_pingpong -p '$_p' -e $_e $*: server: $(tail -n 5 "$work/server")"
	pids=
	# nor a failure of its own on the way out (closing the domain, say)
	! grep -h '\[error\]' "$work/client" "$work/server" >"$work/errors" ||
		fail "fi_pingpong -p '$_p' -e $_e $*: $(head -n 5 "$work/errors")"
	# a row for each size, 0 octets to 1 MiB and beyond, 10 of 10 acked
	for size in 0 1 64 4k 64k 1m 4m; do
		grep -Eq "^$size +10 +=10 " "$work/client" ||
			fail "fi_pingpong -p '$_p' -e $_e $*: no row for $size: $(cat "$work/client")"
	done
	echo "fi_pingpong -p '$_p' -e $_e $* -S all -c: $(grep -Ec '^[0-9.]+[kmg]? +10 +=10 ' "$work/client") sizes"
}

server_addr=$addr_a
pingpong verbs msg
pingpong 'verbs;ofi_rxm' rdm
# over IPv6: the provider lists the interface's IPv6 addresses too
in_a ip addr add fd00:1ce::1/64 dev "$if_a" nodad
in_b ip addr add fd00:1ce::2/64 dev "$if_b" nodad
server_addr=fd00:1ce::1
pingpong verbs msg -6
pingpong 'verbs;ofi_rxm' rdm -6
server_addr=$addr_a
# tagged messages, and ofi_rxm's receives from one shared receive queue
FI_OFI_RXM_USE_SRX=1
export FI_OFI_RXM_USE_SRX
pingpong 'verbs;ofi_rxm' rdm -m tagged
