/* SPDX-License-Identifier: MIT */
/*
 * The wire of rdma-core's rsockets (librdmacm/docs/rsocket), iWARP mode.
 *
 * Connection private data (struct rs_conn_data, 40 octets, big-endian):
 *   0 version (1)   1 flags   2-3 credits   4-6 reserved
 *   7 target iomap size (scaled, see rs_scale_to_value())
 *   8-23  target SGL: addr(8) key(4) length(4) -- where the peer writes
 *         the receive buffers it offers us, and its iomap after it
 *   24-39 data buffer: the first half of the peer's receive buffer
 *
 * Messages are 32-bit: op in bits 31:29, data in 28:0.  iWARP has no
 * Write with Immediate, so each message is a 4-octet Send, in the
 * sender's host order (rdma-core posts its uint32_t as it lies in
 * memory); data goes first as an RDMA Write into the buffer the peer
 * offered.  The SGL and iomap entries written by RDMA Write are in the
 * writer's host order, swapped by the writer when the peer's flags say
 * its byte order differs (RS_CONN_FLAG_NET).
 */
#ifndef IWRC_RS_WIRE_H
#define IWRC_RS_WIRE_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

#define RS_CONN_VERSION 1
#define RS_CONN_FLAG_NET (1 << 0)   /* sender is big-endian */
#define RS_CONN_FLAG_IOMAP (1 << 1) /* an iomap follows the target SGL */
#define RS_CONN_DATA_LEN 40

#define RS_SGE_LEN 16	/* addr(8) key(4) length(4) */
#define RS_IOMAP_LEN 24 /* offset(8) + an SGE */
#define RS_SGL_SIZE 2	/* entries of a target SGL */
#define RS_MSG_SIZE 4

enum rs_op {
	RS_OP_DATA = 0,
	RS_OP_WRITE = 2, /* local only: a direct (iomap) write */
	RS_OP_SGL = 4,	 /* credit update, perhaps a new target SGE */
	RS_OP_IOMAP_SGL = 6,
	RS_OP_CTRL = 7,
};

enum rs_ctrl {
	RS_CTRL_DISCONNECT = 0,
	RS_CTRL_KEEPALIVE = 1,
	RS_CTRL_SHUTDOWN = 2,
};

static inline uint32_t rs_msg(unsigned int op, uint32_t data)
{
	return ((uint32_t)op << 29) | (data & 0x1fffffff);
}

static inline unsigned int rs_msg_op(uint32_t msg)
{
	return msg >> 29;
}

static inline uint32_t rs_msg_data(uint32_t msg)
{
	return msg & 0x1fffffff;
}

struct rs_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};

struct rs_conn_data {
	uint8_t version;
	uint8_t flags;
	uint16_t credits;
	uint8_t target_iomap_size; /* scaled */
	struct rs_sge target_sgl;
	struct rs_sge data_buf;
};

static inline void rs_put_be32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static inline void rs_put_be64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

static inline uint32_t rs_get_be32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

static inline uint64_t rs_get_be64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return be64toh(v);
}

static inline void rs_conn_data_encode(uint8_t *p, const struct rs_conn_data *c)
{
	memset(p, 0, RS_CONN_DATA_LEN);
	p[0] = c->version;
	p[1] = c->flags;
	p[2] = (uint8_t)(c->credits >> 8);
	p[3] = (uint8_t)c->credits;
	p[7] = c->target_iomap_size;
	rs_put_be64(p + 8, c->target_sgl.addr);
	rs_put_be32(p + 16, c->target_sgl.key);
	rs_put_be32(p + 20, c->target_sgl.length);
	rs_put_be64(p + 24, c->data_buf.addr);
	rs_put_be32(p + 32, c->data_buf.key);
	rs_put_be32(p + 36, c->data_buf.length);
}

/* 0, or -1 when @len is short or the version is not rsockets' 1. */
static inline int rs_conn_data_decode(const uint8_t *p, size_t len,
				      struct rs_conn_data *c)
{
	if (!p || len < RS_CONN_DATA_LEN || p[0] != RS_CONN_VERSION)
		return -1;
	c->version = p[0];
	c->flags = p[1];
	c->credits = (uint16_t)(p[2] << 8 | p[3]);
	c->target_iomap_size = p[7];
	c->target_sgl.addr = rs_get_be64(p + 8);
	c->target_sgl.key = rs_get_be32(p + 16);
	c->target_sgl.length = rs_get_be32(p + 20);
	c->data_buf.addr = rs_get_be64(p + 24);
	c->data_buf.key = rs_get_be32(p + 32);
	c->data_buf.length = rs_get_be32(p + 36);
	return 0;
}

/* An SGE as the peer wrote it into our memory (our host order). */
static inline struct rs_sge rs_sge_load(const volatile uint8_t *vp)
{
	const uint8_t *p = (const uint8_t *)(uintptr_t)vp;
	struct rs_sge s;

	memcpy(&s.addr, p, 8);
	memcpy(&s.key, p + 8, 4);
	memcpy(&s.length, p + 12, 4);
	return s;
}

/* An SGE for the peer's memory, in its byte order. */
static inline void rs_sge_store(uint8_t *p, struct rs_sge s, int swap)
{
	if (swap) {
		s.addr = __builtin_bswap64(s.addr);
		s.key = __builtin_bswap32(s.key);
		s.length = __builtin_bswap32(s.length);
	}
	memcpy(p, &s.addr, 8);
	memcpy(p + 8, &s.key, 4);
	memcpy(p + 12, &s.length, 4);
}

static inline void rs_iomap_store(uint8_t *p, uint64_t offset, struct rs_sge s,
				  int swap)
{
	if (swap)
		offset = __builtin_bswap64(offset);
	memcpy(p, &offset, 8);
	rs_sge_store(p + 8, s, swap);
}

/*
 * The iomap size travels in 8 bits: values up to 128 as they are, larger
 * ones as 128 | (value >> 8).
 */
static inline int rs_value_to_scale(int value, int bits)
{
	return value <= (1 << (bits - 1)) ? value
					  : (1 << (bits - 1)) | (value >> bits);
}

static inline int rs_scale_to_value(int value, int bits)
{
	return value <= (1 << (bits - 1)) ? value
					  : (value & ~(1 << (bits - 1))) << bits;
}

#endif /* IWRC_RS_WIRE_H */
