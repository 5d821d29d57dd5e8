/* SPDX-License-Identifier: MIT */
/*
 * rsockets over libiwarp's librdmacm and libibverbs, on the wire of
 * rdma-core's rsockets in iWARP mode (rs_wire.h).  An rsocket is an
 * rdma_cm identifier of its own (synchronous: a channel of its own), and
 * its number is that channel's descriptor, so rsockets and ordinary
 * descriptors never share a number.
 *
 * Files: rsocket.c (the socket calls), rs_conn.c (endpoints, connection
 * setup, shutdown), rs_xfer.c (completions, credits, send and receive),
 * rs_poll.c (rpoll, rselect), rs_opt.c (options, rfcntl), rs_iomap.c
 * (riomap, riounmap, riowrite).
 *
 * One mutex per rsocket guards all of it; a call that waits drops it
 * while it sleeps in poll(2) on the CQ channel and the CM channel.
 */
#ifndef IWRC_RS_H
#define IWRC_RS_H

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "compat/rdmacm/rs_wire.h"

#define RS_OLAP_START_SIZE 2048
#define RS_MAX_TRANSFER 65536
#define RS_SNDLOWAT 2048
#define RS_QP_MIN_SIZE 16
#define RS_QP_MAX_SIZE 0xFFFE
#define RS_QP_CTRL_SIZE 4 /* control messages in flight; a power of 2 */
#define RS_MAX_CTRL_MSG RS_IOMAP_LEN
/* receives beyond the credits, for control messages not yet polled */
#define RS_RQ_SPARE (2 * RS_QP_CTRL_SIZE + 2)

#define RS_WR_ID_RECV (1ULL << 63)
#define RS_WR_ID_MSG_SEND (1ULL << 62) /* the Send after a Write */

/* ordered as rdma-core's: passive, opening, connected, ended */
enum rs_state {
	RS_INIT = 0,
	RS_BOUND = 0x0001,
	RS_LISTENING = 0x0002,
	RS_OPENING = 0x0004,
	RS_CONNECTING = RS_OPENING | 0x0040,
	RS_CONNECTED = 0x0100,
	RS_WRITABLE = 0x0200,
	RS_READABLE = 0x0400,
	RS_CONNECT_RDWR = RS_CONNECTED | RS_READABLE | RS_WRITABLE,
	RS_CONNECT_ERROR = 0x0800,
	RS_DISCONNECTED = 0x1000,
	RS_ERROR = 0x2000,
};

struct rs_rmsg {
	uint32_t op;
	uint32_t data;
};

struct rs_iomap_mr {
	uint64_t offset;
	struct ibv_mr *mr;
	struct rs_iomap_mr *next;
	int index;   /* in the peer's iomap, or -1 for a local mapping */
	bool queued; /* not yet written to the peer */
};

struct rsock {
	int fd; /* its number: the CM channel's descriptor */
	int domain;
	pthread_mutex_t lock;
	struct rdma_cm_id *cm_id;
	int state;
	int err;	 /* SO_ERROR */
	/* the connection ended without rsockets' goodbye: ECONNRESET, or
	 * ETIMEDOUT for a peer gone silent; reported once, as TCP does */
	int reset_err;
	int fd_flags;	 /* O_NONBLOCK */
	int waiters;	 /* threads asleep on its channels */
	uint64_t so_opts, tcp_opts, ipv6_opts; /* bits: options set on */
	/* SO_KEEPALIVE as set (-1: never, the QP keeps libiwarp's default),
	 * TCP_KEEPIDLE/INTVL/CNT (0: the QP's own) */
	int keepalive;
	unsigned int keepalive_time, keepalive_intvl, keepalive_cnt;

	/* sizes, settable until it connects */
	uint32_t sbuf_size, rbuf_size;
	uint16_t sq_size, rq_size, sq_inline, target_iomap_size;

	bool swap_sgl; /* the peer's byte order differs */

	/* control messages: posted and completed */
	unsigned int ctrl_seqno, ctrl_max_seqno;
	/* data messages: sent, allowed; consumed, credited up to */
	uint16_t sseq_no, sseq_comp, rseq_no, rseq_comp;

	/* the peer's target SGL and iomap, where our updates go */
	int remote_sge;
	struct rs_sge remote_sgl, remote_iomap;

