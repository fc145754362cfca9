/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file vipl_dpdk_inline.h
 * @brief The data path of libvipl-dpdk, inlined into the application.
 *
 * A program linked with libvipl-dpdk directly (-lvipl-dpdk, not through
 * libvipl.so) that includes this header after vipl.h gets VipPostSend,
 * VipPostRecv, VipSendDone, VipRecvDone and VipCQDone as static inline
 * functions: unmodified code compiles to inline calls, with no call into
 * the library on the way (no PLT) and no lookup beyond the handle check
 * every call makes (a handle table slot and the object's handle word).
 * They are the library's own code: its exported calls are these functions
 * (DPDK's model), so both give the same results, errors included.
 *
 * What the inline code reads of the library is the contract of
 * vipl_dpdk_dp.h, installed with the library and versioned: an
 * application built against another version does not start (undefined
 * symbol vipl_dpdk_dp_vN). Compile with the include path of
 * `pkg-config --cflags libvipl-dpdk`, which has the contract's directory.
 * A data-path routine a provider built on the library replaced
 * (vipl_dpdk_dp_register) is called from here too.
 *
 * VIPL_DPDK_INLINE_KEEP_NAMES defined before the include gives the
 * vipl_dpdk_inline_* functions without the macros that rename the calls
 * (the library defines its exported calls with them so).
 *
 * C only.
 */
#ifndef VIPL_DPDK_INLINE_H
#define VIPL_DPDK_INLINE_H

#include <string.h>
#include <sys/eventfd.h>

#include <vipl.h>
#include <vipl_dpdk_dp.h>

/* ---- work queue entries ------------------------------------------------------------ */

/** The line entry of post number @p index of ring @p q (q->ring.seq_off != 0). */
static inline struct via_wqe_line *
vipl_dpdk_dp_line(const struct vipl_dpdk_wq *q, uint32_t index)
{
	return (struct via_wqe_line *)(q->ring.slots +
				       (size_t)(index & q->ring.mask) * q->ring.slot_size);
}

/**
 * The Status word viad completes descriptor @p d, post number @p index of
 * @p q, in: the descriptor's own, or its line entry's (via_abi.h, struct
 * via_wqe_line).
 */
static inline const uint32_t *
vipl_dpdk_dp_status_word(const struct vipl_dpdk_wq *q, uint32_t index, const VIP_DESCRIPTOR *d)
{
	return q->ring.seq_off != 0 ? &vipl_dpdk_dp_line(q, index)->status : &d->CS.Status;
}

/*
 * The data of a Send or RDMA Write @p desc into line entry @p e, if they
 * fit in the @p room bytes after its first line, its data segments add up
 * to its Length and each lies in a region of its memory handle that @p mrs
 * knows (else viad reads them, and finds any error). Read at the post, as
 * IBV_SEND_INLINE: the program may reuse the buffers at once.
 */
static inline bool
vipl_dpdk_dp_inline(struct via_wqe_line *e, const VIP_DESCRIPTOR *desc, uint32_t room,
		    const struct vipl_dpdk_mr_cache *mrs)
{
	const uint16_t op = desc->CS.Control & VIP_CONTROL_OP_MASK, n = desc->CS.SegCount;
	uint8_t *dst = (uint8_t *)(e + 1);
	uint32_t sum = 0;
	uint16_t i;

	if (desc->CS.Length > room || op == VIP_CONTROL_OP_RDMAREAD || op == VIP_CONTROL_OP_RESERVED)
		return false;
	for (i = op == VIP_CONTROL_OP_SENDRECV ? 0 : 1; i < n; i++) {
		uint32_t len = desc->DS[i].Local.Length;

		if (len > room - sum)
			return false;
		if (len > 0 &&
		    !vipl_dpdk_mr_readable(mrs, desc->DS[i].Local.Handle,
					   desc->DS[i].Local.Data.AddressBits, len))
			return false;
		if (len > 0)
			memcpy(dst + sum, desc->DS[i].Local.Data.Address, len);
		sum += len;
	}
	return sum == desc->CS.Length;
}

/*
 * Fill the next line entry of @p vi's queue @p kind with @p desc (in memory of handle
 * @p mh) and publish it: the descriptor itself when it has at most two
 * segments, and a Send's or RDMA Write's data when they fit (via_abi.h,
 * struct via_wqe_line). @return whether viad must be rung
 */
static inline bool
vipl_dpdk_dp_post_line(struct vipl_dpdk_vi *vi, enum via_wq_kind kind, const VIP_DESCRIPTOR *desc,
		       VIP_MEM_HANDLE mh)
{
	struct vipl_dpdk_wq *q = &vi->wq[kind];
	struct via_wqe_line *e = via_ring_slot(&q->ring, 0);
	const uint16_t n = desc->CS.SegCount;
	uint32_t flags = 0;

	e->desc_va = (uintptr_t)desc;
	e->desc_handle = mh;
	e->control = desc->CS.Control;
	e->seg_count = n;
	e->length = desc->CS.Length;
	e->imm = desc->CS.ImmediateData;
	/* a descriptor the entry cannot say all of (its Reserved field) is
	 * read by viad, which finds the error */
	if (n <= VIA_WQE_LINE_SEGS && desc->CS.Reserved == 0) {
		_Static_assert(sizeof(e->seg[0]) == sizeof(desc->DS[0]), "segments alike");
		/* one or two fixed-size copies, no call */
		if (n > 0)
			memcpy(&e->seg[0], &desc->DS[0], sizeof(e->seg[0]));
		if (n > 1)
			memcpy(&e->seg[1], &desc->DS[1], sizeof(e->seg[1]));
		flags = VIA_WQE_DESC;
		if (kind == VIA_WQ_SEND &&
		    vipl_dpdk_dp_inline(e, desc, q->ring.slot_size - VIA_WQE_LINE_SIZE, vi->mrs))
			flags |= VIA_WQE_INLINE;
	}
	e->status = flags;
	return via_ring_produce_seq(&q->ring);
}

/* ---- the default routines of struct vipl_dpdk_dp_ops ------------------------------ */

/** Default ring_doorbell (vipl_dpdk_dp.h says what it does). */
static inline void
vipl_dpdk_dp_ring_doorbell_default(struct vipl_dpdk_vi *vi, enum via_wq_kind kind)
{
	/* one bit per VI: viad looks at both of its queues */
	(void)kind;
	via_bell_ring(vi->bell_word, vi->bell_bit, vi->bell_summary, vi->bell_summary_bit);
	/* the flag's load after the work word's seq_cst ORs: either viad's
	 * last look sees the bell or this sees the count (via_abi.h,
	 * "Wake-up contract", pair 1) */
	if (__atomic_load_n(vi->poller_asleep, __ATOMIC_SEQ_CST) != 0)
		eventfd_write(vi->wake_fd, 1);
}

/**
 * Default poll_completion. Status is viad's last write of a completion
 * (release), so Done seen with acquire also shows Length and
 * ImmediateData. viad counts every completion after writing Status,
 * also one it could not write back (the descriptor's region was invalid:
 * POST_DESC); the count is read only every count_mask + 1 polls that
 * found the head not done, because viad writes its line at every
 * completion and a poller reading it at each turn would pull it to and
 * fro between two cores; and never on a ring of line entries, whose
 * completions viad always writes (into the entry).
 */
static inline bool
vipl_dpdk_dp_poll_completion_default(struct vipl_dpdk_wq *q, const VIP_DESCRIPTOR *head)
{
	const struct via_shm_wait *done;
	uint32_t n;

	/* a line entry's: the head index may have moved on meanwhile (another
	 * thread dequeued), which only makes a wrong true */
	if (__atomic_load_n(vipl_dpdk_dp_status_word(q, __atomic_load_n(&q->head, __ATOMIC_ACQUIRE),
						     head), __ATOMIC_ACQUIRE) & VIP_STATUS_DONE)
		return true;
	/* viad writes every completion of a line entry: the count, whose
	 * line viad writes at each completion, is never needed to find one */
	if (q->ring.seq_off != 0)
		return false;
	n = __atomic_load_n(&q->empty_polls, __ATOMIC_RELAXED) + 1;
	__atomic_store_n(&q->empty_polls, n, __ATOMIC_RELAXED);
	if ((n & __atomic_load_n(&q->count_mask, __ATOMIC_RELAXED)) != 0)
		return false;
	done = __atomic_load_n(&q->done, __ATOMIC_ACQUIRE);
	/* the count may lag what was reaped, never lead it */
	return (int32_t)(__atomic_load_n(&done->seq, __ATOMIC_ACQUIRE) -
			 __atomic_load_n(&q->reaped, __ATOMIC_ACQUIRE)) > 0;
}

/** Default poll_cq: viad's producer index moved past the consumer's. */
static inline bool
vipl_dpdk_dp_poll_cq_default(struct vipl_dpdk_cq *cq)
{
	const uint32_t *prod = __atomic_load_n(&cq->prod, __ATOMIC_ACQUIRE);

	return __atomic_load_n(prod, __ATOMIC_ACQUIRE) != __atomic_load_n(&cq->cons, __ATOMIC_ACQUIRE);
}

/* ---- the routines in force: the default inline, an override called -------------- */

/** Whether ops slot @p bit (VIPL_DPDK_DP_OVR_*) was replaced. */
static inline bool
vipl_dpdk_dp_overridden(uint32_t bit)
{
	return __builtin_expect((__atomic_load_n(&vipl_dpdk_dp.overridden, __ATOMIC_ACQUIRE) &
				 bit) != 0, 0);
}

static inline void
vipl_dpdk_dp_ring_doorbell(struct vipl_dpdk_vi *vi, enum via_wq_kind kind)
{
	if (vipl_dpdk_dp_overridden(VIPL_DPDK_DP_OVR_RING_DOORBELL))
		__atomic_load_n(&vipl_dpdk_dp.ops.ring_doorbell, __ATOMIC_RELAXED)(vi, kind);
	else
		vipl_dpdk_dp_ring_doorbell_default(vi, kind);
}

static inline bool
vipl_dpdk_dp_poll_completion(struct vipl_dpdk_wq *q, const VIP_DESCRIPTOR *head)
{
	if (vipl_dpdk_dp_overridden(VIPL_DPDK_DP_OVR_POLL_COMPLETION))
		return __atomic_load_n(&vipl_dpdk_dp.ops.poll_completion, __ATOMIC_RELAXED)(q, head);
	return vipl_dpdk_dp_poll_completion_default(q, head);
}

static inline bool
vipl_dpdk_dp_poll_cq(struct vipl_dpdk_cq *cq)
{
	if (vipl_dpdk_dp_overridden(VIPL_DPDK_DP_OVR_POLL_CQ))
		return __atomic_load_n(&vipl_dpdk_dp.ops.poll_cq, __ATOMIC_RELAXED)(cq);
	return vipl_dpdk_dp_poll_cq_default(cq);
}

/* ---- posting (VIA §9.6.1, §9.6.4) ---------------------------------------------------- */

/**
 * Post @p desc (in memory of handle @p mh) on queue @p kind of the VI of
 * @p handle: a 16-byte entry in the queue's ring and the publish of its
 * producer index, or a line entry that carries the descriptor (and a small
 * message's data) and publishes itself; then the doorbell unless viad polls
 * the ring now (a VI that is sending: via_abi.h, "Wake-up contract", pair
 * 6), under the queue's lock (posts of other queues never contend). The
 * lock also orders the post before a destroy of the VI, which retires the
 * handle under it.
 * @return VIP_SUCCESS; VIP_INVALID_PARAMETER (not a live VI, @p desc NULL);
 *         VIP_ERROR_RESOURCE (MaxDescriptorsPerQueue posted: VI Overrun,
 *         reported to the error handler, VIA §9.9.1; nothing is queued)
 */
static inline VIP_RETURN
vipl_dpdk_dp_post(VIP_VI_HANDLE handle, enum via_wq_kind kind, VIP_DESCRIPTOR *desc,
		  VIP_MEM_HANDLE mh)
{
	struct vipl_dpdk_vi *vi = vipl_dpdk_dp_get(handle, VIPL_DPDK_OBJ_VI);
	struct vipl_dpdk_wq *q;
	struct via_wqe *slot;
	uint32_t tail;
	bool bell;

	if (vi == NULL || desc == NULL)
		return VIP_INVALID_PARAMETER;
	q = &vi->wq[kind];
	pthread_mutex_lock(&q->lock);
	if (!vipl_dpdk_dp_live(&vi->obj, handle)) {
		pthread_mutex_unlock(&q->lock);
		return VIP_INVALID_PARAMETER;
	}
	/* head, tail and the ring change only under the lock; a line entry's
	 * slot is free once its descriptor was dequeued, which the first
	 * test says (max_posted <= the ring's capacity) */
	tail = q->tail;
	if (tail - q->head >= vi->max_posted ||
	    (q->ring.seq_off == 0 && via_ring_free_count(&q->ring) == 0)) {
		pthread_mutex_unlock(&q->lock);
		vipl_dpdk_dp.overrun(vi, kind, desc);
		return VIP_ERROR_RESOURCE;
	}
	/* VIA §10.2: Status is zero while posted; a stale Done must not read
	 * as a completion of this post. Ordered before viad's look by the
	 * ring's release, before a poll's by the tail's; a release itself, so
	 * that a poller of the previous life's queue position that reads this
	 * zero also sees that position dequeued (vipl_dpdk_dp_done) */
	__atomic_store_n(&desc->CS.Status, 0, __ATOMIC_RELEASE);
	if (q->ring.seq_off != 0) {
		bell = vipl_dpdk_dp_post_line(vi, kind, desc, mh);
	} else {
		slot = via_ring_slot(&q->ring, 0);
		slot->desc_va = (uintptr_t)desc;
		slot->desc_handle = mh;
		slot->reserved = 0;
		bell = via_ring_produce_needs_bell(&q->ring, 1);
	}
	__atomic_store_n(&q->posted[tail & q->mask], desc, __ATOMIC_RELEASE);
	__atomic_store_n(&q->tail, tail + 1, __ATOMIC_RELEASE);
	if (bell)
		vipl_dpdk_dp_ring_doorbell(vi, kind);
	pthread_mutex_unlock(&q->lock);
	return VIP_SUCCESS;
}

/* ---- completion (VIA §9.6.2, §9.6.5, §9.6.7) ------------------------------------------ */

/**
 * Dequeue the head of @p vi's queue @p kind if it completed, under the
 * queue's lock, if @p vi still has the life @p handle names. Status is
 * read again here; if it is not Done, viad's count ahead of what was
 * reaped says the head completed all the same, unwritten: it is handed
 * out with VIP_STATUS_PROTECTION_ERROR (viad reported POST_DESC). A line
 * entry's completion is copied into the descriptor here (VIA §6.4.1: the
 * consumer finds it there).
 * @return VIP_SUCCESS and *@p out; VIP_NOT_DONE; VIP_INVALID_PARAMETER
 *         (the VI was destroyed)
 */
static inline VIP_RETURN
vipl_dpdk_dp_wq_take(struct vipl_dpdk_vi *vi, const void *handle, enum via_wq_kind kind,
		     VIP_DESCRIPTOR **out)
{
	struct vipl_dpdk_wq *q = &vi->wq[kind];
	VIP_RETURN rc = VIP_NOT_DONE;
	const uint32_t *st;
	VIP_DESCRIPTOR *d;
	uint32_t head, status;

	pthread_mutex_lock(&q->lock);
	if (!vipl_dpdk_dp_live(&vi->obj, handle)) {
		rc = VIP_INVALID_PARAMETER;
		goto out;
	}
	head = q->head;
	if (head == q->tail)
		goto out;
	d = q->posted[head & q->mask];
	st = vipl_dpdk_dp_status_word(q, head, d);
	status = __atomic_load_n(st, __ATOMIC_ACQUIRE);
	if (!(status & VIP_STATUS_DONE)) {
		if ((int32_t)(__atomic_load_n(&q->done->seq, __ATOMIC_ACQUIRE) - q->reaped) <= 0)
			goto out;
		status = __atomic_load_n(st, __ATOMIC_ACQUIRE);
	}
	/* the descriptor is the consumer's now: viad is done with it */
	if (!(status & VIP_STATUS_DONE)) {
		__atomic_store_n(&d->CS.Status, VIP_STATUS_DONE | VIP_STATUS_PROTECTION_ERROR,
				 __ATOMIC_RELAXED);
	} else if (q->ring.seq_off != 0) {
		const struct via_wqe_line *e = vipl_dpdk_dp_line(q, head);

		d->CS.Length = e->length;
		d->CS.ImmediateData = e->imm;
		__atomic_store_n(&d->CS.Status, status, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&q->head, head + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&q->reaped, q->reaped + 1, __ATOMIC_RELEASE);
	*out = d;
	rc = VIP_SUCCESS;
out:
	pthread_mutex_unlock(&q->lock);
	return rc;
}

/**
 * VipSendDone / VipRecvDone. A poll that finds the queue empty or its head
 * not done takes no lock and touches, besides the handle table and the
 * queue's own words, only the head's Status: what viad writes when it
 * completes it. The lock is taken to dequeue.
 *
 * The VI may be destroyed while this runs, and its object reused: the
 * lookup's acquire saw this life set up, so head, tail and the entry read
 * here are this life's or a later one's; the handle read again after the
 * entry (whose load is an acquire, and whose store by a later life a
 * release after that life's handle was published) rules the later ones
 * out. So a descriptor this dereferences was posted on this VI while its
 * handle was live. One it reads may have been dequeued by another thread
 * meanwhile; the program keeps descriptor memory mapped while other
 * threads may still poll the queue it was on (docs/design.md section 5).
 * @return VIP_SUCCESS and *@p out; VIP_NOT_DONE; VIP_INVALID_PARAMETER
 */
static inline VIP_RETURN
vipl_dpdk_dp_done(VIP_VI_HANDLE handle, enum via_wq_kind kind, VIP_DESCRIPTOR **out)
{
	struct vipl_dpdk_vi *vi = vipl_dpdk_dp_get(handle, VIPL_DPDK_OBJ_VI);
	const VIP_DESCRIPTOR *d;
	struct vipl_dpdk_wq *q;
	uint32_t head;

	if (vi == NULL || out == NULL)
		return VIP_INVALID_PARAMETER;
	q = &vi->wq[kind];
	head = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);
	for (;;) {
		uint32_t now;

		if (head == __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE))
			return VIP_NOT_DONE;
		d = __atomic_load_n(&q->posted[head & q->mask], __ATOMIC_ACQUIRE);
		if (!vipl_dpdk_dp_live(&vi->obj, handle))
			return VIP_INVALID_PARAMETER;
		if (vipl_dpdk_dp_poll_completion(q, d))
			return vipl_dpdk_dp_wq_take(vi, handle, kind, out);
		/* another thread dequeued that head meanwhile, and its program
		 * may have posted the descriptor again (Status 0): a completion
		 * the caller was told of (its CQ entry) is at the new head */
		now = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);
		if (now == head)
			return VIP_NOT_DONE;
		head = now;
	}
}

