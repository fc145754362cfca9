/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Domain (one open VIA NIC and its protection tag), memory registration
 * (fi_mr_reg and the rendezvous' registration cache) and address vectors.
 */
#define _GNU_SOURCE   /* pthread_getattr_np */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "via_fi.h"

/* ---------------------------------------------------------------------- */
/* Registration of user memory for the rendezvous */

/* /proc/self/pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst) */
#define PM_PRESENT (1ULL << 63)
#define PM_FILE    (1ULL << 61)

/*
 * Is every page of [addr, addr + len) present and backed by a file or
 * shared memory? libvipl-dpdk moves registered private pages into its
 * share file (docs/design.md, section 7), so a registration is still good
 * for the range while its pages are such. A range unmapped and mapped
 * again since (malloc's mmap for a new buffer at the same address) is
 * private anonymous memory, or not present yet: the cached registration
 * would reach the old pages, and must go.
 */
static bool
vf_pages_shared(struct vf_domain *d, const uint8_t *addr, size_t len)
{
	const uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t first = (uintptr_t)addr / ps, last = ((uintptr_t)addr + len - 1) / ps;
	uint64_t ent[512];

	while (first <= last) {
		size_t n = last - first + 1, i;
		ssize_t got;

		if (n > sizeof(ent) / sizeof(ent[0]))
			n = sizeof(ent) / sizeof(ent[0]);
		got = pread(d->pagemap_fd, ent, n * sizeof(ent[0]), (off_t)(first * sizeof(ent[0])));
		if (got != (ssize_t)(n * sizeof(ent[0])))
			return false;
		for (i = 0; i < n; i++)
			if ((ent[i] & (PM_PRESENT | PM_FILE)) != (PM_PRESENT | PM_FILE))
				return false;
		first += n;
	}
	return true;
}

static void
vf_reg_free(struct vf_domain *d, struct vf_reg *r)
{
	VIP_RETURN rc = VipDeregisterMem(d->nic, r->addr, r->mh);

	if (rc != VIP_SUCCESS)
		FI_WARN(&vf_prov, FI_LOG_MR, "VipDeregisterMem(%p): %d\n", (void *)r->addr, rc);
	if (r->cached) {
		vf_list_del(&r->link);
		d->cache_bytes -= r->len;
	}
	free(r);
}

/* Drop unused cached registrations, oldest first, until @p keep bytes are left. */
static void
vf_cache_trim(struct vf_domain *d, size_t keep)
{
	struct vf_list *pos, *tmp;

	vf_list_for_each_safe(pos, tmp, &d->cache) {
		struct vf_reg *r = vf_container_of(pos, struct vf_reg, link);

		if (d->cache_bytes <= keep)
			break;
		if (r->refs == 0)
			vf_reg_free(d, r);
	}
}

/*
 * Does [buf, buf + len) overlap the calling thread's stack? Such memory is
 * never registered by the provider: libvipl-dpdk moves registered pages
 * into its share file under a userfaultfd write protection, and it tells
 * the registering thread's own stack by the mapping its frame lies in;
 * once mlock has split the stack into several mappings, a page of the
 * stack in another one is moved in place, and the thread's next push onto
 * it waits for ever on its own write protection. So stack buffers go
 * eagerly, and a rendezvous into one reads through send slots.
 */
bool
vf_on_own_stack(const void *buf, size_t len)
{
	static __thread uintptr_t lo, hi;
	uintptr_t b = (uintptr_t)buf;

	if (hi == 0) {
		pthread_attr_t a;
		void *addr;
		size_t size;

		if (pthread_getattr_np(pthread_self(), &a) != 0)
			return false;
		if (pthread_attr_getstack(&a, &addr, &size) == 0) {
			lo = (uintptr_t)addr;
			hi = lo + size;
		}
		pthread_attr_destroy(&a);
	}
	return b < hi && b + len > lo;
}

/*
 * Drop the unused cached registrations over [addr, addr + len) whose pages
 * have changed, before anything registers the range again. libvipl-dpdk
 * counts registrations per page: a page still counted by a stale
 * registration (its buffer freed and the address mapped anew) is taken for
 * one already in the share file, so a new registration of it would reach
 * the old pages and never the new ones.
 */
void
vf_cache_purge(struct vf_domain *d, const void *addr, size_t len)
{
	const uint8_t *a = addr;
	struct vf_list *pos, *tmp;

	vf_list_for_each_safe(pos, tmp, &d->cache) {
		struct vf_reg *r = vf_container_of(pos, struct vf_reg, link);

		if (r->refs == 0 && r->addr < a + len && a < r->addr + r->len &&
		    !vf_pages_shared(d, r->addr, r->len))
			vf_reg_free(d, r);
	}
}

/*
 * A registration covering [buf, buf + len), RDMA Read enabled (the peer of
 * a rendezvous reads the sender's buffer; nothing writes remotely into
 * these). Registering costs a round trip to viad and moving the pages into
 * the share file (about 0.7 ms per MiB here), so registrations are kept
 * after use while their pages stay the same (vf_pages_shared).
 */
int
vf_reg_get(struct vf_domain *d, const void *buf, size_t len, struct vf_reg **out)
{
	const uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)buf & ~(ps - 1);
	uintptr_t end = ((uintptr_t)buf + len + ps - 1) & ~(ps - 1);
	VIP_MEM_ATTRIBUTES ma = { d->ptag, VIP_FALSE, VIP_TRUE };
	struct vf_list *pos, *tmp;
	struct vf_reg *r;
	VIP_RETURN rc;

	vf_list_for_each_safe(pos, tmp, &d->cache) {
		r = vf_container_of(pos, struct vf_reg, link);
		if ((uintptr_t)r->addr > start || end > (uintptr_t)r->addr + r->len)
			continue;
		if (!vf_pages_shared(d, buf, len)) {
			if (r->refs == 0)
				vf_reg_free(d, r);
			continue;
		}
		r->refs++;
		vf_list_del(&r->link);
		vf_list_add_tail(&d->cache, &r->link);
		*out = r;
		return 0;
	}
	vf_cache_purge(d, (void *)start, end - start);
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	vf_list_init(&r->link);
	r->addr = (uint8_t *)start;
	r->len = end - start;
	rc = VipRegisterMem(d->nic, r->addr, r->len, &ma, &r->mh);
	if (rc != VIP_SUCCESS) {
		FI_WARN(&vf_prov, FI_LOG_MR, "VipRegisterMem(%p, %zu): %d\n", (void *)r->addr,
			r->len, rc);
		free(r);
		return vf_vip_errno(rc);
	}
	r->refs = 1;
	/* only ranges viad shares in place can be checked later; the others
	 * (copied: read-only pages, the main stack) are registered each time */
	r->cached = d->p.mr_cache_bytes > 0 && d->pagemap_fd >= 0 &&
		    r->len <= d->p.mr_cache_bytes && vf_pages_shared(d, r->addr, r->len);
	if (r->cached) {
		vf_list_add_tail(&d->cache, &r->link);
		d->cache_bytes += r->len;
		vf_cache_trim(d, d->p.mr_cache_bytes);
	}
	*out = r;
	return 0;
}

