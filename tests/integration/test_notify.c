/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion notification and CQ resizing through a real viad (VIA 1.0
 * §9.6.9-9.6.11, §9.7.3, §11.3.14, §6.4.1):
 *
 * - VipSendNotify / VipRecvNotify / VipCQNotify: a complete head is handed
 *   over at once, in the calling thread; otherwise the handler runs once,
 *   on another thread, when the next completion arrives (woken by it, not
 *   by a timer); registrations wait in order, one completion each; a
 *   handler may re-arm itself; the notify thread costs no CPU while it
 *   waits.
 * - Cancellation: destroying the VI or CQ cancels pending handlers, which
 *   never run; VipDestroyCQ / VipDestroyVi wait for a handler of theirs
 *   that runs on the notify thread; a handler may destroy its own VI; a
 *   VipDestroyCQ that fails (VIs attached) leaves the registration armed.
 * - VipResizeCQ: the error codes, entries kept across grow and shrink,
 *   overrun counted, a VipCQWait asleep across a resize still woken, and
 *   100 resizes up and down under a stream of completions on two pairs of
 *   VIs, consumed by VipCQWait and then by re-armed VipCQNotify handlers:
 *   every completion is seen exactly once.
 *
 * One viad with the harness defaults (the loopback NIC "via0").
 *
 * Usage: it_notify PATH/TO/viad
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <poll.h>
#include <sys/mman.h>

#include "harness.h"
#include "via_abi.h"
#include "via_ctl.h"

#define ST_SEND_OK (VIP_STATUS_DONE | VIP_STATUS_OP_SEND)
#define ST_RECV_OK (VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE)

/* A registered region with a bump allocator. */
struct mem {
	uint8_t *base;
	size_t len, used;
	VIP_MEM_HANDLE mh;
};

static VIP_NIC_HANDLE nic;
static VIP_PROTECTION_HANDLE pt;
static VIP_NIC_ATTRIBUTES nic_attrs;
static struct mem pm;

/* ---- memory and descriptors ---------------------------------------------- */

static void *
mem_get(size_t size, size_t align)
{
	size_t off = (pm.used + align - 1) & ~(align - 1);

	if (off + size > pm.len) {
		CHECK(0, "test bug: region exhausted");
		off = 0;
	}
	pm.used = off + size;
	return pm.base + off;
}

static VIP_DESCRIPTOR *
desc_new(void)
{
	VIP_DESCRIPTOR *d = mem_get(sizeof(VIP_DESCRIPTOR), VIP_DESCRIPTOR_ALIGNMENT);

	memset(d, 0, sizeof(*d));
	return d;
}

/* (Re)fill @p d as one segment of @p len bytes at @p buf. */
static void
desc_fill(VIP_DESCRIPTOR *d, void *buf, uint32_t len, bool send, uint32_t imm)
{
	memset(d, 0, sizeof(*d));
	d->CS.SegCount = 1;
	if (send) {
		d->CS.Length = len;
		d->CS.Control = VIP_CONTROL_IMMEDIATE;
		d->CS.ImmediateData = imm;
	}
	d->DS[0].Local.Data.AddressBits = 0;
	d->DS[0].Local.Data.Address = buf;
	d->DS[0].Local.Handle = pm.mh;
	d->DS[0].Local.Length = len;
}

static VIP_DESCRIPTOR *
send1(uint32_t len, uint32_t imm)
{
	VIP_DESCRIPTOR *d = desc_new();
	uint8_t *buf = mem_get(len ? len : 1, 8);

	memset(buf, (int)imm, len);
	desc_fill(d, buf, len, true, imm);
	return d;
}

static VIP_DESCRIPTOR *
recv1(uint32_t cap)
{
	VIP_DESCRIPTOR *d = desc_new();

	desc_fill(d, mem_get(cap, 8), cap, false, 0);
	return d;
}

/* Wait until viad marked @p d Done (without dequeuing it). */
static bool
wait_status(VIP_DESCRIPTOR *d, unsigned ms)
{
	uint64_t end = h_now_ms() + ms;

	while (!(__atomic_load_n(&d->CS.Status, __ATOMIC_ACQUIRE) & VIP_STATUS_DONE)) {
		if (h_now_ms() >= end)
			return false;
		h_sleep_ms(1);
	}
	/* the CQ entry follows Status within the same completion */
	h_sleep_ms(20);
	return true;
}

/* Dequeue the next completion of @p vi's queue, which must be @p want (Done
 * polled: a queue tied to a CQ cannot be waited on). */
static bool
expect_done(VIP_VI_HANDLE vi, bool recv, VIP_DESCRIPTOR *want, const char *what)
{
	uint64_t end = h_now_ms() + 2000;
	VIP_DESCRIPTOR *out = NULL;
	VIP_RETURN rc;

	while ((rc = recv ? VipRecvDone(vi, &out) : VipSendDone(vi, &out)) == VIP_NOT_DONE &&
	       h_now_ms() < end)
		h_sleep_ms(1);
	return CHECK(rc == VIP_SUCCESS && out == want, "%s: %s completes (%s%s)", what,
		     recv ? "receive" : "send", VipDpdkReturnString(rc),
		     rc == VIP_SUCCESS && out != want ? ", ANOTHER descriptor" : "");
}

/* ---- VIs --------------------------------------------------------------------- */

static VIP_VI_HANDLE
vi_new(VIP_CQ_HANDLE scq, VIP_CQ_HANDLE rcq)
{
	VIP_VI_ATTRIBUTES a;
	VIP_VI_HANDLE vi = NULL;
	VIP_RETURN rc;

	h_vi_attrs(&a, pt);
	rc = VipCreateVi(nic, &a, scq, rcq, &vi);
	if (rc != VIP_SUCCESS) {
		CHECK_RET(rc, VIP_SUCCESS, "create a VI");
		return NULL;
	}
	return vi;
}

/* ---- handler calls ----------------------------------------------------------- */

#define MAX_CALLS 64

struct call {
	VIP_PVOID ctx;
	VIP_NIC_HANDLE nic;
	VIP_VI_HANDLE vi;
	VIP_DESCRIPTOR *desc;
	VIP_BOOLEAN recvq;
	pthread_t thread;
	pid_t tid;
	uint64_t at_ms;
};

static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rec_cond = PTHREAD_COND_INITIALIZER;
static struct call calls[MAX_CALLS];
static unsigned nb_calls;
static pid_t notify_tid;

static void
rec_reset(void)
{
	pthread_mutex_lock(&rec_lock);
	nb_calls = 0;
	pthread_mutex_unlock(&rec_lock);
}

static void
record(VIP_PVOID ctx, VIP_NIC_HANDLE n, VIP_VI_HANDLE v, VIP_DESCRIPTOR *d, VIP_BOOLEAN rq)
{
	pthread_mutex_lock(&rec_lock);
	if (nb_calls < MAX_CALLS) {
		struct call *c = &calls[nb_calls];

		c->ctx = ctx;
		c->nic = n;
		c->vi = v;
		c->desc = d;
		c->recvq = rq;
		c->thread = pthread_self();
		c->tid = (pid_t)syscall(SYS_gettid);
		c->at_ms = h_now_ms();
	}
	nb_calls++;
	pthread_cond_broadcast(&rec_cond);
	pthread_mutex_unlock(&rec_lock);
}

static unsigned
rec_count(void)
{
	unsigned n;

	pthread_mutex_lock(&rec_lock);
	n = nb_calls;
	pthread_mutex_unlock(&rec_lock);
	return n;
}

