/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The process's registered pages: locked, counted, and shared with viad in
 * place (VIA §3.2: the NIC reaches registered memory directly; issue 12).
 *
 * Locking. VIA §9.5.3: "registered pages are locked into physical memory",
 * which only the owning process can do. The same pages may be registered
 * several times, through several NICs (VIA §3.2.1), and munlock does not
 * nest, so each page (key: page number) counts the registrations covering
 * it; it is unlocked when its count drops to zero. Registering or
 * deregistering costs O(pages), whatever the number of other registrations.
 *
 * Sharing. The process has one share file: a memfd, VIA_SHARE_FILE_SIZE
 * long and sparse, sealed against shrinking, whose byte at offset A stands
 * for the byte at address A. A private anonymous page (heap, memalign,
 * anonymous mmap, a thread's stack) that gets registered is moved into it:
 * its contents are written to the file at its own address and the file is
 * mapped MAP_SHARED | MAP_FIXED over it. The address and the contents stay;
 * viad maps the same file and reaches the page with plain loads and stores,
 * and transmits from it zero-copy, as from provider memory. Offsets equal to
 * addresses make any registered range one contiguous piece of the file, and
 * let the kernel merge neighbouring in-place pages into one mapping. When no
 * registration covers a page any more it is moved back into private memory
 * and its file page is punched out.
 *
 * The switch loses no write. Other threads may write to the same pages (a
 * malloc'd buffer shares its pages with other chunks) while a page is copied
 * and remapped. Before the copy, the range is write-protected with
 * userfaultfd: a write from another thread, or from the kernel on its
 * behalf, then sleeps in the fault until the userfaultfd is closed, after
 * the new mapping is in place, and is retried on the new page. Between the
 * protection and the close this thread only makes system calls: it takes
 * no lock, allocates nothing and runs no signal handler (signals are
 * blocked), since a thread that holds a lock may be the one asleep. An
 * unprivileged process whose kernel refuses it kernel-mode faults
 * (vm.unprivileged_userfaultfd = 0) gets a user-mode-only userfaultfd: a
 * system call of another thread that writes into the range during the
 * switch then fails with EFAULT instead of sleeping (docs/design.md).
 *
 * Memory that is shared already (SysV shm, a memfd, a shared file mapping)
 * is never moved: viad maps the same object. What cannot move in place (a
 * private file mapping, read-only pages, the main stack, the registering
 * thread's own stack, or no userfaultfd) is registered as copied: viad
 * reaches it through this program's /proc/self/mem, with the reason in the
 * request for its log line.
 *
 * fork(): a child gets private copies of in-place pages, as it would of
 * ordinary memory (an atfork handler copies them before fork() returns in
 * the child), and no registrations: the pages of its parent stay shared
 * with viad and the parent only.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "vipl_priv.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   /* Linux 5.14 */
#endif

#define SHARE_FILE_NAME "vipl-shared"

/* page_counts values: the registrations covering the page, and whether the
 * page is in place (mapped from the share file) */
#define PAGE_IN_PLACE   (UINT64_C(1) << 63)
#define PAGE_COUNT_MASK (PAGE_IN_PLACE - 1)

static struct via_hmap page_counts = VIA_HMAP_INITIALIZER;
static pthread_mutex_t pages_lock = PTHREAD_MUTEX_INITIALIZER;
static int share_fd = -1;
/* flags for userfaultfd(2) that gave write protection, or -1 (none): probed once */
static int uffd_flags = -2;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static size_t
page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* ---- /proc/self/maps, read without allocating ----------------------------- */

struct maps_reader {
	int fd;
	size_t len, pos;
	char buf[4096];
};

struct vma {
	uintptr_t lo, hi;
	uint64_t offset;
	char perms[5];
	unsigned maj, min;  /* the device of its file */
	unsigned long inode;
	char path[64];      /* truncated: enough to tell the kinds apart */
};

static int
maps_open(struct maps_reader *r)
{
	r->fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	r->len = r->pos = 0;
	return r->fd < 0 ? -errno : 0;
}

/* The next line into @p line (NUL-terminated, cut at @p size). @return false at the end */
static bool
maps_line(struct maps_reader *r, char *line, size_t size)
{
	size_t n = 0;

	for (;;) {
		if (r->pos == r->len) {
			ssize_t got = read(r->fd, r->buf, sizeof(r->buf));

			if (got <= 0) {
				line[n] = '\0';
				return n > 0;
			}
			r->len = (size_t)got;
			r->pos = 0;
		}
		char c = r->buf[r->pos++];

		if (c == '\n') {
			line[n] = '\0';
			return true;
		}
		if (n + 1 < size)
			line[n++] = c;
	}
}

static bool
maps_next(struct maps_reader *r, struct vma *v)
{
	char line[256];
	int path_at = 0;

	while (maps_line(r, line, sizeof(line))) {
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s %" SCNx64 " %x:%x %lu %n", &v->lo,
			   &v->hi, v->perms, &v->offset, &v->maj, &v->min, &v->inode, &path_at) < 7)
			continue;
		snprintf(v->path, sizeof(v->path), "%s", path_at > 0 ? line + path_at : "");
		return true;
	}
	return false;
}

static bool
vma_is_share_file(const struct vma *v)
{
	return strncmp(v->path, "/memfd:" SHARE_FILE_NAME, strlen("/memfd:" SHARE_FILE_NAME)) == 0;
}

/*
 * Whether [@p base, @p end) overlaps the calling thread's stack, whichever
 * mappings it is made of now (mlock of earlier registrations splits it):
 * the switch would write-protect pages this very thread writes.
 */
static bool
on_own_stack(uintptr_t base, uintptr_t end)
{
	pthread_attr_t attr;
	void *lo;
	size_t len;
	bool on = false;

	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return false;    /* classify() still catches the mapping of this frame */
	if (pthread_attr_getstack(&attr, &lo, &len) == 0)
		on = base < (uintptr_t)lo + len && end > (uintptr_t)lo;
	pthread_attr_destroy(&attr);
	return on;
}

/*
 * Which path [@p base, @p end) can take: VIA_CTL_COPIED_NONE if every
 * mapping in it is private anonymous and writable, or already in place;
 * with *@p obj the mapping if one shared mapping holds all of it (a shared
 * object viad may map itself; obj->hi 0 if not).
 * @return 0 and @p reason; -EINVAL (a hole or unreadable pages)
 */
static int
classify(uintptr_t base, uintptr_t end, uint32_t *reason, struct vma *obj)
{
	uintptr_t cur = base, here = (uintptr_t)&cur;
	struct maps_reader r;
	struct vma v;
	int rc = -EINVAL;

	*reason = end > VIA_SHARE_FILE_SIZE ? VIA_CTL_COPIED_HIGH
		  : on_own_stack(base, end) ? VIA_CTL_COPIED_STACK
					    : VIA_CTL_COPIED_NONE;
	obj->lo = obj->hi = 0;
	if (maps_open(&r) != 0)
		return -errno;
	while (cur < end && maps_next(&r, &v)) {
		uint32_t why = VIA_CTL_COPIED_NONE;

		if (v.hi <= cur)
			continue;
		if (v.lo > cur || v.perms[0] != 'r')
			break;                 /* a hole, or pages nobody can read */
		if (v.perms[3] == 's' && cur == base && v.hi >= end && !vma_is_share_file(&v))
			*obj = v;
		cur = v.hi;
		if (vma_is_share_file(&v))
			continue;
		if (v.perms[1] != 'w')
			why = VIA_CTL_COPIED_READ_ONLY;
		else if (v.perms[3] == 's')
			why = VIA_CTL_COPIED_SHARED;
		else if (v.inode != 0)
			why = VIA_CTL_COPIED_FILE;
		else if (strcmp(v.path, "[stack]") == 0 || (here >= v.lo && here < v.hi))
			why = VIA_CTL_COPIED_STACK;   /* it grows down / this thread writes it */
		else if (v.path[0] != '\0' && strcmp(v.path, "[heap]") != 0 &&
			 strncmp(v.path, "[anon:", 6) != 0)
			why = VIA_CTL_COPIED_FILE;    /* [vvar] and the like */
		if (*reason == VIA_CTL_COPIED_NONE)
			*reason = why;
	}
	if (cur >= end)
		rc = 0;
	close(r.fd);
	return rc;
}

/*
 * An fd of the file @p v maps, found among the process's own, open for
 * reading and writing if the mapping writes: viad maps the object from it
 * (with the fd's access, no more). @return a new fd (the caller closes
 * it), or -1 if the process has none
 */
static int
object_fd(const struct vma *v)
{
	bool write = v->perms[1] == 'w';
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *e;
	int fd = -1;

	while (dir != NULL && fd < 0 && (e = readdir(dir)) != NULL) {
		int n = atoi(e->d_name), fl;
		struct stat st;
		char path[64];

		if (e->d_name[0] == '.' || n == dirfd(dir) || fstat(n, &st) != 0 ||
		    st.st_dev != makedev(v->maj, v->min) || st.st_ino != v->inode)
			continue;
		fl = fcntl(n, F_GETFL);
		if (!write || (fl & O_ACCMODE) == O_RDWR) {
			fd = fcntl(n, F_DUPFD_CLOEXEC, 0);
		} else {
			/* its file again, for writing, as the mapping does */
			snprintf(path, sizeof(path), "/proc/self/fd/%d", n);
			fd = open(path, O_RDWR | O_CLOEXEC);
		}
	}
	if (dir != NULL)
		closedir(dir);
	return fd;
}

/*
 * A range in the one shared mapping @p v: SysV shared memory by its id, a
 * memfd sealed against shrinking by an fd of it; copied if neither.
 */
static void
place_object(uintptr_t base, const struct vma *v, struct vipl_pages_placement *out)
{
	int seals;

	out->offset = v->offset + (base - v->lo);
	if (strncmp(v->path, "/SYSV", 5) == 0) {
		/* its maps line shows the segment's id as the inode */
		out->placement = VIA_CTL_MEM_SYSV;
		out->shmid = (int32_t)v->inode;
		return;
	}
	out->obj_fd = object_fd(v);
	seals = out->obj_fd >= 0 ? fcntl(out->obj_fd, F_GET_SEALS) : -1;
	if (out->obj_fd >= 0 && seals >= 0 && (seals & F_SEAL_SHRINK)) {
		out->placement = VIA_CTL_MEM_OBJECT_FD;
		return;
	}
	out->placement = VIA_CTL_MEM_COPIED;
	out->reason = out->obj_fd >= 0 ? VIA_CTL_COPIED_UNSEALED : VIA_CTL_COPIED_NO_FD;
	if (out->obj_fd >= 0)
		close(out->obj_fd);
	out->obj_fd = -1;
}

/* ---- the switch ------------------------------------------------------------ */

/* A userfaultfd of @p flags with write protection. @return the fd, or -errno */
static int
uffd_try(int flags)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_WP_HUGETLBFS_SHMEM };
	int fd = (int)syscall(SYS_userfaultfd, flags);

	if (fd < 0)
		return -errno;
	if (ioctl(fd, UFFDIO_API, &api) != 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/*
 * A userfaultfd that write-protects [@p a, @p a + @p n): registered, not
 * protected yet. @return the fd, or -errno
 */
static int
uffd_open(uintptr_t a, size_t n)
{
	struct uffdio_register reg = {
		.range = { .start = a, .len = n },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	int fd;

	if (uffd_flags == -2) {
		/* kernel-mode faults need privilege (vm.unprivileged_userfaultfd) */
		static const int tries[] = { O_CLOEXEC | O_NONBLOCK,
					     O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY };
		int err = 0;

		uffd_flags = -1;
		for (unsigned i = 0; i < 2 && uffd_flags < 0; i++) {
			fd = uffd_try(tries[i]);
			if (fd >= 0) {
				uffd_flags = tries[i];
				close(fd);
			} else {
				err = fd;
			}
		}
		if (uffd_flags < 0)
			vipl_log("registered ordinary memory is copied by viad, not shared in "
				 "place: no userfaultfd write protection (%s)", strerror(-err));
	}
	if (uffd_flags < 0)
		return -EOPNOTSUPP;
	fd = uffd_try(uffd_flags);
	if (fd < 0)
		return fd;
	if (ioctl(fd, UFFDIO_REGISTER, &reg) != 0 ||
	    !(reg.ioctls & (UINT64_C(1) << _UFFDIO_WRITEPROTECT))) {
		int err = errno != 0 ? -errno : -EOPNOTSUPP;

		close(fd);
		return err;
	}
	return fd;
}

static int
uffd_protect(int fd, uintptr_t a, size_t n, bool on)
{
	struct uffdio_writeprotect wp = {
		.range = { .start = a, .len = n },
		.mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	return ioctl(fd, UFFDIO_WRITEPROTECT, &wp) == 0 ? 0 : -errno;
}

/*
 * Run @p body on [@p a, @p a + @p n) with writes to it held off: other
 * threads' writes sleep until the userfaultfd closes, then retry on
 * whatever mapping @p body left there. @return what @p body returned, or -errno
 */
static int
with_writes_held(uintptr_t a, size_t n, int (*body)(uintptr_t a, size_t n))
{
	sigset_t all, old;
	int fd, rc;

	fd = uffd_open(a, n);
	if (fd < 0)
		return fd;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = uffd_protect(fd, a, n, true);
	if (rc == 0) {
		/* nothing here may write [a, a+n), lock or allocate (header) */
		rc = body(a, n);
		if (rc != 0)
			uffd_protect(fd, a, n, false);
	}
	close(fd);      /* wakes every held write: each retries its fault */
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/*
 * The moves copy whole pages, of which a registered range may be only a
 * part: the bytes around it are the program's other objects, copied
 * unchanged. The kernel copies them (raw pwrite64, pread64), not memcpy or
 * libc's pwrite, which a sanitizer build intercepts and would report for
 * reading its own redzones around heap objects.
 */

/* Private pages -> the share file, in place. Writes held off. */
static int
move_in(uintptr_t a, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t w = syscall(SYS_pwrite64, share_fd, (void *)(a + done), n - done,
				    (off_t)(a + done));

		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		done += (size_t)w;
	}
	if (mmap((void *)a, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, share_fd,
		 (off_t)a) == MAP_FAILED)
		return -errno;
	return 0;
}

/* The share file -> private pages, in place. Writes held off, or one thread.
 * [a, a + n) is mapped from the share file at offset a: its bytes are read
 * from there. */
static int
move_out(uintptr_t a, size_t n)
{
	void *tmp = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t done = 0;

	if (tmp == MAP_FAILED)
		return -errno;
	while (done < n) {
		ssize_t r = syscall(SYS_pread64, share_fd, (char *)tmp + done, n - done,
				    (off_t)(a + done));

		if (r <= 0) {
			int err = r < 0 ? -errno : -EIO;

			munmap(tmp, n);
			return err;
		}
		done += (size_t)r;
	}
	if (mremap(tmp, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)a) == MAP_FAILED) {
		int err = -errno;

		munmap(tmp, n);
		return err;
	}
	return 0;
}

static int
share_file_open(void)
{
	int fd = memfd_create(SHARE_FILE_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -errno;
	/* sparse: only the pages moved in take memory. Sealed so that viad's
	 * mappings of it can never run past its end (SIGBUS) */
	if (ftruncate(fd, (off_t)VIA_SHARE_FILE_SIZE) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	share_fd = fd;
	return 0;
}

/*
 * Move the share file's mappings in [@p a, @p a + @p n) back into private
 * memory and free their file pages. Only what is still mapped from the file
 * there moves: a program may have unmapped a registered range, or mapped
 * something else over it.
 */
static void
release_run(uintptr_t a, size_t n, bool one_thread)
{
	struct maps_reader r;
	struct vma v;

	if (maps_open(&r) == 0) {
		while (maps_next(&r, &v)) {
			uintptr_t lo = v.lo > a ? v.lo : a, hi = v.hi < a + n ? v.hi : a + n;
			int rc;

			if (v.lo >= a + n)
				break;
			if (lo >= hi || !vma_is_share_file(&v) || v.offset != v.lo)
				continue;
			rc = one_thread ? move_out(lo, hi - lo) : with_writes_held(lo, hi - lo, move_out);
			if (rc != 0)
				vipl_log("VipDeregisterMem: pages at %#" PRIxPTR " stay shared with "
					 "viad: %s", lo, strerror(-rc));
		}
		close(r.fd);
	}
	if (!one_thread)
		fallocate(share_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)a, (off_t)n);
}

/* fork(): the child's in-place pages become its private copies (header). */
static void
atfork_prepare(void)
{
	pthread_mutex_lock(&pages_lock);
}

static void
atfork_parent(void)
{
	pthread_mutex_unlock(&pages_lock);
}

static void
atfork_child(void)
{
	/* one thread: nobody else writes these pages in this process */
	if (share_fd >= 0) {
		release_run(0, VIA_SHARE_FILE_SIZE, true);
		close(share_fd);
		share_fd = -1;
	}
	/* the registrations are the parent's; so are the locks (not inherited) */
	via_hmap_fini(&page_counts);
	pthread_mutex_unlock(&pages_lock);
}

static void
atfork_register(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* ---- counting --------------------------------------------------------------- */

/*
 * Pages of [@p base, @p base + @p len) that no registration covers: unlock
 * them, move the in-place ones back, forget them. One munlock and one move
 * per run of such pages.
 */
static void
settle(uintptr_t base, size_t len)
{
	size_t page = page_size();
	uintptr_t p, run = 0;
	bool run_in_place = false;

	for (p = base; p <= base + len; p += page) {
		uint64_t *val = p < base + len ? via_hmap_find(&page_counts, p / page) : NULL;
		bool idle = val != NULL && (*val & PAGE_COUNT_MASK) == 0;

		if (idle && run == 0) {
			run = p;
			run_in_place = false;
		}
		if (idle) {
			run_in_place |= (*val & PAGE_IN_PLACE) != 0;
			via_hmap_del(&page_counts, p / page);
			continue;
		}
		if (run != 0) {
			munlock((void *)run, p - run);
			if (run_in_place)
				release_run(run, p - run, false);
		}
		run = 0;
	}
}

/* Move into place the pages of [base, base+len) that are not yet. @return 0, -errno */
static int
place(uintptr_t base, size_t len)
{
	size_t page = page_size();
	uintptr_t p, run = 0;
	int rc = 0;

	if (share_fd < 0)
		rc = share_file_open();
	pthread_once(&atfork_once, atfork_register);
	for (p = base; rc == 0 && p <= base + len; p += page) {
		uint64_t *val = p < base + len ? via_hmap_get(&page_counts, p / page) : NULL;

		if (val != NULL && !(*val & PAGE_IN_PLACE)) {
			if (run == 0)
				run = p;
			continue;
		}
		if (run != 0) {
			/* populated first: the protection covers present pages */
			if (madvise((void *)run, p - run, MADV_POPULATE_WRITE) != 0)
				rc = -errno;
			if (rc == 0)
				rc = with_writes_held(run, p - run, move_in);
			for (uintptr_t q = run; rc == 0 && q < p; q += page)
				*via_hmap_get(&page_counts, q / page) |= PAGE_IN_PLACE;
		}
		run = 0;
	}
	return rc;
}

int
vipl_pages_acquire(uintptr_t base, size_t len, struct vipl_pages_placement *out)
{
	size_t page = page_size(), pages = len / page;
	bool all_in_place = true;
	struct vma obj;
	uint32_t reason;
	uintptr_t p;
	int rc;

	pthread_mutex_lock(&pages_lock);
	/* reserve first so that nothing fails once pages were moved or locked */
	rc = via_hmap_reserve(&page_counts, page_counts.count + pages);
	for (p = base; rc == 0 && p < base + len && all_in_place; p += page) {
		const uint64_t *val = via_hmap_find(&page_counts, p / page);

		all_in_place = val != NULL && (*val & PAGE_IN_PLACE);
	}
	/* the common case of many registrations in a few pages: nothing to read */
	reason = VIA_CTL_COPIED_NONE;
	obj.hi = 0;
	if (rc == 0 && !all_in_place)
		rc = classify(base, base + len, &reason, &obj);
	if (rc != 0) {
		pthread_mutex_unlock(&pages_lock);
		return rc == -ENOMEM ? rc : -EINVAL;
	}
	for (p = base; p < base + len; p += page)
		via_hmap_get(&page_counts, p / page);    /* settle() forgets them on failure */
	if (reason == VIA_CTL_COPIED_NONE && !all_in_place) {
		rc = place(base, len);
		if (rc != 0) {
			reason = rc == -EOPNOTSUPP ? VIA_CTL_COPIED_NO_SWITCH
						   : VIA_CTL_COPIED_SWITCH_FAILED;
			if (rc != -EOPNOTSUPP)
				vipl_log("VipRegisterMem: %zu bytes at %#" PRIxPTR " are copied by "
					 "viad, not shared in place: %s", len, base, strerror(-rc));
			rc = 0;
		}
	}
	if (mlock((void *)base, len) != 0) {
		vipl_log("VipRegisterMem: mlock of %zu bytes failed: %s (RLIMIT_MEMLOCK?)", len,
			 strerror(errno));
		settle(base, len);
		pthread_mutex_unlock(&pages_lock);
		return -ENOMEM;
	}
	for (p = base; p < base + len; p += page)
		(*via_hmap_get(&page_counts, p / page))++;
	pthread_mutex_unlock(&pages_lock);
	*out = (struct vipl_pages_placement){
		.placement = reason == VIA_CTL_COPIED_NONE ? VIA_CTL_MEM_IN_PLACE
							   : VIA_CTL_MEM_COPIED,
		.reason = reason,
		.flags = reason == VIA_CTL_COPIED_READ_ONLY ? VIA_CTL_MEM_READ_ONLY : 0,
		.obj_fd = -1,
	};
	/* a shared object stays as it is: viad maps the same object, as far
	 * as this process may use it */
	if (obj.hi != 0) {
		out->flags = obj.perms[1] != 'w' ? VIA_CTL_MEM_READ_ONLY : 0;
		place_object(base, &obj, out);
	}
	return 0;
}

void
vipl_pages_release(uintptr_t base, size_t len)
{
	size_t page = page_size();
	uintptr_t p;

	pthread_mutex_lock(&pages_lock);
	for (p = base; p < base + len; p += page) {
		uint64_t *val = via_hmap_find(&page_counts, p / page);

		/* none after fork(): the child registered nothing */
		if (val != NULL && (*val & PAGE_COUNT_MASK) != 0)
			(*val)--;
	}
	settle(base, len);
	pthread_mutex_unlock(&pages_lock);
}

int
vipl_pages_share_file(void)
{
	int fd;

	pthread_mutex_lock(&pages_lock);
	fd = share_fd;
	pthread_mutex_unlock(&pages_lock);
	return fd;
}
