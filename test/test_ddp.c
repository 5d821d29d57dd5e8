// SPDX-License-Identifier: MIT
/*
 * DDP suite (RFC 5041): header encoding, the header images the engine puts
 * on the wire for every RDMAP opcode, the DDP headers of real siw traffic
 * in test/data, the STag table and tagged access checks, untagged queue
 * bookkeeping, and the iovec arithmetic.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp/ddp.h"
#include "lib/byteorder.h"
#include "lib/error.h"
#include "mpa/mpa.h"
#include "rdmap/rdmap.h"
#include "testutil.h"
#include "ulpdus.h"

/* ---- headers (hdr.c) ------------------------------------------------- */

static void random_hdr(struct rng *r, struct ddp_hdr *h)
{
	memset(h, 0, sizeof(*h));
	h->tagged = rng_next(r) & 1;
	h->last = rng_next(r) & 1;
	h->version = (uint8_t)rng_range(r, 0, 3);
	h->rsvdulp = (uint8_t)rng_next(r);
	if (h->tagged) {
		h->stag = (uint32_t)rng_next(r);
		h->to = rng_next(r);
	} else {
		h->rsvdulp2 = (uint32_t)rng_next(r);
		h->qn = (uint32_t)rng_next(r);
		h->msn = (uint32_t)rng_next(r);
		h->mo = (uint32_t)rng_next(r);
	}
}

START_TEST(hdr_round_trips_every_field_of_tagged_and_untagged_headers)
{
	struct rng r;
	uint8_t out[DDP_MAX_HDR_LEN + 8];
	unsigned int seen_tagged = 0;

	rng_seed(&r, "hdr_round_trip", 0xddf00d);
	for (int i = 0; i < 20000; i++) {
		struct ddp_hdr h, g;
		size_t n;
		ssize_t got;

		random_hdr(&r, &h);
		seen_tagged += h.tagged;
		n = ddp_hdr_encode(&h, out);
		require(n == (h.tagged ? 14u : 18u), "encoded %zu octets", n);
		/* trailing octets do not change what is decoded */
		memset(out + n, 0xee, 8);
		got = ddp_hdr_decode(out, n + 8, &g);
		require(got == (ssize_t)n, "decode returned %zd", got);
		require(g.tagged == h.tagged && g.last == h.last &&
				g.version == h.version &&
				g.rsvdulp == h.rsvdulp,
			"control fields differ at round %d", i);
		require(g.stag == h.stag && g.to == h.to, "STag/TO differ");
		require(g.rsvdulp2 == h.rsvdulp2 && g.qn == h.qn &&
				g.msn == h.msn && g.mo == h.mo,
			"untagged fields differ at round %d", i);
	}
	ck_assert_uint_gt(seen_tagged, 1000);
	ck_assert_uint_lt(seen_tagged, 19000);
}
END_TEST

START_TEST(hdr_encode_puts_fields_at_rfc5041_offsets)
{
	struct ddp_hdr t = {
		.tagged = true, .last = true, .version = 1, .rsvdulp = 0x42,
		.stag = 0x11223344, .to = 0x0102030405060708ull,
	};
	struct ddp_hdr u = {
		.tagged = false, .last = false, .version = 1, .rsvdulp = 0x43,
		.rsvdulp2 = 0xa1a2a3a4, .qn = 0xb1b2b3b4, .msn = 0xc1c2c3c4,
		.mo = 0xd1d2d3d4,
	};
	static const uint8_t want_t[14] = { 0xc1, 0x42, 0x11, 0x22, 0x33,
					    0x44, 0x01, 0x02, 0x03, 0x04,
					    0x05, 0x06, 0x07, 0x08 };
	static const uint8_t want_u[18] = { 0x01, 0x43, 0xa1, 0xa2, 0xa3,
					    0xa4, 0xb1, 0xb2, 0xb3, 0xb4,
					    0xc1, 0xc2, 0xc3, 0xc4, 0xd1,
					    0xd2, 0xd3, 0xd4 };
	uint8_t out[DDP_MAX_HDR_LEN];

	ck_assert_uint_eq(ddp_hdr_encode(&t, out), 14);
	ck_assert_mem_eq(out, want_t, 14);
	ck_assert_uint_eq(ddp_hdr_encode(&u, out), 18);
	ck_assert_mem_eq(out, want_u, 18);
	/* only the two DV bits of version reach the wire */
	t.version = 0xff;
	t.last = false;
	ddp_hdr_encode(&t, out);
	ck_assert_uint_eq(out[0], 0x83);
}
END_TEST

START_TEST(hdr_encode_seg_advances_to_or_mo_and_keeps_the_rest)
{
	struct ddp_hdr t = {
		.tagged = true, .last = true, .version = 1, .rsvdulp = 0x42,
		.stag = 0x11223344, .to = 0x00000001fffffff0ull,
	};
	struct ddp_hdr u = {
		.last = false, .version = 1, .rsvdulp = 0x43, .qn = 0, .msn = 7,
		.mo = 0,
	};
	const struct ddp_hdr t0 = t, u0 = u;
	uint8_t out[DDP_MAX_HDR_LEN];
	struct ddp_hdr g;

	/* the TO carries across its low 32 bits */
	ck_assert_uint_eq(ddp_hdr_encode_seg(&t, 0x20, out), 14);
	ck_assert_int_eq(ddp_hdr_decode(out, 14, &g), 14);
	ck_assert(g.tagged && g.last);
	ck_assert_uint_eq(g.stag, 0x11223344);
	ck_assert_uint_eq(g.to, 0x0000000200000010ull);
	ck_assert_uint_eq(ddp_hdr_encode_seg(&u, 65000, out), 18);
	ck_assert_int_eq(ddp_hdr_decode(out, 18, &g), 18);
	ck_assert(!g.tagged && !g.last);
	ck_assert_uint_eq(g.mo, 65000);
	ck_assert_uint_eq(g.msn, 7);
	/* the message's own header is left as it was */
	ck_assert_mem_eq(&t, &t0, sizeof(t));
	ck_assert_mem_eq(&u, &u0, sizeof(u));
	/* at offset 0 it is the header ddp_hdr_encode() writes */
	{
		uint8_t whole[DDP_MAX_HDR_LEN];

		ddp_hdr_encode(&t, whole);
		ddp_hdr_encode_seg(&t, 0, out);
		ck_assert_mem_eq(out, whole, 14);
	}
}
END_TEST

START_TEST(hdr_decode_of_every_prefix_shorter_than_the_header_is_eagain)
{
	struct rng r;
	uint8_t out[DDP_MAX_HDR_LEN];

	rng_seed(&r, "hdr_prefix", 0x5eed);
	for (int i = 0; i < 2000; i++) {
		struct ddp_hdr h, g;
		size_t n;

		random_hdr(&r, &h);
		n = ddp_hdr_encode(&h, out);
		for (size_t k = 0; k < n; k++) {
			ssize_t got = ddp_hdr_decode(out, k, &g);

			require(got == -EAGAIN,
				"%s prefix of %zu octets: %zd",
				h.tagged ? "tagged" : "untagged", k, got);
		}
		require(ddp_hdr_decode(out, n, &g) == (ssize_t)n,
			"whole header refused");
	}
}
END_TEST

START_TEST(hdr_decode_ignores_reserved_control_bits)
{
	uint8_t p[18] = { 0x41 | DDP_CTRL_RSVD, 0x43, 0, 0, 0, 0, 0, 0, 0, 0,
			  0, 0, 0, 7, 0, 0, 0, 9 };
	struct ddp_hdr h;

	ck_assert_int_eq(ddp_hdr_decode(p, sizeof(p), &h), 18);
	ck_assert(!h.tagged);
	ck_assert(h.last);
	ck_assert_uint_eq(h.version, 1);
	ck_assert_uint_eq(h.msn, 7);
	ck_assert_uint_eq(h.mo, 9);
}
END_TEST

/* ---- the engine's wire images ---------------------------------------- */

/*
 * Two engines back to back, driven here directly (this suite does not link
 * the pair helper): whatever one gathers is recorded and fed to the other.
 */
#define ENG_WIRE_CAP (1u << 16)

struct eng {
	struct rdmap_qp qp;
	struct ddp_stag_table stags;
	struct rdmap_cqe cqe[64];
	uint32_t n_cqe;
	struct rdmap_term term_rx;
	uint32_t n_term_rx;
	uint8_t *wire;
	size_t wire_len;
	int feed_rc;
};

static void eng_complete(void *arg, const struct rdmap_cqe *cqe,
			 unsigned int n)
{
	struct eng *e = arg;

	for (unsigned int i = 0; i < n; i++) {
		require(e->n_cqe < 64, "completion log full");
		e->cqe[e->n_cqe++] = cqe[i];
	}
}

static void eng_event(void *arg, const struct rdmap_event *ev)
{
	struct eng *e = arg;

	if (ev->type == RDMAP_EV_TERMINATE_RECEIVED) {
		e->term_rx = *ev->term;
		e->n_term_rx++;
	}
}

static const struct rdmap_ops eng_ops = { eng_complete, eng_event };

#define ENG_EMSS 124 /* MULPDU 118: 100 untagged or 104 tagged payload octets */
#define ENG_PD 1

static void eng_init(struct eng *e, bool initiator)
{
	struct rdmap_qp_attr attr = {
		.sq_depth = 16, .rq_depth = 16, .max_sge = 4, .pd = ENG_PD,
		.stags = &e->stags,
	};
	struct rdmap_conn conn = {
		.initiator = initiator, .mulpdu = mpa_mulpdu(ENG_EMSS, false),
		.max_ulpdu = 0xffff, .ird = 4, .ord = 4,
	};

	memset(e, 0, sizeof(*e));
	e->wire = malloc(ENG_WIRE_CAP);
	ck_assert_ptr_nonnull(e->wire);
	ck_assert_int_eq(ddp_stag_table_init(&e->stags, 64), 0);
	ck_assert_int_eq(rdmap_qp_init(&e->qp, &attr, &eng_ops, e), 0);
	ck_assert_int_eq(rdmap_qp_start(&e->qp, &conn), 0);
}

static void eng_fini(struct eng *e)
{
	rdmap_qp_fini(&e->qp);
	ddp_stag_table_destroy(&e->stags);
	free(e->wire);
}

static uint32_t eng_reg(struct eng *e, void *buf, size_t len, uint32_t access)
{
	uint32_t stag;

	ck_assert_int_eq(ddp_mr_register(&e->stags, ENG_PD,
					 (uint64_t)(uintptr_t)buf, buf, len,
					 access, &stag),
			 0);
	return stag;
}