/* Wait until @p n calls were recorded. */
static bool
rec_wait(unsigned n, unsigned ms)
{
	struct timespec ts;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&rec_lock);
	while (nb_calls < n && pthread_cond_timedwait(&rec_cond, &rec_lock, &ts) == 0)
		;
	ok = nb_calls >= n;
	pthread_mutex_unlock(&rec_lock);
	return ok;
}

static void
vi_cb(VIP_PVOID ctx, VIP_NIC_HANDLE n, VIP_VI_HANDLE v, VIP_DESCRIPTOR *d)
{
	record(ctx, n, v, d, VIP_FALSE);
}

static void
cq_cb(VIP_PVOID ctx, VIP_NIC_HANDLE n, VIP_VI_HANDLE v, VIP_BOOLEAN rq)
{
	record(ctx, n, v, NULL, rq);
}

static void
quiet_errors(VIP_PVOID ctx, VIP_ERROR_DESCRIPTOR *e)
{
	/* the peer of a VI disconnected by h_pair_drop loses its connection */
	(void)ctx;
	(void)e;
}

static bool
on_other_thread(const struct call *c)
{
	return !pthread_equal(c->thread, pthread_self());
}

/* ---- Send/RecvNotify ----------------------------------------------------------- */

/* §9.6.9-9.6.10: a completed head goes to the handler at once. */
static void
test_immediate(VIP_VI_HANDLE a, VIP_VI_HANDLE b)
{
	VIP_DESCRIPTOR *r, *s, *out;

	h_note("Send/RecvNotify on a completed head: handed over at once");
	pm.used = 0;
	rec_reset();
	r = recv1(256);
	s = send1(100, 7);
	VipPostRecv(b, r, pm.mh);
	VipPostSend(a, s, pm.mh);
	if (!CHECK(wait_status(s, 2000) && wait_status(r, 2000), "send and receive complete"))
		return;
	CHECK_RET(VipSendNotify(a, (VIP_PVOID)1, vi_cb), VIP_SUCCESS, "VipSendNotify");
	CHECK(rec_count() == 1 && calls[0].desc == s && calls[0].vi == a && calls[0].nic == nic &&
	      calls[0].ctx == (VIP_PVOID)1 && !on_other_thread(&calls[0]),
	      "the handler ran before VipSendNotify returned, in the calling thread, with the "
	      "NIC, the VI, the context and the send descriptor (%u calls)", rec_count());
	CHECK(s->CS.Status == ST_SEND_OK, "its status is Done (%#x)", s->CS.Status);
	CHECK_RET(VipSendDone(a, &out), VIP_NOT_DONE, "the send was dequeued for the handler");
	CHECK_RET(VipRecvNotify(b, (VIP_PVOID)2, vi_cb), VIP_SUCCESS, "VipRecvNotify");
	CHECK(rec_count() == 2 && calls[1].desc == r && calls[1].vi == b &&
	      calls[1].ctx == (VIP_PVOID)2 && !on_other_thread(&calls[1]),
	      "the receive handler ran at once too (%u calls)", rec_count());
	CHECK(r->CS.Status == (ST_RECV_OK | VIP_STATUS_IMMEDIATE) && r->CS.Length == 100 &&
	      r->CS.ImmediateData == 7, "with the received message");
	CHECK_RET(VipRecvDone(b, &out), VIP_NOT_DONE, "the receive was dequeued for the handler");
}

/* Otherwise the handler runs once, on another thread, at the next completion. */
static void
test_deferred(VIP_VI_HANDLE a, VIP_VI_HANDLE b)
{
	VIP_DESCRIPTOR *r, *s, *r2, *s2, *out;
	uint64_t t0;

	h_note("Send/RecvNotify with nothing complete: once, on another thread, at completion");
	pm.used = 0;
	rec_reset();
	r = recv1(512);
	VipPostRecv(b, r, pm.mh);
	CHECK_RET(VipRecvNotify(b, (VIP_PVOID)3, vi_cb), VIP_SUCCESS,
		  "VipRecvNotify with a receive posted and nothing arrived");
	CHECK_RET(VipSendNotify(a, (VIP_PVOID)4, vi_cb), VIP_SUCCESS,
		  "VipSendNotify with nothing posted");
	h_sleep_ms(100);
	CHECK(rec_count() == 0, "no handler runs before a completion (%u)", rec_count());
	s = send1(200, 9);
	t0 = h_now_ms();
	VipPostSend(a, s, pm.mh);
	if (!CHECK(rec_wait(2, 2000), "both handlers run once the message is sent (%u)",
		   rec_count()))
		return;
	{
		const struct call *cr = calls[0].ctx == (VIP_PVOID)3 ? &calls[0] : &calls[1];
		const struct call *cs = calls[0].ctx == (VIP_PVOID)4 ? &calls[0] : &calls[1];

		CHECK(cr->ctx == (VIP_PVOID)3 && cr->desc == r && cr->vi == b && cr->nic == nic &&
		      on_other_thread(cr), "receive handler: the descriptor, on another thread");
		CHECK(r->CS.Status == (ST_RECV_OK | VIP_STATUS_IMMEDIATE) && r->CS.Length == 200,
		      "the message is in it");
		CHECK(cs->ctx == (VIP_PVOID)4 && cs->desc == s && cs->vi == a && on_other_thread(cs),
		      "send handler: the descriptor, on another thread");
		CHECK(pthread_equal(cr->thread, cs->thread), "both on the NIC's notify thread");
		/* a lost wake-up would show as the thread's 1 s tick */
		CHECK(cr->at_ms - t0 < 500 && cs->at_ms - t0 < 500,
		      "woken by the completions (%llu, %llu ms), not by a timer",
		      (unsigned long long)(cr->at_ms - t0), (unsigned long long)(cs->at_ms - t0));
		notify_tid = cr->tid;
	}
	CHECK_RET(VipRecvDone(b, &out), VIP_NOT_DONE, "the receive was dequeued for the handler");
	CHECK_RET(VipSendDone(a, &out), VIP_NOT_DONE, "the send was dequeued for the handler");

	/* one registration, one invocation */
	r2 = recv1(512);
	s2 = send1(10, 1);
	VipPostRecv(b, r2, pm.mh);
	VipPostSend(a, s2, pm.mh);
	wait_status(r2, 2000);
	h_sleep_ms(100);
	CHECK(rec_count() == 2, "a registration runs once: the next completion calls nothing (%u)",
	      rec_count());
	expect_done(a, false, s2, "the next send stays queued");
	expect_done(b, true, r2, "the next receive stays queued");
}

/* Registrations while one is pending wait in order, one completion each. */
static void
test_fifo(VIP_VI_HANDLE a, VIP_VI_HANDLE b)
{
	VIP_DESCRIPTOR *r[3], *s[3];
	unsigned i;

	h_note("several registrations on one queue: in order, one completion each");
	pm.used = 0;
	rec_reset();
	for (i = 0; i < 3; i++) {
		r[i] = recv1(64);
		VipPostRecv(b, r[i], pm.mh);
	}
	CHECK_RET(VipRecvNotify(b, (VIP_PVOID)10, vi_cb), VIP_SUCCESS, "first registration");
	CHECK_RET(VipRecvNotify(b, (VIP_PVOID)11, vi_cb), VIP_SUCCESS,
		  "a second one while the first is pending is not an error");
	for (i = 0; i < 3; i++) {
		s[i] = send1(16, i);
		VipPostSend(a, s[i], pm.mh);
	}
	for (i = 0; i < 3; i++)
		expect_done(a, false, s[i], "send");
	CHECK(rec_wait(2, 2000), "two handlers ran (%u)", rec_count());
	wait_status(r[2], 2000);
	h_sleep_ms(50);
	CHECK(rec_count() == 2 && calls[0].ctx == (VIP_PVOID)10 && calls[0].desc == r[0] &&
	      calls[1].ctx == (VIP_PVOID)11 && calls[1].desc == r[1],
	      "the first registration got the first message, the second the second, and the "
	      "third message none (%u calls)", rec_count());
	expect_done(b, true, r[2], "the third receive stays queued");
}

