// SPDX-License-Identifier: MIT
/*
 * FPDU scanner suite: what mpa/'s sender frames, the scanner reads back
 * field for field, with markers and CRC on and off; every fault it must
 * name (CRC, FPDUPTR, pad, truncation, impossible length) is seeded and
 * found, and the walk goes on past each one.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/byteorder.h"
#include "lib/error.h"
#include "mpa/mpa.h"
#include "test_mpa.h"
#include "testutil.h"

/* A stream of FPDUs with what the sender put in each. */
struct sent {
	uint8_t *wire;
	size_t len;
	size_t n;
	size_t *start;	    /* buffer offset of each FPDU */
	uint16_t *ulpdu_len;
	uint16_t *n_markers;
	uint8_t *plain;	    /* all ULPDUs back to back */
	size_t plain_len;
};

#define SWEEP_MAX_LEN 1100
/* beyond the sweep: sizes real traffic uses, and the longest allowed */
static const size_t big_lens[] = { 1460, 4096, 8192, 65014, 65535 };
#define N_BIG (sizeof(big_lens) / sizeof(big_lens[0]))
#define MAX_FPDUS (SWEEP_MAX_LEN + 1 + N_BIG)

static void sent_alloc(struct sent *s, size_t wire_cap, size_t plain_cap)
{
	*s = (struct sent){ 0 };
	s->wire = malloc(wire_cap);
	s->plain = malloc(plain_cap);
	s->start = malloc(sizeof(*s->start) * MAX_FPDUS);
	s->ulpdu_len = malloc(sizeof(*s->ulpdu_len) * MAX_FPDUS);
	s->n_markers = malloc(sizeof(*s->n_markers) * MAX_FPDUS);
	ck_assert(s->wire && s->plain && s->start && s->ulpdu_len &&
		  s->n_markers);
}

static void sent_free(struct sent *s)
{
	free(s->wire);
	free(s->plain);
	free(s->start);
	free(s->ulpdu_len);
	free(s->n_markers);
}

/* Frames one ULPDU of @len patterned octets at the end of @s. */
static void send_one(struct sent *s, struct mpa_tx *tx, size_t len)
{
	struct iovec in = { s->plain + s->plain_len, len }, out[512];
	uint8_t f_markers[MPA_TX_MAX_MARKERS][MPA_MARKER_LEN];
	struct mpa_tx_frame f = { .markers = f_markers };
	int cnt;

	for (size_t i = 0; i < len; i++)
		s->plain[s->plain_len + i] = (uint8_t)(len * 13 + i * 7);
	cnt = mpa_tx_fpdu(tx, &in, 1, &f, out, 512);
	require(cnt > 0, "framing %zu octets failed: %d", len, cnt);
	s->start[s->n] = s->len;
	s->ulpdu_len[s->n] = (uint16_t)len;
	s->n_markers[s->n] = f.n_markers;
	s->n++;
	for (int i = 0; i < cnt; i++) {
		memcpy(s->wire + s->len, out[i].iov_base, out[i].iov_len);
		s->len += out[i].iov_len;
	}
	s->plain_len += len;
}

/*
 * Every ULPDU length 0..1100 (every pad, every place a marker can fall)
 * then the big ones, behind a @base-octet stand-in for the MPA frame.
 */
static void send_all(struct sent *s, size_t base, bool markers, bool crc)
{
	struct mpa_tx tx;
	size_t plain = (size_t)SWEEP_MAX_LEN * (SWEEP_MAX_LEN + 1) / 2 +
		       2 * 65535 + 20000;

	sent_alloc(s, base + plain * 2, plain);
	memset(s->wire, 0xee, base);
	s->len = base;
	mpa_tx_init(&tx, 0xffff, markers, crc);
	for (size_t len = 0; len <= SWEEP_MAX_LEN; len++)
		send_one(s, &tx, len);
	for (size_t k = 0; k < N_BIG; k++)
		send_one(s, &tx, big_lens[k] > tx.mulpdu ? tx.mulpdu :
							   big_lens[k]);
}

static uint8_t ulpdu_buf[65535];

/* What the walk over a clean stream came across. */
struct seen {
	unsigned int lead, at_end, before_crc, in_header_or_ulpdu;
};

