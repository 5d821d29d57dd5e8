// SPDX-License-Identifier: MIT
/* The ULPDUs of a byte stream (see ulpdus.h). */
#include <stdlib.h>
#include <string.h>

#include "mpa/mpa.h"
#include "testutil.h"
#include "ulpdus.h"

static int col_begin(void *arg, uint16_t len)
{
	struct ulpdus *u = arg;

	require(!u->open, "ULPDU begins inside another");
	require(u->n < ULPDUS_MAX, "too many ULPDUs");
	u->open = true;
	u->off[u->n] = u->len;
	u->ulen[u->n] = len;
	return 0;
}

static int col_data(void *arg, const uint8_t *p, size_t len)
{
	struct ulpdus *u = arg;

	require(u->open && u->len + len <= u->cap, "unexpected ULPDU octets");
	memcpy(u->data + u->len, p, len);
	u->len += len;
	return 0;
}

static int col_end(void *arg)
{
	struct ulpdus *u = arg;

	require(u->open, "ULPDU ends without beginning");
	require(u->len - u->off[u->n] == u->ulen[u->n],
		"ULPDU of %u octets delivered %zu", u->ulen[u->n],
		u->len - u->off[u->n]);
	u->open = false;
	u->n++;
	return 0;
}

static const struct mpa_rx_ops col_ops = { col_begin, col_data, col_end };

void ulpdus_deframe(struct ulpdus *u, const uint8_t *w, size_t len, bool crc,
		    bool markers)
{
	struct mpa_rx rx;

	memset(u, 0, sizeof(*u));
	u->cap = len ? len : 1;
	u->data = malloc(u->cap);
	ck_assert_ptr_nonnull(u->data);
	mpa_rx_init(&rx, &col_ops, u, 0xffff, markers, crc);
	ck_assert_int_eq(mpa_rx_feed(&rx, w, len), 0);
	ck_assert_int_eq(mpa_rx_eof(&rx), 0);
}

void ulpdus_free(struct ulpdus *u)
{
	free(u->data);
	u->data = NULL;
}
