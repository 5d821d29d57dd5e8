// SPDX-License-Identifier: MIT
/*
 * rsockets' data path in iWARP mode (rdma-core's librdmacm/docs/rsocket):
 * data goes as an RDMA Write into the half of the peer's receive buffer
 * it last offered, announced by a 4-octet Send (RS_OP_DATA, length).
 * The receiver hands out credits as messages it has consumed
 * (RS_OP_SGL: the sequence number up to which we may send) and, when a
 * half of its buffer is free again, first writes that half into our
 * target SGL.  Control messages (credits, shutdown, disconnect) have
 * RS_QP_CTRL_SIZE send slots of their own so that data never starves
 * them.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "compat/ibverbs/rdmacm_iface.h"
#include "compat/rdmacm/rs.h"

#define ERR(e) (errno = (e), -1)
#define POLL_BATCH 16

/* ---- posting ------------------------------------------------------------ */

/* ibv_post_*() answer an errno value */
static int rs_posted(int rc)
{
	return rc ? ERR(rc) : 0;
}

/* A message alone: a 4-octet inline Send. */
int rs_post_msg(struct rsock *rs, uint32_t msg)
{
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_sge sge = { .addr = (uintptr_t)&msg, .length = RS_MSG_SIZE };

	wr.wr_id = msg;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_INLINE;
	return rs_posted(ibv_post_send(rs->cm_id->qp, &wr, &bad));
}

int rs_post_write(struct rsock *rs, struct ibv_sge *sgl, int nsge,
		  uint32_t wr_data, int flags, uint64_t addr, uint32_t rkey)
{
	struct ibv_send_wr wr = { 0 }, *bad;

	wr.wr_id = wr_data;
	wr.sg_list = sgl;
	wr.num_sge = nsge;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = flags;
	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	return rs_posted(ibv_post_send(rs->cm_id->qp, &wr, &bad));
}

/*
 * What Write with Immediate does elsewhere: the Write, then the message
 * as a Send, whose completion is told apart by RS_WR_ID_MSG_SEND.  The
 * two go in one post, so that they leave in one write to the socket: the
 * peer then wakes once for the pair, not for the Write (which completes
 * nothing there) and again for the Send.
 */
int rs_post_write_msg(struct rsock *rs, struct ibv_sge *sgl, int nsge,
		      uint32_t msg, int flags, uint64_t addr, uint32_t rkey)
{
	struct ibv_send_wr wr[2] = { { 0 }, { 0 } }, *bad;
	struct ibv_sge sge = { .addr = (uintptr_t)&msg, .length = RS_MSG_SIZE };

	wr[0].wr_id = msg;
	wr[0].next = &wr[1];
	wr[0].sg_list = sgl;
	wr[0].num_sge = nsge;
	wr[0].opcode = IBV_WR_RDMA_WRITE;
	wr[0].send_flags = flags;
	wr[0].wr.rdma.remote_addr = addr;
	wr[0].wr.rdma.rkey = rkey;
	wr[1].wr_id = rs_msg(rs_msg_op(msg), 0) | RS_WR_ID_MSG_SEND;
	wr[1].sg_list = &sge;
	wr[1].num_sge = 1;
	wr[1].opcode = IBV_WR_SEND;
	wr[1].send_flags = IBV_SEND_INLINE;
	return rs_posted(ibv_post_send(rs->cm_id->qp, wr, &bad));
}

/* A receive for one message, into the next 4-octet slot after the data. */
int rs_post_recv(struct rsock *rs)
{
	struct ibv_recv_wr wr = { 0 }, *bad;
	struct ibv_sge sge;

	sge.addr = (uintptr_t)rs->rbuf + rs->rbuf_size +
		   (uint64_t)rs->rbuf_msg_index * RS_MSG_SIZE;
	sge.length = RS_MSG_SIZE;
	sge.lkey = rs->rmr->lkey;
	wr.wr_id = RS_WR_ID_RECV | (uint32_t)rs->rbuf_msg_index;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (++rs->rbuf_msg_index == rs->rq_posted)
		rs->rbuf_msg_index = 0;
	return rs_posted(ibv_post_recv(rs->cm_id->qp, &wr, &bad));
}

