// SPDX-License-Identifier: MIT
/*
 * rsockets over libiwarp's librdmacm, both ends in this process on
 * 127.0.0.1: the edges of the socket calls that rdma-core's example
 * programs do not reach.  Partial sends and receives with the bytes
 * checked in order, zero-length calls, rpoll and rselect timeouts over
 * several rsockets and a pipe, shutdown of one direction, a close while
 * the peer is sending, the errors sockets give, and many rsockets at once.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "testutil.h"

struct conn {
	int c, s; /* the connecting and the accepted end */
};

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* A listener on 127.0.0.1 at a port the stack chose. */
static int listener(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int ls = rsocket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(ls, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(rbind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(rlisten(ls, 64), 0);
	ck_assert_int_eq(rgetsockname(ls, (struct sockaddr *)&a, &len), 0);
	ck_assert_uint_ne(a.sin_port, 0);
	*port = ntohs(a.sin_port);
	return ls;
}

static void *accept_thread(void *arg)
{
	int *fds = arg; /* listener in, accepted out */

	fds[1] = raccept(fds[0], NULL, NULL);
	return NULL;
}

static struct conn connect_pair(int ls, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port) };
	int fds[2] = { ls, -1 };
	struct conn k;
	pthread_t t;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(pthread_create(&t, NULL, accept_thread, fds), 0);
	k.c = rsocket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(k.c, 0);
	ck_assert_int_eq(rconnect(k.c, (struct sockaddr *)&a, sizeof(a)), 0);
	pthread_join(t, NULL);
	k.s = fds[1];
	ck_assert_int_ge(k.s, 0);
	return k;
}

static struct conn one_pair(void)
{
	uint16_t port;
	int ls = listener(&port);
	struct conn k = connect_pair(ls, port);

	ck_assert_int_eq(rclose(ls), 0);
	return k;
}

/* The next strlen(@want) octets of @fd, waited for, are @want. */
static void expect_text(int fd, const char *want)
{
	char got[64];
	size_t n = strlen(want);

	ck_assert_uint_le(n, sizeof(got));
	ck_assert_int_eq(rrecv(fd, got, n, MSG_WAITALL), (ssize_t)n);
	ck_assert_int_eq(memcmp(got, want, n), 0);
}

static void nonblock(int fd)
{
	ck_assert_int_eq(rfcntl(fd, F_SETFL, rfcntl(fd, F_GETFL) | O_NONBLOCK), 0);
	ck_assert(rfcntl(fd, F_GETFL) & O_NONBLOCK);
}

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 131 + (i >> 9));
}

/*
 * 6 MB through a non-blocking pair from one thread: the sender hands over
 * what fits (never all of it at once, as the buffers are smaller), the
 * receiver takes odd-sized pieces, and every byte comes out in order.
 */
START_TEST(partial_sends_and_receives_keep_the_bytes_in_order)
{
	const size_t total = 6u << 20;
	struct conn k = one_pair();
	uint8_t *src = malloc(total), *dst = malloc(total);
	size_t sent = 0, got = 0, piece = 1;
	bool partial = false, again = false;
	double t0 = now_ms();

	for (size_t i = 0; i < total; i++)
		src[i] = pattern(i);
	nonblock(k.c);
	nonblock(k.s);
	while (got < total) {
		require(now_ms() - t0 < 30000, "stalled at %zu of %zu", got, total);
		if (sent < total) {
			ssize_t n = rsend(k.c, src + sent, total - sent, 0);

			if (n < 0) {
				ck_assert_int_eq(errno, EAGAIN);
				again = true;
			} else {
				ck_assert_int_gt(n, 0);
				partial |= (size_t)n < total - sent;
				sent += (size_t)n;
			}
		}
		ssize_t r = rrecv(k.s, dst + got, piece < total - got ? piece : total - got, 0);

		if (r < 0) {
			require(errno == EAGAIN, "rrecv: %s", strerror(errno));
		} else {
			require(r > 0, "end of stream at %zu", got);
			got += (size_t)r;
		}
		piece = piece * 3 + 7;
		if (piece > 300000)
			piece = 1;
	}
	ck_assert(partial);
	ck_assert(again);
	ck_assert_int_eq(memcmp(src, dst, total), 0);
	/* nothing more: a non-blocking receive says so */
	errno = 0;
	ck_assert_int_eq(rrecv(k.s, dst, 1, 0), -1);
	ck_assert_int_eq(errno, EAGAIN);
	rclose(k.c);
	rclose(k.s);
	free(src);
	free(dst);
}
END_TEST

