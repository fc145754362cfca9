/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file glue_exception.c
 * @brief Exception path: a kernel interface (a DPDK net_tap port) that
 *        carries the frames of a port that are not VIA's, both ways.
 *
 * For ports the kernel cannot see (memif, a PCI NIC bound to vfio), so that
 * IP, ARP and neighbour discovery keep working beside VIA on one link
 * (issue 16; docs/design.md, "VIA and IP on one port"). The transport
 * stays shared and the glue overrides, as rdmavt does for its drivers:
 *  - receive (the port's rx_burst slot, each rx queue on its own poll
 *    lcore): frames whose EtherType is not VIA's leave the burst for the
 *    TAP's transmit queue of the same index, which writes them to the
 *    kernel; the VIA frames go on to viad, in order;
 *  - transmit (the port's tx_burst slot on queue 0, which viad serialises
 *    under the port's tx lock and calls at least once per poll iteration):
 *    after viad's own frames, at most one burst (VIA_EXC_BURST) of what the
 *    kernel sent on the TAP, so a VIA frame never waits behind more than
 *    one burst of them.
 * What the TAP or the port does not take is dropped and counted, as a NIC
 * whose ring is full would: IP copes with loss, and holding the frames
 * would stall VIA's.
 *
 * The interface has the port's MAC and MTU; via_exc_sync() (the control
 * thread, every link check) puts them back when someone changed them on
 * the kernel side. Closing the port closes the TAP, which removes the
 * interface; a viad killed hard closes its file descriptor, which removes
 * it too (net_tap's interfaces are not persistent). The path's counters are
 * the port's (via_port_stats ip_*, in /viad/ports).
 *
 * Why TAP and not virtio-user over vhost-kernel: the latter needs
 * /dev/vhost-net, and the kernel of this kind of host is built without
 * CONFIG_VHOST_NET, so the two could not be measured against each other;
 * both give the kernel a netdev fed by one copy per frame. See
 * docs/performance.md, section 8, for what the path costs.
 */
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "via_ethertype.h"
#include "via_glue.h"
#include "glue_internal.h"


/* kernel frames per TAP receive ring: they wait there while VIA bursts */
#define EXC_TAP_DESC 512

/*
 * A TAP read is a readv() system call even when the kernel sent nothing,
 * about a microsecond that every transmit burst of queue 0, and so every
 * poll iteration, would pay. Once every queue was found empty, the TAP is
 * read again only after this long: that much more latency for the first
 * kernel frame after a quiet spell, against a poll iteration that stays
 * free of system calls while IP is idle.
 */
#define EXC_IDLE_GAP_US 20

struct via_exc {
	char port[VIA_GLUE_NAME_MAX];   /**< the port's name, for logs */
	char ifname[IF_NAMESIZE];       /**< the kernel interface */
	uint16_t tap;                   /**< its DPDK port */
	uint16_t nb_q;                  /**< TAP queues: one per port rx queue */
	uint16_t next_rxq;              /**< TAP receive queue forwarded next */
	uint16_t empty_rxqs;            /**< queues found empty in a row */
	uint64_t next_poll;             /**< timer cycles: no TAP read before */
	uint64_t idle_gap;              /**< EXC_IDLE_GAP_US in timer cycles */
	uint16_t mtu;                   /**< the port's */
	struct rte_ether_addr mac;      /**< the port's */
	/* counters: each written by one thread (the rx queue's lcore, or the
	 * holder of tx queue 0), read by via_exc_stats() with relaxed loads */
	uint64_t to_kernel;             /**< frames written to the TAP */
	uint64_t to_kernel_dropped;     /**< the TAP did not take them */
	uint64_t from_kernel;           /**< frames sent on the port */
	uint64_t from_kernel_dropped;   /**< the port did not take them */
};

static void
exc_count(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, *c + n, __ATOMIC_RELAXED);
}

/* Close the TAP port and remove its device: the kernel interface goes. */
static void
exc_tap_release(struct via_exc *x)
{
	struct rte_eth_dev_info info;
	int rc;

	memset(&info, 0, sizeof(info));
	rte_eth_dev_info_get(x->tap, &info);
	rte_eth_dev_stop(x->tap);
	rc = rte_eth_dev_close(x->tap);
	if (rc < 0)
		GLUE_LOG(WARNING, "%s: closing the TAP of %s: %s", x->port, x->ifname,
			 rte_strerror(-rc));
	if (info.device != NULL && (rc = rte_dev_remove(info.device)) < 0)
		GLUE_LOG(WARNING, "%s: removing the TAP of %s: %s", x->port, x->ifname,
			 rte_strerror(-rc));
}