/**
 * Dequeue an entry of @p cq, if it still has the life @p handle names,
 * under its lock: the VI and queue of a completion (VIA §6.4.2). An entry
 * of a VI destroyed since is of no use to anyone: skipped.
 * @return VIP_SUCCESS; VIP_NOT_DONE; VIP_INVALID_PARAMETER (destroyed)
 */
static inline VIP_RETURN
vipl_dpdk_dp_cq_take(struct vipl_dpdk_cq *cq, const void *handle, VIP_VI_HANDLE *vi,
		     VIP_BOOLEAN *recv)
{
	VIP_RETURN rc = VIP_NOT_DONE;
	struct via_cqe e;

	pthread_mutex_lock(&cq->lock);
	if (!vipl_dpdk_dp_live(&cq->obj, handle)) {
		pthread_mutex_unlock(&cq->lock);
		return VIP_INVALID_PARAMETER;
	}
	while (via_ring_dequeue(&cq->ring, &e) == 0) {
		VIP_VI_HANDLE h = vipl_dpdk_dp_handle_by_id(e.vi_cookie, VIPL_DPDK_OBJ_VI);

		if (h != NULL) {
			*vi = h;
			*recv = (e.flags & VIA_CQE_RECV) ? VIP_TRUE : VIP_FALSE;
			rc = VIP_SUCCESS;
			break;
		}
	}
	__atomic_store_n(&cq->cons, cq->ring.local, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&cq->lock);
	return rc;
}

