// SPDX-License-Identifier: MIT
/*
 * lifecycle: walks every way a connection ends (refused, rejected, a
 * protocol error with its Terminate, a disconnect with work outstanding,
 * identifiers and listeners destroyed while busy or with events untaken)
 * and tears everything down.  Exits 0
 * when each step behaved; run under valgrind it also proves nothing leaks.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <iwarp/iwarp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WAIT_MS 20000 /* valgrind is slow */

#define CHECK(cond, ...)                                          \
	do {                                                      \
		if (!(cond)) {                                    \
			fprintf(stderr, "lifecycle: " __VA_ARGS__); \
			fputc('\n', stderr);                      \
			exit(1);                                  \
		}                                                 \
	} while (0)

struct side {
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_qp *qp;
	struct iw_mr *mr;
	char buf[4096];
};

static void open_side(struct side *s)
{
	struct iw_qp_init_attr qa = { .cap = { 8, 8, 1, 1, 0 } };

	memset(s, 0, sizeof(*s));
	s->ctx = iw_open(NULL);
	CHECK(s->ctx, "iw_open: %s", strerror(errno));
	s->ch = iw_create_cm_channel(s->ctx);
	s->pd = iw_alloc_pd(s->ctx);
	s->cq = iw_create_cq(s->ctx, 16, NULL);
	CHECK(s->ch && s->pd && s->cq, "setup failed");
	qa.send_cq = qa.recv_cq = s->cq;
	s->qp = iw_create_qp(s->pd, &qa);
	s->mr = iw_reg_mr(s->pd, s->buf, sizeof(s->buf),
			  IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE);
	CHECK(s->qp && s->mr, "QP or MR failed");
}

/* A QP that went through a connection cannot take another: replace it. */
static void new_qp(struct side *s)
{
	struct iw_qp_init_attr qa = { .send_cq = s->cq, .recv_cq = s->cq,
				      .cap = { 8, 8, 1, 1, 0 } };
	struct iw_wc wc[16];

	CHECK(iw_destroy_qp(s->qp) == 0, "destroy QP");
	while (iw_poll_cq(s->cq, 16, wc) > 0)
		;
	s->qp = iw_create_qp(s->pd, &qa);
	CHECK(s->qp, "create QP");
}

static void close_side(struct side *s)
{
	CHECK(iw_destroy_qp(s->qp) == 0, "destroy QP");
	CHECK(iw_dereg_mr(s->mr) == 0, "dereg");
	CHECK(iw_destroy_cq(s->cq) == 0, "destroy CQ");
	CHECK(iw_dealloc_pd(s->pd) == 0, "dealloc PD");
	CHECK(iw_destroy_cm_channel(s->ch) == 0, "destroy channel");
	CHECK(iw_close(s->ctx) == 0, "close");
}

static struct iw_cm_event *event(struct iw_cm_channel *ch)
{
	struct pollfd p = { iw_cm_channel_fd(ch), POLLIN, 0 };
	struct iw_cm_event *ev;

	CHECK(poll(&p, 1, WAIT_MS) == 1, "no CM event");
	CHECK(iw_get_cm_event(ch, &ev) == 0, "get event");
	return ev;
}

static int expect(struct iw_cm_channel *ch, enum iw_cm_event_type type)
{
	struct iw_cm_event *ev = event(ch);
	int status = ev->status;

	CHECK(ev->event == type, "got %s (%s), wanted %s",
	      iw_cm_event_str(ev->event), iw_strerror(ev->status),
	      iw_cm_event_str(type));
	iw_ack_cm_event(ev);
	return status;
}

static int wait_wc(struct iw_cq *cq, struct iw_wc *wc, int n)
{
	int got = 0;

	for (int i = 0; i < WAIT_MS && got < n; i++) {
		int r = iw_poll_cq(cq, n - got, wc + got);

		CHECK(r >= 0, "poll CQ");
		got += r;
		if (got < n)
			usleep(1000);
	}
	return got;
}

/* Connects c to s through @l; returns s's new identifier. */
static void wait_readable(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };

	CHECK(poll(&p, 1, WAIT_MS) == 1, "nothing to read in time");
}

/* The peer closed (what it sent first is read). */
static void wait_closed(int fd)
{
	char b[64];

	for (;;) {
		wait_readable(fd);
		if (read(fd, b, sizeof(b)) <= 0)
			return;
	}
}

