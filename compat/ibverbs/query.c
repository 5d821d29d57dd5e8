// SPDX-License-Identifier: MIT
/*
 * What iwarp0 says about itself: device limits from iw_query_device(),
 * one port that is always up on Ethernet, GIDs made of the host's IPv4
 * (as IPv4-mapped IPv6) and IPv6 addresses, one P_Key.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netpacket/packet.h>
#include <stdio.h>
#include <string.h>

#include "compat/ibverbs/ibverbs.h"
#include "config.h"

#define MAX_GIDS 64
/* the P_Key of a port that has no partitions */
#define DEFAULT_PKEY 0xffff

static int clamp_int(uint64_t v)
{
	return v > INT_MAX ? INT_MAX : (int)v;
}

/*
 * The node GUID: EUI-64 from the MAC of the first interface that has one
 * (the way an Ethernet RNIC makes its GUID), else a fixed value.
 */
void iwv_node_guid(uint8_t g[8])
{
	static const uint8_t fallback[8] = { 0x02, 0x00, 'i', 'w', 'a', 'r', 'p', 0 };
	struct ifaddrs *ifa, *i;

	memcpy(g, fallback, 8);
	if (getifaddrs(&ifa))
		return;
	for (i = ifa; i; i = i->ifa_next) {
		const struct sockaddr_ll *ll = (const void *)i->ifa_addr;

		if (!ll || ll->sll_family != AF_PACKET || ll->sll_halen != 6 ||
		    (i->ifa_flags & IFF_LOOPBACK) ||
		    !memcmp(ll->sll_addr, "\0\0\0\0\0\0", 6))
			continue;
		g[0] = ll->sll_addr[0] ^ 0x02;
		g[1] = ll->sll_addr[1];
		g[2] = ll->sll_addr[2];
		g[3] = 0xff;
		g[4] = 0xfe;
		g[5] = ll->sll_addr[3];
		g[6] = ll->sll_addr[4];
		g[7] = ll->sll_addr[5];
		break;
	}
	freeifaddrs(ifa);
}

/*
 * The GID table: each address of an interface that is up, in the order
 * the kernel lists them.  Returns how many (at least 1: an empty table
 * would leave applications without GID 0, so a host with no address has
 * one zero GID).
 */
static int gid_table(union ibv_gid *gids, int max)
{
	struct ifaddrs *ifa, *i;
	int n = 0;

	if (getifaddrs(&ifa) == 0) {
		for (i = ifa; i && n < max; i = i->ifa_next) {
			union ibv_gid *g = &gids[n];

			if (!i->ifa_addr || !(i->ifa_flags & IFF_UP))
				continue;
			if (i->ifa_addr->sa_family == AF_INET) {
				const struct sockaddr_in *a = (const void *)i->ifa_addr;

				memset(g, 0, sizeof(*g));
				g->raw[10] = 0xff;
				g->raw[11] = 0xff;
				memcpy(&g->raw[12], &a->sin_addr, 4);
				n++;
			} else if (i->ifa_addr->sa_family == AF_INET6) {
				const struct sockaddr_in6 *a = (const void *)i->ifa_addr;

				memcpy(g->raw, &a->sin6_addr, 16);
				n++;
			}
		}
		freeifaddrs(ifa);
	}
	if (n == 0)
		memset(&gids[n++], 0, sizeof(gids[0]));
	return n;
}

int iwv_query_device(struct ibv_context *ctx, struct ibv_device_attr *a)
{
	struct iw_device_attr d;
	uint8_t g[8];
	int rc;

	if (!iwv_is_ours(ctx) || !a)
		return EINVAL;
	rc = iw_query_device(to_iwv_ctx(ctx)->iw, &d, sizeof(d));
	if (rc)
		return iwv_errno(rc);
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "%s", PACKAGE_VERSION);
	iwv_node_guid(g);
	memcpy(&a->node_guid, g, 8);
	a->sys_image_guid = a->node_guid;
	a->max_mr_size = d.max_mr_size;
	a->page_size_cap = ~(uint64_t)0xfff; /* any page of 4 KiB and up */
	a->max_qp = clamp_int(d.max_qp);
	a->max_qp_wr = clamp_int(d.max_qp_wr);
	/* Send with Invalidate and local invalidate */
	a->device_cap_flags = IBV_DEVICE_MEM_MGT_EXTENSIONS;
	a->max_sge = clamp_int(d.max_sge);
	a->max_sge_rd = 1; /* an RDMA Read Request names one sink */
	a->max_cq = clamp_int(d.max_cq);
	a->max_cqe = clamp_int(d.max_cqe);
	a->max_mr = clamp_int(d.max_mr);
	a->max_pd = clamp_int(d.max_mr);
	a->max_qp_rd_atom = IWV_MAX_RD_ATOM;
	a->max_qp_init_rd_atom = IWV_MAX_RD_ATOM;
	a->max_res_rd_atom = clamp_int((uint64_t)IWV_MAX_RD_ATOM * d.max_qp);
	/* RFC 7306 atomics are atomic across the QPs of the process */
	a->atomic_cap = to_iwv_ctx(ctx)->rfc7306 & IW_RFC7306_ATOMICS
				? IBV_ATOMIC_HCA
				: IBV_ATOMIC_NONE;
	a->max_srq = clamp_int(d.max_qp);
	a->max_srq_wr = clamp_int(d.max_srq_wr);
	a->max_srq_sge = clamp_int(d.max_srq_sge);
	a->max_pkeys = 1;
	a->phys_port_cnt = 1;
	return 0;
}

