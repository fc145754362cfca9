/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Virtual interfaces (VIA §2.3, §5, §9.3, §9.8.2-9.8.3): creation, query,
 * attributes and destruction. Attribute checks are viad's (it knows the
 * NIC's limits and the process's tags); this side only maps the result.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vipl_priv.h"

static struct vipl_vi *
vi_get(VIP_VI_HANDLE handle)
{
	return vipl_handle_get(handle, VIPL_OBJ_VI);
}

static void
attr_to_wire(const VIP_VI_ATTRIBUTES *a, struct via_ctl_vi_attr *w)
{
	memset(w, 0, sizeof(*w));
	w->reliability = a->ReliabilityLevel;
	w->max_transfer = a->MaxTransferSize > UINT32_MAX ? UINT32_MAX
							  : (uint32_t)a->MaxTransferSize;
	w->qos = a->QoS > UINT32_MAX ? UINT32_MAX : (uint32_t)a->QoS;
	w->ptag = vipl_ptag_id(a->Ptag);
	w->rdma_write = a->EnableRdmaWrite != VIP_FALSE;
	w->rdma_read = a->EnableRdmaRead != VIP_FALSE;
}

static void
attr_from_wire(const struct via_ctl_vi_attr *w, VIP_VI_ATTRIBUTES *a)
{
	memset(a, 0, sizeof(*a));
	a->ReliabilityLevel = w->reliability;
	a->MaxTransferSize = w->max_transfer;
	a->QoS = w->qos;
	a->Ptag = (VIP_PROTECTION_HANDLE)(uintptr_t)w->ptag;
	a->EnableRdmaWrite = w->rdma_write ? VIP_TRUE : VIP_FALSE;
	a->EnableRdmaRead = w->rdma_read ? VIP_TRUE : VIP_FALSE;
}

/* A CQ handle argument: NULL means none; otherwise a CQ of the same NIC. */
static int
cq_arg(struct vipl_nic *nic, VIP_CQ_HANDLE h, struct vipl_cq **out)
{
	*out = NULL;
	if (h == NULL)
		return 0;
	*out = vipl_cq_get(h);
	return *out != NULL && (*out)->nic == nic ? 0 : -EINVAL;
}

static int
vi_map(struct vipl_vi *vi, const struct via_ctl_vi_create_rep *rep)
{
	struct vipl_nic *nic = vi->nic;
	unsigned q;
	int rc;

	if (rep->shm_off + via_shm_vi_size(rep->wq_capacity) > nic->shm_size ||
	    rep->shm_off % VIA_SHM_ALIGN != 0)
		return -EPROTO;
	vi->sh = (struct via_shm_vi *)((uint8_t *)nic->shm + rep->shm_off);
	for (q = 0; q < VIA_WQ_COUNT; q++) {
		rc = via_ring_attach(&vi->wq[q], &vi->sh->wq[q].ring,
				     (uint8_t *)vi->sh + via_shm_vi_slots_off(rep->wq_capacity, q),
				     rep->wq_capacity, sizeof(struct via_wqe), true);
		if (rc != 0)
			return rc;
	}
	return 0;
}