/* MSG_PEEK leaves the bytes; readv/writev split across vectors. */
START_TEST(peek_and_vectors)
{
	struct conn k = one_pair();
	char a[3] = "ab", b[5] = "cdef", out[16] = { 0 };
	struct iovec wv[2] = { { a, 2 }, { b, 4 } };
	struct iovec rv[2] = { { out, 1 }, { out + 1, 10 } };
	ssize_t n = 0;

	ck_assert_int_eq(rwritev(k.c, wv, 2), 6);
	ck_assert_int_eq(rrecv(k.s, out, 3, MSG_PEEK | MSG_WAITALL), 3);
	ck_assert_int_eq(memcmp(out, "abc", 3), 0);
	memset(out, 0, sizeof(out));
	while (n < 6) {
		ssize_t r = rreadv(k.s, rv, 2);

		ck_assert_int_gt(r, 0);
		n += r;
		rv[0].iov_base = out + n;
		rv[0].iov_len = 1;
		rv[1].iov_base = out + n + 1;
	}
	ck_assert_str_eq(out, "abcdef");
	rclose(k.c);
	rclose(k.s);
}
END_TEST

/* Zero octets: nothing goes on the wire and nothing waits. */
START_TEST(zero_length_calls_return_at_once)
{
	struct conn k = one_pair();
	char c = 0;
	double t0;

	ck_assert_int_eq(rsend(k.c, "", 0, 0), 0);
	t0 = now_ms();
	ck_assert_int_eq(rrecv(k.s, &c, 0, 0), 0);
	ck_assert_double_lt(now_ms() - t0, 1000);
	/* the zero-length send left nothing for the peer */
	nonblock(k.s);
	errno = 0;
	ck_assert_int_eq(rrecv(k.s, &c, 1, 0), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_eq(rsend(k.c, "z", 1, 0), 1);
	{
		struct pollfd f = { .fd = k.s, .events = POLLIN };

		ck_assert_int_eq(rpoll(&f, 1, 5000), 1);
	}
	ck_assert_int_eq(rrecv(k.s, &c, 1, 0), 1);
	ck_assert_int_eq(c, 'z');
	rclose(k.c);
	rclose(k.s);
}
END_TEST

/*
 * rpoll over three connections and a pipe: the timeout runs out when
 * nothing comes; then exactly the descriptors with news report it.
 */
START_TEST(rpoll_times_out_and_reports_only_what_is_ready)
{
	uint16_t port;
	int ls = listener(&port), p[2];
	struct conn k[3];
	struct pollfd f[4];
	char buf[8];
	double t0, dt;

	for (int i = 0; i < 3; i++)
		k[i] = connect_pair(ls, port);
	ck_assert_int_eq(pipe(p), 0);
	for (int i = 0; i < 3; i++)
		f[i] = (struct pollfd){ .fd = k[i].s, .events = POLLIN };
	f[3] = (struct pollfd){ .fd = p[0], .events = POLLIN };

	t0 = now_ms();
	ck_assert_int_eq(rpoll(f, 4, 0), 0);
	ck_assert_double_lt(now_ms() - t0, 500);
	t0 = now_ms();
	ck_assert_int_eq(rpoll(f, 4, 300), 0);
	dt = now_ms() - t0;
	ck_assert_double_ge(dt, 250);
	ck_assert_double_lt(dt, 5000);

	ck_assert_int_eq(rsend(k[1].c, "x", 1, 0), 1);
	ck_assert_int_eq(rpoll(f, 4, 5000), 1);
	ck_assert_int_eq(f[0].revents, 0);
	ck_assert_int_eq(f[1].revents, POLLIN);
	ck_assert_int_eq(f[2].revents, 0);
	ck_assert_int_eq(f[3].revents, 0);
	ck_assert_int_eq(write(p[1], "y", 1), 1);
	ck_assert_int_eq(rsend(k[2].c, "z", 1, 0), 1);
	t0 = now_ms();
	while (rpoll(f, 4, 5000) < 3)
		require(now_ms() - t0 < 5000, "not all ready");
	ck_assert(f[1].revents & POLLIN);
	ck_assert(f[2].revents & POLLIN);
	ck_assert(f[3].revents & POLLIN);
	ck_assert_int_eq(f[0].revents, 0);
	ck_assert_int_eq(rrecv(k[1].s, buf, sizeof(buf), 0), 1);
	ck_assert_int_eq(rrecv(k[2].s, buf, sizeof(buf), 0), 1);
	ck_assert_int_eq(read(p[0], buf, 1), 1);
	ck_assert_int_eq(rpoll(f, 4, 50), 0);

	/* a connected rsocket with room to send is writable */
	f[0].events = POLLOUT;
	ck_assert_int_eq(rpoll(f, 1, 1000), 1);
	ck_assert_int_eq(f[0].revents, POLLOUT);

	/* rselect sees the same */
	{
		fd_set r;
		struct timeval tv = { 0, 200000 };
		int max = p[0];

		FD_ZERO(&r);
		for (int i = 0; i < 3; i++) {
			FD_SET(k[i].s, &r);
			if (k[i].s > max)
				max = k[i].s;
		}
		FD_SET(p[0], &r);
		t0 = now_ms();
		ck_assert_int_eq(rselect(max + 1, &r, NULL, NULL, &tv), 0);
		ck_assert_double_ge(now_ms() - t0, 150);
		FD_ZERO(&r);
		for (int i = 0; i < 3; i++)
			FD_SET(k[i].s, &r);
		FD_SET(p[0], &r);
		tv = (struct timeval){ 5, 0 };
		ck_assert_int_eq(rsend(k[0].c, "w", 1, 0), 1);
		ck_assert_int_eq(rselect(max + 1, &r, NULL, NULL, &tv), 1);
		ck_assert(FD_ISSET(k[0].s, &r));
		ck_assert(!FD_ISSET(k[1].s, &r));
		ck_assert(!FD_ISSET(p[0], &r));
	}
	for (int i = 0; i < 3; i++) {
		rclose(k[i].c);
		rclose(k[i].s);
	}
	rclose(ls);
	close(p[0]);
	close(p[1]);
}
END_TEST

/* SHUT_WR: the peer reads the data, then the end; the other way still works. */
START_TEST(shutdown_of_one_direction)
{
	struct conn k = one_pair();
	char buf[16];
	struct pollfd f = { .events = POLLIN };

	ck_assert_int_eq(rsend(k.c, "last", 4, 0), 4);
	ck_assert_int_eq(rshutdown(k.c, SHUT_WR), 0);
	expect_text(k.s, "last");
	ck_assert_int_eq(rrecv(k.s, buf, sizeof(buf), 0), 0);
	errno = 0;
	ck_assert_int_eq(rsend(k.c, "x", 1, MSG_NOSIGNAL), -1);
	ck_assert_int_eq(errno, EPIPE);
	ck_assert_int_eq(rsend(k.s, "back", 4, 0), 4);
	f.fd = k.c;
	ck_assert_int_eq(rpoll(&f, 1, 5000), 1);
	ck_assert(f.revents & POLLIN);
	expect_text(k.c, "back");
	rclose(k.s);
	ck_assert_int_eq(rrecv(k.c, buf, sizeof(buf), 0), 0);
	rclose(k.c);
}
END_TEST

static void *send_forever(void *arg)
{
	int fd = *(int *)arg;
	static uint8_t buf[65536];
	intptr_t err = 0;

	for (;;) {
		ssize_t n = rsend(fd, buf, sizeof(buf), MSG_NOSIGNAL);

		if (n < 0) {
			err = errno;
			break;
		}
	}
	return (void *)err;
}

/* A receiver that closes mid-stream stops a blocked sender with an error. */
START_TEST(close_while_the_peer_sends)
{
	struct conn k = one_pair();
	uint8_t buf[4096];
	pthread_t t;
	void *err;
	double t0;

	ck_assert_int_eq(pthread_create(&t, NULL, send_forever, &k.c), 0);
	ck_assert_int_eq(rrecv(k.s, buf, sizeof(buf), MSG_WAITALL), (ssize_t)sizeof(buf));
	usleep(100000); /* the sender fills the buffers and blocks */
	t0 = now_ms();
	ck_assert_int_eq(rclose(k.s), 0);
	pthread_join(t, &err);
	ck_assert_double_lt(now_ms() - t0, 20000);
	ck_assert_msg((intptr_t)err == EPIPE || (intptr_t)err == ECONNRESET,
		      "sender stopped with %s", strerror((int)(intptr_t)err));
	rclose(k.c);
}
END_TEST

#define SEND_AND_CLOSE_LEN (4u << 20)

static uint8_t stream_octet(size_t i)
{
	return (uint8_t)(i * 7 + (i >> 12));
}

static void *send_and_close(void *arg)
{
	int fd = *(int *)arg;
	uint8_t *buf = malloc(SEND_AND_CLOSE_LEN);
	intptr_t err = 0;

	for (size_t i = 0; i < SEND_AND_CLOSE_LEN; i++)
		buf[i] = stream_octet(i);
	for (size_t done = 0; done < SEND_AND_CLOSE_LEN && !err;) {
		ssize_t n = rsend(fd, buf + done, SEND_AND_CLOSE_LEN - done, 0);

		if (n < 0)
			err = errno;
		else
			done += (size_t)n;
	}
	if (rclose(fd))
		err = errno;
	free(buf);
	return (void *)err;
}

/*
 * A peer that sends and closes at once, before we read: we still read
 * every octet it sent, and then the end of the stream, as from a TCP
 * socket.  Its close must not end the connection under what we had yet
 * to read, nor under the credits we send back while reading.
 */
START_TEST(a_peer_that_sends_and_closes_leaves_every_octet_to_read)
{
	static uint8_t buf[65536];
	struct conn k = one_pair();
	size_t got = 0;
	pthread_t t;
	ssize_t n;
	void *err;

	ck_assert_int_eq(pthread_create(&t, NULL, send_and_close, &k.s), 0);
	usleep(100000);
	while ((n = rrecv(k.c, buf, sizeof(buf), 0)) > 0) {
		for (ssize_t i = 0; i < n; i++)
			ck_assert_uint_eq(buf[i], stream_octet(got + (size_t)i));
		got += (size_t)n;
	}
	ck_assert_msg(n == 0, "the stream ended with %s after %zu octets",
		      strerror(errno), got);
	ck_assert_uint_eq(got, SEND_AND_CLOSE_LEN);
	pthread_join(t, &err);
	ck_assert_msg(!err, "the sender failed: %s", strerror((int)(intptr_t)err));
	rclose(k.c);
}
END_TEST

/* What sockets answer: refused, would block, not connected, bad numbers. */
START_TEST(errors_as_sockets_give_them)
{
	uint16_t port;
	int ls = listener(&port), fd;
	struct sockaddr_in a = { .sin_family = AF_INET }, b;
	socklen_t len = sizeof(b);
	char c;

	/* the listener is closed: nothing listens on the port now */
	rclose(ls);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(port);
	fd = rsocket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	errno = 0;
	ck_assert_int_eq(rconnect(fd, (struct sockaddr *)&a, sizeof(a)), -1);
	ck_assert_int_eq(errno, ECONNREFUSED);
	rclose(fd);

	fd = rsocket(AF_INET, SOCK_STREAM, 0);
	errno = 0;
	ck_assert_int_eq(rrecv(fd, &c, 1, 0), -1);
	ck_assert_int_eq(errno, ENOTCONN);
	errno = 0;
	ck_assert_int_eq(rgetpeername(fd, (struct sockaddr *)&b, &len), -1);
	ck_assert_int_eq(errno, ENOTCONN);
	rclose(fd);
	errno = 0;
	ck_assert_int_eq(rsend(fd, "x", 1, 0), -1);
	ck_assert_int_eq(errno, EBADF);
	errno = 0;
	ck_assert_int_eq(rsocket(AF_INET, SOCK_DGRAM, 0), -1);
	ck_assert_int_ne(errno, 0);

	/* a non-blocking listener with nobody calling */
	ls = listener(&port);
	nonblock(ls);
	errno = 0;
	ck_assert_int_eq(raccept(ls, NULL, NULL), -1);
	ck_assert_int_eq(errno, EAGAIN);
	rclose(ls);
}
END_TEST

static volatile sig_atomic_t sigpipes;

static void count_sigpipe(int sig)
{
	(void)sig;
	sigpipes++;
}

/*
 * As send(2) on a stream whose peer has gone: EPIPE, with SIGPIPE to the
 * caller unless the call says MSG_NOSIGNAL (rdma-core's rsockets answer
 * ECONNRESET there, and raise nothing).
 */
START_TEST(send_after_the_peer_closed_raises_sigpipe_as_send_does)
{
	struct conn k = one_pair();
	struct sigaction sa = { .sa_handler = count_sigpipe };
	char b;

	ck_assert_int_eq(sigaction(SIGPIPE, &sa, NULL), 0);
	/*
	 * A round trip first: the credits each end hands out at its first
	 * receive have arrived.  (A peer that closes with them unread has
	 * its TCP reset the connection, and ECONNRESET comes first.)
	 */
	ck_assert_int_eq(rsend(k.s, "a", 1, 0), 1);
	ck_assert_int_eq(rrecv(k.c, &b, 1, 0), 1);
	ck_assert_int_eq(rsend(k.c, "b", 1, 0), 1);
	ck_assert_int_eq(rrecv(k.s, &b, 1, 0), 1);
	ck_assert_int_eq(rclose(k.s), 0);
	/* its goodbye: the end of the stream (nothing was in flight) */
	ck_assert_int_eq(rrecv(k.c, &b, 1, 0), 0);
	errno = 0;
	ck_assert_int_eq(rsend(k.c, "x", 1, MSG_NOSIGNAL), -1);
	ck_assert_int_eq(errno, EPIPE);
	ck_assert_int_eq(sigpipes, 0);
	errno = 0;
	ck_assert_int_eq(rsend(k.c, "x", 1, 0), -1);
	ck_assert_int_eq(errno, EPIPE);
	ck_assert_int_eq(sigpipes, 1);
	errno = 0;
	ck_assert_int_eq(rwrite(k.c, "x", 1), -1);
	ck_assert_int_eq(errno, EPIPE);
	ck_assert_int_eq(sigpipes, 2);
	errno = 0;
	ck_assert_int_eq(rsend(k.c, "x", 1, MSG_NOSIGNAL | MSG_DONTWAIT), -1);
	ck_assert_int_eq(errno, EPIPE);
	ck_assert_int_eq(sigpipes, 2);
	rclose(k.c);
}
END_TEST

/*
 * libiwarp's own TCP connection under rsocket @fd: the socket of this
 * process whose two ends are the rsocket's, or -1.
 */
static int tcp_under(int fd)
{
	struct sockaddr_storage l, p, tl, tp;
	socklen_t len = sizeof(l);

	ck_assert_int_eq(rgetsockname(fd, (struct sockaddr *)&l, &len), 0);
	len = sizeof(p);
	ck_assert_int_eq(rgetpeername(fd, (struct sockaddr *)&p, &len), 0);
	for (int t = 3; t < 1024; t++) {
		socklen_t a = sizeof(tl), b = sizeof(tp);
		int type = 0;
		socklen_t tlen = sizeof(type);

		if (getsockopt(t, SOL_SOCKET, SO_TYPE, &type, &tlen) ||
		    type != SOCK_STREAM ||
		    getsockname(t, (struct sockaddr *)&tl, &a) ||
		    getpeername(t, (struct sockaddr *)&tp, &b))
			continue;
		if (!memcmp(&((struct sockaddr_in *)&tl)->sin_port,
			    &((struct sockaddr_in *)&l)->sin_port, 2) &&
		    !memcmp(&((struct sockaddr_in *)&tp)->sin_port,
			    &((struct sockaddr_in *)&p)->sin_port, 2))
			return t;
	}
	return -1;
}

static int sockopt_of(int fd, int level, int name)
{
	int v = -1;
	socklen_t len = sizeof(v);

	ck_assert_int_eq(getsockopt(fd, level, name, &v, &len), 0);
	return v;
}

static int rsockopt_of(int fd, int level, int name)
{
	int v = -1;
	socklen_t len = sizeof(v);

	ck_assert_int_eq(rgetsockopt(fd, level, name, &v, &len), 0);
	return v;
}

static void set_ropt(int fd, int level, int name, int v)
{
	ck_assert_int_eq(rsetsockopt(fd, level, name, &v, sizeof(v)), 0);
}

/*
 * SO_KEEPALIVE and TCP_KEEPIDLE/INTVL/CNT reach the TCP connection that
 * carries the rsocket, set before the connection (as rstream -k does)
 * or while it runs; SO_KEEPALIVE off turns the probes off.
 */
START_TEST(keepalive_options_reach_the_connection_below)
{
	uint16_t port;
	int ls = listener(&port), tc, ts;
	struct conn k;

	/* what the listener is given, what it accepts has */
	set_ropt(ls, SOL_SOCKET, SO_KEEPALIVE, 1);
	set_ropt(ls, IPPROTO_TCP, TCP_KEEPIDLE, 7);
	k = connect_pair(ls, port);
	rclose(ls);
	ts = tcp_under(k.s);
	ck_assert_int_ge(ts, 0);
	ck_assert_int_eq(sockopt_of(ts, SOL_SOCKET, SO_KEEPALIVE), 1);
	ck_assert_int_eq(sockopt_of(ts, IPPROTO_TCP, TCP_KEEPIDLE), 7);
	ck_assert_int_eq(rsockopt_of(k.s, IPPROTO_TCP, TCP_KEEPIDLE), 7);

	/* while connected: each option as it is set, and off */
	tc = tcp_under(k.c);
	ck_assert_int_ge(tc, 0);
	ck_assert_int_ne(tc, ts);
	set_ropt(k.c, SOL_SOCKET, SO_KEEPALIVE, 1);
	set_ropt(k.c, IPPROTO_TCP, TCP_KEEPIDLE, 3);
	set_ropt(k.c, IPPROTO_TCP, TCP_KEEPINTVL, 5);
	set_ropt(k.c, IPPROTO_TCP, TCP_KEEPCNT, 4);
	ck_assert_int_eq(sockopt_of(tc, SOL_SOCKET, SO_KEEPALIVE), 1);
	ck_assert_int_eq(sockopt_of(tc, IPPROTO_TCP, TCP_KEEPIDLE), 3);
	ck_assert_int_eq(sockopt_of(tc, IPPROTO_TCP, TCP_KEEPINTVL), 5);
	ck_assert_int_eq(sockopt_of(tc, IPPROTO_TCP, TCP_KEEPCNT), 4);
	ck_assert_int_eq(rsockopt_of(k.c, IPPROTO_TCP, TCP_KEEPINTVL), 5);
	ck_assert_int_eq(rsockopt_of(k.c, IPPROTO_TCP, TCP_KEEPCNT), 4);
	set_ropt(k.c, SOL_SOCKET, SO_KEEPALIVE, 0);
	ck_assert_int_eq(sockopt_of(tc, SOL_SOCKET, SO_KEEPALIVE), 0);
	ck_assert_int_eq(rsockopt_of(k.c, SOL_SOCKET, SO_KEEPALIVE), 0);
	errno = 0;
	ck_assert_int_eq(rsetsockopt(k.c, IPPROTO_TCP, TCP_KEEPCNT, &(int){ 0 },
				     sizeof(int)), -1);
	ck_assert_int_eq(errno, EINVAL);

	/* and the stream still carries data both ways */
	ck_assert_int_eq(rsend(k.c, "ping", 4, 0), 4);
	expect_text(k.s, "ping");
	rclose(k.c);
	rclose(k.s);
}
END_TEST

/*
 * fork(): the child cannot use what it inherited (EBADF, and no new
 * rsocket: EOPNOTSUPP), and closing it there sends nothing; the parent's
 * connection carries on as before.
 */
START_TEST(fork_leaves_the_parent_working_and_the_child_a_clean_error)
{
	struct conn k = one_pair();
	char b[8];
	pid_t pid;
	int status = -1;

	ck_assert_int_eq(rsend(k.c, "before", 6, 0), 6);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int ok = 1;
		struct pollfd f = { .fd = k.s, .events = POLLIN };

		errno = 0;
		ok &= rsend(k.c, "child", 5, MSG_NOSIGNAL) == -1 && errno == EBADF;
		errno = 0;
		ok &= rrecv(k.s, b, sizeof(b), MSG_DONTWAIT) == -1 &&
		      errno == EBADF;
		ok &= rpoll(&f, 1, 0) == 1 && f.revents == POLLNVAL;
		errno = 0;
		ok &= rsocket(AF_INET, SOCK_STREAM, 0) == -1 &&
		      errno == EOPNOTSUPP;
		ok &= rclose(k.c) == 0 && rclose(k.s) == 0;
		errno = 0;
		ok &= rclose(k.c) == -1 && errno == EBADF;
		_exit(ok ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the child's calls did not fail as they should");
	/* the parent's stream: what was sent before, and more both ways */
	expect_text(k.s, "before");
	ck_assert_int_eq(rsend(k.s, "after", 5, 0), 5);
	expect_text(k.c, "after");
	rclose(k.c);
	rclose(k.s);
}
END_TEST

/* Names: each end sees the other's address as its peer. */
START_TEST(names_of_both_ends)
{
	struct conn k = one_pair();
	struct sockaddr_in cl, cp, sl, sp;
	socklen_t len = sizeof(cl);

	ck_assert_int_eq(rgetsockname(k.c, (struct sockaddr *)&cl, &len), 0);
	len = sizeof(cp);
	ck_assert_int_eq(rgetpeername(k.c, (struct sockaddr *)&cp, &len), 0);
	len = sizeof(sl);
	ck_assert_int_eq(rgetsockname(k.s, (struct sockaddr *)&sl, &len), 0);
	len = sizeof(sp);
	ck_assert_int_eq(rgetpeername(k.s, (struct sockaddr *)&sp, &len), 0);
	ck_assert_int_eq(len, sizeof(struct sockaddr_in));
	ck_assert_uint_eq(cl.sin_port, sp.sin_port);
	ck_assert_uint_eq(cp.sin_port, sl.sin_port);
	ck_assert_uint_eq(cl.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	rclose(k.c);
	rclose(k.s);
}
END_TEST

/* 40 connections open at once, each carrying its own message both ways. */
START_TEST(many_rsockets_at_once)
{
	enum { N = 40 };
	uint16_t port;
	int ls = listener(&port);
	struct conn k[N];

	for (int i = 0; i < N; i++)
		k[i] = connect_pair(ls, port);
	for (int i = 0; i < N; i++) {
		uint32_t v = 0x1000u + (uint32_t)i;

		ck_assert_int_eq(rsend(k[i].c, &v, sizeof(v), 0), sizeof(v));
	}
	for (int i = N - 1; i >= 0; i--) {
		uint32_t v = 0;

		ck_assert_int_eq(rrecv(k[i].s, &v, sizeof(v), MSG_WAITALL), sizeof(v));
		ck_assert_uint_eq(v, 0x1000u + (uint32_t)i);
		v = ~v;
		ck_assert_int_eq(rsend(k[i].s, &v, sizeof(v), 0), sizeof(v));
	}
	for (int i = 0; i < N; i++) {
		uint32_t v = 0;

		ck_assert_int_eq(rrecv(k[i].c, &v, sizeof(v), MSG_WAITALL), sizeof(v));
		ck_assert_uint_eq(v, ~(0x1000u + (uint32_t)i));
	}
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(rclose(k[i].c), 0);
		ck_assert_int_eq(rclose(k[i].s), 0);
	}
	rclose(ls);
}
END_TEST

/* Options programs set read back; the sizes count before connecting. */
START_TEST(options_read_back)
{
	int fd = rsocket(AF_INET, SOCK_STREAM, 0), v = 1, out = 0;
	socklen_t len = sizeof(out);

	ck_assert_int_eq(rsetsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v)), 0);
	ck_assert_int_eq(rgetsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &out, &len), 0);
	ck_assert_int_ne(out, 0);
	ck_assert_int_eq(rsetsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof(v)), 0);
	len = sizeof(out);
	out = -1;
	ck_assert_int_eq(rgetsockopt(fd, SOL_SOCKET, SO_ERROR, &out, &len), 0);
	ck_assert_int_eq(out, 0);
	v = 1 << 16;
	ck_assert_int_eq(rsetsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)), 0);
	len = sizeof(out);
	ck_assert_int_eq(rgetsockopt(fd, SOL_SOCKET, SO_RCVBUF, &out, &len), 0);
	ck_assert_int_ge(out, 1 << 16);
	v = 64;
	ck_assert_int_eq(rsetsockopt(fd, SOL_RDMA, RDMA_SQSIZE, &v, sizeof(v)), 0);
	errno = 0;
	ck_assert_int_eq(rsetsockopt(fd, SOL_SOCKET, 12345, &v, sizeof(v)), -1);
	ck_assert_int_eq(errno, ENOPROTOOPT);
	rclose(fd);
}
END_TEST

