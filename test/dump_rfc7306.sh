#!/bin/sh
# iwarp-dump on RFC 7306: live traces of Fetch and Add and of Writes with
# Immediate Data decode clean, each message named with its fields and
# each Atomic Response matched to its request; raw streams forged here
# decode every operation and mask, and each fault seeded in them (an
# unaligned target, an undefined operation, a response to no request or
# to the wrong one, Immediate Data of the wrong length, a message on the
# wrong queue) comes back as its one violation line.
set -eu

. "$top_srcdir/test/testlib.sh"
dump="$abs_top_builddir/tools/iwarp-dump"
perf="$abs_top_builddir/tools/iwarp-perf"

# FPDU lines without frame number and time.
decoded() {
	awk '/ FPDU [0-9]+ ULPDU / { $1 = ""; $2 = ""; sub(/^ +/, ""); print }' "$1"
}

# ---- live traces ------------------------------------------------------------

IWARP_TRACE="$work/atomic.pcap" timeout 60 "$perf" --loopback -t atomic \
	-m lat -n 5 --crc on >/dev/null || fail "perf atomic: exit $?"
run_dump 0 "$work/atomic.pcap"
totals
[ "$violations" -eq 0 ] || fail "atomic trace: $violations violations"
decoded "$work/out" >"$work/atomic.fpdus"
for i in 1 2 3 4 5; do
	grep -q "QN 1 MSN $i MO 0 Atomic Request Fetch and Add request $i target 0x[0-9a-f]\{8\}:0x[0-9a-f]* add 0x1 CRC ok$" \
		"$work/atomic.fpdus" || fail "atomic trace: no request $i"
	grep -q "QN 3 MSN $i MO 0 Atomic Response request $i value 0x$(printf %x $((i - 1))) CRC ok$" \
		"$work/atomic.fpdus" || fail "atomic trace: no response $i"
done
echo "atomic trace: 5 requests, 5 responses in order, no violation"

IWARP_TRACE="$work/imm.pcap" timeout 60 "$perf" --loopback -t write_imm \
	-m bw -s 3000 -n 20 -D 4 >/dev/null || fail "perf write_imm: exit $?"
run_dump 0 "$work/imm.pcap"
totals
[ "$violations" -eq 0 ] || fail "write_imm trace: $violations violations"
n=$(grep -c " Immediate Data 0x[0-9a-f]\{16\} CRC off$" "$work/out" || true)
[ "$n" -eq 20 ] || fail "write_imm trace: $n Immediate Data messages, not 20"
# each follows its Write: the line before it is the Write's last segment
awk '/ Immediate Data 0x/ { if (prev !~ / tagged L .* Write payload/) bad++ }
     / FPDU / { prev = $0 } END { exit bad > 0 }' "$work/out" ||
	fail "write_imm trace: Immediate Data not right after its Write"
echo "write_imm trace: 20 Writes, each followed by its Immediate Data"

# ---- forged raw streams -------------------------------------------------------

# bin HEX: the octets (dash's printf knows octal escapes only)
bin() {
	printf "$(printf '%s' "$1" | awk '{
		h = "0123456789abcdef"; s = tolower($0)
		for (i = 1; i < length(s); i += 2)
			printf "\\%03o", (index(h, substr(s, i, 1)) - 1) * 16 + \
				index(h, substr(s, i + 1, 1)) - 1
	}')"
}

