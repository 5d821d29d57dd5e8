// SPDX-License-Identifier: MIT
/*
 * What the device can do: the limits the other calls enforce, gathered in
 * one answer, as ibv_query_device() gives them for an adapter.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>

#include "verbs/verbs.h"

/* Every QP holds a socket and every CQ an eventfd: descriptors are the limit. */
static uint32_t descriptor_limit(void)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r) || r.rlim_cur == RLIM_INFINITY ||
	    r.rlim_cur > UINT32_MAX)
		return UINT32_MAX;
	return (uint32_t)r.rlim_cur;
}

/*
 * Fills the first @attr_size octets of @attr (a caller built against an
 * older header knows fewer fields).  Returns 0 or -EINVAL.
 */
int iw_query_device(struct iw_context *ctx, struct iw_device_attr *attr,
		    size_t attr_size)
{
	struct iw_device_attr a = {
		.max_qp = descriptor_limit(),
		.max_qp_wr = QP_MAX_WR,
		.max_sge = RDMAP_MAX_SGE,
		.max_inline_data = QP_MAX_INLINE,
		.max_cq = descriptor_limit(),
		.max_cqe = CQ_MAX_CQE,
		.max_mr_size = UINT64_MAX,
		.max_srq_wr = QP_MAX_WR,
		.max_srq_sge = RDMAP_MAX_SGE,
		.max_ird = MPA_V2_VALUE_MASK,
		.max_ord = MPA_V2_VALUE_MASK,
		.max_private_data = MPA_MAX_PD_LEN - MPA_V2_WORDS_LEN,
		.rfc7306 = IW_RFC7306_ALL,
	};

	if (!ctx || !attr)
		return -EINVAL;
	a.max_mr = ctx->stags.n_slots - 1;
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	return 0;
}
