// SPDX-License-Identifier: MIT
/*
 * RDMAP engine suite: two engines back to back in memory.  First the
 * ordering and flow rules one at a time, then randomized conversations
 * (thousands of operations, every payload octet and every completion
 * checked, every octet outside the targets proven untouched).
 * Error cases and their Terminates are in test_rdmap_errors.c, real siw
 * streams through the engine in test_rdmap_siw.c.
 */
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/byteorder.h"
#include "lib/error.h"
#include "rdmap_pair.h"

#define ACC_ALL (DDP_ACCESS_LOCAL_WRITE | DDP_ACCESS_REMOTE_WRITE | \
		 DDP_ACCESS_REMOTE_READ)

static struct rng rng;

static void setup(struct pair *p, struct pair_opts *o, const char *name,
		  uint64_t seed)
{
	pair_init_seeded(p, o, &rng, name, seed);
}

static uint32_t count_cqes(const struct pair_side *s, bool recv)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < s->n_cqe; i++)
		n += s->cqe[i].recv == recv;
	return n;
}

/* ---- rules, one at a time ------------------------------------------ */

START_TEST(send_write_read_move_data_and_complete)
{
	static uint8_t a[8192], b[8192], c[8192];
	struct pair_opts o;
	struct pair p;
	uint32_t sa, sb, sc;

	pair_opts_default(&o);
	setup(&p, &o, "basic", 1);
	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (uint8_t)(i * 7 + 1);
	sa = pair_reg(&p, 0, a, sizeof(a), ACC_ALL);
	sb = pair_reg(&p, 1, b, sizeof(b), ACC_ALL);
	sc = pair_reg(&p, 0, c, sizeof(c), ACC_ALL);
	{
		struct rdmap_sge rs = { (uintptr_t)b, 3000, sb };
		struct rdmap_recv_wr rw = { 77, &rs, 1 };
		struct rdmap_sge ss = { (uintptr_t)a, 2500, sa };
		struct rdmap_sge ws = { (uintptr_t)a + 100, 1000, sa };
		struct rdmap_sge cs = { (uintptr_t)c, 2000, sc };
		struct rdmap_send_wr s = pair_send_wr(1, RDMAP_WR_SEND, &ss, 1);
		struct rdmap_send_wr w = pair_send_wr(2, RDMAP_WR_WRITE, &ws, 1);
		struct rdmap_send_wr r = pair_send_wr(3, RDMAP_WR_READ, &cs, 1);

		w.rkey = sb;
		w.remote_addr = (uintptr_t)b + 5000;
		r.rkey = sb;
		r.remote_addr = (uintptr_t)b + 5000;
		ck_assert_int_eq(rdmap_post_recv(&p.s[1].qp, &rw), 0);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &s), 0);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &w), 0);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &r), 0);
	}
	pair_pump(&p);
	ck_assert_uint_eq(p.s[0].n_cqe, 3);
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(p.s[0].cqe[i].wr_id, (uint64_t)i + 1);
		ck_assert_uint_eq(p.s[0].cqe[i].status, RDMAP_WC_SUCCESS);
	}
	ck_assert_uint_eq(p.s[0].cqe[0].opcode, RDMAP_WC_SEND);
	ck_assert_uint_eq(p.s[0].cqe[1].opcode, RDMAP_WC_WRITE);
	ck_assert_uint_eq(p.s[0].cqe[2].opcode, RDMAP_WC_READ);
	ck_assert_uint_eq(p.s[0].cqe[2].byte_len, 2000);
	ck_assert_uint_eq(p.s[1].n_cqe, 1);
	ck_assert(p.s[1].cqe[0].recv);
	ck_assert_uint_eq(p.s[1].cqe[0].wr_id, 77);
	ck_assert_uint_eq(p.s[1].cqe[0].byte_len, 2500);
	ck_assert_mem_eq(b, a, 2500);
	ck_assert_mem_eq(b + 5000, a + 100, 1000);
	ck_assert_mem_eq(c, b + 5000, 2000);
	pair_fini(&p);
}
END_TEST

/*
 * With markers, no FPDU carrying four octets of payload or more ends where
 * a marker falls (Wireshark would take that marker for the FPDU's own).
 * Sends of every length from 0 to 1200 cross every alignment.
 */
START_TEST(no_fpdu_ends_on_a_marker_position)
{
	static uint8_t a[1200], b[1200];
	struct pair_opts o;
	struct pair p;
	uint32_t sa, sb;
	size_t off = 0, fpdus = 0, trimmed = 0;
	const uint8_t *w;

	pair_opts_default(&o);
	o.markers = true;
	o.emss = 536;
	o.record_wire = true;
	setup(&p, &o, "marker_ends", 1);
	sa = pair_reg(&p, 0, a, sizeof(a), ACC_ALL);
	sb = pair_reg(&p, 1, b, sizeof(b), ACC_ALL);
	for (uint32_t len = 0; len <= sizeof(a); len++) {
		struct rdmap_sge rs = { (uintptr_t)b, sizeof(b), sb };
		struct rdmap_sge ss = { (uintptr_t)a, len, sa };
		struct rdmap_send_wr s = pair_send_wr(len, RDMAP_WR_SEND, &ss, 1);

		ck_assert_int_eq(rdmap_post_recv(&p.s[1].qp,
			&(struct rdmap_recv_wr){ len, &rs, 1 }), 0);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &s), 0);
		pair_pump(&p);
	}
	ck_assert_uint_eq(p.s[1].n_cqe, sizeof(a) + 1);
	w = p.s[0].wire;
	while (off < p.s[0].wire_len) {
		size_t at = off + (off % MPA_MARKER_SPACING ? 0 : MPA_MARKER_LEN);
		uint16_t ulen = (uint16_t)(w[at] << 8 | w[at + 1]);
		size_t end = off + mpa_fpdu_wire_len(off, ulen, true);

		ck_assert_msg(end % MPA_MARKER_SPACING ||
				      ulen < DDP_UNTAGGED_HDR_LEN + MPA_MARKER_LEN,
			      "FPDU at %zu (ULPDU %u) ends on a marker", off, ulen);
		trimmed += (end + MPA_MARKER_LEN) % MPA_MARKER_SPACING == 0;
		fpdus++;
		off = end;
	}
	ck_assert_uint_eq(off, p.s[0].wire_len);
	/* the rule had something to do */
	ck_assert_uint_gt(trimmed, 0);
	ck_assert_uint_gt(fpdus, sizeof(a));
	pair_fini(&p);
}
END_TEST

START_TEST(send_completes_after_an_earlier_outstanding_read)
{
	static uint8_t a[4096], b[4096];
	struct pair_opts o;
	struct pair p;
	uint32_t sa, sb;

	pair_opts_default(&o);
	setup(&p, &o, "order", 2);
	sa = pair_reg(&p, 0, a, sizeof(a), ACC_ALL);
	sb = pair_reg(&p, 1, b, sizeof(b), ACC_ALL);
	{
		struct rdmap_sge rs = { (uintptr_t)a, 1000, sa };
		struct rdmap_sge ss = { (uintptr_t)a + 2000, 10, sa };
		struct rdmap_sge qs = { (uintptr_t)b, 100, sb };
		struct rdmap_recv_wr q = { 9, &qs, 1 };
		struct rdmap_send_wr r = pair_send_wr(1, RDMAP_WR_READ, &rs, 1);
		struct rdmap_send_wr s = pair_send_wr(2, RDMAP_WR_SEND, &ss, 1);

		r.rkey = sb;
		r.remote_addr = (uintptr_t)b + 1000;
		ck_assert_int_eq(rdmap_post_recv(&p.s[1].qp, &q), 0);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &r), 0);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &s), 0);
	}
	/* the Read Request and the Send both leave; the Send is handed down */
	while (pair_pump_one(&p, 0, SIZE_MAX))
		;
	ck_assert_uint_eq(p.s[1].n_cqe, 1);
	ck_assert_uint_eq(p.s[0].n_cqe, 0); /* but waits behind the Read */
	pair_pump(&p);
	ck_assert_uint_eq(p.s[0].n_cqe, 2);
	ck_assert_uint_eq(p.s[0].cqe[0].wr_id, 1);
	ck_assert_uint_eq(p.s[0].cqe[1].wr_id, 2);
	pair_fini(&p);
}
END_TEST

/*
 * The queues' positions are free-running 32-bit counters.  Rings of any
 * depth (here 3, 5 and an ORD/IRD of 3) keep every request in its place
 * when the counters wrap: each round fills the send queue with a Send, a
 * Read and a Write and checks every octet and completion.
 */
START_TEST(queues_keep_their_order_when_the_counters_wrap)
{
	enum { ROUNDS = 12, LEN = 64 };
	static uint8_t a[4096], b[4096];
	struct pair_opts o;
	struct pair p;
	uint32_t sa, sb, near_end = UINT32_MAX - 7;

	pair_opts_default(&o);
	o.sq_depth = 3;
	o.rq_depth = 5;
	o.ord = o.ird = 3;
	setup(&p, &o, "wrap", 4);
	sa = pair_reg(&p, 0, a, sizeof(a), ACC_ALL);
	sb = pair_reg(&p, 1, b, sizeof(b), ACC_ALL);
	for (int i = 0; i < 2; i++) {
		struct rdmap_qp *q = &p.s[i].qp;

		q->sq_tail = q->sq_next = q->sq_head = near_end;
		q->rq_tail = q->ord_head = q->ird_head = near_end;
	}
	for (uint32_t r = 0; r < ROUNDS; r++) {
		uint8_t *send_src = a, *read_dst = a + 1024;
		uint8_t *write_src = a + 2048, *recv_dst = b;
		uint8_t *read_src = b + 1024, *write_dst = b + 2048;
		struct rdmap_sge ss = { (uintptr_t)send_src, LEN, sa };
		struct rdmap_sge rs = { (uintptr_t)read_dst, LEN, sa };
		struct rdmap_sge ws = { (uintptr_t)write_src, LEN, sa };
		struct rdmap_sge qs = { (uintptr_t)recv_dst, LEN, sb };
		struct rdmap_recv_wr q = { 100 + r, &qs, 1 };
		struct rdmap_send_wr wr[3] = {
			pair_send_wr(3 * r, RDMAP_WR_SEND, &ss, 1),
			pair_send_wr(3 * r + 1, RDMAP_WR_READ, &rs, 1),
			pair_send_wr(3 * r + 2, RDMAP_WR_WRITE, &ws, 1),
		};
		uint32_t c0 = p.s[0].n_cqe, c1 = p.s[1].n_cqe;

		wr[1].rkey = wr[2].rkey = sb;
		wr[1].remote_addr = (uintptr_t)read_src;
		wr[2].remote_addr = (uintptr_t)write_dst;
		memset(send_src, (int)(r + 1), LEN);
		memset(read_src, (int)(r + 50), LEN);
		memset(write_src, (int)(r + 100), LEN);
		ck_assert_int_eq(rdmap_post_recv(&p.s[1].qp, &q), 0);
		for (int k = 0; k < 3; k++)
			ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, wr + k),
					 0);
		pair_pump(&p);
		ck_assert_uint_eq(p.s[0].n_cqe, c0 + 3);
		ck_assert_uint_eq(p.s[1].n_cqe, c1 + 1);
		for (uint32_t k = 0; k < 3; k++) {
			ck_assert_int_eq(p.s[0].cqe[c0 + k].status,
					 RDMAP_WC_SUCCESS);
			ck_assert_uint_eq(p.s[0].cqe[c0 + k].wr_id, 3 * r + k);
		}
		ck_assert_uint_eq(p.s[1].cqe[c1].wr_id, 100 + r);
		ck_assert_mem_eq(recv_dst, send_src, LEN);
		ck_assert_mem_eq(read_dst, read_src, LEN);
		ck_assert_mem_eq(write_dst, write_src, LEN);
	}
	ck_assert_uint_lt(p.s[0].qp.sq_head, near_end); /* it did wrap */
	pair_fini(&p);
}
END_TEST

