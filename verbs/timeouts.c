// SPDX-License-Identifier: MIT
/*
 * Dead peers: how long a QP's connection waits for a peer that has gone
 * silent (no FIN, no RST: a host that lost power, a pulled cable, a
 * partition).  The bounds live in the QP, are given to its socket once
 * the connection is established (the handshake has bounds of its own,
 * reply_timeout_ms and request_timeout_ms), and may change while it runs.
 * The socket failing with ETIMEDOUT ends the stream like any other
 * failure: the QP goes to error and every work request completes once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "verbs/verbs.h"

#define KNOWN_MASK (IW_QP_TIMEOUTS_ACK | IW_QP_TIMEOUTS_KEEPALIVE)
/* the kernel's limits: MAX_TCP_KEEPIDLE, MAX_TCP_KEEPINTVL, MAX_TCP_KEEPCNT */
#define KEEPALIVE_S_MAX 32767
#define KEEPALIVE_COUNT_MAX 127

static bool keepalive_ok(const struct iw_qp_timeouts *t)
{
	if (t->keepalive_idle_s == 0)
		return true; /* off: the rest is not looked at */
	return t->keepalive_idle_s <= KEEPALIVE_S_MAX &&
	       t->keepalive_interval_s >= 1 &&
	       t->keepalive_interval_s <= KEEPALIVE_S_MAX &&
	       t->keepalive_count >= 1 &&
	       t->keepalive_count <= KEEPALIVE_COUNT_MAX;
}

/*
 * Every QP of the context starts with the defaults, or with what the
 * environment says, for programs that cannot say it themselves (those
 * run by iwarp-run): IWARP_ACK_TIMEOUT_MS, and IWARP_KEEPALIVE as
 * "IDLE,INTERVAL,COUNT" in seconds ("0" turns keepalive off).  A value
 * out of range is ignored, and the debug log says so.
 */
void ctx_timeouts_init(struct iw_context *ctx)
{
	const char *ack = getenv("IWARP_ACK_TIMEOUT_MS");
	const char *ka = getenv("IWARP_KEEPALIVE");
	struct tp_timeouts *t = &ctx->qp_timeouts;
	struct iw_qp_timeouts e = { 0 };
	char *end;

	*t = (struct tp_timeouts){
		.ack_timeout_ms = IW_ACK_TIMEOUT_MS_DEFAULT,
		.keepalive_idle_s = IW_KEEPALIVE_IDLE_S_DEFAULT,
		.keepalive_interval_s = IW_KEEPALIVE_INTERVAL_S_DEFAULT,
		.keepalive_count = IW_KEEPALIVE_COUNT_DEFAULT,
	};
	if (ack && *ack) {
		unsigned long v = strtoul(ack, &end, 10);

		if (*end || v > INT32_MAX)
			iw_log(ctx, 1, "IWARP_ACK_TIMEOUT_MS=%s ignored", ack);
		else
			t->ack_timeout_ms = (uint32_t)v;
	}
	if (ka && *ka) {
		int n = sscanf(ka, "%u,%u,%u", &e.keepalive_idle_s,
			       &e.keepalive_interval_s, &e.keepalive_count);

		if ((n == 3 || (n == 1 && !e.keepalive_idle_s)) &&
		    keepalive_ok(&e)) {
			t->keepalive_idle_s = e.keepalive_idle_s;
			t->keepalive_interval_s = e.keepalive_interval_s;
			t->keepalive_count = e.keepalive_count;
		} else {
			iw_log(ctx, 1, "IWARP_KEEPALIVE=%s ignored", ka);
		}
	}
}

/* With the connection's lock: its socket takes the QP's bounds. */
int conn_apply_timeouts(struct iw_cm_id *id)
{
	if (!id->has_tp || !id->qp || id->state != ID_CONNECTED)
		return 0;
	return tp_set_timeouts(&id->tp, &id->qp->timeouts);
}

int iw_set_qp_timeouts(struct iw_qp *qp, const struct iw_qp_timeouts *t)
{
	pthread_mutex_t *l;
	int rc = 0;

	if (!qp || !t || (t->comp_mask & ~KNOWN_MASK) ||
	    ((t->comp_mask & IW_QP_TIMEOUTS_ACK) &&
	     t->ack_timeout_ms > INT32_MAX) ||
	    ((t->comp_mask & IW_QP_TIMEOUTS_KEEPALIVE) && !keepalive_ok(t)))
		return -EINVAL;
	l = qp_lock(qp);
	if (t->comp_mask & IW_QP_TIMEOUTS_ACK)
		qp->timeouts.ack_timeout_ms = t->ack_timeout_ms;
	if (t->comp_mask & IW_QP_TIMEOUTS_KEEPALIVE) {
		qp->timeouts.keepalive_idle_s = t->keepalive_idle_s;
		qp->timeouts.keepalive_interval_s = t->keepalive_interval_s;
		qp->timeouts.keepalive_count = t->keepalive_count;
	}
	if (qp->id)
		rc = conn_apply_timeouts(qp->id);
	pthread_mutex_unlock(l);
	return rc;
}

int iw_query_qp_timeouts(struct iw_qp *qp, struct iw_qp_timeouts *t)
{
	pthread_mutex_t *l;

	if (!qp || !t || (t->comp_mask & ~KNOWN_MASK))
		return -EINVAL;
	l = qp_lock(qp);
	if (t->comp_mask & IW_QP_TIMEOUTS_ACK)
		t->ack_timeout_ms = qp->timeouts.ack_timeout_ms;
	if (t->comp_mask & IW_QP_TIMEOUTS_KEEPALIVE) {
		t->keepalive_idle_s = qp->timeouts.keepalive_idle_s;
		t->keepalive_interval_s = qp->timeouts.keepalive_interval_s;
		t->keepalive_count = qp->timeouts.keepalive_count;
	}
	pthread_mutex_unlock(l);
	return 0;
}

/*
 * How an established connection's socket failing reads: TCP gave up on a
 * silent peer (its ACK timeout, its keepalive, its retries) with
 * ETIMEDOUT, or with the soft error it met meanwhile (an ICMP or
 * neighbour failure: such errors end no established connection by
 * themselves, RFC 1122 section 4.2.3.9) instead.  Either is the same
 * -ETIMEDOUT to the application, and the debug log says from whom
 * nothing came and for how long (since the last segment that came from it).
 * Any other error is returned as it is.
 */
int conn_silence(struct iw_cm_id *id, int err)
{
	char peer[64];
	int64_t ms;

	if (err != -ETIMEDOUT && err != -EHOSTUNREACH && err != -ENETUNREACH &&
	    err != -EHOSTDOWN && err != -ENETDOWN)
		return err;
	ms = tp_silence_ms(&id->tp);
	iw_format_addr(&id->tp.peer, peer, sizeof(peer));
	if (ms < 0)
		iw_log_id(id, "no acknowledgement from %s: %s", peer,
			  iw_strerror(err));
	else
		iw_log_id(id, "no acknowledgement from %s for %lld.%lld s%s%s",
			  peer, (long long)(ms / 1000),
			  (long long)(ms % 1000 / 100),
			  err == -ETIMEDOUT ? "" : ": ",
			  err == -ETIMEDOUT ? "" : iw_strerror(err));
	return -ETIMEDOUT;
}
