// SPDX-License-Identifier: MIT
/*
 * MPA Request and Reply frames (RFC 5044 section 7.1) with the RFC 6581
 * enhanced form, in which the first four private-data octets are the IRD
 * and ORD words carrying the peer-to-peer and ready-to-receive bits.
 */
#include <errno.h>
#include <string.h>

#include "lib/byteorder.h"
#include "lib/error.h"
#include "mpa/mpa.h"

static bool frame_enhanced(const struct mpa_frame *f)
{
	return f->rev == MPA_REVISION_2 && f->h;
}

/* Octets of the whole frame on the wire. */
size_t mpa_frame_len(const struct mpa_frame *f)
{
	return MPA_FRAME_HDR_LEN + (frame_enhanced(f) ? MPA_V2_WORDS_LEN : 0) +
	       f->pd_len;
}

size_t mpa_frame_peek_len(const uint8_t *p, size_t avail)
{
	if (avail < MPA_FRAME_HDR_LEN)
		return 0;
	return MPA_FRAME_HDR_LEN +
	       (size_t)(p[MPA_FRAME_OFF_PD_LEN] << 8 | p[MPA_FRAME_OFF_PD_LEN + 1]);
}

/*
 * Writes @f to @out.  Returns the frame length, -ENOSPC when @cap is too
 * small, -EINVAL for a revision other than 1 or 2, an IRD/ORD over 14 bits,
 * or private data over the 512 octets RFC 5044 allows (IRD/ORD included).
 */
ssize_t mpa_frame_encode(const struct mpa_frame *f, uint8_t *out, size_t cap)
{
	size_t len = mpa_frame_len(f);
	size_t pd_total = len - MPA_FRAME_HDR_LEN;
	uint8_t flags = 0;
	uint8_t *pd;

	if (f->rev != MPA_REVISION_1 && f->rev != MPA_REVISION_2)
		return -EINVAL;
	if (pd_total > MPA_MAX_PD_LEN || f->ird > MPA_V2_VALUE_MASK ||
	    f->ord > MPA_V2_VALUE_MASK || (f->pd_len && !f->pd))
		return -EINVAL;
	if (len > cap)
		return -ENOSPC;

	memcpy(out, f->reply ? MPA_KEY_REP : MPA_KEY_REQ, MPA_KEY_LEN);
	flags |= f->m ? MPA_FLAG_M : 0;
	flags |= f->c ? MPA_FLAG_C : 0;
	flags |= f->r ? MPA_FLAG_R : 0;
	flags |= frame_enhanced(f) ? MPA_FLAG_H : 0;
	out[MPA_FRAME_OFF_FLAGS] = flags;
	out[MPA_FRAME_OFF_REV] = f->rev;
	put_be16(out + MPA_FRAME_OFF_PD_LEN, (uint16_t)pd_total);
	pd = out + MPA_FRAME_HDR_LEN;
	if (frame_enhanced(f)) {
		uint16_t ird = f->ird, ord = f->ord;

		ird |= f->p2p ? MPA_V2_IRD_A : 0;
		ird |= (f->rtr & MPA_RTR_SEND) ? MPA_V2_IRD_B : 0;
		ord |= (f->rtr & MPA_RTR_WRITE) ? MPA_V2_ORD_C : 0;
		ord |= (f->rtr & MPA_RTR_READ) ? MPA_V2_ORD_D : 0;
		put_be16(pd, ird);
		put_be16(pd + 2, ord);
		pd += MPA_V2_WORDS_LEN;
	}
	if (f->pd_len)
		memcpy(pd, f->pd, f->pd_len);
	return (ssize_t)len;
}

/*
 * Parses a Request (@want_reply false) or Reply from the first @len octets
 * of a stream.  Returns the frame length once it has all arrived, -EAGAIN
 * while more octets are needed, or a protocol error:
 *   -IW_EMPA_BAD_KEY        the 16-octet key is not the expected one
 *   -IW_EMPA_BAD_REVISION   revision other than 1 or 2
 *   -IW_EMPA_PD_TOO_LONG    private data over @max_pd_len (checked before
 *                           any of it is awaited)
 *   -IW_EMPA_ENHANCED_SHORT revision 2 with H but no room for IRD/ORD
 * Errors are reported as soon as the octets that prove them have arrived.
 * @f->pd points into @p.
 */
ssize_t mpa_frame_decode(const uint8_t *p, size_t len, bool want_reply,
			 uint16_t max_pd_len, struct mpa_frame *f)
{
	const char *key = want_reply ? MPA_KEY_REP : MPA_KEY_REQ;
	size_t cmp = len < MPA_KEY_LEN ? len : MPA_KEY_LEN;
	uint16_t pd_total;
	uint8_t flags;

	if (memcmp(p, key, cmp) != 0)
		return -IW_EMPA_BAD_KEY;
	if (len < MPA_FRAME_HDR_LEN)
		return -EAGAIN;

	flags = p[MPA_FRAME_OFF_FLAGS];
	*f = (struct mpa_frame){
		.reply = want_reply,
		.m = flags & MPA_FLAG_M,
		.c = flags & MPA_FLAG_C,
		.r = flags & MPA_FLAG_R,
		.h = flags & MPA_FLAG_H,
		.res = flags & MPA_FLAG_RES,
		.rev = p[MPA_FRAME_OFF_REV],
	};
	if (f->rev != MPA_REVISION_1 && f->rev != MPA_REVISION_2)
		return -IW_EMPA_BAD_REVISION;
	pd_total = get_be16(p + MPA_FRAME_OFF_PD_LEN);
	if (pd_total > max_pd_len || pd_total > MPA_MAX_PD_LEN)
		return -IW_EMPA_PD_TOO_LONG;
	if (frame_enhanced(f) && pd_total < MPA_V2_WORDS_LEN)
		return -IW_EMPA_ENHANCED_SHORT;
	if (len < (size_t)MPA_FRAME_HDR_LEN + pd_total)
		return -EAGAIN;

	p += MPA_FRAME_HDR_LEN;
	if (frame_enhanced(f)) {
		uint16_t ird = get_be16(p), ord = get_be16(p + 2);

		f->ird = ird & MPA_V2_VALUE_MASK;
		f->ord = ord & MPA_V2_VALUE_MASK;
		f->p2p = ird & MPA_V2_IRD_A;
		f->rtr = ((ird & MPA_V2_IRD_B) ? MPA_RTR_SEND : 0) |
			 ((ord & MPA_V2_ORD_C) ? MPA_RTR_WRITE : 0) |
			 ((ord & MPA_V2_ORD_D) ? MPA_RTR_READ : 0);
		p += MPA_V2_WORDS_LEN;
		pd_total -= MPA_V2_WORDS_LEN;
	}
	f->pd = pd_total ? p : NULL;
	f->pd_len = pd_total;
	return (ssize_t)mpa_frame_len(f);
}
