// SPDX-License-Identifier: MIT
/*
 * TCP for iwarp-dump: segments are grouped by connection (the 4-tuple) and
 * each direction is put back together by sequence number once the whole
 * capture is read.  The SYN gives the initial sequence number; without one
 * the first segment seen starts the stream.  Retransmissions and overlaps
 * keep the octets that arrived first (a copy that differs is reported), a
 * hole ends the stream there, and every octet remembers the frame by which
 * it and all before it had arrived: where tshark would show an FPDU.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dump.h"

#define HASH_SIZE 4096

void dump_init(struct dump *d)
{
	memset(d, 0, offsetof(struct dump, fpdu));
	d->tail = &d->conns;
}

static void dir_free(struct dump_dir *dir)
{
	for (size_t i = 0; i < dir->n_segs; i++)
		free(dir->segs[i].data);
	free(dir->segs);
	free(dir->data);
	free(dir->ready);
	free(dir->rd.rr);
	free(dir->rd.ar);
}

void dump_fini(struct dump *d)
{
	struct dump_conn *c = d->conns;

	while (c) {
		struct dump_conn *next = c->next;

		dir_free(&c->dir[0]);
		dir_free(&c->dir[1]);
		free(c);
		c = next;
	}
	for (unsigned int i = 0; i < d->n_pending; i++)
		free(d->pending[i]);
	free(d->hash);
	free(d->ts);
}

/* A connection, appended in order of first appearance. */
struct dump_conn *dump_conn_new(struct dump *d)
{
	struct dump_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->id = ++d->n_conns;
	c->initiator = -1;
	for (int s = 0; s < 2; s++)
		for (int q = 0; q < RDMAP_QN_MAX; q++)
			ddp_queue_init(&c->dir[s].rd.q[q]);
	*d->tail = c;
	d->tail = &c->next;
	return c;
}

static size_t addr_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

static unsigned int tuple_hash(int family, const uint8_t *a, const uint8_t *b,
			       uint16_t pa, uint16_t pb)
{
	unsigned int h = (unsigned int)family;

	/* symmetric: both directions land in the same bucket */
	for (size_t i = 0; i < addr_len(family); i++)
		h += (unsigned int)(a[i] + b[i]) * 31u;
	return (h + pa + pb) % HASH_SIZE;
}

/* The side of @c that @src:@sport is, or -1 when it is not this tuple. */
static int side_of(const struct dump_conn *c, int family, const uint8_t *src,
		   const uint8_t *dst, uint16_t sport, uint16_t dport)
{
	size_t n = addr_len(family);

	if (c->family != family)
		return -1;
	for (int s = 0; s < 2; s++)
		if (c->port[s] == sport && c->port[!s] == dport &&
		    !memcmp(c->addr[s], src, n) && !memcmp(c->addr[!s], dst, n))
			return s;
	return -1;
}

/*
 * A SYN on a tuple that already carried a connection opens a new one; a
 * retransmitted SYN (same sequence number) does not.
 */
static bool reused(const struct dump_conn *c, int side, uint8_t flags,
		   uint32_t seq)
{
	const struct dump_dir *dir = &c->dir[side];

	if ((flags & (DUMP_TCP_SYN | DUMP_TCP_ACK)) != DUMP_TCP_SYN)
		return false;
	return (dir->syn && dir->isn != seq) || dir->n_segs ||
	       c->dir[!side].n_segs;
}

static struct dump_conn *lookup(struct dump *d, int family, const uint8_t *src,
				const uint8_t *dst, uint16_t sport,
				uint16_t dport, uint8_t flags, uint32_t seq,
				int *side)
{
	unsigned int h = tuple_hash(family, src, dst, sport, dport);
	struct dump_conn **pp, *c;

	if (!d->hash) {
		d->hash = calloc(HASH_SIZE, sizeof(*d->hash));
		if (!d->hash)
			return NULL;
	}
	for (pp = &d->hash[h]; (c = *pp); pp = &c->hash_next) {
		*side = side_of(c, family, src, dst, sport, dport);
		if (*side < 0)
			continue;
		if (!reused(c, *side, flags, seq))
			return c;
		*pp = c->hash_next; /* the old one stays in the list */
		break;
	}
	c = dump_conn_new(d);
	if (!c)
		return NULL;
	c->family = family;
	memcpy(c->addr[0], src, addr_len(family));
	memcpy(c->addr[1], dst, addr_len(family));
	c->port[0] = sport;
	c->port[1] = dport;
	c->hash_next = d->hash[h];
	d->hash[h] = c;
	*side = 0;
	return c;
}

