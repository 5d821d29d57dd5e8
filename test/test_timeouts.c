// SPDX-License-Identifier: MIT
/*
 * The QP timeouts for dead peers through the public API: the documented
 * defaults, the environment's (IWARP_ACK_TIMEOUT_MS, IWARP_KEEPALIVE),
 * bad values refused, and every value reaching the connection's socket
 * (TCP_USER_TIMEOUT and keepalive), set before the connection or while
 * it runs.  How a silent peer is then detected is for the network tests
 * (dead_peer.sh, cluster.sh, compat_dead_peer.sh).
 */
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "e2e.h"

#define ALL (IW_QP_TIMEOUTS_ACK | IW_QP_TIMEOUTS_KEEPALIVE)

static struct iw_qp_timeouts query(struct iw_qp *qp)
{
	struct iw_qp_timeouts t = { .comp_mask = ALL };

	ck_assert_int_eq(iw_query_qp_timeouts(qp, &t), 0);
	return t;
}

START_TEST(a_new_qp_has_the_documented_defaults)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct iw_qp_timeouts t;

	e2e_opts_default(&o);
	e2e_side_open(&s, &o);
	t = query(s.qp);
	ck_assert_uint_eq(t.ack_timeout_ms, 15000);
	ck_assert_uint_eq(t.ack_timeout_ms, IW_ACK_TIMEOUT_MS_DEFAULT);
	ck_assert_uint_eq(t.keepalive_idle_s, 10);
	ck_assert_uint_eq(t.keepalive_interval_s, 2);
	ck_assert_uint_eq(t.keepalive_count, 3);
	/* a field whose bit is clear is left alone */
	t = (struct iw_qp_timeouts){ .comp_mask = IW_QP_TIMEOUTS_ACK,
				     .keepalive_idle_s = 4242 };
	ck_assert_int_eq(iw_query_qp_timeouts(s.qp, &t), 0);
	ck_assert_uint_eq(t.keepalive_idle_s, 4242);
	e2e_side_close(&s);
}
END_TEST

/* What a new QP's timeouts are with IWARP_ACK_TIMEOUT_MS=@ack and
 * IWARP_KEEPALIVE=@keepalive in the environment (both unset after). */
static struct iw_qp_timeouts under_env(const char *ack, const char *keepalive)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct iw_qp_timeouts t;

	e2e_opts_default(&o);
	setenv("IWARP_ACK_TIMEOUT_MS", ack, 1);
	setenv("IWARP_KEEPALIVE", keepalive, 1);
	e2e_side_open(&s, &o);
	t = query(s.qp);
	e2e_side_close(&s);
	unsetenv("IWARP_ACK_TIMEOUT_MS");
	unsetenv("IWARP_KEEPALIVE");
	return t;
}

START_TEST(the_environment_sets_a_contexts_defaults_and_bad_values_are_ignored)
{
	struct iw_qp_timeouts t;

	t = under_env("4321", "3,4,5");
	ck_assert_uint_eq(t.ack_timeout_ms, 4321);
	ck_assert_uint_eq(t.keepalive_idle_s, 3);
	ck_assert_uint_eq(t.keepalive_interval_s, 4);
	ck_assert_uint_eq(t.keepalive_count, 5);

	t = under_env("12s", "3,0,5");
	ck_assert_uint_eq(t.ack_timeout_ms, IW_ACK_TIMEOUT_MS_DEFAULT);
	ck_assert_uint_eq(t.keepalive_interval_s, IW_KEEPALIVE_INTERVAL_S_DEFAULT);

	t = under_env("0", "0");
	ck_assert_uint_eq(t.ack_timeout_ms, 0);
	ck_assert_uint_eq(t.keepalive_idle_s, 0);
}
END_TEST

