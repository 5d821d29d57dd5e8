// SPDX-License-Identifier: MIT
/*
 * Transmit side of an RDMAP stream: picks the next message, cuts it into
 * DDP segments no longer than the MULPDU allows (RFC 5041 section 5.2),
 * frames each into an FPDU, and hands the FPDUs out as iovecs that point
 * into the application's registered memory.
 *
 * Messages go out whole, one after the other (RFC 5040 section 5.5): a
 * Terminate first when one is due, then our RTR, then Read Responses (and
 * RFC 7306 Atomic Responses) in the order the Requests came, then the
 * send queue in posting order.  An RDMA Write with Immediate Data is two
 * messages back to back (RFC 7306): nothing goes between them.
 */
#include <errno.h>
#include <string.h>

#include "lib/byteorder.h"
#include "lib/copy.h"
#include "lib/error.h"
#include "rdmap/rdmap_internal.h"

enum tx_kind {
	TX_NONE,
	TX_SQ,
	TX_SQ_FIRST, /* the Write of a Write with Immediate Data */
	TX_RESPONSE, /* a Read Response or an Atomic Response */
	TX_TERMINATE,
	TX_RTR,
};

static uint8_t rdmap_ctrl(uint8_t opcode)
{
	return (uint8_t)(RDMAP_VERSION << RDMAP_CTRL_RV_SHIFT | opcode);
}

/*
 * A new message.  Field by field: a memset of the lot costs a string
 * instruction per message.  Its writers fill the extra header up to
 * extra_len.
 */
static void msg_clear(struct rdmap_tx_msg *m)
{
	m->kind = TX_NONE;
	m->slot = 0;
	m->hdr = (struct ddp_hdr){ 0 };
	m->iov = NULL;
	m->iovcnt = 0;
	m->one = (struct iovec){ 0 };
	m->total = m->sent = 0;
	m->extra_len = 0;
}

static void untagged_msg(struct rdmap_qp *qp, uint8_t kind, uint8_t opcode,
			 uint32_t qn)
{
	struct rdmap_tx_msg *m = &qp->msg;

	msg_clear(m);
	m->kind = kind;
	m->hdr.version = DDP_VERSION;
	m->hdr.rsvdulp = rdmap_ctrl(opcode);
	m->hdr.qn = qn;
	m->hdr.msn = qp->msn_tx[qn]++;
}

static void tagged_msg(struct rdmap_qp *qp, uint8_t kind, uint8_t opcode,
		       uint32_t stag, uint64_t to)
{
	struct rdmap_tx_msg *m = &qp->msg;

	msg_clear(m);
	m->kind = kind;
	m->hdr.tagged = true;
	m->hdr.version = DDP_VERSION;
	m->hdr.rsvdulp = rdmap_ctrl(opcode);
	m->hdr.stag = stag;
	m->hdr.to = to;
}

/* RFC 5040 section 4.4: the Read Request header (DDP payload of QN 1). */
static void read_request_hdr(struct rdmap_tx_msg *m, uint32_t sink_stag,
			     uint64_t sink_to, uint32_t size,
			     uint32_t src_stag, uint64_t src_to)
{
	put_be32(m->extra + RDMAP_RR_OFF_SINK_STAG, sink_stag);
	put_be64(m->extra + RDMAP_RR_OFF_SINK_TO, sink_to);
	put_be32(m->extra + RDMAP_RR_OFF_SIZE, size);
	put_be32(m->extra + RDMAP_RR_OFF_SRC_STAG, src_stag);
	put_be64(m->extra + RDMAP_RR_OFF_SRC_TO, src_to);
	m->extra_len = RDMAP_READ_REQ_LEN;
}

static struct rdmap_ord_entry *push_ord(struct rdmap_qp *qp, int64_t sq,
					uint32_t sink_stag, uint64_t sink_to,
					uint32_t len)
{
	struct rdmap_ord_entry *e = ord_at(qp, qp->ord_head + qp->ord_count++);

	counter_max(&qp->stats.ord_max, qp->ord_count);
	*e = (struct rdmap_ord_entry){ .sq = sq, .sink_stag = sink_stag,
				       .sink_to = sink_to, .len = len };
	return e;
}

