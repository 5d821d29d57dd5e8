// SPDX-License-Identifier: MIT
/*
 * Hostile peers at a listener, all from 127.0.0.1: connections that never
 * send their MPA Request, peers that open and drop connections in a loop,
 * a peer that leaves right after its Request, private data at and beyond
 * the limit.  Whatever they do, the library holds a bounded amount of
 * memory for them (the backlog times what one handshake holds), the CM
 * event channel stays bounded, and a good client is still served.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"

#define BACKLOG 16
/*
 * What one connection waiting for its MPA Request may hold, at most: its
 * identifier and the events it may report (iwarp(7) states about 4 KiB;
 * what is read lands in the reading thread's buffer), with room to spare.
 */
#define PENDING_BYTES (96 * 1024)
#define SLACK_BYTES (1024 * 1024)

static const char request[] = "MPA ID Req Frame\x10\x02\x00\x04\x00\x01\x00\x01";
#define REQUEST_LEN (sizeof(request) - 1)

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Whether the other end has closed @fd (what it sent is read and dropped). */
static bool closed_by_peer(int fd, int ms)
{
	char b[512];

	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t n;

		if (poll(&p, 1, ms) != 1)
			return false;
		n = read(fd, b, sizeof(b));
		if (n <= 0)
			return true;
	}
}

static void expect_no_event(struct iw_cm_channel *ch, int ms)
{
	struct pollfd p = { iw_cm_channel_fd(ch), POLLIN, 0 };

	ck_assert_msg(poll(&p, 1, ms) == 0, "an unexpected CM event");
}

/* A server side with a listener (backlog BACKLOG); the port is in e->port. */
static void server_open(struct e2e *e, const struct e2e_opts *o)
{
	memset(e, 0, sizeof(*e));
	e2e_side_open(&e->s, o);
	e->listen = iw_create_id(e->s.ch, NULL);
	ck_assert_ptr_nonnull(e->listen);
	ck_assert_int_eq(iw_set_mpa_opts(e->listen, &o->server), 0);
	ck_assert_int_eq(iw_listen(e->listen, "127.0.0.1", "0", BACKLOG), 0);
	e2e_port(e->listen, e->port, sizeof(e->port));
}

/* The good client: connects through the listener, is accepted, pings. */
static void good_client(struct e2e *e, const struct e2e_opts *o)
{
	struct iw_cm_event *ev;

	e2e_side_open(&e->c, o);
	e->c.id = iw_create_id(e->c.ch, NULL);
	ck_assert_int_eq(iw_connect(e->c.id, "127.0.0.1", e->port, e->c.qp,
				    &o->cparam),
			 0);
	ev = e2e_event(e->s.ch, E2E_WAIT_MS);
	ck_assert_msg(ev->event == IW_CM_EVENT_CONNECT_REQUEST,
		      "the good client got no connect request but %s",
		      iw_cm_event_str(ev->event));
	e->s.id = ev->id;
	iw_ack_cm_event(ev);
	ck_assert_int_eq(iw_accept(e->s.id, e->s.qp, &o->sparam), 0);
	e2e_expect(e->s.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	e2e_expect(e->c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	e2e_ping(e, 1, E2E_WAIT_MS);
}

/*
 * A thousand connections that never send their Request: the listener
 * holds the newest BACKLOG of them (the oldest go to make room), so its
 * memory stays within BACKLOG handshakes, and a good client coming last
 * is heard and served at once.
 */
START_TEST(idle_connections_hold_bounded_memory_and_keep_no_one_out)
{
	enum { N = 1000 };
	static int fd[N];
	struct e2e_opts o;
	struct e2e e;
	size_t before, grew;
	long long end;
	int closed = 0;

	e2e_raise_nofile(2 * N + 256);
	e2e_opts_default(&o);
	o.depth = 16;
	server_open(&e, &o);
	/* a first connection made and dropped: the loop's own allocations */
	close(e2e_raw_connect(e.port));
	usleep(100 * 1000);
	before = e2e_heap_in_use();
	for (int i = 0; i < N; i++)
		fd[i] = e2e_raw_connect(e.port);
	end = now_ms() + 20000;
	for (int i = 0; i < N - BACKLOG && now_ms() < end; i++)
		if (closed_by_peer(fd[i], (int)(end - now_ms())))
			closed++;
	ck_assert_int_eq(closed, N - BACKLOG);
	for (int i = N - BACKLOG; i < N; i++)
		ck_assert_msg(!closed_by_peer(fd[i], 0),
			      "connection %d of the newest was closed", i);
	grew = e2e_heap_in_use() - before;
	ck_assert_msg(grew <= BACKLOG * PENDING_BYTES + SLACK_BYTES,
		      "%zu octets held for %d idle connections", grew, N);
	good_client(&e, &o);
	expect_no_event(e.s.ch, 100);
	for (int i = 0; i < N; i++)
		close(fd[i]);
	e2e_teardown(&e);
}
END_TEST

/* Closes @fd with a reset rather than a FIN. */
static void reset(int fd)
{
	struct linger l = { 1, 0 };

	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)), 0);
	close(fd);
}

