// SPDX-License-Identifier: MIT
/*
 * Send queue requests that move no data of their own: the fence (a
 * request waits until every earlier RDMA Read has its response) and the
 * local invalidate (one of our own STags dies, in its turn).  The fence is
 * watched from a raw peer, which sees exactly when each FPDU leaves.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "e2e.h"
#include "lib/byteorder.h"

enum { READ_LEN = 100, HOLD_MS = 300 };

/* The library as responder, a raw peer as initiator with IRD = ORD = 1. */
static int raw_peer_pair(struct e2e_side *s, struct iw_cm_id **l)
{
	struct e2e_opts o;
	struct iw_cm_event *ev;
	char port[16];
	int fd;

	e2e_opts_default(&o);
	e2e_side_open(s, &o);
	*l = iw_create_id(s->ch, NULL);
	ck_assert_int_eq(iw_listen(*l, "127.0.0.1", "0", 4), 0);
	e2e_port(*l, port, sizeof(port));
	fd = e2e_raw_request(port, 0, 1);
	ev = e2e_event(s->ch, E2E_WAIT_MS);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_CONNECT_REQUEST);
	s->id = ev->id;
	iw_ack_cm_event(ev);
	ck_assert_int_eq(iw_accept(s->id, s->qp, NULL), 0);
	e2e_expect(s->ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	e2e_raw_reply(fd);
	return fd;
}

/* An untagged Send (QN 0) of @len octets with MSN @msn from the raw peer. */
static void raw_send(int fd, uint32_t msn, const void *p, size_t len)
{
	uint8_t ulpdu[18 + 64], fpdu[sizeof(ulpdu) + 16];

	memset(ulpdu, 0, 18);
	ulpdu[0] = 0x41;
	ulpdu[1] = 0x43;
	put_be32(ulpdu + 10, msn);
	memcpy(ulpdu + 18, p, len);
	e2e_raw_write(fd, fpdu, e2e_raw_fpdu(fpdu, sizeof(fpdu), ulpdu, 18 + len));
}

/* Whether anything arrives on @fd within @ms. */
static bool raw_quiet(int fd, int ms)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, ms) == 0;
}

/*
 * A Read, then a Send; with the fence (_i == 1) the Send leaves only once
 * the Read Response has been placed, without it (_i == 0) right behind
 * the Read Request.  Both complete, in order, with the Read's data.
 */
