// SPDX-License-Identifier: MIT
/*
 * Who drives the stack: the progress modes of a context, the
 * application's own polls that run the receive path, the loop's thread
 * that stands down while they do and takes over again, the lock-free CQ
 * under threads that poll, post and tear down at once, and the growth
 * rule of struct iw_context_attr, and how long a waiter that lost its
 * processor stops spinning.
 */
#include "config.h" /* _GNU_SOURCE: dlvsym */

#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "e2e.h"
#include "verbs/spin.h"

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* ---- manual mode: one thread drives both ends ------------------------ */

struct manual {
	struct e2e e;
	struct iw_context *ctx[2];
};

static void pump(struct manual *m)
{
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(iw_progress(m->ctx[i], 0), 0);
}

/* The next event on @ch, running both contexts' loops meanwhile. */
static struct iw_cm_event *manual_event(struct manual *m,
					struct iw_cm_channel *ch,
					enum iw_cm_event_type type)
{
	long long end = now_ms() + E2E_WAIT_MS;
	struct iw_cm_event *ev;
	int rc;

	while ((rc = iw_get_cm_event(ch, &ev)) == -EAGAIN) {
		require(now_ms() < end, "no %s in manual mode",
			iw_cm_event_str(type));
		pump(m);
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(ev->event == type, "%s (%s), wanted %s",
		      iw_cm_event_str(ev->event), iw_strerror(ev->status),
		      iw_cm_event_str(type));
	return ev;
}

/*
 * @n completions of @cq, polling it; between polls both contexts' loops
 * run (pump()), which moves the other end on.
 */
static void manual_poll(struct manual *m, struct iw_cq *cq, struct iw_wc *wc,
			int n)
{
	long long end = now_ms() + E2E_WAIT_MS;

	for (int got = 0; got < n;) {
		int r = iw_poll_cq(cq, n - got, wc + got);

		ck_assert_int_ge(r, 0);
		got += r;
		require(got == n || now_ms() < end, "%d of %d completions",
			got, n);
		pump(m);
	}
	for (int i = 0; i < n; i++)
		ck_assert_msg(wc[i].status == IW_WC_SUCCESS, "%s",
			      iw_wc_status_str(wc[i].status));
}

static void manual_connect(struct manual *m)
{
	struct e2e_opts o;
	struct iw_cm_event *ev;
	struct e2e *e = &m->e;

	e2e_opts_default(&o);
	o.progress = IW_PROGRESS_MANUAL;
	o.buf_len = 2 << 20; /* a Read lands behind what it reads */
	memset(m, 0, sizeof(*m));
	e2e_side_open(&e->c, &o);
	e2e_side_open(&e->s, &o);
	m->ctx[0] = e->c.ctx;
	m->ctx[1] = e->s.ctx;
	/* non-blocking channels: a look runs the loop once, then -EAGAIN */
	for (int i = 0; i < 2; i++) {
		int fd = iw_cm_channel_fd(i ? e->s.ch : e->c.ch);

		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	}
	e->listen = iw_create_id(e->s.ch, NULL);
	ck_assert_int_eq(iw_listen(e->listen, "127.0.0.1", "0", 4), 0);
	e2e_port(e->listen, e->port, sizeof(e->port));
	e->c.id = iw_create_id(e->c.ch, NULL);
	ck_assert_int_eq(iw_connect(e->c.id, "127.0.0.1", e->port, e->c.qp,
				    &o.cparam),
			 0);
	ev = manual_event(m, e->s.ch, IW_CM_EVENT_CONNECT_REQUEST);
	e->s.id = ev->id;
	iw_ack_cm_event(ev);
	ck_assert_int_eq(iw_accept(e->s.id, e->s.qp, &o.sparam), 0);
	iw_ack_cm_event(manual_event(m, e->s.ch, IW_CM_EVENT_ESTABLISHED));
	iw_ack_cm_event(manual_event(m, e->c.ch, IW_CM_EVENT_ESTABLISHED));
}

static void post_send(struct iw_qp *qp, enum iw_wr_opcode op, void *buf,
		      uint32_t len, uint32_t lkey, uint64_t raddr,
		      uint32_t rkey, uint64_t wr_id)
{
	struct iw_sge sge = { (uintptr_t)buf, len, lkey };
	struct iw_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IW_SEND_SIGNALED,
		.rdma = { raddr, rkey },
	};

	ck_assert_int_eq(iw_post_send(qp, &wr, NULL), 0);
}

static void post_recv(struct iw_qp *qp, void *buf, uint32_t len,
		      uint32_t lkey, uint64_t wr_id)
{
	struct iw_sge sge = { (uintptr_t)buf, len, lkey };
	struct iw_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				 .num_sge = 1 };

	ck_assert_int_eq(iw_post_recv(qp, &wr, NULL), 0);
}

/* A first Send each way is done: the initiator's first FPDU waits on a timer. */
static void manual_warm_up(struct manual *m)
{
	struct e2e_side *c = &m->e.c, *s = &m->e.s;
	struct iw_wc wc;

	post_recv(s->qp, s->buf, 64, s->mr->lkey, 1);
	post_send(c->qp, IW_WR_SEND, c->buf, 64, c->mr->lkey, 0, 0, 2);
	manual_poll(m, s->cq, &wc, 1);
	manual_poll(m, c->cq, &wc, 1);
}

static void manual_close(struct manual *m)
{
	iw_disconnect(m->e.c.id);
	iw_ack_cm_event(manual_event(m, m->e.c.ch, IW_CM_EVENT_DISCONNECTED));
	iw_ack_cm_event(manual_event(m, m->e.s.ch, IW_CM_EVENT_DISCONNECTED));
	e2e_teardown(&m->e);
}

/*
 * With no thread at all, Sends, Writes and Reads of several sizes move
 * only inside the application's calls: a Send sits unplaced while the
 * receiving side makes none, and lands at its next poll.
 */
START_TEST(manual_mode_moves_data_only_inside_the_callers_calls)
{
	static const uint32_t sizes[] = { 1, 8, 4097, 65536, 1 << 20 };
	struct manual m;
	struct e2e_side *c = &m.e.c, *s = &m.e.s;
	struct iw_wc wc[2];

	manual_connect(&m);
	manual_warm_up(&m);
	memset(s->buf, 0, 64);
	post_recv(s->qp, s->buf, 64, s->mr->lkey, 1);
	e2e_fill(c->buf, 64, 7);
	post_send(c->qp, IW_WR_SEND, c->buf, 64, c->mr->lkey, 0, 0, 2);
	usleep(50 * 1000);
	for (int i = 0; i < 64; i++)
		ck_assert_int_eq(s->buf[i], 0);
	ck_assert_int_eq(iw_poll_cq(s->cq, 1, wc), 1); /* the poll reads it */
	ck_assert_int_eq(wc[0].opcode, IW_WC_RECV);
	ck_assert_int_eq(wc[0].byte_len, 64);
	ck_assert_mem_eq(s->buf, c->buf, 64);
	manual_poll(&m, c->cq, wc, 1);

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		uint32_t n = sizes[k];

		e2e_fill(c->buf, n, (uint32_t)k);
		post_recv(s->qp, s->buf, n, s->mr->lkey, 10 + k);
		post_send(c->qp, IW_WR_SEND, c->buf, n, c->mr->lkey, 0, 0, 3);
		manual_poll(&m, s->cq, wc, 1);
		ck_assert_uint_eq(wc[0].byte_len, n);
		manual_poll(&m, c->cq, wc, 1);
		ck_assert_mem_eq(s->buf, c->buf, n);

		e2e_fill(c->buf, n, (uint32_t)k + 100);
		post_send(c->qp, IW_WR_RDMA_WRITE, c->buf, n, c->mr->lkey,
			  (uintptr_t)s->buf, s->mr->rkey, 4);
		manual_poll(&m, c->cq, wc, 1);
		/* the Write is placed when the server side next moves */
		for (long long end = now_ms() + E2E_WAIT_MS;
		     memcmp(s->buf, c->buf, n) && now_ms() < end;)
			iw_poll_cq(s->cq, 0, NULL), pump(&m);
		ck_assert_mem_eq(s->buf, c->buf, n);

		memset(c->buf + n, 0, n);
		post_send(c->qp, IW_WR_RDMA_READ, c->buf + n, n, c->mr->lkey,
			  (uintptr_t)s->buf, s->mr->rkey, 5);
		manual_poll(&m, c->cq, wc, 1);
		ck_assert_int_eq(wc[0].opcode, IW_WC_RDMA_READ);
		ck_assert_mem_eq(c->buf + n, s->buf, n);
	}
	manual_close(&m);
}
END_TEST

