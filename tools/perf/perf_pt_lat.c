// SPDX-License-Identifier: MIT
/*
 * iwarp-perf --perftest, the lat patterns, one QP, one operation at a time:
 *
 *  send   the client's Send, the server's Send back; each side waits for
 *         the other's message before it sends the next.
 *  write  each side RDMA-Writes the message into the other's region and
 *         watches the last octet of its own: the value k (mod 256) there
 *         says the peer's k-th Write has landed.  The server writes first.
 *  read   the client Reads; the server does nothing.
 *
 * Latency is perftest's: the time between one post and the next, halved
 * for send and write (a round trip each), whole for read (post to
 * completion).
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_pt.h"

#define BATCH 16

struct lat {
	struct pt_run *t;
	struct perf_ep *e;
	struct perf_result *r;
	size_t size;
	double t_prev, t_first;
	uint64_t sends_out; /* signaled work requests not yet completed */
	bool got_recv;
};

/* A post's time: the sample is the time since the previous one. */
static void stamp(struct lat *l, double now, double factor)
{
	if (l->r->iters)
		tool_stats_add(&l->r->lat, (now - l->t_prev) / factor);
	else
		l->t_first = now;
	l->t_prev = now;
	l->r->iters++;
	l->r->bytes += l->size;
}

static int post(struct lat *l, enum iw_wr_opcode op)
{
	struct perf_ep *e = l->e;
	bool read = op == IW_WR_RDMA_READ;
	struct iw_sge s = { (uintptr_t)(read ? e->buf : e->src),
			    (uint32_t)l->size,
			    read ? e->buf_mr->lkey : e->src_mr->lkey };
	struct iw_send_wr w = {
		.wr_id = PERF_WR_ID(0, e->index, 0), .sg_list = &s,
		.num_sge = 1, .opcode = op, .send_flags = IW_SEND_SIGNALED,
		.rdma = { l->t->rem[0].vaddr, l->t->rem[0].rkey },
	};
	int rc = iw_post_send(e->qp, &w, NULL);

	if (rc)
		return perf_fail("post: %s", iw_strerror(rc));
	l->sends_out++;
	return 0;
}

/* Takes the completions that came: our work requests, and receives. */
static int take(struct lat *l)
{
	struct iw_wc wc[BATCH];
	int n = iw_poll_cq(l->t->d.cq, BATCH, wc);

	if (n < 0)
		return perf_fail("poll: %s", iw_strerror(n));
	for (int k = 0; k < n; k++) {
		bool ok = wc[k].status == IW_WC_SUCCESS;

		if (!ok && pt_wc_failed(l->t, &wc[k]))
			return -1;
		if (!(wc[k].wr_id & PERF_WR_RECV)) {
			l->sends_out--;
			continue;
		}
		if (!ok)
			continue;
		if (l->got_recv)
			return perf_fail("%s: two messages where one was due",
					 l->t->d.where);
		l->got_recv = true;
		if (perf_post_data_recv(l->e, 1))
			return -1;
	}
	return n;
}

/*
 * Waits, bounded by the timeout, until @done says so; polling, since the
 * wait is what is measured.
 */
static int wait_for(struct lat *l, bool (*done)(struct lat *),
		    const char *what)
{
	double since = tool_now_us();

	for (unsigned int round = 1; !done(l); round++) {
		int n = take(l);

		if (n < 0)
			return -1;
		if (n)
			continue;
		sched_yield();
		if (round & 255)
			continue;
		if (pt_take_cm(l->t))
			return -1;
		if (tool_now_us() - since > l->t->o->timeout_ms * 1000.0)
			return perf_fail("%s: no %s within %d s", l->t->d.where,
					 what, l->t->o->timeout_ms / 1000);
	}
	return 0;
}

static bool recv_came(struct lat *l)
{
	return l->got_recv;
}

static bool sends_done(struct lat *l)
{
	return !l->sends_out;
}

static void lat_init(struct lat *l, struct pt_run *t, size_t size,
		     struct perf_result *r)
{
	*l = (struct lat){ .t = t, .e = &t->d.ep[0], .r = r, .size = size };
}

