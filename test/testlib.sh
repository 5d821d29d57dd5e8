# What the test scripts share; sourced, not run.  Each script gets a work
# directory, fail(), a server in the background and its client
# (server_start, client_run, pair_run), and, after need_tshark, tshark_r.
# On exit, and on HUP, INT or TERM, testlib_cleanup kills what the test
# left running, deletes its namespaces and removes the work directory.

work=$(mktemp -d)
server= # the server server_start runs in the background
bg=	# other timeout(1)s in the background: TERM, which they pass on
pids=	# other processes in the background: KILL (a stopped one too)
netns=	# namespaces made by ns_add, deleted on exit

testlib_cleanup() {
	for _p in $server $bg; do
		kill "$_p" 2>/dev/null || :
		wait "$_p" 2>/dev/null || :
	done
	for _p in $pids; do kill -KILL "$_p" 2>/dev/null || :; done
	for _ns in $netns; do ip netns del "$_ns" 2>/dev/null || :; done
	rm -rf "$work"
}
trap testlib_cleanup EXIT
trap 'exit 1' HUP INT TERM # so that testlib_cleanup runs then too

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

# tshark on a capture, with absolute TCP sequence numbers, without the
# RPC-over-RDMA heuristic, which misreads Send payloads, and with MPA's
# heuristic tried before the dissector of a port: an ephemeral port may
# be another protocol's (48049 is CBSP's, which then takes the stream)
tshark_r() {
	_pcap=$1
	shift
	"$TSHARK" --disable-heuristic rpcrdma_iwarp \
		-o tcp.try_heuristic_first:TRUE \
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
# accepted), in namespace $3 if given; fails after 10 s, saying $4 if
# given and then the end of log $5 if given.
wait_tcp() {
	wait_proc_tcp \
		"^ *[0-9]+: [0-9A-F]+:$(printf '%04X' "$1") [0-9A-F]+:[0-9A-F]+ $2 " \
		100 "${3:-}" "${4:-${3:-127.0.0.1}:$1 never reached state $2}" \
		"${5:-}"
}

# A connection to port $1 established (from a client) in namespace $2,
# else fail with $3 and the tail of $4
wait_connected() {
	wait_proc_tcp \
		"^ *[0-9]+: [0-9A-F]+:[0-9A-F]+ [0-9A-F]+:$(printf '%04X' "$1") 01 " \
		200 "${2:-}" "${3:-nothing connected to port $1}" "${4:-}"
}

# A line of /proc/net/tcp{,6} in namespace $3 that matches $1, within $2
# tenths of a second, else fail with $4 and the tail of $5
wait_proc_tcp() {
	_n=0
	until in_ns "$3" grep -Eqh "$1" /proc/net/tcp /proc/net/tcp6 \
		2>/dev/null; do
		_n=$((_n + 1))
		[ "$_n" -lt "$2" ] || fail "$4${5:+: $(tail -n 5 "$5")}"
		sleep 0.1
	done
}

# $2... in namespace $1, or here when $1 is empty
in_ns() {
	_ns=$1
	shift
	if [ -n "$_ns" ]; then ip netns exec "$_ns" "$@"; else "$@"; fi
}

# ---- a server and its client ---------------------------------------------
# Both under timeout(1) (killed 5 s after SECONDS if they ignore it), their
# output in $work/server and $work/client.  A server still running when
# the test exits is killed (testlib_cleanup).

# server_start SECONDS PORT COMMAND...: COMMAND in the background, its PID
# (timeout's) in $server; returns once it listens on PORT.
server_start() {
	_secs=$1 _port=$2
	shift 2
	timeout -k 5 "$_secs" "$@" >"$work/server" 2>&1 &
	server=$!
	wait_tcp "$_port" 0A "" "the server does not listen on port $_port" \
		"$work/server"
}

# server_end NAME: waits for the server, which must exit 0.
server_end() {
	_st=0
	wait "$server" || _st=$?
	server=
	[ "$_st" -eq 0 ] ||
		fail "$1: server exit $_st: $(tail -n 15 "$work/server")"
}

# server_stop: ends a server that runs until it is killed.
server_stop() {
	kill "$server" 2>/dev/null || :
	wait "$server" 2>/dev/null || :
	server=
}

# client_run SECONDS NAME COMMAND...: COMMAND, which must exit 0; NAME
# names it when it does not (with the end of the server's output, if one
# runs).
client_run() {
	_secs=$1 _name=$2
	shift 2
	timeout -k 5 "$_secs" "$@" >"$work/client" 2>&1 ||
		fail "$_name: client exit $?: $(tail -n 15 "$work/client")${server:+ / server: $(tail -n 5 "$work/server")}"
}

# pair_run SECONDS NAME SERVER CLIENT: a server, then its client, each a
# command line (split into words) to which "-p PORT" is added, PORT a
# free one, left in $port; both must exit 0.
pair_run() {
	port=$(free_port)
	# shellcheck disable=SC2086 # the command lines are words
	server_start "$1" "$port" $3 -p "$port"
	# shellcheck disable=SC2086
	client_run "$1" "$2" $4 -p "$port"
	server_end "$2"
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

# ---- network namespaces ---------------------------------------------------
# A test that must not run over loopback makes namespaces of its own: names
# with its PID (tests run in parallel), addresses in 198.18.0.0/15, the
# benchmarking range of RFC 2544.  It puts what it starts in the background
# into $pids; on exit testlib_cleanup kills those and deletes the
# namespaces.

skip() {
	echo "SKIP: $*"
	exit 77
}

# SKIP (77) unless this test can make network namespaces and veth pairs,
# and with "bridge" a bridge: root, ip(8) and a kernel that has them.
need_netns() {
	[ "$(id -u)" -eq 0 ] || skip "not root: cannot make network namespaces"
	command -v ip >/dev/null 2>&1 || skip "no ip (iproute2)"
	ip netns add "iwprobe$$" 2>"$work/err" ||
		skip "cannot make network namespaces: $(cat "$work/err")"
	_why=
	ip -n "iwprobe$$" link add p0 type veth peer name p1 2>"$work/err" ||
		_why="no veth pairs: $(cat "$work/err")"
	if [ -z "$_why" ] && [ "${1:-}" = bridge ]; then
		ip -n "iwprobe$$" link add br0 type bridge 2>"$work/err" ||
			_why="no bridges: $(cat "$work/err")"
	fi
	ip netns del "iwprobe$$"
	[ -z "$_why" ] || skip "$_why"
}

# Namespace $1 with its loopback up, deleted on exit.
ns_add() {
	case " $netns " in *" $1 "*) ;; *) netns="$netns $1" ;; esac
	ip netns add "$1" 2>"$work/err" || fail "ip netns add $1: $(cat "$work/err")"
	ip -n "$1" link set lo up
}

