/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data path's poll iteration (VIA §11: the NIC engine, once per shard)
 * and the top of its layers (dp.h lists them): the VIs whose doorbell rang
 * get their turn (the requester's messages, the responder's Read answers),
 * received frames go to the responder, the connection manager's to the
 * control thread. Flush and reset of a VI, and the events the layers below
 * hand up (struct via_events), are handled here.
 *
 * The walk of a send descriptor and of a received frame through the files
 * is in docs/design.md, "The daemon's files".
 */
#include <errno.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ring.h>

#include <vipl.h>

#include "dp.h"

#define DP_SEND_QUANTUM 16384  /* bytes per VI per turn (deficit round robin) */
#define INBOX_ROUNDS    8      /* inbox bursts per iteration */
#define DP_POLLED_MAX   64     /* send rings a shard polls without doorbells */
#define DP_POLLED_US    50     /* how long after a VI's last send */

static uint64_t polled_cycles; /* DP_POLLED_US in timer cycles */

/*
 * VIA §11.2.2.1: the VIs whose doorbell rang are served in turn, by deficit
 * round robin over bytes (Shreedhar and Varghese, 1995): each turn adds a
 * quantum to the VI's deficit and it sends while the deficit is positive
 * (the requester's turn, via_req_turn), so a VI of 64 KiB messages and one
 * of 64 B messages get the same bytes per round, not the same number of
 * descriptors. A message is never held back for being larger than the
 * quantum: it goes, and leaves the deficit negative, repaid over the next
 * turns while the VI waits.
 */
static unsigned
vi_send(struct viad *d, struct via_vi *vi)
{
	unsigned work;

	/* capped: a VI held back by the port gathers no credit meanwhile */
	vi->tx_deficit = RTE_MIN(vi->tx_deficit + DP_SEND_QUANTUM, (int64_t)DP_SEND_QUANTUM);
	work = via_req_turn(d, vi);
	/* an empty queue keeps no credit, only its debt */
	if (via_ring_avail(&vi->wq[VIA_WQ_SEND]) == 0 && !vi->tx.active && vi->tx_deficit > 0)
		vi->tx_deficit = 0;
	return work;
}

/*
 * Polled send queues (via_abi.h, "Wake-up contract", pair 6). A VI whose
 * turn sent something has its send ring's producer index loaded at every
 * iteration for DP_POLLED_US after, and its ring's polled word says so: the
 * library's posts then ring no doorbell. A post touches one shared line
 * instead of three (producer index, doorbell word, summary word), and viad
 * finds it with one load instead of three dependent ones: a summary, a
 * word, an index. At most DP_POLLED_MAX per shard, so that an iteration
 * stays short; the other VIs have their doorbells.
 */
static void
polled_keep(struct via_vi *vi, uint64_t now)
{
	struct via_shard *me = vi->shard;

	vi->polled_until = now + polled_cycles;
	if (vi->polled_listed || me->nb_polled == DP_POLLED_MAX)
		return;
	TAILQ_INSERT_TAIL(&me->polled_vis, vi, polled_link);
	vi->polled_listed = true;
	me->nb_polled++;
	via_ring_set_polled(&vi->wq[VIA_WQ_SEND], true);
}

/* Back to doorbells. @return whether a post came meanwhile (the last look) */
static bool
polled_stop(struct via_vi *vi)
{
	TAILQ_REMOVE(&vi->shard->polled_vis, vi, polled_link);
	vi->polled_listed = false;
	vi->shard->nb_polled--;
	via_ring_set_polled(&vi->wq[VIA_WQ_SEND], false);
	return via_ring_avail(&vi->wq[VIA_WQ_SEND]) > 0;
}

bool
via_dp_polled_stop_all(struct via_shard *me)
{
	uint64_t now = rte_get_timer_cycles();
	unsigned n = me->nb_polled;
	bool posted = false;

	/* each VI once: one whose last look finds posts was posted to while
	 * its ring said polled, so no doorbell rang for it; it stays polled
	 * (at the tail), or nothing would ever serve those posts */
	while (n-- > 0) {
		struct via_vi *vi = TAILQ_FIRST(&me->polled_vis);

		if (polled_stop(vi)) {
			polled_keep(vi, now);
			posted = true;
		}
	}
	return posted;
}

/*
 * The receive entry a message of @p vi will take, when its peer is a VI of
 * this viad with line entries: fetched now, while the turn frames the
 * message, instead of when the frame is delivered (the client wrote it
 * when it posted the receive, long before). Its address needs nothing of
 * the client's: the peer's own consumer index.
 */
