// SPDX-License-Identifier: MIT
/*
 * iwarp-perf --perftest: what both ends share besides the exchange.  A run
 * (struct pt_run) holds the device, the exchange connection and the data
 * QPs.  perftest's parameters are taken over here as perftest computes
 * them, since both ends must agree without telling each other: the
 * iteration count, the send and receive depths (the receive depth bounds
 * the Sends in flight, as iWARP has no receiver-not-ready retry), the
 * credit interval and the number of outstanding Reads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/byteorder.h"
#include "perf_pt.h"

#define PT_MIN_OUT_READS 128 /* siw's ORD as responder; our IRD never less */
#define PT_CREDIT_WR_ID (1ull << 60)

static uint64_t default_iters(const struct perf_opts *o)
{
	if (o->mode == PERF_BW && o->test == PERF_WRITE)
		return PT_DEF_ITERS_WRITE_BW;
	return PT_DEF_ITERS;
}

/* perftest's force_dependencies(): depths no larger than the count. */
static void settle_depths(struct pt_run *t)
{
	const struct perf_opts *o = t->o;
	uint64_t n = t->iters;

	t->tx_depth = o->mode == PERF_LAT ? 1 : o->depth;
	if (n && t->tx_depth > n)
		t->tx_depth = (uint32_t)n;
	t->rx_depth = o->test == PERF_SEND ? o->rx_depth : 1;
	if (n && t->rx_depth > n)
		t->rx_depth = (uint32_t)n;
	t->credit_every = t->rx_depth / 3 ? t->rx_depth / 3 : 1;
	t->out_reads = 0;
	if (o->test == PERF_READ)
		t->out_reads = t->tx_depth > PT_MIN_OUT_READS ? t->tx_depth
							      : PT_MIN_OUT_READS;
}

int pt_open(struct pt_run *t, const struct perf_opts *o, bool server)
{
	memset(t, 0, sizeof(*t));
	t->o = o;
	t->server = server;
	t->plan = pt_plan_of(o);
	t->iters = o->duration ? 0 : o->iters ? o->iters : default_iters(o);
	t->max_size = o->sweep ? PT_SWEEP_MAX : o->size;
	settle_depths(t);
	if (perf_dev_open(&t->d, o))
		return -1;
	if (!server)
		snprintf(t->d.where, sizeof(t->d.where), "%s:%s", o->host,
			 o->port);
	else
		snprintf(t->d.where, sizeof(t->d.where), "the client");
	return pt_comm_qp(t);
}

void pt_close(struct pt_run *t)
{
	if (t->comm_id)
		iw_destroy_id(t->comm_id);
	if (t->listen)
		iw_destroy_id(t->listen);
	if (t->comm_qp)
		iw_destroy_qp(t->comm_qp);
	if (t->comm_cq)
		iw_destroy_cq(t->comm_cq);
	if (t->comm_mr)
		iw_dereg_mr(t->comm_mr);
	if (t->credit_mr)
		iw_dereg_mr(t->credit_mr);
	free(t->comm_buf);
	free(t->credit);
	perf_dev_close(&t->d);
}

/* ---- connection events --------------------------------------------------- */

static bool is_data_id(struct pt_run *t, struct iw_cm_id *id, uint32_t *i)
{
	for (*i = 0; *i < t->d.n_ep; ++*i)
		if (t->d.ep[*i].id == id)
			return true;
	return false;
}

/* A connection that is not the run's: a second client, turned away. */
static void turn_away(struct iw_cm_event *ev)
{
	static const char why[] = "busy with another perftest run";

	iw_reject(ev->id, why, sizeof(why) - 1);
	iw_destroy_id(ev->id);
}

/*
 * How a peer may end a run: a FIN, or a reset when it closes with our
 * last octets unread (perftest's server exits as soon as it has answered).
 */
static bool closes(const struct iw_cm_event *ev)
{
	return ev->event == IW_CM_EVENT_DISCONNECTED ||
	       (ev->event == IW_CM_EVENT_ERROR && ev->status == -ECONNRESET);
}

/*
 * Takes the connection events that came, without waiting.  A connection
 * that ends is a failure, named, unless the run is closing; returns 0 or
 * -1.
 */
