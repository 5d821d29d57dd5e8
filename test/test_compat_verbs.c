// SPDX-License-Identifier: MIT
/*
 * libiwarp's libibverbs as an application built against rdma-core's
 * headers sees it: the entry points the inline calls of verbs.h reach
 * (ibv_context.ops and the extended verbs_context), the device and port,
 * the QP state machine, completion channels as real descriptors, and the
 * errors of what iWARP cannot do.  Linked against compat/'s libibverbs,
 * not the system's.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "testutil.h"

struct fix {
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_comp_channel *ch;
	uint8_t buf[4096];
	struct ibv_mr *mr;
};

static void fix_open(struct fix *f, bool channel)
{
	int n = 0;

	memset(f, 0, sizeof(*f));
	f->list = ibv_get_device_list(&n);
	ck_assert_ptr_nonnull(f->list);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(ibv_get_device_name(f->list[0]), "iwarp0");
	f->ctx = ibv_open_device(f->list[0]);
	ck_assert_ptr_nonnull(f->ctx);
	f->pd = ibv_alloc_pd(f->ctx);
	ck_assert_ptr_nonnull(f->pd);
	if (channel) {
		f->ch = ibv_create_comp_channel(f->ctx);
		ck_assert_ptr_nonnull(f->ch);
	}
	f->cq = ibv_create_cq(f->ctx, 64, f, f->ch, 0);
	ck_assert_ptr_nonnull(f->cq);
	f->mr = ibv_reg_mr(f->pd, f->buf, sizeof(f->buf),
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ);
	ck_assert_ptr_nonnull(f->mr);
}

static void fix_close(struct fix *f)
{
	ck_assert_int_eq(ibv_dereg_mr(f->mr), 0);
	ck_assert_int_eq(ibv_destroy_cq(f->cq), 0);
	if (f->ch)
		ck_assert_int_eq(ibv_destroy_comp_channel(f->ch), 0);
	ck_assert_int_eq(ibv_dealloc_pd(f->pd), 0);
	ck_assert_int_eq(ibv_close_device(f->ctx), 0);
	ibv_free_device_list(f->list);
}

static struct ibv_qp *rc_qp(struct fix *f, uint32_t wr)
{
	struct ibv_qp_init_attr a = {
		.send_cq = f->cq, .recv_cq = f->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = wr, .max_recv_wr = wr,
			 .max_send_sge = 2, .max_recv_sge = 2 },
	};
	struct ibv_qp *qp = ibv_create_qp(f->pd, &a);

	ck_assert_ptr_nonnull(qp);
	ck_assert_uint_ge(a.cap.max_send_wr, wr);
	return qp;
}

static int to_state(struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s, .port_num = 1 };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE |
			     (s == IBV_QPS_INIT ? IBV_QP_PORT | IBV_QP_PKEY_INDEX |
						   IBV_QP_ACCESS_FLAGS
						: 0));
}

static enum ibv_qp_state state_of(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	ck_assert_int_eq(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
	ck_assert_int_eq(qp->state, a.qp_state);
	return a.qp_state;
}

/* Exactly @n completions within 5 s. */
static void poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
	int got = 0;

	for (int i = 0; i < 5000 && got < n; i++) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		ck_assert_int_ge(r, 0);
		got += r;
		if (got < n)
			usleep(1000);
	}
	ck_assert_int_eq(got, n);
	ck_assert_int_eq(ibv_poll_cq(cq, 1, wc + n), 0);
}

/* ---- the entry points -------------------------------------------------- */

