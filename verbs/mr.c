// SPDX-License-Identifier: MIT
/*
 * Protection domains and memory regions.  A region's STag comes from the
 * context's table; iWARP uses the same STag locally and remotely.
 */
#include <errno.h>
#include <stdlib.h>

#include "verbs/verbs.h"

struct iw_pd *iw_alloc_pd(struct iw_context *ctx)
{
	struct iw_pd *pd;

	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->ctx = ctx;
	pthread_mutex_lock(&ctx->lock);
	pd->id = ++ctx->next_pd;
	pthread_mutex_unlock(&ctx->lock);
	return pd;
}

int iw_dealloc_pd(struct iw_pd *pd)
{
	free(pd);
	return 0;
}

/*
 * Registers [@addr, @addr + @length) with tagged offsets equal to its
 * virtual addresses, as iWARP peers expect.  Returns NULL with errno
 * EINVAL (unknown access bits), ENOMEM (table full) or EIO.
 */
struct iw_mr *iw_reg_mr(struct iw_pd *pd, void *addr, size_t length,
			int access)
{
	const int known = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE |
			  IW_ACCESS_REMOTE_READ;
	uint32_t ddp_access = 0;
	struct iw_mr *mr;
	int rc;

	if (!pd || (access & ~known) || (!addr && length)) {
		errno = EINVAL;
		return NULL;
	}
	if (access & IW_ACCESS_LOCAL_WRITE)
		ddp_access |= DDP_ACCESS_LOCAL_WRITE;
	if (access & IW_ACCESS_REMOTE_WRITE)
		ddp_access |= DDP_ACCESS_REMOTE_WRITE;
	if (access & IW_ACCESS_REMOTE_READ)
		ddp_access |= DDP_ACCESS_REMOTE_READ;
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	rc = ddp_mr_register(&pd->ctx->stags, pd->id, (uint64_t)(uintptr_t)addr,
			     addr, length, ddp_access, &mr->lkey);
	if (rc) {
		free(mr);
		errno = -rc;
		return NULL;
	}
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->rkey = mr->lkey;
	return mr;
}

/* Deregistration invalidates: no later access through the STag succeeds. */
int iw_dereg_mr(struct iw_mr *mr)
{
	int rc;

	if (!mr)
		return -EINVAL;
	rc = ddp_mr_deregister(&mr->pd->ctx->stags, mr->lkey);
	free(mr);
	return rc;
}