static void scan_clean(const struct sent *s, size_t base, bool markers,
		       bool crc, struct seen *seen)
{
	struct mpa_scanner sc;
	struct mpa_scan_fpdu f;
	size_t plain = 0;

	memset(seen, 0, sizeof(*seen));
	mpa_scan_init(&sc, s->wire, s->len, base, markers, crc);
	for (size_t k = 0; k < s->n; k++) {
		int rc = mpa_scan_next(&sc, ulpdu_buf, sizeof(ulpdu_buf), &f);
		size_t next = k + 1 < s->n ? s->start[k + 1] : s->len;
		uint64_t crc_off = next - base - MPA_CRC_LEN;

		require(rc == 1, "FPDU %zu: scan returned %d", k, rc);
		require(f.off == s->start[k] - base, "FPDU %zu at %llu", k,
			(unsigned long long)f.off);
		require(f.wire_len == next - s->start[k],
			"FPDU %zu: wire length %llu, sent %zu", k,
			(unsigned long long)f.wire_len, next - s->start[k]);
		require(f.have_len && f.ulpdu_len == s->ulpdu_len[k],
			"FPDU %zu: ULPDU_LENGTH %u", k, f.ulpdu_len);
		require(memcmp(ulpdu_buf, s->plain + plain, f.ulpdu_len) == 0,
			"FPDU %zu: ULPDU differs", k);
		plain += f.ulpdu_len;
		require(f.pad_len == mpa_pad_len(f.ulpdu_len) && f.pad_zero,
			"FPDU %zu: pad", k);
		require(f.n_markers == s->n_markers[k] && f.n_bad_markers == 0,
			"FPDU %zu: %u markers (%u bad), sent %u", k,
			f.n_markers, f.n_bad_markers, s->n_markers[k]);
		require(f.crc_ok, "FPDU %zu: CRC wire %#x computed %#x", k,
			f.crc_wire, f.crc_computed);
		if (crc)
			require(f.crc_wire == ref_crc32c(s->wire + s->start[k],
							 f.wire_len - 4),
				"FPDU %zu: CRC not over the whole FPDU", k);
		else
			require(f.crc_wire == 0, "FPDU %zu: CRC off, not 0", k);
		for (unsigned int m = 0; m < f.n_markers; m++) {
			const struct mpa_scan_marker *mk = &f.marker[m];

			require(mk->off % MPA_MARKER_SPACING == 0,
				"FPDU %zu: marker off position", k);
			if (mk->off == f.off)
				seen->lead++;
			else if (mk->off == crc_off - MPA_MARKER_LEN)
				seen->before_crc++;
			else
				seen->in_header_or_ulpdu++;
		}
		if (markers && (f.off + f.wire_len) % MPA_MARKER_SPACING == 0)
			seen->at_end++;
	}
	ck_assert_int_eq(mpa_scan_next(&sc, ulpdu_buf, sizeof(ulpdu_buf), &f),
			 0);
	ck_assert_uint_eq(plain, s->plain_len);
}

/* _i: bit 0 markers, bit 1 CRC, bit 2 an MPA frame's worth of octets first */
START_TEST(scan_reads_back_every_length_the_sender_frames)
{
	bool markers = _i & 1, crc = _i & 2;
	size_t base = (_i & 4) ? 24 : 0;
	struct sent s;
	struct seen seen;

	send_all(&s, base, markers, crc);
	scan_clean(&s, base, markers, crc, &seen);
	if (markers) {
		/* the sweep must have shown each placement a marker can have */
		ck_assert_uint_gt(seen.lead, 1);
		ck_assert_uint_gt(seen.at_end, 0);
		ck_assert_uint_gt(seen.before_crc, 0);
		ck_assert_uint_gt(seen.in_header_or_ulpdu, 100);
	} else {
		ck_assert_uint_eq(seen.lead + seen.before_crc +
					  seen.in_header_or_ulpdu, 0);
	}
	sent_free(&s);
}
END_TEST

/*
 * Known placements: a marker between PAD and CRC (this FPDU's, pointing
 * back to its header) and one inside a ULPDU.
 */
