// SPDX-License-Identifier: MIT
/*
 * rsockets.  Debian's rping, ucmatose and cmtime import rpoll() (their
 * poll helper calls it only in rsocket mode) and every binary is bound
 * at load time, so each call exists.  rsockets over libiwarp are not
 * implemented yet: no descriptor is an rsocket, so rpoll() and rselect()
 * are poll(2) and select(2) on ordinary descriptors, and the calls that
 * make or use an rsocket fail with ENOSYS.
 */
#include <errno.h>
#include <poll.h>
#include <sys/select.h>

#include <rdma/rsocket.h>

#include "compat/rdmacm/cma.h"

int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return poll(fds, nfds, timeout);
}

int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
	    struct timeval *timeout)
{
	return select(nfds, readfds, writefds, exceptfds, timeout);
}

int rsocket(int domain, int type, int protocol)
{
	(void)domain;
	(void)type;
	(void)protocol;
	return ERR(ENOSYS);
}

int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return ERR(ENOSYS);
}

int rlisten(int socket, int backlog)
{
	(void)socket;
	(void)backlog;
	return ERR(ENOSYS);
}

int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return ERR(ENOSYS);
}

int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return ERR(ENOSYS);
}

int rshutdown(int socket, int how)
{
	(void)socket;
	(void)how;
	return ERR(ENOSYS);
}

int rclose(int socket)
{
	(void)socket;
	return ERR(ENOSYS);
}

ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)flags;
	return ERR(ENOSYS);
}

ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
		  struct sockaddr *src_addr, socklen_t *addrlen)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)flags;
	(void)src_addr;
	(void)addrlen;
	return ERR(ENOSYS);
}

ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	(void)socket;
	(void)msg;
	(void)flags;
	return ERR(ENOSYS);
}

ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)flags;
	return ERR(ENOSYS);
}

ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
		const struct sockaddr *dest_addr, socklen_t addrlen)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)flags;
	(void)dest_addr;
	(void)addrlen;
	return ERR(ENOSYS);
}

ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	(void)socket;
	(void)msg;
	(void)flags;
	return ERR(ENOSYS);
}

ssize_t rread(int socket, void *buf, size_t count)
{
	(void)socket;
	(void)buf;
	(void)count;
	return ERR(ENOSYS);
}

ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	(void)socket;
	(void)iov;
	(void)iovcnt;
	return ERR(ENOSYS);
}

ssize_t rwrite(int socket, const void *buf, size_t count)
{
	(void)socket;
	(void)buf;
	(void)count;
	return ERR(ENOSYS);
}

ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	(void)socket;
	(void)iov;
	(void)iovcnt;
	return ERR(ENOSYS);
}

int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return ERR(ENOSYS);
}

int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return ERR(ENOSYS);
}

int rsetsockopt(int socket, int level, int optname, const void *optval,
		socklen_t optlen)
{
	(void)socket;
	(void)level;
	(void)optname;
	(void)optval;
	(void)optlen;
	return ERR(ENOSYS);
}

int rgetsockopt(int socket, int level, int optname, void *optval,
		socklen_t *optlen)
{
	(void)socket;
	(void)level;
	(void)optname;
	(void)optval;
	(void)optlen;
	return ERR(ENOSYS);
}

int rfcntl(int socket, int cmd, ...)
{
	(void)socket;
	(void)cmd;
	return ERR(ENOSYS);
}

off_t riomap(int socket, void *buf, size_t len, int prot, int flags,
	     off_t offset)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)prot;
	(void)flags;
	(void)offset;
	return ERR(ENOSYS);
}

int riounmap(int socket, void *buf, size_t len)
{
	(void)socket;
	(void)buf;
	(void)len;
	return ERR(ENOSYS);
}

size_t riowrite(int socket, const void *buf, size_t count, off_t offset,
		int flags)
{
	(void)socket;
	(void)buf;
	(void)count;
	(void)offset;
	(void)flags;
	errno = ENOSYS;
	return (size_t)-1;
}
