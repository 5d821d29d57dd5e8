#!/bin/sh
# Wireshark as an independent judge of the MPA framing: a synthetic capture
# of mpa/'s output (markers and CRC on, both directions, revisions 1 and 2)
# must dissect with a Good CRC32 on every FPDU, markers where tshark looks
# for them carrying the FPDUPTRs we placed, and no malformed frame; the only
# complaints allowed are tshark 4.0's two warnings about revision 2.
set -eu

. "$top_srcdir/test/testlib.sh"
need_tshark


./mpa_wire_trace "$work/mpa.pcap" >"$work/expected.txt"
set -- $(tail -n 1 "$work/expected.txt")
fpdus=$2 markers=$4 lead=$6 padcrc=$8
echo "generated: $fpdus FPDUs, $markers markers ($lead before a header, $padcrc between PAD and CRC)"
[ "$fpdus" -gt 0 ] && [ "$lead" -gt 0 ] && [ "$padcrc" -gt 0 ] ||
	fail "the capture lacks a marker placement it should show"

tshark_r "$work/mpa.pcap" -V >"$work/verbose.txt"
good=$(grep -c "(Good CRC32)" "$work/verbose.txt" || true)
bad=$(grep -c "Bad CRC32" "$work/verbose.txt" || true)
echo "tshark: $good Good CRC32, $bad Bad CRC32"
[ "$good" -eq "$fpdus" ] || fail "$good of $fpdus FPDUs have a Good CRC32"
[ "$bad" -eq 0 ] || fail "$bad FPDUs have a bad CRC"

undissected=$(tshark_r "$work/mpa.pcap" -Y 'tcp.len > 0 && !iwarp_mpa' | wc -l)
[ "$undissected" -eq 0 ] || fail "$undissected TCP payloads not dissected as MPA"

tshark_r "$work/mpa.pcap" -Y iwarp_mpa.ulpdulength -T fields -E separator=' ' \
	-e tcp.stream -e tcp.seq -e iwarp_mpa.marker_fpduptr |
	awk '{ print $1, $2, ($3 == "" ? "-" : $3) }' >"$work/got.txt"
head -n -1 "$work/expected.txt" >"$work/want.txt"
diff "$work/want.txt" "$work/got.txt" >"$work/diff.txt" ||
	fail "tshark reads other FPDUPTRs than we placed: $(head -5 "$work/diff.txt")"
echo "tshark: every FPDUPTR where expected ($(wc -l <"$work/got.txt") FPDUs)"

tshark_r "$work/mpa.pcap" -q -z expert >"$work/expert.txt"
if grep -q "^Errors" "$work/expert.txt"; then
	fail "tshark reports errors: $(cat "$work/expert.txt")"
fi
awk '/^Warns/ { w = 1; next } /^[A-Z][a-z]+ \(/ { w = 0 } w && /IWARP|MPA|DDP/' \
	"$work/expert.txt" | grep -v -e "Res field is NOT set to zero" \
	-e "Rev field is NOT set to one" >"$work/warns.txt" || true
[ ! -s "$work/warns.txt" ] || fail "unexpected warnings: $(cat "$work/warns.txt")"
malformed=$(tshark_r "$work/mpa.pcap" -Y '_ws.malformed' | wc -l)
[ "$malformed" -eq 0 ] || fail "$malformed malformed frames"

# The judge must be able to say no: one flipped payload bit, one bad CRC.
./mpa_wire_trace "$work/bad.pcap" --corrupt >/dev/null
bad=$(tshark_r "$work/bad.pcap" -V | grep -c "Bad CRC32" || true)
[ "$bad" -eq 1 ] || fail "a corrupted FPDU gave $bad Bad CRC32 reports, not 1"
echo "tshark: the corrupted capture shows exactly one Bad CRC32"
