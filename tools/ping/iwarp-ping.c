// SPDX-License-Identifier: MIT
/*
 * iwarp-ping: an rping that runs over libiwarp and speaks rping's
 * application protocol, so it works against rping on a Linux siw host in
 * both roles.  Per ping: the client advertises its start buffer (address,
 * rkey, size as big-endian 64/32/32) in a Send; the server RDMA-Reads it
 * and answers with a Send; the client advertises its sink; the server
 * RDMA-Writes the data back (strlen + 1 octets) and answers again; the
 * client compares.  See iwarp-ping(1).
 */
#include <errno.h>
#include <arpa/inet.h>
#include <getopt.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/byteorder.h"
#include "tool.h"

#define PROG "iwarp-ping"
#define WAIT_MS 10000
#define MIN_SIZE 23 /* the least rping takes */
#define ADV_LEN 16  /* buf be64, rkey be32, size be32 */

struct ping {
	/* options */
	bool server, client, loopback, verbose, validate, debug, persistent;
	bool wrong_rkey; /* server: Write back with a key the client never gave */
	const char *addr, *port;
	size_t size;
	long count;
	uint16_t pd_len; /* private data octets in our MPA frame */
	uint8_t private_data[512];
	struct iw_mpa_opts mpa;
	int ready_fd; /* loopback: the server reports its port here */
	/* resources */
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_qp *qp;
	uint8_t *start_buf, *rdma_buf;
	struct iw_mr *start_mr, *rdma_mr;
	uint8_t send_buf[ADV_LEN], recv_buf[ADV_LEN];
	struct iw_mr *send_mr, *recv_mr;
	char where[96];
	struct tool_stats rtt;
};

/* SIGINT or SIGTERM: the client stops and disconnects at once. */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* A failure in one line, exit status 1. */
#define fail(...) tool_fail(PROG, 1, __VA_ARGS__)
/* A bad option value: said in one line, exit status 2 as for usage. */
#define bad_usage(...) tool_fail(PROG, 2, __VA_ARGS__)

static int open_device(struct ping *p)
{
	p->ctx = iw_open(NULL);
	if (!p->ctx)
		return fail("cannot open the device: %s", strerror(errno));
	if (p->debug)
		iw_set_debug(p->ctx, 1);
	p->ch = iw_create_cm_channel(p->ctx);
	p->pd = iw_alloc_pd(p->ctx);
	p->cq = iw_create_cq(p->ctx, 32, NULL);
	p->start_buf = calloc(1, p->size);
	p->rdma_buf = calloc(1, p->size);
	if (!p->ch || !p->pd || !p->cq || !p->start_buf || !p->rdma_buf)
		return fail("out of resources");
	p->start_mr = iw_reg_mr(p->pd, p->start_buf, p->size,
				IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_READ);
	p->rdma_mr = iw_reg_mr(p->pd, p->rdma_buf, p->size,
			       IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE);
	p->send_mr = iw_reg_mr(p->pd, p->send_buf, ADV_LEN, 0);
	p->recv_mr = iw_reg_mr(p->pd, p->recv_buf, ADV_LEN,
			       IW_ACCESS_LOCAL_WRITE);
	if (!p->start_mr || !p->rdma_mr || !p->send_mr || !p->recv_mr)
		return fail("cannot register memory: %s", strerror(errno));
	return 0;
}

static void close_device(struct ping *p)
{
	if (p->qp)
		iw_destroy_qp(p->qp);
	iw_dereg_mr(p->start_mr);
	iw_dereg_mr(p->rdma_mr);
	iw_dereg_mr(p->send_mr);
	iw_dereg_mr(p->recv_mr);
	free(p->start_buf);
	free(p->rdma_buf);
	iw_destroy_cq(p->cq);
	iw_dealloc_pd(p->pd);
	iw_destroy_cm_channel(p->ch);
	iw_close(p->ctx);
	tool_stats_free(&p->rtt);
}