/*
 * Work posted while a Read's response is due leaves when that response
 * comes in, together: here the Sends posted behind the Read are not on
 * the wire while the requester reads nothing, and arrive with the first
 * look at its socket, after the Read in its send queue's order.
 */
START_TEST(work_posted_behind_a_read_leaves_with_its_response)
{
	enum { N = 3, READ_LEN = 256 * 1024 };
	struct manual m;
	struct e2e_side *c = &m.e.c, *s = &m.e.s;
	struct iw_wc wc[N + 1];
	long long end;

	manual_connect(&m);
	manual_warm_up(&m);

	e2e_fill(s->buf, READ_LEN, 5);
	for (int i = 0; i < N; i++)
		post_recv(s->qp, s->buf + READ_LEN + 64 * i, 64, s->mr->lkey,
			  10 + i);
	post_send(c->qp, IW_WR_RDMA_READ, c->buf, READ_LEN, c->mr->lkey,
		  (uintptr_t)s->buf, s->mr->rkey, 20);
	for (int i = 0; i < N; i++) {
		memset(c->buf + READ_LEN + 64 * i, 'a' + i, 64);
		post_send(c->qp, IW_WR_SEND, c->buf + READ_LEN + 64 * i, 64,
			  c->mr->lkey, 0, 0, 21 + i);
	}
	/* only the responder moves: it answers, but hears no Send */
	end = now_ms() + 100;
	while (now_ms() < end) {
		ck_assert_int_eq(iw_poll_cq(s->cq, N, wc), 0);
		ck_assert_int_eq(iw_progress(m.ctx[1], 0), 0);
	}
	/* the requester reads the response and sends what waited */
	manual_poll(&m, c->cq, wc, N + 1);
	ck_assert_uint_eq(wc[0].wr_id, 20);
	ck_assert_int_eq(wc[0].opcode, IW_WC_RDMA_READ);
	ck_assert_mem_eq(c->buf, s->buf, READ_LEN);
	for (int i = 0; i < N; i++)
		ck_assert_uint_eq(wc[1 + i].wr_id, 21 + i);
	manual_poll(&m, s->cq, wc, N);
	for (int i = 0; i < N; i++) {
		ck_assert_uint_eq(wc[i].wr_id, 10 + i);
		ck_assert_mem_eq(s->buf + READ_LEN + 64 * i,
				 c->buf + READ_LEN + 64 * i, 64);
	}
	manual_close(&m);
}
END_TEST

/*
 * The same with the library's thread and an application that never polls
 * the requester's CQ: the thread that reads the response sends the rest.
 */
START_TEST(thread_mode_sends_what_waited_behind_a_read)
{
	enum { READ_LEN = 1 << 20 };
	struct e2e e;
	struct e2e_opts o;
	struct iw_wc wc[2];

	e2e_opts_default(&o);
	o.buf_len = 2 * READ_LEN;
	e2e_connect(&e, &o);
	e2e_fill(e.s.buf, READ_LEN, 9);
	post_recv(e.s.qp, e.s.buf + READ_LEN, 64, e.s.mr->lkey, 1);
	post_send(e.c.qp, IW_WR_RDMA_READ, e.c.buf, READ_LEN, e.c.mr->lkey,
		  (uintptr_t)e.s.buf, e.s.mr->rkey, 2);
	memset(e.c.buf + READ_LEN, 'z', 64);
	post_send(e.c.qp, IW_WR_SEND, e.c.buf + READ_LEN, 64, e.c.mr->lkey,
		  0, 0, 3);
	e2e_poll(e.s.cq, wc, 1, E2E_WAIT_MS);
	ck_assert_int_eq(wc[0].status, IW_WC_SUCCESS);
	ck_assert_mem_eq(e.s.buf + READ_LEN, e.c.buf + READ_LEN, 64);
	e2e_poll(e.c.cq, wc, 2, E2E_WAIT_MS);
	ck_assert_uint_eq(wc[0].wr_id, 2);
	ck_assert_uint_eq(wc[1].wr_id, 3);
	ck_assert_mem_eq(e.c.buf, e.s.buf, READ_LEN);
	e2e_teardown(&e);
}
END_TEST

/* ---- manual mode: the blocking calls run the loop -------------------- */

struct blocking_server {
	struct e2e_side s;
	struct iw_cm_id *listen;
	char port[16];
	atomic_bool listening;
	uint8_t got[32];
	int rc;
};

/* Waits only in iw_get_cm_event() and iw_get_cq_event(), which must run it. */
static void *blocking_server(void *arg)
{
	struct blocking_server *b = arg;
	struct iw_cm_event *ev;
	struct iw_wc wc;
	void *cq_ctx;

	post_recv(b->s.qp, b->s.buf, sizeof(b->got), b->s.mr->lkey, 1);
	b->listen = iw_create_id(b->s.ch, NULL);
	ck_assert_int_eq(iw_listen(b->listen, "127.0.0.1", "0", 4), 0);
	e2e_port(b->listen, b->port, sizeof(b->port));
	atomic_store(&b->listening, true);
	ck_assert_int_eq(iw_get_cm_event(b->s.ch, &ev), 0);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_CONNECT_REQUEST);
	b->s.id = ev->id;
	iw_ack_cm_event(ev);
	ck_assert_int_eq(iw_accept(b->s.id, b->s.qp, NULL), 0);
	ck_assert_int_eq(iw_get_cm_event(b->s.ch, &ev), 0);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_ESTABLISHED);
	iw_ack_cm_event(ev);
	ck_assert_int_eq(iw_req_notify_cq(b->s.cq, 0), 0);
	while (iw_poll_cq(b->s.cq, 1, &wc) == 0) {
		ck_assert_int_eq(iw_get_cq_event(b->s.cq, &cq_ctx), 0);
		iw_ack_cq_events(b->s.cq, 1);
		iw_req_notify_cq(b->s.cq, 0);
	}
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IW_WC_RECV);
	memcpy(b->got, b->s.buf, sizeof(b->got));
	b->rc = 0;
	return NULL;
}