START_TEST(context_is_an_extended_verbs_context)
{
	struct verbs_context *v;
	struct fix f;

	fix_open(&f, false);
	ck_assert_ptr_eq(f.ctx->abi_compat, __VERBS_ABI_IS_EXTENDED);
	v = verbs_get_ctx(f.ctx);
	ck_assert_ptr_nonnull(v);
	/* right before the ibv_context, sized for rdma-core 44's headers */
	ck_assert_ptr_eq(&v->context, f.ctx);
	ck_assert_uint_eq(v->sz, 648);
	ck_assert_uint_eq(v->sz, sizeof(*v));
	ck_assert_ptr_nonnull(verbs_get_ctx_op(f.ctx, query_port));
	ck_assert_ptr_nonnull(verbs_get_ctx_op(f.ctx, query_device_ex));
	ck_assert_ptr_nonnull(verbs_get_ctx_op(f.ctx, create_cq_ex));
	ck_assert_ptr_nonnull(verbs_get_ctx_op(f.ctx, create_qp_ex));
	ck_assert_ptr_nonnull(verbs_get_ctx_op(f.ctx, create_srq_ex));
	/* what old binaries call through the ops table */
	ck_assert_ptr_eq(f.ctx->ops._compat_query_device, ibv_query_device);
	ck_assert_int_eq(f.ctx->num_comp_vectors, 1);
	ck_assert_int_ge(f.ctx->async_fd, 0);
	fix_close(&f);
}
END_TEST

