// SPDX-License-Identifier: MIT
/*
 * RFC 7306 end to end through the public API, over 127.0.0.1: Fetch and
 * Add from several QPs (and threads, and the target's own CPU) on one
 * counter ends with the exact sum; Compare and Swap loops count exactly;
 * RDMA Write with Immediate Data delivers its data and its value in
 * order; a QP without the extensions refuses to post them and answers
 * them with the Terminate for an unknown opcode; and binaries built
 * against the 0.1 headers keep the structure sizes they know.
 */
#include "config.h" /* _GNU_SOURCE: dlvsym */

#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e.h"

/* ---- several clients on one server -------------------------------------- */

#define NQP 4

struct fleet {
	struct e2e_opts o;
	struct e2e_side srv; /* its QP serves client 0 */
	struct iw_cm_id *listen;
	char port[16];
	struct iw_qp *sqp[NQP];
	struct iw_cq *scq[NQP];
	struct iw_cm_id *sid[NQP];
	struct e2e_side cli[NQP];
};

static struct iw_qp *server_qp(struct fleet *f, int i)
{
	struct iw_qp_init_attr qa = {
		.cap = { .max_send_wr = f->o.depth, .max_recv_wr = f->o.depth,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IW_QP_INIT_ATTR_RFC7306,
		.rfc7306 = f->o.rfc7306,
	};

