/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues (VIA §6.4.2, §9.7). viad creates the ring in the
 * session segment; this side is its consumer.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "vipl_priv.h"

struct vipl_cq *
vipl_cq_get(VIP_CQ_HANDLE handle)
{
	return vipl_dpdk_dp_get(handle, VIPL_DPDK_OBJ_CQ);
}

/* Retire @p cq's handle under its lock: a dequeue in flight finishes
 * first, and a later one fails. Then give it back. */
static void
cq_retire_put(struct vipl_cq *cq)
{
	pthread_mutex_lock(&cq->dp.lock);
	vipl_handle_retire(&cq->dp.obj);
	pthread_mutex_unlock(&cq->dp.lock);
	vipl_obj_put(&cq->dp.obj);
}

VIPL_EXPORT VIP_RETURN
VipCreateCQ(VIP_NIC_HANDLE NicHandle, VIP_ULONG EntryCount, VIP_CQ_HANDLE *CQHandle)
{
	struct vipl_nic *nic = vipl_nic_get(NicHandle);
	struct via_ctl_cq_create_req req = { .entries = (uint32_t)EntryCount };
	struct via_ctl_cq_create_rep rep;
	struct via_ctl_id undo;
	struct vipl_cq *cq;
	bool reused;
	int rc;

	if (nic == NULL || CQHandle == NULL || EntryCount == 0)
		return VIP_INVALID_PARAMETER;
	if (EntryCount > nic->info.max_cq_entries)
		return VIP_ERROR_RESOURCE;
	cq = vipl_obj_get(VIPL_DPDK_OBJ_CQ, sizeof(*cq), 0, &reused);
	if (cq == NULL)
		return VIP_ERROR_RESOURCE;
	/* once per object; then kept (a racing dequeue may still take it) */
	if (!reused)
		pthread_mutex_init(&cq->dp.lock, NULL);
	/* the library's part of the last life; no call reads it without a
	 * live handle */
	memset(&cq->link, 0, sizeof(*cq) - offsetof(struct vipl_cq, link));
	rc = vipl_ctl_call(nic, VIA_CTL_CQ_CREATE, &req, &rep, NULL);
	if (rc != 0) {
		vipl_obj_put(&cq->dp.obj);
		return via_vip_return(rc);
	}
	undo.id = rep.id;
	undo.reserved = 0;
	/* viad's offsets are checked against the segment we mapped */
	if (rep.shm_off + via_shm_cq_size(rep.capacity) > nic->shm_size ||
	    rep.shm_off % VIA_SHM_ALIGN != 0) {
		rc = -EPROTO;
		goto fail;
	}
	cq->nic = nic;
	cq->id = rep.id;
	cq->sh = (struct via_shm_cq *)((uint8_t *)nic->shm + rep.shm_off);
	rc = via_ring_attach(&cq->dp.ring, &cq->sh->ring, cq->sh + 1, rep.capacity,
			     sizeof(struct via_cqe), false);
	if (rc != 0)
		goto fail;
	/* a poll racing the destroy of the last life may read these: atomic
	 * stores, ordered before the new handle by its release */
	__atomic_store_n(&cq->dp.cons, cq->dp.ring.local, __ATOMIC_RELAXED);
	__atomic_store_n(&cq->dp.prod, &cq->sh->ring.prod, __ATOMIC_RELAXED);
	pthread_mutex_lock(&nic->lock);
	LIST_INSERT_HEAD(&nic->cqs, cq, link);
	pthread_mutex_unlock(&nic->lock);
	*CQHandle = vipl_handle_publish(&cq->dp.obj);
	return VIP_SUCCESS;
fail:
	vipl_ctl_call(nic, VIA_CTL_CQ_DESTROY, &undo, NULL, NULL);
	vipl_obj_put(&cq->dp.obj);
	return via_vip_return(rc == -EPROTO ? -ENOMEM : rc);
}

