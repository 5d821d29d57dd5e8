/* SPDX-License-Identifier: MIT */
/*
 * DDP layer (RFC 5041): headers, the memory registration (STag) table,
 * tagged placement checks, untagged queue bookkeeping and the iovec
 * arithmetic both directions share.  Pure code, no I/O.
 */
#ifndef IW_DDP_H
#define IW_DDP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "ddp/ddp_wire.h"

/* ---- headers (hdr.c) ------------------------------------------------ */

struct ddp_hdr {
	bool tagged;
	bool last;
	uint8_t version;   /* DV field */
	uint8_t rsvdulp;   /* first RsvdULP octet (RDMAP control) */
	uint32_t rsvdulp2; /* untagged only: the other 32 RsvdULP bits */
	uint32_t stag;	   /* tagged */
	uint64_t to;
	uint32_t qn; /* untagged */
	uint32_t msn;
	uint32_t mo;
};

static inline size_t ddp_hdr_len(bool tagged)
{
	return tagged ? DDP_TAGGED_HDR_LEN : DDP_UNTAGGED_HDR_LEN;
}

size_t ddp_hdr_encode(const struct ddp_hdr *h, uint8_t *out);
size_t ddp_hdr_encode_seg(const struct ddp_hdr *msg, uint64_t off,
			  uint8_t *out);
ssize_t ddp_hdr_decode(const uint8_t *p, size_t len, struct ddp_hdr *h);

/* ---- iovec arithmetic (iov.c) --------------------------------------- */

size_t ddp_iov_len(const struct iovec *iov, int iovcnt);
int ddp_iov_slice(const struct iovec *iov, int iovcnt, size_t off, size_t len,
		  struct iovec *out, int out_max);
int ddp_iov_copy_in(const struct iovec *iov, int iovcnt, size_t off,
		    const uint8_t *p, size_t len);
int ddp_iov_copy_out(const struct iovec *iov, int iovcnt, size_t off,
		     uint8_t *p, size_t len);
uint8_t *ddp_iov_span(const struct iovec *iov, int iovcnt, size_t off,
		      size_t *span);

/* ---- memory registrations (stag.c) ---------------------------------- */

#define DDP_ACCESS_LOCAL_WRITE 0x1
#define DDP_ACCESS_REMOTE_WRITE 0x2
#define DDP_ACCESS_REMOTE_READ 0x4
/* not a right: the check of a work request being posted (ddp_mr_check) */
#define DDP_ACCESS_POST 0x8
/* RFC 7306: the target of a peer's atomic operations */
#define DDP_ACCESS_REMOTE_ATOMIC 0x10

/* STag = 24-bit index (never 0) << 8 | 8-bit key */
#define DDP_STAG_INDEX(stag) ((stag) >> 8)
#define DDP_STAG_KEY(stag) ((stag) & 0xff)
#define DDP_MAX_REGIONS (1u << 24)

/*
 * A registration.  Readers take no lock: @seq is odd while a writer (under
 * the table's lock) changes the slot, and a reader copies the slot until
 * it sees the same even @seq before and after.
 */
struct ddp_mr {
	atomic_uint seq;
	uint32_t stag;
	uint32_t pd;
	uint64_t va;	/* tagged offset of the first octet */
	uint8_t *base;	/* where that octet lives */
	uint64_t len;
	uint32_t access;
	bool in_use;
	bool valid;	/* false once invalidated */
	bool closing;	/* being deregistered: no new local use */
};

/* Registrations of one device; every QP checks its PD against them. */
struct ddp_stag_table {
	pthread_mutex_t lock; /* writers */
	struct ddp_mr *slot; /* indexed by STag index; slot 0 unused */
	uint32_t *free_idx;
	uint32_t n_slots;
	uint32_t n_free;
	/* bumped by every change that takes access away (see ddp_mr_cache) */
	_Alignas(64) atomic_uint gen;
};

/*
 * The last registration one user resolved (a QP's posts, its tagged
 * placement), kept while the table's generation is unchanged: a repeat
 * check of the same STag then reads one shared word, which changes only
 * when some access is revoked.  Owned by its user, who serialises it.
 */
struct ddp_mr_cache {
	uint32_t gen;
	uint32_t stag; /* 0: empty (no STag has index 0) */
	struct ddp_mr mr;
};

/* Why a tagged access was refused, in the order the checks run. */
enum ddp_mr_fault {
	DDP_MR_OK = 0,
	DDP_MR_BAD_STAG,   /* no such STag, key mismatch, or invalidated */
	DDP_MR_WRONG_PD,   /* registered in another protection domain */
	DDP_MR_NO_ACCESS,  /* the operation's access right is missing */
	DDP_MR_TO_WRAP,	   /* TO + length passes 2^64 */
	DDP_MR_OUT_OF_BOUNDS,
};

int ddp_stag_table_init(struct ddp_stag_table *t, uint32_t max_regions);
void ddp_stag_table_destroy(struct ddp_stag_table *t);
int ddp_mr_register(struct ddp_stag_table *t, uint32_t pd, uint64_t va,
		    void *base, uint64_t len, uint32_t access, uint32_t *stag);
int ddp_mr_deregister(struct ddp_stag_table *t, uint32_t stag);
int ddp_mr_invalidate(struct ddp_stag_table *t, uint32_t stag, uint32_t pd);
int ddp_mr_set_closing(struct ddp_stag_table *t, uint32_t stag, bool closing);
enum ddp_mr_fault ddp_mr_check_cached(struct ddp_stag_table *t,
				      struct ddp_mr_cache *c, uint32_t stag,
				      uint32_t pd, uint32_t access, uint64_t to,
				      uint64_t len, uint8_t **where);
enum ddp_mr_fault ddp_mr_check(struct ddp_stag_table *t, uint32_t stag,
			       uint32_t pd, uint32_t access, uint64_t to,
			       uint64_t len, uint8_t **where);
int ddp_tagged_error(enum ddp_mr_fault f);

/* ---- untagged queues (untagged.c) ----------------------------------- */

/*
 * One untagged queue of the receiving side (RFC 5041 section 5.3): the
 * MSN the next message must carry (starting at 1) and how many octets of
 * the message in progress have arrived.
 */
struct ddp_queue {
	uint32_t msn;
	uint32_t mo;
	bool open; /* a message is in progress */
};

void ddp_queue_init(struct ddp_queue *q);
int ddp_untagged_check(const struct ddp_queue *q, const struct ddp_hdr *h,
		       size_t payload_len, bool have_buffer,
		       uint64_t buffer_len);
void ddp_untagged_advance(struct ddp_queue *q, const struct ddp_hdr *h,
			  size_t payload_len);

#endif /* IW_DDP_H */
