/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every VIPL call this build implements, and every error return that VIA 1.0
 * section 9 (and vipl.h / vipl_dpdk.h) lists for it, through a real viad.
 *
 * Two daemons: "main" with non-default limits (so VipQueryNic can be
 * compared with them) and a hosts file for the name service, and "small"
 * with tiny limits for the VIP_ERROR_RESOURCE paths.
 *
 * Usage: it_api PATH/TO/viad
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"

#define MAIN_MAX_CQ_ENTRIES 2048
#define MAIN_MAX_TRANSFER   131072
#define MAIN_MAX_DISCRIM    32
#define MAIN_MAX_SEGMENTS   300
#define MAIN_MAX_DESC       256
#define MAIN_MAX_CQ         64
#define MAIN_MAX_VI         64
#define MAIN_MAX_PTAGS      128
#define MAIN_MAX_REGIONS    256
#define MAIN_MAX_REG_BYTES  (64ul << 20)

#define SMALL_MAX_VI       4
#define SMALL_MAX_PTAGS    4
#define SMALL_MAX_REGIONS  4
#define SMALL_MAX_CQ       3
#define SMALL_MAX_SESSIONS 3
#define SMALL_MAX_ALLOC    (64ul << 10)

static const uint8_t mac_alpha[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 };
static const uint8_t mac_beta0[6] = { 0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee };
static const uint8_t mac_beta1[6] = { 0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xef };
static const uint8_t mac_nic[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x00 };

static size_t page_size;
/* the main NIC's attributes: the RDMA Read and reliability checks follow
 * what the NIC announces (this build: neither RDMA Read nor the reliable
 * levels) */
static VIP_NIC_ATTRIBUTES g_attr;

static void
fake_vi_cb(VIP_PVOID c, VIP_NIC_HANDLE n, VIP_VI_HANDLE v, VIP_DESCRIPTOR *d)
{
	(void)c;
	(void)n;
	(void)v;
	(void)d;
}

static void
fake_cq_cb(VIP_PVOID c, VIP_NIC_HANDLE n, VIP_VI_HANDLE v, VIP_BOOLEAN r)
{
	(void)c;
	(void)n;
	(void)v;
	(void)r;
}

static void
fake_err_cb(VIP_PVOID c, VIP_ERROR_DESCRIPTOR *e)
{
	(void)c;
	(void)e;
}

static void *
map_pages(size_t n, int prot)
{
	void *p = mmap(NULL, n * page_size, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		CHECK(0, "mmap %zu pages: %s", n, strerror(errno));
		return NULL;
	}
	if (prot & PROT_WRITE)
		memset(p, 0x5a, n * page_size);
	return p;
}

/* Locked memory of this process (VmLck), in kB; -1 if unknown. */
static long
vm_locked_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f;

	/* ASan makes mlock() a no-op (its interceptor): nothing to count */
#if defined(__SANITIZE_ADDRESS__)
	return -1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	return -1;
#endif
#endif
	f = fopen("/proc/self/status", "re");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "VmLck: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

/* ---------------------------------------------------------------------- */

static void
test_open_close(void)
{
	VIP_NIC_HANDLE a = NULL, b = NULL, h = (VIP_NIC_HANDLE)0x1234;
	VIP_DPDK_COUNTERS c0, c1;
	char longname[200];
	char *saved;

	h_note("VipOpenNic / VipCloseNic");
	CHECK_RET(VipOpenNic("via0", &a), VIP_SUCCESS, "open via0");
	CHECK(a != NULL, "open via0 returns a handle");
	CHECK_RET(VipOpenNic(VIPL_DPDK_NIC_LOOPBACK, &b), VIP_SUCCESS, "open /dev/via_lo");
	CHECK(b != NULL && b != a, "the second open returns another handle");
	CHECK(h_wait_sessions(a, 2, NULL), "viad counts 2 sessions");
	h_counters(a, &c0);

	CHECK_RET(VipOpenNic("nosuch0", &h), VIP_INVALID_PARAMETER, "open of an unknown NIC");
	CHECK_RET(VipOpenNic("/dev/via_eth0", &h), VIP_INVALID_PARAMETER,
		  "open /dev/via_eth0 (no Ethernet port configured)");
	CHECK_RET(VipOpenNic("via1", &h), VIP_INVALID_PARAMETER, "open via1 (only via0 exists)");
	CHECK_RET(VipOpenNic("", &h), VIP_INVALID_PARAMETER, "open of the empty name");
	memset(longname, 'v', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	CHECK_RET(VipOpenNic(longname, &h), VIP_INVALID_PARAMETER, "open of a 199-character name");
	CHECK_RET(VipOpenNic(NULL, &h), VIP_INVALID_PARAMETER, "open with a NULL name");
	CHECK_RET(VipOpenNic("via0", NULL), VIP_INVALID_PARAMETER, "open with a NULL handle pointer");
	CHECK(h == (VIP_NIC_HANDLE)0x1234, "failed opens leave *NicHandle alone");
	CHECK(h_wait_sessions(a, 2, NULL), "failed opens leave no session behind in viad");
	h_counters(a, &c1);
	CHECK(c1.ControlErrors >= c0.ControlErrors + 3,
	      "viad counted the refused OPENs as control errors (%llu -> %llu)",
	      (unsigned long long)c0.ControlErrors, (unsigned long long)c1.ControlErrors);

	saved = strdup(getenv("VIAD_SOCKET"));
	setenv("VIAD_SOCKET", "/nonexistent/dir/viad.sock", 1);
	CHECK_RET(VipOpenNic("via0", &h), VIP_ERROR_RESOURCE, "open while no viad listens");
	setenv("VIAD_SOCKET", saved, 1);
	free(saved);

	CHECK_RET(VipCloseNic(NULL), VIP_INVALID_PARAMETER, "close of NULL");
	CHECK_RET(VipCloseNic((VIP_NIC_HANDLE)0x1234), VIP_INVALID_PARAMETER,
		  "close of a made-up handle");
	CHECK_RET(VipCloseNic(b), VIP_SUCCESS, "close /dev/via_lo session");
	CHECK_RET(VipCloseNic(b), VIP_INVALID_PARAMETER, "second close of the same handle");
	CHECK_RET(VipCloseNic(a), VIP_SUCCESS, "close via0 session");
	CHECK_RET(VipCloseNic(a), VIP_INVALID_PARAMETER, "second close of via0");
}

static void
test_query_nic(VIP_NIC_HANDLE nic)
{
	VIP_NIC_ATTRIBUTES a;

	h_note("VipQueryNic");
	memset(&a, 0xa5, sizeof(a));
	CHECK_RET(VipQueryNic(nic, &a), VIP_SUCCESS, "query the NIC");
	CHECK(strcmp(a.Name, "via0") == 0, "Name is via0 (\"%.64s\")", a.Name);
	CHECK(a.NicAddressLen == 6, "NicAddressLen is 6 (%u)", a.NicAddressLen);
	CHECK(a.LocalNicAddress != NULL && memcmp(a.LocalNicAddress, mac_nic, 6) == 0,
	      "LocalNicAddress is 02:00:00:00:00:00");
	CHECK(a.ThreadSafe == VIP_TRUE, "ThreadSafe is VIP_TRUE");
	CHECK(a.ProviderVersion == VIPL_DPDK_PROVIDER_VERSION, "ProviderVersion is %#lx (%#lx)",
	      (unsigned long)VIPL_DPDK_PROVIDER_VERSION, a.ProviderVersion);
	CHECK(a.MaxDiscriminatorLen >= 16, "MaxDiscriminatorLen >= 16");
	CHECK(a.MaxSegmentsPerDesc >= 252, "MaxSegmentsPerDesc >= 252");
	CHECK(a.MaxTransferSize >= 32768, "MaxTransferSize >= 32768");
	CHECK(a.MaxCQEntries >= 1024, "MaxCQEntries >= 1024");
	CHECK(a.ReliabilityLevelSupport & VIP_SERVICE_UNRELIABLE,
	      "ReliabilityLevelSupport includes VIP_SERVICE_UNRELIABLE (%#x)",
	      a.ReliabilityLevelSupport);
	CHECK(a.RDMAReadSupport == VIP_FALSE || a.RDMAReadSupport == VIP_TRUE,
	      "RDMAReadSupport is a boolean (%s)", a.RDMAReadSupport ? "TRUE" : "FALSE");
	g_attr = a;
	CHECK(a.NativeMTU >= 68, "NativeMTU is plausible (%lu)", a.NativeMTU);
	/* the --set overrides of this viad */
	CHECK(a.MaxCQEntries == MAIN_MAX_CQ_ENTRIES, "MaxCQEntries = limits.max_cq_entries (%lu)",
	      a.MaxCQEntries);
	CHECK(a.MaxTransferSize == MAIN_MAX_TRANSFER,
	      "MaxTransferSize = limits.max_transfer_size (%lu)", a.MaxTransferSize);
	CHECK(a.MaxDiscriminatorLen == MAIN_MAX_DISCRIM,
	      "MaxDiscriminatorLen = limits.max_discriminator_len (%u)", a.MaxDiscriminatorLen);
	CHECK(a.MaxSegmentsPerDesc == MAIN_MAX_SEGMENTS,
	      "MaxSegmentsPerDesc = limits.max_segments_per_desc (%lu)", a.MaxSegmentsPerDesc);
	CHECK(a.MaxDescriptorsPerQueue == MAIN_MAX_DESC,
	      "MaxDescriptorsPerQueue = limits.max_desc_per_queue (%lu)", a.MaxDescriptorsPerQueue);
	CHECK(a.MaxCQ == MAIN_MAX_CQ, "MaxCQ = limits.max_cq (%lu)", a.MaxCQ);
	CHECK(a.MaxVI == MAIN_MAX_VI, "MaxVI = limits.max_vi (%lu)", a.MaxVI);
	CHECK(a.MaxPtags == MAIN_MAX_PTAGS, "MaxPtags = limits.max_ptags (%lu)", a.MaxPtags);
	CHECK(a.MaxRegisterRegions == MAIN_MAX_REGIONS,
	      "MaxRegisterRegions = limits.max_regions (%lu)", a.MaxRegisterRegions);
	CHECK(a.MaxRegisterBytes == MAIN_MAX_REG_BYTES,
	      "MaxRegisterBytes = limits.max_register_bytes (%lu)", a.MaxRegisterBytes);
	CHECK(a.MaxRegisterBlockBytes > 0 && a.MaxRegisterBlockBytes <= a.MaxRegisterBytes,
	      "MaxRegisterBlockBytes is within MaxRegisterBytes");
	CHECK_RET(VipQueryNic(nic, NULL), VIP_INVALID_PARAMETER, "query with NULL Attributes");
	CHECK_RET(VipQueryNic(NULL, &a), VIP_INVALID_PARAMETER, "query of a NULL NIC");
	CHECK_RET(VipQueryNic((VIP_NIC_HANDLE)0x99, &a), VIP_INVALID_PARAMETER,
		  "query of a made-up NIC handle");
}

/* ---------------------------------------------------------------------- */

static void
test_ptags(VIP_NIC_HANDLE nic, VIP_NIC_HANDLE other)
{
	VIP_PROTECTION_HANDLE p1 = NULL, p2 = NULL, po = NULL, dummy;
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_VI_ATTRIBUTES va;
	VIP_VI_HANDLE vi = NULL;
	VIP_MEM_HANDLE mh = 0;
	VIP_DPDK_COUNTERS c0, c1;
	char *buf = malloc(5000);

	h_note("VipCreatePtag / VipDestroyPtag");
	h_counters(nic, &c0);
	CHECK_RET(VipCreatePtag(nic, &p1), VIP_SUCCESS, "create a ptag");
	CHECK_RET(VipCreatePtag(nic, &p2), VIP_SUCCESS, "create a second ptag");
	CHECK(p1 != NULL && p2 != NULL && p1 != p2, "two distinct non-NULL tags");
	CHECK_RET(VipCreatePtag(nic, NULL), VIP_INVALID_PARAMETER, "create with NULL ProtectionTag");
	CHECK_RET(VipCreatePtag(NULL, &dummy), VIP_INVALID_PARAMETER, "create on a NULL NIC");
	h_counters(nic, &c1);
	CHECK(c1.PtagsCreated == c0.PtagsCreated + 2, "PtagsCreated grew by 2");

	CHECK_RET(VipDestroyPtag(nic, NULL), VIP_INVALID_PARAMETER, "destroy a NULL tag");
	CHECK_RET(VipDestroyPtag(nic, (VIP_PROTECTION_HANDLE)0x7777), VIP_INVALID_PARAMETER,
		  "destroy a made-up tag");
	CHECK_RET(VipDestroyPtag(nic, (VIP_PROTECTION_HANDLE)(uintptr_t)0x100000001ull),
		  VIP_INVALID_PARAMETER, "destroy a tag value above 32 bits");
	CHECK_RET(VipDestroyPtag(NULL, p1), VIP_INVALID_PARAMETER, "destroy on a NULL NIC");

	/* in use by a VI */
	h_vi_attrs(&va, p1);
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &vi), VIP_SUCCESS, "create a VI with tag 1");
	CHECK_RET(VipDestroyPtag(nic, p1), VIP_ERROR_RESOURCE, "destroy a tag a VI uses");
	CHECK_RET(VipDestroyVi(vi), VIP_SUCCESS, "destroy the VI");
	/* in use by a region */
	ma.Ptag = p1;
	CHECK_RET(VipRegisterMem(nic, buf, 5000, &ma, &mh), VIP_SUCCESS,
		  "register a region with tag 1");
	CHECK_RET(VipDestroyPtag(nic, p1), VIP_ERROR_RESOURCE, "destroy a tag a region uses");
	CHECK_RET(VipDeregisterMem(nic, buf, mh), VIP_SUCCESS, "deregister the region");
	CHECK_RET(VipDestroyPtag(nic, p1), VIP_SUCCESS, "destroy the now unused tag");
	CHECK_RET(VipDestroyPtag(nic, p1), VIP_INVALID_PARAMETER, "destroy it a second time");
	h_vi_attrs(&va, p1);
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &vi), VIP_INVALID_PTAG,
		  "a destroyed tag is refused by VipCreateVi");

	/* a tag of another session */
	CHECK_RET(VipCreatePtag(other, &po), VIP_SUCCESS, "create a tag in the second session");
	CHECK_RET(VipDestroyPtag(nic, po), VIP_INVALID_PARAMETER,
		  "destroy another session's tag");
	h_vi_attrs(&va, po);
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &vi), VIP_INVALID_PTAG,
		  "another session's tag is refused by VipCreateVi");
	ma.Ptag = po;
	CHECK_RET(VipRegisterMem(nic, buf, 5000, &ma, &mh), VIP_INVALID_PTAG,
		  "another session's tag is refused by VipRegisterMem");
	CHECK_RET(VipDestroyPtag(other, po), VIP_SUCCESS,
		  "the tag still belongs to its session, which destroys it");
	CHECK_RET(VipDestroyPtag(nic, p2), VIP_SUCCESS, "destroy tag 2");
	h_counters(nic, &c1);
	CHECK(c1.PtagsDestroyed == c0.PtagsDestroyed + 3, "PtagsDestroyed grew by 3");
	free(buf);
}

