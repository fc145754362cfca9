/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Registered ordinary memory (issue 12; docs/design.md, "Registered
 * ordinary memory"; VIA §3.2, §9.5.3): how VIPL programs of the 1990s use
 * a provider, with malloc'd buffers and descriptors.
 *
 *  - Placement: heap memory is shared with viad in place, SysV shared
 *    memory and a sealed memfd are mapped by viad from the same object
 *    (RegionsInPlace); a private file mapping and an unsealed memfd are
 *    copied (RegionsCopied, a log line with the reason). Data and
 *    descriptors move between every pair of kinds, provider memory too.
 *  - The switch keeps address and contents; the pages stay in place after
 *    the last deregistration (issue 29: registering them again moves
 *    nothing). Many registrations in one page, overlapping ones and parts
 *    of pages count per page.
 *  - No write is lost: a thread writing the same page, and the kernel
 *    writing into it for a read(2), while it is switched 600 times (a
 *    child process with VIPL_DPDK_REG_CACHE=0: out at each last
 *    deregistration, in at each registration).
 *  - A registered range the program unmaps: viad survives, and the pages
 *    are deregistered normally.
 *  - limits.max_in_place_bytes: a registration past it is refused with
 *    VIP_ERROR_RESOURCE and a log line, and its pages stay private.
 *  - fork(): the child gets private copies (its writes do not reach the
 *    parent, nor the parent's the child).
 *  - The client's table (issue 29), with a viad whose limits allow its
 *    1 GiB windows: heap memory is registered with no call to viad (a
 *    table handle, MEM_REGISTER not counted); sends, receives, RDMA Write
 *    and Read move through table handles; VipQueryMem and
 *    VipSetMemAttributes answer for them; a deregistered handle fails its
 *    descriptor; a ptag in use by an entry is not destroyed; with
 *    VIPL_DPDK_REG_TABLE=0 each registration is a call; the windows of a
 *    session that ended go back to its user (8 sessions in turn, on a
 *    viad whose user may have two).
 *  - A client that forges its table (VIA §11: the TPT is checked when
 *    used): entries naming memory below or past their window, ranges that
 *    wrap or are empty, windows viad never mapped, another ptag, another
 *    handle; a send from such an entry and a peer's RDMA Write into one
 *    fail with a protection error, write nothing, and viad lives on; the
 *    entries put back, the same buffers move data again.
 *  - Nothing leaks (issue 29): malloc, register, deregister, free in a
 *    loop keeps the program's RSS and its share file flat; an idle
 *    in-place buffer the program unmaps, or moves with realloc, leaves
 *    the share file, its contents kept.
 *  - exec (§3.2.1: handles are per process): a program registers an
 *    in-place and a copied region, posts a receive, clears close-on-exec on
 *    its socket and execs a program that maps a canary at the same
 *    addresses. viad ends the session and logs it; the peer's send, RDMA
 *    Write and RDMA Read complete in error; the canary is untouched and
 *    nothing of it is read.
 *
 * Usage: it_ordmem PATH/TO/viad  (it_ordmem --canary ... is its own exec)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "via_abi.h"

#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24   /* Linux 5.18 */
#endif

#define PAGE        4096u
#define WAIT_MS     5000u
#define CANARY      0xc5
/* where the exec test's regions live, before and after the exec */
#define EXEC_IN_PLACE ((void *)0x6f0000000000ull)
#define EXEC_COPIED   ((void *)0x6f0000100000ull)
#define EXEC_LEN      (16 * PAGE)

static struct viad_proc vd;

/* Two connected Reliable Delivery VIs with RDMA on one NIC. */
struct pair {
	VIP_NIC_HANDLE nic;
	VIP_PROTECTION_HANDLE pt;
	VIP_MEM_ATTRIBUTES ma;
	VIP_VI_HANDLE a, b;
};

/* The pair's two VIs of its tag, connected. */
static bool
pair_connect(struct pair *p, const char *tag)
{
	VIP_NIC_HANDLE nic = p->nic;
	VIP_VI_ATTRIBUTES va;

	h_vi_attrs(&va, p->pt);
	va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
	va.EnableRdmaWrite = va.EnableRdmaRead = VIP_TRUE;
	if (!CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &p->a), VIP_SUCCESS, "VI a (%s)", tag) ||
	    !CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &p->b), VIP_SUCCESS, "VI b (%s)", tag))
		return false;
	return h_connect(nic, p->a, nic, p->b, tag, WAIT_MS);
}

static bool
pair_open(struct pair *p, VIP_NIC_HANDLE nic, const char *tag)
{
	memset(p, 0, sizeof(*p));
	p->nic = nic;
	if (!CHECK_RET(VipCreatePtag(nic, &p->pt), VIP_SUCCESS, "ptag (%s)", tag))
		return false;
	p->ma = (VIP_MEM_ATTRIBUTES){ .Ptag = p->pt, .EnableRdmaWrite = VIP_TRUE,
				      .EnableRdmaRead = VIP_TRUE };
	return pair_connect(p, tag);
}

static void
pair_close(struct pair *p)
{
	h_pair_drop(p->a, p->b);
	VipDestroyPtag(p->nic, p->pt);
}

static void
fill(uint8_t *p, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static bool
filled(const uint8_t *p, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++) {
		if (p[i] != (uint8_t)(seed + i * 7))
			return false;
	}
	return true;
}

/* A registered buffer of some kind: its first page holds two descriptors. */
struct buf {
	const char *kind;
	uint8_t *p;
	size_t len;
	VIP_MEM_HANDLE mh;
	int fd;
	bool provider;
	bool sysv;
};

/*
 * One message a -> b: descriptors in the first 256 bytes of @p s and @p r,
 * data after them. @return whether it completed and arrived intact
 */
static bool
move(struct pair *p, struct buf *s, struct buf *r, uint32_t len, uint8_t seed)
{
	VIP_DESCRIPTOR *sd = h_desc1(s->p, s->p + 256, s->mh, len, true);
	VIP_DESCRIPTOR *rd = h_desc1(r->p, r->p + 256, r->mh, len, false), *got = NULL;
	VIP_RETURN posted, sent = VIP_NOT_DONE, received = VIP_NOT_DONE;
	bool ok;

	fill(s->p + 256, len, seed);
	memset(r->p + 256, 0, len);
	posted = VipPostRecv(p->b, rd, r->mh);
	if (posted == VIP_SUCCESS)
		posted = VipPostSend(p->a, sd, s->mh);
	if (posted == VIP_SUCCESS)
		sent = VipSendWait(p->a, WAIT_MS, &got);
	ok = sent == VIP_SUCCESS && got == sd && sd->CS.Status == VIP_STATUS_DONE;
	if (ok)
		received = VipRecvWait(p->b, WAIT_MS, &got);
	ok = ok && received == VIP_SUCCESS && got == rd &&
	     rd->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE) && rd->CS.Length == len &&
	     filled(r->p + 256, len, seed);
	if (!ok)
		h_note("%s -> %s, %u B: posts %d, send %d (status %#x), receive %d (status %#x, "
		       "length %u), data %s", s->kind, r->kind, len, posted, sent, sd->CS.Status,
		       received, rd->CS.Status, rd->CS.Length,
		       filled(r->p + 256, len, seed) ? "intact" : "wrong");
	return ok;
}

