// SPDX-License-Identifier: MIT
/*
 * The RDMAP stream's queues and states: posting work, completing it in
 * order, and leaving the connected state (RFC 5040 sections 5.5 and 6.2).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "rdmap/rdmap_internal.h"

void rdmap_cqe_flush(struct rdmap_qp *qp)
{
	unsigned int n = qp->cqe_n;

	if (n) {
		qp->cqe_n = 0;
		qp->ops->complete(qp->arg, qp->cqe_run, n);
	}
}

void rdmap_cqe_hold(struct rdmap_qp *qp)
{
	qp->cqe_hold++;
}

void rdmap_cqe_release(struct rdmap_qp *qp)
{
	if (--qp->cqe_hold == 0)
		rdmap_cqe_flush(qp);
}

void rdmap_event(struct rdmap_qp *qp, uint8_t type, int err,
		 const struct rdmap_term *term)
{
	struct rdmap_event ev = { .type = type, .err = err, .term = term };

	if (qp->ops->event)
		qp->ops->event(qp->arg, &ev);
}

int rdmap_qp_init(struct rdmap_qp *qp, const struct rdmap_qp_attr *attr,
		  const struct rdmap_ops *ops, void *arg)
{
	uint32_t sges, sq_len, rq_len;

	if (!attr->stags || attr->max_sge == 0 ||
	    attr->max_sge > RDMAP_MAX_SGE || attr->sq_depth == 0 ||
	    attr->sq_depth > RDMAP_MAX_QUEUE ||
	    (!attr->srq && attr->rq_depth == 0) ||
	    (!attr->srq && attr->rq_depth > RDMAP_MAX_QUEUE))
		return -EINVAL;
	memset(qp, 0, sizeof(*qp));
	qp->ops = ops;
	qp->arg = arg;
	qp->attr = *attr;
	qp->state = RDMAP_QP_IDLE;

	qp->sq_size = attr->sq_depth;
	sq_len = rdmap_ring_len(qp->sq_size);
	qp->sq_mask = sq_len - 1;
	sges = attr->max_sge;
	qp->sq = calloc(sq_len, sizeof(*qp->sq));
	qp->sq_iov = calloc((size_t)sq_len * sges, sizeof(*qp->sq_iov));
	if (attr->max_inline)
		qp->sq_inline = malloc((size_t)sq_len * attr->max_inline);
	qp->rq_size = attr->srq ? 0 : attr->rq_depth;
	rq_len = rdmap_ring_len(qp->rq_size);
	qp->rq_mask = rq_len - 1;
	qp->rq = calloc(rq_len, sizeof(*qp->rq));
	qp->rq_iov = calloc((size_t)rq_len * sges, sizeof(*qp->rq_iov));
	qp->rq_lkey = calloc((size_t)rq_len * sges, sizeof(*qp->rq_lkey));
	/* a receive taken from an SRQ may have up to RDMAP_MAX_SGE buffers */
	qp->cur_iov = calloc(RDMAP_MAX_SGE, sizeof(*qp->cur_iov));
	qp->cur_lkey = calloc(RDMAP_MAX_SGE, sizeof(*qp->cur_lkey));
	if (!qp->sq || !qp->sq_iov || (attr->max_inline && !qp->sq_inline) ||
	    !qp->rq || !qp->rq_iov || !qp->rq_lkey || !qp->cur_iov ||
	    !qp->cur_lkey) {
		rdmap_qp_fini(qp);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < sq_len; i++) {
		qp->sq[i].iov = qp->sq_iov + (size_t)i * sges;
		if (attr->max_inline)
			qp->sq[i].inline_buf =
				qp->sq_inline + (size_t)i * attr->max_inline;
	}
	for (uint32_t i = 0; i < rq_len; i++) {
		qp->rq[i].iov = qp->rq_iov + (size_t)i * sges;
		qp->rq[i].lkey = qp->rq_lkey + (size_t)i * sges;
	}
	qp->cur_recv.iov = qp->cur_iov;
	qp->cur_recv.lkey = qp->cur_lkey;
	for (int q = 0; q < RDMAP_QN_MAX; q++) {
		qp->msn_tx[q] = 1;
		ddp_queue_init(&qp->rxq[q]);
	}
	return 0;
}

