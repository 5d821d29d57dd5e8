#!/bin/sh
# iwarp-dump must say no, and say where: the synthetic capture of
# mpa_wire_trace (the one tshark_mpa.sh judges) decodes clean, and each
# fault the generator seeds comes back as exactly one violation line naming
# the frame that tshark places the faulty segment in.  TCP trouble
# (reordering, retransmission, overlap) must not change what is decoded;
# a retransmission that differs is named, a hole ends the direction.  A
# peer-to-peer RTR is recognised and Terminates are decoded.
set -eu

. "$top_srcdir/test/testlib.sh"
need_tshark

dump="$abs_top_builddir/tools/iwarp-dump"
data="$top_srcdir/test/data"

# The frames of stream $2 whose segment starts at absolute sequence $3.
frames_at() {
	"$TSHARK" -o tcp.relative_sequence_numbers:FALSE -r "$1" \
		-Y "tcp.stream == $2 && tcp.seq == $3 && tcp.len > 0" \
		-T fields -e frame.number 2>/dev/null
}

# FPDU lines without frame number and time: what was decoded, not when.
decoded() {
	awk '/ FPDU [0-9]+ ULPDU / { $1 = ""; $2 = ""; print }' "$1"
}

# Exactly one violation, and it is line $1 (a grep -x pattern).
only_violation() {
	grep -qx "$1" "$work/out" ||
		fail "no line '$1' in: $(grep '^violation' "$work/out" | head -n 3)"
	[ "$(grep -c '^violation:' "$work/out")" -eq 1 ] ||
		fail "more than one violation: $(grep '^violation' "$work/out" | head -n 3)"
}

./mpa_wire_trace "$work/clean.pcap" >/dev/null
run_dump 0 "$work/clean.pcap"
totals
[ "$fpdus" -eq 1200 ] && [ "$violations" -eq 0 ] ||
	fail "clean trace: $fpdus FPDUs, $violations violations"
decoded "$work/out" >"$work/clean.fpdus"
grep -q " markers [1-9][0-9]* ok CRC ok$" "$work/out" ||
	fail "clean trace: no FPDU with markers and CRC checked"
echo "clean: 1200 FPDUs, no violations"

# seed FAULT: runs the generator with --FAULT; $seed holds its "seeded" line
seed() {
	./mpa_wire_trace "$work/bad.pcap" "--$1" >"$work/gen"
	seed=$(grep "^seeded " "$work/gen") || fail "--$1 seeded nothing"
}

seed corrupt
set -- $seed
frame=$(frames_at "$work/bad.pcap" "$3" "$4")
run_dump 1 -q "$work/bad.pcap"
only_violation "violation: frame $frame: CRC mismatch: wire $5, computed 0x[0-9a-f]\{8\}"
echo "flipped bit: CRC mismatch at frame $frame"

seed corrupt-marker
set -- $seed
frame=$(frames_at "$work/bad.pcap" "$3" "$4")
run_dump 1 -q "$work/bad.pcap"
only_violation "violation: frame $frame: marker at stream offset $5 points $7 back, FPDU starts $6 back"
echo "wrong FPDUPTR: marker at stream offset $5 at frame $frame"

seed bad-msn
set -- $seed
frame=$(frames_at "$work/bad.pcap" "$3" "$4")
run_dump 1 -q "$work/bad.pcap"
only_violation "violation: frame $frame: MSN $5 on QN 0, expected $6"
echo "wrong MSN: MSN $5 where $6 was due at frame $frame"

# the same FPDUs however TCP delivers them
./mpa_wire_trace "$work/reorder.pcap" --reorder >/dev/null
run_dump 0 "$work/reorder.pcap"
totals
[ "$violations" -eq 0 ] || fail "reordered: $violations violations"
decoded "$work/out" | cmp -s - "$work/clean.fpdus" ||
	fail "reordered segments decode differently"
echo "out of order, retransmitted, overlapping: the same 1200 FPDUs"

seed retrans-differs
set -- $seed
frames=$(frames_at "$work/bad.pcap" "$3" "$4")
first=$(echo "$frames" | head -n 1) last=$(echo "$frames" | tail -n 1)
run_dump 1 -q "$work/bad.pcap"
only_violation "violation: frame $last: retransmitted octets differ from frame $first's: 1 octets from TCP stream offset [0-9]*"
totals
[ "$fpdus" -eq 1200 ] || fail "a differing copy lost FPDUs: $fpdus"
echo "a retransmission that differs: named at frame $last, the first copy kept"

