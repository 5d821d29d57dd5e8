// SPDX-License-Identifier: MIT
/*
 * The connection manager: identifiers, their channel of events, and the
 * calls that start, answer and end connections.  The wire side of a
 * connection is in conn.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "verbs/verbs.h"

#define DEFAULT_RD_DEPTH 16
/* connections a listener holds in the MPA handshake when not told */
#define DEFAULT_BACKLOG 128

struct cm_event_node {
	struct iw_cm_event ev;
	uint8_t pd[MPA_MAX_PD_LEN];
	struct cm_event_node *next;
};

/* ---- channels and events --------------------------------------------- */

struct iw_cm_channel *iw_create_cm_channel(struct iw_context *ctx)
{
	struct iw_cm_channel *ch;

	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	/* readable exactly while an event is queued (see channel_sync) */
	ch->efd = eventfd(0, EFD_CLOEXEC);
	if (ch->efd < 0) {
		int e = errno;

		free(ch);
		errno = e;
		return NULL;
	}
	ch->ctx = ctx;
	pthread_mutex_init(&ch->lock, NULL);
	return ch;
}

/* Events not yet taken are dropped with the channel. */
int iw_destroy_cm_channel(struct iw_cm_channel *ch)
{
	if (!ch)
		return -EINVAL;
	while (ch->head) {
		struct cm_event_node *n = ch->head;

		ch->head = n->next;
		free(n);
	}
	close(ch->efd);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
	return 0;
}

int iw_cm_channel_fd(struct iw_cm_channel *ch)
{
	return ch ? ch->efd : -EINVAL;
}

/*
 * With ch->lock held: the descriptor follows the queue, readable while it
 * holds an event and not otherwise, so that a poll that says readable is
 * never followed by an iw_get_cm_event() that waits.  The eventfd counts
 * 1 at most, written when the queue fills and read when it empties.
 */
static void channel_sync(struct iw_cm_channel *ch)
{
	uint64_t v = 1;
	bool want = ch->head != NULL;
	ssize_t n;

	if (want == ch->readable)
		return;
	n = want ? write(ch->efd, &v, sizeof(v)) : read(ch->efd, &v, sizeof(v));
	if (n != sizeof(v)) {
		iw_log(ch->ctx, 1, "CM event channel: %s", strerror(errno));
		return;
	}
	ch->readable = want;
}

/* With ch->lock held. */
static void channel_append(struct iw_cm_channel *ch, struct cm_event_node *n)
{
	n->next = NULL;
	if (ch->tail)
		ch->tail->next = n;
	else
		ch->head = n;
	ch->tail = n;
	channel_sync(ch);
}

/*
 * Waits until the descriptor is readable (running the loop meanwhile in
 * manual progress mode); -EAGAIN when it is non-blocking.
 */
