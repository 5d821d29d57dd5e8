/* SPDX-License-Identifier: MIT */
/*
 * libiwarp connection manager, modelled on librdmacm: listen, connect,
 * accept, reject, disconnect, with events on a pollable channel.  The
 * MPA handshake (RFC 5044, RFC 6581) runs underneath; its options are set
 * per connection identifier with iw_set_mpa_opts().
 */
#ifndef IWARP_CM_H
#define IWARP_CM_H

#include <stdint.h>
#include <sys/socket.h>

#include <iwarp/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

struct iw_cm_channel;
struct iw_cm_id;

enum iw_cm_event_type {
	IW_CM_EVENT_CONNECT_REQUEST, /* a peer asks; id is a new identifier */
	IW_CM_EVENT_ESTABLISHED,
	IW_CM_EVENT_REJECTED,	     /* the peer said no (MPA Reply with R) */
	IW_CM_EVENT_UNREACHABLE,     /* TCP connect failed: refused, no route */
	IW_CM_EVENT_TIMEOUT,	     /* initiator: no TCP or MPA Reply in time */
	IW_CM_EVENT_CONNECT_ERROR,   /* handshake failed; status says why */
	IW_CM_EVENT_DISCONNECTED,
	IW_CM_EVENT_ERROR,	     /* an established stream failed */
};

/*
 * How a side treats an MPA option: never, when the peer asks, always.
 * OFF refuses a peer that requires the option, except that a responder
 * uses CRC whenever the initiator asks for it (RFC 5044 7.1.2).
 */
enum iw_mpa_pref {
	IW_MPA_OFF,
	IW_MPA_FOLLOW,
	IW_MPA_ON,
};

/* A peer's MPA Request or Reply, as it arrived. */
struct iw_mpa_info {
	uint8_t revision;
	uint8_t markers; /* M: the peer wants markers */
	uint8_t crc;	 /* C */
	uint8_t reject;	 /* R */
	uint8_t enhanced; /* RFC 6581 IRD/ORD words present */
	uint8_t p2p;	 /* peer-to-peer bit */
	uint8_t rtr;	 /* enum iw_rtr bits offered or chosen */
	uint16_t ird, ord;
	uint16_t private_data_len; /* without the IRD/ORD words */
};

/* A Terminate message: the RFC reading, and the siw (swapped) one. */
struct iw_terminate_info {
	uint8_t valid; /* a Terminate was sent or received */
	uint8_t received;
	uint8_t layer, etype, ecode;
	uint8_t swapped_layer, swapped_etype, swapped_ecode;
	const char *words;	   /* the RFC name of the triple, or NULL */
	const char *swapped_words; /* the RFC name of the swapped triple */
};

struct iw_cm_event {
	enum iw_cm_event_type event;
	struct iw_cm_id *id;
	struct iw_cm_id *listen_id; /* CONNECT_REQUEST: who listened */
	int status;		    /* 0, or a negative code: why */
	const void *private_data;   /* the peer's, verbatim */
	uint16_t private_data_len;
	struct iw_mpa_info peer;    /* the peer's MPA frame, when one came */
	struct iw_terminate_info terminate;
};

struct iw_conn_param {
	const void *private_data;
	uint16_t private_data_len;
	/* RDMA Read depths (RFC 6581 IRD/ORD, at most 16383); both 0: 16 */
	uint16_t ird; /* inbound Reads we take at once */
	uint16_t ord; /* outbound Reads we want to issue at once */
};

struct iw_mpa_opts {
	uint8_t revision;	 /* 1 or 2 (default 2, RFC 6581 enhanced) */
	enum iw_mpa_pref crc;	 /* default IW_MPA_FOLLOW */
	enum iw_mpa_pref markers; /* default IW_MPA_FOLLOW */
	uint8_t rtr;		 /* initiator: enum iw_rtr types offered
				  * (peer-to-peer), 0: none; responder:
				  * types accepted, 0: all */
	/* responder: 1 sends without waiting for the initiator's first
	 * FPDU (not RFC 5044's order; siw allows it), default 0 */
	uint8_t responder_first;
	/* initiator: TCP connect and MPA Reply, default 10000 */
	uint32_t reply_timeout_ms;
	/* responder: a connection without a Request is dropped, unseen */
	uint32_t request_timeout_ms; /* default 5000 */
	/* ours, after IRD/ORD; default 252, at most 508 (revision 1: 512) */
	uint16_t max_private_data;
	/*
	 * initiator (and a responder_first responder): how long the first
	 * FPDU waits after the MPA Reply, in microseconds.  Linux siw as
	 * responder misses an FPDU that arrives while it is still handing
	 * the socket to its QP; as initiator it refuses octets read with
	 * the Reply.  The default, IW_FIRST_FPDU_DELAY_AUTO, has an
	 * initiator wait as long as the handshake took, at least 1 ms and
	 * at most 100 ms, and a responder 100 ms; 0 sends at once.
	 */
	uint32_t first_fpdu_delay_us;
};

#define IW_FIRST_FPDU_DELAY_AUTO UINT32_MAX

struct iw_cm_channel *iw_create_cm_channel(struct iw_context *ctx);
int iw_destroy_cm_channel(struct iw_cm_channel *ch);
int iw_cm_channel_fd(struct iw_cm_channel *ch);
int iw_get_cm_event(struct iw_cm_channel *ch, struct iw_cm_event **event);
int iw_ack_cm_event(struct iw_cm_event *event);
const char *iw_cm_event_str(enum iw_cm_event_type event);

struct iw_cm_id *iw_create_id(struct iw_cm_channel *ch, void *context);
int iw_destroy_id(struct iw_cm_id *id);
void *iw_id_context(struct iw_cm_id *id);
int iw_set_mpa_opts(struct iw_cm_id *id, const struct iw_mpa_opts *opts);
void iw_mpa_opts_default(struct iw_mpa_opts *opts);

int iw_listen(struct iw_cm_id *id, const char *host, const char *port,
	      int backlog);
int iw_connect(struct iw_cm_id *id, const char *host, const char *port,
	       struct iw_qp *qp, const struct iw_conn_param *param);
int iw_accept(struct iw_cm_id *id, struct iw_qp *qp,
	      const struct iw_conn_param *param);
int iw_reject(struct iw_cm_id *id, const void *private_data,
	      uint16_t private_data_len);
int iw_disconnect(struct iw_cm_id *id);

int iw_get_local_addr(struct iw_cm_id *id, struct sockaddr_storage *addr);
int iw_get_peer_addr(struct iw_cm_id *id, struct sockaddr_storage *addr);

#ifdef __cplusplus
}
#endif

#endif /* IWARP_CM_H */
