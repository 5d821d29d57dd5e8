// SPDX-License-Identifier: MIT
/*
 * One end of a test of libfabric's own API over libiwarp (run under
 * iwarp-run by compat_fabric_api.sh, each end in a network namespace of
 * its own, since libfabric skips loopback interfaces):
 *
 *   fabric_peer msg-server ADDR PORT     MSG endpoints through the verbs
 *   fabric_peer msg-client ADDR PORT     provider: a rejected connection,
 *       an accepted one, Sends of 0 octets to 4 MiB echoed back, RDMA
 *       Write and Read, and a shutdown the server sees on its event queue.
 *   fabric_peer rdm SELF ADDR:PORT...    RDM endpoints through ofi_rxm,
 *       every peer sending to every other at the same moment (so that
 *       connections are made on demand, from both ends at once): tagged
 *       messages of 0 octets to 4 MiB, one matched through an ignore
 *       mask, tagged and untagged injects, untagged messages, and RDMA
 *       Write and Read into each peer's window.
 *   fabric_peer connect-error ADDR PORT  a connection nobody accepts
 *       (refused, or unreachable) ends in an error event, not a hang.
 *   fabric_peer msg-victim|msg-survivor ADDR PORT  a peer killed in the
 *       middle of traffic: the survivor's work completes with an error
 *       and its event queue reports the end of the connection.
 *
 * Every octet is checked, every operation must complete exactly once,
 * every wait is bounded: a failure prints what and exits 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#define WAIT_MS 30000
#define MAX_LEN (4u << 20)
#define MAX_PEERS 4
#define WINDOW_SLICE (256u << 10)

static const char *role = "fabric_peer";

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void ok(int rc, const char *what)
{
	if (rc)
		die("%s: %s (%d)", what, fi_strerror(rc < 0 ? -rc : rc), rc);
}

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* The octets of message @seed, @len long: no two messages alike. */
static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

static void check(const uint8_t *p, size_t len, uint32_t seed, const char *what)
{
	static uint8_t *want;

	if (!want && !(want = malloc(MAX_LEN)))
		die("out of memory");
	fill(want, len, seed);
	for (size_t i = 0; i < len; i++)
		if (p[i] != want[i])
			die("%s: octet %zu of %zu is 0x%02x, not 0x%02x", what, i,
			    len, p[i], want[i]);
}

/* ---- operations and their completions ------------------------------- */

/* An operation's context: completed once, or the test fails. */
struct op {
	struct fi_context2 ctx; /* first: what the provider is given */
	const char *what;
	int done;
	int err; /* the error completion's, 0 for success */
	size_t len;
	uint64_t tag, data, flags;
};

struct ends {
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fid_av *av;
	struct fi_info *info;
	bool sread; /* wait in fi_cq_sread() rather than poll */
	bool tagged; /* the CQ's entries are fi_cq_tagged_entry (RDM) */
	unsigned long completions;
};

static void completed(struct ends *e, struct op *o, int err, size_t len,
		      uint64_t tag, uint64_t flags)
{
	if (!o)
		die("a completion without its context");
	if (o->done++)
		die("%s completed twice", o->what);
	o->err = err;
	o->len = len;
	o->tag = tag;
	o->flags = flags;
	e->completions++;
}

/* Takes what the CQ has (waits up to @ms in fi_cq_sread() if asked). */
static int reap(struct ends *e, int ms, bool errors_ok)
{
	struct fi_cq_tagged_entry c[8];
	struct fi_cq_data_entry d[8];
	void *into = e->tagged ? (void *)c : (void *)d;
	ssize_t n;

	n = e->sread && ms ? fi_cq_sread(e->cq, into, 8, NULL, ms)
			   : fi_cq_read(e->cq, into, 8);
	if (n == -FI_EAGAIN || n == -FI_ETIMEDOUT)
		return 0;
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };

		if (fi_cq_readerr(e->cq, &err, 0) != 1)
			die("fi_cq_readerr failed");
		if (!errors_ok)
			die("%s failed: %s (provider: %d)",
			    err.op_context ? ((struct op *)err.op_context)->what
					   : "an operation",
			    fi_strerror(err.err), err.prov_errno);
		completed(e, err.op_context, err.err, err.len, err.tag,
			  err.flags);
		return 1;
	}
	if (n < 0)
		ok((int)n, "fi_cq_read");
	for (ssize_t i = 0; i < n; i++)
		if (e->tagged)
			completed(e, c[i].op_context, 0, c[i].len, c[i].tag,
				  c[i].flags);
		else
			completed(e, d[i].op_context, 0, d[i].len, 0,
				  d[i].flags);
	return (int)n;
}

static void wait_op(struct ends *e, struct op *o)
{
	long long end = now_ms() + WAIT_MS;

	while (!o->done) {
		if (now_ms() > end)
			die("%s: no completion in %d ms", o->what, WAIT_MS);
		reap(e, 100, false);
	}
	if (o->err)
		die("%s: %s", o->what, fi_strerror(o->err));
}

/* Posts with @post until it takes the request (bounded). */
#define POST(e, what, post)                                                \
	do {                                                               \
		long long end_ = now_ms() + WAIT_MS;                       \
		ssize_t rc_;                                               \
		while ((rc_ = (post)) == -FI_EAGAIN) {                     \
			if (now_ms() > end_)                               \
				die("%s: refused for %d ms", what, WAIT_MS); \
			reap(e, 0, false);                                 \
		}                                                          \
		ok((int)rc_, what);                                        \
	} while (0)

