// SPDX-License-Identifier: MIT
/*
 * iwarp-perf --tcp: the same patterns over plain TCP sockets (TCP_NODELAY),
 * one socket per QP, same sizes, same depth, same message counts as the
 * libiwarp run just before, so the two can be divided.
 *
 *  send/write bw, rate  COUNT messages of SIZE, up to DEPTH per writev
 *                       (the chain the iWARP client posts; at most 1 MiB
 *                       and 1024 pieces, as libiwarp's own sendmsg), then
 *                       the reader's one-octet acknowledgement (the iWARP
 *                       END/DONE); per message, the time from the end of
 *                       the one DEPTH before it to the end of its writev.
 *  send/write lat       ping-pong of SIZE octets; half the round trip.
 *  read                 up to DEPTH 16-octet requests outstanding, each
 *                       answered by SIZE octets; request to last octet.
 *
 * Each step starts with a 16-octet header (type, mode, test, size, count)
 * and the server's one-octet go-ahead, outside the time.  As on the iWARP
 * side, one thread per end drives every socket (non-blocking, each a small
 * state machine) and waits by yielding, or with --event asleep in poll().
 */
#include "config.h" /* _GNU_SOURCE: accept4 */

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lib/byteorder.h"
#include "perf.h"

#define HDR_LEN 16
#define REQ_LEN 16
#define MAX_IOV 1024	       /* IOV_MAX on Linux */
#define MAX_WRITE (1u << 20)   /* what libiwarp hands one sendmsg, too */
#define MIN_RBUF (256 * 1024) /* a reader reads in large pieces */

enum phase { IDLE, HEADER, GO, RUN, ACK, DONE };

/* One socket: its buffer, and where its part of a step stands. */
struct tconn {
	int fd;
	uint8_t *buf;
	size_t len;
	short want; /* what it waits for when it cannot move */
	double quiet_since;
	/* the step */
	enum phase phase;
	uint8_t mode, test;
	size_t size;
	uint64_t count, depth;
	uint64_t sent, got; /* messages (requests) out, answered */
	size_t off;	    /* octets of the piece in progress */
	uint64_t batch;	    /* messages in the writev in progress */
	double t_batch;	    /* lat: when the ping left */
	double t0;	    /* when the step began */
	uint8_t hdr[HDR_LEN];
	uint8_t req[MAX_IOV * REQ_LEN];
	size_t req_have;
	double *post_us; /* read: when each outstanding request left */
	struct perf_result *res; /* the client's step, shared by its sockets */
};

struct perf_tcp {
	const struct perf_opts *o;
	uint32_t n;
	struct tconn *c;
};

struct perf_tcp_server {
	const struct perf_opts *o;
	uint32_t n;
	struct tconn *c;
	pthread_t th;
	bool running;
	bool failed; /* a socket ended in the middle of a step */
};

/* ---- moving octets without blocking -------------------------------------- */

/* Octets written (>= 0), or a negative errno; 0 when the socket is full. */
static ssize_t put(struct tconn *c, struct iovec *iov, int n)
{
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)n };
	ssize_t w = sendmsg(c->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);

	if (w >= 0)
		return w;
	c->want |= POLLOUT;
	return errno == EAGAIN || errno == EINTR ? 0 : -errno;
}

/* Octets read (> 0), 0 when none are there, -ECONNRESET at the end. */
static ssize_t get(struct tconn *c, void *p, size_t len)
{
	ssize_t r = recv(c->fd, p, len, MSG_DONTWAIT);

	if (r > 0)
		return r;
	if (r == 0)
		return -ECONNRESET;
	c->want |= POLLIN;
	return errno == EAGAIN || errno == EINTR ? 0 : -errno;
}

/*
 * The pieces of @k messages of @size (all the one buffer) from octet
 * @off on: the rest of the first one, then whole ones.
 */
