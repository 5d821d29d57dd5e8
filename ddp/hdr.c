// SPDX-License-Identifier: MIT
/*
 * DDP headers (RFC 5041 sections 4.2-4.4): encoded and decoded field by
 * field.  The first RsvdULP octet (and, untagged, 32 more bits) belongs to
 * the layer above and is carried through unchanged.
 */
#include <errno.h>
#include <string.h>

#include "ddp/ddp.h"
#include "lib/byteorder.h"

/*
 * Writes the header of the segment that starts @off octets into the
 * message @msg describes (its TO or MO advanced by @off, its L bit
 * @msg's); returns its length (14 or 18).  It reads @msg field by field:
 * a header its caller has just filled in is read back from the store
 * buffer, where a copy of the whole struct would wait for it.
 */
size_t ddp_hdr_encode_seg(const struct ddp_hdr *msg, uint64_t off,
			  uint8_t *out)
{
	out[DDP_OFF_CTRL] = (uint8_t)((msg->tagged ? DDP_CTRL_T : 0) |
				      (msg->last ? DDP_CTRL_L : 0) |
				      (msg->version & DDP_CTRL_DV));
	out[DDP_OFF_RSVDULP] = msg->rsvdulp;
	if (msg->tagged) {
		put_be32(out + DDP_T_OFF_STAG, msg->stag);
		put_be64(out + DDP_T_OFF_TO, msg->to + off);
		return DDP_TAGGED_HDR_LEN;
	}
	put_be32(out + DDP_U_OFF_RSVDULP2, msg->rsvdulp2);
	put_be32(out + DDP_U_OFF_QN, msg->qn);
	put_be32(out + DDP_U_OFF_MSN, msg->msn);
	put_be32(out + DDP_U_OFF_MO, (uint32_t)(msg->mo + off));
	return DDP_UNTAGGED_HDR_LEN;
}

/* Writes the header for @h; returns its length (14 or 18). */
size_t ddp_hdr_encode(const struct ddp_hdr *h, uint8_t *out)
{
	return ddp_hdr_encode_seg(h, 0, out);
}

/*
 * Parses a header from @p.  Returns its length, or -EAGAIN while fewer
 * octets than the header needs are given.  Reserved bits are ignored as
 * RFC 5041 asks; the version is returned for the caller to judge.
 */
ssize_t ddp_hdr_decode(const uint8_t *p, size_t len, struct ddp_hdr *h)
{
	size_t need;

	if (len < 1)
		return -EAGAIN;
	memset(h, 0, sizeof(*h));
	h->tagged = p[DDP_OFF_CTRL] & DDP_CTRL_T;
	h->last = p[DDP_OFF_CTRL] & DDP_CTRL_L;
	h->version = p[DDP_OFF_CTRL] & DDP_CTRL_DV;
	need = ddp_hdr_len(h->tagged);
	if (len < need)
		return -EAGAIN;
	h->rsvdulp = p[DDP_OFF_RSVDULP];
	if (h->tagged) {
		h->stag = get_be32(p + DDP_T_OFF_STAG);
		h->to = get_be64(p + DDP_T_OFF_TO);
	} else {
		h->rsvdulp2 = get_be32(p + DDP_U_OFF_RSVDULP2);
		h->qn = get_be32(p + DDP_U_OFF_QN);
		h->msn = get_be32(p + DDP_U_OFF_MSN);
		h->mo = get_be32(p + DDP_U_OFF_MO);
	}
	return (ssize_t)need;
}
