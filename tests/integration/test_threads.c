/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ThreadSafe (VIA 1.0 §9.10.4; issue 6 "ThreadSafe"): one NIC handle used
 * by many threads at once through a real viad.
 *
 * Data path, four connected pairs (a sends to b):
 * - pair 0: 3 threads post sends on one VI; its send queue and pair 1's
 *   share the send CQ, reaped by all 4 sending threads of pairs 0 and 1
 *   (VipCQDone / VipCQWait, then VipSendDone); the receive queues of pairs
 *   0 and 1 share a receive CQ reaped by 2 threads (VipCQDone / VipCQWait,
 *   then VipRecvDone, then VipPostRecv again).
 * - pair 1: 1 sending thread; buffers in ordinary (malloc'd) memory.
 * - pair 2: 2 threads post sends on one VI and both reap its send queue
 *   (VipSendWait); 2 threads reap its receive queue (VipRecvWait).
 * - pair 3: 1 sending thread, 1 receiving thread (per-sender order checked);
 *   buffers in ordinary memory.
 * Every message carries (thread, sequence) in its immediate data and a
 * length and content derived from them and the seed; a send is posted
 * only against a receive posted (credits), so nothing may be lost on the
 * loopback NIC. Every message must arrive exactly once and intact.
 *
 * Control path, at the same time on the same NIC handle:
 * - thread "objects": CQs and VIs (some on the shared receive CQ) created,
 *   queried and destroyed, a CQ destroy refused while a VI uses it, an
 *   Idle VI's receive flushed, memory (ordinary and provider) registered,
 *   queried and deregistered, protection tags, VipResizeCQ of the shared
 *   receive CQ while it is reaped, VipQueryNic, counters, a second NIC
 *   handle opened and closed;
 * - thread "connections": VI pairs connected (client/server and
 *   peer-to-peer in turn), one message, disconnected, destroyed.
 * Every call must return what it should. Nothing depends on timing: waits
 * time out only to look again; a deadlock is caught by a progress watchdog.
 *
 * Usage: it_threads PATH/TO/viad     (VIA_TEST_SEED replays a run)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "test_rand.h"

#define NB_PAIRS     4
#define MAX_SENDERS  8
#define MSG_MAX      4096u
#define RECV_WINDOW  32u       /* most receives posted ahead on a pair */
#define SEND_WINDOW  8u        /* send descriptors per sending thread */
#define MSGS         10000u    /* per sending thread (< 2^20) */
#define TICK_MS      50u       /* waits time out to look again, nothing more */
#define STALL_MS     30000u    /* no progress at all for this long: deadlock */
#define DESC_SIZE    64u
#define MIN_CTL_ITER 20u

#define ST_SEND_OK (VIP_STATUS_DONE | VIP_STATUS_OP_SEND)
#define ST_RECV_OK (VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE)

struct pair {
	unsigned idx;
	bool cq;                   /* queues on the shared CQs */
	bool heap;                 /* buffers in ordinary memory */
	unsigned senders, receivers;
	unsigned window;           /* receives posted ahead */
	VIP_VI_HANDLE a, b;
	VIP_MEM_HANDLE buf_mh;     /* region of the buffers */
	uint8_t *rdesc;            /* RECV_WINDOW receive descriptors */
	uint8_t *rbuf[RECV_WINDOW];
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned credits;          /* receives posted and not yet promised to a send */
	unsigned total;            /* messages to deliver */
	unsigned received;         /* atomic */
	unsigned send_done;        /* atomic */
};

struct sender {
	unsigned id;               /* in every message */
	struct pair *p;
	uint8_t *sbuf[SEND_WINDOW];
	pthread_mutex_t lock;
	unsigned free[SEND_WINDOW], nfree;
	unsigned sent;
	unsigned next_seq;         /* ordered pair: next sequence expected */
	uint8_t seen[MSGS];        /* atomic: delivered */
};

static VIP_NIC_HANDLE nic;
static VIP_PROTECTION_HANDLE pt;
static VIP_CQ_HANDLE cq_s, cq_r;
static uint64_t run_seed;
static struct pair pairs[NB_PAIRS];
static struct sender senders[MAX_SENDERS];
static unsigned nb_senders;
static uint8_t *sdesc_area;        /* SEND_WINDOW descriptors per sender */
static VIP_MEM_HANDLE pmem_mh, hmem_mh;
static unsigned cq_group_total, cq_group_received, cq_group_send_done;
static unsigned progress, aborting, ctl_stop, data_left;
static unsigned ctl_iter[2];
static unsigned async_errors[16];

/* ---- failures from any thread --------------------------------------------------- */

static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned nb_fail;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
fail(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&fail_lock);
	if (++nb_fail <= 25)
		h_note("FAILED: %s", msg);
	pthread_mutex_unlock(&fail_lock);
}

/* @p got must be @p want; else a failure naming @p what. */
static bool
expect(VIP_RETURN got, VIP_RETURN want, const char *what, unsigned i)
{
	if (got == want)
		return true;
	fail("%s (iteration %u): %s, want %s", what, i, VipDpdkReturnString(got),
	     VipDpdkReturnString(want));
	return false;
}

static void
err_handler(VIP_PVOID ctx, VIP_ERROR_DESCRIPTOR *e)
{
	(void)ctx;
	__atomic_fetch_add(&async_errors[(unsigned)e->ErrorCode & 15], 1, __ATOMIC_RELAXED);
	if (e->ErrorCode != VIP_ERROR_CONN_LOST)
		fail("asynchronous error %s (VI %p)", VipDpdkErrorCodeString(e->ErrorCode),
		     e->ViHandle);
}