START_TEST(bad_timeouts_are_refused_and_change_nothing)
{
	static const struct iw_qp_timeouts bad[] = {
		{ .comp_mask = 1u << 2 },
		{ .comp_mask = IW_QP_TIMEOUTS_ACK, .ack_timeout_ms = 1u << 31 },
		{ .comp_mask = IW_QP_TIMEOUTS_KEEPALIVE, .keepalive_idle_s = 1,
		  .keepalive_interval_s = 0, .keepalive_count = 1 },
		{ .comp_mask = IW_QP_TIMEOUTS_KEEPALIVE, .keepalive_idle_s = 1,
		  .keepalive_interval_s = 1, .keepalive_count = 0 },
		{ .comp_mask = IW_QP_TIMEOUTS_KEEPALIVE,
		  .keepalive_idle_s = 32768, .keepalive_interval_s = 1,
		  .keepalive_count = 1 },
		{ .comp_mask = IW_QP_TIMEOUTS_KEEPALIVE, .keepalive_idle_s = 1,
		  .keepalive_interval_s = 1, .keepalive_count = 128 },
	};
	struct e2e_opts o;
	struct e2e_side s;
	struct iw_qp_timeouts t = { .comp_mask = ALL };

	e2e_opts_default(&o);
	e2e_side_open(&s, &o);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(iw_set_qp_timeouts(s.qp, &bad[i]), -EINVAL);
	ck_assert_int_eq(iw_set_qp_timeouts(NULL, &t), -EINVAL);
	ck_assert_int_eq(iw_set_qp_timeouts(s.qp, NULL), -EINVAL);
	ck_assert_int_eq(iw_query_qp_timeouts(s.qp, NULL), -EINVAL);
	t.comp_mask = 1u << 5;
	ck_assert_int_eq(iw_query_qp_timeouts(s.qp, &t), -EINVAL);
	t = query(s.qp);
	ck_assert_uint_eq(t.ack_timeout_ms, IW_ACK_TIMEOUT_MS_DEFAULT);
	ck_assert_uint_eq(t.keepalive_idle_s, IW_KEEPALIVE_IDLE_S_DEFAULT);
	/* keepalive off: the other fields are not looked at */
	t = (struct iw_qp_timeouts){ .comp_mask = IW_QP_TIMEOUTS_KEEPALIVE };
	ck_assert_int_eq(iw_set_qp_timeouts(s.qp, &t), 0);
	ck_assert_uint_eq(query(s.qp).keepalive_idle_s, 0);
	e2e_side_close(&s);
}
END_TEST

START_TEST(the_timeouts_reach_the_socket_before_and_during_the_connection)
{
	struct e2e_opts o;
	struct e2e e;
	struct sockaddr_storage local;
	struct iw_qp_timeouts t = {
		.comp_mask = ALL, .ack_timeout_ms = 7000,
		.keepalive_idle_s = 5, .keepalive_interval_s = 3,
		.keepalive_count = 4,
	};
	int fd;

	e2e_opts_default(&o);
	memset(&e, 0, sizeof(e));
	e2e_side_open(&e.c, &o);
	ck_assert_int_eq(iw_set_qp_timeouts(e.c.qp, &t), 0);
	e2e_side_open(&e.s, &o);
	e2e_request(&e, &o);
	ck_assert_int_eq(iw_accept(e.s.id, e.s.qp, &o.sparam), 0);
	e2e_expect(e.s.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	e2e_expect(e.c.ch, IW_CM_EVENT_ESTABLISHED, E2E_WAIT_MS);
	ck_assert_int_eq(iw_get_local_addr(e.c.id, &local), 0);
	fd = tcp_socket_of((const struct sockaddr *)&local);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(int_sockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), 7000);
	ck_assert_int_eq(int_sockopt(fd, SOL_SOCKET, SO_KEEPALIVE), 1);
	ck_assert_int_eq(int_sockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE), 5);
	ck_assert_int_eq(int_sockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL), 3);
	ck_assert_int_eq(int_sockopt(fd, IPPROTO_TCP, TCP_KEEPCNT), 4);
	/* while it runs */
	t = (struct iw_qp_timeouts){ .comp_mask = ALL, .ack_timeout_ms = 2500 };
	ck_assert_int_eq(iw_set_qp_timeouts(e.c.qp, &t), 0);
	ck_assert_int_eq(int_sockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), 2500);
	ck_assert_int_eq(int_sockopt(fd, SOL_SOCKET, SO_KEEPALIVE), 0);
	/* the server's QP has the defaults */
	ck_assert_int_eq(iw_get_local_addr(e.s.id, &local), 0);
	fd = tcp_socket_of((const struct sockaddr *)&local);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(int_sockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT),
			 IW_ACK_TIMEOUT_MS_DEFAULT);
	ck_assert_int_eq(int_sockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE),
			 IW_KEEPALIVE_IDLE_S_DEFAULT);
	e2e_teardown(&e);
}
END_TEST

static Suite *timeouts_suite(void)
{
	Suite *s = suite_create("timeouts");
	TCase *tc = tcase_create("api");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_new_qp_has_the_documented_defaults);
	tcase_add_test(tc, the_environment_sets_a_contexts_defaults_and_bad_values_are_ignored);
	tcase_add_test(tc, bad_timeouts_are_refused_and_change_nothing);
	tcase_add_test(tc, the_timeouts_reach_the_socket_before_and_during_the_connection);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(timeouts_suite());
}