/*
 * A queue deeper than RDMAP_MAX_QUEUE is refused (its ring could not be
 * a power of two of entries); the deepest one allowed is taken.
 */
START_TEST(queues_deeper_than_the_engine_takes_are_refused)
{
	static const struct {
		uint32_t sq, rq, rc;
	} c[] = {
		{ RDMAP_MAX_QUEUE + 1, 4, (uint32_t)-EINVAL },
		{ 4, RDMAP_MAX_QUEUE + 1, (uint32_t)-EINVAL },
		{ UINT32_MAX, 4, (uint32_t)-EINVAL },
		{ 4, UINT32_MAX, (uint32_t)-EINVAL },
		{ 3, 5, 0 },
	};
	struct ddp_stag_table stags;
	struct rdmap_srq srq;
	struct pair_side s;

	ck_assert_int_eq(ddp_stag_table_init(&stags, 4), 0);
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		memset(&s, 0, sizeof(s));
		ck_assert_int_eq(rdmap_qp_init(&s.qp, &(struct rdmap_qp_attr){
			.sq_depth = c[i].sq, .rq_depth = c[i].rq,
			.max_sge = 1, .pd = PAIR_PD, .stags = &stags },
			&pair_ops, &s), (int)c[i].rc);
		if (!c[i].rc) {
			ck_assert_uint_eq(s.qp.sq_mask, 3);
			ck_assert_uint_eq(s.qp.rq_mask, 7);
			rdmap_qp_fini(&s.qp);
		}
	}
	ck_assert_int_eq(rdmap_srq_init(&srq, &stags, PAIR_PD,
					RDMAP_MAX_QUEUE + 1, 1), -EINVAL);
	ck_assert_int_eq(rdmap_srq_init(&srq, &stags, PAIR_PD, UINT32_MAX, 1),
			 -EINVAL);
	ck_assert_int_eq(rdmap_srq_init(&srq, &stags, PAIR_PD, 6, 1), 0);
	ck_assert_uint_eq(srq.mask, 7);
	rdmap_srq_fini(&srq);
	ddp_stag_table_destroy(&stags);
}
END_TEST

START_TEST(reads_in_flight_never_exceed_ord)
{
	static uint8_t a[4096], b[4096];
	struct pair_opts o;
	struct pair p;
	uint32_t sa, sb;

	pair_opts_default(&o);
	o.ord = 2;
	o.ird = 2;
	setup(&p, &o, "ord", 3);
	sa = pair_reg(&p, 0, a, sizeof(a), ACC_ALL);
	sb = pair_reg(&p, 1, b, sizeof(b), ACC_ALL);
	for (int i = 0; i < 5; i++) {
		struct rdmap_sge rs = { (uintptr_t)a + 100 * i, 50, sa };
		struct rdmap_send_wr r = pair_send_wr((uint64_t)i, RDMAP_WR_READ,
						 &rs, 1);

		r.rkey = sb;
		r.remote_addr = (uintptr_t)b;
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &r), 0);
	}
	while (pair_pump_one(&p, 0, SIZE_MAX))
		;
	/* the peer holds two Requests; the other three wait for credit */
	ck_assert_uint_eq(p.s[1].qp.ird_count, 2);
	ck_assert_uint_eq(p.s[0].qp.ord_count, 2);
	pair_pump(&p);
	ck_assert_uint_eq(p.s[0].n_cqe, 5);
	for (uint32_t i = 0; i < 5; i++)
		ck_assert_uint_eq(p.s[0].cqe[i].wr_id, i);
	pair_fini(&p);
}
END_TEST

/*
 * Registers @a on the initiator (side 0) and @b on the responder, posts a
 * receive into @a and, on the responder, a 10-octet Send from @b.
 */
static void responder_sends_to_initiator(struct pair *p, uint8_t *a,
					 uint32_t *sa, uint8_t *b, uint32_t *sb)
{
	struct rdmap_sge rs = { (uintptr_t)a, 100, 0 };
	struct rdmap_sge ss = { (uintptr_t)b, 10, 0 };
	struct rdmap_recv_wr rw = { 5, &rs, 1 };
	struct rdmap_send_wr s = pair_send_wr(6, RDMAP_WR_SEND, &ss, 1);

	*sa = rs.lkey = pair_reg(p, 0, a, 4096, ACC_ALL);
	*sb = ss.lkey = pair_reg(p, 1, b, 4096, ACC_ALL);
	ck_assert_int_eq(rdmap_post_recv(&p->s[0].qp, &rw), 0);
	ck_assert_int_eq(rdmap_post_send(&p->s[1].qp, &s), 0);
}

START_TEST(responder_sends_nothing_before_the_initiators_first_fpdu)
{
	static uint8_t a[4096], b[4096];
	struct pair_opts o;
	struct pair p;
	uint32_t sa, sb;

	pair_opts_default(&o);
	setup(&p, &o, "gate", 4);
	responder_sends_to_initiator(&p, a, &sa, b, &sb);
	ck_assert(!rdmap_tx_pending(&p.s[1].qp));
	ck_assert_uint_eq(pair_pump_one(&p, 1, SIZE_MAX), 0);
	{
		struct rdmap_sge ws = { (uintptr_t)a + 1000, 0, sa };
		struct rdmap_send_wr w = pair_send_wr(7, RDMAP_WR_WRITE, &ws, 1);

		w.rkey = sb;
		w.remote_addr = (uintptr_t)b;
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &w), 0);
	}
	pair_pump_one(&p, 0, SIZE_MAX);
	ck_assert_uint_eq(p.s[1].n_ev, 1);
	ck_assert_uint_eq(p.s[1].ev[0].type, RDMAP_EV_ESTABLISHED);
	ck_assert(rdmap_tx_pending(&p.s[1].qp));
	pair_pump(&p);
	ck_assert_uint_eq(count_cqes(&p.s[0], true), 1);
	ck_assert_uint_eq(count_cqes(&p.s[1], false), 1);
	pair_fini(&p);
}
END_TEST

/*
 * With responder_first (perftest's write lat server writes first; siw lets
 * it) the responder's Send goes out at once and the initiator, which has
 * sent nothing yet, takes it.
 */
START_TEST(responder_first_sends_before_the_initiator_and_is_taken)
{
	static uint8_t a[4096], b[4096];
	struct pair_opts o;
	struct pair p;
	uint32_t sa, sb;

	pair_opts_default(&o);
	o.responder_first = true;
	setup(&p, &o, "first", 5);
	responder_sends_to_initiator(&p, a, &sa, b, &sb);
	ck_assert(rdmap_tx_pending(&p.s[1].qp));
	pair_pump(&p);
	ck_assert_int_eq(p.s[0].feed_err, 0);
	ck_assert_uint_eq(p.s[0].qp.state, RDMAP_QP_RTS);
	ck_assert_uint_eq(count_cqes(&p.s[0], true), 1);
	ck_assert_uint_eq(count_cqes(&p.s[1], false), 1);
	pair_fini(&p);
}
END_TEST

/*
 * RFC 6581: the initiator's first FPDU is the agreed zero-length RTR (a
 * Send, a Write with a non-zero STag, or a Read), it completes nothing and
 * consumes no receive, and it opens the responder's side.  _i: the type.
 */
START_TEST(rtr_opens_the_responder_and_consumes_nothing)
{
	static const uint8_t types[] = { MPA_RTR_SEND, MPA_RTR_WRITE,
					 MPA_RTR_READ };
	static uint8_t a[4096], b[4096];
	struct pair_opts o;
	struct pair p;
	struct ddp_hdr h;
	uint8_t rtr = types[_i];
	uint32_t sa, sb;

	pair_opts_default(&o);
	o.rtr = rtr;
	o.record_wire = true;
	setup(&p, &o, "rtr", 5 + (uint64_t)_i);
	sa = pair_reg(&p, 0, a, sizeof(a), ACC_ALL);
	sb = pair_reg(&p, 1, b, sizeof(b), ACC_ALL);
	{
		struct rdmap_sge rs = { (uintptr_t)b, 100, sb };
		struct rdmap_recv_wr rw = { 11, &rs, 1 };
		struct rdmap_sge ss = { (uintptr_t)b + 200, 40, sb };
		struct rdmap_send_wr s = pair_send_wr(12, RDMAP_WR_WRITE, &ss, 1);

		ck_assert_int_eq(rdmap_post_recv(&p.s[1].qp, &rw), 0);
		s.rkey = sa;
		s.remote_addr = (uintptr_t)a;
		ck_assert_int_eq(rdmap_post_send(&p.s[1].qp, &s), 0);
	}
	ck_assert_uint_eq(pair_pump_one(&p, 1, SIZE_MAX), 0);
	pair_pump(&p);
	ck_assert_uint_eq(p.s[0].n_cqe, 0);
	ck_assert_uint_eq(p.s[1].n_cqe, 1); /* its Write, not the receive */
	ck_assert_uint_eq(p.s[1].cqe[0].wr_id, 12);
	ck_assert_mem_eq(a, b + 200, 40);
	ck_assert_uint_eq(p.s[1].qp.rq_count, 1);
	/* the first FPDU on the wire: length field, then the DDP header */
	ck_assert_int_eq(ddp_hdr_decode(p.s[0].wire + 2, p.s[0].wire_len - 2,
					&h) > 0, 1);
	switch (rtr) {
	case MPA_RTR_SEND:
		ck_assert(!h.tagged && h.qn == RDMAP_QN_SEND && h.msn == 1);
		ck_assert_uint_eq(h.rsvdulp & 0x0f, RDMAP_OP_SEND);
		break;
	case MPA_RTR_WRITE:
		ck_assert(h.tagged && h.stag != 0);
		ck_assert_uint_eq(h.rsvdulp & 0x0f, RDMAP_OP_WRITE);
		break;
	default:
		ck_assert(!h.tagged && h.qn == RDMAP_QN_READ_REQ);
		ck_assert_uint_eq(h.rsvdulp & 0x0f, RDMAP_OP_READ_REQ);
		break;
	}
	pair_fini(&p);
}
END_TEST

START_TEST(send_with_invalidate_and_solicited_event_are_reported)
{
	static uint8_t a[4096], b[4096], victim[64];
	struct pair_opts o;
	struct pair p;
	uint32_t sa, sb, sv;
	uint8_t *where;

	pair_opts_default(&o);
	setup(&p, &o, "inv", 9);
	sa = pair_reg(&p, 0, a, sizeof(a), ACC_ALL);
	sb = pair_reg(&p, 1, b, sizeof(b), ACC_ALL);
	sv = pair_reg(&p, 1, victim, sizeof(victim), ACC_ALL);
	{
		struct rdmap_sge rs = { (uintptr_t)b, 100, sb };
		struct rdmap_recv_wr r1 = { 1, &rs, 1 }, r2 = { 2, &rs, 1 };
		struct rdmap_sge ss = { (uintptr_t)a, 10, sa };
		struct rdmap_send_wr s1 = pair_send_wr(3, RDMAP_WR_SEND_INV, &ss, 1);
		struct rdmap_send_wr s2 = pair_send_wr(4, RDMAP_WR_SEND, &ss, 1);

		s1.inv_stag = sv;
		s2.flags |= RDMAP_WR_SOLICITED;
		ck_assert_int_eq(rdmap_post_recv(&p.s[1].qp, &r1), 0);
		ck_assert_int_eq(rdmap_post_recv(&p.s[1].qp, &r2), 0);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &s1), 0);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &s2), 0);
	}
	pair_pump(&p);
	ck_assert_uint_eq(p.s[1].n_cqe, 2);
	ck_assert_uint_eq(p.s[1].cqe[0].flags, RDMAP_CQE_INVALIDATED);
	ck_assert_uint_eq(p.s[1].cqe[0].inv_stag, sv);
	ck_assert_uint_eq(p.s[1].cqe[1].flags, RDMAP_CQE_SOLICITED);
	ck_assert_int_eq(ddp_mr_check(&p.s[1].stags, sv, 1, 0,
				      (uintptr_t)victim, 1, &where),
			 DDP_MR_BAD_STAG);
	pair_fini(&p);
}
END_TEST

