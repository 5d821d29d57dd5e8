/* SPDX-License-Identifier: MIT */
/*
 * iwarp-perf --perftest: the exchange perftest's ib_{write,read,send}_{bw,lat}
 * speak in rdma_cm mode (-R), so either end can be perftest.  perf_pt_wire.c
 * encodes its messages, perf_pt_comm.c runs the exchange connection and the
 * order of its messages, perf_pt_data.c the connections that move data,
 * perf_pt_client.c and perf_pt_server.c the two ends of each test.
 *
 * Two connections to the same port: first the exchange connection, whose
 * Sends carry version, system data, MTU and, again and again, the 56-octet
 * destination record (the "sync"); then, after one sync, the data
 * connection(s), one per QP.  Every exchange is one message each way, the
 * client's first, so a single receive on either side is always enough.
 */
#ifndef IW_PERF_PT_H
#define IW_PERF_PT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perf.h"

/* perftest 4.5 calls its exchange 6.06; older ones shape some messages */
#define PT_VERSION "6.06"
#define PT_VERSION_LEN 16
#define PT_DEST_LEN 56
#define PT_REPORT_FIELD_LEN 8
#define PT_MSG_MAX 64	      /* receive slot: the largest message is a dest */
#define PT_CACHE_LINE 64
#define PT_MTU_WORD "3"	      /* IBV_MTU_1024, what siw reports */
#define PT_DEF_RX_DEPTH 512   /* perftest's receive queue for Sends */
#define PT_DEF_ITERS 1000
#define PT_DEF_ITERS_WRITE_BW 5000
#define PT_SWEEP_MAX (8u << 20) /* -a: 2 octets to 8 MiB, like perftest */

/* perftest's struct pingpong_dest, each field big-endian on the wire. */
struct pt_dest {
	uint32_t lid, out_reads, qpn, psn, rkey;
	uint64_t vaddr;
	uint8_t gid[16];
	uint32_t srqn, gid_index;
};

/* What a bw client tells the server after the run (perftest's order). */
struct pt_report {
	uint64_t size, iters;
	double bw_peak, bw_avg; /* MB/s, 2^20 octets a second */
	double msg_rate;	/* millions of messages a second */
};

void pt_dest_encode(const struct pt_dest *d, uint8_t *p);
void pt_dest_decode(const uint8_t *p, struct pt_dest *d);
void pt_version_encode(uint8_t *p);
double pt_version_decode(const uint8_t *p, char *text, size_t len);
size_t pt_mtu_len(double rem_version);
size_t pt_iters_len(double rem_version);
bool pt_has_sys_data(double rem_version);
void pt_u64_encode(uint64_t v, uint8_t *p, size_t len);
uint64_t pt_u64_decode(const uint8_t *p, size_t len);
void pt_double_encode(double v, uint8_t *p);
double pt_double_decode(const uint8_t *p);
uint32_t pt_credit_load(const uint8_t *p);

/*
 * The order of a test's syncs: which perftest's mains (4.5) keep.  "pre"
 * counts the syncs between the data connection and the first size.
 */
enum pt_after { PT_AFTER_NEVER, PT_AFTER_SWEEP, PT_AFTER_ALWAYS };

struct pt_plan {
	bool per_qp_pre;     /* bw: a sync per QP, twice, then one */
	uint8_t lat_pre;     /* lat: this many syncs */
	bool before_size;    /* a sync before each size */
	enum pt_after after_size;
	bool reports;	     /* a sync and the bw report after the last size */
	bool close_sync;     /* the last sync, before the disconnect */
	bool server_first;   /* write lat: the server's Write opens each size */
};

const struct pt_plan *pt_plan_of(const struct perf_opts *o);

/* ---- one run: the exchange connection and the data QPs --------------------- */

/* Receive slots on the exchange QP; one is enough, more cost nothing. */
#define PT_COMM_SLOTS 4
/* wr_id of the exchange QP's work requests */
#define PT_WR_COMM (1ull << 61)

