// SPDX-License-Identifier: MIT
/*
 * A program that unloads the library (dlclose) while its threads still
 * run, as Open MPI does when it unloads libfabric at MPI_Finalize with
 * libiwarp's contexts still open: those threads must never run code that
 * is no longer mapped.  It opens a listener, unloads the library, then
 * connects to the listener and sends an MPA Request, which wakes the
 * library's progress thread (and, through librdmacm, its event thread)
 * in code the unload would have taken away.  Exit status 0 if it is
 * still alive afterwards.
 *
 *   unload_peer iwarp PATH     libiwarp.so at PATH, through the iw_ API
 *   unload_peer rdmacm         librdmacm.so.1, from the library path
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include <iwarp/iwarp.h>

#define LOAD(h, fn) __typeof__(fn) *p_##fn = (__typeof__(fn) *)dlsym(h, #fn)

static int fail(const char *what)
{
	fprintf(stderr, "unload_peer: %s\n", what);
	return 1;
}

/* The port of a listener through libiwarp's own API; 0 on failure. */
static uint16_t listen_iwarp(void *h)
{
	LOAD(h, iw_open);
	LOAD(h, iw_create_cm_channel);
	LOAD(h, iw_create_id);
	LOAD(h, iw_listen);
	LOAD(h, iw_get_local_addr);
	struct iw_context *ctx;
	struct iw_cm_channel *ch;
	struct iw_cm_id *id;
	struct sockaddr_storage ss;

	if (!p_iw_open || !p_iw_create_cm_channel || !p_iw_create_id ||
	    !p_iw_listen || !p_iw_get_local_addr)
		return 0;
	ctx = p_iw_open(NULL);
	ch = ctx ? p_iw_create_cm_channel(ctx) : NULL;
	id = ch ? p_iw_create_id(ch, NULL) : NULL;
	if (!id || p_iw_listen(id, "127.0.0.1", "0", 4) ||
	    p_iw_get_local_addr(id, &ss))
		return 0;
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* The same through librdmacm. */
static uint16_t listen_rdmacm(void *h)
{
	LOAD(h, rdma_create_event_channel);
	LOAD(h, rdma_create_id);
	LOAD(h, rdma_bind_addr);
	LOAD(h, rdma_listen);
	LOAD(h, rdma_get_src_port);
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;

	if (!p_rdma_create_event_channel || !p_rdma_create_id ||
	    !p_rdma_bind_addr || !p_rdma_listen || !p_rdma_get_src_port)
		return 0;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ch = p_rdma_create_event_channel();
	if (!ch || p_rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    p_rdma_bind_addr(id, (struct sockaddr *)&a) ||
	    p_rdma_listen(id, 4))
		return 0;
	return ntohs(p_rdma_get_src_port(id));
}

int main(int argc, char **argv)
{
	static const char request[] =
		"MPA ID Req Frame\x10\x02\x00\x04\x00\x01\x00\x01";
	struct sockaddr_in a = { .sin_family = AF_INET };
	bool iwarp = argc == 3 && !strcmp(argv[1], "iwarp");
	void *h;
	uint16_t port;
	int fd;

	if (!iwarp && !(argc == 2 && !strcmp(argv[1], "rdmacm")))
		return fail("usage: unload_peer iwarp PATH | rdmacm");
	h = dlopen(iwarp ? argv[2] : "librdmacm.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return fail(dlerror());
	port = iwarp ? listen_iwarp(h) : listen_rdmacm(h);
	if (!port)
		return fail("no listener");
	if (dlclose(h))
		return fail(dlerror());
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(port);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    write(fd, request, sizeof(request) - 1) !=
		    (ssize_t)(sizeof(request) - 1))
		return fail("cannot reach the listener");
	/* the library takes the connection and the Request meanwhile */
	poll(NULL, 0, 300);
	close(fd);
	printf("unload_peer: %s alive after dlclose and a connection\n",
	       argv[1]);
	return 0;
}