/*
 * A peer opens and drops connections in a loop: at once, with a reset,
 * inside its Request, right after its Request.  The application takes no
 * listener event meanwhile; the channel holds at most BACKLOG requests
 * (each with the error that followed it), the good connection is served
 * throughout, and once the requests are answered and destroyed the
 * memory is back where it was.
 */
START_TEST(connections_opened_and_dropped_in_a_loop_are_bounded)
{
	enum { N = 2000 };
	struct iw_cm_id *ids[BACKLOG + 1];
	struct e2e_opts o;
	struct e2e e;
	struct iw_cm_event *ev;
	size_t before, after;
	int n_req = 0, n_err = 0, n_ids = 0;

	e2e_raise_nofile(1024);
	e2e_opts_default(&o);
	o.depth = 16;
	server_open(&e, &o);
	good_client(&e, &o);
	before = e2e_heap_in_use();
	for (int i = 0; i < N; i++) {
		int fd = e2e_raw_connect(e.port);

		switch (i % 4) {
		case 0:
			close(fd);
			break;
		case 1:
			reset(fd);
			break;
		case 2:
			ck_assert_int_eq(write(fd, request, 10), 10);
			reset(fd);
			break;
		default:
			ck_assert_int_eq(write(fd, request, REQUEST_LEN),
					 (ssize_t)REQUEST_LEN);
			close(fd);
			break;
		}
		if (i % 200 == 0)
			ck_assert_int_lt(e2e_ping(&e, (uint32_t)i, 2000), 2000);
	}
	usleep(500 * 1000); /* the last ones are handled */
	ck_assert_int_eq(fcntl(iw_cm_channel_fd(e.s.ch), F_SETFL, O_NONBLOCK), 0);
	while (iw_get_cm_event(e.s.ch, &ev) == 0) {
		if (ev->event == IW_CM_EVENT_CONNECT_REQUEST) {
			n_req++;
			ck_assert_int_le(n_ids, BACKLOG);
			ids[n_ids++] = ev->id;
		} else {
			ck_assert_msg(ev->event == IW_CM_EVENT_CONNECT_ERROR,
				      "event %s", iw_cm_event_str(ev->event));
			n_err++;
		}
		iw_ack_cm_event(ev);
	}
	ck_assert_int_ge(n_req, 1);
	ck_assert_int_le(n_req, BACKLOG);
	ck_assert_int_le(n_err, n_req);
	for (int i = 0; i < n_ids; i++) {
		/* each of them left after its Request */
		ck_assert_int_eq(iw_accept(ids[i], e.s.qp, NULL), -ENOTCONN);
		ck_assert_int_eq(iw_destroy_id(ids[i]), 0);
	}
	e2e_ping(&e, 9999, E2E_WAIT_MS);
	after = e2e_heap_in_use();
	ck_assert_msg(after <= before + SLACK_BYTES,
		      "%zu octets more after %d connections came and went",
		      after - before, N);
	e2e_teardown(&e);
}
END_TEST

/*
 * Requests the application has not taken are bounded by the backlog as
 * well: when one more arrives, the oldest is withdrawn and its
 * connection closed; the newest are the ones the application finds.
 */
START_TEST(requests_beyond_the_backlog_withdraw_the_oldest)
{
	enum { N = BACKLOG + 3 };
	struct e2e_opts o;
	struct e2e e;
	struct iw_cm_event *ev;
	uint16_t want_port[N];
	int fd[N];

	e2e_opts_default(&o);
	server_open(&e, &o);
	for (int i = 0; i < N; i++) {
		struct sockaddr_in a;
		socklen_t l = sizeof(a);

		fd[i] = e2e_raw_request(e.port, 0, 1);
		ck_assert_int_eq(getsockname(fd[i], (struct sockaddr *)&a, &l), 0);
		want_port[i] = ntohs(a.sin_port);
		usleep(20 * 1000); /* one after the other */
	}
	for (int i = 0; i < N - BACKLOG; i++)
		ck_assert_msg(closed_by_peer(fd[i], E2E_WAIT_MS),
			      "request %d was not withdrawn", i);
	for (int i = N - BACKLOG; i < N; i++) {
		struct sockaddr_storage peer;

		ck_assert(!closed_by_peer(fd[i], 0));
		ev = e2e_event(e.s.ch, E2E_WAIT_MS);
		ck_assert_int_eq(ev->event, IW_CM_EVENT_CONNECT_REQUEST);
		ck_assert_int_eq(iw_get_peer_addr(ev->id, &peer), 0);
		ck_assert_uint_eq(ntohs(((struct sockaddr_in *)&peer)->sin_port),
				  want_port[i]);
		ck_assert_int_eq(iw_reject(ev->id, NULL, 0), 0);
		ck_assert_int_eq(iw_destroy_id(ev->id), 0);
		iw_ack_cm_event(ev);
	}
	expect_no_event(e.s.ch, 100);
	for (int i = 0; i < N; i++)
		close(fd[i]);
	iw_destroy_id(e.listen);
	e2e_side_close(&e.s);
}
END_TEST

