/* SPDX-License-Identifier: MIT */
/*
 * The verbs layer's objects behind the public API: the device context and
 * its progress loop, CQs, QPs around an RDMAP engine, SRQs, and connection
 * identifiers that run the MPA handshake over the TCP transport.
 *
 * Locks, taken in this order, never the other way round:
 *   a PD's lock (struct iw_pd.lock) > a connection's lock
 *   (struct iw_cm_id.lock; a QP not connected yet uses its own) > an
 *   SRQ's CQ list (struct iw_srq.lock) > a CQ's lock > a CM channel's
 *   lock; the context's lock (pd ids, listeners' pending lists) is taken
 *   last, under any of them.
 * The statistics take theirs above all of these: the process's list of
 * contexts (stats_server.c) > a context's stats_lock > a connection's lock.
 * The STag table and an SRQ's receive ring lock themselves.
 */
#ifndef IW_VERBS_H
#define IW_VERBS_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "iwarp/cm.h"
#include "iwarp/stats.h"
#include "iwarp/verbs.h"
#include "lib/counter.h"
#include "lib/grace.h"
#include "lib/transport.h"
#include "mpa/mpa.h"
#include "rdmap/rdmap.h"

/* A public SGE list is handed to the engine as it is. */
_Static_assert(sizeof(struct iw_sge) == sizeof(struct rdmap_sge) &&
		       offsetof(struct iw_sge, addr) ==
			       offsetof(struct rdmap_sge, addr) &&
		       offsetof(struct iw_sge, length) ==
			       offsetof(struct rdmap_sge, length) &&
		       offsetof(struct iw_sge, lkey) ==
			       offsetof(struct rdmap_sge, lkey),
	       "struct iw_sge and struct rdmap_sge must have one layout");

/* The largest values the calls take (iw_query_device() reports them). */
#define QP_MAX_WR 16384
#define QP_MAX_INLINE 1024
#define CQ_MAX_CQE (1 << 22)

/*
 * An event loop of the context: a libevent base and, unless the
 * application drives it, a thread dispatching it.  Connections are spread
 * over the loops; listeners, handshake timers and deferred frees use the
 * first.  In manual mode the application's calls dispatch it: whoever
 * holds @dispatch runs it, nobody waits for it.
 */
struct progress_loop {
	struct event_base *base;
	bool own_base;
	pthread_t thread;
	bool thread_running;
	struct event *stop_ev;
	pthread_mutex_t dispatch; /* manual: held by whoever runs it */
	atomic_uint barriers;	  /* manual: waiting for it to stop */
	/*
	 * Connections the application's threads hold (struct
	 * iw_cm_id.held): the release timer gives them back to the loop
	 * once the application stops polling them.
	 */
	pthread_mutex_t held_lock;
	struct iw_cm_id *held_list;
	struct event *release_timer;
	bool release_armed;
};

struct iw_context {
	struct event_base *base; /* the first loop's: listeners, timers */
	enum iw_progress_mode mode;
	struct progress_loop *loops;
	uint32_t n_loops;
	atomic_uint next_loop; /* where the next connection goes */
	struct ddp_stag_table stags;
	pthread_mutex_t lock; /* pd ids, listeners' pending lists */
	uint32_t next_pd;
	atomic_int debug;
	struct tp_trace *trace; /* NULL: not tracing */
	struct tp_timeouts qp_timeouts; /* what QPs start with: timeouts.c */
	pthread_mutex_t cqs_lock; /* the CQ list; held by a helping thread */
	struct iw_cq *cqs;
	uint32_t help_calls;
	/*
	 * Statistics (stats.c): the context's QPs and listeners, and the
	 * counters of the QPs destroyed; the process's contexts are linked
	 * through reg_prev/reg_next for the iwarp-stat endpoint.
	 */
	pthread_mutex_t stats_lock;
	struct iw_qp *stats_qps;
	struct iw_cm_id *stats_listeners;
	uint32_t n_qps, n_listeners;
	uint64_t qps_created;
	struct iw_context_stats retired;
	uint32_t stats_id; /* the context's number in the process */
	pid_t stats_pid;    /* the process that listed it (fork) */
	struct iw_context *reg_prev, *reg_next;
};

