// SPDX-License-Identifier: MIT
/*
 * A whole connection through the public API, the peer's octets from the
 * fuzzer.  The library runs on an event_base of ours, dispatched in this
 * thread, so an input replays the same way every time; the connection is
 * a real TCP connection over 127.0.0.1, made either way:
 *  - the library listens (iw_listen) and accepts, the fuzzer connects and
 *    sends the MPA Request;
 *  - the library connects (iw_connect) to a socket of ours, the fuzzer
 *    answers with the MPA Reply.
 * The peer's frame is one the peer's policy builds (a valid handshake) or
 * raw octets from the input.
 *
 * Input: the seed of the STag keys, the library's MPA options, the peer's
 * policy, the QP's sizes, up to eight registered regions, work posted
 * before the connection, how it ends, then chunks as in fuzz_rdmap_rx.c:
 *   ULPDU, RAW, POST, DEREG (iw_dereg_mr), CORRUPT, QP_TO_ERROR
 *   (iw_qp_to_error) and DISCONNECT (iw_disconnect).
 * The library's own octets are read and judged.
 *
 * What must hold: no octet of the regions changes that the peer may not
 * write (see arena.h); what the library sends is framed right (judge.h);
 * every posted work request completes exactly once (successful
 * unsignalled ones not at all); a connection that was established
 * reports one final event; the QP, regions and identifiers can all be
 * destroyed at the end; nothing leaks.
 */
#include "config.h" /* _GNU_SOURCE: accept4 */

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>

#include <iwarp/iwarp.h>

#include "arena.h"
#include "fuzz.h"
#include "fz_rand.h"
#include "judge.h"
#include "peer.h"

#define MAX_WR 64
#define MAX_SGE 4
#define PUMP_ROUNDS 64

enum chunk_op {
	OP_ULPDU,
	OP_RAW,
	OP_POST,
	OP_DEREG,
	OP_CORRUPT,
	OP_QP_TO_ERROR,
	OP_DISCONNECT,
};

enum end_how {
	END_FIN,	/* the peer closes its half */
	END_RST,	/* the peer resets */
	END_DISCONNECT,	/* the application calls iw_disconnect() */
	END_DESTROY,	/* the application destroys the identifier at once */
};

/* What stays from one input to the next. */
static struct {
	struct event_base *base;
	struct iw_context *ctx;
	struct iw_pd *pd, *pd2;
	struct iw_cq *cq;
	struct iw_cm_channel *ch;
	struct iw_cm_id *listen_id;
	char lib_port[8];
	int sock;	/* our listening socket, for the library's connects */
	char our_port[8];
	struct arena arena;
} env;

struct region {
	struct iw_mr *mr;
	uint8_t *base;
	uint32_t len;
	int access;
	bool ours; /* in the QP's protection domain */
};

struct wr {
	bool recv, success_ok;
	int done;
	uint64_t len;
};

struct run {
	struct fz_in in;
	struct fz_rng rng;
	bool initiator, raw_frame, sig_all;
	uint8_t end;
	size_t max_cut;
	struct iw_mpa_opts opts;
	struct mpa_policy peer_policy;
	struct iw_conn_param param;
	uint8_t pd_bytes[16];
	struct iw_qp *qp;
	struct iw_cm_id *id;
	int s; /* the peer's socket */
	bool s_dead;
	struct region reg[ARENA_SLOTS];
	unsigned int n_reg;
	struct wr wr[MAX_WR];
	unsigned int n_wr;
	unsigned int n_req, n_est, n_final;
	bool accept_pending;
	struct peer peer;
	bool framed; /* the peer's framing is known */
	/* what the library sends: its frame, then FPDUs the judge reads */
	struct judge judge;
	bool frame_seen;
	uint8_t *out;
	size_t out_len, out_cap;
};

static uint8_t fpdu[PEER_FPDU_MAX];
static uint8_t ulpdu[0x10000];

/* ---- setup once -------------------------------------------------------- */

