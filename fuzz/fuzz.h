/* SPDX-License-Identifier: MIT */
/*
 * What the fuzz targets share: reading the fuzzer's input as fields, a
 * small seeded generator for cut points, and the check that ends the run
 * when an invariant breaks.
 *
 * Every target defines LLVMFuzzerTestOneInput().  Built with clang's
 * -fsanitize=fuzzer it runs under libFuzzer (fuzz_NAME); built with any
 * compiler and replay.c it replays inputs from files (replay_NAME, a
 * test in `make check`).
 */
#ifndef IW_FUZZ_H
#define IW_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * For the targets' own bookkeeping loops (comparing memory octet by
 * octet): the fuzzer learns nothing from them, and tracing their every
 * comparison would cost more than the code under test.
 */
#ifdef __clang__
#define FZ_NO_COVERAGE __attribute__((no_sanitize("coverage")))
#else
#define FZ_NO_COVERAGE
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* An invariant broke: say which and abort, so the fuzzer keeps the input. */
void fz_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));

#define fz_check(cond, ...)                                        \
	do {                                                       \
		if (!(cond))                                       \
			fz_fail(__FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

/*
 * The input, read front to back.  Past its end every field reads as zero
 * and every byte run as empty, so any input is a complete one.
 */
struct fz_in {
	const uint8_t *p;
	size_t len, pos;
};

static inline void fz_in_init(struct fz_in *in, const uint8_t *p, size_t len)
{
	in->p = p;
	in->len = len;
	in->pos = 0;
}

static inline size_t fz_left(const struct fz_in *in)
{
	return in->len - in->pos;
}

static inline uint8_t fz_u8(struct fz_in *in)
{
	return in->pos < in->len ? in->p[in->pos++] : 0;
}

static inline uint16_t fz_u16(struct fz_in *in)
{
	uint16_t hi = fz_u8(in);

	return (uint16_t)(hi << 8 | fz_u8(in));
}

static inline uint32_t fz_u32(struct fz_in *in)
{
	uint32_t hi = fz_u16(in);

	return hi << 16 | fz_u16(in);
}

static inline uint64_t fz_u64(struct fz_in *in)
{
	uint64_t hi = fz_u32(in);

	return hi << 32 | fz_u32(in);
}

/* Up to @want octets; *@got says how many there were. */
static inline const uint8_t *fz_bytes(struct fz_in *in, size_t want,
				      size_t *got)
{
	const uint8_t *p = in->p + in->pos;

	if (want > fz_left(in))
		want = fz_left(in);
	in->pos += want;
	*got = want;
	return p;
}

/* splitmix64: cut points and fill patterns, reproducible from one seed. */
struct fz_rng {
	uint64_t s;
};

static inline uint64_t fz_next(struct fz_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform enough in [lo, hi]. */
static inline uint64_t fz_range(struct fz_rng *r, uint64_t lo, uint64_t hi)
{
	return lo + fz_next(r) % (hi - lo + 1);
}

#endif /* IW_FUZZ_H */
