// SPDX-License-Identifier: MIT
/*
 * iwarp-perf: bandwidth, latency and message rate of Send, RDMA Write and
 * RDMA Read over libiwarp, in perftest's manner: without a host it serves
 * one client run; with a host it connects and measures; --loopback does
 * both in one process.  --tcp repeats each size over a plain TCP socket
 * and prints the ratio, so the cost of the stack is measured in one run.
 * See iwarp-perf(1) and the comments atop perf_client.c and perf_tcp.c
 * for exactly what is timed.
 */
#include "config.h" /* _GNU_SOURCE: pipe2, accept4 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

#define DEFAULT_TIMEOUT_MS 10000

/* perftest's counts, cut so that no size moves much over 1 GiB. */
uint64_t perf_default_iters(const struct perf_opts *o, size_t size)
{
	uint64_t n = o->mode == PERF_LAT ? 1000 : o->mode == PERF_BW ? 5000
								  : 100000;
	uint64_t cap = (1ull << 30) / size;

	if (cap < 100)
		cap = 100;
	return n < cap ? n : cap;
}

/* ---- the client's run ---------------------------------------------------- */

/*
 * One slice of a size: the libiwarp step, then the TCP step that repeats
 * its counts; each adds to its row.
 */
static int run_slice(struct perf_client *c, struct perf_tcp *t, size_t size,
		     uint64_t iters, struct perf_result *r,
		     struct perf_result *tr)
{
	uint64_t per_qp[PERF_MAX_QPS];
	struct perf_result part = { 0 };
	struct perf_mark mark;
	int rc;

	perf_mark_now(&mark);
	rc = perf_client_step(c, size, iters, &part, per_qp);
	perf_slice_end(r, &mark, part.iters);
	perf_add_counts(r, &part);
	if (rc || !t)
		return rc;
	part = (struct perf_result){ 0 };
	perf_mark_now(&mark);
	rc = perf_tcp_step(t, size, per_qp, &part);
	perf_slice_end(tr, &mark, part.iters);
	perf_add_counts(tr, &part);
	return rc;
}

/* Every size: its slices (one unless --slices), a row. */
static int run_client(struct perf_opts *o, const char *tcp_port,
		      struct perf_idle *idle)
{
	struct perf_client *c = NULL;
	struct perf_tcp *t = NULL;
	size_t size = o->sweep ? PERF_SWEEP_MIN : o->size;
	char conn[192], words[256], idle_json[512];
	/* the client runs each slice for its share of the duration */
	struct perf_opts slice = *o;
	int rc;

	if (o->threads)
		return perf_threads_run(o, tcp_port, idle);
	slice.duration = o->duration / o->slices;
	rc = perf_client_open(&c, &slice, idle);
	if (!rc && o->tcp)
		rc = perf_tcp_open(&t, o, o->host, tcp_port);
	if (!rc) {
		perf_client_header(c, conn, sizeof(conn));
		snprintf(words, sizeof(words), "%s:%s, %s", o->host, o->port,
			 conn);
		if (idle)
			perf_idle_report(idle, o, idle_json, sizeof(idle_json));
		perf_report_header(o, words);
	}
	for (; !rc && size <= o->size; size *= 2) {
		struct perf_result r = { 0 }, tr = { 0 };
		uint64_t iters = o->duration ? 0
				 : o->iters  ? o->iters
					     : perf_default_iters(o, size);

		r.extra_json = idle ? idle_json : NULL;
		for (uint32_t k = 0; !rc && k < o->slices; k++)
			rc = run_slice(c, t, size, iters, &r, &tr);
		if (!rc)
			perf_report_row(o, size, &r, t ? &tr : NULL);
		tool_stats_free(&r.lat);
		tool_stats_free(&tr.lat);
		if (!o->sweep)
			break;
	}
	perf_tcp_close(t);
	perf_client_close(c);
	return rc ? 1 : 0;
}

/* ---- loopback: the server on a thread ------------------------------------ */

struct loopback {
	struct perf_opts o;
	int ready_fd;
	int rc;
	atomic_bool client_gone;
};

static void *loopback_server(void *arg)
{
	struct loopback *l = arg;

	l->rc = perf_server_run(&l->o, l->ready_fd);
	close(l->ready_fd); /* a client still waiting for ports learns */
	return NULL;
}

