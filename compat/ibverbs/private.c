// SPDX-License-Identifier: MIT
/*
 * Entry points Debian's libibverbs exports that no application calls on
 * libiwarp's device, kept so that every binary linked against them loads
 * (they are all bound at load time: BIND_NOW).
 *
 * IBVERBS_PRIVATE_34 is rdma-core's interface to its providers: the
 * ibv_cmd_* kernel commands and the registration calls.  Debian's
 * libmlx5 and libefa, which perftest loads, import them and register
 * themselves from their constructors; there is no kernel device for them
 * to drive, so registering does nothing and every command fails with
 * EOPNOTSUPP.
 *
 * IBVERBS_1.0 also holds the entry points of libibverbs 1.0, whose
 * structures differ from today's; binaries that old fail cleanly with
 * ENOSYS instead of being handed today's objects.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compat/ibverbs/ibverbs.h"

/* ---- IBVERBS_PRIVATE_34 --------------------------------------------- */

bool verbs_allow_disassociate_destroy;

#define IWV_NO_CMD(name)            \
	int name(void);             \
	int name(void)              \
	{                           \
		return EOPNOTSUPP;  \
	}

IWV_NO_CMD(execute_ioctl)
IWV_NO_CMD(ibv_cmd_advise_mr)
IWV_NO_CMD(ibv_cmd_alloc_dm)
IWV_NO_CMD(ibv_cmd_alloc_mw)
IWV_NO_CMD(ibv_cmd_alloc_pd)
IWV_NO_CMD(ibv_cmd_attach_mcast)
IWV_NO_CMD(ibv_cmd_close_xrcd)
IWV_NO_CMD(ibv_cmd_create_ah)
IWV_NO_CMD(ibv_cmd_create_counters)
IWV_NO_CMD(ibv_cmd_create_cq)
IWV_NO_CMD(ibv_cmd_create_cq_ex)
IWV_NO_CMD(ibv_cmd_create_flow)
IWV_NO_CMD(ibv_cmd_create_flow_action_esp)
IWV_NO_CMD(ibv_cmd_create_qp)
IWV_NO_CMD(ibv_cmd_create_qp_ex)
IWV_NO_CMD(ibv_cmd_create_qp_ex2)
IWV_NO_CMD(ibv_cmd_create_rwq_ind_table)
IWV_NO_CMD(ibv_cmd_create_srq)
IWV_NO_CMD(ibv_cmd_create_srq_ex)
IWV_NO_CMD(ibv_cmd_create_wq)
IWV_NO_CMD(ibv_cmd_dealloc_mw)
IWV_NO_CMD(ibv_cmd_dealloc_pd)
IWV_NO_CMD(ibv_cmd_dereg_mr)
IWV_NO_CMD(ibv_cmd_destroy_ah)
IWV_NO_CMD(ibv_cmd_destroy_counters)
IWV_NO_CMD(ibv_cmd_destroy_cq)
IWV_NO_CMD(ibv_cmd_destroy_flow)
IWV_NO_CMD(ibv_cmd_destroy_flow_action)
IWV_NO_CMD(ibv_cmd_destroy_qp)
IWV_NO_CMD(ibv_cmd_destroy_rwq_ind_table)
IWV_NO_CMD(ibv_cmd_destroy_srq)
IWV_NO_CMD(ibv_cmd_destroy_wq)
IWV_NO_CMD(ibv_cmd_detach_mcast)
IWV_NO_CMD(ibv_cmd_free_dm)
IWV_NO_CMD(ibv_cmd_get_context)
IWV_NO_CMD(ibv_cmd_modify_cq)
IWV_NO_CMD(ibv_cmd_modify_flow_action_esp)
IWV_NO_CMD(ibv_cmd_modify_qp)
IWV_NO_CMD(ibv_cmd_modify_qp_ex)
IWV_NO_CMD(ibv_cmd_modify_srq)
IWV_NO_CMD(ibv_cmd_modify_wq)
IWV_NO_CMD(ibv_cmd_open_qp)
IWV_NO_CMD(ibv_cmd_open_xrcd)
IWV_NO_CMD(ibv_cmd_poll_cq)
IWV_NO_CMD(ibv_cmd_post_recv)
IWV_NO_CMD(ibv_cmd_post_send)
IWV_NO_CMD(ibv_cmd_post_srq_recv)
IWV_NO_CMD(ibv_cmd_query_context)
IWV_NO_CMD(ibv_cmd_query_device_any)
IWV_NO_CMD(ibv_cmd_query_mr)
IWV_NO_CMD(ibv_cmd_query_port)
IWV_NO_CMD(ibv_cmd_query_qp)
IWV_NO_CMD(ibv_cmd_query_srq)
IWV_NO_CMD(ibv_cmd_read_counters)
IWV_NO_CMD(ibv_cmd_reg_dm_mr)
IWV_NO_CMD(ibv_cmd_reg_dmabuf_mr)
IWV_NO_CMD(ibv_cmd_reg_mr)
IWV_NO_CMD(ibv_cmd_req_notify_cq)
IWV_NO_CMD(ibv_cmd_rereg_mr)
IWV_NO_CMD(ibv_cmd_resize_cq)

unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link);
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link)
{
	(void)link;
	return num_attrs;
}

void __verbs_log(void *ctx, uint32_t level, const char *fmt, ...);
void __verbs_log(void *ctx, uint32_t level, const char *fmt, ...)
{
	(void)ctx;
	(void)level;
	(void)fmt;
}

