// SPDX-License-Identifier: MIT
/*
 * MPA Request/Reply frames, negotiation, and the real siw traffic in
 * test/data (cut from ../shared/siw-peer/captures).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/byteorder.h"
#include "lib/error.h"
#include "mpa/mpa.h"
#include "test_mpa.h"

/* The 20-octet header plus private data a frame encodes to. */
static size_t encode(const struct mpa_frame *f, uint8_t *out)
{
	ssize_t n = mpa_frame_encode(f, out, 1024);

	ck_assert_int_gt(n, 0);
	return (size_t)n;
}

static void hex_to_bytes(const char *hex, uint8_t *out, size_t *len)
{
	size_t n = 0;

	for (; hex[0] && hex[1]; hex += 2) {
		unsigned int v;

		if (hex[0] == ' ') {
			hex--;
			continue;
		}
		ck_assert_int_eq(sscanf(hex, "%2x", &v), 1);
		out[n++] = (uint8_t)v;
	}
	*len = n;
}

/* Compares the octets after the 16-octet key with @hex. */
static void assert_frame_tail(const uint8_t *frame, size_t len,
			      const char *hex)
{
	uint8_t want[600];
	size_t n;

	hex_to_bytes(hex, want, &n);
	ck_assert_uint_eq(len, MPA_KEY_LEN + n);
	ck_assert_mem_eq(frame + MPA_KEY_LEN, want, n);
}

/* ---- frames ---------------------------------------------------------- */

START_TEST(request_like_siw_rping_encodes_to_siw_bytes)
{
	struct mpa_policy p = { .revision = 2, .ird = 1, .ord = 1 };
	struct mpa_frame req;
	uint8_t out[64], *siw;
	size_t n, siw_len;

	mpa_request_build(&p, &req);
	n = encode(&req, out);
	siw = fixture_load("siw-client-rping.i2r.bin", &siw_len);
	ck_assert_uint_eq(n, 24);
	ck_assert_mem_eq(out, siw, 24);
	ck_assert_mem_eq(out, "MPA ID Req Frame", 16);
	free(siw);
}
END_TEST

START_TEST(every_flag_and_revision_combination_round_trips)
{
	static uint8_t pd[508];
	uint8_t out[1024];

	for (size_t i = 0; i < sizeof(pd); i++)
		pd[i] = (uint8_t)(i * 13);
	for (int bits = 0; bits < 64; bits++) {
		struct mpa_frame f = {
			.reply = bits & 1,
			.m = bits & 2,
			.c = bits & 4,
			.r = bits & 8,
			.h = bits & 16,
			.rev = (bits & 32) ? 2 : 1,
			.ird = 0x1234,
			.ord = 0x2abc,
		};
		static const uint16_t pd_lens[] = { 0, 5, 508 };

		for (int k = 0; k < 3; k++) {
			bool enh = f.rev == 2 && f.h;
			struct mpa_frame g;
			size_t n;
			ssize_t got;

			f.pd = pd_lens[k] ? pd : NULL;
			f.pd_len = pd_lens[k];
			n = encode(&f, out);
			ck_assert_uint_eq(n, 20 + (enh ? 4 : 0) + f.pd_len);
			ck_assert_mem_eq(out, f.reply ? "MPA ID Rep Frame"
						      : "MPA ID Req Frame", 16);
			ck_assert_uint_eq(out[16], (f.m ? 0x80 : 0) |
							   (f.c ? 0x40 : 0) |
							   (f.r ? 0x20 : 0) |
							   (enh ? 0x10 : 0));
			ck_assert_uint_eq(out[17], f.rev);
			ck_assert_uint_eq(get_be16(out + 18),
					  f.pd_len + (enh ? 4 : 0));
			got = mpa_frame_decode(out, n, f.reply, 512, &g);
			ck_assert_int_eq(got, (ssize_t)n);
			ck_assert_int_eq(g.m, f.m);
			ck_assert_int_eq(g.c, f.c);
			ck_assert_int_eq(g.r, f.r);
			ck_assert_int_eq(g.h, enh);
			ck_assert_uint_eq(g.rev, f.rev);
			ck_assert_uint_eq(g.pd_len, f.pd_len);
			if (f.pd_len)
				ck_assert_mem_eq(g.pd, pd, f.pd_len);
			ck_assert_uint_eq(g.ird, enh ? 0x1234 : 0);
			ck_assert_uint_eq(g.ord, enh ? 0x2abc : 0);
		}
	}
}
END_TEST

