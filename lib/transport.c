// SPDX-License-Identifier: MIT
/*
 * TCP transport over libevent.  Sending: gather iovecs from the owner and
 * hand them to one sendmsg() (several FPDUs per call, payload entries
 * pointing into registered memory).  Receiving: readv() into the
 * destination the owner names, when it names one, with the thread's
 * scratch buffer behind it for the headers that follow; otherwise recv()
 * into that buffer.
 * Optionally both directions are written to a pcap trace.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "lib/error.h"
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
#define TP_MAX_WRITE (1u << 20)	 /* octets per sendmsg */
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

/* ---- tracing --------------------------------------------------------- */

static pthread_mutex_t traces_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tp_trace *traces;

static struct tp_trace *trace_open(const char *path, const char *key,
				   int *err)
{
	struct tp_trace *t = calloc(1, sizeof(*t));

	if (!t || !(t->path = strdup(key))) {
		free(t);
		*err = -ENOMEM;
		return NULL;
	}
	*err = pcapw_open(&t->w, path);
	if (*err) {
		free(t->path);
		free(t);
		return NULL;
	}
	pthread_mutex_init(&t->lock, NULL);
	t->next_isn = 0x10000000;
	return t;
}

/*
 * Two writers on one file would interleave their buffers; and when both
 * ends of a connection live in this process, one shared trace is what
 * lets the passive end see that the active end already records it.
 */
/*
 * The file's name with its directory resolved, so that "a.pcap" and
 * "./a.pcap" are one trace; the file itself may not exist yet.
 */
static char *trace_key(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir, *real, *key = NULL;

	dir = slash ? strndup(path, (size_t)(slash - path) + 1) : strdup(".");
	real = dir ? realpath(dir, NULL) : NULL;
	if (real && asprintf(&key, "%s/%s", real, slash ? slash + 1 : path) < 0)
		key = NULL;
	free(real);
	free(dir);
	return key ? key : strdup(path);
}

struct tp_trace *tp_trace_get(const char *path, int *err)
{
	char *key = trace_key(path);
	struct tp_trace *t;

	if (!key) {
		*err = -ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&traces_lock);
	for (t = traces; t && strcmp(t->path, key); t = t->next)
		;
	if (!t) {
		t = trace_open(path, key, err);
		if (t) {
			t->next = traces;
			traces = t;
		}
	}
	if (t)
		t->users++;
	pthread_mutex_unlock(&traces_lock);
	free(key);
	return t;
}

void tp_trace_put(struct tp_trace *t)
{
	struct tp_trace **pp;

	pthread_mutex_lock(&traces_lock);
	if (--t->users) {
		pthread_mutex_unlock(&traces_lock);
		return;
	}
	for (pp = &traces; *pp != t; pp = &(*pp)->next)
		;
	*pp = t->next;
	pthread_mutex_unlock(&traces_lock);
	pcapw_close(&t->w);
	free(t->active);
	free(t->path);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static void addr_bytes(const struct sockaddr_storage *ss, const void **p)
{
	if (ss->ss_family == AF_INET6)
		*p = &((const struct sockaddr_in6 *)ss)->sin6_addr;
	else
		*p = &((const struct sockaddr_in *)ss)->sin_addr;
}

static uint16_t addr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

/* Lists an active connection's ports before its SYN leaves. */
static void trace_list_active(struct tp_conn *c, uint16_t lport,
			      uint16_t rport)
{
	struct tp_trace *t = c->trace;

	pthread_mutex_lock(&t->lock);
	if (t->n_active == t->cap_active) {
		size_t cap = t->cap_active ? 2 * t->cap_active : 16;
		void *p = realloc(t->active, cap * sizeof(*t->active));

		if (p) {
			t->active = p;
			t->cap_active = cap;
		}
	}
	if (t->n_active < t->cap_active) {
		t->active[t->n_active++] =
			(struct tp_trace_ports){ lport, rport };
		c->trace_listed = true;
		c->trace_lport = lport;
		c->trace_rport = rport;
	}
	pthread_mutex_unlock(&t->lock);
}

/* Whether our own active end already traces this passive connection. */
static bool trace_is_mirror(struct tp_trace *t, uint16_t lport,
			    uint16_t rport)
{
	bool found = false;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n_active && !found; i++)
		found = t->active[i].local == rport && t->active[i].peer == lport;
	pthread_mutex_unlock(&t->lock);
	return found;
}