static struct fi_info *hints_for(enum fi_ep_type type, const char *prov)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		die("fi_allocinfo");
	h->ep_attr->type = type;
	h->caps = FI_MSG | FI_RMA | (type == FI_EP_RDM ? FI_TAGGED : 0);
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->addr_format = FI_SOCKADDR_IN;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->fabric_attr->prov_name = strdup(prov);
	return h;
}

static struct fid_mr *reg(struct ends *e, void *buf, size_t len, uint64_t access)
{
	struct fid_mr *mr;

	ok(fi_mr_reg(e->domain, buf, len, access, 0, 0, 0, &mr, NULL),
	   "fi_mr_reg");
	return mr;
}

static void *xalloc(size_t len)
{
	void *p = calloc(1, len ? len : 1);

	if (!p)
		die("out of memory");
	return p;
}

static const size_t sizes[] = { 0, 1, 7, 64, 1000, 4096, 65536, 65537,
				1u << 20, MAX_LEN };
#define N_SIZES (sizeof(sizes) / sizeof(sizes[0]))

/* ---- MSG endpoints: connect, reject, data, RMA, shutdown -------------- */

/* The next event on the EQ within WAIT_MS; its error, if one, in *err. */
static uint32_t eq_event(struct fid_eq *eq, struct fi_eq_cm_entry *cm,
			 size_t cm_len, int *err)
{
	uint32_t ev = 0;
	ssize_t n = fi_eq_sread(eq, &ev, cm, cm_len, WAIT_MS, 0);

	*err = 0;
	if (n == -FI_EAVAIL) {
		struct fi_eq_err_entry ee = { 0 };

		if (fi_eq_readerr(eq, &ee, 0) < 0)
			die("fi_eq_readerr failed");
		*err = ee.err ? ee.err : FI_EOTHER;
		return 0;
	}
	if (n == -FI_EAGAIN || n == -FI_ETIMEDOUT)
		die("no event on the EQ in %d ms", WAIT_MS);
	if (n < 0)
		ok((int)n, "fi_eq_sread");
	return ev;
}

static void expect_event(struct fid_eq *eq, uint32_t want,
			 struct fi_eq_cm_entry *cm, size_t len)
{
	int err;
	uint32_t ev = eq_event(eq, cm, len, &err);

	if (err)
		die("waiting for event %u: error %s", want, fi_strerror(err));
	if (ev != want)
		die("event %u, not %u", ev, want);
}

struct rma_key {
	uint64_t addr, key;
};

static void open_ep(struct ends *e, struct fi_info *info)
{
	struct fi_cq_attr ca = { .format = e->tagged ? FI_CQ_FORMAT_TAGGED
						     : FI_CQ_FORMAT_DATA,
				 .wait_obj = e->sread ? FI_WAIT_UNSPEC
						      : FI_WAIT_NONE };

	ok(fi_endpoint(e->domain, info, &e->ep, NULL), "fi_endpoint");
	if (!e->cq)
		ok(fi_cq_open(e->domain, &ca, &e->cq, NULL), "fi_cq_open");
	if (e->eq)
		ok(fi_ep_bind(e->ep, &e->eq->fid, 0), "fi_ep_bind(eq)");
	if (e->av)
		ok(fi_ep_bind(e->ep, &e->av->fid, 0), "fi_ep_bind(av)");
	ok(fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV),
	   "fi_ep_bind(cq)");
	ok(fi_enable(e->ep), "fi_enable");
}

static void open_fabric(struct ends *e, struct fi_info *info, bool with_eq)
{
	struct fi_eq_attr ea = { .wait_obj = FI_WAIT_UNSPEC };

	ok(fi_fabric(info->fabric_attr, &e->fabric, NULL), "fi_fabric");
	if (with_eq)
		ok(fi_eq_open(e->fabric, &ea, &e->eq, NULL), "fi_eq_open");
}

static void close_all(struct ends *e)
{
	if (e->ep)
		ok(fi_close(&e->ep->fid), "fi_close(ep)");
	if (e->av)
		ok(fi_close(&e->av->fid), "fi_close(av)");
	if (e->cq)
		ok(fi_close(&e->cq->fid), "fi_close(cq)");
	if (e->domain)
		ok(fi_close(&e->domain->fid), "fi_close(domain)");
	if (e->eq)
		ok(fi_close(&e->eq->fid), "fi_close(eq)");
	if (e->fabric)
		ok(fi_close(&e->fabric->fid), "fi_close(fabric)");
	fi_freeinfo(e->info);
}

