#!/bin/sh
# libiwarp over a real link, not loopback: two network namespaces made
# here, joined by a veth pair, with MTU 1500, MTU 9000, and MTU 1500 behind
# a tc tbf limit of 1 Gbit/s.  Over each, iwarp-ping (Send, RDMA Write and
# RDMA Read of 100001 octets, verified) runs in every marker and CRC
# combination with IWARP_TRACE on; iwarp-dump judges the trace (markers,
# CRC, every DDP and RDMAP rule) and every FPDU must fit the link's EMSS
# (RFC 5044 section 4.5); the client's debug log must give the size of
# its writes (one GSO packet at MTU 9000).  iwarp-perf then measures each
# operation against TCP on the same link and the ratios are printed.
# Traffic stays inside the namespaces.  Without the privilege to make them
# (root, ip netns, veth) the test says SKIP (77); a variant the kernel
# cannot make (no tbf) is skipped too, and the test then ends with 77
# unless something failed.
set -eu

ping="$abs_top_builddir/tools/iwarp-ping"
perf="$abs_top_builddir/tools/iwarp-perf"
dump="$abs_top_builddir/tools/iwarp-dump"
. "$top_srcdir/test/testlib.sh"

# Until port $1 listens in namespace B; fails after 10 s.
wait_listen() {
	wait_tcp "$1" 0A "$ns_b" "nothing listens on $addr_b:$1"
}

# The EMSS of the link: the MTU less the IP and TCP headers and, when TCP
# timestamps are on, their option (what TCP_MAXSEG gives the library).
emss() {
	_ts=$(in_a cat /proc/sys/net/ipv4/tcp_timestamps)
	[ "$_ts" -eq 0 ] && echo $(($1 - 40)) || echo $(($1 - 52))
}

# One verified iwarp-ping run with the options $2..., traced on the
# client's side into $work/trace.pcap; the trace must be clean and its
# FPDUs no longer than $1 octets.
ping_traced() {
	_emss=$1
	shift
	rm -f "$work/trace.pcap"
	port=$(in_b sh -c ". '$top_srcdir/test/testlib.sh'; free_port")
	in_b timeout 60 "$ping" -s -a "$addr_b" -p "$port" -S 100001 "$@" \
		2>"$work/server" &
	server=$!
	pids=$server
	wait_listen "$port"
	in_a env IWARP_TRACE="$work/trace.pcap" IWARP_DEBUG=1 timeout 60 \
		"$ping" -c -a "$addr_b" -p "$port" -S 100001 -C 5 -V "$@" \
		>"$work/client" 2>&1 ||
		fail "$variant $*: ping failed: $(cat "$work/client")"
	wait "$server" || fail "$variant $*: the server failed: $(cat "$work/server")"
	pids=
	grep -q "5 pings of 100001 octets with $addr_b:$port, all verified" \
		"$work/client" || fail "$variant $*: $(cat "$work/client")"
	"$dump" "$work/trace.pcap" >"$work/dump" 2>&1 ||
		fail "$variant $*: iwarp-dump: $(grep -m 3 -i 'violation' "$work/dump")"
	_opts=$*
	# the handshake asked for what the options say, both ways
	_m=$(case "$_opts" in *"--markers on"*) echo 1 ;; *) echo 0 ;; esac)
	_c=$(case "$_opts" in *"--crc on"*) echo 1 ;; *) echo 0 ;; esac)
	grep -q "MPA Request rev 2 M$_m C$_c " "$work/dump" &&
		grep -q "MPA Reply rev 2 M$_m C$_c " "$work/dump" ||
		fail "$variant $_opts: $(grep -m 2 'MPA Re' "$work/dump")"
	set -- $(tail -n 1 "$work/dump")
	[ "$1" = fpdus ] && [ "$2" -gt 100 ] && [ "$4" -eq 0 ] ||
		fail "$variant: trace: $(tail -n 1 "$work/dump")"
	_long=$(awk -v max="$_emss" '$6 == "FPDU" && $7 + 0 > max { print; exit }' \
		"$work/dump")
	[ -z "$_long" ] || fail "$variant: an FPDU over the EMSS $_emss: $_long"
	_top=$(awk '$6 == "FPDU" && $7 + 0 > m { m = $7 + 0 } END { print m + 0 }' \
		"$work/dump")
	[ "$_top" -gt $((_emss / 2)) ] ||
		fail "$variant: the longest FPDU is $_top octets, the EMSS $_emss"
	echo "$variant $_opts: $2 FPDUs traced, clean, the longest $_top octets (EMSS $_emss)"
	# one GSO packet's whole segments at MTU 9000, 1 MiB at 1500
	_writes=$(write_size "$_emss")
	grep -q "established as initiator: .*, writes of $_writes octets" \
		"$work/client" ||
		fail "$variant $_opts: not writes of $_writes octets:" \
			"$(grep -m 1 'established as' "$work/client")"
}

# iwarp-perf's ratio to TCP for test $1 with the options $2...
perf_ratio() {
	_t=$1
	shift
	port=$(in_b sh -c ". '$top_srcdir/test/testlib.sh'; free_port_pair")
	in_b timeout 60 "$perf" -B "$addr_b" -p "$port" "$@" >/dev/null 2>&1 &
	server=$!
	pids=$server
	wait_listen "$port"
	in_a timeout 60 "$perf" -t "$_t" -s 65537 -n 1000 -p "$port" --tcp \
		--json "$@" "$addr_b" >"$work/perf" 2>&1 ||
		fail "$variant $_t $*: iwarp-perf: $(cat "$work/perf")"
	wait "$server" || true
	pids=
	perf_rows_ok "$work/perf"
	jq -r '"\(.gbps) Gbit/s, TCP \(.tcp.gbps), ratio \(.ratio)"' "$work/perf"
}

skipped=
for variant in mtu1500 mtu9000 tbf1g; do
	case $variant in
	mtu9000) mtu=9000 ;;
	*) mtu=1500 ;;
	esac
	# a fresh link: the first SKIPs (77) if it cannot be made
	ns_pair iwl "$mtu"
	# both ways: Read Responses flow back
	if [ "$variant" = tbf1g ] &&
		! { in_a tc qdisc add dev "$if_a" root tbf rate 1gbit \
			burst 256kb latency 50ms 2>"$work/err" &&
		in_b tc qdisc add dev "$if_b" root tbf rate 1gbit \
			burst 256kb latency 50ms 2>"$work/err"; }; then
		echo "$variant: skipped, no tbf: $(cat "$work/err")"
		skipped="$skipped $variant"
		continue
	fi
	e=$(emss "$mtu")
	for crc in off on; do
		for markers in off on; do
			opts="--crc $crc --markers $markers"
			# shellcheck disable=SC2086 # the options are words
			ping_traced "$e" $opts
			for t in send write read; do
				# shellcheck disable=SC2086
				r=$(perf_ratio "$t" $opts)
				echo "$variant CRC $crc markers $markers $t 65537: $r"
			done
		done
	done
done
[ -z "$skipped" ] || { echo "SKIP:$skipped"; exit 77; }
