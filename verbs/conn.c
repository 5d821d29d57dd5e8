// SPDX-License-Identifier: MIT
/*
 * One connection on the wire: the transport's owner.  First the MPA
 * handshake (RFC 5044 section 7.1, RFC 6581): the Request or Reply goes out
 * from id->out, the peer's frame is gathered in id->in and judged; no FPDU
 * follows a frame before the peer has answered it.  Then the QP's RDMAP
 * engine takes the stream: its FPDUs go out behind our Reply, what arrives
 * goes to it (straight into place when it can), and when it ends the
 * connection closes and its final event goes out.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "verbs/verbs.h"

static void conn_lock(void *arg)
{
	pthread_mutex_lock(&((struct iw_cm_id *)arg)->lock);
}

static void conn_unlock(void *arg)
{
	pthread_mutex_unlock(&((struct iw_cm_id *)arg)->lock);
}

static struct rdmap_qp *engine(struct iw_cm_id *id)
{
	return id->state == ID_CONNECTED && id->qp ? &id->qp->engine : NULL;
}

/*
 * Closes the stream when the engine has ended it.  An engine that has a
 * Terminate to send (RFC 5040 section 4.8) gets reply_timeout_ms for it
 * to leave, whatever holds it back (a peer that stops reading, the first
 * FPDU's hold): nothing may keep the connection, its queue pair and the
 * application waiting for a final event for ever.
 */
static void check_engine(struct iw_cm_id *id)
{
	struct rdmap_qp *e = engine(id);
	uint32_t ms = id->opts.reply_timeout_ms;

	if (e && e->state == RDMAP_QP_ERROR) {
		cm_stream_ended(id, e->err);
	} else if (e && e->state == RDMAP_QP_TERMINATING &&
		   !id->term_deadline) {
		struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

		id->term_deadline = true;
		evtimer_add(id->term_timer, &tv);
	}
}

/*
 * The Terminate has not left in time: the stream closes without it, and
 * the final event says what the Terminate was for.
 */
void conn_terminate_expired(struct iw_cm_id *id)
{
	struct rdmap_qp *e = engine(id);

	if (!e || e->state != RDMAP_QP_TERMINATING)
		return;
	iw_log_id(id, "the Terminate could not leave within %u ms; closing",
		  id->opts.reply_timeout_ms);
	cm_stream_ended(id, e->err);
}

/*
 * Sends what the engine has ready, and closes the stream if the engine
 * has ended it: for changes made outside the transport's callbacks
 * (work posted, a region deregistered, a Terminate queued by us).
 */
void conn_kick(struct iw_cm_id *id)
{
	int rc;

	if (id->state != ID_CONNECTED || !id->has_tp)
		return;
	rc = tp_kick(&id->tp);
	if (rc)
		rc = conn_silence(id, rc);
	if (rc)
		cm_stream_ended(id, rc);
	else
		check_engine(id);
}

/*
 * Work was posted: it leaves now, unless the socket is full and a thread
 * sends it once there is room: the loop's (its write event) or, while the
 * application's polls own the connection, the next poll.  It goes with
 * all that piles up meanwhile: one large write rather than one per work
 * request.  Where only the application's calls run the loop
 * (manual mode, or its own base), the next of those may be long in
 * coming: the post tries at once.
 * It waits too while a Read or atomic response is due: whoever reads
 * that response sends (tp_poll()), so a program that posts one Read at a
 * time as others complete sends its requests in one write per response
 * read, not in one write each.
 * And while the application's polls own the connection
 * (progress_hold()), work posted with no poll since the previous post
 * waits for the next poll of either CQ of the QP, which sends it with
 * whatever else was posted meanwhile (so does the hand-back to the loop).
 * Programs that post one request per call, as perftest does, then pay
 * for one write per poll, not one per request; the first post after a
 * poll, a latency test's, leaves at once.
 */