START_TEST(manual_mode_blocking_calls_run_the_loop)
{
	struct blocking_server b = { .rc = -1 };
	struct e2e_opts so, co;
	struct e2e_side c;
	struct iw_wc wc;
	pthread_t th;

	e2e_opts_default(&so);
	so.progress = IW_PROGRESS_MANUAL;
	e2e_opts_default(&co);
	e2e_side_open(&b.s, &so);
	e2e_side_open(&c, &co);
	atomic_init(&b.listening, false);
	ck_assert_int_eq(pthread_create(&th, NULL, blocking_server, &b), 0);
	for (long long end = now_ms() + E2E_WAIT_MS; !atomic_load(&b.listening);)
		require(now_ms() < end, "the server did not listen");
	c.id = iw_create_id(c.ch, NULL);
	ck_assert_int_eq(iw_connect(c.id, "127.0.0.1", b.port, c.qp, NULL), 0);
	e2e_expect(c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	memcpy(c.buf, "asleep in iw_get_cq_event()", 28);
	post_send(c.qp, IW_WR_SEND, c.buf, 28, c.mr->lkey, 0, 0, 9);
	e2e_poll(c.cq, &wc, 1, E2E_WAIT_MS);
	pthread_join(th, NULL);
	ck_assert_int_eq(b.rc, 0);
	ck_assert_mem_eq(b.got, "asleep in iw_get_cq_event()", 28);
	ck_assert_int_eq(iw_destroy_id(b.listen), 0);
	e2e_side_close(&c);
	e2e_side_close(&b.s);
}
END_TEST

/* ---- manual mode: a thread asleep on a CQ of its own ---------------- */

/* Reads of a socket by a thread running the loop, counted while asked. */
static _Thread_local bool loop_runner;
static atomic_bool counting_reads;
static atomic_int runner_reads;

/* Reads by the calling thread, counted while it asks. */
static _Thread_local bool counting_mine;
static _Thread_local int my_reads;

static void count_read(void)
{
	if (counting_mine)
		my_reads++;
	if (loop_runner && atomic_load(&counting_reads))
		atomic_fetch_add(&runner_reads, 1);
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	static ssize_t (*real)(int, void *, size_t, int);

	if (!real)
		real = (ssize_t(*)(int, void *, size_t, int))dlsym(RTLD_NEXT,
								    "recv");
	count_read();
	return real(fd, buf, len, flags);
}

ssize_t readv(int fd, const struct iovec *iov, int n)
{
	static ssize_t (*real)(int, const struct iovec *, int);

	if (!real)
		real = (ssize_t(*)(int, const struct iovec *,
				   int))dlsym(RTLD_NEXT, "readv");
	count_read();
	return real(fd, iov, n);
}

struct runner {
	struct iw_context *ctx;
	atomic_bool stop;
};

static void *run_loop(void *arg)
{
	struct runner *r = arg;

	loop_runner = true;
	while (!atomic_load(&r->stop))
		ck_assert_int_eq(iw_progress(r->ctx, 20), 0);
	return NULL;
}

enum { WAITER_SENDS = 50 };

/* The client's end: a 64-octet Send every two milliseconds. */
static void *send_slowly(void *arg)
{
	struct manual *m = arg;
	struct e2e_side *c = &m->e.c;
	struct iw_wc wc;

	for (int i = 0; i < WAITER_SENDS; i++) {
		long long end = now_ms() + E2E_WAIT_MS;

		memset(c->buf + 64 * i, i, 64);
		post_send(c->qp, IW_WR_SEND, c->buf + 64 * i, 64, c->mr->lkey,
			  0, 0, (uint64_t)i);
		while (iw_poll_cq(c->cq, 1, &wc) == 0)
			require(now_ms() < end, "Send %d never left", i);
		ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
		usleep(2000);
	}
	return NULL;
}

/*
 * Another thread runs the server context's loop all along.  While the
 * application's thread sleeps in iw_progress_cq() on the server's CQ,
 * the Sends that arrive are the sleeper's to read: the loop's thread
 * makes no read at all, though its release timer runs every 10 ms.  Once
 * the waits stop, the loop takes the connection back and places a Write
 * nobody polls for.
 */
START_TEST(manual_mode_a_cq_waiter_reads_its_own_connection)
{
	struct manual m;
	struct e2e_side *c = &m.e.c, *s = &m.e.s;
	struct runner r = { 0 };
	struct iw_wc wc[8];
	pthread_t loop, sender;
	long long end;
	int got = 0, reads;

	ck_assert_int_eq(iw_progress_cq(NULL, 0), -EINVAL);
	manual_connect(&m);
	manual_warm_up(&m);
	for (int i = 0; i < WAITER_SENDS; i++)
		post_recv(s->qp, s->buf + 64 * i, 64, s->mr->lkey,
			  (uint64_t)i);
	r.ctx = m.ctx[1];
	ck_assert_int_eq(pthread_create(&loop, NULL, run_loop, &r), 0);
	ck_assert_int_eq(iw_progress_cq(s->cq, 0), 0); /* takes it at once */
	atomic_store(&counting_reads, true);
	ck_assert_int_eq(pthread_create(&sender, NULL, send_slowly, &m), 0);
	end = now_ms() + E2E_WAIT_MS;
	while (got < WAITER_SENDS) {
		int n = iw_poll_cq(s->cq, 8, wc);

		ck_assert_int_ge(n, 0);
		for (int k = 0; k < n; k++) {
			ck_assert_int_eq(wc[k].status, IW_WC_SUCCESS);
			ck_assert_uint_eq(wc[k].wr_id, (uint64_t)(got + k));
		}
		got += n;
		require(now_ms() < end, "%d of %d Sends", got, WAITER_SENDS);
		if (!n)
			ck_assert_int_eq(iw_progress_cq(s->cq, 1000), 0);
	}
	pthread_join(sender, NULL);
	atomic_store(&counting_reads, false);
	ck_assert_mem_eq(s->buf, c->buf, 64 * WAITER_SENDS);
	reads = atomic_load(&runner_reads);
	ck_assert_msg(reads == 0, "the loop's thread made %d reads", reads);

	/* no more waits: the loop's thread places the Write */
	e2e_fill(c->buf, 4096, 99);
	post_send(c->qp, IW_WR_RDMA_WRITE, c->buf, 4096, c->mr->lkey,
		  (uintptr_t)s->buf, s->mr->rkey, 12);
	for (end = now_ms() + E2E_WAIT_MS; memcmp(s->buf, c->buf, 4096);)
		require(now_ms() < end, "the loop never took it back");
	atomic_store(&r.stop, true);
	pthread_join(loop, NULL);
	manual_poll(&m, c->cq, wc, 1);
	manual_close(&m);
}
END_TEST

/*
 * iw_progress() takes back what polls took, but not what a thread
 * waiting in iw_progress_cq() took: that thread reads it between its
 * waits too.  Here the waiter's connection has a Send to read, and three
 * runs of the loop by iw_progress() make no read; the CQ's next poll
 * reads it.
 */
START_TEST(manual_mode_iw_progress_leaves_a_waiters_connection)
{
	struct manual m;
	struct e2e_side *c = &m.e.c, *s = &m.e.s;
	struct iw_wc wc;
	int reads;

	manual_connect(&m);
	manual_warm_up(&m);
	post_recv(s->qp, s->buf, 64, s->mr->lkey, 1);
	ck_assert_int_eq(iw_progress_cq(s->cq, 0), 0); /* takes it */
	e2e_fill(c->buf, 64, 9);
	post_send(c->qp, IW_WR_SEND, c->buf, 64, c->mr->lkey, 0, 0, 2);
	loop_runner = true;
	atomic_store(&runner_reads, 0);
	atomic_store(&counting_reads, true);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(iw_progress(m.ctx[1], 0), 0);
	atomic_store(&counting_reads, false);
	loop_runner = false;
	reads = atomic_load(&runner_reads);
	ck_assert_msg(reads == 0, "iw_progress() made %d reads", reads);
	ck_assert_int_eq(iw_poll_cq(s->cq, 1, &wc), 1);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	ck_assert_mem_eq(s->buf, c->buf, 64);
	manual_poll(&m, c->cq, &wc, 1);
	manual_close(&m);
}
END_TEST

/* ---- N threads -------------------------------------------------------- */

/* Connections spread over several library threads all carry their data. */
START_TEST(threads_mode_carries_every_connection)
{
	enum { N = 5 };
	struct e2e e[N];
	struct e2e_opts o;
	struct iw_wc wc;

	e2e_opts_default(&o);
	o.progress = IW_PROGRESS_THREADS;
	o.progress_threads = 3;
	for (int i = 0; i < N; i++)
		e2e_connect(&e[i], &o);
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < N; i++) {
			uint32_t n = 1000 + 997 * (uint32_t)round;

			/* 20 rounds: n + n stays well inside the 1 MiB buffer */
			e2e_fill(e[i].c.buf, n, (uint32_t)(round * N + i));
			post_send(e[i].c.qp, IW_WR_RDMA_WRITE, e[i].c.buf, n,
				  e[i].c.mr->lkey, (uintptr_t)e[i].s.buf,
				  e[i].s.mr->rkey, 1);
			post_send(e[i].c.qp, IW_WR_RDMA_READ, e[i].c.buf + n, n,
				  e[i].c.mr->lkey, (uintptr_t)e[i].s.buf,
				  e[i].s.mr->rkey, 2);
		}
		for (int i = 0; i < N; i++) {
			uint32_t n = 1000 + 997 * (uint32_t)round;

			e2e_poll(e[i].c.cq, &wc, 1, E2E_WAIT_MS);
			ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
			e2e_poll(e[i].c.cq, &wc, 1, E2E_WAIT_MS);
			ck_assert_int_eq(wc.opcode, IW_WC_RDMA_READ);
			ck_assert_mem_eq(e[i].c.buf + n, e[i].c.buf, n);
		}
	}
	for (int i = 0; i < N; i++)
		e2e_teardown(&e[i]);
}
END_TEST

/* ---- thread mode: handing reads back and forth ---------------------- */

/*
 * The server's application polls its CQ for a while (its polls read the
 * socket and the loop's thread stands down), then stops without arming
 * the CQ.  The loop takes the connection back: the client's RDMA Read of
 * server memory is answered although nobody on the server calls anything.
 */