VIPL_EXPORT VIP_RETURN
VipCreateVi(VIP_NIC_HANDLE NicHandle, VIP_VI_ATTRIBUTES *ViAttribs, VIP_CQ_HANDLE SendCQHandle,
	    VIP_CQ_HANDLE RecvCQHandle, VIP_VI_HANDLE *ViHandle)
{
	struct vipl_nic *nic = vipl_nic_get(NicHandle);
	struct via_ctl_vi_create_req req;
	struct via_ctl_vi_create_rep rep;
	struct via_ctl_id undo = { 0 };
	struct vipl_vi *vi;
	int rc;

	if (nic == NULL || ViAttribs == NULL || ViHandle == NULL)
		return VIP_INVALID_PARAMETER;
	vi = calloc(1, sizeof(*vi));
	if (vi == NULL)
		return VIP_ERROR_RESOURCE;
	vi->nic = nic;
	if (cq_arg(nic, SendCQHandle, &vi->cq[VIA_WQ_SEND]) != 0 ||
	    cq_arg(nic, RecvCQHandle, &vi->cq[VIA_WQ_RECV]) != 0) {
		free(vi);
		return VIP_INVALID_PARAMETER;
	}
	attr_to_wire(ViAttribs, &req.attr);
	req.send_cq = vi->cq[VIA_WQ_SEND] ? vi->cq[VIA_WQ_SEND]->id : 0;
	req.recv_cq = vi->cq[VIA_WQ_RECV] ? vi->cq[VIA_WQ_RECV]->id : 0;
	rc = vipl_ctl_call(nic, VIA_CTL_VI_CREATE, &req, &rep, NULL);
	if (rc != 0) {
		free(vi);
		return vipl_return(rc);
	}
	vi->id = rep.id;
	undo.id = rep.id;
	rc = vi_map(vi, &rep);
	if (rc == 0)
		rc = vipl_handle_new(&vi->obj, VIPL_OBJ_VI);
	if (rc != 0) {
		vipl_ctl_call(nic, VIA_CTL_VI_DESTROY, &undo, NULL, NULL);
		free(vi);
		return vipl_return(rc == -EPROTO ? -ENOMEM : rc);
	}
	pthread_mutex_lock(&nic->lock);
	LIST_INSERT_HEAD(&nic->vis, vi, link);
	pthread_mutex_unlock(&nic->lock);
	*ViHandle = vipl_handle_of(&vi->obj);
	return VIP_SUCCESS;
}

VIPL_EXPORT VIP_RETURN
VipDestroyVi(VIP_VI_HANDLE ViHandle)
{
	struct vipl_vi *vi = vi_get(ViHandle);
	struct via_ctl_id req = { 0 };
	int rc;

	if (vi == NULL)
		return VIP_INVALID_PARAMETER;
	req.id = vi->id;
	/* viad refuses unless Idle with both queues drained (VIA §9.3.2) */
	rc = vipl_ctl_call(vi->nic, VIA_CTL_VI_DESTROY, &req, NULL, NULL);
	if (rc != 0)
		return vipl_return(rc);
	vipl_handle_free(&vi->obj);
	pthread_mutex_lock(&vi->nic->lock);
	LIST_REMOVE(vi, link);
	pthread_mutex_unlock(&vi->nic->lock);
	free(vi);
	return VIP_SUCCESS;
}

void
vipl_vi_close_all(struct vipl_nic *nic)
{
	struct vipl_vi *vi;

	pthread_mutex_lock(&nic->lock);
	while ((vi = LIST_FIRST(&nic->vis)) != NULL) {
		LIST_REMOVE(vi, link);
		vipl_handle_free(&vi->obj);
		free(vi);
	}
	pthread_mutex_unlock(&nic->lock);
}

VIPL_EXPORT VIP_RETURN
VipQueryVi(VIP_VI_HANDLE ViHandle, VIP_VI_STATE *State, VIP_VI_ATTRIBUTES *Attributes,
	   VIP_BOOLEAN *ViSendQEmpty, VIP_BOOLEAN *ViRecvQEmpty)
{
	struct vipl_vi *vi = vi_get(ViHandle);
	struct via_ctl_vi_query_rep rep;
	struct via_ctl_id req = { 0 };
	int rc;

	if (vi == NULL || State == NULL || Attributes == NULL || ViSendQEmpty == NULL ||
	    ViRecvQEmpty == NULL)
		return VIP_INVALID_PARAMETER;
	req.id = vi->id;
	rc = vipl_ctl_call(vi->nic, VIA_CTL_VI_QUERY, &req, &rep, NULL);
	if (rc != 0)
		return vipl_return(rc);
	*State = (VIP_VI_STATE)rep.state;
	attr_from_wire(&rep.attr, Attributes);
	*ViSendQEmpty = rep.send_empty ? VIP_TRUE : VIP_FALSE;
	*ViRecvQEmpty = rep.recv_empty ? VIP_TRUE : VIP_FALSE;
	return VIP_SUCCESS;
}

