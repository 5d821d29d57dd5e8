// SPDX-License-Identifier: MIT
/*
 * iwarp-perf, the server over libiwarp: serves one client run (its -q
 * connections, recognised by a session number), then exits, as perftest
 * does.  It listens for iWARP on PORT and for the --tcp comparison on
 * PORT+1.  Per QP it registers one buffer of the size the client asks for
 * and answers with its address and STag; then it answers STEP with READY
 * and END with DONE, and in between does the server's part of the
 * pattern: keep receives posted and grant them (send tests), echo (send
 * lat), or watch the last octet and write back (write lat).  Writes and
 * Reads need nothing from it: it sleeps.  The RFC 7306 tests enable the
 * extension on its QPs: atomics need nothing from it either; Writes with
 * Immediate Data take receives as Sends do.  A --threads client's run is
 * served by a thread per QP, each polling a CQ of its own, while the
 * first thread watches the connections (and a thread per TCP socket).
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

/* all the receives the client's Sends used since the last poll */
#define BATCH PERF_STREAM_POLL
#define SERVER_SEND_WR 64

struct server {
	const struct perf_opts *o;
	struct perf_dev d;
	struct iw_cm_id *listen;
	int tcp_fd;
	struct perf_tcp_server **tcp; /* one, or one per QP with threads */
	uint32_t n_tcp;
	atomic_bool failed; /* --threads: a thread has failed */
	struct perf_req req; /* the run's first request */
	uint32_t depth;
	uint32_t rx;	/* send tests: data receives per QP */
	uint32_t grant; /* send a CREDIT once this many receives are new */
	bool data_recv; /* send tests: every receive takes data */
	char iw_port[16], tcp_port[16];
};

/* ---- taking the client's connections ------------------------------------- */

/* Says no with our reason in the reject's private data, and says so here. */
static int refuse(struct server *s, struct iw_cm_id *id, const char *why)
{
	uint8_t pd[8 + PERF_REJ_MAX];
	char who[96];

	perf_peer_name(id, who, sizeof(who));
	iw_reject(id, pd, (uint16_t)perf_rej_encode(why, pd));
	iw_destroy_id(id);
	(void)s;
	return perf_fail("refused %s: %s", who, why);
}

/*
 * --threads: each endpoint has a CQ of its own, which one thread polls;
 * each thread sees its endpoint as the only one (index 0 in work request
 * numbers).
 */
static int thread_endpoints(struct server *s, uint32_t n, uint32_t recv_wr)
{
	s->d.ep = calloc(n, sizeof(*s->d.ep));
	if (!s->d.ep)
		return -1;
	s->d.n_ep = n;
	s->d.depth = s->depth;
	for (uint32_t i = 0; i < n; i++) {
		s->d.ep[i].cq = iw_create_cq(s->d.ctx,
					     (int)(SERVER_SEND_WR + recv_wr),
					     NULL);
		if (!s->d.ep[i].cq)
			return -1;
	}
	return 0;
}

