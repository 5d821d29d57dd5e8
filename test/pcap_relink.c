// SPDX-License-Identifier: MIT
/*
 * pcap_relink IN OUT LINK
 *
 * Rewrites an Ethernet capture (as lib/pcap_writer makes them) with another
 * link layer, so iwarp-dump's readers of the other link types can be held
 * to the Ethernet result: LINK is sll (Linux cooked), sll2 (Linux cooked
 * v2), raw (bare IP), null (BSD loopback, host byte order) or vlan
 * (Ethernet with an 802.1Q tag).  Timestamps and IP packets stay as they
 * are.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#ifndef DLT_LINUX_SLL2
#define DLT_LINUX_SLL2 276
#endif

#define ETH_HDR_LEN 14
#define MAX_HDR 32
#define ETHERTYPE_IPV6 0x86dd
#define BSD_AF_INET 2
#define BSD_AF_INET6 24 /* what NetBSD and OpenBSD write */

enum link { SLL, SLL2, RAW, NUL, VLAN };

static const struct {
	const char *word;
	enum link link;
	int dlt;
} links[] = {
	{ "sll", SLL, DLT_LINUX_SLL },	{ "sll2", SLL2, DLT_LINUX_SLL2 },
	{ "raw", RAW, DLT_RAW },	{ "null", NUL, DLT_NULL },
	{ "vlan", VLAN, DLT_EN10MB },
};

/* The header for @link in front of an IP packet of @ethertype; its length. */
static size_t header(enum link link, const uint8_t *eth, uint8_t *h)
{
	uint16_t type = (uint16_t)(eth[12] << 8 | eth[13]);
	uint32_t af = type == ETHERTYPE_IPV6 ? BSD_AF_INET6 : BSD_AF_INET;

	memset(h, 0, MAX_HDR);
	switch (link) {
	case SLL: /* type, ARPHRD, address length, address, protocol */
		h[3] = 1;
		h[5] = 6;
		memcpy(h + 6, eth + 6, 6);
		memcpy(h + 14, eth + 12, 2);
		return 16;
	case SLL2: /* protocol, reserved, ifindex, ARPHRD, type, length, address */
		memcpy(h, eth + 12, 2);
		h[7] = 1;
		h[9] = 1;
		h[11] = 6;
		memcpy(h + 12, eth + 6, 6);
		return 20;
	case RAW:
		return 0;
	case NUL:
		memcpy(h, &af, sizeof(af));
		return 4;
	default: /* VLAN: addresses, tag 0x8100 VLAN 7, the ethertype */
		memcpy(h, eth, 12);
		h[12] = 0x81;
		h[14] = 0x00;
		h[15] = 7;
		memcpy(h + 16, eth + 12, 2);
		return 18;
	}
}

int main(int argc, char **argv)
{
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *ph;
	const u_char *data;
	pcap_dumper_t *out;
	pcap_t *in, *dead;
	size_t k;

	if (argc != 4) {
		fprintf(stderr, "usage: pcap_relink IN OUT sll|sll2|raw|null|vlan\n");
		return 2;
	}
	for (k = 0; k < sizeof(links) / sizeof(links[0]); k++)
		if (!strcmp(argv[3], links[k].word))
			break;
	if (k == sizeof(links) / sizeof(links[0])) {
		fprintf(stderr, "pcap_relink: unknown link type %s\n", argv[3]);
		return 2;
	}
	in = pcap_open_offline(argv[1], err);
	if (!in || pcap_datalink(in) != DLT_EN10MB) {
		fprintf(stderr, "pcap_relink: %s: %s\n", argv[1],
			in ? "not an Ethernet capture" : err);
		return 1;
	}
	dead = pcap_open_dead(links[k].dlt, 262144);
	out = dead ? pcap_dump_open(dead, argv[2]) : NULL;
	if (!out) {
		fprintf(stderr, "pcap_relink: %s: cannot write\n", argv[2]);
		return 1;
	}
	while (pcap_next_ex(in, &ph, &data) == 1) {
		static uint8_t buf[MAX_HDR + 262144];
		struct pcap_pkthdr oh = *ph;
		size_t hl;

		if (ph->caplen < ETH_HDR_LEN)
			continue;
		hl = header(links[k].link, data, buf);
		memcpy(buf + hl, data + ETH_HDR_LEN, ph->caplen - ETH_HDR_LEN);
		oh.caplen = (bpf_u_int32)(ph->caplen - ETH_HDR_LEN + hl);
		oh.len = (bpf_u_int32)(ph->len - ETH_HDR_LEN + hl);
		pcap_dump((u_char *)out, &oh, buf);
	}
	pcap_dump_close(out);
	pcap_close(dead);
	pcap_close(in);
	return 0;
}
