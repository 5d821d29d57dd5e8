// SPDX-License-Identifier: MIT
/*
 * perftest's exchange connection: the first connection of a run, a QP
 * whose Sends carry perftest's messages (perf_pt_wire.c).  Each exchange
 * is one message each way: the client sends and then waits, the server
 * waits and then answers.  perftest keeps one receive posted there and
 * posts it again before it answers, so this order is what keeps it safe;
 * nothing here ever sends twice in a row.
 *
 * perftest checks neither the length nor the order of these messages, so
 * we do: a message of the wrong length is the first sign of a peer whose
 * order of exchanges is not this one, and is named as such.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/byteorder.h"
#include "perf_pt.h"

/* ---- the order of each test's syncs (perftest 4.5's mains) ----------------- */

static const struct pt_plan plans[2][3] = {
	/* bw: send, write, read */
	[PERF_BW] = {
		{ .per_qp_pre = true, .before_size = true,
		  .after_size = PT_AFTER_SWEEP, .close_sync = true },
		{ .per_qp_pre = true, .reports = true, .close_sync = true },
		{ .per_qp_pre = true, .reports = true, .close_sync = true },
	},
	/* lat: send, write, read */
	[PERF_LAT] = {
		{ .lat_pre = 4, .after_size = PT_AFTER_ALWAYS },
		{ .lat_pre = 4, .server_first = true },
		{ .lat_pre = 4, .close_sync = true },
	},
};

const struct pt_plan *pt_plan_of(const struct perf_opts *o)
{
	return o->mode <= PERF_LAT ? &plans[o->mode][o->test] : NULL;
}

/* ---- the exchange QP ----------------------------------------------------- */

static int post_slot(struct pt_run *t, uint32_t slot)
{
	struct iw_sge s = { (uintptr_t)(t->comm_buf + slot * PT_MSG_MAX),
			    PT_MSG_MAX, t->comm_mr->lkey };
	struct iw_recv_wr r = { .wr_id = PT_WR_COMM | slot, .sg_list = &s,
				.num_sge = 1 };
	int rc = iw_post_recv(t->comm_qp, &r, NULL);

	return rc ? perf_fail("post a receive: %s", iw_strerror(rc)) : 0;
}

/* Its own CQ, so that waiting for a message never takes data completions. */
int pt_comm_qp(struct pt_run *t)
{
	struct iw_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = PT_COMM_SLOTS,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = PT_MSG_MAX },
	};

	t->comm_cq = iw_create_cq(t->d.ctx, 4 + PT_COMM_SLOTS, NULL);
	t->comm_buf = calloc(PT_COMM_SLOTS, PT_MSG_MAX);
	if (!t->comm_cq || !t->comm_buf)
		return perf_fail("out of resources: %s", strerror(errno));
	t->comm_mr = iw_reg_mr(t->d.pd, t->comm_buf, PT_COMM_SLOTS * PT_MSG_MAX,
			       IW_ACCESS_LOCAL_WRITE);
	qa.send_cq = qa.recv_cq = t->comm_cq;
	t->comm_qp = t->comm_mr ? iw_create_qp(t->d.pd, &qa) : NULL;
	if (!t->comm_qp)
		return perf_fail("cannot create the exchange QP: %s",
				 strerror(errno));
	for (uint32_t i = 0; i < PT_COMM_SLOTS; i++)
		if (post_slot(t, i))
			return -1;
	return 0;
}

/* The client's exchange connection; perftest asks nothing of its MPA. */
int pt_comm_connect(struct pt_run *t)
{
	const struct perf_opts *o = t->o;
	struct iw_conn_param cp = { .ird = 1, .ord = 1 };
	struct iw_cm_event *ev;
	int rc;

	t->comm_id = iw_create_id(t->d.ch, NULL);
	if (!t->comm_id || iw_set_mpa_opts(t->comm_id, &o->mpa))
		return perf_fail("bad MPA options");
	rc = iw_connect(t->comm_id, o->host, o->port, t->comm_qp, &cp);
	if (rc)
		return perf_fail("cannot connect to %s: %s", t->d.where,
				 iw_strerror(rc));
	ev = perf_event(&t->d, 2 * o->timeout_ms);
	if (!ev)
		return perf_fail("no answer from %s within %d s", t->d.where,
				 2 * o->timeout_ms / 1000);
	rc = ev->event == IW_CM_EVENT_ESTABLISHED ? 0 : -1;
	if (rc)
		perf_explain(t->d.where, ev, &o->mpa);
	iw_ack_cm_event(ev);
	t->comm_up = !rc;
	return rc;
}

