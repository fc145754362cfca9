/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory regions and the translation and protection table (VIA §3.2,
 * §9.5.3-9.5.4, §9.8.4-9.8.5, §11.2.1.1). A memory handle is the region's id
 * in d->mrs: translation is one table index plus a generation check, so a
 * stale handle never resolves, and a handle of another process never
 * resolves for this one (VIA §3.2.1: handles are per process).
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "viad.h"

static bool
attr_valid(struct viad *d, struct via_session *s, const struct via_ctl_mem_attr *attr, int *err)
{
	if (via_ptag_get(d, s, attr->ptag) == NULL) {
		*err = -ESRCH;
		return false;
	}
	if (attr->rdma_read && !s->nic->info.rdma_read_support) {
		*err = -EOPNOTSUPP;
		return false;
	}
	return true;
}

int
via_mr_register(struct viad *d, struct via_session *s, uint64_t addr, uint64_t len,
		const struct via_ctl_mem_attr *attr, uint32_t *handle)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct via_mr *mr;
	int rc;

	if (len == 0 || addr + len < addr)
		return -EINVAL;
	if (!attr_valid(d, s, attr, &rc))
		return rc;
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL)
		return -ENOMEM;
	mr->addr = addr;
	mr->len = len;
	mr->page_base = addr & ~(page - 1);
	mr->page_len = VIA_ALIGN_UP(addr + len, page) - mr->page_base;
	mr->ptag = attr->ptag;
	mr->rdma_write = attr->rdma_write;
	mr->rdma_read = attr->rdma_read;
	mr->pmem = via_pmem_find(s, addr, len);
	if (mr->pmem != NULL) {
		mr->writable = true;
	} else {
		rc = via_procmem_check(s->pid, mr->page_base, mr->page_len, &mr->writable);
		if (rc != 0) {
			free(mr);
			return rc == -EFAULT ? -EINVAL : rc;
		}
	}
	if (mr->page_len > d->conf.max_register_bytes ||
	    d->counters.bytes_registered + mr->page_len > d->conf.max_register_bytes) {
		free(mr);
		return -ENOSPC;
	}
	rc = via_idtab_alloc(&d->mrs, mr, &mr->handle);
	if (rc != 0) {
		free(mr);
		return rc;
	}
	mr->owner = s;
	via_ptag_get(d, s, attr->ptag)->refs++;
	if (mr->pmem != NULL)
		mr->pmem->refs++;
	d->counters.bytes_registered += mr->page_len;
	TAILQ_INSERT_TAIL(&s->mrs, mr, link);
	d->counters.regions_registered++;
	*handle = mr->handle;
	return 0;
}

struct via_mr *
via_mr_get(struct viad *d, struct via_session *s, uint64_t addr, uint32_t handle)
{
	struct via_mr *mr = via_idtab_lookup(&d->mrs, handle);

	return mr != NULL && mr->owner == s && mr->addr == addr ? mr : NULL;
}

int
via_mr_deregister(struct viad *d, struct via_session *s, uint64_t addr, uint32_t handle)
{
	struct via_mr *mr = via_mr_get(d, s, addr, handle);

	if (mr == NULL)
		return -ENOENT;
	TAILQ_REMOVE(&s->mrs, mr, link);
	via_idtab_free(&d->mrs, handle);
	via_ptag_get(d, s, mr->ptag)->refs--;
	if (mr->pmem != NULL)
		mr->pmem->refs--;
	d->counters.bytes_registered -= mr->page_len;
	free(mr);
	return 0;
}

int
via_mr_set_attr(struct viad *d, struct via_session *s, uint64_t addr, uint32_t handle,
		const struct via_ctl_mem_attr *attr)
{
	struct via_mr *mr = via_mr_get(d, s, addr, handle);
	int rc;

	if (mr == NULL)
		return -ENOENT;
	if (!attr_valid(d, s, attr, &rc))
		return rc;
	via_ptag_get(d, s, mr->ptag)->refs--;
	via_ptag_get(d, s, attr->ptag)->refs++;
	mr->ptag = attr->ptag;
	mr->rdma_write = attr->rdma_write;
	mr->rdma_read = attr->rdma_read;
	return 0;
}

struct via_mr *
via_mr_check(struct viad *d, struct via_session *s, uint32_t handle, uint64_t va, uint64_t len,
	     uint32_t ptag, unsigned access, int *err)
{
	struct via_mr *mr = via_idtab_lookup(&d->mrs, handle);

	if (mr == NULL || mr->owner != s) {
		*err = -ENOENT;
		return NULL;
	}
	/* the bytes the user registered, not the page-rounded range: VIA
	 * §3.2.1 rounds for locking, the protection check is on the region */
	if (va < mr->addr || va - mr->addr > mr->len || len > mr->len - (va - mr->addr)) {
		*err = -ERANGE;
		return NULL;
	}
	if (mr->ptag != ptag ||
	    ((access & VIA_MR_LOCAL_WRITE) && !mr->writable) ||
	    ((access & VIA_MR_REMOTE_WRITE) && (!mr->rdma_write || !mr->writable)) ||
	    ((access & VIA_MR_REMOTE_READ) && !mr->rdma_read)) {
		*err = -EACCES;
		return NULL;
	}
	return mr;
}
