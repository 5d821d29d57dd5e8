// SPDX-License-Identifier: MIT
/*
 * A hostile peer for hostile_listen.sh: from 127.0.0.1 it opens IDLE TCP
 * connections to a listener that never send a thing, and SLOW ones that
 * send a well-formed MPA Request one octet a second, and keeps them up
 * for HOLD seconds: every 10 ms one that the listener closed is opened
 * again (a slow one starts its Request over).  It needs no libiwarp.
 * When all are open it prints "open" (the test starts its good client
 * then); at the end, how many of each kind it opened in all and how many
 * of them the listener closed:
 *   idle N closed C slow M closed D
 * and exits 0, or 1 when it could not open them.
 *
 * "hostile_peer PORT leave" sends one whole MPA Request and leaves at
 * once, before any answer can come.
 *
 * "hostile_peer PORT request HEX" sends an MPA revision 2 Request whose
 * private data is HEX (the RFC 6581 words first), and prints the Reply's
 * Reject bit and private data, bytes outside printable ASCII as \xNN,
 * and the private data again in hex:
 *   reply R1: ...
 *   hex: ...
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char request[] = "MPA ID Req Frame\x10\x02\x00\x04\x00\x01\x00\x01";
#define REQUEST_LEN (sizeof(request) - 1)

struct peer {
	int fd;
	size_t sent;
	int closed;
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Room for every descriptor: as many as the hard limit allows. */
static void raise_nofile(size_t want)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < want) {
		r.rlim_cur = want < r.rlim_max ? want : r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

static int open_one(const struct sockaddr_in *a)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)a, sizeof(*a))) {
		close(fd);
		return -1;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

/* A closed connection reads 0 or fails; whatever else came is dropped. */
static void check_closed(struct peer *p)
{
	char b[512];
	ssize_t n;

	if (p->closed)
		return;
	while ((n = read(p->fd, b, sizeof(b))) > 0)
		;
	if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
		p->closed = 1;
}

/*
 * A Request, then the connection closes with nothing more said: corked,
 * so that the FIN leaves in the Request's own segment and the listener
 * reads both before its application can answer.
 */
static int request_and_leave(const struct sockaddr_in *a)
{
	int fd = open_one(a), one = 1;

	if (fd < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_CORK, &one, sizeof(one)) ||
	    write(fd, request, REQUEST_LEN) != (ssize_t)REQUEST_LEN ||
	    shutdown(fd, SHUT_WR)) {
		fprintf(stderr, "hostile_peer: %s\n", strerror(errno));
		return 1;
	}
	close(fd);
	return 0;
}