/*
 * A protection domain: its QPs and SRQs, listed for iw_dereg_mr() to
 * look through.  Posting takes no lock of the PD.
 */
struct iw_pd {
	struct iw_context *ctx;
	uint32_t id;
	pthread_mutex_t lock; /* the lists below */
	struct iw_qp *qps;   /* linked through pd_next */
	struct iw_srq *srqs; /* linked through pd_next */
	atomic_uint mrs;     /* regions registered in it */
};

/*
 * A completion in a CQ's ring (a bounded queue of many producers and
 * many consumers that takes no lock).  @turn says whose turn the slot is,
 * counted from the first position of the ring's lap it is in (the
 * position less the slot's index): a producer's when it equals that
 * first position, a consumer's at one more.  Zeroed memory is every
 * slot's first lap, open to producers: a new ring needs no pass over its
 * slots, and pages no completion reaches are never touched.
 * @slots is the queue whose slot the completion holds until it is polled;
 * when the QP goes first, its completions become orphans (@state), which
 * keep their room in the CQ until polled but free no queue slot.
 */
enum cq_entry_state {
	CQE_LIVE,
	CQE_TAKEN,  /* a consumer has it */
	CQE_ORPHAN, /* its QP was destroyed */
};

struct cq_entry {
	atomic_uint turn;
	atomic_uchar state; /* enum cq_entry_state */
	_Atomic(struct iw_qp *) qp;
	atomic_uint *slots;
	struct iw_wc wc;
};

/* The QPs that complete on a CQ: what an empty poll makes progress on. */
struct cq_qps {
	uint32_t n;
	struct iw_qp *qp[];
};

/*
 * The ring a CQ's completions are in.  When the QPs attached to a CQ
 * reserve more than its ring holds, a bigger ring follows it (@next):
 * producers move on to it at once, consumers once this one is drained.
 * Nothing is moved or copied, so neither side takes a lock.  The old ring
 * is sealed by a bit above the tail's 32-bit position, which makes every
 * producer's claim on it fail from then on.
 */
#define CQ_RING_SEALED ((uint64_t)1 << 32)

struct cq_ring {
	uint32_t cap;  /* completions it holds */
	uint32_t mask; /* slots - 1: a power of two at least cap */
	size_t bytes;  /* its memory, mapped (@mapped) or from the heap */
	bool mapped;
	_Atomic(struct cq_ring *) next; /* the bigger ring after it */
	struct cq_ring *older;		/* the CQ's rings, freed with it */
	/* consumers and producers each on a cache line of their own */
	_Alignas(64) atomic_uint head;
	_Alignas(64) _Atomic uint64_t tail; /* position | CQ_RING_SEALED */
	_Alignas(64) struct cq_entry e[];
};