/* Whether the page of @p p is mapped from the library's share file. */
static bool
in_share_file(const void *p)
{
	uintptr_t a = (uintptr_t)p, lo, hi;
	char line[512];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "re");

	while (f != NULL && !found && fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &lo, &hi) == 2 && a >= lo && a < hi)
			found = strstr(line, "/memfd:vipl-shared") != NULL;
	}
	if (f != NULL)
		fclose(f);
	return found;
}

static VIP_DPDK_COUNTERS
counters(VIP_NIC_HANDLE nic)
{
	VIP_DPDK_COUNTERS c;

	h_counters(nic, &c);
	return c;
}

static bool
buf_open(struct buf *b, struct pair *p, const char *kind, size_t len)
{
	char path[512];

	memset(b, 0, sizeof(*b));
	b->kind = kind;
	b->len = len;
	b->fd = -1;
	if (strcmp(kind, "heap") == 0) {
		b->p = aligned_alloc(PAGE, len);
	} else if (strcmp(kind, "provider") == 0) {
		b->provider = true;
		if (VipDpdkAllocMem(p->nic, len, (void **)&b->p) != VIP_SUCCESS)
			b->p = NULL;
	} else if (strcmp(kind, "sysv shm") == 0) {
		int id = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600);

		b->sysv = true;
		b->p = id >= 0 ? shmat(id, NULL, 0) : NULL;
		if (id >= 0)
			shmctl(id, IPC_RMID, NULL);      /* gone at the last detach */
		if (b->p == (void *)-1)
			b->p = NULL;
	} else {
		bool memfd = strncmp(kind, "memfd", 5) == 0;

		snprintf(path, sizeof(path), "%s/file-%s", h_tmpdir(), kind);
		b->fd = memfd ? memfd_create("it-ordmem", MFD_CLOEXEC | MFD_ALLOW_SEALING)
			      : open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (b->fd >= 0 && ftruncate(b->fd, (off_t)len) == 0 &&
		    (strcmp(kind, "memfd sealed") != 0 ||
		     fcntl(b->fd, F_ADD_SEALS, F_SEAL_SHRINK) == 0))
			b->p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				    memfd ? MAP_SHARED : MAP_PRIVATE, b->fd, 0);
		if (b->p == MAP_FAILED)
			b->p = NULL;
	}
	if (!CHECK(b->p != NULL, "%zu bytes of %s memory", len, kind))
		return false;
	return CHECK_RET(VipRegisterMem(p->nic, b->p, len, &p->ma, &b->mh), VIP_SUCCESS,
			 "register %s memory", kind);
}

static void
buf_close(struct buf *b, struct pair *p)
{
	if (b->p == NULL)
		return;
	CHECK_RET(VipDeregisterMem(p->nic, b->p, b->mh), VIP_SUCCESS, "deregister %s memory",
		  b->kind);
	if (b->provider)
		VipDpdkFreeMem(p->nic, b->p);
	else if (b->sysv)
		shmdt(b->p);
	else if (b->fd >= 0)
		munmap(b->p, b->len);
	else
		free(b->p);
	if (b->fd >= 0)
		close(b->fd);
	b->p = NULL;
}

/* ---- placement -------------------------------------------------------------- */

static void
test_placement(VIP_NIC_HANDLE nic)
{
	static const char *const kinds[] = { "heap", "provider", "file private", "memfd unsealed",
					     "memfd sealed", "sysv shm" };
	enum { NK = 6 };
	struct buf b[NK];
	VIP_DPDK_COUNTERS c0, c1;
	struct pair p;
	unsigned i, j, bad = 0;

	h_note("placement: heap in place, shared objects mapped from the object or copied");
	if (!pair_open(&p, nic, "placement"))
		return;
	c0 = counters(nic);
	for (i = 0; i < NK; i++)
		buf_open(&b[i], &p, kinds[i], 16 * PAGE);
	c1 = counters(nic);
	CHECK(c1.RegionsInPlace - c0.RegionsInPlace == 3 && c1.RegionsCopied - c0.RegionsCopied == 2,
	      "RegionsInPlace +%" PRIu64 " (want 3: heap, sealed memfd, SysV shm), RegionsCopied +%"
	      PRIu64 " (want 2: file private, unsealed memfd)",
	      c1.RegionsInPlace - c0.RegionsInPlace, c1.RegionsCopied - c0.RegionsCopied);
	bad = 0;
	for (i = 2; i < NK; i++)
		bad += b[i].p != NULL && in_share_file(b[i].p);
	CHECK(in_share_file(b[0].p) && bad == 0,
	      "only the heap buffer moved to the share file: shared objects are never remapped");
	{
		/* this thread's own stack: copied, never switched under itself
		 * (mlock of earlier registrations may split it into mappings) */
		uint8_t on_stack[3 * PAGE];
		VIP_MEM_HANDLE smh;
		VIP_DPDK_COUNTERS c2 = counters(nic), c3;

		memset(on_stack, 1, sizeof(on_stack));
		CHECK_RET(VipRegisterMem(nic, on_stack, sizeof(on_stack), &p.ma, &smh), VIP_SUCCESS,
			  "register a buffer on this thread's stack");
		c3 = counters(nic);
		CHECK(c3.RegionsCopied - c2.RegionsCopied == 1 && !in_share_file(on_stack),
		      "the stack buffer is copied, not moved in place");
		VipDeregisterMem(nic, on_stack, smh);
	}
	CHECK(viad_log_contains(&vd, "not shared in place: a private file mapping") &&
	      viad_log_contains(&vd, "not shared in place: a shared object that may shrink"),
	      "viad logs each copied region with its reason");
	bad = 0;
	for (i = 0; i < NK; i++) {
		for (j = 0; j < NK; j++) {
			if (b[i].p != NULL && b[j].p != NULL && i != j &&
			    !move(&p, &b[i], &b[j], 6 * PAGE + 123, (uint8_t)(i * NK + j)))
				bad++, h_note("%s -> %s failed", kinds[i], kinds[j]);
		}
	}
	CHECK(bad == 0, "descriptors and 24699 B of data between every two kinds (%u failed)", bad);
	for (i = 0; i < NK; i++)
		buf_close(&b[i], &p);
	pair_close(&p);
}

/* ---- counting per page --------------------------------------------------------- */

