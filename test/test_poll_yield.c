// SPDX-License-Identifier: MIT
/*
 * A thread that polls an empty CQ gives its processor away.  On a busy
 * machine the peer that must answer (another process, or another thread
 * of this one) often waits for the very processor a poller spins on; a
 * poller that keeps it makes every round trip cost a scheduler time
 * slice, milliseconds instead of microseconds.  One that armed the CQ
 * keeps it: it sleeps next, and is woken ahead of busy threads.  The
 * tests make that contention certain rather than likely: two threads at
 * the same SCHED_FIFO priority on one processor, where the one running
 * keeps the processor until it yields or sleeps.  The watchdogs only end a test
 * that stalled; nothing here is timed.
 *
 * Needs a real-time priority (root or CAP_SYS_NICE) and two processors
 * the process may use: without them the suite says SKIP (77).
 */
#include "config.h" /* _GNU_SOURCE: CPU_SET, pthread_setaffinity_np */

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "e2e.h"
#include "verbs/progress_tuning.h"

/* The processor the real-time threads share; the others run elsewhere. */
static int shared_cpu;

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Starts @fn on shared_cpu at SCHED_FIFO priority 1; 0 or an errno. */
static int start_rt(pthread_t *t, void *(*fn)(void *), void *arg)
{
	struct sched_param sp = { .sched_priority = 1 };
	pthread_attr_t a;
	cpu_set_t cpus;
	int rc;

	CPU_ZERO(&cpus);
	CPU_SET(shared_cpu, &cpus);
	pthread_attr_init(&a);
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, SCHED_FIFO);
	pthread_attr_setschedparam(&a, &sp);
	pthread_attr_setaffinity_np(&a, sizeof(cpus), &cpus);
	rc = pthread_create(t, &a, fn, arg);
	pthread_attr_destroy(&a);
	return rc;
}

static void post_send(struct e2e_side *s, uint32_t len, uint64_t wr_id)
{
	struct iw_sge sge = { (uintptr_t)s->buf, len, s->mr->lkey };
	struct iw_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				 .opcode = IW_WR_SEND,
				 .send_flags = IW_SEND_SIGNALED };

	require(iw_post_send(s->qp, &wr, NULL) == 0, "post_send %llu",
		(unsigned long long)wr_id);
}

static void post_recv(struct e2e_side *s, uint32_t len, uint64_t wr_id)
{
	struct iw_sge sge = { (uintptr_t)s->buf + s->len / 2, len,
			      s->mr->lkey };
	struct iw_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				 .num_sge = 1 };

	require(iw_post_recv(s->qp, &wr, NULL) == 0, "post_recv %llu",
		(unsigned long long)wr_id);
}

/* ---- the mechanism: an empty poll lets the other thread run ----------- */

struct share {
	struct iw_cq *cq;	/* a connected QP's CQ that nothing arrives on */
	atomic_bool other_up, done;
	atomic_ulong other_turns; /* times the other thread has run */
	unsigned long turns_during_polls;
	int polls, bad_polls;
	bool arm; /* iw_req_notify_cq() first, as a thread about to sleep does */
};

/* Runs whenever the processor is given to it, counting its turns. */
static void *other(void *arg)
{
	struct share *sh = arg;

	atomic_store(&sh->other_up, true);
	while (!atomic_load(&sh->done)) {
		atomic_fetch_add(&sh->other_turns, 1);
		sched_yield();
	}
	return NULL;
}

static void *poller(void *arg)
{
	struct share *sh = arg;
	unsigned long before = atomic_load(&sh->other_turns);
	struct iw_wc wc;

	if (sh->arm && iw_req_notify_cq(sh->cq, 0) != 0)
		sh->bad_polls++;
	for (int i = 0; i < sh->polls; i++)
		if (iw_poll_cq(sh->cq, 1, &wc) != 0)
			sh->bad_polls++;
	sh->turns_during_polls = atomic_load(&sh->other_turns) - before;
	atomic_store(&sh->done, true);
	return NULL;
}

