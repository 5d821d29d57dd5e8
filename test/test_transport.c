// SPDX-License-Identifier: MIT
/*
 * The TCP transport under an owner of its own.  Reads: frames of a
 * 4-octet length and a payload that the owner places straight into its
 * buffer whenever it knows where the next octets go; what the reads put
 * through the transport's buffer instead (and the owner then copies) is
 * counted.  Writes: who sends a stream larger than the socket holds, the
 * loop or a thread that polls; and whether a write leaves the kernel
 * acknowledging a stream that comes in at once.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "lib/byteorder.h"
#include "lib/transport.h"
#include "testutil.h"

#define PLACE_LEN (1024 * 1024)

struct owner {
	uint8_t *place;	  /* every frame's payload, one after the other */
	size_t placed;	  /* payload octets placed so far */
	uint8_t hdr[4];
	size_t hdr_len;	  /* octets of the next frame's length so far */
	size_t left;	  /* payload octets of this frame still to come */
	size_t fed_payload; /* payload octets that came through rx_feed */
	unsigned int looks; /* asked where the next octets go: once a read */
	bool no_place;	  /* names no place: every octet through the buffer */
	uint8_t *tx_src;  /* what the owner sends, tx_len octets */
	size_t tx_len, tx_sent;
	size_t tx_asked;  /* the most octets a gather was asked for */
	struct tp_conn *conn; /* shut when the stream ends (noting_ops) */
	int closes, close_err;
	size_t placed_at_close; /* payload placed when the end was told */
};

static void no_lock(void *arg)
{
	(void)arg;
}

static int gather(void *arg, struct iovec *iov, int max, size_t max_bytes)
{
	struct owner *o = arg;
	size_t n = o->tx_len - o->tx_sent;

	if (max_bytes > o->tx_asked)
		o->tx_asked = max_bytes;
	if (!n || max < 1)
		return 0;
	iov[0] = (struct iovec){ o->tx_src + o->tx_sent,
				 n < max_bytes ? n : max_bytes };
	return 1;
}

static void advance(void *arg, size_t len)
{
	struct owner *o = arg;

	o->tx_sent += len;
}

static void payload(struct owner *o, const uint8_t *p, size_t n)
{
	ck_assert_uint_le(o->placed + n, PLACE_LEN);
	memcpy(o->place + o->placed, p, n);
	o->placed += n;
	o->left -= n;
}

static int feed(void *arg, const uint8_t *p, size_t len)
{
	struct owner *o = arg;

	while (len) {
		size_t n;

		if (!o->left) {
			o->hdr[o->hdr_len++] = *p++;
			len--;
			if (o->hdr_len == sizeof(o->hdr)) {
				o->left = get_be32(o->hdr);
				o->hdr_len = 0;
			}
			continue;
		}
		n = len < o->left ? len : o->left;
		payload(o, p, n);
		o->fed_payload += n;
		p += n;
		len -= n;
	}
	return 0;
}

static uint8_t *direct(void *arg, size_t *len)
{
	struct owner *o = arg;

	o->looks++;
	if (!o->left || o->no_place)
		return NULL;
	*len = o->left;
	return o->place + o->placed;
}

static int direct_done(void *arg, size_t len)
{
	struct owner *o = arg;

	o->placed += len;
	o->left -= len;
	return 0;
}

static void closed(void *arg, int err)
{
	(void)arg;
	ck_abort_msg("the connection closed: %d", err);
}

static const struct tp_ops ops = {
	.lock = no_lock, .unlock = no_lock, .tx_gather = gather,
	.tx_advance = advance, .rx_feed = feed, .rx_direct = direct,
	.rx_direct_done = direct_done, .closed = closed,
};

/* An end of the stream noted, as an owner does, which then shuts it. */
static void note_closed(void *arg, int err)
{
	struct owner *o = arg;

	o->closes++;
	o->close_err = err;
	o->placed_at_close = o->placed;
	tp_shutdown(o->conn);
}