struct iw_cq {
	struct iw_context *ctx;
	void *cq_context;
	uint32_t size; /* completions asked for (iw_create_cq, iw_resize_cq) */
	_Atomic(struct cq_ring *) rx; /* the oldest ring: consumers' */
	_Atomic(struct cq_ring *) tx; /* the newest ring: producers' */
	struct cq_ring *rings; /* every ring, newest first (lock) */
	_Alignas(64) struct grace grace; /* pollers against QPs going away */
	_Atomic(struct cq_qps *) qps;
	/*
	 * The application's looks at the CQ: iw_poll_cq() calls, empty or
	 * not, and wakeups of a thread waiting in iw_progress_cq().  Whether
	 * anyone polls the CQ (cq_polls()), and what runs once in so many
	 * looks (CQ_BUSY_PROGRESS, MANUAL_LOOP_EVERY), are read from it.
	 */
	atomic_uint polls;
	atomic_uint qp_rotation; /* the QP the next pass starts at */
	/*
	 * Empty polls in a row, by whichever thread, up to CQ_IDLE_HELP: the
	 * second takes the QPs' connections (progress_hold()), the
	 * CQ_IDLE_HELP-th on help CQs nobody polls (progress_help()).
	 */
	atomic_uint empty_run;
	/*
	 * The number of the last poll that read every socket of the CQ's QPs
	 * to its end and found completions, and when it did: the poll after
	 * it, empty and soon enough, need not read again (just_drained() in
	 * cq.c).
	 */
	atomic_uint drained_poll;
	_Atomic long long drained_ns;
	atomic_bool armed;
	atomic_bool solicited_only;
	atomic_bool overrun;
	atomic_bool tx_deferred; /* a QP's posted work waits for a poll */
	atomic_uint waiters; /* threads asleep in iw_progress_cq() on it */
	int efd; /* eventfd: readable after an armed completion */
	pthread_mutex_t lock; /* reserved, orphans' walk, the QP list, growth */
	uint32_t reserved; /* work requests of attached QPs it must hold */
	atomic_uint orphans; /* completions of destroyed QPs, not polled yet */
	atomic_uint forgetting; /* cq_forget_qp() calls under way */
	unsigned int events, acked;
	/* the context's CQs (ctx->cqs_lock), for progress_help() */
	struct iw_cq *ctx_prev, *ctx_next;
	uint32_t polls_seen; /* polls at the last look */
	bool unpolled;	     /* none between the last two looks */
};

/* A CQ that receives from an SRQ reserves its depth once. */
struct srq_cq_use {
	struct iw_cq *cq;
	unsigned int qps;
};

struct iw_srq {
	struct iw_pd *pd;
	void *srq_context;
	struct rdmap_srq srq;
	uint32_t max_wr;
	atomic_uint unpolled; /* posted receives whose completion is unpolled */
	pthread_mutex_t lock; /* cq_uses */
	struct srq_cq_use *cq_uses;
	unsigned int n_cq_uses, qps;
	struct iw_srq *pd_prev, *pd_next;
};

struct iw_qp {
	struct iw_pd *pd;
	struct iw_context *ctx;
	void *qp_context;
	struct iw_cq *send_cq, *recv_cq;
	struct iw_srq *srq;
	struct iw_qp_cap cap;
	bool sig_all;
	/*
	 * A queue slot frees when its completion is polled, not when it is
	 * produced, so a CQ sized for the queues never overruns.
	 */
	atomic_uint sq_cqes;	 /* send completions sitting in the CQ */
	atomic_uint rq_unpolled; /* receives posted, completion not polled */
	pthread_mutex_t own_lock;
	_Atomic(pthread_mutex_t *) lock; /* the connection's once attached */
	struct iw_cm_id *id;		 /* the connection, or NULL */
	struct iw_qp *pd_prev, *pd_next;
	struct tp_timeouts timeouts; /* for a silent peer: timeouts.c */
	struct rdmap_qp engine;
	/* statistics (stats.c), after what the data path reads */
	uint32_t qpn;
	iw_counter flushed;
	struct iw_qp *stats_prev, *stats_next; /* ctx->stats_lock */
};

/* Where a connection identifier stands. */
enum id_state {
	ID_IDLE,
	ID_LISTEN,
	ID_TCP_CONNECT,	 /* active: TCP connect under way */
	ID_REQ_SENT,	 /* active: MPA Request out, waiting for the Reply */
	ID_REQ_WAIT,	 /* passive: waiting for the MPA Request */
	ID_REQ_RCVD,	 /* passive: the application decides */
	ID_REPLYING,	 /* passive: a Reply goes out, then RTS or close */
	ID_CONNECTED,
	ID_CLOSED,
};

struct iw_cm_channel {
	struct iw_context *ctx;
	pthread_mutex_t lock;
	int efd; /* eventfd: readable while an event is queued */
	bool readable; /* efd holds its count of 1 */
	struct cm_event_node *head, *tail;
};

/*
 * The events an identifier reports in its life: CONNECT_REQUEST (passive
 * side), ESTABLISHED, and one final event.
 */
#define CM_EVENTS_PER_ID 3