/* A run's first request fixes its shape; what we cannot do is refused. */
static int first_request(struct server *s, struct iw_cm_id *id,
			 const struct perf_req *q)
{
	const struct perf_opts *o = s->o;
	char why[PERF_REJ_MAX];
	uint32_t recv_wr;

	if (q->qp_count == 0 || q->qp_count > PERF_MAX_QPS)
		snprintf(why, sizeof(why), "%u QPs; this server takes 1 to %u",
			 q->qp_count, PERF_MAX_QPS);
	else if (q->depth == 0 || q->depth > PERF_MAX_DEPTH)
		snprintf(why, sizeof(why),
			 "depth %u; this server takes 1 to %u", q->depth,
			 PERF_MAX_DEPTH);
	else if (q->rx_depth > PERF_MAX_DEPTH)
		snprintf(why, sizeof(why),
			 "%u receives; this server takes 1 to %u",
			 q->rx_depth, PERF_MAX_DEPTH);
	else if (q->watch_only && o->progress == IW_PROGRESS_MANUAL)
		snprintf(why, sizeof(why),
			 "--watch-only leaves each ping to a library thread; "
			 "this server runs --progress manual");
	else if (q->buf_len == 0 || q->buf_len > o->max_size ||
		 q->buf_len > UINT32_MAX)
		snprintf(why, sizeof(why),
			 "a buffer of %llu octets is over this server's limit "
			 "of %llu (--max-size)",
			 (unsigned long long)q->buf_len,
			 (unsigned long long)(o->max_size < UINT32_MAX
						      ? o->max_size
						      : UINT32_MAX));
	else
		why[0] = 0;
	if (why[0])
		return refuse(s, id, why);
	s->req = *q;
	s->depth = q->depth;
	s->data_recv = perf_test_receives(q->test);
	s->d.rfc7306 = q->test == PERF_ATOMIC	   ? IW_RFC7306_ATOMICS
		       : q->test == PERF_WRITE_IMM ? IW_RFC7306_IMMEDIATE
						   : 0;
	s->rx = !s->data_recv		? 0
		: q->mode == PERF_LAT	? 16
		: q->rx_depth		? q->rx_depth
					: q->depth; /* an older client */
	s->grant = s->rx / 4 ? s->rx / 4 : 1;
	recv_wr = s->data_recv ? s->rx : PERF_CTRL_SLOTS;
	if (q->threads ? thread_endpoints(s, q->qp_count, recv_wr)
		       : perf_dev_endpoints(&s->d, q->qp_count, q->depth,
					    SERVER_SEND_WR, recv_wr))
		return refuse(s, id, "out of resources for a CQ that large");
	return 0;
}

/*
 * One of the run's connections: its memory and QP, receives posted before
 * the Reply goes out, and the Reply with our buffer.  Returns 0, 1 when
 * the request was refused but the run goes on, -1 when the run is over.
 */
static int take_request(struct server *s, struct iw_cm_event *ev)
{
	struct iw_cm_id *id = ev->id;
	struct iw_mpa_info peer = ev->peer;
	char why[PERF_REJ_MAX], who[96];
	uint8_t pd[PERF_REP_LEN];
	struct iw_conn_param cp;
	struct perf_req q;
	struct perf_rep rep;
	struct perf_ep *e;
	int rc = perf_req_decode(ev->private_data, ev->private_data_len, &q);

	if (rc)
		return refuse(s, id, rc == -EPROTONOSUPPORT
					     ? "another version of iwarp-perf"
					     : "not an iwarp-perf client");
	if (!s->d.n_ep && first_request(s, id, &q))
		return -1;
	if (q.session != s->req.session || q.qp_index >= s->d.n_ep ||
	    s->d.ep[q.qp_index].id) {
		refuse(s, id, "busy with another run");
		return 1;
	}
	e = &s->d.ep[q.qp_index];
	e->id = id;
	rc = perf_ep_memory(&s->d, e, q.buf_len, false);
	if (rc) {
		snprintf(why, sizeof(why), "cannot register %llu octets: %s",
			 (unsigned long long)q.buf_len, iw_strerror(rc));
		e->id = NULL;
		return refuse(s, id, why);
	}
	perf_ep_touch(e);
	if (perf_ep_qp(&s->d, e, SERVER_SEND_WR,
		       s->data_recv ? s->rx : PERF_CTRL_SLOTS))
		return -1;
	rc = s->data_recv ? perf_post_data_recv(e, s->rx) : 0;
	for (uint32_t i = 0; !s->data_recv && i < PERF_CTRL_SLOTS && !rc; i++)
		rc = perf_post_ctrl_recv(e, i);
	if (rc)
		return -1;
	e->rx_posted = e->rx_granted = s->rx;
	e->raddr = q.sink_addr;
	e->rkey = q.sink_rkey;
	rep = (struct perf_rep){ (uintptr_t)e->buf, e->buf_mr->rkey, s->rx,
				 e->len };
	perf_rep_encode(&rep, pd);
	cp = (struct iw_conn_param){
		.private_data = pd, .private_data_len = sizeof(pd),
		/* a Read test's depth is the client's ORD, our IRD */
		.ird = (uint16_t)(perf_test_requests(q.test) ? s->depth : 1),
		.ord = 1,
	};
	rc = iw_accept(id, e->qp, &cp);
	if (rc) {
		char line[512];

		perf_peer_name(id, who, sizeof(who));
		tool_refusal(who, &peer, &s->o->mpa, rc, line, sizeof(line));
		return perf_fail("%s", line);
	}
	return 0;
}

