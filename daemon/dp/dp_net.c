/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frames in and out (the lowest layer of the data path, as rxe_net.c):
 * a port's transmit queue and the backlog of what it did not take yet, the
 * shards' and the control thread's inboxes, frames to the NIC's own address
 * handed over in memory, the frames of the connection manager and the
 * transport, and the first check of a received frame. It calls only the
 * glue (via_glue.h) and capture.c.
 */
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_ether.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include "capture.h"
#include "dp.h"

#define DP_TX_RETRIES   64
#define INBOX_SIZE      4096   /* frames handed to a shard or the control thread */
#define BACKLOG_SIZE    8192   /* frames held while the port is busy */

_Static_assert(sizeof(struct via_wire_hdr) == VIA_WIRE_HDR_LEN, "viad.h knows its size");

/* The inbox of the shard this lcore runs (NULL: the control thread). */
static RTE_DEFINE_PER_LCORE(struct rte_ring *, cur_inbox);

/* Counters of the lcore that runs the data path: a poll lcore's own, or
 * (NULL) the control thread's while it flushes or sends CM frames. */
static struct via_poll_stats ctl_stats;
static RTE_DEFINE_PER_LCORE(struct via_poll_stats *, cur_stats);

struct via_poll_stats *
via_dp_stats(void)
{
	struct via_poll_stats *st = RTE_PER_LCORE(cur_stats);

	return st != NULL ? st : &ctl_stats;
}

void
via_net_enter(struct via_shard *me, struct via_poll_stats *st)
{
	RTE_PER_LCORE(cur_stats) = st;
	RTE_PER_LCORE(cur_inbox) = me != NULL ? me->inbox : NULL;
}

