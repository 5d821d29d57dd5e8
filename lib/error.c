// SPDX-License-Identifier: MIT
/*
 * The one table of library error codes: name, words and Terminate triple.
 * Layers return codes; this table is the only place that knows what a code
 * means on the wire (RFC 5040 section 7, RFC 5044 section 8, RFC 6581).
 */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include "lib/error.h"

#define MPA_TERM(code) \
	true, { IW_TERM_LAYER_LLP, IW_TERM_ETYPE_MPA, (code) }
#define DDP_TERM(etype, code) \
	true, { IW_TERM_LAYER_DDP, (etype), (code) }
#define RDMAP_TERM(etype, code) \
	true, { IW_TERM_LAYER_RDMAP, (etype), (code) }
#define NO_TERM false, { 0, 0, 0 }

#define E(sym, words, term) [(sym) - IW_ERROR_BASE] = { (sym), #sym, (words), term }

static const struct iw_error_info error_table[IW_ERROR_END - IW_ERROR_BASE] = {
	E(IW_EMPA_STREAM_LOST, "MPA: TCP stream ended inside a frame",
	  MPA_TERM(0x01)),
	E(IW_EMPA_CRC, "MPA: FPDU CRC32c mismatch", MPA_TERM(0x02)),
	E(IW_EMPA_MARKER,
	  "MPA: marker FPDUPTR does not point at the FPDU start",
	  MPA_TERM(0x03)),
	E(IW_EMPA_ULPDU_TOO_LONG,
	  "MPA: ULPDU_LENGTH exceeds the receive limit (MULPDU)",
	  MPA_TERM(0x03)),
	E(IW_EMPA_BAD_KEY, "MPA: Request/Reply frame key mismatch",
	  MPA_TERM(0x04)),
	E(IW_EMPA_BAD_REVISION, "MPA: unsupported MPA revision",
	  MPA_TERM(0x04)),
	E(IW_EMPA_PD_TOO_LONG, "MPA: private data length over the limit",
	  MPA_TERM(0x04)),
	E(IW_EMPA_ENHANCED_SHORT,
	  "MPA: enhanced (RFC 6581) frame lacks the IRD/ORD words",
	  MPA_TERM(0x04)),
	E(IW_EMPA_UNEXPECTED, "MPA: frame or data not allowed at this point",
	  MPA_TERM(0x04)),
	E(IW_EMPA_MARKERS_REFUSED,
	  "MPA: peer requires markers, which are disabled locally",
	  MPA_TERM(0x04)),
	E(IW_EMPA_CRC_REFUSED,
	  "MPA: peer requires CRC, which is disabled locally", MPA_TERM(0x04)),
	E(IW_EMPA_CRC_DROPPED,
	  "MPA: responder cleared the C bit the initiator set", MPA_TERM(0x04)),
	E(IW_EMPA_INSUFFICIENT_IRD,
	  "MPA: peer IRD is too small for the required ORD (RFC 6581)",
	  MPA_TERM(0x06)),
	E(IW_EMPA_NO_MATCHING_RTR,
	  "MPA: no ready-to-receive type both sides support (RFC 6581)",
	  MPA_TERM(0x07)),
	E(IW_EMPA_RTR_INVALID,
	  "MPA: reply selects no, several or unoffered RTR types (RFC 6581)",
	  MPA_TERM(0x07)),
	E(IW_EMPA_REJECTED, "MPA: peer rejected the connection (R bit)",
	  NO_TERM),
	/*
	 * What arrived of the frame was well formed (else it would be 0x04);
	 * the connection ended before the rest: RFC 5044's "closed or lost".
	 */
	E(IW_EMPA_TRUNCATED,
	  "MPA: TCP stream ended inside the MPA Request or Reply",
	  MPA_TERM(0x01)),

	/* RFC 5041 section 7.2; error types 0 catastrophic, 1 tagged, 2 untagged */
	E(IW_EDDP_MALFORMED, "DDP: segment shorter than its header",
	  DDP_TERM(0, 0x00)),
	E(IW_EDDP_T_STAG, "DDP: tagged segment names an invalid STag",
	  DDP_TERM(1, 0x00)),
	E(IW_EDDP_T_BOUNDS, "DDP: tagged segment outside the region's bounds",
	  DDP_TERM(1, 0x01)),
	E(IW_EDDP_T_NOT_ASSOC,
	  "DDP: STag not associated with this stream (other protection domain)",
	  DDP_TERM(1, 0x02)),
	E(IW_EDDP_T_TO_WRAP, "DDP: tagged offset plus length wraps 2^64",
	  DDP_TERM(1, 0x03)),
	E(IW_EDDP_T_VERSION, "DDP: unsupported DDP version in a tagged segment",
	  DDP_TERM(1, 0x04)),
	E(IW_EDDP_U_QN, "DDP: invalid queue number", DDP_TERM(2, 0x01)),
	E(IW_EDDP_U_NO_BUFFER, "DDP: no receive buffer posted for the message",
	  DDP_TERM(2, 0x02)),
	E(IW_EDDP_U_MSN, "DDP: message sequence number is not the expected one",
	  DDP_TERM(2, 0x03)),
	E(IW_EDDP_U_MO,
	  "DDP: message offset differs from the octets received so far",
	  DDP_TERM(2, 0x04)),
	E(IW_EDDP_U_TOO_LONG, "DDP: message longer than the posted buffer",
	  DDP_TERM(2, 0x05)),
	E(IW_EDDP_U_VERSION,
	  "DDP: unsupported DDP version in an untagged segment",
	  DDP_TERM(2, 0x06)),

	/* RFC 5040 section 7.1; error types 1 remote protection, 2 remote operation */
	E(IW_ERDMAP_STAG, "RDMAP: RDMA Read source STag is invalid",
	  RDMAP_TERM(1, 0x00)),
	E(IW_ERDMAP_BOUNDS, "RDMAP: RDMA Read source outside the region's bounds",
	  RDMAP_TERM(1, 0x01)),
	E(IW_ERDMAP_ACCESS, "RDMAP: access rights violation",
	  RDMAP_TERM(1, 0x02)),
	E(IW_ERDMAP_NOT_ASSOC,
	  "RDMAP: RDMA Read source STag belongs to another protection domain",
	  RDMAP_TERM(1, 0x03)),
	E(IW_ERDMAP_TO_WRAP, "RDMAP: RDMA Read source offset plus length wraps",
	  RDMAP_TERM(1, 0x04)),
	E(IW_ERDMAP_INVALIDATE, "RDMAP: STag cannot be invalidated",
	  RDMAP_TERM(1, 0x09)),
	E(IW_ERDMAP_VERSION, "RDMAP: unsupported RDMAP version",
	  RDMAP_TERM(2, 0x05)),
	E(IW_ERDMAP_OPCODE, "RDMAP: unexpected or unknown opcode",
	  RDMAP_TERM(2, 0x06)),
	E(IW_ERDMAP_RRESP_UNEXPECTED,
	  "RDMAP: RDMA Read Response with no RDMA Read outstanding",
	  RDMAP_TERM(2, 0x06)),
	E(IW_ERDMAP_RRESP_MISMATCH,
	  "RDMAP: RDMA Read Response does not match the outstanding Read",
	  RDMAP_TERM(2, 0x07)),
	E(IW_ERDMAP_IRD_EXCEEDED,
	  "RDMAP: more RDMA Reads outstanding than the IRD allows",
	  RDMAP_TERM(2, 0x07)),
	E(IW_ERDMAP_MALFORMED, "RDMAP: malformed RDMAP message",
	  RDMAP_TERM(2, 0xff)),

	E(IW_ELOCAL_PROTECTION,
	  "local protection error: an lkey does not cover the buffer", NO_TERM),
	E(IW_ELOCAL_LENGTH, "local length error: buffers too small or too many",
	  NO_TERM),
	E(IW_ETERMINATED, "the peer terminated the stream (Terminate received)",
	  NO_TERM),
	E(IW_ENO_READ_CREDIT,
	  "RDMA Read impossible: the connection's ORD is 0 (no outbound Read credit)",
	  NO_TERM),
	E(IW_ECLOSED, "the connection closed", NO_TERM),
	/*
	 * RFC 7306 names no error codes of its own: an atomic's target is
	 * judged like an RDMA Read's source (RFC 5040 section 7.1, remote
	 * protection errors); a misaligned target is outside what the
	 * operation may touch; a request beyond the IRD, or a response
	 * that answers no request, is a remote operation error as for Reads.
	 */
	E(IW_ERDMAP_ATOMIC_STAG, "RDMAP: atomic target STag is invalid",
	  RDMAP_TERM(1, 0x00)),
	E(IW_ERDMAP_ATOMIC_BOUNDS,
	  "RDMAP: atomic target outside the region's bounds",
	  RDMAP_TERM(1, 0x01)),
	E(IW_ERDMAP_ATOMIC_NOT_ASSOC,
	  "RDMAP: atomic target STag belongs to another protection domain",
	  RDMAP_TERM(1, 0x03)),
	E(IW_ERDMAP_ATOMIC_TO_WRAP,
	  "RDMAP: atomic target offset plus 8 wraps", RDMAP_TERM(1, 0x04)),
	E(IW_ERDMAP_ATOMIC_ALIGN,
	  "RDMAP: atomic target is not 8-octet aligned", RDMAP_TERM(1, 0x01)),
	E(IW_ERDMAP_ATOMIC_OP, "RDMAP: unknown atomic operation",
	  RDMAP_TERM(2, 0x06)),
	E(IW_ERDMAP_ATOMIC_IRD_EXCEEDED,
	  "RDMAP: more RDMA Reads and atomics outstanding than the IRD allows",
	  RDMAP_TERM(2, 0x07)),
	E(IW_ERDMAP_ARESP_UNEXPECTED,
	  "RDMAP: Atomic Response with no atomic operation outstanding",
	  RDMAP_TERM(2, 0x06)),
	E(IW_ERDMAP_ARESP_MISMATCH,
	  "RDMAP: Atomic Response does not answer the oldest outstanding request",
	  RDMAP_TERM(2, 0x07)),

	E(IW_ECQ_OVERRUN,
	  "completion queue overrun: the CQ holds fewer entries than the work "
	  "posted to it",
	  NO_TERM),
	E(IW_EUNRESOLVED,
	  "the host name or port does not resolve to an address", NO_TERM),
};

const struct iw_error_info *iw_error_info(int err)
{
	int code = err < 0 ? -err : err;

	if (code < IW_ERROR_BASE || code >= IW_ERROR_END)
		return NULL;
	return &error_table[code - IW_ERROR_BASE];
}

bool iw_error_term(int err, struct iw_term_triple *t)
{
	const struct iw_error_info *info = iw_error_info(err);

	if (!info || !info->has_term)
		return false;
	if (t)
		*t = info->term;
	return true;
}

const char *iw_strerror(int err)
{
	const struct iw_error_info *info = iw_error_info(err);

	if (info)
		return info->text;
	if (err == 0)
		return "Success";
#ifdef HAVE_STRERRORDESC_NP
	{
		/* unlike strerror(), never touches a shared buffer */
		const char *s = strerrordesc_np(err < 0 ? -err : err);

		if (s)
			return s;
	}
#endif
	return "Unknown error";
}