void rdmap_qp_fini(struct rdmap_qp *qp)
{
	free(qp->sq);
	free(qp->sq_iov);
	free(qp->sq_inline);
	free(qp->rq);
	free(qp->rq_iov);
	free(qp->rq_lkey);
	free(qp->cur_iov);
	free(qp->cur_lkey);
	free(qp->ord_q);
	free(qp->ird_q);
	free(qp->fpdus);
	free(qp->fpdu_iov);
	free(qp->fpdu_markers);
	free(qp->stage);
	free(qp->rx_hold);
	free(qp->bounce);
	memset(qp, 0, sizeof(*qp));
}

bool rdmap_sq_has_read(struct rdmap_qp *qp)
{
	for (uint32_t i = qp->sq_tail; i != qp->sq_head; i++)
		if (rdmap_wr_is_request(sq_at(qp, i)->op))
			return true;
	return false;
}

/*
 * An RDMA Read (or atomic) posted before the handshake, on a stream that
 * turns out to have ORD 0, cannot be carried out: it fails, and the stream
 * with it, before any of the work is sent.  The stream ends as RFC 6581
 * section 5 has an initiator end one whose IRD/ORD it cannot work with,
 * with a Terminate naming insufficient IRD resources (MPA 0x06), so that
 * the peer, which has already taken the connection as established, learns
 * why rather than seeing it close.
 */
static void leave_rts(struct rdmap_qp *qp, int err, bool terminate);

static void refuse_queued_reads(struct rdmap_qp *qp)
{
	for (uint32_t i = qp->sq_tail; i != qp->sq_head; i++) {
		struct rdmap_swqe *w = sq_at(qp, i);

		if (!rdmap_wr_is_request(w->op) || w->state == SWQE_DONE)
			continue;
		w->state = SWQE_DONE;
		w->status = RDMAP_WC_LOC_QP_OP_ERR;
		w->err = -IW_ENO_READ_CREDIT;
		rdmap_term_for_error(qp, -IW_EMPA_INSUFFICIENT_IRD,
				     &qp->term_out);
		leave_rts(qp, -IW_ENO_READ_CREDIT, true);
		return;
	}
}

/*
 * FPDUs built ahead of the socket: enough for one large writev of small
 * messages.  With markers each FPDU needs many more pieces, and a large
 * one fills a writev on its own.
 */
#define FPDU_RING 128
#define FPDU_RING_MARKERS 16

/*
 * Enters RTS with what the MPA handshake settled.  The queues for Reads
 * and built FPDUs are sized here, once; nothing is allocated afterwards.
 *
 * Both ULPDU limits must hold the longest header a segment can carry, a
 * Terminate echoing an untagged DDP header and a Read Request header
 * (RDMAP_MIN_MULPDU): every message then fits, and a segment with payload
 * (18 header octets at most) carries at least 52 of it.  A smaller limit
 * is refused (-EINVAL).  With markers the MULPDU is cut to what keeps
 * every FPDUPTR within 16 bits.  A Read queued on a stream that settled
 * on ORD 0 leaves the engine started but terminating (see
 * refuse_queued_reads()).
 */
