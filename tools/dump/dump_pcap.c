// SPDX-License-Identifier: MIT
/*
 * Capture input: pcap and pcapng through libpcap, the link layers a
 * capture of iWARP traffic comes in (Ethernet, Linux cooked v1 and v2, raw
 * IP, BSD loopback), IPv4 and IPv6, down to each TCP segment's payload.
 * Every record counts as a frame, numbered from 1 as tshark does.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#include "lib/byteorder.h"
#include "dump.h"

#ifndef DLT_LINUX_SLL2
#define DLT_LINUX_SLL2 276
#endif

#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86dd
#define ETHERTYPE_VLAN 0x8100
#define ETHERTYPE_QINQ 0x88a8

#define ETH_HDR_LEN 14
#define SLL_HDR_LEN 16
#define SLL_OFF_PROTO 14
#define SLL2_HDR_LEN 20
#define SLL2_OFF_PROTO 0
#define NULL_HDR_LEN 4
#define VLAN_TAG_LEN 4

#define IPPROTO_TCP_NUM 6
#define IPV4_MIN_HDR 20
#define IPV6_HDR_LEN 40
#define TCP_MIN_HDR 20

/* One record's way down to TCP. */
struct pkt {
	const uint8_t *p;
	uint32_t len; /* octets captured */
	uint32_t frame;
};

/* The address families BSD loopback headers use for IPv6. */
static bool null_af_is_ipv6(uint32_t af)
{
	return af == 10 || af == 24 || af == 28 || af == 30;
}

static int tcp_segment(struct dump *d, int family, const uint8_t *src,
		       const uint8_t *dst, const uint8_t *p, uint32_t len,
		       uint32_t frame)
{
	uint32_t doff;

	if (len < TCP_MIN_HDR)
		return 0;
	doff = (uint32_t)(p[12] >> 4) * 4;
	if (doff < TCP_MIN_HDR || doff > len)
		return 0;
	return dump_tcp_segment(d, family, src, dst, get_be16(p),
				get_be16(p + 2), get_be32(p + 4),
				p[13] & (DUMP_TCP_FIN | DUMP_TCP_SYN |
					 DUMP_TCP_RST | DUMP_TCP_ACK),
				p + doff, len - doff, frame);
}

/* RFC 791: header length, total length (drops link padding), fragments. */
static int ipv4(struct dump *d, const uint8_t *p, uint32_t len, uint32_t frame)
{
	uint32_t ihl, total;
	uint16_t frag;

	if (len < IPV4_MIN_HDR || p[0] >> 4 != 4)
		return 0;
	ihl = (uint32_t)(p[0] & 0x0f) * 4;
	total = get_be16(p + 2);
	if (ihl < IPV4_MIN_HDR || total < ihl)
		return 0;
	if (p[9] != IPPROTO_TCP_NUM)
		return 0;
	frag = get_be16(p + 6);
	if (frag & 0x3fff) {
		dump_notice(d, frame, 0, "IPv4 fragment not reassembled");
		return 0;
	}
	if (total < len)
		len = total;
	if (len < ihl)
		return 0;
	return tcp_segment(d, AF_INET, p + 12, p + 16, p + ihl, len - ihl,
			   frame);
}

/* RFC 8200: the fixed header, then extension headers up to TCP. */
static int ipv6(struct dump *d, const uint8_t *p, uint32_t len, uint32_t frame)
{
	uint32_t off = IPV6_HDR_LEN, plen;
	uint8_t next;

	if (len < IPV6_HDR_LEN || p[0] >> 4 != 6)
		return 0;
	plen = get_be16(p + 4);
	if (IPV6_HDR_LEN + plen < len)
		len = IPV6_HDR_LEN + plen;
	next = p[6];
	while (next != IPPROTO_TCP_NUM) {
		uint32_t ext;

		if (off + 8 > len)
			return 0;
		switch (next) {
		case 0:	 /* hop-by-hop */
		case 43: /* routing */
		case 60: /* destination options */
			ext = ((uint32_t)p[off + 1] + 1) * 8;
			break;
		case 51: /* authentication */
			ext = ((uint32_t)p[off + 1] + 2) * 4;
			break;
		case 44: /* fragment */
			dump_notice(d, frame, 0, "IPv6 fragment not reassembled");
			return 0;
		default:
			return 0;
		}
		next = p[off];
		off += ext;
	}
	if (off > len)
		return 0;
	return tcp_segment(d, AF_INET6, p + 8, p + 24, p + off, len - off,
			   frame);
}

static int by_ethertype(struct dump *d, uint16_t type, const uint8_t *p,
			uint32_t len, uint32_t frame)
{
	if (type == ETHERTYPE_IPV4)
		return ipv4(d, p, len, frame);
	if (type == ETHERTYPE_IPV6)
		return ipv6(d, p, len, frame);
	return 0;
}

static int by_ip_version(struct dump *d, const uint8_t *p, uint32_t len,
			 uint32_t frame)
{
	if (len < 1)
		return 0;
	if (p[0] >> 4 == 4)
		return ipv4(d, p, len, frame);
	if (p[0] >> 4 == 6)
		return ipv6(d, p, len, frame);
	return 0;
}