/* A non-blocking connect: EINPROGRESS, then POLLOUT and SO_ERROR say how. */
START_TEST(non_blocking_connect_reports_through_rpoll)
{
	uint16_t port;
	int ls = listener(&port), fds[2], err = -1;
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct pollfd f = { .events = POLLOUT };
	socklen_t len = sizeof(err);
	pthread_t t;
	char c = 0;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(port);
	f.fd = rsocket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	ck_assert_int_ge(f.fd, 0);
	fds[0] = ls;
	ck_assert_int_eq(pthread_create(&t, NULL, accept_thread, fds), 0);
	if (rconnect(f.fd, (struct sockaddr *)&a, sizeof(a)))
		ck_assert_int_eq(errno, EINPROGRESS);
	ck_assert_int_eq(rpoll(&f, 1, 10000), 1);
	ck_assert(f.revents & POLLOUT);
	ck_assert_int_eq(rgetsockopt(f.fd, SOL_SOCKET, SO_ERROR, &err, &len), 0);
	ck_assert_int_eq(err, 0);
	pthread_join(t, NULL);
	ck_assert_int_ge(fds[1], 0);
	ck_assert_int_eq(rsend(f.fd, "n", 1, 0), 1);
	ck_assert_int_eq(rrecv(fds[1], &c, 1, MSG_WAITALL), 1);
	ck_assert_int_eq(c, 'n');
	rclose(fds[1]);
	rclose(f.fd);

	/* nothing listens any more: the error shows the same way */
	rclose(ls);
	f.fd = rsocket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	f.revents = 0;
	ck_assert_int_eq(rconnect(f.fd, (struct sockaddr *)&a, sizeof(a)), -1);
	if (errno == ECONNREFUSED) {
		/* the refusal came back before the call returned, as a
		 * non-blocking connect(2) may report it too */
		rclose(f.fd);
		return;
	}
	ck_assert_int_eq(errno, EINPROGRESS);
	ck_assert_int_eq(rpoll(&f, 1, 20000), 1);
	ck_assert(f.revents & (POLLERR | POLLHUP));
	len = sizeof(err);
	ck_assert_int_eq(rgetsockopt(f.fd, SOL_SOCKET, SO_ERROR, &err, &len), 0);
	ck_assert_int_eq(err, ECONNREFUSED);
	rclose(f.fd);
}
END_TEST

