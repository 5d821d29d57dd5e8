/* SPDX-License-Identifier: MIT */
/*
 * Statistics counters: written by one thread at a time (whoever drives
 * the connection, under its lock), read by any thread without a lock.
 * A relaxed load and store, not a read-modify-write: on the writer's side
 * it is a plain add, no locked instruction and no fence, and a reader
 * sees each counter whole (never torn), if not in step with the others.
 */
#ifndef IW_LIB_COUNTER_H
#define IW_LIB_COUNTER_H

#include <stdatomic.h>
#include <stdint.h>

typedef _Atomic uint64_t iw_counter;

static inline void counter_add(iw_counter *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

static inline uint64_t counter_get(const iw_counter *c)
{
	return atomic_load_explicit((iw_counter *)c, memory_order_relaxed);
}

/* Raises a high-water mark to @v (one writer, as counter_add()). */
static inline void counter_max(iw_counter *c, uint64_t v)
{
	if (v > atomic_load_explicit(c, memory_order_relaxed))
		atomic_store_explicit(c, v, memory_order_relaxed);
}

#endif /* IW_LIB_COUNTER_H */