int rdmap_qp_start(struct rdmap_qp *qp, const struct rdmap_conn *conn)
{
	if (qp->state != RDMAP_QP_IDLE)
		return -EINVAL;
	if (conn->mulpdu < RDMAP_MIN_MULPDU || conn->max_ulpdu < RDMAP_MIN_MULPDU)
		return -EINVAL;
	qp->conn = *conn;
	if (qp->conn.mulpdu_max < conn->mulpdu)
		qp->conn.mulpdu_max = conn->mulpdu;
	qp->ord_mask = rdmap_ring_len(conn->ord) - 1;
	qp->ird_mask = rdmap_ring_len(conn->ird) - 1;
	qp->ord_q = calloc(qp->ord_mask + 1, sizeof(*qp->ord_q));
	qp->ird_q = calloc(qp->ird_mask + 1, sizeof(*qp->ird_q));
	qp->n_fpdus = conn->markers_tx ? FPDU_RING_MARKERS : FPDU_RING;
	/* header, up to max_sge payload pieces, markers, pad and CRC */
	qp->fpdu_iov_max = (size_t)mpa_tx_iov_max((int)qp->attr.max_sge + 1,
						  qp->conn.mulpdu_max,
						  conn->markers_tx);
	qp->fpdus = calloc(qp->n_fpdus, sizeof(*qp->fpdus));
	qp->fpdu_iov = calloc(qp->n_fpdus * qp->fpdu_iov_max,
			      sizeof(*qp->fpdu_iov));
	qp->stage_size = conn->markers_tx ? RDMAP_TX_STAGE_SIZE_MARKERS
					  : RDMAP_TX_STAGE_SIZE;
	qp->tx_copy_max = conn->markers_tx ? qp->stage_size : RDMAP_TX_COPY_MAX;
	qp->stage = malloc(qp->stage_size);
	/* with CRC, nothing of a ULPDU is placed before its CRC checks */
	qp->rx_hold = conn->crc ? malloc(conn->max_ulpdu) : NULL;
	/* a payload of one FPDU at most (see rdmap_tx_placing) */
	qp->bounce = conn->crc ? malloc(qp->conn.mulpdu_max) : NULL;
	if (!qp->ord_q || !qp->ird_q || !qp->fpdus || !qp->fpdu_iov ||
	    !qp->stage || (conn->crc && (!qp->rx_hold || !qp->bounce)))
		return -ENOMEM;
	if (conn->markers_tx) {
		qp->fpdu_markers = calloc((size_t)qp->n_fpdus *
						  MPA_TX_MAX_MARKERS,
					  sizeof(*qp->fpdu_markers));
		if (!qp->fpdu_markers)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < qp->n_fpdus; i++) {
		qp->fpdus[i].wire = qp->fpdu_iov + i * qp->fpdu_iov_max;
		if (qp->fpdu_markers)
			qp->fpdus[i].frame.markers =
				qp->fpdu_markers + (size_t)i * MPA_TX_MAX_MARKERS;
	}
	mpa_tx_init(&qp->mpa_tx, qp->conn.mulpdu_max, conn->markers_tx,
		    conn->crc);
	qp->conn.mulpdu_max = qp->mpa_tx.mulpdu; /* as markers allow */
	rdmap_set_mulpdu(qp, conn->mulpdu);
	mpa_rx_init(&qp->mpa_rx, &rdmap_mpa_rx_ops, qp, conn->max_ulpdu,
		    conn->markers_rx, conn->crc);
	if (qp->rx_hold)
		mpa_rx_hold(&qp->mpa_rx, qp->rx_hold, conn->max_ulpdu);
	/*
	 * RFC 5044/6581: the responder waits for the initiator's first FPDU,
	 * unless the application has said the initiator is ready for it
	 */
	qp->tx_open = conn->initiator || conn->responder_first;
	qp->state = RDMAP_QP_RTS;
	if (!conn->ord)
		refuse_queued_reads(qp);
	return 0;
}

/* The completion opcode of a send work request. */
static uint8_t wc_opcode(const struct rdmap_swqe *w)
{
	static const uint8_t wc_op[] = {
		[RDMAP_WR_SEND] = RDMAP_WC_SEND,
		[RDMAP_WR_SEND_INV] = RDMAP_WC_SEND,
		[RDMAP_WR_WRITE] = RDMAP_WC_WRITE,
		[RDMAP_WR_READ] = RDMAP_WC_READ,
		[RDMAP_WR_LOCAL_INV] = RDMAP_WC_LOCAL_INV,
		[RDMAP_WR_WRITE_IMM] = RDMAP_WC_WRITE,
		[RDMAP_WR_IMM] = RDMAP_WC_SEND,
	};
	static const uint8_t aop_op[] = {
		[RDMAP_AOP_FETCH_ADD] = RDMAP_WC_FETCH_ADD,
		[RDMAP_AOP_SWAP] = RDMAP_WC_SWAP,
		[RDMAP_AOP_CMP_SWAP] = RDMAP_WC_CMP_SWAP,
	};

	return w->op == RDMAP_WR_ATOMIC ? aop_op[w->atomic.aop] : wc_op[w->op];
}