static void
peer_recv_prefetch(struct viad *d, const struct via_vi *vi)
{
	struct via_vi *peer;

	if (vi->state != VIP_STATE_CONNECTED || !via_net_to_self(vi->owner->nic, vi->conn.remote_mac))
		return;
	peer = via_idtab_lookup(&d->vis, vi->conn.remote_vi);
	if (peer != NULL && via_vi_lines(peer))
		rte_prefetch0(via_ring_peek(&peer->wq[VIA_WQ_RECV], 0));
}

/* A VI whose doorbell rang, or whose polled send ring has posts: its send
 * queue, and what else waits for it. */
static unsigned
vi_visit(struct viad *d, struct via_vi *vi, uint64_t now)
{
	unsigned work;

	vi->turn_iteration = vi->shard->iteration;

	/* the next send slot's line, fetched while vi_send() waits for the
	 * producer index's (its address needs no index of the client's); a
	 * line entry is its own index, and its inline data the next line,
	 * fetched side by side instead of one after the other */
	rte_prefetch0(via_ring_peek(&vi->wq[VIA_WQ_SEND], 0));
	if (vi->entry_size > VIA_WQE_LINE_SIZE)
		rte_prefetch0((const uint8_t *)via_ring_peek(&vi->wq[VIA_WQ_SEND], 0) +
			      VIA_WQE_LINE_SIZE);
	if (via_vi_lines(vi))
		peer_recv_prefetch(d, vi);
	/* VIA §5.4: whatever is posted to a VI in Error completes in error,
	 * receives included */
	if (vi->state == VIP_STATE_ERROR && via_ring_avail(&vi->wq[VIA_WQ_RECV]) > 0)
		via_dp_flush(d, vi);
	work = vi_send(d, vi);
	if (work > 0 && vi->state == VIP_STATE_CONNECTED)
		polled_keep(vi, now);
	/* work left (waiting its turn counts: the poller must not doze) */
	if (via_ring_avail(&vi->wq[VIA_WQ_SEND]) > 0 || vi->tx.active ||
	    vi->answers.head != vi->answers.tail) {
		via_dp_ring_again(vi);
		work++;
	}
	return work;
}

/* A frame for a VI of this shard, checked. @return whether it was handed on
 * (else the caller frees it) */
static bool
rx_deliver(struct viad *d, struct via_nic *nic, struct rte_mbuf *m, struct via_poll_stats *st)
{
	const struct via_wire_hdr *h = rte_pktmbuf_mtod_offset(m, const struct via_wire_hdr *,
								RTE_ETHER_HDR_LEN);

	if ((via_wire_ops[h->opcode].flags & VIA_OPF_CM) || via_cm_wants_frame(d, h)) {
		/* after the VI's earlier frames; the CM runs on the control thread */
		if (via_net_hand_over(d, nic, d->cm_inbox, &m, 1) == 1)
			return true;
		st->frames_dropped++;
	} else {
		via_resp_input(d, nic, m, st);
	}
	return false;
}

/*
 * A burst of frames from @p nic's receive queue of shard @p me: checked,
 * then taken here, or handed to the shard of their VI or to the control
 * thread (connection manager). @return how many
 */
static unsigned
rx_port(struct viad *d, struct via_shard *me, struct via_nic *nic, struct via_poll_stats *st)
{
	struct rte_mbuf *pkts[VIA_DP_BURST];
	uint16_t k, n = via_net_rx_burst(nic, (uint16_t)me->index, pkts, st);

	for (k = 0; k < n; k++) {
		struct rte_mbuf *m = pkts[k];
		struct rte_ring *to;

		if (!via_net_rx_check(nic, m, st) || !via_cm_admit(d, nic, m, st)) {
			rte_pktmbuf_free(m);
			continue;
		}
		to = via_net_route(d, m);
		if (to == me->inbox) {
			if (!rx_deliver(d, nic, m, st))
				rte_pktmbuf_free(m);
		} else if (via_net_hand_over(d, nic, to, &m, 1) == 0) {
			st->frames_dropped++;
			rte_pktmbuf_free(m);
		}
	}
	return n;
}

