// SPDX-License-Identifier: MIT
/*
 * Queue accounting through the public API: a work request holds its slot
 * until its completion is polled, so a CQ sized for its queues never
 * overruns; shared receive queues feed several QPs and give their slots
 * back the same way; objects still in use (a QP, a region, a protection
 * domain) refuse to be destroyed.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e.h"

#define DEPTH 4

static void post_write(struct e2e *e, uint64_t wr_id, size_t off)
{
	struct iw_sge s = { (uintptr_t)e->c.buf + off, 1, e->c.mr->lkey };
	struct iw_send_wr w = {
		.wr_id = wr_id, .sg_list = &s, .num_sge = 1,
		.opcode = IW_WR_RDMA_WRITE, .send_flags = IW_SEND_SIGNALED,
		.rdma = { (uintptr_t)e->s.buf + off, e->s.mr->rkey },
	};

	ck_assert_int_eq(iw_post_send(e->c.qp, &w, NULL), 0);
}

/* Spins until the peer's memory shows @v at @off (bounded). */
static void wait_for_byte(volatile uint8_t *p, uint8_t v)
{
	for (int i = 0; i < E2E_WAIT_MS * 100 && *p != v; i++)
		usleep(10);
	ck_assert_uint_eq(*p, v);
}

START_TEST(send_slot_frees_when_its_completion_is_polled)
{
	struct e2e_opts o;
	struct e2e e;
	struct iw_wc wc[DEPTH + 1];
	struct iw_sge s;
	struct iw_send_wr w = { .sg_list = &s, .num_sge = 1,
				.opcode = IW_WR_RDMA_WRITE };

	e2e_opts_default(&o);
	o.depth = DEPTH;
	e2e_connect(&e, &o);
	memset(e.s.buf, 0, 64);
	for (uint64_t i = 0; i < DEPTH; i++) {
		e.c.buf[i] = (uint8_t)(0xa0 + i);
		post_write(&e, i, i);
	}
	/* the last Write has landed: every one of them has completed */
	wait_for_byte(e.s.buf + DEPTH - 1, 0xa0 + DEPTH - 1);
	s = (struct iw_sge){ (uintptr_t)e.c.buf, 1, e.c.mr->lkey };
	w.rdma.remote_addr = (uintptr_t)e.s.buf;
	w.rdma.rkey = e.s.mr->rkey;
	ck_assert_int_eq(iw_post_send(e.c.qp, &w, NULL), -ENOMEM);
	e2e_poll(e.c.cq, wc, 1, E2E_WAIT_MS);
	ck_assert_uint_eq(wc[0].wr_id, 0);
	ck_assert_ptr_eq(wc[0].qp, e.c.qp);
	post_write(&e, DEPTH, 0);
	e2e_poll(e.c.cq, wc, DEPTH, E2E_WAIT_MS);
	for (int i = 0; i < DEPTH; i++) {
		ck_assert_uint_eq(wc[i].wr_id, (uint64_t)i + 1);
		ck_assert_int_eq(wc[i].status, IW_WC_SUCCESS);
	}
	e2e_teardown(&e);
}
END_TEST

START_TEST(receive_slot_frees_when_its_completion_is_polled)
{
	struct e2e_opts o;
	struct e2e e;
	struct iw_wc wc[DEPTH];
	struct iw_sge r, s;

	e2e_opts_default(&o);
	o.depth = DEPTH;
	e2e_connect(&e, &o);
	for (uint64_t i = 0; i < DEPTH; i++) {
		r = (struct iw_sge){ (uintptr_t)e.s.buf + 8 * i, 8,
				     e.s.mr->lkey };
		ck_assert_int_eq(iw_post_recv(e.s.qp,
			&(struct iw_recv_wr){ i, NULL, &r, 1 }, NULL), 0);
	}
	e2e_fill(e.c.buf, 8, 7);
	s = (struct iw_sge){ (uintptr_t)e.c.buf, 8, e.c.mr->lkey };
	for (uint64_t i = 0; i < DEPTH; i++)
		ck_assert_int_eq(iw_post_send(e.c.qp, &(struct iw_send_wr){
			.wr_id = i, .sg_list = &s, .num_sge = 1,
			.opcode = IW_WR_SEND, .send_flags = IW_SEND_SIGNALED },
			NULL), 0);
	e2e_poll(e.c.cq, wc, DEPTH, E2E_WAIT_MS); /* room for the Write */
	/* a Write behind the Sends: once it lands, every Send has */
	e.s.buf[100] = 0;
	e.c.buf[100] = 0x5a;
	post_write(&e, 99, 100);
	wait_for_byte(e.s.buf + 100, 0x5a);
	r = (struct iw_sge){ (uintptr_t)e.s.buf, 8, e.s.mr->lkey };
	ck_assert_int_eq(iw_post_recv(e.s.qp,
		&(struct iw_recv_wr){ 9, NULL, &r, 1 }, NULL), -ENOMEM);
	e2e_poll(e.s.cq, wc, 1, E2E_WAIT_MS);
	ck_assert_int_eq(wc[0].opcode, IW_WC_RECV);
	ck_assert_int_eq(iw_post_recv(e.s.qp,
		&(struct iw_recv_wr){ 9, NULL, &r, 1 }, NULL), 0);
	e2e_poll(e.s.cq, wc, DEPTH - 1, E2E_WAIT_MS);
	e2e_poll(e.c.cq, wc, 1, E2E_WAIT_MS); /* the signaled Write */
	ck_assert_uint_eq(wc[0].wr_id, 99);
	e2e_teardown(&e);
}
END_TEST

/* ---- a CQ that grows for its QPs -------------------------------------- */

/* A QP of @depth send and receive requests on @cq, or NULL (errno). */
static struct iw_qp *big_qp(struct iw_pd *pd, struct iw_cq *cq, uint32_t depth)
{
	struct iw_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = depth, .max_recv_wr = depth,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return iw_create_qp(pd, &a);
}

/*
 * libfabric's verbs provider probes a device with a QP of 384 send and
 * 384 receive requests on a CQ of one entry.  The CQ grows instead of
 * refusing; completions already in it stay first, in order, each polled
 * once, and later ones land in the bigger ring behind them.
 */