static void
test_ptag_limit(VIP_NIC_HANDLE nic)
{
	VIP_PROTECTION_HANDLE p[SMALL_MAX_PTAGS + 1];
	VIP_NIC_ATTRIBUTES a;
	unsigned i;
	bool ok = true;

	h_note("ptag limit (limits.max_ptags=%d)", SMALL_MAX_PTAGS);
	VipQueryNic(nic, &a);
	CHECK(a.MaxPtags == SMALL_MAX_PTAGS, "MaxPtags is %d", SMALL_MAX_PTAGS);
	for (i = 0; i < SMALL_MAX_PTAGS; i++)
		ok &= VipCreatePtag(nic, &p[i]) == VIP_SUCCESS;
	CHECK(ok, "create %d tags", SMALL_MAX_PTAGS);
	CHECK_RET(VipCreatePtag(nic, &p[SMALL_MAX_PTAGS]), VIP_ERROR_RESOURCE,
		  "one tag more than MaxPtags");
	CHECK_RET(VipDestroyPtag(nic, p[0]), VIP_SUCCESS, "destroy one");
	CHECK_RET(VipCreatePtag(nic, &p[0]), VIP_SUCCESS, "then one can be created again");
	ok = true;
	for (i = 0; i < SMALL_MAX_PTAGS; i++)
		ok &= VipDestroyPtag(nic, p[i]) == VIP_SUCCESS;
	CHECK(ok, "destroy all tags");
}

/* ---------------------------------------------------------------------- */