START_TEST(a_fenced_send_waits_for_the_read_before_it)
{
	bool fence = _i;
	uint8_t ulpdu[256], fpdu[256], resp[14 + READ_LEN];
	struct e2e_side s;
	struct iw_cm_id *l;
	struct iw_sge rsge, ssge, sink;
	struct iw_wc wc[2];
	uint32_t sink_stag;
	uint64_t sink_to;
	size_t n;
	int fd;

	fd = raw_peer_pair(&s, &l);
	rsge = (struct iw_sge){ (uintptr_t)s.buf, 64, s.mr->lkey };
	ck_assert_int_eq(iw_post_recv(s.qp, &(struct iw_recv_wr){
		.wr_id = 1, .sg_list = &rsge, .num_sge = 1 }, NULL), 0);
	raw_send(fd, 1, "open", 4); /* the initiator speaks first */
	e2e_poll(s.cq, wc, 1, E2E_WAIT_MS);
	ck_assert_int_eq(wc[0].opcode, IW_WC_RECV);

	memset(s.buf + 4096, 0, READ_LEN);
	sink = (struct iw_sge){ (uintptr_t)s.buf + 4096, READ_LEN, s.mr->lkey };
	memcpy(s.buf + 8192, "fenced", 6);
	ssge = (struct iw_sge){ (uintptr_t)s.buf + 8192, 6, s.mr->lkey };
	ck_assert_int_eq(iw_post_send(s.qp, &(struct iw_send_wr){
		.wr_id = 2, .sg_list = &sink, .num_sge = 1,
		.opcode = IW_WR_RDMA_READ, .send_flags = IW_SEND_SIGNALED,
		.rdma = { 0x1000, 0x5500 },
		.next = &(struct iw_send_wr){
			.wr_id = 3, .sg_list = &ssge, .num_sge = 1,
			.opcode = IW_WR_SEND,
			.send_flags = IW_SEND_SIGNALED |
				      (fence ? IW_SEND_FENCE : 0) } }, NULL), 0);

	/* the Read Request: untagged, QN 1, RDMAP opcode 1 */
	n = e2e_raw_read_fpdu(fd, ulpdu, sizeof(ulpdu));
	ck_assert_uint_eq(n, 18 + 28);
	ck_assert_uint_eq(ulpdu[1] & 0x0f, 1);
	sink_stag = get_be32(ulpdu + 18);
	sink_to = get_be64(ulpdu + 22);
	ck_assert_uint_eq(sink_stag, s.mr->lkey);
	ck_assert_uint_eq(sink_to, (uintptr_t)s.buf + 4096);
	ck_assert_uint_eq(get_be32(ulpdu + 30), READ_LEN);
	ck_assert_uint_eq(get_be32(ulpdu + 34), 0x5500);
	ck_assert_uint_eq(get_be64(ulpdu + 38), 0x1000);

	if (!fence) {
		/* the Send follows at once */
		n = e2e_raw_read_fpdu(fd, ulpdu, sizeof(ulpdu));
		ck_assert_uint_eq(ulpdu[1] & 0x0f, 3);
	} else {
		ck_assert_msg(raw_quiet(fd, HOLD_MS),
			      "the fenced Send left before the Read Response");
	}

	/* the Read Response: tagged, last, opcode 2, at the sink */
	resp[0] = 0xc1;
	resp[1] = 0x42;
	put_be32(resp + 2, sink_stag);
	put_be64(resp + 6, sink_to);
	memset(resp + 14, 0x77, READ_LEN);
	e2e_raw_write(fd, fpdu, e2e_raw_fpdu(fpdu, sizeof(fpdu), resp,
					      sizeof(resp)));
	if (fence) {
		n = e2e_raw_read_fpdu(fd, ulpdu, sizeof(ulpdu));
		ck_assert_uint_eq(n, 18 + 6);
		ck_assert_uint_eq(ulpdu[1] & 0x0f, 3);
	}
	ck_assert_mem_eq(ulpdu + 18, "fenced", 6);

	e2e_poll(s.cq, wc, 2, E2E_WAIT_MS);
	ck_assert_uint_eq(wc[0].wr_id, 2);
	ck_assert_int_eq(wc[0].status, IW_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, IW_WC_RDMA_READ);
	ck_assert_uint_eq(wc[0].byte_len, READ_LEN);
	ck_assert_uint_eq(wc[1].wr_id, 3);
	ck_assert_int_eq(wc[1].status, IW_WC_SUCCESS);
	ck_assert_int_eq(wc[1].opcode, IW_WC_SEND);
	for (int i = 0; i < READ_LEN; i++)
		require(s.buf[4096 + i] == 0x77, "sink octet %d", i);
	close(fd);
	ck_assert_int_eq(iw_destroy_id(l), 0);
	e2e_side_close(&s);
}
END_TEST

