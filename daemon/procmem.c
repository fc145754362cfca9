/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Access to a client's memory (docs/design.md section 7), always with the
 * client's own rights and never through what /proc says of it (section 10,
 * "Capabilities"), as rdma-core's ibv_reg_mr pins pages through the
 * caller's own address space:
 *  - provider memory, the share file and shared objects are mapped by viad
 *    and moved with loads and stores: what viad maps is an fd the client
 *    passed (a memfd sealed against shrinking, mapped only as the fd's
 *    access mode allows) or a SysV segment its credentials may use
 *    (attached read-only where it may only read);
 *  - copied ranges go through the client program's own /proc/self/mem,
 *    given at session start: that fd reaches the address space of the
 *    program that opened it and no other, with that program's rights (a
 *    write to its read-only shared mapping fails), and dies with it: an
 *    exec, which replaces the address space, ends viad's access to it
 *    (pread returns 0), and ends the session (via_procmem_alive()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

#include "viad.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ  22   /* Linux 5.14 */
#define MADV_POPULATE_WRITE 23
#endif

bool
via_procmem_alive(const struct via_session *s)
{
	uint8_t b;

	/* 0 bytes: no address space behind the fd any more; an unmapped
	 * address (EIO) or a byte: the program is there */
	return s->mem_fd < 0 || pread(s->mem_fd, &b, 1, 0) != 0;
}

/* Fault in what viad mapped of a client, as writable as mapped: a page the
 * client's object cannot give is an error here, not a bus error later. */
static int
populate(void *va, uint64_t len, bool writable)
{
	if (madvise(va, len, writable ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) == 0)
		return 0;
	return errno == EINVAL ? 0 : -EFAULT;    /* EINVAL: a kernel before 5.14 */
}

int
via_object_map_fd(int fd, const struct via_fd_info *fi, uint64_t offset, uint64_t len,
		  struct via_shm *out, bool *writable, const char **why)
{
	void *va;
	int rc = via_fd_check_object(fi, offset, len, writable, why);

	if (rc != 0)
		return rc;
	va = mmap(NULL, len, *writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd,
		  (off_t)offset);
	if (va == MAP_FAILED) {
		*why = "mmap failed";
		return -errno;
	}
	rc = populate(va, len, *writable);
	if (rc != 0) {
		*why = "its pages cannot be faulted in";
		munmap(va, len);
		return rc;
	}
	*out = (struct via_shm){ .fd = -1, .va = va, .len = len };
	return 0;
}

/* Whether segment @p id is still the one @p was described. */
static bool
same_segment(int id, const struct shmid_ds *was)
{
	struct shmid_ds now;

	return shmctl(id, IPC_STAT, &now) == 0 && now.shm_perm.__key == was->shm_perm.__key &&
	       now.shm_perm.__seq == was->shm_perm.__seq && now.shm_perm.uid == was->shm_perm.uid &&
	       now.shm_perm.gid == was->shm_perm.gid && now.shm_perm.mode == was->shm_perm.mode &&
	       now.shm_ctime == was->shm_ctime && now.shm_segsz == was->shm_segsz;
}

int
via_sysv_attach(const struct via_session *s, int shmid, uint64_t offset, uint64_t len,
		struct via_shm *out, bool *writable, const char **why)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), seg_len;
	struct shmid_ds ds;
	uint8_t *va;
	int rc;

	if (shmid < 0 || shmctl(shmid, IPC_STAT, &ds) != 0) {
		*why = "no such SysV segment";
		return -EINVAL;
	}
	if (!via_sysv_allowed(s, &ds.shm_perm, false)) {
		*why = "a SysV segment the client may not read";
		return -EACCES;
	}
	seg_len = VIA_ALIGN_UP((uint64_t)ds.shm_segsz, page);
	if (offset % page != 0 || offset + len < offset || offset + len > seg_len) {
		*why = "shorter than the range";
		return -EINVAL;
	}
	*writable = via_sysv_allowed(s, &ds.shm_perm, true);
	/* root attaches it, as the client could itself, no further */
	va = shmat(shmid, NULL, *writable ? 0 : SHM_RDONLY);
	if (va == (void *)-1) {
		*why = "shmat failed";
		return -errno;
	}
	/* its owner may have changed it between the look and the attach */
	if (!same_segment(shmid, &ds)) {
		shmdt(va);
		*why = "the segment changed while viad attached it";
		return -EAGAIN;
	}
	/* keep only the range: the rest of the attachment goes */
	if ((offset > 0 && munmap(va, offset) != 0) ||
	    (seg_len > offset + len && munmap(va + offset + len, seg_len - offset - len) != 0)) {
		shmdt(va);
		*why = "the segment is not in pages of the system's size (hugetlb)";
		return -EINVAL;
	}
	rc = populate(va + offset, len, *writable);
	if (rc != 0) {
		munmap(va + offset, len);
		*why = "its pages cannot be faulted in";
		return rc;
	}
	*out = (struct via_shm){ .fd = -1, .va = va + offset, .len = len };
	return 0;
}