static void
test_pages(VIP_NIC_HANDLE nic)
{
	enum { SLICES = 64 };
	VIP_MEM_HANDLE slice[SLICES], across, whole;
	/* fresh pages: heap pages an earlier test registered stay in place */
	uint8_t *m = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			  0);
	struct buf s = { .kind = "heap" }, r;
	unsigned i, order[SLICES], bad = 0;
	uint64_t seed = h_seed();
	struct pair p;

	h_note("many registrations in a page, overlapping ones: counted per page");
	if (!CHECK(m != MAP_FAILED, "2 pages") || !pair_open(&p, nic, "pages"))
		return;
	fill(m, 2 * PAGE, 9);
	for (i = 0; i < SLICES; i++)
		bad += VipRegisterMem(nic, m + i * 64, 64, &p.ma, &slice[i]) != VIP_SUCCESS;
	CHECK(bad == 0 && filled(m, 2 * PAGE, 9) && in_share_file(m) && !in_share_file(m + PAGE),
	      "64 registrations of 64 B in one page: in place, address and contents kept");
	CHECK_RET(VipRegisterMem(nic, m + 100, PAGE + 5, &p.ma, &across), VIP_SUCCESS,
		  "a registration across the two pages");
	CHECK_RET(VipRegisterMem(nic, m, 2 * PAGE, &p.ma, &whole), VIP_SUCCESS,
		  "and one of both whole");
	CHECK(in_share_file(m + PAGE) && filled(m, 2 * PAGE, 9), "the second page moved in too");

	/* descriptors in the first slices' page, data in the second page */
	s.p = m;
	s.mh = whole;
	if (buf_open(&r, &p, "heap", 4 * PAGE)) {
		CHECK(move(&p, &s, &r, PAGE + 300, 3), "a message from the shared pages");
		CHECK(move(&p, &r, &s, PAGE + 300, 4), "a message into them");
		buf_close(&r, &p);
	}
	fill(m, 2 * PAGE, 9);
	CHECK_RET(VipDeregisterMem(nic, m, whole), VIP_SUCCESS, "deregister the whole");
	CHECK_RET(VipDeregisterMem(nic, m + 100, across), VIP_SUCCESS, "deregister the crossing one");
	CHECK(in_share_file(m + PAGE) && in_share_file(m) && filled(m, 2 * PAGE, 9),
	      "the second page stays in place, idle, contents kept");
	for (i = 0; i < SLICES; i++)
		order[i] = i;
	for (i = SLICES - 1; i > 0; i--) {
		unsigned k = (unsigned)(h_rand(&seed) % (i + 1)), t = order[i];

		order[i] = order[k];
		order[k] = t;
	}
	bad = 0;
	for (i = 0; i < SLICES; i++)
		bad += VipDeregisterMem(nic, m + order[i] * 64, slice[order[i]]) != VIP_SUCCESS;
	CHECK(bad == 0 && in_share_file(m) && filled(m, 2 * PAGE, 9),
	      "deregistered in random order: still in place, contents kept");
	/* and again: nothing moves, the page is where it was */
	CHECK(VipRegisterMem(nic, m + 8, 8, &p.ma, &slice[0]) == VIP_SUCCESS && in_share_file(m) &&
	      VipDeregisterMem(nic, m + 8, slice[0]) == VIP_SUCCESS && in_share_file(m) &&
	      filled(m, 2 * PAGE, 9), "registered again and deregistered again, in place");
	munmap(m, 2 * PAGE);
	pair_close(&p);
}

/* ---- no lost write ------------------------------------------------------------ */

#define WRITE_PAGES 64u

struct writer {
	uint8_t *pages;         /* WRITE_PAGES pages, a counter at the start of each */
	volatile bool stop;
	uint64_t stores;        /* increments of the counters, all together */
	uint64_t reads, bad_reads;
};

static void *
writer_main(void *arg)
{
	struct writer *w = arg;
	uint8_t pat[64];
	int pfd[2];

	if (pipe(pfd) != 0)
		return NULL;
	while (!w->stop) {
		/* user-mode stores over every page, then a store the kernel
		 * makes into the last page for read(2) */
		for (unsigned i = 0; i < WRITE_PAGES; i++) {
			(*(volatile uint64_t *)(w->pages + i * PAGE))++;
			w->stores++;
		}
		fill(pat, sizeof(pat), (uint8_t)w->reads);
		if (write(pfd[1], pat, sizeof(pat)) != (ssize_t)sizeof(pat))
			break;
		if (read(pfd[0], w->pages + (WRITE_PAGES - 1) * PAGE + 512, sizeof(pat)) !=
			    (ssize_t)sizeof(pat) ||
		    !filled(w->pages + (WRITE_PAGES - 1) * PAGE + 512, sizeof(pat), (uint8_t)w->reads))
			w->bad_reads++;
		w->reads++;
	}
	close(pfd[0]);
	close(pfd[1]);
	return NULL;
}

static void
lost_write_cycles(VIP_NIC_HANDLE nic)
{
	const size_t len = WRITE_PAGES * PAGE;
	struct writer w = { .pages = aligned_alloc(PAGE, len) };
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_PROTECTION_HANDLE pt;
	VIP_MEM_HANDLE mh;
	unsigned i, bad = 0, cycles = 300;
	uint64_t sum = 0;
	pthread_t t;

	if (!CHECK(w.pages != NULL && VipCreatePtag(nic, &pt) == VIP_SUCCESS, "pages and ptag"))
		return;
	memset(w.pages, 0, len);
	ma.Ptag = pt;
	pthread_create(&t, NULL, writer_main, &w);
	for (i = 0; i < cycles; i++) {
		/* the registered bytes leave out the counters: their pages move all the same */
		bad += VipRegisterMem(nic, w.pages + 1024, len - 2048, &ma, &mh) != VIP_SUCCESS ||
		       !in_share_file(w.pages);
		bad += VipDeregisterMem(nic, w.pages + 1024, mh) != VIP_SUCCESS ||
		       in_share_file(w.pages);
	}
	w.stop = true;
	pthread_join(t, NULL);
	for (i = 0; i < WRITE_PAGES; i++)
		sum += *(uint64_t *)(w.pages + i * PAGE);
	CHECK(bad == 0, "%u register/deregister cycles, in and out (%u failed)", cycles, bad);
	CHECK(sum == w.stores, "the counters add up to %" PRIu64 " after %" PRIu64
	      " increments: no store lost", sum, w.stores);
	CHECK(w.reads > 0 && w.bad_reads == 0, "%" PRIu64 " read(2) into the pages, %" PRIu64
	      " lost", w.reads, w.bad_reads);
	VipDestroyPtag(nic, pt);
	free(w.pages);
}

static void
test_no_lost_write(void)
{
	VIP_NIC_HANDLE nic;
	int status = -1;
	pid_t pid;

	h_note("a thread writes %u pages, the kernel too, while they are switched 600 times",
	       WRITE_PAGES);
	/* a process of its own whose pages leave the share file at each
	 * deregistration (idle pages stay in place otherwise) */
	pid = fork();
	if (pid == 0) {
		h_set_child("lost-write child");
		setenv("VIPL_DPDK_REG_CACHE", "0", 1);
		if (CHECK_RET(VipOpenNic("via0", &nic), VIP_SUCCESS, "open via0")) {
			lost_write_cycles(nic);
			VipCloseNic(nic);
		}
		_exit(h_failures() == 0 ? 0 : 1);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0, "the child's checks passed");
}

/* ---- munmap of a registered range ----------------------------------------------- */