/* Moves what @from has ready to @to; returns the octets moved. */
static size_t eng_move(struct eng *from, struct eng *to)
{
	struct iovec iov[128];
	size_t start = from->wire_len;
	int n = rdmap_tx_gather(&from->qp, iov, 128,
				ENG_WIRE_CAP - from->wire_len);
	int rc;

	for (int i = 0; i < n; i++) {
		memcpy(from->wire + from->wire_len, iov[i].iov_base,
		       iov[i].iov_len);
		from->wire_len += iov[i].iov_len;
	}
	if (from->wire_len == start)
		return 0;
	rdmap_tx_advance(&from->qp, from->wire_len - start);
	rc = rdmap_rx_feed(&to->qp, from->wire + start, from->wire_len - start);
	if (rc && !to->feed_rc)
		to->feed_rc = rc;
	return from->wire_len - start;
}

static void eng_run(struct eng *a, struct eng *b)
{
	for (int i = 0; i < 10000; i++)
		if (!eng_move(a, b) && !eng_move(b, a))
			return;
	ck_abort_msg("engines never went quiet");
}

static void img_untagged(uint8_t *o, bool last, uint8_t op, uint32_t inv,
			 uint32_t qn, uint32_t msn, uint32_t mo)
{
	o[0] = (uint8_t)((last ? 0x40 : 0x00) | 0x01);
	o[1] = (uint8_t)(1 << 6 | op);
	put_be32(o + 2, inv);
	put_be32(o + 6, qn);
	put_be32(o + 10, msn);
	put_be32(o + 14, mo);
}

static void img_tagged(uint8_t *o, bool last, uint8_t op, uint32_t stag,
		       uint64_t to)
{
	o[0] = (uint8_t)(0x80 | (last ? 0x40 : 0x00) | 0x01);
	o[1] = (uint8_t)(1 << 6 | op);
	put_be32(o + 2, stag);
	put_be64(o + 6, to);
}

/*
 * One exchange that puts every opcode on the wire: side 0 posts Send,
 * Send+SE, Send+Inv, Send+SE+Inv, a Write and a Read (side 1 answers with
 * a Read Response); then a forged segment on QN 3 makes side 1 terminate.
 */
struct exchange {
	struct eng s[2];
	uint8_t src[1024], sink[256];	       /* side 0 */
	uint8_t rq[4 * 256], wdst[512], rsrc[512], inv[2][64]; /* side 1 */
	uint32_t sink_stag, wdst_stag, rsrc_stag, inv_stag[2];
	uint64_t write_to, read_to;
	uint8_t forged[22];
	struct ulpdus u[2];
};

#define XCH_SEND_LEN 250
#define XCH_WRITE_LEN 250
#define XCH_READ_LEN 250

static void exchange_run(struct exchange *x)
{
	uint32_t src_stag, rq_stag;
	struct rdmap_sge s_send = { 0 }, s_rq;
	struct mpa_tx t;
	struct iovec in, out[8];
	uint8_t f_markers[MPA_TX_MAX_MARKERS][MPA_MARKER_LEN];
	struct mpa_tx_frame f = { .markers = f_markers };
	uint8_t forged_wire[64];
	size_t fl = 0;
	int cnt;

	eng_init(&x->s[0], true);
	eng_init(&x->s[1], false);
	for (size_t i = 0; i < sizeof(x->src); i++)
		x->src[i] = (uint8_t)(i * 7 + 1);
	memset(x->sink, 0, sizeof(x->sink));
	for (size_t i = 0; i < sizeof(x->rsrc); i++)
		x->rsrc[i] = (uint8_t)(i * 3 + 5);
	src_stag = eng_reg(&x->s[0], x->src, sizeof(x->src), 0);
	x->sink_stag = eng_reg(&x->s[0], x->sink, sizeof(x->sink),
			       DDP_ACCESS_LOCAL_WRITE);
	rq_stag = eng_reg(&x->s[1], x->rq, sizeof(x->rq),
			  DDP_ACCESS_LOCAL_WRITE);
	x->wdst_stag = eng_reg(&x->s[1], x->wdst, sizeof(x->wdst),
			       DDP_ACCESS_REMOTE_WRITE);
	x->rsrc_stag = eng_reg(&x->s[1], x->rsrc, sizeof(x->rsrc),
			       DDP_ACCESS_REMOTE_READ);
	x->inv_stag[0] = eng_reg(&x->s[1], x->inv[0], 64, 0);
	x->inv_stag[1] = eng_reg(&x->s[1], x->inv[1], 64, 0);
	x->write_to = (uint64_t)(uintptr_t)x->wdst + 3;
	x->read_to = (uint64_t)(uintptr_t)x->rsrc + 1;

	for (int i = 0; i < 4; i++) {
		s_rq = (struct rdmap_sge){
			(uint64_t)(uintptr_t)(x->rq + 256 * i), 256, rq_stag };
		require(rdmap_post_recv(&x->s[1].qp,
			&(struct rdmap_recv_wr){ 100 + i, &s_rq, 1 }) == 0,
			"receive %d refused", i);
	}

	{
		static const struct {
			uint8_t op, flags;
			uint32_t off, len;
		} w[] = {
			{ RDMAP_WR_SEND, 0, 0, XCH_SEND_LEN },
			{ RDMAP_WR_SEND, RDMAP_WR_SOLICITED, 300, 10 },
			{ RDMAP_WR_SEND_INV, 0, 400, 20 },
			{ RDMAP_WR_SEND_INV, RDMAP_WR_SOLICITED, 500, 5 },
			{ RDMAP_WR_WRITE, 0, 600, XCH_WRITE_LEN },
		};

		for (int i = 0; i < 5; i++) {
			struct rdmap_send_wr wr = {
				.wr_id = 1 + (uint64_t)i, .op = w[i].op,
				.flags = RDMAP_WR_SIGNALED | w[i].flags,
				.sge = &s_send, .num_sge = 1,
			};

			s_send = (struct rdmap_sge){
				(uint64_t)(uintptr_t)(x->src + w[i].off),
				w[i].len, src_stag };
			if (w[i].op == RDMAP_WR_SEND_INV)
				wr.inv_stag = x->inv_stag[i - 2];
			if (w[i].op == RDMAP_WR_WRITE) {
				wr.rkey = x->wdst_stag;
				wr.remote_addr = x->write_to;
			}
			require(rdmap_post_send(&x->s[0].qp, &wr) == 0,
				"work request %d refused", i);
		}
	}
	{
		struct rdmap_sge sink = { (uint64_t)(uintptr_t)x->sink,
					  XCH_READ_LEN, x->sink_stag };
		struct rdmap_send_wr rd = {
			.wr_id = 6, .op = RDMAP_WR_READ,
			.flags = RDMAP_WR_SIGNALED, .rkey = x->rsrc_stag,
			.remote_addr = x->read_to, .sge = &sink, .num_sge = 1,
		};

		ck_assert_int_eq(rdmap_post_send(&x->s[0].qp, &rd), 0);
	}
	eng_run(&x->s[0], &x->s[1]);
	ck_assert_int_eq(x->s[0].feed_rc, 0);
	ck_assert_int_eq(x->s[1].feed_rc, 0);
	ck_assert_uint_eq(x->s[0].n_cqe, 6);
	ck_assert_uint_eq(x->s[1].n_cqe, 4);
	ck_assert_mem_eq(x->sink, x->rsrc + 1, XCH_READ_LEN);
	ck_assert_mem_eq(x->wdst + 3, x->src + 600, XCH_WRITE_LEN);

	/* a segment on QN 3 (framed as side 0 would) ends side 1's stream */
	img_untagged(x->forged, true, RDMAP_OP_SEND, 0, 3, 5, 0);
	memcpy(x->forged + 18, "abcd", 4);
	t = x->s[0].qp.mpa_tx;
	in = (struct iovec){ x->forged, sizeof(x->forged) };
	cnt = mpa_tx_fpdu(&t, &in, 1, &f, out, 8);
	ck_assert_int_gt(cnt, 0);
	for (int i = 0; i < cnt; i++) {
		memcpy(forged_wire + fl, out[i].iov_base, out[i].iov_len);
		fl += out[i].iov_len;
	}
	ck_assert_int_eq(rdmap_rx_feed(&x->s[1].qp, forged_wire, fl),
			 -IW_EDDP_U_QN);
	eng_move(&x->s[1], &x->s[0]);
	ck_assert_int_eq(x->s[0].feed_rc, -IW_ETERMINATED);

	ulpdus_deframe(&x->u[0], x->s[0].wire, x->s[0].wire_len, false, false);
	ulpdus_deframe(&x->u[1], x->s[1].wire, x->s[1].wire_len, false, false);
}

static void exchange_fini(struct exchange *x)
{
	eng_fini(&x->s[0]);
	eng_fini(&x->s[1]);
	ulpdus_free(&x->u[0]);
	ulpdus_free(&x->u[1]);
}

static struct exchange *exchange_new(void)
{
	struct exchange *x = calloc(1, sizeof(*x));

	ck_assert_ptr_nonnull(x);
	ck_assert_uint_eq(mpa_mulpdu(ENG_EMSS, false), 118);
	exchange_run(x);
	return x;
}

/* Asserts ULPDU @i of @u: header image @img (@hl octets), then @pl octets. */
static void assert_ulpdu(const struct ulpdus *u, uint32_t i, const uint8_t *img,
			 size_t hl, const uint8_t *payload, size_t pl)
{
	require(i < u->n, "ULPDU %u missing (%u on the wire)", i, u->n);
	require(u->ulen[i] == hl + pl, "ULPDU %u has %u octets, not %zu", i,
		u->ulen[i], hl + pl);
	for (size_t k = 0; k < hl; k++)
		require(ulpdu_at(u, i)[k] == img[k],
			"ULPDU %u header octet %zu is %#04x, not %#04x", i, k,
			ulpdu_at(u, i)[k], img[k]);
	require(!pl || memcmp(ulpdu_at(u, i) + hl, payload, pl) == 0,
		"ULPDU %u payload differs", i);
}