START_TEST(unsignaled_work_completes_silently_unless_it_fails)
{
	static uint8_t a[4096], b[4096];
	struct pair_opts o;
	struct pair p;
	uint32_t sa, sb;

	pair_opts_default(&o);
	setup(&p, &o, "unsignaled", 10);
	sa = pair_reg(&p, 0, a, sizeof(a), ACC_ALL);
	sb = pair_reg(&p, 1, b, sizeof(b), ACC_ALL);
	for (int i = 0; i < 4; i++) {
		struct rdmap_sge ws = { (uintptr_t)a, 64, sa };
		struct rdmap_send_wr w = pair_send_wr((uint64_t)i, RDMAP_WR_WRITE,
						 &ws, 1);

		w.flags = i == 3 ? RDMAP_WR_SIGNALED : 0;
		w.rkey = sb;
		w.remote_addr = (uintptr_t)b;
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &w), 0);
	}
	pair_pump(&p);
	ck_assert_uint_eq(p.s[0].n_cqe, 1);
	ck_assert_uint_eq(p.s[0].cqe[0].wr_id, 3);
	/* on a stream in error, unsignaled work is flushed with a completion */
	rdmap_qp_set_error(&p.s[0].qp, -IW_ECLOSED);
	{
		struct rdmap_sge ws = { (uintptr_t)a, 64, sa };
		struct rdmap_send_wr w = pair_send_wr(9, RDMAP_WR_WRITE, &ws, 1);

		w.flags = 0;
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &w), 0);
	}
	ck_assert_uint_eq(p.s[0].n_cqe, 2);
	ck_assert_uint_eq(p.s[0].cqe[1].wr_id, 9);
	ck_assert_uint_eq(p.s[0].cqe[1].status, RDMAP_WC_WR_FLUSH_ERR);
	pair_fini(&p);
}
END_TEST

/*
 * A peer that stopped acknowledging (the owner ends the stream with
 * -ETIMEDOUT): the send queue's work completes retry-exceeded, as
 * InfiniBand reports it, and posted receives are flushed.
 */
START_TEST(a_silent_peer_completes_sends_retry_exceeded_and_flushes_receives)
{
	static uint8_t a[4096], b[4096];
	struct pair_opts o;
	struct pair p;
	uint32_t sa, sb;

	pair_opts_default(&o);
	setup(&p, &o, "silent", 1);
	sa = pair_reg(&p, 0, a, sizeof(a), ACC_ALL);
	sb = pair_reg(&p, 1, b, sizeof(b), ACC_ALL);
	{
		struct rdmap_sge rs = { (uintptr_t)a, 512, sa };
		struct rdmap_recv_wr rw = { 7, &rs, 1 };
		struct rdmap_sge ss = { (uintptr_t)a + 1024, 512, sa };
		struct rdmap_sge cs = { (uintptr_t)a + 2048, 512, sa };
		struct rdmap_send_wr s = pair_send_wr(1, RDMAP_WR_SEND, &ss, 1);
		struct rdmap_send_wr r = pair_send_wr(2, RDMAP_WR_READ, &cs, 1);

		r.rkey = sb;
		r.remote_addr = (uintptr_t)b;
		ck_assert_int_eq(rdmap_post_recv(&p.s[0].qp, &rw), 0);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &s), 0);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &r), 0);
	}
	/* nothing went to the peer: all three are outstanding */
	rdmap_qp_set_error(&p.s[0].qp, -ETIMEDOUT);
	ck_assert_uint_eq(p.s[0].n_cqe, 3);
	for (unsigned int i = 0; i < 3; i++) {
		const struct rdmap_cqe *c = &p.s[0].cqe[i];

		ck_assert_int_eq(c->err, -ETIMEDOUT);
		ck_assert_uint_eq(c->status, c->recv ? RDMAP_WC_WR_FLUSH_ERR
						     : RDMAP_WC_RETRY_EXC_ERR);
		ck_assert_uint_eq(c->wr_id, c->recv ? 7 : i + 1);
	}
	pair_fini(&p);
}
END_TEST

/*
 * Hands down everything @qp has to send, as one write would that takes
 * it all (copied to @wire when given); returns the octet count.
 */
static size_t hand_down_all(struct rdmap_qp *qp, uint8_t *wire, size_t cap)
{
	struct iovec iov[512];
	int n = rdmap_tx_gather(qp, iov, 512, cap);
	size_t len = 0;

	for (int i = 0; i < n; i++) {
		if (wire)
			memcpy(wire + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	rdmap_tx_advance(qp, len);
	return len;
}

/*
 * The Writes one write hands down complete in runs of RDMAP_CQE_RUN per
 * complete() call (the verbs layer pushes a run to its CQ in one step),
 * in order, the unsignaled one left out.
 */
START_TEST(send_completions_come_up_in_runs)
{
	static uint8_t a[64], b[64];
	struct pair_opts o;
	struct pair p;
	uint32_t sa, sb, k = 0;

	pair_opts_default(&o);
	setup(&p, &o, "runs", 11);
	sa = pair_reg(&p, 0, a, sizeof(a), ACC_ALL);
	sb = pair_reg(&p, 1, b, sizeof(b), ACC_ALL);
	pair_pump(&p);
	for (int i = 0; i < 40; i++) {
		struct rdmap_sge ws = { (uintptr_t)a, sizeof(a), sa };
		struct rdmap_send_wr w =
			pair_send_wr((uint64_t)i, RDMAP_WR_WRITE, &ws, 1);

		w.flags = i == 7 ? 0 : RDMAP_WR_SIGNALED;
		w.rkey = sb;
		w.remote_addr = (uintptr_t)b;
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &w), 0);
	}
	ck_assert_uint_eq(p.s[0].n_cqe, 0);
	p.s[0].n_complete_calls = 0;
	ck_assert_uint_gt(hand_down_all(&p.s[0].qp, NULL, SIZE_MAX), 0);
	ck_assert_uint_eq(p.s[0].n_cqe, 39);
	ck_assert_uint_eq(p.s[0].n_complete_calls,
			  (39 + RDMAP_CQE_RUN - 1) / RDMAP_CQE_RUN);
	for (uint64_t i = 0; i < 40; i++) {
		if (i == 7)
			continue;
		ck_assert_uint_eq(p.s[0].cqe[k].wr_id, i);
		ck_assert_uint_eq(p.s[0].cqe[k].status, RDMAP_WC_SUCCESS);
		k++;
	}
	pair_fini(&p);
}
END_TEST

/*
 * A pair whose side 0 has @n Writes of @len octets queued, from @a to @b,
 * each signaled but the @unsignaled-th (-1: none).
 */
static void queue_small_writes(struct pair *p, const char *name,
			       uint64_t seed, uint8_t *a, uint8_t *b, int n,
			       uint32_t len, int unsignaled)
{
	struct pair_opts o;
	uint32_t sa, sb;

	pair_opts_default(&o);
	setup(p, &o, name, seed);
	sa = pair_reg(p, 0, a, (size_t)n * len, ACC_ALL);
	sb = pair_reg(p, 1, b, (size_t)n * len, ACC_ALL);
	pair_pump(p);
	rng_fill(&rng, a, (size_t)n * len);
	for (int i = 0; i < n; i++) {
		struct rdmap_sge ws = { (uintptr_t)a + len * i, len, sa };
		struct rdmap_send_wr w =
			pair_send_wr((uint64_t)i, RDMAP_WR_WRITE, &ws, 1);

		w.flags = i == unsignaled ? 0 : RDMAP_WR_SIGNALED;
		w.rkey = sb;
		w.remote_addr = (uintptr_t)b + len * i;
		ck_assert_int_eq(rdmap_post_send(&p->s[0].qp, &w), 0);
	}
}

/*
 * Small Writes staged end to end are handed down as one run: none is
 * complete until the run's last octet has gone, then all are, in order
 * (the unsignaled one left out).  The peer takes the run octet by octet.
 */
START_TEST(small_writes_staged_together_complete_when_their_run_has_gone)
{
	enum { N = 20, LEN = 64 };
	static uint8_t a[N * LEN], b[N * LEN], wire[8192];
	struct pair p;
	struct iovec iov[8];
	uint32_t k = 0;
	size_t len;
	int n;

	queue_small_writes(&p, "staged-run", 13, a, b, N, LEN, 7);
	n = rdmap_tx_gather(&p.s[0].qp, iov, 8, SIZE_MAX);
	ck_assert_int_eq(n, 1);
	len = iov[0].iov_len;
	ck_assert_uint_eq(len, N * mpa_fpdu_wire_len(0, 14 + LEN, false));
	memcpy(wire, iov[0].iov_base, len);
	for (size_t i = 0; i < len; i++) {
		rdmap_tx_advance(&p.s[0].qp, 1);
		require(p.s[0].n_cqe == (i + 1 == len ? N - 1 : 0),
			"%u completions after %zu of %zu octets",
			p.s[0].n_cqe, i + 1, len);
		ck_assert_int_eq(rdmap_rx_feed(&p.s[1].qp, wire + i, 1), 0);
	}
	for (uint64_t i = 0; i < N; i++) {
		if (i == 7)
			continue;
		ck_assert_uint_eq(p.s[0].cqe[k].wr_id, i);
		ck_assert_uint_eq(p.s[0].cqe[k].status, RDMAP_WC_SUCCESS);
		k++;
	}
	ck_assert_mem_eq(b, a, sizeof(a));
	ck_assert(!rdmap_tx_pending(&p.s[0].qp));
	pair_fini(&p);
}
END_TEST

/*
 * A Terminate due while a run is partly written follows the FPDU the
 * write stopped in, as it follows any FPDU partly on the wire: the rest
 * of the run is not sent.  The Writes whose FPDUs went whole complete;
 * the one cut and those after it are flushed.  The peer places the
 * first four and then takes the Terminate.
 */
