/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The responder (as rxe_resp.c): data frames of a connection become data
 * placed in receive descriptors or RDMA Write targets, and receive
 * completions; RDMA Read requests of the peer are queued and answered from
 * the VI's turn; answers to our own Reads fill their scatter lists.
 *
 * Receive (VIA §6.4.1): the first frame of a message takes the head receive
 * descriptor; frames are placed at their offset straight into its scatter
 * list; the last one completes it. On Unreliable Delivery a lost or corrupt
 * frame loses its message: the descriptor waits for the next one, so
 * corrupt data never completes as success, and message ids make a
 * duplicate message impossible to deliver twice.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include <rte_ether.h>

#include <vipl.h>

#include "dp.h"

static void park_replay(struct viad *d, struct via_vi *vi);

/* VIA §4.2: frame @p h names no connection of ours: RESET to its sender at @p mac. */
static void
send_reset(struct via_nic *nic, const uint8_t mac[6], const struct via_wire_hdr *h)
{
	struct via_wire_hdr reset;

	via_wire_hdr_init(&reset, VIA_OP_RESET, 0, via_wire_src_vi(h), via_wire_dst_vi(h),
			  via_wire_conn_id(h));
	via_dp_send_frame(nic, mac, &reset, NULL, 0);
}

unsigned
via_resp_read_answers(struct viad *d, struct via_vi *vi, uint32_t budget)
{
	struct via_vi_reads *r = &vi->answers;
	uint32_t framed = 0;
	unsigned n = 0;

	while (r->head != r->tail && framed < budget && via_frame_room(vi, false)) {
		struct via_rdma_resp *a = &r->q[r->head % VIA_MAX_READS];
		struct via_dp_msg *msg = &a->msg;
		const uint32_t from = msg->off;
		int err;

		/* checked again each turn: the region may have gone since the
		 * request, or since the last turn */
		a->src.mr = via_mr_check(d, vi->owner, a->src.handle, a->src.va, a->src.len,
					 vi->attr.ptag, VIA_MR_REMOTE_READ, &err);
		/* zero copy only in memory: frames crossing a port carry a CRC
		 * taken now, and a retransmission reads the pages again, which
		 * the responder may have changed since (no descriptor of the
		 * responder waits for the answer, so nothing holds them still).
		 * And never on Reliable Reception: a write the requester posts
		 * after the Read must not change what the Read returns
		 * (§6.3.1.1), and an answer that still points into the pages
		 * when the write lands there would */
		msg->segs = &a->src;
		msg->zero_copy = via_net_to_self(vi->owner->nic, vi->conn.remote_mac) &&
				 vi->attr.reliability != VIP_SERVICE_RELIABLE_RECEPTION;
		if (a->src.len > 0 && a->src.mr == NULL) {
			struct via_wire_hdr nak = via_net_peer_hdr(vi, VIA_OP_NAK, 0);

			/* VIA §3.2.1: deregistered since the request; a protection
			 * error at the source, which the initiator must learn */
			via_zc_drop(&msg->zc);
			r->head++;
			via_wire_set_seq(&nak, a->seq);
			via_wire_set_imm(&nak, VIP_STATUS_RDMA_PROT_ERROR | VIP_STATUS_OP_RDMA_READ);
			via_net_send_peer(vi, &nak);
			via_rel_fail(d, vi, "an RDMA Read source vanished");
			break;
		}
		if (via_frame_send(d, vi, msg, budget - framed) != 0) {
			via_zc_drop(&msg->zc);
			r->head++;
			via_rel_fail(d, vi, "an RDMA Read source vanished");
			break;
		}
		framed += msg->off - from;
		if (msg->off < msg->total)
			break;               /* the rest in the next turn */
		/* no completion waits for an answer's frames: the tracker only
		 * keeps the source's allocation mapped */
		via_zc_drop(&msg->zc);
		r->head++;
		vi->tx_deficit -= VIA_DP_DESC_COST;
		n++;
	}
	/* this VI's bandwidth too (dp.c, vi_send's round robin) */
	vi->tx_deficit -= framed;
	if (r->head == r->tail && via_rel_parked(vi))
		park_replay(d, vi);
	return n;
}