/* The server takes a run's first connection as its exchange connection. */
int pt_comm_accept(struct pt_run *t, struct iw_cm_event *ev)
{
	struct iw_conn_param cp = { .ird = 1, .ord = 1 };
	int rc;

	t->comm_id = ev->id;
	rc = iw_accept(t->comm_id, t->comm_qp, &cp);
	if (rc) {
		char line[512];

		tool_refusal(t->d.where, &ev->peer, &t->o->mpa, rc, line,
			     sizeof(line));
		return perf_fail("%s", line);
	}
	t->comm_up = true;
	return 0;
}

/* ---- messages ------------------------------------------------------------ */

static int comm_send(struct pt_run *t, const uint8_t *p, size_t len)
{
	struct iw_sge s = { (uintptr_t)p, (uint32_t)len, 0 };
	struct iw_send_wr w = {
		.wr_id = PT_WR_COMM, .sg_list = &s, .num_sge = 1,
		.opcode = IW_WR_SEND,
		.send_flags = IW_SEND_SIGNALED | IW_SEND_INLINE,
	};
	int rc = iw_post_send(t->comm_qp, &w, NULL);

	return rc ? perf_fail("post a message: %s", iw_strerror(rc)) : 0;
}

/* One exchange-QP completion: a message is kept, its receive reposted. */
static int comm_wc(struct pt_run *t, const struct iw_wc *wc)
{
	uint32_t slot = (uint32_t)(wc->wr_id & 0xff);

	/* a flush: the connection ended, which its event says better */
	if (wc->status == IW_WC_WR_FLUSH_ERR)
		return 0;
	if (wc->status != IW_WC_SUCCESS)
		return perf_wc_failed(&t->d, wc);
	if (wc->opcode != IW_WC_RECV)
		return 0;
	if (t->have_msg)
		return perf_fail("%s: two messages without an answer between "
				 "them; the peer does not keep perftest's order",
				 t->d.where);
	t->msg_len = wc->byte_len < PT_MSG_MAX ? wc->byte_len : PT_MSG_MAX;
	memcpy(t->msg, t->comm_buf + slot * PT_MSG_MAX, t->msg_len);
	t->have_msg = true;
	return post_slot(t, slot);
}

/* Takes what the exchange CQ holds, without waiting. */
static int comm_drain(struct pt_run *t)
{
	struct iw_wc wc[8];
	int n = iw_poll_cq(t->comm_cq, 8, wc);

	if (n < 0)
		return perf_fail("poll: %s", iw_strerror(n));
	for (int k = 0; k < n; k++)
		if (comm_wc(t, &wc[k]))
			return -1;
	return 0;
}

/* Whether the peer's next message is already here (data loops ask). */
bool pt_comm_pending(struct pt_run *t)
{
	return !comm_drain(t) && t->have_msg;
}

/*
 * The peer's next message, asleep on the exchange CQ: these messages are
 * few, and the other side's test may need the CPU.  Bounded by the
 * timeout, except while a patient server waits out the client's run
 * (then only a dead connection, or a --loopback client that gave up,
 * ends the wait).
 */
static int comm_wait(struct pt_run *t, const char *what)
{
	double end = tool_now_us() + t->o->timeout_ms * 1000.0;

	for (;;) {
		if (t->patient)
			end = tool_now_us() + 1e6;
		if (t->o->client_gone && atomic_load(t->o->client_gone))
			return -1;
		struct pollfd p[2] = {
			{ iw_cq_fd(t->comm_cq), POLLIN, 0 },
			{ iw_cm_channel_fd(t->d.ch), POLLIN, 0 },
		};
		int left = (int)((end - tool_now_us()) / 1000) + 1;

		iw_req_notify_cq(t->comm_cq, 0);
		if (comm_drain(t))
			return -1;
		if (t->have_msg)
			return 0;
		if (left <= 0)
			return perf_fail("%s: no %s within %d s", t->d.where,
					 what, t->o->timeout_ms / 1000);
		if (perf_wait_fds(&t->d, p, 2, left < 200 ? left : 200) < 0)
			return perf_fail("poll: %s", strerror(errno));
		if (p[0].revents)
			iw_get_cq_event(t->comm_cq, NULL);
		if (pt_take_cm(t))
			return -1;
		if (!t->comm_up && comm_drain(t) == 0 && !t->have_msg)
			return perf_fail("%s closed the exchange connection "
					 "where a %s was due",
					 t->d.where, what);
	}
}

/*
 * One exchange: @mine goes out (first, from the client), the peer's
 * message comes back into @theirs (@theirs_len octets expected).
 */
int pt_xchg(struct pt_run *t, const uint8_t *mine, size_t len, uint8_t *theirs,
	    size_t theirs_len)
{
	char what[48];

	snprintf(what, sizeof(what), "%zu-octet message", theirs_len);
	if (!t->server && comm_send(t, mine, len))
		return -1;
	if (comm_wait(t, what))
		return -1;
	t->have_msg = false;
	if (t->msg_len != theirs_len)
		return perf_fail("%s: %u octets came where perftest's order has "
				 "a %s; another perftest version, or other "
				 "options (-a, -q, --report-per-port...)?",
				 t->d.where, t->msg_len, what);
	memcpy(theirs, t->msg, theirs_len);
	return t->server ? comm_send(t, mine, len) : 0;
}

