// SPDX-License-Identifier: MIT
/*
 * iwarp-perf's output: a perftest-like table, or with --json one object
 * per row, one per line.  Every figure comes from what the run counted:
 * operations and octets from completions, seconds from CLOCK_MONOTONIC.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "perf.h"

struct figures {
	double gbps, mmsgps;
	bool have_lat; /* a row from a peer's report has no samples */
	double min, avg, p50, p90, p99, max;
};

const char *perf_mode_name(enum perf_mode m)
{
	static const char *const words[] = { "bw", "lat", "rate" };

	return words[m];
}

const char *perf_test_name(enum perf_test t)
{
	static const char *const words[] = { "send", "write", "read",
					     "atomic", "write_imm" };

	return words[t];
}

void perf_stats_reserve(struct tool_stats *s, uint64_t n)
{
	double *p;

	if (n <= s->cap)
		return;
	p = realloc(s->v, n * sizeof(*p));
	if (!p)
		return; /* tool_stats_add grows it as it goes */
	s->v = p;
	s->cap = n;
}

/*
 * tool_stats_pct() sorts on every call, which for millions of samples is
 * most of a run's CPU after the measurement: the first call sorts, the
 * others read the sorted samples by the same nearest rank.
 */
static double sorted_pct(const struct tool_stats *s, double pct)
{
	size_t k = (size_t)(pct / 100.0 * (double)s->n + 0.999999);

	return s->n ? s->v[k ? k - 1 : 0] : 0;
}

static void figures(struct perf_result *r, struct figures *f)
{
	*f = (struct figures){ 0 };
	if (r->seconds > 0) {
		f->gbps = (double)r->bytes * 8 / r->seconds / 1e9;
		f->mmsgps = (double)r->iters / r->seconds / 1e6;
	}
	f->have_lat = r->lat.n > 0;
	f->avg = tool_stats_avg(&r->lat);
	f->min = tool_stats_pct(&r->lat, 0);
	f->p50 = sorted_pct(&r->lat, 50);
	f->p90 = sorted_pct(&r->lat, 90);
	f->p99 = sorted_pct(&r->lat, 99);
	f->max = sorted_pct(&r->lat, 100);
}

/* bw and rate: iWARP Gbit/s over TCP's; lat: iWARP p50 over TCP's. */
static double ratio(const struct perf_opts *o, const struct figures *iw,
		    const struct figures *tcp)
{
	if (o->mode == PERF_LAT)
		return tcp->p50 > 0 ? iw->p50 / tcp->p50 : 0;
	return tcp->gbps > 0 ? iw->gbps / tcp->gbps : 0;
}

static const char *lat_words(const struct perf_opts *o)
{
	if (o->mode != PERF_LAT && perf_test_requests(o->test))
		return "post to completion of each Read or Fetch and Add, "
		       "DEPTH outstanding";
	if (o->mode != PERF_LAT)
		return "post to completion, DEPTH outstanding (a Send or "
		       "Write completes when handed to TCP)";
	if (perf_test_requests(o->test))
		return "one Read or Fetch and Add at a time, post to "
		       "completion";
	return "half the ping-pong round trip, as perftest reports it";
}

/* What the --tcp run times, where it differs from the iWARP run. */
static const char *tcp_lat_words(const struct perf_opts *o)
{
	if (perf_test_requests(o->test))
		return "; TCP: request to the last octet of its answer";
	if (o->mode != PERF_LAT)
		return "; TCP: from the end of the message DEPTH before to the "
		       "end of its writev";
	return "";
}

/*
 * LAT_MEASURED false: this end's rows carry no latency (it counts what
 * arrives, or shows its peer's report), so the header says so instead of
 * naming a measure that the "-" columns never show.
 */
