// SPDX-License-Identifier: MIT
/*
 * MPA for iwarp-dump: the Request and Reply that open a connection
 * (RFC 5044 section 7.1, RFC 6581), what they settle for the FPDUs that
 * follow, and the framing checks on each FPDU (markers, pad, CRC).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/byteorder.h"
#include "lib/error.h"
#include "dump.h"

/* The frame by which octet @pos of @dir had arrived (0: a raw file). */
uint32_t dump_frame_at(const struct dump_dir *dir, size_t pos)
{
	if (!dir->ready || dir->len == 0)
		return 0;
	return dir->ready[pos < dir->len ? pos : dir->len - 1];
}

/* The frame where @c's first octet, either way, arrived. */
uint32_t dump_first_frame(const struct dump_conn *c)
{
	uint32_t a = dump_frame_at(&c->dir[0], 0);
	uint32_t b = dump_frame_at(&c->dir[1], 0);

	if (!c->dir[0].len)
		return b;
	if (!c->dir[1].len)
		return a;
	return a < b ? a : b;
}

static bool starts_with_key(const struct dump_dir *dir, const char *key)
{
	return dir->len >= MPA_KEY_LEN && !memcmp(dir->data, key, MPA_KEY_LEN);
}

/* Decodes the frame a stream should open with; remembers how it went. */
static void read_frame(struct dump_conn *c, int side, bool reply,
		       struct dump_hs_frame *hf)
{
	const struct dump_dir *dir = &c->dir[side];
	ssize_t n;

	hf->side = side;
	if (dir->len == 0) {
		hf->rc = DUMP_HS_ABSENT;
		return;
	}
	n = mpa_frame_decode(dir->data, dir->len, reply, MPA_MAX_PD_LEN, &hf->f);
	hf->rc = n > 0 ? DUMP_HS_OK : (int)n;
	hf->len = n > 0 ? (size_t)n : 0;
	/* shown where the octets that decided it arrived */
	hf->frame = dump_frame_at(dir, n > 0 ? (size_t)n - 1 :
				  dir->len < MPA_FRAME_HDR_LEN ? dir->len - 1 :
				  MPA_FRAME_HDR_LEN - 1);
}

/*
 * Whether a raw file opens with a handshake frame: both keys, and the
 * mistaken ones worth naming, begin so.
 */
static bool raw_has_frame(const struct dump_dir *dir)
{
	static const char stem[] = "MPA ID ";
	size_t n = dir->len < sizeof(stem) - 1 ? dir->len : sizeof(stem) - 1;

	return n && !memcmp(dir->data, stem, n);
}

/* Which side opened: the SYN's sender, else the one with the Request key. */
static int find_initiator(const struct dump_conn *c)
{
	if (c->initiator >= 0)
		return c->initiator;
	if (starts_with_key(&c->dir[1], MPA_KEY_REQ) ||
	    starts_with_key(&c->dir[0], MPA_KEY_REP))
		return 1;
	return 0;
}

static void frame_past(struct dump_conn *c, int side, size_t base, bool crc,
		       bool markers)
{
	struct dump_dir *dir = &c->dir[side];

	dir->decode = dir->len > base;
	dir->fpdu_base = base;
	dir->markers = markers;
	c->crc = crc;
}

/* RFC 5044 section 7.1: markers toward whoever set M, CRC if either set C. */
static void settle(struct dump_conn *c, int ini)
{
	const struct mpa_frame *req = &c->hs.req.f, *rep = &c->hs.rep.f;
	bool crc = req->c || rep->c;

	frame_past(c, ini, c->hs.req.len, crc, rep->m);
	frame_past(c, !ini, c->hs.rep.len, crc, req->m);
	c->p2p = req->p2p && rep->p2p;
	c->rtr = c->p2p ? rep->rtr : 0;
}

/*
 * Only one frame is there (a one-way raw file, or a capture that lacks
 * the other): what it says goes, and the options say the rest.
 */
static void settle_one_way(struct dump *d, struct dump_conn *c,
			   const struct dump_hs_frame *hf)
{
	bool crc = hf->f.c || d->opt.crc == DUMP_ON;

	frame_past(c, hf->side, hf->len, crc, d->opt.markers == DUMP_ON);
	c->assumed = true;
}

