// SPDX-License-Identifier: MIT
/*
 * One host of a network test in which peers die: it listens, connects to
 * the peers it is given, and on every connection runs verified rounds of
 * a Send, an RDMA Write and an RDMA Read, until the test's script ends it
 * with SIGTERM.  The script, not the peer, decides when a link dies
 * (test/dead_peer.sh, test/cluster.sh); this program reports what each
 * connection saw, with CLOCK_MONOTONIC times in milliseconds so that the
 * script can measure detection against the moment it dropped the link:
 *
 *   MS up PEER                   ESTABLISHED
 *   MS verified PEER N           N rounds verified (at 1, 10, 100, ...)
 *   MS wc PEER STATUS OPCODE     the first completion of each error status
 *   MS end PEER EVENT STATUS WORDS  the final CM event (IW_CM_EVENT_
 *                                   without the prefix), its status
 *   MS summary PEER ok=N retry=N flush=N other=N rounds=N
 *
 * On SIGTERM (or, with --exit-on-end, once every connection has ended) it
 * checks that every work request of an ended connection completed
 * exactly once, prints the summaries and exits 0, or 1 when something
 * failed (a duplicate or missing completion, data that does not verify,
 * a Terminate).
 *
 *   dead_peer [options] LISTEN_ADDR PORT [PEER_ADDR:PORT...]
 *   dead_peer now          prints CLOCK_MONOTONIC in milliseconds
 *
 *   --ack-ms N             the QPs' ACK timeout (iw_set_qp_timeouts)
 *   --keepalive I,V,C      keepalive idle, interval (s) and probe count
 *   --window N             rounds in flight per connection (default 1)
 *   --gap-ms N             pause between rounds (default 0)
 *   --idle                 one verified round, then nothing
 *   --size N               octets of each Write and Read (default 262144)
 *   --exit-on-end          exit once every connection has ended
 *   --markers, --crc       ask for MPA markers, CRC (RFC 5044)
 *   --start-at MS          connect at that CLOCK_MONOTONIC time, not at once
 *
 * SIGUSR1 prints the summaries of the moment.
 */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <iwarp/iwarp.h>

#define MAX_CONNS 32
#define RECVS 64	      /* receives posted per connection */
#define SEND_LEN 16384	      /* a round's Send */
#define MAX_SIZE (1u << 20)   /* a Write or Read at most */
#define MAX_WINDOW 8
#define SLOTS (RECVS + 3 * MAX_WINDOW + 1)
#define LIFETIME_S 300 /* longer than any test of it runs */
#define MAGIC_ADV 0x41445631u /* "ADV1": where the peer may Write and Read */
#define MAGIC_DAT 0x44415431u /* "DAT1": a round's Send */

/*
 * Per connection: [0, MAX_SIZE) the peer's target; then our source, the
 * Read sinks (one per round in flight), the Sends' buffers (likewise),
 * the advertisement and the receive buffers.
 */
#define OFF_SRC MAX_SIZE
#define OFF_SINK (2 * MAX_SIZE)
#define OFF_SENDS (3 * MAX_SIZE)
#define OFF_ADV (OFF_SENDS + MAX_WINDOW * SEND_LEN)
#define OFF_RECV (OFF_ADV + 64)
#define BUF_LEN (OFF_RECV + RECVS * SEND_LEN)

struct conn {
	char name[80];
	struct iw_cm_id *id;
	struct iw_qp *qp;
	uint8_t *buf;
	struct iw_mr *mr;
	bool up, ended, adv_in;
	uint64_t raddr;
	uint32_t rkey;
	uint64_t next_wr; /* the number in the last wr_id made (wr_id()) */
	uint64_t slot[SLOTS]; /* work requests posted, not completed (0: free) */
	unsigned int in_flight;
	/* rounds: posted, and their three completions seen */
	uint64_t rounds_posted, rounds_done;
	unsigned int round_wcs[MAX_WINDOW];
	bool slot_busy[MAX_WINDOW];
	uint64_t slot_seq[MAX_WINDOW];
	unsigned long ok, retry, flush, other;
	bool seen[IW_WC_RETRY_EXC_ERR + 1];
	long long next_round_ms;
};

