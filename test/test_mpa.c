// SPDX-License-Identifier: MIT
/*
 * MPA framing suite: CRC32c, the FPDU sender, MULPDU, the de-framer and its
 * errors.  Request/Reply frames and negotiation are in test_mpa_frames.c.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "lib/byteorder.h"
#include "lib/copy.h"
#include "lib/error.h"
#include "mpa/mpa.h"
#include "test_mpa.h"
#include "testutil.h"

/* ---- helpers --------------------------------------------------------- */

/* Copies the octets of @cnt pieces to @w, in order; returns how many. */
static size_t gather_pieces(const struct iovec *v, int cnt, uint8_t *w)
{
	size_t n = 0;

	for (int i = 0; i < cnt; i++) {
		memcpy(w + n, v[i].iov_base, v[i].iov_len);
		n += v[i].iov_len;
	}
	return n;
}

/* Frames one ULPDU and appends its wire octets to @w. */
size_t frame_into(struct mpa_tx *tx, const uint8_t *ulpdu, size_t len,
		  uint8_t *w)
{
	struct iovec in = { (void *)ulpdu, len }, out[512];
	uint8_t f_markers[MPA_TX_MAX_MARKERS][MPA_MARKER_LEN];
	struct mpa_tx_frame f = { .markers = f_markers };
	int cnt = mpa_tx_fpdu(tx, &in, 1, &f, out, 512);

	require(cnt > 0, "framing failed: %d", cnt);
	return gather_pieces(out, cnt, w);
}

void rx_log_init(struct rx_log *l, size_t cap)
{
	*l = (struct rx_log){ .cap = cap };
	l->data = malloc(cap);
	l->lens = malloc(sizeof(*l->lens) * 65536);
	ck_assert_ptr_nonnull(l->data);
	ck_assert_ptr_nonnull(l->lens);
}

void rx_log_free(struct rx_log *l)
{
	free(l->data);
	free(l->lens);
}

static int log_begin(void *arg, uint16_t len)
{
	struct rx_log *l = arg;

	require(!l->open, "ULPDU begins inside another");
	require(l->begins < 65536, "too many ULPDUs");
	l->open = true;
	l->lens[l->begins++] = len;
	l->cur = 0;
	return 0;
}

static int log_data(void *arg, const uint8_t *p, size_t len)
{
	struct rx_log *l = arg;

	require(l->open, "ULPDU data outside a ULPDU");
	require(l->len + len <= l->cap, "more ULPDU octets than expected");
	memcpy(l->data + l->len, p, len);
	l->len += len;
	l->cur += len;
	return l->fail_data;
}

static int log_end(void *arg)
{
	struct rx_log *l = arg;

	require(l->open, "ULPDU ends without beginning");
	require(l->cur == l->lens[l->begins - 1],
		"ULPDU of %u octets delivered %zu", l->lens[l->begins - 1],
		l->cur);
	l->open = false;
	l->ends++;
	return 0;
}

const struct mpa_rx_ops rx_log_ops = { log_begin, log_data, log_end };

/* Places what the window allows straight into the log, like a socket readv. */
static int place_direct(struct mpa_rx *rx, struct rx_log *l, const uint8_t *p,
			size_t len)
{
	size_t w = mpa_rx_payload_window(rx);

	if (w > len)
		w = len;
	memcpy(l->data + l->len, p, w);
	l->len += w;
	l->cur += w;
	require(mpa_rx_payload_placed(rx, l->data + l->len - w, w) == 0,
		"placing %zu octets failed", w);
	return (int)w;
}

/*
 * Feeds @w to @rx cut at random points no longer than @max_cut; with @direct
 * it takes the payload window straight whenever one is open.
 */
int feed_cut(struct mpa_rx *rx, struct rx_log *l, struct rng *r,
	     const uint8_t *w, size_t len, size_t max_cut, bool direct)
{
	size_t i = 0;

	while (i < len) {
		size_t n = (size_t)rng_range(r, 1, max_cut);
		int rc;

		if (n > len - i)
			n = len - i;
		if (direct && mpa_rx_payload_window(rx) && rng_next(r) % 2) {
			i += (size_t)place_direct(rx, l, w + i, n);
			continue;
		}
		rc = mpa_rx_feed(rx, w + i, n);
		if (rc)
			return rc;
		i += n;
	}
	return 0;
}

/* ---- CRC32c ---------------------------------------------------------- */

START_TEST(crc_matches_rfc3720_b4_vectors)
{
	uint8_t buf[32];
	static const char digits[] = "123456789";

	memset(buf, 0, 32);
	ck_assert_uint_eq(mpa_crc32c(buf, 32), 0x8a9136aa);
	ck_assert_uint_eq(ref_crc32c(buf, 32), 0x8a9136aa);
	memset(buf, 0xff, 32);
	ck_assert_uint_eq(mpa_crc32c(buf, 32), 0x62a8ab43);
	ck_assert_uint_eq(ref_crc32c(buf, 32), 0x62a8ab43);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	ck_assert_uint_eq(mpa_crc32c(buf, 32), 0x46dd794e);
	ck_assert_uint_eq(ref_crc32c(buf, 32), 0x46dd794e);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	ck_assert_uint_eq(mpa_crc32c(buf, 32), 0x113fdb5c);
	ck_assert_uint_eq(ref_crc32c(buf, 32), 0x113fdb5c);
	ck_assert_uint_eq(mpa_crc32c(digits, 9), 0xe3069283);
}
END_TEST

START_TEST(crc_is_written_in_rfc3720_listing_order)
{
	uint8_t buf[32] = { 0 }, wire[4];
	static const uint8_t want[4] = { 0xaa, 0x36, 0x91, 0x8a };

	put_le32(wire, mpa_crc32c(buf, 32));
	ck_assert_mem_eq(wire, want, 4);
}
END_TEST

START_TEST(crc_chained_over_pieces_equals_one_shot)
{
	struct rng r;
	uint8_t buf[4096];

	rng_seed(&r, "crc_chained", 0xc0ffee);
	for (int round = 0; round < 200; round++) {
		size_t len = (size_t)rng_range(&r, 0, sizeof(buf));
		uint32_t acc = mpa_crc32c_init();
		size_t i = 0;

		rng_fill(&r, buf, len);
		while (i < len) {
			size_t n = (size_t)rng_range(&r, 1, len - i);

			acc = mpa_crc32c_update(acc, buf + i, n);
			i += n;
		}
		ck_assert_uint_eq(mpa_crc32c_final(acc), ref_crc32c(buf, len));
	}
}
END_TEST

#if defined(__x86_64__)
/*
 * Whether the upper halves of vector registers 0-15 are in use, as
 * XINUSE says for the YMM and ZMM upper halves; only where
 * xinuse_shows_vector_upper() has said XINUSE can be read.
 */
static bool vector_upper_in_use(void)
{
	unsigned int lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
	(void)hi;
	return lo & ((1u << 2) | (1u << 6));
}