int
via_net_init(struct viad *d)
{
	char name[RTE_RING_NAMESIZE];
	unsigned i;

	for (i = 0; i < d->nb_nics; i++) {
		snprintf(name, sizeof(name), "via_backlog_%u", i);
		/* producers and the consumer all hold the NIC's tx_lock */
		d->nics[i].backlog = rte_ring_create(name, BACKLOG_SIZE, (int)rte_socket_id(),
						     RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (d->nics[i].backlog == NULL)
			return -ENOMEM;
	}
	for (i = 0; i < d->nb_shards; i++) {
		struct via_shard *sh = &d->shards[i];

		snprintf(name, sizeof(name), "via_inbox_%u", i);
		/* any shard and the control thread hand frames in; one takes them */
		sh->inbox = rte_ring_create(name, INBOX_SIZE, (int)rte_socket_id(),
					    RING_F_SC_DEQ);
		if (sh->inbox == NULL)
			return -ENOMEM;
		sh->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (sh->wake_fd < 0)
			return -errno;
	}
	d->cm_inbox = rte_ring_create("via_cm_inbox", INBOX_SIZE, (int)rte_socket_id(),
				      RING_F_SC_DEQ);
	return d->cm_inbox == NULL ? -ENOMEM : 0;
}

static void
ring_drop(struct rte_ring **r)
{
	struct rte_mbuf *m;

	if (*r == NULL)
		return;
	while (rte_ring_dequeue(*r, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	rte_ring_free(*r);
	*r = NULL;
}

void
via_net_fini(struct viad *d)
{
	unsigned i;

	for (i = 0; i < d->nb_nics; i++)
		ring_drop(&d->nics[i].backlog);
	for (i = 0; i < d->nb_shards; i++) {
		ring_drop(&d->shards[i].inbox);
		if (d->shards[i].wake_fd >= 0)
			close(d->shards[i].wake_fd);
		d->shards[i].wake_fd = -1;
	}
	ring_drop(&d->cm_inbox);
}

uint32_t
via_dp_frame_payload(const struct via_nic *nic)
{
	uint32_t room = rte_pktmbuf_data_room_size(via_nics_pool()) - RTE_PKTMBUF_HEADROOM;
	uint32_t mtu = RTE_MIN((uint32_t)via_port_mtu(nic->port), room - RTE_ETHER_HDR_LEN);

	return mtu - (uint32_t)sizeof(struct via_wire_hdr);
}

/* Hand frames to the port; what it does not take now waits in order. */
static uint16_t
port_tx(struct via_nic *nic, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t sent = 0, tries = 0;

	/* a port started again and not connected yet (nic.c) takes nothing */
	if (nic->stopped)
		return 0;
	while (sent < n && tries++ < DP_TX_RETRIES)
		sent += via_port_tx_burst(nic->port, 0, pkts + sent, (uint16_t)(n - sent));
	return sent;
}

/* Send what waits in the backlog, oldest first (tx_lock held). @return frames left. */
static unsigned
backlog_flush(struct via_nic *nic, struct via_poll_stats *st)
{
	struct rte_mbuf *pkts[VIA_DP_BURST];
	unsigned n;

	while ((n = rte_ring_dequeue_burst_start(nic->backlog, (void **)pkts, VIA_DP_BURST,
						 NULL)) > 0) {
		uint16_t sent = port_tx(nic, pkts, (uint16_t)n);

		rte_ring_dequeue_finish(nic->backlog, sent);
		st->frames_tx += sent;
		if (sent < n)
			break;
	}
	return rte_ring_count(nic->backlog);
}

/* Whether frame @p m is for the connection manager. */
static inline bool
frame_is_cm(const struct rte_mbuf *m)
{
	const struct via_wire_hdr *h = rte_pktmbuf_mtod_offset(m, const struct via_wire_hdr *,
								RTE_ETHER_HDR_LEN);

	return via_wire_ops[h->opcode].flags & VIA_OPF_CM;
}

/* A VI's CM frames take its shard's inbox too: a NAK stays before the DISC
 * that follows it. */
struct rte_ring *
via_net_route(struct viad *d, const struct rte_mbuf *m)
{
	const struct via_wire_hdr *h = rte_pktmbuf_mtod_offset(m, const struct via_wire_hdr *,
								RTE_ETHER_HDR_LEN);
	const struct via_vi *vi = via_idtab_lookup(&d->vis, via_wire_dst_vi(h));

	/* VIs are freed only under every shard's lock: @p vi stays valid */
	if (vi != NULL)
		return vi->shard->inbox;
	return frame_is_cm(m) ? d->cm_inbox : d->shards[0].inbox;
}

/* The wake-up's ordering: via_abi.h, "Wake-up contract", pair 2. */
unsigned
via_net_hand_over(struct viad *d, struct via_nic *nic, struct rte_ring *to,
		  struct rte_mbuf **pkts, unsigned n)
{
	unsigned i, took;

	for (i = 0; i < n; i++)
		pkts[i]->port = nic->index;
	took = rte_ring_enqueue_burst(to, (void **)pkts, n, NULL);
	/* this lcore's own inbox: it is awake, no one to wake */
	if (took == 0 || to == RTE_PER_LCORE(cur_inbox))
		return took;
	if (to == d->cm_inbox) {
		eventfd_write(d->cm_fd, 1);
		return took;
	}
	/* the frames before the look at the shard's asleep (StoreLoad),
	 * against prepare_sleep()'s store of it before its look at the inbox
	 * (dp_poll.c) */
	rte_atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (i = 0; i < d->nb_shards; i++) {
		if (d->shards[i].inbox == to) {
			via_poll_wake(&d->shards[i]);
			break;
		}
	}
	return took;
}

void
via_dp_xmit(struct via_nic *nic, struct rte_mbuf **pkts, uint16_t n)
{
	struct via_poll_stats *st = via_dp_stats();
	uint64_t bytes = 0;
	uint16_t sent = 0, i;
	unsigned held;

	if (n == 0)
		return;
	/* every frame of one call goes to the same destination */
	if (via_net_to_self(nic, rte_pktmbuf_mtod(pkts[0], struct rte_ether_hdr *)->dst_addr.addr_bytes)) {
		via_capture(nic, pkts, n, VIA_CAPTURE_MEM);
		for (i = 0; i < n; i++)
			bytes += rte_pktmbuf_pkt_len(pkts[i]);
		sent = (uint16_t)via_net_hand_over(nic->d, nic, via_net_route(nic->d, pkts[0]), pkts, n);
		st->frames_tx += sent;
		st->frames_rx += sent;
		/* the NIC's own counters: a frame it sent and received; those
		 * not taken are still ours (freed below) */
		for (i = sent; i < n; i++)
			bytes -= rte_pktmbuf_pkt_len(pkts[i]);
		st->nic_mem_frames[nic->index] += sent;
		st->nic_mem_bytes[nic->index] += bytes;
	} else {
		via_capture(nic, pkts, n, VIA_CAPTURE_TX);
		via_dp_lock(&nic->tx_lock);
		/* frames keep their order: none passes those already waiting */
		if (backlog_flush(nic, st) == 0) {
			sent = port_tx(nic, pkts, n);
			st->frames_tx += sent;
		}
		held = rte_ring_enqueue_burst(nic->backlog, (void **)(pkts + sent),
					      (unsigned)(n - sent), NULL);
		via_dp_unlock(&nic->tx_lock);
		sent = (uint16_t)(sent + held);
	}
	if (sent < n) {
		/* Unreliable Delivery may lose frames (VIA §2.5.1) */
		st->frames_dropped += n - sent;
		rte_pktmbuf_free_bulk(pkts + sent, n - sent);
	}
}

struct via_wire_hdr *
via_net_frame_init(struct rte_mbuf *m, struct via_nic *nic, const uint8_t dst[6],
		   uint16_t payload_len)
{
	struct rte_ether_hdr *eth;
	struct via_wire_hdr *h;

	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, (uint16_t)(VIA_FRAME_HDR_LEN +
								       payload_len));
	if (eth == NULL)
		return NULL;
	memcpy(eth->dst_addr.addr_bytes, dst, RTE_ETHER_ADDR_LEN);
	rte_ether_addr_copy(via_port_mac(nic->port), &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(VIA_ETHERTYPE);
	h = (struct via_wire_hdr *)(eth + 1);
	memset(h, 0, sizeof(*h));
	return h;
}

uint16_t
via_net_burst_alloc(const struct via_vi *vi, struct via_net_burst *b, uint16_t n, uint16_t ext)
{
	struct via_nic *nic = vi->owner->nic;
	struct rte_mempool *pool = via_nics_pool();

	b->in_memory = via_net_to_self(nic, vi->conn.remote_mac);
	b->zero_copy = 0;
	for (b->n = 0; b->n < n; b->n++) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

		if (m == NULL || via_net_frame_init(m, nic, vi->conn.remote_mac, ext) == NULL) {
			rte_pktmbuf_free(m);
			break;
		}
		b->pkts[b->n] = m;
	}
	return b->n;
}

void
via_net_burst_xmit(const struct via_vi *vi, struct via_net_burst *b)
{
	if (b->zero_copy > 0)
		via_dp_stats()->frames_tx_zero_copy += b->zero_copy;
	via_dp_xmit(vi->owner->nic, b->pkts, b->n);
}

void
via_dp_send_frame(struct via_nic *nic, const uint8_t mac[6], const struct via_wire_hdr *tmpl,
		  const void *payload, uint16_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(via_nics_pool());
	struct via_wire_hdr *h;

	if (m == NULL) {
		via_dp_stats()->frames_dropped++;
		return;
	}
	h = via_net_frame_init(m, nic, mac, len);
	if (h == NULL) {
		rte_pktmbuf_free(m);
		via_dp_stats()->frames_dropped++;
		return;
	}
	*h = *tmpl;
	if (len > 0)
		memcpy(h + 1, payload, len);
	via_wire_seal(h, len, NULL, 0);
	via_dp_xmit(nic, &m, 1);
}

void
via_net_send_peer(const struct via_vi *vi, const struct via_wire_hdr *h)
{
	if (h->opcode == VIA_OP_NAK)
		via_dp_stats()->naks_tx++;
	via_dp_send_frame(vi->owner->nic, vi->conn.remote_mac, h, NULL, 0);
}

bool
via_net_rx_check(struct via_nic *nic, struct rte_mbuf *m, struct via_poll_stats *st)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	const struct via_wire_hdr *h = (const struct via_wire_hdr *)(eth + 1);
	int rc;

	/* other traffic on a shared link (IPv6 neighbour discovery on a veth,
	 * say) is none of viad's business and not counted */
	if (m->data_len < RTE_ETHER_HDR_LEN || eth->ether_type != rte_cpu_to_be_16(VIA_ETHERTYPE))
		return false;
	st->frames_rx++;
	if (m->nb_segs != 1 || m->data_len < VIA_FRAME_HDR_LEN ||
	    !rte_is_same_ether_addr(&eth->dst_addr, via_port_mac(nic->port))) {
		st->frames_dropped++;
		return false;
	}
	rc = via_wire_check(h, m->data_len - (uint32_t)VIA_FRAME_HDR_LEN,
			    nic->caps & VIA_PORT_CAP_INTACT);
	if (rc != 0) {
		st->frames_dropped++;
		if (rc == -EBADMSG)
			st->frames_corrupt++;
		return false;
	}
	return true;
}

uint16_t
via_net_rx_burst(struct via_nic *nic, uint16_t q, struct rte_mbuf **pkts,
		 struct via_poll_stats *st)
{
	uint16_t n = nic->stopped ? 0 : via_port_rx_burst(nic->port, q, pkts, VIA_DP_BURST);

	via_capture(nic, pkts, n, VIA_CAPTURE_RX);
	st->rx_bursts += n != 0;
	st->rx_burst_frames += n;
	return n;
}

unsigned
via_net_tx_poll(struct via_nic *nic, struct via_poll_stats *st)
{
	const bool kick = nic->caps & VIA_PORT_CAP_TX_KICK;
	unsigned work = 0;

	/* an idle port is not touched: its backlog's count is the producers'
	 * (under tx_lock) and a frame queued after this look is sent by the
	 * next iteration */
	if (!kick && rte_ring_empty(nic->backlog))
		return 0;
	via_dp_lock(&nic->tx_lock);
	if (!rte_ring_empty(nic->backlog))
		work += backlog_flush(nic, st) + 1;
	/* a port that holds frames back (the faulty glue's delay and
	 * reordering) releases them on a burst, even empty */
	if (kick && !nic->stopped)
		via_port_tx_burst(nic->port, 0, NULL, 0);
	via_dp_unlock(&nic->tx_lock);
	return work;
}