struct iw_cm_id {
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	void *context;
	struct iw_mpa_opts opts;
	pthread_mutex_t lock;
	uint8_t state; /* enum id_state */
	struct iw_cm_id *listen_id;
	/*
	 * A listener's connections still waiting for their MPA Request (they
	 * go with it), oldest first, linked through pend_prev/pend_next under
	 * ctx->lock.
	 */
	struct iw_cm_id *pending, *pending_tail;
	struct iw_cm_id *pend_prev, *pend_next;
	bool pend_linked;
	/* a listener: how many are pending, and how many may be (backlog) */
	uint32_t n_pending, max_pending;
	/* a listener: its CONNECT_REQUEST events not taken yet (ch->lock) */
	uint32_t n_queued;
	struct timespec accepted; /* passive: when TCP was accepted */
	struct tp_listener listener;
	struct tp_conn tp;
	bool has_tp;
	struct progress_loop *loop; /* the one watching tp */
	/*
	 * held: the application's threads hold the connection (progress.c):
	 * their polls read the socket and the loop stops watching it, so
	 * that its thread does not wake for every message only to find it
	 * taken, nor other threads' polls send on it in passing (manual
	 * mode).  held_polls counts those polls, for the release timer.
	 * held_by_waiter: a thread waiting in iw_progress_cq() took hold;
	 * only the timer releases such a connection.
	 */
	bool held;
	bool held_by_waiter;
	/*
	 * Meanwhile, work posted after another post with no poll between
	 * them waits for the next poll of the QP's CQs (or the hand-back), so
	 * that requests posted one at a time leave in one write rather than
	 * in one each.  polls_at_post: the CQs' polls at the last post.  (In
	 * the padding around held_polls: the fields after keep their place.)
	 */
	bool tx_deferred;
	uint32_t held_polls, held_polls_seen;
	uint32_t polls_at_post;
	struct iw_cm_id *held_prev, *held_next;
	struct event *timer;	  /* handshake, first FPDU hold */
	struct event *term_timer; /* a Terminate's time to leave */
	struct iw_qp *qp;
	bool up;	   /* ESTABLISHED went out */
	bool reported;	   /* the final event (error/disconnect) went out */
	bool internal;	   /* a passive id the application has not seen */
	bool close_after_tx; /* a refusing Reply: close once it has left */
	bool answered;	     /* passive: iw_accept() or iw_reject() decided */
	bool tx_hold;	     /* the first FPDU waits (timer) */
	/* octets the engine has sent, and when to look at the MSS again */
	uint64_t tx_octets, mss_look_at;
	bool term_deadline;  /* term_timer runs */
	/* initiator: when our Request went out and the Reply came */
	struct timespec hs_start, hs_done;
	/* the MPA frame going out (Request or Reply) */
	uint8_t out[MPA_FRAME_HDR_LEN + MPA_MAX_PD_LEN];
	size_t out_len, out_sent;
	/* the MPA frame coming in */
	uint8_t in[MPA_FRAME_HDR_LEN + MPA_MAX_PD_LEN];
	size_t in_len;
	struct mpa_frame req; /* ours (active) or the peer's (passive) */
	struct mpa_frame rep;
	struct mpa_policy policy;
	struct iw_mpa_info peer;
	uint8_t peer_pd[MPA_MAX_PD_LEN];
	uint16_t peer_pd_len;
	struct iw_terminate_info term;
	/* the nodes of the events still to come, allocated up front */
	struct cm_event_node *ev_nodes[CM_EVENTS_PER_ID];
	unsigned int ev_left;
	/* a listener: its address, and its place in ctx->stats_listeners */
	struct sockaddr_storage listen_addr;
	struct iw_cm_id *stats_prev, *stats_next;
	bool stats_linked;
};

