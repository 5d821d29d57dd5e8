// SPDX-License-Identifier: MIT
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "testutil.h"

uint8_t *fixture_load(const char *name, size_t *len)
{
	char path[4096];
	uint8_t *buf;
	long size;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", TEST_DATA_DIR, name);
	f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "fixture %s missing", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	size = ftell(f);
	ck_assert_int_ge(size, 0);
	rewind(f);
	buf = malloc((size_t)size + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	*len = (size_t)size;
	return buf;
}

void rng_seed(struct rng *r, const char *what, uint64_t fixed)
{
	const char *env = getenv("IWARP_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : fixed;

	printf("%s: seed %#" PRIx64 " (replay with IWARP_TEST_SEED)\n", what,
	       seed);
	r->s = seed ? seed : 1;
}

uint64_t rng_next(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dull;
}

uint64_t rng_range(struct rng *r, uint64_t lo, uint64_t hi)
{
	return lo + rng_next(r) % (hi - lo + 1);
}

void rng_fill(struct rng *r, uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(rng_next(r) >> 56);
}

uint32_t ref_crc32c(const uint8_t *p, size_t len)
{
	uint32_t crc = 0xffffffffu;

	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (int b = 0; b < 8; b++)
			crc = (crc >> 1) ^ (0x82f63b78u & -(crc & 1));
	}
	return ~crc;
}

int run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

int tcp_socket_of(const struct sockaddr *local)
{
	const struct sockaddr_in *want = (const void *)local;

	for (int fd = 3; fd < 4096; fd++) {
		struct sockaddr_in a;
		socklen_t l = sizeof(a);
		int type = 0, listening = 0;
		socklen_t tl = sizeof(type), ll = sizeof(listening);

		if (getsockname(fd, (struct sockaddr *)&a, &l) == 0 &&
		    a.sin_family == AF_INET && a.sin_port == want->sin_port &&
		    a.sin_addr.s_addr == want->sin_addr.s_addr &&
		    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 &&
		    type == SOCK_STREAM &&
		    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening,
			       &ll) == 0 &&
		    !listening)
			return fd;
	}
	return -1;
}

int int_sockopt(int fd, int level, int name)
{
	int v = -1;
	socklen_t l = sizeof(v);

	ck_assert_int_eq(getsockopt(fd, level, name, &v, &l), 0);
	return v;
}

void *late_reader_run(void *arg)
{
	static uint8_t buf[65536];
	struct late_reader *r = arg;
	ssize_t n;

	usleep(100 * 1000);
	if (write(r->fd, "late", 4) != 4)
		r->end = errno;
	while ((n = read(r->fd, buf, sizeof(buf))) > 0)
		r->got += (size_t)n;
	if (!r->end)
		r->end = n ? errno : 0;
	return NULL;
}
