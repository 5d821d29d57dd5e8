#!/bin/sh
# iwarp-dump reads what captures come as: the synthetic Ethernet capture of
# mpa_wire_trace rewritten as pcapng, with a VLAN tag, as Linux cooked
# (v1 and v2), raw IP and BSD loopback must decode to exactly the same
# output.  Usage errors and unreadable input exit with 2.
set -eu

. "$top_srcdir/test/testlib.sh"
need_tshark
EDITCAP=${EDITCAP:-editcap}
need "$EDITCAP" tshark

dump="$abs_top_builddir/tools/iwarp-dump"

./mpa_wire_trace "$work/eth.pcap" >/dev/null
"$dump" "$work/eth.pcap" >"$work/eth.out" || fail "Ethernet: exit $?"
grep -q "^fpdus 1200 violations 0$" "$work/eth.out" ||
	fail "Ethernet: $(tail -n 1 "$work/eth.out")"

"$EDITCAP" -F pcapng "$work/eth.pcap" "$work/eth.pcapng"
for link in pcapng vlan sll sll2 raw null; do
	if [ "$link" = pcapng ]; then
		file="$work/eth.pcapng"
	else
		file="$work/$link.pcap"
		./pcap_relink "$work/eth.pcap" "$file" "$link"
	fi
	# tshark must read the rewritten file as the original, too
	n=$("$TSHARK" --disable-heuristic rpcrdma_iwarp -r "$file" -T fields \
		-e iwarp_mpa.crc_check 2>/dev/null | tr ',' '\n' | grep -c . || true)
	[ "$n" -eq 1200 ] || fail "$link: tshark finds $n FPDUs, not 1200"
	"$dump" "$file" >"$work/$link.out" || fail "$link: exit $?"
	cmp -s "$work/eth.out" "$work/$link.out" ||
		fail "$link: $(diff "$work/eth.out" "$work/$link.out" | head -n 5)"
	echo "$link: the same 1200 FPDUs as over Ethernet"
done

# usage and input errors: exit 2 and a word on stderr
expect_2() {
	rc=0
	"$dump" "$@" >/dev/null 2>"$work/err" || rc=$?
	[ "$rc" -eq 2 ] && [ -s "$work/err" ] ||
		fail "iwarp-dump $*: exit $rc, stderr '$(cat "$work/err")'"
}
expect_2
expect_2 "$work/missing.pcap"
expect_2 --crc maybe "$work/eth.pcap"
expect_2 --start fpdu "$work/eth.pcap"
expect_2 --raw "$work/missing.bin"
expect_2 "$work/eth.pcap" "$work/eth.pcap"
echo "not a capture" >"$work/text.pcap"
expect_2 "$work/text.pcap"
"$dump" --help | grep -q "^usage: iwarp-dump" || fail "--help says no usage"
echo "usage errors and unreadable input: exit 2"
