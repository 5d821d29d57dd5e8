// SPDX-License-Identifier: MIT
/*
 * iwarp-perf's output: a perftest-like table, or with --json one object
 * per row, one per line.  Every figure comes from what the run counted:
 * operations and octets from completions, seconds from CLOCK_MONOTONIC.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "perf.h"

struct figures {
	double gbps, mmsgps;
	bool have_lat; /* a row with no samples shows "-" for latency */
	double min, avg, p50, p90, p99, max;
	bool have_cpu;
	double cpu_user, cpu_sys, cpu_per_gb; /* seconds; per 10^9 octets */
	double from_s, to_s;
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

void perf_mark_now(struct perf_mark *m)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	m->user = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
	m->sys = (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	m->at = tool_now_us() / 1e6;
}

void perf_slice_end(struct perf_result *r, const struct perf_mark *m,
		    uint64_t iters)
{
	struct perf_mark now;

	perf_mark_now(&now);
	r->have_cpu = true;
	r->cpu_user += now.user - m->user;
	r->cpu_sys += now.sys - m->sys;
	if (!r->n_slices)
		r->from_s = m->at;
	r->to_s = now.at;
	if (r->n_slices < PERF_MAX_SLICES)
		r->slice[r->n_slices++] =
			(struct perf_slice){ m->at, now.at, iters };
}

/* @from's samples after @into's; @from is left empty. */
static void stats_move(struct tool_stats *into, struct tool_stats *from)
{
	if (!into->n) { /* the first slice's: taken whole */
		tool_stats_free(into);
		*into = *from;
		*from = (struct tool_stats){ 0 };
		return;
	}
	perf_stats_reserve(into, into->n + from->n);
	if (into->cap >= into->n + from->n) {
		memcpy(into->v + into->n, from->v, from->n * sizeof(*from->v));
		into->n += from->n;
	} else { /* no room in one piece: tool_stats_add() grows it */
		for (size_t i = 0; i < from->n; i++)
			tool_stats_add(into, from->v[i]);
	}
	tool_stats_free(from);
}

void perf_add_counts(struct perf_result *into, struct perf_result *part)
{
	into->iters += part->iters;
	into->bytes += part->bytes;
	into->seconds += part->seconds;
	stats_move(&into->lat, &part->lat);
}

/* The figures of a merged result (--threads): computed by its threads. */
static void merged_figures(const struct perf_result *r, struct figures *f)
{
	f->gbps = r->gbps;
	f->mmsgps = r->mmsgps;
	f->have_lat = r->have_lat;
	f->min = r->min;
	f->avg = r->avg;
	f->p50 = r->p50;
	f->p90 = r->p90;
	f->p99 = r->p99;
	f->max = r->max;
}