/* ---- the target SGL ------------------------------------------------------ */

struct rs_sge rs_target_sge(struct rsock *rs, int i)
{
	return rs_sge_load((volatile uint8_t *)rs->target_buf + i * RS_SGE_LEN);
}

void rs_target_sge_set(struct rsock *rs, int i, struct rs_sge s)
{
	rs_sge_store(rs->target_buf + i * RS_SGE_LEN, s, 0);
}

uint32_t rs_sbuf_left(struct rsock *rs)
{
	return (uint32_t)((uintptr_t)(rs->sbuf + rs->sbuf_size) - rs->ring_pos);
}

/* ---- credits --------------------------------------------------------------- */

bool rs_ctrl_avail(struct rsock *rs)
{
	return rs->ctrl_seqno != rs->ctrl_max_seqno;
}

/* An SGL update is two messages here: the Write and the Send. */
static bool rs_2ctrl_avail(struct rsock *rs)
{
	return (int)((rs->ctrl_seqno + 1) - rs->ctrl_max_seqno) < 0;
}

static bool rs_give_credits(struct rsock *rs)
{
	return (rs->rbuf_bytes_avail >= (int)(rs->rbuf_size >> 1) ||
		(int16_t)(rs->rseq_no - rs->rseq_comp) >= 0) &&
	       rs_2ctrl_avail(rs) && (rs->state & RS_CONNECTED);
}

/*
 * A credit update or a receive that could not be posted would leave the
 * peer waiting for ever: the connection fails instead, and the next call
 * says why (not the end of the stream: a program that polls a
 * non-blocking socket would take that 0 for no data and poll on).
 */
static void rs_post_failed(struct rsock *rs)
{
	rs->state = RS_ERROR;
	rs->err = errno;
	rs->reset_err = errno;
}

/*
 * Credits up to rseq_no + rq_size, and the free half of the receive
 * buffer, if there is one, written into the peer's target SGL first.
 */
static void rs_send_credits(struct rsock *rs)
{
	uint32_t half = rs->rbuf_size >> 1;
	uint32_t msg = rs_msg(RS_OP_SGL, (uint16_t)(rs->rseq_no + rs->rq_size));

	rs->ctrl_seqno++;
	rs->rseq_comp = rs->rseq_no + (rs->rq_size >> 1);
	if (rs->rbuf_bytes_avail >= (int)half) {
		struct rs_sge s = {
			.addr = (uintptr_t)&rs->rbuf[rs->rbuf_free_offset],
			.key = rs->rmr->rkey,
			.length = half,
		};
		uint8_t *slot = rs->sbuf + rs->sbuf_size +
				RS_MAX_CTRL_MSG * (rs->ctrl_seqno & (RS_QP_CTRL_SIZE - 1));
		struct ibv_sge sge = { .addr = (uintptr_t)slot,
				       .length = RS_SGE_LEN,
				       .lkey = rs->smr->lkey };

		rs->ctrl_seqno++;
		rs_sge_store(slot, s, rs->swap_sgl);
		if (rs_post_write_msg(rs, &sge, 1, msg, 0,
				      rs->remote_sgl.addr +
					      (uint64_t)rs->remote_sge * RS_SGE_LEN,
				      rs->remote_sgl.key))
			rs_post_failed(rs);
		rs->rbuf_bytes_avail -= half;
		rs->rbuf_free_offset += half;
		if (rs->rbuf_free_offset >= (int)rs->rbuf_size)
			rs->rbuf_free_offset = 0;
		if (++rs->remote_sge == (int)rs->remote_sgl.length)
			rs->remote_sge = 0;
	} else if (rs_post_msg(rs, msg)) {
		rs_post_failed(rs);
	}
}