static int msg_server(const char *addr, const char *port)
{
	struct fi_info *hints = hints_for(FI_EP_MSG, "verbs"), *req;
	struct {
		struct fi_eq_cm_entry cm;
		uint8_t pd[64];
	} ev;
	struct ends e = { .sread = true };
	struct fid_pep *pep;
	struct fid_mr *mr, *wmr;
	struct rma_key key;
	/* two buffers: iWARP drops a message with no receive posted, so the
	 * next receive is posted before the echo goes out */
	uint8_t *bufs = xalloc(2 * MAX_LEN);
	uint8_t *window = xalloc(MAX_LEN);
	struct op rx[2];
	int cur = 0;

	ok(fi_getinfo(FI_VERSION(1, 11), addr, port, FI_SOURCE, hints,
		      &e.info), "fi_getinfo(server)");
	open_fabric(&e, e.info, true);
	ok(fi_passive_ep(e.fabric, e.info, &pep, NULL), "fi_passive_ep");
	ok(fi_pep_bind(pep, &e.eq->fid, 0), "fi_pep_bind");
	ok(fi_listen(pep), "fi_listen");
	printf("listening\n");
	fflush(stdout);

	/* the first request is refused, with a word for the client */
	expect_event(e.eq, FI_CONNREQ, &ev.cm, sizeof(ev));
	ok(fi_reject(pep, ev.cm.info->handle, "busy", 4), "fi_reject");
	fi_freeinfo(ev.cm.info);

	/* the second is accepted, a receive posted first */
	expect_event(e.eq, FI_CONNREQ, &ev.cm, sizeof(ev));
	req = ev.cm.info;
	ok(fi_domain(e.fabric, req, &e.domain, NULL), "fi_domain");
	open_ep(&e, req);
	mr = reg(&e, bufs, 2 * MAX_LEN, FI_SEND | FI_RECV | FI_READ | FI_WRITE);
	wmr = reg(&e, window, MAX_LEN, FI_REMOTE_READ | FI_REMOTE_WRITE);
	rx[0] = (struct op){ .what = "first receive" };
	POST(&e, "fi_recv", fi_recv(e.ep, bufs, MAX_LEN, fi_mr_desc(mr), 0,
				    &rx[0]));
	ok(fi_accept(e.ep, NULL, 0), "fi_accept");
	expect_event(e.eq, FI_CONNECTED, &ev.cm, sizeof(ev));
	fi_freeinfo(req);

	/* every size: received, checked, sent back */
	for (size_t k = 0; k < N_SIZES; k++) {
		uint8_t *buf = bufs + (size_t)cur * MAX_LEN;
		struct op echo = { .what = "echo" };

		wait_op(&e, &rx[cur]);
		if (rx[cur].len != sizes[k])
			die("message %zu: %zu octets, not %zu", k, rx[cur].len,
			    sizes[k]);
		check(buf, sizes[k], (uint32_t)k, "a message to the server");
		rx[cur ^ 1] = (struct op){ .what = "receive" };
		POST(&e, "fi_recv",
		     fi_recv(e.ep, bufs + (size_t)(cur ^ 1) * MAX_LEN, MAX_LEN,
			     fi_mr_desc(mr), 0, &rx[cur ^ 1]));
		POST(&e, "fi_send", fi_send(e.ep, buf, sizes[k], fi_mr_desc(mr),
					    0, &echo));
		wait_op(&e, &echo);
		cur ^= 1;
	}
	/* the window for the client's RMA, its key in a message */
	fill(window, MAX_LEN, 1000);
	key = (struct rma_key){ (uintptr_t)window, fi_mr_key(wmr) };
	{
		struct op s = { .what = "key" };

		uint8_t *free_buf = bufs + (size_t)(cur ^ 1) * MAX_LEN;

		memcpy(free_buf, &key, sizeof(key));
		POST(&e, "fi_send", fi_send(e.ep, free_buf, sizeof(key),
					    fi_mr_desc(mr), 0, &s));
		wait_op(&e, &s);
	}
	/* "written": the client has read the window and written it anew */
	wait_op(&e, &rx[cur]);
	check(window, MAX_LEN, 2000, "the window the client wrote");
	/* the client shuts down: the EQ says so */
	expect_event(e.eq, FI_SHUTDOWN, &ev.cm, sizeof(ev));
	/* what was posted and not consumed completes with an error or not
	 * at all; nothing completes twice */
	while (reap(&e, 0, true))
		;
	ok(fi_close(&mr->fid), "fi_close(mr)");
	ok(fi_close(&wmr->fid), "fi_close(window)");
	ok(fi_close(&pep->fid), "fi_close(pep)");
	close_all(&e);
	fi_freeinfo(hints);
	free(bufs);
	free(window);
	printf("msg-server: %zu sizes echoed, window checked, shutdown seen\n",
	       N_SIZES);
	return 0;
}