/* The server's two ports, "IWPORT TCPPORT", within the timeout. */
static int server_ports(int fd, int ms, char *iw, char *tcp)
{
	struct pollfd p = { fd, POLLIN, 0 };
	char ports[32];

	if (poll(&p, 1, ms) != 1 ||
	    read(fd, ports, sizeof(ports)) != sizeof(ports) ||
	    sscanf(ports, "%15s %15s", iw, tcp) != 2)
		return perf_fail("the loopback server did not start");
	return 0;
}

/* Server and client in one process on 127.0.0.1, as iwarp-ping does. */
static int run_loopback(struct perf_opts *o, struct perf_idle *idle)
{
	struct loopback l = { .o = *o };
	char iw_port[16], tcp_port[16];
	pthread_t th;
	int fds[2], rc;

	if (pipe2(fds, O_CLOEXEC)) {
		perf_fail("pipe: %s", strerror(errno));
		return 1;
	}
	l.o.loopback = true;
	l.o.client_gone = &l.client_gone;
	l.ready_fd = fds[1];
	if (pthread_create(&th, NULL, loopback_server, &l)) {
		close(fds[0]);
		close(fds[1]);
		perf_fail("cannot start the server thread");
		return 1;
	}
	rc = server_ports(fds[0], 2 * o->timeout_ms, iw_port, tcp_port);
	if (!rc) {
		o->host = "127.0.0.1";
		o->port = iw_port;
		rc = run_client(o, tcp_port, idle);
	}
	atomic_store(&l.client_gone, true);
	pthread_join(th, NULL);
	close(fds[0]);
	return rc || l.rc ? 1 : 0;
}

