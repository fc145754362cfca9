/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Zero-copy transmit (VIA §2.3, §6.2: the NIC moves data straight from the
 * registered pages; docs/design.md "Zero-copy transmit").
 *
 * A frame whose data lies in provider memory (VipDpdkAllocMem, mapped by
 * viad too) is a header mbuf chained to an external-buffer mbuf that points
 * at the client's pages. Every such frame of one message (or one RDMA Read
 * answer) is attached to the message's tracker, a struct via_zc, whose
 * rte_mbuf_ext_shared_info counts them:
 *
 *   refcnt = frames still alive + 1 while the message is being framed.
 *
 * The send may complete only once no frame points into its buffers any
 * more (the client may rewrite them at once): the last frame's free, on
 * whatever thread frees it (a port's transmit, another shard's receive, an
 * ACK that empties the reliable window), runs zc_released(), which pushes
 * the tracker onto its shard's lock-free stack. The shard reaps the stack
 * under its own lock and lets the held completion go (dp_comp.c's FIFO,
 * so the send queue's order holds). A tracker also pins its allocation:
 * VipDpdkFreeMem while frames are in flight unmaps it at the last unpin.
 *
 * Ownership without reference counts on VIs: the tracker's pend pointer is
 * written only under its shard's lock (bind, orphan, reap), and a VI that
 * goes away first orphans it (pend NULL), so the reap only frees it.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>

#include <rte_atomic.h>
#include <rte_mbuf.h>

#include "dp.h"

struct via_zc {
	struct rte_mbuf_ext_shared_info shinfo;
	struct via_zc *next;            /**< in the shard's released stack or free list */
	struct via_shard *shard;        /**< whose stack it goes to: the VI's */
	struct viad *d;
	struct via_pmem *pmem;          /**< pinned while the tracker lives */
	struct via_vi *vi;              /**< with @c pend: whose completion it holds */
	struct via_sq_pending *pend;    /**< the held completion, or NULL (orphan) */
};

/* shinfo.refcnt is 16 bits: frames of one tracker, with room for the framing reference */
#define ZC_MAX_FRAMES (UINT16_MAX - 1)

/*
 * The last frame is freed: hand the tracker to its shard. Any thread, any
 * lock or none: touches only the tracker's link and the shard's stack.
 */
static void
zc_released(void *addr __rte_unused, void *opaque)
{
	struct via_zc *zc = opaque;
	struct via_shard *sh = zc->shard;
	struct via_zc *head = __atomic_load_n(&sh->zc_released, __ATOMIC_RELAXED);

	do
		zc->next = head;
	while (!__atomic_compare_exchange_n(&sh->zc_released, &head, zc, true, __ATOMIC_SEQ_CST,
					    __ATOMIC_RELAXED));
	/* the push (seq_cst) before the load of the shard's asleep */
	via_poll_wake(sh);
}

static void
zc_free(struct via_zc *zc)
{
	struct via_shard *sh = zc->shard;

	via_pmem_unpin(zc->pmem);
	zc->next = sh->zc_free;
	sh->zc_free = zc;
}

struct via_zc *
via_zc_new(struct viad *d, struct via_vi *vi, struct via_pmem *pmem)
{
	struct via_shard *sh = vi->shard;
	struct via_zc *zc = sh->zc_free;

	if (zc != NULL) {
		sh->zc_free = zc->next;
		/* a spare tracker counts nothing; a frame freed after its
		 * tracker (a reference dropped twice: a bug) would still reach
		 * it, so it is left alone, not reused */
		if (rte_mbuf_ext_refcnt_read(&zc->shinfo) != 0) {
			VLOG_ERR("zero copy: a tracker was freed before its last frame");
			zc = NULL;
		}
	}
	if (zc == NULL) {
		via_dp_stats()->pool_exhausted++;
		return NULL;
	}
	*zc = (struct via_zc){
		.shinfo = { .free_cb = zc_released, .fcb_opaque = zc },
		.shard = sh, .d = d, .pmem = pmem,
	};
	rte_mbuf_ext_refcnt_set(&zc->shinfo, 1);     /* the framing reference */
	via_pmem_pin(pmem);
	return zc;
}

struct rte_mbuf *
via_zc_attach(struct via_zc *zc, const struct via_pmem *pmem, void *va, uint16_t len)
{
	struct rte_mbuf *m;

	if (zc->pmem != pmem || rte_mbuf_ext_refcnt_read(&zc->shinfo) >= ZC_MAX_FRAMES)
		return NULL;
	m = rte_pktmbuf_alloc(via_nics_zc_pool());
	if (m == NULL)
		return NULL;
	/* the port reads it by virtual address (VIA_PORT_CAP_TX_BY_VA): no IOVA */
	rte_pktmbuf_attach_extbuf(m, va, RTE_BAD_IOVA, len, &zc->shinfo);
	rte_mbuf_ext_refcnt_update(&zc->shinfo, 1);
	m->data_len = len;
	m->pkt_len = len;
	return m;
}

struct via_zc *
via_zc_framed(struct via_zc *zc)
{
	if (zc == NULL || rte_mbuf_ext_refcnt_update(&zc->shinfo, -1) == 0) {
		if (zc != NULL)
			zc_free(zc);
		return NULL;
	}
	return zc;
}

void
via_zc_drop(struct via_zc **zc)
{
	via_zc_bind(via_zc_framed(*zc), NULL, NULL);
	*zc = NULL;
}

void
via_zc_bind(struct via_zc *zc, struct via_vi *vi, struct via_sq_pending *p)
{
	if (zc == NULL)
		return;
	zc->vi = vi;
	zc->pend = p;
	if (p != NULL)
		p->zc = zc;
}

void
via_zc_orphan(struct via_sq_pending *p)
{
	if (p->zc == NULL)
		return;
	p->zc->pend = NULL;
	p->zc = NULL;
}

bool
via_zc_reap(struct viad *d, struct via_shard *me)
{
	struct via_zc *zc;

	if (__atomic_load_n(&me->zc_released, __ATOMIC_RELAXED) == NULL)
		return false;
	zc = __atomic_exchange_n(&me->zc_released, NULL, __ATOMIC_ACQUIRE);
	while (zc != NULL) {
		struct via_zc *next = zc->next;
		struct via_sq_pending *p = zc->pend;
		struct via_vi *vi = zc->vi;

		zc_free(zc);
		if (p != NULL) {
			p->zc = NULL;
			d->ev.sq_released(d, vi);
		}
		zc = next;
	}
	return true;
}

bool
via_zc_pending(const struct via_shard *me)
{
	return __atomic_load_n(&me->zc_released, __ATOMIC_SEQ_CST) != NULL;
}

int
via_zc_init(struct via_shard *me)
{
	unsigned i;

	me->zc_slab = calloc(VIA_DP_ZC_TRACKERS, sizeof(*me->zc_slab));
	if (me->zc_slab == NULL)
		return -ENOMEM;
	for (i = 0; i < VIA_DP_ZC_TRACKERS; i++) {
		me->zc_slab[i].next = me->zc_free;
		me->zc_free = &me->zc_slab[i];
	}
	return 0;
}

void
via_zc_fini(struct via_shard *me)
{
	struct via_zc *zc = __atomic_exchange_n(&me->zc_released, NULL, __ATOMIC_ACQUIRE);

	/* the trackers whose last frames the ports freed as they closed: their
	 * VIs are gone (each orphaned its held completion), their pins are not */
	for (; zc != NULL; zc = zc->next)
		via_pmem_unpin(zc->pmem);
	free(me->zc_slab);
	me->zc_slab = NULL;
	me->zc_free = NULL;
}
