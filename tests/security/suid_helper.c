/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A set-user-ID root program for the red-team suite's class forkexec
 * (redteam.c installs a copy owned by root, mode 4755): it creates a SysV
 * shared memory segment only root may use (0600), attaches it at
 * SEC_SUID_SEGMENT, fills it with SEC_SUID_CANARY and prints
 * "SHMID ADDRESS" on stdout; when stdin closes it checks the segment and
 * removes it. Exit status: 0 intact, SEC_ACCEPTED written to, SEC_SETUP.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/shm.h>
#include <unistd.h>

#include "sec.h"

int
main(void)
{
	int id = shmget(IPC_PRIVATE, SEC_SUID_LEN, IPC_CREAT | 0600);
	uint8_t *p = id >= 0 ? shmat(id, SEC_SUID_SEGMENT, 0) : (void *)-1;
	char b;
	size_t i;
	int rc = 0;

	if (p == (void *)-1)
		return SEC_SETUP;
	memset(p, SEC_SUID_CANARY, SEC_SUID_LEN);
	printf("%d %p\n", id, (void *)p);
	fflush(stdout);
	while (read(STDIN_FILENO, &b, 1) > 0)
		;
	for (i = 0; i < SEC_SUID_LEN; i++) {
		if (p[i] != SEC_SUID_CANARY) {
			rc = SEC_ACCEPTED;
			break;
		}
	}
	shmctl(id, IPC_RMID, NULL);
	return rc;
}
