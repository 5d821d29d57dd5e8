/* SPDX-License-Identifier: MIT */
/*
 * A fault-injecting TCP proxy for check_faults: it stands between the two
 * ends of one connection on 127.0.0.1 and forwards each direction cut at
 * random points (re-segmented, with short pauses), and applies one fault
 * at a chosen octet of one direction.  All its choices come from its own
 * seeded generator; it runs in a thread of its own.
 */
#ifndef IW_TEST_FAULT_PROXY_H
#define IW_TEST_FAULT_PROXY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "testutil.h"

enum fault_kind {
	FAULT_NONE,	  /* re-segmentation and pauses only */
	FAULT_DELAY,	  /* the direction waits @ms before it goes on */
	FAULT_STALL,	  /* the direction is not read for @ms: window 0 */
	FAULT_RESET,	  /* both connections reset */
	FAULT_HALF_CLOSE, /* a FIN to the receiver; the rest is dropped */
	FAULT_HS_DROP,	  /* closed (or reset) inside the MPA handshake */
	FAULT_CORRUPT,	  /* one octet changed */
	FAULT_KINDS
};

extern const char *const fault_names[FAULT_KINDS];

/* Direction 0 carries the client's octets to the server, 1 the reverse. */
struct fault {
	enum fault_kind kind;
	int dir;
	uint64_t at; /* octet of the direction where it strikes */
	int ms;	     /* DELAY, STALL */
	bool rst;    /* HS_DROP: a reset rather than a FIN */
	uint8_t mask; /* CORRUPT: the octet is XORed with it (nonzero) */
};

struct fault_proxy {
	uint16_t port;	      /* where the client connects */
	uint16_t target_port; /* the server's listener */
	struct fault f;
	struct rng rng;
	int lfd;
	pthread_t thread;
	atomic_bool stop;
	/* what happened, valid after fault_proxy_stop() */
	uint64_t fwd[2];      /* octets delivered in each direction */
	uint64_t hs_len[2];   /* the direction's MPA frame length, 0: unknown */
	bool struck;	      /* the fault was applied */
	uint64_t after[2];    /* octets delivered after the fault, per direction */
	bool eof[2];	      /* the direction's sender closed */
	char err[128];	      /* the proxy's own failure, if any */
};

/* Listens on 127.0.0.1 (port in p->port) and starts the thread. */
int fault_proxy_start(struct fault_proxy *p, uint16_t target_port,
		      const struct fault *f, uint64_t seed);
/* Stops the thread (bounded) and closes every socket. */
void fault_proxy_stop(struct fault_proxy *p);

#endif /* IW_TEST_FAULT_PROXY_H */
