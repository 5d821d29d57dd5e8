// SPDX-License-Identifier: MIT
/*
 * Statistics: known traffic gives exact counts on both ends of a
 * connection (messages by opcode, FPDUs, wire octets, Read depths,
 * queues, flushes, one Terminate each way), a CRC error injected by the
 * fault proxy shows as one CRC error and one Terminate, the growable
 * structures fill no more than their caller knows, and the process's
 * stats endpoint answers its own user while hostile readers (one that
 * never reads, one that sends garbage, one that leaves mid-request) get
 * nothing and do not slow the traffic.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "fault_proxy.h"

enum { N_SEND = 5, SEND_LEN = 100, N_WRITE = 3, WRITE_LEN = 1000,
       N_READ = 4, READ_LEN = 500 };

/* Octets of the FPDU that carries a ULPDU of @ulpdu octets, no markers
 * (RFC 5044 4.1: length, ULPDU, pad to 4, CRC field). */
static uint64_t fpdu_octets(uint64_t ulpdu)
{
	return 2 + ulpdu + (4 - (2 + ulpdu) % 4) % 4 + 4;
}

static struct iw_qp_stats qstats(struct iw_qp *qp)
{
	struct iw_qp_stats s;

	ck_assert_int_eq(iw_query_qp_stats(qp, &s, sizeof(s)), 0);
	return s;
}

/* Waits (bounded) until @qp has sent @tx and taken @rx wire octets: the
 * counts of the far end settle a moment after a completion here. */
static struct iw_qp_stats settled(struct iw_qp *qp, uint64_t tx, uint64_t rx)
{
	struct iw_qp_stats s;

	for (int i = 0; i < 400; i++) {
		s = qstats(qp);
		if (s.tx_octets == tx && s.rx_octets == rx)
			break;
		usleep(5000);
	}
	return s;
}

static void post_recv(struct e2e_side *s, uint64_t id, void *p, uint32_t len)
{
	struct iw_sge sg = { (uintptr_t)p, len, s->mr->lkey };
	struct iw_recv_wr wr = { id, NULL, &sg, 1 };

	ck_assert_int_eq(iw_post_recv(s->qp, &wr, NULL), 0);
}

static void post_send(struct e2e_side *s, uint64_t id, enum iw_wr_opcode op,
		      void *p, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct iw_sge sg = { (uintptr_t)p, len, s->mr->lkey };
	struct iw_send_wr wr = { .wr_id = id,
				 .sg_list = &sg,
				 .num_sge = 1,
				 .opcode = op,
				 .send_flags = IW_SEND_SIGNALED };

	wr.rdma.remote_addr = raddr;
	wr.rdma.rkey = rkey;
	ck_assert_int_eq(iw_post_send(s->qp, &wr, NULL), 0);
}

