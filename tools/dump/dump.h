/* SPDX-License-Identifier: MIT */
/*
 * iwarp-dump: what its parts share.  A capture (or raw stream files)
 * becomes connections of two byte streams each (dump_pcap.c, dump_tcp.c);
 * the MPA handshake says how to frame them (dump_mpa.c); every FPDU and
 * handshake frame becomes an event, and the events are judged and printed
 * in capture order (dump_timeline.c, dump_rdmap.c, dump_print.c).
 */
#ifndef IW_DUMP_H
#define IW_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/time.h>

#include "ddp/ddp.h"
#include "mpa/mpa.h"
#include "rdmap/rdmap.h"

/* --crc / --markers: unset, or how to decode streams without a handshake */
enum dump_choice {
	DUMP_UNSET = -1,
	DUMP_OFF = 0,
	DUMP_ON = 1,
};

/* --start: what a raw stream file begins with */
enum dump_start {
	DUMP_START_AUTO,
	DUMP_START_FRAME,
	DUMP_START_FPDU,
};

struct dump_opts {
	bool verbose; /* -v: every header field */
	bool hex;     /* -x: hex dump of each ULPDU */
	bool quiet;   /* -q: only violations, warnings, notices, summary */
	bool strict;  /* --strict: warnings count as violations */
	int crc;      /* enum dump_choice */
	int markers;
	int start;    /* enum dump_start */
};

/* ---- one direction of a connection ---------------------------------- */

/* A TCP segment's payload as captured, before reassembly. */
struct dump_seg {
	uint32_t seq;
	uint32_t len;
	uint32_t frame;
	uint8_t *data;
};

/* An RDMA Read Request, kept to match the Read Responses that answer it. */
struct dump_read_req {
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t size;
	uint32_t src_stag;
	uint64_t src_to;
	uint32_t frame;
};

/* An RFC 7306 Atomic Request, kept to match the response to it. */
struct dump_atomic_req {
	uint8_t aop;
	uint32_t req_id;
	uint32_t stag;
	uint64_t to;
	uint64_t data, data_mask, cmp, cmp_mask;
	uint32_t frame;
};

/* What one direction has said on the RDMAP level so far. */
struct dump_rdmap_state {
	/* queues 0 to 2 of RFC 5040, and 3 of RFC 7306 */
	struct ddp_queue q[RDMAP_QN_MAX];
	uint32_t msn_cur[RDMAP_QN_MAX]; /* MSN the open message carries */
	bool alt_valid[RDMAP_QN_MAX];	/* after a wrong MSN: the sender's */
	uint32_t alt_msn[RDMAP_QN_MAX];

	bool tagged_open; /* a tagged message has begun and not ended */
	uint32_t tagged_stag;
	uint64_t tagged_to; /* TO its next segment must carry */
	uint8_t tagged_opcode;

	struct dump_read_req *rr; /* Read Requests sent, in stream order */
	size_t n_rr, cap_rr;
	size_t rr_done;	    /* of those, fully answered by the peer */
	uint64_t rr_got;    /* octets of the answer in progress */

	struct dump_atomic_req *ar; /* Atomic Requests sent, in order */
	size_t n_ar, cap_ar;
	size_t ar_done;		    /* of those, answered by the peer */

	bool first_done;    /* the direction's first FPDU was judged */
	bool unmatched_noted; /* said once: no peer to match Read Responses */
	bool terminated;    /* a Terminate went this way */
	uint32_t term_frame;
};

struct dump_stats {
	uint64_t fpdus;
	uint64_t wire_octets;
	uint64_t payload_octets;
	uint64_t opcode[16];
	uint64_t violations;
	uint64_t warnings;
};

struct dump_dir {
	/* while the capture is read */
	struct dump_seg *segs;
	size_t n_segs, cap_segs;
	bool syn;
	uint32_t isn;
	bool fin;

	/* reassembled: the octets from the first on, up to a gap */
	uint8_t *data;
	size_t len;
	uint32_t *ready; /* frame by which octets 0..i had all arrived; NULL raw */
	bool gap;
	uint32_t gap_frame;
	uint64_t gap_len;

	/* framing */
	bool decode;	  /* FPDUs follow the handshake */
	size_t fpdu_base; /* offset of the first FPDU */
	bool markers;
	uint32_t first_fpdu_frame; /* frame that completed its first FPDU, or 0 */

	struct dump_rdmap_state rd;
	struct dump_stats st;
	char name[144]; /* "10.0.2.2:53884 → 10.0.2.15:7174" */
};

/* ---- a connection ---------------------------------------------------- */

/* How a handshake frame read: decoded, not there, or an -IW_EMPA_ code. */
#define DUMP_HS_OK 1
#define DUMP_HS_ABSENT 0
#define DUMP_HS_SKIPPED 2 /* FPDUs from the first octet, by the options */

struct dump_hs_frame {
	int rc;
	int side;
	struct mpa_frame f; /* pd points into the stream */
	size_t len;
	uint32_t frame;	    /* where the octets that decided it arrived */
};

struct dump_handshake {
	struct dump_hs_frame req, rep;
	bool rejected;
	unsigned int printed; /* decoded frames printed so far */
};

struct dump_conn {
	unsigned int id; /* order of first appearance, from 1 */
	int family;	 /* AF_INET, AF_INET6; 0 for raw files */
	uint8_t addr[2][16];
	uint16_t port[2];
	struct dump_dir dir[2]; /* dir[s]: what side s sent */
	int initiator;		/* side that opened (SYN or Request), or -1 */
	bool decode;		/* its FPDUs are walked */
	bool assumed;		/* framing partly from the options */
	bool crc;
	bool p2p;
	uint8_t rtr;		/* enum mpa_rtr the Reply picked */
	struct dump_handshake hs;
	uint64_t violations;	/* the handshake's and the connection's own */
	uint64_t warnings;
	struct dump_conn *hash_next;
	struct dump_conn *next;
};

