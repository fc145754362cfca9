/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The completer (as rxe_comp.c): completions written into the client's
 * descriptors, and the FIFO of send completions held back, which every
 * reliability level uses.
 *
 * Completion (VIA §6.4.1, §10.2): Length and ImmediateData first, then
 * Status with Done in one store after them, then the queue's wait word,
 * then the CQ entry (VIA §6.4.2); the wait words' orderings are those of
 * via_abi.h. On a poll lcore the queues' wait words are bumped once per
 * queue at the end of the iteration, for all its completions (a burst):
 * still after their Status, and before the poller may sleep.
 *
 * Held completions: completions leave a queue in order (the library
 * dequeues the head), so once one waits - for the ACK of its last frame
 * on Reliable Reception (VIA §2.5.3), for the answer of an RDMA Read, for
 * its zero-copy frames to be freed (dp_zc.c) - every later one waits behind
 * it. The transport (dp_rel.c) and the trackers (dp_zc.c) say when they are ready.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <vipl.h>

#include "dp.h"

#define STATUS_OFF      offsetof(VIP_CONTROL_SEGMENT, Status)
#define IMM_OFF         offsetof(VIP_CONTROL_SEGMENT, ImmediateData)

_Static_assert(offsetof(VIP_CONTROL_SEGMENT, Length) == IMM_OFF + 4, "Imm then Length");

/*
 * @p n completions of @p vi's queue @p q: its wait word, then, if a
 * VipSendNotify/VipRecvNotify is pending on the queue, the session's notify
 * doorbell (via_abi.h, "Wake-up contract", pairs 3 and 4; the flag is the
 * client's word, only a hint).
 */
static void
done_bump(struct via_vi *vi, enum via_wq_kind q, uint32_t n)
{
	via_shm_wait_add(&vi->sh->wq[q].done, n);
	if (__atomic_load_n(&vi->sh->wq[q].notify, __ATOMIC_SEQ_CST) != 0)
		via_shm_wait_bump(&((struct via_shm_header *)vi->owner->seg.va)->notify);
}

void
via_dp_complete_flush(struct via_shard *me)
{
	unsigned i, q;

	for (i = 0; i < me->nb_owed; i++) {
		struct via_vi *vi = me->owed[i];

		for (q = 0; q < VIA_WQ_COUNT; q++) {
			if (vi->owed[q] != 0)
				done_bump(vi, (enum via_wq_kind)q, vi->owed[q]);
			vi->owed[q] = 0;
		}
	}
	me->nb_owed = 0;
}

/* The wait word of a completion of @p vi's queue @p q: now, or at the end
 * of the iteration of its shard (counted in the VI). */
static void
done_owe(struct via_vi *vi, enum via_wq_kind q)
{
	struct via_shard *me = vi->shard;

	if (!me->batch) {
		done_bump(vi, q, 1);
		return;
	}
	if (vi->owed[VIA_WQ_SEND] == 0 && vi->owed[VIA_WQ_RECV] == 0) {
		if (me->nb_owed == VIA_SHARD_OWED_MAX)
			via_dp_complete_flush(me);
		me->owed[me->nb_owed++] = vi;
	}
	vi->owed[q]++;
}

void
via_dp_complete(struct via_vi *vi, enum via_wq_kind q, const struct via_wqe *w,
		const struct via_mr *desc_mr, struct via_dp_done done)
{
	struct via_cq *cq = vi->cq[q];
	const uint32_t len = done.len, imm = done.imm;
	uint32_t status = done.status;

	if (via_vi_lines(vi)) {
		/* into the ring entry, which the library polls; an unusable
		 * descriptor reads as the library would mark it (§9.9.1) */
		via_desc_line_done(vi, q, desc_mr != NULL ? len : 0, desc_mr != NULL ? imm : 0,
				   desc_mr != NULL ? status : VIP_STATUS_PROTECTION_ERROR);
	} else if (desc_mr != NULL) {
		uint32_t fields[2] = { imm, len };
		uint8_t *p = via_mem_direct(desc_mr, w->desc_va);

		status |= VIP_STATUS_DONE;
		if (p != NULL) {
			memcpy(p + IMM_OFF, fields, sizeof(fields));
			__atomic_store_n((uint32_t *)(p + STATUS_OFF), status, __ATOMIC_RELEASE);
		} else if (via_mem_write(vi->owner, desc_mr, w->desc_va + IMM_OFF, fields,
					 sizeof(fields)) == 0) {
			/* a second write: Status only after the rest is in place */
			via_mem_write(vi->owner, desc_mr, w->desc_va + STATUS_OFF, &status,
				      sizeof(status));
		}
	}
	/* counted even when the descriptor could not be written, so the
	 * library can tell a completed head from a pending one */
	done_owe(vi, q);
	/* a VipCQNotify pending on its CQ: the session's notify doorbell */
	bool bell = false;

	if (cq != NULL) {
		struct via_cqe e = { .vi_cookie = vi->cookie, .flags = q == VIA_WQ_RECV ? VIA_CQE_RECV : 0 };

		int full;

		via_dp_lock(&cq->lock);
		full = via_ring_enqueue(&cq->ring, &e);
		via_dp_unlock(&cq->lock);
		if (full != 0)
			via_dp_stats()->cq_overruns++;
		via_shm_wait_bump(&cq->sh->wait);
		bell |= __atomic_load_n(&cq->sh->notify, __ATOMIC_SEQ_CST) != 0;
	}
	if (bell)
		via_shm_wait_bump(&((struct via_shm_header *)vi->owner->seg.va)->notify);
}

