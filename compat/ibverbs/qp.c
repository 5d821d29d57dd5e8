// SPDX-License-Identifier: MIT
/*
 * Queue pairs.  An iWARP QP carries traffic once rdma_cm has connected
 * it; the states an application drives with ibv_modify_qp() (RESET,
 * INIT, RTR, RTS) are kept here, ERR flushes through iw_qp_to_error(),
 * and once a connection is up or has failed the QP reports RTS or ERR
 * as libiwarp sees it.  RESET gives the QP a fresh libiwarp QP, so that
 * it can be used again.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "compat/ibverbs/ibverbs.h"

/* Work requests handed to libiwarp at a time */
#define POST_BATCH 16

/* QP numbers are 24 bits; 0 names no QP */
static atomic_uint next_qp_num = 1;

static uint32_t new_qp_num(void)
{
	uint32_t n;

	do
		n = atomic_fetch_add(&next_qp_num, 1) & 0xffffff;
	while (n == 0);
	return n;
}

static int new_iw_qp(struct iwv_qp *qp)
{
	struct ibv_qp *q = &qp->qp.qp_base;
	struct iw_qp_init_attr a = {
		.send_cq = to_iwv_cq(q->send_cq)->iw,
		.recv_cq = to_iwv_cq(q->recv_cq)->iw,
		.srq = q->srq ? to_iwv_srq(q->srq)->iw : NULL,
		/* completions carry it: the QP number, never a pointer */
		.qp_context = (void *)(uintptr_t)q->qp_num,
		.cap = {
			.max_send_wr = qp->cap.max_send_wr,
			.max_recv_wr = q->srq ? 0 : qp->cap.max_recv_wr,
			.max_send_sge = qp->cap.max_send_sge,
			.max_recv_sge = qp->cap.max_recv_sge,
			.max_inline_data = qp->cap.max_inline_data,
		},
		.sq_sig_all = qp->sq_sig_all,
	};
	uint32_t ext = to_iwv_ctx(q->context)->rfc7306;

	if (ext) {
		a.comp_mask = IW_QP_INIT_ATTR_RFC7306;
		a.rfc7306 = ext;
	}
	qp->iw = iw_create_qp(to_iwv_pd(q->pd)->iw, &a);
	return qp->iw ? 0 : errno;
}

static void link_qp(struct iwv_context *c, struct iwv_qp *qp)
{
	pthread_mutex_lock(&c->qps_lock);
	qp->next = c->qps;
	c->qps = qp;
	pthread_mutex_unlock(&c->qps_lock);
}

