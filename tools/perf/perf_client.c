// SPDX-License-Identifier: MIT
/*
 * iwarp-perf, the client over libiwarp: connects one QP per -q, tells the
 * server the test in the MPA private data, and for each size runs a step:
 * STEP/READY (untimed), the pattern, then END/DONE.
 *
 *  bw, rate   DEPTH work requests kept outstanding per QP, posted as
 *             chains; every one signaled (bw) or the last of each chain
 *             and every DEPTH/4th (rate: RFC 5040 send queue completions
 *             are in order, so one completion covers those before it).
 *             Send and Write completions only mean "handed to TCP": the
 *             time stops when DONE answers the zero-length END, which the
 *             server sends after everything before it arrived.  Sends are
 *             never posted beyond the receives the server granted
 *             (CREDIT), since iWARP has no receiver-not-ready retry: a
 *             Send without a receive ends the stream (RFC 5040 7.2).
 *  lat        Send answered by Send; Write answered by Write, each side
 *             watching the last octet of its buffer (perftest's
 *             write_lat); Read, one at a time.
 *
 * The RFC 7306 tests: atomic runs Fetch and Add (1) on the server's
 * buffer as read runs Reads, each QP on a counter of its own, and checks
 * that every result is one more than the one before; write_imm runs
 * Writes with Immediate Data as send runs Sends, since each takes one of
 * the server's receives.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

struct perf_client {
	struct perf_dev d;
	const struct perf_opts *o;
	uint32_t session;
	uint32_t depth;
	uint32_t sig; /* rate: at least one completion per this many */
	uint8_t op;   /* enum iw_wr_opcode of the data work requests */
	bool send_recv_data; /* send lat: replies land in the data buffer */
	struct perf_result *r;
	uint64_t atomic_last[PERF_MAX_QPS]; /* the last Fetch and Add result */
	bool atomic_seen[PERF_MAX_QPS];
	bool atomic_wrong;
	/* --threads: this client's QP is number qp_base of the run's qp_total;
	 * the parts start each pattern together */
	uint32_t qp_base, qp_total;
	struct perf_start *start;
	uint64_t starts; /* the steps it has lined up for */
	struct perf_idle *idle; /* on our device: it goes before the device */
	uint64_t bytes_sent[PERF_MAX_QPS];
	uint64_t msgs_sent[PERF_MAX_QPS];
	double t_last; /* the latest completion of the pattern */
	char conn[160];
	struct iw_wc wc[PERF_STREAM_POLL];
};

/* ---- completions --------------------------------------------------------- */

/*
 * Each QP adds 1 to a counter of its own, and responses come back in
 * request order (RFC 7306): each result is one more than the last.
 */
static void atomic_result(struct perf_client *c, struct perf_ep *e,
			  uint64_t seq)
{
	uint64_t v;

	memcpy(&v, e->buf + (seq % c->depth) * 8, sizeof(v));
	if (c->atomic_seen[e->index] && v != c->atomic_last[e->index] + 1 &&
	    !c->atomic_wrong) {
		perf_fail("%s: QP %u: Fetch and Add returned %llu after %llu",
			  c->d.where, e->index, (unsigned long long)v,
			  (unsigned long long)c->atomic_last[e->index]);
		c->atomic_wrong = true;
	}
	c->atomic_seen[e->index] = true;
	c->atomic_last[e->index] = v;
}

/*
 * Completions of data work requests: the one for sequence number @seq
 * covers every earlier one.  Each gets its post-to-completion latency;
 * bytes come from the completion and, for the unsignaled ones it covers,
 * from the length they were posted with.
 */
static void data_done(struct perf_client *c, struct perf_ep *e,
		      const struct iw_wc *wc, double now)
{
	uint64_t seq = PERF_WR_SEQ(wc->wr_id);
	size_t size = e->sge[0].length;
	/* a ping's completion is no operation of its own: its pong is */
	bool op = c->o->mode != PERF_LAT || perf_test_requests(c->o->test);
	uint32_t i = (uint32_t)(e->completed % c->depth);

	for (uint64_t s = e->completed; s <= seq; s++) {
		if (c->op == IW_WR_ATOMIC_FETCH_AND_ADD)
			atomic_result(c, e, s);
		if (op)
			tool_stats_add(&c->r->lat, now - e->post_us[i]);
		c->r->bytes += s == seq ? wc->byte_len : size;
		c->r->iters += op;
		i = perf_ring_next(i, c->depth);
	}
	e->completed = seq + 1;
	if (op)
		c->t_last = now;
}