static struct {
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_cm_id *listen;
	struct conn *conns[MAX_CONNS];
	unsigned int n;
	struct iw_qp_timeouts to;
	unsigned int window, gap_ms, size;
	bool idle, exit_on_end, markers, crc;
	long long start_at;
	int failed;
} g = { .window = 1, .size = 262144 };

static volatile sig_atomic_t stop, report;

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	printf("%lld ", now_ms());
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void bad(struct conn *c, const char *what, int rc)
{
	say("FAIL %s %s%s%s", c ? c->name : "-", what, rc ? ": " : "",
	    rc ? iw_strerror(rc) : "");
	g.failed = 1;
}

/* The pattern of round @seq: octet i of it, never the same two rounds. */
static void fill(uint8_t *p, size_t len, uint64_t seq)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + seq * 13 + (i >> 9));
}

static bool check(const uint8_t *p, size_t len, uint64_t seq)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != (uint8_t)(i * 7 + seq * 13 + (i >> 9)))
			return false;
	return true;
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

enum kind { K_RECV = 1, K_ADV, K_SEND, K_WRITE, K_READ };

/* A new wr_id of @c: its kind, an index (receive buffer or round slot),
 * and a number never used before on the connection. */
static uint64_t wr_id(struct conn *c, enum kind k, unsigned int idx)
{
	return (++c->next_wr << 16) | ((uint64_t)idx << 8) | k;
}

/* Remembers @wr until its completion comes, once. */
static void track(struct conn *c, uint64_t wr)
{
	for (unsigned int i = 0; i < SLOTS; i++) {
		if (!c->slot[i]) {
			c->slot[i] = wr;
			c->in_flight++;
			return;
		}
	}
	bad(c, "more work in flight than slots", 0);
}

static bool untrack(struct conn *c, uint64_t wr)
{
	for (unsigned int i = 0; i < SLOTS; i++) {
		if (c->slot[i] == wr) {
			c->slot[i] = 0;
			c->in_flight--;
			return true;
		}
	}
	return false;
}

static int post_recv(struct conn *c, unsigned int i)
{
	struct iw_sge s = { (uintptr_t)(c->buf + OFF_RECV + i * SEND_LEN),
			    SEND_LEN, c->mr->lkey };
	struct iw_recv_wr r = { .wr_id = wr_id(c, K_RECV, i), .sg_list = &s,
				.num_sge = 1 };
	int rc;

	track(c, r.wr_id);
	rc = iw_post_recv(c->qp, &r, NULL);
	if (rc) {
		untrack(c, r.wr_id);
		bad(c, "post a receive", rc);
	}
	return rc;
}

static int post_send(struct conn *c, enum iw_wr_opcode op, uint64_t wr,
		     uint8_t *p, uint32_t len, uint64_t raddr)
{
	struct iw_sge s = { (uintptr_t)p, len, c->mr->lkey };
	struct iw_send_wr w = { .wr_id = wr, .sg_list = &s, .num_sge = 1,
				.opcode = op, .send_flags = IW_SEND_SIGNALED,
				.rdma = { raddr, c->rkey } };
	int rc;

	track(c, wr);
	rc = iw_post_send(c->qp, &w, NULL);
	if (rc) {
		untrack(c, wr);
		bad(c, "post", rc);
	}
	return rc;
}

/* Tells the peer where it may Write and Read: the first Send of each side. */
static void send_adv(struct conn *c)
{
	uint8_t *p = c->buf + OFF_ADV;
	uint64_t a = (uintptr_t)c->buf;

	put32(p, MAGIC_ADV);
	put32(p + 4, c->mr->rkey);
	memcpy(p + 8, &a, 8);
	post_send(c, IW_WR_SEND, wr_id(c, K_ADV, 0), p, 16, 0);
}

