// SPDX-License-Identifier: MIT
/*
 * The plan of a check_faults run, all of it from the seed: the framing
 * (MPA revision, CRC, markers), the private data, the work each side
 * posts (Sends, RDMA Writes and Reads of odd sizes, some before the
 * connection is up; on every third seed RFC 7306 Fetch and Add and Writes
 * with Immediate Data too) and the fault; and what every octet of both
 * sides' memory holds once all that work has landed.
 */
#include <stdio.h>
#include <string.h>

#include "fault_run_internal.h"

/* Odd sizes mostly, from one octet to more than two MULPDUs. */
static uint32_t op_len(struct run *r)
{
	uint64_t p = rng_range(&r->rng, 0, 99);
	uint32_t len = p < 5    ? 0
		       : p < 30 ? (uint32_t)rng_range(&r->rng, 1, 16)
		       : p < 70 ? (uint32_t)rng_range(&r->rng, 17, 4096)
		       : p < 95 ? (uint32_t)rng_range(&r->rng, 4097, 70000)
				: (uint32_t)rng_range(&r->rng, 70001, 140000);

	return len > 1 && !(len & 1) ? len - 1 : len;
}

/* Where each operation's octets go: the region, ours or the peer's. */
static int dst_region(uint8_t kind)
{
	switch (kind) {
	case OP_SEND:
		return RECV;
	case OP_READ:
	case OP_FETCH_ADD: /* the value it returns */
		return SINK;
	default:
		return TARGET;
	}
}

/*
 * Each side's work: up to MAX_OPS operations toward the other, the tail
 * Write, and a closing Send: Sends arrive after the Writes before them,
 * so once each side has received the other's closing Send all the work
 * has landed.  Each operation reads from and lands in places of its own,
 * so that the outcome of every one can be told apart.  With RFC 7306 on,
 * Fetch and Add takes 8 aligned octets of the peer's TARGET and returns
 * them to our SINK, and a Write with Immediate Data also takes one of the
 * peer's receives (in order with the Sends), placing nothing there.
 */
static void plan_ops(struct run *r)
{
	uint32_t src_next[2] = { 0 }, dst_next[2][N_REGIONS] = { { 0 } };
	const uint32_t room = REGION - TAIL_LEN - 1;

	for (int k = 0; k < 2; k++) {
		struct side *s = &r->s[k], *p = &r->s[!k];
		int n = (int)rng_range(&r->rng, 0, MAX_OPS);
		/* the client posts the first of them before it connects (in
		 * order: its Sends meet the server's receives in order) */
		int early = k == 0 ? (int)rng_range(&r->rng, 0, n) : 0;

		for (int i = 0; i <= n + 1; i++) {
			struct op *o = &s->ops[s->n_ops];
			uint32_t *dst, slot = 0;
			int reg;

			o->kind = i == n + 1 ? OP_SEND
				  : i == n   ? OP_WRITE
					     : (uint8_t)rng_range(&r->rng, 0,
								  r->rfc7306 ? 4 : 2);
			o->len = i == n + 1 ? 1 : i == n ? TAIL_LEN : op_len(r);
			if (o->kind == OP_READ && o->len == 0)
				o->len = 1;
			if (o->kind == OP_FETCH_ADD) {
				o->len = ATOMIC_LEN;
				slot = (dst_next[!k][TARGET] + 7) & ~7u;
			}
			reg = dst_region(o->kind);
			/*
			 * A Read and an atomic land in our own SINK, the
			 * others in the peer's; room is kept for the tail and
			 * the close.
			 */
			dst = &dst_next[reg == SINK ? k : !k][reg];
			if (i < n &&
			    (*dst + o->len > room ||
			     slot + ATOMIC_LEN > room ||
			     ((o->kind != OP_READ && o->kind != OP_FETCH_ADD) &&
			      src_next[k] + o->len > room)))
				continue;
			if (o->kind == OP_READ) {
				o->src_off = (uint32_t)rng_range(&r->rng, 0,
								 REGION - o->len);
			} else if (o->kind == OP_FETCH_ADD) {
				o->src_off = slot;
				dst_next[!k][TARGET] = slot + ATOMIC_LEN;
				o->value = rng_next(&r->rng);
			} else {
				o->src_off = src_next[k];
				src_next[k] += o->len;
			}
			o->dst_off = *dst;
			*dst += o->len;
			o->early = i < early;
			if (o->kind == OP_SEND || o->kind == OP_WRITE_IMM) {
				int j = p->n_recv++;

				p->recv_off[j] = o->kind == OP_SEND
							 ? o->dst_off
							 : dst_next[!k][RECV];
				p->recv_len[j] = o->kind == OP_SEND ? o->len : 0;
				p->recv_byte_len[j] = o->len;
				p->recv_imm[j] = o->kind == OP_WRITE_IMM;
				if (p->recv_imm[j]) {
					o->value = rng_next(&r->rng);
					p->recv_imm_data[j] = o->value;
					p->recv_write_off[j] = o->dst_off;
				}
			}
			s->n_ops++;
		}
	}
}

