// SPDX-License-Identifier: MIT
/*
 * Memory registrations and their STags (RFC 5040 section 2, RFC 5042
 * section 5).  An STag is a 24-bit table index (never 0) and an 8-bit key
 * drawn from OpenSSL's CSPRNG, so a peer cannot guess a valid STag from one
 * it has seen.  Lookup goes by index, then demands the whole STag.
 *
 * The table is shared by every QP of a device and by the threads that
 * register memory.  Writers take the table's lock; every check on the
 * data path reads without one, through the slot's sequence count, so QPs
 * in different threads never meet on a lock here.
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
	for (uint32_t i = 0; i < t->n_slots; i++)
		atomic_init(&t->slot[i].seq, 0);
	atomic_init(&t->gen, 0);
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

/* With the table's lock: readers see the slot change as a whole. */
static void slot_write_begin(struct ddp_mr *mr)
{
	atomic_fetch_add_explicit(&mr->seq, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

static void slot_write_end(struct ddp_mr *mr)
{
	atomic_fetch_add_explicit(&mr->seq, 1, memory_order_release);
}

/* With the lock, after a change that takes access away: caches go stale. */
static void revoke(struct ddp_stag_table *t)
{
	atomic_fetch_add_explicit(&t->gen, 1, memory_order_release);
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
	slot_write_begin(mr);
	mr->stag = idx << 8 | key;
	mr->pd = pd;
	mr->va = va;
	mr->base = base;
	mr->len = len;
	mr->access = access;
	mr->in_use = true;
	mr->valid = true;
	mr->closing = false;
	slot_write_end(mr);
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
		slot_write_begin(mr);
		mr->stag = 0;
		mr->in_use = false;
		mr->valid = false;
		mr->closing = false;
		slot_write_end(mr);
		revoke(t);
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
		slot_write_begin(mr);
		mr->valid = false;
		slot_write_end(mr);
		revoke(t);
		rc = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

/*
 * A deregistration under way (@closing) or given up (!@closing): while it
 * looks for posted work that still names the region, no new work may name
 * it, but the peer's accesses go on.  Returns -ENOENT for an unknown STag.
 */
int ddp_mr_set_closing(struct ddp_stag_table *t, uint32_t stag, bool closing)
{
	struct ddp_mr *mr;
	int rc = -ENOENT;

	pthread_mutex_lock(&t->lock);
	mr = lookup(t, stag);
	if (mr) {
		slot_write_begin(mr);
		mr->closing = closing;
		slot_write_end(mr);
		if (closing)
			revoke(t);
		rc = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

/*
 * A consistent copy of the slot @stag names, without a lock; false when
 * no registration has exactly that STag.
 */
static bool slot_read(struct ddp_stag_table *t, uint32_t stag,
		      struct ddp_mr *out)
{
	uint32_t idx = DDP_STAG_INDEX(stag);
	const struct ddp_mr *m;
	unsigned int s1;

	if (idx == 0 || idx >= t->n_slots)
		return false;
	m = &t->slot[idx];
	for (;;) {
		s1 = atomic_load_explicit(&m->seq, memory_order_acquire);
		if (s1 & 1)
			continue; /* a writer is in the slot: it is quick */
		out->stag = m->stag;
		out->pd = m->pd;
		out->va = m->va;
		out->base = m->base;
		out->len = m->len;
		out->access = m->access;
		out->in_use = m->in_use;
		out->valid = m->valid;
		out->closing = m->closing;
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&m->seq, memory_order_relaxed) == s1)
			break;
	}
	return out->in_use && out->stag == stag;
}

/*
 * Checks a tagged access of @len octets at tagged offset @to in the order
 * RFC 5041 section 7 lists them: STag, protection domain, access rights,
 * then base and bounds (wrap first).  On success *@where is the local
 * address of @to.  A caller does not check zero-length segments at all.
 * DDP_ACCESS_POST marks the check of a work request being posted, which a
 * region being deregistered refuses.
 */
/* The checks of ddp_mr_check() on a consistent copy of the slot. */
static enum ddp_mr_fault judge(const struct ddp_mr *mr, uint32_t pd,
			       uint32_t access, uint64_t to, uint64_t len,
			       uint8_t **where)
{
	uint32_t rights = access & ~(uint32_t)DDP_ACCESS_POST;

	if (!mr->valid || ((access & DDP_ACCESS_POST) && mr->closing))
		return DDP_MR_BAD_STAG;
	if (mr->pd != pd)
		return DDP_MR_WRONG_PD;
	if ((mr->access & rights) != rights)
		return DDP_MR_NO_ACCESS;
	if (len && to + len - 1 < to)
		return DDP_MR_TO_WRAP;
	if (to < mr->va || to - mr->va > mr->len ||
	    len > mr->len - (to - mr->va))
		return DDP_MR_OUT_OF_BOUNDS;
	*where = mr->base + (to - mr->va);
	return DDP_MR_OK;
}

enum ddp_mr_fault ddp_mr_check(struct ddp_stag_table *t, uint32_t stag,
			       uint32_t pd, uint32_t access, uint64_t to,
			       uint64_t len, uint8_t **where)
{
	struct ddp_mr mr;

	if (!slot_read(t, stag, &mr))
		return DDP_MR_BAD_STAG;
	return judge(&mr, pd, access, to, len, where);
}

/*
 * ddp_mr_check() through @c: the slot is read again only when another
 * STag is asked for or the table has revoked some access since.  The
 * generation is read before the slot, so a change that races with the
 * read leaves the copy already stale.
 */
enum ddp_mr_fault ddp_mr_check_cached(struct ddp_stag_table *t,
				      struct ddp_mr_cache *c, uint32_t stag,
				      uint32_t pd, uint32_t access, uint64_t to,
				      uint64_t len, uint8_t **where)
{
	uint32_t gen = atomic_load_explicit(&t->gen, memory_order_acquire);

	if (c->stag != stag || c->gen != gen) {
		c->stag = 0;
		if (!slot_read(t, stag, &c->mr))
			return DDP_MR_BAD_STAG;
		c->stag = stag;
		c->gen = gen;
	}
	return judge(&c->mr, pd, access, to, len, where);
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
