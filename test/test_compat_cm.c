// SPDX-License-Identifier: MIT
/*
 * libiwarp's librdmacm and libibverbs together, as an application built
 * against rdma-core's headers drives them over 127.0.0.1: connections and
 * their events (with the kernel iWARP CM's statuses), every opcode and
 * flag the data path takes with the data verified, the wr_* builders,
 * extended CQs, synchronous endpoints, binding, event channels and the
 * calls that iWARP does not have.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#include "testutil.h"

#define WAIT_MS 10000
#define BUF 65536

struct side {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
};

struct pair {
	struct side c, s;
	struct rdma_cm_id *listen;
	uint16_t port;
};

/* The next event on @ch within WAIT_MS, or the test fails. */
static struct rdma_cm_event *next_event(struct rdma_event_channel *ch)
{
	struct pollfd p = { ch->fd, POLLIN, 0 };
	struct rdma_cm_event *e;

	require(poll(&p, 1, WAIT_MS) == 1, "no CM event within %d ms", WAIT_MS);
	ck_assert_int_eq(rdma_get_cm_event(ch, &e), 0);
	return e;
}

/* Takes the next event, checks its type and status, acknowledges it. */
static void expect(struct rdma_event_channel *ch, enum rdma_cm_event_type t,
		   int status)
{
	struct rdma_cm_event *e = next_event(ch);

	ck_assert_msg(e->event == t, "event %s (status %d), wanted %s",
		      rdma_event_str(e->event), e->status, rdma_event_str(t));
	ck_assert_int_eq(e->status, status);
	ck_assert_int_eq(rdma_ack_cm_event(e), 0);
}

static void side_qp(struct side *s, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 2, .max_recv_sge = 2,
			 .max_inline_data = 64 },
	};

	s->id = id;
	s->pd = ibv_alloc_pd(id->verbs);
	ck_assert_ptr_nonnull(s->pd);
	s->cq = ibv_create_cq(id->verbs, 64, s, NULL, 0);
	ck_assert_ptr_nonnull(s->cq);
	a.send_cq = a.recv_cq = s->cq;
	ck_assert_int_eq(rdma_create_qp(id, s->pd, &a), 0);
	ck_assert_ptr_nonnull(id->qp);
	s->buf = calloc(1, BUF);
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ);
	ck_assert_ptr_nonnull(s->mr);
}

static void side_free(struct side *s)
{
	if (s->id) {
		rdma_destroy_qp(s->id);
		ck_assert_int_eq(rdma_destroy_id(s->id), 0);
	}
	if (s->mr)
		ck_assert_int_eq(ibv_dereg_mr(s->mr), 0);
	if (s->cq)
		ck_assert_int_eq(ibv_destroy_cq(s->cq), 0);
	if (s->pd)
		ck_assert_int_eq(ibv_dealloc_pd(s->pd), 0);
	free(s->buf);
	rdma_destroy_event_channel(s->ch);
}

/* A listener on 127.0.0.1, port chosen by the kernel. */
static void listen_on(struct pair *p)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	p->s.ch = rdma_create_event_channel();
	ck_assert_ptr_nonnull(p->s.ch);
	ck_assert_int_eq(rdma_create_id(p->s.ch, &p->listen, p, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_bind_addr(p->listen, (struct sockaddr *)&a), 0);
	p->port = ntohs(rdma_get_src_port(p->listen));
	ck_assert_uint_ne(p->port, 0);
	ck_assert_int_eq(rdma_listen(p->listen, 8), 0);
	ck_assert_uint_eq(ntohs(rdma_get_src_port(p->listen)), p->port);
}

