// SPDX-License-Identifier: MIT
/*
 * The DDP/RDMAP receive path (RFC 5040, RFC 5041) of one RDMAP engine,
 * with an STag table of regions that sit between guard pages.
 *
 * Input: the stream's parameters (role, CRC, markers, MULPDU, IRD/ORD,
 * RTR type, queue sizes), up to eight regions (length, access rights,
 * protection domain, tagged offset, valid, invalidated or deregistered),
 * work posted before the stream starts, then chunks, each an op octet:
 *   ULPDU   a segment the peer sends, framed as negotiated (see peer.h)
 *   RAW     octets as they are, framing or not
 *   DRAIN   the engine's output taken (partly) off its hands
 *   POST    one more work request
 *   DEREG   a region deregistered under the peer's feet, as
 *           iw_dereg_mr() does it
 *   CORRUPT an octet of the next framed segment flipped
 * The stream ends with the peer's close or a local error.
 *
 * What must hold: no octet changes outside a region the peer may write
 * (remote write access, our protection domain, valid at the time), a
 * posted receive or a Read sink; nothing leaves from memory that is not
 * readable by the peer or named by a posted Send or Write, and what
 * leaves is framed right (judge.h); every posted work request completes
 * exactly once, a success only for a signalled one; the stream ends with
 * one error event and no memory still posted.  The input runs twice,
 * whole and in cuts, and both runs must agree.
 */
#include <errno.h>
#include <string.h>

#include "arena.h"
#include "fuzz.h"
#include "fz_rand.h"
#include "judge.h"
#include "lib/byteorder.h"
#include "lib/error.h"
#include "peer.h"
#include "rdmap/rdmap.h"

#define OUR_PD 1
#define OTHER_PD 2
#define MAX_WR 64
#define MAX_SGE 6
#define MAX_EVENTS 8

enum chunk_op {
	OP_ULPDU,
	OP_RAW,
	OP_DRAIN,
	OP_POST,
	OP_DEREG,
	OP_CORRUPT,
};

enum region_state {
	R_VALID,
	R_INVALIDATED,
	R_DEREGISTERED,
};

struct region {
	uint8_t *base;
	uint32_t len;
	uint32_t access, pd;
	uint64_t va;
	uint32_t stag;
	uint8_t state;
};

struct wr {
	bool recv, srq, signaled, success_ok;
	uint8_t op;
	uint64_t len;
	int done;
};

struct run {
	struct fz_in in;
	struct fz_rng rng;
	struct rdmap_qp qp;
	struct ddp_stag_table stags;
	struct rdmap_srq srq;
	bool use_srq, direct, ended;
	size_t max_cut;
	struct region reg[ARENA_SLOTS];
	unsigned int n_reg;
	struct wr wr[MAX_WR];
	unsigned int n_wr;
	unsigned int n_error_ev, n_term_sent_ev, n_est_ev;
	struct peer peer;
	struct judge judge; /* of what the engine sends */
	struct arena *arena;
	/* what it did, for the other run of the same input to match */
	struct rdmap_cqe cqe[MAX_WR];
	unsigned int n_cqe;
	uint8_t ev[MAX_EVENTS];
	int ev_err[MAX_EVENTS];
	unsigned int n_ev;
	uint64_t tx_hash, tx_len;
};

static struct arena arena[2];
static uint8_t fpdu[PEER_FPDU_MAX];
static uint8_t ulpdu[0x10000];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	arena_init(&arena[0]);
	arena_init(&arena[1]);
	return 0;
}

static struct region *region_by_stag(struct run *r, uint32_t stag)
{
	for (unsigned int i = 0; i < r->n_reg; i++)
		if (r->reg[i].stag == stag && r->reg[i].state != R_DEREGISTERED)
			return &r->reg[i];
	return NULL;
}

