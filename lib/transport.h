/* SPDX-License-Identifier: MIT */
/*
 * The TCP transport: one non-blocking socket per connection, driven by a
 * libevent loop.  It knows nothing of iWARP: its owner hands it octets to
 * send (iovecs into registered memory, gathered on demand) and takes what
 * arrives, either from a per-thread scratch buffer or straight into the
 * place the owner names (direct placement).
 *
 * Locking: every callback runs between ops->lock() and ops->unlock(); the
 * owner calls tp_kick(), tp_poll() and tp_shutdown() with that lock held
 * and tp_linger() and tp_free() without it.  tp_poll() lets a thread
 * other than the loop's move the connection on: it runs the same
 * callbacks.
 */
#ifndef IW_LIB_TRANSPORT_H
#define IW_LIB_TRANSPORT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "lib/pcap_writer.h"

struct event;
struct event_base;
struct evconnlistener;

struct tp_ops {
	void (*lock)(void *arg);
	void (*unlock)(void *arg);
	/* octets ready to send, as rdmap_tx_gather() hands them out */
	int (*tx_gather)(void *arg, struct iovec *iov, int max,
			 size_t max_bytes);
	void (*tx_advance)(void *arg, size_t len);
	/* received octets; a negative return closes nothing by itself */
	int (*rx_feed)(void *arg, const uint8_t *p, size_t len);
	/* where the next octets may go directly, and how many went there */
	uint8_t *(*rx_direct)(void *arg, size_t *len);
	int (*rx_direct_done)(void *arg, size_t len);
	/* an active open finished: 0 or a negated errno */
	void (*connected)(void *arg, int err);
	/* the peer closed (0) or the socket failed (negated errno) */
	void (*closed)(void *arg, int err);
	/*
	 * Tracing: the length of the frame that starts @p (the direction's
	 * first frame when @first; otherwise @off octets after it ended),
	 * 0 while @avail octets do not tell yet.  Each frame is traced as a
	 * TCP segment of its own, as dissectors expect.
	 */
	size_t (*trace_frame_len)(void *arg, bool tx, bool first, uint64_t off,
				  const uint8_t *p, size_t avail);
};

/*
 * Both directions of every traced connection go to one pcap writer,
 * shared by every context of the process that names the same path.
 */
struct tp_trace {
	pthread_mutex_t lock;
	char *path;
	unsigned int users;
	struct tp_trace *next;
	struct pcapw w;
	uint32_t next_isn;
	/* ports of our own active connections, so that when both ends are in
	 * this process the passive end does not trace it a second time */
	struct tp_trace_ports {
		uint16_t local, peer;
	} *active;
	size_t n_active, cap_active;
};

/* One direction's octets not yet traced: the rest of a frame. */
struct tp_trace_dir {
	uint8_t *buf;
	size_t len, cap;
	uint64_t off;	   /* stream octets traced so far */
	uint64_t first_len; /* of the direction's first frame, once known */
};

/*
 * How long a connection waits for a peer that has gone silent:
 * TCP_USER_TIMEOUT for data (and keepalive probes) not acknowledged, and
 * keepalive for a connection with nothing in flight.  0 turns either off
 * (the kernel's own limits, tcp_retries2, then apply).
 */
struct tp_timeouts {
	uint32_t ack_timeout_ms;
	uint32_t keepalive_idle_s, keepalive_interval_s, keepalive_count;
};

/*
 * Waiting for the peer to acknowledge what the socket holds: while it
 * keeps acknowledging, within the bounds below (tp_acks_*() in
 * tp_socket.c).
 */
struct tp_acks {
	int64_t start_ms, progress_ms;
	int unacked;
	int look_ms; /* how long until the next look */
};