/* Nothing on the channel: a non-blocking take finds no event. */
static bool no_event(struct iw_cm_channel *ch)
{
	int fd = iw_cm_channel_fd(ch), fl = fcntl(fd, F_GETFL);
	struct iw_cm_event *ev;
	int rc;

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	rc = iw_get_cm_event(ch, &ev);
	fcntl(fd, F_SETFL, fl);
	if (rc == 0)
		iw_ack_cm_event(ev);
	return rc == -EAGAIN;
}

static int raw_connect(const char *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)atoi(port)),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0,
	      "raw connect");
	return fd;
}

static struct iw_cm_id *connect_pair(struct side *c, struct iw_cm_id *cid,
				     struct side *s, const char *port)
{
	struct iw_cm_event *ev;
	struct iw_cm_id *sid;

	CHECK(iw_connect(cid, "127.0.0.1", port, c->qp, NULL) == 0, "connect");
	ev = event(s->ch);
	CHECK(ev->event == IW_CM_EVENT_CONNECT_REQUEST, "no request");
	sid = ev->id;
	iw_ack_cm_event(ev);
	CHECK(iw_accept(sid, s->qp, NULL) == 0, "accept");
	expect(s->ch, IW_CM_EVENT_ESTABLISHED);
	expect(c->ch, IW_CM_EVENT_ESTABLISHED);
	return sid;
}