/**
 * VipCQDone. An empty poll takes no lock and reads the CQ's producer
 * index (viad's) and the consumer index; the lock is taken to dequeue.
 * The CQ's block in the segment stays where it is for the CQ's life, and
 * the lookup's acquire saw this life's pointer to it (or a later life's).
 * @return VIP_SUCCESS and the VI and queue; VIP_NOT_DONE;
 *         VIP_INVALID_PARAMETER
 */
static inline VIP_RETURN
vipl_dpdk_dp_cq_done(VIP_CQ_HANDLE handle, VIP_VI_HANDLE *vi, VIP_BOOLEAN *recv)
{
	struct vipl_dpdk_cq *cq = vipl_dpdk_dp_get(handle, VIPL_DPDK_OBJ_CQ);

	if (cq == NULL || vi == NULL || recv == NULL)
		return VIP_INVALID_PARAMETER;
	if (!vipl_dpdk_dp_poll_cq(cq))
		return VIP_NOT_DONE;
	return vipl_dpdk_dp_cq_take(cq, handle, vi, recv);
}

/* ---- the VIPL calls --------------------------------------------------------------------- */

/** VipPostSend (VIA §9.6.1), inline; as vipl_dpdk_dp_post. */
static inline VIP_RETURN
vipl_dpdk_inline_post_send(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr,
			   VIP_MEM_HANDLE MemoryHandle)
{
	return vipl_dpdk_dp_post(ViHandle, VIA_WQ_SEND, DescriptorPtr, MemoryHandle);
}