/* Emits completions for finished send work, strictly in posting order. */
void rdmap_sq_complete(struct rdmap_qp *qp)
{
	rdmap_cqe_hold(qp);
	while (qp->sq_tail != qp->sq_next) {
		struct rdmap_swqe *w = sq_at(qp, qp->sq_tail);

		if (w->state != SWQE_DONE)
			break;
		qp->sq_tail++;
		if (!(w->flags & RDMAP_WR_SIGNALED) &&
		    w->status == RDMAP_WC_SUCCESS)
			continue;
		*rdmap_cqe_slot(qp) = (struct rdmap_cqe){
			.wr_id = w->wr_id,
			.status = w->status,
			.opcode = wc_opcode(w),
			.byte_len = (uint32_t)w->len,
			.err = w->err,
		};
		rdmap_emit(qp);
	}
	rdmap_cqe_release(qp);
}

static void flush_recv(struct rdmap_qp *qp, const struct rdmap_rwqe *r,
		       uint8_t status)
{
	*rdmap_cqe_slot(qp) = (struct rdmap_cqe){
		.wr_id = r->wr_id,
		.status = status,
		.opcode = RDMAP_WC_RECV,
		.recv = true,
		.err = qp->err,
	};
	rdmap_emit(qp);
}

/*
 * Every work request not yet completed completes now, once, in order: with
 * the status already decided for it, else the send queue's with @status
 * and the receives with a flush error.  Posted receives of an SRQ stay
 * there for the other QPs.
 */
static void flush(struct rdmap_qp *qp, uint8_t status)
{
	for (uint32_t i = qp->sq_tail; i != qp->sq_head; i++) {
		struct rdmap_swqe *w = sq_at(qp, i);

		if (w->state != SWQE_DONE) {
			w->state = SWQE_DONE;
			w->status = status;
			w->err = qp->err;
		}
	}
	qp->sq_next = qp->sq_head;
	rdmap_sq_complete(qp);
	qp->ord_count = 0;
	qp->ird_count = qp->ird_started = 0;
	if (qp->have_cur_recv) {
		qp->have_cur_recv = false;
		/* revoked: a message came to it after its region had gone */
		flush_recv(qp, &qp->cur_recv,
			   qp->cur_recv.revoked ? RDMAP_WC_LOC_PROT_ERR
						: RDMAP_WC_WR_FLUSH_ERR);
	}
	for (; qp->rq_count; qp->rq_count--, qp->rq_tail++)
		flush_recv(qp, rq_at(qp, qp->rq_tail), RDMAP_WC_WR_FLUSH_ERR);
}

/*
 * Leaves RTS because of @err, with the Terminate in qp->term_out when
 * @terminate says one is due (sent after the FPDU on the wire, if any) and
 * the stream was connected; else the stream ends at once.  Either way
 * every outstanding work request is flushed.
 */
static void leave_rts(struct rdmap_qp *qp, int err, bool terminate)
{
	qp->err = err;
	if (qp->state == RDMAP_QP_RTS && terminate) {
		qp->state = RDMAP_QP_TERMINATING;
		qp->term_queued = true;
		rdmap_tx_reset(qp, true);
	} else {
		qp->state = RDMAP_QP_ERROR;
		rdmap_tx_reset(qp, false);
	}
	/* a peer that stopped acknowledging (the owner ended the stream
	 * with -ETIMEDOUT) is what InfiniBand reports as retries exceeded */
	flush(qp, err == -ETIMEDOUT ? RDMAP_WC_RETRY_EXC_ERR
				    : RDMAP_WC_WR_FLUSH_ERR);
	rdmap_event(qp, RDMAP_EV_ERROR, err, NULL);
}

