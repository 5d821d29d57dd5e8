// SPDX-License-Identifier: MIT
/*
 * libibverbs' side of rdmacm_iface.h: the table every context carries for
 * libiwarp's librdmacm.
 */
#include <stdatomic.h>

#include "compat/ibverbs/ibverbs.h"

static struct iw_context *iw_context_of(struct ibv_context *ctx)
{
	return to_iwv_ctx(ctx)->iw;
}

static struct iw_qp *iw_qp_of(struct ibv_qp *qp)
{
	return to_iwv_qp(qp)->iw;
}

static bool qp_posted(struct ibv_qp *qp)
{
	return atomic_load(&to_iwv_qp(qp)->posted);
}

/* rdma_connect() and rdma_accept() may name their QP by number. */
static struct ibv_qp *qp_by_num(struct ibv_context *ctx, uint32_t qp_num)
{
	struct iwv_context *c = to_iwv_ctx(ctx);
	struct iwv_qp *qp;

	pthread_mutex_lock(&c->qps_lock);
	for (qp = c->qps; qp && qp->qp.qp_base.qp_num != qp_num; qp = qp->next)
		;
	pthread_mutex_unlock(&c->qps_lock);
	return qp ? &qp->qp.qp_base : NULL;
}

static void qp_hold(struct ibv_qp *qp, void *holder,
		    void (*release)(struct ibv_qp *qp))
{
	to_iwv_qp(qp)->cm_id = holder;
	to_iwv_qp(qp)->cm_release = release;
}

static void *qp_holder(struct ibv_qp *qp)
{
	return to_iwv_qp(qp)->cm_id;
}

static struct iw_cq *iw_cq_of(struct ibv_cq *cq)
{
	return to_iwv_cq(cq)->iw;
}

const struct iwv_rdmacm_iface iwv_rdmacm_table = {
	.version = IWV_RDMACM_IFACE_VERSION,
	.size = sizeof(struct iwv_rdmacm_iface),
	.iw_context = iw_context_of,
	.iw_qp = iw_qp_of,
	.qp_posted = qp_posted,
	.qp_by_num = qp_by_num,
	.qp_hold = qp_hold,
	.qp_holder = qp_holder,
	.iw_cq = iw_cq_of,
};