#define REARM_N 20

static unsigned rearm_fail;

static void
rearm_cb(VIP_PVOID ctx, VIP_NIC_HANDLE n, VIP_VI_HANDLE v, VIP_DESCRIPTOR *d)
{
	record(ctx, n, v, d, VIP_FALSE);
	if (rec_count() < REARM_N && VipRecvNotify(v, ctx, rearm_cb) != VIP_SUCCESS)
		__atomic_fetch_add(&rearm_fail, 1, __ATOMIC_RELAXED);
}

/* A handler re-arms itself (the usual way to take every completion). */
static void
test_rearm(VIP_VI_HANDLE a, VIP_VI_HANDLE b)
{
	VIP_DESCRIPTOR *r[REARM_N + 1], *s;
	unsigned i, ok = 0, other = 0;

	h_note("a handler that re-arms itself takes %u messages in order", REARM_N);
	pm.used = 0;
	rec_reset();
	for (i = 0; i <= REARM_N; i++) {
		r[i] = recv1(64);
		VipPostRecv(b, r[i], pm.mh);
	}
	CHECK_RET(VipRecvNotify(b, (VIP_PVOID)20, rearm_cb), VIP_SUCCESS, "arm");
	for (i = 0; i < REARM_N; i++) {
		s = send1(32, i);
		VipPostSend(a, s, pm.mh);
		expect_done(a, false, s, "send");
		/* some arrive while the handler runs, some while it is armed */
		if (i % 3 == 0)
			h_sleep_ms(2);
	}
	CHECK(rec_wait(REARM_N, 3000), "%u handler calls (%u)", REARM_N, rec_count());
	for (i = 0; i < REARM_N && i < MAX_CALLS; i++) {
		ok += calls[i].desc == r[i] && r[i]->CS.ImmediateData == i;
		other += on_other_thread(&calls[i]);
	}
	CHECK(ok == REARM_N && other == REARM_N && rearm_fail == 0,
	      "each took the next message, on the notify thread (%u in order, %u elsewhere, %u "
	      "re-arm failures)", ok, other, rearm_fail);
	s = send1(32, REARM_N);
	VipPostSend(a, s, pm.mh);
	expect_done(a, false, s, "one more send");
	wait_status(r[REARM_N], 2000);
	h_sleep_ms(50);
	CHECK(rec_count() == REARM_N, "not re-armed after the last: nothing more (%u)", rec_count());
	expect_done(b, true, r[REARM_N], "the last receive stays queued");
}

/* The notify thread sleeps while a notification waits. */
static void
test_idle_cpu(VIP_VI_HANDLE a, VIP_VI_HANDLE b)
{
	VIP_DESCRIPTOR *r, *s;
	double c0, c1;

	h_note("the notify thread costs no CPU while it waits");
	pm.used = 0;
	rec_reset();
	r = recv1(64);
	VipPostRecv(b, r, pm.mh);
	CHECK_RET(VipRecvNotify(b, NULL, vi_cb), VIP_SUCCESS, "arm");
	c0 = h_thread_cpu(getpid(), notify_tid);
	h_sleep_ms(600);
	c1 = h_thread_cpu(getpid(), notify_tid);
	CHECK(c0 >= 0 && c1 >= 0 && c1 - c0 < 0.05,
	      "notify thread %d: %.3f s of CPU in 600 ms with a notification armed", (int)notify_tid,
	      c1 - c0);
	s = send1(8, 0);
	VipPostSend(a, s, pm.mh);
	expect_done(a, false, s, "send");
	CHECK(rec_wait(1, 2000) && calls[0].desc == r, "then the handler runs");
}

/* §9.6.9-9.6.11: destruction cancels pending calls. */
static void
test_cancel(void)
{
	VIP_VI_HANDLE c, e, f;
	VIP_CQ_HANDLE cq;
	VIP_DESCRIPTOR *r, *s;
	VIP_BOOLEAN rq;
	VIP_VI_HANDLE vh;

	h_note("destroying the VI or the CQ cancels pending handlers");
	pm.used = 0;
	rec_reset();
	c = vi_new(NULL, NULL);
	CHECK_RET(VipSendNotify(c, (VIP_PVOID)30, vi_cb), VIP_SUCCESS, "arm the send queue");
	CHECK_RET(VipRecvNotify(c, (VIP_PVOID)31, vi_cb), VIP_SUCCESS, "arm the receive queue");
	CHECK_RET(VipRecvNotify(c, (VIP_PVOID)32, vi_cb), VIP_SUCCESS, "and once more");
	CHECK_RET(VipDestroyVi(c), VIP_SUCCESS, "destroy the VI");
	CHECK_RET(VipRecvNotify(c, NULL, vi_cb), VIP_INVALID_PARAMETER, "RecvNotify, destroyed VI");
	CHECK_RET(VipCreateCQ(nic, 8, &cq), VIP_SUCCESS, "a CQ");
	CHECK_RET(VipCQNotify(cq, (VIP_PVOID)33, cq_cb), VIP_SUCCESS, "arm it");
	CHECK_RET(VipDestroyCQ(cq), VIP_SUCCESS, "destroy the CQ");
	CHECK_RET(VipCQNotify(cq, NULL, cq_cb), VIP_INVALID_PARAMETER, "CQNotify, destroyed CQ");
	/* new objects may reuse the memory: nothing may fire there */
	e = vi_new(NULL, NULL);
	f = vi_new(NULL, NULL);
	if (h_connect(nic, e, nic, f, "cancel", 5000)) {
		r = recv1(64);
		s = send1(8, 0);
		VipPostRecv(f, r, pm.mh);
		VipPostSend(e, s, pm.mh);
		expect_done(e, false, s, "traffic on new VIs");
		expect_done(f, true, r, "traffic on new VIs");
	}
	h_pair_drop(e, f);
	h_sleep_ms(200);
	CHECK(rec_count() == 0, "no cancelled handler ever ran (%u)", rec_count());

	/* a DestroyCQ that fails cancels nothing */
	CHECK_RET(VipCreateCQ(nic, 8, &cq), VIP_SUCCESS, "a CQ");
	e = vi_new(NULL, cq);
	f = vi_new(NULL, NULL);
	if (!h_connect(nic, e, nic, f, "keep", 5000))
		return;
	CHECK_RET(VipCQNotify(cq, (VIP_PVOID)34, cq_cb), VIP_SUCCESS, "arm the CQ");
	CHECK_RET(VipDestroyCQ(cq), VIP_ERROR_RESOURCE, "DestroyCQ with a VI attached fails");
	r = recv1(64);
	s = send1(8, 0);
	VipPostRecv(e, r, pm.mh);
	VipPostSend(f, s, pm.mh);
	CHECK(rec_wait(1, 2000) && calls[0].ctx == (VIP_PVOID)34 && calls[0].vi == e &&
	      calls[0].recvq == VIP_TRUE && on_other_thread(&calls[0]),
	      "the registration is still armed and runs at the next entry");
	CHECK_RET(VipCQDone(cq, &vh, &rq), VIP_NOT_DONE, "the entry was taken for the handler");
	expect_done(e, true, r, "the descriptor itself is dequeued by RecvDone");
	expect_done(f, false, s, "peer send");
	h_pair_drop(e, f);
	CHECK_RET(VipDestroyCQ(cq), VIP_SUCCESS, "destroy the CQ");
}

