// SPDX-License-Identifier: MIT
/*
 * mpa_wire_trace PCAP [--corrupt] [--corrupt-marker] [--bad-msn]
 *                     [--reorder] [--retrans-differs] [--gap]
 *                     [--no-handshake] [--p2p-rtr] [--wrong-rtr]
 *                     [--terminate] [--too-long]
 *
 * Writes a synthetic capture of two MPA connections framed by mpa/ with
 * markers and CRC on in both directions: an IPv4 one in revision 2
 * (RFC 6581) and an IPv6 one in revision 1.  Each FPDU goes in its own TCP
 * segment, and its ULPDU is a one-segment DDP Send.  On stdout, one line
 * per FPDU: "STREAM SEQ FPDUPTRS" (absolute TCP sequence number, the
 * FPDUPTR of each marker in it, comma separated, or "-"), then a summary
 * "fpdus N markers M lead L padcrc P".  Each option seeds one fault, and
 * says where on a line "seeded KIND STREAM SEQ ..." before the summary:
 *   --corrupt         flips a payload bit after the CRC was computed
 *                     ("seeded crc STREAM SEQ WIRE_CRC")
 *   --corrupt-marker  moves one FPDUPTR 4 octets too far back, the CRC
 *                     made to match ("seeded marker STREAM SEQ OFFSET
 *                     WANT GOT", OFFSET counted from the first FPDU)
 *   --bad-msn         gives one Send an MSN 5 too high, the MSNs after it
 *                     as before ("seeded msn STREAM SEQ GOT EXPECTED")
 * and these shake the TCP layer instead:
 *   --reorder         sends each FPDU as three segments: the middle one
 *                     first, then the first one twice, then the last one
 *                     overlapping the middle by two octets
 *   --retrans-differs as --reorder, but one retransmitted copy differs
 *                     from the first in one octet ("seeded retrans STREAM
 *                     SEQ"; the first copy is the one that counts)
 *   --gap             leaves out one FPDU's segment ("seeded gap STREAM
 *                     SEQ")
 *   --no-handshake    no SYN and no MPA frames: FPDUs from the first octet
 *   --too-long        gives one FPDU ULPDU_LENGTH 0xffff, more than any
 *                     FPDUPTR can reach across, so framing is lost there
 *                     ("seeded toolong STREAM SEQ OFFSET", OFFSET counted
 *                     from the first FPDU)
 * and these add RDMAP messages:
 *   --p2p-rtr         the revision 2 connection negotiates peer-to-peer
 *                     with a Write RTR, and the initiator opens with it
 *   --wrong-rtr       as --p2p-rtr, but the initiator opens with a
 *                     zero-length Send ("seeded rtr STREAM SEQ")
 *   --terminate       each responder ends with a Terminate for a DDP
 *                     MSN error: the revision 2 connection's in the RFC
 *                     layout with the terminated DDP header, the other's
 *                     in Linux siw's byte-swapped layout ("seeded
 *                     terminate STREAM SEQ")
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

#include "ddp/ddp_wire.h"
#include "lib/byteorder.h"
#include "lib/pcap_writer.h"
#include "mpa/mpa.h"

#define EMSS 1460
#define FPDUS_PER_SIDE 300

struct side {
	struct mpa_tx tx;
	uint32_t msn;
};

struct counts {
	unsigned int fpdus, markers, lead, padcrc;
};

static struct pcapw pw;
static struct counts total;
static bool corrupt, corrupt_marker, bad_msn;
static bool reorder, retrans_differs, gap, no_handshake, too_long;
static bool p2p_rtr, wrong_rtr, terminate;
#define N_SEEDED 8
static char seeded[N_SEEDED][160]; /* printed before the summary */

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
	uint8_t f_markers[MPA_TX_MAX_MARKERS][MPA_MARKER_LEN];
	struct mpa_tx_frame f = { .markers = f_markers };
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

