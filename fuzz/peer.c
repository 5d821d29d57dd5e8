// SPDX-License-Identifier: MIT
/* The fuzzer's end of a stream; see peer.h. */
#include <string.h>

#include "ddp/ddp.h"
#include "fuzz.h"
#include "lib/byteorder.h"
#include "peer.h"

void peer_init(struct peer *p, bool markers, bool crc)
{
	memset(p, 0, sizeof(*p));
	peer_set_framing(p, markers, crc);
	for (int q = 0; q < RDMAP_QN_COUNT; q++)
		p->msn[q] = 1;
}

void peer_set_framing(struct peer *p, bool markers, bool crc)
{
	mpa_tx_init(&p->tx, 0xffff, markers, crc);
}

void peer_add_stag(struct peer *p, uint32_t stag, uint64_t to)
{
	if (p->n_stags < PEER_MAX_STAGS)
		p->stags[p->n_stags++] = (struct peer_stag){ stag, to };
}

/*
 * An STag whose index is k names the k-th region added, whatever index
 * the library gave it: an input means the same regions on every run.
 */
static const struct peer_stag *find(const struct peer *p, uint32_t stag)
{
	uint32_t k = DDP_STAG_INDEX(stag);

	return k >= 1 && k <= p->n_stags ? &p->stags[k - 1] : NULL;
}

/* An STag field at @s and the TO field at @to (NULL: none) it goes with. */
static void fix_stag(const struct peer *p, uint8_t flags, uint8_t *s,
		     uint8_t *to)
{
	const struct peer_stag *k = find(p, get_be32(s));

	if (!k)
		return;
	if (flags & PEER_FIX_KEYS)
		put_be32(s, k->stag);
	if (to && (flags & PEER_FIX_TO))
		put_be64(to, k->to + (get_be64(to) & 0xffff));
}

/* A Read Request header: both its STags may name our regions. */
static void fix_read_request(const struct peer *p, uint8_t flags,
			     uint8_t *rr)
{
	fix_stag(p, flags, rr + RDMAP_RR_OFF_SINK_STAG, rr + RDMAP_RR_OFF_SINK_TO);
	fix_stag(p, flags, rr + RDMAP_RR_OFF_SRC_STAG, rr + RDMAP_RR_OFF_SRC_TO);
}

/* A Terminate may echo a Read Request of ours (RFC 5040 section 4.8). */
static void fix_terminate(const struct peer *p, uint8_t flags, uint8_t *u,
			  size_t len)
{
	uint8_t *t = u + DDP_UNTAGGED_HDR_LEN;
	size_t n = RDMAP_TERM_CTRL_LEN, left = len - DDP_UNTAGGED_HDR_LEN;

	if (left < n)
		return;
	if (t[RDMAP_TERM_OFF_HDRCT] & RDMAP_TERM_FLAG_D) {
		if (left < n + RDMAP_TERM_SEGLEN_LEN + 1)
			return;
		n += RDMAP_TERM_SEGLEN_LEN;
		n += ddp_hdr_len(t[n] & DDP_CTRL_T);
	}
	if ((t[RDMAP_TERM_OFF_HDRCT] & RDMAP_TERM_FLAG_R) &&
	    left >= n + RDMAP_READ_REQ_LEN)
		fix_read_request(p, flags, t + n);
}

static void fix_untagged(struct peer *p, uint8_t flags, uint8_t *u,
			 size_t len)
{
	uint8_t op = u[DDP_OFF_RSVDULP] & RDMAP_CTRL_OPCODE;
	uint32_t qn = get_be32(u + DDP_U_OFF_QN);

	if (op == RDMAP_OP_SEND_INV || op == RDMAP_OP_SEND_SE_INV)
		fix_stag(p, flags, u + DDP_U_OFF_RSVDULP2, NULL);
	if (op == RDMAP_OP_READ_REQ &&
	    len >= DDP_UNTAGGED_HDR_LEN + RDMAP_READ_REQ_LEN)
		fix_read_request(p, flags, u + DDP_UNTAGGED_HDR_LEN);
	if (op == RDMAP_OP_TERMINATE)
		fix_terminate(p, flags, u, len);
	if (!(flags & PEER_FIX_SEQ) || qn >= RDMAP_QN_COUNT)
		return;
	put_be32(u + DDP_U_OFF_MSN, p->msn[qn]);
	put_be32(u + DDP_U_OFF_MO, p->mo[qn]);
	p->mo[qn] += (uint32_t)(len - DDP_UNTAGGED_HDR_LEN);
	if (u[DDP_OFF_CTRL] & DDP_CTRL_L) {
		p->msn[qn]++;
		p->mo[qn] = 0;
	}
}

size_t peer_fpdu(struct peer *p, uint8_t flags, uint8_t *u, size_t len,
		 uint8_t *out)
{
	static uint8_t marks[MPA_TX_MAX_MARKERS][MPA_MARKER_LEN];
	static struct mpa_tx_frame f = { .markers = marks };
	struct iovec ulpdu = { u, len }, wire[2 * MPA_TX_MAX_MARKERS + 8];
	size_t n = 0;
	int cnt;

	if (len > p->tx.mulpdu)
		return 0;
	if (len >= DDP_TAGGED_HDR_LEN && (u[DDP_OFF_CTRL] & DDP_CTRL_T))
		fix_stag(p, flags, u + DDP_T_OFF_STAG, u + DDP_T_OFF_TO);
	else if (len >= DDP_UNTAGGED_HDR_LEN && !(u[DDP_OFF_CTRL] & DDP_CTRL_T))
		fix_untagged(p, flags, u, len);
	cnt = mpa_tx_fpdu(&p->tx, &ulpdu, 1, &f, wire,
			  (int)(sizeof(wire) / sizeof(wire[0])));
	fz_check(cnt > 0, "framing the peer's ULPDU of %zu octets: %d", len,
		 cnt);
	for (int i = 0; i < cnt; i++) {
		fz_check(n + wire[i].iov_len <= PEER_FPDU_MAX, "FPDU too long");
		memcpy(out + n, wire[i].iov_base, wire[i].iov_len);
		n += wire[i].iov_len;
	}
	if (p->corrupt && n) {
		out[p->corrupt_pos % n] ^= p->corrupt_xor;
		p->corrupt = false;
	}
	return n;
}