static void trace_unlist(struct tp_conn *c)
{
	struct tp_trace *t = c->trace;

	if (!c->trace_listed)
		return;
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n_active; i++) {
		if (t->active[i].local == c->trace_lport &&
		    t->active[i].peer == c->trace_rport) {
			t->active[i] = t->active[--t->n_active];
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
	c->trace_listed = false;
}

/*
 * Starts the trace of a connection with the TCP handshake its connecting
 * side (side 0 of the flow) opened.
 */
static void trace_start(struct tp_conn *c, bool active)
{
	const void *l, *p;
	struct timeval now;
	uint32_t isn;

	if (!c->trace)
		return;
	if (!active &&
	    trace_is_mirror(c->trace, addr_port(&c->local), addr_port(&c->peer))) {
		c->trace = NULL;
		return;
	}
	addr_bytes(&c->local, &l);
	addr_bytes(&c->peer, &p);
	gettimeofday(&now, NULL);
	pthread_mutex_lock(&c->trace->lock);
	isn = c->trace->next_isn;
	c->trace->next_isn += 0x01000000;
	c->trace_side = active ? 0 : 1;
	if (active)
		pcapw_flow_init(&c->flow, c->local.ss_family, l,
				addr_port(&c->local), p, addr_port(&c->peer),
				isn, isn + 0x00800000);
	else
		pcapw_flow_init(&c->flow, c->local.ss_family, p,
				addr_port(&c->peer), l, addr_port(&c->local),
				isn, isn + 0x00800000);
	pcapw_handshake(&c->trace->w, &c->flow, &now);
	c->trace_started = true;
	pthread_mutex_unlock(&c->trace->lock);
}

/* Octets of one direction the trace holds back for a frame's end at most. */
#define TRACE_MAX_PENDING (256 * 1024)

/* Writes @len octets of direction @tx as one segment (more if too long). */
static void trace_segment(struct tp_conn *c, bool tx, const uint8_t *p,
			  size_t len)
{
	struct iovec iov = { (void *)p, len };
	struct timeval now;

	gettimeofday(&now, NULL);
	pthread_mutex_lock(&c->trace->lock);
	pcapw_data(&c->trace->w, &c->flow, tx ? c->trace_side : !c->trace_side,
		   &iov, 1, &now);
	pthread_mutex_unlock(&c->trace->lock);
}

/*
 * Traces every whole frame held for direction @tx, each in a segment of
 * its own; with @flush (or when the owner cannot tell frames apart) the
 * rest goes out as it is.
 */
static void trace_frames(struct tp_conn *c, bool tx, bool flush)
{
	struct tp_trace_dir *d = &c->trace_dir[tx ? 0 : 1];
	size_t done = 0;

	while (done < d->len) {
		bool first = d->off == 0;
		size_t fl = c->ops->trace_frame_len(c->arg, tx, first,
						    d->off - d->first_len,
						    d->buf + done,
						    d->len - done);

		if (fl == 0 || fl > d->len - done)
			break;
		trace_segment(c, tx, d->buf + done, fl);
		if (first)
			d->first_len = fl;
		d->off += fl;
		done += fl;
	}
	if (done < d->len && (flush || d->len - done > TRACE_MAX_PENDING)) {
		trace_segment(c, tx, d->buf + done, d->len - done);
		d->off += d->len - done;
		done = d->len;
	}
	/* nothing held may mean no buffer yet: memmove() takes no NULL */
	if (done && done < d->len)
		memmove(d->buf, d->buf + done, d->len - done);
	d->len -= done;
}

/* Records @len octets from @iov that went out (tx) or came in (!tx). */
static void trace_data(struct tp_conn *c, bool tx, const struct iovec *iov,
		       int n, size_t len)
{
	struct tp_trace_dir *d;

	if (!c->trace || !c->trace_started || !len)
		return;
	d = &c->trace_dir[tx ? 0 : 1];
	if (d->len + len > d->cap) {
		size_t cap = d->cap ? d->cap : 4096;
		uint8_t *b;

		while (cap < d->len + len)
			cap *= 2;
		b = realloc(d->buf, cap);
		if (!b) {
			trace_frames(c, tx, true); /* out of memory: as it is */
			for (int i = 0; i < n && len; i++) {
				size_t k = iov[i].iov_len < len ? iov[i].iov_len
								: len;

				trace_segment(c, tx, iov[i].iov_base, k);
				d->off += k;
				len -= k;
			}
			return;
		}
		d->buf = b;
		d->cap = cap;
	}
	for (int i = 0; i < n && len; i++) {
		size_t k = iov[i].iov_len < len ? iov[i].iov_len : len;

		memcpy(d->buf + d->len, iov[i].iov_base, k);
		d->len += k;
		len -= k;
	}
	trace_frames(c, tx, false);
}

static void trace_end(struct tp_conn *c)
{
	struct timeval now;

	if (!c->trace)
		return;
	trace_unlist(c);
	if (c->trace_started) {
		trace_frames(c, true, true);
		trace_frames(c, false, true);
		gettimeofday(&now, NULL);
		pthread_mutex_lock(&c->trace->lock);
		pcapw_fin(&c->trace->w, &c->flow, c->trace_side, &now);
		pthread_mutex_unlock(&c->trace->lock);
	}
	for (int i = 0; i < 2; i++) {
		free(c->trace_dir[i].buf);
		c->trace_dir[i] = (struct tp_trace_dir){ 0 };
	}
	c->trace = NULL;
}

/* ---- addresses and sockets ------------------------------------------ */

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

static void fill_addrs(struct tp_conn *c)
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

static int socket_setup(int fd)
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
static int apply_timeouts(int fd, const struct tp_timeouts *t)
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
	return apply_timeouts(c->fd, t);
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

/*
 * Sends what the owner has ready, several FPDUs per call, until it has
 * nothing more or the socket is full (then the write event takes over, or
 * the next poll of a thread that polls the connection: arm_write()).
 * Returns 0 or the negated errno of a failed socket.
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
		int n = c->ops->tx_gather(c->arg, iov, TP_IOV, TP_MAX_WRITE);

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
			return -errno;
		}
		trace_data(c, true, iov, n, (size_t)w);
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
 * callback.
 */
static void read_some(struct tp_conn *c)
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
			return;
		}
		if (r == 0) {
			c->eof_seen = true;
			event_del_noblock(c->rev);
			c->ops->closed(c->arg, 0);
			return;
		}
		thread_reads++;
		c->rx_since_tx += (size_t)r;
		trace_data(c, false, iov, n, (size_t)r);
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
			return; /* drained */
	}
}