static void port_of(int fd, char *out, size_t cap)
{
	struct sockaddr_in a;
	socklen_t l = sizeof(a);

	fz_check(getsockname(fd, (struct sockaddr *)&a, &l) == 0, "getsockname");
	snprintf(out, cap, "%u", ntohs(a.sin_port));
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct iw_context_attr attr = { 0 };
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_storage ss;
	int fl;

	(void)argc;
	(void)argv;
	evthread_use_pthreads();
	env.base = event_base_new();
	fz_check(env.base != NULL, "event_base_new");
	attr.base = env.base;
	attr.max_mr = 64;
	env.ctx = iw_open(&attr);
	env.pd = iw_alloc_pd(env.ctx);
	env.pd2 = iw_alloc_pd(env.ctx);
	env.cq = iw_create_cq(env.ctx, 1024, NULL);
	env.ch = iw_create_cm_channel(env.ctx);
	fz_check(env.ctx && env.pd && env.pd2 && env.cq && env.ch, "setup");
	fl = fcntl(iw_cm_channel_fd(env.ch), F_GETFL);
	fcntl(iw_cm_channel_fd(env.ch), F_SETFL, fl | O_NONBLOCK);
	env.listen_id = iw_create_id(env.ch, NULL);
	fz_check(env.listen_id &&
			 iw_listen(env.listen_id, "127.0.0.1", "0", 0) == 0 &&
			 iw_get_local_addr(env.listen_id, &ss) == 0,
		 "iw_listen");
	snprintf(env.lib_port, sizeof(env.lib_port), "%u",
		 ntohs(((struct sockaddr_in *)&ss)->sin_port));

	env.sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	fz_check(env.sock >= 0 &&
			 bind(env.sock, (struct sockaddr *)&a, sizeof(a)) == 0 &&
			 listen(env.sock, 16) == 0,
		 "our listening socket");
	port_of(env.sock, env.our_port, sizeof(env.our_port));
	arena_init(&env.arena);
	return 0;
}

/* ---- the peer's socket ------------------------------------------------- */

/*
 * The library's octets: first its MPA Reply (when it responds; its
 * Request, when it initiates, was read already), then FPDUs, judged once
 * its engine has started and the framing is known.
 */
static void judge_out(struct run *r, const uint8_t *p, size_t n)
{
	struct iw_qp_attr qa;

	if (r->judge.on) {
		judge_feed(&r->judge, p, n);
		return;
	}
	if (r->out_len + n > r->out_cap) {
		r->out_cap = 2 * (r->out_len + n);
		r->out = realloc(r->out, r->out_cap);
		fz_check(r->out != NULL, "out of memory");
	}
	memcpy(r->out + r->out_len, p, n);
	r->out_len += n;
	if (!r->frame_seen && !r->initiator) {
		size_t fl = mpa_frame_peek_len(r->out, r->out_len);

		if (!fl || fl > r->out_len)
			return;
		r->out_len -= fl;
		memmove(r->out, r->out + fl, r->out_len);
		r->frame_seen = true;
	}
	fz_check(iw_query_qp(r->qp, &qa) == 0, "iw_query_qp");
	if (!qa.mulpdu)
		return; /* no stream yet: nothing may follow the frame */
	judge_init(&r->judge, qa.mulpdu, qa.markers_tx, qa.crc);
	judge_feed(&r->judge, r->out, r->out_len);
	r->out_len = 0;
}