static void vector_upper_dirty(void)
{
	__asm__ volatile("vpcmpeqd %%ymm0, %%ymm0, %%ymm0" ::: "xmm0");
}

/*
 * Whether this processor has AVX and shows in XINUSE (XGETBV with
 * ECX = 1) both a dirty upper half and one cleared again: where it does
 * not, there is nothing to clear or no way to see it.
 */
static bool xinuse_shows_vector_upper(void)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) ||
	    !(c & bit_AVX) || __get_cpuid_max(0, NULL) < 0xd)
		return false;
	__cpuid_count(0xd, 1, a, b, c, d);
	if (!(a & (1u << 2)))
		return false;
	vector_upper_dirty();
	if (!vector_upper_in_use())
		return false;
	__asm__ volatile("vzeroupper");
	return !vector_upper_in_use();
}

/*
 * A CRC leaves the vector registers' upper halves clear, whatever ISA-L's
 * variant did with them: SSE code after dirty halves stalls.  The halves
 * are made dirty first, so the check holds on any variant.
 */
START_TEST(crc_leaves_vector_upper_halves_clear)
{
	static uint8_t buf[65536];

	memset(buf, 0x5a, sizeof(buf));
	vector_upper_dirty();
	ck_assert(vector_upper_in_use());
	ck_assert_uint_ne(mpa_crc32c(buf, sizeof(buf)), 0);
	ck_assert(!vector_upper_in_use());
}
END_TEST
#endif

/* ---- FPDU sender ----------------------------------------------------- */

START_TEST(tx_plain_fpdu_has_length_pad_and_zero_crc)
{
	struct mpa_tx tx;
	uint8_t w[64];
	static const uint8_t want[] = { 0x00, 0x05, 'h', 'e', 'l', 'l', 'o',
					0x00, 0, 0, 0, 0 };

	mpa_tx_init(&tx, 1000, false, false);
	ck_assert_uint_eq(frame_into(&tx, (const uint8_t *)"hello", 5, w),
			  sizeof(want));
	ck_assert_mem_eq(w, want, sizeof(want));
	ck_assert_uint_eq(tx.off, sizeof(want));
}
END_TEST

START_TEST(tx_crc_covers_length_ulpdu_and_pad)
{
	struct mpa_tx tx;
	uint8_t w[64];
	size_t n;

	mpa_tx_init(&tx, 1000, false, true);
	n = frame_into(&tx, (const uint8_t *)"hello!", 6, w);
	ck_assert_uint_eq(n, 2 + 6 + 0 + 4);
	ck_assert_uint_eq(get_le32(w + 8), ref_crc32c(w, 8));
	n = frame_into(&tx, (const uint8_t *)"abc", 3, w);
	ck_assert_uint_eq(n, 2 + 3 + 3 + 4);
	ck_assert_uint_eq(w[5] | w[6] | w[7], 0);
	ck_assert_uint_eq(get_le32(w + 8), ref_crc32c(w, 8));
}
END_TEST

/* A stream with markers needs the caller's room for them. */
START_TEST(tx_markers_without_room_are_refused)
{
	static uint8_t a[1200];
	struct iovec in = { a, sizeof(a) }, out[64];
	struct mpa_tx_frame f = { .markers = NULL };
	struct mpa_tx tx;

	mpa_tx_init(&tx, 2000, true, false);
	ck_assert_int_eq(mpa_tx_fpdu(&tx, &in, 1, &f, out, 64), -EINVAL);
	ck_assert_uint_eq(tx.off, 0);
	mpa_tx_init(&tx, 2000, false, false);
	ck_assert_int_gt(mpa_tx_fpdu(&tx, &in, 1, &f, out, 64), 0);
}
END_TEST

/*
 * Built whole, an FPDU is octet for octet what the iovec framer hands the
 * socket: for every marker and CRC setting, stream offsets that put a
 * marker at each place it can fall, lengths 0 to 2100, split over one to
 * three buffers; and both leave the stream offset at the same place.
 */
START_TEST(tx_copy_equals_the_iovec_framing)
{
	static uint8_t payload[2100], a[4096], b[4096];
	bool markers = _i & 1, crc = _i & 2;
	struct rng r;

	rng_seed(&r, "tx_copy", 0x5eed + (uint64_t)_i);
	rng_fill(&r, payload, sizeof(payload));
	for (int round = 0; round < 3000; round++) {
		size_t len = (size_t)rng_range(&r, 0, sizeof(payload));
		/* FPDUs start 4-aligned: lengths and markers keep them so */
		uint64_t off = 4 * rng_range(&r, 0, 1024);
		size_t cut1 = (size_t)rng_range(&r, 0, len);
		size_t cut2 = (size_t)rng_range(&r, cut1, len);
		struct iovec in[3] = { { payload, cut1 },
				       { payload + cut1, cut2 - cut1 },
				       { payload + cut2, len - cut2 } };
		struct mpa_tx t1, t2;
		size_t n1, n2;
		uint8_t f_markers[MPA_TX_MAX_MARKERS][MPA_MARKER_LEN];
		struct mpa_tx_frame f = { .markers = f_markers };
		struct iovec out[64];
		int cnt;

		mpa_tx_init(&t1, 4000, markers, crc);
		mpa_tx_init(&t2, 4000, markers, crc);
		t1.off = t2.off = off;
		cnt = mpa_tx_fpdu(&t1, in, 3, &f, out, 64);
		require(cnt > 0, "framing failed: %d", cnt);
		n1 = gather_pieces(out, cnt, a);
		n2 = mpa_tx_fpdu_copy(&t2, in, 3, len, b);
		require(n2 == n1 && memcmp(a, b, n1) == 0 && t1.off == t2.off,
			"round %d: len %zu at offset %llu differs", round, len,
			(unsigned long long)off);
		require(n2 == mpa_fpdu_wire_len(off, (uint32_t)len, markers),
			"round %d: len %zu at offset %llu: %zu octets, not %llu",
			round, len, (unsigned long long)off, n2,
			(unsigned long long)mpa_fpdu_wire_len(off, (uint32_t)len,
							      markers));
	}
}
END_TEST

/*
 * A ULPDU built in place and sealed is the FPDU the iovec framing sends:
 * lengths of 0 to 2100 (every PAD), CRC on and off, any 4-aligned stream
 * offset, and the octets past the FPDU untouched.
 */
