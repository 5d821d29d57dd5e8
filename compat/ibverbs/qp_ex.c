// SPDX-License-Identifier: MIT
/*
 * The work request builders of struct ibv_qp_ex: ibv_wr_start(), one
 * ibv_wr_<opcode>() and its data per request, then ibv_wr_complete()
 * posts them all (or ibv_wr_abort() drops them).  Requests are gathered
 * with copies of their element lists and inline data, since the caller
 * may reuse those as soon as each call returns, and go to libiwarp in
 * batches.  A mistake in any call makes ibv_wr_complete() fail with it
 * and post nothing of what is not posted yet.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compat/ibverbs/ibverbs.h"

static struct iwv_qp *qpx(struct ibv_qp_ex *q)
{
	return iwv_container_of(q, struct iwv_qp, qp);
}

/* The element storage of request @i of the batch. */
static struct iw_sge *sges_of(struct iwv_qp *qp, unsigned int i)
{
	return qp->bld->sges + (size_t)i * qp->cap.max_send_sge;
}

static void fail(struct iwv_qp *qp, int err)
{
	if (!qp->bld->err)
		qp->bld->err = err;
}

/* Hands the gathered requests to libiwarp. */
static int flush(struct iwv_qp *qp)
{
	struct iwv_wr_builder *b = qp->bld;
	struct iw_send_wr *bad = NULL;
	int rc = 0;

	if (b->n) {
		atomic_store(&qp->posted, true);
		for (unsigned int i = 0; i + 1 < b->n; i++)
			b->wr[i].next = &b->wr[i + 1];
		b->wr[b->n - 1].next = NULL;
		rc = iw_post_send(qp->iw, b->wr, &bad);
	}
	b->n = 0;
	return iwv_errno(rc);
}

/* A new request of the batch, its id and flags from the QP's fields. */
static struct iw_send_wr *next_wr(struct ibv_qp_ex *q, enum iw_wr_opcode op)
{
	struct iwv_qp *qp = qpx(q);
	struct iwv_wr_builder *b = qp->bld;
	struct iw_send_wr *w;
	int rc;

	if (b->err)
		return NULL;
	if (b->n == IWV_WR_BATCH) {
		rc = flush(qp);
		if (rc) {
			fail(qp, rc);
			return NULL;
		}
	}
	w = &b->wr[b->n++];
	*w = (struct iw_send_wr){
		.wr_id = q->wr_id,
		.opcode = op,
		.send_flags = iwv_send_flags(q->wr_flags),
	};
	return w;
}

/* The request the data calls fill: the last one started. */
static struct iw_send_wr *cur_wr(struct iwv_qp *qp)
{
	if (qp->bld->err)
		return NULL;
	if (!qp->bld->n) {
		fail(qp, EINVAL);
		return NULL;
	}
	return &qp->bld->wr[qp->bld->n - 1];
}

static void wr_start(struct ibv_qp_ex *q)
{
	struct iwv_qp *qp = qpx(q);

	pthread_mutex_lock(&qp->lock);
	qp->bld->n = 0;
	qp->bld->err = 0;
}

static int wr_complete(struct ibv_qp_ex *q)
{
	struct iwv_qp *qp = qpx(q);
	int rc = qp->bld->err;

	if (rc)
		qp->bld->n = 0;
	else
		rc = flush(qp);
	pthread_mutex_unlock(&qp->lock);
	return rc;
}

static void wr_abort(struct ibv_qp_ex *q)
{
	struct iwv_qp *qp = qpx(q);

	qp->bld->n = 0;
	pthread_mutex_unlock(&qp->lock);
}

static void wr_send(struct ibv_qp_ex *q)
{
	next_wr(q, IW_WR_SEND);
}

static void wr_send_inv(struct ibv_qp_ex *q, uint32_t invalidate_rkey)
{
	struct iw_send_wr *w = next_wr(q, IW_WR_SEND_WITH_INV);

	if (w)
		w->invalidate_rkey = invalidate_rkey;
}

static void wr_rdma_write(struct ibv_qp_ex *q, uint32_t rkey,
			  uint64_t remote_addr)
{
	struct iw_send_wr *w = next_wr(q, IW_WR_RDMA_WRITE);

	if (w) {
		w->rdma.rkey = rkey;
		w->rdma.remote_addr = remote_addr;
	}
}