void
via_comp_recv(struct viad *d, struct via_vi *vi, int err, bool whole)
{
	const struct via_dp_msg *msg = &vi->rx.msg;
	struct via_dp_done done = { .status = via_comp_status(err) | VIP_STATUS_OP_RECEIVE };

	if (whole) {
		done.imm = msg->fs.imm;
		done.status |= msg->status;
	}
	/* a Send's Length counts what was placed in the descriptor's
	 * buffers; an RDMA Write with immediate data placed none */
	if (err == 0 && !(msg->status & VIP_STATUS_OP_REMOTE_RDMA_WRITE))
		done.len = msg->off;
	/* the descriptor's region may be gone since the fetch (COMP_PROT) */
	via_dp_complete(vi, VIA_WQ_RECV, &msg->wqe,
			via_desc_region_again(d, vi, VIA_WQ_RECV, &msg->wqe, &msg->desc_mr), done);
}

/* ---- held send-queue completions ------------------------------------------ */

bool
via_sq_room(struct via_vi *vi)
{
	const struct via_vi_sq *q = &vi->sq;

	/* sized when the VI connected, for its connection (dp_mem.c): a
	 * message is a frame at least, so as many held completions as frames
	 * in flight; every level holds some (zero copy, dp_zc.c) */
	return q->tail - q->head < q->size;
}

static struct via_sq_pending *
pend_at(struct via_vi_sq *q, uint32_t i)
{
	return &q->pend[i & (q->size - 1)];
}

struct via_sq_pending *
via_sq_hold(struct via_vi *vi, const struct via_dp_msg *msg, enum via_sq_wait wait,
	    struct via_dp_done done)
{
	struct via_sq_pending *p = pend_at(&vi->sq, vi->sq.tail++);

	memset(p, 0, sizeof(*p));
	p->wqe = msg->wqe;
	p->desc_mr = msg->desc_mr;
	p->wait = (uint8_t)wait;
	/* VIA_SQ_ACK: everything sent so far; no frames of its own until the
	 * caller says where they start */
	p->start_seq = p->end_seq = vi->rel.snd_nxt;
	p->len = done.len;
	p->imm = done.imm;
	p->status = done.status;
	return p;
}

bool
via_sq_held(const struct via_vi *vi)
{
	return vi->sq.head != vi->sq.tail;
}

static void
pend_complete(struct viad *d, struct via_vi *vi, struct via_sq_pending *p, uint32_t status)
{
	if (p->wait == VIA_SQ_READ)
		vi->sq.reads--;
	via_read_segs_put(vi->shard, p->segs);
	p->segs = NULL;
	/* without a descriptor it is only counted (unusable: POST_DESC said so) */
	via_dp_complete(vi, VIA_WQ_SEND, &p->wqe,
			p->no_desc ? NULL
				   : via_desc_region_again(d, vi, VIA_WQ_SEND, &p->wqe, &p->desc_mr),
			(struct via_dp_done){ .len = status & VIP_STATUS_ERROR_MASK ? 0 : p->len,
					      .imm = p->imm, .status = status });
}