START_TEST(tx_seal_equals_the_iovec_framing)
{
	static uint8_t payload[2100], a[4096], b[4096];
	bool crc = _i & 1;
	struct rng r;

	rng_seed(&r, "tx_seal", 0x5ea1 + (uint64_t)_i);
	rng_fill(&r, payload, sizeof(payload));
	for (int round = 0; round < 3000; round++) {
		size_t len = (size_t)rng_range(&r, 0, sizeof(payload));
		uint64_t off = 4 * rng_range(&r, 0, 1024);
		struct iovec in = { payload, len };
		struct mpa_tx t1, t2;
		struct mpa_tx_frame f = { 0 };
		struct iovec out[8];
		size_t n1, n2;
		int cnt;

		mpa_tx_init(&t1, 4000, false, crc);
		mpa_tx_init(&t2, 4000, false, crc);
		t1.off = t2.off = off;
		memset(b, 0xee, sizeof(b));
		cnt = mpa_tx_fpdu(&t1, &in, 1, &f, out, 8);
		require(cnt > 0, "framing failed: %d", cnt);
		n1 = gather_pieces(out, cnt, a);
		memcpy(mpa_tx_ulpdu_at(b), payload, len);
		n2 = mpa_tx_fpdu_seal(&t2, b, len);
		require(n2 == n1 && memcmp(a, b, n1) == 0 && t1.off == t2.off,
			"round %d: len %zu at offset %llu differs", round, len,
			(unsigned long long)off);
		require(b[n2] == 0xee, "round %d: len %zu: wrote past the FPDU",
			round, len);
	}
}
END_TEST

/*
 * Framing around the payload (header, PAD and CRC copied out, payload
 * pointed at) sends what the iovec framing does: headers of 0 to 28
 * octets, payloads of 0 to 2100 split over one or two buffers, CRC on
 * and off; the payload entries point into the caller's buffers, the
 * copied octets fill the frame exactly, and the offsets agree.  So does
 * mpa_tx_fpdu_around_one() with the header built in its frame and the
 * payload as one piece.
 */
START_TEST(tx_around_equals_the_iovec_framing)
{
	static uint8_t payload[2200], a[4096], b[4096], frame[64], one[64];
	bool crc = _i & 1;
	struct rng r;

	rng_seed(&r, "tx_around", 0xa20 + (uint64_t)_i);
	rng_fill(&r, payload, sizeof(payload));
	for (int round = 0; round < 3000; round++) {
		size_t hdr = (size_t)rng_range(&r, 0, 28);
		size_t len = (size_t)rng_range(&r, 0, 2100);
		size_t cut = (size_t)rng_range(&r, 0, len);
		uint64_t off = 4 * rng_range(&r, 0, 1024);
		struct iovec in[3] = {
			{ payload, hdr },
			{ payload + 64, cut },
			{ payload + 64 + cut, len - cut },
		};
		struct mpa_tx_frame f = { 0 };
		struct iovec out[8];
		struct mpa_tx t1, t2;
		size_t n1, n2, flen = mpa_tx_frame_len(hdr,
						       (uint32_t)(hdr + len));
		int cnt;

		mpa_tx_init(&t1, 4000, false, crc);
		mpa_tx_init(&t2, 4000, false, crc);
		t1.off = t2.off = off;
		cnt = mpa_tx_fpdu(&t1, in, 3, &f, out, 8);
		require(cnt > 0, "framing failed: %d", cnt);
		n1 = gather_pieces(out, cnt, a);
		memset(frame, 0xee, sizeof(frame));
		cnt = mpa_tx_fpdu_around(&t2, in, 3, frame, out, 8);
		require(cnt == 4, "round %d: %d pieces", round, cnt);
		n2 = gather_pieces(out, cnt, b);
		require(n2 == n1 && memcmp(a, b, n1) == 0 && t1.off == t2.off,
			"round %d: header %zu, payload %zu at offset %llu "
			"differs", round, hdr, len, (unsigned long long)off);
		require(out[1].iov_base == in[1].iov_base &&
				out[2].iov_base == in[2].iov_base,
			"round %d: the payload was not pointed at", round);
		require(out[0].iov_base == frame &&
				(uint8_t *)out[3].iov_base ==
					frame + out[0].iov_len &&
				out[0].iov_len + out[3].iov_len == flen &&
				frame[flen] == 0xee,
			"round %d: the frame is not %zu octets end to end",
			round, flen);

		mpa_tx_init(&t2, 4000, false, crc);
		t2.off = off;
		memset(one, 0xee, sizeof(one));
		memcpy(mpa_tx_ulpdu_at(one), payload, hdr);
		n2 = mpa_tx_fpdu_around_one(&t2, one, hdr, payload + 64, len,
					    out);
		require(n2 == n1 && gather_pieces(out, 3, b) == n1 &&
				memcmp(a, b, n1) == 0 && t1.off == t2.off,
			"round %d: header %zu, payload %zu in one piece at "
			"offset %llu differs",
			round, hdr, len, (unsigned long long)off);
		require(out[0].iov_base == one &&
				out[1].iov_base == payload + 64 &&
				(uint8_t *)out[2].iov_base ==
					one + out[0].iov_len &&
				out[0].iov_len + out[2].iov_len == flen &&
				one[flen] == 0xee,
			"round %d: one piece: the frame is not %zu octets end "
			"to end around the payload",
			round, flen);
	}
}
END_TEST

/*
 * mpa_tx_crc() brings the CRC of an FPDU, framed either way, up to what
 * its payload holds now: the same octets as framing the new payload.
 */
START_TEST(tx_crc_again_follows_a_changed_payload)
{
	uint8_t hdr[14], data[1001], frame[32], a[2048], b[2048];
	struct iovec in[2] = { { hdr, sizeof(hdr) }, { data, sizeof(data) } };
	struct mpa_tx_frame f = { 0 };
	struct iovec out[8], fresh[8];
	struct mpa_tx t, t2;
	size_t na, nb;
	int cnt, n;

	memset(hdr, 0x11, sizeof(hdr));
	memset(data, 0x22, sizeof(data));
	for (int around = 0; around < 2; around++) {
		mpa_tx_init(&t, 4000, false, true);
		t2 = t;
		cnt = around ? mpa_tx_fpdu_around(&t, in, 2, frame, out, 8)
			     : mpa_tx_fpdu(&t, in, 2, &f, out, 8);
		ck_assert_int_gt(cnt, 0);
		data[500] ^= 0x40;
		mpa_tx_crc(&t, out, cnt);
		na = gather_pieces(out, cnt, a);
		n = mpa_tx_fpdu(&t2, in, 2, &(struct mpa_tx_frame){ 0 }, fresh,
				8);
		ck_assert_int_gt(n, 0);
		nb = gather_pieces(fresh, n, b);
		ck_assert_uint_eq(na, nb);
		ck_assert_mem_eq(a, b, na);
	}
}
END_TEST

/* Around-framing refuses what it cannot frame, and keeps the offset. */
START_TEST(tx_around_refuses_markers_short_room_and_long_ulpdus)
{
	uint8_t hdr[14] = { 0 }, data[100] = { 0 }, frame[32];
	struct iovec in[2] = { { hdr, sizeof(hdr) }, { data, sizeof(data) } };
	struct iovec out[4];
	struct mpa_tx t;

	mpa_tx_init(&t, 4000, true, false);
	ck_assert_int_eq(mpa_tx_fpdu_around(&t, in, 2, frame, out, 4), -EINVAL);
	mpa_tx_init(&t, 4000, false, false);
	ck_assert_int_eq(mpa_tx_fpdu_around(&t, in, 2, frame, out, 2),
			 -ENOSPC);
	mpa_tx_init(&t, 100, false, false);
	ck_assert_int_eq(mpa_tx_fpdu_around(&t, in, 2, frame, out, 4),
			 -EMSGSIZE);
	ck_assert_uint_eq(t.off, 0);
	mpa_tx_init(&t, 114, false, false);
	ck_assert_int_eq(mpa_tx_fpdu_around(&t, in, 2, frame, out, 3), 3);
	ck_assert_uint_eq(t.off, 2 + 114 + 0 + 4);
}
END_TEST

