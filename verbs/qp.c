// SPDX-License-Identifier: MIT
/*
 * Queue pairs: the public face of an RDMAP engine.  Work requests are
 * translated and handed to the engine; Sends and Writes leave through the
 * socket at once when the QP is connected.  The engine's completions land
 * in the CQs, its events in the connection's state.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs/verbs.h"

/*
 * The lock that guards a QP: its own, or once it is attached to a
 * connection, the connection's.  It may change while we wait for it.
 */
pthread_mutex_t *qp_lock(struct iw_qp *qp)
{
	for (;;) {
		pthread_mutex_t *l = atomic_load(&qp->lock);

		pthread_mutex_lock(l);
		if (l == atomic_load(&qp->lock))
			return l;
		pthread_mutex_unlock(l);
	}
}

/*
 * The receive CQ of a QP on an SRQ holds every receive of the SRQ, once
 * however many of its QPs complete there.
 */
static int srq_attach(struct iw_srq *srq, struct iw_cq *cq)
{
	struct srq_cq_use *u = NULL;
	int rc = 0;

	pthread_mutex_lock(&srq->lock);
	for (unsigned int i = 0; i < srq->n_cq_uses; i++)
		if (srq->cq_uses[i].cq == cq)
			u = &srq->cq_uses[i];
	if (!u) {
		u = realloc(srq->cq_uses,
			    (srq->n_cq_uses + 1) * sizeof(*srq->cq_uses));
		if (!u) {
			rc = -ENOMEM;
			goto out;
		}
		srq->cq_uses = u;
		rc = cq_reserve(cq, srq->max_wr);
		if (rc)
			goto out;
		u = &srq->cq_uses[srq->n_cq_uses++];
		*u = (struct srq_cq_use){ .cq = cq };
	}
	u->qps++;
	srq->qps++;
out:
	pthread_mutex_unlock(&srq->lock);
	return rc;
}

static void srq_detach(struct iw_srq *srq, struct iw_cq *cq)
{
	pthread_mutex_lock(&srq->lock);
	for (unsigned int i = 0; i < srq->n_cq_uses; i++) {
		struct srq_cq_use *u = &srq->cq_uses[i];

		if (u->cq != cq)
			continue;
		if (--u->qps == 0) {
			cq_release(cq, srq->max_wr);
			*u = srq->cq_uses[--srq->n_cq_uses];
		}
		break;
	}
	srq->qps--;
	pthread_mutex_unlock(&srq->lock);
}

/*
 * Reserves the room in the CQs every queue of the QP may fill; a CQ too
 * small grows (cq_reserve()).
 */
static int qp_reserve_cqs(struct iw_qp *qp)
{
	int rc;

	rc = cq_reserve(qp->send_cq, qp->cap.max_send_wr);
	if (rc)
		return rc;
	if (qp->srq)
		rc = srq_attach(qp->srq, qp->recv_cq);
	else
		rc = cq_reserve(qp->recv_cq, qp->cap.max_recv_wr);
	if (rc)
		cq_release(qp->send_cq, qp->cap.max_send_wr);
	return rc;
}

static void qp_release_cqs(struct iw_qp *qp)
{
	cq_remove_qp(qp->send_cq, qp);
	if (qp->recv_cq != qp->send_cq)
		cq_remove_qp(qp->recv_cq, qp);
	cq_forget_qp(qp->send_cq, qp);
	cq_forget_qp(qp->recv_cq, qp);
	cq_release(qp->send_cq, qp->cap.max_send_wr);
	if (qp->srq)
		srq_detach(qp->srq, qp->recv_cq);
	else
		cq_release(qp->recv_cq, qp->cap.max_recv_wr);
}

/*
 * Creates a QP in the INIT state.  Returns NULL with errno EINVAL for bad
 * capabilities, an SRQ of another protection domain or a CQ that would
 * have to hold more than CQ_MAX_CQE completions, ENOMEM otherwise.
 */
struct iw_qp *iw_create_qp_0_2(struct iw_pd *pd,
			       struct iw_qp_init_attr *attr);
