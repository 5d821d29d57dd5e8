// SPDX-License-Identifier: MIT
/*
 * What iwarp-dump prints: one line per handshake frame and per FPDU in the
 * manner of tshark, the headers in full (-v) and the ULPDU in hex (-x),
 * violations and notices each on a line of their own that names the frame,
 * and a summary per connection and direction with a last line for scripts.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/byteorder.h"
#include "dump.h"

#define PD_SHOWN 16 /* private data octets shown on the line */

static void endpoint(const struct dump_conn *c, int side, char *out,
		     size_t cap)
{
	char a[INET6_ADDRSTRLEN];

	inet_ntop(c->family, c->addr[side], a, sizeof(a));
	snprintf(out, cap, c->family == AF_INET6 ? "[%s]:%u" : "%s:%u", a,
		 c->port[side]);
}

/* Names each direction: by addresses, or by the raw file it came from. */
void dump_dir_names(struct dump_conn *c, const char *raw0, const char *raw1)
{
	char a[64], b[64];

	if (!c->family) {
		snprintf(c->dir[0].name, sizeof(c->dir[0].name), "%s", raw0);
		snprintf(c->dir[1].name, sizeof(c->dir[1].name), "%s",
			 raw1 ? raw1 : "(other direction)");
		return;
	}
	endpoint(c, 0, a, sizeof(a));
	endpoint(c, 1, b, sizeof(b));
	snprintf(c->dir[0].name, sizeof(c->dir[0].name), "%s → %s", a, b);
	snprintf(c->dir[1].name, sizeof(c->dir[1].name), "%s → %s", b, a);
}

/* ---- violations and notices ------------------------------------------ */

static void where(const struct dump *d, uint32_t frame, uint64_t off,
		  char *out, size_t cap)
{
	if (d->raw)
		snprintf(out, cap, "offset %llu: ", (unsigned long long)off);
	else if (frame)
		snprintf(out, cap, "frame %u: ", frame);
	else
		out[0] = 0;
}

static void pend(struct dump *d, const char *kind, uint32_t frame,
		 uint64_t off, const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));

static void pend(struct dump *d, const char *kind, uint32_t frame,
		 uint64_t off, const char *fmt, va_list ap)
{
	char place[48], text[512], *line;

	if (d->n_pending == DUMP_MAX_PENDING) {
		d->n_dropped++;
		return;
	}
	where(d, frame, off, place, sizeof(place));
	vsnprintf(text, sizeof(text), fmt, ap);
	line = malloc(strlen(kind) + strlen(place) + strlen(text) + 1);
	if (!line) {
		d->n_dropped++;
		return;
	}
	sprintf(line, "%s%s%s", kind, place, text);
	d->pending[d->n_pending++] = line;
}

/*
 * A broken rule, counted for the direction (or, with @dir NULL, for the
 * connection) and printed after the line being built.
 */
void dump_violation(struct dump *d, struct dump_conn *c, struct dump_dir *dir,
		    uint32_t frame, uint64_t off, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pend(d, "violation: ", frame, off, fmt, ap);
	va_end(ap);
	d->violations++;
	if (dir)
		dir->st.violations++;
	else if (c)
		c->violations++;
}

/*
 * A field the sender must zero and the receiver must ignore is not zero:
 * wrong, but harmless to a peer.  With --strict it is a violation.
 */
void dump_warning(struct dump *d, struct dump_conn *c, struct dump_dir *dir,
		  uint32_t frame, uint64_t off, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pend(d, d->opt.strict ? "violation: " : "warning: ", frame, off, fmt,
	     ap);
	va_end(ap);
	if (d->opt.strict) {
		d->violations++;
		if (dir)
			dir->st.violations++;
		else if (c)
			c->violations++;
		return;
	}
	d->warnings++;
	if (dir)
		dir->st.warnings++;
	else if (c)
		c->warnings++;
}