static void
tick(void)
{
	__atomic_fetch_add(&progress, 1, __ATOMIC_RELAXED);
}

static bool
aborted(void)
{
	return __atomic_load_n(&aborting, __ATOMIC_RELAXED) != 0;
}

static bool
ctl_stopping(void)
{
	return __atomic_load_n(&ctl_stop, __ATOMIC_ACQUIRE) != 0;
}

/* ---- messages ----------------------------------------------------------------- */

static uint64_t
msg_key(unsigned tid, unsigned seq)
{
	return mix64(run_seed ^ ((uint64_t)tid << 40) ^ ((uint64_t)seq << 8)) | 1;
}

static uint32_t
msg_len(uint64_t key)
{
	if ((key >> 48) % 40 == 0)
		return 0;
	return (uint32_t)((key >> 8) % (MSG_MAX + 1));
}

static void
msg_fill(uint8_t *p, uint32_t len, uint64_t key)
{
	uint64_t x = key;
	uint32_t j;

	for (j = 0; j < len; j += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + j, &x, len - j < 8 ? len - j : 8);
	}
}

static bool
msg_same(const uint8_t *p, uint32_t len, uint64_t key)
{
	uint64_t x = key;
	uint32_t j;

	for (j = 0; j < len; j += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (memcmp(p + j, &x, len - j < 8 ? len - j : 8) != 0)
			return false;
	}
	return true;
}

/* ---- flow control --------------------------------------------------------------- */

static bool
credit_take(struct pair *p)
{
	bool ok;

	pthread_mutex_lock(&p->lock);
	while (p->credits == 0 && !aborted()) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)TICK_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&p->cond, &p->lock, &ts);
	}
	ok = p->credits > 0;
	if (ok)
		p->credits--;
	pthread_mutex_unlock(&p->lock);
	return ok;
}

