/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory regions and the translation and protection table (VIA §3.2,
 * §9.5.3-9.5.4, §9.8.4-9.8.5, §11.2.1.1). A memory handle is the region's id
 * in d->mrs: translation is one table index plus a generation check, so a
 * stale handle never resolves, and a handle of another process never
 * resolves for this one (VIA §3.2.1: handles are per process). Or it names
 * an entry of the session's own table, which the client writes (via_abi.h):
 * an index into the session's table, checked entry and window.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
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

static const char *const copied_reason_names[VIA_CTL_COPIED_REASON_COUNT] = {
	[VIA_CTL_COPIED_NONE] = "no reason given",
	[VIA_CTL_COPIED_FILE] = "a private file mapping",
	[VIA_CTL_COPIED_READ_ONLY] = "read-only pages",
	[VIA_CTL_COPIED_SHARED] = "a shared mapping that is not one object",
	[VIA_CTL_COPIED_STACK] = "a stack",
	[VIA_CTL_COPIED_HIGH] = "above the share file",
	[VIA_CTL_COPIED_NO_SWITCH] = "no userfaultfd write protection in the client",
	[VIA_CTL_COPIED_SWITCH_FAILED] = "the switch failed in the client",
	[VIA_CTL_COPIED_UNSEALED] = "a shared object that may shrink (not a sealed memfd)",
	[VIA_CTL_COPIED_NO_FD] = "a memfd the program holds no fd of",
};

/* Past the last user address of any 64-bit Linux (5-level page tables):
 * a copied range beyond it names the kernel's memory */
#define USER_VA_END (UINT64_C(1) << 56)

/* A shared object viad maps: in place, or refused (logged) and copied. */
static int
place_object(struct viad *d, struct via_session *s, struct via_mr *mr,
	     const struct via_ctl_mem_register_req *q, const char **copied_why)
{
	const char *why = NULL;
	bool writable = false;
	int rc = via_pmem_object_view(d, s, q, mr->page_base, mr->page_len, &mr->pmem, &writable,
				      &why);

	if (rc == 0) {
		mr->writable = writable && !(q->flags & VIA_CTL_MEM_READ_ONLY);
		return 0;
	}
	VLOG_WARN("session %u (pid %d, uid %u): %s for %#" PRIx64 " (%" PRIu64 " bytes) refused: "
		  "%s (%s)", s->id, (int)s->pid, (unsigned)s->uid,
		  q->placement == VIA_CTL_MEM_SYSV ? "a SysV segment" : "a shared object's fd",
		  q->addr, q->len, why != NULL ? why : "?", strerror(-rc));
	*copied_why = q->placement == VIA_CTL_MEM_SYSV ? "a SysV segment viad did not attach"
						       : "a shared object viad did not map";
	return rc;
}

/*
 * Where viad reaches the region's bytes: provider memory it knows, a view
 * of the share file (in place), a view of the shared object the client
 * passed, or the program's /proc/self/mem (copied, logged with the reason:
 * a copy is a system call per access). viad maps only what the client
 * hands it, as far as the client may use it; a client that lies about
 * where its pages are only misdirects its own data.
 */
