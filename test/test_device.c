// SPDX-License-Identifier: MIT
/*
 * What a context tells about itself and the calls that adapters' verbs
 * have and ibverbs applications expect: the device limits (each one the
 * exact edge the calls enforce), regions whose tagged offsets start where
 * the application says, and completions that name their QP's context
 * after the QP is gone.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

START_TEST(query_device_limits_are_the_edges_the_calls_enforce)
{
	struct iw_context *ctx = iw_open(&(struct iw_context_attr){ .max_mr = 16 });
	struct iw_device_attr a;
	struct iw_mr *mr[17];
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_qp *qp;
	static uint8_t buf[64];
	struct iw_qp_init_attr qa;

	ck_assert_ptr_nonnull(ctx);
	memset(&a, 0xa5, sizeof(a));
	ck_assert_int_eq(iw_query_device(ctx, &a, sizeof(a)), 0);
	ck_assert_uint_eq(a.max_mr, 16);
	ck_assert_uint_gt(a.max_qp, 0);
	ck_assert_uint_gt(a.max_cq, 0);
	ck_assert_uint_gt(a.max_mr_size, 1u << 30);
	ck_assert_uint_eq(a.max_ird, 16383);
	ck_assert_uint_eq(a.max_ord, 16383);
	ck_assert_uint_eq(a.max_private_data, 508);
	ck_assert_uint_eq(a.rfc7306, IW_RFC7306_ALL);
	ck_assert_uint_ge(a.max_srq_wr, 1);
	ck_assert_uint_ge(a.max_srq_sge, 1);

	pd = iw_alloc_pd(ctx);
	ck_assert_ptr_nonnull(pd);
	/* registrations: exactly max_mr at once */
	for (int i = 0; i < 16; i++) {
		mr[i] = iw_reg_mr(pd, buf, sizeof(buf), IW_ACCESS_LOCAL_WRITE);
		ck_assert_ptr_nonnull(mr[i]);
	}
	mr[16] = iw_reg_mr(pd, buf, sizeof(buf), IW_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_null(mr[16]);
	ck_assert_int_eq(errno, ENOMEM);
	for (int i = 0; i < 16; i++)
		ck_assert_int_eq(iw_dereg_mr(mr[i]), 0);

	/* a CQ one entry larger than max_cqe is refused */
	ck_assert_ptr_null(iw_create_cq(ctx, (int)a.max_cqe + 1, NULL));
	ck_assert_int_eq(errno, EINVAL);
	cq = iw_create_cq(ctx, (int)(2 * a.max_qp_wr + 2), NULL);
	ck_assert_ptr_nonnull(cq);

	/* queue depth, SGEs and inline data: the maximum works, one more not */
	for (int over = 0; over < 4; over++) {
		qa = (struct iw_qp_init_attr){
			.send_cq = cq, .recv_cq = cq,
			.cap = { a.max_qp_wr, 1, a.max_sge, a.max_sge,
				 a.max_inline_data },
		};
		if (over == 1)
			qa.cap.max_send_wr++;
		else if (over == 2)
			qa.cap.max_send_sge++;
		else if (over == 3)
			qa.cap.max_inline_data++;
		qp = iw_create_qp(pd, &qa);
		if (over == 0) {
			ck_assert_ptr_nonnull(qp);
			ck_assert_int_eq(iw_destroy_qp(qp), 0);
		} else {
			ck_assert_msg(qp == NULL, "limit %d taken past the edge",
				      over);
			ck_assert_int_eq(errno, EINVAL);
		}
	}
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ck_assert_int_eq(iw_close(ctx), 0);
}
END_TEST

/* A caller that knows fewer fields gets only those written. */
START_TEST(query_device_writes_no_more_than_attr_size)
{
	struct iw_context *ctx = iw_open(NULL);
	struct iw_device_attr a;
	const size_t part = offsetof(struct iw_device_attr, max_inline_data);

	ck_assert_ptr_nonnull(ctx);
	memset(&a, 0xa5, sizeof(a));
	ck_assert_int_eq(iw_query_device(ctx, &a, part), 0);
	ck_assert_uint_eq(a.max_sge, 32);
	for (size_t i = part; i < sizeof(a); i++)
		require(((uint8_t *)&a)[i] == 0xa5, "octet %zu written", i);
	ck_assert_int_eq(iw_query_device(NULL, &a, sizeof(a)), -EINVAL);
	ck_assert_int_eq(iw_query_device(ctx, NULL, sizeof(a)), -EINVAL);
	ck_assert_int_eq(iw_close(ctx), 0);
}
END_TEST

/*
 * A region registered at an iova is addressed by the peer from that
 * value: an RDMA Write and an RDMA Read at iova + 100 touch the octet
 * 100 into the buffer.
 */
