/* Register memory, connect, RDMA Write, RDMA Read, poll: over loopback. */
#include <iwarp/iwarp.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

/* Waits for the next connection event and checks its type. */
static struct iw_cm_id *expect(struct iw_cm_channel *ch,
			       enum iw_cm_event_type type)
{
	struct iw_cm_event *ev;
	struct iw_cm_id *id;

	if (iw_get_cm_event(ch, &ev))
		return NULL;
	id = ev->event == type ? ev->id : NULL;
	if (!id)
		fprintf(stderr, "got %s: %s\n", iw_cm_event_str(ev->event),
			iw_strerror(ev->status));
	iw_ack_cm_event(ev);
	return id;
}

/* Posts one work request and polls until it completes. */
static int run(struct iw_qp *qp, struct iw_cq *cq, struct iw_send_wr *wr)
{
	struct iw_wc wc;
	int n;

	if (iw_post_send(qp, wr, NULL))
		return -1;
	while ((n = iw_poll_cq(cq, 1, &wc)) == 0)
		;
	return n < 0 || wc.status != IW_WC_SUCCESS ? -1 : 0;
}

int main(void)
{
	static char local[64], remote[64];
	struct iw_context *ctx = iw_open(NULL);
	struct iw_cm_channel *ch = iw_create_cm_channel(ctx);
	struct iw_pd *pd = iw_alloc_pd(ctx);
	struct iw_cq *cq = iw_create_cq(ctx, 32, NULL);
	struct iw_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct iw_qp *client = iw_create_qp(pd, &qa);
	struct iw_qp *server = iw_create_qp(pd, &qa);
	struct iw_mr *lmr = iw_reg_mr(pd, local, sizeof(local),
				      IW_ACCESS_LOCAL_WRITE);
	struct iw_mr *rmr = iw_reg_mr(pd, remote, sizeof(remote),
				      IW_ACCESS_REMOTE_WRITE |
					      IW_ACCESS_REMOTE_READ);
	struct iw_cm_id *listener = iw_create_id(ch, NULL);
	struct iw_cm_id *cid = iw_create_id(ch, NULL), *sid;
	struct sockaddr_storage addr;
	struct iw_sge sge;
	struct iw_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				 .send_flags = IW_SEND_SIGNALED };
	char port[8];
	int ok;

	/* listen on a free port of 127.0.0.1 and connect to it */
	if (!ctx || !client || !server || !lmr || !rmr ||
	    iw_listen(listener, "127.0.0.1", "0", 1) ||
	    iw_get_local_addr(listener, &addr))
		return 1;
	snprintf(port, sizeof(port), "%u",
		 ntohs(((struct sockaddr_in *)&addr)->sin_port));
	if (iw_connect(cid, "127.0.0.1", port, client, NULL))
		return 1;
	sid = expect(ch, IW_CM_EVENT_CONNECT_REQUEST);
	if (!sid || iw_accept(sid, server, NULL) ||
	    !expect(ch, IW_CM_EVENT_ESTABLISHED) ||
	    !expect(ch, IW_CM_EVENT_ESTABLISHED))
		return 1;

	/* RDMA Write into the server's region, then read it back */
	strcpy(local, "hello, iWARP");
	sge = (struct iw_sge){ (uintptr_t)local, 13, lmr->lkey };
	wr.opcode = IW_WR_RDMA_WRITE;
	wr.rdma.remote_addr = (uintptr_t)remote;
	wr.rdma.rkey = rmr->rkey;
	if (run(client, cq, &wr))
		return 1;
	sge = (struct iw_sge){ (uintptr_t)local + 32, 13, lmr->lkey };
	wr.opcode = IW_WR_RDMA_READ;
	if (run(client, cq, &wr))
		return 1;
	printf("read back: %s\n", local + 32);
	ok = strcmp(local + 32, "hello, iWARP") == 0;

	iw_disconnect(cid);
	expect(ch, IW_CM_EVENT_DISCONNECTED);
	expect(ch, IW_CM_EVENT_DISCONNECTED);
	iw_destroy_id(cid);
	iw_destroy_id(sid);
	iw_destroy_id(listener);
	iw_destroy_qp(client);
	iw_destroy_qp(server);
	iw_dereg_mr(lmr);
	iw_dereg_mr(rmr);
	iw_destroy_cq(cq);
	iw_dealloc_pd(pd);
	iw_destroy_cm_channel(ch);
	iw_close(ctx);
	return ok ? 0 : 1;
}