static void
test_register(VIP_NIC_HANDLE nic, VIP_NIC_HANDLE other)
{
	VIP_PROTECTION_HANDLE pt = NULL, pt2 = NULL, pto = NULL;
	VIP_MEM_ATTRIBUTES ma = { 0 }, q;
	VIP_MEM_HANDLE h = 0, h2 = 0, ho = 0;
	VIP_DPDK_COUNTERS c0, c1;
	char stackbuf[3000];
	char *heap = malloc(10000);
	char *m, *hole, *ro, *none, *gone, *big;
	long lk0, lk;

	h_note("VipRegisterMem / VipDeregisterMem / VipQueryMem / VipSetMemAttributes");
	CHECK_RET(VipCreatePtag(nic, &pt), VIP_SUCCESS, "create a tag");
	CHECK_RET(VipCreatePtag(nic, &pt2), VIP_SUCCESS, "create a second tag");
	CHECK_RET(VipCreatePtag(other, &pto), VIP_SUCCESS, "create a tag in the second session");
	ma.Ptag = pt;
	h_counters(nic, &c0);

	/* malloc'd memory */
	CHECK_RET(VipRegisterMem(nic, heap, 10000, &ma, &h), VIP_SUCCESS, "register malloc'd memory");
	CHECK(h != 0, "the memory handle is not 0");
	memset(&q, 0xff, sizeof(q));
	CHECK_RET(VipQueryMem(nic, heap, h, &q), VIP_SUCCESS, "query it");
	CHECK(q.Ptag == pt && q.EnableRdmaWrite == VIP_FALSE && q.EnableRdmaRead == VIP_FALSE,
	      "the region has the attributes it was registered with");
	h_counters(nic, &c1);
	CHECK(c1.RegionsRegistered == c0.RegionsRegistered + 1, "RegionsRegistered grew by 1");
	CHECK(c1.BytesRegistered >= c0.BytesRegistered + 10000 &&
	      c1.BytesRegistered <= c0.BytesRegistered + 10000 + 2 * page_size,
	      "BytesRegistered grew by the page-rounded length (%llu -> %llu)",
	      (unsigned long long)c0.BytesRegistered, (unsigned long long)c1.BytesRegistered);

	/* VipSetMemAttributes */
	ma.EnableRdmaWrite = VIP_TRUE;
	CHECK_RET(VipSetMemAttributes(nic, heap, h, &ma), VIP_SUCCESS, "enable RDMA Write");
	CHECK_RET(VipQueryMem(nic, heap, h, &q), VIP_SUCCESS, "query it");
	CHECK(q.EnableRdmaWrite == VIP_TRUE && q.Ptag == pt, "RDMA Write is now enabled");
	ma.Ptag = pt2;
	CHECK_RET(VipSetMemAttributes(nic, heap, h, &ma), VIP_SUCCESS, "move it to tag 2");
	CHECK_RET(VipQueryMem(nic, heap, h, &q), VIP_SUCCESS, "query it");
	CHECK(q.Ptag == pt2, "the region has tag 2");
	CHECK_RET(VipDestroyPtag(nic, pt2), VIP_ERROR_RESOURCE, "tag 2 is now in use");
	ma.Ptag = NULL;
	CHECK_RET(VipSetMemAttributes(nic, heap, h, &ma), VIP_INVALID_PTAG, "set a NULL tag");
	ma.Ptag = (VIP_PROTECTION_HANDLE)0x4321;
	CHECK_RET(VipSetMemAttributes(nic, heap, h, &ma), VIP_INVALID_PTAG, "set a made-up tag");
	ma.Ptag = pto;
	CHECK_RET(VipSetMemAttributes(nic, heap, h, &ma), VIP_INVALID_PTAG,
		  "set another session's tag");
	ma.Ptag = pt;
	if (!g_attr.RDMAReadSupport) {
		ma.EnableRdmaRead = VIP_TRUE;
		CHECK_RET(VipSetMemAttributes(nic, heap, h, &ma), VIP_INVALID_RDMAREAD,
			  "enable RDMA Read (RDMAReadSupport is FALSE)");
		ma.EnableRdmaRead = VIP_FALSE;
	}
	CHECK_RET(VipSetMemAttributes(nic, heap + 1, h, &ma), VIP_INVALID_PARAMETER,
		  "set attributes with the wrong address");
	CHECK_RET(VipSetMemAttributes(nic, heap, h + 1000, &ma), VIP_INVALID_PARAMETER,
		  "set attributes with the wrong handle");
	CHECK_RET(VipSetMemAttributes(nic, heap, h, NULL), VIP_INVALID_PARAMETER,
		  "set NULL attributes");
	CHECK_RET(VipSetMemAttributes(NULL, heap, h, &ma), VIP_INVALID_PARAMETER,
		  "set attributes on a NULL NIC");
	CHECK_RET(VipQueryMem(nic, heap, h, &q), VIP_SUCCESS, "query it");
	CHECK(q.Ptag == pt2 && q.EnableRdmaWrite == VIP_TRUE && q.EnableRdmaRead == VIP_FALSE,
	      "failed VipSetMemAttributes calls changed nothing");
	ma.Ptag = pt;
	ma.EnableRdmaWrite = VIP_FALSE;
	CHECK_RET(VipSetMemAttributes(nic, heap, h, &ma), VIP_SUCCESS, "back to tag 1");
	CHECK_RET(VipQueryMem(nic, heap + 1, h, &q), VIP_INVALID_PARAMETER,
		  "query with the wrong address");
	CHECK_RET(VipQueryMem(nic, heap, h + 1000, &q), VIP_INVALID_PARAMETER,
		  "query with the wrong handle");
	CHECK_RET(VipQueryMem(nic, heap, h, NULL), VIP_INVALID_PARAMETER, "query into NULL");
	CHECK_RET(VipQueryMem(NULL, heap, h, &q), VIP_INVALID_PARAMETER, "query on a NULL NIC");

	/* a handle is valid only in the session that registered it */
	CHECK_RET(VipQueryMem(other, heap, h, &q), VIP_INVALID_PARAMETER,
		  "another session cannot query the region");
	CHECK_RET(VipSetMemAttributes(other, heap, h, &ma), VIP_INVALID_PARAMETER,
		  "another session cannot change the region");
	CHECK_RET(VipDeregisterMem(other, heap, h), VIP_INVALID_PARAMETER,
		  "another session cannot deregister the region");
	CHECK_RET(VipQueryMem(nic, heap, h, &q), VIP_SUCCESS, "the region is still registered");

	/* VipDeregisterMem */
	CHECK_RET(VipDeregisterMem(nic, heap + 8, h), VIP_INVALID_PARAMETER,
		  "deregister with the wrong address");
	CHECK_RET(VipDeregisterMem(nic, heap, h + 1000), VIP_INVALID_PARAMETER,
		  "deregister with the wrong handle");
	CHECK_RET(VipDeregisterMem(nic, heap, 0), VIP_INVALID_PARAMETER, "deregister handle 0");
	CHECK_RET(VipDeregisterMem(NULL, heap, h), VIP_INVALID_PARAMETER,
		  "deregister on a NULL NIC");
	CHECK_RET(VipDeregisterMem(nic, heap, h), VIP_SUCCESS, "deregister it");
	CHECK_RET(VipDeregisterMem(nic, heap, h), VIP_INVALID_PARAMETER, "deregister it again");
	CHECK_RET(VipQueryMem(nic, heap, h, &q), VIP_INVALID_PARAMETER,
		  "a deregistered handle does not resolve");
	h_counters(nic, &c1);
	CHECK(c1.RegionsDeregistered == c0.RegionsDeregistered + 1, "RegionsDeregistered grew by 1");
	CHECK(c1.BytesRegistered == c0.BytesRegistered, "BytesRegistered is back (%llu)",
	      (unsigned long long)c1.BytesRegistered);

	/* stack memory */
	memset(stackbuf, 1, sizeof(stackbuf));
	CHECK_RET(VipRegisterMem(nic, stackbuf, sizeof(stackbuf), &ma, &h), VIP_SUCCESS,
		  "register stack memory");
	CHECK_RET(VipDeregisterMem(nic, stackbuf, h), VIP_SUCCESS, "deregister it");

	/* mmap'd memory, unaligned address and odd length */
	m = map_pages(4, PROT_READ | PROT_WRITE);
	CHECK_RET(VipRegisterMem(nic, m, 4 * page_size, &ma, &h), VIP_SUCCESS,
		  "register mmap'd memory");
	CHECK_RET(VipDeregisterMem(nic, m, h), VIP_SUCCESS, "deregister it");
	CHECK_RET(VipRegisterMem(nic, m + 3, page_size + 1, &ma, &h), VIP_SUCCESS,
		  "register an unaligned address with an odd length");
	CHECK_RET(VipQueryMem(nic, m + 3, h, &q), VIP_SUCCESS, "query it at its own address");
	CHECK_RET(VipQueryMem(nic, m, h, &q), VIP_INVALID_PARAMETER,
		  "the page-rounded base address is not the region's address");
	CHECK_RET(VipDeregisterMem(nic, m, h), VIP_INVALID_PARAMETER,
		  "deregister at the page-rounded address");
	CHECK_RET(VipDeregisterMem(nic, m + 3, h), VIP_SUCCESS, "deregister at its own address");

	/* the same range twice */
	CHECK_RET(VipRegisterMem(nic, m, 2 * page_size, &ma, &h), VIP_SUCCESS, "register a range");
	CHECK_RET(VipRegisterMem(nic, m, 2 * page_size, &ma, &h2), VIP_SUCCESS,
		  "register the same range again");
	CHECK(h != h2, "two registrations get two handles (%u, %u)", h, h2);
	CHECK_RET(VipDeregisterMem(nic, m, h), VIP_SUCCESS, "deregister the first");
	CHECK_RET(VipQueryMem(nic, m, h2, &q), VIP_SUCCESS, "the second is still registered");
	CHECK_RET(VipDeregisterMem(nic, m, h2), VIP_SUCCESS, "deregister the second");

	/* page locking (VIA 9.5.3: registered pages are locked) */
	lk0 = vm_locked_kb();
	if (lk0 >= 0) {
		CHECK_RET(VipRegisterMem(nic, m, page_size, &ma, &h), VIP_SUCCESS, "register a page");
		CHECK(vm_locked_kb() == lk0 + (long)(page_size / 1024), "the page is locked");
		CHECK_RET(VipRegisterMem(nic, m, page_size, &ma, &h2), VIP_SUCCESS,
			  "register it again");
		CHECK_RET(VipDeregisterMem(nic, m, h), VIP_SUCCESS, "deregister the first");
		CHECK(vm_locked_kb() == lk0 + (long)(page_size / 1024),
		      "the page stays locked while the second registration covers it");
		CHECK_RET(VipDeregisterMem(nic, m, h2), VIP_SUCCESS, "deregister the second");
		CHECK(vm_locked_kb() == lk0, "the page is unlocked after the last deregistration");

		ma.Ptag = pto;
		CHECK_RET(VipRegisterMem(other, m, page_size, &ma, &ho), VIP_SUCCESS,
			  "register a page in the second session");
		ma.Ptag = pt;
		CHECK_RET(VipRegisterMem(nic, m, page_size, &ma, &h), VIP_SUCCESS,
			  "register the same page in the first session");
		CHECK_RET(VipDeregisterMem(nic, m, h), VIP_SUCCESS,
			  "deregister it in the first session");
		lk = vm_locked_kb();
		CHECK(lk == lk0 + (long)(page_size / 1024),
		      "the page stays locked while the second session's registration covers it "
		      "(VmLck %ld kB, want %ld kB)", lk, lk0 + (long)(page_size / 1024));
		CHECK_RET(VipDeregisterMem(other, m, ho), VIP_SUCCESS,
			  "deregister it in the second session");
		CHECK(vm_locked_kb() == lk0, "the page is unlocked");
	}
	munmap(m, 4 * page_size);

	/* invalid ranges and arguments */
	h = 0xdeadbeef;
	CHECK_RET(VipRegisterMem(nic, heap, 0, &ma, &h), VIP_INVALID_PARAMETER, "Length 0");
	CHECK(h == 0, "a failed VipRegisterMem sets *MemoryHandle to 0 (vipl.h, VIA 9.5.3) "
	      "(got %#x)", h);
	CHECK_RET(VipRegisterMem(nic, heap, ULONG_MAX, &ma, &h), VIP_INVALID_PARAMETER,
		  "a Length that wraps the address space");
	CHECK_RET(VipRegisterMem(nic, NULL, 100, &ma, &h), VIP_INVALID_PARAMETER,
		  "a NULL VirtualAddress");
	gone = map_pages(2, PROT_READ | PROT_WRITE);
	munmap(gone, 2 * page_size);
	CHECK_RET(VipRegisterMem(nic, gone, page_size, &ma, &h), VIP_INVALID_PARAMETER,
		  "an unmapped address");
	hole = map_pages(3, PROT_READ | PROT_WRITE);
	munmap(hole + page_size, page_size);
	CHECK_RET(VipRegisterMem(nic, hole, 3 * page_size, &ma, &h), VIP_INVALID_PARAMETER,
		  "a range with an unmapped page in the middle");
	CHECK_RET(VipRegisterMem(nic, hole + page_size - 10, 20, &ma, &h), VIP_INVALID_PARAMETER,
		  "20 bytes that reach into the unmapped page");
	CHECK_RET(VipRegisterMem(nic, hole, page_size, &ma, &h), VIP_SUCCESS,
		  "the mapped page before the hole registers");
	CHECK_RET(VipDeregisterMem(nic, hole, h), VIP_SUCCESS, "deregister it");
	munmap(hole, page_size);
	munmap(hole + 2 * page_size, page_size);
	none = map_pages(1, PROT_NONE);
	CHECK_RET(VipRegisterMem(nic, none, page_size, &ma, &h), VIP_INVALID_PARAMETER,
		  "a PROT_NONE mapping");
	munmap(none, page_size);
	ro = map_pages(2, PROT_READ);
	CHECK_RET(VipRegisterMem(nic, ro, 2 * page_size, &ma, &h), VIP_SUCCESS,
		  "a PROT_READ-only mapping registers");
	CHECK_RET(VipQueryMem(nic, ro, h, &q), VIP_SUCCESS, "query it");
	CHECK_RET(VipDeregisterMem(nic, ro, h), VIP_SUCCESS, "deregister it");
	munmap(ro, 2 * page_size);

	ma.Ptag = NULL;
	CHECK_RET(VipRegisterMem(nic, heap, 100, &ma, &h), VIP_INVALID_PTAG, "a NULL tag");
	ma.Ptag = (VIP_PROTECTION_HANDLE)0x5555;
	CHECK_RET(VipRegisterMem(nic, heap, 100, &ma, &h), VIP_INVALID_PTAG, "a made-up tag");
	ma.Ptag = pt;
	if (!g_attr.RDMAReadSupport) {
		ma.EnableRdmaRead = VIP_TRUE;
		CHECK_RET(VipRegisterMem(nic, heap, 100, &ma, &h), VIP_INVALID_RDMAREAD,
			  "EnableRdmaRead (RDMAReadSupport is FALSE)");
		ma.EnableRdmaRead = VIP_FALSE;
	}
	CHECK_RET(VipRegisterMem(nic, heap, 100, NULL, &h), VIP_INVALID_PARAMETER,
		  "NULL MemAttribs");
	CHECK_RET(VipRegisterMem(nic, heap, 100, &ma, NULL), VIP_INVALID_PARAMETER,
		  "NULL MemoryHandle");
	CHECK_RET(VipRegisterMem(NULL, heap, 100, &ma, &h), VIP_INVALID_PARAMETER, "a NULL NIC");

	/* MaxRegisterBytes: a mapping larger than the limit (never touched) */
	big = mmap(NULL, MAIN_MAX_REG_BYTES + (1ul << 20), PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (big != MAP_FAILED) {
		CHECK_RET(VipRegisterMem(nic, big, MAIN_MAX_REG_BYTES + (1ul << 20), &ma, &h),
			  VIP_ERROR_RESOURCE, "a region larger than MaxRegisterBytes");
		munmap(big, MAIN_MAX_REG_BYTES + (1ul << 20));
	}
	h_counters(nic, &c1);
	CHECK(c1.RegionsRegistered - c0.RegionsRegistered ==
	      c1.RegionsDeregistered - c0.RegionsDeregistered,
	      "every registration was deregistered");
	CHECK(c1.BytesRegistered == c0.BytesRegistered, "BytesRegistered is back");

	CHECK_RET(VipDestroyPtag(nic, pt), VIP_SUCCESS, "destroy tag 1");
	CHECK_RET(VipDestroyPtag(nic, pt2), VIP_SUCCESS, "destroy tag 2");
	CHECK_RET(VipDestroyPtag(other, pto), VIP_SUCCESS, "destroy the second session's tag");
	free(heap);
}

static void
test_region_limit(VIP_NIC_HANDLE nic, VIP_NIC_HANDLE other)
{
	VIP_PROTECTION_HANDLE pt, pto;
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_MEM_HANDLE h[SMALL_MAX_REGIONS + 1], ho;
	char *buf = malloc(64);
	unsigned i;
	bool ok = true;

	h_note("region limit (limits.max_regions=%d, over all sessions)", SMALL_MAX_REGIONS);
	VipCreatePtag(nic, &pt);
	VipCreatePtag(other, &pto);
	ma.Ptag = pt;
	for (i = 0; i + 1 < SMALL_MAX_REGIONS; i++)
		ok &= VipRegisterMem(nic, buf, 64, &ma, &h[i]) == VIP_SUCCESS;
	CHECK(ok, "register %d regions in one session", SMALL_MAX_REGIONS - 1);
	ma.Ptag = pto;
	CHECK_RET(VipRegisterMem(other, buf, 64, &ma, &ho), VIP_SUCCESS,
		  "register the last one in another session");
	ma.Ptag = pt;
	CHECK_RET(VipRegisterMem(nic, buf, 64, &ma, &h[SMALL_MAX_REGIONS]), VIP_ERROR_RESOURCE,
		  "one region more than MaxRegisterRegions");
	CHECK_RET(VipDeregisterMem(other, buf, ho), VIP_SUCCESS, "deregister one");
	CHECK_RET(VipRegisterMem(nic, buf, 64, &ma, &h[SMALL_MAX_REGIONS - 1]), VIP_SUCCESS,
		  "then one can be registered again");
	ok = true;
	for (i = 0; i < SMALL_MAX_REGIONS; i++)
		ok &= VipDeregisterMem(nic, buf, h[i]) == VIP_SUCCESS;
	CHECK(ok, "deregister all");
	VipDestroyPtag(nic, pt);
	VipDestroyPtag(other, pto);
	free(buf);
}

/* ---------------------------------------------------------------------- */

static void
test_alloc(VIP_NIC_HANDLE nic, VIP_NIC_HANDLE other)
{
	VIP_PROTECTION_HANDLE pt;
	VIP_MEM_ATTRIBUTES ma = { 0 }, q;
	VIP_MEM_HANDLE h, hw;
	VIP_PVOID p = NULL, p2 = NULL, dummy = (VIP_PVOID)0x1;
	unsigned char *b;
	char local[16];
	size_t i;
	bool same = true;

	h_note("VipDpdkAllocMem / VipDpdkFreeMem");
	VipCreatePtag(nic, &pt);
	ma.Ptag = pt;
	CHECK_RET(VipDpdkAllocMem(nic, 10000, &p), VIP_SUCCESS, "allocate 10000 bytes");
	CHECK(p != NULL && (uintptr_t)p % page_size == 0, "the memory is page aligned (%p)", p);
	if (p == NULL)
		return;
	b = p;
	for (i = 0; i < 10000; i++)
		b[i] = (unsigned char)(i * 7 + 1);
	for (i = 0; i < 10000; i++)
		same &= b[i] == (unsigned char)(i * 7 + 1);
	CHECK(same, "it can be written and read back");
	CHECK_RET(VipRegisterMem(nic, b + 100, 5000, &ma, &h), VIP_SUCCESS,
		  "register a range inside it");
	CHECK_RET(VipRegisterMem(nic, p, 10000, &ma, &hw), VIP_SUCCESS, "register all of it");
	CHECK_RET(VipQueryMem(nic, b + 100, h, &q), VIP_SUCCESS, "query the inner region");
	CHECK_RET(VipDpdkFreeMem(nic, p), VIP_ERROR_RESOURCE, "free it while regions lie in it");
	CHECK(b[9999] == (unsigned char)(9999 * 7 + 1), "the memory is still mapped and intact");
	CHECK_RET(VipDeregisterMem(nic, b + 100, h), VIP_SUCCESS, "deregister the inner region");
	CHECK_RET(VipDpdkFreeMem(nic, p), VIP_ERROR_RESOURCE, "free it while one region remains");
	CHECK_RET(VipDeregisterMem(nic, p, hw), VIP_SUCCESS, "deregister the whole region");
	CHECK_RET(VipDpdkFreeMem(other, p), VIP_INVALID_PARAMETER,
		  "another session cannot free it");
	CHECK_RET(VipDpdkFreeMem(nic, b + page_size), VIP_INVALID_PARAMETER,
		  "free an address inside it that is not its start");
	CHECK_RET(VipDpdkFreeMem(nic, p), VIP_SUCCESS, "free it");
	CHECK_RET(VipDpdkFreeMem(nic, p), VIP_INVALID_PARAMETER, "free it again");
	CHECK_RET(VipRegisterMem(nic, p, 100, &ma, &h), VIP_INVALID_PARAMETER,
		  "freed memory is unmapped and cannot be registered");

	CHECK_RET(VipDpdkFreeMem(nic, local), VIP_INVALID_PARAMETER, "free a stack address");
	CHECK_RET(VipDpdkFreeMem(nic, NULL), VIP_INVALID_PARAMETER, "free NULL");
	CHECK_RET(VipDpdkFreeMem(NULL, p), VIP_INVALID_PARAMETER, "free on a NULL NIC");
	CHECK_RET(VipDpdkAllocMem(nic, 0, &dummy), VIP_INVALID_PARAMETER, "allocate 0 bytes");
	CHECK_RET(VipDpdkAllocMem(nic, 100, NULL), VIP_INVALID_PARAMETER, "allocate into NULL");
	CHECK_RET(VipDpdkAllocMem(NULL, 100, &dummy), VIP_INVALID_PARAMETER,
		  "allocate on a NULL NIC");
	CHECK_RET(VipDpdkAllocMem(nic, 4ul << 30, &dummy), VIP_ERROR_RESOURCE,
		  "allocate beyond limits.max_alloc_bytes (4 GiB > 1 GiB)");
	CHECK(dummy == (VIP_PVOID)0x1, "failed allocations leave *Address alone");

	CHECK_RET(VipDpdkAllocMem(nic, 1, &p), VIP_SUCCESS, "allocate 1 byte");
	CHECK_RET(VipDpdkAllocMem(nic, 3 * page_size, &p2), VIP_SUCCESS, "allocate 3 pages");
	CHECK(p != p2, "two allocations do not overlap");
	if (p2 != NULL)
		memset(p2, 0xee, 3 * page_size);
	CHECK_RET(VipDpdkFreeMem(nic, p2), VIP_SUCCESS, "free the second");
	CHECK_RET(VipDpdkFreeMem(nic, p), VIP_SUCCESS, "free the first");
	VipDestroyPtag(nic, pt);
}

static void
test_alloc_limit(VIP_NIC_HANDLE nic)
{
	VIP_PVOID p = NULL, p2 = NULL;

	h_note("allocation limit (limits.max_alloc_bytes=%lu per session)", SMALL_MAX_ALLOC);
	CHECK_RET(VipDpdkAllocMem(nic, SMALL_MAX_ALLOC, &p), VIP_SUCCESS, "allocate up to the limit");
	CHECK_RET(VipDpdkAllocMem(nic, page_size, &p2), VIP_ERROR_RESOURCE,
		  "one page more than the limit");
	CHECK_RET(VipDpdkFreeMem(nic, p), VIP_SUCCESS, "free");
	CHECK_RET(VipDpdkAllocMem(nic, page_size, &p2), VIP_SUCCESS, "then a page can be allocated");
	CHECK_RET(VipDpdkFreeMem(nic, p2), VIP_SUCCESS, "free it");
}

/* ---------------------------------------------------------------------- */

static void
test_cq(VIP_NIC_HANDLE nic, VIP_NIC_HANDLE other)
{
	VIP_CQ_HANDLE cq = NULL, cq1 = NULL, cqmax = NULL, cqo = NULL, dummy = (VIP_CQ_HANDLE)0x1;
	VIP_PROTECTION_HANDLE pt;
	VIP_VI_ATTRIBUTES va;
	VIP_VI_HANDLE vi = NULL, vi2 = NULL;
	VIP_DPDK_COUNTERS c0, c1;

	h_note("VipCreateCQ / VipDestroyCQ");
	VipCreatePtag(nic, &pt);
	h_vi_attrs(&va, pt);
	h_counters(nic, &c0);
	CHECK_RET(VipCreateCQ(nic, 0, &dummy), VIP_INVALID_PARAMETER, "0 entries");
	CHECK_RET(VipCreateCQ(nic, MAIN_MAX_CQ_ENTRIES + 1, &dummy), VIP_ERROR_RESOURCE,
		  "MaxCQEntries + 1 entries");
	CHECK_RET(VipCreateCQ(nic, (VIP_ULONG)UINT32_MAX + 2, &dummy), VIP_ERROR_RESOURCE,
		  "2^32 + 1 entries");
	CHECK_RET(VipCreateCQ(nic, 16, NULL), VIP_INVALID_PARAMETER, "NULL CQHandle");
	CHECK_RET(VipCreateCQ(NULL, 16, &dummy), VIP_INVALID_PARAMETER, "a NULL NIC");
	CHECK(dummy == (VIP_CQ_HANDLE)0x1, "failed creations leave *CQHandle alone");
	CHECK_RET(VipCreateCQ(nic, 1024, &cq), VIP_SUCCESS, "1024 entries");
	CHECK_RET(VipCreateCQ(nic, 1, &cq1), VIP_SUCCESS, "1 entry");
	CHECK_RET(VipCreateCQ(nic, MAIN_MAX_CQ_ENTRIES, &cqmax), VIP_SUCCESS,
		  "exactly MaxCQEntries entries");
	CHECK(cq != NULL && cq1 != NULL && cq != cq1, "distinct CQ handles");
	h_counters(nic, &c1);
	CHECK(c1.CqsCreated == c0.CqsCreated + 3, "CqsCreated grew by 3");

	CHECK_RET(VipCreateVi(nic, &va, cq, NULL, &vi), VIP_SUCCESS, "a VI with cq as send CQ");
	CHECK_RET(VipCreateVi(nic, &va, NULL, cq1, &vi2), VIP_SUCCESS, "a VI with cq1 as recv CQ");
	CHECK_RET(VipDestroyCQ(cq), VIP_ERROR_RESOURCE, "destroy a CQ a send queue uses");
	CHECK_RET(VipDestroyCQ(cq1), VIP_ERROR_RESOURCE, "destroy a CQ a receive queue uses");
	CHECK_RET(VipDestroyVi(vi), VIP_SUCCESS, "destroy the first VI");
	CHECK_RET(VipDestroyVi(vi2), VIP_SUCCESS, "destroy the second VI");
	CHECK_RET(VipCreateVi(nic, &va, cq, cq, &vi), VIP_SUCCESS, "a VI with cq for both queues");
	CHECK_RET(VipDestroyCQ(cq), VIP_ERROR_RESOURCE, "destroy it: still used");
	CHECK_RET(VipDestroyVi(vi), VIP_SUCCESS, "destroy the VI");
	CHECK_RET(VipDestroyCQ(cq), VIP_SUCCESS, "destroy the CQ");
	CHECK_RET(VipDestroyCQ(cq), VIP_INVALID_PARAMETER, "destroy it again");
	CHECK_RET(VipDestroyCQ(NULL), VIP_INVALID_PARAMETER, "destroy NULL");
	CHECK_RET(VipDestroyCQ((VIP_CQ_HANDLE)0x4242), VIP_INVALID_PARAMETER,
		  "destroy a made-up handle");
	CHECK_RET(VipDestroyCQ(nic), VIP_INVALID_PARAMETER, "a NIC handle passed as a CQ");
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &vi), VIP_SUCCESS, "create a VI");
	CHECK_RET(VipDestroyCQ(vi), VIP_INVALID_PARAMETER, "a VI handle passed as a CQ");
	CHECK_RET(VipDestroyVi(vi), VIP_SUCCESS, "destroy the VI");

	/* a CQ of another session */
	CHECK_RET(VipCreateCQ(other, 16, &cqo), VIP_SUCCESS, "a CQ in the second session");
	CHECK_RET(VipCreateVi(nic, &va, cqo, NULL, &vi), VIP_INVALID_PARAMETER,
		  "another session's CQ as send CQ");
	CHECK_RET(VipCreateVi(nic, &va, NULL, cqo, &vi), VIP_INVALID_PARAMETER,
		  "another session's CQ as receive CQ");
	CHECK_RET(VipDestroyCQ(cqo), VIP_SUCCESS, "destroy it");

	CHECK_RET(VipDestroyCQ(cq1), VIP_SUCCESS, "destroy cq1");
	CHECK_RET(VipDestroyCQ(cqmax), VIP_SUCCESS, "destroy the largest CQ");
	CHECK_RET(VipCreateVi(nic, &va, cq1, NULL, &vi), VIP_INVALID_PARAMETER,
		  "a destroyed CQ is refused by VipCreateVi");
	h_counters(nic, &c1);
	CHECK(c1.CqsDestroyed == c0.CqsDestroyed + 3 + 1, "CqsDestroyed grew by 4");
	VipDestroyPtag(nic, pt);
}