int iwv_query_device_ex(struct ibv_context *ctx,
			const struct ibv_query_device_ex_input *input,
			struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex a;
	int rc;

	if ((input && input->comp_mask) || !attr ||
	    attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	memset(&a, 0, sizeof(a));
	rc = iwv_query_device(ctx, &a.orig_attr);
	if (rc)
		return rc;
	a.phys_port_cnt_ex = 1;
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	return 0;
}

#undef ibv_query_device
int ibv_query_device(struct ibv_context *context,
		     struct ibv_device_attr *device_attr)
{
	return iwv_query_device(context, device_attr);
}

/* The port: always ACTIVE, Ethernet, as an RNIC's port with its link up. */
int iwv_query_port(struct ibv_context *ctx, uint8_t port,
		   struct ibv_port_attr *attr, size_t attr_size)
{
	union ibv_gid gids[MAX_GIDS];
	struct ibv_port_attr a = {
		.state = IBV_PORT_ACTIVE,
		.max_mtu = IBV_MTU_4096,
		.active_mtu = IBV_MTU_1024,
		.port_cap_flags = IBV_PORT_CM_SUP,
		.max_msg_sz = UINT32_MAX,
		.pkey_tbl_len = 1,
		.max_vl_num = 1,
		.active_width = 2, /* 4X */
		.active_speed = 4, /* 10 Gb/s a lane */
		.phys_state = 5,   /* LinkUp */
		.link_layer = IBV_LINK_LAYER_ETHERNET,
	};

	if (!iwv_is_ours(ctx) || !attr)
		return EINVAL;
	if (port != IWV_PORT)
		return EINVAL;
	a.gid_tbl_len = gid_table(gids, MAX_GIDS);
	memset(attr, 0, attr_size);
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	return 0;
}

/*
 * The exported call, for binaries whose inline ibv_query_port() found no
 * query_port in the extended context: they pass the shorter structure of
 * libibverbs 1.1, which ends at flags.
 */
#undef ibv_query_port
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
		   struct _compat_ibv_port_attr *port_attr)
{
	return iwv_query_port(context, port_num, (struct ibv_port_attr *)port_attr,
			      offsetof(struct ibv_port_attr, port_cap_flags2));
}

/* 0, ENODATA past the last address, EINVAL for a bad port or index. */
static int query_gid(struct ibv_context *ctx, uint32_t port, uint32_t index,
		     struct ibv_gid_entry *e)
{
	union ibv_gid gids[MAX_GIDS];
	int n;

	if (!iwv_is_ours(ctx) || port != IWV_PORT || index >= MAX_GIDS)
		return EINVAL;
	n = gid_table(gids, MAX_GIDS);
	if (index >= (uint32_t)n)
		return ENODATA;
	memset(e, 0, sizeof(*e));
	e->gid = gids[index];
	e->gid_index = index;
	e->port_num = port;
	e->gid_type = IBV_GID_TYPE_IB; /* what the kernel says of iWARP GIDs */
	return 0;
}

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
		  union ibv_gid *gid)
{
	struct ibv_gid_entry e;
	int rc = index < 0 ? EINVAL : query_gid(context, port_num,
						 (uint32_t)index, &e);

	if (rc == ENODATA) {
		memset(gid, 0, sizeof(*gid));
		return 0;
	}
	if (rc) {
		errno = rc;
		return -1;
	}
	*gid = e.gid;
	return 0;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
		      uint32_t gid_index, struct ibv_gid_entry *entry,
		      uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e;
	int rc;

	if (flags || !entry || entry_size < sizeof(e))
		return EINVAL;
	rc = query_gid(context, port_num, gid_index, &e);
	if (!rc)
		memcpy(entry, &e, sizeof(e));
	return rc;
}

ssize_t _ibv_query_gid_table(struct ibv_context *context,
			     struct ibv_gid_entry *entries, size_t max_entries,
			     uint32_t flags, size_t entry_size)
{
	union ibv_gid gids[MAX_GIDS];
	size_t n;

	if (!iwv_is_ours(context) || flags || !entries ||
	    entry_size < sizeof(*entries))
		return -EINVAL;
	n = (size_t)gid_table(gids, MAX_GIDS);
	if (n > max_entries)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		struct ibv_gid_entry *e =
			(void *)((char *)entries + i * entry_size);

		memset(e, 0, entry_size);
		e->gid = gids[i];
		e->gid_index = (uint32_t)i;
		e->port_num = IWV_PORT;
		e->gid_type = IBV_GID_TYPE_IB;
	}
	return (ssize_t)n;
}

/*
 * rdma-core's private call, which ibv_devinfo imports: the sysfs type of
 * a GID, 0 (IB/RoCE v1) for every iWARP GID as the kernel reports them.
 */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, int *type);
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, int *type)
{
	struct ibv_gid_entry e;
	int rc = query_gid(context, port_num, index, &e);

	if (rc && rc != ENODATA) {
		errno = rc;
		return -1;
	}
	*type = 0;
	return 0;
}

int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
		   __be16 *pkey)
{
	if (!iwv_is_ours(context) || port_num != IWV_PORT || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htons(DEFAULT_PKEY);
	return 0;
}

int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num,
		       __be16 pkey)
{
	if (!iwv_is_ours(context) || port_num != IWV_PORT) {
		errno = EINVAL;
		return -1;
	}
	if ((ntohs(pkey) & 0x7fff) != (DEFAULT_PKEY & 0x7fff)) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}
