// SPDX-License-Identifier: MIT
/*
 * librdmacm's convenience layer: rdma_getaddrinfo() over getaddrinfo(3),
 * endpoints made in one call (rdma_create_ep(), synchronous identifiers),
 * rdma_get_request() on them, SRQs on identifiers, and the device list.
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_verbs.h>

#include "compat/rdmacm/cma.h"

static int copy_addr(struct sockaddr **dst, socklen_t *dst_len,
		     const struct sockaddr *src, socklen_t len)
{
	*dst = malloc(len);
	if (!*dst)
		return ERR(ENOMEM);
	memcpy(*dst, src, len);
	*dst_len = len;
	return 0;
}

/*
 * The first address getaddrinfo(3) gives for @node and @service, as the
 * source of a passive endpoint or the destination of an active one.
 * Only connected (TCP) endpoints exist on iWARP.
 */
int rdma_getaddrinfo(const char *node, const char *service,
		     const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res)
{
	static const struct rdma_addrinfo none;
	struct addrinfo ai = { .ai_socktype = SOCK_STREAM }, *r;
	struct rdma_addrinfo *rai;
	int rc;

	if ((!node && !service && !hints) || !res)
		return ERR(EINVAL);
	if (!hints)
		hints = &none;
	if ((hints->ai_port_space && hints->ai_port_space != RDMA_PS_TCP &&
	     hints->ai_port_space != RDMA_PS_IB) ||
	    (hints->ai_qp_type && hints->ai_qp_type != IBV_QPT_RC))
		return ERR(EOPNOTSUPP);
	if (hints->ai_family == AF_IB)
		return ERR(EAFNOSUPPORT);
	rai = calloc(1, sizeof(*rai));
	if (!rai)
		return ERR(ENOMEM);
	rai->ai_flags = hints->ai_flags & RAI_PASSIVE;
	rai->ai_family = hints->ai_family;
	rai->ai_qp_type = IBV_QPT_RC;
	rai->ai_port_space = hints->ai_port_space ? hints->ai_port_space
						  : RDMA_PS_TCP;
	if (node || service) {
		ai.ai_flags = (hints->ai_flags & RAI_PASSIVE ? AI_PASSIVE : 0) |
			      (hints->ai_flags & RAI_NUMERICHOST ? AI_NUMERICHOST
								 : 0);
		ai.ai_family = hints->ai_family;
		rc = getaddrinfo(node, service, &ai, &r);
		if (rc) {
			rdma_freeaddrinfo(rai);
			return ERR(rc == EAI_SYSTEM ? errno
				   : rc == EAI_MEMORY ? ENOMEM
						      : EADDRNOTAVAIL);
		}
		rai->ai_family = r->ai_family;
		rc = rai->ai_flags & RAI_PASSIVE
			     ? copy_addr(&rai->ai_src_addr, &rai->ai_src_len,
					 r->ai_addr, r->ai_addrlen)
			     : copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len,
					 r->ai_addr, r->ai_addrlen);
		freeaddrinfo(r);
	} else {
		rc = hints->ai_dst_len
			     ? copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len,
					 hints->ai_dst_addr, hints->ai_dst_len)
			     : 0;
	}
	if (!rc && !rai->ai_src_len && hints->ai_src_len)
		rc = copy_addr(&rai->ai_src_addr, &rai->ai_src_len,
			       hints->ai_src_addr, hints->ai_src_len);
	if (rc) {
		int e = errno;

		rdma_freeaddrinfo(rai);
		return ERR(e);
	}
	*res = rai;
	return 0;
}

void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = next;
	}
}

/*
 * An endpoint in one call, on a synchronous identifier: a passive one is
 * bound and keeps @pd and @qp_init_attr for rdma_get_request(); an active
 * one has its address and route resolved and its QP created, and sends
 * res->ai_connect as its private data.
 */
