/* SPDX-License-Identifier: MIT */
/*
 * What the command-line tools share: MPA option words, waits that are
 * always bounded, a one-line account of why a connection failed, and
 * latency statistics.
 */
#ifndef IW_TOOL_H
#define IW_TOOL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <iwarp/iwarp.h>

/* "PROG: message" and a newline on stderr. */
void tool_vsay(const char *prog, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* The same, then @status: "return tool_fail(PROG, 2, ...)" ends a case. */
int tool_fail(const char *prog, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* --crc / --markers / --mpa-rev / --rtr values; false on a bad word. */
bool tool_parse_pref(const char *word, enum iw_mpa_pref *pref);
bool tool_parse_rtr(const char *word, uint8_t *rtr);
bool tool_parse_size(const char *word, size_t *size);
const char *tool_rtr_name(uint8_t rtr);
const char *tool_pref_name(enum iw_mpa_pref p);
/* "we asked MPA rev 2, CRC follow, markers on, RTR none" */
void tool_our_request(const struct iw_mpa_opts *o, char *out, size_t len);

/*
 * "cannot accept WHERE (our terms): reason; peer MPA rev ...": a
 * responder's refusal (@err from iw_accept()) with the peer's Request.
 */
void tool_refusal(const char *where, const struct iw_mpa_info *peer,
		  const struct iw_mpa_opts *ours, int err, char *out,
		  size_t len);

/* The next CM event on @ch within @ms; NULL when none came. */
struct iw_cm_event *tool_event(struct iw_cm_channel *ch, int ms);

/*
 * Waits for one completion on @cq, or for the connection's end on @ch:
 * returns 1 with *@wc filled, 0 on timeout, -1 when a CM event came first
 * (*@ev holds it; the caller acks it).
 */
int tool_wait_wc(struct iw_cq *cq, struct iw_cm_channel *ch, int ms,
		 struct iw_wc *wc, struct iw_cm_event **ev);

/*
 * One line on why a connection failed or ended, to stderr; @ours (may be
 * NULL) is what we asked for, named when a handshake failed.
 */
void tool_explain(const char *prog, const char *where,
		  const struct iw_cm_event *ev, const struct iw_mpa_opts *ours);
void tool_explain_wc(const char *prog, const struct iw_wc *wc);

double tool_now_us(void);

struct tool_stats {
	double *v;
	size_t n, cap;
};

void tool_stats_add(struct tool_stats *s, double v);
double tool_stats_pct(struct tool_stats *s, double pct);
double tool_stats_avg(const struct tool_stats *s);
void tool_stats_free(struct tool_stats *s);

#endif /* IW_TOOL_H */