static int msg_client(const char *addr, const char *port)
{
	struct fi_info *hints = hints_for(FI_EP_MSG, "verbs");
	struct {
		struct fi_eq_cm_entry cm;
		uint8_t pd[64];
	} ev;
	struct ends e = { .sread = false };
	uint8_t *sbuf = xalloc(MAX_LEN), *rbuf = xalloc(MAX_LEN);
	uint8_t kbuf[sizeof(struct rma_key)];
	struct fid_mr *smr, *rmr, *kmr;
	struct rma_key key;
	struct op s, r, kr = { .what = "key receive" };
	uint32_t got;
	int err;

	ok(fi_getinfo(FI_VERSION(1, 11), addr, port, 0, hints, &e.info),
	   "fi_getinfo(client)");
	open_fabric(&e, e.info, true);
	ok(fi_domain(e.fabric, e.info, &e.domain, NULL), "fi_domain");

	/* refused: an error event, FI_ECONNREFUSED */
	open_ep(&e, e.info);
	ok(fi_connect(e.ep, e.info->dest_addr, NULL, 0), "fi_connect");
	got = eq_event(e.eq, &ev.cm, sizeof(ev), &err);
	if (err != FI_ECONNREFUSED)
		die("a rejected connection: event %u, error %d (%s), not FI_ECONNREFUSED",
		    got, err, fi_strerror(err));
	ok(fi_close(&e.ep->fid), "fi_close(refused ep)");
	e.ep = NULL;

	open_ep(&e, e.info);
	ok(fi_connect(e.ep, e.info->dest_addr, NULL, 0), "fi_connect");
	expect_event(e.eq, FI_CONNECTED, &ev.cm, sizeof(ev));
	smr = reg(&e, sbuf, MAX_LEN, FI_SEND | FI_RECV | FI_READ | FI_WRITE);
	rmr = reg(&e, rbuf, MAX_LEN, FI_SEND | FI_RECV | FI_READ | FI_WRITE);
	kmr = reg(&e, kbuf, sizeof(kbuf), FI_RECV);
	for (size_t k = 0; k < N_SIZES; k++) {
		fill(sbuf, sizes[k], (uint32_t)k);
		memset(rbuf, 0, sizes[k] + 1 < MAX_LEN ? sizes[k] + 1 : MAX_LEN);
		r = (struct op){ .what = "echo receive" };
		s = (struct op){ .what = "send" };
		POST(&e, "fi_recv", fi_recv(e.ep, rbuf, MAX_LEN, fi_mr_desc(rmr),
					    0, &r));
		/* the key comes right behind the last echo */
		if (k == N_SIZES - 1)
			POST(&e, "fi_recv",
			     fi_recv(e.ep, kbuf, sizeof(key), fi_mr_desc(kmr), 0,
				     &kr));
		POST(&e, "fi_send", fi_send(e.ep, sbuf, sizes[k],
					    fi_mr_desc(smr), 0, &s));
		wait_op(&e, &s);
		wait_op(&e, &r);
		if (r.len != sizes[k])
			die("echo %zu: %zu octets, not %zu", k, r.len, sizes[k]);
		check(rbuf, sizes[k], (uint32_t)k, "an echo");
	}
	/* RMA: read the server's window, then write it anew */
	wait_op(&e, &kr);
	if (kr.len != sizeof(key))
		die("the key message has %zu octets", kr.len);
	memcpy(&key, kbuf, sizeof(key));
	s = (struct op){ .what = "fi_read" };
	POST(&e, "fi_read", fi_read(e.ep, rbuf, MAX_LEN, fi_mr_desc(rmr), 0,
				    key.addr, key.key, &s));
	wait_op(&e, &s);
	check(rbuf, MAX_LEN, 1000, "what fi_read brought");
	fill(sbuf, MAX_LEN, 2000);
	s = (struct op){ .what = "fi_write" };
	POST(&e, "fi_write", fi_write(e.ep, sbuf, MAX_LEN, fi_mr_desc(smr), 0,
				      key.addr, key.key, &s));
	wait_op(&e, &s);
	/* a Send behind the Write: the Write has been placed when it lands */
	s = (struct op){ .what = "written" };
	POST(&e, "fi_send", fi_send(e.ep, sbuf, 0, fi_mr_desc(smr), 0, &s));
	wait_op(&e, &s);
	ok(fi_shutdown(e.ep, 0), "fi_shutdown");
	while (reap(&e, 0, true))
		;
	ok(fi_close(&smr->fid), "fi_close(mr)");
	ok(fi_close(&rmr->fid), "fi_close(mr)");
	ok(fi_close(&kmr->fid), "fi_close(mr)");
	close_all(&e);
	fi_freeinfo(hints);
	free(sbuf);
	free(rbuf);
	printf("msg-client: refused, then %zu sizes echoed, RMA read and write\n",
	       N_SIZES);
	return 0;
}

/* A connection nobody accepts ends in an error event. */
static int connect_error(const char *addr, const char *port)
{
	struct fi_info *hints = hints_for(FI_EP_MSG, "verbs");
	struct fi_eq_cm_entry cm;
	struct ends e = { 0 };
	long long t0 = now_ms();
	uint32_t ev;
	int err;

	ok(fi_getinfo(FI_VERSION(1, 11), addr, port, 0, hints, &e.info),
	   "fi_getinfo");
	open_fabric(&e, e.info, true);
	ok(fi_domain(e.fabric, e.info, &e.domain, NULL), "fi_domain");
	open_ep(&e, e.info);
	ok(fi_connect(e.ep, e.info->dest_addr, NULL, 0), "fi_connect");
	ev = eq_event(e.eq, &cm, sizeof(cm), &err);
	if (!err)
		die("connecting to %s:%s: event %u, not an error", addr, port, ev);
	close_all(&e);
	fi_freeinfo(hints);
	printf("connect-error: %s after %lld ms\n", fi_strerror(err),
	       now_ms() - t0);
	return 0;
}

/* ---- RDM endpoints over ofi_rxm: several peers at once ---------------- */

struct peer {
	struct sockaddr_in sin;
	fi_addr_t fa;
};

static void parse_peer(const char *s, struct peer *p)
{
	char host[64];
	const char *colon = strrchr(s, ':');

	if (!colon || colon - s >= (long)sizeof(host))
		die("bad peer %s", s);
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	memset(&p->sin, 0, sizeof(p->sin));
	p->sin.sin_family = AF_INET;
	p->sin.sin_port = htons((uint16_t)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &p->sin.sin_addr) != 1)
		die("bad address %s", host);
}

#define TAG(from, what) (((uint64_t)(from) << 48) | ((uint64_t)(what) << 8))
#define T_MASKED 0xff /* matched through an ignore mask */
#define T_INJECT 0xfe
#define T_KEY 0xfd
#define T_DONE 0xfc
#define UNTAGGED_HDR 16

