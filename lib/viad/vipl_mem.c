/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Protection tags and memory registration (VIA §3.2, §9.5, §9.8.4-9.8.5),
 * and provider memory (VipDpdkAllocMem).
 *
 * viad owns the translation and protection table and validates every
 * registration it sees. The library's part is in vipl_pages.c: locking the
 * pages (VIA §9.5.3), which only the owning process can do, and sharing
 * ordinary memory with viad in place.
 *
 * The client's table (issue 29; via_abi.h, "The client's table of
 * regions"): memory in place in the process's share file can only be the
 * process's own, so its registration is an entry this library writes into
 * the table in the session segment, with no control call; viad checks the
 * entry when a descriptor or a frame names its handle. The call remains
 * for what viad must check first (provider memory, shared objects, copied
 * ranges), and for a range in a window of the share file viad has not
 * mapped for the table yet: one MEM_TABLE call maps the window (1 GiB)
 * for every later registration in it. VIPL_DPDK_REG_TABLE=0 in the
 * environment makes every registration a call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vipl_priv.h"

/* A registration of ordinary memory whose pages this library counted. */
struct vipl_region {
	uintptr_t page_base;
	size_t page_len;
};

/* The client's table of a NIC: its entries in the segment, the library's
 * own bookkeeping of them, the windows viad mapped for it. */
struct vipl_table {
	struct via_tpt_entry *entries;   /* NULL until the first MEM_TABLE reply */
	uint32_t capacity;
	uint32_t idx_bits;               /* log2(capacity) */
	uint32_t free_head;              /* index + 1 of a free entry; 0: none */
	uint32_t *next_free;             /* per entry, while free */
	uint32_t *gen;                   /* per entry: the generation of its next handle */
	uint32_t nb_windows;
	struct { uintptr_t va; size_t len; } windows[VIA_TPT_WINDOWS];
	bool off;                        /* refused by viad or the environment: calls only */
};

/* Provider memory mapped from viad. */
struct vipl_alloc {
	LIST_ENTRY(vipl_alloc) link;
	uint32_t id;
	void *va;
	size_t len;
};

static size_t
page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

uint32_t
vipl_ptag_id(VIP_PROTECTION_HANDLE ptag)
{
	uintptr_t v = (uintptr_t)ptag;

	return v > UINT32_MAX ? 0 : (uint32_t)v;
}

VIPL_EXPORT VIP_RETURN
VipCreatePtag(VIP_NIC_HANDLE NicHandle, VIP_PROTECTION_HANDLE *ProtectionTag)
{
	struct vipl_nic *nic = vipl_nic_get(NicHandle);
	struct via_ctl_id rep;
	int rc;

	if (nic == NULL || ProtectionTag == NULL)
		return VIP_INVALID_PARAMETER;
	pthread_mutex_lock(&nic->lock);
	rc = via_hmap_reserve(&nic->ptags, nic->ptags.count + 1);
	if (rc == 0)
		rc = vipl_ctl_call(nic, VIA_CTL_PTAG_CREATE, NULL, &rep, NULL);
	/* the table's registrations check their ptag here (table_register) */
	if (rc == 0)
		via_hmap_get(&nic->ptags, rep.id);
	pthread_mutex_unlock(&nic->lock);
	if (rc != 0)
		return via_vip_return(rc);
	/* a ptag handle is viad's id: it means nothing in another process */
	*ProtectionTag = (VIP_PROTECTION_HANDLE)(uintptr_t)rep.id;
	return VIP_SUCCESS;
}

VIPL_EXPORT VIP_RETURN
VipDestroyPtag(VIP_NIC_HANDLE NicHandle, VIP_PROTECTION_HANDLE ProtectionTag)
{
	struct vipl_nic *nic = vipl_nic_get(NicHandle);
	struct via_ctl_id req = { .id = vipl_ptag_id(ProtectionTag) };
	const uint64_t *users;
	int rc;

	if (nic == NULL || req.id == 0)
		return VIP_INVALID_PARAMETER;
	pthread_mutex_lock(&nic->lock);
	/* viad does not see the table's regions: in use is said here */
	users = via_hmap_find(&nic->ptags, req.id);
	rc = users != NULL && *users > 0 ? -EBUSY
					 : vipl_ctl_call(nic, VIA_CTL_PTAG_DESTROY, &req, NULL, NULL);
	if (rc == 0)
		via_hmap_del(&nic->ptags, req.id);
	pthread_mutex_unlock(&nic->lock);
	return via_vip_return(rc);
}