void
vf_reg_put(struct vf_domain *d, struct vf_reg *r)
{
	if (--r->refs == 0 && !r->cached)
		vf_reg_free(d, r);
}

/* ---------------------------------------------------------------------- */
/* fi_mr_reg */

struct vf_mr *
vf_mr_find(struct vf_domain *d, uint32_t key)
{
	struct vf_list *pos, *tmp;

	vf_list_for_each_safe(pos, tmp, &d->mrs) {
		struct vf_mr *m = vf_container_of(pos, struct vf_mr, link);

		if (m->mh == key)
			return m;
	}
	return NULL;
}

/* The application's registration behind @p desc, if it covers the buffer. */
struct vf_mr *
vf_mr_from_desc(void *desc, const void *buf, size_t len)
{
	struct vf_mr *m = desc;
	const uint8_t *b = buf;

	if (m == NULL || m->mr.fid.fclass != FI_CLASS_MR || b < m->addr ||
	    b + len > m->addr + m->len)
		return NULL;
	return m;
}

static int
vf_mr_close(struct fid *fid)
{
	struct vf_mr *m = vf_container_of(fid, struct vf_mr, mr.fid);
	struct vf_domain *d = m->dom;
	VIP_RETURN rc;

	pthread_mutex_lock(&d->lock);
	rc = VipDeregisterMem(d->nic, m->addr, m->mh);
	vf_list_del(&m->link);
	d->refs--;
	pthread_mutex_unlock(&d->lock);
	m->mr.fid.fclass = 0;
	free(m);
	return rc == VIP_SUCCESS ? 0 : vf_vip_errno(rc);
}