/* A control message arrived: a grant of receives, or the server's reply. */
static int ctrl_arrived(struct perf_client *c, struct perf_ep *e,
			const struct iw_wc *wc)
{
	uint64_t slot = PERF_WR_SEQ(wc->wr_id);
	const uint8_t *p = wc->wr_id & PERF_WR_CTRL
				   ? e->ctrl + slot * PERF_SLOT_LEN
				   : e->buf;
	struct perf_ctrl m;

	if (perf_ctrl_decode(p, wc->byte_len, &m))
		return perf_fail("%s: a control message iwarp-perf does not "
				 "know (%u octets)",
				 c->d.where, wc->byte_len);
	if (m.type == PERF_CREDIT) {
		if (m.count > e->credits)
			e->credits = m.count;
		return 0;
	}
	e->reply = m;
	e->got_reply = true;
	return 0;
}

/* Puts back the receive a message used. */
static int repost(struct perf_ep *e, const struct iw_wc *wc)
{
	if (wc->wr_id & PERF_WR_CTRL)
		return perf_post_ctrl_recv(e, (uint32_t)PERF_WR_SEQ(wc->wr_id));
	return perf_post_data_recv(e, 1);
}

static int pong(struct perf_client *c, struct perf_ep *e, double now);

/* Handles one completion: 0, or -1 on failure (said why). */
static int handle_wc(struct perf_client *c, const struct iw_wc *wc,
		     double now)
{
	uint32_t i = PERF_WR_EP(wc->wr_id);
	struct perf_ep *e;

	if (wc->status != IW_WC_SUCCESS)
		return perf_wc_failed(&c->d, wc);
	if (i >= c->d.n_ep)
		return perf_fail("a completion for no QP of ours");
	e = &c->d.ep[i];
	if (!(wc->wr_id & PERF_WR_RECV)) {
		if (!(wc->wr_id & PERF_WR_CTRL))
			data_done(c, e, wc, now);
		return 0;
	}
	/* read a control message before its receive goes back */
	if ((wc->wc_flags & IW_WC_SOLICITED) && ctrl_arrived(c, e, wc))
		return -1;
	if (repost(e, wc))
		return -1;
	if (wc->wc_flags & IW_WC_SOLICITED)
		return 0;
	/* data to us: in send (and write_imm) lat, the pong */
	return c->o->mode == PERF_LAT ? pong(c, e, now) : 0;
}

/*
 * The client's one poll: into c->wc, without waiting when @what is NULL,
 * else waiting (bounded) for the first completion, which is @what.
 * Returns how many came, or -1 (said why).
 */
static int poll_wcs(struct perf_client *c, const char *what)
{
	int n = what ? perf_poll(&c->d, c->wc, PERF_STREAM_POLL,
				 c->o->timeout_ms, 0)
		     : iw_poll_cq(c->d.cq, PERF_STREAM_POLL, c->wc);

	if (n == 0 && what)
		return perf_fail("%s: no %s within %d s", c->d.where, what,
				 c->o->timeout_ms / 1000);
	if (n < 0)
		return what ? -1 : perf_fail("poll: %s", iw_strerror(n));
	return n;
}

/* Handles the @n completions poll_wcs() took; returns @n, or -1. */
static int handle_wcs(struct perf_client *c, int n)
{
	double now = n > 0 ? tool_now_us() : 0;

	for (int k = 0; k < n; k++)
		if (handle_wc(c, &c->wc[k], now) < 0)
			return -1;
	return n;
}

/* Polls as poll_wcs() does and handles what came. */
static int take_wcs(struct perf_client *c, const char *what)
{
	int n = poll_wcs(c, what);

	return n <= 0 ? n : handle_wcs(c, n);
}

