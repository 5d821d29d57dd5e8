// SPDX-License-Identifier: MIT
/*
 * Completion queues: a ring that producers (whichever thread runs a QP's
 * stream) and consumers (iw_poll_cq() in any thread) share without a
 * lock, and an eventfd that becomes readable once per armed notification,
 * as ibv_req_notify_cq() and ibv_get_cq_event() do it.  A poll that finds
 * the ring empty runs the receive path of the CQ's QPs itself before it
 * says so (progress.c): the application's own poll drives the stack.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "verbs/progress_tuning.h"
#include "verbs/verbs.h"

/*
 * A ring this large or larger is mapped rather than taken from the heap:
 * its pages are zero and stay out of memory until completions reach
 * them.  libfabric's ofi_rxm asks for CQs of hundreds of thousands of
 * entries and uses a few.
 */
#define CQ_RING_MAP_BYTES (64 * 1024)

/* A ring for @cap completions, every slot free for its first lap. */
static struct cq_ring *ring_new(uint32_t cap)
{
	struct cq_ring *r;
	uint32_t slots = 1;
	size_t bytes;
	bool mapped;

	while (slots < cap)
		slots <<= 1;
	bytes = sizeof(*r) + (size_t)slots * sizeof(r->e[0]);
	mapped = bytes >= CQ_RING_MAP_BYTES;
	if (mapped) {
		r = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (r == MAP_FAILED)
			return NULL;
	} else {
		if (posix_memalign((void **)&r, 64, bytes))
			return NULL;
		memset(r, 0, bytes);
	}
	r->cap = cap;
	r->mask = slots - 1;
	r->bytes = bytes;
	r->mapped = mapped;
	atomic_init(&r->next, NULL);
	atomic_init(&r->head, 0);
	atomic_init(&r->tail, 0);
	return r;
}

static void ring_free(struct cq_ring *r)
{
	if (r && r->mapped)
		munmap(r, r->bytes);
	else
		free(r);
}

/*
 * The turn an entry shows while position @pos is a producer's to fill:
 * the first position of @pos's lap (see struct cq_entry).
 */
static inline uint32_t lap(const struct cq_ring *r, uint32_t pos)
{
	return pos & ~r->mask;
}

struct iw_cq *iw_create_cq(struct iw_context *ctx, int cqe, void *cq_context)
{
	struct cq_ring *ring;
	struct cq_qps *none;
	struct iw_cq *cq;

	if (!ctx || cqe <= 0 || cqe > CQ_MAX_CQE) {
		errno = EINVAL;
		return NULL;
	}
	if (posix_memalign((void **)&cq, 64, sizeof(*cq))) {
		errno = ENOMEM;
		return NULL;
	}
	memset(cq, 0, sizeof(*cq));
	ring = ring_new((uint32_t)cqe);
	none = calloc(1, sizeof(*none));
	cq->efd = ring && none ? eventfd(0, EFD_CLOEXEC) : -1;
	if (cq->efd < 0) {
		int e = ring && none ? errno : ENOMEM;

		free(none);
		ring_free(ring);
		free(cq);
		errno = e;
		return NULL;
	}
	cq->ctx = ctx;
	cq->cq_context = cq_context;
	cq->size = (uint32_t)cqe;
	atomic_init(&cq->rx, ring);
	atomic_init(&cq->tx, ring);
	cq->rings = ring;
	atomic_init(&cq->qps, none);
	atomic_init(&cq->drained_poll, UINT32_MAX - 1); /* not before poll 0 */
	grace_init(&cq->grace);
	pthread_mutex_init(&cq->lock, NULL);
	pthread_mutex_lock(&ctx->cqs_lock);
	cq->ctx_next = ctx->cqs;
	if (ctx->cqs)
		ctx->cqs->ctx_prev = cq;
	ctx->cqs = cq;
	pthread_mutex_unlock(&ctx->cqs_lock);
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
	/* once off the list, no helping thread can be inside it */
	pthread_mutex_lock(&cq->ctx->cqs_lock);
	if (cq->ctx_prev)
		cq->ctx_prev->ctx_next = cq->ctx_next;
	else
		cq->ctx->cqs = cq->ctx_next;
	if (cq->ctx_next)
		cq->ctx_next->ctx_prev = cq->ctx_prev;
	pthread_mutex_unlock(&cq->ctx->cqs_lock);
	close(cq->efd);
	grace_destroy(&cq->grace);
	pthread_mutex_destroy(&cq->lock);
	free(atomic_load(&cq->qps));
	while (cq->rings) {
		struct cq_ring *r = cq->rings;

		cq->rings = r->older;
		ring_free(r);
	}
	free(cq);
	return 0;
}