START_TEST(thread_mode_takes_back_a_connection_nobody_polls)
{
	struct e2e e;
	struct e2e_opts o;
	struct iw_wc wc;

	e2e_opts_default(&o);
	e2e_connect(&e, &o);
	for (int i = 0; i < 200; i++) {
		post_recv(e.s.qp, e.s.buf, 64, e.s.mr->lkey, 1);
		post_send(e.c.qp, IW_WR_SEND, e.c.buf, 64, e.c.mr->lkey, 0, 0,
			  2);
		for (long long end = now_ms() + E2E_WAIT_MS;
		     iw_poll_cq(e.s.cq, 1, &wc) == 0;)
			require(now_ms() < end, "no receive");
		e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
	}
	/* the server's application is gone from here on */
	e2e_fill(e.s.buf, 4096, 3);
	post_send(e.c.qp, IW_WR_RDMA_READ, e.c.buf, 4096, e.c.mr->lkey,
		  (uintptr_t)e.s.buf, e.s.mr->rkey, 3);
	e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	ck_assert_mem_eq(e.c.buf, e.s.buf, 4096);
	e2e_teardown(&e);
}
END_TEST

/* ---- thread mode: requests posted one at a time while polling ------ */

/* The process's sendmsg() calls, counted while counting is on. */
static atomic_bool counting;
static atomic_int sendmsgs;

typedef ssize_t (*sendmsg_fn)(int, const struct msghdr *, int);

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	sendmsg_fn real = (sendmsg_fn)dlsym(RTLD_NEXT, "sendmsg");

	if (atomic_load(&counting))
		atomic_fetch_add(&sendmsgs, 1);
	return real(fd, msg, flags);
}

static void count_sendmsgs(bool on)
{
	if (on)
		atomic_store(&sendmsgs, 0);
	atomic_store(&counting, on);
}

/*
 * A connection whose client polls its empty CQ, so that its polls own
 * it, and whose server has @n receives of 64 octets posted.
 */
static void burst_connect(struct e2e *e, int n)
{
	struct e2e_opts o;
	struct iw_wc wc;

	e2e_opts_default(&o);
	e2e_connect(e, &o);
	post_recv(e->s.qp, e->s.buf, 64, e->s.mr->lkey, 1);
	post_send(e->c.qp, IW_WR_SEND, e->c.buf, 64, e->c.mr->lkey, 0, 0, 1);
	e2e_poll(e->s.cq, &wc, 1, E2E_WAIT_MS);
	e2e_poll(e->c.cq, &wc, 1, E2E_WAIT_MS);
	for (int i = 0; i < n; i++)
		post_recv(e->s.qp, e->s.buf + 64 * i, 64, e->s.mr->lkey,
			  100 + i);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(iw_poll_cq(e->c.cq, 1, &wc), 0);
}

/* Posts Sends @first to @first + @n - 1, one iw_post_send() each. */
static void burst_post(struct e2e *e, int first, int n)
{
	for (int i = first; i < first + n; i++) {
		memset(e->c.buf + 64 * i, 'A' + i, 64);
		post_send(e->c.qp, IW_WR_SEND, e->c.buf + 64 * i, 64,
			  e->c.mr->lkey, 0, 0, 100 + i);
	}
}

/* The server has received Sends 0 to @n - 1, in order, intact. */
static void burst_received(struct e2e *e, int n)
{
	struct iw_wc wc[16];

	ck_assert_int_le(n, 16);
	e2e_poll(e->s.cq, wc, n, E2E_WAIT_MS);
	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(wc[i].status, IW_WC_SUCCESS);
		ck_assert_uint_eq(wc[i].wr_id, 100 + i);
		ck_assert_mem_eq(e->s.buf + 64 * i, e->c.buf + 64 * i, 64);
	}
}

/*
 * Requests posted one per call while the application's polls own the
 * connection leave together at its next poll: the first post writes to
 * the socket, the other fifteen wait for the poll's single write.
 */
START_TEST(thread_mode_sends_a_burst_with_the_next_poll)
{
	enum { N = 16 };
	struct e2e e;
	struct iw_wc wc[N];
	int by_posts;

	burst_connect(&e, N);
	count_sendmsgs(true);
	burst_post(&e, 0, N);
	by_posts = atomic_load(&sendmsgs);
	e2e_poll(e.c.cq, wc, N, E2E_WAIT_MS);
	count_sendmsgs(false);
	/* the loop's timer may have sent once meanwhile */
	require(by_posts >= 1 && by_posts <= 2,
		"%d posts wrote %d times, not once", N, by_posts);
	require(atomic_load(&sendmsgs) <= 3, "%d writes for %d Sends",
		atomic_load(&sendmsgs), N);
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(wc[i].status, IW_WC_SUCCESS);
		ck_assert_uint_eq(wc[i].wr_id, 100 + i);
	}
	burst_received(&e, N);
	e2e_teardown(&e);
}
END_TEST

/*
 * The application posts two requests and stops calling: the loop's
 * thread sends what waited for its poll.
 */
START_TEST(thread_mode_sends_a_burst_nobody_polls_for)
{
	struct e2e e;

	burst_connect(&e, 2);
	burst_post(&e, 0, 2);
	burst_received(&e, 2);
	e2e_teardown(&e);
}
END_TEST

/* Arming a CQ of the QP sends what waited, at once: its owner sleeps. */
START_TEST(thread_mode_sends_a_burst_when_a_cq_is_armed)
{
	struct e2e e;
	int by_posts;

	burst_connect(&e, 2);
	count_sendmsgs(true);
	burst_post(&e, 0, 2);
	by_posts = atomic_load(&sendmsgs);
	ck_assert_int_eq(iw_req_notify_cq(e.c.cq, 0), 0);
	count_sendmsgs(false);
	/* (the loop's timer may have sent the second before the arming) */
	require(by_posts >= 1 && atomic_load(&sendmsgs) == 2,
		"writes: %d by the posts, %d with the arming", by_posts,
		atomic_load(&sendmsgs));
	burst_received(&e, 2);
	e2e_teardown(&e);
}
END_TEST

static long long cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/*
 * The library's threads look on a little after data came, then sleep: a
 * process whose connections went quiet uses next to no processor time.
 */
START_TEST(thread_mode_loops_sleep_once_data_stops)
{
	struct timespec quiet = { 0, 300 * 1000000L }, place = { 0, 50000000L };
	struct e2e e;
	struct iw_wc wc[16];
	long long used;

	burst_connect(&e, 16);
	for (int round = 0; round < 4; round++) {
		/* nobody polls: the loops' threads read and place the Sends */
		burst_post(&e, 0, 16);
		nanosleep(&place, NULL);
		burst_received(&e, 16);
		for (int i = 0; i < 16; i++)
			post_recv(e.s.qp, e.s.buf + 64 * i, 64, e.s.mr->lkey,
				  100 + i);
		e2e_poll(e.c.cq, wc, 16, E2E_WAIT_MS);
	}
	used = cpu_ms();
	nanosleep(&quiet, NULL);
	used = cpu_ms() - used;
	require(used < 60, "%lld ms of processor time in 300 ms of quiet",
		used);
	e2e_teardown(&e);
}
END_TEST

/*
 * A poll that finds the CQ empty once, after one that found completions,
 * leaves the connection with the loop: a program that polls until its
 * send completes and then watches memory, as ib_write_lat does, needs the
 * loop to place its peer's Write.  Who has the connection shows in how
 * two posts in a row leave: with the loop each at once, held by the
 * polls the second waits for the next poll.
 */
START_TEST(thread_mode_one_empty_poll_leaves_the_connection_to_the_loop)
{
	struct e2e e;
	struct iw_wc wc;
	int writes;

	burst_connect(&e, 3);
	/* nobody polls now: the loop's timer takes the connection back */
	usleep(200 * 1000);
	burst_post(&e, 0, 1);
	e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
	ck_assert_int_eq(iw_poll_cq(e.c.cq, 1, &wc), 0);
	count_sendmsgs(true);
	burst_post(&e, 1, 2);
	writes = atomic_load(&sendmsgs);
	count_sendmsgs(false);
	require(writes == 2, "two posts after one empty poll wrote %d times",
		writes);
	burst_received(&e, 3);
	e2e_teardown(&e);
}
END_TEST

