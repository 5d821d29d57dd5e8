// SPDX-License-Identifier: MIT
/*
 * The order iwarp-dump reports in: every handshake frame and FPDU of every
 * connection becomes an event at the frame where its last octet arrived,
 * and events are judged and printed in frame order, as tshark shows them.
 * Judging in that order also lets a Read Response meet the Read Request
 * it answers, and the first FPDUs of each side meet the handshake.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "dump.h"

enum ev_kind {
	EV_FRAME, /* a handshake frame */
	EV_FPDU,
	EV_STOP,  /* the walk of a direction ends early */
};

struct event {
	uint32_t frame;
	uint32_t seq; /* order of creation, for events of one frame */
	struct dump_conn *c;
	uint8_t side;
	uint8_t kind;
	int rc;	      /* EV_STOP: why */
	size_t pos;   /* buffer offset of the FPDU */
};

struct timeline {
	struct event *ev;
	size_t n, cap;
};

static int add(struct timeline *t, uint32_t frame, struct dump_conn *c,
	       int side, enum ev_kind kind, size_t pos, int rc)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct event *ev = realloc(t->ev, cap * sizeof(*ev));

		if (!ev)
			return -ENOMEM;
		t->ev = ev;
		t->cap = cap;
	}
	t->ev[t->n] = (struct event){
		.frame = frame, .seq = (uint32_t)t->n, .c = c,
		.side = (uint8_t)side, .kind = (uint8_t)kind, .rc = rc,
		.pos = pos,
	};
	t->n++;
	return 0;
}

static void scanner_for(struct mpa_scanner *sc, const struct dump_conn *c,
			const struct dump_dir *dir)
{
	mpa_scan_init(sc, dir->data, dir->len, dir->fpdu_base, dir->markers,
		      c->crc);
}

/*
 * First walk over one direction: where each FPDU ends, and the Read
 * Requests it carries for the other direction to be matched against.
 */
static int walk_dir(struct dump *d, struct timeline *t, struct dump_conn *c,
		    int side)
{
	struct dump_dir *dir = &c->dir[side];
	struct mpa_scanner sc;
	int rc;

	scanner_for(&sc, c, dir);
	for (;;) {
		size_t pos = sc.pos;
		uint32_t frame;

		rc = mpa_scan_next(&sc, d->ulpdu, sizeof(d->ulpdu), &d->fpdu);
		if (rc != 1)
			break;
		frame = dump_frame_at(dir, sc.pos - 1);
		dump_rdmap_collect(dir, d->ulpdu, d->fpdu.ulpdu_len, frame);
		if (add(t, frame, c, side, EV_FPDU, pos, 0))
			return -ENOMEM;
	}
	/* lost framing is named where it is lost, a later hole or not */
	if (rc < 0 && rc != -EAGAIN) {
		if (add(t, dump_frame_at(dir, sc.pos), c, side, EV_STOP,
			sc.pos, rc))
			return -ENOMEM;
		rc = 0;
	}
	if (dir->gap)
		return add(t, dir->gap_frame, c, side, EV_STOP, sc.pos, 0);
	if (rc == 0)
		return 0;
	return add(t, dump_frame_at(dir, dir->len - 1), c, side, EV_STOP,
		   sc.pos, rc);
}

static int collect(struct dump *d, struct timeline *t, struct dump_conn *c)
{
	int ini = c->initiator;

	for (int k = 0; k < 2; k++) {
		int side = k ? !ini : ini;
		const struct dump_hs_frame *hf = k ? &c->hs.rep : &c->hs.req;

		if (hf->rc != DUMP_HS_ABSENT && hf->rc != DUMP_HS_SKIPPED &&
		    add(t, hf->frame, c, side, EV_FRAME, 0, 0))
			return -ENOMEM;
	}
	/* no handshake, framing from the options: said where the data begins */
	if (c->hs.req.rc == DUMP_HS_SKIPPED && c->decode &&
	    add(t, dump_first_frame(c), c, ini, EV_FRAME, 0, 0))
		return -ENOMEM;
	for (int k = 0; k < 2; k++) {
		int side = k ? !ini : ini;
		const struct dump_dir *dir = &c->dir[side];

		if (dir->decode && walk_dir(d, t, c, side))
			return -ENOMEM;
		/* a hole before any FPDU is worth a word as well */
		if (!dir->decode && dir->gap &&
		    add(t, dir->gap_frame, c, side, EV_STOP, dir->len, 0))
			return -ENOMEM;
	}
	return 0;
}

