// SPDX-License-Identifier: MIT
/*
 * TCP transport over libevent: the event loop's callbacks and the I/O.
 * Sending: gather iovecs from the owner and hand them to one sendmsg()
 * (several FPDUs per call, payload entries pointing into registered
 * memory).  Receiving: readv() into the destination the owner names, when
 * it names one, with the thread's scratch buffer behind it for the
 * headers that follow; otherwise recv() into that buffer.  Connecting
 * (address after address) and listening.  Sockets are made and set up in
 * tp_socket.c; the optional pcap trace of both directions is tp_trace.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "lib/tp_internal.h"
#include "lib/transport.h"

/*
 * Where reads land when the data has no place to go straight to.  Every
 * octet read is handed to the owner before the read returns, so this is
 * scratch: one buffer per thread, not one per connection, and an idle
 * connection holds none.  Large enough for hundreds of small FPDUs, or
 * dozens of medium ones, per system call; and for several whole FPDUs of
 * 64 KiB with markers, which have no place to go straight to: an FPDU a
 * read splits is taken piece by piece, its ULPDU copied twice with CRC
 * on (into the hold, then into place), so the fewer split the better.
 */
#define TP_RXBUF (512 * 1024)
#define TP_IOV 1024		 /* IOV_MAX on Linux */
#define TP_ROUNDS 64		 /* syscalls per callback before yielding */
/*
 * Behind a large direct destination, and after a read that filled the
 * whole buffer, read only what may hold the end of a frame and the next
 * frame's headers: the payload that follows can then land in place
 * instead of being copied out of the buffer.  So too when a read stopped
 * inside a large frame's payload (behind the rest of it, however short)
 * or right after it (for the rest of the next frame's headers).
 */
#define TP_DIRECT_LARGE (16 * 1024)
#define TP_HEADER_ROOM 128

static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static pthread_key_t scratch_key; /* frees a thread's buffer as it exits */
static _Thread_local uint8_t *scratch;

static void scratch_key_init(void)
{
	pthread_key_create(&scratch_key, free);
}

/* The calling thread's read buffer, made on its first read; NULL if no memory. */
static uint8_t *rx_scratch(void)
{
	if (!scratch) {
		pthread_once(&scratch_once, scratch_key_init);
		scratch = malloc(TP_RXBUF);
		if (scratch)
			pthread_setspecific(scratch_key, scratch);
	}
	return scratch;
}

/* ---- the data path -------------------------------------------------- */

/*
 * Whether the loop waits for room in the socket to send.  A thread that
 * polls the connection sends at its next poll instead (tp_poll()).
 */
static void arm_write(struct tp_conn *c, bool on)
{
	c->tx_blocked = on;
	on = on && !c->polled;
	if (on && !c->write_armed)
		event_add(c->wev, NULL);
	else if (!on && c->write_armed)
		event_del_noblock(c->wev);
	c->write_armed = on;
}

/*
 * A write soon after a read makes Linux take the connection for request
 * and response and hold its ACKs back to ride on the next reply.  Amid a
 * stream the peer sends (our write a credit or a Read Request), the peer
 * would then pace itself to late ACKs: after this much read since our
 * last write, TCP_QUICKACK takes the connection out of that mode again.
 * Request and response proper is left as it is, at no extra system call.
 */
#define TP_STREAM_RX (256 * 1024)

