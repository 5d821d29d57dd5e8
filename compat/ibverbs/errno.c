// SPDX-License-Identifier: MIT
/*
 * The one mapping from libiwarp's return codes to the errno rdma-core's
 * kernel path gives for the same failure, for libibverbs and librdmacm
 * alike (librdmacm is built with this file too; its event statuses are
 * the same values, negated, as the kernel's rdma_cm reports them).
 *
 * - A work request refused as it is posted is bad input: rdma-core's
 *   providers and the kernel's post_send/post_recv (siw's among them)
 *   answer EINVAL, for a bad lkey, too many or too small buffers, or a
 *   Read on a connection with no Read credit.
 * - A connection the peer refused is ECONNREFUSED; one that ended (a
 *   reset, a Terminate, a stream cut inside a frame) is ECONNRESET, as
 *   the kernel's iWARP connection manager reports them.
 * - Every other protocol error (MPA, DDP, RDMAP: a frame or segment that
 *   breaks a rule) is EPROTO, as siw gives for an MPA Reply it cannot
 *   take or a Read beyond its IRD.
 * - A name that resolves to no address is EHOSTUNREACH, rdma_cm's
 *   address error; a completion lost to a full CQ is EOVERFLOW.
 */
#include <errno.h>

#include "compat/ibverbs/rdmacm_iface.h"

#define AT(code) [(code) - IW_ERROR_BASE]

static const int errno_of[IW_ERROR_END - IW_ERROR_BASE] = {
	/* MPA (RFC 5044, RFC 6581) */
	AT(IW_EMPA_STREAM_LOST) = ECONNRESET,
	AT(IW_EMPA_CRC) = EPROTO,
	AT(IW_EMPA_MARKER) = EPROTO,
	AT(IW_EMPA_ULPDU_TOO_LONG) = EPROTO,
	AT(IW_EMPA_BAD_KEY) = EPROTO,
	AT(IW_EMPA_BAD_REVISION) = EPROTO,
	AT(IW_EMPA_PD_TOO_LONG) = EPROTO,
	AT(IW_EMPA_ENHANCED_SHORT) = EPROTO,
	AT(IW_EMPA_UNEXPECTED) = EPROTO,
	AT(IW_EMPA_MARKERS_REFUSED) = EPROTO,
	AT(IW_EMPA_CRC_REFUSED) = EPROTO,
	AT(IW_EMPA_CRC_DROPPED) = EPROTO,
	AT(IW_EMPA_INSUFFICIENT_IRD) = EPROTO,
	AT(IW_EMPA_NO_MATCHING_RTR) = EPROTO,
	AT(IW_EMPA_RTR_INVALID) = EPROTO,
	AT(IW_EMPA_REJECTED) = ECONNREFUSED,
	AT(IW_EMPA_TRUNCATED) = ECONNRESET,
	/* DDP (RFC 5041) */
	AT(IW_EDDP_MALFORMED) = EPROTO,
	AT(IW_EDDP_T_STAG) = EPROTO,
	AT(IW_EDDP_T_BOUNDS) = EPROTO,
	AT(IW_EDDP_T_NOT_ASSOC) = EPROTO,
	AT(IW_EDDP_T_TO_WRAP) = EPROTO,
	AT(IW_EDDP_T_VERSION) = EPROTO,
	AT(IW_EDDP_U_QN) = EPROTO,
	AT(IW_EDDP_U_NO_BUFFER) = EPROTO,
	AT(IW_EDDP_U_MSN) = EPROTO,
	AT(IW_EDDP_U_MO) = EPROTO,
	AT(IW_EDDP_U_TOO_LONG) = EPROTO,
	AT(IW_EDDP_U_VERSION) = EPROTO,
	/* RDMAP (RFC 5040, RFC 7306) */
	AT(IW_ERDMAP_STAG) = EPROTO,
	AT(IW_ERDMAP_BOUNDS) = EPROTO,
	AT(IW_ERDMAP_ACCESS) = EPROTO,
	AT(IW_ERDMAP_NOT_ASSOC) = EPROTO,
	AT(IW_ERDMAP_TO_WRAP) = EPROTO,
	AT(IW_ERDMAP_INVALIDATE) = EPROTO,
	AT(IW_ERDMAP_VERSION) = EPROTO,
	AT(IW_ERDMAP_OPCODE) = EPROTO,
	AT(IW_ERDMAP_RRESP_UNEXPECTED) = EPROTO,
	AT(IW_ERDMAP_RRESP_MISMATCH) = EPROTO,
	AT(IW_ERDMAP_IRD_EXCEEDED) = EPROTO,
	AT(IW_ERDMAP_MALFORMED) = EPROTO,
	AT(IW_ERDMAP_ATOMIC_STAG) = EPROTO,
	AT(IW_ERDMAP_ATOMIC_BOUNDS) = EPROTO,
	AT(IW_ERDMAP_ATOMIC_NOT_ASSOC) = EPROTO,
	AT(IW_ERDMAP_ATOMIC_TO_WRAP) = EPROTO,
	AT(IW_ERDMAP_ATOMIC_ALIGN) = EPROTO,
	AT(IW_ERDMAP_ATOMIC_OP) = EPROTO,
	AT(IW_ERDMAP_ATOMIC_IRD_EXCEEDED) = EPROTO,
	AT(IW_ERDMAP_ARESP_UNEXPECTED) = EPROTO,
	AT(IW_ERDMAP_ARESP_MISMATCH) = EPROTO,
	/* local */
	AT(IW_ELOCAL_PROTECTION) = EINVAL,
	AT(IW_ELOCAL_LENGTH) = EINVAL,
	AT(IW_ETERMINATED) = ECONNRESET,
	AT(IW_ENO_READ_CREDIT) = EINVAL,
	AT(IW_ECLOSED) = ECONNRESET,
	AT(IW_ECQ_OVERRUN) = EOVERFLOW,
	AT(IW_EUNRESOLVED) = EHOSTUNREACH,
};

/*
 * The errno for @rc, a libiwarp call's return: 0 for success, errno
 * values as they are, a library code by the table above (EIO for a code
 * newer than the table, which test_compat_errno forbids).
 */
int iwv_errno(int rc)
{
	int code = -rc;

	if (rc >= 0)
		return 0;
	if (code < IW_ERROR_BASE)
		return code;
	if (code >= IW_ERROR_END || !errno_of[code - IW_ERROR_BASE])
		return EIO;
	return errno_of[code - IW_ERROR_BASE];
}
