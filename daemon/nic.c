/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ports as VI NICs. Each configured port becomes NIC viaN; with no port
 * configured viad opens one loopback NIC, so it runs on any machine. The
 * attributes VipQueryNic reports come from here: the port's MAC and MTU and
 * viad's configured limits, never made-up numbers.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_ether.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_version.h>

#include <vipl_dpdk.h>

#include "hosts.h"
#include "dp/dp.h"
#include "via_fault.h"

#define NB_MBUFS 8191
/* a port that connects only at start (VIA_PORT_CAP_RESTART), its link
 * down: started again this often */
#define LINK_RESTART_MS 100
#define MBUF_CACHE 256

static struct rte_mempool *mbuf_pool;
/* zero-copy frames' data segments only ever point at clients' pages (dp_zc.c):
 * no data room; as many as frame headers */
static struct rte_mempool *zc_pool;

struct rte_mempool *
via_nics_pool(void)
{
	return mbuf_pool;
}

struct rte_mempool *
via_nics_zc_pool(void)
{
	return zc_pool;
}

/* The glue that really moves the frames: a faulty port's inner one. */
static const char *
base_glue(const struct via_port_conf *pc)
{
	if (strcmp(pc->glue, "faulty") == 0)
		return pc->inner[0] ? pc->inner : "loopback";
	return pc->glue;
}

/*
 * The modules port @p pc needs, loaded from viad.glue_dir unless built in:
 * its glue and, for a faulty port, the inner one (which the faulty module
 * opens itself, by name).
 */
static int
nic_glue_load(const struct viad *d, const struct via_port_conf *pc)
{
	int rc = via_glue_load(d->conf.glue_dir, pc->glue);

	if (rc == 0 && strcmp(base_glue(pc), pc->glue) != 0)
		rc = via_glue_load(d->conf.glue_dir, base_glue(pc));
	return rc;
}

static void
nic_info_fill(struct viad *d, struct via_nic *nic, const char *name)
{
	struct via_ctl_nic_info *i = &nic->info;
	const struct via_conf *c = &d->conf;

	memset(i, 0, sizeof(*i));
	via_copy_name(i->name, sizeof(i->name), name);
	memcpy(i->mac, via_port_mac(nic->port)->addr_bytes, sizeof(i->mac));
	i->mtu = via_port_mtu(nic->port);
	i->hardware_version = (uint32_t)RTE_VERSION;
	i->provider_version = VIPL_DPDK_PROVIDER_VERSION;
	i->max_discriminator_len = c->max_discriminator_len;
	i->max_register_regions = c->max_regions;
	i->max_register_bytes = c->max_register_bytes;
	i->max_register_block_bytes = c->max_register_bytes;
	i->max_vi = c->max_vi;
	i->max_desc_per_queue = c->max_desc_per_queue;
	i->max_segments_per_desc = c->max_segments_per_desc;
	i->max_cq = c->max_cq;
	i->max_cq_entries = c->max_cq_entries;
	i->max_transfer_size = c->max_transfer_size;
	i->max_ptags = c->max_ptags;
	/* all three levels; RDMA Read on the reliable ones (VIA §2.5) */
	i->reliability_support = VIP_SERVICE_UNRELIABLE | VIP_SERVICE_RELIABLE_DELIVERY |
				 VIP_SERVICE_RELIABLE_RECEPTION;
	i->rdma_read_support = 1;
}

/* The glue's view of port @p pc of @p d; @p fc and @p mac are where its pointers go. */
static int
glue_conf(const struct viad *d, const struct via_port_conf *pc, struct via_glue_port_conf *gc,
	  struct via_fault_conf *fc, struct rte_ether_addr *mac)
{
	*fc = (struct via_fault_conf){
		.rx = { .drop_ppm = pc->rx_drop, .dup_ppm = pc->rx_dup, .reorder_ppm = pc->rx_reorder,
			.corrupt_ppm = pc->rx_corrupt, .delay_ppm = pc->rx_delay },
		.tx = { .drop_ppm = pc->tx_drop, .dup_ppm = pc->tx_dup, .reorder_ppm = pc->tx_reorder,
			.corrupt_ppm = pc->tx_corrupt, .delay_ppm = pc->tx_delay },
		.delay_us = pc->delay_us, .corrupt_bits = pc->corrupt_bits,
		.corrupt_where = pc->corrupt_where, .seed = pc->seed,
	};
	*gc = (struct via_glue_port_conf){
		.faults = fc,
		.inner_glue = pc->inner[0] ? pc->inner : NULL,
		.name = pc->name,
		.devargs = pc->devargs[0] ? pc->devargs : NULL,
		.mtu = pc->mtu,
		.nb_rxq = pc->rx_queues,
		.nb_txq = pc->tx_queues,
		.nb_rxd = pc->rx_desc,
		.nb_txd = pc->tx_desc,
		.mp = mbuf_pool,
		.socket_id = (int)rte_socket_id(),
		/* IP beside VIA (docs/design.md): the glue filters or diverts */
		.xdp_prog = pc->xdp_filter ? d->conf.xdp_prog : NULL,
		.ip_interface = pc->ip_interface[0] ? pc->ip_interface : NULL,
	};
	if (pc->mac[0] != '\0') {
		if (via_parse_mac(pc->mac, mac->addr_bytes) != 0)
			return -EINVAL;
		gc->mac = mac;
	}
	return 0;
}

