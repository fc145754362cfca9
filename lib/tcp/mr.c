/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Protection tags and memory registration (VIA §3.2, §9.5, §9.8.4,
 * §9.8.5), and the protection check of every memory access (§6.3.2).
 *
 * A region is the bytes the consumer registered: the check is on them, not
 * on whole pages (§3.2.1 rounds to pages for locking only). Pages are not
 * locked (no mlock): nothing but the kernel's socket calls touches them,
 * and it pages them in as it goes. Registration does check that every
 * page is mapped and notes whether all are writable (§9.5.3: "should
 * always check for read-only pages of memory and not allow modification to
 * those pages"). The data itself moves through the socket calls, which
 * fail with EFAULT rather than fault if the consumer unmaps a registered
 * page afterwards; descriptors, which the provider reads and writes
 * itself, must stay mapped while posted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tcp_prov.h"

struct tcp_ptag *
tcp_ptag_in(struct tcp_nic *nic, VIP_PROTECTION_HANDLE handle)
{
	return tcp_obj_in(nic, handle, TCP_OBJ_PTAG);
}

VIP_RETURN
tcp_create_ptag(VIP_NIC_HANDLE NicHandle, VIP_PROTECTION_HANDLE *ProtectionTag)
{
	struct tcp_ptag *pt;
	struct tcp_nic *nic;
	int rc;

	if (ProtectionTag == NULL)
		return VIP_INVALID_PARAMETER;
	nic = tcp_nic_enter(NicHandle, TCP_OBJ_NIC, NULL);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	if (nic->nb_ptag >= TCP_MAX_PTAGS || (pt = calloc(1, sizeof(*pt))) == NULL) {
		tcp_nic_leave(nic);
		return VIP_ERROR_RESOURCE;
	}
	rc = tcp_obj_add(nic, &pt->obj, TCP_OBJ_PTAG);
	if (rc != 0) {
		free(pt);
		tcp_nic_leave(nic);
		return via_vip_return(rc);
	}
	nic->nb_ptag++;
	*ProtectionTag = tcp_handle_of(nic, &pt->obj);
	tcp_nic_leave(nic);
	return VIP_SUCCESS;
}

VIP_RETURN
tcp_destroy_ptag(VIP_NIC_HANDLE NicHandle, VIP_PROTECTION_HANDLE ProtectionTag)
{
	struct tcp_nic *nic = tcp_nic_enter(NicHandle, TCP_OBJ_NIC, NULL);
	struct tcp_ptag *pt;
	VIP_RETURN ret = VIP_SUCCESS;

	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	pt = tcp_ptag_in(nic, ProtectionTag);
	if (pt == NULL) {
		ret = VIP_INVALID_PARAMETER;
	} else if (pt->users > 0) {
		/* VIA §9.5.2: still on a VI or a region */
		ret = VIP_ERROR_RESOURCE;
	} else {
		tcp_obj_del(nic, &pt->obj);
		nic->nb_ptag--;
		free(pt);
	}
	tcp_nic_leave(nic);
	return ret;
}

/*
 * Whether every page of [va, va + len) is mapped and readable, from
 * /proc/self/maps; *writable tells whether all are writable too.
 * @return 0, -EFAULT (a page is not), -errno (the file)
 */
static int
range_mapped(uint64_t va, uint64_t len, bool *writable)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t cur = va & ~(page - 1), end = (va + len + page - 1) & ~(page - 1);
	unsigned long long start, stop;
	char *line = NULL, perms[5];
	size_t cap = 0;
	FILE *f;
	int rc = -EFAULT;

	f = fopen("/proc/self/maps", "re");
	if (f == NULL)
		return -errno;
	*writable = true;
	/* the mappings come in address order: walk them along the range */
	while (getline(&line, &cap, f) > 0) {
		if (sscanf(line, "%llx-%llx %4s", &start, &stop, perms) != 3 || stop <= cur)
			continue;
		if (start > cur || perms[0] != 'r')
			break;
		*writable = *writable && perms[1] == 'w';
		cur = stop;
		if (cur >= end) {
			rc = 0;
			break;
		}
	}
	free(line);
	fclose(f);
	return rc;
}

