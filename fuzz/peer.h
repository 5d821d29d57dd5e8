/* SPDX-License-Identifier: MIT */
/*
 * The fuzzer as the remote end of a stream: each ULPDU it gives is framed
 * the way the connection negotiated (markers, CRC), so that its octets
 * reach DDP and RDMAP instead of dying at the CRC.  Optional fix-ups keep
 * a segment plausible while the rest of it is fuzzed: an STag with index
 * k becomes the STag of the k-th region registered, a tagged offset is
 * taken relative to that region, MSN and MO continue the queue.  A corruption may be laid
 * on the next FPDU after framing.
 */
#ifndef IW_FUZZ_PEER_H
#define IW_FUZZ_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpa/mpa.h"
#include "rdmap/rdmap_wire.h"

/* Fix-ups, as flag bits of a ULPDU chunk's op octet */
#define PEER_FIX_KEYS 0x08 /* STag index k: the k-th region's STag */
#define PEER_FIX_TO 0x10   /* TO = region start + (TO mod 64 KiB) */
#define PEER_FIX_SEQ 0x20  /* untagged MSN and MO continue the queue */

#define PEER_MAX_STAGS 16
/* An FPDU with the longest ULPDU, every marker, pad and CRC */
#define PEER_FPDU_MAX (0xffff + 8 + 4 * 132)

struct peer_stag {
	uint32_t stag;
	uint64_t to; /* tagged offset of the region's first octet */
};

struct peer {
	struct mpa_tx tx;
	uint32_t msn[RDMAP_QN_COUNT], mo[RDMAP_QN_COUNT];
	struct peer_stag stags[PEER_MAX_STAGS];
	unsigned int n_stags;
	bool corrupt;
	uint32_t corrupt_pos;
	uint8_t corrupt_xor;
};

void peer_init(struct peer *p, bool markers, bool crc);
/* The framing, once the handshake has settled it. */
void peer_set_framing(struct peer *p, bool markers, bool crc);
void peer_add_stag(struct peer *p, uint32_t stag, uint64_t to);
/*
 * Applies the fix-ups in @flags to @u (a ULPDU of @len octets, changed in
 * place) and frames it into @out (PEER_FPDU_MAX octets).  Returns the
 * FPDU's length; 0 when the ULPDU is longer than the sender frames.
 */
size_t peer_fpdu(struct peer *p, uint8_t flags, uint8_t *u, size_t len,
		 uint8_t *out);

#endif /* IW_FUZZ_PEER_H */
