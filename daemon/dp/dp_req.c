/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The requester (as rxe_req.c): a send-queue descriptor taken from the
 * ring (dp.c gives the VI its turn) is fetched and validated (dp_desc.c),
 * becomes the VI's message, is framed a quantum at a time (dp_frame.c) and
 * completes - at once, or held behind earlier completions or until the
 * peer answers (dp_comp.c). VIA §6.3, §9.6.1; §2.5.1: on Unreliable
 * Delivery completion means "sent", not "received".
 */
#include <errno.h>
#include <string.h>

#include <vipl.h>

#include "dp.h"

#define REQ_TURN_DESCS 16   /* descriptors per VI per turn: fairness */

/* Issue the RDMA Read of the VI's message (VIA §6.3, §10.2): its answer
 * completes it. @return 0, -ENOBUFS */
static int
read_issue(struct viad *d, struct via_vi *vi)
{
	const struct via_dp_msg *msg = &vi->tx.msg;
	/* its request: one frame without data, msg_len the bytes asked for */
	struct via_dp_msg req = { .fs = msg->fs };
	struct via_sq_pending *p;
	uint16_t nb_segs = msg->nb_segs;
	/* the shard's pool empty is a resource error: "data could not be
	 * transferred" (§10.2 bit 6), counted (dp_mem.c) */
	struct via_dp_seg *copy = via_read_segs_get(vi->shard);

	if (copy == NULL)
		return -ENOBUFS;
	memcpy(copy, msg->segs, nb_segs * sizeof(*copy));
	if (via_frame_send(d, vi, &req, UINT32_MAX) != 0) {
		via_read_segs_put(vi->shard, copy);
		return -ENOBUFS;
	}
	p = via_sq_hold(vi, msg, VIA_SQ_READ,
			(struct via_dp_done){ .len = msg->total, .status = msg->status });
	p->start_seq = p->end_seq - 1;      /* its request frame */
	p->msg_id = msg->fs.msg_id;
	p->segs = copy;
	p->nb_segs = nb_segs;
	vi->sq.reads++;
	return 0;
}

/*
 * The VI's message is done (msg.err: how): to the completer; on a reliable
 * level an error breaks the connection (VIA §2.5.2, §2.5.3, Table 1), the
 * message carrying its own cause behind the completions held before it.
 */
static void
send_done(struct viad *d, struct via_vi *vi)
{
	const int err = vi->tx.msg.err;
	const bool breaks = err != 0 && via_rel_level(vi) && vi->state == VIP_STATE_CONNECTED;

	via_comp_send(d, vi, &vi->tx.msg);
	if (breaks)
		via_rel_fail(d, vi, err == -ENOBUFS ? "out of frame buffers" : "local descriptor error");
}

/* VIA §10.2: the frames of a descriptor of control @p control (op @p op). */
static void
msg_frames(struct via_dp_msg *msg, uint16_t control, uint32_t op, uint32_t msg_id)
{
	struct via_frame_spec *fs = &msg->fs;

	fs->opcode = op == VIP_CONTROL_OP_SENDRECV ? VIA_OP_SEND
		     : op == VIP_CONTROL_OP_RDMAWRITE ? VIA_OP_RDMA_WRITE : VIA_OP_RDMA_READ_REQ;
	fs->msg_id = msg_id;
	fs->msg_len = msg->total;
	fs->flags = 0;
	fs->imm = 0;
	/* immediate data goes with sends and writes, not reads (§10.2) */
	if ((control & VIP_CONTROL_IMMEDIATE) && op != VIP_CONTROL_OP_RDMAREAD) {
		fs->flags = VIA_WF_IMM;
		fs->imm = msg->cs_imm;
	}
}

/*
 * Take the next send-queue descriptor: validate it, then make it the VI's
 * message to frame (vi->tx), or finish it at once (an error, an RDMA Read
 * request). @return the bytes it put on the wire
 */
static uint32_t
req_start(struct viad *d, struct via_vi *vi)
{
	struct via_vi_tx *tx = &vi->tx;
	struct via_dp_msg *msg = &tx->msg;
	VIP_CONTROL_SEGMENT cs;
	uint32_t op;

	msg->total = 0;
	msg->cs_imm = 0;
	msg->status = VIP_STATUS_OP_SEND;
	/* a VI never connected has no lists (dp_mem.c): its sends are only
	 * fetched to be flushed (below), into its shard's list for that */
	msg->segs = tx->segs != NULL ? tx->segs : vi->shard->flush_segs;
	if (via_desc_next(d, vi, VIA_WQ_SEND, msg, &cs) == NULL) {
		/* counted in order, like every completion of the queue */
		if (via_sq_held(vi))
			via_sq_hold(vi, msg, VIA_SQ_READY, (struct via_dp_done){ 0 })->no_desc =
				true;
		else
			via_dp_complete(vi, VIA_WQ_SEND, &msg->wqe, NULL, (struct via_dp_done){ 0 });
		/* an error, and on a reliable level every error breaks (§2.5) */
		if (via_rel_level(vi) && vi->state == VIP_STATE_CONNECTED)
			via_rel_fail(d, vi, "unusable descriptor");
		return 0;
	}
	op = cs.Control & VIP_CONTROL_OP_MASK;
	msg->cs_imm = cs.ImmediateData;
	/* VIA §10.2 bit 3: the sum must match Length and fit the VI's MTU */
	if (msg->err == 0 && (msg->total != cs.Length || msg->total > vi->attr.max_transfer))
		msg->err = -EMSGSIZE;
	/* VIA §5.1, §5.2, §5.4: the send queue of an unconnected VI completes in error */
	if (msg->err == 0 && vi->state != VIP_STATE_CONNECTED)
		msg->err = -ECANCELED;
	if (msg->err != 0) {
		send_done(d, vi);
		return 0;
	}
	msg->off = 0;
	msg->first_seq = vi->rel.snd_nxt;
	msg->zero_copy = true;
	msg_frames(msg, cs.Control, op, ++vi->tx_msg_id);
	if (op == VIP_CONTROL_OP_RDMAREAD) {
		msg->err = read_issue(d, vi);
		if (msg->err != 0)
			send_done(d, vi);
		/* the answer is as long as a write: charged here */
		return msg->total;
	}
	tx->active = true;
	tx->stale = false;
	return 0;
}

