/* SPDX-License-Identifier: MIT */
/*
 * libiwarp verbs: device context, protection domains, memory regions,
 * completion queues, queue pairs and shared receive queues, modelled on
 * libibverbs.  Connections are made with the calls in <iwarp/cm.h>.
 *
 * Threads: every call may be made from any thread.  Posting and polling
 * run in the calling thread; a Send or Write is handed to the socket right
 * away when it can be.  Received data is placed, and completions are
 * generated, by the thread that polls an empty CQ (it reads the sockets of
 * that CQ's QPs itself) and by the progress mode's threads: see
 * enum iw_progress_mode.
 */
#ifndef IWARP_VERBS_H
#define IWARP_VERBS_H

#include <stddef.h>
#include <stdint.h>

#include <iwarp/error.h>

#ifdef __cplusplus
extern "C" {
#endif

struct event_base;
struct iw_context;
struct iw_pd;
struct iw_cq;
struct iw_qp;
struct iw_srq;

/* ---- device context ---------------------------------------------- */

/*
 * Who runs the receive path: placing arriving data, answering RDMA Read
 * Requests, generating completions, the MPA handshakes.  Whatever the
 * mode, iw_poll_cq() on an empty CQ, iw_get_cq_event(), iw_get_cm_event()
 * and iw_progress() run it in the calling thread too, and a Send or Write
 * leaves from the posting thread; the wire octets are the same in every
 * mode.
 */
enum iw_progress_mode {
	/* a library thread as well, for connections nobody polls */
	IW_PROGRESS_THREAD,
	/* only the application's calls: no thread, nothing moves between them */
	IW_PROGRESS_MANUAL,
	/* progress_threads library threads, connections spread over them */
	IW_PROGRESS_THREADS,
};

/* Which optional fields of struct iw_context_attr are set. */
enum iw_context_attr_mask {
	IW_CONTEXT_ATTR_PROGRESS = 1 << 0, /* progress, progress_threads */
};

/*
 * How this structure grows without breaking binaries built against an
 * older header: fields are only ever added at the end, each with a bit in
 * comp_mask that says the caller set it; the library reads no field whose
 * bit is clear, and refuses bits it does not know (EINVAL).  Fields before
 * the first optional one are always read.
 */
struct iw_context_attr {
	uint32_t comp_mask; /* enum iw_context_attr_mask */
	/*
	 * NULL: the library creates its own event loop.  Otherwise the
	 * application dispatches this event_base itself (libevent with
	 * pthreads support enabled, evthread_use_pthreads(), when other
	 * threads call libiwarp); the progress mode is then ignored.
	 */
	struct event_base *base;
	uint32_t max_mr; /* registrations at once; 0: 65536 */
	/* write every connection's traffic to this pcap file; NULL: none
	 * (the IWARP_TRACE environment variable sets it too) */
	const char *trace_path;
	/* IW_CONTEXT_ATTR_PROGRESS */
	enum iw_progress_mode progress;
	uint32_t progress_threads; /* IW_PROGRESS_THREADS: how many; 0: 2 */
};

struct iw_context *iw_open(const struct iw_context_attr *attr);
int iw_close(struct iw_context *ctx);
/*
 * Runs the receive path of every connection of the context in the calling
 * thread, waiting at most @timeout_ms (-1: no bound, 0: not at all) for
 * something to happen.  What an application in IW_PROGRESS_MANUAL mode
 * calls when it waits on descriptors of its own.  Returns 0 or a negative
 * errno-style code.
 */
int iw_progress(struct iw_context *ctx, int timeout_ms);

/* Debug log to stderr: handshakes, Terminates, state changes, with the
 * connection's addresses.  Level 0 is off; IWARP_DEBUG=1 in the
 * environment turns it on at iw_open(). */
void iw_set_debug(struct iw_context *ctx, int level);

/*
 * What the library can do: the largest values each call takes.  Fields
 * are only ever added at the end; @attr_size says how many the caller
 * knows (sizeof(struct iw_device_attr) where it was compiled).
 */
struct iw_device_attr {
	uint32_t max_qp;	  /* queue pairs at once (descriptor limit) */
	uint32_t max_qp_wr;	  /* send or receive queue depth */
	uint32_t max_sge;	  /* buffers per work request */
	uint32_t max_inline_data; /* octets a Send or Write carries inline */
	uint32_t max_cq;	  /* completion queues at once */
	uint32_t max_cqe;	  /* completions one CQ holds */
	uint32_t max_mr;	  /* registrations at once */
	uint64_t max_mr_size;	  /* octets one region covers */
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
	uint16_t max_ird;	  /* inbound RDMA Reads at once (RFC 6581) */
	uint16_t max_ord;	  /* outbound RDMA Reads at once */
	uint16_t max_private_data; /* octets of MPA private data */
	/* libiwarp 0.2: the RFC 7306 extensions a QP may enable (enum
	 * iw_rfc7306; see iw_create_qp()) */
	uint32_t rfc7306;
};

int iw_query_device(struct iw_context *ctx, struct iw_device_attr *attr,
		    size_t attr_size);

/* ---- protection domains and memory regions ------------------------ */

struct iw_pd *iw_alloc_pd(struct iw_context *ctx);
int iw_dealloc_pd(struct iw_pd *pd);

enum iw_access_flags {
	IW_ACCESS_LOCAL_WRITE = 1 << 0,
	IW_ACCESS_REMOTE_WRITE = 1 << 1,
	IW_ACCESS_REMOTE_READ = 1 << 2,
	IW_ACCESS_REMOTE_ATOMIC = 1 << 3, /* RFC 7306 atomics on it */
};

/* A registered region.  iWARP has one STag per region: lkey == rkey. */
struct iw_mr {
	struct iw_pd *pd;
	void *addr;
	size_t length;
	uint32_t lkey;
	uint32_t rkey;
};

struct iw_mr *iw_reg_mr(struct iw_pd *pd, void *addr, size_t length,
			int access);
/* The same, with tagged offsets that start at @iova instead of @addr. */
struct iw_mr *iw_reg_mr_iova(struct iw_pd *pd, void *addr, size_t length,
			     uint64_t iova, int access);
int iw_dereg_mr(struct iw_mr *mr);

/* ---- completion queues -------------------------------------------- */

enum iw_wc_status {
	IW_WC_SUCCESS,
	IW_WC_LOC_LEN_ERR,
	IW_WC_LOC_PROT_ERR,
	IW_WC_LOC_QP_OP_ERR,
	IW_WC_WR_FLUSH_ERR,
	IW_WC_REM_ACCESS_ERR,
	IW_WC_REM_OP_ERR,
	/* libiwarp 0.2: the peer acknowledged nothing within the QP's
	 * timeouts (see iw_set_qp_timeouts()); the QP is in error */
	IW_WC_RETRY_EXC_ERR,
};

enum iw_wc_opcode {
	IW_WC_SEND,
	IW_WC_RDMA_WRITE,
	IW_WC_RDMA_READ,
	IW_WC_RECV,
	IW_WC_LOCAL_INV,
	/* RFC 7306 */
	IW_WC_COMP_SWAP,
	IW_WC_FETCH_ADD,
	IW_WC_RECV_RDMA_WITH_IMM, /* Immediate Data right after an RDMA Write */
};

enum iw_wc_flags {
	IW_WC_SOLICITED = 1 << 0, /* a Send with Solicited Event */
	IW_WC_WITH_INV = 1 << 1,  /* invalidated_rkey was invalidated */
	IW_WC_WITH_IMM = 1 << 2,  /* imm_data holds RFC 7306 Immediate Data */
};

/*
 * Completions are returned in arrays, so the size of this structure is
 * part of the ABI.  It grows only at the end, and each growth comes with
 * a new version of iw_poll_cq(): a binary keeps the iw_poll_cq() of the
 * header it was built against, which writes entries of that size.
 */
struct iw_wc {
	uint64_t wr_id;
	enum iw_wc_status status;
	enum iw_wc_opcode opcode;
	uint32_t byte_len;
	uint32_t invalidated_rkey;
	unsigned int wc_flags;
	struct iw_qp *qp;
	int err; /* the library code behind a failed status, else 0 */
	/* libiwarp 0.2: the qp_context of @qp, good after it is destroyed */
	void *qp_context;
	/* libiwarp 0.2 */
	uint64_t imm_data; /* with IW_WC_WITH_IMM: the 8 octets, else 0 */
};

struct iw_cq *iw_create_cq(struct iw_context *ctx, int cqe, void *cq_context);
int iw_destroy_cq(struct iw_cq *cq);
/*
 * Lets the CQ hold @cqe completions; it never shrinks below what it holds
 * (a CQ also grows by itself for the QPs attached to it).  Returns how
 * many it holds now, or a negative errno-style code.  (libiwarp 0.2)
 */
int iw_resize_cq(struct iw_cq *cq, int cqe);
int iw_poll_cq(struct iw_cq *cq, int num_entries, struct iw_wc *wc);
/* Readable when an armed CQ has a completion event (see iw_req_notify_cq). */
int iw_cq_fd(struct iw_cq *cq);
int iw_req_notify_cq(struct iw_cq *cq, int solicited_only);
int iw_get_cq_event(struct iw_cq *cq, void **cq_context);
void iw_ack_cq_events(struct iw_cq *cq, unsigned int nevents);
/*
 * Moves the CQ's QPs on in the calling thread and sleeps on their own
 * sockets, at most @timeout_ms (-1: no bound), until a completion is on
 * the CQ, a connection of it has come or gone, or the armed CQ's event
 * has fired.  Threads that each wait on a CQ of their own this way share
 * no loop and no lock.  Returns 0 or a negative errno-style code.
 * (libiwarp 0.2)
 */
int iw_progress_cq(struct iw_cq *cq, int timeout_ms);
const char *iw_wc_status_str(enum iw_wc_status status);

/* ---- queue pairs ---------------------------------------------------- */

struct iw_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

/* Which optional fields of struct iw_qp_init_attr are set. */
enum iw_qp_init_attr_mask {
	IW_QP_INIT_ATTR_RFC7306 = 1 << 0,
};

/*
 * RFC 7306 extensions a QP takes and may send.  Off by default: both ends
 * must turn on the same ones (RFC 7306 has no negotiation of its own, see
 * iwarp(7)).  A QP without one answers its messages with the Terminate
 * for an unknown opcode, as RFC 5040 has it.
 */
enum iw_rfc7306 {
	IW_RFC7306_ATOMICS = 1 << 0,	/* Fetch and Add, Compare and Swap */
	IW_RFC7306_IMMEDIATE = 1 << 1, /* Immediate Data */
	IW_RFC7306_ALL = IW_RFC7306_ATOMICS | IW_RFC7306_IMMEDIATE,
};

/*
 * Fields after comp_mask are read only when their bit in comp_mask is set
 * (libiwarp 0.2); unknown bits are refused (EINVAL).
 */
struct iw_qp_init_attr {
	struct iw_cq *send_cq;
	struct iw_cq *recv_cq;
	struct iw_srq *srq; /* receives come from here when set */
	void *qp_context;
	struct iw_qp_cap cap;
	int sq_sig_all; /* every send work request is signaled */
	uint32_t comp_mask; /* enum iw_qp_init_attr_mask */
	uint32_t rfc7306;   /* IW_QP_INIT_ATTR_RFC7306: enum iw_rfc7306 */
};

enum iw_qp_state {
	IW_QPS_INIT,	    /* not connected: posted sends wait for it */
	IW_QPS_RTS,	    /* connected */
	IW_QPS_TERMINATING, /* sending a Terminate */
	IW_QPS_ERROR,
};

/* RFC 6581 ready-to-receive types, used as a set */
enum iw_rtr {
	IW_RTR_SEND = 1 << 0,
	IW_RTR_WRITE = 1 << 1,
	IW_RTR_READ = 1 << 2,
};

struct iw_qp_attr {
	enum iw_qp_state state;
	struct iw_qp_cap cap;
	uint16_t ird, ord;	/* negotiated Read depths */
	uint8_t mpa_revision;
	uint8_t crc;		/* CRC32c in both directions */
	uint8_t markers_tx;	/* we insert markers */
	uint8_t markers_rx;	/* the peer inserts markers */
	uint8_t rtr;		/* the agreed enum iw_rtr type, or 0 */
	uint16_t mulpdu;	/* longest ULPDU we send */
	int err;		/* why the QP left RTS, or 0 */
};

struct iw_qp *iw_create_qp(struct iw_pd *pd, struct iw_qp_init_attr *attr);

/* Which fields of struct iw_qp_timeouts are set (or asked for). */
enum iw_qp_timeouts_mask {
	IW_QP_TIMEOUTS_ACK = 1 << 0,	   /* ack_timeout_ms */
	IW_QP_TIMEOUTS_KEEPALIVE = 1 << 1, /* keepalive_idle_s and the rest */
};

/* The defaults of every QP (see iwarp(7), "Dead peers and timeouts"). */
#define IW_ACK_TIMEOUT_MS_DEFAULT 15000
#define IW_KEEPALIVE_IDLE_S_DEFAULT 10
#define IW_KEEPALIVE_INTERVAL_S_DEFAULT 2
#define IW_KEEPALIVE_COUNT_DEFAULT 3

/*
 * How soon a QP gives up on a peer that has gone silent: its outstanding
 * work then completes with IW_WC_RETRY_EXC_ERR (receives flushed) and its
 * connection ends with IW_CM_EVENT_ERROR, status -ETIMEDOUT.  Grows like
 * struct iw_context_attr: fields are read (or written, by the query) only
 * when their bit is in comp_mask.  (libiwarp 0.2)
 */
struct iw_qp_timeouts {
	uint32_t comp_mask; /* enum iw_qp_timeouts_mask */
	/* data sent and not acknowledged for this long (TCP_USER_TIMEOUT);
	 * 0: the kernel's own limit (tcp_retries2, about 15 minutes) */
	uint32_t ack_timeout_ms;
	/* TCP keepalive while nothing is in flight; idle 0: none */
	uint32_t keepalive_idle_s;     /* 1 to 32767 */
	uint32_t keepalive_interval_s; /* 1 to 32767 */
	uint32_t keepalive_count;      /* 1 to 127 */
};

int iw_set_qp_timeouts(struct iw_qp *qp, const struct iw_qp_timeouts *t);
int iw_query_qp_timeouts(struct iw_qp *qp, struct iw_qp_timeouts *t);
int iw_destroy_qp(struct iw_qp *qp);
int iw_query_qp(struct iw_qp *qp, struct iw_qp_attr *attr);
int iw_qp_to_error(struct iw_qp *qp);
/* The qp_context given at creation (a completion names its QP). */
void *iw_qp_context(struct iw_qp *qp);

/* ---- work requests -------------------------------------------------- */

struct iw_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

enum iw_wr_opcode {
	IW_WR_SEND,
	IW_WR_SEND_WITH_INV,
	IW_WR_RDMA_WRITE,
	IW_WR_RDMA_READ,
	IW_WR_LOCAL_INV, /* invalidate_rkey: one of our own STags */
	/* RFC 7306, on a QP that enabled the extension */
	IW_WR_RDMA_WRITE_WITH_IMM, /* the Write, then imm_data */
	IW_WR_SEND_WITH_IMM,	   /* imm_data alone: no payload */
	IW_WR_ATOMIC_CMP_AND_SWP,
	IW_WR_ATOMIC_FETCH_AND_ADD,
};

enum iw_send_flags {
	IW_SEND_SIGNALED = 1 << 0,
	IW_SEND_SOLICITED = 1 << 1,
	IW_SEND_INLINE = 1 << 2,
	IW_SEND_FENCE = 1 << 3, /* wait for every earlier RDMA Read, atomic */
};

struct iw_send_wr {
	uint64_t wr_id;
	struct iw_send_wr *next;
	struct iw_sge *sg_list;
	int num_sge;
	enum iw_wr_opcode opcode;
	unsigned int send_flags;
	uint32_t invalidate_rkey; /* IW_WR_SEND_WITH_INV, IW_WR_LOCAL_INV */
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma; /* IW_WR_RDMA_WRITE(_WITH_IMM), IW_WR_RDMA_READ */
		/*
		 * IW_WR_ATOMIC_*: the 8 aligned octets at remote_addr; the
		 * value they held goes to the one sg_list entry (8 octets)
		 */
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
			uint64_t compare_add; /* what to compare, or add */
			uint64_t swap;	      /* CMP_AND_SWP: what to write */
		} atomic;
	};
	/* libiwarp 0.2: read only for the opcodes that carry it */
	uint64_t imm_data; /* IW_WR_*_WITH_IMM: RFC 7306 Immediate Data */
};

struct iw_recv_wr {
	uint64_t wr_id;
	struct iw_recv_wr *next;
	struct iw_sge *sg_list;
	int num_sge;
};

int iw_post_send(struct iw_qp *qp, struct iw_send_wr *wr,
		 struct iw_send_wr **bad_wr);
int iw_post_recv(struct iw_qp *qp, struct iw_recv_wr *wr,
		 struct iw_recv_wr **bad_wr);

/* ---- shared receive queues ------------------------------------------ */

struct iw_srq_init_attr {
	void *srq_context;
	uint32_t max_wr;
	uint32_t max_sge;
};

struct iw_srq *iw_create_srq(struct iw_pd *pd, struct iw_srq_init_attr *attr);
int iw_destroy_srq(struct iw_srq *srq);
void *iw_srq_context(struct iw_srq *srq);
int iw_post_srq_recv(struct iw_srq *srq, struct iw_recv_wr *wr,
		     struct iw_recv_wr **bad_wr);

#ifdef __cplusplus
}
#endif

#endif /* IWARP_VERBS_H */