VIPL_EXPORT VIP_RETURN
VipDestroyCQ(VIP_CQ_HANDLE CQHandle)
{
	struct vipl_cq *cq = vipl_cq_get(CQHandle);
	struct via_ctl_id req = { 0 };
	int rc;

	if (cq == NULL)
		return VIP_INVALID_PARAMETER;
	req.id = cq->id;
	/* VIA §9.6.11: destruction cancels pending VipCQNotify handlers. The
	 * notify thread stops looking at the ring, whose memory goes with
	 * viad's answer, and a handler of this CQ it runs is waited for */
	vipl_notify_suspend(&cq->nq);
	/* viad refuses while work queues are attached (VIA §9.7.2) */
	rc = vipl_ctl_call(cq->nic, VIA_CTL_CQ_DESTROY, &req, NULL, NULL);
	if (rc != 0) {
		vipl_notify_resume(&cq->nq);
		return via_vip_return(rc);
	}
	vipl_notify_cancel(&cq->nq);
	pthread_mutex_lock(&cq->nic->lock);
	LIST_REMOVE(cq, link);
	pthread_mutex_unlock(&cq->nic->lock);
	cq_retire_put(cq);
	return VIP_SUCCESS;
}

void
vipl_cq_close_all(struct vipl_nic *nic)
{
	struct vipl_cq *cq;

	pthread_mutex_lock(&nic->lock);
	while ((cq = LIST_FIRST(&nic->cqs)) != NULL) {
		LIST_REMOVE(cq, link);
		cq_retire_put(cq);
	}
	pthread_mutex_unlock(&nic->lock);
}

/*
 * VIA §9.7.3, §11.3.14. viad moves the entries not consumed yet into a new
 * slot array and switches to it (CQ_RESIZE, via_ctl.h); the block with the
 * indices and the wait and notify words stays. The consumer lock is held
 * from reading the consumer index reported to viad until the consumer view
 * is on the new array: no VipCQDone/CQWait/CQNotify consumes in between,
 * so an entry is neither lost (viad copied everything from that index on,
 * and produced nothing meanwhile: it holds its data-path lock) nor seen
 * twice (nothing before that index was copied, and this side goes on at
 * that index). Consumers wait for the lock the length of one control call.
 */
VIPL_EXPORT VIP_RETURN
VipResizeCQ(VIP_CQ_HANDLE CQHandle, VIP_ULONG EntryCount)
{
	struct vipl_cq *cq = vipl_cq_get(CQHandle);
	struct via_ctl_cq_resize_req req = { 0 };
	struct via_ctl_cq_resize_rep rep;
	struct vipl_nic *nic;
	uint32_t cons;
	int rc;

	if (cq == NULL || EntryCount == 0)
		return VIP_INVALID_PARAMETER;
	nic = cq->nic;
	if (EntryCount > nic->info.max_cq_entries)
		return VIP_ERROR_RESOURCE;
	pthread_mutex_lock(&cq->dp.lock);
	cons = cq->dp.ring.local;
	req.id = cq->id;
	req.entries = (uint32_t)EntryCount;
	req.cons = cons;
	rc = vipl_ctl_call(nic, VIA_CTL_CQ_RESIZE, &req, &rep, NULL);
	if (rc == 0) {
		uint64_t len = via_shm_cq_slots_size(rep.capacity);

		/* viad's offsets are checked against the segment we mapped */
		if (rep.slots_off % VIA_SHM_ALIGN != 0 || rep.slots_off > nic->shm_size ||
		    len > nic->shm_size - rep.slots_off ||
		    via_ring_attach(&cq->dp.ring, &cq->sh->ring, (uint8_t *)nic->shm + rep.slots_off,
				    rep.capacity, sizeof(struct via_cqe), false) != 0) {
			/* viad produces where we cannot follow: nothing more
			 * is consumed from this CQ */
			cq->dp.ring.corrupt = true;
			rc = -ENOMEM;
		} else {
			/* our index, not the segment's (dp.cons has it too) */
			cq->dp.ring.local = cons;
			cq->dp.ring.cached_peer = cons;
		}
	}
	pthread_mutex_unlock(&cq->dp.lock);
	return via_vip_return(rc);
}

/* VIA §9.6.11; the protocol is in vipl_error.c */
VIPL_EXPORT VIP_RETURN
VipCQNotify(VIP_CQ_HANDLE CQHandle, VIP_PVOID Context,
	    void (*Handler)(VIP_PVOID Context, VIP_NIC_HANDLE NicHandle, VIP_VI_HANDLE ViHandle,
			    VIP_BOOLEAN RecvQueue))
{
	struct vipl_cq *cq = vipl_cq_get(CQHandle);

	if (cq == NULL || Handler == NULL)
		return VIP_INVALID_PARAMETER;
	return via_vip_return(vipl_notify_cq(cq, Context, Handler));
}