static int message_iov(struct tconn *c, uint64_t k, struct iovec *iov)
{
	uint64_t first = c->off / c->size;
	size_t in = c->off % c->size;
	int n = 0;

	for (uint64_t i = first; i < k && n < MAX_IOV; i++, in = 0)
		iov[n++] = (struct iovec){ c->buf + in, c->size - in };
	return n;
}

/* Writes more of the current batch of @k messages; true once all left. */
static ssize_t put_messages(struct tconn *c, uint64_t k, bool *all)
{
	struct iovec iov[MAX_IOV];
	ssize_t w = put(c, iov, message_iov(c, k, iov));

	if (w > 0)
		c->off += (size_t)w;
	*all = c->off == k * c->size;
	if (*all)
		c->off = 0;
	return w;
}

/* ---- the client's patterns: one step forward, without blocking ----------- */

static uint64_t batch_of(const struct tconn *c)
{
	uint64_t b = c->depth < MAX_IOV ? c->depth : MAX_IOV;

	if (b > MAX_WRITE / c->size)
		b = MAX_WRITE / c->size ? MAX_WRITE / c->size : 1;
	return b < c->count - c->sent ? b : c->count - c->sent;
}

/*
 * Latency with DEPTH outstanding, as the iWARP client posts: message k
 * may go once message k - DEPTH is done, so that is its "post" time (the
 * step's start for the first DEPTH); it is done when its writev returns.
 */
static void stream_done(struct tconn *c, double now)
{
	uint32_t i = (uint32_t)(c->sent % c->depth);

	for (uint64_t k = c->sent; k < c->sent + c->batch; k++) {
		double *slot = &c->post_us[i];
		double post = k < c->depth ? c->t0 : *slot;

		tool_stats_add(&c->res->lat, now - post);
		*slot = now;
		i = perf_ring_next(i, (uint32_t)c->depth);
	}
	c->res->iters += c->batch;
	c->res->bytes += c->batch * c->size;
	c->sent += c->batch;
	c->batch = 0;
}

/* bw, rate: a writev of messages at a time, then the acknowledgement. */
static ssize_t stream_out(struct tconn *c)
{
	uint8_t ack;
	ssize_t w;
	bool all;

	if (c->sent == c->count) {
		w = get(c, &ack, 1);
		if (w > 0)
			c->phase = DONE;
		return w;
	}
	if (!c->batch)
		c->batch = batch_of(c);
	w = put_messages(c, c->batch, &all);
	if (all)
		stream_done(c, tool_now_us());
	return w;
}

/* An answer (a pong, a Read's data) has come whole after @lat_us. */
static void answered(struct tconn *c, double lat_us)
{
	tool_stats_add(&c->res->lat, lat_us);
	c->got++;
	c->res->iters++;
	c->res->bytes += c->size;
}

/* lat: SIZE octets out (sent > got), then back; half the round trip. */
static ssize_t ping_pong(struct tconn *c)
{
	ssize_t w;
	bool all;

	if (c->sent == c->got) {
		if (!c->off)
			c->t_batch = tool_now_us();
		w = put_messages(c, 1, &all);
		c->sent += all;
		return w;
	}
	w = get(c, c->buf + c->off, c->size - c->off);
	if (w > 0 && (c->off += (size_t)w) == c->size) {
		answered(c, (tool_now_us() - c->t_batch) / 2);
		c->off = 0;
		if (c->got == c->count)
			c->phase = DONE;
	}
	return w;
}