START_TEST(known_traffic_gives_exact_counts_on_both_ends)
{
	uint64_t c_tx, c_rx;
	struct iw_context_stats cs;
	struct iw_qp_stats c, s;
	struct e2e_opts o;
	struct iw_wc wc[16];
	struct e2e e;
	int i;

	e2e_opts_default(&o);
	e2e_connect(&e, &o);

	/* N_SEND + 3 receives at the server (3 are flushed at the end), 2 at
	 * the client (both flushed) */
	for (i = 0; i < N_SEND + 3; i++)
		post_recv(&e.s, 100 + i, e.s.buf + i * 256, 256);
	post_recv(&e.c, 200, e.c.buf + 0x80000, 256);
	post_recv(&e.c, 201, e.c.buf + 0x80100, 256);
	for (i = 0; i < N_SEND; i++)
		post_send(&e.c, i, IW_WR_SEND, e.c.buf, SEND_LEN, 0, 0);
	for (i = 0; i < N_WRITE; i++)
		post_send(&e.c, 10 + i, IW_WR_RDMA_WRITE, e.c.buf, WRITE_LEN,
			  (uintptr_t)e.s.buf + 0x10000, e.s.mr->rkey);
	for (i = 0; i < N_READ; i++)
		post_send(&e.c, 20 + i, IW_WR_RDMA_READ,
			  e.c.buf + 0x20000 + i * READ_LEN, READ_LEN,
			  (uintptr_t)e.s.buf + 0x30000, e.s.mr->rkey);
	e2e_poll(e.c.cq, wc, N_SEND + N_WRITE + N_READ, E2E_WAIT_MS);
	for (i = 0; i < N_SEND + N_WRITE + N_READ; i++)
		ck_assert_int_eq(wc[i].status, IW_WC_SUCCESS);
	e2e_poll(e.s.cq, wc, N_SEND, E2E_WAIT_MS);

	c_tx = N_SEND * fpdu_octets(18 + SEND_LEN) +
	       N_WRITE * fpdu_octets(14 + WRITE_LEN) +
	       N_READ * fpdu_octets(18 + 28);
	c_rx = N_READ * fpdu_octets(14 + READ_LEN);
	c = settled(e.c.qp, c_tx, c_rx);
	s = settled(e.s.qp, c_rx, c_tx);

	ck_assert_uint_eq(c.tx_octets, c_tx);
	ck_assert_uint_eq(c.rx_octets, c_rx);
	ck_assert_uint_eq(s.rx_octets, c_tx);
	ck_assert_uint_eq(s.tx_octets, c_rx);
	ck_assert_uint_eq(c.tx_fpdus, N_SEND + N_WRITE + N_READ);
	ck_assert_uint_eq(s.rx_fpdus, N_SEND + N_WRITE + N_READ);
	ck_assert_uint_eq(c.rx_fpdus, N_READ);
	ck_assert_uint_eq(s.tx_fpdus, N_READ);
	ck_assert_uint_eq(c.tx_msgs[IW_STATS_OP_SEND], N_SEND);
	ck_assert_uint_eq(c.tx_msgs[IW_STATS_OP_WRITE], N_WRITE);
	ck_assert_uint_eq(c.tx_msgs[IW_STATS_OP_READ_REQ], N_READ);
	ck_assert_uint_eq(c.rx_msgs[IW_STATS_OP_READ_RESP], N_READ);
	ck_assert_uint_eq(s.rx_msgs[IW_STATS_OP_SEND], N_SEND);
	ck_assert_uint_eq(s.rx_msgs[IW_STATS_OP_WRITE], N_WRITE);
	ck_assert_uint_eq(s.rx_msgs[IW_STATS_OP_READ_REQ], N_READ);
	ck_assert_uint_eq(s.tx_msgs[IW_STATS_OP_READ_RESP], N_READ);
	ck_assert_uint_eq(s.tx_msgs[IW_STATS_OP_SEND], 0);
	ck_assert_uint_eq(c.rx_msgs[IW_STATS_OP_SEND], 0);
	ck_assert_uint_eq(c.term_tx[IW_STATS_LAYER_DDP] +
				  c.term_rx[IW_STATS_LAYER_DDP],
			  0);
	ck_assert(!c.last_term_rx.valid && !s.last_term_tx.valid);

	/* what the handshake settled, and the queues now */
	ck_assert_int_eq(c.state, IW_QPS_RTS);
	ck_assert(c.comp_mask & IW_QP_STATS_CONN);
	ck_assert(c.comp_mask & IW_QP_STATS_TCP);
	ck_assert_uint_eq(c.initiator, 1);
	ck_assert_uint_eq(s.initiator, 0);
	ck_assert_uint_eq(c.mpa_revision, 2);
	ck_assert_uint_eq(c.ord, 8);
	ck_assert_uint_eq(s.ird, 8);
	ck_assert_uint_ge(c.ord_max, 1);
	ck_assert_uint_le(c.ord_max, 8);
	ck_assert_uint_ge(s.ird_max, 1);
	ck_assert_uint_eq(c.ord_outstanding, 0);
	ck_assert_uint_eq(c.sq_outstanding, 0);
	ck_assert_uint_eq(c.sq_depth, o.depth);
	ck_assert_uint_eq(s.rq_posted, 3);
	ck_assert_uint_eq(s.rq_depth, o.depth);
	ck_assert_uint_eq(c.rq_posted, 2);
	ck_assert_int_eq(c.local.ss_family, AF_INET);
	ck_assert_uint_eq(((struct sockaddr_in *)&c.local)->sin_port,
			  ((struct sockaddr_in *)&s.peer)->sin_port);
	ck_assert_uint_eq(((struct sockaddr_in *)&c.peer)->sin_port,
			  ((struct sockaddr_in *)&s.local)->sin_port);
	ck_assert_uint_gt(c.tcp_snd_mss, 0);
	ck_assert_uint_ge(c.tcp_bytes_acked, 1);

	/* the context's sums: one QP each, the server's listener */
	ck_assert_int_eq(iw_query_context_stats(e.c.ctx, &cs, sizeof(cs)), 0);
	ck_assert_uint_eq(cs.qps, 1);
	ck_assert_uint_eq(cs.listeners, 0);
	ck_assert_uint_eq(cs.tx_octets, c_tx);
	ck_assert_uint_eq(cs.tx_msgs[IW_STATS_OP_READ_REQ], N_READ);
	ck_assert_int_eq(iw_query_context_stats(e.s.ctx, &cs, sizeof(cs)), 0);
	ck_assert_uint_eq(cs.listeners, 1);
	ck_assert_uint_eq(cs.rx_octets, c_tx);

	/* one Write to an STag the server does not have: it sends one
	 * Terminate (DDP, tagged buffer error, invalid STag), the client
	 * takes it, and the receives still posted are flushed */
	post_send(&e.c, 30, IW_WR_RDMA_WRITE, e.c.buf, 64,
		  (uintptr_t)e.s.buf, e.s.mr->rkey ^ 0xffff00);
	e2e_expect(e.s.ch, IW_CM_EVENT_ERROR, E2E_WAIT_MS);
	e2e_expect(e.c.ch, IW_CM_EVENT_ERROR, E2E_WAIT_MS);
	e2e_poll(e.c.cq, wc, 3, E2E_WAIT_MS); /* the Write, 2 receives */
	e2e_poll(e.s.cq, wc, 3, E2E_WAIT_MS);
	c = qstats(e.c.qp);
	s = qstats(e.s.qp);
	ck_assert_uint_eq(s.term_tx[IW_STATS_LAYER_DDP], 1);
	ck_assert_uint_eq(s.term_tx[IW_STATS_LAYER_RDMAP] +
				  s.term_tx[IW_STATS_LAYER_LLP] +
				  s.term_rx[IW_STATS_LAYER_DDP],
			  0);
	ck_assert_uint_eq(c.term_rx[IW_STATS_LAYER_DDP], 1);
	ck_assert_uint_eq(c.term_tx[IW_STATS_LAYER_DDP], 0);
	ck_assert(s.last_term_tx.valid && c.last_term_rx.valid);
	ck_assert_uint_eq(s.last_term_tx.layer, 1);
	ck_assert_uint_eq(s.last_term_tx.etype, 1);
	ck_assert_uint_eq(s.last_term_tx.ecode, 0);
	ck_assert_uint_eq(c.last_term_rx.layer, 1);
	ck_assert_uint_eq(c.last_term_rx.etype, 1);
	ck_assert_uint_eq(s.tx_msgs[IW_STATS_OP_TERMINATE], 1);
	ck_assert_uint_eq(c.rx_msgs[IW_STATS_OP_TERMINATE], 1);
	ck_assert_uint_eq(c.tx_msgs[IW_STATS_OP_WRITE], N_WRITE + 1);
	/* the refused Write was not received as a message */
	ck_assert_uint_eq(s.rx_msgs[IW_STATS_OP_WRITE], N_WRITE);
	ck_assert_uint_eq(s.flushed, 3);
	ck_assert_uint_eq(c.flushed, 2);
	ck_assert_uint_eq(c.crc_errors + s.crc_errors, 0);
	ck_assert_int_eq(c.state, IW_QPS_ERROR);

	e2e_teardown(&e);
}
END_TEST

