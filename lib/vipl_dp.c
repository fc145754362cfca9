/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data path of the library (VIA §6, §9.6): posting is a 16-byte store
 * into the work queue's ring, the release of its producer index and an
 * atomic OR of the VI's bit in the session's doorbell words - the doorbell
 * of VIA §11.2.1.2, which lets viad look only at VIs that have work; no
 * system call, no lock shared with viad.
 * Completion is read from the descriptor itself (VIA §6.4.2: "examining the
 * status of the Descriptor at the head of the queue"), which viad writes
 * Status last. A thread waits on the queue's wait word, and viad makes the
 * wake-up system call only when a waiter says it sleeps.
 *
 * Each queue has its own mutex, taken by posts and dequeues of that queue
 * only: threads on different queues never contend (ThreadSafe, §9.10.4).
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>

#include "vipl_priv.h"
#include "vipl_wait.h"

/* a waiter re-checks that viad is alive this often */
#define LIVENESS_TICK_MS 100
/* empty VipSendDone/VipRecvDone polls per look at the completion count (done()) */
#define DONE_COUNT_EVERY 64

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Wait until @p try stops answering VIP_NOT_DONE, @p timeout ms pass
 * (VIP_TIMEOUT) or viad goes (VIP_ERROR_RESOURCE). The seq read before the
 * try is the futex value: a completion after it makes FUTEX_WAIT return at
 * once, so no wake-up is lost (via_abi.h, struct via_shm_wait).
 *
 * Before it sleeps the waiter spins on the word for a few tens of
 * microseconds (vipl_wait.c): VIA §9.6.3, §9.6.6 and §9.6.8 ask that the
 * caller be blocked until a completion, and one that comes within the spin
 * is taken with no system call on either side. The spin only decides when
 * to look again: whenever it gives up, the word still held the seq read
 * before this turn's try (or FUTEX_WAIT sees that it moved), so the
 * argument above is unchanged. A spinner is not counted in sleepers, so
 * viad does not call FUTEX_WAKE for it. The spin never outlasts @p
 * timeout, and there is one per call: a waiter idle past it uses no CPU.
 */
static VIP_RETURN
wait_for(struct vipl_nic *nic, struct via_shm_wait *w, VIP_ULONG timeout,
	 VIP_RETURN (*try)(void *arg, void *out), void *arg, void *out)
{
	uint64_t deadline = timeout == VIP_INFINITE ? UINT64_MAX : now_ms() + timeout;
	uint64_t spin_max = timeout >= UINT64_MAX / 1000000 ? UINT64_MAX : timeout * 1000000;
	struct vipl_spin spin = { 0 };

	for (;;) {
		uint32_t seq = __atomic_load_n(&w->seq, __ATOMIC_SEQ_CST);
		VIP_RETURN rc = try(arg, out);
		uint64_t now, left;

		if (rc != VIP_NOT_DONE) {
			vipl_spin_done(&spin);
			return rc;
		}
		if (vipl_spin_wait(&spin, &w->seq, seq, spin_max))
			continue;
		if (!vipl_nic_alive(nic))
			return VIP_ERROR_RESOURCE;
		now = now_ms();
		if (now >= deadline)
			return VIP_TIMEOUT;
		left = deadline - now;
		vipl_spin_sleeps(&spin);
		__atomic_fetch_add(&w->sleepers, 1, __ATOMIC_SEQ_CST);
		vipl_futex_wait(&w->seq, seq, (uint32_t)(left < LIVENESS_TICK_MS ? left
									  : LIVENESS_TICK_MS));
		__atomic_fetch_sub(&w->sleepers, 1, __ATOMIC_SEQ_CST);
	}
}

static struct vipl_vi *
vi_get(VIP_VI_HANDLE handle)
{
	return vipl_handle_get(handle, VIPL_OBJ_VI);
}

/* ---- work queues --------------------------------------------------------- */

int
vipl_wq_init(struct vipl_wq *q, struct via_shm_wq *sh, void *slots, uint32_t cap)
{
	int rc = via_ring_attach(&q->ring, &sh->ring, slots, cap, sizeof(struct via_wqe), true);

	if (rc != 0)
		return rc;
	q->posted = calloc(cap, sizeof(*q->posted));
	if (q->posted == NULL)
		return -ENOMEM;
	pthread_mutex_init(&q->lock, NULL);
	q->done = &sh->done;
	q->cap = cap;
	return 0;
}

void
vipl_wq_fini(struct vipl_wq *q)
{
	/* the VI is destroyed: its pending notifications never run */
	if (q->nq.nic != NULL)
		vipl_notify_cancel(&q->nq);
	if (q->posted == NULL)
		return;
	pthread_mutex_destroy(&q->lock);
	free(q->posted);
	q->posted = NULL;
}

bool
vipl_wq_empty(struct vipl_wq *q)
{
	bool empty;

	pthread_mutex_lock(&q->lock);
	empty = q->head == q->tail;
	pthread_mutex_unlock(&q->lock);
	return empty;
}

static VIP_RETURN
post(struct vipl_vi *vi, enum via_wq_kind kind, VIP_DESCRIPTOR *desc, VIP_MEM_HANDLE mh)
{
	struct vipl_wq *q = &vi->wq[kind];
	struct via_wqe *slot;

	pthread_mutex_lock(&q->lock);
	if (q->tail - q->head >= vi->nic->info.max_desc_per_queue ||
	    via_ring_free_count(&q->ring) == 0) {
		pthread_mutex_unlock(&q->lock);
		/* VIA §9.9.1 VI Overrun: more than MaxDescriptorsPerQueue posted;
		 * the descriptor is not queued */
		vipl_async_error(vi->nic, VIP_ERROR_VI_OVERRUN, vi->obj.id, VIP_RESOURCE_VI, desc,
				 kind == VIA_WQ_SEND ? VIP_STATUS_OP_SEND : VIP_STATUS_OP_RECEIVE);
		return VIP_ERROR_RESOURCE;
	}
	/* VIA §10.2: Status is zero while posted; a stale Done must not read
	 * as a completion of this post */
	__atomic_store_n(&desc->CS.Status, 0, __ATOMIC_RELAXED);
	slot = via_ring_slot(&q->ring, 0);
	slot->desc_va = (uintptr_t)desc;
	slot->desc_handle = mh;
	slot->reserved = 0;
	via_ring_produce(&q->ring, 1);
	/* the doorbell: viad looks at this VI's rings only when its bit is
	 * set (via_abi.h); the ORs order after the producer index store. Then
	 * NEED_WAKEUP: a system call only if viad said it sleeps, read after
	 * the ORs (all seq_cst: viad sets the flag, then looks at the bells) */
	via_bell_ring(vi->bell_word, vi->bell_bit, vi->bell_summary, vi->bell_summary_bit);
	if (__atomic_load_n(&vi->nic->shm->poller_asleep, __ATOMIC_SEQ_CST))
		eventfd_write(vi->nic->wake_fd, 1);
	q->posted[q->tail++ & (q->cap - 1)] = desc;
	pthread_mutex_unlock(&q->lock);
	return VIP_SUCCESS;
}

/* Dequeue the head if it completed (VIA §9.6.2, §9.6.5). */
/*
 * Dequeue the head descriptor if it completed. With @p count_every N > 1 the
 * completion count is read only every Nth empty poll: viad writes that line
 * at each completion, so a poller reading it at each turn would pull it to
 * and fro between the two cores; the count matters only for a completion
 * viad could not write back (POST_DESC), which may well wait a few polls.
 */
static VIP_RETURN
done(struct vipl_wq *q, VIP_DESCRIPTOR **out, uint32_t count_every)
{
	VIP_DESCRIPTOR *d;

	pthread_mutex_lock(&q->lock);
	if (q->head == q->tail) {
		pthread_mutex_unlock(&q->lock);
		return VIP_NOT_DONE;
	}
	d = q->posted[q->head & (q->cap - 1)];
	if (!(__atomic_load_n(&d->CS.Status, __ATOMIC_ACQUIRE) & VIP_STATUS_DONE)) {
		/* viad counts every completion, also one it could not write
		 * back (the descriptor's region was invalid: it reported
		 * POST_DESC). It bumps the count after writing Status, so the
		 * count may lag what was reaped, never lead it: only a count
		 * ahead of what was reaped says the head is complete. Status is
		 * read again after the count. */
		uint32_t seq;

		if (++q->empty_polls % count_every != 0) {
			pthread_mutex_unlock(&q->lock);
			return VIP_NOT_DONE;
		}
		seq = __atomic_load_n(&q->done->seq, __ATOMIC_ACQUIRE);
		if ((int32_t)(seq - q->reaped) <= 0) {
			pthread_mutex_unlock(&q->lock);
			return VIP_NOT_DONE;
		}
		if (!(__atomic_load_n(&d->CS.Status, __ATOMIC_ACQUIRE) & VIP_STATUS_DONE))
			d->CS.Status = VIP_STATUS_DONE | VIP_STATUS_PROTECTION_ERROR;
	}
	q->head++;
	q->reaped++;
	pthread_mutex_unlock(&q->lock);
	*out = d;
	return VIP_SUCCESS;
}

static VIP_RETURN
try_done(void *arg, void *out)
{
	return done(arg, out, 1);     /* woken by the count: read it */
}

VIP_RETURN
vipl_wq_take(struct vipl_wq *q, VIP_DESCRIPTOR **out)
{
	return done(q, out, 1);
}

static VIP_RETURN
queue_done(VIP_VI_HANDLE h, enum via_wq_kind kind, VIP_DESCRIPTOR **out)
{
	struct vipl_vi *vi = vi_get(h);

	if (vi == NULL || out == NULL)
		return VIP_INVALID_PARAMETER;
	/* with a CQ, the application calls this once per CQ entry: the
	 * entry of a completion viad could not write must be found at once */
	return done(&vi->wq[kind], out, vi->cq[kind] != NULL ? 1 : DONE_COUNT_EVERY);
}

static VIP_RETURN
queue_wait(VIP_VI_HANDLE h, enum via_wq_kind kind, VIP_ULONG timeout, VIP_DESCRIPTOR **out)
{
	struct vipl_vi *vi = vi_get(h);

	if (vi == NULL || out == NULL)
		return VIP_INVALID_PARAMETER;
	/* VIA §9.3.1, §9.6.3: a queue tied to a CQ is waited on through it */
	if (vi->cq[kind] != NULL)
		return VIP_ERROR_RESOURCE;
	return wait_for(vi->nic, vi->wq[kind].done, timeout, try_done, &vi->wq[kind], out);
}

VIPL_EXPORT VIP_RETURN
VipPostSend(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr, VIP_MEM_HANDLE MemoryHandle)
{
	struct vipl_vi *vi = vi_get(ViHandle);

	if (vi == NULL || DescriptorPtr == NULL)
		return VIP_INVALID_PARAMETER;
	return post(vi, VIA_WQ_SEND, DescriptorPtr, MemoryHandle);
}

VIPL_EXPORT VIP_RETURN
VipPostRecv(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr, VIP_MEM_HANDLE MemoryHandle)
{
	struct vipl_vi *vi = vi_get(ViHandle);

	if (vi == NULL || DescriptorPtr == NULL)
		return VIP_INVALID_PARAMETER;
	return post(vi, VIA_WQ_RECV, DescriptorPtr, MemoryHandle);
}

VIPL_EXPORT VIP_RETURN
VipSendDone(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR **DescriptorPtr)
{
	return queue_done(ViHandle, VIA_WQ_SEND, DescriptorPtr);
}

VIPL_EXPORT VIP_RETURN
VipRecvDone(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR **DescriptorPtr)
{
	return queue_done(ViHandle, VIA_WQ_RECV, DescriptorPtr);
}

VIPL_EXPORT VIP_RETURN
VipSendWait(VIP_VI_HANDLE ViHandle, VIP_ULONG Timeout, VIP_DESCRIPTOR **DescriptorPtr)
{
	return queue_wait(ViHandle, VIA_WQ_SEND, Timeout, DescriptorPtr);
}

VIPL_EXPORT VIP_RETURN
VipRecvWait(VIP_VI_HANDLE ViHandle, VIP_ULONG Timeout, VIP_DESCRIPTOR **DescriptorPtr)
{
	return queue_wait(ViHandle, VIA_WQ_RECV, Timeout, DescriptorPtr);
}

/* ---- completion queues (VIA §9.6.7-9.6.8) -------------------------------- */

struct cq_out {
	VIP_VI_HANDLE *vi;
	VIP_BOOLEAN *recv;
};

static VIP_RETURN
cq_done(void *arg, void *out)
{
	struct vipl_cq *cq = arg;
	struct cq_out *o = out;
	struct via_cqe e;

	pthread_mutex_lock(&cq->lock);
	while (via_ring_dequeue(&cq->ring, &e) == 0) {
		VIP_VI_HANDLE h = vipl_handle_by_id(e.vi_cookie, VIPL_OBJ_VI);

		/* an entry of a VI destroyed since is of no use to anyone */
		if (h == NULL)
			continue;
		pthread_mutex_unlock(&cq->lock);
		*o->vi = h;
		*o->recv = (e.flags & VIA_CQE_RECV) ? VIP_TRUE : VIP_FALSE;
		return VIP_SUCCESS;
	}
	pthread_mutex_unlock(&cq->lock);
	return VIP_NOT_DONE;
}

VIP_RETURN
vipl_cq_take(struct vipl_cq *cq, VIP_VI_HANDLE *vi, VIP_BOOLEAN *recv)
{
	struct cq_out o = { vi, recv };

	return cq_done(cq, &o);
}

VIPL_EXPORT VIP_RETURN
VipCQDone(VIP_CQ_HANDLE CQHandle, VIP_VI_HANDLE *ViHandle, VIP_BOOLEAN *RecvQueue)
{
	struct vipl_cq *cq = vipl_cq_get(CQHandle);
	struct cq_out o = { ViHandle, RecvQueue };

	if (cq == NULL || ViHandle == NULL || RecvQueue == NULL)
		return VIP_INVALID_PARAMETER;
	return cq_done(cq, &o);
}

VIPL_EXPORT VIP_RETURN
VipCQWait(VIP_CQ_HANDLE CQHandle, VIP_ULONG Timeout, VIP_VI_HANDLE *ViHandle,
	  VIP_BOOLEAN *RecvQueue)
{
	struct vipl_cq *cq = vipl_cq_get(CQHandle);
	struct cq_out o = { ViHandle, RecvQueue };

	if (cq == NULL || ViHandle == NULL || RecvQueue == NULL)
		return VIP_INVALID_PARAMETER;
	return wait_for(cq->nic, &cq->sh->wait, Timeout, cq_done, cq, &o);
}
