// SPDX-License-Identifier: MIT
/*
 * The transport's sockets and what it asks of them, apart from moving
 * octets: names resolved to addresses, sockets made by the system call
 * itself, the options set on them (TCP_NODELAY, the dead-peer timeouts,
 * the receive window) and what is read back from the kernel (addresses,
 * MSS, path MTU, how long the peer has been silent, what it has not
 * acknowledged yet), and the wait for those acknowledgements before a
 * socket closes.  None of it is on the data path; transport.c moves the
 * octets.
 */
#include <errno.h>
#include <linux/sockios.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lib/error.h"
#include "lib/tp_internal.h"
#include "lib/transport.h"

/*
 * A name that resolves to nothing says so, rather than borrowing the
 * words of an errno; a failure of the system itself keeps its errno.
 */
static int resolve_error(int rc)
{
	if (rc == EAI_SYSTEM)
		return -errno;
	if (rc == EAI_MEMORY)
		return -ENOMEM;
	return -IW_EUNRESOLVED;
}

/* Host names, IPv4 and IPv6 literals; NULL host: any (passive) or loopback. */
int tp_resolve(const char *host, const char *port, bool passive,
	       struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = passive ? AI_PASSIVE : 0,
	};
	struct addrinfo *res;
	int rc = getaddrinfo(host, port, &hints, &res);

	if (rc)
		return resolve_error(rc);
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* Every address to connect to, in the order getaddrinfo() gives them. */
int tp_resolve_all(const char *host, const char *port, struct tp_addrs *a)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
	};
	struct addrinfo *res;
	int rc = getaddrinfo(host, port, &hints, &res);

	if (rc)
		return resolve_error(rc);
	a->n = 0;
	for (struct addrinfo *r = res; r && a->n < TP_MAX_ADDRS; r = r->ai_next) {
		if (r->ai_addrlen > sizeof(a->ss[0]))
			continue;
		memcpy(&a->ss[a->n], r->ai_addr, r->ai_addrlen);
		a->len[a->n++] = r->ai_addrlen;
	}
	freeaddrinfo(res);
	return a->n ? 0 : -IW_EUNRESOLVED;
}

/* The connection's own address and its peer's, as the socket has them. */
void tp_fill_addrs(struct tp_conn *c)
{
	socklen_t l = sizeof(c->local);

	getsockname(c->fd, (struct sockaddr *)&c->local, &l);
	l = sizeof(c->peer);
	getpeername(c->fd, (struct sockaddr *)&c->peer, &l);
}

/*
 * The connection's MSS as TCP now uses it (1460 if it will not say).
 * It can grow: TCP holds it to half the largest window the peer has
 * offered, and loopback starts with a 64 KiB window on a 64 KiB MTU.
 */
uint32_t tp_mss(const struct tp_conn *c)
{
	int mss = 0;
	socklen_t l = sizeof(mss);

	if (getsockopt(c->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &l) || mss <= 0)
		return 1460;
	return (uint32_t)mss;
}

/*
 * How much one sendmsg() hands TCP on a connection whose MSS is @mss.
 * With jumbo frames one GSO packet (64 KiB less Linux's header room)
 * holds only a few segments, and a write of several packets left its
 * last, short one waiting until the write ended, and the peer with it:
 * there a write carries one packet's whole segments.  On a veth pair at
 * MTU 9000 that took 64 KiB Send bandwidth from 17 to 51-57 Gbit/s and
 * a 64 KiB ping-pong from 29 to 16.5 us.  With 1448-octet segments, 45
 * to a packet, the same cut cost 64 KiB bandwidth 15 % in system calls;
 * on loopback (one segment of 32 or 64 KiB to a packet) its results
 * were mixed (doc/performance.md): both keep writes of TP_MAX_WRITE.
 */
#define TP_GSO_PACKET 65536
#define TP_GSO_HEADROOM 320 /* Linux's MAX_TCP_HEADER on x86-64 */
#define TP_JUMBO_MSS_MIN 4096
#define TP_JUMBO_MSS_MAX 16384