/* ---- the whole run --------------------------------------------------- */

#define DUMP_MAX_PENDING 64

struct dump {
	struct dump_opts opt;
	bool raw; /* stream files: offsets instead of frame numbers */
	struct dump_conn *conns, **tail;
	unsigned int n_conns;
	struct dump_conn **hash;

	struct timeval *ts; /* per frame, from frame 1 */
	uint32_t n_frames, cap_frames;

	uint64_t fpdus, violations, warnings, notices;

	/* lines owed after the one being built */
	char *pending[DUMP_MAX_PENDING];
	unsigned int n_pending, n_dropped;

	struct mpa_scan_fpdu fpdu;
	uint8_t ulpdu[65536];
};

/* dump_pcap.c */
int dump_read_pcap(struct dump *d, const char *path);
int dump_read_pcap_stream(struct dump *d, FILE *f, const char *name);

/* dump_tcp.c */
void dump_init(struct dump *d);
void dump_fini(struct dump *d);
struct dump_conn *dump_conn_new(struct dump *d);
int dump_tcp_segment(struct dump *d, int family, const uint8_t *src,
		     const uint8_t *dst, uint16_t sport, uint16_t dport,
		     uint32_t seq, uint8_t flags, const uint8_t *p,
		     uint32_t len, uint32_t frame);
int dump_assemble(struct dump *d, struct dump_conn *c);
int dump_prepare(struct dump *d);

#define DUMP_TCP_FIN 0x01
#define DUMP_TCP_SYN 0x02
#define DUMP_TCP_RST 0x04
#define DUMP_TCP_ACK 0x10

/* dump_mpa.c */
void dump_handshake(struct dump *d, struct dump_conn *c);
void dump_handshake_print(struct dump *d, struct dump_conn *c, int side);
void dump_fpdu_check(struct dump *d, struct dump_conn *c, int side,
		     uint32_t frame, const struct mpa_scan_fpdu *f);
void dump_first_fpdu_check(struct dump *d, struct dump_conn *c, int side,
			   uint32_t first_octet_frame);
uint32_t dump_frame_at(const struct dump_dir *dir, size_t pos);
uint32_t dump_first_frame(const struct dump_conn *c);

/* dump_rdmap.c */
struct dump_msg {
	bool ddp_ok; /* a whole DDP header */
	struct ddp_hdr ddp;
	uint8_t ddp_rsvd;
	uint8_t rv, rsvd, opcode;
	size_t hdr_len;	    /* DDP header plus RDMAP header after it */
	size_t payload_len;
	bool have_rr;
	struct dump_read_req rr;
	bool have_term;
	struct rdmap_term term;
	bool term_swapped; /* the siw reading is the one that makes sense */
	bool rtr;
	/* RFC 7306 */
	bool have_ar; /* Atomic Request */
	struct dump_atomic_req ar;
	bool have_aresp; /* Atomic Response */
	uint32_t aresp_id;
	uint64_t aresp_value;
	bool have_imm; /* Immediate Data */
	uint64_t imm;
};

void dump_rdmap_collect(struct dump_dir *dir, const uint8_t *u, size_t len,
			uint32_t frame);
void dump_rdmap_judge(struct dump *d, struct dump_conn *c, int side,
		      uint32_t frame, uint64_t at, const uint8_t *u, size_t len,
		      struct dump_msg *m);
const char *dump_opcode_name(uint8_t opcode);
void dump_read_req_decode(const uint8_t *p, struct dump_read_req *rr,
			  uint32_t frame);

/* dump_ext.c: the RFC 7306 messages */
bool dump_ext_opcode(uint8_t opcode);
void dump_ext_collect(struct dump_dir *dir, const uint8_t *u, size_t len,
		      uint32_t frame);
void dump_ext_judge(struct dump *d, struct dump_conn *c, int side,
		    uint32_t frame, uint64_t at, const uint8_t *u, size_t len,
		    struct dump_msg *m);
void dump_ext_print(const struct dump_msg *m);
void dump_ext_print_details(const struct dump_msg *m);

/* dump_timeline.c */
int dump_timeline(struct dump *d);

/* dump_print.c */
void dump_dir_names(struct dump_conn *c, const char *raw0, const char *raw1);
void dump_violation(struct dump *d, struct dump_conn *c, struct dump_dir *dir,
		    uint32_t frame, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
void dump_warning(struct dump *d, struct dump_conn *c, struct dump_dir *dir,
		  uint32_t frame, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
void dump_notice(struct dump *d, uint32_t frame, uint64_t off,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void dump_flush(struct dump *d);
void dump_line_start(const struct dump *d, uint32_t frame, uint64_t off,
		     const struct dump_dir *dir);
const char *dump_rtr_words(uint8_t rtr);
void dump_print_frame(const struct mpa_frame *f);
void dump_print_frame_details(const struct mpa_frame *f, const uint8_t *p,
			      size_t len);
void dump_print_fpdu(const struct dump_conn *c, int side,
		     const struct mpa_scan_fpdu *f, const struct dump_msg *m);
void dump_print_details(const struct dump *d, const struct mpa_scan_fpdu *f,
			const struct dump_msg *m, const uint8_t *u);
void dump_summary(struct dump *d);

#endif /* IW_DUMP_H */
