// SPDX-License-Identifier: MIT
/*
 * What iWARP over TCP has no use for, or libiwarp does not do yet, fails
 * the way rdma-core fails it for a device without it: EOPNOTSUPP (a NULL
 * object with errno, or the error as the return value).  Address
 * handles and multicast belong to datagram QPs; memory windows, device
 * memory, flow steering, work queues, counters, XRC and thread domains
 * are adapter features; kernel objects cannot be imported where there is
 * no kernel device.  iwarp-compat(7) lists them.  The table of a
 * context's entries, at the end, names them beside libiwarp's calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <unistd.h>

#include "compat/ibverbs/ibverbs.h"

#define NOT_SUPPORTED_PTR()         \
	do {                        \
		errno = EOPNOTSUPP; \
		return NULL;        \
	} while (0)

/* ---- entries of ibv_context.ops and struct verbs_context ------------ */


static struct ibv_mw *alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	(void)pd;
	(void)type;
	NOT_SUPPORTED_PTR();
}

static int bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		   struct ibv_mw_bind *mw_bind)
{
	(void)qp;
	(void)mw;
	(void)mw_bind;
	return EOPNOTSUPP;
}

static int dealloc_mw(struct ibv_mw *mw)
{
	(void)mw;
	return EOPNOTSUPP;
}

static int advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		     uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sges)
{
	(void)pd;
	(void)advice;
	(void)flags;
	(void)sg_list;
	(void)num_sges;
	return EOPNOTSUPP;
}

static struct ibv_mr *alloc_null_mr(struct ibv_pd *pd)
{
	(void)pd;
	NOT_SUPPORTED_PTR();
}

static int read_counters(struct ibv_counters *counters, uint64_t *values,
			 uint32_t n, uint32_t flags)
{
	(void)counters;
	(void)values;
	(void)n;
	(void)flags;
	return EOPNOTSUPP;
}

static int attach_counters_point_flow(struct ibv_counters *counters,
				      struct ibv_counter_attach_attr *attr,
				      struct ibv_flow *flow)
{
	(void)counters;
	(void)attr;
	(void)flow;
	return EOPNOTSUPP;
}

static struct ibv_counters *create_counters(struct ibv_context *ctx,
					    struct ibv_counters_init_attr *attr)
{
	(void)ctx;
	(void)attr;
	NOT_SUPPORTED_PTR();
}

static int destroy_counters(struct ibv_counters *counters)
{
	(void)counters;
	return EOPNOTSUPP;
}

static struct ibv_mr *reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm,
				uint64_t dm_offset, size_t length,
				unsigned int access)
{
	(void)pd;
	(void)dm;
	(void)dm_offset;
	(void)length;
	(void)access;
	NOT_SUPPORTED_PTR();
}

static struct ibv_dm *alloc_dm(struct ibv_context *ctx,
			       struct ibv_alloc_dm_attr *attr)
{
	(void)ctx;
	(void)attr;
	NOT_SUPPORTED_PTR();
}

static int free_dm(struct ibv_dm *dm)
{
	(void)dm;
	return EOPNOTSUPP;
}

static int modify_flow_action_esp(struct ibv_flow_action *action,
				  struct ibv_flow_action_esp_attr *attr)
{
	(void)action;
	(void)attr;
	return EOPNOTSUPP;
}

static int destroy_flow_action(struct ibv_flow_action *action)
{
	(void)action;
	return EOPNOTSUPP;
}

static struct ibv_flow_action *
create_flow_action_esp(struct ibv_context *ctx,
		       struct ibv_flow_action_esp_attr *attr)
{
	(void)ctx;
	(void)attr;
	NOT_SUPPORTED_PTR();
}

static int modify_qp_rate_limit(struct ibv_qp *qp,
				struct ibv_qp_rate_limit_attr *attr)
{
	(void)qp;
	(void)attr;
	return EOPNOTSUPP;
}

static struct ibv_pd *alloc_parent_domain(struct ibv_context *ctx,
					  struct ibv_parent_domain_init_attr *attr)
{
	(void)ctx;
	(void)attr;
	NOT_SUPPORTED_PTR();
}

static int dealloc_td(struct ibv_td *td)
{
	(void)td;
	return EOPNOTSUPP;
}

