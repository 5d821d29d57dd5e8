// SPDX-License-Identifier: MIT
/* Where the statistics endpoints live (stats_path.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/stats_path.h"

int stats_path_dir(char *dir, size_t len, bool create)
{
	const char *env = getenv("IWARP_STATS_DIR");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char run[64];
	struct stat st;
	int n;

	snprintf(run, sizeof(run), "/run/user/%ld", (long)geteuid());
	if (env && *env)
		n = snprintf(dir, len, "%s", env);
	else if (xdg && xdg[0] == '/')
		n = snprintf(dir, len, "%s/iwarp", xdg);
	else if (!stat(run, &st) && S_ISDIR(st.st_mode) &&
		 st.st_uid == geteuid())
		n = snprintf(dir, len, "%s/iwarp", run);
	else
		n = snprintf(dir, len, "/tmp/iwarp-%ld", (long)geteuid());
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	if (create && mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st))
		return -ENOENT;
	/* /tmp is everyone's: a directory someone else made there, or one
	 * others may enter, is not ours to serve from or read */
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return -EPERM;
	return 0;
}
