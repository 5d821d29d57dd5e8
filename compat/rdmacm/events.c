// SPDX-License-Identifier: MIT
/*
 * libiwarp's CM events as rdma_cm's, the way the kernel's iWARP connection
 * manager reports them; the hook that ends a connection when its QP goes;
 * and the retries of connections that nothing took yet.  Everything here
 * runs with the route lock, on the pump thread or in a caller that drains
 * the libiwarp channel itself.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compat/rdmacm/cma.h"

/* With the route lock held. */
static struct cma_id *find_id(const struct iw_cm_id *iw)
{
	struct cma_id *c;

	for (c = cma_ids; c && c->iw != iw; c = c->next)
		;
	return c;
}

uint64_t cma_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/*
 * The rdma_cm status of a libiwarp code: the errno of iwv_errno(),
 * negative, as the kernel reports it.
 */
int cma_status(int rc)
{
	return -iwv_errno(rc);
}

static uint8_t depth(uint16_t v)
{
	return v > CMA_MAX_RD ? CMA_MAX_RD : (uint8_t)v;
}

static void event_private_data(struct cma_event *e, const struct iw_cm_event *ev)
{
	uint8_t n = ev->private_data_len > CMA_MAX_PRIVATE_DATA
			    ? CMA_MAX_PRIVATE_DATA
			    : (uint8_t)ev->private_data_len;

	if (!n)
		return;
	memcpy(e->private_data, ev->private_data, n);
	e->event.param.conn.private_data = e->private_data;
	e->event.param.conn.private_data_len = n;
}

/*
 * With the route lock held: a connection request for one of our
 * listeners gets an identifier of its own, on the listener's channel
 * (or, for a synchronous listener, on a channel of its own, as
 * rdma_get_request() hands it out).  A request that finds its listener
 * gone is refused by closing its connection.
 */
static void route_request(const struct iw_cm_event *ev)
{
	struct cma_id *l = find_id(ev->listen_id), *c;
	struct cma_event *e;
	uint16_t ird, ord;

	if (!l || l->state != CMA_LISTEN) {
		iw_destroy_id(ev->id);
		return;
	}
	c = cma_id_new(l->sync ? NULL : l->id.channel, l->id.context, l->id.ps,
		       l->id.qp_type);
	e = c ? cma_event_new(l, RDMA_CM_EVENT_CONNECT_REQUEST, 0) : NULL;
	if (!e) {
		if (c && c->sync)
			cma_channel_free(to_cma_ch(c->id.channel));
		free(c);
		iw_destroy_id(ev->id);
		return;
	}
	/* the listener's reference keeps the process's state: one more */
	cma_get_more();
	c->iw = ev->id;
	c->state = CMA_CONNECT;
	cma_id_on_device(c);
	cma_id_addrs(c);
	/* the peer's IRD bounds what we may read, its ORD what we answer */
	ird = ev->peer.enhanced ? ev->peer.ird : CMA_MAX_RD;
	ord = ev->peer.enhanced ? ev->peer.ord : CMA_MAX_RD;
	c->initiator_depth = depth(ird);
	c->responder_resources = depth(ord);
	c->peer_p2p = ev->peer.p2p;
	c->next = cma_ids;
	cma_ids = c;
	e->event.id = &c->id;
	e->event.listen_id = &l->id;
	e->event.param.conn.initiator_depth = c->initiator_depth;
	e->event.param.conn.responder_resources = c->responder_resources;
	event_private_data(e, ev);
	cma_event_queue(to_cma_ch(l->id.channel), e);
}

/*
 * A connection that failed or was refused leaves its QP in error (through
 * libiwarp directly: the QP's own lock may be held by a caller that is
 * resetting it and drains events here).
 */
static void qp_to_error(struct cma_id *c)
{
	if (c->id.qp && cma_iw_qp(c->id.qp))
		iw_qp_to_error(cma_iw_qp(c->id.qp));
}

