// SPDX-License-Identifier: MIT
/*
 * The process's statistics endpoint, read by iwarp-stat(1): a Unix stream
 * socket <dir>/<pid>.sock (lib/stats_path.h), in a directory of the
 * user's own that nobody else may enter (0700, checked), the socket
 * itself 0600.
 *
 * A thread of its own serves it, far from the data path, up to 16 readers
 * at once (one more drops the one nearest its deadline): it takes
 * connections only from the same user (SO_PEERCRED), reads one request
 * line within a second and writes the answer within two, or drops the
 * reader; none holds up another, nor the endpoint's stop.  Nothing a
 * reader sends goes anywhere but into a 64-octet buffer compared with the
 * one request known ("stats"); the snapshot reads counters that the data
 * path writes without waiting for it, and each connection's lock only for
 * the copy of its state.
 *
 * It runs while the process has a context open, and its socket goes with
 * the last iw_close() or at exit(); a process killed by a signal leaves
 * it behind, and iwarp-stat, or the next process to open an endpoint
 * there, recognises it by its dead pid and removes it.  IWARP_STATS=0
 * in the environment turns the endpoint off (the counters stay, for
 * iw_query_qp_stats()).
 */
#define _GNU_SOURCE /* accept4(), struct ucred */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "lib/stats_path.h"
#include "verbs/verbs.h"

#define STATS_REQ_MAX 64
#define STATS_READ_MS 1000
#define STATS_WRITE_MS 2000
#define STATS_READERS 16

/* The process's contexts: the one piece of process-wide state, as the
 * endpoint is one per process.  server_lock > registry_lock. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct iw_context *contexts;
static uint32_t next_ctx_id = 1;

static pthread_mutex_t server_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	pid_t pid; /* the process that runs it; 0: none */
	int lfd, stop_fd;
	pthread_t thread;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
} srv = { .lfd = -1, .stop_fd = -1 };

static pthread_once_t once = PTHREAD_ONCE_INIT;

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The whole answer: the process, then each context's records. */
static char *snapshot(size_t *len)
{
	char comm[64] = "?";
	char *buf = NULL;
	FILE *f, *c;

	c = fopen("/proc/self/comm", "r");
	if (c) {
		if (fgets(comm, sizeof(comm), c)) {
			comm[strcspn(comm, "\n")] = 0;
			/* a value holds no space: the reader splits on them */
			for (char *q = comm; *q; q++)
				if ((unsigned char)*q <= ' ')
					*q = '_';
		}
		fclose(c);
	}
	f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	pthread_mutex_lock(&registry_lock);
	fprintf(f, "process pid=%ld uid=%ld comm=%s version=1\n",
		(long)getpid(), (long)geteuid(), comm[0] ? comm : "?");
	for (struct iw_context *ctx = contexts; ctx; ctx = ctx->reg_next)
		stats_report_ctx(f, ctx);
	pthread_mutex_unlock(&registry_lock);
	fputs(STATS_END, f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/*
 * A reader being served: its request coming in, then the answer going
 * out, each within its deadline, or it is dropped.
 */
struct reader {
	int fd;
	long long deadline;
	char req[STATS_REQ_MAX];
	size_t have;
	char *out; /* the answer, once the request is in */
	size_t out_len, out_off;
};

static void reader_drop(struct reader *r)
{
	close(r->fd);
	free(r->out);
	*r = (struct reader){ .fd = -1 };
}

/* A new reader: only the same user's (the directory says so too, this
 * makes sure); with every slot taken, the one nearest its deadline goes. */
static void reader_accept(struct reader *rd)
{
	struct reader *slot = NULL;
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	int fd = accept4(srv.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) ||
	    cred.uid != geteuid()) {
		close(fd);
		return;
	}
	for (int i = 0; i < STATS_READERS; i++) {
		if (rd[i].fd < 0) {
			slot = &rd[i];
			break;
		}
		if (!slot || rd[i].deadline < slot->deadline)
			slot = &rd[i];
	}
	if (slot->fd >= 0)
		reader_drop(slot);
	slot->fd = fd;
	slot->deadline = now_ms() + STATS_READ_MS;
}

/* Its request: one line, the one known; anything else gets an error. */
static void reader_read(struct reader *r)
{
	static const char err[] = "error unknown request\n";
	ssize_t n = recv(r->fd, r->req + r->have, sizeof(r->req) - r->have, 0);
	char *nl;

	if (n <= 0) {
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			reader_drop(r);
		return;
	}
	r->have += (size_t)n;
	nl = memchr(r->req, '\n', r->have);
	if (!nl && r->have < sizeof(r->req))
		return;
	if (nl && r->have == sizeof(STATS_REQUEST) - 1 &&
	    !memcmp(r->req, STATS_REQUEST, r->have))
		r->out = snapshot(&r->out_len);
	else if ((r->out = strdup(err)))
		r->out_len = sizeof(err) - 1;
	if (!r->out) {
		reader_drop(r);
		return;
	}
	r->deadline = now_ms() + STATS_WRITE_MS;
}

static void reader_write(struct reader *r)
{
	ssize_t n = send(r->fd, r->out + r->out_off, r->out_len - r->out_off,
			 MSG_NOSIGNAL);

	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			reader_drop(r);
		return;
	}
	r->out_off += (size_t)n;
	if (r->out_off == r->out_len)
		reader_drop(r);
}

