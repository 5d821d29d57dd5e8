// SPDX-License-Identifier: MIT
/*
 * iwarp-perf --idle N: N connected QPs that move nothing, on the same
 * device as the measured ones, to show what an idle QP costs (memory) and
 * that a busy QP among many keeps its latency.  Their far ends are in a
 * child process forked before any thread starts, so that the two ends of
 * N loopback connections do not share one process's descriptor limit.
 *
 * What an idle QP costs is measured around their connection: the growth
 * of the resident set (/proc/self/statm) and of the heap in use
 * (mallinfo2(): what malloc has handed out, whoever asked), each divided
 * by N.  The tool's own arrays for them are allocated and touched before,
 * so both figures are the library's (and libevent's) alone.
 */
#include "config.h" /* _GNU_SOURCE */

#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perf.h"

/* connections in the MPA handshake at once: the child's listen backlog */
#define IDLE_WINDOW 128
/* descriptors besides the idle QPs' sockets: the measured QPs, TCP, ... */
#define IDLE_SPARE_FDS 256

struct perf_idle {
	const struct perf_opts *o;
	uint32_t n;
	pid_t child;
	int ctl; /* the child's port comes here; its end is the child's */
	char port[16];
	/* the near ends */
	struct iw_cm_channel *ch;
	struct iw_cq *cq;
	struct iw_qp **qp;
	struct iw_cm_id **id;
	uint32_t up;
	double setup_s;
	long long rss_before, rss_after;   /* octets */
	long long heap_before, heap_after; /* octets */
};

/* ---- the far ends, in the child ------------------------------------------ */

/* Takes connection requests with a QP each until @ctl closes. */
static int idle_serve(const struct perf_opts *o, int ctl)
{
	struct iw_context *ctx = iw_open(NULL);
	struct iw_cm_channel *ch = ctx ? iw_create_cm_channel(ctx) : NULL;
	struct iw_pd *pd = ctx ? iw_alloc_pd(ctx) : NULL;
	struct iw_cq *cq = ctx ? iw_create_cq(ctx, 2 * (int)o->idle, NULL)
			       : NULL;
	struct iw_cm_id *l = ch ? iw_create_id(ch, NULL) : NULL;
	struct sockaddr_storage ss;
	char port[16] = "";

	if (!l || !pd || !cq || iw_set_mpa_opts(l, &o->mpa) ||
	    iw_listen(l, "127.0.0.1", "0", IDLE_WINDOW) ||
	    iw_get_local_addr(l, &ss))
		return perf_fail("--idle: the process for the far ends cannot "
				 "listen: %s",
				 strerror(errno));
	snprintf(port, sizeof(port), "%u",
		 ntohs(((struct sockaddr_in *)&ss)->sin_port));
	if (write(ctl, port, sizeof(port)) != sizeof(port))
		return -1;
	for (;;) {
		struct pollfd p[2] = { { iw_cm_channel_fd(ch), POLLIN, 0 },
				       { ctl, POLLIN, 0 } };
		struct iw_cm_event *ev;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return -1;
		if (p[1].revents)
			return 0; /* the parent is done (or gone) */
		if (!p[0].revents || iw_get_cm_event(ch, &ev))
			continue;
		if (ev->event == IW_CM_EVENT_CONNECT_REQUEST) {
			struct iw_qp_init_attr qa = {
				.send_cq = cq, .recv_cq = cq,
				.cap = { 1, 1, 1, 1, 0 },
			};
			struct iw_conn_param cp = { .ird = 1, .ord = 1 };
			struct iw_qp *qp = iw_create_qp(pd, &qa);

			if (!qp || iw_accept(ev->id, qp, &cp))
				iw_reject(ev->id, NULL, 0);
		}
		iw_ack_cm_event(ev);
	}
}

/*
 * Raises the soft descriptor limit to what @n idle QPs need, within the
 * hard one; the child inherits it.
 */