/*
 * Makes the ring hold @need completions, under cq->lock.  A bigger ring
 * (twice the last at least, so that the retired ones, kept until the CQ
 * goes, add up to less than the newest) follows the producers' ring,
 * which is then sealed: a producer that claimed its place before the seal
 * finishes there, every later one uses the new ring, and consumers move
 * on once the old one is drained, so a QP's completions keep their order.
 */
static int cq_grow(struct iw_cq *cq, uint32_t need)
{
	struct cq_ring *old = atomic_load(&cq->tx), *r;
	uint64_t cap = 2 * (uint64_t)old->cap;

	if (need <= old->cap)
		return 0;
	if (need > CQ_MAX_CQE)
		return -EINVAL;
	if (cap < need)
		cap = need;
	if (cap > CQ_MAX_CQE)
		cap = CQ_MAX_CQE;
	r = ring_new((uint32_t)cap);
	if (!r)
		return -ENOMEM;
	r->older = cq->rings;
	cq->rings = r;
	atomic_store(&old->next, r);
	atomic_store(&cq->tx, r);
	atomic_fetch_or(&old->tail, CQ_RING_SEALED);
	return 0;
}

/*
 * Reserves room for @n more completions.  A CQ holds every work request
 * that may complete on it, so that no completion is ever lost: when the
 * QPs need more than it holds, its ring grows (up to CQ_MAX_CQE).
 * Returns 0, -EINVAL past that bound, or -ENOMEM.
 */
int cq_reserve(struct iw_cq *cq, uint32_t n)
{
	uint64_t need;
	int rc;

	pthread_mutex_lock(&cq->lock);
	need = (uint64_t)cq->reserved + atomic_load(&cq->orphans) + n;
	rc = need > CQ_MAX_CQE ? -EINVAL : cq_grow(cq, (uint32_t)need);
	if (!rc)
		cq->reserved += n;
	pthread_mutex_unlock(&cq->lock);
	return rc;
}

/*
 * A new size for the CQ: its ring grows to hold @cqe, and never shrinks
 * (what its QPs reserved stays reserved whatever the size).  Returns the
 * completions it holds now, at least @cqe.
 */
int iw_resize_cq(struct iw_cq *cq, int cqe)
{
	int rc;

	if (!cq || cqe <= 0 || cqe > CQ_MAX_CQE)
		return -EINVAL;
	pthread_mutex_lock(&cq->lock);
	rc = cq_grow(cq, (uint32_t)cqe);
	if (!rc) {
		cq->size = (uint32_t)cqe;
		rc = (int)atomic_load(&cq->tx)->cap;
	}
	pthread_mutex_unlock(&cq->lock);
	return rc;
}

void cq_release(struct iw_cq *cq, uint32_t n)
{
	pthread_mutex_lock(&cq->lock);
	cq->reserved -= n;
	pthread_mutex_unlock(&cq->lock);
}

/*
 * The QP list is replaced, never changed in place, so that a poll reads it
 * without a lock; the old list is freed once no poll can be reading it.
 */
static int qps_replace(struct iw_cq *cq, struct iw_qp *add,
		       struct iw_qp *remove)
{
	struct cq_qps *old, *new;
	uint32_t n = 0;

	pthread_mutex_lock(&cq->lock);
	old = atomic_load(&cq->qps);
	new = malloc(sizeof(*new) + (old->n + 1) * sizeof(new->qp[0]));
	if (!new) {
		pthread_mutex_unlock(&cq->lock);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < old->n; i++)
		if (old->qp[i] != remove)
			new->qp[n++] = old->qp[i];
	if (add)
		new->qp[n++] = add;
	new->n = n;
	atomic_store(&cq->qps, new);
	pthread_mutex_unlock(&cq->lock);
	grace_wait(&cq->grace);
	free(old);
	return 0;
}