static void on_one_complete(struct run *r, const struct rdmap_cqe *cqe)
{
	struct wr *w;

	fz_check(cqe->wr_id < r->n_wr, "completion for wr_id %llu, never posted",
		 (unsigned long long)cqe->wr_id);
	w = &r->wr[cqe->wr_id];
	fz_check(++w->done == 1, "work request %llu completed %d times",
		 (unsigned long long)cqe->wr_id, w->done);
	r->cqe[r->n_cqe++] = *cqe;
	fz_check(cqe->recv == w->recv, "work request %llu completed on the "
		 "wrong queue", (unsigned long long)cqe->wr_id);
	if (cqe->status == RDMAP_WC_SUCCESS) {
		fz_check(w->success_ok, "unsignalled work request %llu "
			 "completed with success",
			 (unsigned long long)cqe->wr_id);
		fz_check(!w->recv || cqe->byte_len <= w->len,
			 "%u octets received into %llu", cqe->byte_len,
			 (unsigned long long)w->len);
	} else {
		fz_check(cqe->status <= RDMAP_WC_REM_OP_ERR, "status %u",
			 cqe->status);
	}
	if (cqe->flags & RDMAP_CQE_INVALIDATED) {
		struct region *g = region_by_stag(r, cqe->inv_stag);

		fz_check(cqe->recv && cqe->status == RDMAP_WC_SUCCESS && g &&
				 g->state == R_VALID && g->pd == OUR_PD,
			 "invalidated STag 0x%08x is not a valid one of ours",
			 cqe->inv_stag);
		/* from here on the peer may not write it */
		g->state = R_INVALIDATED;
		arena_freeze(r->arena, g->base, g->len);
	}
}

static void on_complete(void *arg, const struct rdmap_cqe *cqe,
			unsigned int n)
{
	fz_check(n >= 1 && n <= RDMAP_CQE_RUN, "complete() with %u", n);
	for (unsigned int i = 0; i < n; i++)
		on_one_complete(arg, &cqe[i]);
}

static void on_event(void *arg, const struct rdmap_event *ev)
{
	struct run *r = arg;

	fz_check(r->n_ev < MAX_EVENTS, "%u events", r->n_ev);
	r->ev[r->n_ev] = ev->type;
	r->ev_err[r->n_ev++] = ev->err;

	switch (ev->type) {
	case RDMAP_EV_ESTABLISHED:
		fz_check(++r->n_est_ev == 1, "established twice");
		break;
	case RDMAP_EV_TERMINATE_SENT:
		fz_check(++r->n_term_sent_ev == 1 && ev->term,
			 "a second Terminate, or one not shown");
		break;
	case RDMAP_EV_TERMINATE_RECEIVED:
		fz_check(ev->term != NULL, "a Terminate received, not shown");
		break;
	case RDMAP_EV_ERROR:
		fz_check(++r->n_error_ev == 1 && ev->err,
			 "error event %u, code %d", r->n_error_ev, ev->err);
		break;
	default:
		fz_fail(__FILE__, __LINE__, "event %u", ev->type);
	}
}

static const struct rdmap_ops ops = { on_complete, on_event };

/* ---- setup ---------------------------------------------------------- */