/* RFC 6581 section 9: the initiator's one zero-length ready-to-receive. */
static void rtr_msg(struct rdmap_qp *qp)
{
	switch (qp->conn.rtr) {
	case MPA_RTR_SEND:
		untagged_msg(qp, TX_RTR, RDMAP_OP_SEND, RDMAP_QN_SEND);
		break;
	case MPA_RTR_WRITE:
		tagged_msg(qp, TX_RTR, RDMAP_OP_WRITE, RDMAP_RTR_STAG, 0);
		break;
	default: /* MPA_RTR_READ */
		untagged_msg(qp, TX_RTR, RDMAP_OP_READ_REQ, RDMAP_QN_READ_REQ);
		read_request_hdr(&qp->msg, RDMAP_RTR_STAG, 0, 0, RDMAP_RTR_STAG,
				 0);
		push_ord(qp, -1, RDMAP_RTR_STAG, 0, 0);
		break;
	}
	qp->rtr_sent = true;
}

static void terminate_msg(struct rdmap_qp *qp)
{
	untagged_msg(qp, TX_TERMINATE, RDMAP_OP_TERMINATE, RDMAP_QN_TERMINATE);
	qp->msg.extra_len =
		(uint8_t)rdmap_term_encode(&qp->term_out, qp->msg.extra);
	qp->term_queued = false;
}

/* RFC 7306: the Immediate Data message, 8 octets of header, no payload. */
static void imm_msg(struct rdmap_qp *qp, uint32_t slot)
{
	const struct rdmap_swqe *w = sq_at(qp, slot);

	untagged_msg(qp, TX_SQ,
		     w->flags & RDMAP_WR_SOLICITED ? RDMAP_OP_IMM_SE
						   : RDMAP_OP_IMM,
		     RDMAP_QN_SEND);
	put_be64(qp->msg.extra, w->imm);
	qp->msg.extra_len = RDMAP_IMM_LEN;
	qp->msg.slot = slot;
}

/* RFC 7306: an atomic already carried out answers with its result. */
static void atomic_response_msg(struct rdmap_qp *qp,
				const struct rdmap_ird_entry *e)
{
	untagged_msg(qp, TX_RESPONSE, RDMAP_OP_ATOMIC_RESP,
		     RDMAP_QN_ATOMIC_RESP);
	put_be32(qp->msg.extra + RDMAP_ARESP_OFF_REQ_ID, e->req_id);
	put_be64(qp->msg.extra + RDMAP_ARESP_OFF_VALUE, e->orig);
	qp->msg.extra_len = RDMAP_ATOMIC_RESP_LEN;
	qp->ird_started++;
}

static void read_response_msg(struct rdmap_qp *qp)
{
	uint32_t pos = qp->ird_head + qp->ird_started;
	struct rdmap_ird_entry *e = ird_at(qp, pos);

	if (e->atomic) {
		atomic_response_msg(qp, e);
		return;
	}
	tagged_msg(qp, TX_RESPONSE, RDMAP_OP_READ_RESP, e->sink_stag,
		   e->sink_to);
	qp->msg.slot = pos;
	qp->msg.one = (struct iovec){ e->src, e->len };
	qp->msg.iov = &qp->msg.one;
	qp->msg.iovcnt = e->len ? 1 : 0;
	qp->msg.total = e->len;
	qp->ird_started++;
}

/*
 * A fenced request waits until every RDMA Read posted before it has its
 * response: those still queued go out first anyway, in posting order, so
 * it waits while any Read is outstanding (RFC 5040 section 5.5 leaves the
 * order of a Read's response against later messages open; the fence is
 * how an application closes it, as with ibverbs' IBV_SEND_FENCE).
 */
static bool fenced(const struct rdmap_qp *qp, const struct rdmap_swqe *w)
{
	return (w->flags & RDMAP_WR_FENCE) && qp->ord_count;
}

/*
 * Local invalidate, in its turn in the send queue: no access through the
 * STag succeeds afterwards.  An STag that is not a valid one of our
 * protection domain fails the request, and the stream with it, as any
 * local fault does.
 */
static void local_invalidate(struct rdmap_qp *qp, struct rdmap_swqe *w)
{
	int rc = ddp_mr_invalidate(qp->attr.stags, w->inv_stag, qp->attr.pd);

	w->state = SWQE_DONE;
	qp->sq_next++;
	if (rc) {
		w->status = RDMAP_WC_LOC_PROT_ERR;
		w->err = -IW_ELOCAL_PROTECTION;
		rdmap_fail_local(qp, -IW_ELOCAL_PROTECTION);
		return;
	}
	rdmap_sq_complete(qp);
}