/* Something the decoder could not do, or assumed; not a broken rule. */
void dump_notice(struct dump *d, uint32_t frame, uint64_t off,
		 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pend(d, "notice: ", frame, off, fmt, ap);
	va_end(ap);
	d->notices++;
}

void dump_flush(struct dump *d)
{
	for (unsigned int i = 0; i < d->n_pending; i++) {
		puts(d->pending[i]);
		free(d->pending[i]);
	}
	if (d->n_dropped)
		printf("notice: %u more findings at this point not shown; the summary counts them\n",
		       d->n_dropped);
	d->n_pending = 0;
	d->n_dropped = 0;
}

/* ---- lines ----------------------------------------------------------- */

/* "   12    3.053807 A:p → B:p ", or the offset in a raw file. */
void dump_line_start(const struct dump *d, uint32_t frame, uint64_t off,
		     const struct dump_dir *dir)
{
	if (d->raw) {
		printf("%9llu %s ", (unsigned long long)off, dir->name);
		return;
	}
	{
		const struct timeval *t = &d->ts[frame - 1], *t0 = &d->ts[0];
		double rel = (double)(t->tv_sec - t0->tv_sec) +
			     (double)(t->tv_usec - t0->tv_usec) / 1e6;

		printf("%5u %11.6f %s ", frame, rel, dir->name);
	}
}

const char *dump_rtr_words(uint8_t rtr)
{
	static const char *const words[] = {
		"none", "Send", "Write", "Send/Write",
		"Read", "Send/Read", "Write/Read", "Send/Write/Read",
	};

	return words[rtr & MPA_RTR_ALL];
}

static void hex(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		printf("%02x", p[i]);
}

/* RFC 5044 section 7.1 fields, and RFC 6581's for an enhanced frame. */
void dump_print_frame(const struct mpa_frame *f)
{
	printf("MPA %s rev %u M%d C%d R%d H%d", f->reply ? "Reply" : "Request",
	       f->rev, f->m, f->c, f->r, f->h);
	if (f->rev == MPA_REVISION_2 && f->h) {
		printf(" IRD %u ORD %u", f->ird, f->ord);
		if (f->p2p || f->rtr)
			printf("%s RTR %s", f->p2p ? " peer-to-peer" : "",
			       dump_rtr_words(f->rtr));
	}
	printf(" pd %u", f->pd_len);
	if (f->pd_len) {
		putchar(' ');
		hex(f->pd, f->pd_len < PD_SHOWN ? f->pd_len : PD_SHOWN);
		if (f->pd_len > PD_SHOWN)
			printf("...");
	}
	if (f->r)
		printf(" rejected");
	putchar('\n');
}

/* -v: the frame's fields as sent, and all of its private data. */
void dump_print_frame_details(const struct mpa_frame *f, const uint8_t *p,
			      size_t len)
{
	const uint8_t *pd = p + MPA_FRAME_HDR_LEN;
	size_t pd_total = len - MPA_FRAME_HDR_LEN;

	printf("    MPA: key \"%.*s\", flags 0x%02x (M %d C %d R %d H %d res 0x%x), rev %u, private data length %zu\n",
	       MPA_KEY_LEN, (const char *)p, p[MPA_FRAME_OFF_FLAGS], f->m,
	       f->c, f->r, f->h, f->res, f->rev, pd_total);
	if (f->rev == MPA_REVISION_2 && f->h) {
		printf("    MPA: IRD word 0x%04x (A %d B %d IRD %u), ORD word 0x%04x (C %d D %d ORD %u)\n",
		       get_be16(pd), f->p2p, !!(f->rtr & MPA_RTR_SEND), f->ird,
		       get_be16(pd + 2), !!(f->rtr & MPA_RTR_WRITE),
		       !!(f->rtr & MPA_RTR_READ), f->ord);
		pd += MPA_V2_WORDS_LEN;
	}
	if (f->pd_len) {
		printf("    MPA: private data ");
		hex(pd, f->pd_len);
		putchar('\n');
	}
}

