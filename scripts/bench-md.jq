# scripts/bench's Markdown: results.json as doc/performance.md shows it.

def num:
	if . == null then "—"
	elif . >= 100 then (. * 10 | round / 10 | tostring)
	elif . >= 10 then (. * 100 | round / 100 | tostring)
	else (. * 1000 | round / 1000 | tostring) end;
def cell($row; $m):
	$row.modes[$m] as $x |
	if $x == null or $x.median == null then "—"
	elif $row.unit != null and $x.libiwarp != null then
		"\($x.median | num) (\($x.libiwarp | num) / \($x.tcp | num) " +
		"\($row.unit | sub("us"; "µs")))"
	else ($x.median | num) end;
# the mode of N library threads a row was also run in, if any
def threads_mode($row):
	[$row.modes | keys[] | select(test("^[0-9]+$"))] | first;
def mode_name($m):
	if $m | test("^[0-9]+$") then "\($m) threads" else $m end;
# the best mode's median, and its rounds' range when they differ
def best($row):
	$row.best as $b |
	if $b == null then "—"
	else "\($b.value | num) \(mode_name($b.mode))" +
		(if $b.low == null or $b.low == $b.high then ""
		 else " (\($b.low | num)–\($b.high | num))" end) end;
def target($row):
	if $row.target == null then "—"
	elif $row.better == "low" then "≤ \($row.target)"
	else "≥ \($row.target)" end;

"Measured \(.host.date) on \(.host.cores) cores, \(.host.cpu), \(.host.kernel), " +
"TCP congestion control \(.host.tcp_congestion_control // "?") " +
"(load \(.host.load_at_start) at the start; revision \(.host.revision)); " +
"\(.rounds) rounds of \(.duration_s) s runs, `iwarp-perf --loopback --tcp`" +
(if (.slices // 1) > 1
 then " in \(.slices) slices that alternate libiwarp and TCP (`--slices \(.slices)`)"
 else "" end) + ", " +
"\(.seconds) s in all.  Each cell is the median over the rounds of the " +
"ratio libiwarp / TCP measured in one run (libiwarp's and TCP's own " +
"figures in brackets, also medians); latency ratios are better low, " +
"the others high.  The best mode's median is held against the target, " +
"with the lowest and highest of its rounds in brackets; " +
"N threads: `--progress N`, a library thread per connection, for the " +
"rows of N connections." +
(if .idle_qps then "  Idle rows: \(.idle_qps) idle QPs." else "" end) +
(.host.copy_distance as $c | if $c == null then "" else
 "  `scripts/copy-distance`: the processor's `rep movsb` copies 4 KiB " +
 "at \($c.near) GB/s when the destination lies 1 to 15 octets past " +
 "the source within a page, at \($c.mid) at 16 to 31, \($c.far) at " +
 "32 to 63 and \($c.rest) elsewhere." end),
"",
"| pattern | manual | thread | N threads | best | target | |",
"|---|---|---|---|---|---|---|",
(.rows[] as $r |
	"| \($r.label) | \(cell($r; "manual")) | \(cell($r; "thread")) | " +
	"\(threads_mode($r) as $n | if $n then cell($r; $n) else "—" end) | " +
	"\(best($r)) | " +
	"\(target($r)) | \($r.result // "") |"),
(if (.peers | length) > 0 then
	"",
	"8 B half round trip, the same rounds (p50; libfabric's fi_pingpong " +
	"reports only a mean):",
	"",
	"| stack | latency | × raw TCP |",
	"|---|---|---|",
	(.peers[] | "| \(.label) | \(.us | num)" +
		(if .us == null then "" elif .of == "avg" then " µs (mean)"
		 else " µs" end) + " | \(.times_tcp | num) |")
 else empty end),
(if (.perftest | length) > 0 then
	"",
	"Debian's perftest, both ends under `iwarp-run` (`-R`), beside " +
	"iwarp-perf on the same pattern in the thread progress mode (medians; " +
	"the ratio is perftest / iwarp-perf, round by round):",
	"",
	"| pattern | perftest | iwarp-perf | ratio | target | |",
	"|---|---|---|---|---|---|",
	(.perftest[] | "| \(.label) | \(.perftest | num) \(.unit) | " +
		"\(.iwarp_perf | num) \(.unit) | \(.ratio | num) | \(.target) | " +
		"\(.result) |")
 else empty end),
(if .fabric.skipped != null then
	"",
	"libfabric's rows: skipped, \(.fabric.skipped)."
 elif (.fabric.rows // [] | length) > 0 then
	"",
	"libfabric's fi_pingpong between two network namespaces joined by a " +
	"veth pair: libiwarp's providers with both ends under `iwarp-run`, " +
	"beside libfabric's own tcp providers and iwarp-perf on the same pair " +
	"in the same rounds (medians; the ratio is the first named over the " +
	"second, round by round; latency is the mean half round trip, " +
	"bandwidth the ping-pong's octets both ways over its time).  The " +
	"rows without a target show what each layer adds to the one under it:",
	"",
	"| pattern | first | second | ratio | target | |",
	"|---|---|---|---|---|---|",
	(.fabric.rows[] | "| \(.label) | \(.libiwarp | num) \(.unit) | " +
		"\(.peer | num) \(.unit) | \(.ratio | num) | \(.target) | " +
		"\(.result) |")
 else empty end),
(if (.rsockets // [] | length) > 0 then
	"",
	"rdma-core's `rstream`, both ends under `iwarp-run` (rsockets over " +
	"libiwarp), against `rstream -T s` (the kernel's TCP sockets) in the " +
	"same rounds (medians; the ratio is rsockets / sockets, round by round):",
	"",
	"| pattern | rsockets | sockets | ratio | target | |",
	"|---|---|---|---|---|---|",
	(.rsockets[] | "| \(.label) | \(.rsockets | num) \(.unit) | " +
		"\(.sockets | num) \(.unit) | \(.ratio | num) | \(.target) | " +
		"\(.result) |")
 else empty end)
