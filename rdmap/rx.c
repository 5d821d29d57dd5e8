// SPDX-License-Identifier: MIT
/*
 * Receive side of an RDMAP stream.  The MPA de-framer hands up ULPDUs; each
 * is one DDP segment whose header is gathered (it may arrive in pieces),
 * checked layer by layer, and resolved to a destination before any payload
 * is placed: a registered region for tagged segments (RFC 5041 section
 * 5.1), the posted receive for untagged Sends (section 5.3).  With CRC on
 * a segment comes up only once its FPDU has passed the CRC, so nothing of
 * a corrupted one is placed; what a message means (a completion, a Read
 * to answer, an invalidation, the end of the stream) is acted upon once
 * its last segment has passed the CRC.  The RFC 7306 messages are known
 * only to a stream that enabled them: anywhere else they are what any
 * unknown opcode is (RFC 5040 7.1).
 */
#include <errno.h>
#include <string.h>

#include "lib/byteorder.h"
#include "lib/copy.h"
#include "lib/error.h"
#include "rdmap/rdmap_internal.h"

static int ulpdu_begin(void *arg, uint16_t len)
{
	struct rdmap_qp *qp = arg;
	struct rdmap_rx_seg *s = &qp->seg;

	/*
	 * Field by field, the header octets aside (hdr_have bounds what is
	 * read of them): a memset of the lot costs a string instruction per
	 * segment.
	 */
	s->hdr_have = 0;
	s->hdr_need = 1; /* the control octet tells the header's size */
	s->len = len;
	s->left = s->payload = 0;
	s->ddp_ok = s->hdr_done = false;
	s->ddp = (struct ddp_hdr){ 0 };
	s->opcode = 0;
	s->dst = NULL;
	s->untagged_dst = s->rtr = false;
	s->placed = 0;
	return 0;
}

static bool is_send(uint8_t op)
{
	return op >= RDMAP_OP_SEND && op <= RDMAP_OP_SEND_SE_INV;
}

/*
 * RFC 7306: the opcodes of an enabled extension, each on its queue.  Off
 * the common path: only a message no RFC 5040 rule takes gets here.
 */
static bool ext_opcode_ok(const struct rdmap_qp *qp, uint8_t op, uint32_t qn)
{
	uint8_t ext = qp->attr.ext;

	switch (op) {
	case RDMAP_OP_ATOMIC_REQ:
		return (ext & RDMAP_EXT_ATOMICS) && qn == RDMAP_QN_READ_REQ;
	case RDMAP_OP_ATOMIC_RESP:
		return (ext & RDMAP_EXT_ATOMICS) && qn == RDMAP_QN_ATOMIC_RESP;
	case RDMAP_OP_IMM:
	case RDMAP_OP_IMM_SE:
		return (ext & RDMAP_EXT_IMM) && qn == RDMAP_QN_SEND;
	default:
		return false;
	}
}

/* The RDMAP header octets an RFC 7306 message carries after DDP's. */
static size_t ext_hdr_len(uint8_t op)
{
	switch (op) {
	case RDMAP_OP_ATOMIC_REQ:
		return RDMAP_ATOMIC_REQ_LEN;
	case RDMAP_OP_ATOMIC_RESP:
		return RDMAP_ATOMIC_RESP_LEN;
	default: /* Immediate Data */
		return RDMAP_IMM_LEN;
	}
}

/*
 * RFC 6581 section 9: a peer-to-peer initiator's first message is the
 * agreed zero-length RTR; anything else means the models did not match.
 */
static int check_rtr(struct rdmap_qp *qp)
{
	struct rdmap_rx_seg *s = &qp->seg;
	bool ok;

	switch (qp->conn.rtr) {
	case MPA_RTR_SEND:
		ok = s->opcode == RDMAP_OP_SEND && s->len == DDP_UNTAGGED_HDR_LEN;
		break;
	case MPA_RTR_WRITE:
		ok = s->opcode == RDMAP_OP_WRITE && s->len == DDP_TAGGED_HDR_LEN;
		break;
	default: /* MPA_RTR_READ; its size is checked with its header */
		ok = s->opcode == RDMAP_OP_READ_REQ;
		break;
	}
	if (!ok)
		return -IW_EMPA_NO_MATCHING_RTR;
	s->rtr = true;
	return 0;
}

