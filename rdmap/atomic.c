// SPDX-License-Identifier: MIT
/*
 * RFC 7306 atomic operations.  As requester we send Atomic Requests on
 * queue 1, where RDMA Read Requests go, and count them against the same
 * ORD; their Atomic Responses (queue 3) must come back in request order,
 * in turn with the Read Responses.  As responder we judge the target like
 * a Read's source, carry the operation out with the processor's own
 * atomic instructions the moment the whole request has passed its CRC,
 * and queue the response behind the earlier ones (the same IRD).
 *
 * What that guarantees: an atomic is atomic with respect to every other
 * atomic on the same target carried out by this process (whatever QP or
 * thread it came through) and to the application's own atomic
 * instructions on it.  It is carried out in stream order with the RDMA
 * Writes and Sends around it.  Nothing makes it atomic with respect to
 * plain stores of the application, or to an RDMA Write landing on the
 * same octets through another connection.  A Read Response takes its
 * data from memory when it is sent, so an earlier Read of the target may
 * return the value an atomic left there (as RFC 5040 section 5.5 has it
 * for Writes that follow a Read).
 */
#include <string.h>

#include "lib/byteorder.h"
#include "lib/error.h"
#include "rdmap/rdmap_internal.h"

/* The Atomic Request header (RFC 7306) for @a on (@stag, @to). */
void rdmap_atomic_request_hdr(uint8_t *out, const struct rdmap_atomic_args *a,
			      uint32_t req_id, uint32_t stag, uint64_t to)
{
	put_be32(out + RDMAP_AR_OFF_AOP, a->aop & RDMAP_AR_AOP_MASK);
	put_be32(out + RDMAP_AR_OFF_REQ_ID, req_id);
	put_be32(out + RDMAP_AR_OFF_STAG, stag);
	put_be64(out + RDMAP_AR_OFF_TO, to);
	put_be64(out + RDMAP_AR_OFF_DATA, a->data);
	put_be64(out + RDMAP_AR_OFF_DATA_MASK, a->data_mask);
	put_be64(out + RDMAP_AR_OFF_CMP, a->cmp);
	put_be64(out + RDMAP_AR_OFF_CMP_MASK, a->cmp_mask);
}

/*
 * Fetch and Add with carry boundaries: each bit set in @mask ends a
 * field, and the carry out of it is dropped.  The top bit of every field
 * is left out of the sum, so no carry can cross it, and put back as the
 * exclusive or of both top bits and the carry that reached it.
 */
static uint64_t masked_add(uint64_t v, uint64_t add, uint64_t mask)
{
	return ((v & ~mask) + (add & ~mask)) ^ ((v ^ add) & mask);
}

static uint64_t masked_merge(uint64_t v, uint64_t data, uint64_t mask)
{
	return (v & ~mask) | (data & mask);
}

/*
 * Carries @a out on the aligned 64-bit integer at @target and returns the
 * value it held before.  The plain forms are one instruction; masked
 * forms loop on compare-and-exchange until no other atomic came between.
 */
uint64_t rdmap_atomic_execute(uint64_t *target,
			      const struct rdmap_atomic_args *a)
{
	uint64_t old, new;

	if (a->aop == RDMAP_AOP_FETCH_ADD && !a->data_mask)
		return __atomic_fetch_add(target, a->data, __ATOMIC_SEQ_CST);
	if (a->aop == RDMAP_AOP_SWAP && a->data_mask == UINT64_MAX)
		return __atomic_exchange_n(target, a->data, __ATOMIC_SEQ_CST);
	old = __atomic_load_n(target, __ATOMIC_SEQ_CST);
	do {
		switch (a->aop) {
		case RDMAP_AOP_FETCH_ADD:
			new = masked_add(old, a->data, a->data_mask);
			break;
		case RDMAP_AOP_SWAP:
			new = masked_merge(old, a->data, a->data_mask);
			break;
		default: /* RDMAP_AOP_CMP_SWAP */
			if ((old ^ a->cmp) & a->cmp_mask)
				return old;
			new = masked_merge(old, a->data, a->data_mask);
			break;
		}
	} while (!__atomic_compare_exchange_n(target, &old, new, false,
					      __ATOMIC_SEQ_CST,
					      __ATOMIC_SEQ_CST));
	return old;
}

