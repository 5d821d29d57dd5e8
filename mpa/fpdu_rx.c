// SPDX-License-Identifier: MIT
/*
 * FPDU receiver (RFC 5044 sections 4 and 5): an incremental de-framer.  The
 * stream may arrive cut anywhere (an octet at a time, a marker or the CRC
 * split across reads, several FPDUs in one read); the result is the same.
 * Markers are checked and removed, the CRC is checked when negotiated and
 * ignored otherwise, and ULPDU octets go up through struct mpa_rx_ops.
 */
#include <errno.h>
#include <string.h>

#include "lib/byteorder.h"
#include "lib/error.h"
#include "mpa/mpa.h"

void mpa_rx_init(struct mpa_rx *rx, const struct mpa_rx_ops *ops, void *arg,
		 uint16_t max_ulpdu, bool markers, bool crc)
{
	*rx = (struct mpa_rx){
		.ops = ops,
		.arg = arg,
		.max_ulpdu = max_ulpdu,
		.state = MPA_RX_HDR,
		.markers = markers,
		.crc = crc,
	};
}

static void crc_add(struct mpa_rx *rx, const uint8_t *p, size_t len)
{
	if (rx->crc)
		rx->crc_acc = mpa_crc32c_update(rx->crc_acc, p, len);
}

/* The first octet of an FPDU (its leading marker or its header) starts the CRC. */
static void open_fpdu(struct mpa_rx *rx)
{
	if (!rx->fpdu_open) {
		rx->fpdu_open = true;
		rx->crc_acc = mpa_crc32c_init();
	}
}

/*
 * RFC 5044 section 4.3: a marker in front of an FPDU's header carries
 * FPDUPTR 0 and belongs to that FPDU; any other marker points back from
 * itself to the ULPDU_LENGTH field of the FPDU it sits in.
 */
static int check_marker(struct mpa_rx *rx, uint64_t marker_off)
{
	uint16_t fpduptr = get_be16(rx->part + MPA_MARKER_OFF_FPDUPTR);
	uint64_t want;

	if (rx->marker_leads)
		want = 0;
	else
		want = marker_off - rx->hdr_off;
	if (fpduptr != want)
		return -IW_EMPA_MARKER;
	return 0;
}

/*
 * Collects up to @want octets (2 or 4) of a field into rx->part.  A field
 * that lies whole in @p goes there in one store: read back right after
 * octet-wide stores, it would wait for each of them to retire.
 */
static size_t gather(struct mpa_rx *rx, const uint8_t *p, size_t len,
		     size_t want)
{
	size_t n = want - rx->part_len;

	if (rx->part_len == 0 && len >= want) {
		if (want == 4)
			memcpy(rx->part, p, 4);
		else
			memcpy(rx->part, p, 2);
		rx->part_len = (uint8_t)want;
		rx->off += want;
		return want;
	}
	if (n > len)
		n = len;
	for (size_t i = 0; i < n; i++)
		rx->part[rx->part_len++] = p[i];
	rx->off += n;
	return n;
}

/*
 * Whether the ULPDU waits for its CRC: RFC 5044 section 8 has a receiver
 * that finds a CRC error not pass the FPDU up, and once a header or a
 * payload has gone up nothing can take it back (it would have been
 * placed, or a DDP error named for an octet the CRC condemns).
 */
static bool holding(const struct mpa_rx *rx)
{
	return rx->crc && rx->hold;
}

static int end_header(struct mpa_rx *rx)
{
	uint16_t len = get_be16(rx->part);

	rx->part_len = 0;
	if (len > rx->max_ulpdu)
		return -IW_EMPA_ULPDU_TOO_LONG;
	rx->ulpdu_len = len;
	rx->ulpdu_left = len;
	rx->pad_left = (uint8_t)mpa_pad_len(len);
	rx->state = len ? MPA_RX_ULPDU : rx->pad_left ? MPA_RX_PAD : MPA_RX_CRC;
	return holding(rx) ? 0 : rx->ops->ulpdu_begin(rx->arg, len);
}