/*
 * A round in slot @k: a Send carrying the round's pattern, a Write of a
 * pattern into the peer's target, a Read of that back into the slot's
 * sink.  The stream keeps them in order, so the Read returns what the
 * Write placed.  With rounds in flight side by side their Writes carry
 * one pattern (round 0's) that every Read can check.
 */
static void post_round(struct conn *c, unsigned int k)
{
	uint64_t seq = c->rounds_posted++;
	uint8_t *m = c->buf + OFF_SENDS + k * SEND_LEN;
	uint8_t *sink = c->buf + OFF_SINK + k * g.size;

	c->round_wcs[k] = 0;
	if (g.window == 1 || seq == 0)
		fill(c->buf + OFF_SRC, g.size, g.window > 1 ? 0 : seq);
	put32(m, MAGIC_DAT);
	put32(m + 4, (uint32_t)seq);
	fill(m + 8, SEND_LEN - 8, seq);
	memset(sink, 0, g.size); /* no pattern: a Read that places nothing fails */
	if (post_send(c, IW_WR_SEND, wr_id(c, K_SEND, k), m, SEND_LEN, 0) ||
	    post_send(c, IW_WR_RDMA_WRITE, wr_id(c, K_WRITE, k),
		      c->buf + OFF_SRC, g.size, c->raddr) ||
	    post_send(c, IW_WR_RDMA_READ, wr_id(c, K_READ, k), sink, g.size,
		      c->raddr))
		return;
	c->slot_seq[k] = seq; /* for the check of its Read */
}

static void note_round(struct conn *c)
{
	uint64_t n = ++c->rounds_done;

	for (uint64_t p = 1; p <= n; p *= 10)
		if (p == n) {
			say("verified %s %llu", c->name, (unsigned long long)n);
			break;
		}
}

/* Rounds to start, as the window, the gap and --idle allow. */
static void drive(struct conn *c)
{
	long long now;

	if (!c->up || c->ended || !c->adv_in)
		return;
	if (g.idle && c->rounds_posted)
		return;
	now = now_ms();
	for (unsigned int k = 0; k < g.window; k++) {
		if (!c->slot_busy[k] && now >= c->next_round_ms) {
			c->slot_busy[k] = true;
			post_round(c, k);
			c->next_round_ms = now + g.gap_ms;
		}
	}
}

/* A receive: the peer's advertisement, or a round's Send to verify. */
static void got_recv(struct conn *c, const struct iw_wc *wc, unsigned int i)
{
	const uint8_t *p = c->buf + OFF_RECV + i * SEND_LEN;

	if (wc->byte_len == 16 && get32(p) == MAGIC_ADV) {
		c->rkey = get32(p + 4);
		memcpy(&c->raddr, p + 8, 8);
		c->adv_in = true;
	} else if (wc->byte_len != SEND_LEN || get32(p) != MAGIC_DAT ||
		   !check(p + 8, SEND_LEN - 8, get32(p + 4))) {
		bad(c, "a Send that does not verify", 0);
	}
	if (!c->ended)
		post_recv(c, i);
}

