// SPDX-License-Identifier: MIT
/*
 * rdma_cm identifiers: each one, once it listens or connects, holds a
 * libiwarp CM identifier, and its libiwarp events become rdma_cm events
 * the way the kernel's iWARP connection manager maps them.  Address and
 * route resolution need no network round trip here: the source address
 * is what the kernel would route from, and both events come at once.
 *
 * An identifier created without a channel is synchronous: its calls wait
 * for the event they cause and return its status.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compat/rdmacm/cma.h"

/* ---- identifiers ------------------------------------------------------ */

static socklen_t addr_len(const struct sockaddr *a)
{
	if (!a)
		return 0;
	if (a->sa_family == AF_INET)
		return sizeof(struct sockaddr_in);
	if (a->sa_family == AF_INET6)
		return sizeof(struct sockaddr_in6);
	return 0;
}

/* With the route lock held. */
static struct cma_id *find_id(const struct iw_cm_id *iw)
{
	struct cma_id *c;

	for (c = cma_ids; c && c->iw != iw; c = c->next)
		;
	return c;
}

/* With the route lock held. */
static void unlink_id(struct cma_id *c)
{
	struct cma_id **pp;

	for (pp = &cma_ids; *pp && *pp != c; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = c->next;
}

/*
 * A new identifier, not yet in the process's list.  With @ch NULL it is
 * synchronous and gets a channel of its own.  The caller holds a
 * reference on the process's state (cma_get()) for it.
 */
struct cma_id *cma_id_new(struct rdma_event_channel *ch, void *context,
			  enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct cma_id *c = calloc(1, sizeof(*c));

	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	if (!ch) {
		struct cma_channel *own = cma_channel_new();

		if (!own) {
			free(c);
			return NULL;
		}
		ch = &own->ch;
		c->sync = true;
	}
	c->id.channel = ch;
	c->id.context = context;
	c->id.ps = ps;
	c->id.qp_type = qp_type;
	c->bind_fd = -1;
	pthread_mutex_init(&c->ev_lock, NULL);
	pthread_cond_init(&c->ev_cond, NULL);
	return c;
}

static void id_link(struct cma_id *c)
{
	pthread_mutex_lock(&cma_route_lock);
	c->next = cma_ids;
	cma_ids = c;
	pthread_mutex_unlock(&cma_route_lock);
}

/* The device every address belongs to: iwarp0, its port, its default PD. */
static void id_on_device(struct cma_id *c)
{
	c->id.verbs = cma_verbs();
	c->id.port_num = IWV_PORT;
	if (!c->id.pd)
		c->id.pd = cma_default_pd();
}

/* Only connected QPs exist on iWARP; datagram port spaces do not. */
int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
		   void *context, enum rdma_port_space ps)
{
	struct cma_id *c;

	if (!id)
		return ERR(EINVAL);
	if (ps != RDMA_PS_TCP && ps != RDMA_PS_IB)
		return ERR(EOPNOTSUPP);
	if (cma_get())
		return -1;
	c = cma_id_new(channel, context, ps, IBV_QPT_RC);
	if (!c) {
		int e = errno;

		cma_put();
		return ERR(e);
	}
	id_link(c);
	*id = &c->id;
	return 0;
}

/* The addresses of the connection, once libiwarp has them. */
void cma_id_addrs(struct cma_id *c)
{
	struct sockaddr_storage ss;

	if (!c->iw)
		return;
	if (iw_get_local_addr(c->iw, &ss) == 0)
		memcpy(&c->id.route.addr.src_storage, &ss, sizeof(ss));
	if (iw_get_peer_addr(c->iw, &ss) == 0)
		memcpy(&c->id.route.addr.dst_storage, &ss, sizeof(ss));
}

/*
 * Destroys the identifier: its connection ends without an event, its
 * events not yet taken are dropped (the connection requests a listener
 * had queued go with their identifiers), and, as with rdma-core, the call
 * waits until every event it had taken is acknowledged.
 */
