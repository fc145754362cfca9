/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * via_ring.h - single-producer single-consumer ring in memory shared between
 * two mutually untrusted processes.
 *
 * Header-only, libc-only (no DPDK): it is included both by the daemon and by
 * client processes.
 *
 * Layout
 * ------
 * The shared control block (struct via_ring_shared, 128 bytes) holds only the
 * two free-running 32-bit indices, each on its own cache line. The slot array lives elsewhere in the shared
 * mapping; its address, the capacity and the slot size are given to
 * via_ring_attach() by each side from its OWN configuration and kept in a
 * private struct via_ring. Nothing that sizes or locates memory is ever read
 * from shared memory, so a hostile peer cannot make us index out of bounds:
 * every slot address is (index & mask) * slot_size with our own mask.
 *
 * Indices are free-running uint32_t and wrap by unsigned arithmetic; the
 * number of used slots is always prod - cons (mod 2^32), which a sane peer
 * keeps in [0, capacity]. Anything else means the peer wrote garbage: the
 * ring is marked corrupt (sticky) and every later operation fails, so the
 * caller can drop the peer.
 *
 * Each side keeps the authoritative copy of its own index privately
 * (via_ring.local) and only ever STORES it to shared memory; it never reads
 * its own index back, so a peer scribbling on it cannot change what we do.
 *
 * Memory ordering
 * ---------------
 * Producer                              Consumer
 *   write slot contents                   prod = load_acquire(&sh->prod)
 *   store_release(&sh->prod, p + n)       read (copy out) slot contents
 *                                         store_release(&sh->cons, c + n)
 *   c = load_acquire(&sh->cons)
 *   reuse slots below c + capacity
 *
 * - The producer's release store of prod pairs with the consumer's acquire
 *   load of prod: slot contents written before publishing are visible to the
 *   consumer once it sees the new prod.
 * - The consumer's release store of cons pairs with the producer's acquire
 *   load of cons: the consumer's reads of a slot complete before the producer
 *   may overwrite it.
 * - Each side caches the last peer index it read (via_ring.cached_peer) and
 *   only re-reads the peer's cache line when the cached value says the ring
 *   is full (producer) or empty (consumer), to avoid cache-line ping-pong.
 *
 * Waking
 * ------
 * The ring has no sleep handshake of its own: a consumer that sleeps is
 * woken through the segment's doorbells, sleeper flags and wait words,
 * whose orderings are stated once, in via_abi.h ("Wake-up contract").
 * What the ring has is the consumer's word @c polled, next to prod: while
 * it is set, the consumer loads prod on its own and a producer need not
 * ring a doorbell (via_ring_produce_needs_bell(), via_ring_set_polled();
 * via_abi.h, pair 6). Rings whose consumer never sets it (CQs, error
 * queues) always read "ring".
 *
 * Slots that publish themselves
 * -----------------------------
 * A ring may instead have a sequence word in each slot, at an offset both
 * sides know (via_ring_attach_seq()): the producer stores it last, as the
 * slot's index + 1 (via_ring_produce_seq()), and the consumer looks at the
 * slot of its own index and takes it when the word says that index
 * (via_ring_avail()). Readiness and contents are then one cache line, with
 * no producer index to load first; a slot of an earlier lap is one
 * capacity behind. Such a ring never reads prod (the producer still stores
 * it, for whoever displays the ring) and never turns corrupt: a producer
 * that writes garbage only makes the consumer wait. The producer bounds
 * its own posts (it reuses a slot only once the consumer is done with it,
 * as it learns by its own means: the work queues' completions).
 *
 * Neither side is thread-safe: one thread at a time per struct via_ring.
 */
#ifndef VIA_RING_H
#define VIA_RING_H

#include <errno.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/** Cache line size assumed for the shared layout (fixed: it is an ABI). */
#define VIA_CACHE_LINE 64

/** Largest capacity accepted by via_ring_attach() (slots). */
#define VIA_RING_MAX_CAPACITY (UINT32_C(1) << 24)

/**
 * Ring control block, placed in memory shared by producer and consumer.
 * Fixed layout (128 bytes, 64-byte aligned): it is part of the ABI between
 * the daemon and clients, which may be built separately.
 */
struct via_ring_shared {
	/* Producer's cache line: the producer writes prod at every publish;
	 * the consumer writes polled only when it starts or stops polling. */
	/** Free-running count of produced slots; store-release by producer. */
	alignas(VIA_CACHE_LINE) uint32_t prod;
	/** Nonzero while the consumer loads prod without being rung: stored
	 *  by the consumer, seq_cst; loaded by the producer after publishing
	 *  (via_abi.h, "Wake-up contract", pair 6). On prod's line, so that the
	 *  producer's load finds it in the line its publish just owned. */
	uint32_t polled;
	uint8_t prod_pad[VIA_CACHE_LINE - 2 * sizeof(uint32_t)];

	/* Consumer-owned cache line: only the consumer writes it. */
	/** Free-running count of consumed slots; store-release by consumer. */
	alignas(VIA_CACHE_LINE) uint32_t cons;
	/* bytes 4-7 held a consumer sleep flag that neither viad nor the
	 * library ever read or wrote: padding to both, so the layout of
	 * every used word, and VIA_ABI_VERSION, stay */
	uint8_t cons_pad[VIA_CACHE_LINE - sizeof(uint32_t)];
};

_Static_assert(sizeof(struct via_ring_shared) == 2 * VIA_CACHE_LINE,
	       "via_ring_shared is ABI: must be exactly two cache lines");
_Static_assert(alignof(struct via_ring_shared) == VIA_CACHE_LINE,
	       "via_ring_shared must be cache-line aligned");
_Static_assert(offsetof(struct via_ring_shared, prod) == 0,
	       "via_ring_shared.prod offset is ABI");
_Static_assert(offsetof(struct via_ring_shared, polled) == 4,
	       "via_ring_shared.polled offset is ABI");
_Static_assert(offsetof(struct via_ring_shared, cons) == VIA_CACHE_LINE,
	       "via_ring_shared.cons offset is ABI");

/**
 * Private view of one side of a ring. Lives in the process's own memory,
 * never in shared memory: nothing here may be influenced by the peer.
 */
struct via_ring {
	struct via_ring_shared *sh; /**< shared control block */
	uint8_t *slots;             /**< shared slot array */
	uint32_t mask;              /**< capacity - 1 (our own, not the peer's) */
	uint32_t slot_size;         /**< bytes per slot, multiple of 8 */
	/** Producer: our prod; consumer: our cons. Authoritative, never
	 *  re-read from shared memory. */
	uint32_t local;
	/** Last validated value read of the peer's index. */
	uint32_t cached_peer;
	/** Sticky: the peer published an impossible index. */
	bool corrupt;
	/** Slots publish themselves: their sequence word is at this offset
	 *  (via_ring_attach_seq()); 0: the ring's prod says how many. */
	uint32_t seq_off;
};

/**
 * Size of the slot array for a ring.
 *
 * @param capacity
 *   Number of slots: a power of two, 1 .. VIA_RING_MAX_CAPACITY.
 * @param slot_size
 *   Bytes per slot: a non-zero multiple of 8.
 * @return
 *   Bytes needed for the slot array, or 0 if the parameters are invalid
 *   (the same ones via_ring_attach() rejects with -EINVAL) or the size
 *   does not fit in size_t.
 */
static inline size_t
via_ring_mem_size(uint32_t capacity, uint32_t slot_size)
{
	if (capacity == 0 || capacity > VIA_RING_MAX_CAPACITY ||
	    (capacity & (capacity - 1)) != 0)
		return 0;
	if (slot_size == 0 || slot_size % 8 != 0)
		return 0;
	/* Only reachable where size_t is 32 bits. */
	if (slot_size > SIZE_MAX / capacity)
		return 0;
	return (size_t)capacity * slot_size;
}

/**
 * Initialise a shared control block: both indices 0.
 * Must be called by the owner of the memory before either side attaches.
 *
 * @param sh
 *   Control block, VIA_CACHE_LINE-aligned.
 * @return
 *   0 on success.
 *   -EINVAL: sh is NULL or not VIA_CACHE_LINE-aligned.
 */
static inline int
via_ring_init_shared(struct via_ring_shared *sh)
{
	if (sh == NULL || (uintptr_t)sh % VIA_CACHE_LINE != 0)
		return -EINVAL;
	/* Nobody is attached yet, so plain stores are enough; attach happens
	 * after whatever mechanism hands the memory over (fd passing). */
	memset(sh, 0, sizeof(*sh));
	return 0;
}

/**
 * Attach one side (producer or consumer) to a ring.
 *
 * Our own index is taken from shared memory so that a process can re-attach
 * to a live ring. The peer's index is NOT trusted here: cached_peer is set
 * so that the first via_ring_free_count() / via_ring_avail() re-reads and
 * validates it.
 *
 * @param r
 *   Private ring view to fill in.
 * @param sh
 *   Shared control block, VIA_CACHE_LINE-aligned, initialised by
 *   via_ring_init_shared().
 * @param slots
 *   Slot array of at least via_ring_mem_size(capacity, slot_size) bytes,
 *   8-byte aligned (so slots can hold uint64_t fields).
 * @param capacity
 *   Number of slots: a power of two, 1 .. VIA_RING_MAX_CAPACITY. Must come
 *   from our own configuration, never from the peer.
 * @param slot_size
 *   Bytes per slot: a non-zero multiple of 8.
 * @param producer
 *   true to attach as the producer, false as the consumer.
 * @return
 *   0 on success.
 *   -EINVAL: r, sh or slots NULL or misaligned, capacity zero, not a power
 *   of two or above VIA_RING_MAX_CAPACITY, slot_size zero or not a multiple
 *   of 8.
 */
static inline int
via_ring_attach(struct via_ring *r, struct via_ring_shared *sh, void *slots,
		uint32_t capacity, uint32_t slot_size, bool producer)
{
	if (r == NULL || sh == NULL || slots == NULL)
		return -EINVAL;
	if ((uintptr_t)sh % VIA_CACHE_LINE != 0 || (uintptr_t)slots % 8 != 0)
		return -EINVAL;
	if (via_ring_mem_size(capacity, slot_size) == 0)
		return -EINVAL;

	r->sh = sh;
	r->slots = slots;
	r->mask = capacity - 1;
	r->slot_size = slot_size;
	r->corrupt = false;
	r->seq_off = 0;
	if (producer) {
		/* Relaxed: it is our own previous store (or init); a value
		 * forged by the consumer is caught against cons on first use
		 * or only confuses the consumer itself. */
		r->local = __atomic_load_n(&sh->prod, __ATOMIC_RELAXED);
		/* Pretend "full" to force a validated read of cons. */
		r->cached_peer = r->local - capacity;
	} else {
		r->local = __atomic_load_n(&sh->cons, __ATOMIC_RELAXED);
		/* Pretend "empty" to force a validated read of prod. */
		r->cached_peer = r->local;
	}
	return 0;
}

/**
 * Attach one side of a ring whose slots publish themselves (top comment):
 * as via_ring_attach(), with each slot's sequence word, a uint32_t, at
 * @p seq_off bytes into it.
 *
 * @return
 *   0 on success.
 *   -EINVAL: as via_ring_attach(), or @p seq_off 0, not a multiple of 4 or
 *   past the slot.
 */
static inline int
via_ring_attach_seq(struct via_ring *r, struct via_ring_shared *sh, void *slots,
		    uint32_t capacity, uint32_t slot_size, bool producer, uint32_t seq_off)
{
	int rc;

	if (seq_off == 0 || seq_off % 4 != 0 || seq_off > slot_size - sizeof(uint32_t))
		return -EINVAL;
	rc = via_ring_attach(r, sh, slots, capacity, slot_size, producer);
	if (rc != 0)
		return rc;
	r->seq_off = seq_off;
	return 0;
}

/**
 * Producer: number of slots that may be filled now.
 *
 * Uses the cached consumer index; only when that says the ring is full does
 * it re-read cons from shared memory (load-acquire, pairing with the
 * consumer's release in via_ring_consume(), so the consumer has finished
 * reading those slots before we overwrite them). The result may therefore
 * be lower than the true free space, never higher.
 *
 * If the consumer published an impossible cons (more than capacity behind
 * us, or ahead of us), the ring is marked corrupt (r->corrupt, sticky) and
 * 0 is returned from then on: the caller must treat the peer as hostile.
 *
 * @param r
 *   Producer side of the ring.
 * @return
 *   Free slots, 0 .. capacity. 0 if full or corrupt (check r->corrupt).
 */
static inline uint32_t
via_ring_free_count(struct via_ring *r)
{
	uint32_t cap = r->mask + 1;
	uint32_t used = r->local - r->cached_peer;
	uint32_t cons;

	if (r->corrupt)
		return 0;
	if (used < cap)
		return cap - used;

	cons = __atomic_load_n(&r->sh->cons, __ATOMIC_ACQUIRE);
	used = r->local - cons;
	if (used > cap) {
		r->corrupt = true;
		return 0;
	}
	r->cached_peer = cons;
	return cap - used;
}

/**
 * Producer: address of the i-th slot after the last published one.
 *
 * @param r
 *   Producer side of the ring.
 * @param i
 *   Slot offset; the caller keeps it below via_ring_free_count(). The
 *   address is always inside the slot array whatever i is (masked).
 * @return
 *   Slot address, 8-byte aligned, slot_size bytes writable.
 */
static inline void *
via_ring_slot(struct via_ring *r, uint32_t i)
{
	/* size_t product: capacity * slot_size may exceed 32 bits. */
	return r->slots + (size_t)((r->local + i) & r->mask) * r->slot_size;
}

/**
 * Producer: publish the next n slots (filled through via_ring_slot()).
 *
 * Store-release of prod: the slot contents written before this call are
 * visible to a consumer that load-acquires the new prod.
 *
 * @param r
 *   Producer side of the ring.
 * @param n
 *   Number of slots, at most the last via_ring_free_count() result.
 */
static inline void
via_ring_produce(struct via_ring *r, uint32_t n)
{
	r->local += n;
	__atomic_store_n(&r->sh->prod, r->local, __ATOMIC_RELEASE);
}

/**
 * Producer: publish the next n slots, and say whether the consumer must be
 * rung to notice them.
 *
 * The store of prod and the load of polled are seq_cst, against the
 * consumer's seq_cst store of polled = 0 and its load of prod after it
 * (via_ring_set_polled()): either the consumer's look sees the new prod,
 * or this load sees that it stopped polling (via_abi.h, "Wake-up
 * contract", pair 6).
 *
 * @param r
 *   Producer side of the ring.
 * @param n
 *   Number of slots, at most the last via_ring_free_count() result.
 * @return
 *   true: the consumer does not poll this ring now; ring its doorbell.
 *   false: it polls prod and will find the slots by itself.
 */
static inline bool
via_ring_produce_needs_bell(struct via_ring *r, uint32_t n)
{
	r->local += n;
	__atomic_store_n(&r->sh->prod, r->local, __ATOMIC_SEQ_CST);
	return __atomic_load_n(&r->sh->polled, __ATOMIC_SEQ_CST) == 0;
}

/**
 * Producer of a ring whose slots publish themselves: publish the next slot
 * (filled through via_ring_slot(r, 0)) by storing its sequence word, and
 * say whether the consumer must be rung to notice it. The word is stored
 * seq_cst and polled loaded seq_cst, as in via_ring_produce_needs_bell(),
 * whose contract this is with the word in place of prod; prod is stored
 * too (release), for display only.
 *
 * @param r
 *   Producer side, attached with via_ring_attach_seq(). The caller keeps
 *   the slot free of anything the consumer still reads (top comment).
 * @return
 *   true: the consumer does not poll this ring now; ring its doorbell.
 */
static inline bool
via_ring_produce_seq(struct via_ring *r)
{
	uint32_t *seq = (uint32_t *)((uint8_t *)via_ring_slot(r, 0) + r->seq_off);

	r->local++;
	__atomic_store_n(seq, r->local, __ATOMIC_SEQ_CST);
	__atomic_store_n(&r->sh->prod, r->local, __ATOMIC_RELEASE);
	return __atomic_load_n(&r->sh->polled, __ATOMIC_SEQ_CST) == 0;
}

/**
 * Producer: copy one element into the ring and publish it.
 *
 * @param r
 *   Producer side of the ring.
 * @param elem
 *   slot_size bytes to copy.
 * @return
 *   0 on success.
 *   -ENOBUFS: the ring is full.
 *   -EPIPE: the consumer published an impossible index (r->corrupt).
 */
static inline int
via_ring_enqueue(struct via_ring *r, const void *elem)
{
	if (via_ring_free_count(r) == 0)
		return r->corrupt ? -EPIPE : -ENOBUFS;
	memcpy(via_ring_slot(r, 0), elem, r->slot_size);
	via_ring_produce(r, 1);
	return 0;
}

/**
 * Consumer: number of slots ready to be read.
 *
 * Uses the cached producer index; only when that says the ring is empty
 * does it re-read prod (load-acquire, pairing with the producer's release
 * in via_ring_produce(), so the slot contents are visible). The result may
 * be lower than the true count, never higher.
 *
 * If the producer published an impossible prod (behind us, or more than
 * capacity ahead), the ring is marked corrupt (r->corrupt, sticky) and 0 is
 * returned from then on.
 *
 * On a ring whose slots publish themselves it looks at the next slot's
 * sequence word instead (load-acquire, pairing with the producer's store
 * in via_ring_produce_seq()) and answers 1 or 0: a slot is taken one at a
 * time, each in its own look.
 *
 * @param r
 *   Consumer side of the ring.
 * @return
 *   Ready slots, 0 .. capacity. 0 if empty or corrupt (check r->corrupt).
 */
static inline uint32_t
via_ring_avail(struct via_ring *r)
{
	uint32_t ready = r->cached_peer - r->local;
	uint32_t prod;

	if (r->corrupt)
		return 0;
	if (ready != 0)
		return ready;
	if (r->seq_off != 0) {
		const uint32_t *seq = (const uint32_t *)(r->slots + (size_t)(r->local & r->mask) *
								  r->slot_size + r->seq_off);

		if (__atomic_load_n(seq, __ATOMIC_ACQUIRE) != r->local + 1)
			return 0;
		r->cached_peer = r->local + 1;
		return 1;
	}

	prod = __atomic_load_n(&r->sh->prod, __ATOMIC_ACQUIRE);
	ready = prod - r->local;
	if (ready > r->mask + 1) {
		r->corrupt = true;
		return 0;
	}
	r->cached_peer = prod;
	return ready;
}

/**
 * Consumer: address of the i-th ready slot.
 *
 * The slot is in memory the untrusted producer can rewrite at any time,
 * even after publishing it. Copy what you need into private memory first
 * and validate only the copy; never validate in place and then re-read.
 *
 * @param r
 *   Consumer side of the ring.
 * @param i
 *   Slot offset; the caller keeps it below via_ring_avail(). The address
 *   is always inside the slot array whatever i is (masked).
 * @return
 *   Slot address, 8-byte aligned, slot_size bytes readable.
 */
static inline const void *
via_ring_peek(struct via_ring *r, uint32_t i)
{
	return r->slots + (size_t)((r->local + i) & r->mask) * r->slot_size;
}

/**
 * Consumer: start or stop loading prod on its own (the word @c polled of
 * via_ring_shared). Starting needs no order: a producer that has not seen
 * it yet rings, which costs one needless look. Stopping is seq_cst and
 * fenced, and must be followed by a look at the ring (via_ring_avail()),
 * which then sees every publish whose producer saw the consumer still
 * polling (via_abi.h, "Wake-up contract", pair 6).
 *
 * @param r
 *   Consumer side of the ring.
 * @param on
 *   Whether the consumer polls from now on.
 */
static inline void
via_ring_set_polled(struct via_ring *r, bool on)
{
	if (on) {
		__atomic_store_n(&r->sh->polled, 1, __ATOMIC_RELAXED);
		return;
	}
	__atomic_store_n(&r->sh->polled, 0, __ATOMIC_SEQ_CST);
	/* the look that follows loads prod with acquire: the fence orders
	 * it after the store (a seq_cst load would do too) */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/**
 * Consumer: release the next n slots back to the producer.
 *
 * Store-release of cons: our reads of those slots complete before the
 * producer, which load-acquires cons, may overwrite them.
 *
 * @param r
 *   Consumer side of the ring.
 * @param n
 *   Number of slots, at most the last via_ring_avail() result.
 */
static inline void
via_ring_consume(struct via_ring *r, uint32_t n)
{
	r->local += n;
	__atomic_store_n(&r->sh->cons, r->local, __ATOMIC_RELEASE);
}

/**
 * Consumer: copy one element out of the ring and release its slot.
 *
 * The element is copied OUT before anything looks at it, because the
 * untrusted producer may rewrite the slot concurrently: the caller
 * validates its private copy, which cannot change under it.
 *
 * @param r
 *   Consumer side of the ring.
 * @param elem
 *   slot_size bytes of private memory to copy into.
 * @return
 *   0 on success.
 *   -EAGAIN: the ring is empty.
 *   -EPIPE: the producer published an impossible index (r->corrupt).
 */
static inline int
via_ring_dequeue(struct via_ring *r, void *elem)
{
	if (via_ring_avail(r) == 0)
		return r->corrupt ? -EPIPE : -EAGAIN;
	memcpy(elem, via_ring_peek(r, 0), r->slot_size);
	via_ring_consume(r, 1);
	return 0;
}

#endif /* VIA_RING_H */
