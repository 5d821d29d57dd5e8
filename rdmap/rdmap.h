/* SPDX-License-Identifier: MIT */
/*
 * RDMAP layer (RFC 5040): one RDMAP stream, the protocol engine of a
 * queue pair.  It takes work requests, turns them into DDP segments framed
 * by MPA, places what arrives, and reports completions and events.
 *
 * The engine does no I/O and takes no locks of its own (an SRQ and the STag
 * table, shared between QPs, have theirs); its owner serialises the calls.
 * Octets leave through rdmap_tx_gather()/rdmap_tx_advance() and arrive
 * through rdmap_rx_feed() or the direct placement pair
 * rdmap_rx_direct()/rdmap_rx_direct_done(), so two engines can be wired
 * back to back in memory as well as over a socket.
 *
 * Rules it keeps:
 *  - send queue completions come in posting order; a Send or Write is done
 *    when its last octet is handed down, a Read when its last response
 *    octet is placed;
 *  - receive completions come in MSN order with their byte counts;
 *  - every error RFC 5040/5041/5044 names produces exactly one Terminate,
 *    after which the engine refuses traffic and every outstanding work
 *    request completes exactly once with a flush status.
 *
 * The RFC 7306 extensions (atomics, immediate data) are off unless the
 * owner turns them on (rdmap_qp_attr.ext); off, the engine sends and
 * takes exactly what RFC 5040 alone allows.
 */
#ifndef IW_RDMAP_H
#define IW_RDMAP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "ddp/ddp.h"
#include "lib/counter.h"
#include "mpa/mpa.h"
#include "rdmap/rdmap_wire.h"

/* ---- work requests and completions ---------------------------------- */

enum rdmap_wr_op {
	RDMAP_WR_SEND,
	RDMAP_WR_SEND_INV,
	RDMAP_WR_WRITE,
	RDMAP_WR_READ,
	RDMAP_WR_LOCAL_INV, /* invalidates a local STag; nothing on the wire */
	/* RFC 7306 */
	RDMAP_WR_WRITE_IMM, /* an RDMA Write, then Immediate Data */
	RDMAP_WR_IMM,	    /* Immediate Data (with SE when solicited) */
	RDMAP_WR_ATOMIC,    /* sge: the 8 octets the original value goes to */
	RDMAP_WR_OP_MAX = RDMAP_WR_ATOMIC,
};

/* Requests that take an ORD credit and complete with their response. */
static inline bool rdmap_wr_is_request(uint8_t op)
{
	return op == RDMAP_WR_READ || op == RDMAP_WR_ATOMIC;
}

/* Requests of the RFC 7306 extensions. */
static inline bool rdmap_wr_is_ext(uint8_t op)
{
	return op >= RDMAP_WR_WRITE_IMM;
}

/* RFC 7306 extensions a stream takes and may send (rdmap_qp_attr.ext). */
#define RDMAP_EXT_ATOMICS 0x1
#define RDMAP_EXT_IMM 0x2

/*
 * The operands of an RFC 7306 atomic operation (enum rdmap_aop): Fetch
 * and Add adds @data, carries stopping above each bit set in @data_mask;
 * Swap and Compare and Swap write the bits of @data that @data_mask
 * selects, Compare and Swap only when the bits @cmp_mask selects equal
 * @cmp.  The target is a 64-bit integer in host byte order.
 */
struct rdmap_atomic_args {
	uint8_t aop;
	uint64_t data, data_mask;
	uint64_t cmp, cmp_mask;
};

/* Local buffers one work request may name */
#define RDMAP_MAX_SGE 32
/* The deepest send or receive queue an engine takes. */
#define RDMAP_MAX_QUEUE (1u << 24)

#define RDMAP_WR_SIGNALED 0x1
#define RDMAP_WR_SOLICITED 0x2
#define RDMAP_WR_INLINE 0x4
/* waits until every RDMA Read (or atomic) posted before it has its
 * response */
#define RDMAP_WR_FENCE 0x8

/* A local buffer: address, length, and the STag (lkey) that covers it. */
struct rdmap_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

struct rdmap_send_wr {
	uint64_t wr_id;
	uint8_t op;    /* enum rdmap_wr_op */
	uint8_t flags; /* RDMAP_WR_* */
	uint32_t inv_stag;    /* SEND_INV: the peer STag to invalidate;
			       * LOCAL_INV: our own */
	uint32_t rkey;	      /* WRITE, READ: the peer's STag */
	uint64_t remote_addr; /* WRITE, READ: the peer's tagged offset */
	const struct rdmap_sge *sge;
	uint32_t num_sge; /* READ: exactly one, the sink */
	/* RFC 7306 */
	uint64_t imm;			 /* WRITE_IMM, IMM: the 8 octets */
	struct rdmap_atomic_args atomic; /* ATOMIC; rkey, remote_addr too */
};

