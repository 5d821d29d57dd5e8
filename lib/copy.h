/* SPDX-License-Identifier: MIT */
/*
 * Copies of a few dozen octets, the pieces small FPDUs are built from: a
 * call into the C library's memcpy() costs more than such a copy itself.
 */
#ifndef IW_LIB_COPY_H
#define IW_LIB_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Up to this many octets are copied inline. */
#define COPY_SMALL_MAX 64

/* memcpy() for @dst and @src that do not overlap, inline when small. */
static inline void copy_small(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;

	if (n > COPY_SMALL_MAX) {
		memcpy(d, s, n);
	} else if (n >= 16) {
		/* 16 octets at a time, the last piece overlapping the one before */
		for (size_t i = 0; i + 16 < n; i += 16)
			__builtin_memcpy(d + i, s + i, 16);
		__builtin_memcpy(d + n - 16, s + n - 16, 16);
	} else if (n >= 8) {
		__builtin_memcpy(d, s, 8);
		__builtin_memcpy(d + n - 8, s + n - 8, 8);
	} else if (n >= 4) {
		__builtin_memcpy(d, s, 4);
		__builtin_memcpy(d + n - 4, s + n - 4, 4);
	} else {
		for (size_t i = 0; i < n; i++)
			d[i] = s[i];
	}
}

#endif
