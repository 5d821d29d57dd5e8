// SPDX-License-Identifier: MIT
/*
 * rpoll() and rselect() over rsockets and ordinary descriptors together.
 * An rsocket's readiness is worked out from its state (data queued,
 * credits and buffer to send, a request waiting on a listener, a connect
 * finished); to sleep, each rsocket contributes the descriptors its
 * news comes on, its CQ channel (the CQ armed first) and its CM channel,
 * and the wait is one poll(2) over those and the ordinary descriptors.
 */
/* POLLRDHUP */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include <rdma/rsocket.h>

#include "compat/rdmacm/rs.h"

#define ERR(e) (errno = (e), -1)

static bool rs_poll_all(struct rsock *rs)
{
	(void)rs;
	return true;
}

static bool fd_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* The events of one rsocket now; with @arm, its CQ is armed for a sleep. */
static short rs_revents(struct rsock *rs, short events, bool arm)
{
	short rev = 0;

	if (rs->state & RS_OPENING) {
		if (!fd_readable(rs->fd))
			return 0;
		if (rs_do_connect(rs) && errno == EINPROGRESS)
			return 0;
	}
	if (rs->state & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR)) {
		rs_get_comp(rs, true, rs_poll_all);
		if (arm && !rs->cq_armed) {
			ibv_req_notify_cq(rs->cm_id->recv_cq, 0);
			rs->cq_armed = true;
			rs_get_comp(rs, true, rs_poll_all);
		}
		if ((events & POLLIN) && rs_conn_have_rdata(rs))
			rev |= POLLIN;
		if ((events & POLLOUT) && rs_can_send(rs))
			rev |= POLLOUT;
		/*
		 * As TCP after the peer's FIN: what arrived before the peer
		 * left is readable first, and the hangup shows once it is
		 * read (programs take POLLHUP for the end and stop reading).
		 */
		if (!(rs->state & RS_CONNECTED) && rs_have_rdata(rs))
			rev |= events & POLLRDHUP;
		else if (!(rs->state & RS_CONNECTED))
			rev |= rs->state == RS_DISCONNECTED ? POLLHUP : POLLERR;
		return rev;
	}
	if (rs->state == RS_LISTENING)
		return (events & POLLIN) && fd_readable(rs->fd) ? POLLIN : 0;
	if (rs->state == RS_CONNECT_ERROR)
		return (short)((events & (POLLIN | POLLOUT)) | POLLERR);
	return 0;
}

static int check(struct pollfd *fds, nfds_t nfds, bool arm)
{
	int cnt = 0;

	for (nfds_t i = 0; i < nfds; i++) {
		struct rsock *rs = rs_get(fds[i].fd);

		if (rs) {
			pthread_mutex_lock(&rs->lock);
			fds[i].revents = rs_revents(rs, fds[i].events, arm);
			pthread_mutex_unlock(&rs->lock);
		} else if (rs_inherited(fds[i].fd)) {
			fds[i].revents = POLLNVAL; /* the parent's (fork) */
		} else if (fds[i].fd >= 0) {
			struct pollfd p = fds[i];

			p.revents = 0;
			if (poll(&p, 1, 0) < 0)
				return -1;
			fds[i].revents = p.revents;
		} else {
			fds[i].revents = 0;
		}
		if (fds[i].revents)
			cnt++;
	}
	return cnt;
}

/* Two slots per entry: an rsocket's CQ channel and CM channel. */
static void fill_wait(struct pollfd *w, const struct pollfd *fds, nfds_t nfds)
{
	for (nfds_t i = 0; i < nfds; i++) {
		struct rsock *rs = rs_get(fds[i].fd);
		struct pollfd *a = &w[2 * i], *b = &w[2 * i + 1];

		*a = (struct pollfd){ .fd = -1 };
		*b = (struct pollfd){ .fd = -1 };
		if (!rs) {
			a->fd = fds[i].fd;
			a->events = fds[i].events;
			continue;
		}
		b->fd = rs->fd;
		b->events = POLLIN;
		if (rs->cm_id->recv_cq_channel &&
		    (rs->state & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR))) {
			a->fd = rs->cm_id->recv_cq_channel->fd;
			a->events = POLLIN;
			if (!(rs->state & RS_CONNECTED))
				b->fd = -1; /* nothing more will come */
		}
	}
}

