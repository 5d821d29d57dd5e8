// SPDX-License-Identifier: MIT
/*
 * Event channels and what serves them: the process's device context and
 * default protection domain (every identifier's id->verbs and id->pd, as
 * librdmacm gives them), the one libiwarp CM channel, and the pump thread
 * that turns its events into rdma_cm events.  All of it exists while an
 * event channel, an identifier or a list of rdma_get_devices() does, but
 * the device context: as rdma-core's librdmacm does, it stays open once
 * opened, for the context pointers that rdma_get_devices() handed out
 * stay good after rdma_free_devices() (libfabric's verbs provider keeps
 * one as its domain's device and allocates its PD from it later).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "compat/rdmacm/cma.h"

static pthread_mutex_t life_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint users;
static struct ibv_context *verbs;
static struct ibv_pd *default_pd;
static struct iw_cm_channel *iwch;
static pthread_t pump;
static int stop_fd = -1;

pthread_mutex_t cma_route_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t cma_route_cond = PTHREAD_COND_INITIALIZER;
struct cma_id *cma_ids;

struct ibv_context *cma_verbs(void)
{
	return verbs;
}

struct ibv_pd *cma_default_pd(void)
{
	return default_pd;
}

struct iw_cm_channel *cma_iw_channel(void)
{
	return iwch;
}

/*
 * Takes every libiwarp CM event queued and delivers it.  The route lock
 * makes this the only place events leave the libiwarp channel, so that
 * a caller that must see an identifier's last events before destroying
 * it (see cma.c) can drain them itself.
 */
void cma_drain(void)
{
	struct iw_cm_event *ev;

	pthread_mutex_lock(&cma_route_lock);
	while (iw_get_cm_event(iwch, &ev) == 0) {
		cma_route_iw_event(ev);
		iw_ack_cm_event(ev);
	}
	pthread_mutex_unlock(&cma_route_lock);
}

static void *pump_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd p[2] = {
			{ iw_cm_channel_fd(iwch), POLLIN, 0 },
			{ stop_fd, POLLIN, 0 },
		};

		if (poll(p, 2, cma_retry_wait_ms()) < 0)
			continue; /* EINTR */
		if (p[1].revents)
			return NULL;
		cma_drain();
		cma_retries();
	}
}

static void teardown(void)
{
	if (stop_fd >= 0) {
		uint64_t one = 1;

		if (write(stop_fd, &one, sizeof(one)) == sizeof(one))
			pthread_join(pump, NULL);
		close(stop_fd);
		stop_fd = -1;
	}
	if (iwch)
		iw_destroy_cm_channel(iwch);
	iwch = NULL;
	if (default_pd)
		ibv_dealloc_pd(default_pd);
	default_pd = NULL;
	/* verbs stays open: see the top of the file */
}

/* The first user opens the device and starts the pump; 0 or -1 (errno). */
static int setup(void)
{
	int fl, e;

	if (!verbs) {
		struct ibv_device **list = ibv_get_device_list(NULL);

		if (!list)
			return -1;
		verbs = list[0] ? ibv_open_device(list[0]) : NULL;
		ibv_free_device_list(list);
		if (!verbs)
			goto fail;
	}
	default_pd = ibv_alloc_pd(verbs);
	iwch = default_pd && iwv_rdmacm_iface(verbs)
		       ? iw_create_cm_channel(iwv_rdmacm_iface(verbs)->iw_context(verbs))
		       : NULL;
	if (!iwch)
		goto fail;
	/* the pump polls it and takes what is there, never waits on it */
	fl = fcntl(iw_cm_channel_fd(iwch), F_GETFL);
	if (fl < 0 || fcntl(iw_cm_channel_fd(iwch), F_SETFL, fl | O_NONBLOCK))
		goto fail;
	stop_fd = eventfd(0, EFD_CLOEXEC);
	if (stop_fd < 0)
		goto fail;
	e = pthread_create(&pump, NULL, pump_main, NULL);
	if (e) {
		close(stop_fd);
		stop_fd = -1;
		errno = e;
		goto fail;
	}
	return 0;
fail:
	e = errno ? errno : ENODEV;
	teardown();
	errno = e;
	return -1;
}

