#!/bin/sh
# What iwarp-dump prints, against Wireshark's reading of the same siw
# captures (data/captures): the -x hex dump of each ULPDU is the FPDU's
# octets on the wire; the per-opcode counts of each direction's summary
# are tshark's; every MPA Request and Reply line (revision, M, C, R, H,
# RFC 6581 IRD/ORD, peer-to-peer and RTR bits, private data) is what
# tshark's fields and the RFC 6581 words in its private data say, and
# lines of frames whose values are known are checked as written.
set -eu

. "$top_srcdir/test/testlib.sh"
need_tshark
data="$top_srcdir/test/data/captures"

# awk (mawk too) functions: a hex number's value, a bit of a value
hexval='function hexval(s,   i, v) {
	s = tolower(s)
	sub(/^0x/, "", s)
	for (i = 1; i <= length(s); i++)
		v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
	return v + 0
}
function bit(v, b) { return int(v / b) % 2 }'

# -x: rping over siw on lo, one FPDU per TCP segment, CRC off and no
# markers: each dump is the segment's octets after the 2-octet ULPDU
# length, for ULPDU length octets
pcap="$data/rping-lo.pcap"
run_dump 0 "$pcap"
if grep -Eq '^    [0-9a-f]{4}  ' "$work/out"; then
	fail "a hex dump without -x"
fi
run_dump 0 -x "$pcap"
# frame, then the hex digits of its dump, one line per FPDU
awk "$hexval"'
/^ *[0-9]+ +[0-9.]+ .* FPDU [0-9]+ ULPDU / {
	if (frame != "") print frame, hex
	frame = $1; hex = ""; off = 0
	next
}
/^    [0-9a-f][0-9a-f][0-9a-f][0-9a-f]  / {
	if (hexval(substr($0, 5, 4)) != off) {
		print "offset " substr($0, 5, 4) " in frame " frame > "/dev/stderr"
		exit 1
	}
	h = substr($0, 11, 49)
	gsub(/ /, "", h)
	hex = hex h
	off += 16
}
END { if (frame != "") print frame, hex }' "$work/out" >"$work/dump.hex" ||
	fail "-x: hex lines out of order"
tshark_r "$pcap" -Y iwarp_mpa.fpdu -T fields -e frame.number \
	-e iwarp_mpa.ulpdulength -e tcp.payload |
	awk '$2 ~ /,/ { print "several FPDUs in frame " $1; exit 1 }
	{ print $1, substr($3, 5, 2 * $2) }' >"$work/tshark.hex" ||
	fail "$(cat "$work/tshark.hex")"
[ "$(wc -l <"$work/dump.hex")" -eq 35 ] ||
	fail "-x: $(wc -l <"$work/dump.hex") FPDUs dumped, not 35"
cmp -s "$work/dump.hex" "$work/tshark.hex" ||
	fail "-x differs from the wire: $(diff "$work/tshark.hex" "$work/dump.hex" | head -n 4 | cut -c1-160)"
echo "-x: 35 ULPDUs, octet for octet as on the wire"

# two traces of our own beside siw's, for values the siw captures lack:
# IRD unlike ORD (a Read test's depth), RTR Send and Read offered and
# Read chosen, 20 octets of private data, markers and CRC
tools="$abs_top_builddir/tools"
IWARP_TRACE="$work/gen-ping.pcap" timeout 60 "$tools/iwarp-ping" --loopback \
	-C 2 --rtr send,read --private-data 20 --crc on --markers on \
	>/dev/null || fail "iwarp-ping: exit $?"
IWARP_TRACE="$work/gen-perf.pcap" timeout 60 "$tools/iwarp-perf" --loopback \
	-t read -D 8 -n 20 >/dev/null || fail "iwarp-perf: exit $?"

# opcode names as iwarp-dump writes them
opnames='BEGIN {
	op["0x00"] = "Write"; op["0x01"] = "Read Request"
	op["0x02"] = "Read Response"; op["0x03"] = "Send"
	op["0x04"] = "Send with Invalidate"; op["0x05"] = "Send with SE"
	op["0x06"] = "Send with SE and Invalidate"; op["0x07"] = "Terminate"
}'
n=0
for pcap in "$data"/*.pcap "$work"/gen-*.pcap; do
	name=$(basename "$pcap" .pcap)
	run_dump 0 "$pcap"
	# the summary: "  A → B: FPDUs N, ... (Send 10, Write 5), ..."
	awk '/^  .* → .*: FPDUs [0-9]+,/ {
		dir = $0
		sub(/^  /, "", dir)
		sub(/: FPDUs .*/, "", dir)
		s = $0
		if (!sub(/^[^(]*\(/, "", s))
			next
		sub(/\).*/, "", s)
		k = split(s, part, ", ")
		for (i = 1; i <= k; i++) {
			m = match(part[i], / [0-9]+$/)
			print dir "|" substr(part[i], 1, m - 1) "|" substr(part[i], m + 1)
		}
	}' "$work/out" | sort >"$work/dump.ops"
	tshark_r "$pcap" -Y iwarp_rdma -T fields -e ip.src -e tcp.srcport \
		-e ip.dst -e tcp.dstport -e iwarp_rdma.opcode |
		awk -F '\t' "$opnames"'
		{
			k = split($5, o, ",")
			for (i = 1; i <= k; i++)
				c[$1 ":" $2 " → " $3 ":" $4 "|" op[o[i]]]++
		}
		END { for (x in c) print x "|" c[x] }' | sort >"$work/tshark.ops"
	[ -s "$work/tshark.ops" ] || [ "$name" = host-connect-mpa-variants ] ||
		fail "$name: tshark found no RDMAP message"
	cmp -s "$work/dump.ops" "$work/tshark.ops" ||
		fail "$name: opcode counts: $(diff "$work/tshark.ops" "$work/dump.ops" | head -n 6)"
	n=$((n + $(wc -l <"$work/dump.ops")))
