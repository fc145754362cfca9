/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Reclaim: everything a client holds is freed by viad when the client goes
 * away, however it goes (SIGKILL, VipCloseNic with objects open, killed in
 * the middle of its calls, killed while a child it forked keeps its socket),
 * counted in VIP_DPDK_SMI_COUNTERS, and without disturbing other clients.
 *
 * Usage: it_reclaim PATH/TO/viad
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* What one "full" client holds (see client_populate). */
struct held {
	unsigned ptags, regions, allocs, cqs, vis;
	uint64_t bytes;
	void *heap[2];       /* its malloc'd regions: the program's to free */
};

static size_t page_size;
static struct viad_proc vd;

/*
 * Create ptags, regions (malloc, mmap, and inside VipDpdkAllocMem memory), allocations, CQs and VIs on @p nic.
 * @return 0 or -1
 */
static int
client_populate(VIP_NIC_HANDLE nic, struct held *h)
{
	VIP_PROTECTION_HANDLE pt[3];
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_VI_ATTRIBUTES va;
	VIP_MEM_HANDLE mh;
	VIP_CQ_HANDLE cq[2];
	VIP_VI_HANDLE vi;
	VIP_PVOID a0, a1;
	char *heap1 = malloc(10000), *heap2 = malloc(3 * page_size);
	char *m;
	unsigned i;

	memset(h, 0, sizeof(*h));
	h->heap[0] = heap1;
	h->heap[1] = heap2;
	for (i = 0; i < 3; i++) {
		if (VipCreatePtag(nic, &pt[i]) != VIP_SUCCESS)
			return -1;
		h->ptags++;
	}
	ma.Ptag = pt[0];
	if (VipRegisterMem(nic, heap1, 10000, &ma, &mh) != VIP_SUCCESS)
		return -1;
	h->regions++;
	ma.Ptag = pt[1];
	if (VipRegisterMem(nic, heap2, 3 * page_size, &ma, &mh) != VIP_SUCCESS)
		return -1;
	h->regions++;
	m = mmap(NULL, 4 * page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || VipRegisterMem(nic, m, 4 * page_size, &ma, &mh) != VIP_SUCCESS)
		return -1;
	h->regions++;
	if (VipDpdkAllocMem(nic, 3 * page_size, &a0) != VIP_SUCCESS)
		return -1;
	h->allocs++;
	if (VipDpdkAllocMem(nic, 100, &a1) != VIP_SUCCESS)
		return -1;
	h->allocs++;
	if (VipRegisterMem(nic, (char *)a0 + 10, 2 * page_size, &ma, &mh) != VIP_SUCCESS)
		return -1;
	h->regions++;
	for (i = 0; i < 2; i++) {
		if (VipCreateCQ(nic, 64, &cq[i]) != VIP_SUCCESS)
			return -1;
		h->cqs++;
	}
	h_vi_attrs(&va, pt[0]);
	if (VipCreateVi(nic, &va, NULL, NULL, &vi) != VIP_SUCCESS)
		return -1;
	h->vis++;
	h_vi_attrs(&va, pt[2]);
	if (VipCreateVi(nic, &va, cq[0], cq[1], &vi) != VIP_SUCCESS)
		return -1;
	h->vis++;
	if (VipCreateVi(nic, &va, cq[0], NULL, &vi) != VIP_SUCCESS)
		return -1;
	h->vis++;
	return 0;
}

/* Read one byte from @p fd within H_TIMEOUT_MS. */
static int
read_byte(int fd, char *b)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, H_TIMEOUT_MS) != 1)
		return -1;
	return read(fd, b, 1) == 1 ? 0 : -1;
}

static void
kill_child(pid_t pid, const char *what)
{
	int st;

	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
	      "%s was killed by SIGKILL", what);
}