static void setup_regions(struct run *r)
{
	r->n_reg = 1 + fz_u8(&r->in) % ARENA_SLOTS;
	fz_check(ddp_stag_table_init(&r->stags, 64) == 0, "STag table");
	for (unsigned int i = 0; i < r->n_reg; i++) {
		struct region *g = &r->reg[i];
		uint8_t how = fz_u8(&r->in);
		uint32_t len = fz_u16(&r->in) % (ARENA_SLOT_BYTES + 1);

		*g = (struct region){
			.len = len,
			.access = how & 7,
			.pd = how & 8 ? OTHER_PD : OUR_PD,
			/* at the slot's end: one octet past it faults */
			.base = r->arena->slot[i] +
				(how & 0x10 ? ARENA_SLOT_BYTES - len : 0),
		};
		/* tagged offsets that do not depend on where memory is */
		switch ((how >> 5) & 3) {
		case 0:
			g->va = 0;
			break;
		case 1:
			g->va = 0x10000ull * (i + 1);
			break;
		case 2: /* the region ends at the top of the TO space */
			g->va = 0 - (uint64_t)len;
			break;
		default:
			g->va = 0xfffffffffff00000ull;
			break;
		}
		/* none of these wraps: the table takes every one */
		fz_check(ddp_mr_register(&r->stags, g->pd, g->va, g->base,
					 g->len, g->access, &g->stag) == 0,
			 "registration refused");
		peer_add_stag(&r->peer, g->stag, g->va);
		g->state = how & 0x80 ? R_INVALIDATED : R_VALID;
		if (g->state == R_INVALIDATED)
			ddp_mr_invalidate(&r->stags, g->stag, g->pd);
	}
	/* deregistered ones go after all are in, so indices stay apart */
	for (unsigned int i = 0; i < r->n_reg; i++) {
		struct region *g = &r->reg[i];

		if (g->state == R_INVALIDATED && (fz_u8(&r->in) & 1)) {
			ddp_mr_deregister(&r->stags, g->stag);
			g->state = R_DEREGISTERED;
		}
		if (g->state != R_VALID || g->pd != OUR_PD)
			continue;
		if (g->access & DDP_ACCESS_REMOTE_WRITE)
			arena_allow_write(r->arena, g->base, g->len, ARENA_REGION);
		if (g->access & DDP_ACCESS_REMOTE_READ)
			arena_allow_read(r->arena, g->base, g->len);
	}
}

/* An SGE inside region @g: tagged offset, or the address when inline. */
static struct rdmap_sge read_sge(struct run *r, bool inline_data,
				 uint8_t **where)
{
	struct region *g = &r->reg[fz_u8(&r->in) % r->n_reg];
	uint32_t off = fz_u16(&r->in) % (g->len + 1);
	uint32_t len = fz_u16(&r->in) % (g->len - off + 1);
	uint8_t key = fz_u8(&r->in);

	*where = g->base + off;
	return (struct rdmap_sge){
		.addr = inline_data ? (uint64_t)(uintptr_t)*where : g->va + off,
		.length = len,
		/* mostly the region's own key; now and then not */
		.lkey = key == 0xff ? g->stag ^ 0x55 : g->stag,
	};
}

static struct wr *new_wr(struct run *r)
{
	return r->n_wr < MAX_WR ? &r->wr[r->n_wr] : NULL;
}