int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cma_id *orphans[64], *c;
	struct iw_cm_id *iw;
	unsigned int n;

	if (!id)
		return ERR(EINVAL);
	c = to_cma_id(id);
	pthread_mutex_lock(&cma_route_lock);
	while (c->retrying)
		pthread_cond_wait(&cma_route_cond, &cma_route_lock);
	unlink_id(c);
	iw = c->iw;
	c->iw = NULL;
	if (id->qp && to_iwv_qp(id->qp)->cm_id == c) {
		to_iwv_qp(id->qp)->cm_release = NULL;
		to_iwv_qp(id->qp)->cm_id = NULL;
	}
	pthread_mutex_unlock(&cma_route_lock);
	if (iw)
		iw_destroy_id(iw);
	do {
		n = 0;
		cma_channel_forget(to_cma_ch(id->channel), c, orphans, &n, 64);
		for (unsigned int i = 0; i < n; i++)
			rdma_destroy_id(&orphans[i]->id);
	} while (n == 64);
	if (id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	pthread_mutex_lock(&c->ev_lock);
	while (c->acked < c->delivered)
		pthread_cond_wait(&c->ev_cond, &c->ev_lock);
	pthread_mutex_unlock(&c->ev_lock);
	if (c->bind_fd >= 0)
		close(c->bind_fd);
	if (c->sync)
		cma_channel_free(to_cma_ch(id->channel));
	free(c->qp_init_attr);
	pthread_cond_destroy(&c->ev_cond);
	pthread_mutex_destroy(&c->ev_lock);
	free(c);
	cma_put();
	return 0;
}

/*
 * A synchronous identifier's call waits for the event it caused, keeps
 * it in id->event (acknowledged by the next call), and fails with its
 * status.
 */
static int complete(struct cma_id *c)
{
	struct rdma_cm_event *e;

	if (!c->sync)
		return 0;
	if (c->id.event) {
		rdma_ack_cm_event(c->id.event);
		c->id.event = NULL;
	}
	if (rdma_get_cm_event(c->id.channel, &c->id.event))
		return -1;
	e = c->id.event;
	if (e->event == RDMA_CM_EVENT_REJECTED)
		return ERR(ECONNREFUSED);
	if (e->status)
		return ERR(e->status < 0 ? -e->status : e->status);
	return 0;
}

/* An event made here, not by libiwarp: resolutions. */
static int local_event(struct cma_id *c, enum rdma_cm_event_type type,
		       int status)
{
	struct cma_event *e = cma_event_new(c, type, status);

	if (!e)
		return ERR(ENOMEM);
	cma_event_queue(to_cma_ch(c->id.channel), e);
	return complete(c);
}

/* ---- addresses ---------------------------------------------------------- */

/*
 * Binds to @addr at once, with a TCP socket that holds the port until
 * the identifier listens (which binds it again: SO_REUSEADDR, as
 * perftest's rebinding of its port needs) or connects.  Port 0 gets a
 * free port, which rdma_get_src_port() tells right away.
 */
int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cma_id *c;
	socklen_t len = addr_len(addr), sl = sizeof(struct sockaddr_storage);
	int one = 1, fd;

	if (!id || !addr)
		return ERR(EINVAL);
	if (!len)
		return ERR(addr->sa_family == AF_IB ? EAFNOSUPPORT : EINVAL);
	c = to_cma_id(id);
	if (c->state != CMA_IDLE)
		return ERR(EINVAL);
	fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, addr, len) ||
	    getsockname(fd, (struct sockaddr *)&id->route.addr.src_storage,
			&sl)) {
		int e = errno;

		close(fd);
		return ERR(e);
	}
	c->bind_fd = fd;
	c->state = CMA_BOUND;
	id_on_device(c);
	return 0;
}

/* The address the kernel routes from towards @dst (a UDP socket's view). */
static int route_source(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	socklen_t sl = sizeof(*src);
	int fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (connect(fd, dst, addr_len(dst)) ||
	    getsockname(fd, (struct sockaddr *)src, &sl))
		rc = -errno;
	close(fd);
	if (!rc && src->ss_family == AF_INET)
		((struct sockaddr_in *)src)->sin_port = 0;
	else if (!rc)
		((struct sockaddr_in6 *)src)->sin6_port = 0;
	return rc;
}

/*
 * Resolution needs no round trip: the device is iwarp0 whatever the
 * address, and the source is the one the host routes from (or @src).
 * ADDR_RESOLVED, or ADDR_ERROR when there is no route, comes at once.
 */
int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
		      struct sockaddr *dst_addr, int timeout_ms)
{
	struct sockaddr_storage src;
	struct cma_id *c;
	int rc = 0;

