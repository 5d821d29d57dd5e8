/* SPDX-License-Identifier: MIT */
/*
 * libiwarp's libibverbs: the objects behind rdma-core's structures, each
 * an rdma-core structure with the libiwarp object it stands for beside
 * it.  librdmacm does not read these: it goes through the table of
 * rdmacm_iface.h.  Nothing here is exported: applications see only the
 * rdma-core structures at the head of each object.
 */
#ifndef IWV_IBVERBS_H
#define IWV_IBVERBS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <iwarp/iwarp.h>

#include "compat/ibverbs/rdmacm_iface.h"


/*
 * A libibverbs context: rdma-core's extended context, librdmacm's table
 * (laid out as struct iwv_context_head), then ours.
 */
struct iwv_context {
	struct verbs_context vctx; /* its ibv_context is last: ours follow */
	const struct iwv_rdmacm_iface *rdmacm;
	struct iw_context *iw;	   /* shared by every context of the process */
	int async_fd;		   /* never readable: no async events yet */
	/* RFC 7306 extensions every QP enables (IWARP_RFC7306=1) */
	uint32_t rfc7306;
	pthread_mutex_t qps_lock;
	struct iwv_qp *qps;	   /* for rdma_connect() by qp_num */
};

struct iwv_pd {
	struct ibv_pd pd;
	struct iw_pd *iw;
};

struct iwv_mr {
	struct ibv_mr mr;
	struct iw_mr *iw;
	int access;
};

/*
 * A completion channel is an epoll descriptor over the eventfds of its
 * CQs: readable when one of them has an event, as a kernel channel is.
 */
struct iwv_comp_channel {
	struct ibv_comp_channel ch;
};

struct iwv_cq {
	struct ibv_cq_ex cq; /* an ibv_cq at its head */
	struct iw_cq *iw;
	uint32_t iw_cqe;     /* what the iw CQ holds */
	uint64_t wc_flags;   /* ibv_create_cq_ex(): what may be read */
	uint32_t events_reported; /* by ibv_get_cq_event(), under cq.mutex */
	/* the completion being read between ibv_start_poll() and
	 * ibv_end_poll(), which hold poll_lock */
	pthread_mutex_t poll_lock;
	struct iw_wc cur;
};

/* Work requests built with the wr_* calls, posted by wr_complete(). */
#define IWV_WR_BATCH 64

struct iwv_wr_builder {
	struct iw_send_wr wr[IWV_WR_BATCH];
	struct iw_sge *sges;	/* max_send_sge for each request */
	uint8_t *inline_buf;	/* max_inline_data octets for each, at first use */
	unsigned int n;
	int err; /* the first refusal since wr_start() */
};

struct iwv_qp {
	struct ibv_qp_ex qp; /* an ibv_qp at its head */
	struct iw_qp *iw;
	struct iwv_qp *next; /* in the context's list */
	pthread_mutex_t lock; /* state, iw (re-created by RESET) */
	enum ibv_qp_state state;
	struct ibv_qp_cap cap;
	int sq_sig_all;
	int access;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	/* IBV_QP_TIMEOUT and IBV_QP_RETRY_CNT, as given; timeout 0: none */
	uint8_t timeout, retry_cnt;
	uint64_t send_ops_flags; /* ibv_create_qp_ex(): allowed wr_* */
	struct iwv_wr_builder *bld;
	/* work was posted since the QP was made or reset (librdmacm may
	 * try a refused connection again only with a QP that has none) */
	atomic_bool posted;
	/*
	 * Set by librdmacm while a connection holds the QP (qp_hold in
	 * rdmacm_iface.h): destroying the QP (or resetting it) first ends
	 * and releases the connection.
	 */
	void (*cm_release)(struct ibv_qp *qp);
	void *cm_id;
};

_Static_assert(offsetof(struct iwv_context, rdmacm) ==
		       offsetof(struct iwv_context_head, rdmacm),
	       "librdmacm finds its table where struct iwv_context_head says");

struct iwv_srq {
	struct ibv_srq srq;
	struct iw_srq *iw;
	uint32_t max_wr, max_sge;
};

static inline struct iwv_context *to_iwv_ctx(struct ibv_context *c)
{
	return iwv_container_of(c, struct iwv_context, vctx.context);
}

static inline struct iwv_pd *to_iwv_pd(struct ibv_pd *pd)
{
	return iwv_container_of(pd, struct iwv_pd, pd);
}

static inline struct iwv_mr *to_iwv_mr(struct ibv_mr *mr)
{
	return iwv_container_of(mr, struct iwv_mr, mr);
}

static inline struct iwv_cq *to_iwv_cq(struct ibv_cq *cq)
{
	return iwv_container_of(cq, struct iwv_cq, cq);
}

static inline struct iwv_qp *to_iwv_qp(struct ibv_qp *qp)
{
	return iwv_container_of(qp, struct iwv_qp, qp.qp_base);
}

static inline struct iwv_srq *to_iwv_srq(struct ibv_srq *srq)
{
	return iwv_container_of(srq, struct iwv_srq, srq);
}

/*
 * ibverbs' immediate data is 4 octets in network byte order; RFC 7306's
 * is 8: the 4 travel as the low half of the 8, so that two ibverbs ends
 * get back exactly the octets that were sent.
 */
static inline uint64_t iwv_imm_out(__be32 imm)
{
	return be32toh(imm);
}

static inline __be32 iwv_imm_in(uint64_t imm)
{
	return htobe32((uint32_t)imm);
}

/* device.c */
extern const struct iwv_rdmacm_iface iwv_rdmacm_table;
struct iw_context *iwv_iw_get(void);
void iwv_iw_put(void);
uint32_t iwv_rfc7306_env(void);

/* query.c */
int iwv_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr);
int iwv_query_device_ex(struct ibv_context *ctx,
			const struct ibv_query_device_ex_input *input,
			struct ibv_device_attr_ex *attr, size_t attr_size);
int iwv_query_port(struct ibv_context *ctx, uint8_t port,
		   struct ibv_port_attr *attr, size_t attr_size);
void iwv_node_guid(uint8_t guid[8]);

/* cq.c */
int iwv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int iwv_req_notify_cq(struct ibv_cq *cq, int solicited_only);
struct ibv_cq_ex *iwv_create_cq_ex(struct ibv_context *ctx,
				   struct ibv_cq_init_attr_ex *attr);

/* qp.c */
int iwv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad);
int iwv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad);
int iwv_post_recv_list(struct iw_qp *qp, struct iw_srq *srq,
		       struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
struct ibv_qp *iwv_create_qp_ex(struct ibv_context *ctx,
				struct ibv_qp_init_attr_ex *attr);
int iwv_send_opcode(enum ibv_wr_opcode op, enum iw_wr_opcode *out);
unsigned int iwv_send_flags(unsigned int ibv_flags);

/* qp_ex.c */
int iwv_qp_ex_init(struct iwv_qp *qp);
void iwv_qp_ex_fini(struct iwv_qp *qp);

/* srq.c */
int iwv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad);
struct ibv_srq *iwv_create_srq_ex(struct ibv_context *ctx,
				  struct ibv_srq_init_attr_ex *attr);

/* unsupported.c: the verbs_context entries iWARP has no use for */
/* every entry of a context's ops, libiwarp's and the unsupported */
extern const struct verbs_context iwv_context_ops;

#endif /* IWV_IBVERBS_H */
