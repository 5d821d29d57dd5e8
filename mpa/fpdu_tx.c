// SPDX-License-Identifier: MIT
/*
 * FPDU sender (RFC 5044 section 4).  One ULPDU, given as an iovec list, is
 * framed into an iovec list for writev(): the payload entries point into the
 * caller's buffers (no copy, markers or not) and the octets MPA adds
 * (ULPDU_LENGTH, markers, PAD, CRC) point into a struct mpa_tx_frame.
 */
#include <errno.h>
#include <string.h>

#include "lib/byteorder.h"
#include "lib/copy.h"
#include "mpa/mpa.h"

void mpa_tx_init(struct mpa_tx *tx, uint16_t mulpdu, bool markers, bool crc)
{
	tx->off = 0;
	tx->markers = markers;
	tx->crc = crc;
	mpa_tx_set_mulpdu(tx, mulpdu);
}

/* The FPDUs framed from now on take at most @mulpdu octets of ULPDU. */
void mpa_tx_set_mulpdu(struct mpa_tx *tx, uint16_t mulpdu)
{
	/* beyond this an FPDUPTR would not fit its 16 bits */
	if (tx->markers && mulpdu > MPA_MAX_ULPDU_MARKERS)
		mulpdu = MPA_MAX_ULPDU_MARKERS;
	tx->mulpdu = mulpdu;
}

/*
 * Upper bound on the iovecs mpa_tx_fpdu() needs: header, pad and CRC, and
 * with markers one marker plus one extra payload split per marker position.
 */
int mpa_tx_iov_max(int ulpdu_iovcnt, uint32_t ulpdu_len, bool markers)
{
	int n = ulpdu_iovcnt + 3;

	if (markers) {
		uint64_t wire = mpa_fpdu_wire_len(0, ulpdu_len, false);
		int positions = (int)(wire / (MPA_MARKER_SPACING -
					      MPA_MARKER_LEN)) + 1;

		n += 2 * positions;
	}
	return n;
}

/* Appends wire pieces in stream order, inserting markers where they fall. */
struct emitter {
	struct mpa_tx *tx;
	struct mpa_tx_frame *f;
	struct iovec *out;
	int n, max;
	uint64_t hdr_off; /* stream offset of ULPDU_LENGTH */
	bool hdr_sent;
	uint32_t crc_acc;
};

static int emit_iov(struct emitter *e, const void *p, size_t len,
		    bool covered_by_crc)
{
	if (e->n == e->max)
		return -ENOSPC;
	e->out[e->n].iov_base = (void *)(uintptr_t)p;
	e->out[e->n].iov_len = len;
	e->n++;
	if (covered_by_crc && e->tx->crc)
		e->crc_acc = mpa_crc32c_update(e->crc_acc, p, len);
	e->tx->off += len;
	return 0;
}

/* A marker's octets: 16 reserved bits, zero, then FPDUPTR. */
static inline void write_marker(uint8_t *m, uint16_t fpduptr)
{
	put_be16(m, 0);
	put_be16(m + MPA_MARKER_OFF_FPDUPTR, fpduptr);
}

/*
 * RFC 5044 section 4.3: FPDUPTR counts the octets from the start of this
 * FPDU's ULPDU_LENGTH field back from the marker.  A marker in front of the
 * header (the FPDU starts on a marker position) has FPDUPTR 0 and belongs
 * to this FPDU, so the CRC covers it.
 */
static int emit_marker_if_due(struct emitter *e)
{
	uint8_t *m;
	uint64_t ptr;

	if (!e->tx->markers || mpa_marker_gap(e->tx->off) != 0)
		return 0;
	if (!e->f->markers)
		return -EINVAL;
	if (e->f->n_markers == MPA_TX_MAX_MARKERS)
		return -EMSGSIZE;
	ptr = e->hdr_sent ? e->tx->off - e->hdr_off : 0;
	if (ptr > 0xffff)
		return -EMSGSIZE;
	m = e->f->markers[e->f->n_markers++];
	write_marker(m, (uint16_t)ptr);
	return emit_iov(e, m, MPA_MARKER_LEN, true);
}

