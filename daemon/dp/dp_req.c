/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The requester (as rxe_req.c): a send-queue descriptor taken from the
 * ring (dp.c gives the VI its turn) is fetched and validated (dp_desc.c),
 * becomes the VI's message, is framed a quantum at a time (dp_frame.c) and
 * completes - at once, or held behind earlier completions or until the
 * peer answers (dp_comp.c). VIA §6.3, §9.6.1; §2.5.1: on Unreliable
 * Delivery completion means "sent", not "received".
 */
#include <string.h>

#include <vipl.h>

#include "dp.h"

/* Issue an RDMA Read (VIA §6.3, §10.2): its answer completes it. */
static uint32_t
read_issue(struct viad *d, struct via_vi *vi, const struct via_wqe *w,
	   const struct via_frame_spec *fs, const struct via_dp_seg *segs, uint16_t nb_segs,
	   uint32_t total)
{
	struct via_sq_pending *p;
	/* the shard's pool empty is a resource error: "data could not be
	 * transferred" (§10.2 bit 6), counted (dp_mem.c) */
	struct via_dp_seg *copy = via_read_segs_get(vi->shard);

	if (copy == NULL)
		return VIP_STATUS_TRANSPORT_ERROR;
	memcpy(copy, segs, nb_segs * sizeof(*copy));
	if (!via_frame_send(d, vi, fs, NULL, 0, 0, &(uint32_t){ 0 }, UINT32_MAX, NULL)) {
		via_read_segs_put(vi->shard, copy);
		return VIP_STATUS_TRANSPORT_ERROR;
	}
	p = via_sq_hold(vi, w, VIA_SQ_READ, total, 0, VIP_STATUS_OP_RDMA_READ);
	p->start_seq = p->end_seq - 1;      /* its request frame */
	p->msg_id = fs->msg_id;
	p->segs = copy;
	p->nb_segs = nb_segs;
	vi->sq.reads++;
	return 0;
}

/*
 * The send-queue descriptor @p w is done, with @p status (op bits
 * included): complete it, or hold its completion behind earlier ones, or
 * until @p zc's frames no longer point into its buffers (NULL: none do).
 */
static void
send_done(struct viad *d, struct via_vi *vi, const struct via_wqe *w, const struct via_mr *mr,
	  uint32_t len, uint32_t imm, uint32_t status, struct via_zc *zc)
{
	if (via_rel_level(vi) && vi->state == VIP_STATE_CONNECTED &&
	    (status & VIP_STATUS_ERROR_MASK)) {
		/* VIA §2.5.2, §2.5.3, Table 1: on a reliable level any error
		 * breaks the connection; this descriptor carries its own cause,
		 * behind the completions held before it */
		via_zc_bind(zc, vi, NULL);
		if (via_sq_held(vi))
			via_sq_hold(vi, w, VIA_SQ_READY, 0, 0, status);
		else
			via_dp_complete(d, vi, VIA_WQ_SEND, w, mr, 0, 0, status);
		via_rel_fail(d, vi, VIP_STATUS_TRANSPORT_ERROR,
			     status & VIP_STATUS_TRANSPORT_ERROR ? "out of frame buffers"
								 : "local descriptor error");
		return;
	}
	/* VIA §2.5.3: Reliable Reception completes once the data is placed;
	 * and a completion may not pass one held before it */
	if ((status & VIP_STATUS_ERROR_MASK) == 0 &&
	    vi->attr.reliability == VIP_SERVICE_RELIABLE_RECEPTION) {
		struct via_sq_pending *p = via_sq_hold(vi, w, VIA_SQ_ACK, len, imm, status);

		p->start_seq = vi->tx.first_seq;   /* the message framed last: this one */
		via_zc_bind(zc, vi, p);
		return;
	}
	if (status & VIP_STATUS_ERROR_MASK) {
		/* what went out is not delivered: the buffer may go back */
		via_zc_bind(zc, vi, NULL);
		zc = NULL;
		len = 0;
	}
	if (via_sq_held(vi) || zc != NULL)
		via_zc_bind(zc, vi, via_sq_hold(vi, w, VIA_SQ_READY, len, imm, status));
	else
		via_dp_complete(d, vi, VIA_WQ_SEND, w, mr, len, imm, status);
}