struct blob {
	int fd;
	const uint8_t *p;
	size_t len;
};

static void *send_blob(void *arg)
{
	struct blob *b = arg;
	size_t off = 0;

	while (off < b->len) {
		ssize_t n = rsend(b->fd, b->p + off, b->len - off, 0);

		if (n <= 0)
			return (void *)(intptr_t)errno;
		off += (size_t)n;
	}
	return NULL;
}

static void small_queues(int fd)
{
	int v = 16;

	ck_assert_int_eq(rsetsockopt(fd, SOL_RDMA, RDMA_SQSIZE, &v, sizeof(v)), 0);
	ck_assert_int_eq(rsetsockopt(fd, SOL_RDMA, RDMA_RQSIZE, &v, sizeof(v)), 0);
	v = 0;
	ck_assert_int_eq(rsetsockopt(fd, SOL_RDMA, RDMA_INLINE, &v, sizeof(v)), 0);
	v = 4096;
	ck_assert_int_eq(rsetsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)), 0);
	ck_assert_int_eq(rsetsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)), 0);
}

/*
 * The smallest queues and buffers at both ends (set on the listener, so
 * the accepted rsocket has them too): credits and buffer halves run out
 * all the time, and 3 MB still arrive whole and in order.
 */
START_TEST(smallest_queues_and_buffers_still_carry_everything)
{
	const size_t total = 3u << 20;
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int ls = rsocket(AF_INET, SOCK_STREAM, 0), fds[2];
	uint8_t *src = malloc(total), *dst = malloc(total);
	struct blob b;
	pthread_t t, ta;
	size_t got = 0;
	void *err;

	for (size_t i = 0; i < total; i++)
		src[i] = pattern(i);
	small_queues(ls);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(rbind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(rlisten(ls, 4), 0);
	ck_assert_int_eq(rgetsockname(ls, (struct sockaddr *)&a, &len), 0);
	fds[0] = ls;
	ck_assert_int_eq(pthread_create(&ta, NULL, accept_thread, fds), 0);
	b.fd = rsocket(AF_INET, SOCK_STREAM, 0);
	small_queues(b.fd);
	ck_assert_int_eq(rconnect(b.fd, (struct sockaddr *)&a, sizeof(a)), 0);
	pthread_join(ta, NULL);
	ck_assert_int_ge(fds[1], 0);
	{
		int v = 0;
		socklen_t vl = sizeof(v);

		ck_assert_int_eq(rgetsockopt(fds[1], SOL_RDMA, RDMA_RQSIZE, &v, &vl), 0);
		ck_assert_int_eq(v, 16);
		vl = sizeof(v);
		ck_assert_int_eq(rgetsockopt(fds[1], SOL_SOCKET, SO_RCVBUF, &v, &vl), 0);
		ck_assert_int_le(v, 8192);
	}
	b.p = src;
	b.len = total;
	ck_assert_int_eq(pthread_create(&t, NULL, send_blob, &b), 0);
	while (got < total) {
		ssize_t n = rrecv(fds[1], dst + got, total - got, 0);

		require(n > 0, "rrecv %zd at %zu: %s", n, got, strerror(errno));
		got += (size_t)n;
	}
	pthread_join(t, &err);
	ck_assert_ptr_null(err);
	ck_assert_int_eq(memcmp(src, dst, total), 0);
	rclose(b.fd);
	rclose(fds[1]);
	rclose(ls);
	free(src);
	free(dst);
}
END_TEST

static Suite *rsockets_suite(void)
{
	Suite *s = suite_create("rsockets");
	TCase *tc = tcase_create("stream");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, partial_sends_and_receives_keep_the_bytes_in_order);
	tcase_add_test(tc, peek_and_vectors);
	tcase_add_test(tc, zero_length_calls_return_at_once);
	tcase_add_test(tc, shutdown_of_one_direction);
	tcase_add_test(tc, close_while_the_peer_sends);
	tcase_add_test(tc, a_peer_that_sends_and_closes_leaves_every_octet_to_read);
	tcase_add_test(tc, names_of_both_ends);
	tcase_add_test(tc, smallest_queues_and_buffers_still_carry_everything);
	suite_add_tcase(s, tc);
	tc = tcase_create("many");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, rpoll_times_out_and_reports_only_what_is_ready);
	tcase_add_test(tc, many_rsockets_at_once);
	tcase_add_test(tc, errors_as_sockets_give_them);
	tcase_add_test(tc, options_read_back);
	tcase_add_test(tc, non_blocking_connect_reports_through_rpoll);
	tcase_add_test(tc, send_after_the_peer_closed_raises_sigpipe_as_send_does);
	tcase_add_test(tc, keepalive_options_reach_the_connection_below);
	tcase_add_test(tc, fork_leaves_the_parent_working_and_the_child_a_clean_error);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	return run_suite(rsockets_suite());
}