int cma_get(void)
{
	int rc = 0;

	pthread_mutex_lock(&life_lock);
	if (atomic_load(&users) == 0)
		rc = setup();
	if (rc == 0)
		atomic_fetch_add(&users, 1);
	pthread_mutex_unlock(&life_lock);
	return rc;
}

/*
 * One more user where one is known to hold on (the pump, for a
 * listener's new connection): no lock, since the pump holds the route
 * lock, which comes after the life lock.
 */
void cma_get_more(void)
{
	atomic_fetch_add(&users, 1);
}

/* The last user stops the pump and frees the default PD. */
void cma_put(void)
{
	pthread_mutex_lock(&life_lock);
	if (atomic_fetch_sub(&users, 1) == 1)
		teardown();
	pthread_mutex_unlock(&life_lock);
}

/* ---- channels ---------------------------------------------------------- */

/*
 * With c->lock held: the eventfd follows the queue, readable while it
 * holds an event, so that a poll that says readable is never followed
 * by an rdma_get_cm_event() that waits.
 */
static void channel_sync(struct cma_channel *c)
{
	bool want = c->head != NULL;
	uint64_t v = 1;

	if (want == c->readable)
		return;
	if ((want ? write(c->ch.fd, &v, sizeof(v))
		  : read(c->ch.fd, &v, sizeof(v))) == sizeof(v))
		c->readable = want;
}

struct cma_channel *cma_channel_new(void)
{
	struct cma_channel *c = calloc(1, sizeof(*c));

	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->ch.fd = eventfd(0, EFD_CLOEXEC);
	if (c->ch.fd < 0) {
		int e = errno;

		free(c);
		errno = e;
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	return c;
}

static void drop_events(struct cma_channel *c)
{
	while (c->head) {
		struct cma_event *e = c->head;

		c->head = e->next;
		free(e);
	}
	c->tail = NULL;
}

/* A channel of the library's own (a synchronous identifier's) goes. */
void cma_channel_free(struct cma_channel *c)
{
	drop_events(c);
	close(c->ch.fd);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/*
 * Channels the application destroyed, kept: a thread may call
 * rdma_get_cm_event() on one after it was destroyed (rping's event
 * thread does when the main thread tears down right after the last
 * event); it then waits for good, as a thread blocked on a kernel channel
 * closed under it does, instead of reading freed memory or a descriptor
 * number since reused.  Each costs its struct and its eventfd; programs
 * make a handful.
 */
static pthread_mutex_t graveyard_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cma_channel *graveyard;

/* Events never taken go with the channel, as with a kernel channel. */
static void channel_bury(struct cma_channel *c)
{
	pthread_mutex_lock(&c->lock);
	c->dead = true;
	drop_events(c);
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_lock(&graveyard_lock);
	c->next_dead = graveyard;
	graveyard = c;
	pthread_mutex_unlock(&graveyard_lock);
}

struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cma_channel *c;

	if (cma_get())
		return NULL;
	c = cma_channel_new();
	if (!c) {
		int e = errno;

		cma_put();
		errno = e;
		return NULL;
	}
	return &c->ch;
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	if (!channel)
		return;
	channel_bury(to_cma_ch(channel));
	cma_put();
}

/* ---- events ---------------------------------------------------------------- */

struct cma_event *cma_event_new(struct cma_id *id, enum rdma_cm_event_type type,
				int status)
{
	struct cma_event *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->event.id = &id->id;
	e->event.event = type;
	e->event.status = status;
	e->owner = id;
	return e;
}

void cma_event_queue(struct cma_channel *c, struct cma_event *e)
{
	pthread_mutex_lock(&c->lock);
	e->next = NULL;
	if (c->tail)
		c->tail->next = e;
	else
		c->head = e;
	c->tail = e;
	channel_sync(c);
	pthread_mutex_unlock(&c->lock);
}

/*
 * Drops the events of @id queued on @c and not yet taken; the connection
 * requests of a listener @id among them leave their identifiers in
 * @orphans (up to @max, *@n_orphans of them) for the caller to destroy.
 */
void cma_channel_forget(struct cma_channel *c, struct cma_id *id,
			struct cma_id **orphans, unsigned int *n_orphans,
			unsigned int max)
{
	struct cma_event **pp, *prev = NULL;

	pthread_mutex_lock(&c->lock);
	for (pp = &c->head; *pp;) {
		struct cma_event *e = *pp;
		bool request = e->event.listen_id == &id->id && n_orphans &&
			       *n_orphans < max;

		if (e->event.id != &id->id && !request) {
			prev = e;
			pp = &e->next;
			continue;
		}
		if (request)
			orphans[(*n_orphans)++] = to_cma_id(e->event.id);
		*pp = e->next;
		free(e);
	}
	c->tail = prev;
	channel_sync(c);
	pthread_mutex_unlock(&c->lock);
}

/* rdma_migrate_id(): the events of @id not taken yet follow it. */
void cma_channel_move(struct cma_channel *from, struct cma_channel *to,
		      struct cma_id *id)
{
	struct cma_event **pp, *prev = NULL, *moved = NULL, **mt = &moved;

