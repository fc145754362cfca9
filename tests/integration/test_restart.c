/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * viad restarted under running clients (issue 14 part 6):
 *
 *  local  A client has three connected VI pairs: a thread blocked in
 *         VipRecvWait, one in VipCQWait, one polling VipRecvDone. viad is
 *         SIGKILLed and a new viad started at once on the same socket. The
 *         waits return VIP_ERROR_RESOURCE (vipl.h: viad is gone), every VI
 *         is reported lost (VIP_ERROR_CONN_LOST, VIA §9.9.1; §7: a VI NIC
 *         error), which is how the polling thread learns it (§9.6.5 gives
 *         VipRecvDone no other answer than VIP_NOT_DONE), all within
 *         RESTART_BOUND_MS; the old NIC's calls fail, and the client opens
 *         the NIC on the new viad and moves data.
 *  peer   Two viads joined by net_memif; a Reliable Delivery connection
 *         from A to B. B is SIGKILLed and restarted while a thread waits
 *         in VipRecvWait on A: A's VI goes to the Error state with
 *         CONN_LOST, the waiting receive completes in error (§5.4, §7.2),
 *         within RESTART_BOUND_MS; then A connects to the new B and moves
 *         data.
 *
 * Usage: it_restart PATH/TO/viad
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* generous: the library looks every 100-200 ms, a peer's death takes its
 * viad about 1.5 s to notice (test_rel), and the machine is shared */
#define RESTART_BOUND_MS 15000
#define MEM_LEN (1u << 20)

/* A thread blocked in a wait, and what the wait gave. */
struct blocked {
	pthread_t thread;
	VIP_VI_HANDLE vi;       /* VipRecvWait, or polling VipRecvDone */
	VIP_CQ_HANDLE cq;       /* VipCQWait */
	bool poll;
	VIP_RETURN rc;
	VIP_DESCRIPTOR *desc;
	uint64_t done_ms;
};

static void *
blocked_main(void *arg)
{
	struct blocked *b = arg;
	VIP_VI_HANDLE vi;
	VIP_BOOLEAN recvq;
	uint64_t end = h_now_ms() + 2 * RESTART_BOUND_MS + 10000;

	if (b->cq != NULL) {
		b->rc = VipCQWait(b->cq, VIP_INFINITE, &vi, &recvq);
	} else if (!b->poll) {
		b->rc = VipRecvWait(b->vi, VIP_INFINITE, &b->desc);
	} else {
		/* VipRecvDone answers VIP_NOT_DONE: the error handler says why */
		while ((b->rc = VipRecvDone(b->vi, &b->desc)) == VIP_NOT_DONE &&
		       h_err_count(VIP_ERROR_CONN_LOST, b->vi) == 0 && h_now_ms() < end)
			h_sleep_ms(1);
	}
	b->done_ms = h_now_ms();
	return NULL;
}

static void
blocked_start(struct blocked *b)
{
	b->rc = VIP_SUCCESS;
	b->done_ms = 0;
	pthread_create(&b->thread, NULL, blocked_main, b);
}

/* A session with provider memory, registered, and the error recorder. */
struct client {
	VIP_NIC_HANDLE nic;
	VIP_PROTECTION_HANDLE pt;
	struct h_mem m;
};

static bool
client_open(struct client *c, const struct viad_proc *v, const char *name)
{
	VIP_MEM_ATTRIBUTES ma = { 0 };

	memset(c, 0, sizeof(*c));
	viad_use(v);
	if (!CHECK_RET(VipOpenNic("via0", &c->nic), VIP_SUCCESS, "%s: open via0 of viad '%s'",
		       name, v->name))
		return false;
	VipErrorCallback(c->nic, NULL, h_err_handler);
	CHECK_RET(VipCreatePtag(c->nic, &c->pt), VIP_SUCCESS, "%s: a tag", name);
	ma.Ptag = c->pt;
	return h_mem_open(&c->m, c->nic, &ma, name, MEM_LEN, true);
}

static VIP_VI_HANDLE
vi_new(struct client *c, VIP_RELIABILITY_LEVEL level, VIP_CQ_HANDLE recv_cq)
{
	VIP_VI_ATTRIBUTES va;
	VIP_VI_HANDLE vi = NULL;

	h_vi_attrs(&va, c->pt);
	va.ReliabilityLevel = level;
	CHECK_RET(VipCreateVi(c->nic, &va, NULL, recv_cq, &vi), VIP_SUCCESS, "create a VI");
	return vi;
}

