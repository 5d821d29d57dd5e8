// SPDX-License-Identifier: MIT
/*
 * An ordinary TCP program, for rsockets_preload.sh to run under
 * librspreload.so: nothing here knows of RDMA.
 *
 *   tcp_pair stream-server PORT          reads to the end, answers the
 *   tcp_pair stream-client PORT BYTES    CRC of what came; the client
 *                                        sends BYTES and checks it
 *   tcp_pair echo-server PORT            answers each request with its
 *   tcp_pair echo-client PORT COUNT      octets reversed; the client
 *                                        checks COUNT exchanges
 *   tcp_pair fork-echo-server PORT       echo-server, but first forks a
 *                                        child that tries to send on the
 *                                        connection and closes it: under
 *                                        librspreload.so over libiwarp
 *                                        its send must fail (the
 *                                        rsocket is the parent's) and
 *                                        nothing it does may reach the
 *                                        client
 *
 * Exits 0 when every byte checked out.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static uint32_t crc32c(uint32_t crc, const uint8_t *p, size_t len)
{
	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & -(crc & 1));
	}
	return ~crc;
}

static int full(ssize_t (*io)(int, void *, size_t, int), int fd, void *buf,
		size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = io(fd, p, len, 0);

		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static ssize_t send_io(int fd, void *buf, size_t len, int flags)
{
	return send(fd, buf, len, flags);
}

static int die(const char *what)
{
	perror(what);
	exit(1);
}

static struct sockaddr_in loopback(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

static int serve(int port)
{
	struct sockaddr_in a = loopback(port);
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0), fd;

	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 1))
		die("listen");
	fd = accept(ls, NULL, NULL);
	if (fd < 0)
		die("accept");
	close(ls);
	return fd;
}

static int dial(int port)
{
	struct sockaddr_in a = loopback(port);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		die("connect");
	return fd;
}

int main(int argc, char **argv)
{
	static uint8_t buf[1 << 16];
	uint32_t crc = 0, got;
	int fd;

	if (argc < 3)
		return 2;
	if (!strcmp(argv[1], "stream-server")) {
		ssize_t n;
		long long total = 0;

		fd = serve(atoi(argv[2]));
		while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) {
			crc = crc32c(crc, buf, (size_t)n);
			total += n;
		}
		if (n < 0)
			die("recv");
		if (full(send_io, fd, &crc, sizeof(crc)))
			die("send");
		printf("stream-server: %lld octets, crc %08x\n", total, crc);
	} else if (!strcmp(argv[1], "stream-client") && argc == 4) {
		long long left = atoll(argv[3]);
		unsigned int seed = 1;

		fd = dial(atoi(argv[2]));
		while (left > 0) {
			size_t n = left < (long long)sizeof(buf) ? (size_t)left : sizeof(buf);

			for (size_t i = 0; i < n; i++)
				buf[i] = (uint8_t)rand_r(&seed);
			crc = crc32c(crc, buf, n);
			if (full(send_io, fd, buf, n))
				die("send");
			left -= (long long)n;
		}
		shutdown(fd, SHUT_WR);
		if (full(recv, fd, &got, sizeof(got)))
			die("recv crc");
		if (got != crc) {
			fprintf(stderr, "stream-client: crc %08x, server saw %08x\n",
				crc, got);
			return 1;
		}
		printf("stream-client: %s octets, crc %08x matches\n", argv[3], crc);
	} else if (!strcmp(argv[1], "echo-server") ||
		   !strcmp(argv[1], "fork-echo-server")) {
		uint32_t len;

		fd = serve(atoi(argv[2]));
		if (!strcmp(argv[1], "fork-echo-server")) {
			int status = -1;
			pid_t pid = fork();

			if (pid < 0)
				die("fork");
			if (pid == 0) {
				ssize_t n = send(fd, "x", 1, MSG_NOSIGNAL);

				printf("fork-child: send: %s\n",
				       n < 0 ? strerror(errno) : "sent");
				fflush(stdout);
				close(fd);
				_exit(n < 0 ? 0 : 1);
			}
			if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
			    WEXITSTATUS(status)) {
				fprintf(stderr, "fork-echo-server: the child sent\n");
				return 1;
			}
		}
		while (!full(recv, fd, &len, sizeof(len))) {
			if (len > sizeof(buf) || full(recv, fd, buf, len))
				die("request");
			for (uint32_t i = 0; i < len / 2; i++) {
				uint8_t t = buf[i];

				buf[i] = buf[len - 1 - i];
				buf[len - 1 - i] = t;
			}
			if (full(send_io, fd, buf, len))
				die("reply");
		}
		printf("echo-server: done\n");
	} else if (!strcmp(argv[1], "echo-client") && argc == 4) {
		int count = atoi(argv[3]);
		static uint8_t req[1 << 16];

		fd = dial(atoi(argv[2]));
		for (int r = 0; r < count; r++) {
			uint32_t len = 1 + (uint32_t)(r * 37) % 300;

			for (uint32_t i = 0; i < len; i++)
				req[i] = (uint8_t)(r + i * 7);
			if (full(send_io, fd, &len, sizeof(len)) ||
			    full(send_io, fd, req, len) || full(recv, fd, buf, len))
				die("exchange");
			for (uint32_t i = 0; i < len; i++)
				if (buf[i] != req[len - 1 - i]) {
					fprintf(stderr, "echo-client: reply %d differs\n", r);
					return 1;
				}
		}
		printf("echo-client: %d exchanges verified\n", count);
	} else {
		return 2;
	}
	close(fd);
	return 0;
}
