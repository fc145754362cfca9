/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Queues that need no doorbell (via_abi.h, "Wake-up contract", pair 6;
 * issue 18 part 3). While viad polls a send ring's producer index (for a
 * while after the VI sent), and for the receive ring of a Connected VI,
 * the ring's polled word is set and a post rings no doorbell. Every way
 * back to doorbells must look at the ring once more, or a post made just
 * then would wait forever: nothing else would make viad look.
 *
 * - The words: after a back-to-back message the sender's send ring reads
 *   polled; a Connected VI's receive ring reads polled; once the peer's
 *   VipDisconnect put it in Error it reads 0, and a receive posted then
 *   completes flushed (VIA §5.4; a missed doorbell would leave it posted).
 * - The race: 4000 messages, each sent after a random pause around viad's
 *   polling time (0, 20-80 or 100-400 us against its 50 us), so that many
 *   posts land while viad stops polling; every one must arrive, within
 *   2 s. Run on a viad in each poll mode: backoff (viad sleeps between
 *   empty iterations), adaptive (its poller sleeps and must stop polling
 *   first, with a last look) and busy. The receiver waits blocking, as a
 *   legacy program does.
 *
 * Mutation check: with polled_stop()'s last look removed (daemon/dp/dp.c),
 * messages are lost here (in the adaptive and busy runs). The doorbell
 * via_vi_set_state() rings for a receive posted while the VI leaves
 * Connected is not reached here: the flush that follows looks at the ring
 * in every path this test can drive.
 *
 * Usage: it_polled PATH/TO/viad     (VIA_TEST_MEM=heap: heap memory)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include <vipl_dpdk_dp.h>

#include "harness.h"

#define MSGS      4000u
#define MSG_SIZE  64u
#define WAIT_MS   2000u

/* the polled word of @p vi's queue @p kind, as the library sees it */
static uint32_t
polled_word(VIP_VI_HANDLE vi, enum via_wq_kind kind)
{
	struct vipl_dpdk_vi *v = vipl_dpdk_dp_get(vi, VIPL_DPDK_OBJ_VI);

	return v == NULL ? UINT32_MAX : __atomic_load_n(&v->wq[kind].ring.sh->polled,
							 __ATOMIC_ACQUIRE);
}

static void
spin_us(uint64_t us)
{
	uint64_t end = h_now_ns() + us * 1000;

	while (h_now_ns() < end)
		;
}

/* One message a -> b; @return whether it arrived intact and both completed */
static bool
message(VIP_VI_HANDLE a, VIP_VI_HANDLE b, struct h_mem *m, unsigned i, uint64_t pause_us)
{
	VIP_DESCRIPTOR *out = NULL;
	struct h_msg msg;

	h_msg_prep(m, MSG_SIZE, i, &msg);
	if (VipPostRecv(b, msg.recv, m->mh) != VIP_SUCCESS)
		return false;
	spin_us(pause_us);
	if (VipPostSend(a, msg.send, m->mh) != VIP_SUCCESS)
		return false;
	return VipRecvWait(b, WAIT_MS, &out) == VIP_SUCCESS && out == msg.recv &&
	       out->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE) &&
	       out->CS.Length == MSG_SIZE && memcmp(msg.rbuf, msg.sbuf, MSG_SIZE) == 0 &&
	       VipSendWait(a, WAIT_MS, &out) == VIP_SUCCESS && out == msg.send &&
	       out->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_OP_SEND);
}