void *_verbs_init_and_alloc_context(void *device, int cmd_fd,
				    size_t alloc_size, void *context_offset,
				    uint32_t driver_id);
void *_verbs_init_and_alloc_context(void *device, int cmd_fd,
				    size_t alloc_size, void *context_offset,
				    uint32_t driver_id)
{
	(void)device;
	(void)cmd_fd;
	(void)alloc_size;
	(void)context_offset;
	(void)driver_id;
	errno = EOPNOTSUPP;
	return NULL;
}

/* A provider's device is never one of ours: no sysfs directory to read. */
int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs_dev,
			      const char *fnfmt, ...);
int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs_dev,
			      const char *fnfmt, ...)
{
	(void)buf;
	(void)size;
	(void)sysfs_dev;
	(void)fnfmt;
	errno = ENOENT;
	return -1;
}

/* Sets up the generic part of a provider's CQ, as rdma-core does. */
void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context);
void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context)
{
	cq->context = context;
	cq->channel = channel;
	cq->cq_context = cq_context;
	cq->comp_events_completed = 0;
	cq->async_events_completed = 0;
	pthread_mutex_init(&cq->mutex, NULL);
	pthread_cond_init(&cq->cond, NULL);
	if (channel) {
		pthread_mutex_lock(&context->mutex);
		channel->refcnt++;
		pthread_mutex_unlock(&context->mutex);
	}
}

struct ibv_context *verbs_open_device(struct ibv_device *device,
				      void *private_data);
struct ibv_context *verbs_open_device(struct ibv_device *device,
				      void *private_data)
{
	(void)device;
	(void)private_data;
	errno = EOPNOTSUPP;
	return NULL;
}

void verbs_register_driver_34(const void *ops);
void verbs_register_driver_34(const void *ops)
{
	(void)ops;
}

void verbs_set_ops(struct verbs_context *vctx, const void *ops);
void verbs_set_ops(struct verbs_context *vctx, const void *ops)
{
	(void)vctx;
	(void)ops;
}

void verbs_uninit_context(struct verbs_context *context);
void verbs_uninit_context(struct verbs_context *context)
{
	(void)context;
}

/* libibverbs 1.1's provider registration, by name of version only */
void iwv_register_driver_1_1(const char *name, void *init_func);
void iwv_register_driver_1_1(const char *name, void *init_func)
{
	(void)name;
	(void)init_func;
}
__asm__(".symver iwv_register_driver_1_1, ibv_register_driver@IBVERBS_1.1");

/* ---- libibverbs 1.0 ------------------------------------------------- */

#define IWV_OLD_INT(name)                                              \
	int iwv_1_0_##name(void);                                      \
	int iwv_1_0_##name(void)                                       \
	{                                                              \
		errno = ENOSYS;                                        \
		return ENOSYS;                                         \
	}                                                              \
	__asm__(".symver iwv_1_0_" #name ", " #name "@IBVERBS_1.0");

#define IWV_OLD_PTR(name)                                              \
	void *iwv_1_0_##name(void);                                    \
	void *iwv_1_0_##name(void)                                     \
	{                                                              \
		errno = ENOSYS;                                        \
		return NULL;                                           \
	}                                                              \
	__asm__(".symver iwv_1_0_" #name ", " #name "@IBVERBS_1.0");

#define IWV_OLD_VOID(name)                                             \
	void iwv_1_0_##name(void);                                     \
	void iwv_1_0_##name(void)                                      \
	{                                                              \
	}                                                              \
	__asm__(".symver iwv_1_0_" #name ", " #name "@IBVERBS_1.0");

IWV_OLD_VOID(ibv_ack_async_event)
IWV_OLD_VOID(ibv_ack_cq_events)
IWV_OLD_PTR(ibv_alloc_pd)
IWV_OLD_INT(ibv_attach_mcast)
IWV_OLD_INT(ibv_close_device)
IWV_OLD_PTR(ibv_create_ah)
IWV_OLD_PTR(ibv_create_cq)
IWV_OLD_PTR(ibv_create_qp)
IWV_OLD_PTR(ibv_create_srq)
IWV_OLD_INT(ibv_dealloc_pd)
IWV_OLD_INT(ibv_dereg_mr)
IWV_OLD_INT(ibv_destroy_ah)
IWV_OLD_INT(ibv_destroy_cq)
IWV_OLD_INT(ibv_destroy_qp)
IWV_OLD_INT(ibv_destroy_srq)
IWV_OLD_INT(ibv_detach_mcast)
IWV_OLD_VOID(ibv_free_device_list)
IWV_OLD_INT(ibv_get_async_event)
IWV_OLD_INT(ibv_get_cq_event)
IWV_OLD_INT(ibv_get_device_guid)
IWV_OLD_PTR(ibv_get_device_list)
IWV_OLD_PTR(ibv_get_device_name)
IWV_OLD_INT(ibv_modify_qp)
IWV_OLD_INT(ibv_modify_srq)
IWV_OLD_PTR(ibv_open_device)
IWV_OLD_INT(ibv_query_device)
IWV_OLD_INT(ibv_query_gid)
IWV_OLD_INT(ibv_query_pkey)
IWV_OLD_INT(ibv_query_port)
IWV_OLD_INT(ibv_query_qp)
IWV_OLD_INT(ibv_query_srq)
IWV_OLD_PTR(ibv_reg_mr)
IWV_OLD_INT(ibv_resize_cq)