void rs_update_credits(struct rsock *rs)
{
	if (rs_give_credits(rs))
		rs_send_credits(rs);
}

/* ---- completions -------------------------------------------------------------- */

/*
 * The connection broke: @err (ECONNRESET, or ETIMEDOUT when TCP gave up
 * on a silent peer) for SO_ERROR, and for the next send or receive.
 */
static void rs_set_reset(struct rsock *rs, int err)
{
	if (!rs->reset_err || rs->reset_err == ECONNRESET)
		rs->reset_err = err;
	rs->err = rs->reset_err;
}

/* A message received: data to queue, or news about the connection. */
static void rs_take_msg(struct rsock *rs, uint32_t msg)
{
	switch (rs_msg_op(msg)) {
	case RS_OP_SGL:
		rs->sseq_comp = (uint16_t)rs_msg_data(msg);
		break;
	case RS_OP_IOMAP_SGL: /* the peer's iomap entry is in our table */
	case RS_OP_WRITE:
		break;
	case RS_OP_CTRL:
		if (rs_msg_data(msg) == RS_CTRL_DISCONNECT) {
			rs->state = RS_DISCONNECTED;
		} else if (rs_msg_data(msg) == RS_CTRL_SHUTDOWN) {
			if (rs->state & RS_WRITABLE)
				rs->state &= ~RS_READABLE;
			else
				rs->state = RS_DISCONNECTED;
		}
		break; /* a keepalive needs nothing */
	default:
		rs->rmsg[rs->rmsg_tail].op = rs_msg_op(msg);
		rs->rmsg[rs->rmsg_tail].data = rs_msg_data(msg);
		if (++rs->rmsg_tail == rs->rq_size + 1)
			rs->rmsg_tail = 0;
		break;
	}
}

static void rs_send_done(struct rsock *rs, const struct ibv_wc *wc)
{
	uint32_t d = (uint32_t)wc->wr_id;

	switch (rs_msg_op(d)) {
	case RS_OP_SGL:
		rs->ctrl_max_seqno++;
		break;
	case RS_OP_CTRL:
		rs->ctrl_max_seqno++;
		if (rs_msg_data(d) == RS_CTRL_DISCONNECT)
			rs->state = RS_DISCONNECTED;
		break;
	case RS_OP_IOMAP_SGL:
		rs->sqe_avail++;
		if (!(wc->wr_id & RS_WR_ID_MSG_SEND))
			rs->sbuf_bytes_avail += RS_IOMAP_LEN;
		break;
	default:
		rs->sqe_avail++;
		rs->sbuf_bytes_avail += rs_msg_data(d);
		break;
	}
	if (wc->status != IBV_WC_SUCCESS && (rs->state & RS_CONNECTED)) {
		rs->state = RS_ERROR;
		rs_set_reset(rs, wc->status == IBV_WC_RETRY_EXC_ERR ? ETIMEDOUT
								   : ECONNRESET);
	}
}

/*
 * Takes every completion there is.  A receive that fails while the peer
 * has not said goodbye means the connection broke under us.
 */
