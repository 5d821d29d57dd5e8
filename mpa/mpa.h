/* SPDX-License-Identifier: MIT */
/*
 * MPA layer (RFC 5044, RFC 6581): CRC32c, FPDU framing with markers, the
 * incremental de-framer, Request/Reply frames and their negotiation.
 *
 * Pure code: nothing here reads or writes a socket.  The sender produces
 * iovec lists that point into the caller's buffers; the receiver consumes
 * the byte stream in pieces of any size and calls back the layer above.
 */
#ifndef IW_MPA_H
#define IW_MPA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "mpa/mpa_wire.h"

/* ---- CRC32c (crc.c) ------------------------------------------------- */

/*
 * CRC32c (Castagnoli), the iSCSI CRC of RFC 3720.  A running value starts
 * at mpa_crc32c_init(), takes pieces in order through mpa_crc32c_update()
 * and yields the CRC from mpa_crc32c_final().  On the wire the 32-bit result
 * is written least significant octet first (mpa_crc_store()).
 */
static inline uint32_t mpa_crc32c_init(void)
{
	return 0xffffffffu;
}

uint32_t mpa_crc32c_update(uint32_t acc, const void *p, size_t len);

static inline uint32_t mpa_crc32c_final(uint32_t acc)
{
	return ~acc;
}

uint32_t mpa_crc32c(const void *p, size_t len);

/* ---- framing arithmetic (markers.c) --------------------------------- */

/* Octets of PAD after a ULPDU: 2 + ULPDU_LENGTH + PAD is a multiple of 4. */
static inline unsigned int mpa_pad_len(uint32_t ulpdu_len)
{
	return (unsigned int)(-(MPA_HDR_LEN + ulpdu_len) & (MPA_ALIGN - 1));
}

/* Octets from stream offset @off to the next marker position (0: one is due). */
static inline uint32_t mpa_marker_gap(uint64_t off)
{
	return (uint32_t)((MPA_MARKER_SPACING - off % MPA_MARKER_SPACING) %
			  MPA_MARKER_SPACING);
}

uint16_t mpa_mulpdu(uint32_t emss, bool markers);
uint64_t mpa_fpdu_wire_len(uint64_t start_off, uint32_t ulpdu_len,
			   bool markers);
uint64_t mpa_fpdu_peek_len(uint64_t off, bool markers, const uint8_t *p,
			   size_t avail);
void mpa_copy_run(void *dst, const void *src, size_t n);

/* Longest ULPDU whose FPDU keeps every FPDUPTR within 16 bits. */
#define MPA_MAX_ULPDU_MARKERS 65014u

/* ---- FPDU sender (fpdu_tx.c) ---------------------------------------- */

struct mpa_tx {
	uint64_t off;	 /* octets sent since the first FPDU, markers included */
	uint16_t mulpdu; /* longest ULPDU this sender frames */
	bool markers;	 /* the peer asked for markers in what it receives */
	bool crc;	 /* CRC negotiated; otherwise the field is zero */
};

/* Markers one FPDU can hold at most (a 65014-octet ULPDU needs 129). */
#define MPA_TX_MAX_MARKERS 130

/*
 * The octets MPA adds around one ULPDU.  The iovecs that mpa_tx_fpdu()
 * returns point into this, so it must live until the FPDU is written.
 */
struct mpa_tx_frame {
	uint8_t hdr[MPA_HDR_LEN];
	uint8_t pad[MPA_ALIGN - 1];
	uint8_t crc[MPA_CRC_LEN];
	uint16_t n_markers;
	/*
	 * Room for MPA_TX_MAX_MARKERS markers, the caller's: needed only
	 * when the stream has markers, so that a sender without them keeps
	 * no half kilobyte per FPDU in flight.
	 */
	uint8_t (*markers)[MPA_MARKER_LEN];
};

void mpa_tx_init(struct mpa_tx *tx, uint16_t mulpdu, bool markers, bool crc);
void mpa_tx_set_mulpdu(struct mpa_tx *tx, uint16_t mulpdu);
int mpa_tx_iov_max(int ulpdu_iovcnt, uint32_t ulpdu_len, bool markers);
int mpa_tx_fpdu(struct mpa_tx *tx, const struct iovec *ulpdu, int iovcnt,
		struct mpa_tx_frame *f, struct iovec *out, int out_max);
size_t mpa_tx_fpdu_copy(struct mpa_tx *tx, const struct iovec *ulpdu,
			int iovcnt, size_t ulpdu_len, uint8_t *out);
