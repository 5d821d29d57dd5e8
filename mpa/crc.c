// SPDX-License-Identifier: MIT
/*
 * CRC32c for MPA (RFC 5044 section 4.4), computed by ISA-L's crc32_iscsi,
 * which picks the fastest instruction set at run time.  The running value is
 * the raw register: ISA-L neither inverts on entry nor on exit, so the
 * standard CRC is ~crc32_iscsi(buf, len, 0xffffffff).
 */
#include <limits.h>

#include <isa-l/crc.h>

#include "mpa/mpa.h"

uint32_t mpa_crc32c_update(uint32_t acc, const void *p, size_t len)
{
	/* ISA-L takes a non-const pointer and an int length; it only reads. */
	unsigned char *b = (unsigned char *)(uintptr_t)p;

	while (len > INT_MAX) {
		acc = crc32_iscsi(b, INT_MAX, acc);
		b += INT_MAX;
		len -= INT_MAX;
	}
	return crc32_iscsi(b, (int)len, acc);
}

uint32_t mpa_crc32c(const void *p, size_t len)
{
	return mpa_crc32c_final(mpa_crc32c_update(mpa_crc32c_init(), p, len));
}