size_t tp_write_size(uint32_t mss)
{
	if (mss < TP_JUMBO_MSS_MIN || mss >= TP_JUMBO_MSS_MAX)
		return TP_MAX_WRITE;
	return (size_t)mss * ((TP_GSO_PACKET - TP_GSO_HEADROOM) / mss);
}

/* The connection's MSS is now @mss: its writes follow (tp_write_size()). */
void tp_follow_mss(struct tp_conn *c, uint32_t mss)
{
	c->tx_write = tp_write_size(mss);
}

/*
 * What the MSS may grow to: the path MTU less the IP and TCP headers
 * without options; 0 when the MTU is not known.
 */
uint32_t tp_mss_bound(const struct tp_conn *c)
{
	bool v6 = c->local.ss_family == AF_INET6;
	uint32_t hdrs = v6 ? 60 : 40;
	int mtu = 0;
	socklen_t l = sizeof(mtu);

	if (getsockopt(c->fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP,
		       v6 ? IPV6_MTU : IP_MTU, &mtu, &l) ||
	    mtu <= (int)hdrs)
		return 0;
	return (uint32_t)mtu - hdrs;
}

/*
 * The receive window a connection that carries RDMA traffic starts from.
 * Linux sizes a socket's receive buffer by what the reader takes in one
 * round trip, which it measures at a few microseconds on a short path.
 * Direct placement takes one FPDU per read, and the buffer then settles
 * near 700 KB: a bulk stream fills that window while its reader wakes
 * up, and stays window-limited.  A millisecond's worth at 8 Gbit/s, or
 * 100 us at 80, covers the wakeup.
 */
#define TP_RX_WINDOW_FLOOR (1024 * 1024)

/*
 * Raises the socket's receive buffer to hold TP_RX_WINDOW_FLOOR.
 * SO_RCVLOWAT does so without fixing its size as SO_RCVBUF would, so
 * autotuning still grows it on a long path (a kernel that does not raise
 * the buffer for it leaves the buffer as it was); set back to one octet,
 * it wakes the reader as before.
 */
int tp_open_rx_window(struct tp_conn *c)
{
	int floor = TP_RX_WINDOW_FLOOR, one = 1;

	setsockopt(c->fd, SOL_SOCKET, SO_RCVLOWAT, &floor, sizeof(floor));
	if (setsockopt(c->fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof(one)))
		return -errno;
	return 0;
}

/* What every connection's socket needs: FPDUs leave as they are handed over. */
int tp_socket_setup(int fd)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		return -errno;
	return 0;
}

/*
 * A peer that vanishes without a FIN or RST (power lost, cable pulled,
 * partition) is noticed by the socket failing with ETIMEDOUT: with data
 * in flight once nothing has been acknowledged for ack_timeout_ms
 * (TCP_USER_TIMEOUT, RFC 5482); with nothing in flight once keepalive
 * probes (RFC 1122 section 4.2.3.6) go unanswered.  On Linux a set
 * TCP_USER_TIMEOUT also ends an idle connection: at the first probe that
 * finds it silent that long, the probe count then counting for nothing.
 */
int tp_apply_timeouts(int fd, const struct tp_timeouts *t)
{
	unsigned int ms = t->ack_timeout_ms;
	int on = t->keepalive_idle_s != 0;

	if (setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms)) ||
	    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)))
		return -errno;
	if (on) {
		int idle = (int)t->keepalive_idle_s;
		int intvl = (int)t->keepalive_interval_s;
		int cnt = (int)t->keepalive_count;

		if (setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle,
			       sizeof(idle)) ||
		    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl,
			       sizeof(intvl)) ||
		    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)))
			return -errno;
	}
	return 0;
}

/* Gives the connection's socket, and any it connects from later, @t. */
int tp_set_timeouts(struct tp_conn *c, const struct tp_timeouts *t)
{
	c->timeouts = *t;
	c->has_timeouts = true;
	return tp_apply_timeouts(c->fd, t);
}

/*
 * How long the peer has been silent, as TCP counts it: since the last
 * segment that came from it, an acknowledgement or data (a receiver may
 * have had nothing of its own acknowledged for much longer).
 */