/*
 * With the route lock held: whether a refused connection of @c is tried
 * again instead of reported.  Only a refusal before any MPA frame (a TCP
 * reset: nothing listens) is, and only for a QP with no work posted, so
 * that nothing the application gave is lost with the QP the try left in
 * error; after RETRY_FOR_MS the refusal is reported.
 */
static bool try_again(struct cma_id *c, const struct iw_cm_event *ev,
		      int status)
{
	uint64_t now = cma_now_ms();

	if (!c->active || c->state != CMA_CONNECT || !c->id.qp ||
	    ev->event == IW_CM_EVENT_REJECTED ||
	    (status != -ECONNREFUSED && status != -ECONNRESET) ||
	    !iwv_rdmacm_iface(c->id.qp->context) ||
	    iwv_rdmacm_iface(c->id.qp->context)->qp_posted(c->id.qp) ||
	    now >= c->give_up_ms)
		return false;
	c->retry_pending = true;
	c->retry_at_ms = now + CMA_RETRY_EVERY_MS;
	return true;
}

/*
 * With the route lock held: one libiwarp event as the kernel's iWARP
 * connection manager reports it.  A TCP connection refused is a reject,
 * as an RNIC reports a reset to its SYN; a handshake that times out is
 * unreachable; a stream that fails after the connection was up is a
 * disconnect with the reason in its status.
 */
void cma_route_iw_event(const struct iw_cm_event *ev)
{
	enum rdma_cm_event_type type;
	struct cma_event *e;
	struct iw_qp_attr qa;
	struct cma_id *c;
	int status = 0;

	if (ev->event == IW_CM_EVENT_CONNECT_REQUEST) {
		route_request(ev);
		return;
	}
	c = find_id(ev->id);
	if (!c)
		return; /* its identifier is being destroyed */
	switch (ev->event) {
	case IW_CM_EVENT_ESTABLISHED:
		type = RDMA_CM_EVENT_ESTABLISHED;
		c->state = CMA_CONNECTED;
		cma_id_addrs(c);
		break;
	case IW_CM_EVENT_REJECTED:
		type = RDMA_CM_EVENT_REJECTED;
		status = -ECONNREFUSED;
		break;
	case IW_CM_EVENT_UNREACHABLE:
		status = cma_status(ev->status);
		type = status == -ECONNREFUSED ? RDMA_CM_EVENT_REJECTED
					       : RDMA_CM_EVENT_UNREACHABLE;
		break;
	case IW_CM_EVENT_TIMEOUT:
		type = RDMA_CM_EVENT_UNREACHABLE;
		status = -ETIMEDOUT;
		break;
	case IW_CM_EVENT_CONNECT_ERROR:
		/* a reset before the Reply is a refusal, as the kernel has it */
		status = cma_status(ev->status);
		type = status == -ECONNRESET ? RDMA_CM_EVENT_REJECTED
					     : RDMA_CM_EVENT_CONNECT_ERROR;
		break;
	case IW_CM_EVENT_DISCONNECTED:
		type = RDMA_CM_EVENT_DISCONNECTED;
		break;
	default: /* IW_CM_EVENT_ERROR */
		type = RDMA_CM_EVENT_DISCONNECTED;
		status = cma_status(ev->status);
		break;
	}
	if (type == RDMA_CM_EVENT_REJECTED && try_again(c, ev, status))
		return;
	if (type != RDMA_CM_EVENT_ESTABLISHED) {
		c->state = CMA_DISCONNECTED;
		if (type != RDMA_CM_EVENT_DISCONNECTED)
			qp_to_error(c);
	}
	e = cma_event_new(c, type, status);
	if (!e)
		return;
	if (type == RDMA_CM_EVENT_ESTABLISHED && c->id.qp &&
	    cma_iw_qp(c->id.qp) && iw_query_qp(cma_iw_qp(c->id.qp), &qa) == 0) {
		e->event.param.conn.initiator_depth = depth(qa.ord);
		e->event.param.conn.responder_resources = depth(qa.ird);
	}
	if (type == RDMA_CM_EVENT_ESTABLISHED || type == RDMA_CM_EVENT_REJECTED)
		event_private_data(e, ev);
	cma_event_queue(to_cma_ch(c->id.channel), e);
}