/* FPDU pieces are copied with copy_small(): every length, no octet more. */
START_TEST(copy_small_copies_exactly_its_octets_at_any_alignment)
{
	uint8_t src[256], dst[256 + 32];

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 1);
	for (size_t n = 0; n <= 3 * COPY_SMALL_MAX; n++) {
		for (size_t at = 0; at < 16; at++) {
			memset(dst, 0xee, sizeof(dst));
			copy_small(dst + at, src + (n + at) % 16, n);
			for (size_t i = 0; i < sizeof(dst); i++) {
				bool in = i >= at && i < at + n;
				uint8_t want = in ? src[(n + at) % 16 + i - at]
						  : 0xee;

				require(dst[i] == want,
					"%zu octets at %zu: octet %zu is %#x",
					n, at, i, dst[i]);
			}
		}
	}
}
END_TEST

START_TEST(tx_payload_entries_point_into_caller_buffers)
{
	static uint8_t a[300], b[900];
	struct iovec in[2] = { { a, sizeof(a) }, { b, sizeof(b) } }, out[64];
	uint8_t f_markers[MPA_TX_MAX_MARKERS][MPA_MARKER_LEN];
	struct mpa_tx_frame f = { .markers = f_markers };
	struct mpa_tx tx;
	int markers = _i;
	size_t seen = 0;
	int n;

	mpa_tx_init(&tx, 2000, markers, true);
	tx.off = 100;
	n = mpa_tx_fpdu(&tx, in, 2, &f, out, 64);
	ck_assert_int_gt(n, 0);
	for (int i = 0; i < n; i++) {
		uint8_t *p = out[i].iov_base;

		if (p >= a && p < a + sizeof(a)) {
			ck_assert_ptr_eq(p, a + seen);
			seen += out[i].iov_len;
		} else if (p >= b && p < b + sizeof(b)) {
			ck_assert_ptr_eq(p, b + seen - sizeof(a));
			seen += out[i].iov_len;
		} else {
			bool in_frame = p >= (uint8_t *)&f &&
					p < (uint8_t *)(&f + 1);
			bool a_marker = p >= f_markers[0] &&
					p < f_markers[0] + sizeof(f_markers);

			ck_assert_msg(in_frame || a_marker,
				      "iovec %d points neither at payload nor frame",
				      i);
		}
	}
	ck_assert_uint_eq(seen, sizeof(a) + sizeof(b));
	/* from offset 100 the markers at 512 and 1024 fall inside */
	ck_assert_uint_eq(f.n_markers, markers ? 2 : 0);
}
END_TEST

START_TEST(tx_first_fpdu_begins_with_marker_covered_by_crc)
{
	struct mpa_tx tx;
	uint8_t w[64];
	size_t n;

	mpa_tx_init(&tx, 1000, true, true);
	n = frame_into(&tx, (const uint8_t *)"hi", 2, w);
	ck_assert_uint_eq(n, 4 + 2 + 2 + 0 + 4);
	ck_assert_uint_eq(get_be32(w), 0); /* reserved 0, FPDUPTR 0 */
	ck_assert_uint_eq(get_be16(w + 4), 2);
	ck_assert_uint_eq(get_le32(w + 8), ref_crc32c(w, 8));
}
END_TEST

START_TEST(tx_marker_inside_ulpdu_points_back_to_length_field)
{
	struct mpa_tx tx;
	uint8_t payload[100], w[256];
	size_t n;

	memset(payload, 0x5a, sizeof(payload));
	mpa_tx_init(&tx, 1000, true, true);
	tx.off = 500;
	n = frame_into(&tx, payload, sizeof(payload), w);
	ck_assert_uint_eq(n, 2 + 100 + 2 + 4 + 4);
	/* marker at stream offset 512, 12 octets after the FPDU start */
	ck_assert_uint_eq(get_be16(w + 12), 0);
	ck_assert_uint_eq(get_be16(w + 14), 12);
	ck_assert_uint_eq(get_le32(w + n - 4), ref_crc32c(w, n - 4));
}
END_TEST

START_TEST(tx_marker_between_pad_and_crc)
{
	struct mpa_tx tx;
	uint8_t payload[253], w[512];
	size_t n;

	/* 2 + 253 + 1 pad = 256: from offset 256 the pad ends at 512 */
	memset(payload, 0x11, sizeof(payload));
	mpa_tx_init(&tx, 1000, true, true);
	tx.off = 256;
	n = frame_into(&tx, payload, sizeof(payload), w);
	ck_assert_uint_eq(n, 256 + 4 + 4);
	ck_assert_uint_eq(w[255], 0); /* pad */
	ck_assert_uint_eq(get_be16(w + 256), 0);
	ck_assert_uint_eq(get_be16(w + 258), 256);
	ck_assert_uint_eq(get_le32(w + 260), ref_crc32c(w, 260));
	ck_assert_uint_eq(tx.off, 256 + 264);
}
END_TEST

START_TEST(tx_marker_right_before_length_field_has_fpduptr_zero)
{
	struct mpa_tx tx;
	uint8_t payload[700], w[1024];
	size_t n;

	memset(payload, 0x22, sizeof(payload));
	mpa_tx_init(&tx, 1000, true, false);
	tx.off = 3 * 512;
	n = frame_into(&tx, payload, sizeof(payload), w);
	ck_assert_uint_eq(get_be32(w), 0);
	ck_assert_uint_eq(get_be16(w + 4), 700);
	/* next marker 512 octets on: 508 octets after ULPDU_LENGTH */
	ck_assert_uint_eq(get_be16(w + 512 + 2), 508);
	ck_assert_uint_eq(n, mpa_fpdu_wire_len(3 * 512, 700, true));
	ck_assert_uint_eq(get_le32(w + n - 4), 0); /* CRC off: zeros */
}
END_TEST

START_TEST(tx_refuses_ulpdu_over_mulpdu_and_keeps_offset)
{
	static uint8_t buf[2000];
	struct iovec in = { buf, 1001 }, out[64];
	uint8_t f_markers[MPA_TX_MAX_MARKERS][MPA_MARKER_LEN];
	struct mpa_tx_frame f = { .markers = f_markers };
	struct mpa_tx tx;

	mpa_tx_init(&tx, 1000, true, true);
	tx.off = 40;
	ck_assert_int_eq(mpa_tx_fpdu(&tx, &in, 1, &f, out, 64), -EMSGSIZE);
	ck_assert_uint_eq(tx.off, 40);
	in.iov_len = 1000;
	ck_assert_int_eq(mpa_tx_fpdu(&tx, &in, 1, &f, out, 4), -ENOSPC);
	ck_assert_uint_eq(tx.off, 40);
	ck_assert_int_gt(mpa_tx_fpdu(&tx, &in, 1, &f, out, 64), 0);
}
END_TEST