static struct ibv_td *alloc_td(struct ibv_context *ctx,
			       struct ibv_td_init_attr *attr)
{
	(void)ctx;
	(void)attr;
	NOT_SUPPORTED_PTR();
}

/* CQ moderation: each completion raises its event */
static int modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr)
{
	(void)cq;
	(void)attr;
	return EOPNOTSUPP;
}

static int post_srq_ops(struct ibv_srq *srq, struct ibv_ops_wr *op,
			struct ibv_ops_wr **bad_op)
{
	(void)srq;
	*bad_op = op;
	return EOPNOTSUPP;
}

static int destroy_rwq_ind_table(struct ibv_rwq_ind_table *t)
{
	(void)t;
	return EOPNOTSUPP;
}

static struct ibv_rwq_ind_table *
create_rwq_ind_table(struct ibv_context *ctx,
		     struct ibv_rwq_ind_table_init_attr *attr)
{
	(void)ctx;
	(void)attr;
	NOT_SUPPORTED_PTR();
}

static int destroy_wq(struct ibv_wq *wq)
{
	(void)wq;
	return EOPNOTSUPP;
}

static int modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr)
{
	(void)wq;
	(void)attr;
	return EOPNOTSUPP;
}

static struct ibv_wq *create_wq(struct ibv_context *ctx,
				struct ibv_wq_init_attr *attr)
{
	(void)ctx;
	(void)attr;
	NOT_SUPPORTED_PTR();
}

static int query_rt_values(struct ibv_context *ctx, struct ibv_values_ex *values)
{
	(void)ctx;
	(void)values;
	return EOPNOTSUPP;
}

static int destroy_flow(struct ibv_flow *flow)
{
	(void)flow;
	return EOPNOTSUPP;
}

static struct ibv_flow *create_flow(struct ibv_qp *qp,
				    struct ibv_flow_attr *flow_attr)
{
	(void)qp;
	(void)flow_attr;
	NOT_SUPPORTED_PTR();
}

static struct ibv_qp *open_qp(struct ibv_context *ctx,
			      struct ibv_qp_open_attr *attr)
{
	(void)ctx;
	(void)attr;
	NOT_SUPPORTED_PTR();
}

static int get_srq_num(struct ibv_srq *srq, uint32_t *srq_num)
{
	(void)srq;
	(void)srq_num;
	return EOPNOTSUPP;
}

static struct ibv_xrcd *open_xrcd(struct ibv_context *ctx,
				  struct ibv_xrcd_init_attr *attr)
{
	(void)ctx;
	(void)attr;
	NOT_SUPPORTED_PTR();
}

static int close_xrcd(struct ibv_xrcd *xrcd)
{
	(void)xrcd;
	return EOPNOTSUPP;
}

/*
 * ibv_context.ops and the extended context's entries, all in one table:
 * libiwarp's calls, and for everything else a function that fails as
 * rdma-core fails it on a device without the feature (inline calls check
 * only for NULL).  rdma-core 44's public headers have no struct
 * verbs_context_ops and no verbs_set_ops(): the table is a whole struct
 * verbs_context, copied into a new context before ibv_open_device()
 * fills in the rest.
 */
#undef ibv_query_port
const struct verbs_context iwv_context_ops = {
	.context.ops = {
		.poll_cq = iwv_poll_cq,
		.req_notify_cq = iwv_req_notify_cq,
		.post_send = iwv_post_send,
		.post_recv = iwv_post_recv,
		.post_srq_recv = iwv_post_srq_recv,
		/* what binaries built against very old headers call */
		._compat_query_device = ibv_query_device,
		._compat_query_port = ibv_query_port,
		.alloc_mw = alloc_mw,
		.bind_mw = bind_mw,
		.dealloc_mw = dealloc_mw,
	},
	.query_port = iwv_query_port,
	.query_device_ex = iwv_query_device_ex,
	.create_cq_ex = iwv_create_cq_ex,
	.create_qp_ex = iwv_create_qp_ex,
	.create_srq_ex = iwv_create_srq_ex,
	/* libibverbs 1.1.8 inlines looked for the flow calls here */
	.ABI_placeholder1 = (void (*)(void))create_flow,
	.ABI_placeholder2 = (void (*)(void))destroy_flow,
	.advise_mr = advise_mr,
	.alloc_null_mr = alloc_null_mr,
	.read_counters = read_counters,
	.attach_counters_point_flow = attach_counters_point_flow,
	.create_counters = create_counters,
	.destroy_counters = destroy_counters,
	.reg_dm_mr = reg_dm_mr,
	.alloc_dm = alloc_dm,
	.free_dm = free_dm,
	.modify_flow_action_esp = modify_flow_action_esp,
	.destroy_flow_action = destroy_flow_action,
	.create_flow_action_esp = create_flow_action_esp,
	.modify_qp_rate_limit = modify_qp_rate_limit,
	.alloc_parent_domain = alloc_parent_domain,
	.dealloc_td = dealloc_td,
	.alloc_td = alloc_td,
	.modify_cq = modify_cq,
	.post_srq_ops = post_srq_ops,
	.destroy_rwq_ind_table = destroy_rwq_ind_table,
	.create_rwq_ind_table = create_rwq_ind_table,
	.destroy_wq = destroy_wq,
	.modify_wq = modify_wq,
	.create_wq = create_wq,
	.query_rt_values = query_rt_values,
	.ibv_destroy_flow = destroy_flow,
	.ibv_create_flow = create_flow,
	.open_qp = open_qp,
	.get_srq_num = get_srq_num,
	.open_xrcd = open_xrcd,
	.close_xrcd = close_xrcd,
};

