/* SPDX-License-Identifier: MIT */
/*
 * The short spin of a thread waiting for data, in iw_progress_cq() or a
 * library thread's loop: while a stream flows it looks again instead of
 * sleeping, so that its sender seldom has to wake it, and it stops when
 * other threads want its processor (a program whose busy threads watch
 * memory while a library thread places its data, as ib_write_lat does).
 */
#ifndef IWARP_VERBS_SPIN_H
#define IWARP_VERBS_SPIN_H

#include <stdbool.h>

#include "verbs/progress_tuning.h"

/*
 * The back-off that follows a yield that lost the processor, after
 * @backoff, the one before, which ended @since_ns ago.
 */
static inline long long spin_backoff_next(long long backoff, long long since_ns)
{
	if (since_ns > SPIN_BACKOFF_MAX_NS || backoff < SPIN_BACKOFF_MIN_NS)
		return SPIN_BACKOFF_MIN_NS;
	return backoff < SPIN_BACKOFF_MAX_NS / 2 ? 2 * backoff
						  : SPIN_BACKOFF_MAX_NS;
}

bool spin_still_flowing(void);
void spin_yield(void);

#endif
