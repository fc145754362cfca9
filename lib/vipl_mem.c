/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Protection tags and memory registration (VIA §3.2, §9.5, §9.8.4-9.8.5),
 * and provider memory (VipDpdkAllocMem).
 *
 * viad owns the translation and protection table and validates every
 * registration against this process's own mappings. The library's part is
 * locking the pages (VIA §9.5.3: "registered pages are locked into physical
 * memory"), which only the owning process can do, and keeping the lock
 * while any registration still covers a page: the same range may be
 * registered several times (VIA §3.2.1) and munlock does not nest.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vipl_priv.h"

/* A registration of ordinary memory whose pages this library locked. */
struct vipl_region {
	uintptr_t page_base;
	size_t page_len;
};

/* Provider memory mapped from viad. */
struct vipl_alloc {
	LIST_ENTRY(vipl_alloc) link;
	uint32_t id;
	void *va;
	size_t len;
};

/*
 * Page locks belong to the process, not to a NIC: the same pages may be
 * registered through several NICs, so the count of registrations covering
 * each page (key: page number) is process-wide. A page is munlocked when its
 * count drops to zero. Registering or deregistering costs O(pages), as the
 * mlock/munlock it makes does, whatever the number of other registrations.
 */
static struct via_hmap page_locks = VIA_HMAP_INITIALIZER;
static pthread_mutex_t page_locks_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t
page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* mlock @p r's pages and count them. @return 0, -ENOMEM */
static int
region_lock(const struct vipl_region *r)
{
	size_t page = page_size();
	uintptr_t p;
	int rc;

	pthread_mutex_lock(&page_locks_lock);
	/* reserve first so that nothing fails after the mlock */
	rc = via_hmap_reserve(&page_locks, page_locks.count + r->page_len / page);
	if (rc == 0 && mlock((void *)r->page_base, r->page_len) != 0) {
		vipl_log("VipRegisterMem: mlock of %zu bytes failed: %s (RLIMIT_MEMLOCK?)",
			 r->page_len, strerror(errno));
		rc = -ENOMEM;
	}
	for (p = r->page_base; rc == 0 && p < r->page_base + r->page_len; p += page)
		(*via_hmap_get(&page_locks, p / page))++;
	pthread_mutex_unlock(&page_locks_lock);
	return rc == 0 ? 0 : -ENOMEM;
}

/* Uncount @p r's pages and munlock, one call per run, those now uncovered. */
static void
region_unlock(const struct vipl_region *r)
{
	size_t page = page_size();
	uintptr_t p, run = 0;

	pthread_mutex_lock(&page_locks_lock);
	for (p = r->page_base; p < r->page_base + r->page_len; p += page) {
		uint64_t *count = via_hmap_find(&page_locks, p / page);

		if (count != NULL && --*count == 0) {
			via_hmap_del(&page_locks, p / page);
			if (run == 0)
				run = p;
			continue;
		}
		if (run != 0)
			munlock((void *)run, p - run);
		run = 0;
	}
	if (run != 0)
		munlock((void *)run, p - run);
	pthread_mutex_unlock(&page_locks_lock);
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
	rc = vipl_ctl_call(nic, VIA_CTL_PTAG_CREATE, NULL, &rep, NULL);
	if (rc != 0)
		return vipl_return(rc);
	/* a ptag handle is viad's id: it means nothing in another process */
	*ProtectionTag = (VIP_PROTECTION_HANDLE)(uintptr_t)rep.id;
	return VIP_SUCCESS;
}

VIPL_EXPORT VIP_RETURN
VipDestroyPtag(VIP_NIC_HANDLE NicHandle, VIP_PROTECTION_HANDLE ProtectionTag)
{
	struct vipl_nic *nic = vipl_nic_get(NicHandle);
	struct via_ctl_id req = { .id = vipl_ptag_id(ProtectionTag) };

	if (nic == NULL || req.id == 0)
		return VIP_INVALID_PARAMETER;
	return vipl_return(vipl_ctl_call(nic, VIA_CTL_PTAG_DESTROY, &req, NULL, NULL));
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

VIPL_EXPORT VIP_RETURN
VipRegisterMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress, VIP_ULONG Length,
	       VIP_MEM_ATTRIBUTES *MemAttribs, VIP_MEM_HANDLE *MemoryHandle)
{
	struct vipl_nic *nic = vipl_nic_get(NicHandle);
	uintptr_t va = (uintptr_t)VirtualAddress;
	size_t page = page_size();
	struct via_ctl_mem_register_req req;
	struct vipl_region *r = NULL;
	struct via_ctl_mem_ref undo;
	struct via_ctl_id rep;
	uint64_t *slot;
	int rc;

	if (MemoryHandle != NULL)
		*MemoryHandle = 0;     /* VIA §9.5.3: "otherwise NULL" */
	if (nic == NULL || MemAttribs == NULL || MemoryHandle == NULL || Length == 0 ||
	    va + Length < va)
		return VIP_INVALID_PARAMETER;
	req.addr = va;
	req.len = Length;
	req.attr.ptag = vipl_ptag_id(MemAttribs->Ptag);
	req.attr.rdma_write = MemAttribs->EnableRdmaWrite != VIP_FALSE;
	req.attr.rdma_read = MemAttribs->EnableRdmaRead != VIP_FALSE;
	memset(req.attr.reserved, 0, sizeof(req.attr.reserved));

	pthread_mutex_lock(&nic->lock);
	if (!in_alloc(nic, va, Length)) {
		r = calloc(1, sizeof(*r));
		/* room for the handle now, so nothing fails once viad said yes */
		if (r == NULL || via_hmap_reserve(&nic->regions, nic->regions.count + 1) != 0) {
			rc = -ENOMEM;
			goto out;
		}
		r->page_base = va & ~(page - 1);
		r->page_len = ((va + Length + page - 1) & ~(page - 1)) - r->page_base;
	}
	rc = vipl_ctl_call(nic, VIA_CTL_MEM_REGISTER, &req, &rep, NULL);
	if (rc != 0)
		goto out;
	if (r != NULL) {
		/* viad checked the range is mapped; lock it (all or nothing, §3.2.1) */
		rc = region_lock(r);
		if (rc != 0) {
			undo = (struct via_ctl_mem_ref){ .addr = va, .handle = rep.id };
			vipl_ctl_call(nic, VIA_CTL_MEM_DEREGISTER, &undo, NULL, NULL);
			goto out;
		}
		slot = via_hmap_get(&nic->regions, rep.id);
		*slot = (uintptr_t)r;
		r = NULL;
	}
	*MemoryHandle = rep.id;
out:
	pthread_mutex_unlock(&nic->lock);
	free(r);
	return vipl_return(rc);
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
	rc = vipl_ctl_call(nic, VIA_CTL_MEM_DEREGISTER, &req, NULL, NULL);
	slot = rc == 0 ? via_hmap_find(&nic->regions, MemoryHandle) : NULL;
	if (slot != NULL) {
		struct vipl_region *r = (struct vipl_region *)(uintptr_t)*slot;

		via_hmap_del(&nic->regions, MemoryHandle);
		region_unlock(r);
		free(r);
	}
	pthread_mutex_unlock(&nic->lock);
	return vipl_return(rc);
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
	rc = vipl_ctl_call(nic, VIA_CTL_MEM_QUERY, &req, &rep, NULL);
	if (rc != 0)
		return vipl_return(rc);
	MemAttribs->Ptag = (VIP_PROTECTION_HANDLE)(uintptr_t)rep.ptag;
	MemAttribs->EnableRdmaWrite = rep.rdma_write ? VIP_TRUE : VIP_FALSE;
	MemAttribs->EnableRdmaRead = rep.rdma_read ? VIP_TRUE : VIP_FALSE;
	return VIP_SUCCESS;
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
	return vipl_return(vipl_ctl_call(nic, VIA_CTL_MEM_SET_ATTR, &req, NULL, NULL));
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
	return vipl_return(rc == -EINVAL ? -ENOMEM : rc);
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
	return vipl_return(rc);
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

		region_unlock(r);
		free(r);
	}
	via_hmap_fini(&nic->regions);
	while ((a = LIST_FIRST(&nic->allocs)) != NULL) {
		LIST_REMOVE(a, link);
		munmap(a->va, a->len);
		free(a);
	}
	pthread_mutex_unlock(&nic->lock);
}