START_TEST(terminate_cuts_a_run_after_the_fpdu_partly_written)
{
	enum { N = 10, LEN = 64, CUT = 3 };
	static uint8_t a[N * LEN], b[N * LEN], c[16], wire[8192], rest[256];
	struct pair p;
	struct iovec iov[8];
	struct rdmap_sge bad;
	struct rdmap_send_wr w;
	size_t fpdu = mpa_fpdu_wire_len(0, 14 + LEN, false), at, len = 0;
	int n;

	queue_small_writes(&p, "terminate-run", 14, a, b, N, LEN, -1);
	bad = (struct rdmap_sge){ (uintptr_t)c, sizeof(c),
				  pair_reg(&p, 1, c, sizeof(c), ACC_ALL) };
	n = rdmap_tx_gather(&p.s[0].qp, iov, 8, SIZE_MAX);
	ck_assert_int_eq(n, 1);
	ck_assert_uint_eq(iov[0].iov_len, N * fpdu);
	memcpy(wire, iov[0].iov_base, iov[0].iov_len);
	/* the write stops five octets into the fourth FPDU */
	at = CUT * fpdu + 5;
	rdmap_tx_advance(&p.s[0].qp, at);
	ck_assert_uint_eq(p.s[0].n_cqe, 0);
	ck_assert_int_eq(rdmap_rx_feed(&p.s[1].qp, wire, at), 0);

	/* the peer writes through an STag side 0 never had: a Terminate */
	w = pair_send_wr(99, RDMAP_WR_WRITE, &bad, 1);
	w.rkey = 0x00dead00;
	ck_assert_int_eq(rdmap_post_send(&p.s[1].qp, &w), 0);
	n = rdmap_tx_gather(&p.s[1].qp, iov, 8, SIZE_MAX);
	ck_assert_int_eq(n, 1);
	rdmap_rx_feed(&p.s[0].qp, iov[0].iov_base, iov[0].iov_len);
	rdmap_tx_advance(&p.s[1].qp, iov[0].iov_len);
	ck_assert_uint_eq(p.s[0].qp.state, RDMAP_QP_TERMINATING);
	ck_assert_uint_eq(p.s[0].n_cqe, N);
	for (uint32_t i = 0; i < N; i++) {
		ck_assert_uint_eq(p.s[0].cqe[i].wr_id, i);
		ck_assert_uint_eq(p.s[0].cqe[i].status,
				  i < CUT ? RDMAP_WC_SUCCESS
					  : RDMAP_WC_WR_FLUSH_ERR);
	}

	/* what is left: the cut FPDU's rest, then the Terminate */
	n = rdmap_tx_gather(&p.s[0].qp, iov, 8, SIZE_MAX);
	ck_assert_int_gt(n, 0);
	for (int i = 0; i < n; i++) {
		ck_assert_uint_le(len + iov[i].iov_len, sizeof(rest));
		memcpy(rest + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	ck_assert_uint_gt(len, fpdu - 5);
	ck_assert_mem_eq(rest, wire + at, fpdu - 5);
	ck_assert_uint_eq(rest[fpdu - 5 + MPA_HDR_LEN + DDP_OFF_CTRL + 1] & RDMAP_CTRL_OPCODE,
			  RDMAP_OP_TERMINATE);
	ck_assert_uint_eq(len, fpdu - 5 +
		mpa_fpdu_wire_len(0, get_be16(rest + fpdu - 5), false));
	rdmap_tx_advance(&p.s[0].qp, len);
	rdmap_rx_feed(&p.s[1].qp, rest, len);
	ck_assert_mem_eq(b, a, (CUT + 1) * LEN);
	for (size_t i = (CUT + 1) * LEN; i < sizeof(b); i++)
		require(b[i] == 0, "octet %zu of the sink written", i);
	pair_fini(&p);
}
END_TEST

/*
 * The receives one read of the stream completes come up in runs too,
 * in order, and the next read's after them.
 */
START_TEST(receive_completions_of_one_read_come_up_in_runs)
{
	static uint8_t a[64], b[40 * 64], wire[8192];
	struct pair_opts o;
	struct pair p;
	uint32_t sa, sb;
	size_t len;

	pair_opts_default(&o);
	setup(&p, &o, "recv-runs", 12);
	sa = pair_reg(&p, 0, a, sizeof(a), ACC_ALL);
	sb = pair_reg(&p, 1, b, sizeof(b), ACC_ALL);
	pair_pump(&p);
	for (int i = 0; i < 40; i++) {
		struct rdmap_sge rs = { (uintptr_t)b + 64 * i, 64, sb };
		struct rdmap_recv_wr rw = { (uint64_t)i, &rs, 1 };
		struct rdmap_sge ss = { (uintptr_t)a, sizeof(a), sa };
		struct rdmap_send_wr s =
			pair_send_wr((uint64_t)i, RDMAP_WR_SEND, &ss, 1);

		s.flags = 0;
		ck_assert_int_eq(rdmap_post_recv(&p.s[1].qp, &rw), 0);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &s), 0);
	}
	len = hand_down_all(&p.s[0].qp, wire, sizeof(wire));
	p.s[1].n_complete_calls = 0;
	/* all but the last Send in one read, then the last */
	ck_assert_int_eq(rdmap_rx_feed(&p.s[1].qp, wire, len - 1), 0);
	ck_assert_uint_eq(p.s[1].n_cqe, 39);
	ck_assert_uint_eq(p.s[1].n_complete_calls,
			  (39 + RDMAP_CQE_RUN - 1) / RDMAP_CQE_RUN);
	ck_assert_int_eq(rdmap_rx_feed(&p.s[1].qp, wire + len - 1, 1), 0);
	ck_assert_uint_eq(p.s[1].n_cqe, 40);
	for (uint32_t i = 0; i < 40; i++) {
		ck_assert(p.s[1].cqe[i].recv);
		ck_assert_uint_eq(p.s[1].cqe[i].wr_id, i);
		ck_assert_uint_eq(p.s[1].cqe[i].byte_len, 64);
	}
	ck_assert_uint_eq(p.s[0].n_cqe, 0);
	pair_fini(&p);
}
END_TEST

START_TEST(inline_data_is_copied_when_posted)
{
	static uint8_t a[256], b[256];
	struct pair_opts o;
	struct pair p;
	uint32_t sb;

	pair_opts_default(&o);
	setup(&p, &o, "inline", 11);
	sb = pair_reg(&p, 1, b, sizeof(b), ACC_ALL);
	memset(a, 0x3c, sizeof(a));
	{
		/* no lkey needed: the data is taken at once */
		struct rdmap_sge ws[2] = { { (uintptr_t)a, 60, 0 },
					   { (uintptr_t)a + 60, 40, 0 } };
		struct rdmap_send_wr w = pair_send_wr(1, RDMAP_WR_WRITE, ws, 2);

		w.flags |= RDMAP_WR_INLINE;
		w.rkey = sb;
		w.remote_addr = (uintptr_t)b;
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &w), 0);
		ws[1].length = 100; /* 160 octets: over max_inline */
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &w),
				 -IW_ELOCAL_LENGTH);
	}
	memset(a, 0, sizeof(a));
	pair_pump(&p);
	for (int i = 0; i < 100; i++)
		ck_assert_uint_eq(b[i], 0x3c);
	ck_assert_uint_eq(b[100], 0);
	pair_fini(&p);
}
END_TEST

START_TEST(post_checks_its_arguments)
{
	static uint8_t a[256];
	struct pair_opts o;
	struct pair p;
	uint32_t sa;
	struct rdmap_sge sge[8];

	pair_opts_default(&o);
	o.sq_depth = 2;
	o.rq_depth = 1;
	setup(&p, &o, "post", 12);
	sa = pair_reg(&p, 0, a, sizeof(a), ACC_ALL);
	for (int i = 0; i < 8; i++)
		sge[i] = (struct rdmap_sge){ (uintptr_t)a, 8, sa };
	{
		struct rdmap_send_wr w = pair_send_wr(1, RDMAP_WR_SEND, sge, 7);
		struct rdmap_recv_wr r = { 1, sge, 1 };

		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &w), -EINVAL);
		w = pair_send_wr(1, RDMAP_WR_READ, sge, 2);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &w), -EINVAL);
		w = pair_send_wr(1, 9, sge, 1);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &w), -EINVAL);
		w = pair_send_wr(1, RDMAP_WR_SEND, sge, 1);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &w), 0);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &w), 0);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &w), -ENOMEM);
		ck_assert_int_eq(rdmap_post_recv(&p.s[0].qp, &r), 0);
		ck_assert_int_eq(rdmap_post_recv(&p.s[0].qp, &r), -ENOMEM);
	}
	pair_fini(&p);
}
END_TEST

/*
 * Walks the FPDUs side @s wrote; returns how many there were and, in
 * *@longest, the longest ULPDU among them.
 */
static size_t wire_ulpdus(const struct pair_side *s, bool markers,
			  size_t *longest)
{
	size_t off = 0, n = 0;

	*longest = 0;
	while (off < s->wire_len) {
		size_t at = off + (markers && off % MPA_MARKER_SPACING == 0
					   ? MPA_MARKER_LEN
					   : 0);
		uint16_t ulen = (uint16_t)(s->wire[at] << 8 | s->wire[at + 1]);

		if (ulen > *longest)
			*longest = ulen;
		off += mpa_fpdu_wire_len(off, ulen, markers);
		n++;
	}
	ck_assert_uint_eq(off, s->wire_len);
	return n;
}

/*
 * Both ULPDU limits must hold the longest header (a Terminate echoing an
 * untagged DDP header and a Read Request header, 70 octets); one octet
 * less either way is refused at the start, before the stream is touched.
 */
START_TEST(a_mulpdu_below_the_longest_header_is_refused_at_start)
{
	static const struct {
		uint16_t mulpdu, max_ulpdu;
		int rc;
	} c[] = {
		{ RDMAP_MIN_MULPDU - 1, 0xffff, -EINVAL },
		{ 0xffff, RDMAP_MIN_MULPDU - 1, -EINVAL },
		{ 0, 0xffff, -EINVAL },
		{ RDMAP_MIN_MULPDU, RDMAP_MIN_MULPDU, 0 },
	};
	struct ddp_stag_table stags;
	struct pair_side s;

	ck_assert_uint_eq(RDMAP_MIN_MULPDU,
			  DDP_UNTAGGED_HDR_LEN + RDMAP_TERM_CTRL_LEN +
				  RDMAP_TERM_SEGLEN_LEN +
				  DDP_UNTAGGED_HDR_LEN + RDMAP_READ_REQ_LEN);
	ck_assert_int_eq(ddp_stag_table_init(&stags, 4), 0);
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		memset(&s, 0, sizeof(s));
		ck_assert_int_eq(rdmap_qp_init(&s.qp, &(struct rdmap_qp_attr){
			.sq_depth = 4, .rq_depth = 4, .max_sge = 1,
			.pd = PAIR_PD, .stags = &stags }, &pair_ops, &s), 0);
		ck_assert_int_eq(rdmap_qp_start(&s.qp, &(struct rdmap_conn){
			.initiator = true, .mulpdu = c[i].mulpdu,
			.max_ulpdu = c[i].max_ulpdu, .ird = 1, .ord = 1 }),
			c[i].rc);
		ck_assert_uint_eq(s.qp.state, c[i].rc ? RDMAP_QP_IDLE
						      : RDMAP_QP_RTS);
		ck_assert_uint_eq(s.n_ev, 0);
		rdmap_qp_fini(&s.qp);
	}
	ddp_stag_table_destroy(&stags);
}
END_TEST

/*
 * At the smallest MULPDU every message still goes, each cut into segments
 * that fill it: 52 octets of Send payload behind 18 header octets, 56 of
 * Write or Read Response behind 14.
 */
START_TEST(the_smallest_mulpdu_carries_every_message_in_full_segments)
{
	static uint8_t a[1024], b[1024];
	struct pair_opts o;
	struct pair p;
	uint32_t sa, sb;
	size_t longest;

	pair_opts_default(&o);
	o.mulpdu = o.max_ulpdu = RDMAP_MIN_MULPDU;
	o.record_wire = true;
	setup(&p, &o, "min_mulpdu", 13);
	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (uint8_t)(i * 11 + 3);
	sa = pair_reg(&p, 0, a, sizeof(a), ACC_ALL);
	sb = pair_reg(&p, 1, b, sizeof(b), ACC_ALL);
	{
		struct rdmap_sge rs = { (uintptr_t)b, 200, sb };
		struct rdmap_sge ss[2] = { { (uintptr_t)a, 150, sa },
					   { (uintptr_t)a + 150, 50, sa } };
		struct rdmap_sge ws = { (uintptr_t)a + 200, 200, sa };
		struct rdmap_sge cs = { (uintptr_t)a + 600, 200, sa };
		struct rdmap_send_wr s = pair_send_wr(1, RDMAP_WR_SEND, ss, 2);
		struct rdmap_send_wr w = pair_send_wr(2, RDMAP_WR_WRITE, &ws, 1);
		struct rdmap_send_wr r = pair_send_wr(3, RDMAP_WR_READ, &cs, 1);

		w.rkey = r.rkey = sb;
		w.remote_addr = r.remote_addr = (uintptr_t)b + 200;
		ck_assert_int_eq(rdmap_post_recv(&p.s[1].qp,
			&(struct rdmap_recv_wr){ 9, &rs, 1 }), 0);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &s), 0);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &w), 0);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &r), 0);
	}
	pair_pump(&p);
	ck_assert_uint_eq(p.s[0].n_cqe, 3);
	for (uint32_t i = 0; i < 3; i++) {
		ck_assert_uint_eq(p.s[0].cqe[i].wr_id, i + 1);
		ck_assert_uint_eq(p.s[0].cqe[i].status, RDMAP_WC_SUCCESS);
	}
	ck_assert_uint_eq(p.s[1].n_cqe, 1);
	ck_assert_uint_eq(p.s[1].cqe[0].byte_len, 200);
	ck_assert_mem_eq(b, a, 400);
	ck_assert_mem_eq(a + 600, b + 200, 200);
	/* Send 4 x 52, Write 4 x 56, Read Request 1; Read Response 4 x 56 */
	ck_assert_uint_eq(wire_ulpdus(&p.s[0], false, &longest), 4 + 4 + 1);
	ck_assert_uint_eq(longest, RDMAP_MIN_MULPDU);
	ck_assert_uint_eq(wire_ulpdus(&p.s[1], false, &longest), 4);
	ck_assert_uint_eq(longest, DDP_TAGGED_HDR_LEN + 56);
	pair_fini(&p);
}
END_TEST