struct rdmap_recv_wr {
	uint64_t wr_id;
	const struct rdmap_sge *sge;
	uint32_t num_sge;
};

enum rdmap_wc_status {
	RDMAP_WC_SUCCESS,
	RDMAP_WC_LOC_LEN_ERR,
	RDMAP_WC_LOC_PROT_ERR,
	RDMAP_WC_LOC_QP_OP_ERR,
	RDMAP_WC_WR_FLUSH_ERR,
	RDMAP_WC_REM_ACCESS_ERR,
	RDMAP_WC_REM_OP_ERR,
	RDMAP_WC_RETRY_EXC_ERR, /* an established stream ended, -ETIMEDOUT */
};

enum rdmap_wc_opcode {
	RDMAP_WC_SEND,
	RDMAP_WC_WRITE,
	RDMAP_WC_READ,
	RDMAP_WC_RECV,
	RDMAP_WC_LOCAL_INV,
	/* RFC 7306 */
	RDMAP_WC_FETCH_ADD,
	RDMAP_WC_SWAP,
	RDMAP_WC_CMP_SWAP,
	RDMAP_WC_RECV_WRITE_IMM, /* Immediate Data right after an RDMA Write */
};

#define RDMAP_CQE_SOLICITED 0x1	  /* a Send with Solicited Event */
#define RDMAP_CQE_INVALIDATED 0x2 /* inv_stag was invalidated */
#define RDMAP_CQE_IMM 0x4	  /* Immediate Data: imm holds it */

struct rdmap_cqe {
	uint64_t wr_id;
	uint8_t status; /* enum rdmap_wc_status */
	uint8_t opcode; /* enum rdmap_wc_opcode */
	uint8_t flags;	/* RDMAP_CQE_* */
	bool recv;	/* from the receive queue */
	uint32_t byte_len;
	uint32_t inv_stag;
	int err; /* the library code behind a failure, or 0 */
	uint64_t imm; /* with RDMAP_CQE_IMM */
};

/* ---- Terminate ------------------------------------------------------ */

/*
 * A Terminate message as received (or sent).  The control word is read the
 * RFC way; `swapped` holds the reading of a peer that writes the word as a
 * little-endian bitfield (Linux siw on x86), see SIW notes in iwarp(7).
 */
struct rdmap_term {
	uint8_t layer, etype, ecode;
	bool m, d, r;
	struct {
		uint8_t layer, etype, ecode;
		bool m, d, r;
	} swapped;
	uint16_t seg_len; /* with M */
	uint8_t ddp_hdr[DDP_MAX_HDR_LEN];
	uint8_t ddp_hdr_len; /* with D: 14 or 18 */
	uint8_t rdma_hdr[RDMAP_READ_REQ_LEN];
	bool have_rdma_hdr; /* with R */
};

/* ---- events ------------------------------------------------------- */

enum rdmap_event_type {
	RDMAP_EV_ESTABLISHED,	    /* the first FPDU (or the RTR) arrived */
	RDMAP_EV_TERMINATE_SENT,    /* our Terminate left; the stream is dead */
	RDMAP_EV_TERMINATE_RECEIVED,
	RDMAP_EV_ERROR,		    /* the engine entered the error state */
};

struct rdmap_event {
	uint8_t type; /* enum rdmap_event_type */
	int err;      /* why, for ERROR and TERMINATE_* */
	const struct rdmap_term *term;
};

/* The most completions one complete() call carries. */
#define RDMAP_CQE_RUN 16

/*
 * complete() takes @n completions in the order the work requests
 * completed; those one engine call makes (a run of send completions,
 * the receives a read of the stream completes) come in as few calls as
 * RDMAP_CQE_RUN allows.
 */
struct rdmap_ops {
	void (*complete)(void *arg, const struct rdmap_cqe *cqe,
			 unsigned int n);
	void (*event)(void *arg, const struct rdmap_event *ev);
};

/* ---- shared receive queue (srq.c) --------------------------------- */

struct rdmap_rwqe {
	uint64_t wr_id;
	uint64_t len;
	int iovcnt;
	struct iovec *iov; /* max_sge entries */
	uint32_t *lkey;	   /* the STag each iov entry came through */
	bool revoked;	   /* a region it named was deregistered */
};