/* A QP serves one connection: each connection gets a fresh one. */
static int new_qp(struct ping *p)
{
	struct iw_qp_init_attr qa = {
		.send_cq = p->cq, .recv_cq = p->cq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct iw_wc wc[8];

	if (p->qp)
		iw_destroy_qp(p->qp);
	while (iw_poll_cq(p->cq, 8, wc) > 0)
		;
	p->qp = iw_create_qp(p->pd, &qa);
	return p->qp ? 0 : fail("cannot create a QP: %s", strerror(errno));
}

static int post_recv(struct ping *p)
{
	struct iw_sge s = { (uintptr_t)p->recv_buf, ADV_LEN, p->recv_mr->lkey };
	struct iw_recv_wr r = { .wr_id = 1, .sg_list = &s, .num_sge = 1 };
	int rc = iw_post_recv(p->qp, &r, NULL);

	return rc ? fail("post receive: %s", iw_strerror(rc)) : 0;
}

static int post(struct ping *p, uint64_t id, enum iw_wr_opcode op,
		uint8_t *buf, uint32_t len, uint32_t lkey, uint64_t raddr,
		uint32_t rkey)
{
	struct iw_sge s = { (uintptr_t)buf, len, lkey };
	struct iw_send_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1,
				.opcode = op, .send_flags = IW_SEND_SIGNALED,
				.rdma = { raddr, rkey } };
	int rc = iw_post_send(p->qp, &w, NULL);

	return rc ? fail("post: %s", iw_strerror(rc)) : 0;
}

/* Sends an rping advertisement of @buf. */
static int advertise(struct ping *p, const uint8_t *buf, uint32_t len,
		     uint32_t rkey)
{
	put_be64(p->send_buf, (uintptr_t)buf);
	put_be32(p->send_buf + 8, rkey);
	put_be32(p->send_buf + 12, len);
	return post(p, 2, IW_WR_SEND, p->send_buf, ADV_LEN, p->send_mr->lkey,
		    0, 0);
}

#define PING_INTERRUPTED 3

/* One client at a time: another one is told so, in the Reply. */
static void refuse_busy(struct iw_cm_event *ev)
{
	static const char busy[] = "iwarp-ping: busy with another client";
	struct iw_cm_id *id = ev->id;

	iw_ack_cm_event(ev);
	iw_reject(id, busy, sizeof(busy) - 1);
	iw_destroy_id(id);
}

/*
 * Waits until the completions in @want have all come (each opcode once).
 * A receive is replaced at once, as rping does.  Returns 0, 1 on failure,
 * 2 when the connection ended cleanly (the server's way out),
 * PING_INTERRUPTED after a signal.
 */
static int wait_for(struct ping *p, unsigned int want)
{
	while (want) {
		struct iw_cm_event *ev = NULL;
		struct iw_wc wc;
		int rc = tool_wait_wc(p->cq, p->ch, WAIT_MS, &wc, &ev);

		if (interrupted)
			return PING_INTERRUPTED;
		if (rc == 0)
			return fail("no completion from %s within %d s", p->where,
				    WAIT_MS / 1000);
		if (rc < 0 && ev->event == IW_CM_EVENT_CONNECT_REQUEST) {
			refuse_busy(ev);
			continue;
		}
		if (rc < 0) {
			bool clean = ev->event == IW_CM_EVENT_DISCONNECTED;

			if (!clean || !p->server)
				tool_explain(PROG, p->where, ev, NULL);
			iw_ack_cm_event(ev);
			return clean && p->server ? 2 : 1;
		}
		if (wc.status == IW_WC_WR_FLUSH_ERR) {
			/* the connection's end: its event says why */
			if (p->server)
				continue;
			ev = tool_event(p->ch, WAIT_MS);
			if (!ev) {
				tool_explain_wc(PROG, &wc);
				return 1;
			}
			tool_explain(PROG, p->where, ev, NULL);
			iw_ack_cm_event(ev);
			return 1;
		}
		if (wc.status != IW_WC_SUCCESS) {
			tool_explain_wc(PROG, &wc);
			return 1;
		}
		want &= ~(1u << wc.opcode);
		if (wc.opcode == IW_WC_RECV && post_recv(p))
			return 1;
	}
	return 0;
}

#define WANT(op) (1u << (op))