/* Reads the calling thread makes in one poll of @cq, which must be empty. */
static int reads_of_empty_poll(struct iw_cq *cq)
{
	struct iw_wc wc;

	my_reads = 0;
	counting_mine = true;
	ck_assert_int_eq(iw_poll_cq(cq, 1, &wc), 0);
	counting_mine = false;
	return my_reads;
}

/*
 * The poll after one that read the connection's socket to its end and
 * came back with a completion finds the CQ empty without reading the
 * socket again, when it comes within CQ_DRAINED_FRESH_NS (nothing can
 * have come that its caller does not answer first); the poll after that
 * reads, and so does one that comes a millisecond late.  A poll that
 * comes straight after may still come late on a loaded machine or under
 * the sanitizers (2 of 6 there): some rounds must show the skip (none
 * does without it), every round the reads.
 */
START_TEST(thread_mode_the_poll_after_a_drained_read_reads_nothing)
{
	enum { ROUNDS = 16 };
	struct timespec late = { 0, 1000000L };
	struct e2e e;
	struct iw_wc wc;
	int skips = 0;

	burst_connect(&e, ROUNDS);
	/* the server's empty polls take its connection from the loop */
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(iw_poll_cq(e.s.cq, 1, &wc), 0);
	for (int i = 0; i < ROUNDS; i++) {
		long long end = now_ms() + E2E_WAIT_MS;
		int n, first, next;

		burst_post(&e, i, 1);
		while ((n = iw_poll_cq(e.s.cq, 1, &wc)) == 0)
			require(now_ms() < end, "Send %d never came", i);
		ck_assert_int_eq(n, 1);
		ck_assert_uint_eq(wc.wr_id, 100 + i);
		if (i % 2) {
			nanosleep(&late, NULL);
			first = reads_of_empty_poll(e.s.cq);
			require(first >= 1, "round %d: a poll a millisecond "
				"after the completion did not read", i);
		} else {
			first = reads_of_empty_poll(e.s.cq);
			skips += first == 0;
		}
		next = reads_of_empty_poll(e.s.cq);
		require(next >= 1, "round %d: the second poll after the "
			"completion did not read", i);
		e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
	}
	require(skips >= 1, "%d of %d polls right after a completion left "
		"the socket alone", skips, ROUNDS / 2);
	e2e_teardown(&e);
}
END_TEST

/*
 * Empty polls in a row are counted per CQ: an empty poll of another CQ
 * just before does not make this CQ's first empty poll its second, which
 * would take the connection from the loop (the two posts after it would
 * then leave in one write).  A thread that polls a control CQ between
 * polls of its data CQ, as perftest's do, keeps each CQ's count apart.
 */
START_TEST(thread_mode_an_empty_poll_of_another_cq_counts_for_that_cq)
{
	struct e2e e;
	struct iw_wc wc;
	struct iw_cq *other;
	int writes;

	burst_connect(&e, 3);
	other = iw_create_cq(e.c.ctx, 4, NULL);
	ck_assert_ptr_nonnull(other);
	/* nobody polls now: the loop's timer takes the connection back */
	usleep(200 * 1000);
	burst_post(&e, 0, 1);
	e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
	ck_assert_int_eq(iw_poll_cq(other, 1, &wc), 0);
	ck_assert_int_eq(iw_poll_cq(e.c.cq, 1, &wc), 0);
	count_sendmsgs(true);
	burst_post(&e, 1, 2);
	writes = atomic_load(&sendmsgs);
	count_sendmsgs(false);
	require(writes == 2, "two posts after the CQ's first empty poll "
		"wrote %d times", writes);
	burst_received(&e, 3);
	ck_assert_int_eq(iw_destroy_cq(other), 0);
	e2e_teardown(&e);
}
END_TEST

/*
 * The application posts 96 MiB in one call (one pass of the post's
 * writes takes at most 64) while its polls own the connection, and stops
 * calling: once the loop's timer has taken the connection back, the loop
 * sends the rest as the socket makes room.
 */
START_TEST(thread_mode_sends_the_rest_when_polls_stop)
{
	enum { N = 96, LEN = 1 << 20 };
	struct e2e e;
	struct e2e_opts o;
	struct iw_wc wc[N + 1];
	struct iw_sge sge, ping;
	struct iw_send_wr wr[N + 1], *bad;

	e2e_opts_default(&o);
	o.buf_len = LEN;
	o.depth = 2 * N;
	e2e_connect(&e, &o);
	e2e_fill(e.c.buf, LEN, 5);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(iw_poll_cq(e.c.cq, 1, wc), 0);
	post_recv(e.s.qp, e.s.buf, 64, e.s.mr->lkey, 1);
	sge = (struct iw_sge){ (uintptr_t)e.c.buf, LEN, e.c.mr->lkey };
	ping = (struct iw_sge){ (uintptr_t)e.c.buf, 64, e.c.mr->lkey };
	for (int i = 0; i <= N; i++)
		wr[i] = (struct iw_send_wr){
			.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1,
			.opcode = i < N ? IW_WR_RDMA_WRITE : IW_WR_SEND,
			.send_flags = IW_SEND_SIGNALED,
			.rdma = { (uintptr_t)e.s.buf, e.s.mr->rkey },
			.next = i < N ? &wr[i + 1] : NULL,
		};
	wr[N].sg_list = &ping;
	ck_assert_int_eq(iw_post_send(e.c.qp, wr, &bad), 0);
	/* only the server's side is called from here on */
	e2e_poll(e.s.cq, wc, 1, E2E_WAIT_MS);
	ck_assert_int_eq(wc[0].status, IW_WC_SUCCESS);
	ck_assert_mem_eq(e.s.buf, e.c.buf, LEN);
	e2e_poll(e.c.cq, wc, N + 1, E2E_WAIT_MS);
	for (int i = 0; i <= N; i++) {
		ck_assert_int_eq(wc[i].status, IW_WC_SUCCESS);
		ck_assert_uint_eq(wc[i].wr_id, (uint64_t)i);
	}
	e2e_teardown(&e);
}
END_TEST

/* ---- manual mode: a connection its polls own -------------------------- */

enum { HELD_WRITES = 8 }; /* 16 MiB: more than both sockets hold */

/*
 * Posts HELD_WRITES Writes of the whole 2 MiB buffer and a Send behind
 * them, in one call; the Send's receive is posted on the server.
 */
static void post_held_writes(struct manual *m, uint64_t first_id)
{
	struct e2e_side *c = &m->e.c, *s = &m->e.s;
	struct iw_sge sge = { (uintptr_t)c->buf, (uint32_t)c->len, c->mr->lkey };
	struct iw_sge last = { (uintptr_t)c->buf, 64, c->mr->lkey };
	struct iw_send_wr wr[HELD_WRITES + 1], *bad;

	post_recv(s->qp, s->buf, 64, s->mr->lkey, first_id);
	for (int i = 0; i <= HELD_WRITES; i++)
		wr[i] = (struct iw_send_wr){
			.wr_id = first_id + (uint64_t)i, .sg_list = &sge,
			.num_sge = 1, .opcode = IW_WR_RDMA_WRITE,
			.send_flags = IW_SEND_SIGNALED,
			.rdma = { (uintptr_t)s->buf, s->mr->rkey },
			.next = i < HELD_WRITES ? &wr[i + 1] : NULL,
		};
	wr[HELD_WRITES].opcode = IW_WR_SEND;
	wr[HELD_WRITES].sg_list = &last;
	ck_assert_int_eq(iw_post_send(c->qp, wr, &bad), 0);
}

/*
 * The server's side alone reads what has come, a few times over; true
 * when the Send behind the Writes came, and with it all of them.
 */
static bool drain_server(struct manual *m)
{
	struct iw_wc wc;
	bool came = false;

	for (int i = 0; i < 64; i++) {
		int n = iw_poll_cq(m->e.s.cq, 1, &wc);

		ck_assert_int_ge(n, 0);
		if (n) {
			ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
			came = true;
		}
		ck_assert_int_eq(iw_progress(m->ctx[1], 0), 0);
	}
	return came;
}

