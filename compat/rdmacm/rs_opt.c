// SPDX-License-Identifier: MIT
/*
 * rsocket options and rfcntl().  Sizes (buffers, queues, inline, iomap)
 * count until the connection is made, as rdma-core's do; TCP's own
 * options have no TCP under them to act on and are kept so that programs
 * read back what they set.  The keepalive options are the exception: the
 * connection below is libiwarp's TCP connection, and SO_KEEPALIVE with
 * TCP_KEEPIDLE, TCP_KEEPINTVL and TCP_KEEPCNT set its QP's TCP keepalive
 * (iw_set_qp_timeouts(3)), which finds a dead peer as it would for a TCP
 * socket.  No rsockets keepalive message is sent (rdma-core's is a
 * zero-length RDMA Write, which needs a reliable connection to be
 * answered; TCP's probes are answered by the peer's kernel); one that
 * comes from rdma-core's rsockets is taken and ignored.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <string.h>

#include <rdma/rsocket.h>

#include "compat/ibverbs/rdmacm_iface.h"
#include "compat/rdmacm/rs.h"

#define ERR(e) (errno = (e), -1)

static int opt_int(const void *optval, socklen_t optlen, int *v)
{
	if (!optval || optlen < sizeof(int))
		return ERR(EINVAL);
	memcpy(v, optval, sizeof(int));
	return 0;
}

static void opt_bit(uint64_t *opts, int optname, int on)
{
	if (optname < 0 || optname >= 64)
		return;
	if (on)
		*opts |= 1ULL << optname;
	else
		*opts &= ~(1ULL << optname);
}

/* The libiwarp QP under the rsocket, once it has one. */
static struct iw_qp *rs_iw_qp(struct rsock *rs)
{
	struct ibv_qp *qp = rs->cm_id ? rs->cm_id->qp : NULL;
	const struct iwv_rdmacm_iface *f = qp ? iwv_rdmacm_iface(qp->context)
					      : NULL;

	return f ? f->iw_qp(qp) : NULL;
}

/*
 * Gives the QP the keepalive the options ask for: SO_KEEPALIVE off turns
 * it off, on turns it on with TCP_KEEPIDLE, TCP_KEEPINTVL and TCP_KEEPCNT
 * where they were set, the QP's own values (libiwarp's defaults or
 * IWARP_KEEPALIVE) where not.  A socket that never set SO_KEEPALIVE keeps
 * what the QP has.  Called as the options change and once connected.
 */
int rs_apply_keepalive(struct rsock *rs)
{
	struct iw_qp_timeouts t = { .comp_mask = IW_QP_TIMEOUTS_KEEPALIVE };
	struct iw_qp *qp = rs_iw_qp(rs);
	int rc;

	if (rs->keepalive < 0 || !qp)
		return 0;
	rc = iw_query_qp_timeouts(qp, &t);
	if (rc)
		return ERR(-rc);
	if (!rs->keepalive) {
		t.keepalive_idle_s = 0;
	} else {
		t.keepalive_idle_s = rs->keepalive_time ? rs->keepalive_time
				     : t.keepalive_idle_s ? t.keepalive_idle_s
							  : IW_KEEPALIVE_IDLE_S_DEFAULT;
		t.keepalive_interval_s = rs->keepalive_intvl ? rs->keepalive_intvl
					 : t.keepalive_interval_s
						 ? t.keepalive_interval_s
						 : IW_KEEPALIVE_INTERVAL_S_DEFAULT;
		t.keepalive_count = rs->keepalive_cnt ? rs->keepalive_cnt
				    : t.keepalive_count ? t.keepalive_count
							: IW_KEEPALIVE_COUNT_DEFAULT;
	}
	rc = iw_set_qp_timeouts(qp, &t);
	return rc ? ERR(-rc) : 0;
}

/* The QP's keepalive, for reading options back: 0 when there is no QP. */
static uint32_t qp_keepalive(struct rsock *rs, int optname)
{
	struct iw_qp_timeouts t = { .comp_mask = IW_QP_TIMEOUTS_KEEPALIVE };
	struct iw_qp *qp = rs_iw_qp(rs);

	if (!qp || iw_query_qp_timeouts(qp, &t))
		return 0;
	return optname == TCP_KEEPIDLE	  ? t.keepalive_idle_s
	       : optname == TCP_KEEPINTVL ? t.keepalive_interval_s
					  : t.keepalive_count;
}