void *
via_mem_direct(const struct via_mr *mr, uint64_t va)
{
	const struct via_pmem *p = mr->pmem;

	return p != NULL ? p->shm.va + (va - p->client_va) : NULL;
}

/* Log once per session (@p flag), from any thread. */
static bool
first_time(const bool *flag)
{
	return !__atomic_exchange_n((bool *)flag, true, __ATOMIC_RELAXED);
}

int
via_mem_copyv(const struct via_session *s, uint64_t va, const struct iovec *iov, unsigned cnt,
	      size_t len, bool write)
{
	ssize_t n;

	if (s->mem_fd < 0)
		return -ESRCH;
	n = write ? pwritev(s->mem_fd, iov, (int)cnt, (off_t)va)
		  : preadv(s->mem_fd, iov, (int)cnt, (off_t)va);
	if (n == (ssize_t)len)
		return 0;
	if (n == 0) {
		/* no address space behind the fd: the program exec'd or exited */
		if (first_time(&s->mem_gone_logged))
			VLOG_WARN("session %u (pid %d): the program that registered its copied "
				  "regions is gone (exec or exit): they are no longer reachable",
				  s->id, (int)s->pid);
		return -ESRCH;
	}
	/* the program's own rights do not reach it: unmapped, or a write to
	 * pages it may only read (the descriptor fails, §9.5.3) */
	if (first_time(&s->copy_fault_logged))
		VLOG_WARN("session %u (pid %d): a copied %s of %zu bytes at %#" PRIx64 " failed "
			  "through its /proc/self/mem (%s): not mapped, or not %s",
			  s->id, (int)s->pid, write ? "write" : "read", len, va,
			  strerror(n < 0 ? errno : EIO), write ? "writable" : "readable");
	return -EFAULT;
}

/* A direct access of @p len bytes between @p dst and @p src: -EFAULT if it
 * hit a page the client took away (guard.c patched it; the bytes are
 * lost). The barriers keep the copy between the two looks. */
static int
direct_copy(void *dst, const void *src, size_t len)
{
	unsigned hits = via_guard_hits;

	__asm__ volatile("" ::: "memory");
	memcpy(dst, src, len);
	__asm__ volatile("" ::: "memory");
	return via_guard_hits == hits ? 0 : -EFAULT;
}

int
via_mem_read(const struct via_session *s, const struct via_mr *mr, uint64_t va, void *dst,
	     size_t len)
{
	void *p = via_mem_direct(mr, va);

	return p != NULL ? direct_copy(dst, p, len)
			 : via_mem_copyv(s, va, &(struct iovec){ dst, len }, 1, len, false);
}

int
via_mem_write(const struct via_session *s, const struct via_mr *mr, uint64_t va, const void *src,
	      size_t len)
{
	void *p = via_mem_direct(mr, va);

	return p != NULL ? direct_copy(p, src, len)
			 : via_mem_copyv(s, va, &(struct iovec){ (void *)src, len }, 1, len, true);
}