/* The seed of message @k from peer @i to peer @j. */
static uint32_t seed_of(int i, int j, unsigned int k)
{
	return (uint32_t)(i * 100000 + j * 1000) + k;
}

static void rdm_open(struct ends *e, int self, struct peer *peers, int n)
{
	struct fi_info *hints = hints_for(FI_EP_RDM, "verbs;ofi_rxm");
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	char host[32], port[8];

	inet_ntop(AF_INET, &peers[self].sin.sin_addr, host, sizeof(host));
	snprintf(port, sizeof(port), "%u", ntohs(peers[self].sin.sin_port));
	ok(fi_getinfo(FI_VERSION(1, 11), host, port, FI_SOURCE, hints,
		      &e->info), "fi_getinfo(rdm)");
	fi_freeinfo(hints);
	open_fabric(e, e->info, false);
	ok(fi_domain(e->fabric, e->info, &e->domain, NULL), "fi_domain");
	ok(fi_av_open(e->domain, &aa, &e->av, NULL), "fi_av_open");
	open_ep(e, e->info);
	for (int j = 0; j < n; j++)
		if (j != self &&
		    fi_av_insert(e->av, &peers[j].sin, 1, &peers[j].fa, 0,
				 NULL) != 1)
			die("fi_av_insert of peer %d", j);
}

