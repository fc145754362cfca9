/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * viad survives a bus error in a client's memory (docs/design.md section
 * 10, "SIGBUS"). What viad maps of a client cannot shrink (sealed memfds,
 * SysV segments, viad's own segments), yet a client may still take a page
 * away under viad's mapping: a hole punched in a hugetlb segment it holds an
 * fd of, with the hugepage pool drained, faults with SIGBUS on viad's next
 * access. Every mapping a client can reach is registered here; the SIGBUS
 * handler finds the one that faulted, maps a private zero page over the
 * faulting page (the access is then retried and completes, harmlessly),
 * counts it in the thread's via_guard_hits (an access that saw the count
 * move failed) and tells the control thread, which ends the session and
 * logs it. A bus error anywhere
 * else is viad's own: the default action, a core dump, as before.
 *
 * No cost on the data path: no sigsetjmp, no lock; an access reads one
 * thread-local counter before and after. The table is written by the control thread
 * (adds) and by any thread (removes: a slot's start is cleared with one
 * store), read by the handler with atomic loads.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "viad.h"

#define HUGE_2M (UINT64_C(2) << 20)

struct guard_slot {
	uintptr_t lo;           /**< 0: free */
	uintptr_t hi;
	uint32_t session;
	uint8_t kind;           /**< enum via_guard_kind */
	uint8_t faulted;        /**< set by the handler, taken by via_guard_next_fault() */
	uintptr_t fault_addr;
};

static struct guard_slot *slots;
static uint32_t nb_slots;          /**< capacity */
static uint32_t high;              /**< slots in use are below it */
static uint32_t cursor;            /**< where the next add looks first */
static int notify_fd = -1;
static long page_size;
static uint64_t faults;

__thread volatile unsigned via_guard_hits;

static const char *const kind_names[] = {
	[VIA_GUARD_SEGMENT] = "its session segment",
	[VIA_GUARD_ALLOC] = "its provider memory",
	[VIA_GUARD_VIEW] = "its share file",
	[VIA_GUARD_OBJECT] = "a shared object it registered",
};

static struct guard_slot *
find(uintptr_t a)
{
	uint32_t i, n = __atomic_load_n(&high, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++) {
		uintptr_t lo = __atomic_load_n(&slots[i].lo, __ATOMIC_ACQUIRE);

		if (lo != 0 && a >= lo && a < __atomic_load_n(&slots[i].hi, __ATOMIC_RELAXED))
			return &slots[i];
	}
	return NULL;
}

/* Map a private zero page of @p size over the one holding @p a. */
static bool
patch(uintptr_t a, uint64_t size)
{
	void *at = (void *)(a & ~(uintptr_t)(size - 1));

	return mmap(at, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
		    0) == at;
}

static void
on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	struct guard_slot *g = find(a);
	uint64_t one = 1;
	int saved = errno;

	(void)uc;
	/* a hugetlb mapping splits only at its own page size */
	if (g == NULL || (!patch(a, (uint64_t)page_size) && !patch(a, HUGE_2M))) {
		/* not a client's memory: viad's own fault, as without this */
		signal(sig, SIG_DFL);
		errno = saved;
		return;
	}
	__atomic_store_n(&g->fault_addr, a, __ATOMIC_RELAXED);
	__atomic_store_n(&g->faulted, 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&faults, 1, __ATOMIC_RELAXED);
	via_guard_hits++;
	if (write(notify_fd, &one, sizeof(one)) < 0) {
		/* the counter is full: the control thread has a wake-up pending */
	}
	errno = saved;
}

int
via_guard_init(uint32_t capacity)
{
	struct sigaction sa;

	page_size = sysconf(_SC_PAGESIZE);
	slots = mmap(NULL, (size_t)capacity * sizeof(*slots), PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (slots == MAP_FAILED) {
		slots = NULL;
		return -ENOMEM;
	}
	notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (notify_fd < 0) {
		int err = -errno;

		munmap(slots, (size_t)capacity * sizeof(*slots));
		slots = NULL;
		return err;
	}
	nb_slots = capacity;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	/* SA_NODEFER: the handler returns to the retried access, and a second
	 * fault of the same thread must find it armed */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGBUS, &sa, NULL) == 0 ? 0 : -errno;
}

int
via_guard_fd(void)
{
	return notify_fd;
}

void
via_guard_fini(void)
{
	/* the table and the handler stay until exit: a mapping that frames
	 * in flight still pin is unmapped, and unguarded, when the ports are
	 * closed after the control thread ends */
	if (notify_fd >= 0)
		close(notify_fd);
	notify_fd = -1;
}

uint32_t
via_guard_add(const void *va, uint64_t len, uint32_t session, enum via_guard_kind kind)
{
	uint32_t i, n;

	for (n = 0; n < nb_slots; n++) {
		i = (cursor + n) % nb_slots;
		if (__atomic_load_n(&slots[i].lo, __ATOMIC_ACQUIRE) == 0)
			break;
	}
	if (slots == NULL || n == nb_slots)
		return 0;    /* unguarded (unit tests; a full table is one mapping per slot) */
	cursor = i + 1;
	slots[i].hi = (uintptr_t)va + len;
	slots[i].session = session;
	slots[i].kind = (uint8_t)kind;
	slots[i].faulted = 0;
	if (i + 1 > high)
		__atomic_store_n(&high, i + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&slots[i].lo, (uintptr_t)va, __ATOMIC_RELEASE);
	return i + 1;
}

void
via_guard_remove(uint32_t slot)
{
	if (slot != 0)
		__atomic_store_n(&slots[slot - 1].lo, 0, __ATOMIC_RELEASE);
}

bool
via_guard_next_fault(uint32_t *session, uint64_t *addr, const char **what)
{
	uint64_t cnt;
	uint32_t i, n = __atomic_load_n(&high, __ATOMIC_ACQUIRE);

	if (read(notify_fd, &cnt, sizeof(cnt)) < 0) {
		/* nothing new since the last call: the scan below finds nothing
		 * either, unless a fault came in between */
	}
	for (i = 0; i < n; i++) {
		struct guard_slot *g = &slots[i];

		if (!__atomic_exchange_n(&g->faulted, 0, __ATOMIC_ACQUIRE))
			continue;
		*session = g->session;
		*addr = __atomic_load_n(&g->fault_addr, __ATOMIC_RELAXED);
		*what = kind_names[g->kind];
		return true;
	}
	return false;
}

uint64_t
via_guard_faults(void)
{
	return __atomic_load_n(&faults, __ATOMIC_RELAXED);
}
