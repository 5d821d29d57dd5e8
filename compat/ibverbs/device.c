// SPDX-License-Identifier: MIT
/*
 * The one device, iwarp0, and its contexts.  Every context of a process
 * shares one libiwarp context (one STag table, one progress thread), so
 * that the objects of a context opened by the application and those of
 * librdmacm's own can be used together, as they can on a kernel device.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "compat/ibverbs/ibverbs.h"
#include "compat/ibverbs/sysfs.h"

/*
 * What ibv_devices and ibv_devinfo print.  The paths name no real sysfs
 * directory: ibv_read_sysfs_file() answers for them (sysfs.c).
 */
static struct ibv_device iwv_device = {
	.node_type = IBV_NODE_RNIC,
	.transport_type = IBV_TRANSPORT_IWARP,
	.name = IWV_DEVICE_NAME,
	.dev_name = "uverbs_" IWV_DEVICE_NAME,
	.dev_path = IWV_SYSFS_VERBS "/uverbs_" IWV_DEVICE_NAME,
	.ibdev_path = IWV_SYSFS_IBDEV "/" IWV_DEVICE_NAME,
};

/* ---- the process's libiwarp context -------------------------------- */

static pthread_mutex_t iw_lock = PTHREAD_MUTEX_INITIALIZER;
static struct iw_context *iw_shared;
static unsigned int iw_users;

/* The shared context, opened by its first user; NULL with errno. */
struct iw_context *iwv_iw_get(void)
{
	struct iw_context *c;

	pthread_mutex_lock(&iw_lock);
	if (!iw_shared)
		iw_shared = iw_open(NULL);
	if (iw_shared)
		iw_users++;
	c = iw_shared;
	pthread_mutex_unlock(&iw_lock);
	return c;
}

/* Its last user closes it (every object made from it is gone by then). */
void iwv_iw_put(void)
{
	pthread_mutex_lock(&iw_lock);
	if (--iw_users == 0) {
		iw_close(iw_shared);
		iw_shared = NULL;
	}
	pthread_mutex_unlock(&iw_lock);
}

/* ---- device list ---------------------------------------------------- */

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list = calloc(2, sizeof(*list));

	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	list[0] = &iwv_device;
	if (num_devices)
		*num_devices = 1;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device ? device->name : NULL;
}

/* No kernel device, so no kernel index (rdma-core's answer then). */
int ibv_get_device_index(struct ibv_device *device)
{
	(void)device;
	return -1;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	uint8_t g[8];
	__be64 v;

	(void)device;
	iwv_node_guid(g);
	memcpy(&v, g, sizeof(v));
	return v;
}

/* ---- contexts -------------------------------------------------------- */

/*
 * IWARP_RFC7306=1 turns RFC 7306 (atomics, immediate data) on for every
 * QP the program creates: libiwarp cannot agree on it with the peer (see
 * iwarp(7)), so the person who starts both ends says so, for both.
 */
uint32_t iwv_rfc7306_env(void)
{
	const char *v = getenv("IWARP_RFC7306");

	return v && !strcmp(v, "1") ? IW_RFC7306_ALL : 0;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct iwv_context *c;

	if (device != &iwv_device) {
		errno = ENODEV;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->vctx = iwv_context_ops; /* first: the rest is filled in below */
	c->rdmacm = &iwv_rdmacm_table;
	c->iw = iwv_iw_get();
	if (!c->iw) {
		int e = errno;

		free(c);
		errno = e ? e : ENOMEM;
		return NULL;
	}
	c->async_fd = eventfd(0, EFD_CLOEXEC);
	if (c->async_fd < 0) {
		int e = errno;

		iwv_iw_put();
		free(c);
		errno = e;
		return NULL;
	}
	/* as rdma-core sets them up: extended, its size, then the context */
	c->vctx.sz = sizeof(c->vctx);
	c->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	c->vctx.context.device = device;
	c->vctx.context.cmd_fd = -1;
	c->vctx.context.async_fd = c->async_fd;
	c->vctx.context.num_comp_vectors = 1;
	c->rfc7306 = iwv_rfc7306_env();
	pthread_mutex_init(&c->vctx.context.mutex, NULL);
	pthread_mutex_init(&c->qps_lock, NULL);
	return &c->vctx.context;
}

/* Every object of the context must be destroyed before.  0, or -1 (errno). */
int ibv_close_device(struct ibv_context *context)
{
	struct iwv_context *c;

	if (!iwv_is_ours(context)) {
		errno = EINVAL;
		return -1;
	}
	c = to_iwv_ctx(context);
	close(c->async_fd);
	pthread_mutex_destroy(&c->qps_lock);
	pthread_mutex_destroy(&context->mutex);
	free(c);
	iwv_iw_put();
	return 0;
}