/*
 * Leaves RTS because of @err.  A protocol violation queues the one
 * Terminate that names it; any other cause ends the stream at once.
 * Later errors change nothing.
 */
void rdmap_fail(struct rdmap_qp *qp, int err)
{
	if (qp->state == RDMAP_QP_TERMINATING || qp->state == RDMAP_QP_ERROR)
		return;
	rdmap_term_for_error(qp, err, &qp->term_out);
	leave_rts(qp, err, iw_error_term(err, NULL));
}

/*
 * A fault of our own, which nothing the peer sent caused (a message that
 * cannot be framed), ends the stream.  RFC 5040 section 7.2 has the
 * Terminate go in place of the message that failed, naming an RDMAP local
 * catastrophic error with no headers: there is no incoming segment to
 * echo.  @err (an errno-style code) is what the work requests and the
 * owner are told.  Later errors change nothing.
 */
void rdmap_fail_local(struct rdmap_qp *qp, int err)
{
	if (qp->state == RDMAP_QP_TERMINATING || qp->state == RDMAP_QP_ERROR)
		return;
	rdmap_term_local(&qp->term_out);
	leave_rts(qp, err, true);
}

/*
 * The connection's EMSS has changed: the segments cut from now on take at
 * most @mulpdu octets of ULPDU (with markers, no more than a 16-bit
 * FPDUPTR reaches), within what rdmap_qp_start() made room for.  FPDUs
 * already built keep their size.
 */
void rdmap_set_mulpdu(struct rdmap_qp *qp, uint16_t mulpdu)
{
	if (mulpdu > qp->conn.mulpdu_max)
		mulpdu = qp->conn.mulpdu_max;
	if (mulpdu < RDMAP_MIN_MULPDU)
		mulpdu = RDMAP_MIN_MULPDU;
	mpa_tx_set_mulpdu(&qp->mpa_tx, mulpdu);
	qp->conn.mulpdu = qp->mpa_tx.mulpdu;
}

/* The owner ends the stream (disconnect, peer gone, QP moved to error). */
void rdmap_qp_set_error(struct rdmap_qp *qp, int err)
{
	if (qp->state == RDMAP_QP_TERMINATING) {
		/* the Terminate will not leave now; nothing else is pending */
		qp->state = RDMAP_QP_ERROR;
		rdmap_tx_reset(qp, false);
		return;
	}
	if (qp->state == RDMAP_QP_IDLE) {
		qp->err = err;
		qp->state = RDMAP_QP_ERROR;
		flush(qp, RDMAP_WC_WR_FLUSH_ERR); /* never connected */
		rdmap_event(qp, RDMAP_EV_ERROR, err, NULL);
		return;
	}
	/* a close is no protocol violation: no Terminate */
	if (iw_error_term(err, NULL))
		err = -IW_ECLOSED;
	rdmap_fail(qp, err);
}

/*
 * The owner refuses the stream for a protocol reason found outside the
 * engine (an MPA Reply it cannot take, RFC 6581): the Terminate that names
 * @err goes out, then the stream ends.
 */
void rdmap_qp_terminate(struct rdmap_qp *qp, int err)
{
	rdmap_fail(qp, err);
}

/*
 * Resolves a work request's local buffers through their lkeys (noted in
 * @lkey, when given, beside each buffer).  Local keys are checked when
 * work is posted, so a bad one is refused at once with
 * -IW_ELOCAL_PROTECTION rather than discovered later on the wire.
 */