int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
		   struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm;
	struct cma_id *c;

	if (!id || !res)
		return ERR(EINVAL);
	if (rdma_create_id(NULL, &cm, NULL, (enum rdma_port_space)res->ai_port_space))
		return -1;
	c = to_cma_id(cm);
	if (res->ai_flags & RAI_PASSIVE) {
		if (rdma_bind_addr(cm, res->ai_src_addr))
			goto fail;
		if (pd)
			cm->pd = pd;
		if (qp_init_attr) {
			c->qp_init_attr = malloc(sizeof(*qp_init_attr));
			if (!c->qp_init_attr) {
				errno = ENOMEM;
				goto fail;
			}
			*c->qp_init_attr = *qp_init_attr;
			c->qp_init_attr->qp_type = IBV_QPT_RC;
		}
		*id = cm;
		return 0;
	}
	if (rdma_resolve_addr(cm, res->ai_src_addr, res->ai_dst_addr, 2000) ||
	    rdma_resolve_route(cm, 2000))
		goto fail;
	if (qp_init_attr) {
		qp_init_attr->qp_type = IBV_QPT_RC;
		if (rdma_create_qp(cm, pd, qp_init_attr))
			goto fail;
	}
	if (res->ai_connect_len) {
		c->connect_len = res->ai_connect_len > CMA_MAX_PRIVATE_DATA
					 ? CMA_MAX_PRIVATE_DATA
					 : (uint8_t)res->ai_connect_len;
		memcpy(c->connect_data, res->ai_connect, c->connect_len);
	}
	*id = cm;
	return 0;
fail: {
	int e = errno;

	rdma_destroy_ep(cm);
	return ERR(e);
}
}

void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

/*
 * The next connection request of a synchronous listener, with a QP made
 * from the listener's attributes when rdma_create_ep() was given them.
 */
int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct rdma_cm_event *e;
	struct cma_id *l;
	int rc;

	if (!listen || !id)
		return ERR(EINVAL);
	l = to_cma_id(listen);
	if (!l->sync)
		return ERR(EINVAL);
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	if (rdma_get_cm_event(listen->channel, &e))
		return -1;
	if (e->event == RDMA_CM_EVENT_REJECTED)
		rc = ECONNREFUSED;
	else if (e->status)
		rc = e->status < 0 ? -e->status : e->status;
	else if (e->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		rc = EINVAL;
	else
		rc = 0;
	if (!rc && l->qp_init_attr) {
		struct ibv_qp_init_attr a = *l->qp_init_attr;

		if (rdma_create_qp(e->id, listen->pd, &a))
			rc = errno;
	}
	if (rc) {
		listen->event = e;
		return ERR(rc);
	}
	*id = e->id;
	e->id->event = e;
	return 0;
}

int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
		    struct ibv_srq_init_attr *attr)
{
	struct ibv_srq *srq;

	if (!id || !attr)
		return ERR(EINVAL);
	srq = ibv_create_srq(pd ? pd : id->pd, attr);
	if (!srq)
		return -1;
	id->srq = srq;
	id->pd = srq->pd;
	return 0;
}

/* Basic SRQs only: XRC and tag matching are adapter features. */
int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq_init_attr a;

	if (!id || !attr)
		return ERR(EINVAL);
	if ((attr->comp_mask & ~(uint32_t)(IBV_SRQ_INIT_ATTR_TYPE |
					   IBV_SRQ_INIT_ATTR_PD)) ||
	    ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	     attr->srq_type != IBV_SRQT_BASIC))
		return ERR(EOPNOTSUPP);
	a = (struct ibv_srq_init_attr){ attr->srq_context, attr->attr };
	if (rdma_create_srq(id, attr->comp_mask & IBV_SRQ_INIT_ATTR_PD
					? attr->pd
					: NULL,
			    &a))
		return -1;
	attr->attr = a.attr;
	return 0;
}

void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (!id || !id->srq)
		return;
	ibv_destroy_srq(id->srq);
	id->srq = NULL;
}

/* The one device's context, as librdmacm keeps it open. */
struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list;

	if (cma_get())
		return NULL;
	list = calloc(2, sizeof(*list));
	if (!list) {
		cma_put();
		errno = ENOMEM;
		return NULL;
	}
	list[0] = cma_verbs();
	if (num_devices)
		*num_devices = 1;
	return list;
}

void rdma_free_devices(struct ibv_context **list)
{
	if (!list)
		return;
	free(list);
	cma_put();
}