/*
 * With markers an FPDUPTR must reach back over the whole FPDU, which caps
 * the MULPDU at 65014 (RFC 5044 section 4.3).  A larger one given at the
 * start is cut to that, and a long Write is segmented to fit it.
 */
START_TEST(markers_cut_a_larger_mulpdu_to_what_an_fpduptr_reaches)
{
	static uint8_t a[150000], b[150000];
	struct pair_opts o;
	struct pair p;
	uint32_t sa, sb;
	size_t longest, n;

	pair_opts_default(&o);
	o.markers = true;
	o.mulpdu = 0xffff;
	o.record_wire = true;
	setup(&p, &o, "markers_mulpdu", 14);
	ck_assert_uint_eq(p.s[0].qp.conn.mulpdu, MPA_MAX_ULPDU_MARKERS);
	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (uint8_t)(i * 13 + 5);
	sa = pair_reg(&p, 0, a, sizeof(a), ACC_ALL);
	sb = pair_reg(&p, 1, b, sizeof(b), ACC_ALL);
	{
		struct rdmap_sge ws = { (uintptr_t)a, sizeof(a), sa };
		struct rdmap_send_wr w = pair_send_wr(1, RDMAP_WR_WRITE, &ws, 1);

		w.rkey = sb;
		w.remote_addr = (uintptr_t)b;
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &w), 0);
	}
	pair_pump(&p);
	ck_assert_uint_eq(p.s[0].qp.state, RDMAP_QP_RTS);
	ck_assert_uint_eq(p.s[0].n_cqe, 1);
	ck_assert_uint_eq(p.s[0].cqe[0].status, RDMAP_WC_SUCCESS);
	ck_assert_mem_eq(b, a, sizeof(a));
	n = wire_ulpdus(&p.s[0], true, &longest);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_le(longest, MPA_MAX_ULPDU_MARKERS);
	ck_assert_uint_gt(longest, MPA_MAX_ULPDU_MARKERS - MPA_MARKER_LEN -
					   DDP_TAGGED_HDR_LEN);
	pair_fini(&p);
}
END_TEST

/* Writes @len octets of @a to @b and pumps; side 0's wire is only this. */
static void write_recorded(struct pair *p, uint8_t *a, uint32_t sa,
			   uint8_t *b, uint32_t sb, uint32_t len, uint64_t id)
{
	struct rdmap_sge ws = { (uintptr_t)a, len, sa };
	struct rdmap_send_wr w = pair_send_wr(id, RDMAP_WR_WRITE, &ws, 1);

	w.rkey = sb;
	w.remote_addr = (uintptr_t)b;
	p->s[0].wire_len = 0;
	ck_assert_int_eq(rdmap_post_send(&p->s[0].qp, &w), 0);
	pair_pump(p);
	ck_assert_uint_eq(p->s[0].cqe[p->s[0].n_cqe - 1].wr_id, id);
	ck_assert_uint_eq(p->s[0].cqe[p->s[0].n_cqe - 1].status,
			  RDMAP_WC_SUCCESS);
	ck_assert_mem_eq(b, a, len);
}

/*
 * The MULPDU follows the connection's EMSS as it changes: segments cut
 * afterwards fill the new one, never more than the bound the engine was
 * started with, never less than the longest header.
 */
START_TEST(the_mulpdu_follows_the_emss_within_its_bound)
{
	enum { LEN = 10000 };
	/* 0: as started; then up, then above the bound */
	static const struct {
		uint16_t ask, got;
		size_t fpdus;
	} step[] = { { 0, 1454, 7 }, { 3000, 3000, 4 }, { 60000, 4000, 3 } };
	static uint8_t a[LEN], b[LEN];
	struct pair_opts o;
	struct pair p;
	struct rdmap_qp *q;
	uint32_t sa, sb;
	size_t longest;

	pair_opts_default(&o);
	o.mulpdu_max = 4000;
	o.record_wire = true;
	setup(&p, &o, "mulpdu_follows", 15);
	q = &p.s[0].qp;
	ck_assert_uint_eq(q->conn.mulpdu, 1454);
	ck_assert_uint_eq(q->conn.mulpdu_max, 4000);
	for (size_t i = 0; i < LEN; i++)
		a[i] = (uint8_t)(i * 17 + 1);
	sa = pair_reg(&p, 0, a, LEN, ACC_ALL);
	sb = pair_reg(&p, 1, b, LEN, ACC_ALL);
	for (uint64_t i = 0; i < sizeof(step) / sizeof(step[0]); i++) {
		if (step[i].ask)
			rdmap_set_mulpdu(q, step[i].ask);
		ck_assert_uint_eq(q->conn.mulpdu, step[i].got);
		memset(b, 0, LEN);
		write_recorded(&p, a, sa, b, sb, LEN, i + 1);
		ck_assert_uint_eq(wire_ulpdus(&p.s[0], false, &longest),
				  step[i].fpdus);
		ck_assert_uint_eq(longest, step[i].got);
	}

	rdmap_set_mulpdu(q, 1);
	ck_assert_uint_eq(q->conn.mulpdu, RDMAP_MIN_MULPDU);
	pair_fini(&p);
}
END_TEST

/* ---- completion timing ---------------------------------------------- */

#define TIMING_LEN 3000

/*
 * Takes everything side @from has built into @buf (nothing is handed
 * down) and returns its length; @ends gets the wire offset just past each
 * message's last segment, in order, and *@n_ends how many there are.
 */
static size_t built_wire(struct pair *p, int from, uint8_t *buf, size_t cap,
			 size_t *ends, int *n_ends)
{
	struct iovec iov[512];
	int n = rdmap_tx_gather(&p->s[from].qp, iov, 512, cap);
	size_t len = 0, off = 0;

	for (int i = 0; i < n; i++) {
		memcpy(buf + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	*n_ends = 0;
	while (off < len) {
		uint16_t ulen = (uint16_t)(buf[off] << 8 | buf[off + 1]);
		bool last = buf[off + MPA_HDR_LEN + DDP_OFF_CTRL] & DDP_CTRL_L;

		off += mpa_fpdu_wire_len(off, ulen, false);
		if (last)
			ends[(*n_ends)++] = off;
	}
	ck_assert_uint_eq(off, len);
	return len;
}

/*
 * A Send and a Write complete when their last octet is handed down, not
 * one octet earlier (RFC 5040 section 5.5 leaves it to the Local Peer's
 * transport; ours is done when TCP has it).  Both are cut into several
 * FPDUs and handed down one octet at a time; the peer takes each octet as
 * it goes and completes the Send's receive at the same octet.
 */
START_TEST(send_and_write_complete_only_when_their_last_octet_is_handed_down)
{
	static uint8_t a[2 * TIMING_LEN], b[2 * TIMING_LEN], wire[8192];
	struct pair_opts o;
	struct pair p;
	uint32_t sa, sb;
	size_t ends[4], len;
	int n_ends;

	pair_opts_default(&o);
	setup(&p, &o, "timing_send_write", 15);
	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (uint8_t)(i * 5 + 2);
	sa = pair_reg(&p, 0, a, sizeof(a), ACC_ALL);
	sb = pair_reg(&p, 1, b, sizeof(b), ACC_ALL);
	{
		struct rdmap_sge rs = { (uintptr_t)b, TIMING_LEN, sb };
		struct rdmap_sge ss = { (uintptr_t)a, TIMING_LEN, sa };
		struct rdmap_sge ws = { (uintptr_t)a + TIMING_LEN, TIMING_LEN,
					sa };
		struct rdmap_send_wr s = pair_send_wr(1, RDMAP_WR_SEND, &ss, 1);
		struct rdmap_send_wr w = pair_send_wr(2, RDMAP_WR_WRITE, &ws, 1);

		w.rkey = sb;
		w.remote_addr = (uintptr_t)b + TIMING_LEN;
		ck_assert_int_eq(rdmap_post_recv(&p.s[1].qp,
			&(struct rdmap_recv_wr){ 9, &rs, 1 }), 0);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &s), 0);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &w), 0);
	}
	len = built_wire(&p, 0, wire, sizeof(wire), ends, &n_ends);
	ck_assert_int_eq(n_ends, 2);
	/* several FPDUs each */
	ck_assert_uint_gt(ends[0], mpa_fpdu_wire_len(0, p.s[0].qp.conn.mulpdu,
						     false));
	ck_assert_uint_gt(ends[1] - ends[0],
			  mpa_fpdu_wire_len(0, p.s[0].qp.conn.mulpdu, false));
	for (size_t i = 0; i < len; i++) {
		uint32_t want = (i + 1 >= ends[0]) + (i + 1 >= ends[1]);

		rdmap_tx_advance(&p.s[0].qp, 1);
		require(p.s[0].n_cqe == want,
			"%u completions after %zu of %zu octets, not %u",
			p.s[0].n_cqe, i + 1, len, want);
		ck_assert_int_eq(rdmap_rx_feed(&p.s[1].qp, wire + i, 1), 0);
		require(p.s[1].n_cqe == (i + 1 >= ends[0]),
			"receive completions %u after %zu octets",
			p.s[1].n_cqe, i + 1);
	}
	ck_assert_uint_eq(p.s[0].cqe[0].wr_id, 1);
	ck_assert_uint_eq(p.s[0].cqe[0].status, RDMAP_WC_SUCCESS);
	ck_assert_uint_eq(p.s[0].cqe[1].wr_id, 2);
	ck_assert_uint_eq(p.s[0].cqe[1].status, RDMAP_WC_SUCCESS);
	ck_assert_uint_eq(p.s[1].cqe[0].byte_len, TIMING_LEN);
	ck_assert_mem_eq(b, a, sizeof(a));
	ck_assert(!rdmap_tx_pending(&p.s[0].qp));
	pair_fini(&p);
}
END_TEST

/*
 * Loop: RFC 5044 section 4.4 has the CRC cover the octets as they go out.
 * A Send's FPDUs wait, built, while the peer's RDMA Write lands in the
 * Send's own buffer, before its first FPDU starts (0) or halfway through
 * it (1).  The receiver takes every FPDU, and each octet it gets is the
 * buffer's, from before the Write or after it (RFC 5040 leaves which).
 */
