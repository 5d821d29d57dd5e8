// SPDX-License-Identifier: MIT
/*
 * Real siw traffic through the RDMAP engine's receive path: the FPDU
 * streams cut from captures of Linux siw (test/data) are fed, whole and in
 * tiny pieces, into an engine set up with matching regions and receives,
 * and every placement and completion is checked.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/byteorder.h"
#include "lib/error.h"
#include "mpa/mpa.h"
#include "rdmap_pair.h"

static struct rng rng;

static void setup(struct pair *p, struct pair_opts *o, const char *name,
		  uint64_t seed)
{
	pair_init_seeded(p, o, &rng, name, seed);
}

/*
 * One connection of test/data: both directions as captured, and where
 * the FPDUs start in each (after the MPA Request, after the Reply).
 */
struct siw_conn {
	uint8_t *raw[2]; /* 0: initiator to responder, 1: back */
	size_t len[2];
	size_t start[2];
	bool crc;
};

static void siw_load(struct siw_conn *c, const char *name)
{
	struct mpa_frame f[2];
	char file[256];

	for (int d = 0; d < 2; d++) {
		ssize_t used;

		snprintf(file, sizeof(file), "%s.%s.bin", name,
			 d ? "r2i" : "i2r");
		c->raw[d] = fixture_load(file, &c->len[d]);
		used = mpa_frame_decode(c->raw[d], c->len[d], d == 1, 512,
					&f[d]);
		ck_assert_int_gt(used, 0);
		c->start[d] = (size_t)used;
	}
	ck_assert(!f[1].r);
	c->crc = f[0].c || f[1].c;
}

static void siw_free(struct siw_conn *c)
{
	free(c->raw[0]);
	free(c->raw[1]);
}

static size_t fpdu_len(uint16_t ulen)
{
	return MPA_HDR_LEN + ulen + mpa_pad_len(ulen) + MPA_CRC_LEN;
}

/* The @k-th ULPDU of an FPDU stream without markers; NULL past the end. */
static const uint8_t *nth_ulpdu(const uint8_t *p, size_t len, uint32_t k,
				uint16_t *ulen)
{
	size_t off = 0;

	for (;;) {
		require(off + MPA_HDR_LEN <= len || off == len,
			"FPDU stream cut at %zu", off);
		if (off == len)
			return NULL;
		*ulen = get_be16(p + off);
		if (k-- == 0)
			return p + off + MPA_HDR_LEN;
		off += fpdu_len(*ulen);
	}
}

struct stag_map {
	uint32_t siw, ours;
};

static bool map_one(uint8_t *at, const struct stag_map *m, int n)
{
	for (int i = 0; i < n; i++)
		if (get_be32(at) == m[i].siw) {
			put_be32(at, m[i].ours);
			return true;
		}
	return false;
}

/*
 * An STag is an index into its owner's table, which ours cannot repeat:
 * every STag of @m found in a tagged header or a Read Request (sink and
 * source) of the FPDU stream @p is rewritten to ours, and the CRC of an
 * FPDU so changed written anew.  Every other octet stays as siw sent it,
 * CRCs included; with CRC on each is first checked against the reference
 * CRC32c, which also proves the rewriting computes it siw's way.
 * Returns how many STags were rewritten.
 */
static unsigned int map_stags(uint8_t *p, size_t len, bool crc,
			      const struct stag_map *m, int n)
{
	unsigned int mapped = 0;
	size_t off = 0;

	while (off < len) {
		uint16_t ulen = get_be16(p + off);
		uint8_t *u = p + off + MPA_HDR_LEN;
		size_t covered = MPA_HDR_LEN + ulen + mpa_pad_len(ulen);
		bool changed = false;

		require(off + fpdu_len(ulen) <= len, "FPDU at %zu cut", off);
		if (crc)
			require(get_le32(p + off + covered) ==
					ref_crc32c(p + off, covered),
				"siw's CRC of the FPDU at %zu", off);
		if (u[DDP_OFF_CTRL] & DDP_CTRL_T) {
			changed = map_one(u + DDP_T_OFF_STAG, m, n);
		} else if ((u[DDP_OFF_RSVDULP] & RDMAP_CTRL_OPCODE) ==
			   RDMAP_OP_READ_REQ) {
			changed = map_one(u + DDP_UNTAGGED_HDR_LEN +
						  RDMAP_RR_OFF_SINK_STAG, m, n);
			changed |= map_one(u + DDP_UNTAGGED_HDR_LEN +
						   RDMAP_RR_OFF_SRC_STAG, m, n);
		}
		if (changed && crc)
			put_le32(p + off + covered,
				 ref_crc32c(p + off, covered));
		mapped += changed;
		off += fpdu_len(ulen);
	}
	return mapped;
}