int64_t tp_silence_ms(const struct tp_conn *c)
{
	struct tcp_info ti;
	socklen_t l = sizeof(ti);

	if (getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &l) ||
	    l < offsetof(struct tcp_info, tcpi_last_ack_recv) +
			sizeof(ti.tcpi_last_ack_recv))
		return -1;
	return ti.tcpi_last_data_recv < ti.tcpi_last_ack_recv
		       ? ti.tcpi_last_data_recv
		       : ti.tcpi_last_ack_recv;
}

/*
 * Octets written and not yet acknowledged by the peer.  After shutdown()
 * the kernel counts our FIN among them until the peer acknowledges it; a
 * FIN is nothing to wait for.
 */
static int unacked_octets(int fd)
{
	struct tcp_info ti;
	socklen_t l = sizeof(ti);
	int q;

	if (ioctl(fd, SIOCOUTQ, &q) ||
	    getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &l))
		return 0;
	if (ti.tcpi_state == TCP_FIN_WAIT1 || ti.tcpi_state == TCP_CLOSING ||
	    ti.tcpi_state == TCP_LAST_ACK)
		q--;
	return q > 0 ? q : 0;
}

/*
 * Reads and drops what the peer sent; false once its stream ended or
 * failed.  A few reads a round: a peer that sends on and on must not
 * hold the caller past its bound.
 */
static bool drop_incoming(int fd)
{
	uint8_t sink[8192];

	for (int i = 0; i < 32; i++) {
		ssize_t r = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);

		if (r <= 0)
			return r < 0 && (errno == EAGAIN || errno == EINTR);
	}
	return true;
}

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Starts waiting for the peer to acknowledge what @fd holds. */
void tp_acks_start(struct tp_acks *a, int fd)
{
	a->start_ms = a->progress_ms = now_ms();
	a->unacked = unacked_octets(fd);
	a->look_ms = 1;
}

/*
 * Whether there is still something unacknowledged worth waiting for:
 * false once everything is acknowledged, or the peer has acknowledged
 * nothing for TP_LINGER_STALL_MS, or after TP_LINGER_MAX_MS.  The looks
 * come further apart (a->look_ms) while nothing changes: an
 * acknowledgement wakes nobody.
 */
bool tp_acks_wait_more(struct tp_acks *a, int fd)
{
	int64_t t = now_ms();
	int n = unacked_octets(fd);

	if (n < a->unacked) {
		a->unacked = n;
		a->progress_ms = t;
		a->look_ms = 1;
	} else if (a->look_ms < 16) {
		a->look_ms *= 2;
	}
	return a->unacked > 0 && t - a->progress_ms < TP_LINGER_STALL_MS &&
	       t - a->start_ms < TP_LINGER_MAX_MS;
}

/*
 * A socket closed while the peer still sends answers it with a reset, and
 * the reset drops what of ours the peer has not acknowledged: the end of
 * a stream whose sends the application saw complete (they complete once
 * the kernel holds their octets).  So the socket stays open while the
 * peer acknowledges, and what it sends meanwhile is read and dropped, as
 * nobody is left to take it.  A socket with nothing unacknowledged
 * returns at once.
 */
void tp_socket_linger(int fd)
{
	struct tp_acks a;
	bool reading = true;

	tp_acks_start(&a, fd);
	while (a.unacked > 0) {
		struct pollfd p = { reading ? fd : -1, POLLIN, 0 };

		if (poll(&p, 1, a.look_ms) > 0 && (p.revents & POLLERR))
			return;
		if (p.revents & (POLLIN | POLLHUP))
			reading = drop_incoming(fd);
		if (!tp_acks_wait_more(&a, fd))
			return;
	}
}

/*
 * A TCP socket by the system call itself: a preloaded library that moves
 * a program's sockets onto RDMA (rdma-core's librspreload.so, whose
 * rsockets may run on this very stack) must not take libiwarp's own.
 */
int tp_tcp_socket(int family)
{
	return (int)syscall(SYS_socket, family,
			    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

/* A socket to connect from, set up as tp_socket_setup() says; or -errno. */
int tp_connect_socket(int family)
{
	int fd = tp_tcp_socket(family);
	int rc;

	if (fd < 0)
		return -errno;
	rc = tp_socket_setup(fd);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}