static void wr_rdma_read(struct ibv_qp_ex *q, uint32_t rkey,
			 uint64_t remote_addr)
{
	struct iw_send_wr *w = next_wr(q, IW_WR_RDMA_READ);

	if (w) {
		w->rdma.rkey = rkey;
		w->rdma.remote_addr = remote_addr;
		/* a Read with no element set reads nothing into nothing */
		w->sg_list = sges_of(qpx(q), qpx(q)->bld->n - 1);
		w->sg_list[0] = (struct iw_sge){ 0, 0, 0 };
		w->num_sge = 1;
	}
}

static void wr_local_inv(struct ibv_qp_ex *q, uint32_t invalidate_rkey)
{
	struct iw_send_wr *w = next_wr(q, IW_WR_LOCAL_INV);

	if (w)
		w->invalidate_rkey = invalidate_rkey;
}

static void wr_set_sge_list(struct ibv_qp_ex *q, size_t num_sge,
			    const struct ibv_sge *sg_list)
{
	struct iwv_qp *qp = qpx(q);
	struct iw_send_wr *w = cur_wr(qp);

	if (!w)
		return;
	if (num_sge > qp->cap.max_send_sge ||
	    (w->opcode == IW_WR_RDMA_READ && num_sge > 1)) {
		fail(qp, EINVAL);
		return;
	}
	w->sg_list = sges_of(qp, qp->bld->n - 1);
	memcpy(w->sg_list, sg_list, num_sge * sizeof(*sg_list));
	w->num_sge = (int)num_sge;
	if (w->opcode == IW_WR_RDMA_READ && num_sge == 0) {
		w->sg_list[0] = (struct iw_sge){ 0, 0, 0 };
		w->num_sge = 1;
	}
}

static void wr_set_sge(struct ibv_qp_ex *q, uint32_t lkey, uint64_t addr,
		       uint32_t length)
{
	struct ibv_sge s = { addr, length, lkey };

	wr_set_sge_list(q, 1, &s);
}

/* Inline data is copied now into the batch, from where libiwarp copies it. */
static void wr_set_inline_data_list(struct ibv_qp_ex *q, size_t num_buf,
				    const struct ibv_data_buf *buf_list)
{
	struct iwv_qp *qp = qpx(q);
	struct iw_send_wr *w = cur_wr(qp);
	uint8_t *dst;
	size_t len = 0;

	if (!w)
		return;
	for (size_t i = 0; i < num_buf; i++)
		len += buf_list[i].length;
	if (len > qp->cap.max_inline_data || w->opcode == IW_WR_RDMA_READ ||
	    w->opcode == IW_WR_LOCAL_INV) {
		fail(qp, EINVAL);
		return;
	}
	/* every QP has the device's inline room: the batch's, at first use */
	if (!qp->bld->inline_buf)
		qp->bld->inline_buf = malloc((size_t)IWV_WR_BATCH *
					     qp->cap.max_inline_data);
	if (!qp->bld->inline_buf) {
		fail(qp, ENOMEM);
		return;
	}
	dst = qp->bld->inline_buf +
	      (size_t)(qp->bld->n - 1) * qp->cap.max_inline_data;
	len = 0;
	for (size_t i = 0; i < num_buf; i++) {
		memcpy(dst + len, buf_list[i].addr, buf_list[i].length);
		len += buf_list[i].length;
	}
	w->sg_list = sges_of(qp, qp->bld->n - 1);
	w->sg_list[0] = (struct iw_sge){ (uintptr_t)dst, (uint32_t)len, 0 };
	w->num_sge = 1;
	w->send_flags |= IW_SEND_INLINE;
}

static void wr_set_inline_data(struct ibv_qp_ex *q, void *addr, size_t length)
{
	struct ibv_data_buf b = { addr, length };

	wr_set_inline_data_list(q, 1, &b);
}

/* What iWARP does not carry: the whole batch fails with EOPNOTSUPP. */
static void wr_unsupported(struct ibv_qp_ex *q)
{
	fail(qpx(q), EOPNOTSUPP);
}

/*
 * The RFC 7306 requests, on a QP that enabled the extension
 * (IWARP_RFC7306=1); elsewhere what iWARP does not carry.
 */
static struct iw_send_wr *next_ext_wr(struct ibv_qp_ex *q,
				      enum iw_wr_opcode op, uint32_t ext)
{
	if (!(to_iwv_ctx(q->qp_base.context)->rfc7306 & ext)) {
		wr_unsupported(q);
		return NULL;
	}
	return next_wr(q, op);
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *q, uint32_t rkey,
			      uint64_t remote_addr, uint64_t compare,
			      uint64_t swap)
{
	struct iw_send_wr *w = next_ext_wr(q, IW_WR_ATOMIC_CMP_AND_SWP,
					   IW_RFC7306_ATOMICS);

	if (w) {
		w->atomic.rkey = rkey;
		w->atomic.remote_addr = remote_addr;
		w->atomic.compare_add = compare;
		w->atomic.swap = swap;
	}
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *q, uint32_t rkey,
				uint64_t remote_addr, uint64_t add)
{
	struct iw_send_wr *w = next_ext_wr(q, IW_WR_ATOMIC_FETCH_AND_ADD,
					   IW_RFC7306_ATOMICS);

	if (w) {
		w->atomic.rkey = rkey;
		w->atomic.remote_addr = remote_addr;
		w->atomic.compare_add = add;
	}
}

