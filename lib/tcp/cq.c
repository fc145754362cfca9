/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues (VIA §2.4, §3.4, §6.4, §9.6.7, §9.6.8, §9.7). An
 * entry names a VI and a queue; the descriptor itself is dequeued from
 * that queue. A completion that finds the CQ full loses its entry (§6.4.1:
 * "If a Completion Queue overruns, completion entries will be lost"); the
 * descriptor still completes on its work queue. Entries of a VI destroyed
 * since are skipped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tcp_prov.h"

VIP_RETURN
tcp_create_cq(VIP_NIC_HANDLE NicHandle, VIP_ULONG EntryCount, VIP_CQ_HANDLE *CQHandle)
{
	struct tcp_nic *nic;
	struct tcp_cq *cq;
	int rc = 0;

	if (EntryCount == 0 || CQHandle == NULL)
		return VIP_INVALID_PARAMETER;
	nic = tcp_nic_enter(NicHandle, TCP_OBJ_NIC, NULL);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	if (EntryCount > TCP_MAX_CQ_ENTRIES || nic->nb_cq >= TCP_MAX_CQ)
		rc = -ENOSPC;
	cq = rc == 0 ? calloc(1, sizeof(*cq)) : NULL;
	if (cq != NULL)
		cq->ring = calloc(EntryCount, sizeof(*cq->ring));
	if (rc == 0 && (cq == NULL || cq->ring == NULL))
		rc = -ENOMEM;
	if (rc == 0)
		rc = tcp_obj_add(nic, &cq->obj, TCP_OBJ_CQ);
	if (rc != 0) {
		if (cq != NULL)
			free(cq->ring);
		free(cq);
		tcp_nic_leave(nic);
		return via_vip_return(rc);
	}
	cq->cap = (uint32_t)EntryCount;
	nic->nb_cq++;
	*CQHandle = tcp_handle_of(nic, &cq->obj);
	tcp_nic_leave(nic);
	return VIP_SUCCESS;
}

void
tcp_cq_free(struct tcp_nic *nic, struct tcp_cq *cq)
{
	/* a waiter finds the handle stale */
	pthread_cond_broadcast(tcp_cond_of(nic, cq->obj.id));
	tcp_obj_del(nic, &cq->obj);
	nic->nb_cq--;
	free(cq->ring);
	free(cq);
}

VIP_RETURN
tcp_destroy_cq(VIP_CQ_HANDLE CQHandle)
{
	struct tcp_nic *nic;
	struct tcp_cq *cq;
	VIP_RETURN ret = VIP_SUCCESS;

	nic = tcp_nic_enter(CQHandle, TCP_OBJ_CQ, (void **)&cq);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	/* VIA §9.7.2: not while work queues are associated with it */
	if (cq->users > 0)
		ret = VIP_ERROR_RESOURCE;
	else
		tcp_cq_free(nic, cq);
	tcp_nic_leave(nic);
	return ret;
}

VIP_RETURN
tcp_resize_cq(VIP_CQ_HANDLE CQHandle, VIP_ULONG EntryCount)
{
	struct tcp_cqe *ring;
	struct tcp_nic *nic;
	struct tcp_cq *cq;
	uint32_t i;

	if (EntryCount == 0)
		return VIP_INVALID_PARAMETER;
	nic = tcp_nic_enter(CQHandle, TCP_OBJ_CQ, (void **)&cq);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	/* the entries queued stay, in order (VIA §3.4: "Incoming requests
	 * should still be satisfied"); fewer slots than them is refused */
	ring = EntryCount <= TCP_MAX_CQ_ENTRIES && EntryCount >= cq->count
	       ? calloc(EntryCount, sizeof(*ring)) : NULL;
	if (ring == NULL) {
		tcp_nic_leave(nic);
		return VIP_ERROR_RESOURCE;
	}
	for (i = 0; i < cq->count; i++)
		ring[i] = cq->ring[(cq->head + i) % cq->cap];
	free(cq->ring);
	cq->ring = ring;
	cq->cap = (uint32_t)EntryCount;
	cq->head = 0;
	tcp_nic_leave(nic);
	return VIP_SUCCESS;
}

void
tcp_cq_push(struct tcp_nic *nic, struct tcp_cq *cq, uint32_t vi_id, bool recv)
{
	/* full: the entry is lost (VIA §6.4.1), the descriptor still completes */
	if (cq->count == cq->cap)
		return;
	cq->ring[(cq->head + cq->count) % cq->cap] = (struct tcp_cqe){ .vi_id = vi_id, .recv = recv };
	cq->count++;
	pthread_cond_broadcast(tcp_cond_of(nic, cq->obj.id));
}

/* Take the oldest entry of a VI that still exists (VIA §9.6.7). The body
 * of VipCQDone and VipCQWait's tries: VIP_SUCCESS, VIP_NOT_DONE. */
static VIP_RETURN
cq_take(struct tcp_nic *nic, struct tcp_cq *cq, VIP_VI_HANDLE *vi, VIP_BOOLEAN *recv)
{
	while (cq->count > 0) {
		struct tcp_cqe e = cq->ring[cq->head];

		cq->head = (cq->head + 1) % cq->cap;
		cq->count--;
		*vi = tcp_handle_by_id(nic, e.vi_id, TCP_OBJ_VI);
		if (*vi != NULL) {
			*recv = e.recv ? VIP_TRUE : VIP_FALSE;
			return VIP_SUCCESS;
		}
	}
	return VIP_NOT_DONE;
}

VIP_RETURN
tcp_cq_done(VIP_CQ_HANDLE CQHandle, VIP_VI_HANDLE *ViHandle, VIP_BOOLEAN *RecvQueue)
{
	struct tcp_nic *nic;
	struct tcp_cq *cq;
	VIP_RETURN ret;

	if (ViHandle == NULL || RecvQueue == NULL)
		return VIP_INVALID_PARAMETER;
	nic = tcp_nic_enter(CQHandle, TCP_OBJ_CQ, (void **)&cq);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	ret = cq_take(nic, cq, ViHandle, RecvQueue);
	tcp_nic_leave(nic);
	return ret;
}

VIP_RETURN
tcp_cq_wait(VIP_CQ_HANDLE CQHandle, VIP_ULONG Timeout, VIP_VI_HANDLE *ViHandle,
	    VIP_BOOLEAN *RecvQueue)
{
	uint64_t deadline = tcp_deadline(Timeout);
	struct tcp_nic *nic;
	struct tcp_cq *cq;
	VIP_RETURN ret;

	if (ViHandle == NULL || RecvQueue == NULL)
		return VIP_INVALID_PARAMETER;
	nic = tcp_nic_enter(CQHandle, TCP_OBJ_CQ, (void **)&cq);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	for (;;) {
		ret = cq_take(nic, cq, ViHandle, RecvQueue);
		if (ret != VIP_NOT_DONE)
			break;
		if (tcp_now_ms() >= deadline) {
			ret = VIP_TIMEOUT;
			break;
		}
		tcp_cond_wait(tcp_cond_of(nic, cq->obj.id), &nic->lock, deadline);
		cq = tcp_obj_in(nic, CQHandle, TCP_OBJ_CQ);
		if (cq == NULL) {
			ret = VIP_INVALID_PARAMETER;
			break;
		}
	}
	tcp_nic_leave(nic);
	return ret;
}
