// SPDX-License-Identifier: MIT
/*
 * Shared receive queues: basic ones.  No asynchronous events exist yet
 * to carry the limit event, so an SRQ cannot be armed with a limit, and
 * its depth is fixed, as on siw.
 */
#include <errno.h>
#include <stdlib.h>

#include "compat/ibverbs/ibverbs.h"

static struct ibv_srq *create_srq(struct ibv_pd *pd, void *srq_context,
				  struct ibv_srq_attr *attr)
{
	struct iw_device_attr d;
	struct iwv_srq *srq;

	if (!pd || !iwv_is_ours(pd->context) || !attr || attr->max_wr == 0 ||
	    iw_query_device(to_iwv_ctx(pd->context)->iw, &d, sizeof(d)) ||
	    attr->max_wr > d.max_srq_wr || attr->max_sge > d.max_srq_sge) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->srq_limit) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	srq->max_wr = attr->max_wr;
	srq->max_sge = attr->max_sge ? attr->max_sge : 1;
	srq->iw = iw_create_srq(to_iwv_pd(pd)->iw, &(struct iw_srq_init_attr){
		.srq_context = srq,
		.max_wr = srq->max_wr,
		.max_sge = srq->max_sge,
	});
	if (!srq->iw) {
		int e = errno;

		free(srq);
		errno = e;
		return NULL;
	}
	srq->srq.context = pd->context;
	srq->srq.srq_context = srq_context;
	srq->srq.pd = pd;
	pthread_mutex_init(&srq->srq.mutex, NULL);
	pthread_cond_init(&srq->srq.cond, NULL);
	attr->max_sge = srq->max_sge;
	return &srq->srq;
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
			       struct ibv_srq_init_attr *srq_init_attr)
{
	if (!srq_init_attr) {
		errno = EINVAL;
		return NULL;
	}
	return create_srq(pd, srq_init_attr->srq_context, &srq_init_attr->attr);
}

/* XRC, tag-matching and CQ-bound SRQs are adapter features. */
struct ibv_srq *iwv_create_srq_ex(struct ibv_context *ctx,
				  struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t basic = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;

	if (!attr || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd ||
	    attr->pd->context != ctx) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & ~basic) ||
	    ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	     attr->srq_type != IBV_SRQT_BASIC)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return create_srq(attr->pd, attr->srq_context, &attr->attr);
}

/* Only disarming (a limit of 0) is possible; the depth stays. */
int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		   int srq_attr_mask)
{
	if (!srq || !srq_attr ||
	    (srq_attr_mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)))
		return EINVAL;
	if ((srq_attr_mask & IBV_SRQ_MAX_WR) ||
	    ((srq_attr_mask & IBV_SRQ_LIMIT) && srq_attr->srq_limit))
		return EOPNOTSUPP;
	return 0;
}

int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr)
{
	if (!srq || !srq_attr)
		return EINVAL;
	*srq_attr = (struct ibv_srq_attr){
		.max_wr = to_iwv_srq(srq)->max_wr,
		.max_sge = to_iwv_srq(srq)->max_sge,
	};
	return 0;
}

/* EBUSY while a QP takes its receives from it. */
int ibv_destroy_srq(struct ibv_srq *srq)
{
	struct iwv_srq *s;
	int rc;

	if (!srq)
		return EINVAL;
	s = to_iwv_srq(srq);
	rc = iw_destroy_srq(s->iw);
	if (rc)
		return iwv_errno(rc);
	pthread_cond_destroy(&srq->cond);
	pthread_mutex_destroy(&srq->mutex);
	free(s);
	return 0;
}

int iwv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad)
{
	return iwv_post_recv_list(NULL, to_iwv_srq(srq)->iw, wr, bad);
}
