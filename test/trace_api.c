// SPDX-License-Identifier: MIT
/*
 * The trace option of the API (iw_context_attr.trace_path), for
 * trace_api.sh: a client context opened with it connects over 127.0.0.1
 * to a server context opened without it, with CRC, and sends COUNT Sends
 * of SIZE octets; then both sides print the ports they see,
 *
 *   client LOCAL PEER
 *   server LOCAL PEER
 *
 * from iw_get_local_addr() and iw_get_peer_addr().  Only the client's
 * context traces, so the trace holds exactly that connection.  With
 * SERVER_TRACE the server's context is opened with that trace_path ("":
 * none, whatever IWARP_TRACE says); without it, with NULL (IWARP_TRACE).
 *
 *   trace_api PCAP COUNT SIZE [SERVER_TRACE]
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <iwarp/iwarp.h>

#define WAIT_MS 10000
#define MAX_COUNT 64

static const char *prog = "trace_api";

struct side {
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_qp *qp;
	struct iw_cm_id *id;
	uint8_t *buf;
	struct iw_mr *mr;
};

static int fail(const char *what, int rc)
{
	fprintf(stderr, "%s: %s%s%s\n", prog, what, rc ? ": " : "",
		rc ? iw_strerror(rc) : "");
	return 1;
}

static int open_side(struct side *s, const char *trace, size_t len)
{
	struct iw_context_attr attr = { .trace_path = trace };
	struct iw_qp_init_attr qa = {
		.cap = { .max_send_wr = MAX_COUNT, .max_recv_wr = MAX_COUNT,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	s->ctx = iw_open(&attr);
	if (!s->ctx)
		return fail(trace && *trace ? "cannot open a context that traces"
					    : "cannot open a context", 0);
	s->ch = iw_create_cm_channel(s->ctx);
	s->pd = iw_alloc_pd(s->ctx);
	s->cq = iw_create_cq(s->ctx, 2 * MAX_COUNT, NULL);
	s->buf = calloc(MAX_COUNT, len);
	if (!s->ch || !s->pd || !s->cq || !s->buf)
		return fail("out of resources", 0);
	s->mr = iw_reg_mr(s->pd, s->buf, MAX_COUNT * len,
			  IW_ACCESS_LOCAL_WRITE);
	qa.send_cq = qa.recv_cq = s->cq;
	s->qp = s->mr ? iw_create_qp(s->pd, &qa) : NULL;
	return s->qp ? 0 : fail("cannot create the QP", 0);
}

static void close_side(struct side *s)
{
	if (s->id)
		iw_destroy_id(s->id);
	if (s->qp)
		iw_destroy_qp(s->qp);
	iw_dereg_mr(s->mr);
	free(s->buf);
	if (s->cq)
		iw_destroy_cq(s->cq);
	if (s->pd)
		iw_dealloc_pd(s->pd);
	if (s->ch)
		iw_destroy_cm_channel(s->ch);
	if (s->ctx)
		iw_close(s->ctx); /* closes the trace file, complete */
}

/* The next event, of @type, within the wait; @out keeps it unacked. */
static int expect(struct side *s, enum iw_cm_event_type type,
		  struct iw_cm_event **out)
{
	struct pollfd f = { iw_cm_channel_fd(s->ch), POLLIN, 0 };
	struct iw_cm_event *ev;

	if (poll(&f, 1, WAIT_MS) <= 0 || iw_get_cm_event(s->ch, &ev)) {
		fprintf(stderr, "%s: no %s in time\n", prog,
			iw_cm_event_str(type));
		return 1;
	}
	if (ev->event != type) {
		fprintf(stderr, "%s: %s instead of %s\n", prog,
			iw_cm_event_str(ev->event), iw_cm_event_str(type));
		iw_ack_cm_event(ev);
		return 1;
	}
	if (out)
		*out = ev;
	else
		iw_ack_cm_event(ev);
	return 0;
}

/* @n successful completions within the wait. */
static int completions(struct side *s, int n)
{
	while (n > 0) {
		struct pollfd f = { iw_cq_fd(s->cq), POLLIN, 0 };
		struct iw_wc wc;
		int got = iw_poll_cq(s->cq, 1, &wc);

		if (got == 1) {
			if (wc.status != IW_WC_SUCCESS)
				return fail(iw_wc_status_str(wc.status), wc.err);
			n--;
			continue;
		}
		iw_req_notify_cq(s->cq, 0);
		if (iw_poll_cq(s->cq, 1, &wc) == 1) {
			if (wc.status != IW_WC_SUCCESS)
				return fail(iw_wc_status_str(wc.status), wc.err);
			n--;
			continue;
		}
		if (poll(&f, 1, WAIT_MS) <= 0)
			return fail("a completion did not come in time", 0);
		iw_get_cq_event(s->cq, NULL);
	}
	return 0;
}