START_TEST(wire_send_family_is_untagged_qn0_msn_from_1_mo_per_segment)
{
	struct exchange *x = exchange_new();
	const struct ulpdus *u = &x->u[0];
	uint8_t img[18];

	/* Send of 250 octets: 100 + 100 + 50, L only on the last */
	for (uint32_t k = 0; k < 3; k++) {
		uint32_t pl = k < 2 ? 100 : 50;

		img_untagged(img, k == 2, RDMAP_OP_SEND, 0, 0, 1, 100 * k);
		assert_ulpdu(u, k, img, 18, x->src + 100 * k, pl);
	}
	ck_assert_uint_eq(ulpdu_at(u, 0)[0], 0x01);
	ck_assert_uint_eq(ulpdu_at(u, 0)[1], 0x43);
	ck_assert_uint_eq(ulpdu_at(u, 2)[0], 0x41);
	img_untagged(img, true, RDMAP_OP_SEND_SE, 0, 0, 2, 0);
	assert_ulpdu(u, 3, img, 18, x->src + 300, 10);
	ck_assert_uint_eq(ulpdu_at(u, 3)[1], 0x45);
	img_untagged(img, true, RDMAP_OP_SEND_INV, x->inv_stag[0], 0, 3, 0);
	assert_ulpdu(u, 4, img, 18, x->src + 400, 20);
	ck_assert_uint_eq(ulpdu_at(u, 4)[1], 0x44);
	img_untagged(img, true, RDMAP_OP_SEND_SE_INV, x->inv_stag[1], 0, 4, 0);
	assert_ulpdu(u, 5, img, 18, x->src + 500, 5);
	ck_assert_uint_eq(ulpdu_at(u, 5)[1], 0x46);
	exchange_fini(x);
	free(x);
}
END_TEST

START_TEST(wire_write_is_tagged_with_to_advancing_per_segment)
{
	struct exchange *x = exchange_new();
	const struct ulpdus *u = &x->u[0];
	uint8_t img[14];

	/* Write of 250 octets: 104 + 104 + 42 */
	for (uint32_t k = 0; k < 3; k++) {
		uint32_t pl = k < 2 ? 104 : 42;

		img_tagged(img, k == 2, RDMAP_OP_WRITE, x->wdst_stag,
			   x->write_to + 104 * k);
		assert_ulpdu(u, 6 + k, img, 14, x->src + 600 + 104 * k, pl);
	}
	ck_assert_uint_eq(ulpdu_at(u, 6)[0], 0x81);
	ck_assert_uint_eq(ulpdu_at(u, 8)[0], 0xc1);
	ck_assert_uint_eq(ulpdu_at(u, 8)[1], 0x40);
	exchange_fini(x);
	free(x);
}
END_TEST

START_TEST(wire_read_request_is_qn1_msn1_with_28_octet_body)
{
	struct exchange *x = exchange_new();
	const struct ulpdus *u = &x->u[0];
	uint8_t img[18 + 28];

	img_untagged(img, true, RDMAP_OP_READ_REQ, 0, 1, 1, 0);
	put_be32(img + 18, x->sink_stag);
	put_be64(img + 22, (uint64_t)(uintptr_t)x->sink);
	put_be32(img + 30, XCH_READ_LEN);
	put_be32(img + 34, x->rsrc_stag);
	put_be64(img + 38, x->read_to);
	assert_ulpdu(u, 9, img, sizeof(img), NULL, 0);
	ck_assert_uint_eq(ulpdu_at(u, 9)[1], 0x41);
	/* nothing else left side 0 */
	ck_assert_uint_eq(u->n, 10);
	exchange_fini(x);
	free(x);
}
END_TEST

START_TEST(wire_read_response_targets_the_sink_stag_and_to)
{
	struct exchange *x = exchange_new();
	const struct ulpdus *u = &x->u[1];
	uint64_t sink_to = (uint64_t)(uintptr_t)x->sink;
	uint8_t img[14];

	for (uint32_t k = 0; k < 3; k++) {
		uint32_t pl = k < 2 ? 104 : 42;

		img_tagged(img, k == 2, RDMAP_OP_READ_RESP, x->sink_stag,
			   sink_to + 104 * k);
		assert_ulpdu(u, k, img, 14, x->rsrc + 1 + 104 * k, pl);
	}
	ck_assert_uint_eq(ulpdu_at(u, 2)[0], 0xc1);
	ck_assert_uint_eq(ulpdu_at(u, 2)[1], 0x42);
	exchange_fini(x);
	free(x);
}
END_TEST

START_TEST(wire_terminate_is_qn2_msn1_with_rfc_control_word_and_ddp_header)
{
	struct exchange *x = exchange_new();
	const struct ulpdus *u = &x->u[1];
	uint8_t img[18 + 4 + 2 + 18];

	img_untagged(img, true, RDMAP_OP_TERMINATE, 0, 2, 1, 0);
	img[18] = 1 << 4 | 2; /* DDP layer, untagged buffer error */
	img[19] = 0x01;	      /* invalid QN */
	img[20] = 0x80 | 0x40; /* M and D */
	img[21] = 0;
	put_be16(img + 22, sizeof(x->forged));
	memcpy(img + 24, x->forged, 18);
	assert_ulpdu(u, 3, img, sizeof(img), NULL, 0);
	ck_assert_uint_eq(ulpdu_at(u, 3)[1], 0x47);
	ck_assert_uint_eq(u->n, 4);
	/* side 0 reads it back the RFC way */
	ck_assert_uint_eq(x->s[0].n_term_rx, 1);
	ck_assert_uint_eq(x->s[0].term_rx.layer, 1);
	ck_assert_uint_eq(x->s[0].term_rx.etype, 2);
	ck_assert_uint_eq(x->s[0].term_rx.ecode, 1);
	exchange_fini(x);
	free(x);
}
END_TEST

/* ---- the DDP headers of real siw traffic ------------------------------ */

/*
 * Loads one direction of a fixture connection and de-frames what follows
 * its MPA Request (dir 0) or Reply (dir 1) into @u.  Returns false for a
 * connection that never got past the handshake.
 */
static bool load_siw(const char *name, int dir, struct ulpdus *u)
{
	char file[256];
	struct mpa_frame req, rep;
	uint8_t *b[2];
	size_t len[2];
	ssize_t used[2];
	bool ok;

	for (int d = 0; d < 2; d++) {
		snprintf(file, sizeof(file), "%s.%s.bin", name,
			 d ? "r2i" : "i2r");
		b[d] = fixture_load(file, &len[d]);
	}
	used[0] = len[0] ? mpa_frame_decode(b[0], len[0], false, 512, &req)
			 : -EAGAIN;
	used[1] = len[1] ? mpa_frame_decode(b[1], len[1], true, 512, &rep)
			 : -EAGAIN;
	ok = used[0] > 0 && used[1] > 0 && !rep.r;
	if (ok)
		ulpdus_deframe(u, b[dir] + used[dir],
			       len[dir] - (size_t)used[dir], req.c || rep.c,
			       false);
	free(b[0]);
	free(b[1]);
	return ok;
}

static bool is_send_op(uint8_t op)
{
	return op >= RDMAP_OP_SEND && op <= RDMAP_OP_SEND_SE_INV;
}

struct siw_counts {
	unsigned int total, tagged, per_qn[3];
};

/* The property test's rules for one ULPDU; @at names it in messages. */
static void check_siw_ulpdu(const char *at, const uint8_t *p, uint16_t len,
			    struct ddp_queue q[3], struct siw_counts *c)
{
	struct ddp_hdr h;
	ssize_t hl = ddp_hdr_decode(p, len, &h);
	uint8_t op = h.rsvdulp & RDMAP_CTRL_OPCODE;
	size_t pl;

	require(hl > 0, "%s: short header", at);
	pl = len - (size_t)hl;
	require(h.version == 1, "%s: DV %u", at, h.version);
	require((p[0] & DDP_CTRL_RSVD) == 0, "%s: DDP reserved bits", at);
	require(h.rsvdulp >> 6 == 1 && (h.rsvdulp & RDMAP_CTRL_RSVD) == 0,
		"%s: RDMAP control %#x", at, h.rsvdulp);
	c->total++;
	if (h.tagged) {
		require(op == RDMAP_OP_WRITE || op == RDMAP_OP_READ_RESP,
			"%s: tagged opcode %u", at, op);
		c->tagged++;
		return;
	}
	require((is_send_op(op) && h.qn == 0) ||
			(op == RDMAP_OP_READ_REQ && h.qn == 1 && h.last &&
			 pl == RDMAP_READ_REQ_LEN) ||
			(op == RDMAP_OP_TERMINATE && h.qn == 2),
		"%s: opcode %u on QN %u", at, op, h.qn);
	require(ddp_untagged_check(&q[h.qn], &h, pl, true, UINT32_MAX) == 0,
		"%s: QN %u MSN %u MO %u refused", at, h.qn, h.msn, h.mo);
	ddp_untagged_advance(&q[h.qn], &h, pl);
	c->per_qn[h.qn]++;
}

/*
 * Every ULPDU siw sent in every fixture: DDP and RDMAP version 1, reserved
 * bits clear, tagged segments carry Write or Read Response, untagged ones
 * the opcode that belongs to their queue, and every untagged queue's MSN
 * and MO progress the way our own receive checks demand.
 */
START_TEST(siw_fpdus_are_version_1_with_opcodes_matching_model_and_queue)
{
	char path[4096], line[256], at[200];
	struct siw_counts c = { 0 };
	FILE *list;

	snprintf(path, sizeof(path), "%s/siw-fixtures.txt", TEST_DATA_DIR);
	list = fopen(path, "r");
	ck_assert_ptr_nonnull(list);
	while (fgets(line, sizeof(line), list)) {
		char name[128];
		unsigned int want[2];

		if (line[0] == '#' ||
		    sscanf(line, "%127s %u %u", name, &want[0], &want[1]) != 3)
			continue;
		for (int dir = 0; dir < 2; dir++) {
			struct ddp_queue q[3];
			struct ulpdus u;

			if (!load_siw(name, dir, &u)) {
				require(want[0] + want[1] == 0,
					"%s: no handshake, yet FPDUs", name);
				break;
			}
			require(u.n == want[dir],
				"%s dir %d: %u ULPDUs, not %u", name, dir,
				u.n, want[dir]);
			for (int k = 0; k < 3; k++)
				ddp_queue_init(&q[k]);
			for (uint32_t i = 0; i < u.n; i++) {
				snprintf(at, sizeof(at), "%s %s #%u", name,
					 dir ? "r2i" : "i2r", i);
				check_siw_ulpdu(at, ulpdu_at(&u, i), u.ulen[i],
						q, &c);
			}
			ulpdus_free(&u);
		}
	}
	fclose(list);
	/* the table lists 81 FPDUs; every kind but Terminate is among them */
	ck_assert_uint_eq(c.total, 81);
	/* Read Responses: rping 1 + 1 + 5, perftest 8; Writes: 5 + 8 + 4 */
	ck_assert_uint_eq(c.tagged, 32);
	/* Read Requests: rping 1 + 1 + 5, perftest 8 */
	ck_assert_uint_eq(c.per_qn[1], 15);
	ck_assert_uint_eq(c.per_qn[0], 34);
	ck_assert_uint_eq(c.per_qn[2], 0);
}
END_TEST

