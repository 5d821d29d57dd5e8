// SPDX-License-Identifier: MIT
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tool.h"

bool tool_parse_pref(const char *word, enum iw_mpa_pref *pref)
{
	if (!strcmp(word, "on"))
		*pref = IW_MPA_ON;
	else if (!strcmp(word, "off"))
		*pref = IW_MPA_OFF;
	else if (!strcmp(word, "follow"))
		*pref = IW_MPA_FOLLOW;
	else
		return false;
	return true;
}

void tool_vsay(const char *prog, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int tool_fail(const char *prog, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tool_vsay(prog, fmt, ap);
	va_end(ap);
	return status;
}

/* "none", or one or more of send, write, read separated by commas. */
bool tool_parse_rtr(const char *word, uint8_t *rtr)
{
	static const struct {
		const char *word;
		uint8_t rtr;
	} names[] = { { "send", IW_RTR_SEND }, { "write", IW_RTR_WRITE },
		      { "read", IW_RTR_READ } };
	uint8_t set = 0;

	if (!strcmp(word, "none")) {
		*rtr = 0;
		return true;
	}
	while (*word) {
		size_t len = strcspn(word, ",");
		size_t i;

		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strlen(names[i].word) == len &&
			    !strncmp(word, names[i].word, len))
				break;
		if (i == sizeof(names) / sizeof(names[0]))
			return false;
		set |= names[i].rtr;
		word += len + (word[len] == ',');
	}
	*rtr = set;
	return set != 0;
}

const char *tool_pref_name(enum iw_mpa_pref p)
{
	return p == IW_MPA_ON ? "on" : p == IW_MPA_OFF ? "off" : "follow";
}

void tool_our_request(const struct iw_mpa_opts *o, char *out, size_t len)
{
	snprintf(out, len, "we asked MPA rev %u, CRC %s, markers %s, RTR %s",
		 o->revision, tool_pref_name(o->crc),
		 tool_pref_name(o->markers), tool_rtr_name(o->rtr));
}

/*
 * "we take MPA rev 2 at most, CRC follow, markers off, RTR any": a
 * responder answers with the lower revision; its RTR 0 takes any type.
 */
static void our_terms(const struct iw_mpa_opts *o, char *out, size_t len)
{
	snprintf(out, len,
		 "we take MPA rev %u at most, CRC %s, markers %s, RTR %s",
		 o->revision, tool_pref_name(o->crc),
		 tool_pref_name(o->markers),
		 o->rtr ? tool_rtr_name(o->rtr) : "any");
}

const char *tool_rtr_name(uint8_t rtr)
{
	static const char *const names[] = {
		"none", "send", "write", "send,write",
		"read", "send,read", "write,read", "send,write,read",
	};

	_Static_assert(IW_RTR_SEND == 1 && IW_RTR_WRITE == 2 && IW_RTR_READ == 4,
		       "names[] is indexed by the RTR bits");
	return names[rtr & 7];
}

/* A number of octets, with an optional k, m or g suffix (powers of 2). */
bool tool_parse_size(const char *word, size_t *size)
{
	char *end;
	unsigned long long v = strtoull(word, &end, 0);

	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	}
	if (*end || end == word)
		return false;
	*size = (size_t)v;
	return true;
}

struct iw_cm_event *tool_event(struct iw_cm_channel *ch, int ms)
{
	struct pollfd p = { iw_cm_channel_fd(ch), POLLIN, 0 };
	struct iw_cm_event *ev;

