/* SPDX-License-Identifier: MIT */
/*
 * Where a process's statistics endpoint lives, for the library that
 * serves it and iwarp-stat(1) that reads it: <dir>/<pid>.sock, <dir>
 * being $IWARP_STATS_DIR, else $XDG_RUNTIME_DIR/iwarp, else
 * /run/user/<uid>/iwarp, else /tmp/iwarp-<uid>.
 */
#ifndef IW_LIB_STATS_PATH_H
#define IW_LIB_STATS_PATH_H

#include <stdbool.h>
#include <stddef.h>

/* The request a reader sends, and the line that ends an answer. */
#define STATS_REQUEST "stats\n"
#define STATS_END "end\n"

/*
 * Writes the directory to @dir.  With @create it is made (0700) when
 * missing.  Returns 0, -ENAMETOOLONG, -ENOENT when it does not exist, or
 * -EPERM when it is not a directory the user alone owns and may enter
 * (owner, no group or other bits): then nothing there is to be trusted.
 */
int stats_path_dir(char *dir, size_t len, bool create);

#endif /* IW_LIB_STATS_PATH_H */