/* read: requests while fewer than DEPTH are out, then what has come. */
static ssize_t read_in(struct tconn *c)
{
	uint64_t k = c->depth - (c->sent - c->got);
	size_t want;
	ssize_t w = 0, r;
	double now;

	if (k > c->count - c->sent)
		k = c->count - c->sent;
	if (k > MAX_IOV)
		k = MAX_IOV;
	if (k && !c->req_have) {
		now = tool_now_us();
		for (uint64_t i = 0; i < k; i++)
			c->post_us[(c->sent + i) % c->depth] = now;
		c->req_have = k * REQ_LEN;
		c->batch = k;
	}
	if (c->req_have) {
		struct iovec v = { c->req + c->batch * REQ_LEN - c->req_have,
				   c->req_have };

		w = put(c, &v, 1);
		if (w < 0)
			return w;
		c->req_have -= (size_t)w;
		if (!c->req_have)
			c->sent += c->batch;
	}
	want = (size_t)(c->sent - c->got) * c->size - c->off;
	if (!want)
		return w;
	r = get(c, c->buf, want < c->len ? want : c->len);
	if (r <= 0)
		return r < 0 ? r : w;
	now = tool_now_us();
	for (c->off += (size_t)r; c->off >= c->size; c->off -= c->size)
		answered(c, now - c->post_us[c->got % c->depth]);
	if (c->got == c->count)
		c->phase = DONE;
	return r;
}

/* One move of a socket's pattern: > 0 progress, 0 none, < 0 failure. */
static ssize_t client_move(struct tconn *c)
{
	c->want = 0;
	if (perf_test_requests(c->test)) /* an atomic: 8 octets asked */
		return read_in(c);
	if (c->mode == PERF_LAT)
		return ping_pong(c);
	return stream_out(c);
}

/* ---- waiting ------------------------------------------------------------- */

/*
 * Nothing moved on any socket: wait until one can, asleep in poll() (with
 * @sleep or --event) or by yielding.  -ETIMEDOUT after the timeout
 * without progress on a socket that still has work.
 */
static int idle(struct tconn *c, uint32_t n, const struct perf_opts *o,
		bool sleep, int *which)
{
	struct pollfd p[PERF_MAX_QPS];
	double now = tool_now_us();
	int ms = o->timeout_ms, k = 0;

	for (uint32_t i = 0; i < n; i++) {
		int left;

		bool between = c[i].phase == IDLE || c[i].phase == HEADER;

		if (c[i].phase == DONE)
			continue;
		left = o->timeout_ms - (int)((now - c[i].quiet_since) / 1000);
		if (!between && left <= 0) {
			*which = (int)i;
			return -ETIMEDOUT;
		}
		if (!between && left < ms)
			ms = left;
		p[k++] = (struct pollfd){ c[i].fd, c[i].want ? c[i].want
							  : POLLIN, 0 };
	}
	if (!sleep && !o->event) {
		sched_yield();
		return 0;
	}
	if (poll(p, (nfds_t)k, sleep && ms == o->timeout_ms ? -1 : ms) < 0 &&
	    errno != EINTR)
		return -errno;
	return 0;
}

/* ---- the client's step --------------------------------------------------- */

/* Header and go-ahead, one socket after the other, before the time runs. */
static int announce(struct perf_tcp *t)
{
	for (uint32_t i = 0; i < t->n; i++) {
		struct tconn *c = &t->c[i];
		uint8_t hdr[HDR_LEN] = { 'S', c->mode, c->test }, ok;
		struct pollfd p = { c->fd, POLLIN, 0 };

		put_be32(hdr + 4, (uint32_t)c->size);
		put_be64(hdr + 8, c->count);
		/* a fresh socket takes 16 octets whole */
		if (send(c->fd, hdr, sizeof(hdr), MSG_NOSIGNAL) !=
			    sizeof(hdr) ||
		    poll(&p, 1, t->o->timeout_ms) != 1 ||
		    recv(c->fd, &ok, 1, MSG_DONTWAIT) != 1 || ok != 'R')
			return perf_fail("TCP connection %u: no go-ahead for "
					 "the step",
					 i);
	}
	return 0;
}