/*
 * The DDP header is in: DDP version, queue number, MSN and MO, then RDMAP
 * version and opcode, in that order (a lower layer's fault is reported
 * before a higher one's).  Buffers and STags are judged afterwards.
 */
static int check_model(struct rdmap_qp *qp)
{
	struct rdmap_rx_seg *s = &qp->seg;
	const struct ddp_hdr *h = &s->ddp;
	uint8_t op = s->opcode;
	bool ok;

	if (h->version != DDP_VERSION)
		return h->tagged ? -IW_EDDP_T_VERSION : -IW_EDDP_U_VERSION;
	if (!h->tagged) {
		const struct ddp_queue *q;

		if (h->qn >= RDMAP_QN_COUNT &&
		    !(h->qn == RDMAP_QN_ATOMIC_RESP &&
		      (qp->attr.ext & RDMAP_EXT_ATOMICS)))
			return -IW_EDDP_U_QN;
		q = &qp->rxq[h->qn];
		if (h->msn != q->msn)
			return -IW_EDDP_U_MSN;
		if (h->mo != q->mo)
			return -IW_EDDP_U_MO;
	}
	if ((h->rsvdulp & RDMAP_CTRL_RV) >> RDMAP_CTRL_RV_SHIFT != RDMAP_VERSION)
		return -IW_ERDMAP_VERSION;
	if (h->tagged)
		ok = op == RDMAP_OP_WRITE || op == RDMAP_OP_READ_RESP;
	else
		ok = (is_send(op) && h->qn == RDMAP_QN_SEND) ||
		     (op == RDMAP_OP_READ_REQ && h->qn == RDMAP_QN_READ_REQ) ||
		     (op == RDMAP_OP_TERMINATE && h->qn == RDMAP_QN_TERMINATE) ||
		     ext_opcode_ok(qp, op, h->qn);
	if (!ok)
		return -IW_ERDMAP_OPCODE;
	if (!qp->conn.initiator && qp->conn.rtr && !qp->rtr_seen &&
	    op != RDMAP_OP_TERMINATE)
		return check_rtr(qp);
	return 0;
}

/*
 * Takes the posted receive the next Send message lands in.  Returns 0, or
 * -IW_ELOCAL_PROTECTION when a region it named has been deregistered
 * since: a local fault, which ends the stream and completes the receive
 * with a protection error (rdmap_recvs_revoke()).
 */
static int take_recv(struct rdmap_qp *qp)
{
	struct rdmap_rwqe *cur = &qp->cur_recv;

	if (qp->attr.srq) {
		qp->have_cur_recv = rdmap_srq_take(qp->attr.srq, cur);
	} else if (qp->rq_count) {
		rwqe_copy(cur, rq_at(qp, qp->rq_tail));
		qp->rq_tail++;
		qp->rq_count--;
		qp->have_cur_recv = true;
	}
	if (!qp->have_cur_recv || !cur->revoked)
		return 0;
	rdmap_fail_local(qp, -IW_ELOCAL_PROTECTION);
	return -IW_ELOCAL_PROTECTION;
}

/* The current receive's octets [@off, @off + @len) are about to be written. */
static void placing_untagged(struct rdmap_qp *qp, size_t off, size_t len)
{
	struct iovec piece[RDMAP_MAX_SGE];
	int n;

	if (!qp->conn.crc || !qp->fpdu_count)
		return; /* nothing built that could read them */
	n = ddp_iov_slice(qp->cur_recv.iov, qp->cur_recv.iovcnt, off, len,
			  piece, RDMAP_MAX_SGE);
	for (int i = 0; i < n; i++)
		rdmap_tx_placing(qp, piece[i].iov_base, piece[i].iov_len);
}