START_TEST(ops_table_reaches_working_code)
{
	struct ibv_sge sge;
	struct ibv_recv_wr rwr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	struct ibv_wc wc[2];
	struct ibv_qp *qp;
	struct fix f;

	fix_open(&f, false);
	ck_assert_ptr_nonnull(f.ctx->ops.poll_cq);
	ck_assert_ptr_nonnull(f.ctx->ops.req_notify_cq);
	ck_assert_ptr_nonnull(f.ctx->ops.post_send);
	ck_assert_ptr_nonnull(f.ctx->ops.post_recv);
	ck_assert_ptr_nonnull(f.ctx->ops.post_srq_recv);
	qp = rc_qp(&f, 4);
	sge = (struct ibv_sge){ (uintptr_t)f.buf, 64, f.mr->lkey };
	/* through the inline ibv_post_recv() and ibv_poll_cq() */
	ck_assert_int_eq(ibv_post_recv(qp, &rwr, &bad), 0);
	ck_assert_int_eq(ibv_req_notify_cq(f.cq, 0), 0);
	ck_assert_int_eq(ibv_poll_cq(f.cq, 2, wc), 0);
	ck_assert_int_eq(to_state(qp, IBV_QPS_ERR), 0);
	poll_n(f.cq, wc, 1);
	ck_assert_uint_eq(wc[0].wr_id, 7);
	ck_assert_int_eq(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(wc[0].opcode, IBV_WC_RECV);
	ck_assert_uint_eq(wc[0].qp_num, qp->qp_num);
	/* memory windows are not there: clean failures through the table */
	errno = 0;
	ck_assert_ptr_null(ibv_alloc_mw(f.pd, IBV_MW_TYPE_1));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_int_eq(f.ctx->ops.bind_mw(qp, NULL, NULL), EOPNOTSUPP);
	ck_assert_int_eq(f.ctx->ops.dealloc_mw(NULL), EOPNOTSUPP);
	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
	fix_close(&f);
}
END_TEST

/* Every extended entry an application may reach answers EOPNOTSUPP. */
START_TEST(unsupported_extended_calls_fail_cleanly)
{
	struct ibv_xrcd_init_attr xa = { 0 };
	struct ibv_td_init_attr ta = { 0 };
	struct ibv_alloc_dm_attr da = { .length = 64 };
	struct ibv_wq_init_attr wa = { 0 };
	struct ibv_counters_init_attr ca = { 0 };
	struct ibv_values_ex vals = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	struct ibv_flow_attr fa = { .size = sizeof(fa) };
	struct ibv_modify_cq_attr ma = { 0 };
	struct ibv_qp *qp;
	struct fix f;

	fix_open(&f, false);
	qp = rc_qp(&f, 2);
	errno = 0;
	ck_assert_ptr_null(ibv_open_xrcd(f.ctx, &xa));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	errno = 0;
	ck_assert_ptr_null(ibv_alloc_td(f.ctx, &ta));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	errno = 0;
	ck_assert_ptr_null(ibv_alloc_dm(f.ctx, &da));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	errno = 0;
	ck_assert_ptr_null(ibv_create_wq(f.ctx, &wa));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	errno = 0;
	ck_assert_ptr_null(ibv_create_counters(f.ctx, &ca));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	errno = 0;
	ck_assert_ptr_null(ibv_create_flow(qp, &fa));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_int_eq(ibv_query_rt_values_ex(f.ctx, &vals), EOPNOTSUPP);
	ck_assert_int_eq(ibv_modify_cq(f.cq, &ma), EOPNOTSUPP);
	errno = 0;
	ck_assert_ptr_null(ibv_alloc_null_mr(f.pd));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
	fix_close(&f);
}
END_TEST

/* ---- device and port ------------------------------------------------- */

START_TEST(device_and_port_are_an_rnic_on_ethernet)
{
	struct ibv_device_attr_ex dx;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	struct ibv_gid_entry ge;
	__be16 pkey;
	bool lo = false;
	struct fix f;

	fix_open(&f, false);
	ck_assert_int_eq(f.list[0]->node_type, IBV_NODE_RNIC);
	ck_assert_int_eq(f.list[0]->transport_type, IBV_TRANSPORT_IWARP);
	ck_assert_str_eq(f.list[0]->name, "iwarp0");
	ck_assert_int_eq(ibv_query_device_ex(f.ctx, NULL, &dx), 0);
	ck_assert_int_eq(dx.orig_attr.phys_port_cnt, 1);
	ck_assert_int_eq(dx.orig_attr.max_qp_wr, 16384);
	ck_assert_int_eq(dx.orig_attr.max_sge, 32);
	ck_assert_int_eq(dx.orig_attr.max_sge_rd, 1);
	ck_assert_int_eq(dx.orig_attr.atomic_cap, IBV_ATOMIC_NONE);
	ck_assert_int_ge(dx.orig_attr.max_qp_init_rd_atom,
			 dx.orig_attr.max_qp_rd_atom);
	ck_assert(dx.orig_attr.device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS);
	/* the inline call through verbs_context.query_port */
	memset(&pa, 0xa5, sizeof(pa));
	ck_assert_int_eq(ibv_query_port(f.ctx, 1, &pa), 0);
	ck_assert_int_eq(pa.state, IBV_PORT_ACTIVE);
	ck_assert_int_eq(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	ck_assert_int_eq(pa.pkey_tbl_len, 1);
	ck_assert_int_eq(pa.port_cap_flags2, 0);
	ck_assert_int_ge(pa.gid_tbl_len, 1);
	ck_assert_int_ne(ibv_query_port(f.ctx, 2, &pa), 0);
	/* the GIDs: 127.0.0.1 is among them, IPv4-mapped */
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		static const uint8_t want[16] = { [10] = 0xff, [11] = 0xff,
						  [12] = 127, [15] = 1 };

		ck_assert_int_eq(ibv_query_gid(f.ctx, 1, i, &gid), 0);
		lo |= !memcmp(gid.raw, want, 16);
	}
	ck_assert(lo);
	ck_assert_int_eq(ibv_query_gid_ex(f.ctx, 1, 0, &ge, 0), 0);
	ck_assert_int_eq(ge.gid_type, IBV_GID_TYPE_IB);
	ck_assert_int_eq(ibv_query_gid_ex(f.ctx, 1, (uint32_t)pa.gid_tbl_len, &ge,
					  0),
			 ENODATA);
	ck_assert_int_eq(ibv_query_pkey(f.ctx, 1, 0, &pkey), 0);
	ck_assert_uint_eq(ntohs(pkey), 0xffff);
	ck_assert_int_eq(ibv_get_pkey_index(f.ctx, 1, pkey), 0);
	fix_close(&f);
}
END_TEST

/* ---- the QP state machine -------------------------------------------- */

START_TEST(qp_states_follow_the_transitions_applications_drive)
{
	struct ibv_qp *qp;
	struct fix f;

	fix_open(&f, false);
	qp = rc_qp(&f, 4);
	ck_assert_int_eq(state_of(qp), IBV_QPS_RESET);
	/* out of order: refused, and nothing changes */
	ck_assert_int_eq(to_state(qp, IBV_QPS_RTS), EINVAL);
	ck_assert_int_eq(to_state(qp, IBV_QPS_RTR), EINVAL);
	ck_assert_int_eq(state_of(qp), IBV_QPS_RESET);
	ck_assert_int_eq(to_state(qp, IBV_QPS_INIT), 0);
	ck_assert_int_eq(state_of(qp), IBV_QPS_INIT);
	ck_assert_int_eq(to_state(qp, IBV_QPS_RTS), EINVAL);
	ck_assert_int_eq(to_state(qp, IBV_QPS_RTR), 0);
	ck_assert_int_eq(state_of(qp), IBV_QPS_RTR);
	ck_assert_int_eq(to_state(qp, IBV_QPS_RTS), 0);
	ck_assert_int_eq(state_of(qp), IBV_QPS_RTS);
	/* a port other than 1, a P_Key index other than 0 */
	ck_assert_int_eq(ibv_modify_qp(qp, &(struct ibv_qp_attr){ .port_num = 2 },
				       IBV_QP_PORT),
			 EINVAL);
	ck_assert_int_eq(ibv_modify_qp(qp,
				       &(struct ibv_qp_attr){ .cur_qp_state =
								      IBV_QPS_INIT },
				       IBV_QP_CUR_STATE),
			 EINVAL);
	ck_assert_int_eq(to_state(qp, IBV_QPS_ERR), 0);
	ck_assert_int_eq(state_of(qp), IBV_QPS_ERR);
	ck_assert_int_eq(to_state(qp, IBV_QPS_INIT), EINVAL);
	ck_assert_int_eq(to_state(qp, IBV_QPS_RESET), 0);
	ck_assert_int_eq(state_of(qp), IBV_QPS_RESET);
	ck_assert_int_eq(to_state(qp, IBV_QPS_INIT), 0);
	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
	fix_close(&f);
}
END_TEST

/*
 * ERR flushes every posted request once, with its opcode; RESET then
 * gives an empty QP that flushes only what is posted afterwards.
 */
START_TEST(error_flushes_each_request_once_and_reset_starts_afresh)
{
	struct ibv_sge sge;
	struct ibv_recv_wr r[3];
	struct ibv_send_wr s = { .wr_id = 10, .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED };
	struct ibv_recv_wr *rbad;
	struct ibv_send_wr *sbad;
	struct ibv_wc wc[8];
	struct ibv_qp *qp;
	struct fix f;
	int recv = 0, send = 0;

	fix_open(&f, false);
	qp = rc_qp(&f, 4);
	ck_assert_int_eq(to_state(qp, IBV_QPS_INIT), 0);
	sge = (struct ibv_sge){ (uintptr_t)f.buf, 64, f.mr->lkey };
	for (int i = 0; i < 3; i++)
		r[i] = (struct ibv_recv_wr){ .wr_id = (uint64_t)i + 1,
					     .next = i < 2 ? &r[i + 1] : NULL,
					     .sg_list = &sge, .num_sge = 1 };
	ck_assert_int_eq(ibv_post_recv(qp, r, &rbad), 0);
	/* a send waits in INIT for a connection */
	ck_assert_int_eq(ibv_post_send(qp, &s, &sbad), 0);
	ck_assert_int_eq(ibv_poll_cq(f.cq, 8, wc), 0);
	ck_assert_int_eq(to_state(qp, IBV_QPS_ERR), 0);
	poll_n(f.cq, wc, 4);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(wc[i].status, IBV_WC_WR_FLUSH_ERR);
		ck_assert_uint_eq(wc[i].qp_num, qp->qp_num);
		if (wc[i].opcode == IBV_WC_RECV)
			recv |= 1 << wc[i].wr_id;
		else if (wc[i].opcode == IBV_WC_SEND && wc[i].wr_id == 10)
			send++;
	}
	ck_assert_int_eq(recv, 0xe);
	ck_assert_int_eq(send, 1);
	/* posted in ERR: flushed at once */
	ck_assert_int_eq(ibv_post_recv(qp, r + 2, &rbad), 0);
	poll_n(f.cq, wc, 1);
	ck_assert_uint_eq(wc[0].wr_id, 3);
	ck_assert_int_eq(to_state(qp, IBV_QPS_RESET), 0);
	ck_assert_int_eq(to_state(qp, IBV_QPS_INIT), 0);
	ck_assert_int_eq(ibv_post_recv(qp, r + 2, &rbad), 0);
	ck_assert_int_eq(ibv_poll_cq(f.cq, 8, wc), 0);
	ck_assert_int_eq(to_state(qp, IBV_QPS_ERR), 0);
	poll_n(f.cq, wc, 1);
	ck_assert_uint_eq(wc[0].wr_id, 3);
	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
	fix_close(&f);
}
END_TEST