	pthread_mutex_lock(&from->lock);
	for (pp = &from->head; *pp;) {
		struct cma_event *e = *pp;

		if (e->event.id != &id->id) {
			prev = e;
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		e->next = NULL;
		*mt = e;
		mt = &e->next;
	}
	from->tail = prev;
	channel_sync(from);
	pthread_mutex_unlock(&from->lock);
	while (moved) {
		struct cma_event *e = moved;

		moved = e->next;
		cma_event_queue(to, e);
	}
}

/*
 * Waits until the descriptor is readable; EAGAIN when it is non-blocking.
 * A destroyed channel's descriptor never becomes readable again.
 */
static int channel_wait(struct cma_channel *c)
{
	struct pollfd p = { c->ch.fd, POLLIN, 0 };
	int fl = fcntl(c->ch.fd, F_GETFL);

	if (fl < 0)
		return -1;
	if (fl & O_NONBLOCK)
		return ERR(EAGAIN);
	if (c->dead)
		p.events = 0; /* sleep: nothing will come */
	return poll(&p, 1, -1) < 0 ? -1 : 0;
}

int rdma_get_cm_event(struct rdma_event_channel *channel,
		      struct rdma_cm_event **event)
{
	struct cma_channel *c;
	struct cma_event *e;
	int rc = 0;

	if (!channel || !event)
		return ERR(EINVAL);
	c = to_cma_ch(channel);
	pthread_mutex_lock(&c->lock);
	for (;;) {
		e = c->dead ? NULL : c->head;
		if (e) {
			c->head = e->next;
			if (!c->head)
				c->tail = NULL;
			channel_sync(c);
			break;
		}
		pthread_mutex_unlock(&c->lock);
		rc = channel_wait(c);
		pthread_mutex_lock(&c->lock);
		if (rc)
			break;
	}
	pthread_mutex_unlock(&c->lock);
	if (rc)
		return rc;
	pthread_mutex_lock(&e->owner->ev_lock);
	e->owner->delivered++;
	pthread_mutex_unlock(&e->owner->ev_lock);
	*event = &e->event;
	return 0;
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cma_event *e;

	if (!event)
		return ERR(EINVAL);
	e = iwv_container_of(event, struct cma_event, event);
	pthread_mutex_lock(&e->owner->ev_lock);
	e->owner->acked++;
	pthread_cond_broadcast(&e->owner->ev_cond);
	pthread_mutex_unlock(&e->owner->ev_lock);
	free(e);
	return 0;
}

const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	return (unsigned int)event < sizeof(names) / sizeof(names[0])
		       ? names[event]
		       : "UNKNOWN EVENT";
}