void conn_posted(struct iw_cm_id *id)
{
	struct rdmap_qp *e = engine(id);
	struct iw_qp *qp = id->qp;
	bool burst = false;

	if (id->held && qp) {
		/* (not held, polls_at_post goes stale: polls came since) */
		uint32_t polls = cq_polls(qp->send_cq);

		if (qp->recv_cq != qp->send_cq)
			polls += cq_polls(qp->recv_cq);
		/* a thread asleep on the CQ would send it only when it wakes */
		burst = polls == id->polls_at_post && !progress_qp_waited(qp);
		id->polls_at_post = polls;
	}
	if (tp_tx_waiting(&id->tp) && id->loop && id->loop->thread_running)
		return;
	if (e && rdmap_responses_due(e))
		return;
	if (burst) {
		id->tx_deferred = true;
		atomic_store(&qp->send_cq->tx_deferred, true);
		if (qp->recv_cq != qp->send_cq)
			atomic_store(&qp->recv_cq->tx_deferred, true);
		return;
	}
	id->tx_deferred = false; /* this write takes what waited too */
	conn_kick(id);
}

/* Sends the work conn_posted() left for a poll.  With the lock held. */
void conn_flush(struct iw_cm_id *id)
{
	if (!id->tx_deferred)
		return;
	id->tx_deferred = false;
	conn_kick(id);
}

/*
 * A thread that polls moves the stream on itself: what has arrived is
 * placed and completed, what is due is sent.  @waiting: it keeps finding
 * its CQ empty (see progress_hold()).  With the connection's lock.
 * Returns whether the socket was read to its end.
 */
bool conn_progress(struct iw_cm_id *id, bool waiting)
{
	bool drained;

	if (id->state != ID_CONNECTED || !id->has_tp)
		return true;
	conn_flush(id); /* before the read: the peer waits for it */
	drained = tp_poll(&id->tp);
	if (waiting && id->state == ID_CONNECTED)
		progress_hold(id);
	return drained;
}

static int conn_tx_gather(void *arg, struct iovec *iov, int max,
			  size_t max_bytes)
{
	struct iw_cm_id *id = arg;
	struct rdmap_qp *e = engine(id);
	size_t frame = id->out_len - id->out_sent;
	int n = 0;

	if (frame && max) {
		if (frame > max_bytes)
			frame = max_bytes;
		iov[n++] = (struct iovec){ id->out + id->out_sent, frame };
		max_bytes -= frame;
	}
	if (e && !id->tx_hold && n < max && max_bytes)
		n += rdmap_tx_gather(e, iov + n, max - n, max_bytes);
	return n;
}

/*
 * The EMSS is TCP's MSS, which grows as the peer's window opens (see
 * tp_mss()): the MULPDU follows it, so that a connection does not frame
 * for ever as it had to at its start, and so does the size of the
 * transport's writes (tp_write_size()).  The path's MTU may change too,
 * either way (RFC 5044 section 4.5 lets the MULPDU change with it): a
 * smaller one makes TCP split every FPDU in two.  It is looked at after
 * 64 KiB sent, then whenever the octets sent have doubled, and from
 * MSS_LOOK_EVERY on, after each MSS_LOOK_EVERY: one getsockopt() per
 * MiB, against the hundreds of system calls that sending it takes.
 */
#define MSS_FIRST_LOOK (64 * 1024)
#define MSS_LOOK_EVERY (1024 * 1024)

static void follow_mss(struct iw_cm_id *id, struct rdmap_qp *e, size_t len)
{
	uint16_t was = e->conn.mulpdu;
	uint32_t mss;

	id->tx_octets += len;
	if (id->tx_octets < id->mss_look_at)
		return;
	mss = tp_mss(&id->tp);
	tp_follow_mss(&id->tp, mss);
	rdmap_set_mulpdu(e, mpa_mulpdu(mss, e->conn.markers_tx));
	if (e->conn.mulpdu != was)
		iw_log_id(id, "MULPDU %u, was %u, writes of %zu octets: "
			      "TCP's MSS changed",
			  e->conn.mulpdu, was, id->tp.tx_write);
	id->mss_look_at = id->tx_octets + (id->tx_octets < MSS_LOOK_EVERY
						   ? id->tx_octets
						   : MSS_LOOK_EVERY);
}

