// SPDX-License-Identifier: MIT
/*
 * pcap writer (the classic libpcap file format, LINKTYPE_ETHERNET) for TCP
 * byte streams.  Headers are synthetic but consistent: IPv4 header
 * checksums and TCP checksums are computed, sequence and acknowledgement
 * numbers follow the octets written, so dissectors reassemble the streams.
 */
#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <string.h>

#include "lib/byteorder.h"
#include "lib/pcap_writer.h"

#define PCAP_MAGIC_USEC 0xa1b2c3d4u
#define PCAP_LINKTYPE_ETHERNET 1
#define PCAP_SNAPLEN 262144

#define ETH_HDR_LEN 14
#define IPV4_HDR_LEN 20
#define IPV6_HDR_LEN 40
#define TCP_HDR_LEN 20
#define TCP_SYN_OPT_LEN 4 /* MSS option on SYN and SYN/ACK */
#define MAX_HDR_LEN (ETH_HDR_LEN + IPV6_HDR_LEN + TCP_HDR_LEN + TCP_SYN_OPT_LEN)

#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_PSH 0x08
#define TCP_ACK 0x10

/* pcap headers are in the writer's byte order; readers detect it. */
static int write_host32(FILE *f, uint32_t v)
{
	return fwrite(&v, sizeof(v), 1, f) == 1 ? 0 : -EIO;
}

int pcapw_open(struct pcapw *w, const char *path)
{
	uint16_t version[2] = { 2, 4 };
	int rc;

	w->ip_id = 1;
	w->f = fopen(path, "wbe"); /* "e": not inherited across exec */
	if (!w->f)
		return -errno;
	rc = write_host32(w->f, PCAP_MAGIC_USEC);
	if (!rc && fwrite(version, sizeof(version), 1, w->f) != 1)
		rc = -EIO;
	if (!rc)
		rc = write_host32(w->f, 0); /* thiszone */
	if (!rc)
		rc = write_host32(w->f, 0); /* sigfigs */
	if (!rc)
		rc = write_host32(w->f, PCAP_SNAPLEN);
	if (!rc)
		rc = write_host32(w->f, PCAP_LINKTYPE_ETHERNET);
	if (rc) {
		fclose(w->f);
		w->f = NULL;
	}
	return rc;
}

int pcapw_close(struct pcapw *w)
{
	int rc = 0;

	if (w->f && fclose(w->f) != 0)
		rc = -errno;
	w->f = NULL;
	return rc;
}

void pcapw_flow_init(struct pcapw_flow *fl, int family, const void *addr0,
		     uint16_t port0, const void *addr1, uint16_t port1,
		     uint32_t isn0, uint32_t isn1)
{
	size_t alen = family == AF_INET6 ? 16 : 4;

	memset(fl, 0, sizeof(*fl));
	fl->family = family;
	memcpy(fl->addr[0], addr0, alen);
	memcpy(fl->addr[1], addr1, alen);
	fl->port[0] = port0;
	fl->port[1] = port1;
	fl->next_seq[0] = isn0;
	fl->next_seq[1] = isn1;
}