int pt_take_cm(struct pt_run *t)
{
	struct iw_cm_event *ev;

	while ((ev = perf_event(&t->d, 0))) {
		uint32_t i;
		bool data = is_data_id(t, ev->id, &i);
		bool ours = data || ev->id == t->comm_id;

		if (ev->event == IW_CM_EVENT_CONNECT_REQUEST) {
			turn_away(ev);
		} else if (ours && ev->event == IW_CM_EVENT_ESTABLISHED) {
			if (data)
				t->d.ep[i].up = true;
		} else if (ours && t->closing && closes(ev)) {
			if (data)
				t->d.ep[i].up = false;
			else
				t->comm_up = false;
		} else if (ours) {
			perf_explain(t->d.where, ev, NULL);
			iw_ack_cm_event(ev);
			return -1;
		}
		iw_ack_cm_event(ev);
	}
	return 0;
}

/* A failed data completion: a flush is no failure once the run closes. */
int pt_wc_failed(struct pt_run *t, const struct iw_wc *wc)
{
	if (t->closing && wc->status == IW_WC_WR_FLUSH_ERR)
		return 0;
	return perf_wc_failed(&t->d, wc);
}

/* Whether anything is still connected. */
static bool any_up(const struct pt_run *t)
{
	bool up = t->comm_up;

	for (uint32_t i = 0; i < t->d.n_ep; i++)
		up |= t->d.ep[i].up;
	return up;
}

/* Takes the events of the run's end: connections going down. */
static void take_ends(struct pt_run *t, int ms)
{
	struct iw_cm_event *ev = perf_event(&t->d, ms);
	uint32_t i;

	if (!ev)
		return;
	if (is_data_id(t, ev->id, &i))
		t->d.ep[i].up = false;
	else if (ev->id == t->comm_id)
		t->comm_up = false;
	else if (ev->event == IW_CM_EVENT_CONNECT_REQUEST)
		turn_away(ev);
	iw_ack_cm_event(ev);
}

/*
 * The client lets perftest's server close first, as perftest's own client
 * in effect does (it prints its results first): perftest's server tears
 * its connections down with rdma_disconnect() and is not ready to find
 * them closed already, and its write lat server may not yet have seen our
 * last Write.  Waits at most a few seconds for it.
 */
void pt_await_close(struct pt_run *t)
{
	int ms = t->o->timeout_ms < 5000 ? t->o->timeout_ms : 5000;
	double end = tool_now_us() + ms * 1000.0;

	t->closing = true;
	while (t->d.ch && any_up(t) && tool_now_us() < end)
		take_ends(t, 100);
}

/* Disconnects what is still up and waits, bounded, for the ends. */
void pt_disconnect(struct pt_run *t)
{
	double end = tool_now_us() + t->o->timeout_ms * 1000.0;

	t->closing = true;
	if (!t->d.ch)
		return;
	for (uint32_t i = 0; i < t->d.n_ep; i++)
		if (t->d.ep[i].up)
			iw_disconnect(t->d.ep[i].id);
	if (t->comm_up)
		iw_disconnect(t->comm_id);
	while (any_up(t) && tool_now_us() < end)
		take_ends(t, 100);
}


/* ---- data QPs ------------------------------------------------------------ */

/*
 * A data QP's memory: the region the peer writes to or reads from, of
 * perftest's BUFF_SIZE (perftest cycles small messages through a page),
 * a local source as large, and, once per run, the credit words.
 */
int pt_data_memory(struct pt_run *t, struct perf_ep *e)
{
	size_t len = t->max_size > t->cycle_buffer ? t->max_size
						   : t->cycle_buffer;
	size_t words = 2 * t->d.n_ep * sizeof(uint32_t);
	int rc = perf_ep_memory(&t->d, e, len, true);

	if (rc)
		return perf_fail("cannot register 2 x %zu octets: %s", len,
				 iw_strerror(rc));
	perf_ep_touch(e);
	if (t->credit)
		return 0;
	if (posix_memalign((void **)&t->credit, 64, words))
		return perf_fail("out of memory");
	memset(t->credit, 0, words);
	t->credit_mr = iw_reg_mr(t->d.pd, t->credit, words,
				 IW_ACCESS_LOCAL_WRITE |
					 IW_ACCESS_REMOTE_WRITE);
	return t->credit_mr ? 0 : perf_fail("cannot register the credit "
					    "words: %s", strerror(errno));
}

/*
 * Whether this end takes Sends: both ends of send lat, the server of send
 * bw.  Its receive depth is perftest's, kept posted from before the
 * connection on.
 */
static bool takes_sends(const struct pt_run *t)
{
	return t->o->test == PERF_SEND && (t->o->mode == PERF_LAT || t->server);
}