/*
 * Take the head receive descriptor into rx->msg. Invalid ones complete in
 * error on the way; on a reliable level the first of them ends the search,
 * since the connection breaks on it (VIA §2.5.2). @return 0, -ENOENT when
 * none is posted, or the invalid descriptor's error.
 */
static int
recv_take(struct viad *d, struct via_vi *vi)
{
	struct via_vi_rx *rx = &vi->rx;
	struct via_ring *r = &vi->wq[VIA_WQ_RECV];

	/* rx->segs: made when the VI connected (dp_mem.c); frames reach only
	 * a VI of a connection */
	rx->msg.segs = rx->segs;
	while (via_ring_avail(r) > 0) {
		VIP_CONTROL_SEGMENT cs;
		const struct via_mr *mr;

		mr = via_desc_next(d, vi, VIA_WQ_RECV, &rx->msg, &cs);
		if (mr == NULL || rx->msg.err != 0) {
			/* an unusable descriptor (mr NULL) is only counted */
			const int err = mr != NULL ? rx->msg.err : -EMSGSIZE;

			via_dp_complete(vi, VIA_WQ_RECV, &rx->msg.wqe, mr,
					(struct via_dp_done){
						.status = via_comp_status(err) |
							  VIP_STATUS_OP_RECEIVE });
			if (via_rel_level(vi))
				return err;
			continue;
		}
		return 0;
	}
	return -ENOENT;
}

/* The receive descriptor of the message being placed completes
 * (via_comp_recv); the VI waits for the next message. */
static void
recv_complete(struct viad *d, struct via_vi *vi, int err, bool whole)
{
	via_comp_recv(d, vi, err, whole);
	vi->rx.state = VIA_RX_IDLE;
}

/* Message @p msg counts as delivered: a copy of it takes no descriptor
 * (§2.5.1: "at most one Receive Descriptor to be consumed"). */
static void
rx_delivered(struct via_vi_rx *rx, uint32_t msg)
{
	if (!rx->delivered_any || (int32_t)(msg - rx->last_msg_id) > 0)
		rx->last_msg_id = msg;
	rx->delivered_any = true;
}

/*
 * The message being placed ends before its last byte: a frame of it was lost
 * or came out of order (Unreliable Delivery, §2.5.1), or its RDMA Write
 * target refused the rest. The receive descriptor it took completes with
 * @p status - §10.2 bit 4, Partial Packet Error: "an aborted or truncated
 * packet was received" - and its immediate data, which every frame carries.
 * The rest of its frames are dropped, and it counts as delivered.
 */
static void
rx_cut(struct viad *d, struct via_vi *vi, int err)
{
	struct via_vi_rx *rx = &vi->rx;

	if (rx->state == VIA_RX_MESSAGE)
		recv_complete(d, vi, err, true);
	rx_delivered(rx, rx->msg.fs.msg_id);
	rx->state = VIA_RX_IDLE;
}

/*
 * Where the peer's RDMA may go (VIA §3.2.2, §6.3.2): the handle names a
 * region of this VI's process, the whole range lies in it, the tags match,
 * and both the VI and the region allow the operation - the most protective
 * wins. NULL, and in *@p why the reason, if not.
 */
static struct via_mr *
rdma_target(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h, unsigned access,
	    const char **why)
{
	bool vi_allows = access == VIA_MR_REMOTE_WRITE ? vi->attr.rdma_write : vi->attr.rdma_read;
	struct via_mr *mr;
	int err;

	mr = via_mr_check(d, vi->owner, via_wire_rdma_handle(h), via_wire_rdma_va(h),
			  via_wire_msg_len(h), vi->attr.ptag, access, &err);
	if (vi_allows && mr != NULL)
		return mr;
	*why = !vi_allows ? "not enabled on the VI"
	       : err == -ENOENT ? "no such region"
	       : err == -ERANGE ? "outside the region"
				 : "tag or region rights";
	return NULL;
}