static void keep_acks_prompt(struct tp_conn *c)
{
#ifdef TCP_QUICKACK
	int one = 1;

	/* best effort: without it only the peer's pace suffers */
	if (c->rx_since_tx >= TP_STREAM_RX)
		setsockopt(c->fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
#endif
	c->rx_since_tx = 0;
}

static bool read_some(struct tp_conn *c);
/* The thread is in read_some(): its scratch buffer holds what it read. */
static _Thread_local bool reading;

/*
 * A send found the socket failed (the peer reset it, or TCP gave up).
 * What the peer sent before that still waits in the socket, its last
 * FPDUs perhaps, whose completions its application counted on: they go
 * up first, and the end of the stream then reports @err through
 * ops->closed() (the send took the socket's own error).  Returns @err if
 * the owner has not been told, 0 once it has.
 */
static int send_failed(struct tp_conn *c, int err)
{
	c->tx_err = err;
	if (reading)
		return 0; /* sent from a read's callback: that read goes on */
	while (!c->shut && !read_some(c))
		;
	return c->shut ? 0 : err;
}

/*
 * Sends what the owner has ready, several FPDUs per call, until it has
 * nothing more or the socket is full (then the write event takes over, or
 * the next poll of a thread that polls the connection: arm_write()).
 * Returns 0, or the negated errno of a failed socket that ops->closed()
 * has not reported (see send_failed()).
 */
int tp_kick(struct tp_conn *c)
{
	if (c->shut || c->connecting)
		return 0;
	for (int round = 0; round < TP_ROUNDS; round++) {
		struct iovec iov[TP_IOV];
		struct msghdr msg = { .msg_iov = iov };
		size_t want = 0;
		ssize_t w;
		int n = c->ops->tx_gather(c->arg, iov, TP_IOV, c->tx_write);

		if (n <= 0) {
			arm_write(c, false);
			return 0;
		}
		msg.msg_iovlen = (size_t)n;
		for (int i = 0; i < n; i++)
			want += iov[i].iov_len;
		do
			w = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
		while (w < 0 && errno == EINTR);
		if (w < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				arm_write(c, true);
				return 0;
			}
			return send_failed(c, -errno);
		}
		tp_trace_data(c, true, iov, n, (size_t)w);
		keep_acks_prompt(c);
		c->ops->tx_advance(c->arg, (size_t)w);
		if (c->shut)
			return 0;
		if ((size_t)w < want) {
			arm_write(c, true);
			return 0;
		}
	}
	arm_write(c, true); /* more to send: come back later, as when full */
	return 0;
}

/*
 * One read into @iov, a negated errno on failure.  A single buffer goes
 * to recv(): readv() passes the file layer and imports an iovec on every
 * call, an empty one included, and a thread polling for small messages
 * makes many of those (on an empty socket, about 175 ns a call against
 * 220 on a 2-core VM).
 */