struct pt_run {
	const struct perf_opts *o;
	const struct pt_plan *plan;
	bool server;
	struct perf_dev d;	/* the data QPs: d.ep[i], their CQ d.cq */
	struct iw_cm_id *listen;
	/* the exchange connection */
	struct iw_cm_id *comm_id;
	struct iw_qp *comm_qp;
	struct iw_cq *comm_cq;
	uint8_t *comm_buf;
	struct iw_mr *comm_mr;
	bool comm_up;
	uint8_t msg[PT_MSG_MAX]; /* the last message the peer sent */
	uint32_t msg_len;
	bool have_msg;
	/* what the exchange settled */
	double rem_version;
	char rem_version_text[PT_VERSION_LEN + 1];
	uint32_t cycle_buffer, cache_line;
	struct pt_dest my[PERF_MAX_QPS], rem[PERF_MAX_QPS];
	/* send tests: receive credits, perftest's ctrl_buf then credit_buf */
	uint8_t *credit;
	struct iw_mr *credit_mr;
	uint32_t rx_depth, credit_every;
	uint32_t tx_depth, out_reads;
	uint64_t iters;		/* per QP and size; 0 with --duration */
	size_t max_size;
	bool closing;		/* a peer's disconnect is no failure now */
	bool patient;		/* server: the client runs; wait unbounded */
};

int pt_open(struct pt_run *t, const struct perf_opts *o, bool server);
void pt_close(struct pt_run *t);
void pt_disconnect(struct pt_run *t);
void pt_await_close(struct pt_run *t);

/* perf_pt_comm.c: the exchange connection and its messages */
int pt_comm_qp(struct pt_run *t);
int pt_comm_connect(struct pt_run *t);
int pt_comm_accept(struct pt_run *t, struct iw_cm_event *ev);
int pt_xchg(struct pt_run *t, const uint8_t *mine, size_t len, uint8_t *theirs,
	    size_t theirs_len);
bool pt_comm_pending(struct pt_run *t);
int pt_prefix(struct pt_run *t);
int pt_sync(struct pt_run *t, uint32_t qp);
int pt_sync_zero(struct pt_run *t);
int pt_pre_syncs(struct pt_run *t);
int pt_reports(struct pt_run *t, const struct pt_report *mine,
	       struct pt_report *theirs);

/* perf_pt_data.c: data QPs, their memory, and the waits */
int pt_take_cm(struct pt_run *t);
int pt_wc_failed(struct pt_run *t, const struct iw_wc *wc);
int pt_endpoints(struct pt_run *t, uint32_t n);
int pt_data_memory(struct pt_run *t, struct perf_ep *e);
int pt_data_qp(struct pt_run *t, struct perf_ep *e);
struct iw_conn_param pt_conn_param(const struct pt_run *t);
void pt_fill_dests(struct pt_run *t);
int pt_write_credit(struct pt_run *t, struct perf_ep *e, uint32_t count);
uint32_t pt_credit_seen(const struct pt_run *t, uint32_t qp);
void pt_credit_reset(struct pt_run *t);
void pt_describe(struct pt_run *t, char *out, size_t len);
size_t pt_first_size(const struct pt_run *t);
size_t pt_next_size(const struct pt_run *t, size_t size);

/* perf_pt_bw.c and perf_pt_lat.c: the patterns */
int pt_bw_stream(struct pt_run *t, size_t size, struct perf_result *r);
int pt_bw_receive(struct pt_run *t, size_t size, struct perf_result *r);
int pt_lat_send(struct pt_run *t, size_t size, struct perf_result *r);
int pt_lat_write(struct pt_run *t, size_t size, struct perf_result *r);
int pt_lat_read(struct pt_run *t, size_t size, struct perf_result *r);
int pt_lat_open(struct pt_run *t);

/* the two ends */
int perf_pt_client(const struct perf_opts *o);
int perf_pt_server(const struct perf_opts *o, int ready_fd);

#endif /* IW_PERF_PT_H */