/* A CM event while the run's connections come in. */
static int setup_event(struct server *s, struct iw_cm_event *ev,
		       uint32_t *up)
{
	struct perf_ep *e = NULL;

	for (uint32_t i = 0; i < s->d.n_ep; i++)
		if (s->d.ep[i].id == ev->id)
			e = &s->d.ep[i];
	switch (ev->event) {
	case IW_CM_EVENT_CONNECT_REQUEST:
		return take_request(s, ev) < 0 ? -1 : 0;
	case IW_CM_EVENT_ESTABLISHED:
		if (e && !e->up) {
			e->up = true;
			++*up;
		}
		return 0;
	default:
		if (!e)
			return 0; /* a refused one going away */
		perf_peer_name(ev->id, s->d.where, sizeof(s->d.where));
		perf_explain(s->d.where, ev, NULL);
		return -1;
	}
}

/*
 * Waits for a run's first request (as long as it takes, like perftest's
 * server; bounded in --loopback), then for all its QPs to be established
 * within twice the timeout of that request.
 */
static int accept_run(struct server *s)
{
	double end = tool_now_us() + 2e3 * s->o->timeout_ms;
	bool counting = s->o->loopback;
	uint32_t up = 0;

	while (!s->d.n_ep || up < s->d.n_ep) {
		/* short looks: a loopback client that gave up is noticed */
		struct iw_cm_event *ev = perf_event(&s->d, 200);
		int rc;

		if (s->o->client_gone && atomic_load(s->o->client_gone))
			return -1;
		if (!ev && (s->d.n_ep || s->o->loopback) &&
		    tool_now_us() > end)
			return perf_fail("the client's connections did not "
					 "come within %d s",
					 2 * s->o->timeout_ms / 1000);
		if (!ev)
			continue;
		rc = setup_event(s, ev, &up);
		iw_ack_cm_event(ev);
		if (rc)
			return -1;
		if (!counting && s->d.n_ep) {
			counting = true;
			end = tool_now_us() + 2e3 * s->o->timeout_ms;
		}
	}
	perf_peer_name(s->d.ep[0].id, s->d.where, sizeof(s->d.where));
	return 0;
}

/* ---- serving ------------------------------------------------------------- */

static int post_one(struct perf_ep *e, enum iw_wr_opcode op, uint32_t len)
{
	struct iw_sge sg = { (uintptr_t)e->buf, len, e->buf_mr->lkey };
	struct iw_send_wr w = {
		.wr_id = PERF_WR_ID(0, e->index, 0),
		.sg_list = &sg, .num_sge = 1, .opcode = op,
		.send_flags = IW_SEND_SIGNALED,
		.rdma = { e->raddr, e->rkey },
	};
	int rc = iw_post_send(e->qp, &w, NULL);

	return rc ? perf_fail("post: %s", iw_strerror(rc)) : 0;
}

/*
 * Puts back the data receives used so far and, in bw and rate, grants
 * them to the client once enough are new (@all: every one, now).
 */
static int replenish(struct server *s, struct perf_ep *e, bool all)
{
	struct perf_ctrl m = { .type = PERF_CREDIT };

	if (e->rx_pending && perf_post_data_recv(e, (uint32_t)e->rx_pending))
		return -1;
	e->rx_posted += e->rx_pending;
	e->rx_pending = 0;
	if (s->req.mode == PERF_LAT || e->rx_posted == e->rx_granted ||
	    (!all && e->rx_posted - e->rx_granted < s->grant))
		return 0;
	m.count = e->rx_posted;
	e->rx_granted = e->rx_posted;
	return perf_send_ctrl(e, &m, false);
}

