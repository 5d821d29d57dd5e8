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

	if (!ctx || cqe <= 0 || cqe > (1 << 22)) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	cq->ring = calloc((size_t)cqe, sizeof(*cq->ring));
	cq->efd = eventfd(0, EFD_CLOEXEC);
	if (!cq->ring || cq->efd < 0) {
		int e = cq->ring ? errno : ENOMEM;

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

int iw_destroy_cq(struct iw_cq *cq)
{
	if (!cq)
		return -EINVAL;
	close(cq->efd);
	pthread_mutex_destroy(&cq->lock);
	free(cq->ring);
	free(cq);
	return 0;
}

/*
 * Adds a completion.  A CQ sized below the work posted to it loses the
 * completion and says so from iw_poll_cq() (-IW_ECQ_OVERRUN); QP creation
 * refuses CQs that are too small, so only misuse gets there.
 */
void cq_push(struct iw_cq *cq, const struct iw_wc *wc)
{
	bool notify = false;

	pthread_mutex_lock(&cq->lock);
	if (cq->count == cq->size) {
		cq->overrun = true;
		pthread_mutex_unlock(&cq->lock);
		return;
	}
	cq->ring[(cq->head + cq->count++) % cq->size] = *wc;
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
		wc[n++] = cq->ring[cq->head % cq->size];
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