	(void)timeout_ms;
	if (!id || !addr_len(dst_addr) || (src_addr && !addr_len(src_addr)))
		return ERR(EINVAL);
	c = to_cma_id(id);
	if (c->state != CMA_IDLE && c->state != CMA_BOUND &&
	    c->state != CMA_ADDR_RESOLVED)
		return ERR(EINVAL);
	memcpy(&id->route.addr.dst_storage, dst_addr, addr_len(dst_addr));
	if (src_addr)
		memcpy(&id->route.addr.src_storage, src_addr, addr_len(src_addr));
	else if (c->state != CMA_BOUND)
		rc = route_source(dst_addr, &src);
	if (!src_addr && c->state != CMA_BOUND && !rc)
		memcpy(&id->route.addr.src_storage, &src, sizeof(src));
	if (rc)
		return local_event(c, RDMA_CM_EVENT_ADDR_ERROR, rc);
	id_on_device(c);
	c->state = CMA_ADDR_RESOLVED;
	return local_event(c, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
}

/* A route is TCP's to find: ROUTE_RESOLVED comes at once. */
int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cma_id *c;

	(void)timeout_ms;
	if (!id)
		return ERR(EINVAL);
	c = to_cma_id(id);
	if (c->state != CMA_ADDR_RESOLVED && c->state != CMA_ROUTE_RESOLVED)
		return ERR(EINVAL);
	c->state = CMA_ROUTE_RESOLVED;
	return local_event(c, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
}

__be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	const struct sockaddr *a = &id->route.addr.src_addr;

	return a->sa_family == AF_INET6 ? id->route.addr.src_sin6.sin6_port
	       : a->sa_family == AF_INET ? id->route.addr.src_sin.sin_port
					 : 0;
}

__be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	const struct sockaddr *a = &id->route.addr.dst_addr;

	return a->sa_family == AF_INET6 ? id->route.addr.dst_sin6.sin6_port
	       : a->sa_family == AF_INET ? id->route.addr.dst_sin.sin_port
					 : 0;
}

/* The numeric host and port libiwarp's calls take. */
static int host_port(const struct sockaddr_storage *ss, char *host,
		     size_t hlen, char *port, size_t plen)
{
	int rc = getnameinfo((const struct sockaddr *)ss,
			     addr_len((const struct sockaddr *)ss), host,
			     (socklen_t)hlen, port, (socklen_t)plen,
			     NI_NUMERICHOST | NI_NUMERICSERV);

	return rc ? EINVAL : 0;
}

/* ---- the libiwarp side ---------------------------------------------------- */

/*
 * How long, and how often, a connection nothing took is tried again: a
 * server may listen a moment after its client was told it would
 * (perftest's data connection), and perftest cannot retry it.
 */
#define RETRY_FOR_MS 1000
#define RETRY_EVERY_MS 20

uint64_t cma_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/*
 * The rdma_cm status of a libiwarp code: errno values pass (negative, as
 * the kernel reports them); a peer's refusal is ECONNREFUSED, a stream
 * that ended is ECONNRESET, and protocol errors are EPROTO.
 */
int cma_status(int rc)
{
	if (rc == 0 || rc > -IW_ERROR_BASE)
		return rc;
	switch (rc) {
	case -IW_EMPA_REJECTED:
		return -ECONNREFUSED;
	case -IW_ECLOSED:
	case -IW_ETERMINATED:
		return -ECONNRESET;
	default:
		return -EPROTO;
	}
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
	id_on_device(c);
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
	if (c->id.qp)
		iw_qp_to_error(to_iwv_qp(c->id.qp)->iw);
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
	    atomic_load(&to_iwv_qp(c->id.qp)->posted) || now >= c->give_up_ms)
		return false;
	c->retry_pending = true;
	c->retry_at_ms = now + RETRY_EVERY_MS;
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
	    iw_query_qp(to_iwv_qp(c->id.qp)->iw, &qa) == 0) {
		e->event.param.conn.initiator_depth = depth(qa.ord);
		e->event.param.conn.responder_resources = depth(qa.ird);
	}
	if (type == RDMA_CM_EVENT_ESTABLISHED || type == RDMA_CM_EVENT_REJECTED)
		event_private_data(e, ev);
	cma_event_queue(to_cma_ch(c->id.channel), e);
}