void perf_report_header(const struct perf_opts *o, const char *conn_words,
			bool lat_measured)
{
	if (o->json)
		return;
	printf("# " PERF_PROG " %s %s: %u QP%s, depth %u, %s\n",
	       perf_mode_name(o->mode), perf_test_name(o->test), o->qps,
	       o->qps > 1 ? "s" : "", o->mode == PERF_LAT ? 1 : o->depth,
	       conn_words);
	if (lat_measured)
		printf("# latency [us]: %s%s\n", lat_words(o),
		       o->tcp ? tcp_lat_words(o) : "");
	else
		printf("# latency [us]: not measured here; the end that posts "
		       "the messages times them\n");
	if (o->tcp)
		printf("# TCP: the same pattern on a TCP socket per QP "
		       "(TCP_NODELAY); ratio = %s\n",
		       o->mode == PERF_LAT
			       ? "libiwarp p50 latency / TCP p50 latency"
			       : "libiwarp Gbit/s / TCP Gbit/s");
	printf("%10s %10s %9s %8s %9s %9s %9s", "#bytes", "#iters", "Gbit/s",
	       "Mmsg/s", "avg", "p50", "p99");
	if (o->tcp)
		printf(" | %9s %8s %9s %9s %9s | %6s", "TCP Gb/s", "Mmsg/s",
		       "avg", "p50", "p99", "ratio");
	printf("\n");
}

static void json_lat(const struct figures *f)
{
	if (!f->have_lat) {
		printf("\"lat_us\":null");
		return;
	}
	printf("\"lat_us\":{\"min\":%.3f,\"avg\":%.3f,\"p50\":%.3f,"
	       "\"p90\":%.3f,\"p99\":%.3f,\"max\":%.3f}",
	       f->min, f->avg, f->p50, f->p90, f->p99, f->max);
}

static void json_row(const struct perf_opts *o, size_t size,
		     const struct perf_result *iw, const struct figures *f,
		     const struct perf_result *tcp, const struct figures *t)
{
	printf("{\"mode\":\"%s\",\"test\":\"%s\",\"size\":%zu,"
	       "\"iterations\":%llu,\"bytes\":%llu,\"seconds\":%.6f,"
	       "\"gbps\":%.6g,\"mmsgps\":%.6g,",
	       perf_mode_name(o->mode), perf_test_name(o->test), size,
	       (unsigned long long)iw->iters, (unsigned long long)iw->bytes,
	       iw->seconds, f->gbps, f->mmsgps);
	json_lat(f);
	if (tcp) {
		printf(",\"tcp\":{\"iterations\":%llu,\"bytes\":%llu,"
		       "\"seconds\":%.6f,\"gbps\":%.6g,\"mmsgps\":%.6g,",
		       (unsigned long long)tcp->iters,
		       (unsigned long long)tcp->bytes, tcp->seconds, t->gbps,
		       t->mmsgps);
		json_lat(t);
		printf("},\"ratio\":%.4f,\"ratio_of\":\"%s\"", ratio(o, f, t),
		       o->mode == PERF_LAT ? "lat_p50" : "gbps");
	}
	printf("}\n");
}

/* One row: the libiwarp run and, with --tcp, the TCP one beside it. */
void perf_report_row(const struct perf_opts *o, size_t size,
		     struct perf_result *iw, struct perf_result *tcp)
{
	struct figures f, t;

	figures(iw, &f);
	if (tcp)
		figures(tcp, &t);
	if (o->json) {
		json_row(o, size, iw, &f, tcp, &t);
	} else {
		printf("%10zu %10llu %9.4g %8.4g", size,
		       (unsigned long long)iw->iters, f.gbps, f.mmsgps);
		if (f.have_lat)
			printf(" %9.2f %9.2f %9.2f", f.avg, f.p50, f.p99);
		else
			printf(" %9s %9s %9s", "-", "-", "-");
		if (tcp)
			printf(" | %9.4g %8.4g %9.2f %9.2f %9.2f | %6.3f",
			       t.gbps, t.mmsgps, t.avg, t.p50, t.p99,
			       ratio(o, &f, &t));
		printf("\n");
	}
	fflush(stdout);
}