/*
 * A Read Request naming a source STag the server does not have: the
 * server refuses it with one Terminate (RDMAP layer) and does not count
 * it as a Read Request taken; the client's Read fails remotely.
 */
START_TEST(a_refused_read_request_is_counted_as_its_terminate)
{
	struct iw_qp_stats c, s;
	struct e2e_opts o;
	struct iw_wc wc[2];
	struct e2e e;

	e2e_opts_default(&o);
	e2e_connect(&e, &o);
	post_send(&e.c, 1, IW_WR_RDMA_READ, e.c.buf, READ_LEN,
		  (uintptr_t)e.s.buf, e.s.mr->rkey ^ 0xffff00);
	e2e_expect(e.s.ch, IW_CM_EVENT_ERROR, E2E_WAIT_MS);
	e2e_expect(e.c.ch, IW_CM_EVENT_ERROR, E2E_WAIT_MS);
	e2e_poll(e.c.cq, wc, 1, E2E_WAIT_MS);
	ck_assert_int_eq(wc[0].status, IW_WC_REM_ACCESS_ERR);
	c = qstats(e.c.qp);
	s = qstats(e.s.qp);
	ck_assert_uint_eq(c.tx_msgs[IW_STATS_OP_READ_REQ], 1);
	ck_assert_uint_eq(s.rx_fpdus, 1);
	ck_assert_uint_eq(s.rx_msgs[IW_STATS_OP_READ_REQ], 0);
	ck_assert_uint_eq(s.tx_msgs[IW_STATS_OP_READ_RESP], 0);
	ck_assert_uint_eq(s.term_tx[IW_STATS_LAYER_RDMAP], 1);
	ck_assert_uint_eq(c.term_rx[IW_STATS_LAYER_RDMAP], 1);
	ck_assert_uint_eq(c.rx_msgs[IW_STATS_OP_TERMINATE], 1);
	ck_assert_uint_eq(s.last_term_tx.layer, 0);
	ck_assert_uint_eq(c.last_term_rx.etype, s.last_term_tx.etype);
	ck_assert_uint_eq(c.last_term_rx.ecode, s.last_term_tx.ecode);
	ck_assert_uint_eq(s.ird_max, 0);
	ck_assert_uint_eq(c.ord_max, 1);
	e2e_teardown(&e);
}
END_TEST