static void
test_unmapped(VIP_NIC_HANDLE nic)
{
	struct buf s, r, gone = { .kind = "unmapped" };
	VIP_DESCRIPTOR *rd, *got = NULL;
	struct pair p;

	h_note("a registered range the program unmaps: viad survives");
	if (!pair_open(&p, nic, "unmapped") || !buf_open(&s, &p, "heap", 4 * PAGE) ||
	    !buf_open(&r, &p, "heap", 4 * PAGE))
		return;
	gone.len = 8 * PAGE;
	gone.p = mmap(NULL, gone.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!CHECK(gone.p != MAP_FAILED &&
		   VipRegisterMem(nic, gone.p, gone.len, &p.ma, &gone.mh) == VIP_SUCCESS,
		   "register an anonymous mapping"))
		return;
	rd = h_desc1(r.p, gone.p, gone.mh, 2 * PAGE, false);
	CHECK_RET(VipPostRecv(p.b, rd, r.mh), VIP_SUCCESS, "post a receive into it");
	munmap(gone.p, gone.len);
	fill(s.p + 256, 2 * PAGE, 1);
	CHECK(VipPostSend(p.a, h_desc1(s.p, s.p + 256, s.mh, 2 * PAGE, true), s.mh) == VIP_SUCCESS &&
	      VipRecvWait(p.b, WAIT_MS, &got) == VIP_SUCCESS && got == rd,
	      "a message into the unmapped range completes (status %#x)", rd->CS.Status);
	VipSendWait(p.a, WAIT_MS, &got);
	CHECK(viad_alive(&vd), "viad alive");
	CHECK_RET(VipDeregisterMem(nic, gone.p, gone.mh), VIP_SUCCESS, "deregister it");
	CHECK(move(&p, &s, &r, 3000, 2), "the VIs still move data");
	buf_close(&s, &p);
	buf_close(&r, &p);
	pair_close(&p);
}

/* ---- the per-session cap ------------------------------------------------------------ */

#define IN_PLACE_CAP (4u << 20)   /* the test's viad: limits.max_in_place_bytes */

static void
test_cap(VIP_NIC_HANDLE nic)
{
	size_t len = IN_PLACE_CAP + 64 * PAGE;
	uint8_t *big = aligned_alloc(PAGE, len);
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_PROTECTION_HANDLE pt;
	VIP_MEM_HANDLE mh;

	h_note("limits.max_in_place_bytes (%u KiB) per session", IN_PLACE_CAP >> 10);
	if (!CHECK(big != NULL && VipCreatePtag(nic, &pt) == VIP_SUCCESS, "buffer and ptag"))
		return;
	ma.Ptag = pt;
	fill(big, len, 12);
	CHECK_RET(VipRegisterMem(nic, big, len, &ma, &mh), VIP_ERROR_RESOURCE,
		  "%zu KiB in place: refused", len >> 10);
	CHECK(viad_log_contains(&vd, "would pass max_in_place_bytes"), "viad says why");
	CHECK(filled(big, len, 12), "the refused pages keep their contents");
	CHECK(VipRegisterMem(nic, big, IN_PLACE_CAP / 2, &ma, &mh) == VIP_SUCCESS &&
	      VipDeregisterMem(nic, big, mh) == VIP_SUCCESS, "half the cap: registered");
	VipDestroyPtag(nic, pt);
	free(big);
}

/* ---- fork ------------------------------------------------------------------------ */

static void
test_fork(VIP_NIC_HANDLE nic)
{
	struct buf b, r;
	struct pair p;
	int status = -1;
	pid_t pid;

	h_note("fork(): the child's copy of an in-place buffer is its own");
	if (!pair_open(&p, nic, "fork") || !buf_open(&b, &p, "heap", 8 * PAGE) ||
	    !buf_open(&r, &p, "heap", 8 * PAGE))
		return;
	fill(b.p, b.len, 5);
	pid = fork();
	if (pid == 0) {
		bool ok;
		void *junk[64];

		h_set_child("fork child");
		ok = filled(b.p, b.len, 5) && !in_share_file(b.p);
		fill(b.p, b.len, 6);                 /* the parent must not see it */
		for (unsigned i = 0; i < 64; i++)    /* the heap works */
			junk[i] = malloc(100 + i * 1000);
		for (unsigned i = 0; i < 64; i++)
			free(junk[i]);
		usleep(200 * 1000);
		ok = ok && filled(b.p, b.len, 6);   /* nor the child the parent's */
		_exit(ok ? 0 : 1);
	}
	usleep(100 * 1000);
	fill(b.p + PAGE, PAGE, 7);
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0, "the child saw the contents at fork, then only its own writes");
	CHECK(filled(b.p, PAGE, 5) && filled(b.p + PAGE, PAGE, 7) && in_share_file(b.p),
	      "the parent's buffer has only its own writes, still in place");
	CHECK(move(&p, &b, &r, 4 * PAGE, 8), "and still moves data");
	buf_close(&b, &p);
	buf_close(&r, &p);
	pair_close(&p);
}

/* ---- the client's table (issue 29) ------------------------------------------------ */

/* An RDMA Write (@p write) of @p len bytes from @p s to @p t, or a Read of
 * them from @p t into @p s, on a's side. @return whether it completed and
 * the bytes arrived */
static bool
rdma(struct pair *p, struct buf *s, struct buf *t, bool write, uint32_t len, uint8_t seed)
{
	VIP_DESCRIPTOR *d = h_desc1(s->p + 128, s->p + 256, s->mh, len, true), *got = NULL;

	fill(write ? s->p + 256 : t->p + 256, len, seed);
	memset(write ? t->p + 256 : s->p + 256, 0, len);
	d->CS.Control = write ? VIP_CONTROL_OP_RDMAWRITE : VIP_CONTROL_OP_RDMAREAD;
	d->CS.SegCount = 2;
	d->DS[1] = d->DS[0];
	d->DS[0].Remote.Data.Address = t->p + 256;
	d->DS[0].Remote.Handle = t->mh;
	d->DS[0].Remote.Reserved = 0;
	return VipPostSend(p->a, d, s->mh) == VIP_SUCCESS &&
	       VipSendWait(p->a, WAIT_MS, &got) == VIP_SUCCESS && got == d &&
	       (d->CS.Status & ~VIP_STATUS_OP_MASK) == VIP_STATUS_DONE &&
	       filled(write ? t->p + 256 : s->p + 256, len, seed);
}