/* ---- options ------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
"usage: " PERF_PROG " [options]            serve one client run, then exit\n"
"       " PERF_PROG " [options] HOST       measure against HOST's server\n"
"       " PERF_PROG " --loopback [options] both, in one process, on 127.0.0.1\n"
"\n"
"  -m, --mode bw|lat|rate   bandwidth (default), latency, or message rate\n"
"                           (bw's pattern, one completion per DEPTH/4)\n"
"  -t, --test send|write|read|atomic|write_imm\n"
"                           Send/Receive (default), RDMA Write, RDMA Read,\n"
"                           RFC 7306 Fetch and Add (8 octets), RDMA Write\n"
"                           with Immediate Data; the last two enable RFC\n"
"                           7306 on both ends' QPs\n"
"  -s, --size SIZE          message size in octets, k/m suffixes (default\n"
"                           64k for bw, 64 for rate, 2 for lat)\n"
"  -a, --all                every power of two from 2 octets to 8 MiB\n"
"  -n, --iters N            operations per QP and size (default 5000 bw,\n"
"                           100000 rate, 1000 lat, cut to 1 GiB / size but\n"
"                           not below 100)\n"
"      --duration SECONDS   run each size this long instead\n"
"      --slices N           with --duration and --tcp: run each size as N\n"
"                           slices, libiwarp's then TCP's, one after the\n"
"                           other (each at least 0.1 s; 1 to %u), so that\n"
"                           both stacks see the machine as it drifts; the\n"
"                           row adds the slices up (1: no slicing)\n"
"  -q, --qps N              connections in parallel, results summed (1;\n"
"                           at most %u)\n"
"      --threads N          N connections, each driven by a thread of its\n"
"                           own with a CQ of its own (TCP: N sockets, a\n"
"                           thread each); rates summed, latency the\n"
"                           median of the threads' (at most %u)\n"
"  -D, --depth DEPTH        work requests outstanding per QP (128; lat: 1)\n"
"  -p, --port PORT          iWARP port (18515); the server also listens on\n"
"                           TCP port PORT+1 for the --tcp comparison\n"
"  -B, --bind ADDR          server: listen on ADDR only (default: every\n"
"                           address)\n"
"      --tcp                repeat each size over a TCP socket; print its\n"
"                           figures and the ratio libiwarp/TCP (Gbit/s;\n"
"                           lat: p50 latency)\n"
"      --json               one JSON object per row, one per line\n"
"  -e, --event              sleep on completion events instead of polling\n"
"                           (write lat still watches memory, as it must)\n"
"      --watch-only         write lat: once a Write has completed, watch\n"
"                           memory for the peer's and call nothing meanwhile\n"
"                           (ib_write_lat's way; both ends); by default each\n"
"                           look polls the CQ too, which places what came\n"
"      --rx-depth N         send tests: the receives the server keeps\n"
"                           posted per QP in bw and rate (512, as\n"
"                           perftest's)\n"
"      --crc on|off|follow, --markers on|off|follow, --mpa-rev 1|2\n"
"      --progress thread|manual|N\n"
"                           who runs libiwarp's receive path besides the\n"
"                           polling threads: a library thread (default),\n"
"                           nobody else, or N library threads\n"
"      --idle N             first connect N idle QPs on the same device to\n"
"                           a child process, and report the memory they\n"
"                           take (at most %u)\n"
"      --timeout SECONDS    bound of every wait (10)\n"
"      --max-size SIZE      server: largest buffer it registers (1g)\n"
"  -d, --debug              libiwarp's debug log on stderr\n"
"  -h, --help\n",
		PERF_MAX_SLICES, PERF_MAX_QPS, PERF_MAX_THREADS, PERF_MAX_IDLE);
}

enum {
	OPT_DURATION = 256, OPT_CRC, OPT_MARKERS, OPT_MPA_REV, OPT_TCP,
	OPT_JSON, OPT_LOOPBACK, OPT_TIMEOUT, OPT_MAX_SIZE, OPT_RX_DEPTH,
	OPT_PROGRESS, OPT_THREADS, OPT_IDLE, OPT_WATCH_ONLY, OPT_SLICES,
};

static const struct option longopts[] = {
	{ "mode", required_argument, NULL, 'm' },
	{ "test", required_argument, NULL, 't' },
	{ "size", required_argument, NULL, 's' },
	{ "all", no_argument, NULL, 'a' },
	{ "iters", required_argument, NULL, 'n' },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "slices", required_argument, NULL, OPT_SLICES },
	{ "qps", required_argument, NULL, 'q' },
	{ "depth", required_argument, NULL, 'D' },
	{ "port", required_argument, NULL, 'p' },
	{ "bind", required_argument, NULL, 'B' },
	{ "event", no_argument, NULL, 'e' },
	{ "debug", no_argument, NULL, 'd' },
	{ "crc", required_argument, NULL, OPT_CRC },
	{ "markers", required_argument, NULL, OPT_MARKERS },
	{ "mpa-rev", required_argument, NULL, OPT_MPA_REV },
	{ "tcp", no_argument, NULL, OPT_TCP },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "loopback", no_argument, NULL, OPT_LOOPBACK },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "max-size", required_argument, NULL, OPT_MAX_SIZE },
	{ "rx-depth", required_argument, NULL, OPT_RX_DEPTH },
	{ "progress", required_argument, NULL, OPT_PROGRESS },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "idle", required_argument, NULL, OPT_IDLE },
	{ "watch-only", no_argument, NULL, OPT_WATCH_ONLY },
	{ "help", no_argument, NULL, 'h' },
	{ 0 }
};

static bool parse_word(const char *w, const char *const *words, int n,
		       int *out)
{
	for (int i = 0; i < n; i++) {
		if (!strcmp(w, words[i])) {
			*out = i;
			return true;
		}
	}
	return false;
}

/* A bad option in one line; the exit status for it. */
#define bad(...) tool_fail(PERF_PROG, 2, __VA_ARGS__)