static void
test_cq_limit(VIP_NIC_HANDLE nic)
{
	VIP_CQ_HANDLE cq[SMALL_MAX_CQ + 1];
	unsigned i;
	bool ok = true;

	h_note("CQ limit (limits.max_cq=%d)", SMALL_MAX_CQ);
	for (i = 0; i < SMALL_MAX_CQ; i++)
		ok &= VipCreateCQ(nic, 8, &cq[i]) == VIP_SUCCESS;
	CHECK(ok, "create %d CQs", SMALL_MAX_CQ);
	CHECK_RET(VipCreateCQ(nic, 8, &cq[SMALL_MAX_CQ]), VIP_ERROR_RESOURCE,
		  "one CQ more than MaxCQ");
	ok = true;
	for (i = 0; i < SMALL_MAX_CQ; i++)
		ok &= VipDestroyCQ(cq[i]) == VIP_SUCCESS;
	CHECK(ok, "destroy them");
}

/* ---------------------------------------------------------------------- */

static bool
attrs_equal(const VIP_VI_ATTRIBUTES *a, const VIP_VI_ATTRIBUTES *b)
{
	return a->ReliabilityLevel == b->ReliabilityLevel && a->MaxTransferSize == b->MaxTransferSize &&
	       a->QoS == b->QoS && a->Ptag == b->Ptag && a->EnableRdmaWrite == b->EnableRdmaWrite &&
	       a->EnableRdmaRead == b->EnableRdmaRead;
}

static void
test_vi(VIP_NIC_HANDLE nic, VIP_NIC_HANDLE other)
{
	static const VIP_RELIABILITY_LEVEL bad_levels[] = {
		0, 3, VIP_SERVICE_RELIABLE_DELIVERY, VIP_SERVICE_RELIABLE_RECEPTION, 8, 0x8000,
	};
	VIP_PROTECTION_HANDLE pt, pt2, pto, ptdead;
	VIP_VI_ATTRIBUTES va, got, want;
	VIP_VI_HANDLE vi = NULL, vi2 = NULL, dummy = (VIP_VI_HANDLE)0x1;
	VIP_CQ_HANDLE cq, cqdead;
	VIP_VI_STATE st;
	VIP_BOOLEAN se, re;
	VIP_DPDK_COUNTERS c0, c1;
	unsigned i;

	h_note("VipCreateVi / VipQueryVi / VipSetViAttributes / VipDestroyVi");
	VipCreatePtag(nic, &pt);
	VipCreatePtag(nic, &pt2);
	VipCreatePtag(other, &pto);
	VipCreatePtag(nic, &ptdead);
	VipDestroyPtag(nic, ptdead);
	VipCreateCQ(nic, 8, &cq);
	VipCreateCQ(nic, 8, &cqdead);
	VipDestroyCQ(cqdead);
	h_counters(nic, &c0);

	for (i = 0; i < sizeof(bad_levels) / sizeof(bad_levels[0]); i++) {
		/* a single supported level is valid: not the case to test */
		if ((bad_levels[i] & (bad_levels[i] - 1)) == 0 &&
		    (bad_levels[i] & g_attr.ReliabilityLevelSupport) != 0)
			continue;
		h_vi_attrs(&va, pt);
		va.ReliabilityLevel = bad_levels[i];
		CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &dummy), VIP_INVALID_RELIABILITY_LEVEL,
			  "ReliabilityLevel %#x", bad_levels[i]);
	}
	h_vi_attrs(&va, pt);
	va.MaxTransferSize = 0;
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &dummy), VIP_INVALID_MTU, "MaxTransferSize 0");
	va.MaxTransferSize = MAIN_MAX_TRANSFER + 1;
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &dummy), VIP_INVALID_MTU,
		  "MaxTransferSize above the NIC's");
	va.MaxTransferSize = (VIP_ULONG)UINT32_MAX + 1;
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &dummy), VIP_INVALID_MTU,
		  "MaxTransferSize 2^32");
	h_vi_attrs(&va, pt);
	va.QoS = 1;
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &dummy), VIP_INVALID_QOS, "QoS 1");
	h_vi_attrs(&va, NULL);
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &dummy), VIP_INVALID_PTAG, "a NULL tag");
	h_vi_attrs(&va, (VIP_PROTECTION_HANDLE)0x3333);
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &dummy), VIP_INVALID_PTAG, "a made-up tag");
	h_vi_attrs(&va, ptdead);
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &dummy), VIP_INVALID_PTAG, "a destroyed tag");
	h_vi_attrs(&va, pto);
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &dummy), VIP_INVALID_PTAG,
		  "another session's tag");
	h_vi_attrs(&va, pt);
	if (!g_attr.RDMAReadSupport) {
		va.EnableRdmaRead = VIP_TRUE;
		CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &dummy), VIP_INVALID_RDMAREAD,
			  "EnableRdmaRead (RDMAReadSupport is FALSE)");
	}
	h_vi_attrs(&va, pt);
	CHECK_RET(VipCreateVi(nic, &va, (VIP_CQ_HANDLE)0x5151, NULL, &dummy), VIP_INVALID_PARAMETER,
		  "a made-up send CQ handle");
	CHECK_RET(VipCreateVi(nic, &va, NULL, cqdead, &dummy), VIP_INVALID_PARAMETER,
		  "a destroyed receive CQ handle");
	CHECK_RET(VipCreateVi(nic, &va, nic, NULL, &dummy), VIP_INVALID_PARAMETER,
		  "a NIC handle passed as a CQ");
	CHECK_RET(VipCreateVi(nic, NULL, NULL, NULL, &dummy), VIP_INVALID_PARAMETER,
		  "NULL ViAttribs");
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, NULL), VIP_INVALID_PARAMETER, "NULL ViHandle");
	CHECK_RET(VipCreateVi(NULL, &va, NULL, NULL, &dummy), VIP_INVALID_PARAMETER, "a NULL NIC");
	CHECK_RET(VipCreateVi(cq, &va, NULL, NULL, &dummy), VIP_INVALID_PARAMETER,
		  "a CQ handle passed as the NIC");
	CHECK(dummy == (VIP_VI_HANDLE)0x1, "failed creations leave *ViHandle alone");
	h_counters(nic, &c1);
	CHECK(c1.VisCreated == c0.VisCreated, "no VI was created by the failed calls");

	/* create, query */
	h_vi_attrs(&va, pt);
	va.MaxTransferSize = MAIN_MAX_TRANSFER;
	va.EnableRdmaWrite = VIP_TRUE;
	CHECK_RET(VipCreateVi(nic, &va, cq, NULL, &vi), VIP_SUCCESS,
		  "MaxTransferSize = the NIC's, RDMA Write enabled, send CQ");
	CHECK(vi != NULL, "a VI handle");
	st = (VIP_VI_STATE)99;
	se = re = 77;
	memset(&got, 0x5a, sizeof(got));
	CHECK_RET(VipQueryVi(vi, &st, &got, &se, &re), VIP_SUCCESS, "query the VI");
	CHECK(st == VIP_STATE_IDLE, "a new VI is Idle (%d)", (int)st);
	CHECK(attrs_equal(&got, &va), "the attributes round-trip");
	CHECK(se == VIP_TRUE && re == VIP_TRUE, "both work queues are empty");
	CHECK_RET(VipQueryVi(vi, NULL, &got, &se, &re), VIP_INVALID_PARAMETER, "NULL State");
	CHECK_RET(VipQueryVi(vi, &st, NULL, &se, &re), VIP_INVALID_PARAMETER, "NULL Attributes");
	CHECK_RET(VipQueryVi(vi, &st, &got, NULL, &re), VIP_INVALID_PARAMETER, "NULL ViSendQEmpty");
	CHECK_RET(VipQueryVi(vi, &st, &got, &se, NULL), VIP_INVALID_PARAMETER, "NULL ViRecvQEmpty");
	CHECK_RET(VipQueryVi(NULL, &st, &got, &se, &re), VIP_INVALID_PARAMETER, "query NULL");
	CHECK_RET(VipQueryVi(cq, &st, &got, &se, &re), VIP_INVALID_PARAMETER,
		  "a CQ handle passed as a VI");
	CHECK_RET(VipQueryVi(nic, &st, &got, &se, &re), VIP_INVALID_PARAMETER,
		  "a NIC handle passed as a VI");

	/* VipSetViAttributes in Idle */
	want = va;
	want.MaxTransferSize = 65536;
	want.EnableRdmaWrite = VIP_FALSE;
	want.Ptag = pt2;
	CHECK_RET(VipSetViAttributes(vi, &want), VIP_SUCCESS, "change size, RDMA Write and tag");
	CHECK_RET(VipQueryVi(vi, &st, &got, &se, &re), VIP_SUCCESS, "query it");
	CHECK(attrs_equal(&got, &want), "the new attributes are in effect");
	CHECK_RET(VipDestroyPtag(nic, pt2), VIP_ERROR_RESOURCE, "the new tag is in use");
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &vi2), VIP_SUCCESS,
		  "another VI on the old tag");
	CHECK_RET(VipDestroyVi(vi2), VIP_SUCCESS, "destroy it");
	va = want;
	va.ReliabilityLevel = 0x40;
	CHECK_RET(VipSetViAttributes(vi, &va), VIP_INVALID_RELIABILITY_LEVEL,
		  "set an unknown reliability level");
	va.ReliabilityLevel = VIP_SERVICE_UNRELIABLE | VIP_SERVICE_RELIABLE_DELIVERY;
	CHECK_RET(VipSetViAttributes(vi, &va), VIP_INVALID_RELIABILITY_LEVEL,
		  "set two reliability levels at once");
	va = want;
	va.ReliabilityLevel = 0;
	CHECK_RET(VipSetViAttributes(vi, &va), VIP_INVALID_RELIABILITY_LEVEL,
		  "set reliability level 0");
	va = want;
	va.MaxTransferSize = MAIN_MAX_TRANSFER + 1;
	CHECK_RET(VipSetViAttributes(vi, &va), VIP_INVALID_MTU, "set a too large MaxTransferSize");
	va.MaxTransferSize = 0;
	CHECK_RET(VipSetViAttributes(vi, &va), VIP_INVALID_MTU, "set MaxTransferSize 0");
	va = want;
	va.QoS = 7;
	CHECK_RET(VipSetViAttributes(vi, &va), VIP_INVALID_QOS, "set QoS 7");
	va = want;
	va.Ptag = pto;
	CHECK_RET(VipSetViAttributes(vi, &va), VIP_INVALID_PTAG, "set another session's tag");
	va.Ptag = NULL;
	CHECK_RET(VipSetViAttributes(vi, &va), VIP_INVALID_PTAG, "set a NULL tag");
	va = want;
	va.EnableRdmaRead = VIP_TRUE;
	if (!g_attr.RDMAReadSupport)
		CHECK_RET(VipSetViAttributes(vi, &va), VIP_INVALID_RDMAREAD, "enable RDMA Read");
	CHECK_RET(VipSetViAttributes(vi, NULL), VIP_INVALID_PARAMETER, "set NULL attributes");
	CHECK_RET(VipSetViAttributes(NULL, &want), VIP_INVALID_PARAMETER, "set on a NULL VI");
	CHECK_RET(VipSetViAttributes(cq, &want), VIP_INVALID_PARAMETER,
		  "set on a CQ handle passed as a VI");
	CHECK_RET(VipQueryVi(vi, &st, &got, &se, &re), VIP_SUCCESS, "query it");
	CHECK(attrs_equal(&got, &want) && st == VIP_STATE_IDLE,
	      "failed VipSetViAttributes calls changed nothing");

	/* destroy */
	CHECK_RET(VipDestroyCQ(cq), VIP_ERROR_RESOURCE, "the VI holds its CQ");
	CHECK_RET(VipDestroyVi(NULL), VIP_INVALID_PARAMETER, "destroy NULL");
	CHECK_RET(VipDestroyVi(cq), VIP_INVALID_PARAMETER, "destroy a CQ handle passed as a VI");
	CHECK_RET(VipDestroyVi(nic), VIP_INVALID_PARAMETER, "destroy a NIC handle passed as a VI");
	CHECK_RET(VipDestroyVi(vi), VIP_SUCCESS, "destroy the VI");
	CHECK_RET(VipDestroyVi(vi), VIP_INVALID_PARAMETER, "destroy it again");
	CHECK_RET(VipQueryVi(vi, &st, &got, &se, &re), VIP_INVALID_PARAMETER,
		  "query a destroyed VI");
	CHECK_RET(VipSetViAttributes(vi, &want), VIP_INVALID_PARAMETER,
		  "set attributes of a destroyed VI");
	CHECK_RET(VipDestroyCQ(cq), VIP_SUCCESS, "its CQ can now be destroyed");
	CHECK_RET(VipDestroyPtag(nic, pt2), VIP_SUCCESS, "its tag can now be destroyed");
	h_counters(nic, &c1);
	CHECK(c1.VisCreated == c0.VisCreated + 2 && c1.VisDestroyed == c0.VisDestroyed + 2,
	      "VisCreated and VisDestroyed grew by 2");

	/* every later-issue call refuses the destroyed VI handle too */
	{
		VIP_DESCRIPTOR *d = NULL;
		VIP_DESCRIPTOR desc;
		union h_net_addr la, ra;

		memset(&la, 0, sizeof(la));
		memset(&ra, 0, sizeof(ra));
		CHECK_RET(VipPostSend(vi, &desc, 1), VIP_INVALID_PARAMETER, "VipPostSend, destroyed VI");
		CHECK_RET(VipPostRecv(vi, &desc, 1), VIP_INVALID_PARAMETER, "VipPostRecv, destroyed VI");
		CHECK_RET(VipSendDone(vi, &d), VIP_INVALID_PARAMETER, "VipSendDone, destroyed VI");
		CHECK_RET(VipRecvDone(vi, &d), VIP_INVALID_PARAMETER, "VipRecvDone, destroyed VI");
		CHECK_RET(VipSendWait(vi, 0, &d), VIP_INVALID_PARAMETER, "VipSendWait, destroyed VI");
		CHECK_RET(VipRecvWait(vi, 0, &d), VIP_INVALID_PARAMETER, "VipRecvWait, destroyed VI");
		CHECK_RET(VipSendNotify(vi, NULL, fake_vi_cb), VIP_INVALID_PARAMETER,
			  "VipSendNotify, destroyed VI");
		CHECK_RET(VipRecvNotify(vi, NULL, fake_vi_cb), VIP_INVALID_PARAMETER,
			  "VipRecvNotify, destroyed VI");
		CHECK_RET(VipDisconnect(vi), VIP_INVALID_PARAMETER, "VipDisconnect, destroyed VI");
		CHECK_RET(VipConnectRequest(vi, &la.a, &ra.a, 1000, &got), VIP_INVALID_PARAMETER,
			  "VipConnectRequest, destroyed VI");
		CHECK_RET(VipConnectPeerRequest(vi, &la.a, &ra.a, 1000), VIP_INVALID_PARAMETER,
			  "VipConnectPeerRequest, destroyed VI");
		CHECK_RET(VipConnectPeerDone(vi, &got), VIP_INVALID_PARAMETER,
			  "VipConnectPeerDone, destroyed VI");
		CHECK_RET(VipConnectPeerWait(vi, &got), VIP_INVALID_PARAMETER,
			  "VipConnectPeerWait, destroyed VI");
		CHECK_RET(VipConnectAccept((VIP_CONN_HANDLE)0x1, vi), VIP_INVALID_PARAMETER,
			  "VipConnectAccept, destroyed VI");
	}
	VipDestroyPtag(nic, pt);
	VipDestroyPtag(other, pto);
}