static const struct tp_ops noting_ops = {
	.lock = no_lock, .unlock = no_lock, .tx_gather = gather,
	.tx_advance = advance, .rx_feed = feed, .rx_direct = direct,
	.rx_direct_done = direct_done, .closed = note_closed,
};

struct link {
	struct event_base *base;
	struct tp_conn c;
	struct owner o;
	int peer; /* the far end, written to by the test */
	int fd;
};

static void link_open_with(struct link *l, const struct tp_ops *o_ops)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);

	memset(l, 0, sizeof(*l));
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(lfd, 1), 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
	l->peer = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(l->peer, (struct sockaddr *)&a, alen), 0);
	l->fd = accept(lfd, NULL, NULL);
	ck_assert_int_ge(l->fd, 0);
	close(lfd);
	l->o.place = calloc(1, PLACE_LEN);
	l->base = event_base_new();
	ck_assert(l->o.place && l->base);
	l->o.conn = &l->c;
	ck_assert_int_eq(tp_adopt(&l->c, l->base, l->fd, o_ops, &l->o, NULL),
			 0);
}

static void link_open(struct link *l)
{
	link_open_with(l, &ops);
}

/* What is left once the transport is freed: the far end, the loop. */
static void link_release(struct link *l)
{
	if (l->peer >= 0)
		close(l->peer);
	event_base_free(l->base);
	free(l->o.place);
}

static void link_close(struct link *l)
{
	tp_shutdown(&l->c);
	tp_free(&l->c);
	link_release(l);
}

/* Writes @n octets to the far end and waits until all of them are in. */
static void arrive(struct link *l, const uint8_t *p, size_t n)
{
	int queued = 0;

	for (size_t done = 0; done < n;) {
		ssize_t w = write(l->peer, p + done, n - done);

		ck_assert_int_gt(w, 0);
		done += (size_t)w;
	}
	for (int i = 0; i < 1000 && (size_t)queued < n; i++) {
		struct pollfd pf = { l->fd, POLLIN, 0 };

		poll(&pf, 1, 10);
		ck_assert_int_eq(ioctl(l->fd, FIONREAD, &queued), 0);
	}
	ck_assert_uint_ge((size_t)queued, n);
}

/* Frames of @len octets each, numbered from @first, into @out. */
static size_t frames(uint8_t *out, int first, int count, uint32_t len)
{
	size_t at = 0;

	for (int f = first; f < first + count; f++) {
		put_be32(out + at, len);
		at += 4;
		for (uint32_t i = 0; i < len; i++)
			out[at++] = (uint8_t)(f * 31 + i * 7);
	}
	return at;
}

/* The @count frames of @len octets in @wire all went to their place. */
static void expect_placed(const struct link *l, const uint8_t *wire,
			  int count, uint32_t len)
{
	ck_assert_uint_eq(l->o.placed, (size_t)count * len);
	for (int f = 0; f < count; f++)
		ck_assert_mem_eq(l->o.place + (size_t)f * len,
				 wire + (size_t)f * (len + 4) + 4, len);
}

/*
 * Two frames of 64 KiB whose octets arrive in the pieces that @cuts ends
 * (the last cut is the end of the stream), each read at once.  The first
 * frame's length comes alone, so that its payload has a place from its
 * first octet on.  Returns the payload octets that came through the
 * transport's buffer from the third piece on.
 */