/* Header complete: decide where the payload goes, or why it may not. */
static int segment_start(struct rdmap_qp *qp)
{
	struct rdmap_rx_seg *s = &qp->seg;
	const struct ddp_hdr *h = &s->ddp;
	struct ddp_queue *q;
	enum ddp_mr_fault f;
	int rc;

	switch (s->opcode) {
	case RDMAP_OP_WRITE:
		/* zero-length tagged segments are not checked (siw RTRs: STag 1) */
		if (s->payload == 0)
			return 0;
		f = ddp_mr_check_cached(qp->attr.stags, &qp->place_mr, h->stag,
					qp->attr.pd, DDP_ACCESS_REMOTE_WRITE,
					h->to, s->payload, &s->dst);
		rc = ddp_tagged_error(f);
		if (!rc)
			rdmap_tx_placing(qp, s->dst, s->payload);
		return rc;
	case RDMAP_OP_READ_RESP:
		/*
		 * Whether a response may come at all is the opcode's business;
		 * then DDP judges the tagged buffer as for any tagged segment
		 * (RFC 5041 section 7.1); only a segment DDP would place is
		 * matched against the Read it must answer (RFC 5040 4.5).
		 */
		rc = rdmap_read_response_expected(qp);
		if (rc)
			return rc;
		if (s->payload) {
			f = ddp_mr_check_cached(qp->attr.stags, &qp->place_mr,
						h->stag, qp->attr.pd,
						DDP_ACCESS_LOCAL_WRITE, h->to,
						s->payload, &s->dst);
			rc = ddp_tagged_error(f);
			if (rc)
				return rc;
		}
		rc = rdmap_read_response_check(qp, h, s->payload);
		if (!rc && s->payload)
			rdmap_tx_placing(qp, s->dst, s->payload);
		return rc;
	case RDMAP_OP_READ_REQ:
		if (!h->last || s->payload)
			return -IW_ERDMAP_MALFORMED;
		return ddp_untagged_check(&qp->rxq[RDMAP_QN_READ_REQ], h,
					  RDMAP_READ_REQ_LEN, true,
					  RDMAP_READ_REQ_LEN);
	case RDMAP_OP_TERMINATE:
		if (!h->last || s->payload)
			return -IW_ERDMAP_MALFORMED;
		return ddp_untagged_check(&qp->rxq[RDMAP_QN_TERMINATE], h,
					  s->hdr_need - DDP_UNTAGGED_HDR_LEN,
					  true, RDMAP_TERM_MAX_LEN);
	case RDMAP_OP_ATOMIC_REQ:
		if (!h->last || s->payload)
			return -IW_ERDMAP_MALFORMED;
		return ddp_untagged_check(&qp->rxq[RDMAP_QN_READ_REQ], h,
					  RDMAP_ATOMIC_REQ_LEN, true,
					  RDMAP_ATOMIC_REQ_LEN);
	case RDMAP_OP_ATOMIC_RESP:
		if (!h->last || s->payload)
			return -IW_ERDMAP_MALFORMED;
		rc = ddp_untagged_check(&qp->rxq[RDMAP_QN_ATOMIC_RESP], h,
					RDMAP_ATOMIC_RESP_LEN, true,
					RDMAP_ATOMIC_RESP_LEN);
		if (rc)
			return rc;
		return rdmap_atomic_response_check(qp, s->hdr +
							       DDP_UNTAGGED_HDR_LEN);
	case RDMAP_OP_IMM:
	case RDMAP_OP_IMM_SE:
		/* 8 octets for the ULP, in the next posted receive's completion */
		if (!h->last || s->payload)
			return -IW_ERDMAP_MALFORMED;
		q = &qp->rxq[RDMAP_QN_SEND];
		if (!q->open && h->mo == 0 && h->msn == q->msn &&
		    !qp->have_cur_recv) {
			rc = take_recv(qp);
			if (rc)
				return rc;
		}
		return ddp_untagged_check(q, h, 0, qp->have_cur_recv,
					  qp->cur_recv.len);
	default: /* the Send family */
		q = &qp->rxq[RDMAP_QN_SEND];
		if (s->rtr)
			return ddp_untagged_check(q, h, 0, true, 0);
		if (!q->open && h->mo == 0 && h->msn == q->msn &&
		    !qp->have_cur_recv) {
			rc = take_recv(qp);
			if (rc)
				return rc;
		}
		rc = ddp_untagged_check(q, h, s->payload, qp->have_cur_recv,
					qp->cur_recv.len);
		s->untagged_dst = rc == 0 && s->payload > 0;
		if (s->untagged_dst)
			placing_untagged(qp, h->mo, s->payload);
		return rc;
	}
}

/*
 * The octets gathered so far make up the header asked for: decode and
 * check it, and ask for the RDMAP octets behind it when the opcode has
 * some.  Returns 0 (more needed, or the header is in and checked) or the
 * error that stops the stream.
 */