# Two namespaces joined by a veth pair: ns_pair PREFIX [MTU] sets ns_a
# and ns_b (PREFIX, the PID, a or b), if_a and if_b (their ends of the
# pair, up, with MTU if given; v before the namespace's name, so PREFIX
# is a few letters: an interface's name holds 15), subnet (198.18.N, N
# from the PID) and addr_a and addr_b ($subnet.1 and .2, a /24).  SKIP
# (77) when the test cannot make them.  Called again, it deletes the pair
# and makes it anew (a fresh link per variant); that one failing fails
# the test.
ns_pair() {
	if [ -n "${ns_a:-}" ]; then
		ip netns del "$ns_a" 2>/dev/null || true
		ip netns del "$ns_b" 2>/dev/null || true
	else
		need_netns
	fi
	ns_a=$1$$a ns_b=$1$$b if_a=v$1$$a if_b=v$1$$b
	subnet=198.18.$((($$ % 200) + 20))
	addr_a=$subnet.1 addr_b=$subnet.2
	ns_add "$ns_a"
	ns_add "$ns_b"
	ip link add "$if_a" netns "$ns_a" type veth peer name "$if_b" \
		netns "$ns_b" 2>"$work/err" || fail "no veth pair: $(cat "$work/err")"
	if [ -n "${2:-}" ]; then
		in_a ip link set "$if_a" mtu "$2"
		in_b ip link set "$if_b" mtu "$2"
	fi
	in_a ip link set "$if_a" up
	in_b ip link set "$if_b" up
	in_a ip addr add "$addr_a/24" dev "$if_a"
	in_b ip addr add "$addr_b/24" dev "$if_b"
}

# $@ in namespace A (B) of ns_pair
in_a() { ip netns exec "$ns_a" "$@"; }
in_b() { ip netns exec "$ns_b" "$@"; }

# The most octets one of libiwarp's writes hands TCP on a connection whose
# MSS is $1 (lib/tp_socket.c, tp_write_size()): with jumbo frames one GSO
# packet's whole segments, else 1 MiB.
write_size() {
	if [ "$1" -ge 4096 ] && [ "$1" -lt 16384 ]; then
		echo $(($1 * ((65536 - 320) / $1)))
	else
		echo 1048576
	fi
}
