/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>

#include "via_hmap.h"

#define HMAP_MIN_SLOTS 64u
#define HMAP_MAX_KEYS  (1u << 30)

/* Fibonacci hashing: page numbers and handles are dense, so spread them. */
static inline uint32_t
slot_of(const struct via_hmap *m, uint64_t key)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & m->mask;
}

/* @p key's value, or NULL; *@p slot: where it is or would go (0 without a table) */
static uint64_t *
probe(const struct via_hmap *m, uint64_t key, uint32_t *slot)
{
	uint32_t i;

	*slot = 0;
	if (m->keys == NULL || key == 0)
		return NULL;
	for (i = slot_of(m, key); m->keys[i] != 0; i = (i + 1) & m->mask) {
		if (m->keys[i] == key) {
			*slot = i;
			return &m->vals[i];
		}
	}
	*slot = i;
	return NULL;
}

static int
rehash(struct via_hmap *m, uint32_t slots)
{
	struct via_hmap n = { .mask = slots - 1, .count = m->count };
	uint32_t i, j;

	n.keys = calloc(slots, sizeof(*n.keys));
	n.vals = malloc(slots * sizeof(*n.vals));
	if (n.keys == NULL || n.vals == NULL) {
		free(n.keys);
		free(n.vals);
		return -ENOMEM;
	}
	for (i = 0; m->keys != NULL && i <= m->mask; i++) {
		if (m->keys[i] == 0)
			continue;
		probe(&n, m->keys[i], &j);
		n.keys[j] = m->keys[i];
		n.vals[j] = m->vals[i];
	}
	via_hmap_fini(m);
	*m = n;
	return 0;
}

int
via_hmap_reserve(struct via_hmap *m, uint64_t n)
{
	uint32_t slots = m->keys == NULL ? HMAP_MIN_SLOTS : m->mask + 1;

	if (n > HMAP_MAX_KEYS)
		return -E2BIG;
	/* load factor at most 1/2 keeps linear probes short */
	while ((uint64_t)slots < 2 * n)
		slots *= 2;
	if (m->keys != NULL && slots == m->mask + 1)
		return 0;
	return rehash(m, slots);
}

uint64_t *
via_hmap_get(struct via_hmap *m, uint64_t key)
{
	uint64_t *val;
	uint32_t slot;

	if (key == 0)
		return NULL;
	val = probe(m, key, &slot);
	if (val != NULL)
		return val;
	if (via_hmap_reserve(m, (uint64_t)m->count + 1) != 0)
		return NULL;
	probe(m, key, &slot);
	m->keys[slot] = key;
	m->vals[slot] = 0;
	m->count++;
	return &m->vals[slot];
}

uint64_t *
via_hmap_find(const struct via_hmap *m, uint64_t key)
{
	uint32_t slot;

	return probe(m, key, &slot);
}

int
via_hmap_del(struct via_hmap *m, uint64_t key)
{
	uint32_t hole, i;

	if (probe(m, key, &hole) == NULL)
		return -ENOENT;
	/*
	 * Backward shift: move each later key of the probe run into the hole
	 * unless its home slot lies cyclically in (hole, i], where moving it
	 * would put it before its home.
	 */
	for (i = (hole + 1) & m->mask; m->keys[i] != 0; i = (i + 1) & m->mask) {
		uint32_t home = slot_of(m, m->keys[i]);

		if (((i - home) & m->mask) < ((i - hole) & m->mask))
			continue;
		m->keys[hole] = m->keys[i];
		m->vals[hole] = m->vals[i];
		hole = i;
	}
	m->keys[hole] = 0;
	m->count--;
	return 0;
}

uint64_t
via_hmap_next(const struct via_hmap *m, uint32_t *cursor, uint64_t *val)
{
	uint32_t i;

	for (i = *cursor; m->keys != NULL && i <= m->mask; i++) {
		if (m->keys[i] != 0) {
			*cursor = i + 1;
			*val = m->vals[i];
			return m->keys[i];
		}
	}
	*cursor = i;
	return 0;
}

void
via_hmap_fini(struct via_hmap *m)
{
	free(m->keys);
	free(m->vals);
	*m = (struct via_hmap)VIA_HMAP_INITIALIZER;
}
