// SPDX-License-Identifier: MIT
/*
 * Protection domains and memory regions.  A region's STag comes from the
 * context's table; iWARP uses the same STag locally and remotely.
 */
#include <errno.h>
#include <stdlib.h>

#include "verbs/verbs.h"

struct iw_pd *iw_alloc_pd(struct iw_context *ctx)
{
	struct iw_pd *pd;

	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->ctx = ctx;
	pthread_mutex_init(&pd->lock, NULL);
	pthread_mutex_lock(&ctx->lock);
	pd->id = ++ctx->next_pd;
	pthread_mutex_unlock(&ctx->lock);
	return pd;
}

/*
 * Frees a protection domain that nothing uses any more; -EBUSY while a
 * memory region, queue pair or shared receive queue still belongs to it
 * (freeing it would leave them pointing at freed memory), as
 * ibv_dealloc_pd() does.
 */
int iw_dealloc_pd(struct iw_pd *pd)
{
	bool busy;

	if (!pd)
		return -EINVAL;
	pthread_mutex_lock(&pd->lock);
	busy = pd->qps || pd->srqs || atomic_load(&pd->mrs);
	pthread_mutex_unlock(&pd->lock);
	if (busy)
		return -EBUSY;
	pthread_mutex_destroy(&pd->lock);
	free(pd);
	return 0;
}

void pd_add_qp(struct iw_pd *pd, struct iw_qp *qp)
{
	pthread_mutex_lock(&pd->lock);
	qp->pd_prev = NULL;
	qp->pd_next = pd->qps;
	if (pd->qps)
		pd->qps->pd_prev = qp;
	pd->qps = qp;
	pthread_mutex_unlock(&pd->lock);
}

void pd_remove_qp(struct iw_pd *pd, struct iw_qp *qp)
{
	pthread_mutex_lock(&pd->lock);
	if (qp->pd_prev)
		qp->pd_prev->pd_next = qp->pd_next;
	else
		pd->qps = qp->pd_next;
	if (qp->pd_next)
		qp->pd_next->pd_prev = qp->pd_prev;
	pthread_mutex_unlock(&pd->lock);
}

void pd_add_srq(struct iw_pd *pd, struct iw_srq *srq)
{
	pthread_mutex_lock(&pd->lock);
	srq->pd_prev = NULL;
	srq->pd_next = pd->srqs;
	if (pd->srqs)
		pd->srqs->pd_prev = srq;
	pd->srqs = srq;
	pthread_mutex_unlock(&pd->lock);
}

void pd_remove_srq(struct iw_pd *pd, struct iw_srq *srq)
{
	pthread_mutex_lock(&pd->lock);
	if (srq->pd_prev)
		srq->pd_prev->pd_next = srq->pd_next;
	else
		pd->srqs = srq->pd_next;
	if (srq->pd_next)
		srq->pd_next->pd_prev = srq->pd_prev;
	pthread_mutex_unlock(&pd->lock);
}

/*
 * Registers [@addr, @addr + @length) with tagged offsets equal to its
 * virtual addresses, as iWARP peers expect.  Returns NULL with errno
 * EINVAL (unknown access bits), ENOMEM (table full) or EIO.
 */
struct iw_mr *iw_reg_mr(struct iw_pd *pd, void *addr, size_t length,
			int access)
{
	return iw_reg_mr_iova(pd, addr, length, (uint64_t)(uintptr_t)addr,
			      access);
}

/*
 * Registers [@addr, @addr + @length) as tagged offsets [@iova, @iova +
 * @length): a peer names the region's first octet @iova.  Errors as
 * iw_reg_mr(), and EINVAL for offsets that wrap past 2^64.
 */
struct iw_mr *iw_reg_mr_iova(struct iw_pd *pd, void *addr, size_t length,
			     uint64_t iova, int access)
{
	const int known = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE |
			  IW_ACCESS_REMOTE_READ | IW_ACCESS_REMOTE_ATOMIC;
	uint32_t ddp_access = 0;
	struct iw_mr *mr;
	int rc;

	if (!pd || (access & ~known) || (!addr && length)) {
		errno = EINVAL;
		return NULL;
	}
	if (access & IW_ACCESS_LOCAL_WRITE)
		ddp_access |= DDP_ACCESS_LOCAL_WRITE;
	if (access & IW_ACCESS_REMOTE_WRITE)
		ddp_access |= DDP_ACCESS_REMOTE_WRITE;
	if (access & IW_ACCESS_REMOTE_READ)
		ddp_access |= DDP_ACCESS_REMOTE_READ;
	if (access & IW_ACCESS_REMOTE_ATOMIC)
		ddp_access |= DDP_ACCESS_REMOTE_ATOMIC;
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	rc = ddp_mr_register(&pd->ctx->stags, pd->id, iova, addr, length,
			     ddp_access, &mr->lkey);
	if (rc) {
		free(mr);
		errno = -rc;
		return NULL;
	}
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->rkey = mr->lkey;
	atomic_fetch_add(&pd->mrs, 1);
	return mr;
}