/* Internet checksum (RFC 1071) accumulation over big-endian 16-bit words. */
static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t len, bool *odd)
{
	for (size_t i = 0; i < len; i++) {
		sum += *odd ? p[i] : (uint32_t)p[i] << 8;
		*odd = !*odd;
	}
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Ethernet and IP headers in front of a TCP segment of @tcp_len octets. */
static size_t put_eth_ip(struct pcapw *w, const struct pcapw_flow *fl,
			 int side, size_t tcp_len, uint8_t *h)
{
	static const uint8_t mac[2][6] = { { 2, 0, 0, 0, 0, 1 },
					   { 2, 0, 0, 0, 0, 2 } };
	uint8_t *ip = h + ETH_HDR_LEN;

	memcpy(h, mac[!side], 6);
	memcpy(h + 6, mac[side], 6);
	if (fl->family == AF_INET6) {
		put_be16(h + 12, 0x86dd);
		put_be32(ip, 0x60000000u);
		put_be16(ip + 4, (uint16_t)tcp_len);
		ip[6] = IPPROTO_TCP;
		ip[7] = 64;
		memcpy(ip + 8, fl->addr[side], 16);
		memcpy(ip + 24, fl->addr[!side], 16);
		return ETH_HDR_LEN + IPV6_HDR_LEN;
	}
	put_be16(h + 12, 0x0800);
	memset(ip, 0, IPV4_HDR_LEN);
	ip[0] = 0x45;
	put_be16(ip + 2, (uint16_t)(IPV4_HDR_LEN + tcp_len));
	put_be16(ip + 4, w->ip_id++);
	put_be16(ip + 6, 0x4000); /* don't fragment */
	ip[8] = 64;
	ip[9] = IPPROTO_TCP;
	memcpy(ip + 12, fl->addr[side], 4);
	memcpy(ip + 16, fl->addr[!side], 4);
	{
		bool odd = false;

		put_be16(ip + 10, csum_fold(csum_add(0, ip, IPV4_HDR_LEN, &odd)));
	}
	return ETH_HDR_LEN + IPV4_HDR_LEN;
}

/* TCP checksum over the pseudo header, the TCP header and the payload. */
static uint16_t tcp_csum(const struct pcapw_flow *fl, int side,
			 const uint8_t *tcp, size_t hlen,
			 const struct iovec *iov, int iovcnt, size_t len)
{
	size_t alen = fl->family == AF_INET6 ? 16 : 4;
	uint16_t tcp_len = (uint16_t)(hlen + len);
	uint8_t pseudo[8] = { 0 };
	bool odd = false;
	uint32_t sum = 0;

	sum = csum_add(sum, fl->addr[side], alen, &odd);
	sum = csum_add(sum, fl->addr[!side], alen, &odd);
	if (fl->family == AF_INET6) {
		/* 32-bit upper-layer length, 24 zero bits, next header */
		put_be16(pseudo + 2, tcp_len);
		pseudo[7] = IPPROTO_TCP;
		sum = csum_add(sum, pseudo, 8, &odd);
	} else {
		/* zero, protocol, TCP length */
		pseudo[1] = IPPROTO_TCP;
		put_be16(pseudo + 2, tcp_len);
		sum = csum_add(sum, pseudo, 4, &odd);
	}
	sum = csum_add(sum, tcp, hlen, &odd);
	for (int i = 0; i < iovcnt; i++)
		sum = csum_add(sum, iov[i].iov_base, iov[i].iov_len, &odd);
	return csum_fold(sum);
}

/* Writes one packet: @flags, and @len payload octets gathered from @iov. */
static int put_segment(struct pcapw *w, struct pcapw_flow *fl, int side,
		       uint8_t flags, const struct iovec *iov, int iovcnt,
		       size_t len, const struct timeval *ts)
{
	uint8_t h[MAX_HDR_LEN];
	size_t opt = (flags & TCP_SYN) ? TCP_SYN_OPT_LEN : 0;
	size_t tcp_hlen = TCP_HDR_LEN + opt;
	size_t off = put_eth_ip(w, fl, side, tcp_hlen + len, h);
	uint8_t *tcp = h + off;
	uint32_t rec[4];

	put_be16(tcp, fl->port[side]);
	put_be16(tcp + 2, fl->port[!side]);
	put_be32(tcp + 4, fl->next_seq[side]);
	put_be32(tcp + 8, (flags & TCP_ACK) ? fl->next_seq[!side] : 0);
	tcp[12] = (uint8_t)((tcp_hlen / 4) << 4);
	tcp[13] = flags;
	put_be16(tcp + 14, 65535);
	put_be16(tcp + 16, 0);
	put_be16(tcp + 18, 0);
	if (opt) {
		tcp[20] = 2; /* MSS */
		tcp[21] = 4;
		put_be16(tcp + 22, 1460);
	}
	put_be16(tcp + 16, tcp_csum(fl, side, tcp, tcp_hlen, iov, iovcnt, len));

	rec[0] = (uint32_t)ts->tv_sec;
	rec[1] = (uint32_t)ts->tv_usec;
	rec[2] = rec[3] = (uint32_t)(off + tcp_hlen + len);
	if (fwrite(rec, sizeof(rec), 1, w->f) != 1 ||
	    fwrite(h, off + tcp_hlen, 1, w->f) != 1)
		return -EIO;
	for (int i = 0; i < iovcnt; i++)
		if (iov[i].iov_len &&
		    fwrite(iov[i].iov_base, iov[i].iov_len, 1, w->f) != 1)
			return -EIO;
	fl->next_seq[side] += (uint32_t)len + ((flags & (TCP_SYN | TCP_FIN)) ? 1 : 0);
	return 0;
}

/* SYN, SYN/ACK, ACK: side 0 connects to side 1. */
int pcapw_handshake(struct pcapw *w, struct pcapw_flow *fl,
		    const struct timeval *ts)
{
	int rc = put_segment(w, fl, 0, TCP_SYN, NULL, 0, 0, ts);

	if (!rc)
		rc = put_segment(w, fl, 1, TCP_SYN | TCP_ACK, NULL, 0, 0, ts);
	if (!rc)
		rc = put_segment(w, fl, 0, TCP_ACK, NULL, 0, 0, ts);
	return rc;
}

/*
 * The octets of @iov sent by @side, as one packet, or as several when they
 * exceed PCAPW_MAX_SEGMENT.
 */
int pcapw_data(struct pcapw *w, struct pcapw_flow *fl, int side,
	       const struct iovec *iov, int iovcnt, const struct timeval *ts)
{
	struct iovec part[64];
	int i = 0;
	size_t skip = 0;

	while (i < iovcnt) {
		size_t len = 0;
		int n = 0, rc;

		/* gather up to PCAPW_MAX_SEGMENT octets into part[] */
		while (i < iovcnt && n < 64 && len < PCAPW_MAX_SEGMENT) {
			size_t take = iov[i].iov_len - skip;

			if (take > PCAPW_MAX_SEGMENT - len)
				take = PCAPW_MAX_SEGMENT - len;
			part[n].iov_base = (uint8_t *)iov[i].iov_base + skip;
			part[n++].iov_len = take;
			len += take;
			skip += take;
			if (skip == iov[i].iov_len) {
				i++;
				skip = 0;
			}
		}
		if (!len)
			break;
		rc = put_segment(w, fl, side, TCP_ACK | TCP_PSH, part, n, len,
				 ts);
		if (rc)
			return rc;
	}
	return 0;
}

int pcapw_fin(struct pcapw *w, struct pcapw_flow *fl, int side,
	      const struct timeval *ts)
{
	return put_segment(w, fl, side, TCP_FIN | TCP_ACK, NULL, 0, 0, ts);
}