/*
 * The peer's RDMA Write may not go where it points (§6.3.2), or its target
 * vanished while it was being placed: nothing more is written. With
 * immediate data the write consumes a receive descriptor, which completes
 * with the protection error: §9.9.1 reports it "in the associated
 * Descriptor, and not via the asynchronous error mechanism". A reliable
 * level then refuses the frame with a NAK and breaks (§2.5.2, §2.5.3). An
 * Unreliable VI tells the initiator nothing: its asynchronous errors are
 * only the catastrophic ones (§7.1), and §10.2 bit 7 is not valid there.
 */
static void
write_refused(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h, const char *why,
	      struct via_poll_stats *st)
{
	struct via_vi_rx *rx = &vi->rx;
	const uint32_t msg = via_wire_msg_id(h), off = via_wire_offset(h);
	const bool imm = via_wire_flags(h) & VIA_WF_IMM;
	bool in_desc = false;     /* a receive descriptor carries the error */

	st->frames_dropped++;
	if (off == 0)
		VLOG_INFO("VI %u: RDMA Write refused: %s", vi->id, why);
	if (rx->state == VIA_RX_IDLE && imm && off == 0 && recv_take(d, vi) == 0) {
		/* the write's immediate data and op go with its error */
		rx->msg.fs.imm = via_wire_imm(h);
		rx->msg.status = VIP_STATUS_OP_REMOTE_RDMA_WRITE | VIP_STATUS_IMMEDIATE;
		recv_complete(d, vi, -EACCES, true);
		rx_delivered(rx, msg);
		in_desc = true;
	} else if (rx->state != VIA_RX_IDLE && rx->msg.fs.msg_id == msg) {
		/* its descriptor (if it took one) carries the error */
		in_desc = rx->state == VIA_RX_MESSAGE;
		rx_cut(d, vi, -EACCES);
	}
	rx->state = VIA_RX_IDLE;
	/* the NAK's IMMEDIATE bit: reported at this end already */
	if (via_rel_level(vi))
		via_rel_nak(d, vi, h, VIP_STATUS_RDMA_PROT_ERROR | VIP_STATUS_OP_RDMA_WRITE |
			    (in_desc ? VIP_STATUS_IMMEDIATE : 0), why);
}

void
via_resp_answer_init(struct via_rdma_resp *a, uint32_t msg_id)
{
	a->msg = (struct via_dp_msg){
		.fs = { .opcode = VIA_OP_RDMA_READ_RESP, .msg_id = msg_id, .msg_len = a->src.len },
		.segs = &a->src, .nb_segs = 1, .total = a->src.len,
	};
}

/* An RDMA Read of the peer: answered from the send side, in order. */
static void
read_request(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h)
{
	struct via_vi_reads *r = &vi->answers;
	struct via_rdma_resp *a;
	const char *why;

	if (rdma_target(d, vi, h, VIA_MR_REMOTE_READ, &why) == NULL) {
		VLOG_INFO("VI %u: RDMA Read refused: %s", vi->id, why);
		via_rel_nak(d, vi, h, VIP_STATUS_RDMA_PROT_ERROR | VIP_STATUS_OP_RDMA_READ, why);
		return;
	}
	if (r->tail - r->head == VIA_MAX_READS) {
		/* the peer outran the reads it may have outstanding */
		via_rel_nak(d, vi, h, VIP_STATUS_FORMAT_ERROR | VIP_STATUS_OP_RDMA_READ,
			    "too many RDMA Reads outstanding");
		return;
	}
	a = &r->q[r->tail++ % VIA_MAX_READS];
	via_dp_ring_again(vi);      /* answered from the send side */
	*a = (struct via_rdma_resp){
		.src = { .va = via_wire_rdma_va(h), .handle = via_wire_rdma_handle(h),
			 .len = via_wire_msg_len(h) },
		.seq = via_wire_seq(h),
	};
	via_resp_answer_init(a, via_wire_msg_id(h));
}