VIPL_EXPORT VIP_RETURN
VipSetViAttributes(VIP_VI_HANDLE ViHandle, VIP_VI_ATTRIBUTES *Attributes)
{
	struct vipl_vi *vi = vi_get(ViHandle);
	struct via_ctl_vi_set_attr_req req;

	if (vi == NULL || Attributes == NULL)
		return VIP_INVALID_PARAMETER;
	attr_to_wire(Attributes, &req.attr);
	req.id = vi->id;
	req.reserved = 0;
	return vipl_return(vipl_ctl_call(vi->nic, VIA_CTL_VI_SET_ATTR, &req, NULL, NULL));
}

/* ---- connection management (VIA §9.4): lands with the connection manager */

#define CONNECTION_MANAGER "the connection manager"
#define DATA_PATH "the data path"

VIPL_EXPORT VIP_RETURN
VipConnectWait(VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *LocalAddr, VIP_ULONG Timeout,
	       VIP_NET_ADDRESS *RemoteAddr, VIP_VI_ATTRIBUTES *RemoteViAttribs,
	       VIP_CONN_HANDLE *ConnHandle)
{
	(void)Timeout;
	if (vipl_nic_get(NicHandle) == NULL || LocalAddr == NULL || RemoteAddr == NULL ||
	    RemoteViAttribs == NULL || ConnHandle == NULL)
		return VIP_INVALID_PARAMETER;
	return vipl_unimplemented("VipConnectWait", CONNECTION_MANAGER);
}

VIPL_EXPORT VIP_RETURN
VipConnectAccept(VIP_CONN_HANDLE ConnHandle, VIP_VI_HANDLE ViHandle)
{
	if (ConnHandle == NULL || vi_get(ViHandle) == NULL)
		return VIP_INVALID_PARAMETER;
	return vipl_unimplemented("VipConnectAccept", CONNECTION_MANAGER);
}

VIPL_EXPORT VIP_RETURN
VipConnectReject(VIP_CONN_HANDLE ConnHandle)
{
	if (ConnHandle == NULL)
		return VIP_INVALID_PARAMETER;
	return vipl_unimplemented("VipConnectReject", CONNECTION_MANAGER);
}

VIPL_EXPORT VIP_RETURN
VipConnectRequest(VIP_VI_HANDLE ViHandle, VIP_NET_ADDRESS *LocalAddr, VIP_NET_ADDRESS *RemoteAddr,
		  VIP_ULONG Timeout, VIP_VI_ATTRIBUTES *RemoteViAttribs)
{
	if (vi_get(ViHandle) == NULL || LocalAddr == NULL || RemoteAddr == NULL ||
	    RemoteViAttribs == NULL || Timeout == 0)
		return VIP_INVALID_PARAMETER;
	return vipl_unimplemented("VipConnectRequest", CONNECTION_MANAGER);
}

VIPL_EXPORT VIP_RETURN
VipDisconnect(VIP_VI_HANDLE ViHandle)
{
	if (vi_get(ViHandle) == NULL)
		return VIP_INVALID_PARAMETER;
	return vipl_unimplemented("VipDisconnect", CONNECTION_MANAGER);
}

VIPL_EXPORT VIP_RETURN
VipConnectPeerRequest(VIP_VI_HANDLE ViHandle, VIP_NET_ADDRESS *LocalAddr,
		      VIP_NET_ADDRESS *RemoteAddr, VIP_ULONG Timeout)
{
	if (vi_get(ViHandle) == NULL || LocalAddr == NULL || RemoteAddr == NULL || Timeout == 0)
		return VIP_INVALID_PARAMETER;
	return vipl_unimplemented("VipConnectPeerRequest", CONNECTION_MANAGER);
}

VIPL_EXPORT VIP_RETURN
VipConnectPeerDone(VIP_VI_HANDLE ViHandle, VIP_VI_ATTRIBUTES *RemoteAttributes)
{
	if (vi_get(ViHandle) == NULL || RemoteAttributes == NULL)
		return VIP_INVALID_PARAMETER;
	return vipl_unimplemented("VipConnectPeerDone", CONNECTION_MANAGER);
}

