/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * glue_hairpin.c: the glue module "hairpin", written as a module author
 * outside the VIA-DPDK tree writes one: against the installed SDK alone.
 *
 *   cc -shared -fPIC $(pkg-config --cflags via-glue) glue_hairpin.c \
 *      $(pkg-config --libs via-glue) \
 *      -o "$(pkg-config --variable=gluedir via-glue)/via_glue_hairpin.so"
 *
 * and used by a port of viad.conf:
 *
 *   [port]
 *   glue = hairpin
 *   mac = 02:00:00:00:00:42
 *
 * A hairpin port has no device: what it transmits comes back on its own
 * receive queue through one rte_ring, as if its cable were looped.  One rx
 * and one tx queue; the MAC comes from the configuration (required), the
 * MTU from it or 1500; the link is always up.  It sets
 * VIA_PORT_CAP_SELF_VIA_PORT, so that viad sends even frames to its own
 * address through the port: one viad alone then moves data over the module.
 *
 * Every slot is overridden: the defaults drive a DPDK ethdev, and a hairpin
 * port has none.
 */
#include <errno.h>
#include <stdio.h>

#include <rte_errno.h>
#include <rte_ring.h>

#include <via_glue.h>

#define HAIRPIN_DEFAULT_MTU  RTE_ETHER_MTU
#define HAIRPIN_DEFAULT_DESC 1024

struct hairpin_priv {
	struct rte_ring *cable;     /* tx enqueues, rx dequeues */
	struct rte_mempool *mp;     /* private copies of shared frames */
	struct rte_ether_addr mac;
	uint16_t mtu;
	/* rx_* written by the rx queue's thread, tx_* by the tx queue's */
	struct via_port_stats st;
};

static int
hairpin_probe(struct via_port *port, const struct via_glue_port_conf *conf)
{
	struct hairpin_priv *hp = via_port_priv(port);
	char ring_name[RTE_RING_NAMESIZE];
	unsigned int count = conf->nb_rxd != 0 ? conf->nb_rxd :
			     HAIRPIN_DEFAULT_DESC;

	/* one queue each way: one ring, one producer, one consumer */
	if (conf->nb_rxq != 1 || conf->nb_txq != 1 || conf->mac == NULL ||
	    conf->mp == NULL)
		return -EINVAL;
	snprintf(ring_name, sizeof(ring_name), "hairpin_%s", conf->name);
	hp->cable = rte_ring_create(ring_name, count, conf->socket_id,
				    RING_F_SP_ENQ | RING_F_SC_DEQ |
				    RING_F_EXACT_SZ);
	if (hp->cable == NULL)
		return -rte_errno;
	hp->mp = conf->mp;
	hp->mtu = conf->mtu != 0 ? conf->mtu : HAIRPIN_DEFAULT_MTU;
	rte_ether_addr_copy(conf->mac, &hp->mac);
	port->caps = VIA_PORT_CAP_SELF_VIA_PORT;
	return 0;
}

static void
hairpin_remove(struct via_port *port)
{
	struct hairpin_priv *hp = via_port_priv(port);
	void *m;

	while (rte_ring_dequeue(hp->cable, &m) == 0)
		rte_pktmbuf_free(m);
	rte_ring_free(hp->cable);
}

/* Nothing to start or stop: the cable is always there. */
static int
hairpin_start(struct via_port *port)
{
	RTE_SET_USED(port);
	return 0;
}

static void
hairpin_stop(struct via_port *port)
{
	RTE_SET_USED(port);
}

static int
hairpin_mac_addr(struct via_port *port, struct rte_ether_addr *mac)
{
	const struct hairpin_priv *hp = via_port_priv(port);

	rte_ether_addr_copy(&hp->mac, mac);
	return 0;
}

static int
hairpin_mtu_get(struct via_port *port, uint16_t *mtu)
{
	const struct hairpin_priv *hp = via_port_priv(port);

	*mtu = hp->mtu;
	return 0;
}

static int
hairpin_link_get(struct via_port *port, struct via_port_link *link)
{
	RTE_SET_USED(port);
	link->up = true;
	link->speed_mbps = 0; /* unknown: a cable of memory has no line rate */
	return 0;
}

static int
hairpin_stats_get(struct via_port *port, struct via_port_stats *st)
{
	const struct hairpin_priv *hp = via_port_priv(port);

	*st = hp->st;
	return 0;
}

static uint16_t
hairpin_rx_burst(struct via_port *port, uint16_t q, struct rte_mbuf **pkts,
		 uint16_t n)
{
	struct hairpin_priv *hp = via_port_priv(port);
	unsigned int nb, i;

	RTE_SET_USED(q);
	nb = rte_ring_dequeue_burst(hp->cable, (void **)pkts, n, NULL);
	for (i = 0; i < nb; i++) {
		/* as a NIC's receive path leaves them: no offload results */
		pkts[i]->port = via_port_id(port);
		pkts[i]->ol_flags = 0;
		pkts[i]->packet_type = RTE_PTYPE_UNKNOWN;
		hp->st.rx_packets++;
		hp->st.rx_bytes += pkts[i]->pkt_len;
	}
	return (uint16_t)nb;
}

/* Whether a segment of @p m may be seen by someone else than its sender. */
static bool
hairpin_is_shared(const struct rte_mbuf *m)
{
	for (; m != NULL; m = m->next)
		if (!RTE_MBUF_DIRECT(m) || rte_mbuf_refcnt_read(m) != 1)
			return true;
	return false;
}

/*
 * A NIC copies what it sends, so a sender may keep a reference to a frame
 * it transmitted (viad does, to send it again).  The receiver must get a
 * buffer nobody else holds: a shared frame crosses as a private copy, a
 * frame only the sender held crosses as it is.  Like a NIC whose queue is
 * full, a full ring (or no mbuf for a copy) ends the burst: the frames not
 * taken still belong to the caller.
 */
static uint16_t
hairpin_tx_burst(struct via_port *port, uint16_t q, struct rte_mbuf **pkts,
		 uint16_t n)
{
	struct hairpin_priv *hp = via_port_priv(port);
	uint16_t i;

	RTE_SET_USED(q);
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct rte_mbuf *wire = hairpin_is_shared(m) ?
			rte_pktmbuf_copy(m, hp->mp, 0, UINT32_MAX) : m;
		/* read now: once enqueued, the receiver may free the frame */
		uint32_t len = m->pkt_len;

		if (wire == NULL)
			break;
		if (rte_ring_enqueue(hp->cable, wire) != 0) {
			if (wire != m)
				rte_pktmbuf_free(wire);
			break;
		}
		if (wire != m)
			rte_pktmbuf_free(m);
		hp->st.tx_packets++;
		hp->st.tx_bytes += len;
	}
	return i;
}

static const struct via_glue_module hairpin_module = {
	.abi_version = VIA_GLUE_ABI_VERSION,
	.name = "hairpin",
	.ops = {
		.probe = hairpin_probe,
		.remove = hairpin_remove,
		.start = hairpin_start,
		.stop = hairpin_stop,
		.mac_addr = hairpin_mac_addr,
		.mtu_get = hairpin_mtu_get,
		.link_get = hairpin_link_get,
		.stats_get = hairpin_stats_get,
		.rx_burst = hairpin_rx_burst,
		.tx_burst = hairpin_tx_burst,
	},
	.priv_size = sizeof(struct hairpin_priv),
};

VIA_GLUE_PLUGIN(hairpin_module);
