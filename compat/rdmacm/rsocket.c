// SPDX-License-Identifier: MIT
/*
 * rsockets: the socket calls of rdma-core's <rdma/rsocket.h> over this
 * librdmacm and libibverbs, wire-compatible with rdma-core's rsockets on
 * an iWARP device (see rs.h and rs_wire.h).  Stream sockets over IPv4 and
 * IPv6; datagram rsockets need UD QPs, which iWARP does not have, so
 * rsocket(SOCK_DGRAM) fails (librspreload.so then falls back to a
 * kernel socket).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "compat/rdmacm/rs.h"

#define ERR(e) (errno = (e), -1)

/* ---- the table: an rsocket by its number ------------------------------- */

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rsock **table;
static int table_len;

struct rsock *rs_get(int fd)
{
	struct rsock *rs = NULL;

	pthread_mutex_lock(&table_lock);
	if (fd >= 0 && fd < table_len)
		rs = table[fd];
	pthread_mutex_unlock(&table_lock);
	return rs;
}

int rs_insert(struct rsock *rs)
{
	int rc = 0;

	pthread_mutex_lock(&table_lock);
	if (rs->fd >= table_len) {
		int n = table_len ? table_len : 64;
		struct rsock **t;

		while (n <= rs->fd)
			n *= 2;
		t = realloc(table, (size_t)n * sizeof(*t));
		if (t) {
			memset(t + table_len, 0,
			       (size_t)(n - table_len) * sizeof(*t));
			table = t;
			table_len = n;
		} else {
			rc = ERR(ENOMEM);
		}
	}
	if (!rc)
		table[rs->fd] = rs;
	pthread_mutex_unlock(&table_lock);
	return rc;
}

void rs_remove(struct rsock *rs)
{
	pthread_mutex_lock(&table_lock);
	if (rs->fd >= 0 && rs->fd < table_len && table[rs->fd] == rs)
		table[rs->fd] = NULL;
	pthread_mutex_unlock(&table_lock);
}

/*
 * fork(): the child has none of the threads that move libiwarp's
 * connections, and an rsocket's TCP connection is the parent's as much as
 * its own: were the child to send or say goodbye on it, the parent's
 * stream would break.  So in the child the rsockets it inherited are
 * gone (EBADF; rclose() only lets their descriptors go), and where there
 * were any, the device is the parent's too: new rsockets fail with
 * EOPNOTSUPP.  A child of a process that had no rsocket starts afresh.
 * The parent carries on untouched.
 */
static struct rsock **inherited;
static int inherited_len;
static bool parent_had_rsockets;

static void fork_prepare(void)
{
	pthread_mutex_lock(&table_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&table_lock);
}

