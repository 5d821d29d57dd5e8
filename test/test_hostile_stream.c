// SPDX-License-Identifier: MIT
/*
 * Hostile peers on an established stream: one that never reads (its
 * window stays shut) while we send, one that floods us with tiny FPDUs,
 * one that asks for more RDMA Reads at once than the IRD it was granted.
 * Each is a raw peer on a plain socket, accepted by the same server as a
 * good client; the server's memory does not grow with what the peer
 * does, every work request completes exactly once, the peer gets the
 * RFC's Terminate where one is due, and the good client is served all
 * the while.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/byteorder.h"
#include "e2e.h"

#define DEPTH 16
/*
 * What one established connection holds in the library, its queue pair
 * and CQ included (small queues here): iwarp(7) states about 50 KiB, and
 * up to 128 KiB more with CRC at loopback's MSS.
 */
#define CONNECTION_BYTES (256 * 1024)
/* allocations the library may make meanwhile (libevent's own, say) */
#define SLACK_BYTES (256 * 1024)

/* A connected good pair, and the server's second QP for the raw peer. */
struct arena {
	struct e2e e;
	struct e2e_opts o;
	struct iw_cq *cq2;
	struct iw_qp *qp2;
	struct iw_cm_id *id2;
	int fd; /* the raw peer */
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* The raw peer: its Request (IRD and ORD @rd), accepted on qp2. */
static void arena_open(struct arena *a, int rcvbuf, uint16_t rd)
{
	struct iw_qp_init_attr qa = {
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct iw_cm_event *ev;
	size_t before;

	e2e_opts_default(&a->o);
	a->o.depth = DEPTH;
	e2e_connect(&a->e, &a->o);
	e2e_ping(&a->e, 0, E2E_WAIT_MS); /* the loop's own allocations */
	before = e2e_heap_in_use();
	a->cq2 = iw_create_cq(a->e.s.ctx, 2 * DEPTH, NULL);
	ck_assert_ptr_nonnull(a->cq2);
	qa.send_cq = qa.recv_cq = a->cq2;
	a->qp2 = iw_create_qp(a->e.s.pd, &qa);
	ck_assert_ptr_nonnull(a->qp2);
	a->fd = e2e_raw_request(a->e.port, rcvbuf, rd);
	ev = e2e_event(a->e.s.ch, E2E_WAIT_MS);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_CONNECT_REQUEST);
	a->id2 = ev->id;
	iw_ack_cm_event(ev);
	ck_assert_int_eq(iw_accept(a->id2, a->qp2,
				   &(struct iw_conn_param){ .ird = rd,
							    .ord = rd }),
			 0);
	e2e_expect(a->e.s.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	e2e_raw_reply(a->fd);
	ck_assert_msg(e2e_heap_in_use() - before <= CONNECTION_BYTES,
		      "one connection holds %zu octets",
		      e2e_heap_in_use() - before);
}

static void arena_close(struct arena *a)
{
	close(a->fd);
	ck_assert_int_eq(iw_destroy_id(a->id2), 0);
	ck_assert_int_eq(iw_destroy_qp(a->qp2), 0);
	ck_assert_int_eq(iw_destroy_cq(a->cq2), 0);
	e2e_teardown(&a->e);
}

/* An RDMA Write of @len octets of @p to @stag at @to, as one FPDU. */
static size_t write_fpdu(uint8_t *out, size_t cap, uint32_t stag, uint64_t to,
			 const void *p, size_t len)
{
	uint8_t u[14 + 256];

	ck_assert_uint_le(len, 256);
	u[0] = 0x80 | 0x40 | 1; /* tagged, last, DDP version 1 */
	u[1] = 0x40 | 0;	 /* RDMAP version 1, RDMA Write */
	put_be32(u + 2, stag);
	put_be64(u + 6, to);
	memcpy(u + 14, p, len);
	return e2e_raw_fpdu(out, cap, u, 14 + len);
}

/* An RDMA Read Request for @size octets of @src_stag at @src_to. */
static size_t read_req_fpdu(uint8_t *out, size_t cap, uint32_t msn,
			    uint32_t src_stag, uint64_t src_to, uint32_t size)
{
	uint8_t u[18 + 28] = { 0x40 | 1, 0x40 | 1 }; /* last; Read Request */

	put_be32(u + 6, 1); /* the Read Request queue */
	put_be32(u + 10, msn);
	put_be32(u + 14, 0);
	put_be32(u + 18, 0x1234); /* sink STag and TO: ours, never checked */
	put_be64(u + 22, 0);
	put_be32(u + 30, size);
	put_be32(u + 34, src_stag);
	put_be64(u + 38, src_to);
	return e2e_raw_fpdu(out, cap, u, sizeof(u));
}

/* The raw peer's first FPDU, without which a responder may not send. */
static void raw_first_fpdu(struct arena *a)
{
	uint8_t f[64];
	size_t n = write_fpdu(f, sizeof(f), a->e.s.mr->rkey,
			      (uintptr_t)a->e.s.buf + 4096, "x", 1);

	e2e_raw_write(a->fd, f, n);
}

/*
 * A peer that never reads while we send: our socket fills, posting stops
 * at the queue depth with nothing copied or queued beyond it, the good
 * client is served meanwhile, and a disconnect completes every request
 * exactly once, at once.
 */
START_TEST(peer_that_never_reads_holds_nothing_and_stops_no_one)
{
	struct arena a;
	struct iw_sge s;
	struct iw_wc wc[DEPTH + 1];
	bool seen[DEPTH] = { false };
	size_t before;
	int posted = 0, rc = 0, got;
	long long t0;

	arena_open(&a, 4096, 1);
	raw_first_fpdu(&a);
	before = e2e_heap_in_use();
	s = (struct iw_sge){ (uintptr_t)a.e.s.buf, (uint32_t)a.e.s.len,
			     a.e.s.mr->lkey };
	while (posted <= DEPTH) {
		rc = iw_post_send(a.qp2,
				  &(struct iw_send_wr){
					  .wr_id = (uint64_t)posted,
					  .sg_list = &s, .num_sge = 1,
					  .opcode = IW_WR_RDMA_WRITE,
					  .send_flags = IW_SEND_SIGNALED,
					  .rdma = { 0, 0x5678 } },
				  NULL);
		if (rc)
			break;
		posted++;
	}
	ck_assert_int_eq(rc, -ENOMEM);
	ck_assert_int_eq(posted, DEPTH);
	/*
	 * DEPTH MiB posted: what the socket buffers took has completed, the
	 * rest waits for a window that never opens
	 */
	usleep(200 * 1000);
	got = iw_poll_cq(a.cq2, DEPTH, wc);
	ck_assert_int_lt(got, DEPTH / 2);
	ck_assert_uint_le(e2e_heap_in_use(), before + SLACK_BYTES);
	for (uint32_t i = 0; i < 20; i++)
		ck_assert_int_lt(e2e_ping(&a.e, i, 2000), 2000);
	t0 = now_ms();
	ck_assert_int_eq(iw_disconnect(a.id2), 0);
	e2e_poll(a.cq2, wc + got, DEPTH - got, 2000);
	ck_assert_int_lt(now_ms() - t0, 2000);
	got = DEPTH;
	ck_assert_int_eq(e2e_poll_upto(a.cq2, wc + got, 1, 100), 0);
	for (int i = 0; i < got; i++) {
		ck_assert_uint_lt(wc[i].wr_id, DEPTH);
		ck_assert_msg(!seen[wc[i].wr_id], "request %llu completed twice",
			      (unsigned long long)wc[i].wr_id);
		seen[wc[i].wr_id] = true;
		ck_assert(wc[i].status == IW_WC_SUCCESS ||
			  wc[i].status == IW_WC_WR_FLUSH_ERR);
	}
	e2e_expect(a.e.s.ch, IW_CM_EVENT_DISCONNECTED, E2E_WAIT_MS);
	e2e_ping(&a.e, 100, E2E_WAIT_MS);
	arena_close(&a);
}
END_TEST

struct flood {
	struct arena *a;
	int fpdus;
};

/* Tiny Writes as fast as the socket takes them, then a last one. */
static void *flood_writer(void *arg)
{
	struct flood *f = arg;
	struct arena *a = f->a;
	enum { BATCH = 1000 };
	static uint8_t buf[BATCH * 32];
	uint32_t stag = a->e.s.mr->rkey;
	uint64_t base = (uintptr_t)a->e.s.buf + 8192;

	for (int done = 0; done < f->fpdus; done += BATCH) {
		size_t n = 0;

		for (int k = 0; k < BATCH; k++) {
			uint8_t v = (uint8_t)(done + k);

			n += write_fpdu(buf + n, sizeof(buf) - n, stag,
					base + (uint64_t)((done + k) % 4096), &v,
					1);
		}
		e2e_raw_write(a->fd, buf, n);
	}
	e2e_raw_write(a->fd, buf,
		      write_fpdu(buf, sizeof(buf), stag, base + 4096, "\x5a", 1));
	return NULL;
}

/*
 * A flood of the smallest FPDUs there are (one-octet RDMA Writes, 24
 * octets on the wire each): the server places every one and keeps
 * serving the good client with bounded delay, holding no more memory.
 */
START_TEST(flood_of_tiny_fpdus_starves_no_one)
{
	struct arena a;
	struct flood f = { &a, 200000 };
	volatile uint8_t *last;
	pthread_t t;
	size_t before;
	long long end, worst = 0;
	uint32_t pings = 0;

	arena_open(&a, 0, 1);
	last = a.e.s.buf + 8192 + 4096;
	*last = 0;
	before = e2e_heap_in_use();
	ck_assert_int_eq(pthread_create(&t, NULL, flood_writer, &f), 0);
	end = now_ms() + 60000;
	while (*last != 0x5a && now_ms() < end) {
		long long dt = e2e_ping(&a.e, pings++, 2000);

		worst = dt > worst ? dt : worst;
	}
	pthread_join(t, NULL);
	ck_assert_msg(*last == 0x5a, "the flood did not all arrive");
	ck_assert_msg(pings >= 2 && worst < 2000,
		      "%u pings during the flood, the slowest %lld ms", pings,
		      worst);
	ck_assert_uint_le(e2e_heap_in_use(), before + SLACK_BYTES);
	/* each octet holds the last Write aimed at it */
	for (int j = f.fpdus - 4096; j < f.fpdus; j++)
		require(a.e.s.buf[8192 + j % 4096] == (uint8_t)j,
			"octet %d holds 0x%02x, not 0x%02x", j % 4096,
			a.e.s.buf[8192 + j % 4096], (uint8_t)j);
	arena_close(&a);
}
END_TEST

/*
 * More RDMA Read Requests at once than the IRD granted (2), with the
 * responses stuck behind a peer that does not read them: the third is
 * answered with the Terminate of RFC 5040 section 7.1 (RDMAP, remote
 * operation error, 0x07) carrying its headers, the server reports it,
 * and no more than the IRD's worth of Reads is ever being answered.
 */
START_TEST(read_requests_beyond_the_ird_are_terminated)
{
	enum { SIZE = 512 * 1024 };
	struct arena a;
	struct iw_cm_event *ev;
	uint8_t f[3 * 52], *u;
	size_t len;
	int responses = 0;

	arena_open(&a, 4096, 2);
	/* in one segment: the server reads all three before it answers one */
	for (uint32_t msn = 1, n = 0; msn <= 3; msn++) {
		n += read_req_fpdu(f + n, sizeof(f) - n, msn, a.e.s.mr->rkey,
				   (uintptr_t)a.e.s.buf, SIZE);
		if (msn == 3)
			e2e_raw_write(a.fd, f, n);
	}
	ev = e2e_event(a.e.s.ch, E2E_WAIT_MS);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_ERROR);
	ck_assert_ptr_eq(ev->id, a.id2);
	ck_assert_int_eq(ev->status, -IW_ERDMAP_IRD_EXCEEDED);
	ck_assert(ev->terminate.valid && !ev->terminate.received);
	iw_ack_cm_event(ev);
	/* what reached the wire: Read Responses, then the Terminate */
	u = malloc(65536);
	ck_assert_ptr_nonnull(u);
	for (;;) {
		len = e2e_raw_read_fpdu(a.fd, u, 65536);
		ck_assert_uint_gt(len, 0);
		if ((u[1] & 0x0f) != 7) {
			ck_assert_uint_eq(u[1] & 0x0f, 2); /* Read Response */
			responses++;
			continue;
		}
		break;
	}
	ck_assert_uint_eq(get_be32(u + 6), 2); /* the Terminate queue */
	ck_assert_uint_eq(u[18], 0 << 4 | 2); /* RDMAP, remote operation */
	ck_assert_uint_eq(u[19], 0x07);
	ck_assert_uint_eq(u[20], 0x80 | 0x40 | 0x20); /* M, D and R */
	ck_assert_uint_eq(get_be32(u + 24 + 10), 3); /* the third Request */
	ck_assert_uint_eq(e2e_raw_read_fpdu(a.fd, u, 65536), 0);
	ck_assert_int_le(responses, 2 * SIZE / 1000);
	free(u);
	e2e_ping(&a.e, 1, E2E_WAIT_MS);
	arena_close(&a);
}
END_TEST

static Suite *hostile_stream_suite(void)
{
	Suite *s = suite_create("hostile stream");
	TCase *tc = tcase_create("peers");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, peer_that_never_reads_holds_nothing_and_stops_no_one);
	tcase_add_test(tc, flood_of_tiny_fpdus_starves_no_one);
	tcase_add_test(tc, read_requests_beyond_the_ird_are_terminated);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(hostile_stream_suite());
}