/* A handler that blocks until released. */
static sem_t blk_entered, blk_release;
static int blk_finished;

static void
block_vi_cb(VIP_PVOID ctx, VIP_NIC_HANDLE n, VIP_VI_HANDLE v, VIP_DESCRIPTOR *d)
{
	record(ctx, n, v, d, VIP_FALSE);
	sem_post(&blk_entered);
	while (sem_wait(&blk_release) != 0 && errno == EINTR)
		;
	h_sleep_ms(20);
	__atomic_store_n(&blk_finished, 1, __ATOMIC_RELEASE);
}

static void
block_cq_cb(VIP_PVOID ctx, VIP_NIC_HANDLE n, VIP_VI_HANDLE v, VIP_BOOLEAN rq)
{
	block_vi_cb(ctx, n, v, (VIP_DESCRIPTOR *)(uintptr_t)rq);
}

struct destroyer {
	VIP_VI_HANDLE vi;
	VIP_CQ_HANDLE cq;
	VIP_RETURN rc;
	int returned;
	int finished_before;
};

static void *
destroyer_main(void *arg)
{
	struct destroyer *x = arg;

	x->rc = x->cq != NULL ? VipDestroyCQ(x->cq) : VipDestroyVi(x->vi);
	x->finished_before = __atomic_load_n(&blk_finished, __ATOMIC_ACQUIRE);
	__atomic_store_n(&x->returned, 1, __ATOMIC_RELEASE);
	return NULL;
}

static bool
sem_wait_ms(sem_t *s, unsigned ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000 + 1;
	while (sem_timedwait(s, &ts) != 0) {
		if (errno != EINTR)
			return false;
	}
	return true;
}

/* Destroy from another thread while a handler of the object runs. */
static void
test_destroy_waits(void)
{
	struct destroyer x;
	VIP_VI_HANDLE e, f;
	VIP_CQ_HANDLE cq;
	VIP_DESCRIPTOR *r, *s;
	pthread_t t;

	h_note("VipDestroyCQ / VipDestroyVi wait for a handler of theirs that runs");
	sem_init(&blk_entered, 0, 0);
	sem_init(&blk_release, 0, 0);

	/* the CQ */
	pm.used = 0;
	rec_reset();
	blk_finished = 0;
	CHECK_RET(VipCreateCQ(nic, 16, &cq), VIP_SUCCESS, "a CQ");
	e = vi_new(NULL, cq);
	f = vi_new(NULL, NULL);
	if (!h_connect(nic, e, nic, f, "blkcq", 5000))
		return;
	CHECK_RET(VipCQNotify(cq, (VIP_PVOID)40, block_cq_cb), VIP_SUCCESS, "arm a blocking handler");
	r = recv1(64);
	s = send1(8, 0);
	VipPostRecv(e, r, pm.mh);
	VipPostSend(f, s, pm.mh);
	if (!CHECK(sem_wait_ms(&blk_entered, 2000), "the handler runs and blocks"))
		return;
	expect_done(e, true, r, "dequeue the receive meanwhile");
	expect_done(f, false, s, "peer send");
	h_pair_drop(e, f);
	memset(&x, 0, sizeof(x));
	x.cq = cq;
	pthread_create(&t, NULL, destroyer_main, &x);
	h_sleep_ms(300);
	CHECK(!__atomic_load_n(&x.returned, __ATOMIC_ACQUIRE),
	      "VipDestroyCQ from another thread has not returned while the handler runs");
	sem_post(&blk_release);
	pthread_join(t, NULL);
	CHECK(x.rc == VIP_SUCCESS && x.finished_before,
	      "it returns VIP_SUCCESS once the handler has returned (%s, finished before: %d)",
	      VipDpdkReturnString(x.rc), x.finished_before);

	/* the VI */
	pm.used = 0;
	rec_reset();
	blk_finished = 0;
	e = vi_new(NULL, NULL);
	f = vi_new(NULL, NULL);
	if (!h_connect(nic, e, nic, f, "blkvi", 5000))
		return;
	r = recv1(64);
	VipPostRecv(e, r, pm.mh);
	CHECK_RET(VipRecvNotify(e, (VIP_PVOID)41, block_vi_cb), VIP_SUCCESS,
		  "arm a blocking handler");
	s = send1(8, 0);
	VipPostSend(f, s, pm.mh);
	if (!CHECK(sem_wait_ms(&blk_entered, 2000), "the handler runs and blocks"))
		return;
	expect_done(f, false, s, "peer send");
	VipDisconnect(e);
	memset(&x, 0, sizeof(x));
	x.vi = e;
	pthread_create(&t, NULL, destroyer_main, &x);
	h_sleep_ms(300);
	CHECK(!__atomic_load_n(&x.returned, __ATOMIC_ACQUIRE),
	      "VipDestroyVi from another thread has not returned while the handler runs");
	sem_post(&blk_release);
	pthread_join(t, NULL);
	CHECK(x.rc == VIP_SUCCESS && x.finished_before,
	      "it returns VIP_SUCCESS once the handler has returned (%s, finished before: %d)",
	      VipDpdkReturnString(x.rc), x.finished_before);
	h_vi_drop(f);
	sem_destroy(&blk_entered);
	sem_destroy(&blk_release);
}

static VIP_RETURN self_destroy_rc = VIP_NOT_DONE;

static void
self_destroy_cb(VIP_PVOID ctx, VIP_NIC_HANDLE n, VIP_VI_HANDLE v, VIP_DESCRIPTOR *d)
{
	VipDisconnect(v);
	self_destroy_rc = VipDestroyVi(v);
	record(ctx, n, v, d, VIP_FALSE);
}

/* A handler may destroy its own VI (and must not wait for itself). */
static void
test_self_destroy(void)
{
	VIP_VI_HANDLE e, f;
	VIP_DESCRIPTOR *r, *s;

	h_note("a handler destroys its own VI");
	pm.used = 0;
	rec_reset();
	e = vi_new(NULL, NULL);
	f = vi_new(NULL, NULL);
	if (!h_connect(nic, e, nic, f, "self", 5000))
		return;
	r = recv1(64);
	VipPostRecv(e, r, pm.mh);
	CHECK_RET(VipRecvNotify(e, NULL, self_destroy_cb), VIP_SUCCESS, "arm");
	s = send1(8, 0);
	VipPostSend(f, s, pm.mh);
	expect_done(f, false, s, "peer send");
	if (CHECK(rec_wait(1, 3000), "the handler ran and returned"))
		CHECK(self_destroy_rc == VIP_SUCCESS,
		      "the handler's VipDestroyVi of its own VI returned %s",
		      VipDpdkReturnString(self_destroy_rc));
	h_vi_drop(f);
}

/* ---- CQNotify -------------------------------------------------------------------- */