static bool
in_alloc(struct vipl_nic *nic, uintptr_t va, size_t len)
{
	struct vipl_alloc *a;

	LIST_FOREACH(a, &nic->allocs, link) {
		uintptr_t base = (uintptr_t)a->va;

		if (va >= base && va - base <= a->len && len <= a->len - (va - base))
			return true;
	}
	return false;
}

/* viad needs the share file before the first in-place region of a session. */
static int
give_share_file(struct vipl_nic *nic)
{
	int rc;

	if (nic->share_file_given)
		return 0;
	rc = vipl_ctl_give_fd(nic, VIA_CTL_FD_SHARE_FILE, vipl_pages_share_file());
	nic->share_file_given = rc == 0;
	return rc;
}

/* ---- the client's table (header) -------------------------------------------------- */

/* The table of @p nic, made at the first use; NULL when off or no memory. */
static struct vipl_table *
table_of(struct vipl_nic *nic)
{
	const char *env;

	if (nic->table == NULL) {
		nic->table = calloc(1, sizeof(*nic->table));
		env = secure_getenv("VIPL_DPDK_REG_TABLE");
		if (nic->table != NULL && env != NULL && strcmp(env, "0") == 0)
			nic->table->off = true;
	}
	return nic->table != NULL && !nic->table->off ? nic->table : NULL;
}

/* The entries viad placed at @p rep's offset, checked against the segment. */
static int
table_attach(struct vipl_nic *nic, struct vipl_table *t, const struct via_ctl_mem_table_rep *rep)
{
	uint64_t bytes = (uint64_t)rep->capacity * sizeof(struct via_tpt_entry);
	uint32_t i;

	if (rep->capacity == 0 || (rep->capacity & (rep->capacity - 1)) != 0 ||
	    rep->capacity > VIA_TPT_HANDLE || rep->table_off % VIA_SHM_ALIGN != 0 ||
	    rep->table_off > nic->shm_size || bytes > nic->shm_size - rep->table_off)
		return -EPROTO;
	t->next_free = calloc(rep->capacity, sizeof(*t->next_free));
	t->gen = calloc(rep->capacity, sizeof(*t->gen));
	if (t->next_free == NULL || t->gen == NULL)
		return -ENOMEM;
	for (i = 0; i < rep->capacity; i++)
		t->next_free[i] = i + 2 <= rep->capacity ? i + 2 : 0;
	t->free_head = 1;
	t->capacity = rep->capacity;
	t->idx_bits = (uint32_t)__builtin_ctz(rep->capacity);
	t->entries = (struct via_tpt_entry *)((uint8_t *)nic->shm + rep->table_off);
	return 0;
}

/* The index of the window holding [@p va, @p va + @p len), mapped by viad
 * now if none does. @return the index, -ENOENT (across windows), -errno */
static int
table_window(struct vipl_nic *nic, struct vipl_table *t, uintptr_t va, size_t len)
{
	struct via_ctl_mem_table_req req = { .addr = va };
	struct via_ctl_mem_table_rep rep;
	uint32_t i;
	int rc;

	for (i = 0; i < t->nb_windows; i++) {
		if (va >= t->windows[i].va && va - t->windows[i].va < t->windows[i].len)
			return len <= t->windows[i].len - (va - t->windows[i].va) ? (int)i : -ENOENT;
	}
	rc = vipl_ctl_call(nic, VIA_CTL_MEM_TABLE, &req, &rep, NULL);
	if (rc == 0 && t->entries == NULL)
		rc = table_attach(nic, t, &rep);
	if (rc == 0 && (rep.window != t->nb_windows || rep.window >= VIA_TPT_WINDOWS ||
			rep.capacity != t->capacity || va < rep.window_va ||
			va - rep.window_va >= rep.window_len))
		rc = -EPROTO;
	if (rc != 0) {
		/* no table, or no room for this window: calls from now on */
		t->off = true;
		return rc;
	}
	t->windows[i].va = rep.window_va;
	t->windows[i].len = rep.window_len;
	t->nb_windows++;
	return len <= rep.window_len - (va - rep.window_va) ? (int)i : -ENOENT;
}

