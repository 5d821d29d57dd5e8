// SPDX-License-Identifier: MIT
/*
 * Connection manager suite: every way a connection can fail to start,
 * each reported distinctly and in bounded time, the MPA options meeting
 * and failing to meet, addresses, and the rules around the verbs that
 * depend on a connection (CQ events, Read credit, QP attachment, threads).
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "e2e.h"

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* A plain TCP listener on 127.0.0.1 that speaks no MPA. */
static int raw_listen(char *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(fd, 4), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &l), 0);
	snprintf(port, 16, "%u", ntohs(a.sin_port));
	return fd;
}

static int raw_connect(const char *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)atoi(port)),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* A well-formed MPA Request (revision 2, IRD and ORD 1) and an FPDU. */
static const char good_request[] =
	"MPA ID Req Frame\x10\x02\x00\x04\x00\x01\x00\x01";
static const char some_fpdu[] =
	"\x00\x16\x41\x43\x00\x00\x00\x00\x00\x00\x00\x00"
	"\x00\x00\x00\x01\x00\x00\x00\x00ping\x00\x00\x00\x00";

/* An MPA Request whose key is wrong: a responder closes it unanswered. */
static const char malformed_request[] =
	"MPA ID Xxx Frame\x10\x02\x00\x04\x00\x01\x00\x01";

/* Waits for the other end to close (what it sent first is read). */
static void expect_closed(int fd, int ms)
{
	long long end = now_ms() + ms;
	char b[256];

	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		int left = (int)(end - now_ms());

		ck_assert_msg(left > 0 && poll(&p, 1, left) == 1,
			      "the peer did not close in time");
		if (read(fd, b, sizeof(b)) <= 0)
			return;
	}
}

static void expect_no_event(struct iw_cm_channel *ch, int ms)
{
	struct pollfd p = { iw_cm_channel_fd(ch), POLLIN, 0 };

	ck_assert_msg(poll(&p, 1, ms) == 0, "an unexpected CM event");
}

/* One side only: a context, a channel and a QP to connect with. */
static void client_open(struct e2e_side *c)
{
	struct e2e_opts o;

	e2e_opts_default(&o);
	e2e_side_open(c, &o);
	c->id = iw_create_id(c->ch, NULL);
	ck_assert_ptr_nonnull(c->id);
}

/* ---- failures to connect ------------------------------------------------ */

START_TEST(closed_port_is_unreachable_refused_at_once)
{
	struct e2e_side c;
	char port[16];
	int fd = raw_listen(port);
	long long t0;

	close(fd); /* nothing listens there now */
	client_open(&c);
	t0 = now_ms();
	ck_assert_int_eq(iw_connect(c.id, "127.0.0.1", port, c.qp, NULL), 0);
	ck_assert_int_eq(e2e_expect(c.ch, IW_CM_EVENT_UNREACHABLE, E2E_WAIT_MS),
			 -ECONNREFUSED);
	ck_assert_int_lt(now_ms() - t0, 1000);
	e2e_side_close(&c);
}
END_TEST

/* connect() itself refuses a multicast address: reported the same way */
START_TEST(address_refused_by_connect_itself_is_unreachable)
{
	struct e2e_side c;

	client_open(&c);
	ck_assert_int_eq(iw_connect(c.id, "224.0.0.1", "9", c.qp, NULL), 0);
	ck_assert_int_eq(e2e_expect(c.ch, IW_CM_EVENT_UNREACHABLE, E2E_WAIT_MS),
			 -ENETUNREACH);
	e2e_side_close(&c);
}
END_TEST

START_TEST(silent_peer_times_out_waiting_for_the_reply)
{
	struct e2e_side c;
	struct iw_mpa_opts o;
	char port[16];
	int fd = raw_listen(port), conn;
	long long t0, dt;

	client_open(&c);
	iw_mpa_opts_default(&o);
	o.reply_timeout_ms = 300;
	ck_assert_int_eq(iw_set_mpa_opts(c.id, &o), 0);
	t0 = now_ms();
	ck_assert_int_eq(iw_connect(c.id, "127.0.0.1", port, c.qp, NULL), 0);
	conn = accept(fd, NULL, NULL); /* and never answer */
	ck_assert_int_ge(conn, 0);
	ck_assert_int_eq(e2e_expect(c.ch, IW_CM_EVENT_TIMEOUT, E2E_WAIT_MS),
			 -ETIMEDOUT);
	dt = now_ms() - t0;
	ck_assert_msg(dt >= 250 && dt < 3000, "timed out after %lld ms", dt);
	expect_closed(conn, E2E_WAIT_MS); /* and we hung up */
	close(conn);
	close(fd);
	e2e_side_close(&c);
}
END_TEST

START_TEST(peer_hanging_up_mid_handshake_is_a_reset)
{
	struct e2e_side c;
	char port[16];
	int fd = raw_listen(port), conn;

	client_open(&c);
	ck_assert_int_eq(iw_connect(c.id, "127.0.0.1", port, c.qp, NULL), 0);
	conn = accept(fd, NULL, NULL);
	ck_assert_int_ge(conn, 0);
	close(conn);
	ck_assert_int_eq(e2e_expect(c.ch, IW_CM_EVENT_CONNECT_ERROR,
				    E2E_WAIT_MS),
			 -ECONNRESET);
	close(fd);
	e2e_side_close(&c);
}
END_TEST

/*
 * A responder that sends its first FPDU right behind its Reply, in one
 * segment (Linux siw does not wait for ours): the initiator takes both.
 */
START_TEST(fpdu_right_behind_the_reply_is_taken)
{
	static const uint8_t reply_and_send[] =
		"MPA ID Rep Frame\x10\x02\x00\x04\x00\x01\x00\x01"
		"\x00\x16\x41\x43\x00\x00\x00\x00\x00\x00\x00\x00"
		"\x00\x00\x00\x01\x00\x00\x00\x00ping\x00\x00\x00\x00";
	struct e2e_side c;
	struct iw_sge r;
	struct iw_wc wc;
	char port[16], req[64];
	int fd = raw_listen(port), conn;

	client_open(&c);
	r = (struct iw_sge){ (uintptr_t)c.buf, 64, c.mr->lkey };
	ck_assert_int_eq(iw_post_recv(c.qp, &(struct iw_recv_wr){ 5, NULL, &r, 1 },
				      NULL),
			 0);
	ck_assert_int_eq(iw_connect(c.id, "127.0.0.1", port, c.qp, NULL), 0);
	conn = accept(fd, NULL, NULL);
	ck_assert_int_ge(conn, 0);
	ck_assert_int_ge(read(conn, req, sizeof(req)), 20); /* the Request */
	ck_assert_int_eq(write(conn, reply_and_send, sizeof(reply_and_send) - 1),
			 (ssize_t)sizeof(reply_and_send) - 1);
	e2e_expect(c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	e2e_poll(c.cq, &wc, 1, E2E_WAIT_MS);
	ck_assert_uint_eq(wc.wr_id, 5);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	ck_assert_uint_eq(wc.byte_len, 4);
	ck_assert_mem_eq(c.buf, "ping", 4);
	close(conn);
	close(fd);
	e2e_side_close(&c);
}
END_TEST

/*
 * responder_first: the server's Send leaves without waiting for the
 * client, which has sent nothing and takes it; only the first-FPDU hold
 * after the Reply (first_fpdu_delay_us: asked for, AUTO's 100 ms for a
 * responder, none) delays it.  Without the option it would wait for the
 * client forever.
 */
START_TEST(responder_first_sends_before_the_client_speaks)
{
	static const uint32_t delay_us[] = { 300000, IW_FIRST_FPDU_DELAY_AUTO,
					     0 };
	static const long long at_least_ms[] = { 250, 80, 0 };
	struct e2e_opts o;
	struct e2e e;
	struct iw_sge r, s;
	struct iw_wc wc;
	long long t0, dt;

	e2e_opts_default(&o);
	o.server.responder_first = 1;
	o.server.first_fpdu_delay_us = delay_us[_i];
	t0 = now_ms();
	e2e_connect(&e, &o);
	memcpy(e.s.buf, "server first", 12);
	r = (struct iw_sge){ (uintptr_t)e.c.buf, 64, e.c.mr->lkey };
	s = (struct iw_sge){ (uintptr_t)e.s.buf, 12, e.s.mr->lkey };
	ck_assert_int_eq(iw_post_recv(e.c.qp,
				      &(struct iw_recv_wr){ 1, NULL, &r, 1 },
				      NULL),
			 0);
	ck_assert_int_eq(iw_post_send(e.s.qp,
				      &(struct iw_send_wr){
					      .wr_id = 2, .sg_list = &s,
					      .num_sge = 1,
					      .opcode = IW_WR_SEND,
					      .send_flags = IW_SEND_SIGNALED },
				      NULL),
			 0);
	e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
	dt = now_ms() - t0;
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	ck_assert_uint_eq(wc.byte_len, 12);
	ck_assert_mem_eq(e.c.buf, "server first", 12);
	if (at_least_ms[_i])
		ck_assert_msg(dt >= at_least_ms[_i], "arrived after %lld ms",
			      dt);
	else
		ck_assert_msg(dt < 250, "held for %lld ms", dt);
	o.server.responder_first = 2;
	ck_assert_int_eq(iw_set_mpa_opts(e.listen, &o.server), -EINVAL);
	e2e_teardown(&e);
}
END_TEST

START_TEST(silent_initiator_is_dropped_after_the_request_timeout)
{
	struct e2e_side s;
	struct iw_mpa_opts o;
	struct iw_cm_id *l;
	char port[16];
	int fd;
	long long t0, dt;

	client_open(&s);
	l = iw_create_id(s.ch, NULL);
	iw_mpa_opts_default(&o);
	o.request_timeout_ms = 300;
	ck_assert_int_eq(iw_set_mpa_opts(l, &o), 0);
	ck_assert_int_eq(iw_listen(l, "127.0.0.1", "0", 4), 0);
	e2e_port(l, port, sizeof(port));
	t0 = now_ms();
	fd = raw_connect(port);
	expect_closed(fd, E2E_WAIT_MS);
	dt = now_ms() - t0;
	ck_assert_msg(dt >= 250 && dt < 3000, "dropped after %lld ms", dt);
	expect_no_event(s.ch, 100); /* the application never saw it */
	close(fd);
	iw_destroy_id(l);
	e2e_side_close(&s);
}
END_TEST

/* Still open after @ms: nothing arrived and no close. */
static void expect_open(int fd, int ms)
{
	struct pollfd p = { fd, POLLIN, 0 };

	ck_assert_msg(poll(&p, 1, ms) == 0, "closed or answered");
}

/*
 * The backlog bounds the connections waiting for their MPA Request: with
 * two silent ones held, a third makes the oldest go at once, and is
 * heard when it speaks; once one has sent its Request (and been handed
 * to the application) it no longer counts.
 */
START_TEST(oldest_silent_connection_makes_room_beyond_the_backlog)
{
	struct e2e_side s;
	struct iw_cm_event *ev;
	struct iw_cm_id *l, *req;
	char port[16];
	int fd[4];

	client_open(&s);
	l = iw_create_id(s.ch, NULL);
	ck_assert_int_eq(iw_listen(l, "127.0.0.1", "0", 2), 0);
	e2e_port(l, port, sizeof(port));
	fd[0] = raw_connect(port);
	fd[1] = raw_connect(port);
	expect_open(fd[0], 200);
	fd[2] = raw_connect(port);
	expect_closed(fd[0], 1000); /* at once: the Request may take 5 s */
	expect_open(fd[1], 100);
	expect_open(fd[2], 100);
	ck_assert_int_eq(write(fd[2], good_request, sizeof(good_request) - 1),
			 (ssize_t)sizeof(good_request) - 1);
	ev = e2e_event(s.ch, E2E_WAIT_MS);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_CONNECT_REQUEST);
	req = ev->id; /* the application's now */
	iw_ack_cm_event(ev);
	fd[3] = raw_connect(port);
	expect_open(fd[1], 300);
	expect_open(fd[3], 100);
	for (int i = 0; i < 4; i++)
		close(fd[i]);
	iw_destroy_id(req);
	iw_destroy_id(l);
	e2e_side_close(&s);
}
END_TEST

