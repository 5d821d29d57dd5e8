// SPDX-License-Identifier: MIT
/*
 * One end of a test of libfabric's own API over libiwarp (run under
 * iwarp-run by compat_fabric_api.sh, each end in a network namespace of
 * its own, since libfabric skips loopback interfaces):
 *
 *   fabric_peer msg-server ADDR PORT     MSG endpoints through the verbs
 *   fabric_peer msg-client ADDR PORT     provider: a rejected connection,
 *       an accepted one, Sends of 0 octets to 4 MiB echoed back, RDMA
 *       Write and Read, a Read of the server's window once it has closed
 *       it (which must fail), the end the server sees on its event queue.
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
#include "fabric_peer.h"

const char *role = "fabric_peer";

void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void ok(int rc, const char *what)
{
	if (rc)
		die("%s: %s (%d)", what, fi_strerror(rc < 0 ? -rc : rc), rc);
}

long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* The octets of message @seed, @len long: no two messages alike. */
void fill(uint8_t *p, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

void check(const uint8_t *p, size_t len, uint32_t seed, const char *what)
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
int reap(struct ends *e, int ms, bool errors_ok)
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

void wait_op(struct ends *e, struct op *o)
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

struct fi_info *hints_for(enum fi_ep_type type, const char *prov)
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

struct fid_mr *reg(struct ends *e, void *buf, size_t len, uint64_t access)
{
	struct fid_mr *mr;

	ok(fi_mr_reg(e->domain, buf, len, access, 0, 0, 0, &mr, NULL),
	   "fi_mr_reg");
	return mr;
}

void *xalloc(size_t len)
{
	void *p = calloc(1, len ? len : 1);

	if (!p)
		die("out of memory");
	return p;
}

const size_t sizes[] = { 0, 1, 7, 64, 1000, 4096, 65536, 65537,
				1u << 20, MAX_LEN };
_Static_assert(sizeof(sizes) / sizeof(sizes[0]) == N_SIZES, "N_SIZES");

/* ---- event queues and endpoints ---- */

/* The next event on the EQ within WAIT_MS; its error, if one, in *err. */
uint32_t eq_event(struct fid_eq *eq, struct fi_eq_cm_entry *cm,
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

void expect_event(struct fid_eq *eq, uint32_t want,
			 struct fi_eq_cm_entry *cm, size_t len)
{
	int err;
	uint32_t ev = eq_event(eq, cm, len, &err);

	if (err)
		die("waiting for event %u: error %s", want, fi_strerror(err));
	if (ev != want)
		die("event %u, not %u", ev, want);
}

void open_ep(struct ends *e, struct fi_info *info)
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

void open_fabric(struct ends *e, struct fi_info *info, bool with_eq)
{
	struct fi_eq_attr ea = { .wait_obj = FI_WAIT_UNSPEC };

	ok(fi_fabric(info->fabric_attr, &e->fabric, NULL), "fi_fabric");
	if (with_eq)
		ok(fi_eq_open(e->fabric, &ea, &e->eq, NULL), "fi_eq_open");
}

void close_all(struct ends *e)
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

void parse_peer(const char *s, struct peer *p)
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

