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
	    rep->shm_off % VIA_SHM_ALIGN != 0 || rep->bell / 64 >= nic->shm->bell_words)
		return -EPROTO;
	vi->bell_word = &nic->bells[rep->bell / 64];
	vi->bell_bit = 1ull << (rep->bell % 64);
	vi->bell_summary = &nic->bells[nic->shm->bell_words + rep->bell / 64 / 64];
	vi->bell_summary_bit = 1ull << (rep->bell / 64 % 64);
	vi->sh = (struct via_shm_vi *)((uint8_t *)nic->shm + rep->shm_off);
	for (q = 0; q < VIA_WQ_COUNT; q++) {
		rc = vipl_wq_init(&vi->wq[q], &vi->sh->wq[q],
				  (uint8_t *)vi->sh + via_shm_vi_slots_off(rep->wq_capacity, q),
				  rep->wq_capacity);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static void
vi_free(struct vipl_vi *vi)
{
	vipl_wq_fini(&vi->wq[VIA_WQ_SEND]);
	vipl_wq_fini(&vi->wq[VIA_WQ_RECV]);
	free(vi);
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
	req.reserved = 0;
	/* the handle exists first: its id is the cookie viad puts in CQ
	 * entries and error reports */
	rc = vipl_handle_new(&vi->obj, VIPL_OBJ_VI);
	if (rc != 0) {
		free(vi);
		return vipl_return(rc);
	}
	req.cookie = vi->obj.id;
	rc = vipl_ctl_call(nic, VIA_CTL_VI_CREATE, &req, &rep, NULL);
	if (rc != 0) {
		vipl_handle_free(&vi->obj);
		free(vi);
		return vipl_return(rc);
	}
	vi->id = rep.id;
	undo.id = rep.id;
	rc = vi_map(vi, &rep);
	if (rc != 0) {
		vipl_ctl_call(nic, VIA_CTL_VI_DESTROY, &undo, NULL, NULL);
		vipl_handle_free(&vi->obj);
		vi_free(vi);
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
	/* VIA §9.3.2: every descriptor must have been dequeued; viad also
	 * refuses unless Idle with both rings drained */
	if (!vipl_wq_empty(&vi->wq[VIA_WQ_SEND]) || !vipl_wq_empty(&vi->wq[VIA_WQ_RECV]))
		return VIP_ERROR_RESOURCE;
	req.id = vi->id;
	rc = vipl_ctl_call(vi->nic, VIA_CTL_VI_DESTROY, &req, NULL, NULL);
	if (rc != 0)
		return vipl_return(rc);
	vipl_handle_free(&vi->obj);
	pthread_mutex_lock(&vi->nic->lock);
	LIST_REMOVE(vi, link);
	pthread_mutex_unlock(&vi->nic->lock);
	vi_free(vi);
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
		vi_free(vi);
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
	/* empty: nothing posted that the consumer has not dequeued yet */
	*ViSendQEmpty = rep.send_empty && vipl_wq_empty(&vi->wq[VIA_WQ_SEND]) ? VIP_TRUE : VIP_FALSE;
	*ViRecvQEmpty = rep.recv_empty && vipl_wq_empty(&vi->wq[VIA_WQ_RECV]) ? VIP_TRUE : VIP_FALSE;
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

/* VIA §9.6.9-9.6.10; the protocol is in vipl_error.c */
static VIP_RETURN
queue_notify(VIP_VI_HANDLE h, enum via_wq_kind kind, VIP_PVOID ctx, VIP_VI_CALLBACK fn)
{
	struct vipl_vi *vi = vi_get(h);

	if (vi == NULL || fn == NULL)
		return VIP_INVALID_PARAMETER;
	/* a queue tied to a CQ is notified through it (VipCQNotify) */
	if (vi->cq[kind] != NULL)
		return VIP_ERROR_RESOURCE;
	return vipl_notify_vi(vi, kind, ctx, fn);
}

VIPL_EXPORT VIP_RETURN
VipSendNotify(VIP_VI_HANDLE ViHandle, VIP_PVOID Context,
	      void (*Handler)(VIP_PVOID Context, VIP_NIC_HANDLE NicHandle, VIP_VI_HANDLE ViHandle,
			      VIP_DESCRIPTOR *Descriptor))
{
	return queue_notify(ViHandle, VIA_WQ_SEND, Context, Handler);
}

VIPL_EXPORT VIP_RETURN
VipRecvNotify(VIP_VI_HANDLE ViHandle, VIP_PVOID Context,
	      void (*Handler)(VIP_PVOID Context, VIP_NIC_HANDLE NicHandle, VIP_VI_HANDLE ViHandle,
			      VIP_DESCRIPTOR *Descriptor))
{
	return queue_notify(ViHandle, VIA_WQ_RECV, Context, Handler);
}