struct iw_qp *iw_create_qp_0_2(struct iw_pd *pd, struct iw_qp_init_attr *attr)
{
	struct iw_qp_cap *cap = attr ? &attr->cap : NULL;
	uint32_t recv_wr, ext = 0;
	struct iw_qp *qp;
	int rc;

	if (attr && (attr->comp_mask & IW_QP_INIT_ATTR_RFC7306))
		ext = attr->rfc7306;
	if (!pd || !attr || !attr->send_cq || !attr->recv_cq ||
	    (attr->comp_mask & ~(uint32_t)IW_QP_INIT_ATTR_RFC7306) ||
	    (ext & ~(uint32_t)IW_RFC7306_ALL) ||
	    cap->max_send_wr == 0 || cap->max_send_wr > QP_MAX_WR ||
	    (!attr->srq && (cap->max_recv_wr == 0 ||
			    cap->max_recv_wr > QP_MAX_WR)) ||
	    cap->max_send_sge > RDMAP_MAX_SGE ||
	    cap->max_recv_sge > RDMAP_MAX_SGE ||
	    cap->max_inline_data > QP_MAX_INLINE ||
	    (attr->srq && attr->srq->pd != pd)) {
		errno = EINVAL;
		return NULL;
	}
	recv_wr = attr->srq ? 0 : cap->max_recv_wr;
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->pd = pd;
	qp->ctx = pd->ctx;
	qp->qp_context = attr->qp_context;
	qp->send_cq = attr->send_cq;
	qp->recv_cq = attr->recv_cq;
	qp->srq = attr->srq;
	qp->cap = *cap;
	if (!qp->cap.max_send_sge)
		qp->cap.max_send_sge = 1;
	if (!qp->cap.max_recv_sge)
		qp->cap.max_recv_sge = 1;
	/*
	 * Every QP takes inline data up to the device's limit, whatever was
	 * asked, as siw does: libfabric and rdma-core's examples post inline
	 * Sends on QPs created with max_inline_data 0.  Each send slot's room
	 * is only touched when inline data is posted into it.
	 */
	qp->cap.max_inline_data = QP_MAX_INLINE;
	qp->sig_all = attr->sq_sig_all;
	qp->timeouts = pd->ctx->qp_timeouts;
	rc = qp_reserve_cqs(qp);
	if (rc) {
		free(qp);
		errno = -rc;
		return NULL;
	}
	rc = rdmap_qp_init(&qp->engine,
			   &(struct rdmap_qp_attr){
				   .sq_depth = cap->max_send_wr,
				   .rq_depth = recv_wr,
				   .max_sge = qp->cap.max_send_sge >
							      qp->cap.max_recv_sge
						      ? qp->cap.max_send_sge
						      : qp->cap.max_recv_sge,
				   .max_inline = qp->cap.max_inline_data,
				   .pd = pd->id,
				   .stags = &pd->ctx->stags,
				   .srq = attr->srq ? &attr->srq->srq : NULL,
				   .ext = (uint8_t)(((ext & IW_RFC7306_ATOMICS)
							     ? RDMAP_EXT_ATOMICS
							     : 0) |
						    ((ext & IW_RFC7306_IMMEDIATE)
							     ? RDMAP_EXT_IMM
							     : 0)),
			   },
			   &qp_engine_ops, qp);
	if (rc) {
		qp_release_cqs(qp);
		free(qp);
		errno = -rc;
		return NULL;
	}
	pthread_mutex_init(&qp->own_lock, NULL);
	atomic_init(&qp->lock, &qp->own_lock);
	rc = cq_add_qp(qp->send_cq, qp);
	if (!rc && qp->recv_cq != qp->send_cq) {
		rc = cq_add_qp(qp->recv_cq, qp);
		if (rc)
			cq_remove_qp(qp->send_cq, qp);
	}
	if (rc) {
		rdmap_qp_fini(&qp->engine);
		qp_release_cqs(qp);
		pthread_mutex_destroy(&qp->own_lock);
		free(qp);
		errno = -rc;
		return NULL;
	}
	pd_add_qp(pd, qp);
	stats_add_qp(qp);
	return qp;
}
/* struct iw_qp_init_attr grew in 0.2; verbs/abi.c has the 0.1 one */
__asm__(".symver iw_create_qp_0_2, iw_create_qp@@IWARP_0.2");

