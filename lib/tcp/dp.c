/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Work queues (VIA §6, §9.6.1-9.6.6): posting, the descriptor checks of
 * §10, completion and dequeueing.
 *
 * The provider keeps its own record of each posted descriptor (struct
 * tcp_wqe): whether it is done is read there, so VipSendDone and
 * VipRecvDone never read the consumer's memory, and a descriptor whose
 * own memory fails its check (VIP_ERROR_POST_DESC, VIP_ERROR_COMP_PROT)
 * still completes and can be dequeued, unwritten. A descriptor's fields
 * are written at completion, Status last (VIA §6.4.1: "the Status must be
 * the last item updated"), so a consumer that polls Status directly sees
 * the rest.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tcp_prov.h"

uint32_t
tcp_op_status(const struct tcp_wq *q, uint8_t op)
{
	if (q->recv)
		return VIP_STATUS_OP_RECEIVE;
	if (op == VIP_CONTROL_OP_RDMAWRITE)
		return VIP_STATUS_OP_RDMA_WRITE;
	if (op == VIP_CONTROL_OP_RDMAREAD)
		return VIP_STATUS_OP_RDMA_READ;
	return VIP_STATUS_OP_SEND;
}

static bool
wqe_done(const struct tcp_wqe *w)
{
	return (w->status & VIP_STATUS_DONE) != 0;
}

/* Step q->next over entries that completed when posted. */
static void
wq_settle(struct tcp_wq *q)
{
	while (q->next != q->tail && wqe_done(tcp_wq_at(q, q->next)))
		q->next++;
}

bool
tcp_wq_peek(struct tcp_wq *q, uint32_t *pos)
{
	wq_settle(q);
	*pos = q->next;
	return q->next != q->tail;
}

void
tcp_wqe_complete(struct tcp_vi *vi, struct tcp_wq *q, uint32_t pos, uint32_t status, uint32_t len,
		 uint32_t imm)
{
	struct tcp_wqe *w = tcp_wq_at(q, pos);
	VIP_DESCRIPTOR *d = w->desc;

	status |= VIP_STATUS_DONE;
	/* the length of a descriptor in error is undefined (VIA §10.2): 0 */
	if (status & VIP_STATUS_ERROR_MASK)
		len = 0;
	if (!w->untouchable &&
	    tcp_mr_check(vi->nic, w->mh, (uintptr_t)d, sizeof(d->CS), vi->ptag,
			 TCP_LOCAL_READ | TCP_LOCAL_WRITE) != 0) {
		/* VIA §9.9.1 Completion Protection Error: its region went */
		w->untouchable = true;
		tcp_async_error(vi->nic, VIP_ERROR_COMP_PROT, VIP_RESOURCE_DESCRIPTOR, vi, d,
				status & VIP_STATUS_OP_MASK);
	}
	if (!w->untouchable) {
		d->CS.Length = len;
		if (status & VIP_STATUS_IMMEDIATE)
			d->CS.ImmediateData = imm;
		__atomic_store_n(&d->CS.Status, status, __ATOMIC_RELEASE);
	}
	w->status = status;
	if (q->cq != NULL)
		tcp_cq_push(vi->nic, q->cq, vi->obj.id, q->recv);
	pthread_cond_broadcast(tcp_cond_of(vi->nic, vi->obj.id));
}

void
tcp_wq_flush(struct tcp_vi *vi, struct tcp_wq *q, uint32_t status)
{
	uint32_t pos;

	/* in queue order: the outstanding RDMA Reads, the entry being sent or
	 * filled, then those not started */
	for (pos = q->head; pos != q->tail; pos++) {
		struct tcp_wqe *w = tcp_wq_at(q, pos);

		if (!wqe_done(w))
			tcp_wqe_complete(vi, q, pos, status | tcp_op_status(q, w->op), 0, 0);
	}
	q->next = q->tail;
}

uint32_t
tcp_desc_read(struct tcp_vi *vi, struct tcp_wq *q, uint32_t pos, struct tcp_desc *d,
	      struct tcp_seg *segs)
{
	struct tcp_wqe *w = tcp_wq_at(q, pos);
	const VIP_DESCRIPTOR *desc = w->desc;
	const VIP_DESCRIPTOR_SEGMENT *ds;
	uint64_t va = (uintptr_t)desc;
	struct tcp_nic *nic = vi->nic;
	unsigned i, first;
	uint16_t n;

	memset(d, 0, sizeof(*d));
	/* the descriptor's own region was deregistered since the post */
	if (tcp_mr_check(nic, w->mh, va, sizeof(desc->CS), vi->ptag,
			 TCP_LOCAL_READ | TCP_LOCAL_WRITE) != 0) {
		w->untouchable = true;
		tcp_async_error(nic, VIP_ERROR_POST_DESC, VIP_RESOURCE_DESCRIPTOR, vi, w->desc,
				tcp_op_status(q, w->op));
		return VIP_STATUS_PROTECTION_ERROR;
	}
	/* VIA §6.1: "Descriptors must be aligned on a 64-byte boundary" */
	if (va % VIP_DESCRIPTOR_ALIGNMENT != 0)
		return VIP_STATUS_FORMAT_ERROR;
	d->control = desc->CS.Control;
	d->op = d->control & VIP_CONTROL_OP_MASK;
	d->imm = desc->CS.ImmediateData;
	d->length = desc->CS.Length;
	n = desc->CS.SegCount;
	/* §10.2: reserved bits and fields are 0, op 11b is undefined */
	if ((d->control & VIP_CONTROL_RESERVED) != 0 || desc->CS.Reserved != 0 ||
	    d->op == VIP_CONTROL_OP_RESERVED)
		return VIP_STATUS_FORMAT_ERROR;
	/* §10.2: RDMA only on the send queue; §10.3: an RDMA descriptor starts
	 * with its address segment; §2.5.1: no RDMA Read on an Unreliable VI */
	if (d->op != VIP_CONTROL_OP_SENDRECV &&
	    (q->recv || n == 0 ||
	     (d->op == VIP_CONTROL_OP_RDMAREAD && vi->reliability == VIP_SERVICE_UNRELIABLE)))
		return VIP_STATUS_FORMAT_ERROR;
	first = d->op == VIP_CONTROL_OP_SENDRECV ? 0 : 1;
	if (n - first > TCP_MAX_SEGS)
		return VIP_STATUS_FORMAT_ERROR;
	/* §3.2.2.1: the whole descriptor in the region, of the VI's tag */
	if (tcp_mr_check(nic, w->mh, va, sizeof(desc->CS) + (uint64_t)n * sizeof(*ds), vi->ptag,
			 TCP_LOCAL_READ) != 0)
		return VIP_STATUS_PROTECTION_ERROR;
	ds = (const VIP_DESCRIPTOR_SEGMENT *)((const uint8_t *)desc + sizeof(desc->CS));
	if (first) {
		d->raddr = ds[0].Remote;
		if (d->raddr.Reserved != 0)
			return VIP_STATUS_FORMAT_ERROR;
	}
	/* a send or an RDMA Write gathers, a receive or an RDMA Read scatters */
	d->access = q->recv || d->op == VIP_CONTROL_OP_RDMAREAD ? TCP_LOCAL_WRITE : TCP_LOCAL_READ;
	for (i = first; i < n; i++) {
		const VIP_DATA_SEGMENT *s = &ds[i].Local;

		d->total += s->Length;
		/* a zero-length segment names no memory (§6.1.1.1) */
		if (s->Length == 0)
			continue;
		/* §10.2 bit 2: a bad handle or address, another tag, no right */
		if (tcp_mr_check(nic, s->Handle, s->Data.AddressBits, s->Length, vi->ptag,
				 d->access) != 0)
			return VIP_STATUS_PROTECTION_ERROR;
		segs[d->nb_segs].va = s->Data.AddressBits;
		segs[d->nb_segs].len = s->Length;
		segs[d->nb_segs].mh = s->Handle;
		d->nb_segs++;
	}
	return 0;
}

/* Double @p q's ring. @return 0, -ENOSPC (at its largest), -ENOMEM */
static int
wq_grow(struct tcp_wq *q)
{
	struct tcp_wqe *ring;
	uint32_t pos, cap = q->cap * 2;

	if (q->cap >= TCP_MAX_DESC_PER_QUEUE)
		return -ENOSPC;
	ring = calloc(cap, sizeof(*ring));
	if (ring == NULL)
		return -ENOMEM;
	for (pos = q->head; pos != q->tail; pos++)
		ring[pos & (cap - 1)] = *tcp_wq_at(q, pos);
	free(q->ring);
	q->ring = ring;
	q->cap = cap;
	return 0;
}

/* The body of VipPostSend and VipPostRecv (VIA §9.6.1, §9.6.4): their VIP_RETURN. */
static VIP_RETURN
post(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *desc, VIP_MEM_HANDLE mh, bool recv)
{
	struct tcp_desc d;
	struct tcp_nic *nic;
	struct tcp_vi *vi;
	struct tcp_wqe *w;
	struct tcp_wq *q;
	uint32_t pos, err;
	int rc;

	if (desc == NULL)
		return VIP_INVALID_PARAMETER;
	nic = tcp_nic_enter(ViHandle, TCP_OBJ_VI, (void **)&vi);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	q = recv ? &vi->rq : &vi->sq;
	if (q->tail - q->head == q->cap && (rc = wq_grow(q)) != 0) {
		/* VIA §9.9.1 VI Overrun: more than MaxDescriptorsPerQueue posted;
		 * the descriptor is not queued */
		if (rc == -ENOSPC)
			tcp_async_error(nic, VIP_ERROR_VI_OVERRUN, VIP_RESOURCE_VI, vi, desc,
					recv ? VIP_STATUS_OP_RECEIVE : VIP_STATUS_OP_SEND);
		tcp_nic_leave(nic);
		return VIP_ERROR_RESOURCE;
	}
	pos = q->tail++;
	w = tcp_wq_at(q, pos);
	memset(w, 0, sizeof(*w));
	w->desc = desc;
	w->mh = mh;
	if (tcp_mr_check(nic, mh, (uintptr_t)desc, sizeof(desc->CS), vi->ptag,
			 TCP_LOCAL_READ | TCP_LOCAL_WRITE) != 0) {
		/* VIA §9.9.1 Post Descriptor Error: the descriptor is not in
		 * memory of the VI's tag, so it is not touched; it completes,
		 * in the provider's record only, and can be dequeued */
		w->untouchable = true;
		tcp_async_error(nic, VIP_ERROR_POST_DESC, VIP_RESOURCE_DESCRIPTOR, vi, desc,
				tcp_op_status(q, 0));
		tcp_wqe_complete(vi, q, pos, VIP_STATUS_PROTECTION_ERROR | tcp_op_status(q, 0), 0, 0);
	} else {
		w->op = desc->CS.Control & VIP_CONTROL_OP_MASK;
		/* VIA §10.2: Status is 0 while posted; a stale Done must not
		 * read as the completion of this post */
		__atomic_store_n(&desc->CS.Status, 0, __ATOMIC_RELAXED);
		if (!recv && vi->state != VIP_STATE_CONNECTED) {
			/* VIA §5.1, §5.2, §5.4, §6.2: the send queue of a VI that
			 * is not connected completes in error */
			err = tcp_desc_read(vi, q, pos, &d, vi->tx.segs);
			tcp_wqe_complete(vi, q, pos,
					 (err != 0 ? err : VIP_STATUS_DESC_FLUSHED_ERROR) |
					 tcp_op_status(q, w->op), 0, 0);
		} else if (recv && vi->state == VIP_STATE_ERROR) {
			/* VIA §5.4: posted in the Error state, completed in error;
			 * Idle and Connect Pending keep them for the connection */
			tcp_wqe_complete(vi, q, pos,
					 VIP_STATUS_DESC_FLUSHED_ERROR | VIP_STATUS_OP_RECEIVE, 0, 0);
		}
	}
	wq_settle(q);
	if (!recv && vi->state == VIP_STATE_CONNECTED)
		tcp_tx_push(vi);
	tcp_nic_leave(nic);
	return VIP_SUCCESS;
}

VIP_RETURN
tcp_post_send(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr, VIP_MEM_HANDLE MemoryHandle)
{
	return post(ViHandle, DescriptorPtr, MemoryHandle, false);
}

VIP_RETURN
tcp_post_recv(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr, VIP_MEM_HANDLE MemoryHandle)
{
	return post(ViHandle, DescriptorPtr, MemoryHandle, true);
}

/* Dequeue the head of @p q if it is complete (VIA §9.6.2, §9.6.5): the
 * VipSendDone/VipRecvDone answer, VIP_SUCCESS or VIP_NOT_DONE. */
static VIP_RETURN
wq_done(struct tcp_wq *q, VIP_DESCRIPTOR **out)
{
	struct tcp_wqe *w;

	if (q->head == q->tail)
		return VIP_NOT_DONE;
	w = tcp_wq_at(q, q->head);
	if (!wqe_done(w))
		return VIP_NOT_DONE;
	*out = w->desc;
	q->head++;
	if ((int32_t)(q->next - q->head) < 0)
		q->next = q->head;
	return VIP_SUCCESS;
}

/* The body of VipSendDone and VipRecvDone: their VIP_RETURN. */
static VIP_RETURN
dequeue(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR **DescriptorPtr, bool recv)
{
	struct tcp_nic *nic;
	struct tcp_vi *vi;
	VIP_RETURN ret;

	if (DescriptorPtr == NULL)
		return VIP_INVALID_PARAMETER;
	nic = tcp_nic_enter(ViHandle, TCP_OBJ_VI, (void **)&vi);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	ret = wq_done(recv ? &vi->rq : &vi->sq, DescriptorPtr);
	tcp_nic_leave(nic);
	return ret;
}

VIP_RETURN
tcp_send_done(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR **DescriptorPtr)
{
	return dequeue(ViHandle, DescriptorPtr, false);
}

VIP_RETURN
tcp_recv_done(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR **DescriptorPtr)
{
	return dequeue(ViHandle, DescriptorPtr, true);
}

/* The body of VipSendWait and VipRecvWait (VIA §9.6.3, §9.6.6): sleep, no
 * polling; their VIP_RETURN. */
static VIP_RETURN
wait_dequeue(VIP_VI_HANDLE ViHandle, VIP_ULONG Timeout, VIP_DESCRIPTOR **DescriptorPtr, bool recv)
{
	uint64_t deadline = tcp_deadline(Timeout);
	struct tcp_nic *nic;
	struct tcp_vi *vi;
	VIP_RETURN ret;

	if (DescriptorPtr == NULL)
		return VIP_INVALID_PARAMETER;
	nic = tcp_nic_enter(ViHandle, TCP_OBJ_VI, (void **)&vi);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	/* VIA §9.6.3, §9.6.6: not on a queue that completes into a CQ */
	if ((recv ? vi->rq.cq : vi->sq.cq) != NULL) {
		tcp_nic_leave(nic);
		return VIP_ERROR_RESOURCE;
	}
	for (;;) {
		ret = wq_done(recv ? &vi->rq : &vi->sq, DescriptorPtr);
		if (ret != VIP_NOT_DONE)
			break;
		if (tcp_now_ms() >= deadline) {
			ret = VIP_TIMEOUT;
			break;
		}
		tcp_cond_wait(tcp_cond_of(nic, vi->obj.id), &nic->lock, deadline);
		/* the VI may have been destroyed, or the NIC closed, meanwhile */
		vi = tcp_obj_in(nic, ViHandle, TCP_OBJ_VI);
		if (vi == NULL) {
			ret = VIP_INVALID_PARAMETER;
			break;
		}
	}
	tcp_nic_leave(nic);
	return ret;
}

VIP_RETURN
tcp_send_wait(VIP_VI_HANDLE ViHandle, VIP_ULONG Timeout, VIP_DESCRIPTOR **DescriptorPtr)
{
	return wait_dequeue(ViHandle, Timeout, DescriptorPtr, false);
}

VIP_RETURN
tcp_recv_wait(VIP_VI_HANDLE ViHandle, VIP_ULONG Timeout, VIP_DESCRIPTOR **DescriptorPtr)
{
	return wait_dequeue(ViHandle, Timeout, DescriptorPtr, true);
}
