// SPDX-License-Identifier: MIT
/*
 * iwarp-perf's own wire formats, all big-endian and versioned:
 *
 *  Request private data (client, 48 octets)
 *   0 "IWPF"  4 version  5 mode  6 test
 *   7 flags (1: TCP run follows, 2: one thread per QP, 4: write lat
 *     watches memory only)
 *   8 session  12 qp_index  14 qp_count  16 depth  20 buf_len (8)
 *   28 sink address (8)  36 sink STag (4)  40 receives (4)
 *   44 reserved (4)
 *  Reply private data (server, 32 octets)
 *   0 "IWPF"  4 version  5-7 reserved  8 address (8)  16 STag (4)
 *   20 credits (4)  24 length (8)
 *  Reject private data (server): "IWPF", version, then the reason in words
 *  Control message (a Send with Solicited Event, 24 octets)
 *   0 type  1-3 reserved  4 size  8 count (8)  16 bytes (8)
 *
 * The MPA private data limit is 252 octets (siw takes 256, four of them
 * the RFC 6581 IRD/ORD words), far above what is used here.
 */
#include <errno.h>
#include <string.h>

#include "lib/byteorder.h"
#include "perf.h"

static const uint8_t magic[4] = { 'I', 'W', 'P', 'F' };

static void head(uint8_t *p)
{
	memcpy(p, magic, sizeof(magic));
	p[4] = PERF_WIRE_VERSION;
}

/* -EPROTO: not ours; -EPROTONOSUPPORT: ours, another version. */
static int check_head(const uint8_t *p, size_t len, size_t want)
{
	if (len < 5 || memcmp(p, magic, sizeof(magic)))
		return -EPROTO;
	if (p[4] != PERF_WIRE_VERSION)
		return -EPROTONOSUPPORT;
	return len < want ? -EPROTO : 0;
}

void perf_req_encode(const struct perf_req *r, uint8_t *p)
{
	memset(p, 0, PERF_REQ_LEN);
	head(p);
	p[5] = r->mode;
	p[6] = r->test;
	p[7] = (r->tcp ? 1 : 0) | (r->threads ? 2 : 0) | (r->watch_only ? 4 : 0);
	put_be32(p + 8, r->session);
	put_be16(p + 12, r->qp_index);
	put_be16(p + 14, r->qp_count);
	put_be32(p + 16, r->depth);
	put_be64(p + 20, r->buf_len);
	put_be64(p + 28, r->sink_addr);
	put_be32(p + 36, r->sink_rkey);
	put_be32(p + 40, r->rx_depth);
}

int perf_req_decode(const void *pd, size_t len, struct perf_req *r)
{
	const uint8_t *p = pd;
	int rc = p ? check_head(p, len, PERF_REQ_LEN) : -EPROTO;

	if (rc)
		return rc;
	*r = (struct perf_req){
		.mode = p[5],
		.test = p[6],
		.tcp = p[7] & 1,
		.threads = p[7] & 2,
		.watch_only = p[7] & 4,
		.session = get_be32(p + 8),
		.qp_index = get_be16(p + 12),
		.qp_count = get_be16(p + 14),
		.depth = get_be32(p + 16),
		.buf_len = get_be64(p + 20),
		.sink_addr = get_be64(p + 28),
		.sink_rkey = get_be32(p + 36),
		.rx_depth = get_be32(p + 40),
	};
	if (r->mode > PERF_RATE || r->test > PERF_WRITE_IMM)
		return -EPROTO;
	return 0;
}

void perf_rep_encode(const struct perf_rep *r, uint8_t *p)
{
	memset(p, 0, PERF_REP_LEN);
	head(p);
	put_be64(p + 8, r->addr);
	put_be32(p + 16, r->rkey);
	put_be32(p + 20, r->credits);
	put_be64(p + 24, r->len);
}

int perf_rep_decode(const void *pd, size_t len, struct perf_rep *r)
{
	const uint8_t *p = pd;
	int rc = p ? check_head(p, len, PERF_REP_LEN) : -EPROTO;

	if (rc)
		return rc;
	*r = (struct perf_rep){
		.addr = get_be64(p + 8),
		.rkey = get_be32(p + 16),
		.credits = get_be32(p + 20),
		.len = get_be64(p + 24),
	};
	return 0;
}

/* Returns the private data length: header, words, no terminating NUL. */
size_t perf_rej_encode(const char *why, uint8_t *p)
{
	size_t n = strnlen(why, PERF_REJ_MAX);

	memset(p, 0, 8);
	head(p);
	memcpy(p + 8, why, n);
	return 8 + n;
}

/* The server's reason for refusing us, when the reject carries one. */
bool perf_rej_decode(const void *pd, size_t len, char *why, size_t why_len)
{
	const uint8_t *p = pd;
	size_t n;

	if (!p || len < 8 || memcmp(p, magic, sizeof(magic)))
		return false;
	n = len - 8 < why_len - 1 ? len - 8 : why_len - 1;
	for (size_t i = 0; i < n; i++)
		why[i] = p[8 + i] >= 0x20 && p[8 + i] < 0x7f ? (char)p[8 + i]
							     : '?';
	why[n] = 0;
	return true;
}

void perf_ctrl_encode(const struct perf_ctrl *c, uint8_t *p)
{
	memset(p, 0, PERF_CTRL_LEN);
	p[0] = c->type;
	put_be32(p + 4, c->size);
	put_be64(p + 8, c->count);
	put_be64(p + 16, c->bytes);
}

int perf_ctrl_decode(const uint8_t *p, size_t len, struct perf_ctrl *c)
{
	if (len != PERF_CTRL_LEN || p[0] < PERF_STEP || p[0] > PERF_CREDIT)
		return -EPROTO;
	*c = (struct perf_ctrl){
		.type = p[0],
		.size = get_be32(p + 4),
		.count = get_be64(p + 8),
		.bytes = get_be64(p + 16),
	};
	return 0;
}
