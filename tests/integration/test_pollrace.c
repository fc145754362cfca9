/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Polls racing destroys (issue 18): VipSendDone, VipRecvDone and VipCQDone
 * take no lock and check their handle without the handle table's lock, so
 * another thread may destroy the VI or the CQ while they run, and the
 * library reuse its memory for the next VI or CQ (lib/viad/vipl_handle.c).
 *
 * Round after round the main thread creates a CQ and a VI (its receive
 * queue on the CQ every other round), posts receives on the Idle VI, has
 * them flushed (VipDisconnect, VIA §5.1), dequeues what the pollers left,
 * and destroys both. Two poller threads meanwhile call VipSendDone,
 * VipRecvDone and VipCQDone on whatever round is current. Every call must
 * answer VIP_NOT_DONE, VIP_SUCCESS with a descriptor (or VI) of the round
 * whose handle it was given, or VIP_INVALID_PARAMETER once that round's
 * destroys began; every receive is dequeued exactly once, by a poller or
 * the main thread; a destroyed handle fails at once, also once its memory
 * has a new VI (VIA §9.3.2). Nothing depends on timing: how the calls
 * interleave only changes which thread dequeues what.
 *
 * Usage: it_pollrace PATH/TO/viad     (VIA_TEST_MEM=heap: heap memory)
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

#define ROUNDS     300u
#define RECVS      8u          /* receives posted per round */
#define POLLERS    2u
#define DESC_SIZE  64u
#define BUF_SIZE   64u

struct round {
	VIP_VI_HANDLE vi;
	VIP_CQ_HANDLE cq;
	VIP_DESCRIPTOR *desc[RECVS];
	unsigned taken[RECVS];     /* times each was dequeued: atomic */
	unsigned destroying;       /* the destroys began: store-release, load-acquire */
};

static struct round rounds[ROUNDS];
static struct round *current;      /* store-release, load-acquire */
static unsigned stop;

/* what the pollers saw, for the main thread's checks (CHECK is not for
 * several threads) */
static unsigned long polls, took, invalid, cq_entries;
static unsigned nb_bad;
static char first_bad[256];

static void
bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
bad(const char *fmt, ...)
{
	va_list ap;

	if (__atomic_fetch_add(&nb_bad, 1, __ATOMIC_RELAXED) != 0)
		return;
	va_start(ap, fmt);
	vsnprintf(first_bad, sizeof(first_bad), fmt, ap);
	va_end(ap);
}

static bool
destroying(const struct round *r)
{
	return __atomic_load_n(&r->destroying, __ATOMIC_ACQUIRE) != 0;
}

/* A receive @p d of round @p r was dequeued (by any thread): count it. */
static void
taken(struct round *r, VIP_DESCRIPTOR *d, const char *who)
{
	unsigned i;

	for (i = 0; i < RECVS && r->desc[i] != d; i++)
		;
	if (i == RECVS) {
		bad("%s: round %td: VipRecvDone gave %p, not a receive of its round", who,
		    r - rounds, (void *)d);
		return;
	}
	if (!(d->CS.Status & VIP_STATUS_DONE) || !(d->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR))
		bad("%s: round %td: receive %u has Status %#x, not flushed", who, r - rounds, i,
		    d->CS.Status);
	__atomic_fetch_add(&r->taken[i], 1, __ATOMIC_RELAXED);
}

/* A VIP_INVALID_PARAMETER of @p call on round @p r: only once its
 * destroys began (the handle goes inside them, after the flag). */
static void
check_invalid(const struct round *r, const char *call)
{
	__atomic_fetch_add(&invalid, 1, __ATOMIC_RELAXED);
	if (!destroying(r))
		bad("poller: round %td: %s answered VIP_INVALID_PARAMETER before its destroy", r - rounds,
		    call);
}

