/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * LD_PRELOAD interposer: counts the libc allocation calls (malloc, calloc,
 * realloc, reallocarray, free, posix_memalign, aligned_alloc, memalign,
 * valloc, pvalloc; strdup and the like reach malloc) made on viad's poll
 * lcores, which must make none (docs/design.md, "Memory on the poll
 * lcores"; DPDK's lcore rules; issue 28 part 2).
 *
 * A poll lcore is a thread whose name starts with "via-poll": viad names
 * each one as it enters its loop (dp_poll.c), so that the EAL's own work on
 * the thread before it does not count. The first allocation there writes
 * $VIA_LCORE_ALLOC_DIR/viad.PID at once (what, which thread, the caller's
 * backtrace): a viad killed later still leaves it. At exit the file gets
 * the total. A process that made none writes nothing.
 *
 * Forwards to glibc's __libc_* entry points: no dlsym, which itself
 * allocates.
 */
#define _GNU_SOURCE
#include <execinfo.h>
#include <malloc.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void __libc_free(void *p);
extern void *__libc_memalign(size_t align, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);

#define POLL_PREFIX "via-poll"

static uint64_t hits;
static int report_fd = -1;
static pthread_mutex_t report_mu = PTHREAD_MUTEX_INITIALIZER;
static pid_t self_pid;

/* per thread: 1 a poll lcore (a name never changes back), -1 the main
 * thread (viad's control thread); 0 not known yet: looked at again */
static __thread int poll_thread;
static __thread bool inside;   /* the report's own calls, backtrace's */

static bool
on_poll_lcore(void)
{
	char name[16];

	if (poll_thread != 0)
		return poll_thread > 0;
	if (self_pid == 0 || syscall(SYS_gettid) == self_pid) {
		poll_thread = -1;
		return false;
	}
	if (prctl(PR_GET_NAME, name, 0, 0, 0) != 0)
		return false;
	name[sizeof(name) - 1] = '\0';
	if (strncmp(name, POLL_PREFIX, strlen(POLL_PREFIX)) != 0)
		return false;
	poll_thread = 1;
	return true;
}

static void
put(int fd, const char *s)
{
	(void)!write(fd, s, strlen(s));
}

/* The first allocation on a poll lcore: the report file, with its caller. */
static void
report_first(const char *what)
{
	const char *dir = getenv("VIA_LCORE_ALLOC_DIR");
	char path[512], line[160], name[16] = "";
	void *frames[32];
	int n;

	if (dir == NULL)
		dir = "/tmp";
	snprintf(path, sizeof(path), "%s/viad.%d", dir, (int)getpid());
	report_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (report_fd < 0)
		report_fd = STDERR_FILENO;
	(void)prctl(PR_GET_NAME, name, 0, 0, 0);
	snprintf(line, sizeof(line), "first: %s on poll lcore thread %s (tid %ld), from:\n", what,
		 name, (long)syscall(SYS_gettid));
	put(report_fd, line);
	n = backtrace(frames, 32);
	backtrace_symbols_fd(frames, n, report_fd);
	/* the same on viad's log: a failed test prints its tail */
	put(STDERR_FILENO, "lcore_alloc: ");
	put(STDERR_FILENO, line);
	backtrace_symbols_fd(frames, n, STDERR_FILENO);
}

static void
count(const char *what)
{
	if (inside || !on_poll_lcore())
		return;
	inside = true;
	pthread_mutex_lock(&report_mu);
	if (hits++ == 0)
		report_first(what);
	pthread_mutex_unlock(&report_mu);
	inside = false;
}

void *
malloc(size_t size)
{
	count("malloc");
	return __libc_malloc(size);
}

void *
calloc(size_t n, size_t size)
{
	count("calloc");
	return __libc_calloc(n, size);
}

void *
realloc(void *p, size_t size)
{
	count("realloc");
	return __libc_realloc(p, size);
}

void *
reallocarray(void *p, size_t n, size_t size)
{
	if (size != 0 && n > SIZE_MAX / size)
		return NULL;
	count("reallocarray");
	return __libc_realloc(p, n * size);
}

void
free(void *p)
{
	if (p != NULL)
		count("free");
	__libc_free(p);
}

int
posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	count("posix_memalign");
	if (align < sizeof(void *) || (align & (align - 1)) != 0)
		return 22;   /* EINVAL */
	p = __libc_memalign(align, size);
	if (p == NULL)
		return 12;   /* ENOMEM */
	*out = p;
	return 0;
}

void *
aligned_alloc(size_t align, size_t size)
{
	count("aligned_alloc");
	return __libc_memalign(align, size);
}

void *
memalign(size_t align, size_t size)
{
	count("memalign");
	return __libc_memalign(align, size);
}

void *
valloc(size_t size)
{
	count("valloc");
	return __libc_valloc(size);
}

void *
pvalloc(size_t size)
{
	count("pvalloc");
	return __libc_pvalloc(size);
}

__attribute__((constructor)) static void
lcore_alloc_init(void)
{
	void *frame;

	self_pid = getpid();
	/* backtrace loads libgcc_s at its first call: now, not on an lcore */
	inside = true;
	backtrace(&frame, 1);
	inside = false;
}

__attribute__((destructor)) static void
lcore_alloc_fini(void)
{
	char line[96];

	if (hits == 0 || getpid() != self_pid)
		return;
	snprintf(line, sizeof(line), "total: %llu allocation calls on poll lcores\n",
		 (unsigned long long)hits);
	put(report_fd, line);
}
