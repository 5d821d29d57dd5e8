// SPDX-License-Identifier: MIT
/* Slots between guard pages; see arena.h. */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arena.h"
#include "fuzz.h"

void arena_init(struct arena *a)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t stride = ARENA_SLOT_BYTES + page;
	struct fz_rng r = { 0x5eed };

	fz_check(ARENA_SLOT_BYTES % page == 0, "page size %zu", page);
	a->map_len = page + ARENA_SLOTS * stride;
	a->map = mmap(NULL, a->map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		      -1, 0);
	fz_check(a->map != MAP_FAILED, "mmap of the arena failed");
	for (int i = 0; i < ARENA_SLOTS; i++) {
		a->slot[i] = a->map + page + (size_t)i * stride;
		fz_check(mprotect(a->slot[i], ARENA_SLOT_BYTES,
				  PROT_READ | PROT_WRITE) == 0,
			 "mprotect of slot %d failed", i);
		for (size_t k = 0; k < ARENA_SLOT_BYTES; k += 8) {
			uint64_t v = fz_next(&r);

			memcpy(a->fill[i] + k, &v, 8);
		}
	}
}

void arena_reset(struct arena *a)
{
	for (int i = 0; i < ARENA_SLOTS; i++)
		memcpy(a->slot[i], a->fill[i], ARENA_SLOT_BYTES);
	memcpy(a->expect, a->fill, sizeof(a->expect));
	memset(a->may, ARENA_FIXED, sizeof(a->may));
	memset(a->readable, 0, sizeof(a->readable));
}

FZ_NO_COVERAGE
static int slot_of(const struct arena *a, const void *p, size_t *off)
{
	const uint8_t *b = p;

	for (int i = 0; i < ARENA_SLOTS; i++) {
		if (b >= a->slot[i] && b < a->slot[i] + ARENA_SLOT_BYTES) {
			*off = (size_t)(b - a->slot[i]);
			return i;
		}
	}
	return -1;
}

bool arena_holds(const struct arena *a, const void *p, size_t len)
{
	size_t off;

	return slot_of(a, p, &off) >= 0 && len <= ARENA_SLOT_BYTES - off;
}

static uint8_t *range(struct arena *a, uint8_t (*map)[ARENA_SLOT_BYTES],
		      const void *p, size_t len)
{
	size_t off;
	int s = slot_of(a, p, &off);

	fz_check(s >= 0 && len <= ARENA_SLOT_BYTES - off,
		 "range of %zu octets outside the slots", len);
	return map[s] + off;
}

FZ_NO_COVERAGE
void arena_allow_write(struct arena *a, const void *p, size_t len,
		       enum arena_may why)
{
	uint8_t *m;

	if (!len)
		return;
	m = range(a, a->may, p, len);
	for (size_t i = 0; i < len; i++)
		if (m[i] != ARENA_POSTED)
			m[i] = (uint8_t)why;
}

void arena_allow_read(struct arena *a, const void *p, size_t len)
{
	if (len)
		memset(range(a, a->readable, p, len), 1, len);
}

void arena_forbid_read(struct arena *a, const void *p, size_t len)
{
	if (len)
		memset(range(a, a->readable, p, len), 0, len);
}

FZ_NO_COVERAGE
void arena_freeze(struct arena *a, const void *p, size_t len)
{
	uint8_t *m, *e;

	if (!len)
		return;
	m = range(a, a->may, p, len);
	e = range(a, a->expect, p, len);
	for (size_t i = 0; i < len; i++) {
		if (m[i] != ARENA_REGION)
			continue;
		m[i] = ARENA_FIXED;
		e[i] = ((const uint8_t *)p)[i];
	}
}

FZ_NO_COVERAGE
void arena_check_write(const struct arena *a, const void *p, size_t len)
{
	size_t off;
	int s;

	if (!len)
		return;
	s = slot_of(a, p, &off);
	fz_check(s >= 0 && len <= ARENA_SLOT_BYTES - off,
		 "a write of %zu octets outside every region", len);
	for (size_t i = 0; i < len; i++)
		fz_check(a->may[s][off + i] != ARENA_FIXED,
			 "a write to slot %d offset %zu, which nothing allows",
			 s, off + i);
}

FZ_NO_COVERAGE
void arena_check_read(const struct arena *a, const void *p, size_t len)
{
	size_t off;
	int s = slot_of(a, p, &off);

	if (s < 0 || !len)
		return; /* not the peer's memory: headers, inline data */
	fz_check(len <= ARENA_SLOT_BYTES - off,
		 "%zu octets sent from past slot %d", len, s);
	for (size_t i = 0; i < len; i++)
		fz_check(a->readable[s][off + i],
			 "slot %d offset %zu sent, which nothing allows", s,
			 off + i);
}

FZ_NO_COVERAGE
void arena_check(const struct arena *a)
{
	for (int s = 0; s < ARENA_SLOTS; s++) {
		/* most slots are as they were filled: no octet to look at */
		if (!memcmp(a->slot[s], a->expect[s], ARENA_SLOT_BYTES))
			continue;
		for (size_t i = 0; i < ARENA_SLOT_BYTES; i++)
			fz_check(a->may[s][i] != ARENA_FIXED ||
					 a->slot[s][i] == a->expect[s][i],
				 "slot %d offset %zu changed, which nothing allows",
				 s, i);
	}
}