START_TEST(tx_iov_max_is_always_enough)
{
	static uint8_t buf[MPA_MAX_ULPDU_MARKERS];
	struct iovec in[3], out[1024];
	uint8_t f_markers[MPA_TX_MAX_MARKERS][MPA_MARKER_LEN];
	struct mpa_tx_frame f = { .markers = f_markers };
	struct mpa_tx tx;
	struct rng r;

	rng_seed(&r, "tx_iov_max", 0x10f);
	for (int round = 0; round < 2000; round++) {
		bool markers = round % 2;
		size_t len = (size_t)rng_range(&r, 0, sizeof(buf));
		size_t cut1 = (size_t)rng_range(&r, 0, len);
		size_t cut2 = (size_t)rng_range(&r, cut1, len);
		int max;

		in[0] = (struct iovec){ buf, cut1 };
		in[1] = (struct iovec){ buf + cut1, cut2 - cut1 };
		in[2] = (struct iovec){ buf + cut2, len - cut2 };
		mpa_tx_init(&tx, 0xffff, markers, false);
		tx.off = rng_range(&r, 0, 1u << 20) * 4;
		max = mpa_tx_iov_max(3, (uint32_t)len, markers);
		require(max <= 1024, "iov max %d", max);
		require(mpa_tx_fpdu(&tx, in, 3, &f, out, max) > 0,
			"%d iovecs not enough for %zu octets", max, len);
	}
}
END_TEST

/* ---- MULPDU ---------------------------------------------------------- */

START_TEST(mulpdu_follows_rfc5044_formulas)
{
	ck_assert_uint_eq(mpa_mulpdu(1460, false), 1454);
	ck_assert_uint_eq(mpa_mulpdu(1460, true), 1460 - (6 + 4 * 3));
	ck_assert_uint_eq(mpa_mulpdu(1449, false), 1449 - (6 + 1));
	ck_assert_uint_eq(mpa_mulpdu(65483, false), 65474);
	ck_assert_uint_eq(mpa_mulpdu(65483, true), 65483 - (6 + 4 * 128 + 3));
	ck_assert_uint_eq(mpa_mulpdu(65535, true), MPA_MAX_ULPDU_MARKERS);
	ck_assert_uint_eq(mpa_mulpdu(1u << 20, false), 65535 - 9);
	ck_assert_uint_eq(mpa_mulpdu(4, false), 0);
}
END_TEST

START_TEST(mulpdu_fpdu_fits_emss_from_every_offset)
{
	for (uint32_t emss = 16; emss <= 4200; emss++) {
		for (int markers = 0; markers < 2; markers++) {
			uint16_t m = mpa_mulpdu(emss, markers);

			for (uint64_t off = 0; off < 512; off += 4)
				require(mpa_fpdu_wire_len(off, m, markers) <= emss,
					"EMSS %u markers %d offset %u: FPDU too long",
					emss, markers, (unsigned int)off);
		}
	}
}
END_TEST

START_TEST(wire_len_matches_what_the_sender_emits)
{
	static uint8_t buf[5000], w[6000];
	struct mpa_tx tx;
	struct rng r;

	rng_seed(&r, "wire_len", 0x717e);
	for (int round = 0; round < 3000; round++) {
		size_t len = (size_t)rng_range(&r, 0, sizeof(buf));
		uint64_t off = rng_range(&r, 0, 4096) * 4;

		mpa_tx_init(&tx, 0xffff, true, false);
		tx.off = off;
		require(frame_into(&tx, buf, len, w) ==
				mpa_fpdu_wire_len(off, (uint32_t)len, true),
			"wire length differs for %zu octets at %u", len,
			(unsigned int)off);
	}
}
END_TEST

/* ---- de-framer: round trips ------------------------------------------ */

#define ROUND_TRIP_MAX_LEN 2100

/* All payloads 0..2100 back to back, each with its own pattern. */
static size_t build_all_lengths(struct mpa_tx *tx, uint8_t *w, uint8_t *plain)
{
	static uint8_t ulpdu[ROUND_TRIP_MAX_LEN];
	size_t n = 0, p = 0;

	for (size_t len = 0; len <= ROUND_TRIP_MAX_LEN; len++) {
		for (size_t i = 0; i < len; i++)
			ulpdu[i] = (uint8_t)(len * 7 + i);
		memcpy(plain + p, ulpdu, len);
		p += len;
		n += frame_into(tx, ulpdu, len, w + n);
	}
	return n;
}

static void check_all_lengths(const struct rx_log *l, const uint8_t *plain)
{
	size_t total = (size_t)ROUND_TRIP_MAX_LEN * (ROUND_TRIP_MAX_LEN + 1) / 2;

	ck_assert_uint_eq(l->begins, ROUND_TRIP_MAX_LEN + 1);
	ck_assert_uint_eq(l->ends, ROUND_TRIP_MAX_LEN + 1);
	for (uint32_t i = 0; i <= ROUND_TRIP_MAX_LEN; i++)
		require(l->lens[i] == i, "ULPDU %u announced %u octets", i,
			l->lens[i]);
	ck_assert_uint_eq(l->len, total);
	ck_assert_mem_eq(l->data, plain, total);
}

/*
 * _i 0..3: markers (bit 0) and CRC (bit 1) from stream offset 0; from 4 on,
 * markers on with CRC off/on from every other aligned offset 4..508.  Each
 * configuration is fed whole, then cut at random points, then with direct
 * placement mixed in: all three must see the same ULPDUs.
 */
#define ROUND_TRIP_CONFIGS (4 + 2 * (MPA_MARKER_SPACING / 4 - 1))

START_TEST(round_trip_every_length_and_start_offset)
{
	size_t total = (size_t)ROUND_TRIP_MAX_LEN * (ROUND_TRIP_MAX_LEN + 1) / 2;
	size_t wire_cap = total * 2 + 100000;
	uint8_t *w = malloc(wire_cap), *plain = malloc(total);
	bool markers = _i < 4 ? _i & 1 : true;
	bool crc = _i < 4 ? _i & 2 : (_i - 4) & 1;
	uint64_t start = _i < 4 ? 0 : (uint64_t)((_i - 4) / 2 + 1) * 4;
	struct mpa_tx tx;
	struct mpa_rx rx;
	struct rx_log l;
	struct rng r;
	size_t n;

	ck_assert_ptr_nonnull(w);
	ck_assert_ptr_nonnull(plain);
	mpa_tx_init(&tx, 0xffff, markers, crc);
	tx.off = start;
	n = build_all_lengths(&tx, w, plain);
	ck_assert_uint_le(n, wire_cap);

	rng_seed(&r, "round_trip cuts", 0x5eed0000u + (uint64_t)_i);
	for (int pass = 0; pass < 3; pass++) {
		rx_log_init(&l, total);
		mpa_rx_init(&rx, &rx_log_ops, &l, 0xffff, markers, crc);
		rx.off = start;
		if (pass == 0)
			ck_assert_int_eq(mpa_rx_feed(&rx, w, n), 0);
		else
			ck_assert_int_eq(feed_cut(&rx, &l, &r, w, n, 1500,
						  pass == 2), 0);
		ck_assert_int_eq(mpa_rx_eof(&rx), 0);
		check_all_lengths(&l, plain);
		rx_log_free(&l);
	}
	free(w);
	free(plain);
}
END_TEST

