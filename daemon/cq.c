/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues (VIA §6.4.2, §9.7). The ring lives in the owner's
 * segment; viad produces through its private view, so a client scribbling
 * on the shared indices can only corrupt its own completions.
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
		rc = via_idtab_alloc(&d->cqs, cq, &cq->id);
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
	via_arena_free(&s->arena, cq->shm_off, cq->shm_len);
	free(cq);
	return 0;
}
