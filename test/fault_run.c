// SPDX-License-Identifier: MIT
/*
 * One run of check_faults (see fault_run.h).  The seed decides the
 * framing (MPA revision, CRC, markers), the private data, the work each
 * side posts (Sends, RDMA Writes and Reads of odd sizes, some before the
 * connection is up; RFC 7306 atomics and Immediate Data on some) and the
 * fault; the proxy decides where each direction
 * is cut.  Each side's memory is one arena: four registered regions with
 * guard octets around them, filled from the seed, so that what each octet
 * may hold afterwards is known: what it held, or what the work meant to
 * put there.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "fault_run_internal.h"

const char *const op_names[] = { "send", "write", "read", "fetch-add",
				  "write-imm" };

long long fault_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

bool flunk(struct run *r, const char *fmt, ...)
{
	va_list ap;

	if (r->res->failed)
		return false;
	r->res->failed = true;
	va_start(ap, fmt);
	vsnprintf(r->res->why, sizeof(r->res->why), fmt, ap);
	va_end(ap);
	return false;
}

size_t region_at(int reg)
{
	return GUARD + (size_t)reg * (REGION + GUARD);
}

/* ---- the two sides ----------------------------------------------------- */

static bool side_open(struct run *r, struct side *s, struct iw_context *ctx)
{
	static const int access[N_REGIONS] = {
		[SRC] = IW_ACCESS_REMOTE_READ,
		[RECV] = IW_ACCESS_LOCAL_WRITE,
		[TARGET] = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE,
		[SINK] = IW_ACCESS_LOCAL_WRITE,
	};
	struct iw_qp_init_attr qa = {
		.cap = { .max_send_wr = SIDE_OPS, .max_recv_wr = SIDE_OPS,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int target_access = access[TARGET];

	if (r->rfc7306) {
		qa.comp_mask = IW_QP_INIT_ATTR_RFC7306;
		qa.rfc7306 = IW_RFC7306_ALL;
		target_access |= IW_ACCESS_REMOTE_ATOMIC;
	}
	s->ctx = ctx;
	s->arena_len = region_at(N_REGIONS);
	s->arena = malloc(s->arena_len);
	s->initial = malloc(s->arena_len);
	s->final = malloc(s->arena_len);
	s->ch = iw_create_cm_channel(ctx);
	s->pd = iw_alloc_pd(ctx);
	s->cq = iw_create_cq(ctx, 2 * SIDE_OPS, NULL);
	if (!s->arena || !s->initial || !s->final || !s->ch || !s->pd || !s->cq)
		return flunk(r, "%s: cannot open: %s", s->name, strerror(errno));
	fcntl(iw_cm_channel_fd(s->ch), F_SETFL, O_NONBLOCK);
	qa.send_cq = qa.recv_cq = s->cq;
	s->qp = iw_create_qp(s->pd, &qa);
	if (!s->qp)
		return flunk(r, "%s: no QP: %s", s->name, strerror(errno));
	rng_fill(&r->rng, s->arena, s->arena_len);
	memcpy(s->initial, s->arena, s->arena_len);
	for (int g = 0; g < N_REGIONS; g++) {
		s->mr[g] = iw_reg_mr(s->pd, s->arena + region_at(g), REGION,
				     g == TARGET ? target_access : access[g]);
		if (!s->mr[g])
			return flunk(r, "%s: cannot register: %s", s->name,
				    strerror(errno));
	}
	return true;
}

static bool post_recvs(struct run *r, struct side *s)
{
	for (int j = 0; j < s->n_recv; j++) {
		struct iw_sge sg = { (uintptr_t)s->arena + region_at(RECV) +
					     s->recv_off[j],
				     s->recv_len[j], s->mr[RECV]->lkey };
		struct iw_recv_wr w = { .wr_id = RECV_WR_BASE + (uint64_t)j,
					.sg_list = &sg, .num_sge = 1 };
		int rc = iw_post_recv(s->qp, &w, NULL);

		if (rc)
			return flunk(r, "%s: receive %d refused: %s", s->name, j,
				    iw_strerror(rc));
		s->posted[RECV_WR_BASE + j] = true;
		s->n_posted++;
	}
	return true;
}

/* Posts the operations not posted yet (@early: those meant to go early). */
static bool post_ops(struct run *r, struct side *s, bool early)
{
	struct side *p = &r->s[s == &r->s[0]];

	for (int i = 0; i < s->n_ops; i++) {
		struct op *o = &s->ops[i];
		struct iw_sge sg;
		struct iw_send_wr w = { .wr_id = (uint64_t)i, .sg_list = &sg,
					.num_sge = 1,
					.send_flags = IW_SEND_SIGNALED };
		int rc;

		if (o->posted || (early && !o->early))
			continue;
		switch (o->kind) {
		case OP_READ:
			sg = (struct iw_sge){ (uintptr_t)s->arena + region_at(SINK) +
						      o->dst_off,
					      o->len, s->mr[SINK]->lkey };
			w.opcode = IW_WR_RDMA_READ;
			w.rdma.remote_addr = (uintptr_t)p->arena + region_at(SRC) +
					     o->src_off;
			w.rdma.rkey = p->mr[SRC]->rkey;
			break;
		case OP_FETCH_ADD:
			sg = (struct iw_sge){ (uintptr_t)s->arena + region_at(SINK) +
						      o->dst_off,
					      ATOMIC_LEN, s->mr[SINK]->lkey };
			w.opcode = IW_WR_ATOMIC_FETCH_AND_ADD;
			w.atomic.remote_addr = (uintptr_t)p->arena +
					       region_at(TARGET) + o->src_off;
			w.atomic.rkey = p->mr[TARGET]->rkey;
			w.atomic.compare_add = o->value;
			break;
		default:
			sg = (struct iw_sge){ (uintptr_t)s->arena + region_at(SRC) +
						      o->src_off,
					      o->len, s->mr[SRC]->lkey };
			w.opcode = o->kind == OP_SEND	     ? IW_WR_SEND
				   : o->kind == OP_WRITE_IMM ? IW_WR_RDMA_WRITE_WITH_IMM
							     : IW_WR_RDMA_WRITE;
			w.rdma.remote_addr = (uintptr_t)p->arena +
					     region_at(TARGET) + o->dst_off;
			w.rdma.rkey = p->mr[TARGET]->rkey;
			w.imm_data = o->value;
			break;
		}
		rc = iw_post_send(s->qp, &w, NULL);
		/* IRD/ORD words changed in flight may leave no Read credit
		 * (an atomic needs one as a Read does) */
		if (rc == -IW_ENO_READ_CREDIT && r->f.kind == FAULT_CORRUPT)
			continue;
		if (rc)
			return flunk(r, "%s: %s %d of %u octets refused: %s",
				    s->name, op_names[o->kind], i, o->len,
				    iw_strerror(rc));
		o->posted = true;
		s->posted[i] = true;
		s->n_posted++;
	}
	return true;
}

/* ---- events and completions ------------------------------------------ */

static bool take_completions(struct run *r, struct side *s)
{
	struct iw_wc wc[8];
	int n;

	while ((n = iw_poll_cq(s->cq, 8, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			uint64_t id = wc[i].wr_id;

			if (id >= MAX_WR || !s->posted[id])
				return flunk(r, "%s: completion of wr_id %llu, "
					       "never posted",
					    s->name, (unsigned long long)id);
			if (s->done[id]++)
				return flunk(r, "%s: wr_id %llu completed twice "
					       "(%s, then %s)",
					    s->name, (unsigned long long)id,
					    iw_wc_status_str(s->wc_status[id]),
					    iw_wc_status_str(wc[i].status));
			s->wc_status[id] = wc[i].status;
			s->wc_len[id] = wc[i].byte_len;
			s->wc_flags[id] = wc[i].wc_flags;
			s->wc_imm[id] = wc[i].imm_data;
			s->n_done++;
		}
	}
	if (n < 0)
		return flunk(r, "%s: iw_poll_cq: %s", s->name, iw_strerror(n));
	return true;
}

static bool accept_request(struct run *r, struct side *s,
			   struct iw_cm_event *ev)
{
	int rc;

	if (s->id) {
		iw_reject(ev->id, NULL, 0);
		iw_destroy_id(ev->id);
		return flunk(r, "server: a second connection request");
	}
	s->id = ev->id;
	rc = iw_accept(s->id, s->qp,
		       &(struct iw_conn_param){ .ird = 8, .ord = 8 });
	if (rc) {
		/* the client left, or the options did not meet: it is over */
		s->ended = true;
		s->status = rc;
		return true;
	}
	s->attached = true;
	return true;
}

static bool take_events(struct run *r, struct side *s)
{
	struct iw_cm_event *ev;

	while (iw_get_cm_event(s->ch, &ev) == 0) {
		enum iw_cm_event_type type = ev->event;
		bool ok = true;

		switch (ev->event) {
		case IW_CM_EVENT_CONNECT_REQUEST:
			ok = accept_request(r, s, ev);
			break;
		case IW_CM_EVENT_ESTABLISHED:
			if (s->established || s->ended)
				ok = flunk(r, "%s: ESTABLISHED %s", s->name,
					  s->ended ? "after its final event"
						   : "twice");
			s->established = true;
			break;
		default:
			if (ev->id != s->id)
				ok = flunk(r, "%s: %s of an unknown identifier",
					  s->name, iw_cm_event_str(ev->event));
			else if (s->ended && s->final_ev != IW_CM_EVENT_CONNECT_REQUEST)
				ok = flunk(r, "%s: a second final event: %s "
					     "after %s",
					  s->name, iw_cm_event_str(ev->event),
					  iw_cm_event_str(s->final_ev));
			s->ended = true;
			s->final_ev = ev->event;
			s->status = ev->status;
			s->term = ev->terminate;
			break;
		}
		iw_ack_cm_event(ev);
		if (!ok)
			return false;
		if (type == IW_CM_EVENT_ESTABLISHED && !post_ops(r, s, false))
			return false;
	}
	return true;
}

/*
 * Takes events and completions on both sides until @done says so or
 * nothing has happened for @quiet_ms; false on a failure, or past the
 * run's deadline (a hang).
 */
static bool pump(struct run *r, bool (*done)(struct run *), int quiet_ms)
{
	long long quiet_end = fault_now_ms() + quiet_ms;

	for (;;) {
		int before = r->s[0].n_done + r->s[1].n_done;
		bool before_end = r->s[0].ended && r->s[1].ended;
		struct pollfd pf[4];

		for (int k = 0; k < 2; k++)
			if (!take_events(r, &r->s[k]) ||
			    !take_completions(r, &r->s[k]))
				return false;
		if (done(r))
			return true;
		if (r->s[0].n_done + r->s[1].n_done != before ||
		    (r->s[0].ended && r->s[1].ended) != before_end)
			quiet_end = fault_now_ms() + quiet_ms;
		if (fault_now_ms() > r->deadline)
			return flunk(r, "hang: nothing ends the run within %d ms",
				    RUN_MS);
		if (fault_now_ms() > quiet_end)
			return true;
		for (int k = 0; k < 2; k++) {
			iw_req_notify_cq(r->s[k].cq, 0);
			pf[2 * k] = (struct pollfd){ iw_cm_channel_fd(r->s[k].ch),
						     POLLIN, 0 };
			pf[2 * k + 1] = (struct pollfd){ iw_cq_fd(r->s[k].cq),
							 POLLIN, 0 };
		}
		if (poll(pf, 4, TICK_MS) > 0)
			for (int k = 0; k < 2; k++)
				if (pf[2 * k + 1].revents &&
				    iw_get_cq_event(r->s[k].cq, NULL) == 0)
					iw_ack_cq_events(r->s[k].cq, 1);
	}
}

static bool all_done(const struct side *s)
{
	return s->n_done == s->n_posted;
}

/*
 * Traffic: every request posted so far has completed and nothing is left
 * to post; or the client's connection is over and the server never had
 * one (the handshake did not reach it).
 */
static bool traffic_done(struct run *r)
{
	if (r->s[0].ended && (r->s[1].ended || !r->s[1].id))
		return true;
	for (int k = 0; k < 2; k++) {
		const struct side *s = &r->s[k];
		bool unposted = false;

		for (int i = 0; i < s->n_ops; i++)
			unposted |= !s->ops[i].posted;
		if (!all_done(s) || (unposted && !s->ended))
			return false;
	}
	return true;
}

/*
 * The connection is failing: a side has its final event, or work that
 * failed (its event may still be on its way, behind a Terminate).
 */
static bool failing(struct run *r)
{
	for (int k = 0; k < 2; k++) {
		const struct side *s = &r->s[k];

		if (s->ended)
			return true;
		for (int id = 0; id < MAX_WR; id++)
			if (s->done[id] && s->wc_status[id] != IW_WC_SUCCESS)
				return true;
	}
	return false;
}

static bool both_ended(struct run *r)
{
	return (r->s[0].ended || !r->s[0].id) && (r->s[1].ended || !r->s[1].id);
}

static bool everything_done(struct run *r)
{
	return both_ended(r) && all_done(&r->s[0]) && all_done(&r->s[1]);
}

/* ---- the run ----------------------------------------------------------- */

static bool connect_sides(struct run *r)
{
	struct iw_mpa_opts o;
	struct sockaddr_storage ss;
	char port[16];
	uint8_t pd[64];
	int rc;

	iw_mpa_opts_default(&o);
	o.revision = r->rev;
	o.reply_timeout_ms = 3000;
	o.request_timeout_ms = 3000;
	r->listen = iw_create_id(r->s[1].ch, NULL);
	if (!r->listen || iw_set_mpa_opts(r->listen, &o) ||
	    iw_listen(r->listen, "127.0.0.1", "0", 4) ||
	    iw_get_local_addr(r->listen, &ss))
		return flunk(r, "server: cannot listen");
	rc = fault_proxy_start(&r->proxy,
			       ntohs(((struct sockaddr_in *)&ss)->sin_port), &r->f,
			       rng_next(&r->rng));
	if (rc)
		return flunk(r, "cannot start the proxy: %s", strerror(-rc));
	r->proxy_up = true;
	o.crc = r->crc ? IW_MPA_ON : IW_MPA_OFF;
	o.markers = r->markers ? IW_MPA_ON : IW_MPA_FOLLOW;
	r->s[0].id = iw_create_id(r->s[0].ch, NULL);
	rng_fill(&r->rng, pd, sizeof(pd));
	snprintf(port, sizeof(port), "%u", r->proxy.port);
	if (!r->s[0].id || iw_set_mpa_opts(r->s[0].id, &o))
		return flunk(r, "client: no identifier");
	if (!post_recvs(r, &r->s[0]) || !post_recvs(r, &r->s[1]) ||
	    !post_ops(r, &r->s[0], true))
		return false;
	rc = iw_connect(r->s[0].id, "127.0.0.1", port, r->s[0].qp,
			&(struct iw_conn_param){ .ird = 8, .ord = 8,
						 .private_data = pd,
						 .private_data_len = r->pd_len });
	if (rc)
		return flunk(r, "client: iw_connect: %s", iw_strerror(rc));
	r->s[0].attached = true;
	return true;
}

/* Ends what is still up and lets every request complete. */
static bool wind_down(struct run *r)
{
	/* a Terminate on its way reaches its side before we disconnect */
	if (failing(r) && !pump(r, both_ended, 1500))
		return false;
	for (int k = 0; k < 2; k++) {
		struct side *s = &r->s[k];

		if (!s->id || s->ended)
			continue;
		iw_disconnect(s->id);
		if (!s->established) {
			/* a handshake abandoned: iw_connect(3) says no event */
			s->ended = true;
			s->final_ev = IW_CM_EVENT_CONNECT_ERROR;
			s->status = -IW_ECLOSED;
		}
	}
	if (!pump(r, both_ended, 3000))
		return false;
	/* a QP no connection took: its work flushed, as an application does */
	for (int k = 0; k < 2; k++)
		if (!r->s[k].attached)
			iw_qp_to_error(r->s[k].qp);
	if (!pump(r, everything_done, 3000))
		return false;
	for (int k = 0; k < 2; k++)
		for (int id = 0; id < MAX_WR; id++)
			if (r->s[k].posted[id] && !r->s[k].done[id])
				return flunk(r, "%s: wr_id %d never completed",
					    r->s[k].name, id);
	if (!both_ended(r))
		return flunk(r, "a side has no final event");
	/* and nothing more comes */
	usleep(20 * 1000);
	return take_completions(r, &r->s[0]) && take_completions(r, &r->s[1]);
}

static bool destroyed(struct run *r, int rc, const char *what)
{
	return rc == 0 || flunk(r, "%s: %s", what, iw_strerror(rc));
}

static void teardown(struct run *r)
{
	for (int k = 0; k < 2; k++)
		if (r->s[k].id)
			destroyed(r, iw_destroy_id(r->s[k].id), "iw_destroy_id");
	if (r->listen)
		destroyed(r, iw_destroy_id(r->listen), "listener");
	if (r->proxy_up) {
		fault_proxy_stop(&r->proxy);
		if (r->proxy.err[0])
			flunk(r, "%s", r->proxy.err);
	}
	for (int k = 0; k < 2; k++) {
		struct side *s = &r->s[k];

		if (s->qp)
			destroyed(r, iw_destroy_qp(s->qp), "iw_destroy_qp");
		for (int g = 0; g < N_REGIONS; g++)
			if (s->mr[g])
				destroyed(r, iw_dereg_mr(s->mr[g]), "iw_dereg_mr");
		if (s->cq)
			destroyed(r, iw_destroy_cq(s->cq), "iw_destroy_cq");
		if (s->pd)
			destroyed(r, iw_dealloc_pd(s->pd), "iw_dealloc_pd");
		if (s->ch)
			destroyed(r, iw_destroy_cm_channel(s->ch),
				  "iw_destroy_cm_channel");
	}
}

void fault_run(const struct fault_env *env, uint64_t seed,
	       struct fault_result *res)
{
	struct run *r = calloc(1, sizeof(*r));
	long long t0 = fault_now_ms();
	bool ok;

	memset(res, 0, sizeof(*res));
	if (!r) {
		snprintf(res->why, sizeof(res->why), "out of memory");
		res->failed = true;
		return;
	}
	r->env = env;
	r->res = res;
	r->deadline = t0 + RUN_MS;
	r->s[0].name = "client";
	r->s[1].name = "server";
	fault_plan(r, seed);
	ok = side_open(r, &r->s[0], env->client) &&
	     side_open(r, &r->s[1], env->server);
	if (ok) {
		fault_expect_final(r);
		ok = connect_sides(r) && pump(r, traffic_done, QUIET_MS) &&
		     wind_down(r);
	}
	teardown(r);
	if (ok && !res->failed)
		fault_judge(r);
	for (int k = 0; k < 2; k++) {
		free(r->s[k].arena);
		free(r->s[k].initial);
		free(r->s[k].final);
	}
	free(r);
	res->ms = fault_now_ms() - t0;
}