/*
 * Register [@p va, @p va + @p len), in place, as an entry of the table.
 * @return 0 and *@p handle; -ECONNRESET (viad gone), -ESRCH (not a ptag of
 *         this NIC), -EOPNOTSUPP (RDMA Read, unsupported); -EAGAIN: not
 *         through the table (no table, no window, no free entry): the
 *         caller makes the call
 */
static int
table_register(struct vipl_nic *nic, uintptr_t va, size_t len, const VIP_MEM_ATTRIBUTES *ma,
	       VIP_MEM_HANDLE *handle)
{
	struct vipl_table *t = table_of(nic);
	uint32_t ptag = vipl_ptag_id(ma->Ptag), idx;
	uint64_t *users = via_hmap_find(&nic->ptags, ptag);
	struct via_tpt_entry *e;
	int window;

	/* viad gone: as every call answers (vipl.h) */
	if (!vipl_nic_alive(nic))
		return -ECONNRESET;
	if (users == NULL)
		return -ESRCH;
	if (ma->EnableRdmaRead && !nic->info.rdma_read_support)
		return -EOPNOTSUPP;
	if (t == NULL || give_share_file(nic) != 0)
		return -EAGAIN;
	window = table_window(nic, t, va, len);
	if (window < 0 || t->free_head == 0)
		return -EAGAIN;
	idx = t->free_head - 1;
	t->free_head = t->next_free[idx];
	e = &t->entries[idx];
	e->addr = va;
	e->len = len;
	e->ptag = ptag;
	e->window = (uint32_t)window;
	e->flags = (ma->EnableRdmaWrite ? VIA_TPT_RDMA_WRITE : 0) |
		   (ma->EnableRdmaRead ? VIA_TPT_RDMA_READ : 0);
	*handle = VIA_TPT_HANDLE | (t->gen[idx] << t->idx_bits) | idx;
	/* published last: viad matches the handle before it reads the rest */
	__atomic_store_n(&e->handle, *handle, __ATOMIC_RELEASE);
	(*users)++;
	return 0;
}

/*
 * The entry of table handle @p handle registered at @p va in *@p out.
 * viad reads the table only while it runs: once it is gone, the entries
 * answer as every call does (vipl.h). @return 0, -ECONNRESET (viad gone),
 * -ENOENT
 */
static int
table_entry(struct vipl_nic *nic, uintptr_t va, VIP_MEM_HANDLE handle, struct via_tpt_entry **out)
{
	struct vipl_table *t = nic->table;
	struct via_tpt_entry *e;

	*out = NULL;
	if (!vipl_nic_alive(nic))
		return -ECONNRESET;
	if (t == NULL || t->entries == NULL || !(handle & VIA_TPT_HANDLE))
		return -ENOENT;
	e = &t->entries[handle & (t->capacity - 1)];
	if (e->handle != handle || e->addr != va)
		return -ENOENT;
	*out = e;
	return 0;
}

/* The pages of entry @p e, as VipRegisterMem counted them. */
static void
table_release_pages(const struct via_tpt_entry *e)
{
	uintptr_t page = (uintptr_t)page_size(), lo = e->addr & ~(page - 1);

	vipl_pages_release(lo, ((e->addr + e->len + page - 1) & ~(page - 1)) - lo);
}

/* Free the entry of @p handle and count its pages down (VipDeregisterMem).
 * @return 0, -ECONNRESET (viad gone), -ENOENT */
static int
table_deregister(struct vipl_nic *nic, uintptr_t va, VIP_MEM_HANDLE handle)
{
	struct vipl_table *t = nic->table;
	uint32_t idx = handle & (t != NULL ? t->capacity - 1 : 0);
	struct via_tpt_entry *e;
	uint64_t *users;
	int rc = table_entry(nic, va, handle, &e);

	if (rc != 0)
		return rc;
	users = via_hmap_find(&nic->ptags, e->ptag);
	if (users != NULL && *users > 0)
		(*users)--;
	__atomic_store_n(&e->handle, 0, __ATOMIC_RELEASE);
	table_release_pages(e);
	t->gen[idx] = (t->gen[idx] + 1) & ((1u << (31 - t->idx_bits)) - 1);
	t->next_free[idx] = t->free_head;
	t->free_head = idx + 1;
	return 0;
}

