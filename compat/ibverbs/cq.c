// SPDX-License-Identifier: MIT
/*
 * Completion queues and completion channels.  A channel is an epoll
 * descriptor holding the eventfd of each of its CQs (iw_cq_fd()): it is
 * readable exactly when one of them has an event, so applications poll,
 * select or epoll it as they would a kernel channel.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "compat/ibverbs/ibverbs.h"

/* ibverbs SGEs go to libiwarp as they are */
_Static_assert(sizeof(struct ibv_sge) == sizeof(struct iw_sge) &&
		       offsetof(struct ibv_sge, addr) == offsetof(struct iw_sge, addr) &&
		       offsetof(struct ibv_sge, length) ==
			       offsetof(struct iw_sge, length) &&
		       offsetof(struct ibv_sge, lkey) == offsetof(struct iw_sge, lkey),
	       "struct ibv_sge and struct iw_sge must have one layout");

/* Completions polled from libiwarp at a time */
#define POLL_BATCH 16

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct iwv_comp_channel *c;

	if (!iwv_is_ours(context)) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->ch.fd = epoll_create1(EPOLL_CLOEXEC);
	if (c->ch.fd < 0) {
		int e = errno;

		free(c);
		errno = e;
		return NULL;
	}
	c->ch.context = context;
	return &c->ch;
}

/* Fails with EBUSY while a CQ still uses the channel (0 or errno). */
int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	int busy;

	if (!channel)
		return EINVAL;
	pthread_mutex_lock(&channel->context->mutex);
	busy = channel->refcnt;
	pthread_mutex_unlock(&channel->context->mutex);
	if (busy)
		return EBUSY;
	close(channel->fd);
	free(iwv_container_of(channel, struct iwv_comp_channel, ch));
	return 0;
}

/*
 * libiwarp's CQ holds a completion for every work request of the queues
 * attached to it, and grows when they need more.  Kernel drivers round
 * the size up, and applications size a CQ for the completions they ask
 * for (perftest signals one Write in a hundred), so a CQ here starts with
 * room to spare, twice the size asked for and 256 more, rather than grow
 * at the first QP.
 */
static uint32_t cq_depth(int cqe, uint32_t max)
{
	uint64_t n = 2 * (uint64_t)cqe + 256;

	return n > max ? max : (uint32_t)n;
}

static struct iwv_cq *cq_new(struct ibv_context *ctx, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct iw_device_attr d;
	struct iwv_cq *cq;

	if (!iwv_is_ours(ctx) || cqe <= 0 || comp_vector < 0 ||
	    comp_vector >= ctx->num_comp_vectors ||
	    iw_query_device(to_iwv_ctx(ctx)->iw, &d, sizeof(d)) ||
	    (uint32_t)cqe > d.max_cqe) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	cq->iw_cqe = cq_depth(cqe, d.max_cqe);
	cq->iw = iw_create_cq(to_iwv_ctx(ctx)->iw, (int)cq->iw_cqe, cq);
	if (!cq->iw) {
		int e = errno;

		free(cq);
		errno = e;
		return NULL;
	}
	if (channel) {
		int fd = iw_cq_fd(cq->iw);
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = cq };
		int fl = fcntl(fd, F_GETFL);

		/* ibv_get_cq_event() finds it through the channel, never waits on it */
		if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) ||
		    epoll_ctl(channel->fd, EPOLL_CTL_ADD, fd, &ev)) {
			int e = errno;

			iw_destroy_cq(cq->iw);
			free(cq);
			errno = e;
			return NULL;
		}
		pthread_mutex_lock(&ctx->mutex);
		channel->refcnt++;
		pthread_mutex_unlock(&ctx->mutex);
	}
	cq->cq.context = ctx;
	cq->cq.channel = channel;
	cq->cq.cq_context = cq_context;
	cq->cq.cqe = (int)cq->iw_cqe;
	pthread_mutex_init(&cq->cq.mutex, NULL);
	pthread_cond_init(&cq->cq.cond, NULL);
	pthread_mutex_init(&cq->poll_lock, NULL);
	return cq;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
			     void *cq_context, struct ibv_comp_channel *channel,
			     int comp_vector)
{
	struct iwv_cq *cq = cq_new(context, cqe, cq_context, channel, comp_vector);

	return cq ? ibv_cq_ex_to_cq(&cq->cq) : NULL;
}