START_TEST(siw_client_rping_first_fpdu_is_buffer_advertisement_send)
{
	static const uint8_t hdr[18] = { 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0,
					 0, 0, 0, 1, 0, 0, 0, 0 };
	struct ulpdus u;
	uint8_t *raw;
	size_t raw_len;
	const uint8_t *p;

	/* the Request is 24 octets; the FPDU follows at once */
	raw = fixture_load("siw-client-rping.i2r.bin", &raw_len);
	ck_assert_uint_eq(raw_len, 64);
	ck_assert_uint_eq(get_be16(raw + 24), 34);
	free(raw);

	ck_assert(load_siw("siw-client-rping", 0, &u));
	ck_assert_uint_eq(u.n, 1);
	ck_assert_uint_eq(u.ulen[0], 18 + 16);
	p = ulpdu_at(&u, 0);
	ck_assert_mem_eq(p, hdr, 18);
	/* rping's advertisement: addr be64, rkey be32, size be32 */
	ck_assert_uint_eq(get_be64(p + 18), 0x0000560a0a5b1370ull);
	ck_assert_uint_eq(get_be32(p + 26), 0x81c24b00);
	ck_assert_uint_eq(get_be32(p + 30), 64);
	ulpdus_free(&u);
}
END_TEST

START_TEST(siw_server_rping_crc_read_request_and_its_response)
{
	struct ulpdus r2i, i2r;
	const uint8_t *p;
	struct ddp_hdr h;

	ck_assert(load_siw("siw-server-rping-crc", 1, &r2i));
	ck_assert_uint_eq(r2i.n, 2);
	p = ulpdu_at(&r2i, 0);
	ck_assert_uint_eq(r2i.ulen[0], 18 + 28);
	ck_assert_int_eq(ddp_hdr_decode(p, r2i.ulen[0], &h), 18);
	ck_assert(!h.tagged && h.last);
	ck_assert_uint_eq(h.rsvdulp, 0x41);
	ck_assert_uint_eq(h.qn, 1);
	ck_assert_uint_eq(h.msn, 1);
	ck_assert_uint_eq(h.mo, 0);
	ck_assert_uint_eq(get_be32(p + 18), 0x9f27e700);
	ck_assert_uint_eq(get_be64(p + 22), 0x00007f677c000e00ull);
	ck_assert_uint_eq(get_be32(p + 30), 64);
	ck_assert_uint_eq(get_be32(p + 34), 0x11223344);
	ck_assert_uint_eq(get_be64(p + 38), 0x1000);
	/* then its own Send: QN 0, MSN 1, 16 zero octets */
	p = ulpdu_at(&r2i, 1);
	ck_assert_int_eq(ddp_hdr_decode(p, r2i.ulen[1], &h), 18);
	ck_assert_uint_eq(h.rsvdulp, 0x43);
	ck_assert_uint_eq(h.qn, 0);
	ck_assert_uint_eq(h.msn, 1);
	ck_assert_uint_eq(r2i.ulen[1], 34);

	/* the initiator answers at the sink: STag, TO, 64 octets */
	ck_assert(load_siw("siw-server-rping-crc", 0, &i2r));
	ck_assert_uint_eq(i2r.n, 2);
	p = ulpdu_at(&i2r, 1);
	ck_assert_uint_eq(i2r.ulen[1], 14 + 64);
	ck_assert_int_eq(ddp_hdr_decode(p, i2r.ulen[1], &h), 14);
	ck_assert(h.tagged && h.last);
	ck_assert_uint_eq(h.rsvdulp, 0x42);
	ck_assert_uint_eq(h.stag, 0x9f27e700);
	ck_assert_uint_eq(h.to, 0x00007f677c000e00ull);
	for (int i = 0; i < 64; i++)
		require(p[14 + i] == i, "response octet %d is %u", i,
			p[14 + i]);
	ulpdus_free(&r2i);
	ulpdus_free(&i2r);
}
END_TEST

/*
 * perftest over lo: MSS 64k, so every 4096-octet message travels as one
 * segment with L set; the buffer (and so STag and TO) is the same each time.
 */
static void assert_siw_4k_messages(const char *name, int dir, uint8_t rdmap,
				   uint32_t stag, uint64_t to)
{
	struct ulpdus u;

	ck_assert(load_siw(name, dir, &u));
	ck_assert_uint_eq(u.n, 8);
	for (uint32_t i = 0; i < u.n; i++) {
		struct ddp_hdr h;
		const uint8_t *p = ulpdu_at(&u, i);
		bool tagged = p[0] & DDP_CTRL_T;

		require(u.ulen[i] == (tagged ? 14 : 18) + 4096 &&
				p[0] == (tagged ? 0xc1 : 0x41) &&
				p[1] == rdmap &&
				ddp_hdr_decode(p, u.ulen[i], &h) > 0,
			"%s #%u: %u octets, control %#x %#x", name, i,
			u.ulen[i], p[0], p[1]);
		if (tagged)
			require(h.stag == stag && h.to == to,
				"%s #%u: STag %#x TO %#llx", name, i, h.stag,
				(unsigned long long)h.to);
		else
			require(h.qn == 0 && h.msn == i + 1 && h.mo == 0,
				"%s #%u: QN %u MSN %u MO %u", name, i, h.qn,
				h.msn, h.mo);
	}
	ulpdus_free(&u);
}

START_TEST(siw_perftest_4k_writes_reads_and_sends_are_single_segments)
{
	struct ulpdus u;

	assert_siw_4k_messages("siw-lo-write-4k", 0, 0x40, 0xa6fb5300,
			       0x00005603a33e7000ull);
	assert_siw_4k_messages("siw-lo-read-4k", 1, 0x42, 0x15806c00,
			       0x000055913d4c2000ull);
	assert_siw_4k_messages("siw-lo-send-4k", 0, 0x43, 0, 0);

	/* the 8 Read Requests behind those responses: QN 1, MSN 1..8 */
	ck_assert(load_siw("siw-lo-read-4k", 0, &u));
	ck_assert_uint_eq(u.n, 8);
	for (uint32_t i = 0; i < u.n; i++) {
		const uint8_t *p = ulpdu_at(&u, i);

		require(u.ulen[i] == 46 && p[0] == 0x41 && p[1] == 0x41 &&
				get_be32(p + 6) == 1 &&
				get_be32(p + 10) == i + 1,
			"Read Request #%u: header", i);
		require(get_be32(p + 18) == 0x15806c00 &&
				get_be64(p + 22) == 0x000055913d4c2000ull &&
				get_be32(p + 30) == 4096 &&
				get_be32(p + 34) == 0x483f2f00 &&
				get_be64(p + 38) == 0x0000561d11d8a000ull,
			"Read Request #%u: body", i);
	}
	ulpdus_free(&u);

	/* ib_send_bw's other direction: four 4-octet Writes */
	ck_assert(load_siw("siw-lo-send-4k", 1, &u));
	ck_assert_uint_eq(u.n, 4);
	for (uint32_t i = 0; i < u.n; i++) {
		const uint8_t *p = ulpdu_at(&u, i);

		require(u.ulen[i] == 18 && p[0] == 0xc1 && p[1] == 0x40 &&
				get_be32(p + 2) == 0xfbe93300 &&
				get_be64(p + 6) == 0x0000562bc8c4ca14ull,
			"Write #%u differs", i);
	}
	ulpdus_free(&u);
}
END_TEST

/* ---- STag table and tagged checks (stag.c) ---------------------------- */

static uint8_t region[256];

static uint32_t reg(struct ddp_stag_table *t, uint32_t pd, uint64_t va,
		    uint64_t len, uint32_t access)
{
	uint32_t stag;

	int rc = ddp_mr_register(t, pd, va, region, len, access, &stag);

	require(rc == 0, "registration refused: %d", rc);
	return stag;
}

static enum ddp_mr_fault check(struct ddp_stag_table *t, uint32_t stag,
			       uint32_t pd, uint32_t access, uint64_t to,
			       uint64_t len)
{
	uint8_t *where = NULL;

	return ddp_mr_check(t, stag, pd, access, to, len, &where);
}

START_TEST(stag_index_is_never_zero_and_stag_is_index_then_key)
{
	struct ddp_stag_table t;
	bool seen[17] = { false };

	ck_assert_int_eq(ddp_stag_table_init(&t, 16), 0);
	for (int i = 0; i < 16; i++) {
		uint32_t stag = reg(&t, 1, 0x1000, 16, DDP_ACCESS_REMOTE_READ);
		uint32_t idx = stag >> 8;

		require(DDP_STAG_INDEX(stag) == idx &&
				DDP_STAG_KEY(stag) == (stag & 0xff),
			"STag %#x: index/key macros disagree", stag);
		require(idx >= 1 && idx <= 16 && !seen[idx],
			"STag %#x: index %u out of range or reused", stag, idx);
		seen[idx] = true;
		require(check(&t, stag, 1, DDP_ACCESS_REMOTE_READ, 0x1000,
			      16) == DDP_MR_OK, "STag %#x refused", stag);
	}
	/* index 0 and indices beyond the table name nothing, whatever key */
	for (uint32_t key = 0; key < 256; key++) {
		require(check(&t, key, 1, 0, 0x1000, 1) == DDP_MR_BAD_STAG,
			"index 0 key %u accepted", key);
		require(check(&t, 17u << 8 | key, 1, 0, 0x1000, 1) ==
				DDP_MR_BAD_STAG, "index 17 accepted");
		require(check(&t, 0xffffffu << 8 | key, 1, 0, 0x1000, 1) ==
				DDP_MR_BAD_STAG, "index 2^24-1 accepted");
	}
	ddp_stag_table_destroy(&t);
}
END_TEST

START_TEST(stag_lookup_demands_the_exact_stag)
{
	struct ddp_stag_table t;
	uint32_t a, b;

	ck_assert_int_eq(ddp_stag_table_init(&t, 8), 0);
	a = reg(&t, 1, 0x1000, 16, DDP_ACCESS_REMOTE_WRITE);
	b = reg(&t, 1, 0x1000, 16, DDP_ACCESS_REMOTE_WRITE);
	ck_assert_uint_ne(a >> 8, b >> 8);
	for (uint32_t key = 0; key < 256; key++) {
		uint32_t other = (a & ~0xffu) | key;

		if (key == DDP_STAG_KEY(a))
			continue;
		require(check(&t, other, 1, DDP_ACCESS_REMOTE_WRITE, 0x1000,
			      16) == DDP_MR_BAD_STAG,
			"same index, key %#x accepted", key);
	}
	/* an unused index with the right key */
	ck_assert_int_eq(check(&t, (5u << 8) | DDP_STAG_KEY(a), 1,
			       DDP_ACCESS_REMOTE_WRITE, 0x1000, 16),
			 DDP_MR_BAD_STAG);
	ck_assert_int_eq(check(&t, a, 1, DDP_ACCESS_REMOTE_WRITE, 0x1000, 16),
			 DDP_MR_OK);
	ddp_stag_table_destroy(&t);
}
END_TEST

