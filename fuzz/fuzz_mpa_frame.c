// SPDX-License-Identifier: MIT
/*
 * MPA Request/Reply frames and their negotiation (RFC 5044 section 7.1,
 * RFC 6581), both roles.
 *
 * Input: a mode octet, then either
 *  - parse mode: the local policy and the octets of a peer's Request
 *    (responder) or Reply (initiator).  Every prefix is decoded: the
 *    answer may only move from "need more" to one verdict that never
 *    changes, the frame re-encodes to the octets it came from, and the
 *    negotiation's outcome keeps every rule of the RFCs;
 *  - handshake mode: an initiator's and a responder's policy and their
 *    private data.  The Request and Reply go through encode and decode,
 *    and when both sides agree, they agree on the same thing seen from
 *    either end.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "lib/error.h"
#include "mpa/mpa.h"

/* The longest frame: header and 512 octets of private data. */
#define FRAME_MAX (MPA_FRAME_HDR_LEN + MPA_MAX_PD_LEN)

static void read_policy(struct fz_in *in, struct mpa_policy *p)
{
	uint8_t b = fz_u8(in);

	*p = (struct mpa_policy){
		.revision = b & 1 ? MPA_REVISION_2 : MPA_REVISION_1,
		.crc = (enum mpa_pref)((b >> 1) % 3),
		.markers = (enum mpa_pref)((b >> 3) % 3),
		.rtr_offer = (b >> 5) & MPA_RTR_ALL,
	};
	p->ird = fz_u16(in) & MPA_V2_VALUE_MASK;
	p->ord = fz_u16(in) & MPA_V2_VALUE_MASK;
	p->rtr_accept = fz_u8(in) & MPA_RTR_ALL;
}

static bool one_bit(uint8_t v)
{
	return v && !(v & (v - 1));
}

static bool frame_enhanced(const struct mpa_frame *f)
{
	return f->rev == MPA_REVISION_2 && f->h;
}

/* Field by field: padding is not part of the outcome. */
static bool params_zero(const struct mpa_params *p)
{
	return !p->revision && !p->enhanced && !p->crc && !p->markers_tx &&
	       !p->markers_rx && !p->ird && !p->ord && !p->p2p && !p->rtr;
}

/* Two decoded frames say the same, private data included. */
static void check_same_frame(const struct mpa_frame *a,
			     const struct mpa_frame *b)
{
	fz_check(a->reply == b->reply && a->m == b->m && a->c == b->c &&
			 a->r == b->r && a->rev == b->rev &&
			 frame_enhanced(a) == frame_enhanced(b),
		 "frame flags changed in a round trip");
	if (frame_enhanced(a))
		fz_check(a->ird == b->ird && a->ord == b->ord &&
				 a->p2p == b->p2p && a->rtr == b->rtr,
			 "IRD/ORD words changed in a round trip");
	fz_check(a->pd_len == b->pd_len &&
			 (!a->pd_len || !memcmp(a->pd, b->pd, a->pd_len)),
		 "private data changed in a round trip");
}

/*
 * Encodes @f (private data as decoded) and decodes it again: the same
 * frame, @len octets long, equal to @wire except for what a decoder
 * ignores (reserved flag bits; H outside revision 2).
 */
static void check_round_trip(const struct mpa_frame *f, size_t len,
			     const uint8_t *wire)
{
	uint8_t buf[FRAME_MAX];
	struct mpa_frame g;
	ssize_t n = mpa_frame_encode(f, buf, sizeof(buf));

	fz_check(n == (ssize_t)len, "re-encoded %zd octets, decoded %zu", n,
		 len);
	if (wire) {
		uint8_t flags = wire[MPA_FRAME_OFF_FLAGS] & ~MPA_FLAG_RES;

		if (!frame_enhanced(f))
			flags &= ~MPA_FLAG_H;
		fz_check(buf[MPA_FRAME_OFF_FLAGS] == flags,
			 "flags 0x%02x re-encode as 0x%02x",
			 wire[MPA_FRAME_OFF_FLAGS], buf[MPA_FRAME_OFF_FLAGS]);
		buf[MPA_FRAME_OFF_FLAGS] = wire[MPA_FRAME_OFF_FLAGS];
		fz_check(!memcmp(buf, wire, len), "re-encoded frame differs");
	}
	n = mpa_frame_decode(buf, len, f->reply, MPA_MAX_PD_LEN, &g);
	fz_check(n == (ssize_t)len, "re-encoded frame decodes as %zd", n);
	check_same_frame(f, &g);
}