/*
 * One octet of a Send's payload changed on its way (CRC on): the server
 * counts one CRC error and sends one Terminate (LLP layer, MPA CRC
 * error), which the client counts as received.
 */
START_TEST(a_corrupted_fpdu_counts_one_crc_error_and_one_terminate)
{
	/* MPA Request (20 + 4 octets of IRD/ORD), then into the first FPDU's
	 * payload: length 2, DDP/RDMAP header 18 */
	struct fault f = { .kind = FAULT_CORRUPT, .dir = 0,
			   .at = 24 + 2 + 18 + 10, .mask = 0x40 };
	struct fault_proxy proxy;
	struct sockaddr_storage ss;
	struct iw_qp_stats c, s;
	struct iw_cm_event *ev;
	struct e2e_opts o;
	struct iw_wc wc[4];
	char port[16];
	struct e2e e;

	memset(&e, 0, sizeof(e));
	e2e_opts_default(&o);
	o.client.crc = IW_MPA_ON;
	e2e_side_open(&e.c, &o);
	e2e_side_open(&e.s, &o);
	e.listen = iw_create_id(e.s.ch, NULL);
	ck_assert_int_eq(iw_listen(e.listen, "127.0.0.1", "0", 4), 0);
	ck_assert_int_eq(iw_get_local_addr(e.listen, &ss), 0);
	ck_assert_int_eq(fault_proxy_start(&proxy,
					   ntohs(((struct sockaddr_in *)&ss)
							 ->sin_port),
					   &f, 45),
			 0);
	snprintf(port, sizeof(port), "%u", proxy.port);
	e.c.id = iw_create_id(e.c.ch, NULL);
	ck_assert_int_eq(iw_set_mpa_opts(e.c.id, &o.client), 0);
	ck_assert_int_eq(iw_connect(e.c.id, "127.0.0.1", port, e.c.qp,
				    &o.cparam),
			 0);
	ev = e2e_event(e.s.ch, E2E_WAIT_MS);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_CONNECT_REQUEST);
	e.s.id = ev->id;
	iw_ack_cm_event(ev);
	post_recv(&e.s, 1, e.s.buf, 256);
	ck_assert_int_eq(iw_accept(e.s.id, e.s.qp, &o.sparam), 0);
	e2e_expect(e.s.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	e2e_expect(e.c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);

	post_send(&e.c, 2, IW_WR_SEND, e.c.buf, SEND_LEN, 0, 0);
	e2e_expect(e.s.ch, IW_CM_EVENT_ERROR, E2E_WAIT_MS);
	e2e_expect(e.c.ch, IW_CM_EVENT_ERROR, E2E_WAIT_MS);
	e2e_poll(e.s.cq, wc, 1, E2E_WAIT_MS);
	ck_assert_int_eq(wc[0].status, IW_WC_WR_FLUSH_ERR);
	e2e_poll(e.c.cq, wc, 1, E2E_WAIT_MS);
	c = qstats(e.c.qp);
	s = qstats(e.s.qp);
	fault_proxy_stop(&proxy);
	ck_assert(proxy.struck);

	ck_assert_uint_eq(s.crc_errors, 1);
	ck_assert_uint_eq(s.marker_errors, 0);
	ck_assert_uint_eq(s.rx_msgs[IW_STATS_OP_SEND], 0);
	ck_assert_uint_eq(s.term_tx[IW_STATS_LAYER_LLP], 1);
	ck_assert_uint_eq(s.term_tx[IW_STATS_LAYER_DDP] +
				  s.term_tx[IW_STATS_LAYER_RDMAP],
			  0);
	ck_assert(s.last_term_tx.valid);
	ck_assert_uint_eq(s.last_term_tx.layer, 2);
	ck_assert_uint_eq(s.last_term_tx.ecode, 0x02);
	ck_assert_uint_eq(c.crc_errors, 0);
	ck_assert_uint_eq(c.term_rx[IW_STATS_LAYER_LLP], 1);
	ck_assert_uint_eq(c.tx_msgs[IW_STATS_OP_SEND], 1);
	ck_assert_uint_eq(c.crc, 1);
	ck_assert_uint_eq(s.crc, 1);
	e2e_teardown(&e);
}
END_TEST