/*
 * Waits until every event taken with ibv_get_cq_event() is acknowledged,
 * as rdma-core does, then destroys.  EBUSY while a QP uses the CQ.
 */
int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct iwv_cq *cq;
	int rc;

	if (!ibcq)
		return EINVAL;
	cq = to_iwv_cq(ibcq);
	rc = iw_destroy_cq(cq->iw);
	if (rc)
		return iwv_errno(rc);
	if (ibcq->channel) {
		pthread_mutex_lock(&ibcq->context->mutex);
		ibcq->channel->refcnt--;
		pthread_mutex_unlock(&ibcq->context->mutex);
	}
	pthread_mutex_lock(&ibcq->mutex);
	while (ibcq->comp_events_completed != cq->events_reported)
		pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
	pthread_mutex_unlock(&ibcq->mutex);
	pthread_mutex_destroy(&cq->poll_lock);
	pthread_cond_destroy(&ibcq->cond);
	pthread_mutex_destroy(&ibcq->mutex);
	free(cq);
	return 0;
}

/*
 * The CQ grows to hold @cqe and never shrinks; cqe reports what it holds,
 * as a device reports its rounded-up size.
 */
int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	struct iw_device_attr d;
	struct iwv_cq *c;
	int rc;

	if (!cq || cqe <= 0 || !iwv_is_ours(cq->context) ||
	    iw_query_device(to_iwv_ctx(cq->context)->iw, &d, sizeof(d)) ||
	    (uint32_t)cqe > d.max_cqe)
		return EINVAL;
	c = to_iwv_cq(cq);
	rc = iw_resize_cq(c->iw, (int)cq_depth(cqe, d.max_cqe));
	if (rc < 0)
		return iwv_errno(rc);
	c->iw_cqe = (uint32_t)rc;
	cq->cqe = rc;
	return 0;
}

/* ---- completions ----------------------------------------------------- */

static enum ibv_wc_status wc_status(enum iw_wc_status s)
{
	static const enum ibv_wc_status map[] = {
		[IW_WC_SUCCESS] = IBV_WC_SUCCESS,
		[IW_WC_LOC_LEN_ERR] = IBV_WC_LOC_LEN_ERR,
		[IW_WC_LOC_PROT_ERR] = IBV_WC_LOC_PROT_ERR,
		[IW_WC_LOC_QP_OP_ERR] = IBV_WC_LOC_QP_OP_ERR,
		[IW_WC_WR_FLUSH_ERR] = IBV_WC_WR_FLUSH_ERR,
		[IW_WC_REM_ACCESS_ERR] = IBV_WC_REM_ACCESS_ERR,
		[IW_WC_REM_OP_ERR] = IBV_WC_REM_OP_ERR,
		[IW_WC_RETRY_EXC_ERR] = IBV_WC_RETRY_EXC_ERR,
	};

	return (unsigned int)s < sizeof(map) / sizeof(map[0]) ? map[s]
							       : IBV_WC_GENERAL_ERR;
}

static enum ibv_wc_opcode wc_opcode(enum iw_wc_opcode o)
{
	static const enum ibv_wc_opcode map[] = {
		[IW_WC_SEND] = IBV_WC_SEND,
		[IW_WC_RDMA_WRITE] = IBV_WC_RDMA_WRITE,
		[IW_WC_RDMA_READ] = IBV_WC_RDMA_READ,
		[IW_WC_RECV] = IBV_WC_RECV,
		[IW_WC_LOCAL_INV] = IBV_WC_LOCAL_INV,
		[IW_WC_COMP_SWAP] = IBV_WC_COMP_SWAP,
		[IW_WC_FETCH_ADD] = IBV_WC_FETCH_ADD,
		[IW_WC_RECV_RDMA_WITH_IMM] = IBV_WC_RECV_RDMA_WITH_IMM,
	};

	return (unsigned int)o < sizeof(map) / sizeof(map[0]) ? map[o]
							       : IBV_WC_SEND;
}

/* The QP number libibverbs gave the QP rides in its libiwarp qp_context. */
static uint32_t wc_qp_num(const struct iw_wc *w)
{
	return (uint32_t)(uintptr_t)w->qp_context;
}

