// SPDX-License-Identifier: MIT
/*
 * iwarp-stat: the contexts, listeners and connections of the running
 * libiwarp programs of the user, with their counters and TCP figures,
 * read from each process's statistics endpoint (lib/stats_path.h).  The
 * endpoint answers with key=value records (verbs/stats_report.c); this
 * tool shows them as a table, or as JSON for scripts, once or every
 * interval with rates per second.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "lib/stats_path.h"

#define PROG "iwarp-stat"
#define ANSWER_MS 3000
#define MAX_FIELDS 160

/* One record of an answer: its kind and its key=value pairs. */
struct rec {
	char *kind;
	int n;
	char *key[MAX_FIELDS];
	char *val[MAX_FIELDS];
};

/* One process's answer. */
struct proc {
	long pid;
	char *text;
	struct rec *recs;
	int n, cap;
};

struct snap {
	struct proc *p;
	int n;
	double t; /* seconds, monotonic */
};

static bool verbose;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *get(const struct rec *r, const char *key)
{
	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->key[i], key))
			return r->val[i];
	return NULL;
}

static uint64_t num(const struct rec *r, const char *key)
{
	const char *v = get(r, key);

	return v ? strtoull(v, NULL, 10) : 0;
}

/* Splits an answer in place into records; false when it is not one. */
static bool parse(struct proc *p)
{
	char *save = NULL, *line;
	bool ended = false;

	for (line = strtok_r(p->text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct rec *r;
		char *s2 = NULL, *tok;

		if (!strcmp(line, "end")) {
			ended = true;
			break;
		}
		if (p->n == p->cap) { /* doubling: an answer may have many */
			int cap = p->cap ? 2 * p->cap : 16;

			r = realloc(p->recs, (size_t)cap * sizeof(*r));
			if (!r)
				return false;
			p->recs = r;
			p->cap = cap;
		}
		r = &p->recs[p->n++];
		memset(r, 0, sizeof(*r));
		r->kind = strtok_r(line, " ", &s2);
		while ((tok = strtok_r(NULL, " ", &s2)) && r->n < MAX_FIELDS) {
			char *eq = strchr(tok, '=');

			if (!eq)
				continue;
			*eq = 0;
			r->key[r->n] = tok;
			r->val[r->n++] = eq + 1;
		}
	}
	return ended && p->n > 0 && !strcmp(p->recs[0].kind, "process");
}

/* The answer of the endpoint at @path, or NULL with errno set. */
static char *ask(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	double deadline = now_s() + ANSWER_MS / 1000.0;
	size_t have = 0, cap = 1 << 16;
	bool refused = false;
	char *buf = NULL;
	int fd, e;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		goto fail;
	buf = malloc(cap);
	if (!buf)
		goto fail;
	/* closed on us: an empty answer (the endpoint refused to talk) */
	if (send(fd, STATS_REQUEST, strlen(STATS_REQUEST), MSG_NOSIGNAL) < 0) {
		if (errno != EPIPE && errno != ECONNRESET)
			goto fail;
		refused = true;
	}
	while (!refused) {
		struct pollfd pf = { fd, POLLIN, 0 };
		int left = (int)((deadline - now_s()) * 1000);
		ssize_t n;

		if (left <= 0 || poll(&pf, 1, left) != 1) {
			errno = ETIMEDOUT;
			goto fail;
		}
		if (have + 1 >= cap) {
			char *b = realloc(buf, cap * 2);

			if (!b)
				goto fail;
			buf = b;
			cap *= 2;
		}
		n = read(fd, buf + have, cap - 1 - have);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECONNRESET)
				break;
			goto fail;
		}
		if (n == 0)
			break;
		have += (size_t)n;
	}
	buf[have] = 0;
	close(fd);
	return buf;
fail:
	e = errno;
	free(buf);
	close(fd);
	errno = e;
	return NULL;
}

/* Whether process @pid is gone (not merely someone else's). */
static bool pid_gone(long pid)
{
	return kill((pid_t)pid, 0) && errno == ESRCH;
}