/* Every QP's reply of @type; *@when is the time the last one came. */
static int await_replies(struct perf_client *c, uint8_t type, double *when)
{
	for (;;) {
		uint32_t got = 0;

		for (uint32_t i = 0; i < c->d.n_ep; i++) {
			struct perf_ep *e = &c->d.ep[i];

			if (e->got_reply && e->reply.type != type)
				return perf_fail("%s: control message %u where "
						 "%u was due",
						 c->d.where, e->reply.type,
						 type);
			got += e->got_reply;
		}
		if (got == c->d.n_ep)
			break;
		if (take_wcs(c, type == PERF_READY ? "READY" : "DONE") < 0)
			return -1;
	}
	if (when)
		*when = tool_now_us();
	for (uint32_t i = 0; i < c->d.n_ep; i++)
		c->d.ep[i].got_reply = false;
	return 0;
}

/* ---- the patterns -------------------------------------------------------- */

/* The rings a QP posts from: one work request per slot, all alike. */
static void ring_init(struct perf_client *c, struct perf_ep *e, size_t size)
{
	bool read = c->op == IW_WR_RDMA_READ;
	bool atomic = c->op == IW_WR_ATOMIC_FETCH_AND_ADD;

	for (uint32_t i = 0; i < c->depth; i++) {
		e->sge[i] = (struct iw_sge){
			(uintptr_t)(read ? e->buf : e->src), (uint32_t)size,
			read ? e->buf_mr->lkey : e->src_mr->lkey };
		/* an atomic's result: a slot of its own in our buffer */
		if (atomic)
			e->sge[i] = (struct iw_sge){ (uintptr_t)(e->buf + 8 * i),
						     8, e->buf_mr->lkey };
		e->wr[i] = (struct iw_send_wr){
			.sg_list = &e->sge[i], .num_sge = 1, .opcode = c->op,
			.rdma = { e->raddr, e->rkey },
			.next = &e->wr[(i + 1) % c->depth],
		};
		e->wr[i].atomic.compare_add = 1;
	}
	e->posted = e->completed = 0;
}

/* How many more work requests @e may post now. */
static uint64_t room(struct perf_client *c, struct perf_ep *e)
{
	uint64_t n = c->depth - (e->posted - e->completed);

	if (e->target - e->posted < n)
		n = e->target - e->posted;
	if (perf_test_receives(c->o->test) && c->o->mode != PERF_LAT &&
	    e->credits - e->consumed < n)
		n = e->credits - e->consumed;
	return n;
}

/*
 * Posts @n work requests as one chain, cut from the ring where the last
 * one is and mended afterwards.
 */
static int post_chain(struct perf_client *c, struct perf_ep *e, uint32_t n,
		      double now)
{
	uint32_t first = (uint32_t)(e->posted % c->depth);
	uint32_t last = (uint32_t)((e->posted + n - 1) % c->depth);
	/* rate: (seq + 1) % sig, to signal one in sig */
	uint32_t in_sig = (uint32_t)((e->posted + 1) % c->sig);
	struct iw_send_wr *keep, *bad;
	int rc;

	for (uint32_t k = 0, i = first; k < n; k++) {
		uint64_t seq = e->posted + k;
		bool sig = c->o->mode != PERF_RATE || k == n - 1 || !in_sig;

		e->wr[i].wr_id = PERF_WR_ID(0, e->index, seq);
		e->wr[i].send_flags = sig ? IW_SEND_SIGNALED : 0;
		e->wr[i].imm_data = seq; /* write_imm */
		e->post_us[i] = now;
		i = perf_ring_next(i, c->depth);
		in_sig = perf_ring_next(in_sig, c->sig);
	}
	keep = e->wr[last].next;
	e->wr[last].next = NULL;
	rc = iw_post_send(e->qp, &e->wr[first], &bad);
	e->wr[last].next = keep;
	if (rc)
		return perf_fail("post: %s", iw_strerror(rc));
	e->posted += n;
	if (perf_test_receives(c->o->test))
		e->consumed += n;
	c->msgs_sent[e->index] += n;
	c->bytes_sent[e->index] += (uint64_t)n * e->sge[0].length;
	return 0;
}

/*
 * bw and rate (and read lat, at depth 1): keeps every QP's depth full
 * until its target is posted, or the duration is over; then waits for
 * the last completions.
 */
