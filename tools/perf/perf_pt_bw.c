// SPDX-License-Identifier: MIT
/*
 * iwarp-perf --perftest, the bw patterns.  The sender keeps the send depth
 * of Writes, Reads or Sends outstanding on every QP and times from the
 * first post to the last completion, as perftest does (a Write or Send
 * completes when TCP has it).  Sends never run ahead of the receiver: the
 * receiver RDMA-Writes its count of messages taken into the sender's
 * credit word every third of its receive depth, and the sender keeps
 * fewer than the receive depth beyond that count in flight (perftest's
 * rule for iWARP, which has no receiver-not-ready retry: a Send without a
 * receive ends the connection).  The receiver of Sends is the only server
 * with work to do; Writes and Reads need nothing from it.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_pt.h"

#define BATCH 64
#define PT_CREDIT_WR_ID (1ull << 60)
#define CREDITS_OUT_MAX 32 /* credit Writes in flight; the queue has more */

static enum iw_wr_opcode op_of(enum perf_test test)
{
	return test == PERF_SEND    ? IW_WR_SEND
	       : test == PERF_WRITE ? IW_WR_RDMA_WRITE
				    : IW_WR_RDMA_READ;
}

/* How many Reads the connection lets us have outstanding at once. */
static uint32_t read_limit(struct perf_ep *e, uint32_t depth)
{
	struct iw_qp_attr a;

	if (iw_query_qp(e->qp, &a) || !a.ord)
		return 1;
	return a.ord < depth ? a.ord : depth;
}

/* The ring one QP posts from: all alike, pointing at offset 0. */
static void ring_init(struct pt_run *t, struct perf_ep *e, size_t size)
{
	enum iw_wr_opcode op = op_of(t->o->test);
	bool read = op == IW_WR_RDMA_READ;

	for (uint32_t i = 0; i < t->tx_depth; i++) {
		e->sge[i] = (struct iw_sge){
			(uintptr_t)(read ? e->buf : e->src), (uint32_t)size,
			read ? e->buf_mr->lkey : e->src_mr->lkey };
		e->wr[i] = (struct iw_send_wr){
			.sg_list = &e->sge[i], .num_sge = 1, .opcode = op,
			.send_flags = IW_SEND_SIGNALED,
			.rdma = { t->rem[e->index].vaddr,
				  t->rem[e->index].rkey },
		};
	}
	e->posted = e->completed = 0;
}

/*
 * How many more @e may post: the send depth, the target and, for Sends,
 * perftest's window: posted + 1 - credit < receive depth.
 */
static uint64_t room(struct pt_run *t, struct perf_ep *e, uint32_t limit)
{
	uint64_t n = limit - (e->posted - e->completed);

	if (e->target - e->posted < n)
		n = e->target - e->posted;
	if (t->o->test == PERF_SEND) {
		uint64_t credit = pt_credit_seen(t, e->index);
		uint64_t max = credit + t->rx_depth - 1;

		n = e->posted >= max ? 0 : n < max - e->posted ? n
							     : max - e->posted;
	}
	return n;
}

static int post_some(struct pt_run *t, struct perf_ep *e, uint64_t n,
		     double now)
{
	for (uint64_t k = 0; k < n; k++) {
		uint32_t i = (uint32_t)(e->posted % t->tx_depth);
		int rc;

		e->wr[i].wr_id = PERF_WR_ID(0, e->index, e->posted);
		e->wr[i].next = NULL;
		e->post_us[i] = now;
		rc = iw_post_send(e->qp, &e->wr[i], NULL);
		if (rc)
			return perf_fail("post: %s", iw_strerror(rc));
		e->posted++;
	}
	return 0;
}

/* A data completion: its latency from post, its octets. */
static int sender_wc(struct pt_run *t, const struct iw_wc *wc, double now,
		     struct perf_result *r, double *t_last)
{
	uint32_t i = PERF_WR_EP(wc->wr_id);
	struct perf_ep *e;

	if (wc->status != IW_WC_SUCCESS)
		return pt_wc_failed(t, wc);
	if (i >= t->d.n_ep || (wc->wr_id & PERF_WR_RECV))
		return perf_fail("%s: a completion the test did not post",
				 t->d.where);
	e = &t->d.ep[i];
	tool_stats_add(&r->lat, now - e->post_us[PERF_WR_SEQ(wc->wr_id) %
						  t->tx_depth]);
	r->bytes += wc->byte_len;
	r->iters++;
	e->completed++;
	*t_last = now;
	return 0;
}

/*
 * Client: @size octets, the iteration count per QP or the duration, into
 * @r.  Idle (nothing to post, nothing completing) at most the timeout.
 */
