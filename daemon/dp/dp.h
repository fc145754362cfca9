/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * viad's data path and the frame-level entry points of the connection
 * manager: everything that touches mbufs. Called by a poll lcore with its
 * shard's lock held, or by the control thread with every shard's
 * (struct via_shard in viad.h).
 *
 * Files by role, as Linux rxe splits its data path (docs/design.md, "The
 * daemon's files"); each calls only the files below it:
 *
 *   dp.c        the poll iteration: doorbells, round robin, frames to the
 *               responder; flush and reset of a VI; the events below
 *   dp_req.c    requester: send-queue descriptors become messages
 *   dp_resp.c   responder: frames become placed data and receive
 *               completions; RDMA Read requests are answered
 *   dp_frame.c  a message's bytes cut into frames (copied or zero copy)
 *   dp_rel.c       go-back-N of the reliable levels
 *   dp_comp.c   completer: completions written back, held in order
 *   dp_desc.c   descriptors fetched and validated (VIA §10)
 *   dp_zc.c        zero-copy frames' trackers
 *   dp_mem.c    the memory above, provided off the poll lcores
 *   dp_net.c    frames in and out: ports, backlogs, shards' inboxes
 *   pmd_glue/   the ports (via_glue.h)
 *
 * What happens below and concerns a file above (a connection broke, frames
 * were freed) goes up through struct via_events, never by a call.
 *
 * One message (struct via_dp_msg, viad.h: as rxe's wqe) goes down the
 * layers whole: the requester takes it from a descriptor (dp_desc.c), frames
 * it (dp_frame.c) and hands it to the completer (dp_comp.c), which alone
 * decides whether its completion goes now, waits in the send queue's order,
 * or waits for its zero-copy frames.
 *
 * Errors: one convention for the whole data path. A function that can fail
 * returns 0 or a negative errno (or a pointer, NULL on failure, where it
 * says so), and a message that fails keeps its errno in via_dp_msg.err.
 * Each errno has one meaning here, and only the completer turns it into a
 * descriptor's status bits (via_comp_status(), VIA §10.2):
 *
 *   -EBADMSG    format error (bit 0): the descriptor is malformed
 *   -EACCES     protection error (bit 1): a region check failed, or the
 *               memory went away
 *   -EMSGSIZE   length error (bit 3)
 *   -EPROTO     partial packet (bit 4): a message cut short
 *   -ECANCELED  flushed (bit 5): the VI is not, or no longer, connected
 *   -ENOBUFS    transport error (bit 7): out of frame buffers or state,
 *               or the connection broke
 *
 * and, never a descriptor's, -ENOENT: nothing to take (an empty queue).
 * The one place status bits travel instead is the wire: a NAK carries the
 * refused operation's status for the peer's completion (via_rel_nak).
 */
#ifndef VIA_DP_H
#define VIA_DP_H

#include <errno.h>
#include <sys/uio.h>

#include <rte_mbuf.h>

#include <vipl.h>

#include "via_glue.h"
#include "viad.h"
#include "wire.h"

#define VIA_DP_BURST     32   /**< frames per burst: ports, inboxes */
#define VIA_DP_DESC_COST 256  /**< bytes a descriptor costs in a VI's turn besides its data */

/* ---- dp.c: the poll iteration --------------------------------------------- */

/** @return 0, -ENOMEM (the NICs' backlogs, the shards' inboxes, the CM inbox) */
int via_dp_init(struct viad *d);
void via_dp_fini(struct viad *d);

/**
 * One poll iteration of shard @p me: its port receive queues and its inbox
 * in, then a turn for each of its VIs whose doorbell rang (VIA §11.2.2.1
 * round robin).
 * @return how much work was done (0: idle)
 */
unsigned via_dp_poll(struct viad *d, struct via_shard *me, struct via_poll_stats *st);

/**
 * Every send ring shard @p me polls goes back to doorbells (its poller is
 * about to sleep): each ring's polled word is cleared, then looked at; a
 * ring with posts at that look stays polled, so that the next iteration
 * serves them (their producer saw it polled and rang no doorbell).
 * @return whether a post came meanwhile (the poller must not sleep)
 */
bool via_dp_polled_stop_all(struct via_shard *me);

/* ---- dp_poll.c: the poll lcores ------------------------------------------------ */

/**
 * Wake shard @p sh's poller if it sleeps: the caller has just published
 * work for it (a frame in its inbox, a released zero-copy tracker) with a
 * seq_cst store or a seq_cst fence after it (via_abi.h, "Wake-up
 * contract", pair 2). Any thread; no lock.
 */
void via_poll_wake(struct via_shard *sh);

/* ---- dp_req.c: the requester (VIA §6.3, §9.6.1) ----------------------------- */

/**
 * A turn of @p vi's send side (dp.c, vi_send): the peer's RDMA Reads
 * answered, then send-queue descriptors taken and framed while the VI's
 * deficit (vi->tx_deficit, charged here) lasts, 16 at most.
 * @return how much work was done
 */
unsigned via_req_turn(struct viad *d, struct via_vi *vi);
/**
 * The connection of @p vi breaks while a message is partly framed: it is
 * held like one framed whole, that would be in flight now (a completion
 * to wait for the peer on Reliable Reception, one in its turn otherwise),
 * so a break reports the same whatever the turns did.
 */
void via_req_cut(struct via_vi *vi);
/** Flush: the message being framed completes with DESC_FLUSHED. */
void via_req_flush(struct viad *d, struct via_vi *vi);

/* ---- dp_resp.c: the responder (VIA §6.4, §6.3.2, §9.6.1) --------------------- */

/** A data or transport frame for a VI of this shard, checked (dp_net.c). */
void via_resp_input(struct viad *d, struct via_nic *nic, struct rte_mbuf *m,
		    struct via_poll_stats *st);
/**
 * Answer the RDMA Reads the peer asked for, oldest first (VIA §6.3.1), up to
 * @p budget bytes of frames (at least one): a long answer takes several
 * turns, like a long send. @return how many answers were finished
 */
unsigned via_resp_read_answers(struct viad *d, struct via_vi *vi, uint32_t budget);
/** The answer of RDMA Read @p msg_id whose source a->src is, nothing framed
 *  yet (its request, or an upgrade's image). */
void via_resp_answer_init(struct via_rdma_resp *a, uint32_t msg_id);
/** Flush: the receive descriptor being filled completes with DESC_FLUSHED. */
void via_resp_flush(struct viad *d, struct via_vi *vi);
/** Name of a receive state, for telemetry. */
const char *via_rx_state_name(enum via_rx_state state);

/* ---- dp_frame.c: messages into frames ------------------------------------ */

/**
 * Cut message @p msg into frames and transmit them, from msg->off
 * (advanced) until its end or until @p budget bytes went (at least one
 * frame: a 0-byte message has one); where msg->zero_copy allows, frames
 * point into its segments instead of copying them (msg->zc, dp_zc.c).
 * @return 0, -EACCES (its data vanished), -ENOBUFS (a reliable level: a
 *         frame could not be built; Unreliable Delivery loses the rest)
 */
int via_frame_send(struct viad *d, struct via_vi *vi, struct via_dp_msg *msg, uint32_t budget);
/**
 * Whether the frames of one more message of the largest size fit where they
 * go next, its completion a place in the send queue's FIFO and, on a
 * reliable level, its frames in the send window; with @p new_msg (a
 * descriptor to take, not a message to go on with) also behind the VI's
 * RDMA Reads not yet answered (via_rel_room_new).
 */
bool via_frame_room(struct via_vi *vi, bool new_msg);

/* ---- dp_comp.c: the completer (VIA §6.4.1, §10.2) ------------------------- */

/** What a completion writes into its descriptor (VIA §10.2). */
struct via_dp_done {
	uint32_t len;
	uint32_t imm;
	uint32_t status;   /**< VIP_STATUS_*, the op bits included */
};

/** The status bits of error @p err (0 or -errno: "Errors" above); inline:
 *  every completion asks, and nearly all are 0. */
static inline uint32_t
via_comp_status(int err)
{
	switch (err) {
	case 0:
		return 0;
	case -EBADMSG:
		return VIP_STATUS_FORMAT_ERROR;
	case -EMSGSIZE:
		return VIP_STATUS_LENGTH_ERROR;
	case -ECANCELED:
		return VIP_STATUS_DESC_FLUSHED_ERROR;
	case -ENOBUFS:
		return VIP_STATUS_TRANSPORT_ERROR;
	case -EPROTO:
		return VIP_STATUS_PARTIAL_ERROR;
	case -EACCES:
	default:
		return VIP_STATUS_PROTECTION_ERROR;
	}
}
/**
 * Write a completion into the client's descriptor in region @p desc_mr
 * (NULL: unusable, only counted), or into its line entry, then the queue's
 * wait word (at the end of the iteration on a poll lcore), then the CQ
 * entry (VIA §6.4.2).
 */
void via_dp_complete(struct via_vi *vi, enum via_wq_kind q, const struct via_wqe *w,
		     const struct via_mr *desc_mr, struct via_dp_done done);
/**
 * Send message @p msg is done (msg->err: how; its zero-copy frames may still
 * be in flight): the one place that decides whether its completion goes now,
 * waits behind those held before it or for the peer (Reliable Reception,
 * VIA §2.5.3), or waits until its frames no longer point into its buffers
 * (dp_zc.c). Takes the message's framing reference (msg->zc is NULL after).
 */
void via_comp_send(struct viad *d, struct via_vi *vi, struct via_dp_msg *msg);
/**
 * The receive descriptor of the message @p vi is placing (vi->rx.msg)
 * completes with @p err (0 or -errno): Length what was placed (none for an
 * RDMA Write with immediate data), and with @p whole the message's
 * immediate data and op bits (an error before its data: none).
 */
void via_comp_recv(struct viad *d, struct via_vi *vi, int err, bool whole);
/**
 * Bump the wait words of the completions shard @p me owes (via_shard.batch):
 * once per queue, for all of them; at the end of its iteration.
 */
void via_dp_complete_flush(struct via_shard *me);
/**
 * Whether a completion of one more message fits in the FIFO of held send
 * completions (sized at the first send, for as many as frames in flight).
 */
bool via_sq_room(struct via_vi *vi);
/**
 * Hold the send-queue completion of @p msg's descriptor (it waits for
 * @p wait, or only for its turn); the caller has checked via_frame_room().
 */
struct via_sq_pending *via_sq_hold(struct via_vi *vi, const struct via_dp_msg *msg,
				   enum via_sq_wait wait, struct via_dp_done done);
/** Whether completions are held: later ones must queue behind them. */
bool via_sq_held(const struct via_vi *vi);
/** Complete the held completions at the head that are ready. */
void via_sq_drain(struct viad *d, struct via_vi *vi);
/** The peer expects frame @p ack: the held Reliable Reception completions
 *  of the frames before it are ready; complete those at the head. */
void via_sq_acked(struct viad *d, struct via_vi *vi, uint32_t ack);
/**
 * Complete every held completion now: those only waiting for their turn as
 * they are, the first one waiting for the peer with @p err (-ECANCELED, or
 * -ENOBUFS: the connection broke), the rest DESC_FLUSHED (VIA §2.5.3, §4.2).
 */
void via_sq_flush(struct viad *d, struct via_vi *vi, int err);
/** The held RDMA Read whose answer is @p msg_id, or NULL. */
struct via_sq_pending *via_sq_read(struct via_vi *vi, uint32_t msg_id);
/** The held completion still waiting for the peer whose frames include @p seq, or NULL. */
struct via_sq_pending *via_sq_of_seq(struct via_vi *vi, uint32_t seq);
/** Drop the held completions without completing them (reset). */
void via_sq_reset(struct via_vi *vi);

/* ---- dp_desc.c: descriptors (VIA §10) ------------------------------------- */

/**
 * The region holding the descriptor of @p w: of the VI's tag and writable,
 * since its status is written back (VIA §9.5.1). NULL: @p code reported,
 * POST_DESC when fetching, COMP_PROT when completing (VIA §9.9.1).
 */
const struct via_mr *via_desc_region(struct viad *d, struct via_vi *vi, enum via_wq_kind q,
				     const struct via_wqe *w, uint32_t code);
/**
 * The region of descriptor @p w (of queue @p q) at its completion: the one
 * its fetch found (@p found), while the table's epoch it was found in lasts
 * (no region went or changed since: via_mr_epoch), else looked up again
 * (NULL: COMP_PROT reported, VIA §9.9.1).
 */
static inline const struct via_mr *
via_desc_region_again(struct viad *d, struct via_vi *vi, enum via_wq_kind q,
		      const struct via_wqe *w, const struct via_desc_mr *found)
{
	if (found->epoch == via_mr_epoch(d))
		return found->mr;
	return via_desc_region(d, vi, q, w, VIP_ERROR_COMP_PROT);
}
/**
 * Take the next entry of @p vi's queue @p q into msg->wqe (via_desc_take)
 * and fetch its descriptor (via_desc_fetch); a send's op bits in
 * msg->status, and in msg->fs.data its inline data (a line entry's, in
 * the ring slot, which the client posts again only after the completion)
 * or NULL. @return as via_desc_fetch()
 */
const struct via_mr *via_desc_next(struct viad *d, struct via_vi *vi, enum via_wq_kind q,
				   struct via_dp_msg *msg, VIP_CONTROL_SEGMENT *cs);
/**
 * Fetch the descriptor of msg->wqe (VIA §10.2-10.4) into @p msg: its data
 * segments into msg->segs (max_segments_per_desc entries), their sum in
 * msg->total, an RDMA descriptor's address segment in msg->fs, and in
 * msg->err 0 (valid), -EBADMSG, -EACCES or -EMSGSIZE (more than 4 GiB).
 * *@p cs receives the control segment.
 * @return the region holding the descriptor, or NULL: the descriptor
 *         itself is unusable (POST_DESC reported)
 */
const struct via_mr *via_desc_fetch(struct viad *d, struct via_vi *vi, enum via_wq_kind q,
				    struct via_dp_msg *msg, VIP_CONTROL_SEGMENT *cs);
/**
 * Take the next entry of @p vi's queue @p q (the caller saw via_ring_avail()
 * say there is one): copied out of the ring, its descriptor's address and
 * handle in @p w; a line entry's first line kept in vi->taken[q], which
 * via_desc_fetch() and via_desc_flushed_op() read. @return the entry's slot
 * in the ring (a line entry's inline data follow its first line there)
 */
const void *via_desc_take(struct via_vi *vi, enum via_wq_kind q, struct via_wqe *w);
/**
 * The completion of the oldest line entry of @p vi's queue @p q not yet
 * completed (completions go in ring order): its Length, ImmediateData and
 * Status (with Done, stored last) written into the entry (via_abi.h,
 * struct via_wqe_line).
 */
void via_desc_line_done(struct via_vi *vi, enum via_wq_kind q, uint32_t len, uint32_t imm,
			uint32_t status);
/** The QFENCE bit of the next send descriptor (VIA §6.3.1.2), without
 *  taking it; the ring has one. */
bool via_desc_fenced(struct viad *d, struct via_vi *vi);
/**
 * The completed-operation bits (§10.2 bits 18:16) of a descriptor flushed
 * from queue @p q before viad took it (@p mr NULL: a send).
 */
uint32_t via_desc_flushed_op(const struct via_vi *vi, enum via_wq_kind q,
			     const struct via_wqe *w, const struct via_mr *mr);
#define VIA_COPY_FROM_SEGS 0u   /**< via_segs_copy(): from the segments into @p iov */
#define VIA_COPY_TO_SEGS   1u   /**< into the segments */
/** the regions looked up again by handle (VIA §3.2.1), unless the table's
 *  epoch msg->segs_epoch found them in lasts */
#define VIA_COPY_RECHECK   2u
/**
 * Copy between the @p n buffers of @p iov, the message bytes from msg->off
 * on, one after the other, and the segments of @p msg (@p how: VIA_COPY_*).
 * A buffer of base NULL is skipped (its bytes go otherwise: zero copy).
 * @return 0, -EACCES (a region gone, or its memory)
 */
int via_segs_copy(struct via_vi *vi, const struct via_dp_msg *msg, const struct iovec *iov,
		  unsigned n, unsigned how);

/* ---- dp_net.c: frames in and out ------------------------------------------- */

/** The port backlogs, the shards' inboxes, the CM inbox. @return 0, -ENOMEM */
int via_net_init(struct viad *d);
void via_net_fini(struct viad *d);
/** This lcore runs shard @p me (NULL: the control thread) and counts into @p st. */
void via_net_enter(struct via_shard *me, struct via_poll_stats *st);
/** The counters of the lcore running the data path now. */
struct via_poll_stats *via_dp_stats(void);

/** Payload bytes one frame of @p nic carries: its MTU less the VIA header. */
uint32_t via_dp_frame_payload(const struct via_nic *nic);
/** Payload bytes of one frame of @p vi's connection (or of its NIC, unconnected). */
static inline uint32_t
via_net_vi_payload(const struct via_vi *vi)
{
	return vi->conn.frame_payload ? vi->conn.frame_payload
				      : via_dp_frame_payload(vi->owner->nic);
}
/** Frames of one message of the largest size @p vi may send. */
static inline uint32_t
via_net_msg_frames(const struct via_vi *vi)
{
	return vi->attr.max_transfer / via_net_vi_payload(vi) + 1;
}
/**
 * Entries of a per-VI queue sized for the frames in flight (the send
 * window, dp_rel.c; the held completions, dp_comp.c): twice those of the
 * largest message, 64 at least, a power of two.
 */
static inline uint32_t
via_net_queue_size(const struct via_vi *vi)
{
	return via_pow2_ceil(RTE_MAX(2 * via_net_msg_frames(vi), 64u));
}
/**
 * Whether frames of @p nic to @p mac stay in memory: to the NIC's own
 * address, handed to a shard's inbox, not through the port (unless the
 * port says own-address frames take it: VIA_PORT_CAP_SELF_VIA_PORT; a
 * faulty NIC does, to exercise the injector). Inline: asked for every
 * descriptor and every burst.
 */
static inline bool
via_net_to_self(const struct via_nic *nic, const uint8_t mac[6])
{
	return !(nic->caps & VIA_PORT_CAP_SELF_VIA_PORT) &&
	       memcmp(mac, via_port_mac(nic->port)->addr_bytes, RTE_ETHER_ADDR_LEN) == 0;
}
/**
 * Start frame @p m to @p dst: Ethernet header, and a zeroed VIA header
 * followed by @p payload_len bytes. @return the VIA header, NULL (no room)
 */
struct via_wire_hdr *via_net_frame_init(struct rte_mbuf *m, struct via_nic *nic,
					const uint8_t dst[6], uint16_t payload_len);
/** A burst of frames of one VI to its peer: made here, filled by dp_frame.c. */
struct via_net_burst {
	struct rte_mbuf *pkts[VIA_DP_BURST];
	uint16_t n;           /**< frames in @c pkts */
	uint16_t zero_copy;   /**< of them, chained to provider memory (counted when sent) */
	bool in_memory;       /**< to a VI of this viad: handed over, never through a port */
};
/**
 * Up to @p n frames of @p vi to its peer, started (via_net_frame_init) with
 * @p ext bytes after the VIA header. @return how many (b->n; fewer: out of
 * mbufs)
 */
uint16_t via_net_burst_alloc(const struct via_vi *vi, struct via_net_burst *b, uint16_t n,
			     uint16_t ext);
/** Transmit the frames of @p b, filled and sealed (consumes them). */
void via_net_burst_xmit(const struct via_vi *vi, struct via_net_burst *b);
/** Transmit frames (the NIC's own address: delivered locally); consumes them. */
void via_dp_xmit(struct via_nic *nic, struct rte_mbuf **pkts, uint16_t n);
/**
 * Send a frame without message data (the connection manager's, the
 * transport's) whose header @p tmpl the caller filled: opcode, flags, VIs,
 * conn_id, seq, imm; version, length and CRCs are set here. @p len bytes of
 * @p payload follow the header.
 */
void via_dp_send_frame(struct via_nic *nic, const uint8_t mac[6], const struct via_wire_hdr *tmpl,
		       const void *payload, uint16_t len);
/** The header of a frame without payload of @p vi to its peer: @p op and
 *  @p flags, the VIs and the connection; the caller sets the rest (seq,
 *  imm, msg_id: what an ACK or NAK means). */
static inline struct via_wire_hdr
via_net_peer_hdr(const struct via_vi *vi, uint8_t op, uint16_t flags)
{
	struct via_wire_hdr h;

	via_wire_hdr_init(&h, op, flags, vi->conn.remote_vi, vi->id, vi->conn.id);
	return h;
}
/** Send frame header @p h (via_net_peer_hdr) without payload to @p vi's
 *  peer (a NAK counted). */
void via_net_send_peer(const struct via_vi *vi, const struct via_wire_hdr *h);
/**
 * Where frame @p m goes next: the inbox of its destination VI's shard, CM
 * frames included, so that a VI's frames stay in order; the control
 * thread's for a CM frame naming no VI of this viad; shard 0's for other
 * frames naming none (it answers RESET).
 */
struct rte_ring *via_net_route(struct viad *d, const struct rte_mbuf *m);
/**
 * Hand frames to another shard or the control thread (@p to), waking
 * whoever may sleep. @return how many it took; the caller frees the rest.
 */
unsigned via_net_hand_over(struct viad *d, struct via_nic *nic, struct rte_ring *to,
			   struct rte_mbuf **pkts, unsigned n);
/** Receive a burst from queue @p q of @p nic's port (captured, counted). */
uint16_t via_net_rx_burst(struct via_nic *nic, uint16_t q, struct rte_mbuf **pkts,
			  struct via_poll_stats *st);
/** Whether frame @p m from the port of @p nic is a sound VIA frame for it. */
bool via_net_rx_check(struct via_nic *nic, struct rte_mbuf *m, struct via_poll_stats *st);
/**
 * The transmit side of @p nic, once per iteration of shard 0: its backlog
 * to the port, and a kick for a port that holds frames back
 * (VIA_PORT_CAP_TX_KICK). @return work done
 */
unsigned via_net_tx_poll(struct via_nic *nic, struct via_poll_stats *st);

/* ---- dp_rel.c: the reliable levels (VIA §2.5.2, §2.5.3) ------------------- */

/** Whether @p vi is Reliable Delivery or Reliable Reception. */
static inline bool
via_rel_level(const struct via_vi *vi)
{
	return vi->attr.reliability != VIP_SERVICE_UNRELIABLE;
}
/** Reliable levels: whether the frames of one more message fit in the send
 *  window. */
bool via_rel_room(struct via_vi *vi);
/**
 * via_rel_room() for a new message, which must also leave room behind this
 * VI's RDMA Reads not yet answered: on Reliable Reception the peer keeps
 * what comes behind them (via_rel_park), a window of frames at most.
 */
bool via_rel_room_new(struct via_vi *vi);
/** Give the @p n frames of @p pkts their sequence numbers and keep them
 *  until acknowledged. */
void via_rel_track(struct viad *d, struct via_vi *vi, struct rte_mbuf **pkts, uint16_t n);
/** Receiver: whether frame @p h is the next in order (else drop it). */
bool via_rel_accept(struct via_vi *vi, const struct via_wire_hdr *h);
/**
 * Receiver: take frame @p h of mbuf @p m in order, as via_rel_accept(), but
 * keep it to place later (a reference on @p m): Reliable Reception, behind
 * an RDMA Read still to answer (VIA §6.3.1.1). ACKs say it arrived, not
 * that it is placed. @return false if it was not taken (drop it)
 */
bool via_rel_park(struct via_vi *vi, const struct via_wire_hdr *h, struct rte_mbuf *m);
/** Receiver: the oldest parked frame, now to be placed (the caller frees
 *  it), or NULL. */
struct rte_mbuf *via_rel_unpark(struct via_vi *vi);
/** Receiver: whether frames are parked. */
static inline bool
via_rel_parked(const struct via_vi *vi)
{
	return vi->rel.park_head != vi->rel.park_tail;
}
/** Receiver: refuse frame @p h with @p status and break the connection. */
void via_rel_nak(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h, uint32_t status,
		 const char *why);
/** An ACK or NAK for @p vi. */
void via_rel_input(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h,
		   struct via_poll_stats *st);
/** Per iteration: send a due ACK, run the retransmission timer. */
void via_rel_poll(struct viad *d, struct via_vi *vi, uint64_t now, struct via_poll_stats *st);
/** Break the connection (VIA §2.5.2): logged, then handed up (via_events::conn_broken). */
void via_rel_fail(struct viad *d, struct via_vi *vi, const char *why);
/** Drop the transport state: unacknowledged frames are freed. */
void via_rel_reset(struct via_vi *vi);
/**
 * After an upgrade's blackout (docs/design.md section 18): the timers start
 * again from now, what is unacknowledged goes again at the first poll, and
 * the peer hears where the receiver is, three times: its fast
 * retransmission sends at once what the blackout lost.
 */
void via_rel_resume(struct viad *d, struct via_vi *vi);

/* ---- dp_mem.c: the data path's memory, provided off the poll lcores ------ */

#define VIA_DP_READ_LISTS  511   /**< per shard: RDMA Reads awaiting their answer */
#define VIA_DP_ZC_TRACKERS 1024  /**< per shard: zero-copy messages in flight */

/**
 * Control thread, every shard's lock held: the shards' pools (RDMA Reads'
 * scatter lists, zero-copy trackers) and the list that flushed sends of
 * never connected VIs are fetched into. @return 0, -ENOMEM
 */
int via_dp_mem_init(struct viad *d);
void via_dp_mem_fini(struct viad *d);
/**
 * Control thread, as a connection of @p vi is about to start (its terms
 * agreed, cm.c; or adopted, image_adopt.c): the memory its poll lcore
 * uses for it, sized for its connection (scatter lists, held completions,
 * the send window, parked frames), made or grown; kept until the VI is
 * freed (via_vi_free). @return 0, -ENOMEM
 */
int via_dp_vi_provision(struct via_vi *vi);
/**
 * A scatter list (max_segments_per_desc entries) from shard @p sh's pool,
 * for an RDMA Read until its answer. @return it, or NULL (the pool is
 * empty: counted in pool_exhausted, a resource error for the caller)
 */
struct via_dp_seg *via_read_segs_get(struct via_shard *sh);
/** Give @p segs (NULL: none) back to shard @p sh's pool. */
void via_read_segs_put(struct via_shard *sh, struct via_dp_seg *segs);

/* ---- dp_zc.c: zero-copy transmit from provider memory ------------------- */

/**
 * A tracker for the zero-copy frames of one message of @p vi whose data lies
 * in @p pmem (pinned until the tracker is freed); it holds the framing
 * reference until via_zc_framed().
 * @return the tracker, or NULL (none left in the shard's pool: counted,
 *         the caller copies)
 */
struct via_zc *via_zc_new(struct viad *d, struct via_vi *vi, struct via_pmem *pmem);
/**
 * An external-buffer mbuf for @p len bytes at @p va (viad's mapping of
 * @p pmem), counted by @p zc. @return the mbuf, or NULL (out of mbufs, or
 * @p zc can take no more: another allocation, or its count is full)
 */
struct rte_mbuf *via_zc_attach(struct via_zc *zc, const struct via_pmem *pmem, void *va,
			       uint16_t len);
/**
 * The message is framed: drop the framing reference. @p zc may be NULL.
 * @return @p zc if frames still point into the message (bind a completion
 *         to it, or NULL to orphan it), else NULL (freed)
 */
struct via_zc *via_zc_framed(struct via_zc *zc);
/** Hold completion @p p (NULL: none) of @p vi until @p zc's frames are freed. */
void via_zc_bind(struct via_zc *zc, struct via_vi *vi, struct via_sq_pending *p);
/** The message of *@p zc (NULL: none) is framed and nothing waits for its
 *  frames; they keep only its allocation mapped. Clears *@p zc. */
void via_zc_drop(struct via_zc **zc);
/** @p p goes now, frames in flight or not: its tracker no longer holds it. */
void via_zc_orphan(struct via_sq_pending *p);
/** Shard @p me: let the completions go whose frames were freed. @return whether any were */
bool via_zc_reap(struct viad *d, struct via_shard *me);
/** Whether trackers wait for shard @p me's reap (it must not sleep). */
bool via_zc_pending(const struct via_shard *me);
/** Shard @p me's trackers, VIA_DP_ZC_TRACKERS spares (control thread). @return 0, -ENOMEM */
int via_zc_init(struct via_shard *me);
/** Free shard @p me's trackers, unpinning those the ports' last frames released (shutdown,
 *  after the ports closed: no frame points into a message any more). */
void via_zc_fini(struct via_shard *me);

/** The mbuf pool of every port (nic.c). */
struct rte_mempool *via_nics_pool(void);
/** The pool of zero-copy frames' data segments: mbufs without a data room (nic.c). */
struct rte_mempool *via_nics_zc_pool(void);

/* ---- cm.c: control-thread entry points (return -errno, or VIA_CTL_DEFERRED) */

/**
 * Control thread: the connection-manager frames the shards handed over
 * (viad.cm_inbox; the name says which inbox it drains), and the frames of
 * VIs in a handshake (via_cm_wants_frame): the first of a connection's
 * data may come before its CONN_ACK and confirms it (wire-format.md 7.1).
 */
void via_dp_cm_input(struct viad *d);

/**
 * Poll lcore, before a frame from the port goes further: a CONN_REQ goes on
 * only with a valid cookie of its source MAC in imm, which only a host that
 * receives frames at that MAC has; any other is answered with CONN_COOKIE
 * and nothing is kept (SYN cookies; wire-format.md 7.2). Reads only what
 * via_cm_init() set. @return whether @p m goes on (else the caller frees it)
 */
bool via_cm_admit(struct viad *d, struct via_nic *nic, const struct rte_mbuf *m,
		  struct via_poll_stats *st);

/**
 * Whether frame @p h, not a CM frame, is for a VI in a handshake, with its
 * connection id: the connection manager takes it first, in order after the
 * VI's CM frames (via_dp_cm_input), as it may be what connects the VI.
 */
static inline bool
via_cm_wants_frame(struct viad *d, const struct via_wire_hdr *h)
{
	const struct via_vi *vi = via_idtab_lookup(&d->vis, via_wire_dst_vi(h));

	return vi != NULL && vi->state == VIP_STATE_CONNECT_PENDING &&
	       vi->conn.id == via_wire_conn_id(h);
}

int via_cm_wait(struct viad *d, struct via_session *s, const struct via_ctl_conn_wait_req *q,
		uint32_t seq, struct via_ctl_conn_wait_rep *rep);
int via_cm_accept(struct viad *d, struct via_session *s, uint32_t conn, uint32_t vi, uint32_t seq);
int via_cm_reject(struct viad *d, struct via_session *s, uint32_t conn);
int via_cm_request(struct viad *d, struct via_session *s, const struct via_ctl_conn_request_req *q,
		   uint32_t seq);
int via_cm_peer_request(struct viad *d, struct via_session *s,
			const struct via_ctl_conn_request_req *q);
/** @p seq 0: VipConnectPeerDone (-EAGAIN while pending); else PeerWait. */
int via_cm_peer_done(struct viad *d, struct via_session *s, uint32_t vi, uint32_t seq,
		     struct via_ctl_vi_attr *attr);
int via_cm_disconnect(struct viad *d, struct via_session *s, uint32_t vi);
/** Name of a requester state, for telemetry. */
const char *via_cm_state_name(enum via_cm_state state);

/* ---- nic.c ------------------------------------------------------------- */

/**
 * Watch the ports' links (called by the control thread, lock held): a link
 * that went down is handed up (via_events::link_down).
 * @return ms until it wants to look again
 */
int via_nics_watch(struct viad *d, uint64_t now);

#endif /* VIA_DP_H */
