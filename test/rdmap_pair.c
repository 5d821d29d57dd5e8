// SPDX-License-Identifier: MIT
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "rdmap_pair.h"

#define PAIR_BUF (1u << 20)

static void on_complete(void *arg, const struct rdmap_cqe *cqe,
			unsigned int n)
{
	struct pair_side *s = arg;

	require(n >= 1 && n <= RDMAP_CQE_RUN, "complete() with %u", n);
	s->n_complete_calls++;
	for (unsigned int i = 0; i < n; i++) {
		require(s->n_cqe < PAIR_MAX_CQES, "completion log full");
		s->cqe[s->n_cqe++] = cqe[i];
	}
}

static void on_event(void *arg, const struct rdmap_event *ev)
{
	struct pair_side *s = arg;

	require(s->n_ev < PAIR_MAX_EVENTS, "event log full");
	s->ev[s->n_ev] = *ev;
	if (ev->term) {
		s->ev_term[s->n_ev] = *ev->term;
		s->ev[s->n_ev].term = &s->ev_term[s->n_ev];
	}
	s->n_ev++;
}

const struct rdmap_ops pair_ops = { on_complete, on_event };

void pair_opts_default(struct pair_opts *o)
{
	*o = (struct pair_opts){
		.emss = 1460, .ird = 8, .ord = 8,
		.sq_depth = 256, .rq_depth = 256, .max_sge = 6,
		.max_inline = 128,
	};
}

void pair_init(struct pair *p, const struct pair_opts *o, struct rng *r)
{
	memset(p, 0, sizeof(*p));
	p->rng = r;
	p->max_cut = 1 << 20;
	p->max_chunk = 256 * 1024;
	for (int i = 0; i < 2; i++) {
		struct pair_side *s = &p->s[i];
		bool shared = i == 1 && o->shared_stags;
		struct rdmap_qp_attr attr = {
			.sq_depth = o->sq_depth, .rq_depth = o->rq_depth,
			.max_sge = o->max_sge, .max_inline = o->max_inline,
			.pd = i == 1 && o->pd1 ? o->pd1 : PAIR_PD,
			.stags = shared ? o->shared_stags : &s->stags,
			.ext = o->ext[i],
		};
		struct rdmap_conn conn = {
			.initiator = i == 0, .crc = o->crc,
			.markers_tx = o->markers, .markers_rx = o->markers,
			.mulpdu = o->mulpdu ? o->mulpdu
					    : mpa_mulpdu(o->emss, o->markers),
			.max_ulpdu = o->max_ulpdu ? o->max_ulpdu : 0xffff,
			.mulpdu_max = o->mulpdu_max,
			.ird = o->ird, .ord = o->ord, .rtr = o->rtr,
			.responder_first = o->responder_first,
		};

		s->cqe = calloc(PAIR_MAX_CQES, sizeof(*s->cqe));
		ck_assert_ptr_nonnull(s->cqe);
		if (!shared)
			ck_assert_int_eq(ddp_stag_table_init(&s->stags, 4096),
					 0);
		if (o->srq && i == 1) {
			ck_assert_int_eq(rdmap_srq_init(&s->srq, attr.stags,
							attr.pd, o->rq_depth,
							o->max_sge),
					 0);
			s->use_srq = true;
			attr.srq = &s->srq;
		}
		ck_assert_int_eq(rdmap_qp_init(&s->qp, &attr, &pair_ops, s), 0);
		ck_assert_int_eq(rdmap_qp_start(&s->qp, &conn), 0);
		if (o->record_wire) {
			s->wire_cap = 4u << 20;
			s->wire = malloc(s->wire_cap);
			ck_assert_ptr_nonnull(s->wire);
		}
	}
}

void pair_init_seeded(struct pair *p, const struct pair_opts *o,
		      struct rng *r, const char *name, uint64_t seed)
{
	rng_seed(r, name, seed);
	pair_init(p, o, r);
}