/* A caller built against a shorter structure gets no more than it has. */
START_TEST(a_shorter_structure_is_filled_no_further)
{
	size_t part = offsetof(struct iw_qp_stats, tx_fpdus);
	unsigned char buf[sizeof(struct iw_qp_stats)];
	struct iw_context_stats cs;
	struct e2e_side side;
	struct e2e_opts o;

	e2e_opts_default(&o);
	memset(&side, 0, sizeof(side));
	e2e_side_open(&side, &o);
	memset(buf, 0xa5, sizeof(buf));
	ck_assert_int_eq(iw_query_qp_stats(side.qp, (void *)buf, part), 0);
	for (size_t i = part; i < sizeof(buf); i++)
		require(buf[i] == 0xa5, "octet %zu past the size was written", i);
	ck_assert_int_eq(((struct iw_qp_stats *)(void *)buf)->state,
			 IW_QPS_INIT);
	ck_assert_int_eq(iw_query_qp_stats(side.qp, (void *)buf, 4), -EINVAL);
	ck_assert_int_eq(iw_query_qp_stats(NULL, (void *)buf, part), -EINVAL);
	ck_assert_int_eq(iw_query_context_stats(side.ctx, &cs, sizeof(cs)), 0);
	ck_assert_uint_eq(cs.qps, 1);
	ck_assert_uint_eq(cs.qps_created, 1);
	ck_assert_int_eq(cs.progress, IW_PROGRESS_THREAD);
	e2e_side_close(&side);
}
END_TEST

/* ---- the endpoint ---------------------------------------------------- */

static char stats_dir[64];

static int endpoint_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%ld.sock", stats_dir,
		 (long)getpid());
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -errno;
	}
	return fd;
}

/* Sends @req and reads the answer to its end within @ms. */
static size_t endpoint_ask(const char *req, char *out, size_t cap, int ms)
{
	int fd = endpoint_connect();
	size_t have = 0;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t n;

		ck_assert_int_eq(poll(&p, 1, ms), 1);
		n = read(fd, out + have, cap - 1 - have);
		ck_assert_int_ge(n, 0);
		if (n == 0)
			break;
		have += (size_t)n;
	}
	out[have] = 0;
	close(fd);
	return have;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static long long ping_worst(struct e2e *e, uint32_t seq, int n)
{
	long long worst = 0;

	for (int i = 0; i < n; i++) {
		long long t = e2e_ping(e, seq + (uint32_t)i, E2E_WAIT_MS);

		if (t > worst)
			worst = t;
	}
	return worst;
}