/*
 * Decodes every prefix of @p: "need more" until the verdict, then the
 * same verdict for every longer prefix.  Returns the verdict for all of
 * @len and the frame in *@f.
 */
static ssize_t decode_prefixes(const uint8_t *p, size_t len, bool reply,
			       uint16_t max_pd, struct mpa_frame *f)
{
	ssize_t verdict = -EAGAIN;
	size_t end = len < FRAME_MAX + 1 ? len : FRAME_MAX + 1;

	for (size_t l = 0; l <= end; l++) {
		struct mpa_frame g;
		ssize_t n = mpa_frame_decode(p, l, reply, max_pd, &g);
		size_t peek = mpa_frame_peek_len(p, l);

		fz_check(l < MPA_FRAME_HDR_LEN ? peek == 0
					       : peek >= MPA_FRAME_HDR_LEN,
			 "peek %zu at %zu octets", peek, l);
		if (verdict == -EAGAIN) {
			verdict = n;
			if (n > 0) {
				fz_check((size_t)n <= l && (size_t)n == peek,
					 "frame of %zd octets from %zu", n, l);
				*f = g;
			}
			continue;
		}
		fz_check(n == verdict, "verdict %zd became %zd at %zu octets",
			 verdict, n, l);
		if (n > 0)
			check_same_frame(f, &g);
	}
	if (verdict == -EAGAIN && len > end)
		fz_fail(__FILE__, __LINE__, "no verdict on %zu octets", len);
	if (verdict > 0) {
		fz_check(f->pd_len <= max_pd && f->pd_len <= MPA_MAX_PD_LEN,
			 "%u octets of private data", f->pd_len);
		fz_check((size_t)verdict == mpa_frame_len(f),
			 "length %zd, frame says %zu", verdict,
			 mpa_frame_len(f));
		fz_check(!f->pd_len ||
				 (f->pd >= p + MPA_FRAME_HDR_LEN &&
				  f->pd + f->pd_len == p + verdict),
			 "private data outside the frame");
		fz_check(f->reply == reply, "Request and Reply confused");
	} else {
		fz_check(verdict == -EAGAIN || verdict == -IW_EMPA_BAD_KEY ||
				 verdict == -IW_EMPA_BAD_REVISION ||
				 verdict == -IW_EMPA_PD_TOO_LONG ||
				 verdict == -IW_EMPA_ENHANCED_SHORT,
			 "decode returned %zd", verdict);
	}
	return verdict;
}

/* Responder: what it answers @req with keeps RFC 5044 and RFC 6581. */
static int check_responder(const struct mpa_policy *l,
			   const struct mpa_frame *req, struct mpa_frame *rep,
			   struct mpa_params *out)
{
	int rc = mpa_negotiate_request(l, req, rep, out);
	bool enh = rep->rev == MPA_REVISION_2 && req->h;