	if (poll(&p, 1, ms) != 1 || iw_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

int tool_wait_wc(struct iw_cq *cq, struct iw_cm_channel *ch, int ms,
		 struct iw_wc *wc, struct iw_cm_event **ev)
{
	double end = tool_now_us() + ms * 1000.0;

	for (;;) {
		struct pollfd p[2] = { { iw_cq_fd(cq), POLLIN, 0 },
				       { iw_cm_channel_fd(ch), POLLIN, 0 } };
		int n = iw_poll_cq(cq, 1, wc), left;

		if (n == 1)
			return 1;
		if (n < 0)
			return 0;
		/* arm, then look again: a completion between the two is kept */
		iw_req_notify_cq(cq, 0);
		if (iw_poll_cq(cq, 1, wc) == 1)
			return 1;
		left = (int)((end - tool_now_us()) / 1000);
		if (left <= 0 || poll(p, 2, left) <= 0)
			return 0;
		if (p[0].revents)
			iw_get_cq_event(cq, NULL);
		if (p[1].revents && iw_poll_cq(cq, 1, wc) == 1)
			return 1;
		if (p[1].revents && !iw_get_cm_event(ch, ev))
			return -1;
	}
}

/* "peer MPA rev 2, M1 C0 R0, enhanced (RFC 6581), ...": a frame as it came */
static void peer_frame(const struct iw_mpa_info *p, char *out, size_t len)
{
	snprintf(out, len,
		 "peer MPA rev %u, M%u C%u R%u, %s, %u octets of private "
		 "data, IRD %u ORD %u, peer-to-peer %s, RTR %s",
		 p->revision, p->markers, p->crc, p->reject,
		 p->enhanced ? "enhanced (RFC 6581)" : "not enhanced",
		 p->private_data_len, p->ird, p->ord, p->p2p ? "yes" : "no",
		 tool_rtr_name(p->rtr));
}

/*
 * The line of a responder that refused a Request (iw_accept() failed
 * with @err): what we take, why, and the Request as it came, in the
 * words the initiator's side uses for a Reply.
 */
void tool_refusal(const char *where, const struct iw_mpa_info *peer,
		  const struct iw_mpa_opts *ours, int err, char *out,
		  size_t len)
{
	char terms[96], frame[256];

	our_terms(ours, terms, sizeof(terms));
	peer_frame(peer, frame, sizeof(frame));
	snprintf(out, len, "cannot accept %s (%s): %s; %s", where, terms,
		 iw_strerror(err), frame);
}

static void terminate_words(const struct iw_terminate_info *t, char *out,
			    size_t len)
{
	if (!t->valid) {
		*out = 0;
		return;
	}
	if (t->words)
		snprintf(out, len,
			 "; Terminate %s: layer %u type %u code 0x%02x (%s)",
			 t->received ? "received" : "sent", t->layer, t->etype,
			 t->ecode, t->words);
	else
		snprintf(out, len,
			 "; Terminate %s: layer %u type %u code 0x%02x, not an "
			 "RFC 5040 triple; read as Linux siw writes it: layer %u "
			 "type %u code 0x%02x (%s)",
			 t->received ? "received" : "sent", t->layer, t->etype,
			 t->ecode, t->swapped_layer, t->swapped_etype,
			 t->swapped_ecode,
			 t->swapped_words ? t->swapped_words : "unknown");
}

/* A rejection's private data, when it reads as text: what the peer said. */
static const char *said(const struct iw_cm_event *ev)
{
	static __thread char out[300];
	const uint8_t *p = ev->private_data;
	size_t n = ev->private_data_len;

	if (!n || n > 256)
		return "";
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] > 0x7e)
			return "";
	snprintf(out, sizeof(out), "; it said \"%.*s\"", (int)n,
		 (const char *)p);
	return out;
}

/*
 * One line on why a connection failed or ended: the event and its reason;
 * for a handshake the peer's frame as it came, what we asked for (@ours,
 * when given) and what was decided; any Terminate in words.
 */
void tool_explain(const char *prog, const char *where,
		  const struct iw_cm_event *ev, const struct iw_mpa_opts *ours)
{
	char frame[256] = "", term[300] = "", place[320], asked[96];
	const char *what;

	/* a refused handshake: say what we asked for */
	if (ours && (ev->event == IW_CM_EVENT_REJECTED ||
		     ev->event == IW_CM_EVENT_CONNECT_ERROR)) {
		tool_our_request(ours, asked, sizeof(asked));
		snprintf(place, sizeof(place), "%s (%s)", where, asked);
		where = place;
	}
	terminate_words(&ev->terminate, term, sizeof(term));
	switch (ev->event) {
	case IW_CM_EVENT_REJECTED:
		peer_frame(&ev->peer, frame, sizeof(frame));
		fprintf(stderr, "%s: %s rejected the connection (R bit): %s%s%s\n",
			prog, where, frame, term, said(ev));
		return;
	case IW_CM_EVENT_UNREACHABLE:
		what = "cannot reach";
		break;
	case IW_CM_EVENT_TIMEOUT:
		what = "no MPA answer in time from";
		break;
	case IW_CM_EVENT_CONNECT_ERROR:
		what = "connection failed with";
		break;
	case IW_CM_EVENT_DISCONNECTED:
		what = "disconnected from";
		break;
	default:
		what = "connection error with";
		break;
	}
	if (ev->peer.revision) {
		peer_frame(&ev->peer, frame + 2, sizeof(frame) - 2);
		frame[0] = ';';
		frame[1] = ' ';
	}
	fprintf(stderr, "%s: %s %s: %s%s%s\n", prog, what, where,
		ev->status ? iw_strerror(ev->status) : "closed", frame, term);
}

void tool_explain_wc(const char *prog, const struct iw_wc *wc)
{
	fprintf(stderr, "%s: work request %llu failed: %s%s%s\n", prog,
		(unsigned long long)wc->wr_id, iw_wc_status_str(wc->status),
		wc->err ? ": " : "", wc->err ? iw_strerror(wc->err) : "");
}

double tool_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

void tool_stats_add(struct tool_stats *s, double v)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 1024;
		double *p = realloc(s->v, cap * sizeof(*p));

		if (!p)
			return;
		s->v = p;
		s->cap = cap;
	}
	s->v[s->n++] = v;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The @pct-th percentile (0..100) by nearest rank. */
double tool_stats_pct(struct tool_stats *s, double pct)
{
	size_t k;

	if (!s->n)
		return 0;
	qsort(s->v, s->n, sizeof(*s->v), cmp_double);
	k = (size_t)(pct / 100.0 * (double)s->n + 0.999999);
	return s->v[k ? k - 1 : 0];
}

double tool_stats_avg(const struct tool_stats *s)
{
	double sum = 0;

	for (size_t i = 0; i < s->n; i++)
		sum += s->v[i];
	return s->n ? sum / (double)s->n : 0;
}

void tool_stats_free(struct tool_stats *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}