/* Fails with -EBUSY while the QP is attached to a connection identifier. */
int iw_destroy_qp(struct iw_qp *qp)
{
	pthread_mutex_t *l;

	if (!qp)
		return -EINVAL;
	l = qp_lock(qp);
	if (qp->id) {
		pthread_mutex_unlock(l);
		return -EBUSY;
	}
	pthread_mutex_unlock(l);
	stats_remove_qp(qp);
	pd_remove_qp(qp->pd, qp);
	rdmap_qp_fini(&qp->engine);
	qp_release_cqs(qp);
	pthread_mutex_destroy(&qp->own_lock);
	free(qp);
	return 0;
}

int iw_query_qp(struct iw_qp *qp, struct iw_qp_attr *attr)
{
	static const uint8_t state[] = {
		[RDMAP_QP_IDLE] = IW_QPS_INIT,
		[RDMAP_QP_RTS] = IW_QPS_RTS,
		[RDMAP_QP_TERMINATING] = IW_QPS_TERMINATING,
		[RDMAP_QP_ERROR] = IW_QPS_ERROR,
	};
	const struct rdmap_conn *c;
	pthread_mutex_t *l;

	if (!qp || !attr)
		return -EINVAL;
	c = &qp->engine.conn;
	l = qp_lock(qp);
	*attr = (struct iw_qp_attr){
		.state = state[qp->engine.state],
		.cap = qp->cap,
		.ird = c->ird,
		.ord = c->ord,
		.crc = c->crc,
		.markers_tx = c->markers_tx,
		.markers_rx = c->markers_rx,
		.rtr = c->rtr,
		.mulpdu = c->mulpdu,
		.err = qp->engine.err,
	};
	if (qp->id)
		attr->mpa_revision = qp->id->rep.rev;
	pthread_mutex_unlock(l);
	return 0;
}

void *iw_qp_context(struct iw_qp *qp)
{
	return qp ? qp->qp_context : NULL;
}

/* Moves the QP to the error state: its stream closes, its work flushes. */
int iw_qp_to_error(struct iw_qp *qp)
{
	pthread_mutex_t *l;

	if (!qp)
		return -EINVAL;
	l = qp_lock(qp);
	rdmap_qp_set_error(&qp->engine, -IW_ECLOSED);
	if (qp->id)
		cm_stream_ended(qp->id, -IW_ECLOSED);
	pthread_mutex_unlock(l);
	return 0;
}

/* An atomic's target sits where an RDMA operation's does. */
_Static_assert(offsetof(struct iw_send_wr, atomic.remote_addr) ==
			       offsetof(struct iw_send_wr, rdma.remote_addr) &&
		       offsetof(struct iw_send_wr, atomic.rkey) ==
			       offsetof(struct iw_send_wr, rdma.rkey),
	       "atomic and rdma name their target in the same place");

/* The RFC 7306 operands of a work request, as verbs name them. */
static void ext_operands(struct rdmap_send_wr *w, const struct iw_send_wr *wr)
{
	switch (wr->opcode) {
	case IW_WR_ATOMIC_FETCH_AND_ADD:
		w->atomic = (struct rdmap_atomic_args){
			.aop = RDMAP_AOP_FETCH_ADD,
			.data = wr->atomic.compare_add,
		};
		break;
	case IW_WR_ATOMIC_CMP_AND_SWP:
		w->atomic = (struct rdmap_atomic_args){
			.aop = RDMAP_AOP_CMP_SWAP,
			.data = wr->atomic.swap,
			.data_mask = UINT64_MAX,
			.cmp = wr->atomic.compare_add,
			.cmp_mask = UINT64_MAX,
		};
		break;
	default: /* IW_WR_RDMA_WRITE_WITH_IMM, IW_WR_SEND_WITH_IMM */
		w->imm = wr->imm_data;
		break;
	}
}

