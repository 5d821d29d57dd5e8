// SPDX-License-Identifier: MIT
/*
 * End to end through the public API over 127.0.0.1: every operation at
 * every size in every framing, two processes, 256 connections at once,
 * and streams that die mid-transfer.  Every payload octet is verified and
 * every work request must complete exactly once.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "e2e.h"
#include "lib/byteorder.h"

static const size_t sizes[] = { 0, 1, 3, 511, 512, 513, 4095, 4096,
				65535, 65536, 1 << 20, 16 << 20 };
#define N_SIZES (sizeof(sizes) / sizeof(sizes[0]))
#define REGION ((size_t)17 << 20) /* one 16 MiB message plus gaps */
#define MAX_SGE 4

/* Cuts @len octets at @base into @k pieces with 8-octet gaps between. */
static int sges_at(struct iw_sge *sge, int k, uint8_t *base, size_t len,
		   uint32_t lkey)
{
	size_t off = 0, left = len;

	for (int i = 0; i < k; i++) {
		size_t piece = i + 1 == k ? left : left / (size_t)(k - i);

		sge[i] = (struct iw_sge){ (uintptr_t)(base + off),
					  (uint32_t)piece, lkey };
		off += piece + 8;
		left -= piece;
	}
	return k;
}

/* The octets a scattered list holds, in order, must equal @want. */
static void check_sges(const struct iw_sge *sge, int k, const uint8_t *want,
		       size_t len)
{
	size_t off = 0;

	for (int i = 0; i < k && off < len; i++) {
		size_t n = sge[i].length < len - off ? sge[i].length : len - off;

		require(memcmp((void *)(uintptr_t)sge[i].addr, want + off, n) == 0,
			"piece %d of %zu octets differs", i, n);
		off += n;
	}
	require(off == len, "pieces hold %zu of %zu octets", off, len);
}

static void post_recv(struct e2e_side *s, uint64_t id, struct iw_sge *sge,
		      int k)
{
	struct iw_recv_wr r = { .wr_id = id, .sg_list = sge, .num_sge = k };

	ck_assert_int_eq(iw_post_recv(s->qp, &r, NULL), 0);
}

static void post_send(struct e2e_side *s, uint64_t id, enum iw_wr_opcode op,
		      struct iw_sge *sge, int k, uint64_t raddr, uint32_t rkey)
{
	struct iw_send_wr w = {
		.wr_id = id, .sg_list = sge, .num_sge = k, .opcode = op,
		.send_flags = IW_SEND_SIGNALED,
		.rdma = { raddr, rkey },
	};

	ck_assert_int_eq(iw_post_send(s->qp, &w, NULL), 0);
}

static void expect_wc(const struct iw_wc *wc, uint64_t id,
		      enum iw_wc_opcode op, size_t len)
{
	ck_assert_msg(wc->status == IW_WC_SUCCESS, "wr %llu: %s (%s)",
		      (unsigned long long)wc->wr_id,
		      iw_wc_status_str(wc->status), iw_strerror(wc->err));
	ck_assert_uint_eq(wc->wr_id, id);
	ck_assert_int_eq(wc->opcode, op);
	if (op == IW_WC_RECV || op == IW_WC_RDMA_READ)
		ck_assert_uint_eq(wc->byte_len, len);
}

/* A Send from @a to @b of @len octets in @ka pieces, into @kb pieces. */
static void do_send(struct e2e_side *a, uint8_t *src, struct e2e_side *b,
		    uint8_t *dst, size_t len, int ka, int kb, uint32_t seed)
{
	struct iw_sge s[MAX_SGE], r[MAX_SGE];
	struct iw_wc wc;
	uint8_t *want = malloc(len + 1);

	ck_assert_ptr_nonnull(want);
	e2e_fill(src, REGION, seed);
	sges_at(s, ka, src, len, a->mr->lkey);
	sges_at(r, kb, dst, len + 16, b->mr->lkey);
	memset(dst, 0, len + 64);
	{
		size_t off = 0;

		for (int i = 0; i < ka; i++) {
			memcpy(want + off, (void *)(uintptr_t)s[i].addr,
			       s[i].length);
			off += s[i].length;
		}
	}
	post_recv(b, seed, r, kb);
	post_send(a, seed, IW_WR_SEND, s, ka, 0, 0);
	e2e_poll(a->cq, &wc, 1, E2E_WAIT_MS);
	expect_wc(&wc, seed, IW_WC_SEND, len);
	e2e_poll(b->cq, &wc, 1, E2E_WAIT_MS);
	expect_wc(&wc, seed, IW_WC_RECV, len);
	check_sges(r, kb, want, len);
	free(want);
}

/* RFC 6581 / config: _i bit 0 markers, bit 1 CRC, _i >> 2 the mode. */
static const char *const mode_names[] = { "rev 1", "rev 2", "rev 2 RTR send",
					  "rev 2 RTR write", "rev 2 RTR read" };

START_TEST(every_operation_size_and_framing_moves_verified_data)
{
	static const uint8_t rtr[] = { 0, 0, IW_RTR_SEND, IW_RTR_WRITE,
				       IW_RTR_READ };
	int mode = _i >> 2;
	struct e2e_opts o;
	struct iw_qp_attr qa;
	struct e2e e;

	e2e_opts_default(&o);
	o.buf_len = 3 * REGION;
	o.max_sge = MAX_SGE;
	if (_i & 1)
		o.client.markers = o.server.markers = IW_MPA_ON;
	if (_i & 2)
		o.client.crc = IW_MPA_ON;
	o.client.revision = mode == 0 ? 1 : 2;
	o.client.rtr = rtr[mode];
	printf("config %d: markers %s, CRC %s, %s\n", _i, _i & 1 ? "on" : "off",
	       _i & 2 ? "on" : "off", mode_names[mode]);
	e2e_connect(&e, &o);

	ck_assert_int_eq(iw_query_qp(e.c.qp, &qa), 0);
	ck_assert_int_eq(qa.state, IW_QPS_RTS);
	ck_assert_uint_eq(qa.mpa_revision, o.client.revision);
	ck_assert_uint_eq(qa.crc, !!(_i & 2));
	ck_assert_uint_eq(qa.markers_tx, !!(_i & 1));
	ck_assert_uint_eq(qa.markers_rx, !!(_i & 1));
	ck_assert_uint_eq(qa.rtr, rtr[mode]);

	for (size_t z = 0; z < N_SIZES; z++) {
		size_t len = sizes[z];
		int k = (int)(z % MAX_SGE) + 1, k2 = (int)((z + 1) % MAX_SGE) + 1;
		uint32_t seed = (uint32_t)(_i * 1000 + z * 10);
		uint8_t *c_src = e.c.buf, *c_sink = e.c.buf + REGION,
			*c_recv = e.c.buf + 2 * REGION;
		uint8_t *s_recv = e.s.buf, *s_target = e.s.buf + REGION,
			*s_source = e.s.buf + 2 * REGION;
		struct iw_sge sg[MAX_SGE], fence;
		struct iw_wc wc[2];

		/* Send, client to server and back */
		do_send(&e.c, c_src, &e.s, s_recv, len, k, k2, seed + 1);
		do_send(&e.s, s_source, &e.c, c_recv, len, k2, k, seed + 2);

		/* RDMA Write, then a zero-length Send: its arrival proves
		 * the Write was placed (messages are placed in order) */
		e2e_fill(c_src, REGION, seed + 3);
		memset(s_target, 0, len + 64);
		sges_at(sg, k, c_src, len, e.c.mr->lkey);
		fence = (struct iw_sge){ (uintptr_t)s_recv, 0, e.s.mr->lkey };
		post_recv(&e.s, seed + 4, &fence, 1);
		post_send(&e.c, seed + 3, IW_WR_RDMA_WRITE, sg, k,
			  (uintptr_t)s_target, e.s.mr->rkey);
		post_send(&e.c, seed + 4, IW_WR_SEND, &fence, 0, 0, 0);
		e2e_poll(e.c.cq, wc, 2, E2E_WAIT_MS);
		expect_wc(&wc[0], seed + 3, IW_WC_RDMA_WRITE, len);
		expect_wc(&wc[1], seed + 4, IW_WC_SEND, 0);
		e2e_poll(e.s.cq, wc, 1, E2E_WAIT_MS);
		expect_wc(&wc[0], seed + 4, IW_WC_RECV, 0);
		{
			size_t off = 0;

			for (int i = 0; i < k; i++) {
				require(memcmp(s_target + off,
					       (void *)(uintptr_t)sg[i].addr,
					       sg[i].length) == 0,
					"write of %zu: piece %d differs", len, i);
				off += sg[i].length;
			}
			require(s_target[len] == 0, "octet after the write changed");
		}

		/* RDMA Read into one sink */
		e2e_fill(s_source, REGION, seed + 5);
		memset(c_sink, 0, len + 64);
		sg[0] = (struct iw_sge){ (uintptr_t)c_sink, (uint32_t)len,
					 e.c.mr->lkey };
		post_send(&e.c, seed + 5, IW_WR_RDMA_READ, sg, 1,
			  (uintptr_t)s_source, e.s.mr->rkey);
		e2e_poll(e.c.cq, wc, 1, E2E_WAIT_MS);
		expect_wc(&wc[0], seed + 5, IW_WC_RDMA_READ, len);
		require(memcmp(c_sink, s_source, len) == 0,
			"read of %zu octets differs", len);
		require(c_sink[len] == 0, "octet after the read sink changed");
	}
	ck_assert_int_eq(iw_disconnect(e.c.id), 0);
	e2e_expect(e.c.ch, IW_CM_EVENT_DISCONNECTED, E2E_WAIT_MS);
	e2e_expect(e.s.ch, IW_CM_EVENT_DISCONNECTED, E2E_WAIT_MS);
	e2e_teardown(&e);
}
END_TEST