/* ---- completion channels ------------------------------------------------ */

static bool readable(int fd, int ms)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/*
 * The channel's descriptor becomes readable when an armed CQ gets a
 * completion, works with poll and epoll, hands out the CQ and its
 * context once, and is not readable afterwards; non-blocking, an empty
 * channel answers EAGAIN.
 */
START_TEST(completion_channel_is_a_real_descriptor)
{
	struct ibv_sge sge;
	struct ibv_recv_wr r = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct ibv_cq *ecq;
	struct ibv_wc wc;
	struct ibv_qp *qp;
	void *ectx;
	struct fix f;
	int ep;

	fix_open(&f, true);
	ck_assert_int_eq(ibv_destroy_comp_channel(f.ch), EBUSY);
	qp = rc_qp(&f, 4);
	sge = (struct ibv_sge){ (uintptr_t)f.buf, 64, f.mr->lkey };
	ep = epoll_create1(0);
	ck_assert_int_ge(ep, 0);
	ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, f.ch->fd, &ev), 0);
	ck_assert(!readable(f.ch->fd, 0));
	ck_assert_int_eq(ibv_req_notify_cq(f.cq, 0), 0);
	ck_assert_int_eq(ibv_post_recv(qp, &r, &bad), 0);
	ck_assert_int_eq(to_state(qp, IBV_QPS_ERR), 0);
	ck_assert(readable(f.ch->fd, 5000));
	ck_assert_int_eq(epoll_wait(ep, &out, 1, 5000), 1);
	ck_assert_int_eq(ibv_get_cq_event(f.ch, &ecq, &ectx), 0);
	ck_assert_ptr_eq(ecq, f.cq);
	ck_assert_ptr_eq(ectx, &f);
	ck_assert(!readable(f.ch->fd, 50));
	ck_assert_int_eq(epoll_wait(ep, &out, 1, 0), 0);
	ibv_ack_cq_events(f.cq, 1);
	ck_assert_uint_eq(f.cq->comp_events_completed, 1);
	poll_n(f.cq, &wc, 1);
	/* not armed again: a completion raises nothing */
	r.wr_id = 2;
	ck_assert_int_eq(ibv_post_recv(qp, &r, &bad), 0);
	poll_n(f.cq, &wc, 1);
	ck_assert(!readable(f.ch->fd, 50));
	ck_assert_int_eq(fcntl(f.ch->fd, F_SETFL,
			       fcntl(f.ch->fd, F_GETFL) | O_NONBLOCK), 0);
	errno = 0;
	ck_assert_int_eq(ibv_get_cq_event(f.ch, &ecq, &ectx), -1);
	ck_assert_int_eq(errno, EAGAIN);
	close(ep);
	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
	fix_close(&f);
}
END_TEST

