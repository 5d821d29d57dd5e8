// SPDX-License-Identifier: MIT
/*
 * RDMAP error suite: every protocol error a peer can commit produces
 * exactly one Terminate naming it (RFC 5040 sections 4.8 and 7, RFC 5041
 * section 7, RFC 5044 section 8), flushes every outstanding work request
 * exactly once, and leaves all memory outside the target untouched.
 *
 * Side 0 of a pair plays the attacker: its framing state is copied to frame
 * a segment of our choosing, which is fed to side 1, the victim.  What the
 * victim then sends is de-framed and compared octet by octet, and handed to
 * side 0, which must read the same Terminate back.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/byteorder.h"
#include "lib/error.h"
#include "rdmap_pair.h"
#include "ulpdus.h"

/* ---- the arena: a pair, guarded regions, posted work ------------------ */

#define GUARD 64
#define GUARD_BYTE 0xa5

#define LW DDP_ACCESS_LOCAL_WRITE
#define RW DDP_ACCESS_REMOTE_WRITE
#define RR DDP_ACCESS_REMOTE_READ

enum {
	V_RECV,	   /* victim: its posted receives, 4 x 64 octets */
	V_WDST,	   /* victim: remote write target */
	V_RSRC,	   /* victim: remote read source */
	V_NOACC,   /* victim: no remote rights */
	V_SEND,	   /* victim: its own send buffer */
	V_OTHERPD, /* victim: registered under PD 2 */
	A_SRC,	   /* attacker: send source, remote read source */
	A_SINK,	   /* attacker: read sink, remote write target */
	A_RECV,	   /* attacker: 2 x 64 octets of receives */
	N_REGIONS,
};

static const struct {
	int side;
	uint32_t pd;
	size_t len;
	uint32_t access;
} region_def[N_REGIONS] = {
	[V_RECV] = { 1, 1, 4 * 64, LW },
	[V_WDST] = { 1, 1, 1024, RW | LW },
	[V_RSRC] = { 1, 1, 256, RR },
	[V_NOACC] = { 1, 1, 256, LW },
	[V_SEND] = { 1, 1, 64, 0 },
	[V_OTHERPD] = { 1, 2, 256, RW | RR | LW },
	[A_SRC] = { 0, 1, 1024, RR },
	[A_SINK] = { 0, 1, 256, RW | LW },
	[A_RECV] = { 0, 1, 2 * 64, LW },
};

struct region {
	uint8_t *mem; /* guard, buffer, guard */
	uint8_t *buf;
	size_t len;
	uint32_t stag;
	uint8_t *snap;
};

#define MAX_POSTED 32

struct arena {
	struct rng rng;
	struct pair_opts o;
	struct pair p;
	struct region reg[N_REGIONS];
	/* the victim's work requests, and which were open at the attack */
	uint64_t posted[MAX_POSTED];
	int n_posted;
	uint64_t open_wr[MAX_POSTED];
	int n_open;
	/* where the logs stood when the attack began */
	uint32_t cqe_mark[2], ev_mark[2];
	uint32_t ulpdu_mark; /* ULPDUs the victim had sent */
};

#define NO_RECV 0x1

static uint64_t va(const struct region *r)
{
	return (uint64_t)(uintptr_t)r->buf;
}

static void victim_post_recv(struct arena *a, uint64_t id, int slot)
{
	struct region *r = &a->reg[V_RECV];
	struct rdmap_sge sge = { va(r) + 64 * (uint64_t)slot, 64, r->stag };

	require(rdmap_post_recv(&a->p.s[1].qp,
		&(struct rdmap_recv_wr){ id, &sge, 1 }) == 0,
		"receive %#llx refused", (unsigned long long)id);
	require(a->n_posted < MAX_POSTED, "too many work requests");
	a->posted[a->n_posted++] = id;
}

static void victim_post_send(struct arena *a, const struct rdmap_send_wr *wr)
{
	require(rdmap_post_send(&a->p.s[1].qp, wr) == 0,
		"send %#llx refused", (unsigned long long)wr->wr_id);
	require(a->n_posted < MAX_POSTED, "too many work requests");
	a->posted[a->n_posted++] = wr->wr_id;
}

static struct arena *arena_new(const struct pair_opts *o, unsigned int flags)
{
	struct arena *a = calloc(1, sizeof(*a));

	ck_assert_ptr_nonnull(a);
	rng_seed(&a->rng, "rdmap_errors", 0x7e57ab1e);
	if (o)
		a->o = *o;
	else
		pair_opts_default(&a->o);
	a->o.record_wire = true;
	pair_init(&a->p, &a->o, &a->rng);
	/* the victim takes its octets in small random pieces */
	a->p.max_cut = 7;
	for (int i = 0; i < N_REGIONS; i++) {
		struct region *r = &a->reg[i];
		struct ddp_stag_table *t = &a->p.s[region_def[i].side].stags;

		r->len = region_def[i].len;
		r->mem = malloc(r->len + 2 * GUARD);
		r->snap = malloc(r->len);
		require(r->mem && r->snap, "out of memory");
		r->buf = r->mem + GUARD;
		memset(r->mem, GUARD_BYTE, r->len + 2 * GUARD);
		for (size_t k = 0; k < r->len; k++)
			r->buf[k] = (uint8_t)(k * 31 + i * 7 + 1);
		require(ddp_mr_register(t, region_def[i].pd, va(r), r->buf,
					r->len, region_def[i].access,
					&r->stag) == 0,
			"region %d not registered", i);
	}
	if (!(flags & NO_RECV))
		for (int i = 0; i < 4; i++)
			victim_post_recv(a, 0x100 + (uint64_t)i, i);
	for (uint64_t i = 0; i < 2; i++) {
		struct region *r = &a->reg[A_RECV];
		struct rdmap_sge sge = { va(r) + 64 * i, 64, r->stag };

		require(rdmap_post_recv(&a->p.s[0].qp,
			&(struct rdmap_recv_wr){ 0x500 + i, &sge, 1 }) == 0,
			"side 0 receive refused");
	}
	return a;
}

static void arena_free(struct arena *a)
{
	pair_fini(&a->p);
	for (int i = 0; i < N_REGIONS; i++) {
		free(a->reg[i].mem);
		free(a->reg[i].snap);
	}
	free(a);
}

static bool completed_before(const struct pair_side *s, uint32_t mark,
			     uint64_t id)
{
	for (uint32_t i = 0; i < mark; i++)
		if (s->cqe[i].wr_id == id)
			return true;
	return false;
}

/*
 * The attack begins: the victim queues a Send and a Write that must never
 * leave, and the logs, the victim's wire and every region are marked.
 */
static void arena_arm(struct arena *a)
{
	struct pair_side *v = &a->p.s[1];
	struct region *snd = &a->reg[V_SEND], *sink = &a->reg[A_SINK];
	struct rdmap_sge sge = { va(snd), 16, snd->stag };
	struct ulpdus u;

	victim_post_send(a, &(struct rdmap_send_wr){
		.wr_id = 0x200, .op = RDMAP_WR_SEND,
		.flags = RDMAP_WR_SIGNALED, .sge = &sge, .num_sge = 1 });
	victim_post_send(a, &(struct rdmap_send_wr){
		.wr_id = 0x201, .op = RDMAP_WR_WRITE,
		.flags = RDMAP_WR_SIGNALED, .rkey = sink->stag,
		.remote_addr = va(sink), .sge = &sge, .num_sge = 1 });
	for (int i = 0; i < 2; i++) {
		a->cqe_mark[i] = a->p.s[i].n_cqe;
		a->ev_mark[i] = a->p.s[i].n_ev;
	}
	ulpdus_deframe(&u, v->wire, v->wire_len, a->o.crc, a->o.markers);
	a->ulpdu_mark = u.n;
	ulpdus_free(&u);
	a->n_open = 0;
	for (int i = 0; i < a->n_posted; i++)
		if (!completed_before(v, a->cqe_mark[1], a->posted[i]))
			a->open_wr[a->n_open++] = a->posted[i];
	for (int i = 0; i < N_REGIONS; i++)
		memcpy(a->reg[i].snap, a->reg[i].buf, a->reg[i].len);
}

/* ---- forging segments ------------------------------------------------- */

#define U_LAST 0x41 /* DDP control: untagged, L, DV 1 */
#define U_MID 0x01
#define T_LAST 0xc1 /* tagged, L, DV 1 */
#define T_MID 0x81
#define RD(op) (0x40 | (op)) /* RDMAP control: RV 1 */

static size_t u_hdr(uint8_t *o, uint8_t ctrl, uint8_t rctrl, uint32_t inv,
		    uint32_t qn, uint32_t msn, uint32_t mo)
{
	o[0] = ctrl;
	o[1] = rctrl;
	put_be32(o + 2, inv);
	put_be32(o + 6, qn);
	put_be32(o + 10, msn);
	put_be32(o + 14, mo);
	return 18;
}

static size_t t_hdr(uint8_t *o, uint8_t ctrl, uint8_t rctrl, uint32_t stag,
		    uint64_t to)
{
	o[0] = ctrl;
	o[1] = rctrl;
	put_be32(o + 2, stag);
	put_be64(o + 6, to);
	return 14;
}

static size_t rr_body(uint8_t *o, uint32_t sink_stag, uint64_t sink_to,
		      uint32_t size, uint32_t src_stag, uint64_t src_to)
{
	put_be32(o, sink_stag);
	put_be64(o + 4, sink_to);
	put_be32(o + 12, size);
	put_be32(o + 16, src_stag);
	put_be64(o + 20, src_to);
	return 28;
}

static size_t fill(uint8_t *o, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		o[i] = (uint8_t)(seed + i * 13);
	return n;
}

struct forge {
	struct mpa_tx t; /* a copy of the attacker's framing state */
	uint8_t w[1 << 14];
	size_t len;
};

static void forge_begin(struct forge *f, struct arena *a)
{
	f->t = a->p.s[0].qp.mpa_tx;
	f->len = 0;
}

/* Frames @ulpdu after what was forged so far; returns where it starts. */
static size_t forge_fpdu(struct forge *f, const uint8_t *ulpdu, size_t len)
{
	struct iovec in = { (void *)(uintptr_t)ulpdu, len }, out[64];
	uint8_t fr_markers[MPA_TX_MAX_MARKERS][MPA_MARKER_LEN];
	struct mpa_tx_frame fr = { .markers = fr_markers };
	size_t start = f->len;
	int cnt = mpa_tx_fpdu(&f->t, &in, 1, &fr, out, 64);

	ck_assert_int_gt(cnt, 0);
	for (int i = 0; i < cnt; i++) {
		require(f->len + out[i].iov_len <= sizeof(f->w),
			"forge buffer full");
		memcpy(f->w + f->len, out[i].iov_base, out[i].iov_len);
		f->len += out[i].iov_len;
	}
	return start;
}

/* ---- what must follow an error ----------------------------------------- */

struct expect {
	int err;	/* the victim's error (negative) */
	bool terminate; /* the victim sends a Terminate for it */
	uint8_t layer, etype, ecode;
	bool md;	/* M and D: the offending segment's length and header */
	bool r;		/* R: its Read Request header */
	const uint8_t *seg; /* the offending ULPDU as sent */
	size_t seg_len;
	int target; /* the region the error may have written to, or -1 */
};

static uint32_t count_events(const struct pair_side *s, uint32_t from,
			     uint8_t type)
{
	uint32_t n = 0;

	for (uint32_t i = from; i < s->n_ev; i++)
		n += s->ev[i].type == type;
	return n;
}

static const struct rdmap_event *find_event(const struct pair_side *s,
					    uint32_t from, uint8_t type)
{
	for (uint32_t i = from; i < s->n_ev; i++)
		if (s->ev[i].type == type)
			return &s->ev[i];
	return NULL;
}

static void pump_victim(struct arena *a)
{
	for (int i = 0; i < 100000; i++)
		if (!pair_pump_one(&a->p, 1, SIZE_MAX))
			return;
	ck_abort_msg("the victim never went quiet");
}

/* Guards intact everywhere; contents intact except in @target. */
static void assert_memory(const struct arena *a, int target)
{
	for (int i = 0; i < N_REGIONS; i++) {
		const struct region *r = &a->reg[i];

		for (size_t k = 0; k < GUARD; k++) {
			require(r->mem[k] == GUARD_BYTE,
				"guard before region %d hit at -%zu", i,
				GUARD - k);
			require(r->buf[r->len + k] == GUARD_BYTE,
				"guard after region %d hit at +%zu", i, k);
		}
		require(i == target || memcmp(r->buf, r->snap, r->len) == 0,
			"region %d changed", i);
	}
}

