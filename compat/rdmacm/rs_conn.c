// SPDX-License-Identifier: MIT
/*
 * rsocket endpoints and connections: the QP and its buffers, the
 * private data both sides exchange (struct rs_conn_data, rs_wire.h), the
 * connect state machine (blocking, or driven by later calls when
 * non-blocking), accepting, and shutdown with rsockets' own SHUTDOWN and
 * DISCONNECT messages before the connection is torn down.
 *
 * iWARP mode as rdma-core's: messages as Sends (so max_inline_data must
 * hold one), and an initiator depth of 1 on connect, for the RDMA Read
 * that MPA's peer-to-peer setup (RFC 6581) may make before the first
 * message.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat/rdmacm/rs.h"

#define ERR(e) (errno = (e), -1)

static void *page_alloc(size_t len)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *p;

	len = (len + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
	if (posix_memalign(&p, (size_t)pg, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

static void rs_set_qp_size(struct rsock *rs)
{
	struct ibv_device_attr a;
	uint32_t max = RS_QP_MAX_SIZE;

	if (!ibv_query_device(rs->cm_id->verbs, &a) && a.max_qp_wr > 0 &&
	    (uint32_t)a.max_qp_wr < max + RS_RQ_SPARE)
		max = (uint32_t)a.max_qp_wr - RS_RQ_SPARE;
	if (rs->sq_size > max)
		rs->sq_size = (uint16_t)max;
	else if (rs->sq_size < RS_QP_MIN_SIZE)
		rs->sq_size = RS_QP_MIN_SIZE;
	if (rs->rq_size > max)
		rs->rq_size = (uint16_t)max;
	else if (rs->rq_size < RS_QP_MIN_SIZE)
		rs->rq_size = RS_QP_MIN_SIZE;
}

/*
 * Buffers: the send ring plus control slots; the target SGL and iomap the
 * peer writes; the receive buffer, whose halves the peer fills in turn,
 * plus a 4-octet slot per receive for the messages.
 */
static int rs_init_bufs(struct rsock *rs)
{
	size_t tlen, rlen;

	rs->rmsg = calloc((size_t)rs->rq_size + 1, sizeof(*rs->rmsg));
	rs->sbuf = page_alloc(rs->sbuf_size + RS_MAX_CTRL_MSG * RS_QP_CTRL_SIZE);
	if (!rs->rmsg || !rs->sbuf)
		return ERR(ENOMEM);
	rs->smr = ibv_reg_mr(rs->cm_id->pd, rs->sbuf,
			     rs->sbuf_size + RS_MAX_CTRL_MSG * RS_QP_CTRL_SIZE,
			     IBV_ACCESS_LOCAL_WRITE);
	if (!rs->smr)
		return -1;

	tlen = RS_SGE_LEN * RS_SGL_SIZE + (size_t)RS_IOMAP_LEN * rs->target_iomap_size;
	rs->target_buf = page_alloc(tlen);
	if (!rs->target_buf)
		return ERR(ENOMEM);
	rs->target_mr = ibv_reg_mr(rs->cm_id->pd, rs->target_buf, tlen,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!rs->target_mr)
		return -1;

	rs->rq_posted = rs->rq_size + RS_RQ_SPARE;
	rlen = rs->rbuf_size + (size_t)rs->rq_posted * RS_MSG_SIZE;
	rs->rbuf = page_alloc(rlen);
	if (!rs->rbuf)
		return ERR(ENOMEM);
	rs->rmr = ibv_reg_mr(rs->cm_id->pd, rs->rbuf, rlen,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!rs->rmr)
		return -1;

	rs->ring_pos = (uintptr_t)rs->sbuf;
	rs->sbuf_bytes_avail = rs->sbuf_size;
	/* the first half goes in the private data, the second is kept */
	rs->rbuf_free_offset = (int)(rs->rbuf_size >> 1);
	rs->rbuf_bytes_avail = (int)(rs->rbuf_size >> 1);
	rs->sqe_avail = rs->sq_size - (int)rs->ctrl_max_seqno;
	rs->rseq_comp = rs->rq_size >> 1;
	return 0;
}