static int channel_wait(struct iw_cm_channel *ch)
{
	struct pollfd p = { ch->efd, POLLIN, 0 };
	int fl, rc = progress_wait_fd(ch->ctx, ch->efd, -1);

	if (rc || ch->ctx->mode == IW_PROGRESS_MANUAL)
		return rc;
	fl = fcntl(ch->efd, F_GETFL);
	if (fl < 0)
		return -errno;
	if (fl & O_NONBLOCK)
		return -EAGAIN;
	while (poll(&p, 1, -1) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/*
 * Takes the next event, waiting for one unless the channel's fd was made
 * non-blocking (then -EAGAIN).  Give it back with iw_ack_cm_event().
 */
int iw_get_cm_event(struct iw_cm_channel *ch, struct iw_cm_event **event)
{
	struct cm_event_node *n;

	if (!ch || !event)
		return -EINVAL;
	for (;;) {
		int rc;

		pthread_mutex_lock(&ch->lock);
		n = ch->head;
		if (n) {
			ch->head = n->next;
			if (!ch->head)
				ch->tail = NULL;
			if (n->ev.event == IW_CM_EVENT_CONNECT_REQUEST)
				n->ev.listen_id->n_queued--;
			channel_sync(ch);
		}
		pthread_mutex_unlock(&ch->lock);
		if (n)
			break;
		rc = channel_wait(ch);
		if (rc)
			return rc;
	}
	*event = &n->ev;
	return 0;
}

/*
 * The events of a destroyed identifier that nobody has taken yet are
 * dropped at once, so that they neither reach the application nor keep
 * the descriptor readable; so are the connection requests a destroyed
 * listener had queued, whose identifiers are returned in @orphans (up to
 * @max; returns how many) for the caller to destroy.
 */
static size_t channel_forget(struct iw_cm_channel *ch, struct iw_cm_id *id,
			     struct iw_cm_id **orphans, size_t max)
{
	struct cm_event_node **pp, *prev = NULL;
	size_t n = 0;

	pthread_mutex_lock(&ch->lock);
	for (pp = &ch->head; *pp;) {
		struct cm_event_node *e = *pp;
		bool drop = e->ev.id == id;

		if (!drop && e->ev.listen_id == id && n < max) {
			drop = true;
			orphans[n++] = e->ev.id;
		}
		if (!drop) {
			prev = e;
			pp = &e->next;
			continue;
		}
		if (e->ev.event == IW_CM_EVENT_CONNECT_REQUEST)
			e->ev.listen_id->n_queued--;
		*pp = e->next;
		free(e);
	}
	ch->tail = prev;
	channel_sync(ch);
	pthread_mutex_unlock(&ch->lock);
	return n;
}

int iw_ack_cm_event(struct iw_cm_event *event)
{
	if (!event)
		return -EINVAL;
	/* the node around the event; void * keeps the node's alignment */
	free((void *)((char *)event - offsetof(struct cm_event_node, ev)));
	return 0;
}

const char *iw_cm_event_str(enum iw_cm_event_type event)
{
	static const char *const words[] = {
		[IW_CM_EVENT_CONNECT_REQUEST] = "connect request",
		[IW_CM_EVENT_ESTABLISHED] = "established",
		[IW_CM_EVENT_REJECTED] = "rejected",
		[IW_CM_EVENT_UNREACHABLE] = "unreachable",
		[IW_CM_EVENT_TIMEOUT] = "timed out",
		[IW_CM_EVENT_CONNECT_ERROR] = "connect error",
		[IW_CM_EVENT_DISCONNECTED] = "disconnected",
		[IW_CM_EVENT_ERROR] = "error",
	};

	if ((unsigned int)event >= sizeof(words) / sizeof(words[0]))
		return "unknown event";
	return words[event];
}

static void id_free(struct iw_cm_id *id, bool linger);

/*
 * With ch->lock held, before a listener's connection request is queued:
 * at most its backlog of requests wait in the channel untaken, so that a
 * peer who sends Requests faster than the application takes them cannot
 * grow the queue without end.  Beyond that the oldest request waiting
 * makes room: its event goes, and its identifier, which the application
 * has never seen, is returned for the caller to free.
 */
static struct iw_cm_id *channel_request_room(struct iw_cm_channel *ch,
					     struct iw_cm_id *l)
{
	struct cm_event_node **pp, *prev = NULL;

	if (l->n_queued++ < l->max_pending)
		return NULL;
	for (pp = &ch->head; *pp; prev = *pp, pp = &(*pp)->next) {
		struct cm_event_node *e = *pp;
		struct iw_cm_id *old = e->ev.id;

		if (e->ev.event != IW_CM_EVENT_CONNECT_REQUEST ||
		    e->ev.listen_id != l)
			continue;
		*pp = e->next;
		if (ch->tail == e)
			ch->tail = prev;
		free(e);
		l->n_queued--;
		return old;
	}
	return NULL;
}

/* Queues an event for the application, with the peer's frame if asked. */
void cm_event(struct iw_cm_id *id, enum iw_cm_event_type type, int status,
	      bool with_peer)
{
	struct iw_cm_channel *ch = id->ch;
	struct iw_cm_id *old = NULL;
	struct cm_event_node *n;

	iw_log_id(id, "event: %s%s%s", iw_cm_event_str(type),
		  status ? ": " : "", status ? iw_strerror(status) : "");
	if (!id->ev_left) {
		/* CM_EVENTS_PER_ID is wrong: say so rather than lose it quietly */
		iw_log(id->ctx, 0, "libiwarp bug: no room for a CM event (%s)",
		       iw_cm_event_str(type));
		return;
	}
	n = id->ev_nodes[--id->ev_left];
	id->ev_nodes[id->ev_left] = NULL;
	n->ev = (struct iw_cm_event){
		.event = type,
		.id = id,
		.listen_id = type == IW_CM_EVENT_CONNECT_REQUEST ? id->listen_id
								 : NULL,
		.status = status,
		.terminate = id->term,
	};
	if (with_peer) {
		n->ev.peer = id->peer;
		memcpy(n->pd, id->peer_pd, id->peer_pd_len);
		n->ev.private_data = id->peer_pd_len ? n->pd : NULL;
		n->ev.private_data_len = id->peer_pd_len;
	}
	pthread_mutex_lock(&ch->lock);
	if (type == IW_CM_EVENT_CONNECT_REQUEST)
		old = channel_request_room(ch, id->listen_id);
	channel_append(ch, n);
	pthread_mutex_unlock(&ch->lock);
	if (old) {
		iw_log_id(old, "dropped: its MPA Request was the oldest of %u "
			       "the application has not taken (the backlog)",
			  id->listen_id->max_pending);
		id_free(old, false);
	}
}

/* ---- identifiers --------------------------------------------------------- */

void iw_mpa_opts_default(struct iw_mpa_opts *o)
{
	*o = (struct iw_mpa_opts){
		.revision = MPA_REVISION_2,
		.crc = IW_MPA_FOLLOW,
		.markers = IW_MPA_FOLLOW,
		.reply_timeout_ms = 10000,
		.request_timeout_ms = 5000,
		/* siw takes 256 octets, four of them the IRD/ORD words */
		.max_private_data = 252,
		.first_fpdu_delay_us = IW_FIRST_FPDU_DELAY_AUTO,
	};
}

static void on_timeout(evutil_socket_t fd, short what, void *arg);
static void on_term_timeout(evutil_socket_t fd, short what, void *arg);

/* Frees an identifier's own memory: its timer, its unused event nodes. */
static void id_release(struct iw_cm_id *id)
{
	if (id->timer)
		event_free(id->timer);
	if (id->term_timer)
		event_free(id->term_timer);
	for (unsigned int i = 0; i < id->ev_left; i++)
		free(id->ev_nodes[i]);
	free(id);
}

/*
 * The nodes of every event the identifier will ever report are allocated
 * with it (CM_EVENTS_PER_ID): an event, the final one above all, must not
 * be lost to an allocation that fails when it happens.
 */
static struct iw_cm_id *id_new(struct iw_context *ctx, struct iw_cm_channel *ch,
			       void *context)
{
	struct iw_cm_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	for (; id->ev_left < CM_EVENTS_PER_ID; id->ev_left++) {
		id->ev_nodes[id->ev_left] = calloc(1, sizeof(struct cm_event_node));
		if (!id->ev_nodes[id->ev_left]) {
			id_release(id);
			return NULL;
		}
	}
	id->timer = evtimer_new(ctx->base, on_timeout, id);
	id->term_timer = evtimer_new(ctx->base, on_term_timeout, id);
	if (!id->timer || !id->term_timer) {
		id_release(id);
		return NULL;
	}
	id->ctx = ctx;
	id->ch = ch;
	id->context = context;
	iw_mpa_opts_default(&id->opts);
	pthread_mutex_init(&id->lock, NULL);
	return id;
}

struct iw_cm_id *iw_create_id(struct iw_cm_channel *ch, void *context)
{
	struct iw_cm_id *id;

	if (!ch) {
		errno = EINVAL;
		return NULL;
	}
	id = id_new(ch->ctx, ch, context);
	if (!id)
		errno = ENOMEM;
	return id;
}

void *iw_id_context(struct iw_cm_id *id)
{
	return id ? id->context : NULL;
}

/* Revision 2 frames may carry the 4 octets of IRD and ORD. */
static uint16_t max_private_data(uint8_t revision)
{
	return revision == MPA_REVISION_1 ? MPA_MAX_PD_LEN
					  : MPA_MAX_PD_LEN - MPA_V2_WORDS_LEN;
}

int iw_set_mpa_opts(struct iw_cm_id *id, const struct iw_mpa_opts *o)
{
	if (!id || !o || (o->revision != MPA_REVISION_1 &&
			  o->revision != MPA_REVISION_2) ||
	    o->crc > IW_MPA_ON || o->markers > IW_MPA_ON ||
	    (o->rtr & ~(IW_RTR_SEND | IW_RTR_WRITE | IW_RTR_READ)) ||
	    o->responder_first > 1 ||
	    o->max_private_data > max_private_data(o->revision))
		return -EINVAL;
	pthread_mutex_lock(&id->lock);
	id->opts = *o;
	pthread_mutex_unlock(&id->lock);
	return 0;
}

/* Lets a QP's lock follow the connection it is attached to. */
static int attach_qp(struct iw_cm_id *id, struct iw_qp *qp)
{
	int rc = 0;

	pthread_mutex_lock(&qp->own_lock);
	if (qp->id || qp->engine.state != RDMAP_QP_IDLE || atomic_load(&qp->lock) != &qp->own_lock)
		rc = qp->id ? -EBUSY : -EINVAL;
	if (!rc) {
		qp->id = id;
		id->qp = qp;
		atomic_store(&qp->lock, &id->lock);
	}
	pthread_mutex_unlock(&qp->own_lock);
	return rc;
}

/* With id->lock held: the QP goes back to its own lock. */
static void detach_qp(struct iw_cm_id *id)
{
	if (!id->qp)
		return;
	id->qp->id = NULL;
	atomic_store(&id->qp->lock, &id->qp->own_lock);
	id->qp = NULL;
}

/* With ctx->lock held.  False when it was not (or no longer) linked. */
static bool pending_unlink_locked(struct iw_cm_id *id)
{
	struct iw_cm_id *l = id->listen_id;

	if (!id->pend_linked)
		return false;
	if (id->pend_prev)
		id->pend_prev->pend_next = id->pend_next;
	else
		l->pending = id->pend_next;
	if (id->pend_next)
		id->pend_next->pend_prev = id->pend_prev;
	else
		l->pending_tail = id->pend_prev;
	id->pend_prev = id->pend_next = NULL;
	id->pend_linked = false;
	l->n_pending--;
	return true;
}

/*
 * The connection leaves its listener's care: announced, or going away.
 * False when the listener has already claimed it (and will free it).
 */
bool cm_unlink_pending(struct iw_cm_id *id)
{
	bool was;

	pthread_mutex_lock(&id->ctx->lock);
	was = pending_unlink_locked(id);
	pthread_mutex_unlock(&id->ctx->lock);
	return was;
}

/*
 * Takes a new connection into the listener's care.  As many as its
 * backlog may wait for their MPA Request at once; beyond that the oldest
 * of them makes room and is returned, no longer linked, for the caller to
 * drop.  A peer that opens connections and says nothing (or says it one
 * octet at a time) holds a bounded amount of memory, and cannot keep a
 * newcomer from being heard (a refusal of the newest would).
 */
static struct iw_cm_id *pending_link(struct iw_cm_id *l, struct iw_cm_id *id)
{
	struct iw_cm_id *oldest = NULL;

	pthread_mutex_lock(&l->ctx->lock);
	if (l->n_pending >= l->max_pending && l->pending) {
		oldest = l->pending;
		pending_unlink_locked(oldest);
	}
	id->pend_next = NULL;
	id->pend_prev = l->pending_tail;
	if (l->pending_tail)
		l->pending_tail->pend_next = id;
	else
		l->pending = id;
	l->pending_tail = id;
	id->pend_linked = true;
	l->n_pending++;
	pthread_mutex_unlock(&l->ctx->lock);
	return oldest;
}

static long long ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t->tv_sec) * 1000LL +
	       (now.tv_nsec - t->tv_nsec) / 1000000;
}

