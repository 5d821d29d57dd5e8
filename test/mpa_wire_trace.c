// SPDX-License-Identifier: MIT
/*
 * mpa_wire_trace PCAP [--corrupt]
 *
 * Writes a synthetic capture of two MPA connections framed by mpa/ with
 * markers and CRC on in both directions: an IPv4 one in revision 2
 * (RFC 6581) and an IPv6 one in revision 1.  Each FPDU goes in its own TCP
 * segment, and its ULPDU is a one-segment DDP Send.  On stdout, one line
 * per FPDU: "STREAM SEQ FPDUPTRS" (absolute TCP sequence number, the
 * FPDUPTR of each marker in it, comma separated, or "-"), then a summary
 * "fpdus N markers M lead L padcrc P".  --corrupt flips one payload bit
 * of one FPDU after its CRC was computed.
 *
 * No FPDU ends exactly on a marker position except where a connection
 * starts: Wireshark 4.0 counts the markers of a segment up to and including
 * its end, so a segment followed by a leading marker (FPDUPTR 0, the next
 * FPDU's) is charged one marker too many and the dissection goes astray.
 * That case is covered by test_mpa instead.
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/byteorder.h"
#include "lib/pcap_writer.h"
#include "mpa/mpa.h"

#define EMSS 1460
#define FPDUS_PER_SIDE 300
#define DDP_UNTAGGED_HDR_LEN 18

struct side {
	struct mpa_tx tx;
	uint32_t msn;
};

struct counts {
	unsigned int fpdus, markers, lead, padcrc;
};

static struct pcapw pw;
static struct counts total;
static bool corrupt;

/* A one-segment DDP untagged Send (RFC 5041 4.3, RFC 5040 4.1). */
static size_t build_send(uint8_t *u, size_t len, uint32_t msn)
{
	memset(u, 0, DDP_UNTAGGED_HDR_LEN);
	u[0] = 0x41; /* T=0, L=1, DV=1 */
	u[1] = 0x43; /* RV=1, opcode Send */
	put_be32(u + 6, 0);    /* QN 0 */
	put_be32(u + 10, msn); /* MSN */
	put_be32(u + 14, 0);   /* MO */
	for (size_t i = DDP_UNTAGGED_HDR_LEN; i < len; i++)
		u[i] = (uint8_t)(i * 3 + msn);
	return len;
}

/* Where the markers of a framing fall: before the header, before the CRC. */
static void classify(const struct mpa_tx_frame *f, const struct iovec *out,
		     int n, bool *lead, bool *padcrc)
{
	*lead = out[0].iov_base == (void *)f->markers[0];
	*padcrc = n >= 3 && out[n - 3].iov_base == (void *)f->pad &&
		  out[n - 1].iov_base == (void *)f->crc &&
		  out[n - 2].iov_len == MPA_MARKER_LEN;
}

/* Frames @len octets on a copy of the sender, to see where markers fall. */
static int trial(const struct side *s, size_t len, bool *lead, bool *padcrc,
		 uint64_t *end)
{
	static uint8_t scratch[EMSS];
	struct iovec in = { scratch, len }, out[64];
	struct mpa_tx_frame f;
	struct mpa_tx t = s->tx;
	int n = mpa_tx_fpdu(&t, &in, 1, &f, out, 64);

	if (n > 0)
		classify(&f, out, n, lead, padcrc);
	*end = t.off;
	return n;
}

/*
 * Picks a ULPDU length: a sweep of lengths, and every fifth FPDU one that
 * puts a marker between PAD and CRC; never one that ends on a marker
 * position (see the top of this file).
 */
static size_t pick_len(const struct side *s, unsigned int k)
{
	size_t lo = DDP_UNTAGGED_HDR_LEN, hi = s->tx.mulpdu;
	size_t len = lo + (k * 97 + 13) % (hi - lo + 1);
	bool lead, padcrc;
	uint64_t end;

	if (k % 5 == 4) {
		for (size_t l = lo; l <= hi; l++) {
			if (trial(s, l, &lead, &padcrc, &end) > 0 && padcrc) {
				len = l;
				break;
			}
		}
	}
	while (trial(s, len, &lead, &padcrc, &end) > 0 &&
	       mpa_marker_gap(end) == 0)
		len = len < hi ? len + 1 : lo;
	return len;
}