/* The CQ (one for both queues), its channel, the RC QP, the receives. */
int rs_create_ep(struct rsock *rs)
{
	struct rdma_cm_id *id = rs->cm_id;
	struct ibv_qp_init_attr qa = { 0 };

	rs_set_qp_size(rs);
	id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
	if (!id->recv_cq_channel)
		return -1;
	if (rs_set_cloexec_nonblock(id->recv_cq_channel->fd, true))
		return -1;
	id->recv_cq = ibv_create_cq(id->verbs,
				    rs->sq_size + rs->rq_size + RS_RQ_SPARE, id,
				    id->recv_cq_channel, 0);
	if (!id->recv_cq)
		return -1;
	id->send_cq_channel = id->recv_cq_channel;
	id->send_cq = id->recv_cq;

	qa.qp_context = rs;
	qa.send_cq = id->send_cq;
	qa.recv_cq = id->recv_cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = rs->sq_size;
	qa.cap.max_recv_wr = rs->rq_size + RS_RQ_SPARE;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 1;
	/* messages are inline Sends whatever inline size data asks for */
	qa.cap.max_inline_data = rs->sq_inline > RS_MAX_CTRL_MSG ? rs->sq_inline
								: RS_MAX_CTRL_MSG;
	if (rdma_create_qp(id, id->pd, &qa))
		return -1;
	rs->sq_inline = (uint16_t)qa.cap.max_inline_data;
	if (rs->sq_inline < RS_MSG_SIZE)
		return ERR(EOPNOTSUPP);
	if (rs_init_bufs(rs) || rs_apply_keepalive(rs))
		return -1;
	for (int i = 0; i < rs->rq_posted; i++)
		if (rs_post_recv(rs))
			return -1;
	return 0;
}

static void rs_format_conn_data(struct rsock *rs, uint8_t *p)
{
	struct rs_conn_data c = {
		.version = RS_CONN_VERSION,
		.flags = RS_CONN_FLAG_IOMAP |
			 (__BYTE_ORDER == __BIG_ENDIAN ? RS_CONN_FLAG_NET : 0),
		.credits = rs->rq_size,
		.target_iomap_size =
			(uint8_t)rs_value_to_scale(rs->target_iomap_size, 8),
		.target_sgl = { (uintptr_t)rs->target_buf, rs->target_mr->rkey,
				RS_SGL_SIZE },
		.data_buf = { (uintptr_t)rs->rbuf, rs->rmr->rkey,
			      rs->rbuf_size >> 1 },
	};

	rs_conn_data_encode(p, &c);
}

/* The peer's private data: where our updates go, and its first buffer. */
static void rs_save_conn_data(struct rsock *rs, const struct rs_conn_data *c)
{
	bool peer_net = c->flags & RS_CONN_FLAG_NET;

	rs->remote_sgl = c->target_sgl;
	rs->remote_sge = 1;
	if (!rs->remote_sgl.length)
		rs->remote_sgl.length = RS_SGL_SIZE;
	rs->swap_sgl = peer_net != (__BYTE_ORDER == __BIG_ENDIAN);
	if (c->flags & RS_CONN_FLAG_IOMAP) {
		rs->remote_iomap.addr = rs->remote_sgl.addr +
					(uint64_t)RS_SGE_LEN * rs->remote_sgl.length;
		rs->remote_iomap.length =
			(uint32_t)rs_scale_to_value(c->target_iomap_size, 8);
		rs->remote_iomap.key = rs->remote_sgl.key;
	}
	rs_target_sge_set(rs, 0, c->data_buf);
	rs->sseq_comp = c->credits;
}

static int rs_take_reply(struct rsock *rs)
{
	const struct rdma_cm_event *e = rs->cm_id->event;
	struct rs_conn_data c;

	if (!e || rs_conn_data_decode(e->param.conn.private_data,
				      e->param.conn.private_data_len, &c))
		return ERR(EPROTO);
	rs_save_conn_data(rs, &c);
	rs->state = RS_CONNECT_RDWR;
	return 0;
}

