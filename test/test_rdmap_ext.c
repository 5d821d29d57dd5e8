// SPDX-License-Identifier: MIT
/*
 * RFC 7306 in the RDMAP engine, two engines back to back in memory.
 * Atomic operations: every operation, plain and masked, its result, its
 * completion, the ORD and IRD it shares with RDMA Reads and the order its
 * response keeps.  Immediate Data: alone, with Solicited Event, after an
 * RDMA Write, cut anywhere.  Every error a peer can commit with them,
 * each with the Terminate it must produce; and a stream that did not
 * enable an extension treating its opcodes as any unknown opcode.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/byteorder.h"
#include "lib/error.h"
#include "rdmap/rdmap_internal.h"
#include "rdmap_pair.h"
#include "ulpdus.h"

#define ACC_ALL (DDP_ACCESS_LOCAL_WRITE | DDP_ACCESS_REMOTE_WRITE | \
		 DDP_ACCESS_REMOTE_READ | DDP_ACCESS_REMOTE_ATOMIC)
#define EXT_ALL (RDMAP_EXT_ATOMICS | RDMAP_EXT_IMM)

static struct rng rng;

static void setup_ext(struct pair *p, struct pair_opts *o, const char *name,
		      uint8_t ext0, uint8_t ext1)
{
	o->ext[0] = ext0;
	o->ext[1] = ext1;
	o->record_wire = true;
	pair_init_seeded(p, o, &rng, name, 0x7306);
}

static void setup(struct pair *p, const char *name)
{
	struct pair_opts o;

	pair_opts_default(&o);
	setup_ext(p, &o, name, EXT_ALL, EXT_ALL);
}

static void post(struct pair *p, int side, const struct rdmap_send_wr *wr)
{
	int rc = rdmap_post_send(&p->s[side].qp, wr);

	ck_assert_msg(rc == 0, "post of wr %llu refused: %d",
		      (unsigned long long)wr->wr_id, rc);
}

static void post_recv(struct pair *p, int side, uint64_t id,
		      const struct rdmap_sge *sge, uint32_t n)
{
	ck_assert_int_eq(rdmap_post_recv(&p->s[side].qp,
		&(struct rdmap_recv_wr){ id, sge, n }), 0);
}

/* An atomic on the 8 octets at @to under @rkey, the old value to @res. */
static struct rdmap_send_wr atomic_wr(uint64_t id, const struct rdmap_sge *res,
				      uint32_t rkey, uint64_t to,
				      struct rdmap_atomic_args a)
{
	struct rdmap_send_wr w = pair_send_wr(id, RDMAP_WR_ATOMIC, res, 1);

	w.rkey = rkey;
	w.remote_addr = to;
	w.atomic = a;
	return w;
}

static struct rdmap_atomic_args fetch_add(uint64_t add)
{
	return (struct rdmap_atomic_args){ .aop = RDMAP_AOP_FETCH_ADD,
					   .data = add };
}

static struct rdmap_atomic_args cmp_swap(uint64_t cmp, uint64_t swap)
{
	return (struct rdmap_atomic_args){ .aop = RDMAP_AOP_CMP_SWAP,
					   .data = swap,
					   .data_mask = UINT64_MAX,
					   .cmp = cmp,
					   .cmp_mask = UINT64_MAX };
}

static const struct rdmap_cqe *cqe_of(const struct pair_side *s, uint64_t id)
{
	const struct rdmap_cqe *found = NULL;

	for (uint32_t i = 0; i < s->n_cqe; i++) {
		if (s->cqe[i].wr_id != id)
			continue;
		ck_assert_msg(!found, "wr %llu completed twice",
			      (unsigned long long)id);
		found = &s->cqe[i];
	}
	ck_assert_msg(found != NULL, "wr %llu never completed",
		      (unsigned long long)id);
	return found;
}

static uint64_t va(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* ---- reading a side's wire back --------------------------------------- */

/* Every ULPDU side @side has sent so far; ulpdus_done() frees them. */
static struct ulpdus *ulpdus_of(const struct pair *p, int side)
{
	struct ulpdus *u = calloc(1, sizeof(*u));

	ck_assert_ptr_nonnull(u);
	ulpdus_deframe(u, p->s[side].wire, p->s[side].wire_len, false, false);
	return u;
}

static void ulpdus_done(struct ulpdus *u)
{
	ulpdus_free(u);
	free(u);
}

/* ---- what a Terminate must say ---------------------------------------- */

struct want_term {
	int err; /* the victim's error */
	uint8_t layer, etype, ecode;
};

static uint32_t count_ev(const struct pair_side *s, uint8_t type)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < s->n_ev; i++)
		n += s->ev[i].type == type;
	return n;
}

static const struct rdmap_term *term_received(const struct pair_side *s)
{
	for (uint32_t i = 0; i < s->n_ev; i++)
		if (s->ev[i].type == RDMAP_EV_TERMINATE_RECEIVED)
			return s->ev[i].term;
	return NULL;
}

/*
 * Side @victim found the error @w names in the segment @seg (its DDP
 * header is what the Terminate echoes): it sent one Terminate, its last
 * ULPDU, with M and D, that segment's length and header and no RDMA
 * header; the other side read it back.
 */
static void assert_terminated(struct pair *p, int victim,
			      const struct want_term *w, const uint8_t *seg,
			      uint16_t seg_len)
{
	const struct pair_side *v = &p->s[victim], *o = &p->s[!victim];
	struct ulpdus *u = ulpdus_of(p, victim);
	const struct rdmap_term *t;
	const uint8_t *last;
	size_t hl = seg[0] & DDP_CTRL_T ? 14 : 18;

	ck_assert_int_eq(v->qp.err, w->err);
	ck_assert_uint_eq(v->qp.state, RDMAP_QP_ERROR);
	ck_assert_uint_eq(count_ev(v, RDMAP_EV_TERMINATE_SENT), 1);
	ck_assert_uint_ge(u->n, 1);
	last = ulpdu_at(u, u->n - 1);
	ck_assert_uint_eq(last[1] & RDMAP_CTRL_OPCODE, RDMAP_OP_TERMINATE);
	ck_assert_uint_eq(u->ulen[u->n - 1], 18 + 4 + 2 + hl);
	ck_assert_uint_eq(last[18], w->layer << 4 | w->etype);
	ck_assert_uint_eq(last[19], w->ecode);
	ck_assert_uint_eq(last[20], RDMAP_TERM_FLAG_M | RDMAP_TERM_FLAG_D);
	ck_assert_uint_eq(get_be16(last + 22), seg_len);
	ck_assert_mem_eq(last + 24, seg, hl);
	for (uint32_t i = 0; i + 1 < u->n; i++)
		ck_assert_uint_ne(ulpdu_at(u, i)[1] & RDMAP_CTRL_OPCODE,
				  RDMAP_OP_TERMINATE);
	ulpdus_done(u);

	t = term_received(o);
	ck_assert_ptr_nonnull(t);
	ck_assert_uint_eq(t->layer, w->layer);
	ck_assert_uint_eq(t->etype, w->etype);
	ck_assert_uint_eq(t->ecode, w->ecode);
	ck_assert(t->m && t->d && !t->r);
	ck_assert_uint_eq(o->qp.state, RDMAP_QP_ERROR);
	/* the triple is the one the error table gives the code */
	{
		struct iw_term_triple tr;

		ck_assert(iw_error_term(w->err, &tr));
		ck_assert_uint_eq(tr.layer, w->layer);
		ck_assert_uint_eq(tr.etype, w->etype);
		ck_assert_uint_eq(tr.ecode, w->ecode);
	}
}

