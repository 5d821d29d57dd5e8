// SPDX-License-Identifier: MIT
/*
 * Who moves the streams on.  The application's own calls do, first of
 * all: a poll that finds its CQ empty reads the sockets of the CQ's QPs
 * in the calling thread and runs the receive path right there, as
 * libfabric's and UCX's TCP transports do.  Each connection's lock is
 * only tried: whoever holds it is making progress already, and nobody
 * waits for it.  A thread that waits on a CQ of its own sleeps on those
 * sockets alone (iw_progress_cq()).  Behind that, the context's event
 * loops run the rest (listeners, MPA handshakes, timers, sockets that
 * were full, and connections nobody polls): dispatched by library
 * threads, by the application's own event_base, or in manual mode by the
 * application's waiting calls.  iw_open(3) (PROGRESS) documents the
 * model, ARCHITECTURE.md draws it, and verbs/progress_tuning.h holds its
 * numbers.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <time.h>

#include <event2/event.h>

#include "verbs/progress_tuning.h"
#include "verbs/spin.h"
#include "verbs/verbs.h"

/* The loop the calling thread is dispatching, if any. */
static _Thread_local struct progress_loop *dispatching;

/* A library thread: runs its loop, looking on a while after data came. */
static void *loop_thread(void *arg)
{
	struct progress_loop *l = arg;

	dispatching = l;
	while (!event_base_got_break(l->base)) {
		if (spin_still_flowing()) {
			event_base_loop(l->base, EVLOOP_NONBLOCK);
			spin_yield();
		} else {
			event_base_loop(l->base, EVLOOP_ONCE |
							 EVLOOP_NO_EXIT_ON_EMPTY);
		}
	}
	return NULL;
}

static void stop_loop(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	event_base_loopbreak(arg);
}

static void on_release_timer(evutil_socket_t fd, short what, void *arg);

static void loop_fini(struct progress_loop *l)
{
	if (l->thread_running) {
		event_active(l->stop_ev, EV_TIMEOUT, 0);
		pthread_join(l->thread, NULL);
		l->thread_running = false;
	}
	if (l->stop_ev)
		event_free(l->stop_ev);
	if (l->release_timer)
		event_free(l->release_timer);
	if (l->own_base && l->base)
		event_base_free(l->base);
	pthread_mutex_destroy(&l->dispatch);
	pthread_mutex_destroy(&l->held_lock);
}

static int loop_init(struct progress_loop *l, struct event_base *app_base,
		     bool thread)
{
	int rc;

	pthread_mutex_init(&l->dispatch, NULL);
	pthread_mutex_init(&l->held_lock, NULL);
	if (app_base) {
		l->base = app_base;
		return 0;
	}
	l->own_base = true;
	l->base = event_base_new();
	if (!l->base)
		return -ENOMEM;
	/* threads waiting in iw_progress_cq() take connections in any mode */
	l->release_timer = event_new(l->base, -1, EV_PERSIST, on_release_timer, l);
	if (!l->release_timer)
		return -ENOMEM;
	if (!thread)
		return 0;
	l->stop_ev = event_new(l->base, -1, 0, stop_loop, l->base);
	if (!l->stop_ev)
		return -ENOMEM;
	rc = -pthread_create(&l->thread, NULL, loop_thread, l);
	if (rc)
		return rc;
	l->thread_running = true;
	return 0;
}

/*
 * Sets up the context's loops as @attr asks: see enum iw_progress_mode.
 * Returns 0 or a negative errno-style code (-EINVAL for an attribute it
 * does not know).
 */
