// SPDX-License-Identifier: MIT
/*
 * mpa-demo: frames a message into MPA FPDUs with markers and CRC32c, prints
 * the wire octets with each field named, then feeds them back through the
 * de-framer in small pieces and checks that the message comes out whole.
 *
 *   mpa-demo [MESSAGE]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/error.h"
#include "mpa/mpa.h"

#define DEMO_MULPDU 128	  /* small, so a long message spans several FPDUs */
#define DEMO_START_OFF 500 /* stream offset: the first marker falls inside */

struct sink {
	uint8_t buf[4096];
	size_t len;
	unsigned int ulpdus;
};

static int on_begin(void *arg, uint16_t len)
{
	(void)arg;
	printf("  de-framer: ULPDU of %u octets begins\n", len);
	return 0;
}

static int on_data(void *arg, const uint8_t *p, size_t len)
{
	struct sink *s = arg;

	if (s->len + len > sizeof(s->buf))
		return -1;
	memcpy(s->buf + s->len, p, len);
	s->len += len;
	return 0;
}

static int on_end(void *arg)
{
	struct sink *s = arg;

	s->ulpdus++;
	printf("  de-framer: ULPDU complete, CRC good\n");
	return 0;
}

static const char *piece_name(const struct mpa_tx_frame *f, const void *base)
{
	const uint8_t *p = base;

	if (p == f->hdr)
		return "ULPDU_LENGTH";
	if (p == f->pad)
		return "PAD";
	if (p == f->crc)
		return "CRC32c";
	if (p >= f->markers[0] && p < f->markers[MPA_TX_MAX_MARKERS])
		return "MARKER";
	return "ULPDU";
}

static void hexdump(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		printf("%s%02x", i % 16 ? " " : (i ? "\n      " : ""), p[i]);
	printf("\n");
}

int main(int argc, char **argv)
{
	const char *msg = argc > 1 ? argv[1] :
		"RDMA over plain TCP: this message is framed by MPA (RFC 5044) "
		"with a marker every 512 octets of the stream and a CRC32c "
		"trailer on every FPDU, then de-framed again. "
		"Markers let a receiver find FPDU boundaries in a stream "
		"that arrives out of order; the CRC catches what the TCP "
		"checksum misses. Long messages span several FPDUs.";
	static const struct mpa_rx_ops ops = { on_begin, on_data, on_end };
	static uint8_t wire[8192];
	struct mpa_tx tx;
	struct mpa_rx rx;
	struct sink sink = { .len = 0 };
	size_t msg_len = strlen(msg), done = 0, wire_len = 0;
	int rc;

	if (msg_len > sizeof(sink.buf)) {
		fprintf(stderr, "mpa-demo: message longer than %zu octets\n",
			sizeof(sink.buf));
		return 1;
	}
	mpa_tx_init(&tx, DEMO_MULPDU, true, true);
	mpa_rx_init(&rx, &ops, &sink, DEMO_MULPDU, true, true);
	/* pretend earlier FPDUs moved the stream on, so markers fall mid-FPDU */
	tx.off = rx.off = DEMO_START_OFF;

	printf("message: %zu octets, MULPDU %u, markers on, CRC on\n\n",
	       msg_len, DEMO_MULPDU);
	while (done < msg_len) {
		struct iovec in = { (void *)(msg + done), msg_len - done };
		struct iovec out[64];
		struct mpa_tx_frame f;
		uint64_t start = tx.off;
		int n;

		if (in.iov_len > tx.mulpdu)
			in.iov_len = tx.mulpdu;
		n = mpa_tx_fpdu(&tx, &in, 1, &f, out, 64);
		if (n < 0) {
			fprintf(stderr, "mpa-demo: framing failed: %s\n",
				iw_strerror(n));
			return 1;
		}
		printf("FPDU at stream offset %llu: %zu ULPDU octets, %u marker(s)\n",
		       (unsigned long long)start, in.iov_len, f.n_markers);
		for (int i = 0; i < n; i++) {
			printf("  %-12s %4zu octets", piece_name(&f, out[i].iov_base),
			       out[i].iov_len);
			if (out[i].iov_len <= 8 || i == 0)
				printf(": ");
			else
				printf(", first 8: ");
			hexdump(out[i].iov_base,
				out[i].iov_len < 8 ? out[i].iov_len : 8);
			memcpy(wire + wire_len, out[i].iov_base, out[i].iov_len);
			wire_len += out[i].iov_len;
		}
		done += in.iov_len;
	}

	printf("\nde-framing %zu wire octets, 7 at a time:\n", wire_len);
	for (size_t i = 0; i < wire_len; i += 7) {
		size_t n = wire_len - i < 7 ? wire_len - i : 7;

		rc = mpa_rx_feed(&rx, wire + i, n);
		if (rc) {
			fprintf(stderr, "mpa-demo: de-framing failed: %s\n",
				iw_strerror(rc));
			return 1;
		}
	}
	if (sink.len != msg_len || memcmp(sink.buf, msg, msg_len) != 0) {
		fprintf(stderr, "mpa-demo: message differs after the round trip\n");
		return 1;
	}
	printf("\nround trip OK: %u FPDUs, %zu message octets in %zu wire octets\n",
	       sink.ulpdus, msg_len, wire_len);
	return 0;
}