/*
 * Empty polls of a CQ with no queue pair: in manual mode one in 32
 * (MANUAL_LOOP_EVERY) runs the context's loop in passing, as another
 * thread's polls of its own CQ do.  32 of them run it once: the release
 * timer cannot fire twice in one run, so a connection the polls took is
 * still theirs.  Returns how many times the process wrote to a socket
 * meanwhile.
 */
static int polls_elsewhere(struct iw_cq *other)
{
	struct iw_wc wc;

	count_sendmsgs(true);
	for (int i = 0; i < 32; i++)
		ck_assert_int_eq(iw_poll_cq(other, 1, &wc), 0);
	count_sendmsgs(false);
	return atomic_load(&sendmsgs);
}

/*
 * In manual mode too, a connection that the application's polls of an
 * empty CQ move on is theirs alone.  The client's Writes fill its socket
 * while the server reads nothing; two empty polls take the connection;
 * the server then reads, and the socket has room again.  Polls of
 * another CQ, which run the loop in passing, send nothing on it (were it
 * the loop's, each thread's polls would send other threads' streams and
 * wait for the locks their own pollers hold).  iw_progress(), which
 * reads and sends on every connection, takes it back and sends.  And
 * once the polls stop, the loop takes it back by itself: a second such
 * batch leaves with nobody polling the client's CQ.
 */
START_TEST(manual_mode_the_loop_leaves_a_polled_connection_alone)
{
	enum { N = HELD_WRITES + 1 };
	struct manual m;
	struct e2e_side *c = &m.e.c, *s = &m.e.s;
	struct iw_wc wc[N];
	struct iw_cq *other;
	long long end;
	int done = 0, empty = 0, writes;

	manual_connect(&m);
	manual_warm_up(&m);
	other = iw_create_cq(c->ctx, 4, NULL);
	ck_assert_ptr_nonnull(other);
	e2e_fill(c->buf, c->len, 3);
	post_held_writes(&m, 0);
	while (empty < 2) {
		int n = iw_poll_cq(c->cq, N - done, wc + done);

		ck_assert_int_ge(n, 0);
		done += n;
		empty = n ? 0 : empty + 1;
	}
	require(!drain_server(&m), "the Writes did not fill the sockets");
	writes = polls_elsewhere(other);
	require(writes == 0, "polls of another CQ wrote %d times to a "
		"connection that polls own", writes);
	count_sendmsgs(true);
	ck_assert_int_eq(iw_progress(m.ctx[0], 0), 0);
	count_sendmsgs(false);
	require(atomic_load(&sendmsgs) > 0,
		"iw_progress() did not send what the socket held back");
	manual_poll(&m, c->cq, wc + done, N - done);
	for (end = now_ms() + E2E_WAIT_MS; !drain_server(&m);)
		require(now_ms() < end, "the Send never came");
	ck_assert_mem_eq(s->buf, c->buf, c->len);

	/* the client's CQ polled empty, then no more: the loop takes it */
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(iw_poll_cq(c->cq, 1, wc), 0);
	e2e_fill(c->buf, c->len, 4);
	post_held_writes(&m, 100);
	for (end = now_ms() + E2E_WAIT_MS; !drain_server(&m);) {
		require(now_ms() < end, "the loop never took the connection");
		polls_elsewhere(other);
		usleep(1000);
	}
	ck_assert_mem_eq(s->buf, c->buf, c->len);
	manual_poll(&m, c->cq, wc, N);
	for (int i = 0; i < N; i++)
		ck_assert_uint_eq(wc[i].wr_id, 100 + (uint64_t)i);
	ck_assert_int_eq(iw_destroy_cq(other), 0);
	manual_close(&m);
}
END_TEST

/*
 * A disconnect right after the posts sends them first: they complete,
 * and the peer receives them, before the stream ends.
 */
START_TEST(disconnect_sends_a_burst_first)
{
	struct e2e e;
	struct iw_wc wc[2];

	burst_connect(&e, 2);
	burst_post(&e, 0, 2);
	ck_assert_int_eq(iw_disconnect(e.c.id), 0);
	burst_received(&e, 2);
	e2e_poll(e.c.cq, wc, 2, E2E_WAIT_MS);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(wc[i].status, IW_WC_SUCCESS);
		ck_assert_uint_eq(wc[i].wr_id, 100 + i);
	}
	e2e_teardown(&e);
}
END_TEST

/*
 * After polling, the application arms its CQ and sleeps on the CQ's
 * descriptor: the loop watches the socket again at once, so the next Send
 * wakes it.
 */