static int header_step(struct rdmap_qp *qp)
{
	struct rdmap_rx_seg *s = &qp->seg;
	size_t extra = 0;
	int rc;

	if (!s->ddp_ok) {
		ddp_hdr_decode(s->hdr, s->hdr_have, &s->ddp);
		s->opcode = s->ddp.rsvdulp & RDMAP_CTRL_OPCODE;
		rc = check_model(qp);
		if (rc)
			return rc;
		s->ddp_ok = true;
		if (s->opcode == RDMAP_OP_READ_REQ)
			extra = RDMAP_READ_REQ_LEN;
		else if (s->opcode == RDMAP_OP_TERMINATE)
			extra = s->len - s->hdr_need;
		else if (s->opcode >= RDMAP_OP_ATOMIC_REQ) /* checked: enabled */
			extra = ext_hdr_len(s->opcode);
		if (s->opcode == RDMAP_OP_TERMINATE &&
		    (extra < RDMAP_TERM_CTRL_LEN || extra > RDMAP_TERM_MAX_LEN))
			return -IW_ERDMAP_MALFORMED;
		if (s->len < s->hdr_need + extra)
			return -IW_ERDMAP_MALFORMED;
		s->hdr_need = (uint16_t)(s->hdr_need + extra);
		if (s->hdr_have < s->hdr_need)
			return 0;
	}
	s->hdr_done = true;
	s->payload = s->left = (uint16_t)(s->len - s->hdr_need);
	return segment_start(qp);
}

static int place(struct rdmap_qp *qp, const uint8_t *p, size_t n)
{
	struct rdmap_rx_seg *s = &qp->seg;

	if (s->dst)
		memcpy(s->dst + s->placed, p, n);
	else if (s->untagged_dst)
		ddp_iov_copy_in(qp->cur_recv.iov, qp->cur_recv.iovcnt,
				(size_t)s->ddp.mo + s->placed, p, n);
	else if (n)
		return -IW_EDDP_MALFORMED;
	s->placed += (uint32_t)n;
	s->left -= (uint16_t)n;
	return 0;
}

static int ulpdu_data(void *arg, const uint8_t *p, size_t n)
{
	struct rdmap_qp *qp = arg;
	struct rdmap_rx_seg *s = &qp->seg;

	/* the first octet tells the header's size: gather it in one go */
	if (n && s->hdr_need == 1) {
		s->hdr_need = (uint16_t)ddp_hdr_len(p[0] & DDP_CTRL_T);
		if (s->len < s->hdr_need)
			return -IW_EDDP_MALFORMED;
	}
	while (n && !s->hdr_done) {
		size_t take = s->hdr_need - s->hdr_have;
		int rc;

		if (take > n)
			take = n;
		copy_small(s->hdr + s->hdr_have, p, take);
		s->hdr_have = (uint16_t)(s->hdr_have + take);
		p += take;
		n -= take;
		if (s->hdr_have == s->hdr_need) {
			rc = header_step(qp);
			if (rc)
				return rc;
		}
	}
	return n ? place(qp, p, n) : 0;
}

/* RFC 5040 sections 6.5-6.7: a whole Send message lands in its receive. */
static int send_done(struct rdmap_qp *qp)
{
	struct rdmap_rx_seg *s = &qp->seg;
	uint8_t flags = 0;

	if (s->opcode == RDMAP_OP_SEND_SE || s->opcode == RDMAP_OP_SEND_SE_INV)
		flags |= RDMAP_CQE_SOLICITED;
	if (s->opcode == RDMAP_OP_SEND_INV ||
	    s->opcode == RDMAP_OP_SEND_SE_INV) {
		int rc = ddp_mr_invalidate(qp->attr.stags, s->ddp.rsvdulp2,
					   qp->attr.pd);

		if (rc)
			return rc;
		flags |= RDMAP_CQE_INVALIDATED;
	}
	qp->have_cur_recv = false;
	*rdmap_cqe_slot(qp) = (struct rdmap_cqe){
		.wr_id = qp->cur_recv.wr_id,
		.status = RDMAP_WC_SUCCESS,
		.opcode = RDMAP_WC_RECV,
		.flags = flags,
		.recv = true,
		.byte_len = s->ddp.mo + s->payload,
		.inv_stag = (flags & RDMAP_CQE_INVALIDATED) ? s->ddp.rsvdulp2 : 0,
	};
	rdmap_emit(qp);
	return 0;
}