/* The held ULPDU has passed its CRC: up it goes, whole. */
static int release_held(struct mpa_rx *rx)
{
	int rc = rx->ops->ulpdu_begin(rx->arg, rx->ulpdu_len);

	if (!rc && rx->ulpdu_len)
		rc = rx->ops->ulpdu_data(rx->arg, rx->hold, rx->ulpdu_len);
	return rc;
}

static int end_crc(struct mpa_rx *rx)
{
	uint32_t got = get_le32(rx->part);
	int rc;

	rx->part_len = 0;
	if (rx->crc && got != mpa_crc32c_final(rx->crc_acc))
		return -IW_EMPA_CRC;
	rx->state = MPA_RX_HDR;
	rx->fpdu_open = false;
	if (holding(rx)) {
		rc = release_held(rx);
		if (rc)
			return rc;
	}
	return rx->ops->ulpdu_end(rx->arg);
}

/* ULPDU octets that arrived: held, or passed up at once. */
static int ulpdu_octets(struct mpa_rx *rx, const uint8_t *p, size_t n)
{
	if (!holding(rx))
		return rx->ops->ulpdu_data(rx->arg, p, n);
	memcpy(rx->hold + (rx->ulpdu_len - rx->ulpdu_left - n), p, n);
	return 0;
}

/* Bytes of the current state that may be taken before the next marker. */
static size_t run_len(const struct mpa_rx *rx, size_t len, size_t left)
{
	size_t n = len < left ? len : left;

	if (rx->markers && n > mpa_marker_gap(rx->off))
		n = mpa_marker_gap(rx->off);
	return n;
}

static void after_ulpdu_octets(struct mpa_rx *rx)
{
	if (rx->ulpdu_left == 0)
		rx->state = rx->pad_left ? MPA_RX_PAD : MPA_RX_CRC;
}

/*
 * Whether the CRC covers the octets the next step() takes: every octet of
 * an FPDU (markers, header, ULPDU, pad) but those of its CRC field.
 */
static bool crc_covers_next(const struct mpa_rx *rx)
{
	if (rx->marker_left || (rx->markers && mpa_marker_gap(rx->off) == 0))
		return true;
	return rx->state != MPA_RX_CRC;
}

/*
 * Consumes some octets of @p; returns how many, or a negative code.  The
 * caller adds the covered ones to the CRC (mpa_rx_feed()).
 */
static ssize_t step(struct mpa_rx *rx, const uint8_t *p, size_t len)
{
	size_t n;
	int rc = 0;

	if (rx->marker_left == 0 && rx->markers &&
	    mpa_marker_gap(rx->off) == 0) {
		rx->marker_left = MPA_MARKER_LEN;
		/* in front of a header: the FPDU, and its CRC, start here */
		rx->marker_leads = rx->state == MPA_RX_HDR && !rx->fpdu_open;
		if (rx->marker_leads)
			open_fpdu(rx);
	}
	if (rx->marker_left) {
		uint64_t marker_off = rx->off - rx->part_len;

		n = gather(rx, p, len, MPA_MARKER_LEN);
		rx->marker_left = (uint8_t)(MPA_MARKER_LEN - rx->part_len);
		if (rx->marker_left == 0) {
			rc = check_marker(rx, marker_off);
			rx->part_len = 0;
		}
		return rc ? rc : (ssize_t)n;
	}

	switch (rx->state) {
	case MPA_RX_HDR:
		if (rx->part_len == 0) {
			open_fpdu(rx);
			rx->hdr_off = rx->off;
		}
		n = gather(rx, p, len, MPA_HDR_LEN);
		if (rx->part_len == MPA_HDR_LEN)
			rc = end_header(rx);
		break;
	case MPA_RX_ULPDU:
		n = run_len(rx, len, rx->ulpdu_left);
		rx->off += n;
		rx->ulpdu_left -= (uint16_t)n;
		after_ulpdu_octets(rx);
		rc = ulpdu_octets(rx, p, n);
		break;
	case MPA_RX_PAD:
		n = run_len(rx, len, rx->pad_left);
		rx->off += n;
		rx->pad_left -= (uint8_t)n;
		if (rx->pad_left == 0)
			rx->state = MPA_RX_CRC;
		break;
	default: /* MPA_RX_CRC; never split by a marker (it is aligned) */
		n = gather(rx, p, len, MPA_CRC_LEN);
		if (rx->part_len == MPA_CRC_LEN)
			rc = end_crc(rx);
		break;
	}
	return rc ? rc : (ssize_t)n;
}

