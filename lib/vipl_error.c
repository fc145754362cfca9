/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The provider thread of a NIC: it takes asynchronous errors from the
 * session's error queue (viad produces them) and runs the consumer's
 * VipErrorCallback handler (VIA §9.9.1: "not guaranteed to run in the
 * context of the calling thread"). It sleeps on the queue's wait word and
 * is woken by viad only when it says it sleeps.
 */
#include <errno.h>
#include <string.h>

#include "vipl_priv.h"

#define PROVIDER_TICK_MS 200   /* how often a sleeping thread checks for close */

static void
deliver(struct vipl_nic *nic, const struct via_async_error *e)
{
	void (*handler)(VIP_PVOID, VIP_ERROR_DESCRIPTOR *);
	VIP_ERROR_DESCRIPTOR ed;
	VIP_PVOID context;

	memset(&ed, 0, sizeof(ed));
	ed.NicHandle = vipl_handle_of(&nic->obj);
	if (e->vi_cookie != 0)
		ed.ViHandle = vipl_handle_by_id(e->vi_cookie, VIPL_OBJ_VI);
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

void
vipl_async_error(struct vipl_nic *nic, VIP_ERROR_CODE code, uint32_t vi_cookie,
		 VIP_RESOURCE_CODE resource, VIP_DESCRIPTOR *desc, uint32_t op)
{
	struct via_async_error e = {
		.desc_va = (uintptr_t)desc, .code = code, .resource = resource,
		.vi_cookie = vi_cookie, .op = op,
	};

	pthread_mutex_lock(&nic->lock);
	if (nic->nb_local_errs < VIPL_LOCAL_ERRORS)
		nic->local_errs[nic->nb_local_errs++] = e;
	pthread_mutex_unlock(&nic->lock);
	/* the provider sleeps on the error queue's word: bump and wake it */
	__atomic_fetch_add(&nic->errq_sh->wait.seq, 1, __ATOMIC_SEQ_CST);
	vipl_futex_wake(&nic->errq_sh->wait.seq);
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

static void *
provider_main(void *arg)
{
	struct vipl_nic *nic = arg;
	struct via_shm_wait *w = &nic->errq_sh->wait;

	while (!__atomic_load_n(&nic->closing, __ATOMIC_ACQUIRE)) {
		struct via_async_error e;
		uint32_t seq = __atomic_load_n(&w->seq, __ATOMIC_SEQ_CST);

		if (via_ring_dequeue(&nic->errq, &e) == 0 || local_error(nic, &e)) {
			deliver(nic, &e);
			continue;
		}
		if (nic->errq.corrupt)
			break;
		__atomic_fetch_add(&w->sleepers, 1, __ATOMIC_SEQ_CST);
		if (via_ring_avail(&nic->errq) == 0)
			vipl_futex_wait(&w->seq, seq, PROVIDER_TICK_MS);
		__atomic_fetch_sub(&w->sleepers, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

int
vipl_provider_start(struct vipl_nic *nic)
{
	int rc = pthread_create(&nic->provider, NULL, provider_main, nic);

	if (rc != 0)
		return -rc;
	nic->provider_started = true;
	return 0;
}

void
vipl_provider_stop(struct vipl_nic *nic)
{
	if (!nic->provider_started)
		return;
	__atomic_store_n(&nic->closing, true, __ATOMIC_RELEASE);
	/* the thread wakes at its next tick at the latest; wake it now */
	__atomic_fetch_add(&nic->errq_sh->wait.seq, 1, __ATOMIC_SEQ_CST);
	vipl_futex_wake(&nic->errq_sh->wait.seq);
	pthread_join(nic->provider, NULL);
	nic->provider_started = false;
}
