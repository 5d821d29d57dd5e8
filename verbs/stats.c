// SPDX-License-Identifier: MIT
/*
 * Statistics of QPs and contexts: the engine's counters (rdmap_stats),
 * the queues' occupancy and Read depths, the MPA options the handshake
 * settled, who drives the connection, and TCP_INFO read from the socket
 * at the query.  The counters are written by whoever drives a connection
 * and read here without stopping it; the rest is read under the
 * connection's lock, held only for the copy.
 */
#include <errno.h>
#include <netinet/in.h>
#include <linux/tcp.h> /* the full struct tcp_info */
#include <string.h>

#include "verbs/verbs.h"

void stats_ctx_init(struct iw_context *ctx)
{
	pthread_mutex_init(&ctx->stats_lock, NULL);
}

void stats_ctx_fini(struct iw_context *ctx)
{
	pthread_mutex_destroy(&ctx->stats_lock);
}

/* QP numbers are unique in the process, as a device's are on a host. */
static atomic_uint next_qpn = 1;

void stats_add_qp(struct iw_qp *qp)
{
	struct iw_context *ctx = qp->ctx;

	qp->qpn = atomic_fetch_add(&next_qpn, 1);
	pthread_mutex_lock(&ctx->stats_lock);
	qp->stats_prev = NULL;
	qp->stats_next = ctx->stats_qps;
	if (ctx->stats_qps)
		ctx->stats_qps->stats_prev = qp;
	ctx->stats_qps = qp;
	ctx->n_qps++;
	ctx->qps_created++;
	pthread_mutex_unlock(&ctx->stats_lock);
}

/* Adds a QP's counters to a context's sums. */
static void sum_counters(struct iw_context_stats *to,
			 const struct iw_qp_stats *from)
{
	to->tx_octets += from->tx_octets;
	to->rx_octets += from->rx_octets;
	to->tx_fpdus += from->tx_fpdus;
	to->rx_fpdus += from->rx_fpdus;
	for (int i = 0; i < IW_STATS_OPCODES; i++) {
		to->tx_msgs[i] += from->tx_msgs[i];
		to->rx_msgs[i] += from->rx_msgs[i];
	}
	to->crc_errors += from->crc_errors;
	to->marker_errors += from->marker_errors;
	for (int i = 0; i < IW_STATS_LAYERS; i++) {
		to->term_tx[i] += from->term_tx[i];
		to->term_rx[i] += from->term_rx[i];
	}
	to->flushed += from->flushed;
}

/* The QP goes: its counters stay in the context's sums. */
void stats_remove_qp(struct iw_qp *qp)
{
	struct iw_context *ctx = qp->ctx;
	struct iw_qp_stats s;

	stats_qp_fill(qp, &s);
	pthread_mutex_lock(&ctx->stats_lock);
	if (qp->stats_prev)
		qp->stats_prev->stats_next = qp->stats_next;
	else
		ctx->stats_qps = qp->stats_next;
	if (qp->stats_next)
		qp->stats_next->stats_prev = qp->stats_prev;
	ctx->n_qps--;
	sum_counters(&ctx->retired, &s);
	pthread_mutex_unlock(&ctx->stats_lock);
}

void stats_add_listener(struct iw_cm_id *id)
{
	struct iw_context *ctx = id->ctx;

	if (tp_listener_addr(&id->listener, &id->listen_addr))
		memset(&id->listen_addr, 0, sizeof(id->listen_addr));
	pthread_mutex_lock(&ctx->stats_lock);
	id->stats_prev = NULL;
	id->stats_next = ctx->stats_listeners;
	if (ctx->stats_listeners)
		ctx->stats_listeners->stats_prev = id;
	ctx->stats_listeners = id;
	ctx->n_listeners++;
	id->stats_linked = true;
	pthread_mutex_unlock(&ctx->stats_lock);
}

void stats_remove_listener(struct iw_cm_id *id)
{
	struct iw_context *ctx = id->ctx;

	pthread_mutex_lock(&ctx->stats_lock);
	if (id->stats_linked) {
		if (id->stats_prev)
			id->stats_prev->stats_next = id->stats_next;
		else
			ctx->stats_listeners = id->stats_next;
		if (id->stats_next)
			id->stats_next->stats_prev = id->stats_prev;
		ctx->n_listeners--;
		id->stats_linked = false;
	}
	pthread_mutex_unlock(&ctx->stats_lock);
}

static enum iw_stats_driver driver_of(const struct iw_qp *qp,
				      const struct iw_cm_id *id)
{
	if (!id || !id->has_tp || qp->engine.state != RDMAP_QP_RTS)
		return IW_STATS_DRIVER_NONE;
	if (id->held && id->held_by_waiter)
		return IW_STATS_DRIVER_APP_WAIT;
	if (id->held)
		return IW_STATS_DRIVER_APP_POLL;
	if (qp->ctx->mode == IW_PROGRESS_MANUAL)
		return IW_STATS_DRIVER_MANUAL;
	return IW_STATS_DRIVER_LOOP;
}

/* tcp(7): TCP_INFO of the connection's socket, while it is open. */
static void tcp_figures(int fd, struct iw_qp_stats *s)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len))
		return;
	s->comp_mask |= IW_QP_STATS_TCP;
	s->tcp_state = ti.tcpi_state;
	s->tcp_rtt_us = ti.tcpi_rtt;
	s->tcp_rttvar_us = ti.tcpi_rttvar;
	s->tcp_snd_cwnd = ti.tcpi_snd_cwnd;
	s->tcp_unacked = ti.tcpi_unacked;
	s->tcp_retrans = ti.tcpi_total_retrans;
	s->tcp_pacing_rate = ti.tcpi_pacing_rate;
	s->tcp_bytes_acked = ti.tcpi_bytes_acked;
	s->tcp_bytes_received = ti.tcpi_bytes_received;
	s->tcp_snd_mss = ti.tcpi_snd_mss;
}

