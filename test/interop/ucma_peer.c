// SPDX-License-Identifier: MIT
/*
 * The other end of librdmacm's examples on a siw host: ucmatose, and
 * rdma_server / rdma_client.  Once connected, each side of them posts
 * COUNT receives and COUNT Sends of SIZE octets and waits for all of them
 * (rdma_client sends first and rdma_server answers; ucmatose's server
 * sends first and its client answers).  This does the same, checks every
 * completion's status and length, and exits 0 only when COUNT of each
 * came.  They send buffers they never fill, so only lengths are checked.
 *
 *   ucma_peer -s PORT SIZE COUNT           listen on 127.0.0.1:PORT, serve one
 *   ucma_peer -c HOST PORT SIZE COUNT      connect
 */
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <iwarp/iwarp.h>

#define WAIT_MS 30000

static const char *prog = "ucma_peer";

static int fail(const char *what, int rc)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what,
		rc ? iw_strerror(rc) : "failed");
	return 1;
}

struct peer {
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_qp *qp;
	struct iw_cm_id *id, *listen;
	uint8_t *buf;
	struct iw_mr *mr;
	uint32_t size, count;
};

/* The next CM event within the wait, or NULL. */
static struct iw_cm_event *next_event(struct peer *p)
{
	struct pollfd f = { iw_cm_channel_fd(p->ch), POLLIN, 0 };
	struct iw_cm_event *ev;

	if (poll(&f, 1, WAIT_MS) <= 0 || iw_get_cm_event(p->ch, &ev))
		return NULL;
	return ev;
}

/* Waits for @type; any other event is the reason to stop. */
static int expect(struct peer *p, enum iw_cm_event_type type,
		  struct iw_cm_event **out)
{
	struct iw_cm_event *ev = next_event(p);
	int rc;

	if (!ev) {
		fprintf(stderr, "%s: no %s within %d s\n", prog,
			iw_cm_event_str(type), WAIT_MS / 1000);
		return 1;
	}
	if (ev->event == type) {
		if (out)
			*out = ev;
		else
			iw_ack_cm_event(ev);
		return 0;
	}
	rc = ev->status;
	fprintf(stderr, "%s: %s instead of %s%s%s\n", prog,
		iw_cm_event_str(ev->event), iw_cm_event_str(type), rc ? ": " : "",
		rc ? iw_strerror(rc) : "");
	iw_ack_cm_event(ev);
	return 1;
}

