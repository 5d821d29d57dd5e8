#!/bin/sh
# The library's own trace (IWARP_TRACE), judged by Wireshark: every FPDU of
# pings and bulk transfers in several framings dissects with a Good CRC32,
# markers show up where they were negotiated, and nothing is malformed;
# the only complaints allowed are tshark 4.0's two about revision 2.
# iwarp-dump finds the same FPDUs and no violation.
set -eu

. "$top_srcdir/test/testlib.sh"
need_tshark
tools="$abs_top_builddir/tools"

# judge NAME MARKERS: the trace $work/NAME.pcap
judge() {
	pcap="$work/$1.pcap"
	tshark_r "$pcap" -V >"$work/$1.txt"
	fpdus=$(grep -c "CRC check:" "$work/$1.txt" || true)
	good=$(grep -c "CRC check: .*(Good CRC32)" "$work/$1.txt" || true)
	[ "$fpdus" -gt 0 ] || fail "$1: no FPDU dissected"
	[ "$good" -eq "$fpdus" ] || fail "$1: $good of $fpdus CRCs good"
	markers=$(grep -c "FPDU back pointer" "$work/$1.txt" || true)
	if [ "$2" = on ]; then
		[ "$markers" -gt 0 ] || fail "$1: no markers"
	else
		[ "$markers" -eq 0 ] || fail "$1: $markers markers, none asked"
	fi
	tshark_r "$pcap" -q -z expert >"$work/$1.expert"
	if grep -E "Malformed|Error|Bad" "$work/$1.expert" >&2; then
		fail "$1: tshark complains"
	fi
	grep -E '^ +[0-9]+ +[A-Z]' "$work/$1.expert" |
		grep -vE "Sequence +TCP|(Res|Rev) field is NOT set" >&2 &&
		fail "$1: unexpected expert notes"
	"$tools/iwarp-dump" "$pcap" >"$work/$1.dump" ||
		fail "$1: iwarp-dump: $(grep -m 3 violation "$work/$1.dump")"
	grep -q "^fpdus $fpdus violations 0$" "$work/$1.dump" ||
		fail "$1: iwarp-dump: $(tail -n 1 "$work/$1.dump"), tshark $fpdus"
	echo "$1: $fpdus FPDUs, all good, $markers markers"
}

run() {
	name=$1 markers=$2
	shift 2
	rm -f "$work/$name.pcap"
	IWARP_TRACE="$work/$name.pcap" timeout 120 "$@" >/dev/null ||
		fail "$name: exit $?"
	judge "$name" "$markers"
}

run ping-crc-markers on "$tools/iwarp-ping" --loopback -V -C 10 -S 70000 \
	--crc on --markers on
run ping-crc off "$tools/iwarp-ping" --loopback -V -C 10 -S 70000 --crc on
run ping-rev1 on "$tools/iwarp-ping" --loopback -V -C 10 -S 3000 \
	--mpa-rev 1 --crc on --markers on
run ping-rtr off "$tools/iwarp-ping" --loopback -V -C 10 -S 100 \
	--rtr write --crc on
for t in send write read; do
	run "perf-$t" on "$tools/iwarp-perf" --loopback -t "$t" -s 100000 \
		-n 30 -q 2 --crc on --markers on
done
run perf-small off "$tools/iwarp-perf" --loopback -t send -s 64 -n 2000 \
	--crc on
# RFC 7306: Wireshark decodes Atomic Requests and Responses; Immediate Data
# it names "Unknown 12", without complaint
run perf-atomic off "$tools/iwarp-perf" --loopback -t atomic -n 30 -q 2 \
	--crc on
run perf-write_imm on "$tools/iwarp-perf" --loopback -t write_imm \
	-s 100000 -n 30 -q 2 --crc on --markers on
tshark_r "$work/perf-atomic.pcap" -Y "iwarp_rdma" -T fields \
	-e iwarp_rdma.opcode -e iwarp_rdma.atomic.request_identifier \
	-e iwarp_rdma.atomic.original_request_identifier >"$work/atomic.ops"
grep -q "^0x0a	[0-9]" "$work/atomic.ops" &&
	grep -q "^0x0b		[0-9]" "$work/atomic.ops" ||
	fail "tshark decodes no Atomic Request or Response: $(sort -u "$work/atomic.ops" | head -n 5)"
