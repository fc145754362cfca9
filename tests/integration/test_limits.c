/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Limits per user (issue 14 part 2; docs/design.md section 10): what the
 * sessions of one uid hold together is capped, by default at a fair share
 * of viad's limits (the global limit / limits.user_share), so that one user
 * cannot lock the others out.
 *
 * viad runs with max_sessions 8, max_vi 16, max_cq 8, max_ptags 8,
 * max_regions 24 and the default user_share 4: each user may hold 2
 * sessions, 4 VIs, 2 CQs, 2 tags and 6 regions; and with
 * user_max_register_bytes 32K, user_max_in_place_bytes 8K,
 * user_max_alloc_bytes 6M (max_alloc_bytes, per session, 4M) and
 * user_max_requests 2.
 *
 *  - User A (uid 5101) takes each of them and gets VIP_ERROR_RESOURCE for
 *    one more of each (a 3rd VipOpenNic, a 5th VI, a 3rd CQ, a 3rd tag, a
 *    7th region, registered bytes past 32K, heap memory mapped in place past
 *    8K, an allocation past 6M over its
 *    two sessions, a 3rd VipConnectWait while two wait); viad logs each
 *    refusal once, with the limit and the uid.
 *  - Meanwhile user B (uid 5102) opens the NIC, creates VIs, connects them
 *    (VipConnectWait included) and moves data.
 *  - A releases (destroys, deregisters, frees, closes a NIC with two
 *    VipConnectWait blocked in it) and takes each again; then, twice, a
 *    new process of A takes every limit and exits holding them: viad's
 *    reclaim of its sessions gives all back.
 *  - root is limited like anyone (its 3rd session is refused), unless
 *    limits.root_exempt = yes.
 *
 * Usage: it_limits PATH/TO/viad (as root)
 */
#define _GNU_SOURCE
#include <grp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define VIPL_GID 4243u
#define USER_A 5101u
#define USER_B 5102u

#define USER_SESSIONS 2
#define USER_VI 4
#define USER_CQ 2
#define USER_PTAGS 2
#define USER_REGIONS 6
#define MiB (1u << 20)

static const char *const limit_sets[] = {
	"viad.socket_group=4243",
	"limits.max_sessions=8", "limits.max_vi=16", "limits.max_cq=8", "limits.max_ptags=8",
	"limits.max_regions=24", "limits.max_alloc_bytes=4M",
	"limits.user_max_register_bytes=32K", "limits.user_max_alloc_bytes=6M",
	"limits.user_max_requests=2", "limits.user_max_in_place_bytes=8K", NULL,
};

/* Become @p uid, in group VIPL_GID (which may use the socket). */
static bool
become(uid_t uid)
{
	gid_t groups[1] = { VIPL_GID };

	return setgroups(1, groups) == 0 && setresgid(uid, uid, uid) == 0 &&
	       setresuid(uid, uid, uid) == 0;
}

/* A VipConnectWait that blocks in viad until its NIC closes. */
struct waiter {
	pthread_t thread;
	VIP_NIC_HANDLE nic;
	const char *disc;
	VIP_RETURN rc;
};

static void *
waiter_main(void *arg)
{
	struct waiter *w = arg;
	union h_net_addr l, r;
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;

	h_addr(&l, NULL, w->disc);
	w->rc = VipConnectWait(w->nic, &l.a, VIP_INFINITE, &r.a, &ra, &conn);
	return NULL;
}

/* One VipConnectWait of @p ms on @p nic. */
static VIP_RETURN
connect_wait(VIP_NIC_HANDLE nic, unsigned ms)
{
	union h_net_addr l, r;
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;

	h_addr(&l, NULL, "limits-main");
	return VipConnectWait(nic, &l.a, ms, &r.a, &ra, &conn);
}

/* VipOpenNic, retried while viad has not yet seen a close (asynchronous). */
static VIP_RETURN
open_retry(VIP_NIC_HANDLE *nic)
{
	uint64_t end = h_now_ms() + H_TIMEOUT_MS;
	VIP_RETURN r;

	while ((r = VipOpenNic("via0", nic)) != VIP_SUCCESS && h_now_ms() < end)
		h_sleep_ms(20);
	return r;
}

/*
 * User A: take every limit, tell the parent (@p hold_fd), wait for its go
 * (@p go_fd), release and take again. @return the failed checks
 */
