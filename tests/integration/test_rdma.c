/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RDMA Write and RDMA Read through a real viad (VIA 1.0 §2.3.2, §2.5 Table 1,
 * §3.2.2, §6.3.1, §6.3.2, §9.5, §9.8.2-9.8.5, §9.9.1, §10.2-10.4):
 *
 * - the target's protection check at every level: tag match x the target
 *   VI's enable x the region's enable x read/write (Unreliable: writes only),
 *   no byte moved on a violation, and the documented reporting per level
 *   (Unreliable: nothing at the initiator, connection kept - §7.1 keeps
 *   asynchronous errors for catastrophic ones, §10.2 bit 7 is not valid
 *   there; Reliable Delivery write: completed, then RDMAW_PROT + CONN_LOST;
 *   Reliable Reception and reads: VIP_STATUS_RDMA_PROT_ERROR in the
 *   descriptor, VI in Error); plus
 *   an unknown handle, a range past either end, another process's handle;
 * - data integrity from 1 byte to MaxTransferSize, random offsets across page
 *   boundaries, heap and provider memory on both ends, gather/scatter lists;
 * - ordering (§6.3.1): reads complete FIFO among themselves, completions
 *   dequeue in queue order, QFENCE holds a write until earlier reads are done;
 * - immediate data: a write with it consumes a receive (REMOTE_RDMA_WRITE,
 *   IMMEDIATE, Length 0), one without does not; reads ignore the bit;
 * - attribute changes (VipSetMemAttributes, VipSetViAttributes while Idle);
 * - deregistered regions (target before posting, local before posting, local
 *   scatter list while a read is outstanding);
 * - 0-byte writes and reads.
 *
 * One viad with the harness defaults (the loopback NIC "via0"), then one
 * whose NIC holds every frame 100 ms ("faulty" glue), where a read stays
 * outstanding long enough to be observed.
 *
 * Usage: it_rdma PATH/TO/viad
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define CANARY   0xEE
#define PAGE     4096u
#define T_LEN    (1u << 20)    /* each target region */
#define MX_BUF   65536u        /* the protection matrix's target buffer */
#define MX_OFF   3000u
#define MX_LEN   20000u        /* several frames, across pages */
#define WAIT_MS  3000u

#define LV_U  VIP_SERVICE_UNRELIABLE
#define LV_RD VIP_SERVICE_RELIABLE_DELIVERY
#define LV_RR VIP_SERVICE_RELIABLE_RECEPTION

#define ST_WRITE_OK (VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_WRITE)
#define ST_READ_OK  (VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_READ)
#define ST_SEND_OK  (VIP_STATUS_DONE | VIP_STATUS_OP_SEND)
#define ST_RECV_OK  (VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE)
#define ST_REMOTE_W (VIP_STATUS_DONE | VIP_STATUS_OP_REMOTE_RDMA_WRITE | VIP_STATUS_IMMEDIATE)

/* One session (NIC) and its memory. */
static struct {
	VIP_NIC_HANDLE nic;
	VIP_NIC_ATTRIBUTES na;
	VIP_PROTECTION_HANDLE pt, pt2;
	struct h_mem pm;   /* provider: descriptors and local buffers, no RDMA */
	struct h_mem hm;   /* heap: local buffers, no RDMA */
	struct h_mem th;   /* heap target, RDMA Write and Read enabled */
	struct h_mem tp;   /* provider target, RDMA Write and Read enabled */
	uint32_t mtu;
} g;

static uint64_t rng;
static unsigned conn_seq;

/* the other process's region (§3.2.1: a handle is per process) */
static struct {
	uint64_t addr;
	uint32_t handle;
} foreign;

static const char *
lv_name(VIP_RELIABILITY_LEVEL lv)
{
	return lv == LV_U ? "U" : lv == LV_RD ? "RD" : "RR";
}

/* ---- asynchronous errors ---------------------------------------------------- */

/* ---- memory and descriptors -------------------------------------------------- */

static void
fill_rand(uint8_t *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint64_t x = h_rand(&rng);
		size_t k;

		for (k = 0; k < 8 && i < n; k++, i++)
			p[i] = (uint8_t)(x >> (8 * k));
	}
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

/* Wait up to @p ms until @p p holds @p want (viad writes it from outside). */
static bool
wait_bytes(const uint8_t *p, const uint8_t *want, size_t n, unsigned ms)
{
	uint64_t end = h_now_ms() + ms;

	for (;;) {
		if (memcmp(p, want, n) == 0)
			return true;
		if (h_now_ms() >= end)
			return false;
		h_sleep_ms(1);
	}
}

static uint32_t
rand_below(uint32_t n)
{
	return n == 0 ? 0 : (uint32_t)(h_rand(&rng) % n);
}

static VIP_DESCRIPTOR *
desc_new(unsigned nseg)
{
	size_t size = sizeof(VIP_CONTROL_SEGMENT) +
		      (nseg < 2 ? 2 : nseg) * sizeof(VIP_DESCRIPTOR_SEGMENT);
	VIP_DESCRIPTOR *d = h_mem_get(&g.pm, size, VIP_DESCRIPTOR_ALIGNMENT);

	memset(d, 0, size);
	d->CS.SegCount = (VIP_UINT16)nseg;
	return d;
}

/* Segment @p i of @p d (DS[] is declared with 2 entries: index by bytes). */
static VIP_DESCRIPTOR_SEGMENT *
dseg(VIP_DESCRIPTOR *d, unsigned i)
{
	return (VIP_DESCRIPTOR_SEGMENT *)((uint8_t *)d + sizeof(VIP_CONTROL_SEGMENT) +
					  (size_t)i * sizeof(VIP_DESCRIPTOR_SEGMENT));
}

static void
seg_set(VIP_DESCRIPTOR *d, unsigned i, void *addr, VIP_MEM_HANDLE mh, uint32_t len)
{
	VIP_DATA_SEGMENT *ds = &dseg(d, i)->Local;

	ds->Data.AddressBits = 0;
	ds->Data.Address = addr;
	ds->Handle = mh;
	ds->Length = len;
}

/* A local buffer of a gather/scatter list. */
struct lseg {
	uint8_t *p;
	VIP_MEM_HANDLE mh;
	uint32_t len;
};

/*
 * An RDMA descriptor (§10.3): Control @p control, the address segment
 * (@p raddr, @p rh) and the @p n local segments; Length their sum.
 */
static VIP_DESCRIPTOR *
rdma_new(uint16_t control, const void *raddr, VIP_MEM_HANDLE rh, const struct lseg *ls,
	 unsigned n)
{
	VIP_DESCRIPTOR *d = desc_new(n + 1);
	VIP_ADDRESS_SEGMENT *as = &dseg(d, 0)->Remote;
	uint32_t total = 0;
	unsigned i;

	as->Data.AddressBits = 0;
	as->Data.Address = (void *)(uintptr_t)raddr;
	as->Handle = rh;
	as->Reserved = 0;
	for (i = 0; i < n; i++) {
		seg_set(d, i + 1, ls[i].p, ls[i].mh, ls[i].len);
		total += ls[i].len;
	}
	d->CS.Control = control;
	d->CS.Length = total;
	return d;
}

/* One local segment of @p len bytes (0: none, SegCount 1). */
static VIP_DESCRIPTOR *
rdma1(uint16_t control, const void *raddr, VIP_MEM_HANDLE rh, void *local, VIP_MEM_HANDLE lmh,
      uint32_t len)
{
	struct lseg l = { local, lmh, len };

	return rdma_new(control, raddr, rh, &l, len > 0 || local != NULL ? 1 : 0);
}

/* A send of @p len bytes of @p buf (in pm). */
static VIP_DESCRIPTOR *
send_new(void *buf, uint32_t len, bool imm, uint32_t immdata)
{
	VIP_DESCRIPTOR *d = desc_new(1);

	seg_set(d, 0, buf, g.pm.mh, len);
	d->CS.Length = len;
	if (imm) {
		d->CS.Control = VIP_CONTROL_IMMEDIATE;
		d->CS.ImmediateData = immdata;
	}
	return d;
}

/* A receive of capacity @p cap, canary-filled (in pm). */
static VIP_DESCRIPTOR *
recv_new(uint32_t cap)
{
	VIP_DESCRIPTOR *d = desc_new(1);
	uint8_t *buf = h_mem_get(&g.pm, cap + 1, 8);

	memset(buf, CANARY, cap + 1);
	seg_set(d, 0, buf, g.pm.mh, cap);
	return d;
}

static uint8_t *
seg_buf(VIP_DESCRIPTOR *d, unsigned i)
{
	return dseg(d, i)->Local.Data.Address;
}

static bool
post_send(VIP_VI_HANDLE vi, VIP_DESCRIPTOR *d)
{
	VIP_RETURN rc = VipPostSend(vi, d, g.pm.mh);

	return rc == VIP_SUCCESS || CHECK_RET(rc, VIP_SUCCESS, "VipPostSend");
}

static bool
post_recv(VIP_VI_HANDLE vi, VIP_DESCRIPTOR *d)
{
	VIP_RETURN rc = VipPostRecv(vi, d, g.pm.mh);

	return rc == VIP_SUCCESS || CHECK_RET(rc, VIP_SUCCESS, "VipPostRecv");
}

/* The next completion of a queue within @p ms, or NULL. */
static VIP_DESCRIPTOR *
next_done(VIP_VI_HANDLE vi, bool recv, unsigned ms, VIP_RETURN *rcp)
{
	VIP_DESCRIPTOR *out = NULL;
	VIP_RETURN rc = recv ? VipRecvWait(vi, ms, &out) : VipSendWait(vi, ms, &out);

	if (rcp != NULL)
		*rcp = rc;
	return rc == VIP_SUCCESS ? out : NULL;
}

/* The next completion of @p vi's send (or receive) queue is @p want with
 * Status @p status. */
static bool
expect_done(VIP_VI_HANDLE vi, bool recv, VIP_DESCRIPTOR *want, uint32_t status, const char *what)
{
	VIP_RETURN rc;
	VIP_DESCRIPTOR *out = next_done(vi, recv, WAIT_MS, &rc);
	bool ok = out == want && out->CS.Status == status;

	CHECK(ok, "%s: %s completes with Status %#x (%s, %s, Status %#x)", what,
	      recv ? "receive" : "send", status, VipDpdkReturnString(rc),
	      out == NULL ? "-" : out == want ? "that descriptor" : "ANOTHER descriptor",
	      out != NULL ? out->CS.Status : 0);
	return ok;
}

/* ---- VIs and connections ------------------------------------------------------ */

static VIP_VI_HANDLE
vi_new(VIP_RELIABILITY_LEVEL lv, VIP_PROTECTION_HANDLE ptag, bool wr, bool rd)
{
	VIP_VI_ATTRIBUTES a;
	VIP_VI_HANDLE vi = NULL;
	VIP_RETURN rc;

	h_vi_attrs(&a, ptag);
	a.ReliabilityLevel = lv;
	a.MaxTransferSize = g.mtu;
	a.EnableRdmaWrite = wr ? VIP_TRUE : VIP_FALSE;
	a.EnableRdmaRead = rd ? VIP_TRUE : VIP_FALSE;
	rc = VipCreateVi(g.nic, &a, NULL, NULL, &vi);
	if (rc != VIP_SUCCESS) {
		CHECK_RET(rc, VIP_SUCCESS, "create a %s VI (write %d, read %d)", lv_name(lv), wr, rd);
		return NULL;
	}
	return vi;
}

/* Connect initiator @p a to target @p b. Every connection gets discriminators
 * of its own: nothing left of an earlier one (the delaying NIC holds frames
 * DELAY_MS) can match it. */
static bool
connect_pair(VIP_VI_HANDLE a, VIP_VI_HANDLE b)
{
	char tag[16];

	snprintf(tag, sizeof(tag), "rdma%u", ++conn_seq);
	return h_connect(g.nic, a, g.nic, b, tag, 5000);
}

/* The connection of @p a (initiator) and @p b broke: both in Error. */
static void
expect_broken(VIP_VI_HANDLE a, VIP_VI_HANDLE b, bool lost_a, const char *what)
{
	int sa = h_state_wait(a, VIP_STATE_ERROR, WAIT_MS);
	int sb = h_state_wait(b, VIP_STATE_ERROR, WAIT_MS);

	CHECK(sa == VIP_STATE_ERROR && sb == VIP_STATE_ERROR,
	      "%s: the connection breaks, both VIs in Error (initiator %s, target %s)", what,
	      h_state_name(sa), h_state_name(sb));
	if (lost_a)
		CHECK(h_err_take(VIP_ERROR_CONN_LOST, a, WAIT_MS, NULL), "%s: CONN_LOST at the initiator",
		      what);
	CHECK(h_err_take(VIP_ERROR_CONN_LOST, b, WAIT_MS, NULL), "%s: CONN_LOST at the target", what);
}

