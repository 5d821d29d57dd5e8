// SPDX-License-Identifier: MIT
/*
 * rsocket options and rfcntl().  Sizes (buffers, queues, inline, iomap)
 * count until the connection is made, as rdma-core's do; TCP's own
 * options have no TCP under them to act on and are kept so that programs
 * read back what they set.  The connection below is libiwarp's TCP
 * connection, which has its own keepalive and send timeout, so
 * SO_KEEPALIVE sends no rsockets keepalive message.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <string.h>

#include <rdma/rsocket.h>

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
		return 0;
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
	case TCP_KEEPIDLE:
		if (v <= 0)
			return ERR(EINVAL);
		rs->keepalive_time = (unsigned int)v;
		return 0;
	case TCP_KEEPCNT:
	case TCP_KEEPINTVL:
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
		case SO_REUSEADDR:
		case SO_KEEPALIVE:
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
			return put_int(optval, optlen, (int)rs->keepalive_time);
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
			return put_int(optval, optlen, 1);
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
