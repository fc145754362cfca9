/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * viad's data path and the frame-level entry points of the connection
 * manager: everything that touches mbufs. Called by a poll lcore with its
 * shard's lock held, or by the control thread with every shard's
 * (struct via_shard in viad.h).
 */
#ifndef VIA_DP_H
#define VIA_DP_H

#include <rte_mbuf.h>

#include <vipl.h>

#include "viad.h"
#include "wire.h"

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

/** Control thread: the connection-manager frames the shards handed over. */
void via_dp_cm_input(struct viad *d);

/**
 * Send a frame without data (connection manager) from @p nic to @p mac.
 * A frame to the NIC's own address is delivered locally (VIA §4.1: two VIs
 * of one node connect too), whatever the port.
 */
void via_dp_send_ctrl(struct via_nic *nic, const uint8_t mac[6], uint8_t op, uint16_t flags,
		      uint32_t dst_vi, uint32_t src_vi, uint32_t conn_id, const void *payload,
		      uint16_t len);

/** Payload bytes one frame of @p nic carries: its MTU less the VIA header. */
uint32_t via_dp_frame_payload(const struct via_nic *nic);

/**
 * Adaptive polling (NEED_WAKEUP): tell every client one more poller is
 * about to sleep, then look at shard @p me's doorbells and inbox one last
 * time. Called with the shard's lock held.
 * @return how long the poller may sleep in microseconds, 0 if there is work
 *         (the sleep then does not happen; via_dp_end_sleep() all the same)
 */
uint32_t via_dp_prepare_sleep(struct viad *d, struct via_shard *me);
/** The poller is awake again. @return how many others still sleep */
uint32_t via_dp_end_sleep(struct viad *d);

/** Transmit frames (the NIC's own address: delivered locally); consumes them. */
void via_dp_xmit(struct via_nic *nic, struct rte_mbuf **pkts, uint16_t n);

/** Send an ACK or NAK (no payload; @p seq and @p imm carry its meaning). */
void via_dp_send_xport(struct via_nic *nic, const uint8_t mac[6], uint8_t op, uint16_t flags,
		       uint32_t dst_vi, uint32_t src_vi, uint32_t conn_id, uint32_t seq,
		       uint32_t imm);

/**
 * The connection of @p vi breaks while a message is partly framed: it is
 * held like one framed whole, that would be in flight now (a completion
 * to wait for the peer on Reliable Reception, one in its turn otherwise),
 * so a break reports the same whatever the turns did (rel.c).
 */
void via_dp_tx_cut(struct via_vi *vi);

/** Complete a send descriptor (its region looked up again by handle; with
 *  @p has_desc false it is only counted: it was unusable, POST_DESC said so);
 *  @p status includes the VIP_STATUS_OP_* bits. */
void via_dp_complete_send(struct viad *d, struct via_vi *vi, const struct via_wqe *w,
			  bool has_desc, uint32_t len, uint32_t imm, uint32_t status);

/* ---- rel.c: the reliable levels (VIA §2.5.2, §2.5.3) ------------------- */

/** Whether @p vi is Reliable Delivery or Reliable Reception. */
static inline bool
via_rel_level(const struct via_vi *vi)
{
	return vi->attr.reliability != VIP_SERVICE_UNRELIABLE;
}
/**
 * Whether one more message of the largest size may be taken: a place for
 * its held completion (every level) and, on a reliable level, its frames
 * in the send window.
 */
bool via_sq_room(struct via_vi *vi);
/** Give frame @p m its sequence number and keep it until acknowledged. */
void via_rel_track(struct viad *d, struct via_vi *vi, struct rte_mbuf *m, struct via_wire_hdr *h);
/**
 * Hold a send-queue completion (it waits for @p wait, or only for its turn);
 * the caller has checked via_sq_room(). @p status carries the op bits.
 */
struct via_sq_pending *via_sq_hold(struct via_vi *vi, const struct via_wqe *w,
				   enum via_sq_wait wait, uint32_t len, uint32_t imm,
				   uint32_t status);
/** Whether completions are held: later ones must queue behind them. */
bool via_sq_held(const struct via_vi *vi);
/** Complete the held completions at the head that are ready. */
void via_sq_drain(struct viad *d, struct via_vi *vi);
/**
 * Complete every held completion now: those only waiting for their turn as
 * they are, the first one waiting for the peer with @p status, the rest
 * DESC_FLUSHED (VIA §2.5.3, §4.2).
 */
