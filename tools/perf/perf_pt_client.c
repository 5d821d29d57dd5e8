// SPDX-License-Identifier: MIT
/*
 * iwarp-perf --perftest HOST: the client of perftest's server (ib_write_bw
 * -R and the others), in perftest's order:
 *
 *  exchange connection; version, system data, MTU; a sync
 *  the data connection(s), retried until the server listens for them
 *  a sync; the test's syncs, which carry the peer's region and STag
 *  each size: the pattern, with the syncs the test has around it
 *  bw Writes and Reads: a sync and our report; then the last sync
 *
 * The server learns nothing of the test from us: it runs what it was
 * started with, so size, count and depths must be the same on both sides.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf_pt.h"

/* ---- the data connections -------------------------------------------------- */

/* A first try may come before the server listens: worth another. */
static bool worth_retry(enum iw_cm_event_type ev)
{
	return ev == IW_CM_EVENT_REJECTED || ev == IW_CM_EVENT_UNREACHABLE ||
	       ev == IW_CM_EVENT_CONNECT_ERROR || ev == IW_CM_EVENT_TIMEOUT;
}

/* The next event for @id; the exchange connection ending is a failure. */
static struct iw_cm_event *event_for(struct pt_run *t, struct iw_cm_id *id,
				     int ms)
{
	double end = tool_now_us() + ms * 1000.0;

	for (;;) {
		int left = (int)((end - tool_now_us()) / 1000);
		struct iw_cm_event *ev = perf_event(&t->d, left > 0 ? left
								     : 0);

		if (!ev || ev->id == id)
			return ev;
		if (ev->id == t->comm_id) {
			perf_explain(t->d.where, ev, NULL);
			iw_ack_cm_event(ev);
			return NULL;
		}
		iw_ack_cm_event(ev);
	}
}

/* A failed try leaves nothing behind: its QP, its id, its completions. */
static void forget_try(struct pt_run *t, struct perf_ep *e)
{
	struct iw_wc wc[16];

	iw_destroy_id(e->id);
	iw_destroy_qp(e->qp);
	e->id = NULL;
	e->qp = NULL;
	while (iw_poll_cq(t->d.cq, 16, wc) > 0)
		;
}

static int connect_one(struct pt_run *t, struct perf_ep *e)
{
	const struct perf_opts *o = t->o;
	double end = tool_now_us() + 2e3 * o->timeout_ms;
	struct iw_conn_param cp = pt_conn_param(t);

	for (;;) {
		struct iw_cm_event *ev;
		int rc;

		if (pt_data_qp(t, e))
			return -1;
		e->id = iw_create_id(t->d.ch, e);
		if (!e->id || iw_set_mpa_opts(e->id, &o->mpa))
			return perf_fail("bad MPA options");
		rc = iw_connect(e->id, o->host, o->port, e->qp, &cp);
		if (rc)
			return perf_fail("cannot connect to %s: %s",
					 t->d.where, iw_strerror(rc));
		ev = event_for(t, e->id, 2 * o->timeout_ms);
		if (!ev)
			return perf_fail("%s: the data connection got no "
					 "answer", t->d.where);
		if (ev->event == IW_CM_EVENT_ESTABLISHED) {
			iw_ack_cm_event(ev);
			e->up = true;
			return 0;
		}
		if (!worth_retry(ev->event) || tool_now_us() > end) {
			perf_explain(t->d.where, ev, &o->mpa);
			iw_ack_cm_event(ev);
			return -1;
		}
		iw_ack_cm_event(ev);
		forget_try(t, e);
		usleep(100 * 1000);
	}
}

/* One connection per QP, in order: perftest's server takes them so. */
static int connect_data(struct pt_run *t)
{
	if (pt_endpoints(t, t->o->qps))
		return -1;
	for (uint32_t i = 0; i < t->d.n_ep; i++)
		if (pt_data_memory(t, &t->d.ep[i]) ||
		    connect_one(t, &t->d.ep[i]))
			return -1;
	pt_fill_dests(t);
	return 0;
}

/*
 * The syncs before the first size.  Before write lat's last one our first
 * FPDU goes out (pt_lat_open), as the server's Write opens the run.
 */