/*
 * The engine's form of @wr, every field set but the RFC 7306 operands,
 * which are set for their opcodes only (the engine reads them for no
 * other): no zeroing of the whole on every post.
 */
static void engine_send_wr(const struct iw_qp *qp, const struct iw_send_wr *wr,
			   struct rdmap_send_wr *w)
{
	static const uint8_t op[] = {
		[IW_WR_SEND] = RDMAP_WR_SEND,
		[IW_WR_SEND_WITH_INV] = RDMAP_WR_SEND_INV,
		[IW_WR_RDMA_WRITE] = RDMAP_WR_WRITE,
		[IW_WR_RDMA_READ] = RDMAP_WR_READ,
		[IW_WR_LOCAL_INV] = RDMAP_WR_LOCAL_INV,
		[IW_WR_RDMA_WRITE_WITH_IMM] = RDMAP_WR_WRITE_IMM,
		[IW_WR_SEND_WITH_IMM] = RDMAP_WR_IMM,
		[IW_WR_ATOMIC_CMP_AND_SWP] = RDMAP_WR_ATOMIC,
		[IW_WR_ATOMIC_FETCH_AND_ADD] = RDMAP_WR_ATOMIC,
	};
	unsigned int f = wr->send_flags;

	w->wr_id = wr->wr_id;
	w->op = op[wr->opcode];
	w->flags = (f & IW_SEND_SOLICITED ? RDMAP_WR_SOLICITED : 0) |
		   (f & IW_SEND_INLINE ? RDMAP_WR_INLINE : 0) |
		   (f & IW_SEND_FENCE ? RDMAP_WR_FENCE : 0) |
		   ((f & IW_SEND_SIGNALED) || qp->sig_all ? RDMAP_WR_SIGNALED
							 : 0);
	w->inv_stag = wr->invalidate_rkey;
	w->rkey = wr->rdma.rkey;
	w->remote_addr = wr->rdma.remote_addr;
	w->sge = (const struct rdmap_sge *)wr->sg_list;
	w->num_sge = wr->opcode == IW_WR_LOCAL_INV ? 0 : (uint32_t)wr->num_sge;
	if (wr->opcode >= IW_WR_RDMA_WRITE_WITH_IMM)
		ext_operands(w, wr);
}

/*
 * Posts a chain of send work requests.  Returns 0, or the reason the first
 * refused one (*@bad_wr) was not queued: -EINVAL (malformed), -EOPNOTSUPP
 * (an RFC 7306 opcode on a QP that did not enable it), -ENOMEM (queue
 * full), -IW_ELOCAL_PROTECTION (an lkey does not cover its buffer),
 * -IW_ELOCAL_LENGTH (too many SGEs or too much inline data),
 * -IW_ENO_READ_CREDIT (an RDMA Read or atomic on a connection whose ORD
 * is 0).
 */
int iw_post_send(struct iw_qp *qp, struct iw_send_wr *wr,
		 struct iw_send_wr **bad_wr)
{
	pthread_mutex_t *l;
	int rc = 0;

	if (!qp)
		return -EINVAL;
	l = qp_lock(qp);
	for (; wr; wr = wr->next) {
		struct rdmap_send_wr w;

		if ((unsigned int)wr->opcode > IW_WR_ATOMIC_FETCH_AND_ADD ||
		    wr->num_sge < 0) {
			rc = -EINVAL;
		} else if ((uint32_t)wr->num_sge > qp->cap.max_send_sge) {
			rc = -IW_ELOCAL_LENGTH;
		} else if (rdmap_sq_outstanding(&qp->engine) +
				   atomic_load(&qp->sq_cqes) >=
			   qp->cap.max_send_wr) {
			rc = -ENOMEM;
		} else {
			engine_send_wr(qp, wr, &w);
			rc = rdmap_post_send(&qp->engine, &w);
		}
		if (rc) {
			if (bad_wr)
				*bad_wr = wr;
			break;
		}
	}
	if (qp->id)
		conn_posted(qp->id);
	pthread_mutex_unlock(l);
	return rc;
}