size_t mpa_tx_fpdu_seal(struct mpa_tx *tx, uint8_t *out, size_t ulpdu_len);

/*
 * Where the ULPDU goes in a whole FPDU at @out on a stream without
 * markers: a caller that builds it there, rather than handing its pieces
 * to mpa_tx_fpdu_copy(), then frames it with mpa_tx_fpdu_seal().
 */
static inline uint8_t *mpa_tx_ulpdu_at(uint8_t *out)
{
	return out + MPA_HDR_LEN;
}

int mpa_tx_fpdu_around(struct mpa_tx *tx, const struct iovec *ulpdu,
		       int iovcnt, uint8_t *frame, struct iovec *out,
		       int out_max);
size_t mpa_tx_fpdu_around_one(struct mpa_tx *tx, uint8_t *frame,
			      size_t hdr_len, const void *payload, size_t len,
			      struct iovec out[3]);
void mpa_tx_crc(const struct mpa_tx *tx, const struct iovec *wire, int n_wire);

/* Octets mpa_tx_fpdu_around() copies: ULPDU_LENGTH, a header, PAD, CRC. */
static inline size_t mpa_tx_frame_len(size_t hdr_len, uint32_t ulpdu_len)
{
	return MPA_HDR_LEN + hdr_len + mpa_pad_len(ulpdu_len) + MPA_CRC_LEN;
}

/* ---- FPDU receiver (fpdu_rx.c) -------------------------------------- */

/*
 * Calls into the layer above.  Each returns 0 or a negative code, which
 * stops the de-framer (the error sticks).  ULPDU octets arrive in order
 * with markers removed; ulpdu_end comes after the CRC has been checked.
 * With a hold buffer (mpa_rx_hold()) and CRC on, nothing of a ULPDU goes
 * up before its CRC has been checked: begin, data and end come together.
 */
struct mpa_rx_ops {
	int (*ulpdu_begin)(void *arg, uint16_t ulpdu_len);
	int (*ulpdu_data)(void *arg, const uint8_t *p, size_t len);
	int (*ulpdu_end)(void *arg);
};

enum mpa_rx_state {
	MPA_RX_HDR,
	MPA_RX_ULPDU,
	MPA_RX_PAD,
	MPA_RX_CRC,
};

struct mpa_rx {
	const struct mpa_rx_ops *ops;
	void *arg;
	uint64_t off;	  /* octets received since the first FPDU */
	uint64_t hdr_off; /* stream offset of this FPDU's ULPDU_LENGTH */
	uint32_t crc_acc; /* running CRC of this FPDU */
	uint16_t max_ulpdu;
	uint16_t ulpdu_len;
	uint16_t ulpdu_left;
	uint8_t pad_left;
	uint8_t state;	     /* enum mpa_rx_state */
	uint8_t part[4];     /* a field split across pieces */
	uint8_t part_len;
	uint8_t marker_left; /* octets of a marker still to come */
	bool marker_leads;   /* the marker coming in opens an FPDU */
	bool fpdu_open;	     /* a leading marker or header octet was seen */
	bool markers;	     /* we asked for markers */
	bool crc;
	int err; /* sticky */
	uint8_t *hold;	     /* CRC on: the ULPDU until its CRC is checked */
	size_t hold_cap;
};

void mpa_rx_init(struct mpa_rx *rx, const struct mpa_rx_ops *ops, void *arg,
		 uint16_t max_ulpdu, bool markers, bool crc);
int mpa_rx_feed(struct mpa_rx *rx, const uint8_t *p, size_t len);
int mpa_rx_eof(const struct mpa_rx *rx);
size_t mpa_rx_payload_window(const struct mpa_rx *rx);
int mpa_rx_payload_placed(struct mpa_rx *rx, const uint8_t *p, size_t len);
void mpa_rx_hold(struct mpa_rx *rx, uint8_t *buf, size_t cap);
uint8_t *mpa_rx_held_at(const struct mpa_rx *rx);

/* ---- FPDU scanner (scan.c) ------------------------------------------ */

/*
 * Walks the FPDUs of one direction's whole byte stream held in memory, for
 * tools that judge a capture.  Unlike the receiver it reports every field
 * as found and keeps going after a bad CRC, marker or pad: the framing
 * goes on by ULPDU_LENGTH, so one pass can name every violation.
 */

/* Markers one FPDU can hold at most (a 65535-octet ULPDU spans 130). */
#define MPA_SCAN_MAX_MARKERS 131