/*
 * The endpoint's thread: up to STATS_READERS readers at once, none of
 * which can hold up another for long, nor the stop.
 */
static void *server_main(void *arg)
{
	struct reader rd[STATS_READERS];

	(void)arg;
	for (int i = 0; i < STATS_READERS; i++)
		rd[i] = (struct reader){ .fd = -1 };
	for (;;) {
		struct pollfd p[2 + STATS_READERS];
		long long now = now_ms(), next = -1;
		int n = 2;

		p[0] = (struct pollfd){ .fd = srv.stop_fd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = srv.lfd, .events = POLLIN };
		for (int i = 0; i < STATS_READERS; i++) {
			if (rd[i].fd >= 0 && rd[i].deadline <= now)
				reader_drop(&rd[i]);
			if (rd[i].fd < 0) {
				p[n++] = (struct pollfd){ .fd = -1 };
				continue;
			}
			p[n++] = (struct pollfd){
				.fd = rd[i].fd,
				.events = rd[i].out ? POLLOUT : POLLIN,
			};
			if (next < 0 || rd[i].deadline < next)
				next = rd[i].deadline;
		}
		if (poll(p, (nfds_t)n, next < 0 ? -1 : (int)(next - now)) < 0 &&
		    errno != EINTR)
			break;
		if (p[0].revents)
			break;
		for (int i = 0; i < STATS_READERS; i++) {
			short ev = p[2 + i].revents;

			if (rd[i].fd < 0 || !ev)
				continue;
			if (rd[i].out && (ev & (POLLOUT | POLLERR | POLLHUP)))
				reader_write(&rd[i]);
			else if (!rd[i].out)
				reader_read(&rd[i]);
		}
		if (p[1].revents & POLLIN)
			reader_accept(rd);
	}
	for (int i = 0; i < STATS_READERS; i++)
		if (rd[i].fd >= 0)
			reader_drop(&rd[i]);
	return NULL;
}

/*
 * Removes the sockets that processes killed by a signal left in @dir: a
 * process that is gone serves nothing.  (iwarp-stat does the same.)
 */
static void sweep_stale(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[sizeof(((struct sockaddr_un *)0)->sun_path)], *end;
		long pid = strtol(de->d_name, &end, 10);

		if (pid <= 0 || strcmp(end, ".sock") || !kill((pid_t)pid, 0) ||
		    errno != ESRCH)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) <
		    (int)sizeof(path))
			unlink(path);
	}
	closedir(d);
}