static int setup(struct peer *p)
{
	struct iw_qp_init_attr qa = {
		.cap = { .max_send_wr = p->count, .max_recv_wr = p->count,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	size_t len = (size_t)p->size * p->count;

	p->ctx = iw_open(NULL);
	p->ch = p->ctx ? iw_create_cm_channel(p->ctx) : NULL;
	p->pd = p->ctx ? iw_alloc_pd(p->ctx) : NULL;
	p->cq = p->ctx ? iw_create_cq(p->ctx, 2 * p->count, NULL) : NULL;
	p->buf = calloc(2, len);
	if (!p->ch || !p->pd || !p->cq || !p->buf)
		return fail("out of resources", 0);
	p->mr = iw_reg_mr(p->pd, p->buf, 2 * len,
			  IW_ACCESS_LOCAL_WRITE);
	qa.send_cq = qa.recv_cq = p->cq;
	p->qp = p->mr ? iw_create_qp(p->pd, &qa) : NULL;
	return p->qp ? 0 : fail("cannot create the QP", 0);
}

/* Receives into the second half of the buffer, one slot each. */
static int post_recvs(struct peer *p)
{
	uint8_t *base = p->buf + (size_t)p->size * p->count;

	for (uint32_t i = 0; i < p->count; i++) {
		struct iw_sge s = { (uintptr_t)(base + (size_t)i * p->size),
				    p->size, p->mr->lkey };
		struct iw_recv_wr r = { .wr_id = i, .sg_list = &s,
					.num_sge = 1 };
		int rc = iw_post_recv(p->qp, &r, NULL);

		if (rc)
			return fail("post a receive", rc);
	}
	return 0;
}

static int post_sends(struct peer *p)
{
	for (uint32_t i = 0; i < p->count; i++) {
		struct iw_sge s = { (uintptr_t)(p->buf + (size_t)i * p->size),
				    p->size, p->mr->lkey };
		struct iw_send_wr w = { .wr_id = i, .sg_list = &s,
					.num_sge = 1, .opcode = IW_WR_SEND,
					.send_flags = IW_SEND_SIGNALED };
		int rc = iw_post_send(p->qp, &w, NULL);

		if (rc)
			return fail("post a Send", rc);
	}
	return 0;
}

/*
 * COUNT Send and COUNT receive completions, each whole and successful;
 * the wait is for progress, so a slow but steady peer is no failure.
 */
static int complete(struct peer *p)
{
	uint32_t sends = 0, recvs = 0;
	int idle = 0;

	while (sends < p->count || recvs < p->count) {
		struct pollfd f = { iw_cq_fd(p->cq), POLLIN, 0 };
		struct iw_wc wc;
		int n = iw_poll_cq(p->cq, 1, &wc);

		if (n < 0)
			return fail("poll", n);
		if (n == 0 && idle >= WAIT_MS) {
			fprintf(stderr, "%s: %u of %u Sends and %u of %u "
				"receives completed; nothing for %d s\n",
				prog, sends, p->count, recvs, p->count,
				WAIT_MS / 1000);
			return 1;
		}
		if (n == 0) {
			/* a completion between the look and the arming
			 * waits for the next look, 100 ms on */
			iw_req_notify_cq(p->cq, 0);
			if (poll(&f, 1, 100) > 0) {
				iw_get_cq_event(p->cq, NULL);
				iw_ack_cq_events(p->cq, 1);
			} else {
				idle += 100;
			}
			continue;
		}
		idle = 0;
		if (wc.status != IW_WC_SUCCESS) {
			fprintf(stderr, "%s: work request %llu: %s\n", prog,
				(unsigned long long)wc.wr_id,
				iw_wc_status_str(wc.status));
			return 1;
		}
		if (wc.opcode == IW_WC_RECV && wc.byte_len != p->size) {
			fprintf(stderr, "%s: a Send of %u octets, not %u\n",
				prog, wc.byte_len, p->size);
			return 1;
		}
		if (wc.opcode == IW_WC_RECV)
			recvs++;
		else
			sends++;
	}
	printf("%s: %u Sends and %u receives of %u octets\n", prog, sends,
	       recvs, p->size);
	return 0;
}

static int serve(struct peer *p, const char *port)
{
	struct iw_conn_param cp = { .ird = 1, .ord = 1 };
	struct iw_mpa_opts m;
	struct iw_cm_event *ev;
	int rc;

	iw_mpa_opts_default(&m);
	m.responder_first = 1; /* ucmatose's server sends first */
	p->listen = iw_create_id(p->ch, NULL);
	if (!p->listen || iw_set_mpa_opts(p->listen, &m))
		return fail("cannot create an identifier", 0);
	rc = iw_listen(p->listen, "127.0.0.1", port, 4);
	if (rc)
		return fail("cannot listen", rc);
	printf("%s: listening on %s\n", prog, port);
	fflush(stdout);
	if (expect(p, IW_CM_EVENT_CONNECT_REQUEST, &ev))
		return 1;
	p->id = ev->id;
	iw_ack_cm_event(ev);
	if (post_recvs(p))
		return 1;
	rc = iw_accept(p->id, p->qp, &cp);
	if (rc)
		return fail("cannot accept", rc);
	/* libiwarp holds the first Send a moment after the Reply, for siw */
	return expect(p, IW_CM_EVENT_ESTABLISHED, NULL);
}

static int connect_to(struct peer *p, const char *host, const char *port)
{
	struct iw_conn_param cp = { .ird = 1, .ord = 1 };
	int rc;

	p->id = iw_create_id(p->ch, NULL);
	if (!p->id)
		return fail("cannot create an identifier", 0);
	if (post_recvs(p))
		return 1;
	rc = iw_connect(p->id, host, port, p->qp, &cp);
	if (rc)
		return fail("cannot connect", rc);
	return expect(p, IW_CM_EVENT_ESTABLISHED, NULL);
}

int main(int argc, char **argv)
{
	struct peer p = { 0 };
	bool server = argc == 5 && !strcmp(argv[1], "-s");
	bool client = argc == 6 && !strcmp(argv[1], "-c");
	char **a = argv + (server ? 3 : 4);
	int rc;

	if (!server && !client) {
		fprintf(stderr, "usage: %s -s PORT SIZE COUNT | -c HOST PORT "
			"SIZE COUNT\n", prog);
		return 2;
	}
	p.size = (uint32_t)strtoul(a[0], NULL, 0);
	p.count = (uint32_t)strtoul(a[1], NULL, 0);
	if (!p.size || !p.count || p.count > 1024)
		return fail("SIZE from 1, COUNT 1 to 1024", 0);
	rc = setup(&p);
	if (!rc)
		rc = server ? serve(&p, argv[2]) : connect_to(&p, argv[2],
							      argv[3]);
	rc = rc || post_sends(&p) || complete(&p);
	if (p.id)
		iw_disconnect(p.id);
	return rc;
}