static void unlink_qp(struct iwv_context *c, struct iwv_qp *qp)
{
	struct iwv_qp **pp;

	pthread_mutex_lock(&c->qps_lock);
	for (pp = &c->qps; *pp && *pp != qp; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = qp->next;
	pthread_mutex_unlock(&c->qps_lock);
}

/*
 * Only reliable connected QPs exist on iWARP.  Capabilities of 0 get the
 * least libiwarp takes (one request, one element); what was granted is
 * written back, as a kernel driver does.
 */
static struct ibv_qp *create_qp(struct ibv_pd *pd,
				struct ibv_qp_init_attr_ex *attr)
{
	struct iw_device_attr d;
	struct iwv_qp *qp;
	struct ibv_qp *q;
	int rc;

	if (!pd || !iwv_is_ours(pd->context) || !attr->send_cq ||
	    !attr->recv_cq || attr->send_cq->context != pd->context ||
	    attr->recv_cq->context != pd->context ||
	    (attr->srq && attr->srq->pd != pd)) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->qp_type != IBV_QPT_RC) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	iw_query_device(to_iwv_ctx(pd->context)->iw, &d, sizeof(d));
	if (attr->cap.max_send_wr > d.max_qp_wr ||
	    attr->cap.max_recv_wr > d.max_qp_wr ||
	    attr->cap.max_send_sge > d.max_sge ||
	    attr->cap.max_recv_sge > d.max_sge ||
	    attr->cap.max_inline_data > d.max_inline_data) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	q = &qp->qp.qp_base;
	q->context = pd->context;
	q->qp_context = attr->qp_context;
	q->pd = pd;
	q->send_cq = attr->send_cq;
	q->recv_cq = attr->recv_cq;
	q->srq = attr->srq;
	q->qp_num = new_qp_num();
	q->handle = q->qp_num;
	q->state = IBV_QPS_RESET;
	q->qp_type = IBV_QPT_RC;
	qp->state = IBV_QPS_RESET;
	qp->cap = attr->cap;
	qp->cap.max_send_wr += !qp->cap.max_send_wr;
	if (!attr->srq)
		qp->cap.max_recv_wr += !qp->cap.max_recv_wr;
	else
		qp->cap.max_recv_wr = 0;
	qp->cap.max_send_sge += !qp->cap.max_send_sge;
	qp->cap.max_recv_sge += !qp->cap.max_recv_sge;
	qp->sq_sig_all = attr->sq_sig_all;
	qp->max_rd_atomic = qp->max_dest_rd_atomic = IWV_MAX_RD_ATOM;
	qp->retry_cnt = 7; /* InfiniBand's usual, rdma_cm's too */
	qp->send_ops_flags = attr->send_ops_flags;
	rc = new_iw_qp(qp);
	if (!rc) {
		struct iw_qp_attr qa;

		/* the inline room granted is the device's, whatever was asked */
		if (!iw_query_qp(qp->iw, &qa))
			qp->cap.max_inline_data = qa.cap.max_inline_data;
		rc = iwv_qp_ex_init(qp);
	}
	if (rc) {
		if (qp->iw)
			iw_destroy_qp(qp->iw);
		free(qp);
		errno = rc;
		return NULL;
	}
	pthread_mutex_init(&qp->lock, NULL);
	pthread_mutex_init(&q->mutex, NULL);
	pthread_cond_init(&q->cond, NULL);
	attr->cap = qp->cap;
	link_qp(to_iwv_ctx(pd->context), qp);
	return q;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex a = { 0 };
	struct ibv_qp *qp;

	if (!qp_init_attr) {
		errno = EINVAL;
		return NULL;
	}
	memcpy(&a, qp_init_attr, sizeof(*qp_init_attr));
	qp = create_qp(pd, &a);
	if (qp)
		qp_init_attr->cap = a.cap;
	return qp;
}

struct ibv_qp *iwv_create_qp_ex(struct ibv_context *ctx,
				struct ibv_qp_init_attr_ex *attr)
{
	uint64_t ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND |
		       IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_LOCAL_INV |
		       IBV_QP_EX_WITH_SEND_WITH_INV;

	if (!attr || !(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd ||
	    attr->pd->context != ctx) {
		errno = EINVAL;
		return NULL;
	}
	if (to_iwv_ctx(ctx)->rfc7306 & IW_RFC7306_ATOMICS)
		ops |= IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	if (to_iwv_ctx(ctx)->rfc7306 & IW_RFC7306_IMMEDIATE)
		ops |= IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
		       IBV_QP_EX_WITH_SEND_WITH_IMM;
	/* XRC, creation flags, TSO, RSS; without RFC 7306 immediate data
	 * and atomics; MWs */
	if ((attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD |
					   IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
					   IBV_QP_INIT_ATTR_CREATE_FLAGS)) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	     (attr->send_ops_flags & ~ops))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		attr->send_ops_flags = 0;
	return create_qp(attr->pd, attr);
}

/* A connection that holds the QP lets go of it first (librdmacm's hook). */
static void release_cm(struct iwv_qp *qp)
{
	if (qp->cm_release)
		qp->cm_release(&qp->qp.qp_base);
}