struct tp_conn {
	int fd;
	struct tp_timeouts timeouts; /* given to every socket of it */
	bool has_timeouts;
	struct event *rev, *wev;
	const struct tp_ops *ops;
	void *arg;
	bool connecting;
	int connect_err; /* connect() failed at once: its errno */
	struct tp_addrs *next_addrs; /* connecting: those not tried yet */
	struct event_base *base;
	bool rx_resync;	 /* the last read filled the buffer */
	bool rx_large_done;	/* the last read ended a large frame's payload */
	uint8_t *rx_large_rest; /* where the rest of one goes, when it stopped
				 * inside it */
	bool write_armed;
	bool tx_blocked; /* the socket was full when we last sent */
	size_t tx_write; /* octets one sendmsg() hands TCP: tp_follow_mss() */
	size_t rx_since_tx; /* octets read since we last sent */
	bool polled;	 /* a thread polls it: the loop watches nothing */
	bool shut; /* no more callbacks into the owner */
	/* after tp_shutdown(): the FIN leaves once the peer has acknowledged
	 * every octet before it, looked at on this timer */
	struct event *fin_timer;
	struct tp_acks fin_acks;
	bool fin_sent;
	bool eof_seen;
	int tx_err; /* how a send failed: the end of the stream reads so */
	struct tp_trace *trace;
	struct pcapw_flow flow;
	int trace_side;	     /* which side of flow we are */
	bool trace_listed;   /* our ports are in trace->active */
	bool trace_started;  /* the flow's handshake is in the file */
	struct tp_trace_dir trace_dir[2]; /* 0: what we send, 1: receive */
	uint16_t trace_lport, trace_rport;
	struct sockaddr_storage local, peer;
};

struct tp_listener {
	struct evconnlistener *l;
	void (*accept_cb)(void *arg, int fd, const struct sockaddr *peer,
			  int peer_len);
	void *arg;
	struct event *resume; /* takes connections again after a pause */
	unsigned int taken;   /* connections since the last pause */
};

/* The addresses a name resolves to, in getaddrinfo()'s order. */
#define TP_MAX_ADDRS 8
struct tp_addrs {
	unsigned int n;
	socklen_t len[TP_MAX_ADDRS];
	struct sockaddr_storage ss[TP_MAX_ADDRS];
};

int tp_resolve(const char *host, const char *port, bool passive,
	       struct sockaddr_storage *ss, socklen_t *len);
int tp_resolve_all(const char *host, const char *port, struct tp_addrs *a);

int tp_connect(struct tp_conn *c, struct event_base *base,
	       const struct tp_addrs *a, const struct tp_ops *ops, void *arg,
	       struct tp_trace *trace);
int tp_adopt(struct tp_conn *c, struct event_base *base, int fd,
	     const struct tp_ops *ops, void *arg, struct tp_trace *trace);
int tp_kick(struct tp_conn *c);

/*
 * Whether the socket was full: what is left goes once it has room, sent
 * by the loop's write event or, while a thread polls the connection
 * (tp_set_polled()), at that thread's next poll.
 */
static inline bool tp_tx_waiting(const struct tp_conn *c)
{
	return c->tx_blocked;
}
bool tp_poll(struct tp_conn *c);
/* Reads in the calling thread that have brought data, ever: a thread
 * that waits tells from it whether a stream is still flowing to it. */
unsigned long tp_thread_reads(void);
uint32_t tp_mss(const struct tp_conn *c);
uint32_t tp_mss_bound(const struct tp_conn *c);
/* Octets one sendmsg() carries at most (but see tp_write_size()) */
#define TP_MAX_WRITE (1u << 20)
size_t tp_write_size(uint32_t mss);
void tp_follow_mss(struct tp_conn *c, uint32_t mss);
int tp_open_rx_window(struct tp_conn *c);
void tp_set_polled(struct tp_conn *c, bool polled);
short tp_wait_events(const struct tp_conn *c, int *fd);
void tp_poll_soon(struct tp_conn *c);
int tp_set_timeouts(struct tp_conn *c, const struct tp_timeouts *t);
/* Milliseconds since anything came from the peer, or -1. */
int64_t tp_silence_ms(const struct tp_conn *c);
void tp_shutdown(struct tp_conn *c);
/*
 * The FIN after tp_shutdown(), and tp_linger(), wait while the peer
 * acknowledges what we sent: at most TP_LINGER_STALL_MS in which it
 * acknowledges nothing, TP_LINGER_MAX_MS in all.
 */
#define TP_LINGER_STALL_MS 500
#define TP_LINGER_MAX_MS 5000
void tp_linger(struct tp_conn *c);
void tp_free(struct tp_conn *c);

int tp_listen(struct tp_listener *tl, struct event_base *base,
	      const struct sockaddr *sa, socklen_t len, int backlog,
	      void (*accept_cb)(void *arg, int fd, const struct sockaddr *peer,
				int peer_len),
	      void *arg);
void tp_listener_free(struct tp_listener *tl);
int tp_listener_addr(struct tp_listener *tl, struct sockaddr_storage *ss);

/* The trace writing to @path, opened on first use; NULL with *@err. */
struct tp_trace *tp_trace_get(const char *path, int *err);
void tp_trace_put(struct tp_trace *t);

#endif /* IW_LIB_TRANSPORT_H */