/*
 * RFC 7306: Immediate Data completes the next posted receive with its 8
 * octets; nothing is placed.  Right after an RDMA Write it is that Write's
 * Immediate Data, and says so with the Write's length.
 */
static void imm_done(struct rdmap_qp *qp)
{
	struct rdmap_rx_seg *s = &qp->seg;
	bool write = qp->rx_after_write;

	qp->have_cur_recv = false;
	*rdmap_cqe_slot(qp) = (struct rdmap_cqe){
		.wr_id = qp->cur_recv.wr_id,
		.status = RDMAP_WC_SUCCESS,
		.opcode = write ? RDMAP_WC_RECV_WRITE_IMM : RDMAP_WC_RECV,
		.flags = RDMAP_CQE_IMM | (s->opcode == RDMAP_OP_IMM_SE
						  ? RDMAP_CQE_SOLICITED
						  : 0),
		.recv = true,
		.byte_len = !write		     ? 0
			    : qp->rx_write_len > UINT32_MAX ? UINT32_MAX
							     : (uint32_t)qp->rx_write_len,
		.imm = get_be64(s->hdr + DDP_UNTAGGED_HDR_LEN),
	};
	rdmap_emit(qp);
}

/*
 * RFC 7306: whether the last message to end was an RDMA Write, and how
 * long, for the Immediate Data that may follow (an RDMA Write with
 * Immediate Data is a Write, then the Immediate Data message).  Only
 * streams with immediate data keep count.
 */
static void note_segment_end(struct rdmap_qp *qp)
{
	const struct rdmap_rx_seg *s = &qp->seg;

	if (s->opcode != RDMAP_OP_WRITE) {
		qp->rx_after_write = false;
		qp->rx_write_len = 0;
		return;
	}
	if (qp->rx_after_write) { /* a Write after a Write */
		qp->rx_after_write = false;
		qp->rx_write_len = 0;
	}
	qp->rx_write_len += s->payload;
	qp->rx_after_write = s->ddp.last;
}

/* The reading of a received control word that names a valid triple. */
static uint8_t term_etype(const struct rdmap_term *t)
{
	if (!rdmap_term_valid(t->layer, t->etype, t->ecode) &&
	    rdmap_term_valid(t->swapped.layer, t->swapped.etype,
			     t->swapped.ecode))
		return t->swapped.etype;
	return t->etype;
}

/* The request the peer's Terminate names fails with a remote error. */
static void fail_request(struct rdmap_qp *qp, const struct rdmap_ord_entry *e,
			 const struct rdmap_term *t)
{
	struct rdmap_swqe *w = sq_at(qp, (uint32_t)e->sq);

	w->state = SWQE_DONE;
	w->status = term_etype(t) == 1 ? RDMAP_WC_REM_ACCESS_ERR
				       : RDMAP_WC_REM_OP_ERR;
	w->err = -IW_ETERMINATED;
}

/*
 * RFC 7306: a Terminate for an Atomic Request echoes its DDP header, whose
 * MSN on queue 1 is the request's identifier.
 */
static void atomic_terminated(struct rdmap_qp *qp, const struct rdmap_term *t)
{
	if (t->ddp_hdr_len != DDP_UNTAGGED_HDR_LEN ||
	    get_be32(t->ddp_hdr + DDP_U_OFF_QN) != RDMAP_QN_READ_REQ)
		return;
	for (uint32_t i = 0; i < qp->ord_count; i++) {
		const struct rdmap_ord_entry *e = ord_at(qp, qp->ord_head + i);

		if (e->atomic &&
		    e->msn == get_be32(t->ddp_hdr + DDP_U_OFF_MSN)) {
			fail_request(qp, e, t);
			return;
		}
	}
}

/* The peer's Terminate, as the reading that names a valid triple has it. */
static void count_term_received(struct rdmap_qp *qp, const struct rdmap_term *t)
{
	uint8_t layer = t->layer, etype = t->etype, ecode = t->ecode;

	if (!rdmap_term_valid(layer, etype, ecode) &&
	    rdmap_term_valid(t->swapped.layer, t->swapped.etype,
			     t->swapped.ecode)) {
		layer = t->swapped.layer;
		etype = t->swapped.etype;
		ecode = t->swapped.ecode;
	}
	counter_add(&qp->stats.term_rx[layer < RDMAP_STATS_LAYERS
					       ? layer
					       : RDMAP_STATS_LAYERS - 1],
		    1);
	atomic_store_explicit(&qp->stats.term_rx_last,
			      rdmap_stats_triple(layer, etype, ecode),
			      memory_order_relaxed);
}

