/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Id table: maps 32-bit ids to objects in O(1), with a generation in the
 * high bits so a stale id (object destroyed, slot reused) never resolves.
 *
 * viad names its VIs, CQs, protection tags and memory regions with these ids
 * (a memory handle is a region id); libvipl-dpdk's handles are ids too.
 * An id never has bit 31 set (VIA_IDTAB_ID_BITS): memory handles with it
 * name entries of a client's own table of regions (via_abi.h, VIA_TPT_HANDLE).
 *
 * Concurrency: via_idtab_alloc() and via_idtab_free() must be serialized by
 * the caller; via_idtab_lookup() may run concurrently with them (slots never
 * move: the table grows by chunks that are never freed before fini).
 */
#ifndef VIA_IDTAB_H
#define VIA_IDTAB_H

#include <stdint.h>

#define VIA_IDTAB_CHUNK_SHIFT 10
#define VIA_IDTAB_CHUNK (1u << VIA_IDTAB_CHUNK_SHIFT)
#define VIA_IDTAB_MAX (1u << 22)   /**< most entries a table can hold */
#define VIA_IDTAB_ID_BITS 31       /**< bits of an id: index + 1, then the generation */

/** A slot: the lookup is inline (every frame and descriptor of the data
 *  path makes several), the rest of the table's code is in via_idtab.c. */
struct via_idtab_slot {
	void *obj;          /**< NULL when free */
	uint32_t id;        /**< current id of the slot: generation | index + 1 */
	uint32_t next_free; /**< index + 1 of the next free slot, while free */
};

struct via_idtab {
	struct via_idtab_slot **chunks;  /**< capacity / VIA_IDTAB_CHUNK pointers */
	uint32_t capacity;               /**< most live entries */
	uint32_t idx_bits;               /**< low bits of an id: slot index + 1 */
	uint32_t nb_live;
	uint32_t nb_slots;               /**< slots ever handed out (high water) */
	uint32_t free_head;              /**< index + 1 of the first free slot; 0 = none */
};

/**
 * @param capacity most live entries, 1 .. VIA_IDTAB_MAX
 * @return 0, -EINVAL (capacity out of range), -ENOMEM
 */
int via_idtab_init(struct via_idtab *t, uint32_t capacity);

/** Free the table (not the objects). */
void via_idtab_fini(struct via_idtab *t);

/**
 * Give @p obj (not NULL) an id.
 * @return 0 and *id (never 0), -ENOSPC (capacity reached), -ENOMEM, -EINVAL (obj NULL)
 */
int via_idtab_alloc(struct via_idtab *t, void *obj, uint32_t *id);

/** Slot @p idx (below t->nb_slots), or NULL if its chunk is not there yet. */
static inline struct via_idtab_slot *
via_idtab_slot_at(const struct via_idtab *t, uint32_t idx)
{
	struct via_idtab_slot *chunk =
		__atomic_load_n(&t->chunks[idx >> VIA_IDTAB_CHUNK_SHIFT], __ATOMIC_ACQUIRE);

	return chunk == NULL ? NULL : &chunk[idx & (VIA_IDTAB_CHUNK - 1)];
}

/** The slot @p id names while it is live, else NULL. */
static inline struct via_idtab_slot *
via_idtab_live_slot(const struct via_idtab *t, uint32_t id)
{
	uint32_t idx = (id & ((1u << t->idx_bits) - 1)) - 1;
	struct via_idtab_slot *s;

	if (id == 0 || idx >= __atomic_load_n(&t->nb_slots, __ATOMIC_ACQUIRE))
		return NULL;
	s = via_idtab_slot_at(t, idx);
	if (s == NULL || __atomic_load_n(&s->id, __ATOMIC_ACQUIRE) != id ||
	    __atomic_load_n(&s->obj, __ATOMIC_ACQUIRE) == NULL)
		return NULL;
	return s;
}

/** The object of @p id, or NULL if the id is 0, out of range, free or stale. */
static inline void *
via_idtab_lookup(const struct via_idtab *t, uint32_t id)
{
	struct via_idtab_slot *s = via_idtab_live_slot(t, id);

	return s != NULL ? __atomic_load_n(&s->obj, __ATOMIC_ACQUIRE) : NULL;
}

/**
 * Release @p id; later lookups of it return NULL.
 * @return 0, -ENOENT (not a live id)
 */
int via_idtab_free(struct via_idtab *t, uint32_t id);

/**
 * Iterate live entries: returns the object at the first live slot at or after
 * *cursor and advances *cursor past it (start with *cursor = 0); NULL at end.
 * @p id_out, if not NULL, receives its id.
 */
void *via_idtab_next(const struct via_idtab *t, uint32_t *cursor, uint32_t *id_out);

/**
 * The ids of the table's first t->nb_slots slots, live or free (their
 * current generation), into @p ids: what a successor needs to give the
 * same ids again and to refuse stale ones (via_idtab_restore()).
 */
void via_idtab_ids(const struct via_idtab *t, uint32_t *ids);

/**
 * Make an empty table (just initialised) what another process's was: its
 * first @p nb_slots slots have ids @p ids (via_idtab_ids()), slot i holds
 * @p objs[i] or is free (NULL). The ids are checked: each one's index bits
 * must be its slot's.
 * @return 0, -EINVAL (not empty, too many slots, an id of another slot),
 *         -ENOMEM
 */
int via_idtab_restore(struct via_idtab *t, uint32_t nb_slots, const uint32_t *ids,
		      void *const *objs);

#endif /* VIA_IDTAB_H */
