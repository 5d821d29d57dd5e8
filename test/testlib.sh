# What the test scripts share; sourced, not run.  Each script gets a work
# directory removed on exit, fail(), and, after need_tshark, tshark_r.

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# A missing tool is a hard error (exit 99), never a skipped test.
need() {
	command -v "$1" >/dev/null 2>&1 ||
		{ echo "$1 not found: install the Debian package $2" >&2; exit 99; }
}

TSHARK=${TSHARK:-tshark}
need_tshark() {
	need "$TSHARK" tshark
}

# tshark on a capture, with absolute TCP sequence numbers and without the
# RPC-over-RDMA heuristic, which misreads Send payloads
tshark_r() {
	_pcap=$1
	shift
	"$TSHARK" --disable-heuristic rpcrdma_iwarp \
		-o tcp.relative_sequence_numbers:FALSE -r "$_pcap" "$@" 2>/dev/null
}

# iwarp-dump with the arguments after $1; fails unless it exits with $1.
# Its output is in $work/out.
run_dump() {
	_want=$1
	shift
	_rc=0
	"$abs_top_builddir/tools/iwarp-dump" "$@" >"$work/out" 2>"$work/err" ||
		_rc=$?
	[ "$_rc" -eq "$_want" ] ||
		fail "iwarp-dump $*: exit $_rc, not $_want: $(grep -m 3 '^violation' "$work/out") $(cat "$work/err")"
}

# The last line of iwarp-dump's summary, "fpdus N violations M", into
# $fpdus and $violations.
totals() {
	set -- $(tail -n 1 "$work/out")
	[ "$#" -eq 4 ] && [ "$1" = fpdus ] && [ "$3" = violations ] ||
		fail "no totals line: $(tail -n 1 "$work/out")"
	fpdus=$2 violations=$4
}

# A TCP port no local socket holds, other than those given, below the
# ephemeral range so that no outgoing connection can take it meanwhile.
free_port() {
	_lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range)
	[ "$_lo" -gt 11024 ] || _lo=32768
	for _ in $(seq 100); do
		_p=$((10000 + $(od -An -N2 -tu2 /dev/urandom) % (_lo - 10000)))
		case " $* " in *" $_p "*) continue ;; esac
		if ! port_taken "$_p"; then
			echo "$_p"
			return
		fi
	done
	fail "no free port below $_lo"
}

# Whether a local socket of any state is bound to port $1.
port_taken() {
	grep -Eqh "^ *[0-9]+: [0-9A-F]+:$(printf '%04X' "$1") " \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# A free port whose successor is free too (iwarp-perf's server takes
# PORT for iWARP and PORT+1 for TCP), other than those given.
free_port_pair() {
	_lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range)
	[ "$_lo" -gt 11024 ] || _lo=32768
	for _ in $(seq 100); do
		_pp=$(free_port "$@")
		[ $((_pp + 1)) -lt "$_lo" ] || continue
		port_taken $((_pp + 1)) || { echo "$_pp"; return; }
	done
	fail "no two free ports in a row"
}

# Until local port $1 (on any local address) has a socket in
# state $2 of /proc/net/tcp or tcp6 (0A listening, 01 a connection it
# accepted); fails after 10 s.
wait_tcp() {
	_hex=$(printf '%04X' "$1")
	_n=0
	until grep -Eqh "^ *[0-9]+: [0-9A-F]+:$_hex [0-9A-F]+:[0-9A-F]+ $2 " \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null; do
		_n=$((_n + 1))
		[ "$_n" -lt 100 ] || fail "127.0.0.1:$1 never reached state $2"
		sleep 0.1
	done
}