VIPL_EXPORT VIP_RETURN
VipRegisterMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress, VIP_ULONG Length,
	       VIP_MEM_ATTRIBUTES *MemAttribs, VIP_MEM_HANDLE *MemoryHandle)
{
	struct vipl_nic *nic = vipl_nic_get(NicHandle);
	uintptr_t va = (uintptr_t)VirtualAddress;
	size_t page = page_size();
	struct via_ctl_mem_register_req req;
	struct vipl_pages_placement where;
	struct vipl_region *r = NULL;
	uintptr_t page_base = 0;
	size_t page_len = 0;
	struct via_ctl_id rep;
	bool counted = false;
	int obj_fd = -1, rc;

	if (MemoryHandle != NULL)
		*MemoryHandle = 0;     /* VIA §9.5.3: "otherwise NULL" */
	if (nic == NULL || MemAttribs == NULL || MemoryHandle == NULL || Length == 0 ||
	    va + Length < va)
		return VIP_INVALID_PARAMETER;
	memset(&req, 0, sizeof(req));
	req.addr = va;
	req.len = Length;
	req.attr.ptag = vipl_ptag_id(MemAttribs->Ptag);
	req.attr.rdma_write = MemAttribs->EnableRdmaWrite != VIP_FALSE;
	req.attr.rdma_read = MemAttribs->EnableRdmaRead != VIP_FALSE;

	pthread_mutex_lock(&nic->lock);
	if (!in_alloc(nic, va, Length)) {
		page_base = va & ~(page - 1);
		page_len = ((va + Length + page - 1) & ~(page - 1)) - page_base;
		/* locked and placed before viad looks (all or nothing, §3.2.1) */
		rc = vipl_pages_acquire(page_base, page_len, &where);
		if (rc != 0)
			goto out;
		counted = true;
		/* the process's own pages in its share file: an entry of the
		 * table if it can take it (the entry is all the library keeps),
		 * else the call */
		if (where.placement == VIA_CTL_MEM_IN_PLACE) {
			rc = table_register(nic, va, Length, MemAttribs, MemoryHandle);
			if (rc != -EAGAIN)
				goto out;
		}
		r = calloc(1, sizeof(*r));
		/* room for the handle now, so nothing fails once viad said yes */
		if (r == NULL || via_hmap_reserve(&nic->regions, nic->regions.count + 1) != 0) {
			rc = -ENOMEM;
			goto out;
		}
		r->page_base = page_base;
		r->page_len = page_len;
		req.placement = where.placement;
		req.reason = where.reason;
		req.flags = where.flags;
		req.offset = where.offset;
		req.shmid = where.shmid;
		obj_fd = where.obj_fd;
		if (where.placement == VIA_CTL_MEM_IN_PLACE) {
			rc = give_share_file(nic);
			if (rc != 0)
				goto out;
		}
	}
	/* a shared object's fd goes along: viad maps it with its access */
	rc = vipl_ctl_call_fd(nic, VIA_CTL_MEM_REGISTER, &req, obj_fd, &rep, NULL);
	if (rc != 0)
		goto out;
	if (r != NULL) {
		*via_hmap_get(&nic->regions, rep.id) = (uintptr_t)r;
		r = NULL;
	}
	vipl_mr_cache_set(nic, rep.id, va, Length);
	*MemoryHandle = rep.id;
out:
	if (rc != 0 && counted)
		vipl_pages_release(page_base, page_len);
	pthread_mutex_unlock(&nic->lock);
	if (obj_fd >= 0)
		close(obj_fd);
	free(r);
	return via_vip_return(rc);
}

VIPL_EXPORT VIP_RETURN
VipDeregisterMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress, VIP_MEM_HANDLE MemoryHandle)
{
	struct vipl_nic *nic = vipl_nic_get(NicHandle);
	struct via_ctl_mem_ref req = { .addr = (uintptr_t)VirtualAddress, .handle = MemoryHandle };
	uint64_t *slot;
	int rc;

	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	pthread_mutex_lock(&nic->lock);
	/* viad lets go first (or the table's entry goes): then the pages
	 * are the library's to count down */
	if (MemoryHandle & VIA_TPT_HANDLE) {
		rc = table_deregister(nic, req.addr, MemoryHandle);
		pthread_mutex_unlock(&nic->lock);
		return via_vip_return(rc);
	}
	rc = vipl_ctl_call(nic, VIA_CTL_MEM_DEREGISTER, &req, NULL, NULL);
	if (rc == 0)
		vipl_mr_cache_set(nic, MemoryHandle, 0, 0);
	slot = rc == 0 ? via_hmap_find(&nic->regions, MemoryHandle) : NULL;
	if (slot != NULL) {
		struct vipl_region *r = (struct vipl_region *)(uintptr_t)*slot;

		via_hmap_del(&nic->regions, MemoryHandle);
		vipl_pages_release(r->page_base, r->page_len);
		free(r);
	}
	pthread_mutex_unlock(&nic->lock);
	return via_vip_return(rc);
}