/* Check the reclaim deltas between @p a (before) and @p b (after). */
static void
check_reclaimed(const VIP_DPDK_COUNTERS *a, const VIP_DPDK_COUNTERS *b, const struct held *h,
		unsigned sessions, bool exclusive, const char *who)
{
	CHECK(b->ReclaimedVis - a->ReclaimedVis == h->vis, "%s: ReclaimedVis grew by %u (%llu)", who,
	      h->vis, (unsigned long long)(b->ReclaimedVis - a->ReclaimedVis));
	CHECK(b->ReclaimedCqs - a->ReclaimedCqs == h->cqs, "%s: ReclaimedCqs grew by %u (%llu)", who,
	      h->cqs, (unsigned long long)(b->ReclaimedCqs - a->ReclaimedCqs));
	CHECK(b->ReclaimedPtags - a->ReclaimedPtags == h->ptags,
	      "%s: ReclaimedPtags grew by %u (%llu)", who, h->ptags,
	      (unsigned long long)(b->ReclaimedPtags - a->ReclaimedPtags));
	CHECK(b->ReclaimedRegions - a->ReclaimedRegions == h->regions,
	      "%s: ReclaimedRegions grew by %u (%llu)", who, h->regions,
	      (unsigned long long)(b->ReclaimedRegions - a->ReclaimedRegions));
	CHECK(b->ReclaimedAllocs - a->ReclaimedAllocs == h->allocs,
	      "%s: ReclaimedAllocs grew by %u (%llu)", who, h->allocs,
	      (unsigned long long)(b->ReclaimedAllocs - a->ReclaimedAllocs));
	CHECK(b->SessionsClosed - a->SessionsClosed == sessions,
	      "%s: SessionsClosed grew by %u (%llu)", who, sessions,
	      (unsigned long long)(b->SessionsClosed - a->SessionsClosed));
	CHECK(b->ClientsDisconnectedForViolation == a->ClientsDisconnectedForViolation,
	      "%s: not counted as a protocol violation", who);
	if (!exclusive)
		return;
	/* vipl_dpdk.h: VisDestroyed etc. count VipDestroy* calls, "reclaimed
	 * ones excluded" */
	CHECK(b->VisDestroyed == a->VisDestroyed, "%s: VisDestroyed excludes reclaimed VIs (+%llu)",
	      who, (unsigned long long)(b->VisDestroyed - a->VisDestroyed));
	CHECK(b->CqsDestroyed == a->CqsDestroyed, "%s: CqsDestroyed excludes reclaimed CQs (+%llu)",
	      who, (unsigned long long)(b->CqsDestroyed - a->CqsDestroyed));
	CHECK(b->PtagsDestroyed == a->PtagsDestroyed,
	      "%s: PtagsDestroyed excludes reclaimed tags (+%llu)", who,
	      (unsigned long long)(b->PtagsDestroyed - a->PtagsDestroyed));
	CHECK(b->RegionsDeregistered == a->RegionsDeregistered,
	      "%s: RegionsDeregistered excludes reclaimed regions (+%llu)", who,
	      (unsigned long long)(b->RegionsDeregistered - a->RegionsDeregistered));
}

/* viad keeps serving: a full create / destroy cycle on @p nic. */
static void
check_serving(VIP_NIC_HANDLE nic, const char *when)
{
	VIP_PROTECTION_HANDLE pt;
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_VI_ATTRIBUTES va;
	VIP_MEM_HANDLE mh;
	VIP_CQ_HANDLE cq;
	VIP_VI_HANDLE vi;
	VIP_PVOID a;
	char *buf = malloc(4096);
	bool ok;

	ok = VipCreatePtag(nic, &pt) == VIP_SUCCESS;
	ma.Ptag = pt;
	ok = ok && VipCreateCQ(nic, 32, &cq) == VIP_SUCCESS;
	h_vi_attrs(&va, pt);
	ok = ok && VipCreateVi(nic, &va, cq, cq, &vi) == VIP_SUCCESS;
	ok = ok && VipRegisterMem(nic, buf, 4096, &ma, &mh) == VIP_SUCCESS;
	ok = ok && VipDpdkAllocMem(nic, 4096, &a) == VIP_SUCCESS;
	ok = ok && VipDeregisterMem(nic, buf, mh) == VIP_SUCCESS;
	ok = ok && VipDpdkFreeMem(nic, a) == VIP_SUCCESS;
	ok = ok && VipDestroyVi(vi) == VIP_SUCCESS;
	ok = ok && VipDestroyCQ(cq) == VIP_SUCCESS;
	ok = ok && VipDestroyPtag(nic, pt) == VIP_SUCCESS;
	CHECK(ok, "%s: viad still creates and destroys tags, CQs, VIs, regions, allocations", when);
	free(buf);
}

/* ---------------------------------------------------------------------- */