int progress_start(struct iw_context *ctx, const struct iw_context_attr *attr)
{
	enum iw_progress_mode mode = IW_PROGRESS_THREAD;
	uint32_t n = 1;
	int rc = 0;

	if (attr && (attr->comp_mask & ~(uint32_t)IW_CONTEXT_ATTR_PROGRESS))
		return -EINVAL;
	if (attr && (attr->comp_mask & IW_CONTEXT_ATTR_PROGRESS)) {
		mode = attr->progress;
		if (mode == IW_PROGRESS_THREADS)
			n = attr->progress_threads ? attr->progress_threads
						  : PROGRESS_THREADS_DEFAULT;
		if (mode > IW_PROGRESS_THREADS || n > PROGRESS_THREADS_MAX)
			return -EINVAL;
	}
	if (attr && attr->base) {
		mode = IW_PROGRESS_THREAD; /* the application's thread */
		n = 1;
	}
	ctx->mode = mode;
	ctx->loops = calloc(n, sizeof(*ctx->loops));
	if (!ctx->loops)
		return -ENOMEM;
	for (; ctx->n_loops < n && !rc; ctx->n_loops++)
		rc = loop_init(&ctx->loops[ctx->n_loops],
			       attr ? attr->base : NULL,
			       mode != IW_PROGRESS_MANUAL);
	if (rc) {
		progress_stop(ctx);
		return rc;
	}
	ctx->base = ctx->loops[0].base;
	return 0;
}

void progress_stop(struct iw_context *ctx)
{
	for (uint32_t i = 0; i < ctx->n_loops; i++)
		loop_fini(&ctx->loops[i]);
	free(ctx->loops);
	ctx->loops = NULL;
	ctx->n_loops = 0;
}

/* The loop a new connection's socket is watched by: spread evenly. */
struct progress_loop *progress_conn_loop(struct iw_context *ctx)
{
	uint32_t i = atomic_fetch_add(&ctx->next_loop, 1) % ctx->n_loops;

	return &ctx->loops[i];
}

/* ---- handing reads between the loop's thread and polling threads ----- */

/*
 * One concept, one name: the application's threads *hold* a connection
 * when their polls (or a wait in iw_progress_cq()) read its socket and
 * the loop does not watch it (id->held, the loop's held_list).
 * progress_hold() is where a poll takes hold, hold() what taking it
 * does; release() gives a held connection back to the loop, which the
 * release timer does for those nobody polls any more (held_sweep() with
 * judge_unpolled(), every RELEASE_LOOK_US); unhold() drops the hold
 * without watching again, for a connection that closes
 * (progress_unhold()).  The transport sees the same thing as
 * tp_set_polled().
 */

static void held_unlink(struct progress_loop *l, struct iw_cm_id *id)
{
	if (id->held_prev)
		id->held_prev->held_next = id->held_next;
	else
		l->held_list = id->held_next;
	if (id->held_next)
		id->held_next->held_prev = id->held_prev;
	id->held_prev = id->held_next = NULL;
}

/* With the connection's and the list's locks: no thread holds it now. */
static void unhold(struct progress_loop *l, struct iw_cm_id *id)
{
	id->held = false;
	id->held_by_waiter = false;
	held_unlink(l, id);
}

/* unhold(), and the loop watches the socket again. */
static void release(struct iw_cm_id *id)
{
	unhold(id->loop, id);
	tp_set_polled(&id->tp, false);
}

static bool qp_armed(const struct iw_qp *qp)
{
	return atomic_load_explicit(&qp->send_cq->armed, memory_order_relaxed) ||
	       atomic_load_explicit(&qp->recv_cq->armed, memory_order_relaxed);
}

static void hold(struct progress_loop *l, struct iw_cm_id *id);

/*
 * A poll that found its CQ empty, as the CQ's poll before it had
 * (cq->empty_run), has just moved the connection on (with its lock
 * held).  Where a library thread watches the socket too, it would wake
 * for every message only to find it taken, and on a small machine take
 * the CPU from the very thread that polls.  In manual mode other threads' polls run the
 * loop in passing: they would send this stream whenever its socket made
 * room, and wait for the lock its own poller holds.  So the loop stops
 * watching until such polls stop, until the application arms a CQ to
 * sleep on, or in manual mode until it calls iw_progress().  Polls that
 * find completions do not count, nor does one empty poll after them: an
 * application that polls until its send completes and then spins on
 * memory for a peer's RDMA Write, as latency tests do, needs the loop to
 * place that Write.  An application's own event_base has no release
 * timer: its loop keeps every connection.
 */