/* VipDpdkCreateVi (vipl_dpdk.h): its own errors, VipCreateVi's, and the
 * sizes it takes (issue 30) */
static void
test_dpdk_create_vi(VIP_NIC_HANDLE nic)
{
	static const VIP_ULONG good_sizes[] = { 0, 1, 64, 65, VIP_DPDK_MAX_INLINE };
	VIP_DPDK_VI_ATTRIBUTES da = { .EntryDescriptors = VIP_TRUE };
	VIP_VI_HANDLE vi = NULL, dummy = (VIP_VI_HANDLE)0x1;
	VIP_PROTECTION_HANDLE pt;
	VIP_VI_ATTRIBUTES va, got;
	VIP_VI_STATE st;
	VIP_BOOLEAN se, re;
	unsigned i;

	h_note("VipDpdkCreateVi: VIs with line entries");
	VipCreatePtag(nic, &pt);
	h_vi_attrs(&va, pt);
	CHECK_RET(VipDpdkCreateVi(nic, &va, NULL, NULL, NULL, &dummy), VIP_INVALID_PARAMETER,
		  "DpdkAttribs NULL");
	da.InlineSize = VIP_DPDK_MAX_INLINE + 1;
	CHECK_RET(VipDpdkCreateVi(nic, &va, &da, NULL, NULL, &dummy), VIP_INVALID_PARAMETER,
		  "InlineSize VIP_DPDK_MAX_INLINE + 1");
	da.InlineSize = (VIP_ULONG)UINT32_MAX + 65;
	CHECK_RET(VipDpdkCreateVi(nic, &va, &da, NULL, NULL, &dummy), VIP_INVALID_PARAMETER,
		  "InlineSize 2^32 + 64");
	da = (VIP_DPDK_VI_ATTRIBUTES){ .EntryDescriptors = VIP_FALSE, .InlineSize = 64 };
	CHECK_RET(VipDpdkCreateVi(nic, &va, &da, NULL, NULL, &dummy), VIP_INVALID_PARAMETER,
		  "InlineSize without EntryDescriptors");
	da = (VIP_DPDK_VI_ATTRIBUTES){ .EntryDescriptors = VIP_TRUE, .InlineSize = 64 };
	va.MaxTransferSize = 0;
	CHECK_RET(VipDpdkCreateVi(nic, &va, &da, NULL, NULL, &dummy), VIP_INVALID_MTU,
		  "VipCreateVi's errors too: MaxTransferSize 0");
	h_vi_attrs(&va, pt);
	CHECK_RET(VipDpdkCreateVi(nic, &va, &da, (VIP_CQ_HANDLE)0x5151, NULL, &dummy),
		  VIP_INVALID_PARAMETER, "VipCreateVi's errors too: a made-up send CQ handle");
	for (i = 0; i < sizeof(good_sizes) / sizeof(good_sizes[0]); i++) {
		da.InlineSize = good_sizes[i];
		CHECK_RET(VipDpdkCreateVi(nic, &va, &da, NULL, NULL, &vi), VIP_SUCCESS,
			  "EntryDescriptors with InlineSize %lu", good_sizes[i]);
		if (vi == NULL)
			continue;
		CHECK_RET(VipQueryVi(vi, &st, &got, &se, &re), VIP_SUCCESS, "and VipQueryVi of it");
		CHECK(st == VIP_STATE_IDLE && se && re && got.MaxTransferSize == va.MaxTransferSize,
		      "it is Idle with empty queues and the attributes asked");
		CHECK_RET(VipDestroyVi(vi), VIP_SUCCESS, "and VipDestroyVi");
		vi = NULL;
	}
	da = (VIP_DPDK_VI_ATTRIBUTES){ .EntryDescriptors = VIP_FALSE };
	CHECK_RET(VipDpdkCreateVi(nic, &va, &da, NULL, NULL, &vi), VIP_SUCCESS,
		  "neither: a VI as VipCreateVi makes");
	if (vi != NULL)
		VipDestroyVi(vi);
	VipDestroyPtag(nic, pt);
}

static void
test_vi_limit(VIP_NIC_HANDLE nic)
{
	VIP_VI_HANDLE vi[SMALL_MAX_VI + 1];
	VIP_PROTECTION_HANDLE pt;
	VIP_VI_ATTRIBUTES va;
	unsigned i;
	bool ok = true;

	h_note("VI limit (limits.max_vi=%d)", SMALL_MAX_VI);
	VipCreatePtag(nic, &pt);
	h_vi_attrs(&va, pt);
	for (i = 0; i < SMALL_MAX_VI; i++)
		ok &= VipCreateVi(nic, &va, NULL, NULL, &vi[i]) == VIP_SUCCESS;
	CHECK(ok, "create %d VIs", SMALL_MAX_VI);
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &vi[SMALL_MAX_VI]), VIP_ERROR_RESOURCE,
		  "one VI more than MaxVI");
	CHECK_RET(VipDestroyVi(vi[1]), VIP_SUCCESS, "destroy one");
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &vi[1]), VIP_SUCCESS,
		  "then one can be created again");
	ok = true;
	for (i = 0; i < SMALL_MAX_VI; i++)
		ok &= VipDestroyVi(vi[i]) == VIP_SUCCESS;
	CHECK(ok, "destroy them");
	CHECK_RET(VipDestroyPtag(nic, pt), VIP_SUCCESS, "destroy the tag");
}

static void
test_session_limit(const struct viad_proc *v)
{
	VIP_NIC_HANDLE n[SMALL_MAX_SESSIONS + 1];
	VIP_NIC_HANDLE extra = NULL;
	uint64_t end;
	VIP_RETURN r;
	unsigned i;
	bool ok = true;

	h_note("session limit (limits.max_sessions=%d)", SMALL_MAX_SESSIONS);
	viad_use(v);
	ok = VipOpenNic("via0", &n[0]) == VIP_SUCCESS;
	/* the sessions closed before are gone once viad counts only this one */
	ok = ok && h_wait_sessions(n[0], 1, NULL);
	for (i = 1; i < SMALL_MAX_SESSIONS; i++)
		ok &= VipOpenNic("via0", &n[i]) == VIP_SUCCESS;
	CHECK(ok, "open %d sessions", SMALL_MAX_SESSIONS);
	CHECK_RET(VipOpenNic("via0", &extra), VIP_ERROR_RESOURCE, "one session more than the limit");
	CHECK_RET(VipCloseNic(n[0]), VIP_SUCCESS, "close one");
	/* viad sees the close asynchronously */
	end = h_now_ms() + H_TIMEOUT_MS;
	do {
		r = VipOpenNic("via0", &n[0]);
		if (r != VIP_SUCCESS)
			h_sleep_ms(20);
	} while (r != VIP_SUCCESS && h_now_ms() < end);
	CHECK_RET(r, VIP_SUCCESS, "then a session can be opened again");
	ok = true;
	for (i = 0; i < SMALL_MAX_SESSIONS; i++)
		ok &= VipCloseNic(n[i]) == VIP_SUCCESS;
	CHECK(ok, "close them");
}

/* ---------------------------------------------------------------------- */

static void
test_error_callback(VIP_NIC_HANDLE nic)
{
	int ctx;

	h_note("VipErrorCallback");
	CHECK_RET(VipErrorCallback(NULL, NULL, fake_err_cb), VIP_INVALID_PARAMETER,
		  "register on a NULL NIC");
	CHECK_RET(VipErrorCallback((VIP_NIC_HANDLE)0x6161, NULL, fake_err_cb), VIP_INVALID_PARAMETER,
		  "register on a made-up NIC handle");
	CHECK_RET(VipErrorCallback(nic, &ctx, fake_err_cb), VIP_SUCCESS, "register a handler");
	CHECK_RET(VipErrorCallback(nic, &ctx, fake_err_cb), VIP_SUCCESS, "register it again");
	CHECK_RET(VipErrorCallback(nic, NULL, NULL), VIP_SUCCESS,
		  "a NULL handler restores the default");
}