/* A whole number in [@min, @max]. */
static bool parse_num(const char *w, uint64_t min, uint64_t max,
		      uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(w, &end, 0);
	if (errno || *end || end == w || w[0] == '-' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/* One option; returns 0, or the exit status for a bad one. */
static int take_option(struct perf_opts *o, int opt, const char *arg,
		       bool *size_set)
{
	static const char *const modes[] = { "bw", "lat", "rate" };
	static const char *const tests[] = { "send", "write", "read",
					     "atomic", "write_imm" };
	uint64_t v;
	int w;

	switch (opt) {
	case 'm':
		if (!parse_word(arg, modes, 3, &w))
			return bad("-m takes bw, lat or rate");
		o->mode = (enum perf_mode)w;
		break;
	case 't':
		if (!parse_word(arg, tests, 5, &w))
			return bad("-t takes send, write, read, atomic or "
				   "write_imm");
		o->test = (enum perf_test)w;
		break;
	case 's':
		if (!tool_parse_size(arg, &o->size) || o->size == 0 ||
		    o->size > UINT32_MAX)
			return bad("bad size %s: 1 octet to 4 GiB - 1",
					 arg);
		*size_set = true;
		break;
	case 'a':
		o->sweep = true;
		break;
	case 'n':
		if (!parse_num(arg, 1, 1ull << 40, &o->iters))
			return bad("bad iteration count %s", arg);
		break;
	case OPT_DURATION:
		o->duration = strtod(arg, NULL);
		if (!(o->duration > 0 && o->duration <= 86400))
			return bad("bad duration %s", arg);
		break;
	case OPT_SLICES:
		if (!parse_num(arg, 1, PERF_MAX_SLICES, &v))
			return bad("--slices takes 1 to %u", PERF_MAX_SLICES);
		o->slices = (uint32_t)v;
		break;
	case 'q':
		if (!parse_num(arg, 1, PERF_MAX_QPS, &v))
			return bad("-q takes 1 to %u", PERF_MAX_QPS);
		o->qps = (uint32_t)v;
		break;
	case 'D':
		if (!parse_num(arg, 1, PERF_MAX_DEPTH, &v))
			return bad("-D takes 1 to %u", PERF_MAX_DEPTH);
		o->depth = (uint32_t)v;
		break;
	case 'p':
		if (!parse_num(arg, 1, 65534, &v))
			return bad("-p takes a port number below 65535 "
					 "(PORT+1 is the TCP one)");
		o->port = arg;
		break;
	case OPT_CRC:
		if (!tool_parse_pref(arg, &o->mpa.crc))
			return bad("--crc takes on, off or follow");
		break;
	case OPT_MARKERS:
		if (!tool_parse_pref(arg, &o->mpa.markers))
			return bad("--markers takes on, off or follow");
		break;
	case OPT_MPA_REV:
		if (!parse_num(arg, 1, 2, &v))
			return bad("--mpa-rev takes 1 or 2");
		o->mpa.revision = (uint8_t)v;
		break;
	case OPT_TIMEOUT:
		if (!parse_num(arg, 1, 3600, &v))
			return bad("--timeout takes 1 to 3600 seconds");
		o->timeout_ms = (int)v * 1000;
		break;
	case OPT_MAX_SIZE:
		if (!tool_parse_size(arg, &o->max_size) || !o->max_size)
			return bad("bad size %s", arg);
		break;
	case 'B':
		o->bind = arg;
		break;
	case 'e':
		o->event = true;
		break;
	case 'd':
		o->debug = true;
		break;
	case OPT_TCP:
		o->tcp = true;
		break;
	case OPT_JSON:
		o->json = true;
		break;
	case OPT_LOOPBACK:
		o->loopback = true;
		break;
	case OPT_WATCH_ONLY:
		o->watch_only = true;
		break;
	case OPT_PROGRESS:
		if (strcmp(arg, "thread") == 0) {
			o->progress = IW_PROGRESS_THREAD;
		} else if (strcmp(arg, "manual") == 0) {
			o->progress = IW_PROGRESS_MANUAL;
		} else if (parse_num(arg, 1, 64, &v)) {
			o->progress = IW_PROGRESS_THREADS;
			o->progress_threads = (uint32_t)v;
		} else {
			return bad("--progress takes thread, manual or 1 to 64");
		}
		break;
	case OPT_THREADS:
		if (!parse_num(arg, 1, PERF_MAX_THREADS, &v))
			return bad("--threads takes 1 to %u", PERF_MAX_THREADS);
		o->threads = (uint32_t)v;
		break;
	case OPT_IDLE:
		if (!parse_num(arg, 1, PERF_MAX_IDLE, &v))
			return bad("--idle takes 1 to %u", PERF_MAX_IDLE);
		o->idle = (uint32_t)v;
		break;
	case OPT_RX_DEPTH:
		if (!parse_num(arg, 1, PERF_MAX_DEPTH, &v))
			return bad("--rx-depth takes 1 to %u", PERF_MAX_DEPTH);
		o->rx_depth = (uint32_t)v;
		break;
	default:
		usage(stderr);
		return 2;
	}
	return 0;
}

/* Defaults that depend on the mode, and the combinations that make no sense. */
static int settle(struct perf_opts *o, bool size_set, bool depth_set,
		  bool qps_set)
{
	if (o->sweep && size_set)
		return bad("-a and -s exclude each other");
	if (o->iters && o->duration)
		return bad("-n and --duration exclude each other");
	if (o->slices > 1 && !(o->duration && o->tcp))
		return bad("--slices alternates the two stacks: --duration and "
			   "--tcp");
	if (o->slices > 1 && o->duration / o->slices < PERF_MIN_SLICE_S)
		return bad("--slices %u: a slice of %.3g s is under %.1f s",
			   o->slices, o->duration / o->slices,
			   PERF_MIN_SLICE_S);
	if (o->test == PERF_ATOMIC && (o->sweep || (size_set && o->size != 8)))
		return bad("an atomic works on 8 octets: no -a, -s only 8");
	if (o->test == PERF_ATOMIC)
		o->size = 8;
	else if (o->sweep)
		o->size = PERF_SWEEP_MAX;
	else if (!size_set)
		o->size = o->mode == PERF_BW ? 65536 : o->mode == PERF_RATE ? 64
									    : 2;
	if (o->mode == PERF_LAT && depth_set && o->depth != 1)
		return bad("lat runs one operation at a time: no -D");
	if (o->rx_depth && o->mode == PERF_LAT)
		return bad("lat keeps its own receives: no --rx-depth");
	if (o->threads && qps_set && o->qps != o->threads)
		return bad("--threads N runs N QPs, one a thread: no other -q");
	if (o->threads)
		o->qps = o->threads;
	if (o->idle && !o->host && !o->loopback)
		return bad("--idle is the client's: a HOST or --loopback");
	if (o->watch_only && (o->mode != PERF_LAT || o->test != PERF_WRITE))
		return bad("--watch-only is write lat's: -m lat -t write");
	if (o->watch_only && o->event)
		return bad("--watch-only: no -e");
	if (o->watch_only && !o->host && !o->loopback)
		return bad("--watch-only is the client's: the server follows it");
	if (o->watch_only && o->progress == IW_PROGRESS_MANUAL)
		return bad("--watch-only leaves each pong to a library thread: "
			   "no --progress manual");
	if (!o->rx_depth)
		o->rx_depth = PERF_DEF_RX_DEPTH;
	return 0;
}

int main(int argc, char **argv)
{
	struct perf_opts o = {
		.qps = 1, .depth = 128, .port = PERF_PORT, .slices = 1,
		.timeout_ms = DEFAULT_TIMEOUT_MS, .max_size = PERF_SERVER_MAX,
	};
	bool size_set = false, depth_set = false, qps_set = false;
	struct perf_idle *idle = NULL;
	int opt, rc;

	iw_mpa_opts_default(&o.mpa);
	while ((opt = getopt_long(argc, argv, "m:t:s:an:q:D:p:B:edh", longopts,
				  NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			return 0;
		}
		depth_set |= opt == 'D';
		qps_set |= opt == 'q';
		rc = take_option(&o, opt, optarg, &size_set);
		if (rc)
			return rc;
	}
	if (optind < argc - 1 || (o.loopback && optind < argc)) {
		usage(stderr);
		return 2;
	}
	o.host = optind < argc ? argv[optind] : NULL;
	if (o.bind && (o.host || o.loopback))
		return bad("--bind names a server's address: no HOST, no --loopback");
	rc = settle(&o, size_set, depth_set, qps_set);
	if (rc)
		return rc;
	/* before any thread: the idle QPs' far ends run in a child */
	if (o.idle && perf_idle_fork(&idle, &o)) {
		perf_idle_close(idle);
		return 1;
	}
	if (o.loopback)
		rc = run_loopback(&o, idle);
	else if (o.host) {
		char tcp_port[24];

		snprintf(tcp_port, sizeof(tcp_port), "%ld",
			 strtol(o.port, NULL, 10) + 1);
		rc = run_client(&o, tcp_port, idle);
	} else {
		rc = perf_server_run(&o, -1);
	}
	perf_idle_close(idle);
	return rc;
}
