/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Adaptive polling (viad.poll_mode = adaptive, issue 6): an idle viad uses
 * no CPU, and a client that posts while the poller sleeps wakes it
 * (NEED_WAKEUP, via_abi.h) - never a lost wake-up. The sleep is bounded by
 * adaptive_timeout_us; set to 2 s here, a lost wake-up shows as a round
 * trip of about 2 s, which the test refuses. Seeded random pauses between
 * round trips make the poller fall asleep at every point of the protocol.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <vipl.h>
#include <vipl_dpdk.h>

#include "harness.h"

#define ROUNDS 3000
#define LOST_WAKEUP_MS 1000   /* far below the 2 s sleep bound, far above any honest RTT */

static VIP_NIC_HANDLE nic;
static VIP_VI_HANDLE srv, cli;

static void
desc_set(VIP_DESCRIPTOR *d, void *buf, VIP_MEM_HANDLE mh, VIP_UINT32 len)
{
	memset(d, 0, sizeof(*d));
	d->CS.SegCount = 1;
	d->CS.Length = len;
	d->DS[0].Local.Data.Address = buf;
	d->DS[0].Local.Handle = mh;
	d->DS[0].Local.Length = len;
}

static double
viad_cpu_s(pid_t pid)
{
	unsigned long ut = 0, st = 0;
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	if (fscanf(f, "%*d %*s %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		ut = st = 0;
	fclose(f);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

int
main(int argc, char **argv)
{
	static const char *const sets[] = {
		"viad.poll_mode=adaptive", "viad.idle_spin_us=20",
		"viad.adaptive_timeout_us=2000000", NULL,
	};
	VIP_PROTECTION_HANDLE pt;
	VIP_MEM_ATTRIBUTES ma;
	VIP_VI_ATTRIBUTES va;
	VIP_MEM_HANDLE mh;
	VIP_DESCRIPTOR *sd, *rd, *out;
	struct viad_proc v;
	uint64_t seed, worst = 0;
	unsigned i, slow = 0;
	double c0, c1;
	char *mem;

	h_init(argc, argv, 120);
	seed = h_seed();
	if (viad_start(&v, "adaptive", sets) != 0)
		return h_finish();

	/* idle: the poller sleeps, viad uses no CPU to speak of */
	h_sleep_ms(300);
	c0 = viad_cpu_s(v.pid);
	h_sleep_ms(1000);
	c1 = viad_cpu_s(v.pid);
	CHECK(c0 >= 0 && c1 - c0 < 0.1, "an idle viad uses < 10%% of a CPU (%.2f s in 1 s)", c1 - c0);

	CHECK_RET(VipOpenNic("via0", &nic), VIP_SUCCESS, "open");
	CHECK_RET(VipCreatePtag(nic, &pt), VIP_SUCCESS, "ptag");
	CHECK_RET(h_alloc(nic, 1 << 16, (VIP_PVOID *)&mem), VIP_SUCCESS, "memory");
	memset(&ma, 0, sizeof(ma));
	ma.Ptag = pt;
	CHECK_RET(VipRegisterMem(nic, mem, 1 << 16, &ma, &mh), VIP_SUCCESS, "register");
	h_vi_attrs(&va, pt);
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &srv), VIP_SUCCESS, "server VI");
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &cli), VIP_SUCCESS, "client VI");
	h_connect(nic, cli, nic, srv, "ad", 10000);
	if (h_failures() != 0)
		return h_finish();

	sd = (VIP_DESCRIPTOR *)mem;
	rd = (VIP_DESCRIPTOR *)(mem + 256);
	for (i = 0; i < ROUNDS; i++) {
		uint64_t start, rtt;
		unsigned pause = (unsigned)(h_rand(&seed) % 3000);   /* 0..3 ms: asleep or not */

		if (pause > 100)
			usleep(pause);
		desc_set(rd, mem + 4096, mh, 64);
		desc_set(sd, mem + 8192, mh, 64);
		start = h_now_ms();
		if (VipPostRecv(srv, rd, mh) != VIP_SUCCESS || VipPostSend(cli, sd, mh) != VIP_SUCCESS ||
		    VipRecvWait(srv, 5000, &out) != VIP_SUCCESS || VipSendWait(cli, 5000, &out) != VIP_SUCCESS) {
			CHECK(0, "round %u completes", i);
			break;
		}
		rtt = h_now_ms() - start;
		if (rtt > worst)
			worst = rtt;
		slow += rtt >= LOST_WAKEUP_MS;
		if (slow == 3)
			break;          /* a lost wake-up: no need to wait out the rest */
	}
	CHECK(slow == 0, "%u round trips after random pauses, none waits for the 2 s sleep bound "
	      "(lost wake-ups: %u, worst %llu ms)", i, slow, (unsigned long long)worst);
	CHECK_RET(VipDisconnect(cli), VIP_SUCCESS, "disconnect");
	CHECK_RET(VipCloseNic(nic), VIP_SUCCESS, "close");
	viad_stop(&v);
	return h_finish();
}
