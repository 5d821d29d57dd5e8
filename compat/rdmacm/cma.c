// SPDX-License-Identifier: MIT
/*
 * rdma_cm identifiers: creation and destruction, binding and resolution,
 * listening, connecting, accepting, rejecting and disconnecting, options
 * and channels.  Once an identifier listens or connects it holds a
 * libiwarp CM identifier (events.c turns its events into rdma_cm's).
 * Address and route resolution need no network round trip here: the
 * source address is what the kernel would route from, and both events
 * come at once.
 *
 * An identifier created without a channel is synchronous: its calls wait
 * for the event they cause and return its status.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
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
void cma_id_on_device(struct cma_id *c)
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
	cma_unhold_qp_locked(c);
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
int cma_complete(struct cma_id *c)
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
	return cma_complete(c);
}

/* ---- addresses ---------------------------------------------------------- */

/* 127.0.0.0/8, ::1 or an IPv4-mapped loopback address. */
static bool is_loopback(const struct sockaddr *a)
{
	if (a->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >>
			24) == 127;
	if (a->sa_family == AF_INET6) {
		const struct in6_addr *v6 = &((const struct sockaddr_in6 *)a)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(v6) ||
		       (IN6_IS_ADDR_V4MAPPED(v6) && v6->s6_addr[12] == 127);
	}
	return false;
}

/*
 * Binds to @addr at once, with a TCP socket that holds the port until
 * the identifier listens (which binds it again: SO_REUSEADDR, as
 * perftest's rebinding of its port needs) or connects.  Port 0 gets a
 * free port, which rdma_get_src_port() tells right away.  An identifier
 * bound to a loopback address gets no device (id->verbs stays NULL), as
 * with a kernel device, which sits on no loopback interface: libfabric's
 * verbs provider takes a device there as saying the loopback address is
 * the device's, and would hand its peers 127.0.0.1 to connect to.
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
	/* the system call: a preloaded librspreload.so must not take it */
	fd = (int)syscall(SYS_socket, addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
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
	if (!is_loopback(addr))
		cma_id_on_device(c);
	return 0;
}

/* The address the kernel routes from towards @dst (a UDP socket's view). */
static int route_source(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	socklen_t sl = sizeof(*src);
	int fd = (int)syscall(SYS_socket, dst->sa_family,
			     SOCK_DGRAM | SOCK_CLOEXEC, 0);
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
	cma_id_on_device(c);
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
	iw = cma_iw_id_for(c);
	if (!iw)
		return -1;
	/* the port is libiwarp's listener's from now on */
	close(c->bind_fd);
	c->bind_fd = -1;
	rc = iw_listen(iw, host, port, backlog);
	if (rc) {
		cma_iw_id_drop(c);
		return ERR(iwv_errno(rc));
	}
	c->state = CMA_LISTEN;
	return 0;
}

/* A QP named by number (rdma_connect/accept with conn_param->qp_num). */
static struct ibv_qp *qp_for(struct cma_id *c, struct rdma_conn_param *p)
{
	const struct iwv_rdmacm_iface *f;

	if (c->id.qp)
		return c->id.qp;
	f = iwv_rdmacm_iface(c->id.verbs);
	if (!p || !p->qp_num || !f)
		return NULL;
	return f->qp_by_num(c->id.verbs, p->qp_num);
}

/*
 * The QP's retry budget as rdma_cm sets it when it moves the QP to RTS:
 * RDMA_OPTION_ID_ACK_TIMEOUT and the connection's retry_count (libibverbs
 * maps them to the connection's ACK timeout).  For a QP that
 * rdma_create_qp() did not make, named by number, this is the moment.
 */
static int qp_budget(struct cma_id *c, struct ibv_qp *qp,
		     const struct rdma_conn_param *p)
{
	struct ibv_qp_attr a = { .timeout = c->ack_timeout };
	int mask = c->ack_timeout ? IBV_QP_TIMEOUT : 0;

	if (p) {
		a.retry_cnt = p->retry_count > 7 ? 7 : p->retry_count;
		mask |= IBV_QP_RETRY_CNT;
	}
	return mask ? ibv_modify_qp(qp, &a, mask) : 0;
}

/*
 * An initiator without peer-to-peer mode (Linux siw) sends no message
 * that would let the responder speak first, yet rdma_cm servers do
 * (perftest's latency servers write first) and siw's own responder does:
 * ours sends without waiting for the initiator's first FPDU, after the
 * hold that lets siw take the Reply first (see iw_create_id(3)).  The
 * Reply has revision @rev at most (IWARP_MPA_REV).
 */
static void accept_opts(struct cma_id *c, int rev)
{
	struct iw_mpa_opts o;

	if (c->peer_p2p && rev == 2)
		return;
	iw_mpa_opts_default(&o);
	o.revision = (uint8_t)rev;
	o.responder_first = 1;
	iw_set_mpa_opts(c->iw, &o);
}

/*
 * The application's connection parameters over @p's defaults: its
 * private data, and the Read depths it did not leave to the device.
 */