static bool is_marker(const struct mpa_tx_frame *f, const void *p)
{
	for (unsigned int m = 0; m < f->n_markers; m++)
		if (p == f->markers[m])
			return true;
	return false;
}

/*
 * --corrupt-marker: the first marker inside the FPDU (not one before its
 * header) points 4 octets further back; the CRC is taken again over the
 * changed octets, so the marker is the only fault.
 */
static bool misplace_marker(struct mpa_tx_frame *f, const struct iovec *out,
			    int n, uint64_t start, char *note, size_t cap,
			    int stream, uint32_t seq)
{
	uint64_t off = start;
	uint32_t acc = mpa_crc32c_init();
	bool done = false;

	for (int i = 0; i < n - 1; i++) {
		uint8_t *p = out[i].iov_base;

		if (!done && i > 0 && is_marker(f, p)) {
			uint16_t want = get_be16(p + 2);

			put_be16(p + 2, (uint16_t)(want + 4));
			snprintf(note, cap, "seeded marker %d %u %llu %u %u",
				 stream, seq, (unsigned long long)off, want,
				 want + 4);
			done = true;
		}
		acc = mpa_crc32c_update(acc, p, out[i].iov_len);
		off += out[i].iov_len;
	}
	if (done)
		put_le32(f->crc, mpa_crc32c_final(acc));
	return done;
}

/* Writes octets @from..@to of @b as one segment starting at that offset. */
static int put_piece(struct pcapw_flow *fl, int dir, uint32_t seq0,
		     uint8_t *b, size_t from, size_t to,
		     const struct timeval *ts)
{
	struct iovec iov = { b + from, to - from };

	fl->next_seq[dir] = seq0 + (uint32_t)from;
	return pcapw_data(&pw, fl, dir, &iov, 1, ts);
}

/*
 * --reorder: out of order, a retransmission and an overlap, none of which
 * may change what the receiver reassembles (@differ: but one copy lies).
 */
static int send_reordered(struct pcapw_flow *fl, int dir,
			  const struct iovec *out, int n, bool differ,
			  const struct timeval *ts)
{
	static uint8_t b[2 * EMSS];
	uint32_t seq0 = fl->next_seq[dir];
	size_t len = 0, a, c;
	int rc;

	for (int i = 0; i < n; i++) {
		memcpy(b + len, out[i].iov_base, out[i].iov_len);
		len += out[i].iov_len;
	}
	a = len / 3;
	c = 2 * len / 3;
	rc = put_piece(fl, dir, seq0, b, a, c, ts);
	if (!rc)
		rc = put_piece(fl, dir, seq0, b, 0, a, ts);
	if (!rc && differ) {
		b[a - 1] ^= 0x20;
		rc = put_piece(fl, dir, seq0, b, 0, a, ts);
		b[a - 1] ^= 0x20;
	} else if (!rc) {
		rc = put_piece(fl, dir, seq0, b, 0, a, ts);
	}
	if (!rc)
		rc = put_piece(fl, dir, seq0, b, c - 2, len, ts);
	fl->next_seq[dir] = seq0 + (uint32_t)len;
	return rc;
}