static void listener_free(void *arg)
{
	tp_listener_free(arg);
}

/*
 * A listener goes: no callback of it runs any more, and the connections
 * it accepted that the application has not taken go with it.  It is
 * freed in the loop: from another thread, freeing it while its accept
 * callback runs would deadlock in libevent (the free holds the
 * listener's lock and waits for the callback, which waits for the lock).
 */
static void listener_close(struct iw_cm_id *l)
{
	struct iw_cm_id *orphans[64];
	size_t n;

	progress_in_loop(l->ctx, listener_free, &l->listener);
	for (;;) {
		struct iw_cm_id *id;

		pthread_mutex_lock(&l->ctx->lock);
		id = l->pending;
		if (id)
			pending_unlink_locked(id);
		pthread_mutex_unlock(&l->ctx->lock);
		if (!id)
			break;
		id_free(id, false);
	}
	/* requests queued, not taken: their connections go as well */
	while ((n = channel_forget(l->ch, l, orphans, 64)) > 0)
		for (size_t i = 0; i < n; i++)
			id_free(orphans[i], false);
}

/*
 * The application destroys an identifier: a connection still up is torn
 * down without an event, its QP is released, callbacks in flight finish,
 * and events of it not yet taken from the channel are dropped.  What the
 * stream still carries reaches the peer before its socket closes.
 */