/* ---- (1) the protection matrix ------------------------------------------------- */

/* mx_buf registered 8 times: [tag mismatch][write enable][read enable] */
static uint8_t *mx_buf;
static VIP_MEM_HANDLE mx_mh[2][2][2];

/*
 * One cell: initiator VI with no RDMA enabled and local memory without RDMA
 * enables (§3.2.2.2: attributes are enforced at the remote end only), target
 * VI with @p vi_en for the operation (and the opposite for the other one),
 * target region with @p mr_en likewise, of the VI's tag or not.
 */
static void
matrix_cell(VIP_RELIABILITY_LEVEL lv, bool read, bool tag_ok, bool vi_en, bool mr_en)
{
	const bool allowed = tag_ok && vi_en && mr_en;
	const uint32_t op = read ? VIP_STATUS_OP_RDMA_READ : VIP_STATUS_OP_RDMA_WRITE;
	const bool vi_w = read ? !vi_en : vi_en, vi_r = read ? vi_en : !vi_en;
	const bool mr_w = read ? !mr_en : mr_en, mr_r = read ? mr_en : !mr_en;
	VIP_VI_HANDLE a = NULL, b = NULL;
	VIP_DESCRIPTOR *d, *s, *r;
	uint8_t *local, *saved, *tgt = mx_buf + MX_OFF;
	char what[160];
	struct h_err_event ev;

	snprintf(what, sizeof(what), "%s %s, tag %s, VI %s, region %s", lv_name(lv),
		 read ? "read" : "write", tag_ok ? "=" : "!=", vi_en ? "on" : "off",
		 mr_en ? "on" : "off");
	h_mem_reset(&g.pm);
	h_mem_reset(&g.hm);
	a = vi_new(lv, g.pt, false, false);
	/* an Unreliable VI may not accept reads: its read bit stays off */
	b = vi_new(lv, g.pt, vi_w, lv == LV_U ? false : vi_r);
	if (!connect_pair(a, b))
		goto out;
	local = h_mem_get(&g.hm, MX_LEN + 1, 64);
	saved = h_mem_get(&g.hm, MX_BUF, 64);
	if (read) {
		fill_rand(mx_buf, MX_BUF);
		memset(local, CANARY, MX_LEN + 1);
	} else {
		memset(mx_buf, CANARY, MX_BUF);
		fill_rand(local, MX_LEN);
	}
	memcpy(saved, mx_buf, MX_BUF);
	d = rdma1(read ? VIP_CONTROL_OP_RDMAREAD : VIP_CONTROL_OP_RDMAWRITE, tgt,
		  mx_mh[!tag_ok][mr_w][mr_r], local, g.hm.mh, MX_LEN);
	if (!post_send(a, d))
		goto out;
	if (allowed) {
		if (!expect_done(a, false, d, VIP_STATUS_DONE | op, what))
			goto out;
		CHECK(d->CS.Length == MX_LEN, "%s: Length %u", what, d->CS.Length);
		if (read)
			CHECK(memcmp(local, tgt, MX_LEN) == 0 && local[MX_LEN] == CANARY,
			      "%s: allowed, the data is read, nothing past it", what);
		else
			CHECK(wait_bytes(tgt, local, MX_LEN, WAIT_MS) &&
			      all_bytes(mx_buf, MX_OFF, CANARY) &&
			      all_bytes(tgt + MX_LEN, MX_BUF - MX_OFF - MX_LEN, CANARY),
			      "%s: allowed, the data is written, nothing around it", what);
		CHECK(h_vi_state(a) == VIP_STATE_CONNECTED && h_vi_state(b) == VIP_STATE_CONNECTED,
		      "%s: both still Connected", what);
		goto out;
	}
	if (lv == LV_U) {
		/* §2.5.1: the connection is kept; §7.1: no asynchronous error
		 * (it is for catastrophic ones only on Unreliable VIs), and
		 * §10.2 bit 7 is not valid there: the initiator learns nothing */
		expect_done(a, false, d, ST_WRITE_OK, what);
		/* the connection still carries data: a send behind the write
		 * arrives after its frames were refused */
		r = recv_new(64);
		post_recv(b, r);
		s = send_new(h_mem_get(&g.pm, 64, 64), 64, true, 0x600d);
		post_send(a, s);
		expect_done(a, false, s, ST_SEND_OK, what);
		expect_done(b, true, r, ST_RECV_OK | VIP_STATUS_IMMEDIATE, what);
		CHECK(all_bytes(mx_buf, MX_BUF, CANARY), "%s: refused, no byte moved", what);
		CHECK(h_err_count(VIP_ERROR_RDMAW_PROT, a) == 0,
		      "%s: no VIP_ERROR_RDMAW_PROT on an Unreliable VI (§7.1)", what);
		CHECK(h_vi_state(a) == VIP_STATE_CONNECTED &&
		      h_vi_state(b) == VIP_STATE_CONNECTED &&
		      h_err_count(VIP_ERROR_CONN_LOST, a) + h_err_count(VIP_ERROR_CONN_LOST, b) == 0,
		      "%s: both still Connected, no CONN_LOST", what);
		goto out;
	}
	if (!read && lv == LV_RD) {
		/* completed once transmitted; the error comes asynchronously */
		expect_done(a, false, d, ST_WRITE_OK, what);
		CHECK(h_err_take(VIP_ERROR_RDMAW_PROT, a, WAIT_MS, &ev) &&
		      ev.op == VIP_STATUS_OP_RDMA_WRITE,
		      "%s: VIP_ERROR_RDMAW_PROT at the initiator, OpCode RDMA_WRITE", what);
		expect_broken(a, b, true, what);
	} else {
		/* RR writes and all reads: in the descriptor (§10.2 bit 7) */
		expect_done(a, false, d, VIP_STATUS_DONE | VIP_STATUS_RDMA_PROT_ERROR | op, what);
		expect_broken(a, b, false, what);
		CHECK(h_err_count(VIP_ERROR_RDMAW_PROT, a) == 0,
		      "%s: reported in the descriptor, not (also) as RDMAW_PROT", what);
	}
	h_sleep_ms(5);
	if (read)
		CHECK(all_bytes(local, MX_LEN + 1, CANARY) && memcmp(saved, mx_buf, MX_BUF) == 0,
		      "%s: refused, no byte moved", what);
	else
		CHECK(all_bytes(mx_buf, MX_BUF, CANARY), "%s: refused, no byte moved", what);
out:
	h_pair_drop(a, b);
}

static void
test_matrix(void)
{
	static const VIP_RELIABILITY_LEVEL lvs[] = { LV_U, LV_RD, LV_RR };
	unsigned l, op, c;
	uint64_t t0 = h_now_ms();

	h_note("protection matrix: tag x VI enable x region enable x read/write at U, RD, RR "
	       "(§3.2.2, §6.3.2, §2.5 Table 1, §10.2)");
	for (l = 0; l < 3; l++) {
		for (op = 0; op < 2; op++) {
			if (lvs[l] == LV_U && op == 1)
				continue;   /* no reads on Unreliable: test_format */
			for (c = 0; c < 8; c++)
				matrix_cell(lvs[l], op == 1, !(c & 4), c & 2, c & 1);
		}
	}
	h_note("protection matrix took %llu ms", (unsigned long long)(h_now_ms() - t0));
}

/* ---- (1b) the other target checks ---------------------------------------------- */

/* Reported as @p lv reports a refused operation, nothing moved. */
static void
refused(VIP_RELIABILITY_LEVEL lv, bool read, VIP_VI_HANDLE a, VIP_VI_HANDLE b, VIP_DESCRIPTOR *d,
	const char *what)
{
	uint32_t op = read ? VIP_STATUS_OP_RDMA_READ : VIP_STATUS_OP_RDMA_WRITE;

	if (lv == LV_U) {
		/* §7.1, §10.2 bit 7: not reported on an Unreliable VI */
		expect_done(a, false, d, ST_WRITE_OK, what);
		h_sleep_ms(20);
		CHECK(h_err_count(VIP_ERROR_RDMAW_PROT, a) == 0, "%s: no RDMAW_PROT", what);
		CHECK(h_vi_state(a) == VIP_STATE_CONNECTED, "%s: still Connected", what);
	} else if (lv == LV_RD && !read) {
		expect_done(a, false, d, ST_WRITE_OK, what);
		CHECK(h_err_take(VIP_ERROR_RDMAW_PROT, a, WAIT_MS, NULL), "%s: RDMAW_PROT", what);
		expect_broken(a, b, true, what);
	} else {
		expect_done(a, false, d, VIP_STATUS_DONE | VIP_STATUS_RDMA_PROT_ERROR | op, what);
		expect_broken(a, b, false, what);
	}
}

/* One operation on a fresh pair (target all enabled): a bad remote reference. */
static void
bad_target(VIP_RELIABILITY_LEVEL lv, bool read, const void *raddr, VIP_MEM_HANDLE rh,
	   const uint8_t *watch, size_t watch_len, const char *what)
{
	VIP_VI_HANDLE a = NULL, b = NULL;
	VIP_DESCRIPTOR *d;
	uint8_t *local, *saved = malloc(watch_len + 1);
	char w[160];
	const uint32_t len = 101;

	snprintf(w, sizeof(w), "%s %s: %s", lv_name(lv), read ? "read" : "write", what);
	h_mem_reset(&g.pm);
	a = vi_new(lv, g.pt, true, lv != LV_U);
	b = vi_new(lv, g.pt, true, lv != LV_U);
	if (saved == NULL || !connect_pair(a, b))
		goto out;
	local = h_mem_get(&g.pm, len + 1, 8);
	if (read)
		memset(local, CANARY, len + 1);
	else
		fill_rand(local, len);
	if (watch != NULL)
		memcpy(saved, watch, watch_len);
	d = rdma1(read ? VIP_CONTROL_OP_RDMAREAD : VIP_CONTROL_OP_RDMAWRITE, raddr, rh, local,
		  g.pm.mh, len);
	if (!post_send(a, d))
		goto out;
	refused(lv, read, a, b, d, w);
	h_sleep_ms(5);
	if (read)
		CHECK(all_bytes(local, len + 1, CANARY), "%s: nothing read", w);
	else if (watch != NULL)
		CHECK(memcmp(saved, watch, watch_len) == 0, "%s: nothing written", w);
out:
	free(saved);
	h_pair_drop(a, b);
}

