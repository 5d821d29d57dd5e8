// SPDX-License-Identifier: MIT
/* The application's own event loop, for tests that run one (e2e.h). */
#include <check.h>
#include <pthread.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "e2e.h"

void *e2e_dispatch(void *base)
{
	event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY);
	return NULL;
}

struct event_base *e2e_base_start(pthread_t *loop)
{
	struct event_base *base;

	ck_assert_int_eq(evthread_use_pthreads(), 0);
	base = event_base_new();
	ck_assert_ptr_nonnull(base);
	ck_assert_int_eq(pthread_create(loop, NULL, e2e_dispatch, base), 0);
	return base;
}