# fpdu ULPDU_HEX: its FPDU, in hex (length, ULPDU, pad, CRC unchecked)
fpdu() {
	_n=$((${#1} / 2))
	printf '%04x%s' "$_n" "$1"
	_pad=$(((4 - (2 + _n) % 4) % 4))
	while [ "$_pad" -gt 0 ]; do printf 00; _pad=$((_pad - 1)); done
	printf 00000000
}

# u_hdr OPCODE QN MSN: an untagged DDP header, L set, RDMAP version 1
u_hdr() {
	printf '41%02x00000000%08x%08x00000000' $((0x40 | $1)) "$2" "$3"
}

# areq MSN AOP ID TO DATA MASK CMP CMASK (64-bit fields as 16 hex digits)
areq() {
	printf '%s%08x%08x00000100%s%s%s%s%s' "$(u_hdr 0xa 1 "$1")" "$2" "$3" \
		"$4" "$5" "$6" "$7" "$8"
}

# aresp MSN ID VALUE
aresp() {
	printf '%s%08x%s' "$(u_hdr 0xb 3 "$1")" "$2" "$3"
}

z=0000000000000000
ones=ffffffffffffffff
bin "$(fpdu "$(areq 1 0 1 0000000000001000 0000000000000005 $z $z $z)")$(
	fpdu "$(areq 2 2 2 0000000000001008 0000000000000009 $ones 0000000000000007 $ones)")$(
	fpdu "$(areq 3 1 3 0000000000001010 00000000aaaaaaaa 00000000ffffffff $z $z)")$(
	fpdu "$(u_hdr 0xd 0 1)1122334455667788")" >"$work/ok.init"
bin "$(fpdu "$(aresp 1 1 000000000000000a)")$(
	fpdu "$(aresp 2 2 0000000000000007)")$(
	fpdu "$(aresp 3 3 0000000012345678)")" >"$work/ok.resp"
run_dump 0 --start fpdu --crc off -v --raw "$work/ok.init" --raw "$work/ok.resp"
totals
[ "$fpdus" -eq 7 ] && [ "$violations" -eq 0 ] ||
	fail "forged clean streams: $fpdus FPDUs, $violations violations"
for line in \
	"QN 1 MSN 1 MO 0 Atomic Request Fetch and Add request 1 target 0x00000100:0x1000 add 0x5 CRC off" \
	"QN 1 MSN 2 MO 0 Atomic Request Compare and Swap request 2 target 0x00000100:0x1008 compare 0x7 swap 0x9 CRC off" \
	"QN 1 MSN 3 MO 0 Atomic Request Swap request 3 target 0x00000100:0x1010 swap 0xaaaaaaaa CRC off" \
	"QN 0 MSN 1 MO 0 Immediate Data with SE 0x1122334455667788 CRC off" \
	"QN 3 MSN 2 MO 0 Atomic Response request 2 value 0x7 CRC off"; do
	grep -q "untagged L $line\$" "$work/out" || fail "no line: $line"
done
grep -q "^    Atomic Request: operation 1 (Swap), request 3, target STag 0x00000100 TO 0x0000000000001010, data 0x00000000aaaaaaaa mask 0x00000000ffffffff, compare 0x0000000000000000 mask 0x0000000000000000$" \
	"$work/out" || fail "-v: no Swap details"
grep -q "^    Atomic Response: request 3, original value 0x0000000012345678$" \
	"$work/out" || fail "-v: no Atomic Response details"
echo "forged streams: every operation decoded, responses matched"

# expect_fault NAME INIT_HEX RESP_HEX VIOLATION: exactly that violation
expect_fault() {
	bin "$2" >"$work/bad.init"
	bin "$3" >"$work/bad.resp"
	run_dump 1 -q --start fpdu --crc off --raw "$work/bad.init" \
		--raw "$work/bad.resp"
	grep -q "^violation: .*: $4\$" "$work/out" ||
		fail "$1: no '$4' in: $(grep '^violation' "$work/out" | head -n 3)"
	[ "$(grep -c '^violation:' "$work/out")" -eq 1 ] ||
		fail "$1: $(grep '^violation' "$work/out" | head -n 3)"
	echo "$1: named"
}

expect_fault "unaligned target" \
	"$(fpdu "$(areq 1 0 1 0000000000001004 0000000000000001 $z $z $z)")" \
	"$(fpdu "$(aresp 1 1 $z)")" \
	"Atomic Request at TO 0x1004: its target is 8-octet aligned (RFC 7306)"
expect_fault "undefined operation" \
	"$(fpdu "$(areq 1 5 1 0000000000001000 0000000000000001 $z $z $z)")" \
	"$(fpdu "$(aresp 1 1 $z)")" \
	"Atomic Request for operation 5, which RFC 7306 does not define"
expect_fault "response to another request" \
	"$(fpdu "$(areq 1 0 1 0000000000001000 0000000000000001 $z $z $z)")" \
	"$(fpdu "$(aresp 1 9 $z)")" \
	"Atomic Response for request 9, the oldest outstanding is 1"
expect_fault "response to no request" "$(fpdu "$(u_hdr 3 0 1)")" \
	"$(fpdu "$(aresp 1 1 $z)")" \
	"Atomic Response with no Atomic Request outstanding"
expect_fault "short Immediate Data" \
	"$(fpdu "$(u_hdr 0xc 0 1)11223344")" "" \
	"Immediate Data of 4 octets after its DDP header, it needs 8"
expect_fault "Atomic Response on QN 1" "" \
	"$(fpdu "$(u_hdr 0xb 1 1)00000001$z")" \
	"Atomic Response on QN 1, expected QN 3"