static int
place(struct viad *d, struct via_session *s, struct via_mr *mr,
      const struct via_ctl_mem_register_req *q)
{
	const char *why;
	int rc;

	if (q->placement > VIA_CTL_MEM_SYSV || q->reason >= VIA_CTL_COPIED_REASON_COUNT ||
	    (q->flags & ~VIA_CTL_MEM_READ_ONLY) != 0)
		return -EINVAL;
	mr->pmem = via_pmem_find(s, q->addr, q->len);
	if (mr->pmem != NULL) {
		mr->writable = !(q->flags & VIA_CTL_MEM_READ_ONLY);
		mr->pmem->refs++;
		return 0;
	}
	if (q->placement != VIA_CTL_MEM_COPIED &&
	    s->in_place_bytes + mr->page_len > d->conf.max_in_place_bytes) {
		VLOG_WARN("session %u (pid %d): %" PRIu64 " bytes more in place would pass "
			  "max_in_place_bytes (%" PRIu64 "); refused", s->id, (int)s->pid,
			  mr->page_len, d->conf.max_in_place_bytes);
		return -ENOSPC;
	}
	/* the user's share of client memory viad maps, uncharged by unplace()
	 * or when no mapping below is made */
	if (q->placement != VIA_CTL_MEM_COPIED) {
		rc = via_user_charge(d, s, VIA_USER_IN_PLACE_BYTES, mr->page_len);
		if (rc != 0)
			return rc;
	}
	why = copied_reason_names[q->reason];
	if (q->placement == VIA_CTL_MEM_IN_PLACE)
		rc = via_pmem_view_get(d, s, mr->page_base, mr->page_len, &mr->pmem);
	else if (q->placement != VIA_CTL_MEM_COPIED)
		rc = place_object(d, s, mr, q, &why);
	if (q->placement == VIA_CTL_MEM_IN_PLACE && rc == 0)
		/* the library moves only writable pages in place; a client that
		 * says otherwise writes to its own file, nothing else */
		mr->writable = !(q->flags & VIA_CTL_MEM_READ_ONLY);
	if (q->placement != VIA_CTL_MEM_COPIED) {
		if (rc == 0) {
			s->in_place_bytes += mr->page_len;
			d->counters.regions_in_place++;
			return 0;
		}
		via_user_uncharge(d, s, VIA_USER_IN_PLACE_BYTES, mr->page_len);
		/* a share file missing or out of its range, the mappings spent:
		 * as the client asked; an object refused: copied as below */
		if (q->placement == VIA_CTL_MEM_IN_PLACE || rc == -ENOSPC)
			return rc;
	}
	/* copied: the program's own rights through its /proc/self/mem decide
	 * each access (a write to a page it may only read fails there) */
	if (s->mem_fd < 0 || mr->page_base + mr->page_len > USER_VA_END)
		return -EINVAL;
	mr->writable = !(q->flags & VIA_CTL_MEM_READ_ONLY) && q->reason != VIA_CTL_COPIED_READ_ONLY;
	VLOG_INFO("session %u (pid %d): region at %#" PRIx64 " (%" PRIu64 " bytes) is copied "
		  "through /proc/%d/mem, not shared in place: %s", s->id, (int)s->pid, q->addr,
		  q->len, (int)s->pid, why);
	d->counters.regions_copied++;
	return 0;
}

/* A region's share of its user's limits: one region, its pages. @return 0, -ENOSPC */
static int
user_charge(struct viad *d, struct via_session *s, const struct via_mr *mr)
{
	int rc = via_user_charge(d, s, VIA_USER_REGIONS, 1);

	if (rc == 0 && (rc = via_user_charge(d, s, VIA_USER_REGISTER_BYTES, mr->page_len)) != 0)
		via_user_uncharge(d, s, VIA_USER_REGIONS, 1);
	return rc;
}

static void
user_uncharge(struct viad *d, struct via_session *s, const struct via_mr *mr)
{
	via_user_uncharge(d, s, VIA_USER_REGISTER_BYTES, mr->page_len);
	via_user_uncharge(d, s, VIA_USER_REGIONS, 1);
}

/* The reverse of place(). */
static void
unplace(struct viad *d, struct via_session *s, struct via_mr *mr)
{
	if (mr->pmem == NULL)
		return;
	if (mr->pmem->view) {
		s->in_place_bytes -= mr->page_len;
		via_user_uncharge(d, s, VIA_USER_IN_PLACE_BYTES, mr->page_len);
		via_pmem_view_put(d, s, mr->pmem);
	} else {
		mr->pmem->refs--;
	}
}

