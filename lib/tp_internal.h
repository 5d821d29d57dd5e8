/* SPDX-License-Identifier: MIT */
/*
 * What the transport's own files share and nobody else uses: transport.c
 * (the event loop and the I/O) calls into tp_socket.c (making sockets and
 * setting their options) and tp_trace.c (the pcap trace).
 */
#ifndef IW_LIB_TP_INTERNAL_H
#define IW_LIB_TP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "lib/transport.h"

/* tp_socket.c */
int tp_tcp_socket(int family);
int tp_connect_socket(int family);
int tp_socket_setup(int fd);
int tp_apply_timeouts(int fd, const struct tp_timeouts *t);
void tp_acks_start(struct tp_acks *a, int fd);
bool tp_acks_wait_more(struct tp_acks *a, int fd);
void tp_socket_linger(int fd);
void tp_fill_addrs(struct tp_conn *c);

/* tp_trace.c */
void tp_trace_list_active(struct tp_conn *c, const struct sockaddr *sa,
			  socklen_t len);
void tp_trace_unlist(struct tp_conn *c);
void tp_trace_start(struct tp_conn *c, bool active);
void tp_trace_record(struct tp_conn *c, bool tx, const struct iovec *iov,
		     int n, size_t len);
void tp_trace_end(struct tp_conn *c);

/*
 * Records what one system call moved, when the connection is traced.
 * Inline: every send and read passes here, and an untraced connection
 * should cost it no call.
 */
static inline void tp_trace_data(struct tp_conn *c, bool tx,
				 const struct iovec *iov, int n, size_t len)
{
	if (c->trace && c->trace_started && len)
		tp_trace_record(c, tx, iov, n, len);
}

#endif /* IW_LIB_TP_INTERNAL_H */