/* Starts the next send queue request; false when it has to wait. */
static bool sq_msg(struct rdmap_qp *qp)
{
	uint32_t idx = qp->sq_next;
	struct rdmap_swqe *w = sq_at(qp, idx);
	bool se = w->flags & RDMAP_WR_SOLICITED;

	if (fenced(qp, w))
		return false;
	switch (w->op) {
	case RDMAP_WR_SEND:
		untagged_msg(qp, TX_SQ, se ? RDMAP_OP_SEND_SE : RDMAP_OP_SEND,
			     RDMAP_QN_SEND);
		break;
	case RDMAP_WR_SEND_INV:
		untagged_msg(qp, TX_SQ,
			     se ? RDMAP_OP_SEND_SE_INV : RDMAP_OP_SEND_INV,
			     RDMAP_QN_SEND);
		qp->msg.hdr.rsvdulp2 = w->inv_stag;
		break;
	case RDMAP_WR_WRITE:
		tagged_msg(qp, TX_SQ, RDMAP_OP_WRITE, w->rkey, w->remote_addr);
		break;
	case RDMAP_WR_WRITE_IMM:
		tagged_msg(qp, TX_SQ_FIRST, RDMAP_OP_WRITE, w->rkey,
			   w->remote_addr);
		break;
	case RDMAP_WR_IMM:
		imm_msg(qp, idx);
		w->state = SWQE_TX;
		qp->sq_next++;
		return true;
	case RDMAP_WR_ATOMIC: {
		struct rdmap_ord_entry *e;

		if (qp->ord_count == qp->conn.ord)
			return false; /* RFC 7306: Reads and atomics share ORD */
		/* the request's MSN on queue 1 is its Request Identifier */
		untagged_msg(qp, TX_SQ, RDMAP_OP_ATOMIC_REQ, RDMAP_QN_READ_REQ);
		rdmap_atomic_request_hdr(qp->msg.extra, &w->atomic,
					 qp->msg.hdr.msn, w->rkey,
					 w->remote_addr);
		qp->msg.extra_len = RDMAP_ATOMIC_REQ_LEN;
		e = push_ord(qp, idx, 0, 0, 0);
		e->atomic = true;
		e->msn = qp->msg.hdr.msn;
		w->state = SWQE_WAIT_READ;
		qp->msg.slot = idx;
		qp->sq_next++;
		return true;
	}
	default: /* RDMAP_WR_READ */
		if (qp->ord_count == qp->conn.ord)
			return false; /* RFC 5040 6.3: never more than ORD */
		untagged_msg(qp, TX_SQ, RDMAP_OP_READ_REQ, RDMAP_QN_READ_REQ);
		read_request_hdr(&qp->msg, w->sink_stag, w->sink_to,
				 (uint32_t)w->len, w->rkey, w->remote_addr);
		push_ord(qp, idx, w->sink_stag, w->sink_to, (uint32_t)w->len);
		w->state = SWQE_WAIT_READ;
		qp->msg.slot = idx;
		qp->sq_next++;
		return true;
	}
	qp->msg.slot = idx;
	qp->msg.iov = w->iov;
	qp->msg.iovcnt = w->iovcnt;
	qp->msg.total = w->len;
	w->state = SWQE_TX;
	qp->sq_next++;
	return true;
}

/* Chooses the next message to segment; false when there is none yet. */
static bool next_msg(struct rdmap_qp *qp)
{
	if (qp->state == RDMAP_QP_TERMINATING) {
		if (!qp->term_queued)
			return false;
		terminate_msg(qp);
		return true;
	}
	if (qp->state != RDMAP_QP_RTS)
		return false;
	if (qp->tx_imm_next) {
		qp->tx_imm_next = false;
		imm_msg(qp, qp->msg.slot);
		return true;
	}
	if (qp->conn.initiator && qp->conn.rtr && !qp->rtr_sent) {
		rtr_msg(qp);
		return true;
	}
	if (!qp->tx_open)
		return false;
	if (qp->ird_started < qp->ird_count) {
		read_response_msg(qp);
		return true;
	}
	while (qp->sq_next != qp->sq_head) {
		struct rdmap_swqe *w = sq_at(qp, qp->sq_next);

		if (w->op != RDMAP_WR_LOCAL_INV)
			return sq_msg(qp);
		if (fenced(qp, w))
			return false;
		local_invalidate(qp, w);
		if (qp->state != RDMAP_QP_RTS)
			return next_msg(qp); /* the Terminate */
	}
	return false;
}

