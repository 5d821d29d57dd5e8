// SPDX-License-Identifier: MIT
/*
 * iwarp-perf over libiwarp: the device, its endpoints (a QP with the
 * memory it moves), control messages, and the one place that waits for
 * completions, always within the timeout and always watching the
 * connection manager so a dead connection is named, not waited on.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

#define ACC_SINK (IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | \
		  IW_ACCESS_REMOTE_READ)

/*
 * One failure, one line: in --loopback the server and the client fail
 * together (a Terminate one sends is a flush the other sees), and the
 * first to notice knows why.  Later lines are not printed.
 */
static atomic_bool told;

static bool first_word(void)
{
	return !atomic_exchange(&told, true);
}

int perf_fail(const char *fmt, ...)
{
	va_list ap;

	if (!first_word())
		return -1;
	va_start(ap, fmt);
	tool_vsay(PERF_PROG, fmt, ap);
	va_end(ap);
	return -1;
}

int perf_dev_open(struct perf_dev *d, const struct perf_opts *o)
{
	memset(d, 0, sizeof(*d));
	d->o = o;
	d->ctx = iw_open(&(struct iw_context_attr){
		.comp_mask = IW_CONTEXT_ATTR_PROGRESS,
		.progress = o->progress,
		.progress_threads = o->progress_threads,
	});
	if (!d->ctx)
		return perf_fail("cannot open the device: %s", strerror(errno));
	if (o->debug)
		iw_set_debug(d->ctx, 1);
	d->ch = iw_create_cm_channel(d->ctx);
	d->pd = iw_alloc_pd(d->ctx);
	if (!d->ch || !d->pd)
		return perf_fail("out of resources: %s", strerror(errno));
	return 0;
}

/*
 * --threads: @d is a part of @whole, a device of its own that borrows the
 * context and PD (and the CM channel unless @own_channel: another thread
 * then takes its events, see perf_dev.cm_watched).
 */
int perf_dev_part(struct perf_dev *d, const struct perf_dev *whole,
		  bool own_channel)
{
	memset(d, 0, sizeof(*d));
	d->o = whole->o;
	d->part = true;
	d->ctx = whole->ctx;
	d->pd = whole->pd;
	d->ch = own_channel ? iw_create_cm_channel(d->ctx) : whole->ch;
	d->cm_watched = !own_channel;
	if (!d->ch)
		return perf_fail("out of resources: %s", strerror(errno));
	return 0;
}

static void ep_free(struct perf_ep *e)
{
	if (e->id)
		iw_destroy_id(e->id);
	if (e->qp)
		iw_destroy_qp(e->qp);
	if (e->cq)
		iw_destroy_cq(e->cq);
	if (e->buf_mr)
		iw_dereg_mr(e->buf_mr);
	if (e->src_mr)
		iw_dereg_mr(e->src_mr);
	if (e->ctrl_mr)
		iw_dereg_mr(e->ctrl_mr);
	free(e->buf);
	free(e->src);
	free(e->ctrl);
	perf_ep_step_free(e);
}

void perf_dev_close(struct perf_dev *d)
{
	for (uint32_t i = 0; i < d->n_ep; i++)
		ep_free(&d->ep[i]);
	free(d->ep);
	if (d->cq)
		iw_destroy_cq(d->cq);
	if (d->part) {
		/* the whole closes what is borrowed */
		if (!d->cm_watched && d->ch)
			iw_destroy_cm_channel(d->ch);
		memset(d, 0, sizeof(*d));
		return;
	}
	if (d->pd)
		iw_dealloc_pd(d->pd);
	if (d->ch)
		iw_destroy_cm_channel(d->ch);
	if (d->ctx)
		iw_close(d->ctx);
	memset(d, 0, sizeof(*d));
}

/*
 * Makes room for @n endpoints and the one CQ they share, sized for every
 * work request their queues can hold (libiwarp refuses a smaller one).
 */
int perf_dev_endpoints(struct perf_dev *d, uint32_t n, uint32_t depth,
		       uint32_t send_wr, uint32_t recv_wr)
{
	d->ep = calloc(n, sizeof(*d->ep));
	d->cq = iw_create_cq(d->ctx, (int)(n * (send_wr + recv_wr)), NULL);
	if (!d->ep || !d->cq)
		return perf_fail("cannot create a CQ of %u entries: %s",
				 n * (send_wr + recv_wr), strerror(errno));
	d->n_ep = n;
	d->depth = depth;
	for (uint32_t i = 0; i < n; i++)
		d->ep[i].index = i;
	return 0;
}

/* Page-aligned; zero, but not yet touched (see perf_ep_touch()). */
static uint8_t *region(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len ? len : 1))
		return NULL;
	return p;
}

