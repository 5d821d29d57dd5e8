// SPDX-License-Identifier: MIT
/*
 * riomap(), riounmap(), riowrite(): rsockets' direct placement.  A
 * buffer mapped for writing is registered and its entry (offset, then
 * address, key, length) is written into the peer's target iomap with an
 * RS_OP_IOMAP_SGL message, before the next data we send; the peer's
 * riowrite() finds the entry by offset in its own table and RDMA Writes
 * straight into our buffer, with no message: the data that follows tells
 * the application, since Writes are placed before later Sends arrive.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include <rdma/rsocket.h>

#include "compat/rdmacm/rs.h"

#define ERR(e) (errno = (e), -1)

/* A free entry of the peer's iomap. */
static struct rs_iomap_mr *rs_get_iomap_mr(struct rsock *rs)
{
	if (!rs->remote_iomappings) {
		rs->remote_iomappings = calloc(rs->remote_iomap.length ?
						       rs->remote_iomap.length : 1,
					       sizeof(*rs->remote_iomappings));
		if (!rs->remote_iomappings)
			return NULL;
		for (uint32_t i = 0; i < rs->remote_iomap.length; i++)
			rs->remote_iomappings[i].index = (int)i;
	}
	for (uint32_t i = 0; i < rs->remote_iomap.length; i++)
		if (!rs->remote_iomappings[i].mr)
			return &rs->remote_iomappings[i];
	return NULL;
}

off_t riomap(int socket, void *buf, size_t len, int prot, int flags,
	     off_t offset)
{
	struct rsock *rs = rs_get(socket);
	struct rs_iomap_mr *iomr;
	int access = IBV_ACCESS_LOCAL_WRITE;

	(void)flags;
	if (!rs)
		return ERR(EBADF);
	if (!buf || !len || (prot & ~(PROT_WRITE | PROT_NONE)))
		return ERR(EINVAL);
	pthread_mutex_lock(&rs->lock);
	if (!(rs->state & RS_CONNECTED) || !rs->cm_id->pd) {
		offset = ERR(ENOTCONN);
		goto out;
	}
	if (prot & PROT_WRITE) {
		iomr = rs_get_iomap_mr(rs);
		access |= IBV_ACCESS_REMOTE_WRITE;
	} else {
		iomr = calloc(1, sizeof(*iomr));
		if (iomr)
			iomr->index = -1;
	}
	if (!iomr) {
		offset = ERR(ENOMEM);
		goto out;
	}
	iomr->mr = ibv_reg_mr(rs->cm_id->pd, buf, len, access);
	if (!iomr->mr) {
		if (iomr->index < 0)
			free(iomr);
		offset = -1;
		goto out;
	}
	if (offset == -1)
		offset = (off_t)(uintptr_t)buf;
	iomr->offset = (uint64_t)offset;
	iomr->queued = iomr->index >= 0;
	iomr->next = rs->iomaps;
	rs->iomaps = iomr;
	if (iomr->queued)
		rs->iomap_pending = true;
out:
	pthread_mutex_unlock(&rs->lock);
	return offset;
}

static void rs_unmap(struct rsock *rs, struct rs_iomap_mr **pp)
{
	struct rs_iomap_mr *iomr = *pp;

	*pp = iomr->next;
	ibv_dereg_mr(iomr->mr);
	iomr->mr = NULL;
	iomr->queued = false;
	if (iomr->index < 0)
		free(iomr);
	(void)rs;
}

