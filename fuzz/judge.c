// SPDX-License-Identifier: MIT
/* The library's own output, judged; see judge.h. */
#include "ddp/ddp.h"
#include "fuzz.h"
#include "judge.h"
#include "lib/error.h"

static int on_begin(void *arg, uint16_t len)
{
	struct judge *j = arg;

	fz_check(len <= j->mulpdu, "a ULPDU of %u octets sent, MULPDU %u",
		 len, j->mulpdu);
	j->len = len;
	j->have = 0;
	return 0;
}

static int on_data(void *arg, const uint8_t *p, size_t len)
{
	struct judge *j = arg;

	if (!j->have && len)
		j->ctrl = p[DDP_OFF_CTRL];
	j->have = (uint16_t)(j->have + len);
	return 0;
}

static int on_end(void *arg)
{
	struct judge *j = arg;

	fz_check(j->len >= ddp_hdr_len(j->ctrl & DDP_CTRL_T) &&
			 (j->ctrl & DDP_CTRL_DV) == DDP_VERSION,
		 "FPDU %llu sent: %u octets, DDP control 0x%02x",
		 (unsigned long long)j->fpdus, j->len, j->ctrl);
	j->fpdus++;
	return 0;
}

static const struct mpa_rx_ops judge_ops = { on_begin, on_data, on_end };

void judge_init(struct judge *j, uint16_t mulpdu, bool markers, bool crc)
{
	*j = (struct judge){ .on = true, .mulpdu = mulpdu };
	mpa_rx_init(&j->rx, &judge_ops, j, 0xffff, markers, crc);
}

void judge_feed(struct judge *j, const uint8_t *p, size_t len)
{
	int rc;

	if (!j->on || !len)
		return;
	rc = mpa_rx_feed(&j->rx, p, len);
	fz_check(rc == 0, "FPDU %llu sent is broken: %s",
		 (unsigned long long)j->fpdus, iw_strerror(rc));
}