/* ---- atomics that succeed --------------------------------------------- */

START_TEST(fetch_add_adds_and_returns_the_value_before)
{
	static _Alignas(8) uint64_t t[4] = { 11, 1000, 33, 0 };
	static uint64_t res[2];
	struct pair p;
	uint32_t st, sr;

	setup(&p, "fetch_add");
	st = pair_reg(&p, 1, t, sizeof(t), ACC_ALL);
	sr = pair_reg(&p, 0, res, sizeof(res), DDP_ACCESS_LOCAL_WRITE);
	{
		struct rdmap_sge r0 = { va(&res[0]), 8, sr };
		struct rdmap_sge r1 = { va(&res[1]), 8, sr };
		struct rdmap_send_wr a = atomic_wr(1, &r0, st, va(&t[1]),
						   fetch_add(5));
		struct rdmap_send_wr b = atomic_wr(2, &r1, st, va(&t[3]),
						   fetch_add(UINT64_MAX));

		post(&p, 0, &a);
		post(&p, 0, &b);
	}
	pair_pump(&p);
	ck_assert_uint_eq(res[0], 1000);
	ck_assert_uint_eq(t[1], 1005);
	ck_assert_uint_eq(res[1], 0);
	ck_assert_uint_eq(t[3], UINT64_MAX); /* adding 2^64 - 1 subtracts 1 */
	ck_assert_uint_eq(t[0], 11);
	ck_assert_uint_eq(t[2], 33);
	for (uint64_t id = 1; id <= 2; id++) {
		const struct rdmap_cqe *c = cqe_of(&p.s[0], id);

		ck_assert_uint_eq(c->status, RDMAP_WC_SUCCESS);
		ck_assert_uint_eq(c->opcode, RDMAP_WC_FETCH_ADD);
		ck_assert_uint_eq(c->byte_len, 8);
	}
	ck_assert_uint_eq(p.s[1].n_cqe, 0); /* nothing for the target's ULP */
	pair_fini(&p);
}
END_TEST

START_TEST(compare_and_swap_writes_only_on_a_match)
{
	static _Alignas(8) uint64_t t = 7;
	static uint64_t res[2];
	struct pair p;
	uint32_t st, sr;

	setup(&p, "cmp_swap");
	st = pair_reg(&p, 1, &t, sizeof(t), ACC_ALL);
	sr = pair_reg(&p, 0, res, sizeof(res), DDP_ACCESS_LOCAL_WRITE);
	{
		struct rdmap_sge r0 = { va(&res[0]), 8, sr };
		struct rdmap_sge r1 = { va(&res[1]), 8, sr };
		struct rdmap_send_wr a = atomic_wr(1, &r0, st, va(&t),
						   cmp_swap(7, 9));
		struct rdmap_send_wr b = atomic_wr(2, &r1, st, va(&t),
						   cmp_swap(7, 11));

		post(&p, 0, &a);
		post(&p, 0, &b);
	}
	pair_pump(&p);
	ck_assert_uint_eq(res[0], 7);
	ck_assert_uint_eq(res[1], 9);
	ck_assert_uint_eq(t, 9);
	ck_assert_uint_eq(cqe_of(&p.s[0], 1)->opcode, RDMAP_WC_CMP_SWAP);
	ck_assert_uint_eq(cqe_of(&p.s[0], 2)->status, RDMAP_WC_SUCCESS);
	pair_fini(&p);
}
END_TEST

/*
 * The masked forms of RFC 7306, through the wire: Fetch and Add with
 * carry boundaries, Swap of selected bits, Compare and Swap comparing
 * selected bits.
 */
START_TEST(masked_operations_touch_only_what_their_masks_select)
{
	static const struct {
		uint64_t before;
		struct rdmap_atomic_args a;
		uint64_t after;
	} c[] = {
		/* two 32-bit fields: the low one wraps, the high one gets 1 */
		{ 0x00000001ffffffffull,
		  { RDMAP_AOP_FETCH_ADD, 0x0000000100000001ull,
		    0x8000000080000000ull, 0, 0 },
		  0x0000000200000000ull },
		/* eight 8-bit fields */
		{ 0x01ff02fe03fd04fcull,
		  { RDMAP_AOP_FETCH_ADD, 0x0101010101010101ull,
		    0x8080808080808080ull, 0, 0 },
		  0x020003ff04fe05fdull },
		{ 0x1111222233334444ull,
		  { RDMAP_AOP_SWAP, 0xaaaaaaaaaaaaaaaaull,
		    0x00000000ffffffffull, 0, 0 },
		  0x11112222aaaaaaaaull },
		{ 0x1111222233334444ull,
		  { RDMAP_AOP_SWAP, 0x5555555555555555ull, UINT64_MAX, 0, 0 },
		  0x5555555555555555ull },
		/* equal in the compared half: the selected bits are written */
		{ 0x123456789abcdef0ull,
		  { RDMAP_AOP_CMP_SWAP, UINT64_MAX, 0xffffull,
		    0x1234567800000000ull, 0xffffffff00000000ull },
		  0x123456789abcffffull },
		/* different in the compared half: nothing changes */
		{ 0x123456789abcdef0ull,
		  { RDMAP_AOP_CMP_SWAP, UINT64_MAX, UINT64_MAX,
		    0x1234567900000000ull, 0xffffffff00000000ull },
		  0x123456789abcdef0ull },
	};
	enum { N = sizeof(c) / sizeof(c[0]) };
	static _Alignas(8) uint64_t t[N];
	static uint64_t res[N];
	struct pair p;
	uint32_t st, sr;

	setup(&p, "masked");
	st = pair_reg(&p, 1, t, sizeof(t), ACC_ALL);
	sr = pair_reg(&p, 0, res, sizeof(res), DDP_ACCESS_LOCAL_WRITE);
	for (int i = 0; i < N; i++) {
		struct rdmap_sge r = { va(&res[i]), 8, sr };
		struct rdmap_send_wr w = atomic_wr((uint64_t)i, &r, st,
						   va(&t[i]), c[i].a);

		t[i] = c[i].before;
		post(&p, 0, &w);
	}
	pair_pump(&p);
	for (int i = 0; i < N; i++) {
		ck_assert_msg(t[i] == c[i].after, "case %d: %#llx, not %#llx",
			      i, (unsigned long long)t[i],
			      (unsigned long long)c[i].after);
		ck_assert_uint_eq(res[i], c[i].before);
		ck_assert_uint_eq(cqe_of(&p.s[0], (uint64_t)i)->status,
				  RDMAP_WC_SUCCESS);
	}
	ck_assert_uint_eq(cqe_of(&p.s[0], 2)->opcode, RDMAP_WC_SWAP);
	pair_fini(&p);
}
END_TEST