/* The next event of a synchronous identifier, as its calls would wait. */
static int rs_complete(struct rsock *rs)
{
	struct rdma_cm_id *id = rs->cm_id;
	struct rdma_cm_event *e;

	if (id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	if (rdma_get_cm_event(id->channel, &e))
		return -1;
	id->event = e;
	if (e->event == RDMA_CM_EVENT_REJECTED)
		return ERR(ECONNREFUSED);
	if (e->event == RDMA_CM_EVENT_UNREACHABLE)
		return ERR(e->status ? abs(e->status) : EHOSTUNREACH);
	if (e->status)
		return ERR(abs(e->status));
	if (e->event != RDMA_CM_EVENT_ESTABLISHED)
		return ERR(ECONNREFUSED);
	return 0;
}

/*
 * Address, route, endpoint, connect.  Non-blocking, the channel does not
 * wait: rdma_connect() answers EAGAIN and later calls come back here to
 * take the outcome; the caller sees EINPROGRESS.
 */
int rs_do_connect(struct rsock *rs)
{
	struct rdma_conn_param param = { 0 };
	uint8_t pd[RS_CONN_DATA_LEN];
	int ret;

	switch (rs->state) {
	case RS_INIT:
	case RS_BOUND:
		ret = rdma_resolve_addr(rs->cm_id, NULL,
					&rs->cm_id->route.addr.dst_addr, 2000);
		if (!ret)
			ret = rdma_resolve_route(rs->cm_id, 2000);
		if (!ret)
			ret = rs_create_ep(rs);
		if (ret)
			break;
		rs_format_conn_data(rs, pd);
		param.private_data = pd;
		param.private_data_len = RS_CONN_DATA_LEN;
		param.flow_control = 1;
		param.retry_count = 7;
		param.rnr_retry_count = 7;
		param.initiator_depth = 1;
		ret = rdma_connect(rs->cm_id, &param);
		if (!ret) {
			ret = rs_take_reply(rs);
			break;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			rs->state = RS_CONNECTING;
		break;
	case RS_CONNECTING:
		ret = rs_complete(rs);
		if (!ret)
			ret = rs_take_reply(rs);
		break;
	case RS_CONNECT_ERROR:
	case RS_DISCONNECTED:
	case RS_ERROR:
		return ERR(ENOTCONN);
	default:
		return (rs->state & RS_CONNECTED) ? 0 : ERR(EINVAL);
	}
	if (ret) {
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			rs->state = RS_CONNECTING;
			errno = EINPROGRESS;
		} else {
			rs->state = RS_CONNECT_ERROR;
			rs->err = errno;
		}
	}
	return ret;
}

/*
 * Takes one connection request from a listener and accepts it with our
 * private data; the answer waits for the connection to be up (a request
 * that is not an rsocket's is rejected).  EAGAIN when none is waiting
 * and the listener is non-blocking.
 */
int rs_accept_one(struct rsock *ls, struct rsock **out)
{
	struct rdma_conn_param param;
	struct rs_conn_data creq;
	uint8_t pd[RS_CONN_DATA_LEN];
	struct rdma_cm_id *id;
	struct rsock *rs;

	if (rdma_get_request(ls->cm_id, &id))
		return -1;
	rs = rs_alloc(ls);
	if (!rs) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return ERR(ENOMEM);
	}
	rs->cm_id = id;
	id->context = rs;
	rs->fd = id->channel->fd;
	if (rs_conn_data_decode(id->event->param.conn.private_data,
				id->event->param.conn.private_data_len, &creq)) {
		errno = EPROTO;
		goto fail;
	}
	if (rs_create_ep(rs))
		goto fail;
	rs_save_conn_data(rs, &creq);
	param = id->event->param.conn;
	rs_format_conn_data(rs, pd);
	param.private_data = pd;
	param.private_data_len = RS_CONN_DATA_LEN;
	if (rdma_accept(id, &param))
		goto fail;
	rs->state = RS_CONNECT_RDWR;
	if (rs_insert(rs))
		goto fail;
	*out = rs;
	return 0;
fail:
	{
		int e = errno;

		if (rs->state != RS_CONNECT_RDWR)
			rdma_reject(id, NULL, 0);
		rs_free(rs);
		/* a bad request is not the listener's error */
		return ERR(e == EPROTO ? EAGAIN : e);
	}
}

/*
 * rdma-core's graceful shutdown: SHUTDOWN when only our sending ends and
 * the peer may still send, DISCONNECT when both directions end; then wait
 * until what we posted has gone, and disconnect once nothing is left.
 */
int rs_shutdown_locked(struct rsock *rs, int how)
{
	int ctrl, ret = 0;

	if (rs->state & RS_CONNECTED) {
		if (how == SHUT_RDWR) {
			ctrl = RS_CTRL_DISCONNECT;
			rs->state &= ~(RS_READABLE | RS_WRITABLE);
		} else if (how == SHUT_WR) {
			rs->state &= ~RS_WRITABLE;
			ctrl = (rs->state & RS_READABLE) ? RS_CTRL_SHUTDOWN
							  : RS_CTRL_DISCONNECT;
		} else {
			rs->state &= ~RS_READABLE;
			if (rs->state & RS_WRITABLE)
				return 0;
			ctrl = RS_CTRL_DISCONNECT;
		}
		if (!rs_ctrl_avail(rs))
			ret = rs_get_comp(rs, false, rs_ctrl_avail_or_gone);
		if (!ret && (rs->state & RS_CONNECTED) && rs_ctrl_avail(rs)) {
			rs->ctrl_seqno++;
			ret = rs_post_msg(rs, rs_msg(RS_OP_CTRL, (uint32_t)ctrl));
		}
	}
	if (rs->state & RS_CONNECTED)
		rs_get_comp(rs, false, rs_conn_all_sends_done);
	if ((rs->state & RS_DISCONNECTED) && rs->cm_id->qp)
		rdma_disconnect(rs->cm_id);
	return ret;
}
