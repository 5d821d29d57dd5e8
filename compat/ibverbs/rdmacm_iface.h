/* SPDX-License-Identifier: MIT */
/*
 * The private interface between libiwarp's libibverbs and its librdmacm:
 * everything librdmacm needs of libibverbs beyond rdma-core's API, and
 * the only way it reaches in.  librdmacm includes this header, never
 * ibverbs.h, so it does not depend on the layout of libibverbs' objects.
 *
 * The two libraries export exactly Debian's symbols (test/compat_symbols.sh),
 * so the interface is not a set of symbols but a table of functions that
 * every context of libiwarp's libibverbs carries right behind its struct
 * verbs_context (struct iwv_context_head).  The table says its version:
 * a change to any entry's meaning raises IWV_RDMACM_IFACE_VERSION, new
 * entries go last and grow size, and librdmacm refuses a table of another
 * version, as it would a context of another device.
 */
#ifndef IWV_RDMACM_IFACE_H
#define IWV_RDMACM_IFACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <iwarp/iwarp.h>

/* the device both libraries describe */
#define IWV_DEVICE_NAME "iwarp0"
#define IWV_PORT 1
/* RDMA Read depths offered per QP (perftest reads them as ORD and IRD;
 * rdma_cm carries them in 8-bit fields) */
#define IWV_MAX_RD_ATOM 128

#define IWV_RDMACM_IFACE_VERSION 1

/* through void *: the member's own alignment vouches for the outer one */
#define iwv_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

struct iwv_rdmacm_iface {
	uint32_t version; /* IWV_RDMACM_IFACE_VERSION */
	uint32_t size;	  /* sizeof the table libibverbs was built with */
	/* the libiwarp context behind @ctx, shared by the process */
	struct iw_context *(*iw_context)(struct ibv_context *ctx);
	/* the libiwarp QP behind @qp (a reset makes a new one) */
	struct iw_qp *(*iw_qp)(struct ibv_qp *qp);
	/* whether work was posted on @qp since it was made or reset */
	bool (*qp_posted)(struct ibv_qp *qp);
	/* the QP of @ctx numbered @qp_num, or NULL */
	struct ibv_qp *(*qp_by_num)(struct ibv_context *ctx, uint32_t qp_num);
	/*
	 * A connection holds @qp: destroying or resetting the QP first calls
	 * @release, which ends the connection.  @holder NULL and @release
	 * NULL let go.  librdmacm serialises these calls with its own lock,
	 * which @release takes too.
	 */
	void (*qp_hold)(struct ibv_qp *qp, void *holder,
			void (*release)(struct ibv_qp *qp));
	/* the holder @qp_hold gave, or NULL */
	void *(*qp_holder)(struct ibv_qp *qp);
	/* the libiwarp CQ behind @cq (rsockets wait on it with
	 * iw_progress_cq()) */
	struct iw_cq *(*iw_cq)(struct ibv_cq *cq);
};

/* The head of every libibverbs context of libiwarp's. */
struct iwv_context_head {
	struct verbs_context vctx; /* its ibv_context is last */
	const struct iwv_rdmacm_iface *rdmacm;
};

/* Whether @c is a context of ours (an application may hand in another). */
static inline bool iwv_is_ours(struct ibv_context *c)
{
	return c && c->device && c->abi_compat == __VERBS_ABI_IS_EXTENDED &&
	       c->device->transport_type == IBV_TRANSPORT_IWARP &&
	       !strcmp(c->device->name, IWV_DEVICE_NAME);
}

/* The interface of @ctx's libibverbs, or NULL: not ours, or of a version
 * this librdmacm does not know. */
static inline const struct iwv_rdmacm_iface *
iwv_rdmacm_iface(struct ibv_context *ctx)
{
	const struct iwv_rdmacm_iface *f;

	if (!iwv_is_ours(ctx))
		return NULL;
	f = iwv_container_of(ctx, struct iwv_context_head, vctx.context)->rdmacm;
	return f && f->version == IWV_RDMACM_IFACE_VERSION &&
			       f->size >= sizeof(*f)
		       ? f
		       : NULL;
}

/*
 * errno.c, built into both libraries (not exported): the errno rdma-core
 * gives for a libiwarp return code, 0 for 0.
 */
int iwv_errno(int rc);

#endif