/* context.c */
void iw_log(struct iw_context *ctx, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void iw_log_id(struct iw_cm_id *id, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* ADDR:PORT, or [ADDR]:PORT for IPv6 */
void iw_format_addr(const struct sockaddr_storage *ss, char *out, size_t len);

/* timeouts.c */
void ctx_timeouts_init(struct iw_context *ctx);
int conn_apply_timeouts(struct iw_cm_id *id);
int conn_silence(struct iw_cm_id *id, int err);

/* mr.c */
void pd_add_qp(struct iw_pd *pd, struct iw_qp *qp);
void pd_remove_qp(struct iw_pd *pd, struct iw_qp *qp);
void pd_add_srq(struct iw_pd *pd, struct iw_srq *srq);
void pd_remove_srq(struct iw_pd *pd, struct iw_srq *srq);

/* cq.c */
void cq_push(struct iw_cq *cq, const struct iw_wc *wc, uint32_t n,
	     atomic_uint *slots, bool take_slot);
int cq_reserve(struct iw_cq *cq, uint32_t n);
void cq_release(struct iw_cq *cq, uint32_t n);
int cq_add_qp(struct iw_cq *cq, struct iw_qp *qp);
void cq_remove_qp(struct iw_cq *cq, struct iw_qp *qp);
void cq_forget_qp(struct iw_cq *cq, struct iw_qp *qp);
uint32_t cq_polls(struct iw_cq *cq);
uint32_t cq_count_poll(struct iw_cq *cq);
bool cq_ready(struct iw_cq *cq);

/* progress.c */
int progress_start(struct iw_context *ctx, const struct iw_context_attr *attr);
void progress_stop(struct iw_context *ctx);
struct progress_loop *progress_conn_loop(struct iw_context *ctx);
void progress_hold(struct iw_cm_id *id);
void progress_unhold(struct iw_cm_id *id);
void progress_cq_armed(struct iw_cq *cq);
void progress_in_loop(struct iw_context *ctx, void (*fn)(void *arg), void *arg);
bool progress_cq(struct iw_cq *cq, uint32_t poll, bool waiting);
bool progress_loop_due(const struct iw_cq *cq, uint32_t poll);
void progress_flush(struct iw_cq *cq);
void progress_help(struct iw_cq *idle);
int progress_wait_fd(struct iw_context *ctx, int fd, int timeout_ms);
void progress_quiesce_qp(struct iw_qp *qp);
bool progress_qp_waited(const struct iw_qp *qp);

/* qp.c */
pthread_mutex_t *qp_lock(struct iw_qp *qp);
extern const struct rdmap_ops qp_engine_ops;

/* cm.c */
void cm_event(struct iw_cm_id *id, enum iw_cm_event_type type, int status,
	      bool with_peer);
void cm_stream_ended(struct iw_cm_id *id, int err);
bool cm_unlink_pending(struct iw_cm_id *id);

/* stats.c */
void stats_ctx_init(struct iw_context *ctx);
void stats_ctx_fini(struct iw_context *ctx);
void stats_add_qp(struct iw_qp *qp);
void stats_remove_qp(struct iw_qp *qp);
void stats_add_listener(struct iw_cm_id *id);
void stats_remove_listener(struct iw_cm_id *id);
void stats_qp_fill(struct iw_qp *qp, struct iw_qp_stats *s);
void stats_ctx_fill(struct iw_context *ctx, struct iw_context_stats *s);

/* stats_report.c */
void stats_report_ctx(FILE *f, struct iw_context *ctx);

/* stats_server.c: the process's iwarp-stat endpoint */
void stats_register(struct iw_context *ctx);
void stats_unregister(struct iw_context *ctx);

/* conn.c: the transport's owner for one connection */
extern const struct tp_ops conn_tp_ops;
void conn_hold_first_fpdu(struct iw_cm_id *id, bool initiator);
void conn_release_hold(struct iw_cm_id *id);
void conn_terminate_expired(struct iw_cm_id *id);
void conn_kick(struct iw_cm_id *id);
void conn_posted(struct iw_cm_id *id);
void conn_flush(struct iw_cm_id *id);
bool conn_progress(struct iw_cm_id *id, bool waiting);
void conn_established(struct iw_cm_id *id, const struct mpa_params *mp,
		      bool initiator);
void conn_close(struct iw_cm_id *id, int err);

#endif /* IW_VERBS_H */