/*
 * Reads process @pid's endpoint in @dir into @p.  A socket that nothing
 * serves, of a process that is gone (killed before it could remove it),
 * is removed.  Returns 0, or -errno.
 */
static int read_proc(const char *dir, long pid, struct proc *p)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int n;

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	n = snprintf(path, sizeof(path), "%s/%ld.sock", dir, pid);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	p->text = ask(path);
	if (!p->text) {
		int e = errno;

		if ((e == ECONNREFUSED || e == ENOENT) && pid_gone(pid)) {
			if (!unlink(path) && verbose)
				fprintf(stderr,
					PROG ": removed %s, left by process %ld "
					     "that is gone\n",
					path, pid);
			return -ESRCH;
		}
		return -e;
	}
	/* an endpoint that closes without a word: not for this user */
	if (!p->text[0])
		return -EACCES;
	if (!parse(p))
		return -EPROTO;
	return 0;
}

static void free_snap(struct snap *s)
{
	for (int i = 0; i < s->n; i++) {
		free(s->p[i].text);
		free(s->p[i].recs);
	}
	free(s->p);
	memset(s, 0, sizeof(*s));
}

static int by_pid(const void *a, const void *b)
{
	long x = ((const struct proc *)a)->pid, y = ((const struct proc *)b)->pid;

	return (x > y) - (x < y);
}

/* Every endpoint in @dir (or only @only's); returns 0 or -errno. */
static int take_snap(const char *dir, long only, struct snap *s)
{
	struct dirent *de;
	DIR *d;

	memset(s, 0, sizeof(*s));
	s->t = now_s();
	if (only > 0) {
		struct proc p;
		int rc = read_proc(dir, only, &p);

		if (rc) {
			free(p.text);
			free(p.recs);
			return rc;
		}
		s->p = malloc(sizeof(p));
		if (!s->p)
			return -ENOMEM;
		s->p[0] = p;
		s->n = 1;
		return 0;
	}
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		struct proc p, *np;

		if (pid <= 0 || strcmp(end, ".sock"))
			continue;
		if (read_proc(dir, pid, &p)) {
			free(p.text);
			free(p.recs);
			continue;
		}
		np = realloc(s->p, (size_t)(s->n + 1) * sizeof(*np));
		if (!np) {
			free(p.text);
			free(p.recs);
			break;
		}
		s->p = np;
		s->p[s->n++] = p;
	}
	closedir(d);
	qsort(s->p, (size_t)s->n, sizeof(*s->p), by_pid);
	return 0;
}

/* The same connection in an earlier snapshot, for rates. */
static const struct rec *earlier(const struct snap *prev, long pid,
				 const struct rec *r)
{
	if (!prev)
		return NULL;
	for (int i = 0; i < prev->n; i++) {
		if (prev->p[i].pid != pid)
			continue;
		for (int k = 0; k < prev->p[i].n; k++) {
			const struct rec *o = &prev->p[i].recs[k];
			const char *a = get(o, "qpn"), *b = get(r, "qpn");
			const char *ca = get(o, "ctx"), *cb = get(r, "ctx");

			if (!strcmp(o->kind, r->kind) && ca && cb &&
			    !strcmp(ca, cb) && (!b || (a && !strcmp(a, b))))
				return o;
		}
	}
	return NULL;
}

static const char *const rate_keys[] = { "tx_octets", "rx_octets",
					 "tx_fpdus", "rx_fpdus" };

static double rate(const struct rec *now, const struct rec *then,
		   const char *key, double dt)
{
	uint64_t a = num(now, key), b = then ? num(then, key) : a;

	return dt > 0 && a >= b ? (double)(a - b) / dt : 0;
}

/* ---- JSON ------------------------------------------------------------- */

