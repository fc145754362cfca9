/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a client hands viad (docs/design.md section 10, "Fds" and
 * "Capabilities"): fds passed over the control socket, judged by what each
 * fd is, never by a path or by what /proc says of the client; and SysV
 * segments, judged by the client's credentials as the kernel would.
 *
 * Judging an fd must not wait: a file of a FUSE file system answers fstat
 * and fstatfs only when its daemon (the client, say) does. So the first
 * look is the kernel's own: fcntl(F_GETFL), statx with AT_STATX_DONT_SYNC
 * (cached attributes, no call into the file system) and F_GET_SEALS, which
 * only shared memory (shmem, hugetlbfs) answers; fstatfs then, on shared
 * memory only. What viad keeps is a shared memory file, a file of viad's
 * own /proc, or a pipe; anything else is refused as it arrives.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "viad.h"

/* The device of viad's /proc: a /proc/PID/mem on another procfs (another
 * PID namespace) does not name a pid viad knows. */
static dev_t
proc_dev(void)
{
	static dev_t dev;
	struct stat st;

	if (dev == 0 && stat("/proc/self", &st) == 0)
		dev = st.st_dev;
	return dev;
}

/* An fd of no file type (anon_inode) or any we do not keep, by the name the
 * kernel gives it (viad's own /proc/self/fd, never the client's words). */
static void
name_of(int fd, const char *kind, char *what, size_t size)
{
	char link[64], target[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	target[n > 0 ? n : 0] = '\0';
	snprintf(what, size, "%s (%s)", kind, n > 0 ? target : "?");
}

enum via_fd_kind
via_fd_classify(int fd, struct via_fd_info *fi)
{
	struct statx sx;
	int fl = fcntl(fd, F_GETFL);

	memset(fi, 0, sizeof(*fi));
	fi->kind = VIA_FD_REFUSED;
	if (fl < 0 || (fl & O_PATH)) {
		snprintf(fi->what, sizeof(fi->what), "an O_PATH fd");
		return fi->kind;
	}
	fi->accmode = fl & O_ACCMODE;
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC,
		  STATX_TYPE | STATX_MODE | STATX_UID | STATX_SIZE, &sx) != 0) {
		snprintf(fi->what, sizeof(fi->what), "an fd statx cannot examine");
		return fi->kind;
	}
	fi->uid = sx.stx_uid;
	fi->size = sx.stx_size;
	switch (sx.stx_mode & S_IFMT) {
	case S_IFIFO:
		fi->kind = VIA_FD_PIPE;
		snprintf(fi->what, sizeof(fi->what), "a pipe open for %s",
			 fi->accmode == O_RDONLY ? "reading" : "writing");
		break;
	case S_IFREG:
		fi->seals = fcntl(fd, F_GET_SEALS);
		if (fi->seals >= 0) {
			struct statfs sf;

			/* shmem or hugetlbfs: both answer statfs at once */
			if (fstatfs(fd, &sf) != 0) {
				snprintf(fi->what, sizeof(fi->what), "a sealable file statfs fails on");
				break;
			}
			fi->hugetlb = sf.f_type == HUGETLBFS_MAGIC;
			fi->kind = VIA_FD_SHMEM;
			snprintf(fi->what, sizeof(fi->what), "%s",
				 fi->hugetlb ? "a hugetlbfs file" : "a shared memory file");
		} else if (makedev(sx.stx_dev_major, sx.stx_dev_minor) == proc_dev()) {
			fi->kind = VIA_FD_PROC;
			name_of(fd, "a file of /proc", fi->what, sizeof(fi->what));
		} else {
			name_of(fd, "a file that is not shared memory", fi->what, sizeof(fi->what));
		}
		break;
	case S_IFSOCK:
		name_of(fd, "a socket", fi->what, sizeof(fi->what));
		break;
	case S_IFDIR:
		name_of(fd, "a directory", fi->what, sizeof(fi->what));
		break;
	case S_IFCHR:
		name_of(fd, "a character device", fi->what, sizeof(fi->what));
		break;
	case S_IFBLK:
		name_of(fd, "a block device", fi->what, sizeof(fi->what));
		break;
	default:
		name_of(fd, "an anonymous inode", fi->what, sizeof(fi->what));
		break;
	}
	return fi->kind;
}

