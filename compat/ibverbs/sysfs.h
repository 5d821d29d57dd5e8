/* SPDX-License-Identifier: MIT */
/*
 * rdma-core's sysfs readers, exported for its utilities but declared in
 * no public header, and the files our device answers for itself.
 */
#ifndef IWV_SYSFS_H
#define IWV_SYSFS_H

#include <stddef.h>

#define IWV_SYSFS_IBDEV "/sys/class/infiniband"
#define IWV_SYSFS_VERBS "/sys/class/infiniband_verbs"

const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size);

#endif /* IWV_SYSFS_H */
