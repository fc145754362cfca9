/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The ABI between viad and libvipl-dpdk: the layout of a session's shared
 * memory segment. Both sides are built from this tree and check
 * VIA_ABI_VERSION at session open. Installed with the library only for the
 * data path it inlines into programs (vipl_dpdk_dp.h, INCLUDEDIR/vipl-dpdk),
 * which reads the work queues, CQs and doorbells: a change of those also
 * bumps VIPL_DPDK_DP_ABI_VERSION (the library's build reminds whoever bumps
 * VIA_ABI_VERSION).
 *
 * Trust: the segment is writable by the client, so viad never trusts a byte
 * of it. viad keeps its own copy of every offset, capacity and index it needs
 * (see via_ring.h), copies entries out before validating them, and bounds
 * every loop by its own numbers. Nothing of another client is ever mapped
 * into a client's segment.
 *
 * Every struct here crosses the process boundary and has its size asserted.
 * A change of layout bumps VIA_ABI_VERSION.
 */
#ifndef VIA_ABI_H
#define VIA_ABI_H

#include <stdint.h>

#include "via_ring.h"

/** Bumped on any change of this file or of via_ctl.h. */
#define VIA_ABI_VERSION 8u

/** "VIADSHM1": first 8 bytes of every session segment. */
#define VIA_SHM_COOKIE 0x314d485344414956ull

/** Segments, arena objects and rings are aligned to this. */
#define VIA_SHM_ALIGN 64u

/** Values of via_shm_header::daemon_state (a futex word). */
enum via_daemon_state {
	VIA_DAEMON_RUNNING = 1,
	/** viad is exiting: every wait returns, every call fails. */
	VIA_DAEMON_STOPPING = 2,
};

/**
 * Wake-up word of a queue a client may block on. viad bumps @c seq (seq_cst
 * add) after producing completions, then loads @c sleepers (seq_cst) and
 * calls FUTEX_WAKE only if it is non-zero; a waiter increments @c sleepers
 * (seq_cst), re-checks its queue, then FUTEX_WAITs on the @c seq it read
 * before the re-check. All four accesses being seq_cst, either viad sees the
 * sleeper or the sleeper sees the new completion (Dekker): no lost wake-up,
 * and no syscall on viad's side unless somebody sleeps (NEED_WAKEUP).
 */
struct via_shm_wait {
	uint32_t seq;
	uint32_t sleepers;
};
_Static_assert(sizeof(struct via_shm_wait) == 8, "via_shm_wait is ABI");

/**
 * Offset 0 of a session segment. Written by viad before the segment's fd is
 * passed to the client, then only daemon_state changes (store-release by
 * viad followed by FUTEX_WAKE on it; the client loads it with acquire),
 * and the notify doorbell ticks.
 */
struct via_shm_header {
	uint64_t cookie;         /**< VIA_SHM_COOKIE */
	uint32_t abi_version;    /**< VIA_ABI_VERSION */
	uint32_t header_size;    /**< sizeof(struct via_shm_header) */
	uint64_t segment_size;   /**< bytes mapped */
	uint32_t session_id;     /**< viad's id for this client */
	uint32_t daemon_state;   /**< enum via_daemon_state; futex word */
	uint64_t errq_off;       /**< offset of the session's via_shm_errq */
	uint32_t errq_capacity;  /**< its ring slots */
	/**
	 * The notify doorbell (VipSendNotify, VipRecvNotify, VipCQNotify):
	 * viad bumps it after a completion on any queue whose @c notify word
	 * is set (via_shm_wq, via_shm_cq); the library's notify thread sleeps
	 * on it. See "Notify doorbell" below.
	 */
	struct via_shm_wait notify;
	/**
	 * The doorbells of the session's VIs (VIA §11.2.1.2): bit n of the
	 * uint64_t array at @c bell_off is VI slot n (VI_CREATE's reply).
	 * After it, via_bell_summary_words(bell_words) summary words: bit w
	 * says bell word w may have bits set. After publishing a post
	 * (release store of the ring's producer index) the library rings with
	 * via_bell_ring(): the VI's bit, then the word's summary bit if the
	 * word was empty. viad takes its summary bits with an acquire
	 * fetch-and, then each of those words with an acquire exchange to 0,
	 * before it looks at those VIs' rings. A post that lands after viad's
	 * exchange of the word finds it empty and sets the summary bit again;
	 * one that lands between the two finds bits there, which viad is
	 * about to take: none is missed. A bit set without a post costs one
	 * look. viad checks every slot against its own table: a client
	 * scribbling here only makes viad look at (or miss) its own VIs.
	 */
	uint32_t bell_off;
	uint32_t bell_words;
	/**
	 * NEED_WAKEUP (adaptive poll mode): viad sets it (seq_cst) before it
	 * checks the doorbells one last time and sleeps; a client that rang a
	 * doorbell (seq_cst OR) and then reads it set writes the eventfd of
	 * WAKE_FD. Either viad sees the bell or the client sees the flag.
	 */
	uint32_t poller_asleep;
};
_Static_assert(sizeof(struct via_shm_header) == 64, "via_shm_header is ABI");