static int resolve_sges(struct rdmap_qp *qp, const struct rdmap_sge *sge,
			uint32_t n, uint32_t access, struct iovec *iov,
			uint32_t *lkey, int *iovcnt, uint64_t *len)
{
	/* counts in locals: stores through @iov could alias the outputs */
	uint64_t total = 0;
	int cnt = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint8_t *where;

		if (sge[i].length == 0)
			continue;
		if (ddp_mr_check_cached(qp->attr.stags, &qp->post_mr,
					sge[i].lkey, qp->attr.pd,
					access | DDP_ACCESS_POST, sge[i].addr,
					sge[i].length, &where) != DDP_MR_OK)
			return -IW_ELOCAL_PROTECTION;
		if (lkey)
			lkey[cnt] = sge[i].lkey;
		iov[cnt++] = (struct iovec){ where, sge[i].length };
		total += sge[i].length;
	}
	*iovcnt = cnt;
	*len = total;
	return 0;
}

static int copy_inline(struct rdmap_qp *qp, struct rdmap_swqe *w,
		       const struct rdmap_send_wr *wr)
{
	uint64_t len = 0;

	for (uint32_t i = 0; i < wr->num_sge; i++)
		len += wr->sge[i].length;
	if (len > qp->attr.max_inline)
		return -IW_ELOCAL_LENGTH;
	len = 0;
	for (uint32_t i = 0; i < wr->num_sge; i++) {
		/* with max_inline 0 there is no buffer to point into */
		if (!wr->sge[i].length)
			continue;
		memcpy(w->inline_buf + len,
		       (const void *)(uintptr_t)wr->sge[i].addr,
		       wr->sge[i].length);
		len += wr->sge[i].length;
	}
	w->iov[0].iov_base = w->inline_buf;
	w->iov[0].iov_len = len;
	w->iovcnt = len ? 1 : 0;
	w->len = len;
	return 0;
}

static void flush_now(struct rdmap_qp *qp, uint64_t wr_id, uint8_t opcode,
		      bool recv)
{
	*rdmap_cqe_slot(qp) = (struct rdmap_cqe){
		.wr_id = wr_id,
		.status = RDMAP_WC_WR_FLUSH_ERR,
		.opcode = opcode,
		.recv = recv,
		.err = qp->err,
	};
	rdmap_emit(qp);
}

/*
 * RFC 7306 requests: only on a stream that enabled their extension
 * (-EOPNOTSUPP), an atomic with a known operation and one local buffer
 * of exactly 8 octets for the original value, Immediate Data alone with
 * no payload (-EINVAL).
 */
static int check_ext_wr(const struct rdmap_qp *qp,
			const struct rdmap_send_wr *wr)
{
	if (wr->op == RDMAP_WR_ATOMIC) {
		if (!(qp->attr.ext & RDMAP_EXT_ATOMICS))
			return -EOPNOTSUPP;
		if (wr->atomic.aop > RDMAP_AOP_CMP_SWAP || wr->num_sge != 1 ||
		    wr->sge[0].length != RDMAP_ATOMIC_SIZE ||
		    (wr->flags & RDMAP_WR_INLINE))
			return -EINVAL;
		return 0;
	}
	if (!(qp->attr.ext & RDMAP_EXT_IMM))
		return -EOPNOTSUPP;
	if (wr->op == RDMAP_WR_IMM)
		for (uint32_t i = 0; i < wr->num_sge; i++)
			if (wr->sge[i].length)
				return -EINVAL;
	return 0;
}

/* The completion opcode of a request flushed as it is posted. */
static uint8_t flush_opcode(const struct rdmap_send_wr *wr)
{
	struct rdmap_swqe w = { .op = wr->op, .atomic.aop = wr->atomic.aop };

	return wc_opcode(&w);
}

/*
 * Queues a send work request.  Returns 0, or without queueing anything:
 * -EINVAL for a malformed request (a Local Invalidate names no buffer),
 * -EOPNOTSUPP for an RFC 7306 request on a stream without that extension,
 * -ENOMEM when the queue is full,
 * -IW_ELOCAL_PROTECTION / -IW_ELOCAL_LENGTH for bad local buffers,
 * -IW_ENO_READ_CREDIT for a Read or atomic on a stream whose ORD is 0.
 * On a stream in error the request completes at once with a flush status.
 */