	/* our target SGL and iomap, written by the peer */
	struct ibv_mr *target_mr;
	uint8_t *target_buf;
	int target_sge;

	/* receive buffer: data, then one 4-octet slot per receive */
	uint8_t *rbuf;
	struct ibv_mr *rmr;
	int rq_posted; /* receives on the QP: rq_size + RS_RQ_SPARE */
	int rbuf_msg_index;
	int rbuf_bytes_avail, rbuf_free_offset, rbuf_offset;
	struct rs_rmsg *rmsg; /* rq_size + 1 */
	int rmsg_head, rmsg_tail;

	/* send buffer: a ring, then RS_QP_CTRL_SIZE control slots */
	uint8_t *sbuf;
	struct ibv_mr *smr;
	uint32_t sbuf_bytes_avail;
	uintptr_t ring_pos; /* where the next octets go */
	int sqe_avail;

	bool cq_armed;
	unsigned int unack_cqe;

	/* riomap(): ours (to send or sent) and the peer's table */
	struct rs_iomap_mr *iomaps;
	struct rs_iomap_mr *remote_iomappings; /* remote_iomap.length */
	bool iomap_pending;
};

/* rsocket.c: the table of rsockets */
struct rsock *rs_get(int fd);
int rs_insert(struct rsock *rs);
void rs_remove(struct rsock *rs);
struct rsock *rs_alloc(const struct rsock *parent);
void rs_free(struct rsock *rs);
int rs_set_cloexec_nonblock(int fd, bool nonblock);
bool rs_inherited(int fd);

/* rs_opt.c */
int rs_apply_keepalive(struct rsock *rs);

/* rs_conn.c */
int rs_create_ep(struct rsock *rs);
int rs_do_connect(struct rsock *rs);
int rs_accept_one(struct rsock *ls, struct rsock **out);
int rs_shutdown_locked(struct rsock *rs, int how);

/* rs_xfer.c */
int rs_post_msg(struct rsock *rs, uint32_t msg);
int rs_post_write(struct rsock *rs, struct ibv_sge *sgl, int nsge,
		  uint32_t wr_data, int flags, uint64_t addr, uint32_t rkey);
int rs_post_write_msg(struct rsock *rs, struct ibv_sge *sgl, int nsge,
		      uint32_t msg, int flags, uint64_t addr, uint32_t rkey);
int rs_post_recv(struct rsock *rs);
int rs_poll_cq(struct rsock *rs);
void rs_check_cm(struct rsock *rs);
int rs_get_comp(struct rsock *rs, bool nonblock, bool (*test)(struct rsock *));
int rs_wait_fds(struct rsock *rs, int timeout_ms);
bool rs_can_send(struct rsock *rs);
bool rs_conn_can_send(struct rsock *rs);
int rs_wait_send_room(struct rsock *rs, int flags);
uint32_t rs_next_xfer(struct rsock *rs, uint32_t *olen, size_t left);
bool rs_have_rdata(struct rsock *rs);
bool rs_conn_have_rdata(struct rsock *rs);
bool rs_conn_all_sends_done(struct rsock *rs);
bool rs_ctrl_avail(struct rsock *rs);
bool rs_ctrl_avail_or_gone(struct rsock *rs);
void rs_update_credits(struct rsock *rs);
struct rs_sge rs_target_sge(struct rsock *rs, int i);
void rs_target_sge_set(struct rsock *rs, int i, struct rs_sge s);
uint32_t rs_sbuf_left(struct rsock *rs);
void rs_stage(struct rsock *rs, const struct iovec **iov, size_t *off,
	      uint32_t len, struct ibv_sge sg[2], int *nsge);
ssize_t rs_sendv_locked(struct rsock *rs, const struct iovec *iov, int iovcnt,
			int flags);
ssize_t rs_recv_locked(struct rsock *rs, void *buf, size_t len, int flags);

static inline bool rs_nonblocking(const struct rsock *rs, int flags)
{
	return (rs->fd_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
}

/* rs_iomap.c */
int rs_send_iomaps(struct rsock *rs, int flags);
void rs_free_iomaps(struct rsock *rs);

#endif /* IWRC_RS_H */