static void *
poller_main(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		struct round *r = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
		VIP_DESCRIPTOR *d;
		VIP_VI_HANDLE vi;
		VIP_BOOLEAN rq;
		VIP_RETURN rc;

		if (r == NULL) {
			sched_yield();
			continue;
		}
		__atomic_fetch_add(&polls, 1, __ATOMIC_RELAXED);
		/* nothing is ever posted on the send queue */
		rc = VipSendDone(r->vi, &d);
		if (rc == VIP_INVALID_PARAMETER)
			check_invalid(r, "VipSendDone");
		else if (rc != VIP_NOT_DONE)
			bad("poller: round %td: VipSendDone: %s", r - rounds, VipDpdkReturnString(rc));
		rc = VipRecvDone(r->vi, &d);
		if (rc == VIP_SUCCESS) {
			__atomic_fetch_add(&took, 1, __ATOMIC_RELAXED);
			taken(r, d, "poller");
		} else if (rc == VIP_INVALID_PARAMETER) {
			check_invalid(r, "VipRecvDone");
		} else if (rc != VIP_NOT_DONE) {
			bad("poller: round %td: VipRecvDone: %s", r - rounds, VipDpdkReturnString(rc));
		}
		rc = VipCQDone(r->cq, &vi, &rq);
		if (rc == VIP_SUCCESS) {
			__atomic_fetch_add(&cq_entries, 1, __ATOMIC_RELAXED);
			if (vi != r->vi || rq != VIP_TRUE)
				bad("poller: round %td: VipCQDone named VI %p (%s queue), not the "
				    "round's %p receive queue", r - rounds, vi, rq ? "receive" : "send",
				    r->vi);
		} else if (rc == VIP_INVALID_PARAMETER) {
			check_invalid(r, "VipCQDone");
		} else if (rc != VIP_NOT_DONE) {
			bad("poller: round %td: VipCQDone: %s", r - rounds, VipDpdkReturnString(rc));
		}
	}
	return NULL;
}

/* Receives of round @p r still to dequeue. */
static unsigned
left(struct round *r)
{
	unsigned i, n = RECVS;

	for (i = 0; i < RECVS; i++)
		n -= __atomic_load_n(&r->taken[i], __ATOMIC_RELAXED) != 0;
	return n;
}

/* One round; false when it could not go on (reported). */
static bool
one_round(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE pt, struct h_mem *m, unsigned n)
{
	struct round *r = &rounds[n];
	VIP_VI_ATTRIBUTES va;
	VIP_DESCRIPTOR *d;
	VIP_VI_HANDLE vi;
	VIP_BOOLEAN rq;
	uint64_t t0;
	unsigned i;

	if (VipCreateCQ(nic, 16, &r->cq) != VIP_SUCCESS)
		return CHECK(0, "round %u: create a CQ", n);
	h_vi_attrs(&va, pt);
	if (VipCreateVi(nic, &va, NULL, n % 2 ? r->cq : NULL, &r->vi) != VIP_SUCCESS)
		return CHECK(0, "round %u: create a VI", n);
	if (n > 0 && (r->vi == rounds[n - 1].vi ||
		      VipRecvDone(rounds[n - 1].vi, &d) != VIP_INVALID_PARAMETER))
		return CHECK(0, "round %u: the last round's destroyed VI handle is not the new "
			     "one's and fails", n);
	for (i = 0; i < RECVS; i++)
		r->desc[i] = h_desc1(h_mem_get(m, DESC_SIZE, VIP_DESCRIPTOR_ALIGNMENT),
				     h_mem_get(m, BUF_SIZE, 8), m->mh, BUF_SIZE, false);
	__atomic_store_n(&current, r, __ATOMIC_RELEASE);
	for (i = 0; i < RECVS; i++)
		if (VipPostRecv(r->vi, r->desc[i], m->mh) != VIP_SUCCESS)
			return CHECK(0, "round %u: post receive %u on the Idle VI", n, i);
	if (VipDisconnect(r->vi) != VIP_SUCCESS)
		return CHECK(0, "round %u: VipDisconnect of the Idle VI flushes its receives", n);
	/* what the pollers leave; the bound only turns a hang into a failure */
	t0 = h_now_ms();
	while (left(r) > 0) {
		VIP_RETURN rc = VipRecvDone(r->vi, &d);

		if (rc == VIP_SUCCESS)
			taken(r, d, "main");
		else if (rc != VIP_NOT_DONE)
			return CHECK_RET(rc, VIP_NOT_DONE, "round %u: VipRecvDone", n);
		else if (h_now_ms() - t0 > H_TIMEOUT_MS)
			return CHECK(0, "round %u: %u receives flushed within %u ms", n, RECVS,
				     H_TIMEOUT_MS);
		else
			sched_yield();
	}
	__atomic_store_n(&r->destroying, 1, __ATOMIC_RELEASE);
	if (VipDestroyVi(r->vi) != VIP_SUCCESS || VipDestroyCQ(r->cq) != VIP_SUCCESS)
		return CHECK(0, "round %u: destroy the VI and the CQ", n);
	d = r->desc[0];
	if (VipRecvDone(r->vi, &d) != VIP_INVALID_PARAMETER ||
	    VipSendDone(r->vi, &d) != VIP_INVALID_PARAMETER ||
	    VipPostRecv(r->vi, r->desc[0], m->mh) != VIP_INVALID_PARAMETER ||
	    VipCQDone(r->cq, &vi, &rq) != VIP_INVALID_PARAMETER)
		return CHECK(0, "round %u: the destroyed handles fail", n);
	return true;
}

