// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "e2e.h"

#if defined(__SANITIZE_ADDRESS__)
/* the sanitizer's allocator counts (gcc ships no header declaring it) */
size_t __sanitizer_get_current_allocated_bytes(void);
#else
#include <malloc.h>
#endif
#include <sys/resource.h>

#define ACC_ALL (IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | \
		 IW_ACCESS_REMOTE_READ)

void e2e_opts_default(struct e2e_opts *o)
{
	memset(o, 0, sizeof(*o));
	iw_mpa_opts_default(&o->client);
	iw_mpa_opts_default(&o->server);
	o->buf_len = 1 << 20;
	o->depth = 64;
	o->max_sge = 4;
	o->host = "127.0.0.1";
	o->cparam = (struct iw_conn_param){ .ird = 8, .ord = 8 };
	o->sparam = (struct iw_conn_param){ .ird = 8, .ord = 8 };
}

void e2e_side_open(struct e2e_side *s, const struct e2e_opts *o)
{
	e2e_side_open_on(s, o, NULL);
}

void e2e_side_open_on(struct e2e_side *s, const struct e2e_opts *o,
		      struct event_base *base)
{
	struct iw_context_attr ca = {
		.comp_mask = IW_CONTEXT_ATTR_PROGRESS,
		.base = base,
		.progress = o->progress,
		.progress_threads = o->progress_threads,
	};
	struct iw_qp_init_attr qa = {
		.cap = { .max_send_wr = o->depth, .max_recv_wr = o->depth,
			 .max_send_sge = o->max_sge, .max_recv_sge = o->max_sge,
			 .max_inline_data = 64 },
		.comp_mask = o->rfc7306 ? IW_QP_INIT_ATTR_RFC7306 : 0,
		.rfc7306 = o->rfc7306,
	};

	memset(s, 0, sizeof(*s));
	s->ctx = iw_open(&ca);
	ck_assert_ptr_nonnull(s->ctx);
	s->ch = iw_create_cm_channel(s->ctx);
	s->pd = iw_alloc_pd(s->ctx);
	s->cq = iw_create_cq(s->ctx, (int)(2 * o->depth), NULL);
	ck_assert_ptr_nonnull(s->ch);
	ck_assert_ptr_nonnull(s->pd);
	ck_assert_ptr_nonnull(s->cq);
	qa.send_cq = qa.recv_cq = s->cq;
	s->qp = iw_create_qp(s->pd, &qa);
	ck_assert_ptr_nonnull(s->qp);
	s->len = o->buf_len;
	s->buf = malloc(s->len);
	ck_assert_ptr_nonnull(s->buf);
	s->mr = iw_reg_mr(s->pd, s->buf, s->len,
			  ACC_ALL | (o->rfc7306 ? IW_ACCESS_REMOTE_ATOMIC : 0));
	ck_assert_ptr_nonnull(s->mr);
}

void e2e_side_close(struct e2e_side *s)
{
	if (s->id)
		ck_assert_int_eq(iw_destroy_id(s->id), 0);
	ck_assert_int_eq(iw_destroy_qp(s->qp), 0);
	ck_assert_int_eq(iw_dereg_mr(s->mr), 0);
	ck_assert_int_eq(iw_destroy_cq(s->cq), 0);
	ck_assert_int_eq(iw_dealloc_pd(s->pd), 0);
	ck_assert_int_eq(iw_destroy_cm_channel(s->ch), 0);
	ck_assert_int_eq(iw_close(s->ctx), 0);
	free(s->buf);
}

void e2e_port(struct iw_cm_id *listen, char *port, size_t len)
{
	struct sockaddr_storage ss;

	ck_assert_int_eq(iw_get_local_addr(listen, &ss), 0);
	snprintf(port, len, "%u",
		 ntohs(ss.ss_family == AF_INET6
			       ? ((struct sockaddr_in6 *)&ss)->sin6_port
			       : ((struct sockaddr_in *)&ss)->sin_port));
}

struct iw_cm_event *e2e_event(struct iw_cm_channel *ch, int ms)
{
	struct pollfd p = { iw_cm_channel_fd(ch), POLLIN, 0 };
	struct iw_cm_event *ev;

	ck_assert_msg(poll(&p, 1, ms) == 1, "no CM event within %d ms", ms);
	ck_assert_int_eq(iw_get_cm_event(ch, &ev), 0);
	return ev;
}

