// SPDX-License-Identifier: MIT
/*
 * MPA connection parameters (RFC 5044 section 7.1, RFC 6581 sections 4-9):
 * markers per direction, CRC, revision, IRD/ORD and the peer-to-peer
 * ready-to-receive (RTR) type.  Given the local policy and the peer's frame,
 * each function decides the outcome or returns the reason to reject.
 */
#include "lib/error.h"
#include "mpa/mpa.h"

static uint16_t min16(uint16_t a, uint16_t b)
{
	return a < b ? a : b;
}

/* Initiator: the Request the local policy asks for (private data unset). */
void mpa_request_build(const struct mpa_policy *local, struct mpa_frame *req)
{
	*req = (struct mpa_frame){
		.rev = local->revision,
		/* M asks the peer to put markers in what we receive */
		.m = local->markers == MPA_PREF_ON,
		.c = local->crc == MPA_PREF_ON,
		.h = local->revision == MPA_REVISION_2,
		.ird = local->ird,
		.ord = local->ord,
		.p2p = local->rtr_offer != 0,
		.rtr = local->rtr_offer,
	};
}

/*
 * RFC 6581 section 9.2: the responder picks exactly one RTR type that the
 * initiator offered, preferring RDMA Write, then Read, then Send (the order
 * Linux siw uses).  A zero-length Read needs one Read credit each way.
 */
static int pick_rtr(const struct mpa_policy *local, const struct mpa_frame *req,
		    uint8_t *rtr)
{
	uint8_t common = req->rtr & local->rtr_accept;
	bool read_credit = local->ird > 0 && req->ord > 0;

	if (common & MPA_RTR_WRITE)
		*rtr = MPA_RTR_WRITE;
	else if ((common & MPA_RTR_READ) && read_credit)
		*rtr = MPA_RTR_READ;
	else if (common & MPA_RTR_SEND)
		*rtr = MPA_RTR_SEND;
	else if (common & MPA_RTR_READ)
		return -IW_EMPA_INSUFFICIENT_IRD;
	else
		return -IW_EMPA_NO_MATCHING_RTR;
	return 0;
}

/* A rejecting Reply: R set, markers cleared, no IRD/ORD and no RTR. */
static void reject_reply(const struct mpa_frame *req, uint8_t rev, bool h,
			 struct mpa_frame *rep)
{
	*rep = (struct mpa_frame){
		.reply = true,
		.r = true,
		.c = req->c,
		.h = h,
		.rev = rev,
	};
}

/*
 * Responder: decides the Reply to @req.  On success fills @rep (private data
 * unset) and @out and returns 0.  Otherwise returns the reason and fills @rep
 * with the rejecting Reply to send before closing.
 */
int mpa_negotiate_request(const struct mpa_policy *local,
			  const struct mpa_frame *req, struct mpa_frame *rep,
			  struct mpa_params *out)
{
	bool enhanced;
	int rc = 0;

	*rep = (struct mpa_frame){ .reply = true };
	*out = (struct mpa_params){ 0 };
	/* answer with the highest revision both sides know */
	rep->rev = req->rev < local->revision ? req->rev : local->revision;
	enhanced = rep->rev == MPA_REVISION_2 && req->h;
	rep->h = enhanced;

	/* M in the Request: the initiator wants markers from us */
	if (req->m && local->markers == MPA_PREF_OFF)
		rc = -IW_EMPA_MARKERS_REFUSED;
	rep->m = local->markers == MPA_PREF_ON;
	/* RFC 5044 7.1: a responder MUST use CRC when the initiator asks */
	rep->c = req->c || local->crc == MPA_PREF_ON;

	out->ird = local->ird;
	out->ord = local->ord;
	if (enhanced) {
		/* never plan more outstanding Reads than the initiator takes */
		out->ord = min16(local->ord, req->ird);
		rep->ird = out->ird;
		rep->ord = out->ord;
		if (!rc && req->p2p) {
			rc = req->rtr ? pick_rtr(local, req, &rep->rtr)
				      : -IW_EMPA_NO_MATCHING_RTR;
			rep->p2p = true;
		}
	}
	if (rc) {
		reject_reply(req, rep->rev, enhanced, rep);
		*out = (struct mpa_params){ 0 };
		return rc;
	}
	out->revision = rep->rev;
	out->enhanced = enhanced;
	out->crc = rep->c;
	out->markers_tx = req->m;
	out->markers_rx = rep->m;
	out->p2p = rep->p2p;
	out->rtr = rep->rtr;
	return 0;
}

static bool one_bit(uint8_t v)
{
	return v && !(v & (v - 1));
}

/* Initiator: checks the RFC 6581 words of an enhanced Reply. */
static int check_enhanced_reply(const struct mpa_policy *local,
				const struct mpa_frame *rep,
				struct mpa_params *out)
{
	out->ird = local->ird;
	out->ord = min16(local->ord, rep->ird);
	/* the responder may not plan more Reads than our IRD takes */
	if (rep->ord > local->ird)
		return -IW_EMPA_INSUFFICIENT_IRD;
	if (!local->rtr_offer)
		return rep->p2p || rep->rtr ? -IW_EMPA_RTR_INVALID : 0;
	if (!rep->p2p || !one_bit(rep->rtr) || (rep->rtr & ~local->rtr_offer))
		return -IW_EMPA_RTR_INVALID;
	if (rep->rtr == MPA_RTR_READ && out->ord == 0)
		return -IW_EMPA_INSUFFICIENT_IRD;
	out->p2p = true;
	out->rtr = rep->rtr;
	return 0;
}

/*
 * Initiator: checks the Reply @rep to our Request @req.  Returns 0 and fills
 * @out, or the reason the connection cannot proceed (-IW_EMPA_REJECTED when
 * the responder said no).
 */
int mpa_negotiate_reply(const struct mpa_policy *local,
			const struct mpa_frame *req,
			const struct mpa_frame *rep, struct mpa_params *out)
{
	bool enhanced;
	int rc;

	*out = (struct mpa_params){ 0 };
	if (rep->r)
		return -IW_EMPA_REJECTED;
	if (rep->rev > req->rev)
		return -IW_EMPA_BAD_REVISION;
	/* M in the Reply: the responder wants markers from us */
	if (rep->m && local->markers == MPA_PREF_OFF)
		return -IW_EMPA_MARKERS_REFUSED;
	if (req->c && !rep->c)
		return -IW_EMPA_CRC_DROPPED;
	if (rep->c && !req->c && local->crc == MPA_PREF_OFF)
		return -IW_EMPA_CRC_REFUSED;

	enhanced = req->h && rep->h && rep->rev == MPA_REVISION_2;
	if (enhanced) {
		rc = check_enhanced_reply(local, rep, out);
		if (rc) {
			*out = (struct mpa_params){ 0 };
			return rc;
		}
	} else {
		/* no RFC 6581 words: no peer-to-peer, depths as configured */
		if (local->rtr_offer)
			return -IW_EMPA_NO_MATCHING_RTR;
		out->ird = local->ird;
		out->ord = local->ord;
	}
	out->revision = rep->rev;
	out->enhanced = enhanced;
	out->crc = req->c || rep->c;
	out->markers_tx = rep->m;
	out->markers_rx = req->m;
	return 0;
}
