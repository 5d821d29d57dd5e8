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

/*
 * ISA-L's AVX-512 variant returns with the upper halves of the vector
 * registers in use: it ends without VZEROUPPER.  The first SSE
 * instructions after it (this library's own code has many) then wait
 * 400 to 600 cycles on a Xeon; clearing the halves costs one.  The
 * instruction exists only where AVX does.
 */
static inline void vector_upper_clear(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (__builtin_cpu_supports("avx"))
		__asm__ volatile("vzeroupper");
#endif
}

uint32_t mpa_crc32c_update(uint32_t acc, const void *p, size_t len)
{
	/* ISA-L takes a non-const pointer and an int length; it only reads. */
	unsigned char *b = (unsigned char *)(uintptr_t)p;

	while (len > INT_MAX) {
		acc = crc32_iscsi(b, INT_MAX, acc);
		b += INT_MAX;
		len -= INT_MAX;
	}
	acc = crc32_iscsi(b, (int)len, acc);
	vector_upper_clear();
	return acc;
}

uint32_t mpa_crc32c(const void *p, size_t len)
{
	return mpa_crc32c_final(mpa_crc32c_update(mpa_crc32c_init(), p, len));
}