START_TEST(malformed_request_is_closed_without_a_reply)
{
	struct e2e_side s;
	struct iw_cm_id *l;
	char port[16];
	int fd;

	client_open(&s);
	l = iw_create_id(s.ch, NULL);
	ck_assert_int_eq(iw_listen(l, "127.0.0.1", "0", 4), 0);
	e2e_port(l, port, sizeof(port));
	fd = raw_connect(port);
	ck_assert_int_eq(write(fd, malformed_request, 24), 24);
	expect_closed(fd, E2E_WAIT_MS);
	expect_no_event(s.ch, 100);
	close(fd);
	iw_destroy_id(l);
	e2e_side_close(&s);
}
END_TEST

START_TEST(reject_sends_the_private_data_back)
{
	struct e2e_opts o;
	struct e2e e;
	struct iw_cm_event *ev;

	e2e_opts_default(&o);
	e2e_start(&e, &o);
	ck_assert_int_eq(iw_reject(e.s.id, "go away", 7), 0);
	ev = e2e_event(e.c.ch, E2E_WAIT_MS);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_REJECTED);
	ck_assert_int_eq(ev->status, -IW_EMPA_REJECTED);
	ck_assert(ev->peer.reject);
	ck_assert_uint_eq(ev->private_data_len, 7);
	ck_assert_mem_eq(ev->private_data, "go away", 7);
	iw_ack_cm_event(ev);
	e2e_teardown(&e);
}
END_TEST

/*
 * Work posted before a connection that never comes up completes, flushed,
 * and the QP is in error (as after a failed connect in libibverbs): none
 * of it waits forever, none of it leaves on a later connection.  _i: how
 * the attempt ends: 0 refused (UNREACHABLE), 1 the Reply rejects, 2 no
 * Reply in time (TIMEOUT), 3 the peer hangs up mid-handshake
 * (CONNECT_ERROR), 4 abandoned by iw_disconnect() during the handshake.
 */
START_TEST(work_posted_before_a_failed_connect_is_flushed)
{
	static const char reject[] = "MPA ID Rep Frame\x30\x02\x00\x04"
				     "\x00\x00\x00\x00";
	static const enum iw_cm_event_type want[] = {
		IW_CM_EVENT_UNREACHABLE, IW_CM_EVENT_REJECTED,
		IW_CM_EVENT_TIMEOUT, IW_CM_EVENT_CONNECT_ERROR,
	};
	static const int why[] = { -ECONNREFUSED, -IW_EMPA_REJECTED,
				   -ETIMEDOUT, -ECONNRESET, -IW_ECLOSED };
	struct e2e_side c;
	struct iw_mpa_opts mo;
	struct iw_qp_attr qa;
	struct iw_cm_id *again;
	struct iw_sge sg;
	struct iw_wc wc[3];
	char port[16], req[64];
	int fd = raw_listen(port), conn = -1;

	client_open(&c);
	iw_mpa_opts_default(&mo);
	mo.reply_timeout_ms = 300;
	ck_assert_int_eq(iw_set_mpa_opts(c.id, &mo), 0);
	sg = (struct iw_sge){ (uintptr_t)c.buf, 64, c.mr->lkey };
	ck_assert_int_eq(iw_post_recv(c.qp, &(struct iw_recv_wr){
		.wr_id = 1, .sg_list = &sg, .num_sge = 1 }, NULL), 0);
	ck_assert_int_eq(iw_post_send(c.qp, &(struct iw_send_wr){
		.wr_id = 2, .sg_list = &sg, .num_sge = 1,
		.opcode = IW_WR_SEND }, NULL), 0);
	if (_i == 0)
		close(fd);
	ck_assert_int_eq(iw_connect(c.id, "127.0.0.1", port, c.qp, NULL), 0);
	if (_i > 0) {
		conn = accept(fd, NULL, NULL);
		ck_assert_int_ge(conn, 0);
		close(fd);
	}
	if (_i == 1) {
		ck_assert_int_ge(read(conn, req, sizeof(req)), 20);
		ck_assert_int_eq(write(conn, reject, sizeof(reject) - 1),
				 (ssize_t)sizeof(reject) - 1);
	} else if (_i == 3) {
		close(conn);
		conn = -1;
	} else if (_i == 4) {
		ck_assert_int_ge(read(conn, req, sizeof(req)), 20);
		ck_assert_int_eq(iw_disconnect(c.id), 0);
	}
	if (_i < 4)
		ck_assert_int_eq(e2e_expect(c.ch, want[_i], E2E_WAIT_MS),
				 why[_i]);
	/* each request once, flushed, with the reason; nothing more */
	e2e_poll(c.cq, wc, 2, E2E_WAIT_MS);
	ck_assert_int_eq(iw_poll_cq(c.cq, 1, &wc[2]), 0);
	if (wc[0].opcode != IW_WC_RECV) {
		wc[2] = wc[0];
		wc[0] = wc[1];
		wc[1] = wc[2];
	}
	ck_assert_uint_eq(wc[0].wr_id, 1);
	ck_assert_int_eq(wc[0].opcode, IW_WC_RECV);
	ck_assert_uint_eq(wc[1].wr_id, 2);
	ck_assert_int_eq(wc[1].opcode, IW_WC_SEND);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(wc[i].status, IW_WC_WR_FLUSH_ERR);
		ck_assert_int_eq(wc[i].err, why[_i]);
	}
	ck_assert_int_eq(iw_query_qp(c.qp, &qa), 0);
	ck_assert_int_eq(qa.state, IW_QPS_ERROR);
	ck_assert_int_eq(qa.err, why[_i]);
	if (_i == 4)
		expect_no_event(c.ch, 100); /* abandoned: quietly */
	/* the QP cannot carry another connection */
	ck_assert_int_eq(iw_destroy_id(c.id), 0);
	again = iw_create_id(c.ch, NULL);
	c.id = again;
	ck_assert_int_eq(iw_connect(again, "127.0.0.1", port, c.qp, NULL),
			 -EINVAL);
	if (conn >= 0)
		close(conn);
	e2e_side_close(&c);
}
END_TEST

/* The library's debug log (stderr) goes to a file while a test looks. */
struct log_capture {
	char path[32];
	int fd, saved;
};

static void log_start(struct log_capture *l)
{
	strcpy(l->path, "/tmp/iwarp-log-XXXXXX");
	l->fd = mkstemp(l->path);
	ck_assert_int_ge(l->fd, 0);
	l->saved = dup(2);
	ck_assert_int_eq(dup2(l->fd, 2), 2);
}

/* Stops capturing; returns what was logged (free it). */
static char *log_stop(struct log_capture *l)
{
	char *text = calloc(1, 65536);
	ssize_t n;

	ck_assert_ptr_nonnull(text);
	dup2(l->saved, 2);
	close(l->saved);
	n = pread(l->fd, text, 65535, 0);
	close(l->fd);
	unlink(l->path);
	ck_assert_int_ge(n, 0);
	return text;
}

static void expect_logged(const char *log, const char *what, int err)
{
	char line[256];

	snprintf(line, sizeof(line), "%s%s", what, err ? iw_strerror(err) : "");
	ck_assert_msg(strstr(log, line), "not logged: \"%s\"", line);
}

/*
 * A peer that hangs up inside its Reply cut it short: that is an MPA
 * error of its own, not a plain reset.  _i 0: inside the key, 1: inside
 * the private data the header announced.
 */
START_TEST(reply_cut_off_mid_frame_is_truncated)
{
	static const char part[] = "MPA ID Rep Frame\x10\x02\x00\x08"
				   "\x00\x01\x00\x01\x41";
	static const size_t cut[] = { 10, sizeof(part) - 1 };
	struct e2e_side c;
	char port[16], req[64];
	int fd = raw_listen(port), conn;

	client_open(&c);
	ck_assert_int_eq(iw_connect(c.id, "127.0.0.1", port, c.qp, NULL), 0);
	conn = accept(fd, NULL, NULL);
	ck_assert_int_ge(conn, 0);
	ck_assert_int_ge(read(conn, req, sizeof(req)), 20);
	ck_assert_int_eq(write(conn, part, cut[_i]), (ssize_t)cut[_i]);
	close(conn);
	ck_assert_int_eq(e2e_expect(c.ch, IW_CM_EVENT_CONNECT_ERROR,
				    E2E_WAIT_MS),
			 -IW_EMPA_TRUNCATED);
	close(fd);
	e2e_side_close(&c);
}
END_TEST