void progress_hold(struct iw_cm_id *id)
{
	struct progress_loop *l = id->loop;

	if (!l || !l->release_timer)
		return;
	id->held_polls++;
	if (id->held || !id->qp || qp_armed(id->qp))
		return;
	hold(l, id);
}

/*
 * The calling thread reads the connection from now on: the loop stops
 * watching it until the release timer finds it no longer polled.  With
 * the connection's lock held.
 */
static void hold(struct progress_loop *l, struct iw_cm_id *id)
{
	id->held = true;
	tp_set_polled(&id->tp, true);
	pthread_mutex_lock(&l->held_lock);
	id->held_next = l->held_list;
	if (l->held_list)
		l->held_list->held_prev = id;
	l->held_list = id;
	if (!l->release_armed) {
		struct timeval tv = { 0, RELEASE_LOOK_US };

		evtimer_add(l->release_timer, &tv);
		l->release_armed = true;
	}
	pthread_mutex_unlock(&l->held_lock);
}

/* The connection closes (its lock held): off the list. */
void progress_unhold(struct iw_cm_id *id)
{
	struct progress_loop *l = id->loop;

	if (!l || !id->held)
		return;
	pthread_mutex_lock(&l->held_lock);
	unhold(l, id);
	pthread_mutex_unlock(&l->held_lock);
}

/*
 * Work posted while polls held @id leaves now, at the latest: sent from a
 * callback of its own, not under held_lock.  With @id's lock.
 */
static void send_deferred(struct iw_cm_id *id)
{
	if (!id->tx_deferred)
		return;
	id->tx_deferred = false;
	tp_poll_soon(&id->tp);
}

/* What a look at a held connection decides. */
enum hold_verdict {
	HOLD_KEEP,	/* still held; its deferred work leaves */
	HOLD_RELEASE,	/* back to the loop; its deferred work leaves */
	HOLD_LEAVE,	/* not this look's to touch at all */
};

/*
 * Looks at each held connection whose lock is free (one whose lock is
 * taken is being polled now) and does what @judge says; the release timer
 * stops once none is held.  In the loop.
 */
static void held_sweep(struct progress_loop *l,
		       enum hold_verdict (*judge)(struct iw_cm_id *id))
{
	struct iw_cm_id *id, *next;

	pthread_mutex_lock(&l->held_lock);
	for (id = l->held_list; id; id = next) {
		enum hold_verdict v;

		next = id->held_next;
		if (pthread_mutex_trylock(&id->lock))
			continue;
		v = judge(id);
		if (v == HOLD_RELEASE)
			release(id);
		if (v != HOLD_LEAVE)
			send_deferred(id);
		pthread_mutex_unlock(&id->lock);
	}
	if (!l->held_list && l->release_armed) {
		event_del(l->release_timer);
		l->release_armed = false;
	}
	pthread_mutex_unlock(&l->held_lock);
}

/*
 * The timer's look: a connection nobody has polled since the previous
 * look goes back, unless a thread sleeps on it in iw_progress_cq().
 */
static enum hold_verdict judge_unpolled(struct iw_cm_id *id)
{
	if (id->held_polls == id->held_polls_seen &&
	    !(id->qp && progress_qp_waited(id->qp)))
		return HOLD_RELEASE;
	id->held_polls_seen = id->held_polls;
	return HOLD_KEEP;
}

/*
 * iw_progress() in manual mode: every connection polls took goes back;
 * one that a thread waiting in iw_progress_cq() took stays its own.
 */
static enum hold_verdict judge_taken_by_polls(struct iw_cm_id *id)
{
	if (id->held_by_waiter)
		return HOLD_LEAVE;
	if (!(id->qp && progress_qp_waited(id->qp)))
		return HOLD_RELEASE;
	id->held_polls_seen = id->held_polls;
	return HOLD_KEEP;
}

/* The loop's timer: see RELEASE_LOOK_US. */
static void on_release_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	held_sweep(arg, judge_unpolled);
}