/*
 * With the PD's lock held and the region closing (no new work can name
 * it): whether a send queue of the PD has work not done yet that uses the
 * memory.  A QP's lock is held while work is checked and queued, so
 * taking each in turn sees every post that got past the check before the
 * region closed.
 */
static bool region_sending(struct iw_pd *pd, const uint8_t *base,
			   uint64_t len)
{
	for (struct iw_qp *qp = pd->qps; qp; qp = qp->pd_next) {
		pthread_mutex_t *l = qp_lock(qp);
		bool used = rdmap_mem_sending(&qp->engine, base, len);

		pthread_mutex_unlock(l);
		if (used)
			return true;
	}
	return false;
}

/*
 * With the PD's lock held, once the STag is invalid: the receives posted
 * through it let go of its memory (rdmap_recvs_revoke()), and every
 * connection of the PD lets go of the region; one that was still moving
 * a peer's data in or out of it ends (see rdmap_mem_release()).  SRQs
 * come first: a receive only ever moves from an SRQ to a QP.
 */
static void region_release(struct iw_pd *pd, uint32_t stag,
			   const uint8_t *base, uint64_t len)
{
	for (struct iw_srq *srq = pd->srqs; srq; srq = srq->pd_next)
		rdmap_srq_revoke(&srq->srq, stag);
	for (struct iw_qp *qp = pd->qps; qp; qp = qp->pd_next) {
		pthread_mutex_t *l = qp_lock(qp);
		bool landing = rdmap_recvs_revoke(&qp->engine, stag);
		bool accessed = rdmap_mem_release(&qp->engine, stag, base, len);

		if (qp->id && (landing || accessed)) {
			iw_log_id(qp->id, accessed
					  ? "deregistered under the peer's access"
					  : "deregistered under the receive a "
					    "message was landing in");
			conn_kick(qp->id);
		}
		pthread_mutex_unlock(l);
	}
}

/*
 * Deregisters a region; once it returns, the library does not touch the
 * region's memory again.  A Send, RDMA Write or RDMA Read not yet done
 * that uses the memory makes it fail with -EBUSY and change nothing for
 * the peer: that work is the application's to finish or flush first (work
 * posted naming the region while the call runs is refused, as with any
 * lkey being deregistered).  Otherwise the STag is invalidated, so that no
 * new access through it starts; receives posted through it no longer
 * name its memory (a message that comes to one fails it, a flush
 * completes it as ever); and what is under way ends its connection, as a
 * deregistration under an RDMA adapter's feet does: a peer's RDMA Write
 * being placed or RDMA Read Response being sent with the error an invalid
 * STag gets, a message landing in such a receive with a local protection
 * error.
 */
int iw_dereg_mr(struct iw_mr *mr)
{
	struct ddp_stag_table *stags;
	struct iw_pd *pd;
	const uint8_t *base;
	uint64_t len;
	int rc;

	if (!mr)
		return -EINVAL;
	pd = mr->pd;
	stags = &pd->ctx->stags;
	base = mr->addr;
	len = mr->length;
	ddp_mr_set_closing(stags, mr->lkey, true);
	pthread_mutex_lock(&pd->lock);
	if (len && region_sending(pd, base, len)) {
		pthread_mutex_unlock(&pd->lock);
		ddp_mr_set_closing(stags, mr->lkey, false);
		return -EBUSY;
	}
	/* a peer's Send with Invalidate may have done it already */
	ddp_mr_invalidate(stags, mr->lkey, pd->id);
	if (len)
		region_release(pd, mr->lkey, base, len);
	pthread_mutex_unlock(&pd->lock);
	rc = ddp_mr_deregister(stags, mr->lkey);
	atomic_fetch_sub(&pd->mrs, 1);
	free(mr);
	return rc;
}
