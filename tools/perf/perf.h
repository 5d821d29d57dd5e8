/* SPDX-License-Identifier: MIT */
/*
 * iwarp-perf: what its files share.  perf_wire.c encodes the private data
 * and control messages, perf_iw.c holds the iWARP resources and waits,
 * perf_client.c and perf_server.c run the two ends of each pattern over
 * libiwarp, perf_tcp.c runs the same patterns over a plain TCP socket, and
 * perf_report.c prints the rows.
 */
#ifndef IW_PERF_H
#define IW_PERF_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <poll.h>

#include "tool.h"

#define PERF_PROG "iwarp-perf"
#define PERF_PORT "18515"
#define PERF_SWEEP_MIN 2
#define PERF_SWEEP_MAX (8u << 20)
#define PERF_MAX_QPS 1024
#define PERF_MAX_THREADS 256
#define PERF_MAX_IDLE 100000
#define PERF_MAX_DEPTH 16383 /* the RFC 6581 IRD/ORD limit bounds Reads */
#define PERF_SERVER_MAX (1ull << 30) /* --max-size default */
#define PERF_MAX_SLICES 64
#define PERF_DEF_RX_DEPTH 512 /* --rx-depth default, perftest's -r */
/*
 * Completions a stream's poll takes, at either end: a whole depth that
 * completed at once then goes out again as one chain (its receives, at
 * the server), as the TCP comparison writes up to DEPTH messages, at
 * most 1024 pieces, a writev.
 */
#define PERF_STREAM_POLL 1024
#define PERF_MIN_SLICE_S 0.1 /* a slice is long beside a pipeline's start */

enum perf_mode { PERF_BW, PERF_LAT, PERF_RATE };
enum perf_test {
	PERF_SEND,
	PERF_WRITE,
	PERF_READ,
	/* RFC 7306: both ends' QPs enable the extension */
	PERF_ATOMIC,	/* Fetch and Add on 8 octets: like a Read */
	PERF_WRITE_IMM, /* Write with Immediate Data: takes receives */
};

/*
 * The slot after @i in a ring of @n: message by message the tools step
 * through their rings with this, not a division per message, which would
 * weigh on the small-message rows as much as the stack under test.
 */
static inline uint32_t perf_ring_next(uint32_t i, uint32_t n)
{
	return i + 1 == n ? 0 : i + 1;
}

/*
 * Latency tests: the last octet's value in iteration @i, which the other
 * end watches for; never 0, the buffers' start.
 */
static inline uint8_t perf_lat_mark(uint64_t i)
{
	return (uint8_t)(i % 255 + 1);
}

/* Tests whose operation waits for the peer's response (ORD/IRD). */
static inline bool perf_test_requests(unsigned int t)
{
	return t == PERF_READ || t == PERF_ATOMIC;
}

/* Tests whose messages take the receiver's posted receives. */
static inline bool perf_test_receives(unsigned int t)
{
	return t == PERF_SEND || t == PERF_WRITE_IMM;
}

struct perf_opts {
	enum perf_mode mode;
	enum perf_test test;
	size_t size;	   /* -s, or the largest size of the -a sweep */
	bool sweep;
	uint64_t iters;	   /* per QP; 0: the default for the size */
	double duration;   /* seconds per size; 0: count iterations */
	uint32_t slices;   /* --slices: the two stacks' steps alternate */
	uint32_t qps, depth;
	uint32_t threads;  /* --threads: QPs, one application thread each */
	uint32_t idle;	   /* --idle: idle QPs connected beside the busy ones */
	bool tcp, json, debug, loopback, event;
	bool watch_only;   /* write lat: watch memory, call nothing meanwhile */
	uint32_t rx_depth; /* receives for Sends in bw and rate */
	const char *host, *port;
	const char *bind; /* server: the one address it listens on */
	int timeout_ms;	   /* bound of every wait */
	uint64_t max_size; /* server: largest buffer it registers */
	struct iw_mpa_opts mpa;
	/* --progress: the library's progress mode, and its thread count */
	enum iw_progress_mode progress;
	uint32_t progress_threads;
	/* --loopback: the client has given up; its server stops waiting */
	const atomic_bool *client_gone;
};

/* One slice of a step (--slices): its bounds and the operations in it. */
struct perf_slice {
	double from_s, to_s;
	uint64_t iters;
};