int iw_destroy_id(struct iw_cm_id *id)
{
	if (!id)
		return -EINVAL;
	if (id->state == ID_LISTEN) {
		stats_remove_listener(id);
		listener_close(id);
	}
	id_free(id, true);
	return 0;
}

/*
 * @linger: wait for the peer to acknowledge what we sent (tp_linger());
 * only in the application's thread, never in the loop's.
 */
static void id_free(struct iw_cm_id *id, bool linger)
{
	struct iw_qp *qp;

	cm_unlink_pending(id);
	pthread_mutex_lock(&id->lock);
	id->reported = true;
	conn_close(id, -IW_ECLOSED);
	qp = id->qp;
	detach_qp(id);
	pthread_mutex_unlock(&id->lock);
	/* a poll that reached the connection through its QP has let go */
	if (qp)
		progress_quiesce_qp(qp);
	if (id->has_tp) {
		if (linger)
			tp_linger(&id->tp);
		tp_free(&id->tp);
	}
	/*
	 * One the application never saw put no event there, and may be freed
	 * in the loop after the application destroyed its listener and their
	 * channel (destroy_later()).
	 */
	if (!id->internal)
		channel_forget(id->ch, id, NULL, 0);
	pthread_mutex_destroy(&id->lock);
	id_release(id);
}