/*
 * RFC 5040 section 4.8: the peer ended the stream.  When its Terminate
 * carries the Read Request header of our oldest outstanding Read, that
 * Read fails with a remote error (an atomic, when it names one); the rest
 * is flushed.
 */
static int terminate_received(struct rdmap_qp *qp)
{
	struct rdmap_rx_seg *s = &qp->seg;
	struct rdmap_term *t = &qp->term_in;

	rdmap_term_decode(s->hdr + DDP_UNTAGGED_HDR_LEN,
			  s->hdr_need - DDP_UNTAGGED_HDR_LEN, t);
	if (t->have_rdma_hdr && qp->ord_count) {
		struct rdmap_ord_entry *e = ord_at(qp, qp->ord_head);

		/* the echoed Read Request names our sink */
		if (e->sq >= 0 && !e->atomic &&
		    get_be32(t->rdma_hdr + RDMAP_RR_OFF_SINK_STAG) == e->sink_stag &&
		    get_be64(t->rdma_hdr + RDMAP_RR_OFF_SINK_TO) == e->sink_to)
			fail_request(qp, e, t);
	} else if (qp->attr.ext & RDMAP_EXT_ATOMICS) {
		atomic_terminated(qp, t);
	}
	count_term_received(qp, t);
	rdmap_event(qp, RDMAP_EV_TERMINATE_RECEIVED, -IW_ETERMINATED, t);
	return -IW_ETERMINATED;
}

/* A segment passed the CRC: act on what its message means. */
static int ulpdu_end(void *arg)
{
	struct rdmap_qp *qp = arg;
	struct rdmap_rx_seg *s = &qp->seg;
	const struct ddp_hdr *h = &s->ddp;
	int rc = 0;

	if (!s->hdr_done)
		return -IW_EDDP_MALFORMED;
	counter_add(&qp->stats.rx_fpdus, 1);
	switch (s->opcode) {
	case RDMAP_OP_WRITE:
		break;
	case RDMAP_OP_READ_RESP:
		rdmap_read_response_done(qp, h, s->payload);
		break;
	case RDMAP_OP_READ_REQ:
		ddp_untagged_advance(&qp->rxq[RDMAP_QN_READ_REQ], h,
				     RDMAP_READ_REQ_LEN);
		rc = rdmap_read_request(qp, s->hdr + DDP_UNTAGGED_HDR_LEN);
		break;
	case RDMAP_OP_TERMINATE:
		ddp_untagged_advance(&qp->rxq[RDMAP_QN_TERMINATE], h,
				     s->hdr_need - DDP_UNTAGGED_HDR_LEN);
		counter_add(&qp->stats.rx_msgs[RDMAP_OP_TERMINATE], 1);
		return terminate_received(qp);
	case RDMAP_OP_ATOMIC_REQ:
		ddp_untagged_advance(&qp->rxq[RDMAP_QN_READ_REQ], h,
				     RDMAP_ATOMIC_REQ_LEN);
		rc = rdmap_atomic_request(qp, s->hdr + DDP_UNTAGGED_HDR_LEN);
		break;
	case RDMAP_OP_ATOMIC_RESP:
		ddp_untagged_advance(&qp->rxq[RDMAP_QN_ATOMIC_RESP], h,
				     RDMAP_ATOMIC_RESP_LEN);
		rdmap_atomic_response_done(qp, s->hdr + DDP_UNTAGGED_HDR_LEN);
		break;
	case RDMAP_OP_IMM:
	case RDMAP_OP_IMM_SE:
		ddp_untagged_advance(&qp->rxq[RDMAP_QN_SEND], h, 0);
		imm_done(qp);
		break;
	default: /* the Send family */
		ddp_untagged_advance(&qp->rxq[RDMAP_QN_SEND], h, s->payload);
		if (!s->rtr && h->last)
			rc = send_done(qp);
		break;
	}
	if (rc)
		return rc;
	/* a message is counted once taken: one refused has its Terminate */
	if (h->last && !s->rtr)
		counter_add(&qp->stats.rx_msgs[s->opcode & RDMAP_CTRL_OPCODE], 1);
	if (qp->attr.ext & RDMAP_EXT_IMM)
		note_segment_end(qp);
	if (s->rtr)
		qp->rtr_seen = true;
	/* RFC 5044: the responder's side opens with the first FPDU (or RTR) */
	if (!qp->tx_open && (!qp->conn.rtr || qp->rtr_seen)) {
		qp->tx_open = true;
		rdmap_event(qp, RDMAP_EV_ESTABLISHED, 0, NULL);
	}
	return 0;
}