static void
test_target_checks(void)
{
	static const VIP_RELIABILITY_LEVEL lvs[] = { LV_U, LV_RR, LV_RD };
	VIP_MEM_ATTRIBUTES ma = { .Ptag = g.pt, .EnableRdmaWrite = VIP_TRUE, .EnableRdmaRead = VIP_TRUE };
	uint8_t *sub = mx_buf + PAGE, *gone = mx_buf + 5 * PAGE;
	VIP_MEM_HANDLE sub_mh, gone_mh;
	unsigned l, op;

	h_note("target checks: handle, range, owner (§3.2.1, §6.3.2)");
	memset(mx_buf, CANARY, MX_BUF);
	if (!CHECK_RET(VipRegisterMem(g.nic, sub, 2 * PAGE, &ma, &sub_mh), VIP_SUCCESS,
		       "register 8 KiB of the target buffer for RDMA") ||
	    !CHECK_RET(VipRegisterMem(g.nic, gone, PAGE, &ma, &gone_mh), VIP_SUCCESS,
		       "register another 4 KiB") ||
	    !CHECK_RET(VipDeregisterMem(g.nic, gone, gone_mh), VIP_SUCCESS,
		       "and deregister it: its handle is stale"))
		return;
	for (l = 0; l < 3; l++) {
		for (op = 0; op < 2; op++) {
			bool read = op == 1;

			if (lvs[l] == LV_U && read)
				continue;
			bad_target(lvs[l], read, sub + 2 * PAGE - 100, sub_mh, mx_buf, MX_BUF,
				   "the range ends 1 byte past the region");
			bad_target(lvs[l], read, sub - 1, sub_mh, mx_buf, MX_BUF,
				   "the range starts 1 byte before the region");
			bad_target(lvs[l], read, gone, gone_mh, mx_buf, MX_BUF,
				   "a deregistered region's handle (deregistered before posting)");
			if (foreign.handle != 0)
				bad_target(lvs[l], read, (void *)(uintptr_t)foreign.addr,
					   foreign.handle, NULL, 0,
					   "another process's region of the right tag, enabled");
		}
	}
	/* the exact region is fine: the boundaries are right */
	{
		VIP_VI_HANDLE a = vi_new(LV_RR, g.pt, true, true), b = vi_new(LV_RR, g.pt, true, true);
		VIP_DESCRIPTOR *d;
		uint8_t *local;

		h_mem_reset(&g.pm);
		if (connect_pair(a, b)) {
			local = h_mem_get(&g.pm, 2 * PAGE, 64);
			fill_rand(local, 2 * PAGE);
			d = rdma1(VIP_CONTROL_OP_RDMAWRITE, sub, sub_mh, local, g.pm.mh, 2 * PAGE);
			post_send(a, d);
			expect_done(a, false, d, ST_WRITE_OK, "RR write of exactly the region");
			CHECK(memcmp(sub, local, 2 * PAGE) == 0 && sub[-1] == CANARY &&
			      sub[2 * PAGE] == CANARY, "RR: the whole region written, nothing around");
			memset(local, CANARY, 2 * PAGE);
			d = rdma1(VIP_CONTROL_OP_RDMAREAD, sub, sub_mh, local, g.pm.mh, 2 * PAGE);
			post_send(a, d);
			expect_done(a, false, d, ST_READ_OK, "RR read of exactly the region");
			CHECK(memcmp(sub, local, 2 * PAGE) == 0, "RR: the whole region read");
		}
		h_pair_drop(a, b);
	}
	CHECK_RET(VipDeregisterMem(g.nic, sub, sub_mh), VIP_SUCCESS, "deregister the 8 KiB");

	/* a read-only mapping, registered with both enables: readable only */
	{
		uint8_t *ro = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		VIP_MEM_HANDLE ro_mh;
		VIP_VI_HANDLE a = NULL, b = NULL;
		VIP_DESCRIPTOR *d;
		uint8_t *local;

		if (ro == MAP_FAILED) {
			CHECK(0, "mmap");
			return;
		}
		fill_rand(ro, 2 * PAGE);
		mprotect(ro, 2 * PAGE, PROT_READ);
		if (CHECK_RET(VipRegisterMem(g.nic, ro, 2 * PAGE, &ma, &ro_mh), VIP_SUCCESS,
			      "register a read-only mapping, RDMA Write and Read enabled")) {
			h_mem_reset(&g.pm);
			a = vi_new(LV_RR, g.pt, false, false);
			b = vi_new(LV_RR, g.pt, true, true);
			if (connect_pair(a, b)) {
				local = h_mem_get(&g.pm, 2 * PAGE + 1, 64);
				memset(local, CANARY, 2 * PAGE + 1);
				d = rdma1(VIP_CONTROL_OP_RDMAREAD, ro, ro_mh, local, g.pm.mh, 2 * PAGE);
				post_send(a, d);
				expect_done(a, false, d, ST_READ_OK, "RR read from a read-only mapping");
				CHECK(memcmp(local, ro, 2 * PAGE) == 0 && local[2 * PAGE] == CANARY,
				      "RR: read intact");
			}
			h_pair_drop(a, b);
			bad_target(LV_RR, false, ro + 10, ro_mh, NULL, 0,
				   "into a read-only mapping (the pages are not writable)");
			CHECK_RET(VipDeregisterMem(g.nic, ro, ro_mh), VIP_SUCCESS, "deregister it");
		}
		munmap(ro, 2 * PAGE);
	}
}

/* ---- (2) data integrity ---------------------------------------------------------- */

/* Split @p size bytes into @p n local segments, in heap or provider memory at
 * random offsets (most cross a page), each with a canary byte after it. */
static void
lsegs_make(struct lseg *ls, unsigned n, uint32_t size)
{
	uint32_t cut[256];
	unsigned i, j;

	for (i = 0; i + 1 < n; i++)
		cut[i] = rand_below(size + 1);
	for (i = 1; i + 1 < n; i++) {
		for (j = i; j > 0 && cut[j - 1] > cut[j]; j--) {
			uint32_t t = cut[j];

			cut[j] = cut[j - 1];
			cut[j - 1] = t;
		}
	}
	for (i = 0; i < n; i++) {
		uint32_t from = i == 0 ? 0 : cut[i - 1], to = i + 1 == n ? size : cut[i];
		struct h_mem *m = h_rand(&rng) & 1 ? &g.hm : &g.pm;
		uint8_t *p = h_mem_get(m, to - from + 1 + PAGE, 1);

		ls[i].p = p + rand_below(PAGE);
		ls[i].mh = m->mh;
		ls[i].len = to - from;
		memset(ls[i].p, CANARY, ls[i].len + 1);
	}
}

static void
lsegs_fill(const struct lseg *ls, unsigned n, uint8_t *msg)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		fill_rand(ls[i].p, ls[i].len);
		memcpy(msg, ls[i].p, ls[i].len);
		msg += ls[i].len;
	}
}

/* Whether the segments hold @p msg, nothing past each. */
static bool
lsegs_hold(const struct lseg *ls, unsigned n, const uint8_t *msg)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		if (memcmp(ls[i].p, msg, ls[i].len) != 0 || ls[i].p[ls[i].len] != CANARY)
			return false;
		msg += ls[i].len;
	}
	return true;
}

static uint32_t
pick_size(unsigned i, uint32_t mtu)
{
	static const uint32_t fixed[] = { 1, 2, 4095, 4096, 4097 };

	if (i < 5)
		return fixed[i];
	if (i == 5)
		return mtu - 1;
	if (i == 6)
		return mtu;
	/* log-uniform in [1, mtu] */
	{
		unsigned bits = 1 + rand_below(16);
		uint32_t v = (uint32_t)(h_rand(&rng) & ((1u << bits) - 1)) + 1;

		return v > mtu ? mtu : v;
	}
}

static void
test_integrity(VIP_RELIABILITY_LEVEL lv, unsigned iters)
{
	struct lseg ls[256], rs[256];
	VIP_VI_HANDLE a = NULL, b = NULL;
	uint8_t *msg = malloc(g.mtu), *msg2 = malloc(g.mtu);
	unsigned i, w_ok = 0, r_ok = 0, st_ok = 0, guard_ok = 0, nr = 0, done = 0;
	uint32_t k;
	const bool reads = lv != LV_U;
	uint64_t t0 = h_now_ms();
	char first_bad[200] = "";

	h_note("%s data integrity: %u writes%s of 1 B .. %u B, heap and provider memory on both "
	       "ends, random offsets across pages, 1-6 local segments (some 100+)",
	       lv_name(lv), iters, reads ? " and reads" : "", g.mtu);
	a = vi_new(lv, g.pt, false, false);
	b = vi_new(lv, g.pt, true, reads);
	if (msg == NULL || msg2 == NULL || !connect_pair(a, b))
		goto out;
	for (i = 0; i < iters; i++) {
		uint32_t size = pick_size(i, g.mtu);
		struct h_mem *t = i & 1 ? &g.tp : &g.th;
		uint32_t page = 17 + rand_below(T_LEN / PAGE - 34);
		uint32_t off = page * PAGE - 1 - rand_below(size);
		unsigned n = i % 13 == 12 ? 100 + rand_below(140) : 1 + rand_below(6);
		uint8_t *tgt = t->base + off;
		VIP_DESCRIPTOR *d, *out;
		VIP_RETURN rc;
		bool ok;

		if (n > size + 1)
			n = size + 1;
		h_mem_reset(&g.pm);
		h_mem_reset(&g.hm);
		/* write: a gather list into the target */
		lsegs_make(ls, n, size);
		lsegs_fill(ls, n, msg);
		memset(tgt - 16, CANARY, size + 32);
		/* not the message anywhere before it is placed (waited for below) */
		for (k = 0; k < size; k++)
			tgt[k] = (uint8_t)~msg[k];
		d = rdma_new(VIP_CONTROL_OP_RDMAWRITE, tgt, t->mh, ls, n);
		if (!post_send(a, d))
			break;
		out = next_done(a, false, WAIT_MS, &rc);
		ok = out == d && out->CS.Status == ST_WRITE_OK && out->CS.Length == size;
		st_ok += ok;
		if (!ok && first_bad[0] == '\0')
			snprintf(first_bad, sizeof(first_bad),
				 "write %u: %u B, %u segs: %s, Status %#x, Length %u", i, size, n,
				 VipDpdkReturnString(rc), out ? out->CS.Status : 0,
				 out ? out->CS.Length : 0);
		/* RR: placed at completion (Table 1); others: placed soon after */
		ok = lv == LV_RR ? memcmp(tgt, msg, size) == 0 : wait_bytes(tgt, msg, size, WAIT_MS);
		w_ok += ok;
		if (!ok && first_bad[0] == '\0')
			snprintf(first_bad, sizeof(first_bad),
				 "write %u: %u B at %s+%u, %u segs: data differs", i, size, t->name,
				 off, n);
		done++;
		guard_ok += all_bytes(tgt - 16, 16, CANARY) && all_bytes(tgt + size, 16, CANARY);
		if (first_bad[0] != '\0')
			break;   /* one failure is enough, and each may cost a timeout */
		if (!reads)
			continue;
		/* read: new content, set by the target's process, into a scatter list */
		nr++;
		fill_rand(tgt, size);
		memcpy(msg2, tgt, size);
		n = i % 13 == 6 ? 100 + rand_below(140) : 1 + rand_below(6);
		if (n > size + 1)
			n = size + 1;
		lsegs_make(rs, n, size);
		d = rdma_new(VIP_CONTROL_OP_RDMAREAD, tgt, t->mh, rs, n);
		if (!post_send(a, d))
			break;
		out = next_done(a, false, WAIT_MS, &rc);
		ok = out == d && out->CS.Status == ST_READ_OK && out->CS.Length == size &&
		     lsegs_hold(rs, n, msg2);
		r_ok += ok;
		if (!ok && first_bad[0] == '\0')
			snprintf(first_bad, sizeof(first_bad),
				 "read %u: %u B from %s+%u, %u segs: %s, Status %#x, Length %u", i,
				 size, t->name, off, n, VipDpdkReturnString(rc),
				 out ? out->CS.Status : 0, out ? out->CS.Length : 0);
		if (first_bad[0] != '\0')
			break;
	}
	if (first_bad[0] != '\0')
		h_note("first failure: %s", first_bad);
	CHECK(st_ok == iters, "%s: every write completes with ST_WRITE_OK and its Length (%u of %u)",
	      lv_name(lv), st_ok, iters);
	CHECK(w_ok == iters, "%s: every write placed intact (%u of %u)", lv_name(lv), w_ok, iters);
	CHECK(guard_ok == done, "%s: no write touched a byte around its target (%u of %u)",
	      lv_name(lv), guard_ok, done);
	if (reads)
		CHECK(r_ok == nr,
		      "%s: every read completes (ST_READ_OK, Length) with the data scattered "
		      "intact and nothing past a segment (%u of %u)", lv_name(lv), r_ok, nr);
	CHECK(h_vi_state(a) == VIP_STATE_CONNECTED && h_vi_state(b) == VIP_STATE_CONNECTED,
	      "%s: still Connected", lv_name(lv));
	h_note("%s integrity took %llu ms", lv_name(lv), (unsigned long long)(h_now_ms() - t0));
out:
	free(msg);
	free(msg2);
	h_pair_drop(a, b);
}