static void
test_smi(VIP_NIC_HANDLE nic, VIP_NIC_HANDLE lo)
{
	VIP_DPDK_COUNTERS c0, c1;
	VIP_DPDK_PORT_INFO pi;
	VIP_NIC_ATTRIBUTES na;
	VIP_PROTECTION_HANDLE pt;
	VIP_VI_ATTRIBUTES va;
	VIP_VI_HANDLE vi;
	VIP_CQ_HANDLE cq;

	h_note("VipQuerySystemManagementInfo");
	CHECK_RET(VipQuerySystemManagementInfo(nic, VIP_DPDK_SMI_COUNTERS, &c0), VIP_SUCCESS,
		  "VIP_DPDK_SMI_COUNTERS");
	CHECK(c0.Sessions >= 2, "Sessions counts this process's sessions (%llu)",
	      (unsigned long long)c0.Sessions);
	CHECK_RET(VipCreatePtag(nic, &pt), VIP_SUCCESS, "create a tag");
	CHECK_RET(VipCreateCQ(nic, 4, &cq), VIP_SUCCESS, "create a CQ");
	h_vi_attrs(&va, pt);
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &vi), VIP_SUCCESS, "create a VI");
	VipDestroyPtag(nic, (VIP_PROTECTION_HANDLE)0x9999);
	h_counters(nic, &c1);
	CHECK(c1.PtagsCreated == c0.PtagsCreated + 1 && c1.CqsCreated == c0.CqsCreated + 1 &&
	      c1.VisCreated == c0.VisCreated + 1, "the *Created counters moved by one");
	CHECK(c1.ControlErrors > c0.ControlErrors, "a refused request moved ControlErrors");
	CHECK(c1.Sessions == c0.Sessions && c1.SessionsClosed == c0.SessionsClosed,
	      "the session counters did not move");
	CHECK_RET(VipDestroyVi(vi), VIP_SUCCESS, "destroy the VI");
	CHECK_RET(VipDestroyCQ(cq), VIP_SUCCESS, "destroy the CQ");
	CHECK_RET(VipDestroyPtag(nic, pt), VIP_SUCCESS, "destroy the tag");
	h_counters(nic, &c0);
	CHECK(c0.PtagsDestroyed == c1.PtagsDestroyed + 1 && c0.CqsDestroyed == c1.CqsDestroyed + 1 &&
	      c0.VisDestroyed == c1.VisDestroyed + 1, "the *Destroyed counters moved by one");
	CHECK(c0.ReclaimedVis == c1.ReclaimedVis && c0.ReclaimedCqs == c1.ReclaimedCqs &&
	      c0.ReclaimedPtags == c1.ReclaimedPtags, "nothing was counted as reclaimed");

	memset(&pi, 0x77, sizeof(pi));
	CHECK_RET(VipQuerySystemManagementInfo(nic, VIP_DPDK_SMI_PORT, &pi), VIP_SUCCESS,
		  "VIP_DPDK_SMI_PORT");
	VipQueryNic(nic, &na);
	CHECK(memchr(pi.Name, 0, sizeof(pi.Name)) && strcmp(pi.Name, "via0") == 0,
	      "port Name is via0");
	CHECK(memchr(pi.Glue, 0, sizeof(pi.Glue)) && strcmp(pi.Glue, "loopback") == 0,
	      "port Glue is loopback (\"%.32s\")", pi.Glue);
	CHECK(pi.LinkUp == 1, "the link is up");
	CHECK(memcmp(pi.Mac, mac_nic, 6) == 0, "port Mac is the NIC's address");
	CHECK(pi.Mtu == na.NativeMTU, "port Mtu (%u) is the NIC's NativeMTU (%lu)", pi.Mtu,
	      na.NativeMTU);
	memset(&pi, 0x77, sizeof(pi));
	CHECK_RET(VipQuerySystemManagementInfo(lo, VIP_DPDK_SMI_PORT, &pi), VIP_SUCCESS,
		  "VIP_DPDK_SMI_PORT of the /dev/via_lo session");
	CHECK(strcmp(pi.Name, "via0") == 0 && strcmp(pi.Glue, "loopback") == 0,
	      "/dev/via_lo is the loopback NIC via0");
	CHECK_RET(VipQuerySystemManagementInfo(nic, 0, &pi), VIP_INVALID_PARAMETER, "InfoType 0");
	CHECK_RET(VipQuerySystemManagementInfo(nic, 3, &pi), VIP_INVALID_PARAMETER, "InfoType 3");
	CHECK_RET(VipQuerySystemManagementInfo(nic, 0x10001, &pi), VIP_INVALID_PARAMETER,
		  "InfoType 0x10001");
	CHECK_RET(VipQuerySystemManagementInfo(nic, VIP_DPDK_SMI_COUNTERS, NULL),
		  VIP_INVALID_PARAMETER, "counters into NULL");
	CHECK_RET(VipQuerySystemManagementInfo(nic, VIP_DPDK_SMI_PORT, NULL), VIP_INVALID_PARAMETER,
		  "port info into NULL");
	CHECK_RET(VipQuerySystemManagementInfo(NULL, VIP_DPDK_SMI_COUNTERS, &c0),
		  VIP_INVALID_PARAMETER, "on a NULL NIC");
}

static void
test_return_strings(void)
{
	h_note("VipDpdkReturnString / VipDpdkErrorCodeString");
	CHECK(strcmp(VipDpdkReturnString(VIP_SUCCESS), "VIP_SUCCESS") == 0 &&
	      strcmp(VipDpdkReturnString(VIP_INVALID_RDMAREAD), "VIP_INVALID_RDMAREAD") == 0 &&
	      strcmp(VipDpdkReturnString(VIP_NO_MATCH), "VIP_NO_MATCH") == 0,
	      "names of return codes");
	CHECK(strcmp(VipDpdkReturnString((VIP_RETURN)15), "VIP_UNKNOWN") == 0 &&
	      strcmp(VipDpdkReturnString((VIP_RETURN)-1), "VIP_UNKNOWN") == 0,
	      "out-of-range return codes are VIP_UNKNOWN");
	CHECK(strcmp(VipDpdkErrorCodeString(VIP_ERROR_POST_DESC), "VIP_ERROR_POST_DESC") == 0 &&
	      strcmp(VipDpdkErrorCodeString(VIP_ERROR_CATASTROPHIC), "VIP_ERROR_CATASTROPHIC") == 0 &&
	      strcmp(VipDpdkErrorCodeString((VIP_ERROR_CODE)11), "VIP_UNKNOWN") == 0,
	      "names of asynchronous error codes");
}

/* ---------------------------------------------------------------------- */

static void
test_name_service(VIP_NIC_HANDLE nic, VIP_NIC_HANDLE other)
{
	union h_net_addr n;
	char name[300], host[256];
	VIP_ULONG len;
	bool have_host;

	h_note("name service (VipNSInit / VipNSGetHostByName / VipNSGetHostByAddr / VipNSShutdown)");
	memset(&n, 0, sizeof(n));
	CHECK_RET(VipNSGetHostByName(nic, "alpha", &n.a, 0), VIP_ERROR_NAMESERVICE,
		  "VipNSGetHostByName before VipNSInit");
	h_addr(&n, mac_alpha, "");
	len = sizeof(name);
	CHECK_RET(VipNSGetHostByAddr(nic, &n.a, name, &len), VIP_ERROR_NAMESERVICE,
		  "VipNSGetHostByAddr before VipNSInit");
	CHECK_RET(VipNSInit(NULL, NULL), VIP_INVALID_PARAMETER, "VipNSInit on a NULL NIC");
	CHECK_RET(VipNSInit(nic, NULL), VIP_SUCCESS, "VipNSInit");

	memset(&n, 0xcc, sizeof(n));
	CHECK_RET(VipNSGetHostByName(nic, "alpha", &n.a, 0), VIP_SUCCESS, "look up alpha");
	CHECK(n.a.HostAddressLen == 6, "HostAddressLen is 6 (%u)", n.a.HostAddressLen);
	CHECK(memcmp(n.a.HostAddress, mac_alpha, 6) == 0, "alpha's MAC");
	CHECK_RET(VipNSGetHostByName(nic, "alpha", &n.a, 1), VIP_ERROR_NAMESERVICE,
		  "alpha has no second address");
	CHECK_RET(VipNSGetHostByName(nic, "beta", &n.a, 0), VIP_SUCCESS, "look up beta, index 0");
	CHECK(memcmp(n.a.HostAddress, mac_beta0, 6) == 0, "beta's first MAC");
	CHECK_RET(VipNSGetHostByName(nic, "beta", &n.a, 1), VIP_SUCCESS, "look up beta, index 1");
	CHECK(memcmp(n.a.HostAddress, mac_beta1, 6) == 0, "beta's second MAC");
	CHECK_RET(VipNSGetHostByName(nic, "beta", &n.a, 2), VIP_ERROR_NAMESERVICE,
		  "beta has no third address");
	CHECK_RET(VipNSGetHostByName(nic, "gamma", &n.a, 0), VIP_ERROR_NAMESERVICE,
		  "an unknown name");
	CHECK_RET(VipNSGetHostByName(nic, "", &n.a, 0), VIP_ERROR_NAMESERVICE, "the empty name");
	CHECK_RET(VipNSGetHostByName(nic, "localhost", &n.a, 0), VIP_SUCCESS, "look up localhost");
	CHECK(n.a.HostAddressLen == 6 && memcmp(n.a.HostAddress, mac_nic, 6) == 0,
	      "localhost is the NIC's own MAC");
	CHECK_RET(VipNSGetHostByName(nic, "localhost", &n.a, 1), VIP_ERROR_NAMESERVICE,
		  "localhost has one address");
	have_host = gethostname(host, sizeof(host)) == 0 && host[0] != '\0' &&
		    strcmp(host, "alpha") != 0 && strcmp(host, "beta") != 0;
	if (have_host) {
		CHECK_RET(VipNSGetHostByName(nic, host, &n.a, 0), VIP_SUCCESS,
			  "look up this host's name (%s)", host);
		CHECK(memcmp(n.a.HostAddress, mac_nic, 6) == 0, "this host's name is the NIC's MAC");
	}
	CHECK_RET(VipNSGetHostByName(nic, NULL, &n.a, 0), VIP_INVALID_PARAMETER, "a NULL Name");
	CHECK_RET(VipNSGetHostByName(nic, "alpha", NULL, 0), VIP_INVALID_PARAMETER,
		  "a NULL VipAddress");
	memset(name, 'x', 299);
	name[299] = '\0';
	CHECK_RET(VipNSGetHostByName(nic, name, &n.a, 0), VIP_INVALID_PARAMETER,
		  "a 299-character name");
	CHECK_RET(VipNSGetHostByName(NULL, "alpha", &n.a, 0), VIP_INVALID_PARAMETER, "a NULL NIC");
	CHECK_RET(VipNSGetHostByName(other, "alpha", &n.a, 0), VIP_ERROR_NAMESERVICE,
		  "the other session has not called VipNSInit");

	/* by address */
	h_addr(&n, mac_alpha, "");
	len = sizeof(name);
	memset(name, 0, sizeof(name));
	CHECK_RET(VipNSGetHostByAddr(nic, &n.a, name, &len), VIP_SUCCESS, "reverse alpha's MAC");
	CHECK(strcmp(name, "alpha") == 0 && len == 6, "the name is alpha, NameLen 6 (%lu)", len);
	len = 3;
	memset(name, 0, sizeof(name));
	CHECK_RET(VipNSGetHostByAddr(nic, &n.a, name, &len), VIP_ERROR_RESOURCE,
		  "NameLen 3 is too small");
	CHECK(len == 6, "NameLen is set to the length needed, NUL included (%lu)", len);
	CHECK(name[3] == '\0', "nothing was written past the 3 bytes given");
	len = 6;
	CHECK_RET(VipNSGetHostByAddr(nic, &n.a, name, &len), VIP_SUCCESS, "NameLen 6 is enough");
	CHECK(strcmp(name, "alpha") == 0, "the name is alpha");
	h_addr(&n, mac_beta1, "");
	len = sizeof(name);
	CHECK_RET(VipNSGetHostByAddr(nic, &n.a, name, &len), VIP_SUCCESS, "reverse beta's 2nd MAC");
	CHECK(strcmp(name, "beta") == 0, "the name is beta");
	n.a.DiscriminatorLen = 4;
	memcpy(n.a.HostAddress + 6, "disc", 4);
	len = sizeof(name);
	CHECK_RET(VipNSGetHostByAddr(nic, &n.a, name, &len), VIP_SUCCESS,
		  "a discriminator is ignored");
	h_addr(&n, (const uint8_t[6]){ 0x02, 1, 2, 3, 4, 5 }, "");
	len = sizeof(name);
	CHECK_RET(VipNSGetHostByAddr(nic, &n.a, name, &len), VIP_ERROR_NAMESERVICE,
		  "an unknown MAC");
	h_addr(&n, mac_nic, "");
	len = sizeof(name);
	CHECK_RET(VipNSGetHostByAddr(nic, &n.a, name, &len), VIP_SUCCESS, "reverse the NIC's MAC");
	if (have_host)
		CHECK(strcmp(name, host) == 0, "it is this host's name");
	n.a.HostAddressLen = 4;
	CHECK_RET(VipNSGetHostByAddr(nic, &n.a, name, &len), VIP_INVALID_PARAMETER,
		  "HostAddressLen 4");
	h_addr(&n, mac_alpha, "");
	CHECK_RET(VipNSGetHostByAddr(nic, NULL, name, &len), VIP_INVALID_PARAMETER, "NULL VipAddress");
	CHECK_RET(VipNSGetHostByAddr(nic, &n.a, NULL, &len), VIP_INVALID_PARAMETER, "NULL Name");
	CHECK_RET(VipNSGetHostByAddr(nic, &n.a, name, NULL), VIP_INVALID_PARAMETER, "NULL NameLen");
	CHECK_RET(VipNSGetHostByAddr(NULL, &n.a, name, &len), VIP_INVALID_PARAMETER, "a NULL NIC");

	CHECK_RET(VipNSShutdown(NULL), VIP_INVALID_PARAMETER, "VipNSShutdown on a NULL NIC");
	CHECK_RET(VipNSShutdown(nic), VIP_SUCCESS, "VipNSShutdown");
	CHECK_RET(VipNSGetHostByName(nic, "alpha", &n.a, 0), VIP_ERROR_NAMESERVICE,
		  "VipNSGetHostByName after VipNSShutdown");
	CHECK_RET(VipNSInit(nic, NULL), VIP_SUCCESS, "VipNSInit again");
	CHECK_RET(VipNSGetHostByName(nic, "alpha", &n.a, 0), VIP_SUCCESS, "look up alpha again");
	CHECK_RET(VipNSShutdown(nic), VIP_SUCCESS, "VipNSShutdown again");
}

/* ---------------------------------------------------------------------- */

/* Whether @p r is one of the @p n codes that follow. */
static bool
ret_in(VIP_RETURN r, unsigned n, ...)
{
	va_list ap;
	bool found = false;

	va_start(ap, n);
	while (n-- > 0)
		found |= r == (VIP_RETURN)va_arg(ap, int);
	va_end(ap);
	return found;
}