static int ethernet(struct dump *d, const struct pkt *k)
{
	uint32_t off = ETH_HDR_LEN;
	uint16_t type;

	if (k->len < ETH_HDR_LEN)
		return 0;
	type = get_be16(k->p + 12);
	while ((type == ETHERTYPE_VLAN || type == ETHERTYPE_QINQ) &&
	       off + VLAN_TAG_LEN <= k->len) {
		type = get_be16(k->p + off + 2);
		off += VLAN_TAG_LEN;
	}
	return by_ethertype(d, type, k->p + off, k->len - off, k->frame);
}

/* The 4-octet address family, in whichever byte order the writer used. */
static int bsd_null(struct dump *d, const struct pkt *k)
{
	uint32_t be, le;

	if (k->len < NULL_HDR_LEN)
		return 0;
	be = get_be32(k->p);
	le = (uint32_t)k->p[3] << 24 | (uint32_t)k->p[2] << 16 |
	     (uint32_t)k->p[1] << 8 | k->p[0];
	if (be == AF_INET || le == AF_INET)
		return ipv4(d, k->p + NULL_HDR_LEN, k->len - NULL_HDR_LEN,
			    k->frame);
	if (null_af_is_ipv6(be) || null_af_is_ipv6(le))
		return ipv6(d, k->p + NULL_HDR_LEN, k->len - NULL_HDR_LEN,
			    k->frame);
	return 0;
}

static int link_layer(struct dump *d, int dlt, const struct pkt *k)
{
	switch (dlt) {
	case DLT_EN10MB:
		return ethernet(d, k);
	case DLT_LINUX_SLL:
		if (k->len < SLL_HDR_LEN)
			return 0;
		return by_ethertype(d, get_be16(k->p + SLL_OFF_PROTO),
				    k->p + SLL_HDR_LEN, k->len - SLL_HDR_LEN,
				    k->frame);
	case DLT_LINUX_SLL2:
		if (k->len < SLL2_HDR_LEN)
			return 0;
		return by_ethertype(d, get_be16(k->p + SLL2_OFF_PROTO),
				    k->p + SLL2_HDR_LEN, k->len - SLL2_HDR_LEN,
				    k->frame);
	case DLT_NULL:
	case DLT_LOOP:
		return bsd_null(d, k);
	default: /* DLT_RAW, DLT_IPV4, DLT_IPV6 */
		return by_ip_version(d, k->p, k->len, k->frame);
	}
}

static bool link_known(int dlt)
{
	return dlt == DLT_EN10MB || dlt == DLT_LINUX_SLL ||
	       dlt == DLT_LINUX_SLL2 || dlt == DLT_NULL || dlt == DLT_LOOP ||
	       dlt == DLT_RAW || dlt == DLT_IPV4 || dlt == DLT_IPV6;
}

static int keep_time(struct dump *d, const struct timeval *tv)
{
	if (d->n_frames == d->cap_frames) {
		uint32_t cap = d->cap_frames ? d->cap_frames * 2 : 1024;
		struct timeval *ts = realloc(d->ts, cap * sizeof(*ts));

		if (!ts)
			return -ENOMEM;
		d->ts = ts;
		d->cap_frames = cap;
	}
	d->ts[d->n_frames++] = *tv;
	return 0;
}

/* Reads every record of an open capture; closes it. */
static int read_records(struct dump *d, pcap_t *pc, const char *name)
{
	struct pcap_pkthdr *h;
	const u_char *data;
	int dlt, rc;

	dlt = pcap_datalink(pc);
	if (!link_known(dlt)) {
		fprintf(stderr, "iwarp-dump: %s: link type %s is not one iwarp-dump reads\n",
			name, pcap_datalink_val_to_name(dlt) ?
				      pcap_datalink_val_to_name(dlt) : "unknown");
		pcap_close(pc);
		return -1;
	}
	while ((rc = pcap_next_ex(pc, &h, &data)) == 1) {
		struct pkt k = { data, h->caplen, d->n_frames + 1 };

		if (keep_time(d, &h->ts) || link_layer(d, dlt, &k)) {
			fprintf(stderr, "iwarp-dump: out of memory\n");
			pcap_close(pc);
			return -1;
		}
	}
	if (rc == PCAP_ERROR) {
		/* a cut-off last record still leaves the rest to decode */
		dump_notice(d, d->n_frames + 1, 0, "capture ends early: %s",
			    pcap_geterr(pc));
	}
	pcap_close(pc);
	return 0;
}

/*
 * Reads every record of @path into connections.  Returns 0, or -1 after
 * saying on stderr why the file cannot be read.
 */
int dump_read_pcap(struct dump *d, const char *path)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *pc = pcap_open_offline(path, err);

	if (!pc) {
		fprintf(stderr, "iwarp-dump: %s\n", err);
		return -1;
	}
	return read_records(d, pc, path);
}

/* The same from an open file, which is closed in any case. */
int dump_read_pcap_stream(struct dump *d, FILE *f, const char *name)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *pc = pcap_fopen_offline(f, err);

	if (!pc) {
		fclose(f);
		fprintf(stderr, "iwarp-dump: %s: %s\n", name, err);
		return -1;
	}
	return read_records(d, pc, name);
}