static struct fi_ops vf_mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = vf_mr_close,
	.bind = vf_no_bind,
	.control = vf_no_control,
	.ops_open = vf_no_ops_open,
	.tostr = vf_no_tostr,
	.ops_set = vf_no_ops_set,
};

static int
vf_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
	  uint64_t requested_key, uint64_t flags, struct fid_mr **mrp, void *context)
{
	struct vf_domain *d = vf_container_of(fid, struct vf_domain, fid.fid);
	VIP_MEM_ATTRIBUTES ma;
	struct vf_mr *m;
	VIP_RETURN rc;

	/* FI_MR_PROV_KEY: the key is the memory handle viad chose */
	(void)requested_key;
	if (flags)
		return -FI_EBADFLAGS;
	if (offset)
		return -FI_EINVAL;   /* FI_MR_VIRT_ADDR: remote addresses are virtual */
	if (buf == NULL || len == 0)
		return -FI_EINVAL;
	if (access == 0)
		access = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return -FI_ENOMEM;
	m->dom = d;
	m->addr = (uint8_t *)(uintptr_t)buf;
	m->len = len;
	m->access = access;
	ma.Ptag = d->ptag;
	ma.EnableRdmaWrite = (access & FI_REMOTE_WRITE) ? VIP_TRUE : VIP_FALSE;
	ma.EnableRdmaRead = (access & FI_REMOTE_READ) ? VIP_TRUE : VIP_FALSE;
	pthread_mutex_lock(&d->lock);
	vf_cache_purge(d, m->addr, len);
	rc = VipRegisterMem(d->nic, m->addr, len, &ma, &m->mh);
	if (rc == VIP_SUCCESS) {
		vf_list_add_tail(&d->mrs, &m->link);
		d->refs++;
	}
	pthread_mutex_unlock(&d->lock);
	if (rc != VIP_SUCCESS) {
		free(m);
		return vf_vip_errno(rc);
	}
	m->mr.fid.fclass = FI_CLASS_MR;
	m->mr.fid.context = context;
	m->mr.fid.ops = &vf_mr_fi_ops;
	m->mr.mem_desc = m;
	m->mr.key = m->mh;
	*mrp = &m->mr;
	return 0;
}

static int
vf_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
	   uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
	   void *context)
{
	if (count != 1)
		return -FI_EINVAL;   /* mr_iov_limit 1 */
	return vf_mr_reg(fid, iov[0].iov_base, iov[0].iov_len, access, offset, requested_key,
			 flags, mr, context);
}

static int
vf_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags, struct fid_mr **mr)
{
	if (attr->iface != FI_HMEM_SYSTEM)
		return -FI_ENOSYS;
	return vf_mr_regv(fid, attr->mr_iov, attr->iov_count, attr->access, attr->offset,
			  attr->requested_key, flags, mr, attr->context);
}

static struct fi_ops_mr vf_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = vf_mr_reg,
	.regv = vf_mr_regv,
	.regattr = vf_mr_regattr,
};

/* ---------------------------------------------------------------------- */
/* Address vectors */