static void got_wc(struct conn *c, const struct iw_wc *wc)
{
	enum kind k = (enum kind)(wc->wr_id & 0xff);
	unsigned int idx = (unsigned int)(wc->wr_id >> 8) & 0xff;

	if (!untrack(c, wc->wr_id)) {
		bad(c, "a completion for nothing in flight (twice?)", 0);
		return;
	}
	if (wc->status != IW_WC_SUCCESS) {
		if (wc->status == IW_WC_RETRY_EXC_ERR)
			c->retry++;
		else if (wc->status == IW_WC_WR_FLUSH_ERR)
			c->flush++;
		else
			c->other++;
		if (wc->status <= IW_WC_RETRY_EXC_ERR && !c->seen[wc->status]) {
			c->seen[wc->status] = true;
			say("wc %s %s %s", c->name,
			    wc->status == IW_WC_RETRY_EXC_ERR ? "RETRY_EXC"
			    : wc->status == IW_WC_WR_FLUSH_ERR ? "FLUSH"
							       : "OTHER",
			    k == K_RECV ? "recv" : k == K_READ ? "read"
					: k == K_WRITE	  ? "write" : "send");
		}
		return;
	}
	c->ok++;
	switch (k) {
	case K_RECV:
		got_recv(c, wc, idx);
		break;
	case K_READ:
		if (!check(c->buf + OFF_SINK + idx * g.size, g.size,
			   g.window > 1 ? 0 : c->slot_seq[idx]))
			bad(c, "a Read that does not verify", 0);
		/* fall through */
	case K_SEND:
	case K_WRITE:
		if (++c->round_wcs[idx] == 3) {
			c->slot_busy[idx] = false;
			note_round(c);
		}
		break;
	default:
		break;
	}
}

