// SPDX-License-Identifier: MIT
/*
 * DDP and RDMAP for iwarp-dump: each ULPDU's headers decoded, and the
 * rules a stream of them keeps checked (RFC 5041 sections 4 and 5, RFC 5040
 * sections 4 and 5, RFC 6581 for the RTR): versions, opcode against buffer
 * model and queue, MSN and MO per untagged queue, tagged continuity within
 * a message, Read Responses against the peer's Read Requests, Terminate.
 * The RFC 7306 messages are judged in dump_ext.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/byteorder.h"
#include "dump.h"

static const char *const opcode_names[] = {
	[RDMAP_OP_WRITE] = "Write",
	[RDMAP_OP_READ_REQ] = "Read Request",
	[RDMAP_OP_READ_RESP] = "Read Response",
	[RDMAP_OP_SEND] = "Send",
	[RDMAP_OP_SEND_INV] = "Send with Invalidate",
	[RDMAP_OP_SEND_SE] = "Send with SE",
	[RDMAP_OP_SEND_SE_INV] = "Send with SE and Invalidate",
	[RDMAP_OP_TERMINATE] = "Terminate",
	/* RFC 7306; it reserves 0x8 and 0x9 */
	[RDMAP_OP_ATOMIC_REQ] = "Atomic Request",
	[RDMAP_OP_ATOMIC_RESP] = "Atomic Response",
	[RDMAP_OP_IMM] = "Immediate Data",
	[RDMAP_OP_IMM_SE] = "Immediate Data with SE",
};

#define N_OPCODES (sizeof(opcode_names) / sizeof(opcode_names[0]))

/* The RFC 5040 (or RFC 7306) name of @opcode, or NULL for another. */
const char *dump_opcode_name(uint8_t opcode)
{
	return opcode < N_OPCODES ? opcode_names[opcode] : NULL;
}

static bool is_send(uint8_t op)
{
	return op >= RDMAP_OP_SEND && op <= RDMAP_OP_SEND_SE_INV;
}

static const char *op_words(uint8_t op, char *buf, size_t cap)
{
	const char *name = dump_opcode_name(op);

	if (name)
		return name;
	snprintf(buf, cap, "opcode 0x%x", op);
	return buf;
}

/* RFC 5040 section 4.4: the Read Request header after the DDP header. */
void dump_read_req_decode(const uint8_t *p, struct dump_read_req *rr,
			  uint32_t frame)
{
	rr->sink_stag = get_be32(p + RDMAP_RR_OFF_SINK_STAG);
	rr->sink_to = get_be64(p + RDMAP_RR_OFF_SINK_TO);
	rr->size = get_be32(p + RDMAP_RR_OFF_SIZE);
	rr->src_stag = get_be32(p + RDMAP_RR_OFF_SRC_STAG);
	rr->src_to = get_be64(p + RDMAP_RR_OFF_SRC_TO);
	rr->frame = frame;
}

/*
 * First pass: keeps the Read Requests one direction sends, in stream order,
 * so the other direction's Read Responses can be matched however the two
 * interleave (and in raw files, which have no order between them).
 */
void dump_rdmap_collect(struct dump_dir *dir, const uint8_t *u, size_t len,
			uint32_t frame)
{
	struct dump_rdmap_state *rd = &dir->rd;
	struct ddp_hdr h;

	dump_ext_collect(dir, u, len, frame);
	if (ddp_hdr_decode(u, len, &h) < 0 || h.tagged ||
	    (h.rsvdulp & RDMAP_CTRL_OPCODE) != RDMAP_OP_READ_REQ ||
	    len < DDP_UNTAGGED_HDR_LEN + RDMAP_READ_REQ_LEN)
		return;
	if (rd->n_rr == rd->cap_rr) {
		size_t cap = rd->cap_rr ? rd->cap_rr * 2 : 16;
		struct dump_read_req *rr = realloc(rd->rr, cap * sizeof(*rr));

		if (!rr)
			return; /* its responses will show as unmatched */
		rd->rr = rr;
		rd->cap_rr = cap;
	}
	dump_read_req_decode(u + DDP_UNTAGGED_HDR_LEN, &rd->rr[rd->n_rr++], frame);
}

/* Where a violation is reported from: the FPDU's place in a raw file. */
struct judge {
	struct dump *d;
	struct dump_conn *c;
	struct dump_dir *dir;
	uint32_t frame;
	uint64_t at;
	struct dump_msg *m;
};

#define VIOLATION(j, ...) \
	dump_violation((j)->d, (j)->c, (j)->dir, (j)->frame, (j)->at, __VA_ARGS__)
#define WARNING(j, ...) \
	dump_warning((j)->d, (j)->c, (j)->dir, (j)->frame, (j)->at, __VA_ARGS__)