static int stream(struct perf_client *c, uint64_t iters, double t0)
{
	double stop = c->o->duration ? t0 + c->o->duration * 1e6 : 0;

	for (uint32_t i = 0; i < c->d.n_ep; i++)
		c->d.ep[i].target = iters ? iters : UINT64_MAX;
	for (;;) {
		double now = tool_now_us();
		bool busy = false, left = false;

		for (uint32_t i = 0; i < c->d.n_ep; i++) {
			struct perf_ep *e = &c->d.ep[i];
			uint64_t n;

			if (stop && now >= stop && e->target > e->posted)
				e->target = e->posted;
			n = room(c, e);
			if (n) {
				if (post_chain(c, e, (uint32_t)n, now))
					return -1;
				busy = true;
			}
			left |= e->completed < e->target;
		}
		if (!left)
			return 0;
		if (take_wcs(c, busy ? NULL : "completion") < 0)
			return -1;
	}
}

/* Send lat and write lat: one ping per QP in flight. */
static int ping(struct perf_client *c, struct perf_ep *e, uint64_t i)
{
	if (c->op == IW_WR_RDMA_WRITE) {
		e->expect = perf_lat_mark(i);
		e->src[e->sge[0].length - 1] = e->expect;
	}
	e->t0 = tool_now_us();
	return post_chain(c, e, 1, e->t0);
}

/* A pong came back: half its round trip is the latency, as perftest says. */
static int pong(struct perf_client *c, struct perf_ep *e, double now)
{
	tool_stats_add(&c->r->lat, (now - e->t0) / 2);
	c->r->iters++;
	c->t_last = now;
	if (++e->target == e->posted && !e->done)
		return ping(c, e, e->target);
	return 0;
}

/* Write lat: looks at the last octet of each buffer a pong lands in. */
static int watch_marks(struct perf_client *c)
{
	int seen = 0;

	for (uint32_t i = 0; i < c->d.n_ep; i++) {
		struct perf_ep *e = &c->d.ep[i];

		if (e->target < e->posted &&
		    perf_mark_arrived(e, e->sge[0].length)) {
			seen++;
			if (pong(c, e, tool_now_us()))
				return -1;
		}
	}
	return seen;
}

/*
 * Ping-pong on every QP at once until each has done @iters (or the
 * duration is over), then until our own work requests have completed.
 * e->target counts pongs here.  Write lat polls the CQ at each look at
 * memory, so that this thread places a pong as soon as it comes; with
 * --watch-only it polls only until its ping has completed and then
 * watches memory alone, as ib_write_lat does, leaving the pong to the
 * library's thread.
 */
static int ping_pong(struct perf_client *c, uint64_t iters, double t0)
{
	double stop = c->o->duration ? t0 + c->o->duration * 1e6 : 0;
	double idle_since = t0;
	bool write = c->op == IW_WR_RDMA_WRITE;

	for (uint32_t i = 0; i < c->d.n_ep; i++) {
		struct perf_ep *e = &c->d.ep[i];

		e->target = 0;
		e->done = false;
		if (ping(c, e, 0))
			return -1;
	}
	for (unsigned int round = 1;; round++) {
		double now = tool_now_us();
		bool left = false;
		int n, seen;

		for (uint32_t i = 0; i < c->d.n_ep; i++) {
			struct perf_ep *e = &c->d.ep[i];

			e->done |= (stop && now >= stop) ||
				   (iters && e->posted >= iters);
			left |= e->target < e->posted ||
				e->completed < e->posted;
		}
		if (!left)
			return 0;
		if (!write) {
			if (take_wcs(c, "answer") < 0)
				return -1;
			continue;
		}
		/* the poll places what has come: look right after */
		n = !c->o->watch_only || perf_writes_out(&c->d)
			    ? poll_wcs(c, NULL)
			    : 0;
		seen = n < 0 ? -1 : watch_marks(c);
		if (seen < 0 || handle_wcs(c, n) < 0)
			return -1;
		now = tool_now_us();
		if (seen || n)
			idle_since = now;
		else if (now - idle_since > c->o->timeout_ms * 1000.0)
			return perf_fail("%s: no answer within %d s",
					 c->d.where, c->o->timeout_ms / 1000);
		else if (!c->o->watch_only)
			sched_yield();
		if (!(round & 1023) && perf_check_cm(&c->d, 0))
			return -1;
	}
}