static void conn_param_in(struct iw_conn_param *p,
			  const struct rdma_conn_param *cp)
{
	if (!cp)
		return;
	p->private_data = cp->private_data;
	p->private_data_len = cp->private_data_len;
	if (cp->responder_resources != RDMA_MAX_RESP_RES)
		p->ird = cp->responder_resources;
	if (cp->initiator_depth != RDMA_MAX_INIT_DEPTH)
		p->ord = cp->initiator_depth;
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
	int rc, rev;

	if (!id)
		return ERR(EINVAL);
	c = to_cma_id(id);
	qp = qp_for(c, conn_param);
	rev = cma_mpa_rev();
	if (c->state != CMA_CONNECT || !c->iw || !qp || !cma_iw_qp(qp) ||
	    rev < 0)
		return ERR(EINVAL);
	p.ird = c->responder_resources;
	p.ord = c->initiator_depth;
	conn_param_in(&p, conn_param);
	rc = qp_budget(c, qp, conn_param);
	if (rc)
		return ERR(rc);
	accept_opts(c, rev);
	cma_hold_qp(c, qp);
	rc = iw_accept(c->iw, cma_iw_qp(qp), &p);
	if (rc) {
		cma_unhold_qp(c);
		return ERR(iwv_errno(rc));
	}
	return cma_complete(c);
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
		return ERR(iwv_errno(rc));
	c->state = CMA_DISCONNECTED;
	return 0;
}

/* ---- active side --------------------------------------------------------------- */

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
	    !qp || !cma_iw_qp(qp) || cma_mpa_rev() < 0 ||
	    host_port(&id->route.addr.dst_storage, host, sizeof(host), port,
		      sizeof(port)))
		return ERR(EINVAL);
	conn_param_in(&p, conn_param);
	if (!p.private_data_len && c->connect_len) {
		p.private_data = c->connect_data;
		p.private_data_len = c->connect_len;
	}
	if (p.private_data_len > sizeof(c->cpd))
		return ERR(EINVAL);
	rc = qp_budget(c, qp, conn_param);
	if (rc)
		return ERR(rc);
	/* kept for a retry (see try_again()) */
	if (p.private_data_len)
		memcpy(c->cpd, p.private_data, p.private_data_len);
	c->cparam = p;
	c->cparam.private_data = c->cpd;
	snprintf(c->host, sizeof(c->host), "%s", host);
	snprintf(c->port, sizeof(c->port), "%s", port);
	c->active = true;
	c->give_up_ms = cma_now_ms() + CMA_RETRY_FOR_MS;
	iw = cma_iw_id_for(c);
	if (!iw)
		return -1;
	cma_mpa_opts(iw);
	if (c->bind_fd >= 0) {
		close(c->bind_fd);
		c->bind_fd = -1;
	}
	cma_hold_qp(c, qp);
	c->state = CMA_CONNECT;
	rc = iw_connect(iw, host, port, cma_iw_qp(qp), &p);
	if (rc) {
		cma_unhold_qp(c);
		cma_iw_id_drop(c);
		c->state = CMA_ROUTE_RESOLVED;
		return ERR(iwv_errno(rc));
	}
	return cma_complete(c);
}

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
	return rc ? ERR(iwv_errno(rc)) : 0;
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

/* ---- options, channels ---------------------------------------------------------- */

/*
 * The identifier options take effect in TCP's own way or not at all over
 * TCP (a type of service and an address reuse that libiwarp's listeners
 * always allow, an IB ACK timeout); IB paths have no meaning here.
 */
/*
 * As rdma_cm has it: the QP's IBV_QP_TIMEOUT from now on (the one it
 * moves to RTS with); libibverbs maps it and the QP's retry_cnt to the
 * connection's ACK timeout (see iwarp-compat(7)).
 */
static int cma_set_ack_timeout(struct rdma_cm_id *id, const void *optval,
			       size_t optlen)
{
	struct ibv_qp_attr a = { 0 };
	int rc;

	if (optlen != sizeof(uint8_t) || *(const uint8_t *)optval > 31)
		return ERR(EINVAL);
	a.timeout = *(const uint8_t *)optval;
	to_cma_id(id)->ack_timeout = a.timeout;
	if (!id->qp)
		return 0; /* rdma_create_qp() gives it the QP */
	rc = ibv_modify_qp(id->qp, &a, IBV_QP_TIMEOUT);
	return rc ? ERR(rc) : 0;
}

int rdma_set_option(struct rdma_cm_id *id, int level, int optname,
		    void *optval, size_t optlen)
{
	if (!id || !optval)
		return ERR(EINVAL);
	if (level == RDMA_OPTION_ID) {
		switch (optname) {
		case RDMA_OPTION_ID_TOS:
			return optlen == sizeof(uint8_t) ? 0 : ERR(EINVAL);
		case RDMA_OPTION_ID_ACK_TIMEOUT:
			return cma_set_ack_timeout(id, optval, optlen);
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