int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct iwv_qp *qp;
	int rc;

	if (!ibqp)
		return EINVAL;
	qp = to_iwv_qp(ibqp);
	release_cm(qp);
	rc = iw_destroy_qp(qp->iw);
	if (rc)
		return iwv_errno(rc);
	unlink_qp(to_iwv_ctx(ibqp->context), qp);
	iwv_qp_ex_fini(qp);
	pthread_mutex_destroy(&qp->lock);
	pthread_cond_destroy(&ibqp->cond);
	pthread_mutex_destroy(&ibqp->mutex);
	free(qp);
	return 0;
}

/* ---- states ---------------------------------------------------------- */

/* libiwarp's state of the QP: INIT until connected. */
static enum iw_qp_state engine_state(struct iwv_qp *qp)
{
	struct iw_qp_attr a;

	return iw_query_qp(qp->iw, &a) ? IW_QPS_INIT : a.state;
}

/*
 * With qp->lock: the state as it stands.  A connection that is up or has
 * failed decides; before that, what the application set.
 */
static enum ibv_qp_state current_state(struct iwv_qp *qp)
{
	switch (qp->state == IBV_QPS_ERR ? IW_QPS_ERROR : engine_state(qp)) {
	case IW_QPS_RTS:
		return IBV_QPS_RTS;
	case IW_QPS_TERMINATING:
	case IW_QPS_ERROR:
		return IBV_QPS_ERR;
	default:
		return qp->state;
	}
}

/*
 * The transitions of the IB specification that an RC QP may take here;
 * the address, path and sequence number attributes that go with them on
 * InfiniBand mean nothing over TCP and are accepted and ignored, as
 * kernel iWARP drivers do.
 */
static bool transition_ok(enum ibv_qp_state from, enum ibv_qp_state to)
{
	switch (to) {
	case IBV_QPS_RESET:
	case IBV_QPS_ERR:
		return true;
	case IBV_QPS_INIT:
		return from == IBV_QPS_RESET || from == IBV_QPS_INIT;
	case IBV_QPS_RTR:
		return from == IBV_QPS_INIT || from == IBV_QPS_RTR;
	case IBV_QPS_RTS:
		return from == IBV_QPS_RTR || from == IBV_QPS_RTS ||
		       from == IBV_QPS_SQD;
	case IBV_QPS_SQD:
		return from == IBV_QPS_RTS || from == IBV_QPS_SQD;
	default:
		return false;
	}
}

/* RESET: a fresh libiwarp QP with the same queues, empty. */
static int reset(struct iwv_qp *qp)
{
	struct iw_qp *old = qp->iw;
	int rc;

	release_cm(qp);
	rc = new_iw_qp(qp);
	if (rc) {
		qp->iw = old;
		return rc;
	}
	iw_destroy_qp(old);
	atomic_store(&qp->posted, false);
	return 0;
}

/*
 * The bounds a mapped ACK timeout is held to: an InfiniBand budget is
 * sized for hardware retries (perftest's 14 and 7 make 0.54 s), where a
 * TCP connection under load may wait on a retransmission or a busy
 * reader longer than that; and no application waits for hours.
 */
#define ACK_TIMEOUT_MS_MIN 2000
#define ACK_TIMEOUT_MS_MAX 600000

/*
 * IB's retry budget as the connection's ACK timeout (TCP_USER_TIMEOUT):
 * a try waits 4.096 us * 2^timeout (IBTA 1.4, section 9.7.6.1.3), and
 * there are retry_cnt + 1 tries.  Timeout 0, InfiniBand's "wait for
 * ever", leaves the QP's as it is, libiwarp's default (or
 * IWARP_ACK_TIMEOUT_MS) unless set before: a bound is what the
 * application needs.
 */