static int set_socket(struct rsock *rs, int optname, const void *optval,
		      socklen_t optlen)
{
	struct linger l;
	int v;

	switch (optname) {
	case SO_REUSEADDR:
	case SO_KEEPALIVE:
	case SO_OOBINLINE:
		if (opt_int(optval, optlen, &v))
			return -1;
		if (optname == SO_REUSEADDR &&
		    rdma_set_option(rs->cm_id, RDMA_OPTION_ID,
				    RDMA_OPTION_ID_REUSEADDR, &v, sizeof(v)))
			return -1;
		opt_bit(&rs->so_opts, optname, v);
		if (optname != SO_KEEPALIVE)
			return 0;
		rs->keepalive = v != 0;
		return rs_apply_keepalive(rs);
	case SO_RCVBUF:
	case SO_SNDBUF:
		if (opt_int(optval, optlen, &v))
			return -1;
		if (v < RS_SNDLOWAT)
			v = RS_SNDLOWAT;
		if (v > (1 << 28))
			v = 1 << 28;
		/* doubled, as the kernel does; fixed once the buffers exist */
		if (optname == SO_RCVBUF && !rs->rbuf)
			rs->rbuf_size = (uint32_t)v << 1;
		if (optname == SO_SNDBUF && !rs->sbuf)
			rs->sbuf_size = (uint32_t)v << 1;
		return 0;
	case SO_LINGER:
		if (!optval || optlen < sizeof(l))
			return ERR(EINVAL);
		memcpy(&l, optval, sizeof(l));
		opt_bit(&rs->so_opts, SO_LINGER, l.l_onoff);
		return 0;
	default:
		return ERR(ENOPROTOOPT);
	}
}

static int set_tcp(struct rsock *rs, int optname, const void *optval,
		   socklen_t optlen)
{
	int v;

	if (opt_int(optval, optlen, &v))
		return -1;
	switch (optname) {
	case TCP_NODELAY:
		opt_bit(&rs->tcp_opts, optname, v);
		return 0;
	case TCP_KEEPIDLE: /* the kernel's bounds: MAX_TCP_KEEPIDLE, ... */
	case TCP_KEEPINTVL:
		if (v <= 0 || v > 32767)
			return ERR(EINVAL);
		if (optname == TCP_KEEPIDLE)
			rs->keepalive_time = (unsigned int)v;
		else
			rs->keepalive_intvl = (unsigned int)v;
		return rs->keepalive > 0 ? rs_apply_keepalive(rs) : 0;
	case TCP_KEEPCNT:
		if (v <= 0 || v > 127)
			return ERR(EINVAL);
		rs->keepalive_cnt = (unsigned int)v;
		return rs->keepalive > 0 ? rs_apply_keepalive(rs) : 0;
	case TCP_MAXSEG:
		return 0;
	default:
		return ERR(ENOPROTOOPT);
	}
}

/* rsockets' own: queue sizes, inline size, iomap entries, route. */
static int set_rdma(struct rsock *rs, int optname, const void *optval,
		    socklen_t optlen)
{
	uint32_t v;

	if (rs->state >= RS_OPENING)
		return ERR(EINVAL);
	if (optname == RDMA_ROUTE)
		return 0; /* IB path records: TCP finds the route here */
	if (!optval || optlen < sizeof(v))
		return ERR(EINVAL);
	memcpy(&v, optval, sizeof(v));
	if (v > RS_QP_MAX_SIZE)
		v = RS_QP_MAX_SIZE;
	switch (optname) {
	case RDMA_SQSIZE:
		rs->sq_size = (uint16_t)v;
		return 0;
	case RDMA_RQSIZE:
		rs->rq_size = (uint16_t)v;
		return 0;
	case RDMA_INLINE:
		rs->sq_inline = (uint16_t)v;
		return 0;
	case RDMA_IOMAPSIZE:
		rs->target_iomap_size =
			(uint16_t)rs_scale_to_value(rs_value_to_scale((int)v, 8), 8);
		return 0;
	default:
		return ERR(ENOPROTOOPT);
	}
}