	fz_check(rep->reply && rep->rev <= req->rev &&
			 rep->rev <= l->revision && rep->h == enh,
		 "Reply revision %u H%d for Request %u H%d", rep->rev, rep->h,
		 req->rev, req->h);
	/* RFC 5044 7.1: CRC whenever the initiator asks */
	fz_check(!req->c || rep->c, "the Reply drops the C bit");
	check_round_trip(rep, mpa_frame_len(rep), NULL);
	if (rc) {
		fz_check(rep->r && !rep->m && !rep->p2p && !rep->rtr &&
				 !rep->ird && !rep->ord && params_zero(out),
			 "a refusal that is not a plain rejecting Reply");
		if (req->m && l->markers == MPA_PREF_OFF)
			fz_check(rc == -IW_EMPA_MARKERS_REFUSED,
				 "markers refused as %d", rc);
		else
			fz_check(enh && req->p2p &&
					 (rc == -IW_EMPA_NO_MATCHING_RTR ||
					  rc == -IW_EMPA_INSUFFICIENT_IRD),
				 "refused for %d", rc);
		return rc;
	}
	fz_check(!rep->r, "accepted with R set");
	fz_check(!req->m || l->markers != MPA_PREF_OFF, "markers not refused");
	fz_check(rep->m == (l->markers == MPA_PREF_ON), "M in the Reply");
	fz_check(rep->c == (req->c || l->crc == MPA_PREF_ON), "C in the Reply");
	fz_check(out->crc == rep->c && out->markers_tx == req->m &&
			 out->markers_rx == rep->m && out->revision == rep->rev &&
			 out->enhanced == enh,
		 "outcome differs from the Reply");
	fz_check(out->ird == l->ird, "IRD %u, ours %u", out->ird, l->ird);
	if (!enh) {
		fz_check(!out->p2p && !out->rtr && out->ord == l->ord,
			 "RFC 6581 outcome without its words");
		return 0;
	}
	fz_check(out->ord <= l->ord && out->ord <= req->ird &&
			 rep->ird == out->ird && rep->ord == out->ord,
		 "ORD %u for ours %u, peer's IRD %u", out->ord, l->ord,
		 req->ird);
	if (!req->p2p) {
		fz_check(!rep->p2p && !rep->rtr && !out->p2p && !out->rtr,
			 "peer-to-peer nobody asked for");
		return 0;
	}
	/* RFC 6581 section 9.2: exactly one type, offered and accepted */
	fz_check(rep->p2p && out->p2p && one_bit(rep->rtr) &&
			 out->rtr == rep->rtr &&
			 !(rep->rtr & ~(req->rtr & l->rtr_accept)),
		 "RTR 0x%x picked from 0x%x/0x%x", rep->rtr, req->rtr,
		 l->rtr_accept);
	fz_check(rep->rtr != MPA_RTR_READ || (l->ird && req->ord),
		 "a Read RTR without Read credit");
	return 0;
}

/* Initiator: what it makes of @rep, the answer to our @req. */
static int check_initiator(const struct mpa_policy *l,
			   const struct mpa_frame *req,
			   const struct mpa_frame *rep, struct mpa_params *out)
{
	int rc = mpa_negotiate_reply(l, req, rep, out);
	bool enh = req->h && rep->h && rep->rev == MPA_REVISION_2;

	if (rep->r)
		fz_check(rc == -IW_EMPA_REJECTED, "R taken as %d", rc);
	if (rc) {
		fz_check(params_zero(out), "a refusal with an outcome");
		return rc;
	}
	fz_check(!rep->r && rep->rev <= req->rev, "Reply revision %u", rep->rev);
	fz_check(!req->c || rep->c, "the C bit dropped, not refused");
	fz_check(!rep->c || req->c || l->crc != MPA_PREF_OFF,
		 "CRC taken although refused");
	fz_check(!rep->m || l->markers != MPA_PREF_OFF,
		 "markers taken although refused");
	fz_check(out->crc == (req->c || rep->c) && out->markers_tx == rep->m &&
			 out->markers_rx == req->m && out->revision == rep->rev &&
			 out->enhanced == enh,
		 "outcome differs from the frames");
	if (!enh) {
		fz_check(!l->rtr_offer && !out->p2p && !out->rtr &&
				 out->ird == l->ird && out->ord == l->ord,
			 "peer-to-peer without RFC 6581 words");
		return 0;
	}
	fz_check(rep->ord <= l->ird, "the responder plans %u Reads, IRD %u",
		 rep->ord, l->ird);
	fz_check(out->ird == l->ird && out->ord <= l->ord &&
			 out->ord <= rep->ird,
		 "ORD %u for ours %u and the peer's IRD %u", out->ord, l->ord,
		 rep->ird);
	if (!l->rtr_offer) {
		fz_check(!rep->p2p && !rep->rtr && !out->p2p && !out->rtr,
			 "peer-to-peer taken, not offered");
		return 0;
	}
	fz_check(out->p2p && one_bit(out->rtr) && out->rtr == rep->rtr &&
			 !(out->rtr & ~l->rtr_offer),
		 "RTR 0x%x taken for offer 0x%x", out->rtr, l->rtr_offer);
	fz_check(out->rtr != MPA_RTR_READ || out->ord,
		 "a Read RTR with ORD 0");
	return 0;
}