/*
 * Faults the endpoint's pages in, so no page fault lands inside a
 * measurement.  The client does it once the server has said yes: a size
 * the server refuses costs nothing.
 */
void perf_ep_touch(struct perf_ep *e)
{
	memset(e->buf, 0, e->len);
	if (e->src)
		memset(e->src, 0, e->len);
}

/* Whether a data work request of ours has yet to complete, on any QP. */
bool perf_writes_out(const struct perf_dev *d)
{
	for (uint32_t i = 0; i < d->n_ep; i++)
		if (d->ep[i].completed < d->ep[i].posted)
			return true;
	return false;
}

/*
 * The endpoint's memory: @len octets advertised to the peer, as many
 * again as a local source when @with_src, and the control slots.
 */
int perf_ep_memory(struct perf_dev *d, struct perf_ep *e, size_t len,
		   bool with_src)
{
	e->len = len;
	e->buf = region(len);
	e->ctrl = calloc(PERF_CTRL_SLOTS, PERF_SLOT_LEN);
	if (with_src)
		e->src = region(len);
	if (!e->buf || !e->ctrl || (with_src && !e->src))
		return -ENOMEM;
	e->buf_mr = iw_reg_mr(d->pd, e->buf, len,
			      ACC_SINK | (d->rfc7306 & IW_RFC7306_ATOMICS
						  ? IW_ACCESS_REMOTE_ATOMIC
						  : 0));
	e->ctrl_mr = iw_reg_mr(d->pd, e->ctrl, PERF_CTRL_SLOTS * PERF_SLOT_LEN,
			       IW_ACCESS_LOCAL_WRITE);
	if (with_src)
		e->src_mr = iw_reg_mr(d->pd, e->src, len, 0);
	if (!e->buf_mr || !e->ctrl_mr || (with_src && !e->src_mr))
		return -errno;
	return 0;
}

int perf_ep_qp(struct perf_dev *d, struct perf_ep *e, uint32_t send_wr,
	       uint32_t recv_wr)
{
	struct iw_cq *cq = e->cq ? e->cq : d->cq;
	struct iw_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = send_wr, .max_recv_wr = recv_wr,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = PERF_CTRL_LEN },
		.comp_mask = d->rfc7306 ? IW_QP_INIT_ATTR_RFC7306 : 0,
		.rfc7306 = d->rfc7306,
	};

	e->qp = iw_create_qp(d->pd, &qa);
	if (!e->qp)
		return perf_fail("cannot create a QP (%u send, %u receive work "
				 "requests): %s",
				 send_wr, recv_wr, strerror(errno));
	return 0;
}

int perf_post_ctrl_recv(struct perf_ep *e, uint32_t slot)
{
	struct iw_sge s = { (uintptr_t)(e->ctrl + slot * PERF_SLOT_LEN),
			    PERF_SLOT_LEN, e->ctrl_mr->lkey };
	struct iw_recv_wr r = {
		.wr_id = PERF_WR_ID(PERF_WR_RECV | PERF_WR_CTRL, e->index,
				    slot),
		.sg_list = &s, .num_sge = 1,
	};
	int rc = iw_post_recv(e->qp, &r, NULL);

	return rc ? perf_fail("post receive: %s", iw_strerror(rc)) : 0;
}

/*
 * Posts @n receives for Sends that carry data, as one chain.  They all
 * point at the one buffer: what lands there is not looked at, except
 * control messages, which never overlap data (the protocol waits).
 */
int perf_post_data_recv(struct perf_ep *e, uint32_t n)
{
	struct iw_sge s = { (uintptr_t)e->buf, (uint32_t)e->len,
			    e->buf_mr->lkey };
	struct iw_recv_wr r[64];
	int rc = 0;

	while (n && !rc) {
		uint32_t k = n < 64 ? n : 64;

		for (uint32_t i = 0; i < k; i++)
			r[i] = (struct iw_recv_wr){
				.wr_id = PERF_WR_ID(PERF_WR_RECV, e->index, 0),
				.sg_list = &s, .num_sge = 1,
				.next = i + 1 < k ? &r[i + 1] : NULL,
			};
		rc = iw_post_recv(e->qp, r, NULL);
		n -= k;
	}
	return rc ? perf_fail("post receive: %s", iw_strerror(rc)) : 0;
}

/*
 * Sends a control message (inline: copied at once, nothing to keep) or,
 * with @empty, the zero-length Send that ends a step.  Both carry the
 * Solicited Event bit, which is how the peer tells them from data.
 */
