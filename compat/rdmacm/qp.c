// SPDX-License-Identifier: MIT
/*
 * QPs on identifiers, as librdmacm makes them: the identifier's PD when
 * none is given, CQs of its own where the attributes name none (each with
 * a channel, the identifier as their context: rdma_verbs.h checks it),
 * the QP moved to INIT; and the attributes each state takes.
 */
#include <errno.h>
#include <string.h>

#include "compat/rdmacm/cma.h"

static void destroy_own_cqs(struct rdma_cm_id *id)
{
	struct ibv_comp_channel *rch = id->recv_cq_channel;
	struct ibv_comp_channel *sch = id->send_cq_channel;

	if (id->recv_cq)
		ibv_destroy_cq(id->recv_cq);
	if (id->send_cq && id->send_cq != id->recv_cq)
		ibv_destroy_cq(id->send_cq);
	if (rch)
		ibv_destroy_comp_channel(rch);
	if (sch && sch != rch)
		ibv_destroy_comp_channel(sch);
	id->recv_cq = id->send_cq = NULL;
	id->recv_cq_channel = id->send_cq_channel = NULL;
}

/* A CQ with a channel of its own, its context the identifier (rdma_verbs.h
 * checks that). */
static int own_cq(struct rdma_cm_id *id, uint32_t size, struct ibv_cq **cq,
		  struct ibv_comp_channel **ch)
{
	*ch = ibv_create_comp_channel(id->verbs);
	if (!*ch)
		return -1;
	*cq = ibv_create_cq(id->verbs, (int)size, id, *ch, 0);
	return *cq ? 0 : -1;
}

int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
		      int *qp_attr_mask)
{
	if (!id || !qp_attr || !qp_attr_mask)
		return ERR(EINVAL);
	switch (qp_attr->qp_state) {
	case IBV_QPS_INIT:
		qp_attr->qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
					   IBV_ACCESS_REMOTE_WRITE |
					   IBV_ACCESS_REMOTE_READ;
		qp_attr->pkey_index = 0;
		qp_attr->port_num = IWV_PORT;
		*qp_attr_mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS |
				IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		return 0;
	case IBV_QPS_RTR:
		/* nothing of a path to set: TCP has it */
		*qp_attr_mask = IBV_QP_STATE;
		return 0;
	case IBV_QPS_RTS:
		*qp_attr_mask = IBV_QP_STATE;
		if (to_cma_id(id)->ack_timeout) {
			qp_attr->timeout = to_cma_id(id)->ack_timeout;
			*qp_attr_mask |= IBV_QP_TIMEOUT;
		}
		return 0;
	default:
		return ERR(EINVAL);
	}
}

/*
 * As librdmacm does it: the identifier's PD when none is given, CQs of
 * its own (each with a channel) where the attributes name none, and the
 * QP moved to INIT.
 */
int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT };
	struct cma_id *c;
	struct ibv_qp *qp;
	int mask;

	if (!id || !attr || id->qp)
		return ERR(EINVAL);
	c = to_cma_id(id);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = id->pd;
	}
	if (!attr->pd || attr->pd->context != id->verbs ||
	    (id->recv_cq && attr->recv_cq && id->recv_cq != attr->recv_cq) ||
	    (id->send_cq && attr->send_cq && id->send_cq != attr->send_cq))
		return ERR(EINVAL);
	if (!attr->recv_cq && !id->recv_cq && attr->cap.max_recv_wr &&
	    own_cq(id, attr->cap.max_recv_wr, &id->recv_cq, &id->recv_cq_channel))
		goto fail;
	if (!attr->send_cq && !id->send_cq && attr->cap.max_send_wr &&
	    own_cq(id, attr->cap.max_send_wr, &id->send_cq, &id->send_cq_channel))
		goto fail;
	c->own_cqs = id->recv_cq || id->send_cq;
	if (!attr->send_cq)
		attr->send_cq = id->send_cq;
	if (!attr->recv_cq)
		attr->recv_cq = id->recv_cq;
	if (id->srq && !attr->srq)
		attr->srq = id->srq;
	qp = ibv_create_qp_ex(id->verbs, attr);
	if (!qp)
		goto fail;
	rdma_init_qp_attr(id, &qa, &mask);
	errno = ibv_modify_qp(qp, &qa, mask);
	if (!errno && c->ack_timeout) {
		qa.timeout = c->ack_timeout;
		errno = ibv_modify_qp(qp, &qa, IBV_QP_TIMEOUT);
	}
	if (errno) {
		int e = errno;

		ibv_destroy_qp(qp);
		errno = e;
		goto fail;
	}
	id->pd = qp->pd;
	id->qp = qp;
	return 0;
fail: {
	int e = errno;

	destroy_own_cqs(id);
	c->own_cqs = false;
	return ERR(e);
}
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex a = { 0 };
	int rc;

	if (!qp_init_attr)
		return ERR(EINVAL);
	memcpy(&a, qp_init_attr, sizeof(*qp_init_attr));
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd ? pd : id ? id->pd : NULL;
	rc = rdma_create_qp_ex(id, &a);
	memcpy(qp_init_attr, &a, sizeof(*qp_init_attr));
	return rc;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct cma_id *c;

	if (!id)
		return;
	c = to_cma_id(id);
	if (id->qp)
		ibv_destroy_qp(id->qp);
	id->qp = NULL;
	if (c->own_cqs)
		destroy_own_cqs(id);
	c->own_cqs = false;
}