# iwarp-perf --json output $1: one JSON object per line, at least one,
# each with every figure its mode measures a positive number: seconds,
# gbps, mmsgps, latency min/avg/p50/p90/p99/max in order (unless the row
# says null: not measured at that end), CPU time (unless null) that is
# not negative (a short run may show none: the kernel counts in ticks)
# and per GB what its seconds and octets make, over a step on the clock
# at least as long as the row's seconds, and with --tcp the same for the
# TCP figures (its step after libiwarp's) and a positive ratio (and p99
# ratio in lat rows; a CPU ratio unless either side has no CPU time).
# Fails naming the first bad row.
perf_rows_ok() {
	need jq jq
	_ok='def pos: type == "number" and . > 0;
	def nonneg: type == "number" and . >= 0;
	def good: (.iterations | pos) and (.bytes | pos) and
		([.seconds, .gbps, .mmsgps] | all(pos)) and
		(.lat_us == null or (.lat_us |
			([.min, .avg, .p50, .p90, .p99, .max] | all(pos)) and
			.min <= .p50 and .p50 <= .p90 and .p90 <= .p99 and
			.p99 <= .max and .min <= .avg and .avg <= .max)) and
		(.cpu == null or (.bytes as $b | .seconds as $s | .cpu |
			(.user_s | nonneg) and (.sys_s | nonneg) and
			(.s_per_gb | nonneg) and
			((.s_per_gb - (.user_s + .sys_s) / ($b / 1e9)) | fabs) <=
				0.001 * .s_per_gb + 1e-6 and
			(.scope == "both" or .scope == "client") and
			(.monotonic_s | length == 2 and .[0] > 0 and
				.[1] >= .[0] + $s - 1e-6)));
	def cpu0: . == null or .s_per_gb == 0;
	type == "object" and good and
		((has("tcp") | not) or ((.tcp | good) and (.ratio | pos) and
			(.cpu == null or .tcp.cpu == null or .slices != null or
			 .tcp.cpu.monotonic_s[0] >= .cpu.monotonic_s[1]) and
			(.mode != "lat" or (.ratio_p99 | pos)) and
			(if (.cpu | cpu0) or (.tcp.cpu | cpu0)
			 then .ratio_cpu == null else (.ratio_cpu | pos) end)))'
	jq -e -s 'length > 0' "$1" >/dev/null 2>&1 ||
		fail "$1 holds no JSON rows: $(head -c 300 "$1")"
	_bad=$(jq -c "select(($_ok) | not)" "$1") ||
		fail "$1 is not JSON: $(head -c 300 "$1")"
	[ -z "$_bad" ] || fail "a figure not positive or out of order: $_bad"
}

# Two network namespaces of this test's own joined by a veth pair, for
# what must not run over loopback: sets ns_a, ns_b, if_a, if_b, addr_a,
# addr_b (198.18.N.1 and .2, the benchmarking range of RFC 2544) and
# removes them on exit (a script with its own EXIT trap calls ns_del in
# it).  $1: a short prefix of the test's.  Says SKIP
# (77) when they cannot be made (not root, no ip, no veth).
ns_pair() {
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: not root: cannot make network namespaces"; exit 77; }
	command -v ip >/dev/null 2>&1 || { echo "SKIP: no ip (iproute2)"; exit 77; }
	ns_a=$1$$a ns_b=$1$$b if_a=v$1$$a if_b=v$1$$b
	_net=$((($$ % 200) + 20))
	addr_a=198.18.$_net.1 addr_b=198.18.$_net.2
	trap 'ns_del; rm -rf "$work"' EXIT
	ip netns add "$ns_a" 2>"$work/err" && ip netns add "$ns_b" 2>>"$work/err" &&
		ip link add "$if_a" netns "$ns_a" type veth peer name "$if_b" \
			netns "$ns_b" 2>>"$work/err" ||
		{ echo "SKIP: cannot make namespaces and a veth pair: $(cat "$work/err")"; exit 77; }
	ip -n "$ns_a" link set lo up
	ip -n "$ns_b" link set lo up
	ip -n "$ns_a" link set "$if_a" up
	ip -n "$ns_b" link set "$if_b" up
	ip -n "$ns_a" addr add "$addr_a/24" dev "$if_a"
	ip -n "$ns_b" addr add "$addr_b/24" dev "$if_b"
}

ns_del() {
	ip netns del "$ns_a" 2>/dev/null || true
	ip netns del "$ns_b" 2>/dev/null || true
}