int
via_fd_check_share_file(const struct via_session *s, const struct via_fd_info *fi,
			const char **why)
{
	if (fi->kind != VIA_FD_SHMEM)
		*why = "not shared memory";
	else if (fi->hugetlb)
		*why = "on hugetlbfs: a page the pool cannot give would fault in viad";
	else if (fi->size != VIA_SHARE_FILE_SIZE)
		*why = "not VIA_SHARE_FILE_SIZE long";
	else if (!(fi->seals & F_SEAL_SHRINK))
		*why = "not sealed against shrinking";
	else if (fi->accmode != O_RDWR)
		*why = "not open for reading and writing";
	else if (fi->uid != s->uid && s->uid != 0)
		*why = "not the client's own";
	else
		return 0;
	return -EINVAL;
}

int
via_fd_check_object(const struct via_fd_info *fi, uint64_t offset, uint64_t len, bool *writable,
		    const char **why)
{
	if (fi->kind != VIA_FD_SHMEM)
		*why = "not shared memory";
	else if (fi->hugetlb)
		*why = "on hugetlbfs: a page the pool cannot give would fault in viad";
	else if (!(fi->seals & F_SEAL_SHRINK))
		*why = "not sealed against shrinking";
	else if (fi->accmode == O_WRONLY)
		*why = "open for writing only";
	else if (offset + len < offset || offset + len > fi->size)
		*why = "shorter than the range";
	else {
		/* the access the client holds on it, no more */
		*writable = fi->accmode == O_RDWR &&
			    !(fi->seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE));
		return 0;
	}
	return -EINVAL;
}

int
via_fd_check_proc_mem(const struct via_session *s, int fd, const struct via_fd_info *fi,
		      const char **why)
{
	char link[64], target[96], *p;
	unsigned long pid = 0;
	ssize_t n;

	if (fi->kind != VIA_FD_PROC || fi->accmode != O_RDWR) {
		*why = "not a /proc/PID/mem open for reading and writing";
		return -EINVAL;
	}
	/* the kernel's name of it on viad's procfs: /proc/PID/mem or
	 * /proc/PID/task/TID/mem; PID must be the process that connected */
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	target[n > 0 ? n : 0] = '\0';
	p = strstr(target, "/proc/");
	if (p != NULL)
		pid = strtoul(p + 6, &p, 10);
	if (n <= 4 || strcmp(target + n - 4, "/mem") != 0 || pid == 0 || *p != '/' ||
	    (pid_t)pid != s->pid) {
		*why = "not the /proc/PID/mem of the process that connected";
		return -EINVAL;
	}
	return 0;
}

int
via_fd_check_witness(const struct via_fd_info *fi, const char **why)
{
	if (fi->kind != VIA_FD_PIPE || fi->accmode != O_RDONLY) {
		*why = "not the read end of a pipe";
		return -EINVAL;
	}
	return 0;
}

int
via_client_fd_check(struct via_session *s, uint32_t kind, int **slot, const char **why)
{
	const struct via_fd_info *fi = &s->in_fd_info;
	int rc;

	*why = "no fd came with it";
	if (s->in_fd < 0)
		return -EBADF;
	switch (kind) {
	case VIA_CTL_FD_SHARE_FILE:
		*slot = &s->share_fd;
		rc = via_fd_check_share_file(s, fi, why);
		break;
	case VIA_CTL_FD_PROC_MEM:
		*slot = &s->mem_fd;
		rc = via_fd_check_proc_mem(s, s->in_fd, fi, why);
		break;
	case VIA_CTL_FD_EXEC_WITNESS:
		*slot = &s->witness_fd;
		rc = via_fd_check_witness(fi, why);
		break;
	default:
		*why = "no such kind";
		return -EINVAL;
	}
	if (rc == 0 && **slot >= 0) {
		*why = "given before";
		rc = -EALREADY;
	}
	return rc;
}

bool
via_sysv_allowed(const struct via_session *s, const struct ipc_perm *p, bool write)
{
	unsigned mode = p->mode, want = write ? 0222 : 0444, i;
	bool member = s->gid == p->gid || s->gid == p->cgid;

	/* as the kernel's ipcperms(): root may (CAP_IPC_OWNER), else the
	 * owner's bits, else the group's, else the others' */
	if (s->uid == 0)
		return true;
	for (i = 0; i < s->nb_groups && !member; i++)
		member = s->groups[i] == p->gid || s->groups[i] == p->cgid;
	if (s->uid == p->uid || s->uid == p->cuid)
		mode &= 0700;
	else if (member)
		mode &= 0070;
	else
		mode &= 0007;
	return (mode & want) != 0;
}