int cq_add_qp(struct iw_cq *cq, struct iw_qp *qp)
{
	return qps_replace(cq, qp, NULL);
}

/* Once it returns, no poll of this CQ touches @qp any more. */
void cq_remove_qp(struct iw_cq *cq, struct iw_qp *qp)
{
	/* without memory for a new list the QP stays listed, but idle */
	if (qps_replace(cq, NULL, qp))
		grace_wait(&cq->grace);
}

/*
 * A QP goes away, and its connection with it: its completions stay
 * pollable but no longer free slots of it (those of an SRQ, which outlives
 * it, are given back now); each keeps its room in the CQ reserved until
 * it is polled.  While it walks, polls claim entries with an exchange
 * (see taken()): those that began before it raised @forgetting are
 * waited for first.  A poll that took one before it became an orphan is
 * waited for at the end, so the QP may be freed on return.
 */
void cq_forget_qp(struct iw_cq *cq, struct iw_qp *qp)
{
	atomic_fetch_add(&cq->forgetting, 1);
	grace_wait(&cq->grace);
	pthread_mutex_lock(&cq->lock);
	/* rings that consumers left behind are drained: from theirs on */
	for (struct cq_ring *r = atomic_load(&cq->rx); r;
	     r = atomic_load(&r->next))
		for (uint32_t pos = atomic_load(&r->head);
		     pos != (uint32_t)atomic_load(&r->tail); pos++) {
			struct cq_entry *e = &r->e[pos & r->mask];
			unsigned char live = CQE_LIVE;

			if (atomic_load(&e->turn) != lap(r, pos) + 1 ||
			    atomic_load_explicit(&e->qp,
						 memory_order_relaxed) != qp)
				continue;
			if (!atomic_compare_exchange_strong(&e->state, &live,
							    CQE_ORPHAN))
				continue;
			if (qp->srq && e->slots == &qp->srq->unpolled)
				atomic_fetch_sub(e->slots, 1);
			atomic_fetch_add(&cq->orphans, 1);
		}
	pthread_mutex_unlock(&cq->lock);
	atomic_fetch_sub(&cq->forgetting, 1);
	grace_wait(&cq->grace);
}

static void notify(struct iw_cq *cq, const struct iw_wc *wc)
{
	uint64_t one = 1;
	ssize_t w;

	if (atomic_load_explicit(&cq->solicited_only, memory_order_relaxed) &&
	    !(wc->wc_flags & IW_WC_SOLICITED) && wc->status == IW_WC_SUCCESS)
		return;
	if (!atomic_exchange(&cq->armed, false))
		return;
	w = write(cq->efd, &one, sizeof(one));
	(void)w; /* an eventfd only refuses at 2^64 - 1 */
}

/*
 * Claims the @n entries from the tail on of the newest ring, all free,
 * for one push; false when the ring has no room for all of them.
 */
static struct cq_ring *claim(struct iw_cq *cq, uint32_t n, uint32_t *at)
{
	struct cq_ring *r = atomic_load_explicit(&cq->tx, memory_order_acquire);

	for (;;) {
		uint64_t t = atomic_load_explicit(&r->tail,
						  memory_order_relaxed);
		uint32_t pos = (uint32_t)t, i;
		int32_t used = (int32_t)(pos - atomic_load(&r->head));

		if (t & CQ_RING_SEALED) {
			/* a bigger ring follows (cq_grow()) */
			r = atomic_load(&r->next);
			continue;
		}
		/* signed: a stale @pos (others pushed, pollers took) retries */
		if (used < 0)
			continue;
		if ((uint32_t)used + n > r->cap)
			return NULL;
		/* each is free once the poller that took it lets go */
		for (i = 0; i < n; i++) {
			struct cq_entry *e = &r->e[(pos + i) & r->mask];

			if (atomic_load_explicit(&e->turn,
						 memory_order_acquire) !=
			    lap(r, pos + i))
				break;
		}
		/* the new tail in 32 bits: a wrap must not set the seal */
		if (i == n &&
		    atomic_compare_exchange_weak(&r->tail, &t,
						 (uint64_t)(uint32_t)(pos + n))) {
			*at = pos;
			return r;
		}
	}
}

