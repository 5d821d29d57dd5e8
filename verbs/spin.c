// SPDX-License-Identifier: MIT
/*
 * A waiting thread's spin.  It is timed by the calling thread's own reads
 * (tp_thread_reads()) and clock, so it takes no lock and shares nothing.
 */
#include <sched.h>
#include <time.h>

#include "lib/transport.h"
#include "verbs/spin.h"

/* The calling thread's spin: its reads when they last moved, and when. */
struct spin {
	unsigned long reads;
	long long since, off_until, backoff;
};
static _Thread_local struct spin spin;

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Whether a waiting thread should look again rather than sleep. */
bool spin_still_flowing(void)
{
	unsigned long reads = tp_thread_reads();
	long long now = now_ns();

	if (reads != spin.reads) {
		spin.reads = reads;
		spin.since = now;
	}
	return now >= spin.off_until && now - spin.since < WAIT_SPIN_NS;
}

/*
 * Yields between looks.  Only the yield is timed: the look before it may
 * have placed a burst of data, which takes long too and says nothing
 * about other threads.
 */
void spin_yield(void)
{
	long long before = now_ns(), now;

	sched_yield();
	now = now_ns();
	if (now - before <= SPIN_PREEMPTED_NS)
		return;
	spin.backoff = spin_backoff_next(spin.backoff, now - spin.off_until);
	spin.off_until = now + spin.backoff;
}
