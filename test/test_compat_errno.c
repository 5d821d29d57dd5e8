// SPDX-License-Identifier: MIT
/*
 * compat's one errno mapping (compat/ibverbs/errno.c): every libiwarp
 * code gets the errno rdma-core's kernel path gives for the same failure,
 * errno values pass unchanged, and no code falls through to EIO.
 */
#include <check.h>
#include <errno.h>

#include "compat/ibverbs/rdmacm_iface.h"
#include "testutil.h"

/* The codes that are not protocol errors, and what rdma-core says. */
static const struct {
	int code, err;
} not_protocol[] = {
	{ IW_EMPA_REJECTED, ECONNREFUSED },
	{ IW_EMPA_STREAM_LOST, ECONNRESET },
	{ IW_EMPA_TRUNCATED, ECONNRESET },
	{ IW_ETERMINATED, ECONNRESET },
	{ IW_ECLOSED, ECONNRESET },
	{ IW_ELOCAL_PROTECTION, EINVAL },
	{ IW_ELOCAL_LENGTH, EINVAL },
	{ IW_ENO_READ_CREDIT, EINVAL },
	{ IW_ECQ_OVERRUN, EOVERFLOW },
	{ IW_EUNRESOLVED, EHOSTUNREACH },
};

static int expected(int code)
{
	for (size_t i = 0; i < sizeof(not_protocol) / sizeof(not_protocol[0]); i++)
		if (not_protocol[i].code == code)
			return not_protocol[i].err;
	return EPROTO; /* a frame, segment or message that broke a rule */
}

START_TEST(every_library_code_maps_to_rdma_cores_errno)
{
	for (int code = IW_ERROR_BASE; code < IW_ERROR_END; code++)
		ck_assert_msg(iwv_errno(-code) == expected(code),
			      "%s (%d): errno %d, want %d", iw_strerror(-code),
			      code, iwv_errno(-code), expected(code));
}
END_TEST

START_TEST(errno_values_pass_and_success_is_zero)
{
	ck_assert_int_eq(iwv_errno(0), 0);
	ck_assert_int_eq(iwv_errno(5), 0);
	ck_assert_int_eq(iwv_errno(-EINVAL), EINVAL);
	ck_assert_int_eq(iwv_errno(-ENOMEM), ENOMEM);
	ck_assert_int_eq(iwv_errno(-EAGAIN), EAGAIN);
	ck_assert_int_eq(iwv_errno(-EOPNOTSUPP), EOPNOTSUPP);
	/* a code newer than the table is at least an error */
	ck_assert_int_eq(iwv_errno(-IW_ERROR_END), EIO);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("compat_errno");
	TCase *tc = tcase_create("map");

	tcase_add_test(tc, every_library_code_maps_to_rdma_cores_errno);
	tcase_add_test(tc, errno_values_pass_and_success_is_zero);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