static void
test_table(VIP_NIC_HANDLE nic)
{
	VIP_MEM_ATTRIBUTES ma;
	VIP_DPDK_COUNTERS c0, c1;
	VIP_DESCRIPTOR *d, *got;
	VIP_MEM_HANDLE old;
	struct buf s, r;
	struct pair p;

	h_note("the client's table: in-place memory registered without a call to viad");
	if (!pair_open(&p, nic, "table"))
		return;
	c0 = counters(nic);
	if (!buf_open(&s, &p, "heap", 8 * PAGE) || !buf_open(&r, &p, "heap", 8 * PAGE))
		return;
	c1 = counters(nic);
	CHECK((s.mh & VIA_TPT_HANDLE) && (r.mh & VIA_TPT_HANDLE) &&
	      c1.RegionsRegistered == c0.RegionsRegistered,
	      "two heap buffers: table handles %#x %#x, MEM_REGISTER +%" PRIu64 " (want 0)", s.mh,
	      r.mh, c1.RegionsRegistered - c0.RegionsRegistered);
	CHECK(move(&p, &s, &r, 3 * PAGE + 100, 21) && move(&p, &r, &s, 5000, 22),
	      "sends and receives, descriptors and data through table handles");
	CHECK(rdma(&p, &s, &r, true, 2 * PAGE, 23) && rdma(&p, &s, &r, false, PAGE + 7, 24),
	      "an RDMA Write into a table region, an RDMA Read from one");
	CHECK(VipQueryMem(nic, r.p, r.mh, &ma) == VIP_SUCCESS && ma.Ptag == p.pt &&
	      ma.EnableRdmaWrite && ma.EnableRdmaRead, "VipQueryMem of a table handle");
	ma.EnableRdmaWrite = VIP_FALSE;
	CHECK(VipSetMemAttributes(nic, r.p, r.mh, &ma) == VIP_SUCCESS &&
	      !rdma(&p, &s, &r, true, PAGE, 25) && h_state_wait(p.a, VIP_STATE_ERROR, WAIT_MS) ==
	      VIP_STATE_ERROR, "RDMA Write disabled by VipSetMemAttributes: the Write fails");
	h_pair_drop(p.a, p.b);
	if (!pair_connect(&p, "table again"))
		return;
	CHECK_RET(VipDestroyPtag(nic, p.pt), VIP_ERROR_RESOURCE,
		  "the ptag of a table region is in use");
	/* a deregistered table handle names nothing: the descriptor fails */
	old = r.mh;
	CHECK_RET(VipDeregisterMem(nic, r.p, r.mh), VIP_SUCCESS, "deregister a table region");
	CHECK_RET(VipDeregisterMem(nic, r.p, old), VIP_INVALID_PARAMETER, "twice: unknown");
	CHECK_RET(VipRegisterMem(nic, r.p, r.len, &p.ma, &r.mh), VIP_SUCCESS, "register it again");
	d = h_desc1(s.p, s.p + 256, old, PAGE, true);
	got = NULL;
	CHECK(r.mh != old && VipPostSend(p.a, d, s.mh) == VIP_SUCCESS &&
	      VipSendWait(p.a, WAIT_MS, &got) == VIP_SUCCESS && got == d &&
	      (d->CS.Status & VIP_STATUS_PROTECTION_ERROR),
	      "a send from the stale handle: protection error (status %#x)", d->CS.Status);
	buf_close(&s, &p);
	buf_close(&r, &p);
	pair_close(&p);
}

/* The entry of table handle @p mh registered at @p va, found in this
 * process's session segments (where viad placed the table), or NULL. */
static struct via_tpt_entry *
find_entry(const void *va, VIP_MEM_HANDLE mh)
{
	struct via_tpt_entry *found = NULL;
	uintptr_t lo, hi;
	char line[512], perms[8];
	FILE *f = fopen("/proc/self/maps", "re");

	while (f != NULL && found == NULL && fgets(line, sizeof(line), f) != NULL) {
		if (strstr(line, "viad-session") == NULL ||
		    sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s", &lo, &hi, perms) != 3 ||
		    perms[0] != 'r')
			continue;
		for (uintptr_t a = lo; a + sizeof(*found) <= hi && found == NULL;
		     a += sizeof(*found)) {
			struct via_tpt_entry *e = (struct via_tpt_entry *)a;

			if (e->handle == mh && e->addr == (uintptr_t)va)
				found = e;
		}
	}
	if (f != NULL)
		fclose(f);
	return found;
}

/* A send (or, with @p remote_mh, an RDMA Write to @p remote_va) of @p len
 * bytes at @p va under @p mh, from a descriptor in @p dsc: @return its
 * completion status, or 0 if it did not complete. */
static VIP_UINT32
post_status(struct pair *p, struct buf *dsc, uint64_t va, VIP_MEM_HANDLE mh, uint32_t len,
	    uint64_t remote_va, VIP_MEM_HANDLE remote_mh)
{
	VIP_DESCRIPTOR *d = h_desc1(dsc->p, (void *)(uintptr_t)va, mh, len, true), *got = NULL;

	if (remote_mh != 0) {
		d->CS.Control = VIP_CONTROL_OP_RDMAWRITE;
		d->CS.SegCount = 2;
		d->DS[1] = d->DS[0];
		d->DS[0].Remote.Data.Address = (VIP_PVOID)(uintptr_t)remote_va;
		d->DS[0].Remote.Handle = remote_mh;
		d->DS[0].Remote.Reserved = 0;
	}
	if (VipPostSend(p->a, d, dsc->mh) != VIP_SUCCESS ||
	    VipSendWait(p->a, WAIT_MS, &got) != VIP_SUCCESS || got != d)
		return 0;
	return d->CS.Status;
}

#define FORGED_LOW 0x10000ull   /* far below any heap: outside every window */
#define FORGED_FAR (1ull << 40) /* past any 1 GiB window */

/* Forgery @p i of the real entry @p x0 into @p e, the send's address in
 * *@p va. @return what it is, NULL past the last */
static const char *
forge(unsigned i, const struct via_tpt_entry *x0, uint32_t other_ptag, struct via_tpt_entry *e,
      uint64_t *va)
{
	*e = *x0;
	*va = x0->addr + 256;
	switch (i) {
	case 0:
		e->addr = *va = FORGED_LOW;
		e->len = PAGE;
		return "a range below its window";
	case 1:
		e->len = FORGED_FAR;
		*va = x0->addr + FORGED_FAR / 2;
		return "a range 1 TiB long, read far past the buffer";
	case 2:
		e->len = 0 - x0->addr + PAGE;
		return "a range that wraps past 2^64";
	case 3:
		e->len = 0;
		return "an empty range";
	case 4:
		e->window = VIA_TPT_WINDOWS;
		return "a window viad never mapped";
	case 5:
		e->window = UINT32_MAX;
		return "a window index of 2^32 - 1";
	case 6:
		e->ptag = other_ptag;
		return "another ptag of the client";
	case 7:
		e->handle ^= 0x10000u;
		return "another handle in the entry";
	default:
		return NULL;
	}
}

/*
 * A hostile client writes its own table: whatever it writes, viad reaches
 * only what the entry's window (the client's own share file) holds, for
 * the VI's ptag, under the handle the descriptor names (daemon/mr.c
 * table_check). Each forged entry is tried on a fresh connection.
 */