/* A child that populates a NIC, reports ready and waits to be killed. */
static pid_t
spawn_holder(int *rfd, unsigned nics)
{
	int p[2];
	pid_t pid;

	if (pipe(p) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		VIP_NIC_HANDLE nic;
		struct held h;
		unsigned i;

		close(p[0]);
		h_set_child("holder");
		for (i = 0; i < nics; i++) {
			if (VipOpenNic("via0", &nic) != VIP_SUCCESS || client_populate(nic, &h) != 0)
				_exit(3);
		}
		if (write(p[1], "R", 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	close(p[1]);
	*rfd = p[0];
	return pid;
}

static void
test_sigkill(VIP_NIC_HANDLE mon)
{
	VIP_DPDK_COUNTERS base, held_c, after;
	struct held h = { .ptags = 3, .regions = 4, .allocs = 2, .cqs = 2, .vis = 3 };
	bool replaced0 = viad_log_contains(&vd, "the program was replaced");
	int fd0, rfd;
	pid_t pid;
	char b;

	h_note("a client killed with SIGKILL while holding objects");
	h_wait_sessions(mon, 1, &base);
	fd0 = viad_fd_count(&vd);
	pid = spawn_holder(&rfd, 1);
	CHECK(pid > 0 && read_byte(rfd, &b) == 0 && b == 'R', "the child populated its NIC");
	close(rfd);
	h_counters(mon, &held_c);
	CHECK(held_c.Sessions == base.Sessions + 1, "viad counts the child's session");
	CHECK(held_c.VisCreated - base.VisCreated == h.vis &&
	      held_c.CqsCreated - base.CqsCreated == h.cqs &&
	      held_c.PtagsCreated - base.PtagsCreated == h.ptags &&
	      held_c.RegionsRegistered - base.RegionsRegistered == h.regions,
	      "viad counts what the child created");
	CHECK(held_c.BytesRegistered > base.BytesRegistered, "the child's regions are registered");
	CHECK(viad_fd_count(&vd) > fd0, "viad holds descriptors for the child (%d -> %d)", fd0,
	      viad_fd_count(&vd));
	kill_child(pid, "the child");
	CHECK(h_wait_sessions(mon, base.Sessions, &after), "the child's session is closed");
	check_reclaimed(&base, &after, &h, 1, true, "SIGKILL");
	/* the witness pipe hangs up before the pidfd says it exited */
	CHECK(viad_log_contains(&vd, "the process exited") &&
	      (replaced0 || !viad_log_contains(&vd, "the program was replaced")),
	      "viad logs that the killed client exited, not that it exec'd or closed the library");
	CHECK(after.BytesRegistered == base.BytesRegistered, "BytesRegistered is back (%llu)",
	      (unsigned long long)after.BytesRegistered);
	CHECK(viad_fd_count(&vd) == fd0, "viad's descriptors are back to %d (%d)", fd0,
	      viad_fd_count(&vd));
	check_serving(mon, "after the SIGKILL");
}

static void
test_close_with_objects(VIP_NIC_HANDLE mon)
{
	VIP_DPDK_COUNTERS base, after;
	VIP_NIC_HANDLE nic;
	struct held h;
	long lk0 = -1, lk1 = -1;
	int fd0;
	char line[128];
	FILE *f;

	h_note("VipCloseNic with everything still open");
	h_wait_sessions(mon, 1, &base);
	fd0 = viad_fd_count(&vd);
	f = fopen("/proc/self/status", "re");
	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		sscanf(line, "VmLck: %ld kB", &lk0);
	if (f != NULL)
		fclose(f);
	CHECK_RET(VipOpenNic("via0", &nic), VIP_SUCCESS, "open a NIC");
	CHECK(client_populate(nic, &h) == 0, "populate it");
	CHECK_RET(VipCloseNic(nic), VIP_SUCCESS, "close it with everything open");
	free(h.heap[0]);
	free(h.heap[1]);
	CHECK(h_wait_sessions(mon, base.Sessions, &after), "the session is closed in viad");
	check_reclaimed(&base, &after, &h, 1, true, "VipCloseNic");
	CHECK(after.BytesRegistered == base.BytesRegistered, "BytesRegistered is back");
	CHECK(viad_fd_count(&vd) == fd0, "viad's descriptors are back to %d (%d)", fd0,
	      viad_fd_count(&vd));
	f = fopen("/proc/self/status", "re");
	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		sscanf(line, "VmLck: %ld kB", &lk1);
	if (f != NULL)
		fclose(f);
	/* VipCloseNic also lets go of every idle in-place page of the process
	 * (issue 29): fewer may be locked than before */
	CHECK(lk1 >= 0 && lk1 <= lk0, "the library unlocked the regions' pages (VmLck %ld -> %ld kB)",
	      lk0, lk1);
	check_serving(mon, "after VipCloseNic");
}

/* A client that is alive while another one is killed. */
static void
test_neighbours(VIP_NIC_HANDLE mon)
{
	VIP_DPDK_COUNTERS base, after;
	VIP_PROTECTION_HANDLE pt;
	VIP_MEM_ATTRIBUTES ma = { 0 }, q;
	VIP_VI_ATTRIBUTES va, got;
	VIP_MEM_HANDLE mh;
	VIP_CQ_HANDLE cq;
	VIP_VI_HANDLE vi;
	VIP_VI_STATE st;
	VIP_BOOLEAN se, re;
	VIP_PVOID a;
	char *buf = malloc(8192);
	int go[2], rdy[2], rfd, stt;
	pid_t alive, victim;
	char b;

	h_note("two clients: killing one does not disturb the other");
	h_wait_sessions(mon, 1, &base);
	/* this process is a client too */
	CHECK_RET(VipCreatePtag(mon, &pt), VIP_SUCCESS, "monitor: create a tag");
	ma.Ptag = pt;
	CHECK_RET(VipRegisterMem(mon, buf, 8192, &ma, &mh), VIP_SUCCESS, "monitor: register");
	CHECK_RET(VipCreateCQ(mon, 16, &cq), VIP_SUCCESS, "monitor: create a CQ");
	h_vi_attrs(&va, pt);
	CHECK_RET(VipCreateVi(mon, &va, cq, NULL, &vi), VIP_SUCCESS, "monitor: create a VI");
	CHECK_RET(VipDpdkAllocMem(mon, 4096, &a), VIP_SUCCESS, "monitor: allocate");
	memset(a, 0x3c, 4096);

	/* a second live client in another process */
	if (pipe(go) != 0 || pipe(rdy) != 0)
		return;
	alive = fork();
	if (alive == 0) {
		VIP_NIC_HANDLE nic;
		VIP_PROTECTION_HANDLE cpt;
		VIP_VI_HANDLE cvi;
		VIP_VI_ATTRIBUTES cva, cgot;
		VIP_VI_STATE cst;
		VIP_BOOLEAN cse, cre;
		int ok;

		h_set_child("alive");
		close(go[1]);
		close(rdy[0]);
		if (VipOpenNic("via0", &nic) != VIP_SUCCESS || VipCreatePtag(nic, &cpt) != VIP_SUCCESS)
			_exit(3);
		h_vi_attrs(&cva, cpt);
		if (VipCreateVi(nic, &cva, NULL, NULL, &cvi) != VIP_SUCCESS)
			_exit(3);
		if (write(rdy[1], "R", 1) != 1 || read(go[0], &b, 1) != 1)
			_exit(4);
		ok = VipQueryVi(cvi, &cst, &cgot, &cse, &cre) == VIP_SUCCESS && cst == VIP_STATE_IDLE &&
		     cgot.Ptag == cpt;
		ok = ok && VipDestroyVi(cvi) == VIP_SUCCESS && VipDestroyPtag(nic, cpt) == VIP_SUCCESS;
		ok = ok && VipCloseNic(nic) == VIP_SUCCESS;
		_exit(ok ? 0 : 1);
	}
	close(go[0]);
	close(rdy[1]);
	CHECK(alive > 0 && read_byte(rdy[0], &b) == 0, "the live child is ready");

	victim = spawn_holder(&rfd, 2);
	CHECK(victim > 0 && read_byte(rfd, &b) == 0, "the victim populated two NICs");
	close(rfd);
	kill_child(victim, "the victim");
	CHECK(h_wait_sessions(mon, base.Sessions + 1, &after),
	      "the victim's sessions are closed, the live child's is not");

	CHECK_RET(VipQueryVi(vi, &st, &got, &se, &re), VIP_SUCCESS, "monitor: its VI still queries");
	CHECK(st == VIP_STATE_IDLE && got.Ptag == pt, "monitor: the VI is unchanged");
	CHECK_RET(VipQueryMem(mon, buf, mh, &q), VIP_SUCCESS, "monitor: its region still queries");
	CHECK(((unsigned char *)a)[4095] == 0x3c, "monitor: its allocation is intact");
	CHECK(write(go[1], "G", 1) == 1, "let the live child check its objects");
	CHECK(waitpid(alive, &stt, 0) == alive && WIFEXITED(stt) && WEXITSTATUS(stt) == 0,
	      "the live child's VI was untouched and it closed normally");
	close(go[1]);
	close(rdy[0]);
	CHECK_RET(VipDestroyVi(vi), VIP_SUCCESS, "monitor: destroy its VI");
	CHECK_RET(VipDestroyCQ(cq), VIP_SUCCESS, "monitor: destroy its CQ");
	CHECK_RET(VipDeregisterMem(mon, buf, mh), VIP_SUCCESS, "monitor: deregister");
	CHECK_RET(VipDpdkFreeMem(mon, a), VIP_SUCCESS, "monitor: free");
	CHECK_RET(VipDestroyPtag(mon, pt), VIP_SUCCESS, "monitor: destroy its tag");
	CHECK(h_wait_sessions(mon, base.Sessions, &after), "only the monitor's session is left");
	CHECK(after.ReclaimedVis - base.ReclaimedVis == 6,
	      "the victim's 6 VIs (2 NICs) were reclaimed, nobody else's (%llu)",
	      (unsigned long long)(after.ReclaimedVis - base.ReclaimedVis));
	free(buf);
}

/* A client killed while it is busy calling viad. */
static void
test_kill_busy(VIP_NIC_HANDLE mon)
{
	VIP_DPDK_COUNTERS base, after;
	int p[2], round;
	pid_t pid;
	char b;

	h_note("clients killed in the middle of their calls");
	for (round = 0; round < 5; round++) {
		h_wait_sessions(mon, 1, &base);
		if (pipe(p) != 0)
			return;
		pid = fork();
		if (pid == 0) {
			VIP_NIC_HANDLE nic;
			VIP_PROTECTION_HANDLE pt;
			VIP_MEM_ATTRIBUTES ma = { 0 };
			VIP_VI_ATTRIBUTES va;
			VIP_MEM_HANDLE mh;
			VIP_VI_HANDLE vi;
			VIP_CQ_HANDLE cq;
			VIP_DPDK_COUNTERS c;
			char *buf = malloc(20000);
			unsigned i;

			h_set_child("busy");
			close(p[0]);
			if (VipOpenNic("via0", &nic) != VIP_SUCCESS ||
			    VipCreatePtag(nic, &pt) != VIP_SUCCESS)
				_exit(3);
			ma.Ptag = pt;
			h_vi_attrs(&va, pt);
			for (i = 0;; i++) {
				VipCreateCQ(nic, 8, &cq);
				VipCreateVi(nic, &va, cq, NULL, &vi);
				VipRegisterMem(nic, buf + (i % 7), 10000, &ma, &mh);
				VipQuerySystemManagementInfo(nic, VIP_DPDK_SMI_COUNTERS, &c);
				VipDeregisterMem(nic, buf + (i % 7), mh);
				VipDestroyVi(vi);
				VipDestroyCQ(cq);
				if (i == 50 && write(p[1], "R", 1) != 1)
					_exit(4);
			}
		}
		close(p[1]);
		CHECK(pid > 0 && read_byte(p[0], &b) == 0, "round %d: the child is busy", round);
		close(p[0]);
		/* let it run a little longer, a different time each round */
		h_sleep_ms((unsigned)(round * 7));
		kill_child(pid, "the busy child");
		CHECK(h_wait_sessions(mon, base.Sessions, &after), "round %d: its session is closed",
		      round);
		CHECK(after.ReclaimedVis - base.ReclaimedVis <= 1 &&
		      after.ReclaimedCqs - base.ReclaimedCqs <= 1 &&
		      after.ReclaimedRegions - base.ReclaimedRegions <= 1 &&
		      after.ReclaimedPtags - base.ReclaimedPtags == 1,
		      "round %d: at most one VI, CQ and region and its tag were reclaimed", round);
		CHECK(after.BytesRegistered == base.BytesRegistered, "round %d: BytesRegistered is back",
		      round);
		CHECK(after.ClientsDisconnectedForViolation == base.ClientsDisconnectedForViolation,
		      "round %d: a half-sent request is not a protocol violation", round);
	}
	check_serving(mon, "after the busy clients");
}

/* Many sessions of one process, and sessions opened and closed in a loop. */
static void
test_many_sessions(VIP_NIC_HANDLE mon)
{
	VIP_DPDK_COUNTERS base, after;
	struct held h;
	VIP_NIC_HANDLE nic;
	int rfd, fd0, i;
	bool ok = true;
	pid_t pid;
	char b;

	h_note("a killed client with many sessions; open/close churn");
	h_wait_sessions(mon, 1, &base);
	fd0 = viad_fd_count(&vd);
	pid = spawn_holder(&rfd, 8);
	CHECK(pid > 0 && read_byte(rfd, &b) == 0, "the child populated 8 NICs");
	close(rfd);
	kill_child(pid, "the child with 8 sessions");
	CHECK(h_wait_sessions(mon, base.Sessions, &after), "its 8 sessions are closed");
	h = (struct held){ .ptags = 24, .regions = 32, .allocs = 16, .cqs = 16, .vis = 24 };
	check_reclaimed(&base, &after, &h, 8, false, "8 sessions");
	for (i = 0; i < 100; i++) {
		ok &= VipOpenNic("via0", &nic) == VIP_SUCCESS;
		ok &= VipCloseNic(nic) == VIP_SUCCESS;
	}
	CHECK(ok, "100 open/close cycles");
	CHECK(h_wait_sessions(mon, base.Sessions, &after), "all of them are closed in viad");
	CHECK(viad_fd_count(&vd) == fd0, "viad's descriptors are back to %d (%d)", fd0,
	      viad_fd_count(&vd));
}

/*
 * The session belongs to the process, not to its socket: a child inherits
 * the socket and lives on, its parent (the client) is killed. viad must end
 * the session all the same (pidfd): the parent's pid may be reused by an
 * unrelated process whose memory viad would then reach.
 */
static void
test_socket_outlives_process(VIP_NIC_HANDLE mon)
{
	struct held h = { .ptags = 3, .regions = 4, .allocs = 2, .cqs = 2, .vis = 3 };
	VIP_DPDK_COUNTERS base, after;
	pid_t pid, heir = -1;
	int p[2];

	h_note("a client killed while a child it forked keeps its socket open");
	h_wait_sessions(mon, 1, &base);
	if (!CHECK(pipe(p) == 0, "pipe"))
		return;
	pid = fork();
	if (pid == 0) {
		VIP_NIC_HANDLE nic;
		pid_t g;

		close(p[0]);
		h_set_child("client");
		if (VipOpenNic("via0", &nic) != VIP_SUCCESS || client_populate(nic, &h) != 0)
			_exit(3);
		g = fork();
		if (g == 0) {
			/* the heir: every descriptor of the client, the socket too */
			for (;;)
				pause();
		}
		if (g < 0 || write(p[1], &g, sizeof(g)) != (ssize_t)sizeof(g))
			_exit(4);
		for (;;)
			pause();
	}
	close(p[1]);
	CHECK(pid > 0 && read(p[0], &heir, sizeof(heir)) == (ssize_t)sizeof(heir) && heir > 0,
	      "the client populated its NIC and forked an heir (pid %d)", (int)heir);
	close(p[0]);
	kill_child(pid, "the client");
	CHECK(h_wait_sessions(mon, base.Sessions, &after),
	      "the client's session is closed although its heir holds the socket");
	check_reclaimed(&base, &after, &h, 1, true, "client gone, socket alive");
	CHECK(viad_log_contains(&vd, "the process exited"), "viad logs why it ended the session");
	if (heir > 0)
		kill(heir, SIGKILL);
	check_serving(mon, "after the heir");
}

int
main(int argc, char **argv)
{
	VIP_NIC_HANDLE mon = NULL;

	h_init(argc, argv, 110);
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	if (viad_start(&vd, "reclaim", NULL) != 0)
		return h_finish();
	if (VipOpenNic("via0", &mon) != VIP_SUCCESS) {
		CHECK(0, "open the monitor session");
		viad_stop(&vd);
		return h_finish();
	}
	test_sigkill(mon);
	test_close_with_objects(mon);
	test_neighbours(mon);
	test_kill_busy(mon);
	test_socket_outlives_process(mon);
	test_many_sessions(mon);
	CHECK(viad_alive(&vd), "viad is still running");
	CHECK_RET(VipCloseNic(mon), VIP_SUCCESS, "close the monitor session");
	viad_stop(&vd);
	return h_finish();
}