/* ---- two processes --------------------------------------------------- */

#define SRV_FAIL(...)                                        \
	do {                                                 \
		fprintf(stderr, "server: " __VA_ARGS__);     \
		fputc('\n', stderr);                         \
		_exit(1);                                    \
	} while (0)

/*
 * The two-process configurations, each set on both sides: markers alone,
 * CRC alone, both, MPA revision 1, and each peer-to-peer RTR type.
 */
static const struct proc_cfg {
	const char *name;
	uint8_t markers, crc, revision, rtr;
} proc_cfgs[] = {
	{ "markers", 1, 0, 2, 0 },
	{ "CRC", 0, 1, 2, 0 },
	{ "markers and CRC", 1, 1, 2, 0 },
	{ "MPA revision 1", 0, 0, 1, 0 },
	{ "RTR send", 0, 0, 2, IW_RTR_SEND },
	{ "RTR write", 0, 0, 2, IW_RTR_WRITE },
	{ "RTR read", 0, 0, 2, IW_RTR_READ },
};
#define N_PROC_CFGS (sizeof(proc_cfgs) / sizeof(proc_cfgs[0]))

/* Sizes of the Sends, Writes and Reads between the processes. */
static const size_t proc_sizes[] = { 0, 1, 4096, 65536, 1 << 20 };
#define N_PROC_SIZES (sizeof(proc_sizes) / sizeof(proc_sizes[0]))
/* One slot per size, with room behind the message */
#define SLOT (((size_t)1 << 20) + 4096)
#define PROC_AREA (N_PROC_SIZES * SLOT)

/* What each message carries: the patterns both processes compute. */
#define SEED_SEND 0
#define SEED_WRITE 3000
#define SEED_READ 5000

static void mpa_opts_for(struct iw_mpa_opts *m, const struct proc_cfg *c)
{
	iw_mpa_opts_default(m);
	m->markers = c->markers ? IW_MPA_ON : IW_MPA_OFF;
	m->crc = c->crc ? IW_MPA_ON : IW_MPA_OFF;
	m->revision = c->revision;
	m->rtr = c->rtr;
}

/* The server's private data in its Reply: where the client may write/read. */
struct advert {
	uint8_t target[8], source[8], rkey[4];
};

static void srv_wait(struct iw_cq *cq, struct iw_wc *wc, int n)
{
	if (e2e_poll_upto(cq, wc, n, E2E_WAIT_MS) != n)
		SRV_FAIL("completions missing");
	for (int i = 0; i < n; i++)
		if (wc[i].status != IW_WC_SUCCESS)
			SRV_FAIL("completion %d: %s", i,
				 iw_wc_status_str(wc[i].status));
}

/*
 * The server process, in configuration @cfg: takes a Send of every size
 * (checking each against the pattern the client used), lets the client
 * Write into one area of its memory and Read from another, and answers
 * the final Send with a Send of its verdict on the Writes.  With @die it
 * kills itself after the first message instead.
 */
static int server_process(int port_fd, bool die, const struct proc_cfg *cfg)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct iw_cm_id *l;
	struct iw_cm_event *ev;
	struct advert ad;
	char port[16];
	uint8_t *want;
	struct iw_wc wc;
	struct iw_sge r;
	struct iw_conn_param p;
	uint8_t *recv_area, *target, *source;

	e2e_opts_default(&o);
	mpa_opts_for(&o.server, cfg);
	o.buf_len = 3 * PROC_AREA;
	o.depth = 2 * N_PROC_SIZES;
	e2e_side_open(&s, &o);
	recv_area = s.buf;
	target = s.buf + PROC_AREA;
	source = s.buf + 2 * PROC_AREA;
	want = malloc(SLOT);
	l = iw_create_id(s.ch, NULL);
	if (!want || !l || iw_set_mpa_opts(l, &o.server) ||
	    iw_listen(l, "127.0.0.1", "0", 4))
		SRV_FAIL("cannot listen");
	e2e_port(l, port, sizeof(port));
	if (write(port_fd, port, sizeof(port)) != sizeof(port))
		SRV_FAIL("cannot report the port");
	ev = e2e_event(s.ch, E2E_WAIT_MS);
	if (ev->event != IW_CM_EVENT_CONNECT_REQUEST)
		SRV_FAIL("no connect request");
	s.id = ev->id;
	iw_ack_cm_event(ev);
	put_be64(ad.target, (uintptr_t)target);
	put_be64(ad.source, (uintptr_t)source);
	put_be32(ad.rkey, s.mr->rkey);
	memset(target, 0, PROC_AREA);
	for (size_t z = 0; z < N_PROC_SIZES; z++)
		e2e_fill(source + z * SLOT, SLOT, SEED_READ + (uint32_t)z);
	/* a receive for every Send before any can come: the client does not
	 * wait for us between them (a Send completes when handed to TCP) */
	for (size_t z = 0; z < N_PROC_SIZES; z++) {
		/* about to die: any Send fits, so none is refused */
		r = (struct iw_sge){ (uintptr_t)recv_area + (die ? 0 : z * SLOT),
				     die ? (uint32_t)PROC_AREA
					 : (uint32_t)proc_sizes[z],
				     s.mr->lkey };
		post_recv(&s, z, &r, 1);
	}
	r = (struct iw_sge){ (uintptr_t)s.buf, 1, s.mr->lkey };
	post_recv(&s, N_PROC_SIZES, &r, 1);
	p = (struct iw_conn_param){ &ad, sizeof(ad), 8, 8 };
	if (iw_accept(s.id, s.qp, &p))
		SRV_FAIL("accept failed");
	if (e2e_expect(s.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS))
		SRV_FAIL("not established");
	for (size_t z = 0; z < N_PROC_SIZES; z++) {
		srv_wait(s.cq, &wc, 1);
		if (die)
			raise(SIGKILL);
		if (wc.wr_id != z || wc.byte_len != proc_sizes[z])
			SRV_FAIL("send %zu: wr %llu, %u octets", z,
				 (unsigned long long)wc.wr_id, wc.byte_len);
		e2e_fill(want, proc_sizes[z], SEED_SEND + (uint32_t)z);
		if (memcmp(recv_area + z * SLOT, want, proc_sizes[z]))
			SRV_FAIL("send of %zu octets differs", proc_sizes[z]);
	}
	/* the last Send says the Writes are in: check them, answer */
	srv_wait(s.cq, &wc, 1);
	s.buf[0] = 1;
	for (size_t z = 0; z < N_PROC_SIZES; z++) {
		e2e_fill(want, proc_sizes[z], SEED_WRITE + (uint32_t)z);
		if (memcmp(target + z * SLOT, want, proc_sizes[z]) ||
		    target[z * SLOT + proc_sizes[z]] != 0) {
			fprintf(stderr, "server: write of %zu octets differs\n",
				proc_sizes[z]);
			s.buf[0] = 0;
		}
	}
	r = (struct iw_sge){ (uintptr_t)s.buf, 1, s.mr->lkey };
	post_send(&s, 2, IW_WR_SEND, &r, 1, 0, 0);
	srv_wait(s.cq, &wc, 1);
	if (e2e_expect(s.ch, IW_CM_EVENT_DISCONNECTED, E2E_WAIT_MS))
		SRV_FAIL("bad disconnect");
	iw_destroy_id(l);
	e2e_side_close(&s);
	free(want);
	return 0;
}

static pid_t start_server(char *port, bool die, const struct proc_cfg *cfg)
{
	int fds[2];
	struct pollfd p;
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		_exit(server_process(fds[1], die, cfg));
	}
	close(fds[1]);
	p = (struct pollfd){ fds[0], POLLIN, 0 };
	ck_assert_msg(poll(&p, 1, E2E_WAIT_MS) == 1, "server never listened");
	ck_assert_int_eq(read(fds[0], port, 16), 16);
	close(fds[0]);
	return pid;
}