int
via_mr_register(struct viad *d, struct via_session *s, const struct via_ctl_mem_register_req *q,
		uint32_t *handle)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct via_mr *mr;
	int rc;

	/* empty, wrapping, or wrapping once rounded to pages: the range of the
	 * last page, [page_base, 0), passed every check after this one
	 * (tests/fuzz/corpus/dispatch/crash-page-end-wraps) */
	if (q->len == 0 || q->addr + q->len < q->addr ||
	    VIA_ALIGN_UP(q->addr + q->len, page) < q->addr + q->len)
		return -EINVAL;
	if (!attr_valid(d, s, &q->attr, &rc))
		return rc;
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL)
		return -ENOMEM;
	mr->addr = q->addr;
	mr->len = q->len;
	mr->page_base = q->addr & ~(page - 1);
	mr->page_len = VIA_ALIGN_UP(q->addr + q->len, page) - mr->page_base;
	mr->ptag = q->attr.ptag;
	mr->rdma_write = q->attr.rdma_write;
	mr->rdma_read = q->attr.rdma_read;
	rc = place(d, s, mr, q);
	if (rc == 0) {
		if (mr->page_len > d->conf.max_register_bytes ||
		    d->counters.bytes_registered + mr->page_len > d->conf.max_register_bytes)
			rc = -ENOSPC;
		else if ((rc = user_charge(d, s, mr)) == 0 &&
			 (rc = via_idtab_alloc(&d->mrs, mr, &mr->handle)) != 0)
			user_uncharge(d, s, mr);
		if (rc != 0)
			unplace(d, s, mr);
	}
	if (rc != 0) {
		free(mr);
		return rc;
	}
	mr->owner = s;
	via_ptag_get(d, s, q->attr.ptag)->refs++;
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
	d->mr_changes++;
	via_ptag_get(d, s, mr->ptag)->refs--;
	unplace(d, s, mr);
	user_uncharge(d, s, mr);
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
	d->mr_changes++;
	mr->ptag = attr->ptag;
	mr->rdma_write = attr->rdma_write;
	mr->rdma_read = attr->rdma_read;
	return 0;
}

/* ---- the client's table of regions (via_abi.h) ----------------------------------- */

/* Whether [@p va, @p va + @p len) lies in [@p lo, @p lo + @p n), without overflow. */
static bool
within(uint64_t va, uint64_t len, uint64_t lo, uint64_t n)
{
	return va >= lo && va - lo <= n && len <= n - (va - lo);
}

static int
table_create(struct viad *d, struct via_session *s)
{
	uint32_t cap = via_pow2_ceil(d->conf.table_regions);
	struct via_tpt *t;
	int rc;

	if (d->conf.table_regions == 0)
		return -EOPNOTSUPP;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return -ENOMEM;
	/* its entries are regions of the user's, registered unseen */
	rc = via_user_charge(d, s, VIA_USER_REGIONS, cap);
	if (rc == 0 && via_arena_alloc(&s->arena, (uint64_t)cap * sizeof(*t->sh), &t->off) != 0) {
		via_user_uncharge(d, s, VIA_USER_REGIONS, cap);
		rc = -ENOSPC;
	}
	if (rc != 0) {
		free(t);
		return rc;
	}
	memset(s->seg.va + t->off, 0, (size_t)cap * sizeof(*t->sh));
	t->sh = (const struct via_tpt_entry *)(s->seg.va + t->off);
	t->capacity = cap;
	s->tpt = t;
	return 0;
}

void
via_mr_table_window_set(struct via_session *s, struct via_tpt_window *w, struct via_pmem *v)
{
	w->view = v;
	w->mr = (struct via_mr){
		.owner = s,
		.addr = v->client_va,
		.len = v->shm.len,
		.page_base = v->client_va,
		.page_len = v->shm.len,
		.rdma_write = true,
		.rdma_read = true,
		.writable = true,
		.pmem = v,
	};
}