static int send_fpdu(struct pcapw_flow *fl, int dir, struct side *s,
		     int stream, unsigned int k, const struct timeval *ts)
{
	static uint8_t ulpdu[EMSS];
	size_t len = build_send(ulpdu, pick_len(s, k), ++s->msn);
	struct iovec in = { ulpdu, len }, out[64];
	struct mpa_tx_frame f;
	uint32_t seq = fl->next_seq[dir];
	bool lead, padcrc;
	int n = mpa_tx_fpdu(&s->tx, &in, 1, &f, out, 64);

	if (n < 0) {
		fprintf(stderr, "mpa_wire_trace: framing failed (%d)\n", n);
		return n;
	}
	classify(&f, out, n, &lead, &padcrc);
	total.fpdus++;
	total.markers += f.n_markers;
	total.lead += lead;
	total.padcrc += padcrc;
	printf("%d %u ", stream, seq);
	for (unsigned int m = 0; m < f.n_markers; m++)
		printf("%s%u", m ? "," : "", get_be16(f.markers[m] + 2));
	printf("%s\n", f.n_markers ? "" : "-");
	if (corrupt && stream == 0 && dir == 0 && k == 7)
		ulpdu[DDP_UNTAGGED_HDR_LEN] ^= 0x01; /* after the CRC was taken */
	return pcapw_data(&pw, fl, dir, out, n, ts);
}

/*
 * One connection: TCP handshake, Request, Reply, FPDUs both ways, FIN.
 * The ISNs put each side's first FPDU on a 512-octet boundary of the
 * absolute sequence space as well, which is where Wireshark 4.0 looks for
 * a marker between PAD and CRC.
 */
static int connection(int stream, int family, const void *a, const void *b,
		      uint8_t rev)
{
	struct mpa_frame req = { .rev = rev, .m = true, .c = true,
				 .h = rev == 2, .ird = 4, .ord = 4 };
	struct mpa_frame rep = req;
	uint8_t rbuf[64], pbuf[64];
	ssize_t rlen, plen;
	struct side s[2];
	struct pcapw_flow fl;
	struct timeval ts = { 1700000000 + stream, 0 };
	struct iovec iov;
	int rc;

	rep.reply = true;
	rlen = mpa_frame_encode(&req, rbuf, sizeof(rbuf));
	plen = mpa_frame_encode(&rep, pbuf, sizeof(pbuf));
	if (rlen < 0 || plen < 0)
		return -1;
	/* SYN takes one sequence number, then the frame; FPDUs start aligned */
	pcapw_flow_init(&fl, family, a, (uint16_t)(41000 + stream), b, 5101,
			(uint32_t)(0x10000000u - 1 - (uint32_t)rlen),
			(uint32_t)(0x20000000u - 1 - (uint32_t)plen));
	for (int d = 0; d < 2; d++) {
		mpa_tx_init(&s[d].tx, mpa_mulpdu(EMSS, true), true, true);
		s[d].msn = 0;
	}
	rc = pcapw_handshake(&pw, &fl, &ts);
	iov = (struct iovec){ rbuf, (size_t)rlen };
	if (!rc)
		rc = pcapw_data(&pw, &fl, 0, &iov, 1, &ts);
	iov = (struct iovec){ pbuf, (size_t)plen };
	if (!rc)
		rc = pcapw_data(&pw, &fl, 1, &iov, 1, &ts);
	for (unsigned int k = 0; !rc && k < 2 * FPDUS_PER_SIDE; k++) {
		ts.tv_usec = (suseconds_t)(k + 1) * 100;
		rc = send_fpdu(&fl, k % 2, &s[k % 2], stream, k / 2, &ts);
	}
	if (!rc)
		rc = pcapw_fin(&pw, &fl, 0, &ts);
	if (!rc)
		rc = pcapw_fin(&pw, &fl, 1, &ts);
	return rc;
}

int main(int argc, char **argv)
{
	struct in_addr a4, b4;
	struct in6_addr a6, b6;
	int rc;

	if (argc < 2) {
		fprintf(stderr, "usage: mpa_wire_trace PCAP [--corrupt]\n");
		return 2;
	}
	corrupt = argc > 2 && strcmp(argv[2], "--corrupt") == 0;
	inet_pton(AF_INET, "192.0.2.1", &a4);
	inet_pton(AF_INET, "192.0.2.2", &b4);
	inet_pton(AF_INET6, "2001:db8::1", &a6);
	inet_pton(AF_INET6, "2001:db8::2", &b6);
	rc = pcapw_open(&pw, argv[1]);
	if (!rc)
		rc = connection(0, AF_INET, &a4, &b4, 2);
	if (!rc)
		rc = connection(1, AF_INET6, &a6, &b6, 1);
	if (!rc)
		rc = pcapw_close(&pw);
	if (rc) {
		fprintf(stderr, "mpa_wire_trace: writing %s failed (%d)\n",
			argv[1], rc);
		return 1;
	}
	printf("fpdus %u markers %u lead %u padcrc %u\n", total.fpdus,
	       total.markers, total.lead, total.padcrc);
	return 0;
}