/* A bit-by-bit adder whose carry stops above every bit set in @mask. */
static uint64_t ref_masked_add(uint64_t v, uint64_t add, uint64_t mask)
{
	uint64_t out = 0;
	unsigned int carry = 0;

	for (int b = 0; b < 64; b++) {
		unsigned int s = (unsigned int)((v >> b) & 1) +
				 (unsigned int)((add >> b) & 1) + carry;

		out |= (uint64_t)(s & 1) << b;
		carry = (mask >> b) & 1 ? 0 : s >> 1;
	}
	return out;
}

START_TEST(masked_fetch_add_matches_a_bitwise_adder)
{
	struct rng r;

	rng_seed(&r, "masked_add", 0xadd);
	for (int i = 0; i < 100000; i++) {
		uint64_t v = rng_next(&r), add = rng_next(&r);
		uint64_t mask = rng_next(&r) & rng_next(&r);
		uint64_t t = v;
		struct rdmap_atomic_args a = { RDMAP_AOP_FETCH_ADD, add, mask,
					       0, 0 };

		if (i % 7 == 0)
			mask = 0;
		a.data_mask = mask;
		require(rdmap_atomic_execute(&t, &a) == v, "old value lost");
		require(t == ref_masked_add(v, add, mask),
			"%#llx + %#llx mask %#llx: %#llx",
			(unsigned long long)v, (unsigned long long)add,
			(unsigned long long)mask, (unsigned long long)t);
	}
}
END_TEST

/*
 * RFC 7306: atomics and RDMA Reads take the same ORD credits and their
 * responses come back in request order.  With ORD = IRD = 2, never more
 * than two are outstanding, and every result lands where it belongs,
 * whether the stream arrives whole, an octet or a few at a time, or
 * through the direct placement window.
 */
START_TEST(atomics_and_reads_share_the_ord_and_answer_in_order)
{
	static _Alignas(8) uint64_t t[2] = { 100, 200 };
	static uint8_t src[256], sink[4][64];
	static uint64_t res[4];
	struct pair_opts o;
	struct pair p;
	uint32_t st, ss, sk, sr;
	int n = 0;

	pair_opts_default(&o);
	o.ird = o.ord = 2;
	setup_ext(&p, &o, "shared_ord", EXT_ALL, EXT_ALL);
	p.max_cut = _i < 2 ? 1 << 20 : (size_t)_i * 3 - 5;
	p.direct = _i & 1;
	t[0] = 100;
	t[1] = 200;
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 5 + 3);
	st = pair_reg(&p, 1, t, sizeof(t), ACC_ALL);
	ss = pair_reg(&p, 1, src, sizeof(src), ACC_ALL);
	sk = pair_reg(&p, 0, sink, sizeof(sink), ACC_ALL);
	sr = pair_reg(&p, 0, res, sizeof(res), DDP_ACCESS_LOCAL_WRITE);
	for (int i = 0; i < 8; i++) {
		if (i % 2 == 0) {
			struct rdmap_sge s = { va(sink[i / 2]), 64, sk };
			struct rdmap_send_wr r = pair_send_wr(
				(uint64_t)i, RDMAP_WR_READ, &s, 1);

			r.rkey = ss;
			r.remote_addr = va(src) + 64 * (uint64_t)(i / 2);
			post(&p, 0, &r);
		} else {
			struct rdmap_sge s = { va(&res[i / 2]), 8, sr };
			struct rdmap_send_wr a = atomic_wr(
				(uint64_t)i, &s, st, va(&t[i / 4]),
				fetch_add(1));

			post(&p, 0, &a);
		}
	}
	for (int round = 0; round < 100000; round++) {
		size_t moved = pair_pump_one(&p, 0, SIZE_MAX);

		require(p.s[0].qp.ord_count <= 2, "%u requests outstanding",
			p.s[0].qp.ord_count);
		require(p.s[1].qp.ird_count <= 2, "IRD overrun");
		moved += pair_pump_one(&p, 1, SIZE_MAX);
		if (!moved && ++n > 2)
			break;
	}
	/* no Terminate, no error: the responder only saw the stream open */
	ck_assert_uint_eq(p.s[1].n_ev, 1);
	ck_assert_uint_eq(p.s[1].ev[0].type, RDMAP_EV_ESTABLISHED);
	ck_assert_uint_eq(p.s[0].n_ev, 0);
	ck_assert_uint_eq(p.s[0].n_cqe, 8);
	for (uint32_t i = 0; i < 8; i++) {
		ck_assert_uint_eq(p.s[0].cqe[i].wr_id, i); /* posting order */
		ck_assert_uint_eq(p.s[0].cqe[i].status, RDMAP_WC_SUCCESS);
	}
	for (int i = 0; i < 4; i++)
		ck_assert_mem_eq(sink[i], src + 64 * i, 64);
	ck_assert_uint_eq(res[0], 100);
	ck_assert_uint_eq(res[1], 101);
	ck_assert_uint_eq(res[2], 200);
	ck_assert_uint_eq(res[3], 201);
	ck_assert_uint_eq(t[0], 102);
	ck_assert_uint_eq(t[1], 202);
	pair_fini(&p);
}
END_TEST

/*
 * An atomic is carried out in stream order with the RDMA Writes around
 * it: it sees the Write before it, and the Write after it lands after it.
 */
START_TEST(an_atomic_keeps_its_place_among_writes)
{
	static _Alignas(8) uint64_t t;
	static uint64_t v1 = 100, v2 = 7, res;
	struct pair p;
	uint32_t st, sv, sr;

	setup(&p, "atomic_writes");
	st = pair_reg(&p, 1, &t, sizeof(t), ACC_ALL);
	sv = pair_reg(&p, 0, &v1, sizeof(v1), ACC_ALL);
	sr = pair_reg(&p, 0, &res, sizeof(res), ACC_ALL);
	{
		struct rdmap_sge w1s = { va(&v1), 8, sv };
		struct rdmap_sge w2s = { va(&v2), 8, 0 };
		struct rdmap_sge rs = { va(&res), 8, sr };
		struct rdmap_send_wr w1 = pair_send_wr(1, RDMAP_WR_WRITE,
						       &w1s, 1);
		struct rdmap_send_wr a = atomic_wr(2, &rs, st, va(&t),
						   fetch_add(1));
		struct rdmap_send_wr w2 = pair_send_wr(3, RDMAP_WR_WRITE,
						       &w2s, 1);

		w1.rkey = w2.rkey = st;
		w1.remote_addr = w2.remote_addr = va(&t);
		w2.flags |= RDMAP_WR_INLINE;
		post(&p, 0, &w1);
		post(&p, 0, &a);
		post(&p, 0, &w2);
	}
	pair_pump(&p);
	ck_assert_uint_eq(res, 100);
	ck_assert_uint_eq(t, 7);
	pair_fini(&p);
}
END_TEST

/* ---- immediate data ---------------------------------------------------- */

/*
 * RDMA Write with Immediate Data is the Write, then the Immediate Data
 * message (QN 0, opcode 0xC, 8 octets): the data is in place when the
 * receive completes, the completion carries the value and the Write's
 * length.  Cut anywhere, placed directly or not, the result is the same.
 */