struct rdmap_send_wr pair_send_wr(uint64_t id, uint8_t op,
				  const struct rdmap_sge *sge, uint32_t n)
{
	return (struct rdmap_send_wr){ .wr_id = id, .op = op,
				       .flags = RDMAP_WR_SIGNALED, .sge = sge,
				       .num_sge = n };
}

void pair_fini(struct pair *p)
{
	for (int i = 0; i < 2; i++) {
		struct pair_side *s = &p->s[i];
		bool own = s->qp.attr.stags == &s->stags;

		rdmap_qp_fini(&s->qp);
		if (s->use_srq)
			rdmap_srq_fini(&s->srq);
		if (own)
			ddp_stag_table_destroy(&s->stags);
		free(s->cqe);
		free(s->wire);
	}
}

uint32_t pair_reg(struct pair *p, int side, void *buf, size_t len,
		  uint32_t access)
{
	uint32_t stag;

	ck_assert_int_eq(ddp_mr_register(p->s[side].qp.attr.stags,
					 p->s[side].qp.attr.pd,
					 (uint64_t)(uintptr_t)buf, buf, len,
					 access, &stag),
			 0);
	return stag;
}

/* Feeds @len octets to @to, cut at random, through the window when asked. */
static void deliver(struct pair *p, int to, const uint8_t *b, size_t len)
{
	struct pair_side *s = &p->s[to];
	size_t i = 0;

	while (i < len && !s->feed_err) {
		size_t n = (size_t)rng_range(p->rng, 1, p->max_cut);
		size_t win;
		uint8_t *dst;
		int rc;

		if (p->direct && (dst = rdmap_rx_direct(&s->qp, &win)) != NULL) {
			if (win > len - i)
				win = len - i;
			memcpy(dst, b + i, win);
			rc = rdmap_rx_direct_done(&s->qp, win);
			require(rc == 0, "direct placement refused: %d", rc);
			i += win;
			continue;
		}
		if (n > len - i)
			n = len - i;
		rc = rdmap_rx_feed(&s->qp, b + i, n);
		if (rc)
			s->feed_err = rc;
		i += n;
	}
}

int pair_inject(struct pair *p, int to, const uint8_t *b, size_t len)
{
	deliver(p, to, b, len);
	return p->s[to].feed_err;
}

size_t pair_pump_one(struct pair *p, int from, size_t max)
{
	static uint8_t buf[PAIR_BUF];
	struct pair_side *s = &p->s[from];
	struct iovec iov[512];
	size_t limit = max < p->max_chunk ? max : p->max_chunk, k = 0;
	int n;

	if (limit > sizeof(buf))
		limit = sizeof(buf);
	n = rdmap_tx_gather(&s->qp, iov, 512, limit);
	for (int i = 0; i < n; i++) {
		memcpy(buf + k, iov[i].iov_base, iov[i].iov_len);
		k += iov[i].iov_len;
	}
	if (!k)
		return 0;
	/* like a socket that took only part of what was offered */
	if (k > 1 && rng_next(p->rng) % 4 == 0)
		k = (size_t)rng_range(p->rng, 1, k);
	rdmap_tx_advance(&s->qp, k);
	/* what is built ahead is accounted for exactly */
	require(s->qp.fpdu_count || s->qp.fpdu_bytes == 0,
		"%zu octets built ahead, no FPDU", s->qp.fpdu_bytes);
	if (s->wire && s->wire_len + k <= s->wire_cap) {
		memcpy(s->wire + s->wire_len, buf, k);
		s->wire_len += k;
	}
	deliver(p, !from, buf, k);
	return k;
}

void pair_pump(struct pair *p)
{
	for (int rounds = 0; rounds < 10000000; rounds++) {
		size_t moved = pair_pump_one(p, 0, SIZE_MAX);

		moved += pair_pump_one(p, 1, SIZE_MAX);
		if (!moved)
			return;
	}
	ck_abort_msg("pair_pump: the engines never went quiet");
}