done
[ "$n" -ge 15 ] || fail "only $n opcode counts compared"
echo "summaries: $n opcode counts per direction, as tshark counts them"

# Every MPA Request and Reply of revision 1 or 2, as iwarp-dump prints it
# (dump_print_frame), rebuilt from tshark's fields; IRD/ORD and the
# peer-to-peer and RTR bits come from the RFC 6581 words at the head of
# the private data, which tshark 4.0 leaves undecoded.
rtr_words='BEGIN {
	split("none Send Write Send/Write Read Send/Read Write/Read Send/Write/Read", rtr, " ")
}'
frames=0
for pcap in "$data"/*.pcap "$work"/gen-*.pcap; do
	name=$(basename "$pcap" .pcap)
	run_dump 0 "$pcap"
	sed -n 's/^ *\([0-9][0-9]*\) .* \(MPA \(Request\|Reply\) rev [12] .*\)/\1 \2/p' \
		"$work/out" >"$work/dump.mpa"
	tshark_r "$pcap" -Y "(iwarp_mpa.req or iwarp_mpa.rep) and iwarp_mpa.rev <= 2" \
		-T fields -e frame.number -e iwarp_mpa.key.req \
		-e iwarp_mpa.marker_flag -e iwarp_mpa.crc_flag \
		-e iwarp_mpa.rej_flag -e iwarp_mpa.res -e iwarp_mpa.rev \
		-e iwarp_mpa.pdlength -e iwarp_mpa.privatedata |
		awk -F '\t' "$hexval$rtr_words"'
		{
			h = bit(hexval($6), 16)
			line = $1 " MPA " ($2 != "" ? "Request" : "Reply") " rev " $7 \
				" M" $3 " C" $4 " R" $5 " H" h
			pd = $9; len = $8
			if ($7 == 2 && h) {
				i = hexval(substr(pd, 1, 4)); o = hexval(substr(pd, 5, 4))
				line = line " IRD " i % 16384 " ORD " o % 16384
				p2p = bit(i, 32768)
				bits = bit(i, 16384) + 2 * bit(o, 32768) + 4 * bit(o, 16384)
				if (p2p || bits)
					line = line (p2p ? " peer-to-peer" : "") " RTR " rtr[bits + 1]
				pd = substr(pd, 9); len -= 4
			}
			line = line " pd " len
			if (len)
				line = line " " substr(pd, 1, 32) (len > 16 ? "..." : "")
			if ($5)
				line = line " rejected"
			print line
		}' >"$work/tshark.mpa"
	cmp -s "$work/dump.mpa" "$work/tshark.mpa" ||
		fail "$name: MPA frames: $(diff "$work/tshark.mpa" "$work/dump.mpa" | head -n 6)"
	frames=$((frames + $(wc -l <"$work/dump.mpa")))
	[ "$name" = host-connect-mpa-variants ] && cp "$work/out" "$work/variants"
	[ "$name" = perftest-ib_read_bw-4k-lo ] && cp "$work/out" "$work/read"
	case $name in gen-*) cp "$work/out" "$work/$name" ;; esac
done
[ "$frames" -ge 34 ] || fail "only $frames MPA frames compared"

# frames whose values are known (see siw-peer's runs): as written
known() {
	grep -q "^ *$2 .* → .* $3\$" "$work/$1" ||
		fail "frame $2 of $1: $(grep "^ *$2 " "$work/$1")"
}
known variants 14 "MPA Request rev 2 M0 C1 R0 H1 IRD 4 ORD 4 pd 0"
known variants 26 "MPA Reply rev 2 M0 C0 R1 H1 IRD 0 ORD 0 pd 0 rejected"
known variants 45 "MPA Request rev 1 M0 C1 R0 H0 pd 5 68656c6c6f"
known variants 55 "MPA Request rev 1 M1 C1 R0 H0 pd 0"
known variants 66 "MPA Request rev 2 M0 C0 R0 H1 IRD 1 ORD 1 peer-to-peer RTR Write pd 0"
known variants 68 "MPA Reply rev 2 M0 C0 R0 H1 IRD 1 ORD 1 peer-to-peer RTR Write pd 0"
known variants 76 "MPA Request rev 2 M0 C0 R0 H0 pd 0"
known read 21 "MPA Request rev 2 M0 C0 R0 H1 IRD 128 ORD 128 pd 0"
known gen-ping 4 "MPA Request rev 2 M1 C1 R0 H1 IRD 1 ORD 1 peer-to-peer RTR Send/Read pd 20 6162636465666768696a6b6c6d6e6f70..."
known gen-ping 5 "MPA Reply rev 2 M1 C1 R0 H1 IRD 1 ORD 1 peer-to-peer RTR Read pd 20 6162636465666768696a6b6c6d6e6f70..."
known gen-perf 4 "MPA Request rev 2 M0 C0 R0 H1 IRD 1 ORD 8 pd 48 49575046.*"
known gen-perf 5 "MPA Reply rev 2 M0 C0 R0 H1 IRD 8 ORD 1 pd 32 49575046.*"
# -v spells out the words of the peer-to-peer Request
run_dump 0 -v "$data/host-connect-mpa-variants.pcap"
grep -q "^    MPA: IRD word 0x8001 (A 1 B 0 IRD 1), ORD word 0x8001 (C 1 D 0 ORD 1)$" \
	"$work/out" || fail "-v: no RFC 6581 words of frame 66"
echo "MPA frames: $frames decoded as tshark reads them, known ones as written"