static void check_versions(struct judge *j)
{
	const struct dump_msg *m = j->m;

	if (m->ddp.version != DDP_VERSION)
		VIOLATION(j, "DDP version %u, expected %u", m->ddp.version,
			  DDP_VERSION);
	if (m->ddp_rsvd)
		WARNING(j, "DDP reserved control bits 0x%02x set", m->ddp_rsvd);
	if (m->rv != RDMAP_VERSION)
		VIOLATION(j, "RDMAP version %u, expected %u", m->rv,
			  RDMAP_VERSION);
	if (m->rsvd)
		WARNING(j, "RDMAP reserved control bits 0x%02x set", m->rsvd);
}

/*
 * RFC 5040 section 4.2 and 5.1: Write and Read Response are tagged; Sends
 * go to QN 0, Read Requests to QN 1, Terminates to QN 2; RFC 7306 sends
 * Atomic Requests to QN 1, Atomic Responses to QN 3 and Immediate Data to
 * QN 0.  Returns whether the opcode is one either RFC defines.
 */
static bool check_model(struct judge *j)
{
	const struct ddp_hdr *h = &j->m->ddp;
	uint8_t op = j->m->opcode;
	const char *name = dump_opcode_name(op);
	int want_qn;

	if (!name) {
		VIOLATION(j, "opcode 0x%x is not an RDMAP opcode (RFC 5040 section 4.2%s)",
			  op, op <= 0x9 ? "; RFC 7306 reserves it" : "");
		return false;
	}
	if (h->tagged) {
		if (op != RDMAP_OP_WRITE && op != RDMAP_OP_READ_RESP)
			VIOLATION(j, "%s in a tagged segment: only Write and Read Response are tagged",
				  name);
		return true;
	}
	want_qn = is_send(op) || op == RDMAP_OP_IMM || op == RDMAP_OP_IMM_SE
			  ? RDMAP_QN_SEND
		  : op == RDMAP_OP_READ_REQ || op == RDMAP_OP_ATOMIC_REQ
			  ? RDMAP_QN_READ_REQ
		  : op == RDMAP_OP_TERMINATE ? RDMAP_QN_TERMINATE
		  : op == RDMAP_OP_ATOMIC_RESP ? RDMAP_QN_ATOMIC_RESP
					       : -1;
	if (want_qn < 0)
		VIOLATION(j, "%s in an untagged segment: it is tagged", name);
	else if (h->qn != (uint32_t)want_qn)
		VIOLATION(j, "%s on QN %u, expected QN %d", name, h->qn, want_qn);
	return true;
}

/*
 * RFC 5041 section 5.3: on each queue MSN starts at 1 and counts messages,
 * MO counts the message's octets so far.  After a wrong MSN or MO a sender
 * that goes on counting from it is followed silently: one slip, one report.
 */
static void check_untagged(struct judge *j, size_t ddp_payload)
{
	struct dump_rdmap_state *rd = &j->dir->rd;
	const struct ddp_hdr *h = &j->m->ddp;
	struct ddp_queue *q;
	uint32_t qn = h->qn;

	if (qn >= RDMAP_QN_MAX) {
		VIOLATION(j, "QN %u: RDMAP uses queues 0 to %u (3 with RFC 7306)",
			  qn, RDMAP_QN_COUNT - 1);
		return;
	}
	q = &rd->q[qn];
	if (!q->open) {
		if (h->msn != q->msn && rd->alt_valid[qn] &&
		    h->msn == rd->alt_msn[qn] + 1)
			q->msn = h->msn;
		rd->alt_valid[qn] = h->msn != q->msn;
		if (h->msn != q->msn) {
			VIOLATION(j, "MSN %u on QN %u, expected %u", h->msn, qn,
				  q->msn);
			rd->alt_msn[qn] = h->msn;
		}
		rd->msn_cur[qn] = h->msn;
	} else if (h->msn != rd->msn_cur[qn]) {
		VIOLATION(j, "MSN %u on QN %u inside message MSN %u", h->msn,
			  qn, rd->msn_cur[qn]);
	}
	if (h->mo != q->mo) {
		VIOLATION(j, "MO %u on QN %u MSN %u, expected %u (the octets of the message so far)",
			  h->mo, qn, h->msn, q->mo);
		q->mo = h->mo;
	}
	ddp_untagged_advance(q, h, ddp_payload);
}

