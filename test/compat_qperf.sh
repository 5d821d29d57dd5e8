#!/bin/sh
# Debian's qperf over rdma_cm (-cm1), both ends under iwarp-run: its
# Send/Receive tests, and with RFC 7306 on both ends (iwarp-run
# --rfc7306) its RDMA Write tests, which use Write with Immediate Data,
# and its atomics, including the two that check every value Fetch and
# Add and Compare and Swap return.  Every test must report a positive
# figure.  (Speed is not judged here.)
set -eu

. "$top_srcdir/test/testlib.sh"
run="$abs_top_builddir/tools/run/iwarp-run"
need qperf qperf

# qperf_run NAME IWARP-RUN-OPTIONS QPERF-OPTIONS TEST...: a server, then
# a client running the tests; each must print its figure, above zero
qperf_run() {
	name=$1 opts=$2 qopts=$3
	shift 3
	port=$(free_port)
	# shellcheck disable=SC2086 # the options are words
	server_start 300 "$port" "$run" $opts qperf -lp "$port"
	# shellcheck disable=SC2086
	client_run 240 "$name" "$run" $opts qperf -lp "$port" -cm1 -t 1 \
		$qopts 127.0.0.1 "$@"
	server_stop
	for t in "$@"; do
		awk -v t="$t:" '
		$1 == t { on = 1; next }
		on && /=/ { ok = $3 + 0 > 0; on = 0; seen = 1 }
		END { exit !(seen && ok) }' "$work/client" ||
			fail "$name: $t: $(cat "$work/client")"
	done
	echo "$name: $*"
}

# The bandwidth tests keep 1024 messages in flight and count on an
# InfiniBand receiver's RNR retry when its 1024 receives run out.  iWARP
# has none: a Send or an Immediate Data message with no receive posted
# ends the stream (DDP no buffer), so a server descheduled for longer than
# 1024 messages take would fail.  At the 9-10 GB/s qperf moves here, 4 MiB
# messages make that about 0.4 s; 1 MiB ones made it 0.1 s, which a busy
# 2-core machine sometimes exceeded.
bw="-m 4m"
qperf_run plain "" "" rc_lat
qperf_run plain-bw "" "$bw" rc_bw
qperf_run rfc7306 --rfc7306 "" rc_rdma_write_lat \
	rc_fetch_add_mr rc_compare_swap_mr ver_rc_fetch_add ver_rc_compare_swap
qperf_run rfc7306-bw --rfc7306 "$bw" rc_rdma_write_bw
echo "compat_qperf: qperf's RC tests, Write with Immediate Data and atomics among them"