/* Local length checks of RDMA descriptors (§10.2 bit 3, §10.3). */
static void
test_format(void)
{
	VIP_VI_HANDLE a = NULL, b = NULL;
	VIP_DESCRIPTOR *d, *r, *out;
	uint8_t *local;

	h_note("RDMA descriptor format and length errors (§2.5.1, §10.2, §10.3)");
	h_mem_reset(&g.pm);
	a = vi_new(LV_U, g.pt, false, false);
	b = vi_new(LV_U, g.pt, true, false);
	if (!connect_pair(a, b))
		goto out;
	local = h_mem_get(&g.pm, g.mtu + 1, 64);
	memset(g.th.base, CANARY, 2 * PAGE);
	d = rdma1(VIP_CONTROL_OP_RDMAREAD, g.th.base, g.th.mh, local, g.pm.mh, 100);
	post_send(a, d);
	expect_done(a, false, d, VIP_STATUS_DONE | VIP_STATUS_FORMAT_ERROR | VIP_STATUS_OP_RDMA_READ,
		    "RDMA Read on an Unreliable VI: format error (§2.5.1)");
	d = rdma1(VIP_CONTROL_OP_RDMAWRITE, g.th.base, g.th.mh, local, g.pm.mh, 100);
	d->CS.SegCount = 0;
	post_send(a, d);
	expect_done(a, false, d, VIP_STATUS_DONE | VIP_STATUS_FORMAT_ERROR | VIP_STATUS_OP_RDMA_WRITE,
		    "RDMA Write without its address segment (SegCount 0)");
	d = rdma1(VIP_CONTROL_OP_RDMAWRITE, g.th.base, g.th.mh, local, g.pm.mh, 100);
	dseg(d, 0)->Remote.Reserved = 1;
	post_send(a, d);
	expect_done(a, false, d, VIP_STATUS_DONE | VIP_STATUS_FORMAT_ERROR | VIP_STATUS_OP_RDMA_WRITE,
		    "address segment Reserved 1");
	d = rdma1(VIP_CONTROL_OP_RDMAWRITE, g.th.base, g.th.mh, local, g.pm.mh, 100);
	d->CS.Length = 99;
	post_send(a, d);
	expect_done(a, false, d, VIP_STATUS_DONE | VIP_STATUS_LENGTH_ERROR | VIP_STATUS_OP_RDMA_WRITE,
		    "RDMA Write whose Length is not the sum of its local segments");
	d = rdma1(VIP_CONTROL_OP_RDMAWRITE, g.th.base, g.th.mh, local, g.pm.mh, g.mtu + 1);
	post_send(a, d);
	expect_done(a, false, d, VIP_STATUS_DONE | VIP_STATUS_LENGTH_ERROR | VIP_STATUS_OP_RDMA_WRITE,
		    "RDMA Write of MaxTransferSize + 1");
	r = desc_new(2);
	r->CS.Control = VIP_CONTROL_OP_RDMAWRITE;
	seg_set(r, 1, local, g.pm.mh, 100);
	post_recv(b, r);
	{
		/* receives are taken (and checked) when a message arrives */
		VIP_DESCRIPTOR *r2 = recv_new(64), *s = send_new(local, 10, false, 0);

		post_recv(b, r2);
		post_send(a, s);
		expect_done(a, false, s, ST_SEND_OK, "a send to take the receives");
		expect_done(b, true, r, VIP_STATUS_DONE | VIP_STATUS_FORMAT_ERROR |
			    VIP_STATUS_OP_RECEIVE, "RDMA Write op on a receive queue (§10.2)");
		expect_done(b, true, r2, ST_RECV_OK, "the next receive takes the message");
	}
	h_sleep_ms(10);
	CHECK(all_bytes(g.th.base, 2 * PAGE, CANARY), "none of them wrote anything");
	CHECK_RET(VipSendDone(a, &out), VIP_NOT_DONE, "nothing else completed");
out:
	h_pair_drop(a, b);
}

/* ---- (3) ordering ------------------------------------------------------------------ */

#define NREADS 40

static void
test_order(VIP_RELIABILITY_LEVEL lv)
{
	VIP_VI_HANDLE a = NULL, b = NULL;
	VIP_DESCRIPTOR *d[NREADS], *out, *r1, *r2;
	uint8_t *buf[NREADS];
	uint32_t len[NREADS];
	unsigned i, in_order = 0, right = 0, fence_old = 0, fence_new = 0, nf_old = 0, nf_new = 0;
	const unsigned nfence = 20;
	const char *L = lv_name(lv);

	h_note("%s ordering (§6.3.1.1, §6.3.1.2): %u reads at once (more than 16 outstanding), "
	       "mixed queue, QFENCE", L, NREADS);
	h_mem_reset(&g.pm);
	h_mem_reset(&g.hm);
	a = vi_new(lv, g.pt, false, false);
	b = vi_new(lv, g.pt, true, true);
	if (!connect_pair(a, b))
		goto out;
	fill_rand(g.th.base, T_LEN);
	/* large ones first: a small later read may not complete before them */
	for (i = 0; i < NREADS; i++) {
		len[i] = i < 10 ? g.mtu - i : 1 + rand_below(3000);
		buf[i] = h_mem_get(&g.hm, len[i] + 1, 64);
		memset(buf[i], CANARY, len[i] + 1);
		d[i] = rdma1(VIP_CONTROL_OP_RDMAREAD, g.th.base + i * 7919, g.th.mh, buf[i], g.hm.mh,
			     len[i]);
	}
	for (i = 0; i < NREADS; i++)
		post_send(a, d[i]);
	for (i = 0; i < NREADS; i++) {
		out = next_done(a, false, WAIT_MS, NULL);
		if (out == NULL)
			break;
		in_order += out == d[i];
		right += out == d[i] && out->CS.Status == ST_READ_OK && out->CS.Length == len[i] &&
			 memcmp(buf[i], g.th.base + i * 7919, len[i]) == 0 && buf[i][len[i]] == CANARY;
	}
	CHECK(in_order == NREADS, "%s: %u reads complete in FIFO order (%u in place)", L, NREADS,
	      in_order);
	CHECK(right == NREADS, "%s: with their data (%u of %u)", L, right, NREADS);
	if (in_order != NREADS) {
		h_note("%s: the send queue is stuck: the rest of the ordering tests skipped", L);
		goto out;
	}

	/* a mixed queue: every completion dequeued in posting order */
	{
		VIP_DESCRIPTOR *q[6];
		uint32_t want[6];
		uint8_t *src = h_mem_get(&g.pm, 4096, 64), *dst = h_mem_get(&g.pm, g.mtu, 64);
		unsigned k, good = 0;

		fill_rand(src, 4096);
		r1 = recv_new(4096);
		r2 = recv_new(64);
		post_recv(b, r1);
		post_recv(b, r2);
		q[0] = rdma1(VIP_CONTROL_OP_RDMAREAD, g.th.base, g.th.mh, dst, g.pm.mh, g.mtu);
		q[1] = send_new(src, 1000, true, 11);
		q[2] = rdma1(VIP_CONTROL_OP_RDMAWRITE, g.th.base + 2 * g.mtu, g.th.mh, src, g.pm.mh,
			     4096);
		q[3] = rdma1(VIP_CONTROL_OP_RDMAREAD, g.th.base + 3, g.th.mh, dst, g.pm.mh, 10);
		q[4] = rdma1(VIP_CONTROL_OP_RDMAWRITE | VIP_CONTROL_IMMEDIATE, g.th.base + 3 * g.mtu,
			     g.th.mh, src, g.pm.mh, 100);
		q[4]->CS.ImmediateData = 44;
		q[5] = send_new(src, 0, false, 0);
		want[0] = ST_READ_OK;
		want[1] = ST_SEND_OK;
		want[2] = ST_WRITE_OK;
		want[3] = ST_READ_OK;
		want[4] = ST_WRITE_OK;
		want[5] = ST_SEND_OK;
		/* the last send needs a receive too */
		{
			VIP_DESCRIPTOR *r3 = recv_new(8);

			post_recv(b, r3);
			for (k = 0; k < 6; k++)
				post_send(a, q[k]);
			for (k = 0; k < 6; k++) {
				out = next_done(a, false, WAIT_MS, NULL);
				if (out == NULL)
					break;
				good += out == q[k] && out->CS.Status == want[k];
			}
			CHECK(good == 6,
			      "%s: read, send, write, read, write+imm, send: dequeued in posting "
			      "order with their op bits (%u of 6)", L, good);
			expect_done(b, true, r1, ST_RECV_OK | VIP_STATUS_IMMEDIATE,
				    "the send after a read");
			expect_done(b, true, r2, ST_REMOTE_W, "the write with immediate data");
			expect_done(b, true, r3, ST_RECV_OK, "the last send");
		}
	}

	/*
	 * QFENCE (§6.3.1.2, §10.2 bit 3): read X, then a fenced write of new
	 * content into X: the write waits for the read, which returns the old
	 * content. Without the fence Reliable Delivery may return either; on
	 * Reliable Reception the target "must not modify the contents of the
	 * remote memory region ... until after the RDMA Read has completed"
	 * (§6.3.1.1): the old content again.
	 */
	for (i = 0; i < 2 * nfence; i++) {
		const bool fence = i < nfence;
		const uint32_t n = 32768;
		uint8_t *x = g.th.base + 4 * g.mtu + (i % 4) * n, *oldc, *newc, *got;
		VIP_DESCRIPTOR *rd, *wr;
		bool got_old, got_new, placed;

		h_mem_reset(&g.pm);
		oldc = h_mem_get(&g.pm, n, 64);
		newc = h_mem_get(&g.pm, n, 64);
		got = h_mem_get(&g.pm, n, 64);
		fill_rand(x, n);
		memcpy(oldc, x, n);
		fill_rand(newc, n);
		memset(got, CANARY, n);
		rd = rdma1(VIP_CONTROL_OP_RDMAREAD, x, g.th.mh, got, g.pm.mh, n);
		wr = rdma1(VIP_CONTROL_OP_RDMAWRITE | (fence ? VIP_CONTROL_QFENCE : 0), x, g.th.mh,
			   newc, g.pm.mh, n);
		post_send(a, rd);
		post_send(a, wr);
		out = next_done(a, false, WAIT_MS, NULL);
		if (out != rd || out->CS.Status != ST_READ_OK) {
			CHECK(0, "%s: the read before a write completes first (Status %#x)", L,
			      out ? out->CS.Status : 0);
			break;
		}
		out = next_done(a, false, WAIT_MS, NULL);
		if (out != wr || out->CS.Status != ST_WRITE_OK) {
			CHECK(0, "%s: the write after it completes (Status %#x)", L,
			      out ? out->CS.Status : 0);
			break;
		}
		placed = wait_bytes(x, newc, n, WAIT_MS);
		got_old = memcmp(got, oldc, n) == 0;
		got_new = memcmp(got, newc, n) == 0;
		if (!placed)
			CHECK(0, "%s: the write is placed", L);
		if (fence) {
			fence_old += got_old;
			fence_new += got_new;
		} else {
			nf_old += got_old;
			nf_new += got_new;
		}
	}
	CHECK(fence_old == nfence,
	      "%s: QFENCE: a fenced write never passes the read before it: %u of %u reads "
	      "returned the old content (%u the new one)", L, fence_old, nfence, fence_new);
	h_note("%s: without QFENCE: %u of %u reads returned the old content, %u the new one", L,
	       nf_old, nfence, nf_new);
	if (lv == LV_RR)
		CHECK(nf_old == nfence,
		      "RR: without QFENCE the bypassing write may still not modify the region "
		      "before the read completed (§6.3.1.1): %u of %u reads got the old content",
		      nf_old, nfence);
out:
	h_pair_drop(a, b);
}

/*
 * Reliable Reception, §6.3.1.1: "In the event of an error on the RDMA Read,
 * no remote Receive queue Descriptor is consumed" by a bypassing Send, and
 * "the RDMA Write must have no remote effect".
 */
static void
test_rr_failed_read(void)
{
	VIP_VI_HANDLE a = NULL, b = NULL;
	VIP_DESCRIPTOR *rd, *s, *w, *r1, *r2, *out;
	uint8_t *dst, *src, *tgt = g.th.base + 7 * PAGE;
	unsigned k, ok_recv = 0, nrecv = 0;

	h_note("RR: a refused read, then a send and a write with immediate data (§6.3.1.1)");
	h_mem_reset(&g.pm);
	a = vi_new(LV_RR, g.pt, false, false);
	b = vi_new(LV_RR, g.pt, true, false);   /* reads refused */
	if (!connect_pair(a, b))
		goto out;
	dst = h_mem_get(&g.pm, 1001, 64);
	src = h_mem_get(&g.pm, 1000, 64);
	fill_rand(src, 1000);
	memset(dst, CANARY, 1001);
	memset(tgt, CANARY, 2000);
	r1 = recv_new(1000);
	r2 = recv_new(8);
	post_recv(b, r1);
	post_recv(b, r2);
	rd = rdma1(VIP_CONTROL_OP_RDMAREAD, g.th.base, g.th.mh, dst, g.pm.mh, 1000);
	s = send_new(src, 1000, false, 0);
	w = rdma1(VIP_CONTROL_OP_RDMAWRITE | VIP_CONTROL_IMMEDIATE, tgt, g.th.mh, src, g.pm.mh, 1000);
	post_send(a, rd);
	post_send(a, s);
	post_send(a, w);
	expect_done(a, false, rd, VIP_STATUS_DONE | VIP_STATUS_RDMA_PROT_ERROR |
		    VIP_STATUS_OP_RDMA_READ, "RR: the refused read");
	for (k = 0; k < 2; k++) {
		out = next_done(a, false, WAIT_MS, NULL);
		CHECK(out != NULL && (out->CS.Status & VIP_STATUS_ERROR_MASK),
		      "RR: descriptor %u after it completes in error (Status %#x)", k + 1,
		      out ? out->CS.Status : 0);
	}
	expect_broken(a, b, false, "RR: refused read");
	for (k = 0; k < 2; k++) {
		out = next_done(b, true, 1000, NULL);
		if (out == NULL)
			break;
		nrecv++;
		ok_recv += (out->CS.Status & VIP_STATUS_ERROR_MASK) == 0;
	}
	CHECK(nrecv == 2 && ok_recv == 0,
	      "RR: neither the send nor the write consumed a receive (%u of %u back in error)",
	      nrecv - ok_recv, nrecv);
	CHECK(all_bytes(tgt, 2000, CANARY), "RR: the write had no remote effect");
	CHECK(all_bytes(dst, 1001, CANARY), "RR: nothing read");
out:
	h_pair_drop(a, b);
}