/* ---- errors ---------------------------------------------------------------- */

START_TEST(what_iwarp_cannot_do_fails_cleanly)
{
	struct ibv_qp_init_attr ua = { 0 };
	struct ibv_ah_attr aha = { 0 };
	struct ibv_async_event ae;
	union ibv_gid gid = { 0 };
	struct ibv_sge sge, two[2];
	struct ibv_send_wr w, *bad;
	struct ibv_qp *qp;
	struct fix f;
	static const enum ibv_wr_opcode unsupported[] = {
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND_WITH_IMM,
		IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
		IBV_WR_BIND_MW, IBV_WR_TSO, IBV_WR_DRIVER1, IBV_WR_ATOMIC_WRITE,
	};

	fix_open(&f, false);
	/* datagram and unreliable QPs */
	ua = (struct ibv_qp_init_attr){ .send_cq = f.cq, .recv_cq = f.cq,
					.cap = { 1, 1, 1, 1, 0 } };
	for (enum ibv_qp_type t = IBV_QPT_UC; t <= IBV_QPT_UD; t++) {
		ua.qp_type = t;
		errno = 0;
		ck_assert_ptr_null(ibv_create_qp(f.pd, &ua));
		ck_assert_int_eq(errno, EOPNOTSUPP);
	}
	qp = rc_qp(&f, 4);
	sge = (struct ibv_sge){ (uintptr_t)f.buf, 8, f.mr->lkey };
	for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
		w = (struct ibv_send_wr){ .wr_id = i, .sg_list = &sge,
					  .num_sge = 1,
					  .opcode = unsupported[i] };
		bad = NULL;
		ck_assert_int_eq(ibv_post_send(qp, &w, &bad), EOPNOTSUPP);
		ck_assert_ptr_eq(bad, &w);
	}
	/* an iWARP Read names one sink; a bad lkey is refused at once */
	two[0] = two[1] = sge;
	w = (struct ibv_send_wr){ .sg_list = two, .num_sge = 2,
				  .opcode = IBV_WR_RDMA_READ };
	ck_assert_int_eq(ibv_post_send(qp, &w, &bad), EINVAL);
	sge.lkey ^= 0x80;
	w = (struct ibv_send_wr){ .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND };
	ck_assert_int_eq(ibv_post_send(qp, &w, &bad), EINVAL);
	/* remote write needs local write; no on-demand paging */
	errno = 0;
	ck_assert_ptr_null(ibv_reg_mr(f.pd, f.buf, 64, IBV_ACCESS_REMOTE_WRITE));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(ibv_reg_mr(f.pd, f.buf, 64, IBV_ACCESS_ON_DEMAND));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	/* address handles and multicast belong to datagram QPs */
	errno = 0;
	ck_assert_ptr_null(ibv_create_ah(f.pd, &aha));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_int_eq(ibv_attach_mcast(qp, &gid, 0), EOPNOTSUPP);
	ck_assert_int_eq(ibv_detach_mcast(qp, &gid, 0), EOPNOTSUPP);
	/* no asynchronous events yet: a non-blocking wait finds none */
	ck_assert_int_eq(fcntl(f.ctx->async_fd, F_SETFL, O_NONBLOCK), 0);
	errno = 0;
	ck_assert_int_eq(ibv_get_async_event(f.ctx, &ae), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
	/* a CQ in use, a CQ larger than the device takes */
	errno = 0;
	ck_assert_ptr_null(ibv_create_cq(f.ctx, (1 << 22) + 1, NULL, NULL, 0));
	ck_assert_int_eq(errno, EINVAL);
	fix_close(&f);
}
END_TEST

