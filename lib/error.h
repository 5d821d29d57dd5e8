/* SPDX-License-Identifier: MIT */
/*
 * Internal view of the error table: each library code with its name, its
 * words, and the Terminate triple (RFC 5040 section 7) a peer is sent.
 */
#ifndef IW_LIB_ERROR_H
#define IW_LIB_ERROR_H

#include <stdbool.h>
#include <stdint.h>

#include "iwarp/error.h"

/* Terminate layers, RFC 5040 section 7.1 */
enum iw_term_layer {
	IW_TERM_LAYER_RDMAP = 0,
	IW_TERM_LAYER_DDP = 1,
	IW_TERM_LAYER_LLP = 2,
};

/* Error type of the LLP layer when the LLP is MPA (RFC 5044 section 8) */
#define IW_TERM_ETYPE_MPA 0

struct iw_term_triple {
	uint8_t layer;
	uint8_t etype;
	uint8_t ecode;
};

/*
 * RFC 5040 sections 4.8 and 7.2: what a Terminate says of a fault of our
 * own that ends the stream and that no code below names (nothing the peer
 * sent caused it): RDMAP layer, local catastrophic error.  The RFC leaves
 * its error code open; Linux siw sends 0xff, we send 0x00.
 */
#define IW_TERM_ETYPE_LOCAL_CATASTROPHIC 0
#define IW_TERM_LOCAL_CATASTROPHIC                                        \
	((struct iw_term_triple){ IW_TERM_LAYER_RDMAP,                     \
				  IW_TERM_ETYPE_LOCAL_CATASTROPHIC, 0x00 })

struct iw_error_info {
	int code;		/* positive iw_error value */
	const char *name;	/* "IW_EMPA_CRC" */
	const char *text;	/* what went wrong, in words */
	bool has_term;		/* a Terminate names this error on the wire */
	struct iw_term_triple term;
};

/* Looks up a code of either sign; NULL when it is not a library code. */
const struct iw_error_info *iw_error_info(int err);

/*
 * Fills *t (unless NULL) with the Terminate triple for a library error code.
 * Returns false when the error is not a protocol violation (no Terminate
 * carries it).
 */
bool iw_error_term(int err, struct iw_term_triple *t);

#endif /* IW_LIB_ERROR_H */