START_TEST(stag_deregistered_or_invalidated_is_bad_stag)
{
	struct ddp_stag_table t;
	uint32_t a, b;

	ck_assert_int_eq(ddp_stag_table_init(&t, 8), 0);
	a = reg(&t, 1, 0x1000, 16, DDP_ACCESS_REMOTE_WRITE);
	b = reg(&t, 1, 0x1000, 16, DDP_ACCESS_REMOTE_WRITE);
	ck_assert_int_eq(ddp_mr_deregister(&t, a), 0);
	ck_assert_int_eq(check(&t, a, 1, DDP_ACCESS_REMOTE_WRITE, 0x1000, 16),
			 DDP_MR_BAD_STAG);
	ck_assert_int_eq(check(&t, a, 1, 0, 0x1000, 0), DDP_MR_BAD_STAG);
	ck_assert_int_eq(ddp_mr_deregister(&t, a), -ENOENT);
	ck_assert_int_eq(ddp_mr_invalidate(&t, b, 1), 0);
	ck_assert_int_eq(check(&t, b, 1, DDP_ACCESS_REMOTE_WRITE, 0x1000, 16),
			 DDP_MR_BAD_STAG);
	ck_assert_int_eq(check(&t, b, 1, 0, 0x1000, 0), DDP_MR_BAD_STAG);
	/* an invalidated region is still registered and can be released */
	ck_assert_int_eq(ddp_mr_deregister(&t, b), 0);
	ck_assert_int_eq(ddp_mr_deregister(&t, b), -ENOENT);
	ddp_stag_table_destroy(&t);
}
END_TEST

START_TEST(stag_full_table_returns_enomem_until_a_slot_is_freed)
{
	struct ddp_stag_table t;
	uint32_t s[4], extra;

	ck_assert_int_eq(ddp_stag_table_init(&t, 4), 0);
	for (int i = 0; i < 4; i++)
		s[i] = reg(&t, 1, 0, 16, 0);
	ck_assert_int_eq(ddp_mr_register(&t, 1, 0, region, 16, 0, &extra),
			 -ENOMEM);
	ck_assert_int_eq(ddp_mr_deregister(&t, s[2]), 0);
	extra = reg(&t, 1, 0, 16, 0);
	ck_assert_uint_eq(extra >> 8, s[2] >> 8);
	ck_assert_int_eq(ddp_mr_register(&t, 1, 0, region, 16, 0, &extra),
			 -ENOMEM);
	ddp_stag_table_destroy(&t);
}
END_TEST

START_TEST(stag_keys_are_not_all_equal_over_256_registrations)
{
	struct ddp_stag_table t;
	unsigned int count[256] = { 0 }, distinct = 0;

	ck_assert_int_eq(ddp_stag_table_init(&t, 256), 0);
	for (int i = 0; i < 256; i++)
		count[DDP_STAG_KEY(reg(&t, 1, 0, 16, 0))]++;
	for (int k = 0; k < 256; k++)
		distinct += count[k] != 0;
	/* 256 draws from a CSPRNG: all equal has probability 2^-2040 */
	ck_assert_uint_gt(distinct, 1);
	ddp_stag_table_destroy(&t);
}
END_TEST

START_TEST(stag_table_and_register_refuse_impossible_sizes)
{
	struct ddp_stag_table t;
	uint32_t s;

	ck_assert_int_eq(ddp_stag_table_init(&t, 0), -EINVAL);
	ck_assert_int_eq(ddp_stag_table_init(&t, DDP_MAX_REGIONS), -EINVAL);
	ck_assert_int_eq(ddp_stag_table_init(&t, 4), 0);
	/* a region may end at 2^64 - 1 but not pass it */
	ck_assert_int_eq(ddp_mr_register(&t, 1, UINT64_MAX - 7, region, 9, 0,
					 &s), -EINVAL);
	ck_assert_int_eq(ddp_mr_register(&t, 1, UINT64_MAX - 7, region, 8, 0,
					 &s), 0);
	ddp_stag_table_destroy(&t);
}
END_TEST

#define RVA 0x1000ull
#define RLEN 256ull
#define RW (DDP_ACCESS_REMOTE_WRITE | DDP_ACCESS_LOCAL_WRITE)

START_TEST(mr_check_reports_each_fault_alone)
{
	struct ddp_stag_table t;
	uint8_t *where = NULL;
	uint32_t s, top;

	ck_assert_int_eq(ddp_stag_table_init(&t, 8), 0);
	s = reg(&t, 1, RVA, RLEN, RW);
	top = reg(&t, 1, 0ull - RLEN, RLEN, RW);
	ck_assert_int_eq(ddp_mr_check(&t, s, 1, DDP_ACCESS_REMOTE_WRITE, RVA,
				      RLEN, &where), DDP_MR_OK);
	ck_assert_ptr_eq(where, region);
	ck_assert_int_eq(check(&t, s ^ 0x1, 1, DDP_ACCESS_REMOTE_WRITE, RVA,
			       16), DDP_MR_BAD_STAG);
	ck_assert_int_eq(check(&t, s, 2, DDP_ACCESS_REMOTE_WRITE, RVA, 16),
			 DDP_MR_WRONG_PD);
	ck_assert_int_eq(check(&t, s, 1, DDP_ACCESS_REMOTE_READ, RVA, 16),
			 DDP_MR_NO_ACCESS);
	/* every access right asked for must be there */
	ck_assert_int_eq(check(&t, s, 1, DDP_ACCESS_REMOTE_WRITE |
					      DDP_ACCESS_REMOTE_READ, RVA, 16),
			 DDP_MR_NO_ACCESS);
	ck_assert_int_eq(check(&t, s, 1, 0, RVA, 16), DDP_MR_OK);
	/* wrap, in a region that ends at 2^64 - 1 */
	ck_assert_int_eq(check(&t, top, 1, DDP_ACCESS_REMOTE_WRITE,
			       0ull - 16, 32), DDP_MR_TO_WRAP);
	ck_assert_int_eq(check(&t, top, 1, DDP_ACCESS_REMOTE_WRITE,
			       0ull - 16, 16), DDP_MR_OK);
	ck_assert_int_eq(check(&t, s, 1, DDP_ACCESS_REMOTE_WRITE,
			       RVA + RLEN - 8, 16), DDP_MR_OUT_OF_BOUNDS);
	ddp_stag_table_destroy(&t);
}
END_TEST

START_TEST(mr_check_reports_the_first_fault_in_rfc_order)
{
	struct ddp_stag_table t;
	uint32_t s, top;

	ck_assert_int_eq(ddp_stag_table_init(&t, 8), 0);
	s = reg(&t, 1, RVA, RLEN, DDP_ACCESS_REMOTE_WRITE);
	top = reg(&t, 1, 0ull - RLEN, RLEN, DDP_ACCESS_REMOTE_WRITE);
	/* bad STag + other PD + no right + wrap */
	ck_assert_int_eq(check(&t, top ^ 0x80, 2, DDP_ACCESS_REMOTE_READ,
			       0ull - 8, 16), DDP_MR_BAD_STAG);
	/* other PD + no right + wrap */
	ck_assert_int_eq(check(&t, top, 2, DDP_ACCESS_REMOTE_READ, 0ull - 8,
			       16), DDP_MR_WRONG_PD);
	/* no right + wrap */
	ck_assert_int_eq(check(&t, top, 1, DDP_ACCESS_REMOTE_READ, 0ull - 8,
			       16), DDP_MR_NO_ACCESS);
	/* wrap (which is also out of bounds) */
	ck_assert_int_eq(check(&t, top, 1, DDP_ACCESS_REMOTE_WRITE, 0ull - 8,
			       16), DDP_MR_TO_WRAP);
	ck_assert_int_eq(check(&t, s, 1, DDP_ACCESS_REMOTE_WRITE, 0ull - 8,
			       16), DDP_MR_TO_WRAP);
	/* other PD + out of bounds; no right + out of bounds */
	ck_assert_int_eq(check(&t, s, 2, DDP_ACCESS_REMOTE_WRITE, 0, 16),
			 DDP_MR_WRONG_PD);
	ck_assert_int_eq(check(&t, s, 1, DDP_ACCESS_REMOTE_READ, 0, 16),
			 DDP_MR_NO_ACCESS);
	/* an invalidated STag is bad before anything else is looked at */
	ck_assert_int_eq(ddp_mr_invalidate(&t, s, 1), 0);
	ck_assert_int_eq(check(&t, s, 2, DDP_ACCESS_REMOTE_READ, 0, 16),
			 DDP_MR_BAD_STAG);
	ddp_stag_table_destroy(&t);
}
END_TEST

START_TEST(mr_check_bounds_edges)
{
	struct ddp_stag_table t;
	uint8_t *where = NULL;
	uint32_t s;
	uint32_t a = DDP_ACCESS_REMOTE_WRITE;

	ck_assert_int_eq(ddp_stag_table_init(&t, 8), 0);
	s = reg(&t, 1, RVA, RLEN, RW);
	/* the last octet is in, one past it is not */
	ck_assert_int_eq(ddp_mr_check(&t, s, 1, a, RVA + RLEN - 1, 1, &where),
			 DDP_MR_OK);
	ck_assert_ptr_eq(where, region + RLEN - 1);
	ck_assert_int_eq(check(&t, s, 1, a, RVA + RLEN, 1),
			 DDP_MR_OUT_OF_BOUNDS);
	ck_assert_int_eq(check(&t, s, 1, a, RVA + RLEN - 1, 2),
			 DDP_MR_OUT_OF_BOUNDS);
	/* the whole region, and one octet more */
	ck_assert_int_eq(check(&t, s, 1, a, RVA, RLEN), DDP_MR_OK);
	ck_assert_int_eq(check(&t, s, 1, a, RVA, RLEN + 1),
			 DDP_MR_OUT_OF_BOUNDS);
	ck_assert_int_eq(check(&t, s, 1, a, RVA + 1, RLEN),
			 DDP_MR_OUT_OF_BOUNDS);
	/* below the base */
	ck_assert_int_eq(check(&t, s, 1, a, RVA - 1, 1), DDP_MR_OUT_OF_BOUNDS);
	ck_assert_int_eq(check(&t, s, 1, a, RVA - 1, 2), DDP_MR_OUT_OF_BOUNDS);
	ck_assert_int_eq(check(&t, s, 1, a, 0, 0), DDP_MR_OUT_OF_BOUNDS);
	/* zero length at the very end is in; past it is not */
	ck_assert_int_eq(ddp_mr_check(&t, s, 1, a, RVA + RLEN, 0, &where),
			 DDP_MR_OK);
	ck_assert_ptr_eq(where, region + RLEN);
	ck_assert_int_eq(check(&t, s, 1, a, RVA + RLEN + 1, 0),
			 DDP_MR_OUT_OF_BOUNDS);
	/* huge lengths do not wrap the bounds arithmetic */
	ck_assert_int_eq(check(&t, s, 1, a, RVA + 1, UINT64_MAX - RVA - 1),
			 DDP_MR_OUT_OF_BOUNDS);
	ddp_stag_table_destroy(&t);
}
END_TEST