static int
exc_tap_setup(struct via_exc *x, struct rte_mempool *mp)
{
	struct rte_eth_conf ec = { .rxmode = { .mtu = x->mtu } };
	uint16_t q;
	int rc;

	rc = rte_eth_dev_configure(x->tap, x->nb_q, x->nb_q, &ec);
	for (q = 0; rc == 0 && q < x->nb_q; q++) {
		rc = rte_eth_rx_queue_setup(x->tap, q, EXC_TAP_DESC, rte_eth_dev_socket_id(x->tap),
					    NULL, mp);
		if (rc == 0)
			rc = rte_eth_tx_queue_setup(x->tap, q, EXC_TAP_DESC,
						    rte_eth_dev_socket_id(x->tap), NULL);
	}
	/* configure() records the MTU; the TAP applies it to the interface
	 * through mtu_set */
	if (rc == 0)
		rc = rte_eth_dev_set_mtu(x->tap, x->mtu);
	if (rc == 0)
		rc = rte_eth_dev_start(x->tap);
	if (rc == 0)
		rc = rte_eth_dev_set_link_up(x->tap);
	return rc;
}

int
via_exc_open(struct via_exc **out, const char *port, const char *ifname,
	     const struct rte_ether_addr *mac, uint16_t mtu, uint16_t nb_q,
	     struct rte_mempool *mp)
{
	char devargs[128], name[RTE_DEV_NAME_MAX_LEN];
	struct via_exc *x;
	int rc;

	if (strnlen(ifname, IF_NAMESIZE) >= IF_NAMESIZE || ifname[0] == '\0')
		return -EINVAL;
	if (if_nametoindex(ifname) != 0) {
		GLUE_LOG(ERR, "%s: ip_interface %s already exists: viad makes its own", port,
			 ifname);
		return -EEXIST;
	}
	x = rte_zmalloc("via_exc", sizeof(*x), RTE_CACHE_LINE_SIZE);
	if (x == NULL)
		return -ENOMEM;
	snprintf(x->port, sizeof(x->port), "%s", port);
	snprintf(x->ifname, sizeof(x->ifname), "%s", ifname);
	x->mac = *mac;
	x->mtu = mtu;
	x->nb_q = nb_q;
	x->idle_gap = rte_get_timer_hz() / 1000000 * EXC_IDLE_GAP_US;
	/* the vdev name is unique among viad's devices, the interface's
	 * among the host's (checked above) */
	snprintf(name, sizeof(name), "net_tap_via_%s", port);
	snprintf(devargs, sizeof(devargs), "%s,iface=%s,mac=" RTE_ETHER_ADDR_PRT_FMT, name,
		 ifname, RTE_ETHER_ADDR_BYTES(mac));
	rc = rte_dev_probe(devargs);
	if (rc == 0)
		rc = rte_eth_dev_get_port_by_name(name, &x->tap);
	if (rc < 0) {
		GLUE_LOG(ERR, "%s: cannot create ip_interface %s (%s): %s", port, ifname, devargs,
			 rte_strerror(-rc));
		rte_free(x);
		return rc;
	}
	rc = exc_tap_setup(x, mp);
	if (rc < 0) {
		GLUE_LOG(ERR, "%s: ip_interface %s: setup: %s", port, ifname, rte_strerror(-rc));
		exc_tap_release(x);
		rte_free(x);
		return rc;
	}
	GLUE_LOG(INFO, "%s: ip_interface %s (TAP, port %u): frames that are not VIA's go "
		 "through it, MAC " RTE_ETHER_ADDR_PRT_FMT ", MTU %u", port, ifname, x->tap,
		 RTE_ETHER_ADDR_BYTES(mac), mtu);
	*out = x;
	return 0;
}

void
via_exc_close(struct via_exc *x)
{
	if (x == NULL)
		return;
	exc_tap_release(x);
	GLUE_LOG(INFO, "%s: ip_interface %s removed (%" PRIu64 " frames to the kernel, %" PRIu64
		 " from it)", x->port, x->ifname, x->to_kernel, x->from_kernel);
	rte_free(x);
}

