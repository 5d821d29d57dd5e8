// SPDX-License-Identifier: MIT
/*
 * The RFC 7306 messages for iwarp-dump: Atomic Requests (QN 1, with RDMA
 * Read Requests), Atomic Responses (QN 3) matched in order against the
 * peer's requests by Request Identifier, and Immediate Data (QN 0).  Each
 * is one segment whose RDMAP header is all it carries.  A capture cannot
 * show whether both ends enabled the extensions (RFC 7306 has no
 * negotiation on the wire), so their messages are decoded wherever they
 * come.
 */
#include <stdio.h>
#include <stdlib.h>

#include "lib/byteorder.h"
#include "dump.h"

#define VIOLATION(...) dump_violation(d, c, dir, frame, at, __VA_ARGS__)

bool dump_ext_opcode(uint8_t opcode)
{
	return opcode >= RDMAP_OP_ATOMIC_REQ && opcode <= RDMAP_OP_IMM_SE;
}

static const char *aop_name(uint8_t aop)
{
	static const char *const names[] = {
		[RDMAP_AOP_FETCH_ADD] = "Fetch and Add",
		[RDMAP_AOP_SWAP] = "Swap",
		[RDMAP_AOP_CMP_SWAP] = "Compare and Swap",
	};

	return aop <= RDMAP_AOP_CMP_SWAP ? names[aop] : NULL;
}

static void atomic_decode(const uint8_t *p, struct dump_atomic_req *ar,
			  uint32_t frame)
{
	ar->aop = p[RDMAP_AR_OFF_AOP + 3] & RDMAP_AR_AOP_MASK;
	ar->req_id = get_be32(p + RDMAP_AR_OFF_REQ_ID);
	ar->stag = get_be32(p + RDMAP_AR_OFF_STAG);
	ar->to = get_be64(p + RDMAP_AR_OFF_TO);
	ar->data = get_be64(p + RDMAP_AR_OFF_DATA);
	ar->data_mask = get_be64(p + RDMAP_AR_OFF_DATA_MASK);
	ar->cmp = get_be64(p + RDMAP_AR_OFF_CMP);
	ar->cmp_mask = get_be64(p + RDMAP_AR_OFF_CMP_MASK);
	ar->frame = frame;
}

/*
 * First pass: keeps the Atomic Requests a direction sends, so that the
 * other direction's responses can be matched however the two interleave.
 */
void dump_ext_collect(struct dump_dir *dir, const uint8_t *u, size_t len,
		      uint32_t frame)
{
	struct dump_rdmap_state *rd = &dir->rd;
	struct ddp_hdr h;

	if (ddp_hdr_decode(u, len, &h) < 0 || h.tagged ||
	    (h.rsvdulp & RDMAP_CTRL_OPCODE) != RDMAP_OP_ATOMIC_REQ ||
	    len < DDP_UNTAGGED_HDR_LEN + RDMAP_ATOMIC_REQ_LEN)
		return;
	if (rd->n_ar == rd->cap_ar) {
		size_t cap = rd->cap_ar ? rd->cap_ar * 2 : 16;
		struct dump_atomic_req *ar = realloc(rd->ar, cap * sizeof(*ar));

		if (!ar)
			return; /* its response will show as unmatched */
		rd->ar = ar;
		rd->cap_ar = cap;
	}
	atomic_decode(u + DDP_UNTAGGED_HDR_LEN, &rd->ar[rd->n_ar++], frame);
}

/*
 * One segment (L set) of exactly @want octets after the DDP header;
 * returns whether the header is all there.
 */
static bool one_segment(struct dump *d, struct dump_conn *c,
			struct dump_dir *dir, uint32_t frame, uint64_t at,
			const struct dump_msg *m, size_t body, size_t want)
{
	const char *name = dump_opcode_name(m->opcode);

	if (!m->ddp.last)
		VIOLATION("%s without L: it is one segment", name);
	if (body < want) {
		VIOLATION("%s of %zu octets after its DDP header, it needs %zu",
			  name, body, want);
		return false;
	}
	if (body > want)
		VIOLATION("%s carries %zu octets after its header", name,
			  body - want);
	return true;
}

/* RFC 7306: an Atomic Response answers the oldest unanswered request. */
static void match_response(struct dump *d, struct dump_conn *c, int side,
			   uint32_t frame, uint64_t at, struct dump_msg *m)
{
	struct dump_dir *dir = &c->dir[side];
	struct dump_rdmap_state *prd = &c->dir[!side].rd;
	const struct dump_atomic_req *ar;

	if (!c->dir[!side].decode)
		return; /* as for Read Responses: nothing to match against */
	if (prd->ar_done >= prd->n_ar) {
		VIOLATION("Atomic Response with no Atomic Request outstanding");
		return;
	}
	ar = &prd->ar[prd->ar_done++];
	if (!d->raw && ar->frame > frame)
		VIOLATION("Atomic Response answers the Atomic Request of frame %u, which comes later",
			  ar->frame);
	if (m->aresp_id != ar->req_id)
		VIOLATION("Atomic Response for request %u, the oldest outstanding is %u",
			  m->aresp_id, ar->req_id);
}

