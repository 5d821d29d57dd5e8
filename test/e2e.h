/* SPDX-License-Identifier: MIT */
/*
 * End-to-end helpers: connected QP pairs over 127.0.0.1 through the public
 * API, and waits that are always bounded (a test that would hang fails).
 */
#ifndef IW_TEST_E2E_H
#define IW_TEST_E2E_H

#include <pthread.h>

#include <iwarp/iwarp.h>

#include "testutil.h"

#define E2E_WAIT_MS 10000

struct e2e_side {
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_qp *qp;
	struct iw_cm_id *id;
	uint8_t *buf;
	size_t len;
	struct iw_mr *mr;
};

struct e2e_opts {
	struct iw_mpa_opts client, server;
	size_t buf_len;
	uint32_t depth;	  /* send and receive queue depth */
	uint32_t max_sge;
	const char *host; /* default 127.0.0.1 */
	struct iw_conn_param cparam, sparam;
	/* each side's context: progress mode and threads (0: the default) */
	enum iw_progress_mode progress;
	uint32_t progress_threads;
	/* both sides' QPs: RFC 7306 extensions (enum iw_rfc7306), 0: none;
	 * when set, the buffers take remote atomics too */
	uint32_t rfc7306;
};

struct e2e {
	struct e2e_side c, s;
	struct iw_cm_id *listen;
	char port[16];
};

void e2e_opts_default(struct e2e_opts *o);
/* Both sides, each with its own context, connected; fails the test if not. */
void e2e_connect(struct e2e *e, const struct e2e_opts *o);
/* The same up to the server's CONNECT_REQUEST; returns the server's id. */
struct iw_cm_id *e2e_start(struct e2e *e, const struct e2e_opts *o);
/* The same with both sides opened already (with options of their own). */
struct iw_cm_id *e2e_request(struct e2e *e, const struct e2e_opts *o);
/* The same, the CONNECT_REQUEST returned for the test to read and ack. */
struct iw_cm_event *e2e_request_event(struct e2e *e,
				      const struct e2e_opts *o);
void e2e_side_open(struct e2e_side *s, const struct e2e_opts *o);
/* The same on the application's @base, which the caller dispatches. */
void e2e_side_open_on(struct e2e_side *s, const struct e2e_opts *o,
		      struct event_base *base);
/*
 * Dispatches event_base @base until it is broken or exited: a thread's
 * body, for the side opened on it (e2e_loop.c, with libevent).
 */
void *e2e_dispatch(void *base);
/* A new event_base that thread @loop dispatches (e2e_dispatch()). */
struct event_base *e2e_base_start(pthread_t *loop);
void e2e_side_close(struct e2e_side *s);
void e2e_teardown(struct e2e *e);

/* The next CM event on @ch within @ms, or the test fails. */
struct iw_cm_event *e2e_event(struct iw_cm_channel *ch, int ms);
/* Takes the next event, checks its type, acks it; returns its status. */
int e2e_expect(struct iw_cm_channel *ch, enum iw_cm_event_type type, int ms);
/* Exactly @n completions within @ms, or the test fails. */
void e2e_poll(struct iw_cq *cq, struct iw_wc *wc, int n, int ms);
/* Completions until @n have come or @ms pass; returns how many came. */
int e2e_poll_upto(struct iw_cq *cq, struct iw_wc *wc, int n, int ms);

/* The port a listening identifier got. */
void e2e_port(struct iw_cm_id *listen, char *port, size_t len);

void e2e_fill(uint8_t *p, size_t len, uint32_t seed);

/*
 * One Send of 64 octets from the client to the server of a connected
 * pair, received and checked within @ms; returns how long it took.  For
 * tests that prove a connection is still served while others misbehave.
 */
long long e2e_ping(struct e2e *e, uint32_t seq, int ms);

/*
 * A raw peer on a plain TCP socket that speaks MPA by hand (revision 2,
 * no CRC, no markers), for what the library itself never sends: FPDUs
 * cut off midway, segments aimed at chosen STags, a peer that does not
 * read.  Every wait is bounded.
 */
/* Connects to 127.0.0.1:@port with a receive buffer of @rcvbuf octets
 * (0: the kernel's), and sends an MPA Request with IRD and ORD @rd. */
int e2e_raw_request(const char *port, int rcvbuf, uint16_t rd);
/* Reads the responder's MPA Reply (which must accept). */
void e2e_raw_reply(int fd);
/* Builds the FPDU that carries @ulpdu into @out; returns its length. */
size_t e2e_raw_fpdu(uint8_t *out, size_t cap, const uint8_t *ulpdu,
		    size_t len);
/* Writes all of @p or fails the test. */
void e2e_raw_write(int fd, const void *p, size_t len);
/* Reads the next FPDU's ULPDU into @ulpdu (up to @cap octets) and returns
 * its length; 0 at the end of the stream. */
size_t e2e_raw_read_fpdu(int fd, uint8_t *ulpdu, size_t cap);
/* A TCP connection to 127.0.0.1:@port that has sent nothing. */
int e2e_raw_connect(const char *port);

/* Octets the process has allocated and not freed (malloc's own count, or
 * the sanitizer's when it owns the heap). */
size_t e2e_heap_in_use(void);
/* Room for @n descriptors, as far as the hard limit allows. */
void e2e_raise_nofile(size_t n);

#endif /* IW_TEST_E2E_H */
