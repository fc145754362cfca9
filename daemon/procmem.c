/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Access to a client's memory. Provider memory and ordinary memory
 * registered in place are mapped by viad too and moved with loads and
 * stores. Copied ordinary memory is validated at registration against the
 * client's /proc/PID/maps and moved through the client program's own
 * /proc/self/mem (given at session start): that fd reaches the address
 * space of the program that opened it and no other, so an exec, which
 * replaces the address space, ends viad's access to it (pread returns 0).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "viad.h"

int
via_procmem_check(pid_t pid, uint64_t addr, uint64_t len, bool *writable)
{
	uint64_t cur = addr, end = addr + len;
	char path[64], line[512];
	bool wr = true;
	FILE *f;
	int rc = -EFAULT;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return -errno;
	/* maps is sorted by address: walk the mappings covering [cur, end) */
	while (cur < end && fgets(line, sizeof(line), f) != NULL) {
		uint64_t lo, hi;
		char perms[5];

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s", &lo, &hi, perms) != 3)
			continue;
		if (hi <= cur)
			continue;
		if (lo > cur)
			break;       /* a hole */
		if (perms[0] != 'r')
			break;       /* unreadable pages cannot be registered */
		if (perms[1] != 'w')
			wr = false;
		cur = hi;
	}
	if (cur >= end) {
		*writable = wr;
		rc = 0;
	}
	fclose(f);
	return rc;
}

/* The mapping of process @p pid that holds all of [addr, addr+len). */
struct vma {
	uint64_t lo, hi, offset;
	unsigned maj, min;
	unsigned long inode;
	char perms[5];
	char path[64];
};

static int
find_vma(pid_t pid, uint64_t addr, uint64_t len, struct vma *v)
{
	char path[64], line[512];
	int rc = -EINVAL, at = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return -errno;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %lu %n", &v->lo,
			   &v->hi, v->perms, &v->offset, &v->maj, &v->min, &v->inode, &at) < 7)
			continue;
		if (addr >= v->lo && addr + len <= v->hi) {
			snprintf(v->path, sizeof(v->path), "%s", at > 0 ? line + at : "");
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

int
via_procmem_object(pid_t pid, uint64_t addr, uint64_t len, struct via_shm *out, bool *writable)
{
	struct vma v, again;
	char path[96];
	struct stat st;
	int fd, seals, rc;
	void *va;

	rc = find_vma(pid, addr, len, &v);
	if (rc != 0 || v.perms[3] != 's' || v.perms[0] != 'r')
		return rc != 0 ? rc : -EINVAL;
	*writable = v.perms[1] == 'w';
	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, v.lo, v.hi);
	fd = open(path, (*writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/*
	 * The client may have swapped the mapping since maps was read: the
	 * object opened must be the one it maps there now, as writable as
	 * before, so that viad (root) writes only to what the client can.
	 * And it must not shrink under viad's mapping (a fault there would
	 * be viad's): a memfd sealed against it, or SysV shared memory.
	 */
	seals = fcntl(fd, F_GET_SEALS);
	rc = fstat(fd, &st) != 0 ? -errno : find_vma(pid, addr, len, &again);
	if (rc == 0 && (st.st_ino != v.inode || major(st.st_dev) != v.maj ||
			minor(st.st_dev) != v.min || again.lo != v.lo || again.inode != v.inode ||
			strcmp(again.perms, v.perms) != 0))
		rc = -EAGAIN;
	if (rc == 0 && !(seals >= 0 && (seals & F_SEAL_SHRINK)) &&
	    strncmp(v.path, "/SYSV", 5) != 0)
		rc = -EPERM;
	if (rc == 0) {
		va = mmap(NULL, len, *writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd,
			  (off_t)(v.offset + (addr - v.lo)));
		if (va == MAP_FAILED)
			rc = -errno;
		else
			*out = (struct via_shm){ .fd = -1, .va = va, .len = len };
	}
	close(fd);
	return rc;
}

void *
via_mem_direct(const struct via_mr *mr, uint64_t va)
{
	const struct via_pmem *p = mr->pmem;

	return p != NULL ? p->shm.va + (va - p->client_va) : NULL;
}

static int
procmem_rw(const struct via_session *s, uint64_t va, void *buf, size_t len, bool write)
{
	ssize_t n;

	if (s->mem_fd < 0)
		return -ESRCH;
	n = write ? pwrite(s->mem_fd, buf, len, (off_t)va) : pread(s->mem_fd, buf, len, (off_t)va);
	if (n == (ssize_t)len)
		return 0;
	if (n == 0) {
		/* no address space behind the fd: the program exec'd or exited */
		bool *logged = (bool *)&s->mem_gone_logged;

		if (!__atomic_exchange_n(logged, true, __ATOMIC_RELAXED))
			VLOG_WARN("session %u (pid %d): the program that registered its copied "
				  "regions is gone (exec or exit): they are no longer reachable",
				  s->id, (int)s->pid);
		return -ESRCH;
	}
	return -EFAULT;
}

int
via_mem_read(const struct via_session *s, const struct via_mr *mr, uint64_t va, void *dst,
	     size_t len)
{
	void *p = via_mem_direct(mr, va);

	if (p != NULL) {
		memcpy(dst, p, len);
		return 0;
	}
	return procmem_rw(s, va, dst, len, false);
}

int
via_mem_write(const struct via_session *s, const struct via_mr *mr, uint64_t va, const void *src,
	      size_t len)
{
	void *p = via_mem_direct(mr, va);

	if (p != NULL) {
		memcpy(p, src, len);
		return 0;
	}
	return procmem_rw(s, va, (void *)src, len, true);
}
