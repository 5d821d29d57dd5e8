/* SPDX-License-Identifier: MIT */
/*
 * What the files of the RDMAP engine share and the layer above never sees:
 * the send queue entries, the Read queues, and the functions that move an
 * engine between states.
 */
#ifndef IW_RDMAP_INTERNAL_H
#define IW_RDMAP_INTERNAL_H

#include "lib/copy.h"
#include "rdmap/rdmap.h"

enum swqe_state {
	SWQE_QUEUED,	/* posted, not started */
	SWQE_TX,	/* being segmented and handed down */
	SWQE_WAIT_READ, /* Read or Atomic Request sent, response not in */
	SWQE_DONE,	/* finished; completes when its turn comes */
};

struct rdmap_swqe {
	uint64_t wr_id;
	uint8_t op;
	uint8_t flags;
	uint8_t state;
	uint8_t status; /* enum rdmap_wc_status once DONE */
	int err;
	uint32_t inv_stag;
	uint32_t rkey;
	uint64_t remote_addr;
	uint64_t len;
	int iovcnt;
	struct iovec *iov;   /* max_sge entries */
	uint8_t *inline_buf; /* max_inline octets */
	uint32_t sink_stag;  /* READ: our sink */
	uint64_t sink_to;
	uint64_t imm;			 /* WRITE_IMM, IMM */
	struct rdmap_atomic_args atomic; /* ATOMIC; the result goes to iov[0] */
};

/*
 * An RDMA Read (or RFC 7306 atomic) we issued: its response must match,
 * in order.  An atomic's Request Identifier is the MSN its request
 * carried on queue 1.
 */
struct rdmap_ord_entry {
	int64_t sq; /* SQ index, or -1 for the RTR */
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t len;
	uint32_t done;
	bool atomic;
	uint32_t msn; /* of the request on queue 1 */
};

/*
 * An RDMA Read the peer issued, waiting for (or in) its response; or an
 * atomic already carried out, whose response waits for its turn.
 */
struct rdmap_ird_entry {
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t len;
	uint8_t *src;
	uint32_t src_stag; /* what @src was resolved through */
	bool atomic;
	uint32_t req_id; /* atomic: echoed in the response */
	uint64_t orig;	 /* atomic: the target's value before */
};

/*
 * Entries of a ring that holds @n (at most RDMAP_MAX_QUEUE): the power of
 * two at or above it, so that positions map to the same entry across
 * their 32-bit wrap.
 */
static inline uint32_t rdmap_ring_len(uint32_t n)
{
	uint32_t len = 1;

	while (len < n)
		len <<= 1;
	return len;
}

static inline struct rdmap_swqe *sq_at(struct rdmap_qp *qp, uint32_t i)
{
	return &qp->sq[i & qp->sq_mask];
}

static inline struct rdmap_rwqe *rq_at(struct rdmap_qp *qp, uint32_t i)
{
	return &qp->rq[i & qp->rq_mask];
}

/* Copies posted receive @from into @to, whose arrays are its own. */
static inline void rwqe_copy(struct rdmap_rwqe *to,
			     const struct rdmap_rwqe *from)
{
	size_t n = (size_t)from->iovcnt;

	to->wr_id = from->wr_id;
	to->len = from->len;
	to->iovcnt = from->iovcnt;
	to->revoked = from->revoked;
	copy_small(to->iov, from->iov, n * sizeof(*from->iov));
	copy_small(to->lkey, from->lkey, n * sizeof(*from->lkey));
}

static inline struct rdmap_ord_entry *ord_at(struct rdmap_qp *qp, uint32_t i)
{
	return &qp->ord_q[i & qp->ord_mask];
}

static inline struct rdmap_ird_entry *ird_at(struct rdmap_qp *qp, uint32_t i)
{
	return &qp->ird_q[i & qp->ird_mask];
}

static inline struct rdmap_fpdu *fpdu_at(struct rdmap_qp *qp, uint32_t i)
{
	return &qp->fpdus[i & (qp->n_fpdus - 1)];
}

/* qp.c */
void rdmap_cqe_flush(struct rdmap_qp *qp);
void rdmap_cqe_hold(struct rdmap_qp *qp);
void rdmap_cqe_release(struct rdmap_qp *qp);
void rdmap_event(struct rdmap_qp *qp, uint8_t type, int err,
		 const struct rdmap_term *term);

/*
 * A completion is written where rdmap_cqe_slot() says, in place (built
 * on the stack and copied, its narrow fields' stores would stall the
 * copy's wide loads), and rdmap_emit() makes it the run's next.  The run
 * goes up when it is full or when the last rdmap_cqe_hold() is released;
 * with no hold, at once.  The order of completions is the order of the
 * calls.
 */
static inline struct rdmap_cqe *rdmap_cqe_slot(struct rdmap_qp *qp)
{
	return &qp->cqe_run[qp->cqe_n];
}

static inline void rdmap_emit(struct rdmap_qp *qp)
{
	if (++qp->cqe_n == RDMAP_CQE_RUN || !qp->cqe_hold)
		rdmap_cqe_flush(qp);
}

void rdmap_sq_complete(struct rdmap_qp *qp);
void rdmap_fail(struct rdmap_qp *qp, int err);
void rdmap_fail_local(struct rdmap_qp *qp, int err);

/* tx.c */
void rdmap_tx_reset(struct rdmap_qp *qp, bool keep_partial);
void rdmap_tx_placing(struct rdmap_qp *qp, const uint8_t *dst, size_t len);

/* rx.c */
extern const struct mpa_rx_ops rdmap_mpa_rx_ops;

/* read.c */
int rdmap_read_response_expected(struct rdmap_qp *qp);
int rdmap_read_response_check(struct rdmap_qp *qp, const struct ddp_hdr *h,
			      uint32_t payload);
void rdmap_read_response_done(struct rdmap_qp *qp, const struct ddp_hdr *h,
			      uint32_t payload);
int rdmap_read_request(struct rdmap_qp *qp, const uint8_t *rr);

/* atomic.c (RFC 7306) */
void rdmap_atomic_request_hdr(uint8_t *out, const struct rdmap_atomic_args *a,
			      uint32_t req_id, uint32_t stag, uint64_t to);
int rdmap_atomic_request(struct rdmap_qp *qp, const uint8_t *ar);
int rdmap_atomic_response_check(struct rdmap_qp *qp, const uint8_t *resp);
void rdmap_atomic_response_done(struct rdmap_qp *qp, const uint8_t *resp);
uint64_t rdmap_atomic_execute(uint64_t *target,
			      const struct rdmap_atomic_args *a);

/* terminate.c */
void rdmap_term_for_error(struct rdmap_qp *qp, int err, struct rdmap_term *t);
void rdmap_term_local(struct rdmap_term *t);

#endif /* IW_RDMAP_INTERNAL_H */