int e2e_expect(struct iw_cm_channel *ch, enum iw_cm_event_type type, int ms)
{
	struct iw_cm_event *ev = e2e_event(ch, ms);
	int status = ev->status;

	ck_assert_msg(ev->event == type, "CM event %s (%s), wanted %s",
		      iw_cm_event_str(ev->event), iw_strerror(ev->status),
		      iw_cm_event_str(type));
	iw_ack_cm_event(ev);
	return status;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int e2e_poll_upto(struct iw_cq *cq, struct iw_wc *wc, int n, int ms)
{
	long long end = now_ms() + ms;
	int got = 0;

	while (got < n) {
		int r = iw_poll_cq(cq, n - got, wc + got);
		struct pollfd p = { iw_cq_fd(cq), POLLIN, 0 };

		require(r >= 0, "iw_poll_cq: %s", iw_strerror(r));
		got += r;
		if (got == n || now_ms() >= end)
			break;
		if (r == 0) {
			/* sleep on the CQ's fd; poll again to close the race */
			iw_req_notify_cq(cq, 0);
			r = iw_poll_cq(cq, n - got, wc + got);
			require(r >= 0, "iw_poll_cq: %s", iw_strerror(r));
			got += r;
			if (got < n && poll(&p, 1, 50) == 1)
				iw_get_cq_event(cq, NULL);
		}
	}
	return got;
}

void e2e_poll(struct iw_cq *cq, struct iw_wc *wc, int n, int ms)
{
	int got = e2e_poll_upto(cq, wc, n, ms);

	require(got == n, "%d of %d completions within %d ms", got, n, ms);
}

struct iw_cm_event *e2e_request_event(struct e2e *e,
				      const struct e2e_opts *o)
{
	struct iw_cm_event *ev;

	e->listen = iw_create_id(e->s.ch, NULL);
	ck_assert_ptr_nonnull(e->listen);
	ck_assert_int_eq(iw_set_mpa_opts(e->listen, &o->server), 0);
	ck_assert_int_eq(iw_listen(e->listen, o->host, "0", 16), 0);
	e2e_port(e->listen, e->port, sizeof(e->port));
	e->c.id = iw_create_id(e->c.ch, NULL);
	ck_assert_ptr_nonnull(e->c.id);
	ck_assert_int_eq(iw_set_mpa_opts(e->c.id, &o->client), 0);
	ck_assert_int_eq(iw_connect(e->c.id, o->host, e->port, e->c.qp,
				    &o->cparam),
			 0);
	ev = e2e_event(e->s.ch, E2E_WAIT_MS);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_CONNECT_REQUEST);
	e->s.id = ev->id;
	return ev;
}

struct iw_cm_id *e2e_request(struct e2e *e, const struct e2e_opts *o)
{
	iw_ack_cm_event(e2e_request_event(e, o));
	return e->s.id;
}

struct iw_cm_id *e2e_start(struct e2e *e, const struct e2e_opts *o)
{
	memset(e, 0, sizeof(*e));
	e2e_side_open(&e->c, o);
	e2e_side_open(&e->s, o);
	return e2e_request(e, o);
}

void e2e_connect(struct e2e *e, const struct e2e_opts *o)
{
	e2e_start(e, o);
	ck_assert_int_eq(iw_accept(e->s.id, e->s.qp, &o->sparam), 0);
	e2e_expect(e->s.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	e2e_expect(e->c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
}

void e2e_teardown(struct e2e *e)
{
	if (e->listen)
		ck_assert_int_eq(iw_destroy_id(e->listen), 0);
	e2e_side_close(&e->c);
	e2e_side_close(&e->s);
}

void e2e_fill(uint8_t *p, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

long long e2e_ping(struct e2e *e, uint32_t seq, int ms)
{
	struct iw_sge s = { (uintptr_t)e->c.buf, 64, e->c.mr->lkey };
	struct iw_sge r = { (uintptr_t)e->s.buf, 64, e->s.mr->lkey };
	struct iw_wc wc;
	long long t0 = now_ms();

	e2e_fill(e->c.buf, 64, seq);
	memset(e->s.buf, 0, 64);
	ck_assert_int_eq(iw_post_recv(e->s.qp,
				      &(struct iw_recv_wr){ seq, NULL, &r, 1 },
				      NULL),
			 0);
	ck_assert_int_eq(iw_post_send(e->c.qp,
				      &(struct iw_send_wr){
					      .wr_id = seq, .sg_list = &s,
					      .num_sge = 1,
					      .opcode = IW_WR_SEND,
					      .send_flags = IW_SEND_SIGNALED },
				      NULL),
			 0);
	e2e_poll(e->s.cq, &wc, 1, ms);
	require(wc.status == IW_WC_SUCCESS && wc.wr_id == seq &&
			wc.byte_len == 64,
		"ping %u: status %d wr_id %llu length %u", seq, wc.status,
		(unsigned long long)wc.wr_id, wc.byte_len);
	require(memcmp(e->s.buf, e->c.buf, 64) == 0, "ping %u: data differs",
		seq);
	e2e_poll(e->c.cq, &wc, 1, ms);
	require(wc.status == IW_WC_SUCCESS && wc.wr_id == seq,
		"ping %u: send status %d", seq, wc.status);
	return now_ms() - t0;
}

/* ---- a raw peer ----------------------------------------------------- */

int e2e_raw_request(const char *port, int rcvbuf, uint16_t rd)
{
	uint8_t req[24] = "MPA ID Req Frame\x10\x02\x00\x04";
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)atoi(port)),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	if (rcvbuf)
		ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
					    sizeof(rcvbuf)),
				 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	req[20] = req[22] = (uint8_t)(rd >> 8);
	req[21] = req[23] = (uint8_t)rd;
	e2e_raw_write(fd, req, sizeof(req));
	return fd;
}

