// SPDX-License-Identifier: MIT
/*
 * Untagged queues on the receiving side (RFC 5041 sections 5.3 and 7.2):
 * MSN starts at 1 on every queue and counts messages; MO counts octets
 * within one.  Over an in-order stream a segment must carry exactly the
 * expected MSN and MO, fit the buffer posted for its message, and leave
 * the queue ready for the next segment.
 */
#include "ddp/ddp.h"
#include "lib/error.h"

void ddp_queue_init(struct ddp_queue *q)
{
	q->msn = 1;
	q->mo = 0;
	q->open = false;
}

/*
 * Judges an untagged segment with @payload_len octets after its header.
 * @have_buffer says whether a buffer is (or can be) posted for its message
 * and @buffer_len how long it is.  The queue number is the caller's: which
 * queues exist is the upper layer's business.
 */
int ddp_untagged_check(const struct ddp_queue *q, const struct ddp_hdr *h,
		       size_t payload_len, bool have_buffer,
		       uint64_t buffer_len)
{
	if (h->version != DDP_VERSION)
		return -IW_EDDP_U_VERSION;
	if (h->msn != q->msn)
		return -IW_EDDP_U_MSN;
	if (h->mo != q->mo)
		return -IW_EDDP_U_MO;
	if (!have_buffer)
		return -IW_EDDP_U_NO_BUFFER;
	if ((uint64_t)h->mo + payload_len > buffer_len)
		return -IW_EDDP_U_TOO_LONG;
	return 0;
}

/* Accounts for a checked segment; the last one moves on to the next MSN. */
void ddp_untagged_advance(struct ddp_queue *q, const struct ddp_hdr *h,
			  size_t payload_len)
{
	q->mo += (uint32_t)payload_len;
	q->open = !h->last;
	if (h->last) {
		q->msn++;
		q->mo = 0;
	}
}