VIPL_EXPORT VIP_RETURN
VipQueryMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID Address, VIP_MEM_HANDLE MemHandle,
	    VIP_MEM_ATTRIBUTES *MemAttribs)
{
	struct vipl_nic *nic = vipl_nic_get(NicHandle);
	struct via_ctl_mem_ref req = { .addr = (uintptr_t)Address, .handle = MemHandle };
	struct via_ctl_mem_attr rep;
	int rc;

	if (nic == NULL || MemAttribs == NULL)
		return VIP_INVALID_PARAMETER;
	if (MemHandle & VIA_TPT_HANDLE) {
		struct via_tpt_entry *e;

		pthread_mutex_lock(&nic->lock);
		rc = table_entry(nic, req.addr, MemHandle, &e);
		if (rc == 0) {
			rep.ptag = e->ptag;
			rep.rdma_write = (e->flags & VIA_TPT_RDMA_WRITE) != 0;
			rep.rdma_read = (e->flags & VIA_TPT_RDMA_READ) != 0;
		}
		pthread_mutex_unlock(&nic->lock);
	} else {
		rc = vipl_ctl_call(nic, VIA_CTL_MEM_QUERY, &req, &rep, NULL);
	}
	if (rc != 0)
		return via_vip_return(rc);
	MemAttribs->Ptag = (VIP_PROTECTION_HANDLE)(uintptr_t)rep.ptag;
	MemAttribs->EnableRdmaWrite = rep.rdma_write ? VIP_TRUE : VIP_FALSE;
	MemAttribs->EnableRdmaRead = rep.rdma_read ? VIP_TRUE : VIP_FALSE;
	return VIP_SUCCESS;
}

/* VipSetMemAttributes of a table handle: checked as viad would (via_mr_set_attr). */
static int
table_set_attr(struct vipl_nic *nic, const struct via_ctl_mem_set_attr_req *q)
{
	struct via_tpt_entry *e;
	uint64_t *was, *now;
	int rc;

	pthread_mutex_lock(&nic->lock);
	rc = table_entry(nic, q->ref.addr, q->ref.handle, &e);
	now = via_hmap_find(&nic->ptags, q->attr.ptag);
	if (rc == 0 && now == NULL)
		rc = -ESRCH;
	else if (rc == 0 && q->attr.rdma_read && !nic->info.rdma_read_support)
		rc = -EOPNOTSUPP;
	if (rc == 0) {
		was = via_hmap_find(&nic->ptags, e->ptag);
		if (was != NULL && *was > 0)
			(*was)--;
		(*now)++;
		e->ptag = q->attr.ptag;
		e->flags = (q->attr.rdma_write ? VIA_TPT_RDMA_WRITE : 0) |
			   (q->attr.rdma_read ? VIA_TPT_RDMA_READ : 0);
	}
	pthread_mutex_unlock(&nic->lock);
	return rc;
}

VIPL_EXPORT VIP_RETURN
VipSetMemAttributes(VIP_NIC_HANDLE NicHandle, VIP_PVOID Address, VIP_MEM_HANDLE MemHandle,
		    VIP_MEM_ATTRIBUTES *MemAttribs)
{
	struct vipl_nic *nic = vipl_nic_get(NicHandle);
	struct via_ctl_mem_set_attr_req req;

	if (nic == NULL || MemAttribs == NULL)
		return VIP_INVALID_PARAMETER;
	memset(&req, 0, sizeof(req));
	req.ref.addr = (uintptr_t)Address;
	req.ref.handle = MemHandle;
	req.attr.ptag = vipl_ptag_id(MemAttribs->Ptag);
	req.attr.rdma_write = MemAttribs->EnableRdmaWrite != VIP_FALSE;
	req.attr.rdma_read = MemAttribs->EnableRdmaRead != VIP_FALSE;
	if (MemHandle & VIA_TPT_HANDLE)
		return via_vip_return(table_set_attr(nic, &req));
	return via_vip_return(vipl_ctl_call(nic, VIA_CTL_MEM_SET_ATTR, &req, NULL, NULL));
}

