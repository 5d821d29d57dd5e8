/* SPDX-License-Identifier: MIT */
/*
 * The ULPDUs of a byte stream, collected as MPA's receiver hands them up:
 * what the suites that read an engine's wire back check their headers in.
 */
#ifndef IW_TEST_ULPDUS_H
#define IW_TEST_ULPDUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ULPDUS_MAX 4096

struct ulpdus {
	uint8_t *data;		/* every ULPDU's octets, end to end */
	size_t len, cap;
	size_t off[ULPDUS_MAX]; /* where each ULPDU starts in data */
	uint16_t ulen[ULPDUS_MAX];
	uint32_t n;
	bool open;
};

/*
 * De-frames @w, a whole stream that starts at an FPDU boundary, into @u;
 * any framing error, or a stream that ends inside an FPDU, fails the
 * test.  ulpdus_free() lets go of what it took.
 */
void ulpdus_deframe(struct ulpdus *u, const uint8_t *w, size_t len, bool crc,
		    bool markers);
void ulpdus_free(struct ulpdus *u);

static inline const uint8_t *ulpdu_at(const struct ulpdus *u, uint32_t i)
{
	return u->data + u->off[i];
}

#endif
