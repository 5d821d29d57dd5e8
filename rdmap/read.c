// SPDX-License-Identifier: MIT
/*
 * RDMA Read (RFC 5040 sections 4.4-4.5, 6.3-6.4).  As requester we keep the
 * Reads we issued (at most ORD, RFC 7306 atomics included) and accept Read
 * Responses only in their order, at their sink; as data source we check
 * each Read Request against its source region and queue it (at most IRD)
 * for a response.
 */
#include "lib/byteorder.h"
#include "lib/error.h"
#include "rdmap/rdmap_internal.h"

static struct rdmap_ord_entry *ord_head(struct rdmap_qp *qp)
{
	return ord_at(qp, qp->ord_head);
}

/* A Read Response with no Read outstanding is an unexpected opcode. */
int rdmap_read_response_expected(struct rdmap_qp *qp)
{
	return qp->ord_count ? 0 : -IW_ERDMAP_RRESP_UNEXPECTED;
}

/*
 * RFC 5040 section 4.5: a Read Response carries the sink STag and TO of
 * its Read Request.  A segment that DDP found placeable (its STag valid,
 * in our protection domain and bounds) must still continue the oldest
 * outstanding Read: same sink STag, the next tagged offset, and no more
 * octets than it asked for.  Only RDMAP knows the Reads, so a segment that
 * breaks this is an RDMAP error, found after DDP's own checks.
 */
int rdmap_read_response_check(struct rdmap_qp *qp, const struct ddp_hdr *h,
			      uint32_t payload)
{
	struct rdmap_ord_entry *e = ord_head(qp);

	if (e->atomic || h->stag != e->sink_stag ||
	    h->to != e->sink_to + e->done ||
	    (uint64_t)e->done + payload > e->len ||
	    (h->last && e->done + payload != e->len))
		return -IW_ERDMAP_RRESP_MISMATCH;
	return 0;
}

/* The segment is placed and its CRC checked; the last one ends the Read. */
void rdmap_read_response_done(struct rdmap_qp *qp, const struct ddp_hdr *h,
			      uint32_t payload)
{
	struct rdmap_ord_entry *e = ord_head(qp);

	e->done += payload;
	if (!h->last)
		return;
	qp->ord_head++;
	qp->ord_count--;
	if (e->sq >= 0)
		sq_at(qp, (uint32_t)e->sq)->state = SWQE_DONE;
	rdmap_sq_complete(qp);
}

/* RFC 5040 section 7.1: faults of a Read source are remote protection errors. */
static int read_source_error(enum ddp_mr_fault f)
{
	static const int code[] = {
		[DDP_MR_OK] = 0,
		[DDP_MR_BAD_STAG] = -IW_ERDMAP_STAG,
		[DDP_MR_WRONG_PD] = -IW_ERDMAP_NOT_ASSOC,
		[DDP_MR_NO_ACCESS] = -IW_ERDMAP_ACCESS,
		[DDP_MR_TO_WRAP] = -IW_ERDMAP_TO_WRAP,
		[DDP_MR_OUT_OF_BOUNDS] = -IW_ERDMAP_BOUNDS,
	};

	return code[f];
}

/*
 * A whole, CRC-checked Read Request: check the source (a zero-length Read
 * touches no memory, so it is not checked) and queue the response.
 */
int rdmap_read_request(struct rdmap_qp *qp, const uint8_t *rr)
{
	uint32_t size = get_be32(rr + RDMAP_RR_OFF_SIZE);
	uint8_t *src = NULL;

	if (qp->ird_count >= qp->conn.ird)
		return -IW_ERDMAP_IRD_EXCEEDED;
	if (size) {
		enum ddp_mr_fault f = ddp_mr_check_cached(
			qp->attr.stags, &qp->read_mr,
			get_be32(rr + RDMAP_RR_OFF_SRC_STAG), qp->attr.pd,
			DDP_ACCESS_REMOTE_READ,
			get_be64(rr + RDMAP_RR_OFF_SRC_TO), size, &src);

		if (f != DDP_MR_OK)
			return read_source_error(f);
	}
	counter_max(&qp->stats.ird_max, qp->ird_count + 1);
	*ird_at(qp, qp->ird_head + qp->ird_count++) =
		(struct rdmap_ird_entry){
			.sink_stag = get_be32(rr + RDMAP_RR_OFF_SINK_STAG),
			.sink_to = get_be64(rr + RDMAP_RR_OFF_SINK_TO),
			.len = size,
			.src = src,
			.src_stag = get_be32(rr + RDMAP_RR_OFF_SRC_STAG),
		};
	return 0;
}
