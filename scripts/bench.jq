# scripts/bench's summary: the raw rows (slurped) and the table's rows
# ($spec[0]) make results.json.  Every figure of a row is the median over
# the rounds of that row's figure in each round; each round's ratio comes
# from one iwarp-perf run, which measured both sides.  Each mode also
# keeps its rounds' lowest and highest value, which show how far the
# rounds spread.

def median:
	map(select(. != null)) | sort |
	if length == 0 then null
	elif length % 2 == 1 then .[length / 2 | floor]
	else (.[length / 2 - 1] + .[length / 2]) / 2 end;

. as $raw |
def one($id; $mode; $run):
	[$raw[] | select(.bench.id == $id and .bench.progress == $mode and
		.bench.run == $run and (.failed | not))] | first;
def rounds: [$raw[].bench.run] | unique;

# libiwarp's side and TCP's of an absolute figure
def side($row; $abs):
	if $row == null then [null, null]
	elif $abs == "p50" then [$row.lat_us.p50, $row.tcp.lat_us.p50]
	elif $abs == "p99" then [$row.lat_us.p99, $row.tcp.lat_us.p99]
	elif $abs == "gbps" then [$row.gbps, $row.tcp.gbps]
	elif $abs == "mmsgps" then [$row.mmsgps, $row.tcp.mmsgps]
	elif $abs == "cpu" then [$row.cpu.s_per_gb, $row.tcp.cpu.s_per_gb]
	else [null, null] end;

# one round's figure of a table row
def value($spec; $mode; $run):
	one($spec.run; $mode; $run) as $row |
	if $spec.value == "send_over_write" then
		# each rate against TCP's in its own run: the two runs are
		# minutes apart, and the machine's speed drifts between them
		one("rate_write_64"; $mode; $run) as $w |
		if $row == null or $w == null or
		   ([$row.tcp.mmsgps, $w.mmsgps, $w.tcp.mmsgps] |
		    any(. == null or . == 0)) then null
		else ($row.mmsgps / $row.tcp.mmsgps) /
		     ($w.mmsgps / $w.tcp.mmsgps) end
	elif $spec.value == "idle_lat" then
		one("lat_send"; $mode; $run) as $base |
		if $row == null or $base == null then null
		else $row.lat_us.p50 / $base.lat_us.p50 end
	elif $spec.value == "idle_heap" then $row.idle.heap_kib_per_qp
	elif $spec.value == "idle_rss" then $row.idle.rss_kib_per_qp
	elif $row == null then null
	else $row[$spec.value] end;

def modes: [$raw[] | select(.bench.progress != "-") | .bench.progress] | unique;