static void destroy_later(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	id_free(arg, false);
}

/*
 * The stream ended: close it, flush the QP, and send the one final event:
 * CONNECT_ERROR before ESTABLISHED went out, then DISCONNECTED for a clean
 * close (@err 0) or ERROR with the reason.  A passive identifier the
 * application never saw goes away quietly.
 */
void cm_stream_ended(struct iw_cm_id *id, int err)
{
	enum iw_cm_event_type type;

	conn_close(id, err);
	if (id->reported)
		return;
	id->reported = true;
	if (id->internal) {
		/* unless its listener, going away, has claimed it already */
		if (cm_unlink_pending(id))
			event_base_once(id->ctx->base, -1, EV_TIMEOUT,
					destroy_later, id, NULL);
		return;
	}
	if (!id->up)
		type = IW_CM_EVENT_CONNECT_ERROR;
	else if (err == 0 || err == -IW_ECLOSED)
		type = IW_CM_EVENT_DISCONNECTED;
	else
		type = IW_CM_EVENT_ERROR;
	/* a failed handshake says what the peer's frame held */
	cm_event(id, type, type == IW_CM_EVENT_DISCONNECTED ? 0 : err,
		 type == IW_CM_EVENT_CONNECT_ERROR && id->peer.revision);
}

/*
 * No MPA Reply (initiator) or Request (responder) came in time, or the
 * first FPDU has waited as long as it was asked to.
 */
static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct iw_cm_id *id = arg;

	(void)fd;
	(void)what;
	pthread_mutex_lock(&id->lock);
	if (id->tx_hold) {
		conn_release_hold(id);
	} else if (id->state == ID_TCP_CONNECT || id->state == ID_REQ_SENT ||
		   id->state == ID_REQ_WAIT) {
		iw_log_id(id, "timed out waiting for %s",
			  id->state == ID_REQ_WAIT	  ? "the MPA Request"
			  : id->state == ID_REQ_SENT ? "the MPA Reply"
						     : "the TCP connection");
		if (!id->internal) {
			id->reported = true;
			cm_event(id, IW_CM_EVENT_TIMEOUT, -ETIMEDOUT, false);
		}
		cm_stream_ended(id, -ETIMEDOUT);
	}
	pthread_mutex_unlock(&id->lock);
}