uint32_t
via_req_start(struct viad *d, struct via_vi *vi, const struct via_wqe *w)
{
	struct via_vi_tx *tx = &vi->tx;
	VIP_ADDRESS_SEGMENT raddr;
	VIP_CONTROL_SEGMENT cs;
	const struct via_mr *mr;
	uint32_t status, op;
	uint64_t total;

	/* a VI never connected has no lists (dp_mem.c): its sends are only
	 * fetched to be flushed (below), into its shard's list for that */
	mr = via_desc_fetch(d, vi, VIA_WQ_SEND, w, &cs, &raddr,
			    tx->segs != NULL ? tx->segs : vi->shard->flush_segs, &tx->nb_segs,
			    &total, &status);
	if (mr == NULL) {
		/* counted in order, like every completion of the queue */
		if (via_sq_held(vi))
			via_sq_hold(vi, w, VIA_SQ_READY, 0, 0, 0)->no_desc = true;
		else
			via_dp_complete(d, vi, VIA_WQ_SEND, w, NULL, 0, 0, 0);
		/* an error, and on a reliable level every error breaks (§2.5) */
		if (via_rel_level(vi) && vi->state == VIP_STATE_CONNECTED)
			via_rel_fail(d, vi, VIP_STATUS_TRANSPORT_ERROR, "unusable descriptor");
		return 0;
	}
	op = cs.Control & VIP_CONTROL_OP_MASK;
	/* VIA §10.2 bit 3: the sum must match Length and fit the VI's MTU */
	if (status == 0 && (total != cs.Length || total > vi->attr.max_transfer))
		status = VIP_STATUS_LENGTH_ERROR;
	/* VIA §5.1, §5.2, §5.4: the send queue of an unconnected VI completes in error */
	if (status == 0 && vi->state != VIP_STATE_CONNECTED)
		status = VIP_STATUS_DESC_FLUSHED_ERROR;
	status |= via_desc_op_status(op);
	if (status & VIP_STATUS_ERROR_MASK) {
		send_done(d, vi, w, mr, 0, cs.ImmediateData, status, NULL);
		return 0;
	}
	tx->wqe = *w;
	tx->status = status;
	tx->cs_imm = cs.ImmediateData;
	tx->total = (uint32_t)total;
	tx->off = 0;
	tx->msg_id = ++vi->tx_msg_id;
	tx->first_seq = vi->rel.snd_nxt;
	tx->opcode = op == VIP_CONTROL_OP_SENDRECV ? VIA_OP_SEND
		     : op == VIP_CONTROL_OP_RDMAWRITE ? VIA_OP_RDMA_WRITE : VIA_OP_RDMA_READ_REQ;
	tx->flags = 0;
	tx->imm = 0;
	/* immediate data goes with sends and writes, not reads (§10.2) */
	if ((cs.Control & VIP_CONTROL_IMMEDIATE) && op != VIP_CONTROL_OP_RDMAREAD) {
		tx->flags = VIA_WF_IMM;
		tx->imm = cs.ImmediateData;
	}
	tx->rdma_va = raddr.Data.AddressBits;
	tx->rdma_handle = raddr.Handle;
	if (op == VIP_CONTROL_OP_RDMAREAD) {
		struct via_wire_rdma ext = {
			.va = rte_cpu_to_be_64(tx->rdma_va),
			.handle = rte_cpu_to_be_32(tx->rdma_handle),
		};
		struct via_frame_spec fs = {
			.opcode = tx->opcode, .msg_id = tx->msg_id, .msg_len = tx->total,
			.ext = &ext,
		};

		status |= read_issue(d, vi, w, &fs, tx->segs, tx->nb_segs, tx->total);
		if (status & VIP_STATUS_ERROR_MASK)
			send_done(d, vi, w, mr, 0, cs.ImmediateData, status, NULL);
		/* the answer is as long as a write: charged here */
		return tx->total;
	}
	tx->active = true;
	tx->stale = false;
	return 0;
}