static int rdm(int self, struct peer *peers, int n)
{
	struct ends e = { .sread = self == 0, .tagged = true };
	size_t inject = 0;
	const int others = n - 1;
	const size_t n_tagged = N_SIZES + 2; /* sizes, masked, inject */
	struct op *tsend, *trecv, *usend, *urecv, *rma;
	uint8_t *sbuf, *tbuf, *ubuf, *window, *rbuf;
	struct fid_mr *smr, *tmr, *umr, *wmr, *rmr;
	struct rma_key keys[MAX_PEERS], mine;
	const size_t ulen = (1u << 20) + UNTAGGED_HDR;
	static const size_t usizes[] = { 0, 100, 4096, 65536, 1u << 20 };
	const size_t n_untagged = sizeof(usizes) / sizeof(usizes[0]) + 1;
	unsigned int slot;

	rdm_open(&e, self, peers, n);
	inject = e.info->tx_attr->inject_size;
	if (inject < UNTAGGED_HDR + 8)
		die("inject size %zu", inject);
	sbuf = xalloc(MAX_LEN * 2);
	tbuf = xalloc((size_t)others * (n_tagged * 64 + MAX_LEN + (2u << 20)));
	ubuf = xalloc((size_t)others * n_untagged * ulen);
	window = xalloc((size_t)MAX_PEERS * WINDOW_SLICE);
	rbuf = xalloc(WINDOW_SLICE);
	smr = reg(&e, sbuf, MAX_LEN * 2, FI_SEND | FI_READ | FI_WRITE);
	tmr = reg(&e, tbuf,
		  (size_t)others * (n_tagged * 64 + MAX_LEN + (2u << 20)),
		  FI_RECV);
	umr = reg(&e, ubuf, (size_t)others * n_untagged * ulen, FI_RECV);
	wmr = reg(&e, window, (size_t)MAX_PEERS * WINDOW_SLICE,
		  FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SEND | FI_RECV);
	rmr = reg(&e, rbuf, WINDOW_SLICE, FI_READ | FI_RECV);
	tsend = xalloc(sizeof(*tsend) * (size_t)n * n_tagged);
	trecv = xalloc(sizeof(*trecv) * (size_t)n * n_tagged);
	usend = xalloc(sizeof(*usend) * (size_t)n * n_untagged);
	urecv = xalloc(sizeof(*urecv) * (size_t)n * n_untagged);
	rma = xalloc(sizeof(*rma) * (size_t)n * 4);

	/* receives first: tagged by sender and message, untagged any */
	slot = 0;
	for (int j = 0; j < n; j++) {
		uint8_t *at;

		if (j == self)
			continue;
		at = tbuf + (size_t)slot++ * (n_tagged * 64 + MAX_LEN + (2u << 20));
		for (unsigned int k = 0; k < N_SIZES; k++) {
			struct op *o = &trecv[j * n_tagged + k];
			size_t room = sizes[k] ? sizes[k] : 1;

			*o = (struct op){ .what = "tagged receive" };
			POST(&e, "fi_trecv",
			     fi_trecv(e.ep, at, sizes[k], fi_mr_desc(tmr),
				      FI_ADDR_UNSPEC, TAG(j, k), 0, o));
			at += room > 64 ? room : 64;
		}
		/* whatever the low 8 bits: the ignore mask leaves them out */
		trecv[j * n_tagged + N_SIZES] = (struct op){ .what = "masked receive" };
		POST(&e, "fi_trecv",
		     fi_trecv(e.ep, at, 64, fi_mr_desc(tmr), FI_ADDR_UNSPEC,
			      TAG(j, T_MASKED), 0xff,
			      &trecv[j * n_tagged + N_SIZES]));
		at += 64;
		trecv[j * n_tagged + N_SIZES + 1] = (struct op){ .what = "tagged inject receive" };
		POST(&e, "fi_trecv",
		     fi_trecv(e.ep, at, 64, fi_mr_desc(tmr), FI_ADDR_UNSPEC,
			      TAG(j, T_INJECT), 0,
			      &trecv[j * n_tagged + N_SIZES + 1]));
	}
	for (size_t u = 0; u < (size_t)others * n_untagged; u++) {
		urecv[u] = (struct op){ .what = "untagged receive" };
		POST(&e, "fi_recv", fi_recv(e.ep, ubuf + u * ulen, ulen,
					    fi_mr_desc(umr), FI_ADDR_UNSPEC,
					    &urecv[u]));
	}

	/* then to every peer at once: tagged, masked, injected, untagged */
	for (int j = 0; j < n; j++) {
		if (j == self)
			continue;
		for (unsigned int k = 0; k < N_SIZES; k++) {
			struct op *o = &tsend[j * n_tagged + k];
			uint8_t *src = sbuf;

			/* each message its own octets: wait before reusing */
			fill(src, sizes[k], seed_of(self, j, k));
			*o = (struct op){ .what = "fi_tsend" };
			POST(&e, "fi_tsend",
			     fi_tsend(e.ep, src, sizes[k], fi_mr_desc(smr),
				      peers[j].fa, TAG(self, k), o));
			wait_op(&e, o);
		}
		{
			uint8_t small[64];
			struct op *o = &tsend[j * n_tagged + N_SIZES];

			fill(sbuf, 40, seed_of(self, j, T_MASKED));
			*o = (struct op){ .what = "masked fi_tsend" };
			POST(&e, "fi_tsend",
			     fi_tsend(e.ep, sbuf, 40, fi_mr_desc(smr), peers[j].fa,
				      TAG(self, T_MASKED) | (uint64_t)(0x5a + self),
				      o));
			wait_op(&e, o);
			/* an inject: the buffer is free on return */
			fill(small, 24, seed_of(self, j, T_INJECT));
			POST(&e, "fi_tinject",
			     fi_tinject(e.ep, small, 24, peers[j].fa,
					TAG(self, T_INJECT)));
			memset(small, 0, sizeof(small));
		}
		for (unsigned int k = 0; k < n_untagged; k++) {
			size_t len = k < n_untagged - 1 ? usizes[k] : 8;
			uint32_t hdr[4] = { (uint32_t)self, k, (uint32_t)len, 0 };

			memcpy(sbuf, hdr, sizeof(hdr));
			fill(sbuf + UNTAGGED_HDR, len, seed_of(self, j, 50 + k));
			if (k == n_untagged - 1) {
				/* an untagged inject */
				POST(&e, "fi_inject",
				     fi_inject(e.ep, sbuf, UNTAGGED_HDR + len,
					       peers[j].fa));
				continue;
			}
			usend[j * n_untagged + k] = (struct op){ .what = "fi_send" };
			POST(&e, "fi_send",
			     fi_send(e.ep, sbuf, UNTAGGED_HDR + len,
				     fi_mr_desc(smr), peers[j].fa,
				     &usend[j * n_untagged + k]));
			wait_op(&e, &usend[j * n_untagged + k]);
		}
	}

	/* what came: tagged by sender and message, checked */
	for (int j = 0; j < n; j++) {
		if (j == self)
			continue;
		for (unsigned int k = 0; k < n_tagged; k++) {
			struct op *o = &trecv[j * n_tagged + k];

			wait_op(&e, o);
			if (k < N_SIZES && (o->len != sizes[k] || o->tag != TAG(j, k)))
				die("tagged %u from %d: %zu octets, tag %#llx", k, j,
				    o->len, (unsigned long long)o->tag);
		}
		if (trecv[j * n_tagged + N_SIZES].tag !=
		    (TAG(j, T_MASKED) | (uint64_t)(0x5a + j)))
			die("the masked receive matched tag %#llx",
			    (unsigned long long)trecv[j * n_tagged + N_SIZES].tag);
	}
	/* the tagged buffers' contents, in the order they were posted */
	slot = 0;
	for (int j = 0; j < n; j++) {
		uint8_t *at;

		if (j == self)
			continue;
		at = tbuf + (size_t)slot++ * (n_tagged * 64 + MAX_LEN + (2u << 20));
		for (unsigned int k = 0; k < N_SIZES; k++) {
			size_t room = sizes[k] ? sizes[k] : 1;

			check(at, sizes[k], seed_of(j, self, k), "a tagged message");
			at += room > 64 ? room : 64;
		}
		check(at, 40, seed_of(j, self, T_MASKED), "the masked message");
		at += 64;
		check(at, 24, seed_of(j, self, T_INJECT), "the tagged inject");
	}
	{
		unsigned int seen[MAX_PEERS] = { 0 };

		for (size_t u = 0; u < (size_t)others * n_untagged; u++) {
			uint32_t hdr[4];
			const uint8_t *m = ubuf + u * ulen;

			wait_op(&e, &urecv[u]);
			memcpy(hdr, m, sizeof(hdr));
			if (hdr[0] >= (uint32_t)n || hdr[0] == (uint32_t)self ||
			    urecv[u].len != UNTAGGED_HDR + hdr[2])
				die("an untagged message: sender %u, %zu octets",
				    hdr[0], urecv[u].len);
			/* one sender's messages come in the order sent */
			if (hdr[1] != seen[hdr[0]]++)
				die("untagged %u from %u out of order", hdr[1], hdr[0]);
			check(m + UNTAGGED_HDR, hdr[2],
			      seed_of((int)hdr[0], self, 50 + hdr[1]),
			      "an untagged message");
		}
	}

	/* RMA: keys out and in, then Write and Read into each peer's window */
	mine = (struct rma_key){ (uintptr_t)window, fi_mr_key(wmr) };
	for (int j = 0; j < n; j++) {
		if (j == self)
			continue;
		rma[j * 4] = (struct op){ .what = "key receive" };
		POST(&e, "fi_trecv",
		     fi_trecv(e.ep, &keys[j], sizeof(keys[j]), NULL,
			      FI_ADDR_UNSPEC, TAG(j, T_KEY), 0, &rma[j * 4]));
	}
	for (int j = 0; j < n; j++)
		if (j != self)
			POST(&e, "fi_tinject",
			     fi_tinject(e.ep, &mine, sizeof(mine), peers[j].fa,
					TAG(self, T_KEY)));
	for (int j = 0; j < n; j++) {
		if (j == self)
			continue;
		wait_op(&e, &rma[j * 4]);
		fill(sbuf, WINDOW_SLICE, seed_of(self, j, 90));
		rma[j * 4 + 1] = (struct op){ .what = "fi_write" };
		POST(&e, "fi_write",
		     fi_write(e.ep, sbuf, WINDOW_SLICE, fi_mr_desc(smr),
			      peers[j].fa,
			      keys[j].addr + (uint64_t)self * WINDOW_SLICE,
			      keys[j].key, &rma[j * 4 + 1]));
		wait_op(&e, &rma[j * 4 + 1]);
		memset(rbuf, 0, WINDOW_SLICE);
		rma[j * 4 + 2] = (struct op){ .what = "fi_read" };
		POST(&e, "fi_read",
		     fi_read(e.ep, rbuf, WINDOW_SLICE, fi_mr_desc(rmr),
			     peers[j].fa,
			     keys[j].addr + (uint64_t)self * WINDOW_SLICE,
			     keys[j].key, &rma[j * 4 + 2]));
		wait_op(&e, &rma[j * 4 + 2]);
		check(rbuf, WINDOW_SLICE, seed_of(self, j, 90),
		      "what fi_read brought back");
	}
	/* done: each peer has written into our window */
	for (int j = 0; j < n; j++) {
		if (j == self)
			continue;
		rma[j * 4 + 3] = (struct op){ .what = "done receive" };
		POST(&e, "fi_trecv",
		     fi_trecv(e.ep, rbuf, 0, NULL, FI_ADDR_UNSPEC, TAG(j, T_DONE),
			      0, &rma[j * 4 + 3]));
	}
	for (int j = 0; j < n; j++)
		if (j != self)
			POST(&e, "fi_tinject",
			     fi_tinject(e.ep, sbuf, 0, peers[j].fa,
					TAG(self, T_DONE)));
	for (int j = 0; j < n; j++) {
		if (j == self)
			continue;
		wait_op(&e, &rma[j * 4 + 3]);
		check(window + (size_t)j * WINDOW_SLICE, WINDOW_SLICE,
		      seed_of(j, self, 90), "what a peer wrote");
	}
	/* nothing more may complete */
	if (reap(&e, 0, false))
		die("a completion nobody asked for");
	ok(fi_close(&e.ep->fid), "fi_close(ep)");
	e.ep = NULL;
	ok(fi_close(&smr->fid), "fi_close(mr)");
	ok(fi_close(&tmr->fid), "fi_close(mr)");
	ok(fi_close(&umr->fid), "fi_close(mr)");
	ok(fi_close(&wmr->fid), "fi_close(mr)");
	ok(fi_close(&rmr->fid), "fi_close(mr)");
	close_all(&e);
	printf("rdm peer %d of %d: %lu completions, each once, all checked (%s)\n",
	       self, n, e.completions, e.sread ? "fi_cq_sread" : "fi_cq_read");
	free(sbuf);
	free(tbuf);
	free(ubuf);
	free(window);
	free(rbuf);
	free(tsend);
	free(trecv);
	free(usend);
	free(urecv);
	free(rma);
	return 0;
}