/* VIA §9.10.6 attributes: a tag of this NIC, VIP_TRUE or VIP_FALSE enables. */
static int
mem_attr_check(struct tcp_nic *nic, const VIP_MEM_ATTRIBUTES *a, struct tcp_ptag **ptag)
{
	*ptag = tcp_ptag_in(nic, a->Ptag);
	if (*ptag == NULL)
		return -ESRCH;
	if ((unsigned)a->EnableRdmaWrite > VIP_TRUE || (unsigned)a->EnableRdmaRead > VIP_TRUE)
		return -EINVAL;
	return 0;
}

VIP_RETURN
tcp_register_mem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress, VIP_ULONG Length,
		 VIP_MEM_ATTRIBUTES *MemAttribs, VIP_MEM_HANDLE *MemoryHandle)
{
	uint64_t va = (uintptr_t)VirtualAddress;
	struct tcp_ptag *ptag;
	struct tcp_nic *nic;
	struct tcp_mr *mr;
	bool writable = false;
	uint32_t id;
	int rc;

	if (MemoryHandle != NULL)
		*MemoryHandle = 0;
	/* VIA §9.5.3: Length 0 is VIP_INVALID_PARAMETER */
	if (VirtualAddress == NULL || Length == 0 || MemAttribs == NULL || MemoryHandle == NULL ||
	    va + Length < va)
		return VIP_INVALID_PARAMETER;
	/* before the lock: the maps file takes a while (§8: registration is slow) */
	rc = range_mapped(va, Length, &writable);
	if (rc != 0)
		return VIP_INVALID_PARAMETER;
	nic = tcp_nic_enter(NicHandle, TCP_OBJ_NIC, NULL);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	rc = mem_attr_check(nic, MemAttribs, &ptag);
	if (rc == 0 && (Length > TCP_MAX_REGISTER_BYTES ||
			nic->registered_bytes + Length > TCP_MAX_REGISTER_BYTES))
		rc = -ENOSPC;
	mr = rc == 0 ? calloc(1, sizeof(*mr)) : NULL;
	if (rc == 0 && mr == NULL)
		rc = -ENOMEM;
	if (rc == 0) {
		rc = via_idtab_alloc(&nic->mrs, mr, &id);
		if (rc != 0)
			free(mr);
	}
	if (rc != 0) {
		tcp_nic_leave(nic);
		return via_vip_return(rc);
	}
	mr->va = va;
	mr->len = Length;
	mr->ptag = ptag;
	mr->writable = writable;
	mr->rdma_write = MemAttribs->EnableRdmaWrite;
	mr->rdma_read = MemAttribs->EnableRdmaRead;
	ptag->users++;
	nic->registered_bytes += Length;
	*MemoryHandle = id;
	tcp_nic_leave(nic);
	return VIP_SUCCESS;
}

/* The region @p mh, registered at @p va. */
static struct tcp_mr *
mr_at(struct tcp_nic *nic, VIP_PVOID va, VIP_MEM_HANDLE mh)
{
	struct tcp_mr *mr = via_idtab_lookup(&nic->mrs, mh);

	return mr != NULL && mr->va == (uintptr_t)va ? mr : NULL;
}

VIP_RETURN
tcp_deregister_mem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress, VIP_MEM_HANDLE MemoryHandle)
{
	struct tcp_nic *nic = tcp_nic_enter(NicHandle, TCP_OBJ_NIC, NULL);
	struct tcp_mr *mr;

	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	mr = mr_at(nic, VirtualAddress, MemoryHandle);
	if (mr == NULL) {
		tcp_nic_leave(nic);
		return VIP_INVALID_PARAMETER;
	}
	via_idtab_free(&nic->mrs, MemoryHandle);
	mr->ptag->users--;
	nic->registered_bytes -= mr->len;
	/* buffers in use are checked again before the next byte (VIA §3.2.1:
	 * a reference to deregistered memory is a protection violation) */
	nic->mr_gen++;
	free(mr);
	tcp_nic_leave(nic);
	return VIP_SUCCESS;
}