START_TEST(cq_grows_for_a_qp_larger_than_it_and_keeps_every_completion)
{
	struct iw_wc wc[2 * DEPTH];
	struct iw_qp *probe;
	struct iw_cq *one;
	struct e2e_opts o;
	struct e2e e;

	e2e_opts_default(&o);
	o.depth = DEPTH;
	e2e_connect(&e, &o);
	/* the probe as libfabric makes it */
	one = iw_create_cq(e.c.ctx, 1, NULL);
	ck_assert_ptr_nonnull(one);
	probe = big_qp(e.c.pd, one, 384);
	ck_assert_msg(probe, "a QP larger than its CQ: errno %d", errno);
	ck_assert_int_ge(iw_resize_cq(one, 1), 2 * 384);
	ck_assert_int_eq(iw_destroy_cq(one), -EBUSY);
	ck_assert_int_eq(iw_destroy_qp(probe), 0);
	ck_assert_int_eq(iw_destroy_cq(one), 0);

	/* a full ring (the CQ holds 2 * DEPTH) grows under unpolled ones */
	memset(e.s.buf, 0, 64);
	for (uint64_t i = 0; i < DEPTH; i++) {
		e.c.buf[i] = (uint8_t)(0xa0 + i);
		post_write(&e, i, i);
	}
	wait_for_byte(e.s.buf + DEPTH - 1, 0xa0 + DEPTH - 1);
	probe = big_qp(e.c.pd, e.c.cq, 1000);
	ck_assert_ptr_nonnull(probe);
	ck_assert_int_ge(iw_resize_cq(e.c.cq, 2 * DEPTH), 2 * DEPTH + 2000);
	/* room on the QP: one polled from the old ring, more into the new */
	e2e_poll(e.c.cq, wc, 1, E2E_WAIT_MS);
	ck_assert_uint_eq(wc[0].wr_id, 0);
	e.c.buf[DEPTH] = 0xa0 + DEPTH;
	post_write(&e, DEPTH, DEPTH);
	wait_for_byte(e.s.buf + DEPTH, 0xa0 + DEPTH);
	e2e_poll(e.c.cq, wc, DEPTH, E2E_WAIT_MS);
	for (int i = 0; i < DEPTH; i++) {
		ck_assert_uint_eq(wc[i].wr_id, (uint64_t)i + 1);
		ck_assert_int_eq(wc[i].status, IW_WC_SUCCESS);
	}
	ck_assert_int_eq(iw_poll_cq(e.c.cq, 2 * DEPTH, wc), 0);
	ck_assert_int_eq(iw_destroy_qp(probe), 0);
	/* the resize's bounds */
	ck_assert_int_eq(iw_resize_cq(e.c.cq, 0), -EINVAL);
	ck_assert_int_eq(iw_resize_cq(e.c.cq, (1 << 22) + 1), -EINVAL);
	ck_assert_int_eq(iw_resize_cq(NULL, 8), -EINVAL);
	e2e_teardown(&e);
}
END_TEST