/* Emits @len octets, cut wherever a marker position falls inside them. */
static int emit_bytes(struct emitter *e, const uint8_t *p, size_t len)
{
	while (len) {
		size_t chunk = len;
		int rc = emit_marker_if_due(e);

		if (rc)
			return rc;
		if (e->tx->markers && chunk > mpa_marker_gap(e->tx->off))
			chunk = mpa_marker_gap(e->tx->off);
		rc = emit_iov(e, p, chunk, true);
		if (rc)
			return rc;
		p += chunk;
		len -= chunk;
	}
	return 0;
}

/*
 * Frames one ULPDU.  Returns the number of iovecs written to @out (their
 * octets must then be sent in order, all of them), or a negative code:
 * -EMSGSIZE when the ULPDU exceeds the MULPDU, -ENOSPC when @out is short.
 * On error the sender's stream offset is left as it was.
 */
int mpa_tx_fpdu(struct mpa_tx *tx, const struct iovec *ulpdu, int iovcnt,
		struct mpa_tx_frame *f, struct iovec *out, int out_max)
{
	struct emitter e = {
		.tx = tx, .f = f, .out = out, .max = out_max,
		.crc_acc = mpa_crc32c_init(),
	};
	uint64_t start = tx->off;
	size_t ulpdu_len = 0;
	unsigned int pad;
	int i, rc;

	for (i = 0; i < iovcnt; i++)
		ulpdu_len += ulpdu[i].iov_len;
	if (ulpdu_len > tx->mulpdu)
		return -EMSGSIZE;

	f->n_markers = 0;
	put_be16(f->hdr, (uint16_t)ulpdu_len);
	rc = emit_marker_if_due(&e);
	if (rc)
		goto fail;
	e.hdr_off = tx->off;
	e.hdr_sent = true;
	rc = emit_bytes(&e, f->hdr, sizeof(f->hdr));
	for (i = 0; !rc && i < iovcnt; i++)
		rc = emit_bytes(&e, ulpdu[i].iov_base, ulpdu[i].iov_len);
	pad = mpa_pad_len((uint32_t)ulpdu_len);
	memset(f->pad, 0, sizeof(f->pad));
	if (!rc && pad)
		rc = emit_bytes(&e, f->pad, pad);
	/* a marker may sit between PAD and CRC; the CRC covers it */
	if (!rc)
		rc = emit_marker_if_due(&e);
	if (rc)
		goto fail;
	/* with CRC off the field is sent as zeros (RFC 5044 section 4.4) */
	put_le32(f->crc, tx->crc ? mpa_crc32c_final(e.crc_acc) : 0);
	rc = emit_iov(&e, f->crc, MPA_CRC_LEN, false);
	if (rc)
		goto fail;
	return e.n;
fail:
	tx->off = start;
	return rc;
}

/* Writes octets into a whole FPDU, inserting markers where they fall. */
struct copier {
	struct mpa_tx *tx;
	uint8_t *out;
	size_t at;
	uint64_t hdr_off; /* stream offset of ULPDU_LENGTH */
	bool hdr_sent;
};

/* The marker at stream offset @off, as emit_marker_if_due() has it. */
static void put_marker(const struct copier *c, uint8_t *m, uint64_t off)
{
	write_marker(m, c->hdr_sent ? (uint16_t)(off - c->hdr_off) : 0);
}

static void copy_marker_if_due(struct copier *c)
{
	if (!c->tx->markers || mpa_marker_gap(c->tx->off) != 0)
		return;
	put_marker(c, c->out + c->at, c->tx->off);
	c->at += MPA_MARKER_LEN;
	c->tx->off += MPA_MARKER_LEN;
}

/*
 * Copies @len octets on a stream with markers, one wherever a position
 * falls.  The offsets live in locals: stores into the FPDU might alias the
 * copier's fields, and the compiler would reload them around every one.
 */
static void copy_bytes(struct copier *c, const uint8_t *p, size_t len)
{
	uint64_t off = c->tx->off;
	size_t at = c->at;

	while (len) {
		size_t chunk = mpa_marker_gap(off);

		if (!chunk) {
			put_marker(c, c->out + at, off);
			at += MPA_MARKER_LEN;
			off += MPA_MARKER_LEN;
			chunk = MPA_MARKER_SPACING - MPA_MARKER_LEN;
		}
		if (chunk > len)
			chunk = len;
		mpa_copy_run(c->out + at, p, chunk);
		at += chunk;
		off += chunk;
		p += chunk;
		len -= chunk;
	}
	c->at = at;
	c->tx->off = off;
}