static void fork_child(void)
{
	for (int i = 0; i < table_len && !parent_had_rsockets; i++)
		parent_had_rsockets = table[i] != NULL;
	if (parent_had_rsockets) {
		/* the memory stays: it is the parent's objects' image */
		inherited = table;
		inherited_len = table_len;
		table = NULL;
		table_len = 0;
	}
	pthread_mutex_unlock(&table_lock);
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_watch(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* Whether @fd is an rsocket this process inherited (rpoll: POLLNVAL). */
bool rs_inherited(int fd)
{
	bool r;

	pthread_mutex_lock(&table_lock);
	r = fd >= 0 && fd < inherited_len && inherited[fd];
	pthread_mutex_unlock(&table_lock);
	return r;
}

/* rclose() of an inherited rsocket: its number goes, nothing is sent. */
static int rs_close_inherited(int fd)
{
	if (!rs_inherited(fd))
		return ERR(EBADF);
	pthread_mutex_lock(&table_lock);
	inherited[fd] = NULL;
	pthread_mutex_unlock(&table_lock);
	close(fd);
	return 0;
}

int rs_set_cloexec_nonblock(int fd, bool nonblock)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -1;
	fl = nonblock ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
	return fcntl(fd, F_SETFL, fl);
}

/* rdma-core's defaults; a listener's sizes pass to what it accepts. */
struct rsock *rs_alloc(const struct rsock *parent)
{
	struct rsock *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	rs->fd = -1;
	pthread_mutex_init(&rs->lock, NULL);
	rs->ctrl_max_seqno = RS_QP_CTRL_SIZE;
	rs->keepalive = -1;
	if (parent) {
		rs->keepalive = parent->keepalive;
		rs->keepalive_time = parent->keepalive_time;
		rs->keepalive_intvl = parent->keepalive_intvl;
		rs->keepalive_cnt = parent->keepalive_cnt;
		rs->domain = parent->domain;
		rs->sbuf_size = parent->sbuf_size;
		rs->rbuf_size = parent->rbuf_size;
		rs->sq_inline = parent->sq_inline;
		rs->sq_size = parent->sq_size;
		rs->rq_size = parent->rq_size;
		rs->target_iomap_size = parent->target_iomap_size;
		rs->so_opts = parent->so_opts;
		rs->tcp_opts = parent->tcp_opts;
	} else {
		rs->sbuf_size = 1 << 17;
		rs->rbuf_size = 1 << 17;
		rs->sq_inline = 64;
		rs->sq_size = 384;
		rs->rq_size = 384;
	}
	return rs;
}

void rs_free(struct rsock *rs)
{
	struct rdma_cm_id *id = rs->cm_id;

	if (id)
		rs_free_iomaps(rs);
	/* every CQ event taken is acknowledged before the CQ can go */
	if (id && id->recv_cq && rs->unack_cqe) {
		ibv_ack_cq_events(id->recv_cq, rs->unack_cqe);
		rs->unack_cqe = 0;
	}
	/* as rdma-core's, it takes the identifier's CQs and channel too */
	if (id && id->qp)
		rdma_destroy_qp(id);
	if (rs->smr)
		ibv_dereg_mr(rs->smr);
	if (rs->rmr)
		ibv_dereg_mr(rs->rmr);
	if (rs->target_mr)
		ibv_dereg_mr(rs->target_mr);
	if (id && id->recv_cq) {
		ibv_destroy_cq(id->recv_cq);
		id->recv_cq = id->send_cq = NULL;
	}
	if (id && id->recv_cq_channel) {
		ibv_destroy_comp_channel(id->recv_cq_channel);
		id->recv_cq_channel = id->send_cq_channel = NULL;
	}
	if (id)
		rdma_destroy_id(id);
	free(rs->sbuf);
	free(rs->rbuf);
	free(rs->target_buf);
	free(rs->rmsg);
	free(rs->remote_iomappings);
	pthread_mutex_destroy(&rs->lock);
	free(rs);
}

/* ---- making and ending rsockets --------------------------------------------- */

int rsocket(int domain, int type, int protocol)
{
	int flags = type & (SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct rsock *rs;

	type &= ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	pthread_once(&fork_once, fork_watch);
	if (parent_had_rsockets)
		return ERR(EOPNOTSUPP);
	if (domain != AF_INET && domain != AF_INET6)
		return ERR(EAFNOSUPPORT);
	if (type != SOCK_STREAM || (protocol && protocol != IPPROTO_TCP))
		return ERR(EOPNOTSUPP); /* UD QPs: not on iWARP */
	rs = rs_alloc(NULL);
	if (!rs)
		return ERR(ENOMEM);
	rs->domain = domain;
	if (rdma_create_id(NULL, &rs->cm_id, rs, RDMA_PS_TCP))
		goto fail;
	rs->cm_id->route.addr.src_addr.sa_family = (sa_family_t)domain;
	rs->fd = rs->cm_id->channel->fd;
	if (flags & SOCK_NONBLOCK) {
		rs->fd_flags |= O_NONBLOCK;
		if (rs_set_cloexec_nonblock(rs->fd, true))
			goto fail;
	}
	if (rs_insert(rs))
		goto fail;
	return rs->fd;
fail:
	{
		int e = errno;

		rs_free(rs);
		return ERR(e);
	}
}

int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rsock *rs = rs_get(socket);
	int ret;

	if (!rs)
		return ERR(EBADF);
	if (!addr || addrlen < sizeof(sa_family_t))
		return ERR(EINVAL);
	if (addr->sa_family != rs->domain)
		return ERR(EAFNOSUPPORT);
	pthread_mutex_lock(&rs->lock);
	if (rs->state != RS_INIT) {
		ret = ERR(EINVAL);
	} else {
		ret = rdma_bind_addr(rs->cm_id, (struct sockaddr *)addr);
		if (!ret)
			rs->state = RS_BOUND;
	}
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

int rlisten(int socket, int backlog)
{
	struct rsock *rs = rs_get(socket);
	int ret = 0;

	if (!rs)
		return ERR(EBADF);
	pthread_mutex_lock(&rs->lock);
	if (rs->state == RS_LISTENING)
		goto out;
	if (rs->state != RS_INIT && rs->state != RS_BOUND) {
		ret = ERR(EINVAL);
		goto out;
	}
	ret = rdma_listen(rs->cm_id, backlog > 0 ? backlog : 1);
	if (!ret)
		rs->state = RS_LISTENING;
out:
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

/*
 * Takes the next connection request and accepts it (a request that is
 * not an rsocket's is refused and the next one awaited); a non-blocking
 * listener answers EAGAIN when none is waiting.
 */
int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsock *ls = rs_get(socket), *rs = NULL;
	int ret;

	if (!ls)
		return ERR(EBADF);
	if (ls->state != RS_LISTENING)
		return ERR(EINVAL);
	do {
		ret = rs_accept_one(ls, &rs);
	} while (ret && errno == EAGAIN && !(ls->fd_flags & O_NONBLOCK));
	if (ret)
		return ret;
	if (addr && addrlen)
		rgetpeername(rs->fd, addr, addrlen);
	return rs->fd;
}

int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rsock *rs = rs_get(socket);
	socklen_t need;
	int ret;

	if (!rs)
		return ERR(EBADF);
	if (!addr)
		return ERR(EFAULT);
	need = addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					   : sizeof(struct sockaddr_in);
	if (addrlen < need)
		return ERR(EINVAL);
	if (addr->sa_family != rs->domain)
		return ERR(EAFNOSUPPORT);
	pthread_mutex_lock(&rs->lock);
	if (rs->state == RS_LISTENING) {
		ret = ERR(EINVAL);
	} else if (rs->state & RS_CONNECTED) {
		ret = ERR(EISCONN);
	} else if (rs->state == RS_CONNECTING) {
		ret = rs_do_connect(rs);
		if (ret && errno == EINPROGRESS)
			errno = EALREADY;
	} else {
		if (rs->state == RS_INIT || rs->state == RS_BOUND)
			memcpy(&rs->cm_id->route.addr.dst_addr, addr, need);
		ret = rs_do_connect(rs);
	}
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

int rshutdown(int socket, int how)
{
	struct rsock *rs = rs_get(socket);
	int ret;

	if (!rs)
		return ERR(EBADF);
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return ERR(EINVAL);
	pthread_mutex_lock(&rs->lock);
	if (!(rs->state & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR)))
		ret = ERR(ENOTCONN);
	else
		ret = rs_shutdown_locked(rs, how);
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

/* Says goodbye to a connected peer (what was sent is delivered) and frees. */
int rclose(int socket)
{
	struct rsock *rs = rs_get(socket);

	if (!rs)
		return rs_close_inherited(socket);
	rs_remove(rs);
	pthread_mutex_lock(&rs->lock);
	if (rs->state & (RS_CONNECTED | RS_DISCONNECTED))
		rs_shutdown_locked(rs, SHUT_RDWR);
	pthread_mutex_unlock(&rs->lock);
	rs_free(rs);
	return 0;
}

/* ---- data ---------------------------------------------------------------------- */

/* A call on a connection still being made takes the connect a step on. */
static int rs_step_connect(struct rsock *rs)
{
	if (!(rs->state & RS_OPENING))
		return 0;
	if (!rs_do_connect(rs))
		return 0;
	if (errno == EINPROGRESS)
		errno = EAGAIN;
	return -1;
}

/*
 * As send(2) on a stream that can carry no more: SIGPIPE to the calling
 * thread (unless the call said MSG_NOSIGNAL), the error still EPIPE when
 * a handler returns.  Raised without the rsocket's lock, so a handler
 * may use it.  rdma-core's rsockets answer ECONNRESET there, no signal.
 */
static void rs_sigpipe(void)
{
	int e = errno;

	raise(SIGPIPE);
	errno = e;
}

static ssize_t rs_sendv(int socket, const struct iovec *iov, int iovcnt,
			int flags)
{
	struct rsock *rs = rs_get(socket);
	ssize_t ret;

	if (!rs)
		return ERR(EBADF);
	if (iovcnt < 0 || (iovcnt && !iov))
		return ERR(EINVAL);
	pthread_mutex_lock(&rs->lock);
	ret = rs_step_connect(rs);
	if (!ret)
		ret = rs_sendv_locked(rs, iov, iovcnt, flags);
	pthread_mutex_unlock(&rs->lock);
	if (ret < 0 && errno == EPIPE && !(flags & MSG_NOSIGNAL))
		rs_sigpipe();
	return ret;
}

ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rs_sendv(socket, &iov, 1, flags);
}

ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
		const struct sockaddr *dest_addr, socklen_t addrlen)
{
	(void)dest_addr; /* a connected stream ignores it, as TCP does */
	(void)addrlen;
	return rsend(socket, buf, len, flags);
}

ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	if (!msg)
		return ERR(EFAULT);
	if (msg->msg_control && msg->msg_controllen)
		return ERR(EOPNOTSUPP);
	return rs_sendv(socket, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return rsend(socket, buf, count, 0);
}

ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	return rs_sendv(socket, iov, iovcnt, 0);
}

ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	struct rsock *rs = rs_get(socket);
	ssize_t ret;

	if (!rs)
		return ERR(EBADF);
	pthread_mutex_lock(&rs->lock);
	ret = rs_step_connect(rs);
	if (!ret)
		ret = rs_recv_locked(rs, buf, len, flags);
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
		  struct sockaddr *src_addr, socklen_t *addrlen)
{
	ssize_t ret = rrecv(socket, buf, len, flags);