/* STEP: get ready for a size, and say so. */
static int step_begins(struct server *s, struct perf_ep *e, const uint8_t *p,
		       uint32_t len)
{
	struct perf_ctrl m;

	if (perf_ctrl_decode(p, len, &m) || m.type != PERF_STEP ||
	    m.size == 0 || m.size > e->len)
		return perf_fail("%s: a control message that is no STEP",
				 s->d.where);
	e->stepping = true;
	e->step_size = m.size;
	e->rx_msgs = e->rx_bytes = 0;
	e->posted = e->completed = 0;
	e->watching = s->req.mode == PERF_LAT && s->req.test == PERF_WRITE;
	/*
	 * Watching memory alone, the polls that look for the step's end must
	 * not take the connection from the library's thread, which places
	 * the pings: an armed CQ leaves it there.  The end is a solicited
	 * Send; the pongs' completions do not fire the event.
	 */
	if (e->watching && s->req.watch_only)
		iw_req_notify_cq(s->d.cq, 1);
	e->expect = perf_lat_mark(0);
	e->buf[m.size - 1] = 0;
	m = (struct perf_ctrl){ .type = PERF_READY, .size = m.size };
	return perf_send_ctrl(e, &m, false);
}

/* END: everything before it has arrived (RFC 5040 ordering); say DONE. */
static int step_ends(struct server *s, struct perf_ep *e)
{
	struct perf_ctrl m = { .type = PERF_DONE, .size = e->step_size,
			       .count = e->rx_msgs, .bytes = e->rx_bytes };

	e->stepping = e->watching = false;
	if (s->data_recv && replenish(s, e, true))
		return -1;
	return perf_send_ctrl(e, &m, false);
}

/* One completion on the server's side of a step. */
static int server_wc(struct server *s, const struct iw_wc *wc)
{
	uint32_t i = PERF_WR_EP(wc->wr_id);
	struct perf_ep *e = i < s->d.n_ep ? &s->d.ep[i] : NULL;
	const uint8_t *p;

	if (wc->status == IW_WC_WR_FLUSH_ERR)
		return 0; /* the connection is ending; its event follows */
	if (wc->status != IW_WC_SUCCESS)
		return perf_wc_failed(&s->d, wc);
	if (!e)
		return perf_fail("a completion for no QP of ours");
	if (!(wc->wr_id & PERF_WR_RECV)) {
		e->completed += !(wc->wr_id & PERF_WR_CTRL);
		return 0;
	}
	if (wc->wr_id & PERF_WR_CTRL) {
		p = e->ctrl + PERF_WR_SEQ(wc->wr_id) * PERF_SLOT_LEN;
		if (perf_post_ctrl_recv(e, (uint32_t)PERF_WR_SEQ(wc->wr_id)))
			return -1;
	} else {
		p = e->buf;
		e->rx_pending++;
	}
	if (wc->wc_flags & IW_WC_SOLICITED)
		return wc->byte_len ? step_begins(s, e, p, wc->byte_len)
				    : step_ends(s, e);
	e->rx_msgs++;
	e->rx_bytes += wc->byte_len;
	if (s->req.mode == PERF_LAT)
		return post_one(e, s->req.test == PERF_WRITE_IMM
					   ? IW_WR_RDMA_WRITE_WITH_IMM
					   : IW_WR_SEND,
				wc->byte_len);
	return 0;
}

/* Write lat: a ping's last octet has landed; write the pong back. */
static int watch_marks(struct server *s)
{
	int seen = 0;

	for (uint32_t i = 0; i < s->d.n_ep; i++) {
		struct perf_ep *e = &s->d.ep[i];

		if (!e->watching || !perf_mark_arrived(e, e->step_size))
			continue;
		e->expect = perf_lat_mark(++e->posted);
		if (post_one(e, IW_WR_RDMA_WRITE, e->step_size))
			return -1;
		seen++;
	}
	return seen;
}

/*
 * How to wait: asleep between steps and while Writes and Reads run (they
 * need nothing from us); as --event says while each message needs us.
 */
static unsigned int wait_flags(struct server *s, bool *watching)
{
	bool stepping = false;

	*watching = false;
	for (uint32_t i = 0; i < s->d.n_ep; i++) {
		stepping |= s->d.ep[i].stepping;
		*watching |= s->d.ep[i].watching;
	}
	if (stepping && (s->data_recv || s->req.mode == PERF_LAT))
		return PERF_WAIT_CLOSING;
	return PERF_WAIT_CLOSING | PERF_WAIT_SLEEP;
}