const struct mpa_rx_ops rdmap_mpa_rx_ops = {
	.ulpdu_begin = ulpdu_begin,
	.ulpdu_data = ulpdu_data,
	.ulpdu_end = ulpdu_end,
};

/* The stream failed on what arrived: MPA's errors are counted by kind. */
static void rx_failed(struct rdmap_qp *qp, int rc)
{
	if (rc == -IW_EMPA_CRC)
		counter_add(&qp->stats.crc_errors, 1);
	else if (rc == -IW_EMPA_MARKER)
		counter_add(&qp->stats.marker_errors, 1);
	rdmap_fail(qp, rc);
}

/*
 * Takes the next @len octets of the stream.  Returns 0, or the error that
 * ended the stream (a Terminate is then queued when the error has one).
 * The completions they make go up in runs (rdmap_emit()).
 */
int rdmap_rx_feed(struct rdmap_qp *qp, const uint8_t *p, size_t len)
{
	int rc;

	if (qp->state != RDMAP_QP_RTS)
		return qp->err ? qp->err : -IW_ECLOSED;
	rdmap_cqe_hold(qp);
	counter_add(&qp->stats.rx_octets, len);
	rc = mpa_rx_feed(&qp->mpa_rx, p, len);
	if (rc)
		rx_failed(qp, rc);
	rdmap_cqe_release(qp);
	return rc;
}

/* The peer closed the stream: cleanly between FPDUs, or mid-frame. */
int rdmap_rx_eof(struct rdmap_qp *qp)
{
	int rc;

	if (qp->state != RDMAP_QP_RTS)
		return qp->err ? qp->err : -IW_ECLOSED;
	rc = mpa_rx_eof(&qp->mpa_rx);
	rdmap_fail(qp, rc ? rc : -IW_ECLOSED);
	return rc ? rc : -IW_ECLOSED;
}

/*
 * Where the next payload octets of the stream belong, when they can go
 * there straight (no marker or trailer in between): returns the address
 * and sets *@len, else NULL.  With CRC on that is the hold where the
 * ULPDU waits for its CRC, not its destination.  Report what was put
 * there with rdmap_rx_direct_done().
 */
uint8_t *rdmap_rx_direct(struct rdmap_qp *qp, size_t *len)
{
	struct rdmap_rx_seg *s = &qp->seg;
	size_t win, span;
	uint8_t *p;

	if (qp->state != RDMAP_QP_RTS)
		return NULL;
	/* a ULPDU held for its CRC takes the octets in the hold */
	p = mpa_rx_held_at(&qp->mpa_rx);
	if (p) {
		*len = mpa_rx_payload_window(&qp->mpa_rx);
		return *len ? p : NULL;
	}
	if (!s->hdr_done || !s->left)
		return NULL;
	win = mpa_rx_payload_window(&qp->mpa_rx);
	if (!win)
		return NULL;
	if (s->dst) {
		p = s->dst + s->placed;
		span = s->left;
	} else if (s->untagged_dst) {
		p = ddp_iov_span(qp->cur_recv.iov, qp->cur_recv.iovcnt,
				 (size_t)s->ddp.mo + s->placed, &span);
	} else {
		return NULL;
	}
	*len = span < win ? span : win;
	return p;
}

int rdmap_rx_direct_done(struct rdmap_qp *qp, size_t len)
{
	struct rdmap_rx_seg *s = &qp->seg;
	size_t span;
	uint8_t *p = rdmap_rx_direct(qp, &span);
	bool held = p && p == mpa_rx_held_at(&qp->mpa_rx);
	int rc;

	if (!p || len > span)
		return -EINVAL;
	counter_add(&qp->stats.rx_octets, len);
	rc = mpa_rx_payload_placed(&qp->mpa_rx, p, len);
	if (rc) {
		rx_failed(qp, rc);
		return rc;
	}
	if (!held) {
		s->placed += (uint32_t)len;
		s->left -= (uint16_t)len;
	}
	return 0;
}