/* A frame of the answer to one of our RDMA Reads: into its scatter list. */
static void
read_answer(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h, const uint8_t *data,
	    uint32_t len)
{
	struct via_sq_pending *p = via_sq_read(vi, via_wire_msg_id(h));

	if (p == NULL)
		return;
	if (len > 0 && (p->status & VIP_STATUS_ERROR_MASK) == 0 &&
	    via_segs_copy(vi,
			  &(struct via_dp_msg){ .segs = p->segs, .nb_segs = p->nb_segs,
						.off = via_wire_offset(h) },
			  &(struct iovec){ (uint8_t *)data, len }, 1,
			  VIA_COPY_TO_SEGS | VIA_COPY_RECHECK) != 0)
		p->status |= via_comp_status(-EACCES);  /* local scatter list gone */
	p->received += len;
	if (p->received >= via_wire_msg_len(h)) {
		vi->sq.reads--;
		p->wait = VIA_SQ_READY;
		via_sq_drain(d, vi);
	}
}

/* A frame's message data: behind its headers, or (zero copy) in its second segment. */
static const uint8_t *
frame_data(const struct rte_mbuf *m, const struct via_wire_hdr *h)
{
	return m->next != NULL ? rte_pktmbuf_mtod(m->next, const uint8_t *)
			       : (const uint8_t *)(h + 1) + via_wire_ops[h->opcode].ext_len;
}

/*
 * The first frame of message @p h: it becomes the message being placed and,
 * if it consumes one, takes a receive descriptor. @return 0, or the reason
 * the message goes no further, reported here: -ENOENT no descriptor, the
 * head descriptor's error, -EMSGSIZE too small a one.
 */
static int
rx_begin(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h, bool consumes,
	 struct via_poll_stats *st)
{
	struct via_vi_rx *rx = &vi->rx;
	const bool write = h->opcode == VIA_OP_RDMA_WRITE, imm = via_wire_flags(h) & VIA_WF_IMM;
	int err;

	rx->msg.fs.msg_id = via_wire_msg_id(h);
	rx->msg.off = 0;
	rx->msg.fs.imm = imm ? via_wire_imm(h) : 0;
	rx->msg.status = (imm ? VIP_STATUS_IMMEDIATE : 0) | (write ? VIP_STATUS_OP_REMOTE_RDMA_WRITE : 0);
	if (!consumes) {
		rx->state = VIA_RX_WRITE;
		return 0;
	}
	err = recv_take(d, vi);
	if (err == -ENOENT) {
		/* the message is lost (§2.5.1). §2.5.2: on a reliable level
		 * that is an error, §9.9.1 Receive Queue Empty, and breaks the
		 * connection; an Unreliable VI raises nothing (§7.1) */
		st->frames_dropped++;
		if (via_rel_level(vi)) {
			via_session_async_error(vi->owner, VIP_ERROR_RECVQ_EMPTY, vi->cookie,
						VIP_RESOURCE_VI, VIP_STATUS_OP_RECEIVE, 0);
			via_rel_nak(d, vi, h, VIP_STATUS_REMOTE_DESC_ERROR, "no receive descriptor");
		}
		return err;
	}
	if (err != 0) {
		via_rel_nak(d, vi, h, VIP_STATUS_REMOTE_DESC_ERROR, "receive descriptor error");
		return err;
	}
	rx->state = VIA_RX_MESSAGE;
	if (!write && via_wire_msg_len(h) > rx->msg.total) {
		/* VIA §6.4.1: too small a descriptor, Length 0; the message
		 * counts as delivered, so a duplicate of it cannot take another
		 * descriptor */
		recv_complete(d, vi, -EMSGSIZE, false);
		rx_delivered(rx, rx->msg.fs.msg_id);
		if (via_rel_level(vi))
			via_rel_nak(d, vi, h, VIP_STATUS_REMOTE_DESC_ERROR,
				    "receive descriptor too small");
		return -EMSGSIZE;
	}
	return 0;
}