/* The regions of the message's segments again: they may be gone (§3.2.1). */
static bool
send_segs_recheck(struct viad *d, struct via_vi *vi)
{
	struct via_vi_tx *tx = &vi->tx;
	uint16_t i;
	int err;

	for (i = 0; i < tx->nb_segs; i++) {
		struct via_dp_seg *seg = &tx->segs[i];

		if (seg->len == 0)
			continue;
		seg->mr = via_mr_check(d, vi->owner, seg->handle, seg->va, seg->len,
				       vi->attr.ptag, VIA_MR_LOCAL_READ, &err);
		if (seg->mr == NULL)
			return false;
	}
	tx->stale = false;
	return true;
}

uint32_t
via_req_more(struct viad *d, struct via_vi *vi, uint32_t budget)
{
	struct via_vi_tx *tx = &vi->tx;
	struct via_wire_rdma ext = {
		.va = rte_cpu_to_be_64(tx->rdma_va), .handle = rte_cpu_to_be_32(tx->rdma_handle),
	};
	struct via_frame_spec fs = {
		.opcode = tx->opcode, .flags = tx->flags, .imm = tx->imm, .msg_id = tx->msg_id,
		.msg_len = tx->total, .ext = tx->opcode == VIA_OP_SEND ? NULL : &ext,
		.data = tx->inline_data,
	};
	uint32_t status = tx->status, from = tx->off;
	struct via_zc *zc;

	/* broken between two turns (a NAK, a RESET): the rest is flushed */
	if (vi->state != VIP_STATE_CONNECTED)
		status |= VIP_STATUS_DESC_FLUSHED_ERROR;
	else if ((tx->stale && !send_segs_recheck(d, vi)) ||
		 !via_frame_send(d, vi, &fs, tx->segs, tx->nb_segs, tx->total, &tx->off, budget,
			      &tx->zc))
		status |= via_rel_level(vi) ? VIP_STATUS_TRANSPORT_ERROR
					    : VIP_STATUS_PROTECTION_ERROR;
	else if (tx->off < tx->total) {
		tx->stale = true;    /* the lock may be dropped before the next turn */
		return tx->off - from;
	}
	tx->active = false;
	/* taken off the VI first: send_done may break the connection, whose
	 * reset must not drop the framing reference a second time */
	zc = via_zc_framed(tx->zc);
	tx->zc = NULL;
	send_done(d, vi, &tx->wqe,
		  via_desc_region(d, vi, VIA_WQ_SEND, &tx->wqe, VIP_ERROR_COMP_PROT), tx->total,
		  tx->cs_imm, status, zc);
	return tx->off - from;
}

void
via_req_cut(struct via_vi *vi)
{
	struct via_vi_tx *tx = &vi->tx;
	struct via_sq_pending *p;

	if (!tx->active)
		return;
	tx->active = false;
	p = via_sq_hold(vi, &tx->wqe,
			vi->attr.reliability == VIP_SERVICE_RELIABLE_RECEPTION ? VIA_SQ_ACK
									     : VIA_SQ_READY,
			tx->total, tx->cs_imm, tx->status);
	p->start_seq = tx->first_seq;
	via_zc_bind(via_zc_framed(tx->zc), vi, p);
	tx->zc = NULL;
}

void
via_req_flush(struct viad *d, struct via_vi *vi)
{
	struct via_vi_tx *tx = &vi->tx;

	if (!tx->active)
		return;
	tx->active = false;
	via_dp_complete(d, vi, VIA_WQ_SEND, &tx->wqe,
			via_desc_region(d, vi, VIA_WQ_SEND, &tx->wqe, VIP_ERROR_POST_DESC), 0, 0,
			VIP_STATUS_DESC_FLUSHED_ERROR | tx->status);
}