static int apply_ack_timeout(struct iwv_qp *qp)
{
	struct iw_qp_timeouts t = { .comp_mask = IW_QP_TIMEOUTS_ACK };
	uint64_t ns = (4096ull << (qp->timeout & 31)) * (qp->retry_cnt + 1u);
	uint64_t ms = ns / 1000000;

	if (!qp->timeout)
		return 0;
	if (ms < ACK_TIMEOUT_MS_MIN)
		ms = ACK_TIMEOUT_MS_MIN;
	else if (ms > ACK_TIMEOUT_MS_MAX)
		ms = ACK_TIMEOUT_MS_MAX;
	t.ack_timeout_ms = (uint32_t)ms;
	return iwv_errno(iw_set_qp_timeouts(qp->iw, &t));
}

/* IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT: taken in any state, as RTS takes them */
static int set_retry_budget(struct iwv_qp *qp, const struct ibv_qp_attr *attr,
			    int attr_mask)
{
	if (!(attr_mask & (IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT)))
		return 0;
	if (((attr_mask & IBV_QP_TIMEOUT) && attr->timeout > 31) ||
	    ((attr_mask & IBV_QP_RETRY_CNT) && attr->retry_cnt > 7))
		return EINVAL;
	if (attr_mask & IBV_QP_TIMEOUT)
		qp->timeout = attr->timeout;
	if (attr_mask & IBV_QP_RETRY_CNT)
		qp->retry_cnt = attr->retry_cnt;
	return apply_ack_timeout(qp);
}

