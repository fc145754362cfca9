/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data path's memory, provided off the poll lcores (docs/design.md,
 * "Memory on the poll lcores"; DPDK's lcore rules: no libc allocation, no
 * blocking call there). Everything a poll lcore needs beyond its mbufs is
 * made by the control thread, with every shard's lock held, sized from the
 * limits:
 *
 *  - per VI, when it connects (via_dp_vi_provision, before the handshake
 *    commits: its failure is the connect call's VIP_ERROR_RESOURCE, VIA
 *    §9.4): the scatter lists of the message being framed and the one
 *    being received (max_segments_per_desc each), the FIFO of held send
 *    completions, and on the reliable levels the send window and, on
 *    Reliable Reception, the frames parked behind an RDMA Read (as many as
 *    frames of two messages of the connection's largest size). An idle VI
 *    has none of it: 16k of them stay small. Kept until the VI is freed
 *    (via_vi_free), grown at a later connection that needs more;
 *  - per shard, at start (via_dp_mem_init): the scatter lists of the RDMA
 *    Reads waiting for their answer (an rte_mempool of VIA_DP_READ_LISTS:
 *    a list is 6 KiB and few VIs read), the zero-copy trackers (dp_zc.c)
 *    and the list a send of a never connected VI is fetched into to be
 *    flushed. An empty pool is a resource error, counted (pool_exhausted):
 *    the RDMA Read completes with Transport Error (VIA §10.2 bit 6, "data
 *    could not be transferred"; on the reliable levels it breaks the
 *    connection, §2.5.2); a message without a tracker is copied instead.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_mempool.h>

#include "dp.h"

/* A ring that may have to grow: where it is and what it holds. */
struct ring_ref {
	void **slots;              /**< the ring, NULL with none */
	uint32_t *size;            /**< its slots: a power of two, 0 with none */
	size_t entry;              /**< bytes a slot */
	uint32_t head, tail;       /**< its entries, free-running indices */
};

/*
 * Point @p r at a ring of @p n slots: the one there if it has as many, else
 * a new one, zeroed, into which its entries move to the same index modulo
 * the new size. @return 0, -ENOMEM
 */
static int
ring_fit(struct ring_ref r, uint32_t n)
{
	uint8_t *a;

	if (*r.slots != NULL && *r.size >= n)
		return 0;
	a = calloc(n, r.entry);
	if (a == NULL)
		return -ENOMEM;
	for (; r.head != r.tail; r.head++)
		memcpy(a + (r.head & (n - 1)) * r.entry,
		       (const uint8_t *)*r.slots + (r.head & (*r.size - 1)) * r.entry, r.entry);
	free(*r.slots);
	*r.slots = a;
	*r.size = n;
	return 0;
}

/* A scatter list of @p n entries at *@p segs, if none is there. */
static int
segs_fit(struct via_dp_seg **segs, uint32_t n)
{
	uint32_t have = *segs != NULL ? n : 0;

	return ring_fit((struct ring_ref){ (void **)segs, &have, sizeof(**segs), 0, 0 }, n);
}

int
via_dp_vi_provision(struct via_vi *vi)
{
	/* attr.max_transfer is the size asked for until the VI is connected:
	 * the granted one is no larger (cm.c, conn_transfer) */
	const uint32_t n = via_net_queue_size(vi);
	struct via_vi_rel *r = &vi->rel;
	struct via_vi_sq *q = &vi->sq;

	if (segs_fit(&vi->tx.segs, vi->owner->nic->info.max_segments_per_desc) != 0 ||
	    segs_fit(&vi->rx.segs, vi->owner->nic->info.max_segments_per_desc) != 0)
		return -ENOMEM;
	/* empty when a connection starts (the flush that ended the last one);
	 * an adopted one has the size it had. Its entries do not move: zero-
	 * copy trackers point at them */
	if (q->head == q->tail &&
	    ring_fit((struct ring_ref){ (void **)&q->pend, &q->size, sizeof(*q->pend), 0, 0 }, n) != 0)
		return -ENOMEM;
	if (!via_rel_level(vi))
		return 0;
	/* the frames of the last connection go at its reset, after this */
	if (ring_fit((struct ring_ref){ (void **)&r->win, &r->win_size, sizeof(*r->win),
					r->snd_una, r->snd_nxt }, n) != 0)
		return -ENOMEM;
	/* the sender keeps what comes behind its reads within this
	 * (via_rel_room_new) */
	if (vi->attr.reliability == VIP_SERVICE_RELIABLE_RECEPTION &&
	    ring_fit((struct ring_ref){ (void **)&r->park, &r->park_size, sizeof(*r->park),
					r->park_head, r->park_tail }, n) != 0)
		return -ENOMEM;
	return 0;
}

struct via_dp_seg *
via_read_segs_get(struct via_shard *sh)
{
	void *list;

	if (rte_mempool_get(sh->read_lists, &list) != 0) {
		via_dp_stats()->pool_exhausted++;
		return NULL;
	}
	return list;
}

void
via_read_segs_put(struct via_shard *sh, struct via_dp_seg *segs)
{
	if (segs != NULL)
		rte_mempool_put(sh->read_lists, segs);
}

int
via_dp_mem_init(struct viad *d)
{
	const uint32_t max_segs = d->conf.max_segments_per_desc;
	unsigned i;

	for (i = 0; i < d->nb_shards; i++) {
		struct via_shard *sh = &d->shards[i];
		char name[RTE_MEMPOOL_NAMESIZE];

		snprintf(name, sizeof(name), "viad_reads_%u", i);
		/* one thread at a time: the shard's lcore, or the control
		 * thread with its lock; no per-lcore cache */
		sh->read_lists = rte_mempool_create(name, VIA_DP_READ_LISTS,
						    max_segs * sizeof(struct via_dp_seg), 0, 0,
						    NULL, NULL, NULL, NULL, SOCKET_ID_ANY,
						    RTE_MEMPOOL_F_SP_PUT | RTE_MEMPOOL_F_SC_GET);
		sh->flush_segs = calloc(max_segs, sizeof(*sh->flush_segs));
		if (sh->read_lists == NULL || sh->flush_segs == NULL || via_zc_init(sh) != 0)
			return -ENOMEM;
	}
	return 0;
}

void
via_dp_mem_fini(struct viad *d)
{
	unsigned i;

	for (i = 0; i < d->nb_shards; i++) {
		struct via_shard *sh = &d->shards[i];

		/* the trackers' slab outlives the ports (main.c): frames a
		 * port still holds point at its shared info until it closes */
		rte_mempool_free(sh->read_lists);
		sh->read_lists = NULL;
		free(sh->flush_segs);
		sh->flush_segs = NULL;
	}
}
