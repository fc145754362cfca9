/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Zero-copy transmit (issue 5; docs/design.md, "Zero-copy transmit"): viad
 * frames data in provider memory (VipDpdkAllocMem), and in heap memory
 * registered in place (issue 12), without copying it, the frames pointing
 * into the client's pages until the port has taken them.
 *
 *  - FramesTxZeroCopy counts those frames, and only those: messages below
 *    the threshold (1 KiB) are copied.
 *  - VIA §6.1: ownership of a descriptor, and so of its buffers, returns to
 *    the consumer when it completes. Through a NIC that holds every frame
 *    200 ms, a send or RDMA Write from provider memory is not complete
 *    before the frames are gone, and a buffer rewritten at once after its
 *    completion does not change what arrives, at every reliability level.
 *  - A descriptor viad cannot complete (POST_DESC) keeps its place behind
 *    such a held send.
 *  - An allocation freed (VipDpdkFreeMem) while frames still point into it
 *    stays mapped in viad until they are gone: the call succeeds at once,
 *    viad lives, the data arrives intact. A session closed, and viad
 *    stopped, while its port holds such frames: viad exits cleanly.
 *
 * Two viads: "plain" (the loopback NIC: frames stay in memory) and "delay"
 * (a faulty NIC that holds every transmitted frame 200 ms).
 *
 * Usage: it_zcopy PATH/TO/viad
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

#define MSG       (48u * 1024u)   /* several frames, each far above the threshold */
#define BIG       (1024u * 1024u) /* many turns of framing (limits.max_transfer_size) */
#define MEM_LEN   (8u << 20)
#define HOLD_MS   200             /* the delay NIC's hold */

struct sess {
	struct viad_proc *v;
	VIP_NIC_HANDLE nic;
	VIP_PROTECTION_HANDLE pt;
	struct h_mem prov, heap;
};

static uint64_t rng;

static bool
sess_open(struct sess *x, struct viad_proc *v)
{
	VIP_MEM_ATTRIBUTES ma;

	memset(x, 0, sizeof(*x));
	x->v = v;
	viad_use(v);
	if (!CHECK_RET(VipOpenNic("via0", &x->nic), VIP_SUCCESS, "VipOpenNic via0") ||
	    !CHECK_RET(VipErrorCallback(x->nic, NULL, h_err_handler), VIP_SUCCESS,
		       "VipErrorCallback") ||
	    !CHECK_RET(VipCreatePtag(x->nic, &x->pt), VIP_SUCCESS, "VipCreatePtag"))
		return false;
	memset(&ma, 0, sizeof(ma));
	ma.Ptag = x->pt;
	ma.EnableRdmaWrite = VIP_TRUE;
	return h_mem_open(&x->prov, x->nic, &ma, "provider", MEM_LEN, true) &&
	       h_mem_open(&x->heap, x->nic, &ma, "heap", MEM_LEN, false);
}

static void
sess_close(struct sess *x)
{
	h_mem_close(&x->prov, x->nic);
	h_mem_close(&x->heap, x->nic);
	VipDestroyPtag(x->nic, x->pt);
	VipCloseNic(x->nic);
}

static VIP_VI_HANDLE
vi_new(struct sess *x, VIP_RELIABILITY_LEVEL lv, uint32_t max_transfer)
{
	VIP_VI_ATTRIBUTES a;
	VIP_VI_HANDLE vi = NULL;

	h_vi_attrs(&a, x->pt);
	a.ReliabilityLevel = lv;
	a.MaxTransferSize = max_transfer;
	a.EnableRdmaWrite = VIP_TRUE;
	CHECK_RET(VipCreateVi(x->nic, &a, NULL, NULL, &vi), VIP_SUCCESS, "VipCreateVi");
	return vi;
}

/* Two VIs of @p lv connected to each other as 'TAG'; false (and none left) if that failed. */
static bool
pair_open(struct sess *x, VIP_RELIABILITY_LEVEL lv, uint32_t max_transfer, const char *tag,
	  VIP_VI_HANDLE *a, VIP_VI_HANDLE *b)
{
	*a = vi_new(x, lv, max_transfer);
	*b = vi_new(x, lv, max_transfer);
	if (h_connect(x->nic, *a, x->nic, *b, tag, 10000))
		return true;
	h_pair_drop(*a, *b);
	return false;
}