int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		  int attr_mask)
{
	struct iwv_qp *qp;
	enum ibv_qp_state cur, to;
	int rc = 0;

	if (!ibqp || !attr)
		return EINVAL;
	qp = to_iwv_qp(ibqp);
	pthread_mutex_lock(&qp->lock);
	cur = current_state(qp);
	to = attr_mask & IBV_QP_STATE ? attr->qp_state : cur;
	if (((attr_mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur) ||
	    ((attr_mask & IBV_QP_PORT) && attr->port_num != IWV_PORT) ||
	    ((attr_mask & IBV_QP_PKEY_INDEX) && attr->pkey_index != 0)) {
		rc = EINVAL;
		goto out;
	}
	rc = set_retry_budget(qp, attr, attr_mask);
	if (rc)
		goto out;
	/*
	 * A connected QP is in RTS already: applications that drive the
	 * states themselves around rdma_cm (rping -q) step it through INIT,
	 * RTR and RTS again, which changes nothing.
	 */
	if (cur == IBV_QPS_RTS && engine_state(qp) == IW_QPS_RTS &&
	    (to == IBV_QPS_INIT || to == IBV_QPS_RTR || to == IBV_QPS_RTS))
		goto out;
	if ((attr_mask & IBV_QP_STATE) && !transition_ok(cur, to)) {
		rc = EINVAL;
		goto out;
	}
	if (to == IBV_QPS_RESET && cur != IBV_QPS_RESET) {
		rc = reset(qp);
		if (!rc && qp->timeout)
			rc = apply_ack_timeout(qp); /* the new QP keeps them */
	}
	else if (to == IBV_QPS_ERR && cur != IBV_QPS_ERR)
		rc = iwv_errno(iw_qp_to_error(qp->iw));
	if (rc)
		goto out;
	if (attr_mask & IBV_QP_ACCESS_FLAGS)
		qp->access = (int)attr->qp_access_flags;
	if (attr_mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->max_rd_atomic = attr->max_rd_atomic;
	if (attr_mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		qp->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	qp->state = to;
	ibqp->state = to;
out:
	pthread_mutex_unlock(&qp->lock);
	return rc;
}

int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr)
{
	struct iwv_qp *qp;
	struct iw_qp_attr a;

	(void)attr_mask; /* everything is at hand: all of it is filled */
	if (!ibqp || !attr || !init_attr)
		return EINVAL;
	qp = to_iwv_qp(ibqp);
	memset(attr, 0, sizeof(*attr));
	pthread_mutex_lock(&qp->lock);
	attr->qp_state = current_state(qp);
	ibqp->state = attr->qp_state;
	attr->max_rd_atomic = qp->max_rd_atomic;
	attr->max_dest_rd_atomic = qp->max_dest_rd_atomic;
	/* once connected, the Read depths the MPA handshake settled */
	if (iw_query_qp(qp->iw, &a) == 0 && a.state != IW_QPS_INIT) {
		attr->max_rd_atomic = a.ord > 255 ? 255 : (uint8_t)a.ord;
		attr->max_dest_rd_atomic = a.ird > 255 ? 255 : (uint8_t)a.ird;
	}
	attr->qp_access_flags = (unsigned int)qp->access;
	attr->timeout = qp->timeout;
	attr->retry_cnt = qp->retry_cnt;
	pthread_mutex_unlock(&qp->lock);
	attr->cur_qp_state = attr->qp_state;
	attr->path_mtu = IBV_MTU_1024;
	attr->cap = qp->cap;
	attr->port_num = IWV_PORT;
	*init_attr = (struct ibv_qp_init_attr){
		.qp_context = ibqp->qp_context,
		.send_cq = ibqp->send_cq,
		.recv_cq = ibqp->recv_cq,
		.srq = ibqp->srq,
		.cap = qp->cap,
		.qp_type = ibqp->qp_type,
		.sq_sig_all = qp->sq_sig_all,
	};
	return 0;
}

/* RDMA Writes are placed in order, the last octet last (perftest's
 * write latency test spins on it): every operation keeps its order. */
int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
			       uint32_t flags)
{
	(void)qp;
	(void)op;
	return flags ? 0 : 1;
}

/* ---- posting --------------------------------------------------------- */

/*
 * libiwarp's opcode for an ibverbs one; EOPNOTSUPP for what iWARP does
 * not carry (memory windows, TSO).  Immediate data and atomics are RFC
 * 7306's: a QP without it refuses them when they are posted.
 */
int iwv_send_opcode(enum ibv_wr_opcode op, enum iw_wr_opcode *out)
{
	switch (op) {
	case IBV_WR_SEND:
		*out = IW_WR_SEND;
		return 0;
	case IBV_WR_SEND_WITH_INV:
		*out = IW_WR_SEND_WITH_INV;
		return 0;
	case IBV_WR_RDMA_WRITE:
		*out = IW_WR_RDMA_WRITE;
		return 0;
	case IBV_WR_RDMA_READ:
		*out = IW_WR_RDMA_READ;
		return 0;
	case IBV_WR_LOCAL_INV:
		*out = IW_WR_LOCAL_INV;
		return 0;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		*out = IW_WR_RDMA_WRITE_WITH_IMM;
		return 0;
	case IBV_WR_SEND_WITH_IMM:
		*out = IW_WR_SEND_WITH_IMM;
		return 0;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		*out = IW_WR_ATOMIC_CMP_AND_SWP;
		return 0;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		*out = IW_WR_ATOMIC_FETCH_AND_ADD;
		return 0;
	default:
		return EOPNOTSUPP;
	}
}

unsigned int iwv_send_flags(unsigned int f)
{
	return (f & IBV_SEND_FENCE ? IW_SEND_FENCE : 0) |
	       (f & IBV_SEND_SIGNALED ? IW_SEND_SIGNALED : 0) |
	       (f & IBV_SEND_SOLICITED ? IW_SEND_SOLICITED : 0) |
	       (f & IBV_SEND_INLINE ? IW_SEND_INLINE : 0);
}

static const struct iw_sge no_sink; /* a zero-length Read's */

static int send_wr(const struct ibv_send_wr *wr, struct iw_send_wr *w)
{
	enum iw_wr_opcode op;
	int rc = iwv_send_opcode(wr->opcode, &op);

	if (rc)
		return rc;
	if (wr->num_sge < 0)
		return EINVAL;
	*w = (struct iw_send_wr){
		.wr_id = wr->wr_id,
		.sg_list = (struct iw_sge *)wr->sg_list,
		.num_sge = wr->num_sge,
		.opcode = op,
		.send_flags = iwv_send_flags(wr->send_flags),
		.invalidate_rkey = wr->invalidate_rkey,
		.rdma = { wr->wr.rdma.remote_addr, wr->wr.rdma.rkey },
	};
	if (op == IW_WR_RDMA_READ && wr->num_sge == 0) {
		w->sg_list = (struct iw_sge *)&no_sink;
		w->num_sge = 1;
	}
	if (op == IW_WR_RDMA_READ && wr->num_sge > 1)
		return EINVAL; /* an iWARP Read Request names one sink */
	if (op == IW_WR_LOCAL_INV) {
		w->sg_list = NULL;
		w->num_sge = 0;
	}
	if (op == IW_WR_ATOMIC_CMP_AND_SWP || op == IW_WR_ATOMIC_FETCH_AND_ADD) {
		w->atomic.remote_addr = wr->wr.atomic.remote_addr;
		w->atomic.rkey = wr->wr.atomic.rkey;
		w->atomic.compare_add = wr->wr.atomic.compare_add;
		w->atomic.swap = wr->wr.atomic.swap;
	}
	if (op == IW_WR_RDMA_WRITE_WITH_IMM || op == IW_WR_SEND_WITH_IMM)
		w->imm_data = iwv_imm_out(wr->imm_data);
	return 0;
}

/* Returns 0 or errno, with *@bad the first request not posted. */
/* Set once: no store (and no cache line taken) on every post. */
static void mark_posted(struct iwv_qp *qp)
{
	if (!atomic_load_explicit(&qp->posted, memory_order_relaxed))
		atomic_store(&qp->posted, true);
}

int iwv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad)
{
	struct iw_qp *iw = to_iwv_qp(ibqp)->iw;

	if (wr)
		mark_posted(to_iwv_qp(ibqp));

	while (wr) {
		struct iw_send_wr w[POST_BATCH], *iw_bad = NULL;
		struct ibv_send_wr *src[POST_BATCH];
		int n = 0, rc = 0;

		for (; wr && n < POST_BATCH; wr = wr->next, n++) {
			src[n] = wr;
			rc = send_wr(wr, &w[n]);
			if (rc)
				break;
			if (n)
				w[n - 1].next = &w[n];
		}
		if (n) {
			int prc = iw_post_send(iw, w, &iw_bad);

			if (prc) {
				*bad = src[iw_bad - w];
				return iwv_errno(prc);
			}
		}
		if (rc) {
			*bad = src[n];
			return rc;
		}
	}
	return 0;
}

