// SPDX-License-Identifier: MIT
/*
 * A misbehaving rping server for iwarp-ping's client, built on libiwarp's
 * public API only, so that the client's failure lines can be tested
 * without test-only options in the tool.  It listens on 127.0.0.1:PORT,
 * takes one client and exits.
 *
 *   ping_peer PORT corrupt PING OCTET
 *	serves rping's server side (Read the start buffer, answer, Write
 *	the data into the sink, answer), but in ping number PING (from 0)
 *	the octet at OCTET goes back with bit 0x20 flipped; exits 0 when the
 *	client has disconnected after that ping
 *   ping_peer PORT terminate
 *	accepts without a receive posted, so the client's first Send finds
 *	no buffer and this side ends the stream with a Terminate (RFC 5041
 *	untagged buffer error); exits 0 when its connection ended with a
 *	Terminate sent
 */
#include <endian.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <iwarp/iwarp.h>

#define WAIT_MS 10000
#define ADV_LEN 16 /* rping's struct rping_rdma_info: be64, be32, be32 */
#define MAX_SIZE 65536

static const char *prog = "ping_peer";

struct peer {
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_qp *qp;
	struct iw_cm_id *listen, *id;
	uint8_t buf[MAX_SIZE], adv_in[ADV_LEN], adv_out[ADV_LEN];
	struct iw_mr *buf_mr, *in_mr, *out_mr;
};

static int fail(const char *what, int rc)
{
	fprintf(stderr, "%s: %s%s%s\n", prog, what, rc ? ": " : "",
		rc ? iw_strerror(rc) : "");
	return 1;
}

static struct iw_cm_event *next_event(struct peer *p)
{
	struct pollfd f = { iw_cm_channel_fd(p->ch), POLLIN, 0 };
	struct iw_cm_event *ev;

	if (poll(&f, 1, WAIT_MS) <= 0 || iw_get_cm_event(p->ch, &ev))
		return NULL;
	return ev;
}

#define WANT(op) (1u << (op))

/* One completion, or the connection's end: 1, 0 (ended), -1 (time). */
static int next_wc(struct peer *p, struct iw_wc *wc)
{
	for (;;) {
		struct pollfd f[2] = { { iw_cq_fd(p->cq), POLLIN, 0 },
				       { iw_cm_channel_fd(p->ch), POLLIN, 0 } };

		if (iw_poll_cq(p->cq, 1, wc) == 1)
			return 1;
		/* arm, then look again: a completion between the two stays */
		iw_req_notify_cq(p->cq, 0);
		if (iw_poll_cq(p->cq, 1, wc) == 1)
			return 1;
		if (poll(f, 2, WAIT_MS) <= 0)
			return -1;
		if (f[0].revents)
			iw_get_cq_event(p->cq, NULL);
		else if (f[1].revents)
			return 0;
	}
}

/*
 * The completions in @want, each opcode once, all successful.  Returns 0,
 * 1 on a failure, 2 when the client's connection ended first.
 */
static int wait_wc(struct peer *p, unsigned int want)
{
	while (want) {
		struct iw_wc wc;
		int rc = next_wc(p, &wc);

		if (rc < 0)
			return fail("no completion in time", 0);
		if (rc == 0 || wc.status == IW_WC_WR_FLUSH_ERR)
			return 2;
		if (wc.status != IW_WC_SUCCESS)
			return fail(iw_wc_status_str(wc.status), wc.err);
		want &= ~WANT(wc.opcode);
	}
	return 0;
}

static int post_recv(struct peer *p)
{
	struct iw_sge s = { (uintptr_t)p->adv_in, ADV_LEN, p->in_mr->lkey };
	struct iw_recv_wr r = { .wr_id = 1, .sg_list = &s, .num_sge = 1 };
	int rc = iw_post_recv(p->qp, &r, NULL);

	return rc ? fail("post a receive", rc) : 0;
}

static int post(struct peer *p, enum iw_wr_opcode op, uint8_t *buf,
		uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct iw_sge s = { (uintptr_t)buf, len, lkey };
	struct iw_send_wr w = { .wr_id = 2, .sg_list = &s, .num_sge = 1,
				.opcode = op, .send_flags = IW_SEND_SIGNALED,
				.rdma = { raddr, rkey } };
	int rc = iw_post_send(p->qp, &w, NULL);

	return rc ? fail("post", rc) : 0;
}

static int setup(struct peer *p, const char *port)
{
	struct iw_qp_init_attr qa = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int rc;

	p->ctx = iw_open(NULL);
	p->ch = p->ctx ? iw_create_cm_channel(p->ctx) : NULL;
	p->pd = p->ctx ? iw_alloc_pd(p->ctx) : NULL;
	p->cq = p->ctx ? iw_create_cq(p->ctx, 32, NULL) : NULL;
	if (!p->ch || !p->pd || !p->cq)
		return fail("out of resources", 0);
	p->buf_mr = iw_reg_mr(p->pd, p->buf, sizeof(p->buf),
			      IW_ACCESS_LOCAL_WRITE);
	p->in_mr = iw_reg_mr(p->pd, p->adv_in, ADV_LEN, IW_ACCESS_LOCAL_WRITE);
	p->out_mr = iw_reg_mr(p->pd, p->adv_out, ADV_LEN, 0);
	qa.send_cq = qa.recv_cq = p->cq;
	p->qp = iw_create_qp(p->pd, &qa);
	if (!p->buf_mr || !p->in_mr || !p->out_mr || !p->qp)
		return fail("cannot register memory or create the QP", 0);
	p->listen = iw_create_id(p->ch, NULL);
	if (!p->listen)
		return fail("cannot create an identifier", 0);
	rc = iw_listen(p->listen, "127.0.0.1", port, 1);
	return rc ? fail("cannot listen", rc) : 0;
}

