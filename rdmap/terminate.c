// SPDX-License-Identifier: MIT
/*
 * Terminate messages (RFC 5040 sections 4.8 and 7): what we send when the
 * peer breaks a rule, and how we read what a peer sends us.
 */
#include <string.h>

#include "lib/byteorder.h"
#include "lib/error.h"
#include "rdmap/rdmap_internal.h"

/* The RFCs' names for every (layer, error type, error code) they define. */
static const struct {
	uint8_t layer, etype, ecode;
	const char *words;
} term_names[] = {
	{ 0, 0, 0x00, "RDMAP local catastrophic error" },
	{ 0, 1, 0x00, "RDMAP remote protection error: invalid STag" },
	{ 0, 1, 0x01, "RDMAP remote protection error: base or bounds violation" },
	{ 0, 1, 0x02, "RDMAP remote protection error: access rights violation" },
	{ 0, 1, 0x03,
	  "RDMAP remote protection error: STag not associated with RDMAP stream" },
	{ 0, 1, 0x04, "RDMAP remote protection error: TO wrap" },
	{ 0, 1, 0x09, "RDMAP remote protection error: STag cannot be invalidated" },
	{ 0, 1, 0xff, "RDMAP remote protection error: unspecified" },
	{ 0, 2, 0x05, "RDMAP remote operation error: invalid RDMAP version" },
	{ 0, 2, 0x06, "RDMAP remote operation error: unexpected opcode" },
	{ 0, 2, 0x07,
	  "RDMAP remote operation error: catastrophic, localized to RDMAP stream" },
	{ 0, 2, 0x08, "RDMAP remote operation error: catastrophic, global" },
	{ 0, 2, 0x09, "RDMAP remote operation error: STag cannot be invalidated" },
	{ 0, 2, 0xff, "RDMAP remote operation error: unspecified" },
	{ 1, 0, 0x00, "DDP local catastrophic error" },
	{ 1, 1, 0x00, "DDP tagged buffer error: invalid STag" },
	{ 1, 1, 0x01, "DDP tagged buffer error: base or bounds violation" },
	{ 1, 1, 0x02,
	  "DDP tagged buffer error: STag not associated with DDP stream" },
	{ 1, 1, 0x03, "DDP tagged buffer error: TO wrap" },
	{ 1, 1, 0x04, "DDP tagged buffer error: invalid DDP version" },
	{ 1, 2, 0x01, "DDP untagged buffer error: invalid QN" },
	{ 1, 2, 0x02, "DDP untagged buffer error: invalid MSN, no buffer available" },
	{ 1, 2, 0x03, "DDP untagged buffer error: invalid MSN, MSN range" },
	{ 1, 2, 0x04, "DDP untagged buffer error: invalid MO" },
	{ 1, 2, 0x05,
	  "DDP untagged buffer error: message too long for available buffer" },
	{ 1, 2, 0x06, "DDP untagged buffer error: invalid DDP version" },
	{ 2, 0, 0x01, "MPA error: TCP connection closed, terminated or lost" },
	{ 2, 0, 0x02, "MPA error: CRC error" },
	{ 2, 0, 0x03, "MPA error: marker or FPDU start error" },
	{ 2, 0, 0x04, "MPA error: invalid MPA Request or Reply" },
	{ 2, 0, 0x05, "MPA error: local catastrophic error" },
	{ 2, 0, 0x06, "MPA error: insufficient IRD resources" },
	{ 2, 0, 0x07, "MPA error: no matching RTR model" },
};

#define N_TERM_NAMES (sizeof(term_names) / sizeof(term_names[0]))

/*
 * RFC 5040 leaves the error code of a local catastrophic error open (the
 * IANA registry of RFC 6580 lists it as 0x0/0x0/ALL): Linux siw sends
 * 0xff.  Its control word reads the same both ways, so taking every code
 * cannot mislead the choice between the RFC and the swapped reading.
 */
const char *rdmap_term_describe(uint8_t layer, uint8_t etype, uint8_t ecode)
{
	if (layer == IW_TERM_LAYER_RDMAP &&
	    etype == IW_TERM_ETYPE_LOCAL_CATASTROPHIC)
		ecode = 0x00;
	for (size_t i = 0; i < N_TERM_NAMES; i++)
		if (term_names[i].layer == layer && term_names[i].etype == etype &&
		    term_names[i].ecode == ecode)
			return term_names[i].words;
	return NULL;
}

bool rdmap_term_valid(uint8_t layer, uint8_t etype, uint8_t ecode)
{
	return rdmap_term_describe(layer, etype, ecode) != NULL;
}

/* The Terminate body (after the DDP header) for @t; returns its length. */
size_t rdmap_term_encode(const struct rdmap_term *t, uint8_t *out)
{
	size_t n = RDMAP_TERM_CTRL_LEN;

	out[0] = (uint8_t)(t->layer << 4 | (t->etype & 0x0f));
	out[1] = t->ecode;
	out[RDMAP_TERM_OFF_HDRCT] = (uint8_t)((t->m ? RDMAP_TERM_FLAG_M : 0) |
					      (t->d ? RDMAP_TERM_FLAG_D : 0) |
					      (t->r ? RDMAP_TERM_FLAG_R : 0));
	out[3] = 0;
	if (t->d) {
		put_be16(out + n, t->seg_len);
		n += RDMAP_TERM_SEGLEN_LEN;
		memcpy(out + n, t->ddp_hdr, t->ddp_hdr_len);
		n += t->ddp_hdr_len;
	}
	if (t->r) {
		memcpy(out + n, t->rdma_hdr, RDMAP_READ_REQ_LEN);
		n += RDMAP_READ_REQ_LEN;
	}
	return n;
}

