// SPDX-License-Identifier: MIT
/*
 * sysfs as rdma-core's utilities read it.  iwarp0 has no kernel device,
 * so the files under its paths are answered here (ibv_devinfo reads
 * board_id this way); any other path is read from the file system.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "compat/ibverbs/ibverbs.h"
#include "compat/ibverbs/sysfs.h"
#include "config.h"

const char *ibv_get_sysfs_path(void)
{
	return "/sys";
}

/* The text of our device's file @file, or NULL when there is none. */
static const char *device_file(const char *dir, const char *file, char *tmp,
			       size_t len)
{
	uint8_t g[8];

	if (strcmp(dir, IWV_SYSFS_IBDEV "/" IWV_DEVICE_NAME) &&
	    strcmp(dir, IWV_SYSFS_VERBS "/uverbs_" IWV_DEVICE_NAME))
		return NULL;
	if (!strcmp(file, "board_id") || !strcmp(file, "hca_type"))
		return "libiwarp";
	if (!strcmp(file, "fw_ver"))
		return PACKAGE_VERSION;
	if (!strcmp(file, "hw_rev"))
		return "0";
	if (!strcmp(file, "node_type"))
		return "4: RNIC";
	if (!strcmp(file, "node_desc"))
		return "libiwarp iWARP over TCP";
	if (!strcmp(file, "ibdev"))
		return IWV_DEVICE_NAME;
	if (!strcmp(file, "node_guid") || !strcmp(file, "sys_image_guid")) {
		iwv_node_guid(g);
		snprintf(tmp, len, "%02x%02x:%02x%02x:%02x%02x:%02x%02x", g[0],
			 g[1], g[2], g[3], g[4], g[5], g[6], g[7]);
		return tmp;
	}
	return NULL;
}

/*
 * Reads @dir/@file into @buf, without its trailing newline, and returns
 * the length, or -1 with errno (a file that does not fit is an error).
 */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size)
{
	char path[4096], tmp[64];
	const char *text;
	ssize_t n;
	int fd;

	if (!dir || !file || !buf || !size) {
		errno = EINVAL;
		return -1;
	}
	text = device_file(dir, file, tmp, sizeof(tmp));
	if (text) {
		n = (ssize_t)strlen(text);
		if ((size_t)n >= size) {
			errno = ENOSPC;
			return -1;
		}
		memcpy(buf, text, (size_t)n + 1);
		return (int)n;
	}
	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size);
	close(fd);
	if (n <= 0)
		return (int)n;
	if (buf[n - 1] == '\n')
		buf[--n] = '\0';
	else if ((size_t)n < size)
		buf[n] = '\0';
	else {
		errno = ENOSPC;
		return -1;
	}
	return (int)n;
}