START_TEST(thread_mode_wakes_a_sleeper_after_polling)
{
	struct e2e e;
	struct e2e_opts o;
	struct iw_wc wc;
	struct pollfd p;

	e2e_opts_default(&o);
	e2e_connect(&e, &o);
	for (int i = 0; i < 100; i++) {
		post_recv(e.s.qp, e.s.buf, 64, e.s.mr->lkey, 1);
		post_send(e.c.qp, IW_WR_SEND, e.c.buf, 64, e.c.mr->lkey, 0, 0,
			  2);
		for (long long end = now_ms() + E2E_WAIT_MS;
		     iw_poll_cq(e.s.cq, 1, &wc) == 0;)
			require(now_ms() < end, "no receive");
		e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
	}
	post_recv(e.s.qp, e.s.buf, 64, e.s.mr->lkey, 7);
	ck_assert_int_eq(iw_req_notify_cq(e.s.cq, 0), 0);
	ck_assert_int_eq(iw_poll_cq(e.s.cq, 1, &wc), 0);
	post_send(e.c.qp, IW_WR_SEND, e.c.buf, 64, e.c.mr->lkey, 0, 0, 2);
	p = (struct pollfd){ iw_cq_fd(e.s.cq), POLLIN, 0 };
	ck_assert_int_eq(poll(&p, 1, 2000), 1);
	ck_assert_int_eq(iw_get_cq_event(e.s.cq, NULL), 0);
	iw_ack_cq_events(e.s.cq, 1);
	ck_assert_int_eq(iw_poll_cq(e.s.cq, 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 7);
	e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
	e2e_teardown(&e);
}
END_TEST

/*
 * A program written for RDMA hardware spins on one CQ (a control
 * channel's) while its peer's RDMA Writes and Read Requests arrive for a
 * QP of another CQ that nobody polls.  The spinning thread places and
 * answers them.  The server's loop is an event_base of the test's that
 * nobody dispatches once the connection is up, so nothing else could;
 * meanwhile CQs of the same context come and go under the spinner.
 */
struct spinner {
	struct iw_cq *cq;
	atomic_bool stop;
};

static void *spin_on_cq(void *arg)
{
	struct spinner *sp = arg;
	struct iw_wc wc;

	while (!atomic_load(&sp->stop))
		require(iw_poll_cq(sp->cq, 1, &wc) == 0, "the control CQ");
	return NULL;
}

START_TEST(thread_mode_spinner_serves_a_cq_nobody_polls)
{
	enum { LEN = 8192 };
	struct spinner sp;
	struct event_base *base;
	struct e2e_opts o;
	struct e2e e;
	struct iw_wc wc;
	pthread_t loop, th;

	base = e2e_base_start(&loop);
	e2e_opts_default(&o);
	memset(&e, 0, sizeof(e));
	e2e_side_open(&e.c, &o);
	e2e_side_open_on(&e.s, &o, base);
	e2e_request(&e, &o);
	ck_assert_int_eq(iw_accept(e.s.id, e.s.qp, &o.sparam), 0);
	e2e_expect(e.s.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	e2e_expect(e.c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	event_base_loopbreak(base);
	pthread_join(loop, NULL);

	sp.cq = iw_create_cq(e.s.ctx, 16, NULL);
	ck_assert_ptr_nonnull(sp.cq);
	atomic_init(&sp.stop, false);
	ck_assert_int_eq(pthread_create(&th, NULL, spin_on_cq, &sp), 0);
	for (int round = 0; round < 50; round++) {
		struct iw_cq *extra = iw_create_cq(e.s.ctx, 8, NULL);
		uint32_t n = LEN - 61 * (uint32_t)round;

		ck_assert_ptr_nonnull(extra);
		e2e_fill(e.c.buf, n, (uint32_t)round);
		post_send(e.c.qp, IW_WR_RDMA_WRITE, e.c.buf, n, e.c.mr->lkey,
			  (uintptr_t)e.s.buf, e.s.mr->rkey, 1);
		post_send(e.c.qp, IW_WR_RDMA_READ, e.c.buf + LEN, n,
			  e.c.mr->lkey, (uintptr_t)e.s.buf, e.s.mr->rkey, 2);
		e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
		ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
		e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
		ck_assert_int_eq(wc.opcode, IW_WC_RDMA_READ);
		ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
		ck_assert_mem_eq(e.c.buf + LEN, e.c.buf, n);
		ck_assert_int_eq(iw_destroy_cq(extra), 0);
	}
	atomic_store(&sp.stop, true);
	pthread_join(th, NULL);
	ck_assert_int_eq(iw_destroy_cq(sp.cq), 0);

	ck_assert_int_eq(pthread_create(&loop, NULL, e2e_dispatch, base), 0);
	e2e_teardown(&e);
	/* an exit, not a break: it holds even if the loop has not started */
	event_base_loopexit(base, NULL);
	pthread_join(loop, NULL);
	event_base_free(base);
}
END_TEST

/* ---- the CQ under threads ------------------------------------------- */

enum { MP_QPS = 3, MP_MSGS = 3000, MP_POLLERS = 2, MP_DEPTH = 64 };
/* every receive is posted before the Sends start: no flow control needed */

/* Three clients, one server context whose QPs all receive into one CQ. */
struct mp {
	struct e2e_side c[MP_QPS];
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_qp *qp[MP_QPS];
	struct iw_cm_id *listen, *id[MP_QPS];
	uint8_t *buf;
	struct iw_mr *mr;
	atomic_int seen[MP_QPS][MP_MSGS];
	atomic_int total;
};

/* Polls the shared CQ. */
static void *mp_poller(void *arg)
{
	struct mp *m = arg;
	long long end = now_ms() + 4 * E2E_WAIT_MS;
	struct iw_wc wc[8];

	while (atomic_load(&m->total) < MP_QPS * MP_MSGS && now_ms() < end) {
		int n = iw_poll_cq(m->cq, 8, wc);

		require(n >= 0, "iw_poll_cq: %s", iw_strerror(n));
		for (int i = 0; i < n; i++) {
			uint64_t q = wc[i].wr_id >> 32, k = wc[i].wr_id & 0xffffffff;

			require(wc[i].status == IW_WC_SUCCESS && q < MP_QPS &&
					k < MP_MSGS,
				"bad completion %llx",
				(unsigned long long)wc[i].wr_id);
			atomic_fetch_add(&m->seen[q][k], 1);
			atomic_fetch_add(&m->total, 1);
		}
	}
	return NULL;
}

/* Sends MP_MSGS messages, at most MP_DEPTH / 2 not yet handed down. */
static void *mp_sender(void *arg)
{
	struct e2e_side *c = arg;
	struct iw_wc wc[16];
	int done = 0;

	for (int k = 0; k < MP_MSGS; k++) {
		post_send(c->qp, IW_WR_SEND, c->buf, 16, c->mr->lkey, 0, 0,
			  (uint64_t)k);
		while (k + 1 - done >= MP_DEPTH / 2 ||
		       (k == MP_MSGS - 1 && done < MP_MSGS)) {
			int n = iw_poll_cq(c->cq, 16, wc);

			require(n >= 0, "iw_poll_cq: %s", iw_strerror(n));
			done += n;
		}
	}
	return NULL;
}

static void mp_open(struct mp *m)
{
	struct iw_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = MP_MSGS,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct e2e_opts o;

	e2e_opts_default(&o);
	o.depth = MP_DEPTH;
	m->ctx = iw_open(NULL);
	ck_assert_ptr_nonnull(m->ctx);
	m->ch = iw_create_cm_channel(m->ctx);
	m->pd = iw_alloc_pd(m->ctx);
	m->cq = iw_create_cq(m->ctx, MP_QPS * (4 + MP_MSGS), NULL);
	m->buf = malloc(4096);
	m->mr = iw_reg_mr(m->pd, m->buf, 4096, IW_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(m->mr);
	qa.send_cq = qa.recv_cq = m->cq;
	m->listen = iw_create_id(m->ch, NULL);
	ck_assert_int_eq(iw_listen(m->listen, "127.0.0.1", "0", MP_QPS), 0);
	for (int i = 0; i < MP_QPS; i++) {
		struct iw_cm_event *ev;
		char port[16];

		m->qp[i] = iw_create_qp(m->pd, &qa);
		ck_assert_ptr_nonnull(m->qp[i]);
		for (int k = 0; k < MP_MSGS; k++)
			post_recv(m->qp[i], m->buf, 16, m->mr->lkey,
				  (uint64_t)i << 32 | (uint64_t)k);
		e2e_side_open(&m->c[i], &o);
		e2e_port(m->listen, port, sizeof(port));
		m->c[i].id = iw_create_id(m->c[i].ch, NULL);
		ck_assert_int_eq(iw_connect(m->c[i].id, "127.0.0.1", port,
					    m->c[i].qp, NULL),
				 0);
		ev = e2e_event(m->ch, E2E_WAIT_MS);
		ck_assert_int_eq(ev->event, IW_CM_EVENT_CONNECT_REQUEST);
		m->id[i] = ev->id;
		iw_ack_cm_event(ev);
		ck_assert_int_eq(iw_accept(m->id[i], m->qp[i], NULL), 0);
		e2e_expect(m->ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
		e2e_expect(m->c[i].ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	}
}

static void mp_close(struct mp *m)
{
	for (int i = 0; i < MP_QPS; i++) {
		ck_assert_int_eq(iw_destroy_id(m->id[i]), 0);
		ck_assert_int_eq(iw_destroy_qp(m->qp[i]), 0);
		e2e_side_close(&m->c[i]);
	}
	ck_assert_int_eq(iw_destroy_id(m->listen), 0);
	ck_assert_int_eq(iw_dereg_mr(m->mr), 0);
	ck_assert_int_eq(iw_destroy_cq(m->cq), 0);
	ck_assert_int_eq(iw_dealloc_pd(m->pd), 0);
	ck_assert_int_eq(iw_destroy_cm_channel(m->ch), 0);
	ck_assert_int_eq(iw_close(m->ctx), 0);
	free(m->buf);
}

/*
 * Three QPs deliver into one CQ, fed by three sending threads and drained
 * by two polling threads: every receive completion is taken exactly once.
 */
START_TEST(cq_many_producers_many_pollers_each_completion_once)
{
	static struct mp m;
	pthread_t snd[MP_QPS], pol[MP_POLLERS];

	memset(&m, 0, sizeof(m));
	mp_open(&m);
	for (int i = 0; i < MP_POLLERS; i++)
		ck_assert_int_eq(pthread_create(&pol[i], NULL, mp_poller, &m), 0);
	for (int i = 0; i < MP_QPS; i++)
		ck_assert_int_eq(pthread_create(&snd[i], NULL, mp_sender,
						&m.c[i]),
				 0);
	for (int i = 0; i < MP_QPS; i++)
		pthread_join(snd[i], NULL);
	for (int i = 0; i < MP_POLLERS; i++)
		pthread_join(pol[i], NULL);
	ck_assert_int_eq(atomic_load(&m.total), MP_QPS * MP_MSGS);
	for (int i = 0; i < MP_QPS; i++)
		for (int k = 0; k < MP_MSGS; k++)
			require(atomic_load(&m.seen[i][k]) == 1,
				"QP %d message %d taken %d times", i, k,
				atomic_load(&m.seen[i][k]));
	mp_close(&m);
}
END_TEST

/*
 * One thread keeps polling a CQ while another connects QPs on it, moves
 * data, and tears connections and QPs down: a poll never touches a QP or
 * a connection that is gone (the sanitizer build would say so).
 */
struct churn {
	struct iw_cq *cq;
	atomic_bool stop;
	atomic_long polls;
};

static void *churn_poller(void *arg)
{
	struct churn *ch = arg;
	struct iw_wc wc[4];

	while (!atomic_load(&ch->stop)) {
		require(iw_poll_cq(ch->cq, 0, NULL) == 0, "poll of none");
		require(iw_poll_cq(ch->cq, 4, wc) >= 0, "poll failed");
		atomic_fetch_add(&ch->polls, 1);
	}
	return NULL;
}

START_TEST(cq_polled_while_its_qps_come_and_go)
{
	struct churn ch = { 0 };
	struct e2e_opts o;
	struct e2e e;
	pthread_t th;

	e2e_opts_default(&o);
	e2e_connect(&e, &o);
	ch.cq = e.s.cq;
	atomic_init(&ch.stop, false);
	ck_assert_int_eq(pthread_create(&th, NULL, churn_poller, &ch), 0);
	for (int round = 0; round < 30; round++) {
		struct iw_qp_init_attr qa = {
			.cap = { .max_send_wr = 4, .max_recv_wr = 4,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};
		struct iw_cm_id *cid = iw_create_id(e.c.ch, NULL);
		struct iw_cm_event *ev;
		struct iw_wc wc;

		/* both ends get fresh QPs and connections each round */
		ck_assert_int_eq(iw_destroy_id(e.c.id), 0);
		e.c.id = cid;
		ck_assert_int_eq(iw_destroy_id(e.s.id), 0);
		e.s.id = NULL;
		ck_assert_int_eq(iw_destroy_qp(e.c.qp), 0);
		qa.send_cq = qa.recv_cq = e.c.cq;
		e.c.qp = iw_create_qp(e.c.pd, &qa);
		ck_assert_int_eq(iw_connect(cid, "127.0.0.1", e.port, e.c.qp,
					    NULL),
				 0);
		ev = e2e_event(e.s.ch, E2E_WAIT_MS);
		ck_assert_int_eq(ev->event, IW_CM_EVENT_CONNECT_REQUEST);
		e.s.id = ev->id;
		iw_ack_cm_event(ev);
		ck_assert_int_eq(iw_destroy_qp(e.s.qp), 0);
		qa.send_cq = qa.recv_cq = e.s.cq;
		e.s.qp = iw_create_qp(e.s.pd, &qa);
		ck_assert_ptr_nonnull(e.s.qp);
		ck_assert_int_eq(iw_accept(e.s.id, e.s.qp, NULL), 0);
		e2e_expect(e.s.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
		e2e_expect(e.c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
		post_send(e.c.qp, IW_WR_RDMA_WRITE, e.c.buf, 512, e.c.mr->lkey,
			  (uintptr_t)e.s.buf, e.s.mr->rkey, 1);
		e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
		ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	}
	atomic_store(&ch.stop, true);
	pthread_join(th, NULL);
	ck_assert_int_gt(atomic_load(&ch.polls), 0);
	e2e_teardown(&e);
}
END_TEST

/* ---- a waiter's spin ------------------------------------------------- */

/*
 * A waiter that lost its processor at a yield stops spinning for a
 * millisecond, twice as long each time it happens again, at most 100 ms,
 * and a millisecond again once none came for that long.
 */
START_TEST(spin_backs_off_longer_while_others_keep_the_processor)
{
	long long b = 0, ms = 1000000LL;

	b = spin_backoff_next(b, 5 * ms); /* the first of a thread */
	ck_assert_int_eq(b, ms);
	for (long long want = 2 * ms; want <= 64 * ms; want *= 2) {
		b = spin_backoff_next(b, 0);
		ck_assert_int_eq(b, want);
	}
	b = spin_backoff_next(b, 99 * ms);
	ck_assert_int_eq(b, 100 * ms);
	b = spin_backoff_next(b, 100 * ms);
	ck_assert_int_eq(b, 100 * ms);
	b = spin_backoff_next(b, 100 * ms + 1);
	ck_assert_int_eq(b, ms);
}
END_TEST

/* ---- the attribute structure ----------------------------------------- */

/* Bits and values the library does not know are refused, not ignored. */
START_TEST(context_attr_refuses_what_it_does_not_know)
{
	struct iw_context_attr a = { .comp_mask = 1u << 7 };
	struct iw_context *ctx;

	errno = 0;
	ck_assert_ptr_null(iw_open(&a));
	ck_assert_int_eq(errno, EINVAL);
	a = (struct iw_context_attr){ .comp_mask = IW_CONTEXT_ATTR_PROGRESS,
				      .progress = 7 };
	ck_assert_ptr_null(iw_open(&a));
	ck_assert_int_eq(errno, EINVAL);
	a.progress = IW_PROGRESS_THREADS;
	a.progress_threads = 5000;
	ck_assert_ptr_null(iw_open(&a));
	ck_assert_int_eq(errno, EINVAL);
	/* without the bit the fields are not read at all */
	a.comp_mask = 0;
	ctx = iw_open(&a);
	ck_assert_ptr_nonnull(ctx);
	ck_assert_int_eq(iw_progress(ctx, 0), 0); /* a thread does it */
	ck_assert_int_eq(iw_close(ctx), 0);
	ck_assert_int_eq(iw_progress(NULL, 0), -EINVAL);
}
END_TEST

/*
 * A binary built against libiwarp 0.1 binds iw_open@IWARP_0.1 and passes
 * the old structure, which had no comp_mask: it is read as it was.
 */
START_TEST(context_attr_of_version_0_1_is_read_as_it_was)
{
	struct attr_0_1 {
		void *base;
		uint32_t max_mr;
		const char *trace_path;
	} old = { NULL, 1u << 24, NULL };
	struct iw_context *(*open_0_1)(const struct attr_0_1 *);
	struct iw_context *ctx;

	open_0_1 = (struct iw_context *(*)(const struct attr_0_1 *))dlvsym(
		RTLD_DEFAULT, "iw_open", "IWARP_0.1");
	ck_assert_msg(open_0_1 != NULL, "no iw_open@IWARP_0.1: %s", dlerror());
	errno = 0;
	ck_assert_ptr_null(open_0_1(&old)); /* max_mr too large, where it was */
	ck_assert_int_eq(errno, EINVAL);
	old.max_mr = 16;
	ctx = open_0_1(&old);
	ck_assert_ptr_nonnull(ctx);
	ck_assert_int_eq(iw_close(ctx), 0);
	ctx = open_0_1(NULL);
	ck_assert_ptr_nonnull(ctx);
	ck_assert_int_eq(iw_close(ctx), 0);
}
END_TEST

static Suite *progress_suite(void)
{
	Suite *s = suite_create("progress");
	TCase *tc = tcase_create("modes");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, manual_mode_moves_data_only_inside_the_callers_calls);
	tcase_add_test(tc, manual_mode_blocking_calls_run_the_loop);
	tcase_add_test(tc, manual_mode_a_cq_waiter_reads_its_own_connection);
	tcase_add_test(tc, manual_mode_iw_progress_leaves_a_waiters_connection);
	tcase_add_test(tc, work_posted_behind_a_read_leaves_with_its_response);
	tcase_add_test(tc, thread_mode_sends_what_waited_behind_a_read);
	tcase_add_test(tc, threads_mode_carries_every_connection);
	tcase_add_test(tc, thread_mode_takes_back_a_connection_nobody_polls);
	tcase_add_test(tc, thread_mode_wakes_a_sleeper_after_polling);
	tcase_add_test(tc, thread_mode_sends_a_burst_with_the_next_poll);
	tcase_add_test(tc, thread_mode_sends_a_burst_nobody_polls_for);
	tcase_add_test(tc, thread_mode_sends_a_burst_when_a_cq_is_armed);
	tcase_add_test(tc, thread_mode_loops_sleep_once_data_stops);
	tcase_add_test(tc, thread_mode_one_empty_poll_leaves_the_connection_to_the_loop);
	tcase_add_test(tc, thread_mode_an_empty_poll_of_another_cq_counts_for_that_cq);
	tcase_add_test(tc, thread_mode_the_poll_after_a_drained_read_reads_nothing);
	tcase_add_test(tc, thread_mode_sends_the_rest_when_polls_stop);
	tcase_add_test(tc, manual_mode_the_loop_leaves_a_polled_connection_alone);
	tcase_add_test(tc, disconnect_sends_a_burst_first);
	tcase_add_test(tc, thread_mode_spinner_serves_a_cq_nobody_polls);
	tcase_add_test(tc, cq_many_producers_many_pollers_each_completion_once);
	tcase_add_test(tc, cq_polled_while_its_qps_come_and_go);
	tcase_add_test(tc, spin_backs_off_longer_while_others_keep_the_processor);
	tcase_add_test(tc, context_attr_refuses_what_it_does_not_know);
	tcase_add_test(tc, context_attr_of_version_0_1_is_read_as_it_was);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(progress_suite());
}