START_TEST(round_trip_one_octet_at_a_time)
{
	static uint8_t w[400000], plain[300000];
	struct mpa_tx tx;
	struct mpa_rx rx;
	struct rx_log l;
	size_t n = 0, p = 0;

	mpa_tx_init(&tx, 0xffff, true, true);
	for (size_t len = 0; len <= 700; len++) {
		for (size_t i = 0; i < len; i++)
			plain[p + i] = (uint8_t)(len ^ i);
		n += frame_into(&tx, plain + p, len, w + n);
		p += len;
	}
	rx_log_init(&l, p);
	mpa_rx_init(&rx, &rx_log_ops, &l, 0xffff, true, true);
	for (size_t i = 0; i < n; i++)
		require(mpa_rx_feed(&rx, w + i, 1) == 0, "octet %zu refused", i);
	ck_assert_int_eq(mpa_rx_eof(&rx), 0);
	ck_assert_uint_eq(l.ends, 701);
	ck_assert_uint_eq(l.len, p);
	ck_assert_mem_eq(l.data, plain, p);
	rx_log_free(&l);
}
END_TEST

/* ---- de-framer: errors ----------------------------------------------- */

/* Three FPDUs of 300 octets each, markers and CRC on. */
static size_t three_fpdus(uint8_t *w, bool crc)
{
	uint8_t payload[300];
	struct mpa_tx tx;
	size_t n = 0;

	mpa_tx_init(&tx, 1000, true, crc);
	for (int k = 0; k < 3; k++) {
		memset(payload, 'a' + k, sizeof(payload));
		n += frame_into(&tx, payload, sizeof(payload), w + n);
	}
	return n;
}

static int feed_all(const uint8_t *w, size_t n, bool crc, struct rx_log *l,
		    uint16_t max_ulpdu)
{
	struct mpa_rx rx;
	int rc;

	rx_log_init(l, 4096);
	mpa_rx_init(&rx, &rx_log_ops, l, max_ulpdu, true, crc);
	rc = mpa_rx_feed(&rx, w, n);
	if (!rc)
		rc = mpa_rx_eof(&rx);
	return rc;
}

START_TEST(rx_flipped_payload_bit_is_a_crc_error)
{
	uint8_t w[2048];
	size_t n = three_fpdus(w, true);
	struct rx_log l;

	/* first FPDU: marker(4) hdr(2) 300 pad(2) crc(4) = 312 octets */
	w[312 + 2 + 10] ^= 0x04;
	ck_assert_int_eq(feed_all(w, n, true, &l, 1000), -IW_EMPA_CRC);
	ck_assert_uint_eq(l.ends, 1); /* the damaged ULPDU never completes */
	rx_log_free(&l);
}
END_TEST

/*
 * A marker's reserved octets are checked by nothing but the CRC, which
 * covers them wherever the stream is cut: the marker inside the second
 * FPDU (stream octet 512) is damaged, and the stream fed in pieces of
 * every length from 1 to 64 octets.
 */
START_TEST(rx_flipped_marker_bit_is_a_crc_error_however_cut)
{
	uint8_t w[2048];
	size_t n = three_fpdus(w, true);
	struct rx_log l;

	w[512] ^= 0x01;
	for (size_t piece = 1; piece <= 64; piece++) {
		struct mpa_rx rx;
		int rc = 0;

		rx_log_init(&l, 4096);
		mpa_rx_init(&rx, &rx_log_ops, &l, 1000, true, true);
		for (size_t at = 0; at < n && !rc; at += piece)
			rc = mpa_rx_feed(&rx, w + at,
					 n - at < piece ? n - at : piece);
		require(rc == -IW_EMPA_CRC && l.ends == 1,
			"pieces of %zu: %d, %u ULPDUs ended", piece, rc,
			l.ends);
		rx_log_free(&l);
	}
}
END_TEST

START_TEST(rx_flipped_crc_bit_is_a_crc_error)
{
	uint8_t w[2048];
	size_t n = three_fpdus(w, true);
	struct rx_log l;

	w[n - 1] ^= 0x80;
	ck_assert_int_eq(feed_all(w, n, true, &l, 1000), -IW_EMPA_CRC);
	ck_assert_uint_eq(l.ends, 2);
	rx_log_free(&l);
}
END_TEST

START_TEST(rx_ignores_crc_field_when_crc_not_negotiated)
{
	uint8_t w[2048];
	size_t n = three_fpdus(w, false);
	struct rx_log l;

	w[n - 1] = 0x99;
	w[311] = 0x42;
	ck_assert_int_eq(feed_all(w, n, false, &l, 1000), 0);
	ck_assert_uint_eq(l.ends, 3);
	rx_log_free(&l);
}
END_TEST

START_TEST(rx_leading_marker_with_nonzero_fpduptr_is_a_marker_error)
{
	uint8_t w[2048];
	size_t n = three_fpdus(w, false);
	struct rx_log l;

	put_be16(w + 2, 4);
	ck_assert_int_eq(feed_all(w, n, false, &l, 1000), -IW_EMPA_MARKER);
	ck_assert_uint_eq(l.begins, 0);
	rx_log_free(&l);
}
END_TEST

START_TEST(rx_interior_marker_off_by_four_is_a_marker_error)
{
	uint8_t w[2048];
	size_t n = three_fpdus(w, false);
	struct rx_log l;

	/* stream offset 512 lies in the second FPDU (312..623): FPDUPTR 200 */
	ck_assert_uint_eq(get_be16(w + 512 + 2), 200);
	put_be16(w + 512 + 2, 204);
	ck_assert_int_eq(feed_all(w, n, false, &l, 1000), -IW_EMPA_MARKER);
	ck_assert_uint_eq(l.ends, 1);
	rx_log_free(&l);
}
END_TEST

START_TEST(rx_marker_error_found_when_marker_split_across_pieces)
{
	uint8_t w[2048];
	size_t n = three_fpdus(w, false);
	struct rx_log l;
	struct mpa_rx rx;

	put_be16(w + 512 + 2, 196);
	rx_log_init(&l, 4096);
	mpa_rx_init(&rx, &rx_log_ops, &l, 1000, true, false);
	ck_assert_int_eq(mpa_rx_feed(&rx, w, 513), 0);
	ck_assert_int_eq(mpa_rx_feed(&rx, w + 513, 2), 0);
	ck_assert_int_eq(mpa_rx_feed(&rx, w + 515, n - 515), -IW_EMPA_MARKER);
	rx_log_free(&l);
}
END_TEST