static void
test_cq_notify(void)
{
	VIP_VI_HANDLE c, d, vh;
	VIP_CQ_HANDLE cq;
	VIP_DESCRIPTOR *r, *s, *r2, *s2;
	VIP_BOOLEAN rq;
	uint64_t t0;

	h_note("VipCQNotify: at once on an entry, else once at the next");
	pm.used = 0;
	rec_reset();
	if (VipCreateCQ(nic, 16, &cq) != VIP_SUCCESS) {
		CHECK(0, "create a CQ");
		return;
	}
	c = vi_new(cq, cq);
	d = vi_new(NULL, NULL);
	if (!h_connect(nic, c, nic, d, "cqn", 5000))
		return;
	CHECK_RET(VipSendNotify(c, NULL, vi_cb), VIP_ERROR_RESOURCE,
		  "VipSendNotify on a CQ-bound send queue");
	CHECK_RET(VipRecvNotify(c, NULL, vi_cb), VIP_ERROR_RESOURCE,
		  "VipRecvNotify on a CQ-bound receive queue");
	CHECK_RET(VipCQNotify(cq, (VIP_PVOID)50, cq_cb), VIP_SUCCESS, "arm on an empty CQ");
	h_sleep_ms(50);
	CHECK(rec_count() == 0, "nothing runs before an entry");
	r = recv1(64);
	VipPostRecv(c, r, pm.mh);
	s = send1(40, 3);
	t0 = h_now_ms();
	VipPostSend(d, s, pm.mh);
	if (CHECK(rec_wait(1, 2000), "the handler runs at the entry")) {
		CHECK(calls[0].ctx == (VIP_PVOID)50 && calls[0].nic == nic && calls[0].vi == c &&
		      calls[0].recvq == VIP_TRUE && on_other_thread(&calls[0]),
		      "with (VI, RecvQueue TRUE), on another thread");
		CHECK(calls[0].at_ms - t0 < 500, "woken by the entry (%llu ms)",
		      (unsigned long long)(calls[0].at_ms - t0));
	}
	CHECK_RET(VipCQDone(cq, &vh, &rq), VIP_NOT_DONE, "the entry was taken for the handler");
	expect_done(c, true, r, "RecvDone dequeues the descriptor");
	expect_done(d, false, s, "peer send");

	/* an entry already there */
	r2 = recv1(64);
	s2 = send1(8, 4);
	VipPostRecv(d, r2, pm.mh);
	VipPostSend(c, s2, pm.mh);
	wait_status(s2, 2000);
	CHECK_RET(VipCQNotify(cq, (VIP_PVOID)51, cq_cb), VIP_SUCCESS, "arm with an entry queued");
	CHECK(rec_count() == 2 && calls[1].ctx == (VIP_PVOID)51 && calls[1].vi == c &&
	      calls[1].recvq == VIP_FALSE && !on_other_thread(&calls[1]),
	      "the handler ran at once, in the calling thread, with (VI, RecvQueue FALSE)");
	expect_done(c, false, s2, "SendDone dequeues the descriptor");
	expect_done(d, true, r2, "peer receive");
	h_sleep_ms(50);
	CHECK(rec_count() == 2, "and only once");
	h_pair_drop(c, d);
	CHECK_RET(VipDestroyCQ(cq), VIP_SUCCESS, "destroy the CQ");
}

/* ---- VipResizeCQ ------------------------------------------------------------------ */

struct cq_waiter {
	VIP_CQ_HANDLE cq;
	VIP_RETURN rc;
	VIP_VI_HANDLE vi;
	VIP_BOOLEAN rq;
	uint64_t done_ms;
};

static void *
cq_waiter_main(void *arg)
{
	struct cq_waiter *w = arg;

	w->rc = VipCQWait(w->cq, 5000, &w->vi, &w->rq);
	w->done_ms = h_now_ms();
	return NULL;
}

/* Post @p n receives on @p c and send @p n messages to them from @p d. */
static void
exchange(VIP_VI_HANDLE c, VIP_VI_HANDLE d, VIP_DESCRIPTOR **r, unsigned n, unsigned imm0)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		r[i] = recv1(64);
		VipPostRecv(c, r[i], pm.mh);
	}
	for (i = 0; i < n; i++) {
		VIP_DESCRIPTOR *s = send1(8, imm0 + i);

		VipPostSend(d, s, pm.mh);
		expect_done(d, false, s, "send");
	}
	wait_status(r[n - 1], 2000);
}

static void
test_resize_basic(void)
{
	VIP_VI_HANDLE c, d, vh;
	VIP_CQ_HANDLE cq;
	VIP_DESCRIPTOR *r[16], *out;
	VIP_DPDK_COUNTERS k0, k1;
	struct cq_waiter w;
	VIP_BOOLEAN rq;
	pthread_t t;
	unsigned i, ok;

	h_note("VipResizeCQ: error codes, entries kept, overruns");
	pm.used = 0;
	rec_reset();
	if (VipCreateCQ(nic, 4, &cq) != VIP_SUCCESS) {
		CHECK(0, "create a CQ");
		return;
	}
	CHECK_RET(VipResizeCQ(cq, 0), VIP_INVALID_PARAMETER, "0 entries");
	CHECK_RET(VipResizeCQ(cq, nic_attrs.MaxCQEntries + 1), VIP_ERROR_RESOURCE,
		  "MaxCQEntries + 1 (%lu)", (unsigned long)nic_attrs.MaxCQEntries + 1);
	CHECK_RET(VipResizeCQ(NULL, 8), VIP_INVALID_PARAMETER, "NULL CQ");
	CHECK_RET(VipResizeCQ(nic, 8), VIP_INVALID_PARAMETER, "a NIC handle as CQ");
	CHECK_RET(VipResizeCQ(cq, nic_attrs.MaxCQEntries), VIP_SUCCESS, "MaxCQEntries");
	CHECK_RET(VipResizeCQ(cq, 4), VIP_SUCCESS, "back to 4");
	c = vi_new(NULL, cq);
	d = vi_new(NULL, NULL);
	if (!h_connect(nic, c, nic, d, "rsz", 5000))
		return;
	exchange(c, d, r, 4, 0);
	CHECK_RET(VipResizeCQ(cq, 3), VIP_ERROR_RESOURCE, "3 entries with 4 queued");
	CHECK_RET(VipResizeCQ(cq, 4), VIP_SUCCESS, "4 entries with 4 queued");
	CHECK_RET(VipResizeCQ(cq, 1000), VIP_SUCCESS, "grow to 1000");
	exchange(c, d, r + 4, 6, 4);
	CHECK_RET(VipResizeCQ(cq, 9), VIP_ERROR_RESOURCE, "9 entries with 10 queued");
	CHECK_RET(VipResizeCQ(cq, 10), VIP_SUCCESS, "shrink to 10 with 10 queued");
	for (i = 0, ok = 0; i < 10; i++) {
		if (VipCQDone(cq, &vh, &rq) == VIP_SUCCESS && vh == c && rq == VIP_TRUE &&
		    VipRecvDone(c, &out) == VIP_SUCCESS && out == r[i] &&
		    out->CS.ImmediateData == i)
			ok++;
	}
	CHECK(ok == 10, "the 10 entries survived both resizes, in order (%u/10)", ok);
	CHECK_RET(VipCQDone(cq, &vh, &rq), VIP_NOT_DONE, "and no more");

	/* a VipCQWait asleep across resizes is still woken by the entry */
	memset(&w, 0, sizeof(w));
	w.cq = cq;
	pthread_create(&t, NULL, cq_waiter_main, &w);
	h_sleep_ms(50);
	CHECK_RET(VipResizeCQ(cq, 64), VIP_SUCCESS, "resize with a thread in VipCQWait");
	CHECK_RET(VipResizeCQ(cq, 2), VIP_SUCCESS, "and again");
	{
		VIP_DESCRIPTOR *s = send1(8, 0);
		uint64_t t0;

		r[0] = recv1(64);
		VipPostRecv(c, r[0], pm.mh);
		t0 = h_now_ms();
		VipPostSend(d, s, pm.mh);
		pthread_join(t, NULL);
		CHECK(w.rc == VIP_SUCCESS && w.vi == c && w.rq == VIP_TRUE && w.done_ms - t0 < 500,
		      "the waiter gets the entry (%s, %llu ms)", VipDpdkReturnString(w.rc),
		      (unsigned long long)(w.done_ms - t0));
		expect_done(d, false, s, "send");
		expect_done(c, true, r[0], "receive");
	}

	/* §6.4.1: a full CQ loses entries, counted; the descriptors complete */
	h_counters(nic, &k0);
	exchange(c, d, r, 4, 0);
	h_counters(nic, &k1);
	CHECK(k1.CqOverruns - k0.CqOverruns == 2,
	      "4 completions on a CQ of 2: 2 entries lost, counted in CqOverruns (%llu)",
	      (unsigned long long)(k1.CqOverruns - k0.CqOverruns));
	for (i = 0, ok = 0; i < 2; i++)
		ok += VipCQDone(cq, &vh, &rq) == VIP_SUCCESS && vh == c;
	CHECK(ok == 2 && VipCQDone(cq, &vh, &rq) == VIP_NOT_DONE, "the CQ holds 2 entries");
	for (i = 0, ok = 0; i < 4; i++)
		ok += VipRecvDone(c, &out) == VIP_SUCCESS && out == r[i];
	CHECK(ok == 4, "all 4 descriptors completed on their queue (%u)", ok);

	/* a pending CQNotify survives resizes */
	CHECK_RET(VipCQNotify(cq, (VIP_PVOID)60, cq_cb), VIP_SUCCESS, "arm the CQ");
	CHECK_RET(VipResizeCQ(cq, 300), VIP_SUCCESS, "resize it");
	CHECK_RET(VipResizeCQ(cq, 1), VIP_SUCCESS, "resize it to 1");
	exchange(c, d, r, 1, 0);
	CHECK(rec_wait(1, 2000) && calls[0].ctx == (VIP_PVOID)60 && calls[0].vi == c,
	      "the handler runs at the next entry");
	expect_done(c, true, r[0], "receive");
	h_pair_drop(c, d);
	CHECK_RET(VipDestroyCQ(cq), VIP_SUCCESS, "destroy the CQ");
	CHECK_RET(VipResizeCQ(cq, 8), VIP_INVALID_PARAMETER, "resize a destroyed CQ");
}