/*
 * Write lat, watching memory: the CQ is polled at each look, so that this
 * thread places a ping as soon as it comes; when the client asked to watch
 * memory alone, only until the pong has completed, and then only once no
 * ping has come for a millisecond (the step's end comes as a Send, and
 * the CQ is armed for it: see step_begins()).
 */
static bool poll_while_watching(const struct server *s, double quiet_since)
{
	return !s->req.watch_only || perf_writes_out(&s->d) ||
	       tool_now_us() - quiet_since > 1000;
}

/*
 * Serves until the client has closed every connection.  The client's own
 * waits are bounded and it closes on any failure, so this ends too.
 */
static int serve(struct server *s)
{
	double quiet_since = tool_now_us();

	for (unsigned int round = 1;; round++) {
		struct iw_wc wc[BATCH];
		bool watching;
		unsigned int flags = wait_flags(s, &watching);
		int n;

		if (watching) {
			/* the poll places what has come: look right after */
			int seen;

			n = poll_while_watching(s, quiet_since)
				    ? iw_poll_cq(s->d.cq, BATCH, wc)
				    : 0;
			if (n < 0)
				return perf_fail("poll: %s", iw_strerror(n));
			seen = watch_marks(s);
			if (seen < 0)
				return -1;
			if (seen)
				quiet_since = tool_now_us();
			if (n == 0 && !seen && !s->req.watch_only)
				sched_yield();
			if (n == 0 && !(round & 1023))
				n = perf_check_cm(&s->d, flags);
		} else {
			n = perf_poll(&s->d, wc, BATCH, s->o->timeout_ms,
				      flags);
		}
		if (n == -2)
			return 0;
		if (n < 0)
			return -1;
		for (int k = 0; k < n; k++)
			if (server_wc(s, &wc[k]))
				return -1;
		for (uint32_t i = 0; s->data_recv && i < s->d.n_ep; i++)
			if (s->d.ep[i].rx_pending &&
			    replenish(s, &s->d.ep[i], false))
				return -1;
	}
}

/* ---- --threads ----------------------------------------------------------- */

struct part {
	struct server s; /* the whole's, but for the device: one endpoint */
	pthread_t th;
	int rc;
};

static void *serve_part(void *arg)
{
	struct part *p = arg;

	p->rc = serve(&p->s);
	if (p->rc)
		atomic_store(p->s.d.failed, true);
	return NULL;
}

/*
 * Watches the connections of a --threads run for their threads, which
 * poll only their CQs: marks the endpoints that closed, and stops them
 * all at a failure (theirs or a connection's).
 */
static int watch_parts(struct server *s)
{
	for (;;) {
		struct pollfd p = { iw_cm_channel_fd(s->d.ch), POLLIN, 0 };
		int rc;

		if (atomic_load(&s->failed))
			return -1;
		/* plainly: the threads' polls run a manual loop meanwhile */
		poll(&p, 1, 200);
		rc = perf_check_cm(&s->d, PERF_WAIT_CLOSING);
		if (rc == -2)
			return 0;
		if (rc) {
			atomic_store(&s->failed, true);
			return -1;
		}
	}
}

/* A thread per endpoint, each serving it alone; this one watches. */
static int serve_threads(struct server *s)
{
	struct part *p = calloc(s->d.n_ep, sizeof(*p));
	uint32_t started = 0;
	int rc = p ? 0 : perf_fail("out of memory");

	for (uint32_t i = 0; !rc && i < s->d.n_ep; i++) {
		struct perf_ep *e = &s->d.ep[i];

		p[i].s = *s;
		rc = perf_dev_part(&p[i].s.d, &s->d, false);
		p[i].s.d.failed = &s->failed;
		p[i].s.d.cq = e->cq;
		p[i].s.d.ep = e;
		p[i].s.d.n_ep = 1;
		p[i].s.d.depth = s->depth;
		snprintf(p[i].s.d.where, sizeof(p[i].s.d.where), "%s",
			 s->d.where);
		if (!rc && pthread_create(&p[i].th, NULL, serve_part, &p[i]))
			rc = perf_fail("cannot start a thread");
		started += !rc;
	}
	if (rc)
		atomic_store(&s->failed, true);
	rc = watch_parts(s) || rc;
	for (uint32_t i = 0; i < started; i++) {
		pthread_join(p[i].th, NULL);
		rc = rc || p[i].rc;
	}
	free(p); /* the parts borrowed everything: nothing else to close */
	return rc ? -1 : 0;
}