START_TEST(rfc6581_words_carry_p2p_and_rtr_bits)
{
	static const struct {
		uint8_t rtr;
		const char *tail;
	} cases[] = {
		{ MPA_RTR_WRITE, "10 02 0004 8001 8001" },
		{ MPA_RTR_READ, "10 02 0004 8001 4001" },
		{ MPA_RTR_SEND, "10 02 0004 c001 0001" },
		{ MPA_RTR_ALL, "10 02 0004 c001 c001" },
	};
	uint8_t out[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mpa_frame f = { .rev = 2, .h = true, .ird = 1,
				       .ord = 1, .p2p = true,
				       .rtr = cases[i].rtr }, g;
		size_t n = encode(&f, out);

		assert_frame_tail(out, n, cases[i].tail);
		ck_assert_int_eq(mpa_frame_decode(out, n, false, 512, &g),
				 (ssize_t)n);
		ck_assert(g.p2p);
		ck_assert_uint_eq(g.rtr, cases[i].rtr);
		ck_assert_uint_eq(g.ird, 1);
		ck_assert_uint_eq(g.ord, 1);
	}
}
END_TEST

START_TEST(decode_waits_for_the_whole_frame)
{
	struct mpa_frame f = { .rev = 2, .h = true, .ird = 3, .ord = 4,
			       .pd = (const uint8_t *)"private", .pd_len = 7 };
	uint8_t out[64];
	size_t n = encode(&f, out);

	for (size_t cut = 0; cut < n; cut++)
		ck_assert_int_eq(mpa_frame_decode(out, cut, false, 512, &f),
				 -EAGAIN);
	ck_assert_int_eq(mpa_frame_decode(out, n + 10, false, 512, &f),
			 (ssize_t)n);
	ck_assert_mem_eq(f.pd, "private", 7);
}
END_TEST

START_TEST(decode_rejects_a_wrong_key_from_its_first_octets)
{
	struct mpa_frame f = { .rev = 1 };
	uint8_t out[64];
	size_t n = encode(&f, out);

	/* a Request where a Reply is due, noticed at octet 10 ("q" vs "p") */
	ck_assert_int_eq(mpa_frame_decode(out, 9, true, 512, &f), -EAGAIN);
	ck_assert_int_eq(mpa_frame_decode(out, 10, true, 512, &f),
			 -IW_EMPA_BAD_KEY);
	memcpy(out, "MPA ID Xxx Frame", 16);
	ck_assert_int_eq(mpa_frame_decode(out, 8, false, 512, &f),
			 -IW_EMPA_BAD_KEY);
	ck_assert_int_eq(mpa_frame_decode(out, n, false, 512, &f),
			 -IW_EMPA_BAD_KEY);
}
END_TEST

START_TEST(decode_rejects_unknown_revisions)
{
	struct mpa_frame f = { .rev = 1 };
	uint8_t out[64];
	size_t n = encode(&f, out);

	for (unsigned int rev = 0; rev < 256; rev++) {
		out[17] = (uint8_t)rev;
		ck_assert_int_eq(mpa_frame_decode(out, n, false, 512, &f),
				 rev == 1 || rev == 2 ? (ssize_t)n
						      : -IW_EMPA_BAD_REVISION);
	}
}
END_TEST

START_TEST(decode_rejects_private_data_over_the_limit_before_it_arrives)
{
	struct mpa_frame f = { .rev = 1 };
	uint8_t out[64];

	encode(&f, out);
	put_be16(out + 18, 513);
	ck_assert_int_eq(mpa_frame_decode(out, 20, false, 512, &f),
			 -IW_EMPA_PD_TOO_LONG);
	put_be16(out + 18, 257);
	ck_assert_int_eq(mpa_frame_decode(out, 20, false, 256, &f),
			 -IW_EMPA_PD_TOO_LONG);
	put_be16(out + 18, 256);
	ck_assert_int_eq(mpa_frame_decode(out, 20, false, 256, &f), -EAGAIN);
}
END_TEST

START_TEST(decode_rejects_enhanced_frame_without_ird_ord)
{
	struct mpa_frame f = { .rev = 2, .h = true };
	uint8_t out[64];

	encode(&f, out);
	put_be16(out + 18, 2);
	ck_assert_int_eq(mpa_frame_decode(out, 22, false, 512, &f),
			 -IW_EMPA_ENHANCED_SHORT);
	/* revision 2 without H carries no words: two octets are plain PD */
	out[16] = 0;
	ck_assert_int_eq(mpa_frame_decode(out, 22, false, 512, &f), 22);
	ck_assert_uint_eq(f.pd_len, 2);
}
END_TEST