/* ---- the sequences ------------------------------------------------------- */

/*
 * Version, system data and MTU, each as the other side's version asks:
 * perftest decides each by the version it received.
 */
int pt_prefix(struct pt_run *t)
{
	uint8_t mine[PT_VERSION_LEN], theirs[PT_VERSION_LEN];
	long page = sysconf(_SC_PAGESIZE);
	size_t mtu_len;

	pt_version_encode(mine);
	if (pt_xchg(t, mine, PT_VERSION_LEN, theirs, PT_VERSION_LEN))
		return -1;
	t->rem_version = pt_version_decode(theirs, t->rem_version_text,
					   sizeof(t->rem_version_text));
	t->cycle_buffer = page > 0 ? (uint32_t)page : 4096;
	t->cache_line = PT_CACHE_LINE;
	if (pt_has_sys_data(t->rem_version)) {
		put_be32(mine, t->cycle_buffer);
		if (pt_xchg(t, mine, 4, theirs, 4))
			return -1;
		if (get_be32(theirs) > t->cycle_buffer &&
		    get_be32(theirs) <= (1u << 24))
			t->cycle_buffer = get_be32(theirs);
		put_be32(mine, t->cache_line);
		if (pt_xchg(t, mine, 4, theirs, 4))
			return -1;
		if (get_be32(theirs) > t->cache_line &&
		    get_be32(theirs) <= 4096)
			t->cache_line = get_be32(theirs);
	}
	if (t->rem_version < 5.1)
		return 0;
	mtu_len = pt_mtu_len(t->rem_version);
	memset(mine, 0, sizeof(mine));
	memcpy(mine, PT_MTU_WORD, sizeof(PT_MTU_WORD) - 1);
	return pt_xchg(t, mine, mtu_len, theirs, mtu_len);
}

/* The sync: our destination for QP @qp out, the peer's for it in. */
int pt_sync(struct pt_run *t, uint32_t qp)
{
	uint8_t mine[PT_DEST_LEN], theirs[PT_DEST_LEN];

	pt_dest_encode(&t->my[qp], mine);
	if (pt_xchg(t, mine, PT_DEST_LEN, theirs, PT_DEST_LEN))
		return -1;
	pt_dest_decode(theirs, &t->rem[qp]);
	return 0;
}

/* The syncs around the data connections: nothing is known yet, zeros go. */
int pt_sync_zero(struct pt_run *t)
{
	uint8_t mine[PT_DEST_LEN] = { 0 }, theirs[PT_DEST_LEN];

	return pt_xchg(t, mine, PT_DEST_LEN, theirs, PT_DEST_LEN);
}

/*
 * From the data connections to the first size: bw tests sync every QP,
 * every QP again, then once more; lat tests (one QP) a fixed count.
 */
int pt_pre_syncs(struct pt_run *t)
{
	if (!t->plan->per_qp_pre) {
		for (uint8_t i = 0; i < t->plan->lat_pre; i++)
			if (pt_sync(t, 0))
				return -1;
		return 0;
	}
	for (int round = 0; round < 2; round++)
		for (uint32_t i = 0; i < t->d.n_ep; i++)
			if (pt_sync(t, i))
				return -1;
	return pt_sync(t, 0);
}

/* The bw report, field by field, after the sync that follows the run. */
int pt_reports(struct pt_run *t, const struct pt_report *mine,
	       struct pt_report *theirs)
{
	size_t il = pt_iters_len(t->rem_version);
	uint8_t m[5][PT_REPORT_FIELD_LEN], r[5][PT_REPORT_FIELD_LEN];
	size_t len[5] = { 8, il, 8, 8, 8 };

	pt_u64_encode(mine->size, m[0], 8);
	pt_u64_encode(mine->iters, m[1], il);
	pt_double_encode(mine->bw_peak, m[2]);
	pt_double_encode(mine->bw_avg, m[3]);
	pt_double_encode(mine->msg_rate, m[4]);
	for (int i = 0; i < 5; i++)
		if (pt_xchg(t, m[i], len[i], r[i], len[i]))
			return -1;
	*theirs = (struct pt_report){
		.size = pt_u64_decode(r[0], 8),
		.iters = pt_u64_decode(r[1], il),
		.bw_peak = pt_double_decode(r[2]),
		.bw_avg = pt_double_decode(r[3]),
		.msg_rate = pt_double_decode(r[4]),
	};
	return 0;
}
