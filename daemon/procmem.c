/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Access to a client's memory. Provider memory is mapped by viad too and
 * moved in place. Ordinary memory is validated at registration against the
 * client's own /proc/PID/maps (never trusting the client) and moved with
 * process_vm_readv/writev (cross-memory attach), which can only ever touch
 * that client's address space.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

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

void *
via_mem_direct(const struct via_mr *mr, uint64_t va)
{
	const struct via_pmem *p = mr->pmem;

	return p != NULL ? p->shm.va + (va - p->client_va) : NULL;
}

static int
procmem_rw(const struct via_session *s, uint64_t va, void *buf, size_t len, bool write)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)va, .iov_len = len };
	ssize_t n;

	n = write ? process_vm_writev(s->pid, &local, 1, &remote, 1, 0)
		  : process_vm_readv(s->pid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	return n < 0 ? -errno : -EFAULT;
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
