// SPDX-License-Identifier: MIT
/*
 * The FPDU de-framer (RFC 5044 sections 4, 4.3 and 4.4) with every
 * marker/CRC combination, fed the stream in random cuts.
 *
 * Input: a configuration octet (markers, CRC, framed or raw, whether to
 * use the direct placement window), the receive limit, the seed of the
 * cuts, then
 *  - framed: up to three octet corruptions and a list of ULPDUs, which
 *    the sender (fpdu_tx.c) frames with markers and CRC as configured;
 *  - raw: the stream itself.
 * The stream is fed whole to one receiver and in random pieces to another
 * (some payload through the direct placement window): both must report
 * the same ULPDUs and the same error.  The scanner (scan.c), a second
 * reading of the same rules, must find every FPDU the receiver took intact
 * and explain the fault the receiver stopped at.  An uncorrupted framed
 * stream must come out exactly as it went in.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "lib/error.h"
#include "mpa/mpa.h"

#define CFG_MARKERS 0x01
#define CFG_CRC 0x02
#define CFG_FRAMED 0x04
#define CFG_WINDOW 0x08

#define MAX_MUTATIONS 3

/*
 * What a receiver handed up: 'B' len(2), the ULPDU octets, 'E' per FPDU.
 * The target's own bookkeeping is left out of the coverage the fuzzer
 * steers by (FZ_NO_COVERAGE): it would cost more than the code under test.
 */
struct log {
	uint8_t *p;
	size_t len, cap;
	size_t ends; /* FPDUs completed */
};

FZ_NO_COVERAGE
static void log_put(struct log *l, const uint8_t *p, size_t n)
{
	fz_check(l->len + n <= l->cap, "log overflow (%zu + %zu of %zu)",
		 l->len, n, l->cap);
	memcpy(l->p + l->len, p, n);
	l->len += n;
}

FZ_NO_COVERAGE
static int on_begin(void *arg, uint16_t len)
{
	uint8_t b[3] = { 'B', (uint8_t)(len >> 8), (uint8_t)len };

	log_put(arg, b, sizeof(b));
	return 0;
}

FZ_NO_COVERAGE
static int on_data(void *arg, const uint8_t *p, size_t len)
{
	log_put(arg, p, len);
	return 0;
}

FZ_NO_COVERAGE
static int on_end(void *arg)
{
	struct log *l = arg;

	log_put(l, (const uint8_t *)"E", 1);
	l->ends++;
	return 0;
}

static const struct mpa_rx_ops log_ops = { on_begin, on_data, on_end };

struct run {
	bool markers, crc, framed, window;
	uint16_t max_ulpdu;
	uint64_t seed;
	uint8_t *stream;
	size_t len, cap;
	/* framed: the log an intact stream must produce */
	struct log want;
	bool want_valid;
	int want_err; /* error an intact stream ends with */
};

/* Frames one ULPDU (cut into two iovecs) onto the end of the stream. */
static void frame_ulpdu(struct run *r, struct mpa_tx *tx, const uint8_t *u,
			uint16_t len, size_t split)
{
	struct iovec ulpdu[2] = { { (void *)u, split },
				  { (void *)(u + split), len - split } };
	static uint8_t marks[MPA_TX_MAX_MARKERS][MPA_MARKER_LEN];
	static struct mpa_tx_frame f = { .markers = marks };
	struct iovec out[2 * MPA_TX_MAX_MARKERS + 8];
	int max = mpa_tx_iov_max(2, len, r->markers), n;
	uint64_t start = tx->off;
	uint64_t wire = mpa_fpdu_wire_len(start, len, r->markers);
	size_t got = 0;

	fz_check(max <= (int)(sizeof(out) / sizeof(out[0])),
		 "iov bound %d for %u octets", max, len);
	n = mpa_tx_fpdu(tx, ulpdu, 2, &f, out, max);
	fz_check(n > 0, "framing %u octets: %d", len, n);
	if (r->len + wire > r->cap) {
		size_t cap = 2 * (r->len + wire);

		r->stream = realloc(r->stream, cap);
		fz_check(r->stream != NULL, "out of memory");
		r->cap = cap;
	}
	for (int i = 0; i < n; i++) {
		memcpy(r->stream + r->len + got, out[i].iov_base,
		       out[i].iov_len);
		got += out[i].iov_len;
	}
	fz_check(got == wire && tx->off == start + wire,
		 "FPDU of %zu octets, %llu expected", got,
		 (unsigned long long)wire);
	r->len += got;
}