/* Moves every socket until each has finished its part. */
static int run(struct perf_tcp *t, double *t0)
{
	*t0 = tool_now_us();
	for (uint32_t i = 0; i < t->n; i++)
		t->c[i].quiet_since = t->c[i].t0 = *t0;
	for (;;) {
		bool moved = false, left = false;
		int which = 0, rc;

		for (uint32_t i = 0; i < t->n; i++) {
			struct tconn *c = &t->c[i];
			ssize_t w;

			if (c->phase != RUN)
				continue;
			w = client_move(c);
			if (w < 0)
				return perf_fail("TCP connection %u: %s", i,
						 strerror((int)-w));
			if (w > 0) {
				moved = true;
				c->quiet_since = tool_now_us();
			}
			left |= c->phase == RUN;
		}
		if (!left)
			return 0;
		if (moved)
			continue;
		rc = idle(t->c, t->n, t->o, false, &which);
		if (rc)
			return perf_fail("TCP connection %d: %s", which,
					 rc == -ETIMEDOUT
						 ? "no progress in time"
						 : strerror(-rc));
	}
}

/*
 * One size on every socket at once, each repeating what its QP did:
 * @counts[i] operations.  The time runs from the first move to the last
 * socket's end.
 */
int perf_tcp_step(struct perf_tcp *t, size_t size, const uint64_t *counts,
		  struct perf_result *r)
{
	uint64_t total = 0;
	double t0 = tool_now_us();
	int rc;

	for (uint32_t i = 0; i < t->n; i++) {
		struct tconn *c = &t->c[i];

		c->phase = counts[i] ? RUN : DONE;
		c->mode = (uint8_t)t->o->mode;
		c->test = (uint8_t)t->o->test;
		c->size = size;
		c->count = counts[i];
		c->sent = c->got = c->batch = 0;
		c->off = c->req_have = 0;
		c->res = r;
		total += counts[i];
	}
	perf_stats_reserve(&r->lat, total);
	rc = announce(t) || run(t, &t0);
	r->seconds = (tool_now_us() - t0) / 1e6;
	return rc ? -1 : 0;
}

/* ---- sockets ------------------------------------------------------------- */

static int sock_setup(int fd)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK))
		return -errno;
	return 0;
}

/* A connect that gives up after the timeout. */
static int dial(const char *host, const char *port, int ms, int *out)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	struct pollfd p = { -1, POLLOUT, 0 };
	int rc = getaddrinfo(host, port, &hints, &res), err = 0;
	socklen_t l = sizeof(err);

	if (rc)
		return perf_fail("%s: %s", host, gai_strerror(rc));
	p.fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	rc = p.fd < 0 ? -errno : sock_setup(p.fd);
	if (!rc && connect(p.fd, res->ai_addr, res->ai_addrlen) &&
	    errno != EINPROGRESS)
		rc = -errno;
	freeaddrinfo(res);
	if (!rc && poll(&p, 1, ms) != 1)
		rc = -ETIMEDOUT;
	if (!rc && (getsockopt(p.fd, SOL_SOCKET, SO_ERROR, &err, &l) || err))
		rc = -(err ? err : errno);
	if (rc) {
		if (p.fd >= 0)
			close(p.fd);
		return perf_fail("cannot connect to TCP %s:%s: %s", host, port,
				 strerror(-rc));
	}
	*out = p.fd;
	return 0;
}

static int conn_init(struct tconn *c, int fd, size_t len, uint32_t depth)
{
	c->fd = fd;
	c->len = len < MIN_RBUF ? MIN_RBUF : len;
	c->depth = depth;
	c->buf = calloc(1, c->len);
	c->post_us = calloc(depth, sizeof(*c->post_us));
	if (!c->buf || !c->post_us)
		return perf_fail("out of memory");
	for (uint32_t i = 0; i < MAX_IOV; i++)
		put_be32(c->req + i * REQ_LEN + 8, (uint32_t)len);
	return 0;
}

static void conn_free(struct tconn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	free(c->post_us);
}

/* One socket per QP to the server's TCP port. */
int perf_tcp_open(struct perf_tcp **tp, const struct perf_opts *o,
		  const char *host, const char *port)
{
	struct perf_tcp *t = calloc(1, sizeof(*t));

	*tp = t;
	if (!t || !(t->c = calloc(o->qps, sizeof(*t->c))))
		return perf_fail("out of memory");
	t->o = o;
	for (uint32_t i = 0; i < o->qps; i++)
		t->c[i].fd = -1;
	t->n = o->qps;
	for (uint32_t i = 0; i < o->qps; i++) {
		int fd = -1;

		if (dial(host, port, o->timeout_ms, &fd) ||
		    conn_init(&t->c[i], fd, o->size,
			      o->mode == PERF_LAT ? 1 : o->depth))
			return -1;
	}
	return 0;
}

