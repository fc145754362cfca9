/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory shared with clients: memfd segments (hugepages when the pool has
 * them: memfd needs no hugetlbfs mount and leaves no file behind when a
 * process dies) and a first-fit allocator for objects inside a segment.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <linux/memfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "viad.h"

#define HUGEPAGE_2M (2ull << 20)

static int
map_memfd(struct via_shm *m, const char *name, uint64_t len, unsigned flags)
{
	void *va;
	int fd;

	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | flags);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) < 0)
		goto fail;
	/* hugetlb pages are reserved at mmap time: an empty pool fails here
	 * rather than with SIGBUS on first touch. MAP_POPULATE prefaults, so
	 * the data path never takes a page fault. */
	va = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (va == MAP_FAILED)
		goto fail;
	/* the size is fixed for the segment's life: a client cannot shrink it
	 * under viad's mapping (which would SIGBUS viad) */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 &&
	    errno != EINVAL) {
		munmap(va, len);
		goto fail;
	}
	m->fd = fd;
	m->va = va;
	m->len = len;
	return 0;
fail:
	{
		int err = -errno;

		close(fd);
		return err;
	}
}

int
via_shm_create(struct via_shm *m, const char *name, uint64_t len, bool huge)
{
	uint64_t huge_len = VIA_ALIGN_UP(len, HUGEPAGE_2M);
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	int rc;

	if (len == 0)
		return -EINVAL;
	m->guard = 0;
	if (huge) {
		rc = map_memfd(m, name, huge_len, MFD_HUGETLB | MFD_HUGE_2MB);
		if (rc == 0) {
			m->hugepages = true;
			return 0;
		}
		VLOG_WARN("%s: no 2 MiB hugepages for %llu bytes (%s); using normal pages "
			  "(reserve hugepages: see config/hugepages.md)", name,
			  (unsigned long long)huge_len, strerror(-rc));
	}
	rc = map_memfd(m, name, VIA_ALIGN_UP(len, page), 0);
	if (rc == 0)
		m->hugepages = false;
	return rc;
}

void
via_shm_destroy(struct via_shm *m)
{
	via_guard_remove(m->guard);
	m->guard = 0;
	if (m->va != NULL)
		munmap(m->va, m->len);
	if (m->fd >= 0)
		close(m->fd);
	m->va = NULL;
	m->fd = -1;
	m->len = 0;
}

int
via_arena_init(struct via_arena *a, uint64_t off, uint64_t len)
{
	a->cap_free = 16;
	a->free = malloc(a->cap_free * sizeof(*a->free));
	if (a->free == NULL)
		return -ENOMEM;
	off = VIA_ALIGN_UP(off, (uint64_t)VIA_SHM_ALIGN);
	a->free[0].off = off;
	a->free[0].len = len > off ? len - off : 0;
	a->nb_free = a->free[0].len ? 1 : 0;
	return 0;
}

void
via_arena_fini(struct via_arena *a)
{
	free(a->free);
	a->free = NULL;
	a->nb_free = 0;
}

int
via_arena_alloc(struct via_arena *a, uint64_t len, uint64_t *off)
{
	uint32_t i;

	len = VIA_ALIGN_UP(len, (uint64_t)VIA_SHM_ALIGN);
	for (i = 0; i < a->nb_free; i++) {
		struct via_arena_extent *e = &a->free[i];

		if (e->len < len)
			continue;
		*off = e->off;
		e->off += len;
		e->len -= len;
		if (e->len == 0) {
			memmove(e, e + 1, (a->nb_free - i - 1) * sizeof(*e));
			a->nb_free--;
		}
		return 0;
	}
	return -ENOMEM;
}

void
via_arena_free(struct via_arena *a, uint64_t off, uint64_t len)
{
	struct via_arena_extent *e;
	uint32_t i;

	len = VIA_ALIGN_UP(len, (uint64_t)VIA_SHM_ALIGN);
	for (i = 0; i < a->nb_free && a->free[i].off < off; i++)
		;
	/* merge with the extent before and/or after */
	if (i > 0 && a->free[i - 1].off + a->free[i - 1].len == off) {
		e = &a->free[i - 1];
		e->len += len;
		if (i < a->nb_free && e->off + e->len == a->free[i].off) {
			e->len += a->free[i].len;
			memmove(&a->free[i], &a->free[i + 1], (a->nb_free - i - 1) * sizeof(*e));
			a->nb_free--;
		}
		return;
	}
	if (i < a->nb_free && off + len == a->free[i].off) {
		a->free[i].off = off;
		a->free[i].len += len;
		return;
	}
	if (a->nb_free == a->cap_free) {
		e = realloc(a->free, 2 * a->cap_free * sizeof(*e));
		if (e == NULL) {
			/* the extent is lost to this segment, which only costs
			 * space until the session ends */
			VLOG_WARN("arena: out of memory, leaking %llu bytes of a segment",
				  (unsigned long long)len);
			return;
		}
		a->free = e;
		a->cap_free *= 2;
	}
	memmove(&a->free[i + 1], &a->free[i], (a->nb_free - i) * sizeof(*e));
	a->free[i].off = off;
	a->free[i].len = len;
	a->nb_free++;
}

int
via_arena_restore(struct via_arena *a, const struct via_arena_extent *e, uint32_t n)
{
	a->cap_free = n > 16 ? n : 16;
	a->free = malloc(a->cap_free * sizeof(*a->free));
	if (a->free == NULL)
		return -ENOMEM;
	memcpy(a->free, e, n * sizeof(*e));
	a->nb_free = n;
	return 0;
}