/* The client side up to a resolved route, with its QP. */
static void client_start(struct pair *p, uint16_t port)
{
	struct sockaddr_in d = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct rdma_cm_id *id;

	p->c.ch = rdma_create_event_channel();
	ck_assert_ptr_nonnull(p->c.ch);
	ck_assert_int_eq(rdma_create_id(p->c.ch, &id, p, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d,
					   2000), 0);
	expect(p->c.ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	ck_assert_ptr_nonnull(id->verbs);
	ck_assert_ptr_nonnull(id->pd);
	ck_assert_int_eq(rdma_resolve_route(id, 2000), 0);
	expect(p->c.ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	side_qp(&p->c, id);
}

/* A listener and a client that connects to it: the server's request. */
static struct rdma_cm_event *connect_request(struct pair *p)
{
	struct rdma_cm_event *e;

	memset(p, 0, sizeof(*p));
	listen_on(p);
	client_start(p, p->port);
	ck_assert_int_eq(rdma_connect(p->c.id, NULL), 0);
	e = next_event(p->s.ch);
	ck_assert_int_eq(e->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	return e;
}

/*
 * A connected pair: the request carries the client's private data and
 * Read depths, both sides see ESTABLISHED with their addresses filled.
 */
static void connect_pair(struct pair *p)
{
	struct rdma_conn_param cp = { .private_data = "hello", .private_data_len = 5,
				      .responder_resources = 4,
				      .initiator_depth = 4 };
	struct rdma_cm_event *e;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;

	memset(p, 0, sizeof(*p));
	listen_on(p);
	client_start(p, p->port);
	ck_assert_int_eq(ibv_query_qp(p->c.id->qp, &qa, IBV_QP_STATE, &qia), 0);
	ck_assert_int_eq(qa.qp_state, IBV_QPS_INIT);
	ck_assert_int_eq(rdma_connect(p->c.id, &cp), 0);
	e = next_event(p->s.ch);
	ck_assert_int_eq(e->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	ck_assert_ptr_eq(e->listen_id, p->listen);
	ck_assert_ptr_eq(e->id->context, p);
	ck_assert_uint_eq(e->param.conn.private_data_len, 5);
	ck_assert_mem_eq(e->param.conn.private_data, "hello", 5);
	ck_assert_uint_eq(e->param.conn.initiator_depth, 4);
	ck_assert_uint_eq(e->param.conn.responder_resources, 4);
	ck_assert_uint_eq(ntohs(rdma_get_src_port(e->id)), p->port);
	side_qp(&p->s, e->id);
	ck_assert_int_eq(rdma_ack_cm_event(e), 0);
	cp.private_data = "welcome";
	cp.private_data_len = 7;
	ck_assert_int_eq(rdma_accept(p->s.id, &cp), 0);
	expect(p->s.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	e = next_event(p->c.ch);
	ck_assert_int_eq(e->event, RDMA_CM_EVENT_ESTABLISHED);
	ck_assert_uint_eq(e->param.conn.private_data_len, 7);
	ck_assert_mem_eq(e->param.conn.private_data, "welcome", 7);
	ck_assert_int_eq(rdma_ack_cm_event(e), 0);
	ck_assert_uint_eq(ntohs(rdma_get_dst_port(p->c.id)), p->port);
	ck_assert_int_eq(ibv_query_qp(p->c.id->qp, &qa, IBV_QP_STATE, &qia), 0);
	ck_assert_int_eq(qa.qp_state, IBV_QPS_RTS);
	ck_assert_uint_eq(qa.max_rd_atomic, 4);
}

static void pair_free(struct pair *p)
{
	side_free(&p->c);
	ck_assert_int_eq(rdma_destroy_id(p->listen), 0);
	side_free(&p->s);
}

/* The client ends the connection, both sides see it end, the pair goes. */
static void pair_disconnect_free(struct pair *p)
{
	ck_assert_int_eq(rdma_disconnect(p->c.id), 0);
	expect(p->c.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	expect(p->s.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	pair_free(p);
}

static void poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
	int got = 0;

	for (int i = 0; i < WAIT_MS && got < n; i++) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		ck_assert_int_ge(r, 0);
		got += r;
		if (got < n)
			usleep(1000);
	}
	ck_assert_int_eq(got, n);
}

static void wc_ok(const struct ibv_wc *wc, uint64_t id,
		  enum ibv_wc_opcode op, uint32_t len)
{
	ck_assert_msg(wc->status == IBV_WC_SUCCESS, "wr %lu: %s",
		      (unsigned long)wc->wr_id, ibv_wc_status_str(wc->status));
	ck_assert_uint_eq(wc->wr_id, id);
	ck_assert_int_eq(wc->opcode, op);
	if (op == IBV_WC_RECV || op == IBV_WC_RDMA_READ)
		ck_assert_uint_eq(wc->byte_len, len);
}

static void post_recv(struct side *s, uint64_t id, size_t off, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)s->buf + off, len, s->mr->lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &sge, .num_sge = 1 },
			   *bad;

	ck_assert_int_eq(ibv_post_recv(s->id->qp, &w, &bad), 0);
}

static void post(struct side *s, struct ibv_send_wr *w)
{
	struct ibv_send_wr *bad = NULL;

	ck_assert_int_eq(ibv_post_send(s->id->qp, w, &bad), 0);
}

/* ---- the data path ------------------------------------------------------ */

/*
 * Send (scattered over two buffers, solicited), inline Send, RDMA Write
 * and Read with their data verified, an unsignaled Write retired by the
 * signaled Send behind it, a fenced Send behind a Read, Send with
 * Invalidate (IBV_WC_WITH_INV and the rkey) and local invalidate.
 */
START_TEST(every_opcode_and_flag_moves_verified_data)
{
	struct pair p;
	struct ibv_sge sg[2];
	struct ibv_wc wc[4];
	struct ibv_send_wr w, w2;
	struct ibv_mr *target;
	struct rng r;

	rng_seed(&r, "compat opcodes", 7);
	connect_pair(&p);
	rng_fill(&r, p.c.buf, BUF);

	/* Send of 3000 octets from two pieces, solicited */
	post_recv(&p.s, 1, 0, 4096);
	sg[0] = (struct ibv_sge){ (uintptr_t)p.c.buf, 1000, p.c.mr->lkey };
	sg[1] = (struct ibv_sge){ (uintptr_t)p.c.buf + 2000, 2000, p.c.mr->lkey };
	w = (struct ibv_send_wr){ .wr_id = 2, .sg_list = sg, .num_sge = 2,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED |
						IBV_SEND_SOLICITED };
	post(&p.c, &w);
	poll_n(p.c.cq, wc, 1);
	wc_ok(wc, 2, IBV_WC_SEND, 3000);
	ck_assert_uint_eq(wc[0].qp_num, p.c.id->qp->qp_num);
	poll_n(p.s.cq, wc, 1);
	wc_ok(wc, 1, IBV_WC_RECV, 3000);
	ck_assert_uint_eq(wc[0].qp_num, p.s.id->qp->qp_num);
	ck_assert_int_eq(wc[0].wc_flags & IBV_WC_WITH_INV, 0);
	ck_assert_mem_eq(p.s.buf, p.c.buf, 1000);
	ck_assert_mem_eq(p.s.buf + 1000, p.c.buf + 2000, 2000);

	/* an unsignaled Write of 40000 octets, then an inline Send: only
	 * the Send completes, and once it is in, so is the Write */
	post_recv(&p.s, 3, 0, 64);
	sg[0] = (struct ibv_sge){ (uintptr_t)p.c.buf, 40000, p.c.mr->lkey };
	w = (struct ibv_send_wr){ .wr_id = 4, .sg_list = sg, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .wr.rdma = { (uintptr_t)p.s.buf + 8192,
					       p.s.mr->rkey },
				  .next = &w2 };
	sg[1] = (struct ibv_sge){ (uintptr_t)"inline!", 7, 0 };
	w2 = (struct ibv_send_wr){ .wr_id = 5, .sg_list = sg + 1, .num_sge = 1,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED |
						 IBV_SEND_INLINE };
	post(&p.c, &w);
	poll_n(p.c.cq, wc, 1);
	wc_ok(wc, 5, IBV_WC_SEND, 7);
	poll_n(p.s.cq, wc, 1);
	wc_ok(wc, 3, IBV_WC_RECV, 7);
	ck_assert_mem_eq(p.s.buf, "inline!", 7);
	ck_assert_mem_eq(p.s.buf + 8192, p.c.buf, 40000);

	/* a Read of 15000 octets, and a fenced Send behind it */
	memset(p.c.buf + 50000, 0, 15000);
	post_recv(&p.s, 6, 0, 64);
	sg[0] = (struct ibv_sge){ (uintptr_t)p.c.buf + 50000, 15000,
				  p.c.mr->lkey };
	w = (struct ibv_send_wr){ .wr_id = 7, .sg_list = sg, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_READ,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { (uintptr_t)p.s.buf + 8192,
					       p.s.mr->rkey },
				  .next = &w2 };
	w2.wr_id = 8;
	w2.send_flags |= IBV_SEND_FENCE;
	post(&p.c, &w);
	poll_n(p.c.cq, wc, 2);
	wc_ok(wc, 7, IBV_WC_RDMA_READ, 15000);
	wc_ok(wc + 1, 8, IBV_WC_SEND, 7);
	ck_assert_mem_eq(p.c.buf + 50000, p.s.buf + 8192, 15000);
	poll_n(p.s.cq, wc, 1);
	wc_ok(wc, 6, IBV_WC_RECV, 7);

	/* Send with Invalidate of a server region */
	target = ibv_reg_mr(p.s.pd, p.s.buf + 60000, 1000,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ck_assert_ptr_nonnull(target);
	post_recv(&p.s, 9, 0, 64);
	w = (struct ibv_send_wr){ .wr_id = 10, .sg_list = sg + 1, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_INV,
				  .send_flags = IBV_SEND_SIGNALED |
						IBV_SEND_INLINE,
				  .invalidate_rkey = target->rkey };
	post(&p.c, &w);
	poll_n(p.c.cq, wc, 1);
	wc_ok(wc, 10, IBV_WC_SEND, 7);
	poll_n(p.s.cq, wc, 1);
	wc_ok(wc, 9, IBV_WC_RECV, 7);
	ck_assert(wc[0].wc_flags & IBV_WC_WITH_INV);
	ck_assert_uint_eq(wc[0].invalidated_rkey, target->rkey);
	ck_assert_int_eq(ibv_dereg_mr(target), 0);

	/* local invalidate of a client region */
	target = ibv_reg_mr(p.c.pd, p.c.buf, 100, IBV_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(target);
	w = (struct ibv_send_wr){ .wr_id = 11, .opcode = IBV_WR_LOCAL_INV,
				  .send_flags = IBV_SEND_SIGNALED,
				  .invalidate_rkey = target->lkey };
	post(&p.c, &w);
	poll_n(p.c.cq, wc, 1);
	wc_ok(wc, 11, IBV_WC_LOCAL_INV, 0);
	/* its lkey is refused from now on */
	sg[0] = (struct ibv_sge){ (uintptr_t)p.c.buf, 10, target->lkey };
	w = (struct ibv_send_wr){ .wr_id = 12, .sg_list = sg, .num_sge = 1,
				  .opcode = IBV_WR_SEND };
	{
		struct ibv_send_wr *bad;

		ck_assert_int_eq(ibv_post_send(p.c.id->qp, &w, &bad), EINVAL);
	}
	ck_assert_int_eq(ibv_dereg_mr(target), 0);

	pair_disconnect_free(&p);
}
END_TEST

/* The wr_* builders of ibv_qp_ex, and ibv_start_poll() on a cq_ex. */
START_TEST(qp_ex_builders_and_cq_ex_polling)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 32, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM,
	};
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_sge list[2];
	struct ibv_cq_ex *cqx;
	struct ibv_qp_ex *qx;
	struct ibv_wc wc[2];
	struct pair p;
	int n;

	connect_pair(&p);
	cqx = ibv_create_cq_ex(p.c.id->verbs, &ca);
	ck_assert_ptr_nonnull(cqx);
	ca.wc_flags |= IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	errno = 0;
	ck_assert_ptr_null(ibv_create_cq_ex(p.c.id->verbs, &ca));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_int_eq(ibv_start_poll(cqx, &pa), ENOENT);
	ck_assert_int_eq(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);

	qx = ibv_qp_to_qp_ex(p.c.id->qp);
	ck_assert_ptr_nonnull(qx);
	memcpy(p.c.buf, "built by wr_*", 13);
	post_recv(&p.s, 1, 0, 64);
	post_recv(&p.s, 2, 64, 64);
	ibv_wr_start(qx);
	qx->wr_id = 20;
	qx->wr_flags = 0;
	ibv_wr_rdma_write(qx, p.s.mr->rkey, (uintptr_t)p.s.buf + 4096);
	list[0] = (struct ibv_sge){ (uintptr_t)p.c.buf, 7, p.c.mr->lkey };
	list[1] = (struct ibv_sge){ (uintptr_t)p.c.buf + 7, 6, p.c.mr->lkey };
	ibv_wr_set_sge_list(qx, 2, list);
	qx->wr_id = 21;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	{
		char text[] = "inline";

		ibv_wr_set_inline_data(qx, text, 6);
	}
	qx->wr_id = 22;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, p.c.mr->lkey, (uintptr_t)p.c.buf, 13);
	ck_assert_int_eq(ibv_wr_complete(qx), 0);
	poll_n(p.c.cq, wc, 2);
	wc_ok(wc, 21, IBV_WC_SEND, 6);
	wc_ok(wc + 1, 22, IBV_WC_SEND, 13);
	poll_n(p.s.cq, wc, 2);
	wc_ok(wc, 1, IBV_WC_RECV, 6);
	wc_ok(wc + 1, 2, IBV_WC_RECV, 13);
	ck_assert_mem_eq(p.s.buf, "inline", 6);
	ck_assert_mem_eq(p.s.buf + 64, "built by wr_*", 13);
	ck_assert_mem_eq(p.s.buf + 4096, "built by wr_*", 13);

	/* an atomic in the batch fails it whole: nothing is posted */
	ibv_wr_start(qx);
	qx->wr_id = 30;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, p.c.mr->lkey, (uintptr_t)p.c.buf, 4);
	ibv_wr_atomic_fetch_add(qx, p.s.mr->rkey, (uintptr_t)p.s.buf, 1);
	ck_assert_int_eq(ibv_wr_complete(qx), EOPNOTSUPP);
	usleep(100000);
	ck_assert_int_eq(ibv_poll_cq(p.c.cq, 2, wc), 0);
	n = ibv_poll_cq(p.s.cq, 2, wc);
	ck_assert_int_eq(n, 0);

	/* cq_ex polling of real completions */
	pair_disconnect_free(&p);
}
END_TEST

/*
 * RFC 7306 through ibverbs, with IWARP_RFC7306=1 as iwarp-run --rfc7306
 * sets it: the device says it has atomics; Fetch and Add, Compare and
 * Swap, RDMA Write with Immediate Data and Send with Immediate Data move
 * their values, and the 4 octets of ibverbs' immediate data come back as
 * they were sent.  Without it the device has none and QPs refuse them.
 */
START_TEST(rfc7306_atomics_and_immediate_data_with_iwarp_rfc7306)
{
	static _Alignas(8) uint64_t counter[2] = { 40, 7 };
	struct ibv_device_attr da;
	struct ibv_device **list;
	struct ibv_context *plain;
	struct ibv_send_wr w, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc[2];
	struct ibv_mr *amr;
	uint64_t *res;
	struct pair p;
	int n;

	list = ibv_get_device_list(&n);
	ck_assert_ptr_nonnull(list);
	unsetenv("IWARP_RFC7306");
	plain = ibv_open_device(list[0]);
	ck_assert_ptr_nonnull(plain);
	ck_assert_int_eq(ibv_query_device(plain, &da), 0);
	ck_assert_int_eq(da.atomic_cap, IBV_ATOMIC_NONE);
	ck_assert_int_eq(ibv_close_device(plain), 0);
	ibv_free_device_list(list);

	ck_assert_int_eq(setenv("IWARP_RFC7306", "1", 1), 0);
	connect_pair(&p);
	ck_assert_int_eq(ibv_query_device(p.c.id->verbs, &da), 0);
	ck_assert_int_eq(da.atomic_cap, IBV_ATOMIC_HCA);
	amr = ibv_reg_mr(p.s.pd, counter, sizeof(counter),
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	ck_assert_ptr_nonnull(amr);
	res = (uint64_t *)(void *)p.c.buf;

	/* Fetch and Add, then Compare and Swap on the next integer */
	sge = (struct ibv_sge){ (uintptr_t)res, 8, p.c.mr->lkey };
	w = (struct ibv_send_wr){ .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				  .send_flags = IBV_SEND_SIGNALED };
	w.wr.atomic.remote_addr = (uintptr_t)&counter[0];
	w.wr.atomic.rkey = amr->rkey;
	w.wr.atomic.compare_add = 2;
	post(&p.c, &w);
	poll_n(p.c.cq, wc, 1);
	wc_ok(wc, 1, IBV_WC_FETCH_ADD, 8);
	ck_assert_uint_eq(*res, 40);
	ck_assert_uint_eq(counter[0], 42);
	w.wr_id = 2;
	w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	w.wr.atomic.remote_addr = (uintptr_t)&counter[1];
	w.wr.atomic.compare_add = 7;
	w.wr.atomic.swap = 70;
	post(&p.c, &w);
	poll_n(p.c.cq, wc, 1);
	wc_ok(wc, 2, IBV_WC_COMP_SWAP, 8);
	ck_assert_uint_eq(*res, 7);
	ck_assert_uint_eq(counter[1], 70);

	/* Write with Immediate Data, then Immediate Data alone */
	post_recv(&p.s, 10, 0, 64);
	post_recv(&p.s, 11, 64, 64);
	memcpy(p.c.buf + 256, "written, then told", 18);
	sge = (struct ibv_sge){ (uintptr_t)p.c.buf + 256, 18, p.c.mr->lkey };
	w = (struct ibv_send_wr){ .wr_id = 3, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED,
				  .imm_data = htonl(0x12345678) };
	w.wr.rdma.remote_addr = (uintptr_t)p.s.buf + 8192;
	w.wr.rdma.rkey = p.s.mr->rkey;
	post(&p.c, &w);
	w = (struct ibv_send_wr){ .wr_id = 4,
				  .opcode = IBV_WR_SEND_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED |
						IBV_SEND_SOLICITED,
				  .imm_data = htonl(0xcafe) };
	post(&p.c, &w);
	poll_n(p.c.cq, wc, 2);
	wc_ok(wc, 3, IBV_WC_RDMA_WRITE, 18);
	wc_ok(wc + 1, 4, IBV_WC_SEND, 0);
	poll_n(p.s.cq, wc, 2);
	ck_assert_uint_eq(wc[0].wr_id, 10);
	ck_assert_int_eq(wc[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	ck_assert(wc[0].wc_flags & IBV_WC_WITH_IMM);
	ck_assert_uint_eq(wc[0].imm_data, htonl(0x12345678));
	ck_assert_uint_eq(wc[0].byte_len, 18);
	ck_assert_mem_eq(p.s.buf + 8192, "written, then told", 18);
	ck_assert_uint_eq(wc[1].wr_id, 11);
	ck_assert_int_eq(wc[1].opcode, IBV_WC_RECV);
	ck_assert(wc[1].wc_flags & IBV_WC_WITH_IMM);
	ck_assert_uint_eq(wc[1].imm_data, htonl(0xcafe));
	ck_assert_uint_eq(wc[1].byte_len, 0);

	/* a Send with Immediate Data carries no payload on iWARP */
	sge = (struct ibv_sge){ (uintptr_t)p.c.buf, 4, p.c.mr->lkey };
	w = (struct ibv_send_wr){ .wr_id = 5, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_IMM };
	ck_assert_int_eq(ibv_post_send(p.c.id->qp, &w, &bad), EINVAL);
	ck_assert_ptr_eq(bad, &w);

	ck_assert_int_eq(ibv_dereg_mr(amr), 0);
	pair_disconnect_free(&p);
}
END_TEST

/* Without IWARP_RFC7306 a QP refuses them when they are posted. */
START_TEST(without_iwarp_rfc7306_atomics_are_refused)
{
	struct ibv_send_wr w = { .wr_id = 1, .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD },
			   *bad = NULL;
	struct ibv_sge sge;
	struct pair p;

	unsetenv("IWARP_RFC7306");
	connect_pair(&p);
	sge = (struct ibv_sge){ (uintptr_t)p.c.buf, 8, p.c.mr->lkey };
	w.sg_list = &sge;
	w.num_sge = 1;
	w.wr.atomic.remote_addr = (uintptr_t)p.s.buf;
	w.wr.atomic.rkey = p.s.mr->rkey;
	ck_assert_int_eq(ibv_post_send(p.c.id->qp, &w, &bad), EOPNOTSUPP);
	ck_assert_ptr_eq(bad, &w);
	w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	ck_assert_int_eq(ibv_post_send(p.c.id->qp, &w, &bad), EOPNOTSUPP);
	pair_disconnect_free(&p);
}
END_TEST

/* Completions read through ibv_start_poll()/ibv_next_poll(). */
START_TEST(cq_ex_reads_what_ibv_poll_cq_would)
{
	struct ibv_context **devs = rdma_get_devices(NULL);
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 8, .wc_flags = IBV_WC_STANDARD_FLAGS,
	};
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { 4, 4, 1, 1, 0 } };
	struct ibv_poll_cq_attr pa = { 0 };
	uint8_t buf[64];
	struct ibv_sge sge;
	struct ibv_recv_wr r[2], *bad;
	struct ibv_qp_attr to_err = { .qp_state = IBV_QPS_ERR };
	struct ibv_cq_ex *cqx;
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	struct ibv_qp *qp;
	int n = 0;

	ck_assert_ptr_nonnull(devs);
	pd = ibv_alloc_pd(devs[0]);
	cqx = ibv_create_cq_ex(devs[0], &ca);
	ck_assert_ptr_nonnull(cqx);
	qa.send_cq = qa.recv_cq = ibv_cq_ex_to_cq(cqx);
	qp = ibv_create_qp(pd, &qa);
	ck_assert_ptr_nonnull(qp);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	sge = (struct ibv_sge){ (uintptr_t)buf, 64, mr->lkey };
	r[0] = (struct ibv_recv_wr){ .wr_id = 40, .next = &r[1],
				     .sg_list = &sge, .num_sge = 1 };
	r[1] = (struct ibv_recv_wr){ .wr_id = 41, .sg_list = &sge, .num_sge = 1 };
	ck_assert_int_eq(ibv_post_recv(qp, r, &bad), 0);
	ck_assert_int_eq(ibv_modify_qp(qp, &to_err, IBV_QP_STATE), 0);
	usleep(10000);
	ck_assert_int_eq(ibv_start_poll(cqx, &pa), 0);
	do {
		ck_assert_uint_eq(cqx->wr_id, 40 + (uint64_t)n);
		ck_assert_int_eq(cqx->status, IBV_WC_WR_FLUSH_ERR);
		ck_assert_int_eq(ibv_wc_read_opcode(cqx), IBV_WC_RECV);
		ck_assert_uint_eq(ibv_wc_read_qp_num(cqx), qp->qp_num);
		ck_assert_uint_ne(ibv_wc_read_vendor_err(cqx), 0);
		n++;
	} while (ibv_next_poll(cqx) == 0);
	ibv_end_poll(cqx);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(ibv_start_poll(cqx, &pa), ENOENT);
	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	ck_assert_int_eq(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);
	ck_assert_int_eq(ibv_dealloc_pd(pd), 0);
	rdma_free_devices(devs);
}
END_TEST

/* ---- connection events ------------------------------------------------------ */

/* Nothing listens: REJECTED with -ECONNREFUSED, as an RNIC reports a reset. */
START_TEST(connect_to_a_closed_port_is_rejected)
{
	struct pair p;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);

	/* a port that was free a moment ago */
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &l), 0);
	close(fd);
	memset(&p, 0, sizeof(p));
	client_start(&p, ntohs(a.sin_port));
	ck_assert_int_eq(rdma_connect(p.c.id, NULL), 0);
	expect(p.c.ch, RDMA_CM_EVENT_REJECTED, -ECONNREFUSED);
	side_free(&p.c);
}
END_TEST