static size_t two_frames_in_pieces(const size_t *cuts, int n_cuts)
{
	enum { LEN = 65536 };
	static uint8_t wire[2 * (LEN + 4)], want[2 * LEN];
	struct link l;
	size_t from = 0, fed;

	ck_assert_uint_eq(frames(wire, 0, 2, LEN), cuts[n_cuts - 1]);
	for (size_t f = 0, at = 0; f < 2; f++, at += LEN + 4)
		memcpy(want + f * LEN, wire + at + 4, LEN);
	link_open(&l);
	for (int i = 0; i < n_cuts; i++) {
		if (i == 2)
			l.o.fed_payload = 0;
		arrive(&l, wire + from, cuts[i] - from);
		tp_poll(&l.c);
		from = cuts[i];
	}
	ck_assert_uint_eq(l.o.placed, 2 * LEN);
	ck_assert_mem_eq(l.o.place, want, 2 * LEN);
	fed = l.o.fed_payload;
	link_close(&l);
	return fed;
}

/*
 * A read that stops short of a large frame's end: the next one takes the
 * rest of the payload in place and no more than the next frame's length
 * from the stream, so that that frame's payload lands in place too
 * instead of going through the transport's buffer.
 */
START_TEST(payload_after_a_large_frames_last_octets_lands_in_place)
{
	static const size_t cuts[] = { 4, 4 + 50000, 2 * (65536 + 4) };
	size_t fed = two_frames_in_pieces(cuts, 3);

	require(fed < 1024, "%zu payload octets went through the buffer",
		fed);
}
END_TEST

/* The same when the read stops inside the next frame's length. */
START_TEST(payload_after_a_split_length_lands_in_place)
{
	static const size_t cuts[] = { 4, 65536 + 4 + 2, 2 * (65536 + 4) };
	size_t fed = two_frames_in_pieces(cuts, 3);

	require(fed < 1024, "%zu payload octets went through the buffer",
		fed);
}
END_TEST

/*
 * Small frames behind a large one come many to a read again: reading
 * only up to the next headers is for the large frame's end alone.
 */
START_TEST(small_frames_behind_a_large_one_come_many_to_a_read)
{
	enum { BIG = 65536, LEN = 200, COUNT = 100 };
	static uint8_t wire[BIG + 4 + COUNT * (LEN + 4)];
	struct link l;
	size_t n = frames(wire, 0, 1, BIG);

	n += frames(wire + n, 1, COUNT, LEN);
	link_open(&l);
	arrive(&l, wire, 4);
	tp_poll(&l.c);
	l.o.looks = 0;
	arrive(&l, wire + 4, n - 4);
	tp_poll(&l.c);
	ck_assert_uint_eq(l.o.placed, BIG + COUNT * LEN);
	require(l.o.looks <= 6, "%u reads for a large frame and %d small ones",
		l.o.looks, COUNT);
	link_close(&l);
}
END_TEST

/* Small frames still come many to a read, through the buffer. */
START_TEST(small_frames_come_through_the_buffer_whole)
{
	enum { LEN = 100, COUNT = 200 };
	static uint8_t wire[COUNT * (LEN + 4)];
	struct link l;
	size_t n = frames(wire, 0, COUNT, LEN);

	link_open(&l);
	arrive(&l, wire, n);
	tp_poll(&l.c);
	expect_placed(&l, wire, COUNT, LEN);
	link_close(&l);
}
END_TEST

static void *reads_elsewhere(void *arg)
{
	*(unsigned long *)arg = tp_thread_reads();
	return NULL;
}

/*
 * A thread's reads that bring data are counted for it (what tells a
 * waiting thread that a stream still flows); a read that finds the socket
 * empty is not, nor are other threads' reads.
 */
