/* SPDX-License-Identifier: MIT */
/*
 * What the ends of fabric_peer share (see fabric_peer.c): operations that
 * must complete exactly once, the objects of one end, bounded waits.
 */
#ifndef IW_TEST_FABRIC_PEER_H
#define IW_TEST_FABRIC_PEER_H

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
extern const char *role;
extern const size_t sizes[];
#define N_SIZES ((size_t)10)

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

struct rma_key {
	uint64_t addr, key;
};

struct peer {
	struct sockaddr_in sin;
	fi_addr_t fa;
};

void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void ok(int rc, const char *what);
long long now_ms(void);
/* The octets of message @seed, @len long, and their check. */
void fill(uint8_t *p, size_t len, uint32_t seed);
void check(const uint8_t *p, size_t len, uint32_t seed, const char *what);
void *xalloc(size_t len);
/* Takes what the CQ has, waiting up to @ms in fi_cq_sread() if asked. */
int reap(struct ends *e, int ms, bool errors_ok);
/* Until @o has completed (WAIT_MS at most), successfully. */
void wait_op(struct ends *e, struct op *o);
struct fi_info *hints_for(enum fi_ep_type type, const char *prov);
struct fid_mr *reg(struct ends *e, void *buf, size_t len, uint64_t access);
uint32_t eq_event(struct fid_eq *eq, struct fi_eq_cm_entry *cm, size_t cm_len,
		  int *err);
void expect_event(struct fid_eq *eq, uint32_t want, struct fi_eq_cm_entry *cm,
		  size_t len);
void open_fabric(struct ends *e, struct fi_info *info, bool with_eq);
void open_ep(struct ends *e, struct fi_info *info);
void close_all(struct ends *e);
void parse_peer(const char *s, struct peer *p);

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

/* fabric_msg.c, fabric_rdm.c */
int msg_server(const char *addr, const char *port);
int msg_client(const char *addr, const char *port);
int connect_error(const char *addr, const char *port);
int msg_victim(const char *addr, const char *port);
int msg_survivor(const char *addr, const char *port);
int rdm(int self, struct peer *peers, int n);

#endif /* IW_TEST_FABRIC_PEER_H */