/* ---- exported calls ---------------------------------------------------- */

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	(void)pd;
	(void)attr;
	NOT_SUPPORTED_PTR();
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	(void)ah;
	return EOPNOTSUPP;
}

int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
			struct ibv_wc *wc, struct ibv_grh *grh,
			struct ibv_ah_attr *ah_attr)
{
	(void)context;
	(void)port_num;
	(void)wc;
	(void)grh;
	(void)ah_attr;
	errno = EOPNOTSUPP;
	return -1;
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
				     struct ibv_grh *grh, uint8_t port_num)
{
	(void)pd;
	(void)wc;
	(void)grh;
	(void)port_num;
	NOT_SUPPORTED_PTR();
}

int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp;
	(void)gid;
	(void)lid;
	return EOPNOTSUPP;
}

int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp;
	(void)gid;
	(void)lid;
	return EOPNOTSUPP;
}

/* RoCE's address resolution; an iWARP GID is no Ethernet address */
int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
				struct ibv_ah_attr *attr, uint8_t eth_mac[6],
				uint16_t *vid);
int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
				struct ibv_ah_attr *attr, uint8_t eth_mac[6],
				uint16_t *vid)
{
	(void)context;
	(void)attr;
	(void)eth_mac;
	(void)vid;
	return EOPNOTSUPP;
}

/*
 * No asynchronous event is generated yet (a QP's failure shows in its
 * completions and its rdma_cm events): the descriptor never becomes
 * readable, and a wait on it lasts until a signal, as on an idle device.
 */
int ibv_get_async_event(struct ibv_context *context,
			struct ibv_async_event *event)
{
	struct pollfd p;
	int fl;

	if (!context || !event) {
		errno = EINVAL;
		return -1;
	}
	p = (struct pollfd){ context->async_fd, POLLIN, 0 };
	fl = fcntl(context->async_fd, F_GETFL);
	if (fl < 0)
		return -1;
	if (poll(&p, 1, fl & O_NONBLOCK ? 0 : -1) >= 0)
		errno = EAGAIN;
	return -1;
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	(void)event;
}

struct ibv_context *ibv_import_device(int cmd_fd)
{
	(void)cmd_fd;
	NOT_SUPPORTED_PTR();
}

struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	(void)context;
	(void)pd_handle;
	NOT_SUPPORTED_PTR();
}

void ibv_unimport_pd(struct ibv_pd *pd)
{
	(void)pd;
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	(void)pd;
	(void)mr_handle;
	NOT_SUPPORTED_PTR();
}

void ibv_unimport_mr(struct ibv_mr *mr)
{
	(void)mr;
}

struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	(void)context;
	(void)dm_handle;
	NOT_SUPPORTED_PTR();
}

void ibv_unimport_dm(struct ibv_dm *dm)
{
	(void)dm;
}

int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return EOPNOTSUPP;
}

int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return EOPNOTSUPP;
}

/*
 * Registered memory is neither pinned nor mapped by a device, so a fork
 * needs no care: the child simply has its copy.
 */
int ibv_fork_init(void)
{
	return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

int ibv_dontfork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

int ibv_dofork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}
