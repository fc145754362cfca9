/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Conformance to the VIA 1.0 text (issue 19): the deviations a line-by-line
 * reading of the specification found, one test each, named after what it
 * checks and citing its clause.
 *
 *  nomatch   §4.1, §9.4.4: a request to a VI that is not there ends with an
 *            error (VIP_NO_MATCH) after a short grace, whatever its Timeout,
 *            VIP_INFINITE included; the backlog still lets a request arrive
 *            shortly before VipConnectWait; viad.cm_nomatch_grace_ms sets the
 *            grace.
 *  mtu       §4.1 ("the VI Providers must also agree on the MTU"), §9.10.5
 *            (MaxTransferSize "as output parameter ... the granted Maximum
 *            Transfer Size"): the two ends agree on the smaller, report it
 *            in the attributes returned and in VipQueryVi, and enforce it.
 *  async     §7.1, §9.9.1: an Unreliable VI raises no RECVQ_EMPTY and no
 *            RDMAW_PROT; a refused RDMA Write with immediate data completes
 *            the receive descriptor it consumes, in error.
 *  segs      §6.1.1.1, §10.4: 252 data segments on RDMA descriptors too (the
 *            address segment is not a data segment).
 *  partial   §2.5.1, §10.2 bit 4: an Unreliable message cut short by a lost
 *            frame completes its receive descriptor with the Partial Packet
 *            Error, through a NIC that drops frames.
 *  nak       §10.2, §2.5.2, §2.5.3, §9.9.1: a NAK's status goes to the
 *            operation it answers, not to an unrelated RDMA Read held before
 *            it; RDMAW_PROT when the refused write had completed.
 *  idle      §5.1: errors of an Idle VI that would go to the error handler are
 *            reported when the consumer connects it, not at once.
 *  flushop   §10.2 bits 18:16: descriptors flushed from the send queue carry
 *            the operation they were (RDMA Write, RDMA Read).
 *  rdmaread  §2.5.1, Table 1, §9.3.1, §9.8.2: EnableRdmaRead on an Unreliable
 *            VI is refused with VIP_INVALID_RDMAREAD.
 *  peer      vipl.h VipConnectPeerDone/Wait (Intel VI Developer's Guide):
 *            an attribute conflict returns its own code, not VIP_REJECT.
 *  from      §4.1, §4.3: the standard VipConnectWait accepts requests from one
 *            specific remote VI (the VIP_DPDK_ADDR_FROM convention).
 *
 * viads:
 *  - "conform": the harness defaults (the loopback NIC via0);
 *  - "grace": a grace of 2 s (nomatch);
 *  - "lossy": faulty glue, 10% of the frames dropped (partial);
 *  - "slow": faulty glue, every frame held 300 ms (flushop).
 *
 * Environment: VIA_CONFORM_ONLY (comma separated subset of the names above).
 *
 * Usage: it_conform PATH/TO/viad
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define WAIT_MS     3000u
#define QUIET_MS    300u     /* how long an error that must not come is waited for */
#define CANARY      0xEE
/* a request that gets VIP_NO_MATCH ends within the grace (default 500 ms)
 * plus a retransmission; generous on a loaded 2-CPU machine */
#define NOMATCH_BOUND_MS 4000u
#define GRACE_SET_MS     2000u
#define SLACK_MS         3000u

#define ST_SEND_OK  (VIP_STATUS_DONE | VIP_STATUS_OP_SEND)
#define ST_RECV_OK  (VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE)
#define ST_WRITE_OK (VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_WRITE)
#define ST_READ_OK  (VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_READ)

#define LV_U  VIP_SERVICE_UNRELIABLE
#define LV_RD VIP_SERVICE_RELIABLE_DELIVERY
#define LV_RR VIP_SERVICE_RELIABLE_RECEPTION

/* One session of a viad: its NIC, a tag, memory without RDMA enables (m)
 * and a target region with RDMA Write and Read enabled (t). */
struct nicx {
	VIP_NIC_HANDLE nic;
	VIP_NIC_ATTRIBUTES na;
	VIP_PROTECTION_HANDLE pt;
	uint8_t mac[6];
	struct h_mem m, t;
	bool open;
};

static bool
enabled(const char *what)
{
	const char *only = getenv("VIA_CONFORM_ONLY");
	size_t n = strlen(what);
	const char *p;

	if (only == NULL || *only == '\0')
		return true;
	for (p = only; (p = strstr(p, what)) != NULL; p += n) {
		if ((p == only || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
			return true;
	}
	return false;
}

static const char *
lv_name(VIP_RELIABILITY_LEVEL lv)
{
	return lv == LV_U ? "U" : lv == LV_RD ? "RD" : "RR";
}

/* ---- sessions and VIs --------------------------------------------------------- */

static bool
nic_open(struct nicx *x, const struct viad_proc *v, size_t len)
{
	VIP_MEM_ATTRIBUTES ma;

	memset(x, 0, sizeof(*x));
	viad_use(v);
	if (!CHECK(VipOpenNic("via0", &x->nic) == VIP_SUCCESS &&
		   VipQueryNic(x->nic, &x->na) == VIP_SUCCESS &&
		   VipCreatePtag(x->nic, &x->pt) == VIP_SUCCESS &&
		   VipErrorCallback(x->nic, NULL, h_err_handler) == VIP_SUCCESS,
		   "open via0 of viad '%s'", v->name))
		return false;
	memcpy(x->mac, x->na.LocalNicAddress, 6);
	memset(&ma, 0, sizeof(ma));
	ma.Ptag = x->pt;
	if (!h_mem_open(&x->m, x->nic, &ma, "memory", len, true))
		return false;
	ma.EnableRdmaWrite = VIP_TRUE;
	ma.EnableRdmaRead = x->na.RDMAReadSupport;
	if (!h_mem_open(&x->t, x->nic, &ma, "RDMA target", 1u << 20, true))
		return false;
	x->open = true;
	return true;
}

static void
nic_close(struct nicx *x)
{
	if (x->nic == NULL)
		return;
	h_mem_close(&x->t, x->nic);
	h_mem_close(&x->m, x->nic);
	if (x->pt != NULL)
		VipDestroyPtag(x->nic, x->pt);
	CHECK_RET(VipCloseNic(x->nic), VIP_SUCCESS, "close the session");
	x->nic = NULL;
	x->open = false;
}

static VIP_VI_HANDLE
vi_new(struct nicx *x, VIP_RELIABILITY_LEVEL lv, VIP_ULONG mtu, bool wr, bool rd)
{
	VIP_VI_ATTRIBUTES a;
	VIP_VI_HANDLE vi = NULL;
	VIP_RETURN rc;

	h_vi_attrs(&a, x->pt);
	a.ReliabilityLevel = lv;
	if (mtu != 0)
		a.MaxTransferSize = mtu;
	a.EnableRdmaWrite = wr ? VIP_TRUE : VIP_FALSE;
	a.EnableRdmaRead = rd ? VIP_TRUE : VIP_FALSE;
	rc = VipCreateVi(x->nic, &a, NULL, NULL, &vi);
	if (rc != VIP_SUCCESS) {
		CHECK_RET(rc, VIP_SUCCESS, "create a %s VI (MTU %lu, write %d, read %d)", lv_name(lv),
			  (unsigned long)mtu, wr, rd);
		return NULL;
	}
	return vi;
}

static VIP_ULONG
vi_mtu(VIP_VI_HANDLE vi)
{
	VIP_VI_ATTRIBUTES a;
	VIP_VI_STATE st;
	VIP_BOOLEAN se, re;

	return VipQueryVi(vi, &st, &a, &se, &re) == VIP_SUCCESS ? a.MaxTransferSize : 0;
}

/* Connect @p a (requester) to @p b (acceptor) on @p x, discriminators TAG-c, TAG-s. */
static bool
connect2(struct nicx *x, VIP_VI_HANDLE a, VIP_VI_HANDLE b, const char *tag)
{
	return h_connect(x->nic, a, x->nic, b, tag, 10000);
}

/* ---- descriptors ------------------------------------------------------------- */

static VIP_DESCRIPTOR_SEGMENT *
dseg(VIP_DESCRIPTOR *d, unsigned i)
{
	return (VIP_DESCRIPTOR_SEGMENT *)((uint8_t *)d + sizeof(VIP_CONTROL_SEGMENT) +
					  (size_t)i * sizeof(VIP_DESCRIPTOR_SEGMENT));
}

/* A descriptor of @p nseg segments in @p m, zeroed. */
static VIP_DESCRIPTOR *
desc_new(struct h_mem *m, unsigned nseg)
{
	size_t size = sizeof(VIP_CONTROL_SEGMENT) +
		      (nseg < 2 ? 2 : nseg) * sizeof(VIP_DESCRIPTOR_SEGMENT);
	VIP_DESCRIPTOR *d = h_mem_get(m, size, VIP_DESCRIPTOR_ALIGNMENT);

	memset(d, 0, size);
	d->CS.SegCount = (VIP_UINT16)nseg;
	return d;
}

static void
local_set(VIP_DESCRIPTOR *d, unsigned i, void *addr, VIP_MEM_HANDLE mh, uint32_t len)
{
	VIP_DATA_SEGMENT *ds = &dseg(d, i)->Local;

	ds->Data.AddressBits = 0;
	ds->Data.Address = addr;
	ds->Handle = mh;
	ds->Length = len;
}

/* A send of @p len bytes at @p buf, with immediate data @p imm if @p with_imm. */
static VIP_DESCRIPTOR *
send_new(struct nicx *x, void *buf, uint32_t len, bool with_imm, uint32_t imm)
{
	VIP_DESCRIPTOR *d = desc_new(&x->m, 1);

	local_set(d, 0, buf, x->m.mh, len);
	d->CS.Length = len;
	if (with_imm) {
		d->CS.Control = VIP_CONTROL_IMMEDIATE;
		d->CS.ImmediateData = imm;
	}
	return d;
}

static VIP_DESCRIPTOR *
recv_new(struct nicx *x, uint32_t cap)
{
	VIP_DESCRIPTOR *d = desc_new(&x->m, 1);
	uint8_t *buf = h_mem_get(&x->m, cap ? cap : 1, 64);

	memset(buf, CANARY, cap);
	local_set(d, 0, buf, x->m.mh, cap);
	return d;
}

/* An RDMA descriptor (§10.3): @p control, the address segment, one local segment. */
static VIP_DESCRIPTOR *
rdma_new(struct nicx *x, uint16_t control, const void *raddr, VIP_MEM_HANDLE rh, void *local,
	 uint32_t len)
{
	VIP_DESCRIPTOR *d = desc_new(&x->m, 2);
	VIP_ADDRESS_SEGMENT *as = &dseg(d, 0)->Remote;

	as->Data.AddressBits = 0;
	as->Data.Address = (void *)(uintptr_t)raddr;
	as->Handle = rh;
	local_set(d, 1, local, x->m.mh, len);
	d->CS.Control = control;
	d->CS.Length = len;
	return d;
}

/* The next completion of the queue is @p want with Status @p status. */
static bool
expect_done(VIP_VI_HANDLE vi, bool recv, VIP_DESCRIPTOR *want, uint32_t status, const char *what)
{
	VIP_DESCRIPTOR *out = h_done_wait(vi, recv, WAIT_MS);

	return CHECK(out == want && out->CS.Status == status,
		     "%s: the %s completes with Status %#x (%s, Status %#x)", what,
		     recv ? "receive" : "send", status,
		     out == NULL ? "none" : out == want ? "that descriptor" : "ANOTHER descriptor",
		     out != NULL ? out->CS.Status : 0);
}

static bool
all_bytes(const uint8_t *p, size_t n, uint8_t v)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i] != v)
			return false;
	}
	return true;
}

