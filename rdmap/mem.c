// SPDX-License-Identifier: MIT
/*
 * Which application memory an engine holds, and letting go of a region
 * that is being deregistered.  The engine keeps raw pointers, resolved
 * through STags when work is posted or a segment starts: into posted
 * work requests' buffers, into a region a peer's RDMA Write or Read
 * Response is being placed in, into the source of a Read Response it
 * sends.  Once an STag is invalid no new pointer can be had through it;
 * these functions find and drop the ones already taken, so that the
 * owner can tell the application the memory is no longer touched.
 *
 * Like the rest of the engine this takes no lock: the owner serialises
 * the calls with everything else it does on the engine.
 */
#include <string.h>

#include "lib/error.h"
#include "rdmap/rdmap_internal.h"

static bool overlaps(const void *p, size_t n, const uint8_t *base,
		     uint64_t len)
{
	const uint8_t *a = p;

	return n && len && a < base + len && base < a + n;
}

static bool iov_overlaps(const struct iovec *iov, int iovcnt,
			 const uint8_t *base, uint64_t len)
{
	for (int i = 0; i < iovcnt; i++)
		if (overlaps(iov[i].iov_base, iov[i].iov_len, base, len))
			return true;
	return false;
}

/*
 * Whether work posted on the engine and not yet carried out (sends,
 * receives, the receive a message is landing in) names memory in
 * [@base, @base + @len).  Work already completed or flushed does not.
 */
bool rdmap_mem_posted(struct rdmap_qp *qp, const uint8_t *base, uint64_t len)
{
	for (uint32_t i = qp->sq_tail; i != qp->sq_head; i++) {
		const struct rdmap_swqe *w = sq_at(qp, i);

		if (w->state != SWQE_DONE &&
		    iov_overlaps(w->iov, w->iovcnt, base, len))
			return true;
	}
	for (uint32_t i = 0; i < qp->rq_count; i++) {
		const struct rdmap_rwqe *r = rq_at(qp, qp->rq_tail + i);

		if (iov_overlaps(r->iov, r->iovcnt, base, len))
			return true;
	}
	return qp->have_cur_recv &&
	       iov_overlaps(qp->cur_recv.iov, qp->cur_recv.iovcnt, base, len);
}

/* The same for the receives posted to a shared receive queue. */
bool rdmap_srq_mem_posted(struct rdmap_srq *srq, const uint8_t *base,
			  uint64_t len)
{
	bool found = false;

	pthread_mutex_lock(&srq->lock);
	for (uint32_t i = 0; i < srq->count && !found; i++) {
		const struct rdmap_rwqe *r =
			&srq->ring[(srq->head + i) & srq->mask];

		found = iov_overlaps(r->iov, r->iovcnt, base, len);
	}
	pthread_mutex_unlock(&srq->lock);
	return found;
}

/* The FPDU partly handed down already, if it holds memory of the region. */
static bool partial_fpdu_overlaps(struct rdmap_qp *qp, const uint8_t *base,
				  uint64_t len)
{
	const struct rdmap_fpdu *fp;

	if (!qp->fpdu_count || !qp->tx_off)
		return false;
	fp = fpdu_at(qp, qp->fpdu_head);
	return iov_overlaps(fp->wire, fp->n_wire, base, len);
}

/*
 * The region [@base, @base + @len) under STag @stag is being deregistered
 * and its STag is no longer valid; the peer's accesses to it already under
 * way end the stream, as if the STag had been invalid from the start:
 *  - an RDMA Write or Read Response being placed into it: RFC 5041
 *    section 7.2 DDP tagged buffer error, invalid STag, with the header
 *    of that segment;
 *  - an RDMA Read Response to be sent from it (queued, or partly built):
 *    RFC 5040 section 7.1 remote protection error, invalid STag, without
 *    headers (the Read Request is no longer the segment at hand).
 * When part of an FPDU holding its memory is on the wire already, the
 * rest cannot follow, and no Terminate can follow it: the stream ends
 * at once.  Work the application posted is not looked at (see
 * rdmap_mem_posted()).  Returns true when the engine changed state.
 */
bool rdmap_mem_release(struct rdmap_qp *qp, uint32_t stag,
		       const uint8_t *base, uint64_t len)
{
	const struct rdmap_rx_seg *s = &qp->seg;
	bool placing = false, sourcing = false, partial;
	int err;

	if (qp->state != RDMAP_QP_RTS && qp->state != RDMAP_QP_TERMINATING)
		return false;
	if (qp->state == RDMAP_QP_RTS) {
		placing = s->hdr_done && s->left && s->dst && s->ddp.tagged &&
			  s->ddp.stag == stag;
		for (uint32_t i = 0; i < qp->ird_count && !sourcing; i++) {
			const struct rdmap_ird_entry *e =
				ird_at(qp, qp->ird_head + i);

			sourcing = e->len && e->src_stag == stag;
		}
	}
	partial = partial_fpdu_overlaps(qp, base, len);
	if (!placing && !sourcing && !partial)
		return false;
	err = placing ? -IW_EDDP_T_STAG : -IW_ERDMAP_STAG;
	if (qp->state == RDMAP_QP_RTS) {
		rdmap_fail(qp, err);
		if (!placing)
			qp->term_out.m = qp->term_out.d = qp->term_out.r = false;
	}
	if (partial)
		rdmap_qp_set_error(qp, err);
	return true;
}