START_TEST(mr_invalidate_needs_a_valid_stag_of_the_same_pd_once)
{
	struct ddp_stag_table t;
	uint32_t s, other;

	ck_assert_int_eq(ddp_stag_table_init(&t, 8), 0);
	s = reg(&t, 1, RVA, RLEN, RW);
	other = reg(&t, 1, RVA, RLEN, RW);
	ck_assert_int_eq(ddp_mr_deregister(&t, other), 0);
	ck_assert_int_eq(ddp_mr_invalidate(&t, s, 2), -IW_ERDMAP_INVALIDATE);
	ck_assert_int_eq(check(&t, s, 1, DDP_ACCESS_REMOTE_WRITE, RVA, 1),
			 DDP_MR_OK);
	ck_assert_int_eq(ddp_mr_invalidate(&t, s ^ 0x1, 1),
			 -IW_ERDMAP_INVALIDATE);
	ck_assert_int_eq(ddp_mr_invalidate(&t, other, 1),
			 -IW_ERDMAP_INVALIDATE);
	ck_assert_int_eq(check(&t, s, 1, DDP_ACCESS_REMOTE_WRITE, RVA, 1),
			 DDP_MR_OK);
	ck_assert_int_eq(ddp_mr_invalidate(&t, s, 1), 0);
	ck_assert_int_eq(ddp_mr_invalidate(&t, s, 1), -IW_ERDMAP_INVALIDATE);
	ck_assert_int_eq(check(&t, s, 1, DDP_ACCESS_REMOTE_WRITE, RVA, 1),
			 DDP_MR_BAD_STAG);
	ck_assert_int_eq(check(&t, s, 1, DDP_ACCESS_LOCAL_WRITE, RVA, 1),
			 DDP_MR_BAD_STAG);
	ddp_stag_table_destroy(&t);
}
END_TEST

/*
 * A region being deregistered refuses new work that names it, while the
 * peer's accesses and the sink of a Read already posted go on; given up,
 * it takes work again.
 */
START_TEST(mr_closing_refuses_posts_but_not_the_peer)
{
	struct ddp_stag_table t;
	uint32_t s;

	ck_assert_int_eq(ddp_stag_table_init(&t, 8), 0);
	s = reg(&t, 1, RVA, RLEN, RW);
	ck_assert_int_eq(ddp_mr_set_closing(&t, s ^ 0x1, true), -ENOENT);
	ck_assert_int_eq(ddp_mr_set_closing(&t, s, true), 0);
	ck_assert_int_eq(check(&t, s, 1, DDP_ACCESS_LOCAL_WRITE |
				   DDP_ACCESS_POST, RVA, 1),
			 DDP_MR_BAD_STAG);
	ck_assert_int_eq(check(&t, s, 1, DDP_ACCESS_POST, RVA, 1),
			 DDP_MR_BAD_STAG);
	ck_assert_int_eq(check(&t, s, 1, DDP_ACCESS_REMOTE_WRITE, RVA, 1),
			 DDP_MR_OK);
	ck_assert_int_eq(check(&t, s, 1, DDP_ACCESS_LOCAL_WRITE, RVA, 1),
			 DDP_MR_OK);
	ck_assert_int_eq(ddp_mr_set_closing(&t, s, false), 0);
	ck_assert_int_eq(check(&t, s, 1, DDP_ACCESS_LOCAL_WRITE |
				   DDP_ACCESS_POST, RVA, 1),
			 DDP_MR_OK);
	/* the POST mark is no access right of its own */
	s = reg(&t, 1, RVA, RLEN, 0);
	ck_assert_int_eq(check(&t, s, 1, DDP_ACCESS_POST, RVA, 1), DDP_MR_OK);
	ddp_stag_table_destroy(&t);
}
END_TEST

/*
 * Checks read the table without a lock: while another thread registers
 * and deregisters over and over in the same slot, alternating two
 * regions, a check never answers with a mix of the two.
 */
#define FLIP_ROUNDS 20000
#define FLIP_SEEN 1000 /* checks that found a registration, at least */
struct flip {
	struct ddp_stag_table t;
	uint8_t a[64], b[4096];
	_Atomic uint32_t stag;
	atomic_uint ok; /* the reader's checks that found one */
	atomic_bool done;
};

/*
 * Flips at least FLIP_ROUNDS times, and on until the reader has seen a
 * registration FLIP_SEEN times (on a busy machine it may barely run).
 */
static void *flip_writer(void *arg)
{
	struct flip *f = arg;

	for (int i = 0; i < FLIP_ROUNDS || atomic_load(&f->ok) < FLIP_SEEN;
	     i++) {
		uint32_t s;
		bool big = i & 1;

		ck_assert_int_eq(ddp_mr_deregister(&f->t, atomic_load(&f->stag)),
				 0);
		ck_assert_int_eq(ddp_mr_register(&f->t, 1, big ? 0x9000 : 0x1000,
						 big ? f->b : f->a,
						 big ? sizeof(f->b) : sizeof(f->a),
						 RW, &s),
				 0);
		atomic_store(&f->stag, s);
		if (i % 64 == 63)
			sched_yield(); /* let the reader in now and then */
	}
	atomic_store(&f->done, true);
	return NULL;
}

START_TEST(mr_check_never_sees_a_torn_registration)
{
	static struct flip f;
	pthread_t th;
	uint32_t s;

	ck_assert_int_eq(ddp_stag_table_init(&f.t, 4), 0);
	ck_assert_int_eq(ddp_mr_register(&f.t, 1, 0x1000, f.a, sizeof(f.a), RW,
					 &s),
			 0);
	atomic_init(&f.stag, s);
	atomic_init(&f.ok, 0);
	atomic_init(&f.done, false);
	ck_assert_int_eq(pthread_create(&th, NULL, flip_writer, &f), 0);
	while (!atomic_load(&f.done)) {
		uint32_t stag = atomic_load(&f.stag);

		for (uint64_t to = 0x1000; to < 0xa000; to += 0x800) {
			uint8_t *w = NULL;

			if (ddp_mr_check(&f.t, stag, 1, DDP_ACCESS_REMOTE_WRITE,
					 to, 1, &w) != DDP_MR_OK)
				continue;
			atomic_fetch_add(&f.ok, 1);
			/* one registration, whole: its base with its offset */
			ck_assert(w == f.a + (to - 0x1000) ||
				  w == f.b + (to - 0x9000));
			ck_assert(w == f.a ? to == 0x1000
					   : to >= 0x9000 && to < 0xa000);
		}
	}
	pthread_join(th, NULL);
	ck_assert_uint_ge(atomic_load(&f.ok), FLIP_SEEN);
	ddp_stag_table_destroy(&f.t);
}
END_TEST

/*
 * A cached check answers as an uncached one would: for another STag, and
 * at once after the registration is invalidated, closing, or gone.
 */
START_TEST(mr_check_cached_follows_every_revocation)
{
	struct ddp_stag_table t;
	struct ddp_mr_cache c = { 0 };
	uint8_t *w = NULL;
	uint32_t s, other, third;

	ck_assert_int_eq(ddp_stag_table_init(&t, 8), 0);
	s = reg(&t, 1, RVA, RLEN, RW);
	other = reg(&t, 1, RVA + 0x1000, RLEN, RW);
	third = reg(&t, 1, RVA, RLEN, RW);
	ck_assert_int_eq(ddp_mr_check_cached(&t, &c, s, 1,
					     DDP_ACCESS_REMOTE_WRITE, RVA, 8,
					     &w),
			 DDP_MR_OK);
	ck_assert_int_eq(ddp_mr_check_cached(&t, &c, s, 1,
					     DDP_ACCESS_REMOTE_WRITE, RVA + RLEN,
					     8, &w),
			 DDP_MR_OUT_OF_BOUNDS);
	ck_assert_int_eq(ddp_mr_check_cached(&t, &c, s, 2,
					     DDP_ACCESS_REMOTE_WRITE, RVA, 8,
					     &w),
			 DDP_MR_WRONG_PD);
	ck_assert_int_eq(ddp_mr_check_cached(&t, &c, other, 1,
					     DDP_ACCESS_REMOTE_WRITE, RVA, 8,
					     &w),
			 DDP_MR_OUT_OF_BOUNDS);
	ck_assert_int_eq(ddp_mr_check_cached(&t, &c, s, 1,
					     DDP_ACCESS_REMOTE_WRITE, RVA, 8,
					     &w),
			 DDP_MR_OK);
	/* closing: posts refused at once, the peer still served */
	ck_assert_int_eq(ddp_mr_set_closing(&t, s, true), 0);
	ck_assert_int_eq(ddp_mr_check_cached(&t, &c, s, 1,
					     DDP_ACCESS_POST, RVA, 8, &w),
			 DDP_MR_BAD_STAG);
	ck_assert_int_eq(ddp_mr_check_cached(&t, &c, s, 1,
					     DDP_ACCESS_REMOTE_WRITE, RVA, 8,
					     &w),
			 DDP_MR_OK);
	/* invalidating another STag makes the copy stale, harmlessly */
	ck_assert_int_eq(ddp_mr_invalidate(&t, third, 1), 0);
	ck_assert_int_eq(ddp_mr_check_cached(&t, &c, s, 1,
					     DDP_ACCESS_REMOTE_WRITE, RVA, 8,
					     &w),
			 DDP_MR_OK);
	ck_assert_int_eq(ddp_mr_invalidate(&t, s, 1), 0);
	ck_assert_int_eq(ddp_mr_check_cached(&t, &c, s, 1,
					     DDP_ACCESS_REMOTE_WRITE, RVA, 8,
					     &w),
			 DDP_MR_BAD_STAG);
	ck_assert_int_eq(ddp_mr_check_cached(&t, &c, other, 1,
					     DDP_ACCESS_REMOTE_WRITE,
					     RVA + 0x1000, 8, &w),
			 DDP_MR_OK);
	ck_assert_int_eq(ddp_mr_deregister(&t, other), 0);
	ck_assert_int_eq(ddp_mr_check_cached(&t, &c, other, 1,
					     DDP_ACCESS_REMOTE_WRITE,
					     RVA + 0x1000, 8, &w),
			 DDP_MR_BAD_STAG);
	ddp_stag_table_destroy(&t);
}
END_TEST

