/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * seccomp_exec ALLOWED_FILE PROGRAM [ARGS...]: run PROGRAM under a seccomp
 * filter that allows the system calls named in ALLOWED_FILE (one a line)
 * and fails every other with EPERM, as systemd does for a unit's
 * SystemCallFilter= with SystemCallErrorNumber=EPERM. tests/security/
 * ops_privs.sh gives it viad.service's list, expanded by systemd-analyze,
 * so that viad is shown to start and serve under it without systemd.
 * A name this libseccomp does not know is skipped (systemd skips it too).
 */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	char name[128];
	unsigned allowed = 0;
	scmp_filter_ctx ctx;
	FILE *f;
	int rc;

	if (argc < 3) {
		fprintf(stderr, "usage: seccomp_exec ALLOWED_FILE PROGRAM [ARGS...]\n");
		return 2;
	}
	f = fopen(argv[1], "r");
	ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	if (f == NULL || ctx == NULL) {
		fprintf(stderr, "seccomp_exec: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	while (fscanf(f, "%127s", name) == 1) {
		int nr = seccomp_syscall_resolve_name(name);

		if (nr == __NR_SCMP_ERROR)
			continue;
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
		if (rc != 0) {
			fprintf(stderr, "seccomp_exec: %s: %s\n", name, strerror(-rc));
			return 2;
		}
		allowed++;
	}
	fclose(f);
	rc = seccomp_load(ctx);
	if (rc != 0) {
		fprintf(stderr, "seccomp_exec: loading the filter: %s\n", strerror(-rc));
		return 2;
	}
	fprintf(stderr, "seccomp_exec: %u system calls allowed, the others fail with EPERM\n",
		allowed);
	execv(argv[2], argv + 2);
	fprintf(stderr, "seccomp_exec: %s: %s\n", argv[2], strerror(errno));
	return 127;
}