START_TEST(encode_refuses_what_the_wire_cannot_carry)
{
	static uint8_t pd[600];
	struct mpa_frame f = { .rev = 3 };
	uint8_t out[1024];

	ck_assert_int_eq(mpa_frame_encode(&f, out, sizeof(out)), -EINVAL);
	f = (struct mpa_frame){ .rev = 2, .h = true, .pd = pd, .pd_len = 509 };
	ck_assert_int_eq(mpa_frame_encode(&f, out, sizeof(out)), -EINVAL);
	f.pd_len = 508;
	ck_assert_int_eq(mpa_frame_encode(&f, out, sizeof(out)), 532);
	f.ird = 0x4000;
	ck_assert_int_eq(mpa_frame_encode(&f, out, sizeof(out)), -EINVAL);
	f.ird = 0;
	ck_assert_int_eq(mpa_frame_encode(&f, out, 531), -ENOSPC);
}
END_TEST

/* ---- the siw variants of ../shared/siw-peer (README section 4) -------- */

static void decode_fixture(const char *name, bool reply, struct mpa_frame *f,
			   uint8_t **buf, size_t *len, ssize_t *used)
{
	char file[256];

	snprintf(file, sizeof(file), "%s.%s.bin", name, reply ? "r2i" : "i2r");
	*buf = fixture_load(file, len);
	*used = *len ? mpa_frame_decode(*buf, *len, reply, 512, f) : -EAGAIN;
}

START_TEST(siw_requests_and_replies_decode_as_documented)
{
	static const struct {
		const char *name;
		bool m, c, r, enh;
		uint8_t rev;
		uint16_t ird, ord;
		bool p2p;
		uint8_t rtr;
	} want[] = {
		{ "siw-mpa-v2", 0, 0, 0, 1, 2, 1, 1, 0, 0 },
		{ "siw-mpa-v2-crc", 0, 1, 0, 1, 2, 4, 4, 0, 0 },
		{ "siw-mpa-v2-markers", 0, 0, 1, 1, 2, 0, 0, 0, 0 },
		{ "siw-mpa-v1", 0, 0, 0, 0, 1, 0, 0, 0, 0 },
		{ "siw-mpa-v1-crc-pd", 0, 1, 0, 0, 1, 0, 0, 0, 0 },
		{ "siw-mpa-v1-markers-crc", 0, 1, 1, 0, 1, 0, 0, 0, 0 },
		{ "siw-mpa-v2-p2p-write", 0, 0, 0, 1, 2, 1, 1, 1,
		  MPA_RTR_WRITE },
		{ "siw-mpa-v2-plain", 0, 0, 0, 0, 2, 0, 0, 0, 0 },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct mpa_frame req, rep;
		uint8_t *a, *b;
		size_t alen, blen;
		ssize_t ua, ub;

		decode_fixture(want[i].name, false, &req, &a, &alen, &ua);
		decode_fixture(want[i].name, true, &rep, &b, &blen, &ub);
		ck_assert_int_eq(ua, (ssize_t)alen);
		ck_assert_int_eq(ub, (ssize_t)blen);
		ck_assert_int_eq(rep.m, want[i].m);
		ck_assert_int_eq(rep.c, want[i].c);
		ck_assert_int_eq(rep.r, want[i].r);
		ck_assert_int_eq(rep.h, want[i].enh);
		ck_assert_uint_eq(rep.rev, want[i].rev);
		ck_assert_uint_eq(rep.ird, want[i].ird);
		ck_assert_uint_eq(rep.ord, want[i].ord);
		ck_assert_int_eq(rep.p2p, want[i].p2p);
		ck_assert_uint_eq(rep.rtr, want[i].rtr);
		ck_assert_uint_eq(rep.pd_len, 0);
		free(a);
		free(b);
	}
}
END_TEST

START_TEST(siw_refused_requests_are_refused_by_us_too)
{
	struct mpa_frame f;
	uint8_t *a, *b;
	size_t alen, blen;
	ssize_t used;

	decode_fixture("siw-mpa-rev3", false, &f, &a, &alen, &used);
	ck_assert_int_eq(used, -IW_EMPA_BAD_REVISION);
	decode_fixture("siw-mpa-rev3", true, &f, &b, &blen, &used);
	ck_assert_uint_eq(blen, 0); /* siw closed without a Reply */
	free(a);
	free(b);
	decode_fixture("siw-mpa-bad-key", false, &f, &a, &alen, &used);
	ck_assert_int_eq(used, -IW_EMPA_BAD_KEY);
	free(a);
}
END_TEST