/** VipPostRecv (VIA §9.6.4), inline; as vipl_dpdk_dp_post. */
static inline VIP_RETURN
vipl_dpdk_inline_post_recv(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr,
			   VIP_MEM_HANDLE MemoryHandle)
{
	return vipl_dpdk_dp_post(ViHandle, VIA_WQ_RECV, DescriptorPtr, MemoryHandle);
}

/** VipSendDone (VIA §9.6.2), inline; as vipl_dpdk_dp_done. */
static inline VIP_RETURN
vipl_dpdk_inline_send_done(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR **DescriptorPtr)
{
	return vipl_dpdk_dp_done(ViHandle, VIA_WQ_SEND, DescriptorPtr);
}

/** VipRecvDone (VIA §9.6.5), inline; as vipl_dpdk_dp_done. */
static inline VIP_RETURN
vipl_dpdk_inline_recv_done(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR **DescriptorPtr)
{
	return vipl_dpdk_dp_done(ViHandle, VIA_WQ_RECV, DescriptorPtr);
}

/** VipCQDone (VIA §9.6.7), inline; as vipl_dpdk_dp_cq_done. */
static inline VIP_RETURN
vipl_dpdk_inline_cq_done(VIP_CQ_HANDLE CQHandle, VIP_VI_HANDLE *ViHandle, VIP_BOOLEAN *RecvQueue)
{
	return vipl_dpdk_dp_cq_done(CQHandle, ViHandle, RecvQueue);
}

#ifndef VIPL_DPDK_INLINE_KEEP_NAMES
#define VipPostSend vipl_dpdk_inline_post_send
#define VipPostRecv vipl_dpdk_inline_post_recv
#define VipSendDone vipl_dpdk_inline_send_done
#define VipRecvDone vipl_dpdk_inline_recv_done
#define VipCQDone vipl_dpdk_inline_cq_done
#endif

#endif /* VIPL_DPDK_INLINE_H */
