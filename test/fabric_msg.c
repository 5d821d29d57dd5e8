// SPDX-License-Identifier: MIT
/*
 * fabric_peer's MSG endpoints (libfabric's verbs provider): a rejected
 * connection, an accepted one, Sends echoed, RMA, a shutdown on the event
 * queue; a connection nobody accepts; a peer killed amid traffic.
 */
#include "fabric_peer.h"

/* A passive endpoint listening on @addr:@port, its events on @e's EQ;
 * says "listening" once it is. */
static struct fid_pep *listen_on(struct ends *e, struct fi_info *hints,
				 const char *addr, const char *port)
{
	struct fid_pep *pep;

	ok(fi_getinfo(FI_VERSION(1, 11), addr, port, FI_SOURCE, hints,
		      &e->info), "fi_getinfo(server)");
	open_fabric(e, e->info, true);
	ok(fi_passive_ep(e->fabric, e->info, &pep, NULL), "fi_passive_ep");
	ok(fi_pep_bind(pep, &e->eq->fid, 0), "fi_pep_bind");
	ok(fi_listen(pep), "fi_listen");
	printf("listening\n");
	fflush(stdout);
	return pep;
}

/* @e's fabric, EQ and domain for connecting to @addr:@port. */
static void open_client(struct ends *e, struct fi_info *hints,
			const char *addr, const char *port)
{
	ok(fi_getinfo(FI_VERSION(1, 11), addr, port, 0, hints, &e->info),
	   "fi_getinfo(client)");
	open_fabric(e, e->info, true);
	ok(fi_domain(e->fabric, e->info, &e->domain, NULL), "fi_domain");
}

int msg_server(const char *addr, const char *port)
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

	pep = listen_on(&e, hints, addr, port);

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
	/* the window goes, and the client is told: its next Read of it must
	 * fail (RFC 5040: a Terminate ends the stream) */
	ok(fi_close(&wmr->fid), "fi_close(window)");
	{
		struct op s = { .what = "closed" };

		POST(&e, "fi_send", fi_send(e.ep, bufs, 0, fi_mr_desc(mr), 0, &s));
		wait_op(&e, &s);
	}
	/* the connection ends: the EQ says so, as a shutdown or an error */
	{
		int err;
		uint32_t got = eq_event(e.eq, &ev.cm, sizeof(ev), &err);

		if (!err && got != FI_SHUTDOWN)
			die("after the Read of a closed region: event %u", got);
	}
	/* what was posted and not consumed completes with an error or not
	 * at all; nothing completes twice */
	while (reap(&e, 0, true))
		;
	ok(fi_close(&mr->fid), "fi_close(mr)");
	ok(fi_close(&pep->fid), "fi_close(pep)");
	close_all(&e);
	fi_freeinfo(hints);
	free(bufs);
	free(window);
	printf("msg-server: %zu sizes echoed, window checked and closed, the end seen\n",
	       N_SIZES);
	return 0;
}

int msg_client(const char *addr, const char *port)
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

	open_client(&e, hints, addr, port);

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
	r = (struct op){ .what = "closed receive" };
	POST(&e, "fi_recv", fi_recv(e.ep, rbuf, MAX_LEN, fi_mr_desc(rmr), 0, &r));
	s = (struct op){ .what = "written" };
	POST(&e, "fi_send", fi_send(e.ep, sbuf, 0, fi_mr_desc(smr), 0, &s));
	wait_op(&e, &s);
	/* the server has closed its window: a Read of it fails, once */
	wait_op(&e, &r);
	s = (struct op){ .what = "fi_read of a closed region" };
	POST(&e, "fi_read", fi_read(e.ep, rbuf, 4096, fi_mr_desc(rmr), 0,
				    key.addr, key.key, &s));
	{
		long long end = now_ms() + WAIT_MS;

		while (!s.done && now_ms() < end)
			reap(&e, 100, true);
	}
	if (!s.done || !s.err)
		die("a Read of a closed region: %s", s.done ? "succeeded"
							  : "never completed");
	printf("msg-client: a Read of a closed region: %s\n",
	       fi_strerror(s.err));
	fi_shutdown(e.ep, 0); /* the connection may be gone already */
	while (reap(&e, 0, true))
		;
	ok(fi_close(&smr->fid), "fi_close(mr)");
	ok(fi_close(&rmr->fid), "fi_close(mr)");
	ok(fi_close(&kmr->fid), "fi_close(mr)");
	close_all(&e);
	fi_freeinfo(hints);
	free(sbuf);
	free(rbuf);
	printf("msg-client: refused, then %zu sizes echoed, RMA Read and Write\n",
	       N_SIZES);
	return 0;
}

/* A connection nobody accepts ends in an error event. */
int connect_error(const char *addr, const char *port)
{
	struct fi_info *hints = hints_for(FI_EP_MSG, "verbs");
	struct fi_eq_cm_entry cm;
	struct ends e = { 0 };
	long long t0 = now_ms();
	uint32_t ev;
	int err;

	open_client(&e, hints, addr, port);
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

/*
 * A peer killed in the middle of traffic, on MSG endpoints: "msg-victim"
 * connects and sends back whatever it receives until it is killed;
 * "msg-survivor" accepts it and keeps a Send and a receive in flight.
 * Once the victim is gone, the survivor's work must complete with an
 * error, and its EQ report the connection's end, within WAIT_MS.
 */
int msg_victim(const char *addr, const char *port)
{
	struct fi_info *hints = hints_for(FI_EP_MSG, "verbs");
	struct fi_eq_cm_entry cm;
	struct ends e = { 0 };
	uint8_t *buf = xalloc(65536);
	struct fid_mr *mr;

	open_client(&e, hints, addr, port);
	open_ep(&e, e.info);
	mr = reg(&e, buf, 65536, FI_SEND | FI_RECV);
	/*
	 * Every receive is posted before the Send it is for can come (iWARP
	 * ends a connection on a message that finds none): the first before
	 * connecting, as the survivor sends as soon as it is connected; the
	 * next before the echo goes out.
	 */
	{
		struct op rx[2] = { { .what = "victim's receive" } };
		int cur = 0;

		POST(&e, "fi_recv", fi_recv(e.ep, buf, 32768, fi_mr_desc(mr), 0,
					    &rx[0]));
		ok(fi_connect(e.ep, e.info->dest_addr, NULL, 0), "fi_connect");
		expect_event(e.eq, FI_CONNECTED, &cm, sizeof(cm));
		printf("connected\n");
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

int msg_survivor(const char *addr, const char *port)
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

	pep = listen_on(&e, hints, addr, port);
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