/* Every work request open at the attack completes once, flushed with @err. */
static void assert_flushed(const struct arena *a, int err)
{
	const struct pair_side *v = &a->p.s[1];

	ck_assert_uint_eq(v->n_cqe - a->cqe_mark[1], (uint32_t)a->n_open);
	for (int i = 0; i < a->n_open; i++) {
		int seen = 0;

		for (uint32_t k = a->cqe_mark[1]; k < v->n_cqe; k++) {
			const struct rdmap_cqe *c = &v->cqe[k];

			if (c->wr_id != a->open_wr[i])
				continue;
			seen++;
			require(c->status == RDMAP_WC_WR_FLUSH_ERR &&
					c->err == err,
				"wr %#llx: status %u err %d, not flush %d",
				(unsigned long long)c->wr_id, c->status,
				c->err, err);
		}
		require(seen == 1, "wr %#llx completed %d times",
			(unsigned long long)a->open_wr[i], seen);
	}
}

/* Work posted on a dead stream completes at once, flushed. */
static void assert_posting_flushes(struct arena *a, int err)
{
	struct pair_side *v = &a->p.s[1];
	struct region *r = &a->reg[V_RECV], *snd = &a->reg[V_SEND];
	struct rdmap_sge rs = { va(r), 64, r->stag };
	struct rdmap_sge ss = { va(snd), 8, snd->stag };
	uint32_t n = v->n_cqe;

	ck_assert_int_eq(rdmap_post_recv(&v->qp,
		&(struct rdmap_recv_wr){ 0x300, &rs, 1 }), 0);
	ck_assert_uint_eq(v->n_cqe, n + 1);
	ck_assert_uint_eq(v->cqe[n].wr_id, 0x300);
	ck_assert(v->cqe[n].recv);
	ck_assert_uint_eq(v->cqe[n].status, RDMAP_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(v->cqe[n].err, err);
	ck_assert_int_eq(rdmap_post_send(&v->qp, &(struct rdmap_send_wr){
		.wr_id = 0x301, .op = RDMAP_WR_SEND, .sge = &ss,
		.num_sge = 1 }), 0);
	ck_assert_uint_eq(v->n_cqe, n + 2);
	ck_assert_uint_eq(v->cqe[n + 1].wr_id, 0x301);
	ck_assert_uint_eq(v->cqe[n + 1].opcode, RDMAP_WC_SEND);
	ck_assert_uint_eq(v->cqe[n + 1].status, RDMAP_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(v->cqe[n + 1].err, err);
}

/* The one Terminate the victim sent, octet by octet. */
static void assert_terminate_wire(const struct arena *a, const struct expect *e)
{
	const struct pair_side *v = &a->p.s[1];
	size_t hl = e->md ? (e->seg[0] & 0x80 ? 14 : 18) : 0;
	size_t want_len = 18 + 4 + (e->md ? 2 + hl : 0) + (e->r ? 28 : 0);
	uint8_t img[18];
	struct ulpdus u;
	const uint8_t *t;

	ulpdus_deframe(&u, v->wire, v->wire_len, a->o.crc, a->o.markers);
	ck_assert_msg(u.n == a->ulpdu_mark + 1,
		      "victim sent %u ULPDUs after the error, not 1",
		      u.n - a->ulpdu_mark);
	t = u.data + u.off[a->ulpdu_mark];
	u_hdr(img, U_LAST, RD(RDMAP_OP_TERMINATE), 0, 2, 1, 0);
	ck_assert_mem_eq(t, img, 18);
	ck_assert_uint_eq(u.ulen[a->ulpdu_mark], want_len);
	ck_assert_uint_eq(t[18], e->layer << 4 | e->etype);
	ck_assert_uint_eq(t[19], e->ecode);
	ck_assert_uint_eq(t[20], (e->md ? 0xc0 : 0) | (e->r ? 0x20 : 0));
	ck_assert_uint_eq(t[21], 0);
	if (e->md) {
		ck_assert_uint_eq(get_be16(t + 22), e->seg_len);
		ck_assert_mem_eq(t + 24, e->seg, hl);
	}
	if (e->r)
		ck_assert_mem_eq(t + 24 + hl, e->seg + 18, 28);
	ulpdus_free(&u);
}

/* Side 0 reads the victim's Terminate back and ends without one of its own. */
static void assert_attacker_reads_it(struct arena *a, const struct expect *e)
{
	struct pair_side *s = &a->p.s[0];
	const struct rdmap_event *ev;
	size_t hl = e->md ? (e->seg[0] & 0x80 ? 14 : 18) : 0;

	ck_assert_int_eq(s->feed_err, -IW_ETERMINATED);
	ck_assert_uint_eq(count_events(s, a->ev_mark[0],
				       RDMAP_EV_TERMINATE_RECEIVED), 1);
	ev = find_event(s, a->ev_mark[0], RDMAP_EV_TERMINATE_RECEIVED);
	ck_assert_ptr_nonnull(ev->term);
	ck_assert_uint_eq(ev->term->layer, e->layer);
	ck_assert_uint_eq(ev->term->etype, e->etype);
	ck_assert_uint_eq(ev->term->ecode, e->ecode);
	ck_assert_int_eq(ev->term->m, e->md);
	ck_assert_int_eq(ev->term->d, e->md);
	ck_assert_int_eq(ev->term->r, e->r);
	ck_assert_uint_eq(ev->term->ddp_hdr_len, hl);
	if (e->md) {
		ck_assert_uint_eq(ev->term->seg_len, e->seg_len);
		ck_assert_mem_eq(ev->term->ddp_hdr, e->seg, hl);
	}
	ck_assert_int_eq(ev->term->have_rdma_hdr, e->r);
	if (e->r)
		ck_assert_mem_eq(ev->term->rdma_hdr, e->seg + 18, 28);
	ck_assert_uint_eq(count_events(s, a->ev_mark[0], RDMAP_EV_ERROR), 1);
	ck_assert_int_eq(find_event(s, a->ev_mark[0], RDMAP_EV_ERROR)->err,
			 -IW_ETERMINATED);
	ck_assert_uint_eq(s->qp.state, RDMAP_QP_ERROR);
	ck_assert_uint_eq(pair_pump_one(&a->p, 0, SIZE_MAX), 0);
}

/* Everything an error in the victim must lead to, and nothing else. */
static void expect_error(struct arena *a, const struct expect *e)
{
	struct pair_side *v = &a->p.s[1];
	static const uint8_t junk[16] = { 0x00, 0x0e, 0x41, 0x43 };
	const struct rdmap_event *ev;
	size_t sent_before = v->wire_len;

	ck_assert_int_eq(v->qp.err, e->err);
	ck_assert_uint_eq(v->qp.state, e->terminate ? RDMAP_QP_TERMINATING
						    : RDMAP_QP_ERROR);
	ck_assert_uint_eq(count_events(v, a->ev_mark[1], RDMAP_EV_ERROR), 1);
	ck_assert_int_eq(find_event(v, a->ev_mark[1], RDMAP_EV_ERROR)->err,
			 e->err);
	assert_flushed(a, e->err);

	/* later octets or the end of the stream are refused, change nothing */
	ck_assert_int_eq(rdmap_rx_feed(&v->qp, junk, sizeof(junk)), e->err);
	ck_assert_int_eq(rdmap_rx_eof(&v->qp), e->err);
	ck_assert_uint_eq(v->n_cqe - a->cqe_mark[1], (uint32_t)a->n_open);
	ck_assert_uint_eq(count_events(v, a->ev_mark[1], RDMAP_EV_ERROR), 1);
	assert_posting_flushes(a, e->err);

	pump_victim(a);
	if (e->terminate) {
		assert_terminate_wire(a, e);
		ck_assert_uint_eq(v->qp.state, RDMAP_QP_ERROR);
		ck_assert_uint_eq(count_events(v, a->ev_mark[1],
					       RDMAP_EV_TERMINATE_SENT), 1);
		ev = find_event(v, a->ev_mark[1], RDMAP_EV_TERMINATE_SENT);
		ck_assert_int_eq(ev->err, e->err);
		assert_attacker_reads_it(a, e);
	} else {
		ck_assert_uint_eq(v->wire_len, sent_before);
		ck_assert_uint_eq(count_events(v, a->ev_mark[1],
					       RDMAP_EV_TERMINATE_SENT), 0);
		ck_assert_uint_eq(a->p.s[0].n_ev, a->ev_mark[0]);
	}
	/* nothing completed twice, nothing new after the posts above */
	ck_assert_uint_eq(v->n_cqe - a->cqe_mark[1], (uint32_t)a->n_open + 2);
	assert_memory(a, e->target);
}

/* Frames one forged ULPDU, feeds it to the victim, checks the aftermath. */
static void attack(struct arena *a, const uint8_t *ulpdu, size_t len,
		   struct expect e)
{
	struct forge *f = malloc(sizeof(*f));

	ck_assert_ptr_nonnull(f);
	forge_begin(f, a);
	forge_fpdu(f, ulpdu, len);
	ck_assert_int_eq(pair_inject(&a->p, 1, f->w, f->len), e.err);
	e.seg = ulpdu;
	e.seg_len = len;
	e.terminate = true;
	expect_error(a, &e);
	free(f);
}

#define DDP_ERR(code, et, ec)                                    \
	(struct expect){ -(code), true, 1, (et), (ec), true, false, \
			 NULL, 0, -1 }
#define RDMAP_ERR(code, et, ec)                                  \
	(struct expect){ -(code), true, 0, (et), (ec), true, false, \
			 NULL, 0, -1 }
#define MPA_ERR(code, ec) \
	(struct expect){ -(code), true, 2, 0, (ec), false, false, NULL, 0, -1 }

/* A Write of @n octets at @to under @stag. */
static size_t write_seg(uint8_t *o, uint32_t stag, uint64_t to, size_t n)
{
	size_t hl = t_hdr(o, T_LAST, RD(RDMAP_OP_WRITE), stag, to);

	return hl + fill(o + hl, n, 0x10);
}

/* A whole Send of @n octets, MSN @msn. */
static size_t send_seg(uint8_t *o, uint8_t op, uint32_t inv, uint32_t msn,
		       size_t n)
{
	size_t hl = u_hdr(o, U_LAST, RD(op), inv, 0, msn, 0);

	return hl + fill(o + hl, n, 0x20);
}

static void attack_write(uint32_t stag_of(struct arena *), uint64_t to_delta,
			 bool absolute, struct expect e)
{
	struct arena *a = arena_new(NULL, 0);
	uint8_t seg[64];
	uint32_t stag = stag_of(a);
	uint64_t to = absolute ? to_delta : va(&a->reg[V_WDST]) + to_delta;

	arena_arm(a);
	attack(a, seg, write_seg(seg, stag, to, 16), e);
	arena_free(a);
}

/* ---- DDP layer: tagged buffers ----------------------------------------- */

static uint32_t wdst_stag(struct arena *a)
{
	return a->reg[V_WDST].stag;
}

static uint32_t unknown_stag(struct arena *a)
{
	(void)a;
	return 0x999u << 8 | 0x11; /* an index the table never handed out */
}

static uint32_t wrong_key_stag(struct arena *a)
{
	return a->reg[V_WDST].stag ^ 0x5a;
}

static uint32_t deregistered_stag(struct arena *a)
{
	uint32_t s = a->reg[V_WDST].stag;

	ck_assert_int_eq(ddp_mr_deregister(&a->p.s[1].stags, s), 0);
	return s;
}

START_TEST(write_to_unknown_stag_is_ddp_invalid_stag)
{
	attack_write(unknown_stag, 0, false, DDP_ERR(IW_EDDP_T_STAG, 1, 0x00));
}
END_TEST

START_TEST(write_with_wrong_stag_key_is_ddp_invalid_stag)
{
	attack_write(wrong_key_stag, 0, false,
		     DDP_ERR(IW_EDDP_T_STAG, 1, 0x00));
}
END_TEST

START_TEST(write_to_deregistered_stag_is_ddp_invalid_stag)
{
	attack_write(deregistered_stag, 0, false,
		     DDP_ERR(IW_EDDP_T_STAG, 1, 0x00));
}
END_TEST

START_TEST(write_to_stag_invalidated_by_peer_is_ddp_invalid_stag)
{
	struct arena *a = arena_new(NULL, 0);
	struct region *src = &a->reg[A_SRC], *w = &a->reg[V_WDST];
	struct rdmap_sge sge = { va(src), 8, src->stag };
	const struct rdmap_cqe *c;
	uint8_t seg[64];

	/* an honest Send with Invalidate first */
	ck_assert_int_eq(rdmap_post_send(&a->p.s[0].qp, &(struct rdmap_send_wr){
		.wr_id = 1, .op = RDMAP_WR_SEND_INV, .inv_stag = w->stag,
		.sge = &sge, .num_sge = 1 }), 0);
	pair_pump(&a->p);
	ck_assert_uint_eq(a->p.s[1].n_cqe, 1);
	c = &a->p.s[1].cqe[0];
	ck_assert_uint_eq(c->wr_id, 0x100);
	ck_assert_uint_eq(c->status, RDMAP_WC_SUCCESS);
	ck_assert_uint_eq(c->flags, RDMAP_CQE_INVALIDATED);
	ck_assert_uint_eq(c->inv_stag, w->stag);
	arena_arm(a);
	attack(a, seg, write_seg(seg, w->stag, va(w), 16),
	       DDP_ERR(IW_EDDP_T_STAG, 1, 0x00));
	arena_free(a);
}
END_TEST

START_TEST(write_to_stag_of_another_pd_is_ddp_not_associated)
{
	struct arena *a = arena_new(NULL, 0);
	uint8_t seg[64];

	arena_arm(a);
	attack(a, seg, write_seg(seg, a->reg[V_OTHERPD].stag,
				 va(&a->reg[V_OTHERPD]), 16),
	       DDP_ERR(IW_EDDP_T_NOT_ASSOC, 1, 0x02));
	arena_free(a);
}
END_TEST

START_TEST(write_below_the_base_is_ddp_bounds)
{
	attack_write(wdst_stag, (uint64_t)-1, false,
		     DDP_ERR(IW_EDDP_T_BOUNDS, 1, 0x01));
}
END_TEST

START_TEST(write_past_the_end_is_ddp_bounds)
{
	attack_write(wdst_stag, 1024 - 8, false,
		     DDP_ERR(IW_EDDP_T_BOUNDS, 1, 0x01));
}
END_TEST

START_TEST(write_wrapping_2_64_is_ddp_to_wrap)
{
	attack_write(wdst_stag, UINT64_MAX - 7, true,
		     DDP_ERR(IW_EDDP_T_TO_WRAP, 1, 0x03));
}
END_TEST

START_TEST(tagged_segment_with_ddp_version_2_is_tagged_version_error)
{
	struct arena *a = arena_new(NULL, 0);
	uint8_t seg[64];
	size_t n = write_seg(seg, wdst_stag(a), va(&a->reg[V_WDST]), 16);

	seg[0] = 0xc2;
	arena_arm(a);
	attack(a, seg, n, DDP_ERR(IW_EDDP_T_VERSION, 1, 0x04));
	arena_free(a);
}
END_TEST

/* ---- DDP layer: untagged buffers ---------------------------------------- */

START_TEST(untagged_segment_with_ddp_version_0_is_untagged_version_error)
{
	struct arena *a = arena_new(NULL, 0);
	uint8_t seg[64];
	size_t n = send_seg(seg, RDMAP_OP_SEND, 0, 1, 16);

	seg[0] = 0x40;
	arena_arm(a);
	attack(a, seg, n, DDP_ERR(IW_EDDP_U_VERSION, 2, 0x06));
	arena_free(a);
}
END_TEST

START_TEST(untagged_segment_on_qn_3_is_invalid_qn)
{
	struct arena *a = arena_new(NULL, 0);
	uint8_t seg[64];
	size_t n = u_hdr(seg, U_LAST, RD(RDMAP_OP_SEND), 0, 3, 1, 0);

	n += fill(seg + n, 16, 1);
	arena_arm(a);
	attack(a, seg, n, DDP_ERR(IW_EDDP_U_QN, 2, 0x01));
	arena_free(a);
}
END_TEST

START_TEST(send_with_no_receive_posted_is_no_buffer)
{
	struct arena *a = arena_new(NULL, NO_RECV);
	uint8_t seg[64];

	arena_arm(a);
	attack(a, seg, send_seg(seg, RDMAP_OP_SEND, 0, 1, 16),
	       DDP_ERR(IW_EDDP_U_NO_BUFFER, 2, 0x02));
	arena_free(a);
}
END_TEST

START_TEST(send_with_msn_5_when_1_is_due_is_msn_error)
{
	struct arena *a = arena_new(NULL, 0);
	uint8_t seg[64];

	arena_arm(a);
	attack(a, seg, send_seg(seg, RDMAP_OP_SEND, 0, 5, 16),
	       DDP_ERR(IW_EDDP_U_MSN, 2, 0x03));
	arena_free(a);
}
END_TEST

START_TEST(first_segment_with_mo_4_is_mo_error)
{
	struct arena *a = arena_new(NULL, 0);
	uint8_t seg[64];
	size_t n = u_hdr(seg, U_LAST, RD(RDMAP_OP_SEND), 0, 0, 1, 4);

	n += fill(seg + n, 16, 1);
	arena_arm(a);
	attack(a, seg, n, DDP_ERR(IW_EDDP_U_MO, 2, 0x04));
	arena_free(a);
}
END_TEST

START_TEST(send_longer_than_the_posted_receive_is_too_long)
{
	struct arena *a = arena_new(NULL, 0);
	uint8_t seg[128];

	arena_arm(a);
	/* nothing of it may land: V_RECV stays as it was */
	attack(a, seg, send_seg(seg, RDMAP_OP_SEND, 0, 1, 65),
	       DDP_ERR(IW_EDDP_U_TOO_LONG, 2, 0x05));
	arena_free(a);
}
END_TEST

/*
 * A ULPDU shorter than the header its control octet announces: the header
 * cannot be echoed (it was never sent whole), so no M or D.
 */
START_TEST(ulpdu_shorter_than_its_ddp_header_is_ddp_malformed)
{
	for (int tagged = 0; tagged < 2; tagged++) {
		struct arena *a = arena_new(NULL, 0);
		uint8_t seg[18];
		size_t n = tagged ? t_hdr(seg, T_LAST, RD(0), wdst_stag(a), 0)
				  : u_hdr(seg, U_LAST, RD(3), 0, 0, 1, 0);
		struct expect e = DDP_ERR(IW_EDDP_MALFORMED, 0, 0x00);

		e.md = false;
		arena_arm(a);
		attack(a, seg, n - 4, e);
		arena_free(a);
	}
}
END_TEST

/*
 * Loop: a segment with several faults in its headers is reported by the
 * first check in layer order: DDP version, queue number, MSN, MO (all
 * DDP), then RDMAP version, opcode (opcode 9 is unknown, QN 3 does not
 * exist, MSN 1 and MO 0 are the expected ones).
 */
START_TEST(header_faults_are_reported_in_layer_order)
{
	static const struct {
		uint8_t ctrl, rctrl;
		uint32_t qn, msn, mo;
		int code;
		uint8_t layer, etype, ecode;
	} c[] = {
		{ 0x40, 0x89, 3, 1, 0, IW_EDDP_U_VERSION, 1, 2, 0x06 },
		{ 0xc2, 0x83, 0, 1, 0, IW_EDDP_T_VERSION, 1, 1, 0x04 },
		{ U_LAST, 0x89, 3, 1, 0, IW_EDDP_U_QN, 1, 2, 0x01 },
		{ U_LAST, 0x89, 0, 5, 0, IW_EDDP_U_MSN, 1, 2, 0x03 },
		{ U_LAST, 0x89, 0, 1, 4, IW_EDDP_U_MO, 1, 2, 0x04 },
		{ U_LAST, 0x89, 0, 1, 0, IW_ERDMAP_VERSION, 0, 2, 0x05 },
		{ T_LAST, 0x89, 0, 1, 0, IW_ERDMAP_VERSION, 0, 2, 0x05 },
	};
	struct arena *a = arena_new(NULL, 0);
	struct expect e = { -c[_i].code, true, c[_i].layer, c[_i].etype,
			    c[_i].ecode, true, false, NULL, 0, -1 };
	uint8_t seg[64];
	size_t n = c[_i].ctrl & 0x80
			   ? t_hdr(seg, c[_i].ctrl, c[_i].rctrl, wdst_stag(a),
				   va(&a->reg[V_WDST]))
			   : u_hdr(seg, c[_i].ctrl, c[_i].rctrl, 0, c[_i].qn,
				   c[_i].msn, c[_i].mo);

	n += fill(seg + n, 8, 5);
	arena_arm(a);
	attack(a, seg, n, e);
	arena_free(a);
}
END_TEST

/*
 * Linux siw on x86 writes the Terminate control word as a little-endian
 * bitfield: octet 0 is etype << 4 | layer and the M/D/R flags are 0x01,
 * 0x02, 0x04 of octet 2.  Its CRC error arrives as 02 02 00 00.  Both
 * readings are kept; the one naming a valid triple decides which headers
 * follow.  Its local catastrophic error (00 ff 00 00, code 0xff) reads
 * the same both ways and is named whatever its code.
 */
START_TEST(siw_swapped_terminate_word_is_read_both_ways)
{
	static const uint8_t crc[] = { 0x02, 0x02, 0x00, 0x00 };
	static const uint8_t catas[] = { 0x00, 0xff, 0x00, 0x00 };
	uint8_t nobuf[4 + 2 + DDP_UNTAGGED_HDR_LEN] = {
		0x21, 0x02, 0x03, 0x00, /* DDP untagged 0x02, M and D */
		0x00, 0x22,		/* segment length 34 */
		0x41, 0x43,		/* the Send's DDP header */
	};
	struct rdmap_term t;

	ck_assert_int_eq(rdmap_term_decode(crc, sizeof(crc), &t), 0);
	ck_assert(!rdmap_term_valid(t.layer, t.etype, t.ecode));
	ck_assert_uint_eq(t.swapped.layer, 2);
	ck_assert_uint_eq(t.swapped.etype, 0);
	ck_assert_uint_eq(t.swapped.ecode, 2);
	ck_assert_str_eq(rdmap_term_describe(t.swapped.layer, t.swapped.etype,
					     t.swapped.ecode),
			 "MPA error: CRC error");

	nobuf[6 + 13] = 1; /* MSN 1 */
	ck_assert_int_eq(rdmap_term_decode(nobuf, sizeof(nobuf), &t), 0);
	/* read the RFC way: layer 2, type 1, which does not exist */
	ck_assert_uint_eq(t.layer, 2);
	ck_assert_uint_eq(t.etype, 1);
	ck_assert(!rdmap_term_valid(t.layer, t.etype, t.ecode));
	ck_assert(t.swapped.m && t.swapped.d && !t.swapped.r);
	ck_assert_str_eq(rdmap_term_describe(t.swapped.layer, t.swapped.etype,
					     t.swapped.ecode),
			 "DDP untagged buffer error: invalid MSN, no buffer "
			 "available");
	/* the swapped flags said D: the segment length and header follow */
	ck_assert_uint_eq(t.seg_len, 34);
	ck_assert_uint_eq(t.ddp_hdr_len, DDP_UNTAGGED_HDR_LEN);
	ck_assert_mem_eq(t.ddp_hdr, nobuf + 6, DDP_UNTAGGED_HDR_LEN);

	/* siw's local catastrophic error has code 0xff; any code is one */
	ck_assert_int_eq(rdmap_term_decode(catas, sizeof(catas), &t), 0);
	ck_assert_uint_eq(t.layer, 0);
	ck_assert_uint_eq(t.etype, 0);
	ck_assert_uint_eq(t.ecode, 0xff);
	ck_assert_str_eq(rdmap_term_describe(t.layer, t.etype, t.ecode),
			 "RDMAP local catastrophic error");
	ck_assert(!rdmap_term_valid(0, 1, 0x05));
	ck_assert(!rdmap_term_valid(1, 0, 0xff));
}
END_TEST

/* ---- RDMAP layer ---------------------------------------------------- */

START_TEST(write_to_region_without_remote_write_is_rdmap_access_error)
{
	struct arena *a = arena_new(NULL, 0);
	uint8_t seg[64];

	arena_arm(a);
	attack(a, seg, write_seg(seg, a->reg[V_NOACC].stag,
				 va(&a->reg[V_NOACC]), 16),
	       RDMAP_ERR(IW_ERDMAP_ACCESS, 1, 0x02));
	arena_free(a);
}
END_TEST

START_TEST(rdmap_version_2_is_invalid_rdmap_version)
{
	struct arena *a = arena_new(NULL, 0);
	uint8_t seg[64];
	size_t n = send_seg(seg, RDMAP_OP_SEND, 0, 1, 16);

	seg[1] = 0x80 | RDMAP_OP_SEND;
	arena_arm(a);
	attack(a, seg, n, RDMAP_ERR(IW_ERDMAP_VERSION, 2, 0x05));
	arena_free(a);
}
END_TEST

/* Loop: opcodes 8..15, each untagged on QN 0 and tagged. */
START_TEST(opcodes_8_to_15_are_unexpected_opcodes)
{
	struct arena *a = arena_new(NULL, 0);
	uint8_t op = (uint8_t)(8 + _i / 2), seg[64];
	size_t n = _i % 2 ? t_hdr(seg, T_LAST, RD(op), wdst_stag(a),
				  va(&a->reg[V_WDST]))
			  : u_hdr(seg, U_LAST, RD(op), 0, 0, 1, 0);

	n += fill(seg + n, 8, 3);
	arena_arm(a);
	attack(a, seg, n, RDMAP_ERR(IW_ERDMAP_OPCODE, 2, 0x06));
	arena_free(a);
}
END_TEST

START_TEST(send_in_a_tagged_segment_is_unexpected_opcode)
{
	struct arena *a = arena_new(NULL, 0);
	uint8_t seg[64];
	size_t n = t_hdr(seg, T_LAST, RD(RDMAP_OP_SEND), wdst_stag(a),
			 va(&a->reg[V_WDST]));

	n += fill(seg + n, 8, 3);
	arena_arm(a);
	attack(a, seg, n, RDMAP_ERR(IW_ERDMAP_OPCODE, 2, 0x06));
	arena_free(a);
}
END_TEST

START_TEST(write_in_an_untagged_segment_is_unexpected_opcode)
{
	struct arena *a = arena_new(NULL, 0);
	uint8_t seg[64];
	size_t n = u_hdr(seg, U_LAST, RD(RDMAP_OP_WRITE), 0, 0, 1, 0);

	n += fill(seg + n, 8, 3);
	arena_arm(a);
	attack(a, seg, n, RDMAP_ERR(IW_ERDMAP_OPCODE, 2, 0x06));
	arena_free(a);
}
END_TEST

START_TEST(send_on_qn_1_is_unexpected_opcode)
{
	struct arena *a = arena_new(NULL, 0);
	uint8_t seg[64];
	size_t n = u_hdr(seg, U_LAST, RD(RDMAP_OP_SEND), 0, 1, 1, 0);

	n += fill(seg + n, 28, 3);
	arena_arm(a);
	attack(a, seg, n, RDMAP_ERR(IW_ERDMAP_OPCODE, 2, 0x06));
	arena_free(a);
}
END_TEST

START_TEST(read_response_with_no_read_outstanding_is_unexpected)
{
	struct arena *a = arena_new(NULL, 0);
	uint8_t seg[64];
	size_t n = t_hdr(seg, T_LAST, RD(RDMAP_OP_READ_RESP), wdst_stag(a),
			 va(&a->reg[V_WDST]));

	n += fill(seg + n, 16, 3);
	arena_arm(a);
	attack(a, seg, n, RDMAP_ERR(IW_ERDMAP_RRESP_UNEXPECTED, 2, 0x06));
	arena_free(a);
}
END_TEST

#define READ_LEN 64

/*
 * The victim reads 64 octets of A_SRC into V_WDST; its Read Request goes
 * out, but the attacker answers with a forged response.
 */
static struct arena *arena_with_read_outstanding(void)
{
	struct arena *a = arena_new(NULL, 0);
	struct region *src = &a->reg[A_SRC], *sink = &a->reg[V_WDST];
	struct rdmap_sge sge = { va(src), 8, src->stag };
	struct rdmap_sge rs = { va(sink), READ_LEN, sink->stag };

	/* the victim (the responder) may send once the attacker has */
	ck_assert_int_eq(rdmap_post_send(&a->p.s[0].qp, &(struct rdmap_send_wr){
		.wr_id = 1, .op = RDMAP_WR_SEND, .sge = &sge, .num_sge = 1 }),
		0);
	pair_pump(&a->p);
	victim_post_send(a, &(struct rdmap_send_wr){
		.wr_id = 0x210, .op = RDMAP_WR_READ,
		.flags = RDMAP_WR_SIGNALED, .rkey = src->stag,
		.remote_addr = va(src), .sge = &rs, .num_sge = 1 });
	pump_victim(a);
	ck_assert_uint_eq(a->p.s[1].qp.ord_count, 1);
	return a;
}

/*
 * Loop: Read Responses the victim (64 octets outstanding into V_WDST) must
 * refuse.  DDP judges the tagged buffer first, as for a Write (RFC 5041
 * section 7.1): an STag that is not valid, one of another PD, a buffer
 * outside the region or wrapping 2^64, a region without local write.  Only
 * a segment DDP would place is matched against the outstanding Read
 * (RFC 5040 section 4.5): another valid STag, another TO, more octets
 * than asked, L too early are RDMAP's to report.  Nothing lands anywhere.
 */
START_TEST(read_response_is_judged_by_ddp_before_it_is_matched_to_the_read)
{
	static const struct {
		int sink;	/* region the STag is taken from */
		uint32_t key;	/* XORed into its STag */
		int64_t to;	/* from the region's base, or absolute */
		bool absolute;
		size_t len;
		bool last;
		int code;
		uint8_t layer, etype, ecode;
	} c[] = {
		/* DDP tagged buffer errors, whatever the Read asked for */
		{ V_WDST, 0x33, 0, false, READ_LEN, true,
		  IW_EDDP_T_STAG, 1, 1, 0x00 },
		{ V_OTHERPD, 0, 0, false, READ_LEN, true,
		  IW_EDDP_T_NOT_ASSOC, 1, 1, 0x02 },
		{ V_WDST, 0, 1024 - READ_LEN / 2, false, READ_LEN, true,
		  IW_EDDP_T_BOUNDS, 1, 1, 0x01 },
		{ V_WDST, 0, -1, false, READ_LEN, true,
		  IW_EDDP_T_BOUNDS, 1, 1, 0x01 },
		{ V_WDST, 0, -READ_LEN / 2, true, READ_LEN, true,
		  IW_EDDP_T_TO_WRAP, 1, 1, 0x03 },
		/* RFC 5041 has no code for access rights; RFC 5040 does */
		{ V_RSRC, 0, 0, false, READ_LEN, true,
		  IW_ERDMAP_ACCESS, 0, 1, 0x02 },
		/* placeable, but not the response the outstanding Read wants */
		{ V_NOACC, 0, 0, false, READ_LEN, true,
		  IW_ERDMAP_RRESP_MISMATCH, 0, 2, 0x07 },
		{ V_WDST, 0, 8, false, READ_LEN, true,
		  IW_ERDMAP_RRESP_MISMATCH, 0, 2, 0x07 },
		{ V_WDST, 0, 0, false, READ_LEN + 8, true,
		  IW_ERDMAP_RRESP_MISMATCH, 0, 2, 0x07 },
		{ V_WDST, 0, 0, false, READ_LEN / 2, true,
		  IW_ERDMAP_RRESP_MISMATCH, 0, 2, 0x07 },
		{ V_WDST, 0, 0, false, READ_LEN + 8, false,
		  IW_ERDMAP_RRESP_MISMATCH, 0, 2, 0x07 },
	};
	struct arena *a = arena_with_read_outstanding();
	struct region *sink = &a->reg[c[_i].sink];
	uint32_t stag = sink->stag ^ c[_i].key;
	uint64_t to = c[_i].absolute ? (uint64_t)c[_i].to
				     : va(sink) + (uint64_t)c[_i].to;
	struct expect e = { -c[_i].code, true, c[_i].layer, c[_i].etype,
			    c[_i].ecode, true, false, NULL, 0, -1 };
	uint8_t seg[128];
	size_t n;

	n = t_hdr(seg, c[_i].last ? T_LAST : T_MID, RD(RDMAP_OP_READ_RESP),
		  stag, to);
	n += fill(seg + n, c[_i].len, 9);
	arena_arm(a);
	attack(a, seg, n, e);
	arena_free(a);
}
END_TEST

#define N_RRESP_FAULTS 11

/*
 * The honest path through the same checks: the response cut into segments
 * of 8 octets at the advertised sink is placed and completes the Read.
 */
START_TEST(read_response_in_segments_at_the_advertised_sink_completes_the_read)
{
	struct arena *a = arena_with_read_outstanding();
	struct region *sink = &a->reg[V_WDST];
	struct pair_side *v = &a->p.s[1];
	struct forge *f = malloc(sizeof(*f));
	uint8_t seg[READ_LEN / 8][14 + 8], want[READ_LEN];
	uint32_t mark = v->n_cqe;

	ck_assert_ptr_nonnull(f);
	forge_begin(f, a);
	for (int i = 0; i < READ_LEN / 8; i++) {
		size_t n = t_hdr(seg[i], i == READ_LEN / 8 - 1 ? T_LAST : T_MID,
				 RD(RDMAP_OP_READ_RESP), sink->stag,
				 va(sink) + 8 * (uint64_t)i);

		fill(seg[i] + n, 8, (uint8_t)(9 + 104 * i));
		memcpy(want + 8 * i, seg[i] + n, 8);
		forge_fpdu(f, seg[i], sizeof(seg[i]));
	}
	ck_assert_int_eq(pair_inject(&a->p, 1, f->w, f->len), 0);
	ck_assert_uint_eq(v->qp.state, RDMAP_QP_RTS);
	ck_assert_uint_eq(v->qp.ord_count, 0);
	ck_assert_uint_eq(v->n_cqe, mark + 1);
	ck_assert_uint_eq(v->cqe[mark].wr_id, 0x210);
	ck_assert_uint_eq(v->cqe[mark].opcode, RDMAP_WC_READ);
	ck_assert_uint_eq(v->cqe[mark].status, RDMAP_WC_SUCCESS);
	ck_assert_uint_eq(v->cqe[mark].byte_len, READ_LEN);
	ck_assert_mem_eq(sink->buf, want, READ_LEN);
	free(f);
	arena_free(a);
}
END_TEST

static size_t read_req(uint8_t *o, uint8_t ctrl, uint32_t msn,
		       const struct arena *a, uint32_t src_stag,
		       uint64_t src_to, uint32_t size)
{
	size_t n = u_hdr(o, ctrl, RD(RDMAP_OP_READ_REQ), 0, 1, msn, 0);

	return n + rr_body(o + n, a->reg[A_SINK].stag, va(&a->reg[A_SINK]),
			   size, src_stag, src_to);
}

START_TEST(more_read_requests_than_the_ird_is_ird_exceeded)
{
	struct pair_opts o;
	struct arena *a;
	struct forge *f = malloc(sizeof(*f));
	uint8_t r1[46], r2[46];
	struct expect e = RDMAP_ERR(IW_ERDMAP_IRD_EXCEEDED, 2, 0x07);

	ck_assert_ptr_nonnull(f);
	pair_opts_default(&o);
	o.ird = 1;
	a = arena_new(&o, 0);
	read_req(r1, U_LAST, 1, a, a->reg[V_RSRC].stag, va(&a->reg[V_RSRC]),
		 16);
	read_req(r2, U_LAST, 2, a, a->reg[V_RSRC].stag,
		 va(&a->reg[V_RSRC]) + 16, 16);
	arena_arm(a);
	forge_begin(f, a);
	forge_fpdu(f, r1, sizeof(r1));
	forge_fpdu(f, r2, sizeof(r2));
	ck_assert_int_eq(pair_inject(&a->p, 1, f->w, f->len), e.err);
	e.r = true;
	e.seg = r2;
	e.seg_len = sizeof(r2);
	expect_error(a, &e);
	free(f);
	arena_free(a);
}
END_TEST

/* The five ways a Read Request's source can be wrong. */
static const struct {
	int code;
	uint8_t ecode;
} src_fault[] = {
	{ IW_ERDMAP_STAG, 0x00 },
	{ IW_ERDMAP_BOUNDS, 0x01 },
	{ IW_ERDMAP_ACCESS, 0x02 },
	{ IW_ERDMAP_NOT_ASSOC, 0x03 },
	{ IW_ERDMAP_TO_WRAP, 0x04 },
};

#define N_SRC_FAULTS 5

static void src_fault_target(struct arena *a, int fault, uint32_t *stag,
			     uint64_t *to)
{
	struct region *r = &a->reg[V_RSRC];

	*stag = r->stag;
	*to = va(r);
	switch (fault) {
	case 0:
		*stag = unknown_stag(a);
		break;
	case 1:
		*to = va(r) + r->len - READ_LEN / 2;
		break;
	case 2:
		*stag = a->reg[V_WDST].stag; /* remote write only */
		*to = va(&a->reg[V_WDST]);
		break;
	case 3:
		*stag = a->reg[V_OTHERPD].stag;
		*to = va(&a->reg[V_OTHERPD]);
		break;
	default:
		*to = UINT64_MAX - READ_LEN / 2;
		break;
	}
}

START_TEST(read_request_with_bad_source_is_remote_protection_error)
{
	struct arena *a = arena_new(NULL, 0);
	struct expect e = RDMAP_ERR(src_fault[_i].code, 1, src_fault[_i].ecode);
	uint8_t seg[46];
	uint32_t stag;
	uint64_t to;

	src_fault_target(a, _i, &stag, &to);
	read_req(seg, U_LAST, 1, a, stag, to, READ_LEN);
	arena_arm(a);
	e.r = true;
	attack(a, seg, sizeof(seg), e);
	arena_free(a);
}
END_TEST

/*
 * The longest Terminate (a Read Request's DDP and RDMA headers echoed) is
 * exactly the smallest MULPDU a stream may have: it leaves in one piece,
 * and a peer whose receive limit is that MULPDU takes it.
 */
START_TEST(the_longest_terminate_fits_the_smallest_mulpdu)
{
	struct pair_opts o;
	struct arena *a;
	struct expect e = RDMAP_ERR(IW_ERDMAP_STAG, 1, 0x00);
	uint8_t seg[46];

	pair_opts_default(&o);
	o.mulpdu = o.max_ulpdu = RDMAP_MIN_MULPDU;
	a = arena_new(&o, 0);
	read_req(seg, U_LAST, 1, a, unknown_stag(a), va(&a->reg[V_RSRC]),
		 READ_LEN);
	arena_arm(a);
	e.r = true;
	attack(a, seg, sizeof(seg), e);
	ck_assert_uint_eq(18 + 4 + 2 + 18 + 28, RDMAP_MIN_MULPDU);
	arena_free(a);
}
END_TEST

/*
 * The honest path: side 0 reads through a bad rkey.  Its Read fails with a
 * remote access error (the Terminate echoes its Read Request), the Read
 * queued behind it (ORD 1) and its receives are flushed.
 */
START_TEST(honest_read_through_bad_source_completes_with_remote_access_error)
{
	struct pair_opts o;
	struct arena *a;
	struct pair_side *s;
	struct region *sink;
	struct rdmap_sge s1, s2;
	const struct rdmap_event *ev;
	uint8_t rr[28];
	uint32_t stag;
	uint64_t to;

	pair_opts_default(&o);
	o.ord = 1;
	a = arena_new(&o, 0);
	s = &a->p.s[0];
	sink = &a->reg[A_SINK];
	src_fault_target(a, _i, &stag, &to);
	s1 = (struct rdmap_sge){ va(sink), READ_LEN, sink->stag };
	s2 = (struct rdmap_sge){ va(sink) + READ_LEN, READ_LEN, sink->stag };
	ck_assert_int_eq(rdmap_post_send(&s->qp, &(struct rdmap_send_wr){
		.wr_id = 0x400, .op = RDMAP_WR_READ, .flags = RDMAP_WR_SIGNALED,
		.rkey = stag, .remote_addr = to, .sge = &s1,
		.num_sge = 1 }), 0);
	ck_assert_int_eq(rdmap_post_send(&s->qp, &(struct rdmap_send_wr){
		.wr_id = 0x401, .op = RDMAP_WR_READ, .flags = RDMAP_WR_SIGNALED,
		.rkey = a->reg[V_RSRC].stag, .remote_addr = va(&a->reg[V_RSRC]),
		.sge = &s2, .num_sge = 1 }), 0);
	for (int i = 0; i < N_REGIONS; i++)
		memcpy(a->reg[i].snap, a->reg[i].buf, a->reg[i].len);
	pair_pump(&a->p);

	ck_assert_int_eq(a->p.s[1].feed_err, -src_fault[_i].code);
	ck_assert_uint_eq(s->n_cqe, 4);
	ck_assert_uint_eq(s->cqe[0].wr_id, 0x400);
	ck_assert_uint_eq(s->cqe[0].opcode, RDMAP_WC_READ);
	ck_assert_uint_eq(s->cqe[0].status, RDMAP_WC_REM_ACCESS_ERR);
	ck_assert_int_eq(s->cqe[0].err, -IW_ETERMINATED);
	ck_assert_uint_eq(s->cqe[1].wr_id, 0x401);
	ck_assert_uint_eq(s->cqe[1].status, RDMAP_WC_WR_FLUSH_ERR);
	for (int i = 2; i < 4; i++) {
		require(s->cqe[i].wr_id == 0x500 + (uint64_t)i - 2 &&
				s->cqe[i].recv &&
				s->cqe[i].status == RDMAP_WC_WR_FLUSH_ERR,
			"side 0 receive %d not flushed", i - 2);
	}
	ck_assert_uint_eq(count_events(s, 0, RDMAP_EV_TERMINATE_RECEIVED), 1);
	ev = find_event(s, 0, RDMAP_EV_TERMINATE_RECEIVED);
	ck_assert_uint_eq(ev->term->layer, 0);
	ck_assert_uint_eq(ev->term->etype, 1);
	ck_assert_uint_eq(ev->term->ecode, src_fault[_i].ecode);
	ck_assert(ev->term->m && ev->term->d && ev->term->r);
	ck_assert_uint_eq(ev->term->seg_len, 46);
	ck_assert_uint_eq(ev->term->ddp_hdr_len, 18);
	ck_assert(ev->term->have_rdma_hdr);
	rr_body(rr, sink->stag, va(sink), READ_LEN, stag, to);
	ck_assert_mem_eq(ev->term->rdma_hdr, rr, 28);
	/* the only thing that ever left side 0 was its first Read Request */
	ck_assert_uint_eq(a->p.s[0].wire_len, 2 + 46 + 4);
	assert_memory(a, -1);
	arena_free(a);
}
END_TEST

/* Loop: an unknown STag, another PD's STag, an STag already invalidated. */
START_TEST(send_with_invalidate_of_an_stag_it_cannot_invalidate_is_refused)
{
	struct arena *a = arena_new(NULL, 0);
	struct expect e = RDMAP_ERR(IW_ERDMAP_INVALIDATE, 1, 0x09);
	uint32_t inv = _i == 0 ? unknown_stag(a)
		     : _i == 1 ? a->reg[V_OTHERPD].stag
			       : a->reg[V_WDST].stag;
	uint8_t seg[64];

	if (_i == 2) {
		struct region *src = &a->reg[A_SRC];
		struct rdmap_sge sge = { va(src), 8, src->stag };

		ck_assert_int_eq(rdmap_post_send(&a->p.s[0].qp,
			&(struct rdmap_send_wr){ .wr_id = 1,
				.op = RDMAP_WR_SEND_INV, .inv_stag = inv,
				.sge = &sge, .num_sge = 1 }), 0);
		pair_pump(&a->p);
		ck_assert_uint_eq(a->p.s[1].n_cqe, 1);
		ck_assert_uint_eq(a->p.s[1].cqe[0].status, RDMAP_WC_SUCCESS);
	}
	arena_arm(a);
	/* the payload lands before the invalidation is refused */
	e.target = V_RECV;
	attack(a, seg, send_seg(seg, _i % 2 ? RDMAP_OP_SEND_SE_INV
					    : RDMAP_OP_SEND_INV,
				inv, a->p.s[0].qp.msn_tx[RDMAP_QN_SEND], 8),
	       e);
	arena_free(a);
}
END_TEST

START_TEST(read_request_without_l_is_malformed)
{
	struct arena *a = arena_new(NULL, 0);
	struct expect e = RDMAP_ERR(IW_ERDMAP_MALFORMED, 2, 0xff);
	uint8_t seg[46];

	read_req(seg, U_MID, 1, a, a->reg[V_RSRC].stag, va(&a->reg[V_RSRC]),
		 16);
	arena_arm(a);
	e.r = true;
	attack(a, seg, sizeof(seg), e);
	arena_free(a);
}
END_TEST

START_TEST(read_request_with_octets_beyond_its_body_is_malformed)
{
	struct arena *a = arena_new(NULL, 0);
	struct expect e = RDMAP_ERR(IW_ERDMAP_MALFORMED, 2, 0xff);
	uint8_t seg[46 + 4];

	read_req(seg, U_LAST, 1, a, a->reg[V_RSRC].stag, va(&a->reg[V_RSRC]),
		 16);
	fill(seg + 46, 4, 1);
	arena_arm(a);
	e.r = true;
	attack(a, seg, sizeof(seg), e);
	arena_free(a);
}
END_TEST

START_TEST(terminate_shorter_than_its_control_word_is_malformed)
{
	struct arena *a = arena_new(NULL, 0);
	uint8_t seg[18 + 2];

	u_hdr(seg, U_LAST, RD(RDMAP_OP_TERMINATE), 0, 2, 1, 0);
	seg[18] = 0x02;
	seg[19] = 0xff;
	arena_arm(a);
	attack(a, seg, sizeof(seg), RDMAP_ERR(IW_ERDMAP_MALFORMED, 2, 0xff));
	ck_assert_uint_eq(count_events(&a->p.s[1], 0,
				       RDMAP_EV_TERMINATE_RECEIVED), 0);
	arena_free(a);
}
END_TEST

/* ---- MPA layer ------------------------------------------------------ */

START_TEST(flipped_payload_bit_with_crc_is_mpa_crc_error)
{
	struct pair_opts o;
	struct arena *a;
	struct forge *f = malloc(sizeof(*f));
	struct expect e = MPA_ERR(IW_EMPA_CRC, 0x02);
	uint8_t seg[64];
	size_t n, at;

	ck_assert_ptr_nonnull(f);
	pair_opts_default(&o);
	o.crc = true;
	a = arena_new(&o, 0);
	n = send_seg(seg, RDMAP_OP_SEND, 0, 1, 32);
	arena_arm(a);
	forge_begin(f, a);
	at = forge_fpdu(f, seg, n);
	f->w[at + 2 + 18 + 5] ^= 0x08;
	ck_assert_int_eq(pair_inject(&a->p, 1, f->w, f->len), e.err);
	e.target = V_RECV;
	expect_error(a, &e);
	free(f);
	arena_free(a);
}
END_TEST

/* Loop: the leading marker of an FPDU, or one inside its ULPDU. */
START_TEST(wrong_marker_fpduptr_is_mpa_marker_error)
{
	struct pair_opts o;
	struct arena *a;
	struct forge *f = malloc(sizeof(*f));
	struct expect e = MPA_ERR(IW_EMPA_MARKER, 0x03);
	uint8_t seg[14 + 600];
	size_t at, marker;

	ck_assert_ptr_nonnull(f);
	pair_opts_default(&o);
	o.markers = true;
	a = arena_new(&o, 0);
	arena_arm(a);
	forge_begin(f, a);
	ck_assert_uint_eq(f->t.off, 0); /* the stream begins with a marker */
	at = forge_fpdu(f, seg, write_seg(seg, wdst_stag(a),
					  va(&a->reg[V_WDST]), 600));
	marker = at + (_i ? 512 : 0);
	/* FPDUPTR: 0 in front of the header, 508 back to it at offset 512 */
	ck_assert_uint_eq(get_be16(f->w + marker + 2), _i ? 508 : 0);
	put_be16(f->w + marker + 2, _i ? 504 : 4);
	ck_assert_int_eq(pair_inject(&a->p, 1, f->w, f->len), e.err);
	e.target = V_WDST;
	expect_error(a, &e);
	free(f);
	arena_free(a);
}
END_TEST

START_TEST(ulpdu_length_over_the_receive_limit_is_mpa_error)
{
	struct arena *a = arena_new(NULL, 0);
	uint8_t seg[128];

	a->p.s[1].qp.mpa_rx.max_ulpdu = 64;
	arena_arm(a);
	attack(a, seg, send_seg(seg, RDMAP_OP_SEND, 0, 1, 47),
	       MPA_ERR(IW_EMPA_ULPDU_TOO_LONG, 0x03));
	arena_free(a);
}
END_TEST

START_TEST(first_message_not_the_agreed_rtr_is_no_matching_rtr)
{
	struct pair_opts o;
	struct arena *a;
	uint8_t seg[64];

	pair_opts_default(&o);
	o.rtr = MPA_RTR_WRITE;
	a = arena_new(&o, 0);
	arena_arm(a);
	attack(a, seg, send_seg(seg, RDMAP_OP_SEND, 0, 1, 16),
	       MPA_ERR(IW_EMPA_NO_MATCHING_RTR, 0x07));
	arena_free(a);
}
END_TEST

START_TEST(stream_ending_inside_an_fpdu_is_stream_lost)
{
	struct arena *a = arena_new(NULL, 0);
	struct forge *f = malloc(sizeof(*f));
	struct expect e = MPA_ERR(IW_EMPA_STREAM_LOST, 0x01);
	uint8_t seg[64];

	ck_assert_ptr_nonnull(f);
	arena_arm(a);
	forge_begin(f, a);
	forge_fpdu(f, seg, send_seg(seg, RDMAP_OP_SEND, 0, 1, 32));
	ck_assert_int_eq(pair_inject(&a->p, 1, f->w, f->len / 2), 0);
	ck_assert_int_eq(rdmap_rx_eof(&a->p.s[1].qp), e.err);
	e.target = V_RECV;
	expect_error(a, &e);
	free(f);
	arena_free(a);
}
END_TEST

START_TEST(clean_end_of_stream_flushes_everything_without_terminate)
{
	struct arena *a = arena_new(NULL, 0);
	struct region *src = &a->reg[A_SRC];
	struct rdmap_sge sge = { va(src), 8, src->stag };
	struct expect e = { .err = -IW_ECLOSED, .terminate = false,
			    .target = -1 };

	ck_assert_int_eq(rdmap_post_send(&a->p.s[0].qp, &(struct rdmap_send_wr){
		.wr_id = 1, .op = RDMAP_WR_SEND, .sge = &sge, .num_sge = 1 }),
		0);
	pair_pump(&a->p);
	ck_assert_uint_eq(a->p.s[1].n_cqe, 1);
	arena_arm(a);
	ck_assert_int_eq(rdmap_rx_eof(&a->p.s[1].qp), -IW_ECLOSED);
	expect_error(a, &e);
	arena_free(a);
}
END_TEST

/* ---- other ends ----------------------------------------------------- */

START_TEST(received_terminate_ends_the_stream_without_a_terminate_of_our_own)
{
	struct arena *a = arena_new(NULL, 0);
	struct forge *f = malloc(sizeof(*f));
	struct expect e = { .err = -IW_ETERMINATED, .terminate = false,
			    .target = -1 };
	const struct rdmap_event *ev;
	uint8_t seg[22];

	ck_assert_ptr_nonnull(f);
	u_hdr(seg, U_LAST, RD(RDMAP_OP_TERMINATE), 0, 2, 1, 0);
	seg[18] = 0 << 4 | 2;
	seg[19] = 0xff;
	seg[20] = 0;
	seg[21] = 0;
	arena_arm(a);
	forge_begin(f, a);
	forge_fpdu(f, seg, sizeof(seg));
	ck_assert_int_eq(pair_inject(&a->p, 1, f->w, f->len), -IW_ETERMINATED);
	ck_assert_uint_eq(count_events(&a->p.s[1], a->ev_mark[1],
				       RDMAP_EV_TERMINATE_RECEIVED), 1);
	ev = find_event(&a->p.s[1], a->ev_mark[1],
			RDMAP_EV_TERMINATE_RECEIVED);
	ck_assert_uint_eq(ev->term->layer, 0);
	ck_assert_uint_eq(ev->term->etype, 2);
	ck_assert_uint_eq(ev->term->ecode, 0xff);
	ck_assert(!ev->term->m && !ev->term->d && !ev->term->r);
	expect_error(a, &e);
	ck_assert_uint_eq(a->p.s[0].qp.state, RDMAP_QP_RTS);
	free(f);
	arena_free(a);
}
END_TEST

START_TEST(read_with_ord_0_is_refused_at_posting_and_nothing_is_queued)
{
	struct pair_opts o;
	struct arena *a;
	struct pair_side *s;
	struct region *sink, *src;
	struct rdmap_sge rs, ss;

	pair_opts_default(&o);
	o.ord = 0;
	a = arena_new(&o, 0);
	s = &a->p.s[0];
	sink = &a->reg[A_SINK];
	src = &a->reg[A_SRC];
	rs = (struct rdmap_sge){ va(sink), 16, sink->stag };
	ss = (struct rdmap_sge){ va(src), 16, src->stag };
	ck_assert_int_eq(rdmap_post_send(&s->qp, &(struct rdmap_send_wr){
		.wr_id = 7, .op = RDMAP_WR_READ, .flags = RDMAP_WR_SIGNALED,
		.rkey = a->reg[V_RSRC].stag, .remote_addr = va(&a->reg[V_RSRC]),
		.sge = &rs, .num_sge = 1 }), -IW_ENO_READ_CREDIT);
	ck_assert_uint_eq(s->qp.sq_head, s->qp.sq_tail);
	ck_assert_uint_eq(pair_pump_one(&a->p, 0, SIZE_MAX), 0);
	ck_assert_uint_eq(s->n_cqe, 0);
	/* the stream itself is fine: a Send still goes */
	ck_assert_int_eq(rdmap_post_send(&s->qp, &(struct rdmap_send_wr){
		.wr_id = 8, .op = RDMAP_WR_SEND, .flags = RDMAP_WR_SIGNALED,
		.sge = &ss, .num_sge = 1 }), 0);
	pair_pump(&a->p);
	ck_assert_uint_eq(s->n_cqe, 1);
	ck_assert_uint_eq(s->cqe[0].wr_id, 8);
	ck_assert_uint_eq(s->cqe[0].status, RDMAP_WC_SUCCESS);
	ck_assert_uint_eq(a->p.s[1].n_cqe, 1);
	ck_assert_uint_eq(a->p.s[1].cqe[0].wr_id, 0x100);
	ck_assert_uint_eq(a->p.s[1].cqe[0].byte_len, 16);
	arena_arm(a);
	assert_memory(a, -1);
	arena_free(a);
}
END_TEST

/* Buffers an lkey does not cover: wrong STag, past the end, below the base,
 * no local write, another PD. */
static struct rdmap_sge bad_sge(struct arena *a, int how)
{
	struct region *r = &a->reg[V_RECV];

	switch (how) {
	case 0:
		return (struct rdmap_sge){ va(r), 16, r->stag ^ 0x01 };
	case 1:
		return (struct rdmap_sge){ va(r) + r->len - 8, 16, r->stag };
	case 2:
		return (struct rdmap_sge){ va(r) - 1, 16, r->stag };
	case 3:
		return (struct rdmap_sge){ va(&a->reg[V_SEND]), 16,
					   a->reg[V_SEND].stag };
	default:
		return (struct rdmap_sge){ va(&a->reg[V_OTHERPD]), 16,
					   a->reg[V_OTHERPD].stag };
	}
}

/*
 * A Read queued before the stream starts with ORD 0 cannot go: it fails
 * with a local QP operation error, the rest is flushed, and the stream
 * ends with the Terminate RFC 6581 has an initiator send when it cannot
 * work with the IRD it was given (LLP, MPA, 0x06), before anything else.
 */
START_TEST(read_queued_before_a_start_with_ord_0_terminates_the_stream)
{
	struct ddp_stag_table stags;
	struct pair_side s;
	uint8_t buf[64], wire[256], img[18];
	uint32_t stag;
	struct rdmap_sge sge;
	struct iovec iov[8];
	size_t len = 0;
	int n;

	memset(&s, 0, sizeof(s));
	s.cqe = calloc(8, sizeof(*s.cqe));
	ck_assert_ptr_nonnull(s.cqe);
	ck_assert_int_eq(ddp_stag_table_init(&stags, 16), 0);
	ck_assert_int_eq(ddp_mr_register(&stags, PAIR_PD, (uintptr_t)buf, buf,
					 sizeof(buf), DDP_ACCESS_LOCAL_WRITE,
					 &stag), 0);
	sge = (struct rdmap_sge){ (uintptr_t)buf, 16, stag };
	ck_assert_int_eq(rdmap_qp_init(&s.qp, &(struct rdmap_qp_attr){
		.sq_depth = 4, .rq_depth = 4, .max_sge = 1, .pd = PAIR_PD,
		.stags = &stags }, &pair_ops, &s), 0);
	for (uint64_t i = 0; i < 3; i++)
		ck_assert_int_eq(rdmap_post_send(&s.qp, &(struct rdmap_send_wr){
			.wr_id = i, .op = i == 1 ? RDMAP_WR_READ : RDMAP_WR_SEND,
			.flags = RDMAP_WR_SIGNALED, .rkey = 0x1234,
			.sge = &sge, .num_sge = 1 }), 0);
	ck_assert_int_eq(rdmap_qp_start(&s.qp, &(struct rdmap_conn){
		.initiator = true, .mulpdu = 1000, .max_ulpdu = 0xffff,
		.ird = 1, .ord = 0 }), 0);
	ck_assert_uint_eq(s.qp.state, RDMAP_QP_TERMINATING);
	ck_assert_uint_eq(s.n_cqe, 3);
	for (uint32_t i = 0; i < 3; i++) {
		ck_assert_uint_eq(s.cqe[i].wr_id, i);
		ck_assert_uint_eq(s.cqe[i].status, i == 1 ? RDMAP_WC_LOC_QP_OP_ERR
							  : RDMAP_WC_WR_FLUSH_ERR);
		ck_assert_int_eq(s.cqe[i].err, -IW_ENO_READ_CREDIT);
	}
	/* on the wire: the Terminate alone, no Send before it */
	n = rdmap_tx_gather(&s.qp, iov, 8, SIZE_MAX);
	ck_assert_int_gt(n, 0);
	for (int i = 0; i < n; i++) {
		ck_assert_uint_le(len + iov[i].iov_len, sizeof(wire));
		memcpy(wire + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	ck_assert_uint_eq(get_be16(wire), 18 + 4);
	ck_assert_uint_eq(len, 2 + 18 + 4 + 4);
	u_hdr(img, U_LAST, RD(RDMAP_OP_TERMINATE), 0, 2, 1, 0);
	ck_assert_mem_eq(wire + 2, img, 18);
	ck_assert_uint_eq(wire[20], IW_TERM_LAYER_LLP << 4 | IW_TERM_ETYPE_MPA);
	ck_assert_uint_eq(wire[21], 0x06);
	ck_assert_uint_eq(wire[22], 0); /* no segment, no header echoed */
	rdmap_tx_advance(&s.qp, len);
	ck_assert_uint_eq(s.qp.state, RDMAP_QP_ERROR);
	ck_assert_int_eq(rdmap_tx_gather(&s.qp, iov, 8, SIZE_MAX), 0);
	ck_assert_uint_eq(s.n_cqe, 3);
	rdmap_qp_fini(&s.qp);
	ddp_stag_table_destroy(&stags);
	free(s.cqe);
}
END_TEST

/*
 * A message the engine cannot frame is a fault of its own, not the
 * peer's.  RFC 5040 section 7.2: the stream still ends with one Terminate,
 * sent in the message's place and naming an RDMAP local catastrophic
 * error (0/0/0) with no headers; the request fails with a local QP
 * operation error, everything else outstanding is flushed.  Nothing the
 * API lets through fails to frame (posting and the start check sizes), so
 * the test narrows the one resource framing can run out of: the iovec
 * budget of an FPDU built in place, to 4 entries, which a 2-buffer Send
 * overruns and a Terminate does not.
 */
START_TEST(a_message_that_cannot_be_framed_ends_the_stream_with_a_local_terminate)
{
	struct arena *a = arena_new(NULL, 0);
	struct pair_side *v = &a->p.s[1];
	struct region *src = &a->reg[A_SRC], *snd = &a->reg[V_SEND];
	struct rdmap_sge one = { va(src), 8, src->stag };
	struct rdmap_sge two[2] = { { va(snd), 8, snd->stag },
				    { va(snd) + 32, 8, snd->stag } };
	struct expect e = { -ENOSPC, true, 0, 0, 0x00, false, false,
			    NULL, 0, -1 };
	uint32_t failed = 0;

	/* side 0 speaks first, so the victim (the responder) may send */
	ck_assert_int_eq(rdmap_post_send(&a->p.s[0].qp, &(struct rdmap_send_wr){
		.wr_id = 1, .op = RDMAP_WR_SEND, .sge = &one, .num_sge = 1 }),
		0);
	pair_pump(&a->p);
	ck_assert_uint_eq(v->n_cqe, 1);
	v->qp.fpdu_iov_max = 4;
	v->qp.tx_copy_max = 0; /* built in place, from its pieces */
	ck_assert_int_eq(rdmap_post_send(&v->qp, &(struct rdmap_send_wr){
		.wr_id = 0x220, .op = RDMAP_WR_SEND,
		.flags = RDMAP_WR_SIGNALED, .sge = two, .num_sge = 2 }), 0);
	arena_arm(a);
	pump_victim(a);

	ck_assert_int_eq(v->qp.err, -ENOSPC);
	ck_assert_uint_eq(v->qp.state, RDMAP_QP_ERROR);
	ck_assert_uint_eq(count_events(v, a->ev_mark[1], RDMAP_EV_ERROR), 1);
	ck_assert_int_eq(find_event(v, a->ev_mark[1], RDMAP_EV_ERROR)->err,
			 -ENOSPC);
	ck_assert_uint_eq(count_events(v, a->ev_mark[1],
				       RDMAP_EV_TERMINATE_SENT), 1);
	/* the failed Send first, then every open request flushed, once */
	ck_assert_uint_eq(v->n_cqe - a->cqe_mark[1], 1 + (uint32_t)a->n_open);
	for (uint32_t k = a->cqe_mark[1]; k < v->n_cqe; k++) {
		const struct rdmap_cqe *c = &v->cqe[k];
		int seen = 0;

		ck_assert_int_eq(c->err, -ENOSPC);
		if (c->wr_id == 0x220) {
			ck_assert_uint_eq(k, a->cqe_mark[1]);
			ck_assert_uint_eq(c->status, RDMAP_WC_LOC_QP_OP_ERR);
			ck_assert_uint_eq(c->opcode, RDMAP_WC_SEND);
			failed++;
			continue;
		}
		ck_assert_uint_eq(c->status, RDMAP_WC_WR_FLUSH_ERR);
		for (int i = 0; i < a->n_open; i++)
			seen += a->open_wr[i] == c->wr_id;
		require(seen == 1, "wr %#llx was not open",
			(unsigned long long)c->wr_id);
	}
	ck_assert_uint_eq(failed, 1);
	assert_terminate_wire(a, &e);
	assert_attacker_reads_it(a, &e);
	assert_posting_flushes(a, -ENOSPC);
	assert_memory(a, -1);
	arena_free(a);
}
END_TEST

/*
 * The region of the receive a Send is landing in is deregistered between
 * two of its segments (libfabric's rxm does so at teardown): the stream
 * ends at once with RDMAP's local catastrophic Terminate, that receive
 * completes with a local protection error and the others queued through
 * the region are flushed, each once, and nothing more of the message
 * lands.
 */
START_TEST(deregistering_under_a_landing_send_is_local_catastrophic)
{
	struct arena *a = arena_new(NULL, 0);
	struct pair_side *v = &a->p.s[1];
	struct region *r = &a->reg[V_RECV];
	struct expect e = { -IW_ELOCAL_PROTECTION, true, 0, 0, 0x00, false,
			    false, NULL, 0, V_RECV };
	struct forge *f = malloc(sizeof(*f));
	uint8_t first[64], last[64];
	size_t n1 = u_hdr(first, U_MID, RD(RDMAP_OP_SEND), 0, 0, 1, 0);
	size_t n2 = u_hdr(last, U_LAST, RD(RDMAP_OP_SEND), 0, 0, 1, 16);
	uint32_t failed = 0;
	size_t at;

	ck_assert_ptr_nonnull(f);
	n1 += fill(first + n1, 16, 0x20);
	n2 += fill(last + n2, 16, 0x30);
	arena_arm(a);
	forge_begin(f, a);
	forge_fpdu(f, first, n1);
	ck_assert_int_eq(pair_inject(&a->p, 1, f->w, f->len), 0);
	ck_assert_mem_eq(r->buf, first + 18, 16); /* landing in 0x100 */

	ck_assert(rdmap_recvs_revoke(&v->qp, r->stag));
	ck_assert_int_eq(v->qp.err, e.err);
	ck_assert_uint_eq(v->qp.state, RDMAP_QP_TERMINATING);
	ck_assert_uint_eq(count_events(v, a->ev_mark[1], RDMAP_EV_ERROR), 1);
	ck_assert_uint_eq(v->n_cqe - a->cqe_mark[1], (uint32_t)a->n_open);
	for (uint32_t k = a->cqe_mark[1]; k < v->n_cqe; k++) {
		const struct rdmap_cqe *c = &v->cqe[k];

		ck_assert_int_eq(c->err, e.err);
		if (c->wr_id == 0x100) {
			ck_assert_uint_eq(c->status, RDMAP_WC_LOC_PROT_ERR);
			ck_assert(c->recv);
			failed++;
		} else {
			ck_assert_uint_eq(c->status, RDMAP_WC_WR_FLUSH_ERR);
		}
	}
	ck_assert_uint_eq(failed, 1);

	/* the message's last segment is refused and lands nowhere */
	at = forge_fpdu(f, last, n2);
	ck_assert_int_eq(rdmap_rx_feed(&v->qp, f->w + at, f->len - at), e.err);
	ck_assert_mem_eq(r->buf + 16, r->snap + 16, r->len - 16);
	ck_assert_uint_eq(v->n_cqe - a->cqe_mark[1], (uint32_t)a->n_open);

	pump_victim(a);
	assert_terminate_wire(a, &e);
	assert_attacker_reads_it(a, &e);
	assert_posting_flushes(a, e.err);
	assert_memory(a, V_RECV);
	free(f);
	arena_free(a);
}
END_TEST

/*
 * RFC 5044 7.1.2 has the responder wait for the initiator's first FPDU,
 * but Linux siw's does not: an initiator takes what comes early.
 */
START_TEST(responder_speaking_before_our_first_fpdu_is_taken)
{
	struct pair_opts o;
	struct pair p;
	struct rng r;
	uint8_t fpdu[2 + 18 + 4 + 4] = { 0, 22 };
	uint8_t buf[16];
	uint32_t stag;

	pair_opts_default(&o);
	rng_seed(&r, "rdmap_errors", 1);
	pair_init(&p, &o, &r);
	stag = pair_reg(&p, 0, buf, sizeof(buf), DDP_ACCESS_LOCAL_WRITE);
	ck_assert_int_eq(rdmap_post_recv(&p.s[0].qp, &(struct rdmap_recv_wr){
		9, &(struct rdmap_sge){ (uintptr_t)buf, sizeof(buf), stag }, 1 }),
		0);
	u_hdr(fpdu + 2, U_LAST, RD(RDMAP_OP_SEND), 0, 0, 1, 0);
	memcpy(fpdu + 20, "early", 4);
	ck_assert_int_eq(pair_inject(&p, 0, fpdu, sizeof(fpdu)), 0);
	ck_assert_uint_eq(p.s[0].qp.state, RDMAP_QP_RTS);
	ck_assert_uint_eq(p.s[0].n_cqe, 1);
	ck_assert_uint_eq(p.s[0].cqe[0].wr_id, 9);
	ck_assert_uint_eq(p.s[0].cqe[0].status, RDMAP_WC_SUCCESS);
	ck_assert_uint_eq(p.s[0].cqe[0].byte_len, 4);
	ck_assert_mem_eq(buf, "earl", 4);
	pair_fini(&p);
}
END_TEST

START_TEST(receive_naming_an_lkey_that_does_not_cover_it_is_refused)
{
	struct arena *a = arena_new(NULL, NO_RECV);
	struct pair_side *v = &a->p.s[1];
	struct region *src = &a->reg[A_SRC];
	struct rdmap_sge good = { va(&a->reg[V_RECV]), 64,
				  a->reg[V_RECV].stag };
	struct rdmap_sge ss = { va(src), 16, src->stag };

	for (int how = 0; how < 5; how++) {
		struct rdmap_sge sge[2] = { good, bad_sge(a, how) };

		struct rdmap_recv_wr wr = { 0x600 + (uint64_t)how, sge, 2 };

		require(rdmap_post_recv(&v->qp, &wr) == -IW_ELOCAL_PROTECTION,
			"bad buffer %d accepted", how);
		require(v->qp.rq_count == 0, "bad buffer %d queued", how);
	}
	ck_assert_uint_eq(v->n_cqe, 0);
	/* the next good receive is the first one a Send finds */
	ck_assert_int_eq(rdmap_post_recv(&v->qp,
		&(struct rdmap_recv_wr){ 0x700, &good, 1 }), 0);
	ck_assert_int_eq(rdmap_post_send(&a->p.s[0].qp, &(struct rdmap_send_wr){
		.wr_id = 1, .op = RDMAP_WR_SEND, .sge = &ss, .num_sge = 1 }),
		0);
	pair_pump(&a->p);
	ck_assert_uint_eq(v->n_cqe, 1);
	ck_assert_uint_eq(v->cqe[0].wr_id, 0x700);
	ck_assert_uint_eq(v->cqe[0].status, RDMAP_WC_SUCCESS);
	arena_free(a);
}
END_TEST

START_TEST(send_or_read_naming_an_lkey_that_does_not_cover_it_is_refused)
{
	struct arena *a = arena_new(NULL, 0);
	struct pair_side *s = &a->p.s[0];
	struct region *src = &a->reg[A_SRC], *sink = &a->reg[A_SINK];
	struct rdmap_sge bad[] = {
		{ va(src) + src->len - 4, 8, src->stag },
		{ va(src), 8, src->stag ^ 0x01 },
		{ va(src) - 4, 8, src->stag },
		{ va(sink), 8, a->reg[V_RECV].stag }, /* the peer's STag */
	};
	/* a Read's sink needs local write access, which A_SRC lacks */
	struct rdmap_sge nowrite = { va(src), 8, src->stag };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		for (uint8_t op = RDMAP_WR_SEND; op <= RDMAP_WR_READ; op++) {
			struct rdmap_send_wr wr = {
				.wr_id = 0x800 + i, .op = op,
				.flags = RDMAP_WR_SIGNALED,
				.rkey = a->reg[V_WDST].stag,
				.remote_addr = va(&a->reg[V_WDST]),
				.inv_stag = a->reg[V_WDST].stag,
				.sge = &bad[i], .num_sge = 1,
			};

			require(rdmap_post_send(&s->qp, &wr) ==
					-IW_ELOCAL_PROTECTION,
				"bad buffer %zu accepted for op %u", i, op);
		}
	}
	ck_assert_int_eq(rdmap_post_send(&s->qp, &(struct rdmap_send_wr){
		.wr_id = 0x900, .op = RDMAP_WR_READ,
		.rkey = a->reg[V_RSRC].stag, .remote_addr = va(&a->reg[V_RSRC]),
		.sge = &nowrite, .num_sge = 1 }), -IW_ELOCAL_PROTECTION);
	ck_assert_uint_eq(s->qp.sq_head, s->qp.sq_tail);
	ck_assert_uint_eq(pair_pump_one(&a->p, 0, SIZE_MAX), 0);
	ck_assert_uint_eq(s->n_cqe, 0);
	ck_assert_uint_eq(a->p.s[1].n_cqe, 0);
	arena_arm(a);
	assert_memory(a, -1);
	arena_free(a);
}
END_TEST

/* ---- one STag table, several QPs ------------------------------------- */

#define N_SHARING 4

/* Side 0 of @p posts @wr and both sides talk until quiet. */
static void post_and_pump(struct pair *p, const struct rdmap_send_wr *wr)
{
	ck_assert_int_eq(rdmap_post_send(&p->s[0].qp, wr), 0);
	pair_pump(p);
}

/*
 * Side 1 of @p refused what side 0 sent with @err: one Terminate naming
 * (@layer, @etype, @ecode) left it and side 0 read that triple.
 */
static void assert_refused(const struct pair *p, int err, uint8_t layer,
			   uint8_t etype, uint8_t ecode)
{
	const struct rdmap_event *ev;

	ck_assert_int_eq(p->s[1].qp.err, err);
	ck_assert_uint_eq(p->s[1].qp.state, RDMAP_QP_ERROR);
	ck_assert_uint_eq(count_events(&p->s[1], 0, RDMAP_EV_TERMINATE_SENT), 1);
	ck_assert_uint_eq(count_events(&p->s[0], 0,
				       RDMAP_EV_TERMINATE_RECEIVED), 1);
	ev = find_event(&p->s[0], 0, RDMAP_EV_TERMINATE_RECEIVED);
	ck_assert_uint_eq(ev->term->layer, layer);
	ck_assert_uint_eq(ev->term->etype, etype);
	ck_assert_uint_eq(ev->term->ecode, ecode);
}

/*
 * Registrations belong to a device's STag table and a protection domain,
 * not to a QP.  Side 1 of four pairs checks STags in one table: QPs 0-2
 * in PD 1, QP 3 in PD 2.  A region of PD 1 registered once is written
 * through QPs 0 and 1 and read back through 1; one of PD 2 is refused to
 * QP 0 (DDP: STag not associated with the stream, 1/1/0x02) and as a
 * Read source to QP 2 (RDMAP: 0/1/0x03), yet reached by QP 3.  An
 * invalidation through QP 0 holds for QP 1, which then finds the STag
 * invalid (1/1/0x00) and places nothing.
 */
START_TEST(qps_of_one_pd_share_its_registrations_and_nothing_else)
{
	static uint8_t r1[512], r2[512], src[4][512], sink[512], rbuf[64];
	struct ddp_stag_table t;
	struct pair_opts o;
	struct pair *p = calloc(N_SHARING, sizeof(*p));
	struct rng rng;
	uint32_t s1, s2, ssrc[N_SHARING], ssink, srbuf;
	struct rdmap_sge sge;
	struct rdmap_send_wr w;

	ck_assert_ptr_nonnull(p);
	rng_seed(&rng, "rdmap_errors_shared_stags", 0x5a1ed);
	ck_assert_int_eq(ddp_stag_table_init(&t, 64), 0);
	pair_opts_default(&o);
	o.shared_stags = &t;
	for (int i = 0; i < N_SHARING; i++) {
		o.pd1 = i == 3 ? 2 : 1;
		pair_init(&p[i], &o, &rng);
		for (size_t k = 0; k < sizeof(src[i]); k++)
			src[i][k] = (uint8_t)(k * 7 + i * 31 + 1);
		ssrc[i] = pair_reg(&p[i], 0, src[i], sizeof(src[i]),
				   DDP_ACCESS_REMOTE_READ);
	}
	memset(r1, 0, sizeof(r1));
	memset(r2, 0x77, sizeof(r2));
	/* once, in the shared table: r1 in PD 1 (through QP 0), r2 in PD 2 */
	s1 = pair_reg(&p[0], 1, r1, sizeof(r1), RW | RR | LW);
	s2 = pair_reg(&p[3], 1, r2, sizeof(r2), RW | RR | LW);
	ssink = pair_reg(&p[1], 0, sink, sizeof(sink), LW);
	srbuf = pair_reg(&p[0], 1, rbuf, sizeof(rbuf), LW);

	/* QPs 0 and 1 write r1, each its half; QP 1 reads it all back */
	for (int i = 0; i < 2; i++) {
		sge = (struct rdmap_sge){ (uintptr_t)src[i], 256, ssrc[i] };
		w = (struct rdmap_send_wr){ .wr_id = 1, .op = RDMAP_WR_WRITE,
			.flags = RDMAP_WR_SIGNALED, .rkey = s1,
			.remote_addr = (uintptr_t)r1 + 256 * (uint64_t)i,
			.sge = &sge, .num_sge = 1 };
		post_and_pump(&p[i], &w);
		ck_assert_uint_eq(p[i].s[0].n_cqe, 1);
		ck_assert_uint_eq(p[i].s[0].cqe[0].status, RDMAP_WC_SUCCESS);
		ck_assert_mem_eq(r1 + 256 * i, src[i], 256);
	}
	sge = (struct rdmap_sge){ (uintptr_t)sink, sizeof(sink), ssink };
	w = (struct rdmap_send_wr){ .wr_id = 2, .op = RDMAP_WR_READ,
		.flags = RDMAP_WR_SIGNALED, .rkey = s1,
		.remote_addr = (uintptr_t)r1, .sge = &sge, .num_sge = 1 };
	post_and_pump(&p[1], &w);
	ck_assert_uint_eq(p[1].s[0].n_cqe, 2);
	ck_assert_uint_eq(p[1].s[0].cqe[1].status, RDMAP_WC_SUCCESS);
	ck_assert_mem_eq(sink, r1, sizeof(sink));

	/* PD 2's region: reached by QP 3 of PD 2 */
	sge = (struct rdmap_sge){ (uintptr_t)src[3], 64, ssrc[3] };
	w = (struct rdmap_send_wr){ .wr_id = 3, .op = RDMAP_WR_WRITE,
		.flags = RDMAP_WR_SIGNALED, .rkey = s2,
		.remote_addr = (uintptr_t)r2, .sge = &sge, .num_sge = 1 };
	post_and_pump(&p[3], &w);
	ck_assert_uint_eq(p[3].s[0].n_cqe, 1);
	ck_assert_uint_eq(p[3].s[0].cqe[0].status, RDMAP_WC_SUCCESS);
	ck_assert_mem_eq(r2, src[3], 64);
	ck_assert_uint_eq(r2[64], 0x77);

	/* ... and refused as a Read source to QP 2 of PD 1 */
	{
		static uint8_t sink2[64];
		uint32_t ss2 = pair_reg(&p[2], 0, sink2, sizeof(sink2), LW);

		sge = (struct rdmap_sge){ (uintptr_t)sink2, 64, ss2 };
		w = (struct rdmap_send_wr){ .wr_id = 4, .op = RDMAP_WR_READ,
			.flags = RDMAP_WR_SIGNALED, .rkey = s2,
			.remote_addr = (uintptr_t)r2, .sge = &sge,
			.num_sge = 1 };
		post_and_pump(&p[2], &w);
		assert_refused(&p[2], -IW_ERDMAP_NOT_ASSOC, 0, 1, 0x03);
		ck_assert_uint_eq(p[2].s[0].cqe[0].status,
				  RDMAP_WC_REM_ACCESS_ERR);
		for (size_t k = 0; k < sizeof(sink2); k++)
			require(sink2[k] == 0, "sink octet %zu written", k);
	}

	/* QP 0 invalidates s1 with a Send; QP 1 then finds it invalid */
	ck_assert_int_eq(rdmap_post_recv(&p[0].s[1].qp,
		&(struct rdmap_recv_wr){ 5, &(struct rdmap_sge){
			(uintptr_t)rbuf, sizeof(rbuf), srbuf }, 1 }), 0);
	sge = (struct rdmap_sge){ (uintptr_t)src[0], 8, ssrc[0] };
	w = (struct rdmap_send_wr){ .wr_id = 6, .op = RDMAP_WR_SEND_INV,
		.flags = RDMAP_WR_SIGNALED, .inv_stag = s1, .sge = &sge,
		.num_sge = 1 };
	post_and_pump(&p[0], &w);
	ck_assert_uint_eq(p[0].s[1].n_cqe, 1);
	ck_assert_uint_eq(p[0].s[1].cqe[0].flags, RDMAP_CQE_INVALIDATED);
	ck_assert_uint_eq(p[0].s[1].cqe[0].inv_stag, s1);
	memcpy(sink, r1, sizeof(sink));
	sge = (struct rdmap_sge){ (uintptr_t)src[1] + 256, 16, ssrc[1] };
	w = (struct rdmap_send_wr){ .wr_id = 7, .op = RDMAP_WR_WRITE,
		.flags = RDMAP_WR_SIGNALED, .rkey = s1,
		.remote_addr = (uintptr_t)r1, .sge = &sge, .num_sge = 1 };
	post_and_pump(&p[1], &w);
	assert_refused(&p[1], -IW_EDDP_T_STAG, 1, 1, 0x00);
	ck_assert_mem_eq(r1, sink, sizeof(sink));

	/* QP 0 (still up) may not write PD 2's region */
	sge = (struct rdmap_sge){ (uintptr_t)src[0] + 64, 64, ssrc[0] };
	w = (struct rdmap_send_wr){ .wr_id = 8, .op = RDMAP_WR_WRITE,
		.flags = RDMAP_WR_SIGNALED, .rkey = s2,
		.remote_addr = (uintptr_t)r2 + 64, .sge = &sge, .num_sge = 1 };
	ck_assert_uint_eq(p[0].s[1].qp.state, RDMAP_QP_RTS);
	post_and_pump(&p[0], &w);
	assert_refused(&p[0], -IW_EDDP_T_NOT_ASSOC, 1, 1, 0x02);
	ck_assert_uint_eq(r2[64], 0x77);
	ck_assert_uint_eq(p[3].s[1].qp.state, RDMAP_QP_RTS);

	for (int i = 0; i < N_SHARING; i++)
		pair_fini(&p[i]);
	ddp_stag_table_destroy(&t);
	free(p);
}
END_TEST

static Suite *rdmap_errors_suite(void)
{
	Suite *s = suite_create("rdmap_errors");
	TCase *tc;

	tc = tcase_create("ddp");
	tcase_add_test(tc, write_to_unknown_stag_is_ddp_invalid_stag);
	tcase_add_test(tc, write_with_wrong_stag_key_is_ddp_invalid_stag);
	tcase_add_test(tc, write_to_deregistered_stag_is_ddp_invalid_stag);
	tcase_add_test(tc, write_to_stag_invalidated_by_peer_is_ddp_invalid_stag);
	tcase_add_test(tc, write_to_stag_of_another_pd_is_ddp_not_associated);
	tcase_add_test(tc, write_below_the_base_is_ddp_bounds);
	tcase_add_test(tc, write_past_the_end_is_ddp_bounds);
	tcase_add_test(tc, write_wrapping_2_64_is_ddp_to_wrap);
	tcase_add_test(tc, tagged_segment_with_ddp_version_2_is_tagged_version_error);
	tcase_add_test(tc, untagged_segment_with_ddp_version_0_is_untagged_version_error);
	tcase_add_test(tc, untagged_segment_on_qn_3_is_invalid_qn);
	tcase_add_test(tc, send_with_no_receive_posted_is_no_buffer);
	tcase_add_test(tc, send_with_msn_5_when_1_is_due_is_msn_error);
	tcase_add_test(tc, first_segment_with_mo_4_is_mo_error);
	tcase_add_test(tc, send_longer_than_the_posted_receive_is_too_long);
	tcase_add_test(tc, ulpdu_shorter_than_its_ddp_header_is_ddp_malformed);
	tcase_add_loop_test(tc, header_faults_are_reported_in_layer_order, 0, 7);
	tcase_add_test(tc, siw_swapped_terminate_word_is_read_both_ways);
	suite_add_tcase(s, tc);

	tc = tcase_create("rdmap");
	tcase_add_test(tc, write_to_region_without_remote_write_is_rdmap_access_error);
	tcase_add_test(tc, rdmap_version_2_is_invalid_rdmap_version);
	tcase_add_loop_test(tc, opcodes_8_to_15_are_unexpected_opcodes, 0, 16);
	tcase_add_test(tc, send_in_a_tagged_segment_is_unexpected_opcode);
	tcase_add_test(tc, write_in_an_untagged_segment_is_unexpected_opcode);
	tcase_add_test(tc, send_on_qn_1_is_unexpected_opcode);
	tcase_add_test(tc, read_response_with_no_read_outstanding_is_unexpected);
	tcase_add_loop_test(tc, read_response_is_judged_by_ddp_before_it_is_matched_to_the_read,
			    0, N_RRESP_FAULTS);
	tcase_add_test(tc, read_response_in_segments_at_the_advertised_sink_completes_the_read);
	tcase_add_test(tc, more_read_requests_than_the_ird_is_ird_exceeded);
	tcase_add_loop_test(tc, read_request_with_bad_source_is_remote_protection_error,
			    0, N_SRC_FAULTS);
	tcase_add_test(tc, the_longest_terminate_fits_the_smallest_mulpdu);
	tcase_add_loop_test(tc, honest_read_through_bad_source_completes_with_remote_access_error,
			    0, N_SRC_FAULTS);
	tcase_add_loop_test(tc, send_with_invalidate_of_an_stag_it_cannot_invalidate_is_refused,
			    0, 3);
	tcase_add_test(tc, read_request_without_l_is_malformed);
	tcase_add_test(tc, read_request_with_octets_beyond_its_body_is_malformed);
	tcase_add_test(tc, terminate_shorter_than_its_control_word_is_malformed);
	suite_add_tcase(s, tc);

	tc = tcase_create("mpa");
	tcase_add_test(tc, flipped_payload_bit_with_crc_is_mpa_crc_error);
	tcase_add_loop_test(tc, wrong_marker_fpduptr_is_mpa_marker_error, 0, 2);
	tcase_add_test(tc, ulpdu_length_over_the_receive_limit_is_mpa_error);
	tcase_add_test(tc, first_message_not_the_agreed_rtr_is_no_matching_rtr);
	tcase_add_test(tc, stream_ending_inside_an_fpdu_is_stream_lost);
	tcase_add_test(tc, clean_end_of_stream_flushes_everything_without_terminate);
	suite_add_tcase(s, tc);

	tc = tcase_create("other");
	tcase_add_test(tc, received_terminate_ends_the_stream_without_a_terminate_of_our_own);
	tcase_add_test(tc, read_with_ord_0_is_refused_at_posting_and_nothing_is_queued);
	tcase_add_test(tc, read_queued_before_a_start_with_ord_0_terminates_the_stream);
	tcase_add_test(tc, a_message_that_cannot_be_framed_ends_the_stream_with_a_local_terminate);
	tcase_add_test(tc, deregistering_under_a_landing_send_is_local_catastrophic);
	tcase_add_test(tc, qps_of_one_pd_share_its_registrations_and_nothing_else);
	tcase_add_test(tc, responder_speaking_before_our_first_fpdu_is_taken);
	tcase_add_test(tc, receive_naming_an_lkey_that_does_not_cover_it_is_refused);
	tcase_add_test(tc, send_or_read_naming_an_lkey_that_does_not_cover_it_is_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(rdmap_errors_suite());
}