/* rping's pattern: the ping number, then letters from 'A' on. */
static void fill_ping(struct ping *p, long ping, int *start)
{
	int cc = snprintf((char *)p->start_buf, p->size, "rdma-ping-%ld: ",
			  ping);
	int c = *start;

	for (size_t i = (size_t)cc; i < p->size; i++) {
		p->start_buf[i] = (uint8_t)c;
		if (++c > 122)
			c = 65;
	}
	if (++*start > 122)
		*start = 65;
	p->start_buf[p->size - 1] = 0;
}

/* -V found the sink unlike the start buffer: the first octet that differs. */
static int mismatch(struct ping *p, long ping)
{
	size_t i = 0;

	while (i < p->size - 1 && p->start_buf[i] == p->rdma_buf[i])
		i++;
	return fail("data mismatch in ping %ld from %s: octet %zu of %zu came "
		    "back 0x%02x, sent 0x%02x",
		    ping, p->where, i, p->size, p->rdma_buf[i], p->start_buf[i]);
}

static int client_pings(struct ping *p)
{
	int start = 65, rc;

	for (long ping = 0; !p->count || ping < p->count; ping++) {
		double t0;

		if (interrupted)
			return PING_INTERRUPTED;
		fill_ping(p, ping, &start);
		memset(p->rdma_buf, 0, p->size);
		t0 = tool_now_us();
		rc = advertise(p, p->start_buf, (uint32_t)p->size,
			       p->start_mr->rkey);
		if (!rc)
			rc = wait_for(p, WANT(IW_WC_SEND) | WANT(IW_WC_RECV));
		if (!rc)
			rc = advertise(p, p->rdma_buf, (uint32_t)p->size,
				       p->rdma_mr->rkey);
		if (!rc)
			rc = wait_for(p, WANT(IW_WC_SEND) | WANT(IW_WC_RECV));
		if (rc)
			return rc;
		tool_stats_add(&p->rtt, tool_now_us() - t0);
		if (p->validate && memcmp(p->start_buf, p->rdma_buf, p->size))
			return mismatch(p, ping);
		if (p->verbose)
			printf("ping data: %s\n", (char *)p->rdma_buf);
	}
	return 0;
}

static void describe_qp(struct ping *p)
{
	struct iw_qp_attr a;

	if (iw_query_qp(p->qp, &a) == 0 && p->debug)
		fprintf(stderr,
			PROG ": connected to %s: MPA rev %u, CRC %s, markers "
			     "%s/%s, IRD %u ORD %u, RTR %s, MULPDU %u\n",
			p->where, a.mpa_revision, a.crc ? "on" : "off",
			a.markers_tx ? "tx" : "-", a.markers_rx ? "rx" : "-",
			a.ird, a.ord, tool_rtr_name(a.rtr), a.mulpdu);
}

static int run_client(struct ping *p)
{
	struct iw_conn_param cp = { .ird = 1, .ord = 1, /* as rping */
				    .private_data = p->private_data,
				    .private_data_len = p->pd_len };
	struct iw_cm_event *ev;
	struct iw_cm_id *id;
	int rc;

	snprintf(p->where, sizeof(p->where), "%s:%s", p->addr, p->port);
	if (new_qp(p) || post_recv(p))
		return 1;
	id = iw_create_id(p->ch, NULL);
	if (!id || iw_set_mpa_opts(id, &p->mpa))
		return fail("bad MPA options");
	rc = iw_connect(id, p->addr, p->port, p->qp, &cp);
	if (rc) {
		iw_destroy_id(id);
		return fail("cannot connect to %s: %s", p->where, iw_strerror(rc));
	}
	ev = tool_event(p->ch, 3 * WAIT_MS);
	if (!ev) {
		iw_destroy_id(id);
		return fail("no answer from %s", p->where);
	}
	if (ev->event != IW_CM_EVENT_ESTABLISHED) {
		tool_explain(PROG, p->where, ev, &p->mpa);
		iw_ack_cm_event(ev);
		iw_destroy_id(id);
		return 1;
	}
	iw_ack_cm_event(ev);
	describe_qp(p);
	rc = client_pings(p);
	if (rc == PING_INTERRUPTED)
		fprintf(stderr, PROG ": interrupted after %zu pings; "
				     "disconnecting from %s\n",
			p->rtt.n, p->where);
	iw_disconnect(id);
	ev = tool_event(p->ch, WAIT_MS);
	if (ev) {
		if (rc == PING_INTERRUPTED)
			tool_explain(PROG, p->where, ev, NULL);
		iw_ack_cm_event(ev);
	} else if (rc == PING_INTERRUPTED) {
		fail("no disconnect event within %d s", WAIT_MS / 1000);
	}
	iw_destroy_id(id);
	if ((!rc || rc == PING_INTERRUPTED) && p->rtt.n) {
		size_t n = p->rtt.n;
		double avg = tool_stats_avg(&p->rtt);

		printf(PROG ": %zu pings of %zu octets with %s%s\n", n, p->size,
		       p->where, p->validate ? ", all verified" : "");
		printf("rtt min/avg/max = %.1f/%.1f/%.1f us, p50 %.1f p90 %.1f "
		       "p99 %.1f us\n",
		       tool_stats_pct(&p->rtt, 0), avg,
		       tool_stats_pct(&p->rtt, 100), tool_stats_pct(&p->rtt, 50),
		       tool_stats_pct(&p->rtt, 90), tool_stats_pct(&p->rtt, 99));
	}
	return rc;
}

