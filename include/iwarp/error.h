/* SPDX-License-Identifier: MIT */
/*
 * libiwarp error codes.
 *
 * Every libiwarp call returns 0 (or a count) on success and a negative code
 * on failure: either a negated errno value (-ENOMEM, -EINVAL, ...) or a
 * negated iw_error value below.  Protocol violations have codes of their own;
 * each maps to the Terminate (layer, error type, error code) triple that
 * RFC 5040 section 7 assigns to it, which is what the peer receives.
 */
#ifndef IWARP_ERROR_H
#define IWARP_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

enum iw_error {
	IW_ERROR_BASE = 0x1000,

	/* MPA, RFC 5044 / RFC 6581 (Terminate layer LLP, type MPA) */
	IW_EMPA_STREAM_LOST = IW_ERROR_BASE, /* stream ended inside a frame */
	IW_EMPA_CRC,		 /* FPDU CRC32c mismatch */
	IW_EMPA_MARKER,		 /* marker FPDUPTR not at the FPDU start */
	IW_EMPA_ULPDU_TOO_LONG,	 /* ULPDU_LENGTH over the receive limit */
	IW_EMPA_BAD_KEY,	 /* Request/Reply key mismatch */
	IW_EMPA_BAD_REVISION,	 /* unknown MPA revision */
	IW_EMPA_PD_TOO_LONG,	 /* private data over the limit */
	IW_EMPA_ENHANCED_SHORT,	 /* RFC 6581 frame without IRD/ORD words */
	IW_EMPA_UNEXPECTED,	 /* frame or bytes not allowed at this point */
	IW_EMPA_MARKERS_REFUSED, /* peer wants markers, disabled locally */
	IW_EMPA_CRC_REFUSED,	 /* peer demands CRC, disabled locally */
	IW_EMPA_CRC_DROPPED,	 /* responder cleared the requested C bit */
	IW_EMPA_INSUFFICIENT_IRD, /* RFC 6581: IRD too small for the ORD */
	IW_EMPA_NO_MATCHING_RTR, /* RFC 6581: no common RTR type */
	IW_EMPA_RTR_INVALID,	 /* reply picks zero, several or unoffered RTRs */
	IW_EMPA_REJECTED,	 /* peer answered with R=1 */

	/* DDP, RFC 5041 section 7 (Terminate layer DDP) */
	IW_EDDP_MALFORMED,   /* segment shorter than its header */
	IW_EDDP_T_STAG,	     /* tagged: invalid STag */
	IW_EDDP_T_BOUNDS,    /* tagged: base or bounds violation */
	IW_EDDP_T_NOT_ASSOC, /* tagged: STag of another protection domain */
	IW_EDDP_T_TO_WRAP,   /* tagged: TO + length wraps */
	IW_EDDP_T_VERSION,   /* tagged: DDP version not 1 */
	IW_EDDP_U_QN,	     /* untagged: invalid queue number */
	IW_EDDP_U_NO_BUFFER, /* untagged: no buffer posted */
	IW_EDDP_U_MSN,	     /* untagged: MSN not the expected one */
	IW_EDDP_U_MO,	     /* untagged: MO not the octets received */
	IW_EDDP_U_TOO_LONG,  /* untagged: message longer than the buffer */
	IW_EDDP_U_VERSION,   /* untagged: DDP version not 1 */

	/* RDMAP, RFC 5040 section 7 (Terminate layer RDMAP) */
	IW_ERDMAP_STAG,		   /* Read source: invalid STag */
	IW_ERDMAP_BOUNDS,	   /* Read source: base or bounds violation */
	IW_ERDMAP_ACCESS,	   /* access rights violation */
	IW_ERDMAP_NOT_ASSOC,	   /* Read source: STag of another PD */
	IW_ERDMAP_TO_WRAP,	   /* Read source: TO + length wraps */
	IW_ERDMAP_INVALIDATE,	   /* STag cannot be invalidated */
	IW_ERDMAP_VERSION,	   /* RDMAP version not 1 */
	IW_ERDMAP_OPCODE,	   /* unexpected or unknown opcode */
	IW_ERDMAP_RRESP_UNEXPECTED, /* Read Response, no Read outstanding */
	IW_ERDMAP_RRESP_MISMATCH,  /* Read Response not for the head Read */
	IW_ERDMAP_IRD_EXCEEDED,	   /* more Reads than the IRD allows */
	IW_ERDMAP_MALFORMED,	   /* RDMAP message of the wrong shape */

	/* local conditions: no Terminate names them */
	IW_ELOCAL_PROTECTION, /* an lkey does not cover a local buffer */
	IW_ELOCAL_LENGTH,     /* local buffers too small or too many */
	IW_ETERMINATED,	      /* the peer sent a Terminate */
	IW_ENO_READ_CREDIT,   /* RDMA Read with ORD 0 (ours, or peer IRD 0) */
	IW_ECLOSED,	      /* the connection closed */
	IW_ECQ_OVERRUN,	      /* a completion found its CQ full */

	/* MPA again: codes added later go last, so that none changes value */
	IW_EMPA_TRUNCATED, /* stream ended inside the MPA Request or Reply */

	/* local conditions again */
	IW_EUNRESOLVED, /* host name or port resolves to no address */

	/* RFC 7306 atomics (Terminate layer RDMAP, RFC 5040's codes) */
	IW_ERDMAP_ATOMIC_STAG,	       /* atomic target: invalid STag */
	IW_ERDMAP_ATOMIC_BOUNDS,       /* atomic target outside the region */
	IW_ERDMAP_ATOMIC_NOT_ASSOC,    /* atomic target: STag of another PD */
	IW_ERDMAP_ATOMIC_TO_WRAP,      /* atomic target: TO + 8 wraps */
	IW_ERDMAP_ATOMIC_ALIGN,	       /* atomic target not 8-octet aligned */
	IW_ERDMAP_ATOMIC_OP,	       /* atomic operation subcode unknown */
	IW_ERDMAP_ATOMIC_IRD_EXCEEDED, /* more Reads and atomics than the IRD */
	IW_ERDMAP_ARESP_UNEXPECTED,    /* Atomic Response, no atomic outstanding */
	IW_ERDMAP_ARESP_MISMATCH,      /* Atomic Response not for the head one */

	IW_ERROR_END
};

/*
 * Returns a short English description of a libiwarp return code: a negated
 * errno value, a negated iw_error value or either one unnegated.  Never NULL.
 */
const char *iw_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* IWARP_ERROR_H */