int main(void)
{
	struct side c, s;
	struct iw_cm_id *l, *cid, *sid;
	struct sockaddr_storage ss;
	struct iw_cm_event *ev;
	struct iw_wc wc[8];
	char port[16];

	open_side(&c);
	open_side(&s);
	l = iw_create_id(s.ch, NULL);
	CHECK(iw_listen(l, "127.0.0.1", "0", 8) == 0, "listen");
	CHECK(iw_get_local_addr(l, &ss) == 0, "local addr");
	snprintf(port, sizeof(port), "%u",
		 ntohs(((struct sockaddr_in *)&ss)->sin_port));

	/* 1. refused: nothing listens on port 1 */
	cid = iw_create_id(c.ch, NULL);
	CHECK(iw_connect(cid, "127.0.0.1", "1", c.qp, NULL) == 0, "connect");
	CHECK(expect(c.ch, IW_CM_EVENT_UNREACHABLE) == -ECONNREFUSED,
	      "refused");
	iw_destroy_id(cid);
	new_qp(&c);

	/* 2. rejected */
	cid = iw_create_id(c.ch, NULL);
	CHECK(iw_connect(cid, "127.0.0.1", port, c.qp, NULL) == 0, "connect");
	ev = event(s.ch);
	CHECK(ev->event == IW_CM_EVENT_CONNECT_REQUEST, "no request");
	sid = ev->id;
	iw_ack_cm_event(ev);
	CHECK(iw_reject(sid, "no", 2) == 0, "reject");
	expect(c.ch, IW_CM_EVENT_REJECTED);
	iw_destroy_id(cid);
	iw_destroy_id(sid);
	new_qp(&c);

	/* 3. a Write to an STag the server does not have: its Terminate */
	cid = iw_create_id(c.ch, NULL);
	sid = connect_pair(&c, cid, &s, port);
	{
		struct iw_sge sg = { (uintptr_t)c.buf, 16, c.mr->lkey };
		struct iw_recv_wr r = { 9, NULL, &sg, 1 };
		struct iw_send_wr w = { .wr_id = 1, .sg_list = &sg,
					.num_sge = 1,
					.opcode = IW_WR_RDMA_WRITE,
					.send_flags = IW_SEND_SIGNALED,
					.rdma = { (uintptr_t)s.buf,
						  s.mr->rkey ^ 0x80 } };

		CHECK(iw_post_recv(c.qp, &r, NULL) == 0, "post recv");
		CHECK(iw_post_send(c.qp, &w, NULL) == 0, "post write");
	}
	ev = event(s.ch);
	CHECK(ev->event == IW_CM_EVENT_ERROR &&
		      ev->status == -IW_EDDP_T_STAG && ev->terminate.valid &&
		      !ev->terminate.received && ev->terminate.layer == 1 &&
		      ev->terminate.etype == 1 && ev->terminate.ecode == 0,
	      "server: %s (%s)", iw_cm_event_str(ev->event),
	      iw_strerror(ev->status));
	iw_ack_cm_event(ev);
	ev = event(c.ch);
	CHECK(ev->event == IW_CM_EVENT_ERROR &&
		      ev->status == -IW_ETERMINATED && ev->terminate.received &&
		      ev->terminate.layer == 1 && ev->terminate.words &&
		      strstr(ev->terminate.words, "invalid STag"),
	      "client: %s (%s)", iw_cm_event_str(ev->event),
	      iw_strerror(ev->status));
	iw_ack_cm_event(ev);
	/* the Write was handed down; the receive is flushed */
	CHECK(wait_wc(c.cq, wc, 2) == 2, "completions");
	iw_destroy_id(cid);
	iw_destroy_id(sid);
	new_qp(&c);
	new_qp(&s);

	/* 4. disconnect with receives outstanding on both sides */
	cid = iw_create_id(c.ch, NULL);
	sid = connect_pair(&c, cid, &s, port);
	for (int i = 0; i < 4; i++) {
		struct iw_sge sg = { (uintptr_t)c.buf, 16, c.mr->lkey };
		struct iw_recv_wr r = { (uint64_t)i, NULL, &sg, 1 };

		CHECK(iw_post_recv(c.qp, &r, NULL) == 0, "post recv");
		sg = (struct iw_sge){ (uintptr_t)s.buf, 16, s.mr->lkey };
		CHECK(iw_post_recv(s.qp, &r, NULL) == 0, "post recv");
	}
	CHECK(iw_disconnect(cid) == 0, "disconnect");
	expect(c.ch, IW_CM_EVENT_DISCONNECTED);
	expect(s.ch, IW_CM_EVENT_DISCONNECTED);
	CHECK(wait_wc(c.cq, wc, 4) == 4 && wc[0].status == IW_WC_WR_FLUSH_ERR,
	      "client flush");
	CHECK(wait_wc(s.cq, wc, 4) == 4 && wc[3].status == IW_WC_WR_FLUSH_ERR,
	      "server flush");
	iw_destroy_id(cid);
	iw_destroy_id(sid);
	new_qp(&c);
	new_qp(&s);

	/* 5. identifiers destroyed while connected, and a request pending */
	cid = iw_create_id(c.ch, NULL);
	sid = connect_pair(&c, cid, &s, port);
	iw_destroy_id(sid); /* no event for it; the client's stream ends */
	expect(c.ch, IW_CM_EVENT_DISCONNECTED);
	iw_destroy_id(cid);
	new_qp(&c);
	new_qp(&s);
	cid = iw_create_id(c.ch, NULL);
	CHECK(iw_connect(cid, "127.0.0.1", port, c.qp, NULL) == 0, "connect");
	ev = event(s.ch);
	CHECK(ev->event == IW_CM_EVENT_CONNECT_REQUEST, "no request");
	sid = ev->id;
	iw_ack_cm_event(ev);
	iw_destroy_id(sid); /* never answered */
	CHECK(expect(c.ch, IW_CM_EVENT_CONNECT_ERROR) == -ECONNRESET, "reset");
	iw_destroy_id(cid);
	new_qp(&c);

	/* 6. an identifier destroyed before its event was taken */
	cid = iw_create_id(c.ch, NULL);
	CHECK(iw_connect(cid, "127.0.0.1", "1", c.qp, NULL) == 0, "connect");
	wait_readable(iw_cm_channel_fd(c.ch));
	iw_destroy_id(cid);
	CHECK(no_event(c.ch), "an event of a destroyed identifier");
	new_qp(&c);

	/*
	 * 7. a listener destroyed with a connection that has not sent its
	 * Request and one whose request nobody took: both go with it
	 */
	{
		int raw = raw_connect(port);

		cid = iw_create_id(c.ch, NULL);
		CHECK(iw_connect(cid, "127.0.0.1", port, c.qp, NULL) == 0,
		      "connect");
		wait_readable(iw_cm_channel_fd(s.ch));
		iw_destroy_id(l);
		wait_closed(raw);
		close(raw);
		expect(c.ch, IW_CM_EVENT_CONNECT_ERROR);
		CHECK(no_event(s.ch), "a request of a destroyed listener");
		iw_destroy_id(cid);
	}

	close_side(&c);
	close_side(&s);
	puts("lifecycle: every step behaved");
	return 0;
}
