/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Provider memory (VipDpdkAllocMem): memfd segments mapped by both viad and
 * the client. Regions registered in them are moved by viad in place, with
 * no cross-memory copy. The client reports where it mapped each one; a lie
 * only misdirects the client's own data, since viad touches nothing but its
 * own mapping of that client's allocation.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "viad.h"

static uint64_t
session_pmem_bytes(const struct via_session *s)
{
	const struct via_pmem *p;
	uint64_t sum = 0;

	TAILQ_FOREACH(p, &s->pmems, link)
		sum += p->shm.len;
	return sum;
}

int
via_pmem_alloc(struct viad *d, struct via_session *s, uint64_t len, struct via_pmem **out)
{
	struct via_pmem *p;
	char name[48];
	int rc;

	if (len == 0)
		return -EINVAL;
	if (len > d->conf.max_alloc_bytes ||
	    session_pmem_bytes(s) + len > d->conf.max_alloc_bytes)
		return -ENOSPC;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	snprintf(name, sizeof(name), "viad-pmem-%u", s->id);
	rc = via_shm_create(&p->shm, name, len);
	if (rc != 0) {
		free(p);
		return rc == -EINVAL ? rc : -ENOMEM;
	}
	rc = via_idtab_alloc(&d->pmems, p, &p->id);
	if (rc != 0) {
		via_shm_destroy(&p->shm);
		free(p);
		return rc;
	}
	p->owner = s;
	TAILQ_INSERT_TAIL(&s->pmems, p, link);
	*out = p;
	return 0;
}

static struct via_pmem *
pmem_get(struct viad *d, struct via_session *s, uint32_t id)
{
	struct via_pmem *p = via_idtab_lookup(&d->pmems, id);

	return p != NULL && p->owner == s ? p : NULL;
}

int
via_pmem_mapped(struct viad *d, struct via_session *s, uint32_t id, uint64_t client_va)
{
	struct via_pmem *p = pmem_get(d, s, id);

	if (p == NULL)
		return -ENOENT;
	if (client_va == 0 || p->client_va != 0 || client_va + p->shm.len < client_va)
		return -EINVAL;
	p->client_va = client_va;
	return 0;
}

static void
pmem_destroy(struct via_pmem *p)
{
	via_shm_destroy(&p->shm);
	free(p);
}

void
via_pmem_pin(struct via_pmem *p)
{
	__atomic_fetch_add(&p->pins, 1, __ATOMIC_RELAXED);
}

void
via_pmem_unpin(struct via_pmem *p)
{
	/* freed is written by the control thread under every shard's lock,
	 * and an unpin runs under one of them: it cannot change meanwhile */
	if (__atomic_sub_fetch(&p->pins, 1, __ATOMIC_ACQ_REL) == 0 && p->freed)
		pmem_destroy(p);
}

int
via_pmem_free(struct viad *d, struct via_session *s, uint32_t id)
{
	struct via_pmem *p = pmem_get(d, s, id);

	if (p == NULL)
		return -ENOENT;
	if (p->refs != 0)
		return -EBUSY;
	TAILQ_REMOVE(&s->pmems, p, link);
	via_idtab_free(&d->pmems, id);
	/* frames in flight still read it (zero copy): unmapped by the last
	 * of them; the client's own mapping is its business */
	if (__atomic_load_n(&p->pins, __ATOMIC_ACQUIRE) != 0) {
		p->owner = NULL;
		p->freed = true;
		return 0;
	}
	pmem_destroy(p);
	return 0;
}

struct via_pmem *
via_pmem_find(struct via_session *s, uint64_t va, uint64_t len)
{
	struct via_pmem *p;

	TAILQ_FOREACH(p, &s->pmems, link) {
		if (p->client_va != 0 && va >= p->client_va &&
		    va - p->client_va <= p->shm.len && len <= p->shm.len - (va - p->client_va))
			return p;
	}
	return NULL;
}