/*
 * An FPDU may end where a marker falls (the marker then opens the next
 * one), but Wireshark counts such a marker as the ending FPDU's own and
 * misreads the rest of the stream.  Four octets less keep captures
 * readable, at the price of one more small FPDU now and then.
 */
static uint64_t avoid_marker_end(const struct rdmap_qp *qp, size_t hlen,
				 uint64_t take)
{
	uint64_t off = qp->mpa_tx.off;

	if (!qp->conn.markers_tx || take < MPA_MARKER_LEN)
		return take;
	if ((off + mpa_fpdu_wire_len(off, (uint32_t)(hlen + take), true)) %
	    MPA_MARKER_SPACING)
		return take;
	return take - MPA_MARKER_LEN;
}

/*
 * The staging ring.  An FPDU whose wire octets fit in tx_copy_max is
 * copied whole (headers, payload, pad, markers, CRC): a run of small
 * messages then leaves as one contiguous piece instead of four or five
 * iovecs each, an FPDU with markers as one piece instead of two per
 * marker, and the CRC is computed over data just copied.  A larger FPDU
 * keeps only its header, PAD and CRC here (frame_in_place()).  Returns
 * room for @len contiguous octets, or NULL (build in place, or with
 * markers wait for room: see build_fpdu()).
 */
static uint8_t *stage_alloc(struct rdmap_qp *qp, size_t len)
{
	uint64_t at = qp->stage_tail;
	size_t off = at & (qp->stage_size - 1);

	if (len > qp->tx_copy_max)
		return NULL;
	if (off + len > qp->stage_size)
		at += qp->stage_size - off; /* no piece wraps */
	if (at + len - qp->stage_head > qp->stage_size)
		return NULL;
	qp->stage_tail = at + len;
	return qp->stage + (at & (qp->stage_size - 1));
}

/* Where the payload of @fp comes from: it reads that memory until sent. */
static void source_span(struct rdmap_fpdu *fp, const struct iovec *iov,
			int cnt)
{
	fp->src_lo = fp->src_hi = NULL;
	fp->crc_stale = false;
	for (int i = 0; i < cnt; i++) {
		const uint8_t *b = iov[i].iov_base;

		if (!fp->src_lo || b < fp->src_lo)
			fp->src_lo = b;
		if (b + iov[i].iov_len > fp->src_hi)
			fp->src_hi = b + iov[i].iov_len;
	}
}

/*
 * Frames an FPDU around payload it points at.  Its header and its PAD and
 * CRC go to the staging ring when there is room, where the last FPDU's
 * CRC ends: a run of them then leaves in two pieces each (payload, and
 * one CRC with the next header) instead of four.
 */
static int frame_in_place(struct rdmap_qp *qp, struct rdmap_fpdu *fp,
			  const struct iovec *ulpdu, int cnt, size_t ulpdu_len)
{
	uint8_t *frame = NULL;

	if (!qp->conn.markers_tx)
		frame = stage_alloc(qp, mpa_tx_frame_len(ulpdu[0].iov_len,
							 (uint32_t)ulpdu_len));
	if (frame)
		return mpa_tx_fpdu_around(&qp->mpa_tx, ulpdu, cnt, frame,
					  fp->wire, (int)qp->fpdu_iov_max);
	return mpa_tx_fpdu(&qp->mpa_tx, ulpdu, cnt, &fp->frame, fp->wire,
			   (int)qp->fpdu_iov_max);
}

/* The segment's DDP header and the message's extra header, at @out. */
static size_t segment_hdr(const struct rdmap_tx_msg *m, uint8_t *out)
{
	size_t n = ddp_hdr_encode_seg(&m->hdr, m->sent, out);

	copy_small(out + n, m->extra, m->extra_len);
	return n + m->extra_len;
}

/*
 * The segment as iovecs in @ulpdu: its header, encoded into the FPDU's
 * own, then the payload where it lies.  Returns the entry count, or
 * -EMSGSIZE, -ENOSPC as ddp_iov_slice().
 */
static int ulpdu_pieces(const struct rdmap_tx_msg *m, struct rdmap_fpdu *fp,
			uint64_t take, struct iovec *ulpdu)
{
	int cnt;

	ulpdu[0] = (struct iovec){ fp->hdr, segment_hdr(m, fp->hdr) };
	cnt = ddp_iov_slice(m->iov, m->iovcnt, m->sent, take, ulpdu + 1,
			    RDMAP_MAX_SGE);
	return cnt < 0 ? cnt : 1 + cnt;
}