START_TEST(reads_with_data_are_counted_per_thread)
{
	enum { LEN = 100, COUNT = 10 };
	static uint8_t wire[COUNT * (LEN + 4)];
	struct link l;
	size_t n = frames(wire, 0, COUNT, LEN);
	unsigned long before, other = 1;
	pthread_t th;

	link_open(&l);
	before = tp_thread_reads();
	tp_poll(&l.c);
	ck_assert_uint_eq(tp_thread_reads(), before);
	l.o.looks = 0;
	arrive(&l, wire, n);
	tp_poll(&l.c);
	expect_placed(&l, wire, COUNT, LEN);
	before = tp_thread_reads() - before;
	ck_assert_uint_ge(before, 1);
	ck_assert_uint_le(before, l.o.looks);
	before = tp_thread_reads();
	tp_poll(&l.c);
	ck_assert_uint_eq(tp_thread_reads(), before);
	ck_assert_int_eq(pthread_create(&th, NULL, reads_elsewhere, &other), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_uint_eq(other, 0);
	link_close(&l);
}
END_TEST

/*
 * Frames that have no place to go straight to (FPDUs with markers) come
 * several whole to a read: one the read splits is taken piece by piece.
 */
START_TEST(frames_without_a_place_come_several_whole_to_a_read)
{
	enum { LEN = 65000, COUNT = 6 };
	static uint8_t wire[COUNT * (LEN + 4)];
	struct link l;
	size_t n = frames(wire, 0, COUNT, LEN);

	link_open(&l);
	/* room in the socket for all of them at once */
	ck_assert_int_eq(tp_open_rx_window(&l.c), 0);
	l.o.no_place = true;
	arrive(&l, wire, n);
	tp_poll(&l.c);
	expect_placed(&l, wire, COUNT, LEN);
	ck_assert_uint_eq(l.o.fed_payload, COUNT * LEN);
	require(l.o.looks <= 2, "%u reads for %d frames of %d octets",
		l.o.looks, COUNT, LEN);
	link_close(&l);
}
END_TEST

/*
 * Takes at the far end what has come of the owner's stream, without
 * waiting, checking it; *@seen counts the octets taken so far.
 */
static void drain(struct link *l, size_t *seen)
{
	static uint8_t buf[1 << 16];
	ssize_t r;

	while ((r = recv(l->peer, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		ck_assert_uint_le(*seen + (size_t)r, l->o.tx_len);
		ck_assert_mem_eq(buf, l->o.tx_src + *seen, (size_t)r);
		*seen += (size_t)r;
	}
	ck_assert(r < 0 && errno == EAGAIN);
}

/* Waits until the socket has room for more, as the write event would. */
static void await_room(struct link *l)
{
	struct pollfd pf = { l->fd, POLLOUT, 0 };

	ck_assert_int_eq(poll(&pf, 1, 5000), 1);
}

/*
 * While a thread polls the connection, that thread alone sends: the
 * socket full, the loop waits for no room, and with room it sends
 * nothing; the next poll does.  Handed back, the loop waits for room
 * again and sends the rest of the stream.
 */
START_TEST(a_polled_connection_sends_at_its_polls_only)
{
	enum { LEN = 32 << 20 };
	struct link l;
	size_t sent, seen = 0;

	link_open(&l);
	l.o.tx_src = malloc(LEN);
	ck_assert_ptr_nonnull(l.o.tx_src);
	for (size_t i = 0; i < LEN; i++)
		l.o.tx_src[i] = (uint8_t)(i * 13 + i / 4096);
	l.o.tx_len = LEN;
	tp_set_polled(&l.c, true);
	ck_assert_int_eq(tp_kick(&l.c), 0);
	sent = l.o.tx_sent;
	/* nobody reads at the far end: the socket holds only so much */
	ck_assert_uint_gt(sent, 0);
	ck_assert_uint_lt(sent, LEN);
	ck_assert(tp_tx_waiting(&l.c));
	drain(&l, &seen);
	await_room(&l);
	event_base_loop(l.base, EVLOOP_NONBLOCK);
	ck_assert_uint_eq(l.o.tx_sent, sent);
	tp_poll(&l.c);
	ck_assert_uint_gt(l.o.tx_sent, sent);
	tp_set_polled(&l.c, false);
	for (int i = 0; i < 1000 && seen < LEN; i++) {
		struct pollfd pf = { l.peer, POLLIN, 0 };

		poll(&pf, 1, 10);
		drain(&l, &seen);
		event_base_loop(l.base, EVLOOP_NONBLOCK);
	}
	ck_assert_uint_eq(seen, LEN);
	/* a kick whose last round sent the last octets looks once more */
	event_base_loop(l.base, EVLOOP_NONBLOCK);
	ck_assert(!tp_tx_waiting(&l.c));
	link_close(&l);
	free(l.o.tx_src);
}
END_TEST

/* Sends @len octets through @l with its MSS taken as @mss; returns the
 * most octets one write was asked to carry. */
static size_t send_with_mss(struct link *l, uint32_t mss, size_t len)
{
	size_t seen = 0;

	l->o.tx_src = malloc(len);
	ck_assert_ptr_nonnull(l->o.tx_src);
	for (size_t i = 0; i < len; i++)
		l->o.tx_src[i] = (uint8_t)(i * 7 + i / 1000);
	l->o.tx_len = len;
	tp_follow_mss(&l->c, mss);
	ck_assert_int_eq(tp_kick(&l->c), 0);
	for (int i = 0; i < 1000 && seen < len; i++) {
		struct pollfd pf = { l->peer, POLLIN, 0 };

		poll(&pf, 1, 10);
		drain(l, &seen);
		event_base_loop(l->base, EVLOOP_NONBLOCK);
	}
	ck_assert_uint_eq(seen, len);
	free(l->o.tx_src);
	return l->o.tx_asked;
}

/*
 * With jumbo frames a write hands TCP one GSO packet's whole segments;
 * with small segments, and loopback's very large ones, it takes up to
 * TP_MAX_WRITE.  Every octet still arrives, in order.
 */
START_TEST(writes_carry_one_gso_packet_with_jumbo_frames)
{
	struct link l;

	ck_assert_uint_eq(tp_write_size(1448), TP_MAX_WRITE);
	ck_assert_uint_eq(tp_write_size(536), TP_MAX_WRITE);
	ck_assert_uint_eq(tp_write_size(8948), 7 * 8948);
	ck_assert_uint_eq(tp_write_size(4096), 15 * 4096);
	ck_assert_uint_eq(tp_write_size(65483), TP_MAX_WRITE);
	link_open(&l);
	ck_assert_uint_eq(send_with_mss(&l, 8948, 4 << 20), 7 * 8948);
	link_close(&l);
	link_open(&l);
	ck_assert_uint_eq(send_with_mss(&l, 1448, 4 << 20), TP_MAX_WRITE);
	link_close(&l);
}
END_TEST

/*
 * Whether Linux acknowledges what comes in at once (1), or holds its ACKs
 * back for the next reply as for request and response (0).
 */
static int acks_prompt(const struct link *l)
{
	int v = -1;
	socklen_t len = sizeof(v);

	ck_assert_int_eq(getsockopt(l->fd, IPPROTO_TCP, TCP_QUICKACK, &v, &len),
			 0);
	return v;
}

/* The owner sends @n octets, all of which the socket takes at once. */
static void reply(struct link *l, uint8_t *msg, size_t n)
{
	l->o.tx_src = msg;
	l->o.tx_len = n;
	l->o.tx_sent = 0;
	ck_assert_int_eq(tp_kick(&l->c), 0);
	ck_assert_uint_eq(l->o.tx_sent, n);
}

/*
 * A short message sent amid a stream that comes in (a credit, a Read
 * Request) must not make the kernel delay its ACKs to the streaming peer
 * as it does after a reply to a request: the peer would pace itself to
 * the late ACKs.
 */
START_TEST(a_message_amid_a_stream_leaves_the_acks_prompt)
{
	enum { LEN = 65532, CHUNKS = 6 };
	static uint8_t wire[LEN + 4], msg[48];
	struct link l;

	link_open(&l);
	for (int i = 0; i < CHUNKS; i++) {
		arrive(&l, wire, frames(wire, i, 1, LEN));
		tp_poll(&l.c);
	}
	ck_assert_uint_eq(l.o.placed, (size_t)CHUNKS * LEN);
	reply(&l, msg, sizeof(msg));
	ck_assert_int_eq(acks_prompt(&l), 1);
	link_close(&l);
}
END_TEST

/*
 * Request and response is left to the kernel: a reply to each of a few
 * short requests goes out with no more than the write, and the kernel
 * then holds its ACKs back to ride on the replies.
 */
START_TEST(replies_to_short_requests_are_left_to_the_kernel)
{
	static uint8_t wire[64], msg[8];
	struct link l;

	link_open(&l);
	for (int i = 0; i < 3; i++) {
		arrive(&l, wire, frames(wire, i, 1, 8));
		tp_poll(&l.c);
		reply(&l, msg, sizeof(msg));
	}
	ck_assert_uint_eq(l.o.placed, 3 * 8);
	ck_assert_int_eq(acks_prompt(&l), 0);
	link_close(&l);
}
END_TEST

/* ---- closing ----------------------------------------------------------- */

/* Fills the socket and the peer's receive buffer; returns what it wrote. */
static size_t fill(int fd)
{
	static uint8_t chunk[65536];
	size_t sent = 0;
	ssize_t w;

	for (size_t i = 0; i < sizeof(chunk); i++)
		chunk[i] = (uint8_t)(i * 13);
	while ((w = write(fd, chunk, sizeof(chunk))) > 0)
		sent += (size_t)w;
	ck_assert(errno == EAGAIN || errno == EWOULDBLOCK);
	return sent;
}

/*
 * A connection closed while its last octets still wait in the socket for
 * a slow peer: the peer gets every one of them and then the end of the
 * stream, although it sent something after the close (a socket closed
 * under incoming data answers with a reset, which drops what is queued).
 */
START_TEST(a_closed_connection_delivers_what_the_peer_has_not_acknowledged)
{
	struct late_reader peer;
	pthread_t t;
	struct link l;
	size_t sent;

	link_open(&l);
	sent = fill(l.fd);
	peer = (struct late_reader){ .fd = l.peer };
	ck_assert_int_eq(pthread_create(&t, NULL, late_reader_run, &peer), 0);
	tp_shutdown(&l.c);
	tp_linger(&l.c);
	tp_free(&l.c);
	pthread_join(t, NULL);
	ck_assert_msg(peer.end == 0, "the peer's stream ended with %s",
		      strerror(peer.end));
	ck_assert_uint_eq(peer.got, sent);
	link_release(&l);
}
END_TEST

/*
 * The peer sends three frames and leaves with a reset, which comes before
 * anything read them.  A send then fails on the socket; the frames go up
 * all the same, and only then the end of the stream, with the send's
 * error: the last messages of a peer that resets are not lost.
 */
START_TEST(a_send_that_meets_a_reset_comes_after_what_the_peer_sent)
{
	enum { N = 3, LEN = 100 };
	static uint8_t wire[N * (LEN + 4)], credit[16];
	struct linger abort_close = { 1, 0 };
	struct link l;
	size_t n = frames(wire, 0, N, LEN);
	int rc;

	link_open_with(&l, &noting_ops);
	arrive(&l, wire, n);
	ck_assert_int_eq(setsockopt(l.peer, SOL_SOCKET, SO_LINGER,
				    &abort_close, sizeof(abort_close)), 0);
	close(l.peer);
	l.peer = -1;
	for (int i = 0; i < 1000; i++) {
		struct pollfd pf = { l.fd, POLLIN, 0 };

		poll(&pf, 1, 10);
		if (pf.revents & (POLLERR | POLLHUP))
			break;
	}
	l.o.tx_src = credit;
	l.o.tx_len = sizeof(credit);
	rc = tp_kick(&l.c);
	if (rc) /* not told through closed(): the caller tells, as verbs/ does */
		note_closed(&l.o, rc);
	ck_assert_int_eq(l.o.closes, 1);
	ck_assert_int_eq(l.o.close_err, -ECONNRESET);
	ck_assert_uint_eq(l.o.placed_at_close, (size_t)N * LEN);
	expect_placed(&l, wire, N, LEN);
	link_close(&l);
}
END_TEST

static int tcp_state(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	ck_assert_int_eq(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len), 0);
	return ti.tcpi_state;
}

/*
 * The FIN waits until the peer has acknowledged the data before it: not
 * sent while the peer takes nothing, sent (and seen after every octet)
 * once it has taken them, with nothing but the loop running.
 */
START_TEST(the_fin_waits_until_the_data_before_it_are_acknowledged)
{
	static uint8_t buf[65536];
	size_t sent, got = 0;
	struct link l;
	ssize_t n = -1;

	link_open(&l);
	sent = fill(l.fd);
	tp_shutdown(&l.c);
	for (int i = 0; i < 10; i++) {
		event_base_loop(l.base, EVLOOP_NONBLOCK);
		usleep(2000);
	}
	ck_assert_int_eq(tcp_state(l.fd), TCP_ESTABLISHED);
	ck_assert_int_eq(fcntl(l.peer, F_SETFL, O_NONBLOCK), 0);
	for (int i = 0; i < 5000 && n != 0; i++) {
		while ((n = read(l.peer, buf, sizeof(buf))) > 0)
			got += (size_t)n;
		event_base_loop(l.base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
	ck_assert_msg(n == 0, "no end of the stream after %zu octets", got);
	ck_assert_uint_eq(got, sent);
	tp_free(&l.c);
	link_release(&l);
}
END_TEST

/*
 * A peer that takes nothing more (stopped, or gone without a word) holds
 * the close for TP_LINGER_STALL_MS, not for ever.
 */
START_TEST(a_peer_that_takes_nothing_holds_the_close_briefly)
{
	struct timespec a, b;
	struct link l;
	long ms;

	link_open(&l);
	fill(l.fd);
	tp_shutdown(&l.c);
	clock_gettime(CLOCK_MONOTONIC, &a);
	tp_linger(&l.c);
	clock_gettime(CLOCK_MONOTONIC, &b);
	tp_free(&l.c);
	ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
	ck_assert_int_ge(ms, TP_LINGER_STALL_MS);
	ck_assert_int_lt(ms, 3 * TP_LINGER_STALL_MS);
	link_release(&l);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("transport");
	TCase *tc = tcase_create("reads");

	tcase_add_test(tc,
		       payload_after_a_large_frames_last_octets_lands_in_place);
	tcase_add_test(tc, payload_after_a_split_length_lands_in_place);
	tcase_add_test(tc, small_frames_behind_a_large_one_come_many_to_a_read);
	tcase_add_test(tc, small_frames_come_through_the_buffer_whole);
	tcase_add_test(tc, reads_with_data_are_counted_per_thread);
	tcase_add_test(tc, frames_without_a_place_come_several_whole_to_a_read);
	suite_add_tcase(s, tc);
	tc = tcase_create("writes");
	tcase_add_test(tc, a_polled_connection_sends_at_its_polls_only);
	tcase_add_test(tc, writes_carry_one_gso_packet_with_jumbo_frames);
	tcase_add_test(tc, a_message_amid_a_stream_leaves_the_acks_prompt);
	tcase_add_test(tc, replies_to_short_requests_are_left_to_the_kernel);
	suite_add_tcase(s, tc);
	tc = tcase_create("closing");
	tcase_add_test(tc,
		       a_closed_connection_delivers_what_the_peer_has_not_acknowledged);
	tcase_add_test(tc, a_peer_that_takes_nothing_holds_the_close_briefly);
	tcase_add_test(tc, a_send_that_meets_a_reset_comes_after_what_the_peer_sent);
	tcase_add_test(tc, the_fin_waits_until_the_data_before_it_are_acknowledged);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(suite());
}
