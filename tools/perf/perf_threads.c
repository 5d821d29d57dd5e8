// SPDX-License-Identifier: MIT
/*
 * iwarp-perf --threads N: N QPs, each driven by an application thread of
 * its own that polls a CQ of its own, beside N TCP sockets, each driven
 * by a thread of its own.  The threads share the device context and its
 * PD, as one application would, and nothing else: no lock of the tool's
 * is taken on their way (they line up on a counter before each pattern,
 * outside the time).  A row sums the threads' rates, each over its own
 * time, and gives the median of their latency figures.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

/* One thread's share of a run. */
struct lane {
	struct perf_client *c;
	struct perf_tcp *t;
	struct perf_result r, tr; /* the size's slices, added up */
	uint64_t count; /* operations its QP did in the slice: TCP repeats them */
	size_t size;
	uint64_t iters;
	pthread_t th;
	int rc;
};

struct threads {
	struct perf_opts one; /* the options of a lane: one QP */
	const struct perf_opts *o;
	struct perf_dev whole;
	struct lane *lane;
	uint32_t n;
	struct perf_start start;
	struct perf_idle *idle;
	char idle_json[512];
};

void perf_start_wait(struct perf_start *s, uint64_t *steps)
{
	uint64_t want = ++*steps * s->n;

	atomic_fetch_add(&s->arrived, 1);
	while (atomic_load(&s->arrived) < want && !atomic_load(&s->abandoned))
		sched_yield();
}

static void *iw_lane(void *arg)
{
	struct lane *l = arg;
	struct perf_result part = { 0 };

	l->rc = perf_client_step(l->c, l->size, l->iters, &part, &l->count);
	perf_add_counts(&l->r, &part);
	return NULL;
}

static void *tcp_lane(void *arg)
{
	struct lane *l = arg;
	struct perf_result part = { 0 };

	l->rc = perf_tcp_step(l->t, l->size, &l->count, &part);
	perf_add_counts(&l->tr, &part);
	return NULL;
}

/* Runs @fn on every lane in a thread of its own; 0 when all succeeded. */
static int on_every_lane(struct threads *t, void *(*fn)(void *))
{
	uint32_t started = 0;
	int rc = 0;

	for (uint32_t i = 0; i < t->n; i++) {
		if (pthread_create(&t->lane[i].th, NULL, fn, &t->lane[i])) {
			rc = perf_fail("cannot start a thread");
			break;
		}
		started++;
	}
	/* a lane that never started will not line up: nobody waits for it */
	if (started < t->n)
		atomic_store(&t->start.abandoned, true);
	for (uint32_t i = 0; i < started; i++) {
		pthread_join(t->lane[i].th, NULL);
		rc = rc || t->lane[i].rc;
	}
	return rc;
}

/*
 * Every lane runs @fn at once: one slice of one stack's step, whose
 * bounds, CPU time and operation count go to @row.
 */
static int slice(struct threads *t, void *(*fn)(void *),
		 struct perf_result *row)
{
	struct perf_mark mark;
	uint64_t iters = 0;
	int rc;

	perf_mark_now(&mark);
	rc = on_every_lane(t, fn);
	for (uint32_t i = 0; i < t->n; i++)
		iters += t->lane[i].count;
	perf_slice_end(row, &mark, iters);
	return rc;
}

/* The lanes' results of one stack as its row. */
static void merge_lanes(struct threads *t, struct perf_result *row,
			struct perf_result *parts, bool tcp)
{
	for (uint32_t i = 0; i < t->n; i++)
		parts[i] = tcp ? t->lane[i].tr : t->lane[i].r;
	perf_merge(row, parts, t->n);
}

/* One size on every lane, libiwarp then TCP, slice by slice; a row. */
static int step(struct threads *t, size_t size, uint64_t iters)
{
	struct perf_result r = { 0 }, tr = { 0 };
	struct perf_result *parts = calloc(t->n, sizeof(*parts));
	int rc = 0;

	if (!parts)
		return perf_fail("out of memory");
	r.extra_json = t->idle ? t->idle_json : NULL;
	for (uint32_t i = 0; i < t->n; i++) {
		struct lane *l = &t->lane[i];

		l->r = l->tr = (struct perf_result){ 0 };
		l->size = size;
		l->iters = iters;
	}
	for (uint32_t k = 0; !rc && k < t->o->slices; k++) {
		rc = slice(t, iw_lane, &r);
		if (!rc && t->o->tcp)
			rc = slice(t, tcp_lane, &tr);
	}
	merge_lanes(t, &r, parts, false);
	if (t->o->tcp)
		merge_lanes(t, &tr, parts, true);
	if (!rc)
		perf_report_row(t->o, size, &r, t->o->tcp ? &tr : NULL);
	for (uint32_t i = 0; i < t->n; i++) {
		tool_stats_free(&t->lane[i].r.lat);
		tool_stats_free(&t->lane[i].tr.lat);
	}
	free(parts);
	return rc;
}

/* The device, then a client and a TCP socket per lane. */
static int open_lanes(struct threads *t, const char *tcp_port)
{
	const struct perf_opts *o = t->o;
	uint32_t session = (uint32_t)getpid() ^ (uint32_t)tool_now_us();

	t->lane = calloc(t->n, sizeof(*t->lane));
	if (!t->lane)
		return perf_fail("out of memory");
	t->start.n = t->n;
	if (perf_dev_open(&t->whole, o))
		return -1;
	snprintf(t->whole.where, sizeof(t->whole.where), "%s:%s", o->host,
		 o->port);
	if (t->idle && perf_idle_connect(t->idle, &t->whole))
		return -1;
	for (uint32_t i = 0; i < t->n; i++) {
		struct lane *l = &t->lane[i];

		if (perf_client_open_part(&l->c, &t->one, &t->whole, i, t->n,
					  session))
			return -1;
		perf_client_start_together(l->c, &t->start);
	}
	for (uint32_t i = 0; o->tcp && i < t->n; i++)
		if (perf_tcp_open(&t->lane[i].t, &t->one, o->host, tcp_port))
			return -1;
	return 0;
}

static void close_lanes(struct threads *t)
{
	for (uint32_t i = 0; t->lane && i < t->n; i++) {
		perf_tcp_close(t->lane[i].t);
		perf_client_close(t->lane[i].c);
	}
	free(t->lane);
	perf_idle_release(t->idle);
	if (t->whole.ctx)
		perf_dev_close(&t->whole);
}

/* The client's run with --threads: every size, a row each. */
int perf_threads_run(const struct perf_opts *o, const char *tcp_port,
		     struct perf_idle *idle)
{
	struct threads t = { .o = o, .one = *o, .n = o->threads,
			     .idle = idle };
	size_t size = o->sweep ? PERF_SWEEP_MIN : o->size;
	char conn[192], words[256];
	int rc;

	t.one.qps = 1;
	t.one.duration = o->duration / o->slices; /* a lane's step: a slice */
	rc = open_lanes(&t, tcp_port);
	if (!rc) {
		perf_client_header(t.lane[0].c, conn, sizeof(conn));
		snprintf(words, sizeof(words), "%s:%s, %s", o->host, o->port,
			 conn);
		if (idle)
			perf_idle_report(idle, o, t.idle_json,
					 sizeof(t.idle_json));
		perf_report_header(o, words);
	}
	for (; !rc && size <= o->size; size *= 2) {
		uint64_t iters = o->duration ? 0
				 : o->iters  ? o->iters
					     : perf_default_iters(o, size);

		rc = step(&t, size, iters);
		if (!o->sweep)
			break;
	}
	close_lanes(&t);
	return rc ? 1 : 0;
}