START_TEST(crc_covers_payload_a_write_changed_while_its_fpdu_waited)
{
	static uint8_t a[4096], old[4096], b[4096], c[512];
	struct pair_opts o;
	struct pair p;
	uint32_t sa, sb, sc;

	pair_opts_default(&o);
	o.crc = true;
	o.responder_first = true; /* the responder's Write may go first */
	setup(&p, &o, "crc_write_into_waiting_send", 16 + (uint64_t)_i);
	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (uint8_t)(i * 3 + 1);
	memcpy(old, a, sizeof(a));
	memset(c, 0xee, sizeof(c));
	sa = pair_reg(&p, 0, a, sizeof(a), ACC_ALL);
	sb = pair_reg(&p, 1, b, sizeof(b), ACC_ALL);
	sc = pair_reg(&p, 1, c, sizeof(c), ACC_ALL);
	{
		struct rdmap_sge rs = { (uintptr_t)b, 3000, sb };
		struct rdmap_sge ss = { (uintptr_t)a, 3000, sa };
		struct rdmap_sge ws = { (uintptr_t)c, 500, sc };
		struct rdmap_send_wr s = pair_send_wr(1, RDMAP_WR_SEND, &ss, 1);
		struct rdmap_send_wr w = pair_send_wr(2, RDMAP_WR_WRITE, &ws, 1);

		w.rkey = sa;
		w.remote_addr = (uintptr_t)a + 100;
		ck_assert_int_eq(rdmap_post_recv(&p.s[1].qp,
			&(struct rdmap_recv_wr){ 9, &rs, 1 }), 0);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &s), 0);
		ck_assert(rdmap_tx_pending(&p.s[0].qp));
		if (_i)
			ck_assert_uint_gt(pair_pump_one(&p, 0, 700), 0);
		ck_assert_int_eq(rdmap_post_send(&p.s[1].qp, &w), 0);
		/* the Write, and only it, goes across */
		while (pair_pump_one(&p, 1, SIZE_MAX))
			;
	}
	ck_assert_mem_eq(a + 100, c, 500); /* the Write landed first */
	pair_pump(&p);
	ck_assert_int_eq(p.s[0].feed_err, 0);
	ck_assert_int_eq(p.s[1].feed_err, 0);
	ck_assert_uint_eq(p.s[0].n_cqe, 1);
	ck_assert_uint_eq(p.s[0].cqe[0].status, RDMAP_WC_SUCCESS);
	ck_assert_uint_eq(count_cqes(&p.s[1], true), 1);
	for (uint32_t i = 0; i < p.s[1].n_cqe; i++)
		ck_assert_uint_eq(p.s[1].cqe[i].status, RDMAP_WC_SUCCESS);
	for (size_t i = 0; i < 3000; i++)
		require(b[i] == old[i] || b[i] == a[i],
			"octet %zu received as 0x%02x", i, b[i]);
	pair_fini(&p);
}
END_TEST

/*
 * Posts a receive of @len octets at @b on the responder (wr_id 9), and on
 * the initiator a Send of as many from @a (wr_id 1).
 */
static void initiator_sends_to_responder(struct pair *p, uint8_t *a,
					 uint32_t sa, uint8_t *b, uint32_t sb,
					 uint32_t len)
{
	struct rdmap_sge rs = { (uintptr_t)b, len, sb };
	struct rdmap_sge ss = { (uintptr_t)a, len, sa };
	struct rdmap_send_wr s = pair_send_wr(1, RDMAP_WR_SEND, &ss, 1);

	ck_assert_int_eq(rdmap_post_recv(&p->s[1].qp,
					 &(struct rdmap_recv_wr){ 9, &rs, 1 }),
			 0);
	ck_assert_int_eq(rdmap_post_send(&p->s[0].qp, &s), 0);
}

/*
 * With markers, FPDUs are built whole into the staging ring, and wait for
 * room there rather than be built in place: one piece each on the wire,
 * not two per marker, with one CRC call over the copy.  A 1 MiB Send is
 * four times the ring; it goes across as the ring frees, intact.
 */
START_TEST(markers_fpdus_wait_for_room_in_the_staging_ring)
{
	enum { LEN = 1 << 20 };
	static uint8_t a[LEN], b[LEN];
	struct pair_opts o;
	struct pair p;
	struct rdmap_qp *q;
	uint32_t sa, sb;
	size_t most = 0, moved;

	pair_opts_default(&o);
	o.crc = true;
	o.markers = true;
	o.emss = 65000;
	o.mulpdu_max = 65000;
	setup(&p, &o, "markers_staging_ring", 31);
	q = &p.s[0].qp;
	for (size_t i = 0; i < LEN; i++)
		a[i] = (uint8_t)(i * 5 + 1);
	sa = pair_reg(&p, 0, a, LEN, ACC_ALL);
	sb = pair_reg(&p, 1, b, LEN, ACC_ALL);
	initiator_sends_to_responder(&p, a, sa, b, sb, LEN);
	do {
		moved = pair_pump_one(&p, 0, 20000);
		if (most < q->fpdu_bytes)
			most = q->fpdu_bytes;
		for (uint32_t i = 0; i < q->fpdu_count; i++) {
			struct rdmap_fpdu *fp =
				&q->fpdus[(q->fpdu_head + i) & (q->n_fpdus - 1)];

			require(fp->n_wire == 1 && !fp->src_lo,
				"FPDU %u of %u built in place, in %d pieces",
				i, q->fpdu_count, fp->n_wire);
		}
	} while (moved);
	ck_assert_uint_gt(most, 65000);
	ck_assert_uint_le(most, q->stage_size);
	pair_pump(&p);
	ck_assert_int_eq(p.s[1].feed_err, 0);
	ck_assert_uint_eq(count_cqes(&p.s[1], true), 1);
	ck_assert_uint_eq(p.s[1].cqe[0].status, RDMAP_WC_SUCCESS);
	ck_assert_mem_eq(b, a, LEN);
	pair_fini(&p);
}
END_TEST

/*
 * Without markers, an FPDU too large to copy is framed around its payload
 * with its header, PAD and CRC in the staging ring, where the one before
 * ended: a run of 4 KiB Writes goes down in two pieces per FPDU (the
 * payload, read where it lies, and one CRC with the next header), and
 * arrives intact, true to its CRC.
 */
START_TEST(fpdus_built_in_place_leave_in_two_pieces_each)
{
	enum { K = 16, WLEN = 4096 };
	static uint8_t a[K * WLEN], b[K * WLEN];
	struct iovec iov[4 * K];
	struct pair_opts o;
	struct pair p;
	uint32_t sa, sb;
	int n;

	pair_opts_default(&o);
	o.crc = true;
	o.emss = 65000;
	o.mulpdu_max = 65000;
	setup(&p, &o, "fpdus_in_two_pieces", 32);
	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (uint8_t)(i * 3 + 7);
	sa = pair_reg(&p, 0, a, sizeof(a), ACC_ALL);
	sb = pair_reg(&p, 1, b, sizeof(b), ACC_ALL);
	for (int k = 0; k < K; k++) {
		struct rdmap_sge ws = { (uintptr_t)(a + k * WLEN), WLEN, sa };
		struct rdmap_send_wr w = pair_send_wr((uint64_t)k,
						      RDMAP_WR_WRITE, &ws, 1);

		w.rkey = sb;
		w.remote_addr = (uintptr_t)(b + k * WLEN);
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &w), 0);
	}
	n = rdmap_tx_gather(&p.s[0].qp, iov, 4 * K, SIZE_MAX);
	ck_assert_int_eq(n, 2 * K + 1);
	for (int k = 0; k < K; k++) {
		ck_assert_ptr_eq(iov[2 * k + 1].iov_base, a + k * WLEN);
		ck_assert_uint_eq(iov[2 * k + 1].iov_len, WLEN);
		/* the CRC before and the header after: 4 + 2 + 14 octets */
		if (k)
			ck_assert_uint_eq(iov[2 * k].iov_len, 20);
	}
	pair_pump(&p);
	ck_assert_int_eq(p.s[0].feed_err, 0);
	ck_assert_int_eq(p.s[1].feed_err, 0);
	ck_assert_uint_eq(count_cqes(&p.s[0], false), K);
	ck_assert_mem_eq(b, a, sizeof(a));
	pair_fini(&p);
}
END_TEST

/*
 * A peer's RDMA Write lands in the source of an FPDU built in place (too
 * large for the staging ring, without markers) while it is half sent:
 * the rest of it moves aside, and it still ends true to its CRC.  The
 * MULPDU is raised after the start from 1454 to near 64 KiB, as a
 * connection's MSS grows: the moved payload is longer than the MULPDU the
 * engine started with.
 */
START_TEST(crc_stays_true_when_a_write_lands_in_a_half_sent_fpdu)
{
	enum { LEN = 1 << 20, WLEN = 4096 };
	static uint8_t a[LEN], old[LEN], b[LEN], c[WLEN];
	struct pair_opts o;
	struct pair p;
	struct rdmap_qp *q;
	struct rdmap_fpdu *fp = NULL;
	uint32_t sa, sb, sc;
	size_t off;

	pair_opts_default(&o);
	o.crc = true;
	o.emss = 1460;
	o.mulpdu_max = 65000;
	o.responder_first = true;
	setup(&p, &o, "crc_write_into_half_sent_fpdu", 8);
	ck_assert_uint_eq(p.s[0].qp.conn.mulpdu, 1454);
	rdmap_set_mulpdu(&p.s[0].qp, 65000);
	ck_assert_uint_eq(p.s[0].qp.conn.mulpdu, 65000);
	for (size_t i = 0; i < LEN; i++)
		a[i] = (uint8_t)(i * 7 + 3);
	memcpy(old, a, LEN);
	memset(c, 0x5a, WLEN);
	sa = pair_reg(&p, 0, a, LEN, ACC_ALL);
	sb = pair_reg(&p, 1, b, LEN, ACC_ALL);
	sc = pair_reg(&p, 1, c, WLEN, ACC_ALL);
	q = &p.s[0].qp;
	initiator_sends_to_responder(&p, a, sa, b, sb, LEN);
	/*
	 * On, an FPDU at a time, until the first one built in place is at
	 * the head; then one octet of it: nearly all of it is still to go.
	 */
	for (int i = 0; i < 4096 && !fp; i++) {
		struct rdmap_fpdu *head =
			&q->fpdus[q->fpdu_head & (q->n_fpdus - 1)];
		size_t step = !q->fpdu_count ? 1000
			      : head->src_lo ? 1
					     : head->wire_len - q->tx_off;

		if (q->fpdu_count && head->src_lo && q->tx_off)
			fp = head;
		else
			ck_assert_uint_gt(pair_pump_one(&p, 0, step), 0);
	}
	ck_assert_msg(fp != NULL, "no FPDU was built in place");
	off = (size_t)(fp->src_hi - a) - WLEN; /* not sent yet */
	{
		struct rdmap_sge ws = { (uintptr_t)c, WLEN, sc };
		struct rdmap_send_wr w = pair_send_wr(2, RDMAP_WR_WRITE, &ws, 1);

		w.rkey = sa;
		w.remote_addr = (uintptr_t)a + off;
		ck_assert_int_eq(rdmap_post_send(&p.s[1].qp, &w), 0);
		while (pair_pump_one(&p, 1, SIZE_MAX))
			;
	}
	ck_assert_mem_eq(a + off, c, WLEN);
	{
		/* only payload moved aside, and it fits the bounce buffer */
		size_t moved = 0;

		for (int j = 0; j < fp->n_wire; j++) {
			const uint8_t *base = fp->wire[j].iov_base;

			if (base >= q->bounce && base < q->bounce + q->conn.mulpdu)
				moved = (size_t)(base - q->bounce) +
					fp->wire[j].iov_len;
		}
		ck_assert_uint_gt(moved, 1454);
		ck_assert_uint_le(moved, q->conn.mulpdu);
		ck_assert_uint_ge(malloc_usable_size(q->bounce), moved);
	}
	pair_pump(&p);
	ck_assert_int_eq(p.s[0].feed_err, 0);
	ck_assert_int_eq(p.s[1].feed_err, 0);
	ck_assert_uint_eq(count_cqes(&p.s[1], true), 1);
	for (uint32_t i = 0; i < p.s[1].n_cqe; i++)
		ck_assert_uint_eq(p.s[1].cqe[i].status, RDMAP_WC_SUCCESS);
	for (uint32_t i = 0; i < p.s[0].n_cqe; i++)
		ck_assert_uint_eq(p.s[0].cqe[i].status, RDMAP_WC_SUCCESS);
	/* what left before the Write is the old octets, the rest either */
	ck_assert_mem_eq(b, old, off - (off % 512));
	for (size_t i = 0; i < LEN; i++)
		require(b[i] == old[i] || b[i] == a[i],
			"octet %zu received as 0x%02x", i, b[i]);
	pair_fini(&p);
}
END_TEST