START_TEST(scan_marker_between_pad_and_crc_belongs_to_the_fpdu)
{
	uint8_t w[2048], a[500];
	struct mpa_scanner sc;
	struct mpa_scan_fpdu f;
	struct mpa_tx tx;
	size_t n = 0;

	memset(a, 7, sizeof(a));
	mpa_tx_init(&tx, 2000, true, true);
	n += frame_into(&tx, a, 250, w + n); /* 4 + 2 + 250 + 4: 0..260 */
	n += frame_into(&tx, a, 249, w + n); /* PAD ends on 512: 260..520 */
	n += frame_into(&tx, a, 300, w + n); /* 520..828 */
	n += frame_into(&tx, a, 500, w + n); /* marker 1024 in the ULPDU */
	mpa_scan_init(&sc, w, n, 0, true, true);

	ck_assert_int_eq(mpa_scan_next(&sc, NULL, 0, &f), 1);
	ck_assert_uint_eq(f.wire_len, 260);
	ck_assert_uint_eq(f.n_markers, 1);
	ck_assert_uint_eq(f.marker[0].off, 0);
	ck_assert_uint_eq(f.marker[0].want, 0);

	ck_assert_int_eq(mpa_scan_next(&sc, NULL, 0, &f), 1);
	ck_assert_uint_eq(f.hdr_off, 260);
	ck_assert_uint_eq(f.pad_len, 1);
	ck_assert_uint_eq(f.wire_len, 2 + 249 + 1 + 4 + 4);
	ck_assert_uint_eq(f.n_markers, 1);
	ck_assert_uint_eq(f.marker[0].off, 512);
	ck_assert_uint_eq(f.marker[0].fpduptr, 512 - 260);
	ck_assert(f.marker[0].ok && f.crc_ok);

	ck_assert_int_eq(mpa_scan_next(&sc, NULL, 0, &f), 1);
	ck_assert_uint_eq(f.off, 520);
	ck_assert_uint_eq(f.n_markers, 0);

	ck_assert_int_eq(mpa_scan_next(&sc, ulpdu_buf, sizeof(ulpdu_buf), &f),
			 1);
	ck_assert_uint_eq(f.hdr_off, 828);
	ck_assert_uint_eq(f.n_markers, 1);
	ck_assert_uint_eq(f.marker[0].off, 1024);
	ck_assert_uint_eq(f.marker[0].fpduptr, 1024 - 828);
	ck_assert(f.marker[0].ok && f.crc_ok);
	for (int i = 0; i < 500; i++)
		require(ulpdu_buf[i] == 7, "ULPDU octet %d holds a marker", i);
	ck_assert_int_eq(mpa_scan_next(&sc, NULL, 0, &f), 0);
}
END_TEST

/* Three FPDUs of 300 octets: 312 (leading marker), 312 (marker at 512), 308. */
static size_t three_fpdus(uint8_t *w, bool markers, bool crc)
{
	uint8_t payload[300];
	struct mpa_tx tx;
	size_t n = 0;

	mpa_tx_init(&tx, 1000, markers, crc);
	for (int k = 0; k < 3; k++) {
		memset(payload, 'a' + k, sizeof(payload));
		n += frame_into(&tx, payload, sizeof(payload), w + n);
	}
	return n;
}

/* Scans the three FPDUs of @w and expects each to come back. */
static void scan_three(const uint8_t *w, size_t len, bool markers, bool crc,
		       struct mpa_scan_fpdu f[3])
{
	struct mpa_scanner sc;
	struct mpa_scan_fpdu end;

	mpa_scan_init(&sc, w, len, 0, markers, crc);
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(mpa_scan_next(&sc, ulpdu_buf,
					       sizeof(ulpdu_buf), &f[k]), 1);
		ck_assert_uint_eq(f[k].ulpdu_len, 300);
		ck_assert_uint_eq(ulpdu_buf[299], 'a' + k);
	}
	ck_assert_int_eq(mpa_scan_next(&sc, NULL, 0, &end), 0);
}

START_TEST(scan_flipped_bit_is_a_crc_mismatch_and_the_walk_goes_on)
{
	uint8_t w[2048];
	size_t n = three_fpdus(w, true, true);
	struct mpa_scan_fpdu f[3];
	uint32_t good = get_le32(w + 624 - 4);

	w[312 + 2 + 10] ^= 0x04; /* in FPDU 2's ULPDU */
	scan_three(w, n, true, true, f);
	ck_assert(f[0].crc_ok);
	ck_assert(!f[1].crc_ok);
	ck_assert_uint_eq(f[1].crc_wire, good);
	ck_assert_uint_ne(f[1].crc_computed, good);
	ck_assert_uint_eq(f[1].crc_computed, ref_crc32c(w + 312, 312 - 4));
	ck_assert(f[2].crc_ok);
}
END_TEST

