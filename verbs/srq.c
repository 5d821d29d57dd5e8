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
	return srq;
}

int iw_destroy_srq(struct iw_srq *srq)
{
	if (!srq)
		return -EINVAL;
	rdmap_srq_fini(&srq->srq);
	free(srq);
	return 0;
}

/*
 * Posts a chain of receives; on failure *@bad_wr is the first one not
 * posted and the return value says why (see iw_post_recv).
 */
int iw_post_srq_recv(struct iw_srq *srq, struct iw_recv_wr *wr,
		     struct iw_recv_wr **bad_wr)
{
	for (; wr; wr = wr->next) {
		struct rdmap_recv_wr r = {
			.wr_id = wr->wr_id,
			.sge = (const struct rdmap_sge *)wr->sg_list,
			.num_sge = wr->num_sge > 0 ? (uint32_t)wr->num_sge : 0,
		};
		int rc = wr->num_sge < 0 ? -EINVAL : rdmap_srq_post(&srq->srq, &r);

		if (rc) {
			if (bad_wr)
				*bad_wr = wr;
			return rc;
		}
	}
	return 0;
}