static int
user_a(int hold_fd, int go_fd)
{
	VIP_NIC_HANDLE nic[USER_SESSIONS + 1] = { NULL };
	VIP_PROTECTION_HANDLE pt[USER_PTAGS + 1];
	VIP_CQ_HANDLE cq[USER_CQ + 1];
	VIP_VI_HANDLE vi[USER_VI + 1];
	VIP_MEM_HANDLE mh[USER_REGIONS + 1];
	VIP_MEM_ATTRIBUTES ma = { 0 };
	struct waiter w[2];
	VIP_VI_ATTRIBUTES va;
	VIP_PVOID a0 = NULL, a1 = NULL, a2 = NULL;
	uint8_t *m, *h;
	VIP_MEM_HANDLE hh;
	uint64_t end;
	VIP_RETURN r;
	unsigned i;
	char c;
	bool ok;

	h_set_child("A");
	if (!CHECK(become(USER_A), "become uid %u", USER_A))
		return 1;
	/* sessions */
	ok = true;
	for (i = 0; i < USER_SESSIONS; i++)
		ok &= VipOpenNic("via0", &nic[i]) == VIP_SUCCESS;
	if (!CHECK(ok, "A opens %d sessions", USER_SESSIONS))
		return 1;
	CHECK_RET(VipOpenNic("via0", &nic[USER_SESSIONS]), VIP_ERROR_RESOURCE,
		  "A's session %d: user_max_sessions", USER_SESSIONS + 1);
	/* tags */
	ok = true;
	for (i = 0; i < USER_PTAGS; i++)
		ok &= VipCreatePtag(nic[0], &pt[i]) == VIP_SUCCESS;
	CHECK(ok, "A creates %d tags", USER_PTAGS);
	CHECK_RET(VipCreatePtag(nic[1], &pt[USER_PTAGS]), VIP_ERROR_RESOURCE,
		  "A's tag %d, in its other session: user_max_ptags", USER_PTAGS + 1);
	/* CQs */
	ok = true;
	for (i = 0; i < USER_CQ; i++)
		ok &= VipCreateCQ(nic[0], 64, &cq[i]) == VIP_SUCCESS;
	CHECK(ok, "A creates %d CQs", USER_CQ);
	CHECK_RET(VipCreateCQ(nic[0], 64, &cq[USER_CQ]), VIP_ERROR_RESOURCE,
		  "A's CQ %d: user_max_cq", USER_CQ + 1);
	/* VIs */
	h_vi_attrs(&va, pt[0]);
	ok = true;
	for (i = 0; i < USER_VI; i++)
		ok &= VipCreateVi(nic[0], &va, NULL, NULL, &vi[i]) == VIP_SUCCESS;
	CHECK(ok, "A creates %d VIs", USER_VI);
	CHECK_RET(VipCreateVi(nic[0], &va, NULL, NULL, &vi[USER_VI]), VIP_ERROR_RESOURCE,
		  "A's VI %d: user_max_vi", USER_VI + 1);
	/* provider memory over both sessions: 4M + 2M, then no more */
	CHECK_RET(VipDpdkAllocMem(nic[0], 4 * MiB, &a0), VIP_SUCCESS, "A allocates 4M");
	CHECK_RET(VipDpdkAllocMem(nic[1], 2 * MiB, &a1), VIP_SUCCESS,
		  "and 2M in its other session");
	CHECK_RET(VipDpdkAllocMem(nic[1], 2 * MiB, &a2), VIP_ERROR_RESOURCE,
		  "2M more: user_max_alloc_bytes (6M), though that session holds half its cap");
	ma.Ptag = pt[0];
	/* ordinary memory viad maps in place (the share file): 8K, then no more */
	h = aligned_alloc(4096, 4 * 4096);
	CHECK(h != NULL && VipRegisterMem(nic[0], h, 8192, &ma, &hh) == VIP_SUCCESS,
	      "A registers 8K of its heap (in place)");
	if (h != NULL) {
		CHECK_RET(VipRegisterMem(nic[0], h + 8192, 4096, &ma, &mh[0]), VIP_ERROR_RESOURCE,
			  "4K more in place: user_max_in_place_bytes (8K)");
		CHECK_RET(VipDeregisterMem(nic[0], h, hh), VIP_SUCCESS, "the 8K deregistered");
	}
	/* regions in the allocation: 6 of 4K, then the count; 16K then bytes */
	m = a0;
	ok = m != NULL;
	for (i = 0; ok && i < USER_REGIONS; i++)
		ok = VipRegisterMem(nic[0], m + i * 4096, 4096, &ma, &mh[i]) == VIP_SUCCESS;
	CHECK(ok, "A registers %d regions of 4K", USER_REGIONS);
	if (m != NULL) {
		CHECK_RET(VipRegisterMem(nic[0], m + 6 * 4096, 4096, &ma, &mh[USER_REGIONS]),
			  VIP_ERROR_RESOURCE, "A's region %d: user_max_regions", USER_REGIONS + 1);
		CHECK_RET(VipDeregisterMem(nic[0], m, mh[0]), VIP_SUCCESS, "one deregistered");
		CHECK_RET(VipRegisterMem(nic[0], m + 6 * 4096, 16384, &ma, &mh[USER_REGIONS]),
			  VIP_ERROR_RESOURCE, "16K more (36K): user_max_register_bytes (32K)");
		CHECK_RET(VipRegisterMem(nic[0], m + 6 * 4096, 12288, &ma, &mh[0]), VIP_SUCCESS,
			  "12K more (32K) fits");
	}
	/* outstanding requests: two VipConnectWait held in viad (session 2) */
	for (i = 0; i < 2; i++) {
		w[i] = (struct waiter){ .nic = nic[1], .disc = i ? "limits-w1" : "limits-w0" };
		pthread_create(&w[i].thread, NULL, waiter_main, &w[i]);
	}
	/* until viad holds both, a wait of no time times out at once (it
	 * never waits itself, so it cannot take a waiter's place); then it is
	 * refused */
	end = h_now_ms() + H_TIMEOUT_MS;
	while ((r = connect_wait(nic[0], 0)) == VIP_TIMEOUT && h_now_ms() < end)
		h_sleep_ms(10);
	CHECK_RET(r, VIP_ERROR_RESOURCE, "A's VipConnectWait while two wait: user_max_requests");

	if (write(hold_fd, "H", 1) != 1 || read(go_fd, &c, 1) != 1)
		CHECK(0, "A hears from the test");

	/* release: a NIC with the waits blocked in it, then one of each */
	CHECK_RET(VipCloseNic(nic[1]), VIP_SUCCESS, "A closes its second NIC");
	for (i = 0; i < 2; i++) {
		pthread_join(w[i].thread, NULL);
		CHECK(w[i].rc != VIP_SUCCESS, "its VipConnectWait %u returned (%s)", i,
		      VipDpdkReturnString(w[i].rc));
	}
	CHECK_RET(connect_wait(nic[0], 20), VIP_TIMEOUT,
		  "with them gone, a VipConnectWait waits again");
	CHECK_RET(open_retry(&nic[1]), VIP_SUCCESS, "A opens a second NIC again");
	CHECK_RET(VipDpdkAllocMem(nic[1], 2 * MiB, &a1), VIP_SUCCESS,
		  "and allocates 2M in it again");
	CHECK_RET(VipDestroyVi(vi[0]), VIP_SUCCESS, "A destroys a VI");
	CHECK_RET(VipCreateVi(nic[0], &va, NULL, NULL, &vi[0]), VIP_SUCCESS, "and creates one");
	CHECK_RET(VipDestroyCQ(cq[0]), VIP_SUCCESS, "A destroys a CQ");
	CHECK_RET(VipCreateCQ(nic[0], 64, &cq[0]), VIP_SUCCESS, "and creates one");
	CHECK_RET(VipDestroyPtag(nic[0], pt[1]), VIP_SUCCESS, "A destroys a tag");
	CHECK_RET(VipCreatePtag(nic[0], &pt[1]), VIP_SUCCESS, "and creates one");
	if (m != NULL) {
		CHECK_RET(VipDeregisterMem(nic[0], m + 4096, mh[1]), VIP_SUCCESS,
			  "A deregisters a region");
		CHECK_RET(VipRegisterMem(nic[0], m + 4096, 4096, &ma, &mh[1]), VIP_SUCCESS,
			  "and registers one");
	}
	/* the rest goes with the sessions */
	VipCloseNic(nic[1]);
	VipCloseNic(nic[0]);
	free(h);
	return (int)h_failures();
}