static ssize_t read_into(int fd, const struct iovec *iov, int n)
{
	ssize_t r;

	do
		r = n == 1 ? recv(fd, iov[0].iov_base, iov[0].iov_len, 0)
			   : readv(fd, iov, n);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

static _Thread_local unsigned long thread_reads;

unsigned long tp_thread_reads(void)
{
	return thread_reads;
}

/*
 * Reads until the socket is empty (or a fair share is done): straight into
 * the owner's destination when it names one, the rest into the thread's
 * scratch buffer.  Stops when the owner shuts the transport from a
 * callback.  Returns whether the socket had nothing more to give when it
 * stopped: a read that came back short of what it asked for, or found
 * nothing, or the end of the stream.
 */
static bool read_rounds(struct tp_conn *c)
{
	uint8_t fallback[2048], *buf = rx_scratch();
	size_t buf_len = buf ? TP_RXBUF : sizeof(fallback);

	if (!buf)
		buf = fallback;
	for (int round = 0; round < TP_ROUNDS && !c->shut; round++) {
		struct iovec iov[2];
		size_t dlen = 0, direct = 0, want;
		uint8_t *dst = c->ops->rx_direct(c->arg, &dlen);
		/* a large frame's place, or the rest of one a read stopped in */
		bool large = dlen >= TP_DIRECT_LARGE ||
			     (dst && dst == c->rx_large_rest);
		size_t staged = buf_len;
		int n = 0;
		ssize_t r;

		if (dst && dlen)
			iov[n++] = (struct iovec){ dst, dlen };
		if (large || c->rx_large_done || c->rx_resync)
			staged = TP_HEADER_ROOM;
		iov[n++] = (struct iovec){ buf, staged };
		want = dlen + staged;
		r = read_into(c->fd, iov, n);
		if (r < 0) {
			if (r != -EAGAIN && r != -EWOULDBLOCK)
				c->ops->closed(c->arg, (int)r);
			return true;
		}
		if (r == 0) {
			c->eof_seen = true;
			event_del_noblock(c->rev);
			c->ops->closed(c->arg, c->tx_err);
			return true;
		}
		thread_reads++;
		c->rx_since_tx += (size_t)r;
		tp_trace_data(c, false, iov, n, (size_t)r);
		/* a bulk stream: find the next frame's headers before its payload */
		c->rx_resync = staged == buf_len && (size_t)r == want;
		if (dst && dlen)
			direct = (size_t)r < dlen ? (size_t)r : dlen;
		c->rx_large_rest = large && direct < dlen ? dst + direct : NULL;
		c->rx_large_done = large && direct == dlen;
		if (dst && dlen)
			c->ops->rx_direct_done(c->arg, direct);
		if (!c->shut && (size_t)r > direct)
			c->ops->rx_feed(c->arg, buf, (size_t)r - direct);
		if ((size_t)r < want)
			return true; /* drained */
	}
	return c->shut;
}

/* read_rounds(), which a send that fails meanwhile must not start again */
static bool read_some(struct tp_conn *c)
{
	bool drained;

	reading = true;
	drained = read_rounds(c);
	reading = false;
	return drained;
}

/*
 * Takes what has arrived and sends what is due (replies, Read Responses,
 * a Terminate, what a full socket held back), without waiting.  Called
 * with the owner's lock held, from the loop or from a thread that polls.
 * Returns whether the socket was read to its end (see read_some()).
 */
bool tp_poll(struct tp_conn *c)
{
	bool drained;
	int rc = 0;

	if (c->shut || c->connecting)
		return true;
	drained = read_some(c);
	if (!c->shut)
		rc = tp_kick(c);
	if (rc && !c->shut)
		c->ops->closed(c->arg, rc);
	return drained;
}

/*
 * Has the loop run tp_poll() at its next turn, in a callback of its own.
 * From the loop's thread.
 */
void tp_poll_soon(struct tp_conn *c)
{
	if (!c->shut && !c->connecting && !c->eof_seen)
		event_active(c->rev, EV_READ, 0);
}

/*
 * A thread polls the connection (tp_poll()), reading and sending at each
 * poll: the loop stands aside and watches the socket neither for data nor
 * for room, or it would wake for every message only to find it taken and
 * send part of the stream from a second thread.  Handed back, the loop
 * watches again, for room too when the socket was full.  With the owner's
 * lock held.
 */
void tp_set_polled(struct tp_conn *c, bool polled)
{
	if (c->shut || c->eof_seen)
		return;
	c->polled = polled;
	if (polled)
		event_del_noblock(c->rev);
	else
		event_add(c->rev, NULL);
	arm_write(c, c->tx_blocked);
}

/*
 * What a thread that sleeps on the socket itself waits for, as poll(2)
 * events: data, and room too when the socket was full; 0 when there is
 * nothing to wait for (still connecting, shut, or ended by the peer).
 * Stores the descriptor in @fd.  With the owner's lock held.
 */
short tp_wait_events(const struct tp_conn *c, int *fd)
{
	if (c->shut || c->connecting || c->eof_seen)
		return 0;
	*fd = c->fd;
	return POLLIN | (c->tx_blocked ? POLLOUT : 0);
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
	struct tp_conn *c = arg;

	(void)fd;
	(void)what;
	c->ops->lock(c->arg);
	tp_poll(c);
	c->ops->unlock(c->arg);
}

static bool connect_next(struct tp_conn *c);

static void on_write(evutil_socket_t fd, short what, void *arg)
{
	struct tp_conn *c = arg;
	int rc = 0;

	(void)what;
	c->ops->lock(c->arg);
	if (c->shut) {
		c->ops->unlock(c->arg);
		return;
	}
	if (c->connecting) {
		socklen_t l = sizeof(rc);

		c->connecting = false;
		arm_write(c, false);
		if (c->connect_err)
			rc = -c->connect_err;
		else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &rc, &l) || rc)
			rc = -(rc ? rc : errno);
		if (rc && connect_next(c)) {
			c->ops->unlock(c->arg);
			return; /* the next address */
		}
		free(c->next_addrs);
		c->next_addrs = NULL;
		if (!rc) {
			tp_fill_addrs(c);
			tp_trace_start(c, true);
			event_add(c->rev, NULL);
		}
		c->ops->connected(c->arg, rc);
		rc = 0;
	}
	if (!c->shut)
		rc = tp_kick(c);
	if (rc && !c->shut)
		c->ops->closed(c->arg, rc);
	c->ops->unlock(c->arg);
}

