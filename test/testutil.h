/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the check suites: fixture files, a seeded random
 * generator whose seed is printed (and can be replayed), and a bitwise
 * CRC32c written from the polynomial, independent of ISA-L.
 */
#ifndef IW_TESTUTIL_H
#define IW_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include <check.h>

/*
 * ck_assert() writes a mark point to check's log on every passing call;
 * require() reaches check only on failure, for assertions in hot loops.
 */
#define require(cond, ...)                          \
	do {                                        \
		if (!(cond))                        \
			ck_abort_msg(__VA_ARGS__);  \
	} while (0)

/* Reads test/data/@name whole; aborts the test when it is missing. */
uint8_t *fixture_load(const char *name, size_t *len);

/* xorshift64*: small, fast and reproducible. */
struct rng {
	uint64_t s;
};

/*
 * Seeds @r for the test @what: IWARP_TEST_SEED from the environment when
 * set, else @fixed.  The seed is printed so a failure can be replayed.
 */
void rng_seed(struct rng *r, const char *what, uint64_t fixed);
uint64_t rng_next(struct rng *r);
/* Uniform in [lo, hi]. */
uint64_t rng_range(struct rng *r, uint64_t lo, uint64_t hi);
void rng_fill(struct rng *r, uint8_t *p, size_t len);

/* CRC32c, reflected polynomial 0x82f63b78, one bit at a time. */
uint32_t ref_crc32c(const uint8_t *p, size_t len);

/* Runs @s and returns the process's exit status: 1 if a test failed. */
int run_suite(Suite *s);

struct sockaddr;
/*
 * The descriptor of this process's connected TCP socket bound to the
 * IPv4 address @local (a library's socket, looked for among the process's
 * descriptors), or -1.
 */
int tcp_socket_of(const struct sockaddr *local);
/* An int socket option of @fd; the test fails if it cannot be read. */
int int_sockopt(int fd, int level, int name);

/*
 * A peer slower than the library, on a plain TCP socket @fd: 100 ms after
 * late_reader_run() starts (in a thread of its own) it sends a few octets,
 * as a credit or an acknowledgement of its own would, then reads to the
 * end of the stream.  For closes that must still deliver what was sent.
 */
struct late_reader {
	int fd;
	size_t got; /* octets read before the stream ended */
	int end;    /* 0: a FIN ended it; else the errno */
};
void *late_reader_run(void *arg);

#endif /* IW_TESTUTIL_H */