static size_t
vf_name_hash(const struct vf_name *n)
{
	uint64_t h = 1469598103934665603ULL;
	const uint8_t *b = (const uint8_t *)n;
	size_t i;

	for (i = 0; i < sizeof(*n); i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return (size_t)h;
}

static void
vf_av_hash_add(struct vf_av *av, size_t i)
{
	size_t b = vf_name_hash(&av->e[i].name) & (av->hash_size - 1);

	av->e[i].hnext = av->hash[b];
	av->hash[b] = i + 1;
}

static int
vf_av_grow(struct vf_av *av)
{
	size_t cap = av->cap ? 2 * av->cap : 64, i;
	struct vf_av_entry *e;
	uint64_t *h;

	e = realloc(av->e, cap * sizeof(*e));
	if (e == NULL)
		return -ENOMEM;
	av->e = e;
	h = calloc(cap, sizeof(*h));
	if (h == NULL)
		return -ENOMEM;
	free(av->hash);
	av->hash = h;
	av->hash_size = cap;
	av->cap = cap;
	for (i = 0; i < av->count; i++)
		if (av->e[i].used)
			vf_av_hash_add(av, i);
	return 0;
}

fi_addr_t
vf_av_find(struct vf_av *av, const struct vf_name *name)
{
	uint64_t i;

	if (av == NULL || av->hash_size == 0)
		return FI_ADDR_NOTAVAIL;
	for (i = av->hash[vf_name_hash(name) & (av->hash_size - 1)]; i; i = av->e[i - 1].hnext)
		if (memcmp(&av->e[i - 1].name, name, sizeof(*name)) == 0)
			return i - 1;
	return FI_ADDR_NOTAVAIL;
}

const struct vf_name *
vf_av_name(struct vf_av *av, fi_addr_t addr)
{
	if (av == NULL || addr >= av->count || !av->e[addr].used)
		return NULL;
	return &av->e[addr].name;
}

static int
vf_av_insert(struct fid_av *fav, const void *addr, size_t count, fi_addr_t *fi_addr,
	     uint64_t flags, void *context)
{
	struct vf_av *av = vf_container_of(fav, struct vf_av, av);
	const struct vf_name *names = addr;
	int inserted = 0, ret = 0;
	size_t i;

	(void)context;
	if (flags & ~(uint64_t)FI_MORE)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&av->dom->lock);
	for (i = 0; i < count; i++) {
		fi_addr_t a = FI_ADDR_NOTAVAIL;

		if (!vf_name_valid(&names[i], sizeof(names[i]))) {
			FI_WARN(&vf_prov, FI_LOG_AV, "address %zu is not a via name\n", i);
		} else if (av->type == FI_AV_MAP &&
			   (a = vf_av_find(av, &names[i])) != FI_ADDR_NOTAVAIL) {
			inserted++;
		} else if (av->count == av->cap && (ret = vf_av_grow(av)) != 0) {
			break;
		} else {
			a = av->count++;
			av->e[a].name = names[i];
			av->e[a].used = true;
			vf_av_hash_add(av, a);
			inserted++;
		}
		if (fi_addr)
			fi_addr[i] = a;
	}
	av->gen++;
	pthread_mutex_unlock(&av->dom->lock);
	return ret ? ret : inserted;
}

static int
vf_av_insertsvc(struct fid_av *fav, const char *node, const char *service, fi_addr_t *fi_addr,
		uint64_t flags, void *context)
{
	struct vf_av *av = vf_container_of(fav, struct vf_av, av);
	struct vf_name n;

	if (node == NULL || service == NULL)
		return -FI_EINVAL;
	if (vf_name_resolve(av->dom->nic, av->dom->mac, node, service, &n) != 0)
		return -FI_EADDRNOTAVAIL;
	return vf_av_insert(fav, &n, 1, fi_addr, flags, context) == 1 ? 1 : -FI_EINVAL;
}

static int
vf_av_insertsym(struct fid_av *av, const char *node, size_t nodecnt, const char *service,
		size_t svccnt, fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	(void)av;
	(void)node;
	(void)nodecnt;
	(void)service;
	(void)svccnt;
	(void)fi_addr;
	(void)flags;
	(void)context;
	return -FI_ENOSYS;
}

static int
vf_av_remove(struct fid_av *fav, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	struct vf_av *av = vf_container_of(fav, struct vf_av, av);
	size_t i;
	int ret = 0;

	if (flags)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&av->dom->lock);
	for (i = 0; i < count; i++) {
		fi_addr_t a = fi_addr[i];
		uint64_t *link;

		if (a >= av->count || !av->e[a].used) {
			ret = -FI_EINVAL;
			continue;
		}
		link = &av->hash[vf_name_hash(&av->e[a].name) & (av->hash_size - 1)];
		while (*link != a + 1)
			link = &av->e[*link - 1].hnext;
		*link = av->e[a].hnext;
		av->e[a].used = false;
	}
	av->gen++;
	pthread_mutex_unlock(&av->dom->lock);
	return ret;
}

