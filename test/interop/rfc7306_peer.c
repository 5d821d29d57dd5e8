// SPDX-License-Identifier: MIT
/*
 * A libiwarp client that speaks RFC 7306 to a peer that does not: it
 * connects with the extensions enabled, sends one Atomic Request (a Fetch
 * and Add on STag 1) or one Immediate Data message as its first message,
 * and reports the Terminate the peer answers with, in both readings of
 * its control word (the RFC's, and the byte-swapped one of Linux siw),
 * with the names of the errors they make.
 *
 *   rfc7306_peer HOST PORT atomic|imm
 *
 * Exits 0 when a Terminate came back, 1 otherwise (the peer took the
 * message, closed without a word, or the connection failed).
 */
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <iwarp/iwarp.h>

#define WAIT_MS 30000

static const char *prog = "rfc7306_peer";

static int fail(const char *what, int rc)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what,
		rc ? iw_strerror(rc) : "failed");
	return 1;
}

static struct iw_cm_event *next_event(struct iw_cm_channel *ch)
{
	struct pollfd f = { iw_cm_channel_fd(ch), POLLIN, 0 };
	struct iw_cm_event *ev;

	if (poll(&f, 1, WAIT_MS) <= 0 || iw_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

static void print_terminate(const struct iw_terminate_info *t)
{
	printf("terminate received: RFC reading %u/%u/0x%02x (%s), "
	       "siw reading %u/%u/0x%02x (%s)\n",
	       t->layer, t->etype, t->ecode,
	       t->words ? t->words : "not an RFC 5040 error",
	       t->swapped_layer, t->swapped_etype, t->swapped_ecode,
	       t->swapped_words ? t->swapped_words : "not an RFC 5040 error");
}

int main(int argc, char **argv)
{
	struct iw_conn_param cp = { .ird = 1, .ord = 1 };
	struct iw_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IW_QP_INIT_ATTR_RFC7306,
		.rfc7306 = IW_RFC7306_ALL,
	};
	static uint64_t result;
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	struct iw_cm_event *ev;
	struct iw_cm_id *id;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_qp *qp;
	struct iw_mr *mr;
	struct iw_sge sg;
	struct iw_send_wr wr = { .wr_id = 1, .send_flags = IW_SEND_SIGNALED };
	struct iw_wc wc = { .status = IW_WC_SUCCESS };
	bool atomic;
	int n = 0;
	int rc, got = 1;

	if (argc != 4 || (strcmp(argv[3], "atomic") && strcmp(argv[3], "imm"))) {
		fprintf(stderr, "usage: %s HOST PORT atomic|imm\n", prog);
		return 2;
	}
	atomic = !strcmp(argv[3], "atomic");
	ctx = iw_open(NULL);
	ch = ctx ? iw_create_cm_channel(ctx) : NULL;
	pd = ctx ? iw_alloc_pd(ctx) : NULL;
	cq = ctx ? iw_create_cq(ctx, 16, NULL) : NULL;
	if (!ch || !pd || !cq)
		return fail("open", 0);
	qa.send_cq = qa.recv_cq = cq;
	qp = iw_create_qp(pd, &qa);
	mr = iw_reg_mr(pd, &result, sizeof(result), IW_ACCESS_LOCAL_WRITE);
	id = iw_create_id(ch, NULL);
	if (!qp || !mr || !id)
		return fail("create", 0);
	rc = iw_connect(id, argv[1], argv[2], qp, &cp);
	if (rc)
		return fail("connect", rc);
	ev = next_event(ch);
	if (!ev || ev->event != IW_CM_EVENT_ESTABLISHED)
		return fail(ev ? iw_cm_event_str(ev->event) : "no answer",
			    ev ? ev->status : 0);
	iw_ack_cm_event(ev);

	if (atomic) {
		sg = (struct iw_sge){ (uintptr_t)&result, 8, mr->lkey };
		wr.sg_list = &sg;
		wr.num_sge = 1;
		wr.opcode = IW_WR_ATOMIC_FETCH_AND_ADD;
		wr.atomic.remote_addr = 0;
		wr.atomic.rkey = 1;
		wr.atomic.compare_add = 1;
	} else {
		wr.opcode = IW_WR_SEND_WITH_IMM;
		wr.imm_data = 0x7306;
	}
	rc = iw_post_send(qp, &wr, NULL);
	if (rc)
		return fail("post", rc);
	printf("sent: %s\n", atomic ? "Atomic Request (Fetch and Add, QN 1)"
				    : "Immediate Data (QN 0)");

	/* the peer's answer, then our request's end */
	ev = next_event(ch);
	if (!ev)
		return fail("no answer from the peer", 0);
	if (ev->terminate.valid && ev->terminate.received) {
		print_terminate(&ev->terminate);
		got = 0;
	} else {
		printf("no Terminate: %s (%s)\n", iw_cm_event_str(ev->event),
		       iw_strerror(ev->status));
	}
	iw_ack_cm_event(ev);
	for (int i = 0; i < 100 && (n = iw_poll_cq(cq, 1, &wc)) == 0; i++)
		poll(NULL, 0, 10);
	printf("our request: %s\n",
	       n == 1 ? iw_wc_status_str(wc.status) : "no completion");
	iw_destroy_id(id);
	iw_destroy_qp(qp);
	iw_dereg_mr(mr);
	iw_destroy_cq(cq);
	iw_dealloc_pd(pd);
	iw_destroy_cm_channel(ch);
	iw_close(ctx);
	return got;
}