/*
 * Every connection in siw-fixtures.txt: the handshake decodes and both
 * directions de-frame into exactly the FPDUs tshark found, CRC checked
 * where the handshake negotiated it.
 */
START_TEST(siw_streams_deframe_into_the_fpdus_tshark_counts)
{
	char path[4096], line[256];
	int checked = 0, with_crc = 0;
	FILE *list;

	snprintf(path, sizeof(path), "%s/siw-fixtures.txt", TEST_DATA_DIR);
	list = fopen(path, "r");
	ck_assert_ptr_nonnull(list);
	while (fgets(line, sizeof(line), list)) {
		char name[128];
		unsigned int want[2];
		struct mpa_frame req, rep;
		uint8_t *s[2];
		size_t len[2];
		ssize_t used[2];
		bool crc;

		if (line[0] == '#' ||
		    sscanf(line, "%127s %u %u", name, &want[0], &want[1]) != 3)
			continue;
		decode_fixture(name, false, &req, &s[0], &len[0], &used[0]);
		decode_fixture(name, true, &rep, &s[1], &len[1], &used[1]);
		if (used[0] < 0 || used[1] < 0 || rep.r) {
			ck_assert_uint_eq(want[0] + want[1], 0);
			free(s[0]);
			free(s[1]);
			continue;
		}
		crc = req.c || rep.c;
		with_crc += crc;
		for (int dir = 0; dir < 2; dir++) {
			struct mpa_rx rx;
			struct rx_log l;

			rx_log_init(&l, len[dir]);
			mpa_rx_init(&rx, &rx_log_ops, &l, 0xffff, false, crc);
			ck_assert_int_eq(mpa_rx_feed(&rx, s[dir] + used[dir],
						     len[dir] - (size_t)used[dir]),
					 0);
			ck_assert_int_eq(mpa_rx_eof(&rx), 0);
			ck_assert_msg(l.ends == want[dir],
				      "%s dir %d: %u FPDUs, tshark %u", name,
				      dir, l.ends, want[dir]);
			rx_log_free(&l);
		}
		checked++;
		free(s[0]);
		free(s[1]);
	}
	fclose(list);
	ck_assert_int_ge(checked, 14);
	ck_assert_int_ge(with_crc, 2);
}
END_TEST

START_TEST(siw_crc_read_request_checks_and_a_flipped_bit_fails)
{
	struct mpa_frame req, rep;
	struct mpa_rx rx;
	struct rx_log l;
	uint8_t *a, *b;
	size_t alen, blen;
	ssize_t ua, ub;

	decode_fixture("siw-server-rping-crc", false, &req, &a, &alen, &ua);
	decode_fixture("siw-server-rping-crc", true, &rep, &b, &blen, &ub);
	ck_assert(req.c && rep.c);
	/* siw's Read Request FPDU, right after its Reply: CRC 87 33 44 21 */
	ck_assert_uint_eq(get_be16(b + ub), 0x2e);
	ck_assert_uint_eq(get_be32(b + ub + 0x2e + 2), 0x87334421);
	rx_log_init(&l, blen);
	mpa_rx_init(&rx, &rx_log_ops, &l, 0xffff, false, true);
	ck_assert_int_eq(mpa_rx_feed(&rx, b + ub, (size_t)(0x2e + 6)), 0);
	ck_assert_uint_eq(l.ends, 1);
	rx_log_free(&l);

	b[ub + 20] ^= 0x10;
	rx_log_init(&l, blen);
	mpa_rx_init(&rx, &rx_log_ops, &l, 0xffff, false, true);
	ck_assert_int_eq(mpa_rx_feed(&rx, b + ub, blen - (size_t)ub),
			 -IW_EMPA_CRC);
	rx_log_free(&l);
	free(a);
	free(b);
}
END_TEST

/* ---- negotiation ----------------------------------------------------- */

static bool one_bit_set(uint8_t v)
{
	return v && !(v & (v - 1));
}

static struct mpa_policy siw_like(void)
{
	return (struct mpa_policy){
		.revision = 2, .crc = MPA_PREF_FOLLOW,
		.markers = MPA_PREF_OFF, .ird = 1, .ord = 1,
		.rtr_accept = MPA_RTR_WRITE | MPA_RTR_READ,
	};
}

/* Runs the responder on a siw fixture's Request; returns its code. */
static int respond_to_fixture(const char *name, struct mpa_policy *p,
			      uint8_t *out, size_t *out_len,
			      struct mpa_params *params)
{
	struct mpa_frame req, rep;
	uint8_t *a;
	size_t alen;
	ssize_t used;
	int rc;