START_TEST(scan_ignores_the_crc_field_when_crc_is_off)
{
	uint8_t w[2048];
	size_t n = three_fpdus(w, true, false);
	struct mpa_scan_fpdu f[3];

	w[n - 1] = 0x55;
	scan_three(w, n, true, false, f);
	ck_assert(f[2].crc_ok);
	ck_assert_uint_eq(f[2].crc_wire, 0x55000000u);
	ck_assert_uint_eq(f[2].crc_computed, 0);
}
END_TEST

START_TEST(scan_wrong_fpduptr_is_named_with_the_one_wanted)
{
	uint8_t w[2048];
	size_t n = three_fpdus(w, true, _i);
	struct mpa_scan_fpdu f[3];

	/* FPDU 2 starts at 312 (header at 312), marker at 512: FPDUPTR 200 */
	ck_assert_uint_eq(get_be16(w + 512 + 2), 200);
	put_be16(w + 512 + 2, 204);
	scan_three(w, n, true, _i, f);
	ck_assert_uint_eq(f[1].n_markers, 1);
	ck_assert_uint_eq(f[1].n_bad_markers, 1);
	ck_assert_uint_eq(f[1].marker[0].off, 512);
	ck_assert_uint_eq(f[1].marker[0].fpduptr, 204);
	ck_assert_uint_eq(f[1].marker[0].want, 200);
	ck_assert(!f[1].marker[0].ok);
	/* the CRC covers the marker: with CRC on the change shows there too */
	ck_assert_int_eq(f[1].crc_ok, !_i);
	ck_assert_uint_eq(f[0].n_bad_markers + f[2].n_bad_markers, 0);
	ck_assert(f[2].crc_ok);
}
END_TEST

START_TEST(scan_leading_marker_must_have_fpduptr_zero)
{
	uint8_t w[2048];
	size_t n = three_fpdus(w, true, false);
	struct mpa_scan_fpdu f[3];

	put_be16(w + 2, 8);
	put_be16(w, 0x1234);
	scan_three(w, n, true, false, f);
	ck_assert_uint_eq(f[0].n_bad_markers, 1);
	ck_assert_uint_eq(f[0].marker[0].want, 0);
	ck_assert_uint_eq(f[0].marker[0].fpduptr, 8);
	ck_assert_uint_eq(f[0].marker[0].reserved, 0x1234);
}
END_TEST

START_TEST(scan_nonzero_pad_is_reported)
{
	uint8_t w[2048];
	size_t n = three_fpdus(w, false, false);
	struct mpa_scan_fpdu f[3];

	/* no markers: FPDUs of 2 + 300 + 2 + 4 = 308; pad of FPDU 3 */
	w[2 * 308 + 2 + 300 + 1] = 0x80;
	scan_three(w, n, false, false, f);
	ck_assert_uint_eq(f[2].pad_len, 2);
	ck_assert(f[0].pad_zero && f[1].pad_zero);
	ck_assert(!f[2].pad_zero);
}
END_TEST

START_TEST(scan_truncated_stream_is_incomplete_at_every_cut)
{
	uint8_t w[2048];
	size_t n = three_fpdus(w, true, true);
	size_t last = 624;

	for (size_t cut = last + 1; cut < n; cut++) {
		struct mpa_scanner sc;
		struct mpa_scan_fpdu f;

		mpa_scan_init(&sc, w, cut, 0, true, true);
		ck_assert_int_eq(mpa_scan_next(&sc, NULL, 0, &f), 1);
		ck_assert_int_eq(mpa_scan_next(&sc, NULL, 0, &f), 1);
		require(mpa_scan_next(&sc, ulpdu_buf, sizeof(ulpdu_buf), &f) ==
				-EAGAIN, "cut at %zu not incomplete", cut);
		require(f.off == last && f.wire_len == cut - last,
			"cut at %zu: %llu octets present", cut,
			(unsigned long long)f.wire_len);
		/* no marker is due at 624: two octets give the length */
		require(f.have_len == (cut >= last + 2), "cut at %zu: length",
			cut);
		if (f.have_len)
			ck_assert_uint_eq(f.ulpdu_len, 300);
		require(sc.pos == last, "cut at %zu: position moved", cut);
		require(mpa_scan_next(&sc, NULL, 0, &f) == -EAGAIN,
			"cut at %zu: not incomplete again", cut);
	}
}
END_TEST

