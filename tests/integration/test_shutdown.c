/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * viad's life cycle as clients see it:
 *  - SIGTERM / SIGINT while clients hold NICs with VIs: viad exits 0 in
 *    bounded time, announces the stop in every segment, removes its socket,
 *    and the clients' next calls fail with VIP_ERROR_RESOURCE (no hang, no
 *    crash), also for a client busy calling viad at that moment;
 *  - a second viad on the socket of a running one fails clearly and leaves
 *    the first alone;
 *  - the stale socket of a SIGKILLed viad is replaced by the next viad.
 *
 * Usage: it_shutdown PATH/TO/viad
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "via_abi.h"
#include "via_ctl.h"

/* The shared segment header of the (only) session of this process. */
static struct via_shm_header *
session_header(void)
{
	char line[512];
	unsigned long a = 0, b;
	FILE *f = fopen("/proc/self/maps", "re");

	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		if (strstr(line, "viad-session") != NULL && sscanf(line, "%lx-%lx", &a, &b) == 2)
			break;
		a = 0;
	}
	if (f != NULL)
		fclose(f);
	return (struct via_shm_header *)a;
}

static bool
is_socket(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* A client with a bit of everything. */
struct client {
	VIP_NIC_HANDLE nic;
	VIP_PROTECTION_HANDLE pt;
	VIP_CQ_HANDLE cq;
	VIP_VI_HANDLE vi[2];
	VIP_MEM_HANDLE mh;
	char *buf;
	VIP_PVOID alloc;
};

static bool
client_open(struct client *c)
{
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_VI_ATTRIBUTES va;
	bool ok;

	memset(c, 0, sizeof(*c));
	c->buf = malloc(8192);
	ok = VipOpenNic("via0", &c->nic) == VIP_SUCCESS;
	ok = ok && VipCreatePtag(c->nic, &c->pt) == VIP_SUCCESS;
	ok = ok && VipCreateCQ(c->nic, 64, &c->cq) == VIP_SUCCESS;
	h_vi_attrs(&va, c->pt);
	ok = ok && VipCreateVi(c->nic, &va, c->cq, NULL, &c->vi[0]) == VIP_SUCCESS;
	ok = ok && VipCreateVi(c->nic, &va, NULL, NULL, &c->vi[1]) == VIP_SUCCESS;
	ma.Ptag = c->pt;
	ok = ok && VipRegisterMem(c->nic, c->buf, 8192, &ma, &c->mh) == VIP_SUCCESS;
	ok = ok && VipDpdkAllocMem(c->nic, 4096, &c->alloc) == VIP_SUCCESS;
	ok = ok && VipNSInit(c->nic, NULL) == VIP_SUCCESS;
	if (ok)
		memset(c->alloc, 0x6b, 4096);
	return ok;
}

/* Every call of a client whose viad is gone fails with VIP_ERROR_RESOURCE. */
static void
check_dead_client(struct client *c, bool full, const char *why)
{
	VIP_NIC_ATTRIBUTES na;
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_VI_ATTRIBUTES va, got;
	VIP_VI_STATE st;
	VIP_BOOLEAN se, re;
	VIP_DPDK_COUNTERS cnt;
	VIP_PROTECTION_HANDLE pt;
	VIP_CQ_HANDLE cq;
	VIP_VI_HANDLE vi;
	VIP_MEM_HANDLE mh;
	VIP_PVOID a;
	union {
		VIP_NET_ADDRESS a;
		uint8_t b[64];
	} addr;
	uint64_t t0 = h_now_ms();

	/* first, a call served from the library's cache: vipl.h says every
	 * function returns VIP_ERROR_RESOURCE once viad is gone */
	CHECK_RET(VipQueryNic(c->nic, &na), VIP_ERROR_RESOURCE, "%s: VipQueryNic", why);
	CHECK_RET(VipQueryVi(c->vi[0], &st, &got, &se, &re), VIP_ERROR_RESOURCE, "%s: VipQueryVi",
		  why);
	h_vi_attrs(&va, c->pt);
	CHECK_RET(VipCreateVi(c->nic, &va, NULL, NULL, &vi), VIP_ERROR_RESOURCE,
		  "%s: VipCreateVi", why);
	CHECK_RET(VipSetViAttributes(c->vi[1], &va), VIP_ERROR_RESOURCE, "%s: VipSetViAttributes",
		  why);
	CHECK_RET(VipDestroyVi(c->vi[1]), VIP_ERROR_RESOURCE, "%s: VipDestroyVi", why);
	CHECK_RET(VipCreateCQ(c->nic, 8, &cq), VIP_ERROR_RESOURCE, "%s: VipCreateCQ", why);
	CHECK_RET(VipDestroyCQ(c->cq), VIP_ERROR_RESOURCE, "%s: VipDestroyCQ", why);
	CHECK_RET(VipCreatePtag(c->nic, &pt), VIP_ERROR_RESOURCE, "%s: VipCreatePtag", why);
	CHECK_RET(VipDestroyPtag(c->nic, c->pt), VIP_ERROR_RESOURCE, "%s: VipDestroyPtag", why);
	ma.Ptag = c->pt;
	CHECK_RET(VipRegisterMem(c->nic, c->buf, 100, &ma, &mh), VIP_ERROR_RESOURCE,
		  "%s: VipRegisterMem", why);
	CHECK_RET(VipQueryMem(c->nic, c->buf, c->mh, &ma), VIP_ERROR_RESOURCE, "%s: VipQueryMem",
		  why);
	CHECK_RET(VipSetMemAttributes(c->nic, c->buf, c->mh, &ma), VIP_ERROR_RESOURCE,
		  "%s: VipSetMemAttributes", why);
	CHECK_RET(VipDeregisterMem(c->nic, c->buf, c->mh), VIP_ERROR_RESOURCE,
		  "%s: VipDeregisterMem", why);
	CHECK_RET(VipDpdkAllocMem(c->nic, 4096, &a), VIP_ERROR_RESOURCE, "%s: VipDpdkAllocMem", why);
	CHECK_RET(VipDpdkFreeMem(c->nic, c->alloc), VIP_ERROR_RESOURCE, "%s: VipDpdkFreeMem", why);
	CHECK(((uint8_t *)c->alloc)[4095] == 0x6b, "%s: the allocation stays mapped and intact", why);
	CHECK_RET(VipQuerySystemManagementInfo(c->nic, VIP_DPDK_SMI_COUNTERS, &cnt),
		  VIP_ERROR_RESOURCE, "%s: VipQuerySystemManagementInfo", why);
	memset(&addr, 0, sizeof(addr));
	CHECK_RET(VipNSGetHostByName(c->nic, "localhost", &addr.a, 0), VIP_ERROR_RESOURCE,
		  "%s: VipNSGetHostByName", why);
	if (full) {
		CHECK_RET(VipQueryNic(c->nic, &na), VIP_ERROR_RESOURCE,
			  "%s: VipQueryNic after a failed call", why);
		CHECK_RET(VipErrorCallback(c->nic, NULL, NULL), VIP_ERROR_RESOURCE,
			  "%s: VipErrorCallback", why);
	}
	CHECK(h_now_ms() - t0 < 5000, "%s: the failing calls returned at once (%llu ms)", why,
	      (unsigned long long)(h_now_ms() - t0));
	/* vipl.h VipCloseNic: "VIP_ERROR_RESOURCE viad is gone (the handle is
	 * released anyway)" */
	if (full)
		CHECK_RET(VipCloseNic(c->nic), VIP_ERROR_RESOURCE, "%s: VipCloseNic", why);
	else
		VipCloseNic(c->nic);
	CHECK_RET(VipCloseNic(c->nic), VIP_INVALID_PARAMETER, "%s: the NIC handle was released",
		  why);
	CHECK_RET(VipQueryVi(c->vi[0], &st, &got, &se, &re), VIP_INVALID_PARAMETER,
		  "%s: its VI handles were released", why);
	free(c->buf);
}

/* A child that calls viad in a loop until viad goes, then checks the
 * answers stay VIP_ERROR_RESOURCE. Exit status 0 if everything was sane. */
static void
busy_child(int ready_fd)
{
	VIP_NIC_HANDLE nic;
	VIP_PROTECTION_HANDLE pt;
	VIP_VI_ATTRIBUTES va;
	VIP_VI_HANDLE vi;
	VIP_DPDK_COUNTERS c;
	VIP_RETURN r;
	unsigned i, odd = 0;

	h_set_child("busy");
	if (VipOpenNic("via0", &nic) != VIP_SUCCESS || VipCreatePtag(nic, &pt) != VIP_SUCCESS)
		_exit(3);
	h_vi_attrs(&va, pt);
	if (write(ready_fd, "R", 1) != 1)
		_exit(4);
	for (;;) {
		r = VipCreateVi(nic, &va, NULL, NULL, &vi);
		if (r == VIP_SUCCESS)
			r = VipDestroyVi(vi);
		if (r == VIP_SUCCESS)
			r = VipQuerySystemManagementInfo(nic, VIP_DPDK_SMI_COUNTERS, &c);
		if (r == VIP_ERROR_RESOURCE)
			break;
		if (r != VIP_SUCCESS)
			odd++;
	}
	for (i = 0; i < 10; i++)
		odd += VipCreateVi(nic, &va, NULL, NULL, &vi) != VIP_ERROR_RESOURCE;
	VipCloseNic(nic);
	_exit(odd == 0 ? 0 : 1);
}

static void
test_sigterm_with_clients(void)
{
	struct viad_proc v;
	struct client c;
	struct via_shm_header *h;
	int p[2], raw, st;
	pid_t busy;
	char b;
	struct pollfd pfd;
	struct via_ctl_hdr hdr;

	h_note("SIGTERM while clients hold NICs with VIs");
	if (viad_start(&v, "term", NULL) != 0)
		return;
	CHECK(client_open(&c), "a client opens a NIC, a tag, a CQ, 2 VIs, a region, an allocation");
	h = session_header();
	CHECK(h != NULL && h->cookie == VIA_SHM_COOKIE && h->abi_version == VIA_ABI_VERSION,
	      "the client maps its session segment");
	CHECK(h != NULL && __atomic_load_n(&h->daemon_state, __ATOMIC_ACQUIRE) == VIA_DAEMON_RUNNING,
	      "the segment says viad is running");
	/* a raw client with half a request pending must not hold viad up */
	raw = h_raw_connect(&v);
	via_ctl_hdr_init(&hdr, VIA_CTL_SMI_COUNTERS, 0, 1, 0);
	CHECK(raw >= 0 && send(raw, &hdr, 7, MSG_NOSIGNAL) == 7, "a raw client sends half a header");
	/* and another process is busy calling viad */
	CHECK(pipe(p) == 0, "pipe");
	busy = fork();
	if (busy == 0) {
		close(p[0]);
		busy_child(p[1]);
	}
	close(p[1]);
	pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
	CHECK(busy > 0 && poll(&pfd, 1, H_TIMEOUT_MS) == 1 && read(p[0], &b, 1) == 1,
	      "a busy client is calling viad");
	close(p[0]);
	h_sleep_ms(50);

	viad_stop(&v);
	CHECK(h != NULL && __atomic_load_n(&h->daemon_state, __ATOMIC_ACQUIRE) == VIA_DAEMON_STOPPING,
	      "viad announced the stop in the client's segment");
	CHECK(access(v.sock, F_OK) != 0, "viad removed its socket");
	CHECK(waitpid(busy, &st, 0) == busy && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the busy client saw VIP_ERROR_RESOURCE and nothing odd (status %#x)", st);
	if (raw >= 0)
		close(raw);
	check_dead_client(&c, true, "after SIGTERM");
}

static void
test_sigint(void)
{
	struct viad_proc v;
	VIP_NIC_HANDLE nic;

	h_note("SIGINT");
	if (viad_start(&v, "int", NULL) != 0)
		return;
	CHECK_RET(VipOpenNic("via0", &nic), VIP_SUCCESS, "a client opens a NIC");
	kill(v.pid, SIGINT);
	CHECK(viad_wait_exit(&v, H_TIMEOUT_MS) == 0 && WIFEXITED(v.status) &&
	      WEXITSTATUS(v.status) == 0, "viad exits 0 on SIGINT");
	if (v.pid > 0)
		viad_kill(&v);
	VipCloseNic(nic);
}

static void
test_second_viad(void)
{
	struct viad_proc first, second, third;
	const char *sets_same_instance[2];
	char inst[128];
	VIP_NIC_HANDLE nic;
	VIP_PROTECTION_HANDLE pt;
	VIP_VI_ATTRIBUTES va;
	VIP_VI_HANDLE vi;

	h_note("a second viad on the socket of a running one");
	if (viad_start(&first, "first", NULL) != 0)
		return;
	CHECK_RET(VipOpenNic("via0", &nic), VIP_SUCCESS, "a client opens a NIC on the first viad");
	viad_spawn(&second, "second", first.sock, NULL);
	CHECK(viad_wait_exit(&second, H_TIMEOUT_MS) == 0, "the second viad exits by itself");
	CHECK(WIFEXITED(second.status) && WEXITSTATUS(second.status) != 0,
	      "with a non-zero status (%d)", WIFEXITED(second.status) ? WEXITSTATUS(second.status) : -1);
	CHECK(viad_log_contains(&second, "another viad is serving it"),
	      "and says that another viad serves the socket");
	if (second.pid > 0)
		viad_kill(&second);
	snprintf(inst, sizeof(inst), "viad.instance=%s", first.instance);
	sets_same_instance[0] = inst;
	sets_same_instance[1] = NULL;
	viad_spawn(&third, "third", first.sock, sets_same_instance);
	CHECK(viad_wait_exit(&third, H_TIMEOUT_MS) == 0 && WIFEXITED(third.status) &&
	      WEXITSTATUS(third.status) != 0,
	      "a viad with the same instance name and socket fails too");
	if (third.pid > 0)
		viad_kill(&third);
	CHECK(viad_alive(&first) && is_socket(first.sock), "the first viad and its socket remain");
	viad_use(&first);
	CHECK_RET(VipCreatePtag(nic, &pt), VIP_SUCCESS, "the existing client still works");
	h_vi_attrs(&va, pt);
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &vi), VIP_SUCCESS, "it creates a VI");
	CHECK_RET(VipDestroyVi(vi), VIP_SUCCESS, "and destroys it");
	CHECK_RET(VipDestroyPtag(nic, pt), VIP_SUCCESS, "and its tag");
	CHECK_RET(VipCloseNic(nic), VIP_SUCCESS, "close");
	CHECK_RET(VipOpenNic("via0", &nic), VIP_SUCCESS, "new clients reach the first viad");
	CHECK_RET(VipCloseNic(nic), VIP_SUCCESS, "close");
	viad_stop(&first);
}

static void
test_stale_socket(void)
{
	struct viad_proc old, fresh;
	struct client c;
	VIP_NIC_HANDLE nic = NULL;
	VIP_PROTECTION_HANDLE pt;
	VIP_VI_ATTRIBUTES va;
	VIP_VI_HANDLE vi;

	h_note("the stale socket of a SIGKILLed viad");
	if (viad_start(&old, "killed", NULL) != 0)
		return;
	CHECK(client_open(&c), "a client opens a NIC with objects");
	viad_kill(&old);
	CHECK(WIFSIGNALED(old.status) && WTERMSIG(old.status) == SIGKILL, "viad was SIGKILLed");
	CHECK(is_socket(old.sock), "its socket file is left behind");
	CHECK_RET(VipOpenNic("via0", &nic), VIP_ERROR_RESOURCE,
		  "VipOpenNic on the stale socket: viad is not running");
	viad_spawn(&fresh, "fresh", old.sock, NULL);
	CHECK(viad_wait_ready(&fresh, H_TIMEOUT_MS) == 0, "a new viad starts on the same socket");
	CHECK(is_socket(fresh.sock), "the socket is there");
	viad_use(&fresh);
	/* the old client does not come back to life with the new viad */
	check_dead_client(&c, false, "after SIGKILL and restart");
	CHECK_RET(VipOpenNic("via0", &nic), VIP_SUCCESS, "a new client opens a NIC");
	CHECK_RET(VipCreatePtag(nic, &pt), VIP_SUCCESS, "and creates a tag");
	h_vi_attrs(&va, pt);
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &vi), VIP_SUCCESS, "and a VI");
	CHECK_RET(VipDestroyVi(vi), VIP_SUCCESS, "destroys the VI");
	CHECK_RET(VipCloseNic(nic), VIP_SUCCESS, "closes the NIC with the tag open");
	if (fresh.pid > 0)
		viad_stop(&fresh);
	CHECK(access(fresh.sock, F_OK) != 0, "the socket is removed after a clean exit");
}

static void
test_bad_config(void)
{
	struct viad_proc v;
	char sock[256];
	const char *sets[] = { "limits.max_vi=0", NULL };

	h_note("a bad configuration");
	snprintf(sock, sizeof(sock), "%s/badconf.sock", h_tmpdir());
	viad_spawn(&v, "badconf", sock, sets);
	CHECK(viad_wait_exit(&v, H_TIMEOUT_MS) == 0 && WIFEXITED(v.status) &&
	      WEXITSTATUS(v.status) != 0, "viad refuses limits.max_vi=0 with a non-zero status");
	CHECK(viad_log_contains(&v, "max_vi"), "and names the key");
	CHECK(access(sock, F_OK) != 0, "it created no socket");
	if (v.pid > 0)
		viad_kill(&v);
}

int
main(int argc, char **argv)
{
	h_init(argc, argv, 115);
	test_sigterm_with_clients();
	test_sigint();
	test_second_viad();
	test_stale_socket();
	test_bad_config();
	return h_finish();
}