static int read_all(int fd, uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = read(fd, p, len);

		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A Request with the given private data; the Reply, printed. */
static int request_and_print(const struct sockaddr_in *a, const char *hex)
{
	uint8_t frame[20 + 512], reply[20 + 512];
	size_t pd = strlen(hex) / 2;
	uint16_t rlen;
	int fd = open_one(a);

	if (fd < 0 || pd > 512 || strlen(hex) % 2)
		return 1;
	memcpy(frame, "MPA ID Req Frame", 16);
	frame[16] = 0x10; /* enhanced (RFC 6581) */
	frame[17] = 2;
	frame[18] = (uint8_t)(pd >> 8);
	frame[19] = (uint8_t)pd;
	for (size_t i = 0; i < pd; i++)
		sscanf(hex + 2 * i, "%2hhx", &frame[20 + i]);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	if (write(fd, frame, 20 + pd) != (ssize_t)(20 + pd) ||
	    read_all(fd, reply, 20))
		return 1;
	rlen = (uint16_t)(reply[18] << 8 | reply[19]);
	if (rlen > 512 || read_all(fd, reply + 20, rlen))
		return 1;
	printf("reply R%d: ", !!(reply[16] & 0x20));
	for (size_t i = 0; i < rlen; i++) {
		uint8_t c = reply[20 + i];

		printf(c >= 0x20 && c < 0x7f ? "%c" : "\\x%02x", c);
	}
	printf("\nhex: ");
	for (size_t i = 0; i < rlen; i++)
		printf("%02x", reply[20 + i]);
	printf("\n");
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	size_t n_idle, n_slow, idle_closed = 0, slow_closed = 0;
	size_t idle_opened, slow_opened, reopen_at = 0;
	struct peer *p;
	struct pollfd *pf;
	long long end, next_octet, next_reopen;
	int hold;

	if (argc == 3 && !strcmp(argv[2], "leave")) {
		a.sin_port = htons((uint16_t)atoi(argv[1]));
		return request_and_leave(&a);
	}
	if (argc == 4 && !strcmp(argv[2], "request")) {
		a.sin_port = htons((uint16_t)atoi(argv[1]));
		return request_and_print(&a, argv[3]);
	}
	if (argc != 5) {
		fprintf(stderr, "usage: hostile_peer PORT IDLE SLOW HOLD\n"
				"       hostile_peer PORT leave\n"
				"       hostile_peer PORT request HEX\n");
		return 2;
	}
	a.sin_port = htons((uint16_t)atoi(argv[1]));
	n_idle = (size_t)atoi(argv[2]);
	n_slow = (size_t)atoi(argv[3]);
	hold = atoi(argv[4]);
	idle_opened = n_idle;
	slow_opened = n_slow;
	raise_nofile(n_idle + n_slow + 64);
	p = calloc(n_idle + n_slow, sizeof(*p));
	pf = calloc(n_idle + n_slow, sizeof(*pf));
	if (!p || !pf)
		return 1;
	for (size_t i = 0; i < n_idle + n_slow; i++) {
		p[i].fd = open_one(&a);
		if (p[i].fd < 0) {
			fprintf(stderr, "hostile_peer: connection %zu: %s\n", i,
				strerror(errno));
			return 1;
		}
	}
	printf("open\n");
	fflush(stdout);
	end = now_ms() + hold * 1000LL;
	next_octet = now_ms();
	next_reopen = now_ms();
	while (now_ms() < end) {
		size_t n = n_idle + n_slow;

		/* what the listener closed shows as readable */
		for (size_t i = 0; i < n; i++)
			pf[i] = (struct pollfd){ p[i].closed ? -1 : p[i].fd,
						 POLLIN, 0 };
		if (poll(pf, n, 10) > 0)
			for (size_t i = 0; i < n; i++)
				if (pf[i].revents)
					check_closed(&p[i]);
		if (now_ms() >= next_octet) {
			for (size_t i = n_idle; i < n; i++) {
				if (p[i].closed || p[i].sent == REQUEST_LEN)
					continue;
				if (write(p[i].fd, request + p[i].sent, 1) == 1)
					p[i].sent++;
			}
			next_octet += 1000;
		}
		/* one closed connection of either kind comes back, every 10 ms */
		for (size_t k = 0; k < n && now_ms() >= next_reopen; k++) {
			size_t i = (reopen_at + k) % n;

			if (!p[i].closed)
				continue;
			*(i < n_idle ? &idle_closed : &slow_closed) += 1;
			close(p[i].fd);
			p[i] = (struct peer){ .fd = open_one(&a) };
			if (p[i].fd < 0) {
				fprintf(stderr, "hostile_peer: reopening: %s\n",
					strerror(errno));
				return 1;
			}
			*(i < n_idle ? &idle_opened : &slow_opened) += 1;
			reopen_at = i + 1;
			next_reopen = now_ms() + 10;
		}
	}
	for (size_t i = 0; i < n_idle + n_slow; i++) {
		check_closed(&p[i]);
		if (p[i].closed)
			*(i < n_idle ? &idle_closed : &slow_closed) += 1;
		close(p[i].fd);
	}
	printf("idle %zu closed %zu slow %zu closed %zu\n", idle_opened,
	       idle_closed, slow_opened, slow_closed);
	free(pf);
	free(p);
	return 0;
}