void via_sq_flush(struct viad *d, struct via_vi *vi, uint32_t status);
/** The held RDMA Read whose answer is @p msg_id, or NULL. */
struct via_sq_pending *via_sq_read(struct via_vi *vi, uint32_t msg_id);
/** Receiver: whether frame @p h is the next in order (else drop it). */
bool via_rel_accept(struct via_vi *vi, const struct via_wire_hdr *h);
/** Receiver: refuse frame @p h with @p status and break the connection. */
void via_rel_nak(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h, uint32_t status,
		 const char *why);
/** An ACK or NAK for @p vi. */
void via_rel_input(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h,
		   struct via_poll_stats *st);
/** Per iteration: send a due ACK, run the retransmission timer. */
void via_rel_poll(struct viad *d, struct via_vi *vi, uint64_t now, struct via_poll_stats *st);
/** Break the connection (VIA §2.5.2): Error state, outstanding sends fail. */
void via_rel_fail(struct viad *d, struct via_vi *vi, uint32_t status, const char *why);
/** Drop the transport state: unacknowledged frames are freed. */
void via_rel_reset(struct via_vi *vi);

/* ---- zc.c: zero-copy transmit from provider memory ------------------- */

/**
 * A tracker for the zero-copy frames of one message of @p vi whose data lies
 * in @p pmem (pinned until the tracker is freed); it holds the framing
 * reference until via_zc_framed().
 * @return the tracker, or NULL (out of memory: the caller copies)
 */
struct via_zc *via_zc_new(struct viad *d, struct via_vi *vi, struct via_pmem *pmem);
/** Whether one more frame into @p pmem may be attached to @p zc. */
bool via_zc_fits(const struct via_zc *zc, const struct via_pmem *pmem);
/**
 * An external-buffer mbuf for @p len bytes at @p va (viad's mapping),
 * counted by @p zc. @return the mbuf, or NULL (out of mbufs)
 */
struct rte_mbuf *via_zc_attach(struct via_zc *zc, void *va, uint16_t len);
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
/** Free shard @p me's spare trackers (shutdown). */
void via_zc_fini(struct via_shard *me);

/** The mbuf pool of every port (nic.c). */
struct rte_mempool *via_nics_pool(void);
/** The pool of zero-copy frames' data segments: mbufs without a data room (nic.c). */
struct rte_mempool *via_nics_zc_pool(void);

/** A CM frame from the wire, already validated (cm.c). */
void via_cm_input(struct viad *d, struct via_nic *nic, const uint8_t *src_mac,
		  const struct via_wire_hdr *h);

/* ---- cm.c: control-thread entry points (return -errno, or VIA_CTL_DEFERRED) */

int via_cm_wait(struct viad *d, struct via_session *s, const struct via_ctl_conn_wait_req *q,
		uint32_t seq, struct via_ctl_conn_wait_rep *rep);
int via_cm_accept(struct viad *d, struct via_session *s, uint32_t conn, uint32_t vi);
int via_cm_reject(struct viad *d, struct via_session *s, uint32_t conn);
int via_cm_request(struct viad *d, struct via_session *s, const struct via_ctl_conn_request_req *q,
		   uint32_t seq);
int via_cm_peer_request(struct viad *d, struct via_session *s,
			const struct via_ctl_conn_request_req *q);
/** @p seq 0: VipConnectPeerDone (-EAGAIN while pending); else PeerWait. */
int via_cm_peer_done(struct viad *d, struct via_session *s, uint32_t vi, uint32_t seq,
		     struct via_ctl_vi_attr *attr);
int via_cm_disconnect(struct viad *d, struct via_session *s, uint32_t vi);
/** The port of @p nic lost its link: every connection on it is lost. */
void via_cm_link_down(struct viad *d, struct via_nic *nic);

/* ---- nic.c ------------------------------------------------------------- */

/**
 * Watch the ports' links (called by the control thread, lock held): a link
 * that went down breaks the connections on its NIC.
 * @return ms until it wants to look again
 */
int via_nics_watch(struct viad *d, uint64_t now);

#endif /* VIA_DP_H */