/*
 * The poller finds its CQ empty sh->polls times, beside the other thread
 * on the same processor at the same priority, which only runs when the
 * poller yields (or sleeps).
 */
static void poll_beside_other(struct share *sh)
{
	struct e2e_opts o;
	pthread_t t_other, t_poller;
	struct e2e e;
	long long end;

	e2e_opts_default(&o);
	e2e_connect(&e, &o);
	sh->cq = e.s.cq;
	ck_assert_int_eq(start_rt(&t_other, other, sh), 0);
	for (end = now_ms() + E2E_WAIT_MS; !atomic_load(&sh->other_up);)
		require(now_ms() < end, "the other thread never ran");
	ck_assert_int_eq(start_rt(&t_poller, poller, sh), 0);
	for (end = now_ms() + E2E_WAIT_MS; !atomic_load(&sh->done);) {
		if (now_ms() >= end) {
			atomic_store(&sh->done, true); /* let both end */
			break;
		}
		struct timespec nap = { 0, 10 * 1000 * 1000 };

		nanosleep(&nap, NULL);
	}
	pthread_join(t_poller, NULL);
	pthread_join(t_other, NULL);
	ck_assert_int_eq(sh->bad_polls, 0);
	e2e_teardown(&e);
}

/*
 * The other thread must have run between (nearly) every two empty polls:
 * all but the first CQ_YIELD_AFTER - 1 of a run give the processor away.
 */
START_TEST(empty_polls_hand_the_processor_to_a_thread_that_waits)
{
	struct share sh = { .polls = 1000 };

	poll_beside_other(&sh);
	require(sh.turns_during_polls >=
			(unsigned long)(sh.polls - CQ_YIELD_AFTER),
		"the other thread ran %lu times during %d empty polls: the "
		"poller kept the processor",
		sh.turns_during_polls, sh.polls);
}
END_TEST

/*
 * Polls of an armed CQ keep the processor: their caller sleeps on the
 * event next, and a yield first would wait out another busy thread's
 * turn.  (A rare wait for a lock may still let the other thread in.)
 */
START_TEST(empty_polls_of_an_armed_cq_keep_the_processor)
{
	struct share sh = { .polls = 1000, .arm = true };

	poll_beside_other(&sh);
	require(sh.turns_during_polls < (unsigned long)sh.polls / 10,
		"the other thread ran %lu times during %d empty polls of an "
		"armed CQ: the poller gave the processor away",
		sh.turns_during_polls, sh.polls);
}
END_TEST

/* ---- what it is for: a ping-pong on one processor -------------------- */

enum { ROUNDS = 1000, MSG = 8 };

struct pong {
	struct e2e_side *side;
	bool initiator;
	atomic_int rounds; /* completed by this side */
	atomic_bool *stop;
	char failed[128];
};

/* The next receive completion, taking send completions on the way. */
static bool next_recv(struct pong *p, struct iw_wc *wc)
{
	while (!atomic_load(p->stop)) {
		int n = iw_poll_cq(p->side->cq, 1, wc);

		if (n < 0 || (n == 1 && wc->status != IW_WC_SUCCESS)) {
			snprintf(p->failed, sizeof(p->failed),
				 "poll %d status %d", n, n == 1 ? wc->status : 0);
			return false;
		}
		if (n == 1 && wc->opcode == IW_WC_RECV)
			return true;
	}
	return false;
}

