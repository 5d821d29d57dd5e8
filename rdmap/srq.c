// SPDX-License-Identifier: MIT
/*
 * Shared receive queue: posted receives that any QP attached to it takes,
 * one per incoming Send message, in posting order.  QPs on different
 * threads take from it, hence its lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "rdmap/rdmap_internal.h"

int rdmap_srq_init(struct rdmap_srq *srq, struct ddp_stag_table *stags,
		   uint32_t pd, uint32_t depth, uint32_t max_sge)
{
	uint32_t len;

	if (!stags || depth == 0 || depth > RDMAP_MAX_QUEUE || max_sge == 0 ||
	    max_sge > RDMAP_MAX_SGE)
		return -EINVAL;
	len = rdmap_ring_len(depth);
	memset(srq, 0, sizeof(*srq));
	srq->stags = stags;
	srq->pd = pd;
	srq->depth = depth;
	srq->mask = len - 1;
	srq->max_sge = max_sge;
	srq->ring = calloc(len, sizeof(*srq->ring));
	srq->iov_store = calloc((size_t)len * max_sge, sizeof(*srq->iov_store));
	srq->lkey_store = calloc((size_t)len * max_sge,
				 sizeof(*srq->lkey_store));
	if (!srq->ring || !srq->iov_store || !srq->lkey_store) {
		free(srq->ring);
		free(srq->iov_store);
		free(srq->lkey_store);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < len; i++) {
		srq->ring[i].iov = srq->iov_store + (size_t)i * max_sge;
		srq->ring[i].lkey = srq->lkey_store + (size_t)i * max_sge;
	}
	pthread_mutex_init(&srq->lock, NULL);
	return 0;
}

void rdmap_srq_fini(struct rdmap_srq *srq)
{
	pthread_mutex_destroy(&srq->lock);
	free(srq->ring);
	free(srq->iov_store);
	free(srq->lkey_store);
	memset(srq, 0, sizeof(*srq));
}

/*
 * Posts a receive.  Returns 0, -EINVAL for too many buffers, -ENOMEM when
 * full, -IW_ELOCAL_PROTECTION when an lkey does not cover its buffer with
 * local write access.
 */
int rdmap_srq_post(struct rdmap_srq *srq, const struct rdmap_recv_wr *wr)
{
	struct rdmap_rwqe r;
	struct iovec iov[RDMAP_MAX_SGE];
	uint32_t lkey[RDMAP_MAX_SGE];
	int rc = 0;

	if (wr->num_sge > srq->max_sge || (wr->num_sge && !wr->sge))
		return -EINVAL;
	r = (struct rdmap_rwqe){ .wr_id = wr->wr_id, .iov = iov, .lkey = lkey };
	/* checked and queued at once: a deregistration sees both or neither */
	pthread_mutex_lock(&srq->lock);
	for (uint32_t i = 0; i < wr->num_sge; i++) {
		uint8_t *where;

		if (wr->sge[i].length == 0)
			continue;
		if (ddp_mr_check(srq->stags, wr->sge[i].lkey, srq->pd,
				 DDP_ACCESS_LOCAL_WRITE | DDP_ACCESS_POST,
				 wr->sge[i].addr, wr->sge[i].length,
				 &where) != DDP_MR_OK) {
			pthread_mutex_unlock(&srq->lock);
			return -IW_ELOCAL_PROTECTION;
		}
		lkey[r.iovcnt] = wr->sge[i].lkey;
		iov[r.iovcnt].iov_base = where;
		iov[r.iovcnt++].iov_len = wr->sge[i].length;
		r.len += wr->sge[i].length;
	}
	if (srq->count == srq->depth) {
		rc = -ENOMEM;
	} else {
		rwqe_copy(&srq->ring[(srq->head + srq->count++) & srq->mask],
			  &r);
	}
	pthread_mutex_unlock(&srq->lock);
	return rc;
}

/* Moves the oldest posted receive into @out (its arrays are @out's own). */
bool rdmap_srq_take(struct rdmap_srq *srq, struct rdmap_rwqe *out)
{
	bool got = false;

	pthread_mutex_lock(&srq->lock);
	if (srq->count) {
		rwqe_copy(out, &srq->ring[srq->head & srq->mask]);
		srq->head++;
		srq->count--;
		got = true;
	}
	pthread_mutex_unlock(&srq->lock);
	return got;
}

uint32_t rdmap_srq_count(struct rdmap_srq *srq)
{
	uint32_t n;

	pthread_mutex_lock(&srq->lock);
	n = srq->count;
	pthread_mutex_unlock(&srq->lock);
	return n;
}