START_TEST(rx_ulpdu_over_limit_is_refused_before_its_payload)
{
	uint8_t w[2048];
	size_t n = three_fpdus(w, false);
	struct rx_log l;

	ck_assert_int_eq(feed_all(w, n, false, &l, 299),
			 -IW_EMPA_ULPDU_TOO_LONG);
	ck_assert_uint_eq(l.begins, 0);
	ck_assert_uint_eq(l.len, 0);
	rx_log_free(&l);
}
END_TEST

START_TEST(rx_stream_ending_inside_an_fpdu_is_lost)
{
	uint8_t w[2048];
	size_t n = three_fpdus(w, true);

	for (size_t cut = 0; cut <= n; cut++) {
		bool boundary = cut == 0 || cut == 312 || cut == 624 || cut == n;
		struct rx_log l;
		struct mpa_rx rx;

		rx_log_init(&l, 4096);
		mpa_rx_init(&rx, &rx_log_ops, &l, 1000, true, true);
		ck_assert_int_eq(mpa_rx_feed(&rx, w, cut), 0);
		ck_assert_int_eq(mpa_rx_eof(&rx),
				 boundary ? 0 : -IW_EMPA_STREAM_LOST);
		rx_log_free(&l);
	}
}
END_TEST

START_TEST(rx_error_sticks_and_stops_callbacks)
{
	uint8_t w[2048];
	size_t n = three_fpdus(w, true);
	struct rx_log l;
	struct mpa_rx rx;

	w[n - 1] ^= 1;
	rx_log_init(&l, 4096);
	mpa_rx_init(&rx, &rx_log_ops, &l, 1000, true, true);
	ck_assert_int_eq(mpa_rx_feed(&rx, w, n), -IW_EMPA_CRC);
	ck_assert_int_eq(mpa_rx_feed(&rx, w, 312), -IW_EMPA_CRC);
	ck_assert_int_eq(mpa_rx_eof(&rx), -IW_EMPA_CRC);
	ck_assert_uint_eq(mpa_rx_payload_window(&rx), 0);
	ck_assert_uint_eq(l.begins, 3);
	rx_log_free(&l);
}
END_TEST

START_TEST(rx_callback_error_stops_the_feed)
{
	uint8_t w[2048];
	size_t n = three_fpdus(w, true);
	struct rx_log l;
	struct mpa_rx rx;

	rx_log_init(&l, 4096);
	l.fail_data = -EIO;
	mpa_rx_init(&rx, &rx_log_ops, &l, 1000, true, true);
	ck_assert_int_eq(mpa_rx_feed(&rx, w, n), -EIO);
	ck_assert_uint_eq(l.begins, 1);
	ck_assert_uint_eq(l.ends, 0);
	rx_log_free(&l);
}
END_TEST

START_TEST(rx_placing_beyond_the_window_is_refused)
{
	uint8_t w[2048];
	size_t n = three_fpdus(w, false);
	struct rx_log l;
	struct mpa_rx rx;

	(void)n;
	rx_log_init(&l, 4096);
	mpa_rx_init(&rx, &rx_log_ops, &l, 1000, true, false);
	ck_assert_uint_eq(mpa_rx_payload_window(&rx), 0); /* marker first */
	ck_assert_int_eq(mpa_rx_feed(&rx, w, 6 + 10), 0);
	ck_assert_uint_eq(mpa_rx_payload_window(&rx), 290);
	ck_assert_int_eq(mpa_rx_payload_placed(&rx, w + 16, 291), -EINVAL);
	ck_assert_int_eq(mpa_rx_payload_placed(&rx, w + 16, 290), 0);
	ck_assert_uint_eq(mpa_rx_payload_window(&rx), 0); /* pad and CRC */
	rx_log_free(&l);
}
END_TEST

/* ---- de-framer: held ULPDUs (CRC on) ------------------------------- */

/*
 * RFC 5044 section 8: a ULPDU whose CRC fails does not go up.  Held, not
 * one octet of the damaged one reaches the layer above, not even its
 * header; the one before it went up whole.
 */
START_TEST(rx_held_ulpdu_with_a_crc_error_never_goes_up)
{
	static uint8_t hold[1000];
	uint8_t w[2048];
	size_t n = three_fpdus(w, true);
	struct rx_log l;
	struct mpa_rx rx;

	w[312 + 2 + 10] ^= 0x04; /* in the second FPDU's payload */
	rx_log_init(&l, 4096);
	mpa_rx_init(&rx, &rx_log_ops, &l, 1000, true, true);
	mpa_rx_hold(&rx, hold, sizeof(hold));
	ck_assert_int_eq(mpa_rx_feed(&rx, w, n), -IW_EMPA_CRC);
	ck_assert_uint_eq(l.begins, 1);
	ck_assert_uint_eq(l.ends, 1);
	ck_assert_uint_eq(l.len, 300);
	rx_log_free(&l);
}
END_TEST

/*
 * Held ULPDUs go up whole, one begin, one piece of data and one end
 * each, wherever the stream is cut and whether the payload comes through
 * the feed or straight into the hold (mpa_rx_held_at()); without CRC
 * the hold is not used.
 */
START_TEST(rx_held_ulpdus_go_up_whole_after_their_crc)
{
	static uint8_t hold[1000];
	uint8_t w[2048];
	size_t n = three_fpdus(w, _i != 2);
	struct rx_log l;
	struct mpa_rx rx;
	struct rng r;
	size_t i = 0;

	rng_seed(&r, "rx_held_ulpdus", 0x4011d + (uint64_t)_i);
	rx_log_init(&l, 4096);
	mpa_rx_init(&rx, &rx_log_ops, &l, 1000, true, _i != 2);
	mpa_rx_hold(&rx, hold, sizeof(hold));
	while (i < n) {
		size_t cut = (size_t)rng_range(&r, 1, 40);
		uint8_t *at = mpa_rx_held_at(&rx);
		size_t win = mpa_rx_payload_window(&rx);

		if (cut > n - i)
			cut = n - i;
		ck_assert(_i != 2 || at == NULL);
		if (_i == 1 && at && win) {
			cut = cut < win ? cut : win;
			memcpy(at, w + i, cut);
			ck_assert_int_eq(mpa_rx_payload_placed(&rx, at, cut), 0);
		} else {
			ck_assert_int_eq(mpa_rx_feed(&rx, w + i, cut), 0);
		}
		/* with CRC nothing of a ULPDU is up before its end */
		ck_assert(_i == 2 || !l.open);
		i += cut;
	}
	ck_assert_int_eq(mpa_rx_eof(&rx), 0);
	ck_assert_uint_eq(l.begins, 3);
	ck_assert_uint_eq(l.ends, 3);
	ck_assert_uint_eq(l.len, 900);
	for (int k = 0; k < 3; k++)
		for (int j = 0; j < 300; j++)
			require(l.data[k * 300 + j] == 'a' + k,
				"ULPDU %d octet %d", k, j);
	rx_log_free(&l);
}
END_TEST