/* No handshake to go by: FPDUs from the first octet, framed as told. */
static void no_handshake(struct dump *d, struct dump_conn *c)
{
	c->hs.req.rc = c->hs.rep.rc = DUMP_HS_SKIPPED;
	for (int s = 0; s < 2; s++)
		frame_past(c, s, 0, d->opt.crc == DUMP_ON,
			   d->opt.markers == DUMP_ON);
	c->assumed = true;
	c->decode = c->dir[0].decode || c->dir[1].decode;
}

/*
 * Reads the handshake of @c and decides which directions carry FPDUs and
 * how they are framed.  Nothing is printed here: the timeline prints each
 * frame (dump_handshake_print) where it arrived.
 */
void dump_handshake(struct dump *d, struct dump_conn *c)
{
	struct dump_handshake *hs = &c->hs;
	int ini = find_initiator(c);
	bool guided = d->opt.crc != DUMP_UNSET || d->opt.markers != DUMP_UNSET;

	c->initiator = ini;
	if (d->raw && d->opt.start == DUMP_START_AUTO &&
	    !raw_has_frame(&c->dir[0]) && !raw_has_frame(&c->dir[1]))
		d->opt.start = DUMP_START_FPDU;
	if (d->raw && d->opt.start == DUMP_START_FPDU) {
		no_handshake(d, c);
		return;
	}
	read_frame(c, ini, false, &hs->req);
	read_frame(c, !ini, true, &hs->rep);
	/* a Reply is judged only as the answer to a Request */
	if (hs->req.rc != DUMP_HS_OK && hs->rep.rc < 0)
		hs->rep.rc = DUMP_HS_SKIPPED;

	if (hs->req.rc == DUMP_HS_OK && hs->rep.rc == DUMP_HS_OK) {
		hs->rejected = hs->rep.f.r;
		if (!hs->rejected)
			settle(c, ini);
	} else if (hs->req.rc == DUMP_HS_OK && hs->rep.rc == DUMP_HS_ABSENT) {
		settle_one_way(d, c, &hs->req);
	} else if (hs->rep.rc == DUMP_HS_OK && hs->req.rc == DUMP_HS_ABSENT) {
		settle_one_way(d, c, &hs->rep);
	} else if (hs->req.rc != DUMP_HS_OK && hs->rep.rc != DUMP_HS_OK &&
		   guided && !d->raw) {
		no_handshake(d, c);
		return;
	}
	c->decode = c->dir[0].decode || c->dir[1].decode;
}

/* ---- printing the handshake ----------------------------------------- */

static const char *frame_kind(bool reply)
{
	return reply ? "Reply" : "Request";
}

/* A key that is not MPA's, shown as text where it is printable. */
static void key_words(const uint8_t *p, size_t len, char *out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < len && i < MPA_KEY_LEN && n + 5 < cap; i++)
		n += (size_t)snprintf(out + n, cap - n,
				      isprint(p[i]) ? "%c" : "\\x%02x", p[i]);
	out[n] = 0;
}

/* A frame that does not decode: one line, then why. */
static void print_undecoded(struct dump *d, struct dump_conn *c,
			    const struct dump_hs_frame *hf, bool reply)
{
	struct dump_dir *dir = &c->dir[hf->side];
	const uint8_t *p = dir->data;
	char key[80];

	if (hf->rc == -IW_EMPA_BAD_KEY) {
		key_words(p, dir->len, key, sizeof(key));
		if (!reply)
			dump_notice(d, hf->frame, 0,
				    "%s: no MPA Request opens the stream (\"%s\"); connection skipped (--crc/--markers decode it as FPDUs)",
				    dir->name, key);
		else
			dump_violation(d, c, NULL, hf->frame, 0,
				       "%s: the answer to an MPA Request is not an MPA Reply (\"%s\")",
				       dir->name, key);
		return;
	}
	if (hf->rc == -EAGAIN) {
		dump_notice(d, hf->frame, 0,
			    "%s: stream ends %zu octets into the MPA %s",
			    dir->name, dir->len, frame_kind(reply));
		return;
	}
	if (!d->opt.quiet) {
		dump_line_start(d, hf->frame, 0, dir);
		printf("MPA %s rev %u flags 0x%02x pd %u (not decoded)\n",
		       frame_kind(reply), p[MPA_FRAME_OFF_REV],
		       p[MPA_FRAME_OFF_FLAGS],
		       get_be16(p + MPA_FRAME_OFF_PD_LEN));
	}
	if (hf->rc == -IW_EMPA_BAD_REVISION)
		dump_notice(d, hf->frame, 0,
			    "MPA %s revision %u: only revisions 1 and 2 (RFC 5044, RFC 6581) are known; connection skipped",
			    frame_kind(reply), p[MPA_FRAME_OFF_REV]);
	else if (hf->rc == -IW_EMPA_PD_TOO_LONG)
		dump_violation(d, c, NULL, hf->frame, 0,
			       "MPA %s private data length %u over %u (RFC 5044 section 7.1)",
			       frame_kind(reply),
			       get_be16(p + MPA_FRAME_OFF_PD_LEN),
			       MPA_MAX_PD_LEN);
	else
		dump_violation(d, c, NULL, hf->frame, 0,
			       "MPA %s revision 2 with H but %u octets of private data: no room for IRD/ORD (RFC 6581)",
			       frame_kind(reply),
			       get_be16(p + MPA_FRAME_OFF_PD_LEN));
}