struct mpa_scan_marker {
	uint64_t off;	   /* stream offset, counted from the first FPDU */
	uint16_t reserved; /* the 16 bits before FPDUPTR */
	uint16_t fpduptr;
	uint64_t want;	   /* the FPDUPTR RFC 5044 section 4.3 asks for here */
	bool ok;	   /* fpduptr == want */
};

struct mpa_scan_fpdu {
	uint64_t off;	   /* stream offset of the first octet (a leading marker's) */
	uint64_t hdr_off;  /* stream offset of ULPDU_LENGTH */
	uint64_t wire_len; /* octets on the wire; when incomplete, octets present */
	bool have_len;	   /* ULPDU_LENGTH was read */
	uint16_t ulpdu_len;
	uint8_t pad_len;
	bool pad_zero;
	uint32_t crc_wire;     /* as read, least significant octet first */
	uint32_t crc_computed; /* over markers, header, ULPDU and pad; CRC on only */
	bool crc_ok;	       /* they match, or CRC is not in use */
	uint16_t n_markers;
	uint16_t n_bad_markers;
	struct mpa_scan_marker marker[MPA_SCAN_MAX_MARKERS];
};

struct mpa_scanner {
	const uint8_t *p; /* the whole stream of one direction */
	size_t len;
	size_t base; /* buffer offset of the first FPDU: stream offset 0 */
	size_t pos;  /* buffer offset of the next FPDU */
	bool markers;
	bool crc;
};

void mpa_scan_init(struct mpa_scanner *s, const uint8_t *p, size_t len,
		   size_t base, bool markers, bool crc);
int mpa_scan_next(struct mpa_scanner *s, uint8_t *ulpdu, size_t cap,
		  struct mpa_scan_fpdu *f);

/* ---- Request/Reply frames (frame.c) --------------------------------- */

/* RFC 6581 ready-to-receive message types, as a set of bits */
enum mpa_rtr {
	MPA_RTR_SEND = 1,
	MPA_RTR_WRITE = 2,
	MPA_RTR_READ = 4,
	MPA_RTR_ALL = 7,
};

/*
 * A decoded (or to-be-encoded) Request or Reply.  For an enhanced frame
 * (revision 2 with H) the first four private-data octets are the IRD/ORD
 * words and pd/pd_len describe only the private data after them.
 */
struct mpa_frame {
	bool reply;
	bool m, c, r, h;
	uint8_t res; /* reserved flag bits as received */
	uint8_t rev;
	uint16_t ird, ord; /* 14-bit values, enhanced frames only */
	bool p2p;	   /* A bit */
	uint8_t rtr;	   /* enum mpa_rtr bits: B, C, D */
	const uint8_t *pd; /* ULP private data */
	uint16_t pd_len;
};

size_t mpa_frame_len(const struct mpa_frame *f);
/* The length of the Request or Reply that @p starts; 0 while unknown. */
size_t mpa_frame_peek_len(const uint8_t *p, size_t avail);
ssize_t mpa_frame_encode(const struct mpa_frame *f, uint8_t *out, size_t cap);
ssize_t mpa_frame_decode(const uint8_t *p, size_t len, bool want_reply,
			 uint16_t max_pd_len, struct mpa_frame *f);

/* ---- negotiation (negotiate.c) -------------------------------------- */

/* How a side treats an option: never, only when the peer asks, always. */
enum mpa_pref {
	MPA_PREF_OFF,
	MPA_PREF_FOLLOW,
	MPA_PREF_ON,
};

struct mpa_policy {
	uint8_t revision;   /* initiator: revision sent; responder: highest */
	enum mpa_pref crc;
	enum mpa_pref markers;
	uint16_t ird, ord;  /* local inbound/outbound RDMA Read depths */
	uint8_t rtr_offer;  /* initiator: RTR types offered, 0 = no p2p */
	uint8_t rtr_accept; /* responder: RTR types it may pick */
};

/* What the two sides settled on, seen from the local side. */
struct mpa_params {
	uint8_t revision;
	bool enhanced;
	bool crc;
	bool markers_tx; /* we insert markers */
	bool markers_rx; /* the peer inserts markers */
	uint16_t ird, ord;
	bool p2p;
	uint8_t rtr; /* the one RTR type (enum mpa_rtr), or 0 */
};

void mpa_request_build(const struct mpa_policy *local, struct mpa_frame *req);
int mpa_negotiate_request(const struct mpa_policy *local,
			  const struct mpa_frame *req, struct mpa_frame *rep,
			  struct mpa_params *out);
int mpa_negotiate_reply(const struct mpa_policy *local,
			const struct mpa_frame *req,
			const struct mpa_frame *rep, struct mpa_params *out);

#endif /* IW_MPA_H */