/*
 * A context with its debug log on, listening on a free port of 127.0.0.1
 * (@port), and the log captured from here on.
 */
static struct iw_cm_id *debug_listener(struct e2e_side *s,
				       struct log_capture *lc, char *port,
				       size_t len)
{
	struct iw_cm_id *l;

	client_open(s);
	iw_set_debug(s->ctx, 1);
	l = iw_create_id(s->ch, NULL);
	ck_assert_int_eq(iw_listen(l, "127.0.0.1", "0", 4), 0);
	e2e_port(l, port, len);
	log_start(lc);
	return l;
}
/*
 * The responder's side of it: a connection whose Request is cut short
 * goes away before the application sees it; the debug log names why.
 */
START_TEST(request_cut_off_mid_frame_is_truncated)
{
	struct log_capture lc;
	struct e2e_side s;
	struct iw_cm_id *l;
	char port[16], *log;
	int fd;

	l = debug_listener(&s, &lc, port, sizeof(port));
	fd = raw_connect(port);
	ck_assert_int_eq(write(fd, good_request, 22), 22);
	shutdown(fd, SHUT_WR);
	expect_closed(fd, E2E_WAIT_MS);
	close(fd);
	iw_destroy_id(l);
	log = log_stop(&lc);
	expect_logged(log, "closed during the MPA handshake: ",
		      -IW_EMPA_TRUNCATED);
	free(log);
	expect_no_event(s.ch, 100);
	e2e_side_close(&s);
}
END_TEST

/*
 * RFC 5044 section 7.1: nothing may follow a Request before it has been
 * answered.  _i 0: an FPDU in the same segment as the Request (the
 * connection goes before the application has seen it; the log says why),
 * 1: an FPDU after the application was given the Request (it gets
 * CONNECT_ERROR).  Either way no Reply goes out.
 */
START_TEST(data_behind_the_request_is_refused_as_unexpected)
{
	struct log_capture lc;
	struct e2e_side s;
	struct iw_cm_id *l;
	char port[16], both[64], *log;
	size_t rl = sizeof(good_request) - 1, fl = sizeof(some_fpdu) - 1;
	int fd;

	l = debug_listener(&s, &lc, port, sizeof(port));
	fd = raw_connect(port);
	if (_i == 0) {
		memcpy(both, good_request, rl);
		memcpy(both + rl, some_fpdu, fl);
		ck_assert_int_eq(write(fd, both, rl + fl), (ssize_t)(rl + fl));
	} else {
		struct iw_cm_event *ev;

		ck_assert_int_eq(write(fd, good_request, rl), (ssize_t)rl);
		ev = e2e_event(s.ch, E2E_WAIT_MS);
		ck_assert_int_eq(ev->event, IW_CM_EVENT_CONNECT_REQUEST);
		ck_assert_int_eq(iw_destroy_id(s.id), 0); /* client_open's */
		s.id = ev->id;
		iw_ack_cm_event(ev);
		ck_assert_int_eq(write(fd, some_fpdu, fl), (ssize_t)fl);
		ck_assert_int_eq(e2e_expect(s.ch, IW_CM_EVENT_CONNECT_ERROR,
					    E2E_WAIT_MS),
				 -IW_EMPA_UNEXPECTED);
	}
	/* closed without a Reply: not one octet comes back */
	{
		struct pollfd p = { fd, POLLIN, 0 };
		char b[64];

		ck_assert_int_eq(poll(&p, 1, E2E_WAIT_MS), 1);
		ck_assert_int_eq(read(fd, b, sizeof(b)), 0);
	}
	close(fd);
	log = log_stop(&lc);
	if (_i == 0) {
		expect_logged(log, "bad MPA Request: ", -IW_EMPA_UNEXPECTED);
		expect_no_event(s.ch, 100);
	}
	free(log);
	iw_destroy_id(l);
	e2e_side_close(&s);
}
END_TEST

/* ---- MPA options that meet or not --------------------------------------- */

START_TEST(markers_required_by_initiator_refused_by_responder)
{
	struct e2e_opts o;
	struct e2e e;
	struct iw_cm_event *ev;

	e2e_opts_default(&o);
	o.client.markers = IW_MPA_ON;
	o.server.markers = IW_MPA_OFF;
	e2e_start(&e, &o);
	ck_assert_int_eq(iw_accept(e.s.id, e.s.qp, NULL),
			 -IW_EMPA_MARKERS_REFUSED);
	ev = e2e_event(e.c.ch, E2E_WAIT_MS);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_REJECTED);
	ck_assert(ev->peer.reject && !ev->peer.markers);
	iw_ack_cm_event(ev);
	e2e_teardown(&e);
}
END_TEST

/* _i 0: markers, 1: CRC, required by the responder, off at the initiator */
START_TEST(option_required_by_responder_refused_by_initiator)
{
	struct e2e_opts o;
	struct e2e e;

	e2e_opts_default(&o);
	if (_i == 0) {
		o.server.markers = IW_MPA_ON;
		o.client.markers = IW_MPA_OFF;
	} else {
		o.server.crc = IW_MPA_ON;
		o.client.crc = IW_MPA_OFF;
	}
	e2e_start(&e, &o);
	ck_assert_int_eq(iw_accept(e.s.id, e.s.qp, NULL), 0);
	e2e_expect(e.s.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	ck_assert_int_eq(e2e_expect(e.c.ch, IW_CM_EVENT_CONNECT_ERROR,
				    E2E_WAIT_MS),
			 _i == 0 ? -IW_EMPA_MARKERS_REFUSED
				 : -IW_EMPA_CRC_REFUSED);
	/* the initiator hung up; the responder's stream ends */
	e2e_expect(e.s.ch, IW_CM_EVENT_DISCONNECTED, E2E_WAIT_MS);
	e2e_teardown(&e);
}
END_TEST

START_TEST(responder_honours_crc_even_when_it_would_rather_not)
{
	struct e2e_opts o;
	struct iw_qp_attr a;
	struct e2e e;

	e2e_opts_default(&o);
	o.client.crc = IW_MPA_ON;
	o.server.crc = IW_MPA_OFF;
	e2e_connect(&e, &o);
	ck_assert_int_eq(iw_query_qp(e.s.qp, &a), 0);
	ck_assert(a.crc);
	ck_assert_int_eq(iw_query_qp(e.c.qp, &a), 0);
	ck_assert(a.crc);
	e2e_teardown(&e);
}
END_TEST

START_TEST(no_common_rtr_type_is_refused_by_the_responder)
{
	struct e2e_opts o;
	struct e2e e;

	e2e_opts_default(&o);
	o.client.rtr = IW_RTR_SEND;
	o.server.rtr = IW_RTR_WRITE | IW_RTR_READ;
	e2e_start(&e, &o);
	ck_assert_int_eq(iw_accept(e.s.id, e.s.qp, NULL),
			 -IW_EMPA_NO_MATCHING_RTR);
	e2e_expect(e.c.ch, IW_CM_EVENT_REJECTED, E2E_WAIT_MS);
	e2e_teardown(&e);
}
END_TEST

START_TEST(private_data_is_limited_and_passed_verbatim)
{
	static uint8_t pd[508];
	struct e2e_opts o;
	struct e2e e;
	struct iw_cm_event *ev;

	for (size_t i = 0; i < sizeof(pd); i++)
		pd[i] = (uint8_t)(i * 7);
	e2e_opts_default(&o);
	/* 252 octets by default, what Linux siw takes with IRD/ORD */
	{
		struct e2e_side c;

		client_open(&c);
		ck_assert_int_eq(iw_connect(c.id, "127.0.0.1", "1", c.qp,
					    &(struct iw_conn_param){
						    .private_data = pd,
						    .private_data_len = 253 }),
				 -EINVAL);
		e2e_side_close(&c);
	}
	o.client.max_private_data = 508;
	o.cparam.private_data = pd;
	o.cparam.private_data_len = 508;
	e2e_start(&e, &o);
	/* the server's event gave it; the IRD/ORD words are not in it */
	ck_assert_int_eq(iw_accept(e.s.id, e.s.qp, &o.sparam), 0);
	ev = e2e_event(e.c.ch, E2E_WAIT_MS);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_ESTABLISHED);
	ck_assert_uint_eq(ev->private_data_len, 0);
	iw_ack_cm_event(ev);
	e2e_teardown(&e);
}
END_TEST