	if (i == 0) {
		f->scq[0] = f->srv.cq;
		return f->srv.qp;
	}
	f->scq[i] = iw_create_cq(f->srv.ctx, (int)(2 * f->o.depth), NULL);
	ck_assert_ptr_nonnull(f->scq[i]);
	qa.send_cq = qa.recv_cq = f->scq[i];
	return iw_create_qp(f->srv.pd, &qa);
}

/* NQP clients, each with a context of its own, connected to one server. */
static void fleet_connect(struct fleet *f)
{
	memset(f, 0, sizeof(*f));
	e2e_opts_default(&f->o);
	f->o.rfc7306 = IW_RFC7306_ALL;
	f->o.buf_len = 1 << 16;
	/* the server's QPs run on threads of their own, truly at once */
	f->o.progress = IW_PROGRESS_THREADS;
	f->o.progress_threads = NQP;
	e2e_side_open(&f->srv, &f->o);
	f->o.progress = IW_PROGRESS_THREAD;
	f->o.progress_threads = 0;
	f->listen = iw_create_id(f->srv.ch, NULL);
	ck_assert_ptr_nonnull(f->listen);
	ck_assert_int_eq(iw_listen(f->listen, "127.0.0.1", "0", NQP), 0);
	e2e_port(f->listen, f->port, sizeof(f->port));
	for (int i = 0; i < NQP; i++) {
		struct e2e_side *c = &f->cli[i];
		struct iw_cm_event *ev;

		e2e_side_open(c, &f->o);
		c->id = iw_create_id(c->ch, NULL);
		ck_assert_ptr_nonnull(c->id);
		ck_assert_int_eq(iw_connect(c->id, "127.0.0.1", f->port, c->qp,
					    &f->o.cparam), 0);
		ev = e2e_event(f->srv.ch, E2E_WAIT_MS);
		ck_assert_int_eq(ev->event, IW_CM_EVENT_CONNECT_REQUEST);
		f->sid[i] = ev->id;
		iw_ack_cm_event(ev);
		f->sqp[i] = server_qp(f, i);
		ck_assert_ptr_nonnull(f->sqp[i]);
		ck_assert_int_eq(iw_accept(f->sid[i], f->sqp[i],
					   &f->o.sparam), 0);
		e2e_expect(f->srv.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
		e2e_expect(c->ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	}
}

static void fleet_teardown(struct fleet *f)
{
	for (int i = 0; i < NQP; i++)
		e2e_side_close(&f->cli[i]);
	for (int i = NQP - 1; i >= 1; i--) {
		ck_assert_int_eq(iw_destroy_id(f->sid[i]), 0);
		ck_assert_int_eq(iw_destroy_qp(f->sqp[i]), 0);
		ck_assert_int_eq(iw_destroy_cq(f->scq[i]), 0);
	}
	f->srv.id = f->sid[0];
	ck_assert_int_eq(iw_destroy_id(f->listen), 0);
	e2e_side_close(&f->srv);
}

static void post_atomic(struct e2e_side *c, uint64_t id,
			enum iw_wr_opcode op, uint64_t *result,
			const struct e2e_side *target, uint64_t compare_add,
			uint64_t swap)
{
	struct iw_sge sg = { (uintptr_t)result, 8, c->mr->lkey };
	struct iw_send_wr wr = {
		.wr_id = id,
		.sg_list = &sg,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IW_SEND_SIGNALED,
	};
	int rc;

	wr.atomic.remote_addr = (uintptr_t)target->buf;
	wr.atomic.rkey = target->mr->rkey;
	wr.atomic.compare_add = compare_add;
	wr.atomic.swap = swap;
	rc = iw_post_send(c->qp, &wr, NULL);
	require(rc == 0, "atomic %llu not posted: %s", (unsigned long long)id,
		iw_strerror(rc));
}

/* ---- Fetch and Add from every direction at once ------------------------- */

#define ADDS 2000
#define WINDOW 8
#define LOCAL_ADDS 20000
#define LOCAL_ADD (1ull << 40)

struct adder {
	struct fleet *f;
	int i;
	uint64_t seen[ADDS]; /* the value before each add */
};

/* Client @i adds i + 1, ADDS times, up to WINDOW at once. */
static void *adder_run(void *arg)
{
	struct adder *a = arg;
	struct e2e_side *c = &a->f->cli[a->i];
	uint64_t *res = (uint64_t *)(void *)c->buf;
	int posted = 0, done = 0;

	while (done < ADDS) {
		struct iw_wc wc[WINDOW];
		int n;

		while (posted < ADDS && posted - done < WINDOW) {
			post_atomic(c, (uint64_t)posted,
				    IW_WR_ATOMIC_FETCH_AND_ADD,
				    &res[posted % WINDOW], &a->f->srv,
				    (uint64_t)a->i + 1, 0);
			posted++;
		}
		n = e2e_poll_upto(c->cq, wc, 1, E2E_WAIT_MS);
		require(n == 1, "client %d: no completion", a->i);
		require(wc[0].status == IW_WC_SUCCESS &&
				wc[0].opcode == IW_WC_FETCH_ADD &&
				wc[0].byte_len == 8 &&
				wc[0].wr_id == (uint64_t)done,
			"client %d: wr %llu status %s opcode %d", a->i,
			(unsigned long long)wc[0].wr_id,
			iw_wc_status_str(wc[0].status), wc[0].opcode);
		a->seen[done] = res[done % WINDOW];
		done++;
	}
	return NULL;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/*
 * Four QPs, each from its own thread, and the target's own CPU with its
 * atomic instructions, all add to one counter: it ends with the exact sum,
 * and no two remote adds saw the same value before them.
 */
START_TEST(concurrent_fetch_and_add_from_several_qps_sums_exactly)
{
	static struct adder a[NQP];
	static uint64_t all[NQP * ADDS];
	struct fleet f;
	pthread_t t[NQP];
	uint64_t *counter, want = 0;

	fleet_connect(&f);
	counter = (uint64_t *)(void *)f.srv.buf;
	*counter = 0;
	for (int i = 0; i < NQP; i++) {
		a[i] = (struct adder){ .f = &f, .i = i };
		ck_assert_int_eq(pthread_create(&t[i], NULL, adder_run, &a[i]),
				 0);
		want += (uint64_t)ADDS * (uint64_t)(i + 1);
	}
	for (int k = 0; k < LOCAL_ADDS; k++)
		__atomic_fetch_add(counter, LOCAL_ADD, __ATOMIC_SEQ_CST);
	want += (uint64_t)LOCAL_ADDS * LOCAL_ADD;
	for (int i = 0; i < NQP; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	ck_assert_uint_eq(__atomic_load_n(counter, __ATOMIC_SEQ_CST), want);
	for (int i = 0; i < NQP; i++)
		memcpy(all + i * ADDS, a[i].seen, sizeof(a[i].seen));
	qsort(all, NQP * ADDS, sizeof(all[0]), cmp_u64);
	for (int k = 1; k < NQP * ADDS; k++)
		require(all[k] != all[k - 1], "two adds saw %#llx",
			(unsigned long long)all[k]);
	fleet_teardown(&f);
}
END_TEST

/* ---- Compare and Swap loops --------------------------------------------- */

#define INCREMENTS 300

struct casser {
	struct fleet *f;
	int i;
	int attempts;
};

/*
 * An increment built from Compare and Swap alone: guess, swap in the guess
 * plus one, and on a miss take the value the swap returned as next guess.
 */
static void *casser_run(void *arg)
{
	struct casser *c = arg;
	struct e2e_side *s = &c->f->cli[c->i];
	uint64_t *res = (uint64_t *)(void *)s->buf, guess = 0;

	for (int done = 0; done < INCREMENTS;) {
		struct iw_wc wc;

		post_atomic(s, (uint64_t)c->attempts, IW_WR_ATOMIC_CMP_AND_SWP,
			    res, &c->f->srv, guess, guess + 1);
		c->attempts++;
		require(e2e_poll_upto(s->cq, &wc, 1, E2E_WAIT_MS) == 1,
			"client %d: no completion", c->i);
		require(wc.status == IW_WC_SUCCESS &&
				wc.opcode == IW_WC_COMP_SWAP,
			"client %d: %s", c->i, iw_wc_status_str(wc.status));
		if (*res == guess) {
			done++;
			guess++;
		} else {
			guess = *res;
		}
	}
	return NULL;
}

START_TEST(compare_and_swap_loops_count_exactly)
{
	static struct casser c[NQP];
	struct fleet f;
	pthread_t t[NQP];
	uint64_t *counter;
	int attempts = 0;

	fleet_connect(&f);
	counter = (uint64_t *)(void *)f.srv.buf;
	*counter = 0;
	for (int i = 0; i < NQP; i++) {
		c[i] = (struct casser){ .f = &f, .i = i };
		ck_assert_int_eq(pthread_create(&t[i], NULL, casser_run, &c[i]),
				 0);
	}
	for (int i = 0; i < NQP; i++) {
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
		attempts += c[i].attempts;
	}
	ck_assert_uint_eq(*counter, (uint64_t)NQP * INCREMENTS);
	ck_assert_int_ge(attempts, NQP * INCREMENTS);
	fleet_teardown(&f);
}
END_TEST

/* ---- immediate data ------------------------------------------------------ */

#define ROUNDS 6
#define PER_ROUND 40
#define SLOT 1000

/*
 * Writes with Immediate Data, many in flight: each receive completes in
 * order, carries its Write's value and length, and finds the Write's data
 * already in place.
 */
START_TEST(write_with_immediate_delivers_data_and_value_in_order)
{
	struct e2e_opts o;
	struct e2e e;
	struct iw_wc wc[PER_ROUND];
	uint64_t seq = 0;

	e2e_opts_default(&o);
	o.rfc7306 = IW_RFC7306_IMMEDIATE;
	e2e_connect(&e, &o);
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < PER_ROUND; i++) {
			struct iw_recv_wr rw = { .wr_id = 1000 + (uint64_t)i };

			ck_assert_int_eq(iw_post_recv(e.s.qp, &rw, NULL), 0);
		}
		for (int i = 0; i < PER_ROUND; i++) {
			uint8_t *src = e.c.buf + (size_t)i * SLOT;
			struct iw_sge sg = { (uintptr_t)src, SLOT,
					     e.c.mr->lkey };
			struct iw_send_wr wr = {
				.wr_id = seq + (uint64_t)i,
				.sg_list = &sg,
				.num_sge = 1,
				.opcode = IW_WR_RDMA_WRITE_WITH_IMM,
				.send_flags = IW_SEND_SIGNALED,
				.imm_data = 0xfeed000000000000ull + seq +
					    (uint64_t)i,
			};

			e2e_fill(src, SLOT, (uint32_t)(seq + (uint64_t)i));
			wr.rdma.remote_addr = (uintptr_t)e.s.buf +
					      (size_t)i * SLOT;
			wr.rdma.rkey = e.s.mr->rkey;
			ck_assert_int_eq(iw_post_send(e.c.qp, &wr, NULL), 0);
		}
		for (int i = 0; i < PER_ROUND; i++) {
			uint8_t want[SLOT];

			e2e_poll(e.s.cq, wc, 1, E2E_WAIT_MS);
			ck_assert_uint_eq(wc[0].status, IW_WC_SUCCESS);
			ck_assert_uint_eq(wc[0].wr_id, 1000 + (uint64_t)i);
			ck_assert_int_eq(wc[0].opcode, IW_WC_RECV_RDMA_WITH_IMM);
			ck_assert(wc[0].wc_flags & IW_WC_WITH_IMM);
			ck_assert_uint_eq(wc[0].imm_data,
					  0xfeed000000000000ull + seq +
						  (uint64_t)i);
			ck_assert_uint_eq(wc[0].byte_len, SLOT);
			e2e_fill(want, SLOT, (uint32_t)(seq + (uint64_t)i));
			ck_assert_mem_eq(e.s.buf + (size_t)i * SLOT, want,
					 SLOT);
		}
		e2e_poll(e.c.cq, wc, PER_ROUND, E2E_WAIT_MS);
		for (int i = 0; i < PER_ROUND; i++) {
			ck_assert_uint_eq(wc[i].wr_id, seq + (uint64_t)i);
			ck_assert_int_eq(wc[i].opcode, IW_WC_RDMA_WRITE);
			ck_assert_uint_eq(wc[i].status, IW_WC_SUCCESS);
			ck_assert_uint_eq(wc[i].imm_data, 0);
		}
		seq += PER_ROUND;
	}
	e2e_teardown(&e);
}
END_TEST

/* Immediate Data alone, with and without Solicited Event. */
START_TEST(send_with_immediate_completes_a_receive_with_the_value)
{
	struct e2e_opts o;
	struct e2e e;
	struct iw_wc wc[2];

	e2e_opts_default(&o);
	o.rfc7306 = IW_RFC7306_ALL;
	e2e_connect(&e, &o);
	for (int i = 0; i < 2; i++) {
		struct iw_sge sg = { (uintptr_t)e.s.buf, 64, e.s.mr->lkey };
		struct iw_recv_wr rw = { .wr_id = 10 + (uint64_t)i,
					 .sg_list = &sg, .num_sge = 1 };
		struct iw_send_wr wr = {
			.wr_id = (uint64_t)i,
			.opcode = IW_WR_SEND_WITH_IMM,
			.send_flags = IW_SEND_SIGNALED |
				      (i ? IW_SEND_SOLICITED : 0),
			.imm_data = 42 + (uint64_t)i,
		};

		ck_assert_int_eq(iw_post_recv(e.s.qp, &rw, NULL), 0);
		ck_assert_int_eq(iw_post_send(e.c.qp, &wr, NULL), 0);
	}
	e2e_poll(e.s.cq, wc, 2, E2E_WAIT_MS);
	for (int i = 0; i < 2; i++) {
		ck_assert_uint_eq(wc[i].wr_id, 10 + (uint64_t)i);
		ck_assert_int_eq(wc[i].opcode, IW_WC_RECV);
		ck_assert_uint_eq(wc[i].byte_len, 0);
		ck_assert_uint_eq(wc[i].imm_data, 42 + (uint64_t)i);
		ck_assert_uint_eq(wc[i].wc_flags,
				  IW_WC_WITH_IMM | (i ? IW_WC_SOLICITED : 0));
	}
	e2e_poll(e.c.cq, wc, 2, E2E_WAIT_MS);
	ck_assert_int_eq(wc[0].opcode, IW_WC_SEND);
	ck_assert_int_eq(wc[1].opcode, IW_WC_SEND);
	e2e_teardown(&e);
}
END_TEST

/* ---- extensions off ------------------------------------------------------ */

/*
 * A QP that did not enable an extension cannot post its work, and one
 * that receives it answers as it answers any unknown opcode: the client
 * has RFC 7306, the server none.
 */
START_TEST(a_qp_without_the_extensions_answers_them_as_unknown_opcodes)
{
	struct e2e_opts oc, os;
	struct e2e e;
	struct iw_cm_event *ev;
	struct iw_wc wc;
	uint64_t *res;
	struct iw_send_wr wr = { .opcode = IW_WR_SEND_WITH_IMM };

	e2e_opts_default(&oc);
	e2e_opts_default(&os);
	oc.rfc7306 = IW_RFC7306_ALL;
	memset(&e, 0, sizeof(e));
	e2e_side_open(&e.c, &oc);
	e2e_side_open(&e.s, &os);
	e2e_request(&e, &oc);
	ck_assert_int_eq(iw_accept(e.s.id, e.s.qp, &os.sparam), 0);
	e2e_expect(e.s.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	e2e_expect(e.c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);

	/* the server may not post them */
	ck_assert_int_eq(iw_post_send(e.s.qp, &wr, NULL), -EOPNOTSUPP);

	res = (uint64_t *)(void *)e.c.buf;
	*(uint64_t *)(void *)e.s.buf = 5;
	post_atomic(&e.c, 7, IW_WR_ATOMIC_FETCH_AND_ADD, res, &e.s, 1, 0);
	e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
	ck_assert_uint_eq(wc.wr_id, 7);
	ck_assert_uint_eq(wc.status, IW_WC_REM_OP_ERR);
	ck_assert_int_eq(wc.err, -IW_ETERMINATED);
	ev = e2e_event(e.c.ch, E2E_WAIT_MS);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_ERROR);
	ck_assert(ev->terminate.valid && ev->terminate.received);
	ck_assert_uint_eq(ev->terminate.layer, 0);
	ck_assert_uint_eq(ev->terminate.etype, 2);
	ck_assert_uint_eq(ev->terminate.ecode, 0x06);
	iw_ack_cm_event(ev);
	ev = e2e_event(e.s.ch, E2E_WAIT_MS);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_ERROR);
	ck_assert_int_eq(ev->status, -IW_ERDMAP_OPCODE);
	iw_ack_cm_event(ev);
	ck_assert_uint_eq(*(uint64_t *)(void *)e.s.buf, 5);
	e2e_teardown(&e);
}
END_TEST

/*
 * A region registered without IW_ACCESS_REMOTE_ATOMIC refuses atomics:
 * the requester's completes with a remote access error.
 */
START_TEST(an_atomic_needs_the_remote_atomic_right)
{
	struct e2e_opts o;
	struct e2e e;
	struct iw_mr *plain;
	struct iw_wc wc;
	struct e2e_side target;

	e2e_opts_default(&o);
	o.rfc7306 = IW_RFC7306_ATOMICS;
	e2e_connect(&e, &o);
	plain = iw_reg_mr(e.s.pd, e.s.buf + 4096, 64,
			  IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE |
				  IW_ACCESS_REMOTE_READ);
	ck_assert_ptr_nonnull(plain);
	target = e.s;
	target.buf = e.s.buf + 4096;
	target.mr = plain;
	memset(target.buf, 0, 8);
	post_atomic(&e.c, 1, IW_WR_ATOMIC_CMP_AND_SWP,
		    (uint64_t *)(void *)e.c.buf, &target, 0, 99);
	e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
	ck_assert_uint_eq(wc.status, IW_WC_REM_ACCESS_ERR);
	ck_assert_uint_eq(*(uint64_t *)(void *)target.buf, 0);
	ck_assert_int_eq(iw_dereg_mr(plain), 0);
	e2e_teardown(&e);
}
END_TEST

START_TEST(qp_creation_checks_the_new_fields)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct iw_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4 },
	};

	struct iw_cq *cq;

	e2e_opts_default(&o);
	e2e_side_open(&s, &o);
	cq = iw_create_cq(s.ctx, 16, NULL);
	ck_assert_ptr_nonnull(cq);
	qa.send_cq = qa.recv_cq = cq;
	qa.comp_mask = 1u << 5;
	errno = 0;
	ck_assert_ptr_null(iw_create_qp(s.pd, &qa));
	ck_assert_int_eq(errno, EINVAL);
	qa.comp_mask = IW_QP_INIT_ATTR_RFC7306;
	qa.rfc7306 = 1u << 7;
	errno = 0;
	ck_assert_ptr_null(iw_create_qp(s.pd, &qa));
	ck_assert_int_eq(errno, EINVAL);
	/* without its bit the field is not read */
	qa.comp_mask = 0;
	{
		struct iw_qp *qp = iw_create_qp(s.pd, &qa);
		struct iw_send_wr wr = { .opcode = IW_WR_SEND_WITH_IMM };

		ck_assert_ptr_nonnull(qp);
		ck_assert_int_eq(iw_post_send(qp, &wr, NULL), -EOPNOTSUPP);
		ck_assert_int_eq(iw_destroy_qp(qp), 0);
	}
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	e2e_side_close(&s);
}
END_TEST