static int
nic_open(struct viad *d, const struct via_port_conf *pc)
{
	struct via_nic *nic = &d->nics[d->nb_nics];
	struct via_glue_port_conf gc;
	struct via_fault_conf fc;
	struct rte_ether_addr mac;
	int rc;

	rc = glue_conf(d, pc, &gc, &fc, &mac);
	if (rc == 0)
		rc = via_port_open(&nic->port, pc->glue, &gc);
	if (rc != 0) {
		VLOG_ERR("port %s (%s %s): open failed: %s", pc->name, pc->glue,
			 pc->devargs, strerror(-rc));
		return rc;
	}
	rc = via_port_start(nic->port);
	if (rc != 0) {
		VLOG_ERR("port %s: start failed: %s", pc->name, strerror(-rc));
		via_port_close(nic->port);
		return rc;
	}
	nic->d = d;
	nic->index = (uint16_t)d->nb_nics;
	/* what the glue says it is (enum via_port_cap), never its name */
	nic->caps = via_port_caps(nic->port);
	nic->loopback = nic->caps & VIA_PORT_CAP_LOOPBACK;
	{
		struct via_port_link link = { 0 };

		/* a port whose link is not up yet breaks nothing before the
		 * grace (an adopted connection waits for it, section 18) */
		nic->link_up = via_port_link_get(nic->port, &link) == 0 && link.up;
		nic->link_down_since = nic->link_up ? 0 : via_now_ms();
		nic->restart_at = nic->link_down_since + LINK_RESTART_MS;
	}
	nic_info_fill(d, nic, pc->name);
	d->nb_nics++;
	VLOG_INFO("NIC %s: glue %s, MAC " RTE_ETHER_ADDR_PRT_FMT ", MTU %u, zero-copy transmit %s",
		  pc->name, pc->glue, RTE_ETHER_ADDR_BYTES(via_port_mac(nic->port)), nic->info.mtu,
		  nic->caps & VIA_PORT_CAP_TX_BY_VA ? "from provider memory"
						    : "off (the port needs its own buffers)");
	return 0;
}

int
via_nics_open(struct viad *d)
{
	static const struct via_port_conf implicit_loopback = {
		.name = "via0", .glue = "loopback", .rx_queues = 1, .tx_queues = 1,
	};
	const struct via_port_conf *ports = d->conf.ports;
	unsigned i, nb = d->conf.nb_ports;
	uint32_t room = RTE_MBUF_DEFAULT_BUF_SIZE;
	int rc;

	if (nb == 0) {
		ports = &implicit_loopback;
		nb = 1;
	}
	/* one mbuf holds a whole frame of the largest MTU configured, after
	 * the headroom its port wants (the glue says, via_glue_needs()) */
	for (i = 0; i < nb; i++) {
		struct via_glue_port_conf gc;
		struct via_fault_conf fc;
		struct via_port_needs needs;
		struct rte_ether_addr mac;
		uint32_t need;

		rc = nic_glue_load(d, &ports[i]);
		if (rc == 0)
			rc = glue_conf(d, &ports[i], &gc, &fc, &mac);
		if (rc == 0)
			rc = via_glue_needs(ports[i].glue, &gc, &needs);
		if (rc != 0) {
			VLOG_ERR("port %s (%s %s): open failed: %s", ports[i].name, ports[i].glue,
				 ports[i].devargs, strerror(-rc));
			return rc;
		}
		need = RTE_PKTMBUF_HEADROOM + needs.headroom + RTE_ETHER_HDR_LEN +
		       RTE_ETHER_CRC_LEN + needs.mtu;
		if (need > room)
			room = need;
	}
	mbuf_pool = rte_pktmbuf_pool_create("viad_mbufs", NB_MBUFS, MBUF_CACHE, 0,
					    (uint16_t)room, (int)rte_socket_id());
	zc_pool = rte_pktmbuf_pool_create("viad_zc_mbufs", NB_MBUFS, MBUF_CACHE, 0, 0,
					  (int)rte_socket_id());
	if (mbuf_pool == NULL || zc_pool == NULL) {
		VLOG_ERR("mbuf pools: %s", rte_strerror(rte_errno));
		rte_mempool_free(mbuf_pool);
		mbuf_pool = NULL;
		return -rte_errno;
	}
	for (i = 0; i < nb; i++) {
		rc = nic_open(d, &ports[i]);
		if (rc != 0) {
			via_nics_close(d);
			return rc;
		}
	}
	return 0;
}