/** Summary words after @p bell_words doorbell words (via_shm_header). */
static inline uint32_t
via_bell_summary_words(uint32_t bell_words)
{
	return (bell_words + 63) / 64;
}

/**
 * Ring a doorbell: @p bit of @p word, then @p summary_bit of @p summary if
 * the word was empty (a poster that finds bits there leaves the summary to
 * whoever set them first). Both seq_cst: a NEED_WAKEUP look at
 * poller_asleep may follow.
 */
static inline void
via_bell_ring(uint64_t *word, uint64_t bit, uint64_t *summary, uint64_t summary_bit)
{
	if (__atomic_fetch_or(word, bit, __ATOMIC_SEQ_CST) == 0)
		__atomic_fetch_or(summary, summary_bit, __ATOMIC_SEQ_CST);
}

/**
 * One posted descriptor on a work queue (client produces, viad consumes).
 * viad reads the descriptor itself from registered memory (VIA §10.1): the
 * entry only says where it is, so a post is one 16-byte store plus the
 * release of the producer index (the doorbell, VIA §11.1.1).
 */
struct via_wqe {
	uint64_t desc_va;        /**< client virtual address of the VIP_DESCRIPTOR */
	uint32_t desc_handle;    /**< memory handle of the region holding it */
	uint32_t reserved;       /**< zero */
};
_Static_assert(sizeof(struct via_wqe) == 16, "via_wqe is ABI");

/**
 * One completion queue entry (viad produces, client consumes): which work
 * queue has a completed descriptor at its head (VIA §6.4.2: the CQ names the
 * queue, the descriptor itself carries the status).
 */
struct via_cqe {
	uint32_t vi_cookie;      /**< the client's cookie from VI_CREATE */
	uint32_t flags;          /**< VIA_CQE_RECV for the receive queue */
};
_Static_assert(sizeof(struct via_cqe) == 8, "via_cqe is ABI");

#define VIA_CQE_RECV 0x1u

/**
 * Notify doorbell (VIA §9.6.9-9.6.11: the hardware "enables interrupts" on
 * a queue). A work queue or CQ with a pending VipSendNotify / VipRecvNotify /
 * VipCQNotify has its @c notify word set by the library; after a completion
 * on such a queue viad rings the session's doorbell, via_shm_header::notify,
 * so the library's one notify thread per NIC sleeps on one futex word
 * whatever the number of queues it watches. A queue without a pending
 * notification costs viad one load per completion and nothing else.
 *
 * No lost wake-up (Dekker, all four accesses seq_cst):
 *
 *   library (arming a queue)              viad (complete())
 *     store(notify, 1)                       write Status (release)
 *     load(done.seq or cq wait.seq)          fetch_add(done.seq or cq wait.seq)
 *     dequeue if complete, else sleep        load(notify): if set, ring doorbell
 *
 * Either viad's load sees the flag and rings, or the library's load sees
 * the bumped count (and, since the bump is a release RMW after Status and
 * the CQ entry, the completion itself). The doorbell then works as any
 * via_shm_wait: the notify thread reads notify.seq before it scans its
 * queues and FUTEX_WAITs on that value with notify.sleepers raised.
 *
 * The word is the client's, so to viad it is only a hint: a client that
 * sets it needlessly gets useless wake-ups of its own thread, one that
 * clears it misses its own notifications.
 */
#define VIA_NOTIFY_ARMED 1u

/**
 * A completion queue in the segment; its slot array (struct via_cqe[cap])
 * follows at the next VIA_SHM_ALIGN boundary when the CQ is created. A
 * resize (VIA_CTL_CQ_RESIZE) moves only the slot array: this block, and
 * with it the ring indices, the wait word and the notify word, stays where
 * it is for the CQ's life, so a thread asleep on the wait word is never
 * left on memory that was freed.
 */
struct via_shm_cq {
	struct via_ring_shared ring;   /**< viad produces, client consumes */
	struct via_shm_wait wait;
	uint32_t notify;               /**< VIA_NOTIFY_ARMED: VipCQNotify pending */
	uint8_t reserved[VIA_SHM_ALIGN - sizeof(struct via_shm_wait) - sizeof(uint32_t)];
};
_Static_assert(sizeof(struct via_shm_cq) == 192, "via_shm_cq is ABI");