/*
 * Frames the @ulpdu_len octets already at mpa_tx_ulpdu_at(@out), on a
 * stream without markers: ULPDU_LENGTH before them, PAD and the CRC
 * after.  @out must hold mpa_fpdu_wire_len(tx->off, @ulpdu_len, false)
 * octets; returns that length.
 */
size_t mpa_tx_fpdu_seal(struct mpa_tx *tx, uint8_t *out, size_t ulpdu_len)
{
	uint8_t *at = mpa_tx_ulpdu_at(out) + ulpdu_len;
	size_t pad = mpa_pad_len((uint32_t)ulpdu_len), len;

	put_be16(out, (uint16_t)ulpdu_len);
	for (size_t i = 0; i < pad; i++)
		*at++ = 0;
	len = (size_t)(at - out);
	put_le32(at, tx->crc ? mpa_crc32c(out, len) : 0);
	len += MPA_CRC_LEN;
	tx->off += len;
	return len;
}

/* mpa_tx_fpdu_copy() without markers: none to look for between pieces. */
static size_t fpdu_copy_plain(struct mpa_tx *tx, const struct iovec *ulpdu,
			      int iovcnt, size_t ulpdu_len, uint8_t *out)
{
	uint8_t *at = mpa_tx_ulpdu_at(out);

	for (int i = 0; i < iovcnt; i++) {
		copy_small(at, ulpdu[i].iov_base, ulpdu[i].iov_len);
		at += ulpdu[i].iov_len;
	}
	return mpa_tx_fpdu_seal(tx, out, ulpdu_len);
}

/*
 * Frames one ULPDU of @ulpdu_len octets (at most the MULPDU) into @out,
 * whole and contiguous: ULPDU_LENGTH, a copy of the ULPDU, PAD, the
 * markers wherever they fall, and the CRC, computed over the copy while
 * it is in the cache.  The same octets mpa_tx_fpdu() points at, in one
 * piece: small FPDUs go out many to an iovec, and one with markers as one
 * piece instead of two for every 512 octets.  @out must hold
 * mpa_fpdu_wire_len(tx->off, @ulpdu_len, tx->markers) octets; returns
 * that length.
 */
size_t mpa_tx_fpdu_copy(struct mpa_tx *tx, const struct iovec *ulpdu,
			int iovcnt, size_t ulpdu_len, uint8_t *out)
{
	static const uint8_t zeros[MPA_ALIGN - 1];
	struct copier c = { .tx = tx, .out = out };
	uint8_t len_be[MPA_HDR_LEN];

	if (!tx->markers)
		return fpdu_copy_plain(tx, ulpdu, iovcnt, ulpdu_len, out);
	put_be16(len_be, (uint16_t)ulpdu_len);
	copy_marker_if_due(&c);
	c.hdr_off = tx->off;
	c.hdr_sent = true;
	copy_bytes(&c, len_be, sizeof(len_be));
	for (int i = 0; i < iovcnt; i++)
		copy_bytes(&c, ulpdu[i].iov_base, ulpdu[i].iov_len);
	copy_bytes(&c, zeros, mpa_pad_len((uint32_t)ulpdu_len));
	/* a marker may sit between PAD and CRC; the CRC covers it */
	copy_marker_if_due(&c);
	put_le32(out + c.at, tx->crc ? mpa_crc32c(out, c.at) : 0);
	c.at += MPA_CRC_LEN;
	tx->off += MPA_CRC_LEN;
	return c.at;
}

/*
 * Frames one ULPDU, on a stream without markers, around its payload: the
 * octets before the payload (ULPDU_LENGTH and a copy of @ulpdu[0], the
 * ULP's header) go to @frame, PAD and CRC right after them, and the rest
 * of @ulpdu is pointed at.  A sender that keeps its frames end to end
 * then writes one FPDU's CRC and the next one's header as one piece.
 * @frame holds mpa_tx_frame_len(); returns the iovecs written to @out,
 * or -EMSGSIZE, -ENOSPC as mpa_tx_fpdu() (-EINVAL with markers).
 */
