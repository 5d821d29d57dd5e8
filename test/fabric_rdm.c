// SPDX-License-Identifier: MIT
/*
 * fabric_peer's RDM endpoints (ofi_rxm over the verbs provider): several
 * peers sending to each other at once, tagged and untagged, RMA.
 */
#include "fabric_peer.h"

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

/* The room message @len takes among the tagged receives: 64 octets at
 * least, so that every receive has a buffer of its own. */
static size_t tagged_room(size_t len)
{
	return len > 64 ? len : 64;
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

int rdm(int self, struct peer *peers, int n)
{
	struct ends e = { .sread = self == 0, .tagged = true };
	size_t inject = 0;
	const int others = n - 1;
	const size_t n_tagged = N_SIZES + 2; /* sizes, masked, inject */
	/* one sender's tagged messages: every size in its room, the others */
	const size_t tregion = n_tagged * 64 + MAX_LEN + (2u << 20);
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
	tbuf = xalloc((size_t)others * tregion);
	ubuf = xalloc((size_t)others * n_untagged * ulen);
	window = xalloc((size_t)MAX_PEERS * WINDOW_SLICE);
	rbuf = xalloc(WINDOW_SLICE);
	smr = reg(&e, sbuf, MAX_LEN * 2, FI_SEND | FI_READ | FI_WRITE);
	tmr = reg(&e, tbuf, (size_t)others * tregion, FI_RECV);
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
		at = tbuf + (size_t)slot++ * tregion;
		for (unsigned int k = 0; k < N_SIZES; k++) {
			struct op *o = &trecv[j * n_tagged + k];

			*o = (struct op){ .what = "tagged receive" };
			POST(&e, "fi_trecv",
			     fi_trecv(e.ep, at, sizes[k], fi_mr_desc(tmr),
				      FI_ADDR_UNSPEC, TAG(j, k), 0, o));
			at += tagged_room(sizes[k]);
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
		at = tbuf + (size_t)slot++ * tregion;
		for (unsigned int k = 0; k < N_SIZES; k++) {
			check(at, sizes[k], seed_of(j, self, k), "a tagged message");
			at += tagged_room(sizes[k]);
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