/**
 * An asynchronous error (VIA §9.9.1), viad produces, the library's provider
 * thread consumes and hands to the VipErrorCallback handler.
 */
struct via_async_error {
	uint64_t desc_va;        /**< descriptor concerned, or 0 */
	uint32_t code;           /**< VIP_ERROR_CODE */
	uint32_t resource;       /**< VIP_RESOURCE_CODE */
	uint32_t vi_cookie;      /**< VI concerned (its VI_CREATE cookie), or 0 */
	uint32_t op;             /**< VIP_STATUS_OP_* of the operation */
};
_Static_assert(sizeof(struct via_async_error) == 24, "via_async_error is ABI");

/** The session's asynchronous error queue; slots follow at VIA_SHM_ALIGN. */
struct via_shm_errq {
	struct via_ring_shared ring;   /**< viad produces, client consumes */
	struct via_shm_wait wait;
	uint8_t reserved[VIA_SHM_ALIGN - sizeof(struct via_shm_wait)];
};
_Static_assert(sizeof(struct via_shm_errq) == 192, "via_shm_errq is ABI");

/** Index of a VI's work queue in via_shm_vi::wq. */
enum via_wq_kind {
	VIA_WQ_SEND = 0,
	VIA_WQ_RECV = 1,
	VIA_WQ_COUNT = 2,
};

/** One work queue of a VI: the posting ring and its completion wait word. */
struct via_shm_wq {
	struct via_ring_shared ring;   /**< client produces via_wqe, viad consumes */
	struct via_shm_wait done;      /**< bumped when a descriptor completes */
	uint32_t notify;               /**< VIA_NOTIFY_ARMED: Send/RecvNotify pending */
	uint8_t reserved[VIA_SHM_ALIGN - sizeof(struct via_shm_wait) - sizeof(uint32_t)];
};
_Static_assert(sizeof(struct via_shm_wq) == 192, "via_shm_wq is ABI");

/**
 * A VI in the segment: its two work queues; the send ring's slots
 * (struct via_wqe[cap]) follow at the next VIA_SHM_ALIGN boundary, then the
 * receive ring's.
 */
struct via_shm_vi {
	struct via_shm_wq wq[VIA_WQ_COUNT];
};
_Static_assert(sizeof(struct via_shm_vi) == 384, "via_shm_vi is ABI");

/** Round @p x up to a multiple of @p a (a power of two). */
#define VIA_ALIGN_UP(x, a) (((x) + ((a) - 1)) & ~((__typeof__(x))(a) - 1))

/** Smallest power of two >= @p x (ring capacities); 1 for 0. */
static inline uint32_t
via_pow2_ceil(uint32_t x)
{
	uint32_t p = 1;

	while (p < x)
		p <<= 1;
	return p;
}

/** Bytes a VI takes in the segment for work queues of @p cap entries. */
static inline uint64_t
via_shm_vi_size(uint32_t cap)
{
	return sizeof(struct via_shm_vi) +
	       2 * VIA_ALIGN_UP((uint64_t)cap * sizeof(struct via_wqe), VIA_SHM_ALIGN);
}

/** Offset of work queue @p kind's slots from the start of its via_shm_vi. */
static inline uint64_t
via_shm_vi_slots_off(uint32_t cap, enum via_wq_kind kind)
{
	return sizeof(struct via_shm_vi) +
	       (uint64_t)kind * VIA_ALIGN_UP((uint64_t)cap * sizeof(struct via_wqe), VIA_SHM_ALIGN);
}

/** Bytes the error queue takes for @p cap entries. */
static inline uint64_t
via_shm_errq_size(uint32_t cap)
{
	return sizeof(struct via_shm_errq) +
	       VIA_ALIGN_UP((uint64_t)cap * sizeof(struct via_async_error), VIA_SHM_ALIGN);
}

/** Bytes of a CQ's slot array of @p cap entries (VIA_SHM_ALIGN multiple). */
static inline uint64_t
via_shm_cq_slots_size(uint32_t cap)
{
	return VIA_ALIGN_UP((uint64_t)cap * sizeof(struct via_cqe), VIA_SHM_ALIGN);
}

/** Bytes a CQ takes in the segment for @p cap entries, when created. */
static inline uint64_t
via_shm_cq_size(uint32_t cap)
{
	return sizeof(struct via_shm_cq) + via_shm_cq_slots_size(cap);
}

#endif /* VIA_ABI_H */