/* The regions of the message's segments again, when the lock was dropped
 * since they were found and the table changed meanwhile: they may be gone
 * (§3.2.1). @return 0, -EACCES */
static int
send_segs_recheck(struct viad *d, struct via_vi *vi)
{
	struct via_dp_msg *msg = &vi->tx.msg;
	uint64_t epoch = via_mr_epoch(d);
	uint16_t i;
	int err;

	vi->tx.stale = false;
	if (msg->segs_epoch == epoch)
		return 0;
	for (i = 0; i < msg->nb_segs; i++) {
		struct via_dp_seg *seg = &msg->segs[i];

		if (seg->len == 0)
			continue;
		seg->mr = via_mr_check(d, vi->owner, seg->handle, seg->va, seg->len,
				       vi->attr.ptag, VIA_MR_LOCAL_READ, &err);
		if (seg->mr == NULL)
			return -EACCES;
		epoch = RTE_MIN(epoch, via_mr_epoch_of(d, seg->handle));
	}
	msg->segs_epoch = epoch;
	return 0;
}

/* Frame up to @p budget more bytes of the VI's message (at least one
 * frame); complete it after its last. @return the bytes framed */
static uint32_t
req_more(struct viad *d, struct via_vi *vi, uint32_t budget)
{
	struct via_vi_tx *tx = &vi->tx;
	struct via_dp_msg *msg = &tx->msg;
	const uint32_t from = msg->off;

	/* broken between two turns (a NAK, a RESET): the rest is flushed */
	if (vi->state != VIP_STATE_CONNECTED)
		msg->err = -ECANCELED;
	else if ((tx->stale && send_segs_recheck(d, vi) != 0) ||
		 via_frame_send(d, vi, msg, budget) != 0)
		/* a reliable level breaks; Unreliable Delivery reports the
		 * descriptor (its regions, its memory) */
		msg->err = via_rel_level(vi) ? -ENOBUFS : -EACCES;
	else if (msg->off < msg->total) {
		tx->stale = true;    /* the lock may be dropped before the next turn */
		return msg->off - from;
	}
	tx->active = false;
	send_done(d, vi);
	return msg->off - from;
}

unsigned
via_req_turn(struct viad *d, struct via_vi *vi)
{
	struct via_ring *r = &vi->wq[VIA_WQ_SEND];
	unsigned i, work = 0;

	/* the peer's RDMA Reads first: the oldest work of the send side */
	if (vi->state == VIP_STATE_CONNECTED && via_rel_level(vi))
		work += via_resp_read_answers(d, vi, (uint32_t)RTE_MAX(vi->tx_deficit, 1));
	for (i = 0; i < REQ_TURN_DESCS && vi->tx_deficit > 0; i++) {
		if (!vi->tx.active) {
			/* the ring may have been flushed meanwhile (a broken connection) */
			if (via_ring_avail(r) == 0)
				break;
			if (vi->state == VIP_STATE_CONNECTED &&
			    (vi->sq.reads == VIA_MAX_READS || !via_frame_room(vi, true) ||
			     (vi->sq.reads > 0 && via_desc_fenced(d, vi))))
				break;
			vi->tx_deficit -= (int64_t)req_start(d, vi) + VIA_DP_DESC_COST;
		} else if (vi->state == VIP_STATE_CONNECTED && !via_frame_room(vi, false)) {
			break;
		}
		if (vi->tx.active)
			vi->tx_deficit -= req_more(d, vi, (uint32_t)RTE_MAX(vi->tx_deficit, 1));
		work++;
	}
	return work;
}

void
via_req_cut(struct via_vi *vi)
{
	struct via_vi_tx *tx = &vi->tx;

	if (!tx->active)
		return;
	tx->active = false;
	/* framed whole as far as the completer can tell */
	via_comp_send(vi->owner->nic->d, vi, &tx->msg);
}

void
via_req_flush(struct viad *d, struct via_vi *vi)
{
	struct via_vi_tx *tx = &vi->tx;

	if (!tx->active)
		return;
	tx->active = false;
	via_dp_complete(vi, VIA_WQ_SEND, &tx->msg.wqe,
			via_desc_region(d, vi, VIA_WQ_SEND, &tx->msg.wqe, VIP_ERROR_POST_DESC),
			(struct via_dp_done){
				.status = via_comp_status(-ECANCELED) | tx->msg.status });
}