/*
 * The QP's hook (see struct iwv_qp): destroying or resetting the QP of a
 * connection ends the connection (DISCONNECTED, as a disconnect), takes
 * the events that produced, and lets go of the libiwarp identifier, so
 * that the QP can go; the rdma_cm identifier stays.
 */
static void release_qp(struct iwv_qp *q)
{
	struct cma_id *c = q->cm_id;
	struct iw_cm_event *ev;
	struct iw_cm_id *iw;

	pthread_mutex_lock(&cma_route_lock);
	iw = c->iw;
	if (iw) {
		iw_disconnect(iw);
		while (iw_get_cm_event(cma_iw_channel(), &ev) == 0) {
			cma_route_iw_event(ev);
			iw_ack_cm_event(ev);
		}
		c->iw = NULL;
		c->released = true;
	}
	q->cm_release = NULL;
	q->cm_id = NULL;
	pthread_mutex_unlock(&cma_route_lock);
	if (iw)
		iw_destroy_id(iw);
}

void cma_hold_qp(struct cma_id *c, struct ibv_qp *qp)
{
	struct iwv_qp *q = to_iwv_qp(qp);

	pthread_mutex_lock(&cma_route_lock);
	q->cm_id = c;
	q->cm_release = release_qp;
	pthread_mutex_unlock(&cma_route_lock);
}

static void unhold_qp(struct ibv_qp *qp)
{
	struct iwv_qp *q = to_iwv_qp(qp);

	pthread_mutex_lock(&cma_route_lock);
	q->cm_release = NULL;
	q->cm_id = NULL;
	pthread_mutex_unlock(&cma_route_lock);
}

/* A libiwarp identifier for @c, known to the pump before it can report. */
static struct iw_cm_id *iw_id_for(struct cma_id *c)
{
	struct iw_cm_id *iw = iw_create_id(cma_iw_channel(), c);

	if (!iw)
		return NULL;
	pthread_mutex_lock(&cma_route_lock);
	c->iw = iw;
	pthread_mutex_unlock(&cma_route_lock);
	return iw;
}

static void iw_id_drop(struct cma_id *c)
{
	struct iw_cm_id *iw;

	pthread_mutex_lock(&cma_route_lock);
	iw = c->iw;
	c->iw = NULL;
	pthread_mutex_unlock(&cma_route_lock);
	if (iw)
		iw_destroy_id(iw);
}

/* errno for a libiwarp call that failed */
static int call_errno(int rc)
{
	int s = cma_status(rc);

	return s < 0 ? -s : EIO;
}

/* ---- passive side ----------------------------------------------------------- */

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	char host[NI_MAXHOST], port[NI_MAXSERV];
	struct cma_id *c;
	struct iw_cm_id *iw;
	int rc;

	if (!id)
		return ERR(EINVAL);
	c = to_cma_id(id);
	if (c->state == CMA_IDLE) {
		struct sockaddr_in any = { .sin_family = AF_INET };

		if (rdma_bind_addr(id, (struct sockaddr *)&any))
			return -1;
	}
	if (c->state != CMA_BOUND ||
	    host_port(&id->route.addr.src_storage, host, sizeof(host), port,
		      sizeof(port)))
		return ERR(EINVAL);
	iw = iw_id_for(c);
	if (!iw)
		return -1;
	/* the port is libiwarp's listener's from now on */
	close(c->bind_fd);
	c->bind_fd = -1;
	rc = iw_listen(iw, host, port, backlog);
	if (rc) {
		iw_id_drop(c);
		return ERR(call_errno(rc));
	}
	c->state = CMA_LISTEN;
	return 0;
}

/* A QP named by number (rdma_connect/accept with conn_param->qp_num). */
static struct ibv_qp *qp_for(struct cma_id *c, struct rdma_conn_param *p)
{
	struct iwv_qp *q;

	if (c->id.qp)
		return c->id.qp;
	if (!p || !p->qp_num || !iwv_is_ours(c->id.verbs))
		return NULL;
	q = iwv_find_qp(to_iwv_ctx(c->id.verbs), p->qp_num);
	return q ? &q->qp.qp_base : NULL;
}

/*
 * An initiator without peer-to-peer mode (Linux siw) sends no message
 * that would let the responder speak first, yet rdma_cm servers do
 * (perftest's latency servers write first) and siw's own responder does:
 * ours sends without waiting for the initiator's first FPDU, after the
 * hold that lets siw take the Reply first (see iw_create_id(3)).
 */
