// SPDX-License-Identifier: MIT
/*
 * make check-faults: seeded runs of two libiwarp endpoints talking through
 * the fault-injecting proxy (fault_run.c), many at once in one process on
 * two shared device contexts, while a connection of their own (the
 * sentinel) pings in the same contexts and must never miss a beat.
 *
 *   check_faults [-n RUNS] [-j JOBS] [-s SEED]
 *
 * Run i uses seed SEED + i; SEED comes from -s, IWARP_FAULT_SEED, or the
 * clock, and is printed.  A failing run prints its seed: "-n 1 -s SEED"
 * replays it alone.  Exit status 0 when every run held, 1 otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fault_run.h"

#define SENTINEL_MS 2000 /* the longest a sentinel ping may take */

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* ---- the sentinel: a connection that must keep working ------------------ */

struct end {
	struct iw_cm_channel *ch;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_qp *qp;
	struct iw_cm_id *id;
	uint8_t buf[256];
	struct iw_mr *mr;
};

struct sentinel {
	struct end c, s;
	struct iw_cm_id *listen;
	pthread_t thread;
	atomic_bool stop;
	unsigned long pings;
	long long worst_ms;
	char err[256];
};

static struct iw_cm_event *next_event(struct iw_cm_channel *ch, int ms)
{
	struct pollfd p = { iw_cm_channel_fd(ch), POLLIN, 0 };
	struct iw_cm_event *ev;