static struct conn *conn_new(const char *name)
{
	struct iw_qp_init_attr qa = {
		.cap = { .max_send_wr = 3 * MAX_WINDOW + 1,
			 .max_recv_wr = RECVS, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct conn *c;
	int rc;

	if (g.n == MAX_CONNS)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->buf = malloc(BUF_LEN);
	c->mr = c->buf ? iw_reg_mr(g.pd, c->buf, BUF_LEN,
				   IW_ACCESS_LOCAL_WRITE |
					   IW_ACCESS_REMOTE_WRITE |
					   IW_ACCESS_REMOTE_READ)
		       : NULL;
	qa.send_cq = qa.recv_cq = g.cq;
	qa.qp_context = c;
	c->qp = c->mr ? iw_create_qp(g.pd, &qa) : NULL;
	if (!c->qp) {
		bad(c, "cannot register memory or create a QP", 0);
		return NULL;
	}
	if (g.to.comp_mask) {
		rc = iw_set_qp_timeouts(c->qp, &g.to);
		if (rc)
			bad(c, "iw_set_qp_timeouts", rc);
	}
	for (unsigned int i = 0; i < RECVS; i++)
		post_recv(c, i);
	g.conns[g.n++] = c;
	return c;
}

static struct conn *conn_of(struct iw_cm_id *id)
{
	for (unsigned int i = 0; i < g.n; i++)
		if (g.conns[i]->id == id)
			return g.conns[i];
	return NULL;
}

static void peer_name(struct iw_cm_id *id, char *out, size_t len)
{
	struct sockaddr_storage ss;
	char host[64] = "?";
	unsigned int port = 0;

	if (iw_get_peer_addr(id, &ss) == 0 && ss.ss_family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		port = ntohs(a->sin_port);
	}
	snprintf(out, len, "%s:%u", host, port);
}

static const char *event_name(enum iw_cm_event_type e)
{
	switch (e) {
	case IW_CM_EVENT_REJECTED:
		return "REJECTED";
	case IW_CM_EVENT_UNREACHABLE:
		return "UNREACHABLE";
	case IW_CM_EVENT_TIMEOUT:
		return "TIMEOUT";
	case IW_CM_EVENT_CONNECT_ERROR:
		return "CONNECT_ERROR";
	case IW_CM_EVENT_DISCONNECTED:
		return "DISCONNECTED";
	case IW_CM_EVENT_ERROR:
		return "ERROR";
	default:
		return "OTHER";
	}
}

static void cm_event(struct iw_cm_event *ev)
{
	struct conn *c = conn_of(ev->id);
	struct iw_conn_param cp = { .ird = MAX_WINDOW, .ord = MAX_WINDOW };
	char name[80];
	int rc;

	switch (ev->event) {
	case IW_CM_EVENT_CONNECT_REQUEST:
		peer_name(ev->id, name, sizeof(name));
		c = conn_new(name);
		if (!c) {
			iw_reject(ev->id, NULL, 0);
			break;
		}
		c->id = ev->id;
		rc = iw_accept(c->id, c->qp, &cp);
		if (rc)
			bad(c, "accept", rc);
		break;
	case IW_CM_EVENT_ESTABLISHED:
		if (!c)
			break;
		c->up = true;
		say("up %s", c->name);
		send_adv(c);
		break;
	default:
		if (!c || c->ended)
			break;
		c->ended = true;
		say("end %s %s %d %s", c->name, event_name(ev->event),
		    ev->status, ev->status ? iw_strerror(ev->status) : "");
		if (ev->terminate.valid)
			bad(c, "a Terminate", 0);
		break;
	}
}

/* The MPA options asked for (a listener's pass to what it accepts). */
static void mpa_opts(struct iw_cm_id *id)
{
	struct iw_mpa_opts o;
	int rc;

	iw_mpa_opts_default(&o);
	if (g.markers)
		o.markers = IW_MPA_ON;
	if (g.crc)
		o.crc = IW_MPA_ON;
	rc = iw_set_mpa_opts(id, &o);
	if (rc)
		bad(NULL, "iw_set_mpa_opts", rc);
}

static int connect_to(const char *peer)
{
	char host[64], *colon;
	struct iw_conn_param cp = { .ird = MAX_WINDOW, .ord = MAX_WINDOW };
	struct conn *c;
	int rc;

	snprintf(host, sizeof(host), "%s", peer);
	colon = strrchr(host, ':');
	if (!colon)
		return -EINVAL;
	*colon = '\0';
	c = conn_new(peer);
	if (!c)
		return -ENOMEM;
	c->id = iw_create_id(g.ch, c);
	if (!c->id)
		return -ENOMEM;
	mpa_opts(c->id);
	rc = iw_connect(c->id, host, colon + 1, c->qp, &cp);
	if (rc)
		bad(c, "connect", rc);
	return rc;
}

/*
 * Every work request of an ended connection has completed, once (a
 * second completion was caught as it came).
 */
static void summary(bool final)
{
	for (unsigned int i = 0; i < g.n; i++) {
		struct conn *c = g.conns[i];

		if (final && c->ended && c->in_flight)
			bad(c, "work requests that never completed", 0);
		say("summary %s ok=%lu retry=%lu flush=%lu other=%lu rounds=%llu%s",
		    c->name, c->ok, c->retry, c->flush, c->other,
		    (unsigned long long)c->rounds_done,
		    c->ended ? " ended" : "");
	}
}

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_usr1(int sig)
{
	(void)sig;
	report = 1;
}

static void teardown(void)
{
	for (unsigned int i = 0; i < g.n; i++) {
		struct conn *c = g.conns[i];

		if (c->id)
			iw_destroy_id(c->id);
		iw_destroy_qp(c->qp);
		iw_dereg_mr(c->mr);
		free(c->buf);
		free(c);
	}
	if (g.listen)
		iw_destroy_id(g.listen);
	iw_destroy_cq(g.cq);
	iw_destroy_cm_channel(g.ch);
	iw_dealloc_pd(g.pd);
	iw_close(g.ctx);
}

static bool all_ended(void)
{
	if (!g.n)
		return false;
	for (unsigned int i = 0; i < g.n; i++)
		if (!g.conns[i]->ended)
			return false;
	return true;
}

static int parse_keepalive(const char *s)
{
	unsigned int i, v, c;

	if (sscanf(s, "%u,%u,%u", &i, &v, &c) != 3)
		return -1;
	g.to.comp_mask |= IW_QP_TIMEOUTS_KEEPALIVE;
	g.to.keepalive_idle_s = i;
	g.to.keepalive_interval_s = v;
	g.to.keepalive_count = c;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "ack-ms", required_argument, NULL, 'a' },
		{ "keepalive", required_argument, NULL, 'k' },
		{ "window", required_argument, NULL, 'w' },
		{ "gap-ms", required_argument, NULL, 'g' },
		{ "size", required_argument, NULL, 's' },
		{ "idle", no_argument, NULL, 'i' },
		{ "exit-on-end", no_argument, NULL, 'e' },
		{ "start-at", required_argument, NULL, 't' },
		{ "markers", no_argument, NULL, 'm' },
		{ "crc", no_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	int opt, rc;

	if (argc == 2 && !strcmp(argv[1], "now")) {
		printf("%lld\n", now_ms());
		return 0;
	}
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'a':
			g.to.comp_mask |= IW_QP_TIMEOUTS_ACK;
			g.to.ack_timeout_ms = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'k':
			if (parse_keepalive(optarg))
				return 2;
			break;
		case 'w':
			g.window = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'g':
			g.gap_ms = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 's':
			g.size = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'i':
			g.idle = true;
			break;
		case 'e':
			g.exit_on_end = true;
			break;
		case 'm':
			g.markers = true;
			break;
		case 'c':
			g.crc = true;
			break;
		case 't':
			g.start_at = strtoll(optarg, NULL, 0);
			break;
		default:
			return 2;
		}
	}
	if (argc - optind < 2 || !g.window || g.window > MAX_WINDOW ||
	    !g.size || (uint64_t)g.size * g.window > MAX_SIZE) {
		fprintf(stderr, "usage: dead_peer [options] LISTEN_ADDR PORT "
				"[PEER_ADDR:PORT...]\n");
		return 2;
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	signal(SIGUSR1, on_usr1);
	/* a host its test lost (killed before its cleanup) ends by itself */
	alarm(LIFETIME_S);
	g.ctx = iw_open(NULL);
	g.ch = g.ctx ? iw_create_cm_channel(g.ctx) : NULL;
	g.pd = g.ctx ? iw_alloc_pd(g.ctx) : NULL;
	g.cq = g.ctx ? iw_create_cq(g.ctx, MAX_CONNS * (SLOTS + 1), NULL) : NULL;
	g.listen = g.ch ? iw_create_id(g.ch, NULL) : NULL;
	if (!g.listen) {
		fprintf(stderr, "dead_peer: out of resources\n");
		return 1;
	}
	mpa_opts(g.listen);
	rc = iw_listen(g.listen, argv[optind], argv[optind + 1], 16);
	if (rc) {
		fprintf(stderr, "dead_peer: listen: %s\n", iw_strerror(rc));
		return 1;
	}
	say("listening %s:%s", argv[optind], argv[optind + 1]);
	while (g.start_at > now_ms() && !stop)
		poll(NULL, 0, 10);
	for (int i = optind + 2; i < argc; i++)
		connect_to(argv[i]);
	while (!stop && !(g.exit_on_end && all_ended())) {
		struct pollfd f = { iw_cm_channel_fd(g.ch), POLLIN, 0 };
		struct iw_cm_event *ev;
		struct iw_wc wc[32];
		int n;

		while ((n = iw_poll_cq(g.cq, 32, wc)) > 0)
			for (int i = 0; i < n; i++)
				got_wc(wc[i].qp_context, &wc[i]);
		if (poll(&f, 1, 1) > 0 && iw_get_cm_event(g.ch, &ev) == 0) {
			cm_event(ev);
			iw_ack_cm_event(ev);
		}
		for (unsigned int i = 0; i < g.n; i++)
			drive(g.conns[i]);
		if (report) {
			report = 0;
			summary(false);
		}
	}
	/* what the last events flushed */
	for (int i = 0; i < 10; i++) {
		struct iw_wc wc[32];
		int n;

		while ((n = iw_poll_cq(g.cq, 32, wc)) > 0)
			for (int j = 0; j < n; j++)
				got_wc(wc[j].qp_context, &wc[j]);
		poll(NULL, 0, 10);
	}
	summary(true);
	teardown();
	return g.failed;
}