int rs_poll_cq(struct rsock *rs)
{
	struct ibv_wc wc[POLL_BATCH];
	int n, rcnt = 0, ret = 0;

	while ((n = ibv_poll_cq(rs->cm_id->recv_cq, POLL_BATCH, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (!(wc[i].wr_id & RS_WR_ID_RECV)) {
				rs_send_done(rs, &wc[i]);
				continue;
			}
			if (wc[i].status != IBV_WC_SUCCESS) {
				if (rs->state & RS_CONNECTED) {
					rs->state = RS_DISCONNECTED;
					rs_set_reset(rs, wc[i].status ==
								 IBV_WC_RETRY_EXC_ERR
							 ? ETIMEDOUT
							 : ECONNRESET);
				}
				continue;
			}
			rcnt++;
			uint32_t msg;

			memcpy(&msg,
			       rs->rbuf + rs->rbuf_size +
				       (size_t)(uint32_t)wc[i].wr_id * RS_MSG_SIZE,
			       RS_MSG_SIZE);
			rs_take_msg(rs, msg);
		}
	}
	if (rs->state & RS_CONNECTED) {
		while (!ret && rcnt--)
			ret = rs_post_recv(rs);
		if (ret)
			rs_post_failed(rs);
	}
	return ret;
}

/*
 * The identifier's CM events: a DISCONNECTED (or an error) while still
 * connected ends the connection; without rsockets' own goodbye first it
 * was reset, or timed out when its status says TCP gave up on a silent
 * peer.  Completions that came before it are taken first.
 */
void rs_check_cm(struct rsock *rs)
{
	struct pollfd p = { .fd = rs->cm_id->channel->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (!(rs->state & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR)))
		return;
	while (poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) {
		if (rdma_get_cm_event(rs->cm_id->channel, &ev))
			return;
		enum rdma_cm_event_type t = ev->event;
		int status = ev->status;

		rdma_ack_cm_event(ev);
		if (t == RDMA_CM_EVENT_ESTABLISHED)
			continue;
		rs_poll_cq(rs);
		if (rs->state & RS_CONNECTED) {
			rs->state = RS_DISCONNECTED;
			rs_set_reset(rs, status == -ETIMEDOUT ? ETIMEDOUT
							      : ECONNRESET);
		} else if (status == -ETIMEDOUT && rs->reset_err == ECONNRESET) {
			/* flushed receives said reset; the CM knows better */
			rs_set_reset(rs, ETIMEDOUT);
		}
	}
}

/*
 * Sleeps, without the rsocket's lock, until its CQ channel or CM channel
 * has something (or @timeout_ms), and takes the CQ event.  Several
 * sleepers on one rsocket wake now and then: one may take what the
 * other waits for.
 */
int rs_wait_fds(struct rsock *rs, int timeout_ms)
{
	struct pollfd p[2] = {
		{ .fd = rs->cm_id->recv_cq_channel->fd, .events = POLLIN },
		{ .fd = rs->cm_id->channel->fd, .events = POLLIN },
	};
	struct ibv_cq *cq;
	void *ctx;
	int n;

	if (rs->waiters++ && (timeout_ms < 0 || timeout_ms > 20))
		timeout_ms = 20;
	pthread_mutex_unlock(&rs->lock);
	n = poll(p, 2, timeout_ms);
	pthread_mutex_lock(&rs->lock);
	rs->waiters--;
	if (n < 0)
		return -1;
	if ((p[0].revents & POLLIN) &&
	    !ibv_get_cq_event(rs->cm_id->recv_cq_channel, &cq, &ctx)) {
		if (++rs->unack_cqe >= 64) {
			ibv_ack_cq_events(rs->cm_id->recv_cq, rs->unack_cqe);
			rs->unack_cqe = 0;
		}
		rs->cq_armed = false;
	}
	return n;
}

/* The longest wait in iw_progress_cq() before the CM channel is looked at. */
#define RS_WAIT_SLICE_MS 100

/*
 * Sleeps, without the rsocket's lock, in iw_progress_cq() on the CQ: the
 * calling thread watches the connection's socket itself and runs the
 * receive path when data comes, where a sleep on the completion channel
 * would take two wakeups (libiwarp's thread, then this one).  A peer that
 * leaves ends the stream, which completes (flushes) the receives, so a
 * slice of RS_WAIT_SLICE_MS bounds only news the CM alone brings.
 * Returns false, having done nothing, where it cannot be used: a CQ that
 * is not libiwarp's, one armed (by rpoll()) whose event the channel must
 * take, or another thread already asleep on the rsocket (those share the
 * channel, see rs_wait_fds()).
 */
static bool rs_wait_cq(struct rsock *rs)
{
	const struct iwv_rdmacm_iface *f = iwv_rdmacm_iface(rs->cm_id->verbs);
	struct iw_cq *cq = f ? f->iw_cq(rs->cm_id->recv_cq) : NULL;

	if (!cq || rs->waiters || rs->cq_armed)
		return false; /* an armed CQ's event is for the channel */
	rs->waiters++;
	pthread_mutex_unlock(&rs->lock);
	iw_progress_cq(cq, RS_WAIT_SLICE_MS);
	pthread_mutex_lock(&rs->lock);
	rs->waiters--;
	return true;
}

/*
 * Runs the connection until @test holds: credits given, completions
 * taken, and then (unless @nonblock) a sleep: on the CQ itself
 * (rs_wait_cq()), or on the channels.
 */
int rs_get_comp(struct rsock *rs, bool nonblock, bool (*test)(struct rsock *))
{
	for (;;) {
		int ret;

		rs_update_credits(rs);
		ret = rs_poll_cq(rs);
		rs_check_cm(rs);
		rs_update_credits(rs);
		if (test(rs))
			return 0;
		if (ret)
			return ret;
		if (nonblock)
			return ERR(EAGAIN);
		if (rs_wait_cq(rs))
			continue;
		if (!rs->cq_armed) {
			ibv_req_notify_cq(rs->cm_id->recv_cq, 0);
			rs->cq_armed = true;
			continue;
		}
		if (rs_wait_fds(rs, -1) < 0 && errno != EINTR)
			return -1;
	}
}

/* ---- readiness ------------------------------------------------------------------ */

/*
 * Room to send: two send slots (Write and Send), a low-water mark of send
 * buffer, a credit, and room in the buffer the peer offered.
 */
bool rs_can_send(struct rsock *rs)
{
	return rs->sqe_avail >= 2 && rs->sbuf_bytes_avail >= RS_SNDLOWAT &&
	       rs->sseq_no != rs->sseq_comp &&
	       rs_target_sge(rs, rs->target_sge).length != 0;
}

bool rs_conn_can_send(struct rsock *rs)
{
	return rs_can_send(rs) || !(rs->state & RS_WRITABLE);
}

bool rs_have_rdata(struct rsock *rs)
{
	return rs->rmsg_head != rs->rmsg_tail;
}

bool rs_conn_have_rdata(struct rsock *rs)
{
	return rs_have_rdata(rs) || !(rs->state & RS_READABLE);
}

bool rs_ctrl_avail_or_gone(struct rsock *rs)
{
	return rs_ctrl_avail(rs) || !(rs->state & RS_CONNECTED);
}

bool rs_conn_all_sends_done(struct rsock *rs)
{
	return ((int)rs->ctrl_max_seqno - (int)rs->ctrl_seqno) + rs->sqe_avail ==
		       rs->sq_size ||
	       !(rs->state & RS_CONNECTED);
}

/* ---- send ------------------------------------------------------------------------ */

static void copy_iov(uint8_t *dst, const struct iovec **iov, size_t *off,
		     size_t len)
{
	while (len) {
		size_t n = (*iov)->iov_len - *off;

		if (n > len)
			n = len;
		memcpy(dst, (const uint8_t *)(*iov)->iov_base + *off, n);
		dst += n;
		len -= n;
		*off += n;
		if (*off == (*iov)->iov_len) {
			(*iov)++;
			*off = 0;
		}
	}
}

/*
 * Copies @len octets of the iovec into the send ring and describes them
 * in @sg (two SGEs where the ring wraps); the ring moves past them.
 */
void rs_stage(struct rsock *rs, const struct iovec **iov, size_t *off,
	      uint32_t len, struct ibv_sge sg[2], int *nsge)
{
	uint32_t left = rs_sbuf_left(rs);
	uint8_t *at = (uint8_t *)(uintptr_t)rs->ring_pos;

	sg[0] = (struct ibv_sge){ .addr = rs->ring_pos, .lkey = rs->smr->lkey };
	if (len < left) {
		copy_iov(at, iov, off, len);
		sg[0].length = len;
		*nsge = 1;
		rs->ring_pos += len;
		return;
	}
	copy_iov(at, iov, off, left);
	sg[0].length = left;
	*nsge = 1;
	rs->ring_pos = (uintptr_t)rs->sbuf;
	if (len == left)
		return;
	copy_iov(rs->sbuf, iov, off, len - left);
	sg[1] = (struct ibv_sge){ .addr = (uintptr_t)rs->sbuf,
				  .length = len - left,
				  .lkey = rs->smr->lkey };
	*nsge = 2;
	rs->ring_pos += len - left;
}

/*
 * One data message: the target SGE is advanced before the Write is
 * posted, since the peer may refill it as soon as it is used up.
 */
static int rs_write_data(struct rsock *rs, struct ibv_sge *sgl, int nsge,
			 uint32_t len, int flags)
{
	struct rs_sge t = rs_target_sge(rs, rs->target_sge);
	uint64_t addr = t.addr;

	rs->sseq_no++;
	rs->sqe_avail -= 2;
	rs->sbuf_bytes_avail -= len;
	t.addr += len;
	t.length -= len;
	rs_target_sge_set(rs, rs->target_sge, t);
	if (!t.length && ++rs->target_sge == RS_SGL_SIZE)
		rs->target_sge = 0;
	return rs_post_write_msg(rs, sgl, nsge, rs_msg(RS_OP_DATA, len), flags,
				 addr, t.key);
}

/*
 * Why a connection refuses data: reset or timed out (said once, as TCP
 * says its socket error once), else shut down here or closed: EPIPE.
 */
static int rs_send_error(struct rsock *rs)
{
	int e = rs->reset_err ? rs->reset_err : EPIPE;

	rs->reset_err = 0;
	return ERR(e);
}

/*
 * Waits until a message may be sent (not with O_NONBLOCK or MSG_DONTWAIT
 * in @flags: EAGAIN then); 0, or -1 with errno when it may not be.
 */
int rs_wait_send_room(struct rsock *rs, int flags)
{
	if (rs_can_send(rs))
		return 0;
	if (rs_get_comp(rs, rs_nonblocking(rs, flags), rs_conn_can_send))
		return -1;
	return rs->state & RS_WRITABLE ? 0 : rs_send_error(rs);
}

/*
 * The next message's size for @left octets: from RS_OLAP_START_SIZE up,
 * doubling (@olen) to RS_MAX_TRANSFER, within the send buffer's room.
 */
uint32_t rs_next_xfer(struct rsock *rs, uint32_t *olen, size_t left)
{
	uint32_t xfer = (uint32_t)left;

	if (*olen < left) {
		xfer = *olen;
		if (*olen < RS_MAX_TRANSFER)
			*olen <<= 1;
	}
	return xfer < rs->sbuf_bytes_avail ? xfer : rs->sbuf_bytes_avail;
}

/*
 * Sends as TCP does: blocks until all is handed over, or with
 * O_NONBLOCK/MSG_DONTWAIT hands over what fits (EAGAIN if nothing).
 * Messages start at 2 KiB and double up to 64 KiB, so the peer sees the
 * first bytes early.
 */
ssize_t rs_sendv_locked(struct rsock *rs, const struct iovec *iov, int iovcnt,
			int flags)
{
	uint32_t olen = RS_OLAP_START_SIZE, xfer;
	size_t len = 0, left, off = 0;
	int ret = 0;

	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (!(rs->state & RS_CONNECTED) && !(rs->state & RS_DISCONNECTED) &&
	    !(rs->state & RS_ERROR))
		return ERR(ENOTCONN);
	if (!(rs->state & RS_WRITABLE))
		return rs_send_error(rs);
	if (rs->iomap_pending && rs_send_iomaps(rs, flags))
		return -1;
	while (iovcnt && !iov->iov_len) {
		iov++;
		iovcnt--;
	}
	for (left = len; left; left -= xfer) {
		struct ibv_sge sge, sg[2];
		int nsge;

		ret = rs_wait_send_room(rs, flags);
		if (ret)
			break;
		xfer = rs_next_xfer(rs, &olen, left);
		if (xfer > rs_target_sge(rs, rs->target_sge).length)
			xfer = rs_target_sge(rs, rs->target_sge).length;
		if (xfer <= rs->sq_inline && iov->iov_len - off >= xfer) {
			sge.addr = (uintptr_t)iov->iov_base + off;
			sge.length = xfer;
			sge.lkey = 0;
			off += xfer;
			if (off == iov->iov_len && left > xfer) {
				iov++;
				off = 0;
			}
			ret = rs_write_data(rs, &sge, 1, xfer, IBV_SEND_INLINE);
		} else {
			rs_stage(rs, &iov, &off, xfer, sg, &nsge);
			ret = rs_write_data(rs, sg, nsge, xfer, 0);
		}
		if (ret)
			break;
	}
	return (ret && left == len) ? ret : (ssize_t)(len - left);
}

/* ---- receive --------------------------------------------------------------------- */

/* Copies out of the ring without consuming (MSG_PEEK). */
static size_t rs_peek(struct rsock *rs, uint8_t *buf, size_t len)
{
	int head = rs->rmsg_head, off = rs->rbuf_offset;
	size_t left = len;

	while (left && head != rs->rmsg_tail) {
		size_t n = rs->rmsg[head].data;

		if (left < n)
			n = left;
		else if (++head == rs->rq_size + 1)
			head = 0;
		left -= n;
		while (n) {
			size_t run = rs->rbuf_size - off;

			if (run > n)
				run = n;
			memcpy(buf, rs->rbuf + off, run);
			buf += run;
			n -= run;
			off += (int)run;
			if (off == (int)rs->rbuf_size)
				off = 0;
		}
	}
	return len - left;
}

/*
 * Receives what has arrived (waiting for something unless non-blocking);
 * data that came before the peer left can still be read, then 0 (end of
 * stream), or ECONNRESET once if the connection broke.
 */
ssize_t rs_recv_locked(struct rsock *rs, void *vbuf, size_t len, int flags)
{
	uint8_t *buf = vbuf;
	size_t left = len;
	int ret = 0;

	if (!(rs->state & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR)))
		return ERR(ENOTCONN);
	if (!len)
		return 0; /* as recv(2): nothing asked, nothing awaited */
	do {
		if (!rs_have_rdata(rs)) {
			ret = rs_get_comp(rs, rs_nonblocking(rs, flags),
					  rs_conn_have_rdata);
			if (ret)
				break;
			if (!rs_have_rdata(rs)) {
				if (rs->reset_err && left == len) {
					ret = ERR(rs->reset_err);
					rs->reset_err = 0;
				}
				break;
			}
		}
		if (flags & MSG_PEEK) {
			left -= rs_peek(rs, buf, left);
			break;
		}
		while (left && rs_have_rdata(rs)) {
			struct rs_rmsg *m = &rs->rmsg[rs->rmsg_head];
			size_t n = m->data;

			if (left < n) {
				n = left;
				m->data -= (uint32_t)left;
			} else {
				rs->rseq_no++;
				if (++rs->rmsg_head == rs->rq_size + 1)
					rs->rmsg_head = 0;
			}
			left -= n;
			while (n) {
				size_t run = rs->rbuf_size - rs->rbuf_offset;

				if (run > n)
					run = n;
				memcpy(buf, rs->rbuf + rs->rbuf_offset, run);
				buf += run;
				n -= run;
				rs->rbuf_offset += (int)run;
				rs->rbuf_bytes_avail += (int)run;
				if (rs->rbuf_offset == (int)rs->rbuf_size)
					rs->rbuf_offset = 0;
			}
		}
		rs_update_credits(rs);
	} while (left && (flags & MSG_WAITALL) && (rs->state & RS_READABLE));
	return (ret && left == len) ? ret : (ssize_t)(len - left);
}