/* ---- resize under traffic ------------------------------------------------------------ */

enum { TP = 2, TW = 8, TSLOTS = 2 * TW, TLEN = 64 };

struct tpair {
	VIP_VI_HANDLE s, r;
	VIP_DESCRIPTOR *rd[TW], *sd[TSLOTS];
	uint8_t *rbuf[TW], *sbuf[TSLOTS];
	bool sbusy[TSLOTS];
	unsigned sent, sdone, rdone, owed;
	unsigned cnt[2][2];   /* [s or r][recv queue] */
};

struct traffic {
	VIP_CQ_HANDLE cq;
	struct tpair p[TP];
	int stop;             /* no new sends */
	int closed;           /* the notify-driven consumer is done */
	unsigned stray, wrong, rearm_fail;
	pthread_mutex_t lock; /* notify mode: the handler vs the checks */
};

static int
post_send(struct tpair *p)
{
	unsigned k;

	for (k = 0; k < TSLOTS && p->sbusy[k]; k++)
		;
	if (k == TSLOTS) {
		p->owed++;    /* no free descriptor until a send is dequeued */
		return 0;
	}
	memset(p->sbuf[k], (int)(p->sent & 0xff), TLEN);
	desc_fill(p->sd[k], p->sbuf[k], TLEN, true, p->sent);
	if (VipPostSend(p->s, p->sd[k], pm.mh) != VIP_SUCCESS)
		return -1;
	p->sbusy[k] = true;
	p->sent++;
	return 0;
}

/* One CQ entry: dequeue its descriptor, check it, keep the stream going. */
static void
traffic_entry(struct traffic *x, VIP_VI_HANDLE vh, VIP_BOOLEAN rq)
{
	VIP_DESCRIPTOR *out;
	unsigned i, k;

	for (i = 0; i < TP; i++) {
		struct tpair *p = &x->p[i];
		int who = vh == p->s ? 0 : vh == p->r ? 1 : -1;

		if (who < 0)
			continue;
		p->cnt[who][rq == VIP_TRUE]++;
		if (who == 1 && rq == VIP_TRUE) {
			k = p->rdone % TW;
			if (VipRecvDone(vh, &out) != VIP_SUCCESS || out != p->rd[k] ||
			    out->CS.Status != (ST_RECV_OK | VIP_STATUS_IMMEDIATE) ||
			    out->CS.ImmediateData != p->rdone || out->CS.Length != TLEN ||
			    p->rbuf[k][TLEN - 1] != (uint8_t)(p->rdone & 0xff)) {
				if (x->wrong++ < 5)
					h_note("pair %u: receive %u is not the expected one", i,
					       p->rdone);
			}
			p->rdone++;
			desc_fill(p->rd[k], p->rbuf[k], TLEN, false, 0);
			VipPostRecv(p->r, p->rd[k], pm.mh);
			/* a receive is posted again: one more send may go */
			if (!__atomic_load_n(&x->stop, __ATOMIC_ACQUIRE) && post_send(p) != 0)
				x->wrong++;
		} else if (who == 0 && rq == VIP_FALSE) {
			if (VipSendDone(vh, &out) != VIP_SUCCESS) {
				x->wrong++;
				return;
			}
			for (k = 0; k < TSLOTS && p->sd[k] != out; k++)
				;
			if (k == TSLOTS || !p->sbusy[k] || out->CS.Status != ST_SEND_OK)
				x->wrong++;
			else
				p->sbusy[k] = false;
			p->sdone++;
			if (p->owed > 0 && !__atomic_load_n(&x->stop, __ATOMIC_ACQUIRE)) {
				p->owed--;
				if (post_send(p) != 0)
					x->wrong++;
			}
		} else {
			x->wrong++;   /* an entry for a queue with nothing posted */
		}
		return;
	}
	x->stray++;
}

static bool
traffic_drained(struct traffic *x)
{
	unsigned i;

	for (i = 0; i < TP; i++) {
		if (x->p[i].sdone != x->p[i].sent || x->p[i].rdone != x->p[i].sent)
			return false;
	}
	return true;
}

static void *
traffic_wait_main(void *arg)
{
	struct traffic *x = arg;

	while (!__atomic_load_n(&x->stop, __ATOMIC_ACQUIRE) || !traffic_drained(x)) {
		VIP_VI_HANDLE vh;
		VIP_BOOLEAN rq;
		VIP_RETURN rc = VipCQWait(x->cq, 3000, &vh, &rq);

		if (rc != VIP_SUCCESS) {
			h_note("VipCQWait: %s", VipDpdkReturnString(rc));
			x->wrong++;
			break;
		}
		traffic_entry(x, vh, rq);
	}
	return NULL;
}

static void
traffic_cb(VIP_PVOID ctx, VIP_NIC_HANDLE n, VIP_VI_HANDLE vh, VIP_BOOLEAN rq)
{
	struct traffic *x = ctx;

	(void)n;
	pthread_mutex_lock(&x->lock);
	if (!x->closed) {
		traffic_entry(x, vh, rq);
		if (VipCQNotify(x->cq, x, traffic_cb) != VIP_SUCCESS)
			x->rearm_fail++;
	}
	pthread_mutex_unlock(&x->lock);
}