/*
 * The server binds, and listens only 1.5 s after the client connects
 * (perftest's data connection races so, and a loaded or emulated server
 * takes that long): a client that has posted nothing is connected once
 * the server listens; one that has posted a receive is told of the
 * refusal at once, and its receive flushed.
 */
START_TEST(a_refused_connection_is_tried_again_until_the_server_listens)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	bool posted = _i;
	struct rdma_cm_event *e;
	struct ibv_wc wc;
	struct pair p;

	memset(&p, 0, sizeof(p));
	p.s.ch = rdma_create_event_channel();
	ck_assert_ptr_nonnull(p.s.ch);
	ck_assert_int_eq(rdma_create_id(p.s.ch, &p.listen, &p, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_bind_addr(p.listen, (struct sockaddr *)&a), 0);
	p.port = ntohs(rdma_get_src_port(p.listen));
	client_start(&p, p.port);
	if (posted)
		post_recv(&p.c, 1, 0, 64);
	ck_assert_int_eq(rdma_connect(p.c.id, NULL), 0);
	usleep(1500 * 1000);
	ck_assert_int_eq(rdma_listen(p.listen, 1), 0);
	if (posted) {
		expect(p.c.ch, RDMA_CM_EVENT_REJECTED, -ECONNREFUSED);
		poll_n(p.c.cq, &wc, 1);
		ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
		side_free(&p.c);
		ck_assert_int_eq(rdma_destroy_id(p.listen), 0);
		rdma_destroy_event_channel(p.s.ch);
		return;
	}
	e = next_event(p.s.ch);
	ck_assert_int_eq(e->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	side_qp(&p.s, e->id);
	ck_assert_int_eq(rdma_ack_cm_event(e), 0);
	ck_assert_int_eq(rdma_accept(p.s.id, NULL), 0);
	expect(p.s.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	expect(p.c.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	/* the QP behind the retried connection moves data */
	post_recv(&p.s, 2, 0, 64);
	{
		struct ibv_sge sg = { (uintptr_t)p.c.buf, 16, p.c.mr->lkey };
		struct ibv_send_wr w = { .wr_id = 3, .sg_list = &sg,
					 .num_sge = 1, .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED };

		post(&p.c, &w);
	}
	poll_n(p.c.cq, &wc, 1);
	wc_ok(&wc, 3, IBV_WC_SEND, 16);
	poll_n(p.s.cq, &wc, 1);
	wc_ok(&wc, 2, IBV_WC_RECV, 16);
	pair_disconnect_free(&p);
}
END_TEST

static long long ms_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* Reads @fd until its peer has closed it; false if it stays open. */
static bool stream_ends(int fd)
{
	char buf[512];

	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t n;

		if (poll(&p, 1, WAIT_MS) != 1)
			return false;
		n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			return true;
	}
}

/*
 * A peer takes the TCP connection and never answers the MPA Request
 * (Linux siw's listener drops a connection that arrives while it is
 * still being set up): after the 10 s siw's own initiator gives the
 * Reply, UNREACHABLE with -ETIMEDOUT, the posted receive flushed once,
 * the stream closed.  Then the application tears everything down and
 * tries again on new objects, as perftest's retry does, once with
 * rdma_destroy_qp() first and once destroying the identifier before
 * its QP; the new connection moves data.
 */
START_TEST(an_unanswered_request_is_unreachable_and_a_new_try_connects)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	int silent = socket(AF_INET, SOCK_STREAM, 0);
	struct pair p[2], q;
	struct rdma_cm_event *e;
	struct ibv_wc wc[2];
	long long t0, waited;

	ck_assert_int_ge(silent, 0);
	ck_assert_int_eq(bind(silent, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(silent, 4), 0);
	ck_assert_int_eq(getsockname(silent, (struct sockaddr *)&a, &l), 0);
	t0 = ms_now();
	for (int i = 0; i < 2; i++) {
		memset(&p[i], 0, sizeof(p[i]));
		client_start(&p[i], ntohs(a.sin_port));
		post_recv(&p[i].c, 10 + i, 0, 64);
		ck_assert_int_eq(rdma_connect(p[i].c.id, NULL), 0);
	}
	for (int i = 0; i < 2; i++) {
		struct pollfd pf = { p[i].c.ch->fd, POLLIN, 0 };

		require(poll(&pf, 1, 20000) == 1, "no CM event within 20 s");
		ck_assert_int_eq(rdma_get_cm_event(p[i].c.ch, &e), 0);
		ck_assert_msg(e->event == RDMA_CM_EVENT_UNREACHABLE,
			      "event %s", rdma_event_str(e->event));
		ck_assert_int_eq(e->status, -ETIMEDOUT);
		ck_assert_int_eq(rdma_ack_cm_event(e), 0);
		poll_n(p[i].c.cq, wc, 1);
		ck_assert_uint_eq(wc[0].wr_id, 10 + i);
		ck_assert_int_eq(wc[0].status, IBV_WC_WR_FLUSH_ERR);
		ck_assert_int_eq(ibv_poll_cq(p[i].c.cq, 2, wc), 0);
	}
	waited = ms_now() - t0;
	ck_assert_msg(waited >= 9500, "gave up after %lld ms", waited);
	for (int i = 0; i < 2; i++) {
		int fd = accept(silent, NULL, NULL);

		ck_assert_int_ge(fd, 0);
		ck_assert_msg(stream_ends(fd), "connection %d left open", i);
		close(fd);
	}
	close(silent);

	side_free(&p[0].c);
	{
		struct ibv_qp *qp = p[1].c.id->qp;

		ck_assert_int_eq(rdma_destroy_id(p[1].c.id), 0);
		ck_assert_int_eq(ibv_destroy_qp(qp), 0);
		p[1].c.id = NULL;
		side_free(&p[1].c);
	}

	connect_pair(&q);
	post_recv(&q.s, 2, 0, 64);
	{
		struct ibv_sge sg = { (uintptr_t)q.c.buf, 16, q.c.mr->lkey };
		struct ibv_send_wr w = { .wr_id = 3, .sg_list = &sg,
					 .num_sge = 1, .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED };

		post(&q.c, &w);
	}
	poll_n(q.c.cq, wc, 1);
	wc_ok(&wc[0], 3, IBV_WC_SEND, 16);
	poll_n(q.s.cq, wc, 1);
	wc_ok(&wc[0], 2, IBV_WC_RECV, 16);
	pair_disconnect_free(&q);
}
END_TEST

/* rdma_reject() with private data: the client sees both. */
START_TEST(reject_carries_private_data)
{
	struct rdma_cm_event *e;
	struct pair p;

	e = connect_request(&p);
	ck_assert_int_eq(rdma_reject(e->id, "go away", 7), 0);
	ck_assert_int_eq(rdma_destroy_id(e->id), 0);
	ck_assert_int_eq(rdma_ack_cm_event(e), 0);
	e = next_event(p.c.ch);
	ck_assert_int_eq(e->event, RDMA_CM_EVENT_REJECTED);
	ck_assert_int_eq(e->status, -ECONNREFUSED);
	ck_assert_uint_eq(e->param.conn.private_data_len, 7);
	ck_assert_mem_eq(e->param.conn.private_data, "go away", 7);
	ck_assert_int_eq(rdma_ack_cm_event(e), 0);
	side_free(&p.c);
	ck_assert_int_eq(rdma_destroy_id(p.listen), 0);
	rdma_destroy_event_channel(p.s.ch);
}
END_TEST

/*
 * IWARP_MPA_REV=1: the Request carries no RFC 6581 IRD/ORD words, so the
 * server sees the device's Read depths, not the 3 and 5 the client
 * asked for; the server may still send first, and data moves both ways.
 */
START_TEST(iwarp_mpa_rev_1_connects_without_ird_ord_words)
{
	struct rdma_conn_param cp = { .responder_resources = 3,
				      .initiator_depth = 5 };
	struct ibv_device_attr da;
	struct rdma_cm_event *e;
	struct ibv_wc wc;
	struct pair p;

	ck_assert_int_eq(setenv("IWARP_MPA_REV", "1", 1), 0);
	memset(&p, 0, sizeof(p));
	listen_on(&p);
	client_start(&p, p.port);
	ck_assert_int_eq(ibv_query_device(p.c.id->verbs, &da), 0);
	ck_assert_int_gt(da.max_qp_rd_atom, 5);
	ck_assert_int_eq(rdma_connect(p.c.id, &cp), 0);
	e = next_event(p.s.ch);
	ck_assert_int_eq(e->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	ck_assert_int_eq(e->param.conn.initiator_depth, da.max_qp_rd_atom);
	ck_assert_int_eq(e->param.conn.responder_resources, da.max_qp_rd_atom);
	side_qp(&p.s, e->id);
	ck_assert_int_eq(rdma_ack_cm_event(e), 0);
	post_recv(&p.c, 1, 0, 64);
	post_recv(&p.s, 2, 0, 64);
	ck_assert_int_eq(rdma_accept(p.s.id, NULL), 0);
	expect(p.s.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	expect(p.c.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	for (int i = 0; i < 2; i++) {
		struct side *from = i ? &p.c : &p.s, *to = i ? &p.s : &p.c;
		struct ibv_sge sg = { (uintptr_t)from->buf + 1024, 16,
				      from->mr->lkey };
		struct ibv_send_wr w = { .wr_id = 3, .sg_list = &sg,
					 .num_sge = 1, .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED };

		memset(from->buf + 1024, 'a' + i, 16);
		post(from, &w);
		poll_n(from->cq, &wc, 1);
		wc_ok(&wc, 3, IBV_WC_SEND, 16);
		poll_n(to->cq, &wc, 1);
		wc_ok(&wc, i ? 2 : 1, IBV_WC_RECV, 16);
		ck_assert_mem_eq(to->buf, from->buf + 1024, 16);
	}
	pair_disconnect_free(&p);
	unsetenv("IWARP_MPA_REV");
}
END_TEST

/*
 * IWARP_MPA_REV=1 read by rdma_accept(): the revision 1 Reply ends the
 * peer-to-peer mode that a revision 2 client asked for, and that client
 * refuses the connection.
 */
START_TEST(iwarp_mpa_rev_1_on_the_server_refuses_a_peer_to_peer_client)
{
	struct rdma_cm_event *e;
	struct pair p;

	e = connect_request(&p);
	side_qp(&p.s, e->id);
	ck_assert_int_eq(rdma_ack_cm_event(e), 0);
	ck_assert_int_eq(setenv("IWARP_MPA_REV", "1", 1), 0);
	ck_assert_int_eq(rdma_accept(p.s.id, NULL), 0);
	unsetenv("IWARP_MPA_REV");
	e = next_event(p.c.ch);
	ck_assert_msg(e->event == RDMA_CM_EVENT_CONNECT_ERROR ||
			      e->event == RDMA_CM_EVENT_REJECTED,
		      "client event %s (status %d)", rdma_event_str(e->event),
		      e->status);
	ck_assert_int_ne(e->status, 0);
	ck_assert_int_eq(rdma_ack_cm_event(e), 0);
	pair_free(&p);
}
END_TEST

/* Any other IWARP_MPA_REV fails rdma_connect() and rdma_accept(). */
START_TEST(iwarp_mpa_rev_other_than_1_or_2_is_refused)
{
	static const char *const bad[] = { "3", "0", "v2", "2 " };
	struct rdma_cm_event *e;
	struct pair p;

	memset(&p, 0, sizeof(p));
	listen_on(&p);
	client_start(&p, p.port);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(setenv("IWARP_MPA_REV", bad[i], 1), 0);
		errno = 0;
		ck_assert_int_eq(rdma_connect(p.c.id, NULL), -1);
		ck_assert_int_eq(errno, EINVAL);
	}
	unsetenv("IWARP_MPA_REV");
	ck_assert_int_eq(rdma_connect(p.c.id, NULL), 0);
	e = next_event(p.s.ch);
	ck_assert_int_eq(e->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	side_qp(&p.s, e->id);
	ck_assert_int_eq(rdma_ack_cm_event(e), 0);
	ck_assert_int_eq(setenv("IWARP_MPA_REV", "two", 1), 0);
	errno = 0;
	ck_assert_int_eq(rdma_accept(p.s.id, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(setenv("IWARP_MPA_REV", "2", 1), 0);
	ck_assert_int_eq(rdma_accept(p.s.id, NULL), 0);
	unsetenv("IWARP_MPA_REV");
	expect(p.s.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	expect(p.c.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	pair_disconnect_free(&p);
}
END_TEST

/*
 * Destroying a connected QP ends its connection: both sides get
 * DISCONNECTED, and the identifier stays for rdma_disconnect() (now a
 * no-op) and rdma_destroy_id().
 */
START_TEST(destroying_the_qp_disconnects)
{
	struct ibv_wc wc;
	struct pair p;

	connect_pair(&p);
	post_recv(&p.s, 1, 0, 64);
	rdma_destroy_qp(p.c.id);
	expect(p.c.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	expect(p.s.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	poll_n(p.s.cq, &wc, 1);
	ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(rdma_disconnect(p.c.id), 0);
	pair_free(&p);
}
END_TEST

/* The ACK timeout (TCP_USER_TIMEOUT) of @id's connection, in ms. */
static int ack_timeout_ms(struct rdma_cm_id *id)
{
	int fd = tcp_socket_of(rdma_get_local_addr(id));

	ck_assert_int_ge(fd, 0);
	return int_sockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT);
}

/*
 * InfiniBand's retry budget becomes the connection's ACK timeout: a try
 * waits 4.096 us * 2^timeout, retry_cnt + 1 tries, held to 2 s .. 10 min;
 * timeout 0 leaves it alone.  rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT)
 * sets the QP's timeout.
 */
START_TEST(the_retry_budget_maps_to_the_connections_ack_timeout)
{
	struct ibv_qp_attr a = { 0 }, q;
	struct ibv_qp_init_attr qia;
	const int both = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT;
	struct pair p;
	uint8_t t = 19;
	int big = 1;

	connect_pair(&p);
	ck_assert_int_eq(ack_timeout_ms(p.c.id), 15000); /* the default */
	a.timeout = 20;
	a.retry_cnt = 3;
	ck_assert_int_eq(ibv_modify_qp(p.c.id->qp, &a, both), 0);
	/* 4.096 us * 2^20 * 4 = 17179.869 ms */
	ck_assert_int_eq(ack_timeout_ms(p.c.id), 17179);
	ck_assert_int_eq(ibv_query_qp(p.c.id->qp, &q, both, &qia), 0);
	ck_assert_uint_eq(q.timeout, 20);
	ck_assert_uint_eq(q.retry_cnt, 3);
	a.timeout = 14; /* perftest's: 0.54 s with 7 retries */
	a.retry_cnt = 7;
	ck_assert_int_eq(ibv_modify_qp(p.c.id->qp, &a, both), 0);
	ck_assert_int_eq(ack_timeout_ms(p.c.id), 2000);
	a.timeout = 31;
	ck_assert_int_eq(ibv_modify_qp(p.c.id->qp, &a, IBV_QP_TIMEOUT), 0);
	ck_assert_int_eq(ack_timeout_ms(p.c.id), 600000);
	a.timeout = 0;
	ck_assert_int_eq(ibv_modify_qp(p.c.id->qp, &a, IBV_QP_TIMEOUT), 0);
	ck_assert_int_eq(ack_timeout_ms(p.c.id), 600000);
	a.timeout = 32;
	ck_assert_int_eq(ibv_modify_qp(p.c.id->qp, &a, IBV_QP_TIMEOUT), EINVAL);
	a.retry_cnt = 8;
	ck_assert_int_eq(ibv_modify_qp(p.c.id->qp, &a, IBV_QP_RETRY_CNT), EINVAL);
	/* the server's QP took accept's retry_count (0): 4.096 us * 2^19 */
	ck_assert_int_eq(rdma_set_option(p.s.id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_ACK_TIMEOUT, &t,
					 sizeof(t)),
			 0);
	ck_assert_int_eq(ack_timeout_ms(p.s.id), 2147);
	ck_assert_int_eq(rdma_set_option(p.s.id, RDMA_OPTION_ID,
					 RDMA_OPTION_ID_ACK_TIMEOUT, &big,
					 sizeof(big)),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	pair_free(&p);
}
END_TEST

/*
 * Port 0 gets a port at bind time; the port can be bound again as soon
 * as its listener is gone, even with the connection it accepted still up
 * (perftest does both); a port someone listens on cannot.
 */
START_TEST(bind_semantics_that_perftest_needs)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct rdma_cm_id *again, *clash;
	struct pair p;

	connect_pair(&p);
	ck_assert_int_eq(rdma_create_id(p.s.ch, &clash, NULL, RDMA_PS_TCP), 0);
	a.sin_port = htons(p.port);
	errno = 0;
	ck_assert_int_eq(rdma_bind_addr(clash, (struct sockaddr *)&a), -1);
	ck_assert_int_eq(errno, EADDRINUSE);
	ck_assert_int_eq(rdma_destroy_id(p.listen), 0);
	ck_assert_int_eq(rdma_create_id(p.s.ch, &again, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_bind_addr(again, (struct sockaddr *)&a), 0);
	ck_assert_int_eq(rdma_listen(again, 1), 0);
	p.listen = again;
	ck_assert_int_eq(rdma_destroy_id(clash), 0);
	ck_assert_int_eq(rdma_disconnect(p.s.id), 0);
	expect(p.c.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	expect(p.s.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	pair_free(&p);
}
END_TEST

/*
 * An event channel is a descriptor readable while events wait; made
 * non-blocking it answers EAGAIN; events follow an identifier that
 * migrates to another channel.
 */
START_TEST(event_channels_are_real_descriptors)
{
	struct sockaddr_in d = { .sin_family = AF_INET, .sin_port = htons(9),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct rdma_event_channel *ch = rdma_create_event_channel(), *ch2;
	struct rdma_cm_event *e;
	struct rdma_cm_id *id;
	struct pollfd pf;

	ck_assert_ptr_nonnull(ch);
	ch2 = rdma_create_event_channel();
	ck_assert_ptr_nonnull(ch2);
	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	pf = (struct pollfd){ ch->fd, POLLIN, 0 };
	ck_assert_int_eq(poll(&pf, 1, 0), 0);
	ck_assert_int_eq(fcntl(ch->fd, F_SETFL, O_NONBLOCK), 0);
	errno = 0;
	ck_assert_int_eq(rdma_get_cm_event(ch, &e), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 100),
			 0);
	ck_assert_int_eq(poll(&pf, 1, WAIT_MS), 1);
	/* the event not taken yet moves with the identifier */
	ck_assert_int_eq(rdma_migrate_id(id, ch2), 0);
	ck_assert_ptr_eq(id->channel, ch2);
	ck_assert_int_eq(poll(&pf, 1, 0), 0);
	expect(ch2, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(ch2);
}
END_TEST

/* ---- synchronous endpoints ------------------------------------------------- */

static void *ep_server(void *arg)
{
	struct rdma_cm_id *listen = arg, *id;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	char msg[16];

	ck_assert_int_eq(rdma_listen(listen, 1), 0);
	ck_assert_int_eq(rdma_get_request(listen, &id), 0);
	ck_assert_ptr_nonnull(id->qp);
	mr = rdma_reg_msgs(id, msg, sizeof(msg));
	ck_assert_ptr_nonnull(mr);
	ck_assert_int_eq(rdma_post_recv(id, NULL, msg, sizeof(msg), mr), 0);
	ck_assert_int_eq(rdma_accept(id, NULL), 0);
	ck_assert_int_eq(rdma_get_recv_comp(id, &wc), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_str_eq(msg, "sync hello");
	ck_assert_int_eq(rdma_post_send(id, NULL, msg, sizeof(msg), mr, 0), 0);
	ck_assert_int_eq(rdma_get_send_comp(id, &wc), 1);
	rdma_disconnect(id);
	rdma_dereg_mr(mr);
	rdma_destroy_ep(id);
	return NULL;
}

/* rdma_getaddrinfo, rdma_create_ep, rdma_get_request: calls that wait. */
START_TEST(synchronous_endpoints_connect_and_move_data)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE,
				       .ai_port_space = RDMA_PS_TCP },
			     *res;
	struct ibv_qp_init_attr qa = { .cap = { 1, 1, 1, 1, 16 },
				       .sq_sig_all = 1 };
	struct rdma_cm_id *listen, *id;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	char port[8], msg[16] = "sync hello", back[16];
	pthread_t t;

	ck_assert_int_eq(rdma_getaddrinfo("127.0.0.1", "0", &hints, &res), 0);
	ck_assert_int_eq(res->ai_flags & RAI_PASSIVE, RAI_PASSIVE);
	ck_assert_int_eq(res->ai_qp_type, IBV_QPT_RC);
	ck_assert_ptr_nonnull(res->ai_src_addr);
	ck_assert_int_eq(rdma_create_ep(&listen, res, NULL, &qa), 0);
	rdma_freeaddrinfo(res);
	snprintf(port, sizeof(port), "%u", ntohs(rdma_get_src_port(listen)));
	ck_assert_int_eq(pthread_create(&t, NULL, ep_server, listen), 0);

	hints.ai_flags = 0;
	ck_assert_int_eq(rdma_getaddrinfo("127.0.0.1", port, &hints, &res), 0);
	ck_assert_ptr_nonnull(res->ai_dst_addr);
	/* until the server listens, a connect is refused: retry */
	for (int i = 0;; i++) {
		/* rdma_create_ep() writes the CQs it made back into qa */
		qa = (struct ibv_qp_init_attr){ .cap = { 1, 1, 1, 1, 16 },
						.sq_sig_all = 1 };
		ck_assert_msg(rdma_create_ep(&id, res, NULL, &qa) == 0,
			      "rdma_create_ep: %s", strerror(errno));
		mr = rdma_reg_msgs(id, back, sizeof(back));
		ck_assert_int_eq(rdma_post_recv(id, NULL, back, sizeof(back), mr),
				 0);
		if (rdma_connect(id, NULL) == 0)
			break;
		ck_assert_int_eq(errno, ECONNREFUSED);
		ck_assert_int_lt(i, 100);
		rdma_dereg_mr(mr);
		rdma_destroy_ep(id);
		usleep(20000);
	}
	rdma_freeaddrinfo(res);
	ck_assert_int_eq(rdma_post_send(id, NULL, msg, sizeof(msg), NULL,
					IBV_SEND_INLINE), 0);
	ck_assert_int_eq(rdma_get_send_comp(id, &wc), 1);
	ck_assert_int_eq(rdma_get_recv_comp(id, &wc), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_str_eq(back, "sync hello");
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	rdma_disconnect(id);
	rdma_dereg_mr(mr);
	rdma_destroy_ep(id);
	rdma_destroy_ep(listen);
}
END_TEST

/* ---- what rdma_cm on iWARP does not have --------------------------------------- */

START_TEST(what_iwarp_cannot_do_fails_cleanly)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_UDP }, *res;
	struct sockaddr_in mc = { .sin_family = AF_INET };
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT };
	struct rdma_cm_id *id;
	int fds[2], mask;
	struct pollfd pf;
	uint8_t tos = 8;

	ck_assert_ptr_nonnull(ch);
	errno = 0;
	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP), -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	errno = 0;
	ck_assert_int_eq(rdma_getaddrinfo("127.0.0.1", "1", &hints, &res), -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	errno = 0;
	ck_assert_int_eq(rdma_join_multicast(id, (struct sockaddr *)&mc, NULL),
			 -1);
	ck_assert_int_eq(errno, ENOSYS);
	ck_assert_int_eq(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
					 &tos, sizeof(tos)), 0);
	errno = 0;
	ck_assert_int_eq(rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
					 &tos, sizeof(tos)), -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	/* not connected: nothing to accept, disconnect or connect with */
	errno = 0;
	ck_assert_int_eq(rdma_accept(id, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(rdma_disconnect(id), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rdma_init_qp_attr(id, &qa, &mask), 0);
	ck_assert_int_eq(mask, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS |
				       IBV_QP_PKEY_INDEX | IBV_QP_PORT);
	ck_assert_int_eq(qa.port_num, 1);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);

	/* rsockets: no datagram rsockets (UD); rpoll on a plain fd is poll(2) */
	errno = 0;
	ck_assert_int_eq(rsocket(AF_INET, SOCK_DGRAM, 0), -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_int_eq(pipe(fds), 0);
	pf = (struct pollfd){ fds[0], POLLIN, 0 };
	ck_assert_int_eq(rpoll(&pf, 1, 0), 0);
	ck_assert_int_eq(write(fds[1], "x", 1), 1);
	ck_assert_int_eq(rpoll(&pf, 1, 1000), 1);
	ck_assert(pf.revents & POLLIN);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

/* ---- device contexts opened and closed in any order ------------------- */

/* A region registered and a QP made on @ctx, then all of it destroyed. */
static void use_context(struct ibv_context *ctx, uint32_t depth)
{
	static uint8_t buf[4096];
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { depth, depth, 1, 1, 0 } };
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;

	ck_assert_ptr_nonnull(pd);
	mr = ibv_reg_mr(pd, buf, sizeof(buf),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ck_assert_msg(mr, "ibv_reg_mr: %s", strerror(errno));
	/* libfabric's probe: a QP far larger than its CQ of one entry */
	cq = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	ck_assert_ptr_nonnull(cq);
	qa.send_cq = qa.recv_cq = cq;
	qp = ibv_create_qp(pd, &qa);
	ck_assert_msg(qp, "ibv_create_qp: %s", strerror(errno));
	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
	ck_assert_int_eq(ibv_destroy_cq(cq), 0);
	ck_assert_int_eq(ibv_dereg_mr(mr), 0);
	ck_assert_int_eq(ibv_dealloc_pd(pd), 0);
}

/*
 * libfabric's verbs domain keeps the context rdma_get_devices() gave it
 * and frees the list at once: as with rdma-core, the context stays open.
 */
START_TEST(a_context_of_rdma_get_devices_outlives_rdma_free_devices)
{
	struct ibv_context **devs = rdma_get_devices(NULL);
	struct ibv_context *ctx;

	ck_assert_ptr_nonnull(devs);
	ctx = devs[0];
	ck_assert_ptr_nonnull(ctx);
	rdma_free_devices(devs);
	use_context(ctx, 384);
	/* the next list hands out the same context */
	devs = rdma_get_devices(NULL);
	ck_assert_ptr_eq(devs[0], ctx);
	rdma_free_devices(devs);
	use_context(ctx, 16);
}
END_TEST

/*
 * fi_getinfo()'s order and then a domain's: ibv_open_device() and
 * ibv_close_device() around a query, the device list of librdmacm with a
 * probe QP made and destroyed on it, a context the application opens
 * meanwhile and closes while librdmacm's lives on, and identifiers made
 * with no channel that are moved to one later.
 */
START_TEST(contexts_opened_and_closed_the_way_libfabric_does)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *a, *b, *rc, **devs;
	struct rdma_event_channel *ch;
	struct ibv_device_attr da;
	struct rdma_cm_id *id;
	struct sockaddr_in lo = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	ck_assert_ptr_nonnull(list);
	a = ibv_open_device(list[0]);
	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(ibv_query_device(a, &da), 0);
	ck_assert_int_eq(ibv_close_device(a), 0);
	devs = rdma_get_devices(NULL);
	ck_assert_ptr_nonnull(devs);
	use_context(devs[0], 384);
	rc = devs[0];
	rdma_free_devices(devs);
	b = ibv_open_device(list[0]);
	ck_assert_ptr_nonnull(b);
	ibv_free_device_list(list);
	use_context(b, 8);
	use_context(rc, 8);
	ck_assert_int_eq(ibv_close_device(b), 0);
	use_context(rc, 8);
	/* an identifier with no channel, bound to loopback: no device */
	ck_assert_int_eq(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	ck_assert_ptr_null(id->verbs);
	ck_assert_int_eq(rdma_bind_addr(id, (struct sockaddr *)&lo), 0);
	ck_assert_ptr_null(id->verbs);
	ch = rdma_create_event_channel();
	ck_assert_ptr_nonnull(ch);
	ck_assert_int_eq(rdma_migrate_id(id, ch), 0);
	ck_assert_ptr_eq(id->channel, ch);
	ck_assert_int_eq(rdma_listen(id, 4), 0);
	ck_assert_int_eq(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
	use_context(rc, 8);
}
END_TEST

/*
 * An identifier made with no channel and moved to one before it connects
 * (libfabric binds an endpoint to its event queue that way): its events
 * come on the channel it was moved to.
 */
START_TEST(an_identifier_migrated_after_creation_connects)
{
	struct pair p;
	struct sockaddr_in d = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct rdma_cm_event *e;
	struct rdma_cm_id *id;

	memset(&p, 0, sizeof(p));
	listen_on(&p);
	d.sin_port = htons(p.port);
	ck_assert_int_eq(rdma_create_id(NULL, &id, &p, RDMA_PS_TCP), 0);
	p.c.ch = rdma_create_event_channel();
	ck_assert_ptr_nonnull(p.c.ch);
	ck_assert_int_eq(rdma_migrate_id(id, p.c.ch), 0);
	ck_assert_int_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d,
					   2000), 0);
	expect(p.c.ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	ck_assert_int_eq(rdma_resolve_route(id, 2000), 0);
	expect(p.c.ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	side_qp(&p.c, id);
	ck_assert_int_eq(rdma_connect(id, NULL), 0);
	e = next_event(p.s.ch);
	ck_assert_int_eq(e->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	ck_assert_ptr_nonnull(e->id->verbs);
	side_qp(&p.s, e->id);
	ck_assert_int_eq(rdma_ack_cm_event(e), 0);
	ck_assert_int_eq(rdma_accept(p.s.id, NULL), 0);
	expect(p.s.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	expect(p.c.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	pair_disconnect_free(&p);
}
END_TEST

/*
 * ibv_resize_cq() grows a CQ and says how much it holds in cqe; a smaller
 * size is accepted and shrinks nothing.  A QP far larger than the CQ is
 * accepted too: the CQ grows for it.
 */
START_TEST(ibv_resize_cq_grows_a_cq)
{
	struct ibv_context **devs = rdma_get_devices(NULL);
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { 2000, 2000, 1, 1, 0 } };
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int cqe;

	ck_assert_ptr_nonnull(devs);
	pd = ibv_alloc_pd(devs[0]);
	cq = ibv_create_cq(devs[0], 8, NULL, NULL, 0);
	ck_assert_ptr_nonnull(cq);
	cqe = cq->cqe;
	ck_assert_int_ge(cqe, 8);
	ck_assert_int_eq(ibv_resize_cq(cq, 100000), 0);
	ck_assert_int_ge(cq->cqe, 100000);
	cqe = cq->cqe;
	ck_assert_int_eq(ibv_resize_cq(cq, 4), 0);
	ck_assert_int_ge(cq->cqe, cqe);
	ck_assert_int_eq(ibv_resize_cq(cq, 0), EINVAL);
	ck_assert_int_eq(ibv_resize_cq(cq, 1 << 30), EINVAL);
	qa.send_cq = qa.recv_cq = cq;
	qp = ibv_create_qp(pd, &qa);
	ck_assert_ptr_nonnull(qp);
	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
	ck_assert_int_eq(ibv_destroy_cq(cq), 0);
	ck_assert_int_eq(ibv_dealloc_pd(pd), 0);
	rdma_free_devices(devs);
}
END_TEST

/*
 * A QP asked for no inline data gets the device's room, written back by
 * ibv_create_qp() and reported by ibv_query_qp(); an inline Send of 16
 * octets on it (libfabric's probe) arrives.
 */
START_TEST(a_qp_asked_for_no_inline_data_sends_it_inline)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { 4, 4, 1, 1, 0 } };
	struct ibv_qp_init_attr got;
	struct ibv_qp_attr a;
	struct pair p;
	struct ibv_wc wc;
	struct ibv_send_wr w = { .wr_id = 3, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED,
				 .num_sge = 1 }, *bad;
	struct ibv_recv_wr rw = { .wr_id = 4, .num_sge = 1 }, *rbad;
	struct ibv_sge s, r;
	char msg[16] = "sixteen octets!";
	struct ibv_qp *qp;

	connect_pair(&p);
	qa.send_cq = qa.recv_cq = p.c.cq;
	qp = ibv_create_qp(p.c.pd, &qa);
	ck_assert_ptr_nonnull(qp);
	ck_assert_uint_ge(qa.cap.max_inline_data, 64);
	ck_assert_int_eq(ibv_query_qp(qp, &a, IBV_QP_CAP, &got), 0);
	ck_assert_uint_eq(got.cap.max_inline_data, qa.cap.max_inline_data);
	ck_assert_int_eq(ibv_destroy_qp(qp), 0);
	/* the connected QPs asked for 64: they take the same room */
	ck_assert_int_eq(ibv_query_qp(p.c.id->qp, &a, IBV_QP_CAP, &got), 0);
	ck_assert_uint_eq(got.cap.max_inline_data, qa.cap.max_inline_data);
	r = (struct ibv_sge){ (uintptr_t)p.s.buf, 64, p.s.mr->lkey };
	rw.sg_list = &r;
	ck_assert_int_eq(ibv_post_recv(p.s.id->qp, &rw, &rbad), 0);
	s = (struct ibv_sge){ (uintptr_t)msg, sizeof(msg), 0 };
	w.sg_list = &s;
	ck_assert_int_eq(ibv_post_send(p.c.id->qp, &w, &bad), 0);
	poll_n(p.c.cq, &wc, 1);
	wc_ok(&wc, 3, IBV_WC_SEND, sizeof(msg));
	poll_n(p.s.cq, &wc, 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc.byte_len, sizeof(msg));
	ck_assert_mem_eq(p.s.buf, msg, sizeof(msg));
	pair_disconnect_free(&p);
}
END_TEST

static Suite *compat_cm_suite(void)
{
	Suite *s = suite_create("compat_cm");
	TCase *tc = tcase_create("data");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, every_opcode_and_flag_moves_verified_data);
	tcase_add_test(tc, qp_ex_builders_and_cq_ex_polling);
	tcase_add_test(tc, cq_ex_reads_what_ibv_poll_cq_would);
	tcase_add_test(tc, ibv_resize_cq_grows_a_cq);
	tcase_add_test(tc, rfc7306_atomics_and_immediate_data_with_iwarp_rfc7306);
	tcase_add_test(tc, without_iwarp_rfc7306_atomics_are_refused);
	suite_add_tcase(s, tc);
	tc = tcase_create("events");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, connect_to_a_closed_port_is_rejected);
	tcase_add_loop_test(tc,
			    a_refused_connection_is_tried_again_until_the_server_listens,
			    0, 2);
	tcase_add_test(tc, an_unanswered_request_is_unreachable_and_a_new_try_connects);
	tcase_add_test(tc, reject_carries_private_data);
	tcase_add_test(tc, iwarp_mpa_rev_1_connects_without_ird_ord_words);
	tcase_add_test(tc, iwarp_mpa_rev_1_on_the_server_refuses_a_peer_to_peer_client);
	tcase_add_test(tc, iwarp_mpa_rev_other_than_1_or_2_is_refused);
	tcase_add_test(tc, destroying_the_qp_disconnects);
	tcase_add_test(tc, the_retry_budget_maps_to_the_connections_ack_timeout);
	tcase_add_test(tc, bind_semantics_that_perftest_needs);
	tcase_add_test(tc, event_channels_are_real_descriptors);
	suite_add_tcase(s, tc);
	tc = tcase_create("sync");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, synchronous_endpoints_connect_and_move_data);
	tcase_add_test(tc, what_iwarp_cannot_do_fails_cleanly);
	suite_add_tcase(s, tc);
	tc = tcase_create("contexts");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_context_of_rdma_get_devices_outlives_rdma_free_devices);
	tcase_add_test(tc, contexts_opened_and_closed_the_way_libfabric_does);
	tcase_add_test(tc, an_identifier_migrated_after_creation_connects);
	tcase_add_test(tc, a_qp_asked_for_no_inline_data_sends_it_inline);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(compat_cm_suite());
}
