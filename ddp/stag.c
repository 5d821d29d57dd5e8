// SPDX-License-Identifier: MIT
/*
 * Memory registrations and their STags (RFC 5040 section 2, RFC 5042
 * section 5).  An STag is a 24-bit table index (never 0) and an 8-bit key
 * drawn from OpenSSL's CSPRNG, so a peer cannot guess a valid STag from one
 * it has seen.  Lookup goes by index, then demands the whole STag.
 *
 * The table is shared by every QP of a device and by the threads that
 * register memory, hence the lock; checks copy what they need out of it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "ddp/ddp.h"
#include "lib/error.h"

int ddp_stag_table_init(struct ddp_stag_table *t, uint32_t max_regions)
{
	if (max_regions == 0 || max_regions >= DDP_MAX_REGIONS)
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	t->n_slots = max_regions + 1; /* index 0 is never handed out */
	t->slot = calloc(t->n_slots, sizeof(*t->slot));
	t->free_idx = calloc(max_regions, sizeof(*t->free_idx));
	if (!t->slot || !t->free_idx) {
		free(t->slot);
		free(t->free_idx);
		return -ENOMEM;
	}
	/* hand out low indices first */
	for (uint32_t i = 0; i < max_regions; i++)
		t->free_idx[i] = max_regions - i;
	t->n_free = max_regions;
	pthread_mutex_init(&t->lock, NULL);
	return 0;
}

void ddp_stag_table_destroy(struct ddp_stag_table *t)
{
	pthread_mutex_destroy(&t->lock);
	free(t->slot);
	free(t->free_idx);
	memset(t, 0, sizeof(*t));
}

/*
 * Registers [@base, @base + @len) as tagged offsets [@va, @va + @len) in
 * protection domain @pd.  Returns 0 and the STag, -ENOMEM when the table
 * is full, -EINVAL for a region that wraps, -EIO if no random key could
 * be had.
 */
int ddp_mr_register(struct ddp_stag_table *t, uint32_t pd, uint64_t va,
		    void *base, uint64_t len, uint32_t access, uint32_t *stag)
{
	unsigned char key;
	struct ddp_mr *mr;
	uint32_t idx;

	if (len && va + len - 1 < va)
		return -EINVAL;
	if (RAND_bytes(&key, 1) != 1)
		return -EIO;
	pthread_mutex_lock(&t->lock);
	if (t->n_free == 0) {
		pthread_mutex_unlock(&t->lock);
		return -ENOMEM;
	}
	idx = t->free_idx[--t->n_free];
	mr = &t->slot[idx];
	*mr = (struct ddp_mr){
		.stag = idx << 8 | key,
		.pd = pd,
		.va = va,
		.base = base,
		.len = len,
		.access = access,
		.in_use = true,
		.valid = true,
	};
	*stag = mr->stag;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

/* The slot an STag names, if it is registered under exactly that STag. */
static struct ddp_mr *lookup(struct ddp_stag_table *t, uint32_t stag)
{
	uint32_t idx = DDP_STAG_INDEX(stag);

	if (idx == 0 || idx >= t->n_slots)
		return NULL;
	if (!t->slot[idx].in_use || t->slot[idx].stag != stag)
		return NULL;
	return &t->slot[idx];
}

/* Deregistration invalidates: the STag (index and key) is gone for good. */
int ddp_mr_deregister(struct ddp_stag_table *t, uint32_t stag)
{
	struct ddp_mr *mr;
	int rc = -ENOENT;

	pthread_mutex_lock(&t->lock);
	mr = lookup(t, stag);
	if (mr) {
		memset(mr, 0, sizeof(*mr));
		t->free_idx[t->n_free++] = DDP_STAG_INDEX(stag);
		rc = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

/*
 * RFC 5040 section 6.10: a Send with Invalidate names a local STag of the
 * receiving stream's protection domain; afterwards no access through it
 * succeeds.  Fails with IW_ERDMAP_INVALIDATE for an unknown STag, one of
 * another PD, or one already invalid.
 */
int ddp_mr_invalidate(struct ddp_stag_table *t, uint32_t stag, uint32_t pd)
{
	struct ddp_mr *mr;
	int rc = -IW_ERDMAP_INVALIDATE;

	pthread_mutex_lock(&t->lock);
	mr = lookup(t, stag);
	if (mr && mr->valid && mr->pd == pd) {
		mr->valid = false;
		rc = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

/*
 * Checks a tagged access of @len octets at tagged offset @to in the order
 * RFC 5041 section 7 lists them: STag, protection domain, access rights,
 * then base and bounds (wrap first).  On success *@where is the local
 * address of @to.  A caller does not check zero-length segments at all.
 */
enum ddp_mr_fault ddp_mr_check(struct ddp_stag_table *t, uint32_t stag,
			       uint32_t pd, uint32_t access, uint64_t to,
			       uint64_t len, uint8_t **where)
{
	struct ddp_mr mr, *m;

	pthread_mutex_lock(&t->lock);
	m = lookup(t, stag);
	if (m)
		mr = *m;
	pthread_mutex_unlock(&t->lock);

	if (!m || !mr.valid)
		return DDP_MR_BAD_STAG;
	if (mr.pd != pd)
		return DDP_MR_WRONG_PD;
	if ((mr.access & access) != access)
		return DDP_MR_NO_ACCESS;
	if (len && to + len - 1 < to)
		return DDP_MR_TO_WRAP;
	if (to < mr.va || to - mr.va > mr.len || len > mr.len - (to - mr.va))
		return DDP_MR_OUT_OF_BOUNDS;
	*where = mr.base + (to - mr.va);
	return DDP_MR_OK;
}

/* The DDP tagged-buffer error for a fault in Write or Read Response placement. */
int ddp_tagged_error(enum ddp_mr_fault f)
{
	static const int code[] = {
		[DDP_MR_OK] = 0,
		[DDP_MR_BAD_STAG] = -IW_EDDP_T_STAG,
		[DDP_MR_WRONG_PD] = -IW_EDDP_T_NOT_ASSOC,
		/* RFC 5041 has no code for it; RFC 5040 does */
		[DDP_MR_NO_ACCESS] = -IW_ERDMAP_ACCESS,
		[DDP_MR_TO_WRAP] = -IW_EDDP_T_TO_WRAP,
		[DDP_MR_OUT_OF_BOUNDS] = -IW_EDDP_T_BOUNDS,
	};

	return code[f];
}