static void accept_opts(struct cma_id *c)
{
	struct iw_mpa_opts o;

	if (c->peer_p2p)
		return;
	iw_mpa_opts_default(&o);
	o.responder_first = 1;
	iw_set_mpa_opts(c->iw, &o);
}

/*
 * Accepts with the QP.  Read depths left to the device (no parameters,
 * or RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH) match what the peer asked,
 * as librdmacm does.
 */
int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct iw_conn_param p = { 0 };
	struct ibv_qp *qp;
	struct cma_id *c;
	int rc;

	if (!id)
		return ERR(EINVAL);
	c = to_cma_id(id);
	qp = qp_for(c, conn_param);
	if (c->state != CMA_CONNECT || !c->iw || !qp)
		return ERR(EINVAL);
	p.ird = c->responder_resources;
	p.ord = c->initiator_depth;
	if (conn_param) {
		p.private_data = conn_param->private_data;
		p.private_data_len = conn_param->private_data_len;
		if (conn_param->responder_resources != RDMA_MAX_RESP_RES)
			p.ird = conn_param->responder_resources;
		if (conn_param->initiator_depth != RDMA_MAX_INIT_DEPTH)
			p.ord = conn_param->initiator_depth;
	}
	accept_opts(c);
	cma_hold_qp(c, qp);
	rc = iw_accept(c->iw, to_iwv_qp(qp)->iw, &p);
	if (rc) {
		unhold_qp(qp);
		return ERR(call_errno(rc));
	}
	return complete(c);
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data,
		uint8_t private_data_len)
{
	struct cma_id *c;
	int rc;

	if (!id)
		return ERR(EINVAL);
	c = to_cma_id(id);
	if (c->state != CMA_CONNECT || !c->iw)
		return ERR(EINVAL);
	rc = iw_reject(c->iw, private_data, private_data_len);
	if (rc)
		return ERR(call_errno(rc));
	c->state = CMA_DISCONNECTED;
	return 0;
}

/* ---- active side --------------------------------------------------------------- */

/*
 * The initiator offers the peer-to-peer mode of RFC 6581 with a
 * zero-length Write or Read as its ready-to-receive message (siw picks
 * the Write): the responder may then send first, which rdma_cm
 * applications expect (ucmatose's server does) and plain MPA forbids.
 * A responder without peer-to-peer support refuses the connection.
 */
static void mpa_opts(struct iw_cm_id *iw)
{
	struct iw_mpa_opts o;

	iw_mpa_opts_default(&o);
	o.rtr = IW_RTR_WRITE | IW_RTR_READ;
	iw_set_mpa_opts(iw, &o);
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	char host[NI_MAXHOST], port[NI_MAXSERV];
	struct iw_conn_param p = { .ird = CMA_MAX_RD, .ord = CMA_MAX_RD };
	struct ibv_qp *qp;
	struct iw_cm_id *iw;
	struct cma_id *c;
	int rc;

	if (!id)
		return ERR(EINVAL);
	c = to_cma_id(id);
	qp = qp_for(c, conn_param);
	if ((c->state != CMA_ADDR_RESOLVED && c->state != CMA_ROUTE_RESOLVED) ||
	    !qp || host_port(&id->route.addr.dst_storage, host, sizeof(host),
			     port, sizeof(port)))
		return ERR(EINVAL);
	if (conn_param) {
		p.private_data = conn_param->private_data;
		p.private_data_len = conn_param->private_data_len;
		if (conn_param->responder_resources != RDMA_MAX_RESP_RES)
			p.ird = conn_param->responder_resources;
		if (conn_param->initiator_depth != RDMA_MAX_INIT_DEPTH)
			p.ord = conn_param->initiator_depth;
	}
	if (!p.private_data_len && c->connect_len) {
		p.private_data = c->connect_data;
		p.private_data_len = c->connect_len;
	}
	if (p.private_data_len > sizeof(c->cpd))
		return ERR(EINVAL);
	/* kept for a retry (see try_again()) */
	if (p.private_data_len)
		memcpy(c->cpd, p.private_data, p.private_data_len);
	c->cparam = p;
	c->cparam.private_data = c->cpd;
	snprintf(c->host, sizeof(c->host), "%s", host);
	snprintf(c->port, sizeof(c->port), "%s", port);
	c->active = true;
	c->give_up_ms = cma_now_ms() + RETRY_FOR_MS;
	iw = iw_id_for(c);
	if (!iw)
		return -1;
	mpa_opts(iw);
	if (c->bind_fd >= 0) {
		close(c->bind_fd);
		c->bind_fd = -1;
	}
	cma_hold_qp(c, qp);
	c->state = CMA_CONNECT;
	rc = iw_connect(iw, host, port, to_iwv_qp(qp)->iw, &p);
	if (rc) {
		unhold_qp(qp);
		iw_id_drop(c);
		c->state = CMA_ROUTE_RESOLVED;
		return ERR(call_errno(rc));
	}
	return complete(c);
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
		iw = iw_id_for(c);
	if (iw) {
		mpa_opts(iw);
		cma_hold_qp(c, qp);
		rc = iw_connect(iw, c->host, c->port, to_iwv_qp(qp)->iw,
				&c->cparam);
		if (!rc)
			return;
		unhold_qp(qp);
		iw_id_drop(c);
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
		to_iwv_qp(c->id.qp)->cm_release = NULL;
		to_iwv_qp(c->id.qp)->cm_id = NULL;
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
int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cma_id *c;
	int rc = 0;

	if (!id)
		return ERR(EINVAL);
	c = to_cma_id(id);
	pthread_mutex_lock(&cma_route_lock);
	if (c->iw)
		rc = iw_disconnect(c->iw);
	else if (!c->released)
		rc = -EINVAL;
	pthread_mutex_unlock(&cma_route_lock);
	return rc ? ERR(call_errno(rc)) : 0;
}

/* iWARP has no CONNECT_RESPONSE step: the connection is up already. */
int rdma_establish(struct rdma_cm_id *id)
{
	if (!id || id->qp)
		return ERR(EINVAL);
	return 0;
}

int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	(void)event;
	return id ? 0 : ERR(EINVAL);
}