static void
fill(uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)h_rand(&rng);
}

static VIP_DESCRIPTOR *
wait_done(VIP_VI_HANDLE vi, bool recv, unsigned ms)
{
	VIP_DESCRIPTOR *d = NULL;

	if (recv)
		VipRecvWait(vi, ms, &d);
	else
		VipSendWait(vi, ms, &d);
	return d;
}

static uint64_t
zc_frames(VIP_NIC_HANDLE nic)
{
	VIP_DPDK_COUNTERS c;

	h_counters(nic, &c);
	return c.FramesTxZeroCopy;
}

/* One message of @p len bytes at @p buf, a->b; @return whether it arrived intact. */
static bool
one_send(struct sess *x, VIP_VI_HANDLE a, VIP_VI_HANDLE b, struct h_mem *m, uint32_t len)
{
	uint8_t *buf = h_mem_get(m, len, 64), *dst = h_mem_get(&x->prov, len, 64);
	VIP_DESCRIPTOR *r = h_desc1(h_mem_get(&x->prov, 128, 64), dst, x->prov.mh, len, false);
	VIP_DESCRIPTOR *s = h_desc1(h_mem_get(&x->prov, 128, 64), buf, m->mh, len, true);
	bool ok;

	fill(buf, len);
	VipPostRecv(b, r, x->prov.mh);
	VipPostSend(a, s, x->prov.mh);
	ok = wait_done(a, false, 5000) == s && wait_done(b, true, 5000) == r &&
	     r->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE) && memcmp(dst, buf, len) == 0;
	h_mem_reset(&x->prov);
	return ok;
}

/* FramesTxZeroCopy: memory mapped in place (provider memory, and heap memory
 * registered in place), at and above the threshold only. */
static void
test_counted(struct sess *x)
{
	VIP_VI_HANDLE a, b;
	uint64_t z0, z1, z2, z3;

	h_note("FramesTxZeroCopy counts the frames of memory mapped in place only");
	if (!pair_open(x, VIP_SERVICE_UNRELIABLE, MSG, "counted", &a, &b))
		return;
	z0 = zc_frames(x->nic);
	CHECK(one_send(x, a, b, &x->prov, MSG), "a %u B send from provider memory arrives", MSG);
	z1 = zc_frames(x->nic);
	CHECK(one_send(x, a, b, &x->heap, MSG), "a %u B send from heap memory arrives", MSG);
	z2 = zc_frames(x->nic);
	CHECK(one_send(x, a, b, &x->prov, 1000), "a 1000 B send from provider memory arrives");
	z3 = zc_frames(x->nic);
	CHECK(z1 - z0 >= MSG / 9000 + 1 && z2 - z1 >= MSG / 9000 + 1 && z3 == z2,
	      "zero-copy frames: %" PRIu64 " for %u B of provider memory (each one), %" PRIu64
	      " for heap memory (in place), %" PRIu64 " for 1000 B (copied: below the threshold)",
	      z1 - z0, MSG, z2 - z1, z3 - z2);
	h_mem_reset(&x->heap);
	h_pair_drop(a, b);
}

/*
 * VIA §6.1 through the delay NIC: the send (or RDMA Write) completes only
 * once its frames are gone; the buffer, rewritten as soon as it completes,
 * does not change what arrives.
 */