/* One client, served the rping way until it disconnects. */
static int serve(struct ping *p)
{
	int rc;

	for (;;) {
		uint64_t raddr;
		uint32_t rkey, rlen;

		/* its start buffer: Read it */
		rc = wait_for(p, WANT(IW_WC_RECV));
		if (rc)
			return rc == 2 ? 0 : rc;
		raddr = get_be64(p->recv_buf);
		rkey = get_be32(p->recv_buf + 8);
		rlen = get_be32(p->recv_buf + 12);
		if (rlen > p->size)
			return fail("%s advertises %u octets, more than -S %zu",
				    p->where, rlen, p->size);
		rc = post(p, 3, IW_WR_RDMA_READ, p->rdma_buf, rlen,
			  p->rdma_mr->lkey, raddr, rkey);
		if (!rc)
			rc = wait_for(p, WANT(IW_WC_RDMA_READ));
		if (rc)
			return rc == 2 ? 0 : rc;
		if (p->verbose)
			printf("server ping data: %s\n", (char *)p->rdma_buf);
		/* go ahead; then its sink: Write the data back, go ahead */
		rc = post(p, 2, IW_WR_SEND, p->send_buf, ADV_LEN,
			  p->send_mr->lkey, 0, 0);
		if (!rc)
			rc = wait_for(p, WANT(IW_WC_SEND) | WANT(IW_WC_RECV));
		if (rc)
			return rc == 2 ? 0 : rc;
		raddr = get_be64(p->recv_buf);
		rkey = get_be32(p->recv_buf + 8);
		rlen = (uint32_t)strnlen((char *)p->rdma_buf, p->size - 1) + 1;
		if (p->wrong_rkey)
			rkey ^= 0x80; /* the key octet: an STag not granted */
		rc = post(p, 4, IW_WR_RDMA_WRITE, p->rdma_buf, rlen,
			  p->rdma_mr->lkey, raddr, rkey);
		if (!rc)
			rc = post(p, 2, IW_WR_SEND, p->send_buf, ADV_LEN,
				  p->send_mr->lkey, 0, 0);
		if (!rc)
			rc = wait_for(p, WANT(IW_WC_RDMA_WRITE) |
						 WANT(IW_WC_SEND));
		if (rc)
			return rc == 2 ? 0 : rc;
	}
}

