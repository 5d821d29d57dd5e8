#!/bin/sh
# iwarp-dump on real siw traffic (data/captures, from the siw-peer runs):
# every capture decodes with exit 0 and no violation, and iwarp-dump finds
# the FPDUs tshark finds, at the same frames.  The raw stream files cut from
# that traffic decode cleanly as well, each direction to the FPDU count
# data/siw-fixtures.txt records.
set -eu

. "$top_srcdir/test/testlib.sh"
need_tshark

data="$top_srcdir/test/data"
n=0
for pcap in "$data"/captures/*.pcap; do
	name=$(basename "$pcap" .pcap)
	run_dump 0 "$pcap"
	totals
	[ "$violations" -eq 0 ] || fail "$name: $violations violations"
	# tshark gives each FPDU one CRC field: iwarp_mpa.crc when CRC is
	# off, iwarp_mpa.crc_check when it is on (counting only the first
	# misses the FPDUs of CRC connections)
	want=$(tshark_r "$pcap" -T fields -e iwarp_mpa.crc \
		-e iwarp_mpa.crc_check | tr ',\t' '\n\n' | grep -c . || true)
	[ "$fpdus" -eq "$want" ] ||
		fail "$name: iwarp-dump reports $fpdus FPDUs, tshark $want"
	# one frame number per FPDU, both ways
	tshark_r "$pcap" -Y iwarp_mpa.ulpdulength -T fields -e frame.number \
		-e iwarp_mpa.ulpdulength |
		awk '{ n = split($2, l, ","); for (i = 0; i < n; i++) print $1 }' \
			>"$work/tshark.frames"
	awk '$1 ~ /^[0-9]+$/ && / FPDU [0-9]+ ULPDU / { print $1 }' \
		"$work/out" >"$work/dump.frames"
	cmp -s "$work/tshark.frames" "$work/dump.frames" ||
		fail "$name: FPDUs at other frames than tshark's: $(diff "$work/tshark.frames" "$work/dump.frames" | head -n 5)"
	echo "$name: $fpdus FPDUs at tshark's frames, no violations"
	n=$((n + 1))
done
[ "$n" -eq 7 ] || fail "$n captures in $data/captures, not 7"

# siw leaves stale octets in some PADs: a warning, a violation with --strict
run_dump 0 "$data/captures/perftest-ib_send_bw-4k-lo.pcap"
grep -q "^warning: frame 14: 2 pad octets are not zero" "$work/out" ||
	fail "the nonzero pad of frame 14 went unnoticed"
run_dump 1 --strict "$data/captures/perftest-ib_send_bw-4k-lo.pcap"
grep -q "^violation: frame 14: 2 pad octets are not zero" "$work/out" ||
	fail "--strict did not make the pad a violation"
echo "nonzero PAD from siw: a warning, with --strict a violation"

# Both directions of each connection cut into raw files, initiator first.
# "NAME: FPDUs N" lines of the summary give the count per direction.
dir_fpdus() {
	sed -n "s/^  $1: FPDUs \([0-9]*\),.*/\1/p" "$work/out"
}
n=0
while read -r name i2r r2i source; do
	case $name in "#"* | "") continue ;; esac
	run_dump 0 --raw "$data/$name.i2r.bin" --raw "$data/$name.r2i.bin"
	totals
	[ "$violations" -eq 0 ] || fail "raw $name: $violations violations"
	[ "$fpdus" -eq $((i2r + r2i)) ] ||
		fail "raw $name: $fpdus FPDUs, $source has $((i2r + r2i))"
	if [ "$fpdus" -gt 0 ]; then
		[ "$(dir_fpdus "$name.i2r.bin")" = "$i2r" ] &&
			[ "$(dir_fpdus "$name.r2i.bin")" = "$r2i" ] ||
			fail "raw $name: FPDUs per direction are not $i2r and $r2i"
	fi
	n=$((n + 1))
done <"$data/siw-fixtures.txt"
[ "$n" -ge 18 ] || fail "only $n fixtures listed"
echo "raw files: $n connections decode to siw-fixtures.txt's counts"

# one direction alone: the CRC is on because its frame's C bit says so
run_dump 0 --raw "$data/siw-server-rping-crc.r2i.bin"
totals
[ "$fpdus" -eq 2 ] && [ "$(grep -c ' CRC ok$' "$work/out")" -eq 2 ] ||
	fail "the Reply side alone: $(cat "$work/out")"
# FPDUs without their MPA frame, framing from the options
tail -c +25 "$data/siw-server-rping-crc.i2r.bin" >"$work/fpdus.bin"
run_dump 0 --raw "$work/fpdus.bin" --start fpdu --crc on
totals
[ "$fpdus" -eq 2 ] && [ "$(grep -c ' CRC ok$' "$work/out")" -eq 2 ] ||
	fail "FPDUs without a frame: $(cat "$work/out")"
echo "raw files: one direction alone, and FPDUs without a frame"