int rdmap_post_send(struct rdmap_qp *qp, const struct rdmap_send_wr *wr)
{
	struct rdmap_swqe *w;
	int rc;

	if (wr->op > RDMAP_WR_OP_MAX || wr->num_sge > qp->attr.max_sge ||
	    (wr->num_sge && !wr->sge) ||
	    (wr->op == RDMAP_WR_READ &&
	     (wr->num_sge != 1 || (wr->flags & RDMAP_WR_INLINE))) ||
	    (wr->op == RDMAP_WR_LOCAL_INV &&
	     (wr->num_sge || (wr->flags & RDMAP_WR_INLINE))))
		return -EINVAL;
	if (rdmap_wr_is_ext(wr->op)) {
		rc = check_ext_wr(qp, wr);
		if (rc)
			return rc;
	}
	if (qp->state == RDMAP_QP_TERMINATING || qp->state == RDMAP_QP_ERROR) {
		flush_now(qp, wr->wr_id, flush_opcode(wr), false);
		return 0;
	}
	if (rdmap_wr_is_request(wr->op) && qp->state == RDMAP_QP_RTS &&
	    qp->conn.ord == 0)
		return -IW_ENO_READ_CREDIT;
	if (qp->sq_head - qp->sq_tail >= qp->sq_size)
		return -ENOMEM;

	w = sq_at(qp, qp->sq_head);
	w->wr_id = wr->wr_id;
	w->op = wr->op;
	w->flags = wr->flags;
	w->state = SWQE_QUEUED;
	w->status = RDMAP_WC_SUCCESS;
	w->err = 0;
	w->inv_stag = wr->inv_stag;
	w->rkey = wr->rkey;
	w->remote_addr = wr->remote_addr;
	if (rdmap_wr_is_ext(wr->op)) {
		w->imm = wr->imm;
		w->atomic = wr->atomic;
	}
	if (wr->flags & RDMAP_WR_INLINE)
		rc = copy_inline(qp, w, wr);
	else
		rc = resolve_sges(qp, wr->sge, wr->num_sge,
				  rdmap_wr_is_request(wr->op)
					  ? DDP_ACCESS_LOCAL_WRITE
					  : 0,
				  w->iov, NULL, &w->iovcnt, &w->len);
	if (rc)
		return rc;
	if (w->len > UINT32_MAX)
		return -IW_ELOCAL_LENGTH;
	if (wr->op == RDMAP_WR_READ) {
		w->sink_stag = wr->sge[0].lkey;
		w->sink_to = wr->sge[0].addr;
		w->len = wr->sge[0].length;
	}
	qp->sq_head++;
	return 0;
}

/*
 * Queues a receive.  Returns 0, -EINVAL for a malformed request or a QP
 * that takes its receives from an SRQ, -ENOMEM when the queue is full,
 * -IW_ELOCAL_PROTECTION for a buffer its lkey does not cover with local
 * write access.  On a stream in error it completes at once (flushed).
 */
int rdmap_post_recv(struct rdmap_qp *qp, const struct rdmap_recv_wr *wr)
{
	struct rdmap_rwqe *r;
	int rc;

	if (qp->attr.srq || wr->num_sge > qp->attr.max_sge ||
	    (wr->num_sge && !wr->sge))
		return -EINVAL;
	if (qp->state == RDMAP_QP_TERMINATING || qp->state == RDMAP_QP_ERROR) {
		flush_now(qp, wr->wr_id, RDMAP_WC_RECV, true);
		return 0;
	}
	if (qp->rq_count == qp->rq_size)
		return -ENOMEM;
	r = rq_at(qp, qp->rq_tail + qp->rq_count);
	rc = resolve_sges(qp, wr->sge, wr->num_sge, DDP_ACCESS_LOCAL_WRITE,
			  r->iov, r->lkey, &r->iovcnt, &r->len);
	if (rc)
		return rc;
	r->wr_id = wr->wr_id;
	r->revoked = false;
	qp->rq_count++;
	return 0;
}