static int enough_fds(uint32_t n)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)n + IDLE_SPARE_FDS;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return perf_fail("getrlimit: %s", strerror(errno));
	if (rl.rlim_cur >= want)
		return 0;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want)
		return perf_fail("--idle %u needs %llu descriptors in each of "
				 "two processes; the hard limit is %llu",
				 n, (unsigned long long)want,
				 (unsigned long long)rl.rlim_max);
	rl.rlim_cur = want;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return perf_fail("setrlimit: %s", strerror(errno));
	return 0;
}

int perf_idle_fork(struct perf_idle **ip, const struct perf_opts *o)
{
	struct perf_idle *i = calloc(1, sizeof(*i));
	struct pollfd p;
	int sv[2];

	*ip = i;
	if (!i)
		return perf_fail("out of memory");
	i->o = o;
	i->n = o->idle;
	i->ctl = -1;
	if (enough_fds(i->n))
		return -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return perf_fail("socketpair: %s", strerror(errno));
	fflush(NULL);
	i->child = fork();
	if (i->child < 0)
		return perf_fail("fork: %s", strerror(errno));
	if (i->child == 0) {
		close(sv[0]);
		/* the far ends go with the process: no teardown of each */
		_exit(idle_serve(o, sv[1]) ? 1 : 0);
	}
	close(sv[1]);
	i->ctl = sv[0];
	p = (struct pollfd){ i->ctl, POLLIN, 0 };
	if (poll(&p, 1, o->timeout_ms) != 1 ||
	    read(i->ctl, i->port, sizeof(i->port)) != sizeof(i->port) ||
	    !i->port[0])
		return perf_fail("--idle: the process for the far ends did "
				 "not start");
	return 0;
}

/* ---- the near ends -------------------------------------------------------- */

static long long rss_now(void)
{
	long long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%lld %lld", &pages, &res) != 2)
			res = 0;
		fclose(f);
	}
	return res * sysconf(_SC_PAGESIZE);
}

static long long heap_now(void)
{
	struct mallinfo2 m = mallinfo2();

	return (long long)(m.uordblks + m.hblkhd);
}

/* Starts the connection of idle QP @k. */
static int idle_connect_one(struct perf_idle *i, struct perf_dev *d,
			    uint32_t k)
{
	struct iw_qp_init_attr qa = {
		.send_cq = i->cq, .recv_cq = i->cq,
		.cap = { 1, 1, 1, 1, 0 },
	};
	struct iw_conn_param cp = { .ird = 1, .ord = 1 };
	int rc;

	i->qp[k] = iw_create_qp(d->pd, &qa);
	i->id[k] = iw_create_id(i->ch, NULL);
	if (!i->qp[k] || !i->id[k] || iw_set_mpa_opts(i->id[k], &i->o->mpa))
		return perf_fail("--idle: QP %u of %u: %s", k, i->n,
				 strerror(errno));
	rc = iw_connect(i->id[k], "127.0.0.1", i->port, i->qp[k], &cp);
	if (rc)
		return perf_fail("--idle: QP %u of %u: %s", k, i->n,
				 iw_strerror(rc));
	return 0;
}

/* The outcome of one connection: established, or a failure. */
static int idle_event(struct perf_idle *i, struct perf_dev *d, int ms)
{
	struct pollfd p = { iw_cm_channel_fd(i->ch), POLLIN, 0 };
	struct iw_cm_event *ev;
	int rc = 0;

	if (perf_wait_fds(d, &p, 1, ms) != 1 || iw_get_cm_event(i->ch, &ev))
		return perf_fail("--idle: %u of %u QPs connected; no more "
				 "within %d s",
				 i->up, i->n, ms / 1000);
	if (ev->event == IW_CM_EVENT_ESTABLISHED) {
		i->up++;
	} else {
		perf_explain("--idle: the process for the far ends", ev,
			     &i->o->mpa);
		rc = -1;
	}
	iw_ack_cm_event(ev);
	return rc;
}

