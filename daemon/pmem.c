/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Provider memory (VipDpdkAllocMem): memfd segments mapped by both viad and
 * the client. Regions registered in them are moved by viad in place, with
 * no cross-memory copy. The client reports where it mapped each one; a lie
 * only misdirects the client's own data, since viad touches nothing but its
 * own mapping of that client's allocation.
 *
 * Views: ordinary memory registered in place lives in the client's share
 * file at offset = address (lib/viad/vipl_pages.c); viad maps windows of that
 * file and treats each as a provider allocation of its own (direct access,
 * zero-copy transmit, pins). A client that lies about which of its pages
 * are in the file only misdirects its own data there too. A shared object
 * the client registers (a memfd it passes, a SysV segment it may use) is a
 * view of its own, one region's.
 *
 * Each mapping is charged to its user (limits.user_max_mappings: the
 * kernel's vm.max_map_count is one for all of viad), and guarded against
 * bus errors (guard.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

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

/* One more mapping of @p s's user; a charge undone with via_user_uncharge. */
static int
charge_mapping(struct viad *d, struct via_session *s)
{
	return via_user_charge(d, s, VIA_USER_MAPPINGS, 1);
}

int
via_shm_create_charged(struct viad *d, struct via_session *s, struct via_shm *m, const char *name,
		       uint64_t len, enum via_guard_kind kind)
{
	uint64_t huge_len = VIA_ALIGN_UP(len, UINT64_C(2) << 20);
	bool huge;
	int rc = charge_mapping(d, s);

	if (rc != 0)
		return rc;
	/* hugepages while its user's share of the pool lasts, normal pages
	 * after: one user cannot take the pool from the others */
	huge = via_user_charge(d, s, VIA_USER_HUGEPAGE_BYTES, huge_len) == 0;
	rc = via_shm_create(m, name, len, huge);
	if (huge && (rc != 0 || !m->hugepages))
		via_user_uncharge(d, s, VIA_USER_HUGEPAGE_BYTES, huge_len);
	if (rc == 0 && (rc = via_user_charge(d, s, VIA_USER_MEMORY_BYTES, m->len)) != 0) {
		if (m->hugepages)
			via_user_uncharge(d, s, VIA_USER_HUGEPAGE_BYTES, m->len);
		via_shm_destroy(m);
	}
	if (rc != 0) {
		via_user_uncharge(d, s, VIA_USER_MAPPINGS, 1);
		return rc;
	}
	m->guard = via_guard_add(m->va, m->len, s->id, kind);
	return 0;
}

void
via_shm_uncharge(struct viad *d, struct via_session *s, const struct via_shm *m)
{
	if (m->hugepages)
		via_user_uncharge(d, s, VIA_USER_HUGEPAGE_BYTES, m->len);
	via_user_uncharge(d, s, VIA_USER_MEMORY_BYTES, m->len);
	via_user_uncharge(d, s, VIA_USER_MAPPINGS, 1);
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
	rc = via_user_charge(d, s, VIA_USER_ALLOC_BYTES, len);
	if (rc == 0 &&
	    (rc = via_shm_create_charged(d, s, &p->shm, name, len, VIA_GUARD_ALLOC)) != 0)
		via_user_uncharge(d, s, VIA_USER_ALLOC_BYTES, len);
	if (rc != 0) {
		free(p);
		return rc == -EINVAL || rc == -ENOSPC ? rc : -ENOMEM;
	}
	/* the length asked for, as max_alloc_bytes counts it */
	p->asked = len;
	p->shmid = -1;
	rc = via_idtab_alloc(&d->pmems, p, &p->id);
	if (rc != 0) {
		via_user_uncharge(d, s, VIA_USER_ALLOC_BYTES, len);
		via_shm_uncharge(d, s, &p->shm);
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

/* Freed allocations whose last pin went (a lock-free stack): unmapped by
 * the control thread, as a poll lcore makes no munmap, close or free
 * (docs/design.md, "Memory on the poll lcores"). */
static struct via_pmem *pmem_dead;

void
via_pmem_unpin(struct via_pmem *p)
{
	struct via_pmem *head;

	/* freed is written by the control thread under every shard's lock,
	 * and an unpin runs under one of them: it cannot change meanwhile */
	if (__atomic_sub_fetch(&p->pins, 1, __ATOMIC_ACQ_REL) != 0 || !p->freed)
		return;
	head = __atomic_load_n(&pmem_dead, __ATOMIC_RELAXED);
	do
		p->dead_next = head;
	while (!__atomic_compare_exchange_n(&pmem_dead, &head, p, true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED));
}

void
via_pmem_reap(void)
{
	struct via_pmem *p = __atomic_exchange_n(&pmem_dead, NULL, __ATOMIC_ACQUIRE);

	while (p != NULL) {
		struct via_pmem *next = p->dead_next;

		pmem_destroy(p);
		p = next;
	}
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
	via_user_uncharge(d, s, VIA_USER_ALLOC_BYTES, p->asked);
	/* its user is done with it now, whoever unmaps it */
	via_shm_uncharge(d, s, &p->shm);
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

/* Windows of the share file one mapping covers: few mappings for many
 * regions, at the price of address space only (the file is sparse) */
#define VIEW_ALIGN (UINT64_C(1) << 30)

int
via_pmem_view_get(struct viad *d, struct via_session *s, uint64_t base, uint64_t len,
		  struct via_pmem **out)
{
	uint64_t lo = base & ~(VIEW_ALIGN - 1), hi = VIA_ALIGN_UP(base + len, VIEW_ALIGN);
	struct via_pmem *v;
	void *va;
	int rc;

	if (s->share_fd < 0 || len == 0 || base + len < base || base + len > VIA_SHARE_FILE_SIZE)
		return -EINVAL;
	TAILQ_FOREACH(v, &s->views, link) {
		if (!v->object_view && base >= v->client_va &&
		    base + len <= v->client_va + v->shm.len) {
			v->refs++;
			*out = v;
			return 0;
		}
	}
	if (hi > VIA_SHARE_FILE_SIZE)
		hi = VIA_SHARE_FILE_SIZE;
	rc = charge_mapping(d, s);
	if (rc != 0)
		return rc;
	v = calloc(1, sizeof(*v));
	/* the file is sealed against shrinking and is shmem, no hugetlbfs
	 * (via_fd_check_share_file): no access to it can fault; guarded anyway */
	va = v == NULL ? MAP_FAILED
		       : mmap(NULL, hi - lo, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
			      s->share_fd, (off_t)lo);
	if (va == MAP_FAILED) {
		free(v);
		via_user_uncharge(d, s, VIA_USER_MAPPINGS, 1);
		return -ENOMEM;
	}
	v->owner = s;
	v->view = true;
	v->refs = 1;
	v->shm = (struct via_shm){ .fd = -1, .va = va, .len = hi - lo };
	v->shmid = -1;
	v->shm.guard = via_guard_add(va, hi - lo, s->id, VIA_GUARD_VIEW);
	v->client_va = lo;
	TAILQ_INSERT_TAIL(&s->views, v, link);
	*out = v;
	return 0;
}

int
via_pmem_object_view(struct viad *d, struct via_session *s,
		     const struct via_ctl_mem_register_req *q, uint64_t base, uint64_t len,
		     struct via_pmem **out, bool *writable, const char **why)
{
	struct via_pmem *v;
	int rc = charge_mapping(d, s);

	if (rc != 0) {
		*why = "limits.user_max_mappings";
		return rc;
	}
	v = calloc(1, sizeof(*v));
	if (v == NULL)
		rc = -ENOMEM;
	else if (q->placement == VIA_CTL_MEM_SYSV)
		rc = via_sysv_attach(s, q->shmid, q->offset, len, &v->shm, writable, why);
	else if (s->in_fd < 0)
		rc = -EBADF;
	else
		rc = via_object_map_fd(s->in_fd, &s->in_fd_info, q->offset, len, &v->shm, writable,
				       why);
	if (rc == -EBADF)
		*why = "no fd came with the request";
	if (rc != 0) {
		free(v);
		via_user_uncharge(d, s, VIA_USER_MAPPINGS, 1);
		return rc;
	}
	v->shm.guard = via_guard_add(v->shm.va, len, s->id, VIA_GUARD_OBJECT);
	/* what an upgrade maps again (image_save.c): the memfd itself (a
	 * shmem file: its close cannot wait), or the SysV id */
	v->shmid = q->placement == VIA_CTL_MEM_SYSV ? q->shmid : -1;
	v->object_offset = q->offset;
	if (q->placement != VIA_CTL_MEM_SYSV) {
		v->shm.fd = s->in_fd;
		s->in_fd = -1;
	}
	v->owner = s;
	v->view = v->object_view = true;
	v->refs = 1;
	v->client_va = base;
	TAILQ_INSERT_TAIL(&s->views, v, link);
	*out = v;
	return 0;
}

void
via_pmem_view_put(struct viad *d, struct via_session *s, struct via_pmem *v)
{
	if (--v->refs != 0)
		return;
	TAILQ_REMOVE(&s->views, v, link);
	via_user_uncharge(d, s, VIA_USER_MAPPINGS, 1);
	/* as via_pmem_free(): frames in flight still read it */
	if (__atomic_load_n(&v->pins, __ATOMIC_ACQUIRE) != 0) {
		v->owner = NULL;
		v->freed = true;
		return;
	}
	pmem_destroy(v);
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
