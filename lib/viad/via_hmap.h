/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Hash map from nonzero 64-bit keys to 64-bit values: open addressing with
 * linear probing and backward-shift deletion (no tombstones, so lookups stay
 * short however many deletions ran). O(1) expected for every operation.
 *
 * libvipl-dpdk finds a NIC's registrations with one (key: memory handle)
 * and counts the table's uses of its ptags with another.
 *
 * Not thread-safe: the caller serializes every call on one map.
 */
#ifndef VIA_HMAP_H
#define VIA_HMAP_H

#include <stdint.h>

struct via_hmap {
	uint64_t *keys;     /**< 0 marks a free slot */
	uint64_t *vals;
	uint32_t mask;      /**< slots - 1; slots is a power of two, or 0 */
	uint32_t count;     /**< keys present */
};

#define VIA_HMAP_INITIALIZER { NULL, NULL, 0, 0 }

/**
 * Make room for @p n keys in all, so that the next puts up to that count
 * cannot fail.
 * @return 0, -ENOMEM (map unchanged), -E2BIG (more than 2^30 keys)
 */
int via_hmap_reserve(struct via_hmap *m, uint64_t n);

/**
 * The value slot of @p key, created with value 0 if the key was absent.
 * @return the slot, or NULL if @p key is 0 or the map could not grow (unchanged)
 */
uint64_t *via_hmap_get(struct via_hmap *m, uint64_t key);

/** The value slot of @p key, or NULL if absent. */
uint64_t *via_hmap_find(const struct via_hmap *m, uint64_t key);

/**
 * Remove @p key; other keys' slots (as returned by get/find) may move.
 * @return 0, -ENOENT (absent)
 */
int via_hmap_del(struct via_hmap *m, uint64_t key);

/**
 * Iterate: the first key at or after slot *cursor (start at 0), with its
 * value in *val; advances *cursor. Returns 0 at the end. The map must not
 * change while iterating (a deletion moves keys backward, across the cursor).
 */
uint64_t via_hmap_next(const struct via_hmap *m, uint32_t *cursor, uint64_t *val);

/** Free the map's memory; it is empty and reusable afterwards. */
void via_hmap_fini(struct via_hmap *m);

#endif /* VIA_HMAP_H */