/* The client's Request, accepted as rping's server does (IRD = ORD = 1). */
static int take_client(struct peer *p, bool with_recv)
{
	struct iw_conn_param cp = { .ird = 1, .ord = 1 };
	struct iw_cm_event *ev = next_event(p);
	int rc;

	if (!ev || ev->event != IW_CM_EVENT_CONNECT_REQUEST) {
		if (ev)
			iw_ack_cm_event(ev);
		return fail("no connection request in time", 0);
	}
	p->id = ev->id;
	iw_ack_cm_event(ev);
	if (with_recv && post_recv(p))
		return 1;
	rc = iw_accept(p->id, p->qp, &cp);
	if (rc)
		return fail("cannot accept", rc);
	ev = next_event(p);
	rc = ev && ev->event == IW_CM_EVENT_ESTABLISHED;
	if (ev)
		iw_ack_cm_event(ev);
	return rc ? 0 : fail("the connection was not established", 0);
}

/* rping's server loop; ping @bad goes back with octet @octet altered. */
static int serve_corrupt(struct peer *p, long bad, size_t octet)
{
	for (long ping = 0;; ping++) {
		uint64_t raddr;
		uint32_t rkey, len;
		int rc = wait_wc(p, WANT(IW_WC_RECV));

		if (rc)
			return rc == 2 && ping > bad ? 0 : 1;
		memcpy(&raddr, p->adv_in, 8);
		memcpy(&rkey, p->adv_in + 8, 4);
		memcpy(&len, p->adv_in + 12, 4);
		raddr = be64toh(raddr);
		rkey = be32toh(rkey);
		len = be32toh(len);
		if (len > sizeof(p->buf) || octet >= len)
			return fail("the client's buffer does not fit", 0);
		if (post_recv(p) ||
		    post(p, IW_WR_RDMA_READ, p->buf, len, p->buf_mr->lkey,
			 raddr, rkey) ||
		    wait_wc(p, WANT(IW_WC_RDMA_READ)) ||
		    post(p, IW_WR_SEND, p->adv_out, ADV_LEN, p->out_mr->lkey, 0,
			 0) ||
		    wait_wc(p, WANT(IW_WC_SEND) | WANT(IW_WC_RECV)))
			return 1;
		memcpy(&raddr, p->adv_in, 8);
		memcpy(&rkey, p->adv_in + 8, 4);
		raddr = be64toh(raddr);
		rkey = be32toh(rkey);
		len = (uint32_t)strnlen((char *)p->buf, len - 1) + 1;
		if (ping == bad)
			p->buf[octet] ^= 0x20;
		if (post_recv(p) ||
		    post(p, IW_WR_RDMA_WRITE, p->buf, len, p->buf_mr->lkey,
			 raddr, rkey) ||
		    post(p, IW_WR_SEND, p->adv_out, ADV_LEN, p->out_mr->lkey, 0,
			 0) ||
		    wait_wc(p, WANT(IW_WC_RDMA_WRITE) | WANT(IW_WC_SEND)))
			return 1;
	}
}

/* No receive posted: the stream ends with a Terminate we sent. */
static int serve_terminate(struct peer *p)
{
	struct iw_cm_event *ev = next_event(p);
	int rc;

	if (!ev)
		return fail("the connection did not end in time", 0);
	rc = ev->terminate.valid && !ev->terminate.received;
	if (!rc)
		fprintf(stderr, "%s: %s without a Terminate sent\n", prog,
			iw_cm_event_str(ev->event));
	iw_ack_cm_event(ev);
	return !rc;
}

int main(int argc, char **argv)
{
	static struct peer p;
	int rc;

	if (!(argc == 5 && !strcmp(argv[2], "corrupt")) &&
	    !(argc == 3 && !strcmp(argv[2], "terminate"))) {
		fprintf(stderr, "usage: %s PORT corrupt PING OCTET\n"
				"       %s PORT terminate\n",
			prog, prog);
		return 2;
	}
	rc = setup(&p, argv[1]);
	if (!rc)
		rc = take_client(&p, argc == 5);
	if (!rc)
		rc = argc == 5 ? serve_corrupt(&p, atol(argv[3]),
					       (size_t)atol(argv[4]))
			       : serve_terminate(&p);
	if (p.id) {
		iw_disconnect(p.id);
		iw_destroy_id(p.id);
	}
	if (p.listen)
		iw_destroy_id(p.listen);
	if (p.qp)
		iw_destroy_qp(p.qp);
	iw_dereg_mr(p.buf_mr);
	iw_dereg_mr(p.in_mr);
	iw_dereg_mr(p.out_mr);
	if (p.cq)
		iw_destroy_cq(p.cq);
	if (p.pd)
		iw_dealloc_pd(p.pd);
	if (p.ch)
		iw_destroy_cm_channel(p.ch);
	if (p.ctx)
		iw_close(p.ctx);
	return rc;
}