/*
 * A whole FPDU into the staging ring at @dst (room for all its wire
 * octets).  Without markers its ULPDU is built where it goes, header and
 * payload: no header is copied from the FPDU's own while its stores are
 * still on their way to the cache.
 */
static int stage_fpdu(struct rdmap_qp *qp, struct rdmap_fpdu *fp,
		      uint64_t take, uint8_t *dst)
{
	struct rdmap_tx_msg *m = &qp->msg;
	struct iovec ulpdu[1 + RDMAP_MAX_SGE];
	int cnt;

	/* a copy: what the application's memory holds later is no matter */
	source_span(fp, NULL, 0);
	if (!qp->mpa_tx.markers) {
		uint8_t *at = mpa_tx_ulpdu_at(dst);
		size_t hlen = segment_hdr(m, at);
		int rc = ddp_iov_copy_out(m->iov, m->iovcnt, m->sent,
					  at + hlen, take);

		if (rc < 0)
			return rc;
		mpa_tx_fpdu_seal(&qp->mpa_tx, dst, hlen + take);
		return 0;
	}
	cnt = ulpdu_pieces(m, fp, take, ulpdu);
	if (cnt < 0)
		return cnt;
	mpa_tx_fpdu_copy(&qp->mpa_tx, ulpdu, cnt, ulpdu[0].iov_len + take,
			 dst);
	return 0;
}

/*
 * point_fpdu() for the usual segment: a message in one buffer, and room
 * in the ring for the frame (no markers).  Its header is encoded in the
 * ring and nothing is sliced: three pieces, payload in the middle.
 * False, with nothing done, where it does not apply.
 */
static bool point_one(struct rdmap_qp *qp, struct rdmap_fpdu *fp,
		      uint64_t take)
{
	const struct rdmap_tx_msg *m = &qp->msg;
	size_t hlen = ddp_hdr_len(m->hdr.tagged) + m->extra_len;
	const uint8_t *payload;
	uint8_t *frame;

	if (m->iovcnt != 1 || qp->conn.markers_tx)
		return false;
	frame = stage_alloc(qp, mpa_tx_frame_len(hlen,
						 (uint32_t)(hlen + take)));
	if (!frame)
		return false;
	payload = (const uint8_t *)m->iov[0].iov_base + m->sent;
	segment_hdr(m, mpa_tx_ulpdu_at(frame));
	fp->wire_len = mpa_tx_fpdu_around_one(&qp->mpa_tx, frame, hlen,
					      payload, take, fp->wire);
	fp->n_wire = 3;
	fp->src_lo = payload;
	fp->src_hi = payload + take;
	fp->crc_stale = false;
	return true;
}

/* An FPDU around payload that stays in the application's memory. */
static int point_fpdu(struct rdmap_qp *qp, struct rdmap_fpdu *fp,
		      uint64_t take)
{
	struct iovec ulpdu[1 + RDMAP_MAX_SGE];
	int cnt;

	if (point_one(qp, fp, take))
		return 0;
	cnt = ulpdu_pieces(&qp->msg, fp, take, ulpdu);
	if (cnt < 0)
		return cnt;
	source_span(fp, ulpdu + 1, cnt - 1);
	cnt = frame_in_place(qp, fp, ulpdu, cnt, ulpdu[0].iov_len + take);
	if (cnt < 0)
		return cnt;
	fp->n_wire = cnt;
	fp->wire_len = ddp_iov_len(fp->wire, cnt);
	return 0;
}

/*
 * A staged FPDU that finishes the SQ request after the last one the
 * newest record finishes, and lies right after that record in the ring,
 * joins it instead of taking a record of its own: a stream of small
 * messages is then gathered, written and retired a run at a time, not
 * one record per message.  Not with markers (rdmap_tx_reset() finds the
 * FPDUs of a run by their ULPDU_LENGTH fields).
 */
static bool join_run(struct rdmap_qp *qp, const struct rdmap_fpdu *fp)
{
	struct rdmap_fpdu *run;
	const uint8_t *end;

	if (!qp->fpdu_count || fp->completes_sq < 0 || qp->conn.markers_tx)
		return false;
	run = fpdu_at(qp, qp->fpdu_head + qp->fpdu_count - 1);
	if (run->completes_sq < 0 || run->n_wire != 1 ||
	    (uint32_t)run->completes_sq + run->sq_count !=
		    (uint32_t)fp->completes_sq)
		return false;
	end = (const uint8_t *)run->wire[0].iov_base + run->wire[0].iov_len;
	if (end != fp->wire[0].iov_base || end <= qp->stage ||
	    end > qp->stage + qp->stage_size)
		return false; /* not in the ring, or not next in it */
	run->wire[0].iov_len += fp->wire_len;
	run->wire_len += fp->wire_len;
	run->stage_end = fp->stage_end;
	run->sq_count++;
	return true;
}