int perf_send_ctrl(struct perf_ep *e, const struct perf_ctrl *c, bool empty)
{
	uint8_t msg[PERF_CTRL_LEN];
	struct iw_sge s = { (uintptr_t)msg, PERF_CTRL_LEN, 0 };
	struct iw_send_wr w = {
		.wr_id = PERF_WR_ID(PERF_WR_CTRL, e->index, 0),
		.sg_list = &s, .num_sge = empty ? 0 : 1,
		.opcode = IW_WR_SEND,
		.send_flags = IW_SEND_SIGNALED | IW_SEND_SOLICITED |
			      IW_SEND_INLINE,
	};
	int rc;

	if (!empty)
		perf_ctrl_encode(c, msg);
	rc = iw_post_send(e->qp, &w, NULL);
	return rc ? perf_fail("post a control message: %s", iw_strerror(rc))
		  : 0;
}

void perf_explain(const char *where, const struct iw_cm_event *ev,
		  const struct iw_mpa_opts *ours)
{
	if (first_word())
		tool_explain(PERF_PROG, where, ev, ours);
}

/*
 * One line for a failed completion.  A flush is the connection's end: the
 * CM event that follows says why, so that is the line.  Otherwise the
 * work request is named by its number.
 */
int perf_wc_failed(struct perf_dev *d, const struct iw_wc *wc)
{
	struct iw_cm_event *ev = NULL;
	struct iw_wc w = *wc;

	if (wc->status == IW_WC_WR_FLUSH_ERR)
		ev = perf_event(d, 500);
	if (ev) {
		perf_explain(d->where, ev, NULL);
		iw_ack_cm_event(ev);
		return -1;
	}
	w.wr_id = PERF_WR_SEQ(wc->wr_id);
	if (first_word())
		tool_explain_wc(PERF_PROG, &w);
	return -1;
}

static struct perf_ep *ep_of_id(struct perf_dev *d, struct iw_cm_id *id)
{
	for (uint32_t i = 0; i < d->n_ep; i++)
		if (d->ep[i].id == id)
			return &d->ep[i];
	return NULL;
}

/*
 * take_cm() where another thread takes the events (a --threads server):
 * it has marked the endpoints that went down, and said why when that was
 * a failure.
 */
static int watched_cm(struct perf_dev *d)
{
	if (d->failed && atomic_load(d->failed))
		return -1;
	for (uint32_t i = 0; i < d->n_ep; i++)
		if (atomic_load(&d->ep[i].up))
			return 0;
	return -2;
}

/*
 * Takes the CM events that came, without waiting.  A connection that
 * ended is a failure (explained in one line) unless it is a clean close
 * that @closing allows between steps; returns -1 then, -2 once every
 * endpoint is down, else 0.
 */
static int take_cm(struct perf_dev *d, bool closing)
{
	struct iw_cm_event *ev;

	if (d->cm_watched)
		return watched_cm(d);
	while ((ev = perf_event(d, 0))) {
		struct perf_ep *e = ep_of_id(d, ev->id);
		bool clean = ev->event == IW_CM_EVENT_DISCONNECTED;

		if (e && (clean || ev->event == IW_CM_EVENT_ERROR))
			e->up = false;
		if (!closing || !clean || (e && e->stepping)) {
			char where[sizeof(d->where) + 32];

			snprintf(where, sizeof(where), "%s%s", d->where,
				 e && e->stepping ? " in the middle of a step"
						  : "");
			perf_explain(where, ev, NULL);
			iw_ack_cm_event(ev);
			return -1;
		}
		iw_ack_cm_event(ev);
	}
	for (uint32_t i = 0; i < d->n_ep; i++)
		if (d->ep[i].up)
			return 0;
	return -2;
}

/*
 * poll(2) on descriptors of the device's objects.  In manual progress
 * mode nothing would make them readable: the library's loop runs in this
 * thread meanwhile.
 */
int perf_wait_fds(struct perf_dev *d, struct pollfd *p, nfds_t n, int ms)
{
	double end = tool_now_us() + ms * 1000.0;

	if (d->o->progress != IW_PROGRESS_MANUAL)
		return poll(p, n, ms);
	for (;;) {
		int r = poll(p, n, 0), left;

		if (r)
			return r;
		left = ms < 0 ? -1 : (int)((end - tool_now_us()) / 1000);
		if (ms >= 0 && left <= 0)
			return 0;
		iw_progress(d->ctx, left < 0 || left > 100 ? 100 : left);
	}
}

/* The next CM event within @ms, or NULL. */
struct iw_cm_event *perf_event(struct perf_dev *d, int ms)
{
	struct pollfd p = { iw_cm_channel_fd(d->ch), POLLIN, 0 };

	if (perf_wait_fds(d, &p, 1, ms) != 1)
		return NULL;
	return tool_event(d->ch, 0);
}

/* The CM events that came, taken without waiting: 0, -1 or -2 as below. */
int perf_check_cm(struct perf_dev *d, unsigned int flags)
{
	return take_cm(d, flags & PERF_WAIT_CLOSING);
}

