// SPDX-License-Identifier: MIT
/*
 * Protection domains and memory regions.  Access flags are checked the
 * way the kernel checks them for every device; the optional range
 * (IBV_ACCESS_RELAXED_ORDERING and the rest of bits 20-29), which a
 * device may ignore, is ignored.
 */
#include <errno.h>
#include <stdlib.h>

#include "compat/ibverbs/ibverbs.h"

#define KNOWN_ACCESS                                                        \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                  \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |                 \
	 IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND | \
	 IBV_ACCESS_HUGETLB | IBV_ACCESS_OPTIONAL_RANGE)

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct iwv_pd *pd;

	if (!iwv_is_ours(context)) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->iw = iw_alloc_pd(to_iwv_ctx(context)->iw);
	if (!pd->iw) {
		int e = errno;

		free(pd);
		errno = e;
		return NULL;
	}
	pd->pd.context = context;
	return &pd->pd;
}

/*
 * EBUSY while a region, QP or SRQ of the domain remains (iw_dealloc_pd()
 * answers -EBUSY), as the kernel answers: qperf deallocates the domain
 * before its region, and then deregisters the region.
 */
int ibv_dealloc_pd(struct ibv_pd *pd)
{
	struct iwv_pd *p;
	int rc;

	if (!pd)
		return EINVAL;
	p = to_iwv_pd(pd);
	rc = iw_dealloc_pd(p->iw);
	if (rc)
		return iwv_errno(rc);
	free(p);
	return 0;
}

/*
 * libiwarp's access rights for ibverbs flags, or -1 with errno: remote
 * write (or atomic) access needs local write, as the kernel requires;
 * on-demand paging is an adapter feature we do not have.  Remote atomic
 * access is granted for RFC 7306, which the QPs enable or not; MW bind
 * and hugetlb rights have nothing to grant here and are accepted.
 */
static int access_from_ibv(int access)
{
	int a = 0;

	if (access & ~KNOWN_ACCESS) {
		errno = EINVAL;
		return -1;
	}
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE)) {
		errno = EINVAL;
		return -1;
	}
	if (access & IBV_ACCESS_ON_DEMAND) {
		errno = EOPNOTSUPP;
		return -1;
	}
	if (access & IBV_ACCESS_LOCAL_WRITE)
		a |= IW_ACCESS_LOCAL_WRITE;
	if (access & IBV_ACCESS_REMOTE_WRITE)
		a |= IW_ACCESS_REMOTE_WRITE;
	if (access & IBV_ACCESS_REMOTE_READ)
		a |= IW_ACCESS_REMOTE_READ;
	if (access & IBV_ACCESS_REMOTE_ATOMIC)
		a |= IW_ACCESS_REMOTE_ATOMIC;
	return a;
}

/* A zero-based region's tagged offsets start at 0. */
static struct iw_mr *register_region(struct ibv_pd *pd, void *addr,
				     size_t length, uint64_t iova, int access)
{
	int a = access_from_ibv(access);

	if (a < 0)
		return NULL;
	if (access & IBV_ACCESS_ZERO_BASED)
		iova = 0;
	return iw_reg_mr_iova(to_iwv_pd(pd)->iw, addr, length, iova, a);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
				uint64_t iova, unsigned int access)
{
	struct iwv_mr *mr;

	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	mr->iw = register_region(pd, addr, length, iova, (int)access);
	if (!mr->iw) {
		int e = errno;

		free(mr);
		errno = e;
		return NULL;
	}
	mr->access = (int)access;
	mr->mr = (struct ibv_mr){
		.context = pd->context,
		.pd = pd,
		.addr = addr,
		.length = length,
		.handle = mr->iw->lkey,
		.lkey = mr->iw->lkey,
		.rkey = mr->iw->rkey,
	};
	return &mr->mr;
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			  int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr,
				(unsigned int)access);
}

#undef ibv_reg_mr_iova
struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
			       uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

/* dma-buf regions are memory of a device; there is none. */
struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
				 size_t length, uint64_t iova, int fd, int access)
{
	(void)pd;
	(void)offset;
	(void)length;
	(void)iova;
	(void)fd;
	(void)access;
	errno = EOPNOTSUPP;
	return NULL;
}

/*
 * A send queue's work still using the region (-EBUSY from libiwarp) keeps
 * it; receives posted through it let go of its memory (iw_reg_mr(3)).
 */
int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct iwv_mr *m;
	int rc;

	if (!mr)
		return EINVAL;
	m = to_iwv_mr(mr);
	rc = iw_dereg_mr(m->iw);
	if (rc && rc != -ENOENT)
		return iwv_errno(rc);
	free(m);
	return 0;
}

/*
 * Registers anew with what changes and lets go of the old registration:
 * the region gets a new STag, as a kernel may give it.  On failure the
 * old registration stays.
 */
int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
		 size_t length, int access)
{
	struct iwv_mr *m;
	struct iw_mr *fresh;
	struct ibv_pd *npd;
	void *naddr;
	size_t nlen;
	int nacc, rc;

	if (!mr || !flags || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
	    ((flags & IBV_REREG_MR_CHANGE_PD) && !pd)) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	m = to_iwv_mr(mr);
	npd = flags & IBV_REREG_MR_CHANGE_PD ? pd : mr->pd;
	naddr = flags & IBV_REREG_MR_CHANGE_TRANSLATION ? addr : mr->addr;
	nlen = flags & IBV_REREG_MR_CHANGE_TRANSLATION ? length : mr->length;
	nacc = flags & IBV_REREG_MR_CHANGE_ACCESS ? access : m->access;
	fresh = register_region(npd, naddr, nlen, (uintptr_t)naddr, nacc);
	if (!fresh)
		return errno == EINVAL ? IBV_REREG_MR_ERR_INPUT
				       : IBV_REREG_MR_ERR_CMD;
	rc = iw_dereg_mr(m->iw);
	if (rc && rc != -ENOENT) {
		iw_dereg_mr(fresh);
		errno = iwv_errno(rc);
		return IBV_REREG_MR_ERR_CMD;
	}
	m->iw = fresh;
	m->access = nacc;
	mr->pd = npd;
	mr->addr = naddr;
	mr->length = nlen;
	mr->handle = mr->lkey = fresh->lkey;
	mr->rkey = fresh->rkey;
	return 0;
}