/*
 * @queued: receives this call has posted and not yet counted in
 * rq_unpolled.  A receive that is placed completes only in a thread
 * holding the QP's lock, which the poster holds, so the count may come
 * once for the whole chain; a flushed one is in the CQ on return, so it
 * is counted first.
 */
static int post_one_recv(struct iw_qp *qp, const struct iw_recv_wr *wr,
			 uint32_t *queued)
{
	struct rdmap_recv_wr r = {
		.wr_id = wr->wr_id,
		.sge = (const struct rdmap_sge *)wr->sg_list,
		.num_sge = (uint32_t)wr->num_sge,
	};
	int rc;

	if (wr->num_sge < 0 || qp->srq)
		return -EINVAL;
	if ((uint32_t)wr->num_sge > qp->cap.max_recv_sge)
		return -IW_ELOCAL_LENGTH;
	if (atomic_load(&qp->rq_unpolled) + *queued >= qp->cap.max_recv_wr)
		return -ENOMEM;
	if (!rdmap_flushes(&qp->engine)) {
		rc = rdmap_post_recv(&qp->engine, &r);
		*queued += !rc;
		return rc;
	}
	atomic_fetch_add(&qp->rq_unpolled, 1);
	rc = rdmap_post_recv(&qp->engine, &r);
	if (rc)
		atomic_fetch_sub(&qp->rq_unpolled, 1);
	return rc;
}

/*
 * Posts a chain of receives.  Returns 0, or why the first refused one
 * (*@bad_wr) was not queued: -EINVAL (malformed, or the QP uses an SRQ),
 * -ENOMEM (queue full), -IW_ELOCAL_PROTECTION, -IW_ELOCAL_LENGTH.
 */
int iw_post_recv(struct iw_qp *qp, struct iw_recv_wr *wr,
		 struct iw_recv_wr **bad_wr)
{
	pthread_mutex_t *l;
	uint32_t queued = 0;
	int rc = 0;

	if (!qp)
		return -EINVAL;
	l = qp_lock(qp);
	for (; wr; wr = wr->next) {
		rc = post_one_recv(qp, wr, &queued);
		if (rc) {
			if (bad_wr)
				*bad_wr = wr;
			break;
		}
	}
	if (queued)
		atomic_fetch_add(&qp->rq_unpolled, queued);
	pthread_mutex_unlock(l);
	return rc;
}

/* ---- what the engine reports ---------------------------------------- */

static void wc_from_cqe(struct iw_wc *wc, struct iw_qp *qp,
			const struct rdmap_cqe *c)
{
	static const uint8_t status[] = {
		[RDMAP_WC_SUCCESS] = IW_WC_SUCCESS,
		[RDMAP_WC_LOC_LEN_ERR] = IW_WC_LOC_LEN_ERR,
		[RDMAP_WC_LOC_PROT_ERR] = IW_WC_LOC_PROT_ERR,
		[RDMAP_WC_LOC_QP_OP_ERR] = IW_WC_LOC_QP_OP_ERR,
		[RDMAP_WC_WR_FLUSH_ERR] = IW_WC_WR_FLUSH_ERR,
		[RDMAP_WC_REM_ACCESS_ERR] = IW_WC_REM_ACCESS_ERR,
		[RDMAP_WC_REM_OP_ERR] = IW_WC_REM_OP_ERR,
		[RDMAP_WC_RETRY_EXC_ERR] = IW_WC_RETRY_EXC_ERR,
	};
	static const uint8_t opcode[] = {
		[RDMAP_WC_SEND] = IW_WC_SEND,
		[RDMAP_WC_WRITE] = IW_WC_RDMA_WRITE,
		[RDMAP_WC_READ] = IW_WC_RDMA_READ,
		[RDMAP_WC_RECV] = IW_WC_RECV,
		[RDMAP_WC_LOCAL_INV] = IW_WC_LOCAL_INV,
		[RDMAP_WC_FETCH_ADD] = IW_WC_FETCH_ADD,
		[RDMAP_WC_CMP_SWAP] = IW_WC_COMP_SWAP,
		/* no work request of this API asks for a plain Swap */
		[RDMAP_WC_SWAP] = IW_WC_COMP_SWAP,
		[RDMAP_WC_RECV_WRITE_IMM] = IW_WC_RECV_RDMA_WITH_IMM,
	};

	*wc = (struct iw_wc){
		.wr_id = c->wr_id,
		.status = status[c->status],
		.opcode = opcode[c->opcode],
		.byte_len = c->byte_len,
		.invalidated_rkey = c->inv_stag,
		.wc_flags = ((c->flags & RDMAP_CQE_SOLICITED) ? IW_WC_SOLICITED : 0) |
			    ((c->flags & RDMAP_CQE_INVALIDATED) ? IW_WC_WITH_INV : 0) |
			    ((c->flags & RDMAP_CQE_IMM) ? IW_WC_WITH_IMM : 0),
		.qp = qp,
		.err = c->status == RDMAP_WC_SUCCESS ? 0 : c->err,
		.qp_context = qp->qp_context,
		.imm_data = c->imm,
	};
}