/*
 * Up to @max completions, waiting at most @ms for the first: by polling
 * (yielding the CPU between looks, so the progress threads run on a
 * small machine) or, with --event or PERF_WAIT_SLEEP, asleep on the CQ's
 * descriptor (PERF_WAIT_SLEEP in manual mode: in iw_progress_cq(), on
 * the CQ's own sockets).  Returns the count, 0 on timeout, -1 when a
 * connection failed (said why), -2 when every connection has closed
 * cleanly and PERF_WAIT_CLOSING allows it.
 */
int perf_poll(struct perf_dev *d, struct iw_wc *wc, int max, int ms,
	      unsigned int flags)
{
	bool closing = flags & PERF_WAIT_CLOSING;
	bool sleep = d->o->event || (flags & PERF_WAIT_SLEEP);
	double end;
	int n, rc;

	n = iw_poll_cq(d->cq, max, wc);
	if (n)
		return n < 0 ? perf_fail("poll: %s", iw_strerror(n)) : n;
	end = tool_now_us() + ms * 1000.0;
	for (unsigned int round = 1;; round++) {
		if (sleep && !d->o->event &&
		    d->o->progress == IW_PROGRESS_MANUAL) {
			/* on the CQ's own sockets: --threads share no loop */
			int left = (int)((end - tool_now_us()) / 1000) + 1;

			rc = iw_progress_cq(d->cq, left > 100 ? 100 : left);
			if (rc < 0)
				return perf_fail("wait: %s", iw_strerror(rc));
			rc = take_cm(d, closing);
			if (rc)
				return rc;
		} else if (sleep) {
			/* a watched channel is another thread's to look at */
			struct pollfd p[2] = {
				{ iw_cq_fd(d->cq), POLLIN, 0 },
				{ d->cm_watched ? -1 : iw_cm_channel_fd(d->ch),
				  POLLIN, 0 },
			};
			int left = (int)((end - tool_now_us()) / 1000) + 1;

			if (d->cm_watched && left > 100)
				left = 100; /* and it marks what it saw */

			iw_req_notify_cq(d->cq, 0);
			n = iw_poll_cq(d->cq, max, wc);
			if (n)
				break;
			if (perf_wait_fds(d, p, 2, left) < 0)
				return perf_fail("poll: %s", strerror(errno));
			if (p[0].revents)
				iw_get_cq_event(d->cq, NULL);
			if (p[1].revents || !p[0].revents) {
				rc = take_cm(d, closing);
				if (rc)
					return rc;
			}
		} else {
			sched_yield();
			if (!(round & 255)) {
				rc = take_cm(d, closing);
				if (rc)
					return rc;
			}
		}
		n = iw_poll_cq(d->cq, max, wc);
		if (n)
			break;
		if ((sleep || !(round & 255)) && tool_now_us() >= end)
			return 0;
	}
	return n < 0 ? perf_fail("poll: %s", iw_strerror(n)) : n;
}

/* What the handshake settled, in words for the table's header. */
void perf_describe(struct perf_dev *d, char *out, size_t len)
{
	struct iw_qp_attr a;

	if (!d->n_ep || iw_query_qp(d->ep[0].qp, &a)) {
		snprintf(out, len, "?");
		return;
	}
	snprintf(out, len, "MPA rev %u, CRC %s, markers %s/%s, MULPDU %u",
		 a.mpa_revision, a.crc ? "on" : "off",
		 a.markers_tx ? "tx" : "-", a.markers_rx ? "rx" : "-",
		 a.mulpdu);
}

void perf_ep_step_free(struct perf_ep *e)
{
	free(e->wr);
	free(e->sge);
	free(e->post_us);
	e->wr = NULL;
	e->sge = NULL;
	e->post_us = NULL;
}

/* The rings a streaming pattern posts from, allocated once per run. */
int perf_ep_step_alloc(struct perf_ep *e, uint32_t depth)
{
	e->wr = calloc(depth, sizeof(*e->wr));
	e->sge = calloc(depth, sizeof(*e->sge));
	e->post_us = calloc(depth, sizeof(*e->post_us));
	if (!e->wr || !e->sge || !e->post_us)
		return perf_fail("out of memory");
	return 0;
}

/* "client ADDR": how a server names the client of @id. */
void perf_peer_name(struct iw_cm_id *id, char *out, size_t len)
{
	struct sockaddr_storage peer;
	char host[64] = "?";

	if (iw_get_peer_addr(id, &peer) == 0)
		getnameinfo((struct sockaddr *)&peer, sizeof(peer), host,
			    sizeof(host), NULL, 0, NI_NUMERICHOST);
	snprintf(out, len, "client %s", host);
}
