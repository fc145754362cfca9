/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data-path ops of libvipl-dpdk (issue 13 part 5, lib/viad/vipl_dpdk_dp.h):
 * a provider built on the library replaces single routines of its data
 * path with vipl_dpdk_dp_register, the rest staying default.
 *
 * A counting doorbell, completion poll and CQ poll, each calling the
 * default, are installed on a connected pair (the receiver's queue on a
 * CQ). Messages still move intact; a post rings the doorbell only where
 * viad does not poll its ring (via_abi.h, pair 6): a receive on a
 * Connected VI never, a send at most once, the first always; each dequeue
 * came through the overridden polls. Registering the defaults
 * again takes the overrides out: nothing is counted any more. Refused:
 * another ABI version, an empty slot, no table, with the table in force
 * unchanged. Run once more with the calls inlined (integration_dpops_inline):
 * the inline data path calls the overrides too.
 *
 * Usage: it_dpops PATH/TO/viad
 */
#define _GNU_SOURCE
#include <string.h>

#include <vipl_dpdk_dp.h>

#include "harness.h"

#define MSGS     200u
#define MSG_SIZE 64u

static unsigned long bells, wq_polls, cq_polls;

static void
counting_doorbell(struct vipl_dpdk_vi *vi, enum via_wq_kind kind)
{
	__atomic_fetch_add(&bells, 1, __ATOMIC_RELAXED);
	vipl_dpdk_dp.defaults.ring_doorbell(vi, kind);
}

static bool
counting_poll_completion(struct vipl_dpdk_wq *q, const VIP_DESCRIPTOR *head)
{
	__atomic_fetch_add(&wq_polls, 1, __ATOMIC_RELAXED);
	return vipl_dpdk_dp.defaults.poll_completion(q, head);
}

static bool
counting_poll_cq(struct vipl_dpdk_cq *cq)
{
	__atomic_fetch_add(&cq_polls, 1, __ATOMIC_RELAXED);
	return vipl_dpdk_dp.defaults.poll_cq(cq);
}

/*
 * @p n messages from @p a to @p b (receive queue on @p cq), one at a time:
 * the receive posted, the send posted, the CQ entry, the receive and the
 * send dequeued by polling. @return the messages that arrived intact
 */
static unsigned
exchange(VIP_VI_HANDLE a, VIP_VI_HANDLE b, VIP_CQ_HANDLE cq, struct h_mem *m, unsigned n)
{
	unsigned i, ok = 0;

	for (i = 0; i < n; i++) {
		VIP_DESCRIPTOR *r, *s, *out = NULL;
		VIP_VI_HANDLE vi = NULL;
		VIP_BOOLEAN rq = VIP_FALSE;
		struct h_msg msg;
		VIP_RETURN rc;
		uint64_t t0;

		h_msg_prep(m, MSG_SIZE, i, &msg);
		r = msg.recv;
		s = msg.send;
		if (VipPostRecv(b, r, m->mh) != VIP_SUCCESS || VipPostSend(a, s, m->mh) != VIP_SUCCESS)
			break;
		/* the bound only turns a hang into a failure */
		t0 = h_now_ms();
		while ((rc = VipCQDone(cq, &vi, &rq)) == VIP_NOT_DONE && h_now_ms() - t0 < H_TIMEOUT_MS)
			;
		if (rc != VIP_SUCCESS || vi != b || rq != VIP_TRUE ||
		    VipRecvDone(b, &out) != VIP_SUCCESS || out != r ||
		    out->CS.Status != (VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE) ||
		    out->CS.Length != MSG_SIZE || memcmp(msg.rbuf, msg.sbuf, MSG_SIZE) != 0)
			break;
		t0 = h_now_ms();
		while ((rc = VipSendDone(a, &out)) == VIP_NOT_DONE && h_now_ms() - t0 < H_TIMEOUT_MS)
			;
		if (rc != VIP_SUCCESS || out != s ||
		    out->CS.Status != (VIP_STATUS_DONE | VIP_STATUS_OP_SEND))
			break;
		ok++;
	}
	return ok;
}

static void
test_refusals(void)
{
	struct vipl_dpdk_dp_ops ops = vipl_dpdk_dp.defaults;

	ops.ring_doorbell = counting_doorbell;
	CHECK_RET(vipl_dpdk_dp_register(VIPL_DPDK_DP_ABI_VERSION + 1, &ops), VIP_INVALID_PARAMETER,
		  "ops of another ABI version are refused");
	CHECK_RET(vipl_dpdk_dp_register(VIPL_DPDK_DP_ABI_VERSION, NULL), VIP_INVALID_PARAMETER,
		  "no table is refused");
	ops.poll_cq = NULL;
	CHECK_RET(vipl_dpdk_dp_register(VIPL_DPDK_DP_ABI_VERSION, &ops), VIP_INVALID_PARAMETER,
		  "a table with an empty slot is refused");
	CHECK(vipl_dpdk_dp.overridden == 0 &&
	      vipl_dpdk_dp.ops.ring_doorbell == vipl_dpdk_dp.defaults.ring_doorbell,
	      "after the refusals the defaults are in force");
}