/* Each run of one queue's completions goes to its CQ in one push. */
static void engine_complete(void *arg, const struct rdmap_cqe *c,
			    unsigned int n)
{
	struct iw_qp *qp = arg;
	struct iw_wc wc[RDMAP_CQE_RUN];

	while (n) {
		bool recv = c[0].recv;
		uint32_t k = 0;

		while (k < n && k < RDMAP_CQE_RUN && c[k].recv == recv) {
			wc_from_cqe(&wc[k], qp, &c[k]);
			if (c[k].status == RDMAP_WC_WR_FLUSH_ERR)
				counter_add(&qp->flushed, 1);
			k++;
		}
		if (!recv)
			cq_push(qp->send_cq, wc, k, &qp->sq_cqes, true);
		else
			cq_push(qp->recv_cq, wc, k,
				qp->srq ? &qp->srq->unpolled
					: &qp->rq_unpolled,
				false);
		c += k;
		n -= k;
	}
}

static void term_info(struct iw_terminate_info *ti, const struct rdmap_term *t,
		      bool received)
{
	*ti = (struct iw_terminate_info){
		.valid = 1,
		.received = received,
		.layer = t->layer,
		.etype = t->etype,
		.ecode = t->ecode,
		.words = rdmap_term_describe(t->layer, t->etype, t->ecode),
	};
	/* only a peer's word can have been written the other way round */
	if (received) {
		ti->swapped_layer = t->swapped.layer;
		ti->swapped_etype = t->swapped.etype;
		ti->swapped_ecode = t->swapped.ecode;
		ti->swapped_words = rdmap_term_describe(t->swapped.layer,
							t->swapped.etype,
							t->swapped.ecode);
	}
}

static void engine_event(void *arg, const struct rdmap_event *ev)
{
	struct iw_qp *qp = arg;
	struct iw_cm_id *id = qp->id;
	struct iw_terminate_info ti;

	switch (ev->type) {
	case RDMAP_EV_TERMINATE_SENT:
	case RDMAP_EV_TERMINATE_RECEIVED:
		term_info(&ti, ev->term,
			  ev->type == RDMAP_EV_TERMINATE_RECEIVED);
		if (id) {
			id->term = ti;
			iw_log_id(id, "Terminate %s: layer %u type %u code 0x%02x (%s)",
				  ti.received ? "received" : "sent", ti.layer,
				  ti.etype, ti.ecode,
				  ti.words ? ti.words
					   : ti.swapped_words
						     ? ti.swapped_words
						     : "not an RFC 5040 triple");
		}
		break;
	case RDMAP_EV_ERROR:
		if (id)
			iw_log_id(id, "stream error: %s", iw_strerror(ev->err));
		break;
	default:
		if (id)
			iw_log_id(id, "first FPDU from the initiator");
		break;
	}
}

const struct rdmap_ops qp_engine_ops = { engine_complete, engine_event };
