/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * poll_cost: what a poll that finds nothing costs the calling thread
 * (issue 18 part 1), in nanoseconds per call, averaged over N calls:
 *   - VipRecvDone on a VI whose receive queue is empty;
 *   - VipCQDone on an empty CQ;
 *   - VipRecvDone with a receive posted that has not completed (the head
 *     is there, its Status not Done: the poll a program spins on).
 * The VI stays Idle (VIA §5.1 lets receives be posted before a
 * connection), so nothing ever completes. Plain VIPL: it builds against
 * any version of the library.
 *
 *   poll_cost [-d NIC] [-n CALLS] [--json]     (viad at $VIAD_SOCKET)
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vipl.h>

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void __attribute__((noreturn))
die(const char *what, VIP_RETURN rc)
{
	fprintf(stderr, "poll_cost: %s: VIP_RETURN %d\n", what, (int)rc);
	exit(1);
}

/* ns per call of @p n calls of VipRecvDone(vi) (cq NULL) or VipCQDone(cq),
 * each of which must answer VIP_NOT_DONE */
static double
cost(VIP_VI_HANDLE vi, VIP_CQ_HANDLE cq, uint64_t n)
{
	VIP_DESCRIPTOR *d;
	VIP_VI_HANDLE v;
	VIP_BOOLEAN recv;
	uint64_t i, t0 = now_ns();
	VIP_RETURN rc;

	for (i = 0; i < n; i++) {
		rc = cq != NULL ? VipCQDone(cq, &v, &recv) : VipRecvDone(vi, &d);
		if (rc != VIP_NOT_DONE)
			die(cq != NULL ? "VipCQDone" : "VipRecvDone", rc);
	}
	return (double)(now_ns() - t0) / (double)n;
}

int
main(int argc, char **argv)
{
	const char *nic_name = "via0";
	uint64_t n = 20000000;
	bool json = false;
	VIP_NIC_HANDLE nic;
	VIP_PROTECTION_HANDLE pt;
	VIP_VI_ATTRIBUTES va;
	VIP_MEM_ATTRIBUTES ma;
	VIP_MEM_HANDLE mh;
	VIP_VI_HANDLE vi;
	VIP_CQ_HANDLE cq;
	VIP_DESCRIPTOR *d;
	VIP_RETURN rc;
	double empty, cq_empty, pending;
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-d") == 0 && i + 1 < argc)
			nic_name = argv[++i];
		else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
			n = strtoull(argv[++i], NULL, 0);
		else if (strcmp(argv[i], "--json") == 0)
			json = true;
		else {
			fprintf(stderr, "usage: poll_cost [-d NIC] [-n CALLS] [--json]\n");
			return 2;
		}
	}
	if (n == 0)
		n = 1;
	if ((rc = VipOpenNic(nic_name, &nic)) != VIP_SUCCESS)
		die("VipOpenNic", rc);
	if ((rc = VipCreatePtag(nic, &pt)) != VIP_SUCCESS)
		die("VipCreatePtag", rc);
	if ((rc = VipCreateCQ(nic, 64, &cq)) != VIP_SUCCESS)
		die("VipCreateCQ", rc);
	memset(&va, 0, sizeof(va));
	va.ReliabilityLevel = VIP_SERVICE_UNRELIABLE;
	va.MaxTransferSize = 1024;
	va.Ptag = pt;
	if ((rc = VipCreateVi(nic, &va, NULL, cq, &vi)) != VIP_SUCCESS)
		die("VipCreateVi", rc);
	/* a legacy program's descriptor: aligned heap memory, registered */
	if (posix_memalign((void **)&d, VIP_DESCRIPTOR_ALIGNMENT, 4096) != 0)
		die("posix_memalign", VIP_ERROR_RESOURCE);
	memset(d, 0, 4096);
	memset(&ma, 0, sizeof(ma));
	ma.Ptag = pt;
	if ((rc = VipRegisterMem(nic, d, 4096, &ma, &mh)) != VIP_SUCCESS)
		die("VipRegisterMem", rc);

	empty = cost(vi, NULL, n);
	cq_empty = cost(NULL, cq, n);
	d->CS.SegCount = 1;
	d->DS[0].Local.Data.Address = (uint8_t *)d + 512;
	d->DS[0].Local.Handle = mh;
	d->DS[0].Local.Length = 1024;
	if ((rc = VipPostRecv(vi, d, mh)) != VIP_SUCCESS)
		die("VipPostRecv", rc);
	pending = cost(vi, NULL, n);

	if (json)
		printf("{\"test\":\"poll_cost\",\"calls\":%llu,\"recv_done_empty_ns\":%.2f,"
		       "\"cq_done_empty_ns\":%.2f,\"recv_done_pending_ns\":%.2f}\n",
		       (unsigned long long)n, empty, cq_empty, pending);
	else
		printf("ns per call, %llu calls each: VipRecvDone empty %.2f, VipCQDone empty %.2f, "
		       "VipRecvDone with a receive pending %.2f\n",
		       (unsigned long long)n, empty, cq_empty, pending);
	VipDisconnect(vi);
	VipCloseNic(nic);
	return 0;
}