/* A CQ was armed: its QPs' sockets go back to the loop at once. */
void progress_cq_armed(struct iw_cq *cq)
{
	unsigned int g = grace_enter(&cq->grace);
	struct cq_qps *qps = atomic_load(&cq->qps);

	for (uint32_t i = 0; i < qps->n; i++) {
		struct iw_qp *qp = qps->qp[i];
		pthread_mutex_t *lk = qp_lock(qp);
		struct iw_cm_id *id = qp->id;

		if (id && id->held) {
			pthread_mutex_lock(&id->loop->held_lock);
			release(id);
			pthread_mutex_unlock(&id->loop->held_lock);
		}
		if (id)
			conn_flush(id); /* a sleeper's work must not wait */
		pthread_mutex_unlock(lk);
	}
	grace_exit(&cq->grace, g);
}

struct barrier {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool passed;
	void (*fn)(void *arg);
	void *arg;
};

static void barrier_pass(evutil_socket_t fd, short what, void *arg)
{
	struct barrier *b = arg;

	(void)fd;
	(void)what;
	b->fn(b->arg);
	pthread_mutex_lock(&b->lock);
	b->passed = true;
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

/*
 * Runs @fn in loop @l between two of its callbacks, and returns
 * once it has: what a callback of the loop uses can be taken away there
 * without racing it.  From inside the loop, or where the application
 * dispatches the loop in a thread of its own, @fn runs at once.
 */
static void loop_run(struct iw_context *ctx, struct progress_loop *l,
		     void (*fn)(void *arg), void *arg)
{
	struct barrier b = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
			     false, fn, arg };

	if (dispatching == l) {
		/* inside the loop already */
	} else if (l->thread_running) {
		if (event_base_once(l->base, -1, EV_TIMEOUT, barrier_pass, &b,
				    NULL) == 0) {
			pthread_mutex_lock(&b.lock);
			while (!b.passed)
				pthread_cond_wait(&b.cond, &b.lock);
			pthread_mutex_unlock(&b.lock);
			return;
		}
	} else if (ctx->mode == IW_PROGRESS_MANUAL) {
		/* a waiter may sit in the loop: wake it, keep it out */
		atomic_fetch_add(&l->barriers, 1);
		event_base_loopbreak(l->base);
		pthread_mutex_lock(&l->dispatch);
		fn(arg);
		pthread_mutex_unlock(&l->dispatch);
		atomic_fetch_sub(&l->barriers, 1);
		return;
	}
	fn(arg);
}

/* Runs @fn in the first loop, the listeners', as loop_run() says. */
void progress_in_loop(struct iw_context *ctx, void (*fn)(void *arg), void *arg)
{
	loop_run(ctx, &ctx->loops[0], fn, arg);
}

/*
 * Manual mode: runs the loop once, unless another thread is running it:
 * waiting up to @timeout_ms (-1: no bound) for something to happen, and
 * for @fd to become readable when it is not -1; with @take_back, first
 * releasing the connections that polls hold (judge_taken_by_polls()).
 * Returns false when another thread had the loop.
 */
static bool manual_run(struct iw_context *ctx, int fd, int timeout_ms,
		       bool take_back)
{
	struct progress_loop *l = &ctx->loops[0];
	struct event *fd_ev = NULL, *timer = NULL;

	if (dispatching == l || atomic_load(&l->barriers) ||
	    pthread_mutex_trylock(&l->dispatch))
		return false;
	dispatching = l;
	if (take_back)
		held_sweep(l, judge_taken_by_polls);
	if (timeout_ms == 0) {
		event_base_loop(l->base, EVLOOP_NONBLOCK);
	} else {
		/* the loop must come back for the descriptor and the time */
		if (fd >= 0) {
			fd_ev = event_new(l->base, fd, EV_READ, stop_loop,
					  l->base);
			if (fd_ev)
				event_add(fd_ev, NULL);
		}
		if (timeout_ms > 0) {
			struct timeval tv = { timeout_ms / 1000,
					      (timeout_ms % 1000) * 1000 };

			timer = evtimer_new(l->base, stop_loop, l->base);
			if (timer)
				evtimer_add(timer, &tv);
		}
		event_base_loop(l->base, EVLOOP_ONCE);
		if (fd_ev)
			event_free(fd_ev);
		if (timer)
			event_free(timer);
	}
	dispatching = NULL;
	pthread_mutex_unlock(&l->dispatch);
	return true;
}