static int pre_syncs(struct pt_run *t)
{
	if (!t->plan->server_first)
		return pt_pre_syncs(t);
	for (uint8_t i = 0; i + 1 < t->plan->lat_pre; i++)
		if (pt_sync(t, 0))
			return -1;
	return pt_lat_open(t) || pt_sync(t, 0);
}

/* ---- the sizes ------------------------------------------------------------- */

static int pattern(struct pt_run *t, size_t size, struct perf_result *r)
{
	if (t->o->mode == PERF_BW)
		return pt_bw_stream(t, size, r);
	if (t->o->test == PERF_SEND)
		return pt_lat_send(t, size, r);
	return t->o->test == PERF_WRITE ? pt_lat_write(t, size, r)
					: pt_lat_read(t, size, r);
}

/* What perftest's server prints of a bw client: MB/s and Mmsg/s. */
static void report_of(size_t size, const struct perf_result *r,
		      struct pt_report *rep)
{
	double s = r->seconds > 0 ? r->seconds : 1e-9;

	*rep = (struct pt_report){
		.size = size, .iters = r->iters,
		.bw_avg = (double)r->bytes / s / (1 << 20),
		.msg_rate = (double)r->iters / s / 1e6,
	};
	rep->bw_peak = rep->bw_avg; /* no peak of our own: the average */
}

static void header(struct pt_run *t)
{
	struct perf_opts shown = *t->o;
	char conn[192], words[352];

	if (t->o->json)
		return;
	shown.depth = t->tx_depth; /* perftest's, for this count */
	pt_describe(t, conn, sizeof(conn));
	snprintf(words, sizeof(words), "%s, %s", t->d.where, conn);
	printf("# perftest exchange: %llu iterations a size, send depth %u, "
	       "receive depth %u\n",
	       (unsigned long long)t->iters, t->tx_depth, t->rx_depth);
	perf_report_header(&shown, words, true);
}

static bool sync_after(const struct pt_run *t)
{
	return t->plan->after_size == PT_AFTER_ALWAYS ||
	       (t->plan->after_size == PT_AFTER_SWEEP && t->o->sweep);
}

/*
 * Every size with the syncs around it, then the report and the last sync.
 * Before the last step the peer's disconnect becomes the expected end:
 * perftest's server closes as soon as it has answered (or, in write lat,
 * seen our last Write).
 */
static int run(struct pt_run *t)
{
	const struct pt_plan *p = t->plan;
	struct pt_report mine = { 0 }, theirs;

	header(t);
	for (size_t size = pt_first_size(t); size;
	     size = pt_next_size(t, size)) {
		bool last = !pt_next_size(t, size) && !p->close_sync;
		struct perf_result r = { 0 };
		int rc;

		perf_stats_reserve(&r.lat, t->iters * t->d.n_ep);
		rc = p->before_size && pt_sync(t, 0);
		if (!rc && t->o->test == PERF_SEND && t->o->mode == PERF_BW)
			pt_credit_reset(t);
		t->closing = last && !sync_after(t);
		rc = rc || pattern(t, size, &r);
		t->closing = last;
		rc = rc || (sync_after(t) && pt_sync(t, 0));
		if (!rc) {
			perf_report_row(t->o, size, &r, NULL);
			report_of(size, &r, &mine);
		}
		tool_stats_free(&r.lat);
		if (rc)
			return -1;
	}
	if (p->reports && (pt_sync(t, 0) || pt_reports(t, &mine, &theirs)))
		return -1;
	t->closing = true;
	return p->close_sync ? pt_sync(t, 0) : 0;
}

int perf_pt_client(const struct perf_opts *o)
{
	struct pt_run t;
	int rc = pt_open(&t, o, false);

	rc = rc || pt_comm_connect(&t) || pt_prefix(&t) || pt_sync_zero(&t) ||
	     connect_data(&t) || pt_sync_zero(&t) || pre_syncs(&t) || run(&t);
	if (!rc)
		pt_await_close(&t);
	pt_disconnect(&t);
	pt_close(&t);
	return rc ? 1 : 0;
}