/*
 * A peer that leaves right after its Request: the application, which has
 * the request, cannot answer it any more and is told so (-ENOTCONN, not
 * -EINVAL); the request's final event says why, and the queue pair it
 * meant to use is still free for the next one.
 */
START_TEST(client_leaving_after_its_request_cannot_be_answered)
{
	struct e2e_opts o;
	struct e2e e;
	struct iw_cm_event *ev;
	struct iw_cm_id *id;
	int fd;

	e2e_opts_default(&o);
	server_open(&e, &o);
	fd = e2e_raw_request(e.port, 0, 1);
	ev = e2e_event(e.s.ch, E2E_WAIT_MS);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_CONNECT_REQUEST);
	id = ev->id;
	iw_ack_cm_event(ev);
	close(fd);
	ev = e2e_event(e.s.ch, E2E_WAIT_MS);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_CONNECT_ERROR);
	ck_assert_ptr_eq(ev->id, id);
	ck_assert_int_eq(ev->status, -ECONNRESET);
	iw_ack_cm_event(ev);
	ck_assert_int_eq(iw_accept(id, e.s.qp, NULL), -ENOTCONN);
	ck_assert_int_eq(iw_reject(id, NULL, 0), -ENOTCONN);
	ck_assert_int_eq(iw_destroy_id(id), 0);
	/* an answered request is answered: that is no -ENOTCONN */
	good_client(&e, &o);
	ck_assert_int_eq(iw_accept(e.s.id, e.s.qp, NULL), -EINVAL);
	e2e_teardown(&e);
}
END_TEST

/*
 * The server's next CM event.  In manual mode nothing moves between the
 * application's calls: the loop runs only until the event is there, so
 * whatever arrived behind the frame that raised it is still unread.
 */
static struct iw_cm_event *next_event(struct e2e_side *s,
				      enum iw_progress_mode mode)
{
	struct pollfd p = { iw_cm_channel_fd(s->ch), POLLIN, 0 };
	long long end = now_ms() + E2E_WAIT_MS;
	struct iw_cm_event *ev;

	while (mode == IW_PROGRESS_MANUAL && poll(&p, 1, 0) == 0) {
		ck_assert_msg(now_ms() < end, "no CM event");
		ck_assert_int_eq(iw_progress(s->ctx, 10), 0);
	}
	if (mode != IW_PROGRESS_MANUAL)
		return e2e_event(s->ch, E2E_WAIT_MS);
	ck_assert_int_eq(iw_get_cm_event(s->ch, &ev), 0);
	return ev;
}

/*
 * A client whose FIN rides in its Request's own segment: an answer given
 * as soon as the request is out (an accept or a rejection) is refused
 * with -ENOTCONN every time, never sent to a connection that has ended,
 * whether or not the library has read past the Request by then (in
 * manual mode it has not); the request's final event follows.
 */