/* A receive posted on @p vi. */
static VIP_DESCRIPTOR *
recv_post(struct client *c, VIP_VI_HANDLE vi)
{
	VIP_DESCRIPTOR *d = h_desc1(h_mem_get(&c->m, 256, 64), h_mem_get(&c->m, 4096, 64),
				    c->m.mh, 4096, false);

	CHECK_RET(VipPostRecv(vi, d, c->m.mh), VIP_SUCCESS, "post a receive");
	return d;
}

/* One message of @p len bytes from @p s (of @p sc) to @p r (of @p rc). */
static bool
message(struct client *sc, VIP_VI_HANDLE s, struct client *rc, VIP_VI_HANDLE r, uint32_t len,
	const char *what)
{
	VIP_DESCRIPTOR *rd = recv_post(rc, r), *got = NULL;
	uint8_t *buf = h_mem_get(&sc->m, len, 64);
	VIP_DESCRIPTOR *sd = h_desc1(h_mem_get(&sc->m, 256, 64), buf, sc->m.mh, len, true);

	memset(buf, 0x6d, len);
	CHECK_RET(VipPostSend(s, sd, sc->m.mh), VIP_SUCCESS, "%s: post a send", what);
	VipRecvWait(r, RESTART_BOUND_MS, &got);
	VipSendWait(s, RESTART_BOUND_MS, &got);
	return CHECK((rd->CS.Status & (VIP_STATUS_DONE | VIP_STATUS_ERROR_MASK)) == VIP_STATUS_DONE &&
		     rd->CS.Length == len &&
		     ((uint8_t *)(uintptr_t)rd->DS[0].Local.Data.Address)[len - 1] == 0x6d,
		     "%s: a message of %u bytes arrives intact (Status %#x)", what, len,
		     rd->CS.Status);
}