/* Frames other shards (or this one, sending to its own NIC) handed over. */
static unsigned
rx_inbox(struct viad *d, struct via_shard *me, struct via_poll_stats *st)
{
	struct rte_mbuf *pkts[VIA_DP_BURST];
	unsigned rounds = 0, n, k, work = 0;

	/* a few bursts: one message can be many frames */
	do {
		n = rte_ring_dequeue_burst(me->inbox, (void **)pkts, VIA_DP_BURST, NULL);
		for (k = 0; k < n; k++) {
			if (!rx_deliver(d, &d->nics[pkts[k]->port], pkts[k], st))
				rte_pktmbuf_free(pkts[k]);
		}
		work += n;
	} while (n == VIA_DP_BURST && ++rounds < INBOX_ROUNDS);
	return work;
}

void
via_dp_vi_reset(struct via_vi *vi)
{
	struct via_dp_seg *segs = vi->rx.segs;
	struct via_vi_reads *a = &vi->answers;

	via_rel_reset(vi);
	via_sq_reset(vi);
	for (; a->head != a->tail; a->head++)
		via_zc_drop(&a->q[a->head % VIA_MAX_READS].msg.zc);
	a->head = a->tail = 0;
	memset(&vi->rx, 0, sizeof(vi->rx));
	vi->rx.segs = segs;
	via_zc_drop(&vi->tx.msg.zc);
	vi->tx.active = false;
	vi->tx_msg_id = 0;
	vi->tx_seq = 0;
}

void
via_dp_flush(struct viad *d, struct via_vi *vi)
{
	enum via_wq_kind q;

	/* the oldest first: what the send queue holds back, then the message
	 * being framed, precede its ring */
	via_sq_flush(d, vi, -ECANCELED);
	via_req_flush(d, vi);
	via_resp_flush(d, vi);
	for (q = 0; q < VIA_WQ_COUNT; q++) {
		struct via_ring *r = &vi->wq[q];

		while (via_ring_avail(r) > 0) {
			const struct via_mr *mr;
			struct via_wqe w;

			via_desc_take(vi, q, &w);
			mr = via_desc_region(d, vi, q, &w, VIP_ERROR_POST_DESC);
			via_dp_complete(vi, q, &w, mr,
					(struct via_dp_done){
						.status = via_comp_status(-ECANCELED) |
							  via_desc_flushed_op(vi, q, &w, mr) });
		}
	}
	via_dp_vi_reset(vi);
}

/*
 * The doorbells of summary word @p j of session @p s that are this shard's
 * (its words only: the others' VIs are not its own): take each word whose
 * summary bit is set, visit the VIs whose bits are. A word beyond the
 * session's is not looked at (a client may set any summary bit); one
 * without a VI is emptied all the same, or its stale bits would keep a
 * later post from setting the summary bit again.
 */
static unsigned
bells_take(struct viad *d, struct via_shard *me, struct via_session *s, uint32_t j, uint64_t now)
{
	uint64_t mine = me->bell_masks[j], sum;
	unsigned work = 0;

	sum = __atomic_load_n(&s->bell_summary[j], __ATOMIC_RELAXED) & mine;
	if (sum == 0)
		return 0;
	/* the doorbell words the summary names, fetched while the locked
	 * fetch-and below waits to own the summary's line: the two transfers
	 * from the client's core overlap instead of following each other */
	for (; sum != 0; sum &= sum - 1) {
		uint32_t i = j * 64 + (uint32_t)__builtin_ctzll(sum);

		if (i < s->bell_words)
			rte_prefetch0(&s->bells[i]);
	}
	sum = __atomic_fetch_and(&s->bell_summary[j], ~mine, __ATOMIC_ACQUIRE) & mine;
	while (sum != 0) {
		uint32_t i = j * 64 + (uint32_t)__builtin_ctzll(sum);
		uint64_t w;

		sum &= sum - 1;
		if (i >= s->bell_words)
			continue;
		w = __atomic_exchange_n(&s->bells[i], 0, __ATOMIC_ACQUIRE);
		while (w != 0) {
			struct via_vi *vi = s->by_bell[i * 64 + (uint32_t)__builtin_ctzll(w)];

			w &= w - 1;
			if (vi != NULL)
				work += vi_visit(d, vi, now);
		}
	}
	return work;
}

/*
 * The send rings this shard polls, after the VIs whose doorbell rang: a
 * turn for each with posts that had none yet in this iteration; the others
 * go back to doorbells once their time is up. The first of the list goes
 * last for the next iteration: round robin among them, so that none takes
 * the port's room before the others every time (VIA §11.2.2.1).
 */