/* The TCP comparison's sockets: one thread for all, or one each. */
static int serve_tcp(struct server *s)
{
	s->n_tcp = s->req.threads ? s->d.n_ep : 1;
	s->tcp = calloc(s->n_tcp, sizeof(*s->tcp));
	if (!s->tcp)
		return perf_fail("out of memory");
	for (uint32_t i = 0; i < s->n_tcp; i++)
		if (perf_tcp_serve(s->tcp_fd, s->req.threads ? 1 : s->d.n_ep,
				   s->o, s->req.buf_len, &s->tcp[i]))
			return -1;
	return 0;
}

/* ---- the run ------------------------------------------------------------- */

static void port_of(struct iw_cm_id *l, char *out, size_t len)
{
	struct sockaddr_storage ss;
	char serv[16] = "?";

	if (iw_get_local_addr(l, &ss) == 0)
		getnameinfo((struct sockaddr *)&ss, sizeof(ss), NULL, 0, serv,
			    sizeof(serv), NI_NUMERICSERV);
	snprintf(out, len, "%s", serv);
}

/* iWARP on PORT, TCP on PORT+1 (--loopback: any free ones on 127.0.0.1). */
static int listen_both(struct server *s)
{
	const struct perf_opts *o = s->o;
	const char *host = o->loopback ? "127.0.0.1" : o->bind;
	char tport[24];
	int rc;

	s->listen = iw_create_id(s->d.ch, NULL);
	if (!s->listen || iw_set_mpa_opts(s->listen, &o->mpa))
		return perf_fail("bad MPA options");
	rc = iw_listen(s->listen, host, o->loopback ? "0" : o->port, 16);
	if (rc)
		return perf_fail("cannot listen on %s:%s: %s",
				 host ? host : "*", o->port, iw_strerror(rc));
	port_of(s->listen, s->iw_port, sizeof(s->iw_port));
	snprintf(tport, sizeof(tport), "%ld",
		 o->loopback ? 0 : strtol(o->port, NULL, 10) + 1);
	return perf_tcp_listen(host, tport, &s->tcp_fd, s->tcp_port,
			       sizeof(s->tcp_port));
}

/*
 * Serves one client run.  With @ready_fd (--loopback) the two ports go
 * there, "IWPORT TCPPORT", once both listen.
 */
int perf_server_run(const struct perf_opts *o, int ready_fd)
{
	struct server s = { .o = o, .tcp_fd = -1 };
	int rc = perf_dev_open(&s.d, o) || listen_both(&s);

	if (!rc && ready_fd >= 0) {
		char ports[32] = "";

		snprintf(ports, sizeof(ports), "%s %s", s.iw_port, s.tcp_port);
		if (write(ready_fd, ports, sizeof(ports)) != sizeof(ports))
			rc = perf_fail("cannot report the ports");
	}
	if (!rc && !o->loopback && !o->json) {
		printf(PERF_PROG ": waiting for a client on port %s (iWARP) "
		       "and %s (TCP)\n",
		       s.iw_port, s.tcp_port);
		fflush(stdout);
	}
	rc = rc || accept_run(&s);
	if (!rc && s.req.tcp)
		rc = serve_tcp(&s);
	rc = rc || (s.req.threads ? serve_threads(&s) : serve(&s));
	/* shut down now: a socket still in a step means a failure */
	for (uint32_t i = 0; i < s.n_tcp; i++)
		rc = perf_tcp_serve_end(s.tcp[i]) || rc;
	free(s.tcp);
	if (s.tcp_fd >= 0)
		close(s.tcp_fd);
	if (s.listen)
		iw_destroy_id(s.listen);
	perf_dev_close(&s.d);
	return rc ? 1 : 0;
}