static int wait_child(pid_t pid)
{
	int status = 0;

	for (int i = 0; i < 200; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		usleep(50000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	ck_abort_msg("the server process did not finish");
	return status;
}

/*
 * Two processes, one configuration of proc_cfgs each (_i): Sends, RDMA
 * Writes and RDMA Reads of every size in proc_sizes, every octet checked
 * by the side that receives it, and the framing checked to be the one
 * asked for.
 */
START_TEST(two_processes_move_verified_data)
{
	const struct proc_cfg *cfg = &proc_cfgs[_i];
	struct e2e_opts o;
	struct e2e_side c;
	struct iw_sge sg[MAX_SGE];
	uint8_t *pattern = malloc(SLOT);
	struct iw_cm_event *ev;
	struct iw_conn_param cp = { .ird = 8, .ord = 8 };
	struct iw_qp_attr qa;
	struct iw_sge r;
	struct iw_wc wc[2];
	uint64_t target, source;
	uint32_t rkey;
	char port[16];
	pid_t pid = start_server(port, false, cfg);
	int status;

	printf("two processes: %s\n", cfg->name);
	e2e_opts_default(&o);
	mpa_opts_for(&o.client, cfg);
	o.buf_len = SLOT + PROC_AREA;
	o.max_sge = MAX_SGE;
	ck_assert_ptr_nonnull(pattern);
	e2e_side_open(&c, &o);
	c.id = iw_create_id(c.ch, NULL);
	ck_assert_int_eq(iw_set_mpa_opts(c.id, &o.client), 0);
	ck_assert_int_eq(iw_connect(c.id, "127.0.0.1", port, c.qp, &cp), 0);
	ev = e2e_event(c.ch, E2E_WAIT_MS);
	ck_assert_msg(ev->event == IW_CM_EVENT_ESTABLISHED, "%s: %s",
		      iw_cm_event_str(ev->event), iw_strerror(ev->status));
	ck_assert_uint_eq(ev->private_data_len, sizeof(struct advert));
	target = get_be64(ev->private_data);
	source = get_be64((const uint8_t *)ev->private_data + 8);
	rkey = get_be32((const uint8_t *)ev->private_data + 16);
	iw_ack_cm_event(ev);
	/* the connection is framed as asked, both ways */
	ck_assert_int_eq(iw_query_qp(c.qp, &qa), 0);
	ck_assert_uint_eq(qa.mpa_revision, cfg->revision);
	ck_assert_uint_eq(qa.crc, cfg->crc);
	ck_assert_uint_eq(qa.markers_tx, cfg->markers);
	ck_assert_uint_eq(qa.markers_rx, cfg->markers);
	ck_assert_uint_eq(qa.rtr, cfg->rtr);

	for (size_t z = 0; z < N_PROC_SIZES; z++) {
		int k = (int)(z % MAX_SGE) + 1;
		size_t off = 0;

		/* the server checks the pattern; we send it scattered */
		e2e_fill(pattern, proc_sizes[z], SEED_SEND + (uint32_t)z);
		sges_at(sg, k, c.buf, proc_sizes[z], c.mr->lkey);
		for (int i = 0; i < k; i++) {
			memcpy((void *)(uintptr_t)sg[i].addr, pattern + off,
			       sg[i].length);
			off += sg[i].length;
		}
		post_send(&c, z, IW_WR_SEND, sg, k, 0, 0);
		e2e_poll(c.cq, wc, 1, E2E_WAIT_MS);
		expect_wc(&wc[0], z, IW_WC_SEND, proc_sizes[z]);
	}
	for (size_t z = 0; z < N_PROC_SIZES; z++) {
		e2e_fill(c.buf, proc_sizes[z], SEED_WRITE + (uint32_t)z);
		sg[0] = (struct iw_sge){ (uintptr_t)c.buf,
					 (uint32_t)proc_sizes[z], c.mr->lkey };
		post_send(&c, 100 + z, IW_WR_RDMA_WRITE, sg, 1,
			  target + z * SLOT, rkey);
		e2e_poll(c.cq, wc, 1, E2E_WAIT_MS);
		expect_wc(&wc[0], 100 + z, IW_WC_RDMA_WRITE, proc_sizes[z]);
	}
	for (size_t z = 0; z < N_PROC_SIZES; z++) {
		uint8_t *sink = c.buf + SLOT + z * SLOT;

		memset(sink, 0, SLOT);
		sg[0] = (struct iw_sge){ (uintptr_t)sink,
					 (uint32_t)proc_sizes[z], c.mr->lkey };
		post_send(&c, 200 + z, IW_WR_RDMA_READ, sg, 1,
			  source + z * SLOT, rkey);
		e2e_poll(c.cq, wc, 1, E2E_WAIT_MS);
		expect_wc(&wc[0], 200 + z, IW_WC_RDMA_READ, proc_sizes[z]);
		e2e_fill(pattern, proc_sizes[z], SEED_READ + (uint32_t)z);
		require(memcmp(sink, pattern, proc_sizes[z]) == 0,
			"read of %zu octets differs", proc_sizes[z]);
		require(sink[proc_sizes[z]] == 0,
			"read of %zu octets overran its sink", proc_sizes[z]);
	}
	/* ask for the verdict on the Writes */
	r = (struct iw_sge){ (uintptr_t)c.buf, 1, c.mr->lkey };
	c.buf[0] = 0;
	post_recv(&c, 300, &r, 1);
	post_send(&c, 301, IW_WR_SEND, &r, 0, 0, 0);
	e2e_poll(c.cq, wc, 2, E2E_WAIT_MS);
	ck_assert_int_eq(wc[0].status, IW_WC_SUCCESS);
	ck_assert_int_eq(wc[1].status, IW_WC_SUCCESS);
	ck_assert_msg(c.buf[0] == 1, "the server found a Write damaged");
	ck_assert_int_eq(iw_disconnect(c.id), 0);
	e2e_expect(c.ch, IW_CM_EVENT_DISCONNECTED, E2E_WAIT_MS);
	e2e_side_close(&c);
	status = wait_child(pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "server process failed (status %d)", status);
	free(pattern);
}
END_TEST

/* ---- streams that die ------------------------------------------------- */

/* Every posted request must come back exactly once: success or flush. */
static void expect_each_once(struct iw_cq *cq, uint64_t first, int n,
			     int *flushed)
{
	struct iw_wc *wc = calloc((size_t)n + 1, sizeof(*wc));
	uint8_t *seen = calloc((size_t)n, 1);
	int got;

	ck_assert_ptr_nonnull(wc);
	ck_assert_ptr_nonnull(seen);
	got = e2e_poll_upto(cq, wc, n, E2E_WAIT_MS);
	ck_assert_msg(got == n, "%d of %d work requests completed", got, n);
	ck_assert_int_eq(iw_poll_cq(cq, 1, wc + n), 0); /* and no more */
	*flushed = 0;
	for (int i = 0; i < n; i++) {
		uint64_t k = wc[i].wr_id - first;

		ck_assert_msg(k < (uint64_t)n && !seen[k],
			      "wr %llu completed twice or unknown",
			      (unsigned long long)wc[i].wr_id);
		seen[k] = 1;
		ck_assert_msg(wc[i].status == IW_WC_SUCCESS ||
				      wc[i].status == IW_WC_WR_FLUSH_ERR,
			      "wr %llu: %s", (unsigned long long)wc[i].wr_id,
			      iw_wc_status_str(wc[i].status));
		*flushed += wc[i].status == IW_WC_WR_FLUSH_ERR;
	}
	free(wc);
	free(seen);
}

/* The receiver hangs up while Writes and Sends stream in. */
START_TEST(disconnect_mid_transfer_completes_everything_once)
{
	struct e2e_opts o;
	struct e2e e;
	struct iw_sge sg;
	int flushed, n = 0;

	e2e_opts_default(&o);
	o.depth = 256;
	o.buf_len = 64 << 20;
	e2e_connect(&e, &o);
	for (int i = 0; i < 64; i++) {
		sg = (struct iw_sge){ (uintptr_t)e.s.buf + ((size_t)i << 20),
				      1 << 20, e.s.mr->lkey };
		post_recv(&e.s, 1000 + (uint64_t)i, &sg, 1);
	}
	for (int i = 0; i < 64; i++) {
		sg = (struct iw_sge){ (uintptr_t)e.c.buf + ((size_t)i << 20),
				      1 << 20, e.c.mr->lkey };
		post_send(&e.c, (uint64_t)n++, IW_WR_RDMA_WRITE, &sg, 1,
			  (uintptr_t)e.s.buf, e.s.mr->rkey);
		post_send(&e.c, (uint64_t)n++, IW_WR_SEND, &sg, 1, 0, 0);
	}
	ck_assert_int_eq(iw_disconnect(e.s.id), 0);
	expect_each_once(e.c.cq, 0, n, &flushed);
	printf("disconnect: %d of %d client requests flushed\n", flushed, n);
	expect_each_once(e.s.cq, 1000, 64, &flushed);
	printf("disconnect: %d of 64 server receives flushed\n", flushed);
	e2e_expect(e.s.ch, IW_CM_EVENT_DISCONNECTED, E2E_WAIT_MS);
	{
		struct iw_cm_event *ev = e2e_event(e.c.ch, E2E_WAIT_MS);

		ck_assert_msg(ev->event == IW_CM_EVENT_DISCONNECTED ||
				      ev->event == IW_CM_EVENT_ERROR,
			      "client got %s", iw_cm_event_str(ev->event));
		iw_ack_cm_event(ev);
	}
	/* work posted now completes at once, flushed */
	sg = (struct iw_sge){ (uintptr_t)e.c.buf, 8, e.c.mr->lkey };
	post_send(&e.c, 5000, IW_WR_SEND, &sg, 1, 0, 0);
	expect_each_once(e.c.cq, 5000, 1, &flushed);
	ck_assert_int_eq(flushed, 1);
	e2e_teardown(&e);
}
END_TEST

START_TEST(peer_death_mid_transfer_completes_everything_once)
{
	struct e2e_opts o;
	struct e2e_side c;
	struct iw_cm_event *ev;
	struct iw_conn_param cp = { .ird = 8, .ord = 8 };
	struct iw_sge sg;
	char port[16];
	pid_t pid = start_server(port, true, &proc_cfgs[0]);
	int flushed, status, n = 0;

	e2e_opts_default(&o);
	o.depth = 256;
	o.buf_len = 16 << 20;
	e2e_side_open(&c, &o);
	c.id = iw_create_id(c.ch, NULL);
	ck_assert_int_eq(iw_connect(c.id, "127.0.0.1", port, c.qp, &cp), 0);
	e2e_expect(c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	/* the first Send is what the server checks before it dies */
	sg = (struct iw_sge){ (uintptr_t)c.buf, 0, c.mr->lkey };
	post_send(&c, (uint64_t)n++, IW_WR_SEND, &sg, 1, 0, 0);
	for (int i = 0; i < 100; i++) {
		sg = (struct iw_sge){ (uintptr_t)c.buf, 4 << 20, c.mr->lkey };
		post_send(&c, (uint64_t)n++, IW_WR_SEND, &sg, 1, 0, 0);
	}
	expect_each_once(c.cq, 0, n, &flushed);
	printf("peer death: %d of %d requests flushed\n", flushed, n);
	ck_assert_int_gt(flushed, 0);
	ev = e2e_event(c.ch, E2E_WAIT_MS);
	ck_assert_msg(ev->event == IW_CM_EVENT_ERROR ||
			      ev->event == IW_CM_EVENT_DISCONNECTED,
		      "got %s", iw_cm_event_str(ev->event));
	printf("peer death: %s (%s)\n", iw_cm_event_str(ev->event),
	       iw_strerror(ev->status));
	iw_ack_cm_event(ev);
	e2e_side_close(&c);
	status = wait_child(pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}
END_TEST

/*
 * A disconnect in the middle of a real transfer: Writes, an RDMA Read and
 * Sends are under way when the client hangs up.  The server's progress
 * runs on an event_base the test stops dispatching once connected, so the
 * server answers nothing: the Read is certainly outstanding when the
 * client disconnects, and some Writes have certainly completed (handed
 * to TCP).  Every request completes exactly once; those that had not
 * completed are flushed, the Read among them.
 */
START_TEST(disconnect_with_a_read_outstanding_completes_everything_once)
{
	enum { WRITES = 8, SENDS = 8, N = WRITES + 1 + SENDS, READ_ID = WRITES };
	struct e2e_opts o;
	struct e2e e;
	struct event_base *base;
	struct iw_wc wc[N + 1];
	struct iw_sge sg;
	pthread_t loop;
	uint8_t seen[N] = { 0 };
	int got, ok = 0, flushed = 0;

	base = e2e_base_start(&loop);
	e2e_opts_default(&o);
	o.buf_len = 16 << 20;
	memset(&e, 0, sizeof(e));
	e2e_side_open(&e.c, &o);
	e2e_side_open_on(&e.s, &o, base);
	e2e_request(&e, &o);
	for (int i = 0; i < SENDS; i++) {
		sg = (struct iw_sge){ (uintptr_t)e.s.buf + ((size_t)i << 20),
				      1 << 20, e.s.mr->lkey };
		post_recv(&e.s, 100 + (uint64_t)i, &sg, 1);
	}
	ck_assert_int_eq(iw_accept(e.s.id, e.s.qp, &o.sparam), 0);
	e2e_expect(e.s.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	e2e_expect(e.c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	/* from here on the server reads nothing */
	event_base_loopbreak(base);
	pthread_join(loop, NULL);

	for (int i = 0; i < WRITES; i++) {
		sg = (struct iw_sge){ (uintptr_t)e.c.buf, 64 << 10,
				      e.c.mr->lkey };
		post_send(&e.c, (uint64_t)i, IW_WR_RDMA_WRITE, &sg, 1,
			  (uintptr_t)e.s.buf, e.s.mr->rkey);
	}
	sg = (struct iw_sge){ (uintptr_t)e.c.buf + (8 << 20), 1 << 20,
			      e.c.mr->lkey };
	post_send(&e.c, READ_ID, IW_WR_RDMA_READ, &sg, 1, (uintptr_t)e.s.buf,
		  e.s.mr->rkey);
	for (int i = 0; i < SENDS; i++) {
		sg = (struct iw_sge){ (uintptr_t)e.c.buf, 1 << 20, e.c.mr->lkey };
		post_send(&e.c, READ_ID + 1 + (uint64_t)i, IW_WR_SEND, &sg, 1,
			  0, 0);
	}
	/* the first Write has left; the Read cannot have been answered */
	got = e2e_poll_upto(e.c.cq, wc, 1, E2E_WAIT_MS);
	ck_assert_int_eq(got, 1);
	ck_assert_int_eq(iw_disconnect(e.c.id), 0);
	got += e2e_poll_upto(e.c.cq, wc + got, N + 1 - got, E2E_WAIT_MS);
	ck_assert_int_eq(got, N);
	for (int i = 0; i < N; i++) {
		uint64_t k = wc[i].wr_id;

		ck_assert_msg(k < N && !seen[k], "wr %llu unknown or twice",
			      (unsigned long long)k);
		seen[k] = 1;
		ck_assert_msg(wc[i].status == IW_WC_SUCCESS ||
				      wc[i].status == IW_WC_WR_FLUSH_ERR,
			      "wr %llu: %s", (unsigned long long)k,
			      iw_wc_status_str(wc[i].status));
		ok += wc[i].status == IW_WC_SUCCESS;
		flushed += wc[i].status == IW_WC_WR_FLUSH_ERR;
		if (k == READ_ID)
			ck_assert_int_eq(wc[i].status, IW_WC_WR_FLUSH_ERR);
	}
	printf("disconnect with a Read out: %d done, %d flushed\n", ok, flushed);
	ck_assert_int_ge(ok, 1);
	e2e_expect(e.c.ch, IW_CM_EVENT_DISCONNECTED, E2E_WAIT_MS);

	/* the server, running again, sees the stream end: its receives once */
	ck_assert_int_eq(pthread_create(&loop, NULL, e2e_dispatch, base), 0);
	{
		struct iw_cm_event *ev = e2e_event(e.s.ch, E2E_WAIT_MS);

		ck_assert_msg(ev->event == IW_CM_EVENT_DISCONNECTED ||
				      ev->event == IW_CM_EVENT_ERROR,
			      "server got %s", iw_cm_event_str(ev->event));
		iw_ack_cm_event(ev);
	}
	expect_each_once(e.s.cq, 100, SENDS, &flushed);
	e2e_teardown(&e);
	event_base_loopbreak(base);
	pthread_join(loop, NULL);
	event_base_free(base);
}
END_TEST

/*
 * The server process stops (SIGSTOP) with receives posted; our Writes and
 * Sends fill the socket and wait.  We disconnect: what did not leave is
 * flushed, deterministically.  The server, continued, sees the stream end
 * and checks that each of its receives completed exactly once.
 */
static int stalled_server(int port_fd, int go_fd)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct iw_cm_id *l;
	struct iw_cm_event *ev;
	struct iw_wc wc[65];
	char port[16];
	int got;

	e2e_opts_default(&o);
	o.depth = 64;
	o.buf_len = 1 << 20;
	e2e_side_open(&s, &o);
	l = iw_create_id(s.ch, NULL);
	if (iw_listen(l, "127.0.0.1", "0", 1))
		SRV_FAIL("cannot listen");
	e2e_port(l, port, sizeof(port));
	if (write(port_fd, port, sizeof(port)) != sizeof(port))
		SRV_FAIL("cannot report the port");
	ev = e2e_event(s.ch, E2E_WAIT_MS);
	if (ev->event != IW_CM_EVENT_CONNECT_REQUEST)
		SRV_FAIL("no connect request");
	s.id = ev->id;
	iw_ack_cm_event(ev);
	for (int i = 0; i < 64; i++) {
		struct iw_sge r = { (uintptr_t)s.buf, 1 << 20, s.mr->lkey };

		post_recv(&s, (uint64_t)i, &r, 1);
	}
	if (iw_accept(s.id, s.qp, NULL) ||
	    e2e_expect(s.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS))
		SRV_FAIL("accept failed");
	if (write(go_fd, "go", 2) != 2)
		SRV_FAIL("cannot report");
	raise(SIGSTOP);
	ev = e2e_event(s.ch, E2E_WAIT_MS);
	if (ev->event != IW_CM_EVENT_DISCONNECTED && ev->event != IW_CM_EVENT_ERROR)
		SRV_FAIL("stream end: %s", iw_cm_event_str(ev->event));
	iw_ack_cm_event(ev);
	got = e2e_poll_upto(s.cq, wc, 65, 1000);
	if (got != 64)
		SRV_FAIL("%d of 64 receives completed", got);
	for (int i = 0; i < 64; i++)
		for (int j = 0; j < i; j++)
			if (wc[i].wr_id == wc[j].wr_id)
				SRV_FAIL("receive %llu completed twice",
					 (unsigned long long)wc[i].wr_id);
	iw_destroy_id(l);
	e2e_side_close(&s);
	return 0;
}

START_TEST(disconnect_while_the_peer_stalls_flushes_what_did_not_leave)
{
	struct e2e_opts o;
	struct e2e_side c;
	struct iw_sge sg;
	char port[16], go[2];
	int fds[2], port_pipe[2], flushed, n = 0, status;
	struct pollfd p;
	pid_t pid;

	/* the server reports its port first, then "go" once it has accepted */
	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(pipe(port_pipe), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		close(port_pipe[0]);
		_exit(stalled_server(port_pipe[1], fds[1]));
	}
	close(fds[1]);
	close(port_pipe[1]);
	p = (struct pollfd){ port_pipe[0], POLLIN, 0 };
	ck_assert_int_eq(poll(&p, 1, E2E_WAIT_MS), 1);
	ck_assert_int_eq(read(port_pipe[0], port, sizeof(port)), sizeof(port));
	e2e_opts_default(&o);
	o.depth = 256;
	o.buf_len = 1 << 20;
	e2e_side_open(&c, &o);
	c.id = iw_create_id(c.ch, NULL);
	ck_assert_int_eq(iw_connect(c.id, "127.0.0.1", port, c.qp, NULL), 0);
	e2e_expect(c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	p = (struct pollfd){ fds[0], POLLIN, 0 };
	ck_assert_int_eq(poll(&p, 1, E2E_WAIT_MS), 1);
	ck_assert_int_eq(read(fds[0], go, 2), 2);
	ck_assert_int_eq(waitpid(pid, &status, WUNTRACED), pid);
	ck_assert(WIFSTOPPED(status));
	for (int i = 0; i < 64; i++) {
		sg = (struct iw_sge){ (uintptr_t)c.buf, 1 << 20, c.mr->lkey };
		post_send(&c, (uint64_t)n++, IW_WR_RDMA_WRITE, &sg, 1, 0, 0);
		post_send(&c, (uint64_t)n++, IW_WR_SEND, &sg, 1, 0, 0);
	}
	ck_assert_int_eq(iw_disconnect(c.id), 0);
	expect_each_once(c.cq, 0, n, &flushed);
	printf("stalled peer: %d of %d requests flushed\n", flushed, n);
	ck_assert_int_gt(flushed, 0);
	e2e_expect(c.ch, IW_CM_EVENT_DISCONNECTED, E2E_WAIT_MS);
	kill(pid, SIGCONT);
	status = wait_child(pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "server process failed (status %d)", status);
	e2e_side_close(&c);
	close(fds[0]);
	close(port_pipe[0]);
}
END_TEST

/* ---- Send with Invalidate ---------------------------------------------- */

/*
 * RFC 5040 section 6.10: a Send with Invalidate names an STag of the
 * receiver, which its completion reports (IW_WC_WITH_INV and the STag)
 * and which no access succeeds through afterwards: an RDMA Write to it
 * ends the stream with a DDP tagged buffer error, invalid STag, that the
 * writer receives in a Terminate.
 */
/*
 * rdma-core's rsockets keep a connection alive (SO_KEEPALIVE) with an RDMA
 * Write of no octets to STag 0, offset 0: a zero-length tagged segment
 * places nothing, so its STag is not checked (as for siw's zero-length
 * RTR Write); it completes nothing at the peer, and the stream goes on:
 * a Send after it arrives as ever.
 */
START_TEST(a_zero_length_write_to_stag_0_is_taken_as_rsockets_keepalive)
{
	struct e2e_opts o;
	struct e2e e;
	struct iw_qp_attr qa;
	struct iw_sge r, sg;
	struct iw_wc wc[2];

	e2e_opts_default(&o);
	e2e_connect(&e, &o);
	r = (struct iw_sge){ (uintptr_t)e.s.buf, 64, e.s.mr->lkey };
	post_recv(&e.s, 1, &r, 1);
	post_send(&e.c, 2, IW_WR_RDMA_WRITE, NULL, 0, 0, 0);
	memcpy(e.c.buf, "alive", 5);
	sg = (struct iw_sge){ (uintptr_t)e.c.buf, 5, e.c.mr->lkey };
	post_send(&e.c, 3, IW_WR_SEND, &sg, 1, 0, 0);
	e2e_poll(e.c.cq, wc, 2, E2E_WAIT_MS);
	expect_wc(&wc[0], 2, IW_WC_RDMA_WRITE, 0);
	expect_wc(&wc[1], 3, IW_WC_SEND, 5);
	e2e_poll(e.s.cq, wc, 1, E2E_WAIT_MS);
	expect_wc(&wc[0], 1, IW_WC_RECV, 5);
	ck_assert_mem_eq(e.s.buf, "alive", 5);
	ck_assert_int_eq(iw_query_qp(e.s.qp, &qa), 0);
	ck_assert_int_eq(qa.state, IW_QPS_RTS);
	ck_assert_int_eq(iw_disconnect(e.c.id), 0);
	e2e_expect(e.c.ch, IW_CM_EVENT_DISCONNECTED, E2E_WAIT_MS);
	e2e_expect(e.s.ch, IW_CM_EVENT_DISCONNECTED, E2E_WAIT_MS);
	e2e_teardown(&e);
}
END_TEST

START_TEST(send_with_invalidate_ends_the_named_rkey)
{
	struct e2e_opts o;
	struct e2e e;
	struct iw_mr *target;
	struct iw_cm_event *ev;
	struct iw_sge r, sg;
	struct iw_wc wc;

	e2e_opts_default(&o);
	e2e_connect(&e, &o);
	target = iw_reg_mr(e.s.pd, e.s.buf + 4096, 4096,
			   IW_ACCESS_REMOTE_WRITE);
	ck_assert_ptr_nonnull(target);
	memset(e.s.buf + 4096, 0, 4096);
	r = (struct iw_sge){ (uintptr_t)e.s.buf, 64, e.s.mr->lkey };
	post_recv(&e.s, 1, &r, 1);
	memcpy(e.c.buf, "invalidate", 10);
	sg = (struct iw_sge){ (uintptr_t)e.c.buf, 10, e.c.mr->lkey };
	ck_assert_int_eq(iw_post_send(e.c.qp, &(struct iw_send_wr){
		.wr_id = 2, .sg_list = &sg, .num_sge = 1,
		.opcode = IW_WR_SEND_WITH_INV, .send_flags = IW_SEND_SIGNALED,
		.invalidate_rkey = target->rkey }, NULL), 0);
	e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
	expect_wc(&wc, 2, IW_WC_SEND, 10);
	e2e_poll(e.s.cq, &wc, 1, E2E_WAIT_MS);
	expect_wc(&wc, 1, IW_WC_RECV, 10);
	ck_assert(wc.wc_flags & IW_WC_WITH_INV);
	ck_assert_uint_eq(wc.invalidated_rkey, target->rkey);
	ck_assert_mem_eq(e.s.buf, "invalidate", 10);

	/* the STag is dead: a Write to it is refused with a Terminate */
	post_send(&e.c, 3, IW_WR_RDMA_WRITE, &sg, 1,
		  (uintptr_t)e.s.buf + 4096, target->rkey);
	ev = e2e_event(e.c.ch, E2E_WAIT_MS);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_ERROR);
	ck_assert_int_eq(ev->status, -IW_ETERMINATED);
	ck_assert(ev->terminate.valid && ev->terminate.received);
	ck_assert_uint_eq(ev->terminate.layer, 1);
	ck_assert_uint_eq(ev->terminate.etype, 1);
	ck_assert_uint_eq(ev->terminate.ecode, 0x00);
	iw_ack_cm_event(ev);
	ev = e2e_event(e.s.ch, E2E_WAIT_MS);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_ERROR);
	ck_assert_int_eq(ev->status, -IW_EDDP_T_STAG);
	ck_assert(ev->terminate.valid && !ev->terminate.received);
	iw_ack_cm_event(ev);
	ck_assert(memchr(e.s.buf + 4096, 'i', 10) == NULL);
	e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS); /* the Write: done or flushed */
	ck_assert_uint_eq(wc.wr_id, 3);
	ck_assert_int_eq(iw_dereg_mr(target), 0);
	e2e_teardown(&e);
}
END_TEST

/* ---- regions deregistered under a peer's access ------------------------ */

/*
 * A server side (the library, as responder) and a raw peer connected to
 * it as initiator; @buf_len octets registered for every access.
 */
static int raw_peer_pair(struct e2e_side *s, struct iw_cm_id **l,
			 size_t buf_len, int rcvbuf)
{
	struct e2e_opts o;
	struct iw_cm_event *ev;
	char port[16];
	int fd;

	e2e_opts_default(&o);
	o.buf_len = buf_len;
	e2e_side_open(s, &o);
	*l = iw_create_id(s->ch, NULL);
	ck_assert_int_eq(iw_listen(*l, "127.0.0.1", "0", 4), 0);
	e2e_port(*l, port, sizeof(port));
	fd = e2e_raw_request(port, rcvbuf, 1);
	ev = e2e_event(s->ch, E2E_WAIT_MS);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_CONNECT_REQUEST);
	s->id = ev->id;
	iw_ack_cm_event(ev);
	ck_assert_int_eq(iw_accept(s->id, s->qp, NULL), 0);
	e2e_expect(s->ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	e2e_raw_reply(fd);
	return fd;
}

/* Deregistered: the side gets a fresh region so that teardown finds one. */
static void replace_mr(struct e2e_side *s)
{
	s->mr = iw_reg_mr(s->pd, s->buf, 1, IW_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(s->mr);
}

static void put32(uint8_t *p, uint32_t v)
{
	put_be32(p, v);
}

/*
 * The peer's RDMA Write is halfway into a region when the application
 * deregisters it.  iw_dereg_mr() does not return before the Write has
 * been stopped: the peer gets the Terminate an invalid STag gets (DDP
 * tagged buffer error, RFC 5041 section 7.2), the QP is no longer in
 * RTS, and what follows of the Write never reaches the memory.
 */
START_TEST(dereg_stops_a_write_being_placed)
{
	enum { PAYLOAD = 16000, FIRST = 8000 };
	static uint8_t ulpdu[14 + PAYLOAD], fpdu[14 + PAYLOAD + 64];
	volatile uint8_t *mem;
	uint8_t send[18 + 4], term[128];
	struct e2e_side s;
	struct iw_cm_id *l;
	struct iw_qp_attr qa;
	struct iw_mr *rmr;
	struct iw_sge r;
	struct iw_wc wc;
	uint8_t rbuf[64];
	size_t n, tl;
	int fd;

	fd = raw_peer_pair(&s, &l, 1 << 20, 0);
	mem = s.buf;
	memset(s.buf, 0, PAYLOAD);
	/* a receive in a region of its own, for the Send behind the Write */
	rmr = iw_reg_mr(s.pd, rbuf, sizeof(rbuf), IW_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(rmr);
	r = (struct iw_sge){ (uintptr_t)rbuf, sizeof(rbuf), rmr->lkey };
	post_recv(&s, 7, &r, 1);
	/* DDP tagged, last; RDMAP Write; the server's STag and address */
	ulpdu[0] = 0xc1;
	ulpdu[1] = 0x40;
	put32(ulpdu + 2, s.mr->rkey);
	put_be64(ulpdu + 6, (uintptr_t)s.buf);
	memset(ulpdu + 14, 0x5a, PAYLOAD);
	n = e2e_raw_fpdu(fpdu, sizeof(fpdu), ulpdu, sizeof(ulpdu));
	e2e_raw_write(fd, fpdu, 2 + 14 + FIRST);
	for (int i = 0; i < E2E_WAIT_MS * 100 && mem[FIRST - 1] != 0x5a; i++)
		usleep(10);
	require(mem[FIRST - 1] == 0x5a, "the Write's first half never landed");
	require(mem[FIRST] == 0, "more of the Write landed than was sent");

	ck_assert_int_eq(iw_dereg_mr(s.mr), 0);
	ck_assert_int_eq(iw_query_qp(s.qp, &qa), 0);
	ck_assert_msg(qa.state == IW_QPS_TERMINATING || qa.state == IW_QPS_ERROR,
		      "QP state %d after dereg", qa.state);
	ck_assert_int_eq(qa.err, -IW_EDDP_T_STAG);
	memset(s.buf, 0xee, PAYLOAD); /* the application's memory again */
	/* the rest of the Write, then a Send (QN 0, MSN 1) */
	e2e_raw_write(fd, fpdu + 2 + 14 + FIRST, n - (2 + 14 + FIRST));
	memset(send, 0, sizeof(send));
	send[0] = 0x41;
	send[1] = 0x43;
	put32(send + 10, 1);
	memcpy(send + 18, "ping", 4);
	n = e2e_raw_fpdu(fpdu, sizeof(fpdu), send, sizeof(send));
	e2e_raw_write(fd, fpdu, n);
	/* the Terminate: RDMAP opcode 7, then layer 1 (DDP), type 1, code 0 */
	tl = e2e_raw_read_fpdu(fd, term, sizeof(term));
	ck_assert_uint_ge(tl, 18 + 4);
	ck_assert_uint_eq(term[1] & 0x0f, 7);
	ck_assert_uint_eq(term[18], 0x11);
	ck_assert_uint_eq(term[19], 0x00);
	ck_assert_int_eq(e2e_expect(s.ch, IW_CM_EVENT_ERROR, E2E_WAIT_MS),
			 -IW_EDDP_T_STAG);
	e2e_poll(s.cq, &wc, 1, E2E_WAIT_MS);
	ck_assert_uint_eq(wc.wr_id, 7);
	ck_assert_int_eq(wc.status, IW_WC_WR_FLUSH_ERR);
	for (size_t i = 0; i < PAYLOAD; i++)
		require(mem[i] == 0xee, "octet %zu written after dereg", i);
	close(fd);
	ck_assert_int_eq(iw_destroy_id(l), 0);
	ck_assert_int_eq(iw_destroy_id(s.id), 0);
	s.id = NULL;
	ck_assert_int_eq(iw_destroy_qp(s.qp), 0);
	ck_assert_int_eq(iw_dereg_mr(rmr), 0);
	s.qp = iw_create_qp(s.pd, &(struct iw_qp_init_attr){
		.send_cq = s.cq, .recv_cq = s.cq, .cap = { 1, 1, 1, 1, 0 } });
	replace_mr(&s);
	e2e_side_close(&s);
}
END_TEST

/*
 * The peer's RDMA Read is being answered from a region (the peer reads
 * slowly, so the response is far from out) when the application
 * deregisters it.  iw_dereg_mr() does not return before the response has
 * been stopped; not one octet sent afterwards comes from the region, and
 * the connection ends with the error an invalid Read source gets (RFC 5040
 * section 7.1, remote protection error, invalid STag).
 */
START_TEST(dereg_stops_a_read_response_from_the_region)
{
	enum { SIZE = 16 << 20, STREAM_MAX = SIZE + (1 << 20) };
	static uint8_t stream[STREAM_MAX];
	uint8_t rr[18 + 28], fpdu[128];
	struct e2e_side s;
	struct iw_cm_id *l;
	struct iw_qp_attr qa;
	struct pollfd p;
	size_t n, got = 0;
	int fd;

	fd = raw_peer_pair(&s, &l, SIZE, 64 << 10);
	memset(s.buf, 0x11, SIZE);
	/* DDP untagged (QN 1, MSN 1), RDMAP Read Request: our sink, its source */
	memset(rr, 0, sizeof(rr));
	rr[0] = 0x41;
	rr[1] = 0x41;
	put32(rr + 6, 1);
	put32(rr + 10, 1);
	put32(rr + 18, 0x1234);
	put32(rr + 18 + 12, SIZE);
	put32(rr + 18 + 16, s.mr->rkey);
	put_be64(rr + 18 + 20, (uintptr_t)s.buf);
	n = e2e_raw_fpdu(fpdu, sizeof(fpdu), rr, sizeof(rr));
	e2e_raw_write(fd, fpdu, n);
	p = (struct pollfd){ fd, POLLIN, 0 };
	ck_assert_int_eq(poll(&p, 1, E2E_WAIT_MS), 1); /* the response began */

	ck_assert_int_eq(iw_dereg_mr(s.mr), 0);
	ck_assert_int_eq(iw_query_qp(s.qp, &qa), 0);
	ck_assert_msg(qa.state == IW_QPS_TERMINATING || qa.state == IW_QPS_ERROR,
		      "QP state %d after dereg", qa.state);
	ck_assert_int_eq(qa.err, -IW_ERDMAP_STAG);
	memset(s.buf, 0xee, SIZE);
	/* all of the stream to its end, which may cut an FPDU */
	for (;;) {
		ssize_t r;

		ck_assert_int_eq(poll(&p, 1, E2E_WAIT_MS), 1);
		ck_assert_uint_lt(got, STREAM_MAX);
		r = read(fd, stream + got, STREAM_MAX - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	/* every Read Response octet in it was copied before the dereg */
	for (size_t off = 0, placed = 0; off + 2 + 14 <= got;) {
		size_t len = (size_t)(stream[off] << 8 | stream[off + 1]);
		size_t end = off + 2 + len < got ? off + 2 + len : got;

		if ((stream[off + 3] & 0x0f) == 2) {
			for (size_t i = off + 2 + 14; i < end; i++)
				require(stream[i] == 0x11,
					"response octet %zu sent after dereg",
					placed + i - (off + 2 + 14));
			placed += end - (off + 2 + 14);
		}
		off += (2 + len + 3) / 4 * 4 + 4;
	}
	printf("read response: %zu of %d octets left before the dereg\n", got,
	       SIZE);
	ck_assert_uint_lt(got, SIZE);
	ck_assert_int_eq(e2e_expect(s.ch, IW_CM_EVENT_ERROR, E2E_WAIT_MS),
			 -IW_ERDMAP_STAG);
	close(fd);
	ck_assert_int_eq(iw_destroy_id(l), 0);
	replace_mr(&s);
	e2e_side_close(&s);
}
END_TEST

/* ---- many connections --------------------------------------------------- */

#define N_CONN 256
#define MSG (8 * 1024)

START_TEST(many_connections_at_once_each_move_verified_data)
{
	struct e2e_opts o;
	struct e2e_side c, s;
	struct iw_qp *cqp[N_CONN], *sqp[N_CONN];
	struct iw_cm_id *cid[N_CONN], *sid[N_CONN], *l;
	struct iw_qp_init_attr qa = { .cap = { 4, 4, 1, 1, 0 } };
	struct iw_wc *wc = calloc(4 * N_CONN, sizeof(*wc));
	struct advert ad;
	char port[16];
	int est = 0;

	ck_assert_ptr_nonnull(wc);
	e2e_opts_default(&o);
	o.buf_len = 2 * N_CONN * MSG;
	o.depth = 4 * N_CONN;
	e2e_side_open(&c, &o);
	e2e_side_open(&s, &o);
	iw_destroy_qp(c.qp);
	iw_destroy_qp(s.qp);
	qa.send_cq = qa.recv_cq = c.cq;
	for (int i = 0; i < N_CONN; i++) {
		cqp[i] = iw_create_qp(c.pd, &qa);
		ck_assert_ptr_nonnull(cqp[i]);
	}
	qa.send_cq = qa.recv_cq = s.cq;
	for (int i = 0; i < N_CONN; i++) {
		sqp[i] = iw_create_qp(s.pd, &qa);
		ck_assert_ptr_nonnull(sqp[i]);
	}
	l = iw_create_id(s.ch, NULL);
	ck_assert_int_eq(iw_listen(l, "127.0.0.1", "0", N_CONN), 0);
	e2e_port(l, port, sizeof(port));
	put_be64(ad.target, (uintptr_t)(s.buf + N_CONN * MSG));
	put_be32(ad.rkey, s.mr->rkey);
	for (int i = 0; i < N_CONN; i++) {
		cid[i] = iw_create_id(c.ch, (void *)(uintptr_t)i);
		ck_assert_int_eq(iw_connect(cid[i], "127.0.0.1", port, cqp[i],
					    &(struct iw_conn_param){ .ird = 1,
								     .ord = 1 }),
				 0);
	}
	/* accept in arrival order (each server QP gets one receive first);
	 * requests and ESTABLISHED events interleave */
	for (int accepted = 0, up = 0; accepted < N_CONN || up < N_CONN;) {
		struct iw_cm_event *ev = e2e_event(s.ch, E2E_WAIT_MS);

		if (ev->event == IW_CM_EVENT_ESTABLISHED) {
			up++;
			iw_ack_cm_event(ev);
			continue;
		}
		ck_assert_int_eq(ev->event, IW_CM_EVENT_CONNECT_REQUEST);
		ck_assert_int_lt(accepted, N_CONN);
		sid[accepted] = ev->id;
		iw_ack_cm_event(ev);
		{
			struct iw_sge r = { (uintptr_t)s.buf +
						    (size_t)accepted * MSG,
					    MSG, s.mr->lkey };

			post_recv(&(struct e2e_side){ .qp = sqp[accepted] },
				  (uint64_t)accepted, &r, 1);
		}
		ck_assert_int_eq(iw_accept(sid[accepted], sqp[accepted],
					   &(struct iw_conn_param){
						   &ad, sizeof(ad), 1, 1 }),
				 0);
		accepted++;
	}
	while (est < N_CONN) {
		e2e_expect(c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
		est++;
	}
	/* every client: a Write into its slot, then a Send naming itself */
	for (int i = 0; i < N_CONN; i++) {
		uint8_t *src = c.buf + (size_t)i * MSG;
		struct iw_sge sg = { (uintptr_t)src, MSG, c.mr->lkey };
		struct e2e_side one = { .qp = cqp[i] };

		e2e_fill(src, MSG, (uint32_t)i);
		post_send(&one, (uint64_t)i, IW_WR_RDMA_WRITE, &sg, 1,
			  get_be64(ad.target) + (size_t)i * MSG, s.mr->rkey);
		post_send(&one, N_CONN + (uint64_t)i, IW_WR_SEND, &sg, 1, 0, 0);
	}
	e2e_poll(c.cq, wc, 2 * N_CONN, 3 * E2E_WAIT_MS);
	for (int i = 0; i < 2 * N_CONN; i++)
		ck_assert_int_eq(wc[i].status, IW_WC_SUCCESS);
	e2e_poll(s.cq, wc, N_CONN, 3 * E2E_WAIT_MS);
	for (int i = 0; i < N_CONN; i++) {
		/* the receive of a connection holds what its client sent */
		int k = -1;
		uint8_t *want = malloc(MSG);

		ck_assert_ptr_nonnull(want);
		ck_assert_int_eq(wc[i].status, IW_WC_SUCCESS);
		ck_assert_uint_eq(wc[i].byte_len, MSG);
		for (int j = 0; j < N_CONN && k < 0; j++)
			if (sqp[j] == wc[i].qp)
				k = j;
		ck_assert_int_ge(k, 0);
		for (int j = 0; j < N_CONN; j++) {
			e2e_fill(want, MSG, (uint32_t)j);
			if (memcmp(s.buf + (size_t)k * MSG, want, MSG) == 0) {
				/* and its Write landed in the slot it named */
				ck_assert_int_eq(memcmp(s.buf + N_CONN * MSG +
								(size_t)j * MSG,
							want, MSG),
						 0);
				break;
			}
			ck_assert_msg(j + 1 < N_CONN,
				      "receive %d matches no client", k);
		}
		free(want);
	}
	for (int i = 0; i < N_CONN; i++)
		ck_assert_int_eq(iw_disconnect(cid[i]), 0);
	for (int i = 0; i < N_CONN; i++) {
		e2e_expect(c.ch, IW_CM_EVENT_DISCONNECTED, E2E_WAIT_MS);
		e2e_expect(s.ch, IW_CM_EVENT_DISCONNECTED, E2E_WAIT_MS);
	}
	for (int i = 0; i < N_CONN; i++) {
		ck_assert_int_eq(iw_destroy_id(cid[i]), 0);
		ck_assert_int_eq(iw_destroy_id(sid[i]), 0);
		ck_assert_int_eq(iw_destroy_qp(cqp[i]), 0);
		ck_assert_int_eq(iw_destroy_qp(sqp[i]), 0);
	}
	iw_destroy_id(l);
	/* e2e_side_close destroys the QP it created: give it a fresh one */
	qa.send_cq = qa.recv_cq = c.cq;
	c.qp = iw_create_qp(c.pd, &qa);
	qa.send_cq = qa.recv_cq = s.cq;
	s.qp = iw_create_qp(s.pd, &qa);
	e2e_side_close(&c);
	e2e_side_close(&s);
	free(wc);
}
END_TEST

/*
 * TCP on loopback starts a connection's MSS at half the peer's first
 * window (32 KiB, on a 64 KiB MTU) and raises it as the window opens.
 * The MULPDU follows it, so that a bulk transfer ends up framed in FPDUs
 * near 64 KiB; with CRC on, whose bounce buffer must take them.  A Read
 * of the target afterwards sees every Write's octets.
 */
START_TEST(the_mulpdu_grows_with_the_connections_mss)
{
	enum { MIB = 1 << 20, WRITES = 64 };
	struct e2e_opts o;
	struct e2e e;
	struct iw_qp_attr qa;
	struct iw_sge sg;
	struct iw_wc wc;
	uint16_t first;

	e2e_opts_default(&o);
	o.buf_len = 2 * MIB;
	o.client.crc = IW_MPA_ON;
	e2e_connect(&e, &o);
	ck_assert_int_eq(iw_query_qp(e.c.qp, &qa), 0);
	ck_assert_uint_eq(qa.crc, 1);
	first = qa.mulpdu;
	for (uint64_t i = 0; i < WRITES; i++) {
		e2e_fill(e.c.buf, MIB, (uint32_t)i);
		sg = (struct iw_sge){ (uintptr_t)e.c.buf, MIB, e.c.mr->lkey };
		post_send(&e.c, i, IW_WR_RDMA_WRITE, &sg, 1,
			  (uintptr_t)e.s.buf, e.s.mr->rkey);
		e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
		expect_wc(&wc, i, IW_WC_RDMA_WRITE, MIB);
	}
	sg = (struct iw_sge){ (uintptr_t)e.c.buf + MIB, MIB, e.c.mr->lkey };
	post_send(&e.c, WRITES, IW_WR_RDMA_READ, &sg, 1, (uintptr_t)e.s.buf,
		  e.s.mr->rkey);
	e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
	expect_wc(&wc, WRITES, IW_WC_RDMA_READ, MIB);
	ck_assert_mem_eq(e.c.buf + MIB, e.c.buf, MIB);
	ck_assert_int_eq(iw_query_qp(e.c.qp, &qa), 0);
	printf("MULPDU %u at the start, %u after %d MiB\n", first, qa.mulpdu,
	       WRITES);
	ck_assert_uint_ge(qa.mulpdu, first);
	ck_assert_uint_gt(qa.mulpdu, 60000);
	e2e_teardown(&e);
}
END_TEST

/* This process's TCP socket from @local to @peer, or -1. */
static int socket_between(const struct sockaddr_storage *local,
			  const struct sockaddr_storage *peer)
{
	for (int fd = 0; fd < 4096; fd++) {
		struct sockaddr_storage l, p;
		socklen_t ll = sizeof(l), pl = sizeof(p);

		if (getsockname(fd, (struct sockaddr *)&l, &ll) == 0 &&
		    getpeername(fd, (struct sockaddr *)&p, &pl) == 0 &&
		    memcmp(&l, local, ll) == 0 && memcmp(&p, peer, pl) == 0)
			return fd;
	}
	return -1;
}

static int sockopt(int fd, int name)
{
	int v = -1;
	socklen_t l = sizeof(v);

	ck_assert_int_eq(getsockopt(fd, SOL_SOCKET, name, &v, &l), 0);
	return v;
}

/*
 * Once established, both ends' sockets can take a 1 MiB window (Linux
 * would keep one that takes an FPDU per read near 700 KB) and still wake
 * their reader for a single octet; in the handshake the server's socket
 * has the default buffer, so peers that never finish it get no more.
 */
START_TEST(an_established_connection_opens_its_receive_window)
{
	enum { FLOOR = 1 << 20 };
	struct sockaddr_storage caddr, saddr;
	struct e2e_opts o;
	struct e2e e;
	int cfd, sfd, before;

	e2e_opts_default(&o);
	e2e_start(&e, &o);
	ck_assert_int_eq(iw_get_local_addr(e.c.id, &caddr), 0);
	ck_assert_int_eq(iw_get_peer_addr(e.c.id, &saddr), 0);
	sfd = socket_between(&saddr, &caddr);
	ck_assert_int_ge(sfd, 0);
	before = sockopt(sfd, SO_RCVBUF);
	require(before < FLOOR, "%d octets of buffer in the handshake",
		before);
	ck_assert_int_eq(iw_accept(e.s.id, e.s.qp, &o.sparam), 0);
	e2e_expect(e.s.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	e2e_expect(e.c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	cfd = socket_between(&caddr, &saddr);
	ck_assert_int_ge(cfd, 0);
	ck_assert_int_ge(sockopt(cfd, SO_RCVBUF), FLOOR);
	ck_assert_int_ge(sockopt(sfd, SO_RCVBUF), FLOOR);
	ck_assert_int_eq(sockopt(cfd, SO_RCVLOWAT), 1);
	ck_assert_int_eq(sockopt(sfd, SO_RCVLOWAT), 1);
	e2e_ping(&e, 1, E2E_WAIT_MS);
	e2e_teardown(&e);
}
END_TEST

/* ---- descriptors across exec ------------------------------------------- */

enum { FD_SPAN = 1024 };

/* Which of descriptors 0..FD_SPAN-1 are open now. */
static void open_fds(bool open[FD_SPAN])
{
	for (int fd = 0; fd < FD_SPAN; fd++)
		open[fd] = fcntl(fd, F_GETFD) >= 0;
}

/*
 * A program that forks and execs (an MPI launcher, a shell-out) must not
 * hand libiwarp's descriptors to the new program: a connection the
 * application closes would stay open there, and its peer would never see
 * it end.  Every descriptor a connected pair adds (the listener, both
 * ends' sockets, channels, CQs, a trace file) is closed on exec.
 */
START_TEST(no_descriptor_of_a_connection_reaches_an_execd_program)
{
	static bool before[FD_SPAN];
	char trace[64];
	struct e2e_opts o;
	struct e2e e;
	int added = 0;

	snprintf(trace, sizeof(trace), "/tmp/iwarp-cloexec-%ld.pcap",
		 (long)getpid());
	ck_assert_int_eq(setenv("IWARP_TRACE", trace, 1), 0);
	open_fds(before);
	e2e_opts_default(&o);
	e2e_connect(&e, &o);
	e2e_ping(&e, 1, E2E_WAIT_MS);
	for (int fd = 0; fd < FD_SPAN; fd++) {
		int flags = fcntl(fd, F_GETFD);

		if (before[fd] || flags < 0)
			continue;
		added++;
		ck_assert_msg(flags & FD_CLOEXEC,
			      "descriptor %d is left open across exec", fd);
	}
	/* a listener, two connected sockets and the trace at least */
	ck_assert_int_ge(added, 4);
	e2e_teardown(&e);
	unsetenv("IWARP_TRACE");
	unlink(trace);
}
END_TEST

/* ---- destroying a connection the peer has not read to its end ---------- */

/*
 * A Send completes once the kernel holds it, and the application then
 * destroys the connection while the peer has read none of it: the peer
 * still reads all of it, and then the end of the stream, although it
 * sent something after the destroy (a socket closed under incoming data
 * resets the connection and drops what it held, iw_destroy_id(3)).
 */
START_TEST(a_destroyed_connection_still_delivers_what_its_socket_held)
{
	enum { SIZE = 4 << 20 };
	uint8_t ulpdu[14] = { 0 }, fpdu[32];
	struct late_reader r = { 0 };
	struct e2e_side s;
	struct iw_cm_id *l;
	struct iw_sge sg;
	struct iw_wc wc;
	pthread_t t;

	r.fd = raw_peer_pair(&s, &l, SIZE, 64 << 10);
	/* its first FPDU lets the library send (RFC 5044 section 7.1.2): a
	 * Write of nothing to STag 0 */
	ulpdu[0] = 0xc1;
	ulpdu[1] = 0x40;
	e2e_raw_write(r.fd, fpdu, e2e_raw_fpdu(fpdu, sizeof(fpdu), ulpdu, 14));
	sg = (struct iw_sge){ (uintptr_t)s.buf, SIZE, s.mr->lkey };
	post_send(&s, 1, IW_WR_SEND, &sg, 1, 0, 0);
	/* complete once the kernel holds it, though the peer read nothing */
	e2e_poll(s.cq, &wc, 1, E2E_WAIT_MS);
	expect_wc(&wc, 1, IW_WC_SEND, SIZE);
	ck_assert_int_eq(pthread_create(&t, NULL, late_reader_run, &r), 0);
	ck_assert_int_eq(iw_destroy_id(s.id), 0);
	s.id = NULL;
	pthread_join(t, NULL);
	ck_assert_msg(r.end == 0, "the peer's stream ended with %s after %zu "
				  "octets", strerror(r.end), r.got);
	ck_assert_uint_gt(r.got, SIZE); /* its FPDUs, headers and all */
	close(r.fd);
	iw_destroy_id(l);
	e2e_side_close(&s);
}
END_TEST

static Suite *verbs_suite(void)
{
	Suite *s = suite_create("verbs");
	TCase *tc = tcase_create("matrix");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, every_operation_size_and_framing_moves_verified_data,
			    0, 4 * 5);
	suite_add_tcase(s, tc);
	tc = tcase_create("processes");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, two_processes_move_verified_data, 0, N_PROC_CFGS);
	tcase_add_test(tc, peer_death_mid_transfer_completes_everything_once);
	suite_add_tcase(s, tc);
	tc = tcase_create("streams");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, disconnect_mid_transfer_completes_everything_once);
	tcase_add_test(tc, disconnect_with_a_read_outstanding_completes_everything_once);
	tcase_add_test(tc, disconnect_while_the_peer_stalls_flushes_what_did_not_leave);
	tcase_add_test(tc, many_connections_at_once_each_move_verified_data);
	tcase_add_test(tc, the_mulpdu_grows_with_the_connections_mss);
	tcase_add_test(tc, an_established_connection_opens_its_receive_window);
	tcase_add_test(tc, a_destroyed_connection_still_delivers_what_its_socket_held);
	tcase_add_test(tc, no_descriptor_of_a_connection_reaches_an_execd_program);
	suite_add_tcase(s, tc);
	tc = tcase_create("invalidate");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, send_with_invalidate_ends_the_named_rkey);
	tcase_add_test(tc, a_zero_length_write_to_stag_0_is_taken_as_rsockets_keepalive);
	suite_add_tcase(s, tc);
	tc = tcase_create("regions");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, dereg_stops_a_write_being_placed);
	tcase_add_test(tc, dereg_stops_a_read_response_from_the_region);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(verbs_suite());
}