static bool fd_readable(int fd, int timeout_ms)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, timeout_ms) > 0;
}

/*
 * Before a call waits on @fd (a CQ's or a CM channel's): in manual mode
 * nothing would make it readable, so the loop runs in the caller until it
 * is (or, for a non-blocking descriptor, once).  Returns 0, or -EAGAIN
 * when a non-blocking descriptor is not readable.  In the other modes a
 * thread of the library or of the application runs the loop: the caller
 * just waits.
 */
int progress_wait_fd(struct iw_context *ctx, int fd, int timeout_ms)
{
	int fl;

	if (ctx->mode != IW_PROGRESS_MANUAL)
		return 0;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -errno;
	if (fl & O_NONBLOCK) {
		if (!fd_readable(fd, 0))
			manual_run(ctx, -1, 0, false);
		return fd_readable(fd, 0) ? 0 : -EAGAIN;
	}
	while (!fd_readable(fd, 0)) {
		if (!manual_run(ctx, fd, timeout_ms, false))
			fd_readable(fd, TAKEN_RETRY_MS);
	}
	return 0;
}

/*
 * @qp's connection goes: once this returns, no poll of its CQs is still
 * inside it (progress_cq() reaches connections through their QPs).
 */
void progress_quiesce_qp(struct iw_qp *qp)
{
	grace_wait(&qp->send_cq->grace);
	if (qp->recv_cq != qp->send_cq)
		grace_wait(&qp->recv_cq->grace);
}

/*
 * @qp's lock, held, or NULL when another thread holds it.  The lock may
 * change (it follows the connection) while we try it: one that is no
 * longer the QP's is let go.
 */
static inline pthread_mutex_t *qp_trylock(struct iw_qp *qp)
{
	pthread_mutex_t *l = atomic_load(&qp->lock);

	if (pthread_mutex_trylock(l))
		return NULL;
	if (l == atomic_load(&qp->lock))
		return l;
	pthread_mutex_unlock(l);
	return NULL;
}

/*
 * Moves @qp's stream on in the calling thread, unless another is at it.
 * Returns whether its socket was read to the end (not when another thread
 * had it: that one may have left data behind).
 */
static bool progress_qp(struct iw_qp *qp, bool waiting)
{
	pthread_mutex_t *l = qp_trylock(qp);
	bool drained = true;

	if (!l)
		return false;
	if (qp->id)
		drained = conn_progress(qp->id, waiting);
	pthread_mutex_unlock(l);
	return drained;
}

/*
 * Sends the work posted to the CQ's QPs while polls held their
 * connections (conn_posted()).  A QP whose lock another thread holds (or
 * that moved while we tried it) is left to the next poll.
 */
void progress_flush(struct iw_cq *cq)
{
	struct cq_qps *qps = atomic_load(&cq->qps);

	atomic_store(&cq->tx_deferred, false);
	for (uint32_t i = 0; i < qps->n; i++) {
		struct iw_qp *qp = qps->qp[i];
		pthread_mutex_t *l = qp_trylock(qp);

		if (!l) {
			atomic_store(&cq->tx_deferred, true);
			continue;
		}
		if (qp->id)
			conn_flush(qp->id);
		pthread_mutex_unlock(l);
	}
}

/*
 * Moves on the CQ's QPs, from the @start-th on.  Returns whether every
 * socket was read to its end.
 */
static bool progress_qps(struct cq_qps *qps, uint32_t start, bool waiting)
{
	bool drained = true;

	for (uint32_t i = 0; i < qps->n; i++)
		drained &= progress_qp(qps->qp[(start + i) % qps->n], waiting);
	return drained;
}