START_TEST(tagged_error_maps_each_fault_to_its_terminate_code)
{
	struct iw_term_triple tr;

	ck_assert_int_eq(ddp_tagged_error(DDP_MR_OK), 0);
	ck_assert_int_eq(ddp_tagged_error(DDP_MR_BAD_STAG), -IW_EDDP_T_STAG);
	ck_assert_int_eq(ddp_tagged_error(DDP_MR_WRONG_PD),
			 -IW_EDDP_T_NOT_ASSOC);
	ck_assert_int_eq(ddp_tagged_error(DDP_MR_NO_ACCESS), -IW_ERDMAP_ACCESS);
	ck_assert_int_eq(ddp_tagged_error(DDP_MR_TO_WRAP), -IW_EDDP_T_TO_WRAP);
	ck_assert_int_eq(ddp_tagged_error(DDP_MR_OUT_OF_BOUNDS),
			 -IW_EDDP_T_BOUNDS);
	/* and those codes to RFC 5040 section 7 triples */
	ck_assert(iw_error_term(-IW_EDDP_T_STAG, &tr));
	ck_assert(tr.layer == 1 && tr.etype == 1 && tr.ecode == 0x00);
	ck_assert(iw_error_term(-IW_EDDP_T_BOUNDS, &tr));
	ck_assert(tr.layer == 1 && tr.etype == 1 && tr.ecode == 0x01);
	ck_assert(iw_error_term(-IW_EDDP_T_NOT_ASSOC, &tr));
	ck_assert(tr.layer == 1 && tr.etype == 1 && tr.ecode == 0x02);
	ck_assert(iw_error_term(-IW_EDDP_T_TO_WRAP, &tr));
	ck_assert(tr.layer == 1 && tr.etype == 1 && tr.ecode == 0x03);
	ck_assert(iw_error_term(-IW_ERDMAP_ACCESS, &tr));
	ck_assert(tr.layer == 0 && tr.etype == 1 && tr.ecode == 0x02);
}
END_TEST

/* ---- untagged queues (untagged.c) ------------------------------------- */

static struct ddp_hdr uhdr(uint8_t version, uint32_t msn, uint32_t mo,
			   bool last)
{
	return (struct ddp_hdr){ .version = version, .msn = msn, .mo = mo,
				 .last = last };
}

START_TEST(untagged_check_refuses_each_fault_alone)
{
	struct ddp_queue q;
	struct ddp_hdr h;

	ddp_queue_init(&q);
	ck_assert_uint_eq(q.msn, 1);
	ck_assert_uint_eq(q.mo, 0);
	ck_assert(!q.open);
	h = uhdr(1, 1, 0, true);
	ck_assert_int_eq(ddp_untagged_check(&q, &h, 10, true, 10), 0);
	h = uhdr(0, 1, 0, true);
	ck_assert_int_eq(ddp_untagged_check(&q, &h, 10, true, 10),
			 -IW_EDDP_U_VERSION);
	h = uhdr(2, 1, 0, true);
	ck_assert_int_eq(ddp_untagged_check(&q, &h, 10, true, 10),
			 -IW_EDDP_U_VERSION);
	h = uhdr(1, 2, 0, true);
	ck_assert_int_eq(ddp_untagged_check(&q, &h, 10, true, 10),
			 -IW_EDDP_U_MSN);
	h = uhdr(1, 0, 0, true);
	ck_assert_int_eq(ddp_untagged_check(&q, &h, 10, true, 10),
			 -IW_EDDP_U_MSN);
	h = uhdr(1, 1, 4, true);
	ck_assert_int_eq(ddp_untagged_check(&q, &h, 10, true, 100),
			 -IW_EDDP_U_MO);
	h = uhdr(1, 1, 0, true);
	ck_assert_int_eq(ddp_untagged_check(&q, &h, 10, false, 100),
			 -IW_EDDP_U_NO_BUFFER);
	ck_assert_int_eq(ddp_untagged_check(&q, &h, 11, true, 10),
			 -IW_EDDP_U_TOO_LONG);
	/* zero-length messages need a buffer too, but fit any */
	ck_assert_int_eq(ddp_untagged_check(&q, &h, 0, true, 0), 0);
	ck_assert_int_eq(ddp_untagged_check(&q, &h, 0, false, 0),
			 -IW_EDDP_U_NO_BUFFER);
}
END_TEST

START_TEST(untagged_check_reports_version_msn_mo_buffer_length_in_order)
{
	struct ddp_queue q;
	struct ddp_hdr h;

	ddp_queue_init(&q);
	h = uhdr(3, 9, 4, true);
	ck_assert_int_eq(ddp_untagged_check(&q, &h, 99, false, 10),
			 -IW_EDDP_U_VERSION);
	h = uhdr(1, 9, 4, true);
	ck_assert_int_eq(ddp_untagged_check(&q, &h, 99, false, 10),
			 -IW_EDDP_U_MSN);
	h = uhdr(1, 1, 4, true);
	ck_assert_int_eq(ddp_untagged_check(&q, &h, 99, false, 10),
			 -IW_EDDP_U_MO);
	h = uhdr(1, 1, 0, true);
	ck_assert_int_eq(ddp_untagged_check(&q, &h, 99, false, 10),
			 -IW_EDDP_U_NO_BUFFER);
	ck_assert_int_eq(ddp_untagged_check(&q, &h, 99, true, 10),
			 -IW_EDDP_U_TOO_LONG);
}
END_TEST

START_TEST(untagged_advance_moves_mo_per_segment_and_msn_per_message)
{
	struct ddp_queue q;
	struct ddp_hdr h;
	static const uint32_t seg[] = { 100, 100, 50 };

	ddp_queue_init(&q);
	for (uint32_t msg = 1; msg <= 3; msg++) {
		uint32_t mo = 0;

		for (int k = 0; k < 3; k++) {
			h = uhdr(1, msg, mo, k == 2);
			require(ddp_untagged_check(&q, &h, seg[k], true,
						   250) == 0,
				"message %u segment %d refused", msg, k);
			ddp_untagged_advance(&q, &h, seg[k]);
			mo += seg[k];
			require(q.msn == (k == 2 ? msg + 1 : msg) &&
					q.mo == (k == 2 ? 0 : mo) &&
					q.open == (k != 2),
				"after message %u segment %d: MSN %u MO %u",
				msg, k, q.msn, q.mo);
			/* the segment just taken cannot come again */
			require(ddp_untagged_check(&q, &h, seg[k], true,
						   250) != 0,
				"message %u segment %d taken twice", msg, k);
		}
	}
	/* a middle segment that would pass the buffer's end */
	ddp_queue_init(&q);
	h = uhdr(1, 1, 0, false);
	ddp_untagged_advance(&q, &h, 200);
	h = uhdr(1, 1, 200, false);
	ck_assert_int_eq(ddp_untagged_check(&q, &h, 51, true, 250),
			 -IW_EDDP_U_TOO_LONG);
	ck_assert_int_eq(ddp_untagged_check(&q, &h, 50, true, 250), 0);
	/* the MSN counts modulo 2^32 */
	q.msn = UINT32_MAX;
	q.mo = 0;
	h = uhdr(1, UINT32_MAX, 0, true);
	ck_assert_int_eq(ddp_untagged_check(&q, &h, 1, true, 1), 0);
	ddp_untagged_advance(&q, &h, 1);
	ck_assert_uint_eq(q.msn, 0);
}
END_TEST

START_TEST(untagged_length_check_does_not_wrap_at_2_32)
{
	struct ddp_queue q;
	struct ddp_hdr h;

	ddp_queue_init(&q);
	q.mo = 0xfffffff0u;
	h = uhdr(1, 1, 0xfffffff0u, true);
	ck_assert_int_eq(ddp_untagged_check(&q, &h, 0x20, true, 0xffffffffull),
			 -IW_EDDP_U_TOO_LONG);
	ck_assert_int_eq(ddp_untagged_check(&q, &h, 0x20, true,
					    0x100000010ull), 0);
}
END_TEST

/* ---- iovec arithmetic (iov.c) ----------------------------------------- */

/* a(4) b(0) c(3) d(0) e(5): 12 octets with empty entries among them */
struct iovs {
	uint8_t mem[32];
	struct iovec v[5];
};

static void iovs_init(struct iovs *s)
{
	static const size_t len[5] = { 4, 0, 3, 0, 5 };
	static const size_t at[5] = { 0, 6, 8, 13, 16 };

	memset(s->mem, 0xee, sizeof(s->mem));
	for (int i = 0; i < 5; i++)
		s->v[i] = (struct iovec){ s->mem + at[i], len[i] };
}

START_TEST(iov_len_sums_entries)
{
	struct iovs s;

	iovs_init(&s);
	ck_assert_uint_eq(ddp_iov_len(s.v, 5), 12);
	ck_assert_uint_eq(ddp_iov_len(s.v, 0), 0);
}
END_TEST

START_TEST(iov_slice_describes_the_range_and_leaves_out_empty_entries)
{
	struct iovs s;
	struct iovec out[8];

	iovs_init(&s);
	/* everything: a, c, e */
	ck_assert_int_eq(ddp_iov_slice(s.v, 5, 0, 12, out, 8), 3);
	ck_assert_ptr_eq(out[0].iov_base, s.v[0].iov_base);
	ck_assert_uint_eq(out[0].iov_len, 4);
	ck_assert_ptr_eq(out[1].iov_base, s.v[2].iov_base);
	ck_assert_uint_eq(out[1].iov_len, 3);
	ck_assert_ptr_eq(out[2].iov_base, s.v[4].iov_base);
	ck_assert_uint_eq(out[2].iov_len, 5);
	/* from the middle of a into c, across the empty b */
	ck_assert_int_eq(ddp_iov_slice(s.v, 5, 2, 4, out, 8), 2);
	ck_assert_ptr_eq(out[0].iov_base, (uint8_t *)s.v[0].iov_base + 2);
	ck_assert_uint_eq(out[0].iov_len, 2);
	ck_assert_ptr_eq(out[1].iov_base, s.v[2].iov_base);
	ck_assert_uint_eq(out[1].iov_len, 2);
}
END_TEST