static int send_fpdu(struct pcapw_flow *fl, int dir, struct side *s,
		     int stream, unsigned int k, const struct timeval *ts)
{
	static uint8_t ulpdu[EMSS];
	uint32_t msn = ++s->msn;
	bool wrong_msn = bad_msn && stream == 0 && dir == 1 && k == 9;
	size_t len = build_send(ulpdu, pick_len(s, k), wrong_msn ? msn + 5 : msn);
	struct iovec in = { ulpdu, len }, out[64];
	uint8_t f_markers[MPA_TX_MAX_MARKERS][MPA_MARKER_LEN];
	struct mpa_tx_frame f = { .markers = f_markers };
	uint32_t seq = fl->next_seq[dir];
	uint64_t start = s->tx.off;
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
	if (corrupt && stream == 0 && dir == 0 && k == 7) {
		ulpdu[DDP_UNTAGGED_HDR_LEN] ^= 0x01; /* after the CRC was taken */
		snprintf(seeded[0], sizeof(seeded[0]), "seeded crc %d %u 0x%08x",
			 stream, seq, get_le32(f.crc));
	}
	if (corrupt_marker && stream == 1 && dir == 0 && k >= 20 &&
	    !seeded[1][0])
		misplace_marker(&f, out, n, start, seeded[1],
				sizeof(seeded[1]), stream, seq);
	if (wrong_msn)
		snprintf(seeded[2], sizeof(seeded[2]), "seeded msn %d %u %u %u",
			 stream, seq, msn + 5, msn);
	if (too_long && stream == 0 && dir == 0 && k == 30) {
		put_be16(f.hdr, 0xffff);
		snprintf(seeded[7], sizeof(seeded[7]), "seeded toolong %d %u %llu",
			 stream, seq, (unsigned long long)start);
	}
	if (gap && stream == 0 && dir == 0 && k == 50) {
		snprintf(seeded[3], sizeof(seeded[3]), "seeded gap %d %u",
			 stream, seq);
		for (int i = 0; i < n; i++)
			fl->next_seq[dir] += (uint32_t)out[i].iov_len;
		return 0;
	}
	if (reorder || retrans_differs) {
		bool differ = retrans_differs && stream == 1 && dir == 1 &&
			      k == 33;

		if (differ)
			snprintf(seeded[4], sizeof(seeded[4]),
				 "seeded retrans %d %u", stream, seq);
		return send_reordered(fl, dir, out, n, differ, ts);
	}
	return pcapw_data(&pw, fl, dir, out, n, ts);
}

/* Frames a ULPDU built here and sends it as one segment. */
static int send_built(struct pcapw_flow *fl, int dir, struct side *s,
		      uint8_t *u, size_t len, const struct timeval *ts)
{
	struct iovec in = { u, len }, out[64];
	uint8_t f_markers[MPA_TX_MAX_MARKERS][MPA_MARKER_LEN];
	struct mpa_tx_frame f = { .markers = f_markers };
	int n = mpa_tx_fpdu(&s->tx, &in, 1, &f, out, 64);

	return n < 0 ? n : pcapw_data(&pw, fl, dir, out, n, ts);
}

/*
 * RFC 6581: the peer-to-peer initiator's zero-length Write RTR (STag 1 as
 * Linux siw sends it), or with --wrong-rtr a zero-length Send instead.
 */
static int send_rtr(struct pcapw_flow *fl, struct side *s, int stream,
		    const struct timeval *ts)
{
	uint8_t u[DDP_UNTAGGED_HDR_LEN] = { 0xc1, 0x40 }; /* T, L, DV 1; Write */

	if (!wrong_rtr) {
		put_be32(u + 2, 1); /* STag; TO 0 */
		return send_built(fl, 0, s, u, 14, ts);
	}
	snprintf(seeded[5], sizeof(seeded[5]), "seeded rtr %d %u", stream,
		 fl->next_seq[0]);
	return send_built(fl, 0, s, u, build_send(u, DDP_UNTAGGED_HDR_LEN,
						  ++s->msn), ts);
}

/*
 * RFC 5040 section 4.8: a Terminate on QN 2 reporting an MSN out of range
 * (DDP, untagged buffer error, 0x03) for the peer's first Send, whose DDP
 * header it carries; with @siw the control word is byte-swapped, as Linux
 * siw writes it, saying a CRC error (LLP, MPA, 0x02).
 */