static void
test_table_forged(VIP_NIC_HANDLE nic)
{
	struct via_tpt_entry *xe, *re, *oe, x0, r0, e;
	struct buf dsc, x, r, other = { .kind = "heap", .len = PAGE };
	VIP_PROTECTION_HANDLE other_pt;
	VIP_MEM_ATTRIBUTES other_ma;
	VIP_MEM_HANDLE other_mh = 0;
	const char *what;
	struct pair p;
	VIP_UINT32 st;
	uint64_t va;

	h_note("a client forging its table: viad checks every entry it uses");
	if (!pair_open(&p, nic, "forged") || !buf_open(&dsc, &p, "heap", 2 * PAGE) ||
	    !buf_open(&x, &p, "heap", 4 * PAGE) || !buf_open(&r, &p, "heap", 4 * PAGE))
		return;
	/* a second ptag's id, as the library writes it into an entry */
	other.p = aligned_alloc(PAGE, PAGE);
	if (!CHECK(other.p != NULL && VipCreatePtag(nic, &other_pt) == VIP_SUCCESS,
		   "a second ptag"))
		return;
	other_ma = (VIP_MEM_ATTRIBUTES){ .Ptag = other_pt };
	CHECK_RET(VipRegisterMem(nic, other.p, PAGE, &other_ma, &other_mh), VIP_SUCCESS,
		  "a page of the second ptag");
	xe = find_entry(x.p, x.mh);
	re = find_entry(r.p, r.mh);
	oe = find_entry(other.p, other_mh);
	if (!CHECK((dsc.mh & x.mh & r.mh & other_mh & VIA_TPT_HANDLE) && xe != NULL &&
		   re != NULL && oe != NULL && oe->ptag != xe->ptag,
		   "the entries of four table regions, found in the session segment"))
		return;
	x0 = *xe;
	r0 = *re;
	for (unsigned i = 0; (what = forge(i, &x0, oe->ptag, &e, &va)) != NULL; i++) {
		*xe = e;
		st = post_status(&p, &dsc, va, x.mh, PAGE, 0, 0);
		*xe = x0;
		CHECK(st & VIP_STATUS_PROTECTION_ERROR,
		      "%s: the send fails with a protection error (status %#x)", what, st);
		CHECK(viad_alive(&vd), "%s: viad is alive", what);
		h_pair_drop(p.a, p.b);
		if (!pair_connect(&p, what))
			return;
	}
	/* the peer's RDMA Write into a forged target */
	fill(r.p, r.len, 40);
	re->addr = FORGED_LOW;
	re->len = PAGE;
	st = post_status(&p, &dsc, (uintptr_t)(x.p + 256), x.mh, PAGE, FORGED_LOW, r.mh);
	*re = r0;
	/* Reliable Delivery: the target refuses it with a NAK that breaks the
	 * connection (§2.5.2); the send may have completed before */
	CHECK(st != 0 && h_state_wait(p.a, VIP_STATE_ERROR, WAIT_MS) == VIP_STATE_ERROR &&
	      viad_log_contains(&vd, "RDMA Write refused: outside the region"),
	      "an RDMA Write to an entry naming memory below its window is refused, outside "
	      "the region (status %#x)", st);
	CHECK(viad_alive(&vd) && filled(r.p, r.len, 40), "viad is alive, the target untouched");
	h_pair_drop(p.a, p.b);
	if (pair_connect(&p, "forged, put back"))
		CHECK(move(&p, &x, &r, 2 * PAGE, 41),
		      "the entries put back: the same buffers move data again");
	VipDeregisterMem(nic, other.p, other_mh);
	VipDestroyPtag(nic, other_pt);
	free(other.p);
	buf_close(&dsc, &p);
	buf_close(&x, &p);
	buf_close(&r, &p);
	pair_close(&p);
}

/* The share file's pages, in KiB (st_blocks of the library's memfd). */
static long
share_file_kb(void)
{
	char path[64], target[128];
	long kb = -1;

	for (int fd = 3; fd < 1024 && kb < 0; fd++) {
		ssize_t n;
		struct stat st;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		if (strncmp(target, "/memfd:vipl-shared", 18) == 0 && fstat(fd, &st) == 0)
			kb = (long)st.st_blocks / 2;
	}
	return kb;
}

