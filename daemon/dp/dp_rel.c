/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reliable transport of Reliable Delivery and Reliable Reception VIs
 * (VIA §2.5.2, §2.5.3; docs/wire-format.md "Reliable levels").
 *
 * Go-back-N: every frame of a connection has a sequence number; the
 * receiver takes frames only in order and acknowledges cumulatively (one ACK
 * per VI and poll iteration at most: the next frame it expects); anything
 * out of order or duplicated is dropped and re-acknowledged. The sender
 * keeps a reference to every frame the peer has not received and sends them
 * all again from the oldest when three duplicate ACKs, or the answer to a
 * probe, say the peer lacks them. The retransmission timer only probes: a
 * poll lcore that did not run for a while, the peer's or this one, is no
 * loss, and the peer's answer says what is. The timer backs off
 * exponentially and after rel_max_retries the connection is broken (VIA
 * §2.5.2: "upon detection of any error, the VI transitions to the Error
 * state").
 *
 * Received is not placed: on Reliable Reception a frame behind an RDMA Read
 * of the peer that is not answered yet is taken in order and kept (parked)
 * until the answer is out (§6.3.1.1, dp_resp.c). An ACK says both: the next
 * frame expected (the window's, and retransmission's) and the first frame
 * not placed yet (VIA_WF_PLACED; Reliable Reception completions). The
 * sender keeps what may be parked within a budget (via_rel_room_new),
 * so parking is flow control, never loss.
 *
 * A connection may send at once: the connection manager's handshake
 * (cm.c, wire-format.md 7.8) makes the acceptor Connected only once the
 * requester has acknowledged the acceptance, and routes data that
 * overtakes that acknowledgment to the manager, which delivers it after.
 *
 * Completion: Reliable Delivery completes a send once transmitted; Reliable
 * Reception when the ACK saying its last frame is placed arrives (Table 1):
 * the ACK tells the completer (dp_comp.c), which holds the completions. A
 * broken connection and a refused frame go up as events (struct
 * via_events): the transport calls only the completer and the frame layer
 * below it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>

#include <vipl.h>

#include "dp.h"

#define REL_DUPACKS      3       /* duplicate ACKs that trigger a retransmission */
/* expiries whose probe had no answer before the frames go again all the
 * same (31 ms with the default timeouts): a lost probe, or a peer that
 * never answers one with VIA_WF_REPLY */
#define REL_BLIND_PROBES 5

static uint64_t
us_to_cycles(uint32_t us)
{
	return rte_get_timer_hz() / 1000000 * us;
}

bool
via_rel_room(struct via_vi *vi)
{
	const struct via_vi_rel *r = &vi->rel;
	uint32_t need = via_net_msg_frames(vi);

	/* sized when the VI connected, for its connection (dp_mem.c); not
	 * before the peer is known to be connected (the file's comment) */
	return r->snd_nxt - r->snd_una + need <= r->win_size;
}

/*
 * Whether one more message may follow this VI's RDMA Reads not yet answered:
 * on Reliable Reception the peer keeps what comes behind them (via_rel_park),
 * a window of frames at most.
 */
static bool
room_behind_reads(const struct via_vi *vi)
{
	/* the peer parks what comes behind a read it has not answered: at
	 * most a window of it (via_rel_park) */
	return vi->attr.reliability != VIP_SERVICE_RELIABLE_RECEPTION || vi->sq.reads == 0 ||
	       vi->rel.behind_reads + via_net_msg_frames(vi) <= via_net_queue_size(vi);
}

bool
via_rel_room_new(struct via_vi *vi)
{
	return via_rel_room(vi) && room_behind_reads(vi);
}

void
via_rel_track(struct viad *d, struct via_vi *vi, struct rte_mbuf **pkts, uint16_t n)
{
	struct via_vi_rel *r = &vi->rel;
	uint16_t i;

	for (i = 0; i < n; i++) {
		struct via_wire_hdr *h = rte_pktmbuf_mtod_offset(pkts[i], struct via_wire_hdr *,
								 RTE_ETHER_HDR_LEN);

		via_wire_set_seq(h, r->snd_nxt);
		/* what the peer may park (via_rel_room_new); the
		 * answers to its own reads it never does */
		if (vi->sq.reads == 0)
			r->behind_reads = 0;
		else if (h->opcode != VIA_OP_RDMA_READ_RESP)
			r->behind_reads++;
		/* the port frees its reference once the frame is out; ours
		 * stays for a retransmission until the frame is acknowledged:
		 * on every segment, or the port's free would take a zero-copy
		 * frame's data segment */
		rte_pktmbuf_refcnt_update(pkts[i], 1);
		r->win[r->snd_nxt & (r->win_size - 1)] = pkts[i];
		if (r->snd_nxt == r->snd_una) {
			r->rto_us = d->conf.rel_rto_min_us;
			r->rto_at = rte_get_timer_cycles() + us_to_cycles(r->rto_us);
		}
		r->snd_nxt++;
	}
}

/* ACK and NAK carry no payload: @p seq, @p status (in imm) and @p token (in
 * msg_id) say what they mean */
static void
send_xport(struct via_vi *vi, struct via_wire_hdr h, uint32_t seq, uint32_t status,
	   uint32_t token)
{
	via_wire_set_seq(&h, seq);
	via_wire_set_imm(&h, status);
	via_wire_set_msg_id(&h, token);
	via_net_send_peer(vi, &h);
}

static const struct via_wire_hdr *
frame_hdr(const struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod_offset(m, const struct via_wire_hdr *, RTE_ETHER_HDR_LEN);
}

/*
 * Receiver: the ACK of where we are: the next frame expected, and the
 * first one not placed yet (the oldest parked). A probe's @p token is the
 * prober's next sequence number, which its answer echoes.
 */
static void
send_ack(struct via_vi *vi, uint16_t flags, uint32_t token)
{
	const struct via_vi_rel *r = &vi->rel;
	uint32_t placed = r->park_head != r->park_tail
				  ? via_wire_seq(frame_hdr(r->park[r->park_head & (r->park_size - 1)]))
				  : r->rcv_nxt;

	send_xport(vi, via_net_peer_hdr(vi, VIA_OP_ACK, flags | VIA_WF_PLACED), r->rcv_nxt, placed,
		   token);
}

/* Ask the peer where it is: its answer (VIA_WF_REPLY) says what it lacks of
 * what was sent so far. */
static void
probe(struct via_vi *vi)
{
	struct via_vi_rel *r = &vi->rel;

	r->probing = true;
	r->probe_nxt = r->snd_nxt;
	send_ack(vi, VIA_WF_PROBE, r->probe_nxt);
}

static void
heard(struct via_vi_rel *r)
{
	r->heard_at = rte_get_timer_cycles();
}

/* Free the frames the peer received. */
static void
acked(struct viad *d, struct via_vi *vi, uint32_t ack)
{
	struct via_vi_rel *r = &vi->rel;

	while (r->snd_una != ack) {
		struct rte_mbuf **slot = &r->win[r->snd_una & (r->win_size - 1)];

		rte_pktmbuf_free(*slot);
		*slot = NULL;
		r->snd_una++;
	}
	r->retries = 0;
	r->dupacks = 0;
	r->recovering = false;
	r->probing = false;
	r->rto_us = d->conf.rel_rto_min_us;
	r->rto_at = r->snd_una == r->snd_nxt ? 0
		    : rte_get_timer_cycles() + us_to_cycles(r->rto_us);
}

/* The peer placed every frame before @p placed: the Reliable Reception
 * sends they finish complete. Only frames it received can be placed.
 * @return whether that is news */
static bool
peer_placed(struct viad *d, struct via_vi *vi, uint32_t placed)
{
	struct via_vi_rel *r = &vi->rel;

	if ((int32_t)(placed - r->snd_placed) <= 0 || (int32_t)(r->snd_una - placed) < 0)
		return false;
	r->snd_placed = placed;
	via_sq_acked(d, vi, placed);
	return true;
}

/* Go back N: send every unacknowledged frame again, oldest first. */
static void
retransmit(struct via_vi *vi, struct via_poll_stats *st)
{
	struct via_vi_rel *r = &vi->rel;
	uint32_t seq;

	for (seq = r->snd_una; seq != r->snd_nxt; seq++) {
		struct rte_mbuf *m = r->win[seq & (r->win_size - 1)];

		rte_pktmbuf_refcnt_update(m, 1);     /* every segment, as in via_rel_track() */
		via_dp_xmit(vi->owner->nic, &m, 1);
		st->frames_retransmitted++;
	}
}

void
via_rel_fail(struct viad *d, struct via_vi *vi, const char *why)
{
	VLOG_INFO("VI %u: connection broken: %s", vi->id, why);
	d->ev.conn_broken(d, vi, why);
}

bool
via_rel_accept(struct via_vi *vi, const struct via_wire_hdr *h)
{
	struct via_vi_rel *r = &vi->rel;

	/* in order or not at all; either way the sender hears where we are */
	r->ack_due = true;
	heard(r);
	if (via_wire_seq(h) != r->rcv_nxt) {
		/* a gap: say so at once, not once per iteration, so that the
		 * sender's duplicate ACKs add up before its timer does */
		if ((int32_t)(via_wire_seq(h) - r->rcv_nxt) > 0) {
			via_dp_stats()->frames_out_of_order++;
			send_ack(vi, 0, 0);
		} else {
			via_dp_stats()->frames_duplicate++;
		}
		return false;
	}
	r->rcv_nxt++;
	return true;
}

bool
via_rel_park(struct via_vi *vi, const struct via_wire_hdr *h, struct rte_mbuf *m)
{
	struct via_vi_rel *r = &vi->rel;

	/* made when the VI connected (dp_mem.c), as large as the sender keeps
	 * behind its reads (via_rel_room_new); full only with a peer that does
	 * not keep to the budget: not taken, it comes again */
	if (r->park_tail - r->park_head == r->park_size || !via_rel_accept(vi, h))
		return false;
	rte_pktmbuf_refcnt_update(m, 1);
	r->park[r->park_tail++ & (r->park_size - 1)] = m;
	return true;
}

struct rte_mbuf *
via_rel_unpark(struct via_vi *vi)
{
	struct via_vi_rel *r = &vi->rel;
	struct rte_mbuf **slot;
	struct rte_mbuf *m;

	if (r->park_head == r->park_tail)
		return NULL;
	slot = &r->park[r->park_head++ & (r->park_size - 1)];
	m = *slot;
	*slot = NULL;
	r->ack_due = true;          /* the sender learns it is placed */
	return m;
}

void
via_rel_nak(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h, uint32_t status,
	    const char *why)
{
	send_xport(vi, via_net_peer_hdr(vi, VIA_OP_NAK, 0), via_wire_seq(h), status, 0);
	vi->rel.ack_due = false;
	/* here the connection is lost; the cause is the peer's to report */
	via_rel_fail(d, vi, why);
}

void
via_rel_input(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h,
	      struct via_poll_stats *st)
{
	struct via_vi_rel *r = &vi->rel;
	uint32_t ack = via_wire_seq(h);
	uint16_t flags = via_wire_flags(h);
	bool progress, placed;

	if (!via_rel_level(vi))
		return;
	heard(r);
	if (flags & VIA_WF_PROBE) {
		r->ack_due = true;              /* a probe: answer it */
		r->reply_due = true;
		r->reply_token = via_wire_msg_id(h);
	}
	if (r->probing && r->snd_una == r->snd_nxt) {
		/* nothing outstanding: a keepalive, and the peer is there */
		r->probing = false;
		r->retries = 0;
		r->rto_at = 0;
	}
	if (r->win == NULL)
		return;
	st->naks_rx += h->opcode == VIA_OP_NAK;
	if (h->opcode == VIA_OP_NAK) {
		uint32_t status = via_wire_imm(h);
		uint32_t err = status & VIP_STATUS_ERROR_MASK, op = status & VIP_STATUS_OP_MASK;
		struct via_sq_pending *p;

		/* the receiver could not take frame seq: everything before it
		 * arrived and was placed, that one and what follows did not */
		if ((int32_t)(ack - r->snd_una) >= 0 && (int32_t)(r->snd_nxt - ack) > 0)
			acked(d, vi, ack);
		peer_placed(d, vi, ack);
		d->ev.tx_cut(vi);
		/* §10.2: the refusal is the operation's that sent frame seq, not
		 * whichever completion waits first (an RDMA Read there has its
		 * own answer to wait for) */
		p = via_sq_of_seq(vi, ack);
		if (p != NULL)
			p->status |= err ? err : VIP_STATUS_REMOTE_DESC_ERROR;
		else if (op == VIP_STATUS_OP_RDMA_WRITE && !(status & VIP_STATUS_IMMEDIATE))
			/* a Reliable Delivery write completed already (§2.5.2): its
			 * remote protection error goes to the error handler
			 * (§9.9.1); with immediate data the target's receive
			 * descriptor carries it */
			via_session_async_error(vi->owner, VIP_ERROR_RDMAW_PROT, vi->cookie,
						VIP_RESOURCE_VI, op, 0);
		/* what else waits was cut off by the break: TRANSPORT_ERROR is
		 * valid for it at both levels (§10.2 bit 6) */
		via_rel_fail(d, vi, "the receiver refused a frame");
		return;
	}
	/* a valid cumulative ACK lies in (snd_una, snd_nxt] */
	progress = (int32_t)(ack - r->snd_una) > 0 && (int32_t)(r->snd_nxt - ack) >= 0;
	if (progress)
		acked(d, vi, ack);
	/* an older viad says nothing of placing: it placed what it received */
	placed = peer_placed(d, vi, flags & VIA_WF_PLACED ? via_wire_imm(h) : ack);
	/* a duplicate says the receiver got a frame out of order or twice:
	 * not a probe or its answer, nor news of placing */
	if (!progress && !placed && !(flags & (VIA_WF_PROBE | VIA_WF_REPLY)) &&
	    ack == r->snd_una && r->snd_una != r->snd_nxt && !r->recovering &&
	    ++r->dupacks == REL_DUPACKS) {
		/* the receiver misses snd_una: no need to wait for the timer;
		 * once per loss, the next duplicates are of the same gap */
		r->dupacks = 0;
		r->recovering = true;
		retransmit(vi, st);
	}
	if (flags & VIA_WF_REPLY) {
		/* the peer took that probe after every frame sent before it
		 * (its token, our snd_nxt then): those it still lacks were lost */
		uint32_t token = via_wire_msg_id(h);

		if (token == r->probe_nxt)
			r->probing = false;
		if ((int32_t)(token - r->snd_una) > 0 && (int32_t)(r->snd_nxt - token) >= 0 &&
		    !r->recovering) {
			r->recovering = true;
			retransmit(vi, st);
		}
	}
}

void
via_rel_poll(struct viad *d, struct via_vi *vi, uint64_t now, struct via_poll_stats *st)
{
	struct via_vi_rel *r = &vi->rel;

	if (r->ack_due) {
		send_ack(vi, r->reply_due ? VIA_WF_REPLY : 0, r->reply_due ? r->reply_token : 0);
		r->ack_due = false;
		r->reply_due = false;
	}
	if (r->rto_at == 0 && !r->probing &&
	    now - r->heard_at > rte_get_timer_hz() / 1000 * d->conf.rel_keepalive_ms) {
		/* silence on an idle connection: is the peer there? */
		r->rto_us = d->conf.rel_rto_min_us;
		r->rto_at = now + us_to_cycles(r->rto_us);
		probe(vi);
		return;
	}
	if (r->rto_at == 0 || now < r->rto_at)
		return;
	if (++r->retries > d->conf.rel_max_retries) {
		/* VIA §2.5.2: a transfer is lost; the peer is gone or cut off -
		 * once it was silent rel_silence_ms too: a peer viad upgrading
		 * is silent for its blackout (docs/design.md section 18), and
		 * keeps resending at the longest timeout meanwhile */
		if (now - r->heard_at >= rte_get_timer_hz() / 1000 * d->conf.rel_silence_ms) {
			via_rel_fail(d, vi, "retransmissions exhausted");
			return;
		}
		r->retries = (uint8_t)d->conf.rel_max_retries;
	}
	st->rto_expiries++;
	r->recovering = false;
	/* no answer in time: ask what the peer lacks (its reply goes back N,
	 * via_rel_input); after REL_BLIND_PROBES unanswered probes go back N
	 * all the same */
	if (r->snd_una != r->snd_nxt && r->probing && r->retries > REL_BLIND_PROBES)
		retransmit(vi, st);
	probe(vi);
	r->rto_us = RTE_MIN(r->rto_us * 2, d->conf.rel_rto_max_us);
	r->rto_at = now + us_to_cycles(r->rto_us);
}

void
via_rel_reset(struct via_vi *vi)
{
	struct via_vi_rel *r = &vi->rel;

	if (r->win != NULL) {
		for (; r->snd_una != r->snd_nxt; r->snd_una++) {
			struct rte_mbuf **slot = &r->win[r->snd_una & (r->win_size - 1)];

			rte_pktmbuf_free(*slot);
			*slot = NULL;
		}
	}
	while (r->park_head != r->park_tail)
		rte_pktmbuf_free(via_rel_unpark(vi));
	r->snd_una = r->snd_nxt = r->snd_placed = r->rcv_nxt = 0;
	r->park_head = r->park_tail = 0;
	r->behind_reads = 0;
	r->rto_at = 0;
	r->retries = r->dupacks = 0;
	r->recovering = false;
	r->ack_due = false;
	r->reply_due = false;
	r->probing = false;
	r->heard_at = rte_get_timer_cycles();
}

void
via_rel_resume(struct viad *d, struct via_vi *vi)
{
	struct via_vi_rel *r = &vi->rel;
	uint64_t now = rte_get_timer_cycles();
	unsigned i;

	/* the blackout was ours: the peer's silence counts from now */
	r->heard_at = now;
	r->retries = 0;
	r->dupacks = 0;
	r->recovering = false;
	r->probing = false;
	r->rto_us = d->conf.rel_rto_min_us;
	r->rto_at = r->snd_una != r->snd_nxt ? now : 0;
	/* what the peer sent during the blackout was lost here: tell it
	 * where we are, as many times as its fast retransmission wants
	 * (wire-format.md 11.4), so that it sends again without waiting for
	 * its timer, backed off by then */
	for (i = 0; i < REL_DUPACKS; i++)
		send_ack(vi, 0, 0);
	r->ack_due = false;
}