static void
test_ownership(struct sess *x, VIP_RELIABILITY_LEVEL lv, const char *lvname, bool write)
{
	VIP_VI_HANDLE a, b;
	uint8_t *buf, *want, *dst;
	VIP_DESCRIPTOR *s, *r = NULL, *out;
	uint64_t t0, ts, z0;
	char tag[32];

	h_note("%s %s from provider memory through a NIC holding frames %u ms (VIA §6.1)",
	       lvname, write ? "RDMA Write" : "send", HOLD_MS);
	snprintf(tag, sizeof(tag), "own-%s-%d", lvname, write);
	if (!pair_open(x, lv, MSG, tag, &a, &b))
		return;
	buf = h_mem_get(&x->prov, MSG, 64);
	dst = h_mem_get(&x->prov, MSG, 64);
	want = h_mem_get(&x->heap, MSG, 64);
	fill(buf, MSG);
	memcpy(want, buf, MSG);
	memset(dst, 0, MSG);
	s = h_desc1(h_mem_get(&x->prov, 128, 64), buf, x->prov.mh, MSG, true);
	if (write) {
		VIP_ADDRESS_SEGMENT *as = &s->DS[0].Remote;

		/* the address segment first, then the data segment (VIA §10.3) */
		memmove(&s->DS[1], &s->DS[0], sizeof(s->DS[0]));
		memset(as, 0, sizeof(*as));
		as->Data.Address = dst;
		as->Handle = x->prov.mh;
		s->CS.SegCount = 2;
		s->CS.Control = VIP_CONTROL_OP_RDMAWRITE;
	} else {
		r = h_desc1(h_mem_get(&x->prov, 128, 64), dst, x->prov.mh, MSG, false);
		VipPostRecv(b, r, x->prov.mh);
	}
	z0 = zc_frames(x->nic);
	t0 = h_now_ms();
	VipPostSend(a, s, x->prov.mh);
	out = wait_done(a, false, 5000);
	ts = h_now_ms() - t0;
	/* the consumer owns the buffer again: rewrite it at once */
	memset(buf, 0xA5, MSG);
	CHECK(out == s && s->CS.Status == (VIP_STATUS_DONE | (write ? VIP_STATUS_OP_RDMA_WRITE
								     : VIP_STATUS_OP_SEND)) &&
	      ts >= HOLD_MS - 20,
	      "%s: completes once the NIC let go of its frames: %llu ms (Status %#x)", lvname,
	      (unsigned long long)ts, out != NULL ? out->CS.Status : 0);
	CHECK(zc_frames(x->nic) > z0, "%s: its frames were zero-copy", lvname);
	if (!write) {
		out = wait_done(b, true, 5000);
		CHECK(out == r && r->CS.Length == MSG, "%s: the message arrives (Status %#x)", lvname,
		      out != NULL ? out->CS.Status : 0);
	} else {
		uint64_t end = h_now_ms() + 5000;

		while (memcmp(dst, want, MSG) != 0 && h_now_ms() < end)
			h_sleep_ms(10);
	}
	CHECK(memcmp(dst, want, MSG) == 0,
	      "%s: what arrives is what the buffer held when posted, not what was written "
	      "into it after the completion", lvname);
	h_mem_reset(&x->prov);
	h_mem_reset(&x->heap);
	h_pair_drop(a, b);
}

/*
 * A descriptor viad cannot write back (its handle names no region:
 * VIP_ERROR_POST_DESC, §9.9.1) keeps its place behind a zero-copy send
 * held by its frames: the library must not see its count first and take
 * the held head for complete.
 */
static void
test_post_desc_behind(struct sess *x)
{
	VIP_VI_HANDLE a, b;
	VIP_DESCRIPTOR *s, *bad, *r, *out = NULL;
	uint8_t *buf;

	h_note("an unusable descriptor posted behind a held zero-copy send (§9.9.1, §6.1)");
	if (!pair_open(x, VIP_SERVICE_UNRELIABLE, MSG, "post-desc", &a, &b))
		return;
	buf = h_mem_get(&x->prov, MSG, 64);
	fill(buf, MSG);
	r = h_desc1(h_mem_get(&x->prov, 128, 64), h_mem_get(&x->prov, MSG, 64), x->prov.mh, MSG,
		    false);
	s = h_desc1(h_mem_get(&x->prov, 128, 64), buf, x->prov.mh, MSG, true);
	bad = h_desc1(h_mem_get(&x->prov, 128, 64), buf, x->prov.mh, 64, true);
	VipPostRecv(b, r, x->prov.mh);
	VipPostSend(a, s, x->prov.mh);
	/* a handle of no region: viad can neither read nor complete it */
	VipPostSend(a, bad, x->prov.mh ^ 0x5a5a0000u);
	h_sleep_ms(HOLD_MS / 4);
	CHECK_RET(VipSendDone(a, &out), VIP_NOT_DONE,
		  "while the NIC holds the first send's frames, neither is done");
	out = wait_done(a, false, 5000);
	CHECK(out == s && s->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_OP_SEND),
	      "the held send completes first, successfully (Status %#x)",
	      out != NULL ? out->CS.Status : 0);
	out = wait_done(a, false, 5000);
	CHECK(out == bad && (bad->CS.Status & VIP_STATUS_PROTECTION_ERROR),
	      "then the unusable one, marked PROTECTION_ERROR by the library (Status %#x)",
	      out != NULL ? out->CS.Status : 0);
	CHECK(h_err_take(VIP_ERROR_POST_DESC, a, 3000, NULL), "VIP_ERROR_POST_DESC is reported");
	wait_done(b, true, 5000);
	h_mem_reset(&x->prov);
	h_pair_drop(a, b);
}