def summary($spec):
	(reduce modes[] as $m ({};
		. + {($m): (
			[rounds[] as $r | value($spec; $m; $r)] as $v |
			[rounds[] as $r | side(one($spec.run; $m; $r); $spec.abs // "")] as $s |
			([$v[] | select(. != null)]) as $got |
			{median: ($v | median), values: $v,
			 low: ($got | min), high: ($got | max),
			 libiwarp: ([$s[][0]] | median), tcp: ([$s[][1]] | median)})}
	)) as $by |
	([$by | to_entries[] | select(.value.median != null)] |
		if length == 0 then null
		elif $spec.better == "low" then min_by(.value.median)
		else max_by(.value.median) end) as $best |
	$spec + {modes: $by,
		best: (if $best == null then null
		       else {mode: $best.key, value: $best.value.median,
			     low: $best.value.low, high: $best.value.high} end),
		result: (if $best == null then "no data"
			 elif $spec.target == null then null
			 elif $spec.better == "low" then
				(if $best.value.median <= $spec.target then "pass" else "miss" end)
			 else
				(if $best.value.median >= $spec.target then "pass" else "miss" end)
			 end)};

# the peers' 8-octet latency beside TCP's and ours, all in the same rounds
def peer($id; $name):
	[$raw[] | select(.bench.id == $id and (.failed | not))] as $p |
	if ($p | length) == 0 then empty
	else {label: $name, of: $p[0].of,
	      us: ([$p[] | .lat_us.p50 // .lat_us.avg] | median),
	      runs: ($p | length)} end;
def ours($id; $name):
	[$raw[] | select(.bench.id == $id and (.failed | not))] as $p |
	if ($p | length) == 0 then empty
	else [modes[] as $m |
		{mode: $m, us: ([$p[] | select(.bench.progress == $m) |
			.lat_us.p50] | median)} | select(.us != null)] |
		min_by(.us) | {label: "\($name) (--progress \(.mode))", of: "p50",
			us: .us} end;
def peers:
	([$raw[] | select(.bench.id == "lat_send" and (.failed | not)) |
		.tcp.lat_us.p50] | median) as $tcp |
	[{label: "raw TCP (iwarp-perf --tcp, 8 B ping-pong)", of: "p50", us: $tcp},
	 peer("peer_ucx_tag"; "UCX tcp, tag send/recv (ucx_perftest -t tag_lat)"),
	 peer("peer_fi_msg"; "libfabric tcp, msg endpoint (fi_pingpong -p tcp -e msg)"),
	 peer("peer_fi_rxm"; "libfabric tcp;ofi_rxm, rdm endpoint"),
	 peer("peer_ucx_put"; "UCX tcp, put (ucx_perftest -t ucp_put_lat)"),
	 ours("lat_send"; "libiwarp Send"),
	 ours("lat_write"; "libiwarp Write"),
	 ours("lat_read"; "libiwarp Read"),
	 peer("peer_ucx_get"; "UCX tcp, get (ucx_perftest -t ucp_get)")] |
	if any(.[]; .label | startswith("UCX") or startswith("libfabric"))
	then map(. + {times_tcp: (if $tcp != null and .us != null
				  then .us / $tcp else null end)})
	else [] end;

# perftest under iwarp-run beside iwarp-perf on the same pattern, round
# by round: within 10% is the aim (at least 0.9 of iwarp-perf's
# bandwidth, at most 1.1 times its latency)
def pt_figure($row; $lat): if $row == null then null
	elif $lat then $row.lat_us.p50 else $row.gbps end;
def perftest_row($name; $pt; $perf; $lat):
	[rounds[] as $r |
		([$raw[] | select(.bench.id == $pt and .bench.run == $r and
			(.failed | not))] | first | pt_figure(.; $lat)) as $a |
		(one($perf; "thread"; $r) | pt_figure(.; $lat)) as $b |
		{a: $a, b: $b,
		 ratio: (if $a == null or ($b // 0) == 0 then null else $a / $b end)}] as $v |
	if all($v[]; .a == null) then empty
	else ($v | map(.ratio) | median) as $ratio |
		{label: $name, unit: (if $lat then "µs" else "Gbit/s" end),
		 perftest: ($v | map(.a) | median),
		 iwarp_perf: ($v | map(.b) | median), ratio: $ratio,
		 target: (if $lat then "≤ 1.1" else "≥ 0.9" end),
		 result: (if $ratio == null then "no data"
			  elif $lat then (if $ratio <= 1.1 then "pass" else "miss" end)
			  else (if $ratio >= 0.9 then "pass" else "miss" end) end)}
	end;
def perftests:
	[perftest_row("RDMA Write bandwidth 64 KiB (ib_write_bw)"; "pt_write_bw"; "pt_perf_write_bw"; false),
	 perftest_row("Send bandwidth 64 KiB (ib_send_bw)"; "pt_send_bw"; "pt_perf_send_bw"; false),
	 perftest_row("RDMA Read bandwidth 64 KiB (ib_read_bw)"; "pt_read_bw"; "pt_perf_read_bw"; false),
	 perftest_row("8 B RDMA Write latency (ib_write_lat)"; "pt_write_lat"; "pt_perf_write_lat"; true),
	 perftest_row("8 B Send latency (ib_send_lat)"; "pt_send_lat"; "lat_send"; true),
	 perftest_row("8 B RDMA Read latency (ib_read_lat)"; "pt_read_lat"; "lat_read"; true)];

# A row that holds one of libiwarp's figures against another program's,
# round by round: each round's ratio comes from that round's two runs,
# and the median of the ratios is held against the target.  @fig picks
# the figure from a run's record.
def round_figure($id; $r; fig):
	[$raw[] | select(.bench.id == $id and .bench.run == $r and
		(.failed | not))] | first |
	if . == null then null else fig end;
def ratio_row($name; $ours; $other; $lat; $target; fig):
	[rounds[] as $r | round_figure($ours; $r; fig) as $a |
		round_figure($other; $r; fig) as $b |
		{a: $a, b: $b,
		 ratio: (if $a == null or ($b // 0) == 0 then null else $a / $b end)}] as $v |
	if all($v[]; .a == null) then empty
	else ($v | map(.ratio) | median) as $ratio |
		{label: $name, unit: (if $lat then "µs" else "Gbit/s" end),
		 ours: ($v | map(.a) | median), other: ($v | map(.b) | median),
		 ratio: $ratio, ratios: ($v | map(.ratio)),
		 target: (if $target == null then "—"
			  elif $lat then "≤ \($target)" else "≥ \($target)" end),
		 result: (if $ratio == null then "no data"
			  elif $target == null then ""
			  elif $lat then (if $ratio <= $target then "pass" else "miss" end)
			  else (if $ratio >= $target then "pass" else "miss" end) end)}
	end;

# libfabric's fi_pingpong over libiwarp beside libfabric's own tcp
# providers, and beside iwarp-perf, between two network namespaces
# (scripts/bench: fabric).  Latency is a mean half round trip,
# fi_pingpong's only figure and iwarp-perf's avg.
def fab_row($name; $a; $b; $lat; $target):
	ratio_row($name; $a; $b; $lat; $target; .lat_us.avg // .gbps) |
	.libiwarp = .ours | .peer = .other | del(.ours, .other);

# rstream under iwarp-run against rstream -T s: the issue's aims, at
# least 0.8 of the sockets' bandwidth at 64 KiB, at most 1.5 times their
# latency for 64 octets
def rstream_row($name; $ours; $tcp; $lat; $target):
	ratio_row($name; $ours; $tcp; $lat; $target;
		  if $lat then .lat_us.p50 else .gbps end) |
	.rsockets = .ours | .sockets = .other | del(.ours, .other);

def fabric:
	([$raw[] | select(.bench.id == "fab") | .skipped] | first) as $skip |
	{skipped: $skip,
	 rows: [
	  fab_row("8 B latency, verbs;ofi_rxm (rdm) / tcp;ofi_rxm (rdm)"; "fab_verbs_rxm_8"; "fab_tcp_rxm_8"; true; 1.0),
	  fab_row("8 B latency, verbs;ofi_rxm (rdm) / tcp (msg)"; "fab_verbs_rxm_8"; "fab_tcp_msg_8"; true; 1.0),
	  fab_row("64 KiB bandwidth, verbs;ofi_rxm (rdm) / tcp;ofi_rxm (rdm)"; "fab_verbs_rxm_64k"; "fab_tcp_rxm_64k"; false; 1.0),
	  fab_row("64 KiB bandwidth, verbs;ofi_rxm (rdm) / tcp (msg)"; "fab_verbs_rxm_64k"; "fab_tcp_msg_64k"; false; 1.0),
	  fab_row("1 MiB bandwidth, verbs;ofi_rxm (rdm) / tcp;ofi_rxm (rdm)"; "fab_verbs_rxm_1m"; "fab_tcp_rxm_1m"; false; 1.0),
	  fab_row("1 MiB bandwidth, verbs;ofi_rxm (rdm) / tcp (msg)"; "fab_verbs_rxm_1m"; "fab_tcp_msg_1m"; false; 1.0),
	  fab_row("8 B latency, verbs (msg) / iwarp-perf 8 B Send"; "fab_verbs_msg_8"; "fab_perf_send_8"; true; 1.2),
	  # the same endpoint type on both sides: no rxm protocol on either
	  fab_row("8 B latency, verbs (msg) / tcp (msg)"; "fab_verbs_msg_8"; "fab_tcp_msg_8"; true; 1.0),
	  fab_row("64 KiB bandwidth, verbs (msg) / tcp (msg)"; "fab_verbs_msg_64k"; "fab_tcp_msg_64k"; false; 1.0),
	  fab_row("1 MiB bandwidth, verbs (msg) / tcp (msg)"; "fab_verbs_msg_1m"; "fab_tcp_msg_1m"; false; 1.0),
	  # what each layer adds to the one below: rxm to its msg endpoint,
	  # and each msg endpoint to a plain socket's ping-pong
	  fab_row("8 B latency, verbs;ofi_rxm (rdm) / verbs (msg)"; "fab_verbs_rxm_8"; "fab_verbs_msg_8"; true; null),
	  fab_row("8 B latency, tcp;ofi_rxm (rdm) / tcp (msg)"; "fab_tcp_rxm_8"; "fab_tcp_msg_8"; true; null),
	  fab_row("8 B latency, verbs (msg) / TCP socket (iwarp-perf --tcp)"; "fab_verbs_msg_8"; "fab_tcp_sock_8"; true; null),
	  fab_row("8 B latency, tcp (msg) / TCP socket (iwarp-perf --tcp)"; "fab_tcp_msg_8"; "fab_tcp_sock_8"; true; null)]};
def rstreams:
	[rstream_row("64 KiB bandwidth (rstream -S 65536 -C 20000)"; "rs_bw_64k"; "rs_tcp_bw_64k"; false; 0.8),
	 rstream_row("64 B ping-pong, half round trip (rstream -T b -S 64 -C 1)"; "rs_lat_64"; "rs_tcp_lat_64"; true; 1.5)];

{host: $host, seconds: $seconds, rounds: $runs, duration_s: $duration,
 slices: ([$raw[] | .slices // empty | length] | max // 1),
 idle_qps: ([$raw[] | .idle.qps // empty] | first),
 rows: [$spec[0][] | . as $s |
	select(any($raw[]; .bench.id == $s.run)) | summary(.)],
 peers: peers,
 perftest: perftests,
 fabric: fabric,
 rsockets: rstreams,
 raw: $raw}