static void print_ddp(const struct dump_msg *m)
{
	const struct ddp_hdr *h = &m->ddp;

	if (h->tagged)
		printf(" tagged%s STag 0x%08x TO 0x%llx", h->last ? " L" : "",
		       h->stag, (unsigned long long)h->to);
	else
		printf(" untagged%s QN %u MSN %u MO %u", h->last ? " L" : "",
		       h->qn, h->msn, h->mo);
}

static void print_term_words(const struct rdmap_term *t, bool swapped)
{
	uint8_t l = swapped ? t->swapped.layer : t->layer;
	uint8_t e = swapped ? t->swapped.etype : t->etype;
	uint8_t c = swapped ? t->swapped.ecode : t->ecode;
	const char *w = rdmap_term_describe(l, e, c);

	printf(" %u/%u/0x%02x %s%s", l, e, c, w ? w : "(undefined)",
	       swapped ? " (siw byte order)" : "");
}

static void print_rdmap(const struct dump_msg *m)
{
	const char *name = dump_opcode_name(m->opcode);

	if (name)
		printf(" %s", name);
	else
		printf(" opcode 0x%x", m->opcode);
	if (m->have_rr)
		printf(" sink 0x%08x:0x%llx size %u source 0x%08x:0x%llx",
		       m->rr.sink_stag, (unsigned long long)m->rr.sink_to,
		       m->rr.size, m->rr.src_stag,
		       (unsigned long long)m->rr.src_to);
	else if (m->have_term)
		print_term_words(&m->term, m->term_swapped);
	else if (!m->ddp.tagged && (m->opcode == RDMAP_OP_SEND_INV ||
				    m->opcode == RDMAP_OP_SEND_SE_INV))
		printf(" invalidate 0x%08x payload %zu", m->ddp.rsvdulp2,
		       m->payload_len);
	else if (m->have_ar || m->have_aresp || m->have_imm)
		dump_ext_print(m);
	else if (m->opcode != RDMAP_OP_READ_REQ &&
		 m->opcode != RDMAP_OP_TERMINATE)
		printf(" payload %zu", m->payload_len);
	if (m->rtr)
		printf(" (RTR)");
}

/* The rest of an FPDU's line, after dump_line_start(). */
void dump_print_fpdu(const struct dump_conn *c, int side,
		     const struct mpa_scan_fpdu *f, const struct dump_msg *m)
{
	printf("FPDU %llu ULPDU %u", (unsigned long long)f->wire_len,
	       f->ulpdu_len);
	if (m->ddp_ok) {
		print_ddp(m);
		print_rdmap(m);
	} else {
		printf(" (no DDP header)");
	}
	if (c->dir[side].markers) {
		if (f->n_bad_markers)
			printf(" markers %u, %u bad", f->n_markers,
			       f->n_bad_markers);
		else
			printf(" markers %u ok", f->n_markers);
	}
	if (!c->crc)
		printf(" CRC off\n");
	else
		printf(" CRC %s\n", f->crc_ok ? "ok" : "bad");
}

/* ---- -v and -x -------------------------------------------------------- */

static void print_mpa_details(const struct mpa_scan_fpdu *f)
{
	printf("    MPA: stream offset %llu, %llu octets, ULPDU_LENGTH %u, pad %u%s, CRC 0x%08x",
	       (unsigned long long)f->off, (unsigned long long)f->wire_len,
	       f->ulpdu_len, f->pad_len,
	       f->pad_len ? (f->pad_zero ? " (zero)" : " (not zero)") : "",
	       f->crc_wire);
	if (f->crc_computed || !f->crc_ok)
		printf(" (computed 0x%08x)", f->crc_computed);
	putchar('\n');
	for (unsigned int i = 0; i < f->n_markers; i++) {
		const struct mpa_scan_marker *mk = &f->marker[i];

		printf("    MPA: marker at stream offset %llu: reserved 0x%04x FPDUPTR %u (%s %llu)\n",
		       (unsigned long long)mk->off, mk->reserved, mk->fpduptr,
		       mk->ok ? "ok," : "wrong, wanted",
		       (unsigned long long)mk->want);
	}
}