static int run_server(struct ping *p)
{
	struct iw_cm_id *l = iw_create_id(p->ch, NULL);
	struct sockaddr_storage ss;
	int rc;

	if (!l || iw_set_mpa_opts(l, &p->mpa))
		return fail("bad MPA options");
	rc = iw_listen(l, p->addr, p->port, 8);
	if (rc)
		return fail("cannot listen on %s:%s: %s", p->addr ? p->addr : "*",
			    p->port, iw_strerror(rc));
	if (p->ready_fd >= 0) {
		char port[16] = "";

		iw_get_local_addr(l, &ss);
		snprintf(port, sizeof(port), "%u",
			 ntohs(ss.ss_family == AF_INET6
				       ? ((struct sockaddr_in6 *)&ss)->sin6_port
				       : ((struct sockaddr_in *)&ss)->sin_port));
		if (write(p->ready_fd, port, sizeof(port)) != sizeof(port))
			return fail("cannot report the port");
	}
	do {
		struct iw_conn_param cp = { .ird = 1, .ord = 1,
					    .private_data = p->private_data,
					    .private_data_len = p->pd_len };
		struct iw_cm_event *ev = NULL;
		struct iw_mpa_info request;
		struct iw_cm_id *id;

		while (!ev && !interrupted)
			ev = tool_event(p->ch, 60000);
		if (!ev) {
			rc = PING_INTERRUPTED;
			break;
		}
		if (ev->event != IW_CM_EVENT_CONNECT_REQUEST) {
			iw_ack_cm_event(ev);
			continue;
		}
		id = ev->id;
		request = ev->peer;
		iw_ack_cm_event(ev);
		{
			struct sockaddr_storage peer;
			char host[64] = "?";

			if (iw_get_peer_addr(id, &peer) == 0)
				getnameinfo((struct sockaddr *)&peer, sizeof(peer),
					    host, sizeof(host), NULL, 0,
					    NI_NUMERICHOST);
			snprintf(p->where, sizeof(p->where), "client %s", host);
		}
		rc = new_qp(p);
		if (!rc)
			rc = post_recv(p);
		if (!rc) {
			rc = iw_accept(id, p->qp, &cp);
			if (rc == -ENOTCONN) {
				fail("%s left after sending its MPA Request, "
				     "before our answer", p->where);
			} else if (rc) {
				char line[512];

				tool_refusal(p->where, &request, &p->mpa, rc,
					     line, sizeof(line));
				fail("%s", line);
			}
		}
		if (!rc) {
			ev = tool_event(p->ch, WAIT_MS);
			if (!ev || ev->event != IW_CM_EVENT_ESTABLISHED) {
				if (ev)
					tool_explain(PROG, p->where, ev, NULL);
				rc = 1;
			}
			if (ev)
				iw_ack_cm_event(ev);
		}
		if (!rc) {
			describe_qp(p);
			rc = serve(p);
		}
		iw_disconnect(id);
		iw_destroy_id(id);
	} while (p->persistent);
	iw_destroy_id(l);
	return rc;
}

static void *loopback_server(void *arg)
{
	struct ping *s = arg;

	return (void *)(intptr_t)(open_device(s) || run_server(s));
}

