#!/bin/sh
# Debian's perftest over rdma_cm (-R, which iWARP needs): ib_send_bw,
# ib_write_bw, ib_read_bw, ib_send_lat, ib_write_lat and ib_read_lat,
# both ends under iwarp-run, the bandwidth tests on two QPs too; and with
# RFC 7306 on both ends (iwarp-run --rfc7306) ib_atomic_bw and
# ib_atomic_lat, Fetch and Add and Compare and Swap.  Every run must end
# well on both sides and report the size and count asked for, with a
# positive figure.  (Speed is not judged here.)
#
# perftest's servers take no listening address (Debian's perftest 4.5
# loses --source_ip's string), so they listen on the wildcard address;
# every client connects to 127.0.0.1.
set -eu

. "$top_srcdir/test/testlib.sh"
run="$abs_top_builddir/tools/run/iwarp-run"
for t in ib_send_bw ib_write_bw ib_read_bw ib_send_lat ib_write_lat \
	ib_read_lat ib_atomic_bw ib_atomic_lat; do
	need "$t" perftest
done

iters=500

# perftest's result line in $1 (the one after the "#bytes" header) for
# size $2: the size, $3 iterations ($iters unless given) and a positive
# average (bandwidth tests, 4th field) or minimum latency (latency tests,
# 3rd field).
result_ok() {
	awk -v size="$2" -v n="${3:-$iters}" '
	/#bytes/ { hdr = 1; lat = /t_min/; next }
	hdr && NF >= 5 {
		v = lat ? $3 : $4
		ok = $1 == size && $2 == n && v + 0 > 0
		hdr = 0; rows++
	}
	END { exit !(rows == 1 && ok) }' "$1"
}

# $1: server command, $2: client command, $3: name
pair() {
	pair_run 120 "$3" "$1" "$2"
}

for t in send write read; do
	for m in bw lat; do
		pt=ib_${t}_$m
		for size in 1 4096 65536; do
			[ "$m" = lat ] && [ "$size" -eq 65536 ] && continue
			opts="-R -s $size -n $iters"
			pair "$run $pt $opts" "$run $pt $opts 127.0.0.1" \
				"$pt -s $size"
			result_ok "$work/client" "$size" ||
				fail "$pt -s $size: $(tail -n 5 "$work/client")"
		done
		[ "$m" = bw ] || continue
		# two QPs: perftest counts the iterations of both
		opts="-R -q 2 -s 4096 -n $iters"
		pair "$run $pt $opts" "$run $pt $opts 127.0.0.1" "$pt -q 2"
		result_ok "$work/client" 4096 $((2 * iters)) ||
			fail "$pt -q 2: $(tail -n 5 "$work/client")"
	done
done
# RFC 7306: perftest's atomic tests, which an iWARP device could not run
for m in bw lat; do
	for a in FETCH_AND_ADD CMP_AND_SWAP; do
		opts="-R -A $a -n $iters"
		pair "$run --rfc7306 ib_atomic_$m $opts" \
			"$run --rfc7306 ib_atomic_$m $opts 127.0.0.1" \
			"ib_atomic_$m -A $a"
		result_ok "$work/client" 8 ||
			fail "ib_atomic_$m -A $a: $(tail -n 5 "$work/client")"
	done
done
echo "compat_perftest: six perftest tests at up to three sizes, the bandwidth tests on two QPs, and both atomic tests with both atomics"
