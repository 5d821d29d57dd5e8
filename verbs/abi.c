// SPDX-License-Identifier: MIT
/*
 * Entry points for binaries built against older headers, whose structures
 * were smaller.  Each converts and calls the current call; the version
 * script and the .symver lines below bind them to the version nodes of
 * the headers they serve.
 */
#include <errno.h>
#include <string.h>

#include "verbs/verbs.h"

/* struct iw_wc of libiwarp 0.1: no qp_context, no imm_data. */
struct iw_wc_0_1 {
	uint64_t wr_id;
	enum iw_wc_status status;
	enum iw_wc_opcode opcode;
	uint32_t byte_len;
	uint32_t invalidated_rkey;
	unsigned int wc_flags;
	struct iw_qp *qp;
	int err;
};

_Static_assert(offsetof(struct iw_wc, err) ==
			       offsetof(struct iw_wc_0_1, err) &&
		       offsetof(struct iw_wc, qp_context) >=
			       sizeof(struct iw_wc_0_1),
	       "struct iw_wc only grows at its end");

/*
 * iw_poll_cq() writing entries of the 0.1 size.  A QP such a binary
 * creates cannot enable RFC 7306, so nothing it polls carries imm_data.
 */
int iw_poll_cq_0_1(struct iw_cq *cq, int num_entries, struct iw_wc_0_1 *wc);
int iw_poll_cq_0_1(struct iw_cq *cq, int num_entries, struct iw_wc_0_1 *wc)
{
	struct iw_wc chunk[16];
	int done = 0;

	if (!cq || num_entries < 0 || (num_entries && !wc))
		return -EINVAL;
	while (done < num_entries) {
		int want = num_entries - done, n;

		if (want > (int)(sizeof(chunk) / sizeof(chunk[0])))
			want = (int)(sizeof(chunk) / sizeof(chunk[0]));
		n = iw_poll_cq(cq, want, chunk);
		if (n < 0)
			return done ? done : n;
		for (int i = 0; i < n; i++)
			memcpy(&wc[done + i], &chunk[i], sizeof(wc[0]));
		done += n;
		if (n < want)
			break;
	}
	return done;
}
__asm__(".symver iw_poll_cq_0_1, iw_poll_cq@IWARP_0.1");

/* struct iw_qp_init_attr of libiwarp 0.1: no comp_mask. */
struct iw_qp_init_attr_0_1 {
	struct iw_cq *send_cq;
	struct iw_cq *recv_cq;
	struct iw_srq *srq;
	void *qp_context;
	struct iw_qp_cap cap;
	int sq_sig_all;
};

struct iw_qp *iw_create_qp_0_1(struct iw_pd *pd,
			       struct iw_qp_init_attr_0_1 *attr);
struct iw_qp *iw_create_qp_0_1(struct iw_pd *pd,
			       struct iw_qp_init_attr_0_1 *attr)
{
	struct iw_qp_init_attr a = { 0 };

	if (!attr)
		return iw_create_qp(pd, NULL);
	memcpy(&a, attr, sizeof(*attr));
	return iw_create_qp(pd, &a);
}
__asm__(".symver iw_create_qp_0_1, iw_create_qp@IWARP_0.1");
