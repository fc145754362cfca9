/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Client sessions: one per VipOpenNic. A session owns a shared segment and
 * every object the client creates; when its socket closes - VipCloseNic,
 * exit or SIGKILL alike - all of it is freed here and counted.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <vipl.h>

#include "viad.h"

#define ERRQ_SLOTS 256

void
via_shm_wait_add(struct via_shm_wait *w, uint32_t n)
{
	__atomic_fetch_add(&w->seq, n, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&w->sleepers, __ATOMIC_SEQ_CST) != 0)
		syscall(SYS_futex, &w->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void
via_shm_wait_bump(struct via_shm_wait *w)
{
	via_shm_wait_add(w, 1);
}

void
via_session_async_error(struct via_session *s, uint32_t code, uint32_t vi_cookie,
			uint32_t resource, uint32_t op, uint64_t desc_va)
{
	struct via_async_error e = {
		.desc_va = desc_va, .code = code, .resource = resource,
		.vi_cookie = vi_cookie, .op = op,
	};

	if (!s->opened)
		return;
	via_dp_lock(&s->errq_lock);
	if (via_ring_enqueue(&s->errq, &e) != 0) {
		/* once per session: a flood must not flood the log too */
		if (!s->errq_overflowed)
			VLOG_WARN("session %u: error queue full: asynchronous errors are being "
				  "lost (the client does not take them)", s->id);
		s->errq_overflowed = true;
		via_dp_unlock(&s->errq_lock);
		return;
	}
	via_dp_unlock(&s->errq_lock);
	via_shm_wait_bump(&s->errq_sh->wait);
}

int
via_session_new(struct viad *d, int sock, struct via_session **out)
{
	struct via_session *s = calloc(1, sizeof(*s));
	int rc;

	if (s == NULL)
		return -ENOMEM;
	rc = via_idtab_alloc(&d->sessions, s, &s->id);
	if (rc != 0) {
		free(s);
		return rc;
	}
	via_session_init(d, s);
	s->sock = sock;
	*out = s;
	return 0;
}

void
via_session_init(struct viad *d, struct via_session *s)
{
	s->sock = s->pidfd = -1;
	s->seg.fd = -1;
	s->in_fd = s->share_fd = s->mem_fd = s->witness_fd = -1;
	TAILQ_INIT(&s->views);
	TAILQ_INIT(&s->ptags);
	TAILQ_INIT(&s->mrs);
	TAILQ_INIT(&s->cqs);
	TAILQ_INIT(&s->vis);
	TAILQ_INIT(&s->pmems);
	TAILQ_INSERT_TAIL(&d->session_list, s, link);
}

struct via_nic *
via_nic_by_name(struct viad *d, const char *name)
{
	unsigned i, n, eth = 0;
	char tail;

	for (i = 0; i < d->nb_nics; i++) {
		if (strcmp(d->nics[i].info.name, name) == 0)
			return &d->nics[i];
	}
	/* the M-VIA device names */
	if (strcmp(name, "/dev/via_lo") == 0) {
		for (i = 0; i < d->nb_nics; i++) {
			if (d->nics[i].loopback)
				return &d->nics[i];
		}
		return NULL;
	}
	if (sscanf(name, "/dev/via_eth%u%c", &n, &tail) != 1)
		return NULL;
	for (i = 0; i < d->nb_nics; i++) {
		if (!d->nics[i].loopback && eth++ == n)
			return &d->nics[i];
	}
	return NULL;
}

int
via_session_open(struct viad *d, struct via_session *s, const char *nic_name)
{
	struct via_shm_header *h;
	uint64_t bell_off;
	char name[32];
	int rc;

	if (s->opened)
		return -EALREADY;
	s->nic = via_nic_by_name(d, nic_name);
	if (s->nic == NULL)
		return -ENODEV;
	snprintf(name, sizeof(name), "viad-session-%u", s->id);
	rc = via_shm_create_charged(d, s, &s->seg, name, d->conf.session_shm_bytes,
				    VIA_GUARD_SEGMENT);
	if (rc != 0)
		return rc == -ENOSPC ? rc : -ENOMEM;
	rc = via_arena_init(&s->arena, sizeof(struct via_shm_header), s->seg.len);
	if (rc != 0) {
		via_shm_uncharge(d, s, &s->seg);
		via_shm_destroy(&s->seg);
		return rc;
	}
	h = (struct via_shm_header *)s->seg.va;
	/* the error queue is the first object of the arena */
	if (via_arena_alloc(&s->arena, via_shm_errq_size(ERRQ_SLOTS), &h->errq_off) != 0) {
		via_arena_fini(&s->arena);
		via_shm_uncharge(d, s, &s->seg);
		via_shm_destroy(&s->seg);
		return -ENOMEM;
	}
	h->errq_capacity = ERRQ_SLOTS;
	/* one doorbell bit per VI the session may have */
	s->bell_words = (d->conf.max_vi + 63) / 64;
	s->by_bell = calloc((size_t)s->bell_words * 64, sizeof(*s->by_bell));
	s->bell_taken = calloc(s->bell_words, sizeof(*s->bell_taken));
	if (s->by_bell == NULL || s->bell_taken == NULL ||
	    via_arena_alloc(&s->arena,
			    ((uint64_t)s->bell_words + via_bell_summary_words(s->bell_words)) * 8,
			    &bell_off) != 0) {
		free(s->by_bell);
		free(s->bell_taken);
		s->by_bell = NULL;
		s->bell_taken = NULL;
		via_arena_fini(&s->arena);
		via_shm_uncharge(d, s, &s->seg);
		via_shm_destroy(&s->seg);
		return -ENOMEM;
	}
	h->bell_off = (uint32_t)bell_off;
	h->bell_words = s->bell_words;
	s->bells = (uint64_t *)(s->seg.va + bell_off);
	s->bell_summary = s->bells + s->bell_words;
	s->errq_sh = (struct via_shm_errq *)(s->seg.va + h->errq_off);
	via_ring_attach(&s->errq, &s->errq_sh->ring, s->errq_sh + 1, ERRQ_SLOTS,
			sizeof(struct via_async_error), true);
	h->cookie = VIA_SHM_COOKIE;
	h->abi_version = VIA_ABI_VERSION;
	h->header_size = sizeof(*h);
	h->segment_size = s->seg.len;
	h->session_id = s->id;
	__atomic_store_n(&h->daemon_state, VIA_DAEMON_RUNNING, __ATOMIC_RELEASE);
	s->opened = true;
	d->counters.sessions++;
	return 0;
}

void
via_session_close(struct viad *d, struct via_session *s)
{
	struct via_ctl_counters *c = &d->counters;
	struct via_vi *vi;
	struct via_cq *cq;
	struct via_mr *mr;
	struct via_pmem *pm;
	struct via_ptag *pt;

	/* children before parents: VIs hold CQs and ptags, regions hold
	 * ptags and provider memory */
	while ((vi = TAILQ_FIRST(&s->vis)) != NULL) {
		via_vi_free(d, vi);
		c->reclaimed_vis++;
	}
	while ((cq = TAILQ_FIRST(&s->cqs)) != NULL) {
		via_cq_destroy(d, s, cq->id);
		c->reclaimed_cqs++;
	}
	while ((mr = TAILQ_FIRST(&s->mrs)) != NULL) {
		via_mr_deregister(d, s, mr->addr, mr->handle);
		c->reclaimed_regions++;
	}
	via_mr_table_close(d, s);
	while ((pm = TAILQ_FIRST(&s->pmems)) != NULL) {
		via_pmem_free(d, s, pm->id);
		c->reclaimed_allocs++;
	}
	while ((pt = TAILQ_FIRST(&s->ptags)) != NULL) {
		via_ptag_destroy(d, s, pt->id);
		c->reclaimed_ptags++;
	}
	if (s->opened) {
		free(s->by_bell);
		free(s->bell_taken);
		via_arena_fini(&s->arena);
		via_shm_uncharge(d, s, &s->seg);
		via_shm_destroy(&s->seg);
		c->sessions--;
		c->sessions_closed++;
	}
	/* deferred requests never answered (the connection manager dropped
	 * them with the session), then the session: its user holds nothing
	 * of it any more */
	via_user_uncharge(d, s, VIA_USER_REQUESTS, s->deferred);
	via_user_detach(d, s);
	TAILQ_REMOVE(&d->session_list, s, link);
	via_idtab_free(&d->sessions, s->id);
	/* viad's own */
	if (s->pidfd >= 0)
		close(s->pidfd);
	/* the client's, and the socket, which may hold fds it queued: closed
	 * where a close that waits holds up nothing (reap.c). Every region is
	 * gone, and with it every view of the share file. */
	via_reap(s->sock, s->id);
	via_reap(s->in_fd, s->id);
	via_reap(s->share_fd, s->id);
	via_reap(s->mem_fd, s->id);
	via_reap(s->witness_fd, s->id);
	free(s);
}