/*
 * The QP's hook (qp_hold in rdmacm_iface.h): destroying or resetting the
 * QP of a connection ends the connection (DISCONNECTED, as a disconnect),
 * takes the events that produced, and lets go of the libiwarp identifier,
 * so that the QP can go; the rdma_cm identifier stays.
 */
static void release_qp(struct ibv_qp *qp)
{
	const struct iwv_rdmacm_iface *f = iwv_rdmacm_iface(qp->context);
	struct iw_cm_event *ev;
	struct iw_cm_id *iw = NULL;
	struct cma_id *c;

	pthread_mutex_lock(&cma_route_lock);
	c = f->qp_holder(qp);
	if (c) {
		iw = c->iw;
		c->held_qp = NULL;
	}
	if (iw) {
		iw_disconnect(iw);
		while (iw_get_cm_event(cma_iw_channel(), &ev) == 0) {
			cma_route_iw_event(ev);
			iw_ack_cm_event(ev);
		}
		c->iw = NULL;
		c->released = true;
	}
	f->qp_hold(qp, NULL, NULL);
	pthread_mutex_unlock(&cma_route_lock);
	if (iw)
		iw_destroy_id(iw);
}

/*
 * @c's connection holds @qp, one of ours (cma_iw_qp() found it).  A QP
 * has one holder: an identifier that held it before no longer does, so
 * that c->held_qp always names a QP that is still there.
 */
void cma_hold_qp(struct cma_id *c, struct ibv_qp *qp)
{
	const struct iwv_rdmacm_iface *f = iwv_rdmacm_iface(qp->context);
	struct cma_id *old;

	pthread_mutex_lock(&cma_route_lock);
	old = f->qp_holder(qp);
	if (old)
		old->held_qp = NULL;
	f->qp_hold(qp, c, release_qp);
	c->held_qp = qp;
	pthread_mutex_unlock(&cma_route_lock);
}

/*
 * With the route lock: @c lets go of the QP it holds, if any.  A QP
 * destroyed meanwhile is no longer held (release_qp()), so this never
 * reaches a QP that is gone.
 */
void cma_unhold_qp_locked(struct cma_id *c)
{
	struct ibv_qp *qp = c->held_qp;

	if (!qp)
		return;
	iwv_rdmacm_iface(qp->context)->qp_hold(qp, NULL, NULL);
	c->held_qp = NULL;
}

void cma_unhold_qp(struct cma_id *c)
{
	pthread_mutex_lock(&cma_route_lock);
	cma_unhold_qp_locked(c);
	pthread_mutex_unlock(&cma_route_lock);
}

/* A libiwarp identifier for @c, known to the pump before it can report. */
struct iw_cm_id *cma_iw_id_for(struct cma_id *c)
{
	struct iw_cm_id *iw = iw_create_id(cma_iw_channel(), c);

	if (!iw)
		return NULL;
	pthread_mutex_lock(&cma_route_lock);
	c->iw = iw;
	pthread_mutex_unlock(&cma_route_lock);
	return iw;
}

void cma_iw_id_drop(struct cma_id *c)
{
	struct iw_cm_id *iw;

	pthread_mutex_lock(&cma_route_lock);
	iw = c->iw;
	c->iw = NULL;
	pthread_mutex_unlock(&cma_route_lock);
	if (iw)
		iw_destroy_id(iw);
}

/*
 * The MPA revision of the program's connections, IWARP_MPA_REV: 2 (RFC
 * 6581, the default when unset or empty) or 1 (RFC 5044 alone, as iWARP
 * devices of its time speak it).  Anything else is said on stderr and
 * is -EINVAL.
 */
