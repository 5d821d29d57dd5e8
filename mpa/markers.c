// SPDX-License-Identifier: MIT
/*
 * Framing arithmetic shared by the sender and the receiver: how long an
 * FPDU is on the wire once markers are inserted, the largest ULPDU that
 * fits one TCP segment (MULPDU), and the copy of a run between markers.
 */
#include <string.h>

#include "mpa/mpa.h"

/*
 * RFC 5044 section 4.3: markers sit at every 512th octet of the stream,
 * counted from the first octet of the first FPDU.  An FPDU that starts at
 * @start_off and carries @ulpdu_len octets occupies its header, ULPDU, pad
 * and CRC plus a marker for every marker position it covers, a marker due
 * at its very start included.
 */
uint64_t mpa_fpdu_wire_len(uint64_t start_off, uint32_t ulpdu_len,
			   bool markers)
{
	uint64_t len = MPA_HDR_LEN + ulpdu_len + mpa_pad_len(ulpdu_len) +
		       MPA_CRC_LEN;
	const uint64_t gain = MPA_MARKER_SPACING - MPA_MARKER_LEN;
	uint64_t gap, n;

	if (!markers)
		return len;
	/* the first marker position is @gap octets away */
	gap = mpa_marker_gap(start_off);
	if (gap >= len)
		return len;
	/*
	 * Each marker lengthens the FPDU by 4 octets while the next position
	 * lies 512 further: the positions gain 508 octets a marker on the
	 * FPDU's end, and n markers cover it once 508 * n >= len - gap.
	 */
	n = (len - gap + gain - 1) / gain;
	return len + n * MPA_MARKER_LEN;
}

/*
 * The wire length of the FPDU whose first octets (stream offset @off,
 * markers included) are @p; 0 while @avail octets do not hold its
 * ULPDU_LENGTH yet.
 */
uint64_t mpa_fpdu_peek_len(uint64_t off, bool markers, const uint8_t *p,
			   size_t avail)
{
	size_t at = markers && mpa_marker_gap(off) == 0 ? MPA_MARKER_LEN : 0;

	if (avail < at + MPA_HDR_LEN)
		return 0;
	return mpa_fpdu_wire_len(off, (uint32_t)(p[at] << 8 | p[at + 1]),
				 markers);
}

/*
 * RFC 5044 section 4.5 (with markers, section 4.3): the largest ULPDU whose
 * FPDU fits in one segment of the effective MSS.
 *   without markers: MULPDU = EMSS - (6 + EMSS mod 4)
 *   with markers:    MULPDU = EMSS - (6 + 4 * ceil(EMSS / 512) + EMSS mod 4)
 * An EMSS over 65535 is taken as 65535: ULPDU_LENGTH is 16 bits, and so is
 * every FPDUPTR inside an FPDU.
 */
uint16_t mpa_mulpdu(uint32_t emss, bool markers)
{
	uint32_t overhead;

	if (emss > 0xffff)
		emss = 0xffff;
	overhead = MPA_HDR_LEN + MPA_CRC_LEN + emss % MPA_ALIGN;
	if (markers)
		overhead += MPA_MARKER_LEN *
			    ((emss + MPA_MARKER_SPACING - 1) / MPA_MARKER_SPACING);
	return emss > overhead ? (uint16_t)(emss - overhead) : 0;
}

/*
 * Copies the @n octets between two marker positions.  Out of line on
 * purpose: where the caller knows a run is under 512 octets, the compiler
 * inlines the copy as rep movsq, which takes several times as long as
 * the C library's memcpy for runs of that size.
 */
void mpa_copy_run(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
}