static bool
traffic_setup(struct traffic *x)
{
	unsigned i, k;
	char tag[16];

	memset(x, 0, sizeof(*x));
	pthread_mutex_init(&x->lock, NULL);
	pm.used = 0;
	if (VipCreateCQ(nic, 4 * TP * TW, &x->cq) != VIP_SUCCESS) {
		CHECK(0, "create a CQ");
		return false;
	}
	for (i = 0; i < TP; i++) {
		struct tpair *p = &x->p[i];

		p->s = vi_new(x->cq, x->cq);
		p->r = vi_new(x->cq, x->cq);
		snprintf(tag, sizeof(tag), "tr%u", i);
		if (!h_connect(nic, p->s, nic, p->r, tag, 5000))
			return false;
		for (k = 0; k < TW; k++) {
			p->rd[k] = desc_new();
			p->rbuf[k] = mem_get(TLEN, 64);
			desc_fill(p->rd[k], p->rbuf[k], TLEN, false, 0);
			VipPostRecv(p->r, p->rd[k], pm.mh);
		}
		for (k = 0; k < TSLOTS; k++) {
			p->sd[k] = desc_new();
			p->sbuf[k] = mem_get(TLEN, 64);
		}
	}
	return true;
}

/* The first window of sends: as many as receives are posted. */
static void
traffic_start(struct traffic *x)
{
	unsigned i, k;

	for (i = 0; i < TP; i++) {
		for (k = 0; k < TW; k++) {
			if (post_send(&x->p[i]) != 0)
				x->wrong++;
		}
	}
}

static void
traffic_check(struct traffic *x, const char *mode)
{
	unsigned i, ok = 0, total = 0;

	for (i = 0; i < TP; i++) {
		struct tpair *p = &x->p[i];

		ok += p->cnt[0][0] == p->sent && p->cnt[1][1] == p->sent && p->cnt[0][1] == 0 &&
		      p->cnt[1][0] == 0 && p->sdone == p->sent && p->rdone == p->sent;
		total += p->sent;
		h_note("%s: pair %u: %u sent; entries: sender send %u recv %u, receiver send %u "
		       "recv %u", mode, i, p->sent, p->cnt[0][0], p->cnt[0][1], p->cnt[1][0],
		       p->cnt[1][1]);
	}
	CHECK(ok == TP && x->wrong == 0 && x->stray == 0 && x->rearm_fail == 0,
	      "%s: every completion seen exactly once, per VI and queue (%u/%u pairs, %u wrong, "
	      "%u stray, %u re-arm failures)", mode, ok, TP, x->wrong, x->stray, x->rearm_fail);
	CHECK(total >= 200 * TP, "%s: the stream ran during the resizes (%u messages)", mode,
	      total);
}

static void
traffic_close(struct traffic *x)
{
	unsigned i;

	for (i = 0; i < TP; i++)
		h_pair_drop(x->p[i].s, x->p[i].r);
	CHECK_RET(VipDestroyCQ(x->cq), VIP_SUCCESS, "destroy the CQ");
	pthread_mutex_destroy(&x->lock);
}

/* 100 resizes up and down, a few ms of traffic between them. */
static unsigned
resize_storm(VIP_CQ_HANDLE cq, uint64_t *rng)
{
	unsigned i, ok = 0;

	for (i = 0; i < 100; i++) {
		/* never below what may be queued: every descriptor on the
		 * queues attached, 2 * TW per pair */
		uint32_t n = i % 2 ? 2 * TP * TW + (uint32_t)(h_rand(rng) % 8)
				   : 64u << (h_rand(rng) % 6);
		VIP_RETURN rc = VipResizeCQ(cq, n);

		if (rc == VIP_SUCCESS)
			ok++;
		else
			h_note("resize %u to %u: %s", i, n, VipDpdkReturnString(rc));
		h_sleep_ms(2 + (unsigned)(h_rand(rng) % 4));
	}
	return ok;
}

