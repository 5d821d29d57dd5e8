// SPDX-License-Identifier: MIT
/*
 * iovec arithmetic for messages that live in scattered local buffers: the
 * sender slices a message into segments, the receiver places a segment at
 * its message offset.
 */
#include <errno.h>
#include <string.h>

#include "ddp/ddp.h"

size_t ddp_iov_len(const struct iovec *iov, int iovcnt)
{
	size_t len = 0;

	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	return len;
}

/* Skips @off octets; returns the index of the entry holding the next one. */
static int iov_seek(const struct iovec *iov, int iovcnt, size_t *off)
{
	int i = 0;

	while (i < iovcnt && *off >= iov[i].iov_len) {
		*off -= iov[i].iov_len;
		i++;
	}
	return i;
}

/*
 * Describes octets [@off, @off + @len) of the buffer list in @out.  Returns
 * the number of entries, -EMSGSIZE when the list is shorter, -ENOSPC when
 * @out is.  Empty entries are left out.
 */
int ddp_iov_slice(const struct iovec *iov, int iovcnt, size_t off, size_t len,
		  struct iovec *out, int out_max)
{
	int i = iov_seek(iov, iovcnt, &off), n = 0;

	while (len) {
		size_t take;

		if (i == iovcnt)
			return -EMSGSIZE;
		take = iov[i].iov_len - off;
		if (take > len)
			take = len;
		if (take) {
			if (n == out_max)
				return -ENOSPC;
			out[n].iov_base = (uint8_t *)iov[i].iov_base + off;
			out[n++].iov_len = take;
		}
		len -= take;
		off = 0;
		i++;
	}
	return n;
}

/* Copies @len octets to buffer-list offset @off; -EMSGSIZE if they overrun. */
int ddp_iov_copy_in(const struct iovec *iov, int iovcnt, size_t off,
		    const uint8_t *p, size_t len)
{
	int i = iov_seek(iov, iovcnt, &off);

	while (len) {
		size_t take;

		if (i == iovcnt)
			return -EMSGSIZE;
		take = iov[i].iov_len - off;
		if (take > len)
			take = len;
		memcpy((uint8_t *)iov[i].iov_base + off, p, take);
		p += take;
		len -= take;
		off = 0;
		i++;
	}
	return 0;
}

/*
 * Where buffer-list offset @off lives, and in *@span how many octets from
 * there are contiguous; NULL when @off is at or past the end.
 */
uint8_t *ddp_iov_span(const struct iovec *iov, int iovcnt, size_t off,
		      size_t *span)
{
	int i = iov_seek(iov, iovcnt, &off);

	if (i == iovcnt) {
		*span = 0;
		return NULL;
	}
	*span = iov[i].iov_len - off;
	return (uint8_t *)iov[i].iov_base + off;
}
