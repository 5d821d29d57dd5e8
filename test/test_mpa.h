/* SPDX-License-Identifier: MIT */
/* Helpers shared by the MPA test files. */
#ifndef IW_TEST_MPA_H
#define IW_TEST_MPA_H

#include <check.h>
#include <stdbool.h>

#include "mpa/mpa.h"
#include "testutil.h"

/* Records what a de-framer delivers. */
struct rx_log {
	uint8_t *data; /* all ULPDU octets, in order */
	size_t len, cap;
	uint16_t *lens; /* announced length of each ULPDU */
	uint32_t begins, ends;
	size_t cur; /* octets of the open ULPDU */
	bool open;
	int fail_data; /* returned by the data callback */
};

extern const struct mpa_rx_ops rx_log_ops;

void rx_log_init(struct rx_log *l, size_t cap);
void rx_log_free(struct rx_log *l);
size_t frame_into(struct mpa_tx *tx, const uint8_t *ulpdu, size_t len,
		  uint8_t *w);
int feed_cut(struct mpa_rx *rx, struct rx_log *l, struct rng *r,
	     const uint8_t *w, size_t len, size_t max_cut, bool direct);

Suite *mpa_framing_suite(void);
Suite *mpa_frames_suite(void);
Suite *mpa_scan_suite(void);

#endif /* IW_TEST_MPA_H */