static void build_framed(struct run *r, struct fz_in *in)
{
	struct mpa_tx tx;
	uint32_t pos[MAX_MUTATIONS];
	uint8_t flip[MAX_MUTATIONS];
	unsigned int n_mut = fz_u8(in) % (MAX_MUTATIONS + 1);

	for (unsigned int i = 0; i < n_mut; i++) {
		pos[i] = fz_u32(in);
		flip[i] = fz_u8(in);
	}
	mpa_tx_init(&tx, 0xffff, r->markers, r->crc);
	/* a ULPDU takes 3 + len input octets and 4 + len log octets */
	r->want.cap = 2 * fz_left(in) + 16;
	r->want.p = malloc(r->want.cap);
	fz_check(r->want.p != NULL, "out of memory");
	r->want_valid = true;
	while (fz_left(in)) {
		uint16_t len = fz_u16(in);
		uint8_t split = fz_u8(in);
		const uint8_t *u;
		size_t got;

		if (len > tx.mulpdu)
			len = tx.mulpdu;
		u = fz_bytes(in, len, &got);
		len = (uint16_t)got;
		frame_ulpdu(r, &tx, u, len, len ? split % (len + 1u) : 0);
		if (r->want_err)
			continue;
		if (len > r->max_ulpdu) {
			r->want_err = -IW_EMPA_ULPDU_TOO_LONG;
			continue;
		}
		on_begin(&r->want, len);
		on_data(&r->want, u, len);
		on_end(&r->want);
	}
	for (unsigned int i = 0; i < n_mut && r->len; i++) {
		if (!flip[i])
			continue;
		r->stream[pos[i] % r->len] ^= flip[i];
		r->want_valid = false;
	}
}

/* Feeds the stream in pieces; ULPDU octets sometimes placed directly. */
FZ_NO_COVERAGE
static int feed_cut(struct run *r, struct mpa_rx *rx, struct log *l)
{
	struct fz_rng rng = { r->seed };
	static const size_t max_cut[] = { 3, 16, 600, 70000 };
	size_t most = max_cut[r->seed % 4], i = 0;
	int rc = 0;

	while (i < r->len && !rc) {
		size_t n = (size_t)fz_range(&rng, 1, most);
		size_t win = mpa_rx_payload_window(rx);

		if (n > r->len - i)
			n = r->len - i;
		if (r->window && win && fz_next(&rng) % 2) {
			if (n > win)
				n = win;
			/* what the transport would read in place */
			log_put(l, r->stream + i, n);
			rc = mpa_rx_payload_placed(rx, r->stream + i, n);
			fz_check(rc == 0, "placement within the window: %d", rc);
		} else {
			rc = mpa_rx_feed(rx, r->stream + i, n);
		}
		i += n;
	}
	fz_check(!rc || rx->err == rc, "error %d not sticky (%d)", rc,
		 rx->err);
	if (rc) {
		/* sticky: more octets change nothing */
		fz_check(mpa_rx_feed(rx, r->stream, r->len ? 1 : 0) == rc,
			 "error %d forgotten", rc);
		fz_check(mpa_rx_payload_window(rx) == 0,
			 "a window after an error");
	}
	return rc;
}

/*
 * The receiver's error at the FPDU after the @done it completed must be
 * what the scanner finds wrong with that FPDU.
 */