START_TEST(write_with_immediate_places_the_data_then_completes_a_receive)
{
	static uint8_t src[3000], dst[4096];
	struct pair p;
	uint32_t ss, sd;
	struct ulpdus *u;
	const uint8_t *imm;
	const struct rdmap_cqe *c;

	setup(&p, "write_imm");
	p.direct = _i & 1;
	p.max_cut = _i < 2 ? 1 << 20 : 1 + (size_t)_i;
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 3 + _i);
	memset(dst, 0, sizeof(dst));
	ss = pair_reg(&p, 0, src, sizeof(src), ACC_ALL);
	sd = pair_reg(&p, 1, dst, sizeof(dst), ACC_ALL);
	post_recv(&p, 1, 50, NULL, 0);
	{
		struct rdmap_sge s = { va(src), sizeof(src), ss };
		struct rdmap_send_wr w = pair_send_wr(1, RDMAP_WR_WRITE_IMM,
						      &s, 1);

		w.rkey = sd;
		w.remote_addr = va(dst) + 100;
		w.imm = 0x1122334455667788ull;
		post(&p, 0, &w);
	}
	pair_pump(&p);
	ck_assert_mem_eq(dst + 100, src, sizeof(src));
	c = cqe_of(&p.s[1], 50);
	ck_assert_uint_eq(c->status, RDMAP_WC_SUCCESS);
	ck_assert_uint_eq(c->opcode, RDMAP_WC_RECV_WRITE_IMM);
	ck_assert_uint_eq(c->flags, RDMAP_CQE_IMM);
	ck_assert_uint_eq(c->imm, 0x1122334455667788ull);
	ck_assert_uint_eq(c->byte_len, sizeof(src));
	c = cqe_of(&p.s[0], 1);
	ck_assert_uint_eq(c->opcode, RDMAP_WC_WRITE);
	ck_assert_uint_eq(c->status, RDMAP_WC_SUCCESS);

	/* on the wire: Write segments, then one Immediate Data message */
	u = ulpdus_of(&p, 0);
	ck_assert_uint_ge(u->n, 2);
	for (uint32_t i = 0; i + 1 < u->n; i++)
		ck_assert_uint_eq(ulpdu_at(u, i)[1], 0x40 | RDMAP_OP_WRITE);
	imm = ulpdu_at(u, u->n - 1);
	ck_assert_uint_eq(u->ulen[u->n - 1], 18 + RDMAP_IMM_LEN);
	ck_assert_uint_eq(imm[0], 0x41); /* untagged, last, DDP version 1 */
	ck_assert_uint_eq(imm[1], 0x40 | RDMAP_OP_IMM);
	ck_assert_uint_eq(get_be32(imm + 6), RDMAP_QN_SEND);
	ck_assert_uint_eq(get_be32(imm + 10), 1); /* MSN */
	ck_assert_uint_eq(get_be32(imm + 14), 0); /* MO */
	ck_assert_uint_eq(get_be64(imm + 18), 0x1122334455667788ull);
	ulpdus_done(u);
	pair_fini(&p);
}
END_TEST

/*
 * Immediate Data alone takes the next receive in MSN order among Sends;
 * with Solicited Event it is opcode 0xD and says so.  One right after a
 * Write of its own counts as that Write's (the wire cannot tell).
 */
START_TEST(immediate_data_takes_receives_in_order_with_sends)
{
	static uint8_t src[64], rbuf[4][32];
	struct pair p;
	uint32_t ss, sd;
	const struct rdmap_cqe *c;

	setup(&p, "imm_order");
	memcpy(src, "first send", 10);
	ss = pair_reg(&p, 0, src, sizeof(src), ACC_ALL);
	sd = pair_reg(&p, 1, rbuf, sizeof(rbuf), ACC_ALL);
	for (int i = 0; i < 4; i++) {
		struct rdmap_sge r = { va(rbuf[i]), 32, sd };

		post_recv(&p, 1, 10 + (uint64_t)i, &r, 1);
	}
	{
		struct rdmap_sge s = { va(src), 10, ss };
		struct rdmap_send_wr snd = pair_send_wr(1, RDMAP_WR_SEND, &s, 1);
		struct rdmap_send_wr i1 = pair_send_wr(2, RDMAP_WR_IMM, NULL, 0);
		struct rdmap_send_wr w = pair_send_wr(3, RDMAP_WR_WRITE, &s, 1);
		struct rdmap_send_wr i2 = pair_send_wr(4, RDMAP_WR_IMM, NULL, 0);
		struct rdmap_send_wr i3 = pair_send_wr(5, RDMAP_WR_IMM, NULL, 0);

		i1.imm = 1;
		i1.flags |= RDMAP_WR_SOLICITED;
		w.rkey = sd;
		w.remote_addr = va(rbuf[3]) + 20;
		i2.imm = 2;
		i3.imm = 3;
		post(&p, 0, &snd);
		post(&p, 0, &i1);
		post(&p, 0, &w);
		post(&p, 0, &i2);
		post(&p, 0, &i3);
	}
	pair_pump(&p);
	ck_assert_uint_eq(p.s[1].n_cqe, 4);
	c = &p.s[1].cqe[0];
	ck_assert_uint_eq(c->wr_id, 10);
	ck_assert_uint_eq(c->opcode, RDMAP_WC_RECV);
	ck_assert_uint_eq(c->flags, 0);
	ck_assert_uint_eq(c->byte_len, 10);
	c = &p.s[1].cqe[1];
	ck_assert_uint_eq(c->wr_id, 11);
	ck_assert_uint_eq(c->opcode, RDMAP_WC_RECV);
	ck_assert_uint_eq(c->flags, RDMAP_CQE_IMM | RDMAP_CQE_SOLICITED);
	ck_assert_uint_eq(c->imm, 1);
	ck_assert_uint_eq(c->byte_len, 0);
	c = &p.s[1].cqe[2];
	ck_assert_uint_eq(c->wr_id, 12);
	ck_assert_uint_eq(c->opcode, RDMAP_WC_RECV_WRITE_IMM);
	ck_assert_uint_eq(c->imm, 2);
	ck_assert_uint_eq(c->byte_len, 10);
	c = &p.s[1].cqe[3];
	ck_assert_uint_eq(c->wr_id, 13);
	ck_assert_uint_eq(c->opcode, RDMAP_WC_RECV);
	ck_assert_uint_eq(c->imm, 3);
	ck_assert_mem_eq(rbuf[0], "first send", 10);
	ck_assert_mem_eq(rbuf[3] + 20, "first send", 10);
	for (uint64_t id = 1; id <= 5; id++)
		ck_assert_uint_eq(cqe_of(&p.s[0], id)->status,
				  RDMAP_WC_SUCCESS);
	ck_assert_uint_eq(cqe_of(&p.s[0], 2)->opcode, RDMAP_WC_SEND);
	{
		struct ulpdus *u = ulpdus_of(&p, 0);

		ck_assert_uint_eq(ulpdu_at(u, 1)[1], 0x40 | RDMAP_OP_IMM_SE);
		ulpdus_done(u);
	}
	pair_fini(&p);
}
END_TEST