#define CHECK_IN(expr, ...) \
	do { \
		VIP_RETURN r_ = (expr); \
		CHECK(ret_in(r_, __VA_ARGS__), "%s: %s", #expr, VipDpdkReturnString(r_)); \
	} while (0)

/*
 * The data path and connection calls. In the foundation build they are
 * stubs: VIP_ERROR_RESOURCE for valid handles. Whatever the build, valid
 * handles must get a code the call documents (vipl.h, VIA 9.4 / 9.6) for an
 * Idle, unconnected VI, and bad handles VIP_INVALID_PARAMETER. A session of
 * its own is used and closed at the end, so that posted descriptors or
 * pending connections are reclaimed by viad.
 */
static void
test_later_calls(void)
{
	VIP_NIC_HANDLE nic;
	VIP_PROTECTION_HANDLE pt;
	VIP_VI_ATTRIBUTES va, ra_attr;
	VIP_VI_HANDLE vi, vic, vpeer, vfresh, vtmo, vout;
	VIP_CQ_HANDLE cq;
	VIP_CONN_HANDLE conn;
	VIP_DESCRIPTOR *d;
	VIP_BOOLEAN rq;
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_MEM_HANDLE mh;
	VIP_DESCRIPTOR *desc;
	union h_net_addr la, ra, nobody;

	h_note("data path and connection calls: documented codes for valid handles, "
	       "VIP_INVALID_PARAMETER for bad ones");
	if (VipOpenNic("via0", &nic) != VIP_SUCCESS) {
		CHECK(0, "open a session for the data path calls");
		return;
	}
	VipCreatePtag(nic, &pt);
	h_vi_attrs(&va, pt);
	VipCreateCQ(nic, 16, &cq);
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &vi), VIP_SUCCESS, "a VI without CQs");
	CHECK_RET(VipCreateVi(nic, &va, cq, cq, &vic), VIP_SUCCESS, "a VI with a CQ");
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &vpeer), VIP_SUCCESS, "a VI for peer calls");
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &vfresh), VIP_SUCCESS, "an untouched VI");
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &vtmo), VIP_SUCCESS, "a VI for Timeout 0");
	desc = aligned_alloc(VIP_DESCRIPTOR_ALIGNMENT, 4096);
	memset(desc, 0, 4096);
	ma.Ptag = pt;
	VipRegisterMem(nic, desc, 4096, &ma, &mh);
	h_addr(&la, mac_nic, "\x11");
	h_addr(&ra, mac_nic, "\x22");
	h_addr(&nobody, (const uint8_t[6]){ 0x02, 0x7e, 0x57, 0x00, 0x00, 0x01 }, "\x33");

	/* valid handles */
	CHECK_IN(VipPostSend(vi, &desc[0], mh), 2, VIP_SUCCESS, VIP_ERROR_RESOURCE);
	CHECK_IN(VipPostRecv(vi, &desc[1], mh), 2, VIP_SUCCESS, VIP_ERROR_RESOURCE);
	CHECK_IN(VipSendDone(vi, &d), 3, VIP_SUCCESS, VIP_NOT_DONE, VIP_ERROR_RESOURCE);
	CHECK_IN(VipRecvDone(vi, &d), 3, VIP_SUCCESS, VIP_NOT_DONE, VIP_ERROR_RESOURCE);
	CHECK_IN(VipSendWait(vi, 10, &d), 3, VIP_SUCCESS, VIP_TIMEOUT, VIP_ERROR_RESOURCE);
	CHECK_IN(VipRecvWait(vi, 10, &d), 3, VIP_SUCCESS, VIP_TIMEOUT, VIP_ERROR_RESOURCE);
	CHECK_IN(VipSendNotify(vi, NULL, fake_vi_cb), 2, VIP_SUCCESS, VIP_ERROR_RESOURCE);
	CHECK_IN(VipRecvNotify(vi, NULL, fake_vi_cb), 2, VIP_SUCCESS, VIP_ERROR_RESOURCE);
	CHECK_IN(VipCQDone(cq, &vout, &rq), 3, VIP_SUCCESS, VIP_NOT_DONE, VIP_ERROR_RESOURCE);
	CHECK_IN(VipCQWait(cq, 10, &vout, &rq), 3, VIP_SUCCESS, VIP_TIMEOUT, VIP_ERROR_RESOURCE);
	CHECK_IN(VipCQNotify(cq, NULL, fake_cq_cb), 2, VIP_SUCCESS, VIP_ERROR_RESOURCE);
	CHECK_IN(VipResizeCQ(cq, 32), 2, VIP_SUCCESS, VIP_ERROR_RESOURCE);
	CHECK_IN(VipConnectWait(nic, &la.a, 0, &ra.a, &ra_attr, &conn), 3, VIP_SUCCESS, VIP_TIMEOUT,
		 VIP_ERROR_RESOURCE);
	CHECK_IN(VipConnectRequest(vi, &la.a, &nobody.a, 200, &ra_attr), 5, VIP_TIMEOUT,
		 VIP_NO_MATCH, VIP_REJECT, VIP_SUCCESS, VIP_ERROR_RESOURCE);
	CHECK_IN(VipDisconnect(vi), 2, VIP_SUCCESS, VIP_ERROR_RESOURCE);
	CHECK_IN(VipConnectPeerDone(vfresh, &ra_attr), 2, VIP_INVALID_STATE, VIP_ERROR_RESOURCE);
	CHECK_IN(VipConnectPeerWait(vfresh, &ra_attr), 2, VIP_INVALID_STATE, VIP_ERROR_RESOURCE);
	CHECK_IN(VipConnectPeerRequest(vpeer, &la.a, &nobody.a, 200), 2, VIP_SUCCESS,
		 VIP_ERROR_RESOURCE);
	CHECK_IN(VipConnectPeerDone(vpeer, &ra_attr), 4, VIP_NOT_DONE, VIP_TIMEOUT, VIP_SUCCESS,
		 VIP_ERROR_RESOURCE);
	CHECK_IN(VipDisconnect(vpeer), 2, VIP_SUCCESS, VIP_ERROR_RESOURCE);
	/* a send or receive queue bound to a CQ cannot be waited on (VIA 9.6.3,
	 * 9.6.6, 9.6.9, 9.6.10; vipl.h) */
	CHECK_RET(VipSendWait(vic, 10, &d), VIP_ERROR_RESOURCE, "VipSendWait on a CQ-bound queue");
	CHECK_RET(VipRecvWait(vic, 10, &d), VIP_ERROR_RESOURCE, "VipRecvWait on a CQ-bound queue");
	CHECK_RET(VipSendNotify(vic, NULL, fake_vi_cb), VIP_ERROR_RESOURCE,
		  "VipSendNotify on a CQ-bound queue");
	CHECK_RET(VipRecvNotify(vic, NULL, fake_vi_cb), VIP_ERROR_RESOURCE,
		  "VipRecvNotify on a CQ-bound queue");
	/* VIA 9.4.4 and vipl.h: "a timeout value of zero is invalid and will
	 * result in an immediate timeout error" */
	CHECK_RET(VipConnectRequest(vtmo, &la.a, &ra.a, 0, &ra_attr), VIP_TIMEOUT,
		  "VipConnectRequest with Timeout 0 times out at once (VIA 9.4.4)");

	/* bad handles and pointers */
	CHECK_RET(VipPostSend(NULL, desc, mh), VIP_INVALID_PARAMETER, "VipPostSend, NULL VI");
	CHECK_RET(VipPostSend(cq, desc, mh), VIP_INVALID_PARAMETER, "VipPostSend, CQ as VI");
	CHECK_RET(VipPostSend(vi, NULL, mh), VIP_INVALID_PARAMETER, "VipPostSend, NULL Descriptor");
	CHECK_RET(VipPostRecv(NULL, desc, mh), VIP_INVALID_PARAMETER, "VipPostRecv, NULL VI");
	CHECK_RET(VipPostRecv(vi, NULL, mh), VIP_INVALID_PARAMETER, "VipPostRecv, NULL Descriptor");
	CHECK_RET(VipSendDone(NULL, &d), VIP_INVALID_PARAMETER, "VipSendDone, NULL VI");
	CHECK_RET(VipSendDone(vi, NULL), VIP_INVALID_PARAMETER, "VipSendDone, NULL out");
	CHECK_RET(VipRecvDone(NULL, &d), VIP_INVALID_PARAMETER, "VipRecvDone, NULL VI");
	CHECK_RET(VipSendWait(NULL, 0, &d), VIP_INVALID_PARAMETER, "VipSendWait, NULL VI");
	CHECK_RET(VipRecvWait(NULL, 0, &d), VIP_INVALID_PARAMETER, "VipRecvWait, NULL VI");
	CHECK_RET(VipSendNotify(NULL, NULL, fake_vi_cb), VIP_INVALID_PARAMETER,
		  "VipSendNotify, NULL VI");
	CHECK_RET(VipSendNotify(vi, NULL, NULL), VIP_INVALID_PARAMETER,
		  "VipSendNotify, NULL Handler");
	CHECK_RET(VipRecvNotify(NULL, NULL, fake_vi_cb), VIP_INVALID_PARAMETER,
		  "VipRecvNotify, NULL VI");
	CHECK_RET(VipCQDone(NULL, &vout, &rq), VIP_INVALID_PARAMETER, "VipCQDone, NULL CQ");
	CHECK_RET(VipCQDone(vi, &vout, &rq), VIP_INVALID_PARAMETER, "VipCQDone, VI as CQ");
	CHECK_RET(VipCQDone(cq, NULL, &rq), VIP_INVALID_PARAMETER, "VipCQDone, NULL ViHandle");
	CHECK_RET(VipCQWait(NULL, 0, &vout, &rq), VIP_INVALID_PARAMETER, "VipCQWait, NULL CQ");
	CHECK_RET(VipCQNotify(NULL, NULL, fake_cq_cb), VIP_INVALID_PARAMETER,
		  "VipCQNotify, NULL CQ");
	CHECK_RET(VipCQNotify(cq, NULL, NULL), VIP_INVALID_PARAMETER, "VipCQNotify, NULL Handler");
	CHECK_RET(VipResizeCQ(NULL, 32), VIP_INVALID_PARAMETER, "VipResizeCQ, NULL CQ");
	CHECK_RET(VipResizeCQ(cq, 0), VIP_INVALID_PARAMETER, "VipResizeCQ, 0 entries");
	CHECK_RET(VipConnectWait(NULL, &la.a, 0, &ra.a, &ra_attr, &conn), VIP_INVALID_PARAMETER,
		  "VipConnectWait, NULL NIC");
	CHECK_RET(VipConnectWait(nic, NULL, 0, &ra.a, &ra_attr, &conn), VIP_INVALID_PARAMETER,
		  "VipConnectWait, NULL LocalAddr");
	CHECK_RET(VipConnectAccept(NULL, vi), VIP_INVALID_PARAMETER,
		  "VipConnectAccept, NULL ConnHandle");
	CHECK_RET(VipConnectAccept((VIP_CONN_HANDLE)0x1, NULL), VIP_INVALID_PARAMETER,
		  "VipConnectAccept, NULL VI");
	CHECK_RET(VipConnectReject(NULL), VIP_INVALID_PARAMETER, "VipConnectReject, NULL ConnHandle");
	CHECK_RET(VipConnectRequest(NULL, &la.a, &ra.a, 1000, &ra_attr), VIP_INVALID_PARAMETER,
		  "VipConnectRequest, NULL VI");
	CHECK_RET(VipConnectRequest(vfresh, &la.a, NULL, 1000, &ra_attr), VIP_INVALID_PARAMETER,
		  "VipConnectRequest, NULL RemoteAddr");
	CHECK_RET(VipDisconnect(NULL), VIP_INVALID_PARAMETER, "VipDisconnect, NULL VI");
	CHECK_RET(VipDisconnect(cq), VIP_INVALID_PARAMETER, "VipDisconnect, CQ as VI");
	CHECK_RET(VipConnectPeerRequest(NULL, &la.a, &ra.a, 1000), VIP_INVALID_PARAMETER,
		  "VipConnectPeerRequest, NULL VI");
	CHECK_RET(VipConnectPeerDone(NULL, &ra_attr), VIP_INVALID_PARAMETER,
		  "VipConnectPeerDone, NULL VI");
	CHECK_RET(VipConnectPeerWait(NULL, &ra_attr), VIP_INVALID_PARAMETER,
		  "VipConnectPeerWait, NULL VI");

	/* leave the rest to viad's reclaim: posted descriptors or pending
	 * connections may keep some VIs from being destroyed */
	VipDisconnect(vi);
	VipDisconnect(vtmo);
	CHECK_RET(VipDestroyVi(vfresh), VIP_SUCCESS, "destroy the untouched VI");
	CHECK_RET(VipCloseNic(nic), VIP_SUCCESS, "close the session");
	CHECK_RET(VipCQDone(cq, &vout, &rq), VIP_INVALID_PARAMETER, "VipCQDone, CQ of a closed NIC");
	CHECK_RET(VipPostSend(vi, desc, mh), VIP_INVALID_PARAMETER, "VipPostSend, VI of a closed NIC");
	free(desc);
}

/* ThreadSafe is VIP_TRUE: threads sharing one NIC, each with its objects. */
struct thread_arg {
	VIP_NIC_HANDLE nic;
	unsigned failures;
};

static void *
thread_body(void *p)
{
	struct thread_arg *t = p;
	VIP_PROTECTION_HANDLE pt;
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_VI_ATTRIBUTES va, got;
	VIP_VI_STATE st;
	VIP_BOOLEAN se, re;
	VIP_MEM_HANDLE mh;
	VIP_CQ_HANDLE cq;
	VIP_VI_HANDLE vi;
	VIP_PVOID a;
	char *buf = malloc(6000);
	unsigned i;

	for (i = 0; i < 100; i++) {
		bool ok = VipCreatePtag(t->nic, &pt) == VIP_SUCCESS;

		ma.Ptag = pt;
		h_vi_attrs(&va, pt);
		ok = ok && VipCreateCQ(t->nic, 16, &cq) == VIP_SUCCESS;
		ok = ok && VipCreateVi(t->nic, &va, cq, cq, &vi) == VIP_SUCCESS;
		ok = ok && VipRegisterMem(t->nic, buf + i % 64, 5000, &ma, &mh) == VIP_SUCCESS;
		ok = ok && VipDpdkAllocMem(t->nic, 100, &a) == VIP_SUCCESS;
		ok = ok && VipQueryVi(vi, &st, &got, &se, &re) == VIP_SUCCESS && got.Ptag == pt;
		ok = ok && VipDpdkFreeMem(t->nic, a) == VIP_SUCCESS;
		ok = ok && VipDeregisterMem(t->nic, buf + i % 64, mh) == VIP_SUCCESS;
		ok = ok && VipDestroyVi(vi) == VIP_SUCCESS;
		ok = ok && VipDestroyCQ(cq) == VIP_SUCCESS;
		ok = ok && VipDestroyPtag(t->nic, pt) == VIP_SUCCESS;
		t->failures += !ok;
	}
	free(buf);
	return NULL;
}

static void
test_threads(VIP_NIC_HANDLE nic)
{
	struct thread_arg args[4];
	pthread_t th[4];
	VIP_DPDK_COUNTERS c0, c1;
	unsigned i, fails = 0;

	h_note("four threads sharing one NIC (ThreadSafe)");
	h_counters(nic, &c0);
	for (i = 0; i < 4; i++) {
		args[i] = (struct thread_arg){ .nic = nic };
		pthread_create(&th[i], NULL, thread_body, &args[i]);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		fails += args[i].failures;
	}
	CHECK(fails == 0, "400 create/use/destroy cycles in 4 threads all succeeded (%u failed)",
	      fails);
	h_counters(nic, &c1);
	CHECK(c1.VisCreated - c0.VisCreated == 400 && c1.VisDestroyed - c0.VisDestroyed == 400 &&
	      c1.BytesRegistered == c0.BytesRegistered, "viad counted 400 VIs in and out");
}