/* ---- a step -------------------------------------------------------------- */

/*
 * A control message to the server, once it has a receive for it: in send
 * tests every receive is granted (CREDIT), except in lat, where the one
 * ping in flight never outruns the receives the server keeps posted.
 */
static int send_ctrl(struct perf_client *c, struct perf_ep *e,
		     const struct perf_ctrl *m)
{
	while (perf_test_receives(c->o->test) && c->o->mode != PERF_LAT &&
	       e->consumed >= e->credits)
		if (take_wcs(c, "receive credit") < 0)
			return -1;
	if (perf_send_ctrl(e, m, !m))
		return -1;
	e->consumed++;
	return 0;
}

/* Sends the zero-length END on every QP and waits for DONE. */
static int finish(struct perf_client *c, double *when)
{
	for (uint32_t i = 0; i < c->d.n_ep; i++)
		if (send_ctrl(c, &c->d.ep[i], NULL))
			return -1;
	return await_replies(c, PERF_DONE, when);
}

/* In send tests the server counted what arrived; it must be what we sent. */
static int check_done(struct perf_client *c)
{
	for (uint32_t i = 0; i < c->d.n_ep; i++) {
		struct perf_ep *e = &c->d.ep[i];

		if (!perf_test_receives(c->o->test))
			continue;
		if (e->reply.count != c->msgs_sent[i] ||
		    e->reply.bytes != c->bytes_sent[i])
			return perf_fail("%s: QP %u: the server received %llu "
					 "messages, %llu octets; %llu and %llu "
					 "were sent",
					 c->d.where, i,
					 (unsigned long long)e->reply.count,
					 (unsigned long long)e->reply.bytes,
					 (unsigned long long)c->msgs_sent[i],
					 (unsigned long long)c->bytes_sent[i]);
	}
	return 0;
}

/* Announces the step on every QP and waits until the server is ready. */
static int begin(struct perf_client *c, size_t size, uint64_t iters)
{
	struct perf_ctrl m = { .type = PERF_STEP, .size = (uint32_t)size,
			       .count = c->o->duration ? 0 : iters };

	for (uint32_t i = 0; i < c->d.n_ep; i++) {
		struct perf_ep *e = &c->d.ep[i];

		ring_init(c, e, size);
		c->msgs_sent[i] = c->bytes_sent[i] = 0;
		e->buf[size - 1] = 0; /* write lat watches it */
		if (send_ctrl(c, e, &m))
			return -1;
	}
	return await_replies(c, PERF_READY, NULL);
}

/*
 * One size: @iters per QP (0 with --duration), into @r.  The time is
 * from the first post to DONE for Sends and Writes in bw and rate, to
 * the last completion or pong otherwise.  *@per_qp gets what each QP
 * did, for the TCP run that repeats it.
 */
int perf_client_step(struct perf_client *c, size_t size, uint64_t iters,
		     struct perf_result *r, uint64_t *per_qp)
{
	bool pingpong = c->o->mode == PERF_LAT &&
			!perf_test_requests(c->o->test);
	double t0, t_done;
	int rc;

	c->r = r;
	perf_stats_reserve(&r->lat, c->o->duration ? 0 : iters * c->d.n_ep);
	rc = begin(c, size, iters);
	if (c->start)
		perf_start_wait(c->start, &c->starts); /* even a failed part */
	if (rc)
		return -1;
	t0 = c->t_last = tool_now_us();
	rc = pingpong ? ping_pong(c, iters, t0) : stream(c, iters, t0);
	if (rc || c->atomic_wrong || finish(c, &t_done) || check_done(c))
		return -1;
	if (c->o->mode != PERF_LAT && !perf_test_requests(c->o->test))
		c->t_last = t_done;
	r->seconds = (c->t_last - t0) / 1e6;
	for (uint32_t i = 0; i < c->d.n_ep; i++)
		per_qp[i] = c->d.ep[i].posted;
	return 0;
}

/* ---- connecting ---------------------------------------------------------- */