static void wc_from_iw(const struct iw_wc *w, struct ibv_wc *wc)
{
	*wc = (struct ibv_wc){
		.wr_id = w->wr_id,
		.status = wc_status(w->status),
		.opcode = wc_opcode(w->opcode),
		/* the libiwarp code behind a failure (iw_strerror() names it) */
		.vendor_err = w->status == IW_WC_SUCCESS ? 0 : (uint32_t)-w->err,
		.byte_len = w->byte_len,
		.qp_num = wc_qp_num(w),
	};
	if (w->wc_flags & IW_WC_WITH_INV) {
		wc->wc_flags = IBV_WC_WITH_INV;
		wc->invalidated_rkey = w->invalidated_rkey;
	}
	if (w->wc_flags & IW_WC_WITH_IMM) {
		wc->wc_flags |= IBV_WC_WITH_IMM;
		wc->imm_data = iwv_imm_in(w->imm_data);
	}
}

/*
 * Up to @n completions; -1 with errno (EOVERFLOW) when libiwarp lost one
 * to a full CQ and none is left to return.
 */
int iwv_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct iwv_cq *cq = to_iwv_cq(ibcq);
	struct iw_wc w[POLL_BATCH];
	int done = 0;

	while (done < n) {
		int want = n - done < POLL_BATCH ? n - done : POLL_BATCH;
		int got = iw_poll_cq(cq->iw, want, w);

		if (got < 0) {
			if (done)
				return done;
			errno = iwv_errno(got);
			return -1;
		}
		for (int i = 0; i < got; i++)
			wc_from_iw(&w[i], &wc[done + i]);
		done += got;
		if (got < want)
			break;
	}
	/* an empty poll has moved the CQ's streams on itself (iw_poll_cq) */
	return done;
}

int iwv_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return iwv_errno(iw_req_notify_cq(to_iwv_cq(cq)->iw, solicited_only));
}

/*
 * Takes the next CQ event of @channel: waits for one, unless the
 * application made the channel's descriptor non-blocking (then -1 with
 * EAGAIN).  As with rdma-core, a signal ends the wait with EINTR.
 */
int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
		     void **cq_context)
{
	for (;;) {
		struct epoll_event ev;
		struct iwv_cq *c;
		int fl, n, rc;

		if (!channel || !cq || !cq_context) {
			errno = EINVAL;
			return -1;
		}
		fl = fcntl(channel->fd, F_GETFL);
		if (fl < 0)
			return -1;
		n = epoll_wait(channel->fd, &ev, 1, fl & O_NONBLOCK ? 0 : -1);
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EAGAIN;
			return -1;
		}
		c = ev.data.ptr;
		rc = iw_get_cq_event(c->iw, NULL);
		if (rc == -EAGAIN)
			continue; /* another thread took it */
		if (rc) {
			errno = iwv_errno(rc);
			return -1;
		}
		pthread_mutex_lock(&c->cq.mutex);
		c->events_reported++;
		pthread_mutex_unlock(&c->cq.mutex);
		*cq = ibv_cq_ex_to_cq(&c->cq);
		*cq_context = c->cq.cq_context;
		return 0;
	}
}

void ibv_ack_cq_events(struct ibv_cq *ibcq, unsigned int nevents)
{
	struct iwv_cq *cq;

	if (!ibcq)
		return;
	cq = to_iwv_cq(ibcq);
	iw_ack_cq_events(cq->iw, nevents);
	pthread_mutex_lock(&ibcq->mutex);
	ibcq->comp_events_completed += nevents;
	pthread_cond_broadcast(&ibcq->cond);
	pthread_mutex_unlock(&ibcq->mutex);
}

/* ---- extended CQs: ibv_start_poll() and the ibv_wc_read_*() calls ------ */

#define CQ_EX_WC_FLAGS IBV_WC_STANDARD_FLAGS

static struct iwv_cq *cq_ex(struct ibv_cq_ex *cq)
{
	return iwv_container_of(cq, struct iwv_cq, cq);
}

/* The next completion into cur, its wr_id and status into the CQ. */
static int next_one(struct iwv_cq *cq)
{
	int n = iw_poll_cq(cq->iw, 1, &cq->cur);

	if (n < 0)
		return EOVERFLOW;
	if (n == 0)
		return ENOENT;
	cq->cq.wr_id = cq->cur.wr_id;
	cq->cq.status = wc_status(cq->cur.status);
	return 0;
}