VIPL_EXPORT VIP_RETURN
VipConnectPeerWait(VIP_VI_HANDLE ViHandle, VIP_VI_ATTRIBUTES *RemoteAttributes)
{
	if (vi_get(ViHandle) == NULL || RemoteAttributes == NULL)
		return VIP_INVALID_PARAMETER;
	return vipl_unimplemented("VipConnectPeerWait", CONNECTION_MANAGER);
}

/* ---- data transfer (VIA §9.6): lands with the data path ---------------- */

VIPL_EXPORT VIP_RETURN
VipPostSend(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr, VIP_MEM_HANDLE MemoryHandle)
{
	(void)MemoryHandle;
	if (vi_get(ViHandle) == NULL || DescriptorPtr == NULL)
		return VIP_INVALID_PARAMETER;
	return vipl_unimplemented("VipPostSend", DATA_PATH);
}

VIPL_EXPORT VIP_RETURN
VipPostRecv(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr, VIP_MEM_HANDLE MemoryHandle)
{
	(void)MemoryHandle;
	if (vi_get(ViHandle) == NULL || DescriptorPtr == NULL)
		return VIP_INVALID_PARAMETER;
	return vipl_unimplemented("VipPostRecv", DATA_PATH);
}

VIPL_EXPORT VIP_RETURN
VipSendDone(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR **DescriptorPtr)
{
	if (vi_get(ViHandle) == NULL || DescriptorPtr == NULL)
		return VIP_INVALID_PARAMETER;
	return vipl_unimplemented("VipSendDone", DATA_PATH);
}

VIPL_EXPORT VIP_RETURN
VipRecvDone(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR **DescriptorPtr)
{
	if (vi_get(ViHandle) == NULL || DescriptorPtr == NULL)
		return VIP_INVALID_PARAMETER;
	return vipl_unimplemented("VipRecvDone", DATA_PATH);
}

VIPL_EXPORT VIP_RETURN
VipSendWait(VIP_VI_HANDLE ViHandle, VIP_ULONG Timeout, VIP_DESCRIPTOR **DescriptorPtr)
{
	(void)Timeout;
	if (vi_get(ViHandle) == NULL || DescriptorPtr == NULL)
		return VIP_INVALID_PARAMETER;
	return vipl_unimplemented("VipSendWait", DATA_PATH);
}

VIPL_EXPORT VIP_RETURN
VipRecvWait(VIP_VI_HANDLE ViHandle, VIP_ULONG Timeout, VIP_DESCRIPTOR **DescriptorPtr)
{
	(void)Timeout;
	if (vi_get(ViHandle) == NULL || DescriptorPtr == NULL)
		return VIP_INVALID_PARAMETER;
	return vipl_unimplemented("VipRecvWait", DATA_PATH);
}

VIPL_EXPORT VIP_RETURN
VipSendNotify(VIP_VI_HANDLE ViHandle, VIP_PVOID Context,
	      void (*Handler)(VIP_PVOID Context, VIP_NIC_HANDLE NicHandle, VIP_VI_HANDLE ViHandle,
			      VIP_DESCRIPTOR *Descriptor))
{
	(void)Context;
	if (vi_get(ViHandle) == NULL || Handler == NULL)
		return VIP_INVALID_PARAMETER;
	return vipl_unimplemented("VipSendNotify", "completion notification");
}

VIPL_EXPORT VIP_RETURN
VipRecvNotify(VIP_VI_HANDLE ViHandle, VIP_PVOID Context,
	      void (*Handler)(VIP_PVOID Context, VIP_NIC_HANDLE NicHandle, VIP_VI_HANDLE ViHandle,
			      VIP_DESCRIPTOR *Descriptor))
{
	(void)Context;
	if (vi_get(ViHandle) == NULL || Handler == NULL)
		return VIP_INVALID_PARAMETER;
	return vipl_unimplemented("VipRecvNotify", "completion notification");
}
