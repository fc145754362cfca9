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
 *
 * Wake-up contract
 * ----------------
 * The one place that states how a side that has work for a sleeping peer
 * wakes it; every comment in the code that wakes or sleeps points here, and
 * docs/design.md section 5 follows it. (The rings themselves, via_ring.h,
 * only order their slots against their indices; they have no sleep flag.)
 *
 * Vocabulary:
 * - work word: a store that publishes work: a doorbell bit and its summary
 *   bit, a completion count (via_shm_wait.seq), a frame put in another
 *   shard's inbox, a released zero-copy buffer pushed on a shard's stack.
 * - sleeper flag: what a side sets before it sleeps, and clears after:
 *   poller_asleep (the count of viad's pollers asleep), via_shm_wait's
 *   sleepers (threads in FUTEX_WAIT on that word), a queue's notify word
 *   (the library's notify thread waits for it).
 * - last look: the sleeper's re-read of the work words it sleeps for, after
 *   its flag is set. A futex sleeper's last look is FUTEX_WAIT's own
 *   compare of the word with the value read before it looked at its queue.
 * - wake: the system call: a write of viad's eventfd (WAKE_FD), or
 *   FUTEX_WAKE (a shared futex: the segment is a MAP_SHARED memfd, mapped at
 *   other addresses in the two processes).
 *
 * The rule, for every pair below (Dekker's store-then-load, the NEED_WAKEUP
 * of AF_XDP and io_uring):
 *
 *   publisher                          sleeper
 *     store the work word (seq_cst)      (futex: v = load(seq), seq_cst;
 *     load the sleeper flag (seq_cst)     look at the queue: nothing)
 *     if set: wake                       set the sleeper flag (seq_cst)
 *                                        last look (seq_cst)
 *                                        if nothing: sleep, with a timeout
 *                                        clear the sleeper flag
 *
 * The work word's store, the flag's load, the flag's store and the last
 * look are seq_cst, so they lie in one total order: either the last look
 * sees the work or the publisher's load sees the flag and wakes; no wake-up
 * is lost, and the publisher makes no system call unless somebody sleeps.
 * A work word that is not a seq_cst access of our own (rte_ring's enqueue)
 * is followed by a seq_cst fence before the flag's load. The sleep cannot
 * miss a wake issued after its value was read: FUTEX_WAIT returns at once
 * if the word moved, and an eventfd keeps a write until it is read. Every
 * flag and work word here is writable by the client, so each side takes it
 * as a hint: a lying client gets useless wake-ups or misses its own, and
 * every sleep has a timeout that bounds a missed one (viad's pollers:
 * adaptive_timeout_us; a client's waits: 100 ms, its provider thread 200
 * ms).
 *
 * The pairs:
 *
 * 1. Doorbell, library -> viad's pollers (adaptive poll mode). Work word:
 *    the VI's doorbell bit, then its summary bit, with via_bell_ring()
 *    (seq_cst ORs) after the release store of the ring's producer index.
 *    Flag: the header's poller_asleep, which viad stores (seq_cst) in every
 *    session's segment; wake: the eventfd of WAKE_FD. viad's last look is
 *    at the summary bits of its shard. Taking them, viad fetch-ands the
 *    summary (acquire), then exchanges each word to 0 (acquire), then reads
 *    the rings: a post after the exchange of its word finds the word empty
 *    and sets the summary bit again, one between the two finds bits that
 *    viad is about to take; a bit without a post costs one look.
 * 2. Inside viad, another thread -> the pollers: a frame handed to a
 *    shard's inbox (rte_ring enqueue, then a seq_cst fence), a zero-copy
 *    buffer released on a shard's stack (seq_cst CAS), a new session or a
 *    frame queued by the control thread. Flag: the shard's asleep (the
 *    control thread: viad's own copy of poller_asleep); wake: the shard's
 *    own eventfd (the control thread: the shared one). The poller's last
 *    look covers its inbox, its stack, the ports' backlogs and the
 *    doorbells. The one poller that reads the shared eventfd wakes every
 *    other sleeping shard through its own.
 * 3. Completion, viad -> a client thread in a wait (VipSendWait,
 *    VipRecvWait, VipCQWait; the provider thread on the error queue). Work
 *    word: via_shm_wait.seq (seq_cst add), after the descriptor's Status
 *    (release) and the CQ or error queue entry; flag: that wait's
 *    sleepers; wake: FUTEX_WAKE on seq. The waiter reads seq, looks at its
 *    queue, may spin on seq (a spinner is not counted in sleepers), then
 *    raises sleepers and FUTEX_WAITs on the seq it read. The library
 *    bumps the notify and error wait words the same way to wake its own
 *    threads.
 * 4. Notification armed, library -> viad (VipSendNotify, VipRecvNotify,
 *    VipCQNotify, VIA §9.6.9-9.6.11). Here the library is the sleeper:
 *    flag: the queue's notify word (store VIA_NOTIFY_ARMED, seq_cst); last
 *    look: that queue's wait seq. viad, after its seq_cst add of pair 3,
 *    loads the notify word (seq_cst) and, if armed, bumps the header's
 *    notify wait word, on which the library's one notify thread per NIC
 *    waits as in pair 3.
 * 5. Shutdown, viad -> every waiter: daemon_state (store of
 *    VIA_DAEMON_STOPPING, seq_cst, then FUTEX_WAKE on it); waiters see it
 *    at their next timeout at the latest, where they also check that
 *    viad's socket is alive (a killed viad wakes nobody).
 * 6. A queue that needs no doorbell, library -> viad. viad says so in the
 *    ring's word polled (via_ring_shared): a post publishes prod (seq_cst
 *    store; on a ring of line entries, the entry's seq instead, struct
 *    via_wqe_line), loads polled (seq_cst), and rings the doorbell of pair
 *    1 only if it reads 0. A send queue is polled for a while after the VI's turn
 *    sent something: viad loads its producer index at every iteration
 *    (dp.c, "polled send queues"). A receive queue is polled while its VI
 *    is Connected: viad takes its descriptors when a message comes, and
 *    has nothing to do at a post (vi.c, via_vi_set_state()). Here viad is
 *    the sleeper and polled its flag, inverted: it stops with a seq_cst
 *    store of 0 and a fence, then its last look loads prod
 *    (via_ring_set_polled(); the next entry's seq on a ring of line
 *    entries), before a send queue goes back to doorbells,
 *    before its poller sleeps, and (a doorbell of its own, looked at in
 *    the next iteration) before a VI leaves Connected. Either that look
 *    sees the post, or the post sees 0 and rings. A client that writes
 *    polled only loses its own doorbells; viad never reads it.
 */
#ifndef VIA_ABI_H
#define VIA_ABI_H

#include <stdint.h>

#include "via_ring.h"

/** Bumped on any change of this file or of via_ctl.h. */
#define VIA_ABI_VERSION 13u

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
 * Wait word of a queue a client may block on ("Wake-up contract" above,
 * pairs 3 and 4).
 */
struct via_shm_wait {
	uint32_t seq;       /**< work word: completions produced (futex word) */
	uint32_t sleepers;  /**< sleeper flag: threads in FUTEX_WAIT on seq */
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
	 * on it ("Wake-up contract", pair 4).
	 */
	struct via_shm_wait notify;
	/**
	 * The doorbells of the session's VIs (VIA §11.2.1.2): bit n of the
	 * uint64_t array at @c bell_off is VI slot n (VI_CREATE's reply).
	 * After it, via_bell_summary_words(bell_words) summary words: bit w
	 * says bell word w may have bits set. How they are rung and taken:
	 * "Wake-up contract" above, pair 1. viad checks every slot against its
	 * own table: a client scribbling here only makes viad look at (or
	 * miss) its own VIs.
	 */
	uint32_t bell_off;
	uint32_t bell_words;
	/**
	 * Sleeper flag of the doorbells: how many of viad's pollers sleep
	 * (adaptive poll mode); "Wake-up contract" above, pair 1.
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
 * whoever set them first). Both seq_cst: they are the work word of
 * "Wake-up contract" pair 1, and the load of poller_asleep follows.
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
 * One segment of a line entry (struct via_wqe_line): a copy of a
 * descriptor's address segment (VIP_ADDRESS_SEGMENT: len is its Reserved)
 * or data segment (VIP_DATA_SEGMENT), same layout (VIA §10.3, §10.4).
 */
struct via_wqe_seg {
	uint64_t va;
	uint32_t handle;
	uint32_t len;
};
_Static_assert(sizeof(struct via_wqe_seg) == 16, "via_wqe_seg is ABI");

/** Segments a line entry carries: an RDMA descriptor's address segment and
 *  one data segment, or two data segments. */
#define VIA_WQE_LINE_SEGS 2u
/** Bytes of a line entry's first line: the descriptor, and its completion. */
#define VIA_WQE_LINE_SIZE 64u
/** Most bytes of data a line entry carries after its first line. */
#define VIA_WQE_INLINE_MAX 256u

/**
 * Bits of a line entry's @c status word while it is posted (the library's),
 * all in VIP_STATUS_RESERVED: a completion's Status never has them, and a
 * posted entry never has VIP_STATUS_DONE.
 */
#define VIA_WQE_DESC   0x01000000u  /**< control, length, immediate data and segments are the
				     *   descriptor's: viad does not read it (SegCount <= 2) */
#define VIA_WQE_INLINE 0x02000000u  /**< with DESC: the Send or RDMA Write's Length bytes
				     *   follow the first line (they are the segments' data) */
#define VIA_WQE_FLAGS  (VIA_WQE_DESC | VIA_WQE_INLINE)

/**
 * A line entry: the ring slot of a VI created with line entries
 * (VI_CREATE's entry_size 64 to 64 + VIA_WQE_INLINE_MAX, a multiple of 64;
 * VipDpdkCreateVi). The descriptor travels in the entry, so that viad reads
 * one cache line (two with inline data, side by side) where a via_wqe makes
 * it read the slot, then the descriptor, then the data, each after the
 * other; and the completion comes back in the same line, which the library
 * polls instead of the descriptor's Status. Larger descriptors (SegCount >
 * 2) are still read from registered memory (@c status without
 * VIA_WQE_DESC); their completion comes here too.
 *
 * The entry publishes itself: @c seq, stored last at the post (seq_cst, the
 * work word of "Wake-up contract" pair 6), is the post's index in the ring
 * plus one, so viad looks at the slot of its own consumer index and finds
 * the entry and its readiness in one load, with no producer index to read
 * first; an entry of an earlier lap has a seq one capacity behind. The
 * library still stores the ring's prod (release) for telemetry; viad does
 * not read it for these rings.
 *
 * Completion: viad writes @c length and @c imm (the descriptor's Length and
 * ImmediateData), then @c status (release), with VIP_STATUS_DONE, over
 * the posted values; in ring order, which is the queue's completion order.
 * The library copies the three into the descriptor when it dequeues it
 * (VipSendDone, VipRecvDone and the waits), so a program sees a
 * descriptor's Status change at the dequeue, not before. A slot is posted
 * again only once its descriptor was dequeued.
 */
struct via_wqe_line {
	uint64_t desc_va;        /**< client virtual address of the VIP_DESCRIPTOR */
	uint32_t desc_handle;    /**< memory handle of the region holding it */
	uint32_t seq;            /**< post index + 1: the entry is published */
	uint16_t control;        /**< VIP_CONTROL_SEGMENT::Control */
	uint16_t seg_count;      /**< VIP_CONTROL_SEGMENT::SegCount */
	uint32_t status;         /**< posted: VIA_WQE_* flags; completed: Status, last */
	uint32_t length;         /**< Length: the consumer's, then the completion's */
	uint32_t imm;            /**< ImmediateData: the consumer's, then the completion's */
	struct via_wqe_seg seg[VIA_WQE_LINE_SEGS];  /**< with VIA_WQE_DESC */
	/* VIA_WQE_INLINE: the data, at the next line */
};
_Static_assert(sizeof(struct via_wqe_line) == VIA_WQE_LINE_SIZE, "via_wqe_line is ABI");

/**
 * Whether @p entry_size (VI_CREATE) names line entries (struct via_wqe_line
 * and up to VIA_WQE_INLINE_MAX bytes of data after it); 0 and
 * sizeof(struct via_wqe) name the 16-byte entries.
 */
static inline int
via_wqe_line_size_ok(uint32_t entry_size)
{
	return entry_size >= VIA_WQE_LINE_SIZE && entry_size % VIA_WQE_LINE_SIZE == 0 &&
	       entry_size <= VIA_WQE_LINE_SIZE + VIA_WQE_INLINE_MAX;
}

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
 * Value of a queue's notify word (via_shm_wq, via_shm_cq) while a
 * VipSendNotify, VipRecvNotify or VipCQNotify is pending: the library sets
 * it, viad rings the header's notify doorbell after a completion on the
 * queue ("Wake-up contract", pair 4). A queue without a pending
 * notification costs viad one load per completion; the word is the
 * client's, so to viad it is only a hint.
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

/** Bytes a VI takes in the segment for work queues of @p cap entries of
 *  @p entry_size bytes (struct via_wqe, or a line entry). */
static inline uint64_t
via_shm_vi_size(uint32_t cap, uint32_t entry_size)
{
	return sizeof(struct via_shm_vi) +
	       2 * VIA_ALIGN_UP((uint64_t)cap * entry_size, VIA_SHM_ALIGN);
}

/** Offset of work queue @p kind's slots from the start of its via_shm_vi. */
static inline uint64_t
via_shm_vi_slots_off(uint32_t cap, uint32_t entry_size, enum via_wq_kind kind)
{
	return sizeof(struct via_shm_vi) +
	       (uint64_t)kind * VIA_ALIGN_UP((uint64_t)cap * entry_size, VIA_SHM_ALIGN);
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

/**
 * The client's table of regions (VIA §11's translation and protection
 * table, written by the client; issue 29, docs/design.md section 7, "The
 * client's table"). A region of memory that lies in the process's own
 * share file at offset = address (VIA_CTL_MEM_IN_PLACE) can only be the
 * process's own: the library registers it by writing an entry here,
 * without a control call, and viad checks the entry when a descriptor or
 * a frame names its handle, as a NIC checks its TPT.
 *
 * viad makes the table at the session's first MEM_TABLE call, in the
 * segment, and keeps its offset and capacity (a power of two,
 * limits.table_regions) itself. It copies an entry out before it looks at
 * it and trusts none of it: the entry's handle must be the one the
 * descriptor names, its range must lie in the window it names, and the
 * window is viad's own (a view of the share file that MEM_TABLE mapped,
 * held till the session ends); the access asked must be in its flags and
 * its ptag the VI's. An entry the client lies in, or changes under viad,
 * only directs viad into the client's own share file.
 *
 * The library publishes an entry by writing every field but @c handle,
 * then @c handle (store-release); it frees one by storing 0 in @c handle.
 * Deregistering a region that descriptors still use is the program's error
 * (VIA §9.5.4), as it is with viad's own regions.
 *
 * A handle of the table: VIA_TPT_HANDLE, the entry's index in the low
 * log2(capacity) bits, a generation the library chooses in the bits
 * between (so that a deregistered handle does not name the next region of
 * its slot). viad's own memory handles never have VIA_TPT_HANDLE set
 * (via_idtab.h).
 *
 * The table is the client's memory: viad keeps nothing of it but its place,
 * its capacity and its windows (what a restart of viad that keeps sessions
 * must carry over, with the segment).
 */
struct via_tpt_entry {
	uint64_t addr;       /**< VipRegisterMem's VirtualAddress */
	uint64_t len;        /**< its Length */
	uint32_t handle;     /**< the memory handle naming this entry; 0: free */
	uint32_t ptag;       /**< viad's ptag id (VIA_CTL_PTAG_CREATE) */
	uint32_t window;     /**< MEM_TABLE's window index holding [addr, addr + len) */
	uint32_t flags;      /**< VIA_TPT_* */
};
_Static_assert(sizeof(struct via_tpt_entry) == 32, "via_tpt_entry is ABI");

/** Memory handles with this bit name entries of the client's table. */
#define VIA_TPT_HANDLE 0x80000000u
/** Windows of the share file a session's table may name. */
#define VIA_TPT_WINDOWS 16u
/** via_tpt_entry flags: the region's VIP_MEM_ATTRIBUTES (VIA §9.5.3). */
#define VIA_TPT_RDMA_WRITE 0x1u
#define VIA_TPT_RDMA_READ  0x2u

#endif /* VIA_ABI_H */