static void raw_read_full(int fd, uint8_t *p, size_t len)
{
	for (size_t got = 0; got < len;) {
		struct pollfd pf = { fd, POLLIN, 0 };
		ssize_t n;

		require(poll(&pf, 1, E2E_WAIT_MS) == 1, "raw peer: nothing came");
		n = read(fd, p + got, len - got);
		require(n > 0, "raw peer: the stream ended");
		got += (size_t)n;
	}
}

void e2e_raw_reply(int fd)
{
	uint8_t rep[20 + 512];
	size_t pd;

	raw_read_full(fd, rep, 20);
	require(memcmp(rep, "MPA ID Rep Frame", 16) == 0, "raw peer: no Reply");
	require(!(rep[16] & 0xe0), "raw peer: Reply with M, C or R set");
	pd = (size_t)(rep[18] << 8 | rep[19]);
	require(pd <= 512, "raw peer: Reply too long");
	raw_read_full(fd, rep + 20, pd);
}

size_t e2e_raw_fpdu(uint8_t *out, size_t cap, const uint8_t *ulpdu,
		    size_t len)
{
	size_t whole = (2 + len + 3) / 4 * 4 + 4;

	require(len <= 0xffff && whole <= cap, "raw peer: FPDU too long");
	memset(out, 0, whole); /* pad, and a CRC nobody checks */
	out[0] = (uint8_t)(len >> 8);
	out[1] = (uint8_t)len;
	memcpy(out + 2, ulpdu, len);
	return whole;
}

void e2e_raw_write(int fd, const void *p, size_t len)
{
	require(write(fd, p, len) == (ssize_t)len, "raw peer: write failed");
}

size_t e2e_raw_read_fpdu(int fd, uint8_t *ulpdu, size_t cap)
{
	uint8_t hdr[2], trailer[8];
	size_t len, rest;
	struct pollfd pf = { fd, POLLIN, 0 };
	ssize_t n;

	require(poll(&pf, 1, E2E_WAIT_MS) == 1, "raw peer: nothing came");
	n = read(fd, hdr, 1);
	if (n == 0)
		return 0;
	require(n == 1, "raw peer: read failed");
	raw_read_full(fd, hdr + 1, 1);
	len = (size_t)(hdr[0] << 8 | hdr[1]);
	require(len <= cap, "raw peer: ULPDU of %zu octets", len);
	raw_read_full(fd, ulpdu, len);
	rest = (2 + len + 3) / 4 * 4 + 4 - 2 - len;
	raw_read_full(fd, trailer, rest);
	return len;
}

int e2e_raw_connect(const char *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)atoi(port)),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	require(fd >= 0, "socket: %s", strerror(errno));
	require(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0,
		"connect: %s", strerror(errno));
	return fd;
}

/* ---- resources -------------------------------------------------------- */

size_t e2e_heap_in_use(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return __sanitizer_get_current_allocated_bytes();
#else
	struct mallinfo2 m = mallinfo2();

	return m.uordblks + m.hblkhd;
#endif
}

void e2e_raise_nofile(size_t n)
{
	struct rlimit r;

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &r), 0);
	if (r.rlim_cur >= n)
		return;
	r.rlim_cur = n < r.rlim_max ? n : r.rlim_max;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &r), 0);
	ck_assert_msg(r.rlim_cur >= n, "only %lu descriptors allowed",
		      (unsigned long)r.rlim_cur);
}