/* ---- posting ------------------------------------------------------------ */

START_TEST(posting_needs_the_extension_and_a_well_formed_request)
{
	static uint64_t res[2];
	struct pair_opts o;
	struct pair p;
	uint32_t sr;

	pair_opts_default(&o);
	setup_ext(&p, &o, "post_ext", 0, RDMAP_EXT_IMM);
	sr = pair_reg(&p, 0, res, sizeof(res), ACC_ALL);
	{
		struct rdmap_sge r = { va(res), 8, sr };
		struct rdmap_sge r16 = { va(res), 16, sr };
		struct rdmap_send_wr a = atomic_wr(1, &r, 1, 0, fetch_add(1));
		struct rdmap_send_wr wi = pair_send_wr(2, RDMAP_WR_WRITE_IMM,
						       &r, 1);
		struct rdmap_send_wr im = pair_send_wr(3, RDMAP_WR_IMM, NULL, 0);

		/* side 0 has no extension at all */
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &a), -EOPNOTSUPP);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &wi), -EOPNOTSUPP);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &im), -EOPNOTSUPP);
		/* side 1 has immediate data only */
		ck_assert_int_eq(rdmap_post_send(&p.s[1].qp, &a), -EOPNOTSUPP);
		im.sge = &r;
		im.num_sge = 1;
		ck_assert_int_eq(rdmap_post_send(&p.s[1].qp, &im), -EINVAL);
		pair_fini(&p);

		pair_opts_default(&o);
		setup_ext(&p, &o, "post_ext", EXT_ALL, EXT_ALL);
		sr = pair_reg(&p, 0, res, sizeof(res), ACC_ALL);
		r.lkey = r16.lkey = sr;
		a = atomic_wr(1, &r16, 1, 0, fetch_add(1));
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &a), -EINVAL);
		a = atomic_wr(1, &r, 1, 0, fetch_add(1));
		a.atomic.aop = 3;
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &a), -EINVAL);
		a = atomic_wr(1, &r, 1, 0, fetch_add(1));
		a.flags |= RDMAP_WR_INLINE;
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &a), -EINVAL);
		a = atomic_wr(1, &r, 1, 0, fetch_add(1));
		r.lkey = pair_reg(&p, 0, res, sizeof(res), 0); /* no local write */
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &a),
				 -IW_ELOCAL_PROTECTION);
		ck_assert_uint_eq(p.s[0].qp.sq_head, 0); /* nothing queued */
	}
	pair_fini(&p);
}
END_TEST

/* ---- errors ------------------------------------------------------------- */

enum target_fault {
	F_UNALIGNED_TO,
	F_OUT_OF_BOUNDS,
	F_NO_ATOMIC_RIGHT,
	F_BAD_STAG,
	F_OTHER_PD,
	F_TO_WRAP,
	F_UNALIGNED_MEMORY,
	N_FAULTS,
};

static const struct {
	const char *name;
	struct want_term w;
} fault_term[N_FAULTS] = {
	[F_UNALIGNED_TO] = { "unaligned TO",
			     { -IW_ERDMAP_ATOMIC_ALIGN, 0, 1, 0x01 } },
	[F_OUT_OF_BOUNDS] = { "out of bounds",
			      { -IW_ERDMAP_ATOMIC_BOUNDS, 0, 1, 0x01 } },
	[F_NO_ATOMIC_RIGHT] = { "no atomic right",
				{ -IW_ERDMAP_ACCESS, 0, 1, 0x02 } },
	[F_BAD_STAG] = { "invalid STag", { -IW_ERDMAP_ATOMIC_STAG, 0, 1, 0x00 } },
	[F_OTHER_PD] = { "other PD", { -IW_ERDMAP_ATOMIC_NOT_ASSOC, 0, 1, 0x03 } },
	[F_TO_WRAP] = { "TO wraps", { -IW_ERDMAP_ATOMIC_TO_WRAP, 0, 1, 0x04 } },
	[F_UNALIGNED_MEMORY] = { "unaligned in memory",
				 { -IW_ERDMAP_ATOMIC_ALIGN, 0, 1, 0x01 } },
};

/*
 * The responder judges an atomic's target as RFC 5040 judges a Read's
 * source, and its alignment: each fault ends the stream with its one
 * Terminate, echoing the Atomic Request's DDP header.  The requester's
 * atomic fails with a remote access error, the work after it is flushed,
 * each exactly once, and no target octet changes.
 */