struct rdmap_srq {
	pthread_mutex_t lock;
	struct ddp_stag_table *stags;
	uint32_t pd;
	uint32_t depth, max_sge;
	/* ring of posted receives: a power of two of entries (see the QP's) */
	uint32_t mask, head, count;
	struct rdmap_rwqe *ring;
	struct iovec *iov_store;
	uint32_t *lkey_store;
};

int rdmap_srq_init(struct rdmap_srq *srq, struct ddp_stag_table *stags,
		   uint32_t pd, uint32_t depth, uint32_t max_sge);
void rdmap_srq_fini(struct rdmap_srq *srq);
int rdmap_srq_post(struct rdmap_srq *srq, const struct rdmap_recv_wr *wr);
bool rdmap_srq_take(struct rdmap_srq *srq, struct rdmap_rwqe *out);
uint32_t rdmap_srq_count(struct rdmap_srq *srq);

/* ---- the engine ---------------------------------------------------- */

enum rdmap_qp_state {
	RDMAP_QP_IDLE,	      /* created; work may be posted, nothing moves */
	RDMAP_QP_RTS,	      /* connected */
	RDMAP_QP_TERMINATING, /* a Terminate is queued or leaving */
	RDMAP_QP_ERROR,
};

struct rdmap_qp_attr {
	uint32_t sq_depth, rq_depth;
	uint32_t max_sge;    /* per work request */
	uint32_t max_inline; /* octets a Send or Write may carry inline */
	uint32_t pd;
	struct ddp_stag_table *stags;
	struct rdmap_srq *srq; /* receives come from here when set */
	uint8_t ext; /* RDMAP_EXT_*: RFC 7306 extensions, 0 for none */
};

/* What the MPA handshake settled, seen from this side. */
struct rdmap_conn {
	bool initiator;
	bool crc;
	bool markers_tx, markers_rx;
	/* both at least RDMAP_MIN_MULPDU */
	uint16_t mulpdu;    /* longest ULPDU we send */
	uint16_t max_ulpdu; /* longest ULPDU we accept */
	/* what rdmap_set_mulpdu() may raise mulpdu to; below mulpdu: mulpdu */
	uint16_t mulpdu_max;
	uint16_t ird, ord;
	uint8_t rtr; /* peer-to-peer: the agreed enum mpa_rtr type, or 0 */
	bool responder_first; /* no wait for the initiator's first FPDU */
};

/*
 * The staging ring of FPDUs built whole (tx.c), and the largest FPDU it
 * takes: small ones without markers; with markers every FPDU, as two
 * iovecs per 512 octets would cost more than the copy.
 */
#define RDMAP_TX_STAGE_SIZE (16 * 1024)
#define RDMAP_TX_COPY_MAX 1024
#define RDMAP_TX_STAGE_SIZE_MARKERS (256 * 1024)

/* A message being cut into segments. */
struct rdmap_tx_msg {
	uint8_t kind; /* enum in tx.c */
	uint32_t slot;
	struct ddp_hdr hdr;
	const struct iovec *iov;
	int iovcnt;
	struct iovec one;
	uint64_t total, sent;
	uint8_t extra_len;
	/* a new message clears every field above (msg_clear() in tx.c);
	 * extra_len bounds what is read of this one */
	uint8_t extra[RDMAP_TERM_MAX_LEN]; /* RDMAP header after DDP's */
};

/*
 * One FPDU built and waiting to be written.  What the writes look at
 * comes first, within 64 octets; the header and frame after it are read
 * only when the FPDU points at its payload.
 */
struct rdmap_fpdu {
	struct iovec *wire; /* the pieces to write */
	size_t wire_len;
	uint64_t stage_end;   /* the staging ring's tail once it was built */
	int64_t completes_sq; /* SQ index this FPDU finishes handing down, or -1 */
	/* the application memory its payload is read from, and whether
	 * received data has landed there since its CRC was computed */
	const uint8_t *src_lo, *src_hi;
	int n_wire;
	uint32_t ird_done; /* inbound Reads whose response ends here */
	bool terminate;
	bool crc_stale;
	/* SQ indexes from completes_sq on that it finishes: more than one
	 * for a run of small FPDUs staged end to end (tx.c, join_run()) */
	uint32_t sq_count;
	uint8_t hdr[RDMAP_MAX_HDR_LEN];
	struct mpa_tx_frame frame;
};

/*
 * What a stream has carried, for iw_query_qp_stats() and iwarp-stat.
 * Written by whoever drives the engine (under its owner's lock), read by
 * anyone at any time (lib/counter.h).  Messages are counted by RDMAP
 * opcode (RFC 5040 section 4.2, RFC 7306) once their last segment is
 * built (sent) or has passed the CRC (received); the RFC 6581 ready-to-
 * receive message is not counted among them, its FPDU and octets are.
 */