/* Octets each direction carries, near enough to aim a fault at. */
static uint64_t planned(struct run *r, int dir)
{
	uint64_t n = 20 + (r->rev == 2 ? 4 : 0) + (dir == 0 ? r->pd_len : 0);

	for (int k = 0; k < 2; k++)
		for (int i = 0; i < r->s[k].n_ops; i++) {
			const struct op *o = &r->s[k].ops[i];
			/* a Read's data flows toward the side that reads */
			int d = o->kind == OP_READ ? !k : k;

			if (o->kind == OP_FETCH_ADD)
				n += dir == k ? 72 : 32; /* request, response */
			else if (d == dir)
				n += o->len + o->len / 8 + 32 +
				     (o->kind == OP_WRITE_IMM ? 32 : 0);
		}
	return n;
}

static void plan_fault(struct run *r)
{
	static const uint8_t weights[FAULT_KINDS] = {
		[FAULT_NONE] = 10, [FAULT_DELAY] = 10, [FAULT_STALL] = 15,
		[FAULT_RESET] = 15, [FAULT_HALF_CLOSE] = 15,
		[FAULT_HS_DROP] = 10, [FAULT_CORRUPT] = 25,
	};
	uint64_t w = rng_range(&r->rng, 0, 99), hs;
	struct fault *f = &r->f;

	f->kind = FAULT_NONE;
	while (w >= weights[f->kind])
		w -= weights[f->kind++];
	f->dir = (int)rng_range(&r->rng, 0, 1);
	hs = 20 + (r->rev == 2 ? 4 : 0) + (f->dir == 0 ? r->pd_len : 0);
	if (f->kind == FAULT_HS_DROP ||
	    (f->kind == FAULT_CORRUPT && rng_range(&r->rng, 0, 4) == 0))
		f->at = rng_range(&r->rng, 0, hs - 1);
	else
		f->at = rng_range(&r->rng, 0, planned(r, f->dir));
	f->ms = (int)rng_range(&r->rng, 50, 400);
	f->rst = rng_range(&r->rng, 0, 1);
	f->mask = (uint8_t)rng_range(&r->rng, 1, 255);
}

void fault_plan(struct run *r, uint64_t seed)
{
	r->rng.s = seed ? seed : 1;
	/* every third seed, without changing what the others draw */
	r->rfc7306 = seed % 3 == 1;
	r->rev = rng_range(&r->rng, 0, 9) ? 2 : 1;
	r->crc = rng_range(&r->rng, 0, 1);
	r->markers = rng_range(&r->rng, 0, 9) < 3;
	r->pd_len = (uint16_t)rng_range(&r->rng, 0, 48);
	plan_ops(r);
	plan_fault(r);
	snprintf(r->res->what, sizeof(r->res->what),
		 "rev %u CRC %s markers %s pd %u%s, ops %d+%d, fault %s dir %d "
		 "at %llu",
		 r->rev, r->crc ? "on" : "off", r->markers ? "on" : "off",
		 r->pd_len, r->rfc7306 ? " RFC 7306" : "", r->s[0].n_ops, r->s[1].n_ops,
		 fault_names[r->f.kind], r->f.dir, (unsigned long long)r->f.at);
}

/* What each octet holds once all the work of both sides has landed. */
void fault_expect_final(struct run *r)
{
	for (int k = 0; k < 2; k++)
		memcpy(r->s[k].final, r->s[k].initial, r->s[k].arena_len);
	for (int k = 0; k < 2; k++) {
		struct side *s = &r->s[k], *p = &r->s[!k];

		for (int i = 0; i < s->n_ops; i++) {
			const struct op *o = &s->ops[i];
			uint64_t v;

			switch (o->kind) {
			case OP_READ:
				memcpy(s->final + region_at(SINK) + o->dst_off,
				       p->initial + region_at(SRC) + o->src_off,
				       o->len);
				break;
			case OP_FETCH_ADD:
				/* its own slot: the value it found was initial */
				memcpy(&v, p->initial + region_at(TARGET) +
						   o->src_off,
				       sizeof(v));
				memcpy(s->final + region_at(SINK) + o->dst_off, &v,
				       sizeof(v));
				v += o->value;
				memcpy(p->final + region_at(TARGET) + o->src_off,
				       &v, sizeof(v));
				break;
			default:
				memcpy(p->final + region_at(dst_region(o->kind)) +
					       o->dst_off,
				       s->initial + region_at(SRC) + o->src_off,
				       o->len);
				break;
			}
		}
	}
}