seed gap
set -- $seed
run_dump 0 -q "$work/bad.pcap"
after=$("$TSHARK" -o tcp.relative_sequence_numbers:FALSE -r "$work/bad.pcap" \
	-Y "tcp.stream == $3 && tcp.srcport == 41000 && tcp.seq > $4 && tcp.len > 0" \
	-T fields -e frame.number 2>/dev/null | head -n 1)
grep -q "^notice: frame $after: .* octets missing after TCP stream offset [0-9]*; decoding of this direction stops there$" \
	"$work/out" || fail "no notice of the hole at frame $after"
totals
[ "$fpdus" -eq 950 ] && [ "$violations" -eq 0 ] ||
	fail "a hole: $fpdus FPDUs (not 950), $violations violations"
echo "a hole: decoding of that direction stops at frame $after"

# framing lost to a ULPDU_LENGTH no FPDUPTR can span: named at its frame,
# and still named when a hole follows further on
seed too-long
set -- $seed
frame=$(frames_at "$work/bad.pcap" "$3" "$4")
run_dump 1 -q "$work/bad.pcap"
only_violation "violation: frame $frame: ULPDU_LENGTH 65535 at stream offset $5: with markers no FPDUPTR reaches across such an FPDU; framing is lost"
./mpa_wire_trace "$work/bad.pcap" --too-long --gap >/dev/null
run_dump 1 -q "$work/bad.pcap"
only_violation "violation: frame $frame: ULPDU_LENGTH 65535 at stream offset $5: with markers no FPDUPTR reaches across such an FPDU; framing is lost"
grep -q "^notice: frame [0-9]*: .* octets missing after TCP stream offset" \
	"$work/out" || fail "lost framing and a hole: the hole is not named"
echo "lost framing: ULPDU_LENGTH 65535 named at frame $frame, with or without a later hole"

# no handshake: skipped, unless the options say how to frame
./mpa_wire_trace "$work/bare.pcap" --no-handshake >/dev/null
run_dump 0 "$work/bare.pcap"
totals
[ "$fpdus" -eq 0 ] && [ "$(grep -c '^notice: .*connection skipped' "$work/out")" -eq 2 ] ||
	fail "no handshake: $fpdus FPDUs decoded, or no notice"
run_dump 0 --crc on --markers on "$work/bare.pcap"
decoded "$work/out" | cmp -s - "$work/clean.fpdus" ||
	fail "no handshake, --crc on --markers on: other FPDUs than the clean trace's"
run_dump 1 -q --crc on --markers off "$work/bare.pcap"
echo "no handshake: skipped, or decoded as the options say"

# RDMAP on top: the peer-to-peer RTR, and Terminates in both layouts
./mpa_wire_trace "$work/p2p.pcap" --p2p-rtr >/dev/null
run_dump 0 "$work/p2p.pcap"
grep -q "^ *[0-9]* .* FPDU 24 ULPDU 14 tagged L STag 0x00000001 TO 0x0 Write payload 0 (RTR) markers 1 ok CRC ok$" \
	"$work/out" || fail "the Write RTR was not recognised"
seed wrong-rtr
set -- $seed
frame=$(frames_at "$work/bad.pcap" "$3" "$4")
run_dump 1 -q "$work/bad.pcap"
only_violation "violation: frame $frame: the peer-to-peer initiator opens with a zero-length Send, not the zero-length Write RTR"
echo "peer-to-peer: the Write RTR recognised, a Send in its place named at frame $frame"

seed terminate
set -- $seed
frame=$(frames_at "$work/bad.pcap" "$3" "$4")
run_dump 1 "$work/bad.pcap"
only_violation "violation: frame $frame: Terminate control word in byte-swapped (Linux siw) layout: read the RFC way it is layer 0 type 2 code 0x02"
grep -q "^ *$frame .* QN 2 MSN 1 MO 0 Terminate 2/0/0x02 MPA error: CRC error (siw byte order) " \
	"$work/out" || fail "the siw Terminate is not read the siw way"