#define RDMAP_STATS_OPCODES 16
#define RDMAP_STATS_LAYERS 3 /* Terminate layers: RDMAP, DDP, LLP (MPA) */

struct rdmap_stats {
	iw_counter tx_octets, rx_octets; /* wire octets handed down, taken in */
	iw_counter tx_fpdus, rx_fpdus;
	iw_counter tx_msgs[RDMAP_STATS_OPCODES], rx_msgs[RDMAP_STATS_OPCODES];
	iw_counter crc_errors;	  /* FPDUs that failed the CRC (RFC 5044 8) */
	iw_counter marker_errors; /* markers that did not point right */
	iw_counter term_tx[RDMAP_STATS_LAYERS], term_rx[RDMAP_STATS_LAYERS];
	/* the last Terminate each way: layer << 16 | etype << 8 | ecode,
	 * with bit 24 set once there was one */
	iw_counter term_tx_last, term_rx_last;
	iw_counter ord_max, ird_max; /* deepest Read queues seen */
};

/* The value of term_tx_last/term_rx_last for a triple. */
static inline uint64_t rdmap_stats_triple(uint8_t layer, uint8_t etype,
					  uint8_t ecode)
{
	return 1u << 24 | (uint32_t)layer << 16 | (uint32_t)etype << 8 | ecode;
}

struct rdmap_swqe;
struct rdmap_ord_entry;
struct rdmap_ird_entry;

/*
 * Receive side of one segment in progress.  A new segment resets every
 * field but hdr (ulpdu_begin() in rx.c).
 */
struct rdmap_rx_seg {
	uint8_t hdr[RDMAP_MAX_HDR_LEN];
	uint16_t hdr_have, hdr_need;
	uint16_t len;	    /* ULPDU length */
	uint16_t left;	    /* payload octets still to come */
	uint16_t payload;   /* payload octets in this segment */
	bool ddp_ok;	    /* DDP header decoded and checked */
	bool hdr_done;
	struct ddp_hdr ddp;
	uint8_t opcode;
	uint8_t *dst;	    /* tagged destination */
	bool untagged_dst;  /* payload goes to the current receive */
	bool rtr;	    /* this segment is the peer's RTR */
	uint32_t placed;    /* payload octets placed so far */
};

struct rdmap_qp {
	const struct rdmap_ops *ops;
	void *arg;
	struct rdmap_qp_attr attr;
	struct rdmap_conn conn;
	uint8_t state;
	int err; /* why the engine left RTS */
	uint8_t cqe_n;	  /* completions in cqe_run */
	uint8_t cqe_hold; /* calls under way that keep the run */

	/*
	 * The rings below hold a power of two of entries, at least what they
	 * must, so that positions (free-running 32-bit counters) map to the
	 * same entry across their wrap; *_mask is that power less one.
	 */
	/* send queue: sq_size requests at most */
	struct rdmap_swqe *sq;
	uint32_t sq_size, sq_mask;
	uint32_t sq_tail, sq_next, sq_head; /* complete <= next <= head */
	struct iovec *sq_iov;
	uint8_t *sq_inline;
	uint32_t msn_tx[RDMAP_QN_MAX]; /* next MSN to send per queue */

	/* receive queue (when no SRQ) */
	struct rdmap_rwqe *rq;
	uint32_t rq_size, rq_mask, rq_tail, rq_count;
	struct iovec *rq_iov;
	uint32_t *rq_lkey;
	struct rdmap_rwqe cur_recv; /* the receive a message is landing in */
	bool have_cur_recv;
	struct iovec *cur_iov;
	uint32_t *cur_lkey;

	/* outbound Reads (ORD) and inbound Reads (IRD) */
	struct rdmap_ord_entry *ord_q;
	uint32_t ord_mask, ord_head, ord_count;
	struct rdmap_ird_entry *ird_q;
	uint32_t ird_mask, ird_head, ird_count, ird_started;

	/* transmit */
	struct mpa_tx mpa_tx;
	struct rdmap_tx_msg msg;
	struct rdmap_fpdu *fpdus;
	struct iovec *fpdu_iov;
	uint8_t (*fpdu_markers)[MPA_MARKER_LEN]; /* with markers only */
	uint32_t n_fpdus, fpdu_head, fpdu_count; /* n_fpdus: a power of two */
	size_t fpdu_iov_max;
	size_t tx_off; /* octets of the head FPDU already written */
	size_t fpdu_bytes; /* wire octets of the built FPDUs */
	/*
	 * FPDUs built whole into this ring go out many to an iovec;
	 * positions count octets ever used.
	 */
	uint8_t *stage;
	uint32_t stage_size; /* a power of two */
	uint64_t stage_head, stage_tail;
	uint32_t tx_copy_max; /* wire octets up to which an FPDU is staged */
	uint8_t *bounce; /* with CRC: the rest of a partly written FPDU */
	bool tx_open;  /* the peer's first FPDU (or RTR) has arrived */
	bool tx_imm_next; /* the Immediate Data of a Write with it is due */
	bool rtr_sent;
	bool term_queued;
	struct rdmap_term term_out;

