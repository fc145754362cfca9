/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The process's registered pages: locked, counted, and shared with viad in
 * place (VIA §3.2: the NIC reaches registered memory directly; issues 12
 * and 29). docs/design.md section 7 tells the story; this is the detail.
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
 * let the kernel merge neighbouring in-place pages into one mapping.
 *
 * Staying in place. A page moved in stays there, locked, when its last
 * registration goes: it is the process's own memory either way, and moving
 * it back would only be undone by the next registration of the same buffer
 * (a program that registers every message, a registration cache). So a
 * deregistration makes no system call, and registering a page again moves
 * nothing. A page leaves the file only when the program lets it go:
 *  - munmap, brk, mmap MAP_FIXED over it: the mapping is gone; its file
 *    page is punched out;
 *  - mremap moving it: the moved mapping is switched back to private
 *    memory (its file pages are the old addresses'), then punched;
 *  - MADV_DONTNEED_LOCKED: moved back to private memory and punched (plain
 *    MADV_DONTNEED, MADV_FREE and MADV_REMOVE fail with EINVAL on locked
 *    pages, as on any mlock'd memory);
 *  - fork: the child's copies are private (below);
 *  - RLIMIT_MEMLOCK: when locking new pages fails, the idle ones are moved
 *    back and unlocked, and the lock is tried again;
 *  - VipCloseNic: the idle pages are moved back and unlocked (a program
 *    done with VIA gets its memory as it was);
 *  - VIPL_DPDK_REG_CACHE=0 in the environment: at their last
 *    deregistration, as before issue 29.
 * The first four come from the kernel: every in-place mapping is registered
 * with one userfaultfd of the process (the monitor) for UFFD_EVENT_UNMAP,
 * UFFD_EVENT_REMAP and UFFD_EVENT_REMOVE, which an unprivileged process
 * gets too (with UFFD_USER_MODE_ONLY), and which see the system calls a
 * program makes directly, past any libc wrapper. A thread that unmaps such
 * a mapping waits in the kernel until its event is read: the monitor thread
 * reads events into a queue at once, without any lock a program's thread
 * may hold, and whoever holds pages_lock handles them (the monitor when it
 * gets the lock).
 *
 * Events race registrations: a thread's munmap removes the mapping, drops
 * the kernel's lock, and only then queues its event, so another thread may
 * map new memory at the same address and register it meanwhile. The
 * kernel counts such changes in flight for each userfaultfd (mmap_changing)
 * and fails UFFDIO_WRITEPROTECT with EAGAIN while any is; so every
 * registration first asks it about a page of its own (the sentinel), and
 * takes every event in flight before it trusts its map of in-place pages.
 *
 * The map. In-place and registered pages are kept as a sorted array of
 * extents (runs of pages in one state with one count of registrations),
 * in memory of this file's own mmap: never malloc'd, since a free() can
 * unmap in-place pages (a trimmed heap) and wait for the monitor, which
 * waits for pages_lock. A registration or deregistration costs O(log n)
 * plus the extents it covers, whatever its size.
 *
 * The switch loses no write. Other threads may write to the same pages (a
 * malloc'd buffer shares its pages with other chunks) while a page is copied
 * and remapped. Before the copy, the range is write-protected with a
 * userfaultfd of its own: a write from another thread, or from the kernel
 * on its behalf, then sleeps in the fault until that userfaultfd is
 * closed, after the new mapping is in place, and is retried on the new
 * page. Between the protection and the close this thread only makes system
 * calls: it takes no lock, allocates nothing and runs no signal handler
 * (signals are blocked), since a thread that holds a lock may be the one
 * asleep. An unprivileged process whose kernel refuses it kernel-mode
 * faults (vm.unprivileged_userfaultfd = 0) gets a user-mode-only
 * userfaultfd: a system call of another thread that writes into the range
 * during the switch then fails with EFAULT instead of sleeping
 * (docs/design.md).
 *
 * Memory that is shared already (SysV shm, a memfd, a shared file mapping)
 * is never moved: viad maps the same object. What cannot move in place (a
 * private file mapping, read-only pages, the main stack, the registering
 * thread's own stack, or no userfaultfd) is registered as copied: viad
 * reaches it through this program's /proc/self/mem, with the reason in the
 * request for its log line. Its pages are locked while registered and
 * unlocked at their last deregistration (munlock does not nest: counted).
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
#include <poll.h>
#include <sched.h>
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
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1    /* Linux 5.11 */
#endif

#define SHARE_FILE_NAME "vipl-shared"

/* ---- the state, under pages_lock ------------------------------------------ */

/* What an extent's pages are. */
enum extent_state {
	/** not in the share file: registered as copied (or a shared object),
	 *  locked while count > 0, forgotten at 0 */
	EXT_PRIVATE,
	/** mapped from the share file at offset = address, locked, and
	 *  registered with the monitor; kept at count 0 (idle) */
	EXT_IN_PLACE,
	/** was in place, and the program unmapped or moved it while
	 *  registered: viad may still write its file pages, punched at 0 */
	EXT_GONE,
};

/* Pages [lo, hi) in one state, covered by count registrations each. */
struct extent {
	uintptr_t lo, hi;
	uint32_t count;
	uint32_t state;   /* enum extent_state */
};

static pthread_mutex_t pages_lock = PTHREAD_MUTEX_INITIALIZER;
static struct extent *ext;      /* sorted by lo, disjoint; this file's own mmap */
static size_t nb_ext, cap_ext;
static int share_fd = -1;
static dev_t share_dev;
static ino_t share_ino;
/* flags for userfaultfd(2) that gave write protection, or -1 (none): probed once */
static int uffd_flags = -2;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
/* the userfaultfd of the switch (with_writes_held), -1 until the first */
static int switch_fd = -1;

/*
 * The monitor: a userfaultfd every in-place mapping is registered with,
 * for its events; the sentinel, a private page registered with it whose
 * UFFDIO_WRITEPROTECT says whether an event is in flight; and the thread
 * that reads events into the queue. Set up once, before pages_lock is
 * taken (a thread cannot be made under it); -1 / NULL until then.
 */
static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;
static int mon_fd = -1;
static void *sentinel;
static bool monitor_started;
/* setup() ran (its result in setup_err): read without setup_lock */
static bool setup_done;
static int setup_err;
/* VIPL_DPDK_REG_CACHE=0: idle pages leave the file at once (header) */
static bool no_cache;

/* Events read, not yet handled: written under queue_lock, which is held
 * only to read the userfaultfd and copy messages (no call that can wait
 * for the monitor). Handled in order by the holder of pages_lock. */
#define EVENT_QUEUE 1024
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uffd_msg events[EVENT_QUEUE];
static unsigned nb_events;

static size_t
page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* ---- the extent map ----------------------------------------------------------- */

/* Room for @p more extents. @return 0, -ENOMEM */
static int
ext_room(size_t more)
{
	size_t cap = cap_ext != 0 ? cap_ext : 1024;
	void *p;

	if (nb_ext + more <= cap_ext)
		return 0;
	while (cap < nb_ext + more)
		cap *= 2;
	p = ext == NULL ? mmap(NULL, cap * sizeof(*ext), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
			: mremap(ext, cap_ext * sizeof(*ext), cap * sizeof(*ext), MREMAP_MAYMOVE);
	if (p == MAP_FAILED)
		return -ENOMEM;
	ext = p;
	cap_ext = cap;
	return 0;
}

/* Index of the first extent that ends after @p a (nb_ext if none). */
static size_t
ext_find(uintptr_t a)
{
	size_t lo = 0, hi = nb_ext;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ext[mid].hi <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void
ext_insert(size_t i, uintptr_t lo, uintptr_t hi, uint32_t count, uint32_t state)
{
	memmove(&ext[i + 1], &ext[i], (nb_ext - i) * sizeof(*ext));
	ext[i] = (struct extent){ .lo = lo, .hi = hi, .count = count, .state = state };
	nb_ext++;
}

static void
ext_delete(size_t i)
{
	memmove(&ext[i], &ext[i + 1], (nb_ext - i - 1) * sizeof(*ext));
	nb_ext--;
}

/* An extent boundary at @p a, splitting the extent across it. Room for one
 * more extent was made. */
static void
ext_split(uintptr_t a)
{
	size_t i = ext_find(a);

	if (i < nb_ext && ext[i].lo < a) {
		ext_insert(i + 1, a, ext[i].hi, ext[i].count, ext[i].state);
		ext[i].hi = a;
	}
}

/*
 * [@p lo, @p hi) covered by extents: the gaps filled with EXT_PRIVATE
 * extents of count 0, boundaries at @p lo and @p hi. Room for
 * ext_cover_room() more was made. @return the index of the first
 */
static size_t
ext_cover(uintptr_t lo, uintptr_t hi)
{
	size_t i;
	uintptr_t at = lo;

	ext_split(lo);
	ext_split(hi);
	for (i = ext_find(lo); at < hi; i++) {
		if (i == nb_ext || ext[i].lo > at) {
			uintptr_t end = i == nb_ext || ext[i].lo > hi ? hi : ext[i].lo;

			ext_insert(i, at, end, 0, EXT_PRIVATE);
		}
		at = ext[i].hi;
	}
	return ext_find(lo);
}

/* The room ext_cover() of a range over @p n extents may need. */
static size_t
ext_cover_room(uintptr_t lo, uintptr_t hi)
{
	size_t i = ext_find(lo), n = 0;

	while (i + n < nb_ext && ext[i + n].lo < hi)
		n++;
	return 2 * n + 3;
}

/* Merge neighbours alike among the extents that touch [@p lo, @p hi];
 * drop forgotten ones (count 0, not in place). */
static void
ext_tidy(uintptr_t lo, uintptr_t hi)
{
	size_t i = ext_find(lo);

	if (i > 0)
		i--;
	while (i < nb_ext && ext[i].lo <= hi) {
		if (ext[i].count == 0 && ext[i].state != EXT_IN_PLACE) {
			ext_delete(i);
			if (i > 0)
				i--;
			continue;
		}
		if (i + 1 < nb_ext && ext[i].hi == ext[i + 1].lo &&
		    ext[i].count == ext[i + 1].count && ext[i].state == ext[i + 1].state) {
			ext[i].hi = ext[i + 1].hi;
			ext_delete(i + 1);
			continue;
		}
		i++;
	}
}

/* Whether one in-place extent run covers all of [@p lo, @p hi). */
static bool
ext_all_in_place(uintptr_t lo, uintptr_t hi)
{
	size_t i;

	for (i = ext_find(lo); i < nb_ext && lo < hi; i++) {
		if (ext[i].lo > lo || ext[i].state != EXT_IN_PLACE)
			return false;
		lo = ext[i].hi;
	}
	return lo >= hi;
}

/* ---- the mappings: PROCMAP_QUERY (Linux 6.11), else /proc/self/maps ----------- */

struct vma {
	uintptr_t lo, hi;
	uint64_t offset;
	bool read, write, shared;
	unsigned maj, min;  /* the device of its file */
	unsigned long inode;
	char path[64];      /* truncated: enough to tell the kinds apart */
};

#ifndef PROCMAP_QUERY
struct procmap_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start;
	uint64_t vma_end;
	uint64_t vma_flags;
	uint64_t vma_page_size;
	uint64_t vma_offset;
	uint64_t inode;
	uint32_t dev_major;
	uint32_t dev_minor;
	uint32_t vma_name_size;
	uint32_t build_id_size;
	uint64_t vma_name_addr;
	uint64_t build_id_addr;
};
#define PROCMAP_QUERY _IOWR('f', 17, struct procmap_query)
#define PROCMAP_QUERY_VMA_READABLE 0x01
#define PROCMAP_QUERY_VMA_WRITABLE 0x02
#define PROCMAP_QUERY_VMA_SHARED 0x08
#define PROCMAP_QUERY_COVERING_OR_NEXT_VMA 0x10
#endif

/* /proc/self/maps, open once per process (reopened in a fork child: the
 * parent's describes the parent); whether it answers PROCMAP_QUERY */
static int maps_fd = -1;
static int maps_query = -1;

/* Reads the mappings in address order, without allocating. */
struct vma_cursor {
	size_t len, pos;
	char buf[4096];
};

static int
vma_open(struct vma_cursor *c)
{
	c->len = c->pos = 0;
	if (maps_fd < 0)
		maps_fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (maps_fd < 0)
		return -errno;
	/* the text is read from its start; PROCMAP_QUERY needs no position */
	return maps_query == 1 || lseek(maps_fd, 0, SEEK_SET) == 0 ? 0 : -errno;
}

/* The next line of the text into @p line (NUL-terminated, cut at @p size).
 * @return false at the end */
static bool
maps_line(struct vma_cursor *c, char *line, size_t size)
{
	size_t n = 0;

	for (;;) {
		if (c->pos == c->len) {
			ssize_t got = read(maps_fd, c->buf, sizeof(c->buf));

			if (got <= 0) {
				line[n] = '\0';
				return n > 0;
			}
			c->len = (size_t)got;
			c->pos = 0;
		}
		char ch = c->buf[c->pos++];

		if (ch == '\n') {
			line[n] = '\0';
			return true;
		}
		if (n + 1 < size)
			line[n++] = ch;
	}
}

/* The first mapping that ends after @p addr, through PROCMAP_QUERY.
 * @return 1 found, 0 none, -ENOTTY (a kernel before 6.11), -errno */
static int
vma_query(uintptr_t addr, struct vma *v)
{
	struct procmap_query q = {
		.size = sizeof(q),
		.query_flags = PROCMAP_QUERY_COVERING_OR_NEXT_VMA,
		.query_addr = addr,
		.vma_name_addr = (uintptr_t)v->path,
		.vma_name_size = sizeof(v->path),
	};

	if (ioctl(maps_fd, PROCMAP_QUERY, &q) != 0)
		return errno == ENOENT ? 0 : -errno;
	v->lo = q.vma_start;
	v->hi = q.vma_end;
	v->offset = q.vma_offset;
	v->read = q.vma_flags & PROCMAP_QUERY_VMA_READABLE;
	v->write = q.vma_flags & PROCMAP_QUERY_VMA_WRITABLE;
	v->shared = q.vma_flags & PROCMAP_QUERY_VMA_SHARED;
	v->maj = q.dev_major;
	v->min = q.dev_minor;
	v->inode = q.inode;
	if (q.vma_name_size == 0)
		v->path[0] = '\0';
	return 1;
}

/*
 * The first mapping that ends after @p addr; calls on one cursor go up in
 * address (the text is read once). @return true, false at the end
 */
static bool
vma_next(struct vma_cursor *c, uintptr_t addr, struct vma *v)
{
	char line[256], perms[5];
	int path_at = 0;

	if (maps_query != 0) {
		int rc = vma_query(addr, v);

		if (rc != -ENOTTY && rc != -EINVAL) {
			maps_query = 1;
			return rc == 1;
		}
		maps_query = 0;
	}
	while (maps_line(c, line, sizeof(line))) {
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s %" SCNx64 " %x:%x %lu %n", &v->lo,
			   &v->hi, perms, &v->offset, &v->maj, &v->min, &v->inode, &path_at) < 7 ||
		    v->hi <= addr)
			continue;
		v->read = perms[0] == 'r';
		v->write = perms[1] == 'w';
		v->shared = perms[3] == 's';
		snprintf(v->path, sizeof(v->path), "%s", path_at > 0 ? line + path_at : "");
		return true;
	}
	return false;
}

static bool
vma_is_share_file(const struct vma *v)
{
	return share_fd >= 0 && v->shared && v->inode == share_ino &&
	       makedev(v->maj, v->min) == share_dev;
}

/*
 * Whether [@p base, @p end) overlaps the calling thread's stack, whichever
 * mappings it is made of now (mlock of earlier registrations splits it):
 * the switch would write-protect pages this very thread writes. The bounds
 * are the thread's for its life, found once (pthread_getattr_np reads the
 * whole of /proc/self/maps for the main thread, and allocates: not under
 * pages_lock).
 */
static bool
on_own_stack(uintptr_t base, uintptr_t end)
{
	static __thread uintptr_t stack_lo, stack_hi;
	pthread_attr_t attr;
	void *lo;
	size_t len;

	if (stack_hi == 0 && pthread_getattr_np(pthread_self(), &attr) == 0) {
		if (pthread_attr_getstack(&attr, &lo, &len) == 0) {
			stack_lo = (uintptr_t)lo;
			stack_hi = (uintptr_t)lo + len;
		}
		pthread_attr_destroy(&attr);
	}
	/* none known: classify() still catches the mapping of this frame */
	return base < stack_hi && end > stack_lo;
}

/*
 * Which path [@p base, @p end) can take: VIA_CTL_COPIED_NONE if every
 * mapping in it is private anonymous and writable, or the share file at
 * offset = address (*@p some_shared: some is); with *@p obj the mapping if
 * one shared mapping holds all of it (a shared object viad may map itself;
 * obj->hi 0 if not).
 * @return 0 and @p reason; -EINVAL (a hole or unreadable pages)
 */
static int
classify(uintptr_t base, uintptr_t end, bool own_stack, uint32_t *reason, struct vma *obj,
	 bool *some_shared)
{
	uintptr_t cur = base, here = (uintptr_t)&cur;
	struct vma_cursor c;
	struct vma v;
	int rc = vma_open(&c);

	*reason = end > VIA_SHARE_FILE_SIZE ? VIA_CTL_COPIED_HIGH
		  : own_stack		    ? VIA_CTL_COPIED_STACK
					    : VIA_CTL_COPIED_NONE;
	obj->lo = obj->hi = 0;
	*some_shared = false;
	if (rc != 0)
		return rc;
	while (cur < end && vma_next(&c, cur, &v)) {
		uint32_t why = VIA_CTL_COPIED_NONE;

		if (v.lo > cur || !v.read)
			break;                 /* a hole, or pages nobody can read */
		if (v.shared && cur == base && v.hi >= end && !vma_is_share_file(&v))
			*obj = v;
		cur = v.hi;
		*some_shared |= vma_is_share_file(&v);
		if (vma_is_share_file(&v))
			why = v.offset == v.lo ? VIA_CTL_COPIED_NONE : VIA_CTL_COPIED_SWITCH_FAILED;
		else if (!v.write)
			why = VIA_CTL_COPIED_READ_ONLY;
		else if (v.shared)
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
	return cur >= end ? 0 : -EINVAL;
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
		if (!v->write || (fl & O_ACCMODE) == O_RDWR) {
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

/* A userfaultfd of @p flags with @p features. @return the fd, or -errno */
static int
uffd_try(int flags, uint64_t features)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };
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

/* A userfaultfd of this process's flags (probed at the first call: kernel-mode
 * faults need privilege, vm.unprivileged_userfaultfd) with @p features.
 * @return the fd, -EOPNOTSUPP (none), -errno */
static int
uffd_new(uint64_t features)
{
	if (uffd_flags == -2) {
		static const int tries[] = { O_CLOEXEC | O_NONBLOCK,
					     O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY };
		int err = 0, fd;

		uffd_flags = -1;
		for (unsigned i = 0; i < 2 && uffd_flags < 0; i++) {
			fd = uffd_try(tries[i], UFFD_FEATURE_WP_HUGETLBFS_SHMEM);
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
	return uffd_flags < 0 ? -EOPNOTSUPP : uffd_try(uffd_flags, features);
}

/* Register [@p a, @p a + @p n) with @p fd for write protection. @return 0, -errno */
static int
uffd_register(int fd, uintptr_t a, size_t n)
{
	struct uffdio_register reg = {
		.range = { .start = a, .len = n },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	if (ioctl(fd, UFFDIO_REGISTER, &reg) != 0)
		return errno != 0 ? -errno : -EOPNOTSUPP;
	return reg.ioctls & (UINT64_C(1) << _UFFDIO_WRITEPROTECT) ? 0 : -EOPNOTSUPP;
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
 * threads' writes sleep in their fault until the range is woken, then retry
 * on whatever mapping @p body left there. @p arg goes to @p body. One
 * userfaultfd serves every switch (switch_fd, made at the first): a
 * userfaultfd's close walks every mapping of the process, thousands once
 * many small buffers are in place. @p body replaces the mapping, which ends
 * its registration with switch_fd; if it fails, the range is let go.
 * @return what @p body returned, or -errno
 */
static int
with_writes_held(uintptr_t a, size_t n, int (*body)(uintptr_t a, size_t n, uint64_t arg),
		 uint64_t arg)
{
	struct uffdio_range r = { .start = a, .len = n };
	sigset_t all, old;
	int rc;

	if (switch_fd < 0)
		switch_fd = uffd_new(UFFD_FEATURE_WP_HUGETLBFS_SHMEM);
	if (switch_fd < 0)
		return switch_fd;
	rc = uffd_register(switch_fd, a, n);
	if (rc != 0) {
		ioctl(switch_fd, UFFDIO_UNREGISTER, &r);
		return rc;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = uffd_protect(switch_fd, a, n, true);
	if (rc == 0)
		/* nothing here may write [a, a+n), lock or allocate (header) */
		rc = body(a, n, arg);
	if (rc != 0)
		ioctl(switch_fd, UFFDIO_UNREGISTER, &r);  /* unprotects and wakes */
	else
		ioctl(switch_fd, UFFDIO_WAKE, &r);        /* every held write retries */
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
move_in(uintptr_t a, size_t n, uint64_t unused)
{
	size_t done = 0;

	(void)unused;
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
 * [a, a + n) is mapped from the share file at offset @p from: its bytes are
 * read from there. */
static int
move_out(uintptr_t a, size_t n, uint64_t from)
{
	void *tmp = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t done = 0;

	if (tmp == MAP_FAILED)
		return -errno;
	while (done < n) {
		ssize_t r = syscall(SYS_pread64, share_fd, (char *)tmp + done, n - done,
				    (off_t)(from + done));

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

/* Free the share file's pages [@p a, @p a + @p n) (clipped to the file). */
static void
punch(uintptr_t a, size_t n)
{
	if (a >= VIA_SHARE_FILE_SIZE)
		return;
	if (n > VIA_SHARE_FILE_SIZE - a)
		n = VIA_SHARE_FILE_SIZE - a;
	fallocate(share_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)a, (off_t)n);
}

/*
 * The mapping [@p a, @p a + @p n) of the share file at offset @p from back
 * into private memory, its file pages punched (@p punch_too): a program's
 * other threads may write it meanwhile. The monitor lets go of it first (a
 * change of a range registered with it would wait for the monitor).
 * @return 0, -errno (it stays in place, logged)
 */
static int
leave_place(uintptr_t a, size_t n, uint64_t from, bool punch_too)
{
	struct uffdio_range r = { .start = a, .len = n };
	int rc;

	ioctl(mon_fd, UFFDIO_UNREGISTER, &r);
	rc = with_writes_held(a, n, move_out, from);
	if (rc != 0) {
		vipl_log("pages at %#" PRIxPTR " stay shared with viad: %s", a, strerror(-rc));
		uffd_register(mon_fd, a, n);
		return rc;
	}
	if (punch_too)
		punch(from, n);
	return 0;
}

static int
share_file_open(void)
{
	int fd = memfd_create(SHARE_FILE_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	struct stat st;

	if (fd < 0)
		return -errno;
	/* sparse: only the pages moved in take memory. Sealed so that viad's
	 * mappings of it can never run past its end (SIGBUS) */
	if (ftruncate(fd, (off_t)VIA_SHARE_FILE_SIZE) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
	    fstat(fd, &st) != 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	share_dev = st.st_dev;
	share_ino = st.st_ino;
	share_fd = fd;
	return 0;
}

/* ---- the monitor ------------------------------------------------------------- */

/* Read what the monitor's userfaultfd has into the queue. @return messages read */
static unsigned
events_read(void)
{
	unsigned n = 0;

	pthread_mutex_lock(&queue_lock);
	while (nb_events < EVENT_QUEUE &&
	       read(mon_fd, &events[nb_events], sizeof(events[0])) == sizeof(events[0])) {
		nb_events++;
		n++;
	}
	pthread_mutex_unlock(&queue_lock);
	return n;
}

/* Whether an event of the monitor is in flight (mmap_changing, header). */
static bool
events_in_flight(void)
{
	return uffd_protect(mon_fd, (uintptr_t)sentinel, page_size(), false) == -EAGAIN;
}

/* UFFD_EVENT_UNMAP: the program unmapped [@p lo, @p hi). */
static void
on_unmap(uintptr_t lo, uintptr_t hi)
{
	uintptr_t at = lo;
	size_t i;

	if (ext_room(2) != 0)
		return;   /* not tracked any more; the file pages stay till the session ends */
	ext_split(lo);
	ext_split(hi);
	for (i = ext_find(lo); i < nb_ext && ext[i].lo < hi; i++) {
		if (ext[i].state == EXT_IN_PLACE)
			ext[i].state = EXT_GONE;
		if (ext[i].count == 0 || ext[i].state == EXT_PRIVATE)
			continue;
		/* registered: viad may still write its file pages (punched at
		 * the last deregistration) */
		if (ext[i].lo > at)
			punch(at, ext[i].lo - at);
		at = ext[i].hi;
	}
	if (hi > at)
		punch(at, hi - at);
	ext_tidy(lo, hi);
}

/* Idle in-place extent @p i back to private memory (registered ones stay:
 * the program's error). @return whether it is gone from the map */
static bool
evict(size_t i)
{
	if (ext[i].state != EXT_IN_PLACE || ext[i].count != 0 ||
	    leave_place(ext[i].lo, ext[i].hi - ext[i].lo, ext[i].lo, true) != 0)
		return false;
	ext_delete(i);
	return true;
}

/* UFFD_EVENT_REMOVE: MADV_DONTNEED_LOCKED (or a kernel that lets plain
 * MADV_DONTNEED through on locked pages) on [@p lo, @p hi): the idle pages
 * go private, as the program expects of its memory; their bytes are kept
 * (a write after the madvise must not be lost). */
static void
on_remove(uintptr_t lo, uintptr_t hi)
{
	size_t i;

	if (ext_room(2) != 0)
		return;
	ext_split(lo);
	ext_split(hi);
	for (i = ext_find(lo); i < nb_ext && ext[i].lo < hi;) {
		if (!evict(i))
			i++;
	}
	ext_tidy(lo, hi);
}

/* UFFD_EVENT_REMAP: the program moved a mapping of the share file from
 * @p from to @p to: it maps the file at offsets that are not its addresses
 * any more. It goes private (the UNMAP of the old range punches). */
static void
on_remap(uintptr_t from, uintptr_t to)
{
	struct vma_cursor c;
	struct vma v;

	if (vma_open(&c) != 0 || !vma_next(&c, to, &v) || v.lo > to || !vma_is_share_file(&v) ||
	    v.offset == v.lo)
		return;
	(void)from;
	leave_place(v.lo, v.hi - v.lo, v.offset, false);
}

/* Handle the queued events, in order. pages_lock held. */
static void
events_handle(void)
{
	struct uffd_msg batch[64];
	unsigned n, i;

	for (;;) {
		pthread_mutex_lock(&queue_lock);
		n = nb_events < 64 ? nb_events : 64;
		memcpy(batch, events, n * sizeof(batch[0]));
		memmove(events, events + n, (nb_events - n) * sizeof(events[0]));
		nb_events -= n;
		pthread_mutex_unlock(&queue_lock);
		if (n == 0)
			return;
		for (i = 0; i < n; i++) {
			const struct uffd_msg *m = &batch[i];

			if (m->event == UFFD_EVENT_UNMAP)
				on_unmap(m->arg.remove.start, m->arg.remove.end);
			else if (m->event == UFFD_EVENT_REMOVE)
				on_remove(m->arg.remove.start, m->arg.remove.end);
			else if (m->event == UFFD_EVENT_REMAP)
				on_remap(m->arg.remap.from, m->arg.remap.to);
		}
	}
}

/* Every event in flight taken and handled: the map is the truth about
 * every in-place mapping that existed when this returns. pages_lock held. */
static void
events_sync(void)
{
	if (mon_fd < 0)
		return;
	events_handle();
	while (events_in_flight()) {
		/* an unmapping thread between its change and its event, or
		 * woken and not yet past the kernel's count */
		if (events_read() == 0)
			sched_yield();
		events_handle();
	}
}

/* The monitor thread: reads events as they come (their threads wait for
 * that), handles them when pages_lock is free. */
static void *
monitor_main(void *unused)
{
	struct pollfd p = { .events = POLLIN };
	sigset_t all;

	(void)unused;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	p.fd = mon_fd;
	for (;;) {
		bool queued;

		pthread_mutex_lock(&queue_lock);
		queued = nb_events > 0;
		pthread_mutex_unlock(&queue_lock);
		/* events queued and the lock busy: look again soon */
		if (poll(&p, 1, queued ? 1 : -1) < 0 && errno != EINTR)
			return NULL;
		events_read();
		pthread_mutex_lock(&queue_lock);
		queued = nb_events > 0;
		pthread_mutex_unlock(&queue_lock);
		/* a full queue reads nothing more until it is handled */
		if (queued && (pthread_mutex_trylock(&pages_lock) == 0 ||
			       (nb_events == EVENT_QUEUE && pthread_mutex_lock(&pages_lock) == 0))) {
			events_handle();
			pthread_mutex_unlock(&pages_lock);
		}
	}
	return NULL;
}

/*
 * The share file, the monitor and its thread, once. Not under pages_lock.
 * @return 0, -errno (no share file; without a monitor pages are copied)
 */
static int
setup(void)
{
	size_t page = page_size();
	pthread_attr_t attr;
	const char *env;
	pthread_t tid;
	int rc = 0, fd;

	pthread_mutex_lock(&setup_lock);
	if (setup_done) {
		rc = setup_err;
		pthread_mutex_unlock(&setup_lock);
		return rc;
	}
	if (share_fd < 0)
		rc = share_file_open();
	if (rc == 0 && !monitor_started) {
		fd = uffd_new(UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMAP |
			      UFFD_FEATURE_EVENT_REMOVE | UFFD_FEATURE_WP_HUGETLBFS_SHMEM);
		sentinel = fd < 0 ? MAP_FAILED
				  : mmap(NULL, page, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (sentinel != MAP_FAILED && uffd_register(fd, (uintptr_t)sentinel, page) == 0) {
			mon_fd = fd;
			pthread_attr_init(&attr);
			pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
			__atomic_store_n(&monitor_started,
					 pthread_create(&tid, &attr, monitor_main, NULL) == 0,
					 __ATOMIC_RELEASE);
			pthread_attr_destroy(&attr);
			if (monitor_started)
				pthread_setname_np(tid, "vipl-pages");
		}
		if (!monitor_started) {
			if (sentinel != MAP_FAILED)
				munmap(sentinel, page);
			sentinel = NULL;
			if (fd >= 0)
				close(fd);
			mon_fd = -1;
		}
	}
	env = secure_getenv("VIPL_DPDK_REG_CACHE");
	no_cache = env != NULL && strcmp(env, "0") == 0;
	setup_err = rc;
	__atomic_store_n(&setup_done, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&setup_lock);
	return rc;
}

/* ---- fork ------------------------------------------------------------------- */

/* The share file's mappings in [@p a, @p a + @p n) back into private memory
 * (one thread: a fork child), and the file closed. */
static void
child_release_all(void)
{
	struct vma_cursor c;
	struct vma v;
	uintptr_t at = 0;

	if (vma_open(&c) == 0) {
		while (vma_next(&c, at, &v)) {
			at = v.hi;
			if (vma_is_share_file(&v) && move_out(v.lo, v.hi - v.lo, v.offset) != 0)
				vipl_log("fork: pages at %#" PRIxPTR " stay shared with the parent",
					 v.lo);
		}
	}
}

/* fork(): the child's in-place pages become its private copies (header). */
static void
atfork_prepare(void)
{
	pthread_mutex_lock(&setup_lock);
	pthread_mutex_lock(&pages_lock);
	pthread_mutex_lock(&queue_lock);
}

static void
atfork_parent(void)
{
	pthread_mutex_unlock(&queue_lock);
	pthread_mutex_unlock(&pages_lock);
	pthread_mutex_unlock(&setup_lock);
}

static void
atfork_child(void)
{
	/* the parent's /proc/self/maps describes the parent */
	if (maps_fd >= 0)
		close(maps_fd);
	maps_fd = -1;
	/* one thread: nobody else writes these pages in this process. Its
	 * mappings have no userfaultfd (no UFFD_FEATURE_EVENT_FORK) */
	if (share_fd >= 0) {
		child_release_all();
		close(share_fd);
		share_fd = -1;
	}
	if (mon_fd >= 0)
		close(mon_fd);
	mon_fd = -1;
	if (switch_fd >= 0)
		close(switch_fd);
	switch_fd = -1;
	if (sentinel != NULL)
		munmap(sentinel, page_size());
	sentinel = NULL;
	monitor_started = false;
	setup_done = false;
	nb_events = 0;
	/* the registrations are the parent's; so are the locks (not inherited) */
	nb_ext = 0;
	pthread_mutex_unlock(&queue_lock);
	pthread_mutex_unlock(&pages_lock);
	pthread_mutex_unlock(&setup_lock);
}

static void
atfork_register(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* ---- placing and locking ------------------------------------------------------- */

/*
 * Lock [@p a, @p a + @p n) (@p on_fault: as each page is touched, for pages
 * of the share file, which hold their data with or without this mapping's
 * page table; the program's next touch maps each). When RLIMIT_MEMLOCK
 * refuses, the idle in-place pages outside the registration being made,
 * [@p keep_lo, @p keep_hi), go private and the lock is tried again.
 * @return 0, -ENOMEM
 */
static int
lock_pages(uintptr_t a, size_t n, bool on_fault, uintptr_t keep_lo, uintptr_t keep_hi)
{
	unsigned flags = on_fault ? MLOCK_ONFAULT : 0;
	size_t i;

	if (mlock2((void *)a, n, flags) == 0)
		return 0;
	for (i = 0; i < nb_ext;) {
		if ((ext[i].hi > keep_lo && ext[i].lo < keep_hi) || !evict(i))
			i++;
	}
	if (mlock2((void *)a, n, flags) == 0)
		return 0;
	vipl_log("VipRegisterMem: mlock of %zu bytes failed: %s (RLIMIT_MEMLOCK?)", n,
		 strerror(errno));
	return -ENOMEM;
}

/*
 * Move the private pages of [@p a, @p a + @p n) into the share file, or take
 * a mapping of it at offset = address as it is (a mapping grown by mremap;
 * looked for only if @p some_shared);  lock them and hand them to the
 * monitor. @return 0, -EOPNOTSUPP (no userfaultfd), -ENOMEM (mlock),
 * -errno of the switch
 */
static int
place_run(uintptr_t a, size_t n, bool some_shared, uintptr_t keep_lo, uintptr_t keep_hi)
{
	struct vma_cursor c;
	struct vma v = { 0 };
	int rc = 0;

	if (mon_fd < 0)
		return -EOPNOTSUPP;
	if (some_shared && (rc = vma_open(&c)) == 0 && (!vma_next(&c, a, &v) || v.lo > a))
		rc = -EINVAL;
	if (rc == 0 && !(vma_is_share_file(&v) && v.offset == v.lo && v.hi >= a + n)) {
		/* populated first: the protection covers present pages */
		if (madvise((void *)a, n, MADV_POPULATE_WRITE) != 0)
			rc = -errno;
		if (rc == 0)
			rc = with_writes_held(a, n, move_in, 0);
	}
	if (rc != 0)
		return rc;
	rc = lock_pages(a, n, true, keep_lo, keep_hi);
	if (rc == 0)
		rc = uffd_register(mon_fd, a, n);
	if (rc != 0)
		leave_place(a, n, a, true);
	return rc;
}

/* Place every page of [@p base, @p end) that is not in place (the range is
 * covered, boundaries at base and end; @p some_shared as place_run()).
 * @return 0, -errno */
static int
place(uintptr_t base, uintptr_t end, bool some_shared)
{
	uintptr_t at = base;

	while (at < end) {
		size_t i = ext_find(at), j = i;
		uintptr_t run_hi;
		int rc;

		if (ext[i].state == EXT_IN_PLACE) {
			at = ext[i].hi;
			continue;
		}
		/* one switch for a run of extents not in place */
		while (j + 1 < nb_ext && ext[j + 1].lo == ext[j].hi && ext[j + 1].lo < end &&
		       ext[j + 1].state != EXT_IN_PLACE)
			j++;
		run_hi = ext[j].hi;
		rc = place_run(at, run_hi - at, some_shared, base, end);
		if (rc != 0)
			return rc;
		/* by address: an eviction may have moved the array */
		for (i = ext_find(at); i < nb_ext && ext[i].lo < run_hi; i++)
			ext[i].state = EXT_IN_PLACE;
		at = run_hi;
	}
	return 0;
}

/* Count one registration of [@p lo, @p hi), covered. */
static void
count_up(uintptr_t lo, uintptr_t hi)
{
	size_t i;

	for (i = ext_find(lo); i < nb_ext && ext[i].lo < hi; i++)
		ext[i].count++;
	ext_tidy(lo, hi);
}

int
vipl_pages_acquire(uintptr_t base, size_t len, struct vipl_pages_placement *out)
{
	uintptr_t end = base + len;
	bool own_stack;
	uint32_t reason = VIA_CTL_COPIED_NONE;
	struct vma obj = { 0 };
	bool some_shared;
	int rc, setup_rc;

	*out = (struct vipl_pages_placement){ .placement = VIA_CTL_MEM_IN_PLACE, .obj_fd = -1 };
	/* what cannot be done under pages_lock: the share file and the
	 * monitor at the first registration (a thread is made), this
	 * thread's stack at its first (pthread_getattr_np allocates) */
	own_stack = on_own_stack(base, end);
	setup_rc = __atomic_load_n(&setup_done, __ATOMIC_ACQUIRE) ? setup_err : setup();
	pthread_once(&atfork_once, atfork_register);
	pthread_mutex_lock(&pages_lock);
	events_sync();
	/* the common case of a range registered before: nothing to do but count */
	if (ext_all_in_place(base, end)) {
		rc = ext_room(2);
		if (rc == 0) {
			ext_split(base);
			ext_split(end);
			count_up(base, end);
		}
		pthread_mutex_unlock(&pages_lock);
		return rc;
	}
	/* first registration of some of its pages: what are they? */
	rc = classify(base, end, own_stack, &reason, &obj, &some_shared);
	if (rc == 0)
		rc = ext_room(ext_cover_room(base, end));
	if (rc != 0) {
		pthread_mutex_unlock(&pages_lock);
		return rc == -ENOMEM ? rc : -EINVAL;
	}
	ext_cover(base, end);
	if (reason == VIA_CTL_COPIED_NONE && setup_rc != 0) {
		vipl_log("VipRegisterMem: no share file (%s): registered memory is copied by viad",
			 strerror(-setup_rc));
		reason = VIA_CTL_COPIED_SWITCH_FAILED;
	}
	if (reason == VIA_CTL_COPIED_NONE) {
		rc = place(base, end, some_shared);
		if (rc == -ENOMEM)
			goto fail;
		if (rc != 0) {
			reason = rc == -EOPNOTSUPP ? VIA_CTL_COPIED_NO_SWITCH
						   : VIA_CTL_COPIED_SWITCH_FAILED;
			if (rc != -EOPNOTSUPP)
				vipl_log("VipRegisterMem: %zu bytes at %#" PRIxPTR " are copied by "
					 "viad, not shared in place: %s", len, base, strerror(-rc));
			rc = 0;
		}
	}
	if (reason != VIA_CTL_COPIED_NONE) {
		/* copied or a shared object: its pages locked as this
		 * registration needs (in-place ones are already) */
		rc = ext_all_in_place(base, end) ? 0 : lock_pages(base, len, false, base, end);
		if (rc != 0)
			goto fail;
	}
	count_up(base, end);
	pthread_mutex_unlock(&pages_lock);
	if (reason != VIA_CTL_COPIED_NONE) {
		out->placement = VIA_CTL_MEM_COPIED;
		out->reason = reason;
		out->flags = reason == VIA_CTL_COPIED_READ_ONLY ? VIA_CTL_MEM_READ_ONLY : 0;
	}
	/* a shared object stays as it is: viad maps the same object, as far
	 * as this process may use it */
	if (obj.hi != 0) {
		out->flags = !obj.write ? VIA_CTL_MEM_READ_ONLY : 0;
		place_object(base, &obj, out);
	}
	return 0;
fail:
	ext_tidy(base, end);
	pthread_mutex_unlock(&pages_lock);
	return rc;
}

void
vipl_pages_release(uintptr_t base, size_t len)
{
	uintptr_t end = base + len;
	size_t i;

	pthread_mutex_lock(&pages_lock);
	events_handle();
	if (ext_room(2) != 0) {
		pthread_mutex_unlock(&pages_lock);
		return;
	}
	ext_split(base);
	ext_split(end);
	/* none after fork(): the child registered nothing */
	for (i = ext_find(base); i < nb_ext && ext[i].lo < end; i++) {
		struct extent *e = &ext[i];

		if (e->count == 0 || --e->count != 0)
			continue;
		/* in place: stays there, idle (header) */
		if (e->state == EXT_PRIVATE)
			munlock((void *)e->lo, e->hi - e->lo);
		else if (e->state == EXT_GONE)
			punch(e->lo, e->hi - e->lo);
		else if (no_cache && evict(i))
			i--;
	}
	ext_tidy(base, end);
	pthread_mutex_unlock(&pages_lock);
}

void
vipl_pages_evict_idle(void)
{
	size_t i;

	pthread_mutex_lock(&pages_lock);
	events_sync();
	for (i = 0; i < nb_ext;) {
		if (!evict(i))
			i++;
	}
	pthread_mutex_unlock(&pages_lock);
}

int
vipl_pages_share_file(void)
{
	int fd;

	pthread_mutex_lock(&setup_lock);
	fd = share_fd;
	pthread_mutex_unlock(&setup_lock);
	return fd;
}
