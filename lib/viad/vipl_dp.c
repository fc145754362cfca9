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
 * A poll that finds nothing takes no lock (issue 18).
 *
 * The posts and polls themselves are vipl_dpdk_inline.h's: the exported
 * calls here are those functions, which a program may also inline into
 * itself (DPDK's model: one copy of the code). This file adds what is not
 * inlined: the contract object they read (vipl_dpdk_dp), the replacement of
 * its ops, the waits, and the set-up of a queue.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <time.h>

#include "vipl_priv.h"
#include "vipl_wait.h"

#define VIPL_DPDK_INLINE_KEEP_NAMES
#include <vipl_dpdk_inline.h>

_Static_assert(VIPL_DPDK_DP_VIA_ABI == VIA_ABI_VERSION,
	       "via_abi.h changed: if the change touches what vipl_dpdk_inline.h reads of the "
	       "segment, bump VIPL_DPDK_DP_ABI_VERSION; then set VIPL_DPDK_DP_VIA_ABI");

/* a waiter re-checks that viad is alive this often */
#define LIVENESS_TICK_MS 100

/* ---- the contract object and its ops (vipl_dpdk_dp.h) ------------------------------ */

/* the defaults as functions, for the table and for overrides to call */
static void
ring_doorbell_default(struct vipl_dpdk_vi *vi, enum via_wq_kind kind)
{
	vipl_dpdk_dp_ring_doorbell_default(vi, kind);
}

static bool
poll_completion_default(struct vipl_dpdk_wq *q, const VIP_DESCRIPTOR *head)
{
	return vipl_dpdk_dp_poll_completion_default(q, head);
}

static bool
poll_cq_default(struct vipl_dpdk_cq *cq)
{
	return vipl_dpdk_dp_poll_cq_default(cq);
}

/* VIA §9.9.1 VI Overrun: more than MaxDescriptorsPerQueue posted */
static void
post_overrun(struct vipl_dpdk_vi *dp, enum via_wq_kind kind, VIP_DESCRIPTOR *desc)
{
	struct vipl_vi *vi = (struct vipl_vi *)dp;

	vipl_vi_async_error(vi, VIP_ERROR_VI_OVERRUN, desc,
			    kind == VIA_WQ_SEND ? VIP_STATUS_OP_SEND : VIP_STATUS_OP_RECEIVE);
}

#define DEFAULT_SLOT(slot, bit) .slot = slot##_default,

VIPL_EXPORT struct vipl_dpdk_dp_shared vipl_dpdk_dp = {
	.ops = { VIPL_DPDK_DP_OPS_SLOTS(DEFAULT_SLOT) },
	.defaults = { VIPL_DPDK_DP_OPS_SLOTS(DEFAULT_SLOT) },
	.overrun = post_overrun,
};

VIPL_EXPORT VIP_RETURN
vipl_dpdk_dp_register(uint32_t abi_version, const struct vipl_dpdk_dp_ops *ops)
{
	static pthread_mutex_t register_lock = PTHREAD_MUTEX_INITIALIZER;
	uint32_t overridden = 0;

	if (abi_version != VIPL_DPDK_DP_ABI_VERSION) {
		vipl_log("vipl_dpdk_dp_register: ops of data-path ABI %u, this library has %u",
			 abi_version, VIPL_DPDK_DP_ABI_VERSION);
		return VIP_INVALID_PARAMETER;
	}
	if (ops == NULL)
		return VIP_INVALID_PARAMETER;
#define CHECK_SLOT(slot, bit) \
	if (ops->slot == NULL) { \
		vipl_log("vipl_dpdk_dp_register: slot " #slot " is empty (every slot is required)"); \
		return VIP_INVALID_PARAMETER; \
	} \
	if (ops->slot != vipl_dpdk_dp.defaults.slot) \
		overridden |= bit;
	VIPL_DPDK_DP_OPS_SLOTS(CHECK_SLOT)
#undef CHECK_SLOT
	/* the slots first, then the bits that send calls to them (release):
	 * every slot holds a function at every instant, so a call that read
	 * the bits before this still calls a function of some table */
	pthread_mutex_lock(&register_lock);
#define STORE_SLOT(slot, bit) __atomic_store_n(&vipl_dpdk_dp.ops.slot, ops->slot, __ATOMIC_RELAXED);
	VIPL_DPDK_DP_OPS_SLOTS(STORE_SLOT)
#undef STORE_SLOT
	__atomic_store_n(&vipl_dpdk_dp.overridden, overridden, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&register_lock);
	return VIP_SUCCESS;
}

/* ---- waiting ------------------------------------------------------------------------ */

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
 * once, so no wake-up is lost (via_abi.h, "Wake-up contract", pair 3).
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

/* ---- the regions a post may read (inline data) --------------------------- */

void
vipl_mr_cache_set(struct vipl_nic *nic, uint32_t handle, uint64_t va, uint64_t len)
{
	struct vipl_dpdk_mr *e = &nic->mrs.e[handle % VIPL_DPDK_MR_CACHE];

	/* a deregistered region clears only its own entry */
	if (len == 0 && e->handle != handle)
		return;
	/* a seqlock's writer (vipl_dpdk_mr_readable): odd, the fields, even;
	 * each field a release, so that a reader who sees it sees the odd
	 * seq before it (no fence: TSan has none; plain stores on x86) */
	__atomic_store_n(&e->seq, e->seq + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&e->handle, len == 0 ? 0 : handle, __ATOMIC_RELEASE);
	__atomic_store_n(&e->va, va, __ATOMIC_RELEASE);
	__atomic_store_n(&e->len, len, __ATOMIC_RELEASE);
	__atomic_store_n(&e->seq, e->seq + 1, __ATOMIC_RELEASE);
}

/* ---- work queues --------------------------------------------------------- */

int
vipl_wq_init(struct vipl_dpdk_wq *q, struct via_shm_wq *sh, void *slots, uint32_t ring_cap,
	     uint32_t entry_size, uint32_t posted_cap, uint32_t count_every)
{
	int rc;

	/* once per object: a reuse has the same shape (posted_cap) */
	if (q->posted == NULL) {
		q->posted = calloc(posted_cap, sizeof(*q->posted));
		if (q->posted == NULL)
			return -ENOMEM;
		q->mask = posted_cap - 1;
		pthread_mutex_init(&q->lock, NULL);
	}
	if (entry_size == sizeof(struct via_wqe)) {
		rc = via_ring_attach(&q->ring, &sh->ring, slots, ring_cap, entry_size, true);
	} else {
		rc = via_ring_attach_seq(&q->ring, &sh->ring, slots, ring_cap, entry_size, true,
					 offsetof(struct via_wqe_line, seq));
		/* post i is in slot i & mask (vipl_dpdk_dp_line): viad zeroed
		 * the new VI's rings, but the count is ours, not the segment's */
		q->ring.local = 0;
	}
	if (rc != 0)
		return rc;
	/* a poll racing the destroy of the last life may read these: atomic
	 * stores, ordered before the new handle by its release */
	__atomic_store_n(&q->head, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&q->tail, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&q->reaped, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&q->empty_polls, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&q->count_mask, count_every - 1, __ATOMIC_RELAXED);
	__atomic_store_n(&q->done, &sh->done, __ATOMIC_RELAXED);
	return 0;
}

bool
vipl_wq_empty(struct vipl_dpdk_wq *q)
{
	bool empty;

	pthread_mutex_lock(&q->lock);
	empty = q->head == q->tail;
	pthread_mutex_unlock(&q->lock);
	return empty;
}

/* what a wait on a work queue tries */
struct wq_try {
	struct vipl_vi *vi;
	VIP_VI_HANDLE handle;
	enum via_wq_kind kind;
};

/* woken by the count: the dequeue reads it */
static VIP_RETURN
wq_try(void *arg, void *out)
{
	struct wq_try *t = arg;

	return vipl_dpdk_dp_wq_take(&t->vi->dp, t->handle, t->kind, out);
}

/* The body of VipSendWait and VipRecvWait: their VIP_RETURN. */
static VIP_RETURN
queue_wait(VIP_VI_HANDLE h, enum via_wq_kind kind, VIP_ULONG timeout, VIP_DESCRIPTOR **out)
{
	struct wq_try t = { vipl_dpdk_dp_get(h, VIPL_DPDK_OBJ_VI), h, kind };

	if (t.vi == NULL || out == NULL)
		return VIP_INVALID_PARAMETER;
	/* VIA §9.3.1, §9.6.3: a queue tied to a CQ is waited on through it */
	if (t.vi->cq[kind] != NULL)
		return VIP_ERROR_RESOURCE;
	return wait_for(t.vi->nic, __atomic_load_n(&t.vi->dp.wq[kind].done, __ATOMIC_RELAXED),
			timeout, wq_try, &t, out);
}

VIPL_EXPORT VIP_RETURN
VipPostSend(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr, VIP_MEM_HANDLE MemoryHandle)
{
	return vipl_dpdk_inline_post_send(ViHandle, DescriptorPtr, MemoryHandle);
}

VIPL_EXPORT VIP_RETURN
VipPostRecv(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr, VIP_MEM_HANDLE MemoryHandle)
{
	return vipl_dpdk_inline_post_recv(ViHandle, DescriptorPtr, MemoryHandle);
}

VIPL_EXPORT VIP_RETURN
VipSendDone(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR **DescriptorPtr)
{
	return vipl_dpdk_inline_send_done(ViHandle, DescriptorPtr);
}

VIPL_EXPORT VIP_RETURN
VipRecvDone(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR **DescriptorPtr)
{
	return vipl_dpdk_inline_recv_done(ViHandle, DescriptorPtr);
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

/* what a wait on a CQ tries */
struct cq_try {
	struct vipl_cq *cq;
	VIP_CQ_HANDLE handle;
	VIP_VI_HANDLE *vi;
	VIP_BOOLEAN *recv;
};

static VIP_RETURN
cq_try(void *arg, void *out)
{
	struct cq_try *t = arg;

	(void)out;
	return vipl_dpdk_dp_cq_take(&t->cq->dp, t->handle, t->vi, t->recv);
}

VIPL_EXPORT VIP_RETURN
VipCQDone(VIP_CQ_HANDLE CQHandle, VIP_VI_HANDLE *ViHandle, VIP_BOOLEAN *RecvQueue)
{
	return vipl_dpdk_inline_cq_done(CQHandle, ViHandle, RecvQueue);
}

VIPL_EXPORT VIP_RETURN
VipCQWait(VIP_CQ_HANDLE CQHandle, VIP_ULONG Timeout, VIP_VI_HANDLE *ViHandle,
	  VIP_BOOLEAN *RecvQueue)
{
	struct cq_try t = { vipl_cq_get(CQHandle), CQHandle, ViHandle, RecvQueue };

	if (t.cq == NULL || ViHandle == NULL || RecvQueue == NULL)
		return VIP_INVALID_PARAMETER;
	return wait_for(t.cq->nic, &t.cq->sh->wait, Timeout, cq_try, &t, NULL);
}