START_TEST(scan_stream_ending_in_a_leading_marker_is_incomplete)
{
	static const uint8_t payload[500];
	uint8_t w[4096];
	struct mpa_scanner sc;
	struct mpa_scan_fpdu f;
	struct mpa_tx tx;
	size_t n;

	mpa_tx_init(&tx, 2000, true, false);
	n = frame_into(&tx, payload, 500, w); /* 4 + 2 + 500 + 2 + 4 = 512 */
	ck_assert_uint_eq(n, 512);
	memset(w + n, 0, 3); /* three octets of the next leading marker */
	mpa_scan_init(&sc, w, n + 3, 0, true, false);
	ck_assert_int_eq(mpa_scan_next(&sc, NULL, 0, &f), 1);
	ck_assert_int_eq(mpa_scan_next(&sc, NULL, 0, &f), -EAGAIN);
	ck_assert(!f.have_len);
	ck_assert_uint_eq(f.wire_len, 3);
}
END_TEST

START_TEST(scan_refuses_a_length_no_fpduptr_can_reach)
{
	static uint8_t w[70000];
	struct mpa_scanner sc;
	struct mpa_scan_fpdu f;

	/* markers: a 65535-octet ULPDU puts a marker 65536+ past its header */
	memset(w, 0, sizeof(w));
	put_be16(w + 4, 0xffff);
	mpa_scan_init(&sc, w, sizeof(w), 0, true, false);
	ck_assert_int_eq(mpa_scan_next(&sc, ulpdu_buf, sizeof(ulpdu_buf), &f),
			 -IW_EMPA_ULPDU_TOO_LONG);
	ck_assert(f.have_len);
	ck_assert_uint_eq(f.ulpdu_len, 0xffff);
	ck_assert_uint_eq(sc.pos, 0);
	/* without markers the same length is an ordinary FPDU */
	put_be16(w, 0xffff);
	mpa_scan_init(&sc, w, 2 + 65535 + 3 + 4, 0, false, false);
	ck_assert_int_eq(mpa_scan_next(&sc, ulpdu_buf, sizeof(ulpdu_buf), &f),
			 1);
	ck_assert_uint_eq(f.wire_len, 2 + 65535 + 3 + 4);
}
END_TEST

START_TEST(scan_short_ulpdu_buffer_is_refused_without_moving)
{
	uint8_t w[2048], small[100];
	size_t n = three_fpdus(w, true, true);
	struct mpa_scanner sc;
	struct mpa_scan_fpdu f;

	mpa_scan_init(&sc, w, n, 0, true, true);
	ck_assert_int_eq(mpa_scan_next(&sc, small, sizeof(small), &f),
			 -ENOSPC);
	ck_assert_uint_eq(sc.pos, 0);
	ck_assert_int_eq(mpa_scan_next(&sc, NULL, 0, &f), 1);
}
END_TEST

Suite *mpa_scan_suite(void)
{
	Suite *s = suite_create("mpa_scan");
	TCase *tc;

	tc = tcase_create("round_trip");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, scan_reads_back_every_length_the_sender_frames,
			    0, 8);
	tcase_add_test(tc, scan_marker_between_pad_and_crc_belongs_to_the_fpdu);
	suite_add_tcase(s, tc);

	tc = tcase_create("faults");
	tcase_add_test(tc, scan_flipped_bit_is_a_crc_mismatch_and_the_walk_goes_on);
	tcase_add_test(tc, scan_ignores_the_crc_field_when_crc_is_off);
	tcase_add_loop_test(tc, scan_wrong_fpduptr_is_named_with_the_one_wanted,
			    0, 2);
	tcase_add_test(tc, scan_leading_marker_must_have_fpduptr_zero);
	tcase_add_test(tc, scan_nonzero_pad_is_reported);
	tcase_add_test(tc, scan_truncated_stream_is_incomplete_at_every_cut);
	tcase_add_test(tc, scan_stream_ending_in_a_leading_marker_is_incomplete);
	tcase_add_test(tc, scan_refuses_a_length_no_fpduptr_can_reach);
	tcase_add_test(tc, scan_short_ulpdu_buffer_is_refused_without_moving);
	suite_add_tcase(s, tc);
	return s;
}