/* VIA 9.3.2: a destroyed handle must fail, however many objects came after. */
static void
test_stale_handle_reuse(VIP_NIC_HANDLE nic)
{
	VIP_PROTECTION_HANDLE pt;
	VIP_VI_ATTRIBUTES va, got;
	VIP_VI_HANDLE stale, vi;
	VIP_VI_STATE st;
	VIP_BOOLEAN se, re;
	unsigned i, aliased_at = 0;

	h_note("a destroyed VI handle while 2000 more VIs come and go");
	VipCreatePtag(nic, &pt);
	h_vi_attrs(&va, pt);
	CHECK_RET(VipCreateVi(nic, &va, NULL, NULL, &stale), VIP_SUCCESS, "create a VI");
	CHECK_RET(VipDestroyVi(stale), VIP_SUCCESS, "destroy it, keeping its handle");
	for (i = 1; i <= 2000 && aliased_at == 0; i++) {
		if (VipCreateVi(nic, &va, NULL, NULL, &vi) != VIP_SUCCESS)
			break;
		if (VipQueryVi(stale, &st, &got, &se, &re) != VIP_INVALID_PARAMETER)
			aliased_at = i;
		VipDestroyVi(vi);
	}
	CHECK(aliased_at == 0,
	      "the stale handle never resolves again (it named the new VI #%u, handle %p)",
	      aliased_at, stale);
	VipDestroyPtag(nic, pt);
}

/* Handles of a closed NIC stop resolving. */
static void
test_closed_handles(void)
{
	VIP_NIC_HANDLE nic;
	VIP_PROTECTION_HANDLE pt;
	VIP_VI_ATTRIBUTES va, got;
	VIP_VI_HANDLE vi;
	VIP_CQ_HANDLE cq;
	VIP_VI_STATE st;
	VIP_BOOLEAN se, re;
	VIP_NIC_ATTRIBUTES na;

	h_note("handles of a closed NIC");
	CHECK_RET(VipOpenNic("via0", &nic), VIP_SUCCESS, "open a NIC");
	VipCreatePtag(nic, &pt);
	VipCreateCQ(nic, 8, &cq);
	h_vi_attrs(&va, pt);
	CHECK_RET(VipCreateVi(nic, &va, cq, NULL, &vi), VIP_SUCCESS, "create a VI");
	CHECK_RET(VipCloseNic(nic), VIP_SUCCESS, "close the NIC with the VI, CQ and tag open");
	CHECK_RET(VipQueryVi(vi, &st, &got, &se, &re), VIP_INVALID_PARAMETER,
		  "the VI handle no longer resolves");
	CHECK_RET(VipDestroyVi(vi), VIP_INVALID_PARAMETER, "VipDestroyVi of it");
	CHECK_RET(VipDestroyCQ(cq), VIP_INVALID_PARAMETER, "the CQ handle no longer resolves");
	CHECK_RET(VipQueryNic(nic, &na), VIP_INVALID_PARAMETER, "the NIC handle no longer resolves");
	CHECK_RET(VipCreatePtag(nic, &pt), VIP_INVALID_PARAMETER, "VipCreatePtag on it");
}

/*
 * Two loopback ports (via0 with a MAC and MTU of its own), and a 2 MiB
 * session segment with large work queues: VIs run out of segment space
 * before MaxVI, and the space comes back.
 */
static void
test_ports_and_segment(const struct viad_proc *v)
{
	static const uint8_t mac42[6] = { 0x02, 0, 0, 0, 0, 0x42 };
	VIP_NIC_HANDLE n0 = NULL, n1 = NULL, lo = NULL, h;
	VIP_NIC_ATTRIBUTES a0, a1;
	VIP_DPDK_PORT_INFO pi;
	VIP_PROTECTION_HANDLE pt;
	VIP_VI_ATTRIBUTES va;
	VIP_VI_HANDLE vi[4];
	VIP_CQ_HANDLE cq;
	const VIP_DPDK_VI_ATTRIBUTES lines64 = { .EntryDescriptors = VIP_TRUE, .InlineSize = 64 };
	union h_net_addr n;
	unsigned i;
	bool ok;

	h_note("two loopback ports, port overrides, a full session segment");
	viad_use(v);
	CHECK_RET(VipOpenNic("via0", &n0), VIP_SUCCESS, "open via0");
	CHECK_RET(VipOpenNic("via1", &n1), VIP_SUCCESS, "open via1");
	CHECK_RET(VipOpenNic(VIPL_DPDK_NIC_LOOPBACK, &lo), VIP_SUCCESS, "open /dev/via_lo");
	CHECK_RET(VipOpenNic("via2", &h), VIP_INVALID_PARAMETER, "open via2 (two ports only)");
	CHECK_RET(VipOpenNic("/dev/via_eth0", &h), VIP_INVALID_PARAMETER,
		  "open /dev/via_eth0 (both ports are loopback)");
	if (n0 == NULL || n1 == NULL || lo == NULL)
		return;
	VipQueryNic(n0, &a0);
	VipQueryNic(n1, &a1);
	CHECK(strcmp(a0.Name, "via0") == 0 && strcmp(a1.Name, "via1") == 0, "the NICs' names");
	CHECK(memcmp(a0.LocalNicAddress, mac42, 6) == 0,
	      "via0's address is port.via0.mac (02:00:00:00:00:42)");
	CHECK(a0.NativeMTU == 1500, "via0's NativeMTU is port.via0.mtu (%lu)", a0.NativeMTU);
	CHECK(memcmp(a1.LocalNicAddress, a0.LocalNicAddress, 6) != 0,
	      "via1 has another address");
	CHECK_RET(VipQuerySystemManagementInfo(n0, VIP_DPDK_SMI_PORT, &pi), VIP_SUCCESS,
		  "port info of via0");
	CHECK(strcmp(pi.Name, "via0") == 0 && memcmp(pi.Mac, mac42, 6) == 0 && pi.Mtu == 1500,
	      "port info of via0 has its name, MAC and MTU");
	CHECK_RET(VipQuerySystemManagementInfo(n1, VIP_DPDK_SMI_PORT, &pi), VIP_SUCCESS,
		  "port info of via1");
	CHECK(strcmp(pi.Name, "via1") == 0 && memcmp(pi.Mac, a1.LocalNicAddress, 6) == 0,
	      "port info of via1 has its name and MAC");
	CHECK_RET(VipQuerySystemManagementInfo(lo, VIP_DPDK_SMI_PORT, &pi), VIP_SUCCESS,
		  "port info of /dev/via_lo");
	CHECK(strcmp(pi.Name, "via0") == 0, "/dev/via_lo is the first loopback port, via0");
	VipNSInit(n1, NULL);
	CHECK_RET(VipNSGetHostByName(n1, "localhost", &n.a, 0), VIP_SUCCESS,
		  "localhost on a via1 session");
	CHECK(memcmp(n.a.HostAddress, a1.LocalNicAddress, 6) == 0, "is via1's address");
	VipNSShutdown(n1);

	/* segment space: 3 VIs of 2 x 16384 descriptors fill 2 MiB */
	VipCreatePtag(n0, &pt);
	h_vi_attrs(&va, pt);
	ok = true;
	for (i = 0; i < 3; i++)
		ok &= VipCreateVi(n0, &va, NULL, NULL, &vi[i]) == VIP_SUCCESS;
	CHECK(ok, "3 VIs with 16384-descriptor queues fit in a 2 MiB segment");
	CHECK_RET(VipCreateVi(n0, &va, NULL, NULL, &vi[3]), VIP_ERROR_RESOURCE,
		  "a 4th does not: VIP_ERROR_RESOURCE below MaxVI");
	CHECK_RET(VipCreateCQ(n0, 1024, &cq), VIP_SUCCESS, "a small CQ still fits");
	CHECK_RET(VipCreateVi(n1, &va, NULL, NULL, &vi[3]), VIP_INVALID_PTAG,
		  "via0's tag is not valid on via1");
	CHECK_RET(VipDestroyVi(vi[1]), VIP_SUCCESS, "destroy the middle VI");
	CHECK_RET(VipCreateVi(n0, &va, NULL, NULL, &vi[1]), VIP_SUCCESS,
		  "a new VI fits in the hole it left");
	ok = true;
	for (i = 0; i < 3; i++)
		ok &= VipDestroyVi(vi[i]) == VIP_SUCCESS;
	ok &= VipDestroyCQ(cq) == VIP_SUCCESS;
	CHECK(ok, "destroy everything");
	/* line entries cost their size in the segment (vipl_dpdk.h): 2 x 16384
	 * entries of 128 bytes are 4 MiB */
	CHECK_RET(VipDpdkCreateVi(n0, &va, &lines64, NULL, NULL, &vi[0]), VIP_ERROR_RESOURCE,
		  "a VI of 16384-entry queues of line entries (InlineSize 64) does not fit");
	ok = true;
	for (i = 0; i < 3; i++)
		ok &= VipCreateVi(n0, &va, NULL, NULL, &vi[i]) == VIP_SUCCESS;
	CHECK(ok, "the segment's space is whole again: 3 VIs fit");
	for (i = 0; i < 3; i++)
		VipDestroyVi(vi[i]);
	VipDestroyPtag(n0, pt);
	CHECK_RET(VipCloseNic(lo), VIP_SUCCESS, "close /dev/via_lo");
	CHECK_RET(VipCloseNic(n1), VIP_SUCCESS, "close via1");
	CHECK_RET(VipCloseNic(n0), VIP_SUCCESS, "close via0");
}

/* ---------------------------------------------------------------------- */

int
main(int argc, char **argv)
{
	char hosts[512], hosts_set[600];
	const char *main_sets[16];
	const char *small_sets[] = {
		"limits.max_vi=4", "limits.max_ptags=4", "limits.max_regions=4", "limits.max_cq=3",
		"limits.max_sessions=3", "limits.max_alloc_bytes=64K",
		/* the viad-wide limits, all for this one user (it_limits tests the
		 * per-user ones) */
		"limits.user_share=1", NULL,
	};
	const char *seg_sets[] = {
		"limits.session_shm_bytes=2M", "limits.max_desc_per_queue=16384",
		"port.via0.glue=loopback", "port.via0.mac=02:00:00:00:00:42", "port.via0.mtu=1500",
		"port.via1.glue=loopback", NULL,
	};
	struct viad_proc vmain, vsmall, vseg;
	VIP_NIC_HANDLE nic = NULL, other = NULL, lo = NULL, s1 = NULL, s2 = NULL;
	unsigned n = 0;
	FILE *f;

	h_init(argc, argv, 110);
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	snprintf(hosts, sizeof(hosts), "%s/hosts", h_tmpdir());
	f = fopen(hosts, "w");
	if (f == NULL || fprintf(f, "# test hosts\nalpha 02:11:22:33:44:55\n"
				    "beta 02:aa:bb:cc:dd:ee\nbeta 02:AA:BB:CC:DD:EF\n") < 0) {
		CHECK(0, "write %s", hosts);
		return h_finish();
	}
	fclose(f);
	snprintf(hosts_set, sizeof(hosts_set), "viad.hosts=%s", hosts);
	main_sets[n++] = "limits.max_cq_entries=2048";
	main_sets[n++] = "limits.max_transfer_size=128K";
	main_sets[n++] = "limits.max_discriminator_len=32";
	main_sets[n++] = "limits.max_segments_per_desc=300";
	main_sets[n++] = "limits.max_desc_per_queue=256";
	main_sets[n++] = "limits.max_cq=64";
	main_sets[n++] = "limits.max_vi=64";
	main_sets[n++] = "limits.max_ptags=128";
	main_sets[n++] = "limits.max_regions=256";
	main_sets[n++] = "limits.max_register_bytes=64M";
	main_sets[n++] = "limits.user_share=1";
	main_sets[n++] = hosts_set;
	main_sets[n] = NULL;

	if (viad_start(&vmain, "main", main_sets) != 0)
		return h_finish();
	test_open_close();
	if (VipOpenNic("via0", &nic) != VIP_SUCCESS || VipOpenNic("via0", &other) != VIP_SUCCESS ||
	    VipOpenNic(VIPL_DPDK_NIC_LOOPBACK, &lo) != VIP_SUCCESS) {
		CHECK(0, "open three sessions on viad 'main'");
		viad_stop(&vmain);
		return h_finish();
	}
	test_query_nic(nic);
	test_ptags(nic, other);
	test_register(nic, other);
	test_alloc(nic, other);
	test_cq(nic, other);
	test_vi(nic, other);
	test_dpdk_create_vi(nic);
	test_error_callback(nic);
	test_smi(nic, lo);
	test_return_strings();
	test_name_service(nic, other);
	test_later_calls();
	test_threads(nic);
	test_stale_handle_reuse(nic);
	test_closed_handles();
	CHECK_RET(VipCloseNic(lo), VIP_SUCCESS, "close the /dev/via_lo session");
	CHECK_RET(VipCloseNic(other), VIP_SUCCESS, "close the second session");
	CHECK_RET(VipCloseNic(nic), VIP_SUCCESS, "close the first session");
	viad_stop(&vmain);

	if (viad_start(&vsmall, "small", small_sets) != 0)
		return h_finish();
	if (VipOpenNic("via0", &s1) != VIP_SUCCESS || VipOpenNic("via0", &s2) != VIP_SUCCESS) {
		CHECK(0, "open two sessions on viad 'small'");
		viad_stop(&vsmall);
		return h_finish();
	}
	test_ptag_limit(s1);
	test_region_limit(s1, s2);
	test_alloc_limit(s1);
	test_cq_limit(s1);
	test_vi_limit(s1);
	CHECK_RET(VipCloseNic(s2), VIP_SUCCESS, "close the second session");
	CHECK_RET(VipCloseNic(s1), VIP_SUCCESS, "close the first session");
	test_session_limit(&vsmall);
	viad_stop(&vsmall);

	if (viad_start(&vseg, "ports", seg_sets) != 0)
		return h_finish();
	test_ports_and_segment(&vseg);
	viad_stop(&vseg);
	return h_finish();
}