static int
vf_av_lookup(struct fid_av *fav, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	struct vf_av *av = vf_container_of(fav, struct vf_av, av);
	const struct vf_name *n;
	size_t len;

	pthread_mutex_lock(&av->dom->lock);
	n = vf_av_name(av, fi_addr);
	if (n != NULL) {
		len = *addrlen < sizeof(*n) ? *addrlen : sizeof(*n);
		memcpy(addr, n, len);
	}
	pthread_mutex_unlock(&av->dom->lock);
	*addrlen = sizeof(*n);
	return n ? 0 : -FI_EINVAL;
}

static const char *
vf_av_straddr(struct fid_av *av, const void *addr, char *buf, size_t *len)
{
	const struct vf_name *n = addr;
	char s[64];
	int w;

	(void)av;
	w = snprintf(s, sizeof(s), "via://%02x:%02x:%02x:%02x:%02x:%02x/%u/%u", n->mac[0],
		     n->mac[1], n->mac[2], n->mac[3], n->mac[4], n->mac[5], n->pid, n->ep_id);
	if (*len > 0)
		snprintf(buf, *len, "%s", s);
	*len = (size_t)w + 1;
	return buf;
}

static int
vf_av_set(struct fid_av *av, struct fi_av_set_attr *attr, struct fid_av_set **av_set,
	  void *context)
{
	(void)av;
	(void)attr;
	(void)av_set;
	(void)context;
	return -FI_ENOSYS;
}

static int
vf_av_close(struct fid *fid)
{
	struct vf_av *av = vf_container_of(fid, struct vf_av, av.fid);
	struct vf_domain *d = av->dom;

	pthread_mutex_lock(&d->lock);
	if (av->eps) {
		pthread_mutex_unlock(&d->lock);
		return -FI_EBUSY;
	}
	d->refs--;
	pthread_mutex_unlock(&d->lock);
	free(av->e);
	free(av->hash);
	free(av);
	return 0;
}

static struct fi_ops vf_av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = vf_av_close,
	.bind = vf_no_bind,
	.control = vf_no_control,
	.ops_open = vf_no_ops_open,
	.tostr = vf_no_tostr,
	.ops_set = vf_no_ops_set,
};

static struct fi_ops_av vf_av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = vf_av_insert,
	.insertsvc = vf_av_insertsvc,
	.insertsym = vf_av_insertsym,
	.remove = vf_av_remove,
	.lookup = vf_av_lookup,
	.straddr = vf_av_straddr,
	.av_set = vf_av_set,
};

int
vf_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **avp,
	   void *context)
{
	struct vf_domain *d = vf_container_of(domain, struct vf_domain, fid);
	struct vf_av *av;

	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP && attr->type != FI_AV_TABLE)
		return -FI_EINVAL;
	/* no asynchronous inserts (FI_EVENT), no shared AVs, no contexts */
	if ((attr->flags & FI_EVENT) || attr->name != NULL || attr->rx_ctx_bits != 0)
		return -FI_ENOSYS;
	av = calloc(1, sizeof(*av));
	if (av == NULL)
		return -FI_ENOMEM;
	av->dom = d;
	av->type = attr->type == FI_AV_MAP ? FI_AV_MAP : FI_AV_TABLE;
	if (vf_av_grow(av) != 0) {
		free(av);
		return -FI_ENOMEM;
	}
	av->av.fid.fclass = FI_CLASS_AV;
	av->av.fid.context = context;
	av->av.fid.ops = &vf_av_fi_ops;
	av->av.ops = &vf_av_ops;
	pthread_mutex_lock(&d->lock);
	d->refs++;
	pthread_mutex_unlock(&d->lock);
	*avp = &av->av;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Domain */

/*
 * viad's asynchronous errors. A peer that closes its endpoint (or exits)
 * breaks the connection: VIP_ERROR_CONN_LOST here, and the VI's
 * descriptors complete flushed, which is how the data path learns of it
 * (vf_progress_one). So this only logs, instead of libvipl-dpdk's default
 * handler printing on stderr.
 */
static int
vf_domain_close(struct fid *fid)
{
	struct vf_domain *d = vf_container_of(fid, struct vf_domain, fid.fid);

	pthread_mutex_lock(&d->lock);
	if (d->refs) {
		pthread_mutex_unlock(&d->lock);
		return -FI_EBUSY;
	}
	vf_cache_trim(d, 0);
	pthread_mutex_unlock(&d->lock);
	VipDestroyPtag(d->nic, d->ptag);
	vf_session_put(d->sess);
	if (d->pagemap_fd >= 0)
		close(d->pagemap_fd);
	pthread_mutex_destroy(&d->lock);
	free(d);
	return 0;
}