/* Rules each frame keeps on its own (RFC 5044 section 7.1). */
static void check_frame(struct dump *d, struct dump_conn *c,
			const struct dump_hs_frame *hf, bool reply)
{
	if (hf->f.res)
		dump_warning(d, c, NULL, hf->frame, 0,
			     "MPA %s reserved flag bits 0x%x set",
			     frame_kind(reply), hf->f.res);
	if (!reply && hf->f.r)
		dump_warning(d, c, NULL, hf->frame, 0,
			     "MPA Request has the R (reject) bit set");
}

/* What the Reply answers to the Request (RFC 5044 7.1, RFC 6581 section 5). */
static void check_answer(struct dump *d, struct dump_conn *c)
{
	const struct mpa_frame *req = &c->hs.req.f, *rep = &c->hs.rep.f;
	uint32_t frame = c->hs.rep.frame;

	if (rep->rev > req->rev)
		dump_violation(d, c, NULL, frame, 0,
			       "MPA Reply revision %u above the Request's %u",
			       rep->rev, req->rev);
	if (rep->r)
		return;
	if (rep->p2p && !req->p2p)
		dump_violation(d, c, NULL, frame, 0,
			       "MPA Reply sets peer-to-peer, the Request did not");
	if (req->p2p && rep->p2p &&
	    ((rep->rtr & (rep->rtr - 1)) || !(rep->rtr & req->rtr)))
		dump_violation(d, c, NULL, frame, 0,
			       "MPA Reply picks RTR %s, the Request offered %s (RFC 6581: exactly one of those)",
			       dump_rtr_words(rep->rtr),
			       dump_rtr_words(req->rtr));
}

/* The octets that follow a rejecting Reply, from either side. */
static void check_rejected(struct dump *d, struct dump_conn *c)
{
	for (int s = 0; s < 2; s++) {
		const struct dump_hs_frame *hf =
			s == c->initiator ? &c->hs.req : &c->hs.rep;
		const struct dump_dir *dir = &c->dir[s];

		if (dir->len > hf->len)
			dump_violation(d, c, NULL,
				       dump_frame_at(dir, hf->len), 0,
				       "%s: %zu octets after the connection was rejected",
				       dir->name, dir->len - hf->len);
	}
}

static void say_framing(struct dump *d, struct dump_conn *c, uint32_t frame)
{
	const struct dump_dir *i2r = &c->dir[c->initiator];
	const struct dump_dir *r2i = &c->dir[!c->initiator];

	if (c->hs.rejected) {
		dump_notice(d, frame, 0, "connection rejected (R bit)");
		return;
	}
	if (c->assumed && c->decode)
		dump_notice(d, frame, 0,
			    "one side of the handshake is missing: CRC %s, markers %s assumed (--crc, --markers)",
			    c->crc ? "on" : "off",
			    (i2r->decode ? i2r : r2i)->markers ? "on" : "off");
	else if (!d->opt.quiet && d->opt.verbose)
		printf("    framing: CRC %s, markers %s initiator to responder, %s back%s%s\n",
		       c->crc ? "on" : "off", i2r->markers ? "on" : "off",
		       r2i->markers ? "on" : "off",
		       c->p2p ? ", peer-to-peer RTR " : "",
		       c->p2p ? dump_rtr_words(c->rtr) : "");
}

/*
 * Prints the handshake frame @side sent, with the rules it breaks; after
 * the second frame, what the two settled.
 */