static void conn_tx_advance(void *arg, size_t len)
{
	struct iw_cm_id *id = arg;
	struct rdmap_qp *e = engine(id);
	size_t frame = id->out_len - id->out_sent;

	if (frame > len)
		frame = len;
	id->out_sent += frame;
	len -= frame;
	if (e && len) {
		rdmap_tx_advance(e, len);
		follow_mss(id, e, len);
	}
	if (id->close_after_tx && id->out_sent == id->out_len) {
		/* a refusing Reply has left: that is the end of it */
		tp_shutdown(&id->tp);
		id->state = ID_CLOSED;
		return;
	}
	check_engine(id);
}

static struct rdmap_conn conn_params(struct iw_cm_id *id,
				     const struct mpa_params *mp,
				     bool initiator)
{
	return (struct rdmap_conn){
		.initiator = initiator,
		.crc = mp->crc,
		.markers_tx = mp->markers_tx,
		.markers_rx = mp->markers_rx,
		/* the EMSS of RFC 5044 section 4.5: TCP's MSS */
		.mulpdu = mpa_mulpdu(tp_mss(&id->tp), mp->markers_tx),
		.mulpdu_max = mpa_mulpdu(tp_mss_bound(&id->tp), mp->markers_tx),
		.max_ulpdu = 0xffff,
		.ird = mp->ird,
		.ord = mp->ord,
		.rtr = mp->rtr,
		.responder_first = id->opts.responder_first,
	};
}

/* The QP's engine takes the stream; the MSS is looked at as it goes. */
static int start_engine(struct iw_cm_id *id, const struct rdmap_conn *c)
{
	id->tx_octets = 0;
	id->mss_look_at = MSS_FIRST_LOOK;
	tp_follow_mss(&id->tp, tp_mss(&id->tp));
	return rdmap_qp_start(&id->qp->engine, c);
}

/* The handshake is done: the QP's engine takes the stream. */
void conn_established(struct iw_cm_id *id, const struct mpa_params *mp,
		      bool initiator)
{
	struct rdmap_conn c = conn_params(id, mp, initiator);
	int rc = start_engine(id, &c);

	id->state = ID_CONNECTED;
	iw_log_id(id, "established as %s: MPA rev %u%s, CRC %s, markers %s/%s, "
		      "IRD %u ORD %u, RTR %u, MULPDU %u, writes of %zu octets",
		  initiator ? "initiator" : "responder", mp->revision,
		  mp->enhanced ? " enhanced" : "", mp->crc ? "on" : "off",
		  mp->markers_tx ? "tx" : "-", mp->markers_rx ? "rx" : "-",
		  mp->ird, mp->ord, mp->rtr, c.mulpdu, id->tp.tx_write);
	/* not before: a peer in the handshake gets the default window */
	if (!rc)
		rc = tp_open_rx_window(&id->tp);
	/* the handshake had bounds of its own; the stream has the QP's */
	if (!rc)
		rc = conn_apply_timeouts(id);
	if (!rc)
		rc = tp_kick(&id->tp);
	if (rc)
		cm_stream_ended(id, rc);
}

/*
 * RFC 6581 section 9: an initiator that cannot take the Reply for a reason
 * the framing survives (IRD, RTR) says so in a Terminate.  The engine is
 * started on the Reply's framing only to send it.
 */
static void refuse_with_terminate(struct iw_cm_id *id, int err)
{
	struct mpa_params mp = {
		.crc = id->req.c || id->rep.c,
		.markers_tx = id->rep.m,
		.markers_rx = id->req.m,
	};
	struct rdmap_conn c = conn_params(id, &mp, true);

	if (start_engine(id, &c) == 0) {
		id->state = ID_CONNECTED;
		rdmap_qp_terminate(&id->qp->engine, err);
		conn_kick(id); /* closes once the Terminate has left */
		return;
	}
	cm_stream_ended(id, err);
}

static void peer_info(struct iw_cm_id *id, const struct mpa_frame *f)
{
	id->peer = (struct iw_mpa_info){
		.revision = f->rev,
		.markers = f->m,
		.crc = f->c,
		.reject = f->r,
		.enhanced = f->rev == MPA_REVISION_2 && f->h,
		.p2p = f->p2p,
		.rtr = f->rtr,
		.ird = f->ird,
		.ord = f->ord,
		.private_data_len = f->pd_len,
	};
	id->peer_pd_len = f->pd_len;
	if (f->pd_len)
		memcpy(id->peer_pd, f->pd, f->pd_len);
}