/* Decodes and judges an RFC 7306 message; dump_rdmap_judge() did the DDP. */
void dump_ext_judge(struct dump *d, struct dump_conn *c, int side,
		    uint32_t frame, uint64_t at, const uint8_t *u, size_t len,
		    struct dump_msg *m)
{
	struct dump_dir *dir = &c->dir[side];
	const uint8_t *p = u + DDP_UNTAGGED_HDR_LEN;
	size_t body = len - DDP_UNTAGGED_HDR_LEN;

	switch (m->opcode) {
	case RDMAP_OP_ATOMIC_REQ:
		if (!one_segment(d, c, dir, frame, at, m, body,
				 RDMAP_ATOMIC_REQ_LEN))
			return;
		atomic_decode(p, &m->ar, frame);
		m->have_ar = true;
		m->hdr_len += RDMAP_ATOMIC_REQ_LEN;
		if (!aop_name(m->ar.aop))
			VIOLATION("Atomic Request for operation %u, which RFC 7306 does not define",
				  m->ar.aop);
		if (m->ar.to % RDMAP_ATOMIC_SIZE)
			VIOLATION("Atomic Request at TO 0x%llx: its target is 8-octet aligned (RFC 7306)",
				  (unsigned long long)m->ar.to);
		break;
	case RDMAP_OP_ATOMIC_RESP:
		if (!one_segment(d, c, dir, frame, at, m, body,
				 RDMAP_ATOMIC_RESP_LEN))
			return;
		m->aresp_id = get_be32(p + RDMAP_ARESP_OFF_REQ_ID);
		m->aresp_value = get_be64(p + RDMAP_ARESP_OFF_VALUE);
		m->have_aresp = true;
		m->hdr_len += RDMAP_ATOMIC_RESP_LEN;
		match_response(d, c, side, frame, at, m);
		break;
	default: /* Immediate Data, with or without SE */
		if (!one_segment(d, c, dir, frame, at, m, body, RDMAP_IMM_LEN))
			return;
		m->imm = get_be64(p);
		m->have_imm = true;
		m->hdr_len += RDMAP_IMM_LEN;
		break;
	}
	m->payload_len = 0;
}

/* The rest of an FPDU line for an RFC 7306 message. */
void dump_ext_print(const struct dump_msg *m)
{
	const struct dump_atomic_req *ar = &m->ar;
	const char *aop = aop_name(ar->aop);

	if (m->have_imm) {
		printf(" 0x%016llx", (unsigned long long)m->imm);
		return;
	}
	if (m->have_aresp) {
		printf(" request %u value 0x%llx", m->aresp_id,
		       (unsigned long long)m->aresp_value);
		return;
	}
	if (aop)
		printf(" %s", aop);
	else
		printf(" operation %u", ar->aop);
	printf(" request %u target 0x%08x:0x%llx", ar->req_id, ar->stag,
	       (unsigned long long)ar->to);
	if (ar->aop == RDMAP_AOP_FETCH_ADD)
		printf(" add 0x%llx", (unsigned long long)ar->data);
	else if (ar->aop == RDMAP_AOP_CMP_SWAP)
		printf(" compare 0x%llx swap 0x%llx",
		       (unsigned long long)ar->cmp,
		       (unsigned long long)ar->data);
	else
		printf(" swap 0x%llx", (unsigned long long)ar->data);
}

/* -v: every field of the RFC 7306 header. */
void dump_ext_print_details(const struct dump_msg *m)
{
	const struct dump_atomic_req *ar = &m->ar;

	if (m->have_ar)
		printf("    Atomic Request: operation %u (%s), request %u, target STag 0x%08x TO 0x%016llx, data 0x%016llx mask 0x%016llx, compare 0x%016llx mask 0x%016llx\n",
		       ar->aop, aop_name(ar->aop) ? aop_name(ar->aop) : "undefined",
		       ar->req_id, ar->stag, (unsigned long long)ar->to,
		       (unsigned long long)ar->data,
		       (unsigned long long)ar->data_mask,
		       (unsigned long long)ar->cmp,
		       (unsigned long long)ar->cmp_mask);
	else if (m->have_aresp)
		printf("    Atomic Response: request %u, original value 0x%016llx\n",
		       m->aresp_id, (unsigned long long)m->aresp_value);
	else if (m->have_imm)
		printf("    Immediate Data: 0x%016llx\n",
		       (unsigned long long)m->imm);
}