/* The server's answer: its buffer, or its reason for saying no. */
static int connected(struct perf_client *c, struct perf_ep *e,
		     struct iw_cm_event *ev, size_t len)
{
	char why[PERF_REJ_MAX + 1];
	struct perf_rep rep;

	if (ev->event == IW_CM_EVENT_REJECTED &&
	    perf_rej_decode(ev->private_data, ev->private_data_len, why,
			    sizeof(why)))
		return perf_fail("%s refused: %s", c->d.where, why);
	if (ev->event != IW_CM_EVENT_ESTABLISHED) {
		perf_explain(c->d.where, ev, &c->o->mpa);
		return -1;
	}
	if (perf_rep_decode(ev->private_data, ev->private_data_len, &rep))
		return perf_fail("%s is not an iwarp-perf server (its MPA "
				 "Reply carries %u octets of private data)",
				 c->d.where, ev->private_data_len);
	if (rep.len < len)
		return perf_fail("%s offers %llu octets, %zu are needed",
				 c->d.where, (unsigned long long)rep.len, len);
	e->raddr = rep.addr;
	e->rkey = rep.rkey;
	e->rlen = rep.len;
	e->credits = rep.credits;
	e->consumed = 0;
	e->up = true;
	perf_ep_touch(e);
	return 0;
}

/* Connects QP @e, the test's parameters in the private data. */
static int connect_ep(struct perf_client *c, struct perf_ep *e, size_t len)
{
	const struct perf_opts *o = c->o;
	struct perf_req q = {
		.mode = (uint8_t)o->mode, .test = (uint8_t)o->test,
		.tcp = o->tcp, .threads = o->threads > 0, .session = c->session,
		.watch_only = o->watch_only,
		.qp_index = (uint16_t)(c->qp_base + e->index),
		.qp_count = (uint16_t)c->qp_total,
		.depth = c->depth, .buf_len = len, .rx_depth = o->rx_depth,
		.sink_addr = (uintptr_t)e->buf, .sink_rkey = e->buf_mr->rkey,
	};
	uint8_t pd[PERF_REQ_LEN];
	struct iw_conn_param cp = {
		.private_data = pd, .private_data_len = sizeof(pd),
		.ird = 1,
		.ord = (uint16_t)(perf_test_requests(o->test) ? c->depth : 1),
	};
	struct iw_cm_event *ev;
	int rc;

	perf_req_encode(&q, pd);
	e->id = iw_create_id(c->d.ch, e);
	if (!e->id || iw_set_mpa_opts(e->id, &o->mpa))
		return perf_fail("bad MPA options");
	rc = iw_connect(e->id, o->host, o->port, e->qp, &cp);
	if (rc)
		return perf_fail("cannot connect to %s: %s", c->d.where,
				 iw_strerror(rc));
	ev = perf_event(&c->d, 2 * o->timeout_ms);
	if (!ev)
		return perf_fail("no answer from %s within %d s", c->d.where,
				 2 * o->timeout_ms / 1000);
	rc = connected(c, e, ev, len);
	iw_ack_cm_event(ev);
	return rc;
}

/* What the options make of a client, before it has a device. */
static struct perf_client *client_new(const struct perf_opts *o)
{
	struct perf_client *c = calloc(1, sizeof(*c));
	static const uint8_t op[] = {
		[PERF_SEND] = IW_WR_SEND,
		[PERF_WRITE] = IW_WR_RDMA_WRITE,
		[PERF_READ] = IW_WR_RDMA_READ,
		[PERF_ATOMIC] = IW_WR_ATOMIC_FETCH_AND_ADD,
		[PERF_WRITE_IMM] = IW_WR_RDMA_WRITE_WITH_IMM,
	};

	if (!c)
		return NULL;
	c->o = o;
	c->depth = o->mode == PERF_LAT ? 1 : o->depth;
	c->sig = c->depth / 4 ? c->depth / 4 : 1;
	c->op = op[o->test];
	c->send_recv_data = o->mode == PERF_LAT && perf_test_receives(o->test);
	c->session = (uint32_t)getpid() ^ (uint32_t)tool_now_us();
	c->qp_total = o->qps;
	return c;
}