static void
fill_pattern(uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

static bool
has_pattern(const uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i] != (uint8_t)(seed * 131 + i * 7 + (i >> 8)))
			return false;
	}
	return true;
}

/* ---- a VipConnectRequest on a thread of its own --------------------------------- */

struct req_job {
	pthread_t t;
	VIP_VI_HANDLE vi;
	union h_net_addr local, remote;
	VIP_ULONG timeout;
	VIP_VI_ATTRIBUTES ra;
	VIP_RETURN rc;
	uint64_t ms;
	bool done;
};

static void *
req_main(void *arg)
{
	struct req_job *j = arg;
	uint64_t t0 = h_now_ms();

	j->rc = VipConnectRequest(j->vi, &j->local.a, &j->remote.a, j->timeout, &j->ra);
	j->ms = h_now_ms() - t0;
	__atomic_store_n(&j->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static bool
req_start(struct req_job *j, const struct nicx *x, VIP_VI_HANDLE vi, const char *ldisc,
	  const char *rdisc, VIP_ULONG timeout)
{
	memset(j, 0, sizeof(*j));
	j->vi = vi;
	h_addr(&j->local, x->mac, ldisc);
	h_addr(&j->remote, x->mac, rdisc);
	j->timeout = timeout;
	j->rc = VIP_ERROR_RESOURCE;
	if (pthread_create(&j->t, NULL, req_main, j) != 0)
		return CHECK(0, "start a VipConnectRequest thread");
	return true;
}

/* Wait for the request; one still running after @p ms is ended with
 * VipDisconnect (§5.2), so that no test hangs. @return whether it ended by itself */
static bool
req_join(struct req_job *j, unsigned ms)
{
	uint64_t end = h_now_ms() + ms;
	bool ended;

	while (!__atomic_load_n(&j->done, __ATOMIC_ACQUIRE) && h_now_ms() < end)
		h_sleep_ms(5);
	ended = __atomic_load_n(&j->done, __ATOMIC_ACQUIRE);
	if (!ended)
		VipDisconnect(j->vi);
	pthread_join(j->t, NULL);
	return ended;
}

/* ---- nomatch: §4.1, §9.4.4 -------------------------------------------------------- */

/*
 * §4.1: "If the specified remote VI does not exist, is not reachable, is in
 * the wrong state, or its discriminator doesn't match, then the VI Provider
 * will return an error to the VI Consumer's request."
 */
static void
test_nomatch(const struct viad_proc *v)
{
	struct nicx x;
	VIP_VI_HANDLE c = NULL, s = NULL;
	union h_net_addr l, r;
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;
	struct req_job j;
	VIP_RETURN rc;
	bool ended;

	h_note("nomatch: a request to a discriminator nobody waits on fails (§4.1, §9.4.4)");
	if (!nic_open(&x, v, 1u << 20))
		goto out;
	c = vi_new(&x, LV_U, 0, false, false);
	s = vi_new(&x, LV_U, 0, false, false);
	if (c == NULL || s == NULL)
		goto out;
	if (req_start(&j, &x, c, "nm-c", "nm-nobody", VIP_INFINITE)) {
		ended = req_join(&j, NOMATCH_BOUND_MS);
		CHECK(ended && j.rc == VIP_NO_MATCH,
		      "Timeout VIP_INFINITE: VIP_NO_MATCH after the grace (%s, %s, %llu ms)",
		      ended ? "returned" : "still waiting: ended by VipDisconnect",
		      VipDpdkReturnString(j.rc), (unsigned long long)j.ms);
		CHECK(h_vi_state(c) == VIP_STATE_IDLE, "the VI is Idle again (§5.2)");
	}
	if (req_start(&j, &x, c, "nm-c", "nm-nobody", 10000)) {
		ended = req_join(&j, 12000);
		CHECK(ended && j.rc == VIP_NO_MATCH && j.ms < NOMATCH_BOUND_MS,
		      "Timeout 10000 ms: VIP_NO_MATCH after the grace, not the Timeout (%s, %llu ms)",
		      VipDpdkReturnString(j.rc), (unsigned long long)j.ms);
	}
	/* the backlog stays: a request may arrive shortly before the wait */
	if (req_start(&j, &x, c, "nm-early-c", "nm-early-s", 10000)) {
		h_sleep_ms(100);
		rc = VipConnectWait(x.nic, h_addr(&l, x.mac, "nm-early-s"), 0, &r.a, &ra, &conn);
		CHECK_RET(rc, VIP_SUCCESS, "VipConnectWait 100 ms after the request finds it (backlog)");
		if (rc == VIP_SUCCESS)
			CHECK_RET(VipConnectAccept(conn, s), VIP_SUCCESS, "and accepts it");
		req_join(&j, 12000);
		CHECK_RET(j.rc, VIP_SUCCESS, "the early request is connected");
	}
out:
	h_pair_drop(c, s);
	nic_close(&x);
}

/* The grace is viad.cm_nomatch_grace_ms (docs/design.md, section 8). */
static void
test_nomatch_grace(void)
{
	char set[64];
	const char *sets[] = { set, NULL };
	struct viad_proc v;
	struct nicx x;
	VIP_VI_HANDLE c = NULL, s = NULL;
	union h_net_addr l, r;
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;
	struct req_job j;
	VIP_RETURN rc;
	bool ended;

	h_note("nomatch: viad.cm_nomatch_grace_ms=%u", GRACE_SET_MS);
	snprintf(set, sizeof(set), "viad.cm_nomatch_grace_ms=%u", GRACE_SET_MS);
	if (viad_start(&v, "grace", sets) != 0)
		return;
	if (!nic_open(&x, &v, 1u << 20))
		goto out;
	c = vi_new(&x, LV_U, 0, false, false);
	s = vi_new(&x, LV_U, 0, false, false);
	if (c == NULL || s == NULL)
		goto out;
	if (req_start(&j, &x, c, "g-c", "g-nobody", VIP_INFINITE)) {
		ended = req_join(&j, GRACE_SET_MS + SLACK_MS + 2000);
		CHECK(ended && j.rc == VIP_NO_MATCH && j.ms >= GRACE_SET_MS &&
		      j.ms < GRACE_SET_MS + SLACK_MS,
		      "VIP_NO_MATCH after the configured grace of %u ms (%s, %llu ms)", GRACE_SET_MS,
		      VipDpdkReturnString(j.rc), (unsigned long long)j.ms);
	}
	if (req_start(&j, &x, c, "g-early-c", "g-early-s", 10000)) {
		h_sleep_ms(GRACE_SET_MS / 2);
		rc = VipConnectWait(x.nic, h_addr(&l, x.mac, "g-early-s"), 0, &r.a, &ra, &conn);
		CHECK_RET(rc, VIP_SUCCESS, "a VipConnectWait %u ms after the request finds it",
			  GRACE_SET_MS / 2);
		if (rc == VIP_SUCCESS)
			VipConnectAccept(conn, s);
		req_join(&j, 12000);
		CHECK_RET(j.rc, VIP_SUCCESS, "the request is connected");
	}
out:
	h_pair_drop(c, s);
	nic_close(&x);
	viad_stop(&v);
}

/* ---- mtu: §4.1, §9.10.5 ----------------------------------------------------------- */

static void
test_mtu(const struct viad_proc *v)
{
	struct nicx x;
	VIP_VI_HANDLE a = NULL, b = NULL, p = NULL, q = NULL;
	VIP_VI_ATTRIBUTES ra_p, ra_q;
	union h_net_addr l, r, lp, lq;
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;
	VIP_DESCRIPTOR *sd, *rd;
	uint8_t *buf;
	struct req_job j;
	VIP_RETURN rc, pp, pq;

	h_note("mtu: the ends agree on the smaller MaxTransferSize (§4.1, §9.10.5)");
	if (!nic_open(&x, v, 4u << 20))
		goto out;
	a = vi_new(&x, LV_U, 32768, false, false);
	b = vi_new(&x, LV_U, 16384, false, false);
	if (a == NULL || b == NULL || !req_start(&j, &x, a, "mtu-c", "mtu-s", 10000))
		goto out;
	rc = VipConnectWait(x.nic, h_addr(&l, x.mac, "mtu-s"), 5000, &r.a, &ra, &conn);
	CHECK(rc == VIP_SUCCESS && ra.MaxTransferSize == 32768,
	      "VipConnectWait: the requester asks for 32768 (%s, %lu)", VipDpdkReturnString(rc),
	      (unsigned long)ra.MaxTransferSize);
	if (rc == VIP_SUCCESS) {
		rc = VipConnectAccept(conn, b);
		CHECK_RET(rc, VIP_SUCCESS, "VipConnectAccept with a VI of 16384: not a conflict, the "
			  "smaller is granted");
		if (rc != VIP_SUCCESS)
			VipConnectReject(conn);
	}
	req_join(&j, 12000);
	CHECK_RET(j.rc, VIP_SUCCESS, "the request is connected");
	if (j.rc != VIP_SUCCESS)
		goto out;
	CHECK(j.ra.MaxTransferSize == 16384,
	      "the requester's RemoteViAttribs say the granted 16384 (%lu)",
	      (unsigned long)j.ra.MaxTransferSize);
	CHECK(vi_mtu(a) == 16384 && vi_mtu(b) == 16384,
	      "VipQueryVi of both ends: MaxTransferSize 16384, granted (%lu, %lu)",
	      (unsigned long)vi_mtu(a), (unsigned long)vi_mtu(b));
	/* §10.2 bit 3: more than the connection's MTU is a length error */
	buf = h_mem_get(&x.m, 32768, 64);
	rd = recv_new(&x, 32768);
	VipPostRecv(b, rd, x.m.mh);
	sd = send_new(&x, buf, 16385, false, 0);
	VipPostSend(a, sd, x.m.mh);
	expect_done(a, false, sd, VIP_STATUS_DONE | VIP_STATUS_LENGTH_ERROR | VIP_STATUS_OP_SEND,
		    "a send of 16385 bytes (more than granted)");
	fill_pattern(buf, 16384, 7);
	sd = send_new(&x, buf, 16384, false, 0);
	VipPostSend(a, sd, x.m.mh);
	expect_done(a, false, sd, ST_SEND_OK, "a send of 16384 bytes");
	if (expect_done(b, true, rd, ST_RECV_OK, "16384 bytes"))
		CHECK(rd->CS.Length == 16384 && has_pattern(dseg(rd, 0)->Local.Data.Address, 16384, 7),
		      "they arrive whole (Length %u)", rd->CS.Length);
	h_pair_drain(a, b);
	CHECK(vi_mtu(a) == 32768 && vi_mtu(b) == 16384,
	      "disconnected, each VI has its own requested size again (%lu, %lu)",
	      (unsigned long)vi_mtu(a), (unsigned long)vi_mtu(b));

	/* the peer path agrees the same way */
	p = vi_new(&x, LV_U, 32768, false, false);
	q = vi_new(&x, LV_U, 8192, false, false);
	if (p == NULL || q == NULL)
		goto out;
	h_addr(&lp, x.mac, "mtu-p");
	h_addr(&lq, x.mac, "mtu-q");
	pp = VipConnectPeerRequest(p, &lp.a, &lq.a, 10000);
	pq = VipConnectPeerRequest(q, &lq.a, &lp.a, 10000);
	if (pp == VIP_SUCCESS)
		pp = VipConnectPeerWait(p, &ra_p);
	if (pq == VIP_SUCCESS)
		pq = VipConnectPeerWait(q, &ra_q);
	CHECK(pp == VIP_SUCCESS && pq == VIP_SUCCESS,
	      "peer-to-peer, 32768 and 8192: connected (%s, %s)", VipDpdkReturnString(pp),
	      VipDpdkReturnString(pq));
	if (pp == VIP_SUCCESS && pq == VIP_SUCCESS)
		CHECK(ra_p.MaxTransferSize == 8192 && ra_q.MaxTransferSize == 8192 &&
		      vi_mtu(p) == 8192 && vi_mtu(q) == 8192,
		      "VipConnectPeerWait and VipQueryVi say 8192 at both ends (%lu %lu %lu %lu)",
		      (unsigned long)ra_p.MaxTransferSize, (unsigned long)ra_q.MaxTransferSize,
		      (unsigned long)vi_mtu(p), (unsigned long)vi_mtu(q));
out:
	h_pair_drop(p, q);
	h_pair_drop(a, b);
	nic_close(&x);
}

/* ---- async: §7.1, §9.9.1 ---------------------------------------------------------- */

/*
 * §7.1: "The asynchronous error handling mechanism for Unreliable
 * Connections is only invoked in the case of a catastrophic hardware error."
 * §9.9.1: for an RDMA Write with immediate data, a protection error "would be
 * reported in the associated Descriptor, and not via the asynchronous error
 * mechanism".
 */
static void
test_async(const struct viad_proc *v)
{
	struct nicx x;
	VIP_VI_HANDLE a = NULL, b = NULL;
	VIP_DESCRIPTOR *sd, *rd, *d;
	uint8_t *src, *tgt;

	h_note("async: Unreliable VIs raise no RECVQ_EMPTY or RDMAW_PROT (§7.1, §9.9.1)");
	if (!nic_open(&x, v, 4u << 20))
		goto out;
	a = vi_new(&x, LV_U, 0, false, false);
	b = vi_new(&x, LV_U, 0, true, false);
	if (!connect2(&x, a, b, "async"))
		goto out;
	h_err_clear();
	src = h_mem_get(&x.m, 4096, 64);
	fill_pattern(src, 4096, 3);

	sd = send_new(&x, src, 100, true, 1);
	VipPostSend(a, sd, x.m.mh);
	expect_done(a, false, sd, ST_SEND_OK, "a send while no receive is posted");
	h_sleep_ms(QUIET_MS);
	CHECK(h_err_count(VIP_ERROR_RECVQ_EMPTY, NULL) == 0,
	      "no VIP_ERROR_RECVQ_EMPTY: the message is lost, as Unreliable Delivery may (%u)",
	      h_err_count(VIP_ERROR_RECVQ_EMPTY, NULL));
	rd = recv_new(&x, 200);
	VipPostRecv(b, rd, x.m.mh);
	sd = send_new(&x, src, 100, true, 2);
	VipPostSend(a, sd, x.m.mh);
	if (expect_done(b, true, rd, ST_RECV_OK | VIP_STATUS_IMMEDIATE, "the next message"))
		CHECK(rd->CS.ImmediateData == 2, "is the next one, not the lost one (imm %u)",
		      rd->CS.ImmediateData);
	h_done_wait(a, false, WAIT_MS);

	/* into memory registered without RDMA Write: refused at the target */
	tgt = h_mem_get(&x.m, 8192, 64);
	memset(tgt, CANARY, 8192);
	d = rdma_new(&x, VIP_CONTROL_OP_RDMAWRITE, tgt, x.m.mh, src, 3000);
	VipPostSend(a, d, x.m.mh);
	expect_done(a, false, d, ST_WRITE_OK, "a refused RDMA Write (in flight, §2.5.1)");
	h_sleep_ms(QUIET_MS);
	CHECK(h_err_count(VIP_ERROR_RDMAW_PROT, NULL) == 0,
	      "no VIP_ERROR_RDMAW_PROT on an Unreliable VI (%u)",
	      h_err_count(VIP_ERROR_RDMAW_PROT, NULL));
	CHECK(all_bytes(tgt, 8192, CANARY), "nothing written");

	rd = recv_new(&x, 64);
	VipPostRecv(b, rd, x.m.mh);
	d = rdma_new(&x, VIP_CONTROL_OP_RDMAWRITE | VIP_CONTROL_IMMEDIATE, tgt, x.m.mh, src, 3000);
	d->CS.ImmediateData = 0xabc;
	VipPostSend(a, d, x.m.mh);
	expect_done(a, false, d, ST_WRITE_OK, "a refused RDMA Write with immediate data");
	if (expect_done(b, true, rd,
			VIP_STATUS_DONE | VIP_STATUS_PROTECTION_ERROR |
				VIP_STATUS_OP_REMOTE_RDMA_WRITE | VIP_STATUS_IMMEDIATE,
			"it consumes the receive descriptor and completes it in error"))
		CHECK(rd->CS.ImmediateData == 0xabc, "with its immediate data (%#x)",
		      rd->CS.ImmediateData);
	h_sleep_ms(QUIET_MS);
	CHECK(h_err_count(VIP_ERROR_RDMAW_PROT, NULL) == 0 && all_bytes(tgt, 8192, CANARY),
	      "not reported asynchronously, nothing written");

	d = rdma_new(&x, VIP_CONTROL_OP_RDMAWRITE | VIP_CONTROL_IMMEDIATE, tgt, x.m.mh, src, 100);
	VipPostSend(a, d, x.m.mh);
	expect_done(a, false, d, ST_WRITE_OK, "a refused RDMA Write with immediate data, no receive");
	h_sleep_ms(QUIET_MS);
	CHECK(h_err_count(VIP_ERROR_RDMAW_PROT, NULL) + h_err_count(VIP_ERROR_RECVQ_EMPTY, NULL) == 0,
	      "no asynchronous error either");
	CHECK(h_vi_state(a) == VIP_STATE_CONNECTED && h_vi_state(b) == VIP_STATE_CONNECTED &&
	      h_err_count(VIP_ERROR_CONN_LOST, a) + h_err_count(VIP_ERROR_CONN_LOST, b) == 0,
	      "both stay Connected (§2.5.1)");
out:
	h_pair_drop(a, b);
	nic_close(&x);
}

/* ---- segs: §6.1.1.1, §10.4 -------------------------------------------------------- */

/*
 * An RDMA descriptor of @p nseg data segments of 8 bytes each behind its
 * address segment (§10.2: SegCount counts the address segment too).
 */
static VIP_DESCRIPTOR *
rdma_segs(struct nicx *x, uint16_t control, void *raddr, VIP_MEM_HANDLE rh, uint8_t *local,
	  unsigned nseg)
{
	VIP_DESCRIPTOR *d = desc_new(&x->m, nseg + 1);
	VIP_ADDRESS_SEGMENT *as = &dseg(d, 0)->Remote;
	unsigned i;

	as->Data.AddressBits = 0;
	as->Data.Address = raddr;
	as->Handle = rh;
	for (i = 0; i < nseg; i++)
		local_set(d, i + 1, local + 16 * i, x->m.mh, 8);
	d->CS.Control = control;
	d->CS.Length = 8 * nseg;
	return d;
}

static void
test_segs(const struct viad_proc *v)
{
	struct nicx x;
	VIP_VI_HANDLE a = NULL, b = NULL, c = NULL, e = NULL;
	VIP_DESCRIPTOR *d;
	uint8_t *local, *tgt;
	unsigned max, i;
	bool same = true;

	h_note("segs: RDMA descriptors carry MaxSegmentsPerDesc data segments (§6.1.1.1, §10.4)");
	if (!nic_open(&x, v, 4u << 20))
		goto out;
	max = (unsigned)x.na.MaxSegmentsPerDesc;
	CHECK(max >= 252, "MaxSegmentsPerDesc %u >= 252", max);
	a = vi_new(&x, LV_U, 0, false, false);
	b = vi_new(&x, LV_U, 0, true, false);
	if (!connect2(&x, a, b, "segs"))
		goto out;
	local = h_mem_get(&x.m, 16 * (max + 1), 64);
	fill_pattern(local, 16 * (max + 1), 11);
	tgt = x.t.base;
	memset(tgt, CANARY, 8 * (max + 2));
	d = rdma_segs(&x, VIP_CONTROL_OP_RDMAWRITE, tgt, x.t.mh, local, max);
	VipPostSend(a, d, x.m.mh);
	expect_done(a, false, d, ST_WRITE_OK, "an RDMA Write of 1 address + MaxSegmentsPerDesc data "
		    "segments");
	h_sleep_ms(50);
	for (i = 0; i < max; i++)
		same &= memcmp(tgt + 8 * i, local + 16 * i, 8) == 0;
	CHECK(same && tgt[8 * max] == CANARY, "all %u segments gathered into the target", max);
	d = rdma_segs(&x, VIP_CONTROL_OP_RDMAWRITE, tgt, x.t.mh, local, max + 1);
	VipPostSend(a, d, x.m.mh);
	expect_done(a, false, d, VIP_STATUS_DONE | VIP_STATUS_FORMAT_ERROR | VIP_STATUS_OP_RDMA_WRITE,
		    "one data segment more: a format error (§10.2 bit 1)");
	if (!x.na.RDMAReadSupport)
		goto out;
	c = vi_new(&x, LV_RD, 0, false, false);
	e = vi_new(&x, LV_RD, 0, true, true);
	if (!connect2(&x, c, e, "segs-rd"))
		goto out;
	memset(local, CANARY, 16 * (max + 1));
	d = rdma_segs(&x, VIP_CONTROL_OP_RDMAREAD, tgt, x.t.mh, local, max);
	VipPostSend(c, d, x.m.mh);
	if (expect_done(c, false, d, ST_READ_OK, "an RDMA Read scattering into MaxSegmentsPerDesc "
			"data segments")) {
		for (same = true, i = 0; i < max; i++)
			same &= memcmp(tgt + 8 * i, local + 16 * i, 8) == 0 &&
				all_bytes(local + 16 * i + 8, 8, CANARY);
		CHECK(same, "all %u segments filled", max);
	}
out:
	h_pair_drop(c, e);
	h_pair_drop(a, b);
	nic_close(&x);
}

/* ---- partial: §2.5.1, §10.2 bit 4 --------------------------------------------------- */

#define PARTIAL_MSGS  48
#define PARTIAL_TAILS 8

/*
 * §10.2 bit 4, Partial Packet Error: "For Descriptors posted to the receive
 * queue, this bit indicates an aborted or truncated packet was received."
 * A message of several frames, one lost, is such a packet on an Unreliable
 * VI (§2.5.1: losses are allowed, and a message consumes at most one
 * descriptor).
 */
static void
test_partial(void)
{
	const char *sets[] = { "port.via0.glue=faulty", "port.via0.tx_drop=10%",
			       "port.via0.seed=19", NULL };
	struct viad_proc v;
	struct nicx x;
	VIP_VI_HANDLE a = NULL, b = NULL;
	VIP_DESCRIPTOR *rd[PARTIAL_MSGS + PARTIAL_TAILS], *sd, *out;
	unsigned i, ok = 0, partial = 0, bad = 0, bad_data = 0, twice = 0;
	bool seen[PARTIAL_MSGS + PARTIAL_TAILS] = { false };
	uint32_t mtu;
	uint8_t *src;

	h_note("partial: a message cut short by a lost frame completes with PARTIAL_ERROR "
	       "(§2.5.1, §10.2 bit 4), 10%% of frames dropped");
	if (viad_start(&v, "lossy", sets) != 0)
		return;
	if (!nic_open(&x, &v, 16u << 20))
		goto out;
	mtu = (uint32_t)x.na.MaxTransferSize;
	h_note("messages of %u bytes (several frames each)", mtu);
	a = vi_new(&x, LV_U, mtu, false, false);
	b = vi_new(&x, LV_U, mtu, false, false);
	if (!connect2(&x, a, b, "partial"))
		goto out;
	for (i = 0; i < PARTIAL_MSGS + PARTIAL_TAILS; i++) {
		rd[i] = recv_new(&x, mtu);
		VipPostRecv(b, rd[i], x.m.mh);
	}
	src = h_mem_get(&x.m, mtu, 64);
	for (i = 0; i < PARTIAL_MSGS + PARTIAL_TAILS; i++) {
		/* the last few are one frame each: a new message ends the one
		 * whose last frames were lost */
		uint32_t len = i < PARTIAL_MSGS ? mtu : 64;

		fill_pattern(src, len, i);
		sd = send_new(&x, src, len, true, i);
		VipPostSend(a, sd, x.m.mh);
		if (h_done_wait(a, false, WAIT_MS) != sd)
			CHECK(0, "send %u completes", i);
		h_sleep_ms(2);
	}
	while ((out = h_done_wait(b, true, 500)) != NULL) {
		uint32_t st = out->CS.Status, imm = out->CS.ImmediateData;

		if (st == (VIP_STATUS_DONE | VIP_STATUS_PARTIAL_ERROR | VIP_STATUS_OP_RECEIVE |
			   VIP_STATUS_IMMEDIATE) && imm < PARTIAL_MSGS) {
			/* §10.2 bit 19: the immediate data came with every frame */
			twice += seen[imm];
			seen[imm] = true;
			partial++;
		} else if (st == (ST_RECV_OK | VIP_STATUS_IMMEDIATE) &&
			   imm < PARTIAL_MSGS + PARTIAL_TAILS) {
			uint32_t len = imm < PARTIAL_MSGS ? mtu : 64;

			twice += seen[imm];
			seen[imm] = true;
			bad_data += out->CS.Length != len ||
				    !has_pattern(dseg(out, 0)->Local.Data.Address, len, imm);
			ok++;
		} else {
			if (bad++ < 4)
				h_note("receive completed with Status %#x, imm %u", st, imm);
		}
	}
	h_note("%u of %u messages whole, %u partial", ok, PARTIAL_MSGS + PARTIAL_TAILS, partial);
	CHECK(partial > 0, "messages cut short complete their descriptor with "
	      "VIP_STATUS_PARTIAL_ERROR (%u)", partial);
	CHECK(bad == 0, "every receive completes whole or partial (%u otherwise)", bad);
	CHECK(bad_data == 0 && twice == 0, "the whole ones are intact, and no message took two "
	      "descriptors (%u bad, %u twice)", bad_data, twice);
	CHECK(h_vi_state(a) == VIP_STATE_CONNECTED && h_vi_state(b) == VIP_STATE_CONNECTED &&
	      h_err_count(VIP_ERROR_CONN_LOST, a) + h_err_count(VIP_ERROR_CONN_LOST, b) +
	      h_err_count(VIP_ERROR_RECVQ_EMPTY, NULL) == 0,
	      "the connection stays, no asynchronous error (§2.5.1, §7.1)");
out:
	h_pair_drop(a, b);
	nic_close(&x);
	viad_stop(&v);
}

/* ---- nak: §10.2, §2.5.2, §2.5.3 ----------------------------------------------------- */

#define NAK_READS 15    /* VIA_MAX_READS - 1: the 16th may be the refused one */

enum nak_kind { NAK_WRITE, NAK_SEND, NAK_READ };

static const char *const nak_names[] = {
	[NAK_WRITE] = "RDMA Write into memory without RDMA Write",
	[NAK_SEND] = "Send with no receive posted",
	[NAK_READ] = "RDMA Read of memory without RDMA Read",
};

/*
 * RDMA Reads are posted, then an operation the target refuses: its NAK
 * answers that operation, whatever reads still wait for their answer when
 * it arrives. A read completes whole (answered before the break), with
 * TRANSPORT_ERROR (§10.2 bit 6: valid on RDMA Read descriptors on the
 * reliable levels) or flushed (bit 5); never with the refusal's bits - on
 * Reliable Delivery REMOTE_DESC_ERROR is never valid (§10.2 bit 8).
 */
static void
nak_case(struct nicx *x, VIP_RELIABILITY_LEVEL lv, enum nak_kind kind)
{
	VIP_VI_HANDLE a = vi_new(x, lv, 0, false, false), b = vi_new(x, lv, 0, true, true);
	VIP_DESCRIPTOR *rd[NAK_READS], *op, *out;
	uint8_t *src, *tgt;
	char what[128];
	uint32_t want;
	unsigned i, bad = 0, answered = 0;
	struct h_err_event ev;

	snprintf(what, sizeof(what), "%s: %u RDMA Reads, then a refused %s", lv_name(lv), NAK_READS,
		 nak_names[kind]);
	h_mem_reset(&x->m);
	if (!connect2(x, a, b, kind == NAK_WRITE ? "nak-w" : kind == NAK_SEND ? "nak-s" : "nak-r"))
		goto out;
	h_err_clear();
	src = h_mem_get(&x->m, 256, 64);
	tgt = h_mem_get(&x->m, 256, 64);
	for (i = 0; i < NAK_READS; i++)
		rd[i] = rdma_new(x, VIP_CONTROL_OP_RDMAREAD, x->t.base + 64 * i, x->t.mh,
				 h_mem_get(&x->m, 64, 64), 64);
	op = kind == NAK_WRITE ? rdma_new(x, VIP_CONTROL_OP_RDMAWRITE, tgt, x->m.mh, src, 100)
	     : kind == NAK_SEND ? send_new(x, src, 100, false, 0)
				: rdma_new(x, VIP_CONTROL_OP_RDMAREAD, tgt, x->m.mh, src, 100);
	for (i = 0; i < NAK_READS; i++)
		VipPostSend(a, rd[i], x->m.mh);
	VipPostSend(a, op, x->m.mh);
	for (i = 0; i < NAK_READS; i++) {
		uint32_t st;

		out = h_done_wait(a, false, WAIT_MS);
		if (out != rd[i]) {
			CHECK(0, "%s: read %u completes in its turn", what, i);
			goto out;
		}
		st = out->CS.Status;
		answered += st == ST_READ_OK;
		if (st != ST_READ_OK && st != (ST_READ_OK | VIP_STATUS_TRANSPORT_ERROR) &&
		    st != (ST_READ_OK | VIP_STATUS_DESC_FLUSHED_ERROR) && bad++ == 0)
			h_note("%s: read %u completed with Status %#x", what, i, st);
	}
	CHECK(bad == 0, "%s: the reads complete whole (%u), with TRANSPORT_ERROR or flushed, none "
	      "with the refusal's bits (%u do)", what, answered, bad);
	if (kind == NAK_READ)
		want = VIP_STATUS_DONE | VIP_STATUS_RDMA_PROT_ERROR | VIP_STATUS_OP_RDMA_READ;
	else if (lv == LV_RR && kind == NAK_WRITE)
		want = VIP_STATUS_DONE | VIP_STATUS_RDMA_PROT_ERROR | VIP_STATUS_OP_RDMA_WRITE;
	else if (lv == LV_RR)
		want = VIP_STATUS_DONE | VIP_STATUS_REMOTE_DESC_ERROR | VIP_STATUS_OP_SEND;
	else
		want = kind == NAK_WRITE ? ST_WRITE_OK : ST_SEND_OK; /* in flight (§2.5.2) */
	out = h_done_wait(a, false, WAIT_MS);
	CHECK(out == op && out->CS.Status == want,
	      "%s: the refused operation carries its own outcome (Status %#x, want %#x)", what,
	      out == op ? out->CS.Status : 0, want);
	if (lv == LV_RD && kind == NAK_WRITE)
		CHECK(h_err_take(VIP_ERROR_RDMAW_PROT, a, WAIT_MS, &ev) &&
		      ev.op == VIP_STATUS_OP_RDMA_WRITE,
		      "%s: the write had completed: VIP_ERROR_RDMAW_PROT (§9.9.1)", what);
	else
		CHECK(h_err_count(VIP_ERROR_RDMAW_PROT, a) == 0,
		      "%s: no VIP_ERROR_RDMAW_PROT (reported in a descriptor, or not a write)", what);
	CHECK(h_state_wait(a, VIP_STATE_ERROR, WAIT_MS) == VIP_STATE_ERROR &&
	      h_state_wait(b, VIP_STATE_ERROR, WAIT_MS) == VIP_STATE_ERROR,
	      "%s: the connection broke (§2.5.2, §2.5.3)", what);
out:
	h_pair_drop(a, b);
}

static void
test_nak(const struct viad_proc *v)
{
	struct nicx x;

	h_note("nak: a NAK's status goes to the operation it answers (§10.2, §2.5.2, §2.5.3)");
	if (!nic_open(&x, v, 4u << 20))
		goto out;
	if (!x.na.RDMAReadSupport) {
		h_note("the NIC has no RDMA Read: nothing to test");
		goto out;
	}
	nak_case(&x, LV_RD, NAK_WRITE);
	nak_case(&x, LV_RD, NAK_SEND);
	nak_case(&x, LV_RD, NAK_READ);
	nak_case(&x, LV_RR, NAK_WRITE);
	nak_case(&x, LV_RR, NAK_SEND);
	nak_case(&x, LV_RR, NAK_READ);
out:
	nic_close(&x);
}

/* ---- idle: §5.1 ------------------------------------------------------------------ */

#define BOGUS_HANDLE 0xfffffff0u   /* names no region */

/*
 * §5.1: "Errors that occur while a VI is in the Idle state, which would
 * normally result in the invocation of the asynchronous error handling
 * mechanism, are reported when the VI Consumer attempts to connect the VI."
 */
static void
test_idle(const struct viad_proc *v)
{
	struct nicx x;
	VIP_VI_HANDLE a = NULL, b = NULL;
	VIP_DESCRIPTOR *sd, *rd, *out;
	struct h_err_event e1, e2;
	bool got1, got2;

	h_note("idle: an Idle VI's errors are reported when it is connected (§5.1)");
	if (!nic_open(&x, v, 1u << 20))
		goto out;
	a = vi_new(&x, LV_U, 0, false, false);
	b = vi_new(&x, LV_U, 0, false, false);
	if (a == NULL || b == NULL)
		goto out;
	h_err_clear();
	/* descriptors in no registered region: POST_DESC (§9.9.1) */
	sd = send_new(&x, h_mem_get(&x.m, 64, 64), 64, false, 0);
	CHECK_RET(VipPostSend(a, sd, BOGUS_HANDLE), VIP_SUCCESS, "post a send with a bad memory "
		  "handle while Idle");
	out = h_done_wait(a, false, WAIT_MS);
	CHECK(out == sd && (out->CS.Status & VIP_STATUS_ERROR_MASK),
	      "it completes in error (Status %#x)", out != NULL ? out->CS.Status : 0);
	rd = recv_new(&x, 64);
	CHECK_RET(VipPostRecv(a, rd, BOGUS_HANDLE), VIP_SUCCESS,
		  "post a receive with a bad memory handle while Idle");
	CHECK_RET(VipDisconnect(a), VIP_SUCCESS, "VipDisconnect of the Idle VI flushes it");
	out = h_done_wait(a, true, WAIT_MS);
	CHECK(out == rd && (out->CS.Status & VIP_STATUS_ERROR_MASK),
	      "the receive completes in error (Status %#x)", out != NULL ? out->CS.Status : 0);
	h_sleep_ms(QUIET_MS);
	CHECK(h_err_count(VIP_ERROR_POST_DESC, a) == 0,
	      "no VIP_ERROR_POST_DESC while the VI is Idle (%u)", h_err_count(VIP_ERROR_POST_DESC, a));
	if (!connect2(&x, a, b, "idle"))
		goto out;
	got1 = h_err_take(VIP_ERROR_POST_DESC, a, WAIT_MS, &e1);
	got2 = h_err_take(VIP_ERROR_POST_DESC, a, WAIT_MS, &e2);
	CHECK(got1 && got2 && e1.desc == sd && e2.desc == rd,
	      "connecting the VI reports both, in order (%s %p, %s %p)", got1 ? "got" : "none",
	      got1 ? (void *)e1.desc : NULL, got2 ? "got" : "none", got2 ? (void *)e2.desc : NULL);
out:
	h_pair_drop(a, b);
	nic_close(&x);
}

/* ---- flushop: §10.2 bits 18:16 ------------------------------------------------------ */

static void
test_flushop(void)
{
	const char *sets[] = { "port.via0.glue=faulty", "port.via0.tx_delay=100%",
			       "port.via0.delay_us=300000", NULL };
	struct viad_proc v;
	struct nicx x;
	VIP_VI_HANDLE a = NULL, b = NULL;
	VIP_DESCRIPTOR *r1, *w, *r2, *s;
	uint8_t *dst, *src;

	h_note("flushop: flushed RDMA descriptors say their operation (§10.2 bits 18:16)");
	if (viad_start(&v, "slow", sets) != 0)
		return;
	if (!nic_open(&x, &v, 1u << 20))
		goto out;
	if (!x.na.RDMAReadSupport) {
		h_note("the NIC has no RDMA Read: nothing to test");
		goto out;
	}
	a = vi_new(&x, LV_RD, 0, false, false);
	b = vi_new(&x, LV_RD, 0, true, true);
	if (!connect2(&x, a, b, "flush"))
		goto out;
	dst = h_mem_get(&x.m, 256, 64);
	src = h_mem_get(&x.m, 256, 64);
	/* the fence (§6.3.1.2) keeps the next three in the send queue while
	 * the read waits 600 ms for its answer */
	r1 = rdma_new(&x, VIP_CONTROL_OP_RDMAREAD, x.t.base, x.t.mh, dst, 100);
	w = rdma_new(&x, VIP_CONTROL_OP_RDMAWRITE | VIP_CONTROL_QFENCE, x.t.base + 1024, x.t.mh, src,
		     100);
	r2 = rdma_new(&x, VIP_CONTROL_OP_RDMAREAD | VIP_CONTROL_QFENCE, x.t.base, x.t.mh, dst, 100);
	s = send_new(&x, src, 10, false, 0);
	VipPostSend(a, r1, x.m.mh);
	VipPostSend(a, w, x.m.mh);
	VipPostSend(a, r2, x.m.mh);
	VipPostSend(a, s, x.m.mh);
	h_sleep_ms(20);
	CHECK_RET(VipDisconnect(a), VIP_SUCCESS, "VipDisconnect while the read is outstanding");
	expect_done(a, false, r1, VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR |
		    VIP_STATUS_OP_RDMA_READ, "the outstanding RDMA Read");
	expect_done(a, false, w, VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR |
		    VIP_STATUS_OP_RDMA_WRITE, "a flushed RDMA Write");
	expect_done(a, false, r2, VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR |
		    VIP_STATUS_OP_RDMA_READ, "a flushed RDMA Read");
	expect_done(a, false, s, VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR | VIP_STATUS_OP_SEND,
		    "a flushed Send");
out:
	h_pair_drop(a, b);
	nic_close(&x);
	viad_stop(&v);
}

/* ---- rdmaread: Table 1, §9.3.1, §9.8.2 ------------------------------------------------ */

static void
test_rdmaread(const struct viad_proc *v)
{
	struct nicx x;
	VIP_VI_ATTRIBUTES a;
	VIP_VI_HANDLE vi = NULL, rel = NULL;

	h_note("rdmaread: no RDMA Read on an Unreliable VI (§2.5.1, Table 1)");
	if (!nic_open(&x, v, 1u << 20))
		goto out;
	h_vi_attrs(&a, x.pt);
	a.EnableRdmaRead = VIP_TRUE;
	CHECK_RET(VipCreateVi(x.nic, &a, NULL, NULL, &vi), VIP_INVALID_RDMAREAD,
		  "VipCreateVi: Unreliable with EnableRdmaRead");
	if (vi != NULL)
		VipDestroyVi(vi);
	vi = vi_new(&x, LV_U, 0, false, false);
	if (vi != NULL)
		CHECK_RET(VipSetViAttributes(vi, &a), VIP_INVALID_RDMAREAD,
			  "VipSetViAttributes: EnableRdmaRead on an Unreliable VI");
	if (x.na.RDMAReadSupport) {
		a.ReliabilityLevel = LV_RD;
		CHECK_RET(VipCreateVi(x.nic, &a, NULL, NULL, &rel), VIP_SUCCESS,
			  "a Reliable Delivery VI may enable it");
	}
out:
	if (vi != NULL)
		VipDestroyVi(vi);
	if (rel != NULL)
		VipDestroyVi(rel);
	nic_close(&x);
}

/* ---- peer: VipConnectPeerDone/Wait return codes --------------------------------------- */

static void
test_peer(const struct viad_proc *v)
{
	struct nicx x;
	VIP_VI_HANDLE p = NULL, q = NULL;
	union h_net_addr lp, lq;
	VIP_VI_ATTRIBUTES ra;
	VIP_RETURN rp, rq;

	h_note("peer: an attribute conflict returns its code (vipl.h VipConnectPeerDone/Wait)");
	if (!nic_open(&x, v, 1u << 20))
		goto out;
	if (!(x.na.ReliabilityLevelSupport & LV_RD)) {
		h_note("the NIC supports only Unreliable VIs: no conflict to make");
		goto out;
	}
	p = vi_new(&x, LV_U, 0, false, false);
	q = vi_new(&x, LV_RD, 0, false, false);
	if (p == NULL || q == NULL)
		goto out;
	h_addr(&lp, x.mac, "peer-p");
	h_addr(&lq, x.mac, "peer-q");
	rp = VipConnectPeerRequest(p, &lp.a, &lq.a, 5000);
	rq = VipConnectPeerRequest(q, &lq.a, &lp.a, 5000);
	if (rp == VIP_SUCCESS)
		rp = VipConnectPeerWait(p, &ra);
	if (rq == VIP_SUCCESS)
		rq = VipConnectPeerWait(q, &ra);
	CHECK(rp == VIP_INVALID_RELIABILITY_LEVEL && rq == VIP_INVALID_RELIABILITY_LEVEL,
	      "Unreliable against Reliable Delivery: VIP_INVALID_RELIABILITY_LEVEL at both ends "
	      "(%s, %s)", VipDpdkReturnString(rp), VipDpdkReturnString(rq));
	CHECK(h_vi_state(p) == VIP_STATE_IDLE && h_vi_state(q) == VIP_STATE_IDLE,
	      "both VIs are Idle again");
	h_note("a QoS conflict cannot be made here: viad takes QoS 0 only (VipCreateVi)");
out:
	h_pair_drop(p, q);
	nic_close(&x);
}

/* ---- from: §4.1, §4.3 ------------------------------------------------------------------ */

struct wait_job {
	pthread_t t;
	VIP_NIC_HANDLE nic;
	VIP_VI_HANDLE vi;
	uint8_t local[64];     /* a VIP_NET_ADDRESS with the VIP_DPDK_ADDR_FROM part */
	union h_net_addr remote;
	VIP_RETURN rc, acc;
};

static void *
wait_main(void *arg)
{
	struct wait_job *w = arg;
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;

	w->rc = VipConnectWait(w->nic, (VIP_NET_ADDRESS *)(void *)w->local, 8000, &w->remote.a, &ra,
			       &conn);
	if (w->rc == VIP_SUCCESS)
		w->acc = VipConnectAccept(conn, w->vi);
	return NULL;
}

/*
 * The local address of a VipConnectWait that takes requests from one remote
 * VI only (include/vipl.h, VipConnectWait): this NIC's MAC and @p disc, with
 * VIP_DPDK_ADDR_FROM in HostAddressLen, then the remote VI's address.
 */
static void
from_addr(uint8_t *buf, const uint8_t *mac, const char *disc, const uint8_t *rmac,
	  const char *rdisc)
{
	VIP_UINT16 hl = VIP_DPDK_ADDR_FROM | 6, dl = (VIP_UINT16)strlen(disc);
	VIP_UINT16 rhl = 6, rdl = (VIP_UINT16)strlen(rdisc);
	uint8_t *p = buf;

	memcpy(p, &hl, 2);
	memcpy(p + 2, &dl, 2);
	p = ((VIP_NET_ADDRESS *)(void *)buf)->HostAddress;
	memcpy(p, mac, 6);
	memcpy(p + 6, disc, dl);
	p += 6 + dl;
	memcpy(p, &rhl, 2);
	memcpy(p + 2, &rdl, 2);
	memcpy(p + 4, rmac, 6);
	memcpy(p + 10, rdisc, rdl);
}

/*
 * §4.1: "A VI Consumer should be able to accept a connection from any remote
 * endpoint or a specific remote endpoint, based on the discriminator
 * supplied." §4.3: "The format must also permit discrimination of
 * connection requests from only a specific VI or from any VI."
 */
static void
test_from(const struct viad_proc *v)
{
	struct nicx x;
	VIP_VI_HANDLE c1 = NULL, c2 = NULL, s = NULL;
	struct wait_job w;
	struct req_job j;
	bool started = false;

	h_note("from: VipConnectWait for one specific remote VI (§4.1, §4.3)");
	if (!nic_open(&x, v, 1u << 20))
		goto out;
	c1 = vi_new(&x, LV_U, 0, false, false);
	c2 = vi_new(&x, LV_U, 0, false, false);
	s = vi_new(&x, LV_U, 0, false, false);
	if (c1 == NULL || c2 == NULL || s == NULL)
		goto out;
	memset(&w, 0, sizeof(w));
	w.nic = x.nic;
	w.vi = s;
	w.rc = w.acc = VIP_ERROR_RESOURCE;
	from_addr(w.local, x.mac, "from-s", x.mac, "from-c2");
	if (pthread_create(&w.t, NULL, wait_main, &w) != 0) {
		CHECK(0, "start a VipConnectWait thread");
		goto out;
	}
	started = true;
	h_sleep_ms(100);
	/* another VI's request is not for this wait: no VipConnectWait matches it */
	if (req_start(&j, &x, c1, "from-c1", "from-s", 10000)) {
		req_join(&j, 12000);
		CHECK_RET(j.rc, VIP_NO_MATCH, "a request of another VI (from-c1) is not taken");
	}
	if (req_start(&j, &x, c2, "from-c2", "from-s", 10000)) {
		req_join(&j, 12000);
		CHECK_RET(j.rc, VIP_SUCCESS, "the request of the VI waited for (from-c2) is accepted");
	}
	pthread_join(w.t, NULL);
	started = false;
	CHECK(w.rc == VIP_SUCCESS && w.acc == VIP_SUCCESS && w.remote.a.DiscriminatorLen == 7 &&
	      memcmp(w.remote.a.HostAddress + 6, "from-c2", 7) == 0,
	      "the standard VipConnectWait returned that VI's request (%s, accept %s)",
	      VipDpdkReturnString(w.rc), VipDpdkReturnString(w.acc));
out:
	if (started)
		pthread_join(w.t, NULL);
	h_vi_drop(c1);
	h_pair_drop(c2, s);
	nic_close(&x);
}

int
main(int argc, char **argv)
{
	struct viad_proc v;
	bool up;

	h_init(argc, argv, 280);
	up = viad_start(&v, "conform", NULL) == 0;
	if (up && enabled("nomatch"))
		test_nomatch(&v);
	if (enabled("nomatch"))
		test_nomatch_grace();
	if (up && enabled("mtu"))
		test_mtu(&v);
	if (up && enabled("async"))
		test_async(&v);
	if (up && enabled("segs"))
		test_segs(&v);
	if (enabled("partial"))
		test_partial();
	if (up && enabled("nak"))
		test_nak(&v);
	if (up && enabled("idle"))
		test_idle(&v);
	if (enabled("flushop"))
		test_flushop();
	if (up && enabled("rdmaread"))
		test_rdmaread(&v);
	if (up && enabled("peer"))
		test_peer(&v);
	if (up && enabled("from"))
		test_from(&v);
	if (up) {
		CHECK(viad_alive(&v), "viad 'conform' still running");
		viad_stop(&v);
	}
	return h_finish();
}
