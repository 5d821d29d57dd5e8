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
 * Whether send queue work not yet carried out (a Send, RDMA Write or RDMA
 * Read, whose sink this is) names memory in [@base, @base + @len).  Work
 * already completed or flushed does not.
 */
bool rdmap_mem_sending(struct rdmap_qp *qp, const uint8_t *base, uint64_t len)
{
	for (uint32_t i = qp->sq_tail; i != qp->sq_head; i++) {
		const struct rdmap_swqe *w = sq_at(qp, i);

		if (w->state != SWQE_DONE &&
		    iov_overlaps(w->iov, w->iovcnt, base, len))
			return true;
	}
	return false;
}

/*
 * Marks @r revoked if one of its buffers came through @lkey: it no longer
 * names any memory.  Returns whether it did.
 */
static bool rwqe_revoke(struct rdmap_rwqe *r, uint32_t lkey)
{
	for (int i = 0; i < r->iovcnt; i++) {
		if (r->lkey[i] == lkey) {
			r->revoked = true;
			r->iovcnt = 0;
			return true;
		}
	}
	return false;
}

/*
 * The region of @lkey is being deregistered: the receives posted through
 * it let go of its memory, as an RDMA adapter's would, which resolves
 * their keys only once a message comes.  A queued one is flushed as ever,
 * or fails when a message comes to it (take_recv()); one a message is
 * landing in ends the stream now, with a local protection error.  Returns
 * true when the engine changed state.
 */
bool rdmap_recvs_revoke(struct rdmap_qp *qp, uint32_t lkey)
{
	for (uint32_t i = 0; i < qp->rq_count; i++)
		rwqe_revoke(rq_at(qp, qp->rq_tail + i), lkey);
	if (!qp->have_cur_recv || !rwqe_revoke(&qp->cur_recv, lkey) ||
	    qp->state != RDMAP_QP_RTS)
		return false;
	rdmap_fail_local(qp, -IW_ELOCAL_PROTECTION);
	return true;
}

/* The same for the receives posted to a shared receive queue. */
void rdmap_srq_revoke(struct rdmap_srq *srq, uint32_t lkey)
{
	pthread_mutex_lock(&srq->lock);
	for (uint32_t i = 0; i < srq->count; i++)
		rwqe_revoke(&srq->ring[(srq->head + i) & srq->mask], lkey);
	pthread_mutex_unlock(&srq->lock);
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
 * rdmap_mem_sending() and rdmap_recvs_revoke()).  Returns true when the
 * engine changed state.
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
