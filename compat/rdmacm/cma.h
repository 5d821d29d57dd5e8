/* SPDX-License-Identifier: MIT */
/*
 * libiwarp's librdmacm: rdma_cm identifiers over libiwarp's connection
 * manager.  One libiwarp CM channel serves the process; a thread of ours
 * (the pump) takes its events and turns each into the rdma_cm event of
 * the identifier it concerns, queued on that identifier's event channel.
 * An event channel's descriptor is an eventfd readable exactly while
 * events are queued, so applications poll it as a kernel channel.
 * Events that have no libiwarp counterpart (address and route resolved)
 * are queued by the calls that make them.
 *
 * Locks, in this order: the life lock (the process's device, default PD,
 * libiwarp channel and pump) > the route lock (the list of identifiers
 * and the libiwarp identifier of each) > a channel's lock > an
 * identifier's event lock.
 */
#ifndef IWRC_CMA_H
#define IWRC_CMA_H

#include <netdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdma/rdma_cma.h>

#include "compat/ibverbs/rdmacm_iface.h"

#define ERR(e) (errno = (e), -1)

/* RDMA Read depths when the application leaves them to the device */
#define CMA_MAX_RD IWV_MAX_RD_ATOM
#define CMA_MAX_PRIVATE_DATA 255

struct cma_event {
	struct rdma_cm_event event;
	struct cma_id *owner; /* whose acknowledgement count it is */
	struct cma_event *next;
	uint8_t private_data[CMA_MAX_PRIVATE_DATA];
};

struct cma_channel {
	struct rdma_event_channel ch; /* fd: an eventfd */
	pthread_mutex_t lock;
	struct cma_event *head, *tail;
	bool readable; /* the eventfd holds its count of 1 */
	bool dead; /* destroyed: kept, and waited on for good (channel.c) */
	struct cma_channel *next_dead;
};

enum cma_state {
	CMA_IDLE,
	CMA_BOUND,
	CMA_ADDR_RESOLVED,
	CMA_ROUTE_RESOLVED,
	CMA_LISTEN,
	CMA_CONNECT,	 /* a connection is being made or accepted */
	CMA_CONNECTED,
	CMA_DISCONNECTED, /* the connection ended or failed */
};

struct cma_id {
	struct rdma_cm_id id;
	struct cma_id *next;	  /* in the process's list */
	struct iw_cm_id *iw;	  /* under the route lock */
	bool sync;		  /* a channel of its own, calls wait */
	bool released;		  /* its QP's destruction ended the connection */
	/* the QP its connection holds (rdmacm_iface.h), under the route
	 * lock; NULL once the QP is destroyed */
	struct ibv_qp *held_qp;
	enum cma_state state;
	int bind_fd;		  /* holds the bound port until listen, or -1 */
	/* the peer's Read depths, from its connection request */
	uint8_t initiator_depth, responder_resources;
	/* its request offered RFC 6581 peer-to-peer mode */
	bool peer_p2p;
	/* rdma_create_ep(): what rdma_get_request() creates QPs with */
	struct ibv_qp_init_attr *qp_init_attr;
	/* rdma_create_ep(): private data that rdma_connect() sends */
	uint8_t connect_data[CMA_MAX_PRIVATE_DATA];
	uint8_t connect_len;
	/* events handed to the application and acknowledged */
	pthread_mutex_t ev_lock;
	pthread_cond_t ev_cond;
	unsigned int delivered, acked;
	/* RDMA_OPTION_ID_ACK_TIMEOUT: the QP's IBV_QP_TIMEOUT, 0: not set */
	uint8_t ack_timeout;
	/* the CQs and channels rdma_create_qp() made */
	bool own_cqs;
	/*
	 * rdma_connect(): what it connected to and with, so that a refused
	 * connection can be tried again (see cma_retries()); the retry
	 * state is under the route lock
	 */
	bool active;
	char host[NI_MAXHOST], port[NI_MAXSERV];
	struct iw_conn_param cparam;
	uint8_t cpd[CMA_MAX_PRIVATE_DATA];
	uint64_t give_up_ms;	 /* no more tries after this */
	uint64_t retry_at_ms;	 /* a try is due then */
	bool retry_pending, retrying;
};

static inline struct cma_id *to_cma_id(struct rdma_cm_id *id)
{
	return iwv_container_of(id, struct cma_id, id);
}

static inline struct cma_channel *to_cma_ch(struct rdma_event_channel *ch)
{
	return iwv_container_of(ch, struct cma_channel, ch);
}

/*
 * The libiwarp QP behind @qp, through libibverbs' table (rdmacm_iface.h),
 * or NULL for a QP of another libibverbs.
 */
static inline struct iw_qp *cma_iw_qp(struct ibv_qp *qp)
{
	const struct iwv_rdmacm_iface *f = iwv_rdmacm_iface(qp->context);

	return f ? f->iw_qp(qp) : NULL;
}

/* channel.c: the process's device, channels, events, the pump */
int cma_get(void);
void cma_get_more(void);
void cma_put(void);
struct ibv_context *cma_verbs(void);
struct ibv_pd *cma_default_pd(void);
struct iw_cm_channel *cma_iw_channel(void);
extern pthread_mutex_t cma_route_lock;
extern pthread_cond_t cma_route_cond;
extern struct cma_id *cma_ids;
struct cma_channel *cma_channel_new(void);
void cma_channel_free(struct cma_channel *c);
struct cma_event *cma_event_new(struct cma_id *id, enum rdma_cm_event_type type,
				int status);
void cma_event_queue(struct cma_channel *c, struct cma_event *e);
void cma_channel_forget(struct cma_channel *c, struct cma_id *id,
			struct cma_id **orphans, unsigned int *n_orphans,
			unsigned int max);
void cma_channel_move(struct cma_channel *from, struct cma_channel *to,
		      struct cma_id *id);
void cma_drain(void);

/* cma.c: identifiers */
struct cma_id *cma_id_new(struct rdma_event_channel *ch, void *context,
			  enum rdma_port_space ps, enum ibv_qp_type qp_type);
void cma_id_on_device(struct cma_id *c);
void cma_id_addrs(struct cma_id *c);
int cma_complete(struct cma_id *c);

/*
 * events.c: libiwarp's events, the QP hook, retries.  A connection that
 * nothing took is tried again every CMA_RETRY_EVERY_MS for up to
 * CMA_RETRY_FOR_MS: a server may listen a moment after its client was
 * told it would (perftest's data connection), and perftest cannot retry.
 * A loaded or emulated server's moment can pass a second.
 */
#define CMA_RETRY_FOR_MS 5000
#define CMA_RETRY_EVERY_MS 20
uint64_t cma_now_ms(void);
int cma_status(int iw_rc);
void cma_route_iw_event(const struct iw_cm_event *ev);
void cma_hold_qp(struct cma_id *c, struct ibv_qp *qp);
void cma_unhold_qp(struct cma_id *c);
void cma_unhold_qp_locked(struct cma_id *c);
struct iw_cm_id *cma_iw_id_for(struct cma_id *c);
void cma_iw_id_drop(struct cma_id *c);
int cma_mpa_rev(void);
void cma_mpa_opts(struct iw_cm_id *iw);
int cma_retry_wait_ms(void);
void cma_retries(void);

#endif /* IWRC_CMA_H */