/* RFC 5041 section 5.2: a tagged message's segments follow on in TO. */
static void check_tagged(struct judge *j, size_t payload)
{
	struct dump_rdmap_state *rd = &j->dir->rd;
	const struct ddp_hdr *h = &j->m->ddp;
	char a[32], b[32];

	if (rd->tagged_open &&
	    (h->stag != rd->tagged_stag || h->to != rd->tagged_to ||
	     j->m->opcode != rd->tagged_opcode))
		VIOLATION(j, "%s to STag 0x%08x TO 0x%llx does not go on with the %s to STag 0x%08x, next TO 0x%llx",
			  op_words(j->m->opcode, a, sizeof(a)), h->stag,
			  (unsigned long long)h->to,
			  op_words(rd->tagged_opcode, b, sizeof(b)),
			  rd->tagged_stag,
			  (unsigned long long)rd->tagged_to);
	if (h->to + payload < h->to)
		VIOLATION(j, "TO 0x%llx plus %zu octets wraps 2^64",
			  (unsigned long long)h->to, payload);
	rd->tagged_open = !h->last;
	rd->tagged_stag = h->stag;
	rd->tagged_to = h->to + payload;
	rd->tagged_opcode = j->m->opcode;
}

/* RFC 5040 section 4.4: one segment of a 28-octet header, no data. */
static void judge_read_request(struct judge *j, const uint8_t *u, size_t len)
{
	struct dump_msg *m = j->m;
	size_t body = len - DDP_UNTAGGED_HDR_LEN;

	if (!m->ddp.last)
		VIOLATION(j, "Read Request without L: it is one segment");
	if (body < RDMAP_READ_REQ_LEN) {
		VIOLATION(j, "Read Request of %zu octets after its DDP header, it needs %u",
			  body, RDMAP_READ_REQ_LEN);
		return;
	}
	if (body > RDMAP_READ_REQ_LEN)
		VIOLATION(j, "Read Request carries %zu octets after its header",
			  body - RDMAP_READ_REQ_LEN);
	dump_read_req_decode(u + DDP_UNTAGGED_HDR_LEN, &m->rr, j->frame);
	m->have_rr = true;
	m->hdr_len += RDMAP_READ_REQ_LEN;
	m->payload_len = body - RDMAP_READ_REQ_LEN;
}

/*
 * RFC 5040 section 5.4: Read Responses answer the peer's Read Requests in
 * order, into the sink STag at the sink TO, with as many octets as asked.
 */
static void judge_read_response(struct judge *j, int side)
{
	struct dump_dir *peer = &j->c->dir[!side];
	struct dump_rdmap_state *prd = &peer->rd;
	const struct ddp_hdr *h = &j->m->ddp;
	const struct dump_read_req *rr;

	if (!peer->decode) {
		if (!j->dir->rd.unmatched_noted) {
			j->dir->rd.unmatched_noted = true;
			dump_notice(j->d, j->frame, j->at,
				    "%s: Read Responses are not matched: the other direction is not decoded",
				    j->dir->name);
		}
		return;
	}
	if (prd->rr_done >= prd->n_rr) {
		VIOLATION(j, "Read Response with no Read Request outstanding");
		return;
	}
	rr = &prd->rr[prd->rr_done];
	if (!j->d->raw && rr->frame > j->frame)
		VIOLATION(j, "Read Response answers the Read Request of frame %u, which comes later",
			  rr->frame);
	if (h->stag != rr->sink_stag)
		VIOLATION(j, "Read Response to STag 0x%08x, the Read Request named sink STag 0x%08x",
			  h->stag, rr->sink_stag);
	if (h->to != rr->sink_to + prd->rr_got)
		VIOLATION(j, "Read Response at TO 0x%llx, expected 0x%llx (sink TO + %llu octets so far)",
			  (unsigned long long)h->to,
			  (unsigned long long)(rr->sink_to + prd->rr_got),
			  (unsigned long long)prd->rr_got);
	prd->rr_got += j->m->payload_len;
	if (!h->last)
		return;
	if (prd->rr_got != rr->size)
		VIOLATION(j, "Read Response of %llu octets for a Read Request of %u",
			  (unsigned long long)prd->rr_got, rr->size);
	prd->rr_done++;
	prd->rr_got = 0;
}

/*
 * RFC 5040 section 4.8.  When the RFC reading of the control word names no
 * error and the byte-swapped one does, the sender wrote it as Linux siw
 * does; either way the layout is not the RFC's.
 */
static void judge_terminate(struct judge *j, const uint8_t *u, size_t len)
{
	struct dump_msg *m = j->m;
	struct rdmap_term *t = &m->term;
	bool valid, swapped_valid;

	if (!m->ddp.last)
		VIOLATION(j, "Terminate without L: it is one segment");
	if (rdmap_term_decode(u + DDP_UNTAGGED_HDR_LEN,
			      len - DDP_UNTAGGED_HDR_LEN, t) < 0) {
		VIOLATION(j, "Terminate of %zu octets lacks its control word",
			  len - DDP_UNTAGGED_HDR_LEN);
		return;
	}
	m->have_term = true;
	m->payload_len = 0;
	valid = rdmap_term_valid(t->layer, t->etype, t->ecode);
	swapped_valid = rdmap_term_valid(t->swapped.layer, t->swapped.etype,
					 t->swapped.ecode);
	m->term_swapped = !valid && swapped_valid;
	if (m->term_swapped)
		VIOLATION(j, "Terminate control word in byte-swapped (Linux siw) layout: read the RFC way it is layer %u type %u code 0x%02x",
			  t->layer, t->etype, t->ecode);
	else if (!valid)
		VIOLATION(j, "Terminate names layer %u type %u code 0x%02x, an error RFC 5040 section 7 does not define",
			  t->layer, t->etype, t->ecode);
}

