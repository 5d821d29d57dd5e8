// SPDX-License-Identifier: MIT
/*
 * The text the iwarp-stat endpoint answers with: one record a line, a
 * kind word and then key=value pairs with no space inside a value, so
 * that a reader splits it without a parser (iwarp-stat(1) turns it into
 * a table or JSON).  Keys are only ever added; a reader skips those it
 * does not know.
 *
 *   context ctx=1 progress=thread threads=1 qps=2 ...
 *   listener ctx=1 local=0.0.0.0:7174
 *   conn ctx=1 qpn=3 state=RTS local=... peer=... mpa_rev=2 ... tx_octets=...
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>

#include "verbs/verbs.h"

static const char *const op_names[IW_STATS_OPCODES] = {
	[IW_STATS_OP_WRITE] = "write",
	[IW_STATS_OP_READ_REQ] = "read_req",
	[IW_STATS_OP_READ_RESP] = "read_resp",
	[IW_STATS_OP_SEND] = "send",
	[IW_STATS_OP_SEND_INV] = "send_inv",
	[IW_STATS_OP_SEND_SE] = "send_se",
	[IW_STATS_OP_SEND_SE_INV] = "send_se_inv",
	[IW_STATS_OP_TERMINATE] = "terminate",
	[IW_STATS_OP_ATOMIC_REQ] = "atomic_req",
	[IW_STATS_OP_ATOMIC_RESP] = "atomic_resp",
	[IW_STATS_OP_IMM] = "imm",
	[IW_STATS_OP_IMM_SE] = "imm_se",
};

static const char *const layer_names[IW_STATS_LAYERS] = { "rdmap", "ddp",
							  "llp" };

static const char *progress_name(enum iw_progress_mode m)
{
	switch (m) {
	case IW_PROGRESS_THREAD:
		return "thread";
	case IW_PROGRESS_MANUAL:
		return "manual";
	case IW_PROGRESS_THREADS:
		return "threads";
	}
	return "unknown";
}

static const char *state_name(enum iw_qp_state s)
{
	static const char *const names[] = { "INIT", "RTS", "TERMINATING",
					     "ERROR" };

	return (unsigned int)s < 4 ? names[s] : "unknown";
}

static const char *driver_name(enum iw_stats_driver d)
{
	static const char *const names[] = { "none", "loop", "app_poll",
					     "app_wait", "manual" };

	return (unsigned int)d < 5 ? names[d] : "unknown";
}

static const char *rtr_name(uint8_t rtr)
{
	switch (rtr) {
	case IW_RTR_SEND:
		return "send";
	case IW_RTR_WRITE:
		return "write";
	case IW_RTR_READ:
		return "read";
	default:
		return "none";
	}
}

/* " key=addr:port", "[addr]:port" for IPv6, "-" when there is none. */
static void put_addr(FILE *f, const char *key, const struct sockaddr_storage *ss)
{
	char host[INET6_ADDRSTRLEN] = "";

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		fprintf(f, " %s=%s:%u", key, host, ntohs(a->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		fprintf(f, " %s=[%s]:%u", key, host, ntohs(a->sin6_port));
	} else {
		fprintf(f, " %s=-", key);
	}
}

/* The counters a QP and a context both have. */
static void put_counters(FILE *f, uint64_t tx_octets, uint64_t rx_octets,
			 uint64_t tx_fpdus, uint64_t rx_fpdus,
			 const uint64_t *tx_msgs, const uint64_t *rx_msgs,
			 uint64_t crc_errors, uint64_t marker_errors,
			 const uint64_t *term_tx, const uint64_t *term_rx,
			 uint64_t flushed)
{
	fprintf(f,
		" tx_octets=%" PRIu64 " rx_octets=%" PRIu64 " tx_fpdus=%" PRIu64
		" rx_fpdus=%" PRIu64,
		tx_octets, rx_octets, tx_fpdus, rx_fpdus);
	for (int i = 0; i < IW_STATS_OPCODES; i++)
		if (op_names[i])
			fprintf(f, " tx_%s=%" PRIu64 " rx_%s=%" PRIu64,
				op_names[i], tx_msgs[i], op_names[i],
				rx_msgs[i]);
	fprintf(f, " crc_errors=%" PRIu64 " marker_errors=%" PRIu64,
		crc_errors, marker_errors);
	for (int i = 0; i < IW_STATS_LAYERS; i++)
		fprintf(f, " term_tx_%s=%" PRIu64 " term_rx_%s=%" PRIu64,
			layer_names[i], term_tx[i], layer_names[i], term_rx[i]);
	fprintf(f, " flushed=%" PRIu64, flushed);
}

static void put_term(FILE *f, const char *key, const struct iw_stats_term *t)
{
	if (t->valid)
		fprintf(f, " %s=%u/%u/0x%02x", key, t->layer, t->etype,
			t->ecode);
}

static void report_qp(FILE *f, struct iw_context *ctx, struct iw_qp *qp)
{
	struct iw_qp_stats s;

	stats_qp_fill(qp, &s);
	fprintf(f, "conn ctx=%u qpn=%u state=%s driver=%s", ctx->stats_id,
		s.qpn, state_name(s.state), driver_name(s.driver));
	put_addr(f, "local", &s.local);
	put_addr(f, "peer", &s.peer);
	if (s.comp_mask & IW_QP_STATS_CONN)
		fprintf(f,
			" role=%s mpa_rev=%u crc=%u markers_tx=%u markers_rx=%u"
			" rtr=%s mulpdu=%u",
			s.initiator ? "initiator" : "responder", s.mpa_revision,
			s.crc, s.markers_tx, s.markers_rx, rtr_name(s.rtr),
			s.mulpdu);
	fprintf(f,
		" ird=%u ord=%u ord_out=%u ord_max=%u ird_out=%u ird_max=%u"
		" sq=%u sq_depth=%u rq=%u rq_depth=%u",
		s.ird, s.ord, s.ord_outstanding, s.ord_max, s.ird_outstanding,
		s.ird_max, s.sq_outstanding, s.sq_depth, s.rq_posted,
		s.rq_depth);
	put_counters(f, s.tx_octets, s.rx_octets, s.tx_fpdus, s.rx_fpdus,
		     s.tx_msgs, s.rx_msgs, s.crc_errors, s.marker_errors,
		     s.term_tx, s.term_rx, s.flushed);
	put_term(f, "last_term_tx", &s.last_term_tx);
	put_term(f, "last_term_rx", &s.last_term_rx);
	if (s.comp_mask & IW_QP_STATS_TCP)
		fprintf(f,
			" tcp_state=%u tcp_rtt_us=%u tcp_rttvar_us=%u"
			" tcp_cwnd=%u tcp_unacked=%u tcp_retrans=%u"
			" tcp_pacing_rate=%" PRIu64 " tcp_bytes_acked=%" PRIu64
			" tcp_bytes_received=%" PRIu64 " tcp_mss=%u",
			s.tcp_state, s.tcp_rtt_us, s.tcp_rttvar_us,
			s.tcp_snd_cwnd, s.tcp_unacked, s.tcp_retrans,
			s.tcp_pacing_rate, s.tcp_bytes_acked,
			s.tcp_bytes_received, s.tcp_snd_mss);
	fputc('\n', f);
}

/*
 * Writes @ctx's records to @f: the context, its listeners, its QPs.  The
 * caller holds the process's list of contexts, so @ctx stays.
 */
void stats_report_ctx(FILE *f, struct iw_context *ctx)
{
	struct iw_context_stats c;

	stats_ctx_fill(ctx, &c);
	fprintf(f, "context ctx=%u progress=%s threads=%u qps=%u listeners=%u"
		   " qps_created=%" PRIu64,
		ctx->stats_id, progress_name(c.progress), c.progress_threads,
		c.qps, c.listeners, c.qps_created);
	put_counters(f, c.tx_octets, c.rx_octets, c.tx_fpdus, c.rx_fpdus,
		     c.tx_msgs, c.rx_msgs, c.crc_errors, c.marker_errors,
		     c.term_tx, c.term_rx, c.flushed);
	fputc('\n', f);
	pthread_mutex_lock(&ctx->stats_lock);
	for (struct iw_cm_id *l = ctx->stats_listeners; l; l = l->stats_next) {
		fprintf(f, "listener ctx=%u", ctx->stats_id);
		put_addr(f, "local", &l->listen_addr);
		fputc('\n', f);
	}
	for (struct iw_qp *qp = ctx->stats_qps; qp; qp = qp->stats_next)
		report_qp(f, ctx, qp);
	pthread_mutex_unlock(&ctx->stats_lock);
}