static void check_against_scanner(struct run *r, const struct log *l,
				  int err)
{
	static struct mpa_scan_fpdu f;
	static uint8_t ulpdu[65536];
	struct mpa_scanner s;
	size_t at = 0;
	int rc;

	mpa_scan_init(&s, r->stream, r->len, 0, r->markers, r->crc);
	for (size_t k = 0; k < l->ends; k++) {
		size_t start = s.pos;
		uint64_t peek;

		rc = mpa_scan_next(&s, ulpdu, sizeof(ulpdu), &f);
		fz_check(rc == 1, "FPDU %zu taken, the scanner says %d", k, rc);
		fz_check((!r->crc || f.crc_ok) && !f.n_bad_markers,
			 "FPDU %zu taken with a bad CRC or marker", k);
		fz_check(l->p[at] == 'B' &&
				 (l->p[at + 1] << 8 | l->p[at + 2]) ==
					 f.ulpdu_len &&
				 !memcmp(l->p + at + 3, ulpdu, f.ulpdu_len) &&
				 l->p[at + 3 + f.ulpdu_len] == 'E',
			 "FPDU %zu: receiver and scanner differ", k);
		at += 4u + f.ulpdu_len;
		peek = mpa_fpdu_peek_len(start, r->markers, r->stream + start,
					 r->len - start);
		fz_check(peek == f.wire_len, "FPDU %zu: peek %llu, wire %llu",
			 k, (unsigned long long)peek,
			 (unsigned long long)f.wire_len);
	}
	rc = mpa_scan_next(&s, ulpdu, sizeof(ulpdu), &f);
	switch (err) {
	case 0:
		fz_check(rc == 0, "clean end, the scanner says %d", rc);
		break;
	case -IW_EMPA_CRC:
		fz_check(r->crc && rc == 1 && !f.crc_ok && !f.n_bad_markers,
			 "CRC error, the scanner says %d (CRC ok %d)", rc,
			 f.crc_ok);
		break;
	case -IW_EMPA_MARKER:
		fz_check(r->markers && (f.n_bad_markers ||
					rc == -IW_EMPA_ULPDU_TOO_LONG),
			 "marker error, the scanner says %d", rc);
		break;
	case -IW_EMPA_ULPDU_TOO_LONG:
		fz_check(f.have_len && f.ulpdu_len > r->max_ulpdu,
			 "ULPDU too long, the scanner read %u", f.ulpdu_len);
		break;
	case -IW_EMPA_STREAM_LOST:
		fz_check(rc == -EAGAIN || rc == -IW_EMPA_ULPDU_TOO_LONG,
			 "stream lost, the scanner says %d", rc);
		break;
	default:
		fz_fail(__FILE__, __LINE__, "receiver error %d", err);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run r = { 0 };
	struct fz_in in;
	struct mpa_rx a, b;
	struct log la = { 0 }, lb = { 0 };
	uint8_t cfg;
	int ea, eb, ea_eof, eb_eof;

	fz_in_init(&in, data, size);
	cfg = fz_u8(&in);
	r.markers = cfg & CFG_MARKERS;
	r.crc = cfg & CFG_CRC;
	r.framed = cfg & CFG_FRAMED;
	r.window = cfg & CFG_WINDOW;
	r.max_ulpdu = fz_u16(&in);
	if (!r.max_ulpdu)
		r.max_ulpdu = 0xffff;
	r.seed = fz_u64(&in);
	if (r.framed) {
		build_framed(&r, &in);
	} else {
		const uint8_t *p = fz_bytes(&in, fz_left(&in), &r.len);

		r.stream = malloc(r.len ? r.len : 1);
		fz_check(r.stream != NULL, "out of memory");
		memcpy(r.stream, p, r.len);
	}

	/* every FPDU costs at least 4 log octets and 8 stream octets */
	la.cap = lb.cap = 2 * r.len + 16;
	la.p = malloc(la.cap);
	lb.p = malloc(lb.cap);
	fz_check(la.p && lb.p, "out of memory");
	mpa_rx_init(&a, &log_ops, &la, r.max_ulpdu, r.markers, r.crc);
	mpa_rx_init(&b, &log_ops, &lb, r.max_ulpdu, r.markers, r.crc);
	ea = mpa_rx_feed(&a, r.stream, r.len);
	eb = feed_cut(&r, &b, &lb);
	ea_eof = mpa_rx_eof(&a);
	eb_eof = mpa_rx_eof(&b);

	fz_check(ea == eb && ea_eof == eb_eof,
		 "whole: %d/%d, in pieces: %d/%d", ea, ea_eof, eb, eb_eof);
	fz_check(la.len == lb.len && !memcmp(la.p, lb.p, la.len) &&
			 la.ends == lb.ends,
		 "whole and in pieces, the ULPDUs differ");
	fz_check(!ea || ea_eof == ea, "eof %d after error %d", ea_eof, ea);
	if (r.want_valid) {
		fz_check(ea == r.want_err && ea_eof == r.want_err,
			 "intact stream ends with %d/%d, not %d", ea, ea_eof,
			 r.want_err);
		fz_check(la.len == r.want.len &&
				 !memcmp(la.p, r.want.p, la.len),
			 "intact stream: ULPDUs differ from those sent");
	}
	check_against_scanner(&r, &la, ea ? ea : ea_eof);

	free(la.p);
	free(lb.p);
	free(r.want.p);
	free(r.stream);
	return 0;
}
