// SPDX-License-Identifier: MIT
/*
 * FPDU scanner (RFC 5044 sections 4 and 4.3) over a whole stream in memory.
 * Where the receiver stops at the first error, the scanner describes each
 * FPDU as it is on the wire: every marker with the FPDUPTR it carries and
 * the one it should carry, the pad, the CRC read and the CRC computed.
 * Framing follows ULPDU_LENGTH, so it carries on past any of these faults.
 */
#include <errno.h>
#include <string.h>

#include "lib/byteorder.h"
#include "lib/error.h"
#include "mpa/mpa.h"

void mpa_scan_init(struct mpa_scanner *s, const uint8_t *p, size_t len,
		   size_t base, bool markers, bool crc)
{
	*s = (struct mpa_scanner){
		.p = p,
		.len = len,
		.base = base,
		.pos = base,
		.markers = markers,
		.crc = crc,
	};
}

/* Reading position inside one FPDU. */
struct cursor {
	const struct mpa_scanner *s;
	struct mpa_scan_fpdu *f;
	size_t i;	  /* buffer offset */
	uint32_t crc_acc;
	bool hdr_seen;	  /* markers from here on point back to the header */
};

static uint64_t cursor_off(const struct cursor *c)
{
	return c->i - c->s->base;
}

static void crc_add(struct cursor *c, const uint8_t *p, size_t len)
{
	if (c->s->crc)
		c->crc_acc = mpa_crc32c_update(c->crc_acc, p, len);
}

/*
 * RFC 5044 section 4.3: a marker in front of the header belongs to this
 * FPDU with FPDUPTR 0; any later one points back to ULPDU_LENGTH.  The CRC
 * covers both.
 */
static int take_marker_if_due(struct cursor *c)
{
	struct mpa_scan_fpdu *f = c->f;
	struct mpa_scan_marker *m;
	const uint8_t *p = c->s->p + c->i;
	uint64_t off = cursor_off(c);

	if (!c->s->markers || mpa_marker_gap(off) != 0)
		return 0;
	if (c->s->len - c->i < MPA_MARKER_LEN)
		return -EAGAIN;
	if (f->n_markers == MPA_SCAN_MAX_MARKERS)
		return -IW_EMPA_ULPDU_TOO_LONG;
	m = &f->marker[f->n_markers++];
	m->off = off;
	m->reserved = get_be16(p);
	m->fpduptr = get_be16(p + MPA_MARKER_OFF_FPDUPTR);
	m->want = c->hdr_seen ? off - f->hdr_off : 0;
	m->ok = m->fpduptr == m->want;
	if (!m->ok)
		f->n_bad_markers++;
	crc_add(c, p, MPA_MARKER_LEN);
	c->i += MPA_MARKER_LEN;
	return 0;
}

/*
 * Takes @n octets of header, ULPDU or pad, stepping over the markers among
 * them, into @dst (NULL: nowhere).  -EAGAIN when the stream ends first.
 */
static int take(struct cursor *c, uint8_t *dst, size_t n)
{
	while (n) {
		size_t chunk = n, avail;
		int rc = take_marker_if_due(c);

		if (rc)
			return rc;
		avail = c->s->len - c->i;
		if (avail == 0)
			return -EAGAIN;
		if (c->s->markers && chunk > mpa_marker_gap(cursor_off(c)))
			chunk = mpa_marker_gap(cursor_off(c));
		if (chunk > avail)
			chunk = avail;
		crc_add(c, c->s->p + c->i, chunk);
		if (dst) {
			memcpy(dst, c->s->p + c->i, chunk);
			dst += chunk;
		}
		c->i += chunk;
		n -= chunk;
	}
	return 0;
}

/*
 * With markers an FPDU is impossible when one of its markers would sit more
 * than 65535 octets past ULPDU_LENGTH: no FPDUPTR can say so.  The last
 * marker of an FPDU may sit right before the CRC.
 */
static bool fpduptr_reaches(const struct mpa_scan_fpdu *f, bool markers)
{
	uint64_t end, last;

	if (!markers)
		return true;
	end = f->off + mpa_fpdu_wire_len(f->off, f->ulpdu_len, true);
	last = (end - MPA_MARKER_LEN - MPA_CRC_LEN) / MPA_MARKER_SPACING *
	       MPA_MARKER_SPACING;
	return last <= f->hdr_off || last - f->hdr_off <= 0xffff;
}

static int scan_fpdu(struct cursor *c, uint8_t *ulpdu, size_t cap)
{
	struct mpa_scan_fpdu *f = c->f;
	uint8_t hdr[MPA_HDR_LEN], pad[MPA_ALIGN - 1];
	const uint8_t *crc;
	int rc;

	rc = take_marker_if_due(c);
	if (rc)
		return rc;
	f->hdr_off = cursor_off(c);
	c->hdr_seen = true;
	rc = take(c, hdr, sizeof(hdr));
	if (rc)
		return rc;
	f->have_len = true;
	f->ulpdu_len = get_be16(hdr);
	f->pad_len = (uint8_t)mpa_pad_len(f->ulpdu_len);
	if (!fpduptr_reaches(f, c->s->markers))
		return -IW_EMPA_ULPDU_TOO_LONG;
	if (ulpdu && cap < f->ulpdu_len)
		return -ENOSPC;

	rc = take(c, ulpdu, f->ulpdu_len);
	if (!rc)
		rc = take(c, pad, f->pad_len);
	/* a marker may fall between PAD and CRC; it is this FPDU's */
	if (!rc)
		rc = take_marker_if_due(c);
	if (rc)
		return rc;
	f->pad_zero = true;
	for (unsigned int k = 0; k < f->pad_len; k++)
		f->pad_zero &= pad[k] == 0;

	/* the CRC is 4-aligned in the stream, so no marker splits it */
	if (c->s->len - c->i < MPA_CRC_LEN)
		return -EAGAIN;
	crc = c->s->p + c->i;
	c->i += MPA_CRC_LEN;
	f->crc_wire = get_le32(crc);
	if (c->s->crc) {
		f->crc_computed = mpa_crc32c_final(c->crc_acc);
		f->crc_ok = f->crc_wire == f->crc_computed;
	} else {
		f->crc_ok = true;
	}
	return 0;
}

/*
 * Describes the FPDU at the scanner's position in *@f and copies its ULPDU,
 * markers removed, to @ulpdu (NULL: not copied).  Returns
 *   1                        an FPDU; the position moves past it
 *   0                        the stream ends where an FPDU would begin
 *   -EAGAIN                  the stream ends inside this FPDU; *@f holds
 *                            what was read, wire_len the octets present
 *   -IW_EMPA_ULPDU_TOO_LONG  ULPDU_LENGTH no FPDU can have: a marker
 *                            would lie beyond FPDUPTR's reach
 *   -ENOSPC                  @cap is less than ULPDU_LENGTH
 * On an error the position stays, as the framing beyond it is unknown.
 */
int mpa_scan_next(struct mpa_scanner *s, uint8_t *ulpdu, size_t cap,
		  struct mpa_scan_fpdu *f)
{
	struct cursor c = {
		.s = s, .f = f, .i = s->pos, .crc_acc = mpa_crc32c_init(),
	};
	int rc;

	memset(f, 0, offsetof(struct mpa_scan_fpdu, marker));
	f->off = s->pos - s->base;
	if (s->pos >= s->len)
		return 0;
	rc = scan_fpdu(&c, ulpdu, cap);
	f->wire_len = c.i - s->pos;
	if (rc == -EAGAIN)
		f->wire_len = s->len - s->pos;
	if (rc)
		return rc;
	s->pos = c.i;
	return 1;
}