VIP_RETURN
tcp_query_mem(VIP_NIC_HANDLE NicHandle, VIP_PVOID Address, VIP_MEM_HANDLE MemHandle,
	      VIP_MEM_ATTRIBUTES *MemAttribs)
{
	struct tcp_nic *nic;
	struct tcp_mr *mr;

	if (MemAttribs == NULL)
		return VIP_INVALID_PARAMETER;
	nic = tcp_nic_enter(NicHandle, TCP_OBJ_NIC, NULL);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	mr = mr_at(nic, Address, MemHandle);
	if (mr != NULL) {
		MemAttribs->Ptag = tcp_handle_of(nic, &mr->ptag->obj);
		MemAttribs->EnableRdmaWrite = mr->rdma_write ? VIP_TRUE : VIP_FALSE;
		MemAttribs->EnableRdmaRead = mr->rdma_read ? VIP_TRUE : VIP_FALSE;
	}
	tcp_nic_leave(nic);
	return mr != NULL ? VIP_SUCCESS : VIP_INVALID_PARAMETER;
}

VIP_RETURN
tcp_set_mem_attributes(VIP_NIC_HANDLE NicHandle, VIP_PVOID Address, VIP_MEM_HANDLE MemHandle,
		       VIP_MEM_ATTRIBUTES *MemAttribs)
{
	struct tcp_ptag *ptag;
	struct tcp_nic *nic;
	struct tcp_mr *mr;
	int rc;

	if (MemAttribs == NULL)
		return VIP_INVALID_PARAMETER;
	nic = tcp_nic_enter(NicHandle, TCP_OBJ_NIC, NULL);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	mr = mr_at(nic, Address, MemHandle);
	rc = mr == NULL ? -EINVAL : mem_attr_check(nic, MemAttribs, &ptag);
	if (rc == 0) {
		mr->ptag->users--;
		ptag->users++;
		mr->ptag = ptag;
		mr->rdma_write = MemAttribs->EnableRdmaWrite;
		mr->rdma_read = MemAttribs->EnableRdmaRead;
		nic->mr_gen++;
	}
	tcp_nic_leave(nic);
	return via_vip_return(rc);
}

int
tcp_mr_check(struct tcp_nic *nic, VIP_MEM_HANDLE mh, uint64_t va, uint64_t len,
	     const struct tcp_ptag *ptag, uint32_t access)
{
	const struct tcp_mr *mr = via_idtab_lookup(&nic->mrs, mh);

	if (mr == NULL || va < mr->va || va - mr->va > mr->len || len > mr->len - (va - mr->va))
		return -ENOENT;
	/* VIA §3.2.2.1: the tags must be identical; §3.2.2.2: the region's
	 * enables (the VI's are the caller's to check: the most protective wins) */
	if (mr->ptag != ptag ||
	    ((access & (TCP_LOCAL_WRITE | TCP_REMOTE_WRITE)) && !mr->writable) ||
	    ((access & TCP_REMOTE_WRITE) && !mr->rdma_write) ||
	    ((access & TCP_REMOTE_READ) && !mr->rdma_read))
		return -EACCES;
	return 0;
}

void
tcp_mr_fini(struct tcp_nic *nic)
{
	struct tcp_obj *obj;
	struct tcp_mr *mr;
	uint32_t cursor = 0, id;

	while ((mr = via_idtab_next(&nic->mrs, &cursor, &id)) != NULL) {
		via_idtab_free(&nic->mrs, id);
		free(mr);
	}
	cursor = 0;
	while ((obj = via_idtab_next(&nic->objs, &cursor, NULL)) != NULL) {
		if (obj->type == TCP_OBJ_PTAG) {
			tcp_obj_del(nic, obj);
			free(obj);
		}
	}
	nic->nb_ptag = 0;
	nic->registered_bytes = 0;
}