/* The optional access range (relaxed ordering) is accepted and ignored. */
START_TEST(reg_mr_takes_optional_access_and_iova)
{
	struct ibv_mr *mr;
	struct fix f;
	unsigned int access = IBV_ACCESS_LOCAL_WRITE |
			      IBV_ACCESS_RELAXED_ORDERING;

	fix_open(&f, false);
	/* a non-constant access goes through ibv_reg_mr_iova2() */
	mr = ibv_reg_mr(f.pd, f.buf, 128, access);
	ck_assert_ptr_nonnull(mr);
	ck_assert_uint_eq(mr->lkey, mr->rkey);
	ck_assert_ptr_eq(mr->addr, f.buf);
	ck_assert_uint_eq(mr->length, 128);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	mr = ibv_reg_mr_iova2(f.pd, f.buf, 128, 0x1000, access);
	ck_assert_ptr_nonnull(mr);
	ck_assert_int_eq(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
				      NULL, 0,
				      IBV_ACCESS_LOCAL_WRITE |
					      IBV_ACCESS_REMOTE_READ),
			 0);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	fix_close(&f);
}
END_TEST

/*
 * A domain with a region, QP or SRQ left is not freed (EBUSY), as the
 * kernel answers: qperf deallocates its domain before its region and
 * deregisters the region afterwards.
 */