/*
 * Takes what has arrived and sends what is due (replies, Read Responses,
 * a Terminate, what a full socket held back), without waiting.  Called
 * with the owner's lock held, from the loop or from a thread that polls.
 */
void tp_poll(struct tp_conn *c)
{
	int rc = 0;

	if (c->shut || c->connecting)
		return;
	read_some(c);
	if (!c->shut)
		rc = tp_kick(c);
	if (rc && !c->shut)
		c->ops->closed(c->arg, rc);
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
			fill_addrs(c);
			trace_start(c, true);
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
	if (c->trace) {
		/* our port, known before the SYN: the passive end may be ours */
		struct sockaddr_storage any = { .ss_family = sa->sa_family };
		struct sockaddr_storage dst;
		socklen_t l = sizeof(c->local);

		memcpy(&dst, sa, len);
		if (bind(c->fd, (struct sockaddr *)&any,
			 sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						   : sizeof(struct sockaddr_in)) == 0 &&
		    getsockname(c->fd, (struct sockaddr *)&c->local, &l) == 0)
			trace_list_active(c, addr_port(&c->local),
					  addr_port(&dst));
	}
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
 * A TCP socket by the system call itself: a preloaded library that moves
 * a program's sockets onto RDMA (rdma-core's librspreload.so, whose
 * rsockets may run on this very stack) must not take libiwarp's own.
 */
static int tcp_socket(int family)
{
	return (int)syscall(SYS_socket, family,
			    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

static int connect_socket(int family)
{
	int fd = tcp_socket(family);
	int rc;

	if (fd < 0)
		return -errno;
	rc = socket_setup(fd);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
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
		int fd = connect_socket(ss.ss_family);

		a->n--;
		memmove(a->ss, a->ss + 1, a->n * sizeof(a->ss[0]));
		memmove(a->len, a->len + 1, a->n * sizeof(a->len[0]));
		if (fd < 0)
			continue;
		if (c->has_timeouts)
			apply_timeouts(fd, &c->timeouts); /* best effort */
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
		trace_unlist(c);
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
	       (fd = connect_socket(a->ss[first].ss_family)) < 0)
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
	int rc = socket_setup(fd);

	if (!rc)
		rc = conn_init(c, base, fd, ops, arg, trace);
	if (rc)
		return rc;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	fill_addrs(c);
	trace_start(c, false);
	event_add(c->rev, NULL);
	return 0;
}

/*
 * No more callbacks into the owner; the socket sends what it already holds
 * and a FIN.  Called with the owner's lock held; tp_free() comes later.
 */
void tp_shutdown(struct tp_conn *c)
{
	if (c->shut)
		return;
	c->shut = true;
	event_del_noblock(c->rev);
	event_del_noblock(c->wev);
	c->write_armed = false;
	shutdown(c->fd, SHUT_WR);
	trace_end(c);
}

/* Waits for a callback in flight, then releases everything.  No lock held. */
void tp_free(struct tp_conn *c)
{
	if (!c->rev)
		return;
	event_free(c->rev);
	event_free(c->wev);
	c->rev = c->wev = NULL;
	trace_end(c);
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
	/* as evconnlistener_new_bind() would, but with tcp_socket() */
	int one = 1, fd = tcp_socket(sa->sa_family);

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