/*
 * Adds @n completions, each holding a slot of the queue @slots until it
 * is polled: a slot counted when the work was posted (receives), or
 * counted here with @take_slot (sends).  A run takes its entries and its
 * slots in one step each.  The slot accounting of QPs and SRQs keeps a
 * CQ from holding more than it was reserved for; should it still be
 * full, a completion that does not fit is lost and iw_poll_cq() says so
 * (-IW_ECQ_OVERRUN).
 */
void cq_push(struct iw_cq *cq, const struct iw_wc *wc, uint32_t n,
	     atomic_uint *slots, bool take_slot)
{
	struct cq_ring *r;
	uint32_t pos;

	r = claim(cq, n, &pos);
	if (!r) {
		if (n == 1) {
			atomic_store(&cq->overrun, true);
			return;
		}
		/* those that fit, one by one */
		for (uint32_t i = 0; i < n; i++)
			cq_push(cq, &wc[i], 1, slots, take_slot);
		return;
	}
	if (take_slot)
		atomic_fetch_add(slots, n);
	for (uint32_t i = 0; i < n; i++) {
		struct cq_entry *e = &r->e[(pos + i) & r->mask];

		e->wc = wc[i];
		e->slots = slots;
		atomic_store_explicit(&e->qp, wc[i].qp, memory_order_relaxed);
		atomic_store_explicit(&e->state, CQE_LIVE,
				      memory_order_relaxed);
		atomic_store_explicit(&e->turn, lap(r, pos + i) + 1,
				      memory_order_release);
	}
	for (uint32_t i = 0;
	     i < n && atomic_load_explicit(&cq->armed, memory_order_relaxed);
	     i++)
		notify(cq, &wc[i]);
}

/* How many completions from @pos on are ready, up to @max. */
static uint32_t ready_from(struct cq_ring *r, uint32_t pos, uint32_t max)
{
	uint32_t n = 0;

	while (n < max) {
		struct cq_entry *e = &r->e[(pos + n) & r->mask];

		if (atomic_load_explicit(&e->turn, memory_order_acquire) !=
		    lap(r, pos + n) + 1)
			break;
		n++;
	}
	return n;
}

/*
 * The ring after @r when @r, empty at @pos, is sealed and drained (every
 * place claimed in it has been taken); NULL otherwise.  The first poller
 * to see it moves the consumers' ring on.
 */
static struct cq_ring *drained(struct iw_cq *cq, struct cq_ring *r,
			       uint32_t pos)
{
	struct cq_ring *next = atomic_load_explicit(&r->next,
						    memory_order_acquire);
	uint64_t t;

	if (!next)
		return NULL;
	t = atomic_load(&r->tail);
	if (!(t & CQ_RING_SEALED) || (uint32_t)t != pos)
		return NULL;
	atomic_compare_exchange_strong(&cq->rx, &r, next);
	return next;
}

/*
 * The state of an entry the caller has claimed: live, or orphaned by
 * cq_forget_qp().  Only while that may be marking orphans does reading
 * it need an exchange (marking it taken, so that the walk leaves it be);
 * at any other time no one else writes the state of a claimed entry.
 */
static unsigned char taken(struct cq_entry *e, bool careful)
{
	if (careful)
		return atomic_exchange(&e->state, CQE_TAKEN);
	return atomic_load_explicit(&e->state, memory_order_relaxed);
}

/* Whether a poll would find something: a completion, or the overrun. */
bool cq_ready(struct iw_cq *cq)
{
	struct cq_ring *r = atomic_load_explicit(&cq->rx, memory_order_acquire);

	for (;;) {
		uint32_t pos = atomic_load_explicit(&r->head,
						    memory_order_relaxed);

		if (ready_from(r, pos, 1))
			return true;
		r = drained(cq, r, pos);
		if (!r)
			return atomic_load(&cq->overrun);
	}
}

/*
 * Takes up to @max ready completions: the common path, no lock, no
 * syscall.  Called inside the CQ's grace section, as taken() needs.
 */
