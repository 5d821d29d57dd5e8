// SPDX-License-Identifier: MIT
/*
 * perftest's messages as they travel on its exchange connection, each the
 * payload of one Send (binary, no framing of its own):
 *
 *  version     16 octets: the version as text ("6.06"), NUL padded
 *  system data  4 octets, big-endian: the page size, then the cache line
 *              (both sides take the larger; only from version 5.32)
 *  MTU          2 octets from version 5.31 (4 before): the IB MTU enum as
 *              text, "3" and a NUL
 *  dest        56 octets: lid, out_reads, qpn, psn, rkey (4 each), 4 of
 *              padding, vaddr (8), gid (16), srqn, gid_index (4 each), all
 *              big-endian; a C struct copied whole, so the padding is
 *              whatever the sender had there
 *  report       8 octets a field: size, iterations (4 octets before 5.33),
 *              peak, average, message rate (doubles, byte-swapped as
 *              64-bit integers, so big-endian IEEE 754)
 *
 * And one on the data connection: in Send tests the receiver RDMA-Writes
 * the count of messages it has taken into the sender's credit word, a
 * 32-bit integer in the receiver's own byte order (little-endian on every
 * machine perftest runs on that we know of).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/byteorder.h"
#include "perf_pt.h"

void pt_dest_encode(const struct pt_dest *d, uint8_t *p)
{
	memset(p, 0, PT_DEST_LEN);
	put_be32(p, d->lid);
	put_be32(p + 4, d->out_reads);
	put_be32(p + 8, d->qpn);
	put_be32(p + 12, d->psn);
	put_be32(p + 16, d->rkey);
	put_be64(p + 24, d->vaddr);
	memcpy(p + 32, d->gid, sizeof(d->gid));
	put_be32(p + 48, d->srqn);
	put_be32(p + 52, d->gid_index);
}

void pt_dest_decode(const uint8_t *p, struct pt_dest *d)
{
	*d = (struct pt_dest){
		.lid = get_be32(p),
		.out_reads = get_be32(p + 4),
		.qpn = get_be32(p + 8),
		.psn = get_be32(p + 12),
		.rkey = get_be32(p + 16),
		.vaddr = get_be64(p + 24),
		.srqn = get_be32(p + 48),
		.gid_index = get_be32(p + 52),
	};
	memcpy(d->gid, p + 32, sizeof(d->gid));
}

void pt_version_encode(uint8_t *p)
{
	memset(p, 0, PT_VERSION_LEN);
	memcpy(p, PT_VERSION, sizeof(PT_VERSION) - 1);
}

/*
 * The peer's version, as perftest reads it (atof); @text gets it printable.
 * 0 when it is no number: perftest would then skip what versions after
 * 5.1 added, and so do we.
 */
double pt_version_decode(const uint8_t *p, char *text, size_t len)
{
	char v[PT_VERSION_LEN + 1];
	size_t i;

	memcpy(v, p, PT_VERSION_LEN);
	v[PT_VERSION_LEN] = 0;
	for (i = 0; v[i] && i + 1 < len; i++)
		text[i] = v[i] >= 0x20 && v[i] < 0x7f ? v[i] : '?';
	if (len)
		text[i] = 0;
	return strtod(v, NULL);
}

size_t pt_mtu_len(double rem_version)
{
	return rem_version >= 5.31 ? 2 : 4;
}

size_t pt_iters_len(double rem_version)
{
	return rem_version >= 5.33 ? 8 : 4;
}

bool pt_has_sys_data(double rem_version)
{
	return rem_version >= 5.32;
}

/* An unsigned field of @len octets (4 or 8), big-endian. */
void pt_u64_encode(uint64_t v, uint8_t *p, size_t len)
{
	if (len == 4)
		put_be32(p, (uint32_t)v);
	else
		put_be64(p, v);
}

uint64_t pt_u64_decode(const uint8_t *p, size_t len)
{
	return len == 4 ? get_be32(p) : get_be64(p);
}

void pt_double_encode(double v, uint8_t *p)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	put_be64(p, bits);
}

double pt_double_decode(const uint8_t *p)
{
	uint64_t bits = get_be64(p);
	double v;

	memcpy(&v, &bits, sizeof(v));
	return v;
}

/*
 * The credit word a peer writes while we send (see the top of this file):
 * one aligned 32-bit load.  Placement runs from the lowest octet up, so a
 * load in the middle of it reads less than the new count, never more.
 */
uint32_t pt_credit_load(const uint8_t *p)
{
	uint32_t v = __atomic_load_n((const uint32_t *)(const void *)p,
				     __ATOMIC_ACQUIRE);

	return get_le32((const uint8_t *)&v);
}
