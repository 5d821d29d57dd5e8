/* SPDX-License-Identifier: MIT */
/* libiwarp: RDMA over TCP in user space.  See iwarp(7). */
#ifndef IWARP_IWARP_H
#define IWARP_IWARP_H

#include <iwarp/error.h>
#include <iwarp/verbs.h>
#include <iwarp/cm.h>
#include <iwarp/stats.h>

#endif /* IWARP_IWARP_H */