static void wr_bind_mw(struct ibv_qp_ex *q, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *bind_info)
{
	(void)mw;
	(void)rkey;
	(void)bind_info;
	wr_unsupported(q);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *q, uint32_t rkey,
			      uint64_t remote_addr, __be32 imm_data)
{
	struct iw_send_wr *w = next_ext_wr(q, IW_WR_RDMA_WRITE_WITH_IMM,
					   IW_RFC7306_IMMEDIATE);

	if (w) {
		w->rdma.rkey = rkey;
		w->rdma.remote_addr = remote_addr;
		w->imm_data = iwv_imm_out(imm_data);
	}
}

static void wr_send_imm(struct ibv_qp_ex *q, __be32 imm_data)
{
	struct iw_send_wr *w = next_ext_wr(q, IW_WR_SEND_WITH_IMM,
					   IW_RFC7306_IMMEDIATE);

	if (w)
		w->imm_data = iwv_imm_out(imm_data);
}

static void wr_send_tso(struct ibv_qp_ex *q, void *hdr, uint16_t hdr_sz,
			uint16_t mss)
{
	(void)hdr;
	(void)hdr_sz;
	(void)mss;
	wr_unsupported(q);
}

static void wr_set_ud_addr(struct ibv_qp_ex *q, struct ibv_ah *ah,
			   uint32_t remote_qpn, uint32_t remote_qkey)
{
	(void)ah;
	(void)remote_qpn;
	(void)remote_qkey;
	wr_unsupported(q);
}

static void wr_set_xrc_srqn(struct ibv_qp_ex *q, uint32_t remote_srqn)
{
	(void)remote_srqn;
	wr_unsupported(q);
}

static void wr_atomic_write(struct ibv_qp_ex *q, uint32_t rkey,
			    uint64_t remote_addr, const void *atomic_wr)
{
	(void)rkey;
	(void)remote_addr;
	(void)atomic_wr;
	wr_unsupported(q);
}

/* The builders and their batch storage, for every QP. */
int iwv_qp_ex_init(struct iwv_qp *qp)
{
	struct ibv_qp_ex *q = &qp->qp;
	struct iwv_wr_builder *b = calloc(1, sizeof(*b));

	if (!b)
		return ENOMEM;
	b->sges = calloc((size_t)IWV_WR_BATCH * qp->cap.max_send_sge,
			 sizeof(*b->sges));
	if (!b->sges) {
		free(b);
		return ENOMEM;
	}
	qp->bld = b;
	q->comp_mask = 0;
	q->wr_start = wr_start;
	q->wr_complete = wr_complete;
	q->wr_abort = wr_abort;
	q->wr_send = wr_send;
	q->wr_send_inv = wr_send_inv;
	q->wr_rdma_write = wr_rdma_write;
	q->wr_rdma_read = wr_rdma_read;
	q->wr_local_inv = wr_local_inv;
	q->wr_set_sge = wr_set_sge;
	q->wr_set_sge_list = wr_set_sge_list;
	q->wr_set_inline_data = wr_set_inline_data;
	q->wr_set_inline_data_list = wr_set_inline_data_list;
	q->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	q->wr_atomic_fetch_add = wr_atomic_fetch_add;
	q->wr_bind_mw = wr_bind_mw;
	q->wr_rdma_write_imm = wr_rdma_write_imm;
	q->wr_send_imm = wr_send_imm;
	q->wr_send_tso = wr_send_tso;
	q->wr_set_ud_addr = wr_set_ud_addr;
	q->wr_set_xrc_srqn = wr_set_xrc_srqn;
	q->wr_atomic_write = wr_atomic_write;
	return 0;
}

void iwv_qp_ex_fini(struct iwv_qp *qp)
{
	if (!qp->bld)
		return;
	free(qp->bld->sges);
	free(qp->bld->inline_buf);
	free(qp->bld);
	qp->bld = NULL;
}

/* Every QP has the builders, whether or not it was made with them. */
struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	return qp ? &to_iwv_qp(qp)->qp : NULL;
}
