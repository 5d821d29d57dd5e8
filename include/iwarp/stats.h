/* SPDX-License-Identifier: MIT */
/*
 * libiwarp statistics: what a queue pair's connection and a whole context
 * have carried, read while they run.  The counters are always kept; a
 * query takes a snapshot (counters are read one by one, each whole, not
 * all at the same instant).  The iwarp-stat(1) tool shows the same
 * figures for every libiwarp process of the user.  See iw_query_qp_stats(3)
 * and iwarp(7) for what each counter means.
 */
#ifndef IWARP_STATS_H
#define IWARP_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <iwarp/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Message counters are indexed by RDMAP opcode (RFC 5040 4.2, RFC 7306). */
enum iw_stats_opcode {
	IW_STATS_OP_WRITE = 0,
	IW_STATS_OP_READ_REQ = 1,
	IW_STATS_OP_READ_RESP = 2,
	IW_STATS_OP_SEND = 3,
	IW_STATS_OP_SEND_INV = 4,
	IW_STATS_OP_SEND_SE = 5,
	IW_STATS_OP_SEND_SE_INV = 6,
	IW_STATS_OP_TERMINATE = 7,
	IW_STATS_OP_ATOMIC_REQ = 10,
	IW_STATS_OP_ATOMIC_RESP = 11,
	IW_STATS_OP_IMM = 12,
	IW_STATS_OP_IMM_SE = 13,
	IW_STATS_OPCODES = 16,
};

/* Terminate layers (RFC 5040 7.1), the index of term_tx and term_rx. */
enum iw_stats_layer {
	IW_STATS_LAYER_RDMAP = 0,
	IW_STATS_LAYER_DDP = 1,
	IW_STATS_LAYER_LLP = 2, /* MPA */
	IW_STATS_LAYERS = 3,
};

/* Who runs a connection's receive path right now. */
enum iw_stats_driver {
	IW_STATS_DRIVER_NONE,	    /* not connected */
	IW_STATS_DRIVER_LOOP,	    /* a progress thread (or the app's loop) */
	IW_STATS_DRIVER_APP_POLL,   /* the application's polls took it over */
	IW_STATS_DRIVER_APP_WAIT,   /* a thread waiting in iw_progress_cq() */
	IW_STATS_DRIVER_MANUAL,	    /* manual mode: the application's calls */
};

/* Which groups of struct iw_qp_stats hold figures (output). */
enum iw_qp_stats_mask {
	IW_QP_STATS_CONN = 1 << 0, /* connected once: addresses, MPA options */
	IW_QP_STATS_TCP = 1 << 1,  /* the socket is open: the tcp_* fields */
};

/* A Terminate triple, as sent or received; valid says one was. */
struct iw_stats_term {
	uint8_t valid;
	uint8_t layer, etype, ecode;
};

/*
 * One QP and its connection.  Fields are only ever added at the end: the
 * caller passes sizeof(struct iw_qp_stats) as it was compiled and the
 * library fills no more than that.
 */
struct iw_qp_stats {
	uint32_t comp_mask; /* enum iw_qp_stats_mask */
	uint32_t qpn;	    /* the QP's number in this process */
	enum iw_qp_state state;
	enum iw_stats_driver driver;
	/* traffic: wire octets (MPA framing included) and FPDUs */
	uint64_t tx_octets, rx_octets;
	uint64_t tx_fpdus, rx_fpdus;
	/* messages by enum iw_stats_opcode, counted once whole */
	uint64_t tx_msgs[IW_STATS_OPCODES], rx_msgs[IW_STATS_OPCODES];
	uint64_t crc_errors;	 /* FPDUs received with a bad CRC */
	uint64_t marker_errors;	 /* markers received that did not point right */
	uint64_t term_tx[IW_STATS_LAYERS], term_rx[IW_STATS_LAYERS];
	struct iw_stats_term last_term_tx, last_term_rx;
	uint64_t flushed; /* work requests completed with IW_WC_WR_FLUSH_ERR */
	/* queues right now, against their depth */
	uint32_t sq_outstanding, sq_depth; /* posted, not yet complete */
	uint32_t rq_posted, rq_depth;	   /* 0, 0 with an SRQ */
	uint32_t ord_outstanding, ord, ord_max; /* outbound Reads, atomics */
	uint32_t ird_outstanding, ird, ird_max; /* inbound ones */
	/* IW_QP_STATS_CONN: what the MPA handshake settled */
	uint8_t initiator;
	uint8_t mpa_revision;
	uint8_t crc;
	uint8_t markers_tx, markers_rx;
	uint8_t rtr; /* enum iw_rtr, or 0 */
	uint16_t mulpdu;
	struct sockaddr_storage local, peer;
	/* IW_QP_STATS_TCP: TCP_INFO, read at the query (see tcp(7)) */
	uint8_t tcp_state;
	uint32_t tcp_rtt_us, tcp_rttvar_us;
	uint32_t tcp_snd_cwnd;	   /* segments */
	uint32_t tcp_unacked;	   /* segments sent, not acknowledged */
	uint32_t tcp_retrans;	   /* segments retransmitted, ever */
	uint64_t tcp_pacing_rate;  /* octets per second */
	uint64_t tcp_bytes_acked, tcp_bytes_received;
	uint32_t tcp_snd_mss;
};

/*
 * A context: its objects now, and the sums of its QPs' counters (those
 * destroyed included).  Grows as struct iw_qp_stats does.
 */
struct iw_context_stats {
	uint32_t comp_mask; /* none defined yet: 0 */
	enum iw_progress_mode progress;
	uint32_t progress_threads;
	uint32_t qps;	    /* now */
	uint32_t listeners; /* now */
	uint64_t qps_created;
	uint64_t tx_octets, rx_octets;
	uint64_t tx_fpdus, rx_fpdus;
	uint64_t tx_msgs[IW_STATS_OPCODES], rx_msgs[IW_STATS_OPCODES];
	uint64_t crc_errors, marker_errors;
	uint64_t term_tx[IW_STATS_LAYERS], term_rx[IW_STATS_LAYERS];
	uint64_t flushed;
};

int iw_query_qp_stats(struct iw_qp *qp, struct iw_qp_stats *stats,
		      size_t stats_size);
int iw_query_context_stats(struct iw_context *ctx,
			   struct iw_context_stats *stats, size_t stats_size);

#ifdef __cplusplus
}
#endif

#endif /* IWARP_STATS_H */
