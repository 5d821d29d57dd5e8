/* SPDX-License-Identifier: MIT */
/*
 * Grace periods: readers that take no lock, and writers that wait until
 * no reader can still hold what they took away.  A reader brackets its
 * look with grace_enter()/grace_exit() (two atomic additions, no lock, no
 * syscall); a writer unlinks an object, calls grace_wait(), and may then
 * free it.  Two counters and an epoch bit, flipped by each writer, keep a
 * steady stream of readers from starving the writer: it only waits for
 * the readers that entered before its flip.
 */
#ifndef IW_LIB_GRACE_H
#define IW_LIB_GRACE_H

#include <pthread.h>
#include <stdatomic.h>

struct grace {
	atomic_uint epoch;
	atomic_uint readers[2];
	pthread_mutex_t writer; /* one flip at a time */
};

void grace_init(struct grace *g);
void grace_destroy(struct grace *g);

static inline unsigned int grace_enter(struct grace *g)
{
	unsigned int e = atomic_load(&g->epoch) & 1;

	atomic_fetch_add(&g->readers[e], 1);
	return e;
}

static inline void grace_exit(struct grace *g, unsigned int e)
{
	atomic_fetch_sub(&g->readers[e], 1);
}

/* Returns once every reader that entered before the call has left. */
void grace_wait(struct grace *g);

#endif /* IW_LIB_GRACE_H */