int mpa_tx_fpdu_around(struct mpa_tx *tx, const struct iovec *ulpdu,
		       int iovcnt, uint8_t *frame, struct iovec *out,
		       int out_max)
{
	size_t head = MPA_HDR_LEN + ulpdu[0].iov_len, ulpdu_len = 0;
	uint32_t acc = mpa_crc32c_init();
	uint8_t *tail = frame + head;
	unsigned int pad;
	int i;

	if (tx->markers)
		return -EINVAL;
	for (i = 0; i < iovcnt; i++)
		ulpdu_len += ulpdu[i].iov_len;
	if (ulpdu_len > tx->mulpdu)
		return -EMSGSIZE;
	if (iovcnt + 1 > out_max)
		return -ENOSPC;
	put_be16(frame, (uint16_t)ulpdu_len);
	copy_small(frame + MPA_HDR_LEN, ulpdu[0].iov_base, ulpdu[0].iov_len);
	out[0] = (struct iovec){ frame, head };
	for (i = 1; i < iovcnt; i++)
		out[i] = ulpdu[i];
	pad = mpa_pad_len((uint32_t)ulpdu_len);
	memset(tail, 0, pad);
	out[iovcnt] = (struct iovec){ tail, pad + MPA_CRC_LEN };
	/* with CRC off the field is sent as zeros (RFC 5044 section 4.4) */
	if (tx->crc) {
		for (i = 0; i < iovcnt; i++)
			acc = mpa_crc32c_update(acc, out[i].iov_base,
						out[i].iov_len);
		acc = mpa_crc32c_update(acc, tail, pad);
	}
	put_le32(tail + pad, tx->crc ? mpa_crc32c_final(acc) : 0);
	tx->off += head + (ulpdu_len - ulpdu[0].iov_len) + pad + MPA_CRC_LEN;
	return iovcnt + 1;
}

/*
 * mpa_tx_fpdu_around() for the usual ULPDU: its header already built at
 * mpa_tx_ulpdu_at(@frame), @hdr_len octets, and its payload one piece of
 * @len octets.  Writes the three pieces to @out (ULPDU_LENGTH and header;
 * the payload; PAD and CRC) and returns the FPDU's length.  The caller
 * keeps to the MULPDU; not with markers.
 */
size_t mpa_tx_fpdu_around_one(struct mpa_tx *tx, uint8_t *frame,
			      size_t hdr_len, const void *payload, size_t len,
			      struct iovec out[3])
{
	size_t head = MPA_HDR_LEN + hdr_len, fpdu_len;
	uint32_t ulpdu_len = (uint32_t)(hdr_len + len), crc = 0;
	unsigned int pad = mpa_pad_len(ulpdu_len);
	uint8_t *tail = frame + head;

	put_be16(frame, (uint16_t)ulpdu_len);
	for (unsigned int i = 0; i < pad; i++)
		tail[i] = 0;
	/* with CRC off the field is sent as zeros (RFC 5044 section 4.4) */
	if (tx->crc) {
		uint32_t acc = mpa_crc32c_update(mpa_crc32c_init(), frame, head);

		acc = mpa_crc32c_update(acc, payload, len);
		crc = mpa_crc32c_final(mpa_crc32c_update(acc, tail, pad));
	}
	put_le32(tail + pad, crc);
	out[0] = (struct iovec){ frame, head };
	out[1] = (struct iovec){ (void *)(uintptr_t)payload, len };
	out[2] = (struct iovec){ tail, pad + MPA_CRC_LEN };
	fpdu_len = head + len + pad + MPA_CRC_LEN;
	tx->off += fpdu_len;
	return fpdu_len;
}

/*
 * Computes the CRC of an FPDU framed into @wire again, over what its
 * pieces hold now: the CRC must cover the octets that go out (RFC 5044
 * section 4.4), and payload pointing into the caller's buffers may have
 * changed since the FPDU was framed.  The CRC field is the last four
 * octets of the last piece.
 */
void mpa_tx_crc(const struct mpa_tx *tx, const struct iovec *wire, int n_wire)
{
	const struct iovec *last = &wire[n_wire - 1];
	size_t before = last->iov_len - MPA_CRC_LEN;
	uint32_t acc = mpa_crc32c_init();

	if (!tx->crc)
		return;
	for (int i = 0; i < n_wire - 1; i++)
		acc = mpa_crc32c_update(acc, wire[i].iov_base, wire[i].iov_len);
	acc = mpa_crc32c_update(acc, last->iov_base, before);
	put_le32((uint8_t *)last->iov_base + before, mpa_crc32c_final(acc));
}