void perf_tcp_close(struct perf_tcp *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; t->c && i < t->n; i++)
		conn_free(&t->c[i]);
	free(t->c);
	free(t);
}

int perf_tcp_listen(const char *host, const char *port, int *fd,
		    char *bound, size_t len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE },
			*res;
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	int one = 1, rc = getaddrinfo(host, port, &hints, &res);

	if (rc)
		return perf_fail("TCP port %s: %s", port, gai_strerror(rc));
	*fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*fd < 0 ||
	    setsockopt(*fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(*fd, res->ai_addr, res->ai_addrlen) || listen(*fd, 16) ||
	    getsockname(*fd, (struct sockaddr *)&ss, &l)) {
		rc = errno;
		freeaddrinfo(res);
		return perf_fail("cannot listen on TCP port %s: %s", port,
				 strerror(rc));
	}
	freeaddrinfo(res);
	getnameinfo((struct sockaddr *)&ss, l, NULL, 0, bound, (socklen_t)len,
		    NI_NUMERICSERV);
	return 0;
}

/* ---- the server's side --------------------------------------------------- */

/* A step's header is in: take it, and queue the go-ahead. */
static ssize_t take_header(struct tconn *c)
{
	ssize_t r = get(c, c->hdr + c->off, HDR_LEN - c->off);

	if (r <= 0 || (c->off += (size_t)r) < HDR_LEN)
		return r;
	c->off = 0;
	c->mode = c->hdr[1];
	c->test = c->hdr[2];
	c->size = get_be32(c->hdr + 4);
	c->count = get_be64(c->hdr + 8);
	c->sent = c->got = c->batch = 0;
	c->req_have = 0;
	if (c->hdr[0] != 'S' || !c->size || c->size > c->len)
		return -EPROTO;
	c->phase = GO;
	return r;
}

/* bw, rate: COUNT x SIZE octets read in large pieces, then the ack. */
static ssize_t stream_in(struct tconn *c)
{
	uint64_t left = c->count * c->size - c->got;
	ssize_t r = get(c, c->buf, left < c->len ? left : c->len);

	if (r > 0 && (c->got += (uint64_t)r) == c->count * c->size)
		c->phase = ACK;
	return r;
}

/* lat: a ping in (sent == got), the same back out. */
static ssize_t pong(struct tconn *c)
{
	ssize_t w;
	bool all;

	if (c->sent == c->got) {
		w = get(c, c->buf + c->off, c->size - c->off);
		if (w > 0 && (c->off += (size_t)w) == c->size) {
			c->off = 0;
			c->got++;
		}
		return w;
	}
	w = put_messages(c, 1, &all);
	if (all && ++c->sent == c->count)
		c->phase = IDLE;
	return w;
}

/* read: each whole request is answered by SIZE octets, in one writev. */
static ssize_t read_out(struct tconn *c)
{
	ssize_t w;
	bool all;

	if (!c->batch) {
		w = get(c, c->req + c->req_have, sizeof(c->req) - c->req_have);
		if (w <= 0)
			return w;
		c->req_have += (size_t)w;
		c->batch = c->req_have / REQ_LEN;
		c->req_have %= REQ_LEN;
		memmove(c->req, c->req + c->batch * REQ_LEN, c->req_have);
		return w;
	}
	w = put_messages(c, c->batch, &all);
	if (all) {
		c->sent += c->batch;
		c->batch = 0;
		if (c->sent == c->count)
			c->phase = IDLE;
	}
	return w;
}