/* VipDpdkFreeMem while frames still point into the allocation. */
static void
test_free_in_flight(struct sess *x)
{
	VIP_VI_HANDLE a, b;
	VIP_MEM_ATTRIBUTES ma;
	VIP_MEM_HANDLE mh;
	VIP_DESCRIPTOR *s, *r, *out;
	uint8_t *alloc = NULL, *dst, *want;

	h_note("VipDpdkFreeMem while the NIC holds frames pointing into the allocation");
	if (!pair_open(x, VIP_SERVICE_UNRELIABLE, MSG, "free-in-flight", &a, &b))
		return;
	if (!CHECK_RET(VipDpdkAllocMem(x->nic, MSG, (VIP_PVOID *)&alloc), VIP_SUCCESS,
		       "VipDpdkAllocMem %u B", MSG)) {
		h_pair_drop(a, b);
		return;
	}
	memset(&ma, 0, sizeof(ma));
	ma.Ptag = x->pt;
	if (CHECK_RET(VipRegisterMem(x->nic, alloc, MSG, &ma, &mh), VIP_SUCCESS,
		      "register it")) {
		dst = h_mem_get(&x->prov, MSG, 64);
		want = h_mem_get(&x->heap, MSG, 64);
		fill(alloc, MSG);
		memcpy(want, alloc, MSG);
		r = h_desc1(h_mem_get(&x->prov, 128, 64), dst, x->prov.mh, MSG, false);
		s = h_desc1(h_mem_get(&x->prov, 128, 64), alloc, mh, MSG, true);
		VipPostRecv(b, r, x->prov.mh);
		VipPostSend(a, s, x->prov.mh);
		h_sleep_ms(HOLD_MS / 4);      /* framed, held by the NIC */
		CHECK_RET(VipSendDone(a, &out), VIP_NOT_DONE, "the send is not complete yet");
		CHECK_RET(VipDeregisterMem(x->nic, alloc, mh), VIP_SUCCESS,
			  "deregister the allocation meanwhile");
		CHECK_RET(VipDpdkFreeMem(x->nic, alloc), VIP_SUCCESS, "and free it");
		out = wait_done(b, true, 5000);
		CHECK(out == r && r->CS.Length == MSG && memcmp(dst, want, MSG) == 0,
		      "the message arrives intact: viad kept its mapping until the frames were "
		      "gone (Status %#x)", out != NULL ? out->CS.Status : 0);
		out = wait_done(a, false, 5000);
		CHECK(out == s && (s->CS.Status & VIP_STATUS_DONE),
		      "the send completes (Status %#x)", out != NULL ? out->CS.Status : 0);
		CHECK(one_send(x, a, b, &x->prov, MSG), "the connection carries on");
	}
	h_mem_reset(&x->prov);
	h_mem_reset(&x->heap);
	h_pair_drop(a, b);
}

/*
 * A Reliable Delivery message framed over several turns whose allocation is
 * deregistered and freed meanwhile: the connection breaks mid-message
 * (§3.2.1, §2.5.2) while frames of it are still held by the NIC, and the
 * allocation stays mapped until they are gone.
 */
