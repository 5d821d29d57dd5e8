// SPDX-License-Identifier: MIT
/*
 * The device context: the STag table every QP checks against, the progress
 * loops (progress.c), the debug log and the optional pcap trace.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "verbs/verbs.h"

static pthread_once_t threads_once = PTHREAD_ONCE_INIT;

/* libevent must lock its structures: callers post from any thread. */
static void enable_threads(void)
{
	evthread_use_pthreads();
}

/*
 * The trace file's name: @path with each "%p" replaced by the process ID
 * and "%%" by "%".  The processes of one job (an MPI job's ranks under
 * iwarp-run -t) then write a file each, where a shared one would have
 * each truncate and overwrite the others'.  NULL when out of memory.
 */
static char *trace_name(const char *path)
{
	char pid[24], *out, *o;
	size_t n = 1;

	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	for (const char *p = path; *p; p++)
		n += p[0] == '%' && p[1] == 'p' ? strlen(pid) : 1;
	out = o = malloc(n);
	if (!out)
		return NULL;
	for (const char *p = path; *p; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			memcpy(o, pid, strlen(pid));
			o += strlen(pid);
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			*o++ = '%';
			p++;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	return out;
}

/*
 * Opens a device context.  Returns NULL with errno set on failure: ENOMEM,
 * EINVAL for a bad attribute, or the errno of a trace file that cannot be
 * created or of a progress thread that cannot be started.
 */
struct iw_context *iw_open_0_2(const struct iw_context_attr *attr);
struct iw_context *iw_open_0_2(const struct iw_context_attr *attr)
{
	const char *trace = attr && attr->trace_path ? attr->trace_path
						     : getenv("IWARP_TRACE");
	const char *debug = getenv("IWARP_DEBUG");
	struct iw_context *ctx;
	int rc;

	pthread_once(&threads_once, enable_threads);
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_mutex_init(&ctx->cqs_lock, NULL);
	stats_ctx_init(ctx);
	atomic_init(&ctx->debug, debug ? atoi(debug) : 0);
	ctx_timeouts_init(ctx);
	rc = ddp_stag_table_init(&ctx->stags, attr && attr->max_mr
						      ? attr->max_mr
						      : 65536);
	if (rc)
		goto fail;
	if (trace && *trace) {
		char *name = trace_name(trace);

		rc = -ENOMEM;
		ctx->trace = name ? tp_trace_get(name, &rc) : NULL;
		free(name);
		if (!ctx->trace)
			goto fail_stags;
	}
	rc = progress_start(ctx, attr);
	if (rc)
		goto fail_trace;
	stats_register(ctx);
	return ctx;

fail_trace:
	if (ctx->trace)
		tp_trace_put(ctx->trace);
fail_stags:
	ddp_stag_table_destroy(&ctx->stags);
fail:
	pthread_mutex_destroy(&ctx->lock);
	pthread_mutex_destroy(&ctx->cqs_lock);
	stats_ctx_fini(ctx);
	free(ctx);
	errno = rc < 0 && rc > -4096 ? -rc : EINVAL;
	return NULL;
}

/*
 * iw_open() of libiwarp 0.1, whose attributes had no comp_mask: binaries
 * built against that header keep working.
 */
struct iw_context_attr_0_1 {
	struct event_base *base;
	uint32_t max_mr;
	const char *trace_path;
};

struct iw_context *iw_open_0_1(const struct iw_context_attr_0_1 *attr);
struct iw_context *iw_open_0_1(const struct iw_context_attr_0_1 *attr)
{
	struct iw_context_attr a = { 0 };

	if (!attr)
		return iw_open_0_2(NULL);
	a.base = attr->base;
	a.max_mr = attr->max_mr;
	a.trace_path = attr->trace_path;
	return iw_open_0_2(&a);
}
__asm__(".symver iw_open_0_1, iw_open@IWARP_0.1");
__asm__(".symver iw_open_0_2, iw_open@@IWARP_0.2");

/* Stops the progress threads; every other object must be gone already. */
int iw_close(struct iw_context *ctx)
{
	if (!ctx)
		return -EINVAL;
	stats_unregister(ctx);
	progress_stop(ctx);
	if (ctx->trace)
		tp_trace_put(ctx->trace);
	ddp_stag_table_destroy(&ctx->stags);
	pthread_mutex_destroy(&ctx->lock);
	pthread_mutex_destroy(&ctx->cqs_lock);
	stats_ctx_fini(ctx);
	free(ctx);
	return 0;
}

void iw_set_debug(struct iw_context *ctx, int level)
{
	if (ctx)
		atomic_store(&ctx->debug, level);
}

void iw_log(struct iw_context *ctx, int level, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (atomic_load(&ctx->debug) < level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "iwarp: %s\n", line);
}

void iw_format_addr(const struct sockaddr_storage *ss, char *out, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned int port = 0;

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		port = ntohs(a->sin6_port);
		snprintf(out, len, "[%s]:%u", host, port);
		return;
	}
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		port = ntohs(a->sin_port);
	}
	snprintf(out, len, "%s:%u", host, port);
}

/* A log line about one connection, prefixed with its two addresses. */
void iw_log_id(struct iw_cm_id *id, const char *fmt, ...)
{
	char local[64] = "-", peer[64] = "-", line[512];
	va_list ap;

	if (atomic_load(&id->ctx->debug) < 1)
		return;
	if (id->has_tp) {
		iw_format_addr(&id->tp.local, local, sizeof(local));
		iw_format_addr(&id->tp.peer, peer, sizeof(peer));
	}
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "iwarp: %s -> %s: %s\n", local, peer, line);
}