static int conn_init(struct tp_conn *c, struct event_base *base, int fd,
		     const struct tp_ops *ops, void *arg,
		     struct tp_trace *trace)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->tx_write = TP_MAX_WRITE;
	c->base = base;
	c->ops = ops;
	c->arg = arg;
	c->trace = trace;
	c->rev = event_new(base, fd, EV_READ | EV_PERSIST, on_read, c);
	c->wev = event_new(base, fd, EV_WRITE | EV_PERSIST, on_write, c);
	if (!c->rev || !c->wev) {
		if (c->rev)
			event_free(c->rev);
		if (c->wev)
			event_free(c->wev);
		return -ENOMEM;
	}
	return 0;
}

/*
 * One connect() to @sa from the socket @fd, which conn_init() or
 * connect_next() gave its events.  Its outcome is reported by the write
 * event, a failure that connect() reports at once included.
 */
static void connect_start(struct tp_conn *c, const struct sockaddr *sa,
			  socklen_t len)
{
	c->connecting = true;
	c->connect_err = 0;
	if (c->trace)
		tp_trace_list_active(c, sa, len);
	if (connect(c->fd, sa, len) == 0 || errno == EINPROGRESS) {
		event_add(c->wev, NULL);
		c->write_armed = true;
	} else {
		/* report it from the loop like any other outcome */
		c->connect_err = errno;
		event_active(c->wev, EV_WRITE, 0);
	}
}

/*
 * The connect to one address failed: the next address the name resolved
 * to is tried, on a socket of its own (from the write event's callback:
 * libevent lets a callback free its own event).  False when none is left
 * (or no socket can be made for any of them).
 */
static bool connect_next(struct tp_conn *c)
{
	struct tp_addrs *a = c->next_addrs;
	struct event *rev, *wev;

	while (a && a->n) {
		struct sockaddr_storage ss = a->ss[0];
		socklen_t len = a->len[0];
		int fd = tp_connect_socket(ss.ss_family);

		a->n--;
		memmove(a->ss, a->ss + 1, a->n * sizeof(a->ss[0]));
		memmove(a->len, a->len + 1, a->n * sizeof(a->len[0]));
		if (fd < 0)
			continue;
		if (c->has_timeouts)
			tp_apply_timeouts(fd, &c->timeouts); /* best effort */
		rev = event_new(c->base, fd, EV_READ | EV_PERSIST, on_read, c);
		wev = event_new(c->base, fd, EV_WRITE | EV_PERSIST, on_write, c);
		if (!rev || !wev) {
			if (rev)
				event_free(rev);
			if (wev)
				event_free(wev);
			close(fd);
			return false;
		}
		event_free(c->rev);
		event_free(c->wev);
		c->rev = rev;
		c->wev = wev;
		tp_trace_unlist(c);
		close(c->fd);
		c->fd = fd;
		c->write_armed = false;
		connect_start(c, (struct sockaddr *)&ss, len);
		return true;
	}
	return false;
}

/*
 * Starts a non-blocking connect to the addresses in @a, one after the
 * other in their order until one takes the connection;
 * ops->connected() reports how the last one ended, a refusal the kernel
 * reports at once included.
 */