/*
 * Hands a chain of receives to libiwarp POST_BATCH at a time, translated
 * on the stack: to @qp's receive queue, or with @qp NULL to @srq.
 * Returns 0 or errno, with *@bad the first request not posted.
 */
int iwv_post_recv_list(struct iw_qp *qp, struct iw_srq *srq,
		       struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	while (wr) {
		struct iw_recv_wr w[POST_BATCH], *iw_bad = NULL;
		struct ibv_recv_wr *src[POST_BATCH];
		int n = 0, rc;

		for (; wr && n < POST_BATCH; wr = wr->next, n++) {
			src[n] = wr;
			w[n] = (struct iw_recv_wr){
				.wr_id = wr->wr_id,
				.sg_list = (struct iw_sge *)wr->sg_list,
				.num_sge = wr->num_sge,
			};
			if (n)
				w[n - 1].next = &w[n];
		}
		rc = qp ? iw_post_recv(qp, w, &iw_bad)
			: iw_post_srq_recv(srq, w, &iw_bad);
		if (rc) {
			*bad = src[iw_bad - w];
			return iwv_errno(rc);
		}
	}
	return 0;
}

int iwv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad)
{
	if (wr)
		mark_posted(to_iwv_qp(ibqp));
	return iwv_post_recv_list(to_iwv_qp(ibqp)->iw, NULL, wr, bad);
}
