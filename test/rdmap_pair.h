/* SPDX-License-Identifier: MIT */
/*
 * Two RDMAP engines wired back to back in memory: what one gathers is fed
 * to the other, cut at random points, optionally through the direct
 * placement path.  Completions and events are recorded per side.
 */
#ifndef IW_TEST_RDMAP_PAIR_H
#define IW_TEST_RDMAP_PAIR_H

#include "rdmap/rdmap.h"
#include "testutil.h"

#define PAIR_MAX_CQES 65536
#define PAIR_MAX_EVENTS 16
#define PAIR_PD 1

struct pair_side {
	struct rdmap_qp qp;
	struct ddp_stag_table stags;
	struct rdmap_srq srq;
	bool use_srq;
	struct rdmap_cqe *cqe;
	uint32_t n_cqe;
	uint32_t n_complete_calls; /* complete() calls that brought them */
	struct rdmap_event ev[PAIR_MAX_EVENTS];
	struct rdmap_term ev_term[PAIR_MAX_EVENTS];
	uint32_t n_ev;
	int feed_err; /* what rdmap_rx_feed last refused with */
	/* every octet this side wrote, for tests that inspect the wire */
	uint8_t *wire;
	size_t wire_len, wire_cap;
};

struct pair_opts {
	bool crc;
	bool markers;	/* both directions */
	uint16_t emss;	/* MULPDU derives from it */
	uint16_t mulpdu, max_ulpdu; /* when set, taken as they are */
	uint16_t mulpdu_max; /* what rdmap_set_mulpdu() may raise it to */
	uint16_t ird, ord;
	uint8_t rtr;	/* peer-to-peer RTR type, 0 for none */
	bool responder_first; /* the responder needs no first FPDU */
	uint32_t sq_depth, rq_depth, max_sge, max_inline;
	bool srq;	/* side 1 takes its receives from an SRQ */
	/* side 1 checks STags in this table (another pair's, say), not its own */
	struct ddp_stag_table *shared_stags;
	uint32_t pd1;	/* side 1's protection domain; 0 for PAIR_PD */
	bool record_wire;
	uint8_t ext[2];	/* RFC 7306 extensions (RDMAP_EXT_*) per side */
};

struct pair {
	struct pair_side s[2]; /* 0 initiator, 1 responder */
	struct rng *rng;
	size_t max_cut;	 /* longest piece handed to rx_feed at once */
	bool direct;	 /* use rdmap_rx_direct when it offers a window */
	size_t max_chunk; /* longest piece taken from tx at once */
};

/* Records completions and events in the struct pair_side given as arg. */
extern const struct rdmap_ops pair_ops;

void pair_opts_default(struct pair_opts *o);
void pair_init(struct pair *p, const struct pair_opts *o, struct rng *r);
/* The same after seeding @r for the test @name (the seed is logged). */
void pair_init_seeded(struct pair *p, const struct pair_opts *o,
		      struct rng *r, const char *name, uint64_t seed);
/* A signalled send work request over @n SGEs. */
struct rdmap_send_wr pair_send_wr(uint64_t id, uint8_t op,
				  const struct rdmap_sge *sge, uint32_t n);
void pair_fini(struct pair *p);
/* Moves octets both ways until neither side has anything to send. */
void pair_pump(struct pair *p);
/* Moves octets from side @from only, at most @max. */
size_t pair_pump_one(struct pair *p, int from, size_t max);
/* Feeds raw octets to side @to as if its peer had sent them. */
int pair_inject(struct pair *p, int to, const uint8_t *b, size_t len);

/* Registers a fresh buffer in a side's table and PD; returns its STag. */
uint32_t pair_reg(struct pair *p, int side, void *buf, size_t len,
		  uint32_t access);

#endif /* IW_TEST_RDMAP_PAIR_H */