#define SIW_GUARD 64

/* A buffer with guards, registered on @side at tagged offset @va. */
static uint8_t *siw_region(struct pair *p, int side, uint64_t va,
			   size_t len, uint32_t access, uint32_t *stag)
{
	uint8_t *mem = malloc(len + 2 * SIW_GUARD);

	ck_assert_ptr_nonnull(mem);
	memset(mem, 0xa5, len + 2 * SIW_GUARD);
	ck_assert_int_eq(ddp_mr_register(p->s[side].qp.attr.stags, PAIR_PD,
					 va, mem + SIW_GUARD, len, access,
					 stag),
			 0);
	return mem + SIW_GUARD;
}

static void siw_region_free(uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < SIW_GUARD; i++)
		require(buf[-1 - (ptrdiff_t)i] == 0xa5 && buf[len + i] == 0xa5,
			"guard around a region hit");
	free(buf - SIW_GUARD);
}

/* A pair framed as the fixture's connection; loop 1 feeds in tiny cuts. */
static void siw_pair(struct pair *p, const struct siw_conn *c, int loop,
		     const char *name)
{
	struct pair_opts o;

	pair_opts_default(&o);
	o.crc = c->crc;
	setup(p, &o, name, 0x515);
	p->max_cut = loop ? 7 : 70000;
	p->direct = loop;
}

/* Feeds direction @dir of @c (STags mapped) to side @to; must be taken. */
static void siw_feed(struct pair *p, struct siw_conn *c, int dir, int to,
		     const struct stag_map *m, int n, unsigned int n_mapped)
{
	ck_assert_uint_eq(map_stags(c->raw[dir] + c->start[dir],
				    c->len[dir] - c->start[dir], c->crc, m, n),
			  n_mapped);
	ck_assert_int_eq(pair_inject(p, to, c->raw[dir] + c->start[dir],
				     c->len[dir] - c->start[dir]),
			 0);
	ck_assert_uint_eq(p->s[to].qp.state, RDMAP_QP_RTS);
}

#define SIW_4K 4096

/*
 * Loop (whole, then in cuts of 1 to 7 octets with direct placement):
 * ib_write_bw's eight 4 KiB Writes from a siw initiator land in our
 * responder's region; Writes complete nothing at the target.
 */
START_TEST(siw_writes_are_placed_by_the_receive_path)
{
	struct siw_conn c;
	struct pair p;
	uint32_t stag;
	uint8_t *buf;
	const uint8_t *u;
	uint16_t ulen;

	siw_load(&c, "siw-lo-write-4k");
	siw_pair(&p, &c, _i, "siw_write");
	buf = siw_region(&p, 1, 0x00005603a33e7000ull, SIW_4K,
			 DDP_ACCESS_REMOTE_WRITE, &stag);
	siw_feed(&p, &c, 0, 1,
		 &(struct stag_map){ 0xa6fb5300, stag }, 1, 8);
	ck_assert_uint_eq(p.s[1].n_cqe, 0);
	ck_assert_uint_eq(p.s[1].n_ev, 1);
	ck_assert_uint_eq(p.s[1].ev[0].type, RDMAP_EV_ESTABLISHED);
	u = nth_ulpdu(c.raw[0] + c.start[0], c.len[0] - c.start[0], 7, &ulen);
	ck_assert_uint_eq(ulen, DDP_TAGGED_HDR_LEN + SIW_4K);
	ck_assert_mem_eq(buf, u + DDP_TAGGED_HDR_LEN, SIW_4K);
	siw_region_free(buf, SIW_4K);
	pair_fini(&p);
	siw_free(&c);
}
END_TEST

/*
 * Loop as above: we post ib_read_bw's eight 4 KiB Reads; our Read
 * Requests are octet for octet the ones siw sent (its sink STag mapped to
 * ours), and siw's eight responses complete them in order at the sink.
 */