/* One pattern's outcome: counted from completions, timed on CLOCK_MONOTONIC. */
struct perf_result {
	uint64_t iters; /* operations completed, all QPs */
	uint64_t bytes;
	double seconds;
	struct tool_stats lat; /* microseconds per operation */
	/* getrusage() over the step: user and system seconds */
	bool have_cpu;
	double cpu_user, cpu_sys;
	/* the step's bounds on CLOCK_MONOTONIC, seconds (perf record -k) */
	double from_s, to_s;
	/* the step's slices, in the order they ran */
	uint32_t n_slices;
	struct perf_slice slice[PERF_MAX_SLICES];
	/*
	 * --threads: rates are the sum of each thread's, latency figures the
	 * median of each thread's (lat above is then empty)
	 */
	bool merged;
	double gbps, mmsgps;
	bool have_lat;
	double min, avg, p50, p90, p99, max;
	/* more of the JSON row ("key":value,...), or NULL */
	const char *extra_json;
};

/* Where a step starts: the process's CPU time and the clock. */
struct perf_mark {
	double user, sys; /* seconds of CPU */
	double at;	  /* CLOCK_MONOTONIC, seconds */
};

void perf_mark_now(struct perf_mark *m);
/*
 * A slice of @r's step ran from @m until now and completed @iters
 * operations: its CPU time adds to @r's, its bounds widen @r's.
 */
void perf_slice_end(struct perf_result *r, const struct perf_mark *m,
		    uint64_t iters);
/* A slice's operations, octets, seconds and samples, @part's, into @into. */
void perf_add_counts(struct perf_result *into, struct perf_result *part);

int perf_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Operations per QP for @size when neither -n nor --duration says. */
uint64_t perf_default_iters(const struct perf_opts *o, size_t size);
const char *perf_mode_name(enum perf_mode m);
const char *perf_test_name(enum perf_test t);
/* Reserves room for @n samples so the data path never allocates. */
void perf_stats_reserve(struct tool_stats *s, uint64_t n);

/* ---- wire (perf_wire.c): every field big-endian ---------------------- */

#define PERF_WIRE_VERSION 1
#define PERF_REQ_LEN 48
#define PERF_REP_LEN 32
#define PERF_CTRL_LEN 24
#define PERF_REJ_MAX 200 /* a refusal's words, in the reject's private data */

/* Client to server, in the MPA Request's private data. */
struct perf_req {
	uint8_t mode, test;
	bool tcp;
	bool threads; /* one server thread per QP, and per TCP socket */
	bool watch_only; /* write lat: both ends call nothing while watching */
	uint32_t session; /* the QPs of one run share it */
	uint16_t qp_index, qp_count;
	uint32_t depth;
	uint64_t buf_len;   /* octets each side registers */
	uint64_t sink_addr; /* the client's buffer, for write-backs */
	uint32_t sink_rkey;
	uint32_t rx_depth; /* receives for Sends in bw, rate; 0: depth */
};

/* Server to client, in the MPA Reply's private data. */
struct perf_rep {
	uint64_t addr; /* the server's registered buffer */
	uint32_t rkey;
	uint32_t credits; /* receives posted for Sends before the first */
	uint64_t len;
};

/* Control messages: Sends with the Solicited Event bit. */
enum perf_ctrl_type {
	PERF_STEP = 1,	/* client: a size begins (size, iterations or 0) */
	PERF_READY,	/* server: prepared for it */
	PERF_DONE,	/* server: all of it arrived (count, bytes received) */
	PERF_CREDIT,	/* server: receives posted in total (count) */
};

struct perf_ctrl {
	uint8_t type;
	uint32_t size;
	uint64_t count, bytes;
};

void perf_req_encode(const struct perf_req *r, uint8_t *p);
int perf_req_decode(const void *p, size_t len, struct perf_req *r);
void perf_rep_encode(const struct perf_rep *r, uint8_t *p);
int perf_rep_decode(const void *p, size_t len, struct perf_rep *r);
size_t perf_rej_encode(const char *why, uint8_t *p);
bool perf_rej_decode(const void *p, size_t len, char *why, size_t why_len);
void perf_ctrl_encode(const struct perf_ctrl *c, uint8_t *p);
int perf_ctrl_decode(const uint8_t *p, size_t len, struct perf_ctrl *c);