START_TEST(a_faulty_atomic_target_is_refused_with_its_terminate)
{
	static _Alignas(8) uint8_t mem[4][80];
	static uint64_t res;
	static const uint8_t before[80] = { 0x5a, 0x5a, 0x5a };
	struct pair p;
	uint32_t good, noatomic, otherpd, shifted, sr, stag;
	uint64_t to;
	struct ulpdus *u;
	const uint8_t *req;

	setup(&p, fault_term[_i].name);
	for (int i = 0; i < 4; i++)
		memcpy(mem[i], before, sizeof(before));
	good = pair_reg(&p, 1, mem[0], 64, ACC_ALL);
	noatomic = pair_reg(&p, 1, mem[1], 64, ACC_ALL &
				~(uint32_t)DDP_ACCESS_REMOTE_ATOMIC);
	ck_assert_int_eq(ddp_mr_register(&p.s[1].stags, PAIR_PD + 1, va(mem[2]),
					 mem[2], 64, ACC_ALL, &otherpd), 0);
	/* tagged offsets aligned, memory 4 octets off */
	ck_assert_int_eq(ddp_mr_register(&p.s[1].stags, PAIR_PD, 0x10000,
					 mem[3] + 4, 64, ACC_ALL, &shifted), 0);
	sr = pair_reg(&p, 0, &res, sizeof(res), ACC_ALL);
	stag = good;
	to = va(mem[0]) + 8;
	switch (_i) {
	case F_UNALIGNED_TO:
		to += 4;
		break;
	case F_OUT_OF_BOUNDS:
		to = va(mem[0]) + 64;
		break;
	case F_NO_ATOMIC_RIGHT:
		stag = noatomic;
		to = va(mem[1]);
		break;
	case F_BAD_STAG:
		stag = good ^ 0x80; /* another key */
		break;
	case F_OTHER_PD:
		stag = otherpd;
		to = va(mem[2]);
		break;
	case F_TO_WRAP:
		to = UINT64_MAX - 3;
		break;
	default: /* F_UNALIGNED_MEMORY */
		stag = shifted;
		to = 0x10008;
		break;
	}
	{
		struct rdmap_sge r = { va(&res), 8, sr };
		struct rdmap_send_wr a = atomic_wr(1, &r, stag, to,
						   fetch_add(1));
		/* a Read behind it, whose response never comes */
		struct rdmap_send_wr rd = pair_send_wr(2, RDMAP_WR_READ, &r, 1);

		rd.rkey = good;
		rd.remote_addr = va(mem[0]);
		post(&p, 0, &a);
		post(&p, 0, &rd);
	}
	/* the requests go; the victim answers; the requester reads it */
	pair_pump(&p);
	u = ulpdus_of(&p, 0);
	req = ulpdu_at(u, 0);
	ck_assert_uint_eq(req[1], 0x40 | RDMAP_OP_ATOMIC_REQ);
	ck_assert_uint_eq(u->ulen[0], 18 + RDMAP_ATOMIC_REQ_LEN);
	assert_terminated(&p, 1, &fault_term[_i].w, req, u->ulen[0]);
	ulpdus_done(u);
	ck_assert_uint_eq(cqe_of(&p.s[0], 1)->status, RDMAP_WC_REM_ACCESS_ERR);
	ck_assert_int_eq(cqe_of(&p.s[0], 1)->err, -IW_ETERMINATED);
	ck_assert_uint_eq(cqe_of(&p.s[0], 2)->status, RDMAP_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(p.s[0].n_cqe, 2);
	ck_assert_uint_eq(p.s[1].n_cqe, 0);
	for (int i = 0; i < 4; i++)
		ck_assert_mem_eq(mem[i], before, sizeof(before));
	pair_fini(&p);
}
END_TEST

/*
 * More atomics than the responder's IRD: the one too many is refused
 * (remote operation error 0x07, as a Read would be); the one before it
 * was carried out, but its response cannot follow the Terminate.
 */
START_TEST(more_atomics_than_the_ird_are_refused)
{
	static _Alignas(8) uint64_t t = 40;
	static uint64_t res[2];
	struct pair_opts o;
	struct pair p;
	uint32_t st, sr;
	struct ulpdus *u;

	pair_opts_default(&o);
	o.ird = o.ord = 4;
	setup_ext(&p, &o, "ird", EXT_ALL, EXT_ALL);
	p.s[1].qp.conn.ird = 1; /* the responder granted less than asked */
	st = pair_reg(&p, 1, &t, sizeof(t), ACC_ALL);
	sr = pair_reg(&p, 0, res, sizeof(res), ACC_ALL);
	for (int i = 0; i < 2; i++) {
		struct rdmap_sge r = { va(&res[i]), 8, sr };
		struct rdmap_send_wr a = atomic_wr((uint64_t)i + 1, &r, st,
						   va(&t), fetch_add(1));

		post(&p, 0, &a);
	}
	pair_pump(&p);
	u = ulpdus_of(&p, 0);
	ck_assert_uint_eq(u->n, 2);
	assert_terminated(&p, 1,
			  &(struct want_term){ -IW_ERDMAP_ATOMIC_IRD_EXCEEDED,
					       0, 2, 0x07 },
			  ulpdu_at(u, 1), u->ulen[1]);
	ulpdus_done(u);
	ck_assert_uint_eq(t, 41);
	ck_assert_uint_eq(cqe_of(&p.s[0], 1)->status, RDMAP_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(cqe_of(&p.s[0], 2)->status, RDMAP_WC_REM_OP_ERR);
	pair_fini(&p);
}
END_TEST

/*
 * RFC 5040 section 7.1: a stream that did not enable an extension answers
 * its opcodes as it answers any unknown opcode.  Side 1 has none, or only
 * the other one; side 0 sends.
 */
START_TEST(an_extension_opcode_on_a_stream_without_it_is_an_unknown_opcode)
{
	static _Alignas(8) uint64_t t = 5;
	static uint64_t res;
	static uint8_t src[16];
	struct pair_opts o;
	struct pair p;
	uint32_t st, sr;
	struct ulpdus *u;
	bool atomic = _i < 2;
	/* _i 0: atomic to a plain stream, 1: atomic to immediate-only,
	 * 2: immediate data to a plain stream, 3: to atomics-only */
	static const uint8_t ext1[] = { 0, RDMAP_EXT_IMM, 0,
					RDMAP_EXT_ATOMICS };

	pair_opts_default(&o);
	setup_ext(&p, &o, "unknown_op", EXT_ALL, ext1[_i]);
	st = pair_reg(&p, 1, &t, sizeof(t), ACC_ALL);
	sr = pair_reg(&p, 0, &res, sizeof(res), ACC_ALL);
	{
		struct rdmap_sge rb = { va(src), 16, pair_reg(&p, 1, src, 16,
							      ACC_ALL) };

		post_recv(&p, 1, 9, &rb, 1);
	}
	if (atomic) {
		struct rdmap_sge r = { va(&res), 8, sr };
		struct rdmap_send_wr a = atomic_wr(1, &r, st, va(&t),
						   fetch_add(1));

		post(&p, 0, &a);
	} else {
		struct rdmap_send_wr im = pair_send_wr(1, RDMAP_WR_IMM, NULL, 0);

		post(&p, 0, &im);
	}
	pair_pump(&p);
	u = ulpdus_of(&p, 0);
	ck_assert_uint_eq(u->n, 1);
	assert_terminated(&p, 1,
			  &(struct want_term){ -IW_ERDMAP_OPCODE, 0, 2, 0x06 },
			  ulpdu_at(u, 0), u->ulen[0]);
	ulpdus_done(u);
	ck_assert_uint_eq(t, 5);
	/* an atomic is named by its DDP header: it fails, remotely */
	ck_assert_uint_eq(cqe_of(&p.s[0], 1)->status,
			  atomic ? RDMAP_WC_REM_OP_ERR : RDMAP_WC_SUCCESS);
	ck_assert_uint_eq(cqe_of(&p.s[1], 9)->status, RDMAP_WC_WR_FLUSH_ERR);
	pair_fini(&p);
}
END_TEST

/* ---- forged messages ---------------------------------------------------- */

#define U_LAST 0x41 /* DDP control: untagged, L, DV 1 */
#define U_MID 0x01
#define T_LAST 0xc1
#define RD(op) (0x40 | (op)) /* RDMAP control: RV 1 */

static size_t u_hdr(uint8_t *o, uint8_t ctrl, uint8_t op, uint32_t qn,
		    uint32_t msn)
{
	o[0] = ctrl;
	o[1] = RD(op);
	put_be32(o + 2, 0);
	put_be32(o + 6, qn);
	put_be32(o + 10, msn);
	put_be32(o + 14, 0);
	return 18;
}

/* Frames @seg as side @from would and feeds it to the other side. */
static int inject(struct pair *p, int from, const uint8_t *seg, size_t len)
{
	struct mpa_tx t = p->s[from].qp.mpa_tx;
	struct iovec in = { (void *)(uintptr_t)seg, len }, out[16];
	struct mpa_tx_frame fr = { 0 };
	static uint8_t w[4096];
	size_t n = 0;
	int cnt = mpa_tx_fpdu(&t, &in, 1, &fr, out, 16);

	ck_assert_int_gt(cnt, 0);
	for (int i = 0; i < cnt; i++) {
		memcpy(w + n, out[i].iov_base, out[i].iov_len);
		n += out[i].iov_len;
	}
	/* the forger's own framing moves on as if it had sent it */
	p->s[from].qp.mpa_tx = t;
	if (p->s[from].wire) {
		memcpy(p->s[from].wire + p->s[from].wire_len, w, n);
		p->s[from].wire_len += n;
	}
	return pair_inject(p, !from, w, n);
}

enum forged {
	G_UNKNOWN_AOP,	       /* Atomic Request, operation 3 */
	G_ATOMIC_PAYLOAD,      /* Atomic Request with 4 octets more */
	G_ATOMIC_SHORT,	       /* Atomic Request header cut short */
	G_ATOMIC_NOT_LAST,     /* Atomic Request without L */
	G_ARESP_UNEXPECTED,    /* Atomic Response, nothing outstanding */
	G_ARESP_WRONG_ID,      /* Atomic Response, another identifier */
	G_ARESP_FOR_A_READ,    /* Atomic Response while a Read is oldest */
	G_RRESP_FOR_AN_ATOMIC, /* Read Response while an atomic is oldest */
	G_IMM_LONG,	       /* Immediate Data with 12 octets */
	G_IMM_SHORT,	       /* Immediate Data with 4 octets */
	G_IMM_NO_RECEIVE,      /* Immediate Data, no receive posted */
	G_QN3_PLAIN,	       /* queue 3 on a stream without atomics */
	N_FORGED,
};

static const struct {
	const char *name;
	struct want_term w;
} forged_term[N_FORGED] = {
	[G_UNKNOWN_AOP] = { "unknown aop", { -IW_ERDMAP_ATOMIC_OP, 0, 2, 0x06 } },
	[G_ATOMIC_PAYLOAD] = { "atomic payload",
			       { -IW_ERDMAP_MALFORMED, 0, 2, 0xff } },
	[G_ATOMIC_SHORT] = { "atomic short",
			     { -IW_ERDMAP_MALFORMED, 0, 2, 0xff } },
	[G_ATOMIC_NOT_LAST] = { "atomic not last",
				{ -IW_ERDMAP_MALFORMED, 0, 2, 0xff } },
	[G_ARESP_UNEXPECTED] = { "aresp unexpected",
				 { -IW_ERDMAP_ARESP_UNEXPECTED, 0, 2, 0x06 } },
	[G_ARESP_WRONG_ID] = { "aresp wrong id",
			       { -IW_ERDMAP_ARESP_MISMATCH, 0, 2, 0x07 } },
	[G_ARESP_FOR_A_READ] = { "aresp for a read",
				 { -IW_ERDMAP_ARESP_MISMATCH, 0, 2, 0x07 } },
	[G_RRESP_FOR_AN_ATOMIC] = { "rresp for an atomic",
				    { -IW_ERDMAP_RRESP_MISMATCH, 0, 2, 0x07 } },
	[G_IMM_LONG] = { "imm long", { -IW_ERDMAP_MALFORMED, 0, 2, 0xff } },
	[G_IMM_SHORT] = { "imm short", { -IW_ERDMAP_MALFORMED, 0, 2, 0xff } },
	[G_IMM_NO_RECEIVE] = { "imm no receive",
			       { -IW_EDDP_U_NO_BUFFER, 1, 2, 0x02 } },
	[G_QN3_PLAIN] = { "qn 3 plain", { -IW_EDDP_U_QN, 1, 2, 0x01 } },
};

/*
 * Side 0 forges one message to side 1, the victim, which must end the
 * stream with the Terminate that names the fault and touch no memory.
 * For the responses, side 0 first has a request of its own outstanding
 * at side 1 (side 1 is then the requester that gets the forged answer).
 */
START_TEST(a_forged_extension_message_gets_its_terminate)
{
	static _Alignas(8) uint64_t t = 77;
	static uint64_t res = 0x1234;
	static uint8_t rbuf[64];
	uint8_t seg[128];
	size_t n = 0;
	struct pair_opts o;
	struct pair p;
	uint32_t st, sr, sb;
	int rc;

	pair_opts_default(&o);
	o.responder_first = true; /* side 1 may ask before side 0 speaks */
	setup_ext(&p, &o, forged_term[_i].name, EXT_ALL,
		  _i == G_QN3_PLAIN ? RDMAP_EXT_IMM : EXT_ALL);
	st = pair_reg(&p, 0, &t, sizeof(t), ACC_ALL);
	sr = pair_reg(&p, 1, &res, sizeof(res), ACC_ALL);
	sb = pair_reg(&p, 1, rbuf, sizeof(rbuf), ACC_ALL);
	if (_i != G_IMM_NO_RECEIVE) {
		struct rdmap_sge r = { va(rbuf), 64, sb };

		post_recv(&p, 1, 9, &r, 1);
	}
	/* side 1 asks first when the forgery is an answer */
	if (_i == G_ARESP_WRONG_ID || _i == G_RRESP_FOR_AN_ATOMIC) {
		struct rdmap_sge r = { va(&res), 8, sr };
		struct rdmap_send_wr a = atomic_wr(1, &r, st, va(&t),
						   fetch_add(1));

		post(&p, 1, &a);
	} else if (_i == G_ARESP_FOR_A_READ) {
		struct rdmap_sge r = { va(&res), 8, sr };
		struct rdmap_send_wr rd = pair_send_wr(1, RDMAP_WR_READ, &r, 1);

		rd.rkey = st;
		rd.remote_addr = va(&t);
		post(&p, 1, &rd);
	}
	if (p.s[1].qp.sq_head) {
		/* the request goes to side 0, whose answer is never sent */
		ck_assert_uint_gt(pair_pump_one(&p, 1, SIZE_MAX), 0);
		ck_assert_uint_eq(p.s[0].feed_err, 0);
	}
	switch (_i) {
	case G_UNKNOWN_AOP:
	case G_ATOMIC_PAYLOAD:
	case G_ATOMIC_SHORT:
	case G_ATOMIC_NOT_LAST:
		n = u_hdr(seg, _i == G_ATOMIC_NOT_LAST ? U_MID : U_LAST,
			  RDMAP_OP_ATOMIC_REQ, RDMAP_QN_READ_REQ, 1);
		rdmap_atomic_request_hdr(seg + n, &(struct rdmap_atomic_args){
			.aop = RDMAP_AOP_FETCH_ADD, .data = 1 }, 1, sr,
			va(&res));
		if (_i == G_UNKNOWN_AOP)
			seg[n + 3] = 3;
		n += _i == G_ATOMIC_SHORT ? 20 : RDMAP_ATOMIC_REQ_LEN;
		if (_i == G_ATOMIC_PAYLOAD)
			n += 4;
		break;
	case G_ARESP_UNEXPECTED:
	case G_ARESP_WRONG_ID:
	case G_ARESP_FOR_A_READ:
	case G_QN3_PLAIN:
		n = u_hdr(seg, U_LAST, RDMAP_OP_ATOMIC_RESP,
			  RDMAP_QN_ATOMIC_RESP, 1);
		/* the right identifier is 1, the MSN of side 1's request */
		put_be32(seg + n, _i == G_ARESP_WRONG_ID ? 2 : 1);
		put_be64(seg + n + 4, 0xdead);
		n += RDMAP_ATOMIC_RESP_LEN;
		break;
	case G_RRESP_FOR_AN_ATOMIC:
		seg[0] = T_LAST;
		seg[1] = RD(RDMAP_OP_READ_RESP);
		put_be32(seg + 2, sr);
		put_be64(seg + 6, va(&res));
		memset(seg + 14, 0xee, 8);
		n = 22;
		break;
	default: /* immediate data */
		n = u_hdr(seg, U_LAST, RDMAP_OP_IMM, RDMAP_QN_SEND, 1);
		memset(seg + n, 0x11, 12);
		n += _i == G_IMM_LONG ? 12 : _i == G_IMM_SHORT ? 4 : 8;
		break;
	}
	rc = inject(&p, 0, seg, n);
	ck_assert_int_eq(rc, forged_term[_i].w.err);
	pair_pump(&p);
	/* the Terminate echoes the forged segment's header */
	{
		struct ulpdus *u = ulpdus_of(&p, 1);
		const uint8_t *last = ulpdu_at(u, u->n - 1);
		size_t hl = seg[0] & DDP_CTRL_T ? 14 : 18;

		ck_assert_uint_eq(last[18], forged_term[_i].w.layer << 4 |
						    forged_term[_i].w.etype);
		ck_assert_uint_eq(last[19], forged_term[_i].w.ecode);
		ck_assert_mem_eq(last + 24, seg, hl);
		ulpdus_done(u);
	}
	assert_terminated(&p, 1, &forged_term[_i].w, seg, (uint16_t)n);
	ck_assert_uint_eq(t, _i == G_ARESP_WRONG_ID ||
				     _i == G_RRESP_FOR_AN_ATOMIC
			       ? 78 /* side 0 carried the real one out */
			       : 77);
	ck_assert_uint_eq(res, 0x1234);
	for (size_t i = 0; i < sizeof(rbuf); i++)
		ck_assert_uint_eq(rbuf[i], 0);
	/* side 1's own work completes once: flushed, or failed */
	if (p.s[1].qp.sq_head)
		ck_assert_uint_ne(cqe_of(&p.s[1], 1)->status, RDMAP_WC_SUCCESS);
	if (_i != G_IMM_NO_RECEIVE)
		ck_assert_uint_eq(cqe_of(&p.s[1], 9)->status,
				  RDMAP_WC_WR_FLUSH_ERR);
	pair_fini(&p);
}
END_TEST

/* Writes STag @to over every occurrence of STag @from in @w. */
/*
 * Whether two streams are the same octet for octet but where the first
 * holds @s0[k] and the second, at the same place, @s1[k]: the same STag
 * with another random key octet.  (Rewriting one stream's STags instead
 * would also rewrite any other four octets that happen to match one.)
 */
static bool same_but_stags(const uint8_t *w0, const uint8_t *w1, size_t len,
			   const uint32_t s0[2], const uint32_t s1[2])
{
	for (size_t i = 0; i < len;) {
		bool stag = false;

		for (int k = 0; k < 2 && i + 4 <= len && !stag; k++)
			stag = get_be32(w0 + i) == s0[k] &&
			       get_be32(w1 + i) == s1[k];
		if (stag) {
			i += 4;
			continue;
		}
		if (w0[i] != w1[i])
			return false;
		i++;
	}
	return true;
}

/*
 * The extensions cost nothing on the wire until used: the same work on
 * streams with and without them leaves the same octets (once the random
 * key octets of the STags are set aside).
 */
START_TEST(enabled_but_unused_extensions_leave_the_wire_unchanged)
{
	static uint8_t a[4096], b[4096];
	struct pair p[2];
	struct pair_opts o;
	uint32_t sa[2], sb[2];

	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < sizeof(a); i++)
			a[i] = (uint8_t)(i * 13 + 1);
		memset(b, 0x77, sizeof(b));
		pair_opts_default(&o);
		setup_ext(&p[k], &o, "unchanged", k ? EXT_ALL : 0,
			  k ? EXT_ALL : 0);
		sa[k] = pair_reg(&p[k], 0, a, sizeof(a), ACC_ALL);
		sb[k] = pair_reg(&p[k], 1, b, sizeof(b), ACC_ALL);
		{
			struct rdmap_sge rs = { va(b), 2000, sb[k] };
			struct rdmap_sge ss = { va(a), 1500, sa[k] };
			struct rdmap_sge cs = { va(a) + 2048, 1024, sa[k] };
			struct rdmap_send_wr s = pair_send_wr(1, RDMAP_WR_SEND,
							      &ss, 1);
			struct rdmap_send_wr w = pair_send_wr(2, RDMAP_WR_WRITE,
							      &ss, 1);
			struct rdmap_send_wr r = pair_send_wr(3, RDMAP_WR_READ,
							      &cs, 1);

			w.rkey = r.rkey = sb[k];
			w.remote_addr = r.remote_addr = va(b) + 2048;
			post_recv(&p[k], 1, 5, &rs, 1);
			post(&p[k], 0, &s);
			post(&p[k], 0, &w);
			post(&p[k], 0, &r);
		}
		pair_pump(&p[k]);
		ck_assert_uint_eq(p[k].s[0].n_cqe, 3);
	}
	for (int side = 0; side < 2; side++) {
		struct pair_side *s1 = &p[1].s[side];
		const uint32_t stags0[2] = { sa[0], sb[0] };
		const uint32_t stags1[2] = { sa[1], sb[1] };

		ck_assert_uint_eq(p[0].s[side].wire_len, s1->wire_len);
		ck_assert_msg(same_but_stags(p[0].s[side].wire, s1->wire,
					     s1->wire_len, stags0, stags1),
			      "side %d: the extensions changed the wire", side);
	}
	pair_fini(&p[0]);
	pair_fini(&p[1]);
}
END_TEST