static int take(struct iw_cq *cq, int max, struct iw_wc *wc)
{
	struct cq_ring *r = atomic_load_explicit(&cq->rx, memory_order_acquire);
	atomic_uint *slots = NULL; /* whose slots the current run holds */
	uint32_t pos, n, run = 0;
	bool careful;

	do {
		pos = atomic_load_explicit(&r->head, memory_order_relaxed);
		n = ready_from(r, pos, (uint32_t)max);
		if (!n) {
			r = drained(cq, r, pos);
			if (!r)
				return 0;
		}
	} while (!n || !atomic_compare_exchange_weak(&r->head, &pos, pos + n));
	careful = atomic_load(&cq->forgetting) != 0;
	for (uint32_t i = 0; i < n; i++) {
		struct cq_entry *e = &r->e[(pos + i) & r->mask];

		wc[i] = e->wc;
		if (taken(e, careful) == CQE_ORPHAN) {
			atomic_fetch_sub(&cq->orphans, 1);
		} else if (e->slots && e->slots != slots) {
			/* a run of one queue's completions gives back at once */
			if (run)
				atomic_fetch_sub(slots, run);
			slots = e->slots;
			run = 1;
		} else if (e->slots) {
			run++;
		}
		/* the next lap's first position: a producer's again */
		atomic_store_explicit(&e->turn, lap(r, pos + i) + r->mask + 1,
				      memory_order_release);
	}
	if (run)
		atomic_fetch_sub(slots, run);
	return (int)n;
}

/*
 * Whether poll number @poll, one that found completions, reads the
 * sockets too: see CQ_BUSY_PROGRESS.
 */
static bool progress_due(uint32_t poll)
{
	return poll % CQ_BUSY_PROGRESS == CQ_BUSY_PROGRESS - 1;
}

/* How many looks the CQ has had (cq->polls: a count that wraps). */
uint32_t cq_polls(struct iw_cq *cq)
{
	return atomic_load_explicit(&cq->polls, memory_order_relaxed);
}

/* When the calling thread's last empty poll returned (CLOCK_MONOTONIC). */
static _Thread_local long long idle_since_ns;

static long long mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/*
 * After an empty poll: with @yield, gives the processor away
 * (CQ_YIELD_AFTER), unless the thread has been off it since its last
 * empty poll (CQ_YIELD_GAP_NS): a program that yields or sleeps between
 * polls itself need not lose it twice.
 */
static void idle_pass(bool yield)
{
	long long now = mono_ns();

	if (yield && now - idle_since_ns < CQ_YIELD_GAP_NS) {
		sched_yield(); /* whoever must send our data may need this CPU */
		now = mono_ns();
	}
	idle_since_ns = now;
}

/* Counts a look at the CQ and returns its number. */
uint32_t cq_count_poll(struct iw_cq *cq)
{
	return atomic_fetch_add_explicit(&cq->polls, 1, memory_order_relaxed);
}

/*
 * An empty poll: moves the CQ's QPs on in the calling thread, and returns
 * what that completed.  See cq->empty_run.
 */
static int poll_empty(struct iw_cq *cq, uint32_t poll, int num_entries,
		      struct iw_wc *wc)
{
	uint32_t run = atomic_load_explicit(&cq->empty_run,
					    memory_order_relaxed);
	int n;

	bool drained = progress_cq(cq, poll, run > 0);

	n = take(cq, num_entries, wc);
	if (n) {
		if (drained) {
			atomic_store_explicit(&cq->drained_ns, mono_ns(),
					      memory_order_relaxed);
			atomic_store_explicit(&cq->drained_poll, poll,
					      memory_order_relaxed);
		}
		return n;
	}
	if (run < CQ_IDLE_HELP)
		atomic_store_explicit(&cq->empty_run, ++run,
				      memory_order_relaxed);
	if (run >= CQ_IDLE_HELP)
		progress_help(cq);
	return 0;
}

/*
 * Whether poll number @poll, which found the CQ empty, may leave the
 * sockets alone: the poll just before read each of them to its end and
 * came back with completions, within CQ_DRAINED_FRESH_NS.  What its
 * caller does with them comes first (in a ping-pong the peer waits for
 * the answer).  Only that one poll: the next reads.  Not the manual-mode
 * loop's turn either.
 */