static struct iw_stats_term last_term(const iw_counter *c)
{
	uint64_t v = counter_get(c);

	return (struct iw_stats_term){
		.valid = (v >> 24) & 1,
		.layer = (uint8_t)(v >> 16),
		.etype = (uint8_t)(v >> 8),
		.ecode = (uint8_t)v,
	};
}

/* A snapshot of @qp; the caller keeps the QP alive. */
void stats_qp_fill(struct iw_qp *qp, struct iw_qp_stats *s)
{
	static const uint8_t state[] = {
		[RDMAP_QP_IDLE] = IW_QPS_INIT,
		[RDMAP_QP_RTS] = IW_QPS_RTS,
		[RDMAP_QP_TERMINATING] = IW_QPS_TERMINATING,
		[RDMAP_QP_ERROR] = IW_QPS_ERROR,
	};
	const struct rdmap_stats *st = &qp->engine.stats;
	const struct rdmap_qp *e = &qp->engine;
	struct iw_cm_id *id;
	pthread_mutex_t *l;

	memset(s, 0, sizeof(*s));
	s->qpn = qp->qpn;
	s->tx_octets = counter_get(&st->tx_octets);
	s->rx_octets = counter_get(&st->rx_octets);
	s->tx_fpdus = counter_get(&st->tx_fpdus);
	s->rx_fpdus = counter_get(&st->rx_fpdus);
	for (int i = 0; i < IW_STATS_OPCODES; i++) {
		s->tx_msgs[i] = counter_get(&st->tx_msgs[i]);
		s->rx_msgs[i] = counter_get(&st->rx_msgs[i]);
	}
	s->crc_errors = counter_get(&st->crc_errors);
	s->marker_errors = counter_get(&st->marker_errors);
	for (int i = 0; i < IW_STATS_LAYERS; i++) {
		s->term_tx[i] = counter_get(&st->term_tx[i]);
		s->term_rx[i] = counter_get(&st->term_rx[i]);
	}
	s->last_term_tx = last_term(&st->term_tx_last);
	s->last_term_rx = last_term(&st->term_rx_last);
	s->flushed = counter_get(&qp->flushed);
	s->ord_max = (uint32_t)counter_get(&st->ord_max);
	s->ird_max = (uint32_t)counter_get(&st->ird_max);

	l = qp_lock(qp);
	id = qp->id;
	s->state = state[e->state];
	s->driver = driver_of(qp, id);
	s->sq_outstanding = rdmap_sq_outstanding(e);
	s->sq_depth = qp->cap.max_send_wr;
	if (!qp->srq) {
		s->rq_posted = atomic_load(&qp->rq_unpolled);
		s->rq_depth = qp->cap.max_recv_wr;
	}
	s->ord_outstanding = e->ord_count;
	s->ird_outstanding = e->ird_count;
	s->ord = e->conn.ord;
	s->ird = e->conn.ird;
	if (e->state != RDMAP_QP_IDLE) {
		s->comp_mask |= IW_QP_STATS_CONN;
		s->initiator = e->conn.initiator;
		s->crc = e->conn.crc;
		s->markers_tx = e->conn.markers_tx;
		s->markers_rx = e->conn.markers_rx;
		s->rtr = e->conn.rtr;
		s->mulpdu = e->conn.mulpdu;
	}
	if (id) {
		s->mpa_revision = id->rep.rev;
		if (id->has_tp) {
			s->local = id->tp.local;
			s->peer = id->tp.peer;
			if (id->tp.fd >= 0)
				tcp_figures(id->tp.fd, s);
		}
	}
	pthread_mutex_unlock(l);
}

int iw_query_qp_stats(struct iw_qp *qp, struct iw_qp_stats *stats,
		      size_t stats_size)
{
	struct iw_qp_stats s;

	if (!qp || !stats || stats_size < offsetof(struct iw_qp_stats, tx_octets))
		return -EINVAL;
	stats_qp_fill(qp, &s);
	memcpy(stats, &s, stats_size < sizeof(s) ? stats_size : sizeof(s));
	return 0;
}

/* The context's sums: the QPs destroyed, and those alive now. */
void stats_ctx_fill(struct iw_context *ctx, struct iw_context_stats *s)
{
	pthread_mutex_lock(&ctx->stats_lock);
	*s = ctx->retired;
	s->comp_mask = 0;
	s->progress = ctx->mode;
	s->progress_threads = ctx->mode == IW_PROGRESS_MANUAL ? 0 : ctx->n_loops;
	s->qps = ctx->n_qps;
	s->listeners = ctx->n_listeners;
	s->qps_created = ctx->qps_created;
	for (struct iw_qp *qp = ctx->stats_qps; qp; qp = qp->stats_next) {
		struct iw_qp_stats q;

		stats_qp_fill(qp, &q);
		sum_counters(s, &q);
	}
	pthread_mutex_unlock(&ctx->stats_lock);
}

int iw_query_context_stats(struct iw_context *ctx,
			   struct iw_context_stats *stats, size_t stats_size)
{
	struct iw_context_stats s;

	if (!ctx || !stats ||
	    stats_size < offsetof(struct iw_context_stats, qps_created))
		return -EINVAL;
	stats_ctx_fill(ctx, &s);
	memcpy(stats, &s, stats_size < sizeof(s) ? stats_size : sizeof(s));
	return 0;
}