static void parse_mode(struct fz_in *in, bool reply)
{
	struct mpa_policy l;
	struct mpa_frame f, req, rep;
	struct mpa_params out;
	uint16_t max_pd;
	const uint8_t *p;
	size_t len;
	ssize_t n;

	read_policy(in, &l);
	max_pd = fz_u16(in) % (MPA_MAX_PD_LEN + 2);
	p = fz_bytes(in, fz_left(in), &len);
	n = decode_prefixes(p, len, reply, max_pd, &f);
	if (n <= 0)
		return;
	check_round_trip(&f, (size_t)n, p);
	if (!reply) {
		check_responder(&l, &f, &rep, &out);
		return;
	}
	mpa_request_build(&l, &req);
	check_initiator(&l, &req, &f, &out);
}

/* Encodes @f with private data, then decodes it as the peer does. */
static void over_the_wire(struct mpa_frame *f, const uint8_t *pd,
			  uint16_t pd_len, uint8_t *buf, struct mpa_frame *got)
{
	uint16_t room = MPA_MAX_PD_LEN -
			(frame_enhanced(f) ? MPA_V2_WORDS_LEN : 0);
	ssize_t n, m;

	f->pd = pd;
	f->pd_len = pd_len < room ? pd_len : room;
	n = mpa_frame_encode(f, buf, FRAME_MAX);
	fz_check(n > 0, "encoding a frame we built: %zd", n);
	m = mpa_frame_decode(buf, (size_t)n, f->reply, MPA_MAX_PD_LEN, got);
	fz_check(m == n, "our own %s decodes as %zd",
		 f->reply ? "Reply" : "Request", m);
	check_same_frame(f, got);
}

static void handshake_mode(struct fz_in *in)
{
	struct mpa_policy li, lr;
	struct mpa_frame req, req_in, rep, rep_in;
	struct mpa_params oi, orr;
	uint8_t wire_req[FRAME_MAX], wire_rep[FRAME_MAX];
	const uint8_t *pd;
	size_t pd_len;
	int rr, ri;

	read_policy(in, &li);
	read_policy(in, &lr);
	pd = fz_bytes(in, fz_u16(in) % (MPA_MAX_PD_LEN + 1), &pd_len);

	mpa_request_build(&li, &req);
	over_the_wire(&req, pd, (uint16_t)pd_len, wire_req, &req_in);
	rr = check_responder(&lr, &req_in, &rep, &orr);
	over_the_wire(&rep, pd, (uint16_t)pd_len, wire_rep, &rep_in);
	ri = check_initiator(&li, &req, &rep_in, &oi);
	if (rr) {
		fz_check(ri == -IW_EMPA_REJECTED, "a refusal read as %d", ri);
		return;
	}
	if (ri) {
		/* what the responder may accept and the initiator not */
		bool enh = orr.enhanced;

		fz_check((ri == -IW_EMPA_MARKERS_REFUSED && rep.m &&
			  li.markers == MPA_PREF_OFF) ||
				 (ri == -IW_EMPA_CRC_REFUSED && rep.c &&
				  !req.c && li.crc == MPA_PREF_OFF) ||
				 (ri == -IW_EMPA_NO_MATCHING_RTR && !enh &&
				  li.rtr_offer),
			 "accepted Reply refused with %d", ri);
		return;
	}
	fz_check(oi.revision == orr.revision && oi.enhanced == orr.enhanced &&
			 oi.crc == orr.crc && oi.markers_tx == orr.markers_rx &&
			 oi.markers_rx == orr.markers_tx && oi.p2p == orr.p2p &&
			 oi.rtr == orr.rtr,
		 "the two ends settled on different things");
	if (oi.enhanced)
		fz_check(oi.ord <= orr.ird && orr.ord <= oi.ird,
			 "ORD %u/%u over the other side's IRD %u/%u", oi.ord,
			 orr.ord, orr.ird, oi.ird);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in;
	uint8_t mode;

	fz_in_init(&in, data, size);
	mode = fz_u8(&in);
	if (mode & 2)
		handshake_mode(&in);
	else
		parse_mode(&in, mode & 1);
	return 0;
}