int cma_mpa_rev(void)
{
	const char *v = getenv("IWARP_MPA_REV");

	if (!v || !*v || !strcmp(v, "2"))
		return 2;
	if (!strcmp(v, "1"))
		return 1;
	fprintf(stderr, "librdmacm: IWARP_MPA_REV=%s: the MPA revision is 1 or 2\n", v);
	return -EINVAL;
}

/*
 * The initiator offers the peer-to-peer mode of RFC 6581 with a
 * zero-length Write or Read as its ready-to-receive message (siw picks
 * the Write): the responder may then send first, which rdma_cm
 * applications expect (ucmatose's server does) and plain MPA forbids.
 * A responder without peer-to-peer support refuses the connection.
 * Revision 1 has no such mode: the Request offers none.
 */
void cma_mpa_opts(struct iw_cm_id *iw)
{
	struct iw_mpa_opts o;
	int rev = cma_mpa_rev();

	iw_mpa_opts_default(&o);
	if (rev == 1)
		o.revision = 1;
	else
		o.rtr = IW_RTR_WRITE | IW_RTR_READ;
	iw_set_mpa_opts(iw, &o);
}

/* How long the pump may sleep before a retry is due; -1: none is. */
int cma_retry_wait_ms(void)
{
	uint64_t now = cma_now_ms(), next = UINT64_MAX;
	struct cma_id *c;

	pthread_mutex_lock(&cma_route_lock);
	for (c = cma_ids; c; c = c->next)
		if (c->retry_pending && c->retry_at_ms < next)
			next = c->retry_at_ms;
	pthread_mutex_unlock(&cma_route_lock);
	if (next == UINT64_MAX)
		return -1;
	return next <= now ? 0 : (int)(next - now);
}

/*
 * Tries the connection again with a fresh libiwarp QP behind the same
 * ibverbs QP (the refused try left the last in error); a try that cannot
 * even start is reported as the refusal.
 */
static void retry(struct cma_id *c)
{
	struct ibv_qp *qp = c->id.qp;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	struct iw_cm_id *iw = NULL;
	struct cma_event *e;
	int mask, rc;

	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	if (!rc) {
		a.qp_state = IBV_QPS_INIT;
		rdma_init_qp_attr(&c->id, &a, &mask);
		rc = ibv_modify_qp(qp, &a, mask);
	}
	if (!rc)
		iw = cma_iw_id_for(c);
	if (iw) {
		cma_mpa_opts(iw);
		cma_hold_qp(c, qp);
		rc = iw_connect(iw, c->host, c->port, cma_iw_qp(qp),
				&c->cparam);
		if (!rc)
			return;
		cma_unhold_qp(c);
		cma_iw_id_drop(c);
	}
	c->state = CMA_DISCONNECTED;
	e = cma_event_new(c, RDMA_CM_EVENT_REJECTED, -ECONNREFUSED);
	if (e)
		cma_event_queue(to_cma_ch(c->id.channel), e);
}

/* The pump runs the retries that are due (rdma_destroy_id() waits for one). */
void cma_retries(void)
{
	for (;;) {
		uint64_t now = cma_now_ms();
		struct iw_cm_id *old;
		struct cma_id *c;

		pthread_mutex_lock(&cma_route_lock);
		for (c = cma_ids; c && !(c->retry_pending && c->retry_at_ms <= now);
		     c = c->next)
			;
		if (!c) {
			pthread_mutex_unlock(&cma_route_lock);
			return;
		}
		c->retry_pending = false;
		c->retrying = true;
		old = c->iw;
		c->iw = NULL;
		cma_unhold_qp_locked(c);
		pthread_mutex_unlock(&cma_route_lock);
		if (old)
			iw_destroy_id(old);
		retry(c);
		pthread_mutex_lock(&cma_route_lock);
		c->retrying = false;
		pthread_cond_broadcast(&cma_route_cond);
		pthread_mutex_unlock(&cma_route_lock);
	}
}

/*
 * Ends the connection; both sides get DISCONNECTED.  Once the QP's
 * destruction has ended it, there is nothing left to do.
 */