static Suite *ext_suite(void)
{
	Suite *s = suite_create("rdmap_ext");
	TCase *tc;

	tc = tcase_create("atomics");
	tcase_add_test(tc, fetch_add_adds_and_returns_the_value_before);
	tcase_add_test(tc, compare_and_swap_writes_only_on_a_match);
	tcase_add_test(tc, masked_operations_touch_only_what_their_masks_select);
	tcase_add_test(tc, masked_fetch_add_matches_a_bitwise_adder);
	tcase_add_loop_test(tc, atomics_and_reads_share_the_ord_and_answer_in_order,
			    0, 6);
	tcase_add_test(tc, an_atomic_keeps_its_place_among_writes);
	suite_add_tcase(s, tc);

	tc = tcase_create("immediate");
	tcase_add_loop_test(tc,
		write_with_immediate_places_the_data_then_completes_a_receive,
		0, 8);
	tcase_add_test(tc, immediate_data_takes_receives_in_order_with_sends);
	suite_add_tcase(s, tc);

	tc = tcase_create("negotiation");
	tcase_add_test(tc, posting_needs_the_extension_and_a_well_formed_request);
	tcase_add_loop_test(tc,
		an_extension_opcode_on_a_stream_without_it_is_an_unknown_opcode,
		0, 4);
	tcase_add_test(tc, enabled_but_unused_extensions_leave_the_wire_unchanged);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_loop_test(tc, a_faulty_atomic_target_is_refused_with_its_terminate,
			    0, N_FAULTS);
	tcase_add_test(tc, more_atomics_than_the_ird_are_refused);
	tcase_add_loop_test(tc, a_forged_extension_message_gets_its_terminate, 0,
			    N_FORGED);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(ext_suite());
}
