/* SPDX-License-Identifier: MIT */
/*
 * RDMAP wire format (RFC 5040 section 4): the control field in DDP's first
 * RsvdULP octet, the untagged queues, the RDMA Read Request header and the
 * Terminate header.
 */
#ifndef IW_RDMAP_WIRE_H
#define IW_RDMAP_WIRE_H

/* RDMAP control field: RDMAP version (2 bits), reserved (2), opcode (4) */
#define RDMAP_CTRL_RV 0xc0
#define RDMAP_CTRL_RV_SHIFT 6
#define RDMAP_CTRL_RSVD 0x30
#define RDMAP_CTRL_OPCODE 0x0f
#define RDMAP_VERSION 1

/* RFC 5040 section 4.2 */
enum rdmap_opcode {
	RDMAP_OP_WRITE = 0,
	RDMAP_OP_READ_REQ = 1,
	RDMAP_OP_READ_RESP = 2,
	RDMAP_OP_SEND = 3,
	RDMAP_OP_SEND_INV = 4,
	RDMAP_OP_SEND_SE = 5,
	RDMAP_OP_SEND_SE_INV = 6,
	RDMAP_OP_TERMINATE = 7,
};

/* RFC 5040 section 5.1: the untagged queues RDMAP uses */
#define RDMAP_QN_SEND 0
#define RDMAP_QN_READ_REQ 1
#define RDMAP_QN_TERMINATE 2
#define RDMAP_QN_COUNT 3

/* RFC 5040 section 4.4: RDMA Read Request header, after the DDP header */
#define RDMAP_RR_OFF_SINK_STAG 0
#define RDMAP_RR_OFF_SINK_TO 4
#define RDMAP_RR_OFF_SIZE 12
#define RDMAP_RR_OFF_SRC_STAG 16
#define RDMAP_RR_OFF_SRC_TO 20
#define RDMAP_READ_REQ_LEN 28

/*
 * RFC 5040 section 4.8: Terminate header.  A 32-bit control word (layer 4
 * bits, error type 4, error code 8, then the M, D and R flags), then with D
 * the DDP segment length (16 bits) and the terminated DDP header, then
 * with R the terminated RDMA Read Request header.
 */
#define RDMAP_TERM_CTRL_LEN 4
#define RDMAP_TERM_OFF_HDRCT 2
#define RDMAP_TERM_FLAG_M 0x80 /* DDP segment length valid */
#define RDMAP_TERM_FLAG_D 0x40 /* DDP header included */
#define RDMAP_TERM_FLAG_R 0x20 /* RDMA header included */
#define RDMAP_TERM_SEGLEN_LEN 2
#define RDMAP_TERM_MAX_LEN                                     \
	(RDMAP_TERM_CTRL_LEN + RDMAP_TERM_SEGLEN_LEN + 18 + RDMAP_READ_REQ_LEN)

/* The longest header a segment carries: untagged DDP + Terminate body. */
#define RDMAP_MAX_HDR_LEN (18 + RDMAP_TERM_MAX_LEN)

/* The smallest MULPDU (either way) a stream works with: that header. */
#define RDMAP_MIN_MULPDU RDMAP_MAX_HDR_LEN

/* Zero-length tagged RTRs carry a non-zero STag, as Linux siw does. */
#define RDMAP_RTR_STAG 1

#endif /* IW_RDMAP_WIRE_H */
