/* SPDX-License-Identifier: MIT */
/*
 * A pcap file writer for TCP byte streams: each call becomes one packet
 * with synthetic Ethernet, IPv4 or IPv6 and TCP headers carrying the real
 * addresses, ports and octets, so that tshark, Wireshark and iwarp-dump
 * reassemble and dissect the conversation as if it had been captured.
 */
#ifndef IW_LIB_PCAP_WRITER_H
#define IW_LIB_PCAP_WRITER_H

#include <stdint.h>
#include <stdio.h>
#include <sys/time.h>
#include <sys/uio.h>

struct pcapw {
	FILE *f;
	uint16_t ip_id;
};

/* One TCP connection; side 0 opened it (sent the SYN). */
struct pcapw_flow {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[2][16];
	uint16_t port[2];
	uint32_t next_seq[2]; /* sequence number of each side's next octet */
};

/* Largest payload one packet carries (IPv4 total length is 16 bits). */
#define PCAPW_MAX_SEGMENT 65495

int pcapw_open(struct pcapw *w, const char *path);
int pcapw_close(struct pcapw *w);

void pcapw_flow_init(struct pcapw_flow *fl, int family, const void *addr0,
		     uint16_t port0, const void *addr1, uint16_t port1,
		     uint32_t isn0, uint32_t isn1);
int pcapw_handshake(struct pcapw *w, struct pcapw_flow *fl,
		    const struct timeval *ts);
int pcapw_data(struct pcapw *w, struct pcapw_flow *fl, int side,
	       const struct iovec *iov, int iovcnt, const struct timeval *ts);
int pcapw_fin(struct pcapw *w, struct pcapw_flow *fl, int side,
	      const struct timeval *ts);

#endif /* IW_LIB_PCAP_WRITER_H */
