// SPDX-License-Identifier: MIT
/* Shared receive queues: receives any attached QP may consume. */
#include <errno.h>
#include <stdlib.h>

#include "verbs/verbs.h"

struct iw_srq *iw_create_srq(struct iw_pd *pd, struct iw_srq_init_attr *attr)
{
	struct iw_srq *srq;
	int rc;

	if (!pd || !attr || attr->max_wr == 0 || attr->max_sge == 0 ||
	    attr->max_sge > RDMAP_MAX_SGE) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	rc = rdmap_srq_init(&srq->srq, &pd->ctx->stags, pd->id, attr->max_wr,
			    attr->max_sge);
	if (rc) {
		free(srq);
		errno = -rc;
		return NULL;
	}
	srq->pd = pd;
	srq->srq_context = attr->srq_context;
	srq->max_wr = attr->max_wr;
	atomic_init(&srq->unpolled, 0);
	pthread_mutex_init(&srq->lock, NULL);
	pd_add_srq(pd, srq);
	return srq;
}

/* Fails with -EBUSY while a QP takes its receives from the SRQ. */
int iw_destroy_srq(struct iw_srq *srq)
{
	unsigned int qps;

	if (!srq)
		return -EINVAL;
	pthread_mutex_lock(&srq->lock);
	qps = srq->qps;
	pthread_mutex_unlock(&srq->lock);
	if (qps)
		return -EBUSY;
	pd_remove_srq(srq->pd, srq);
	rdmap_srq_fini(&srq->srq);
	pthread_mutex_destroy(&srq->lock);
	free(srq->cq_uses);
	free(srq);
	return 0;
}

void *iw_srq_context(struct iw_srq *srq)
{
	return srq ? srq->srq_context : NULL;
}

static int post_one_srq_recv(struct iw_srq *srq, const struct iw_recv_wr *wr)
{
	struct rdmap_recv_wr r = {
		.wr_id = wr->wr_id,
		.sge = (const struct rdmap_sge *)wr->sg_list,
		.num_sge = (uint32_t)wr->num_sge,
	};
	int rc;

	if (wr->num_sge < 0)
		return -EINVAL;
	if ((uint32_t)wr->num_sge > srq->srq.max_sge)
		return -IW_ELOCAL_LENGTH;
	/* a slot frees when the receive's completion is polled */
	if (atomic_fetch_add(&srq->unpolled, 1) >= srq->max_wr) {
		atomic_fetch_sub(&srq->unpolled, 1);
		return -ENOMEM;
	}
	rc = rdmap_srq_post(&srq->srq, &r);
	if (rc)
		atomic_fetch_sub(&srq->unpolled, 1);
	return rc;
}

/*
 * Posts a chain of receives; on failure *@bad_wr is the first one not
 * posted and the return value says why (see iw_post_recv).
 */
int iw_post_srq_recv(struct iw_srq *srq, struct iw_recv_wr *wr,
		     struct iw_recv_wr **bad_wr)
{
	int rc = 0;

	if (!srq)
		return -EINVAL;
	for (; wr && !rc; wr = wr->next) {
		rc = post_one_srq_recv(srq, wr);
		if (rc && bad_wr)
			*bad_wr = wr;
	}
	return rc;
}