int
via_mr_table_window(struct viad *d, struct via_session *s, uint64_t addr,
		    struct via_ctl_mem_table_rep *rep)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct via_tpt_window *w;
	struct via_pmem *v;
	struct via_tpt *t;
	uint32_t i;
	int rc;

	if (s->share_fd < 0 || addr >= VIA_SHARE_FILE_SIZE)
		return -EINVAL;
	if (s->tpt == NULL && (rc = table_create(d, s)) != 0)
		return rc;
	t = s->tpt;
	for (i = 0; i < t->nb_windows && !within(addr, 1, t->windows[i].mr.addr,
						   t->windows[i].mr.len); i++)
		;
	if (i == t->nb_windows) {
		if (i == VIA_TPT_WINDOWS)
			return -ENOSPC;
		rc = via_pmem_view_get(d, s, addr & ~(page - 1), page, &v);
		if (rc != 0)
			return rc;
		/* the client may register any of it unseen: the whole window
		 * counts as in place */
		if (s->in_place_bytes + v->shm.len > d->conf.max_in_place_bytes)
			rc = -ENOSPC;
		else
			rc = via_user_charge(d, s, VIA_USER_IN_PLACE_BYTES, v->shm.len);
		if (rc != 0) {
			VLOG_INFO("session %u (pid %d): a window of %" PRIu64 " bytes for its table "
				  "of regions would pass max_in_place_bytes or the user's in-place "
				  "bytes: its registrations there are calls", s->id, (int)s->pid,
				  v->shm.len);
			via_pmem_view_put(d, s, v);
			return rc;
		}
		s->in_place_bytes += v->shm.len;
		via_mr_table_window_set(s, &t->windows[t->nb_windows++], v);
	}
	w = &t->windows[i];
	*rep = (struct via_ctl_mem_table_rep){
		.table_off = t->off,
		.window_va = w->mr.addr,
		.window_len = w->mr.len,
		.capacity = t->capacity,
		.window = i,
	};
	return 0;
}

void
via_mr_table_close(struct viad *d, struct via_session *s)
{
	struct via_tpt *t = s->tpt;
	uint32_t i;

	if (t == NULL)
		return;
	for (i = 0; i < t->nb_windows; i++) {
		s->in_place_bytes -= t->windows[i].mr.len;
		via_user_uncharge(d, s, VIA_USER_IN_PLACE_BYTES, t->windows[i].mr.len);
		via_pmem_view_put(d, s, t->windows[i].view);
	}
	via_user_uncharge(d, s, VIA_USER_REGIONS, t->capacity);
	via_arena_free(&s->arena, t->off, (uint64_t)t->capacity * sizeof(*t->sh));
	free(t);
	s->tpt = NULL;
}

/*
 * via_mr_check() of a handle of the client's table: the entry copied out,
 * then checked against viad's own numbers (via_abi.h).
 */
static struct via_mr *
table_check(const struct via_session *s, uint32_t handle, uint64_t va, uint64_t len,
	    uint32_t ptag, unsigned access, int *err)
{
	const struct via_tpt *t = s->tpt;
	const struct via_tpt_window *w;
	struct via_tpt_entry e;

	*err = -ENOENT;
	if (t == NULL)
		return NULL;
	memcpy(&e, &t->sh[handle & (t->capacity - 1)], sizeof(e));
	if (e.handle != handle || e.window >= t->nb_windows)
		return NULL;
	w = &t->windows[e.window];
	*err = -ERANGE;
	if (e.len == 0 || !within(e.addr, e.len, w->mr.addr, w->mr.len) ||
	    !within(va, len, e.addr, e.len))
		return NULL;
	*err = -EACCES;
	if (e.ptag != ptag ||
	    ((access & VIA_MR_REMOTE_WRITE) && !(e.flags & VIA_TPT_RDMA_WRITE)) ||
	    ((access & VIA_MR_REMOTE_READ) &&
	     (!(e.flags & VIA_TPT_RDMA_READ) || !s->nic->info.rdma_read_support)))
		return NULL;
	return (struct via_mr *)&w->mr;
}

bool
via_mr_holds(const struct via_mr *mr, uint32_t handle, uint64_t va, uint64_t len)
{
	/* the bytes the user registered, as via_mr_check() */
	return !(handle & VIA_TPT_HANDLE) && within(va, len, mr->addr, mr->len);
}

struct via_mr *
via_mr_check(struct viad *d, struct via_session *s, uint32_t handle, uint64_t va, uint64_t len,
	     uint32_t ptag, unsigned access, int *err)
{
	struct via_mr *mr;

	if (handle & VIA_TPT_HANDLE)
		return table_check(s, handle, va, len, ptag, access, err);
	mr = via_idtab_lookup(&d->mrs, handle);

	if (mr == NULL || mr->owner != s) {
		*err = -ENOENT;
		return NULL;
	}
	/* the bytes the user registered, not the page-rounded range: VIA
	 * §3.2.1 rounds for locking, the protection check is on the region */
	if (!within(va, len, mr->addr, mr->len)) {
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