/*
 * Passes up the FPDU of @wire octets at @p (its header @lead octets in,
 * behind a leading marker), whose framing and markers have been checked:
 * the same calls and checks in the same order as step() would make them
 * octet by octet, the ULPDU in its runs between markers.  With a hold the
 * CRC is checked first, and nothing needs copying into the hold, the FPDU
 * being whole where it lies.
 */
static ssize_t whole_up(struct mpa_rx *rx, const uint8_t *p, size_t wire,
			size_t lead, uint16_t ulen)
{
	uint64_t start = rx->off;
	size_t body = wire - MPA_CRC_LEN, at = lead + MPA_HDR_LEN, left;
	int rc;

	rx->hdr_off = start + lead;
	rx->off += wire;
	rx->ulpdu_len = ulen;
	if (holding(rx) && get_le32(p + body) != mpa_crc32c(p, body))
		return -IW_EMPA_CRC;
	rc = rx->ops->ulpdu_begin(rx->arg, ulen);
	for (left = ulen; left && !rc;) {
		size_t run = left;

		if (rx->markers) {
			size_t gap = mpa_marker_gap(start + at);

			if (gap == 0) {
				at += MPA_MARKER_LEN;
				continue;
			}
			if (run > gap)
				run = gap;
		}
		rc = rx->ops->ulpdu_data(rx->arg, p + at, run);
		at += run;
		left -= run;
	}
	if (rc)
		return rc;
	if (rx->crc && !holding(rx) &&
	    get_le32(p + body) != mpa_crc32c(p, body))
		return -IW_EMPA_CRC;
	rc = rx->ops->ulpdu_end(rx->arg);
	return rc ? rc : (ssize_t)wire;
}

/*
 * The common case, without markers: the next FPDU lies whole in @p and
 * is taken in one go (whole_up()).  Returns the octets taken, 0 when the
 * FPDU is not whole here (step() then takes it as it comes), or a
 * negative code.
 */
static ssize_t whole_fpdu(struct mpa_rx *rx, const uint8_t *p, size_t len)
{
	uint16_t ulen;
	size_t wire;

	if (rx->markers || rx->state != MPA_RX_HDR || rx->part_len ||
	    len < MPA_HDR_LEN + MPA_CRC_LEN)
		return 0;
	ulen = get_be16(p);
	wire = MPA_HDR_LEN + ulen + mpa_pad_len(ulen) + MPA_CRC_LEN;
	if (ulen > rx->max_ulpdu || wire > len)
		return 0;
	return whole_up(rx, p, wire, 0, ulen);
}

/*
 * whole_fpdu() with markers: the next FPDU lies whole in @p, markers and
 * all.  Its markers are checked first (at any fault it is left to step(),
 * which reports it where it lies); then it goes up as one without them,
 * its CRC in one call over the FPDU as it lies.
 */
static ssize_t whole_marked_fpdu(struct mpa_rx *rx, const uint8_t *p,
				 size_t len)
{
	uint64_t start = rx->off, wire;
	size_t lead, at;
	uint16_t ulen;

	if (!rx->markers || rx->state != MPA_RX_HDR || rx->part_len ||
	    rx->marker_left || rx->fpdu_open)
		return 0;
	wire = mpa_fpdu_peek_len(start, true, p, len);
	if (!wire || wire > len)
		return 0;
	lead = mpa_marker_gap(start) == 0 ? MPA_MARKER_LEN : 0;
	ulen = get_be16(p + lead);
	if (ulen > rx->max_ulpdu)
		return 0;
	for (at = mpa_marker_gap(start); at < wire; at += MPA_MARKER_SPACING) {
		uint16_t ptr = get_be16(p + at + MPA_MARKER_OFF_FPDUPTR);

		if (ptr != (at == 0 ? 0 : at - lead))
			return 0;
	}
	return whole_up(rx, p, (size_t)wire, lead, ulen);
}

