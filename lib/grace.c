// SPDX-License-Identifier: MIT
/*
 * Grace periods for lock-free readers (see grace.h).  Every access is
 * sequentially consistent: a reader that entered after the writer's flip
 * counts in the new epoch and sees the object already unlinked; one that
 * entered before counts in the old epoch, which the writer drains.
 */
#include <sched.h>

#include "lib/grace.h"

void grace_init(struct grace *g)
{
	atomic_init(&g->epoch, 0);
	atomic_init(&g->readers[0], 0);
	atomic_init(&g->readers[1], 0);
	pthread_mutex_init(&g->writer, NULL);
}

void grace_destroy(struct grace *g)
{
	pthread_mutex_destroy(&g->writer);
}

/*
 * Readers stay inside for a bounded, short time (a look at a queue, a
 * non-blocking read), so yielding while they drain is enough.
 */
void grace_wait(struct grace *g)
{
	unsigned int old;

	pthread_mutex_lock(&g->writer);
	old = atomic_fetch_add(&g->epoch, 1) & 1;
	while (atomic_load(&g->readers[old]))
		sched_yield();
	pthread_mutex_unlock(&g->writer);
}