/* ---- the 0.1 ABI ---------------------------------------------------------- */

/* struct iw_wc and struct iw_qp_init_attr as libiwarp 0.1 had them. */
struct wc_0_1 {
	uint64_t wr_id;
	enum iw_wc_status status;
	enum iw_wc_opcode opcode;
	uint32_t byte_len;
	uint32_t invalidated_rkey;
	unsigned int wc_flags;
	struct iw_qp *qp;
	int err;
};

struct qp_init_attr_0_1 {
	struct iw_cq *send_cq;
	struct iw_cq *recv_cq;
	struct iw_srq *srq;
	void *qp_context;
	struct iw_qp_cap cap;
	int sq_sig_all;
};

/*
 * A binary built against 0.1 binds iw_poll_cq@IWARP_0.1 and
 * iw_create_qp@IWARP_0.1: the first writes entries of the old size (an
 * array of them is filled exactly, nothing after it), the second reads no
 * field the old structure lacks.
 */
START_TEST(binaries_built_against_0_1_keep_their_structure_sizes)
{
	int (*poll_0_1)(struct iw_cq *, int, struct wc_0_1 *);
	struct iw_qp *(*create_0_1)(struct iw_pd *, struct qp_init_attr_0_1 *);
	struct {
		struct qp_init_attr_0_1 a;
		uint32_t after[2]; /* where comp_mask and rfc7306 now are */
	} old;
	struct {
		struct wc_0_1 wc[3];
		uint8_t guard[64];
	} out;
	struct e2e_opts o;
	struct e2e e;
	struct iw_qp *qp;
	struct iw_cq *cq;
	int n = 0;

	poll_0_1 = (int (*)(struct iw_cq *, int, struct wc_0_1 *))dlvsym(
		RTLD_DEFAULT, "iw_poll_cq", "IWARP_0.1");
	ck_assert_msg(poll_0_1 != NULL, "no iw_poll_cq@IWARP_0.1: %s",
		      dlerror());
	create_0_1 = (struct iw_qp *(*)(struct iw_pd *,
					struct qp_init_attr_0_1 *))dlvsym(
		RTLD_DEFAULT, "iw_create_qp", "IWARP_0.1");
	ck_assert_msg(create_0_1 != NULL, "no iw_create_qp@IWARP_0.1: %s",
		      dlerror());

	e2e_opts_default(&o);
	e2e_connect(&e, &o);
	/* garbage where the new fields are would be refused if read */
	cq = iw_create_cq(e.c.ctx, 16, NULL);
	ck_assert_ptr_nonnull(cq);
	memset(&old, 0xff, sizeof(old));
	old.a = (struct qp_init_attr_0_1){
		.send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 2, .max_recv_wr = 2 },
	};
	qp = create_0_1(e.c.pd, &old.a);
	ck_assert_ptr_nonnull(qp);
	ck_assert_int_eq(iw_destroy_qp(qp), 0);
	/* the same octets given to the 0.2 call are refused: they are read */
	ck_assert_ptr_null(iw_create_qp(e.c.pd, (struct iw_qp_init_attr *)&old));
	ck_assert_int_eq(iw_destroy_cq(cq), 0);

	for (int i = 0; i < 3; i++) {
		struct iw_sge sg = { (uintptr_t)e.c.buf, 16, e.c.mr->lkey };
		struct iw_send_wr wr = {
			.wr_id = 70 + (uint64_t)i, .sg_list = &sg, .num_sge = 1,
			.opcode = IW_WR_RDMA_WRITE,
			.send_flags = IW_SEND_SIGNALED,
		};

		wr.rdma.remote_addr = (uintptr_t)e.s.buf;
		wr.rdma.rkey = e.s.mr->rkey;
		ck_assert_int_eq(iw_post_send(e.c.qp, &wr, NULL), 0);
	}
	memset(out.guard, 0xa5, sizeof(out.guard));
	/* the Writes wait as long as the handshake took (the first FPDU's
	 * hold, conn_hold_first_fpdu()): poll for up to 5 s */
	for (int tries = 0; n < 3 && tries < 5000; tries++) {
		int r = poll_0_1(e.c.cq, 3 - n, out.wc + n);

		ck_assert_int_ge(r, 0);
		n += r;
		if (!r)
			usleep(1000);
	}
	ck_assert_int_eq(n, 3);
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(out.wc[i].wr_id, 70 + (uint64_t)i);
		ck_assert_int_eq(out.wc[i].opcode, IW_WC_RDMA_WRITE);
		ck_assert_uint_eq(out.wc[i].status, IW_WC_SUCCESS);
		ck_assert_ptr_eq(out.wc[i].qp, e.c.qp);
	}
	for (size_t k = 0; k < sizeof(out.guard); k++)
		ck_assert_uint_eq(out.guard[k], 0xa5);
	e2e_teardown(&e);
}
END_TEST

static Suite *rfc7306_suite(void)
{
	Suite *s = suite_create("rfc7306");
	TCase *tc = tcase_create("atomics");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, concurrent_fetch_and_add_from_several_qps_sums_exactly);
	tcase_add_test(tc, compare_and_swap_loops_count_exactly);
	tcase_add_test(tc, an_atomic_needs_the_remote_atomic_right);
	suite_add_tcase(s, tc);

	tc = tcase_create("immediate");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, write_with_immediate_delivers_data_and_value_in_order);
	tcase_add_test(tc, send_with_immediate_completes_a_receive_with_the_value);
	suite_add_tcase(s, tc);

	tc = tcase_create("negotiation");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc,
		a_qp_without_the_extensions_answers_them_as_unknown_opcodes);
	tcase_add_test(tc, qp_creation_checks_the_new_fields);
	tcase_add_test(tc, binaries_built_against_0_1_keep_their_structure_sizes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(rfc7306_suite());
}