/* A Terminate could not leave in time (see check_engine in conn.c). */
static void on_term_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct iw_cm_id *id = arg;

	(void)fd;
	(void)what;
	pthread_mutex_lock(&id->lock);
	conn_terminate_expired(id);
	pthread_mutex_unlock(&id->lock);
}

static void timer_start(struct iw_cm_id *id, uint32_t ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	evtimer_add(id->timer, &tv);
}

/* ---- passive side -------------------------------------------------------- */

/*
 * A connection waiting for its MPA Request made room for a newer one: it
 * goes, and the debug log says which, how long it had waited and how much
 * of its Request had come.
 */
static void drop_oldest_pending(struct iw_cm_id *l, struct iw_cm_id *old)
{
	iw_log_id(old, "dropped after %lld ms with %zu octets of its MPA "
		       "Request: the oldest of %u connections in the handshake "
		       "(the backlog)",
		  ms_since(&old->accepted), old->in_len, l->max_pending);
	id_free(old, false);
}

/* A TCP connection came in: wait for its MPA Request, within the timeout. */
static void on_accept(void *arg, int fd, const struct sockaddr *peer,
		      int peer_len)
{
	struct iw_cm_id *l = arg, *id, *old;
	int rc;

	(void)peer;
	(void)peer_len;
	id = id_new(l->ctx, l->ch, l->context);
	if (!id) {
		iw_log(l->ctx, 1, "listener: out of memory, a connection closed");
		close(fd);
		return;
	}
	id->opts = l->opts;
	id->listen_id = l;
	id->internal = true;
	id->state = ID_REQ_WAIT;
	clock_gettime(CLOCK_MONOTONIC, &id->accepted);
	pthread_mutex_lock(&id->lock);
	id->loop = progress_conn_loop(l->ctx);
	rc = tp_adopt(&id->tp, id->loop->base, fd, &conn_tp_ops, id,
		      l->ctx->trace);
	if (rc) {
		pthread_mutex_unlock(&id->lock);
		close(fd);
		pthread_mutex_destroy(&id->lock);
		id_release(id);
		return;
	}
	id->has_tp = true;
	old = pending_link(l, id);
	timer_start(id, id->opts.request_timeout_ms);
	iw_log_id(id, "TCP connection accepted; waiting for the MPA Request");
	pthread_mutex_unlock(&id->lock);
	if (old)
		drop_oldest_pending(l, old);
}

/*
 * Listens on @host (NULL: every address) and @port (a number or service
 * name; "0" picks a free one, see iw_get_local_addr()).
 */
int iw_listen(struct iw_cm_id *id, const char *host, const char *port,
	      int backlog)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int rc;

	if (!id || !port || id->state != ID_IDLE)
		return -EINVAL;
	rc = tp_resolve(host, port, true, &ss, &len);
	if (rc)
		return rc;
	if (backlog <= 0)
		backlog = DEFAULT_BACKLOG;
	id->max_pending = (uint32_t)backlog;
	/*
	 * The kernel's queue only holds connections until the loop takes
	 * them, and a burst of a peer's SYNs must not crowd out another's:
	 * it is as long as the system allows, whatever the backlog.
	 */
	rc = tp_listen(&id->listener, id->ctx->base, (struct sockaddr *)&ss,
		       len, backlog > SOMAXCONN ? backlog : SOMAXCONN,
		       on_accept, id);
	if (!rc) {
		id->state = ID_LISTEN;
		stats_add_listener(id);
	}
	return rc;
}

static uint16_t rd_depth(uint16_t v, uint16_t other)
{
	return !v && !other ? DEFAULT_RD_DEPTH : v;
}

/* IRD and ORD travel in 14 bits (RFC 6581); larger values are refused. */
static bool conn_param_ok(const struct iw_conn_param *p)
{
	return !p || (p->ird <= MPA_V2_VALUE_MASK && p->ord <= MPA_V2_VALUE_MASK &&
		      (p->private_data || !p->private_data_len));
}