/*
 * User A in a new process, after the last one exited: its sessions were
 * reclaimed, and with them everything they held was uncharged, so each
 * limit can be reached again. Exits holding it all (reclaimed again).
 * @return the failed checks
 */
static int
user_a_again(void)
{
	VIP_NIC_HANDLE nic[USER_SESSIONS];
	VIP_PROTECTION_HANDLE pt;
	VIP_CQ_HANDLE cq;
	VIP_VI_HANDLE vi;
	VIP_MEM_HANDLE mh;
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_VI_ATTRIBUTES va;
	VIP_PVOID a0 = NULL, a1 = NULL;
	unsigned i, n = 0;

	h_set_child("A again");
	if (!CHECK(become(USER_A), "become uid %u", USER_A))
		return 1;
	/* viad ends the last process's sessions when it sees it exit */
	for (i = 0; i < USER_SESSIONS; i++)
		n += open_retry(&nic[i]) == VIP_SUCCESS;
	if (!CHECK(n == USER_SESSIONS, "A opens %d sessions again", USER_SESSIONS))
		return 1;
	n = 0;
	for (i = 0; i < USER_PTAGS; i++)
		n += VipCreatePtag(nic[0], &pt) == VIP_SUCCESS;
	CHECK(n == USER_PTAGS, "%d tags again", USER_PTAGS);
	n = 0;
	for (i = 0; i < USER_CQ; i++)
		n += VipCreateCQ(nic[0], 64, &cq) == VIP_SUCCESS;
	CHECK(n == USER_CQ, "%d CQs again", USER_CQ);
	h_vi_attrs(&va, pt);
	n = 0;
	for (i = 0; i < USER_VI; i++)
		n += VipCreateVi(nic[0], &va, NULL, NULL, &vi) == VIP_SUCCESS;
	CHECK(n == USER_VI, "%d VIs again", USER_VI);
	CHECK(VipDpdkAllocMem(nic[0], 4 * MiB, &a0) == VIP_SUCCESS &&
	      VipDpdkAllocMem(nic[1], 2 * MiB, &a1) == VIP_SUCCESS, "6M allocated again");
	ma.Ptag = pt;
	n = 0;
	for (i = 0; a0 != NULL && i < USER_REGIONS; i++)
		n += VipRegisterMem(nic[0], (uint8_t *)a0 + i * 4096, 4096, &ma, &mh) == VIP_SUCCESS;
	CHECK(n == USER_REGIONS, "%d regions again", USER_REGIONS);
	return (int)h_failures();
}