/* ---- (4, 7) immediate data, 0-byte operations -------------------------------------- */

static void
test_immediate(VIP_RELIABILITY_LEVEL lv)
{
	VIP_VI_HANDLE a = NULL, b = NULL;
	VIP_DESCRIPTOR *d, *r, *s, *out;
	uint8_t *src, *tgt = g.tp.base + 100;
	const char *L = lv_name(lv);
	char w[160];

	h_note("%s immediate data and 0-byte operations (§2.3.2, §10.2 bit 2)", L);
	h_mem_reset(&g.pm);
	a = vi_new(lv, g.pt, false, false);
	b = vi_new(lv, g.pt, true, lv != LV_U);
	if (!connect_pair(a, b))
		goto out;
	src = h_mem_get(&g.pm, 4096, 64);
	fill_rand(src, 4096);

	/* with immediate data: consumes a receive, after the data is placed */
	memset(g.tp.base, CANARY, 2 * PAGE);
	r = recv_new(64);
	post_recv(b, r);
	d = rdma1(VIP_CONTROL_OP_RDMAWRITE | VIP_CONTROL_IMMEDIATE, tgt, g.tp.mh, src, g.pm.mh, 777);
	d->CS.ImmediateData = 0xabc000u + lv;
	post_send(a, d);
	snprintf(w, sizeof(w), "%s write with immediate data", L);
	expect_done(a, false, d, ST_WRITE_OK, w);
	if (expect_done(b, true, r, ST_REMOTE_W, w)) {
		CHECK(r->CS.ImmediateData == 0xabc000u + lv && r->CS.Length == 0,
		      "%s: ImmediateData %#x (want %#x), Length %u (want 0)", w,
		      r->CS.ImmediateData, 0xabc000u + lv, r->CS.Length);
		CHECK(memcmp(tgt, src, 777) == 0 && tgt[777] == CANARY && tgt[-1] == CANARY,
		      "%s: the data is placed when the receive completes", w);
		CHECK(all_bytes(seg_buf(r, 0), 65, CANARY),
		      "%s: nothing in the receive's buffer", w);
	}

	/* without: consumes nothing, notifies nobody */
	r = recv_new(64);
	post_recv(b, r);
	d = rdma1(VIP_CONTROL_OP_RDMAWRITE, tgt + 1000, g.tp.mh, src + 1000, g.pm.mh, 500);
	post_send(a, d);
	snprintf(w, sizeof(w), "%s write without immediate data", L);
	expect_done(a, false, d, ST_WRITE_OK, w);
	CHECK(wait_bytes(tgt + 1000, src + 1000, 500, WAIT_MS), "%s: placed", w);
	h_sleep_ms(20);
	CHECK_RET(VipRecvDone(b, &out), VIP_NOT_DONE, "%s: the posted receive stays pending", w);
	/* a 0-byte write: nothing placed, nothing consumed */
	memset(tgt + 2000, CANARY, 16);
	d = rdma1(VIP_CONTROL_OP_RDMAWRITE, tgt + 2008, g.tp.mh, NULL, 0, 0);
	post_send(a, d);
	snprintf(w, sizeof(w), "%s 0-byte write (SegCount 1, Length 0)", L);
	if (expect_done(a, false, d, ST_WRITE_OK, w))
		CHECK(d->CS.Length == 0, "%s: Length 0", w);
	h_sleep_ms(20);
	CHECK(all_bytes(tgt + 2000, 16, CANARY), "%s: nothing written", w);
	CHECK_RET(VipRecvDone(b, &out), VIP_NOT_DONE, "%s: the posted receive stays pending", w);
	/* that receive is still the head: the next send takes it */
	s = send_new(src, 50, true, 5);
	post_send(a, s);
	expect_done(a, false, s, ST_SEND_OK, "a send after them");
	if (expect_done(b, true, r, ST_RECV_OK | VIP_STATUS_IMMEDIATE,
			"the receive posted before the writes takes the send"))
		CHECK(r->CS.Length == 50 && r->CS.ImmediateData == 5 &&
		      memcmp(seg_buf(r, 0), src, 50) == 0, "with the send's data");

	/* a 0-byte write with immediate data */
	r = recv_new(8);
	post_recv(b, r);
	d = rdma1(VIP_CONTROL_OP_RDMAWRITE | VIP_CONTROL_IMMEDIATE, tgt, g.tp.mh, NULL, 0, 0);
	d->CS.ImmediateData = 0x5eed;
	post_send(a, d);
	snprintf(w, sizeof(w), "%s 0-byte write with immediate data", L);
	expect_done(a, false, d, ST_WRITE_OK, w);
	if (expect_done(b, true, r, ST_REMOTE_W, w))
		CHECK(r->CS.ImmediateData == 0x5eed && r->CS.Length == 0, "%s: Imm %#x, Length %u",
		      w, r->CS.ImmediateData, r->CS.Length);

	if (lv != LV_U) {
		uint8_t *dst = h_mem_get(&g.pm, 256, 64);

		/* reads ignore the immediate bit (§10.2 bit 2): no format error, no
		 * receive consumed */
		r = recv_new(8);
		post_recv(b, r);
		memset(dst, CANARY, 256);
		d = rdma1(VIP_CONTROL_OP_RDMAREAD | VIP_CONTROL_IMMEDIATE, tgt, g.tp.mh, dst,
			  g.pm.mh, 100);
		d->CS.ImmediateData = 77;
		post_send(a, d);
		snprintf(w, sizeof(w), "%s read with the immediate bit set", L);
		if (expect_done(a, false, d, ST_READ_OK, w))
			CHECK(d->CS.Length == 100 && memcmp(dst, tgt, 100) == 0 &&
			      dst[100] == CANARY, "%s: the data read", w);
		h_sleep_ms(20);
		CHECK_RET(VipRecvDone(b, &out), VIP_NOT_DONE, "%s: no receive consumed", w);
		/* 0-byte read */
		d = rdma1(VIP_CONTROL_OP_RDMAREAD, tgt, g.tp.mh, NULL, 0, 0);
		post_send(a, d);
		snprintf(w, sizeof(w), "%s 0-byte read (SegCount 1, Length 0)", L);
		if (expect_done(a, false, d, ST_READ_OK, w))
			CHECK(d->CS.Length == 0, "%s: Length 0", w);
		/* a 0-byte read with an empty local segment */
		memset(dst, CANARY, 256);
		d = rdma1(VIP_CONTROL_OP_RDMAREAD, tgt, g.tp.mh, dst, g.pm.mh, 0);
		post_send(a, d);
		snprintf(w, sizeof(w), "%s 0-byte read with one empty local segment", L);
		expect_done(a, false, d, ST_READ_OK, w);
		CHECK(dst[0] == CANARY, "%s: nothing written", w);
		CHECK_RET(VipRecvDone(b, &out), VIP_NOT_DONE, "%s: no receive consumed", L);
		s = send_new(src, 0, false, 0);
		post_send(a, s);
		expect_done(b, true, r, ST_RECV_OK, "the receive is still there for a send");
		expect_done(a, false, s, ST_SEND_OK, "that send");
	}

	/* with immediate data and no receive posted (§2.3.2: an error; on the
	 * reliable levels the connection breaks, §2.5.2) */
	memset(tgt + 3000, CANARY, 200);
	d = rdma1(VIP_CONTROL_OP_RDMAWRITE | VIP_CONTROL_IMMEDIATE, tgt + 3000, g.tp.mh, src, g.pm.mh,
		  100);
	post_send(a, d);
	snprintf(w, sizeof(w), "%s write with immediate data, receive queue empty", L);
	if (lv == LV_U) {
		/* lost (§2.5.1), and no RECVQ_EMPTY: §7.1 */
		expect_done(a, false, d, ST_WRITE_OK, w);
		h_sleep_ms(20);
		CHECK(h_err_count(VIP_ERROR_RECVQ_EMPTY, b) == 0, "%s: no RECVQ_EMPTY at the target", w);
		CHECK(h_vi_state(a) == VIP_STATE_CONNECTED && h_vi_state(b) == VIP_STATE_CONNECTED,
		      "%s: both still Connected", w);
	} else if (lv == LV_RD) {
		expect_done(a, false, d, ST_WRITE_OK, w);
		expect_broken(a, b, true, w);
	} else {
		/* §10.2 bit 8: "RDMA Write Descriptors with Immediate Data" */
		expect_done(a, false, d,
			    VIP_STATUS_DONE | VIP_STATUS_REMOTE_DESC_ERROR | VIP_STATUS_OP_RDMA_WRITE, w);
		expect_broken(a, b, false, w);
	}
out:
	h_pair_drop(a, b);
}

/* ---- (5) attribute changes ------------------------------------------------------------ */