/*
 * Loop: a Read completes when the last octet of its last Read Response
 * is placed (and its CRC checked), not before.  The response, several
 * FPDUs long, is fed one octet at a time: through rdmap_rx_feed (0), or
 * placed straight through rdmap_rx_direct wherever it offers a window (1).
 */
START_TEST(read_completes_only_when_its_last_response_octet_is_placed)
{
	static uint8_t a[TIMING_LEN], b[TIMING_LEN], wire[8192];
	struct pair_opts o;
	struct pair p;
	uint32_t sa, sb;
	size_t ends[2], len, direct = 0;
	int n_ends;

	pair_opts_default(&o);
	o.crc = true;
	setup(&p, &o, "timing_read", 16);
	for (size_t i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)(i * 3 + 7);
	sa = pair_reg(&p, 0, a, sizeof(a), ACC_ALL);
	sb = pair_reg(&p, 1, b, sizeof(b), ACC_ALL);
	{
		struct rdmap_sge rs = { (uintptr_t)a, TIMING_LEN, sa };
		struct rdmap_send_wr r = pair_send_wr(1, RDMAP_WR_READ, &rs, 1);

		r.rkey = sb;
		r.remote_addr = (uintptr_t)b;
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &r), 0);
	}
	/* the Read Request leaves whole; the Read is not done by that */
	while (pair_pump_one(&p, 0, SIZE_MAX))
		;
	ck_assert_uint_eq(p.s[1].qp.ird_count, 1);
	len = built_wire(&p, 1, wire, sizeof(wire), ends, &n_ends);
	ck_assert_int_eq(n_ends, 1);
	ck_assert_uint_eq(ends[0], len);
	ck_assert_uint_gt(len, mpa_fpdu_wire_len(0, p.s[1].qp.conn.mulpdu,
						 false));
	rdmap_tx_advance(&p.s[1].qp, len);
	for (size_t i = 0; i < len; i++) {
		size_t win;
		uint8_t *dst = _i ? rdmap_rx_direct(&p.s[0].qp, &win) : NULL;

		require(p.s[0].n_cqe == 0, "Read complete with %zu of %zu "
			"response octets", i, len);
		if (dst) {
			*dst = wire[i];
			ck_assert_int_eq(rdmap_rx_direct_done(&p.s[0].qp, 1), 0);
			direct++;
		} else {
			ck_assert_int_eq(rdmap_rx_feed(&p.s[0].qp, wire + i, 1),
					 0);
		}
	}
	ck_assert_uint_eq(p.s[0].n_cqe, 1);
	ck_assert_uint_eq(p.s[0].cqe[0].wr_id, 1);
	ck_assert_uint_eq(p.s[0].cqe[0].opcode, RDMAP_WC_READ);
	ck_assert_uint_eq(p.s[0].cqe[0].status, RDMAP_WC_SUCCESS);
	ck_assert_uint_eq(p.s[0].cqe[0].byte_len, TIMING_LEN);
	ck_assert_mem_eq(a, b, sizeof(a));
	/*
	 * the direct path took every payload octet (with CRC on, into the
	 * hold where each ULPDU, headers too, waits for its CRC), and none
	 * of the framing
	 */
	if (_i) {
		ck_assert_uint_ge(direct, TIMING_LEN);
		ck_assert_uint_lt(direct, len);
	} else {
		ck_assert_uint_eq(direct, 0);
	}
	pair_fini(&p);
}
END_TEST

/* ---- randomized conversations -------------------------------------- */

#define ARENA_SIZE (6u << 20)
#define GUARD 4096
#define GUARD_BYTE 0xa5
#define MAX_OPS_PER_ROUND 48
#define MAX_RECORDS 4096

enum arena_kind { AR_SRC, AR_RECV, AR_TARGET, AR_SINK, N_ARENAS };

struct arena {
	uint8_t *mem;	/* guard, region, guard */
	uint8_t *base;	/* the registered region */
	uint8_t *bg;	/* what untouched octets hold */
	uint32_t stag;
	size_t used;
};

/* A destination range and where in the expected store its data is. */
struct record {
	uint8_t *dst;
	size_t len;
	size_t exp;
};

struct model_side {
	struct arena ar[N_ARENAS];
	struct rdmap_cqe want_sq[MAX_OPS_PER_ROUND * 2];
	uint32_t n_want_sq;
	struct rdmap_cqe want_rq[MAX_OPS_PER_ROUND * 2];
	uint32_t n_want_rq;
	uint32_t inv_stag[MAX_OPS_PER_ROUND];
	uint32_t n_inv;
	uint8_t inv_buf[MAX_OPS_PER_ROUND][16];
};

struct model {
	struct pair p;
	struct model_side m[2];
	uint8_t *exp; /* expected data store */
	size_t exp_used;
	struct record rec[MAX_RECORDS];
	uint32_t n_rec;
	uint64_t next_id;
	uint32_t max_sge, max_inline;
	unsigned long ops, octets;
};

static void arena_init(struct model *mo, int side, int kind)
{
	struct arena *a = &mo->m[side].ar[kind];

	a->mem = malloc(ARENA_SIZE + 2 * GUARD);
	a->bg = malloc(ARENA_SIZE);
	ck_assert_ptr_nonnull(a->mem);
	ck_assert_ptr_nonnull(a->bg);
	a->base = a->mem + GUARD;
	memset(a->mem, GUARD_BYTE, GUARD);
	memset(a->base + ARENA_SIZE, GUARD_BYTE, GUARD);
	rng_fill(&rng, a->bg, ARENA_SIZE);
	memcpy(a->base, a->bg, ARENA_SIZE);
	/* each arena only grants what its role needs */
	a->stag = pair_reg(&mo->p, side, a->base, ARENA_SIZE,
			   kind == AR_SRC    ? DDP_ACCESS_REMOTE_READ
			   : kind == AR_RECV ? DDP_ACCESS_LOCAL_WRITE
			   : kind == AR_SINK ? DDP_ACCESS_LOCAL_WRITE
					     : DDP_ACCESS_REMOTE_WRITE);
	a->used = 0;
}

/* Takes @len octets (after a small random gap) from an arena. */
static uint8_t *arena_take(struct arena *a, size_t len)
{
	size_t gap = (size_t)rng_range(&rng, 0, 24);

	if (a->used + gap + len > ARENA_SIZE)
		return NULL;
	a->used += gap;
	a->used += len;
	return a->base + a->used - len;
}

/* Cuts @len octets into up to @max pieces taken from @a, some empty. */
static int split_sges(struct arena *a, size_t len, uint32_t max,
		      struct rdmap_sge *sge)
{
	uint32_t n = (uint32_t)rng_range(&rng, 1, max);
	size_t left = len;

	for (uint32_t i = 0; i < n; i++) {
		size_t piece = i + 1 == n ? left
					  : (size_t)rng_range(&rng, 0, left);
		uint8_t *p = arena_take(a, piece);

		if (!p)
			return -1;
		sge[i] = (struct rdmap_sge){ (uintptr_t)p, (uint32_t)piece,
					     a->stag };
		left -= piece;
	}
	return (int)n;
}

static size_t exp_put(struct model *mo, const struct rdmap_sge *sge, int n)
{
	size_t at = mo->exp_used;

	for (int i = 0; i < n; i++) {
		memcpy(mo->exp + mo->exp_used,
		       (const void *)(uintptr_t)sge[i].addr, sge[i].length);
		mo->exp_used += sge[i].length;
	}
	return at;
}

static void record(struct model *mo, uint8_t *dst, size_t len, size_t exp)
{
	require(mo->n_rec < MAX_RECORDS, "record list full");
	mo->rec[mo->n_rec++] = (struct record){ dst, len, exp };
}

/* Mostly small messages, some medium, a few up to 1 MiB. */
static size_t pick_len(void)
{
	uint64_t k = rng_range(&rng, 0, 99);

	if (k < 6)
		return 0;
	if (k < 60)
		return (size_t)rng_range(&rng, 1, 512);
	if (k < 85)
		return (size_t)rng_range(&rng, 513, 16384);
	if (k < 97)
		return (size_t)rng_range(&rng, 16385, 262144);
	return (size_t)rng_range(&rng, 262145, 1u << 20);
}

static uint8_t pick_flags(size_t len, uint32_t max_inline, bool may_inline)
{
	uint8_t f = rng_range(&rng, 0, 4) ? RDMAP_WR_SIGNALED : 0;

	if (may_inline && len <= max_inline && rng_range(&rng, 0, 1))
		f |= RDMAP_WR_INLINE;
	return f;
}

static void want_sq(struct model *mo, int side, const struct rdmap_send_wr *w,
		    uint8_t opcode, size_t len)
{
	struct model_side *m = &mo->m[side];

	if (!(w->flags & RDMAP_WR_SIGNALED))
		return;
	m->want_sq[m->n_want_sq++] = (struct rdmap_cqe){
		.wr_id = w->wr_id, .status = RDMAP_WC_SUCCESS,
		.opcode = opcode, .byte_len = (uint32_t)len,
	};
}

/* A Send (maybe solicited, maybe with Invalidate) and its receive. */
static bool op_send(struct model *mo, int side, bool invalidate)
{
	struct model_side *me = &mo->m[side], *peer = &mo->m[!side];
	struct rdmap_sge src[RDMAP_MAX_SGE], dst[RDMAP_MAX_SGE];
	size_t len = pick_len(), slack = (size_t)rng_range(&rng, 0, 100);
	int ns = split_sges(&me->ar[AR_SRC], len, mo->max_sge, src);
	int nd = ns < 0 ? -1 : split_sges(&peer->ar[AR_RECV], len + slack,
					   mo->max_sge, dst);
	struct rdmap_send_wr w;
	struct rdmap_recv_wr r;
	size_t at, off = 0;
	uint8_t flags = 0;

	if (ns < 0 || nd < 0)
		return false;
	w = pair_send_wr(mo->next_id++, invalidate ? RDMAP_WR_SEND_INV
					      : RDMAP_WR_SEND,
		    src, (uint32_t)ns);
	w.flags = pick_flags(len, mo->max_inline, true);
	if (rng_range(&rng, 0, 4) == 0) {
		w.flags |= RDMAP_WR_SOLICITED;
		flags |= RDMAP_CQE_SOLICITED;
	}
	if (invalidate) {
		uint32_t k = peer->n_inv++;

		peer->inv_stag[k] = pair_reg(&mo->p, !side, peer->inv_buf[k],
					     16, DDP_ACCESS_REMOTE_WRITE);
		w.inv_stag = peer->inv_stag[k];
		flags |= RDMAP_CQE_INVALIDATED;
	}
	r = (struct rdmap_recv_wr){ mo->next_id++, dst, (uint32_t)nd };
	if (mo->p.s[!side].use_srq)
		require(rdmap_srq_post(&mo->p.s[!side].srq, &r) == 0,
			"srq post failed");
	else
		require(rdmap_post_recv(&mo->p.s[!side].qp, &r) == 0,
			"post_recv failed");
	require(rdmap_post_send(&mo->p.s[side].qp, &w) == 0, "post_send failed");
	want_sq(mo, side, &w, RDMAP_WC_SEND, len);
	peer->want_rq[peer->n_want_rq++] = (struct rdmap_cqe){
		.wr_id = r.wr_id, .status = RDMAP_WC_SUCCESS,
		.opcode = RDMAP_WC_RECV, .recv = true, .flags = flags,
		.byte_len = (uint32_t)len, .inv_stag = w.inv_stag,
	};
	at = exp_put(mo, src, ns);
	for (int i = 0; i < nd && off < len; i++) {
		size_t n = dst[i].length < len - off ? dst[i].length : len - off;

		record(mo, (uint8_t *)(uintptr_t)dst[i].addr, n, at + off);
		off += n;
	}
	mo->octets += len;
	return true;
}