void dump_handshake_print(struct dump *d, struct dump_conn *c, int side)
{
	bool reply = side != c->initiator;
	struct dump_hs_frame *hf = reply ? &c->hs.rep : &c->hs.req;
	struct dump_hs_frame *other = reply ? &c->hs.req : &c->hs.rep;

	if (hf->rc == DUMP_HS_SKIPPED) {
		dump_notice(d, dump_first_frame(c), 0,
			    "%s: no MPA handshake; FPDUs from the first octet, CRC %s, markers %s (--crc, --markers)",
			    c->dir[side].name, c->crc ? "on" : "off",
			    c->dir[side].markers ? "on" : "off");
		return;
	}
	if (hf->rc != DUMP_HS_OK) {
		print_undecoded(d, c, hf, reply);
		return;
	}
	if (!d->opt.quiet) {
		dump_line_start(d, hf->frame, 0, &c->dir[side]);
		dump_print_frame(&hf->f);
		if (d->opt.verbose)
			dump_print_frame_details(&hf->f, c->dir[side].data,
						 hf->len);
	}
	check_frame(d, c, hf, reply);
	/* after the second of the two, judge the pair */
	if (other->rc == DUMP_HS_OK && ++c->hs.printed == 2) {
		check_answer(d, c);
		if (c->hs.rejected)
			check_rejected(d, c);
		say_framing(d, c, hf->frame);
	} else if (other->rc == DUMP_HS_ABSENT) {
		say_framing(d, c, hf->frame);
	}
}

/*
 * RFC 5044 section 7.1: the initiator sends no FPDU before the Reply has
 * come, and the responder none before the initiator's first FPDU (with
 * RFC 6581, its RTR).  Only a capture knows the order.
 */
void dump_first_fpdu_check(struct dump *d, struct dump_conn *c, int side,
			   uint32_t first_octet_frame)
{
	const struct dump_dir *ini = &c->dir[c->initiator];

	if (d->raw || c->hs.req.rc != DUMP_HS_OK ||
	    c->hs.rep.rc != DUMP_HS_OK)
		return;
	if (side == c->initiator) {
		if (first_octet_frame < c->hs.rep.frame)
			dump_violation(d, c, &c->dir[side], first_octet_frame,
				       0,
				       "the initiator's first FPDU began before the MPA Reply (frame %u) arrived",
				       c->hs.rep.frame);
	} else if (!ini->first_fpdu_frame ||
		   first_octet_frame < ini->first_fpdu_frame) {
		dump_violation(d, c, &c->dir[side], first_octet_frame, 0,
			       "the responder sent an FPDU before the initiator's first FPDU had arrived");
	}
}

/* ---- FPDU framing ---------------------------------------------------- */

/*
 * RFC 5044 sections 4.1, 4.3 and 4.4 on one scanned FPDU: markers where
 * they point, the CRC when negotiated; reserved marker bits and pad octets
 * not zero are warnings, as a receiver ignores them.
 */
void dump_fpdu_check(struct dump *d, struct dump_conn *c, int side,
		     uint32_t frame, const struct mpa_scan_fpdu *f)
{
	struct dump_dir *dir = &c->dir[side];
	uint64_t at = dir->fpdu_base + f->off;

	for (unsigned int i = 0; i < f->n_markers; i++) {
		const struct mpa_scan_marker *m = &f->marker[i];

		if (!m->ok && m->want == 0)
			dump_violation(d, c, dir, frame, at,
				       "marker at stream offset %llu opens an FPDU but has FPDUPTR %u, not 0",
				       (unsigned long long)m->off, m->fpduptr);
		else if (!m->ok)
			dump_violation(d, c, dir, frame, at,
				       "marker at stream offset %llu points %u back, FPDU starts %llu back",
				       (unsigned long long)m->off, m->fpduptr,
				       (unsigned long long)m->want);
		if (m->reserved)
			dump_warning(d, c, dir, frame, at,
				     "marker at stream offset %llu has reserved bits 0x%04x set",
				     (unsigned long long)m->off, m->reserved);
	}
	if (!f->pad_zero)
		dump_warning(d, c, dir, frame, at,
			     "%u pad octets are not zero (RFC 5044 section 4.1: the sender zeroes them, the receiver ignores them)",
			     f->pad_len);
	if (c->crc && !f->crc_ok)
		dump_violation(d, c, dir, frame, at,
			       "CRC mismatch: wire 0x%08x, computed 0x%08x",
			       f->crc_wire, f->crc_computed);
}
