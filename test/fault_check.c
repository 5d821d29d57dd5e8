// SPDX-License-Identifier: MIT
/*
 * The judgement of a check_faults run, once both sides are torn down:
 * whatever the fault, memory as it may be and successes true; a fault the
 * stream survives, everything done; a changed octet with CRC, the RFC's
 * Terminate; a handshake cut, no connection.
 */
#include <string.h>

#include "fault_run_internal.h"

/* @what octets of @reg: each as it was, or (@may_change) as the work put it. */
static bool check_region(struct run *r, struct side *s, size_t from,
			 size_t len, bool may_change, const char *what)
{
	for (size_t i = from; i < from + len; i++) {
		uint8_t v = s->arena[i];

		if (v == s->initial[i] || (may_change && v == s->final[i]))
			continue;
		return flunk(r, "%s: %s octet %zu is 0x%02x: it was 0x%02x%s%02x",
			    s->name, what, i, v, s->initial[i],
			    may_change ? " and would be 0x" : "",
			    may_change ? s->final[i] : v);
	}
	return true;
}

/*
 * Guards and the regions nobody writes are as they were; the others hold
 * old or new octets only (@data_checked; without CRC a corrupted octet
 * may land as it is, within a region that may be written).
 */
static bool check_memory(struct run *r, bool data_checked)
{
	for (int k = 0; k < 2; k++) {
		struct side *s = &r->s[k];

		for (int g = 0; g <= N_REGIONS; g++)
			if (!check_region(r, s, region_at(g) - GUARD, GUARD,
					  false, "guard"))
				return false;
		if (!check_region(r, s, region_at(SRC), REGION, false,
				  "source region"))
			return false;
		for (int g = RECV; g < N_REGIONS && data_checked; g++)
			if (!check_region(r, s, region_at(g), REGION, true,
					  "target region"))
				return false;
	}
	return true;
}

/*
 * A receive that took Immediate Data says so and holds the value; the
 * Write before it has landed whole (RFC 7306: the Immediate Data comes
 * after it on the same stream).
 */
static bool check_imm_receive(struct run *r, struct side *s, int j, int id)
{
	size_t at = region_at(TARGET) + s->recv_write_off[j];
	bool imm = s->wc_flags[id] & IW_WC_WITH_IMM;

	if (imm != s->recv_imm[j])
		return flunk(r, "%s: receive %d: %s Immediate Data", s->name, j,
			    imm ? "unexpected" : "no");
	if (!imm)
		return true;
	if (s->wc_imm[id] != s->recv_imm_data[j])
		return flunk(r, "%s: receive %d: immediate 0x%016llx, sent "
			       "0x%016llx",
			    s->name, j, (unsigned long long)s->wc_imm[id],
			    (unsigned long long)s->recv_imm_data[j]);
	if (memcmp(s->arena + at, s->final + at, s->recv_byte_len[j]))
		return flunk(r, "%s: receive %d: Immediate Data before its "
			       "Write had landed",
			    s->name, j);
	return true;
}

/* What a completion calls a success holds what was sent, whole. */
static bool check_successes(struct run *r)
{
	for (int k = 0; k < 2; k++) {
		struct side *s = &r->s[k];

		for (int j = 0; j < s->n_recv; j++) {
			size_t at = region_at(RECV) + s->recv_off[j];
			int id = RECV_WR_BASE + j;

			if (!s->done[id] || s->wc_status[id] != IW_WC_SUCCESS)
				continue;
			if (s->wc_len[id] != s->recv_byte_len[j])
				return flunk(r, "%s: receive %d: %u octets, sent %u",
					    s->name, j, s->wc_len[id],
					    s->recv_byte_len[j]);
			if (memcmp(s->arena + at, s->final + at, s->recv_len[j]))
				return flunk(r, "%s: receive %d succeeded with "
					       "data not sent",
					    s->name, j);
			if (!check_imm_receive(r, s, j, id))
				return false;
		}
		for (int i = 0; i < s->n_ops; i++) {
			const struct op *o = &s->ops[i];
			size_t at = region_at(SINK) + o->dst_off;

			if ((o->kind != OP_READ && o->kind != OP_FETCH_ADD) ||
			    !s->done[i] || s->wc_status[i] != IW_WC_SUCCESS)
				continue;
			if (memcmp(s->arena + at, s->final + at, o->len))
				return flunk(r, "%s: %s %d succeeded with data "
					       "not in the %s",
					    s->name, op_names[o->kind], i,
					    o->kind == OP_READ ? "source"
							       : "target");
		}
	}
	return true;
}

