// SPDX-License-Identifier: MIT
/*
 * iovec arithmetic for messages that live in scattered local buffers: the
 * sender slices a message into segments, the receiver places a segment at
 * its message offset.
 */
#include <errno.h>
#include <string.h>

#include "ddp/ddp.h"
#include "lib/copy.h"

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

/*
 * Copies @len octets between @p and buffer-list offset @off, into the
 * list when @in; -EMSGSIZE if the list is shorter.  Inline in its two
 * callers, each with its direction fixed.
 */
static inline int iov_copy(const struct iovec *iov, int iovcnt, size_t off,
			   uint8_t *p, size_t len, bool in)
{
	int i = iov_seek(iov, iovcnt, &off);

	for (; len; i++, off = 0) {
		uint8_t *b;
		size_t take;

		if (i == iovcnt)
			return -EMSGSIZE;
		b = (uint8_t *)iov[i].iov_base + off;
		take = iov[i].iov_len - off;
		if (take > len)
			take = len;
		copy_small(in ? b : p, in ? p : b, take);
		p += take;
		len -= take;
	}
	return 0;
}

/*
 * Copies @len octets to buffer-list offset @off; -EMSGSIZE if they
 * overrun.  Small pieces are copied inline: a small Send lands with it.
 */
int ddp_iov_copy_in(const struct iovec *iov, int iovcnt, size_t off,
		    const uint8_t *p, size_t len)
{
	return iov_copy(iov, iovcnt, off, (uint8_t *)p, len, true);
}

/*
 * Copies @len octets from buffer-list offset @off to @p; -EMSGSIZE if the
 * list is shorter.  Small pieces are copied inline: a sender builds a
 * small FPDU with it.
 */
int ddp_iov_copy_out(const struct iovec *iov, int iovcnt, size_t off,
		     uint8_t *p, size_t len)
{
	return iov_copy(iov, iovcnt, off, p, len, false);
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