int riounmap(int socket, void *buf, size_t len)
{
	struct rsock *rs = rs_get(socket);
	struct rs_iomap_mr **pp;
	int ret = ERR(EINVAL);

	if (!rs)
		return ERR(EBADF);
	pthread_mutex_lock(&rs->lock);
	for (pp = &rs->iomaps; *pp; pp = &(*pp)->next) {
		if ((*pp)->mr->addr == buf && (*pp)->mr->length == len) {
			rs_unmap(rs, pp);
			ret = 0;
			errno = 0;
			break;
		}
	}
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

void rs_free_iomaps(struct rsock *rs)
{
	while (rs->iomaps)
		rs_unmap(rs, &rs->iomaps);
}

/* Writes each queued entry into the peer's iomap, as data would go. */
int rs_send_iomaps(struct rsock *rs, int flags)
{
	for (struct rs_iomap_mr *iomr = rs->iomaps; iomr; iomr = iomr->next) {
		uint8_t iom[RS_IOMAP_LEN];
		struct iovec iov = { .iov_base = iom, .iov_len = sizeof(iom) };
		const struct iovec *ip = &iov;
		struct ibv_sge sg[2];
		struct rs_sge s;
		size_t off = 0;
		int nsge;

		if (!iomr->queued)
			continue;
		if (!rs_can_send(rs)) {
			if (rs_get_comp(rs, rs_nonblocking(rs, flags),
					rs_conn_can_send))
				return -1;
			if (!(rs->state & RS_WRITABLE))
				return ERR(EPIPE);
		}
		s.addr = (uintptr_t)iomr->mr->addr;
		s.key = iomr->mr->rkey;
		s.length = (uint32_t)iomr->mr->length;
		rs_iomap_store(iom, iomr->offset, s, rs->swap_sgl);
		rs_stage(rs, &ip, &off, sizeof(iom), sg, &nsge);
		rs->sseq_no++;
		rs->sqe_avail -= 2;
		rs->sbuf_bytes_avail -= RS_IOMAP_LEN;
		iomr->queued = false;
		if (rs_post_write_msg(rs, sg, nsge,
				      rs_msg(RS_OP_IOMAP_SGL, (uint32_t)iomr->index),
				      0,
				      rs->remote_iomap.addr +
					      (uint64_t)iomr->index * RS_IOMAP_LEN,
				      rs->remote_iomap.key))
			return -1;
	}
	rs->iomap_pending = false;
	return 0;
}

/* The entry of our target iomap, written by the peer, that holds @offset. */
static bool rs_find_iomap(struct rsock *rs, uint64_t offset, uint64_t *base,
			  struct rs_sge *sge)
{
	const uint8_t *t = rs->target_buf + RS_SGE_LEN * RS_SGL_SIZE;

	for (int i = 0; i < rs->target_iomap_size; i++, t += RS_IOMAP_LEN) {
		uint64_t o;

		memcpy(&o, t, 8);
		*sge = rs_sge_load(t + 8);
		if (sge->length && offset >= o && offset < o + sge->length) {
			*base = o;
			return true;
		}
	}
	return false;
}

/*
 * Writes @count octets at @offset of the peer's mapped buffer: what fits
 * in mapped buffers is written (0 if @offset is not mapped).
 */
size_t riowrite(int socket, const void *buf, size_t count, off_t offset,
		int flags)
{
	struct rsock *rs = rs_get(socket);
	uint32_t olen = RS_OLAP_START_SIZE, xfer;
	const uint8_t *p = buf;
	size_t left = count;
	uint64_t base = 0;
	struct rs_sge sge = { 0 };
	bool have = false;
	int ret = 0;

	if (!rs) {
		errno = EBADF;
		return (size_t)-1;
	}
	pthread_mutex_lock(&rs->lock);
	if (!(rs->state & RS_WRITABLE)) {
		ret = -1;
		errno = (rs->state & RS_CONNECTED) || rs->state == RS_DISCONNECTED
				? EPIPE : ENOTCONN;
		goto out;
	}
	if (rs->iomap_pending && (ret = rs_send_iomaps(rs, flags)))
		goto out;
	for (; left; left -= xfer, p += xfer, offset += xfer) {
		struct iovec iov;
		const struct iovec *ip = &iov;
		struct ibv_sge sg[2];
		size_t off = 0;
		int nsge;

		if (!have || (uint64_t)offset >= base + sge.length) {
			have = rs_find_iomap(rs, (uint64_t)offset, &base, &sge);
			if (!have)
				break;
		}
		ret = rs_wait_send_room(rs, flags);
		if (ret)
			break;
		xfer = rs_next_xfer(rs, &olen, left);
		if (xfer > base + sge.length - (uint64_t)offset)
			xfer = (uint32_t)(base + sge.length - (uint64_t)offset);
		iov.iov_base = (void *)p;
		iov.iov_len = xfer;
		rs_stage(rs, &ip, &off, xfer, sg, &nsge);
		rs->sqe_avail--;
		rs->sbuf_bytes_avail -= xfer;
		ret = rs_post_write(rs, sg, nsge, rs_msg(RS_OP_WRITE, xfer), 0,
				    sge.addr + ((uint64_t)offset - base), sge.key);
		if (ret)
			break;
	}
out:
	pthread_mutex_unlock(&rs->lock);
	return (ret && left == count) ? (size_t)-1 : count - left;
}
