// SPDX-License-Identifier: MIT
/*
 * Connecting by name: a name that resolves to nothing says so, and a name
 * that resolves to several addresses is tried address after address, in
 * the resolver's order, until one takes the connection.  The names are
 * made up here: the test's getaddrinfo() stands in for the C library's
 * for the ".test" names below and hands every other name on.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "e2e.h"

static atomic_int lookups;

typedef int (*gai_fn)(const char *, const char *, const struct addrinfo *,
		      struct addrinfo **);

static gai_fn real_getaddrinfo(void)
{
	return (gai_fn)dlsym(RTLD_NEXT, "getaddrinfo");
}

/* The real resolver's answer for each literal of @list, chained in order. */
static int chain(const char *const *list, const char *port,
		 const struct addrinfo *hints, struct addrinfo **res)
{
	struct addrinfo *head = NULL, **tail = &head;

	for (; *list; list++) {
		struct addrinfo *one;
		int rc = real_getaddrinfo()(*list, port, hints, &one);

		if (rc) {
			if (head)
				freeaddrinfo(head);
			return rc;
		}
		*tail = one;
		while (*tail)
			tail = &(*tail)->ai_next;
	}
	*res = head;
	return 0;
}

int getaddrinfo(const char *node, const char *service,
		const struct addrinfo *hints, struct addrinfo **res)
{
	static const char *const one_then_two[] = { "127.0.0.1", "127.0.0.2",
						    NULL };
	static const char *const two_then_one[] = { "127.0.0.2", "127.0.0.1",
						    NULL };
	static const char *const two_three[] = { "127.0.0.2", "127.0.0.3",
						 NULL };

	if (!node || !strstr(node, ".test"))
		return real_getaddrinfo()(node, service, hints, res);
	atomic_fetch_add(&lookups, 1);
	if (!strcmp(node, "one-then-two.test"))
		return chain(one_then_two, service, hints, res);
	if (!strcmp(node, "two-then-one.test"))
		return chain(two_then_one, service, hints, res);
	if (!strcmp(node, "two-three.test"))
		return chain(two_three, service, hints, res);
	return EAI_NONAME;
}

static void side_open(struct e2e_side *s)
{
	struct e2e_opts o;

	e2e_opts_default(&o);
	o.buf_len = 4096;
	e2e_side_open(s, &o);
}

/* A listener on @host at @port ("0": any), whose port is returned. */
static struct iw_cm_id *listen_on(struct e2e_side *s, const char *host,
				  char *port)
{
	struct iw_cm_id *l = iw_create_id(s->ch, NULL);

	ck_assert_ptr_nonnull(l);
	ck_assert_int_eq(iw_listen(l, host, port, 4), 0);
	e2e_port(l, port, 16);
	return l;
}

/*
 * Connects a new identifier of @c to @name at @port and has @s accept it;
 * returns the identifier.  *@via: the listener the request came to;
 * *@addr: the IPv4 address the connection reached, in host order.
 */
static struct iw_cm_id *connect_accepted(struct e2e_side *c,
					 struct e2e_side *s, const char *name,
					 const char *port,
					 struct iw_cm_id **via, uint32_t *addr)
{
	struct iw_cm_id *id = iw_create_id(c->ch, NULL);
	struct sockaddr_storage ss;
	struct iw_cm_event *ev;

	ck_assert_ptr_nonnull(id);
	ck_assert_int_eq(iw_connect(id, name, port, c->qp, NULL), 0);
	ev = e2e_event(s->ch, E2E_WAIT_MS);
	ck_assert_int_eq(ev->event, IW_CM_EVENT_CONNECT_REQUEST);
	*via = ev->listen_id;
	s->id = ev->id;
	iw_ack_cm_event(ev);
	ck_assert_int_eq(iw_accept(s->id, s->qp, NULL), 0);
	e2e_expect(c->ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	ck_assert_int_eq(iw_get_peer_addr(id, &ss), 0);
	*addr = ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr);
	return id;
}