static void timer_stop(struct iw_cm_id *id)
{
	if (id->timer)
		event_del_noblock(id->timer);
	if (id->term_timer)
		event_del_noblock(id->term_timer);
}

#define FIRST_FPDU_DELAY_MIN_US 1000
#define FIRST_FPDU_DELAY_MAX_US 100000

static int64_t elapsed_us(const struct timespec *from,
			  const struct timespec *to)
{
	return (to->tv_sec - from->tv_sec) * 1000000 +
	       (to->tv_nsec - from->tv_nsec) / 1000;
}

/*
 * Linux siw sends its Reply before it points the socket at its QP, and an
 * FPDU arriving in between waits unseen until more data comes: a slow
 * peer is slow there too, so by default an initiator's first FPDU waits
 * as long as the peer took to answer, within bounds.  As an initiator siw
 * takes octets read together with the Reply as a protocol error, and
 * how soon it reads the Reply shows nowhere: a responder that speaks
 * first waits the longest of those bounds.
 */
void conn_hold_first_fpdu(struct iw_cm_id *id, bool initiator)
{
	uint32_t us = id->opts.first_fpdu_delay_us;
	struct timeval tv;

	if (us == IW_FIRST_FPDU_DELAY_AUTO && !initiator) {
		us = FIRST_FPDU_DELAY_MAX_US;
	} else if (us == IW_FIRST_FPDU_DELAY_AUTO) {
		int64_t took = elapsed_us(&id->hs_start, &id->hs_done);

		us = took < FIRST_FPDU_DELAY_MIN_US   ? FIRST_FPDU_DELAY_MIN_US
		     : took > FIRST_FPDU_DELAY_MAX_US ? FIRST_FPDU_DELAY_MAX_US
						      : (uint32_t)took;
	}
	if (!us)
		return;
	iw_log_id(id, "the first FPDU waits %u us", us);
	tv = (struct timeval){ us / 1000000, us % 1000000 };
	id->tx_hold = true;
	evtimer_add(id->timer, &tv);
}

/* Initiator: the peer's Reply arrived whole. */
static void reply_arrived(struct iw_cm_id *id, const struct mpa_frame *rep)
{
	struct mpa_params mp;
	int rc;

	timer_stop(id);
	clock_gettime(CLOCK_MONOTONIC, &id->hs_done);
	peer_info(id, rep);
	id->rep = *rep;
	iw_log_id(id, "MPA Reply: rev %u M%u C%u R%u, IRD %u ORD %u, p2p %u "
		      "RTR 0x%x, %u octets of private data",
		  rep->rev, rep->m, rep->c, rep->r, rep->ird, rep->ord,
		  rep->p2p, rep->rtr, rep->pd_len);
	rc = mpa_negotiate_reply(&id->policy, &id->req, rep, &mp);
	if (rc == -IW_EMPA_REJECTED) {
		id->reported = true;
		cm_event(id, IW_CM_EVENT_REJECTED, rc, true);
		conn_close(id, rc);
		return;
	}
	if (rc) {
		iw_log_id(id, "refusing the Reply: %s", iw_strerror(rc));
		if (rc == -IW_EMPA_INSUFFICIENT_IRD ||
		    rc == -IW_EMPA_NO_MATCHING_RTR ||
		    rc == -IW_EMPA_RTR_INVALID)
			refuse_with_terminate(id, rc);
		else
			cm_stream_ended(id, rc);
		return;
	}
	conn_hold_first_fpdu(id, true);
	conn_established(id, &mp, true);
	/* not when a Read it cannot carry has the engine terminate it */
	if (id->state == ID_CONNECTED &&
	    id->qp->engine.state == RDMAP_QP_RTS) {
		id->up = true;
		cm_event(id, IW_CM_EVENT_ESTABLISHED, 0, true);
	}
}

/* The first FPDU has waited long enough: what is queued goes now. */
void conn_release_hold(struct iw_cm_id *id)
{
	id->tx_hold = false;
	conn_kick(id);
}