static unsigned int port_of(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET6
			     ? ((const struct sockaddr_in6 *)ss)->sin6_port
			     : ((const struct sockaddr_in *)ss)->sin_port);
}

static int print_ports(const char *who, struct iw_cm_id *id)
{
	struct sockaddr_storage local, peer;

	if (iw_get_local_addr(id, &local) || iw_get_peer_addr(id, &peer))
		return fail("no address for the connection", 0);
	printf("%s %u %u\n", who, port_of(&local), port_of(&peer));
	return 0;
}

static int run(struct side *c, struct side *s, struct iw_cm_id **listen,
	       int count, size_t len)
{
	struct iw_mpa_opts o;
	struct sockaddr_storage ss;
	struct iw_cm_event *ev;
	char port[16];
	int rc;

	iw_mpa_opts_default(&o);
	o.crc = IW_MPA_ON;
	*listen = iw_create_id(s->ch, NULL);
	if (!*listen || iw_set_mpa_opts(*listen, &o))
		return fail("cannot create the listener", 0);
	rc = iw_listen(*listen, "127.0.0.1", "0", 4);
	if (rc || iw_get_local_addr(*listen, &ss))
		return fail("cannot listen", rc);
	snprintf(port, sizeof(port), "%u", port_of(&ss));
	c->id = iw_create_id(c->ch, NULL);
	if (!c->id || iw_set_mpa_opts(c->id, &o))
		return fail("cannot create the client's identifier", 0);
	rc = iw_connect(c->id, "127.0.0.1", port, c->qp, NULL);
	if (rc)
		return fail("cannot connect", rc);
	if (expect(s, IW_CM_EVENT_CONNECT_REQUEST, &ev))
		return 1;
	s->id = ev->id;
	iw_ack_cm_event(ev);
	for (int i = 0; i < count; i++) {
		struct iw_sge sg = { (uintptr_t)(s->buf + i * len),
				     (uint32_t)len, s->mr->lkey };
		struct iw_recv_wr r = { .wr_id = (uint64_t)i, .sg_list = &sg,
					.num_sge = 1 };

		rc = iw_post_recv(s->qp, &r, NULL);
		if (rc)
			return fail("post a receive", rc);
	}
	rc = iw_accept(s->id, s->qp, NULL);
	if (rc)
		return fail("cannot accept", rc);
	if (expect(s, IW_CM_EVENT_ESTABLISHED, NULL) ||
	    expect(c, IW_CM_EVENT_ESTABLISHED, NULL))
		return 1;
	for (int i = 0; i < count; i++) {
		struct iw_sge sg = { (uintptr_t)(c->buf + i * len),
				     (uint32_t)len, c->mr->lkey };
		struct iw_send_wr w = { .wr_id = (uint64_t)i, .sg_list = &sg,
					.num_sge = 1, .opcode = IW_WR_SEND,
					.send_flags = IW_SEND_SIGNALED };

		memset(c->buf + i * len, 'a' + i % 26, len);
		rc = iw_post_send(c->qp, &w, NULL);
		if (rc)
			return fail("post a Send", rc);
	}
	if (completions(c, count) || completions(s, count))
		return 1;
	if (print_ports("client", c->id) || print_ports("server", s->id))
		return 1;
	fflush(stdout);
	rc = iw_disconnect(c->id);
	if (rc)
		return fail("cannot disconnect", rc);
	return expect(c, IW_CM_EVENT_DISCONNECTED, NULL) ||
	       expect(s, IW_CM_EVENT_DISCONNECTED, NULL);
}

int main(int argc, char **argv)
{
	struct side c = { 0 }, s = { 0 };
	struct iw_cm_id *listen = NULL;
	bool args = argc == 4 || argc == 5;
	int count = args ? atoi(argv[2]) : 0;
	long size = args ? atol(argv[3]) : 0;
	int rc;

	if (count < 1 || count > MAX_COUNT || size < 1 || size > (1 << 20)) {
		fprintf(stderr, "usage: %s PCAP COUNT SIZE [SERVER_TRACE] "
				"(COUNT 1 to %d, SIZE up to 1 MiB)\n",
			prog, MAX_COUNT);
		return 2;
	}
	rc = open_side(&c, argv[1], (size_t)size) ||
	     open_side(&s, argc == 5 ? argv[4] : NULL, (size_t)size) ||
	     run(&c, &s, &listen, count, (size_t)size);
	if (listen)
		iw_destroy_id(listen);
	close_side(&c);
	close_side(&s);
	return rc;
}