int tp_connect(struct tp_conn *c, struct event_base *base,
	       const struct tp_addrs *a, const struct tp_ops *ops, void *arg,
	       struct tp_trace *trace)
{
	unsigned int first = 0;
	int fd = -EINVAL, rc;

	/* the first address a socket can be made for */
	while (first < a->n &&
	       (fd = tp_connect_socket(a->ss[first].ss_family)) < 0)
		first++;
	if (fd < 0)
		return fd;
	rc = conn_init(c, base, fd, ops, arg, trace);
	if (!rc && first + 1 < a->n) {
		c->next_addrs = malloc(sizeof(*c->next_addrs));
		if (!c->next_addrs) {
			tp_free(c);
			return -ENOMEM;
		}
		*c->next_addrs = (struct tp_addrs){ .n = a->n - first - 1 };
		memcpy(c->next_addrs->ss, a->ss + first + 1,
		       c->next_addrs->n * sizeof(a->ss[0]));
		memcpy(c->next_addrs->len, a->len + first + 1,
		       c->next_addrs->n * sizeof(a->len[0]));
	}
	if (rc) {
		close(fd);
		return rc;
	}
	connect_start(c, (const struct sockaddr *)&a->ss[first], a->len[first]);
	return 0;
}

/* Takes over an accepted socket. */
int tp_adopt(struct tp_conn *c, struct event_base *base, int fd,
	     const struct tp_ops *ops, void *arg, struct tp_trace *trace)
{
	int rc = tp_socket_setup(fd);

	if (!rc)
		rc = conn_init(c, base, fd, ops, arg, trace);
	if (rc)
		return rc;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	tp_fill_addrs(c);
	tp_trace_start(c, false);
	event_add(c->rev, NULL);
	return 0;
}

static void send_fin(struct tp_conn *c)
{
	if (c->fin_sent)
		return;
	c->fin_sent = true;
	shutdown(c->fd, SHUT_WR);
}

static void on_fin_timer(evutil_socket_t fd, short what, void *arg)
{
	struct tp_conn *c = arg;
	struct timeval tv = { 0, 0 };

	(void)fd;
	(void)what;
	if (!tp_acks_wait_more(&c->fin_acks, c->fd)) {
		send_fin(c);
		return;
	}
	tv.tv_usec = c->fin_acks.look_ms * 1000;
	evtimer_add(c->fin_timer, &tv);
}

/*
 * Stops the FIN timer for good.  A delete waits for a callback in flight,
 * and that callback may arm the timer again meanwhile.
 */
static void fin_timer_stop(struct tp_conn *c)
{
	if (!c->fin_timer)
		return;
	do
		event_del(c->fin_timer);
	while (evtimer_pending(c->fin_timer, NULL));
}

/*
 * No more callbacks into the owner; the socket sends what it already holds
 * and then a FIN.  The FIN waits until the peer has acknowledged the rest
 * (within the bounds of tp_acks_wait_more()): riding on the last data it
 * reaches an iWARP peer together with them, and siw may act on the FIN
 * (its QP fails) before it has taken those data from its socket.  Called
 * with the owner's lock held; tp_free() comes later.
 */
void tp_shutdown(struct tp_conn *c)
{
	struct timeval tv = { 0, 1000 };

	if (c->shut)
		return;
	c->shut = true;
	event_del_noblock(c->rev);
	event_del_noblock(c->wev);
	c->write_armed = false;
	tp_acks_start(&c->fin_acks, c->fd);
	if (c->fin_acks.unacked && !c->fin_timer)
		c->fin_timer = evtimer_new(c->base, on_fin_timer, c);
	if (c->fin_acks.unacked && c->fin_timer)
		evtimer_add(c->fin_timer, &tv);
	else
		send_fin(c);
	tp_trace_end(c);
}