static void *ping_pong(void *arg)
{
	struct pong *p = arg;
	struct e2e_side *s = p->side;
	struct iw_wc wc;

	for (int i = 0; i < ROUNDS; i++) {
		if (p->initiator) {
			memset(s->buf, (uint8_t)i, MSG);
			post_send(s, MSG, i);
		}
		if (!next_recv(p, &wc))
			return NULL;
		if (wc.byte_len != MSG ||
		    ((uint8_t *)s->buf)[s->len / 2] != (uint8_t)i) {
			snprintf(p->failed, sizeof(p->failed),
				 "round %d: %u octets, first %u", i, wc.byte_len,
				 ((uint8_t *)s->buf)[s->len / 2]);
			return NULL;
		}
		post_recv(s, MSG, i + 1);
		if (!p->initiator) {
			memset(s->buf, (uint8_t)i, MSG);
			post_send(s, MSG, i);
		}
		atomic_store(&p->rounds, i + 1);
	}
	return NULL;
}

/*
 * Two threads on one processor, each busy-polling its end of a
 * connection, ping-pong 1000 messages of 8 octets, every one checked:
 * each answer needs the other thread to run while this one polls.
 */
START_TEST(two_pollers_on_one_processor_ping_pong)
{
	struct e2e_opts o;
	struct e2e e;
	atomic_bool stop = false;
	struct pong c = { .initiator = true, .stop = &stop },
		    s = { .initiator = false, .stop = &stop };
	pthread_t tc, ts;
	int last = -1;
	long long idle_since = now_ms();

	e2e_opts_default(&o);
	e2e_connect(&e, &o);
	e2e_ping(&e, 1, E2E_WAIT_MS); /* the first message each way is out */
	c.side = &e.c;
	s.side = &e.s;
	post_recv(&e.c, MSG, 0);
	post_recv(&e.s, MSG, 0);
	ck_assert_int_eq(start_rt(&ts, ping_pong, &s), 0);
	ck_assert_int_eq(start_rt(&tc, ping_pong, &c), 0);
	/* a watchdog, not a clock: it ends a ping-pong that stopped moving */
	while (atomic_load(&c.rounds) < ROUNDS && !c.failed[0] && !s.failed[0]) {
		struct timespec nap = { 0, 10 * 1000 * 1000 };
		int r = atomic_load(&c.rounds);

		if (r != last) {
			last = r;
			idle_since = now_ms();
		} else if (now_ms() - idle_since > E2E_WAIT_MS) {
			break;
		}
		nanosleep(&nap, NULL);
	}
	atomic_store(&stop, true);
	pthread_join(tc, NULL);
	pthread_join(ts, NULL);
	require(!c.failed[0] && !s.failed[0], "client: %s; server: %s",
		c.failed, s.failed);
	require(atomic_load(&c.rounds) == ROUNDS,
		"the ping-pong stalled after %d of %d round trips: a poller "
		"kept the processor its peer needed",
		atomic_load(&c.rounds), ROUNDS);
	e2e_teardown(&e);
}
END_TEST

/*
 * Whether two real-time threads can share a processor here: one of the
 * process's processors for them, another for the rest.  Prints why not.
 */
static bool can_share_a_processor(void)
{
	cpu_set_t cpus;
	pthread_t t;
	int rc;

	if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0 ||
	    CPU_COUNT(&cpus) < 2) {
		printf("SKIP: needs two processors to run on\n");
		return false;
	}
	for (shared_cpu = CPU_SETSIZE - 1; !CPU_ISSET(shared_cpu, &cpus);)
		shared_cpu--;
	rc = start_rt(&t, (void *(*)(void *))sched_yield, NULL);
	if (rc) {
		printf("SKIP: no SCHED_FIFO thread on processor %d: %s\n",
		       shared_cpu, strerror(rc));
		return false;
	}
	pthread_join(t, NULL);
	return true;
}

int main(void)
{
	Suite *s = suite_create("poll_yield");
	TCase *tc = tcase_create("one processor");

	if (!can_share_a_processor())
		return 77;
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, empty_polls_hand_the_processor_to_a_thread_that_waits);
	tcase_add_test(tc, empty_polls_of_an_armed_cq_keep_the_processor);
	tcase_add_test(tc, two_pollers_on_one_processor_ping_pong);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