START_TEST(request_with_its_fin_is_never_answered)
{
	static const enum iw_progress_mode modes[] = { IW_PROGRESS_THREAD,
						       IW_PROGRESS_MANUAL };
	enum { ROUNDS = 10 };
	enum iw_progress_mode mode = modes[_i];
	struct e2e_opts o;
	struct e2e e;
	struct iw_cm_event *ev;

	e2e_opts_default(&o);
	o.progress = mode;
	server_open(&e, &o);
	for (int i = 0; i < ROUNDS; i++) {
		int fd = e2e_raw_connect(e.port), one = 1;
		struct iw_cm_id *id;

		ck_assert_int_eq(setsockopt(fd, IPPROTO_TCP, TCP_CORK, &one,
					    sizeof(one)),
				 0);
		ck_assert_int_eq(write(fd, request, REQUEST_LEN),
				 (ssize_t)REQUEST_LEN);
		ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
		ev = next_event(&e.s, mode);
		ck_assert_int_eq(ev->event, IW_CM_EVENT_CONNECT_REQUEST);
		id = ev->id;
		iw_ack_cm_event(ev);
		/* accepted in even rounds, rejected in odd ones */
		ck_assert_msg((i % 2 ? iw_reject(id, NULL, 0)
				     : iw_accept(id, e.s.qp, NULL)) == -ENOTCONN,
			      "mode %d, round %d: a request whose client left "
			      "was answered", mode, i);
		ev = next_event(&e.s, mode);
		ck_assert_int_eq(ev->event, IW_CM_EVENT_CONNECT_ERROR);
		ck_assert_ptr_eq(ev->id, id);
		iw_ack_cm_event(ev);
		ck_assert_int_eq(iw_destroy_id(id), 0);
		close(fd);
	}
	iw_destroy_id(e.listen);
	e2e_side_close(&e.s);
}
END_TEST

/* Reads @len octets or fails. */
static void read_full(int fd, uint8_t *p, size_t len)
{
	for (size_t got = 0; got < len;) {
		struct pollfd pf = { fd, POLLIN, 0 };
		ssize_t n;

		ck_assert_int_eq(poll(&pf, 1, E2E_WAIT_MS), 1);
		n = read(fd, p + got, len - got);
		ck_assert_int_gt(n, 0);
		got += (size_t)n;
	}
}

/* A revision 2 Request with IRD/ORD 1 and @pd_len octets of @pd after them. */
static int request_with(const char *port, uint16_t claimed,
			const uint8_t *pd, size_t pd_len)
{
	uint8_t hdr[24] = "MPA ID Req Frame\x10\x02\x00\x00\x00\x01\x00\x01";
	int fd = e2e_raw_connect(port);

	hdr[18] = (uint8_t)(claimed >> 8);
	hdr[19] = (uint8_t)claimed;
	e2e_raw_write(fd, hdr, sizeof(hdr));
	if (pd_len)
		e2e_raw_write(fd, pd, pd_len);
	return fd;
}

/*
 * The most private data a Request may carry (512 octets with the IRD/ORD
 * words) arrives whole and verbatim, and a Reply carries as much back;
 * one octet more, or a length of 65535 with that much behind it, is
 * closed as soon as the header says so, unanswered and unannounced, and
 * holds nothing.
 */
START_TEST(maximal_private_data_is_taken_and_more_is_closed_at_once)
{
	static uint8_t pd[65536], rep[20 + 512];
	struct e2e_opts o;
	struct e2e e;
	struct iw_cm_event *ev;
	size_t before;
	long long t0;
	int fd;

	e2e_fill(pd, sizeof(pd), 7);
	e2e_opts_default(&o);
	o.server.max_private_data = 508;
	server_open(&e, &o);
	fd = request_with(e.port, 512, pd, 508);
	ev = e2e_event(e.s.ch, E2E_WAIT_MS);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_CONNECT_REQUEST);
	ck_assert_uint_eq(ev->private_data_len, 508);
	ck_assert_mem_eq(ev->private_data, pd, 508);
	e.s.id = ev->id;
	iw_ack_cm_event(ev);
	ck_assert_int_eq(iw_accept(e.s.id, e.s.qp,
				   &(struct iw_conn_param){
					   .ird = 1, .ord = 1,
					   .private_data = pd + 1000,
					   .private_data_len = 508 }),
			 0);
	read_full(fd, rep, sizeof(rep));
	ck_assert_mem_eq(rep, "MPA ID Rep Frame", 16);
	ck_assert_uint_eq(rep[18] << 8 | rep[19], 512);
	ck_assert_mem_eq(rep + 24, pd + 1000, 508);
	close(fd);
	e2e_expect(e.s.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	ev = e2e_event(e.s.ch, E2E_WAIT_MS); /* the peer went away */
	iw_ack_cm_event(ev);
	ck_assert_int_eq(iw_destroy_id(e.s.id), 0);
	e.s.id = NULL;
	ck_assert_int_eq(iw_destroy_qp(e.s.qp), 0);
	e.s.qp = iw_create_qp(e.s.pd, &(struct iw_qp_init_attr){
		.send_cq = e.s.cq, .recv_cq = e.s.cq,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 } });
	ck_assert_ptr_nonnull(e.s.qp);

	/* beyond the limit: closed at the header, not after 5 s */
	before = e2e_heap_in_use();
	for (int big = 0; big < 2; big++) {
		t0 = now_ms();
		fd = request_with(e.port, big ? 0xffff : 513, pd,
				  big ? 0xffff : 513);
		ck_assert(closed_by_peer(fd, E2E_WAIT_MS));
		ck_assert_int_lt(now_ms() - t0, 1000);
		close(fd);
	}
	expect_no_event(e.s.ch, 200);
	ck_assert_uint_le(e2e_heap_in_use(), before + SLACK_BYTES);
	iw_destroy_id(e.listen);
	e2e_side_close(&e.s);
}
END_TEST