grep -q " QN 2 MSN 1 MO 0 Terminate 1/2/0x03 DDP untagged buffer error: invalid MSN, MSN range " \
	"$work/out" || fail "the RFC Terminate is not decoded"
"$dump" -v "$work/bad.pcap" | grep -q "^    Terminated DDP header: T 0 L 1 DV 1 opcode 3 (Send) QN 0 MSN 1 MO 0$" ||
	fail "-v does not show the terminated DDP header"
echo "Terminate: the RFC layout decoded, siw's byte-swapped one named at frame $frame"

# raw files: a flipped payload octet in the first FPDU (file offsets 24..63,
# its Send payload from 44 on)
cp "$data/siw-server-rping-crc.i2r.bin" "$work/flipped.bin"
printf '\377' | dd of="$work/flipped.bin" bs=1 seek=50 conv=notrunc 2>/dev/null
run_dump 1 -q --raw "$work/flipped.bin"
only_violation "violation: offset 24: CRC mismatch: wire 0x[0-9a-f]\{8\}, computed 0x[0-9a-f]\{8\}"
echo "raw file: the flipped octet is a CRC mismatch at offset 24"

# Read Responses against the Read Requests of the other file: one aimed at
# another STag (octet 28 is the first response's STag), and five for which
# no Read Request was sent (the requests cut after the third)
cp "$data/siw-lo-read-4k.r2i.bin" "$work/resp.bin"
printf '\125' | dd of="$work/resp.bin" bs=1 seek=28 conv=notrunc 2>/dev/null
run_dump 1 -q --raw "$data/siw-lo-read-4k.i2r.bin" --raw "$work/resp.bin"
only_violation "violation: offset 24: Read Response to STag 0x55806c00, the Read Request named sink STag 0x15806c00"
head -c $((24 + 3 * 52)) "$data/siw-lo-read-4k.i2r.bin" >"$work/req3.bin"
run_dump 1 -q --raw "$work/req3.bin" --raw "$data/siw-lo-read-4k.r2i.bin"
[ "$(grep -c '^violation: offset [0-9]*: Read Response with no Read Request outstanding$' "$work/out")" -eq 5 ] ||
	fail "unanswered Read Responses: $(grep '^violation' "$work/out" | head -n 3)"
echo "raw files: a Read Response to the wrong STag, and five without a request"

# untagged MO: one Send of three segments whose second says MO 6, not 2,
# and whose third goes on from there (MO 8); then the next Send from MO 0.
# One slip, one violation.  Each FPDU: ULPDU_LENGTH 20, DDP control (L in
# $1), RDMAP Send, QN 0, MSN $2, MO $3 (octal), payload "ab", pad, CRC off.
send_segment() {
	printf "\\000\\024\\$1\\103\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\$2\\000\\000\\000\\$3ab\\000\\000\\000\\000\\000\\000"
}
{
	send_segment 001 001 000
	send_segment 001 001 006
	send_segment 101 001 010
	send_segment 101 002 000
} >"$work/mo.bin"
run_dump 1 -q --start fpdu --crc off --markers off --raw "$work/mo.bin"
only_violation "violation: offset 28: MO 6 on QN 0 MSN 1, expected 2 (the octets of the message so far)"
echo "raw file: a wrong MO named once, the segments after it followed"

# peer-to-peer with a Write RTR agreed (siw's handshake), and the initiator
# opens with a Read Request for 4096 octets instead (ULPDU_LENGTH 46, QN 1,
# MSN 1, sink 0x2500:0x1000, source 0x2a00:0, CRC off)
cp "$data/siw-mpa-v2-p2p-write.i2r.bin" "$work/p2p-read.bin"
printf '\000\056\101\101\000\000\000\000\000\000\000\001\000\000\000\001\000\000\000\000\000\000\045\000\000\000\000\000\000\000\020\000\000\000\020\000\000\000\052\000\000\000\000\000\000\000\000\000\000\000\000\000' \
	>>"$work/p2p-read.bin"
run_dump 1 -q --raw "$work/p2p-read.bin" --raw "$data/siw-mpa-v2-p2p-write.r2i.bin"
only_violation "violation: offset 24: the peer-to-peer initiator opens with a Read Request for 4096 octets, not the zero-length Write RTR"
echo "raw files: a Read Request where the Write RTR was due, named with its size"