/* RFC 6581 section 9: a peer-to-peer initiator opens with the agreed RTR. */
static void check_rtr(struct judge *j)
{
	struct dump_msg *m = j->m;
	uint8_t op = m->opcode;
	bool ok;
	char w[32];

	switch (j->c->rtr) {
	case MPA_RTR_SEND:
		ok = op == RDMAP_OP_SEND && !m->ddp.tagged && !m->payload_len;
		break;
	case MPA_RTR_WRITE:
		ok = op == RDMAP_OP_WRITE && m->ddp.tagged && !m->payload_len;
		break;
	default:
		ok = op == RDMAP_OP_READ_REQ && m->have_rr && m->rr.size == 0;
		break;
	}
	m->rtr = ok;
	if (ok)
		return;
	/* a Read Request's length is the size it asks for, not its payload */
	if (m->have_rr)
		VIOLATION(j, "the peer-to-peer initiator opens with a Read Request for %u octets, not the zero-length %s RTR",
			  m->rr.size, dump_rtr_words(j->c->rtr));
	else
		VIOLATION(j, "the peer-to-peer initiator opens with a %s%s, not the zero-length %s RTR",
			  m->payload_len ? "" : "zero-length ",
			  op_words(op, w, sizeof(w)),
			  dump_rtr_words(j->c->rtr));
}

static void count(struct dump_dir *dir, const struct dump_msg *m)
{
	dir->st.opcode[m->opcode]++;
	dir->st.payload_octets += m->payload_len;
}

/*
 * Decodes the ULPDU @u that direction @side of @c carried in @frame (at
 * offset @at of a raw file) into *@m, reporting every rule it breaks, and
 * moves the direction's state on.
 */
void dump_rdmap_judge(struct dump *d, struct dump_conn *c, int side,
		      uint32_t frame, uint64_t at, const uint8_t *u, size_t len,
		      struct dump_msg *m)
{
	struct dump_dir *dir = &c->dir[side];
	struct judge j = { d, c, dir, frame, at, m };
	bool known;

	memset(m, 0, sizeof(*m));
	if (ddp_hdr_decode(u, len, &m->ddp) < 0) {
		VIOLATION(&j, "ULPDU of %zu octets is shorter than the DDP header",
			  len);
		return;
	}
	m->ddp_ok = true;
	m->ddp_rsvd = u[DDP_OFF_CTRL] & DDP_CTRL_RSVD;
	m->rv = (m->ddp.rsvdulp & RDMAP_CTRL_RV) >> RDMAP_CTRL_RV_SHIFT;
	m->rsvd = m->ddp.rsvdulp & RDMAP_CTRL_RSVD;
	m->opcode = m->ddp.rsvdulp & RDMAP_CTRL_OPCODE;
	m->hdr_len = ddp_hdr_len(m->ddp.tagged);
	m->payload_len = len - m->hdr_len;

	if (dir->rd.terminated && dir->rd.term_frame)
		VIOLATION(&j, "FPDU after this direction's Terminate (frame %u)",
			  dir->rd.term_frame);
	else if (dir->rd.terminated) /* a raw file has no frame numbers */
		VIOLATION(&j, "FPDU after this direction's Terminate");
	check_versions(&j);
	known = check_model(&j);
	if (m->ddp.tagged)
		check_tagged(&j, m->payload_len);
	else
		check_untagged(&j, m->payload_len);

	if (known && !m->ddp.tagged && m->opcode == RDMAP_OP_READ_REQ)
		judge_read_request(&j, u, len);
	else if (known && m->ddp.tagged && m->opcode == RDMAP_OP_READ_RESP)
		judge_read_response(&j, side);
	else if (known && !m->ddp.tagged && m->opcode == RDMAP_OP_TERMINATE)
		judge_terminate(&j, u, len);
	else if (known && !m->ddp.tagged && dump_ext_opcode(m->opcode))
		dump_ext_judge(d, c, side, frame, at, u, len, m);

	if (m->opcode == RDMAP_OP_TERMINATE) {
		dir->rd.terminated = true;
		dir->rd.term_frame = frame;
	}
	if (c->p2p && side == c->initiator && !dir->rd.first_done &&
	    m->opcode != RDMAP_OP_TERMINATE)
		check_rtr(&j);
	dir->rd.first_done = true;
	count(dir, m);
}