/* Cuts the next segment of the current message into a new FPDU. */
static int build_fpdu(struct rdmap_qp *qp)
{
	struct rdmap_tx_msg *m = &qp->msg;
	struct rdmap_fpdu *fp = fpdu_at(qp, qp->fpdu_head + qp->fpdu_count);
	size_t hlen = ddp_hdr_len(m->hdr.tagged) + m->extra_len;
	/* the start made sure the header fits: hlen <= RDMAP_MIN_MULPDU */
	uint64_t room = qp->mpa_tx.mulpdu - hlen, take = m->total - m->sent;
	uint64_t wire;
	uint8_t *dst;
	int rc;

	if (take > room)
		take = room;
	take = avoid_marker_end(qp, hlen, take);
	wire = mpa_fpdu_wire_len(qp->mpa_tx.off, (uint32_t)(hlen + take),
				 qp->mpa_tx.markers);
	dst = stage_alloc(qp, wire);
	/*
	 * With markers every FPDU is staged: one waits for the ring to free
	 * as those ahead of it leave (with none ahead, the ring is empty).
	 */
	if (!dst && qp->conn.markers_tx && qp->fpdu_count)
		return -EAGAIN;
	m->hdr.last = m->sent + take == m->total;
	if (dst) {
		rc = stage_fpdu(qp, fp, take, dst);
		if (rc < 0)
			return rc;
		fp->wire[0] = (struct iovec){ dst, wire };
		fp->n_wire = 1;
		fp->wire_len = wire;
	} else {
		rc = point_fpdu(qp, fp, take);
		if (rc < 0)
			return rc;
	}
	fp->stage_end = qp->stage_tail;
	qp->fpdu_bytes += fp->wire_len;
	fp->completes_sq = -1;
	fp->ird_done = 0;
	fp->terminate = false;
	m->sent += take;
	counter_add(&qp->stats.tx_fpdus, 1);
	if (m->hdr.last) {
		if (m->kind != TX_RTR)
			counter_add(&qp->stats.tx_msgs[m->hdr.rsvdulp &
						       RDMAP_CTRL_OPCODE],
				    1);
		if (m->kind == TX_SQ &&
		    !rdmap_wr_is_request(sq_at(qp, m->slot)->op))
			fp->completes_sq = m->slot;
		else if (m->kind == TX_SQ_FIRST)
			qp->tx_imm_next = true; /* the slot stays in m->slot */
		fp->ird_done = m->kind == TX_RESPONSE;
		fp->terminate = m->kind == TX_TERMINATE;
		m->kind = TX_NONE;
	}
	if (dst && join_run(qp, fp))
		return 0;
	fp->sq_count = fp->completes_sq >= 0;
	qp->fpdu_count++;
	return 0;
}

/* No more is built ahead than one writev takes. */
#define TX_AHEAD_BYTES (1u << 20)

/* Builds FPDUs ahead while there is room and something to send. */
static void build_ahead(struct rdmap_qp *qp)
{
	while (qp->fpdu_count < qp->n_fpdus &&
	       qp->fpdu_bytes < TX_AHEAD_BYTES) {
		int rc;

		if (qp->msg.kind == TX_NONE && !next_msg(qp))
			return;
		rc = build_fpdu(qp);
		if (rc == -EAGAIN)
			return; /* no room in the staging ring yet */
		if (rc && qp->state == RDMAP_QP_TERMINATING) {
			/* not even the Terminate can be framed: just end */
			qp->state = RDMAP_QP_ERROR;
			rdmap_tx_reset(qp, false);
			return;
		}
		if (rc) {
			/*
			 * Sizes were checked when the work was posted and at
			 * the start, so this is a fault of ours: the request
			 * fails, and the peer is told in a Terminate sent in
			 * its message's place.
			 */
			if (qp->msg.kind == TX_SQ) {
				struct rdmap_swqe *w = sq_at(qp, qp->msg.slot);

				w->state = SWQE_DONE;
				w->status = RDMAP_WC_LOC_QP_OP_ERR;
				w->err = rc;
			}
			rdmap_fail_local(qp, rc);
			continue;
		}
	}
}

