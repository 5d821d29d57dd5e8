// SPDX-License-Identifier: MIT
/*
 * iwarp-perf --perftest without HOST: the server for perftest's client
 * (ib_write_bw -R HOST and the others).  It listens on PORT and takes the
 * run's first connection as the exchange connection and the next -q as
 * the data connections, then answers every exchange in perftest's order
 * and does the server's part of the test:
 *
 *  send bw    take the Sends, keep the receives posted, write credits
 *  send lat   answer each Send with one
 *  write lat  write first, then answer each Write with one
 *  the rest   nothing: Writes and Reads need no help; wait for the client
 *
 * Its rows are its own measurements where it has any (send bw, send and
 * write lat), and for write and read bw the client's report.  Like
 * perftest's server it serves one run and exits.
 */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf_pt.h"

/* ---- connections ----------------------------------------------------------- */

static int listen_on(struct pt_run *t, char *port, size_t len)
{
	const struct perf_opts *o = t->o;
	const char *host = o->loopback ? "127.0.0.1" : o->bind;
	struct sockaddr_storage ss;
	int rc;

	t->listen = iw_create_id(t->d.ch, NULL);
	if (!t->listen || iw_set_mpa_opts(t->listen, &o->mpa))
		return perf_fail("bad MPA options");
	rc = iw_listen(t->listen, host, o->loopback ? "0" : o->port, 16);
	if (rc)
		return perf_fail("cannot listen on %s:%s: %s", host ? host : "*",
				 o->port, iw_strerror(rc));
	snprintf(port, len, "?");
	if (iw_get_local_addr(t->listen, &ss) == 0)
		getnameinfo((struct sockaddr *)&ss, sizeof(ss), NULL, 0, port,
			    len, NI_NUMERICSERV);
	return 0;
}

/*
 * The next connection request within @ms (<0: no limit, as perftest's
 * server waits); other events of the exchange connection that are no
 * failure are taken on the way.
 */
static struct iw_cm_event *next_request(struct pt_run *t, int ms)
{
	double end = tool_now_us() + ms * 1000.0;

	for (;;) {
		struct iw_cm_event *ev = perf_event(&t->d, 200);

		if (t->o->client_gone && atomic_load(t->o->client_gone))
			return NULL;
		if (!ev) {
			if (ms >= 0 && tool_now_us() > end) {
				perf_fail("%s: no connection within %d s",
					  t->d.where, ms / 1000);
				return NULL;
			}
			continue;
		}
		if (ev->event == IW_CM_EVENT_CONNECT_REQUEST)
			return ev;
		if (ev->id == t->comm_id &&
		    ev->event != IW_CM_EVENT_ESTABLISHED) {
			perf_explain(t->d.where, ev, NULL);
			iw_ack_cm_event(ev);
			return NULL;
		}
		iw_ack_cm_event(ev);
	}
}

static int accept_comm(struct pt_run *t)
{
	struct iw_cm_event *ev = next_request(t, t->o->loopback
							 ? 2 * t->o->timeout_ms
							 : -1);
	int rc;

	if (!ev)
		return -1;
	perf_peer_name(ev->id, t->d.where, sizeof(t->d.where));
	rc = pt_comm_accept(t, ev);
	iw_ack_cm_event(ev);
	return rc;
}

/*
 * Write lat's server writes first, before the client has sent anything on
 * the data connection; perftest's client (siw) takes that, and the
 * exchange has told us it is ready.
 */
static int data_opts(struct pt_run *t, struct iw_cm_id *id)
{
	struct iw_mpa_opts m = t->o->mpa;

	m.responder_first = t->plan->server_first;
	return iw_set_mpa_opts(id, &m) ? perf_fail("bad MPA options") : 0;
}

/* The client's data connections, one per QP, each within the timeout. */
static int accept_data(struct pt_run *t)
{
	if (pt_endpoints(t, t->o->qps))
		return -1;
	for (uint32_t i = 0; i < t->d.n_ep; i++) {
		struct perf_ep *e = &t->d.ep[i];
		struct iw_conn_param cp = pt_conn_param(t);
		struct iw_cm_event *ev = next_request(t, 2 * t->o->timeout_ms);
		int rc;

		if (!ev)
			return -1;
		e->id = ev->id;
		rc = data_opts(t, e->id) || pt_data_memory(t, e) ||
		     pt_data_qp(t, e);
		if (!rc) {
			rc = iw_accept(e->id, e->qp, &cp);
			if (rc) {
				char what[160], line[512];

				snprintf(what, sizeof(what),
					 "the data connection of %s",
					 t->d.where);
				tool_refusal(what, &ev->peer, &t->o->mpa, rc,
					     line, sizeof(line));
				perf_fail("%s", line);
			}
		}
		iw_ack_cm_event(ev);
		if (rc)
			return -1;
		e->up = true;
	}
	pt_fill_dests(t);
	return 0;
}