/* A target's faults, as RFC 5040 section 7.1 names a Read source's. */
static int target_error(enum ddp_mr_fault f)
{
	static const int code[] = {
		[DDP_MR_OK] = 0,
		[DDP_MR_BAD_STAG] = -IW_ERDMAP_ATOMIC_STAG,
		[DDP_MR_WRONG_PD] = -IW_ERDMAP_ATOMIC_NOT_ASSOC,
		[DDP_MR_NO_ACCESS] = -IW_ERDMAP_ACCESS,
		[DDP_MR_TO_WRAP] = -IW_ERDMAP_ATOMIC_TO_WRAP,
		[DDP_MR_OUT_OF_BOUNDS] = -IW_ERDMAP_ATOMIC_BOUNDS,
	};

	return code[f];
}

/*
 * A whole, CRC-checked Atomic Request (@ar, its header): within the IRD
 * it shares with RDMA Reads, a known operation, a target the region lets
 * the peer operate on atomically and 8-octet aligned both as a tagged
 * offset and in memory.  It is carried out at once; its response queues
 * behind the earlier ones.
 */
int rdmap_atomic_request(struct rdmap_qp *qp, const uint8_t *ar)
{
	uint64_t to = get_be64(ar + RDMAP_AR_OFF_TO);
	struct rdmap_atomic_args a = {
		.aop = ar[RDMAP_AR_OFF_AOP + 3] & RDMAP_AR_AOP_MASK,
		.data = get_be64(ar + RDMAP_AR_OFF_DATA),
		.data_mask = get_be64(ar + RDMAP_AR_OFF_DATA_MASK),
		.cmp = get_be64(ar + RDMAP_AR_OFF_CMP),
		.cmp_mask = get_be64(ar + RDMAP_AR_OFF_CMP_MASK),
	};
	enum ddp_mr_fault f;
	uint8_t *where;

	if (qp->ird_count >= qp->conn.ird)
		return -IW_ERDMAP_ATOMIC_IRD_EXCEEDED;
	if (a.aop > RDMAP_AOP_CMP_SWAP)
		return -IW_ERDMAP_ATOMIC_OP;
	f = ddp_mr_check_cached(qp->attr.stags, &qp->atomic_mr,
				get_be32(ar + RDMAP_AR_OFF_STAG), qp->attr.pd,
				DDP_ACCESS_REMOTE_ATOMIC, to, RDMAP_ATOMIC_SIZE,
				&where);
	if (f != DDP_MR_OK)
		return target_error(f);
	if ((to | (uintptr_t)where) & (RDMAP_ATOMIC_SIZE - 1))
		return -IW_ERDMAP_ATOMIC_ALIGN;
	rdmap_tx_placing(qp, where, RDMAP_ATOMIC_SIZE);
	counter_max(&qp->stats.ird_max, qp->ird_count + 1);
	*ird_at(qp, qp->ird_head + qp->ird_count++) =
		(struct rdmap_ird_entry){
			.atomic = true,
			.req_id = get_be32(ar + RDMAP_AR_OFF_REQ_ID),
			.orig = rdmap_atomic_execute((uint64_t *)(void *)where,
						     &a),
		};
	return 0;
}

static struct rdmap_ord_entry *ord_head(struct rdmap_qp *qp)
{
	return ord_at(qp, qp->ord_head);
}

/*
 * An Atomic Response needs an outstanding request and must answer the
 * oldest one, RDMA Reads among them (responses come back in request
 * order): its Request Identifier is the one that request carried.
 */
int rdmap_atomic_response_check(struct rdmap_qp *qp, const uint8_t *resp)
{
	if (!qp->ord_count)
		return -IW_ERDMAP_ARESP_UNEXPECTED;
	if (!ord_head(qp)->atomic ||
	    get_be32(resp + RDMAP_ARESP_OFF_REQ_ID) != ord_head(qp)->msn)
		return -IW_ERDMAP_ARESP_MISMATCH;
	return 0;
}

/*
 * The checked response passed its CRC: the original value goes to the
 * buffer the work request named, in host byte order, and the request is
 * done.
 */
void rdmap_atomic_response_done(struct rdmap_qp *qp, const uint8_t *resp)
{
	struct rdmap_ord_entry *e = ord_head(qp);
	uint64_t v = get_be64(resp + RDMAP_ARESP_OFF_VALUE);
	struct rdmap_swqe *w = sq_at(qp, (uint32_t)e->sq);

	rdmap_tx_placing(qp, w->iov[0].iov_base, sizeof(v));
	memcpy(w->iov[0].iov_base, &v, sizeof(v));
	qp->ord_head++;
	qp->ord_count--;
	w->state = SWQE_DONE;
	rdmap_sq_complete(qp);
}