/*
 * Frame @p h of the message being placed, at the offset expected (or the
 * first frame of a message): placed straight into the receive
 * descriptor's scatter list, or into an RDMA Write's target region (VIA
 * §2.3.2, §6.3.2); the last one completes the descriptor (§6.4.1). A
 * later frame looks the segments' regions up again if the table changed
 * since they were found (the lock may have been dropped since the
 * descriptor was taken); the first was taken here, just checked.
 */
static void
rx_place(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h, const uint8_t *data,
	 struct via_poll_stats *st)
{
	struct via_vi_rx *rx = &vi->rx;
	const uint32_t msg = via_wire_msg_id(h), off = via_wire_offset(h);
	const uint32_t total = via_wire_msg_len(h), len = via_wire_data_len(h);
	const bool write = h->opcode == VIA_OP_RDMA_WRITE;
	/* a Send always consumes a receive descriptor, an RDMA Write only
	 * with immediate data (VIA §10.2 bit 2) */
	const bool consumes = !write || (via_wire_flags(h) & VIA_WF_IMM);
	struct via_mr *target = NULL;
	const char *why;

	if (write && (target = rdma_target(d, vi, h, VIA_MR_REMOTE_WRITE, &why)) == NULL) {
		write_refused(d, vi, h, why, st);
		return;
	}
	if (off == 0 && rx_begin(d, vi, h, consumes, st) != 0)
		return;
	if (write) {
		if (len > 0 && via_mem_write(vi->owner, target, via_wire_rdma_va(h) + off, data,
					     len) != 0) {
			write_refused(d, vi, h, "the RDMA Write target vanished", st);
			return;
		}
	} else if (len > 0 &&
		   /* frames land in order: this one at rx->msg.off */
		   via_segs_copy(vi, &rx->msg, &(struct iovec){ (uint8_t *)data, len }, 1,
				 VIA_COPY_TO_SEGS | (off != 0 ? VIA_COPY_RECHECK : 0)) != 0) {
		recv_complete(d, vi, -EACCES, false);
		rx_delivered(rx, msg);
		if (via_rel_level(vi))
			via_rel_nak(d, vi, h, VIP_STATUS_REMOTE_DESC_ERROR,
				    "receive buffer protection error");
		return;
	}
	rx->msg.off += len;
	if (rx->msg.off == total) {
		/* a Send's Length counts what was placed in the descriptor's
		 * buffers; an RDMA Write with immediate data placed none */
		if (consumes)
			recv_complete(d, vi, 0, true);
		rx->state = VIA_RX_IDLE;
		rx_delivered(rx, msg);
	}
}

/*
 * VIA_RX_IDLE, between messages (VIA §6.4.1): only the first frame of a
 * message is taken; a later one means its first was lost or overtaken
 * (only Unreliable Delivery loses frames, §2.5.1) and goes.
 */
static void
rx_idle(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h, const uint8_t *data,
	struct via_poll_stats *st)
{
	if (via_wire_offset(h) != 0) {
		st->frames_dropped++;
		return;
	}
	rx_place(d, vi, h, data, st);
}

/*
 * VIA_RX_MESSAGE and VIA_RX_WRITE, a message being placed (VIA §6.4.1,
 * §6.3.2): its next frame is placed and a copy of a placed one dropped; a
 * gap cuts it short (§2.5.1; §10.2 bit 4, Partial Packet Error), and so
 * does the first frame of the next message, which then begins.
 */
