/* SPDX-License-Identifier: MIT */
/*
 * One seeded run of check_faults: a connection between two libiwarp
 * endpoints through the fault proxy, Send, RDMA Write and RDMA Read
 * traffic both ways (RFC 7306 Fetch and Add and Write with Immediate Data
 * on every third seed), one fault, and the checks that whatever the fault,
 * every work request completes exactly once, nothing outside a
 * registered region changes, what a completion calls a success is what
 * was sent, and the RFCs' Terminate comes where one is due.
 */
#ifndef IW_TEST_FAULT_RUN_H
#define IW_TEST_FAULT_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include <iwarp/iwarp.h>

/* The two contexts every run shares with the others of the process. */
struct fault_env {
	struct iw_context *client, *server;
};

struct fault_result {
	bool failed;
	char why[512];
	char what[256]; /* the run's settings and fault, in words */
	long long ms;
};

/* Runs the connection of @seed; the result says whether it held. */
void fault_run(const struct fault_env *env, uint64_t seed,
	       struct fault_result *res);

#endif /* IW_TEST_FAULT_RUN_H */