/* Faults the stream survives: everything arrives, nothing fails. */
static bool check_clean(struct run *r)
{
	for (int k = 0; k < 2; k++) {
		struct side *s = &r->s[k];

		if (!s->established)
			return flunk(r, "%s: not established (%s: %s)", s->name,
				    iw_cm_event_str(s->final_ev),
				    iw_strerror(s->status));
		if (s->final_ev != IW_CM_EVENT_DISCONNECTED)
			return flunk(r, "%s: ended with %s: %s", s->name,
				    iw_cm_event_str(s->final_ev),
				    iw_strerror(s->status));
		for (int id = 0; id < MAX_WR; id++)
			if (s->posted[id] && s->wc_status[id] != IW_WC_SUCCESS)
				return flunk(r, "%s: wr_id %d: %s", s->name, id,
					    iw_wc_status_str(s->wc_status[id]));
		for (size_t i = 0; i < s->arena_len; i++)
			if (s->arena[i] != s->final[i])
				return flunk(r, "%s: octet %zu (region %zu, "
						"offset %zu) is 0x%02x, not 0x%02x "
						"(it was 0x%02x)",
					     s->name, i, i / (REGION + GUARD),
					     i % (REGION + GUARD) - GUARD,
					     s->arena[i], s->final[i],
					     s->initial[i]);
	}
	return true;
}

static bool mpa_framing_term(const struct iw_terminate_info *t)
{
	/* LLP layer, MPA: CRC error (0x02), marker or FPDU start (0x03) */
	return t->valid && t->layer == 2 && t->etype == 0 &&
	       (t->ecode == 0x02 || t->ecode == 0x03);
}

/*
 * RFC 5044 section 8: with CRC on, an FPDU octet changed in flight makes
 * its receiver send the MPA Terminate (CRC, or a marker that does not
 * point at the FPDU) and end the stream; the sender receives it.  Due
 * once the receiver has had enough of the stream to judge the FPDU.
 */
static bool check_corruption(struct run *r)
{
	int d = r->f.dir;
	struct side *rx = &r->s[d == 0 ? 1 : 0], *tx = &r->s[d];
	bool due = r->proxy.after[d] >= JUDGED_AFTER;
	bool named = rx->ended && (rx->status == -IW_EMPA_CRC ||
				   rx->status == -IW_EMPA_MARKER);

	if (!r->proxy.struck || !r->proxy.hs_len[d] ||
	    r->f.at < r->proxy.hs_len[d])
		return true; /* not reached, or in the MPA Request or Reply */
	if (!named && !due)
		return true;
	if (!named)
		return flunk(r, "%s: an octet changed at %llu of %llu, %llu "
			       "judged after it, and no CRC Terminate: %s (%s)",
			    rx->name, (unsigned long long)r->f.at,
			    (unsigned long long)r->proxy.fwd[d],
			    (unsigned long long)r->proxy.after[d],
			    iw_cm_event_str(rx->final_ev), iw_strerror(rx->status));
	if (rx->final_ev != IW_CM_EVENT_ERROR || !mpa_framing_term(&rx->term) ||
	    rx->term.received)
		return flunk(r, "%s: %s, not a Terminate sent for it",
			    rx->name, iw_strerror(rx->status));
	if (tx->final_ev != IW_CM_EVENT_ERROR || tx->status != -IW_ETERMINATED ||
	    !tx->term.received || !mpa_framing_term(&tx->term))
		return flunk(r, "%s: did not receive the MPA Terminate: %s (%s); "
				"proxy %llu/%llu octets, eof %d/%d",
			    tx->name, iw_cm_event_str(tx->final_ev),
			    iw_strerror(tx->status),
			    (unsigned long long)r->proxy.fwd[0],
			    (unsigned long long)r->proxy.fwd[1], r->proxy.eof[0],
			    r->proxy.eof[1]);
	return true;
}

/*
 * Whatever the fault: memory as it may be, and successes true.  A fault
 * the stream survives: everything done.  A corrupted octet with CRC: the
 * Terminate.  A handshake cut: no connection.
 */
void fault_judge(struct run *r)
{
	bool data_checked = r->crc || r->f.kind != FAULT_CORRUPT ||
			    !r->proxy.struck;
	bool survivable = r->f.kind == FAULT_NONE || r->f.kind == FAULT_DELAY ||
			  r->f.kind == FAULT_STALL || !r->proxy.struck;

	if (!check_memory(r, data_checked))
		return;
	if (data_checked && !check_successes(r))
		return;
	if (survivable && !check_clean(r))
		return;
	if (r->f.kind == FAULT_CORRUPT && r->crc && !check_corruption(r))
		return;
	if (r->f.kind == FAULT_HS_DROP && r->proxy.struck &&
	    r->s[0].established)
		flunk(r, "client: established through a dropped handshake");
}