static unsigned
polled_visit(struct viad *d, struct via_shard *me, uint64_t now)
{
	struct via_vi *vi, *next;
	unsigned work = 0;

	TAILQ_FOREACH_SAFE(vi, &me->polled_vis, polled_link, next) {
		if (vi->turn_iteration == me->iteration)
			continue;
		if (via_ring_avail(&vi->wq[VIA_WQ_SEND]) > 0 ||
		    ((int64_t)(now - vi->polled_until) > 0 && polled_stop(vi)))
			work += vi_visit(d, vi, now);
	}
	if (me->nb_polled > 1) {
		vi = TAILQ_FIRST(&me->polled_vis);
		TAILQ_REMOVE(&me->polled_vis, vi, polled_link);
		TAILQ_INSERT_TAIL(&me->polled_vis, vi, polled_link);
	}
	return work;
}

unsigned
via_dp_poll(struct viad *d, struct via_shard *me, struct via_poll_stats *st)
{
	struct via_session *s;
	struct via_vi *vi, *next;
	unsigned i, work = 0;
	uint64_t now;

	me->iteration++;
	via_net_enter(me, st);
	/* completions in a burst: their wait words once per queue, at the end */
	me->batch = true;
	/* sends whose frames were freed since (zero copy) complete first */
	work += via_zc_reap(d, me);
	for (i = 0; i < d->nb_nics; i++) {
		struct via_nic *nic = &d->nics[i];

		/* port receive queue N belongs to shard N */
		if (me->index < via_port_nb_rxq(nic->port))
			work += rx_port(d, me, nic, st);
		if (me->index == 0)
			work += via_net_tx_poll(nic, st);
	}
	work += rx_inbox(d, me, st);
	/* VIA §11.2.2.1: the VIs whose doorbell rang get a bounded turn each,
	 * so idle VIs cost nothing; connected reliable VIs also run their
	 * timers and acknowledgments every iteration */
	now = rte_get_timer_cycles();
	TAILQ_FOREACH_SAFE(vi, &me->rel_vis, rel_link, next)
		via_rel_poll(d, vi, now, st);
	TAILQ_FOREACH(s, &d->session_list, link) {
		if (!s->opened)
			continue;
		for (i = 0; i < via_bell_summary_words(s->bell_words_live); i++)
			work += bells_take(d, me, s, i, now);
	}
	work += polled_visit(d, me, now);
	/* frames the turns just sent to VIs of this shard (one viad's own
	 * VIs talking) are delivered now, not an iteration later */
	if (!rte_ring_empty(me->inbox))
		work += rx_inbox(d, me, st);
	if (me->nb_owed != 0)
		via_dp_complete_flush(me);
	me->batch = false;
	return work;
}

/* ---- events handed up (struct via_events) ---------------------------------- */

/*
 * VIA §2.5.2: "upon detection of any error, the VI transitions to the Error
 * state": the message being framed is held like one framed whole, the
 * held completions fail (the first with a transport error, §2.5.3: the
 * valid one at both reliable levels, §10.2 bit 6), the peer is told,
 * should it be there to hear it, and both queues are flushed.
 */
static void
conn_broken(struct viad *d, struct via_vi *vi, const char *why)
{
	const struct via_wire_hdr disc = via_net_peer_hdr(vi, VIA_OP_DISC, 0);

	via_req_cut(vi);
	via_vi_set_state(vi, VIP_STATE_ERROR, why);
	via_sq_flush(d, vi, -ENOBUFS);
	via_net_send_peer(vi, &disc);
	via_dp_flush(d, vi);
	via_session_async_error(vi->owner, VIP_ERROR_CONN_LOST, vi->cookie, VIP_RESOURCE_VI, 0, 0);
}

int
via_dp_init(struct viad *d)
{
	d->ev.conn_broken = conn_broken;
	d->ev.tx_cut = via_req_cut;
	d->ev.sq_released = via_sq_drain;
	d->ev.conn_ended = via_dp_flush;
	d->ev.conn_reset = via_dp_vi_reset;
	polled_cycles = rte_get_timer_hz() / 1000000 * DP_POLLED_US;
	return via_net_init(d) == 0 && via_dp_mem_init(d) == 0 ? 0 : -ENOMEM;
}

void
via_dp_fini(struct viad *d)
{
	unsigned i;

	via_net_fini(d);
	/* the frames the lcores sent are freed: their trackers go back (those a
	 * port still holds go with the port, main.c) */
	for (i = 0; i < d->nb_shards; i++)
		via_zc_reap(d, &d->shards[i]);
	via_pmem_reap();
	via_dp_mem_fini(d);
}