static void
rx_message(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h, const uint8_t *data,
	   struct via_poll_stats *st)
{
	struct via_vi_rx *rx = &vi->rx;
	const uint32_t off = via_wire_offset(h), len = via_wire_data_len(h);

	if (via_wire_msg_id(h) == rx->msg.fs.msg_id) {
		if (off < rx->msg.off && off + len <= rx->msg.off) {
			st->frames_dropped++;        /* a copy of a frame placed already */
			return;
		}
		if (off != 0 && off == rx->msg.off) {
			rx_place(d, vi, h, data, st);
			return;
		}
	}
	if (off != 0) {
		/* a frame of this message was lost, or overtaken: it is cut
		 * short; a later frame of another message goes */
		if (via_wire_msg_id(h) == rx->msg.fs.msg_id)
			rx_cut(d, vi, -EPROTO);
		st->frames_dropped++;
		return;
	}
	/* a new message: the one before lost its last frames */
	rx_cut(d, vi, -EPROTO);
	rx_place(d, vi, h, data, st);
}

/* One function per receive state (enum via_rx_state). */
static void (*const rx_state_input[])(struct viad *d, struct via_vi *vi,
				      const struct via_wire_hdr *h, const uint8_t *data,
				      struct via_poll_stats *st) = {
	[VIA_RX_IDLE] = rx_idle,
	[VIA_RX_MESSAGE] = rx_message,
	[VIA_RX_WRITE] = rx_message,
};

static const char *const rx_state_names[] = {
	[VIA_RX_IDLE] = "idle",
	[VIA_RX_MESSAGE] = "message",
	[VIA_RX_WRITE] = "write",
};

const char *
via_rx_state_name(enum via_rx_state state)
{
	return (unsigned)state < RTE_DIM(rx_state_names) ? rx_state_names[state] : "?";
}

/*
 * A data frame (Send, RDMA Write, Read answer) of @p vi's connection, taken
 * in order: the answer to one of our Reads, or the next frame of the
 * receive state.
 */
static void
rx_taken(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h, const uint8_t *data,
	 struct via_poll_stats *st)
{
	struct via_vi_rx *rx = &vi->rx;

	if (h->opcode == VIA_OP_RDMA_READ_RESP) {
		read_answer(d, vi, h, data, via_wire_data_len(h));
		return;
	}
	if (rx->delivered_any && (int32_t)(via_wire_msg_id(h) - rx->last_msg_id) <= 0) {
		st->frames_dropped++;                /* a duplicate: delivered already */
		return;
	}
	rx_state_input[rx->state](d, vi, h, data, st);
}

/*
 * VIA §6.3.1.1, Reliable Reception: a send or write that bypasses an RDMA
 * Read of the peer takes no effect before the read's data are sent, and a
 * later read must see what it wrote. Whether frame @p h comes behind such a
 * read: an answer still to frame (framed here first, if the window lets
 * it), or a frame kept behind one. The peer's answers to our own reads are
 * never behind anything.
 */
static bool
behind_read(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h)
{
	struct via_vi_reads *a = &vi->answers;

	if (vi->attr.reliability != VIP_SERVICE_RELIABLE_RECEPTION ||
	    h->opcode == VIA_OP_RDMA_READ_RESP)
		return false;
	if (a->head != a->tail)
		via_resp_read_answers(d, vi, UINT32_MAX);
	return a->head != a->tail || via_rel_parked(vi);
}

/* A numbered frame behind an unanswered read: taken, kept until then. */
static void
rx_park(struct via_vi *vi, const struct via_wire_hdr *h, struct rte_mbuf *m,
	struct via_poll_stats *st)
{
	if (vi->state != VIP_STATE_CONNECTED || !via_rel_park(vi, h, m))
		st->frames_dropped++;
}

