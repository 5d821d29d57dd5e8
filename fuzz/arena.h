/* SPDX-License-Identifier: MIT */
/*
 * Memory a peer may reach, laid out so that every stray write shows: each
 * region lives in a slot of its own between guard pages (PROT_NONE, so a
 * write past a slot faults at once), and every octet of a slot is filled
 * with a known pattern.  The target says which octets may change (a
 * region the peer may write, a posted receive, a Read sink); at the end
 * every other octet must still hold what it held.
 */
#ifndef IW_FUZZ_ARENA_H
#define IW_FUZZ_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ARENA_SLOTS 8
#define ARENA_SLOT_BYTES (2 * 4096)

/* Why an octet may change; a frozen region's octets go back to FIXED. */
enum arena_may {
	ARENA_FIXED,	/* must keep its value */
	ARENA_POSTED,	/* a posted receive or Read sink: for good */
	ARENA_REGION,	/* in a region the peer may write, while valid */
};

struct arena {
	uint8_t *map;
	size_t map_len;
	uint8_t *slot[ARENA_SLOTS];
	uint8_t fill[ARENA_SLOTS][ARENA_SLOT_BYTES];
	uint8_t expect[ARENA_SLOTS][ARENA_SLOT_BYTES];
	uint8_t may[ARENA_SLOTS][ARENA_SLOT_BYTES];
	uint8_t readable[ARENA_SLOTS][ARENA_SLOT_BYTES];
};

/* Maps the slots and their guard pages, once per process. */
void arena_init(struct arena *a);
/* Fills every slot as at the start; nothing may change, nothing be read. */
void arena_reset(struct arena *a);

/* Whether [p, p + len) lies in one slot (len 0: p is in a slot). */
bool arena_holds(const struct arena *a, const void *p, size_t len);

void arena_allow_write(struct arena *a, const void *p, size_t len,
		       enum arena_may why);
void arena_allow_read(struct arena *a, const void *p, size_t len);
void arena_forbid_read(struct arena *a, const void *p, size_t len);
/* A region the peer may no longer write: its octets stay as they are. */
void arena_freeze(struct arena *a, const void *p, size_t len);

/* Checks that the library may write (or send) [p, p + len) now. */
void arena_check_write(const struct arena *a, const void *p, size_t len);
void arena_check_read(const struct arena *a, const void *p, size_t len);
/* Checks every octet that may not change. */
void arena_check(const struct arena *a);

#endif /* IW_FUZZ_ARENA_H */