/*
 * Takes the next @len octets of the stream.  Returns 0 when all were
 * consumed, or the first error (from the framing or from a callback); an
 * error sticks and every later call returns it.
 */
int mpa_rx_feed(struct mpa_rx *rx, const uint8_t *p, size_t len)
{
	/*
	 * Covered octets lie back to back in @p up to each CRC field: one
	 * CRC call takes them all, not one per marker gap and marker.
	 */
	const uint8_t *crc_from = NULL;

	while (len && !rx->err) {
		ssize_t n = rx->markers ? whole_marked_fpdu(rx, p, len)
					: whole_fpdu(rx, p, len);

		if (n == 0) {
			bool covered = crc_covers_next(rx);

			if (covered && !crc_from) {
				crc_from = p;
			} else if (!covered && crc_from) {
				crc_add(rx, crc_from, (size_t)(p - crc_from));
				crc_from = NULL;
			}
			n = step(rx, p, len);
		}
		if (n < 0) {
			rx->err = (int)n;
			break;
		}
		p += n;
		len -= (size_t)n;
	}
	if (crc_from)
		crc_add(rx, crc_from, (size_t)(p - crc_from));
	return rx->err;
}

/* The stream ended: fine between FPDUs, a lost stream inside one. */
int mpa_rx_eof(const struct mpa_rx *rx)
{
	if (rx->err)
		return rx->err;
	if (rx->state != MPA_RX_HDR || rx->fpdu_open || rx->marker_left)
		return -IW_EMPA_STREAM_LOST;
	return 0;
}

/*
 * With CRC on, ULPDUs are held in @buf (room for the longest, max_ulpdu
 * octets) until their CRC has been checked.  Without it, or without CRC,
 * octets go up as they arrive.
 */
void mpa_rx_hold(struct mpa_rx *rx, uint8_t *buf, size_t cap)
{
	rx->hold = cap >= rx->max_ulpdu ? buf : NULL;
	rx->hold_cap = rx->hold ? cap : 0;
}

/*
 * While a ULPDU is held: where its next octets go, for a caller that moves
 * them straight from the socket (see mpa_rx_payload_window()); else NULL.
 */
uint8_t *mpa_rx_held_at(const struct mpa_rx *rx)
{
	if (!holding(rx) || rx->state != MPA_RX_ULPDU)
		return NULL;
	return rx->hold + (rx->ulpdu_len - rx->ulpdu_left);
}

/*
 * How many of the next stream octets are ULPDU octets with no marker among
 * them.  A caller may move that many straight from the socket to where the
 * ULPDU belongs (where mpa_rx_held_at() says while one is held) and report
 * them with mpa_rx_payload_placed().
 */
size_t mpa_rx_payload_window(const struct mpa_rx *rx)
{
	if (rx->err || rx->state != MPA_RX_ULPDU || rx->marker_left)
		return 0;
	if (rx->markers && mpa_marker_gap(rx->off) == 0)
		return 0;
	return run_len(rx, rx->ulpdu_left, rx->ulpdu_left);
}

/*
 * Accounts for @len ULPDU octets the caller placed itself (within the
 * window).  They are covered by the CRC but not passed to ulpdu_data.
 */
int mpa_rx_payload_placed(struct mpa_rx *rx, const uint8_t *p, size_t len)
{
	if (rx->err)
		return rx->err;
	if (len > mpa_rx_payload_window(rx))
		return -EINVAL;
	crc_add(rx, p, len);
	rx->off += len;
	rx->ulpdu_left -= (uint16_t)len;
	after_ulpdu_octets(rx);
	return 0;
}