/*
 * After tp_shutdown() of a connection given up for good, before
 * tp_free(): the peer acknowledges what it has not yet (see
 * tp_socket_linger()), and the FIN goes if it has not.  Waits for a
 * callback in flight first, as the socket is read here.  No lock held;
 * blocks, so never in the loop.
 */
void tp_linger(struct tp_conn *c)
{
	if (!c->rev || !c->shut)
		return;
	event_del(c->rev);
	event_del(c->wev);
	fin_timer_stop(c);
	tp_socket_linger(c->fd);
	send_fin(c);
}

/* Waits for a callback in flight, then releases everything.  No lock held. */
void tp_free(struct tp_conn *c)
{
	if (!c->rev)
		return;
	event_free(c->rev);
	event_free(c->wev);
	fin_timer_stop(c);
	if (c->fin_timer)
		event_free(c->fin_timer);
	c->rev = c->wev = NULL;
	c->fin_timer = NULL;
	tp_trace_end(c);
	close(c->fd);
	free(c->next_addrs);
	c->next_addrs = NULL;
}

/* ---- listening ------------------------------------------------------- */

/*
 * Connections taken before the listener steps aside for one turn of the
 * loop: libevent's listener takes connections until none is left, and a
 * peer that connects faster than they are taken would hold the loop, and
 * every other connection of the context, for as long as it goes on.
 */
#define TP_ACCEPTS 16

static void on_accept(struct evconnlistener *l, evutil_socket_t fd,
		      struct sockaddr *peer, int peer_len, void *arg)
{
	struct tp_listener *tl = arg;
	struct timeval now = { 0, 0 };

	tl->accept_cb(tl->arg, fd, peer, peer_len);
	if (++tl->taken < TP_ACCEPTS || !tl->resume)
		return;
	tl->taken = 0;
	evconnlistener_disable(l);
	event_add(tl->resume, &now);
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
	struct tp_listener *tl = arg;

	(void)fd;
	(void)what;
	if (tl->l)
		evconnlistener_enable(tl->l);
}

int tp_listen(struct tp_listener *tl, struct event_base *base,
	      const struct sockaddr *sa, socklen_t len, int backlog,
	      void (*accept_cb)(void *arg, int fd, const struct sockaddr *peer,
				int peer_len),
	      void *arg)
{
	tl->accept_cb = accept_cb;
	tl->arg = arg;
	tl->taken = 0;
	tl->resume = evtimer_new(base, on_resume, tl);
	if (!tl->resume)
		return -ENOMEM;
	/* as evconnlistener_new_bind() would, but with tp_tcp_socket() */
	int one = 1, fd = tp_tcp_socket(sa->sa_family);

	tl->l = NULL;
	errno = 0;
	if (fd >= 0 &&
	    (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	     bind(fd, sa, len))) {
		int e = errno;

		close(fd);
		fd = -1;
		errno = e;
	}
	if (fd >= 0)
		tl->l = evconnlistener_new(base, on_accept, tl,
					   LEV_OPT_CLOSE_ON_FREE |
						   LEV_OPT_CLOSE_ON_EXEC |
						   LEV_OPT_THREADSAFE,
					   backlog > 0 ? backlog : 128, fd);
	if (!tl->l) {
		int e = errno ? errno : EADDRINUSE;

		if (fd >= 0)
			close(fd);
		event_free(tl->resume);
		tl->resume = NULL;
		return -e;
	}
	return 0;
}

/* In the loop's thread (or with no callback of it running). */
void tp_listener_free(struct tp_listener *tl)
{
	if (tl->l)
		evconnlistener_free(tl->l);
	tl->l = NULL;
	if (tl->resume)
		event_free(tl->resume);
	tl->resume = NULL;
}

int tp_listener_addr(struct tp_listener *tl, struct sockaddr_storage *ss)
{
	socklen_t l = sizeof(*ss);

	if (getsockname(evconnlistener_get_fd(tl->l), (struct sockaddr *)ss, &l))
		return -errno;
	return 0;
}