/*
 * Reads a Terminate body of @len octets.  Both readings of the control
 * word are kept; the headers that follow are taken with the flags of the
 * reading that names a valid triple (the RFC one when both do).  Whatever
 * the body lacks is left out rather than refused: the stream ends anyway.
 */
int rdmap_term_decode(const uint8_t *p, size_t len, struct rdmap_term *t)
{
	bool d, r;
	size_t n = RDMAP_TERM_CTRL_LEN;

	memset(t, 0, sizeof(*t));
	if (len < RDMAP_TERM_CTRL_LEN)
		return -IW_ERDMAP_MALFORMED;
	t->layer = p[0] >> 4;
	t->etype = p[0] & 0x0f;
	t->ecode = p[1];
	t->m = p[RDMAP_TERM_OFF_HDRCT] & RDMAP_TERM_FLAG_M;
	t->d = p[RDMAP_TERM_OFF_HDRCT] & RDMAP_TERM_FLAG_D;
	t->r = p[RDMAP_TERM_OFF_HDRCT] & RDMAP_TERM_FLAG_R;
	/* a little-endian C bitfield: layer in the low nibble, flags from bit 0 */
	t->swapped.layer = p[0] & 0x0f;
	t->swapped.etype = p[0] >> 4;
	t->swapped.ecode = p[1];
	t->swapped.m = p[RDMAP_TERM_OFF_HDRCT] & 0x01;
	t->swapped.d = p[RDMAP_TERM_OFF_HDRCT] & 0x02;
	t->swapped.r = p[RDMAP_TERM_OFF_HDRCT] & 0x04;

	d = t->d;
	r = t->r;
	if (!rdmap_term_valid(t->layer, t->etype, t->ecode) &&
	    rdmap_term_valid(t->swapped.layer, t->swapped.etype,
			     t->swapped.ecode)) {
		d = t->swapped.d;
		r = t->swapped.r;
	}
	if (d && len >= n + RDMAP_TERM_SEGLEN_LEN + 1) {
		size_t hl = ddp_hdr_len(p[n + RDMAP_TERM_SEGLEN_LEN] & DDP_CTRL_T);

		t->seg_len = get_be16(p + n);
		n += RDMAP_TERM_SEGLEN_LEN;
		if (len >= n + hl) {
			memcpy(t->ddp_hdr, p + n, hl);
			t->ddp_hdr_len = (uint8_t)hl;
			n += hl;
		}
	}
	if (r && len >= n + RDMAP_READ_REQ_LEN) {
		memcpy(t->rdma_hdr, p + n, RDMAP_READ_REQ_LEN);
		t->have_rdma_hdr = true;
	}
	return 0;
}

/*
 * The Terminate for an error found in the segment being received
 * (RFC 5040 section 4.8): DDP and RDMAP errors carry that segment's length
 * and DDP header, and its RDMA Read Request header when it is one; MPA
 * errors carry none, as the framing itself is in doubt.
 */
void rdmap_term_for_error(struct rdmap_qp *qp, int err, struct rdmap_term *t)
{
	const struct rdmap_rx_seg *s = &qp->seg;
	struct iw_term_triple tr;
	size_t ddp_len;

	memset(t, 0, sizeof(*t));
	if (!iw_error_term(err, &tr))
		return;
	t->layer = tr.layer;
	t->etype = tr.etype;
	t->ecode = tr.ecode;
	if (tr.layer == IW_TERM_LAYER_LLP || s->hdr_have == 0)
		return;
	ddp_len = ddp_hdr_len(s->hdr[DDP_OFF_CTRL] & DDP_CTRL_T);
	if (s->hdr_have < ddp_len)
		return;
	t->m = t->d = true;
	t->seg_len = s->len;
	memcpy(t->ddp_hdr, s->hdr, ddp_len);
	t->ddp_hdr_len = (uint8_t)ddp_len;
	if (!s->ddp.tagged && s->opcode == RDMAP_OP_READ_REQ &&
	    s->hdr_have >= ddp_len + RDMAP_READ_REQ_LEN) {
		t->r = true;
		memcpy(t->rdma_hdr, s->hdr + ddp_len, RDMAP_READ_REQ_LEN);
	}
}

/*
 * The Terminate for a local fault that no incoming segment caused
 * (RFC 5040 section 7.2): the triple alone, no segment length, no headers.
 */
void rdmap_term_local(struct rdmap_term *t)
{
	memset(t, 0, sizeof(*t));
	t->layer = IW_TERM_LOCAL_CATASTROPHIC.layer;
	t->etype = IW_TERM_LOCAL_CATASTROPHIC.etype;
	t->ecode = IW_TERM_LOCAL_CATASTROPHIC.ecode;
}