static int send_terminate(struct pcapw_flow *fl, struct side *s, int stream,
			  bool siw, const struct timeval *ts)
{
	uint8_t u[64], *t = u + DDP_UNTAGGED_HDR_LEN;
	size_t len = DDP_UNTAGGED_HDR_LEN + 4;

	memset(u, 0, sizeof(u));
	u[0] = 0x41;		   /* T 0, L, DV 1 */
	u[1] = 0x47;		   /* RV 1, Terminate */
	put_be32(u + 6, 2);	   /* QN 2 */
	put_be32(u + 10, 1);	   /* MSN 1 */
	if (siw) {
		t[0] = 0x02; /* etype 0 << 4 | layer 2 */
		t[1] = 0x02;
		snprintf(seeded[6], sizeof(seeded[6]), "seeded terminate %d %u",
			 stream, fl->next_seq[1]);
	} else {
		t[0] = 0x12; /* layer 1 << 4 | etype 2 */
		t[1] = 0x03;
		t[2] = 0xc0; /* M, D */
		put_be16(t + 4, DDP_UNTAGGED_HDR_LEN + 20);
		build_send(t + 6, DDP_UNTAGGED_HDR_LEN, 1);
		len += 2 + DDP_UNTAGGED_HDR_LEN;
	}
	return send_built(fl, 1, s, u, len, ts);
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
	bool p2p = (p2p_rtr || wrong_rtr) && rev == 2;
	struct mpa_frame req = { .rev = rev, .m = true, .c = true,
				 .h = rev == 2, .ird = 4, .ord = 4,
				 .p2p = p2p, .rtr = p2p ? MPA_RTR_WRITE : 0 };
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
	if (no_handshake) {
		rc = 0;
	} else {
		rc = pcapw_handshake(&pw, &fl, &ts);
		iov = (struct iovec){ rbuf, (size_t)rlen };
		if (!rc)
			rc = pcapw_data(&pw, &fl, 0, &iov, 1, &ts);
		iov = (struct iovec){ pbuf, (size_t)plen };
		if (!rc)
			rc = pcapw_data(&pw, &fl, 1, &iov, 1, &ts);
	}
	if (!rc && p2p)
		rc = send_rtr(&fl, &s[0], stream, &ts);
	for (unsigned int k = 0; !rc && k < 2 * FPDUS_PER_SIDE; k++) {
		ts.tv_usec = (suseconds_t)(k + 1) * 100;
		rc = send_fpdu(&fl, k % 2, &s[k % 2], stream, k / 2, &ts);
	}
	if (!rc && terminate)
		rc = send_terminate(&fl, &s[1], stream, rev != 2, &ts);
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
		fprintf(stderr, "usage: mpa_wire_trace PCAP [--corrupt] [--corrupt-marker] [--bad-msn] [--reorder] [--retrans-differs] [--gap] [--no-handshake] [--p2p-rtr] [--wrong-rtr] [--terminate] [--too-long]\n");
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--corrupt")) {
			corrupt = true;
		} else if (!strcmp(argv[i], "--corrupt-marker")) {
			corrupt_marker = true;
		} else if (!strcmp(argv[i], "--bad-msn")) {
			bad_msn = true;
		} else if (!strcmp(argv[i], "--reorder")) {
			reorder = true;
		} else if (!strcmp(argv[i], "--retrans-differs")) {
			retrans_differs = true;
		} else if (!strcmp(argv[i], "--too-long")) {
			too_long = true;
		} else if (!strcmp(argv[i], "--gap")) {
			gap = true;
		} else if (!strcmp(argv[i], "--no-handshake")) {
			no_handshake = true;
		} else if (!strcmp(argv[i], "--p2p-rtr")) {
			p2p_rtr = true;
		} else if (!strcmp(argv[i], "--wrong-rtr")) {
			wrong_rtr = true;
		} else if (!strcmp(argv[i], "--terminate")) {
			terminate = true;
		} else {
			fprintf(stderr, "mpa_wire_trace: unknown option %s\n",
				argv[i]);
			return 2;
		}
	}
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
	for (int i = 0; i < N_SEEDED; i++)
		if (seeded[i][0])
			printf("%s\n", seeded[i]);
	printf("fpdus %u markers %u lead %u padcrc %u\n", total.fpdus,
	       total.markers, total.lead, total.padcrc);
	return 0;
}