/* A fence with no Read before it holds nothing back. */
START_TEST(a_fence_without_reads_before_it_waits_for_nothing)
{
	struct e2e_opts o;
	struct e2e e;
	struct iw_sge r, sg;
	struct iw_wc wc;

	e2e_opts_default(&o);
	e2e_connect(&e, &o);
	r = (struct iw_sge){ (uintptr_t)e.s.buf, 64, e.s.mr->lkey };
	ck_assert_int_eq(iw_post_recv(e.s.qp, &(struct iw_recv_wr){
		.wr_id = 1, .sg_list = &r, .num_sge = 1 }, NULL), 0);
	memcpy(e.c.buf, "no reads", 8);
	sg = (struct iw_sge){ (uintptr_t)e.c.buf, 8, e.c.mr->lkey };
	ck_assert_int_eq(iw_post_send(e.c.qp, &(struct iw_send_wr){
		.wr_id = 2, .sg_list = &sg, .num_sge = 1, .opcode = IW_WR_SEND,
		.send_flags = IW_SEND_SIGNALED | IW_SEND_FENCE }, NULL), 0);
	e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	e2e_poll(e.s.cq, &wc, 1, E2E_WAIT_MS);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	ck_assert_mem_eq(e.s.buf, "no reads", 8);
	e2e_teardown(&e);
}
END_TEST

/*
 * A local invalidate completes in its turn with IW_WC_LOCAL_INV; the
 * peer's RDMA Write to the STag afterwards is refused with the Terminate
 * an invalid STag gets (RFC 5041 section 7.2), and the memory stays as it
 * was.
 */
START_TEST(local_invalidate_ends_our_own_stag)
{
	struct e2e_opts o;
	struct e2e e;
	struct iw_mr *target;
	struct iw_sge sg;
	struct iw_wc wc;

	e2e_opts_default(&o);
	e2e_connect(&e, &o);
	target = iw_reg_mr(e.s.pd, e.s.buf + 4096, 4096,
			   IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE);
	ck_assert_ptr_nonnull(target);
	memset(e.s.buf + 4096, 0, 4096);

	/* before: the Write lands */
	memcpy(e.c.buf, "before", 6);
	sg = (struct iw_sge){ (uintptr_t)e.c.buf, 6, e.c.mr->lkey };
	ck_assert_int_eq(iw_post_send(e.c.qp, &(struct iw_send_wr){
		.wr_id = 1, .sg_list = &sg, .num_sge = 1,
		.opcode = IW_WR_RDMA_WRITE, .send_flags = IW_SEND_SIGNALED,
		.rdma = { (uintptr_t)e.s.buf + 4096, target->rkey } }, NULL), 0);
	e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);

	ck_assert_int_eq(iw_post_send(e.s.qp, &(struct iw_send_wr){
		.wr_id = 2, .opcode = IW_WR_LOCAL_INV,
		.send_flags = IW_SEND_SIGNALED,
		.invalidate_rkey = target->lkey }, NULL), 0);
	e2e_poll(e.s.cq, &wc, 1, E2E_WAIT_MS);
	ck_assert_uint_eq(wc.wr_id, 2);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IW_WC_LOCAL_INV);
	ck_assert_mem_eq(e.s.buf + 4096, "before", 6);

	/* after: refused */
	memcpy(e.c.buf, "after!", 6);
	ck_assert_int_eq(iw_post_send(e.c.qp, &(struct iw_send_wr){
		.wr_id = 3, .sg_list = &sg, .num_sge = 1,
		.opcode = IW_WR_RDMA_WRITE, .send_flags = IW_SEND_SIGNALED,
		.rdma = { (uintptr_t)e.s.buf + 4096, target->rkey } }, NULL), 0);
	ck_assert_int_eq(e2e_expect(e.s.ch, IW_CM_EVENT_ERROR, E2E_WAIT_MS),
			 -IW_EDDP_T_STAG);
	e2e_expect(e.c.ch, IW_CM_EVENT_ERROR, E2E_WAIT_MS);
	e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
	ck_assert_uint_eq(wc.wr_id, 3);
	ck_assert_mem_eq(e.s.buf + 4096, "before", 6);
	ck_assert_int_eq(iw_dereg_mr(target), 0);
	e2e_teardown(&e);
}
END_TEST

/*
 * A local invalidate of an STag that is not a valid one of ours fails
 * with a local protection error; the stream ends with it, and what was
 * posted behind it is flushed, each exactly once.
 */