/* ---- error table ----------------------------------------------------- */

START_TEST(every_error_code_has_words_and_mpa_codes_their_triples)
{
	static const struct {
		int code;
		int ecode; /* -1: no Terminate */
	} mpa[] = {
		{ IW_EMPA_STREAM_LOST, 0x01 }, { IW_EMPA_CRC, 0x02 },
		{ IW_EMPA_MARKER, 0x03 }, { IW_EMPA_ULPDU_TOO_LONG, 0x03 },
		{ IW_EMPA_BAD_KEY, 0x04 }, { IW_EMPA_BAD_REVISION, 0x04 },
		{ IW_EMPA_PD_TOO_LONG, 0x04 },
		{ IW_EMPA_ENHANCED_SHORT, 0x04 }, { IW_EMPA_UNEXPECTED, 0x04 },
		{ IW_EMPA_MARKERS_REFUSED, 0x04 }, { IW_EMPA_CRC_REFUSED, 0x04 },
		{ IW_EMPA_CRC_DROPPED, 0x04 },
		{ IW_EMPA_INSUFFICIENT_IRD, 0x06 },
		{ IW_EMPA_NO_MATCHING_RTR, 0x07 },
		{ IW_EMPA_RTR_INVALID, 0x07 }, { IW_EMPA_REJECTED, -1 },
	};
	struct iw_term_triple t;

	for (int c = IW_ERROR_BASE; c < IW_ERROR_END; c++) {
		const struct iw_error_info *e = iw_error_info(-c);

		ck_assert_ptr_nonnull(e);
		ck_assert_int_eq(e->code, c);
		ck_assert_ptr_nonnull(e->text);
		ck_assert_str_eq(iw_strerror(-c), e->text);
		ck_assert_int_eq(strncmp(e->name, "IW_E", 4), 0);
		for (int d = IW_ERROR_BASE; d < c; d++)
			ck_assert_str_ne(iw_error_info(d)->text, e->text);
	}
	for (size_t i = 0; i < sizeof(mpa) / sizeof(mpa[0]); i++) {
		bool has = iw_error_term(-mpa[i].code, &t);

		ck_assert_int_eq(has, mpa[i].ecode >= 0);
		if (!has)
			continue;
		ck_assert_uint_eq(t.layer, IW_TERM_LAYER_LLP);
		ck_assert_uint_eq(t.etype, IW_TERM_ETYPE_MPA);
		ck_assert_uint_eq(t.ecode, mpa[i].ecode);
	}
	ck_assert_str_eq(iw_strerror(-ENOMEM), "Cannot allocate memory");
	ck_assert_ptr_null(iw_error_info(-ENOMEM));
}
END_TEST

Suite *mpa_framing_suite(void)
{
	Suite *s = suite_create("mpa");
	TCase *tc;

	tc = tcase_create("crc");
	tcase_add_test(tc, crc_matches_rfc3720_b4_vectors);
	tcase_add_test(tc, crc_is_written_in_rfc3720_listing_order);
	tcase_add_test(tc, crc_chained_over_pieces_equals_one_shot);
#if defined(__x86_64__)
	/* only where there is something to clear and a way to see it */
	if (xinuse_shows_vector_upper())
		tcase_add_test(tc, crc_leaves_vector_upper_halves_clear);
#endif
	suite_add_tcase(s, tc);

	tc = tcase_create("tx");
	tcase_add_test(tc, tx_plain_fpdu_has_length_pad_and_zero_crc);
	tcase_add_test(tc, tx_crc_covers_length_ulpdu_and_pad);
	tcase_add_test(tc, tx_markers_without_room_are_refused);
	tcase_add_loop_test(tc, tx_copy_equals_the_iovec_framing, 0, 4);
	tcase_add_loop_test(tc, tx_seal_equals_the_iovec_framing, 0, 2);
	tcase_add_loop_test(tc, tx_around_equals_the_iovec_framing, 0, 2);
	tcase_add_test(tc, tx_crc_again_follows_a_changed_payload);
	tcase_add_test(tc, tx_around_refuses_markers_short_room_and_long_ulpdus);
	tcase_add_test(tc, copy_small_copies_exactly_its_octets_at_any_alignment);
	tcase_add_loop_test(tc, tx_payload_entries_point_into_caller_buffers,
			    0, 2);
	tcase_add_test(tc, tx_first_fpdu_begins_with_marker_covered_by_crc);
	tcase_add_test(tc, tx_marker_inside_ulpdu_points_back_to_length_field);
	tcase_add_test(tc, tx_marker_between_pad_and_crc);
	tcase_add_test(tc, tx_marker_right_before_length_field_has_fpduptr_zero);
	tcase_add_test(tc, tx_refuses_ulpdu_over_mulpdu_and_keeps_offset);
	tcase_add_test(tc, tx_iov_max_is_always_enough);
	suite_add_tcase(s, tc);

	tc = tcase_create("mulpdu");
	tcase_add_test(tc, mulpdu_follows_rfc5044_formulas);
	tcase_add_test(tc, mulpdu_fpdu_fits_emss_from_every_offset);
	tcase_add_test(tc, wire_len_matches_what_the_sender_emits);
	suite_add_tcase(s, tc);

	tc = tcase_create("round_trip");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, round_trip_every_length_and_start_offset, 0,
			    ROUND_TRIP_CONFIGS);
	tcase_add_test(tc, round_trip_one_octet_at_a_time);
	suite_add_tcase(s, tc);

	tc = tcase_create("rx_errors");
	tcase_add_test(tc, rx_flipped_payload_bit_is_a_crc_error);
	tcase_add_test(tc, rx_flipped_marker_bit_is_a_crc_error_however_cut);
	tcase_add_test(tc, rx_flipped_crc_bit_is_a_crc_error);
	tcase_add_test(tc, rx_ignores_crc_field_when_crc_not_negotiated);
	tcase_add_test(tc, rx_leading_marker_with_nonzero_fpduptr_is_a_marker_error);
	tcase_add_test(tc, rx_interior_marker_off_by_four_is_a_marker_error);
	tcase_add_test(tc, rx_marker_error_found_when_marker_split_across_pieces);
	tcase_add_test(tc, rx_ulpdu_over_limit_is_refused_before_its_payload);
	tcase_add_test(tc, rx_stream_ending_inside_an_fpdu_is_lost);
	tcase_add_test(tc, rx_error_sticks_and_stops_callbacks);
	tcase_add_test(tc, rx_callback_error_stops_the_feed);
	tcase_add_test(tc, rx_placing_beyond_the_window_is_refused);
	tcase_add_test(tc, rx_held_ulpdu_with_a_crc_error_never_goes_up);
	tcase_add_loop_test(tc, rx_held_ulpdus_go_up_whole_after_their_crc, 0, 3);
	tcase_add_test(tc, every_error_code_has_words_and_mpa_codes_their_triples);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(mpa_framing_suite());
	int failed;

	srunner_add_suite(sr, mpa_frames_suite());
	srunner_add_suite(sr, mpa_scan_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