int rsetsockopt(int socket, int level, int optname, const void *optval,
		socklen_t optlen)
{
	struct rsock *rs = rs_get(socket);
	int ret, v;

	if (!rs)
		return ERR(EBADF);
	pthread_mutex_lock(&rs->lock);
	switch (level) {
	case SOL_SOCKET:
		ret = set_socket(rs, optname, optval, optlen);
		break;
	case IPPROTO_TCP:
		ret = set_tcp(rs, optname, optval, optlen);
		break;
	case IPPROTO_IPV6:
		if (optname != IPV6_V6ONLY) {
			ret = ERR(ENOPROTOOPT);
		} else if (!(ret = opt_int(optval, optlen, &v))) {
			ret = rdma_set_option(rs->cm_id, RDMA_OPTION_ID,
					      RDMA_OPTION_ID_AFONLY, &v, sizeof(v));
			if (!ret)
				opt_bit(&rs->ipv6_opts, optname, v);
		}
		break;
	case SOL_RDMA:
		ret = set_rdma(rs, optname, optval, optlen);
		break;
	default:
		ret = ERR(ENOPROTOOPT);
		break;
	}
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

static int put_int(void *optval, socklen_t *optlen, int v)
{
	if (!optval || !optlen || *optlen < sizeof(int))
		return ERR(EINVAL);
	memcpy(optval, &v, sizeof(v));
	*optlen = sizeof(int);
	return 0;
}

static int get_locked(struct rsock *rs, int level, int optname, void *optval,
		      socklen_t *optlen)
{
	struct linger l = { 0 };
	int e;

	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_KEEPALIVE:
			/* set, or else whether the QP has libiwarp's own */
			if (rs->keepalive >= 0)
				return put_int(optval, optlen, rs->keepalive);
			return put_int(optval, optlen,
				       qp_keepalive(rs, TCP_KEEPIDLE) != 0);
		case SO_REUSEADDR:
		case SO_OOBINLINE:
			return put_int(optval, optlen,
				       !!(rs->so_opts & (1ULL << optname)));
		case SO_RCVBUF:
			return put_int(optval, optlen, (int)rs->rbuf_size);
		case SO_SNDBUF:
			return put_int(optval, optlen, (int)rs->sbuf_size);
		case SO_TYPE:
			return put_int(optval, optlen, SOCK_STREAM);
		case SO_DOMAIN:
			return put_int(optval, optlen, rs->domain);
		case SO_ACCEPTCONN:
			return put_int(optval, optlen, rs->state == RS_LISTENING);
		case SO_ERROR:
			e = rs->err;
			rs->err = 0;
			return put_int(optval, optlen, e);
		case SO_LINGER:
			if (!optval || !optlen || *optlen < sizeof(l))
				return ERR(EINVAL);
			l.l_onoff = !!(rs->so_opts & (1ULL << SO_LINGER));
			memcpy(optval, &l, sizeof(l));
			*optlen = sizeof(l);
			return 0;
		}
		break;
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_NODELAY:
			return put_int(optval, optlen,
				       !!(rs->tcp_opts & (1ULL << optname)));
		case TCP_KEEPIDLE:
		case TCP_KEEPINTVL:
		case TCP_KEEPCNT: {
			unsigned int v = optname == TCP_KEEPIDLE ? rs->keepalive_time
					 : optname == TCP_KEEPINTVL
						 ? rs->keepalive_intvl
						 : rs->keepalive_cnt;

			if (!v)
				v = qp_keepalive(rs, optname);
			if (!v) /* no QP yet, nothing set: libiwarp's default */
				v = optname == TCP_KEEPIDLE ? IW_KEEPALIVE_IDLE_S_DEFAULT
				    : optname == TCP_KEEPINTVL
					    ? IW_KEEPALIVE_INTERVAL_S_DEFAULT
					    : IW_KEEPALIVE_COUNT_DEFAULT;
			return put_int(optval, optlen, (int)v);
		}
		case TCP_MAXSEG:
			return put_int(optval, optlen, 2048);
		}
		break;
	case IPPROTO_IPV6:
		if (optname == IPV6_V6ONLY)
			return put_int(optval, optlen,
				       !!(rs->ipv6_opts & (1ULL << optname)));
		break;
	case SOL_RDMA:
		switch (optname) {
		case RDMA_SQSIZE:
			return put_int(optval, optlen, rs->sq_size);
		case RDMA_RQSIZE:
			return put_int(optval, optlen, rs->rq_size);
		case RDMA_INLINE:
			return put_int(optval, optlen, rs->sq_inline);
		case RDMA_IOMAPSIZE:
			return put_int(optval, optlen, rs->target_iomap_size);
		}
		break;
	}
	return ERR(ENOPROTOOPT);
}

int rgetsockopt(int socket, int level, int optname, void *optval,
		socklen_t *optlen)
{
	struct rsock *rs = rs_get(socket);
	int ret;

	if (!rs)
		return ERR(EBADF);
	pthread_mutex_lock(&rs->lock);
	ret = get_locked(rs, level, optname, optval, optlen);
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

/*
 * F_GETFL/F_SETFL: O_NONBLOCK governs every call; the rsocket's own
 * descriptor (its CM channel) follows it, so that a non-blocking connect
 * or accept never waits there.
 */
int rfcntl(int socket, int cmd, ...)
{
	struct rsock *rs = rs_get(socket);
	va_list ap;
	int ret = 0, arg;

	if (!rs)
		return ERR(EBADF);
	va_start(ap, cmd);
	pthread_mutex_lock(&rs->lock);
	switch (cmd) {
	case F_GETFL:
		ret = rs->fd_flags | O_RDWR;
		break;
	case F_SETFL:
		arg = va_arg(ap, int);
		if (rs_set_cloexec_nonblock(rs->fd, arg & O_NONBLOCK))
			ret = -1;
		else
			rs->fd_flags = arg & O_NONBLOCK;
		break;
	case F_GETFD:
	case F_SETFD:
		arg = cmd == F_SETFD ? va_arg(ap, int) : 0;
		ret = cmd == F_SETFD ? fcntl(rs->fd, cmd, arg) : fcntl(rs->fd, cmd);
		break;
	default:
		ret = ERR(EOPNOTSUPP);
		break;
	}
	pthread_mutex_unlock(&rs->lock);
	va_end(ap);
	return ret;
}