START_TEST(dealloc_pd_refuses_while_its_objects_remain)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr qa;
	struct fix f;

	fix_open(&f, false);
	pd = ibv_alloc_pd(f.ctx);
	ck_assert_ptr_nonnull(pd);
	mr = ibv_reg_mr(pd, f.buf, 64, IBV_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(mr);
	ck_assert_int_eq(ibv_dealloc_pd(pd), EBUSY);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	srq = ibv_create_srq(pd, &sa);
	ck_assert_ptr_nonnull(srq);
	ck_assert_int_eq(ibv_dealloc_pd(pd), EBUSY);
	ck_assert_int_eq(ibv_destroy_srq(srq), 0);
	qa = (struct ibv_qp_init_attr){
		.send_cq = f.cq, .recv_cq = f.cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	qp = ibv_create_qp(pd, &qa);
	ck_assert_ptr_nonnull(qp);
	ck_assert_int_eq(ibv_dealloc_pd(pd), EBUSY);
	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
	ck_assert_int_eq(ibv_dealloc_pd(pd), 0);
	fix_close(&f);
}
END_TEST

/*
 * A request whose lkey does not cover its buffer is bad input, EINVAL,
 * whichever call posts it (compat/ibverbs/errno.c), and names itself.
 */
START_TEST(bad_lkey_is_einval_wherever_it_is_posted)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_qp_init_attr_ex xa = { 0 };
	struct ibv_sge sge;
	struct ibv_send_wr sw, *sbad;
	struct ibv_recv_wr rw, *rbad;
	struct ibv_srq *srq;
	struct ibv_qp *qp, *xqp;
	struct ibv_qp_ex *qx;
	struct fix f;

	fix_open(&f, false);
	qp = rc_qp(&f, 4);
	sge = (struct ibv_sge){ (uintptr_t)f.buf, 64, f.mr->lkey ^ 0x80 };
	sw = (struct ibv_send_wr){ .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND };
	sbad = NULL;
	ck_assert_int_eq(ibv_post_send(qp, &sw, &sbad), EINVAL);
	ck_assert_ptr_eq(sbad, &sw);
	rw = (struct ibv_recv_wr){ .sg_list = &sge, .num_sge = 1 };
	rbad = NULL;
	ck_assert_int_eq(ibv_post_recv(qp, &rw, &rbad), EINVAL);
	ck_assert_ptr_eq(rbad, &rw);
	srq = ibv_create_srq(f.pd, &sa);
	ck_assert_ptr_nonnull(srq);
	rbad = NULL;
	ck_assert_int_eq(ibv_post_srq_recv(srq, &rw, &rbad), EINVAL);
	ck_assert_ptr_eq(rbad, &rw);
	/* the same through the extended QP's ibv_wr_* batch */
	xa = (struct ibv_qp_init_attr_ex){
		.send_cq = f.cq, .recv_cq = f.cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = f.pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND,
	};
	xqp = ibv_create_qp_ex(f.ctx, &xa);
	ck_assert_ptr_nonnull(xqp);
	qx = ibv_qp_to_qp_ex(xqp);
	ck_assert_ptr_nonnull(qx);
	ibv_wr_start(qx);
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, sge.lkey, sge.addr, sge.length);
	ck_assert_int_eq(ibv_wr_complete(qx), EINVAL);
	ck_assert_int_eq(ibv_destroy_qp(xqp), 0);
	ck_assert_int_eq(ibv_destroy_srq(srq), 0);
	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
	fix_close(&f);
}
END_TEST

static Suite *compat_verbs_suite(void)
{
	Suite *s = suite_create("compat_verbs");
	TCase *tc = tcase_create("entry_points");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, context_is_an_extended_verbs_context);
	tcase_add_test(tc, ops_table_reaches_working_code);
	tcase_add_test(tc, unsupported_extended_calls_fail_cleanly);
	tcase_add_test(tc, device_and_port_are_an_rnic_on_ethernet);
	suite_add_tcase(s, tc);
	tc = tcase_create("qp_states");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, qp_states_follow_the_transitions_applications_drive);
	tcase_add_test(tc, error_flushes_each_request_once_and_reset_starts_afresh);
	suite_add_tcase(s, tc);
	tc = tcase_create("channels");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, completion_channel_is_a_real_descriptor);
	suite_add_tcase(s, tc);
	tc = tcase_create("errors");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, what_iwarp_cannot_do_fails_cleanly);
	tcase_add_test(tc, bad_lkey_is_einval_wherever_it_is_posted);
	tcase_add_test(tc, reg_mr_takes_optional_access_and_iova);
	tcase_add_test(tc, dealloc_pd_refuses_while_its_objects_remain);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(compat_verbs_suite());
}