static void figures(struct perf_result *r, struct figures *f)
{
	*f = (struct figures){ 0 };
	f->have_cpu = r->have_cpu && r->bytes;
	f->cpu_user = r->cpu_user;
	f->cpu_sys = r->cpu_sys;
	f->from_s = r->from_s;
	f->to_s = r->to_s;
	if (f->have_cpu)
		f->cpu_per_gb = (r->cpu_user + r->cpu_sys) / (r->bytes / 1e9);
	if (r->merged) {
		merged_figures(r, f);
		return;
	}
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

/* The median of @n values (the mean of the middle two for even @n). */
static double median(double *v, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++)
		for (uint32_t j = i; j && v[j - 1] > v[j]; j--) {
			double t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * --threads: @n threads' results as one row.  Counts and CPU time add up,
 * and so do the rates, each thread's over its own time; each latency
 * figure is the median of the threads' (a median keeps min <= p50 <= ...
 * <= max, since each thread's figures are in that order).
 */
void perf_merge(struct perf_result *into, struct perf_result *parts,
		uint32_t n)
{
	double v[6][PERF_MAX_THREADS];
	uint32_t k = 0;

	into->merged = true;
	for (uint32_t i = 0; i < n; i++) {
		struct figures f;

		figures(&parts[i], &f);
		into->iters += parts[i].iters;
		into->bytes += parts[i].bytes;
		if (parts[i].seconds > into->seconds)
			into->seconds = parts[i].seconds;
		into->gbps += f.gbps;
		into->mmsgps += f.mmsgps;
		if (!f.have_lat)
			continue;
		v[0][k] = f.min;
		v[1][k] = f.avg;
		v[2][k] = f.p50;
		v[3][k] = f.p90;
		v[4][k] = f.p99;
		v[5][k] = f.max;
		k++;
	}
	into->have_lat = k > 0;
	if (!k)
		return;
	into->min = median(v[0], k);
	into->avg = median(v[1], k);
	into->p50 = median(v[2], k);
	into->p90 = median(v[3], k);
	into->p99 = median(v[4], k);
	into->max = median(v[5], k);
}

/* bw and rate: iWARP Gbit/s over TCP's; lat: iWARP p50 over TCP's. */
static double ratio(const struct perf_opts *o, const struct figures *iw,
		    const struct figures *tcp)
{
	if (o->mode == PERF_LAT)
		return tcp->p50 > 0 ? iw->p50 / tcp->p50 : 0;
	return tcp->gbps > 0 ? iw->gbps / tcp->gbps : 0;
}

/* lat: iWARP p99 over TCP's; 0 where it is no row's measure. */
static double ratio_p99(const struct perf_opts *o, const struct figures *iw,
			const struct figures *tcp)
{
	if (o->mode != PERF_LAT || !iw->have_lat || !(tcp->p99 > 0))
		return 0;
	return iw->p99 / tcp->p99;
}

/* CPU seconds per GB moved, iWARP's over TCP's; 0 when not measured. */
static double ratio_cpu(const struct figures *iw, const struct figures *tcp)
{
	if (!iw->have_cpu || !tcp->have_cpu || !(tcp->cpu_per_gb > 0))
		return 0;
	return iw->cpu_per_gb / tcp->cpu_per_gb;
}

/* Whose CPU time a row counts: both ends in one process, or ours. */
static const char *cpu_scope(const struct perf_opts *o)
{
	return o->loopback ? "both" : "client";
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

void perf_report_header(const struct perf_opts *o, const char *conn_words)
{
	if (o->json)
		return;
	printf("# " PERF_PROG " %s %s: %u QP%s%s, depth %u",
	       perf_mode_name(o->mode), perf_test_name(o->test), o->qps,
	       o->qps > 1 ? "s" : "", o->threads ? ", one thread each" : "",
	       o->mode == PERF_LAT ? 1 : o->depth);
	if (perf_test_receives(o->test) && o->mode != PERF_LAT)
		printf(", %u receives", o->rx_depth);
	if (o->watch_only)
		printf(", watching memory only");
	printf(", %s\n", conn_words);
	printf("# latency [us]: %s%s%s\n", lat_words(o),
	       o->tcp ? tcp_lat_words(o) : "",
	       o->threads > 1 ? "; the median of the threads' figures" : "");
	printf("# CPU s/GB: user + system seconds of %s per 10^9 octets "
	       "moved\n",
	       o->loopback ? "this process (both ends)"
			   : "this process (the client's end only)");
	if (o->tcp)
		printf("# TCP: the same pattern on a TCP socket per QP "
		       "(TCP_NODELAY%s); ratio = %s; p99 r = libiwarp p99 / "
		       "TCP p99; CPU r = libiwarp CPU s/GB / TCP CPU s/GB\n",
		       o->threads ? ", one thread each" : "",
		       o->mode == PERF_LAT
			       ? "libiwarp p50 latency / TCP p50 latency"
			       : "libiwarp Gbit/s / TCP Gbit/s");
	if (o->slices > 1)
		printf("# slices: %u a size, each %.3g s of libiwarp, then TCP "
		       "for as many operations; the row adds them up\n",
		       o->slices, o->duration / o->slices);
	printf("%10s %10s %9s %8s %9s %9s %9s %9s", "#bytes", "#iters",
	       "Gbit/s", "Mmsg/s", "avg", "p50", "p99", "CPU s/GB");
	if (o->tcp)
		printf(" | %9s %8s %9s %9s %9s %9s | %6s %6s %6s", "TCP Gb/s",
		       "Mmsg/s", "avg", "p50", "p99", "CPU s/GB", "ratio",
		       "p99 r", "CPU r");
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

static void json_cpu(const struct perf_opts *o, const struct figures *f)
{
	if (!f->have_cpu) {
		printf(",\"cpu\":null");
		return;
	}
	/* over the step: its bounds let a profile be cut to it */
	printf(",\"cpu\":{\"user_s\":%.6f,\"sys_s\":%.6f,"
	       "\"s_per_gb\":%.6g,\"scope\":\"%s\","
	       "\"monotonic_s\":[%.6f,%.6f]}",
	       f->cpu_user, f->cpu_sys, f->cpu_per_gb, cpu_scope(o),
	       f->from_s, f->to_s);
}

/* --slices: each slice of the step, in the order they ran. */
static void json_slices(const struct perf_opts *o, const struct perf_result *r)
{
	if (o->slices < 2)
		return;
	printf(",\"slices\":[");
	for (uint32_t k = 0; k < r->n_slices; k++)
		printf("%s{\"monotonic_s\":[%.6f,%.6f],\"iterations\":%llu}",
		       k ? "," : "", r->slice[k].from_s, r->slice[k].to_s,
		       (unsigned long long)r->slice[k].iters);
	printf("]");
}

/* A ratio, or null where there is none. */
static void json_ratio(const char *key, double v)
{
	if (v > 0)
		printf(",\"%s\":%.4f", key, v);
	else
		printf(",\"%s\":null", key);
}

static void json_row(const struct perf_opts *o, size_t size,
		     const struct perf_result *iw, const struct figures *f,
		     const struct perf_result *tcp, const struct figures *t)
{
	printf("{\"mode\":\"%s\",\"test\":\"%s\",\"size\":%zu,"
	       "\"qps\":%u,\"threads\":%u,"
	       "\"iterations\":%llu,\"bytes\":%llu,\"seconds\":%.6f,"
	       "\"gbps\":%.6g,\"mmsgps\":%.6g,",
	       perf_mode_name(o->mode), perf_test_name(o->test), size, o->qps,
	       o->threads ? o->threads : 1, (unsigned long long)iw->iters,
	       (unsigned long long)iw->bytes, iw->seconds, f->gbps, f->mmsgps);
	json_lat(f);
	json_cpu(o, f);
	json_slices(o, iw);
	if (iw->extra_json)
		printf(",%s", iw->extra_json);
	if (tcp) {
		printf(",\"tcp\":{\"iterations\":%llu,\"bytes\":%llu,"
		       "\"seconds\":%.6f,\"gbps\":%.6g,\"mmsgps\":%.6g,",
		       (unsigned long long)tcp->iters,
		       (unsigned long long)tcp->bytes, tcp->seconds, t->gbps,
		       t->mmsgps);
		json_lat(t);
		json_cpu(o, t);
		json_slices(o, tcp);
		printf("},\"ratio\":%.4f,\"ratio_of\":\"%s\"", ratio(o, f, t),
		       o->mode == PERF_LAT ? "lat_p50" : "gbps");
		if (o->mode == PERF_LAT)
			json_ratio("ratio_p99", ratio_p99(o, f, t));
		json_ratio("ratio_cpu", ratio_cpu(f, t));
	}
	printf("}\n");
}

/* A table cell of @width: the figure, or "-" where it was not measured. */
static void cell(bool have, int width, double v)
{
	if (have)
		printf(" %*.4g", width, v);
	else
		printf(" %*s", width, "-");
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
		cell(f.have_cpu, 9, f.cpu_per_gb);
		if (tcp) {
			printf(" | %9.4g %8.4g %9.2f %9.2f %9.2f", t.gbps,
			       t.mmsgps, t.avg, t.p50, t.p99);
			cell(t.have_cpu, 9, t.cpu_per_gb);
			printf(" | %6.3f", ratio(o, &f, &t));
			cell(ratio_p99(o, &f, &t) > 0, 6, ratio_p99(o, &f, &t));
			cell(ratio_cpu(&f, &t) > 0, 6, ratio_cpu(&f, &t));
		}
		printf("\n");
	}
	fflush(stdout);
}