static size_t drain_peer(struct run *r)
{
	uint8_t buf[65536];
	size_t total = 0;

	while (r->s >= 0 && !r->s_dead) {
		ssize_t n = recv(r->s, buf, sizeof(buf), MSG_DONTWAIT);

		if (n > 0) {
			judge_out(r, buf, (size_t)n);
			total += (size_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		/* closed or reset: nothing more to read, nor to send */
		r->s_dead = true;
	}
	return total;
}

static void poll_cq(struct run *r)
{
	struct iw_wc wc[16];
	int n;

	while ((n = iw_poll_cq(env.cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			struct wr *w;

			fz_check(wc[i].wr_id < r->n_wr, "completion for wr_id %llu",
				 (unsigned long long)wc[i].wr_id);
			w = &r->wr[wc[i].wr_id];
			fz_check(++w->done == 1, "work request %llu completed %d times",
				 (unsigned long long)wc[i].wr_id, w->done);
			fz_check((wc[i].opcode == IW_WC_RECV) == w->recv,
				 "completion on the wrong queue");
			fz_check(wc[i].status != IW_WC_SUCCESS || w->success_ok,
				 "unsignalled work request completed with success");
			fz_check(wc[i].status != IW_WC_SUCCESS || !w->recv ||
					 wc[i].byte_len <= w->len,
				 "%u octets received into %llu", wc[i].byte_len,
				 (unsigned long long)w->len);
			if (wc[i].wc_flags & IW_WC_WITH_INV) {
				/* the peer may not write it any more */
				for (unsigned int k = 0; k < r->n_reg; k++)
					if (r->reg[k].mr &&
					    r->reg[k].mr->rkey == wc[i].invalidated_rkey)
						arena_freeze(&env.arena,
							     r->reg[k].base,
							     r->reg[k].len);
			}
		}
	}
	fz_check(n == 0, "iw_poll_cq: %d", n);
}

static void cm_events(struct run *r)
{
	struct iw_cm_event *ev;

	while (iw_get_cm_event(env.ch, &ev) == 0) {
		switch (ev->event) {
		case IW_CM_EVENT_CONNECT_REQUEST:
			fz_check(!r->initiator && ++r->n_req == 1 &&
					 ev->listen_id == env.listen_id,
				 "a second or unexpected connect request");
			r->id = ev->id;
			r->accept_pending = true;
			break;
		case IW_CM_EVENT_ESTABLISHED:
			fz_check(ev->id == r->id && ++r->n_est == 1 &&
					 !r->n_final,
				 "established twice, or after the end");
			break;
		default:
			fz_check(ev->id == r->id && ++r->n_final == 1,
				 "final event %s: %u so far",
				 iw_cm_event_str(ev->event), r->n_final);
			break;
		}
		iw_ack_cm_event(ev);
	}
	if (r->accept_pending) {
		r->accept_pending = false;
		/* a refusal sends a rejecting Reply and closes: no event */
		iw_accept(r->id, r->qp, &r->param);
	}
}

/* Lets the library run until it has nothing left to do for now. */
static void pump(struct run *r)
{
	for (int i = 0; i < PUMP_ROUNDS; i++) {
		size_t got;

		event_base_loop(env.base, EVLOOP_NONBLOCK);
		cm_events(r);
		poll_cq(r);
		got = drain_peer(r);
		if (!got && i)
			break;
	}
}

/* The peer sends, in cuts, while the library reads. */
static void peer_send(struct run *r, const uint8_t *p, size_t len)
{
	int stalls = 0;

	while (len && !r->s_dead) {
		size_t n = (size_t)fz_range(&r->rng, 1, r->max_cut);
		ssize_t w;

		if (n > len)
			n = len;
		w = send(r->s, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (++stalls == 1000) {
				struct iw_qp_attr qa;

				/* a closed connection need not read: its socket is full */
				iw_query_qp(r->qp, &qa);
				fz_check(qa.state != IW_QPS_RTS,
					 "connected, and the library never reads");
				return;
			}
			pump(r);
			continue;
		}
		if (w < 0) {
			r->s_dead = true;
			break;
		}
		p += w;
		len -= (size_t)w;
		pump(r);
	}
}

/* ---- the handshake ------------------------------------------------------ */

static void read_policy(struct fz_in *in, struct mpa_policy *p)
{
	uint8_t b = fz_u8(in);

	*p = (struct mpa_policy){
		.revision = b & 1 ? MPA_REVISION_2 : MPA_REVISION_1,
		.crc = (enum mpa_pref)((b >> 1) % 3),
		.markers = (enum mpa_pref)((b >> 3) % 3),
		.rtr_offer = (b >> 5) & MPA_RTR_ALL,
		.rtr_accept = MPA_RTR_ALL,
	};
	p->ird = fz_u8(in) % 8;
	p->ord = fz_u8(in) % 8;
}

/* The peer's frame: built from its policy, or raw from the input. */
static void peer_frame(struct run *r, const struct mpa_frame *req)
{
	uint8_t buf[MPA_FRAME_HDR_LEN + MPA_MAX_PD_LEN];
	struct mpa_frame f, rep;
	struct mpa_params out;
	size_t len;
	ssize_t n;

	if (r->raw_frame) {
		const uint8_t *p = fz_bytes(&r->in, fz_u16(&r->in) % 600, &len);

		peer_send(r, p, len);
		return;
	}
	if (req) {
		mpa_negotiate_request(&r->peer_policy, req, &rep, &out);
		f = rep;
	} else {
		mpa_request_build(&r->peer_policy, &f);
	}
	f.pd = r->pd_bytes;
	f.pd_len = fz_u8(&r->in) % sizeof(r->pd_bytes);
	n = mpa_frame_encode(&f, buf, sizeof(buf));
	fz_check(n > 0, "encoding the peer's frame: %zd", n);
	peer_send(r, buf, (size_t)n);
}

/*
 * Library responds: we connect and send the Request.  Each connection
 * comes from an address of its own in 127.1/16: the connections a peer
 * closes first wait in TIME_WAIT, and thousands a second would otherwise
 * use up the ports of one address.
 */
static void connect_to_library(struct run *r)
{
	static uint16_t next;
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons((uint16_t)atoi(env.lib_port)) };
	struct sockaddr_in from = { .sin_family = AF_INET };
	struct pollfd pfd = { .events = POLLOUT };
	int err = 0;
	socklen_t l = sizeof(err);

	fz_check(iw_set_mpa_opts(env.listen_id, &r->opts) == 0, "MPA options");
	next = next % 0xfffe + 1;
	from.sin_addr.s_addr = htonl(0x7f010000u | next);
	r->s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	fz_check(r->s >= 0 && bind(r->s, (struct sockaddr *)&from,
				   sizeof(from)) == 0,
		 "a socket from 127.1.%u.%u: %s", next >> 8, next & 0xff,
		 strerror(errno));
	if (connect(r->s, (struct sockaddr *)&a, sizeof(a)))
		fz_check(errno == EINPROGRESS, "connecting to the library: %s",
			 strerror(errno));
	pfd.fd = r->s;
	for (int i = 0; i < 5000 && poll(&pfd, 1, 1) != 1; i++)
		event_base_loop(env.base, EVLOOP_NONBLOCK);
	fz_check(getsockopt(r->s, SOL_SOCKET, SO_ERROR, &err, &l) == 0 &&
			 !err && pfd.revents == POLLOUT,
		 "connecting to the library: %s", strerror(err));
	pump(r); /* the library accepts */
	peer_frame(r, NULL);
	pump(r);
}

/* Library initiates: it connects to us, we read its Request and answer. */
static void library_connects(struct run *r)
{
	uint8_t buf[MPA_FRAME_HDR_LEN + MPA_MAX_PD_LEN];
	struct mpa_frame req;
	struct pollfd pfd = { env.sock, POLLIN, 0 };
	size_t have = 0;
	ssize_t n = -EAGAIN;

	r->id = iw_create_id(env.ch, NULL);
	fz_check(r->id && iw_set_mpa_opts(r->id, &r->opts) == 0, "identifier");
	fz_check(iw_connect(r->id, "127.0.0.1", env.our_port, r->qp,
			    &r->param) == 0,
		 "iw_connect");
	for (int i = 0; i < 5000 && poll(&pfd, 1, 1) != 1; i++)
		event_base_loop(env.base, EVLOOP_NONBLOCK);
	r->s = accept4(env.sock, NULL, NULL, SOCK_CLOEXEC);
	fz_check(r->s >= 0, "the library's connection never came: %s",
		 strerror(errno));
	/* its Request, whole */
	for (int i = 0; i < 1000 && n == -EAGAIN; i++) {
		ssize_t got;

		event_base_loop(env.base, EVLOOP_NONBLOCK);
		got = recv(r->s, buf + have, sizeof(buf) - have, MSG_DONTWAIT);
		if (got > 0)
			have += (size_t)got;
		n = mpa_frame_decode(buf, have, false, MPA_MAX_PD_LEN, &req);
	}
	fz_check(n > 0 && (size_t)n == have, "the library's Request: %zd", n);
	peer_frame(r, &req);
	pump(r);
}

/* ---- memory and work ------------------------------------------------------ */

static void setup_regions(struct run *r)
{
	r->n_reg = 1 + fz_u8(&r->in) % ARENA_SLOTS;
	for (unsigned int i = 0; i < r->n_reg; i++) {
		struct region *g = &r->reg[i];
		uint8_t how = fz_u8(&r->in);
		uint32_t len = 1 + fz_u16(&r->in) % ARENA_SLOT_BYTES;

		*g = (struct region){
			.len = len,
			.access = how & 7,
			.ours = !(how & 8),
			.base = env.arena.slot[i] +
				(how & 0x10 ? ARENA_SLOT_BYTES - len : 0),
		};
		g->mr = iw_reg_mr(g->ours ? env.pd : env.pd2, g->base, len,
				  g->access);
		fz_check(g->mr != NULL, "iw_reg_mr: %s", strerror(errno));
		peer_add_stag(&r->peer, g->mr->rkey,
			      (uint64_t)(uintptr_t)g->base);
		if (!g->ours)
			continue;
		if (g->access & IW_ACCESS_REMOTE_WRITE)
			arena_allow_write(&env.arena, g->base, len, ARENA_REGION);
	}
}

static struct iw_sge read_sge(struct run *r, uint8_t **where)
{
	struct region *g = &r->reg[fz_u8(&r->in) % r->n_reg];
	uint32_t off = fz_u16(&r->in) % (g->len + 1);
	uint32_t len = fz_u16(&r->in) % (g->len - off + 1);

	*where = g->base + off;
	return (struct iw_sge){
		.addr = (uint64_t)(uintptr_t)*where,
		.length = len,
		/* a deregistered region's key, for a refusal */
		.lkey = g->mr ? g->mr->lkey : 0x100,
	};
}

static void post_one(struct run *r)
{
	struct iw_sge sge[MAX_SGE];
	uint8_t *where[MAX_SGE];
	uint8_t how = fz_u8(&r->in);
	uint32_t n = fz_u8(&r->in) % (MAX_SGE + 1);
	struct wr *w = r->n_wr < MAX_WR ? &r->wr[r->n_wr] : NULL;
	bool recv = how & 1;
	int op = (how >> 1) & 3, rc;

	if (op == IW_WR_RDMA_READ && !recv)
		n = 1;
	for (uint32_t i = 0; i < n; i++)
		sge[i] = read_sge(r, &where[i]);
	if (!w)
		return;
	r->n_wr++; /* listed first: it may complete before the call returns */
	if (recv) {
		struct iw_recv_wr wr = { .wr_id = r->n_wr - 1, .sg_list = sge,
					 .num_sge = (int)n };

		*w = (struct wr){ .recv = true, .success_ok = true };
		rc = iw_post_recv(r->qp, &wr, NULL);
	} else {
		struct iw_send_wr wr = {
			.wr_id = r->n_wr - 1,
			.sg_list = sge,
			.num_sge = (int)n,
			.opcode = op,
			.send_flags = (how >> 3) & 7,
		};

		wr.invalidate_rkey = fz_u32(&r->in);
		wr.rdma.remote_addr = fz_u64(&r->in);
		wr.rdma.rkey = fz_u32(&r->in);

		if (op == IW_WR_RDMA_READ)
			wr.send_flags &= ~(unsigned int)IW_SEND_INLINE;
		*w = (struct wr){ .success_ok = r->sig_all ||
						(wr.send_flags & IW_SEND_SIGNALED) };
		rc = iw_post_send(r->qp, &wr, NULL);
	}
	if (rc) {
		/* refused: nothing of it may ever complete */
		poll_cq(r);
		fz_check(!w->done, "a refused work request completed");
		r->n_wr--;
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		w->len += sge[i].length;
		if (recv || op == IW_WR_RDMA_READ)
			arena_allow_write(&env.arena, where[i], sge[i].length,
					  ARENA_POSTED);
	}
}

static void dereg(struct run *r)
{
	struct region *g = &r->reg[fz_u8(&r->in) % r->n_reg];
	int rc;

	if (!g->mr)
		return;
	rc = iw_dereg_mr(g->mr);
	fz_check(rc == 0 || rc == -EBUSY, "iw_dereg_mr: %d", rc);
	if (rc)
		return;
	g->mr = NULL;
	/* the library touches it no more */
	arena_freeze(&env.arena, g->base, g->len);
	pump(r);
}

/* ---- one input ----------------------------------------------------------- */

/* Fields are read one statement each: C leaves initializers unordered. */
static void read_config(struct run *r)
{
	static const size_t cuts[] = { 70000, 1, 13, 1000 };
	struct iw_qp_init_attr qa = {
		.send_cq = env.cq,
		.recv_cq = env.cq,
		.cap = { .max_send_sge = MAX_SGE, .max_recv_sge = MAX_SGE },
	};
	uint8_t b = fz_u8(&r->in), o = fz_u8(&r->in);

	qa.cap.max_send_wr = 1 + fz_u8(&r->in) % 16;
	qa.cap.max_recv_wr = 1 + fz_u8(&r->in) % 16;
	qa.cap.max_inline_data = fz_u8(&r->in) % 129;
	r->initiator = b & 1;
	r->raw_frame = b & 2;
	r->end = (b >> 2) & 3;
	qa.sq_sig_all = r->sig_all = b & 0x10;
	r->max_cut = cuts[(b >> 5) & 3];
	iw_mpa_opts_default(&r->opts);
	r->opts.revision = o & 1 ? MPA_REVISION_2 : MPA_REVISION_1;
	r->opts.crc = (enum iw_mpa_pref)((o >> 1) % 3);
	r->opts.markers = (enum iw_mpa_pref)((o >> 3) % 3);
	r->opts.rtr = (o >> 5) & 7;
	r->opts.responder_first = fz_u8(&r->in) & 1;
	r->opts.first_fpdu_delay_us = 0; /* no timers: all in this thread */
	memset(r->pd_bytes, 0x5a, sizeof(r->pd_bytes));
	r->param.private_data = r->pd_bytes;
	r->param.ird = fz_u8(&r->in) % 8;
	r->param.ord = fz_u8(&r->in) % 8;
	r->param.private_data_len = fz_u8(&r->in) % sizeof(r->pd_bytes);
	read_policy(&r->in, &r->peer_policy);
	r->rng.s = fz_u64(&r->in);
	peer_init(&r->peer, false, false);
	setup_regions(r);
	r->qp = iw_create_qp(env.pd, &qa);
	fz_check(r->qp != NULL, "iw_create_qp: %s", strerror(errno));
	for (unsigned int i = fz_u8(&r->in) % 5; i; i--)
		post_one(r);
}

/* Once connected, the peer frames its ULPDUs as the QP receives them. */
static void learn_framing(struct run *r)
{
	struct iw_qp_attr qa;

	fz_check(iw_query_qp(r->qp, &qa) == 0, "iw_query_qp");
	peer_set_framing(&r->peer, qa.markers_rx, qa.crc);
	r->framed = true;
}

static void run_chunks(struct run *r)
{
	while (fz_left(&r->in)) {
		uint8_t op = fz_u8(&r->in);
		const uint8_t *p;
		size_t len, n;

		if (!r->framed)
			learn_framing(r);
		switch (op & 7) {
		case OP_RAW:
			p = fz_bytes(&r->in, fz_u16(&r->in), &len);
			peer_send(r, p, len);
			break;
		case OP_POST:
			post_one(r);
			pump(r);
			break;
		case OP_DEREG:
			dereg(r);
			break;
		case OP_CORRUPT:
			r->peer.corrupt = true;
			r->peer.corrupt_pos = fz_u16(&r->in);
			r->peer.corrupt_xor = fz_u8(&r->in) | 1;
			break;
		case OP_QP_TO_ERROR:
			fz_check(iw_qp_to_error(r->qp) == 0, "iw_qp_to_error");
			pump(r);
			break;
		case OP_DISCONNECT:
			if (r->id)
				fz_check(iw_disconnect(r->id) == 0,
					 "iw_disconnect");
			pump(r);
			break;
		default: /* OP_ULPDU */
			p = fz_bytes(&r->in, fz_u16(&r->in), &len);
			memcpy(ulpdu, p, len);
			n = peer_fpdu(&r->peer, op, ulpdu, len, fpdu);
			peer_send(r, fpdu, n);
			break;
		}
	}
}

/* The connection ends as the input says; everything is checked and freed. */
static void finish(struct run *r)
{
	struct linger lg = { 1, 0 };
	int rc;

	switch (r->end) {
	case END_FIN:
		shutdown(r->s, SHUT_WR);
		break;
	case END_RST:
		setsockopt(r->s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(r->s);
		r->s = -1;
		r->s_dead = true;
		break;
	case END_DISCONNECT:
		if (r->id)
			iw_disconnect(r->id);
		break;
	default:
		break;
	}
	if (r->end != END_DESTROY)
		for (int i = 0; i < 16 && !r->n_final; i++)
			pump(r);
	/* an established connection that was not destroyed has ended */
	fz_check(!r->n_est || r->n_final || r->end == END_DESTROY,
		 "established, and no final event");
	fz_check(r->judge.on || !r->out_len || (!r->frame_seen && !r->initiator),
		 "%zu octets sent after the frame, with no stream", r->out_len);
	free(r->out);
	if (r->id)
		fz_check(iw_destroy_id(r->id) == 0, "iw_destroy_id");
	r->id = NULL;
	pump(r);
	fz_check(iw_qp_to_error(r->qp) == 0, "iw_qp_to_error");
	poll_cq(r);
	for (unsigned int i = 0; i < r->n_wr; i++)
		fz_check(r->wr[i].done == 1 ||
				 (!r->wr[i].success_ok && r->wr[i].done == 0),
			 "work request %u completed %d times", i, r->wr[i].done);
	rc = iw_destroy_qp(r->qp);
	fz_check(rc == 0, "iw_destroy_qp: %d", rc);
	/* last first: the next input finds the STag indices as this one did */
	for (unsigned int i = r->n_reg; i--;) {
		if (!r->reg[i].mr)
			continue;
		rc = iw_dereg_mr(r->reg[i].mr);
		fz_check(rc == 0, "iw_dereg_mr at the end: %d", rc);
	}
	if (r->s >= 0) {
		setsockopt(r->s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(r->s);
	}
	/* identifiers the library destroys itself go now */
	event_base_loop(env.base, EVLOOP_NONBLOCK);
	arena_check(&env.arena);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct run r;

	memset(&r, 0, sizeof(r));
	r.s = -1;
	fz_in_init(&r.in, data, size);
	fz_rand_reset(fz_u64(&r.in));
	arena_reset(&env.arena);
	read_config(&r);
	if (r.initiator)
		library_connects(&r);
	else
		connect_to_library(&r);
	run_chunks(&r);
	finish(&r);
	return 0;
}