/* Responder: the peer's Request arrived whole; the application decides. */
static void request_arrived(struct iw_cm_id *id, const struct mpa_frame *req)
{
	timer_stop(id);
	peer_info(id, req);
	id->req = *req;
	id->req.pd = NULL; /* id->in may be reused; the copy is peer_pd */
	id->state = ID_REQ_RCVD;
	if (!cm_unlink_pending(id))
		return; /* the listener dropped it to make room */
	id->internal = false; /* the application owns it from now on */
	iw_log_id(id, "MPA Request: rev %u M%u C%u, IRD %u ORD %u, p2p %u "
		      "RTR 0x%x, %u octets of private data",
		  req->rev, req->m, req->c, req->ird, req->ord, req->p2p,
		  req->rtr, req->pd_len);
	cm_event(id, IW_CM_EVENT_CONNECT_REQUEST, 0, true);
}

static int conn_rx_feed(void *arg, const uint8_t *p, size_t len);

/*
 * Gathers the peer's frame.  Nothing may follow a Request before we have
 * answered it.  A Reply may be followed at once by the responder's first
 * FPDUs: RFC 5044 has the responder wait for ours, but Linux siw does
 * not, and what it sends is taken once the connection is up.
 */
static int handshake_rx(struct iw_cm_id *id, const uint8_t *p, size_t len,
			bool want_reply)
{
	struct mpa_frame f;
	size_t frame, take;
	ssize_t n;

	/* the header first, then as much as its private data length says */
	frame = id->in_len < MPA_FRAME_HDR_LEN
			? MPA_FRAME_HDR_LEN
			: mpa_frame_peek_len(id->in, id->in_len);
	if (frame > sizeof(id->in))
		frame = sizeof(id->in);
	take = frame - id->in_len < len ? frame - id->in_len : len;
	memcpy(id->in + id->in_len, p, take);
	id->in_len += take;
	n = mpa_frame_decode(id->in, id->in_len, want_reply, MPA_MAX_PD_LEN,
			     &f);
	if (n == -EAGAIN && take < len)
		return handshake_rx(id, p + take, len - take, want_reply);
	if (n == -EAGAIN)
		return 0;
	if (n > 0 && !want_reply && take < len)
		n = -IW_EMPA_UNEXPECTED;
	if (n < 0) {
		iw_log_id(id, "bad MPA %s: %s", want_reply ? "Reply" : "Request",
			  iw_strerror((int)n));
		cm_stream_ended(id, (int)n);
		return (int)n;
	}
	if (!want_reply) {
		request_arrived(id, &f);
		return 0;
	}
	reply_arrived(id, &f);
	if (take < len && id->state == ID_CONNECTED) {
		iw_log_id(id, "%zu octets right behind the Reply", len - take);
		return conn_rx_feed(id, p + take, len - take);
	}
	return 0;
}

static int conn_rx_feed(void *arg, const uint8_t *p, size_t len)
{
	struct iw_cm_id *id = arg;
	struct rdmap_qp *e = engine(id);
	int rc;

	switch (id->state) {
	case ID_REQ_SENT:
		return handshake_rx(id, p, len, true);
	case ID_REQ_WAIT:
		return handshake_rx(id, p, len, false);
	case ID_CONNECTED:
		rc = rdmap_rx_feed(e, p, len);
		check_engine(id);
		return rc;
	default:
		/* the peer spoke before we answered its frame */
		iw_log_id(id, "%zu octets before our answer", len);
		cm_stream_ended(id, -IW_EMPA_UNEXPECTED);
		return -IW_EMPA_UNEXPECTED;
	}
}

static uint8_t *conn_rx_direct(void *arg, size_t *len)
{
	struct rdmap_qp *e = engine(arg);

	return e ? rdmap_rx_direct(e, len) : NULL;
}

static int conn_rx_direct_done(void *arg, size_t len)
{
	struct iw_cm_id *id = arg;
	struct rdmap_qp *e = engine(id);
	int rc = e ? rdmap_rx_direct_done(e, len) : -EINVAL;

	check_engine(id);
	return rc;
}