START_TEST(siw_read_responses_complete_our_reads)
{
	static uint8_t wire[1024];
	struct siw_conn c;
	struct pair p;
	struct iovec iov[64];
	uint32_t stag;
	uint8_t *buf;
	const uint8_t *u;
	uint16_t ulen;
	size_t len = 0;
	int n;

	siw_load(&c, "siw-lo-read-4k");
	siw_pair(&p, &c, _i, "siw_read");
	buf = siw_region(&p, 0, 0x000055913d4c2000ull, SIW_4K,
			 DDP_ACCESS_LOCAL_WRITE, &stag);
	for (uint64_t i = 0; i < 8; i++) {
		struct rdmap_sge sge = { 0x000055913d4c2000ull, SIW_4K, stag };
		struct rdmap_send_wr r = pair_send_wr(i, RDMAP_WR_READ, &sge, 1);

		r.rkey = 0x483f2f00;
		r.remote_addr = 0x0000561d11d8a000ull;
		ck_assert_int_eq(rdmap_post_send(&p.s[0].qp, &r), 0);
	}
	n = rdmap_tx_gather(&p.s[0].qp, iov, 64, sizeof(wire));
	for (int i = 0; i < n; i++) {
		memcpy(wire + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	ck_assert_uint_eq(map_stags(c.raw[0] + c.start[0],
				    c.len[0] - c.start[0], c.crc,
				    &(struct stag_map){ 0x15806c00, stag }, 1),
			  8);
	ck_assert_uint_eq(len, c.len[0] - c.start[0]);
	ck_assert_mem_eq(wire, c.raw[0] + c.start[0], len);
	rdmap_tx_advance(&p.s[0].qp, len);
	ck_assert_uint_eq(p.s[0].qp.ord_count, 8);

	siw_feed(&p, &c, 1, 0, &(struct stag_map){ 0x15806c00, stag }, 1, 8);
	ck_assert_uint_eq(p.s[0].qp.ord_count, 0);
	ck_assert_uint_eq(p.s[0].n_cqe, 8);
	for (uint32_t i = 0; i < 8; i++) {
		ck_assert_uint_eq(p.s[0].cqe[i].wr_id, i);
		ck_assert_uint_eq(p.s[0].cqe[i].opcode, RDMAP_WC_READ);
		ck_assert_uint_eq(p.s[0].cqe[i].status, RDMAP_WC_SUCCESS);
		ck_assert_uint_eq(p.s[0].cqe[i].byte_len, SIW_4K);
	}
	u = nth_ulpdu(c.raw[1] + c.start[1], c.len[1] - c.start[1], 7, &ulen);
	ck_assert_mem_eq(buf, u + DDP_TAGGED_HDR_LEN, SIW_4K);
	siw_region_free(buf, SIW_4K);
	pair_fini(&p);
	siw_free(&c);
}
END_TEST

/*
 * Loop as above: ib_send_bw's eight 4 KiB Sends from a siw initiator fill
 * our eight receives in MSN order; the four 4-octet Writes its responder
 * sent back land at our initiator.
 */
START_TEST(siw_sends_fill_our_receives_in_order)
{
	struct siw_conn c;
	struct pair p;
	uint32_t stag, wstag;
	uint8_t *buf, *wbuf;
	const uint8_t *u;
	uint16_t ulen;

	siw_load(&c, "siw-lo-send-4k");
	siw_pair(&p, &c, _i, "siw_send");
	buf = siw_region(&p, 1, 0x10000, 8 * SIW_4K, DDP_ACCESS_LOCAL_WRITE,
			 &stag);
	for (uint64_t i = 0; i < 8; i++) {
		struct rdmap_sge sge = { 0x10000 + i * SIW_4K, SIW_4K, stag };

		ck_assert_int_eq(rdmap_post_recv(&p.s[1].qp,
			&(struct rdmap_recv_wr){ 100 + i, &sge, 1 }), 0);
	}
	siw_feed(&p, &c, 0, 1, NULL, 0, 0);
	ck_assert_uint_eq(p.s[1].n_cqe, 8);
	for (uint32_t i = 0; i < 8; i++) {
		const struct rdmap_cqe *q = &p.s[1].cqe[i];

		ck_assert(q->recv);
		ck_assert_uint_eq(q->wr_id, 100 + i);
		ck_assert_uint_eq(q->status, RDMAP_WC_SUCCESS);
		ck_assert_uint_eq(q->byte_len, SIW_4K);
		u = nth_ulpdu(c.raw[0] + c.start[0], c.len[0] - c.start[0], i,
			      &ulen);
		ck_assert_mem_eq(buf + i * SIW_4K, u + DDP_UNTAGGED_HDR_LEN,
				 SIW_4K);
	}

	wbuf = siw_region(&p, 0, 0x0000562bc8c4ca14ull, 4,
			  DDP_ACCESS_REMOTE_WRITE, &wstag);
	siw_feed(&p, &c, 1, 0, &(struct stag_map){ 0xfbe93300, wstag }, 1, 4);
	ck_assert_uint_eq(p.s[0].n_cqe, 0);
	u = nth_ulpdu(c.raw[1] + c.start[1], c.len[1] - c.start[1], 3, &ulen);
	ck_assert_uint_eq(ulen, DDP_TAGGED_HDR_LEN + 4);
	ck_assert_mem_eq(wbuf, u + DDP_TAGGED_HDR_LEN, 4);
	siw_region_free(buf, 8 * SIW_4K);
	siw_region_free(wbuf, 4);
	pair_fini(&p);
	siw_free(&c);
}
END_TEST

/*
 * Loop over rping against a siw server, with CRC (0, 1) and without (2,
 * 3), whole or in tiny cuts: siw's Read Request for 64 octets of our
 * source is answered with a Read Response octet for octet the one siw
 * took in the capture (CRC included), and its Send lands in our receive.
 * The Send keeps siw's own CRC.
 */
START_TEST(siw_rping_server_reads_from_us_and_sends)
{
	static const char *const name[] = { "siw-server-rping-crc",
					     "siw-server-rping-nocrc" };
	struct siw_conn c;
	struct pair p;
	struct iovec iov[16];
	uint32_t stag, rstag;
	uint8_t *src, *rbuf, wire[256];
	const uint8_t *u;
	uint16_t ulen;
	size_t len = 0;
	int n;

	siw_load(&c, name[_i / 2]);
	ck_assert(c.crc == (_i / 2 == 0));
	siw_pair(&p, &c, _i % 2, "siw_rping");
	src = siw_region(&p, 0, 0x1000, 64, DDP_ACCESS_REMOTE_READ, &stag);
	for (int i = 0; i < 64; i++)
		src[i] = (uint8_t)i;
	rbuf = siw_region(&p, 0, 0x20000, 64, DDP_ACCESS_LOCAL_WRITE, &rstag);
	memset(rbuf, 0xee, 64);
	ck_assert_int_eq(rdmap_post_recv(&p.s[0].qp, &(struct rdmap_recv_wr){
		7, &(struct rdmap_sge){ 0x20000, 64, rstag }, 1 }), 0);
	siw_feed(&p, &c, 1, 0, &(struct stag_map){ 0x11223344, stag }, 1, 1);
	ck_assert_uint_eq(p.s[0].n_cqe, 1);
	ck_assert_uint_eq(p.s[0].cqe[0].wr_id, 7);
	ck_assert_uint_eq(p.s[0].cqe[0].status, RDMAP_WC_SUCCESS);
	ck_assert_uint_eq(p.s[0].cqe[0].byte_len, 16);
	for (int i = 0; i < 64; i++)
		require(rbuf[i] == (i < 16 ? 0 : 0xee), "receive octet %d", i);
	ck_assert_uint_eq(p.s[0].qp.ird_count, 1);

	n = rdmap_tx_gather(&p.s[0].qp, iov, 16, sizeof(wire));
	for (int i = 0; i < n; i++) {
		memcpy(wire + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	u = nth_ulpdu(c.raw[0] + c.start[0], c.len[0] - c.start[0], 1, &ulen);
	ck_assert_uint_eq(ulen, DDP_TAGGED_HDR_LEN + 64);
	ck_assert_uint_eq(len, fpdu_len(ulen));
	ck_assert_mem_eq(wire, u - MPA_HDR_LEN, len);
	rdmap_tx_advance(&p.s[0].qp, len);
	ck_assert_uint_eq(p.s[0].qp.ird_count, 0);
	siw_region_free(src, 64);
	siw_region_free(rbuf, 64);
	pair_fini(&p);
	siw_free(&c);
}
END_TEST

static Suite *rdmap_siw_suite(void)
{
	Suite *s = suite_create("rdmap_siw");
	TCase *tc = tcase_create("siw");

	tcase_add_loop_test(tc, siw_writes_are_placed_by_the_receive_path, 0, 2);
	tcase_add_loop_test(tc, siw_read_responses_complete_our_reads, 0, 2);
	tcase_add_loop_test(tc, siw_sends_fill_our_receives_in_order, 0, 2);
	tcase_add_loop_test(tc, siw_rping_server_reads_from_us_and_sends, 0, 4);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(rdmap_siw_suite());
}