/*
 * User B, while A holds all it may: open the NIC, create VIs, connect them
 * (a VipConnectWait included) and move a message. @return the failed checks
 */
static int
user_b(void)
{
	VIP_PROTECTION_HANDLE pt = NULL;
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_DESCRIPTOR *sd, *rd, *got = NULL;
	VIP_VI_ATTRIBUTES va;
	VIP_VI_HANDLE a = NULL, b = NULL;
	VIP_MEM_HANDLE mh;
	VIP_NIC_HANDLE nic;
	VIP_PVOID p = NULL;
	uint8_t *m;

	h_set_child("B");
	if (!CHECK(become(USER_B), "become uid %u", USER_B))
		return 1;
	if (!CHECK_RET(VipOpenNic("via0", &nic), VIP_SUCCESS, "B opens the NIC"))
		return (int)h_failures();
	CHECK_RET(VipCreatePtag(nic, &pt), VIP_SUCCESS, "B creates a tag");
	CHECK_RET(VipDpdkAllocMem(nic, 16384, &p), VIP_SUCCESS, "B allocates 16K");
	m = p;
	ma.Ptag = pt;
	h_vi_attrs(&va, pt);
	if (m == NULL ||
	    !CHECK_RET(VipRegisterMem(nic, m, 16384, &ma, &mh), VIP_SUCCESS, "B registers it") ||
	    !CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &a), VIP_SUCCESS, "B creates a VI") ||
	    !CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &b), VIP_SUCCESS, "and another") ||
	    !h_connect(nic, a, nic, b, "limits-b", 10000)) {
		VipCloseNic(nic);
		return (int)h_failures();
	}
	memset(m + 1024, 0x5b, 1000);
	sd = h_desc1(m, m + 1024, mh, 1000, true);
	rd = h_desc1(m + 512, m + 8192, mh, 1000, false);
	CHECK_RET(VipPostRecv(b, rd, mh), VIP_SUCCESS, "B posts a receive");
	CHECK_RET(VipPostSend(a, sd, mh), VIP_SUCCESS, "B posts a send");
	CHECK_RET(VipRecvWait(b, H_TIMEOUT_MS, &got), VIP_SUCCESS, "B's message arrives");
	CHECK(got == rd && rd->CS.Length == 1000 && m[8192] == 0x5b && m[8192 + 999] == 0x5b,
	      "intact");
	VipCloseNic(nic);
	return (int)h_failures();
}