static long
rss_kb(void)
{
	long pages = -1, resident = -1;
	FILE *f = fopen("/proc/self/statm", "re");

	if (f != NULL && fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = -1;
	if (f != NULL)
		fclose(f);
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static void
test_no_leak(VIP_NIC_HANDLE nic)
{
	static const size_t sizes[] = { 64, 16384, 200000, 1 << 20 };
	enum { WARM = 200, ITERS = 2000 };
	VIP_MEM_ATTRIBUTES ma = { 0 };
	long rss0 = 0, file0 = 0, rss1, file1;
	unsigned i, bad = 0;
	VIP_MEM_HANDLE mh;

	h_note("malloc, register, deregister, free %u times: RSS and share file stay flat", ITERS);
	if (!CHECK_RET(VipCreatePtag(nic, &ma.Ptag), VIP_SUCCESS, "ptag"))
		return;
	for (i = 0; i < ITERS; i++) {
		size_t len = sizes[i % 4];
		uint8_t *b = malloc(len);

		if (b == NULL) {
			bad++;
			break;
		}
		memset(b, (int)i, len);
		bad += VipRegisterMem(nic, b, len, &ma, &mh) != VIP_SUCCESS;
		bad += VipDeregisterMem(nic, b, mh) != VIP_SUCCESS;
		bad += b[len - 1] != (uint8_t)i;
		free(b);
		if (i == WARM) {
			h_sleep_ms(50);    /* the monitor's last events */
			rss0 = rss_kb();
			file0 = share_file_kb();
		}
	}
	h_sleep_ms(50);
	rss1 = rss_kb();
	file1 = share_file_kb();
	CHECK(bad == 0, "%u cycles (%u failed)", ITERS, bad);
#if defined(__SANITIZE_ADDRESS__)
	/* AddressSanitizer keeps freed blocks in quarantine (256 MiB) before
	 * it reuses them: each malloc of the loop gets new pages, by design
	 * of the sanitizer, so flatness is checked in the plain builds only */
	h_note("RSS %ld -> %ld KiB, share file %ld -> %ld KiB (not checked under "
	       "AddressSanitizer: its quarantine moves every allocation)", rss0, rss1, file0, file1);
#else
	CHECK(rss1 - rss0 < 1024, "RSS %ld KiB after %u cycles, %ld KiB after %u", rss0, WARM,
	      rss1, ITERS);
	CHECK(file0 >= 0 && file1 - file0 < 1024, "share file %ld KiB after %u cycles, %ld KiB "
	      "after %u", file0, WARM, file1, ITERS);
#endif
	VipDestroyPtag(nic, ma.Ptag);
}

static void
test_let_go(VIP_NIC_HANDLE nic)
{
	const size_t len = 256 * PAGE;
	VIP_MEM_ATTRIBUTES ma = { 0 };
	long before, in, after;
	uint8_t *m, *moved;
	VIP_MEM_HANDLE mh;

	h_note("idle in-place pages leave the share file when the program lets them go");
	if (!CHECK_RET(VipCreatePtag(nic, &ma.Ptag), VIP_SUCCESS, "ptag"))
		return;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	before = share_file_kb();
	fill(m, len, 31);
	CHECK(VipRegisterMem(nic, m, len, &ma, &mh) == VIP_SUCCESS &&
	      VipDeregisterMem(nic, m, mh) == VIP_SUCCESS && in_share_file(m),
	      "1 MiB registered and deregistered: in place");
	in = share_file_kb();
	munmap(m, len);
	h_sleep_ms(50);
	after = share_file_kb();
	CHECK(in - before >= 1024 && after <= before,
	      "munmap: the share file %ld -> %ld -> %ld KiB", before, in, after);

	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fill(m, len, 32);
	before = share_file_kb();
	CHECK(VipRegisterMem(nic, m, len, &ma, &mh) == VIP_SUCCESS &&
	      VipDeregisterMem(nic, m, mh) == VIP_SUCCESS, "another MiB, registered, idle");
	/* as glibc's realloc of a large chunk does */
	moved = mremap(m, len, 4 * len, MREMAP_MAYMOVE);
	h_sleep_ms(50);
	CHECK(moved != MAP_FAILED && filled(moved, len, 32) && !in_share_file(moved),
	      "mremap moved it: contents kept, private at %p", (void *)moved);
	munmap(moved, 4 * len);
	h_sleep_ms(50);
	after = share_file_kb();
	CHECK(after <= before, "and its file pages went: %ld -> %ld KiB", before, after);

	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fill(m, len, 33);
	CHECK(VipRegisterMem(nic, m, len, &ma, &mh) == VIP_SUCCESS &&
	      VipDeregisterMem(nic, m, mh) == VIP_SUCCESS && in_share_file(m) &&
	      madvise(m, len, MADV_DONTNEED) != 0,
	      "a third, idle: MADV_DONTNEED fails on its locked pages, as on any mlock'd memory");
	CHECK(madvise(m, len, MADV_DONTNEED_LOCKED) == 0, "MADV_DONTNEED_LOCKED");
	h_sleep_ms(50);
	CHECK(!in_share_file(m) && !in_share_file(m + len - 1), "it left the share file");
	munmap(m, len);
	VipDestroyPtag(nic, ma.Ptag);
}

static void
test_no_table(void)
{
	VIP_DPDK_COUNTERS c0, c1;
	VIP_NIC_HANDLE nic;
	struct buf b;
	struct pair p;

	h_note("VIPL_DPDK_REG_TABLE=0: every registration is a call");
	setenv("VIPL_DPDK_REG_TABLE", "0", 1);
	if (CHECK_RET(VipOpenNic("via0", &nic), VIP_SUCCESS, "open via0 again") &&
	    pair_open(&p, nic, "no table")) {
		c0 = counters(nic);
		if (buf_open(&b, &p, "heap", 4 * PAGE)) {
			c1 = counters(nic);
			CHECK(!(b.mh & VIA_TPT_HANDLE) && c1.RegionsInPlace == c0.RegionsInPlace + 1,
			      "viad's handle %#x, RegionsInPlace +%" PRIu64, b.mh,
			      c1.RegionsInPlace - c0.RegionsInPlace);
			buf_close(&b, &p);
		}
		pair_close(&p);
		VipCloseNic(nic);
	}
	unsetenv("VIPL_DPDK_REG_TABLE");
}

/*
 * On a viad whose user may have 2 GiB in place (two windows): sessions one
 * after another, each registering through its table, then closing. A
 * session's windows must go back to the user when it ends, else the third
 * registers with a call.
 */
static void
test_table_sessions(void)
{
	VIP_DPDK_COUNTERS c;
	VIP_NIC_HANDLE obs, nic;
	VIP_PROTECTION_HANDLE pt;
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_MEM_HANDLE mh;
	uint8_t *b = aligned_alloc(PAGE, PAGE);
	unsigned i, table = 0;
	const unsigned sessions = 8;

	h_note("%u sessions one after another, each with a 1 GiB window of 2 GiB the user may "
	       "have", sessions);
	/* the observer registers nothing: it has no table, no window */
	if (!CHECK(b != NULL && VipOpenNic("via0", &obs) == VIP_SUCCESS &&
		   h_counters(obs, &c) == VIP_SUCCESS, "a buffer and an observer"))
		return;
	for (i = 0; i < sessions; i++) {
		if (VipOpenNic("via0", &nic) != VIP_SUCCESS)
			break;
		ma.Ptag = NULL;
		if (VipCreatePtag(nic, &pt) == VIP_SUCCESS) {
			ma.Ptag = pt;
			if (VipRegisterMem(nic, b, PAGE, &ma, &mh) == VIP_SUCCESS) {
				table += (mh & VIA_TPT_HANDLE) != 0;
				VipDeregisterMem(nic, b, mh);
			}
			VipDestroyPtag(nic, pt);
		}
		VipCloseNic(nic);
		if (!h_wait_sessions(obs, c.Sessions, NULL))
			break;
	}
	CHECK(table == sessions, "%u of %u sessions registered through their table: each "
	      "session's window went back to the user", table, sessions);
	VipCloseNic(obs);
	free(b);
}

/* ---- exec ------------------------------------------------------------------------ */

/*
 * The program exec'd in place of a registered one: it maps a canary at the
 * addresses of the old regions, says so on @p ready, and when told on @p go
 * (after the peer's operations) checks that the canary is untouched.
 */
static int
canary_main(int ready, int go)
{
	void *at[2] = { EXEC_IN_PLACE, EXEC_COPIED };
	char b = 0;

	for (int i = 0; i < 2; i++) {
		if (mmap(at[i], EXEC_LEN, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) != at[i])
			return 2;
		memset(at[i], CANARY, EXEC_LEN);
	}
	if (write(ready, "R", 1) != 1 || read(go, &b, 1) != 1)
		return 3;
	for (int i = 0; i < 2; i++) {
		for (size_t k = 0; k < EXEC_LEN; k++) {
			if (((uint8_t *)at[i])[k] != CANARY)
				return 4;
		}
	}
	return 0;
}

/* What the registering child tells the peer. */
struct exec_info {
	VIP_MEM_HANDLE in_place, copied;
};

static void
exec_child(const char *self, int ready, int go, const char *tag)
{
	char a_ready[16], a_go[16];
	VIP_VI_ATTRIBUTES va;
	VIP_PROTECTION_HANDLE pt;
	VIP_MEM_ATTRIBUTES ma;
	VIP_NIC_HANDLE nic;
	VIP_VI_HANDLE vi;
	struct exec_info info;
	char path[512];
	int fd;
	void *m1, *m2;

	h_set_child("exec child");
	snprintf(path, sizeof(path), "%s/exec-file", h_tmpdir());
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	m1 = mmap(EXEC_IN_PLACE, EXEC_LEN, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	m2 = fd >= 0 && ftruncate(fd, EXEC_LEN) == 0
		     ? mmap(EXEC_COPIED, EXEC_LEN, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0) : MAP_FAILED;
	if (m1 != EXEC_IN_PLACE || m2 != EXEC_COPIED || VipOpenNic("via0", &nic) != VIP_SUCCESS ||
	    VipCreatePtag(nic, &pt) != VIP_SUCCESS)
		_exit(10);
	memset(m1, 0x11, EXEC_LEN);
	memset(m2, 0x22, EXEC_LEN);
	ma = (VIP_MEM_ATTRIBUTES){ .Ptag = pt, .EnableRdmaWrite = VIP_TRUE,
				   .EnableRdmaRead = VIP_TRUE };
	h_vi_attrs(&va, pt);
	va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
	va.EnableRdmaWrite = va.EnableRdmaRead = VIP_TRUE;
	if (VipRegisterMem(nic, m1, EXEC_LEN, &ma, &info.in_place) != VIP_SUCCESS ||
	    VipRegisterMem(nic, m2, EXEC_LEN, &ma, &info.copied) != VIP_SUCCESS ||
	    VipCreateVi(nic, &va, NULL, NULL, &vi) != VIP_SUCCESS)
		_exit(11);
	/* a receive waits in the in-place region, its data in the copied one */
	if (VipPostRecv(vi, h_desc1(m1, m2, info.copied, PAGE, false), info.in_place) != VIP_SUCCESS)
		_exit(12);
	if (write(ready, &info, sizeof(info)) != (ssize_t)sizeof(info))
		_exit(13);
	/* the peer connects (server side: its VipConnectWait on the other NIC) */
	{
		union h_net_addr local, remote;
		VIP_NIC_ATTRIBUTES na;
		char c;

		if (VipQueryNic(nic, &na) != VIP_SUCCESS || read(go, &c, 1) != 1)
			_exit(14);
		if (VipConnectRequest(vi, h_addr(&local, na.LocalNicAddress, "exec-c"),
				      h_addr(&remote, na.LocalNicAddress, tag), WAIT_MS,
				      &va) != VIP_SUCCESS)
			_exit(15);
	}
	/* the attack: keep the control socket open across the exec */
	for (int f = 3; f < 1024; f++) {
		struct stat st;

		if (fstat(f, &st) == 0 && S_ISSOCK(st.st_mode))
			fcntl(f, F_SETFD, 0);
	}
	snprintf(a_ready, sizeof(a_ready), "%d", ready);
	snprintf(a_go, sizeof(a_go), "%d", go);
	execl(self, self, "--canary", a_ready, a_go, (char *)NULL);
	_exit(16);
}

static void
test_exec(VIP_NIC_HANDLE nic, const char *self)
{
	int up[2], down[2], status = -1;
	union h_net_addr local, remote;
	VIP_VI_ATTRIBUTES va, rva;
	VIP_CONN_HANDLE conn;
	struct exec_info info;
	VIP_DESCRIPTOR *d, *got;
	struct buf mine;
	struct pair p;
	unsigned failed = 0, i;
	pid_t pid;
	char c;

	h_note("exec: access to the old program's memory ends with it");
	if (!pair_open(&p, nic, "exec-pair") || !buf_open(&mine, &p, "heap", 8 * PAGE) ||
	    pipe(up) != 0 || pipe(down) != 0)
		return;
	h_pair_drop(p.a, p.b);
	pid = fork();
	if (pid == 0)
		exec_child(self, up[1], down[0], "exec-s");
	close(up[1]);
	close(down[0]);
	if (!CHECK(read(up[0], &info, sizeof(info)) == (ssize_t)sizeof(info),
		   "the child registered an in-place and a copied region"))
		goto out;
	h_vi_attrs(&va, p.pt);
	va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
	va.EnableRdmaWrite = va.EnableRdmaRead = VIP_TRUE;
	if (!CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &p.a), VIP_SUCCESS, "the peer's VI") ||
	    write(down[1], "C", 1) != 1)
		goto out;
	{
		VIP_NIC_ATTRIBUTES na;

		VipQueryNic(nic, &na);
		CHECK(VipConnectWait(nic, h_addr(&local, na.LocalNicAddress, "exec-s"), WAIT_MS,
				     h_addr(&remote, NULL, ""), &rva, &conn) == VIP_SUCCESS &&
		      VipConnectAccept(conn, p.a) == VIP_SUCCESS, "the child connects to the peer");
	}
	CHECK(read(up[0], &c, 1) == 1 && c == 'R', "the exec'd program mapped its canary");
	CHECK(h_state_wait(p.a, VIP_STATE_ERROR, H_TIMEOUT_MS) == VIP_STATE_ERROR,
	      "the peer's connection breaks (the session ended)");
	CHECK(viad_log_contains(&vd, "the program was replaced (exec)"), "viad logs it");

	/* a send, an RDMA Write into the in-place region, a Read from the copied one */
	fill(mine.p + 256, 2 * PAGE, 0x33);
	memset(mine.p + 256 + 2 * PAGE, 0, PAGE);
	for (i = 0; i < 3; i++) {
		d = h_desc1(mine.p + i * 128, mine.p + 256, mine.mh, PAGE, true);
		if (i > 0) {
			d->CS.Control = i == 1 ? VIP_CONTROL_OP_RDMAWRITE : VIP_CONTROL_OP_RDMAREAD;
			d->CS.SegCount = 2;
			d->DS[1] = d->DS[0];
			d->DS[1].Local.Data.Address = i == 1 ? mine.p + 256 : mine.p + 256 + 2 * PAGE;
			d->DS[0].Remote.Data.Address = i == 1 ? EXEC_IN_PLACE : EXEC_COPIED;
			d->DS[0].Remote.Handle = i == 1 ? info.in_place : info.copied;
			d->DS[0].Remote.Reserved = 0;
		}
		if (VipPostSend(p.a, d, mine.mh) != VIP_SUCCESS)
			continue;     /* refused at once: an error too */
		got = NULL;
		if (VipSendWait(p.a, WAIT_MS, &got) != VIP_SUCCESS || got != d ||
		    (d->CS.Status & VIP_STATUS_DONE) == 0 ||
		    (d->CS.Status & ~(VIP_STATUS_DONE | VIP_STATUS_OP_MASK)) == 0)
			failed++, h_note("operation %u: status %#x", i, d->CS.Status);
	}
	CHECK(failed == 0, "the peer's send, RDMA Write and RDMA Read complete in error");
	failed = 0;
	for (i = 0; i < PAGE; i++)
		failed += mine.p[256 + 2 * PAGE + i] == CANARY;
	CHECK(failed == 0, "nothing of the canary was read");
	CHECK(write(down[1], "G", 1) == 1 && waitpid(pid, &status, 0) == pid &&
	      WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the canary is untouched (exit status %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	CHECK(viad_alive(&vd), "viad alive");
out:
	if (pid > 0 && waitpid(pid, &status, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	close(up[0]);
	close(down[1]);
	h_vi_drop(p.a);
	buf_close(&mine, &p);
	VipDestroyPtag(nic, p.pt);
}

int
main(int argc, char **argv)
{
	char self[512];
	VIP_NIC_HANDLE nic;
	ssize_t n;

	if (argc == 4 && strcmp(argv[1], "--canary") == 0)
		return canary_main(atoi(argv[2]), atoi(argv[3]));
	h_init(argc, argv, 300);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	/* adaptive: an idle viad leaves both CPUs to the test's two threads,
	 * whose stores must race the switch for the lost-write check to mean
	 * anything on a 2-CPU machine */
	if (viad_start(&vd, "viad", (const char *const[]){ "viad.poll_mode=adaptive",
							   "limits.max_in_place_bytes=4M", NULL }) != 0)
		return h_finish();
	if (CHECK_RET(VipOpenNic("via0", &nic), VIP_SUCCESS, "open via0")) {
		VipErrorCallback(nic, NULL, h_err_handler);
		test_placement(nic);
		test_pages(nic);
		test_no_lost_write();
		test_unmapped(nic);
		test_cap(nic);
		test_fork(nic);
		test_exec(nic, self);
		CHECK_RET(VipCloseNic(nic), VIP_SUCCESS, "close via0");
	}
	viad_stop(&vd);
	/* the table's windows count 1 GiB each: a viad with the default limits */
	if (viad_start(&vd, "viad", (const char *const[]){ "viad.poll_mode=adaptive", NULL }) != 0)
		return h_finish();
	if (CHECK_RET(VipOpenNic("via0", &nic), VIP_SUCCESS, "open via0 (default limits)")) {
		VipErrorCallback(nic, NULL, h_err_handler);
		test_table(nic);
		test_table_forged(nic);
		test_no_leak(nic);
		test_let_go(nic);
		test_no_table();
		CHECK_RET(VipCloseNic(nic), VIP_SUCCESS, "close via0");
	}
	viad_stop(&vd);
	/* the user's in-place bytes: two windows */
	if (viad_start(&vd, "viad", (const char *const[]){ "viad.poll_mode=adaptive",
							   "limits.user_max_in_place_bytes=2G",
							   NULL }) != 0)
		return h_finish();
	test_table_sessions();
	viad_stop(&vd);
	return h_finish();
}
