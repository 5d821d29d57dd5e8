// SPDX-License-Identifier: MIT
/*
 * What rdma_cm offers that iWARP has not: multicast belongs to datagram
 * QPs (ENOSYS, as the kernel's connection manager answers for an iWARP
 * device), and no enhanced connection establishment options travel in
 * an MPA handshake (an identifier keeps its local ones and sees none
 * from the peer).
 */
#include <errno.h>
#include <string.h>

#include "compat/rdmacm/cma.h"

int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr,
			void *context)
{
	(void)id;
	(void)addr;
	(void)context;
	return ERR(ENOSYS);
}

int rdma_join_multicast_ex(struct rdma_cm_id *id,
			   struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context)
{
	(void)id;
	(void)mc_join_attr;
	(void)context;
	return ERR(ENOSYS);
}

int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	(void)id;
	(void)addr;
	return ERR(ENOSYS);
}

int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (!id || !ece || !ece->vendor_id || ece->comp_mask)
		return ERR(EINVAL);
	return 0;
}

int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (!id || !ece)
		return ERR(EINVAL);
	memset(ece, 0, sizeof(*ece));
	return 0;
}

int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
		    uint8_t private_data_len)
{
	return rdma_reject(id, private_data, private_data_len);
}