/* Binds the socket and starts the thread; quietly nothing on failure. */
static void server_start(struct iw_context *ctx)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path) - 16];
	sigset_t all, old;
	int n;

	n = stats_path_dir(dir, sizeof(dir), true);
	if (n) {
		iw_log(ctx, 1, "stats: no private directory for the endpoint: %s",
		       strerror(-n));
		return;
	}
	sweep_stale(dir);
	n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%ld.sock", dir,
		     (long)getpid());
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
		return;
	srv.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	srv.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (srv.lfd < 0 || srv.stop_fd < 0)
		goto fail;
	unlink(sa.sun_path); /* an earlier process of this pid's, now dead */
	if (bind(srv.lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    chmod(sa.sun_path, 0600) || listen(srv.lfd, 8))
		goto fail_unlink;
	/* the application's signals go to its own threads */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	n = pthread_create(&srv.thread, NULL, server_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (n)
		goto fail_unlink;
	memcpy(srv.path, sa.sun_path, sizeof(srv.path));
	srv.pid = getpid();
	iw_log(ctx, 1, "stats: serving %s", srv.path);
	return;

fail_unlink:
	unlink(sa.sun_path);
fail:
	iw_log(ctx, 1, "stats: no endpoint: %s", strerror(errno));
	if (srv.lfd >= 0)
		close(srv.lfd);
	if (srv.stop_fd >= 0)
		close(srv.stop_fd);
	srv.lfd = srv.stop_fd = -1;
}

static void server_stop(void)
{
	uint64_t one = 1;

	if (srv.pid != getpid())
		return;
	if (write(srv.stop_fd, &one, sizeof(one)) == sizeof(one))
		pthread_join(srv.thread, NULL);
	close(srv.lfd);
	close(srv.stop_fd);
	unlink(srv.path);
	srv.lfd = srv.stop_fd = -1;
	srv.pid = 0;
}

/* exit() with contexts still open: the socket goes, the thread with the
 * process. */
static void at_exit(void)
{
	if (srv.pid == getpid())
		unlink(srv.path);
}

static void before_fork(void)
{
	pthread_mutex_lock(&server_lock);
	pthread_mutex_lock(&registry_lock);
}

static void after_fork_parent(void)
{
	pthread_mutex_unlock(&registry_lock);
	pthread_mutex_unlock(&server_lock);
}

/* The child has no server thread and none of the parent's contexts is
 * its own to show: it starts afresh at its first iw_open(). */
static void after_fork_child(void)
{
	if (srv.pid) {
		close(srv.lfd);
		close(srv.stop_fd);
		srv.lfd = srv.stop_fd = -1;
		srv.pid = 0;
	}
	contexts = NULL;
	pthread_mutex_unlock(&registry_lock);
	pthread_mutex_unlock(&server_lock);
}

static void setup_once(void)
{
	atexit(at_exit);
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

static bool endpoint_wanted(void)
{
	const char *env = getenv("IWARP_STATS");

	return !env || strcmp(env, "0") != 0;
}

void stats_register(struct iw_context *ctx)
{
	pthread_once(&once, setup_once);
	pthread_mutex_lock(&server_lock);
	pthread_mutex_lock(&registry_lock);
	ctx->stats_id = next_ctx_id++;
	ctx->stats_pid = getpid();
	ctx->reg_prev = NULL;
	ctx->reg_next = contexts;
	if (contexts)
		contexts->reg_prev = ctx;
	contexts = ctx;
	pthread_mutex_unlock(&registry_lock);
	if (!srv.pid && endpoint_wanted())
		server_start(ctx);
	pthread_mutex_unlock(&server_lock);
}

void stats_unregister(struct iw_context *ctx)
{
	bool last;

	pthread_mutex_lock(&server_lock);
	pthread_mutex_lock(&registry_lock);
	if (ctx->stats_pid == getpid()) {
		if (ctx->reg_prev)
			ctx->reg_prev->reg_next = ctx->reg_next;
		else
			contexts = ctx->reg_next;
		if (ctx->reg_next)
			ctx->reg_next->reg_prev = ctx->reg_prev;
	}
	last = !contexts;
	pthread_mutex_unlock(&registry_lock);
	if (last)
		server_stop();
	pthread_mutex_unlock(&server_lock);
}
