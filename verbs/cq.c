// SPDX-License-Identifier: MIT
/*
 * Completion queues: a ring filled by the progress loop (or by a posting
 * thread), polled by the application, with an eventfd that becomes
 * readable once per armed notification, as ibv_req_notify_cq() and
 * ibv_get_cq_event() do it.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "verbs/verbs.h"

struct iw_cq *iw_create_cq(struct iw_context *ctx, int cqe, void *cq_context)
{
	struct iw_cq *cq;

	if (!ctx || cqe <= 0 || cqe > CQ_MAX_CQE) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	cq->ring = calloc((size_t)cqe, sizeof(*cq->ring));
	if (!cq->ring) {
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	cq->efd = eventfd(0, EFD_CLOEXEC);
	if (cq->efd < 0) {
		int e = errno;

		free(cq->ring);
		free(cq);
		errno = e;
		return NULL;
	}
	cq->ctx = ctx;
	cq->cq_context = cq_context;
	cq->size = (uint32_t)cqe;
	pthread_mutex_init(&cq->lock, NULL);
	return cq;
}

/* Fails with -EBUSY while a QP (or an SRQ of one) still uses the CQ. */
int iw_destroy_cq(struct iw_cq *cq)
{
	uint32_t reserved;

	if (!cq)
		return -EINVAL;
	pthread_mutex_lock(&cq->lock);
	reserved = cq->reserved;
	pthread_mutex_unlock(&cq->lock);
	if (reserved)
		return -EBUSY;
	close(cq->efd);
	pthread_mutex_destroy(&cq->lock);
	free(cq->ring);
	free(cq);
	return 0;
}

/*
 * Reserves room for @n more completions.  A CQ holds every work request
 * that may complete on it: QP creation fails rather than overcommit it.
 */
bool cq_reserve(struct iw_cq *cq, uint32_t n)
{
	bool ok;

	pthread_mutex_lock(&cq->lock);
	ok = n <= cq->size - cq->reserved - cq->orphans;
	if (ok)
		cq->reserved += n;
	pthread_mutex_unlock(&cq->lock);
	return ok;
}

void cq_release(struct iw_cq *cq, uint32_t n)
{
	pthread_mutex_lock(&cq->lock);
	cq->reserved -= n;
	pthread_mutex_unlock(&cq->lock);
}

/* The queue a completion occupies a slot of until it is polled. */
static atomic_uint *cq_slot_owner(const struct iw_wc *wc, bool recv)
{
	struct iw_qp *qp = wc->qp;

	if (!recv)
		return &qp->sq_cqes;
	return qp->srq ? &qp->srq->unpolled : &qp->rq_unpolled;
}

/*
 * A QP goes away: its completions stay pollable but no longer free slots
 * of it (those of an SRQ, which outlives it, are given back now); each
 * keeps its room in the CQ reserved until it is polled.
 */
void cq_forget_qp(struct iw_cq *cq, struct iw_qp *qp)
{
	pthread_mutex_lock(&cq->lock);
	for (uint32_t i = 0; i < cq->count; i++) {
		struct cq_entry *e = &cq->ring[(cq->head + i) % cq->size];

		if (!e->counted || e->wc.qp != qp)
			continue;
		if (e->recv && qp->srq)
			atomic_fetch_sub(&qp->srq->unpolled, 1);
		e->counted = false;
		e->orphan = true;
		cq->orphans++;
	}
	pthread_mutex_unlock(&cq->lock);
}

/*
 * Adds a completion.  The slot accounting of QPs and SRQs keeps a CQ from
 * holding more than it was reserved for; should it still be full, the
 * completion is lost and iw_poll_cq() says so (-IW_ECQ_OVERRUN).
 */
void cq_push(struct iw_cq *cq, const struct iw_wc *wc, bool recv)
{
	bool notify = false;
	struct cq_entry *e;

	pthread_mutex_lock(&cq->lock);
	if (cq->count == cq->size) {
		cq->overrun = true;
		pthread_mutex_unlock(&cq->lock);
		return;
	}
	e = &cq->ring[(cq->head + cq->count++) % cq->size];
	e->wc = *wc;
	e->recv = recv;
	e->counted = true;
	e->orphan = false;
	if (!recv)
		atomic_fetch_add(&wc->qp->sq_cqes, 1);
	if (cq->armed && (!cq->solicited_only ||
			  (wc->wc_flags & IW_WC_SOLICITED) ||
			  wc->status != IW_WC_SUCCESS)) {
		cq->armed = false;
		notify = true;
	}
	pthread_mutex_unlock(&cq->lock);
	if (notify) {
		uint64_t one = 1;
		ssize_t w = write(cq->efd, &one, sizeof(one));

		(void)w; /* an eventfd only refuses at 2^64 - 1 */
	}
}

/* Returns how many completions were copied to @wc (0..@num_entries). */
int iw_poll_cq(struct iw_cq *cq, int num_entries, struct iw_wc *wc)
{
	int n = 0;

	if (!cq || num_entries < 0 || (num_entries && !wc))
		return -EINVAL;
	pthread_mutex_lock(&cq->lock);
	while (n < num_entries && cq->count) {
		struct cq_entry *e = &cq->ring[cq->head % cq->size];

		wc[n++] = e->wc;
		if (e->counted)
			atomic_fetch_sub(cq_slot_owner(&e->wc, e->recv), 1);
		else if (e->orphan)
			cq->orphans--;
		cq->head++;
		cq->count--;
	}
	if (n == 0 && cq->overrun)
		n = -IW_ECQ_OVERRUN;
	pthread_mutex_unlock(&cq->lock);
	return n;
}

int iw_cq_fd(struct iw_cq *cq)
{
	return cq ? cq->efd : -EINVAL;
}

/* The next completion (or next solicited or failed one) raises an event. */
int iw_req_notify_cq(struct iw_cq *cq, int solicited_only)
{
	if (!cq)
		return -EINVAL;
	pthread_mutex_lock(&cq->lock);
	cq->armed = true;
	cq->solicited_only = solicited_only;
	pthread_mutex_unlock(&cq->lock);
	return 0;
}

/*
 * Waits for a completion event (unless the fd was made non-blocking, then
 * -EAGAIN) and consumes it.  Events raised before this call count as one.
 */
int iw_get_cq_event(struct iw_cq *cq, void **cq_context)
{
	uint64_t v;
	ssize_t r;

	if (!cq)
		return -EINVAL;
	do
		r = read(cq->efd, &v, sizeof(v));
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	pthread_mutex_lock(&cq->lock);
	cq->events++;
	pthread_mutex_unlock(&cq->lock);
	if (cq_context)
		*cq_context = cq->cq_context;
	return 0;
}

void iw_ack_cq_events(struct iw_cq *cq, unsigned int nevents)
{
	if (!cq)
		return;
	pthread_mutex_lock(&cq->lock);
	cq->acked += nevents;
	pthread_mutex_unlock(&cq->lock);
}

const char *iw_wc_status_str(enum iw_wc_status status)
{
	static const char *const words[] = {
		[IW_WC_SUCCESS] = "success",
		[IW_WC_LOC_LEN_ERR] = "local length error",
		[IW_WC_LOC_PROT_ERR] = "local protection error",
		[IW_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[IW_WC_WR_FLUSH_ERR] = "work request flushed",
		[IW_WC_REM_ACCESS_ERR] = "remote access error",
		[IW_WC_REM_OP_ERR] = "remote operation error",
	};

	if ((unsigned int)status >= sizeof(words) / sizeof(words[0]))
		return "unknown status";
	return words[status];
}