/*
 * The QP a pass over @qps starts at: the next one each time, so that none
 * is always last.  Racing passes may start at the same one; it does not
 * matter which.
 */
static uint32_t qp_rotate(struct iw_cq *cq, const struct cq_qps *qps)
{
	uint32_t start;

	if (qps->n < 2)
		return 0;
	start = atomic_load_explicit(&cq->qp_rotation, memory_order_relaxed);
	atomic_store_explicit(&cq->qp_rotation, start + 1,
			      memory_order_relaxed);
	return start;
}

/* Manual mode: look number @poll of a CQ runs the loop too. */
static bool loop_due(uint32_t poll)
{
	/* a poll with completions reads the sockets in one in CQ_BUSY_PROGRESS */
	_Static_assert(MANUAL_LOOP_EVERY % CQ_BUSY_PROGRESS == 0,
		       "the loop's turn falls on a poll that reads the sockets");
	return poll % MANUAL_LOOP_EVERY == MANUAL_LOOP_EVERY - 1;
}

/* Whether look number @poll of @cq is the manual-mode loop's turn. */
bool progress_loop_due(const struct iw_cq *cq, uint32_t poll)
{
	return cq->ctx->mode == IW_PROGRESS_MANUAL && loop_due(poll);
}

/*
 * Reads what has arrived for the CQ's QPs, at poll number @poll of the
 * CQ; @waiting when its polls keep finding it empty (see
 * progress_hold()).  Called inside the CQ's grace period, which keeps the
 * QPs (and their connections) alive.  Returns whether every QP's socket
 * was read to its end.
 */
bool progress_cq(struct iw_cq *cq, uint32_t poll, bool waiting)
{
	struct cq_qps *qps = atomic_load(&cq->qps);
	bool drained = progress_qps(qps, qp_rotate(cq, qps), waiting);

	/* the CQ's own count: threads polling CQs of their own share nothing */
	if (progress_loop_due(cq, poll))
		manual_run(cq->ctx, -1, 0, false);
	return drained;
}

/*
 * A thread that has found CQ @idle empty for a while moves on the QPs of
 * the context's CQs that nobody polls.  Programs built for RDMA hardware
 * spin on one CQ (a control channel's, say) while another's QPs take
 * RDMA Writes or Read Requests that complete nothing on that side: with
 * hardware nobody's CPU places them, here the loop's thread would, and
 * on a small machine it would fight the spinning thread for the CPU.  The
 * spinner places them instead; their connections leave the loop as its
 * own CQ's do (progress_hold()) and go back once it stops.  In manual
 * mode an empty poll runs the loop, which reaches every connection.
 */
void progress_help(struct iw_cq *idle)
{
	struct iw_context *ctx = idle->ctx;
	bool look;

	if (ctx->mode == IW_PROGRESS_MANUAL ||
	    pthread_mutex_trylock(&ctx->cqs_lock))
		return;
	look = ++ctx->help_calls % HELP_LOOK_EVERY == 0;
	for (struct iw_cq *cq = ctx->cqs; cq; cq = cq->ctx_next) {
		unsigned int g;

		if (cq == idle)
			continue;
		if (look) {
			uint32_t polls = cq_polls(cq);

			cq->unpolled = polls == cq->polls_seen;
			cq->polls_seen = polls;
		}
		/* an armed CQ's owner sleeps on its events: the loop wakes it */
		if (!cq->unpolled ||
		    atomic_load_explicit(&cq->armed, memory_order_relaxed))
			continue;
		g = grace_enter(&cq->grace);
		progress_qps(atomic_load(&cq->qps), 0, true);
		grace_exit(&cq->grace, g);
	}
	pthread_mutex_unlock(&ctx->cqs_lock);
}

/* ---- a thread that waits on a CQ of its own --------------------------- */

/* Whether a thread sleeps in iw_progress_cq() on one of @qp's CQs. */
bool progress_qp_waited(const struct iw_qp *qp)
{
	return atomic_load(&qp->send_cq->waiters) ||
	       atomic_load(&qp->recv_cq->waiters);
}