static bool is_number(const char *v)
{
	if (!*v || (v[0] == '0' && v[1]))
		return false;
	for (; *v; v++)
		if (!isdigit((unsigned char)*v))
			return false;
	return true;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

/* A record's fields as JSON members, numbers bare and the rest strings. */
static void json_fields(const struct rec *r)
{
	for (int i = 0; i < r->n; i++) {
		if (i)
			putchar(',');
		json_str(r->key[i]);
		putchar(':');
		if (is_number(r->val[i]))
			fputs(r->val[i], stdout);
		else
			json_str(r->val[i]);
	}
}

static void json_rec(const struct rec *r, const struct rec *then, double dt,
		     bool rates)
{
	putchar('{');
	json_fields(r);
	if (rates)
		for (size_t k = 0; k < sizeof(rate_keys) / sizeof(*rate_keys); k++)
			printf(",\"%s_per_s\":%.1f", rate_keys[k],
			       rate(r, then, rate_keys[k], dt));
	putchar('}');
}

static void json_kind(const struct proc *p, const char *kind, const char *name,
		      const struct snap *prev, double dt, bool rates)
{
	bool first = true;

	printf(",\"%s\":[", name);
	for (int i = 1; i < p->n; i++) {
		if (strcmp(p->recs[i].kind, kind))
			continue;
		if (!first)
			putchar(',');
		first = false;
		json_rec(&p->recs[i], earlier(prev, p->pid, &p->recs[i]), dt,
			 rates);
	}
	putchar(']');
}

static void show_json(const struct snap *s, const struct snap *prev)
{
	double dt = prev ? s->t - prev->t : 0;

	printf("{\"processes\":[");
	for (int i = 0; i < s->n; i++) {
		const struct proc *p = &s->p[i];

		if (i)
			putchar(',');
		putchar('{');
		json_fields(&p->recs[0]);
		json_kind(p, "context", "contexts", prev, dt, prev != NULL);
		json_kind(p, "listener", "listeners", prev, dt, false);
		json_kind(p, "conn", "connections", prev, dt, prev != NULL);
		putchar('}');
	}
	printf("]}\n");
	fflush(stdout);
}

/* ---- the table -------------------------------------------------------- */

static const char *const op_keys[] = { "send", "send_inv", "send_se",
				       "send_se_inv", "write", "read_req",
				       "read_resp", "terminate", "atomic_req",
				       "atomic_resp", "imm", "imm_se" };

static void show_msgs(const struct rec *r, const char *dir)
{
	bool any = false;
	char key[32];

	printf("      %s messages:", dir);
	for (size_t i = 0; i < sizeof(op_keys) / sizeof(*op_keys); i++) {
		uint64_t v;

		snprintf(key, sizeof(key), "%s_%s", dir, op_keys[i]);
		v = num(r, key);
		if (v) {
			printf(" %s %" PRIu64, op_keys[i], v);
			any = true;
		}
	}
	printf("%s\n", any ? "" : " none");
}

static const char *v(const struct rec *r, const char *key)
{
	const char *s = get(r, key);

	return s ? s : "-";
}

static void show_conn(const struct rec *r, const struct rec *then, double dt,
		      bool rates)
{
	printf("  QP %s %s  %s -> %s  ctx %s, driven by %s\n", v(r, "qpn"),
	       v(r, "state"), v(r, "local"), v(r, "peer"), v(r, "ctx"),
	       v(r, "driver"));
	if (get(r, "mpa_rev"))
		printf("      MPA rev %s, %s, CRC %s, markers tx %s rx %s, RTR %s,"
		       " MULPDU %s\n",
		       v(r, "mpa_rev"), v(r, "role"),
		       num(r, "crc") ? "on" : "off",
		       num(r, "markers_tx") ? "on" : "off",
		       num(r, "markers_rx") ? "on" : "off", v(r, "rtr"),
		       v(r, "mulpdu"));
	printf("      SQ %s/%s  RQ %s/%s  ORD %s/%s (deepest %s)  IRD %s/%s"
	       " (deepest %s)\n",
	       v(r, "sq"), v(r, "sq_depth"), v(r, "rq"), v(r, "rq_depth"),
	       v(r, "ord_out"), v(r, "ord"), v(r, "ord_max"), v(r, "ird_out"),
	       v(r, "ird"), v(r, "ird_max"));
	printf("      tx %s octets %s FPDUs, rx %s octets %s FPDUs\n",
	       v(r, "tx_octets"), v(r, "tx_fpdus"), v(r, "rx_octets"),
	       v(r, "rx_fpdus"));
	if (rates)
		printf("      per second: tx %.0f octets %.0f FPDUs, rx %.0f "
		       "octets %.0f FPDUs\n",
		       rate(r, then, "tx_octets", dt),
		       rate(r, then, "tx_fpdus", dt),
		       rate(r, then, "rx_octets", dt),
		       rate(r, then, "rx_fpdus", dt));
	show_msgs(r, "tx");
	show_msgs(r, "rx");
	printf("      errors: CRC %s, markers %s; Terminates sent rdmap/ddp/llp"
	       " %s/%s/%s%s%s, received %s/%s/%s%s%s; flushed %s\n",
	       v(r, "crc_errors"), v(r, "marker_errors"), v(r, "term_tx_rdmap"),
	       v(r, "term_tx_ddp"), v(r, "term_tx_llp"),
	       get(r, "last_term_tx") ? " last " : "",
	       get(r, "last_term_tx") ? get(r, "last_term_tx") : "",
	       v(r, "term_rx_rdmap"), v(r, "term_rx_ddp"), v(r, "term_rx_llp"),
	       get(r, "last_term_rx") ? " last " : "",
	       get(r, "last_term_rx") ? get(r, "last_term_rx") : "",
	       v(r, "flushed"));
	if (get(r, "tcp_state"))
		printf("      TCP: rtt %s us (var %s), cwnd %s, unacked %s, "
		       "retrans %s, pacing %s octets/s, mss %s\n",
		       v(r, "tcp_rtt_us"), v(r, "tcp_rttvar_us"),
		       v(r, "tcp_cwnd"), v(r, "tcp_unacked"),
		       v(r, "tcp_retrans"), v(r, "tcp_pacing_rate"),
		       v(r, "tcp_mss"));
}

static void show_table(const struct snap *s, const struct snap *prev)
{
	double dt = prev ? s->t - prev->t : 0;

	if (!s->n)
		printf("no libiwarp processes of this user\n");
	for (int i = 0; i < s->n; i++) {
		const struct proc *p = &s->p[i];
		const struct rec *pr = &p->recs[0];
		int n = 0;

		for (int k = 1; k < p->n; k++)
			n += !strcmp(p->recs[k].kind, "context");
		printf("process %ld (%s), %d context%s\n", p->pid,
		       v(pr, "comm"), n, n == 1 ? "" : "s");
		for (int k = 1; k < p->n; k++) {
			const struct rec *r = &p->recs[k];

			if (!strcmp(r->kind, "context"))
				printf("  context %s: progress %s, threads %s, "
				       "%s QPs, %s listeners, %s QPs ever\n",
				       v(r, "ctx"), v(r, "progress"),
				       v(r, "threads"), v(r, "qps"),
				       v(r, "listeners"), v(r, "qps_created"));
			else if (!strcmp(r->kind, "listener"))
				printf("  listening on %s (ctx %s)\n",
				       v(r, "local"), v(r, "ctx"));
			else if (!strcmp(r->kind, "conn"))
				show_conn(r, earlier(prev, p->pid, r), dt,
					  prev != NULL);
		}
	}
	fflush(stdout);
}

/* ---- main ------------------------------------------------------------- */

/* Why -p @pid has nothing to show, on stderr; the exit status. */
static int explain_pid(long pid, int rc)
{
	char proc[64];
	struct stat st;

	snprintf(proc, sizeof(proc), "/proc/%ld", pid);
	if (stat(proc, &st) || rc == -ESRCH) {
		fprintf(stderr, PROG ": process %ld does not exist (any more)\n",
			pid);
		return 1;
	}
	if (st.st_uid != geteuid() && rc != -EACCES) {
		fprintf(stderr,
			PROG ": process %ld belongs to another user (uid %ld): "
			     "only that user can read its statistics\n",
			pid, (long)st.st_uid);
		return 1;
	}
	if (rc == -ENOENT)
		fprintf(stderr,
			PROG ": process %ld shows no libiwarp statistics: it has"
			     " no libiwarp context open, or runs with "
			     "IWARP_STATS=0 or another IWARP_STATS_DIR\n",
			pid);
	else if (rc == -EACCES)
		fprintf(stderr,
			PROG ": process %ld answered nothing: its endpoint "
			     "serves only its own user\n",
			pid);
	else
		fprintf(stderr, PROG ": process %ld: %s\n", pid,
			rc == -EPROTO ? "answer not understood" : strerror(-rc));
	return 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " [-p PID] [-w [SECONDS] | --watch[=SECONDS]] "
		"[--json] [-v]\n"
		"  -p, --pid PID     only this process\n"
		"  -w, --watch [S]   again every S seconds (default 1), with "
		"rates\n"
		"  -j, --json        JSON for scripts\n"
		"  -c, --count N     with --watch: stop after N rounds\n"
		"  -v, --verbose     say which stale endpoints were removed\n"
		"  -h, --help        this text\n");
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "watch", optional_argument, NULL, 'w' },
		{ "json", no_argument, NULL, 'j' },
		{ "count", required_argument, NULL, 'c' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct snap cur, prev = { 0 };
	double interval = 0;
	bool json = false, have_prev = false;
	long pid = 0, count = 0;
	char dir[96];
	int c, rc;

	while ((c = getopt_long(argc, argv, "p:w::jc:vh", longopts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'p':
			pid = strtol(optarg, &end, 10);
			if (*end || pid <= 0) {
				fprintf(stderr, PROG ": bad pid '%s'\n", optarg);
				return 2;
			}
			break;
		case 'w':
			if (!optarg && optind < argc && isdigit((unsigned char)
								argv[optind][0]))
				optarg = argv[optind++];
			interval = optarg ? strtod(optarg, &end) : 1;
			if ((optarg && *end) || interval <= 0) {
				fprintf(stderr, PROG ": bad interval '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'j':
			json = true;
			break;
		case 'c':
			count = strtol(optarg, &end, 10);
			if (*end || count <= 0) {
				fprintf(stderr, PROG ": bad count '%s'\n", optarg);
				return 2;
			}
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	rc = stats_path_dir(dir, sizeof(dir), false);
	if (rc == -EPERM) {
		fprintf(stderr,
			PROG ": %s is not a directory of this user's own that "
			     "others cannot enter: not reading it\n",
			dir);
		return 1;
	}
	if (rc && rc != -ENOENT) {
		fprintf(stderr, PROG ": %s\n", strerror(-rc));
		return 1;
	}
	if (rc == -ENOENT && pid)
		return explain_pid(pid, -ENOENT);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	for (long round = 1;; round++) {
		if (rc == -ENOENT) { /* no endpoint was ever made: none runs */
			memset(&cur, 0, sizeof(cur));
			cur.t = now_s();
			rc = 0;
		} else {
			rc = take_snap(dir, pid, &cur);
		}
		if (rc < 0) {
			if (pid)
				return explain_pid(pid, rc);
			fprintf(stderr, PROG ": %s: %s\n", dir, strerror(-rc));
			return 1;
		}
		if (!json && interval && round > 1)
			printf("\n");
		if (json)
			show_json(&cur, have_prev ? &prev : NULL);
		else
			show_table(&cur, have_prev ? &prev : NULL);
		if (have_prev)
			free_snap(&prev);
		prev = cur;
		have_prev = true;
		if (!interval || (count && round >= count) || stop)
			break;
		{
			struct timespec ts = {
				(time_t)interval,
				(long)((interval - (time_t)interval) * 1e9)
			};

			while (nanosleep(&ts, &ts) && !stop)
				;
		}
		if (stop)
			break;
		rc = stats_path_dir(dir, sizeof(dir), false);
		if (rc && rc != -ENOENT)
			break;
	}
	if (have_prev)
		free_snap(&prev);
	return 0;
}
