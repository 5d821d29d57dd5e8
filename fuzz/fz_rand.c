// SPDX-License-Identifier: MIT
/*
 * STag keys for the fuzz targets.  The library draws them from OpenSSL's
 * RAND_bytes(); a target that registers memory links this definition
 * instead, so that the keys, and with them what an input does, come out
 * the same on every run of that input.
 */
#include <openssl/rand.h>

#include "fuzz.h"
#include "fz_rand.h"

static struct fz_rng keys;

void fz_rand_reset(uint64_t seed)
{
	keys.s = seed;
}

int RAND_bytes(unsigned char *buf, int num)
{
	for (int i = 0; i < num; i++)
		buf[i] = (unsigned char)fz_next(&keys);
	return 1;
}
