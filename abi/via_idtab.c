/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>

#include "via_idtab.h"

static uint32_t
bits_for(uint32_t n)
{
	uint32_t b = 1;

	while ((1ull << b) <= n)
		b++;
	return b;
}

int
via_idtab_init(struct via_idtab *t, uint32_t capacity)
{
	uint32_t nchunks;

	if (capacity == 0 || capacity > VIA_IDTAB_MAX)
		return -EINVAL;
	nchunks = (capacity + VIA_IDTAB_CHUNK - 1) / VIA_IDTAB_CHUNK;
	t->chunks = calloc(nchunks, sizeof(*t->chunks));
	if (t->chunks == NULL)
		return -ENOMEM;
	t->capacity = capacity;
	/* index + 1 must fit: an id is never 0, even in generation 0 */
	t->idx_bits = bits_for(capacity);
	t->nb_live = 0;
	t->nb_slots = 0;
	t->free_head = 0;
	return 0;
}

void
via_idtab_fini(struct via_idtab *t)
{
	uint32_t i, nchunks = (t->capacity + VIA_IDTAB_CHUNK - 1) / VIA_IDTAB_CHUNK;

	if (t->chunks == NULL)
		return;
	for (i = 0; i < nchunks; i++)
		free(t->chunks[i]);
	free(t->chunks);
	t->chunks = NULL;
}

int
via_idtab_alloc(struct via_idtab *t, void *obj, uint32_t *id)
{
	struct via_idtab_slot *s;
	uint32_t idx;

	if (obj == NULL)
		return -EINVAL;
	if (t->nb_live >= t->capacity)
		return -ENOSPC;
	if (t->free_head != 0) {
		idx = t->free_head - 1;
		s = via_idtab_slot_at(t, idx);
		t->free_head = s->next_free;
	} else {
		idx = t->nb_slots;
		s = via_idtab_slot_at(t, idx);
		if (s == NULL) {
			struct via_idtab_slot *chunk = calloc(VIA_IDTAB_CHUNK, sizeof(*chunk));

			if (chunk == NULL)
				return -ENOMEM;
			/* publish the zeroed chunk before lookups can reach it */
			__atomic_store_n(&t->chunks[idx >> VIA_IDTAB_CHUNK_SHIFT], chunk,
					 __ATOMIC_RELEASE);
			s = &chunk[idx & (VIA_IDTAB_CHUNK - 1)];
		}
		s->id = idx + 1;
		/* after the slot is set up: lookups read it with acquire */
		__atomic_store_n(&t->nb_slots, t->nb_slots + 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&s->obj, obj, __ATOMIC_RELEASE);
	t->nb_live++;
	*id = s->id;
	return 0;
}

int
via_idtab_free(struct via_idtab *t, uint32_t id)
{
	struct via_idtab_slot *s = via_idtab_live_slot(t, id);
	uint32_t idx = (id & ((1u << t->idx_bits) - 1)) - 1;
	uint32_t gen;

	if (s == NULL)
		return -ENOENT;
	/* next generation; the id changes before the object goes, so a
	 * concurrent lookup of the old id fails rather than see NULL late */
	gen = ((id >> t->idx_bits) + 1) & ((1u << (VIA_IDTAB_ID_BITS - t->idx_bits)) - 1);
	__atomic_store_n(&s->id, (gen << t->idx_bits) | (idx + 1), __ATOMIC_RELEASE);
	__atomic_store_n(&s->obj, NULL, __ATOMIC_RELEASE);
	s->next_free = t->free_head;
	t->free_head = idx + 1;
	t->nb_live--;
	return 0;
}

void *
via_idtab_next(const struct via_idtab *t, uint32_t *cursor, uint32_t *id_out)
{
	while (*cursor < t->nb_slots) {
		struct via_idtab_slot *s = via_idtab_slot_at(t, (*cursor)++);

		if (s != NULL && s->obj != NULL) {
			if (id_out != NULL)
				*id_out = s->id;
			return s->obj;
		}
	}
	return NULL;
}

void
via_idtab_ids(const struct via_idtab *t, uint32_t *ids)
{
	uint32_t i;

	for (i = 0; i < t->nb_slots; i++)
		ids[i] = via_idtab_slot_at(t, i)->id;
}

int
via_idtab_restore(struct via_idtab *t, uint32_t nb_slots, const uint32_t *ids, void *const *objs)
{
	uint32_t mask = (UINT32_C(1) << t->idx_bits) - 1, i;

	if (t->nb_slots != 0 || nb_slots > t->capacity)
		return -EINVAL;
	for (i = 0; i < nb_slots; i++) {
		if ((ids[i] & mask) != i + 1)
			return -EINVAL;
	}
	for (i = 0; i < nb_slots; i += VIA_IDTAB_CHUNK) {
		struct via_idtab_slot *chunk = calloc(VIA_IDTAB_CHUNK, sizeof(*chunk));

		if (chunk == NULL)
			return -ENOMEM;
		t->chunks[i >> VIA_IDTAB_CHUNK_SHIFT] = chunk;
	}
	/* free slots go on the free list lowest index first */
	for (i = nb_slots; i-- > 0;) {
		struct via_idtab_slot *s = via_idtab_slot_at(t, i);

		s->id = ids[i];
		s->obj = objs[i];
		if (s->obj != NULL) {
			t->nb_live++;
		} else {
			s->next_free = t->free_head;
			t->free_head = i + 1;
		}
	}
	t->nb_slots = nb_slots;
	return 0;
}
