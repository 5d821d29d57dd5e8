// SPDX-License-Identifier: MIT
/*
 * The transport's pcap trace: both directions of a connection written to
 * a capture file as TCP segments, one FPDU a segment as dissectors
 * expect, with a made-up handshake and FIN around them.  Kept apart from
 * the data path, which only hands it what each system call moved
 * (tp_trace_data() in tp_internal.h).
 */
#include "config.h" /* _GNU_SOURCE: asprintf */

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "lib/tp_internal.h"
#include "lib/transport.h"

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

/*
 * Two writers on one file would interleave their buffers; and when both
 * ends of a connection live in this process, one shared trace is what
 * lets the passive end see that the active end already records it.
 */
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

/*
 * Our port, known before the SYN to @sa leaves (the socket bound to it
 * first), is listed: the passive end may be ours, in this process.
 */
void tp_trace_list_active(struct tp_conn *c, const struct sockaddr *sa,
			  socklen_t len)
{
	struct sockaddr_storage any = { .ss_family = sa->sa_family };
	struct sockaddr_storage dst;
	socklen_t l = sizeof(c->local);

	memcpy(&dst, sa, len);
	if (bind(c->fd, (struct sockaddr *)&any,
		 sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					   : sizeof(struct sockaddr_in)) == 0 &&
	    getsockname(c->fd, (struct sockaddr *)&c->local, &l) == 0)
		trace_list_active(c, addr_port(&c->local), addr_port(&dst));
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

void tp_trace_unlist(struct tp_conn *c)
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
void tp_trace_start(struct tp_conn *c, bool active)
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
void tp_trace_record(struct tp_conn *c, bool tx, const struct iovec *iov,
		     int n, size_t len)
{
	struct tp_trace_dir *d = &c->trace_dir[tx ? 0 : 1];

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

void tp_trace_end(struct tp_conn *c)
{
	struct timeval now;

	if (!c->trace)
		return;
	tp_trace_unlist(c);
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