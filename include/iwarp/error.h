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
