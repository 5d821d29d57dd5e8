// SPDX-License-Identifier: MIT
/*
 * The fault-injecting proxy (see fault_proxy.h).  One connection is taken
 * on the proxy's port and one made to the target; then each direction is
 * read into a buffer and written on in pieces of random length, with a
 * pause of a millisecond or two now and then, until the fault's octet:
 * the fault strikes as that octet is about to go.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fault_proxy.h"

const char *const fault_names[FAULT_KINDS] = {
	[FAULT_NONE] = "none",
	[FAULT_DELAY] = "delay",
	[FAULT_STALL] = "stall",
	[FAULT_RESET] = "reset",
	[FAULT_HALF_CLOSE] = "half-close",
	[FAULT_HS_DROP] = "handshake-drop",
	[FAULT_CORRUPT] = "corrupt",
};

#define DIR_BUF (64 * 1024)
/* small socket buffers: a stalled direction shuts the window soon */
#define PROXY_SOCKBUF (16 * 1024)
#define TICK_MS 20

struct dir {
	int src, dst;
	uint8_t buf[DIR_BUF];
	size_t head, len;
	bool src_eof, dst_shut, dropping;
	long long hold_until, stall_until, next_write;
	uint8_t hdr[20];
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void set_sockbuf(int fd)
{
	int v = PROXY_SOCKBUF, one = 1;

	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void nonblocking(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* A close that the other end sees as a reset. */
static void reset_close(int fd)
{
	struct linger l = { 1, 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
}

static void *proxy_main(void *arg);

int fault_proxy_start(struct fault_proxy *p, uint16_t target_port,
		      const struct fault *f, uint64_t seed)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);

	memset(p, 0, sizeof(*p));
	p->target_port = target_port;
	p->f = *f;
	p->rng.s = seed ? seed : 1;
	p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (p->lfd < 0)
		return -errno;
	set_sockbuf(p->lfd);
	if (bind(p->lfd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(p->lfd, 4) ||
	    getsockname(p->lfd, (struct sockaddr *)&a, &l)) {
		int e = -errno;

		close(p->lfd);
		return e;
	}
	p->port = ntohs(a.sin_port);
	atomic_init(&p->stop, false);
	if (pthread_create(&p->thread, NULL, proxy_main, p)) {
		close(p->lfd);
		return -EAGAIN;
	}
	return 0;
}

void fault_proxy_stop(struct fault_proxy *p)
{
	atomic_store(&p->stop, true);
	pthread_join(p->thread, NULL);
	close(p->lfd);
}

/* The piece to write next: often tiny, often middling, sometimes all. */
static size_t pick_chunk(struct fault_proxy *p, size_t len)
{
	uint64_t r = rng_range(&p->rng, 0, 99);
	size_t max = r < 30   ? (size_t)rng_range(&p->rng, 1, 16)
		     : r < 70 ? (size_t)rng_range(&p->rng, 17, 2048)
			      : len;

	return len < max ? len : max;
}

/* Remembers the length of the direction's MPA Request or Reply. */
static void note_frame(struct fault_proxy *p, int k, struct dir *d,
		       const uint8_t *b, size_t n)
{
	uint64_t from = p->fwd[k];

	for (size_t i = 0; i < n && from + i < sizeof(d->hdr); i++)
		d->hdr[from + i] = b[i];
	if (!p->hs_len[k] && from + n >= sizeof(d->hdr))
		p->hs_len[k] = 20 + (uint64_t)(d->hdr[18] << 8 | d->hdr[19]);
}

/* The fault strikes direction @k before the octet at fwd[k] goes; false
 * when the proxy is done with the connection. */
static bool strike(struct fault_proxy *p, struct dir *dirs, int k,
		   long long now)
{
	struct dir *d = &dirs[k];

	p->struck = true;
	switch (p->f.kind) {
	case FAULT_DELAY:
		d->hold_until = now + p->f.ms;
		return true;
	case FAULT_STALL:
		d->stall_until = now + p->f.ms;
		return true;
	case FAULT_CORRUPT:
		d->buf[d->head] ^= p->f.mask;
		return true;
	case FAULT_HALF_CLOSE:
		shutdown(d->dst, SHUT_WR);
		d->dst_shut = true;
		d->dropping = true;
		d->len = 0;
		return true;
	case FAULT_HS_DROP:
		if (!p->f.rst) {
			shutdown(dirs[0].src, SHUT_RDWR);
			shutdown(dirs[0].dst, SHUT_RDWR);
			return false;
		}
		/* fall through */
	default: /* FAULT_RESET */
		reset_close(dirs[0].src);
		reset_close(dirs[0].dst);
		dirs[0].src = dirs[0].dst = -1;
		return false;
	}
}

/* Writes the next piece of direction @k; false when the proxy is done. */
static bool forward(struct fault_proxy *p, struct dir *dirs, int k,
		    long long now)
{
	struct dir *d = &dirs[k];
	size_t chunk;
	ssize_t n;

	if (!p->struck && p->f.kind != FAULT_NONE && p->f.dir == k &&
	    p->fwd[k] == p->f.at) {
		if (!strike(p, dirs, k, now))
			return false;
		if (d->dst_shut || now < d->hold_until)
			return true;
	}
	chunk = pick_chunk(p, d->len);
	if (!p->struck && p->f.dir == k && p->f.at > p->fwd[k] &&
	    p->f.at - p->fwd[k] < chunk)
		chunk = (size_t)(p->f.at - p->fwd[k]); /* up to the fault */
	n = send(d->dst, d->buf + d->head, chunk, MSG_NOSIGNAL);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return true;
	if (n < 0) {
		/* the receiver is gone: so is the sender */
		reset_close(dirs[0].src);
		reset_close(dirs[0].dst);
		dirs[0].src = dirs[0].dst = -1;
		return false;
	}
	note_frame(p, k, d, d->buf + d->head, (size_t)n);
	p->fwd[k] += (uint64_t)n;
	if (p->struck)
		p->after[k] += (uint64_t)n;
	d->head += (size_t)n;
	d->len -= (size_t)n;
	if (!d->len)
		d->head = 0;
	if (rng_range(&p->rng, 0, 49) == 0)
		d->next_write = now + (long long)rng_range(&p->rng, 1, 2);
	return true;
}

/* Reads what direction @k's source has; false when the proxy is done. */
static bool take(struct dir *dirs, int k)
{
	struct dir *d = &dirs[k];
	uint8_t *at = d->buf + d->head + d->len;
	size_t room = DIR_BUF - d->head - d->len;
	uint8_t sink[4096];
	ssize_t n;


	if (d->dropping) {
		at = sink;
		room = sizeof(sink);
	} else if (room == 0 && d->head) {
		memmove(d->buf, d->buf + d->head, d->len);
		d->head = 0;
		at = d->buf + d->len;
		room = DIR_BUF - d->len;
	}
	n = read(d->src, at, room);
	if (n > 0) {
		if (!d->dropping)
			d->len += (size_t)n;
		return true;
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return true;
	if (n < 0) {
		/* the source was reset: so is the other side */
		reset_close(dirs[0].src);
		reset_close(dirs[0].dst);
		dirs[0].src = dirs[0].dst = -1;
		return false;
	}
	d->src_eof = true;
	return true;
}

static int accept_one(struct fault_proxy *p)
{
	while (!atomic_load(&p->stop)) {
		struct pollfd pf = { p->lfd, POLLIN, 0 };

		if (poll(&pf, 1, TICK_MS) == 1)
			return accept(p->lfd, NULL, NULL);
	}
	return -1;
}

static int connect_target(struct fault_proxy *p)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(p->target_port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	set_sockbuf(fd);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One pass of the loop: false when the connection is over. */
static bool step(struct fault_proxy *p, struct dir *dirs)
{
	struct pollfd pf[4];
	int n = 0, which[4], k;
	long long now = now_ms(), wake = now + TICK_MS;
	bool live = false;

	for (k = 0; k < 2; k++) {
		struct dir *d = &dirs[k];
		bool room = d->dropping || d->head + d->len < DIR_BUF || d->head;

		if (!d->src_eof && room && now >= d->stall_until) {
			pf[n] = (struct pollfd){ d->src, POLLIN, 0 };
			which[n++] = k;
		} else if (!d->src_eof && d->stall_until > now &&
			   d->stall_until < wake) {
			wake = d->stall_until;
		}
		if (d->len && !d->dst_shut) {
			long long at = d->hold_until > d->next_write
					       ? d->hold_until
					       : d->next_write;

			if (at <= now) {
				pf[n] = (struct pollfd){ d->dst, POLLOUT, 0 };
				which[n++] = k + 2;
			} else if (at < wake) {
				wake = at;
			}
		}
		if (d->src_eof && !d->len && !d->dst_shut) {
			/* the source's FIN, once all before it has gone */
			shutdown(d->dst, SHUT_WR);
			d->dst_shut = true;
		}
		live |= !d->src_eof || (d->len && !d->dst_shut);
	}
	if (!live)
		return false;
	if (poll(pf, (nfds_t)n, (int)(wake > now ? wake - now : 0)) <= 0)
		return true;
	for (int i = 0; i < n; i++) {
		if (!pf[i].revents)
			continue;
		k = which[i];
		if (k < 2 ? !take(dirs, k) : !forward(p, dirs, k - 2, now_ms()))
			return false;
		if (dirs[0].src < 0)
			return false;
	}
	return true;
}

static void *proxy_main(void *arg)
{
	struct fault_proxy *p = arg;
	struct dir *dirs;
	int c = accept_one(p), s;

	if (c < 0)
		return NULL;
	s = connect_target(p);
	dirs = calloc(2, sizeof(*dirs));
	if (s < 0 || !dirs) {
		snprintf(p->err, sizeof(p->err), "proxy: cannot reach %u: %s",
			 p->target_port, strerror(errno));
		if (s >= 0)
			close(s);
		close(c);
		free(dirs);
		return NULL;
	}
	set_sockbuf(c);
	nonblocking(c);
	nonblocking(s);
	dirs[0].src = dirs[1].dst = c;
	dirs[0].dst = dirs[1].src = s;
	while (!atomic_load(&p->stop) && step(p, dirs))
		;
	p->eof[0] = dirs[0].src_eof;
	p->eof[1] = dirs[1].src_eof;
	/* what is left open is closed as it is */
	if (dirs[0].src >= 0) {
		close(dirs[0].src);
		close(dirs[0].dst);
	}
	free(dirs);
	/* a reset leaves both closed; keep the thread until told to stop */
	while (!atomic_load(&p->stop))
		usleep(TICK_MS * 1000);
	return NULL;
}