/* Takes the CQ events that woke us, so the channels quiet down. */
static void take_events(const struct pollfd *w, const struct pollfd *fds,
			nfds_t nfds)
{
	for (nfds_t i = 0; i < nfds; i++) {
		struct rsock *rs;
		struct ibv_cq *cq;
		void *ctx;

		if (!(w[2 * i].revents & POLLIN) || !(rs = rs_get(fds[i].fd)))
			continue;
		pthread_mutex_lock(&rs->lock);
		if (rs->cm_id->recv_cq_channel &&
		    !ibv_get_cq_event(rs->cm_id->recv_cq_channel, &cq, &ctx)) {
			ibv_ack_cq_events(cq, 1);
			rs->cq_armed = false;
		}
		pthread_mutex_unlock(&rs->lock);
	}
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	int64_t deadline = timeout >= 0 ? now_ms() + timeout : -1;
	struct pollfd *w;
	int ret;

	ret = check(fds, nfds, false);
	if (ret || !timeout)
		return ret;
	w = calloc(nfds ? 2 * nfds : 1, sizeof(*w));
	if (!w)
		return ERR(ENOMEM);
	for (;;) {
		int wait;

		ret = check(fds, nfds, true);
		if (ret)
			break;
		wait = -1;
		if (deadline >= 0) {
			int64_t left = deadline - now_ms();

			if (left <= 0)
				break;
			wait = (int)left;
		}
		fill_wait(w, fds, nfds);
		ret = poll(w, 2 * nfds, wait);
		if (ret < 0)
			break;
		take_events(w, fds, nfds);
		ret = check(fds, nfds, false);
		if (ret)
			break;
	}
	free(w);
	return ret;
}

/* select(2) as poll: read is POLLIN/HUP/ERR, write POLLOUT/ERR. */
int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
	    struct timeval *timeout)
{
	struct pollfd *fds;
	int n = 0, ret, to;

	if (nfds < 0 || nfds > FD_SETSIZE)
		return ERR(EINVAL);
	fds = calloc(nfds ? (size_t)nfds : 1, sizeof(*fds));
	if (!fds)
		return ERR(ENOMEM);
	for (int fd = 0; fd < nfds; fd++) {
		short ev = 0;

		if (readfds && FD_ISSET(fd, readfds))
			ev |= POLLIN;
		if (writefds && FD_ISSET(fd, writefds))
			ev |= POLLOUT;
		if (exceptfds && FD_ISSET(fd, exceptfds))
			ev |= POLLPRI;
		if (ev)
			fds[n++] = (struct pollfd){ .fd = fd, .events = ev };
	}
	to = !timeout ? -1 : (int)(timeout->tv_sec * 1000 + timeout->tv_usec / 1000);
	ret = rpoll(fds, (nfds_t)n, to);
	if (ret >= 0) {
		if (readfds)
			FD_ZERO(readfds);
		if (writefds)
			FD_ZERO(writefds);
		if (exceptfds)
			FD_ZERO(exceptfds);
		ret = 0;
		for (int i = 0; i < n; i++) {
			short r = fds[i].revents;

			if (readfds && (fds[i].events & POLLIN) &&
			    (r & (POLLIN | POLLHUP | POLLERR))) {
				FD_SET(fds[i].fd, readfds);
				ret++;
			}
			if (writefds && (fds[i].events & POLLOUT) &&
			    (r & (POLLOUT | POLLERR))) {
				FD_SET(fds[i].fd, writefds);
				ret++;
			}
			if (exceptfds && (fds[i].events & POLLPRI) && (r & POLLPRI)) {
				FD_SET(fds[i].fd, exceptfds);
				ret++;
			}
		}
		if (timeout && !ret)
			timeout->tv_sec = timeout->tv_usec = 0;
	}
	free(fds);
	return ret;
}