	/* the registrations last used by posts, placement, Read sources and
	 * atomic targets */
	struct ddp_mr_cache post_mr, place_mr, read_mr, atomic_mr;

	/* receive */
	struct mpa_rx mpa_rx;
	uint8_t *rx_hold; /* CRC on: a ULPDU waits here for its CRC */
	struct ddp_queue rxq[RDMAP_QN_MAX];
	struct rdmap_rx_seg seg;
	/* RFC 7306: the last message to end was an RDMA Write of this size */
	bool rx_after_write;
	uint64_t rx_write_len;
	bool rtr_seen;
	struct rdmap_term term_in;

	/*
	 * Completions that go up together (rdmap_emit()).  Last: between
	 * the fields above it would spread them over more cache lines.
	 */
	struct rdmap_cqe cqe_run[RDMAP_CQE_RUN];

	/* after the fields the data path reads: counters only add to them */
	struct rdmap_stats stats;
};

int rdmap_qp_init(struct rdmap_qp *qp, const struct rdmap_qp_attr *attr,
		  const struct rdmap_ops *ops, void *arg);
void rdmap_qp_fini(struct rdmap_qp *qp);
int rdmap_qp_start(struct rdmap_qp *qp, const struct rdmap_conn *conn);
void rdmap_set_mulpdu(struct rdmap_qp *qp, uint16_t mulpdu);
void rdmap_qp_set_error(struct rdmap_qp *qp, int err);
void rdmap_qp_terminate(struct rdmap_qp *qp, int err);

int rdmap_post_send(struct rdmap_qp *qp, const struct rdmap_send_wr *wr);
/* Whether an RDMA Read waits in the send queue. */
bool rdmap_sq_has_read(struct rdmap_qp *qp);
/* Send work requests posted and not yet complete. */
static inline uint32_t rdmap_sq_outstanding(const struct rdmap_qp *qp)
{
	return qp->sq_head - qp->sq_tail;
}

/* Whether work posted now completes at once, flushed. */
static inline bool rdmap_flushes(const struct rdmap_qp *qp)
{
	return qp->state == RDMAP_QP_TERMINATING || qp->state == RDMAP_QP_ERROR;
}

/* Reads or atomics sent whose responses have not all come in. */
static inline bool rdmap_responses_due(const struct rdmap_qp *qp)
{
	return qp->ord_count > 0;
}

int rdmap_post_recv(struct rdmap_qp *qp, const struct rdmap_recv_wr *wr);

int rdmap_tx_gather(struct rdmap_qp *qp, struct iovec *iov, int max,
		    size_t max_bytes);
void rdmap_tx_advance(struct rdmap_qp *qp, size_t len);
bool rdmap_tx_pending(struct rdmap_qp *qp);

int rdmap_rx_feed(struct rdmap_qp *qp, const uint8_t *p, size_t len);
int rdmap_rx_eof(struct rdmap_qp *qp);
uint8_t *rdmap_rx_direct(struct rdmap_qp *qp, size_t *len);
int rdmap_rx_direct_done(struct rdmap_qp *qp, size_t len);

/* ---- application memory the engine holds (mem.c) ------------------ */

bool rdmap_mem_sending(struct rdmap_qp *qp, const uint8_t *base, uint64_t len);
bool rdmap_recvs_revoke(struct rdmap_qp *qp, uint32_t lkey);
void rdmap_srq_revoke(struct rdmap_srq *srq, uint32_t lkey);
bool rdmap_mem_release(struct rdmap_qp *qp, uint32_t stag,
		       const uint8_t *base, uint64_t len);

/* ---- Terminate helpers (terminate.c) ------------------------------- */

size_t rdmap_term_encode(const struct rdmap_term *t, uint8_t *out);
int rdmap_term_decode(const uint8_t *p, size_t len, struct rdmap_term *t);
bool rdmap_term_valid(uint8_t layer, uint8_t etype, uint8_t ecode);
const char *rdmap_term_describe(uint8_t layer, uint8_t etype, uint8_t ecode);

#endif /* IW_RDMAP_H */