/* Write @p n frames to the kernel on TAP queue @p q; frees what it refuses. */
static void
exc_to_kernel(struct via_exc *x, uint16_t q, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t sent = rte_eth_tx_burst(x->tap, q, pkts, n);

	exc_count(&x->to_kernel, sent);
	if (sent < n) {
		rte_pktmbuf_free_bulk(pkts + sent, n - sent);
		exc_count(&x->to_kernel_dropped, n - sent);
	}
}

uint16_t
via_exc_divert(struct via_exc *x, uint16_t q, struct rte_mbuf **pkts, uint16_t n)
{
	struct rte_mbuf *other[VIA_EXC_BURST];
	uint16_t i, keep = 0, nb = 0;

	for (i = 0; i < n; i++) {
		const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(pkts[i], const struct rte_ether_hdr *);

		if (pkts[i]->data_len >= RTE_ETHER_HDR_LEN &&
		    eth->ether_type == rte_cpu_to_be_16(VIA_ETHERTYPE)) {
			pkts[keep++] = pkts[i];
			continue;
		}
		other[nb++] = pkts[i];
		if (nb == VIA_EXC_BURST) {
			exc_to_kernel(x, q, other, nb);
			nb = 0;
		}
	}
	if (nb != 0)
		exc_to_kernel(x, q, other, nb);
	return keep;
}

uint16_t
via_exc_from_kernel(struct via_exc *x, struct rte_mbuf **pkts)
{
	uint16_t q = x->next_rxq, n;
	uint64_t now = rte_get_timer_cycles();

	if (now < x->next_poll)
		return 0;
	/* the kernel spreads its frames over the TAP's queues by flow: one
	 * queue per call, in turn, keeps each call to one bounded burst */
	x->next_rxq = (uint16_t)((q + 1) % x->nb_q);
	n = rte_eth_rx_burst(x->tap, q, pkts, VIA_EXC_BURST);
	if (n != 0) {
		x->empty_rxqs = 0;
	} else if (++x->empty_rxqs >= x->nb_q) {
		x->empty_rxqs = 0;
		x->next_poll = now + x->idle_gap;
	}
	return n;
}

void
via_exc_sent(struct via_exc *x, struct rte_mbuf **pkts, uint16_t n, uint16_t sent)
{
	exc_count(&x->from_kernel, sent);
	if (sent < n) {
		rte_pktmbuf_free_bulk(pkts + sent, n - sent);
		exc_count(&x->from_kernel_dropped, n - sent);
	}
}

void
via_exc_sync(struct via_exc *x)
{
	struct ifreq ifr;
	int fd;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", x->ifname);
	if (ioctl(fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu != x->mtu) {
		GLUE_LOG(WARNING, "%s: MTU of %s changed to %d: back to the port's, %u", x->port,
			 x->ifname, ifr.ifr_mtu, x->mtu);
		ifr.ifr_mtu = x->mtu;
		if (ioctl(fd, SIOCSIFMTU, &ifr) != 0)
			GLUE_LOG(ERR, "%s: MTU of %s: %s", x->port, x->ifname, strerror(errno));
	}
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) == 0 &&
	    memcmp(ifr.ifr_hwaddr.sa_data, x->mac.addr_bytes, RTE_ETHER_ADDR_LEN) != 0) {
		GLUE_LOG(WARNING, "%s: MAC of %s changed: back to the port's, "
			 RTE_ETHER_ADDR_PRT_FMT, x->port, x->ifname, RTE_ETHER_ADDR_BYTES(&x->mac));
		memcpy(ifr.ifr_hwaddr.sa_data, x->mac.addr_bytes, RTE_ETHER_ADDR_LEN);
		if (ioctl(fd, SIOCSIFHWADDR, &ifr) != 0)
			GLUE_LOG(ERR, "%s: MAC of %s: %s", x->port, x->ifname, strerror(errno));
	}
	close(fd);
}

void
via_exc_stats(const struct via_exc *x, struct via_port_stats *st)
{
	st->ip_to_kernel = __atomic_load_n(&x->to_kernel, __ATOMIC_RELAXED);
	st->ip_from_kernel = __atomic_load_n(&x->from_kernel, __ATOMIC_RELAXED);
	st->ip_dropped = __atomic_load_n(&x->to_kernel_dropped, __ATOMIC_RELAXED) +
			 __atomic_load_n(&x->from_kernel_dropped, __ATOMIC_RELAXED);
}