/*
 * A peer killed in the middle of traffic, on MSG endpoints: "msg-victim"
 * connects and sends back whatever it receives until it is killed;
 * "msg-survivor" accepts it and keeps a Send and a receive in flight.
 * Once the victim is gone, the survivor's work must complete with an
 * error, and its EQ report the connection's end, within WAIT_MS.
 */
static int msg_victim(const char *addr, const char *port)
{
	struct fi_info *hints = hints_for(FI_EP_MSG, "verbs");
	struct fi_eq_cm_entry cm;
	struct ends e = { 0 };
	uint8_t *buf = xalloc(65536);
	struct fid_mr *mr;

	ok(fi_getinfo(FI_VERSION(1, 11), addr, port, 0, hints, &e.info),
	   "fi_getinfo");
	open_fabric(&e, e.info, true);
	ok(fi_domain(e.fabric, e.info, &e.domain, NULL), "fi_domain");
	open_ep(&e, e.info);
	mr = reg(&e, buf, 65536, FI_SEND | FI_RECV);
	ok(fi_connect(e.ep, e.info->dest_addr, NULL, 0), "fi_connect");
	expect_event(e.eq, FI_CONNECTED, &cm, sizeof(cm));
	printf("connected\n");
	/* the next receive is posted before the echo goes out (iWARP drops
	 * a message that finds none) */
	{
		struct op rx[2] = { { .what = "victim's receive" } };
		int cur = 0;

		POST(&e, "fi_recv", fi_recv(e.ep, buf, 32768, fi_mr_desc(mr), 0,
					    &rx[0]));
		for (;;) {
			struct op s = { .what = "victim's echo" };

			wait_op(&e, &rx[cur]);
			rx[cur ^ 1] = (struct op){ .what = "victim's receive" };
			POST(&e, "fi_recv",
			     fi_recv(e.ep, buf + (size_t)(cur ^ 1) * 32768, 32768,
				     fi_mr_desc(mr), 0, &rx[cur ^ 1]));
			POST(&e, "fi_send",
			     fi_send(e.ep, buf + (size_t)cur * 32768, rx[cur].len,
				     fi_mr_desc(mr), 0, &s));
			wait_op(&e, &s);
			cur ^= 1;
		}
	}
}

