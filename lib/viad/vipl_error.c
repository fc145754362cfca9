/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The provider threads of a NIC, which run the consumer's handlers (VIA
 * §9.9.1, §9.6.9-9.6.11: "not guaranteed to run in the context of the
 * calling thread"):
 *
 * - The error thread takes asynchronous errors from the session's error
 *   queue (viad produces them) and runs the VipErrorCallback handler. It
 *   sleeps on the queue's wait word and is woken by viad only when it says
 *   it sleeps.
 *
 * - The notify thread runs the handlers of VipSendNotify, VipRecvNotify and
 *   VipCQNotify whose queue had nothing complete when they were called. It
 *   is a thread of its own, started at the first such registration, rather
 *   than the error thread: a notify handler may block (on its own locks, in
 *   a Wait call, on the application's work), and must not hold back the
 *   report of an asynchronous error meanwhile, nor an error handler hold
 *   back completions; and the cancellation protocol below needs to know
 *   which thread runs which handler. It sleeps on one futex word whatever
 *   the number of queues it watches: the session's notify doorbell, which
 *   viad rings after a completion on a queue whose notify word is set
 *   (via_abi.h, "Wake-up contract", pair 4, for the memory ordering).
 *
 * Notification, for one queue (a work queue, or a CQ):
 *
 * - Registrations wait in order; each is served by one completion (VIA
 *   §9.6.9: "In order for the Handler to be invoked multiple times, the
 *   function must be called multiple times"). The queue's notify word is
 *   set while any wait.
 * - A call that finds no registration before it sets the word, then looks
 *   at the queue: a complete head is dequeued and handed to the handler at
 *   once, in the calling thread. Otherwise the registration waits and
 *   nothing else is needed: viad saw the word, or the look saw the
 *   completion (via_abi.h, "Wake-up contract", pair 4).
 * - A call behind other registrations, or made from a handler (which
 *   would otherwise recurse once per completed descriptor), queues and
 *   rings the doorbell itself: the notify thread looks again.
 * - The notify thread, on each ring, reads the doorbell, then serves every
 *   queue it can in turn (a served queue goes to the back), one handler at
 *   a time, with nic->notify_lock dropped while the handler runs and
 *   nic->notify_running naming its VI or CQ.
 * - Destroying the VI or CQ takes its registrations away under
 *   nic->notify_lock (they never run) and waits until notify_running no
 *   longer names it, unless the destroyer is that handler. VipDestroyCQ
 *   suspends the CQ's service before it asks viad (the CQ's ring goes with
 *   viad's answer) and resumes it if viad refuses.
 *
 * Lock order: nic->notify_lock, then a work queue's or a CQ's own lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vipl_priv.h"
#include "vipl_wait.h"

/* the dequeues of a notification are VipSendDone/RecvDone/CQDone's own */
#define VIPL_DPDK_INLINE_KEEP_NAMES
#include <vipl_dpdk_inline.h>

#define PROVIDER_TICK_MS 200   /* how often a sleeping thread checks for close */
/* the notify thread needs no tick (closing rings the doorbell); one long
 * one only bounds the cost of a lost ring, should viad ever lose one */
#define NOTIFY_TICK_MS 1000

static void
deliver(struct vipl_nic *nic, const struct via_async_error *e)
{
	void (*handler)(VIP_PVOID, VIP_ERROR_DESCRIPTOR *);
	VIP_ERROR_DESCRIPTOR ed;
	VIP_PVOID context;

	memset(&ed, 0, sizeof(ed));
	ed.NicHandle = vipl_handle_of(&nic->obj);
	if (e->vi_cookie != 0)
		ed.ViHandle = vipl_dpdk_dp_handle_by_id(e->vi_cookie, VIPL_DPDK_OBJ_VI);
	ed.DescriptorPtr = (VIP_DESCRIPTOR *)(uintptr_t)e->desc_va;
	ed.OpCode = e->op;
	ed.ResourceCode = (VIP_RESOURCE_CODE)e->resource;
	ed.ErrorCode = (VIP_ERROR_CODE)e->code;
	pthread_mutex_lock(&nic->lock);
	handler = nic->error_handler;
	context = nic->error_context;
	pthread_mutex_unlock(&nic->lock);
	handler(context, &ed);
}

/* Queue @p e for the provider thread (nic->lock held); a full queue drops it. */
static void
local_error_push(struct vipl_nic *nic, const struct via_async_error *e)
{
	if (nic->nb_local_errs < VIPL_LOCAL_ERRORS)
		nic->local_errs[nic->nb_local_errs++] = *e;
}

/* The provider sleeps on the error queue's word: bump and wake it. */
static void
provider_wake(struct vipl_nic *nic)
{
	__atomic_fetch_add(&nic->errq_sh->wait.seq, 1, __ATOMIC_SEQ_CST);
	vipl_futex_wake(&nic->errq_sh->wait.seq);
}

void
vipl_vi_async_error(struct vipl_vi *vi, VIP_ERROR_CODE code, VIP_DESCRIPTOR *desc, uint32_t op)
{
	struct vipl_nic *nic = vi->nic;
	struct via_async_error e = {
		.desc_va = (uintptr_t)desc, .code = code, .resource = VIP_RESOURCE_VI,
		.vi_cookie = vi->dp.obj.id, .op = op,
	};
	bool now;

	pthread_mutex_lock(&nic->lock);
	now = vi->left_idle;
	if (now)
		local_error_push(nic, &e);
	else if (vi->nb_idle_errs < VIPL_IDLE_ERRORS)
		vi->idle_errs[vi->nb_idle_errs++] = e;     /* the rest of a burst goes */
	pthread_mutex_unlock(&nic->lock);
	if (now)
		provider_wake(nic);
}

void
vipl_vi_connect_called(struct vipl_vi *vi)
{
	struct vipl_nic *nic = vi->nic;
	unsigned i, kept;

	pthread_mutex_lock(&nic->lock);
	vi->left_idle = true;
	kept = vi->nb_idle_errs;
	for (i = 0; i < kept; i++)
		local_error_push(nic, &vi->idle_errs[i]);
	vi->nb_idle_errs = 0;
	pthread_mutex_unlock(&nic->lock);
	if (kept > 0)
		provider_wake(nic);
}

void
vipl_vi_idle_again(struct vipl_vi *vi)
{
	pthread_mutex_lock(&vi->nic->lock);
	vi->left_idle = false;
	pthread_mutex_unlock(&vi->nic->lock);
}

/* The oldest error the library raised itself, if any. */
static bool
local_error(struct vipl_nic *nic, struct via_async_error *e)
{
	bool got = false;

	pthread_mutex_lock(&nic->lock);
	if (nic->nb_local_errs > 0) {
		*e = nic->local_errs[0];
		memmove(nic->local_errs, nic->local_errs + 1,
			--nic->nb_local_errs * sizeof(*e));
		got = true;
	}
	pthread_mutex_unlock(&nic->lock);
	return got;
}

/*
 * viad is gone (killed, or stopping): every VI of the NIC went with it, in
 * the Error state for good (VIA §7: a VI NIC error; §9.9.1 Connection
 * Lost). Each is reported once, so that a consumer that only polls (its
 * VipRecvDone answers VIP_NOT_DONE for ever: §9.6.5 has no other answer)
 * learns it within a tick; its calls answer VIP_ERROR_RESOURCE, and it
 * may open the NIC again once a viad serves it.
 */
static void
report_viad_lost(struct vipl_nic *nic)
{
	struct via_async_error e = { .code = VIP_ERROR_CONN_LOST, .resource = VIP_RESOURCE_VI };
	struct vipl_vi *vi;
	uint32_t *ids, n = 0, i;

	pthread_mutex_lock(&nic->lock);
	LIST_FOREACH(vi, &nic->vis, link)
		n++;
	ids = calloc(n != 0 ? n : 1, sizeof(*ids));
	if (ids != NULL) {
		n = 0;
		LIST_FOREACH(vi, &nic->vis, link)
			ids[n++] = vi->dp.obj.id;
	}
	pthread_mutex_unlock(&nic->lock);
	vipl_log("viad is gone: %u VI(s) lost (VIP_ERROR_CONN_LOST); open the NIC again",
		 ids != NULL ? n : 0);
	for (i = 0; ids != NULL && i < n; i++) {
		e.vi_cookie = ids[i];
		deliver(nic, &e);
	}
	free(ids);
}

static void *
provider_main(void *arg)
{
	struct vipl_nic *nic = arg;
	struct via_shm_wait *w = &nic->errq_sh->wait;
	bool lost = false;

	while (!__atomic_load_n(&nic->closing, __ATOMIC_ACQUIRE)) {
		struct via_async_error e;
		uint32_t seq = __atomic_load_n(&w->seq, __ATOMIC_SEQ_CST);

		if (via_ring_dequeue(&nic->errq, &e) == 0 || local_error(nic, &e)) {
			deliver(nic, &e);
			continue;
		}
		if (nic->errq.corrupt)
			break;
		/* checked at each tick at the latest: a SIGKILLed viad wakes nobody */
		if (!lost && !vipl_nic_alive(nic)) {
			lost = true;
			report_viad_lost(nic);
			continue;
		}
		__atomic_fetch_add(&w->sleepers, 1, __ATOMIC_SEQ_CST);
		if (via_ring_avail(&nic->errq) == 0)
			vipl_futex_wait(&w->seq, seq, PROVIDER_TICK_MS);
		__atomic_fetch_sub(&w->sleepers, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

/* ---- completion notification (VIA §9.6.9-9.6.11) ------------------------- */

/** One registration: a call of VipSendNotify, VipRecvNotify or VipCQNotify. */
struct vipl_notify {
	struct vipl_notify *next;
	VIP_PVOID context;
	VIP_VI_CALLBACK vi_fn;       /**< Send/RecvNotify */
	VIP_CQ_CALLBACK cq_fn;       /**< CQNotify */
};

/** What a completion hands to a handler. */
struct notify_arg {
	VIP_VI_HANDLE vi;
	VIP_DESCRIPTOR *desc;        /**< Send/RecvNotify */
	VIP_BOOLEAN recv;            /**< CQNotify */
};

/* the NIC whose notify thread this is, if it is one */
static __thread const struct vipl_nic *notify_self;
/* handlers this thread runs from inside a Notify call */
static __thread unsigned notify_depth;

/* Have the notify thread look at its queues again (via_abi.h, "Wake-up
 * contract", pair 3). */
static void
notify_kick(struct vipl_nic *nic)
{
	struct via_shm_wait *w = &nic->shm->notify;

	__atomic_fetch_add(&w->seq, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&w->sleepers, __ATOMIC_SEQ_CST) != 0)
		vipl_futex_wake(&w->seq);
}

/*
 * The library's half of "Wake-up contract" pair 4 (via_abi.h), after
 * the store of the notify word: a seq_cst load of the count viad bumps with
 * a seq_cst (release) add after the completion. If viad did not see the
 * word, this sees the bump, and with it the completion: the dequeue that
 * follows reads the same word (or Status, or the ring's prod, all written
 * before the bump) and coherence keeps it from seeing anything older.
 */
static void
notify_sync(const struct vipl_notify_q *nq)
{
	if (nq->kind == VIPL_NOTIFY_CQ)
		(void)__atomic_load_n(&((struct vipl_cq *)nq->owner)->sh->wait.seq,
				      __ATOMIC_SEQ_CST);
	else
		(void)__atomic_load_n(&((struct vipl_vi *)nq->owner)->dp.wq[nq->kind].done->seq,
				      __ATOMIC_SEQ_CST);
}

/* Dequeue what a handler of @p nq gets, as VipSendDone/RecvDone/CQDone do. */
static bool
notify_take(const struct vipl_notify_q *nq, struct notify_arg *a)
{
	if (nq->kind == VIPL_NOTIFY_CQ) {
		struct vipl_cq *cq = nq->owner;

		return vipl_dpdk_dp_cq_take(&cq->dp, vipl_handle_of(&cq->dp.obj), &a->vi,
					    &a->recv) == VIP_SUCCESS;
	}
	struct vipl_vi *vi = nq->owner;

	a->vi = vipl_handle_of(&vi->dp.obj);
	return vipl_dpdk_dp_wq_take(&vi->dp, a->vi, (enum via_wq_kind)nq->kind, &a->desc) ==
	       VIP_SUCCESS;
}

static void
notify_run(struct vipl_nic *nic, const struct vipl_notify *r, const struct notify_arg *a)
{
	VIP_NIC_HANDLE nh = vipl_handle_of(&nic->obj);

	if (r->cq_fn != NULL)
		r->cq_fn(r->context, nh, a->vi, a->recv);
	else
		r->vi_fn(r->context, nh, a->vi, a->desc);
}

/* Append @p r to @p nq (notify_lock held). */
static void
nq_push(struct vipl_nic *nic, struct vipl_notify_q *nq, struct vipl_notify *r)
{
	r->next = NULL;
	if (nq->head == NULL) {
		nq->head = r;
		TAILQ_INSERT_TAIL(&nic->notify_armed, nq, link);
	} else {
		*nq->tailp = r;
	}
	nq->tailp = &r->next;
}

/* Take the oldest registration of @p nq, which has one (notify_lock held). */
static struct vipl_notify *
nq_pop(struct vipl_nic *nic, struct vipl_notify_q *nq)
{
	struct vipl_notify *r = nq->head;

	nq->head = r->next;
	TAILQ_REMOVE(&nic->notify_armed, nq, link);
	if (nq->head != NULL) {
		/* the back of the line: every armed queue gets its turn */
		TAILQ_INSERT_TAIL(&nic->notify_armed, nq, link);
	} else {
		/* a stale "armed" costs a useless ring at most; relaxed */
		__atomic_store_n(nq->flag, 0, __ATOMIC_RELAXED);
	}
	return r;
}

/* Take every registration off @p nq and free them (notify_lock held). */
static void
nq_drop(struct vipl_nic *nic, struct vipl_notify_q *nq)
{
	struct vipl_notify *r = nq->head;

	if (r != NULL)
		TAILQ_REMOVE(&nic->notify_armed, nq, link);
	nq->head = NULL;
	while (r != NULL) {
		struct vipl_notify *next = r->next;

		free(r);
		r = next;
	}
}

/* Serve one registration if any can be (notify_lock held, dropped meanwhile). */
static bool
notify_serve_one(struct vipl_nic *nic)
{
	struct vipl_notify_q *nq;

	TAILQ_FOREACH(nq, &nic->notify_armed, link) {
		struct vipl_notify *r;
		struct notify_arg a;

		if (nq->suspended || !notify_take(nq, &a))
			continue;
		r = nq_pop(nic, nq);
		/* set with the pop, under the lock: a destroyer either takes
		 * the registration away first or waits for this handler */
		nic->notify_running = nq->owner;
		pthread_mutex_unlock(&nic->notify_lock);
		notify_run(nic, r, &a);
		free(r);
		pthread_mutex_lock(&nic->notify_lock);
		nic->notify_running = NULL;
		pthread_cond_broadcast(&nic->notify_cond);
		return true;
	}
	return false;
}

static void *
notifier_main(void *arg)
{
	struct vipl_nic *nic = arg;
	struct via_shm_wait *w = &nic->shm->notify;
	struct vipl_spin spin = { 0 };

	notify_self = nic;
	pthread_mutex_lock(&nic->notify_lock);
	while (!nic->notify_closing) {
		/* read before the look: a ring after it fails the wait below */
		uint32_t seq = __atomic_load_n(&w->seq, __ATOMIC_SEQ_CST);

		if (notify_serve_one(nic)) {
			/* the next completion often follows (a stream, a
			 * handler that registers again): spin before the next
			 * sleep, as VipRecvWait does (vipl_wait.c) */
			vipl_spin_done(&spin);
			spin = (struct vipl_spin){ 0 };
			continue;
		}
		pthread_mutex_unlock(&nic->notify_lock);
		/* a ring within the spin: look again, no system call. A
		 * thread woken by a ring or the tick that serves nothing does
		 * not spin again, so an idle notify thread uses no CPU */
		if (!vipl_spin_wait(&spin, &w->seq, seq, UINT64_MAX)) {
			vipl_spin_sleeps(&spin);
			__atomic_fetch_add(&w->sleepers, 1, __ATOMIC_SEQ_CST);
			vipl_futex_wait(&w->seq, seq, NOTIFY_TICK_MS);
			__atomic_fetch_sub(&w->sleepers, 1, __ATOMIC_SEQ_CST);
		}
		pthread_mutex_lock(&nic->notify_lock);
	}
	pthread_mutex_unlock(&nic->notify_lock);
	return NULL;
}

/*
 * Start the notify thread if it is not running (notify_lock held).
 * @return 0, -ENOMEM (no thread: pthread_create's EAGAIN is a lack of
 *         resources, not via_vip_return()'s "not done")
 */
static int
notifier_start(struct vipl_nic *nic)
{
	if (nic->notifier_started)
		return 0;
	if (pthread_create(&nic->notifier, NULL, notifier_main, nic) != 0)
		return -ENOMEM;
	nic->notifier_started = true;
	return 0;
}

/* The notify thread can serve a registration: viad is there and it runs. */
static int
notifier_ready(struct vipl_nic *nic)
{
	return vipl_nic_alive(nic) ? notifier_start(nic) : -ECONNRESET;
}

/*
 * Register @p r on @p nq (notify_lock held; released on return).
 * @return as vipl_notify_vi()
 */
static int
notify_arm(struct vipl_nic *nic, struct vipl_notify_q *nq, struct vipl_notify *r)
{
	bool first = nq->head == NULL;
	struct notify_arg a;
	int rc = -ECONNRESET;

	if (nic->notify_closed || nic->notify_closing)
		goto fail;
	if (first && notify_self == NULL && notify_depth == 0) {
		/* arm, then look: either viad sees the word or we see the
		 * completion (via_abi.h, "Wake-up contract", pair 4) */
		__atomic_store_n(nq->flag, VIA_NOTIFY_ARMED, __ATOMIC_SEQ_CST);
		notify_sync(nq);
		if (notify_take(nq, &a)) {
			__atomic_store_n(nq->flag, 0, __ATOMIC_RELAXED);
			pthread_mutex_unlock(&nic->notify_lock);
			notify_depth++;
			notify_run(nic, r, &a);
			notify_depth--;
			free(r);
			return 0;
		}
		rc = notifier_ready(nic);
		if (rc != 0) {
			__atomic_store_n(nq->flag, 0, __ATOMIC_RELAXED);
			goto fail;
		}
		nq_push(nic, nq, r);
		pthread_mutex_unlock(&nic->notify_lock);
		return 0;
	}
	/* behind others, or from a handler: the notify thread looks again */
	rc = notifier_ready(nic);
	if (rc != 0)
		goto fail;
	__atomic_store_n(nq->flag, VIA_NOTIFY_ARMED, __ATOMIC_SEQ_CST);
	nq_push(nic, nq, r);
	pthread_mutex_unlock(&nic->notify_lock);
	notify_kick(nic);
	return 0;
fail:
	pthread_mutex_unlock(&nic->notify_lock);
	free(r);
	return rc;
}

int
vipl_notify_vi(struct vipl_vi *vi, enum via_wq_kind kind, VIP_PVOID ctx, VIP_VI_CALLBACK fn)
{
	struct vipl_nic *nic = vi->nic;
	struct vipl_notify *r = calloc(1, sizeof(*r));
	unsigned q;

	if (r == NULL)
		return -ENOMEM;
	r->context = ctx;
	r->vi_fn = fn;
	pthread_mutex_lock(&nic->notify_lock);
	/* both queues at once: VipDestroyVi waits on either for the VI */
	for (q = 0; q < VIA_WQ_COUNT && vi->nq[q].nic == NULL; q++) {
		struct vipl_notify_q *nq = &vi->nq[q];

		nq->owner = vi;
		nq->kind = (uint8_t)q;
		nq->flag = &vi->sh->wq[q].notify;
		nq->nic = nic;
	}
	return notify_arm(nic, &vi->nq[kind], r);
}

int
vipl_notify_cq(struct vipl_cq *cq, VIP_PVOID ctx, VIP_CQ_CALLBACK fn)
{
	struct vipl_nic *nic = cq->nic;
	struct vipl_notify *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return -ENOMEM;
	r->context = ctx;
	r->cq_fn = fn;
	pthread_mutex_lock(&nic->notify_lock);
	if (cq->nq.nic == NULL) {
		cq->nq.owner = cq;
		cq->nq.kind = VIPL_NOTIFY_CQ;
		cq->nq.flag = &cq->sh->notify;
		cq->nq.nic = nic;
	}
	return notify_arm(nic, &cq->nq, r);
}

/* Wait until no handler of @p owner runs on the notify thread (notify_lock held). */
static void
notify_wait_idle(struct vipl_nic *nic, const void *owner)
{
	/* a handler destroying its own VI or CQ must not wait for itself */
	while (nic->notify_running == owner && notify_self != nic)
		pthread_cond_wait(&nic->notify_cond, &nic->notify_lock);
}

void
vipl_notify_cancel(struct vipl_notify_q *nq)
{
	struct vipl_nic *nic = nq->nic;

	/* after VipCloseNic's vipl_provider_stop everything is gone already */
	if (nic == NULL || nic->notify_closed)
		return;
	pthread_mutex_lock(&nic->notify_lock);
	nq_drop(nic, nq);
	notify_wait_idle(nic, nq->owner);
	pthread_mutex_unlock(&nic->notify_lock);
}

void
vipl_notify_suspend(struct vipl_notify_q *nq)
{
	struct vipl_nic *nic = nq->nic;

	if (nic == NULL || nic->notify_closed)
		return;
	pthread_mutex_lock(&nic->notify_lock);
	nq->suspended = true;
	notify_wait_idle(nic, nq->owner);
	pthread_mutex_unlock(&nic->notify_lock);
}

void
vipl_notify_resume(struct vipl_notify_q *nq)
{
	struct vipl_nic *nic = nq->nic;
	bool armed;

	if (nic == NULL || nic->notify_closed)
		return;
	pthread_mutex_lock(&nic->notify_lock);
	nq->suspended = false;
	armed = nq->head != NULL;
	pthread_mutex_unlock(&nic->notify_lock);
	/* what completed meanwhile rang for nobody */
	if (armed)
		notify_kick(nic);
}

/* ---- both threads ------------------------------------------------------------- */

int
vipl_provider_start(struct vipl_nic *nic)
{
	int rc;

	pthread_mutex_init(&nic->notify_lock, NULL);
	pthread_cond_init(&nic->notify_cond, NULL);
	TAILQ_INIT(&nic->notify_armed);
	rc = pthread_create(&nic->provider, NULL, provider_main, nic);
	if (rc != 0) {
		pthread_cond_destroy(&nic->notify_cond);
		pthread_mutex_destroy(&nic->notify_lock);
		/* EAGAIN is a lack of resources, not via_vip_return()'s "not done" */
		return -ENOMEM;
	}
	nic->provider_started = true;
	return 0;
}

void
vipl_provider_stop(struct vipl_nic *nic)
{
	struct vipl_notify_q *nq;
	bool notifier;

	if (!nic->provider_started)
		return;
	__atomic_store_n(&nic->closing, true, __ATOMIC_RELEASE);
	/* the thread wakes at its next tick at the latest; wake it now */
	__atomic_fetch_add(&nic->errq_sh->wait.seq, 1, __ATOMIC_SEQ_CST);
	vipl_futex_wake(&nic->errq_sh->wait.seq);
	pthread_join(nic->provider, NULL);
	nic->provider_started = false;

	/* the notify thread finishes the handler it runs, if any */
	pthread_mutex_lock(&nic->notify_lock);
	nic->notify_closing = true;
	notifier = nic->notifier_started;
	pthread_mutex_unlock(&nic->notify_lock);
	if (notifier) {
		notify_kick(nic);
		pthread_join(nic->notifier, NULL);
		nic->notifier_started = false;
	}
	/* VipCloseNic destroys every VI and CQ: their registrations never run */
	pthread_mutex_lock(&nic->notify_lock);
	while ((nq = TAILQ_FIRST(&nic->notify_armed)) != NULL)
		nq_drop(nic, nq);
	nic->notify_closed = true;
	pthread_mutex_unlock(&nic->notify_lock);
	pthread_cond_destroy(&nic->notify_cond);
	pthread_mutex_destroy(&nic->notify_lock);
}