static int start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	struct iwv_cq *cq = cq_ex(ibcq);
	int rc;

	if (attr && attr->comp_mask)
		return EINVAL;
	pthread_mutex_lock(&cq->poll_lock);
	rc = next_one(cq);
	if (rc)
		pthread_mutex_unlock(&cq->poll_lock); /* no end_poll follows */
	return rc;
}

static int next_poll(struct ibv_cq_ex *ibcq)
{
	return next_one(cq_ex(ibcq));
}

static void end_poll(struct ibv_cq_ex *ibcq)
{
	pthread_mutex_unlock(&cq_ex(ibcq)->poll_lock);
}

static enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *ibcq)
{
	return wc_opcode(cq_ex(ibcq)->cur.opcode);
}

static uint32_t read_vendor_err(struct ibv_cq_ex *ibcq)
{
	const struct iw_wc *w = &cq_ex(ibcq)->cur;

	return w->status == IW_WC_SUCCESS ? 0 : (uint32_t)-w->err;
}

static uint32_t read_byte_len(struct ibv_cq_ex *ibcq)
{
	return cq_ex(ibcq)->cur.byte_len;
}

/*
 * The immediate data with IBV_WC_WITH_IMM; with IBV_WC_WITH_INV the
 * invalidated rkey, as in ibv_wc.
 */
static __be32 read_imm_data(struct ibv_cq_ex *ibcq)
{
	const struct iw_wc *w = &cq_ex(ibcq)->cur;

	if (w->wc_flags & IW_WC_WITH_IMM)
		return iwv_imm_in(w->imm_data);
	return w->wc_flags & IW_WC_WITH_INV ? w->invalidated_rkey : 0;
}

static uint32_t read_qp_num(struct ibv_cq_ex *ibcq)
{
	return wc_qp_num(&cq_ex(ibcq)->cur);
}

static unsigned int read_wc_flags(struct ibv_cq_ex *ibcq)
{
	unsigned int f = cq_ex(ibcq)->cur.wc_flags;

	return (f & IW_WC_WITH_INV ? IBV_WC_WITH_INV : 0) |
	       (f & IW_WC_WITH_IMM ? IBV_WC_WITH_IMM : 0);
}

/* what an RC QP over TCP does not have: 0 */
static uint32_t read_zero32(struct ibv_cq_ex *ibcq)
{
	(void)ibcq;
	return 0;
}

static uint8_t read_zero8(struct ibv_cq_ex *ibcq)
{
	(void)ibcq;
	return 0;
}

struct ibv_cq_ex *iwv_create_cq_ex(struct ibv_context *ctx,
				   struct ibv_cq_init_attr_ex *attr)
{
	const uint32_t known = IBV_CQ_INIT_ATTR_MASK_FLAGS |
			       IBV_CQ_INIT_ATTR_MASK_PD;
	struct iwv_cq *cq;

	if (!attr || (attr->comp_mask & ~known) || attr->cqe > INT32_MAX ||
	    attr->comp_vector > INT32_MAX ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~(IBV_CREATE_CQ_ATTR_SINGLE_THREADED |
			      IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)))) {
		errno = EINVAL;
		return NULL;
	}
	/* timestamps, VLANs, flow tags, tag matching; parent domains */
	if ((attr->wc_flags & ~(uint64_t)CQ_EX_WC_FLAGS) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) && attr->parent_domain)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	cq = cq_new(ctx, (int)attr->cqe, attr->cq_context, attr->channel,
		    (int)attr->comp_vector);
	if (!cq)
		return NULL;
	cq->wc_flags = attr->wc_flags;
	cq->cq.start_poll = start_poll;
	cq->cq.next_poll = next_poll;
	cq->cq.end_poll = end_poll;
	cq->cq.read_opcode = read_opcode;
	cq->cq.read_vendor_err = read_vendor_err;
	cq->cq.read_byte_len = read_byte_len;
	cq->cq.read_imm_data = read_imm_data;
	cq->cq.read_qp_num = read_qp_num;
	cq->cq.read_src_qp = read_zero32;
	cq->cq.read_wc_flags = read_wc_flags;
	cq->cq.read_slid = read_zero32;
	cq->cq.read_sl = read_zero8;
	cq->cq.read_dlid_path_bits = read_zero8;
	return &cq->cq;
}
