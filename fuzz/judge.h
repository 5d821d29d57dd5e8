/* SPDX-License-Identifier: MIT */
/*
 * What the library sends, judged as its peer would receive it: however
 * hostile the input, every FPDU must be framed right (markers, CRC), no
 * ULPDU may exceed the MULPDU, and each must hold a whole DDP header.
 * The stream may stop anywhere (a connection that ends).
 */
#ifndef IW_FUZZ_JUDGE_H
#define IW_FUZZ_JUDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpa/mpa.h"

struct judge {
	struct mpa_rx rx;
	bool on;
	uint16_t mulpdu;
	uint16_t len, have; /* the ULPDU under way */
	uint8_t ctrl;
	uint64_t fpdus;
};

void judge_init(struct judge *j, uint16_t mulpdu, bool markers, bool crc);
void judge_feed(struct judge *j, const uint8_t *p, size_t len);

#endif /* IW_FUZZ_JUDGE_H */