/* ---- the sizes ------------------------------------------------------------- */

/* Whether this end does anything in the test, and so has rows of its own. */
static bool active(const struct pt_run *t)
{
	return t->o->test == PERF_SEND ||
	       (t->o->mode == PERF_LAT && t->o->test == PERF_WRITE);
}

static int pattern(struct pt_run *t, size_t size, struct perf_result *r)
{
	if (t->o->mode == PERF_BW)
		return pt_bw_receive(t, size, r);
	return t->o->test == PERF_SEND ? pt_lat_send(t, size, r)
				       : pt_lat_write(t, size, r);
}

/* (--loopback: the client's rows say it all; this end stays quiet.) */
static void header(struct pt_run *t)
{
	char conn[192], words[352];

	if (t->o->json || t->o->loopback)
		return;
	pt_describe(t, conn, sizeof(conn));
	snprintf(words, sizeof(words), "%s, %s", t->d.where, conn);
	printf("# perftest exchange: %llu iterations a size, receive depth "
	       "%u%s\n",
	       (unsigned long long)t->iters, t->rx_depth,
	       active(t) ? ""
	       : t->plan->reports ? "; figures: the client's report, "
				    "which has no latency"
				  : "; the client measures, this end only "
				    "serves");
	perf_report_header(t->o, words, active(t) && t->o->mode == PERF_LAT);
}

/* The client's bw report as a row: rate and count are unit-free. */
static void report_row(struct pt_run *t, const struct pt_report *rep)
{
	struct perf_result r = {
		.iters = rep->iters, .bytes = rep->iters * rep->size,
		.seconds = rep->msg_rate > 0 ? (double)rep->iters /
						       (rep->msg_rate * 1e6)
					     : 0,
	};

	perf_report_row(t->o, rep->size, &r, NULL);
}

static bool sync_after(const struct pt_run *t)
{
	return t->plan->after_size == PT_AFTER_ALWAYS ||
	       (t->plan->after_size == PT_AFTER_SWEEP && t->o->sweep);
}

/*
 * The sizes of an active server, each with its syncs; a passive one has
 * nothing to do but wait, however long the client runs.
 */
static int run(struct pt_run *t)
{
	struct pt_report none = { 0 }, theirs;

	header(t);
	for (size_t size = pt_first_size(t); active(t) && size;
	     size = pt_next_size(t, size)) {
		struct perf_result r = { 0 };
		int rc;

		perf_stats_reserve(&r.lat, t->iters);
		rc = (t->plan->before_size && pt_sync(t, 0)) ||
		     pattern(t, size, &r) || (sync_after(t) && pt_sync(t, 0));
		if (!rc && !t->o->loopback)
			perf_report_row(t->o, size, &r, NULL);
		tool_stats_free(&r.lat);
		if (rc)
			return -1;
	}
	t->patient = !active(t);
	if (t->plan->reports) {
		if (pt_sync(t, 0) || pt_reports(t, &none, &theirs))
			return -1;
		if (!t->o->loopback)
			report_row(t, &theirs);
	}
	return t->plan->close_sync ? pt_sync(t, 0) : 0;
}

/*
 * Serves one perftest client run.  With @ready_fd (--loopback) the port
 * goes there, "PORT -", once it listens.
 */
int perf_pt_server(const struct perf_opts *o, int ready_fd)
{
	struct pt_run t;
	char port[16];
	int rc = pt_open(&t, o, true) || listen_on(&t, port, sizeof(port));

	if (!rc && ready_fd >= 0) {
		char ports[32] = "";

		snprintf(ports, sizeof(ports), "%s -", port);
		if (write(ready_fd, ports, sizeof(ports)) != sizeof(ports))
			rc = perf_fail("cannot report the port");
	}
	if (!rc && !o->loopback && !o->json) {
		printf(PERF_PROG ": waiting for a perftest client on port %s\n",
		       port);
		fflush(stdout);
	}
	rc = rc || accept_comm(&t) || pt_prefix(&t) || pt_sync_zero(&t) ||
	     accept_data(&t) || pt_sync_zero(&t) || pt_pre_syncs(&t) ||
	     run(&t);
	pt_disconnect(&t);
	pt_close(&t);
	return rc ? 1 : 0;
}