VIPL_EXPORT VIP_RETURN
VipDpdkAllocMem(VIP_NIC_HANDLE NicHandle, VIP_ULONG Length, VIP_PVOID *Address)
{
	struct vipl_nic *nic = vipl_nic_get(NicHandle);
	struct via_ctl_alloc_req req = { .len = Length };
	struct via_ctl_alloc_mapped_req mapped = { 0 };
	struct via_ctl_alloc_rep rep;
	struct vipl_alloc *a;
	int fd, rc;

	if (nic == NULL || Address == NULL || Length == 0)
		return VIP_INVALID_PARAMETER;
	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return VIP_ERROR_RESOURCE;
	pthread_mutex_lock(&nic->lock);
	rc = vipl_ctl_call(nic, VIA_CTL_ALLOC, &req, &rep, &fd);
	if (rc != 0)
		goto fail;
	a->va = mmap(NULL, rep.len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	close(fd);
	if (a->va == MAP_FAILED) {
		struct via_ctl_id undo = { .id = rep.id };

		vipl_ctl_call(nic, VIA_CTL_FREE, &undo, NULL, NULL);
		rc = -ENOMEM;
		goto fail;
	}
	a->id = rep.id;
	a->len = rep.len;
	mapped.id = rep.id;
	mapped.client_va = (uintptr_t)a->va;
	rc = vipl_ctl_call(nic, VIA_CTL_ALLOC_MAPPED, &mapped, NULL, NULL);
	if (rc != 0) {
		munmap(a->va, a->len);
		goto fail;
	}
	LIST_INSERT_HEAD(&nic->allocs, a, link);
	pthread_mutex_unlock(&nic->lock);
	*Address = a->va;
	return VIP_SUCCESS;
fail:
	pthread_mutex_unlock(&nic->lock);
	free(a);
	return via_vip_return(rc == -EINVAL ? -ENOMEM : rc);
}

VIPL_EXPORT VIP_RETURN
VipDpdkFreeMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID Address)
{
	struct vipl_nic *nic = vipl_nic_get(NicHandle);
	struct vipl_alloc *a;
	int rc = -ENOENT;

	if (nic == NULL || Address == NULL)
		return VIP_INVALID_PARAMETER;
	pthread_mutex_lock(&nic->lock);
	LIST_FOREACH(a, &nic->allocs, link) {
		if (a->va == Address)
			break;
	}
	if (a != NULL) {
		struct via_ctl_id req = { .id = a->id };

		rc = vipl_ctl_call(nic, VIA_CTL_FREE, &req, NULL, NULL);
		if (rc == 0) {
			LIST_REMOVE(a, link);
			munmap(a->va, a->len);
			free(a);
		}
	}
	pthread_mutex_unlock(&nic->lock);
	return via_vip_return(rc);
}

void
vipl_mem_close(struct vipl_nic *nic)
{
	struct vipl_alloc *a;
	uint32_t cursor = 0;
	uint64_t val;

	pthread_mutex_lock(&nic->lock);
	while (via_hmap_next(&nic->regions, &cursor, &val) != 0) {
		struct vipl_region *r = (struct vipl_region *)(uintptr_t)val;

		vipl_pages_release(r->page_base, r->page_len);
		free(r);
	}
	via_hmap_fini(&nic->regions);
	via_hmap_fini(&nic->ptags);
	if (nic->table != NULL) {
		/* the table's regions: the library's own entries */
		for (uint32_t i = 0; nic->table->entries != NULL && i < nic->table->capacity; i++) {
			if (nic->table->entries[i].handle != 0)
				table_release_pages(&nic->table->entries[i]);
		}
		free(nic->table->next_free);
		free(nic->table->gen);
		free(nic->table);
		nic->table = NULL;
	}
	while ((a = LIST_FIRST(&nic->allocs)) != NULL) {
		LIST_REMOVE(a, link);
		munmap(a->va, a->len);
		free(a);
	}
	pthread_mutex_unlock(&nic->lock);
	/* a program done with this NIC gets its idle pages back as they were */
	vipl_pages_evict_idle();
}