struct storm {
	char port[16];
	atomic_bool stop;
	atomic_int made;
};

/* Connections to the port, made and dropped as fast as they go. */
static void *connect_storm(void *arg)
{
	struct storm *st = arg;
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)atoi(st->port)),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	while (!atomic_load(&st->stop)) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (fd < 0)
			break;
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			st->made++;
		close(fd);
	}
	return NULL;
}

/* Starts a storm at @l's port and waits until @n connections were made. */
static void storm_start(struct storm *st, pthread_t *t, struct iw_cm_id *l,
			int n)
{
	e2e_port(l, st->port, sizeof(st->port));
	atomic_init(&st->stop, false);
	atomic_init(&st->made, 0);
	ck_assert_int_eq(pthread_create(t, NULL, connect_storm, st), 0);
	while (atomic_load(&st->made) < n)
		usleep(200);
}

static void storm_stop(struct storm *st, pthread_t t)
{
	atomic_store(&st->stop, true);
	pthread_join(t, NULL);
}

/*
 * Connections pouring in faster than they can be taken hold neither the
 * progress thread (a good connection of the same context is pinged
 * meanwhile) nor the listener's destruction, which runs while its
 * accept callback may be running (it used to deadlock in libevent).
 */
START_TEST(listener_destroyed_while_connections_pour_in)
{
	struct e2e_opts o;
	struct e2e e;

	e2e_opts_default(&o);
	o.buf_len = 4096;
	o.depth = 16;
	server_open(&e, &o);
	good_client(&e, &o);
	for (int round = 0; round < 300; round++) {
		struct iw_cm_id *l = iw_create_id(e.s.ch, NULL);
		struct storm st;
		pthread_t t;

		ck_assert_int_eq(iw_listen(l, "127.0.0.1", "0", BACKLOG), 0);
		storm_start(&st, &t, l, 20);
		if (round % 30 == 0)
			ck_assert_int_lt(e2e_ping(&e, (uint32_t)round, 2000), 2000);
		ck_assert_int_eq(iw_destroy_id(l), 0);
		storm_stop(&st, t);
	}
	expect_no_event(e.s.ch, 0);
	e2e_teardown(&e);
}
END_TEST

/*
 * A connection that drops before its MPA Request is freed in the loop,
 * which may come to it after the application has destroyed its listener
 * and their channel: nothing of the channel may be touched then (under
 * the sanitizers, a use after free fails this).
 */
START_TEST(channel_destroyed_right_after_its_listener)
{
	struct iw_context *ctx = iw_open(NULL);

	ck_assert_ptr_nonnull(ctx);
	for (int round = 0; round < 200; round++) {
		struct iw_cm_channel *ch = iw_create_cm_channel(ctx);
		struct iw_cm_id *l;
		struct storm st;
		pthread_t t;

		ck_assert_ptr_nonnull(ch);
		l = iw_create_id(ch, NULL);
		ck_assert_ptr_nonnull(l);
		ck_assert_int_eq(iw_listen(l, "127.0.0.1", "0", BACKLOG), 0);
		storm_start(&st, &t, l, 10);
		ck_assert_int_eq(iw_destroy_id(l), 0);
		ck_assert_int_eq(iw_destroy_cm_channel(ch), 0);
		storm_stop(&st, t);
	}
	ck_assert_int_eq(iw_close(ctx), 0);
}
END_TEST

static Suite *hostile_suite(void)
{
	Suite *s = suite_create("hostile");
	TCase *tc = tcase_create("listener");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, idle_connections_hold_bounded_memory_and_keep_no_one_out);
	tcase_add_test(tc, connections_opened_and_dropped_in_a_loop_are_bounded);
	tcase_add_test(tc, requests_beyond_the_backlog_withdraw_the_oldest);
	tcase_add_test(tc, client_leaving_after_its_request_cannot_be_answered);
	tcase_add_loop_test(tc, request_with_its_fin_is_never_answered, 0, 2);
	tcase_add_test(tc, maximal_private_data_is_taken_and_more_is_closed_at_once);
	tcase_add_test(tc, listener_destroyed_while_connections_pour_in);
	tcase_add_test(tc, channel_destroyed_right_after_its_listener);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(hostile_suite());
}
