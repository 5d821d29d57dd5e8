/* SPDX-License-Identifier: MIT */
/*
 * DDP wire format (RFC 5041 section 4): the tagged header (STag, TO) and
 * the untagged header (QN, MSN, MO) behind a common control octet.
 */
#ifndef IW_DDP_WIRE_H
#define IW_DDP_WIRE_H

/* Control octet: T, L, four reserved bits, DDP version */
#define DDP_CTRL_T 0x80
#define DDP_CTRL_L 0x40
#define DDP_CTRL_RSVD 0x3c
#define DDP_CTRL_DV 0x03
#define DDP_VERSION 1

/* Octet 1 is the first RsvdULP octet (RDMAP's control field). */
#define DDP_OFF_CTRL 0
#define DDP_OFF_RSVDULP 1

/* Tagged buffer model, RFC 5041 section 4.3 */
#define DDP_T_OFF_STAG 2
#define DDP_T_OFF_TO 6
#define DDP_TAGGED_HDR_LEN 14

/* Untagged buffer model, RFC 5041 section 4.4: 40 bits of RsvdULP */
#define DDP_U_OFF_RSVDULP2 2
#define DDP_U_OFF_QN 6
#define DDP_U_OFF_MSN 10
#define DDP_U_OFF_MO 14
#define DDP_UNTAGGED_HDR_LEN 18

#define DDP_MAX_HDR_LEN DDP_UNTAGGED_HDR_LEN

#endif /* IW_DDP_WIRE_H */