static void print_ddp_details(const struct dump_msg *m)
{
	const struct ddp_hdr *h = &m->ddp;

	printf("    DDP: T %d L %d rsvd 0x%x DV %u", h->tagged, h->last,
	       m->ddp_rsvd >> 2, h->version);
	if (h->tagged)
		printf(" STag 0x%08x TO 0x%016llx\n", h->stag,
		       (unsigned long long)h->to);
	else
		printf(" RsvdULP 0x%08x QN %u MSN %u MO %u\n", h->rsvdulp2,
		       h->qn, h->msn, h->mo);
	printf("    RDMAP: RV %u rsvd %u opcode %u (%s)\n", m->rv, m->rsvd >> 4,
	       m->opcode, dump_opcode_name(m->opcode) ?
				  dump_opcode_name(m->opcode) : "undefined");
}

static void print_read_req_details(const char *indent,
				   const struct dump_read_req *rr)
{
	printf("%sRead Request: sink STag 0x%08x TO 0x%016llx, size %u, source STag 0x%08x TO 0x%016llx\n",
	       indent, rr->sink_stag, (unsigned long long)rr->sink_to,
	       rr->size, rr->src_stag, (unsigned long long)rr->src_to);
}

/* The Terminate control word both ways, and the headers it carries. */
static void print_term_details(const struct dump_msg *m)
{
	const struct rdmap_term *t = &m->term;
	bool m_, d_, r_;

	printf("    Terminate (RFC reading):");
	print_term_words(t, false);
	printf(", M %d D %d R %d\n", t->m, t->d, t->r);
	if (m->term_swapped || !rdmap_term_valid(t->layer, t->etype, t->ecode)) {
		printf("    Terminate (siw reading):");
		print_term_words(t, true);
		printf(", M %d D %d R %d\n", t->swapped.m, t->swapped.d,
		       t->swapped.r);
	}
	m_ = m->term_swapped ? t->swapped.m : t->m;
	d_ = m->term_swapped ? t->swapped.d : t->d;
	r_ = m->term_swapped ? t->swapped.r : t->r;
	if (m_)
		printf("    Terminate: segment length %u\n", t->seg_len);
	if (d_ && t->ddp_hdr_len) {
		struct ddp_hdr h;

		ddp_hdr_decode(t->ddp_hdr, t->ddp_hdr_len, &h);
		printf("    Terminated DDP header: T %d L %d DV %u opcode %u (%s)",
		       h.tagged, h.last, h.version,
		       h.rsvdulp & RDMAP_CTRL_OPCODE,
		       dump_opcode_name(h.rsvdulp & RDMAP_CTRL_OPCODE) ?
			       dump_opcode_name(h.rsvdulp & RDMAP_CTRL_OPCODE) :
			       "undefined");
		if (h.tagged)
			printf(" STag 0x%08x TO 0x%016llx\n", h.stag,
			       (unsigned long long)h.to);
		else
			printf(" QN %u MSN %u MO %u\n", h.qn, h.msn, h.mo);
	}
	if (r_ && t->have_rdma_hdr) {
		struct dump_read_req rr;

		dump_read_req_decode(t->rdma_hdr, &rr, 0);
		print_read_req_details("    Terminated ", &rr);
	}
}

static void hex_dump(const uint8_t *p, size_t len)
{
	for (size_t off = 0; off < len; off += 16) {
		size_t n = len - off < 16 ? len - off : 16;

		printf("    %04zx ", off);
		for (size_t i = 0; i < 16; i++) {
			if (i == 8)
				putchar(' ');
			if (i < n)
				printf(" %02x", p[off + i]);
			else
				printf("   ");
		}
		printf("  ");
		for (size_t i = 0; i < n; i++)
			putchar(p[off + i] >= 0x20 && p[off + i] < 0x7f ?
					p[off + i] : '.');
		putchar('\n');
	}
}

