#!/bin/sh
# iwarp-ping end to end: verified pings over loopback in several framings,
# a closed port refused fast with the reason, and a markers mismatch that
# fails on both sides with each side's account of the other's MPA frame.
set -eu

ping="$abs_top_builddir/tools/iwarp-ping"
. "$top_srcdir/test/testlib.sh"

# The round-trip line of $1 holds min/avg/max and the 50th, 90th and
# 99th percentiles, in order: min <= p50 <= p90 <= p99 <= max, and the
# mean between min and max.
rtt_ordered() {
	awk '
	/^rtt / {
		n++
		ok = $2 == "min/avg/max" && $3 == "=" && $5 == "us," &&
			$6 == "p50" && $8 == "p90" && $10 == "p99" && $12 == "us"
		split($4, m, "/")
		min = m[1] + 0; avg = m[2] + 0; max = m[3] + 0
		p50 = $7 + 0; p90 = $9 + 0; p99 = $11 + 0
		if (!ok || min <= 0 || min > p50 || p50 > p90 || p90 > p99 ||
			p99 > max || avg < min || avg > max)
			bad = 1
	}
	END { exit !(n == 1 && !bad) }' "$1"
}

for opts in "" "--crc on --markers on" "--mpa-rev 1 --crc on" \
	"--rtr send" "--rtr write" "--rtr read"; do
	# shellcheck disable=SC2086 # word splitting wanted
	timeout 60 "$ping" --loopback -V -C 25 -S 1000 $opts >"$work/out" ||
		fail "loopback $opts: exit $?"
	grep -q "25 pings of 1000 octets with .*, all verified" "$work/out" ||
		fail "loopback $opts: $(cat "$work/out")"
	rtt_ordered "$work/out" || fail "loopback $opts: $(cat "$work/out")"
done

# nothing listens on port 1
start=$(date +%s)
if timeout 20 "$ping" -c -a 127.0.0.1 -p 1 -C 1 2>"$work/err"; then
	fail "a ping to a closed port succeeded"
fi
grep -q "cannot reach 127.0.0.1:1: Connection refused" "$work/err" ||
	fail "closed port: $(cat "$work/err")"
[ $(($(date +%s) - start)) -le 3 ] || fail "the refusal took too long"

# a server without markers, a client that requires them (and CRC, RTR
# write, 7 octets of private data): both sides name the other's frame
port=$(free_port)
timeout 60 "$ping" -s -a 127.0.0.1 -p "$port" --markers off 2>"$work/server" &
server=$!
wait_tcp "$port" 0A
if timeout 20 "$ping" -c -a 127.0.0.1 -p "$port" --markers on --crc on \
	--rtr write --private-data 7 -C 1 2>"$work/client"; then
	fail "markers required by the client were accepted"
fi
grep -q "we asked MPA rev 2, CRC on, markers on, RTR write" "$work/client" ||
	fail "client: $(cat "$work/client")"
grep -q "rejected the connection (R bit): peer MPA rev 2, M0 C1 R1" \
	"$work/client" || fail "client: $(cat "$work/client")"
status=0
wait "$server" || status=$?
server=
[ "$status" -eq 1 ] || fail "server exit $status"
[ "$(wc -l <"$work/server")" -eq 1 ] &&
	grep -q "^iwarp-ping: cannot accept client 127.0.0.1 (we take MPA rev 2 at most, CRC follow, markers off, RTR any): MPA: peer requires markers, which are disabled locally; peer MPA rev 2, M1 C1 R0, enhanced (RFC 6581), 7 octets of private data, IRD 1 ORD 1, peer-to-peer yes, RTR write$" \
		"$work/server" || fail "server: $(cat "$work/server")"
# and a revision 1 Request, which has no RFC 6581 words
port=$(free_port "$port")
timeout 60 "$ping" -s -a 127.0.0.1 -p "$port" --markers off 2>"$work/server" &
server=$!
wait_tcp "$port" 0A
if timeout 20 "$ping" -c -a 127.0.0.1 -p "$port" --mpa-rev 1 --markers on \
	-C 1 2>"$work/client"; then
	fail "markers required by a revision 1 client were accepted"
fi
status=0
wait "$server" || status=$?
server=
[ "$status" -eq 1 ] || fail "server exit $status"
grep -q "; peer MPA rev 1, M1 C0 R0, not enhanced, 0 octets of private data, IRD 0 ORD 0, peer-to-peer no, RTR none$" \
	"$work/server" || fail "rev 1 server: $(cat "$work/server")"
# a server busy with one client turns a second away, saying why
port=$(free_port "$port")
timeout 60 "$ping" -s -a 127.0.0.1 -p "$port" -S 1024 2>"$work/server" &
server=$!
wait_tcp "$port" 0A
timeout 60 "$ping" -c -a 127.0.0.1 -p "$port" -C 0 -S 32 -v \
	>"$work/first" 2>&1 &
first=$!
bg=$first # killed on exit, as the server is
# until the first is served: its pings fill a stdio buffer in a moment
tries=0
until grep -q "^ping data: rdma-ping-" "$work/first"; do
	tries=$((tries + 1))
	[ "$tries" -lt 100 ] || fail "the first client was never served: $(cat "$work/first" "$work/server")"
	sleep 0.1
done
if timeout 20 "$ping" -c -a 127.0.0.1 -p "$port" -C 1 2>"$work/second"; then
	fail "a second client was served"
fi
grep -q 'it said "iwarp-ping: busy with another client"' "$work/second" ||
	fail "second client: $(cat "$work/second")"
kill -INT "$first"
status=0
wait "$first" || status=$?
bg=
[ "$status" -eq 130 ] || fail "the first client ended with $status"
# the client left in the middle of a ping: the server sees its close, or,
# when it was sending right then, the reset the close caused; either way
# it ends, and a reset is named in one line
status=0
wait "$server" || status=$?
server=
[ "$status" -eq 0 ] ||
	{ [ "$status" -eq 1 ] && [ "$(wc -l <"$work/server")" -eq 1 ] &&
		grep -Eq "^iwarp-ping: connection error with client 127\.0\.0\.1: (Broken pipe|Connection reset by peer)$" \
			"$work/server"; } ||
	fail "server: exit $status: $(cat "$work/server")"

# a bad option value is a usage error, said in one line
for bad in "--loopback -C x" "--loopback --crc x" "--loopback -S 22" \
	"--loopback --private-data 513" "--loopback --mpa-rev 3" \
	"--loopback --rtr none,send" "-c"; do
	status=0
	# shellcheck disable=SC2086 # word splitting wanted
	"$ping" $bad 2>"$work/err" || status=$?
	[ "$status" -eq 2 ] && [ "$(wc -l <"$work/err")" -eq 1 ] ||
		fail "$bad: exit $status: $(cat "$work/err")"
done
echo "ping_smoke: loopback verified, refusals named"