static void
test_local(void)
{
	struct viad_proc old, fresh;
	struct client c, n;
	struct blocked w[3];
	VIP_VI_HANDLE vi[6], a, b;
	VIP_CQ_HANDLE cq = NULL;
	VIP_NIC_ATTRIBUTES na;
	uint64_t t0;
	unsigned i, lost = 0;
	const char *const what[] = { "VipRecvWait", "VipCQWait", "polling VipRecvDone" };

	h_note("local: viad SIGKILLed and restarted under a waiting and a polling client");
	if (viad_start(&old, "old", NULL) != 0)
		return;
	if (!client_open(&c, &old, "client")) {
		viad_stop(&old);
		return;
	}
	CHECK_RET(VipCreateCQ(c.nic, 64, &cq), VIP_SUCCESS, "a CQ");
	for (i = 0; i < 6; i++)
		vi[i] = vi_new(&c, VIP_SERVICE_UNRELIABLE, i == 3 ? cq : NULL);
	for (i = 0; i < 3; i++) {
		char tag[16];

		snprintf(tag, sizeof(tag), "local%u", i);
		h_connect(c.nic, vi[2 * i], c.nic, vi[2 * i + 1], tag, 10000);
		recv_post(&c, vi[2 * i + 1]);
		w[i] = (struct blocked){ .vi = vi[2 * i + 1], .cq = i == 1 ? cq : NULL,
					 .poll = i == 2 };
	}
	h_err_clear();
	for (i = 0; i < 3; i++)
		blocked_start(&w[i]);
	h_sleep_ms(300);
	t0 = h_now_ms();
	viad_kill(&old);
	viad_spawn(&fresh, "fresh", old.sock, NULL);
	CHECK(viad_wait_ready(&fresh, H_TIMEOUT_MS) == 0, "a new viad serves the same socket");
	for (i = 0; i < 3; i++) {
		pthread_join(w[i].thread, NULL);
		CHECK(w[i].done_ms - t0 < RESTART_BOUND_MS &&
		      w[i].rc == (w[i].poll ? VIP_NOT_DONE : VIP_ERROR_RESOURCE),
		      "%s returns %s %llu ms after the kill", what[i], VipDpdkReturnString(w[i].rc),
		      (unsigned long long)(w[i].done_ms - t0));
	}
	for (i = 0; i < 6; i++)
		lost += h_err_take(VIP_ERROR_CONN_LOST, vi[i], RESTART_BOUND_MS, NULL);
	CHECK(lost == 6, "each of the 6 VIs is reported lost (VIP_ERROR_CONN_LOST): %u", lost);
	CHECK_RET(VipQueryNic(c.nic, &na), VIP_ERROR_RESOURCE,
		  "the old NIC's calls fail, the new viad does not adopt it");
	CHECK_RET(VipCloseNic(c.nic), VIP_ERROR_RESOURCE, "VipCloseNic of the old NIC");

	if (client_open(&n, &fresh, "again")) {
		a = vi_new(&n, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
		b = vi_new(&n, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
		if (h_connect(n.nic, a, n.nic, b, "again", 10000))
			message(&n, a, &n, b, 3000, "on the new viad");
		h_pair_drop(a, b);
		h_mem_close(&n.m, n.nic);
		CHECK_RET(VipCloseNic(n.nic), VIP_SUCCESS, "close the new NIC");
	}
	viad_stop(&fresh);
	h_err_clear();
}

static void
test_peer(void)
{
	struct viad_proc va, vb;
	struct client xa, xb, xb2;
	struct blocked w;
	VIP_VI_HANDLE la, pb, la2, pb2;
	struct h_err_event ev;
	uint64_t t0;
	bool got;
	int st;

	h_note("peer: the viad at the other end of a connection is SIGKILLed and restarted");
	if (!viad_start_memif(&va, "A", true))
		return;
	if (!viad_start_memif(&vb, "B", false)) {
		viad_stop(&va);
		return;
	}
	if (!client_open(&xa, &va, "A") || !client_open(&xb, &vb, "B"))
		goto out;
	la = vi_new(&xa, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	pb = vi_new(&xb, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	if (!h_connect(xa.nic, la, xb.nic, pb, "peer", 20000) ||
	    !message(&xb, pb, &xa, la, 2000, "B to A across memif"))
		goto out;
	h_err_clear();
	recv_post(&xa, la);
	w = (struct blocked){ .vi = la };
	blocked_start(&w);
	h_sleep_ms(300);
	t0 = h_now_ms();
	viad_kill(&vb);
	CHECK(viad_start_memif(&vb, "B", false), "B restarts");
	pthread_join(w.thread, NULL);
	CHECK(w.rc == VIP_SUCCESS && w.desc != NULL &&
	      (w.desc->CS.Status & VIP_STATUS_DONE) && (w.desc->CS.Status & VIP_STATUS_ERROR_MASK) &&
	      w.done_ms - t0 < RESTART_BOUND_MS,
	      "A's waiting receive completes in error %llu ms after B's death (%s, Status %#x)",
	      (unsigned long long)(w.done_ms - t0), VipDpdkReturnString(w.rc),
	      w.desc != NULL ? w.desc->CS.Status : 0);
	got = h_err_take(VIP_ERROR_CONN_LOST, la, RESTART_BOUND_MS, &ev);
	CHECK(got && ev.at_ms - t0 < RESTART_BOUND_MS, "A's VI gets CONN_LOST (%llu ms)",
	      got ? (unsigned long long)(ev.at_ms - t0) : 0ull);
	st = h_vi_state(la);
	CHECK(st == VIP_STATE_ERROR, "A's VI is in the Error state: %s", h_state_name(st));
	CHECK(viad_alive(&va), "viad A is unharmed");
	/* B's old session died with its viad; its memory went with it */
	VipCloseNic(xb.nic);

	if (client_open(&xb2, &vb, "B again")) {
		la2 = vi_new(&xa, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
		pb2 = vi_new(&xb2, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
		h_mem_reset(&xa.m);
		if (h_connect(xa.nic, la2, xb2.nic, pb2, "peer-again", 20000))
			message(&xa, la2, &xb2, pb2, 2000, "A to the new B");
		h_pair_drop(la2, pb2);
		h_mem_close(&xb2.m, xb2.nic);
		VipCloseNic(xb2.nic);
	}
	h_vi_drop(la);
	h_mem_close(&xa.m, xa.nic);
	VipCloseNic(xa.nic);
out:
	viad_stop(&vb);
	viad_stop(&va);
	h_err_clear();
}

int
main(int argc, char **argv)
{
	h_init(argc, argv, 110);
	test_local();
	test_peer();
	return h_finish();
}