/*
 * Fills @iov (at most @max entries, @max_bytes octets) with the next wire
 * octets: several FPDUs when they are small.  Returns the entry count, 0
 * when nothing is ready.  The caller writes them and reports how many
 * octets left with rdmap_tx_advance().
 */
int rdmap_tx_gather(struct rdmap_qp *qp, struct iovec *iov, int max,
		    size_t max_bytes)
{
	size_t skip = qp->tx_off, room = max_bytes;
	const uint8_t *end = NULL; /* where the last entry ends */
	int n = 0;

	build_ahead(qp);
	for (uint32_t i = 0; i < qp->fpdu_count; i++) {
		struct rdmap_fpdu *fp = fpdu_at(qp, qp->fpdu_head + i);

		/* none of it has left: the CRC covers what goes now */
		if (fp->crc_stale) {
			mpa_tx_crc(&qp->mpa_tx, fp->wire, fp->n_wire);
			fp->crc_stale = false;
		}
		for (int j = 0; j < fp->n_wire; j++) {
			uint8_t *base = fp->wire[j].iov_base;
			size_t len = fp->wire[j].iov_len;

			/* skips what the last write took, and empty pieces */
			if (skip >= len) {
				skip -= len;
				continue;
			}
			base += skip;
			len -= skip;
			skip = 0;
			if (!room)
				return n;
			if (len > room)
				len = room;
			room -= len;
			/* pieces that lie end to end in the ring: one entry */
			if (base == end) {
				iov[n - 1].iov_len += len;
			} else {
				if (n == max)
					return n;
				iov[n++] = (struct iovec){ base, len };
			}
			end = base + len;
		}
	}
	return n;
}

bool rdmap_tx_pending(struct rdmap_qp *qp)
{
	build_ahead(qp);
	return qp->fpdu_count > 0;
}

/* One FPDU has been handed down whole: what it finishes is finished. */
static void fpdu_sent(struct rdmap_qp *qp, const struct rdmap_fpdu *fp)
{
	/* sq_count is 0 where completes_sq is -1 */
	for (uint32_t i = 0; i < fp->sq_count; i++)
		sq_at(qp, (uint32_t)fp->completes_sq + i)->state = SWQE_DONE;
	if (fp->ird_done) {
		qp->ird_head++;
		qp->ird_count--;
		qp->ird_started--;
	}
	if (fp->terminate) {
		const struct rdmap_term *t = &qp->term_out;

		counter_add(&qp->stats.term_tx[t->layer < RDMAP_STATS_LAYERS
						       ? t->layer
						       : RDMAP_STATS_LAYERS - 1],
			    1);
		atomic_store_explicit(&qp->stats.term_tx_last,
				      rdmap_stats_triple(t->layer, t->etype,
							 t->ecode),
				      memory_order_relaxed);
		qp->state = RDMAP_QP_ERROR;
		rdmap_event(qp, RDMAP_EV_TERMINATE_SENT, qp->err, &qp->term_out);
	}
}

/* @len octets of what rdmap_tx_gather() returned were written. */
void rdmap_tx_advance(struct rdmap_qp *qp, size_t len)
{
	qp->tx_off += len;
	counter_add(&qp->stats.tx_octets, len);
	while (qp->fpdu_count &&
	       qp->tx_off >= fpdu_at(qp, qp->fpdu_head)->wire_len) {
		struct rdmap_fpdu *fp = fpdu_at(qp, qp->fpdu_head);

		qp->tx_off -= fp->wire_len;
		qp->fpdu_bytes -= fp->wire_len;
		qp->stage_head = fp->stage_end;
		qp->fpdu_head++;
		qp->fpdu_count--;
		fpdu_sent(qp, fp);
	}
	rdmap_sq_complete(qp);
}

/* Whether @b is one of the octets the FPDU frames itself with. */
static bool fpdu_owns(const struct rdmap_qp *qp, const struct rdmap_fpdu *fp,
		      const uint8_t *b)
{
	const uint8_t *own = (const uint8_t *)fp;
	const uint8_t *marks = (const uint8_t *)fp->frame.markers;

	return (b >= own && b < own + sizeof(*fp)) ||
	       (b >= qp->stage && b < qp->stage + qp->stage_size) ||
	       (marks && b >= marks &&
		b < marks + MPA_TX_MAX_MARKERS * MPA_MARKER_LEN);
}