	if (poll(&p, 1, ms) != 1 || iw_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

static int end_open(struct end *e, struct iw_context *ctx)
{
	struct iw_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	e->ch = iw_create_cm_channel(ctx);
	e->pd = iw_alloc_pd(ctx);
	e->cq = iw_create_cq(ctx, 8, NULL);
	if (!e->ch || !e->pd || !e->cq)
		return -1;
	qa.send_cq = qa.recv_cq = e->cq;
	e->qp = iw_create_qp(e->pd, &qa);
	e->mr = iw_reg_mr(e->pd, e->buf, sizeof(e->buf), IW_ACCESS_LOCAL_WRITE);
	return e->qp && e->mr ? 0 : -1;
}

static void end_close(struct end *e)
{
	if (e->id)
		iw_destroy_id(e->id);
	iw_destroy_qp(e->qp);
	iw_dereg_mr(e->mr);
	iw_destroy_cq(e->cq);
	iw_dealloc_pd(e->pd);
	iw_destroy_cm_channel(e->ch);
}

static int sentinel_open(struct sentinel *t, const struct fault_env *env)
{
	struct sockaddr_storage ss;
	struct iw_cm_event *ev;
	char port[16];

	if (end_open(&t->c, env->client) || end_open(&t->s, env->server))
		return -1;
	t->listen = iw_create_id(t->s.ch, NULL);
	if (!t->listen || iw_listen(t->listen, "127.0.0.1", "0", 4) ||
	    iw_get_local_addr(t->listen, &ss))
		return -1;
	snprintf(port, sizeof(port), "%u",
		 ntohs(((struct sockaddr_in *)&ss)->sin_port));
	t->c.id = iw_create_id(t->c.ch, NULL);
	if (!t->c.id || iw_connect(t->c.id, "127.0.0.1", port, t->c.qp, NULL))
		return -1;
	ev = next_event(t->s.ch, 5000);
	if (!ev || ev->event != IW_CM_EVENT_CONNECT_REQUEST)
		return -1;
	t->s.id = ev->id;
	iw_ack_cm_event(ev);
	if (iw_accept(t->s.id, t->s.qp, NULL))
		return -1;
	for (int k = 0; k < 2; k++) {
		ev = next_event(k ? t->c.ch : t->s.ch, 5000);
		if (!ev || ev->event != IW_CM_EVENT_ESTABLISHED)
			return -1;
		iw_ack_cm_event(ev);
	}
	return 0;
}

/* Completions until @n have come or @ms pass. */
static int wait_wc(struct iw_cq *cq, struct iw_wc *wc, int n, long long end)
{
	int got = 0;

	while (got < n && now_ms() < end) {
		int r = iw_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			return r;
		got += r;
		if (!r)
			usleep(200);
	}
	return got;
}

/* A Send of 64 octets server-ward every 10 ms, each checked. */
static void *sentinel_main(void *arg)
{
	struct sentinel *t = arg;

	while (!atomic_load(&t->stop)) {
		struct iw_sge s = { (uintptr_t)t->c.buf, 64, t->c.mr->lkey };
		struct iw_sge r = { (uintptr_t)t->s.buf, 64, t->s.mr->lkey };
		struct iw_recv_wr rw = { .wr_id = t->pings, .sg_list = &r,
					 .num_sge = 1 };
		struct iw_send_wr sw = { .wr_id = t->pings, .sg_list = &s,
					 .num_sge = 1, .opcode = IW_WR_SEND,
					 .send_flags = IW_SEND_SIGNALED };
		long long t0 = now_ms(), end = t0 + SENTINEL_MS;
		struct iw_wc wc;

		memset(t->c.buf, (int)(t->pings & 0xff), 64);
		memset(t->s.buf, 0, 64);
		if (iw_post_recv(t->s.qp, &rw, NULL) ||
		    iw_post_send(t->c.qp, &sw, NULL)) {
			snprintf(t->err, sizeof(t->err), "ping %lu not posted",
				 t->pings);
			return NULL;
		}
		if (wait_wc(t->s.cq, &wc, 1, end) != 1 ||
		    wc.status != IW_WC_SUCCESS ||
		    memcmp(t->s.buf, t->c.buf, 64) ||
		    wait_wc(t->c.cq, &wc, 1, end) != 1 ||
		    wc.status != IW_WC_SUCCESS) {
			snprintf(t->err, sizeof(t->err),
				 "ping %lu failed or took over %d ms", t->pings,
				 SENTINEL_MS);
			return NULL;
		}
		if (now_ms() - t0 > t->worst_ms)
			t->worst_ms = now_ms() - t0;
		t->pings++;
		usleep(10 * 1000);
	}
	return NULL;
}

/* ---- the runs ------------------------------------------------------------ */

struct pool {
	const struct fault_env *env;
	uint64_t seed;
	int runs;
	atomic_int next;
	atomic_int failed;
	atomic_int done;
	pthread_mutex_t out;
};

static void *worker(void *arg)
{
	struct pool *p = arg;
	int i;

	while ((i = atomic_fetch_add(&p->next, 1)) < p->runs) {
		uint64_t seed = p->seed + (uint64_t)i;
		struct fault_result res;
		int done;

		fault_run(p->env, seed, &res);
		done = atomic_fetch_add(&p->done, 1) + 1;
		pthread_mutex_lock(&p->out);
		if (res.failed) {
			atomic_fetch_add(&p->failed, 1);
			printf("FAIL run %d seed %#" PRIx64 " (%s): %s\n"
			       "  replay: check_faults -n 1 -s %#" PRIx64 "\n",
			       i, seed, res.what, res.why, seed);
		}
		if (done % 100 == 0)
			printf("%d runs, %d failed\n", done,
			       atomic_load(&p->failed));
		fflush(stdout);
		pthread_mutex_unlock(&p->out);
	}
	return NULL;
}

static uint64_t default_seed(void)
{
	const char *env = getenv("IWARP_FAULT_SEED");
	struct timespec ts;

	if (env && *env)
		return strtoull(env, NULL, 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	struct pool p = { .runs = 1000, .seed = default_seed(),
			  .out = PTHREAD_MUTEX_INITIALIZER };
	struct fault_env env;
	struct sentinel t = { 0 };
	pthread_t *w;
	int jobs = 8, opt, rc = 0;
	long long t0 = now_ms();

	while ((opt = getopt(argc, argv, "n:j:s:")) != -1) {
		switch (opt) {
		case 'n':
			p.runs = atoi(optarg);
			break;
		case 'j':
			jobs = atoi(optarg);
			break;
		case 's':
			p.seed = strtoull(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: check_faults [-n RUNS] [-j JOBS] "
					"[-s SEED]\n");
			return 2;
		}
	}
	if (jobs < 1 || p.runs < 0)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	printf("check_faults: %d runs, %d at a time, seed %#" PRIx64
	       " (replay with -s or IWARP_FAULT_SEED)\n",
	       p.runs, jobs, p.seed);
	fflush(stdout);
	env.client = iw_open(NULL);
	env.server = iw_open(NULL);
	if (!env.client || !env.server || sentinel_open(&t, &env)) {
		fprintf(stderr, "check_faults: cannot set up: %s\n",
			strerror(errno));
		return 1;
	}
	p.env = &env;
	atomic_init(&t.stop, false);
	pthread_create(&t.thread, NULL, sentinel_main, &t);
	w = calloc((size_t)jobs, sizeof(*w));
	for (int i = 0; i < jobs; i++)
		pthread_create(&w[i], NULL, worker, &p);
	for (int i = 0; i < jobs; i++)
		pthread_join(w[i], NULL);
	free(w);
	atomic_store(&t.stop, true);
	pthread_join(t.thread, NULL);
	if (t.err[0]) {
		printf("FAIL the sentinel connection: %s\n", t.err);
		rc = 1;
	}
	printf("check_faults: %d runs, %d failed, in %.1f s; the sentinel "
	       "pinged %lu times, the slowest %lld ms\n",
	       p.runs, atomic_load(&p.failed), (now_ms() - t0) / 1000.0,
	       t.pings, t.worst_ms);
	if (atomic_load(&p.failed))
		rc = 1;
	iw_destroy_id(t.listen);
	end_close(&t.c);
	end_close(&t.s);
	iw_close(env.client);
	iw_close(env.server);
	return rc;
}