/* Server and client in one process: the README's first command. */
static int run_loopback(struct ping *p)
{
	struct ping s = *p;
	pthread_t t;
	char port[16];
	int fds[2], rc;
	void *src;

	if (pipe(fds))
		return fail("pipe: %s", strerror(errno));
	s.server = true;
	s.client = false;
	s.persistent = false;
	s.addr = "127.0.0.1";
	s.port = "0";
	s.verbose = false;
	s.ready_fd = fds[1];
	memset(&s.rtt, 0, sizeof(s.rtt));
	if (pthread_create(&t, NULL, loopback_server, &s))
		return fail("cannot start the server thread");
	if (read(fds[0], port, sizeof(port)) != sizeof(port)) {
		pthread_join(t, &src);
		return fail("the server did not start");
	}
	p->addr = "127.0.0.1";
	p->port = port;
	rc = open_device(p);
	if (!rc)
		rc = run_client(p);
	pthread_join(t, &src);
	close(fds[0]);
	close(fds[1]);
	if (s.ctx)
		close_device(&s);
	return rc ? rc : src != NULL;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " -s [-a addr] [-p port] [-S size] [-P] [-v]\n"
		"       " PROG " -c -a addr [-p port] [-S size] [-C count] [-v] [-V]\n"
		"       " PROG " --loopback [-S size] [-C count] [-v] [-V]\n"
		"       " PROG " -h|--help\n"
		"options: -d (debug), --crc on|off|follow, --markers on|off|follow,\n"
		"         --mpa-rev 1|2, --rtr none|send|write|read[,...],\n"
		"         --private-data N (octets in our MPA frame),\n"
		"         --first-fpdu-delay USEC (client: hold the first FPDU),\n"
		"         --wrong-rkey (server: Write back with a key never granted)\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "crc", required_argument, NULL, 'R' },
		{ "markers", required_argument, NULL, 'M' },
		{ "mpa-rev", required_argument, NULL, 'E' },
		{ "rtr", required_argument, NULL, 'T' },
		{ "loopback", no_argument, NULL, 'L' },
		{ "private-data", required_argument, NULL, 'D' },
		{ "wrong-rkey", no_argument, NULL, 'K' },
		{ "first-fpdu-delay", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct ping p = { .port = "7174", .size = 64, .ready_fd = -1 };
	bool count_set = false;
	int opt, rc;

	iw_mpa_opts_default(&p.mpa);
	while ((opt = getopt_long(argc, argv, "sca:p:S:C:vVdPh", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 's':
			p.server = true;
			break;
		case 'c':
			p.client = true;
			break;
		case 'a':
			p.addr = optarg;
			break;
		case 'p':
			p.port = optarg;
			break;
		case 'S':
			if (!tool_parse_size(optarg, &p.size))
				return bad_usage("bad size: %s", optarg);
			break;
		case 'C': {
			char *end;

			p.count = strtol(optarg, &end, 0);
			if (*optarg == '\0' || *end || p.count < 0)
				return bad_usage("-C takes a count, 0 for no end");
			count_set = true;
			break;
		}
		case 'v':
			p.verbose = true;
			break;
		case 'V':
			p.validate = true;
			break;
		case 'd':
			p.debug = true;
			break;
		case 'P':
			p.persistent = true;
			break;
		case 'R':
			if (!tool_parse_pref(optarg, &p.mpa.crc))
				return bad_usage("--crc takes on, off or follow");
			break;
		case 'M':
			if (!tool_parse_pref(optarg, &p.mpa.markers))
				return bad_usage("--markers takes on, off or follow");
			break;
		case 'E':
			p.mpa.revision = (uint8_t)atoi(optarg);
			if (p.mpa.revision != 1 && p.mpa.revision != 2)
				return bad_usage("--mpa-rev takes 1 or 2");
			break;
		case 'T':
			if (!tool_parse_rtr(optarg, &p.mpa.rtr))
				return bad_usage("--rtr takes none, or send, write, "
					    "read separated by commas");
			break;
		case 'D': {
			char *end;
			long n = strtol(optarg, &end, 0);

			if (*optarg == '\0' || *end || n < 0 ||
			    n > (long)sizeof(p.private_data))
				return bad_usage("--private-data takes 0 to %zu octets",
					    sizeof(p.private_data));
			p.pd_len = (uint16_t)n;
			break;
		}
		case 'K':
			p.wrong_rkey = true;
			break;
		case 'F': {
			char *end;
			unsigned long us = strtoul(optarg, &end, 0);

			if (*optarg == '\0' || *end || us >= UINT32_MAX)
				return bad_usage("--first-fpdu-delay takes "
						 "microseconds");
			p.mpa.first_fpdu_delay_us = (uint32_t)us;
			break;
		}
		case 'L':
			p.loopback = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (p.server + p.client + p.loopback != 1 || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (p.size < MIN_SIZE)
		return bad_usage("-S must be at least %d octets", MIN_SIZE);
	if (p.client && !p.addr)
		return bad_usage("-c needs the server's address (-a)");
	/* private data: a pattern, as many octets as asked, all ours */
	for (size_t i = 0; i < p.pd_len; i++)
		p.private_data[i] = (uint8_t)('a' + i % 26);
	if (p.pd_len > p.mpa.max_private_data)
		p.mpa.max_private_data = p.pd_len;
	{
		struct sigaction sa = { .sa_handler = on_signal };

		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	if (p.loopback) {
		if (!count_set)
			p.count = 10;
		rc = run_loopback(&p);
		return rc == PING_INTERRUPTED ? 128 + SIGINT : rc ? 1 : 0;
	}

	rc = open_device(&p);
	if (!rc)
		rc = p.server ? run_server(&p) : run_client(&p);
	if (p.ctx)
		close_device(&p);
	if (rc == PING_INTERRUPTED)
		return 128 + SIGINT;
	return rc ? 1 : 0;
}
