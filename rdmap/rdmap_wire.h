/* SPDX-License-Identifier: MIT */
/*
 * RDMAP wire format (RFC 5040 section 4): the control field in DDP's first
 * RsvdULP octet, the untagged queues, the RDMA Read Request header and the
 * Terminate header; and the RFC 7306 extensions: the Atomic Request and
 * Atomic Response headers and the Immediate Data header.
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
	/* RFC 7306 (0x8 and 0x9 are reserved there) */
	RDMAP_OP_ATOMIC_REQ = 0xa,
	RDMAP_OP_ATOMIC_RESP = 0xb,
	RDMAP_OP_IMM = 0xc,    /* Immediate Data */
	RDMAP_OP_IMM_SE = 0xd, /* Immediate Data with Solicited Event */
};

/* RFC 5040 section 5.1: the untagged queues RDMAP uses */
#define RDMAP_QN_SEND 0
#define RDMAP_QN_READ_REQ 1
#define RDMAP_QN_TERMINATE 2
#define RDMAP_QN_COUNT 3
/*
 * RFC 7306: Atomic Requests share queue 1 with RDMA Read Requests (and so
 * its MSNs); Atomic Responses come back on a queue of their own.
 */
#define RDMAP_QN_ATOMIC_RESP 3
#define RDMAP_QN_MAX 4 /* queues an engine keeps, extensions or not */

/* RFC 5040 section 4.4: RDMA Read Request header, after the DDP header */
#define RDMAP_RR_OFF_SINK_STAG 0
#define RDMAP_RR_OFF_SINK_TO 4
#define RDMAP_RR_OFF_SIZE 12
#define RDMAP_RR_OFF_SRC_STAG 16
#define RDMAP_RR_OFF_SRC_TO 20
#define RDMAP_READ_REQ_LEN 28

/*
 * RFC 7306 Atomic Request header, after the DDP header of queue 1: a
 * word whose low 4 bits are the atomic operation (the rest reserved), the
 * Request Identifier the response echoes, the target (Remote STag and
 * Tagged Offset, 8-octet aligned), then four 64-bit operands.
 */
#define RDMAP_AR_OFF_AOP 0
#define RDMAP_AR_AOP_MASK 0x0f
#define RDMAP_AR_OFF_REQ_ID 4
#define RDMAP_AR_OFF_STAG 8
#define RDMAP_AR_OFF_TO 12
#define RDMAP_AR_OFF_DATA 20	  /* Add Data, or Swap Data */
#define RDMAP_AR_OFF_DATA_MASK 28 /* Add Mask, or Swap Mask */
#define RDMAP_AR_OFF_CMP 36	  /* Compare Data */
#define RDMAP_AR_OFF_CMP_MASK 44  /* Compare Mask */
#define RDMAP_ATOMIC_REQ_LEN 52
/* the operand a target must be aligned to, and its size */
#define RDMAP_ATOMIC_SIZE 8

/* RFC 7306 atomic operation subcodes */
enum rdmap_aop {
	RDMAP_AOP_FETCH_ADD = 0,
	RDMAP_AOP_SWAP = 1,
	RDMAP_AOP_CMP_SWAP = 2,
};

/* RFC 7306 Atomic Response header (queue 3): request id, original value */
#define RDMAP_ARESP_OFF_REQ_ID 0
#define RDMAP_ARESP_OFF_VALUE 4
#define RDMAP_ATOMIC_RESP_LEN 12

/* RFC 7306 Immediate Data header (queue 0): 8 octets for the ULP */
#define RDMAP_IMM_LEN 8

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

/*
 * The longest header a segment carries: untagged DDP + Terminate body,
 * which is as long as untagged DDP + an RFC 7306 Atomic Request header.
 */
#define RDMAP_MAX_HDR_LEN (18 + RDMAP_TERM_MAX_LEN)
_Static_assert(RDMAP_ATOMIC_REQ_LEN <= RDMAP_TERM_MAX_LEN,
	       "an Atomic Request header fits where a Terminate body does");

/* The smallest MULPDU (either way) a stream works with: that header. */
#define RDMAP_MIN_MULPDU RDMAP_MAX_HDR_LEN

/* Zero-length tagged RTRs carry a non-zero STag, as Linux siw does. */
#define RDMAP_RTR_STAG 1

#endif /* IW_RDMAP_WIRE_H */