int
main(int argc, char **argv)
{
	const uint32_t all = VIPL_DPDK_DP_OVR_RING_DOORBELL | VIPL_DPDK_DP_OVR_POLL_COMPLETION |
			     VIPL_DPDK_DP_OVR_POLL_CQ;
	struct vipl_dpdk_dp_ops ops = vipl_dpdk_dp.defaults;
	struct viad_proc v;
	VIP_NIC_HANDLE nic;
	VIP_PROTECTION_HANDLE pt;
	VIP_MEM_ATTRIBUTES ma;
	VIP_VI_ATTRIBUTES va;
	VIP_VI_HANDLE a = NULL, b = NULL;
	VIP_CQ_HANDLE cq = NULL;
	struct h_mem m;
	unsigned long b0, w0, c0;
	unsigned n;

	h_init(argc, argv, 110);
	test_refusals();
	if (viad_start(&v, "dpops", NULL) != 0)
		return h_finish();
	if (!CHECK(VipOpenNic("via0", &nic) == VIP_SUCCESS && VipCreatePtag(nic, &pt) == VIP_SUCCESS,
		   "open via0")) {
		viad_stop(&v);
		return h_finish();
	}
	memset(&ma, 0, sizeof(ma));
	ma.Ptag = pt;
	h_vi_attrs(&va, pt);
	if (!h_mem_open(&m, nic, &ma, "messages", 1u << 16, !h_heap_mem()) ||
	    !CHECK(VipCreateCQ(nic, 16, &cq) == VIP_SUCCESS &&
		   VipCreateVi(nic, &va, NULL, NULL, &a) == VIP_SUCCESS &&
		   VipCreateVi(nic, &va, NULL, cq, &b) == VIP_SUCCESS, "a CQ and two VIs") ||
	    !h_connect(nic, a, nic, b, "dpops", 5000)) {
		viad_stop(&v);
		return h_finish();
	}

	ops.ring_doorbell = counting_doorbell;
	ops.poll_completion = counting_poll_completion;
	ops.poll_cq = counting_poll_cq;
	CHECK_RET(vipl_dpdk_dp_register(VIPL_DPDK_DP_ABI_VERSION, &ops), VIP_SUCCESS,
		  "install a counting doorbell, completion poll and CQ poll");
	CHECK(vipl_dpdk_dp.overridden == all, "the three slots are marked replaced (%#x)",
	      vipl_dpdk_dp.overridden);
	n = exchange(a, b, cq, &m, MSGS);
	CHECK(n == MSGS, "%u messages arrive intact through the overrides (%u)", MSGS, n);
	CHECK(bells >= 1 && bells <= n, "only sends rang the doorbell, the first did, none "
	      "twice; receives on a Connected VI need none (%lu rings, %u sends, %u receives)",
	      bells, n, n);
	CHECK(wq_polls >= 2 * n, "each dequeue came through the completion poll (%lu polls, %u "
	      "dequeues)", wq_polls, 2 * n);
	CHECK(cq_polls >= n, "each CQ entry came through the CQ poll (%lu polls, %u entries)",
	      cq_polls, n);

	CHECK_RET(vipl_dpdk_dp_register(VIPL_DPDK_DP_ABI_VERSION, &vipl_dpdk_dp.defaults),
		  VIP_SUCCESS, "register the defaults again");
	CHECK(vipl_dpdk_dp.overridden == 0, "no slot is marked replaced (%#x)",
	      vipl_dpdk_dp.overridden);
	b0 = bells;
	w0 = wq_polls;
	c0 = cq_polls;
	n = exchange(a, b, cq, &m, 10);
	CHECK(n == 10, "10 messages arrive intact with the defaults (%u)", n);
	CHECK(bells == b0 && wq_polls == w0 && cq_polls == c0,
	      "the overrides no longer run (%lu rings, %lu polls, %lu CQ polls more)", bells - b0,
	      wq_polls - w0, cq_polls - c0);

	h_pair_drop(a, b);
	CHECK_RET(VipDestroyCQ(cq), VIP_SUCCESS, "destroy the CQ");
	h_mem_close(&m, nic);
	CHECK_RET(VipCloseNic(nic), VIP_SUCCESS, "close");
	CHECK(viad_alive(&v), "viad is still running");
	viad_stop(&v);
	return h_finish();
}