/* ---- iWARP resources and waits (perf_iw.c) ------------------------------- */

#define PERF_CTRL_SLOTS 32 /* control receives per QP */
#define PERF_SLOT_LEN 64

/* wr_id: receive bit, control bit, endpoint index, sequence number */
#define PERF_WR_RECV (1ull << 63)
#define PERF_WR_CTRL (1ull << 62)
#define PERF_WR_EP(id) ((uint32_t)(((id) >> 48) & 0x3fff))
#define PERF_WR_SEQ(id) ((id) & ((1ull << 48) - 1))
#define PERF_WR_ID(flags, ep, seq) \
	((flags) | (uint64_t)(ep) << 48 | ((seq) & ((1ull << 48) - 1)))

/* One connection: its QP and the memory it moves. */
struct perf_ep {
	uint32_t index;
	struct iw_qp *qp;
	struct iw_cq *cq; /* a CQ of its own (a --threads server), or NULL */
	struct iw_cm_id *id;
	atomic_bool up; /* another thread may watch it (--threads) */
	uint8_t *buf; /* advertised: Write sink, Read source, Send sink */
	uint8_t *src; /* local source of Sends and Writes (client) */
	uint8_t *ctrl; /* PERF_CTRL_SLOTS receive slots */
	size_t len;
	struct iw_mr *buf_mr, *src_mr, *ctrl_mr;
	uint64_t raddr; /* the peer's buffer */
	uint32_t rkey;
	uint64_t rlen;
	/* send tests: receives the server has posted in total, Sends used */
	uint64_t credits, consumed;
	/* the pattern in progress; rings of depth entries */
	struct iw_send_wr *wr;
	struct iw_sge *sge;
	double *post_us;
	uint64_t posted, completed, target;
	uint8_t expect; /* write latency: the last octet we wait for */
	double t0;
	bool done;
	struct perf_ctrl reply; /* the last control message received */
	bool got_reply;
	/* server: what a step brought, and the receives posted and granted */
	atomic_bool stepping;
	bool watching;
	uint32_t step_size;
	uint64_t rx_msgs, rx_bytes, rx_posted, rx_granted, rx_pending;
};

/*
 * Write lat, at either end: whether the peer's Write of @size octets has
 * landed, its last octet the mark @e awaits (perf_lat_mark()).
 */
static inline bool perf_mark_arrived(const struct perf_ep *e, size_t size)
{
	return __atomic_load_n(e->buf + size - 1, __ATOMIC_ACQUIRE) ==
	       e->expect;
}

struct perf_dev {
	const struct perf_opts *o;
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct perf_ep *ep;
	uint32_t n_ep;
	uint32_t depth;
	uint32_t rfc7306; /* QPs and buffers created take it (iw_rfc7306) */
	char where[128];
	/*
	 * --threads: a part of another device, whose context and PD it
	 * borrows (and the channel, with @cm_watched).
	 */
	bool part;
	/* another thread takes the channel's events: the endpoints' up flags
	 * and *@failed say what they were */
	bool cm_watched;
	atomic_bool *failed;
};

int perf_dev_open(struct perf_dev *d, const struct perf_opts *o);
int perf_dev_part(struct perf_dev *d, const struct perf_dev *whole,
		  bool own_channel);
void perf_dev_close(struct perf_dev *d);
int perf_dev_endpoints(struct perf_dev *d, uint32_t n, uint32_t depth,
		       uint32_t send_wr, uint32_t recv_wr);
int perf_ep_memory(struct perf_dev *d, struct perf_ep *e, size_t len,
		   bool with_src);
void perf_ep_touch(struct perf_ep *e);
bool perf_writes_out(const struct perf_dev *d);
int perf_ep_qp(struct perf_dev *d, struct perf_ep *e, uint32_t send_wr,
	       uint32_t recv_wr);
int perf_post_ctrl_recv(struct perf_ep *e, uint32_t slot);
int perf_post_data_recv(struct perf_ep *e, uint32_t n);
int perf_send_ctrl(struct perf_ep *e, const struct perf_ctrl *c, bool empty);
#define PERF_WAIT_SLEEP 0x1	/* asleep on the CQ whatever --event says */
#define PERF_WAIT_CLOSING 0x2	/* a clean close is no failure */
int perf_poll(struct perf_dev *d, struct iw_wc *wc, int max, int ms,
	      unsigned int flags);