static uint32_t send_wr(const struct pt_run *t)
{
	return t->tx_depth + 64; /* and credit Writes, and a spare */
}

static uint32_t recv_wr(const struct pt_run *t)
{
	return takes_sends(t) ? t->rx_depth : 1;
}

/* Room for @n data QPs and their CQ; each QP's rings for bw. */
int pt_endpoints(struct pt_run *t, uint32_t n)
{
	if (perf_dev_endpoints(&t->d, n, t->tx_depth, send_wr(t), recv_wr(t)))
		return -1;
	for (uint32_t i = 0; i < n; i++)
		if (perf_ep_step_alloc(&t->d.ep[i], t->tx_depth))
			return -1;
	return 0;
}

/* The QP, with the receives it takes Sends into posted before it connects. */
int pt_data_qp(struct pt_run *t, struct perf_ep *e)
{
	if (perf_ep_qp(&t->d, e, send_wr(t), recv_wr(t)))
		return -1;
	return takes_sends(t) ? perf_post_data_recv(e, recv_wr(t)) : 0;
}

/* RFC 6581 IRD and ORD: Read tests ask for perftest's outstanding Reads. */
struct iw_conn_param pt_conn_param(const struct pt_run *t)
{
	uint16_t r = (uint16_t)(t->out_reads ? t->out_reads : 1);

	return (struct iw_conn_param){ .ird = r, .ord = r };
}

/*
 * Our destination per QP: the region and its STag; in Send bw tests the
 * credit word the peer writes to instead, as perftest does.
 */
void pt_fill_dests(struct pt_run *t)
{
	bool credits = t->o->test == PERF_SEND && t->o->mode == PERF_BW;

	for (uint32_t i = 0; i < t->d.n_ep; i++) {
		struct perf_ep *e = &t->d.ep[i];

		t->my[i] = (struct pt_dest){
			.out_reads = t->out_reads,
			.qpn = i + 1,
			.psn = (uint32_t)random() & 0xffffff,
			.rkey = credits ? t->credit_mr->rkey : e->buf_mr->rkey,
			.vaddr = credits ? (uintptr_t)(t->credit +
						       (t->d.n_ep + i) * 4)
					 : (uintptr_t)e->buf,
		};
	}
}

/* Credits taken so far on QP @qp, as the receiver last wrote them. */
uint32_t pt_credit_seen(const struct pt_run *t, uint32_t qp)
{
	return pt_credit_load(t->credit + (t->d.n_ep + qp) * 4);
}

void pt_credit_reset(struct pt_run *t)
{
	for (uint32_t i = 0; i < t->d.n_ep; i++)
		__atomic_store_n((uint32_t *)(void *)(t->credit +
						      (t->d.n_ep + i) * 4),
				 0, __ATOMIC_RELEASE);
}

/*
 * Receiver of Send bw: the count of messages taken, into the sender's
 * credit word, in its byte order (little-endian; see perf_pt_wire.c).
 * Inline, so the next count never races this one out of our memory.
 */
int pt_write_credit(struct pt_run *t, struct perf_ep *e, uint32_t count)
{
	uint8_t word[4];
	struct iw_sge s = { (uintptr_t)word, sizeof(word), 0 };
	struct iw_send_wr w = {
		.wr_id = PT_CREDIT_WR_ID | e->index, .sg_list = &s,
		.num_sge = 1, .opcode = IW_WR_RDMA_WRITE,
		.send_flags = IW_SEND_SIGNALED | IW_SEND_INLINE,
		.rdma = { t->rem[e->index].vaddr, t->rem[e->index].rkey },
	};
	int rc;

	put_le32(word, count);
	rc = iw_post_send(e->qp, &w, NULL);
	return rc ? perf_fail("post a credit: %s", iw_strerror(rc)) : 0;
}

/* What the handshake settled, and with whom, for the table's header. */
void pt_describe(struct pt_run *t, char *out, size_t len)
{
	char conn[128];

	perf_describe(&t->d, conn, sizeof(conn));
	snprintf(out, len, "perftest %s, %s", t->rem_version_text, conn);
}

size_t pt_first_size(const struct pt_run *t)
{
	return t->o->sweep ? PERF_SWEEP_MIN : t->o->size;
}

/* The next size of a sweep, or 0 after the last. */
size_t pt_next_size(const struct pt_run *t, size_t size)
{
	return t->o->sweep && size < t->max_size ? size * 2 : 0;
}
