/* SPDX-License-Identifier: MIT */
#ifndef IW_FUZZ_RAND_H
#define IW_FUZZ_RAND_H

#include <stdint.h>

/* Restarts the STag key sequence (see fz_rand.c). */
void fz_rand_reset(uint64_t seed);

#endif /* IW_FUZZ_RAND_H */