static bool op_write(struct model *mo, int side)
{
	struct model_side *me = &mo->m[side], *peer = &mo->m[!side];
	struct rdmap_sge src[RDMAP_MAX_SGE];
	size_t len = pick_len();
	int ns = split_sges(&me->ar[AR_SRC], len, mo->max_sge, src);
	uint8_t *target = ns < 0 ? NULL : arena_take(&peer->ar[AR_TARGET], len);
	struct rdmap_send_wr w;

	if (!target)
		return false;
	w = pair_send_wr(mo->next_id++, RDMAP_WR_WRITE, src, (uint32_t)ns);
	w.flags = pick_flags(len, mo->max_inline, true);
	w.rkey = peer->ar[AR_TARGET].stag;
	w.remote_addr = (uintptr_t)target;
	require(rdmap_post_send(&mo->p.s[side].qp, &w) == 0, "post write");
	want_sq(mo, side, &w, RDMAP_WC_WRITE, len);
	record(mo, target, len, exp_put(mo, src, ns));
	mo->octets += len;
	return true;
}

static bool op_read(struct model *mo, int side)
{
	struct model_side *me = &mo->m[side], *peer = &mo->m[!side];
	size_t len = pick_len();
	uint8_t *from = arena_take(&peer->ar[AR_SRC], len);
	uint8_t *sink = from ? arena_take(&me->ar[AR_SINK], len) : NULL;
	struct rdmap_sge s;
	struct rdmap_send_wr w;

	if (!sink)
		return false;
	s = (struct rdmap_sge){ (uintptr_t)sink, (uint32_t)len,
				me->ar[AR_SINK].stag };
	w = pair_send_wr(mo->next_id++, RDMAP_WR_READ, &s, 1);
	w.flags = pick_flags(len, 0, false);
	w.rkey = peer->ar[AR_SRC].stag;
	w.remote_addr = (uintptr_t)from;
	require(rdmap_post_send(&mo->p.s[side].qp, &w) == 0, "post read");
	want_sq(mo, side, &w, RDMAP_WC_READ, len);
	{
		struct rdmap_sge f = { (uintptr_t)from, (uint32_t)len, 0 };

		record(mo, sink, len, exp_put(mo, &f, 1));
	}
	mo->octets += len;
	return true;
}

static void check_cqes(struct model *mo, int side)
{
	struct model_side *m = &mo->m[side];
	struct pair_side *s = &mo->p.s[side];
	uint32_t nsq = 0, nrq = 0;

	for (uint32_t i = 0; i < s->n_cqe; i++) {
		const struct rdmap_cqe *c = &s->cqe[i];
		const struct rdmap_cqe *w = c->recv ? &m->want_rq[nrq++]
						    : &m->want_sq[nsq++];

		require(c->recv ? nrq <= m->n_want_rq : nsq <= m->n_want_sq,
			"side %d: unexpected completion wr %llu", side,
			(unsigned long long)c->wr_id);
		require(c->wr_id == w->wr_id && c->status == w->status &&
				c->opcode == w->opcode &&
				c->byte_len == w->byte_len &&
				c->flags == w->flags &&
				c->inv_stag == w->inv_stag,
			"side %d completion %u: wr %llu status %u op %u len %u "
			"flags %u, want wr %llu op %u len %u flags %u",
			side, i, (unsigned long long)c->wr_id, c->status,
			c->opcode, c->byte_len, c->flags,
			(unsigned long long)w->wr_id, w->opcode, w->byte_len,
			w->flags);
	}
	require(nsq == m->n_want_sq && nrq == m->n_want_rq,
		"side %d: %u/%u send and %u/%u receive completions", side, nsq,
		m->n_want_sq, nrq, m->n_want_rq);
	for (uint32_t k = 0; k < m->n_inv; k++) {
		uint8_t *where;

		require(ddp_mr_check(&s->stags, m->inv_stag[k], 1, 0,
				     (uintptr_t)m->inv_buf[k], 1,
				     &where) == DDP_MR_BAD_STAG,
			"invalidated STag still valid");
		ddp_mr_deregister(&s->stags, m->inv_stag[k]);
	}
}

/*
 * After a round: every destination range holds its data; then it is put
 * back to the background, and every arena (guards included) must then
 * equal its background, which proves no other octet was touched.
 */
static void check_memory(struct model *mo)
{
	for (uint32_t i = 0; i < mo->n_rec; i++) {
		struct record *r = &mo->rec[i];

		require(memcmp(r->dst, mo->exp + r->exp, r->len) == 0,
			"record %u: %zu octets differ", i, r->len);
	}
	for (int side = 0; side < 2; side++) {
		for (int k = 0; k < N_ARENAS; k++) {
			struct arena *a = &mo->m[side].ar[k];

			for (uint32_t i = 0; i < mo->n_rec; i++) {
				struct record *r = &mo->rec[i];

				if (r->dst >= a->base && r->dst < a->base + ARENA_SIZE)
					memcpy(r->dst, a->bg + (r->dst - a->base),
					       r->len);
			}
			require(memcmp(a->base, a->bg, a->used + 64 < ARENA_SIZE
							       ? a->used + 64
							       : ARENA_SIZE) == 0,
				"side %d arena %d: octets outside the targets changed",
				side, k);
			for (size_t g = 0; g < GUARD; g++)
				require(a->mem[g] == GUARD_BYTE &&
						a->base[ARENA_SIZE + g] == GUARD_BYTE,
					"side %d arena %d: guard damaged", side, k);
			a->used = 0;
		}
	}
}

static void run_round(struct model *mo, uint32_t n_ops)
{
	mo->n_rec = 0;
	mo->exp_used = 0;
	for (int s = 0; s < 2; s++) {
		mo->m[s].n_want_sq = mo->m[s].n_want_rq = mo->m[s].n_inv = 0;
		mo->p.s[s].n_cqe = 0;
	}
	for (uint32_t i = 0; i < n_ops; i++) {
		int side = (int)rng_range(&rng, 0, 1);
		uint64_t k = rng_range(&rng, 0, 99);
		bool ok = k < 35   ? op_send(mo, side, false)
			  : k < 42 ? op_send(mo, side, true)
			  : k < 72 ? op_write(mo, side)
				   : op_read(mo, side);

		if (!ok)
			break; /* an arena is full: finish this round */
		mo->ops++;
	}
	pair_pump(&mo->p);
	for (int s = 0; s < 2; s++) {
		require(mo->p.s[s].feed_err == 0, "side %d refused input: %s", s,
			iw_strerror(mo->p.s[s].feed_err));
		require(mo->p.s[s].qp.state == RDMAP_QP_RTS,
			"side %d left RTS: %s", s, iw_strerror(mo->p.s[s].qp.err));
		check_cqes(mo, s);
	}
	check_memory(mo);
}

/*
 * _i picks the framing and the path: bit 0 markers, bit 1 CRC, bit 2
 * direct placement; the RTR type, SRQ, MSS and cut sizes vary with it.
 */
#define RANDOM_CONFIGS 8
#define OPS_PER_CONFIG 1300

START_TEST(random_conversations_move_every_octet_right)
{
	static const uint8_t rtrs[] = { 0, MPA_RTR_WRITE, MPA_RTR_READ,
					MPA_RTR_SEND };
	static const uint16_t emss[] = { 1460, 9000, 65483, 536 };
	struct pair_opts o;
	struct model *mo = calloc(1, sizeof(*mo));

	ck_assert_ptr_nonnull(mo);
	pair_opts_default(&o);
	o.markers = _i & 1;
	o.crc = _i & 2;
	o.rtr = rtrs[_i % 4];
	o.srq = _i % 3 == 0;
	o.emss = emss[(_i / 2) % 4];
	setup(&mo->p, &o, "random_conversations", 0xc0ffee00u + (uint64_t)_i);
	mo->p.direct = _i & 4;
	mo->p.max_cut = _i % 3 == 1 ? 97 : 1 << 20;
	mo->max_sge = o.max_sge;
	mo->max_inline = o.max_inline;
	mo->exp = malloc(4 * ARENA_SIZE);
	ck_assert_ptr_nonnull(mo->exp);
	for (int s = 0; s < 2; s++)
		for (int k = 0; k < N_ARENAS; k++)
			arena_init(mo, s, k);
	/* let the RTR and the responder's opening happen first */
	pair_pump(&mo->p);
	while (mo->ops < OPS_PER_CONFIG)
		run_round(mo, (uint32_t)rng_range(&rng, 1, MAX_OPS_PER_ROUND));
	printf("config %d: %lu operations, %lu payload octets verified\n", _i,
	       mo->ops, mo->octets);
	ck_assert_uint_ge(mo->ops, OPS_PER_CONFIG);
	for (int s = 0; s < 2; s++)
		for (int k = 0; k < N_ARENAS; k++) {
			free(mo->m[s].ar[k].mem);
			free(mo->m[s].ar[k].bg);
		}
	free(mo->exp);
	pair_fini(&mo->p);
	free(mo);
}
END_TEST

static Suite *rdmap_suite(void)
{
	Suite *s = suite_create("rdmap");
	TCase *tc;

	tc = tcase_create("rules");
	tcase_add_test(tc, send_write_read_move_data_and_complete);
	tcase_add_test(tc, no_fpdu_ends_on_a_marker_position);
	tcase_add_test(tc, send_completes_after_an_earlier_outstanding_read);
	tcase_add_test(tc, queues_keep_their_order_when_the_counters_wrap);
	tcase_add_test(tc, queues_deeper_than_the_engine_takes_are_refused);
	tcase_add_test(tc, reads_in_flight_never_exceed_ord);
	tcase_add_test(tc, responder_sends_nothing_before_the_initiators_first_fpdu);
	tcase_add_test(tc, responder_first_sends_before_the_initiator_and_is_taken);
	tcase_add_loop_test(tc, rtr_opens_the_responder_and_consumes_nothing, 0, 3);
	tcase_add_test(tc, send_with_invalidate_and_solicited_event_are_reported);
	tcase_add_test(tc, unsignaled_work_completes_silently_unless_it_fails);
	tcase_add_test(tc, a_silent_peer_completes_sends_retry_exceeded_and_flushes_receives);
	tcase_add_test(tc, send_completions_come_up_in_runs);
	tcase_add_test(tc,
		       small_writes_staged_together_complete_when_their_run_has_gone);
	tcase_add_test(tc, terminate_cuts_a_run_after_the_fpdu_partly_written);
	tcase_add_test(tc, receive_completions_of_one_read_come_up_in_runs);
	tcase_add_test(tc, inline_data_is_copied_when_posted);
	tcase_add_test(tc, post_checks_its_arguments);
	tcase_add_test(tc, send_and_write_complete_only_when_their_last_octet_is_handed_down);
	tcase_add_loop_test(tc, crc_covers_payload_a_write_changed_while_its_fpdu_waited,
			    0, 2);
	tcase_add_test(tc, markers_fpdus_wait_for_room_in_the_staging_ring);
	tcase_add_test(tc, fpdus_built_in_place_leave_in_two_pieces_each);
	tcase_add_test(tc, crc_stays_true_when_a_write_lands_in_a_half_sent_fpdu);
	tcase_add_loop_test(tc, read_completes_only_when_its_last_response_octet_is_placed,
			    0, 2);
	tcase_add_test(tc, a_mulpdu_below_the_longest_header_is_refused_at_start);
	tcase_add_test(tc, the_smallest_mulpdu_carries_every_message_in_full_segments);
	tcase_add_test(tc, markers_cut_a_larger_mulpdu_to_what_an_fpduptr_reaches);
	tcase_add_test(tc, the_mulpdu_follows_the_emss_within_its_bound);
	suite_add_tcase(s, tc);

	tc = tcase_create("random");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, random_conversations_move_every_octet_right, 0,
			    RANDOM_CONFIGS);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(rdmap_suite());
}