static void
test_resize_traffic(uint64_t *rng)
{
	VIP_DPDK_COUNTERS k0, k1;
	struct traffic x;
	uint64_t end;
	unsigned ok;
	pthread_t t;

	h_note("100 resizes under a stream of completions consumed by VipCQWait");
	if (!traffic_setup(&x))
		return;
	h_counters(nic, &k0);
	traffic_start(&x);
	pthread_create(&t, NULL, traffic_wait_main, &x);
	ok = resize_storm(x.cq, rng);
	__atomic_store_n(&x.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	h_counters(nic, &k1);
	CHECK(ok == 100, "100 resizes succeeded (%u)", ok);
	traffic_check(&x, "CQWait");
	CHECK(k1.CqOverruns == k0.CqOverruns, "no CQ overrun (%llu)",
	      (unsigned long long)(k1.CqOverruns - k0.CqOverruns));
	traffic_close(&x);

	h_note("100 resizes under a stream of completions consumed by re-armed VipCQNotify");
	if (!traffic_setup(&x))
		return;
	h_counters(nic, &k0);
	CHECK_RET(VipCQNotify(x.cq, &x, traffic_cb), VIP_SUCCESS, "arm the CQ");
	pthread_mutex_lock(&x.lock);
	traffic_start(&x);
	pthread_mutex_unlock(&x.lock);
	ok = resize_storm(x.cq, rng);
	__atomic_store_n(&x.stop, 1, __ATOMIC_RELEASE);
	end = h_now_ms() + 5000;
	for (;;) {
		bool drained;

		pthread_mutex_lock(&x.lock);
		drained = traffic_drained(&x);
		if (drained || h_now_ms() >= end)
			x.closed = 1;
		pthread_mutex_unlock(&x.lock);
		if (x.closed)
			break;
		h_sleep_ms(5);
	}
	h_counters(nic, &k1);
	CHECK(ok == 100, "100 resizes succeeded (%u)", ok);
	traffic_check(&x, "CQNotify");
	CHECK(k1.CqOverruns == k0.CqOverruns, "no CQ overrun (%llu)",
	      (unsigned long long)(k1.CqOverruns - k0.CqOverruns));
	traffic_close(&x);
}

/* ---- CQ_RESIZE from a client that lies ---------------------------------------------- */

/* One request, one reply on a raw connection; @return viad's status, or
 * 1000 if the exchange itself failed. */
static int
raw_call(int fd, unsigned op, uint32_t seq, const void *req, void *rep, int *rfd)
{
	uint8_t body[VIA_CTL_BODY_MAX];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct via_ctl_hdr h;
	int tmp = -1;

	via_ctl_hdr_init(&h, op, 0, seq, 0);
	if (via_ctl_send(fd, &h, req, -1) != 0 || poll(&p, 1, H_TIMEOUT_MS) != 1 ||
	    via_ctl_recv(fd, &h, body, 1, rfd != NULL ? rfd : &tmp) != 0 || h.op != op ||
	    h.seq != seq) {
		if (tmp >= 0)
			close(tmp);
		return 1000;
	}
	if (tmp >= 0)
		close(tmp);
	if (rep != NULL)
		memcpy(rep, body, h.len);
	return h.status;
}

static void
test_resize_raw(const struct viad_proc *v)
{
	struct via_ctl_open_req oq;
	struct via_ctl_open_rep orep;
	struct via_ctl_cq_create_req cq_req = { .entries = 8 };
	struct via_ctl_cq_create_rep cq_rep;
	struct via_ctl_cq_resize_req rq;
	struct via_ctl_cq_resize_rep rr;
	struct via_shm_cq *sh;
	uint8_t *seg = MAP_FAILED;
	int fd = h_raw_connect(v), sfd = -1;
	uint32_t seq = 1;
	unsigned i, ok;

	h_note("CQ_RESIZE from a raw client: viad trusts nothing of it");
	if (!CHECK(fd >= 0, "connect"))
		return;
	memset(&oq, 0, sizeof(oq));
	snprintf(oq.nic_name, sizeof(oq.nic_name), "via0");
	oq.abi_version = VIA_ABI_VERSION;
	if (!CHECK(raw_call(fd, VIA_CTL_OPEN, seq++, &oq, &orep, &sfd) == 0 && sfd >= 0, "OPEN"))
		goto out;
	seg = mmap(NULL, orep.shm_size, PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);
	if (!CHECK(seg != MAP_FAILED, "map the segment") ||
	    !CHECK(raw_call(fd, VIA_CTL_CQ_CREATE, seq++, &cq_req, &cq_rep, NULL) == 0,
		   "CQ_CREATE of 8"))
		goto out;
	sh = (struct via_shm_cq *)(seg + cq_rep.shm_off);
	memset(&rq, 0, sizeof(rq));
	rq.id = cq_rep.id;
	rq.entries = 16;
	rq.cons = 5;
	CHECK(raw_call(fd, VIA_CTL_CQ_RESIZE, seq++, &rq, &rr, NULL) == -EINVAL,
	      "a consumer index ahead of viad's producer: -EINVAL");
	rq.cons = (uint32_t)-9;
	CHECK(raw_call(fd, VIA_CTL_CQ_RESIZE, seq++, &rq, &rr, NULL) == -EINVAL,
	      "one more than the capacity behind it: -EINVAL");
	rq.cons = 0;
	rq.entries = 0;
	CHECK(raw_call(fd, VIA_CTL_CQ_RESIZE, seq++, &rq, &rr, NULL) == -EINVAL, "0 entries: -EINVAL");
	rq.entries = orep.nic.max_cq_entries + 1;
	CHECK(raw_call(fd, VIA_CTL_CQ_RESIZE, seq++, &rq, &rr, NULL) == -ENOSPC,
	      "max_cq_entries + 1: -ENOSPC");
	rq.id = cq_rep.id + 1000;
	rq.entries = 16;
	CHECK(raw_call(fd, VIA_CTL_CQ_RESIZE, seq++, &rq, &rr, NULL) == -ENOENT, "no such CQ: -ENOENT");
	/* the segment's indices and words are the client's: scribbled on, they
	 * change nothing viad does */
	rq.id = cq_rep.id;
	for (i = 0, ok = 0; i < 50; i++) {
		__atomic_store_n(&sh->ring.cons, 0xdead0000u + i, __ATOMIC_RELAXED);
		__atomic_store_n(&sh->ring.prod, 0xbeef0000u + i, __ATOMIC_RELAXED);
		__atomic_store_n(&sh->notify, 0xffffffffu, __ATOMIC_RELAXED);
		rq.entries = 1u + (i * 37) % 4096;
		if (raw_call(fd, VIA_CTL_CQ_RESIZE, seq++, &rq, &rr, NULL) == 0 &&
		    rr.capacity >= rq.entries && (rr.capacity & (rr.capacity - 1)) == 0 &&
		    rr.slots_off % VIA_SHM_ALIGN == 0 &&
		    rr.slots_off + via_shm_cq_slots_size(rr.capacity) <= orep.shm_size &&
		    (rr.slots_off >= cq_rep.shm_off + sizeof(*sh) ||
		     rr.slots_off + via_shm_cq_slots_size(rr.capacity) <= cq_rep.shm_off))
			ok++;
	}
	CHECK(ok == 50, "50 resizes with garbage in the shared indices: new slots in the "
	      "segment, clear of the CQ's block (%u/50)", ok);
	/* the old slots go back to the segment's arena: at MaxCQEntries each,
	 * a leak would fill the segment within a few dozen resizes */
	for (i = 0, ok = 0; i < 200; i++) {
		rq.entries = i % 2 ? 1 : orep.nic.max_cq_entries;
		rq.cons = __atomic_load_n(&sh->ring.prod, __ATOMIC_RELAXED);
		ok += raw_call(fd, VIA_CTL_CQ_RESIZE, seq++, &rq, &rr, NULL) == 0;
	}
	CHECK(ok == 200, "200 resizes between 1 and MaxCQEntries (%u) in a %llu KiB segment "
	      "(%u/200)", orep.nic.max_cq_entries, (unsigned long long)(orep.shm_size >> 10), ok);
	CHECK(raw_call(fd, VIA_CTL_CQ_DESTROY, seq++, &(struct via_ctl_id){ cq_rep.id, 0 }, NULL,
		       NULL) == 0, "CQ_DESTROY");
out:
	if (seg != MAP_FAILED)
		munmap(seg, orep.shm_size);
	if (sfd >= 0)
		close(sfd);
	close(fd);
}

/* ---- main ------------------------------------------------------------------------- */

int
main(int argc, char **argv)
{
	struct viad_proc v;
	VIP_MEM_ATTRIBUTES ma;
	VIP_VI_HANDLE a, b;
	uint64_t rng, t0;

	h_init(argc, argv, 110);
	rng = h_seed();
	if (viad_start(&v, "notify", NULL) != 0)
		return h_finish();
	t0 = h_now_ms();
	if (VipOpenNic("via0", &nic) != VIP_SUCCESS || VipQueryNic(nic, &nic_attrs) != VIP_SUCCESS ||
	    VipCreatePtag(nic, &pt) != VIP_SUCCESS) {
		CHECK(0, "open via0");
		viad_stop(&v);
		return h_finish();
	}
	memset(&ma, 0, sizeof(ma));
	ma.Ptag = pt;
	pm.len = 4u << 20;
	if (h_alloc(nic, pm.len, (void **)&pm.base) != VIP_SUCCESS ||
	    VipRegisterMem(nic, pm.base, pm.len, &ma, &pm.mh) != VIP_SUCCESS) {
		CHECK(0, "provider memory");
		viad_stop(&v);
		return h_finish();
	}
	VipErrorCallback(nic, NULL, quiet_errors);
	CHECK_RET(VipSendNotify(NULL, NULL, vi_cb), VIP_INVALID_PARAMETER, "SendNotify, NULL VI");
	CHECK_RET(VipCQNotify(NULL, NULL, cq_cb), VIP_INVALID_PARAMETER, "CQNotify, NULL CQ");

	a = vi_new(NULL, NULL);
	b = vi_new(NULL, NULL);
	CHECK_RET(VipSendNotify(a, NULL, NULL), VIP_INVALID_PARAMETER, "SendNotify, NULL Handler");
	CHECK_RET(VipRecvNotify(a, NULL, NULL), VIP_INVALID_PARAMETER, "RecvNotify, NULL Handler");
	if (h_connect(nic, a, nic, b, "main", 5000)) {
		test_immediate(a, b);
		test_deferred(a, b);
		test_fifo(a, b);
		test_rearm(a, b);
		test_idle_cpu(a, b);
	}
	h_pair_drop(a, b);
	test_cancel();
	test_destroy_waits();
	test_self_destroy();
	test_cq_notify();
	test_resize_basic();
	test_resize_traffic(&rng);
	test_resize_raw(&v);

	CHECK_RET(VipDeregisterMem(nic, pm.base, pm.mh), VIP_SUCCESS, "deregister");
	CHECK_RET(h_free(nic, pm.base), VIP_SUCCESS, "free provider memory");
	CHECK_RET(VipCloseNic(nic), VIP_SUCCESS, "close");
	h_note("tests took %llu ms", (unsigned long long)(h_now_ms() - t0));
	CHECK(viad_alive(&v), "viad is still running");
	viad_stop(&v);
	return h_finish();
}