static void post_recv(struct run *r)
{
	struct rdmap_sge sge[MAX_SGE];
	uint8_t *where[MAX_SGE];
	uint32_t n = fz_u8(&r->in) % (MAX_SGE + 1);
	struct wr *w = new_wr(r);
	struct rdmap_recv_wr wr;
	int rc;

	for (uint32_t i = 0; i < n; i++)
		sge[i] = read_sge(r, false, &where[i]);
	if (!w)
		return;
	wr = (struct rdmap_recv_wr){ .wr_id = r->n_wr, .sge = sge, .num_sge = n };
	/* listed first: a stream in error completes it at once */
	*w = (struct wr){ .recv = true, .srq = r->use_srq, .signaled = true,
			  .success_ok = true };
	for (uint32_t i = 0; i < n; i++)
		w->len += sge[i].length;
	r->n_wr++;
	rc = r->use_srq ? rdmap_srq_post(&r->srq, &wr)
			: rdmap_post_recv(&r->qp, &wr);
	if (rc) {
		fz_check(!w->done, "a refused receive completed");
		r->n_wr--;
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		arena_allow_write(r->arena, where[i], sge[i].length, ARENA_POSTED);
}

static void post_send(struct run *r)
{
	struct rdmap_sge sge[MAX_SGE];
	uint8_t *where[MAX_SGE];
	uint8_t how = fz_u8(&r->in);
	uint8_t op = how & 3;
	bool inline_data = op != RDMAP_WR_READ && (how & RDMAP_WR_INLINE << 2);
	uint32_t n = op == RDMAP_WR_READ ? 1 : fz_u8(&r->in) % (MAX_SGE + 1);
	struct wr *w = new_wr(r);
	struct rdmap_send_wr wr = {
		.wr_id = r->n_wr,
		.op = op,
		.flags = (uint8_t)((how >> 2) & 7),
		.sge = sge,
		.num_sge = n,
	};
	int rc;

	wr.inv_stag = fz_u32(&r->in);
	wr.rkey = fz_u32(&r->in);
	wr.remote_addr = fz_u64(&r->in);
	for (uint32_t i = 0; i < n; i++)
		sge[i] = read_sge(r, inline_data, &where[i]);
	if (!w)
		return;
	if (op == RDMAP_WR_READ)
		wr.flags &= (uint8_t)~RDMAP_WR_INLINE;
	/* listed first: a stream in error completes it at once */
	*w = (struct wr){
		.op = op,
		.signaled = wr.flags & RDMAP_WR_SIGNALED,
		.success_ok = wr.flags & RDMAP_WR_SIGNALED,
	};
	r->n_wr++;
	rc = rdmap_post_send(&r->qp, &wr);
	if (rc) {
		fz_check(!w->done, "a refused work request completed");
		r->n_wr--;
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (op == RDMAP_WR_READ)
			arena_allow_write(r->arena, where[i], sge[i].length,
					  ARENA_POSTED);
		else if (!inline_data)
			arena_allow_read(r->arena, where[i], sge[i].length);
	}
}

static void post_one(struct run *r)
{
	if (fz_u8(&r->in) & 1)
		post_recv(r);
	else
		post_send(r);
}

/* Fields are read one statement each: C leaves initializers unordered. */
static void setup_engine(struct run *r)
{
	struct rdmap_qp_attr attr = {
		.max_sge = MAX_SGE, .pd = OUR_PD, .stags = &r->stags,
	};
	struct rdmap_conn conn = { 0 };
	static const size_t cuts[] = { 1, 7, 300, 70000 };
	uint8_t b = fz_u8(&r->in), rtr = fz_u8(&r->in) % 4;
	unsigned int n_post;
	int rc;

	attr.sq_depth = 1 + fz_u8(&r->in) % 16;
	attr.rq_depth = 1 + fz_u8(&r->in) % 16;
	attr.max_inline = fz_u8(&r->in) % 129;
	conn.initiator = b & 1;
	conn.crc = b & 2;
	conn.markers_tx = b & 4;
	conn.markers_rx = b & 8;
	conn.responder_first = b & 0x20;
	conn.mulpdu = (uint16_t)(RDMAP_MIN_MULPDU +
				 fz_u16(&r->in) % (0x10000 - RDMAP_MIN_MULPDU));
	conn.max_ulpdu = (uint16_t)(RDMAP_MIN_MULPDU +
				    fz_u16(&r->in) % (0x10000 - RDMAP_MIN_MULPDU));
	conn.ird = fz_u8(&r->in) % 9;
	conn.ord = fz_u8(&r->in) % 9;
	conn.rtr = rtr ? (uint8_t)(1 << (rtr - 1)) : 0;
	n_post = fz_u8(&r->in) % 9;
	r->use_srq = b & 0x10;
	r->direct = b & 0x40;
	r->ended = b & 0x80;
	r->max_cut = cuts[fz_u8(&r->in) % 4];
	r->rng.s = fz_u64(&r->in);
	peer_init(&r->peer, conn.markers_rx, conn.crc);
	setup_regions(r);
	if (r->use_srq) {
		fz_check(rdmap_srq_init(&r->srq, &r->stags, OUR_PD, attr.rq_depth,
					MAX_SGE) == 0, "SRQ");
		attr.srq = &r->srq;
	}
	fz_check(rdmap_qp_init(&r->qp, &attr, &ops, r) == 0, "engine init");
	/* work posted before the stream starts, as before a connect */
	for (unsigned int i = 0; i < n_post; i++)
		post_one(r);
	rc = rdmap_qp_start(&r->qp, &conn);
	fz_check(rc == 0 || rc == -IW_ENO_READ_CREDIT, "engine start: %d", rc);
	/* the MULPDU as the start cut it for markers */
	judge_init(&r->judge, r->qp.conn.mulpdu, conn.markers_tx, conn.crc);
}

/* ---- the stream ------------------------------------------------------ */

/* FNV-1a over the octets that left, in order. */
FZ_NO_COVERAGE
static void hash_sent(struct run *r, const struct iovec *iov, int n,
		      size_t len)
{
	for (int i = 0; i < n && len; i++) {
		const uint8_t *p = iov[i].iov_base;
		size_t k = iov[i].iov_len < len ? iov[i].iov_len : len;

		for (size_t j = 0; j < k; j++)
			r->tx_hash = (r->tx_hash ^ p[j]) * 0x100000001b3ull;
		r->tx_len += k;
		len -= k;
	}
}

/* Takes some of the engine's output, as a socket would. */
static void drain(struct run *r, int max_iov, size_t max_bytes, size_t take)
{
	struct iovec iov[64];
	size_t total = 0;
	int n;

	n = rdmap_tx_gather(&r->qp, iov, max_iov, max_bytes);
	fz_check(n >= 0 && n <= max_iov, "gathered %d of %d", n, max_iov);
	for (int i = 0; i < n; i++) {
		arena_check_read(r->arena, iov[i].iov_base, iov[i].iov_len);
		total += iov[i].iov_len;
	}
	fz_check(total <= max_bytes, "gathered %zu octets of %zu", total,
		 max_bytes);
	if (take > total)
		take = total;
	if (n)
		rdmap_tx_advance(&r->qp, take);
	hash_sent(r, iov, n, take);
	for (int i = 0; i < n && take; i++) {
		size_t k = iov[i].iov_len < take ? iov[i].iov_len : take;

		judge_feed(&r->judge, iov[i].iov_base, k);
		take -= k;
	}
}

static void drain_all(struct run *r)
{
	for (int i = 0; i < 100000 && rdmap_tx_pending(&r->qp); i++)
		drain(r, 64, 1u << 20, SIZE_MAX);
	fz_check(!rdmap_tx_pending(&r->qp), "the engine never stops sending");
}

/* Feeds octets in cuts, payload straight into place when offered. */
static void feed(struct run *r, const uint8_t *p, size_t len)
{
	while (len) {
		size_t n = (size_t)fz_range(&r->rng, 1, r->max_cut), win = 0;
		uint8_t *dst = r->direct ? rdmap_rx_direct(&r->qp, &win) : NULL;
		int rc;

		if (n > len)
			n = len;
		if (dst) {
			fz_check(win, "an empty direct window");
			if (n > win)
				n = win;
			/* with CRC a ULPDU waits for its check in the engine's own buffer */
			if (!r->qp.rx_hold || dst < r->qp.rx_hold ||
			    dst + n > r->qp.rx_hold + r->qp.conn.max_ulpdu)
				arena_check_write(r->arena, dst, n);
			memcpy(dst, p, n);
			rc = rdmap_rx_direct_done(&r->qp, n);
		} else {
			rc = rdmap_rx_feed(&r->qp, p, n);
		}
		if (rc) {
			fz_check(r->qp.state != RDMAP_QP_RTS,
				 "error %d, the stream goes on", rc);
			return;
		}
		p += n;
		len -= n;
	}
}

static void dereg(struct run *r)
{
	struct region *g = &r->reg[fz_u8(&r->in) % r->n_reg];

	if (g->state == R_DEREGISTERED ||
	    rdmap_mem_sending(&r->qp, g->base, g->len))
		return; /* iw_dereg_mr() says EBUSY */
	ddp_mr_invalidate(&r->stags, g->stag, g->pd);
	if (r->use_srq)
		rdmap_srq_revoke(&r->srq, g->stag);
	rdmap_recvs_revoke(&r->qp, g->stag);
	rdmap_mem_release(&r->qp, g->stag, g->base, g->len);
	fz_check(ddp_mr_deregister(&r->stags, g->stag) == 0, "deregister");
	g->state = R_DEREGISTERED;
	arena_freeze(r->arena, g->base, g->len);
	arena_forbid_read(r->arena, g->base, g->len);
}

/* Whether the receiver stands where the peer's next FPDU begins. */
static bool in_step(const struct run *r)
{
	const struct mpa_rx *rx = &r->qp.mpa_rx;

	return r->qp.state == RDMAP_QP_RTS && rx->state == MPA_RX_HDR &&
	       !rx->fpdu_open && !rx->part_len && !rx->marker_left &&
	       rx->off == r->peer.tx.off;
}

/*
 * The peer sends one ULPDU.  A tagged segment the engine took whole
 * (RFC 5041 section 5.1: Write or Read Response) must have put its
 * payload exactly where its STag and TO say, in a region it may write.
 */
static void send_ulpdu(struct run *r, uint8_t op, size_t len)
{
	bool clean = in_step(r) && !r->peer.corrupt;
	size_t n = peer_fpdu(&r->peer, op, ulpdu, len, fpdu);
	uint8_t rdmap_op = ulpdu[DDP_OFF_RSVDULP] & RDMAP_CTRL_OPCODE;
	const struct region *g;
	uint64_t to;

	feed(r, fpdu, n);
	if (!clean || !n || !in_step(r) || len <= DDP_TAGGED_HDR_LEN ||
	    !(ulpdu[DDP_OFF_CTRL] & DDP_CTRL_T) ||
	    (rdmap_op != RDMAP_OP_WRITE && rdmap_op != RDMAP_OP_READ_RESP))
		return;
	g = region_by_stag(r, get_be32(ulpdu + DDP_T_OFF_STAG));
	to = get_be64(ulpdu + DDP_T_OFF_TO);
	fz_check(g && to >= g->va &&
			 to - g->va + (len - DDP_TAGGED_HDR_LEN) <= g->len,
		 "a tagged segment taken outside every region");
	fz_check(!memcmp(g->base + (to - g->va), ulpdu + DDP_TAGGED_HDR_LEN,
			 len - DDP_TAGGED_HDR_LEN),
		 "a tagged segment placed elsewhere than its TO");
}

static void run_chunks(struct run *r)
{
	while (fz_left(&r->in)) {
		uint8_t op = fz_u8(&r->in);
		size_t len;
		const uint8_t *p;

		/* what the transport does first: build what is to go out */
		rdmap_tx_pending(&r->qp);
		switch (op & 7) {
		case OP_RAW:
			p = fz_bytes(&r->in, fz_u16(&r->in), &len);
			feed(r, p, len);
			break;
		case OP_DRAIN: {
			uint8_t how = fz_u8(&r->in);
			size_t bytes = 1 + (size_t)fz_u16(&r->in) * 16;
			size_t take = how & 0x80 ? SIZE_MAX : fz_u16(&r->in);

			drain(r, 1 + how % 64, bytes, take);
			break;
		}
		case OP_POST:
			post_one(r);
			break;
		case OP_DEREG:
			dereg(r);
			break;
		case OP_CORRUPT:
			r->peer.corrupt = true;
			r->peer.corrupt_pos = fz_u16(&r->in);
			r->peer.corrupt_xor = fz_u8(&r->in) | 1;
			break;
		default: /* OP_ULPDU */
			p = fz_bytes(&r->in, fz_u16(&r->in), &len);
			memcpy(ulpdu, p, len);
			send_ulpdu(r, op, len);
			break;
		}
	}
}

/* The stream ends; everything posted must have completed once. */
static void finish(struct run *r)
{
	uint32_t in_srq = 0, left_srq = 0;

	if (r->qp.state == RDMAP_QP_RTS) {
		if (r->ended)
			rdmap_rx_eof(&r->qp);
		else
			rdmap_qp_set_error(&r->qp, -IW_ECLOSED);
	}
	fz_check(r->qp.state != RDMAP_QP_RTS, "still connected after the end");
	drain_all(r); /* a Terminate leaves */
	if (r->qp.state != RDMAP_QP_ERROR)
		rdmap_qp_set_error(&r->qp, -IW_ECLOSED);
	fz_check(r->qp.state == RDMAP_QP_ERROR && r->n_error_ev == 1,
		 "state %u, %u error events", r->qp.state, r->n_error_ev);
	fz_check(rdmap_rx_feed(&r->qp, fpdu, 1) != 0, "octets taken after the end");
	for (unsigned int i = 0; i < r->n_wr; i++) {
		const struct wr *w = &r->wr[i];

		if (w->srq && !w->done) {
			left_srq++;
			continue;
		}
		fz_check(w->done == 1 || (!w->signaled && w->done == 0),
			 "work request %u completed %d times", i, w->done);
	}
	if (r->use_srq)
		in_srq = rdmap_srq_count(&r->srq);
	fz_check(in_srq == left_srq, "%u receives in the SRQ, %u not completed",
		 in_srq, left_srq);
	for (unsigned int i = 0; i < r->n_reg; i++)
		fz_check(!rdmap_mem_sending(&r->qp, r->reg[i].base, r->reg[i].len),
			 "region %u still posted after the flush", i);
	arena_check(r->arena);
}

/*
 * One run of the input: the reference takes every chunk whole, the other
 * in cuts and through the direct placement window as the input says.
 */
static void one_run(struct run *r, const uint8_t *data, size_t size,
		    bool reference)
{
	memset(r, 0, sizeof(*r));
	r->arena = &arena[reference];
	r->tx_hash = 0xcbf29ce484222325ull;
	fz_in_init(&r->in, data, size);
	fz_rand_reset(fz_u64(&r->in));
	arena_reset(r->arena);
	setup_engine(r);
	if (reference) {
		r->max_cut = SIZE_MAX;
		r->direct = false;
	}
	run_chunks(r);
	finish(r);
	rdmap_qp_fini(&r->qp);
	if (r->use_srq)
		rdmap_srq_fini(&r->srq);
	ddp_stag_table_destroy(&r->stags);
}

/*
 * RFC 5044's stream may arrive cut anywhere: both runs must complete the
 * same work the same way, report the same events, send the same octets
 * and leave memory the same.
 */
static void compare(const struct run *a, const struct run *b)
{
	fz_check(a->n_cqe == b->n_cqe, "%u completions whole, %u in cuts",
		 a->n_cqe, b->n_cqe);
	for (unsigned int i = 0; i < a->n_cqe; i++) {
		const struct rdmap_cqe *x = &a->cqe[i], *y = &b->cqe[i];

		fz_check(x->wr_id == y->wr_id && x->status == y->status &&
				 x->opcode == y->opcode && x->flags == y->flags &&
				 x->byte_len == y->byte_len &&
				 x->inv_stag == y->inv_stag && x->err == y->err,
			 "completion %u: wr %llu status %u len %u whole, "
			 "wr %llu status %u len %u in cuts", i,
			 (unsigned long long)x->wr_id, x->status, x->byte_len,
			 (unsigned long long)y->wr_id, y->status, y->byte_len);
	}
	fz_check(a->n_ev == b->n_ev && !memcmp(a->ev, b->ev, a->n_ev) &&
			 !memcmp(a->ev_err, b->ev_err,
				 a->n_ev * sizeof(a->ev_err[0])),
		 "events differ whole and in cuts");
	fz_check(a->tx_len == b->tx_len && a->tx_hash == b->tx_hash,
		 "%llu octets sent whole, %llu in cuts, or not the same",
		 (unsigned long long)a->tx_len, (unsigned long long)b->tx_len);
	for (int s = 0; s < ARENA_SLOTS; s++)
		fz_check(!memcmp(a->arena->slot[s], b->arena->slot[s],
				 ARENA_SLOT_BYTES),
			 "slot %d differs whole and in cuts", s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct run whole, cut;

	one_run(&whole, data, size, true);
	one_run(&cut, data, size, false);
	compare(&whole, &cut);
	return 0;
}