START_TEST(local_invalidate_of_a_bad_stag_fails_the_stream)
{
	struct e2e_opts o;
	struct e2e e;
	struct iw_sge sg;
	struct iw_wc wc[2];
	struct iw_mr *other;
	struct iw_pd *pd2;
	uint32_t bad[] = { 0xdeadbe00, 0 };

	/* the initiator, which may send at once; _i == 1: a real STag, but
	 * of another protection domain */
	e2e_opts_default(&o);
	e2e_connect(&e, &o);
	pd2 = iw_alloc_pd(e.c.ctx);
	ck_assert_ptr_nonnull(pd2);
	other = iw_reg_mr(pd2, e.c.buf + 8192, 64, IW_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(other);
	bad[1] = other->lkey;
	sg = (struct iw_sge){ (uintptr_t)e.c.buf, 4, e.c.mr->lkey };
	ck_assert_int_eq(iw_post_send(e.c.qp, &(struct iw_send_wr){
		.wr_id = 1, .opcode = IW_WR_LOCAL_INV,
		.invalidate_rkey = bad[_i],
		.next = &(struct iw_send_wr){
			.wr_id = 2, .sg_list = &sg, .num_sge = 1,
			.opcode = IW_WR_SEND, .send_flags = IW_SEND_SIGNALED } },
		NULL), 0);
	e2e_poll(e.c.cq, wc, 2, E2E_WAIT_MS);
	ck_assert_uint_eq(wc[0].wr_id, 1);
	ck_assert_int_eq(wc[0].status, IW_WC_LOC_PROT_ERR);
	ck_assert_int_eq(wc[0].opcode, IW_WC_LOCAL_INV);
	ck_assert_int_eq(wc[0].err, -IW_ELOCAL_PROTECTION);
	ck_assert_uint_eq(wc[1].wr_id, 2);
	ck_assert_int_eq(wc[1].status, IW_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(e2e_expect(e.c.ch, IW_CM_EVENT_ERROR, E2E_WAIT_MS),
			 -IW_ELOCAL_PROTECTION);
	ck_assert_int_eq(e2e_poll_upto(e.c.cq, wc, 1, 100), 0);
	ck_assert_int_eq(iw_dereg_mr(other), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd2), 0);
	e2e_teardown(&e);
}
END_TEST

/* A local invalidate names no buffer and carries nothing inline. */
START_TEST(local_invalidate_with_buffers_is_refused)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct iw_sge sg;
	struct iw_send_wr *bad = NULL;
	struct iw_send_wr w;

	e2e_opts_default(&o);
	e2e_side_open(&s, &o);
	sg = (struct iw_sge){ (uintptr_t)s.buf, 4, s.mr->lkey };
	w = (struct iw_send_wr){ .wr_id = 1, .opcode = IW_WR_LOCAL_INV,
				 .sg_list = &sg, .num_sge = 1,
				 .send_flags = IW_SEND_INLINE,
				 .invalidate_rkey = s.mr->lkey };
	ck_assert_int_eq(iw_post_send(s.qp, &w, &bad), -EINVAL);
	ck_assert_ptr_eq(bad, &w);
	e2e_side_close(&s);
}
END_TEST

static Suite *fence_inv_suite(void)
{
	Suite *s = suite_create("fence_inv");
	TCase *tc = tcase_create("fence");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, a_fenced_send_waits_for_the_read_before_it, 0, 2);
	tcase_add_test(tc, a_fence_without_reads_before_it_waits_for_nothing);
	suite_add_tcase(s, tc);
	tc = tcase_create("local_invalidate");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, local_invalidate_ends_our_own_stag);
	tcase_add_loop_test(tc, local_invalidate_of_a_bad_stag_fails_the_stream,
			    0, 2);
	tcase_add_test(tc, local_invalidate_with_buffers_is_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(fence_inv_suite());
}
