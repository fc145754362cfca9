/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Virtual interfaces (VIA §2.3, §5, §9.3, §9.8.2-9.8.3): creation, query,
 * attributes and destruction. Attribute checks are viad's (it knows the
 * NIC's limits and the process's tags); this side only maps the result.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "vipl_priv.h"

/*
 * Polls of a queue without a CQ that find its head not done, per look at
 * viad's completion count (vipl_dpdk_dp_poll_completion_default): viad
 * writes the count's line at each completion, so a poller reading it at
 * each turn would pull it to and fro between the two cores, and the count
 * matters only for a completion viad could not write back (POST_DESC),
 * which may well wait a few polls. With a CQ, the program calls
 * VipSendDone/VipRecvDone once per CQ entry: such a completion must be
 * found at once.
 */
#define DONE_COUNT_EVERY 64

static struct vipl_vi *
vi_get(VIP_VI_HANDLE handle)
{
	return vipl_dpdk_dp_get(handle, VIPL_DPDK_OBJ_VI);
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
vi_map(struct vipl_vi *vi, const struct via_ctl_vi_create_rep *rep, uint32_t posted_cap)
{
	struct vipl_nic *nic = vi->nic;
	unsigned q;
	int rc;

	if (rep->shm_off + via_shm_vi_size(rep->wq_capacity, rep->entry_size) > nic->shm_size ||
	    rep->shm_off % VIA_SHM_ALIGN != 0 || rep->bell / 64 >= nic->shm->bell_words ||
	    (rep->entry_size != sizeof(struct via_wqe) && !via_wqe_line_size_ok(rep->entry_size)))
		return -EPROTO;
	vi->dp.bell_word = &nic->bells[rep->bell / 64];
	vi->dp.bell_bit = 1ull << (rep->bell % 64);
	vi->dp.bell_summary = &nic->bells[nic->shm->bell_words + rep->bell / 64 / 64];
	vi->dp.bell_summary_bit = 1ull << (rep->bell / 64 % 64);
	vi->dp.poller_asleep = &nic->shm->poller_asleep;
	vi->dp.wake_fd = nic->wake_fd;
	vi->dp.max_posted = nic->info.max_desc_per_queue;
	vi->dp.mrs = &nic->mrs;
	vi->sh = (struct via_shm_vi *)((uint8_t *)nic->shm + rep->shm_off);
	for (q = 0; q < VIA_WQ_COUNT; q++) {
		rc = vipl_wq_init(&vi->dp.wq[q], &vi->sh->wq[q],
				  (uint8_t *)vi->sh +
					  via_shm_vi_slots_off(rep->wq_capacity, rep->entry_size, q),
				  rep->wq_capacity, rep->entry_size, posted_cap,
				  vi->cq[q] != NULL ? 1 : DONE_COUNT_EVERY);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* Retire @p vi's handle under both of its queues' locks: a post or a
 * dequeue in flight finishes first, and a later one fails. */
static void
vi_retire(struct vipl_vi *vi)
{
	pthread_mutex_lock(&vi->dp.wq[VIA_WQ_SEND].lock);
	pthread_mutex_lock(&vi->dp.wq[VIA_WQ_RECV].lock);
	vipl_handle_retire(&vi->dp.obj);
	pthread_mutex_unlock(&vi->dp.wq[VIA_WQ_RECV].lock);
	pthread_mutex_unlock(&vi->dp.wq[VIA_WQ_SEND].lock);
}

/* Give back a retired VI: its pending notifications never run. */
static void
vi_put(struct vipl_vi *vi)
{
	unsigned q;

	for (q = 0; q < VIA_WQ_COUNT; q++)
		if (vi->nq[q].nic != NULL)
			vipl_notify_cancel(&vi->nq[q]);
	vipl_obj_put(&vi->dp.obj);
}

/* VipCreateVi with ring entries of @p entry_size bytes (VI_CREATE's). */
static VIP_RETURN
vi_create(VIP_NIC_HANDLE NicHandle, const VIP_VI_ATTRIBUTES *ViAttribs, uint32_t entry_size,
	  VIP_CQ_HANDLE SendCQHandle, VIP_CQ_HANDLE RecvCQHandle, VIP_VI_HANDLE *ViHandle)
{
	struct vipl_nic *nic = vipl_nic_get(NicHandle);
	struct via_ctl_vi_create_req req;
	struct via_ctl_vi_create_rep rep;
	struct via_ctl_id undo = { 0 };
	struct vipl_cq *cq[VIA_WQ_COUNT];
	struct vipl_vi *vi;
	uint32_t posted_cap;
	bool reused;
	int rc;

	if (nic == NULL || ViAttribs == NULL || ViHandle == NULL)
		return VIP_INVALID_PARAMETER;
	if (cq_arg(nic, SendCQHandle, &cq[VIA_WQ_SEND]) != 0 ||
	    cq_arg(nic, RecvCQHandle, &cq[VIA_WQ_RECV]) != 0)
		return VIP_INVALID_PARAMETER;
	/* the VI object's shape: a reused one has arrays of this size */
	posted_cap = via_pow2_ceil(nic->info.max_desc_per_queue);
	vi = vipl_obj_get(VIPL_DPDK_OBJ_VI, sizeof(*vi), posted_cap, &reused);
	if (vi == NULL)
		return VIP_ERROR_RESOURCE;
	/* the library's part of the last life; no call reads it without a
	 * live handle */
	memset(&vi->link, 0, sizeof(*vi) - offsetof(struct vipl_vi, link));
	vi->nic = nic;
	vi->cq[VIA_WQ_SEND] = cq[VIA_WQ_SEND];
	vi->cq[VIA_WQ_RECV] = cq[VIA_WQ_RECV];
	attr_to_wire(ViAttribs, &req.attr);
	req.send_cq = cq[VIA_WQ_SEND] ? cq[VIA_WQ_SEND]->id : 0;
	req.recv_cq = cq[VIA_WQ_RECV] ? cq[VIA_WQ_RECV]->id : 0;
	req.entry_size = entry_size;
	/* the object's id is the cookie viad puts in CQ entries and error
	 * reports */
	req.cookie = vi->dp.obj.id;
	rc = vipl_ctl_call(nic, VIA_CTL_VI_CREATE, &req, &rep, NULL);
	if (rc != 0) {
		vipl_obj_put(&vi->dp.obj);
		return via_vip_return(rc);
	}
	vi->id = rep.id;
	undo.id = rep.id;
	rc = vi_map(vi, &rep, posted_cap);
	if (rc != 0) {
		vipl_ctl_call(nic, VIA_CTL_VI_DESTROY, &undo, NULL, NULL);
		vipl_obj_put(&vi->dp.obj);
		return via_vip_return(rc == -EPROTO ? -ENOMEM : rc);
	}
	pthread_mutex_lock(&nic->lock);
	LIST_INSERT_HEAD(&nic->vis, vi, link);
	pthread_mutex_unlock(&nic->lock);
	*ViHandle = vipl_handle_publish(&vi->dp.obj);
	return VIP_SUCCESS;
}

VIPL_EXPORT VIP_RETURN
VipCreateVi(VIP_NIC_HANDLE NicHandle, VIP_VI_ATTRIBUTES *ViAttribs, VIP_CQ_HANDLE SendCQHandle,
	    VIP_CQ_HANDLE RecvCQHandle, VIP_VI_HANDLE *ViHandle)
{
	return vi_create(NicHandle, ViAttribs, 0, SendCQHandle, RecvCQHandle, ViHandle);
}

VIPL_EXPORT VIP_RETURN
VipDpdkCreateVi(VIP_NIC_HANDLE NicHandle, VIP_VI_ATTRIBUTES *ViAttribs,
		const VIP_DPDK_VI_ATTRIBUTES *DpdkAttribs, VIP_CQ_HANDLE SendCQHandle,
		VIP_CQ_HANDLE RecvCQHandle, VIP_VI_HANDLE *ViHandle)
{
	uint32_t entry_size = 0;

	if (DpdkAttribs == NULL)
		return VIP_INVALID_PARAMETER;
	if (DpdkAttribs->EntryDescriptors) {
		if (DpdkAttribs->InlineSize > VIA_WQE_INLINE_MAX)
			return VIP_INVALID_PARAMETER;
		entry_size = VIA_WQE_LINE_SIZE +
			     VIA_ALIGN_UP((uint32_t)DpdkAttribs->InlineSize, VIA_WQE_LINE_SIZE);
	} else if (DpdkAttribs->InlineSize != 0) {
		return VIP_INVALID_PARAMETER;
	}
	return vi_create(NicHandle, ViAttribs, entry_size, SendCQHandle, RecvCQHandle, ViHandle);
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
	if (!vipl_wq_empty(&vi->dp.wq[VIA_WQ_SEND]) || !vipl_wq_empty(&vi->dp.wq[VIA_WQ_RECV]))
		return VIP_ERROR_RESOURCE;
	req.id = vi->id;
	rc = vipl_ctl_call(vi->nic, VIA_CTL_VI_DESTROY, &req, NULL, NULL);
	if (rc != 0)
		return via_vip_return(rc);
	vi_retire(vi);
	pthread_mutex_lock(&vi->nic->lock);
	LIST_REMOVE(vi, link);
	pthread_mutex_unlock(&vi->nic->lock);
	vi_put(vi);
	return VIP_SUCCESS;
}

void
vipl_vi_close_all(struct vipl_nic *nic)
{
	struct vipl_vi *vi;

	pthread_mutex_lock(&nic->lock);
	while ((vi = LIST_FIRST(&nic->vis)) != NULL) {
		LIST_REMOVE(vi, link);
		vi_retire(vi);
		vi_put(vi);
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
		return via_vip_return(rc);
	*State = (VIP_VI_STATE)rep.state;
	attr_from_wire(&rep.attr, Attributes);
	/* empty: nothing posted that the consumer has not dequeued yet */
	*ViSendQEmpty = rep.send_empty && vipl_wq_empty(&vi->dp.wq[VIA_WQ_SEND]);
	*ViRecvQEmpty = rep.recv_empty && vipl_wq_empty(&vi->dp.wq[VIA_WQ_RECV]);
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
	return via_vip_return(vipl_ctl_call(vi->nic, VIA_CTL_VI_SET_ATTR, &req, NULL, NULL));
}

/* The body of VipSendNotify and VipRecvNotify (VIA §9.6.9-9.6.10; the
 * protocol is in vipl_error.c): their VIP_RETURN. */
static VIP_RETURN
queue_notify(VIP_VI_HANDLE h, enum via_wq_kind kind, VIP_PVOID ctx, VIP_VI_CALLBACK fn)
{
	struct vipl_vi *vi = vi_get(h);

	if (vi == NULL || fn == NULL)
		return VIP_INVALID_PARAMETER;
	/* a queue tied to a CQ is notified through it (VipCQNotify) */
	if (vi->cq[kind] != NULL)
		return VIP_ERROR_RESOURCE;
	return via_vip_return(vipl_notify_vi(vi, kind, ctx, fn));
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