int
main(int argc, char **argv)
{
	struct viad_proc v;
	VIP_NIC_HANDLE nic;
	VIP_PROTECTION_HANDLE pt;
	VIP_MEM_ATTRIBUTES ma;
	struct h_mem m;
	pthread_t th[POLLERS];
	unsigned i, n, started = 0, once = 0;

	h_init(argc, argv, 110);
	if (viad_start(&v, "pollrace", NULL) != 0)
		return h_finish();
	if (!CHECK(VipOpenNic("via0", &nic) == VIP_SUCCESS && VipCreatePtag(nic, &pt) == VIP_SUCCESS,
		   "open via0")) {
		viad_stop(&v);
		return h_finish();
	}
	memset(&ma, 0, sizeof(ma));
	ma.Ptag = pt;
	/* the descriptors stay registered and mapped until every poller
	 * stopped: a poll may read one another thread dequeued */
	if (!h_mem_open(&m, nic, &ma, "descriptors", ROUNDS * RECVS * (DESC_SIZE + BUF_SIZE),
			!h_heap_mem())) {
		viad_stop(&v);
		return h_finish();
	}
	for (i = 0; i < POLLERS; i++)
		started += pthread_create(&th[i], NULL, poller_main, NULL) == 0;
	CHECK(started == POLLERS, "start %u pollers", POLLERS);
	for (n = 0; n < ROUNDS && one_round(nic, pt, &m, n); n++)
		;
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	h_note("%u rounds; pollers: %lu polls, %lu receives and %lu CQ entries dequeued, %lu "
	       "VIP_INVALID_PARAMETER", n, polls, took, cq_entries, invalid);
	CHECK(n == ROUNDS, "%u rounds of create, flush, destroy under polls", ROUNDS);
	CHECK(nb_bad == 0, "every poll answered as it should (%u did not; first: %s)", nb_bad,
	      first_bad);
	for (i = 0; i < n * RECVS; i++)
		once += rounds[i / RECVS].taken[i % RECVS] == 1;
	CHECK(once == n * RECVS, "each of the %u receives was dequeued exactly once (%u)",
	      n * RECVS, once);
	h_mem_close(&m, nic);
	CHECK_RET(VipCloseNic(nic), VIP_SUCCESS, "close");
	CHECK(viad_alive(&v), "viad is still running");
	viad_stop(&v);
	return h_finish();
}