START_TEST(the_endpoint_answers_its_user_and_shrugs_off_hostile_readers)
{
	static char answer[1 << 16];
	int silent[4], garbage, gone;
	long long before, during;
	char line[64];
	struct e2e_opts o;
	struct e2e e;

	e2e_opts_default(&o);
	e2e_connect(&e, &o);
	before = ping_worst(&e, 1, 20);

	endpoint_ask("stats\n", answer, sizeof(answer), 3000);
	ck_assert_ptr_nonnull(strstr(answer, "process pid="));
	ck_assert_ptr_nonnull(strstr(answer, "listener ctx="));
	ck_assert_ptr_nonnull(strstr(answer, "conn ctx="));
	ck_assert_ptr_nonnull(strstr(answer, " state=RTS"));
	ck_assert_ptr_nonnull(strstr(answer, "\nend\n"));
	snprintf(line, sizeof(line), "peer=127.0.0.1:%s ", e.port);
	ck_assert_ptr_nonnull(strstr(answer, line));

	/* readers that connect and never send, one that asks and never
	 * reads, one that sends garbage, one that leaves mid-request */
	for (int i = 0; i < 4; i++) {
		silent[i] = endpoint_connect();
		ck_assert_int_ge(silent[i], 0);
	}
	ck_assert_int_eq(write(silent[3], "stats\n", 6), 6);
	garbage = endpoint_connect();
	ck_assert_int_ge(garbage, 0);
	ck_assert_int_eq(write(garbage, "\xff\x00garbage\nstats\n", 16), 16);
	gone = endpoint_connect();
	ck_assert_int_ge(gone, 0);
	ck_assert_int_eq(write(gone, "sta", 3), 3);
	close(gone);
	during = ping_worst(&e, 100, 20);
	printf("worst ping: %lld ms before, %lld ms with hostile readers\n",
	       before, during);
	/* the endpoint's thread waits on them; the traffic does not */
	ck_assert_int_lt(during, before + 200);

	/* an honest reader is answered at once meanwhile */
	before = now_ms();
	endpoint_ask("stats\n", answer, sizeof(answer), 500);
	ck_assert_ptr_nonnull(strstr(answer, "conn ctx="));
	printf("answered beside the hostile readers in %lld ms\n",
	       now_ms() - before);

	/* garbage gets an error and the door */
	{
		char buf[128];
		struct pollfd p = { garbage, POLLIN, 0 };
		ssize_t n;

		ck_assert_int_eq(poll(&p, 1, 10000), 1);
		n = read(garbage, buf, sizeof(buf) - 1);
		ck_assert_int_gt(n, 0);
		buf[n] = 0;
		ck_assert_ptr_nonnull(strstr(buf, "error"));
	}
	close(garbage);
	for (int i = 0; i < 4; i++)
		close(silent[i]);
	/* and the next honest reader is answered */
	endpoint_ask("stats\n", answer, sizeof(answer), 10000);
	ck_assert_ptr_nonnull(strstr(answer, "conn ctx="));
	/* a reader the endpoint is waiting on does not hold up the close
	 * (it would wait a second for the request) */
	silent[0] = endpoint_connect();
	ck_assert_int_ge(silent[0], 0);
	usleep(100 * 1000); /* taken by the endpoint's thread */
	before = now_ms();
	e2e_teardown(&e);
	during = now_ms() - before;
	printf("teardown with a silent reader: %lld ms\n", during);
	ck_assert_int_lt(during, 500);
	close(silent[0]);
	/* the last context gone, the socket goes */
	ck_assert_int_eq(endpoint_connect(), -ENOENT);
}
END_TEST

static Suite *stats_suite(void)
{
	Suite *s = suite_create("stats");
	TCase *tc = tcase_create("counters");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, known_traffic_gives_exact_counts_on_both_ends);
	tcase_add_test(tc, a_refused_read_request_is_counted_as_its_terminate);
	tcase_add_test(tc, a_corrupted_fpdu_counts_one_crc_error_and_one_terminate);
	tcase_add_test(tc, a_shorter_structure_is_filled_no_further);
	suite_add_tcase(s, tc);
	tc = tcase_create("endpoint");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc,
		       the_endpoint_answers_its_user_and_shrugs_off_hostile_readers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	int rc;

	/* a directory of the test's own: parallel runs do not meet */
	snprintf(stats_dir, sizeof(stats_dir), "/tmp/iwarp-stats-test.XXXXXX");
	if (!mkdtemp(stats_dir)) {
		perror("mkdtemp");
		return 1;
	}
	setenv("IWARP_STATS_DIR", stats_dir, 1);
	unsetenv("IWARP_STATS");
	rc = run_suite(stats_suite());
	/* what a failed test's process may have left */
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", stats_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", stats_dir);
	}
	return rc;
}