/*
 * The frames kept behind the peer's reads take effect, in order, now that
 * those are answered, until one is a read to answer first.
 */
static void
park_replay(struct viad *d, struct via_vi *vi)
{
	struct via_poll_stats *st = via_dp_stats();
	struct rte_mbuf *m;

	while (vi->answers.head == vi->answers.tail && vi->state == VIP_STATE_CONNECTED &&
	       (m = via_rel_unpark(vi)) != NULL) {
		const struct via_wire_hdr *h =
			rte_pktmbuf_mtod_offset(m, const struct via_wire_hdr *, RTE_ETHER_HDR_LEN);

		if (h->opcode == VIA_OP_RDMA_READ_REQ)
			read_request(d, vi, h);
		else
			rx_taken(d, vi, h, frame_data(m, h), st);
		rte_pktmbuf_free(m);
	}
}

/* A data frame (Send, RDMA Write, Read answer) for a VI of this shard. */
static void
rx_data(struct viad *d, struct via_nic *nic, struct rte_mbuf *m, const struct via_wire_hdr *h,
	struct via_poll_stats *st)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	struct via_vi *vi;

	/* a frame for a VI in a handshake went to the connection manager
	 * first (via_cm_wants_frame): here the VI is Connected, or not its */
	vi = via_vi_of_frame(d, nic, eth->src_addr.addr_bytes, via_wire_dst_vi(h),
				     via_wire_src_vi(h), via_wire_conn_id(h), st);
	if (vi == NULL) {
		/* VIA §4.2: the sender learns at its next transfer that this
		 * connection is gone; once per message is enough */
		st->frames_dropped++;
		if (via_wire_offset(h) == 0)
			send_reset(nic, eth->src_addr.addr_bytes, h);
		return;
	}
	if (behind_read(d, vi, h)) {
		rx_park(vi, h, m, st);
		return;
	}
	if (via_rel_level(vi) && !via_rel_accept(vi, h)) {
		st->frames_dropped++;                /* out of order: go back N */
		return;
	}
	rx_taken(d, vi, h, frame_data(m, h), st);
}

/* An ACK, NAK or RDMA Read request, for a connection that exists. */
static void
rx_xport(struct viad *d, struct via_nic *nic, struct rte_mbuf *m, const struct via_wire_hdr *h,
	 struct via_poll_stats *st)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	struct via_vi *vi = via_vi_of_frame(d, nic, eth->src_addr.addr_bytes, via_wire_dst_vi(h),
				     via_wire_src_vi(h), via_wire_conn_id(h), st);

	/* the transport is the reliable levels' (a NAK from an older viad on
	 * an Unreliable connection is dropped too) */
	if (vi == NULL || !via_rel_level(vi)) {
		st->frames_dropped++;
		return;
	}
	if (h->opcode == VIA_OP_RDMA_READ_REQ) {
		/* sequenced like data: only in order; behind frames kept for
		 * an earlier read, it must see what they write */
		if (via_rel_parked(vi))
			rx_park(vi, h, m, st);
		else if (via_rel_accept(vi, h))
			read_request(d, vi, h);
		else
			st->frames_dropped++;
		return;
	}
	via_rel_input(d, vi, h, st);
}

void
via_resp_input(struct viad *d, struct via_nic *nic, struct rte_mbuf *m,
	       struct via_poll_stats *st)
{
	const struct via_wire_hdr *h =
		rte_pktmbuf_mtod_offset(m, const struct via_wire_hdr *, RTE_ETHER_HDR_LEN);

	if (via_wire_ops[h->opcode].flags & VIA_OPF_XPORT)
		rx_xport(d, nic, m, h, st);
	else
		rx_data(d, nic, m, h, st);
}

void
via_resp_flush(struct viad *d, struct via_vi *vi)
{
	if (vi->rx.state == VIA_RX_MESSAGE)
		recv_complete(d, vi, -ECANCELED, false);
}