static int msg_survivor(const char *addr, const char *port)
{
	struct fi_info *hints = hints_for(FI_EP_MSG, "verbs");
	struct fi_eq_cm_entry cm;
	struct ends e = { 0 };
	uint8_t *buf = xalloc(65536);
	struct fid_pep *pep;
	struct fid_mr *mr;
	unsigned long rounds = 0;
	long long end;
	uint32_t ev;
	int err = 0;

	ok(fi_getinfo(FI_VERSION(1, 11), addr, port, FI_SOURCE, hints,
		      &e.info), "fi_getinfo");
	open_fabric(&e, e.info, true);
	ok(fi_passive_ep(e.fabric, e.info, &pep, NULL), "fi_passive_ep");
	ok(fi_pep_bind(pep, &e.eq->fid, 0), "fi_pep_bind");
	ok(fi_listen(pep), "fi_listen");
	printf("listening\n");
	expect_event(e.eq, FI_CONNREQ, &cm, sizeof(cm));
	ok(fi_domain(e.fabric, cm.info, &e.domain, NULL), "fi_domain");
	open_ep(&e, cm.info);
	ok(fi_accept(e.ep, NULL, 0), "fi_accept");
	fi_freeinfo(cm.info);
	expect_event(e.eq, FI_CONNECTED, &cm, sizeof(cm));
	mr = reg(&e, buf, 65536, FI_SEND | FI_RECV);
	end = now_ms() + 2 * WAIT_MS;
	for (;;) {
		struct op r = { .what = "survivor's receive" };
		struct op s = { .what = "survivor's send" };
		ssize_t rc;

		if (now_ms() > end)
			die("%lu round trips and no failure", rounds);
		rc = fi_recv(e.ep, buf + 32768, 32768, fi_mr_desc(mr), 0, &r);
		if (!rc)
			rc = fi_send(e.ep, buf, 4096, fi_mr_desc(mr), 0, &s);
		if (rc) {
			printf("msg-survivor: posting refused (%s) after %lu round trips\n",
			       fi_strerror((int)-rc), rounds);
			break;
		}
		while ((!r.done || !s.done) && now_ms() < end)
			reap(&e, 0, true);
		if (!r.done || !s.done)
			die("work outstanding for %d ms after the peer died",
			    2 * WAIT_MS);
		if (r.err || s.err) {
			printf("msg-survivor: error completion (%s) after %lu round trips\n",
			       fi_strerror(r.err ? r.err : s.err), rounds);
			break;
		}
		if (rounds++ == 100)
			printf("streaming\n");
	}
	/* the connection's end on the EQ: shutdown, or an error event */
	ev = eq_event(e.eq, &cm, sizeof(cm), &err);
	if (!err && ev != FI_SHUTDOWN)
		die("after the peer died: event %u", ev);
	printf("msg-survivor: the EQ says %s\n",
	       err ? fi_strerror(err) : "FI_SHUTDOWN");
	while (reap(&e, 0, true))
		;
	ok(fi_close(&e.ep->fid), "fi_close(ep)");
	e.ep = NULL;
	ok(fi_close(&mr->fid), "fi_close(mr)");
	ok(fi_close(&pep->fid), "fi_close(pep)");
	close_all(&e);
	fi_freeinfo(hints);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	struct peer peers[MAX_PEERS];
	int n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(argv[1], "msg-server")) {
		role = "msg-server";
		return msg_server(argv[2], argv[3]);
	}
	if (argc == 4 && !strcmp(argv[1], "msg-client")) {
		role = "msg-client";
		return msg_client(argv[2], argv[3]);
	}
	if (argc == 4 && !strcmp(argv[1], "connect-error")) {
		role = "connect-error";
		return connect_error(argv[2], argv[3]);
	}
	if (argc == 4 && !strcmp(argv[1], "msg-victim")) {
		role = argv[1];
		return msg_victim(argv[2], argv[3]);
	}
	if (argc == 4 && !strcmp(argv[1], "msg-survivor")) {
		role = argv[1];
		return msg_survivor(argv[2], argv[3]);
	}
	if (argc >= 5 && !strcmp(argv[1], "rdm")) {
		int self = atoi(argv[2]);

		n = argc - 3;
		if (n > MAX_PEERS || self < 0 || self >= n)
			die("rdm SELF ADDR:PORT... (at most %d peers)", MAX_PEERS);
		for (int i = 0; i < n; i++)
			parse_peer(argv[3 + i], &peers[i]);
		role = "rdm";
		return rdm(self, peers, n);
	}
	fprintf(stderr,
		"usage: fabric_peer msg-server|msg-client|connect-error ADDR PORT\n"
		"       fabric_peer rdm SELF ADDR:PORT ADDR:PORT...\n"
		"       fabric_peer msg-victim|msg-survivor ADDR PORT\n");
	return 2;
}
