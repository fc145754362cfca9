/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vipl_info: open a VI NIC through viad and show what it offers, exercising
 * the resource calls a VIA application makes before it connects: protection
 * tag, memory registration (ordinary and provider memory), completion queue
 * and VI. Exits non-zero if any call fails.
 *
 *   vipl_info [NIC]        (default via0; also /dev/via_lo, /dev/via_ethN)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vipl.h>
#include <vipl_dpdk.h>

#define BUF_LEN (64 * 1024)

static int failures;

static VIP_RETURN
check(const char *what, VIP_RETURN rc)
{
	printf("  %-28s %s\n", what, VipDpdkReturnString(rc));
	if (rc != VIP_SUCCESS)
		failures++;
	return rc;
}

static void
print_nic(const VIP_NIC_ATTRIBUTES *a)
{
	printf("NIC %s\n", a->Name);
	printf("  address            %02x:%02x:%02x:%02x:%02x:%02x\n", a->LocalNicAddress[0],
	       a->LocalNicAddress[1], a->LocalNicAddress[2], a->LocalNicAddress[3],
	       a->LocalNicAddress[4], a->LocalNicAddress[5]);
	printf("  provider version   0x%lx (DPDK 0x%lx)\n", a->ProviderVersion, a->HardwareVersion);
	printf("  native MTU         %lu\n", a->NativeMTU);
	printf("  thread safe        %s\n", a->ThreadSafe ? "yes" : "no");
	printf("  reliability levels%s%s%s\n",
	       a->ReliabilityLevelSupport & VIP_SERVICE_UNRELIABLE ? " unreliable" : "",
	       a->ReliabilityLevelSupport & VIP_SERVICE_RELIABLE_DELIVERY ? " reliable-delivery" : "",
	       a->ReliabilityLevelSupport & VIP_SERVICE_RELIABLE_RECEPTION ? " reliable-reception" : "");
	printf("  RDMA Read          %s\n", a->RDMAReadSupport ? "yes" : "no");
	printf("  max VIs            %lu\n", a->MaxVI);
	printf("  max CQs            %lu (%lu entries each)\n", a->MaxCQ, a->MaxCQEntries);
	printf("  max descriptors    %lu per queue, %lu segments each\n", a->MaxDescriptorsPerQueue,
	       a->MaxSegmentsPerDesc);
	printf("  max transfer size  %lu\n", a->MaxTransferSize);
	printf("  max regions        %lu (%lu bytes)\n", a->MaxRegisterRegions, a->MaxRegisterBytes);
	printf("  max ptags          %lu\n", a->MaxPtags);
	printf("  max discriminator  %u bytes\n", a->MaxDiscriminatorLen);
}

int
main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "via0";
	VIP_NIC_HANDLE nic;
	VIP_NIC_ATTRIBUTES nic_attr;
	VIP_PROTECTION_HANDLE ptag;
	VIP_MEM_ATTRIBUTES mem_attr;
	VIP_MEM_HANDLE heap_mh, pmem_mh;
	VIP_VI_ATTRIBUTES vi_attr, got;
	VIP_VI_STATE state;
	VIP_BOOLEAN sq_empty, rq_empty;
	VIP_DPDK_PORT_INFO port;
	VIP_DPDK_COUNTERS ctr;
	VIP_CQ_HANDLE cq;
	VIP_VI_HANDLE vi;
	VIP_PVOID pmem;
	char *heap;

	if (VipOpenNic(name, &nic) != VIP_SUCCESS) {
		fprintf(stderr, "vipl_info: cannot open %s (is viad running?)\n", name);
		return 1;
	}
	if (check("VipQueryNic", VipQueryNic(nic, &nic_attr)) == VIP_SUCCESS)
		print_nic(&nic_attr);
	if (check("VipQuerySystemManagementInfo", VipQuerySystemManagementInfo(
			  nic, VIP_DPDK_SMI_PORT, &port)) == VIP_SUCCESS)
		printf("  port               %s glue, link %s, %u Mbps, rx %llu tx %llu frames\n",
		       port.Glue, port.LinkUp ? "up" : "down", port.LinkSpeedMbps,
		       (unsigned long long)port.RxPackets, (unsigned long long)port.TxPackets);

	printf("resources\n");
	check("VipCreatePtag", VipCreatePtag(nic, &ptag));
	memset(&mem_attr, 0, sizeof(mem_attr));
	mem_attr.Ptag = ptag;
	mem_attr.EnableRdmaWrite = VIP_TRUE;
	heap = malloc(BUF_LEN);
	check("VipRegisterMem (malloc)", VipRegisterMem(nic, heap, BUF_LEN, &mem_attr, &heap_mh));
	check("VipDpdkAllocMem", VipDpdkAllocMem(nic, BUF_LEN, &pmem));
	check("VipRegisterMem (provider)", VipRegisterMem(nic, pmem, BUF_LEN, &mem_attr, &pmem_mh));
	check("VipCreateCQ", VipCreateCQ(nic, 1024, &cq));
	memset(&vi_attr, 0, sizeof(vi_attr));
	vi_attr.ReliabilityLevel = VIP_SERVICE_UNRELIABLE;
	vi_attr.MaxTransferSize = nic_attr.MaxTransferSize;
	vi_attr.Ptag = ptag;
	vi_attr.EnableRdmaWrite = VIP_TRUE;
	check("VipCreateVi", VipCreateVi(nic, &vi_attr, cq, cq, &vi));
	if (check("VipQueryVi", VipQueryVi(vi, &state, &got, &sq_empty, &rq_empty)) == VIP_SUCCESS)
		printf("  VI state %s, queues %s\n", state == VIP_STATE_IDLE ? "Idle" : "not Idle",
		       sq_empty && rq_empty ? "empty" : "not empty");
	check("VipDestroyVi", VipDestroyVi(vi));
	check("VipDestroyCQ", VipDestroyCQ(cq));
	check("VipDeregisterMem (provider)", VipDeregisterMem(nic, pmem, pmem_mh));
	check("VipDpdkFreeMem", VipDpdkFreeMem(nic, pmem));
	check("VipDeregisterMem (malloc)", VipDeregisterMem(nic, heap, heap_mh));
	check("VipDestroyPtag", VipDestroyPtag(nic, ptag));
	if (check("VipQuerySystemManagementInfo", VipQuerySystemManagementInfo(
			  nic, VIP_DPDK_SMI_COUNTERS, &ctr)) == VIP_SUCCESS)
		printf("  viad: %llu sessions open, %llu VIs and %llu regions created so far\n",
		       (unsigned long long)ctr.Sessions, (unsigned long long)ctr.VisCreated,
		       (unsigned long long)ctr.RegionsRegistered);
	check("VipCloseNic", VipCloseNic(nic));
	free(heap);
	printf("%s\n", failures == 0 ? "all calls succeeded" : "some calls failed");
	return failures == 0 ? 0 : 1;
}
