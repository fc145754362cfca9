/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file glue_loopback.c
 * @brief Module "loopback": no NIC; frames transmitted on a port re-enter
 *        the same port's receive path (M-VIA's loopback device).
 *
 * Design:
 *  - One rte_ring of mbuf pointers per rx queue, created at probe.  Tx queue
 *    q feeds rx queue (q % nb_rxq).
 *  - Ring sync modes follow the DPDK queue contract (a queue is used by at
 *    most one thread at a time): consumer is always single (RING_F_SC_DEQ,
 *    one rx queue per ring); producer is single (RING_F_SP_ENQ) when every
 *    ring is fed by exactly one tx queue (nb_txq <= nb_rxq), multi-producer
 *    otherwise.
 *  - Ring capacity is exactly nb_rxd (RING_F_EXACT_SZ), clamped to
 *    [LB_MIN_DESC, LB_MAX_DESC]; 0 = LB_DEFAULT_DESC.  nb_txd is unused.
 *  - tx_burst behaves like a real PMD: it returns how many frames it
 *    consumed from the front of the array; frames after a full ring are not
 *    consumed and still belong to the caller.  Frames shorter than an
 *    Ethernet header or longer than MTU + 14 + 4 (one VLAN tag) are consumed,
 *    freed and counted in tx_errors, as a NIC would drop them.
 *  - A NIC DMA-copies, so the sender may keep a reference to a transmitted
 *    mbuf (retransmission) and the receiver gets a private buffer.  To keep
 *    that semantic, a frame with any shared segment (refcnt > 1, indirect or
 *    external buffer) is copied (rte_pktmbuf_copy() from conf->mp, or from
 *    the frame's own pool if conf->mp is NULL) and the caller's reference is
 *    dropped; exclusive direct frames are passed by pointer (zero copy).
 *    If the copy fails (pool empty) the frame is not consumed.
 *  - rx_burst dequeues, sets mbuf->port, clears offload flags/packet_type
 *    (no rx offloads are emulated).
 *  - Frames queued when the port is stopped stay queued; remove frees them.
 *    Bursts on a stopped port return 0.
 *  - MAC 02:00:00:00:00:00 | loopback index (or conf->mac), MTU 9000 by
 *    default (conf->mtu), link always up at 100 Gbps, counters per queue.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_errno.h>
#include <rte_ring.h>

#include "via_glue.h"
#include "glue_internal.h"

#define LB_MAX_PORTS     256      /* index fits the MAC's last byte */
#define LB_MAX_QUEUES    16
#define LB_DEFAULT_MTU   9000
#define LB_MIN_MTU       RTE_ETHER_MIN_MTU
#define LB_MAX_MTU       (UINT16_MAX - RTE_ETHER_HDR_LEN - RTE_VLAN_HLEN)
#define LB_DEFAULT_DESC  1024
#define LB_MIN_DESC      32
#define LB_MAX_DESC      32768
#define LB_SPEED_MBPS    100000   /* RTE_ETH_SPEED_NUM_100G */
#define LB_TX_CHUNK      32

struct lb_qstats {
	uint64_t packets;
	uint64_t bytes;
	uint64_t errors;
} __rte_cache_aligned;

struct lb_priv {
	struct rte_ring *rxring[LB_MAX_QUEUES];  /* one per rx queue */
	struct rte_ring *txring[LB_MAX_QUEUES];  /* tx q -> rxring[q % nb_rxq] */
	struct rte_mempool *mp;                  /* copies; NULL = frame's pool */
	uint32_t max_frame;                      /* MTU + 14 + 4 */
	uint16_t index;
	uint16_t mtu;
	bool started;                            /* atomic access */
	struct rte_ether_addr mac;
	struct lb_qstats rx[LB_MAX_QUEUES];
	struct lb_qstats tx[LB_MAX_QUEUES];
};

/* Loopback indexes in use (control path only). */
static bool lb_used[LB_MAX_PORTS];

static inline bool
lb_is_started(const struct lb_priv *p)
{
	return __atomic_load_n(&p->started, __ATOMIC_ACQUIRE);
}

static void
lb_free_rings(struct via_port *port, struct lb_priv *p)
{
	struct rte_mbuf *m[64];
	unsigned int q, nb;

	for (q = 0; q < port->nb_rxq; q++) {
		if (p->rxring[q] == NULL)
			continue;
		while ((nb = rte_ring_dequeue_burst(p->rxring[q], (void **)m,
						    RTE_DIM(m), NULL)) != 0)
			rte_pktmbuf_free_bulk(m, nb);
		rte_ring_free(p->rxring[q]);
		p->rxring[q] = NULL;
	}
}

/**
 * probe slot.  Errors: -EINVAL (more than LB_MAX_QUEUES queues, MTU outside
 * [68, 65517], MAC override not a unicast non-zero address), -ENOSPC (all
 * LB_MAX_PORTS loopback indexes in use), rte_ring_create() errors
 * (-ENOMEM, -EEXIST).  devargs is ignored.
 */
static int
lb_probe(struct via_port *port, const struct via_glue_port_conf *conf)
{
	struct lb_priv *p = port->priv;
	char rname[RTE_RING_NAMESIZE];
	unsigned int flags, count, q, idx;
	int rc;

	if (conf->nb_rxq > LB_MAX_QUEUES || conf->nb_txq > LB_MAX_QUEUES)
		return -EINVAL;
	if (conf->mtu != 0 && (conf->mtu < LB_MIN_MTU || conf->mtu > LB_MAX_MTU))
		return -EINVAL;
	if (conf->mac != NULL && !rte_is_valid_assigned_ether_addr(conf->mac))
		return -EINVAL;

	for (idx = 0; idx < LB_MAX_PORTS && lb_used[idx]; idx++)
		;
	if (idx == LB_MAX_PORTS)
		return -ENOSPC;

	count = conf->nb_rxd != 0 ? conf->nb_rxd : LB_DEFAULT_DESC;
	count = RTE_MAX(count, (unsigned int)LB_MIN_DESC);
	count = RTE_MIN(count, (unsigned int)LB_MAX_DESC);
	flags = RING_F_SC_DEQ | RING_F_EXACT_SZ;
	if (conf->nb_txq <= conf->nb_rxq)
		flags |= RING_F_SP_ENQ;

	for (q = 0; q < conf->nb_rxq; q++) {
		snprintf(rname, sizeof(rname), "via_lb%u_q%u", idx, q);
		p->rxring[q] = rte_ring_create(rname, count, conf->socket_id,
					       flags);
		if (p->rxring[q] == NULL) {
			rc = -rte_errno;
			GLUE_LOG(ERR, "%s: rte_ring_create(%s): %s", port->name,
				 rname, rte_strerror(rte_errno));
			lb_free_rings(port, p);
			return rc < 0 ? rc : -ENOMEM;
		}
	}
	for (q = 0; q < conf->nb_txq; q++)
		p->txring[q] = p->rxring[q % conf->nb_rxq];

	lb_used[idx] = true;
	p->index = (uint16_t)idx;
	p->mp = conf->mp;
	p->mtu = conf->mtu != 0 ? conf->mtu : LB_DEFAULT_MTU;
	/* shared frames are copied (see above); every frame comes back */
	port->caps = VIA_PORT_CAP_TX_BY_VA | VIA_PORT_CAP_LOOPBACK | VIA_PORT_CAP_INTACT;
	p->max_frame = (uint32_t)p->mtu + RTE_ETHER_HDR_LEN + RTE_VLAN_HLEN;
	if (conf->mac != NULL) {
		rte_ether_addr_copy(conf->mac, &p->mac);
	} else {
		memset(&p->mac, 0, sizeof(p->mac));
		p->mac.addr_bytes[0] = 0x02; /* locally administered, unicast */
		p->mac.addr_bytes[5] = (uint8_t)idx;
	}
	return 0;
}

static void
lb_remove(struct via_port *port)
{
	struct lb_priv *p = port->priv;

	lb_free_rings(port, p);
	lb_used[p->index] = false;
}

static int
lb_start(struct via_port *port)
{
	struct lb_priv *p = port->priv;

	__atomic_store_n(&p->started, true, __ATOMIC_RELEASE);
	return 0;
}

static void
lb_stop(struct via_port *port)
{
	struct lb_priv *p = port->priv;

	__atomic_store_n(&p->started, false, __ATOMIC_RELEASE);
}

static int
lb_mac_addr(struct via_port *port, struct rte_ether_addr *mac)
{
	const struct lb_priv *p = port->priv;

	rte_ether_addr_copy(&p->mac, mac);
	return 0;
}

static int
lb_mtu_get(struct via_port *port, uint16_t *mtu)
{
	const struct lb_priv *p = port->priv;

	*mtu = p->mtu;
	return 0;
}

static int
lb_link_get(struct via_port *port, struct via_port_link *link)
{
	RTE_SET_USED(port);
	link->up = true;
	link->speed_mbps = LB_SPEED_MBPS;
	return 0;
}

static int
lb_stats_get(struct via_port *port, struct via_port_stats *st)
{
	const struct lb_priv *p = port->priv;
	unsigned int q;

	memset(st, 0, sizeof(*st));
	for (q = 0; q < port->nb_rxq; q++) {
		st->rx_packets += p->rx[q].packets;
		st->rx_bytes += p->rx[q].bytes;
		st->rx_errors += p->rx[q].errors;
	}
	for (q = 0; q < port->nb_txq; q++) {
		st->tx_packets += p->tx[q].packets;
		st->tx_bytes += p->tx[q].bytes;
		st->tx_errors += p->tx[q].errors;
	}
	return 0;
}

static uint16_t
lb_rx_burst(struct via_port *port, uint16_t q, struct rte_mbuf **pkts,
	    uint16_t n)
{
	struct lb_priv *p = port->priv;
	uint64_t bytes = 0;
	unsigned int nb, i;

	if (unlikely(!lb_is_started(p) || q >= port->nb_rxq))
		return 0;
	nb = rte_ring_dequeue_burst(p->rxring[q], (void **)pkts, n, NULL);
	for (i = 0; i < nb; i++) {
		struct rte_mbuf *m = pkts[i];

		m->port = port->port_id;
		m->ol_flags &= RTE_MBUF_F_INDIRECT | RTE_MBUF_F_EXTERNAL;
		m->packet_type = RTE_PTYPE_UNKNOWN;
		bytes += m->pkt_len;
	}
	p->rx[q].packets += nb;
	p->rx[q].bytes += bytes;
	return (uint16_t)nb;
}

/* Could the receiver's buffer be shared with someone else? */
static inline bool
lb_is_shared(const struct rte_mbuf *m)
{
	if (likely(m->nb_segs == 1))
		return !RTE_MBUF_DIRECT(m) || rte_mbuf_refcnt_read(m) != 1;
	for (; m != NULL; m = m->next)
		if (!RTE_MBUF_DIRECT(m) || rte_mbuf_refcnt_read(m) != 1)
			return true;
	return false;
}

static uint16_t
lb_tx_burst(struct via_port *port, uint16_t q, struct rte_mbuf **pkts,
	    uint16_t n)
{
	struct lb_priv *p = port->priv;
	struct rte_mbuf *burst[LB_TX_CHUNK];
	struct lb_qstats *st;
	struct rte_ring *r;
	uint16_t done = 0;

	if (unlikely(!lb_is_started(p) || q >= port->nb_txq))
		return 0;
	st = &p->tx[q];
	r = p->txring[q];

	while (done < n) {
		uint16_t lim = (uint16_t)RTE_MIN(n - done, LB_TX_CHUNK);
		uint16_t k, acc, i;
		uint64_t bytes = 0;
		bool nomem = false;

		/* batch of valid frames, copying shared ones */
		for (k = 0; k < lim; k++) {
			struct rte_mbuf *m = pkts[done + k];

			if (unlikely(m->pkt_len > p->max_frame ||
				     m->pkt_len < RTE_ETHER_HDR_LEN))
				break;
			if (unlikely(lb_is_shared(m))) {
				m = rte_pktmbuf_copy(m, p->mp != NULL ?
						     p->mp : m->pool,
						     0, UINT32_MAX);
				if (m == NULL) {
					nomem = true;
					break;
				}
			}
			burst[k] = m;
			bytes += m->pkt_len;
		}

		acc = k != 0 ? (uint16_t)rte_ring_enqueue_burst(r,
					(void **)burst, k, NULL) : 0;
		/* burst[0..acc) now belong to the receiver: no dereference */
		for (i = 0; i < acc; i++)
			if (burst[i] != pkts[done + i])   /* copied: drop ref */
				rte_pktmbuf_free(pkts[done + i]);
		for (i = acc; i < k; i++) {
			bytes -= burst[i]->pkt_len;
			if (burst[i] != pkts[done + i])   /* discard our copy */
				rte_pktmbuf_free(burst[i]);
		}
		st->packets += acc;
		st->bytes += bytes;
		done += acc;
		if (acc < k || nomem)
			break;       /* ring full / no mbuf: caller keeps rest */
		if (k < lim) {       /* pkts[done] has a bad length: drop it */
			rte_pktmbuf_free(pkts[done]);
			st->errors++;
			done++;
		}
	}
	return done;
}

/* needs slot: the pool's mbufs hold a frame of the jumbo default MTU. */
static int
lb_needs(const struct via_glue_port_conf *conf, struct via_port_needs *needs)
{
	needs->headroom = 0;
	needs->mtu = conf->mtu != 0 ? conf->mtu : LB_DEFAULT_MTU;
	return 0;
}

static const struct via_glue_module loopback_module = {
	.abi_version = VIA_GLUE_ABI_VERSION,
	.name = "loopback",
	.ops = {
		.probe = lb_probe,
		.remove = lb_remove,
		.start = lb_start,
		.stop = lb_stop,
		.mac_addr = lb_mac_addr,
		.mtu_get = lb_mtu_get,
		.link_get = lb_link_get,
		.stats_get = lb_stats_get,
		.needs = lb_needs,
		.rx_burst = lb_rx_burst,
		.tx_burst = lb_tx_burst,
	},
	.priv_size = sizeof(struct lb_priv),
};

VIA_GLUE_MODULE_REGISTER(loopback_module)