/* Fork @p fn; @return its exit status (failed checks), -1 if it died */
static int
run_child(int (*fn)(void))
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn() > 0 ? 1 : 0);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static void
test_users(void)
{
	static const char *const logged[] = {
		"user_max_sessions", "user_max_ptags", "user_max_cq", "user_max_vi",
		"user_max_alloc_bytes", "user_max_regions", "user_max_register_bytes",
		"user_max_requests", "user_max_in_place_bytes",
	};
	VIP_NIC_HANDLE nic[USER_SESSIONS + 1] = { NULL };
	struct viad_proc v;
	int hold[2], go[2], st = -1;
	char line[96], c = 0;
	pid_t a;
	unsigned i;

	h_note("user A takes every limit of its own; user B still works");
	if (viad_start(&v, "limits", limit_sets) != 0)
		return;
	if (!CHECK(pipe(hold) == 0 && pipe(go) == 0, "pipes"))
		goto out;
	a = fork();
	if (a == 0) {
		close(hold[0]);
		close(go[1]);
		_exit(user_a(hold[1], go[0]) > 0 ? 1 : 0);
	}
	close(hold[1]);
	close(go[0]);
	CHECK(a > 0 && read(hold[0], &c, 1) == 1 && c == 'H', "A holds all it may");
	for (i = 0; i < sizeof(logged) / sizeof(logged[0]); i++) {
		snprintf(line, sizeof(line), "uid %u: limits.%s (", USER_A, logged[i]);
		CHECK(viad_log_contains(&v, line), "viad logs \"%s...\"", line);
	}
	CHECK(run_child(user_b) == 0, "user B opened the NIC, connected VIs and moved data");
	CHECK(write(go[1], "R", 1) == 1, "A may release");
	if (a <= 0 || waitpid(a, &st, 0) != a)
		st = -1;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "A released, then took each again "
	      "(status %#x)", st);
	CHECK(run_child(user_a_again) == 0 && run_child(user_a_again) == 0,
	      "twice, a new process of A exits holding every limit: the reclaim of its "
	      "sessions gives each back");
	close(hold[0]);
	close(go[1]);

	h_note("root is a user like any other");
	CHECK_RET(open_retry(&nic[0]), VIP_SUCCESS, "root opens a NIC");
	CHECK_RET(VipOpenNic("via0", &nic[1]), VIP_SUCCESS, "and a second");
	CHECK_RET(VipOpenNic("via0", &nic[2]), VIP_ERROR_RESOURCE, "not a third");
	CHECK(viad_log_contains(&v, "uid 0: limits.user_max_sessions (2)"), "viad logs uid 0");
	VipCloseNic(nic[0]);
	VipCloseNic(nic[1]);
out:
	viad_stop(&v);
}

static void
test_root_exempt(void)
{
	const char *sets[sizeof(limit_sets) / sizeof(limit_sets[0]) + 1];
	VIP_NIC_HANDLE nic[USER_SESSIONS + 1] = { NULL };
	struct viad_proc v;
	unsigned i, n = 0;
	bool ok = true;

	h_note("limits.root_exempt = yes");
	for (i = 0; limit_sets[i] != NULL; i++)
		sets[n++] = limit_sets[i];
	sets[n++] = "limits.root_exempt=yes";
	sets[n] = NULL;
	if (viad_start(&v, "exempt", sets) != 0)
		return;
	for (i = 0; i < USER_SESSIONS + 1; i++)
		ok &= VipOpenNic("via0", &nic[i]) == VIP_SUCCESS;
	CHECK(ok, "root opens %d sessions", USER_SESSIONS + 1);
	for (i = 0; i < USER_SESSIONS + 1; i++)
		VipCloseNic(nic[i]);
	viad_stop(&v);
}

int
main(int argc, char **argv)
{
	h_init(argc, argv, 110);
	if (geteuid() != 0) {
		h_note("SKIP: needs root (it takes other users' ids)");
		return 77;
	}
	/* the users must reach the socket in the test's directory */
	CHECK(chmod(h_tmpdir(), 0755) == 0, "the test directory is 0755");
	test_users();
	test_root_exempt();
	return h_finish();
}