/*
 * Connects the N idle QPs on @d's context and PD, with a CQ and a channel
 * of their own and the smallest queues (one work request each way), a
 * window of them in the handshake at a time.
 */
int perf_idle_connect(struct perf_idle *i, struct perf_dev *d)
{
	double t0;
	uint32_t started = 0;

	i->qp = malloc(i->n * sizeof(*i->qp));
	i->id = malloc(i->n * sizeof(*i->id));
	if (!i->qp || !i->id)
		return perf_fail("out of memory");
	/* touched now, so that they are not in the growth measured */
	memset(i->qp, 0, i->n * sizeof(*i->qp));
	memset(i->id, 0, i->n * sizeof(*i->id));
	i->rss_before = rss_now();
	i->heap_before = heap_now();
	t0 = tool_now_us();
	i->ch = iw_create_cm_channel(d->ctx);
	i->cq = iw_create_cq(d->ctx, 2 * (int)i->n, NULL);
	if (!i->ch || !i->cq)
		return perf_fail("--idle: a CQ of %u entries: %s", 2 * i->n,
				 strerror(errno));
	while (i->up < i->n) {
		while (started < i->n && started - i->up < IDLE_WINDOW)
			if (idle_connect_one(i, d, started++))
				return -1;
		if (idle_event(i, d, 2 * i->o->timeout_ms))
			return -1;
	}
	i->setup_s = (tool_now_us() - t0) / 1e6;
	i->rss_after = rss_now();
	i->heap_after = heap_now();
	return 0;
}

/*
 * An allocator that is not glibc's (a sanitizer's) counts nothing in
 * mallinfo2(): the heap figure is then unknown, not zero.
 */
void perf_idle_report(const struct perf_idle *i, const struct perf_opts *o,
		      char *json, size_t len)
{
	double rss = (double)(i->rss_after - i->rss_before) / i->n / 1024;
	double heap = (double)(i->heap_after - i->heap_before) / i->n / 1024;
	bool heap_known = i->heap_after > 0;
	char heap_words[32] = "null";

	if (heap_known)
		snprintf(heap_words, sizeof(heap_words), "%.2f", heap);
	snprintf(json, len,
		 "\"idle\":{\"qps\":%u,\"setup_s\":%.3f,"
		 "\"rss_kib_per_qp\":%.2f,\"heap_kib_per_qp\":%s,"
		 "\"send_wr\":1,\"recv_wr\":1}",
		 i->n, i->setup_s, rss, heap_words);
	if (!o->json)
		printf("# idle: %u QPs (1 send, 1 receive work request each) "
		       "connected in %.2f s to a second process; per QP: "
		       "resident set +%.2f KiB, heap +%s%s\n",
		       i->n, i->setup_s, rss,
		       heap_known ? heap_words : "? (no mallinfo2)",
		       heap_known ? " KiB" : "");
}

/* Destroys the near ends: each QP before its CQ, each identifier before
 * its channel, all before the device they are on closes. */
void perf_idle_release(struct perf_idle *i)
{
	if (!i)
		return;
	for (uint32_t k = 0; i->id && k < i->n; k++) {
		if (i->id[k])
			iw_destroy_id(i->id[k]);
		if (i->qp[k])
			iw_destroy_qp(i->qp[k]);
	}
	free(i->id);
	free(i->qp);
	i->id = NULL;
	i->qp = NULL;
	if (i->cq)
		iw_destroy_cq(i->cq);
	if (i->ch)
		iw_destroy_cm_channel(i->ch);
	i->cq = NULL;
	i->ch = NULL;
}

/* Lets the child go (the far ends end with it) and waits for it. */
void perf_idle_close(struct perf_idle *i)
{
	int status;

	if (!i)
		return;
	perf_idle_release(i);
	if (i->ctl >= 0)
		close(i->ctl);
	if (i->child > 0)
		waitpid(i->child, &status, 0);
	free(i);
}