int pt_bw_stream(struct pt_run *t, size_t size, struct perf_result *r)
{
	const struct perf_opts *o = t->o;
	uint32_t limit[PERF_MAX_QPS];
	double t0 = tool_now_us(), t_last = t0, idle_since = t0;
	double stop = o->duration ? t0 + o->duration * 1e6 : 0;

	for (uint32_t i = 0; i < t->d.n_ep; i++) {
		struct perf_ep *e = &t->d.ep[i];

		ring_init(t, e, size);
		e->target = t->iters ? t->iters : UINT64_MAX;
		limit[i] = o->test == PERF_READ ? read_limit(e, t->tx_depth)
						: t->tx_depth;
	}
	for (unsigned int round = 1;; round++) {
		struct iw_wc wc[BATCH];
		double now = tool_now_us();
		bool left = false, busy = false;
		int n;

		for (uint32_t i = 0; i < t->d.n_ep; i++) {
			struct perf_ep *e = &t->d.ep[i];
			uint64_t k;

			if (stop && now >= stop && e->target > e->posted)
				e->target = e->posted;
			k = room(t, e, limit[i]);
			if (k && post_some(t, e, k, now))
				return -1;
			busy |= k > 0;
			left |= e->completed < e->target;
		}
		if (!left)
			break;
		n = iw_poll_cq(t->d.cq, BATCH, wc);
		if (n < 0)
			return perf_fail("poll: %s", iw_strerror(n));
		now = tool_now_us();
		for (int k = 0; k < n; k++)
			if (sender_wc(t, &wc[k], now, r, &t_last))
				return -1;
		if (n || busy) {
			idle_since = now;
			continue;
		}
		sched_yield();
		if (!(round & 255) && pt_take_cm(t))
			return -1;
		if (now - idle_since > o->timeout_ms * 1000.0)
			return perf_fail("%s: no completion%s within %d s",
					 t->d.where,
					 o->test == PERF_SEND ? " or credit" : "",
					 o->timeout_ms / 1000);
	}
	r->seconds = (t_last - t0) / 1e6;
	return 0;
}

/* ---- the receiver of Sends (server) ----------------------------------------- */

struct receiver {
	struct pt_run *t;
	uint64_t count[PERF_MAX_QPS]; /* this size's messages per QP */
	bool due[PERF_MAX_QPS];	      /* a credit waits for room */
	uint32_t credits_out;	      /* credit Writes not yet completed */
	double t_first, t_last;
	bool started;
};

/*
 * perftest writes the count when (count % rx depth) % interval is 0.  With
 * too many credit Writes in flight the credit waits, and then carries the
 * count of that moment: a larger one, never a wrong one.
 */
static int credit(struct receiver *rv, struct perf_ep *e, bool now_due)
{
	struct pt_run *t = rv->t;
	uint64_t c = rv->count[e->index];

	if (now_due && !((c % t->rx_depth) % t->credit_every))
		rv->due[e->index] = true;
	if (!rv->due[e->index] || rv->credits_out >= CREDITS_OUT_MAX)
		return 0;
	if (pt_write_credit(t, e, (uint32_t)c))
		return -1;
	rv->due[e->index] = false;
	rv->credits_out++;
	return 0;
}

static int receiver_wc(struct receiver *rv, const struct iw_wc *wc,
		       struct perf_result *r)
{
	struct pt_run *t = rv->t;
	uint32_t i = PERF_WR_EP(wc->wr_id);
	struct perf_ep *e;
	double now = tool_now_us();

	if (wc->status != IW_WC_SUCCESS)
		return pt_wc_failed(t, wc);
	if (wc->wr_id & PT_CREDIT_WR_ID) {
		rv->credits_out--;
		return 0;
	}
	if (!(wc->wr_id & PERF_WR_RECV) || i >= t->d.n_ep)
		return perf_fail("%s: a completion the test did not post",
				 t->d.where);
	e = &t->d.ep[i];
	if (!rv->started)
		rv->t_first = now;
	rv->started = true;
	rv->t_last = now;
	rv->count[i]++;
	r->iters++;
	r->bytes += wc->byte_len;
	if (perf_post_data_recv(e, 1))
		return -1;
	return credit(rv, e, true);
}

/* Whether every QP has its count, and every credit has gone and completed. */
static bool all_done(struct receiver *rv)
{
	struct pt_run *t = rv->t;

	for (uint32_t i = 0; i < t->d.n_ep; i++)
		if ((t->iters && rv->count[i] < t->iters) || rv->due[i])
			return false;
	return t->iters && !rv->credits_out;
}

/*
 * Server of Send bw: takes the client's messages, keeps every receive
 * posted again, writes credits; until each QP has the count, or with
 * --duration until the client's next message on the exchange connection
 * says the run is over.  Then waits for its credit Writes to complete.
 */
int pt_bw_receive(struct pt_run *t, size_t size, struct perf_result *r)
{
	struct receiver rv = { .t = t };
	double idle_since = tool_now_us();

	(void)size;
	for (unsigned int round = 1; !all_done(&rv); round++) {
		struct iw_wc wc[BATCH];
		int n = iw_poll_cq(t->d.cq, BATCH, wc);
		double now = tool_now_us();

		if (n < 0)
			return perf_fail("poll: %s", iw_strerror(n));
		for (int k = 0; k < n; k++)
			if (receiver_wc(&rv, &wc[k], r))
				return -1;
		for (uint32_t i = 0; n && i < t->d.n_ep; i++)
			if (credit(&rv, &t->d.ep[i], false))
				return -1;
		if (n) {
			idle_since = now;
			continue;
		}
		sched_yield();
		if (round & 63)
			continue;
		if (!t->iters && pt_comm_pending(t))
			break;
		if (pt_take_cm(t))
			return -1;
		if ((t->iters || rv.credits_out) &&
		    now - idle_since > t->o->timeout_ms * 1000.0)
			return perf_fail("%s: no message within %d s (%llu of "
					 "%llu taken)",
					 t->d.where, t->o->timeout_ms / 1000,
					 (unsigned long long)r->iters,
					 (unsigned long long)(t->iters *
							      t->d.n_ep));
	}
	r->seconds = (rv.t_last - rv.t_first) / 1e6;
	return 0;
}