/* The process's resident memory, in KiB. */
static long resident_kib(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%ld %ld", &pages, &resident), 2);
	fclose(f);
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/*
 * A CQ of a million entries (libfabric's ofi_rxm asks for hundreds of
 * thousands) takes memory for the completions it holds, not for every
 * entry it could: its pages stay untouched until completions reach them.
 */
START_TEST(a_large_cq_is_resident_only_where_completions_went)
{
	enum { N = 1 << 20 };
	struct e2e_opts o;
	struct e2e_side s;
	struct iw_cq *big;
	long before;

	e2e_opts_default(&o);
	e2e_side_open(&s, &o);
	before = resident_kib();
	big = iw_create_cq(s.ctx, N, NULL);
	ck_assert_ptr_nonnull(big);
	ck_assert_msg(resident_kib() - before < 4096,
		      "a CQ of %d entries made %ld KiB resident", N,
		      resident_kib() - before);
	ck_assert_int_ge(iw_resize_cq(big, N), N);
	ck_assert_int_eq(iw_destroy_cq(big), 0);
	e2e_side_close(&s);
}
END_TEST

/*
 * Through a CQ large enough to be mapped (8192 entries), completions lap
 * its ring several times: each comes back once, in order.
 */
START_TEST(completions_lap_a_large_cq_in_order)
{
	enum { WRITES = 30000, BATCH = 16 }; /* WRITES a multiple of BATCH */
	struct iw_wc wc[BATCH];
	struct e2e_opts o;
	struct e2e e;
	uint64_t next = 0;

	e2e_opts_default(&o);
	o.depth = 4096;
	e2e_connect(&e, &o);
	for (uint64_t i = 0; i < WRITES; i += BATCH) {
		for (uint64_t k = 0; k < BATCH; k++)
			post_write(&e, i + k, k);
		for (int got = 0; got < BATCH;) {
			int n = iw_poll_cq(e.c.cq, BATCH, wc);

			ck_assert_int_ge(n, 0);
			for (int k = 0; k < n; k++) {
				ck_assert_uint_eq(wc[k].wr_id, next++);
				ck_assert_int_eq(wc[k].status, IW_WC_SUCCESS);
			}
			got += n;
		}
	}
	ck_assert_uint_eq(next, WRITES);
	e2e_teardown(&e);
}
END_TEST

#define GROW_WRITES 3000
#define GROW_QPS 8

struct grower {
	struct iw_pd *pd;
	struct iw_cq *cq;
	atomic_bool stop;
	atomic_bool done;
	int grown;
};

/* QPs ever larger on the CQ while traffic completes on it. */
static void *grow_cq(void *arg)
{
	struct grower *g = arg;
	struct iw_qp *qp[GROW_QPS];
	int n = 0;

	while (n < GROW_QPS && !atomic_load(&g->stop)) {
		qp[n] = big_qp(g->pd, g->cq, 64u << n);
		if (!qp[n])
			break;
		n++;
		usleep(2000);
	}
	g->grown = n;
	atomic_store(&g->done, true);
	while (n)
		iw_destroy_qp(qp[--n]);
	return NULL;
}

/*
 * Signaled Writes stream through a CQ that another thread makes grow
 * several times meanwhile: every completion comes once, in order.  The
 * Writes go on until the growing is done, however fast they complete.
 */
START_TEST(cq_growing_under_traffic_loses_and_repeats_nothing)
{
	struct grower g = { 0 };
	uint64_t next = 0, posted = 0;
	struct e2e_opts o;
	struct e2e e;
	pthread_t t;

	e2e_opts_default(&o);
	o.depth = 16;
	e2e_connect(&e, &o);
	g.pd = e.c.pd;
	g.cq = e.c.cq;
	atomic_init(&g.stop, false);
	atomic_init(&g.done, false);
	ck_assert_int_eq(pthread_create(&t, NULL, grow_cq, &g), 0);
	for (int spins = 0; spins < 50000000; spins++) {
		bool more = posted < GROW_WRITES || !atomic_load(&g.done);
		struct iw_wc wc[16];
		int n;

		if (!more && next == posted)
			break;
		for (; more && posted - next < 16; posted++)
			post_write(&e, posted, posted % 64);
		n = iw_poll_cq(e.c.cq, 16, wc);
		ck_assert_int_ge(n, 0);
		for (int i = 0; i < n; i++) {
			ck_assert_int_eq(wc[i].status, IW_WC_SUCCESS);
			ck_assert_uint_eq(wc[i].wr_id, next);
			next++;
		}
	}
	atomic_store(&g.stop, true);
	pthread_join(t, NULL);
	ck_assert_uint_ge(posted, GROW_WRITES);
	ck_assert_uint_eq(next, posted);
	ck_assert_int_ge(g.grown, 4);
	{
		struct iw_wc wc[1];

		ck_assert_int_eq(iw_poll_cq(e.c.cq, 1, wc), 0);
	}
	e2e_teardown(&e);
}
END_TEST

/* ---- inline data -------------------------------------------------- */

/*
 * A QP takes inline data up to the device's limit whatever it asked for
 * (e2e's QPs ask for 64 octets), and says so in iw_query_qp(): libfabric
 * posts inline Sends on QPs created with max_inline_data 0, as siw and
 * rxe accept them.  One octet more is refused.
 */
START_TEST(inline_sends_up_to_the_device_limit_whatever_was_asked)
{
	struct iw_device_attr da;
	struct iw_qp_attr qa;
	struct iw_wc wc[2];
	struct e2e_opts o;
	struct iw_sge r, s;
	struct e2e e;
	uint8_t *src;

	e2e_opts_default(&o);
	o.depth = DEPTH;
	e2e_connect(&e, &o);
	ck_assert_int_eq(iw_query_device(e.c.ctx, &da, sizeof(da)), 0);
	ck_assert_uint_gt(da.max_inline_data, 64);
	ck_assert_int_eq(iw_query_qp(e.c.qp, &qa), 0);
	ck_assert_uint_eq(qa.cap.max_inline_data, da.max_inline_data);
	/* an unregistered buffer: only inline data may come from it */
	src = malloc(da.max_inline_data + 1);
	ck_assert_ptr_nonnull(src);
	e2e_fill(src, da.max_inline_data + 1, 42);
	r = (struct iw_sge){ (uintptr_t)e.s.buf, da.max_inline_data + 1,
			     e.s.mr->lkey };
	ck_assert_int_eq(iw_post_recv(e.s.qp,
		&(struct iw_recv_wr){ 1, NULL, &r, 1 }, NULL), 0);
	s = (struct iw_sge){ (uintptr_t)src, da.max_inline_data + 1, 0 };
	ck_assert_int_eq(iw_post_send(e.c.qp, &(struct iw_send_wr){
		.wr_id = 7, .sg_list = &s, .num_sge = 1, .opcode = IW_WR_SEND,
		.send_flags = IW_SEND_INLINE | IW_SEND_SIGNALED }, NULL),
		-IW_ELOCAL_LENGTH);
	s.length = da.max_inline_data;
	ck_assert_int_eq(iw_post_send(e.c.qp, &(struct iw_send_wr){
		.wr_id = 8, .sg_list = &s, .num_sge = 1, .opcode = IW_WR_SEND,
		.send_flags = IW_SEND_INLINE | IW_SEND_SIGNALED }, NULL), 0);
	/* the buffer may change at once: the data went with the request */
	memset(src, 0, da.max_inline_data);
	e2e_poll(e.c.cq, wc, 1, E2E_WAIT_MS);
	ck_assert_uint_eq(wc[0].wr_id, 8);
	ck_assert_int_eq(wc[0].status, IW_WC_SUCCESS);
	e2e_poll(e.s.cq, wc, 1, E2E_WAIT_MS);
	ck_assert_int_eq(wc[0].status, IW_WC_SUCCESS);
	ck_assert_uint_eq(wc[0].byte_len, da.max_inline_data);
	e2e_fill(src, da.max_inline_data, 42);
	ck_assert_mem_eq(e.s.buf, src, da.max_inline_data);
	free(src);
	e2e_teardown(&e);
}
END_TEST

/* ---- shared receive queues ------------------------------------------ */

#define SRQ_WR 8
#define SRQ_SGE 4
#define N_QPS 2

struct srq_server {
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_srq *srq;
	struct iw_qp *qp[N_QPS];
	struct iw_cm_id *listen, *id[N_QPS];
	uint8_t buf[SRQ_WR * 64];
	struct iw_mr *mr;
	char port[16];
};

static struct iw_qp *srq_qp(struct srq_server *sv, struct iw_pd *pd, int i)
{
	struct iw_qp_init_attr qa = {
		.qp_context = &sv->qp[i], .send_cq = sv->cq, .recv_cq = sv->cq,
		.srq = sv->srq,
		/* fewer elements than the SRQ's receives carry */
		.cap = { .max_send_wr = DEPTH, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	return iw_create_qp(pd, &qa);
}

static void srq_post(struct srq_server *sv, uint64_t wr_id, int slot,
		     int expect)
{
	struct iw_sge r[SRQ_SGE];

	/* each receive scatters over SRQ_SGE pieces of 8 octets */
	for (int k = 0; k < SRQ_SGE; k++)
		r[k] = (struct iw_sge){ (uintptr_t)sv->buf + 64 * slot + 16 * k,
					8, sv->mr->lkey };
	ck_assert_int_eq(iw_post_srq_recv(sv->srq,
		&(struct iw_recv_wr){ wr_id, NULL, r, SRQ_SGE }, NULL), expect);
}

static void srq_server_open(struct srq_server *sv)
{
	static int srq_ctx;

	memset(sv, 0, sizeof(*sv));
	sv->ctx = iw_open(NULL);
	ck_assert_ptr_nonnull(sv->ctx);
	sv->ch = iw_create_cm_channel(sv->ctx);
	sv->pd = iw_alloc_pd(sv->ctx);
	/* room for each QP's sends and, once, the SRQ's receives */
	sv->cq = iw_create_cq(sv->ctx, N_QPS * DEPTH + SRQ_WR, NULL);
	sv->srq = iw_create_srq(sv->pd, &(struct iw_srq_init_attr){
		.srq_context = &srq_ctx, .max_wr = SRQ_WR,
		.max_sge = SRQ_SGE });
	sv->mr = iw_reg_mr(sv->pd, sv->buf, sizeof(sv->buf),
			   IW_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(sv->ch);
	ck_assert_ptr_nonnull(sv->cq);
	ck_assert_ptr_nonnull(sv->srq);
	ck_assert_ptr_nonnull(sv->mr);
	ck_assert_ptr_eq(iw_srq_context(sv->srq), &srq_ctx);
	for (int i = 0; i < N_QPS; i++) {
		sv->qp[i] = srq_qp(sv, sv->pd, i);
		ck_assert_ptr_nonnull(sv->qp[i]);
		ck_assert_ptr_eq(iw_qp_context(sv->qp[i]), &sv->qp[i]);
	}
	sv->listen = iw_create_id(sv->ch, NULL);
	ck_assert_int_eq(iw_listen(sv->listen, "127.0.0.1", "0", 4), 0);
	e2e_port(sv->listen, sv->port, sizeof(sv->port));
}

/* Destroys what srq_server_open() made, the QPs still there included. */
static void srq_server_close(struct srq_server *sv)
{
	ck_assert_int_eq(iw_destroy_id(sv->listen), 0);
	for (int i = 0; i < N_QPS; i++)
		if (sv->qp[i])
			ck_assert_int_eq(iw_destroy_qp(sv->qp[i]), 0);
	ck_assert_int_eq(iw_destroy_srq(sv->srq), 0);
	ck_assert_int_eq(iw_dereg_mr(sv->mr), 0);
	ck_assert_int_eq(iw_destroy_cq(sv->cq), 0);
	ck_assert_int_eq(iw_dealloc_pd(sv->pd), 0);
	ck_assert_int_eq(iw_destroy_cm_channel(sv->ch), 0);
	ck_assert_int_eq(iw_close(sv->ctx), 0);
}

static void srq_server_accept(struct srq_server *sv, int i)
{
	struct iw_cm_event *ev = e2e_event(sv->ch, E2E_WAIT_MS);

	ck_assert_int_eq(ev->event, IW_CM_EVENT_CONNECT_REQUEST);
	sv->id[i] = ev->id;
	iw_ack_cm_event(ev);
	ck_assert_int_eq(iw_accept(sv->id[i], sv->qp[i],
				   &(struct iw_conn_param){ .ird = 1,
							    .ord = 1 }),
			 0);
	e2e_expect(sv->ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
}

/* Opens client @c and connects it to the server's QP @i. */
static void srq_client_connect(struct srq_server *sv, struct e2e_side *c,
			       const struct e2e_opts *o, int i)
{
	e2e_side_open(c, o);
	c->id = iw_create_id(c->ch, NULL);
	ck_assert_int_eq(iw_connect(c->id, "127.0.0.1", sv->port, c->qp,
				    &o->cparam),
			 0);
	srq_server_accept(sv, i);
	e2e_expect(c->ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
}

START_TEST(srq_feeds_several_qps_and_gives_slots_back_when_polled)
{
	struct srq_server sv;
	struct e2e_opts o;
	struct e2e_side c[N_QPS];
	struct iw_wc wc[N_QPS];
	struct iw_pd *other;
	bool seen[N_QPS] = { false };

	srq_server_open(&sv);
	/* an SRQ serves only QPs of its own protection domain */
	other = iw_alloc_pd(sv.ctx);
	errno = 0;
	ck_assert_ptr_null(srq_qp(&sv, other, 0));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(iw_dealloc_pd(other), 0);
	/* a QP on an SRQ has no receive queue of its own */
	ck_assert_int_eq(iw_post_recv(sv.qp[0], &(struct iw_recv_wr){ 0 },
				      NULL),
			 -EINVAL);
	for (int k = 0; k < SRQ_WR; k++)
		srq_post(&sv, (uint64_t)k, k, 0);
	srq_post(&sv, 99, 0, -ENOMEM);

	e2e_opts_default(&o);
	for (int i = 0; i < N_QPS; i++) {
		struct iw_sge s;

		srq_client_connect(&sv, &c[i], &o, i);
		e2e_fill(c[i].buf, 32, (uint32_t)i + 1);
		s = (struct iw_sge){ (uintptr_t)c[i].buf, 32, c[i].mr->lkey };
		ck_assert_int_eq(iw_post_send(c[i].qp, &(struct iw_send_wr){
			.sg_list = &s, .num_sge = 1, .opcode = IW_WR_SEND },
			NULL), 0);
	}
	e2e_poll(sv.cq, wc, N_QPS, E2E_WAIT_MS);
	for (int n = 0; n < N_QPS; n++) {
		int i = wc[n].qp == sv.qp[0] ? 0 : 1;
		uint8_t *land = sv.buf + 64 * wc[n].wr_id;

		ck_assert_int_eq(wc[n].status, IW_WC_SUCCESS);
		ck_assert_int_eq(wc[n].opcode, IW_WC_RECV);
		ck_assert_uint_eq(wc[n].byte_len, 32);
		ck_assert_ptr_eq(iw_qp_context(wc[n].qp), &sv.qp[i]);
		ck_assert(!seen[i]);
		seen[i] = true;
		for (int k = 0; k < SRQ_SGE; k++)
			ck_assert_mem_eq(land + 16 * k, c[i].buf + 8 * k, 8);
	}
	/* two slots came back with the polls, no more */
	srq_post(&sv, 8, 0, 0);
	srq_post(&sv, 9, 1, 0);
	srq_post(&sv, 99, 2, -ENOMEM);

	/* in use: neither the SRQ nor the CQ can go */
	ck_assert_int_eq(iw_destroy_srq(sv.srq), -EBUSY);
	ck_assert_int_eq(iw_destroy_cq(sv.cq), -EBUSY);
	for (int i = 0; i < N_QPS; i++) {
		ck_assert_int_eq(iw_destroy_id(c[i].id), 0);
		c[i].id = NULL;
		e2e_side_close(&c[i]);
	}
	for (int i = 0; i < N_QPS; i++)
		ck_assert_int_eq(iw_destroy_id(sv.id[i]), 0);
	srq_server_close(&sv);
}
END_TEST

/*
 * A QP destroyed with its SRQ receives' completions still in the CQ: they
 * can be polled, their slots are back in the SRQ at once, and until they
 * are polled they keep their room in the CQ.
 */
START_TEST(destroyed_qp_gives_its_srq_slots_back)
{
	struct srq_server sv;
	struct e2e_opts o;
	struct e2e_side c;
	struct iw_sge s;
	struct iw_wc wc[SRQ_WR];
	int n = 0;

	srq_server_open(&sv);
	for (int k = 0; k < SRQ_WR; k++)
		srq_post(&sv, (uint64_t)k, k, 0);
	e2e_opts_default(&o);
	srq_client_connect(&sv, &c, &o, 0);
	e2e_fill(c.buf, 8, 7);
	s = (struct iw_sge){ (uintptr_t)c.buf, 8, c.mr->lkey };
	ck_assert_int_eq(iw_req_notify_cq(sv.cq, 0), 0);
	ck_assert_int_eq(iw_post_send(c.qp, &(struct iw_send_wr){
		.sg_list = &s, .num_sge = 1, .opcode = IW_WR_SEND }, NULL), 0);
	/* the receive has completed, unpolled */
	{
		struct pollfd p = { iw_cq_fd(sv.cq), POLLIN, 0 };

		ck_assert_int_eq(poll(&p, 1, E2E_WAIT_MS), 1);
		ck_assert_int_eq(iw_get_cq_event(sv.cq, NULL), 0);
		iw_ack_cq_events(sv.cq, 1);
	}
	ck_assert_int_eq(iw_destroy_id(sv.id[0]), 0);
	ck_assert_int_eq(iw_destroy_qp(sv.qp[0]), 0);
	sv.qp[0] = NULL;
	/* the SRQ's other receives stay; the one that landed is free */
	srq_post(&sv, 8, 0, 0);
	srq_post(&sv, 99, 1, -ENOMEM);
	/* its completion still takes room: a QP that needs it grows the CQ */
	sv.qp[0] = srq_qp(&sv, sv.pd, 0);
	ck_assert_ptr_nonnull(sv.qp[0]);
	ck_assert_int_gt(iw_resize_cq(sv.cq, 1), N_QPS * DEPTH + SRQ_WR);
	ck_assert_int_eq(iw_destroy_qp(sv.qp[0]), 0);
	/* what the QP left behind can still be polled */
	while (n < SRQ_WR) {
		int r = iw_poll_cq(sv.cq, SRQ_WR - n, wc + n);

		ck_assert_int_ge(r, 0);
		if (r == 0)
			break;
		n += r;
	}
	ck_assert_int_ge(n, 1);
	ck_assert_int_eq(wc[0].opcode, IW_WC_RECV);
	ck_assert_int_eq(wc[0].status, IW_WC_SUCCESS);
	sv.qp[0] = srq_qp(&sv, sv.pd, 0);
	ck_assert_ptr_nonnull(sv.qp[0]);
	ck_assert_int_eq(iw_destroy_qp(sv.qp[0]), 0);
	sv.qp[0] = NULL;
	ck_assert_int_eq(iw_destroy_id(c.id), 0);
	c.id = NULL;
	e2e_side_close(&c);
	srq_server_close(&sv);
}
END_TEST

/*
 * The peer on @ch hears why its connection ended: RDMAP's (layer 0)
 * Terminate for a local catastrophic error (type 0).
 */
static void hears_local_catastrophic(struct iw_cm_channel *ch)
{
	struct iw_cm_event *ev = e2e_event(ch, E2E_WAIT_MS);

	ck_assert_ptr_nonnull(ev);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_ERROR);
	ck_assert(ev->terminate.valid && ev->terminate.received);
	ck_assert_uint_eq(ev->terminate.layer, 0);
	ck_assert_uint_eq(ev->terminate.etype, 0);
	iw_ack_cm_event(ev);
}

/*
 * A receive waiting in a shared receive queue lets go of a region
 * deregistered under it too: the message that takes it completes it with
 * a protection error, the memory untouched, and the peer hears why.
 */
START_TEST(srq_receive_lets_go_of_a_deregistered_region)
{
	struct srq_server sv;
	struct e2e_opts o;
	struct e2e_side c;
	struct iw_sge r;
	struct iw_wc wc;
	struct iw_mr *mr;

	srq_server_open(&sv);
	memcpy(sv.buf, "unmoved!", 8);
	mr = iw_reg_mr(sv.pd, sv.buf, 8, IW_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(mr);
	r = (struct iw_sge){ (uintptr_t)sv.buf, 8, mr->lkey };
	ck_assert_int_eq(iw_post_srq_recv(sv.srq,
		&(struct iw_recv_wr){ 5, NULL, &r, 1 }, NULL), 0);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);

	e2e_opts_default(&o);
	srq_client_connect(&sv, &c, &o, 0);
	memcpy(c.buf, "too late", 8);
	r = (struct iw_sge){ (uintptr_t)c.buf, 8, c.mr->lkey };
	ck_assert_int_eq(iw_post_send(c.qp, &(struct iw_send_wr){
		.sg_list = &r, .num_sge = 1, .opcode = IW_WR_SEND }, NULL), 0);
	e2e_poll(sv.cq, &wc, 1, E2E_WAIT_MS);
	ck_assert_uint_eq(wc.wr_id, 5);
	ck_assert_ptr_eq(wc.qp, sv.qp[0]);
	ck_assert_int_eq(wc.status, IW_WC_LOC_PROT_ERR);
	ck_assert_mem_eq(sv.buf, "unmoved!", 8);
	ck_assert_int_eq(iw_poll_cq(sv.cq, 1, &wc), 0); /* once */
	hears_local_catastrophic(c.ch);

	ck_assert_int_eq(iw_destroy_id(c.id), 0);
	c.id = NULL;
	e2e_side_close(&c);
	ck_assert_int_eq(iw_destroy_id(sv.id[0]), 0);
	srq_server_close(&sv);
}
END_TEST

/*
 * A region that a Send not yet sent still names is not deregistered:
 * -EBUSY, and it stays usable; once that work has been flushed it goes.
 */
START_TEST(region_a_send_still_names_is_not_deregistered)
{
	struct e2e_opts o;
	struct e2e e;
	struct iw_sge s;
	struct iw_wc wc;
	struct iw_cq *cq;
	struct iw_qp *idle;
	struct iw_qp_init_attr qa = { .cap = { 2, 2, 1, 1, 0 } };

	e2e_opts_default(&o);
	e2e_connect(&e, &o);
	cq = iw_create_cq(e.c.ctx, 4, NULL);
	ck_assert_ptr_nonnull(cq);
	qa.send_cq = qa.recv_cq = cq;
	idle = iw_create_qp(e.c.pd, &qa);
	ck_assert_ptr_nonnull(idle);
	s = (struct iw_sge){ (uintptr_t)e.c.buf, 8, e.c.mr->lkey };
	ck_assert_int_eq(iw_post_send(idle, &(struct iw_send_wr){
		.wr_id = 2, .sg_list = &s, .num_sge = 1,
		.opcode = IW_WR_SEND }, NULL), 0);
	ck_assert_int_eq(iw_dereg_mr(e.c.mr), -EBUSY);
	ck_assert_int_eq(iw_qp_to_error(idle), 0);
	e2e_poll(cq, &wc, 1, E2E_WAIT_MS);
	ck_assert_int_eq(wc.status, IW_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(iw_dereg_mr(e.c.mr), 0);
	e.c.mr = iw_reg_mr(e.c.pd, e.c.buf, 8, 0);
	ck_assert_ptr_nonnull(e.c.mr);
	ck_assert_int_eq(iw_destroy_qp(idle), 0);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	e2e_teardown(&e);
}
END_TEST

/* Sends @len octets of @text from the client's buffer. */
static void client_sends(struct e2e *e, const char *text, uint32_t len)
{
	struct iw_sge s = { (uintptr_t)e->c.buf, len, e->c.mr->lkey };

	memcpy(e->c.buf, text, len);
	ck_assert_int_eq(iw_post_send(e->c.qp, &(struct iw_send_wr){
		.sg_list = &s, .num_sge = 1, .opcode = IW_WR_SEND }, NULL), 0);
}

/*
 * Receives still posted do not keep a region registered, as on an RDMA
 * adapter (libfabric's rxm deregisters its receive buffers before it
 * destroys the shared receive queue that holds them): they let go of its
 * memory.  A message that then comes to one completes it with a
 * protection error and ends the connection, the memory untouched; one
 * posted through another registration of the same memory is not
 * concerned; a flush completes a queued one as ever; a shared receive
 * queue goes with its receives.
 */
START_TEST(receives_let_go_of_a_deregistered_region)
{
	struct iw_srq_init_attr sa = { .max_wr = 2, .max_sge = 1 };
	struct e2e_opts o;
	struct e2e e;
	struct iw_sge r;
	struct iw_wc wc;
	struct iw_mr *twin, *mr;
	struct iw_srq *srq;
	struct iw_cq *cq;
	struct iw_qp *idle;
	struct iw_qp_init_attr qa = { .cap = { 2, 2, 1, 1, 0 } };
	struct iw_qp_attr qattr;
	struct iw_cm_event *ev;

	e2e_opts_default(&o);
	e2e_connect(&e, &o);

	/* the same memory through a second registration: not concerned */
	twin = iw_reg_mr(e.s.pd, e.s.buf, 64, IW_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(twin);
	r = (struct iw_sge){ (uintptr_t)e.s.buf, 8, e.s.mr->lkey };
	ck_assert_int_eq(iw_post_recv(e.s.qp,
		&(struct iw_recv_wr){ 1, NULL, &r, 1 }, NULL), 0);
	ck_assert_int_eq(iw_dereg_mr(twin), 0);
	client_sends(&e, "in place", 8);
	e2e_poll(e.s.cq, &wc, 1, E2E_WAIT_MS);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	ck_assert_mem_eq(e.s.buf, "in place", 8);

	/* through the region itself: the message fails the receive */
	memcpy(e.s.buf, "unmoved!", 8);
	ck_assert_int_eq(iw_post_recv(e.s.qp,
		&(struct iw_recv_wr){ 2, NULL, &r, 1 }, NULL), 0);
	ck_assert_int_eq(iw_dereg_mr(e.s.mr), 0);
	client_sends(&e, "too late", 8);
	e2e_poll(e.s.cq, &wc, 1, E2E_WAIT_MS);
	ck_assert_uint_eq(wc.wr_id, 2);
	ck_assert_int_eq(wc.status, IW_WC_LOC_PROT_ERR);
	ck_assert_mem_eq(e.s.buf, "unmoved!", 8);
	ck_assert_int_eq(iw_poll_cq(e.s.cq, 1, &wc), 0); /* once */
	ck_assert_int_eq(iw_query_qp(e.s.qp, &qattr), 0);
	ck_assert_int_ne(qattr.state, IW_QPS_RTS);
	ev = e2e_event(e.s.ch, E2E_WAIT_MS);
	ck_assert_ptr_nonnull(ev);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_ERROR);
	ck_assert_int_eq(ev->status, -IW_ELOCAL_PROTECTION);
	iw_ack_cm_event(ev);
	hears_local_catastrophic(e.c.ch);

	/* a queued receive of a QP never connected: flushed as ever */
	mr = iw_reg_mr(e.s.pd, e.s.buf, 64, IW_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(mr);
	cq = iw_create_cq(e.s.ctx, 4, NULL);
	ck_assert_ptr_nonnull(cq);
	qa.send_cq = qa.recv_cq = cq;
	idle = iw_create_qp(e.s.pd, &qa);
	ck_assert_ptr_nonnull(idle);
	r = (struct iw_sge){ (uintptr_t)e.s.buf, 8, mr->lkey };
	ck_assert_int_eq(iw_post_recv(idle,
		&(struct iw_recv_wr){ 3, NULL, &r, 1 }, NULL), 0);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(iw_qp_to_error(idle), 0);
	e2e_poll(cq, &wc, 1, E2E_WAIT_MS);
	ck_assert_uint_eq(wc.wr_id, 3);
	ck_assert_int_eq(wc.status, IW_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(iw_poll_cq(cq, 1, &wc), 0);
	ck_assert_int_eq(iw_destroy_qp(idle), 0);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);

	/* a receive posted to a shared receive queue */
	mr = iw_reg_mr(e.s.pd, e.s.buf, 64, IW_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(mr);
	srq = iw_create_srq(e.s.pd, &sa);
	ck_assert_ptr_nonnull(srq);
	r = (struct iw_sge){ (uintptr_t)e.s.buf, 8, mr->lkey };
	ck_assert_int_eq(iw_post_srq_recv(srq,
		&(struct iw_recv_wr){ 4, NULL, &r, 1 }, NULL), 0);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(iw_destroy_srq(srq), 0);
	e.s.mr = iw_reg_mr(e.s.pd, e.s.buf, 64, 0);
	ck_assert_ptr_nonnull(e.s.mr);
	e2e_teardown(&e);
}
END_TEST

/* Each of @n completions has a wr_id in [@first, @first + @n), once. */
static void expect_ids_once(const struct iw_wc *wc, int n, uint64_t first)
{
	uint8_t seen[64] = { 0 };

	ck_assert_int_le(n, 64);
	for (int i = 0; i < n; i++) {
		uint64_t k = wc[i].wr_id - first;

		ck_assert_msg(k < (uint64_t)n && !seen[k],
			      "wr %llu unknown or completed twice",
			      (unsigned long long)wc[i].wr_id);
		seen[k] = 1;
	}
}

/*
 * A protection domain is not freed while a region, a queue pair or a
 * shared receive queue still belongs to it (ibv_dealloc_pd() says EBUSY
 * as well): each one alone keeps it, and it goes once all have gone.
 */
START_TEST(pd_in_use_is_not_deallocated)
{
	struct iw_context *ctx = iw_open(NULL);
	struct iw_pd *pd = iw_alloc_pd(ctx);
	struct iw_cq *cq = iw_create_cq(ctx, 8, NULL);
	struct iw_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 2, .max_recv_wr = 2,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct iw_srq_init_attr sa = { .max_wr = 2, .max_sge = 1 };
	static uint8_t buf[64];
	struct iw_mr *mr;
	struct iw_qp *qp;
	struct iw_srq *srq;

	ck_assert_ptr_nonnull(pd);
	ck_assert_ptr_nonnull(cq);
	mr = iw_reg_mr(pd, buf, sizeof(buf), IW_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(mr);
	ck_assert_int_eq(iw_dealloc_pd(pd), -EBUSY);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	qp = iw_create_qp(pd, &qa);
	ck_assert_ptr_nonnull(qp);
	ck_assert_int_eq(iw_dealloc_pd(pd), -EBUSY);
	ck_assert_int_eq(iw_destroy_qp(qp), 0);
	srq = iw_create_srq(pd, &sa);
	ck_assert_ptr_nonnull(srq);
	ck_assert_int_eq(iw_dealloc_pd(pd), -EBUSY);
	/* still whole: it takes another region after the refusals */
	mr = iw_reg_mr(pd, buf, sizeof(buf), IW_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(mr);
	ck_assert_int_eq(iw_destroy_srq(srq), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), -EBUSY);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	ck_assert_int_eq(iw_close(ctx), 0);
}
END_TEST

/*
 * iw_qp_to_error() completes every outstanding request exactly once, with
 * IW_WC_WR_FLUSH_ERR: on a QP never connected, and on a connected one
 * whose sends cannot have left (a responder sends nothing before the
 * initiator's first FPDU, and this initiator sends none).  Work posted
 * afterwards completes at once, flushed.
 */
START_TEST(qp_to_error_flushes_every_outstanding_request_once)
{
	enum { SENDS = 5, RECVS = 7 };
	struct e2e_opts o;
	struct e2e e;
	struct iw_qp_attr qa;
	struct iw_wc wc[SENDS + RECVS + 1];
	struct iw_sge sg;
	struct iw_qp *qps[2];

	e2e_opts_default(&o);
	memset(&e, 0, sizeof(e));
	e2e_side_open(&e.c, &o);
	e2e_side_open(&e.s, &o);
	e2e_request(&e, &o);
	ck_assert_int_eq(iw_accept(e.s.id, e.s.qp, NULL), 0);
	e2e_expect(e.s.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	e2e_expect(e.c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	/* the server's QP, connected; the client's, to be error'd idle below */
	qps[0] = e.s.qp;
	qps[1] = NULL;
	for (int q = 0; q < 2; q++) {
		struct e2e_side *side = q == 0 ? &e.s : &e.c;
		struct iw_qp *qp = qps[q];
		struct iw_cq *cq = side->cq;

		if (q == 1) {
			struct iw_qp_init_attr a = {
				.cap = { SENDS, RECVS, 1, 1, 0 },
			};

			cq = iw_create_cq(side->ctx, SENDS + RECVS, NULL);
			ck_assert_ptr_nonnull(cq);
			a.send_cq = a.recv_cq = cq;
			qp = qps[1] = iw_create_qp(side->pd, &a);
			ck_assert_ptr_nonnull(qp);
		}
		sg = (struct iw_sge){ (uintptr_t)side->buf, 64, side->mr->lkey };
		for (int i = 0; i < SENDS; i++)
			ck_assert_int_eq(iw_post_send(qp, &(struct iw_send_wr){
				.wr_id = (uint64_t)i, .sg_list = &sg,
				.num_sge = 1, .opcode = IW_WR_SEND,
				.send_flags = IW_SEND_SIGNALED }, NULL), 0);
		for (int i = 0; i < RECVS; i++)
			ck_assert_int_eq(iw_post_recv(qp, &(struct iw_recv_wr){
				.wr_id = (uint64_t)(SENDS + i), .sg_list = &sg,
				.num_sge = 1 }, NULL), 0);
		ck_assert_int_eq(iw_poll_cq(cq, 1, wc), 0); /* none left */
		ck_assert_int_eq(iw_qp_to_error(qp), 0);
		e2e_poll(cq, wc, SENDS + RECVS, E2E_WAIT_MS);
		ck_assert_int_eq(iw_poll_cq(cq, 1, wc + SENDS + RECVS), 0);
		expect_ids_once(wc, SENDS + RECVS, 0);
		for (int i = 0; i < SENDS + RECVS; i++) {
			ck_assert_int_eq(wc[i].status, IW_WC_WR_FLUSH_ERR);
			ck_assert_int_eq(wc[i].opcode, wc[i].wr_id < SENDS
							       ? IW_WC_SEND
							       : IW_WC_RECV);
			ck_assert_ptr_eq(wc[i].qp, qp);
		}
		ck_assert_int_eq(iw_query_qp(qp, &qa), 0);
		ck_assert_int_eq(qa.state, IW_QPS_ERROR);
		/* posted now: flushed at once, still exactly once */
		ck_assert_int_eq(iw_post_send(qp, &(struct iw_send_wr){
			.wr_id = 99, .sg_list = &sg, .num_sge = 1,
			.opcode = IW_WR_SEND }, NULL), 0);
		e2e_poll(cq, wc, 1, E2E_WAIT_MS);
		ck_assert_uint_eq(wc[0].wr_id, 99);
		ck_assert_int_eq(wc[0].status, IW_WC_WR_FLUSH_ERR);
		ck_assert_int_eq(iw_poll_cq(cq, 1, wc), 0);
		if (q == 0) {
			e2e_expect(e.s.ch, IW_CM_EVENT_DISCONNECTED, E2E_WAIT_MS);
			e2e_expect(e.c.ch, IW_CM_EVENT_DISCONNECTED, E2E_WAIT_MS);
		} else {
			ck_assert_int_eq(iw_destroy_qp(qp), 0);
			ck_assert_int_eq(iw_destroy_cq(cq), 0);
		}
	}
	e2e_teardown(&e);
}
END_TEST

/*
 * A chain of three requests whose second is refused: *bad_wr is the
 * second, the call says why, and only the first was posted (the QP, never
 * connected, is flushed to show what it holds).
 */
START_TEST(chain_refused_at_its_second_request_posts_only_the_first)
{
	struct e2e_opts o;
	struct e2e_side c;
	struct iw_sge good, bad;
	struct iw_send_wr sw[3], *bad_s = NULL;
	struct iw_recv_wr rw[3], *bad_r = NULL;
	struct iw_wc wc[3];

	e2e_opts_default(&o);
	e2e_side_open(&c, &o);
	good = (struct iw_sge){ (uintptr_t)c.buf, 64, c.mr->lkey };
	bad = (struct iw_sge){ (uintptr_t)c.buf, 64, c.mr->lkey ^ 0xff };
	for (int i = 0; i < 3; i++) {
		sw[i] = (struct iw_send_wr){
			.wr_id = 10 + (uint64_t)i, .next = i < 2 ? &sw[i + 1] : NULL,
			.sg_list = i == 1 ? &bad : &good, .num_sge = 1,
			.opcode = IW_WR_SEND, .send_flags = IW_SEND_SIGNALED,
		};
		rw[i] = (struct iw_recv_wr){
			.wr_id = 20 + (uint64_t)i, .next = i < 2 ? &rw[i + 1] : NULL,
			.sg_list = &good, .num_sge = i == 1 ? 5 : 1,
		};
	}
	ck_assert_int_eq(iw_post_send(c.qp, sw, &bad_s), -IW_ELOCAL_PROTECTION);
	ck_assert_ptr_eq(bad_s, &sw[1]);
	ck_assert_int_eq(iw_post_recv(c.qp, rw, &bad_r), -IW_ELOCAL_LENGTH);
	ck_assert_ptr_eq(bad_r, &rw[1]);
	ck_assert_int_eq(iw_qp_to_error(c.qp), 0);
	e2e_poll(c.cq, wc, 2, E2E_WAIT_MS);
	ck_assert_int_eq(iw_poll_cq(c.cq, 1, wc + 2), 0);
	if (wc[0].opcode == IW_WC_RECV) {
		wc[2] = wc[0];
		wc[0] = wc[1];
		wc[1] = wc[2];
	}
	ck_assert_uint_eq(wc[0].wr_id, 10);
	ck_assert_int_eq(wc[0].opcode, IW_WC_SEND);
	ck_assert_uint_eq(wc[1].wr_id, 20);
	ck_assert_int_eq(wc[1].opcode, IW_WC_RECV);
	e2e_side_close(&c);
}
END_TEST

static Suite *queues_suite(void)
{
	Suite *s = suite_create("queues");
	TCase *tc = tcase_create("accounting");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, send_slot_frees_when_its_completion_is_polled);
	tcase_add_test(tc, receive_slot_frees_when_its_completion_is_polled);
	tcase_add_test(tc, srq_feeds_several_qps_and_gives_slots_back_when_polled);
	tcase_add_test(tc, destroyed_qp_gives_its_srq_slots_back);
	tcase_add_test(tc, cq_grows_for_a_qp_larger_than_it_and_keeps_every_completion);
	tcase_add_test(tc, cq_growing_under_traffic_loses_and_repeats_nothing);
	tcase_add_test(tc, a_large_cq_is_resident_only_where_completions_went);
	tcase_add_test(tc, completions_lap_a_large_cq_in_order);
	suite_add_tcase(s, tc);
	tc = tcase_create("regions");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, region_a_send_still_names_is_not_deregistered);
	tcase_add_test(tc, receives_let_go_of_a_deregistered_region);
	tcase_add_test(tc, srq_receive_lets_go_of_a_deregistered_region);
	tcase_add_test(tc, pd_in_use_is_not_deallocated);
	suite_add_tcase(s, tc);
	tc = tcase_create("posting");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, qp_to_error_flushes_every_outstanding_request_once);
	tcase_add_test(tc, chain_refused_at_its_second_request_posts_only_the_first);
	tcase_add_test(tc, inline_sends_up_to_the_device_limit_whatever_was_asked);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(queues_suite());
}