/* Keeps one segment of a connection for reassembly.  0 or -ENOMEM. */
int dump_tcp_segment(struct dump *d, int family, const uint8_t *src,
		     const uint8_t *dst, uint16_t sport, uint16_t dport,
		     uint32_t seq, uint8_t flags, const uint8_t *p,
		     uint32_t len, uint32_t frame)
{
	struct dump_conn *c;
	struct dump_dir *dir;
	struct dump_seg *sg;
	int side;

	c = lookup(d, family, src, dst, sport, dport, flags, seq, &side);
	if (!c)
		return -ENOMEM;
	dir = &c->dir[side];
	if (flags & DUMP_TCP_SYN) {
		if (!(flags & DUMP_TCP_ACK) && c->initiator < 0)
			c->initiator = side;
		dir->syn = true;
		dir->isn = seq;
		seq++; /* data on a SYN follows it */
	}
	if (flags & DUMP_TCP_FIN)
		dir->fin = true;
	if (len == 0)
		return 0;
	if (dir->n_segs == dir->cap_segs) {
		size_t cap = dir->cap_segs ? dir->cap_segs * 2 : 16;
		struct dump_seg *segs = realloc(dir->segs, cap * sizeof(*segs));

		if (!segs)
			return -ENOMEM;
		dir->segs = segs;
		dir->cap_segs = cap;
	}
	sg = &dir->segs[dir->n_segs];
	sg->data = malloc(len);
	if (!sg->data)
		return -ENOMEM;
	memcpy(sg->data, p, len);
	sg->seq = seq;
	sg->len = len;
	sg->frame = frame;
	dir->n_segs++;
	return 0;
}

/* Stream offset of a segment; negative when it lies before the start. */
static int64_t seg_off(const struct dump_seg *sg, uint32_t first)
{
	return (int32_t)(sg->seq - first);
}

static int cmp_by_off(const void *a, const void *b)
{
	const struct dump_seg *x = *(const struct dump_seg *const *)a;
	const struct dump_seg *y = *(const struct dump_seg *const *)b;

	if (x->seq != y->seq)
		return (int32_t)(x->seq - y->seq) < 0 ? -1 : 1;
	return x->frame < y->frame ? -1 : x->frame > y->frame;
}

/*
 * How far the stream runs without a hole from offset 0, and where the
 * hole is: the first segment past it names the frame.
 */
static size_t contiguous_len(struct dump_dir *dir, uint32_t first)
{
	struct dump_seg **order = malloc(dir->n_segs * sizeof(*order));
	uint64_t cover = 0;

	if (!order)
		return 0;
	for (size_t i = 0; i < dir->n_segs; i++)
		order[i] = &dir->segs[i];
	qsort(order, dir->n_segs, sizeof(*order), cmp_by_off);
	for (size_t i = 0; i < dir->n_segs; i++) {
		int64_t off = seg_off(order[i], first);

		if (off > (int64_t)cover) {
			dir->gap = true;
			dir->gap_frame = order[i]->frame;
			dir->gap_len = (uint64_t)off - cover;
			break;
		}
		if (off + order[i]->len > (int64_t)cover)
			cover = (uint64_t)(off + order[i]->len);
	}
	free(order);
	return (size_t)cover;
}

/*
 * Lays the segments down in capture order: the first copy of an octet
 * wins, and a later copy that differs is reported once per segment.
 */
static void fill(struct dump *d, struct dump_conn *c, struct dump_dir *dir,
		 uint32_t first, uint32_t *frame_of)
{
	for (size_t i = 0; i < dir->n_segs; i++) {
		const struct dump_seg *sg = &dir->segs[i];
		int64_t off = seg_off(sg, first);
		size_t from = off < 0 ? (size_t)-off : 0;
		size_t differ = 0, diff_at = 0;
		uint32_t diff_frame = 0;

		for (size_t k = from; k < sg->len; k++) {
			uint64_t at = (uint64_t)(off + (int64_t)k);

			if (at >= dir->len)
				break;
			if (!frame_of[at]) {
				dir->data[at] = sg->data[k];
				frame_of[at] = sg->frame;
			} else if (dir->data[at] != sg->data[k] && !differ++) {
				diff_at = at;
				diff_frame = frame_of[at];
			}
		}
		if (differ)
			dump_violation(d, c, dir, sg->frame, diff_at,
				       "retransmitted octets differ from frame %u's: %zu octets from TCP stream offset %zu",
				       diff_frame, differ, diff_at);
	}
}

/*
 * Builds both directions' streams of @c from their segments.  Returns 0 or
 * -ENOMEM.  Segments are freed once laid down.
 */
int dump_assemble(struct dump *d, struct dump_conn *c)
{
	for (int s = 0; s < 2; s++) {
		struct dump_dir *dir = &c->dir[s];
		uint32_t first, *frame_of;

		if (!dir->n_segs)
			continue;
		first = dir->syn ? dir->isn + 1 : dir->segs[0].seq;
		dir->len = contiguous_len(dir, first);
		dir->data = malloc(dir->len ? dir->len : 1);
		frame_of = calloc(dir->len ? dir->len : 1, sizeof(*frame_of));
		if (!dir->data || !frame_of) {
			free(frame_of);
			return -ENOMEM;
		}
		fill(d, c, dir, first, frame_of);
		/* ready: the running maximum, as reassembly waits for holes */
		for (size_t i = 1; i < dir->len; i++)
			if (frame_of[i] < frame_of[i - 1])
				frame_of[i] = frame_of[i - 1];
		dir->ready = frame_of;
		for (size_t i = 0; i < dir->n_segs; i++)
			free(dir->segs[i].data);
		free(dir->segs);
		dir->segs = NULL;
		dir->n_segs = 0;
	}
	return 0;
}

/* Reassembles, reads each handshake and names each direction. */
int dump_prepare(struct dump *d)
{
	for (struct dump_conn *c = d->conns; c; c = c->next) {
		if (!d->raw) {
			if (dump_assemble(d, c))
				return -ENOMEM;
			dump_dir_names(c, NULL, NULL);
		}
		dump_handshake(d, c);
	}
	return 0;
}
