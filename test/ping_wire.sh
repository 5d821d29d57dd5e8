#!/bin/sh
# iwarp-ping's advertisements on the wire, as librdmacm's rping lays out
# struct rping_rdma_info: a Send of 16 octets, buf (64 bits), rkey (32)
# and size (32), each big-endian.  Wireshark reads the Send's payload as
# raw octets and the server's RDMA Read Request and RDMA Write headers in
# their own fields; each advertisement must hold, octet for octet, the
# TO and STag that the next Read Request (start buffer) or Write (sink)
# uses, and the size given with -S.  Both ends of iwarp-ping agreeing on
# some other order would pass every ping and fail here.
set -eu

. "$top_srcdir/test/testlib.sh"
need_tshark
size=1000
count=3
IWARP_TRACE="$work/ping.pcap" timeout 60 \
	"$abs_top_builddir/tools/iwarp-ping" --loopback -V -C "$count" \
	-S "$size" --crc on >"$work/out" || fail "iwarp-ping: exit $?"

# one line per RDMAP message: port, opcode, Send payload, Read Request
# source STag / TO / size, tagged STag / TO
tshark_r "$work/ping.pcap" -Y iwarp_rdma -T fields \
	-e tcp.srcport -e iwarp_rdma.opcode -e data.data \
	-e iwarp_rdma.srcstag -e iwarp_rdma.srcto -e iwarp_rdma.rdmardsz \
	-e iwarp_ddp.stag -e iwarp_ddp.tagged_offset >"$work/fields"
[ -s "$work/fields" ] || fail "tshark found no RDMAP message"

# hex digits without 0x, lower case, N wide
awk -F "\t" -v size="$size" -v count="$count" '
function hex(v, n) {
	sub(/^0x/, "", v)
	v = tolower(v)
	while (length(v) < n)
		v = "0" v
	return v
}
# the last Send from the other end than $1: the advertisement it answers
function advert(port,   p) {
	for (p in last)
		if (p != port)
			return last[p]
	return ""
}
{
	port = $1; op = $2
	if (op ~ /,/) {
		print "several FPDUs in one traced segment: " $0
		bad = 1
		next
	}
	if (op == "0x03") {
		last[port] = $3
		# an advertisement is 16 octets; the server answers with 16 too
		if (length($3) != 32) {
			print "a Send of " length($3) / 2 " octets: " $0
			bad = 1
		}
	} else if (op == "0x01") {
		want = hex($5, 16) hex($4, 8) hex(sprintf("%x", size), 8)
		if ($6 != size || advert(port) != want) {
			print "Read Request " $0 " after advertisement " \
				advert(port) ", want " want
			bad = 1
		}
		reads++
	} else if (op == "0x00") {
		want = hex($8, 16) hex($7, 8) hex(sprintf("%x", size), 8)
		if (advert(port) != want) {
			print "Write to STag " $7 " TO " $8 " after advertisement " \
				advert(port) ", want " want
			bad = 1
		}
		writes++
	}
}
END {
	if (reads != count || writes != count) {
		print reads + 0 " Read Requests and " writes + 0 \
			" Writes for " count " pings"
		bad = 1
	}
	exit bad
}' "$work/fields" >"$work/verdict" ||
	fail "$(cat "$work/verdict")"
echo "ping_wire: $count pings, each advertisement big-endian buf/rkey/size"