	if (ret >= 0 && src_addr && addrlen)
		rgetpeername(socket, src_addr, addrlen);
	return ret;
}

/* Fills the vectors in turn while data is there without waiting again. */
static ssize_t rs_recvv(int socket, const struct iovec *iov, int iovcnt,
			int flags)
{
	ssize_t total = 0;

	if (iovcnt < 0 || (iovcnt && !iov))
		return ERR(EINVAL);
	for (int i = 0; i < iovcnt; i++) {
		ssize_t n;

		if (!iov[i].iov_len)
			continue;
		n = rrecv(socket, iov[i].iov_base, iov[i].iov_len,
			  total ? flags | MSG_DONTWAIT : flags);
		if (n < 0)
			return total ? total : n;
		total += n;
		if ((size_t)n < iov[i].iov_len)
			break;
	}
	return total;
}

ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	if (!msg)
		return ERR(EFAULT);
	if (msg->msg_control && msg->msg_controllen)
		return ERR(EOPNOTSUPP);
	msg->msg_flags = 0;
	return rs_recvv(socket, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

ssize_t rread(int socket, void *buf, size_t count)
{
	return rrecv(socket, buf, count, 0);
}

ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	return rs_recvv(socket, iov, iovcnt, 0);
}

/* ---- names ------------------------------------------------------------------------- */

static int rs_copy_addr(struct sockaddr *dst, socklen_t *len,
			const struct sockaddr *src)
{
	socklen_t size = src->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						    : sizeof(struct sockaddr_in);

	if (!dst || !len)
		return ERR(EFAULT);
	memcpy(dst, src, *len < size ? *len : size);
	*len = size;
	return 0;
}

int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsock *rs = rs_get(socket);

	if (!rs)
		return ERR(EBADF);
	if (!(rs->state & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR)))
		return ERR(ENOTCONN);
	return rs_copy_addr(addr, addrlen, rdma_get_peer_addr(rs->cm_id));
}

int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsock *rs = rs_get(socket);
	struct sockaddr_storage none = { .ss_family = (sa_family_t)0 };
	const struct sockaddr *a;

	if (!rs)
		return ERR(EBADF);
	a = rdma_get_local_addr(rs->cm_id);
	if (a->sa_family != AF_INET && a->sa_family != AF_INET6) {
		none.ss_family = (sa_family_t)rs->domain;
		a = (const struct sockaddr *)&none;
	}
	return rs_copy_addr(addr, addrlen, a);
}