static bool just_drained(struct iw_cq *cq, uint32_t poll)
{
	return poll - 1 == atomic_load_explicit(&cq->drained_poll,
						memory_order_relaxed) &&
	       mono_ns() - atomic_load_explicit(&cq->drained_ns,
						memory_order_relaxed) <
		       CQ_DRAINED_FRESH_NS &&
	       !progress_loop_due(cq, poll);
}

/*
 * Returns how many completions were copied to @wc (0..@num_entries).  An
 * empty CQ first gets its QPs' streams moved on in the calling thread
 * (but see just_drained()).
 */
int iw_poll_cq_0_2(struct iw_cq *cq, int num_entries, struct iw_wc *wc);
int iw_poll_cq_0_2(struct iw_cq *cq, int num_entries, struct iw_wc *wc)
{
	bool yield = false;
	unsigned int g;
	uint32_t poll;
	int n;

	if (!cq || num_entries < 0 || (num_entries && !wc))
		return -EINVAL;
	if (!num_entries)
		return 0;
	poll = cq_count_poll(cq);
	g = grace_enter(&cq->grace);
	if (atomic_load_explicit(&cq->tx_deferred, memory_order_relaxed))
		progress_flush(cq); /* work posted since the last poll */
	n = take(cq, num_entries, wc);
	if (!n && !just_drained(cq, poll)) {
		n = poll_empty(cq, poll, num_entries, wc);
		/* a CQ with no QP waits for no peer, an armed one's caller
		 * sleeps next (CQ_YIELD_AFTER) */
		yield = !n &&
			atomic_load_explicit(&cq->empty_run, memory_order_relaxed) >=
				CQ_YIELD_AFTER &&
			atomic_load_explicit(&cq->qps, memory_order_relaxed)->n &&
			!atomic_load_explicit(&cq->armed, memory_order_relaxed);
	} else if (n && progress_due(poll)) {
		/* a CQ never empty (send completions) must not starve reads */
		progress_cq(cq, poll, false);
		if (n < num_entries)
			n += take(cq, num_entries - n, wc + n);
	}
	grace_exit(&cq->grace, g);
	if (n > 0) {
		if (atomic_load_explicit(&cq->empty_run, memory_order_relaxed))
			atomic_store_explicit(&cq->empty_run, 0,
					      memory_order_relaxed);
	} else {
		idle_pass(yield);
	}
	if (n == 0 && atomic_load_explicit(&cq->overrun, memory_order_relaxed))
		n = -IW_ECQ_OVERRUN;
	return n;
}
/* struct iw_wc grew in 0.2; verbs/abi.c has the 0.1 iw_poll_cq() */
__asm__(".symver iw_poll_cq_0_2, iw_poll_cq@@IWARP_0.2");

int iw_cq_fd(struct iw_cq *cq)
{
	return cq ? cq->efd : -EINVAL;
}

/* The next completion (or next solicited or failed one) raises an event. */
int iw_req_notify_cq(struct iw_cq *cq, int solicited_only)
{
	if (!cq)
		return -EINVAL;
	atomic_store(&cq->solicited_only, solicited_only != 0);
	atomic_store(&cq->armed, true);
	progress_cq_armed(cq); /* whoever sleeps now needs the loop to watch */
	return 0;
}

/*
 * Waits for a completion event (unless the fd was made non-blocking, then
 * -EAGAIN) and consumes it.  Events raised before this call count as one.
 * In manual progress mode the wait runs the context's loop meanwhile.
 */
int iw_get_cq_event(struct iw_cq *cq, void **cq_context)
{
	uint64_t v;
	ssize_t r;
	int rc;

	if (!cq)
		return -EINVAL;
	rc = progress_wait_fd(cq->ctx, cq->efd, -1);
	if (rc)
		return rc;
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
		[IW_WC_RETRY_EXC_ERR] = "no acknowledgement: retries exceeded",
	};

	if ((unsigned int)status >= sizeof(words) / sizeof(words[0]))
		return "unknown status";
	return words[status];
}