/* Active open: TCP is up (send the Request) or it failed. */
static void conn_connected(void *arg, int err)
{
	struct iw_cm_id *id = arg;

	if (id->state != ID_TCP_CONNECT)
		return;
	if (err) {
		iw_log_id(id, "TCP connect failed: %s", iw_strerror(err));
		id->reported = true;
		cm_event(id, IW_CM_EVENT_UNREACHABLE, err, false);
		conn_close(id, err);
		return;
	}
	id->state = ID_REQ_SENT;
	clock_gettime(CLOCK_MONOTONIC, &id->hs_start);
	iw_log_id(id, "TCP connected; MPA Request out (rev %u M%u C%u IRD %u "
		      "ORD %u RTR 0x%x)",
		  id->req.rev, id->req.m, id->req.c, id->req.ird, id->req.ord,
		  id->req.rtr);
	if (id->timer) {
		struct timeval tv = { id->opts.reply_timeout_ms / 1000,
				      (id->opts.reply_timeout_ms % 1000) * 1000 };

		evtimer_add(id->timer, &tv);
	}
}

/* The peer closed (0) or the socket failed. */
static void conn_closed(void *arg, int err)
{
	struct iw_cm_id *id = arg;
	struct rdmap_qp *e = engine(id);

	switch (id->state) {
	case ID_CONNECTED:
		if (err)
			err = conn_silence(id, err);
		if (e->state == RDMAP_QP_RTS) {
			if (err)
				rdmap_qp_set_error(e, err);
			else
				rdmap_rx_eof(e); /* clean, or lost mid-FPDU */
		}
		cm_stream_ended(id, e->err == -IW_ECLOSED ? 0 : e->err);
		break;
	case ID_TCP_CONNECT:
	case ID_REQ_SENT:
	case ID_REQ_WAIT:
	case ID_REQ_RCVD:
		/*
		 * A peer that hangs up mid-handshake resets the connection;
		 * one that does so inside its Request or Reply cut it short.
		 */
		if (!err)
			err = id->in_len && id->state != ID_REQ_RCVD
				      ? -IW_EMPA_TRUNCATED
				      : -ECONNRESET;
		iw_log_id(id, id->state == ID_REQ_RCVD
				      ? "the peer left after its MPA Request, "
					"before our answer: %s"
				      : "closed during the MPA handshake: %s",
			  iw_strerror(err));
		cm_stream_ended(id, err);
		break;
	default:
		conn_close(id, err);
		break;
	}
}

/*
 * Where each frame ends, for the trace: a direction opens with its MPA
 * Request or Reply, then FPDUs framed as negotiated for it.
 */
static size_t conn_trace_frame_len(void *arg, bool tx, bool first,
				   uint64_t off, const uint8_t *p, size_t avail)
{
	struct rdmap_qp *e = engine(arg);

	if (first)
		return mpa_frame_peek_len(p, avail);
	if (!e)
		return avail; /* nothing may follow the frame yet: as it is */
	return (size_t)mpa_fpdu_peek_len(off, tx ? e->conn.markers_tx
						  : e->conn.markers_rx,
					 p, avail);
}

const struct tp_ops conn_tp_ops = {
	.lock = conn_lock,
	.unlock = conn_unlock,
	.tx_gather = conn_tx_gather,
	.tx_advance = conn_tx_advance,
	.rx_feed = conn_rx_feed,
	.rx_direct = conn_rx_direct,
	.rx_direct_done = conn_rx_direct_done,
	.connected = conn_connected,
	.closed = conn_closed,
	.trace_frame_len = conn_trace_frame_len,
};

/*
 * Ends the connection without an event: the socket closes and the QP goes
 * to the error state, its outstanding work flushed with @err (0: closed).
 * A QP whose connection failed before it was established goes there too,
 * as in libibverbs: the work posted on it for that connection completes
 * now, flushed, rather than never or on some later connection.
 */
void conn_close(struct iw_cm_id *id, int err)
{
	timer_stop(id);
	progress_unhold(id);
	if (id->has_tp)
		tp_shutdown(&id->tp);
	if (id->qp && id->qp->engine.state != RDMAP_QP_ERROR)
		rdmap_qp_set_error(&id->qp->engine, err ? err : -IW_ECLOSED);
	id->state = ID_CLOSED;
}
