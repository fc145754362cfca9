/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Protection tags and memory registration (VIA §3.2, §9.5, §9.8.4-9.8.5),
 * and provider memory (VipDpdkAllocMem).
 *
 * viad owns the translation and protection table and validates every
 * registration. The library's part is in vipl_pages.c: locking the pages
 * (VIA §9.5.3), which only the owning process can do, and sharing ordinary
 * memory with viad in place.
 */
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
		r = calloc(1, sizeof(*r));
		/* room for the handle now, so nothing fails once viad said yes */
		if (r == NULL || via_hmap_reserve(&nic->regions, nic->regions.count + 1) != 0) {
			rc = -ENOMEM;
			goto out;
		}
		r->page_base = va & ~(page - 1);
		r->page_len = ((va + Length + page - 1) & ~(page - 1)) - r->page_base;
		/* locked and placed before viad looks (all or nothing, §3.2.1) */
		rc = vipl_pages_acquire(r->page_base, r->page_len, &where);
		if (rc != 0)
			goto out;
		counted = true;
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
	*MemoryHandle = rep.id;
out:
	if (rc != 0 && counted)
		vipl_pages_release(r->page_base, r->page_len);
	pthread_mutex_unlock(&nic->lock);
	if (obj_fd >= 0)
		close(obj_fd);
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
	/* viad lets go first: then the pages may go private */
	rc = vipl_ctl_call(nic, VIA_CTL_MEM_DEREGISTER, &req, NULL, NULL);
	slot = rc == 0 ? via_hmap_find(&nic->regions, MemoryHandle) : NULL;
	if (slot != NULL) {
		struct vipl_region *r = (struct vipl_region *)(uintptr_t)*slot;

		via_hmap_del(&nic->regions, MemoryHandle);
		vipl_pages_release(r->page_base, r->page_len);
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

		vipl_pages_release(r->page_base, r->page_len);
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
