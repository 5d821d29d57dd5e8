// SPDX-License-Identifier: MIT
/*
 * Runs a fuzz target's entry point over saved inputs, without libFuzzer:
 * the seed corpus and the inputs that once broke something (regress/).
 * With no argument it replays the target's own directories, REPLAY_CORPUS
 * and REPLAY_REGRESS (which a target with no regressions yet may lack);
 * otherwise the files and directories named.  Any broken invariant aborts,
 * as it would under the fuzzer; replaying nothing at all is a failure too.
 */
#include "config.h" /* _GNU_SOURCE: asprintf */

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

#pragma weak LLVMFuzzerInitialize

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;

	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (;;) {
		size_t n;

		if (len == cap) {
			uint8_t *b = realloc(buf, cap ? 2 * cap : 4096);

			if (!b) {
				fprintf(stderr, "replay: out of memory\n");
				free(buf);
				fclose(f);
				return -1;
			}
			buf = b;
			cap = cap ? 2 * cap : 4096;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	fclose(f);
	/* a private copy of exactly the input's size, as libFuzzer gives */
	{
		uint8_t *exact = malloc(len ? len : 1);

		if (!exact) {
			free(buf);
			return -1;
		}
		memcpy(exact, buf, len);
		free(buf);
		LLVMFuzzerTestOneInput(exact, len);
		free(exact);
	}
	return 0;
}

/* Every regular file of @dir, in name order; returns how many, or -1. */
static long replay_dir(const char *dir)
{
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;
	long done = 0;
	DIR *d = opendir(dir);

	if (!d) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **p = realloc(names, (cap ? 2 * cap : 64) *
							  sizeof(*names));

			if (!p)
				break;
			names = p;
			cap = cap ? 2 * cap : 64;
		}
		if (asprintf(&names[n], "%s/%s", dir, e->d_name) < 0)
			break;
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), by_name);
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		if (done >= 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
			done = replay_file(names[i]) ? -1 : done + 1;
		free(names[i]);
	}
	free(names);
	return done;
}

int main(int argc, char **argv)
{
	static const char *const defaults[] = { REPLAY_CORPUS, REPLAY_REGRESS };
	const char *const *paths = defaults;
	int n_paths = (int)(sizeof(defaults) / sizeof(defaults[0]));
	long total = 0;

	if (argc > 1) {
		paths = (const char *const *)argv + 1;
		n_paths = argc - 1;
	}
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 0; i < n_paths; i++) {
		struct stat st;
		long n;

		if (stat(paths[i], &st)) {
			/* a target without regressions yet has no directory */
			if (paths == defaults && i == 1 && errno == ENOENT)
				continue;
			fprintf(stderr, "replay: %s: %s\n", paths[i],
				strerror(errno));
			return 1;
		}
		n = S_ISDIR(st.st_mode) ? replay_dir(paths[i])
					: replay_file(paths[i]) ? -1 : 1;
		if (n < 0)
			return 1;
		printf("%s: %ld inputs\n", paths[i], n);
		total += n;
	}
	if (total == 0) {
		fprintf(stderr, "replay: no inputs found\n");
		return 1;
	}
	return 0;
}