void
via_comp_send(struct viad *d, struct via_vi *vi, struct via_dp_msg *msg)
{
	/* framed: its frames in flight, if any, hold it from now on */
	struct via_zc *zc = via_zc_framed(msg->zc);
	struct via_dp_done done = {
		.len = msg->total, .imm = msg->cs_imm,
		.status = msg->status | via_comp_status(msg->err),
	};
	enum via_sq_wait wait = VIA_SQ_READY;
	struct via_sq_pending *p;

	msg->zc = NULL;
	if (msg->err != 0) {
		/* what went out is not delivered: the buffer may go back */
		via_zc_bind(zc, vi, NULL);
		zc = NULL;
		done.len = 0;
		/* on a reliable level the error breaks the connection
		 * (the requester): no immediate data then */
		if (via_rel_level(vi) && vi->state == VIP_STATE_CONNECTED)
			done.imm = 0;
	} else if (vi->attr.reliability == VIP_SERVICE_RELIABLE_RECEPTION) {
		/* VIA §2.5.3: complete once the data is placed */
		wait = VIA_SQ_ACK;
	}
	/* a completion may not pass one held before it */
	if (wait == VIA_SQ_READY && zc == NULL && !via_sq_held(vi)) {
		via_dp_complete(vi, VIA_WQ_SEND, &msg->wqe,
				via_desc_region_again(d, vi, VIA_WQ_SEND, &msg->wqe, &msg->desc_mr),
				done);
		return;
	}
	p = via_sq_hold(vi, msg, wait, done);
	if (wait == VIA_SQ_ACK)
		p->start_seq = msg->first_seq;
	via_zc_bind(zc, vi, p);
}

void
via_sq_drain(struct viad *d, struct via_vi *vi)
{
	struct via_vi_sq *q = &vi->sq;

	while (q->head != q->tail) {
		struct via_sq_pending *p = pend_at(q, q->head);

		if (p->wait != VIA_SQ_READY || p->zc != NULL)
			break;
		q->head++;
		pend_complete(d, vi, p, p->status);
	}
}

void
via_sq_acked(struct viad *d, struct via_vi *vi, uint32_t ack)
{
	struct via_vi_sq *q = &vi->sq;
	uint32_t i;

	for (i = q->head; i != q->tail; i++) {
		struct via_sq_pending *p = pend_at(q, i);

		if (p->wait == VIA_SQ_ACK && (int32_t)(ack - p->end_seq) >= 0)
			p->wait = VIA_SQ_READY;
	}
	via_sq_drain(d, vi);
}

void
via_sq_flush(struct viad *d, struct via_vi *vi, int err)
{
	struct via_vi_sq *q = &vi->sq;
	bool first = true;

	/* VIA §2.5.3, Table 1: the first outstanding send carries the error,
	 * the others were not delivered; those only held for order did finish,
	 * and one that a NAK answered has its own error already (§10.2) */
	while (q->head != q->tail) {
		struct via_sq_pending *p = pend_at(q, q->head++);
		uint32_t op = p->status & VIP_STATUS_OP_MASK;

		/* the completion goes now, frames still in flight or not: the
		 * buffer is the client's again (design.md section 9, on what
		 * such frames may still deliver) */
		via_zc_orphan(p);
		if (p->wait == VIA_SQ_READY || (p->status & VIP_STATUS_ERROR_MASK)) {
			first &= p->wait == VIA_SQ_READY;
			pend_complete(d, vi, p, p->status);
			continue;
		}
		pend_complete(d, vi, p, op | via_comp_status(first ? err : -ECANCELED));
		first = false;
	}
}

struct via_sq_pending *
via_sq_read(struct via_vi *vi, uint32_t msg_id)
{
	struct via_vi_sq *q = &vi->sq;
	uint32_t i;

	for (i = q->head; i != q->tail; i++) {
		struct via_sq_pending *p = pend_at(q, i);

		if (p->wait == VIA_SQ_READ && p->msg_id == msg_id)
			return p;
	}
	return NULL;
}

struct via_sq_pending *
via_sq_of_seq(struct via_vi *vi, uint32_t seq)
{
	struct via_vi_sq *q = &vi->sq;
	uint32_t i;

	for (i = q->head; i != q->tail; i++) {
		struct via_sq_pending *p = pend_at(q, i);

		if (p->wait != VIA_SQ_READY && (int32_t)(seq - p->start_seq) >= 0 &&
		    (int32_t)(seq - p->end_seq) < 0)
			return p;
	}
	return NULL;
}

void
via_sq_reset(struct via_vi *vi)
{
	struct via_vi_sq *q = &vi->sq;

	for (; q->head != q->tail; q->head++) {
		struct via_sq_pending *p = pend_at(q, q->head);

		via_zc_orphan(p);
		via_read_segs_put(vi->shard, p->segs);
		p->segs = NULL;
	}
	q->head = q->tail = 0;
	q->reads = 0;
}
