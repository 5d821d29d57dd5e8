/* SPDX-License-Identifier: MIT */
/*
 * What the parts of a check_faults run share: its plan (fault_plan.c),
 * the run itself (fault_run.c) and the judgement of it (fault_check.c).
 */
#ifndef IW_TEST_FAULT_RUN_INTERNAL_H
#define IW_TEST_FAULT_RUN_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <iwarp/iwarp.h>

#include "fault_proxy.h"
#include "fault_run.h"
#include "testutil.h"

#define GUARD 64
#define REGION (512 * 1024)
#define MAX_OPS 8
/* the operations, the tail Write and the closing Send */
#define SIDE_OPS (MAX_OPS + 2)
#define MAX_WR (2 * SIDE_OPS)
#define RECV_WR_BASE SIDE_OPS
/*
 * The last Write each way: a corrupted ULPDU_LENGTH (up to 65535 octets,
 * and the markers among them) is followed by enough of the stream for the
 * receiver to judge the FPDU it now expects.
 */
#define TAIL_LEN 72001
#define JUDGED_AFTER 70000
#define RUN_MS 20000
#define QUIET_MS 2500
#define TICK_MS 10

enum { SRC, RECV, TARGET, SINK, N_REGIONS };
/* the last two only on a run with RFC 7306 on (run.rfc7306) */
enum op_kind { OP_SEND, OP_WRITE, OP_READ, OP_FETCH_ADD, OP_WRITE_IMM };
extern const char *const op_names[];

/* A Fetch and Add takes 8 aligned octets and returns them, 8 octets. */
#define ATOMIC_LEN 8

struct op {
	uint8_t kind;
	uint32_t len;
	/* in our SRC; the peer's SRC for a Read, its TARGET for an atomic */
	uint32_t src_off;
	uint32_t dst_off; /* in the peer's RECV or TARGET, or our SINK */
	uint64_t value;	  /* what a Fetch and Add adds, a Write's immediate */
	bool early;	  /* posted before the connection is up */
	bool posted;
};

struct side {
	const char *name;
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_qp *qp;
	struct iw_cm_id *id;
	size_t arena_len;
	uint8_t *arena, *initial, *final;
	struct iw_mr *mr[N_REGIONS];
	struct op ops[SIDE_OPS];
	int n_ops;
	/*
	 * receives for the peer's Sends and Writes with Immediate Data, in
	 * their order: where, how long, and what each completion says
	 */
	uint32_t recv_off[SIDE_OPS], recv_len[SIDE_OPS];
	uint32_t recv_byte_len[SIDE_OPS]; /* a Write's length, with an imm */
	bool recv_imm[SIDE_OPS];
	uint64_t recv_imm_data[SIDE_OPS];
	uint32_t recv_write_off[SIDE_OPS]; /* in our TARGET, with an imm */
	int n_recv;
	/* every work request: posted, completed (how often, how) */
	bool posted[MAX_WR];
	int done[MAX_WR];
	int wc_status[MAX_WR];
	uint32_t wc_len[MAX_WR];
	unsigned int wc_flags[MAX_WR];
	uint64_t wc_imm[MAX_WR];
	int n_posted, n_done;
	/* the connection's events */
	bool established, ended, attached;
	enum iw_cm_event_type final_ev;
	int status;
	struct iw_terminate_info term;
};

struct run {
	const struct fault_env *env;
	struct fault_result *res;
	struct rng rng;
	bool crc, markers;
	bool rfc7306; /* both QPs take RFC 7306: atomics, Immediate Data */
	uint8_t rev;
	uint16_t pd_len;
	struct fault f;
	struct side s[2]; /* 0 client, 1 server */
	struct iw_cm_id *listen;
	struct fault_proxy proxy;
	bool proxy_up;
	long long deadline;
};

/* The first failure of the run, in words; later ones add nothing. */
bool flunk(struct run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
long long fault_now_ms(void);
/* Where region @reg starts in a side's arena (GUARD octets before it). */
size_t region_at(int reg);

/* fault_plan.c: the settings, the work and the fault, from the seed */
void fault_plan(struct run *r, uint64_t seed);
/* What each octet holds once all the work of both sides has landed. */
void fault_expect_final(struct run *r);

/* fault_check.c */
void fault_judge(struct run *r);

#endif /* IW_TEST_FAULT_RUN_INTERNAL_H */