static void
credit_give(struct pair *p)
{
	pthread_mutex_lock(&p->lock);
	p->credits++;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/* ---- the sending side ----------------------------------------------------------- */

static VIP_DESCRIPTOR *
sdesc(unsigned tid, unsigned k)
{
	return (VIP_DESCRIPTOR *)(void *)(sdesc_area + ((size_t)tid * SEND_WINDOW + k) * DESC_SIZE);
}

/* A completed send descriptor goes back to the thread that owns it. */
static void
send_returned(VIP_DESCRIPTOR *d, struct pair *via)
{
	ptrdiff_t off = (uint8_t *)d - sdesc_area;
	unsigned idx, tid, k;
	struct sender *s;

	if (off < 0 || off % DESC_SIZE != 0 ||
	    (size_t)off / DESC_SIZE >= nb_senders * SEND_WINDOW) {
		fail("a send queue returned an unknown descriptor %p", (void *)d);
		return;
	}
	idx = (unsigned)(off / DESC_SIZE);
	tid = idx / SEND_WINDOW;
	k = idx % SEND_WINDOW;
	s = &senders[tid];
	if (s->p != via)
		fail("pair %u's send queue returned a descriptor of thread %u (pair %u)", via->idx,
		     tid, s->p->idx);
	if (d->CS.Status != ST_SEND_OK)
		fail("send of thread %u completed with status %#x", tid, d->CS.Status);
	pthread_mutex_lock(&s->lock);
	if (s->nfree < SEND_WINDOW)
		s->free[s->nfree++] = k;
	else
		fail("thread %u got descriptor %u back twice", tid, k);
	pthread_mutex_unlock(&s->lock);
	__atomic_fetch_add(&s->p->send_done, 1, __ATOMIC_RELAXED);
	if (s->p->cq)
		__atomic_fetch_add(&cq_group_send_done, 1, __ATOMIC_RELAXED);
	tick();
}

static struct pair *
pair_of(VIP_VI_HANDLE vi, bool recv)
{
	unsigned i;

	for (i = 0; i < NB_PAIRS; i++) {
		if ((recv ? pairs[i].b : pairs[i].a) == vi)
			return &pairs[i];
	}
	return NULL;
}

/* Reap one send completion of @p s's pair (or of its CQ), whoever's it is. */
static void
reap_send(struct sender *s)
{
	VIP_DESCRIPTOR *d;
	VIP_VI_HANDLE vi = NULL;
	VIP_BOOLEAN rq = VIP_FALSE;
	struct pair *p;
	VIP_RETURN rc;

	if (!s->p->cq) {
		rc = VipSendWait(s->p->a, TICK_MS, &d);
		if (rc == VIP_SUCCESS)
			send_returned(d, s->p);
		else if (rc != VIP_TIMEOUT)
			expect(rc, VIP_SUCCESS, "VipSendWait", s->sent);
		return;
	}
	rc = VipCQDone(cq_s, &vi, &rq);
	if (rc == VIP_NOT_DONE)
		rc = VipCQWait(cq_s, TICK_MS, &vi, &rq);
	if (rc == VIP_TIMEOUT)
		return;
	if (!expect(rc, VIP_SUCCESS, "VipCQDone/VipCQWait on the send CQ", s->sent))
		return;
	p = pair_of(vi, false);
	if (p == NULL || rq) {
		fail("send CQ entry of VI %p, %s queue: not a sending VI", vi,
		     rq ? "receive" : "send");
		return;
	}
	/* the entry says the head of that send queue completed */
	rc = VipSendDone(vi, &d);
	if (expect(rc, VIP_SUCCESS, "VipSendDone after a send CQ entry", s->sent))
		send_returned(d, p);
}

static bool
sends_all_done(const struct pair *p)
{
	if (p->cq)
		return __atomic_load_n(&cq_group_send_done, __ATOMIC_RELAXED) == cq_group_total;
	return __atomic_load_n(&p->send_done, __ATOMIC_RELAXED) == p->total;
}

static void *
sender_main(void *arg)
{
	struct sender *s = arg;
	struct pair *p = s->p;

	while (s->sent < MSGS && !aborted()) {
		uint64_t key = msg_key(s->id, s->sent);
		uint32_t len = msg_len(key);
		VIP_DESCRIPTOR *d;
		int k = -1;

		pthread_mutex_lock(&s->lock);
		if (s->nfree > 0)
			k = (int)s->free[--s->nfree];
		pthread_mutex_unlock(&s->lock);
		if (k < 0) {
			reap_send(s);
			continue;
		}
		if (!credit_take(p))
			break;
		msg_fill(s->sbuf[k], len, key);
		d = h_desc1(sdesc(s->id, (unsigned)k), s->sbuf[k], p->buf_mh, len, true);
		d->CS.Control = VIP_CONTROL_IMMEDIATE;
		d->CS.ImmediateData = (s->id << 20) | s->sent;
		if (!expect(VipPostSend(p->a, d, pmem_mh), VIP_SUCCESS, "VipPostSend", s->sent))
			break;
		s->sent++;
		tick();
	}
	/* the last one out reaps what is left of its queue (or CQ) */
	while (!sends_all_done(p) && !aborted())
		reap_send(s);
	__atomic_fetch_sub(&data_left, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* ---- the receiving side ----------------------------------------------------------- */

/* A completed receive of pair @p p: check, post it again, give a credit. */
static void
recv_one(struct pair *p, VIP_DESCRIPTOR *d)
{
	ptrdiff_t off = (uint8_t *)d - p->rdesc;
	unsigned k, tid, seq;
	struct sender *s;
	uint64_t key;
	uint32_t len;

	if (off < 0 || off % DESC_SIZE != 0 || (size_t)off / DESC_SIZE >= p->window) {
		fail("pair %u's receive queue returned an unknown descriptor %p", p->idx, (void *)d);
		return;
	}
	k = (unsigned)(off / DESC_SIZE);
	tid = d->CS.ImmediateData >> 20;
	seq = d->CS.ImmediateData & 0xfffff;
	if (d->CS.Status != (ST_RECV_OK | VIP_STATUS_IMMEDIATE) || tid >= nb_senders ||
	    senders[tid].p != p || seq >= MSGS) {
		fail("pair %u: receive with status %#x, immediate %#x (thread %u, sequence %u)",
		     p->idx, d->CS.Status, d->CS.ImmediateData, tid, seq);
	} else {
		s = &senders[tid];
		key = msg_key(tid, seq);
		len = msg_len(key);
		if (d->CS.Length != len || !msg_same(p->rbuf[k], len, key))
			fail("pair %u: message (%u, %u) of %u bytes arrived with %u bytes%s", p->idx,
			     tid, seq, len, d->CS.Length,
			     d->CS.Length == len ? ", content differs" : "");
		if (__atomic_exchange_n(&s->seen[seq], 1, __ATOMIC_RELAXED) != 0)
			fail("pair %u: message (%u, %u) arrived twice", p->idx, tid, seq);
		if (p->receivers == 1 && !p->cq) {
			/* one thread posts, one reaps: in order */
			if (seq != s->next_seq)
				fail("pair %u: message (%u, %u) arrived after (%u, %u)", p->idx, tid,
				     seq, tid, s->next_seq - 1);
			s->next_seq = seq + 1;
		}
	}
	h_desc1(d, p->rbuf[k], p->buf_mh, MSG_MAX, false);
	if (!expect(VipPostRecv(p->b, d, pmem_mh), VIP_SUCCESS, "VipPostRecv again", seq))
		return;
	credit_give(p);
	__atomic_fetch_add(&p->received, 1, __ATOMIC_RELAXED);
	if (p->cq)
		__atomic_fetch_add(&cq_group_received, 1, __ATOMIC_RELAXED);
	tick();
}

/* Reaper of the shared receive CQ (pairs 0 and 1). */
static void *
reaper_main(void *arg)
{
	unsigned n = 0;
	VIP_DESCRIPTOR *d;

	(void)arg;
	while (__atomic_load_n(&cq_group_received, __ATOMIC_RELAXED) < cq_group_total &&
	       !aborted()) {
		VIP_VI_HANDLE vi = NULL;
		VIP_BOOLEAN rq = VIP_FALSE;
		struct pair *p;
		VIP_RETURN rc = VipCQDone(cq_r, &vi, &rq);

		if (rc == VIP_NOT_DONE)
			rc = VipCQWait(cq_r, TICK_MS, &vi, &rq);
		if (rc == VIP_TIMEOUT)
			continue;
		if (!expect(rc, VIP_SUCCESS, "VipCQDone/VipCQWait on the receive CQ", n))
			break;
		p = pair_of(vi, true);
		if (p == NULL || !rq) {
			fail("receive CQ entry of VI %p, %s queue: not a receiving VI", vi,
			     rq ? "receive" : "send");
			continue;
		}
		rc = VipRecvDone(vi, &d);
		if (!expect(rc, VIP_SUCCESS, "VipRecvDone after a receive CQ entry", n))
			continue;
		recv_one(p, d);
		n++;
	}
	__atomic_fetch_sub(&data_left, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A thread reaping a receive queue of its own (pairs 2 and 3). */
static void *
receiver_main(void *arg)
{
	struct pair *p = arg;
	unsigned n = 0;
	VIP_DESCRIPTOR *d;

	while (__atomic_load_n(&p->received, __ATOMIC_RELAXED) < p->total && !aborted()) {
		VIP_RETURN rc = VipRecvWait(p->b, TICK_MS, &d);

		if (rc == VIP_TIMEOUT)
			continue;
		if (!expect(rc, VIP_SUCCESS, "VipRecvWait", n))
			break;
		recv_one(p, d);
		n++;
	}
	__atomic_fetch_sub(&data_left, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* ---- control threads ---------------------------------------------------------------- */

struct ctl_mem {
	uint8_t *heap;             /* ordinary memory, registered in slices */
	size_t heap_len;
	uint8_t *obj_area;         /* provider memory of the objects thread */
	uint8_t *conn_area;        /* provider memory of the connections thread */
};

/* VIs, CQs, memory, tags, CQ resizing, queries, a second NIC handle. */
static void *
ctl_objects_main(void *arg)
{
	struct ctl_mem *cm = arg;
	uint64_t rng = run_seed ^ 0x0b1ec75ull;
	unsigned i;

	for (i = 0; !aborted() && (i < MIN_CTL_ITER || !ctl_stopping()); i++) {
		VIP_CQ_HANDLE cq = NULL;
		VIP_VI_HANDLE v1 = NULL, v2 = NULL;
		VIP_VI_ATTRIBUTES va, qa;
		VIP_VI_STATE st;
		VIP_BOOLEAN se, re;
		VIP_MEM_ATTRIBUTES ma, qm;
		VIP_MEM_HANDLE mh;
		VIP_PROTECTION_HANDLE pt2;
		VIP_NIC_ATTRIBUTES na;
		VIP_DPDK_COUNTERS c;
		VIP_DESCRIPTOR *d = (VIP_DESCRIPTOR *)(void *)cm->obj_area, *out;
		size_t off, len;
		uint8_t *pm;

		expect(VipCreateCQ(nic, 8 + (h_rand(&rng) % 64), &cq), VIP_SUCCESS, "VipCreateCQ",
		       i);
		h_vi_attrs(&va, pt);
		expect(VipCreateVi(nic, &va, cq, cq_r, &v1), VIP_SUCCESS,
		       "VipCreateVi on a new CQ and the shared receive CQ", i);
		expect(VipCreateVi(nic, &va, NULL, NULL, &v2), VIP_SUCCESS, "VipCreateVi", i);
		if (expect(VipQueryVi(v1, &st, &qa, &se, &re), VIP_SUCCESS, "VipQueryVi", i) &&
		    (st != VIP_STATE_IDLE || !se || !re))
			fail("new VI: state %d, queues empty %d/%d", (int)st, se, re);
		expect(VipDestroyCQ(cq), VIP_ERROR_RESOURCE, "VipDestroyCQ while a VI uses it", i);
		/* an Idle VI's receive is flushed by VipDisconnect (§5.1) */
		h_desc1(d, cm->obj_area + DESC_SIZE, pmem_mh, 256, false);
		expect(VipPostRecv(v2, d, pmem_mh), VIP_SUCCESS, "VipPostRecv on an Idle VI", i);
		expect(VipRecvDone(v2, &out), VIP_NOT_DONE, "VipRecvDone on an Idle VI", i);
		expect(VipDisconnect(v2), VIP_SUCCESS, "VipDisconnect of an Idle VI", i);
		if (expect(VipRecvWait(v2, 20000, &out), VIP_SUCCESS, "VipRecvWait for the flush",
			   i) &&
		    (out != d || !(out->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR)))
			fail("flushed receive: status %#x", out->CS.Status);
		expect(VipDestroyVi(v1), VIP_SUCCESS, "VipDestroyVi", i);
		expect(VipDestroyVi(v2), VIP_SUCCESS, "VipDestroyVi", i);
		expect(VipDestroyCQ(cq), VIP_SUCCESS, "VipDestroyCQ", i);

		/* memory */
		memset(&ma, 0, sizeof(ma));
		ma.Ptag = pt;
		off = (size_t)(h_rand(&rng) % (cm->heap_len / 2));
		len = 1 + (size_t)(h_rand(&rng) % (cm->heap_len / 2));
		if (expect(VipRegisterMem(nic, cm->heap + off, len, &ma, &mh), VIP_SUCCESS,
			   "VipRegisterMem of ordinary memory", i)) {
			if (expect(VipQueryMem(nic, cm->heap + off, mh, &qm), VIP_SUCCESS,
				   "VipQueryMem", i) && qm.Ptag != pt)
				fail("VipQueryMem: another tag");
			expect(VipDeregisterMem(nic, cm->heap + off, mh), VIP_SUCCESS,
			       "VipDeregisterMem of ordinary memory", i);
		}
		if (expect(VipRegisterMem(nic, cm->obj_area, 8192, &ma, &mh), VIP_SUCCESS,
			   "VipRegisterMem inside the provider region", i))
			expect(VipDeregisterMem(nic, cm->obj_area, mh), VIP_SUCCESS,
			       "VipDeregisterMem inside the provider region", i);
		if (i % 16 == 5 &&
		    expect(VipDpdkAllocMem(nic, 65536, (void **)&pm), VIP_SUCCESS,
			   "VipDpdkAllocMem", i)) {
			if (expect(VipRegisterMem(nic, pm, 65536, &ma, &mh), VIP_SUCCESS,
				   "VipRegisterMem of new provider memory", i))
				expect(VipDeregisterMem(nic, pm, mh), VIP_SUCCESS,
				       "VipDeregisterMem", i);
			expect(VipDpdkFreeMem(nic, pm), VIP_SUCCESS, "VipDpdkFreeMem", i);
		}
		if (expect(VipCreatePtag(nic, &pt2), VIP_SUCCESS, "VipCreatePtag", i))
			expect(VipDestroyPtag(nic, pt2), VIP_SUCCESS, "VipDestroyPtag", i);

		/* the shared receive CQ, while two threads reap it: it never
		 * holds more than the receives of pairs 0 and 1 */
		expect(VipResizeCQ(cq_r, i & 1 ? 4 * RECV_WINDOW : 8 * RECV_WINDOW), VIP_SUCCESS,
		       "VipResizeCQ of the shared receive CQ", i);
		if (expect(VipQueryNic(nic, &na), VIP_SUCCESS, "VipQueryNic", i) && !na.ThreadSafe)
			fail("VipQueryNic: ThreadSafe false");
		expect(h_counters(nic, &c), VIP_SUCCESS, "VipQuerySystemManagementInfo", i);
		if (i % 25 == 3) {
			VIP_NIC_HANDLE n2;

			if (expect(VipOpenNic("via0", &n2), VIP_SUCCESS, "VipOpenNic, a second handle",
				   i))
				expect(VipCloseNic(n2), VIP_SUCCESS, "VipCloseNic, the second handle",
				       i);
		}
		__atomic_store_n(&ctl_iter[0], i + 1, __ATOMIC_RELAXED);
		tick();
	}
	return NULL;
}

/* Connections made, used once and torn down, both ways of connecting. */
static void *
ctl_connections_main(void *arg)
{
	struct ctl_mem *cm = arg;
	unsigned i;

	for (i = 0; !aborted() && (i < MIN_CTL_ITER || !ctl_stopping()); i++) {
		VIP_VI_HANDLE x = NULL, y = NULL;
		VIP_VI_ATTRIBUTES va;
		VIP_DESCRIPTOR *sd = (VIP_DESCRIPTOR *)(void *)cm->conn_area;
		VIP_DESCRIPTOR *rd = (VIP_DESCRIPTOR *)(void *)(cm->conn_area + DESC_SIZE), *out;
		uint8_t *sb = cm->conn_area + 2 * DESC_SIZE, *rb = sb + MSG_MAX;
		uint64_t key = msg_key(999, i);
		uint32_t len = msg_len(key);
		char tag[32];

		h_vi_attrs(&va, pt);
		if (!expect(VipCreateVi(nic, &va, NULL, NULL, &x), VIP_SUCCESS, "VipCreateVi", i) ||
		    !expect(VipCreateVi(nic, &va, NULL, NULL, &y), VIP_SUCCESS, "VipCreateVi", i)) {
			if (x != NULL)
				VipDestroyVi(x);
			break;
		}
		snprintf(tag, sizeof(tag), "ctl%u", i);
		/* the _rc forms: this thread reports through fail(), not checks */
		if (expect(i & 1 ? h_peer_connect_rc(nic, x, nic, y, tag, 20000)
				 : h_connect_rc(nic, x, nic, y, tag, 20000, NULL),
			   VIP_SUCCESS, i & 1 ? "connect peer-to-peer" : "connect client/server",
			   i)) {
			h_desc1(rd, rb, pmem_mh, MSG_MAX, false);
			msg_fill(sb, len, key);
			h_desc1(sd, sb, pmem_mh, len, true);
			expect(VipPostRecv(y, rd, pmem_mh), VIP_SUCCESS, "VipPostRecv", i);
			expect(VipPostSend(x, sd, pmem_mh), VIP_SUCCESS, "VipPostSend", i);
			if (expect(VipSendWait(x, 20000, &out), VIP_SUCCESS, "VipSendWait", i) &&
			    (out != sd || out->CS.Status != ST_SEND_OK))
				fail("connection %u: send status %#x", i, out->CS.Status);
			if (expect(VipRecvWait(y, 20000, &out), VIP_SUCCESS, "VipRecvWait", i) &&
			    (out != rd || out->CS.Status != ST_RECV_OK || out->CS.Length != len ||
			     !msg_same(rb, len, key)))
				fail("connection %u: receive status %#x, length %u of %u", i,
				     out->CS.Status, out->CS.Length, len);
		}
		expect(VipDisconnect(x), VIP_SUCCESS, "VipDisconnect", i);
		expect(VipDisconnect(y), VIP_SUCCESS, "VipDisconnect", i);
		while (VipSendDone(x, &out) == VIP_SUCCESS || VipRecvDone(y, &out) == VIP_SUCCESS)
			;
		expect(VipDestroyVi(x), VIP_SUCCESS, "VipDestroyVi", i);
		expect(VipDestroyVi(y), VIP_SUCCESS, "VipDestroyVi", i);
		__atomic_store_n(&ctl_iter[1], i + 1, __ATOMIC_RELAXED);
		tick();
	}
	return NULL;
}

/* ---- main ------------------------------------------------------------------------------ */

static void
dump_state(void)
{
	unsigned i;

	for (i = 0; i < NB_PAIRS; i++)
		h_note("pair %u: %u of %u received, %u sends reaped, %u credits", i,
		       __atomic_load_n(&pairs[i].received, __ATOMIC_RELAXED), pairs[i].total,
		       __atomic_load_n(&pairs[i].send_done, __ATOMIC_RELAXED), pairs[i].credits);
	for (i = 0; i < nb_senders; i++)
		h_note("thread %u (pair %u): %u of %u sent, %u descriptors free", i,
		       senders[i].p->idx, senders[i].sent, MSGS, senders[i].nfree);
	h_note("control threads: %u and %u iterations", ctl_iter[0], ctl_iter[1]);
}

static bool
same_live(const VIP_DPDK_COUNTERS *a, const VIP_DPDK_COUNTERS *b)
{
	return a->VisCreated - a->VisDestroyed - a->ReclaimedVis ==
		       b->VisCreated - b->VisDestroyed - b->ReclaimedVis &&
	       a->CqsCreated - a->CqsDestroyed - a->ReclaimedCqs ==
		       b->CqsCreated - b->CqsDestroyed - b->ReclaimedCqs &&
	       a->RegionsRegistered - a->RegionsDeregistered - a->ReclaimedRegions ==
		       b->RegionsRegistered - b->RegionsDeregistered - b->ReclaimedRegions &&
	       a->PtagsCreated - a->PtagsDestroyed - a->ReclaimedPtags ==
		       b->PtagsCreated - b->PtagsDestroyed - b->ReclaimedPtags;
}

/* Everything above, once, against a viad polling in @p poll_mode.
 * @return false after a deadlock (threads are stuck: the test must end) */
static bool
run(const char *poll_mode)
{
	/* senders per pair, receiving threads per pair (0: the shared CQ's) */
	static const unsigned nsend[NB_PAIRS] = { 3, 1, 2, 1 };
	static const unsigned nrecv[NB_PAIRS] = { 0, 0, 2, 1 };
	/* receives posted ahead: many, few, some, one (strict alternation) */
	static const unsigned window[NB_PAIRS] = { RECV_WINDOW, 4, 16, 1 };
	enum { NB_REAPERS = 2 };
	pthread_t th[32], ctl_th[2];
	unsigned nth = 0, nb_data, i, k, t, delivered = 0, seen_ok = 0, conn_lost;
	struct viad_proc v;
	VIP_NIC_ATTRIBUTES na;
	VIP_MEM_ATTRIBUTES ma;
	VIP_VI_ATTRIBUTES va;
	VIP_DPDK_COUNTERS c0, c1, c2;
	struct ctl_mem cm = { NULL, 0, NULL, NULL };
	uint8_t *pmem = NULL, *hmem = NULL, *pfree, *hfree;
	const size_t pmem_len = 4u << 20, hmem_len = 1u << 20;
	uint64_t t0, last_change;
	unsigned last_progress;
	bool deadlock = false, ctl_started[2] = { false, false };

	const char *sets[2] = { poll_mode, NULL };

	/* a fresh start: nothing of an earlier run */
	nic = NULL;
	pt = NULL;
	cq_s = cq_r = NULL;
	memset(pairs, 0, sizeof(pairs));
	memset(senders, 0, sizeof(senders));
	nb_senders = 0;
	pmem_mh = hmem_mh = 0;
	cq_group_total = cq_group_received = cq_group_send_done = 0;
	progress = aborting = ctl_stop = data_left = 0;
	memset(ctl_iter, 0, sizeof(ctl_iter));
	memset(async_errors, 0, sizeof(async_errors));
	nb_fail = 0;
	h_note("---- viad with %s", poll_mode);
	if (viad_start(&v, "threads", sets) != 0)
		return true;
	if (!CHECK_RET(VipOpenNic("via0", &nic), VIP_SUCCESS, "open via0") ||
	    !CHECK_RET(VipQueryNic(nic, &na), VIP_SUCCESS, "VipQueryNic") ||
	    !CHECK_RET(VipCreatePtag(nic, &pt), VIP_SUCCESS, "create a protection tag"))
		goto stop;
	CHECK(na.ThreadSafe == VIP_TRUE, "VipQueryNic: ThreadSafe is VIP_TRUE (§9.10.4)");
	VipErrorCallback(nic, NULL, err_handler);

	/* memory: descriptors (and pairs 0, 2's buffers) in provider memory,
	 * pairs 1, 3's buffers in ordinary memory */
	memset(&ma, 0, sizeof(ma));
	ma.Ptag = pt;
	hmem = aligned_alloc(4096, hmem_len);
	if (hmem == NULL ||
	    !CHECK_RET(h_alloc(nic, pmem_len, (void **)&pmem), VIP_SUCCESS,
		       "provider memory") ||
	    !CHECK_RET(VipRegisterMem(nic, pmem, pmem_len, &ma, &pmem_mh), VIP_SUCCESS,
		       "register provider memory") ||
	    !CHECK_RET(VipRegisterMem(nic, hmem, hmem_len, &ma, &hmem_mh), VIP_SUCCESS,
		       "register ordinary memory"))
		goto stop;
	pfree = pmem;
	hfree = hmem;
	sdesc_area = pfree;
	pfree += (size_t)MAX_SENDERS * SEND_WINDOW * DESC_SIZE;
	cm.obj_area = pfree;
	pfree += 8192;
	cm.conn_area = pfree;
	pfree += 2 * DESC_SIZE + 2 * MSG_MAX;
	cm.heap_len = 128u << 10;
	cm.heap = aligned_alloc(4096, cm.heap_len);
	if (cm.heap == NULL)
		goto stop;
	memset(cm.heap, 0, cm.heap_len);

	if (!CHECK_RET(VipCreateCQ(nic, 2 * 4 * SEND_WINDOW, &cq_s), VIP_SUCCESS, "send CQ") ||
	    !CHECK_RET(VipCreateCQ(nic, 4 * RECV_WINDOW, &cq_r), VIP_SUCCESS, "receive CQ"))
		goto stop;
	h_vi_attrs(&va, pt);
	for (i = 0; i < NB_PAIRS; i++) {
		struct pair *p = &pairs[i];
		char tag[16];

		p->idx = i;
		p->cq = i < 2;
		p->heap = i & 1;
		p->senders = nsend[i];
		p->receivers = nrecv[i];
		p->buf_mh = p->heap ? hmem_mh : pmem_mh;
		p->total = nsend[i] * MSGS;
		p->window = window[i];
		p->credits = window[i];
		pthread_mutex_init(&p->lock, NULL);
		pthread_cond_init(&p->cond, NULL);
		if (p->cq)
			cq_group_total += p->total;
		if (!CHECK_RET(VipCreateVi(nic, &va, p->cq ? cq_s : NULL, NULL, &p->a), VIP_SUCCESS,
			       "pair %u: create the sending VI", i) ||
		    !CHECK_RET(VipCreateVi(nic, &va, NULL, p->cq ? cq_r : NULL, &p->b), VIP_SUCCESS,
			       "pair %u: create the receiving VI", i))
			goto stop;
		snprintf(tag, sizeof(tag), "pair%u", i);
		if (!h_peer_connect(nic, p->a, nic, p->b, tag, 20000))
			goto stop;
		p->rdesc = pfree;
		pfree += RECV_WINDOW * DESC_SIZE;
		for (k = 0; k < p->window; k++) {
			VIP_DESCRIPTOR *d = (VIP_DESCRIPTOR *)(void *)(p->rdesc + k * DESC_SIZE);

			if (p->heap) {
				p->rbuf[k] = hfree;
				hfree += MSG_MAX;
			} else {
				p->rbuf[k] = pfree;
				pfree += MSG_MAX;
			}
			h_desc1(d, p->rbuf[k], p->buf_mh, MSG_MAX, false);
			if (VipPostRecv(p->b, d, pmem_mh) != VIP_SUCCESS) {
				CHECK(0, "pair %u: post receive %u", i, k);
				goto stop;
			}
		}
		for (t = 0; t < nsend[i]; t++) {
			struct sender *s = &senders[nb_senders];

			s->id = nb_senders++;
			s->p = p;
			pthread_mutex_init(&s->lock, NULL);
			for (k = 0; k < SEND_WINDOW; k++) {
				if (p->heap) {
					s->sbuf[k] = hfree;
					hfree += MSG_MAX;
				} else {
					s->sbuf[k] = pfree;
					pfree += MSG_MAX;
				}
				s->free[s->nfree++] = SEND_WINDOW - 1 - k;
			}
		}
	}
	if (!CHECK(pfree <= pmem + pmem_len && hfree <= hmem + hmem_len,
		   "buffers fit in the regions (%zu of %zu, %zu of %zu bytes)",
		   (size_t)(pfree - pmem), pmem_len, (size_t)(hfree - hmem), hmem_len))
		goto stop;

	h_note("%u sending threads (%u messages each, up to %u B), %u threads reaping the shared "
	       "receive CQ, %u reaping receive queues, 2 control threads",
	       nb_senders, MSGS, MSG_MAX, NB_REAPERS, nrecv[2] + nrecv[3]);
	h_counters(nic, &c0);
	t0 = h_now_ms();
	nb_data = nb_senders + NB_REAPERS + nrecv[2] + nrecv[3];
	__atomic_store_n(&data_left, nb_data, __ATOMIC_RELEASE);
	for (i = 0; i < NB_REAPERS; i++)
		if (pthread_create(&th[nth], NULL, reaper_main, NULL) == 0)
			nth++;
	for (i = 0; i < NB_PAIRS; i++) {
		for (k = 0; k < nrecv[i]; k++)
			if (pthread_create(&th[nth], NULL, receiver_main, &pairs[i]) == 0)
				nth++;
	}
	for (i = 0; i < nb_senders; i++)
		if (pthread_create(&th[nth], NULL, sender_main, &senders[i]) == 0)
			nth++;
	ctl_started[0] = pthread_create(&ctl_th[0], NULL, ctl_objects_main, &cm) == 0;
	ctl_started[1] = pthread_create(&ctl_th[1], NULL, ctl_connections_main, &cm) == 0;
	if (!CHECK(nth == nb_data && ctl_started[0] && ctl_started[1], "start %u threads",
		   nb_data + 2)) {
		__atomic_store_n(&aborting, 1, __ATOMIC_RELAXED);
		deadlock = true;       /* the missing ones never end */
	}

	/* the watchdog: progress of any kind, or a deadlock */
	last_progress = __atomic_load_n(&progress, __ATOMIC_RELAXED);
	last_change = h_now_ms();
	while (!deadlock && __atomic_load_n(&data_left, __ATOMIC_ACQUIRE) > 0) {
		unsigned now_p;

		h_sleep_ms(100);
		now_p = __atomic_load_n(&progress, __ATOMIC_RELAXED);
		if (now_p != last_progress) {
			last_progress = now_p;
			last_change = h_now_ms();
		} else if (h_now_ms() - last_change > STALL_MS) {
			deadlock = true;
		}
	}
	if (!deadlock) {
		for (i = 0; i < nth; i++)
			pthread_join(th[i], NULL);
		h_note("data path done after %llu ms", (unsigned long long)(h_now_ms() - t0));
		__atomic_store_n(&ctl_stop, 1, __ATOMIC_RELEASE);
		for (i = 0; i < 2; i++) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += STALL_MS / 1000;
			if (pthread_timedjoin_np(ctl_th[i], NULL, &ts) != 0) {
				CHECK(0, "control thread %u stops within %u ms (deadlock?)", i,
				      STALL_MS);
				deadlock = true;
			}
		}
	}
	if (deadlock) {
		CHECK(0, "no deadlock: progress stopped for %u ms", STALL_MS);
		dump_state();
		__atomic_store_n(&aborting, 1, __ATOMIC_RELAXED);
		viad_kill(&v);
		/* threads stuck in the library cannot be joined */
		return false;
	}
	h_note("%llu ms in all; control threads: %u rounds of objects, %u connections",
	       (unsigned long long)(h_now_ms() - t0), ctl_iter[0], ctl_iter[1]);
	dump_state();

	/* verdicts */
	for (i = 0; i < NB_PAIRS; i++)
		delivered += pairs[i].received;
	for (i = 0; i < nb_senders; i++) {
		unsigned n = 0;

		for (k = 0; k < MSGS; k++)
			n += senders[i].seen[k];
		seen_ok += n == MSGS && senders[i].sent == MSGS;
	}
	CHECK(nb_fail == 0, "no thread saw an unexpected return, status, message or "
			    "asynchronous error (%u failures)", nb_fail);
	CHECK(delivered == nb_senders * MSGS && seen_ok == nb_senders,
	      "every one of the %u messages of the %u sending threads arrived exactly once "
	      "(%u deliveries, %u threads complete)",
	      nb_senders * MSGS, nb_senders, delivered, seen_ok);
	CHECK(ctl_iter[0] >= MIN_CTL_ITER && ctl_iter[1] >= MIN_CTL_ITER,
	      "the control threads ran (%u and %u rounds)", ctl_iter[0], ctl_iter[1]);
	conn_lost = __atomic_load_n(&async_errors[VIP_ERROR_CONN_LOST], __ATOMIC_RELAXED);
	CHECK(conn_lost <= ctl_iter[1], "CONN_LOST only for the control thread's disconnects (%u)",
	      conn_lost);
	h_counters(nic, &c1);
	CHECK(c1.FramesDropped == c0.FramesDropped && c1.CqOverruns == c0.CqOverruns,
	      "no frame dropped (%" PRIu64 "), no CQ overrun (%" PRIu64 ")",
	      c1.FramesDropped - c0.FramesDropped, c1.CqOverruns - c0.CqOverruns);
	CHECK(same_live(&c0, &c1),
	      "the control threads left no VI, CQ, region or tag behind (%" PRIu64 " VIs, %" PRIu64
	      " CQs, %" PRIu64 " regions created meanwhile)",
	      c1.VisCreated - c0.VisCreated, c1.CqsCreated - c0.CqsCreated,
	      c1.RegionsRegistered - c0.RegionsRegistered);

stop:
	for (i = 0; i < NB_PAIRS; i++)
		h_pair_drop(pairs[i].a, pairs[i].b);
	if (cq_s != NULL) {
		VIP_VI_HANDLE vi;
		VIP_BOOLEAN rq;

		while (VipCQDone(cq_s, &vi, &rq) == VIP_SUCCESS || VipCQDone(cq_r, &vi, &rq) ==
		       VIP_SUCCESS)
			;
		CHECK_RET(VipDestroyCQ(cq_s), VIP_SUCCESS, "destroy the send CQ");
	}
	if (cq_r != NULL)
		CHECK_RET(VipDestroyCQ(cq_r), VIP_SUCCESS, "destroy the receive CQ");
	if (nic != NULL) {
		if (pmem != NULL) {
			CHECK_RET(VipDeregisterMem(nic, pmem, pmem_mh), VIP_SUCCESS, "deregister");
			CHECK_RET(h_free(nic, pmem), VIP_SUCCESS, "free provider memory");
		}
		if (hmem_mh != 0)
			CHECK_RET(VipDeregisterMem(nic, hmem, hmem_mh), VIP_SUCCESS, "deregister");
		h_counters(nic, &c2);
		h_note("viad: %" PRIu64 " VIs, %" PRIu64 " CQs created in all", c2.VisCreated,
		       c2.CqsCreated);
		CHECK_RET(VipCloseNic(nic), VIP_SUCCESS, "close");
	}
	free(hmem);
	free(cm.heap);
	CHECK(viad_alive(&v), "viad is still running");
	viad_stop(&v);
	return true;
}

int
main(int argc, char **argv)
{
	h_init(argc, argv, 110);
	run_seed = h_seed();
	/* the poll lcore sleeping 100 us at a time when idle, and sleeping
	 * until a post wakes it (NEED_WAKEUP): many threads ring at once */
	if (run("viad.poll_mode=backoff"))
		run("viad.poll_mode=adaptive");
	return h_finish();
}