/*
 * Moves on each of the CQ's QPs in the calling thread and lists the
 * sockets to sleep on in @p (at most @max), taking them from the loop
 * where it can give them back.  Sets *@busy when a QP's lock was taken:
 * its holder is at it, and the caller looks again soon.
 */
static nfds_t cq_watch(struct iw_cq *cq, struct pollfd *p, nfds_t max,
		       bool *busy)
{
	unsigned int g = grace_enter(&cq->grace);
	struct cq_qps *qps = atomic_load(&cq->qps);
	nfds_t n = 0;

	for (uint32_t i = 0; i < qps->n && n < max; i++) {
		struct iw_qp *qp = qps->qp[i];
		pthread_mutex_t *lk = qp_trylock(qp);
		struct iw_cm_id *id;

		if (!lk) {
			*busy = true;
			continue;
		}
		id = qp->id;
		if (id)
			conn_progress(id, false);
		if (id && id->state == ID_CONNECTED && id->has_tp) {
			p[n].events = tp_wait_events(&id->tp, &p[n].fd);
			if (p[n].events) {
				if (!id->held && id->loop &&
				    id->loop->release_timer)
					hold(id->loop, id);
				id->held_by_waiter = id->held;
				id->held_polls++;
				n++;
			}
		}
		pthread_mutex_unlock(lk);
	}
	grace_exit(&cq->grace, g);
	return n;
}

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* Milliseconds left until @end (-1: no bound), at most @cap. */
static int left_ms(long long end, int cap)
{
	long long left;

	if (end < 0)
		return cap;
	left = end - now_ms();
	return left <= 0 ? 0 : left < cap ? (int)left : cap;
}

int iw_progress_cq(struct iw_cq *cq, int timeout_ms)
{
	struct pollfd p[CQ_WAIT_FDS + 1];
	long long end;
	nfds_t watched = 0;
	bool manual;
	int rc = 0;

	if (!cq)
		return -EINVAL;
	manual = cq->ctx->mode == IW_PROGRESS_MANUAL;
	end = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	atomic_fetch_add(&cq->waiters, 1);
	for (unsigned int look = 0;; look++) {
		uint32_t look_n = cq_count_poll(cq);
		bool busy = false;
		nfds_t n = cq_watch(cq, p, CQ_WAIT_FDS, &busy), efd_at = n;
		int ms, r;

		/* a completion, or a connection that came or went */
		if (cq_ready(cq) || (look && n != watched))
			break;
		watched = n;
		ms = left_ms(end, busy ? TAKEN_RETRY_MS : CQ_WAIT_SLICE_MS);
		if (!ms)
			break;
		/* manual mode: the handshakes, and connections nobody polls */
		if (manual && (!n || loop_due(look_n))) {
			if (manual_run(cq->ctx, -1, n ? 0 : ms, false) && !n)
				continue;
		}
		if (n && spin_still_flowing()) {
			spin_yield();
			continue;
		}
		if (atomic_load(&cq->armed))
			p[n++] = (struct pollfd){ cq->efd, POLLIN, 0 };
		r = poll(p, n, ms);
		if (r < 0 && errno != EINTR) {
			rc = -errno;
			break;
		}
		/* the armed CQ's event is the caller's to take */
		if (r > 0 && efd_at < n && p[efd_at].revents)
			break;
	}
	atomic_fetch_sub(&cq->waiters, 1);
	return rc;
}

int iw_progress(struct iw_context *ctx, int timeout_ms)
{
	if (!ctx)
		return -EINVAL;
	if (ctx->mode != IW_PROGRESS_MANUAL)
		return 0;
	while (!manual_run(ctx, -1, timeout_ms, true)) {
		/* another thread runs the loop: give it a slice, then retry */
		if (timeout_ms == 0)
			return 0;
		poll(NULL, 0, TAKEN_RETRY_MS);
		if (timeout_ms > 0)
			timeout_ms = timeout_ms > TAKEN_RETRY_MS
					     ? timeout_ms - TAKEN_RETRY_MS
					     : 0;
	}
	return 0;
}