static void
run(const char *mode, bool words)
{
	char set[64];
	const char *sets[] = { set, NULL };
	VIP_PROTECTION_HANDLE pt;
	VIP_MEM_ATTRIBUTES ma;
	VIP_VI_ATTRIBUTES va;
	VIP_VI_HANDLE a = NULL, b = NULL;
	VIP_DESCRIPTOR *r, *out = NULL;
	VIP_NIC_HANDLE nic;
	struct viad_proc v;
	struct h_mem m;
	VIP_RETURN rc;
	uint64_t rng = h_seed(), t0;
	unsigned i, ok = 0, slow = 0, seen;

	snprintf(set, sizeof(set), "viad.poll_mode=%s", mode);
	h_note("poll mode %s", mode);
	if (viad_start(&v, mode, sets) != 0)
		return;
	if (!CHECK(VipOpenNic("via0", &nic) == VIP_SUCCESS && VipCreatePtag(nic, &pt) == VIP_SUCCESS,
		   "%s: open via0", mode)) {
		viad_stop(&v);
		return;
	}
	memset(&ma, 0, sizeof(ma));
	ma.Ptag = pt;
	h_vi_attrs(&va, pt);
	if (!h_mem_open(&m, nic, &ma, "messages", 1u << 16, !h_heap_mem()) ||
	    !CHECK(VipCreateVi(nic, &va, NULL, NULL, &a) == VIP_SUCCESS &&
		   VipCreateVi(nic, &va, NULL, NULL, &b) == VIP_SUCCESS, "%s: two VIs", mode) ||
	    !h_connect(nic, a, nic, b, "polled", 5000)) {
		viad_stop(&v);
		return;
	}
	if (words) {
		CHECK(polled_word(b, VIA_WQ_RECV) == 1 && polled_word(a, VIA_WQ_RECV) == 1,
		      "a Connected VI's receive ring is polled (%u, %u)",
		      polled_word(a, VIA_WQ_RECV), polled_word(b, VIA_WQ_RECV));
		/* viad marks the ring before the turn's frames reach b, and
		 * clears it 50 us after the last send: read right after a
		 * message, it is set unless this thread lost its CPU meanwhile */
		for (i = 0, seen = 0; i < 100 && seen == 0; i++) {
			if (!message(a, b, &m, i, 0))
				break;
			seen = polled_word(a, VIA_WQ_SEND) == 1;
		}
		CHECK(seen, "right after a message, the sender's send ring reads polled (%u tries)",
		      i);
	}
	t0 = h_now_ms();
	for (i = 0; i < MSGS; i++) {
		uint64_t x = h_rand(&rng) % 3, pause = x == 0 ? 0 : x == 1 ? 20 + h_rand(&rng) % 60
									   : 100 + h_rand(&rng) % 300;
		uint64_t t = h_now_ms();

		if (!message(a, b, &m, i, pause))
			break;
		slow += h_now_ms() - t > 100;
		ok++;
	}
	CHECK(ok == MSGS, "%s: %u messages, each after a pause around viad's polling time, all "
	      "arrive (%u; %.1f s; %u took over 100 ms)", mode, MSGS, ok,
	      (double)(h_now_ms() - t0) / 1000, slow);
	if (words) {
		/* §5.2, §5.4: the peer's VipDisconnect takes b out of Connected,
		 * to Error; a receive posted then completes flushed, which takes
		 * a doorbell again */
		CHECK(VipDisconnect(a) == VIP_SUCCESS &&
		      h_state_wait(b, VIP_STATE_ERROR, WAIT_MS) == VIP_STATE_ERROR,
		      "the peer's VipDisconnect puts the VI in Error");
		CHECK(polled_word(b, VIA_WQ_RECV) == 0,
		      "out of Connected, the receive ring is not polled (%u)",
		      polled_word(b, VIA_WQ_RECV));
		h_mem_reset(&m);
		r = h_desc1(h_mem_get(&m, 64, VIP_DESCRIPTOR_ALIGNMENT), h_mem_get(&m, MSG_SIZE, 8),
			    m.mh, MSG_SIZE, false);
		rc = VipPostRecv(b, r, m.mh);
		if (rc == VIP_SUCCESS)
			rc = VipRecvWait(b, WAIT_MS, &out);
		CHECK(rc == VIP_SUCCESS && out == r && (r->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR),
		      "a receive posted in Error completes flushed (%s, status %#x)",
		      VipDpdkReturnString(rc), r->CS.Status);
	}
	VipCloseNic(nic);
	viad_stop(&v);
}

int
main(int argc, char **argv)
{
	h_init(argc, argv, 240);
	run("backoff", true);
	run("adaptive", false);
	run("busy", false);
	return h_finish();
}