static void make_policy(struct iw_cm_id *id, const struct iw_conn_param *p,
			bool initiator)
{
	uint16_t ird = p ? p->ird : 0, ord = p ? p->ord : 0;

	id->policy = (struct mpa_policy){
		.revision = id->opts.revision,
		.crc = (enum mpa_pref)id->opts.crc,
		.markers = (enum mpa_pref)id->opts.markers,
		.ird = rd_depth(ird, ord),
		.ord = rd_depth(ord, ird),
		.rtr_offer = initiator ? id->opts.rtr : 0,
		.rtr_accept = id->opts.rtr ? id->opts.rtr : MPA_RTR_ALL,
	};
}

/* Encodes the frame that goes out, our private data appended. */
static int frame_out(struct iw_cm_id *id, struct mpa_frame *f,
		     const void *pd, uint16_t pd_len)
{
	ssize_t n;

	if (pd_len > id->opts.max_private_data || (pd_len && !pd))
		return -EINVAL;
	f->pd = pd;
	f->pd_len = pd_len;
	n = mpa_frame_encode(f, id->out, sizeof(id->out));
	f->pd = NULL;
	if (n < 0)
		return (int)n;
	id->out_len = (size_t)n;
	id->out_sent = 0;
	return 0;
}

/* A Read the QP holds from before the connection, which ORD 0 forbids. */
static bool qp_has_read(struct iw_qp *qp)
{
	pthread_mutex_t *l = qp_lock(qp);
	bool has = rdmap_sq_has_read(&qp->engine);

	pthread_mutex_unlock(l);
	return has;
}

/*
 * What arrived behind a Request is taken before it is answered: a peer
 * that left right after it is named as gone (-ENOTCONN), not answered.
 */
static void take_what_came(struct iw_cm_id *id)
{
	if (id->state == ID_REQ_RCVD && id->has_tp)
		tp_poll(&id->tp);
}

/*
 * Why a request cannot be answered: -ENOTCONN when its connection ended
 * after the Request came (the peer left, or failed), before any answer;
 * its CONNECT_ERROR event says how.  Otherwise it is not a request.
 */
static int unanswerable(struct iw_cm_id *id)
{
	return id->listen_id && id->state == ID_CLOSED && !id->answered
		       ? -ENOTCONN
		       : -EINVAL;
}

/*
 * Accepts a connection request with @qp.  The handshake is decided here:
 * on success the Reply goes out and ESTABLISHED follows; when our MPA
 * options cannot meet the peer's, a Reply with R set goes out, the
 * connection closes, and the reason is returned.
 */
int iw_accept(struct iw_cm_id *id, struct iw_qp *qp,
	      const struct iw_conn_param *param)
{
	struct mpa_params mp;
	struct mpa_frame rep;
	int rc;

	if (!id || !qp || !conn_param_ok(param))
		return -EINVAL;
	pthread_mutex_lock(&id->lock);
	take_what_came(id);
	if (id->state != ID_REQ_RCVD) {
		rc = unanswerable(id);
		pthread_mutex_unlock(&id->lock);
		return rc;
	}
	make_policy(id, param, false);
	rc = mpa_negotiate_request(&id->policy, &id->req, &rep, &mp);
	if (rc) {
		iw_log_id(id, "refusing the Request: %s", iw_strerror(rc));
		id->answered = true;
		if (frame_out(id, &rep, NULL, 0) == 0) {
			id->close_after_tx = true;
			id->state = ID_REPLYING;
			tp_kick(&id->tp);
		}
		id->reported = true;
		pthread_mutex_unlock(&id->lock);
		return rc;
	}
	if (mp.ord == 0 && qp_has_read(qp)) {
		/* the request stays: accept with another QP, or reject */
		pthread_mutex_unlock(&id->lock);
		return -IW_ENO_READ_CREDIT;
	}
	rc = frame_out(id, &rep, param ? param->private_data : NULL,
		       param ? param->private_data_len : 0);
	if (!rc)
		rc = attach_qp(id, qp);
	if (rc) {
		pthread_mutex_unlock(&id->lock);
		return rc;
	}
	id->rep = rep;
	id->answered = true;
	if (id->opts.responder_first)
		conn_hold_first_fpdu(id, false);
	conn_established(id, &mp, false);
	if (id->state == ID_CONNECTED) {
		id->up = true;
		cm_event(id, IW_CM_EVENT_ESTABLISHED, 0, false);
	}
	pthread_mutex_unlock(&id->lock);
	return 0;
}