void
via_nics_close(struct viad *d)
{
	while (d->nb_nics > 0)
		via_port_close(d->nics[--d->nb_nics].port);
	rte_mempool_free(mbuf_pool);
	mbuf_pool = NULL;
	rte_mempool_free(zc_pool);
	zc_pool = NULL;
}

#define LINK_WATCH_MS 100

/*
 * One NIC's link as its port says now (@p up): a link down for
 * link_down_grace_ms breaks the NIC's connections (VIA §7.1, cm.c); a
 * shorter outage, such as a memif peer's viad upgrading, breaks none. A
 * port that connects only at start is started again meanwhile.
 */
static void
nic_link(struct viad *d, struct via_nic *nic, bool up, uint64_t now)
{
	if (up) {
		if (!nic->link_up)
			VLOG_WARN("NIC %s: link up%s", nic->info.name,
				  nic->link_down_since != 0 && !nic->link_lost
					  ? ": its connections were kept" : "");
		nic->link_up = true;
		nic->link_down_since = 0;
		nic->link_lost = false;
		return;
	}
	if (nic->link_up) {
		VLOG_WARN("NIC %s: link down", nic->info.name);
		nic->link_up = false;
		nic->link_down_since = now;
		/* a handshake under way gets its time first */
		nic->restart_at = now + LINK_RESTART_MS;
	}
	if (!nic->link_lost && now - nic->link_down_since >= d->conf.link_down_grace_ms) {
		nic->link_lost = true;
		VLOG_WARN("NIC %s: link down for %llu ms: its connections break", nic->info.name,
			  (unsigned long long)(now - nic->link_down_since));
		d->ev.link_down(d, nic);
	}
	if ((nic->caps & VIA_PORT_CAP_RESTART) && now >= nic->restart_at) {
		nic->restart_at = now + LINK_RESTART_MS;
		via_port_stop(nic->port);
		/* until a start succeeds the data path leaves the port alone:
		 * its frames wait in the backlog */
		nic->stopped = via_port_start(nic->port) != 0;
	}
}

int
via_nics_watch(struct viad *d, uint64_t now)
{
	static uint64_t next;
	unsigned i;

	if (now < next)
		return (int)(next - now);
	next = now + LINK_WATCH_MS;
	for (i = 0; i < d->nb_nics; i++) {
		struct via_port_link link;

		if (via_port_link_get(d->nics[i].port, &link) == 0)
			nic_link(d, &d->nics[i], link.up, now);
	}
	return LINK_WATCH_MS;
}

void
via_nic_port_info(const struct via_nic *nic, struct via_ctl_port_info *pi)
{
	struct via_port_link link = { 0 };
	struct via_port_stats st = { 0 };
	unsigned lcore;

	memset(pi, 0, sizeof(*pi));
	via_copy_name(pi->name, sizeof(pi->name), nic->info.name);
	via_copy_name(pi->glue, sizeof(pi->glue), via_port_glue_name(nic->port));
	memcpy(pi->mac, nic->info.mac, sizeof(pi->mac));
	pi->mtu = nic->info.mtu;
	if (via_port_link_get(nic->port, &link) == 0) {
		pi->link_up = link.up;
		pi->link_speed_mbps = link.speed_mbps;
	}
	if (via_port_stats_get(nic->port, &st) == 0) {
		pi->rx_packets = st.rx_packets;
		pi->tx_packets = st.tx_packets;
		pi->rx_bytes = st.rx_bytes;
		pi->tx_bytes = st.tx_bytes;
		pi->rx_errors = st.rx_errors + st.rx_missed;
		pi->tx_errors = st.tx_errors;
	}
	/* frames to its own address moved in memory, sent and received by
	 * the NIC all the same (the loopback NIC's are all of them) */
	RTE_LCORE_FOREACH(lcore) {
		const struct via_poll_stats *ps = via_poll_stats_of(lcore);
		uint64_t frames = __atomic_load_n(&ps->nic_mem_frames[nic->index], __ATOMIC_RELAXED);
		uint64_t bytes = __atomic_load_n(&ps->nic_mem_bytes[nic->index], __ATOMIC_RELAXED);

		pi->rx_packets += frames;
		pi->tx_packets += frames;
		pi->rx_bytes += bytes;
		pi->tx_bytes += bytes;
	}
}