/* -v: every header field; -x: the ULPDU octets. */
void dump_print_details(const struct dump *d, const struct mpa_scan_fpdu *f,
			const struct dump_msg *m, const uint8_t *u)
{
	if (d->opt.verbose) {
		print_mpa_details(f);
		if (m->ddp_ok)
			print_ddp_details(m);
		if (m->have_rr)
			print_read_req_details("    ", &m->rr);
		if (m->have_term)
			print_term_details(m);
		dump_ext_print_details(m);
	}
	if (d->opt.hex)
		hex_dump(u, f->ulpdu_len);
}

/* ---- summary --------------------------------------------------------- */

static void dir_summary(const struct dump_dir *dir)
{
	const char *sep = " (";

	printf("  %s: FPDUs %llu, octets %llu, payload octets %llu",
	       dir->name, (unsigned long long)dir->st.fpdus,
	       (unsigned long long)dir->st.wire_octets,
	       (unsigned long long)dir->st.payload_octets);
	for (unsigned int op = 0; op < 16; op++) {
		const char *name = dump_opcode_name((uint8_t)op);

		if (!dir->st.opcode[op])
			continue;
		if (name)
			printf("%s%s %llu", sep, name,
			       (unsigned long long)dir->st.opcode[op]);
		else
			printf("%sopcode 0x%x %llu", sep, op,
			       (unsigned long long)dir->st.opcode[op]);
		sep = ", ";
	}
	printf("%s, violations %llu, warnings %llu\n", *sep == ',' ? ")" : "",
	       (unsigned long long)dir->st.violations,
	       (unsigned long long)dir->st.warnings);
}

static const char *conn_state(const struct dump_conn *c)
{
	if (c->hs.rejected)
		return "rejected";
	if (!c->decode && c->hs.req.rc == DUMP_HS_OK &&
	    c->hs.rep.rc == DUMP_HS_OK)
		return "handshake only";
	if (!c->decode)
		return "not decoded";
	return c->assumed ? "decoded with assumed framing" : "decoded";
}

/* A connection by its initiator's direction, or by its raw files. */
static void conn_label(const struct dump_conn *c)
{
	if (!c->family && c->dir[1].len)
		printf("%s and %s", c->dir[0].name, c->dir[1].name);
	else if (!c->family)
		printf("%s", c->dir[0].name);
	else
		printf("%s", c->dir[c->initiator < 0 ? 0 : c->initiator].name);
}

void dump_summary(struct dump *d)
{
	printf("\nsummary:\n");
	for (struct dump_conn *c = d->conns; c; c = c->next) {
		/* the Reply's revision is the one agreed, when there is one */
		const struct dump_hs_frame *hf =
			c->hs.rep.rc == DUMP_HS_OK ? &c->hs.rep : &c->hs.req;
		uint64_t violations = c->violations, warnings = c->warnings;

		if (!c->dir[0].len && !c->dir[1].len)
			continue;
		printf("connection %u: ", c->id);
		conn_label(c);
		printf(": ");
		if (hf->rc == DUMP_HS_OK)
			printf("MPA rev %u, ", hf->f.rev);
		printf("%s", conn_state(c));
		if (c->decode)
			printf(", CRC %s", c->crc ? "on" : "off");
		for (int s = 0; s < 2; s++) {
			violations += c->dir[s].st.violations;
			warnings += c->dir[s].st.warnings;
		}
		printf(", violations %llu, warnings %llu\n",
		       (unsigned long long)violations,
		       (unsigned long long)warnings);
		for (int s = 0; s < 2; s++)
			if ((c->decode && c->dir[s].len) ||
			    c->dir[s].st.violations || c->dir[s].st.warnings)
				dir_summary(&c->dir[s]);
	}
	printf("warnings %llu notices %llu\n", (unsigned long long)d->warnings,
	       (unsigned long long)d->notices);
	printf("fpdus %llu violations %llu\n", (unsigned long long)d->fpdus,
	       (unsigned long long)d->violations);
}