/* ---- QPs ------------------------------------------------------------------------ */

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
	case IBV_QPS_RTS:
		/* nothing of a path to set: TCP has it */
		*qp_attr_mask = IBV_QP_STATE;
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

/* ---- options, channels ---------------------------------------------------------- */

/*
 * The identifier options take effect in TCP's own way or not at all over
 * TCP (a type of service and an address reuse that libiwarp's listeners
 * always allow, an IB ACK timeout); IB paths have no meaning here.
 */
int rdma_set_option(struct rdma_cm_id *id, int level, int optname,
		    void *optval, size_t optlen)
{
	if (!id || !optval)
		return ERR(EINVAL);
	if (level == RDMA_OPTION_ID) {
		switch (optname) {
		case RDMA_OPTION_ID_TOS:
		case RDMA_OPTION_ID_ACK_TIMEOUT:
			return optlen == sizeof(uint8_t) ? 0 : ERR(EINVAL);
		case RDMA_OPTION_ID_REUSEADDR:
		case RDMA_OPTION_ID_AFONLY:
			return optlen == sizeof(int) ? 0 : ERR(EINVAL);
		default:
			return ERR(ENOSYS);
		}
	}
	if (level == RDMA_OPTION_IB)
		return ERR(EOPNOTSUPP);
	return ERR(ENOSYS);
}

/*
 * Moves the identifier to @channel (NULL: a channel of its own, making
 * it synchronous), with its events not yet taken.
 */
int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct cma_channel *from, *to;
	struct cma_id *c;
	bool was_sync;

	if (!id)
		return ERR(EINVAL);
	c = to_cma_id(id);
	if (c->sync && !channel)
		return ERR(EINVAL);
	to = channel ? to_cma_ch(channel) : cma_channel_new();
	if (!to)
		return -1;
	from = to_cma_ch(id->channel);
	was_sync = c->sync;
	if (was_sync && id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	/* no event is routed to the identifier while it moves */
	pthread_mutex_lock(&cma_route_lock);
	cma_channel_move(from, to, c);
	id->channel = &to->ch;
	c->sync = !channel;
	pthread_mutex_unlock(&cma_route_lock);
	pthread_mutex_lock(&c->ev_lock);
	while (c->acked < c->delivered)
		pthread_cond_wait(&c->ev_cond, &c->ev_lock);
	pthread_mutex_unlock(&c->ev_lock);
	if (was_sync)
		cma_channel_free(from);
	return 0;
}