	decode_fixture(name, false, &req, &a, &alen, &used);
	ck_assert_int_eq(used, (ssize_t)alen);
	rc = mpa_negotiate_request(p, &req, &rep, params);
	*out_len = encode(&rep, out);
	free(a);
	return rc;
}

START_TEST(responder_answers_siw_requests_with_siw_replies)
{
	static const struct {
		const char *name;
		int rc;
		uint16_t ird, ord;
	} cases[] = {
		{ "siw-mpa-v2", 0, 1, 1 },
		{ "siw-mpa-v2-crc", 0, 4, 4 },
		{ "siw-mpa-v2-markers", -IW_EMPA_MARKERS_REFUSED, 1, 1 },
		{ "siw-mpa-v1", 0, 1, 1 },
		{ "siw-mpa-v1-crc-pd", 0, 1, 1 },
		{ "siw-mpa-v1-markers-crc", -IW_EMPA_MARKERS_REFUSED, 1, 1 },
		{ "siw-mpa-v2-p2p-write", 0, 1, 1 },
		{ "siw-mpa-v2-plain", 0, 1, 1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mpa_policy p = siw_like();
		struct mpa_params params;
		uint8_t out[64], *siw;
		size_t n, siw_len;
		char file[256];

		p.ird = cases[i].ird;
		p.ord = cases[i].ord;
		ck_assert_int_eq(respond_to_fixture(cases[i].name, &p, out, &n,
						    &params),
				 cases[i].rc);
		snprintf(file, sizeof(file), "%s.r2i.bin", cases[i].name);
		siw = fixture_load(file, &siw_len);
		ck_assert_msg(n == siw_len && memcmp(out, siw, n) == 0,
			      "%s: our Reply differs from siw's", cases[i].name);
		free(siw);
	}
}
END_TEST

START_TEST(responder_uses_crc_when_asked_even_with_crc_off)
{
	struct mpa_policy p = siw_like();
	struct mpa_params out;
	uint8_t buf[64];
	size_t n;

	p.crc = MPA_PREF_OFF;
	ck_assert_int_eq(respond_to_fixture("siw-mpa-v2-crc", &p, buf, &n, &out),
			 0);
	ck_assert(out.crc);
	ck_assert_uint_eq(buf[16] & MPA_FLAG_C, MPA_FLAG_C);
}
END_TEST

START_TEST(responder_markers_follow_or_request)
{
	struct mpa_policy p = siw_like();
	struct mpa_params out;
	uint8_t buf[64];
	size_t n;

	p.markers = MPA_PREF_FOLLOW;
	ck_assert_int_eq(respond_to_fixture("siw-mpa-v2-markers", &p, buf, &n,
					    &out), 0);
	ck_assert(out.markers_tx);
	ck_assert(!out.markers_rx);
	ck_assert_uint_eq(buf[16], 0x10);
	p.markers = MPA_PREF_ON;
	ck_assert_int_eq(respond_to_fixture("siw-mpa-v2", &p, buf, &n, &out), 0);
	ck_assert(!out.markers_tx);
	ck_assert(out.markers_rx);
	ck_assert_uint_eq(buf[16], 0x90);
}
END_TEST

START_TEST(responder_picks_one_rtr_type)
{
	static const struct {
		uint8_t offer, accept;
		uint16_t local_ird, peer_ord;
		int rc;
		uint8_t pick;
	} cases[] = {
		{ MPA_RTR_ALL, MPA_RTR_ALL, 1, 1, 0, MPA_RTR_WRITE },
		{ MPA_RTR_READ | MPA_RTR_SEND, MPA_RTR_ALL, 1, 1, 0,
		  MPA_RTR_READ },
		{ MPA_RTR_READ | MPA_RTR_SEND, MPA_RTR_ALL, 0, 1, 0,
		  MPA_RTR_SEND },
		{ MPA_RTR_READ, MPA_RTR_ALL, 1, 0,
		  -IW_EMPA_INSUFFICIENT_IRD, 0 },
		{ MPA_RTR_SEND, MPA_RTR_WRITE | MPA_RTR_READ, 1, 1,
		  -IW_EMPA_NO_MATCHING_RTR, 0 },
		{ MPA_RTR_SEND, MPA_RTR_ALL, 1, 1, 0, MPA_RTR_SEND },
		{ 0, MPA_RTR_ALL, 1, 1, -IW_EMPA_NO_MATCHING_RTR, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mpa_policy p = siw_like();
		struct mpa_frame req = { .rev = 2, .h = true, .ird = 1,
					 .ord = cases[i].peer_ord,
					 .p2p = true, .rtr = cases[i].offer },
				 rep;
		struct mpa_params out;

		p.rtr_accept = cases[i].accept;
		p.ird = cases[i].local_ird;
		ck_assert_int_eq(mpa_negotiate_request(&p, &req, &rep, &out),
				 cases[i].rc);
		if (cases[i].rc) {
			ck_assert(rep.r);
			ck_assert_uint_eq(rep.rtr, 0);
			continue;
		}
		ck_assert(rep.p2p && out.p2p);
		ck_assert_uint_eq(rep.rtr, cases[i].pick);
		ck_assert_uint_eq(out.rtr, cases[i].pick);
	}
}
END_TEST

START_TEST(responder_ord_never_exceeds_initiator_ird)
{
	struct mpa_policy p = siw_like();
	struct mpa_frame req = { .rev = 2, .h = true, .ird = 2, .ord = 9 }, rep;
	struct mpa_params out;

	p.ird = 16;
	p.ord = 8;
	ck_assert_int_eq(mpa_negotiate_request(&p, &req, &rep, &out), 0);
	ck_assert_uint_eq(rep.ord, 2);
	ck_assert_uint_eq(rep.ird, 16);
	ck_assert_uint_eq(out.ord, 2);
	ck_assert_uint_eq(out.ird, 16);
}
END_TEST

START_TEST(responder_answers_with_the_lower_revision)
{
	struct mpa_policy p = siw_like();
	struct mpa_frame req = { .rev = 2, .h = true, .ird = 1, .ord = 1 }, rep;
	struct mpa_params out;

	p.revision = 1;
	ck_assert_int_eq(mpa_negotiate_request(&p, &req, &rep, &out), 0);
	ck_assert_uint_eq(rep.rev, 1);
	ck_assert(!rep.h && !out.enhanced);
	ck_assert_uint_eq(out.ird, 1);
}
END_TEST

/* An enhanced Reply accepting CRC and a Write RTR, for tests to spoil. */
static struct mpa_frame good_reply(void)
{
	return (struct mpa_frame){ .reply = true, .rev = 2, .h = true,
				   .c = true, .ird = 1, .ord = 1, .p2p = true,
				   .rtr = MPA_RTR_WRITE };
}

/* Initiator side: each bad Reply and the reason it is refused. */
START_TEST(initiator_refuses_bad_replies_with_their_reason)
{
	struct mpa_policy p = siw_like();
	struct mpa_frame req, rep;
	struct mpa_params out;

	p.crc = MPA_PREF_ON;
	p.rtr_offer = MPA_RTR_WRITE | MPA_RTR_READ;
	mpa_request_build(&p, &req);
	rep = good_reply();
	ck_assert_int_eq(mpa_negotiate_reply(&p, &req, &rep, &out), 0);
	ck_assert(out.crc && out.p2p && out.enhanced);
	ck_assert_uint_eq(out.rtr, MPA_RTR_WRITE);
	rep = good_reply();
	rep.r = true;
	ck_assert_int_eq(mpa_negotiate_reply(&p, &req, &rep, &out),
			 -IW_EMPA_REJECTED);
	rep = good_reply();
	rep.c = false;
	ck_assert_int_eq(mpa_negotiate_reply(&p, &req, &rep, &out),
			 -IW_EMPA_CRC_DROPPED);
	rep = good_reply();
	rep.m = true;
	ck_assert_int_eq(mpa_negotiate_reply(&p, &req, &rep, &out),
			 -IW_EMPA_MARKERS_REFUSED);
	rep = good_reply();
	rep.rev = 3;
	ck_assert_int_eq(mpa_negotiate_reply(&p, &req, &rep, &out),
			 -IW_EMPA_BAD_REVISION);
	rep = good_reply();
	rep.rtr = MPA_RTR_SEND;
	ck_assert_int_eq(mpa_negotiate_reply(&p, &req, &rep, &out),
			 -IW_EMPA_RTR_INVALID);
	rep = good_reply();
	rep.rtr = MPA_RTR_WRITE | MPA_RTR_READ;
	ck_assert_int_eq(mpa_negotiate_reply(&p, &req, &rep, &out),
			 -IW_EMPA_RTR_INVALID);
	rep = good_reply();
	rep.p2p = false;
	ck_assert_int_eq(mpa_negotiate_reply(&p, &req, &rep, &out),
			 -IW_EMPA_RTR_INVALID);
	rep = good_reply();
	rep.rtr = MPA_RTR_READ;
	rep.ird = 0;
	ck_assert_int_eq(mpa_negotiate_reply(&p, &req, &rep, &out),
			 -IW_EMPA_INSUFFICIENT_IRD);
	rep = good_reply();
	rep.ord = 2;
	ck_assert_int_eq(mpa_negotiate_reply(&p, &req, &rep, &out),
			 -IW_EMPA_INSUFFICIENT_IRD);
	rep = good_reply();
	rep.rev = 1;
	rep.h = false;
	ck_assert_int_eq(mpa_negotiate_reply(&p, &req, &rep, &out),
			 -IW_EMPA_NO_MATCHING_RTR);

	/* without peer-to-peer: CRC only when allowed, A bit never */
	p.rtr_offer = 0;
	p.crc = MPA_PREF_OFF;
	mpa_request_build(&p, &req);
	rep = good_reply();
	rep.p2p = false;
	rep.rtr = 0;
	ck_assert_int_eq(mpa_negotiate_reply(&p, &req, &rep, &out),
			 -IW_EMPA_CRC_REFUSED);
	p.crc = MPA_PREF_FOLLOW;
	ck_assert_int_eq(mpa_negotiate_reply(&p, &req, &rep, &out), 0);
	ck_assert(out.crc);
	rep = good_reply();
	rep.c = false;
	ck_assert_int_eq(mpa_negotiate_reply(&p, &req, &rep, &out),
			 -IW_EMPA_RTR_INVALID);
	rep = (struct mpa_frame){ .reply = true, .rev = 1 };
	ck_assert_int_eq(mpa_negotiate_reply(&p, &req, &rep, &out), 0);
	ck_assert(!out.enhanced && !out.crc);
	ck_assert_uint_eq(out.ord, p.ord);
}
END_TEST

/*
 * Every pairing of initiator and responder policies, through encoded and
 * decoded frames: either both sides agree on the same parameters, or the
 * connection is refused for a reason the two policies explain.
 */
START_TEST(negotiation_matrix_agrees_or_gives_a_justified_reason)
{
	static const uint8_t offers[] = { 0, MPA_RTR_WRITE, MPA_RTR_READ,
					  MPA_RTR_SEND, MPA_RTR_ALL };
	static const uint8_t accepts[] = { MPA_RTR_ALL,
					   MPA_RTR_WRITE | MPA_RTR_READ,
					   MPA_RTR_SEND };
	static const uint16_t depths[][2] = { { 1, 1 }, { 0, 3 } };
	int agreed = 0, refused = 0;

	for (int k = 0; k < 2 * 2 * 9 * 9 * 2 * 2 * 5 * 3; k++) {
		int v = k;
		struct mpa_policy ini = { 0 }, res = { 0 };
		struct mpa_frame req, rep;
		struct mpa_params oi, orr;
		uint8_t wire[1024];
		size_t n;
		int rc_r, rc_i;

		ini.revision = (uint8_t)(1 + v % 2); v /= 2;
		res.revision = (uint8_t)(1 + v % 2); v /= 2;
		ini.crc = v % 3; v /= 3;
		res.crc = v % 3; v /= 3;
		ini.markers = v % 3; v /= 3;
		res.markers = v % 3; v /= 3;
		ini.ird = depths[v % 2][0]; ini.ord = depths[v % 2][1]; v /= 2;
		res.ird = depths[v % 2][0]; res.ord = depths[v % 2][1]; v /= 2;
		ini.rtr_offer = offers[v % 5]; v /= 5;
		res.rtr_accept = accepts[v % 3];
		mpa_request_build(&ini, &req);
		n = encode(&req, wire);
		ck_assert_int_eq(mpa_frame_decode(wire, n, false, 512, &req),
				 (ssize_t)n);
		rc_r = mpa_negotiate_request(&res, &req, &rep, &orr);
		n = encode(&rep, wire);
		ck_assert_int_eq(mpa_frame_decode(wire, n, true, 512, &rep),
				 (ssize_t)n);
		mpa_request_build(&ini, &req);
		rc_i = mpa_negotiate_reply(&ini, &req, &rep, &oi);

		if (rc_r) {
			ck_assert_int_eq(rc_i, -IW_EMPA_REJECTED);
			refused++;
			if (rc_r == -IW_EMPA_MARKERS_REFUSED)
				ck_assert(ini.markers == MPA_PREF_ON &&
					  res.markers == MPA_PREF_OFF);
			else
				ck_assert_msg(ini.rtr_offer && ini.revision == 2 &&
						      res.revision == 2,
					      "responder refused: %s",
					      iw_strerror(rc_r));
			continue;
		}
		if (rc_i) {
			refused++;
			switch (-rc_i) {
			case IW_EMPA_MARKERS_REFUSED:
				ck_assert(res.markers == MPA_PREF_ON &&
					  ini.markers == MPA_PREF_OFF);
				break;
			case IW_EMPA_CRC_REFUSED:
				ck_assert(res.crc == MPA_PREF_ON &&
					  ini.crc == MPA_PREF_OFF);
				break;
			case IW_EMPA_NO_MATCHING_RTR:
				ck_assert(ini.rtr_offer &&
					  (ini.revision == 1 || res.revision == 1));
				break;
			case IW_EMPA_INSUFFICIENT_IRD:
				ck_assert(ini.rtr_offer == MPA_RTR_READ ||
					  ini.ird < res.ord);
				break;
			default:
				ck_abort_msg("initiator refused: %s",
					     iw_strerror(rc_i));
			}
			continue;
		}
		agreed++;
		ck_assert_uint_eq(oi.revision, orr.revision);
		ck_assert_uint_eq(oi.revision, ini.revision < res.revision
						       ? ini.revision
						       : res.revision);
		ck_assert_int_eq(oi.enhanced, oi.revision == 2);
		ck_assert_int_eq(orr.enhanced, oi.enhanced);
		ck_assert_int_eq(oi.crc, orr.crc);
		ck_assert_int_eq(oi.crc, ini.crc == MPA_PREF_ON ||
						 res.crc == MPA_PREF_ON);
		ck_assert_int_eq(oi.markers_tx, orr.markers_rx);
		ck_assert_int_eq(oi.markers_rx, orr.markers_tx);
		ck_assert_int_eq(oi.markers_rx, ini.markers == MPA_PREF_ON);
		ck_assert_int_eq(orr.markers_rx, res.markers == MPA_PREF_ON);
		ck_assert_int_eq(oi.p2p, orr.p2p);
		ck_assert_uint_eq(oi.rtr, orr.rtr);
		if (oi.rtr) {
			ck_assert(one_bit_set(oi.rtr));
			ck_assert(oi.rtr & ini.rtr_offer & res.rtr_accept);
		}
		if (oi.enhanced) {
			ck_assert_uint_le(oi.ord, orr.ird);
			ck_assert_uint_le(orr.ord, oi.ird);
		}
		if (oi.rtr == MPA_RTR_READ)
			ck_assert(oi.ord >= 1 && orr.ird >= 1);
	}
	ck_assert_int_gt(agreed, 1000);
	ck_assert_int_gt(refused, 100);
}
END_TEST

Suite *mpa_frames_suite(void)
{
	Suite *s = suite_create("mpa_frames");
	TCase *tc;

	tc = tcase_create("frames");
	tcase_add_test(tc, request_like_siw_rping_encodes_to_siw_bytes);
	tcase_add_test(tc, every_flag_and_revision_combination_round_trips);
	tcase_add_test(tc, rfc6581_words_carry_p2p_and_rtr_bits);
	tcase_add_test(tc, decode_waits_for_the_whole_frame);
	tcase_add_test(tc, decode_rejects_a_wrong_key_from_its_first_octets);
	tcase_add_test(tc, decode_rejects_unknown_revisions);
	tcase_add_test(tc, decode_rejects_private_data_over_the_limit_before_it_arrives);
	tcase_add_test(tc, decode_rejects_enhanced_frame_without_ird_ord);
	tcase_add_test(tc, encode_refuses_what_the_wire_cannot_carry);
	suite_add_tcase(s, tc);

	tc = tcase_create("siw");
	tcase_add_test(tc, siw_requests_and_replies_decode_as_documented);
	tcase_add_test(tc, siw_refused_requests_are_refused_by_us_too);
	tcase_add_test(tc, siw_streams_deframe_into_the_fpdus_tshark_counts);
	tcase_add_test(tc, siw_crc_read_request_checks_and_a_flipped_bit_fails);
	suite_add_tcase(s, tc);

	tc = tcase_create("negotiation");
	tcase_add_test(tc, responder_answers_siw_requests_with_siw_replies);
	tcase_add_test(tc, responder_uses_crc_when_asked_even_with_crc_off);
	tcase_add_test(tc, responder_markers_follow_or_request);
	tcase_add_test(tc, responder_picks_one_rtr_type);
	tcase_add_test(tc, responder_ord_never_exceeds_initiator_ird);
	tcase_add_test(tc, responder_answers_with_the_lower_revision);
	tcase_add_test(tc, initiator_refuses_bad_replies_with_their_reason);
	tcase_add_test(tc, negotiation_matrix_agrees_or_gives_a_justified_reason);
	suite_add_tcase(s, tc);
	return s;
}
