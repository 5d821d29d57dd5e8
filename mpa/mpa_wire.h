/* SPDX-License-Identifier: MIT */
/*
 * MPA wire formats: RFC 5044 (framing, markers, CRC, Request/Reply frames)
 * and RFC 6581 (enhanced connection setup).  Field offsets and bits live
 * here and nowhere else.
 */
#ifndef IW_MPA_WIRE_H
#define IW_MPA_WIRE_H

/* RFC 5044 section 7.1: MPA Request and Reply frames */
#define MPA_KEY_LEN 16
#define MPA_KEY_REQ "MPA ID Req Frame"
#define MPA_KEY_REP "MPA ID Rep Frame"

#define MPA_FRAME_OFF_FLAGS 16
#define MPA_FRAME_OFF_REV 17
#define MPA_FRAME_OFF_PD_LEN 18
#define MPA_FRAME_HDR_LEN 20

#define MPA_FLAG_M 0x80 /* sender wants markers in what it receives */
#define MPA_FLAG_C 0x40 /* CRC */
#define MPA_FLAG_R 0x20 /* reject (Reply only) */
#define MPA_FLAG_H 0x10 /* RFC 6581: IRD/ORD words lead the private data */
#define MPA_FLAG_RES 0x0f

#define MPA_REVISION_1 1
#define MPA_REVISION_2 2 /* RFC 6581 */

/* RFC 5044 section 7.1: at most 512 octets of private data */
#define MPA_MAX_PD_LEN 512

/* RFC 6581 section 4: the IRD and ORD words (16 bits each) */
#define MPA_V2_WORDS_LEN 4
#define MPA_V2_IRD_A 0x8000 /* peer-to-peer */
#define MPA_V2_IRD_B 0x4000 /* zero-length Send RTR */
#define MPA_V2_ORD_C 0x8000 /* zero-length RDMA Write RTR */
#define MPA_V2_ORD_D 0x4000 /* zero-length RDMA Read RTR */
#define MPA_V2_VALUE_MASK 0x3fff

/* RFC 5044 section 4: FPDU = ULPDU_LENGTH, ULPDU, PAD, CRC */
#define MPA_HDR_LEN 2
#define MPA_CRC_LEN 4
#define MPA_ALIGN 4

/* RFC 5044 section 4.3: a marker every 512 octets of the stream */
#define MPA_MARKER_SPACING 512
#define MPA_MARKER_LEN 4
#define MPA_MARKER_OFF_FPDUPTR 2

#endif /* IW_MPA_WIRE_H */