/* Answers a connection request with R set and @private_data, then closes. */
int iw_reject(struct iw_cm_id *id, const void *private_data,
	      uint16_t private_data_len)
{
	struct mpa_frame rep;
	int rc;

	if (!id)
		return -EINVAL;
	pthread_mutex_lock(&id->lock);
	take_what_came(id);
	if (id->state != ID_REQ_RCVD) {
		rc = unanswerable(id);
		pthread_mutex_unlock(&id->lock);
		return rc;
	}
	rep = (struct mpa_frame){
		.reply = true,
		.r = true,
		.c = id->req.c,
		.rev = id->req.rev < id->opts.revision ? id->req.rev
						       : id->opts.revision,
	};
	rep.h = rep.rev == MPA_REVISION_2 && id->req.h;
	rc = frame_out(id, &rep, private_data, private_data_len);
	if (!rc) {
		iw_log_id(id, "rejecting the Request");
		id->answered = true;
		id->close_after_tx = true;
		id->state = ID_REPLYING;
		id->reported = true;
		rc = tp_kick(&id->tp);
	}
	pthread_mutex_unlock(&id->lock);
	return rc;
}

/* ---- active side ----------------------------------------------------------- */

/*
 * Connects to @host:@port with @qp.  Name resolution happens here, in the
 * calling thread; the addresses are tried in the order it gives them
 * until one takes the TCP connection.  The rest is reported by events:
 * ESTABLISHED, or REJECTED, UNREACHABLE, TIMEOUT, CONNECT_ERROR with the
 * reason.
 */
int iw_connect(struct iw_cm_id *id, const char *host, const char *port,
	       struct iw_qp *qp, const struct iw_conn_param *param)
{
	struct tp_addrs addrs;
	int rc;

	if (!id || !host || !port || !qp || !conn_param_ok(param))
		return -EINVAL;
	rc = tp_resolve_all(host, port, &addrs);
	if (rc)
		return rc;
	pthread_mutex_lock(&id->lock);
	if (id->state != ID_IDLE) {
		pthread_mutex_unlock(&id->lock);
		return -EINVAL;
	}
	make_policy(id, param, true);
	mpa_request_build(&id->policy, &id->req);
	rc = frame_out(id, &id->req, param ? param->private_data : NULL,
		       param ? param->private_data_len : 0);
	if (!rc)
		rc = attach_qp(id, qp);
	if (!rc) {
		id->state = ID_TCP_CONNECT;
		id->loop = progress_conn_loop(id->ctx);
		rc = tp_connect(&id->tp, id->loop->base, &addrs, &conn_tp_ops,
				id, id->ctx->trace);
		if (rc) {
			id->state = ID_IDLE;
			detach_qp(id);
		} else {
			id->has_tp = true;
			timer_start(id, id->opts.reply_timeout_ms);
		}
	}
	pthread_mutex_unlock(&id->lock);
	return rc;
}

/*
 * Ends a connection: the QP's outstanding work is flushed and both sides
 * get DISCONNECTED.  A handshake still under way is abandoned quietly.
 */
int iw_disconnect(struct iw_cm_id *id)
{
	if (!id)
		return -EINVAL;
	pthread_mutex_lock(&id->lock);
	if (id->state == ID_CONNECTED) {
		iw_log_id(id, "disconnecting");
		conn_flush(id); /* what was posted leaves first */
		if (id->state == ID_CONNECTED)
			cm_stream_ended(id, 0);
	} else if (id->state != ID_CLOSED && id->state != ID_IDLE &&
		   id->state != ID_LISTEN) {
		id->reported = true;
		conn_close(id, -IW_ECLOSED);
	}
	pthread_mutex_unlock(&id->lock);
	return 0;
}

int iw_get_local_addr(struct iw_cm_id *id, struct sockaddr_storage *addr)
{
	if (!id || !addr)
		return -EINVAL;
	if (id->state == ID_LISTEN)
		return tp_listener_addr(&id->listener, addr);
	if (!id->has_tp)
		return -ENOTCONN;
	*addr = id->tp.local;
	return 0;
}

int iw_get_peer_addr(struct iw_cm_id *id, struct sockaddr_storage *addr)
{
	if (!id || !addr)
		return -EINVAL;
	if (!id->has_tp)
		return -ENOTCONN;
	*addr = id->tp.peer;
	return 0;
}
