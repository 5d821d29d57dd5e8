#!/bin/sh
# The API's trace option (iw_context_attr.trace_path), which IWARP_TRACE
# does not override and whose "" turns tracing off: a context opened with
# it writes its connection to that file, which tshark dissects with a
# Good CRC32 on every FPDU and nothing malformed, and whose TCP ports are
# the connection's own as iw_get_local_addr() and iw_get_peer_addr() give
# them (the server's context, untraced, sees the same two from the other
# end).
set -eu

. "$top_srcdir/test/testlib.sh"
need_tshark
count=8
size=70000 # more than one FPDU per Send
pcap="$work/api.pcap"
# IWARP_TRACE names another file: the client's trace_path takes
# precedence, and the server's "" turns its tracing off
IWARP_TRACE="$work/env.pcap" timeout 60 ./trace_api "$pcap" "$count" \
	"$size" "" >"$work/ports" || fail "trace_api: exit $?"
[ -s "$pcap" ] || fail "no trace written to $pcap"
[ ! -e "$work/env.pcap" ] || fail "IWARP_TRACE was written despite trace_path"
# shellcheck disable=SC2046 # word splitting wanted
set -- $(cat "$work/ports")
[ "$#" -eq 6 ] && [ "$1" = client ] && [ "$4" = server ] ||
	fail "ports: $(cat "$work/ports")"
local_port=$2 peer_port=$3
[ "$5" = "$peer_port" ] && [ "$6" = "$local_port" ] ||
	fail "the server sees other ports: $(cat "$work/ports")"

# every segment of the trace is between those two ports, both ways
tshark_r "$pcap" -T fields -e tcp.srcport -e tcp.dstport | sort -u \
	>"$work/pairs"
printf '%s\t%s\n%s\t%s\n' "$local_port" "$peer_port" "$peer_port" \
	"$local_port" | sort >"$work/want"
cmp -s "$work/pairs" "$work/want" ||
	fail "trace ports $(tr '\t\n' '> ' <"$work/pairs"), connection $local_port>$peer_port"

# and each the right way: the Request and the Sends from the client's port
dirs=$(tshark_r "$pcap" -Y "iwarp_mpa.req or iwarp_rdma.opcode == 0x03" \
	-T fields -e tcp.srcport -e tcp.dstport | sort -u | tr '\t\n' '> ')
[ "$dirs" = "$local_port>$peer_port " ] ||
	fail "the client's frames go $dirs, its connection $local_port>$peer_port"

# every FPDU with a Good CRC32, the Sends' octets all there
tshark_r "$pcap" -V >"$work/v.txt"
fpdus=$(grep -c "CRC check:" "$work/v.txt" || true)
good=$(grep -c "CRC check: .*(Good CRC32)" "$work/v.txt" || true)
[ "$fpdus" -gt "$count" ] || fail "$fpdus FPDUs for $count Sends of $size"
[ "$good" -eq "$fpdus" ] || fail "$good of $fpdus CRCs good"
tshark_r "$pcap" -q -z expert >"$work/expert"
if grep -E "Malformed|Error|Bad" "$work/expert" >&2; then
	fail "tshark complains"
fi
octets=$(tshark_r "$pcap" -Y "iwarp_rdma.opcode == 0x03" -T fields \
	-e iwarp_mpa.ulpdulength | tr ',' '\n' |
	awk '{ n += $1 - 18 } END { print n + 0 }')
[ "$octets" -eq $((count * size)) ] ||
	fail "$octets Send payload octets traced, not $((count * size))"
echo "trace_api: $fpdus FPDUs, all Good CRC32, ports $local_port and $peer_port"