static struct fi_ops vf_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = vf_domain_close,
	.bind = vf_no_bind,
	.control = vf_no_control,
	.ops_open = vf_no_ops_open,
	.tostr = vf_no_tostr,
	.ops_set = vf_no_ops_set,
};

static int
vf_no_scalable_ep(struct fid_domain *domain, struct fi_info *info, struct fid_ep **sep,
		  void *context)
{
	(void)domain;
	(void)info;
	(void)sep;
	(void)context;
	return -FI_ENOSYS;
}

static int
vf_no_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr,
		void *context)
{
	(void)domain;
	(void)attr;
	(void)cntr;
	(void)context;
	return -FI_ENOSYS;
}

static int
vf_no_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr, struct fid_poll **pollset)
{
	(void)domain;
	(void)attr;
	(void)pollset;
	return -FI_ENOSYS;
}

static int
vf_no_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr, struct fid_stx **stx,
	      void *context)
{
	(void)domain;
	(void)attr;
	(void)stx;
	(void)context;
	return -FI_ENOSYS;
}

static int
vf_no_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr, struct fid_ep **rx_ep,
	      void *context)
{
	(void)domain;
	(void)attr;
	(void)rx_ep;
	(void)context;
	return -FI_ENOSYS;
}

static int
vf_no_query_atomic(struct fid_domain *domain, enum fi_datatype datatype, enum fi_op op,
		   struct fi_atomic_attr *attr, uint64_t flags)
{
	(void)domain;
	(void)datatype;
	(void)op;
	(void)attr;
	(void)flags;
	return -FI_ENOSYS;
}

static int
vf_no_query_collective(struct fid_domain *domain, enum fi_collective_op coll,
		       struct fi_collective_attr *attr, uint64_t flags)
{
	(void)domain;
	(void)coll;
	(void)attr;
	(void)flags;
	return -FI_ENOSYS;
}

static int
vf_endpoint2(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
	     uint64_t flags, void *context)
{
	if (flags)
		return -FI_EBADFLAGS;
	return vf_ep_open(domain, info, ep, context);
}

static struct fi_ops_domain vf_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = vf_av_open,
	.cq_open = vf_cq_open,
	.endpoint = vf_ep_open,
	.scalable_ep = vf_no_scalable_ep,
	.cntr_open = vf_no_cntr_open,
	.poll_open = vf_no_poll_open,
	.stx_ctx = vf_no_stx_ctx,
	.srx_ctx = vf_no_srx_ctx,
	.query_atomic = vf_no_query_atomic,
	.query_collective = vf_no_query_collective,
	.endpoint2 = vf_endpoint2,
};

int
vf_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **domp,
	       void *context)
{
	const char *name = info->domain_attr && info->domain_attr->name ? info->domain_attr->name
									 : vf_params()->nic;
	struct vf_domain *d;
	VIP_RETURN rc;

	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return -FI_ENOMEM;
	d->api_version = fabric->api_version;
	d->p = *vf_params();
	vf_list_init(&d->mrs);
	vf_list_init(&d->cache);
	d->sess = vf_session_of_info(info);
	if (d->sess == NULL) {
		int ret = vf_session_open(name, &d->sess);

		if (ret) {
			free(d);
			return ret;
		}
	}
	d->nic = d->sess->nic;
	d->attr = d->sess->attr;
	memcpy(d->mac, d->sess->mac, sizeof(d->mac));
	rc = VipCreatePtag(d->nic, &d->ptag);
	if (rc != VIP_SUCCESS) {
		vf_session_put(d->sess);
		free(d);
		return vf_vip_errno(rc);
	}
	d->pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	pthread_mutex_init(&d->lock, NULL);
	d->fid.fid.fclass = FI_CLASS_DOMAIN;
	d->fid.fid.context = context;
	d->fid.fid.ops = &vf_domain_fi_ops;
	d->fid.ops = &vf_domain_ops;
	d->fid.mr = &vf_mr_ops;
	*domp = &d->fid;
	return 0;
}