static void lat_end(struct lat *l)
{
	l->r->seconds = (l->t_prev - l->t_first) / 1e6;
}

/* Send lat: the client sends first, the server answers each message. */
int pt_lat_send(struct pt_run *t, size_t size, struct perf_result *r)
{
	struct lat l;

	lat_init(&l, t, size, r);
	for (uint64_t i = 0; i < t->iters; i++) {
		if (t->server && wait_for(&l, recv_came, "message"))
			return -1;
		l.got_recv = false;
		stamp(&l, tool_now_us(), 2);
		if (post(&l, IW_WR_SEND))
			return -1;
		if (!t->server && wait_for(&l, recv_came, "answer"))
			return -1;
		l.got_recv = false;
	}
	lat_end(&l);
	return wait_for(&l, sends_done, "send completion");
}

/* ---- write ----------------------------------------------------------------- */

static uint8_t mark_of(uint64_t k)
{
	return (uint8_t)k; /* perftest's (char)k: 1, 2, ... 255, 0, 1 ... */
}

struct mark_wait {
	struct lat l;
	const uint8_t *at;
	uint8_t want;
};

static bool mark_came(struct lat *l)
{
	const struct mark_wait *m = (const struct mark_wait *)l;

	return __atomic_load_n(m->at, __ATOMIC_ACQUIRE) == m->want;
}

/*
 * Write lat, perftest's order: the server's first Write does not wait;
 * after that each side waits for the peer's k-th mark before its own
 * (k+1)-th Write, and for that Write's completion before it looks again.
 */
int pt_lat_write(struct pt_run *t, size_t size, struct perf_result *r)
{
	struct mark_wait m;
	uint64_t sent = 0, seen = 0;

	lat_init(&m.l, t, size, r);
	m.at = m.l.e->buf + size - 1;
	while (sent < t->iters || seen < t->iters) {
		if (seen < t->iters && !(t->server && sent == 0)) {
			m.want = mark_of(++seen);
			if (wait_for(&m.l, mark_came, "Write"))
				return -1;
		}
		if (sent < t->iters) {
			m.l.e->src[size - 1] = mark_of(++sent);
			stamp(&m.l, tool_now_us(), 2);
			if (post(&m.l, IW_WR_RDMA_WRITE) ||
			    wait_for(&m.l, sends_done, "Write completion"))
				return -1;
		}
	}
	lat_end(&m.l);
	return 0;
}

/*
 * The client's first FPDU on the data connection, a zero-length Write:
 * write lat's server writes first, and an iWARP initiator must have sent
 * before the responder may (RFC 5044 section 7.1.2).  Posted before the
 * last sync, so it has left before the server can start.
 */
int pt_lat_open(struct pt_run *t)
{
	struct lat l;
	struct iw_send_wr w = {
		.wr_id = PERF_WR_ID(0, 0, 0), .num_sge = 0,
		.opcode = IW_WR_RDMA_WRITE, .send_flags = IW_SEND_SIGNALED,
		.rdma = { t->rem[0].vaddr, t->rem[0].rkey },
	};
	int rc;

	lat_init(&l, t, 0, NULL);
	rc = iw_post_send(l.e->qp, &w, NULL);
	if (rc)
		return perf_fail("post: %s", iw_strerror(rc));
	l.sends_out = 1;
	return wait_for(&l, sends_done, "Write completion");
}

/* ---- read ------------------------------------------------------------------ */

/* Read lat: one Read at a time, each timed from post to completion. */
int pt_lat_read(struct pt_run *t, size_t size, struct perf_result *r)
{
	struct lat l;

	lat_init(&l, t, size, r);
	for (uint64_t i = 0; i < t->iters; i++) {
		double t0 = tool_now_us();

		if (post(&l, IW_WR_RDMA_READ) ||
		    wait_for(&l, sends_done, "Read completion"))
			return -1;
		l.t_prev = tool_now_us();
		if (!i)
			l.t_first = t0;
		tool_stats_add(&r->lat, l.t_prev - t0);
		r->iters++;
		r->bytes += size;
	}
	lat_end(&l);
	return 0;
}
