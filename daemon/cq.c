/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues (VIA §6.4.2, §9.7). The ring lives in the owner's
 * segment; viad produces through its private view, so a client scribbling
 * on the shared indices can only corrupt its own completions.
 *
 * A CQ is created as one extent: its struct via_shm_cq, then the slots. A
 * resize (VIA §9.7.3) replaces only the slot array, by a separate extent;
 * the block stays, since threads of the client sleep on its wait word and
 * the notify word lives there (via_abi.h). The slot array in use is always
 * cq->ring.slots, of cq->capacity entries; cq->shm_off/shm_len is the
 * block's extent, with the slots it was created with until a resize frees
 * them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "viad.h"

int
via_cq_create(struct viad *d, struct via_session *s, uint32_t entries, struct via_cq **out)
{
	struct via_cq *cq;
	int rc;

	if (entries == 0)
		return -EINVAL;
	if (entries > d->conf.max_cq_entries)
		return -ENOSPC;
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL)
		return -ENOMEM;
	cq->capacity = via_pow2_ceil(entries);
	cq->shm_len = via_shm_cq_size(cq->capacity);
	rc = via_arena_alloc(&s->arena, cq->shm_len, &cq->shm_off);
	if (rc != 0) {
		free(cq);
		return -ENOSPC;
	}
	cq->sh = (struct via_shm_cq *)(s->seg.va + cq->shm_off);
	memset(cq->sh, 0, cq->shm_len);
	rc = via_ring_attach(&cq->ring, &cq->sh->ring, cq->sh + 1, cq->capacity,
			     sizeof(struct via_cqe), true);
	if (rc == 0)
		rc = via_user_charge(d, s, VIA_USER_CQS, 1);
	if (rc == 0 && (rc = via_idtab_alloc(&d->cqs, cq, &cq->id)) != 0)
		via_user_uncharge(d, s, VIA_USER_CQS, 1);
	if (rc != 0) {
		via_arena_free(&s->arena, cq->shm_off, cq->shm_len);
		free(cq);
		return rc;
	}
	cq->owner = s;
	TAILQ_INSERT_TAIL(&s->cqs, cq, link);
	d->counters.cqs_created++;
	*out = cq;
	return 0;
}

struct via_cq *
via_cq_get(struct viad *d, struct via_session *s, uint32_t id)
{
	struct via_cq *cq = via_idtab_lookup(&d->cqs, id);

	return cq != NULL && cq->owner == s ? cq : NULL;
}

/*
 * Whether the slots in use are an extent of their own: after a resize, the
 * block's extent is the block alone (created, it also holds >= 64 bytes of
 * slots).
 */
static bool
slots_apart(const struct via_cq *cq)
{
	return cq->shm_len == sizeof(struct via_shm_cq);
}

int
via_cq_destroy(struct viad *d, struct via_session *s, uint32_t id)
{
	struct via_cq *cq = via_cq_get(d, s, id);

	if (cq == NULL)
		return -ENOENT;
	if (cq->refs != 0)
		return -EBUSY;
	TAILQ_REMOVE(&s->cqs, cq, link);
	via_idtab_free(&d->cqs, id);
	via_user_uncharge(d, s, VIA_USER_CQS, 1);
	if (slots_apart(cq))
		via_arena_free(&s->arena, (uint64_t)(cq->ring.slots - s->seg.va),
			       via_shm_cq_slots_size(cq->capacity));
	via_arena_free(&s->arena, cq->shm_off, cq->shm_len);
	free(cq);
	return 0;
}

/*
 * VipResizeCQ (VIA §9.7.3; the steps of §11.3.14, made atomic by the
 * data-path locks instead of by the NIC): the caller (the control thread)
 * holds every shard's lock, so no completion is produced while the entries
 * move.
 *
 * The entries to keep are [cons, prod): prod is viad's own, cons the
 * client's (CQ_RESIZE request, via_ctl.h), checked against prod and the old
 * capacity; what the client consumed before is not copied. The client does
 * not consume again before it attaches to the new array at cons (it holds
 * its CQ's consumer lock across the call), so each entry is delivered
 * exactly once. The old slots are read with viad's own mask: the client may
 * have scribbled on them, which only garbles its own entries.
 */
int
via_cq_resize(struct viad *d, struct via_session *s, uint32_t id, uint32_t entries,
	      uint32_t cons, uint64_t *slots_off, uint32_t *capacity)
{
	const size_t esz = sizeof(struct via_cqe);
	struct via_cq *cq = via_cq_get(d, s, id);
	uint32_t prod, queued, cap, i;
	uint64_t off, old_off, old_len;
	uint8_t *slots;
	int rc;

	if (cq == NULL)
		return -ENOENT;
	if (entries == 0)
		return -EINVAL;
	if (entries > d->conf.max_cq_entries)
		return -ENOSPC;
	prod = cq->ring.local;
	queued = prod - cons;
	/* cons ahead of prod wraps to a huge count: both are lies */
	if (queued > cq->capacity)
		return -EINVAL;
	if (queued > entries)
		return -ENOSPC;
	cap = via_pow2_ceil(entries);
	if (via_arena_alloc(&s->arena, via_shm_cq_slots_size(cap), &off) != 0)
		return -ENOSPC;
	slots = s->seg.va + off;
	memset(slots, 0, via_shm_cq_slots_size(cap));
	for (i = 0; i < queued; i++)
		memcpy(slots + (size_t)((cons + i) & (cap - 1)) * esz,
		       cq->ring.slots + (size_t)((cons + i) & cq->ring.mask) * esz, esz);
	old_off = (uint64_t)(cq->ring.slots - s->seg.va);
	old_len = via_shm_cq_slots_size(cq->capacity);
	rc = via_ring_attach(&cq->ring, &cq->sh->ring, slots, cap, (uint32_t)esz, true);
	if (rc != 0) {
		/* not reached: the parameters are viad's own and valid; the
		 * old view was left as it was */
		via_arena_free(&s->arena, off, via_shm_cq_slots_size(cap));
		return rc;
	}
	/* our own indices, not the segment's: prod as before, cons as checked */
	cq->ring.local = prod;
	cq->ring.cached_peer = cons;
	__atomic_store_n(&cq->sh->ring.prod, prod, __ATOMIC_RELEASE);
	if (!slots_apart(cq))
		cq->shm_len = sizeof(struct via_shm_cq);   /* the block alone remains */
	via_arena_free(&s->arena, old_off, old_len);
	VLOG_DBG("session %u: CQ %u resized %u -> %u slots, %u entries moved", s->id, cq->id,
		 cq->capacity, cap, queued);
	cq->capacity = cap;
	*slots_off = off;
	*capacity = cap;
	return 0;
}
