// SPDX-License-Identifier: MIT
/* The application's own event loop, for tests that run one (e2e.h). */
#include <event2/event.h>

#include "e2e.h"

void *e2e_dispatch(void *base)
{
	event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY);
	return NULL;
}