START_TEST(iov_slice_at_entry_boundaries_and_past_the_end)
{
	struct iovs s;
	struct iovec out[8];

	iovs_init(&s);
	/* offset 4 is the end of a: the slice starts in c */
	ck_assert_int_eq(ddp_iov_slice(s.v, 5, 4, 3, out, 8), 1);
	ck_assert_ptr_eq(out[0].iov_base, s.v[2].iov_base);
	ck_assert_uint_eq(out[0].iov_len, 3);
	/* offset 7 is the end of c: the slice starts in e */
	ck_assert_int_eq(ddp_iov_slice(s.v, 5, 7, 5, out, 8), 1);
	ck_assert_ptr_eq(out[0].iov_base, s.v[4].iov_base);
	ck_assert_uint_eq(out[0].iov_len, 5);
	/* the last octet, nothing at the end, one octet past it */
	ck_assert_int_eq(ddp_iov_slice(s.v, 5, 11, 1, out, 8), 1);
	ck_assert_ptr_eq(out[0].iov_base, (uint8_t *)s.v[4].iov_base + 4);
	ck_assert_int_eq(ddp_iov_slice(s.v, 5, 12, 0, out, 8), 0);
	ck_assert_int_eq(ddp_iov_slice(s.v, 5, 11, 2, out, 8), -EMSGSIZE);
	ck_assert_int_eq(ddp_iov_slice(s.v, 5, 12, 1, out, 8), -EMSGSIZE);
	ck_assert_int_eq(ddp_iov_slice(s.v, 5, 40, 1, out, 8), -EMSGSIZE);
	/* an output list too short */
	ck_assert_int_eq(ddp_iov_slice(s.v, 5, 0, 12, out, 2), -ENOSPC);
	ck_assert_int_eq(ddp_iov_slice(s.v, 5, 0, 4, out, 1), 1);
}
END_TEST

START_TEST(iov_copy_in_scatters_across_entries_at_any_offset)
{
	static const uint8_t p[12] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	struct iovs s;
	uint8_t want[32];

	for (size_t off = 0; off <= 12; off++) {
		for (size_t len = 0; off + len <= 12; len++) {
			iovs_init(&s);
			memset(want, 0xee, sizeof(want));
			for (size_t k = 0; k < len; k++) {
				/* logical octet off+k lives at: */
				size_t o = off + k;
				size_t at = o < 4 ? o : o < 7 ? 8 + o - 4
							  : 16 + o - 7;

				want[at] = p[k];
			}
			require(ddp_iov_copy_in(s.v, 5, off, p, len) == 0,
				"copy_in off %zu len %zu failed", off, len);
			require(memcmp(s.mem, want, sizeof(want)) == 0,
				"copy_in off %zu len %zu misplaced", off, len);
		}
	}
	iovs_init(&s);
	ck_assert_int_eq(ddp_iov_copy_in(s.v, 5, 10, p, 3), -EMSGSIZE);
	ck_assert_int_eq(ddp_iov_copy_in(s.v, 5, 13, p, 1), -EMSGSIZE);
	/* nothing lands outside the entries, even on overrun */
	for (size_t i = 0; i < sizeof(s.mem); i++) {
		bool inside = i < 4 || (i >= 8 && i < 11) ||
			      (i >= 16 && i < 21);

		require(inside || s.mem[i] == 0xee,
			"octet %zu outside the entries written", i);
	}
}
END_TEST

/*
 * The mirror of copy_in: logical octets off to off + len gathered into a
 * flat buffer, nothing written past them; a list too short is refused.
 */
START_TEST(iov_copy_out_gathers_across_entries_at_any_offset)
{
	struct iovs s;
	uint8_t got[16];

	iovs_init(&s);
	for (size_t i = 0; i < sizeof(s.mem); i++)
		s.mem[i] = (uint8_t)(100 + i);
	for (size_t off = 0; off <= 12; off++) {
		for (size_t len = 0; off + len <= 12; len++) {
			memset(got, 0xee, sizeof(got));
			require(ddp_iov_copy_out(s.v, 5, off, got, len) == 0,
				"copy_out off %zu len %zu failed", off, len);
			for (size_t k = 0; k < len; k++) {
				size_t o = off + k;
				size_t at = o < 4 ? o : o < 7 ? 8 + o - 4
							  : 16 + o - 7;

				require(got[k] == s.mem[at],
					"copy_out off %zu len %zu: octet %zu",
					off, len, k);
			}
			for (size_t k = len; k < sizeof(got); k++)
				require(got[k] == 0xee,
					"copy_out off %zu len %zu wrote past",
					off, len);
		}
	}
	ck_assert_int_eq(ddp_iov_copy_out(s.v, 5, 10, got, 3), -EMSGSIZE);
	ck_assert_int_eq(ddp_iov_copy_out(s.v, 5, 13, got, 1), -EMSGSIZE);
}
END_TEST

START_TEST(iov_span_finds_the_contiguous_run_at_an_offset)
{
	struct iovs s;
	size_t span = 99;
	uint8_t *p;

	iovs_init(&s);
	p = ddp_iov_span(s.v, 5, 0, &span);
	ck_assert_ptr_eq(p, s.v[0].iov_base);
	ck_assert_uint_eq(span, 4);
	p = ddp_iov_span(s.v, 5, 3, &span);
	ck_assert_ptr_eq(p, (uint8_t *)s.v[0].iov_base + 3);
	ck_assert_uint_eq(span, 1);
	/* at the end of a: the next non-empty entry, c */
	p = ddp_iov_span(s.v, 5, 4, &span);
	ck_assert_ptr_eq(p, s.v[2].iov_base);
	ck_assert_uint_eq(span, 3);
	p = ddp_iov_span(s.v, 5, 7, &span);
	ck_assert_ptr_eq(p, s.v[4].iov_base);
	ck_assert_uint_eq(span, 5);
	p = ddp_iov_span(s.v, 5, 11, &span);
	ck_assert_ptr_eq(p, (uint8_t *)s.v[4].iov_base + 4);
	ck_assert_uint_eq(span, 1);
	/* at and past the end */
	span = 99;
	ck_assert_ptr_null(ddp_iov_span(s.v, 5, 12, &span));
	ck_assert_uint_eq(span, 0);
	span = 99;
	ck_assert_ptr_null(ddp_iov_span(s.v, 5, 1000, &span));
	ck_assert_uint_eq(span, 0);
	span = 99;
	ck_assert_ptr_null(ddp_iov_span(s.v, 0, 0, &span));
	ck_assert_uint_eq(span, 0);
}
END_TEST

static Suite *ddp_suite(void)
{
	Suite *s = suite_create("ddp");
	TCase *tc;

	tc = tcase_create("hdr");
	tcase_add_test(tc, hdr_round_trips_every_field_of_tagged_and_untagged_headers);
	tcase_add_test(tc, hdr_encode_puts_fields_at_rfc5041_offsets);
	tcase_add_test(tc, hdr_encode_seg_advances_to_or_mo_and_keeps_the_rest);
	tcase_add_test(tc, hdr_decode_of_every_prefix_shorter_than_the_header_is_eagain);
	tcase_add_test(tc, hdr_decode_ignores_reserved_control_bits);
	suite_add_tcase(s, tc);

	tc = tcase_create("wire");
	tcase_add_test(tc, wire_send_family_is_untagged_qn0_msn_from_1_mo_per_segment);
	tcase_add_test(tc, wire_write_is_tagged_with_to_advancing_per_segment);
	tcase_add_test(tc, wire_read_request_is_qn1_msn1_with_28_octet_body);
	tcase_add_test(tc, wire_read_response_targets_the_sink_stag_and_to);
	tcase_add_test(tc, wire_terminate_is_qn2_msn1_with_rfc_control_word_and_ddp_header);
	suite_add_tcase(s, tc);

	tc = tcase_create("siw");
	tcase_add_test(tc, siw_fpdus_are_version_1_with_opcodes_matching_model_and_queue);
	tcase_add_test(tc, siw_client_rping_first_fpdu_is_buffer_advertisement_send);
	tcase_add_test(tc, siw_server_rping_crc_read_request_and_its_response);
	tcase_add_test(tc, siw_perftest_4k_writes_reads_and_sends_are_single_segments);
	suite_add_tcase(s, tc);

	/*
	 * Two threads racing, 20000 registrations with a random key each:
	 * under the sanitizers on a loaded machine, longer than check's
	 * default 4 s.
	 */
	tc = tcase_create("stag_race");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, mr_check_never_sees_a_torn_registration);
	suite_add_tcase(s, tc);

	tc = tcase_create("stag");
	tcase_add_test(tc, stag_index_is_never_zero_and_stag_is_index_then_key);
	tcase_add_test(tc, stag_lookup_demands_the_exact_stag);
	tcase_add_test(tc, stag_deregistered_or_invalidated_is_bad_stag);
	tcase_add_test(tc, stag_full_table_returns_enomem_until_a_slot_is_freed);
	tcase_add_test(tc, stag_keys_are_not_all_equal_over_256_registrations);
	tcase_add_test(tc, stag_table_and_register_refuse_impossible_sizes);
	tcase_add_test(tc, mr_check_reports_each_fault_alone);
	tcase_add_test(tc, mr_check_reports_the_first_fault_in_rfc_order);
	tcase_add_test(tc, mr_check_bounds_edges);
	tcase_add_test(tc, mr_invalidate_needs_a_valid_stag_of_the_same_pd_once);
	tcase_add_test(tc, mr_closing_refuses_posts_but_not_the_peer);
	tcase_add_test(tc, mr_check_cached_follows_every_revocation);
	tcase_add_test(tc, tagged_error_maps_each_fault_to_its_terminate_code);
	suite_add_tcase(s, tc);

	tc = tcase_create("untagged");
	tcase_add_test(tc, untagged_check_refuses_each_fault_alone);
	tcase_add_test(tc, untagged_check_reports_version_msn_mo_buffer_length_in_order);
	tcase_add_test(tc, untagged_advance_moves_mo_per_segment_and_msn_per_message);
	tcase_add_test(tc, untagged_length_check_does_not_wrap_at_2_32);
	suite_add_tcase(s, tc);

	tc = tcase_create("iov");
	tcase_add_test(tc, iov_len_sums_entries);
	tcase_add_test(tc, iov_slice_describes_the_range_and_leaves_out_empty_entries);
	tcase_add_test(tc, iov_slice_at_entry_boundaries_and_past_the_end);
	tcase_add_test(tc, iov_copy_in_scatters_across_entries_at_any_offset);
	tcase_add_test(tc, iov_copy_out_gathers_across_entries_at_any_offset);
	tcase_add_test(tc, iov_span_finds_the_contiguous_run_at_an_offset);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(ddp_suite());
}
