/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The data-path contract of libvipl-dpdk: what code inlined into an
 * application (vipl_dpdk_inline.h) and a provider built on libvipl-dpdk
 * (vipl_dpdk_dp_register) may read of the library. Installed with it, and
 * versioned (docs/design.md section 15):
 *
 * - the handle table and the objects it names (their data-path part: the
 *   library's private fields follow each of these structs in memory);
 * - the data-path ops (struct vipl_dpdk_dp_ops), which a provider built on
 *   the library replaces slot by slot;
 * - through via_abi.h and via_ring.h, the layout of viad's session segment.
 *
 * All of it is reached through one exported object, vipl_dpdk_dp, whose
 * symbol name carries VIPL_DPDK_DP_ABI_VERSION (vipl_dpdk_dp_v3, ...). Any
 * change of a layout here, of the handle bits, of what the inline code does
 * with them, or of the segment structures it reads (via_shm_wq, via_wqe,
 * via_shm_cq, via_cqe, via_ring_shared, the header's doorbells and
 * poller_asleep) bumps VIPL_DPDK_DP_ABI_VERSION, renaming the symbol: an
 * application compiled against the old header then fails to start
 * ("undefined symbol: vipl_dpdk_dp_v2") instead of misreading memory.
 *
 * Objects never go away (vipl_handle.c): a destroyed VI, CQ, NIC or
 * connection request is kept, its handle retired, and reused for the next
 * object of its type and shape. So a lookup that races a destroy reads
 * memory that is still the library's, and sees the handle word change; it
 * answers VIP_INVALID_PARAMETER or what the call found before the destroy.
 * Every word a data-path call reads without a lock says its ordering.
 *
 * C only (C11 with the GNU atomic builtins, as the rest of the library).
 */
#ifndef VIPL_DPDK_DP_H
#define VIPL_DPDK_DP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <vipl.h>

#include "via_abi.h"

#ifdef __cplusplus
#error "vipl_dpdk_dp.h is C only"
#endif

/** Bumped on any change described at the top of this file. */
#define VIPL_DPDK_DP_ABI_VERSION 3

/** The session segment ABI (VIA_ABI_VERSION) this contract was last checked
 *  against: the library refuses to build when via_abi.h moves on, until
 *  somebody has looked whether the change touches what the inline code
 *  reads (bump VIPL_DPDK_DP_ABI_VERSION then) and updated this. */
#define VIPL_DPDK_DP_VIA_ABI 13u

#define VIPL_DPDK_DP_SYM__(v) vipl_dpdk_dp_v##v
#define VIPL_DPDK_DP_SYM_(v) VIPL_DPDK_DP_SYM__(v)
/** The exported contract object (struct vipl_dpdk_dp_shared), by its
 *  versioned name. */
#define vipl_dpdk_dp VIPL_DPDK_DP_SYM_(VIPL_DPDK_DP_ABI_VERSION)

/* ---- handles ------------------------------------------------------------------- */

/**
 * A handle: tag (bits 63:56, vipl_provider.h) | type (55:52) | serial
 * (51:32) | id (31:0), where the id is the object's slot in the handle
 * table (bits 21:0, never 0) and the number of times that object was
 * reused (31:22). The serial comes from a process-wide counter: a stale
 * handle fails until both the object's reuse count and the counter came
 * round to the same values.
 */
#define VIPL_DPDK_HANDLE_TYPE_SHIFT 52
#define VIPL_DPDK_HANDLE_TYPE_MASK 0xfu
#define VIPL_DPDK_HANDLE_SERIAL_SHIFT 32
#define VIPL_DPDK_HANDLE_SERIAL_MASK 0xfffffu
#define VIPL_DPDK_HANDLE_SLOT_BITS 22
#define VIPL_DPDK_HANDLE_SLOT_MASK ((1u << VIPL_DPDK_HANDLE_SLOT_BITS) - 1)
/** The table is chunks of slots, allocated as objects are. */
#define VIPL_DPDK_HANDLE_CHUNK_SHIFT 10
#define VIPL_DPDK_HANDLE_CHUNKS (1u << (VIPL_DPDK_HANDLE_SLOT_BITS - VIPL_DPDK_HANDLE_CHUNK_SHIFT))

/** What a handle names. */
enum vipl_dpdk_obj_type {
	VIPL_DPDK_OBJ_NIC = 1,
	VIPL_DPDK_OBJ_CQ,
	VIPL_DPDK_OBJ_VI,
	VIPL_DPDK_OBJ_CONN,
};

/** First member of every object a handle names. */
struct vipl_dpdk_obj {
	/**
	 * The handle of the object's present life, 0 while it has none.
	 * Store-release by the library once the object is set up, and of 0
	 * when it is destroyed (under the locks of its queues, so that a call
	 * holding one finishes first); load-acquire by every lookup, so that
	 * a lookup that finds its handle sees the object set up for it.
	 */
	uint64_t handle;
	/* the library's, under its handle lock */
	uint32_t type;               /**< enum vipl_dpdk_obj_type, for good */
	uint32_t id;                 /**< this life's id (the handle's bits 31:0) */
	uint32_t serial;             /**< this life's serial */
	uint32_t shape;              /**< what a reuse must match (a VI: its queues' capacity) */
	struct vipl_dpdk_obj *next_free;
};

/* ---- work queues, VIs, CQs ------------------------------------------------------ */

/**
 * A work queue: the descriptors posted and not yet dequeued, in order
 * (VIA §6.2: FIFO; §6.4.2: the consumer dequeues the head), and the
 * posting ring. The first words are read without the lock by a poll.
 */
struct vipl_dpdk_wq {
	/** mask + 1 entries, allocated with the object and kept for good. An
	 *  entry: store-release under the lock by a post, load-acquire. */
	VIP_DESCRIPTOR **posted;
	uint32_t mask;               /**< capacity - 1, for good */
	/** Free-running: tail - head are posted. Both are written under the
	 *  lock with store-release (tail after its entry), read with
	 *  load-acquire: a poll that sees tail past an entry sees the entry,
	 *  and the Status the post cleared before it. */
	uint32_t head;
	uint32_t tail;
	/** Completions dequeued: viad's count (done->seq) ahead of it says the
	 *  head completed although viad could not write its Status. Written
	 *  under the lock, store-release; load-acquire. */
	uint32_t reaped;
	/** Polls that found the head not done: relaxed load and store by any
	 *  poller, so racing pollers may lose counts. It only spaces out the
	 *  reads of done->seq. */
	uint32_t empty_polls;
	/** done->seq is read every (count_mask + 1)th such poll. This life's:
	 *  store-release before the handle is published, load relaxed. */
	uint32_t count_mask;
	/** viad's completion count of this queue, in the segment. This life's:
	 *  store-release before the handle is published; load-acquire. */
	struct via_shm_wait *done;
	/** Posts and dequeues of this queue; never destroyed (the object
	 *  is reused). */
	pthread_mutex_t lock;
	/** Producer view, under the lock. A ring of line entries
	 *  (struct via_wqe_line: ring.seq_off is not 0) holds the completions
	 *  too: a poll reads its slots, mask and slot size without the lock,
	 *  which this life set before the handle was published. Its post
	 *  number i is in slot i & mask: a new VI's rings start at 0. */
	struct via_ring ring;
};

/** Entries of a NIC's region cache (struct vipl_dpdk_mr_cache). */
#define VIPL_DPDK_MR_CACHE 256

/**
 * A registered region as the library knows it, for a post that reads a
 * buffer itself (inline data): a lookup by memory handle without the
 * NIC's lock. Written under the NIC's lock by VipRegisterMem (after viad
 * said yes) and VipDeregisterMem (after viad let go); read as a seqlock:
 * @c seq, the fields, @c seq again (every load but the last an acquire,
 * every store of the writer's but the first a release), the same even
 * value or the entry was being written. A region whose entry a later
 * one took (the same handle modulo the size) is not found, and its data
 * is read by viad as without the cache.
 */
struct vipl_dpdk_mr {
	uint32_t seq;                /**< odd while written */
	uint32_t handle;             /**< 0: none */
	uint64_t va;
	uint64_t len;
};

/** A NIC's regions, by memory handle modulo VIPL_DPDK_MR_CACHE. */
struct vipl_dpdk_mr_cache {
	struct vipl_dpdk_mr e[VIPL_DPDK_MR_CACHE];
};

/**
 * Whether [@p va, @p va + @p len) lies in a region of memory handle @p
 * handle that @p c knows: memory the program may read (it stays mapped
 * while registered). No lock; false also when the entry is being written.
 */
static inline bool
vipl_dpdk_mr_readable(const struct vipl_dpdk_mr_cache *c, uint32_t handle, uint64_t va,
		      uint64_t len)
{
	const struct vipl_dpdk_mr *e = &c->e[handle % VIPL_DPDK_MR_CACHE];
	/* the fields' loads are acquires, so that the second load of seq
	 * is not done before them (no fence: TSan has none) */
	uint32_t seq = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
	uint64_t base = __atomic_load_n(&e->va, __ATOMIC_ACQUIRE);
	uint64_t size = __atomic_load_n(&e->len, __ATOMIC_ACQUIRE);
	bool same = __atomic_load_n(&e->handle, __ATOMIC_ACQUIRE) == handle;

	return (seq & 1) == 0 && seq == __atomic_load_n(&e->seq, __ATOMIC_RELAXED) && same &&
	       handle != 0 && va >= base && va - base <= size && len <= size - (va - base);
}

/** A VI's data-path part. */
struct vipl_dpdk_vi {
	struct vipl_dpdk_obj obj;
	struct vipl_dpdk_wq wq[VIA_WQ_COUNT];
	/* this life's doorbell (via_abi.h), read under a queue's lock */
	uint64_t *bell_word;
	uint64_t bell_bit;
	uint64_t *bell_summary;
	uint64_t bell_summary_bit;
	const uint32_t *poller_asleep;   /**< the session header's sleeper flag of the doorbells */
	int wake_fd;                     /**< wakes viad's sleeping pollers */
	uint32_t max_posted;             /**< the NIC's MaxDescriptorsPerQueue */
	const struct vipl_dpdk_mr_cache *mrs;  /**< its NIC's regions (inline data) */
};

/** A completion queue's data-path part. */
struct vipl_dpdk_cq {
	struct vipl_dpdk_obj obj;
	/** This life's producer index in the segment (the ring's prod, which
	 *  viad store-releases after an entry). The pointer: store-release
	 *  before the handle is published, load-acquire. The index: load-acquire. */
	const uint32_t *prod;
	/** The consumer index as of the last dequeue (the ring keeps its own
	 *  under the lock): store-release under the lock, load-acquire. */
	uint32_t cons;
	/** Consumers; VipResizeCQ holds it across its control call. Never
	 *  destroyed. */
	pthread_mutex_t lock;
	struct via_ring ring;        /**< consumer view, under the lock */
};

/* ---- the ops a provider built on libvipl-dpdk may replace ------------------------ */

/**
 * The routines inside the default data path that a provider built on
 * libvipl-dpdk may replace one by one (M-VIA 2: "the ability to replace
 * ... specific functionality (e.g. ringing a doorbell) inside the default
 * implementations"). The table in force starts full with the defaults
 * (vipl_dpdk_dp.defaults); vipl_dpdk_dp_register() installs another. A
 * call runs the default inline, and makes an indirect call only for a slot
 * that is not the default.
 *
 * Every slot may run on any application thread, many at once.
 */
struct vipl_dpdk_dp_ops {
	/**
	 * Ring the doorbell of @p vi's queue @p kind: tell viad that a post
	 * was published in the queue's ring (VIA §11.2.1.2). Called by
	 * VipPostSend / VipPostRecv under the queue's lock, after the ring's
	 * producer index was published, for each post that found viad not
	 * polling that index (the ring's polled word; via_abi.h, "Wake-up
	 * contract", pair 6): a VI sending back to back rings its first post.
	 * Default: set the VI's bit in the session's doorbell words and, if
	 * the word was empty, the word's summary bit (via_bell_ring, seq_cst),
	 * then, if viad's pollers sleep (poller_asleep, seq_cst load after the
	 * ORs), write the eventfd that wakes them (via_abi.h, "Wake-up
	 * contract", pair 1).
	 * An override must leave viad able to see the post: until a doorbell
	 * rings, viad does not look at a queue it does not poll. It cannot
	 * fail.
	 */
	void (*ring_doorbell)(struct vipl_dpdk_vi *vi, enum via_wq_kind kind);
	/**
	 * Whether the descriptor @p head at the head of work queue @p q may
	 * have completed: the completion poll of VipSendDone / VipRecvDone.
	 * Called without the queue's lock, for each poll of a queue with a
	 * descriptor posted; another thread may be dequeuing @p head or
	 * destroying the VI meanwhile, so it only reads. True sends the
	 * caller to the dequeue, which takes the lock and decides (a wrong
	 * true costs a lock and answers VIP_NOT_DONE); false answers
	 * VIP_NOT_DONE at once.
	 * Default: Status has VIP_STATUS_DONE (load-acquire; viad writes it
	 * last, with release: the descriptor's, or on a ring of line entries
	 * the Status word of the head's entry, found by the queue's head
	 * index), or, every count_mask + 1 polls that found it
	 * not done, viad's completion count of the queue is ahead of reaped
	 * (a completion viad could not write back: the dequeue reports it;
	 * not on a ring of line entries, where viad writes every one).
	 */
	bool (*poll_completion)(struct vipl_dpdk_wq *q, const VIP_DESCRIPTOR *head);
	/**
	 * Whether completion queue @p cq may hold an entry: the poll of
	 * VipCQDone. As poll_completion: no lock, only reads, true sends the
	 * caller to the dequeue.
	 * Default: viad's producer index differs from the consumer's (both
	 * load-acquire).
	 */
	bool (*poll_cq)(struct vipl_dpdk_cq *cq);
};

/** vipl_dpdk_dp.overridden: the slots that are not the default. */
#define VIPL_DPDK_DP_OVR_RING_DOORBELL (1u << 0)
#define VIPL_DPDK_DP_OVR_POLL_COMPLETION (1u << 1)
#define VIPL_DPDK_DP_OVR_POLL_CQ (1u << 2)

/** X(slot, VIPL_DPDK_DP_OVR_ bit) for each slot of struct vipl_dpdk_dp_ops. */
#define VIPL_DPDK_DP_OPS_SLOTS(X) \
	X(ring_doorbell, VIPL_DPDK_DP_OVR_RING_DOORBELL) \
	X(poll_completion, VIPL_DPDK_DP_OVR_POLL_COMPLETION) \
	X(poll_cq, VIPL_DPDK_DP_OVR_POLL_CQ)

/** What the library shares with the data path compiled into programs. */
struct vipl_dpdk_dp_shared {
	/** VIPL_DPDK_DP_OVR_* of the slots of @c ops that are not the
	 *  default: store-release after the slots, load-acquire. */
	uint32_t overridden;
	/** The table in force, full. Slots: relaxed atomic stores and loads
	 *  (each holds a function at every instant). */
	struct vipl_dpdk_dp_ops ops;
	/** The defaults, for an override to call (constant). */
	struct vipl_dpdk_dp_ops defaults;
	/** Report a post refused for overrun (VIA §9.9.1 VI Overrun) to the
	 *  VI's error handler: a cold path, in the library. */
	void (*overrun)(struct vipl_dpdk_vi *vi, enum via_wq_kind kind, VIP_DESCRIPTOR *desc);
	/**
	 * The handle table: slot s is handles[s >> CHUNK_SHIFT][s & chunk mask].
	 * A chunk pointer and a slot are stored once, with release, under the
	 * library's handle lock, before any handle naming them exists (a slot
	 * keeps its object for good); load-acquire.
	 */
	struct vipl_dpdk_obj **handles[VIPL_DPDK_HANDLE_CHUNKS];
};

/** The one exported object of the contract (its name carries the version). */
extern struct vipl_dpdk_dp_shared vipl_dpdk_dp;

/**
 * Replace data-path routines of libvipl-dpdk, for every NIC of the process:
 * what a provider built on the library calls, typically before its first
 * VipOpenNic. Start from vipl_dpdk_dp.defaults and set the slots to
 * replace; a slot equal to its default runs the default inline again. Calls
 * in flight finish with the routine they read.
 *
 * @param abi_version VIPL_DPDK_DP_ABI_VERSION the caller was built with
 * @param ops         a full table; the library copies it
 * @retval VIP_SUCCESS           the table is in force
 * @retval VIP_INVALID_PARAMETER @p ops NULL, a slot NULL (every slot is
 *                               required), or another ABI version; logged
 */
VIP_RETURN vipl_dpdk_dp_register(uint32_t abi_version, const struct vipl_dpdk_dp_ops *ops);

/* ---- lookups ------------------------------------------------------------------------ */

/** The object in handle table slot @p slot, or NULL (load-acquire of the
 *  chunk, then of the slot). */
static inline struct vipl_dpdk_obj *
vipl_dpdk_dp_slot(uint32_t slot)
{
	struct vipl_dpdk_obj **chunk;

	slot &= VIPL_DPDK_HANDLE_SLOT_MASK;
	chunk = __atomic_load_n(&vipl_dpdk_dp.handles[slot >> VIPL_DPDK_HANDLE_CHUNK_SHIFT],
				__ATOMIC_ACQUIRE);
	if (chunk == NULL)
		return NULL;
	return __atomic_load_n(&chunk[slot & ((1u << VIPL_DPDK_HANDLE_CHUNK_SHIFT) - 1)],
			       __ATOMIC_ACQUIRE);
}

/** The type bits of handle word @p h. */
static inline uint32_t
vipl_dpdk_dp_handle_type(uint64_t h)
{
	return (uint32_t)(h >> VIPL_DPDK_HANDLE_TYPE_SHIFT) & VIPL_DPDK_HANDLE_TYPE_MASK;
}

/**
 * The object of @p handle if it is live and of @p type, else NULL. No
 * lock: three loads (the chunk, the slot, the object's handle word). A
 * handle that is not one of ours (garbage, NULL, another provider's tag)
 * finds an empty slot or a handle word that differs.
 */
static inline void *
vipl_dpdk_dp_get(const void *handle, enum vipl_dpdk_obj_type type)
{
	uint64_t h = (uintptr_t)handle;
	struct vipl_dpdk_obj *obj;

	if (vipl_dpdk_dp_handle_type(h) != (uint32_t)type)
		return NULL;
	obj = vipl_dpdk_dp_slot((uint32_t)h);
	if (obj == NULL || __atomic_load_n(&obj->handle, __ATOMIC_ACQUIRE) != h)
		return NULL;
	return obj;
}

/** Whether @p obj still has the life @p handle names (load-acquire). */
static inline bool
vipl_dpdk_dp_live(const struct vipl_dpdk_obj *obj, const void *handle)
{
	return __atomic_load_n(&obj->handle, __ATOMIC_ACQUIRE) == (uintptr_t)handle;
}

/**
 * The handle of the live object of @p type whose id is @p id (a VI's
 * cookie in a CQ entry or an error report), or NULL. No lock, as
 * vipl_dpdk_dp_get.
 */
static inline void *
vipl_dpdk_dp_handle_by_id(uint32_t id, enum vipl_dpdk_obj_type type)
{
	struct vipl_dpdk_obj *obj = vipl_dpdk_dp_slot(id);
	uint64_t h;

	if (obj == NULL)
		return NULL;
	h = __atomic_load_n(&obj->handle, __ATOMIC_ACQUIRE);
	if (h == 0 || (uint32_t)h != id || vipl_dpdk_dp_handle_type(h) != (uint32_t)type)
		return NULL;
	return (void *)(uintptr_t)h;
}

#endif /* VIPL_DPDK_DP_H */