/*
 * Connects @n QPs on the device, each with memory for the largest size:
 * a sink the server may write to, a source, and receives posted before
 * the connection so nothing the server sends finds none.
 */
static int client_connect(struct perf_client *c, uint32_t n)
{
	const struct perf_opts *o = c->o;
	uint32_t send_wr, recv_wr = PERF_CTRL_SLOTS;
	/* control messages may land in a buffer that receives data */
	size_t len = o->size > PERF_SLOT_LEN ? o->size : PERF_SLOT_LEN;

	/* atomic results: 8 octets per work request in flight */
	if (o->test == PERF_ATOMIC && len < 8 * (size_t)c->depth)
		len = 8 * (size_t)c->depth;
	/* STEP goes before the data, END after it: one slot is enough */
	send_wr = c->depth + 8 < 16384 ? c->depth + 8 : 16384;
	c->d.rfc7306 = o->test == PERF_ATOMIC	   ? IW_RFC7306_ATOMICS
		       : o->test == PERF_WRITE_IMM ? IW_RFC7306_IMMEDIATE
						   : 0;
	if (perf_dev_endpoints(&c->d, n, c->depth, send_wr, recv_wr))
		return -1;
	snprintf(c->d.where, sizeof(c->d.where), "%s:%s", o->host, o->port);
	for (uint32_t i = 0; i < n; i++) {
		struct perf_ep *e = &c->d.ep[i];
		int rc = perf_ep_memory(&c->d, e, len, true);

		if (rc)
			return perf_fail("cannot register 2 x %zu octets: %s",
					 len, iw_strerror(rc));
		if (perf_ep_qp(&c->d, e, send_wr, recv_wr) ||
		    perf_ep_step_alloc(e, c->depth))
			return -1;
		if (c->send_recv_data)
			rc = perf_post_data_recv(e, 8);
		for (uint32_t s = 0; !c->send_recv_data && s < recv_wr && !rc;
		     s++)
			rc = perf_post_ctrl_recv(e, s);
		if (rc || connect_ep(c, e, len))
			return -1;
	}
	perf_describe(&c->d, c->conn, sizeof(c->conn));
	return 0;
}

/* Opens the device, connects --idle's QPs on it if any, and -q QPs. */
int perf_client_open(struct perf_client **cp, const struct perf_opts *o,
		     struct perf_idle *idle)
{
	struct perf_client *c = client_new(o);

	*cp = c;
	if (!c)
		return perf_fail("out of memory");
	if (perf_dev_open(&c->d, o))
		return -1;
	c->idle = idle;
	if (idle && perf_idle_connect(idle, &c->d))
		return -1;
	return client_connect(c, o->qps);
}

/*
 * --threads: one client of a run of @count, on the context and PD of
 * @whole, with a CQ, a CM channel and one QP of its own.
 */
int perf_client_open_part(struct perf_client **cp, const struct perf_opts *o,
			  const struct perf_dev *whole, uint32_t index,
			  uint32_t count, uint32_t session)
{
	struct perf_client *c = client_new(o);

	*cp = c;
	if (!c)
		return perf_fail("out of memory");
	c->qp_base = index;
	c->qp_total = count;
	c->session = session;
	if (perf_dev_part(&c->d, whole, true))
		return -1;
	return client_connect(c, 1);
}

/* Each step's pattern starts once every part's server is READY. */
void perf_client_start_together(struct perf_client *c,
				struct perf_start *start)
{
	c->start = start;
}

/* How the connections came out, for the header. */
void perf_client_header(struct perf_client *c, char *out, size_t len)
{
	snprintf(out, len, "%s", c->conn);
}

/* Disconnects (the server sees a clean close) and frees everything. */
void perf_client_close(struct perf_client *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; i < c->d.n_ep; i++) {
		struct perf_ep *e = &c->d.ep[i];
		struct iw_cm_event *ev;

		if (!e->up)
			continue;
		iw_disconnect(e->id);
		ev = perf_event(&c->d, c->o->timeout_ms);
		if (ev)
			iw_ack_cm_event(ev);
		e->up = false;
	}
	perf_idle_release(c->idle);
	perf_dev_close(&c->d);
	free(c);
}