static int by_frame(const void *a, const void *b)
{
	const struct event *x = a, *y = b;

	if (x->frame != y->frame)
		return x->frame < y->frame ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void show_fpdu(struct dump *d, const struct event *e)
{
	struct dump_conn *c = e->c;
	struct dump_dir *dir = &c->dir[e->side];
	struct mpa_scan_fpdu *f = &d->fpdu;
	struct mpa_scanner sc;
	struct dump_msg m;

	scanner_for(&sc, c, dir);
	sc.pos = e->pos;
	if (mpa_scan_next(&sc, d->ulpdu, sizeof(d->ulpdu), f) != 1)
		return; /* the first walk found it; it cannot differ now */
	d->fpdus++;
	dir->st.fpdus++;
	dir->st.wire_octets += f->wire_len;
	if (!dir->first_fpdu_frame) {
		dump_first_fpdu_check(d, c, e->side, dump_frame_at(dir, e->pos));
		dir->first_fpdu_frame = e->frame;
	}
	dump_fpdu_check(d, c, e->side, e->frame, f);
	dump_rdmap_judge(d, c, e->side, e->frame, e->pos, d->ulpdu,
			 f->ulpdu_len, &m);
	if (d->opt.quiet)
		return;
	dump_line_start(d, e->frame, e->pos, dir);
	dump_print_fpdu(c, e->side, f, &m);
	dump_print_details(d, f, &m, d->ulpdu);
}

/* Why a direction's FPDUs end before its octets do. */
static void show_stop(struct dump *d, const struct event *e)
{
	struct dump_conn *c = e->c;
	struct dump_dir *dir = &c->dir[e->side];
	struct mpa_scan_fpdu *f = &d->fpdu;
	struct mpa_scanner sc;

	if (e->rc == 0 && dir->gap) {
		dump_notice(d, e->frame, e->pos,
			    "%s: %llu octets missing after TCP stream offset %zu; decoding of this direction stops there",
			    dir->name, (unsigned long long)dir->gap_len,
			    dir->len);
		return;
	}
	scanner_for(&sc, c, dir);
	sc.pos = e->pos;
	mpa_scan_next(&sc, NULL, 0, f);
	if (e->rc == -IW_EMPA_ULPDU_TOO_LONG) {
		dump_violation(d, c, dir, e->frame, e->pos,
			       "ULPDU_LENGTH %u at stream offset %llu: with markers no FPDUPTR reaches across such an FPDU; framing is lost",
			       f->ulpdu_len, (unsigned long long)f->off);
	} else if (dir->fin) {
		dump_violation(d, c, dir, e->frame, e->pos,
			       "%s: stream closed %llu octets into an FPDU%s",
			       dir->name, (unsigned long long)f->wire_len,
			       f->have_len ? "" : " before its ULPDU_LENGTH");
	} else {
		dump_notice(d, e->frame, e->pos,
			    "%s: input ends %llu octets into an FPDU",
			    dir->name, (unsigned long long)f->wire_len);
	}
}

/*
 * Collects the events of every connection, then judges and prints them in
 * frame order.  Returns 0 or -ENOMEM.
 */
int dump_timeline(struct dump *d)
{
	struct timeline t = { 0 };

	for (struct dump_conn *c = d->conns; c; c = c->next)
		if (collect(d, &t, c)) {
			free(t.ev);
			return -ENOMEM;
		}
	/* no event at all: no array either, which qsort() may not take */
	if (t.n)
		qsort(t.ev, t.n, sizeof(*t.ev), by_frame);
	for (size_t i = 0; i < t.n; i++) {
		const struct event *e = &t.ev[i];

		if (e->kind == EV_FRAME)
			dump_handshake_print(d, e->c, e->side);
		else if (e->kind == EV_FPDU)
			show_fpdu(d, e);
		else
			show_stop(d, e);
		dump_flush(d);
	}
	free(t.ev);
	return 0;
}