START_TEST(name_that_does_not_resolve_says_so)
{
	struct e2e_side c;
	struct iw_cm_id *id;

	side_open(&c);
	id = iw_create_id(c.ch, NULL);
	ck_assert_int_eq(iw_connect(id, "nowhere.test", "4791", c.qp, NULL),
			 -IW_EUNRESOLVED);
	ck_assert_int_eq(atomic_load(&lookups), 1);
	/* an unknown service name: the C library's own answer */
	ck_assert_int_eq(iw_connect(id, "127.0.0.1", "no-such-service-here",
				    c.qp, NULL),
			 -IW_EUNRESOLVED);
	ck_assert_int_eq(iw_listen(id, "nowhere.test", "0", 4),
			 -IW_EUNRESOLVED);
	ck_assert_str_eq(iw_strerror(-IW_EUNRESOLVED),
			 "the host name or port does not resolve to an address");
	/* nothing happened: the identifier may still connect */
	ck_assert_int_eq(iw_destroy_id(id), 0);
	e2e_side_close(&c);
}
END_TEST

/*
 * Two listeners on one port, at 127.0.0.2 and 127.0.0.1: a name that
 * resolves to both reaches the one it names first.
 */
START_TEST(addresses_are_tried_in_the_resolver_order)
{
	static const char *const names[] = { "two-then-one.test",
					     "one-then-two.test" };
	struct e2e_side s, c;
	struct iw_cm_id *l2, *l1, *id, *via;
	uint32_t addr;
	char port[16] = "0";

	side_open(&s);
	side_open(&c);
	l2 = listen_on(&s, "127.0.0.2", port);
	l1 = listen_on(&s, "127.0.0.1", port);
	id = connect_accepted(&c, &s, names[_i], port, &via, &addr);
	ck_assert_ptr_eq(via, _i == 0 ? l2 : l1);
	ck_assert_uint_eq(addr, _i == 0 ? 0x7f000002 : 0x7f000001);
	ck_assert_int_eq(iw_destroy_id(id), 0);
	ck_assert_int_eq(iw_destroy_id(l2), 0);
	ck_assert_int_eq(iw_destroy_id(l1), 0);
	e2e_side_close(&c);
	e2e_side_close(&s);
}
END_TEST

/* The first address refuses: the second takes the connection. */
START_TEST(a_refused_address_gives_way_to_the_next)
{
	struct e2e_side s, c;
	struct iw_cm_id *l, *id, *via;
	uint32_t addr;
	char port[16] = "0";

	side_open(&s);
	side_open(&c);
	l = listen_on(&s, "127.0.0.1", port);
	id = connect_accepted(&c, &s, "two-then-one.test", port, &via, &addr);
	ck_assert_ptr_eq(via, l);
	ck_assert_uint_eq(addr, 0x7f000001);
	ck_assert_int_eq(iw_destroy_id(id), 0);
	ck_assert_int_eq(iw_destroy_id(l), 0);
	e2e_side_close(&c);
	e2e_side_close(&s);
}
END_TEST

/* No address takes it: UNREACHABLE once, with the last refusal. */
START_TEST(no_address_taking_it_is_unreachable_once)
{
	struct e2e_side s, c;
	struct iw_cm_id *l, *id;
	struct pollfd p;
	char port[16] = "0";

	side_open(&s);
	side_open(&c);
	/* a free port: a listener's, at 127.0.0.1 only */
	l = listen_on(&s, "127.0.0.1", port);
	id = iw_create_id(c.ch, NULL);
	ck_assert_int_eq(iw_connect(id, "two-three.test", port, c.qp, NULL),
			 0);
	ck_assert_int_eq(e2e_expect(c.ch, IW_CM_EVENT_UNREACHABLE, E2E_WAIT_MS),
			 -ECONNREFUSED);
	p = (struct pollfd){ iw_cm_channel_fd(c.ch), POLLIN, 0 };
	ck_assert_int_eq(poll(&p, 1, 200), 0);
	p = (struct pollfd){ iw_cm_channel_fd(s.ch), POLLIN, 0 };
	ck_assert_int_eq(poll(&p, 1, 0), 0);
	ck_assert_int_eq(iw_destroy_id(id), 0);
	ck_assert_int_eq(iw_destroy_id(l), 0);
	e2e_side_close(&c);
	e2e_side_close(&s);
}
END_TEST

static Suite *connect_suite(void)
{
	Suite *s = suite_create("connect");
	TCase *tc = tcase_create("names");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, name_that_does_not_resolve_says_so);
	tcase_add_loop_test(tc, addresses_are_tried_in_the_resolver_order, 0, 2);
	tcase_add_test(tc, a_refused_address_gives_way_to_the_next);
	tcase_add_test(tc, no_address_taking_it_is_unreachable_once);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(connect_suite());
}
