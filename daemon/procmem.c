/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A client's ordinary (non-provider) memory. viad validates registrations
 * against the client's own /proc/PID/maps instead of trusting the client,
 * and moves data with process_vm_readv/writev (cross-memory attach), which
 * can only ever touch that client's address space.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

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