int perf_check_cm(struct perf_dev *d, unsigned int flags);
int perf_wait_fds(struct perf_dev *d, struct pollfd *p, nfds_t n, int ms);
struct iw_cm_event *perf_event(struct perf_dev *d, int ms);
int perf_wc_failed(struct perf_dev *d, const struct iw_wc *wc);
void perf_explain(const char *where, const struct iw_cm_event *ev,
		  const struct iw_mpa_opts *ours);
void perf_describe(struct perf_dev *d, char *out, size_t len);
void perf_peer_name(struct iw_cm_id *id, char *out, size_t len);
void perf_ep_step_free(struct perf_ep *e);
int perf_ep_step_alloc(struct perf_ep *e, uint32_t depth);

/* ---- the two ends over libiwarp ------------------------------------------ */

struct perf_client;
struct perf_idle;
int perf_client_open(struct perf_client **cp, const struct perf_opts *o,
		     struct perf_idle *idle);
int perf_client_step(struct perf_client *c, size_t size, uint64_t iters,
		     struct perf_result *r, uint64_t *per_qp_iters);
void perf_client_header(struct perf_client *c, char *out, size_t len);
void perf_client_close(struct perf_client *c);
/* --threads: client @index of @count, on @whole's context, one QP. */
int perf_client_open_part(struct perf_client **cp, const struct perf_opts *o,
			  const struct perf_dev *whole, uint32_t index,
			  uint32_t count, uint32_t session);
/*
 * --threads: where the parts line up before each pattern.  No lock: each
 * part counts itself in and waits (yielding) for the others; a part that
 * will never come abandons the line, and nobody waits any more.
 */
struct perf_start {
	uint32_t n;
	atomic_uint arrived; /* over every step so far */
	atomic_bool abandoned;
};
void perf_start_wait(struct perf_start *s, uint64_t *steps);
void perf_client_start_together(struct perf_client *c,
				struct perf_start *start);

/* ---- --threads (perf_threads.c) ------------------------------------------ */

int perf_threads_run(const struct perf_opts *o, const char *tcp_port,
		     struct perf_idle *idle);
void perf_merge(struct perf_result *into, struct perf_result *parts,
		uint32_t n);

/* ---- --idle (perf_idle.c) ------------------------------------------------ */

/* Forks the process that takes the idle QPs' far ends: before any thread. */
int perf_idle_fork(struct perf_idle **ip, const struct perf_opts *o);
/* Connects the idle QPs on @d's context; measures what they cost. */
int perf_idle_connect(struct perf_idle *i, struct perf_dev *d);
/* Says what they cost: a header line (not with --json), and @json for
 * every row. */
void perf_idle_report(const struct perf_idle *i, const struct perf_opts *o,
		      char *json, size_t len);
/* Destroys the idle QPs, before the device they are on closes. */
void perf_idle_release(struct perf_idle *i);
void perf_idle_close(struct perf_idle *i);

int perf_server_run(const struct perf_opts *o, int ready_fd);

/* ---- TCP (perf_tcp.c) ---------------------------------------------------- */

struct perf_tcp;
int perf_tcp_listen(const char *host, const char *port, int *fd,
		    char *bound_port, size_t len);
int perf_tcp_open(struct perf_tcp **tp, const struct perf_opts *o,
		  const char *host, const char *port);
int perf_tcp_step(struct perf_tcp *t, size_t size,
		  const uint64_t *per_conn_iters, struct perf_result *r);
void perf_tcp_close(struct perf_tcp *t);
struct perf_tcp_server;
int perf_tcp_serve(int listen_fd, uint32_t conns, const struct perf_opts *o,
		   size_t buf_len, struct perf_tcp_server **sp);
int perf_tcp_serve_end(struct perf_tcp_server *s);

/* ---- output (perf_report.c) ---------------------------------------------- */

void perf_report_header(const struct perf_opts *o, const char *conn_words);
void perf_report_row(const struct perf_opts *o, size_t size,
		     struct perf_result *iw, struct perf_result *tcp);

#endif /* IW_PERF_H */