START_TEST(reg_mr_iova_addresses_the_region_from_the_iova)
{
	const uint64_t iova = 0x100000000ull;
	struct e2e_opts o;
	struct e2e e;
	struct iw_mr *mr;
	struct iw_sge sg, r;
	struct iw_wc wc;

	e2e_opts_default(&o);
	e2e_connect(&e, &o);
	memset(e.s.buf + 4096, 0, 4096);
	mr = iw_reg_mr_iova(e.s.pd, e.s.buf + 4096, 4096, iova,
			    IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE |
				    IW_ACCESS_REMOTE_READ);
	ck_assert_ptr_nonnull(mr);
	memcpy(e.c.buf, "at iova", 7);
	sg = (struct iw_sge){ (uintptr_t)e.c.buf, 7, e.c.mr->lkey };
	ck_assert_int_eq(iw_post_send(e.c.qp, &(struct iw_send_wr){
		.wr_id = 1, .sg_list = &sg, .num_sge = 1,
		.opcode = IW_WR_RDMA_WRITE, .send_flags = IW_SEND_SIGNALED,
		.rdma = { iova + 100, mr->rkey } }, NULL), 0);
	e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	/* a Send behind the Write: once it is in, so is the Write */
	r = (struct iw_sge){ (uintptr_t)e.s.buf, 16, e.s.mr->lkey };
	ck_assert_int_eq(iw_post_recv(e.s.qp, &(struct iw_recv_wr){
		.wr_id = 9, .sg_list = &r, .num_sge = 1 }, NULL), 0);
	ck_assert_int_eq(iw_post_send(e.c.qp, &(struct iw_send_wr){
		.wr_id = 3, .sg_list = &sg, .num_sge = 1, .opcode = IW_WR_SEND,
		.send_flags = IW_SEND_SIGNALED }, NULL), 0);
	e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
	e2e_poll(e.s.cq, &wc, 1, E2E_WAIT_MS);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	ck_assert_mem_eq(e.s.buf + 4096 + 100, "at iova", 7);

	memcpy(e.s.buf + 4096 + 200, "read me", 7);
	sg = (struct iw_sge){ (uintptr_t)e.c.buf + 64, 7, e.c.mr->lkey };
	ck_assert_int_eq(iw_post_send(e.c.qp, &(struct iw_send_wr){
		.wr_id = 2, .sg_list = &sg, .num_sge = 1,
		.opcode = IW_WR_RDMA_READ, .send_flags = IW_SEND_SIGNALED,
		.rdma = { iova + 200, mr->rkey } }, NULL), 0);
	e2e_poll(e.c.cq, &wc, 1, E2E_WAIT_MS);
	ck_assert_int_eq(wc.status, IW_WC_SUCCESS);
	ck_assert_mem_eq(e.c.buf + 64, "read me", 7);

	/* offsets that would pass 2^64 are refused */
	ck_assert_ptr_null(iw_reg_mr_iova(e.s.pd, e.s.buf, 4096,
					  UINT64_MAX - 100, IW_ACCESS_LOCAL_WRITE));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	e2e_teardown(&e);
}
END_TEST

/*
 * Completions of a destroyed QP stay in the CQ; each still names the
 * QP's context, so that a caller can tell whose they were without
 * touching the QP.
 */
START_TEST(a_completion_names_its_qp_context_after_the_qp_is_gone)
{
	struct iw_context *ctx = iw_open(NULL);
	struct iw_pd *pd = iw_alloc_pd(ctx);
	struct iw_cq *cq = iw_create_cq(ctx, 8, NULL);
	static uint8_t buf[64];
	struct iw_mr *mr = iw_reg_mr(pd, buf, sizeof(buf), IW_ACCESS_LOCAL_WRITE);
	struct iw_qp *qp;
	struct iw_sge sg = { (uintptr_t)buf, sizeof(buf), 0 };
	struct iw_wc wc[2];
	int tag;

	ck_assert_ptr_nonnull(mr);
	sg.lkey = mr->lkey;
	qp = iw_create_qp(pd, &(struct iw_qp_init_attr){
		.send_cq = cq, .recv_cq = cq, .qp_context = &tag,
		.cap = { 2, 2, 1, 1, 0 } });
	ck_assert_ptr_nonnull(qp);
	for (uint64_t id = 1; id <= 2; id++)
		ck_assert_int_eq(iw_post_recv(qp, &(struct iw_recv_wr){
			.wr_id = id, .sg_list = &sg, .num_sge = 1 }, NULL), 0);
	ck_assert_int_eq(iw_qp_to_error(qp), 0);
	ck_assert_int_eq(iw_poll_cq(cq, 1, wc), 1);
	ck_assert_ptr_eq(wc[0].qp_context, &tag);
	ck_assert_int_eq(iw_destroy_qp(qp), 0);
	ck_assert_int_eq(iw_poll_cq(cq, 2, wc), 1);
	ck_assert_uint_eq(wc[0].wr_id, 2);
	ck_assert_int_eq(wc[0].status, IW_WC_WR_FLUSH_ERR);
	ck_assert_ptr_eq(wc[0].qp_context, &tag);
	ck_assert_int_eq(iw_dereg_mr(mr), 0);
	ck_assert_int_eq(iw_destroy_cq(cq), 0);
	ck_assert_int_eq(iw_dealloc_pd(pd), 0);
	ck_assert_int_eq(iw_close(ctx), 0);
}
END_TEST

static Suite *device_suite(void)
{
	Suite *s = suite_create("device");
	TCase *tc = tcase_create("device");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, query_device_limits_are_the_edges_the_calls_enforce);
	tcase_add_test(tc, query_device_writes_no_more_than_attr_size);
	tcase_add_test(tc, reg_mr_iova_addresses_the_region_from_the_iova);
	tcase_add_test(tc, a_completion_names_its_qp_context_after_the_qp_is_gone);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(device_suite());
}