/* Revision 1 has no IRD/ORD words: all 512 octets are the application's */
START_TEST(revision_1_carries_512_octets_and_wide_ird_is_refused)
{
	static uint8_t pd[512];
	struct iw_mpa_opts m;
	struct e2e_opts o;
	struct e2e e;
	struct iw_cm_event *ev;
	struct e2e_side c;

	iw_mpa_opts_default(&m);
	client_open(&c);
	m.max_private_data = 509;
	ck_assert_int_eq(iw_set_mpa_opts(c.id, &m), -EINVAL);
	m.revision = 1;
	m.max_private_data = 513;
	ck_assert_int_eq(iw_set_mpa_opts(c.id, &m), -EINVAL);
	/* IRD and ORD travel in 14 bits */
	ck_assert_int_eq(iw_connect(c.id, "127.0.0.1", "1", c.qp,
				    &(struct iw_conn_param){ .ird = 16384 }),
			 -EINVAL);
	ck_assert_int_eq(iw_connect(c.id, "127.0.0.1", "1", c.qp,
				    &(struct iw_conn_param){ .ord = 16384 }),
			 -EINVAL);
	e2e_side_close(&c);

	e2e_fill(pd, sizeof(pd), 5);
	e2e_opts_default(&o);
	o.client.revision = 1;
	o.client.max_private_data = 512;
	o.cparam = (struct iw_conn_param){ pd, 512, 2, 3 };
	memset(&e, 0, sizeof(e));
	e2e_side_open(&e.c, &o);
	e2e_side_open(&e.s, &o);
	ev = e2e_request_event(&e, &o);
	ck_assert_uint_eq(ev->peer.revision, 1);
	ck_assert_uint_eq(ev->private_data_len, 512);
	ck_assert_mem_eq(ev->private_data, pd, 512);
	iw_ack_cm_event(ev);
	ck_assert_int_eq(iw_accept(e.s.id, e.s.qp, &o.sparam), 0);
	e2e_expect(e.c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	e2e_teardown(&e);
}
END_TEST

START_TEST(request_private_data_arrives_whole)
{
	static uint8_t pd[508];
	struct e2e_opts o;
	struct e2e e;
	struct iw_cm_event *ev;

	for (size_t i = 0; i < sizeof(pd); i++)
		pd[i] = (uint8_t)(i * 7);
	e2e_opts_default(&o);
	o.client.max_private_data = 508;
	o.cparam = (struct iw_conn_param){ pd, 508, 2, 3 };
	memset(&e, 0, sizeof(e));
	e2e_side_open(&e.c, &o);
	e2e_side_open(&e.s, &o);
	ev = e2e_request_event(&e, &o);
	ck_assert_uint_eq(ev->private_data_len, 508);
	ck_assert_mem_eq(ev->private_data, pd, 508);
	ck_assert_uint_eq(ev->peer.revision, 2);
	ck_assert(ev->peer.enhanced);
	ck_assert_uint_eq(ev->peer.ird, 2);
	ck_assert_uint_eq(ev->peer.ord, 3);
	iw_ack_cm_event(ev);
	ck_assert_int_eq(iw_reject(e.s.id, NULL, 0), 0);
	e2e_expect(e.c.ch, IW_CM_EVENT_REJECTED, E2E_WAIT_MS);
	e2e_teardown(&e);
}
END_TEST

/* ---- addresses -------------------------------------------------------------- */

/* _i 0: IPv6 loopback, 1: the host name "localhost" */
START_TEST(ipv6_and_host_names_connect)
{
	struct e2e_opts o;
	struct e2e e;
	struct sockaddr_storage ss;
	struct iw_sge s, r;
	struct iw_wc wc;

	e2e_opts_default(&o);
	o.host = _i == 0 ? "::1" : "localhost";
	e2e_connect(&e, &o);
	ck_assert_int_eq(iw_get_peer_addr(e.c.id, &ss), 0);
	ck_assert_int_eq(ss.ss_family, _i == 0 ? AF_INET6 : AF_INET);
	memcpy(e.c.buf, "over the wire", 13);
	s = (struct iw_sge){ (uintptr_t)e.c.buf, 13, e.c.mr->lkey };
	r = (struct iw_sge){ (uintptr_t)e.s.buf, 64, e.s.mr->lkey };
	ck_assert_int_eq(iw_post_recv(e.s.qp,
				      &(struct iw_recv_wr){ 1, NULL, &r, 1 },
				      NULL),
			 0);
	ck_assert_int_eq(iw_post_send(e.c.qp,
				      &(struct iw_send_wr){
					      .wr_id = 2, .sg_list = &s,
					      .num_sge = 1,
					      .opcode = IW_WR_SEND },
				      NULL),
			 0);
	e2e_poll(e.s.cq, &wc, 1, E2E_WAIT_MS);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	ck_assert_mem_eq(e.s.buf, "over the wire", 13);
	e2e_teardown(&e);
}
END_TEST

/* ---- verbs that depend on the connection ------------------------------------ */

START_TEST(read_without_credit_is_refused_when_posted)
{
	struct e2e_opts o;
	struct e2e e;
	struct iw_sge s;
	struct iw_send_wr w = { .opcode = IW_WR_RDMA_READ, .num_sge = 1,
				.sg_list = &s };
	struct iw_send_wr *bad = NULL;

	e2e_opts_default(&o);
	o.cparam.ord = 0;
	o.cparam.ird = 1;
	e2e_connect(&e, &o);
	s = (struct iw_sge){ (uintptr_t)e.c.buf, 8, e.c.mr->lkey };
	w.rdma.remote_addr = (uintptr_t)e.s.buf;
	w.rdma.rkey = e.s.mr->rkey;
	ck_assert_int_eq(iw_post_send(e.c.qp, &w, &bad), -IW_ENO_READ_CREDIT);
	ck_assert_ptr_eq(bad, &w);
	e2e_teardown(&e);
}
END_TEST

/*
 * A Read posted before connecting, on a connection that turns out to
 * have ORD 0: the connection fails at once, the Read with a local QP
 * operation error, the Send before it flushed; the responder, which has
 * taken the connection as established, is told why by the Terminate
 * RFC 6581 names (LLP, MPA, insufficient IRD resources), not by a close.
 */
START_TEST(read_posted_before_a_connection_without_credit_fails_it)
{
	struct e2e_opts o;
	struct e2e e;
	struct iw_sge s;
	struct iw_wc wc[2];
	struct iw_send_wr w[2] = {
		{ .wr_id = 1, .opcode = IW_WR_SEND, .num_sge = 1,
		  .sg_list = &s, .next = &w[1] },
		{ .wr_id = 2, .opcode = IW_WR_RDMA_READ, .num_sge = 1,
		  .sg_list = &s, .send_flags = IW_SEND_SIGNALED },
	};
	struct iw_cm_event *ev;

	e2e_opts_default(&o);
	o.cparam.ord = 0;
	o.cparam.ird = 1;
	memset(&e, 0, sizeof(e));
	e2e_side_open(&e.c, &o);
	e2e_side_open(&e.s, &o);
	s = (struct iw_sge){ (uintptr_t)e.c.buf, 8, e.c.mr->lkey };
	w[1].rdma.remote_addr = (uintptr_t)e.s.buf;
	w[1].rdma.rkey = e.s.mr->rkey;
	ck_assert_int_eq(iw_post_send(e.c.qp, w, NULL), 0);
	e.listen = iw_create_id(e.s.ch, NULL);
	ck_assert_int_eq(iw_listen(e.listen, "127.0.0.1", "0", 4), 0);
	e2e_port(e.listen, e.port, sizeof(e.port));
	e.c.id = iw_create_id(e.c.ch, NULL);
	ck_assert_int_eq(iw_connect(e.c.id, "127.0.0.1", e.port, e.c.qp,
				    &o.cparam),
			 0);
	ev = e2e_event(e.s.ch, E2E_WAIT_MS);
	e.s.id = ev->id;
	iw_ack_cm_event(ev);
	ck_assert_int_eq(iw_accept(e.s.id, e.s.qp, &o.sparam), 0);
	ck_assert_int_eq(e2e_expect(e.c.ch, IW_CM_EVENT_CONNECT_ERROR,
				    E2E_WAIT_MS),
			 -IW_ENO_READ_CREDIT);
	e2e_poll(e.c.cq, wc, 2, E2E_WAIT_MS);
	ck_assert_uint_eq(wc[0].wr_id, 1);
	ck_assert_int_eq(wc[0].status, IW_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(wc[1].wr_id, 2);
	ck_assert_int_eq(wc[1].status, IW_WC_LOC_QP_OP_ERR);
	ck_assert_int_eq(wc[1].err, -IW_ENO_READ_CREDIT);
	e2e_expect(e.s.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	ev = e2e_event(e.s.ch, E2E_WAIT_MS);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_ERROR);
	ck_assert_int_eq(ev->status, -IW_ETERMINATED);
	ck_assert(ev->terminate.valid && ev->terminate.received);
	ck_assert_uint_eq(ev->terminate.layer, 2);
	ck_assert_uint_eq(ev->terminate.etype, 0);
	ck_assert_uint_eq(ev->terminate.ecode, 0x06);
	iw_ack_cm_event(ev);
	e2e_teardown(&e);
}
END_TEST

/* The responder's side of the same: accept refuses, the request stays. */
START_TEST(accept_with_a_queued_read_and_no_credit_is_refused)
{
	struct e2e_opts o;
	struct e2e e;
	struct iw_sge s;
	struct iw_send_wr w = { .wr_id = 3, .opcode = IW_WR_RDMA_READ,
				.num_sge = 1, .sg_list = &s };

	e2e_opts_default(&o);
	o.sparam.ord = 0;
	o.sparam.ird = 1;
	e2e_start(&e, &o);
	s = (struct iw_sge){ (uintptr_t)e.s.buf, 8, e.s.mr->lkey };
	w.rdma.remote_addr = (uintptr_t)e.c.buf;
	w.rdma.rkey = e.c.mr->rkey;
	ck_assert_int_eq(iw_post_send(e.s.qp, &w, NULL), 0);
	ck_assert_int_eq(iw_accept(e.s.id, e.s.qp, &o.sparam),
			 -IW_ENO_READ_CREDIT);
	ck_assert_int_eq(iw_reject(e.s.id, NULL, 0), 0);
	e2e_expect(e.c.ch, IW_CM_EVENT_REJECTED, E2E_WAIT_MS);
	e2e_teardown(&e);
}
END_TEST

START_TEST(cq_fd_signals_armed_and_solicited_completions)
{
	struct e2e_opts o;
	struct e2e e;
	struct iw_sge s, r;
	struct iw_wc wc[2];
	struct pollfd p;
	void *ctx = NULL;
	int n = 0;

	e2e_opts_default(&o);
	e2e_connect(&e, &o);
	r = (struct iw_sge){ (uintptr_t)e.s.buf, 64, e.s.mr->lkey };
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(iw_post_recv(e.s.qp,
					      &(struct iw_recv_wr){ (uint64_t)i,
								    NULL, &r, 1 },
					      NULL),
				 0);
	s = (struct iw_sge){ (uintptr_t)e.c.buf, 8, e.c.mr->lkey };
	p = (struct pollfd){ iw_cq_fd(e.s.cq), POLLIN, 0 };
	ck_assert_int_eq(iw_req_notify_cq(e.s.cq, 1), 0);
	/* an unsolicited Send completes but raises no event */
	ck_assert_int_eq(iw_post_send(e.c.qp,
				      &(struct iw_send_wr){
					      .sg_list = &s, .num_sge = 1,
					      .opcode = IW_WR_SEND },
				      NULL),
			 0);
	for (int i = 0; i < 10000 && n == 0; i++) {
		n = iw_poll_cq(e.s.cq, 2, wc);
		if (!n)
			usleep(1000);
	}
	ck_assert_int_eq(n, 1);
	ck_assert(!(wc[0].wc_flags & IW_WC_SOLICITED));
	ck_assert_int_eq(poll(&p, 1, 100), 0);
	/* a solicited one does */
	ck_assert_int_eq(iw_post_send(e.c.qp,
				      &(struct iw_send_wr){
					      .sg_list = &s, .num_sge = 1,
					      .opcode = IW_WR_SEND,
					      .send_flags = IW_SEND_SOLICITED },
				      NULL),
			 0);
	ck_assert_int_eq(poll(&p, 1, E2E_WAIT_MS), 1);
	ck_assert_int_eq(iw_get_cq_event(e.s.cq, &ctx), 0);
	iw_ack_cq_events(e.s.cq, 1);
	ck_assert_int_eq(iw_poll_cq(e.s.cq, 2, wc), 1);
	ck_assert(wc[0].wc_flags & IW_WC_SOLICITED);
	/* the event was consumed and the CQ is no longer armed */
	ck_assert_int_eq(poll(&p, 1, 50), 0);
	e2e_teardown(&e);
}
END_TEST

START_TEST(qp_attached_to_a_connection_cannot_be_reused_or_destroyed)
{
	struct e2e_opts o;
	struct e2e e;
	struct iw_cm_id *other;

	e2e_opts_default(&o);
	e2e_connect(&e, &o);
	ck_assert_int_eq(iw_destroy_qp(e.c.qp), -EBUSY);
	other = iw_create_id(e.c.ch, NULL);
	ck_assert_int_eq(iw_connect(other, "127.0.0.1", e.port, e.c.qp, NULL),
			 -EBUSY);
	iw_destroy_id(other);
	e2e_teardown(&e);
}
END_TEST

/*
 * Walks a pcap file of IPv4 packets record by record: the number of TCP
 * connections it opens (SYN without ACK), or -1 when the records do not
 * end exactly at the end of the file.
 */
static int pcap_connections(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t hdr[24], rec[16], pkt[64];
	int syns = 0;
	bool ok;

	if (!f)
		return -1;
	ok = fread(hdr, 1, sizeof(hdr), f) == sizeof(hdr);
	while (ok && fread(rec, 1, sizeof(rec), f) == sizeof(rec)) {
		uint32_t incl = (uint32_t)rec[8] | (uint32_t)rec[9] << 8 |
				(uint32_t)rec[10] << 16 | (uint32_t)rec[11] << 24;

		ok = incl >= 54 && incl <= 262144 &&
		     fread(pkt, 1, 54, f) == 54 &&
		     fseek(f, incl - 54, SEEK_CUR) == 0;
		/* Ethernet 14, IPv4 20, TCP flags at 13 */
		syns += ok && (pkt[14 + 20 + 13] & 0x12) == 0x02;
	}
	if (ok) {
		long end = ftell(f);

		fseek(f, 0, SEEK_END);
		ok = end == ftell(f);
	}
	fclose(f);
	return ok ? syns : -1;
}

/*
 * Two contexts naming one trace file two ways write it together: each
 * connection once, none overwriting another.
 */
START_TEST(contexts_naming_one_trace_share_it)
{
	char dir[] = "/tmp/iwarp-trace-XXXXXX", path[64], cwd[4096];
	struct e2e_opts o;
	struct e2e e;
	struct iw_sge s, r;
	struct iw_wc wc;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	ck_assert_int_eq(chdir(dir), 0);
	e2e_opts_default(&o);
	memset(&e, 0, sizeof(e));
	setenv("IWARP_TRACE", "t.pcap", 1);
	e2e_side_open(&e.c, &o);
	setenv("IWARP_TRACE", "./t.pcap", 1);
	e2e_side_open(&e.s, &o);
	unsetenv("IWARP_TRACE");
	e2e_request(&e, &o);
	ck_assert_int_eq(iw_accept(e.s.id, e.s.qp, NULL), 0);
	e2e_expect(e.c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	/* enough octets that two writers of one file would overwrite */
	r = (struct iw_sge){ (uintptr_t)e.s.buf, (uint32_t)e.s.len,
			     e.s.mr->lkey };
	ck_assert_int_eq(iw_post_recv(e.s.qp, &(struct iw_recv_wr){ 1, NULL, &r, 1 },
				      NULL), 0);
	e2e_fill(e.c.buf, e.c.len, 3);
	s = (struct iw_sge){ (uintptr_t)e.c.buf, (uint32_t)e.c.len,
			     e.c.mr->lkey };
	ck_assert_int_eq(iw_post_send(e.c.qp, &(struct iw_send_wr){
		.sg_list = &s, .num_sge = 1, .opcode = IW_WR_SEND }, NULL), 0);
	e2e_poll(e.s.cq, &wc, 1, E2E_WAIT_MS);
	/*
	 * A connection only the server's context sees; its close of the
	 * malformed request proves it was accepted before the teardown.
	 */
	{
		int fd = raw_connect(e.port);

		ck_assert_int_eq(write(fd, malformed_request, 24), 24);
		expect_closed(fd, E2E_WAIT_MS);
		close(fd);
	}
	/* and one only the client's context sees: to a plain TCP socket */
	{
		struct iw_cq *cq = iw_create_cq(e.c.ctx, 2, NULL);
		struct iw_qp_init_attr qa = {
			.send_cq = cq, .recv_cq = cq,
			.cap = { .max_send_wr = 1, .max_recv_wr = 1 },
		};
		struct iw_qp *qp = iw_create_qp(e.c.pd, &qa);
		struct iw_cm_id *id = iw_create_id(e.c.ch, NULL);
		char port[16];
		int fd = raw_listen(port), conn;

		ck_assert_ptr_nonnull(qp);
		ck_assert_int_eq(iw_connect(id, "127.0.0.1", port, qp, NULL), 0);
		conn = accept(fd, NULL, NULL);
		ck_assert_int_ge(conn, 0);
		close(conn);
		e2e_expect(e.c.ch, IW_CM_EVENT_CONNECT_ERROR, E2E_WAIT_MS);
		ck_assert_int_eq(iw_destroy_id(id), 0);
		ck_assert_int_eq(iw_destroy_qp(qp), 0);
		ck_assert_int_eq(iw_destroy_cq(cq), 0);
		close(fd);
	}
	e2e_teardown(&e);
	ck_assert_int_eq(chdir(cwd), 0);
	snprintf(path, sizeof(path), "%s/t.pcap", dir);
	/* the pair once and each one-sided connection, in one whole file */
	ck_assert_int_eq(pcap_connections(path), 3);
	unlink(path);
	rmdir(dir);
}
END_TEST

/*
 * "%p" in a trace file's name is the process ID, "%%" a "%": each
 * process of a job writes a file of its own, from IWARP_TRACE and from
 * trace_path alike, and a connection's two ends, both in this process,
 * are in that one file.
 */
START_TEST(trace_name_takes_the_process_id)
{
	char dir[] = "/tmp/iwarp-trace-XXXXXX", env[64], attr_path[64],
	     path[96];
	struct iw_context_attr a = { 0 };
	struct iw_context *ctx;
	struct e2e_opts o;
	struct e2e e;
	long pid = (long)getpid();

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(env, sizeof(env), "%s/t.%%p.%%%%.pcap", dir);
	setenv("IWARP_TRACE", env, 1);
	e2e_opts_default(&o);
	e2e_connect(&e, &o);
	e2e_teardown(&e);
	unsetenv("IWARP_TRACE");
	snprintf(path, sizeof(path), "%s/t.%ld.%%.pcap", dir, pid);
	ck_assert_int_eq(pcap_connections(path), 1);
	ck_assert_int_eq(unlink(path), 0);

	snprintf(attr_path, sizeof(attr_path), "%s/%%p", dir);
	a.trace_path = attr_path;
	ctx = iw_open(&a);
	ck_assert_ptr_nonnull(ctx);
	ck_assert_int_eq(iw_close(ctx), 0);
	snprintf(path, sizeof(path), "%s/%ld", dir, pid);
	ck_assert_int_eq(pcap_connections(path), 0);
	ck_assert_int_eq(unlink(path), 0);
	/* nothing else was made: the directory is empty again */
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(debug_log_names_the_handshake_and_the_addresses)
{
	struct e2e_opts o;
	struct e2e e;
	char path[] = "/tmp/iwarp-debug-XXXXXX", log[16384] = { 0 };
	int fd = mkstemp(path), saved = dup(2);
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(dup2(fd, 2), 2);
	setenv("IWARP_DEBUG", "1", 1);
	e2e_opts_default(&o);
	e2e_connect(&e, &o);
	e2e_teardown(&e);
	unsetenv("IWARP_DEBUG");
	dup2(saved, 2);
	n = pread(fd, log, sizeof(log) - 1, 0);
	close(fd);
	unlink(path);
	ck_assert_int_gt(n, 0);
	ck_assert_ptr_nonnull(strstr(log, "MPA Request: rev 2"));
	ck_assert_ptr_nonnull(strstr(log, "MPA Reply: rev 2"));
	ck_assert_ptr_nonnull(strstr(log, "established as initiator"));
	ck_assert_ptr_nonnull(strstr(log, "127.0.0.1:"));
	/* by default the initiator's first FPDU waits out the handshake */
	ck_assert_ptr_nonnull(strstr(log, "the first FPDU waits"));
}
END_TEST

/*
 * The initiator's first FPDU waits as long as asked after the Reply (for
 * Linux siw, which can miss one that comes too soon); 0 does not wait.
 */
START_TEST(first_fpdu_waits_as_long_as_asked)
{
	static const uint32_t delay_us[] = { 300000, 0 };
	struct e2e_opts o;
	struct e2e e;
	struct iw_sge s, r;
	struct iw_wc wc;
	long long t0, dt;

	e2e_opts_default(&o);
	o.client.first_fpdu_delay_us = delay_us[_i];
	e2e_connect(&e, &o);
	r = (struct iw_sge){ (uintptr_t)e.s.buf, 64, e.s.mr->lkey };
	ck_assert_int_eq(iw_post_recv(e.s.qp,
				      &(struct iw_recv_wr){ 1, NULL, &r, 1 },
				      NULL),
			 0);
	s = (struct iw_sge){ (uintptr_t)e.c.buf, 8, e.c.mr->lkey };
	t0 = now_ms();
	ck_assert_int_eq(iw_post_send(e.c.qp, &(struct iw_send_wr){
		.sg_list = &s, .num_sge = 1, .opcode = IW_WR_SEND }, NULL), 0);
	e2e_poll(e.s.cq, &wc, 1, E2E_WAIT_MS);
	dt = now_ms() - t0;
	if (delay_us[_i])
		ck_assert_msg(dt >= 250, "arrived after %lld ms", dt);
	else
		ck_assert_msg(dt < 250, "held for %lld ms", dt);
	e2e_teardown(&e);
}
END_TEST

/*
 * A peer that stops reading: the socket fills, Sends stop leaving, and
 * posting stops at the queue depth.  Nothing is buffered beyond that.
 */
START_TEST(stalled_peer_stops_us_at_the_queue_depth)
{
	struct e2e_opts o;
	struct e2e_side c;
	struct iw_cm_id *l;
	struct iw_cm_event *ev;
	struct iw_sge s;
	char port[16];
	int fds[2], posted = 0, rc = 0, flushed;
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* a server that accepts, then stops dead */
		struct e2e_side sv;

		close(fds[0]);
		e2e_opts_default(&o);
		e2e_side_open(&sv, &o);
		l = iw_create_id(sv.ch, NULL);
		if (iw_listen(l, "127.0.0.1", "0", 1))
			_exit(1);
		e2e_port(l, port, sizeof(port));
		if (write(fds[1], port, sizeof(port)) != sizeof(port))
			_exit(1);
		ev = e2e_event(sv.ch, E2E_WAIT_MS);
		if (ev->event != IW_CM_EVENT_CONNECT_REQUEST ||
		    iw_accept(ev->id, sv.qp, NULL))
			_exit(1);
		raise(SIGSTOP);
		_exit(0);
	}
	close(fds[1]);
	{
		struct pollfd p = { fds[0], POLLIN, 0 };

		ck_assert_int_eq(poll(&p, 1, E2E_WAIT_MS), 1);
		ck_assert_int_eq(read(fds[0], port, sizeof(port)), sizeof(port));
	}
	e2e_opts_default(&o);
	o.depth = 32;
	o.buf_len = 4 << 20;
	e2e_side_open(&c, &o);
	c.id = iw_create_id(c.ch, NULL);
	ck_assert_int_eq(iw_connect(c.id, "127.0.0.1", port, c.qp, NULL), 0);
	e2e_expect(c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	s = (struct iw_sge){ (uintptr_t)c.buf, 4 << 20, c.mr->lkey };
	while (posted < 1000) {
		rc = iw_post_send(c.qp,
				  &(struct iw_send_wr){
					  .wr_id = (uint64_t)posted,
					  .sg_list = &s, .num_sge = 1,
					  .opcode = IW_WR_SEND,
					  .send_flags = IW_SEND_SIGNALED },
				  NULL);
		if (rc)
			break;
		posted++;
	}
	ck_assert_int_eq(rc, -ENOMEM);
	ck_assert_int_le(posted, 32 + 32); /* the depth, plus what TCP took */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	{
		/* the dead peer ends the stream; everything comes back once */
		struct iw_wc wc[64];
		int got = e2e_poll_upto(c.cq, wc, posted, E2E_WAIT_MS);

		ck_assert_int_eq(got, posted);
		flushed = 0;
		for (int i = 0; i < got; i++)
			flushed += wc[i].status == IW_WC_WR_FLUSH_ERR;
		ck_assert_int_gt(flushed, 0);
	}
	e2e_side_close(&c);
	close(fds[0]);
}
END_TEST

/* ---- the event channel ------------------------------------------------------- */

static void set_nonblocking(int fd)
{
	ck_assert_int_eq(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
}

/*
 * The events of an identifier destroyed before they were taken go with
 * it, readiness included: a descriptor that polls readable always has an
 * event to hand out, so iw_get_cm_event() after poll() never waits.
 */
START_TEST(destroyed_identifiers_leave_no_readable_channel_behind)
{
	struct e2e_side c;
	struct iw_qp_init_attr qa = { .cap = { 2, 2, 1, 1, 0 } };
	struct iw_cm_event *ev;
	struct iw_cm_id *other;
	struct iw_qp *qp;
	struct iw_cq *cq;
	struct pollfd p;
	char port[16];
	int fd = raw_listen(port);

	close(fd); /* refused at once: UNREACHABLE */
	client_open(&c);
	p = (struct pollfd){ iw_cm_channel_fd(c.ch), POLLIN, 0 };
	ck_assert_int_eq(iw_connect(c.id, "127.0.0.1", port, c.qp, NULL), 0);
	ck_assert_int_eq(poll(&p, 1, E2E_WAIT_MS), 1);
	ck_assert_int_eq(iw_destroy_id(c.id), 0);
	c.id = NULL;
	ck_assert_int_eq(poll(&p, 1, 0), 0);
	set_nonblocking(p.fd);
	ck_assert_int_eq(iw_get_cm_event(c.ch, &ev), -EAGAIN);
	/* the next event counts once: readable, handed out, quiet again */
	cq = iw_create_cq(c.ctx, 4, NULL);
	ck_assert_ptr_nonnull(cq);
	qa.send_cq = qa.recv_cq = cq;
	qp = iw_create_qp(c.pd, &qa);
	ck_assert_ptr_nonnull(qp);
	other = iw_create_id(c.ch, NULL);
	ck_assert_int_eq(iw_connect(other, "127.0.0.1", port, qp, NULL), 0);
	ck_assert_int_eq(poll(&p, 1, E2E_WAIT_MS), 1);
	ck_assert_int_eq(iw_get_cm_event(c.ch, &ev), 0);
	ck_assert_ptr_eq(ev->id, other);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_UNREACHABLE);
	iw_ack_cm_event(ev);
	ck_assert_int_eq(poll(&p, 1, 0), 0);
	ck_assert_int_eq(iw_get_cm_event(c.ch, &ev), -EAGAIN);
	ck_assert_int_eq(iw_destroy_id(other), 0);
	ck_assert_int_eq(iw_destroy_qp(qp), 0);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	e2e_side_close(&c);
}
END_TEST

/* The same for a listener's connection requests, dropped with it. */
START_TEST(destroyed_listener_leaves_no_readable_channel_behind)
{
	struct e2e_opts o;
	struct e2e e;
	struct iw_cm_event *ev;
	struct pollfd p;

	e2e_opts_default(&o);
	memset(&e, 0, sizeof(e));
	e2e_side_open(&e.c, &o);
	e2e_side_open(&e.s, &o);
	e.listen = iw_create_id(e.s.ch, NULL);
	ck_assert_int_eq(iw_listen(e.listen, "127.0.0.1", "0", 4), 0);
	e2e_port(e.listen, e.port, sizeof(e.port));
	e.c.id = iw_create_id(e.c.ch, NULL);
	ck_assert_int_eq(iw_connect(e.c.id, "127.0.0.1", e.port, e.c.qp, NULL),
			 0);
	p = (struct pollfd){ iw_cm_channel_fd(e.s.ch), POLLIN, 0 };
	ck_assert_int_eq(poll(&p, 1, E2E_WAIT_MS), 1); /* CONNECT_REQUEST */
	ck_assert_int_eq(iw_destroy_id(e.listen), 0);
	e.listen = NULL;
	ck_assert_int_eq(poll(&p, 1, 0), 0);
	set_nonblocking(p.fd);
	ck_assert_int_eq(iw_get_cm_event(e.s.ch, &ev), -EAGAIN);
	/* the initiator's connection was closed under it */
	e2e_expect(e.c.ch, IW_CM_EVENT_CONNECT_ERROR, E2E_WAIT_MS);
	e2e_teardown(&e);
}
END_TEST

#ifndef __SANITIZE_ADDRESS__
/*
 * Allocation failure on demand: the test's calloc() stands in for the C
 * library's (glibc allows it) and, once armed, refuses every thread but
 * the test's own, the library's progress thread among them.
 */
extern void *__libc_calloc(size_t n, size_t size);
static atomic_bool calloc_refuse;
static pthread_t calloc_owner;

void *calloc(size_t n, size_t size)
{
	if (atomic_load(&calloc_refuse) &&
	    !pthread_equal(pthread_self(), calloc_owner))
		return NULL;
	return __libc_calloc(n, size);
}

/* The final event is reported even when no memory can be had for it. */
START_TEST(final_event_needs_no_allocation)
{
	struct e2e_side c;
	struct pollfd p;
	char port[16];
	int fd = raw_listen(port), ready;

	close(fd);
	client_open(&c);
	calloc_owner = pthread_self();
	atomic_store(&calloc_refuse, true);
	ck_assert_int_eq(iw_connect(c.id, "127.0.0.1", port, c.qp, NULL), 0);
	p = (struct pollfd){ iw_cm_channel_fd(c.ch), POLLIN, 0 };
	ready = poll(&p, 1, E2E_WAIT_MS);
	atomic_store(&calloc_refuse, false);
	ck_assert_msg(ready == 1, "the final event was lost");
	ck_assert_int_eq(e2e_expect(c.ch, IW_CM_EVENT_UNREACHABLE, 0),
			 -ECONNREFUSED);
	e2e_side_close(&c);
}
END_TEST
#endif

/* Reads exactly @len octets (or fails the test). */
static void read_full(int fd, void *buf, size_t len)
{
	for (size_t got = 0; got < len;) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t n;

		ck_assert_int_eq(poll(&p, 1, E2E_WAIT_MS), 1);
		n = read(fd, (char *)buf + got, len - got);
		ck_assert_int_gt(n, 0);
		got += (size_t)n;
	}
}

/*
 * A protocol error found while the Terminate that names it cannot leave:
 * here the initiator's first FPDU is held for a minute after the Reply
 * (first_fpdu_delay_us, as for a slow Linux siw), and the Terminate is
 * the first FPDU; a peer that stops reading holds it back the same way
 * once the socket's buffer is full.  The connection does not wait: after
 * reply_timeout_ms it closes without the Terminate, the final event says
 * why, and the work posted completes, flushed.
 */
START_TEST(terminate_that_cannot_leave_is_bounded)
{
	/* rev 2, no CRC, no markers, IRD and ORD 1 */
	static const char reply[] = "MPA ID Rep Frame\x10\x02\x00\x04"
				    "\x00\x01\x00\x01";
	/* an RDMA Write (DDP tagged, last) to an STag nobody registered */
	static const uint8_t bad_write[] = {
		0x00, 0x12, 0xc1, 0x40, 0xde, 0xad, 0xbe, 0x00,
		0, 0, 0, 0, 0, 0, 0, 0, 'a', 'b', 'c', 'd', 0, 0, 0, 0,
	};
	struct e2e_side c;
	struct iw_mpa_opts mo;
	struct iw_qp_attr qa;
	struct iw_wc wc[2];
	struct iw_sge sg;
	char port[16], req[24], b[64];
	int fd = raw_listen(port), conn, status;
	long long t0, dt;

	client_open(&c);
	iw_mpa_opts_default(&mo);
	mo.reply_timeout_ms = 500;
	mo.first_fpdu_delay_us = 60000000;
	ck_assert_int_eq(iw_set_mpa_opts(c.id, &mo), 0);
	ck_assert_int_eq(iw_connect(c.id, "127.0.0.1", port, c.qp, NULL), 0);
	conn = accept(fd, NULL, NULL);
	ck_assert_int_ge(conn, 0);
	read_full(conn, req, sizeof(req));
	ck_assert_int_eq(write(conn, reply, sizeof(reply) - 1),
			 (ssize_t)sizeof(reply) - 1);
	e2e_expect(c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	sg = (struct iw_sge){ (uintptr_t)c.buf, 8, c.mr->lkey };
	ck_assert_int_eq(iw_post_send(c.qp, &(struct iw_send_wr){
		.wr_id = 1, .sg_list = &sg, .num_sge = 1,
		.opcode = IW_WR_SEND }, NULL), 0);
	t0 = now_ms();
	ck_assert_int_eq(write(conn, bad_write, sizeof(bad_write)),
			 (ssize_t)sizeof(bad_write));
	status = e2e_expect(c.ch, IW_CM_EVENT_ERROR, E2E_WAIT_MS);
	dt = now_ms() - t0;
	ck_assert_int_eq(status, -IW_EDDP_T_STAG);
	ck_assert_msg(dt >= 400 && dt < 3000, "closed after %lld ms", dt);
	ck_assert_int_eq(iw_query_qp(c.qp, &qa), 0);
	ck_assert_int_eq(qa.state, IW_QPS_ERROR);
	e2e_poll(c.cq, wc, 1, E2E_WAIT_MS);
	ck_assert_uint_eq(wc[0].wr_id, 1);
	ck_assert_int_eq(wc[0].status, IW_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(iw_poll_cq(c.cq, 1, wc), 0);
	/* the stream ended with nothing sent: the Terminate never left */
	{
		struct pollfd p = { conn, POLLIN, 0 };

		ck_assert_int_eq(poll(&p, 1, E2E_WAIT_MS), 1);
		ck_assert_int_eq(read(conn, b, sizeof(b)), 0);
	}
	close(conn);
	close(fd);
	e2e_side_close(&c);
}
END_TEST

/* ---- threads ------------------------------------------------------------------- */

struct poster {
	struct e2e *e;
	int first, count;
};

/* Posts Sends of 1 KiB from one thread; another thread does the same. */
static void *post_many(void *arg)
{
	struct poster *p = arg;

	for (int i = 0; i < p->count; i++) {
		struct iw_sge s = { (uintptr_t)p->e->c.buf + 1024 *
					    (size_t)(p->first + i),
				    1024, p->e->c.mr->lkey };
		struct iw_send_wr w = { .wr_id = (uint64_t)(p->first + i),
					.sg_list = &s, .num_sge = 1,
					.opcode = IW_WR_SEND,
					.send_flags = IW_SEND_SIGNALED };
		int rc;

		long long end = now_ms() + 3 * E2E_WAIT_MS;

		/* a full queue frees as completions are polled */
		while ((rc = iw_post_send(p->e->c.qp, &w, NULL)) == -ENOMEM &&
		       now_ms() < end)
			sched_yield();
		if (rc)
			return (void *)(intptr_t)rc;
	}
	return NULL;
}

enum { PER_THREAD = 2000, TOTAL = 2 * PER_THREAD };

/*
 * Connects a client whose send queue holds @depth requests to a server
 * with a receive posted for each of the TOTAL messages first (Sends
 * complete when handed to TCP, so nothing else would keep the senders
 * behind the receiver).  Message i: its number, then a pattern of it.
 */
static void threads_connect(struct e2e *e, uint32_t depth)
{
	struct e2e_opts oc, os;

	e2e_opts_default(&oc);
	oc.depth = depth;
	oc.buf_len = TOTAL * 1024;
	os = oc;
	os.depth = TOTAL;
	memset(e, 0, sizeof(*e));
	e2e_side_open(&e->c, &oc);
	e2e_side_open(&e->s, &os);
	e2e_request(e, &oc);
	for (int i = 0; i < TOTAL; i++) {
		struct iw_sge r = { (uintptr_t)e->s.buf + 1024 * (size_t)i,
				    1024, e->s.mr->lkey };

		e2e_fill(e->c.buf + 1024 * (size_t)i, 1024, (uint32_t)i);
		memcpy(e->c.buf + 1024 * (size_t)i, &i, sizeof(i));
		ck_assert_int_eq(iw_post_recv(e->s.qp,
					      &(struct iw_recv_wr){
						      (uint64_t)i, NULL, &r, 1 },
					      NULL),
				 0);
	}
	ck_assert_int_eq(iw_accept(e->s.id, e->s.qp, NULL), 0);
	e2e_expect(e->s.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	e2e_expect(e->c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
}

static void posters_start(struct e2e *e, struct poster *p, pthread_t *t)
{
	for (int i = 0; i < 2; i++) {
		p[i] = (struct poster){ e, i * PER_THREAD, PER_THREAD };
		ck_assert_int_eq(pthread_create(&t[i], NULL, post_many, &p[i]),
				 0);
	}
}

static void posters_join(pthread_t *t)
{
	for (int i = 0; i < 2; i++) {
		void *rc;

		pthread_join(t[i], &rc);
		ck_assert_msg(rc == NULL, "posting failed: %s",
			      iw_strerror((int)(intptr_t)rc));
	}
}

/* Every message arrived once and whole, in one receive each. */
static void threads_check_received(struct e2e *e)
{
	struct iw_wc *wc = calloc(TOTAL, sizeof(*wc));
	uint8_t *seen = calloc(TOTAL, 1);

	ck_assert_ptr_nonnull(wc);
	ck_assert_ptr_nonnull(seen);
	e2e_poll(e->s.cq, wc, TOTAL, E2E_WAIT_MS);
	for (int i = 0; i < TOTAL; i++) {
		uint8_t *got = e->s.buf + 1024 * wc[i].wr_id;
		uint8_t want[1024];
		int k;

		require(wc[i].status == IW_WC_SUCCESS, "receive %d failed", i);
		memcpy(&k, got, sizeof(k));
		require(k >= 0 && k < TOTAL && !seen[k],
			"receive %d: message %d unknown or twice", i, k);
		e2e_fill(want, 1024, (uint32_t)k);
		require(memcmp(got + 4, want + 4, 1020) == 0,
			"message %d arrived damaged", k);
		seen[k] = 1;
	}
	free(seen);
	free(wc);
}

START_TEST(two_threads_post_while_the_progress_thread_runs)
{
	struct e2e e;
	struct poster p[2];
	pthread_t t[2];
	struct iw_wc *wc = calloc(TOTAL, sizeof(*wc));

	ck_assert_ptr_nonnull(wc);
	threads_connect(&e, TOTAL);
	posters_start(&e, p, t);
	posters_join(t);
	e2e_poll(e.c.cq, wc, TOTAL, E2E_WAIT_MS);
	for (int i = 0; i < TOTAL; i++)
		require(wc[i].status == IW_WC_SUCCESS, "send %d failed", i);
	threads_check_received(&e);
	free(wc);
	e2e_teardown(&e);
}
END_TEST

struct poller {
	struct iw_cq *cq;
	int want, got;
	uint8_t *seen;
	const char *fault; /* NULL, or what went wrong */
};

/* Polls @cq until @want completions came (bounded), each wr_id once. */
static void *poll_many(void *arg)
{
	struct poller *p = arg;
	long long end = now_ms() + 3 * E2E_WAIT_MS;

	while (p->got < p->want && now_ms() < end) {
		struct iw_wc wc[16];
		int n = iw_poll_cq(p->cq, 16, wc);

		if (n < 0) {
			p->fault = "iw_poll_cq failed";
			return NULL;
		}
		for (int i = 0; i < n; i++) {
			uint64_t k = wc[i].wr_id;

			if (k >= (uint64_t)p->want || p->seen[k] ||
			    wc[i].status != IW_WC_SUCCESS) {
				p->fault = "a completion unknown, twice or failed";
				return NULL;
			}
			p->seen[k] = 1;
		}
		p->got += n;
		if (n == 0)
			sched_yield();
	}
	return NULL;
}

/*
 * Polling while two threads post: the send queue holds 32 requests and
 * 4000 are posted, so the posters can only finish if the poller frees
 * slots while they post.  Each completion comes once, every message
 * arrives whole.
 */
START_TEST(cq_polled_while_two_threads_post)
{
	struct e2e e;
	struct poster p[2];
	struct poller pl;
	pthread_t t[2], tp;

	threads_connect(&e, 32);
	pl = (struct poller){ e.c.cq, TOTAL, 0, calloc(TOTAL, 1), NULL };
	ck_assert_ptr_nonnull(pl.seen);
	ck_assert_int_eq(pthread_create(&tp, NULL, poll_many, &pl), 0);
	posters_start(&e, p, t);
	posters_join(t);
	pthread_join(tp, NULL);
	ck_assert_msg(!pl.fault, "poller: %s", pl.fault);
	ck_assert_int_eq(pl.got, TOTAL);
	threads_check_received(&e);
	free(pl.seen);
	e2e_teardown(&e);
}
END_TEST

/*
 * iw_set_debug() is the switch: off, nothing is logged; on, the
 * handshake is logged with both addresses, and so is a Terminate as it
 * is received.
 */
START_TEST(set_debug_logs_the_handshake_and_a_received_terminate)
{
	struct log_capture lc;
	struct e2e_opts o;
	struct e2e e;
	struct iw_sge sg;
	char *log;

	unsetenv("IWARP_DEBUG");
	log_start(&lc);
	e2e_opts_default(&o);
	e2e_connect(&e, &o);
	e2e_teardown(&e);
	log = log_stop(&lc);
	ck_assert_msg(strstr(log, "iwarp:") == NULL, "logged while off: %s",
		      log);
	free(log);

	log_start(&lc);
	memset(&e, 0, sizeof(e));
	e2e_side_open(&e.c, &o);
	e2e_side_open(&e.s, &o);
	iw_set_debug(e.c.ctx, 1);
	iw_set_debug(e.s.ctx, 1);
	e2e_request(&e, &o);
	ck_assert_int_eq(iw_accept(e.s.id, e.s.qp, NULL), 0);
	e2e_expect(e.c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	e2e_expect(e.s.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	/* a Write to an STag the server never registered */
	sg = (struct iw_sge){ (uintptr_t)e.c.buf, 8, e.c.mr->lkey };
	ck_assert_int_eq(iw_post_send(e.c.qp, &(struct iw_send_wr){
		.sg_list = &sg, .num_sge = 1, .opcode = IW_WR_RDMA_WRITE,
		.rdma = { (uintptr_t)e.s.buf, e.s.mr->rkey ^ 0x80 } }, NULL), 0);
	e2e_expect(e.c.ch, IW_CM_EVENT_ERROR, E2E_WAIT_MS);
	e2e_expect(e.s.ch, IW_CM_EVENT_ERROR, E2E_WAIT_MS);
	e2e_teardown(&e);
	log = log_stop(&lc);
	expect_logged(log, "MPA Request: rev 2 M0 C0", 0);
	expect_logged(log, "MPA Reply: rev 2 M0 C0 R0", 0);
	ck_assert_ptr_nonnull(strstr(log, "iwarp: 127.0.0.1:"));
	ck_assert_ptr_nonnull(strstr(log, " -> 127.0.0.1:"));
	expect_logged(log, "Terminate received: layer 1 type 1 code 0x00 "
			   "(DDP tagged buffer error: invalid STag)", 0);
	expect_logged(log, "Terminate sent: layer 1 type 1 code 0x00", 0);
	free(log);
}
END_TEST

/* ---- an application's own event loop -------------------------------------- */

/*
 * A context on the application's event_base: the library starts no thread,
 * the application dispatches the loop (here in a thread of the test).
 */
START_TEST(application_event_base_drives_progress)
{
	struct e2e_opts o;
	struct e2e e;
	struct event_base *base;
	struct iw_context_attr attr = { 0 };
	struct iw_context *own;
	struct iw_sge s, r;
	struct iw_wc wc;
	pthread_t loop;

	base = e2e_base_start(&loop);
	e2e_opts_default(&o);
	memset(&e, 0, sizeof(e));
	e2e_side_open(&e.c, &o);
	attr.base = base;
	own = iw_open(&attr);
	ck_assert_ptr_nonnull(own);
	{
		struct iw_cm_channel *ch = iw_create_cm_channel(own);
		struct iw_pd *pd = iw_alloc_pd(own);
		struct iw_cq *cq = iw_create_cq(own, 16, NULL);
		struct iw_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq,
					      .cap = { 8, 8, 1, 1, 0 } };
		struct iw_qp *qp = iw_create_qp(pd, &qa);
		static uint8_t buf[64];
		struct iw_mr *mr = iw_reg_mr(pd, buf, sizeof(buf),
					     IW_ACCESS_LOCAL_WRITE);
		struct iw_cm_id *l = iw_create_id(ch, NULL), *sid;
		struct iw_cm_event *ev;
		char port[16];

		ck_assert_int_eq(iw_listen(l, "127.0.0.1", "0", 1), 0);
		e2e_port(l, port, sizeof(port));
		e.c.id = iw_create_id(e.c.ch, NULL);
		ck_assert_int_eq(iw_connect(e.c.id, "127.0.0.1", port, e.c.qp,
					    NULL),
				 0);
		ev = e2e_event(ch, E2E_WAIT_MS);
		ck_assert_int_eq(ev->event, IW_CM_EVENT_CONNECT_REQUEST);
		sid = ev->id;
		iw_ack_cm_event(ev);
		r = (struct iw_sge){ (uintptr_t)buf, 64, mr->lkey };
		ck_assert_int_eq(iw_post_recv(qp, &(struct iw_recv_wr){ 1, NULL,
								       &r, 1 },
					      NULL),
				 0);
		ck_assert_int_eq(iw_accept(sid, qp, NULL), 0);
		e2e_expect(ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
		e2e_expect(e.c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
		memcpy(e.c.buf, "own loop", 8);
		s = (struct iw_sge){ (uintptr_t)e.c.buf, 8, e.c.mr->lkey };
		ck_assert_int_eq(iw_post_send(e.c.qp,
					      &(struct iw_send_wr){
						      .sg_list = &s, .num_sge = 1,
						      .opcode = IW_WR_SEND },
					      NULL),
				 0);
		e2e_poll(cq, &wc, 1, E2E_WAIT_MS);
		ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
		ck_assert_mem_eq(buf, "own loop", 8);
		ck_assert_int_eq(iw_disconnect(sid), 0);
		e2e_expect(ch, IW_CM_EVENT_DISCONNECTED, E2E_WAIT_MS);
		e2e_expect(e.c.ch, IW_CM_EVENT_DISCONNECTED, E2E_WAIT_MS);
		iw_destroy_id(sid);
		iw_destroy_id(l);
		iw_destroy_qp(qp);
		iw_dereg_mr(mr);
		iw_destroy_cq(cq);
		iw_dealloc_pd(pd);
		iw_destroy_cm_channel(ch);
	}
	ck_assert_int_eq(iw_close(own), 0);
	event_base_loopbreak(base);
	pthread_join(loop, NULL);
	event_base_free(base);
	e2e_side_close(&e.c);
}
END_TEST

static Suite *cm_suite(void)
{
	Suite *s = suite_create("cm");
	TCase *tc = tcase_create("connect");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, closed_port_is_unreachable_refused_at_once);
	tcase_add_test(tc, address_refused_by_connect_itself_is_unreachable);
	tcase_add_test(tc, silent_peer_times_out_waiting_for_the_reply);
	tcase_add_test(tc, peer_hanging_up_mid_handshake_is_a_reset);
	tcase_add_test(tc, fpdu_right_behind_the_reply_is_taken);
	tcase_add_loop_test(tc, responder_first_sends_before_the_client_speaks, 0, 3);
	tcase_add_test(tc, silent_initiator_is_dropped_after_the_request_timeout);
	tcase_add_test(tc, oldest_silent_connection_makes_room_beyond_the_backlog);
	tcase_add_test(tc, malformed_request_is_closed_without_a_reply);
	tcase_add_test(tc, reject_sends_the_private_data_back);
	tcase_add_loop_test(tc, work_posted_before_a_failed_connect_is_flushed,
			    0, 5);
	tcase_add_loop_test(tc, reply_cut_off_mid_frame_is_truncated, 0, 2);
	tcase_add_test(tc, request_cut_off_mid_frame_is_truncated);
	tcase_add_loop_test(tc, data_behind_the_request_is_refused_as_unexpected,
			    0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("mpa");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, markers_required_by_initiator_refused_by_responder);
	tcase_add_loop_test(tc, option_required_by_responder_refused_by_initiator,
			    0, 2);
	tcase_add_test(tc, responder_honours_crc_even_when_it_would_rather_not);
	tcase_add_test(tc, no_common_rtr_type_is_refused_by_the_responder);
	tcase_add_test(tc, private_data_is_limited_and_passed_verbatim);
	tcase_add_test(tc, request_private_data_arrives_whole);
	tcase_add_test(tc, revision_1_carries_512_octets_and_wide_ird_is_refused);
	tcase_add_loop_test(tc, ipv6_and_host_names_connect, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("verbs");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, read_without_credit_is_refused_when_posted);
	tcase_add_test(tc, read_posted_before_a_connection_without_credit_fails_it);
	tcase_add_test(tc, accept_with_a_queued_read_and_no_credit_is_refused);
	tcase_add_test(tc, cq_fd_signals_armed_and_solicited_completions);
	tcase_add_test(tc, qp_attached_to_a_connection_cannot_be_reused_or_destroyed);
	tcase_add_test(tc, debug_log_names_the_handshake_and_the_addresses);
	tcase_add_test(tc, contexts_naming_one_trace_share_it);
	tcase_add_test(tc, trace_name_takes_the_process_id);
	tcase_add_loop_test(tc, first_fpdu_waits_as_long_as_asked, 0, 2);
	tcase_add_test(tc, stalled_peer_stops_us_at_the_queue_depth);
	tcase_add_test(tc, terminate_that_cannot_leave_is_bounded);
	tcase_add_test(tc, two_threads_post_while_the_progress_thread_runs);
	tcase_add_test(tc, cq_polled_while_two_threads_post);
	tcase_add_test(tc, set_debug_logs_the_handshake_and_a_received_terminate);
	tcase_add_test(tc, application_event_base_drives_progress);
	suite_add_tcase(s, tc);

	tc = tcase_create("events");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, destroyed_identifiers_leave_no_readable_channel_behind);
	tcase_add_test(tc, destroyed_listener_leaves_no_readable_channel_behind);
#ifndef __SANITIZE_ADDRESS__
	tcase_add_test(tc, final_event_needs_no_allocation);
#endif
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(cm_suite());
}