/* One move of a served socket: > 0 progress, 0 none, < 0 failure. */
static ssize_t server_move(struct tconn *c)
{
	c->want = 0;
	switch (c->phase) {
	case IDLE:
		c->phase = HEADER;
		/* fall through */
	case HEADER:
		return take_header(c);
	case GO:
	case ACK: {
		struct iovec v = { (void *)(c->phase == GO ? "R" : "A"), 1 };
		ssize_t w = put(c, &v, 1);

		if (w > 0)
			c->phase = c->phase == GO ? RUN : IDLE;
		return w;
	}
	default:
		if (perf_test_requests(c->test))
			return read_out(c);
		if (c->mode == PERF_LAT)
			return pong(c);
		return stream_in(c);
	}
}

/*
 * The server's thread: moves every socket; asleep while none is in a
 * step.  A socket ends at the client's close (or perf_tcp_serve_end()'s
 * shutdown); one that fails is shut, so the client sees it at once.
 */
static void *serve(void *arg)
{
	struct perf_tcp_server *s = arg;
	uint32_t open = s->n;

	for (uint32_t i = 0; i < s->n; i++)
		s->c[i].phase = HEADER;
	while (open) {
		bool moved = false, stepping = false;
		int which;

		for (uint32_t i = 0; i < s->n; i++) {
			struct tconn *c = &s->c[i];
			ssize_t w;

			if (c->phase == DONE)
				continue;
			w = server_move(c);
			if (w < 0) {
				/* the client's close between steps: the end */
				if (c->phase != HEADER || c->off) {
					perf_fail("TCP client %u: %s in the "
						  "middle of a step",
						  i, strerror((int)-w));
					s->failed = true;
				}
				shutdown(c->fd, SHUT_RDWR);
				c->phase = DONE;
				open--;
				continue;
			}
			moved |= w > 0;
			stepping |= c->phase != HEADER;
			if (w > 0)
				c->quiet_since = tool_now_us();
		}
		if (open && !moved &&
		    idle(s->c, s->n, s->o, !stepping, &which) == -ETIMEDOUT) {
			perf_fail("TCP client %d: no progress in time", which);
			shutdown(s->c[which].fd, SHUT_RDWR);
			s->failed = true;
		}
	}
	return NULL;
}

/* Accepts the client's @n sockets (within the timeout); serves them. */
int perf_tcp_serve(int lfd, uint32_t n, const struct perf_opts *o,
		   size_t len, struct perf_tcp_server **sp)
{
	struct perf_tcp_server *s = calloc(1, sizeof(*s));

	*sp = s;
	if (!s || !(s->c = calloc(n, sizeof(*s->c))))
		return perf_fail("out of memory");
	s->o = o;
	for (uint32_t i = 0; i < n; i++) {
		struct pollfd p = { lfd, POLLIN, 0 };
		int fd;

		s->c[i].fd = -1;
		s->n = i + 1;
		if (poll(&p, 1, o->timeout_ms) != 1)
			return perf_fail("the client's TCP connection did not "
					 "come within %d s",
					 o->timeout_ms / 1000);
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0 || sock_setup(fd))
			return perf_fail("TCP accept: %s", strerror(errno));
		if (conn_init(&s->c[i], fd, len, 1))
			return -1;
	}
	if (pthread_create(&s->th, NULL, serve, s))
		return perf_fail("cannot start a thread");
	s->running = true;
	return 0;
}

/*
 * Ends the serving thread (its sockets are shut down) and frees it all.
 * Returns -1 when a socket failed in the middle of a step (said why).
 */
int perf_tcp_serve_end(struct perf_tcp_server *s)
{
	int rc;

	if (!s)
		return 0;
	for (uint32_t i = 0; i < s->n; i++)
		if (s->c[i].fd >= 0)
			shutdown(s->c[i].fd, SHUT_RDWR);
	if (s->running)
		pthread_join(s->th, NULL);
	rc = s->failed ? -1 : 0;
	for (uint32_t i = 0; i < s->n; i++)
		conn_free(&s->c[i]);
	free(s->c);
	free(s);
	return rc;
}