/*
 * The rest of the FPDU partly written, payload and all, moves to the
 * bounce buffer: its CRC covers that payload as it was when the first
 * octets left.  Pieces already written whole stay as they are; one cut
 * by the last write moves whole (its written part is never read again).
 */
static void bounce_head(struct rdmap_qp *qp, struct rdmap_fpdu *fp)
{
	size_t skip = qp->tx_off, used = 0;

	for (int j = 0; j < fp->n_wire; j++) {
		struct iovec *v = &fp->wire[j];
		const uint8_t *b = v->iov_base;

		if (skip >= v->iov_len) {
			skip -= v->iov_len;
			continue;
		}
		skip = 0;
		/* header, pad and CRC live in the FPDU or the staging ring */
		if (fpdu_owns(qp, fp, b))
			continue;
		memcpy(qp->bounce + used, b, v->iov_len);
		v->iov_base = qp->bounce + used;
		used += v->iov_len;
	}
	fp->src_lo = fp->src_hi = NULL;
}

/*
 * Received data is about to land in [@dst, @dst + @len): an FPDU built
 * from that memory and not yet written must still go out with a CRC that
 * matches its octets (RFC 5044 section 4.4), whatever RFC 5040 makes of
 * data read and written at once.  One not started gets its CRC computed
 * again when it is handed out; the one partly written keeps the payload
 * it started with, copied aside.  Without CRC there is nothing to keep.
 */
void rdmap_tx_placing(struct rdmap_qp *qp, const uint8_t *dst, size_t len)
{
	if (!qp->conn.crc)
		return;
	for (uint32_t i = 0; i < qp->fpdu_count; i++) {
		struct rdmap_fpdu *fp = fpdu_at(qp, qp->fpdu_head + i);

		if (!fp->src_lo || dst >= fp->src_hi || dst + len <= fp->src_lo)
			continue;
		if (i == 0 && qp->tx_off)
			bounce_head(qp, fp);
		else
			fp->crc_stale = true;
	}
}

/*
 * A run partly written ends with the FPDU the write stopped in.  The
 * requests of the FPDUs before it went out whole and are done, as a
 * record of their own would have been when written.
 */
static void cut_run(struct rdmap_qp *qp, struct rdmap_fpdu *fp)
{
	const uint8_t *p = fp->wire[0].iov_base;
	size_t keep = 0;
	uint32_t whole = 0;

	for (;;) {
		keep += mpa_fpdu_wire_len(0, get_be16(p + keep), false);
		if (keep > qp->tx_off)
			break;
		sq_at(qp, (uint32_t)fp->completes_sq + whole++)->state =
			SWQE_DONE;
		if (keep == qp->tx_off)
			break;
	}
	fp->completes_sq += whole;
	fp->sq_count -= whole;
	fp->stage_end -= fp->wire_len - keep;
	fp->wire[0].iov_len = keep;
	fp->wire_len = keep;
}

/*
 * Drops what was built but not written.  With @keep_partial an FPDU already
 * partly on the wire is kept, so the stream stays framed for a Terminate.
 * The sender's stream offset goes back by what is dropped: RFC 5044
 * section 4.3 places markers by the octets that went out, and an FPDU
 * framed after a dropped one (the Terminate) must carry them there.
 */
void rdmap_tx_reset(struct rdmap_qp *qp, bool keep_partial)
{
	qp->msg.kind = TX_NONE;
	qp->tx_imm_next = false;
	if (qp->fpdu_count && qp->tx_off &&
	    fpdu_at(qp, qp->fpdu_head)->sq_count > 1)
		cut_run(qp, fpdu_at(qp, qp->fpdu_head));
	if (keep_partial && qp->fpdu_count && qp->tx_off) {
		struct rdmap_fpdu *fp = fpdu_at(qp, qp->fpdu_head);

		fp->completes_sq = -1;
		fp->sq_count = 0;
		fp->ird_done = 0;
		qp->mpa_tx.off -= qp->fpdu_bytes - fp->wire_len;
		qp->fpdu_count = 1;
		qp->fpdu_bytes = fp->wire_len;
		qp->stage_tail = fp->stage_end;
		return;
	}
	qp->mpa_tx.off -= qp->fpdu_bytes - qp->tx_off;
	qp->fpdu_count = 0;
	qp->fpdu_bytes = 0;
	qp->tx_off = 0;
	qp->stage_head = qp->stage_tail;
}