static void
test_attributes(void)
{
	VIP_MEM_ATTRIBUTES ma = { .Ptag = g.pt, .EnableRdmaWrite = VIP_TRUE, .EnableRdmaRead = VIP_TRUE };
	VIP_MEM_ATTRIBUTES q;
	VIP_VI_ATTRIBUTES va;
	VIP_VI_STATE st;
	VIP_BOOLEAN se, re;
	VIP_VI_HANDLE a = NULL, b = NULL;
	VIP_DESCRIPTOR *d;
	VIP_MEM_HANDLE rmh;
	uint8_t *rbuf = mx_buf, *src;
	const uint32_t n = 3000;

	h_note("attribute changes take effect for later operations (§3.2.2, §9.8.2-9.8.5)");
	memset(rbuf, CANARY, MX_BUF);
	if (!CHECK_RET(VipRegisterMem(g.nic, rbuf, 8 * PAGE, &ma, &rmh), VIP_SUCCESS,
		       "register a target region, RDMA Write and Read enabled"))
		return;

	/* Unreliable: no reconnecting needed */
	h_mem_reset(&g.pm);
	a = vi_new(LV_U, g.pt, false, false);
	b = vi_new(LV_U, g.pt, true, false);
	if (connect_pair(a, b)) {
		src = h_mem_get(&g.pm, n, 64);
		fill_rand(src, n);
		d = rdma1(VIP_CONTROL_OP_RDMAWRITE, rbuf + 10, rmh, src, g.pm.mh, n);
		post_send(a, d);
		expect_done(a, false, d, ST_WRITE_OK, "U write, region enabled");
		CHECK(wait_bytes(rbuf + 10, src, n, WAIT_MS), "U: placed");

		ma.EnableRdmaWrite = VIP_FALSE;
		CHECK_RET(VipSetMemAttributes(g.nic, rbuf, rmh, &ma), VIP_SUCCESS,
			  "VipSetMemAttributes: RDMA Write off");
		CHECK(VipQueryMem(g.nic, rbuf, rmh, &q) == VIP_SUCCESS && !q.EnableRdmaWrite &&
		      q.EnableRdmaRead && q.Ptag == g.pt, "VipQueryMem shows it");
		memset(rbuf, CANARY, 8 * PAGE);
		d = rdma1(VIP_CONTROL_OP_RDMAWRITE, rbuf + 10, rmh, src, g.pm.mh, n);
		post_send(a, d);
		expect_done(a, false, d, ST_WRITE_OK, "U write after disabling");
		/* refused, and not reported on an Unreliable VI (§7.1) */
		h_sleep_ms(10);
		CHECK(all_bytes(rbuf, 8 * PAGE, CANARY), "U: the next write is refused: nothing written");

		ma.EnableRdmaWrite = VIP_TRUE;
		CHECK_RET(VipSetMemAttributes(g.nic, rbuf, rmh, &ma), VIP_SUCCESS,
			  "VipSetMemAttributes: RDMA Write on again");
		d = rdma1(VIP_CONTROL_OP_RDMAWRITE, rbuf + 10, rmh, src, g.pm.mh, n);
		post_send(a, d);
		expect_done(a, false, d, ST_WRITE_OK, "U write after enabling again");
		CHECK(wait_bytes(rbuf + 10, src, n, WAIT_MS) && h_err_count(VIP_ERROR_RDMAW_PROT, a) == 0,
		      "U: placed again, no error");

		ma.Ptag = g.pt2;
		CHECK_RET(VipSetMemAttributes(g.nic, rbuf, rmh, &ma), VIP_SUCCESS,
			  "VipSetMemAttributes: another protection tag");
		memset(rbuf, CANARY, 8 * PAGE);
		d = rdma1(VIP_CONTROL_OP_RDMAWRITE, rbuf + 10, rmh, src, g.pm.mh, n);
		post_send(a, d);
		expect_done(a, false, d, ST_WRITE_OK, "U write into a region of another tag");
		h_sleep_ms(10);
		CHECK(all_bytes(rbuf, 8 * PAGE, CANARY), "U: refused once the tags differ: nothing written");
		ma.Ptag = g.pt;
		CHECK_RET(VipSetMemAttributes(g.nic, rbuf, rmh, &ma), VIP_SUCCESS,
			  "VipSetMemAttributes: the VI's tag again");
		d = rdma1(VIP_CONTROL_OP_RDMAWRITE, rbuf + 10, rmh, src, g.pm.mh, n);
		post_send(a, d);
		expect_done(a, false, d, ST_WRITE_OK, "U write with the tags equal again");
		CHECK(wait_bytes(rbuf + 10, src, n, WAIT_MS), "U: placed");
		/* VipSetViAttributes only while Idle (§9.8.2) */
		if (CHECK_RET(VipQueryVi(b, &st, &va, &se, &re), VIP_SUCCESS, "VipQueryVi")) {
			va.EnableRdmaWrite = VIP_FALSE;
			CHECK_RET(VipSetViAttributes(b, &va), VIP_INVALID_STATE,
				  "VipSetViAttributes on a Connected VI");
		}
	}
	h_pair_drop(a, b);

	/* RR: the region's write bit off: the descriptor says so */
	h_mem_reset(&g.pm);
	a = vi_new(LV_RR, g.pt, false, false);
	b = vi_new(LV_RR, g.pt, true, true);
	if (connect_pair(a, b)) {
		src = h_mem_get(&g.pm, n, 64);
		fill_rand(src, n);
		ma.EnableRdmaWrite = VIP_FALSE;
		CHECK_RET(VipSetMemAttributes(g.nic, rbuf, rmh, &ma), VIP_SUCCESS,
			  "VipSetMemAttributes while connected: RDMA Write off");
		memset(rbuf, CANARY, 8 * PAGE);
		d = rdma1(VIP_CONTROL_OP_RDMAWRITE, rbuf + 10, rmh, src, g.pm.mh, n);
		post_send(a, d);
		refused(LV_RR, false, a, b, d, "RR write after VipSetMemAttributes");
		CHECK(all_bytes(rbuf, 8 * PAGE, CANARY), "RR: nothing written");
		ma.EnableRdmaWrite = VIP_TRUE;
		VipSetMemAttributes(g.nic, rbuf, rmh, &ma);
	}
	h_pair_drop(a, b);

	/* RD: the region's read bit off */
	h_mem_reset(&g.pm);
	a = vi_new(LV_RD, g.pt, false, false);
	b = vi_new(LV_RD, g.pt, true, true);
	if (connect_pair(a, b)) {
		uint8_t *dst = h_mem_get(&g.pm, n + 1, 64);

		fill_rand(rbuf, 8 * PAGE);
		memset(dst, CANARY, n + 1);
		d = rdma1(VIP_CONTROL_OP_RDMAREAD, rbuf + 10, rmh, dst, g.pm.mh, n);
		post_send(a, d);
		expect_done(a, false, d, ST_READ_OK, "RD read, region enabled");
		CHECK(memcmp(dst, rbuf + 10, n) == 0, "RD: read");
		ma.EnableRdmaRead = VIP_FALSE;
		CHECK_RET(VipSetMemAttributes(g.nic, rbuf, rmh, &ma), VIP_SUCCESS,
			  "VipSetMemAttributes: RDMA Read off");
		memset(dst, CANARY, n + 1);
		d = rdma1(VIP_CONTROL_OP_RDMAREAD, rbuf + 10, rmh, dst, g.pm.mh, n);
		post_send(a, d);
		refused(LV_RD, true, a, b, d, "RD read after VipSetMemAttributes");
		CHECK(all_bytes(dst, n + 1, CANARY), "RD: nothing read");
		ma.EnableRdmaRead = VIP_TRUE;
		VipSetMemAttributes(g.nic, rbuf, rmh, &ma);
	}
	h_pair_drop(a, b);

	/* VipSetViAttributes on an Idle VI, then connect */
	h_mem_reset(&g.pm);
	a = vi_new(LV_RD, g.pt, false, false);
	b = vi_new(LV_RD, g.pt, false, true);
	if (a != NULL && b != NULL &&
	    CHECK_RET(VipQueryVi(b, &st, &va, &se, &re), VIP_SUCCESS, "VipQueryVi (Idle)")) {
		va.EnableRdmaRead = VIP_FALSE;
		va.EnableRdmaWrite = VIP_TRUE;
		CHECK_RET(VipSetViAttributes(b, &va), VIP_SUCCESS,
			  "VipSetViAttributes while Idle: RDMA Read off, RDMA Write on");
		CHECK(VipQueryVi(b, &st, &va, &se, &re) == VIP_SUCCESS && !va.EnableRdmaRead &&
		      va.EnableRdmaWrite, "VipQueryVi shows it");
		if (connect_pair(a, b)) {
			uint8_t *dst = h_mem_get(&g.pm, n + 1, 64);

			src = h_mem_get(&g.pm, n, 64);
			fill_rand(src, n);
			memset(rbuf, CANARY, 8 * PAGE);
			d = rdma1(VIP_CONTROL_OP_RDMAWRITE, rbuf + 10, rmh, src, g.pm.mh, n);
			post_send(a, d);
			expect_done(a, false, d, ST_WRITE_OK, "RD write: the VI's write enabled since");
			CHECK(wait_bytes(rbuf + 10, src, n, WAIT_MS), "RD: placed");
			memset(dst, CANARY, n + 1);
			d = rdma1(VIP_CONTROL_OP_RDMAREAD, rbuf + 10, rmh, dst, g.pm.mh, n);
			post_send(a, d);
			refused(LV_RD, true, a, b, d, "RD read: the VI's read disabled since");
			CHECK(all_bytes(dst, n + 1, CANARY), "RD: nothing read");
		}
	}
	h_pair_drop(a, b);
	CHECK_RET(VipDeregisterMem(g.nic, rbuf, rmh), VIP_SUCCESS, "deregister the target region");
}

/* ---- (6) deregistered regions -------------------------------------------------------- */

static void
test_deregistered(void)
{
	VIP_MEM_ATTRIBUTES ma = { .Ptag = g.pt };
	VIP_VI_HANDLE a = NULL, b = NULL;
	VIP_DESCRIPTOR *d;
	VIP_MEM_HANDLE lmh;
	uint8_t *lbuf = aligned_alloc(PAGE, 2 * PAGE);
	static const VIP_RELIABILITY_LEVEL lvs[] = { LV_U, LV_RD, LV_RR };
	unsigned l;

	h_note("local regions deregistered before posting (§3.2.1, §10.2 bit 2); the target's: "
	       "see the target checks");
	if (lbuf == NULL)
		return;
	for (l = 0; l < 3; l++) {
		VIP_RELIABILITY_LEVEL lv = lvs[l];
		char w[128];

		h_mem_reset(&g.pm);
		a = vi_new(lv, g.pt, false, false);
		b = vi_new(lv, g.pt, true, lv != LV_U);
		if (!connect_pair(a, b)) {
			h_pair_drop(a, b);
			continue;
		}
		fill_rand(lbuf, 2 * PAGE);
		memset(g.th.base, CANARY, 2 * PAGE);
		if (VipRegisterMem(g.nic, lbuf, 2 * PAGE, &ma, &lmh) != VIP_SUCCESS ||
		    VipDeregisterMem(g.nic, lbuf, lmh) != VIP_SUCCESS) {
			CHECK(0, "register and deregister a local buffer");
			h_pair_drop(a, b);
			continue;
		}
		d = rdma1(VIP_CONTROL_OP_RDMAWRITE, g.th.base, g.th.mh, lbuf, lmh, 2 * PAGE);
		post_send(a, d);
		snprintf(w, sizeof(w), "%s write from a deregistered local region", lv_name(lv));
		expect_done(a, false, d,
			    VIP_STATUS_DONE | VIP_STATUS_PROTECTION_ERROR | VIP_STATUS_OP_RDMA_WRITE, w);
		h_sleep_ms(10);
		CHECK(all_bytes(g.th.base, 2 * PAGE, CANARY), "%s: nothing written", w);
		if (lv != LV_U) {
			memset(lbuf, CANARY, 2 * PAGE);
			d = rdma1(VIP_CONTROL_OP_RDMAREAD, g.th.base, g.th.mh, lbuf, lmh, 2 * PAGE);
			if (VipPostSend(a, d, g.pm.mh) == VIP_SUCCESS) {
				VIP_DESCRIPTOR *out = next_done(a, false, WAIT_MS, NULL);

				snprintf(w, sizeof(w), "%s read into a deregistered local region",
					 lv_name(lv));
				CHECK(out == d && (out->CS.Status & (VIP_STATUS_DONE |
								     VIP_STATUS_PROTECTION_ERROR |
								     VIP_STATUS_OP_MASK)) ==
							  (VIP_STATUS_DONE | VIP_STATUS_PROTECTION_ERROR |
							   VIP_STATUS_OP_RDMA_READ),
				      "%s: DONE | PROTECTION_ERROR | OP_RDMA_READ (Status %#x; "
				      "VI %s)", w, out ? out->CS.Status : 0,
				      h_state_name(h_vi_state(a)));
				CHECK(all_bytes(lbuf, 2 * PAGE, CANARY), "%s: nothing read", w);
			} else {
				CHECK(0, "post a read");
			}
		}
		h_pair_drop(a, b);
	}
	free(lbuf);
}

/* ---- the other process ------------------------------------------------------------------ */

static pid_t owner_pid;
static int owner_wfd = -1;

/* A process with a region of its own, RDMA enabled; it checks at the end
 * that nobody wrote into it. */
static void
owner_main(int wfd, int rfd)
{
	VIP_NIC_HANDLE nic;
	VIP_PROTECTION_HANDLE pt;
	VIP_MEM_ATTRIBUTES ma;
	VIP_MEM_HANDLE mh;
	uint8_t *buf = aligned_alloc(PAGE, 2 * PAGE);
	struct { uint64_t addr; uint32_t handle; } msg = { 0, 0 };
	char c;

	if (buf == NULL || !CHECK(VipOpenNic("via0", &nic) == VIP_SUCCESS &&
				  VipCreatePtag(nic, &pt) == VIP_SUCCESS, "open via0"))
		goto tell;
	memset(buf, 0x5a, 2 * PAGE);
	ma.Ptag = pt;
	ma.EnableRdmaWrite = VIP_TRUE;
	ma.EnableRdmaRead = VIP_TRUE;
	if (!CHECK_RET(VipRegisterMem(nic, buf, 2 * PAGE, &ma, &mh), VIP_SUCCESS,
		       "register a region, RDMA enabled"))
		goto tell;
	msg.addr = (uint64_t)(uintptr_t)buf;
	msg.handle = mh;
tell:
	if (write(wfd, &msg, sizeof(msg)) != (ssize_t)sizeof(msg))
		_exit(1);
	if (msg.handle == 0)
		return;
	while (read(rfd, &c, 1) < 0)
		;
	CHECK(all_bytes(buf, 2 * PAGE, 0x5a), "nobody wrote into this process's region");
	CHECK_RET(VipDeregisterMem(nic, buf, mh), VIP_SUCCESS, "deregister");
	CHECK_RET(VipCloseNic(nic), VIP_SUCCESS, "close");
}

/* Before this process opens a NIC: the child must not inherit one. */
static void
owner_start(void)
{
	int c2p[2], p2c[2];
	pid_t parent = getpid();
	struct pollfd pfd;

	if (pipe(c2p) != 0 || pipe(p2c) != 0) {
		CHECK(0, "pipes");
		return;
	}
	owner_pid = fork();
	if (owner_pid < 0) {
		CHECK(0, "fork");
		return;
	}
	if (owner_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		signal(SIGALRM, SIG_DFL);
		alarm(100);
		close(c2p[0]);
		close(p2c[1]);
		h_set_child("owner");
		owner_main(c2p[1], p2c[0]);
		_exit(h_failures() == 0 ? 0 : 1);
	}
	close(c2p[1]);
	close(p2c[0]);
	owner_wfd = p2c[1];
	pfd.fd = c2p[0];
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 10000) == 1 &&
	    read(c2p[0], &foreign, sizeof(foreign)) == (ssize_t)sizeof(foreign) && foreign.handle != 0)
		h_note("another process registered %#" PRIx64 " with handle %#x", foreign.addr,
		       foreign.handle);
	else
		CHECK(0, "the other process registered its region");
	close(c2p[0]);
}

