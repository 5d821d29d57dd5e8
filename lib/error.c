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