static void
test_break_mid_message(struct sess *x)
{
	VIP_MEM_ATTRIBUTES ma;
	unsigned i;

	h_note("RD: the allocation of a message being framed is freed: a break mid-message");
	memset(&ma, 0, sizeof(ma));
	ma.Ptag = x->pt;
	for (i = 0; i < 6 && viad_alive(x->v); i++) {
		VIP_VI_HANDLE a, b;
		VIP_DESCRIPTOR *s, *r, *out;
		VIP_MEM_HANDLE mh;
		uint8_t *alloc = NULL;
		char tag[32];

		snprintf(tag, sizeof(tag), "mid-%u", i);
		if (!pair_open(x, VIP_SERVICE_RELIABLE_DELIVERY, BIG, tag, &a, &b))
			break;
		if (VipDpdkAllocMem(x->nic, BIG, (VIP_PVOID *)&alloc) != VIP_SUCCESS) {
			h_pair_drop(a, b);
			break;
		}
		if (VipRegisterMem(x->nic, alloc, BIG, &ma, &mh) == VIP_SUCCESS) {
			fill(alloc, BIG);
			r = h_desc1(h_mem_get(&x->prov, 128, 64), h_mem_get(&x->prov, BIG, 64),
				    x->prov.mh, BIG, false);
			s = h_desc1(h_mem_get(&x->prov, 128, 64), alloc, mh, BIG, true);
			VipPostRecv(b, r, x->prov.mh);
			VipPostSend(a, s, x->prov.mh);
			if (i % 2)
				h_sleep_ms(0);
			VipDeregisterMem(x->nic, alloc, mh);
			VipDpdkFreeMem(x->nic, alloc);
			out = wait_done(a, false, 5000);
			CHECK(out == s, "round %u: the send completes (Status %#x)", i,
			      out != NULL ? out->CS.Status : 0);
			h_sleep_ms(HOLD_MS / 2);
		}
		h_pair_drop(a, b);
		h_mem_reset(&x->prov);
	}
	CHECK(viad_alive(x->v), "viad is alive");
	CHECK(!viad_log_contains(x->v, "freed before its last frame"),
	      "no tracker was freed while a frame still counted on it");
}

/* Leave frames held by the NIC: the session's reclaim and viad's stop come next. */
static void
test_leave_in_flight(struct sess *x)
{
	VIP_VI_HANDLE a, b;
	uint8_t *buf, *dst;
	VIP_DESCRIPTOR *out;

	h_note("VipCloseNic, then viad's stop, while the NIC holds zero-copy frames");
	if (!pair_open(x, VIP_SERVICE_RELIABLE_DELIVERY, MSG, "leave", &a, &b))
		return;
	buf = h_mem_get(&x->prov, MSG, 64);
	dst = h_mem_get(&x->prov, MSG, 64);
	fill(buf, MSG);
	VipPostRecv(b, h_desc1(h_mem_get(&x->prov, 128, 64), dst, x->prov.mh, MSG, false),
		    x->prov.mh);
	VipPostSend(a, h_desc1(h_mem_get(&x->prov, 128, 64), buf, x->prov.mh, MSG, true),
		    x->prov.mh);
	h_sleep_ms(HOLD_MS / 4);
	CHECK_RET(VipSendDone(a, &out), VIP_NOT_DONE, "the send is in flight");
}

int
main(int argc, char **argv)
{
	char seedset[64];
	char holdset[64];
	const char *delay_sets[] = {
		"port.via0.glue=faulty", "port.via0.tx_delay=100%", holdset,
		/* no retransmission before an acknowledgement can be back */
		"viad.rel_rto_min_us=1000000", "viad.rel_rto_max_us=2000000",
		"limits.max_transfer_size=1M", seedset, NULL,
	};
	struct viad_proc v;
	struct sess x;

	h_init(argc, argv, 110);
	rng = h_seed();
	snprintf(seedset, sizeof(seedset), "port.via0.seed=%" PRIu64, rng);
	snprintf(holdset, sizeof(holdset), "port.via0.delay_us=%u", HOLD_MS * 1000);
	if (viad_start(&v, "plain", NULL) == 0) {
		if (sess_open(&x, &v))
			test_counted(&x);
		sess_close(&x);
		CHECK(viad_alive(&v), "viad 'plain' is still running");
		viad_stop(&v);
	}
	if (viad_start(&v, "delay", delay_sets) == 0) {
		if (sess_open(&x, &v)) {
			test_ownership(&x, VIP_SERVICE_UNRELIABLE, "Unreliable", false);
			test_ownership(&x, VIP_SERVICE_UNRELIABLE, "Unreliable", true);
			test_ownership(&x, VIP_SERVICE_RELIABLE_DELIVERY, "Reliable Delivery", false);
			test_ownership(&x, VIP_SERVICE_RELIABLE_DELIVERY, "Reliable Delivery", true);
			test_ownership(&x, VIP_SERVICE_RELIABLE_RECEPTION, "Reliable Reception", false);
			test_post_desc_behind(&x);
			test_free_in_flight(&x);
			test_break_mid_message(&x);
			test_leave_in_flight(&x);
		}
		sess_close(&x);
		CHECK(viad_alive(&v), "viad 'delay' is still running");
		viad_stop(&v);
	}
	return h_finish();
}