static void
owner_stop(void)
{
	int st = -1;
	uint64_t end = h_now_ms() + 10000;

	if (owner_pid <= 0)
		return;
	if (owner_wfd >= 0) {
		(void)!write(owner_wfd, "x", 1);
		close(owner_wfd);
	}
	while (h_now_ms() < end && waitpid(owner_pid, &st, WNOHANG) == 0)
		h_sleep_ms(10);
	if (h_now_ms() >= end) {
		kill(owner_pid, SIGKILL);
		waitpid(owner_pid, &st, 0);
	}
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the other process passed its checks (status %#x)", st);
}

/* ---- sessions --------------------------------------------------------------------------- */

static bool
mem_open(struct h_mem *m, const char *name, size_t len, bool provider, bool rdma)
{
	VIP_MEM_ATTRIBUTES ma = { .Ptag = g.pt };

	memset(m, 0, sizeof(*m));
	m->name = name;
	m->len = len;
	m->provider = provider;
	ma.EnableRdmaWrite = rdma ? VIP_TRUE : VIP_FALSE;
	ma.EnableRdmaRead = rdma ? VIP_TRUE : VIP_FALSE;
	if (provider) {
		if (h_alloc(g.nic, len, (void **)&m->base) != VIP_SUCCESS)
			return CHECK(0, "%zu KiB of provider memory (%s)", len >> 10, name);
	} else {
		m->base = aligned_alloc(PAGE, len);
		if (m->base == NULL)
			return CHECK(0, "malloc %s", name);
	}
	return CHECK_RET(VipRegisterMem(g.nic, m->base, len, &ma, &m->mh), VIP_SUCCESS,
			 "register %s (%zu KiB, RDMA %s)", name, len >> 10, rdma ? "enabled" : "off");
}

static void
mem_close(struct h_mem *m)
{
	if (m->base == NULL)
		return;
	CHECK_RET(VipDeregisterMem(g.nic, m->base, m->mh), VIP_SUCCESS, "deregister %s", m->name);
	if (m->provider)
		CHECK_RET(h_free(g.nic, m->base), VIP_SUCCESS, "free %s", m->name);
	else
		free(m->base);
	m->base = NULL;
}

static bool
session_open(const struct viad_proc *v)
{
	memset(&g, 0, sizeof(g));
	viad_use(v);
	if (!CHECK(VipOpenNic("via0", &g.nic) == VIP_SUCCESS &&
		   VipQueryNic(g.nic, &g.na) == VIP_SUCCESS &&
		   VipCreatePtag(g.nic, &g.pt) == VIP_SUCCESS &&
		   VipCreatePtag(g.nic, &g.pt2) == VIP_SUCCESS,
		   "open via0 of viad '%s', two protection tags", v->name))
		return false;
	g.mtu = (uint32_t)g.na.MaxTransferSize;
	CHECK(g.na.RDMAReadSupport, "RDMAReadSupport is TRUE");
	CHECK_RET(VipErrorCallback(g.nic, NULL, h_err_handler), VIP_SUCCESS, "error callback");
	return mem_open(&g.pm, "provider", 16u << 20, true, false) &&
	       mem_open(&g.hm, "heap", 16u << 20, false, false) &&
	       mem_open(&g.th, "heap target", T_LEN, false, true) &&
	       mem_open(&g.tp, "provider target", T_LEN, true, true);
}

static void
session_close(void)
{
	mem_close(&g.pm);
	mem_close(&g.hm);
	mem_close(&g.th);
	mem_close(&g.tp);
	CHECK_RET(VipCloseNic(g.nic), VIP_SUCCESS, "close via0");
}

/* ---- through a NIC that holds every frame 100 ms ------------------------------------ */

#define DELAY_MS 100

/* viad's control thread may be stuck for good (see delayed_source_gone) */
static bool viad_wedged;

/* A fresh RD pair, target all enabled. */
static bool
rd_pair(VIP_VI_HANDLE *a, VIP_VI_HANDLE *b)
{
	h_mem_reset(&g.pm);
	*a = vi_new(LV_RD, g.pt, false, false);
	*b = vi_new(LV_RD, g.pt, true, true);
	return connect_pair(*a, *b);
}

/* A send posted after a read is dequeued after it (§6.3.1.1). */
static void
delayed_send_after_read(void)
{
	VIP_VI_HANDLE a = NULL, b = NULL;
	VIP_DESCRIPTOR *rd, *s, *r, *out;
	uint8_t *dst, *src, *x = g.th.base + PAGE - 500;
	const uint32_t n = 2000;
	uint64_t t0, t1;
	VIP_RETURN rc;

	if (!rd_pair(&a, &b))
		goto out;
	dst = h_mem_get(&g.pm, n + 1, 64);
	src = h_mem_get(&g.pm, 64, 64);
	fill_rand(x, n);
	memset(dst, CANARY, n + 1);
	r = recv_new(64);
	post_recv(b, r);
	rd = rdma1(VIP_CONTROL_OP_RDMAREAD, x, g.th.mh, dst, g.pm.mh, n);
	s = send_new(src, 64, true, 9);
	t0 = h_now_ms();
	post_send(a, rd);
	post_send(a, s);
	h_sleep_ms(DELAY_MS / 2);
	CHECK_RET(VipSendDone(a, &out), VIP_NOT_DONE,
		  "a send posted after an outstanding read is not dequeued before it (%llu ms)",
		  (unsigned long long)(h_now_ms() - t0));
	out = next_done(a, false, WAIT_MS, &rc);
	t1 = h_now_ms() - t0;
	CHECK(out == rd && out->CS.Status == ST_READ_OK && memcmp(dst, x, n) == 0 &&
	      t1 >= DELAY_MS * 3 / 2,
	      "the read completes first, after the round trip (%llu ms, %s, Status %#x)",
	      (unsigned long long)t1, VipDpdkReturnString(rc), out ? out->CS.Status : 0);
	expect_done(a, false, s, ST_SEND_OK, "then the send");
	expect_done(b, true, r, ST_RECV_OK | VIP_STATUS_IMMEDIATE, "the send arrives");
out:
	h_pair_drop(a, b);
}

/* QFENCE (§6.3.1.2): the fenced write is not even sent while the read is out. */
static void
delayed_fence(void)
{
	VIP_VI_HANDLE a = NULL, b = NULL;
	VIP_DESCRIPTOR *rd, *w;
	uint8_t *dst, *src, *oldc, *x = g.th.base + 3 * PAGE - 500;
	const uint32_t n = 2000;
	uint64_t t0, t1;
	bool placed;

	if (!rd_pair(&a, &b))
		goto out;
	dst = h_mem_get(&g.pm, n + 1, 64);
	src = h_mem_get(&g.pm, n, 64);
	oldc = h_mem_get(&g.pm, n, 64);
	fill_rand(x, n);
	memcpy(oldc, x, n);
	fill_rand(src, n);
	memset(dst, CANARY, n + 1);
	rd = rdma1(VIP_CONTROL_OP_RDMAREAD, x, g.th.mh, dst, g.pm.mh, n);
	w = rdma1(VIP_CONTROL_OP_RDMAWRITE | VIP_CONTROL_QFENCE, x, g.th.mh, src, g.pm.mh, n);
	t0 = h_now_ms();
	post_send(a, rd);
	post_send(a, w);
	/* unfenced, the write would arrive with the read request (~100 ms) */
	h_sleep_ms(DELAY_MS * 3 / 2 + 20);
	CHECK(memcmp(x, oldc, n) == 0,
	      "QFENCE: %llu ms after posting the fenced write the target is untouched",
	      (unsigned long long)(h_now_ms() - t0));
	if (!expect_done(a, false, rd, ST_READ_OK, "the read before the fenced write"))
		goto out;
	CHECK(memcmp(dst, oldc, n) == 0, "QFENCE: the read returned the old content");
	if (!expect_done(a, false, w, ST_WRITE_OK, "the fenced write"))
		goto out;
	placed = wait_bytes(x, src, n, WAIT_MS);
	t1 = h_now_ms() - t0;
	CHECK(placed && t1 >= 2 * DELAY_MS + DELAY_MS / 2,
	      "QFENCE: the write is placed only after the read's round trip plus its own way "
	      "(%llu ms)", (unsigned long long)t1);
out:
	h_pair_drop(a, b);
}

/* The local scatter list deregistered while the read is outstanding. */
static void
delayed_scatter_gone(void)
{
	VIP_MEM_ATTRIBUTES ma = { .Ptag = g.pt };
	VIP_VI_HANDLE a = NULL, b = NULL;
	VIP_DESCRIPTOR *rd, *out;
	uint8_t *z = aligned_alloc(PAGE, 2 * PAGE), *x = g.th.base + 5 * PAGE;
	VIP_MEM_HANDLE zmh;
	const uint32_t n = 2000;
	uint64_t t0, t1;
	VIP_RETURN rc;

	if (z == NULL || !rd_pair(&a, &b))
		goto out;
	if (!CHECK_RET(VipRegisterMem(g.nic, z, 2 * PAGE, &ma, &zmh), VIP_SUCCESS,
		       "register a scatter buffer"))
		goto out;
	memset(z, CANARY, 2 * PAGE);
	fill_rand(x, n);
	rd = rdma1(VIP_CONTROL_OP_RDMAREAD, x, g.th.mh, z + 100, zmh, n);
	t0 = h_now_ms();
	post_send(a, rd);
	/* issued at once; its answer comes after ~200 ms */
	h_sleep_ms(30);
	CHECK_RET(VipDeregisterMem(g.nic, z, zmh), VIP_SUCCESS,
		  "deregister it while the read is outstanding (%llu ms)",
		  (unsigned long long)(h_now_ms() - t0));
	out = next_done(a, false, WAIT_MS, &rc);
	t1 = h_now_ms() - t0;
	CHECK(out == rd && (out->CS.Status & (VIP_STATUS_DONE | VIP_STATUS_ERROR_MASK |
					      VIP_STATUS_OP_MASK)) ==
				   (VIP_STATUS_DONE | VIP_STATUS_PROTECTION_ERROR | VIP_STATUS_OP_RDMA_READ),
	      "the read completes with PROTECTION_ERROR when its answer finds the region gone "
	      "(§3.2.1) (%s, Status %#x, after %llu ms; VI %s)", VipDpdkReturnString(rc),
	      out ? out->CS.Status : 0, (unsigned long long)t1, h_state_name(h_vi_state(a)));
	CHECK(t1 >= DELAY_MS * 3 / 2,
	      "it was issued before the deregistration: completed at the answer (%llu ms)",
	      (unsigned long long)t1);
	CHECK(all_bytes(z, 2 * PAGE, CANARY), "nothing placed in the deregistered buffer");
out:
	free(z);
	h_pair_drop(a, b);
}

/*
 * More reads than may be outstanding (16 per VI): the first 16 go at once
 * and complete after one round trip, the others after a second one; all
 * complete in order with their data (§6.3.1.1).
 */
static void
delayed_read_cap(void)
{
	enum { NR = 20 };
	VIP_VI_HANDLE a = NULL, b = NULL;
	VIP_DESCRIPTOR *rd[NR], *out;
	uint8_t *dst[NR];
	uint64_t t0, at[NR] = { 0 };
	unsigned k, good = 0, early = 0, late = 0;
	const uint32_t n = 1000;

	if (!rd_pair(&a, &b))
		goto out;
	/* past the connection's first round trip: each end sends nothing
	 * before it has heard from the other (wire-format.md, 11.7) */
	h_sleep_ms(3 * DELAY_MS);
	fill_rand(g.th.base, NR * n);
	for (k = 0; k < NR; k++) {
		dst[k] = h_mem_get(&g.pm, n + 1, 64);
		memset(dst[k], CANARY, n + 1);
		rd[k] = rdma1(VIP_CONTROL_OP_RDMAREAD, g.th.base + k * n, g.th.mh, dst[k], g.pm.mh,
			      n);
	}
	t0 = h_now_ms();
	for (k = 0; k < NR; k++)
		post_send(a, rd[k]);
	for (k = 0; k < NR; k++) {
		out = next_done(a, false, WAIT_MS, NULL);
		at[k] = h_now_ms() - t0;
		if (out == NULL)
			break;
		good += out == rd[k] && out->CS.Status == ST_READ_OK &&
			memcmp(dst[k], g.th.base + k * n, n) == 0 && dst[k][n] == CANARY;
		if (k < 16)
			early += at[k] < 3 * DELAY_MS;
		else
			late += at[k] >= 3 * DELAY_MS;
	}
	CHECK(good == NR, "%u reads posted at once complete in order with their data (%u)", NR,
	      good);
	CHECK(early == 16 && late == NR - 16,
	      "16 outstanding at most: the first 16 after one round trip (%llu .. %llu ms), the "
	      "other %u after a second one (%llu .. %llu ms)", (unsigned long long)at[0],
	      (unsigned long long)at[15], NR - 16, (unsigned long long)at[16],
	      (unsigned long long)at[NR - 1]);
out:
	h_pair_drop(a, b);
}

/* VipDisconnect while a read is outstanding: it comes back (§5.4, §9.4.5). */
static void
delayed_disconnect(void)
{
	VIP_VI_HANDLE a = NULL, b = NULL;
	VIP_DESCRIPTOR *rd, *s, *out;
	uint8_t *dst;
	const uint32_t n = 2000;
	VIP_RETURN rc;

	if (!rd_pair(&a, &b))
		goto out;
	dst = h_mem_get(&g.pm, n, 64);
	rd = rdma1(VIP_CONTROL_OP_RDMAREAD, g.th.base, g.th.mh, dst, g.pm.mh, n);
	s = send_new(dst, 0, false, 0);
	post_send(a, rd);
	post_send(a, s);
	h_sleep_ms(30);
	CHECK_RET(VipSendDone(a, &out), VIP_NOT_DONE, "the read is outstanding");
	CHECK_RET(VipDisconnect(a), VIP_SUCCESS, "VipDisconnect");
	out = next_done(a, false, 1000, &rc);
	CHECK(out == rd && (out->CS.Status & VIP_STATUS_DONE) &&
	      (out->CS.Status & VIP_STATUS_ERROR_MASK) &&
	      (out->CS.Status & VIP_STATUS_OP_MASK) == VIP_STATUS_OP_RDMA_READ,
	      "the outstanding read completes in error (%s, Status %#x)", VipDpdkReturnString(rc),
	      out ? out->CS.Status : 0);
	out = next_done(a, false, 1000, &rc);
	CHECK(out == s && (out->CS.Status & VIP_STATUS_DONE),
	      "and the send held behind it comes back too (%s, Status %#x)",
	      VipDpdkReturnString(rc), out ? out->CS.Status : 0);
out:
	h_pair_drop(a, b);
}

/*
 * The read's source deregistered between its request and its answer
 * (§3.2.1: "a protection violation ... at the time that the VI Provider
 * attempts the memory reference"; §10.2 bit 7: "the source of the RDMA Read
 * ... had a protection error detected at the remote node"). The target
 * answers late: its own MaxTransferSize sends fill its window until their
 * acknowledgements are back (~200 ms); the request is there at ~100 ms, the
 * region goes at ~150 ms. Two more sends wait in the target's send queue
 * when the connection breaks.
 */
static void
delayed_source_gone(void)
{
	VIP_MEM_ATTRIBUTES ya = { .Ptag = g.pt, .EnableRdmaWrite = VIP_TRUE,
				  .EnableRdmaRead = VIP_TRUE };
	VIP_VI_HANDLE a = NULL, b = NULL;
	VIP_DESCRIPTOR *rd, *out;
	uint8_t *y = aligned_alloc(PAGE, 2 * PAGE), *big, *dst;
	VIP_MEM_HANDLE ymh;
	const uint32_t n = 2000;
	const unsigned nsend = 10;
	unsigned k, flushed = 0, sent = 0, other = 0;
	uint64_t t0, t1;
	VIP_RETURN rc;

	h_note("the source of a read deregistered after its request arrived, before the answer");
	if (y == NULL || !rd_pair(&a, &b))
		goto out;
	big = h_mem_get(&g.pm, g.mtu, 64);
	dst = h_mem_get(&g.pm, n + 1, 64);
	memset(dst, CANARY, n + 1);
	if (!CHECK_RET(VipRegisterMem(g.nic, y, 2 * PAGE, &ya, &ymh), VIP_SUCCESS,
		       "register the read's source"))
		goto out;
	fill_rand(y, 2 * PAGE);
	for (k = 0; k < nsend; k++)
		post_recv(a, recv_new(g.mtu));
	t0 = h_now_ms();
	for (k = 0; k < nsend; k++)
		post_send(b, send_new(big, g.mtu, false, 0));
	rd = rdma1(VIP_CONTROL_OP_RDMAREAD, y + 100, ymh, dst, g.pm.mh, n);
	post_send(a, rd);
	h_sleep_ms(DELAY_MS * 3 / 2);
	CHECK_RET(VipDeregisterMem(g.nic, y, ymh), VIP_SUCCESS, "deregister it (%llu ms)",
		  (unsigned long long)(h_now_ms() - t0));
	out = next_done(a, false, WAIT_MS, &rc);
	t1 = h_now_ms() - t0;
	if (out == rd && out->CS.Status == ST_READ_OK) {
		h_note("the answer left before the deregistration (%llu ms): case not reached, "
		       "skipped", (unsigned long long)t1);
		goto out;
	}
	CHECK(out == rd && (out->CS.Status & VIP_STATUS_DONE) &&
	      (out->CS.Status & VIP_STATUS_ERROR_MASK),
	      "the read completes in error (%s, Status %#x, %llu ms)", VipDpdkReturnString(rc),
	      out ? out->CS.Status : 0, (unsigned long long)t1);
	CHECK(out == rd && (out->CS.Status & VIP_STATUS_RDMA_PROT_ERROR),
	      "with RDMA_PROT_ERROR: a protection error at the remote node (§3.2.1, §10.2 bit 7) "
	      "(Status %#x)", out ? out->CS.Status : 0);
	CHECK(all_bytes(dst, n + 1, CANARY), "nothing placed");
	CHECK(h_state_wait(b, VIP_STATE_ERROR, WAIT_MS) == VIP_STATE_ERROR,
	      "the target is in Error");
	/* the target's sends: each comes back once, sent or flushed */
	for (k = 0; k < nsend; k++) {
		out = next_done(b, false, 1000, NULL);
		if (out == NULL)
			break;
		if (out->CS.Status == ST_SEND_OK)
			sent++;
		else if (out->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR)
			flushed++;
		else if (other++ == 0)
			h_note("target send %u: Status %#x", k, out->CS.Status);
	}
	h_sleep_ms(50);
	CHECK(sent + flushed == nsend && other == 0,
	      "the target's %u sends come back once each: %u sent, %u flushed, %u other", nsend,
	      sent, flushed, other);
	/*
	 * A descriptor that was never posted shows up as POST_DESC: the send
	 * queue's consumer index went past the producer's. Every later flush
	 * of that queue (VipDisconnect, VipDestroyVi, VipCloseNic) then spins
	 * viad's control thread over ~2^32 phantom entries.
	 */
	if (!CHECK(h_err_count(VIP_ERROR_POST_DESC, b) == 0 && VipSendDone(b, &out) == VIP_NOT_DONE,
		   "no phantom descriptor on the target's send queue after the broken "
		   "connection flushed it (%u POST_DESC)", h_err_count(VIP_ERROR_POST_DESC, b))) {
		h_note("viad's send queue of the target is corrupt: not disconnecting it (viad "
		       "would spin); viad is killed instead");
		viad_wedged = true;
		return;
	}
out:
	free(y);
	h_pair_drop(a, b);
}

static void
test_delayed(void)
{
	h_note("RD through a NIC that holds every frame %u ms: a read stays outstanding ~%u ms",
	       DELAY_MS, 2 * DELAY_MS);
	delayed_send_after_read();
	delayed_fence();
	delayed_scatter_gone();
	delayed_disconnect();
	delayed_read_cap();
	delayed_source_gone();   /* last: may leave viad unusable */
}

/* VIA_RDMA_ONLY=a,b,...: run only those parts (matrix, targets, format,
 * integrity, order, immediate, attributes, deregistered, delayed) */
static bool
want(const char *part)
{
	const char *only = getenv("VIA_RDMA_ONLY");
	size_t n = strlen(part);

	if (only == NULL || *only == '\0')
		return true;
	while ((only = strstr(only, part)) != NULL) {
		if (only[n] == '\0' || only[n] == ',')
			return true;
		only += n;
	}
	return false;
}

int
main(int argc, char **argv)
{
	char seedset[64];
	const char *delay_sets[] = {
		"port.via0.glue=faulty", "port.via0.tx_delay=100%", "port.via0.delay_us=100000",
		/* no retransmission before an acknowledgement can be back */
		"viad.rel_rto_min_us=400000", "viad.rel_rto_max_us=1000000", seedset, NULL,
	};
	static const VIP_RELIABILITY_LEVEL lvs[] = { LV_U, LV_RD, LV_RR };
	struct viad_proc v, vd;
	VIP_MEM_ATTRIBUTES ma;
	uint64_t t0;
	unsigned i, t, w, r;

	h_init(argc, argv, 110);
	rng = h_seed();
	snprintf(seedset, sizeof(seedset), "port.via0.seed=%" PRIu64, rng);
	if (viad_start(&v, "rdma", NULL) != 0)
		return h_finish();
	t0 = h_now_ms();
	owner_start();
	if (!session_open(&v)) {
		owner_stop();
		viad_stop(&v);
		return h_finish();
	}
	h_note("via0: MaxTransferSize %u, MaxSegmentsPerDesc %lu, NativeMTU %lu", g.mtu,
	       (unsigned long)g.na.MaxSegmentsPerDesc, (unsigned long)g.na.NativeMTU);

	/* the matrix's target buffer, registered once per attribute combination */
	mx_buf = aligned_alloc(PAGE, MX_BUF);
	for (t = 0; t < 2 && mx_buf != NULL; t++) {
		for (w = 0; w < 2; w++) {
			for (r = 0; r < 2; r++) {
				ma.Ptag = t ? g.pt2 : g.pt;
				ma.EnableRdmaWrite = w ? VIP_TRUE : VIP_FALSE;
				ma.EnableRdmaRead = r ? VIP_TRUE : VIP_FALSE;
				if (VipRegisterMem(g.nic, mx_buf, MX_BUF, &ma, &mx_mh[t][w][r]) !=
				    VIP_SUCCESS)
					CHECK(0, "register the matrix buffer (tag %u, write %u, read %u)",
					      t, w, r);
			}
		}
	}
	if (mx_buf != NULL && h_failures() == 0) {
		if (want("matrix"))
			test_matrix();
		if (want("targets"))
			test_target_checks();
		owner_stop();
		if (want("format"))
			test_format();
		for (i = 0; i < 3 && want("integrity"); i++)
			test_integrity(lvs[i], lvs[i] == LV_U ? 40 : 80);
		if (want("order")) {
			test_order(LV_RD);
			test_order(LV_RR);
			test_rr_failed_read();
		}
		for (i = 0; i < 3 && want("immediate"); i++)
			test_immediate(lvs[i]);
		if (want("attributes"))
			test_attributes();
		if (want("deregistered"))
			test_deregistered();
	} else {
		owner_stop();
	}
	for (t = 0; t < 2 && mx_buf != NULL; t++)
		for (w = 0; w < 2; w++)
			for (r = 0; r < 2; r++)
				VipDeregisterMem(g.nic, mx_buf, mx_mh[t][w][r]);
	free(mx_buf);
	session_close();
	CHECK(viad_alive(&v), "viad 'rdma' is still running");
	viad_stop(&v);
	h_note("loopback part took %llu ms", (unsigned long long)(h_now_ms() - t0));

	t0 = h_now_ms();
	if (want("delayed") && viad_start(&vd, "delay", delay_sets) == 0) {
		if (session_open(&vd)) {
			test_delayed();
			if (viad_wedged) {
				uint64_t tk = h_now_ms();

				viad_kill(&vd);
				VipCloseNic(g.nic);
				CHECK(h_now_ms() - tk < 5000, "VipCloseNic returns once viad is gone");
			} else {
				session_close();
			}
		}
		if (!viad_wedged) {
			CHECK(viad_alive(&vd), "viad 'delay' is still running");
			viad_stop(&vd);
		}
	}
	h_note("delayed part took %llu ms", (unsigned long long)(h_now_ms() - t0));
	return h_finish();
}
