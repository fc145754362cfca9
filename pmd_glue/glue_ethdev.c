/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file glue_ethdev.c
 * @brief Module "ethdev": any DPDK port described by devargs
 *        (net_memif, net_af_xdp, net_af_packet, net_tap, net_ring, PCI...).
 *
 * Overrides probe, remove, the burst slots (memif's guard; the exception
 * path), link_get (the exception interface kept in step) and stats_get (its
 * counters); every other slot is the ethdev default.
 *
 * probe:
 *  1. Find the port: RTE_ETH_FOREACH_MATCHING_DEV(devargs) (handles PCI
 *     short addresses, representors), else rte_eth_dev_get_port_by_name()
 *     with devargs up to the first ','.  The first matching port not
 *     already used by another via_port is taken.  If one exists (device
 *     attached by an EAL -a/--vdev option, or by someone else) it is
 *     adopted; if all matching ports are in use: -EBUSY.
 *  2. Otherwise rte_dev_probe(devargs) (hot-plug), then find the port again.
 *     If the device attached but has no ethdev port it is detached again.
 *  3. Configure nb_rxq/nb_txq queues (MTU through rxmode.mtu, then
 *     rte_eth_dev_set_mtu() with -ENOTSUP ignored; tx multi-seg offload
 *     when the PMD has it), descriptor counts clamped with
 *     rte_eth_dev_adjust_nb_rx_tx_desc() (0 = PMD default), set the MAC if
 *     overridden, promiscuous on (-ENOTSUP ignored).
 *
 *  4. net_af_xdp with conf->xdp_prog: the devargs get xdp_prog=PATH, so that
 *     the PMD loads viad's program (bpf/via_xdp.c: VIA frames to the
 *     socket, the rest to the kernel); where that fails, steps 1-3 again
 *     with the devargs as given (the PMD's own program, which takes every
 *     frame) and a log line saying IP is lost on the interface meanwhile.
 *  5. conf->ip_interface: the exception path (glue_exception.c).
 *
 * remove: rte_eth_dev_close(), then rte_dev_remove() of the device when no
 * other ethdev port of it is left (viad owns the ports it opens, adopted or
 * hot-plugged, so a later open re-attaches from scratch).
 *
 * Control functions are not thread safe (serialised by the daemon).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>

#include "via_glue.h"
#include "glue_internal.h"

struct ethdev_priv {
	struct rte_device *dev;  /**< Device behind port->port_id. */
	bool guarded;            /**< bursts run under burst_guard (memif) */
	uint64_t faults;         /**< bursts a fault ended */
	struct via_exc *exc;     /**< exception path, or NULL */
};

/*
 * DPDK 22.11's memif PMD handles its peer's disconnection on the EAL
 * interrupt thread (memif_disconnect): it clears its "connected" flag, then
 * unmaps the shared regions and rings, with nothing to wait for a burst
 * already past that flag on a poll lcore. Such a burst then faults, and
 * took viad with it (integration_rel, a peer killed while streaming).
 * Bursts of memif ports therefore run under a guard: a SIGSEGV or SIGBUS
 * raised inside one ends that burst instead of viad. The PMD refuses later
 * bursts until the peer is back. A fault outside a guarded burst is fatal
 * as ever. A receive burst cut short may leak the mbufs it had taken; a
 * transmit burst frees each frame once it is copied, so the guard holds a
 * reference on every frame to tell which ones the PMD had taken.
 */
static __thread sigjmp_buf *burst_guard;

static void
burst_fault(int sig, siginfo_t *si, void *uc)
{
	sigjmp_buf *jb = burst_guard;

	(void)si;
	(void)uc;
	if (jb != NULL) {
		burst_guard = NULL;
		siglongjmp(*jb, 1);
	}
	/* not ours: back to the default action, which the faulting
	 * instruction meets again on return */
	signal(sig, SIG_DFL);
}

static void
burst_guard_install(void)
{
	/* SA_NODEFER: the handler leaves by siglongjmp, which restores no mask */
	struct sigaction sa = { .sa_sigaction = burst_fault, .sa_flags = SA_SIGINFO | SA_NODEFER };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}

static void
burst_faulted(struct via_port *port)
{
	struct ethdev_priv *priv = port->priv;

	if (priv->faults++ == 0)
		GLUE_LOG(WARNING, "%s: a burst faulted (the memif peer went away while it ran); "
			 "the port stays up", port->name);
}

static uint16_t
ethdev_rx_burst(struct via_port *port, uint16_t q, struct rte_mbuf **pkts, uint16_t n)
{
	struct ethdev_priv *priv = port->priv;
	sigjmp_buf jb;
	uint16_t got;

	if (!priv->guarded) {
		got = rte_eth_rx_burst(port->port_id, q, pkts, n);
	} else {
		if (sigsetjmp(jb, 0) != 0) {
			burst_faulted(port);
			return 0;
		}
		burst_guard = &jb;
		got = rte_eth_rx_burst(port->port_id, q, pkts, n);
		burst_guard = NULL;
	}
	return priv->exc == NULL || got == 0 ? got : via_exc_divert(priv->exc, q, pkts, got);
}

#define TX_GUARD_MAX 64   /* frames of one guarded transmit burst */
#define ETHDEV_XDP_HEADROOM 256 /* XDP_PACKET_HEADROOM: where AF_XDP places a frame */

static uint16_t
ethdev_port_tx(struct via_port *port, uint16_t q, struct rte_mbuf **pkts, uint16_t n)
{
	struct ethdev_priv *priv = port->priv;
	uint16_t refs[TX_GUARD_MAX], i;
	sigjmp_buf jb;
	uint16_t sent;

	if (!priv->guarded)
		return rte_eth_tx_burst(port->port_id, q, pkts, n);
	n = RTE_MIN(n, (uint16_t)TX_GUARD_MAX);
	/* ours on top of the caller's: the PMD's free of a frame it took only
	 * drops it back to what the caller holds */
	for (i = 0; i < n; i++) {
		refs[i] = rte_mbuf_refcnt_read(pkts[i]);
		/* every segment: the PMD's free walks the chain */
		rte_pktmbuf_refcnt_update(pkts[i], 1);
	}
	if (sigsetjmp(jb, 0) != 0) {
		burst_faulted(port);
		/* it takes frames in order: those it freed are back at refs[i] */
		for (sent = 0; sent < n && rte_mbuf_refcnt_read(pkts[sent]) == refs[sent];)
			sent++;
	} else {
		burst_guard = &jb;
		sent = rte_eth_tx_burst(port->port_id, q, pkts, n);
		burst_guard = NULL;
	}
	for (i = 0; i < n; i++) {
		if (i < sent)
			rte_pktmbuf_free(pkts[i]);      /* ours: the PMD is done */
		else
			rte_pktmbuf_refcnt_update(pkts[i], -1);
	}
	return sent;
}

/* viad's frames first, then at most one burst of the kernel's (queue 0:
 * its holder polls the exception path, see glue_exception.c) */
static uint16_t
ethdev_tx_burst(struct via_port *port, uint16_t q, struct rte_mbuf **pkts, uint16_t n)
{
	struct ethdev_priv *priv = port->priv;
	struct rte_mbuf *kernel[VIA_EXC_BURST];
	uint16_t sent = ethdev_port_tx(port, q, pkts, n), nk;

	if (priv->exc == NULL || q != 0)
		return sent;
	nk = via_exc_from_kernel(priv->exc, kernel);
	if (nk != 0)
		via_exc_sent(priv->exc, kernel, nk, ethdev_port_tx(port, 0, kernel, nk));
	return sent;
}

/* The link, and the exception interface put back in step with the port:
 * viad's control thread asks every 100 ms. */
static int
ethdev_link_get(struct via_port *port, struct via_port_link *link)
{
	struct ethdev_priv *priv = port->priv;

	if (priv->exc != NULL)
		via_exc_sync(priv->exc);
	return via_glue_default_ops()->link_get(port, link);
}

/* The ethdev's counters, and the exception path's. */
static int
ethdev_stats_get(struct via_port *port, struct via_port_stats *st)
{
	struct ethdev_priv *priv = port->priv;

	if (priv->exc != NULL)
		via_exc_stats(priv->exc, st);
	return via_glue_default_ops()->stats_get(port, st);
}

/*
 * Whether the PMD copies chained frames by virtual address on transmit: the
 * software ports that say they take chains (a NIC's DMA would need IOVAs of
 * the client's pages, and af_xdp's copy mode reads only the first segment).
 */
static bool
ethdev_tx_by_va(const struct rte_eth_dev_info *info, const char *devargs)
{
	/* the ones whose transmit of chains was tested here (tests/topo) */
	static const char *const copying[] = { "net_memif", "net_af_packet" };
	unsigned i;

	if (!(info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS))
		return false;
	/* memif's own zero-copy mode takes offsets into its regions, not
	 * addresses: a segment elsewhere would send the peer wrong memory */
	if (strstr(devargs, "zero-copy=yes") != NULL)
		return false;
	for (i = 0; i < RTE_DIM(copying); i++) {
		if (strcmp(info->driver_name, copying[i]) == 0)
			return true;
	}
	return false;
}

/*
 * Whether the PMD's transmit needs a burst even with nothing to send:
 * af_packet hands its ring to the kernel (sendto) in every burst, so a
 * frame whose sendto failed waits for the next one; memif reclaims its
 * ring's slots (and, zero-copy, its mbufs) there. The ones tested here.
 */
static bool
ethdev_tx_kick(const struct rte_eth_dev_info *info)
{
	return strcmp(info->driver_name, "net_af_packet") == 0 ||
	       strcmp(info->driver_name, "net_memif") == 0;
}

/*
 * needs slot: AF_XDP places frames XDP_PACKET_HEADROOM into the mbuf (a
 * devargs naming the PMD: net_af_xdp0,iface=...). The MTU is the default's.
 */
static int
ethdev_needs(const struct via_glue_port_conf *conf, struct via_port_needs *needs)
{
	needs->headroom = conf->devargs != NULL && strstr(conf->devargs, "af_xdp") != NULL
			  ? ETHDEV_XDP_HEADROOM : 0;
	needs->mtu = conf->mtu != 0 ? conf->mtu : RTE_ETHER_MTU;
	return 0;
}

/* Ports currently owned by an ethdev via_port. */
static bool claimed[RTE_MAX_ETHPORTS];

/* Detach the device named by devargs (used when no port was found). */
static void
ethdev_detach_devargs(const char *devargs)
{
	struct rte_devargs da;

	memset(&da, 0, sizeof(da));
	if (rte_devargs_parse(&da, devargs) == 0 && da.bus != NULL)
		rte_eal_hotplug_remove(rte_bus_name(da.bus), da.name);
	/* rte_devargs_reset() is experimental in 22.11; all it does is: */
	free(da.data);
}

/*
 * Find an unclaimed ethdev port matching devargs.
 * Returns 0 and *out, -EBUSY if all matching ports are claimed, -ENODEV if
 * none matches.
 */
static int
ethdev_find_port(const char *devargs, uint16_t *out)
{
	char name[RTE_ETH_NAME_MAX_LEN];
	struct rte_dev_iterator it;
	size_t len;
	uint16_t pid;
	int rc = -ENODEV;

	if (rte_eth_iterator_init(&it, devargs) == 0) {
		for (pid = rte_eth_iterator_next(&it);
		     pid != RTE_MAX_ETHPORTS;
		     pid = rte_eth_iterator_next(&it)) {
			if (!claimed[pid]) {
				*out = pid;
				rc = 0;
				break;
			}
			rc = -EBUSY;
		}
		rte_eth_iterator_cleanup(&it); /* safe when exhausted */
		if (rc != -ENODEV)
			return rc;
	}

	/* fallback: the device name is devargs up to the first ',' */
	len = strcspn(devargs, ",");
	if (len == 0 || len >= sizeof(name))
		return -ENODEV;
	memcpy(name, devargs, len);
	name[len] = '\0';
	if (rte_eth_dev_get_port_by_name(name, &pid) != 0)
		return -ENODEV;
	if (claimed[pid])
		return -EBUSY;
	*out = pid;
	return 0;
}

static int
ethdev_configure(struct via_port *port, uint16_t pid,
		 const struct via_glue_port_conf *conf,
		 const struct rte_eth_dev_info *info)
{
	struct rte_eth_conf ec;
	uint16_t rxd, txd, q;
	int socket, rc;

	if (conf->nb_rxq > info->max_rx_queues ||
	    conf->nb_txq > info->max_tx_queues) {
		GLUE_LOG(ERR, "%s: %u rxq/%u txq asked, port %u has at most "
			 "%u/%u", port->name, conf->nb_rxq, conf->nb_txq, pid,
			 info->max_rx_queues, info->max_tx_queues);
		return -EINVAL;
	}
	if (conf->mtu != 0 &&
	    (conf->mtu < info->min_mtu || conf->mtu > info->max_mtu)) {
		GLUE_LOG(ERR, "%s: MTU %u outside port %u range [%u, %u]",
			 port->name, conf->mtu, pid, info->min_mtu,
			 info->max_mtu);
		return -EINVAL;
	}

	memset(&ec, 0, sizeof(ec));
	ec.rxmode.mtu = conf->mtu; /* 0: DPDK default (RTE_ETHER_MTU) */
	ec.txmode.offloads = info->tx_offload_capa &
			     RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	rc = rte_eth_dev_configure(pid, conf->nb_rxq, conf->nb_txq, &ec);
	if (rc < 0) {
		GLUE_LOG(ERR, "%s: rte_eth_dev_configure(%u): %s", port->name,
			 pid, rte_strerror(-rc));
		return rc;
	}

	/*
	 * configure() recorded the MTU; PMDs backed by a kernel interface
	 * (tap, af_packet, af_xdp) only apply it through mtu_set.
	 */
	if (conf->mtu != 0) {
		rc = rte_eth_dev_set_mtu(pid, conf->mtu);
		if (rc < 0 && rc != -ENOTSUP) {
			GLUE_LOG(ERR, "%s: MTU %u on port %u: %s", port->name,
				 conf->mtu, pid, rte_strerror(-rc));
			return rc;
		}
	}

	/* clamp to the PMD limits; 0 stays 0 = PMD default ring size */
	rxd = conf->nb_rxd;
	txd = conf->nb_txd;
	rc = rte_eth_dev_adjust_nb_rx_tx_desc(pid, &rxd, &txd);
	if (rc < 0)
		return rc;
	if (conf->nb_rxd == 0)
		rxd = 0;
	if (conf->nb_txd == 0)
		txd = 0;

	socket = conf->socket_id;
	if (socket == SOCKET_ID_ANY)
		socket = rte_eth_dev_socket_id(pid);
	if (socket < 0)
		socket = SOCKET_ID_ANY;

	for (q = 0; q < conf->nb_rxq; q++) {
		rc = rte_eth_rx_queue_setup(pid, q, rxd, socket, NULL,
					    conf->mp);
		if (rc < 0) {
			GLUE_LOG(ERR, "%s: rx queue %u setup: %s", port->name,
				 q, rte_strerror(-rc));
			return rc;
		}
	}
	for (q = 0; q < conf->nb_txq; q++) {
		rc = rte_eth_tx_queue_setup(pid, q, txd, socket, NULL);
		if (rc < 0) {
			GLUE_LOG(ERR, "%s: tx queue %u setup: %s", port->name,
				 q, rte_strerror(-rc));
			return rc;
		}
	}

	if (conf->mac != NULL) {
		rc = rte_eth_dev_default_mac_addr_set(pid,
				(struct rte_ether_addr *)(uintptr_t)conf->mac);
		if (rc < 0) {
			GLUE_LOG(ERR, "%s: cannot set MAC on port %u: %s",
				 port->name, pid, rte_strerror(-rc));
			return rc;
		}
	}

	rc = rte_eth_promiscuous_enable(pid);
	if (rc < 0 && rc != -ENOTSUP) {
		GLUE_LOG(ERR, "%s: promiscuous on port %u: %s", port->name,
			 pid, rte_strerror(-rc));
		return rc;
	}
	return 0;
}

/* Close pid and detach its device if no other port of it is left. */
static void
ethdev_release(uint16_t pid, struct rte_device *dev)
{
	int rc;

	rc = rte_eth_dev_close(pid);
	if (rc < 0)
		GLUE_LOG(WARNING, "rte_eth_dev_close(%u): %s", pid,
			 rte_strerror(-rc));
	if (dev == NULL)
		return;
	if (rte_eth_find_next_of(0, dev) < RTE_MAX_ETHPORTS)
		return; /* device still has ports (e.g. another via_port) */
	rc = rte_dev_remove(dev);
	if (rc < 0)
		GLUE_LOG(WARNING, "rte_dev_remove: %s", rte_strerror(-rc));
}

/*
 * A memif server whose process was killed leaves its socket file behind,
 * and the next server on that path fails with EADDRINUSE: remove the file if
 * it is a socket nobody listens on (a live server's is left alone).
 */
static void
memif_stale_socket(const char *name, const char *devargs)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *p = strstr(devargs, "socket=");
	struct stat st;
	size_t n;
	int fd;

	if (strncmp(devargs, "net_memif", 9) != 0 || strstr(devargs, "role=client") != NULL ||
	    strstr(devargs, "socket-abstract=no") == NULL || p == NULL)
		return;
	p += strlen("socket=");
	n = strcspn(p, ",");
	if (n == 0 || n >= sizeof(sa.sun_path))
		return;
	memcpy(sa.sun_path, p, n);
	if (stat(sa.sun_path, &st) != 0 || !S_ISSOCK(st.st_mode))
		return;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 && errno == ECONNREFUSED) {
		GLUE_LOG(INFO, "%s: removing stale memif socket %s", name, sa.sun_path);
		unlink(sa.sun_path);
	}
	close(fd);
}

/*
 * The errno a PMD's log lines name last ("ioctl failed (SIOCGIFINDEX):No
 * such device"), 0 if none: the cause behind the code rte_dev_probe()
 * returns, which is often EPERM whatever happened (EAL's attach failed).
 */
static int
logged_errno(const char *log)
{
	const char *best = NULL;
	int e, rc = 0;

	for (e = 1; e < 134; e++) {
		const char *text = strerror(e), *at = log, *hit = NULL;

		if (strncmp(text, "Unknown error", 13) == 0)
			continue;
		while ((at = strstr(at, text)) != NULL)
			hit = at++;
		if (hit != NULL && (best == NULL || hit > best)) {
			best = hit;
			rc = e;
		}
	}
	return rc;
}

/*
 * rte_dev_probe(@p devargs), its log taken in passing: what the PMD said
 * goes on to viad's log as before, and on failure its cause (the errno the
 * PMD's lines name) replaces a bare "Operation not permitted". Runs at
 * start, when no other thread of viad logs. @return rte_dev_probe()'s
 * result, or -(the PMD's errno)
 */
static int
probe_with_cause(struct via_port *port, const char *devargs)
{
	FILE *saved = rte_log_get_stream(), *mem;
	char *log = NULL, *line, *last = NULL, *save;
	size_t len = 0;
	int rc, cause;

	mem = open_memstream(&log, &len);
	if (mem != NULL)
		rte_openlog_stream(mem);
	rc = rte_dev_probe(devargs);
	if (mem == NULL) {
		cause = 0;
	} else {
		rte_openlog_stream(saved == stderr ? NULL : saved);
		fclose(mem);
		fputs(log, saved != NULL ? saved : stderr);
		cause = rc < 0 && rc != -EEXIST ? logged_errno(log) : 0;
		/* the PMD's own line: the last one that names the cause */
		for (line = strtok_r(log, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save))
			if (cause != 0 && strstr(line, strerror(cause)) != NULL)
				last = line;
	}
	if (rc < 0 && rc != -EEXIST) {
		if (cause != 0)
			rc = -cause;
		GLUE_LOG(ERR, "%s: rte_dev_probe(\"%s\"): %s%s%s%s", port->name, devargs,
			 rte_strerror(-rc), last ? " (the driver: \"" : "", last ? last : "",
			 last ? "\")" : "");
	}
	free(log);
	return rc;
}

/* Steps 1-3 of probe for @p devargs: *pid configured, *info its own. */
static int
ethdev_attach(struct via_port *port, const struct via_glue_port_conf *conf,
	      const char *devargs, uint16_t *pidp, struct rte_eth_dev_info *info)
{
	bool hotplugged;
	uint16_t pid;
	int rc;

	/*
	 * Look for the port first: rte_dev_probe() of an already attached
	 * device returns -EEXIST or even 0 (22.11 overwrites -EEXIST with the
	 * result of the secondary-process sync), so its return value cannot
	 * tell "attached now" from "was already there".
	 */
	rc = ethdev_find_port(devargs, &pid);
	if (rc == -EBUSY) {
		GLUE_LOG(ERR, "%s: \"%s\" is already used by another port",
			 port->name, devargs);
		return rc;
	}
	hotplugged = rc != 0;
	if (hotplugged) {
		memif_stale_socket(port->name, devargs);
		rc = probe_with_cause(port, devargs);
		if (rc < 0 && rc != -EEXIST)
			return rc;
		rc = ethdev_find_port(devargs, &pid);
		if (rc < 0) {
			GLUE_LOG(ERR, "%s: no ethdev port for \"%s\"",
				 port->name, devargs);
			ethdev_detach_devargs(devargs);
			return rc;
		}
	} else {
		GLUE_LOG(INFO, "%s: \"%s\" already attached (port %u), "
			 "adopting it", port->name, devargs, pid);
	}

	memset(info, 0, sizeof(*info));
	rc = rte_eth_dev_info_get(pid, info);
	if (rc == 0)
		rc = ethdev_configure(port, pid, conf, info);
	if (rc < 0) {
		/* leave an adopted device alone, undo our own hot-plug */
		if (hotplugged)
			ethdev_release(pid, info->device);
		return rc;
	}
	*pidp = pid;
	return 0;
}

/*
 * Steps 1-4 of probe: with viad's XDP program where conf asks for it and it
 * loads, else as given.
 */
static int
ethdev_attach_xdp(struct via_port *port, const struct via_glue_port_conf *conf,
		  uint16_t *pid, struct rte_eth_dev_info *info)
{
	char devargs[512];
	int rc;

	if (conf->xdp_prog == NULL || strncmp(conf->devargs, "net_af_xdp", 10) != 0 ||
	    strstr(conf->devargs, "xdp_prog=") != NULL)
		return ethdev_attach(port, conf, conf->devargs, pid, info);
	if (conf->xdp_prog[0] == '\0') {
		GLUE_LOG(WARNING, "%s: no XDP program (viad.xdp_prog is empty: built without "
			 "clang and libbpf-dev): the PMD's own takes every frame of the interface, "
			 "so IP on it stops while viad runs", port->name);
		return ethdev_attach(port, conf, conf->devargs, pid, info);
	}
	if (access(conf->xdp_prog, R_OK) != 0) {
		rc = -errno;
	} else if ((size_t)snprintf(devargs, sizeof(devargs), "%s,xdp_prog=%s", conf->devargs,
				    conf->xdp_prog) >= sizeof(devargs)) {
		rc = -ENAMETOOLONG;
	} else {
		rc = ethdev_attach(port, conf, devargs, pid, info);
		if (rc == 0) {
			GLUE_LOG(INFO, "%s: XDP program %s: VIA frames to viad, the others "
				 "to the kernel", port->name, conf->xdp_prog);
			return 0;
		}
		if (rc == -EBUSY)
			return rc;
	}
	GLUE_LOG(WARNING, "%s: XDP program %s not loaded (%s): the PMD's own takes every "
		 "frame of the interface, so IP on it stops while viad runs", port->name,
		 conf->xdp_prog, rte_strerror(-rc));
	return ethdev_attach(port, conf, conf->devargs, pid, info);
}

/* Step 5: the exception interface, with the port's MAC and MTU. */
static int
ethdev_exc_open(struct via_port *port, const struct via_glue_port_conf *conf, uint16_t pid)
{
	struct ethdev_priv *priv = port->priv;
	struct rte_ether_addr mac;
	uint16_t mtu;
	int rc;

	rc = rte_eth_macaddr_get(pid, &mac);
	if (rc == 0)
		rc = rte_eth_dev_get_mtu(pid, &mtu);
	if (rc == 0)
		rc = via_exc_open(&priv->exc, port->name, conf->ip_interface, &mac, mtu,
				  conf->nb_rxq, conf->mp);
	return rc;
}

/**
 * probe slot.  Errors: -EINVAL (no devargs, no mempool, invalid MAC
 * override, too many queues, MTU out of range), -EBUSY (port already used
 * by another via_port), -ENODEV (device attached but no ethdev port found),
 * rte_dev_probe() errors (e.g. -ENOENT/-EINVAL for unknown drivers or bad
 * arguments), ethdev configure/queue-setup/MAC/promiscuous errors, and
 * the exception interface's (via_exc_open()).
 */
static int
ethdev_probe(struct via_port *port, const struct via_glue_port_conf *conf)
{
	struct ethdev_priv *priv = port->priv;
	struct rte_eth_dev_info info;
	uint16_t pid;
	int rc;

	if (conf->devargs == NULL || conf->devargs[0] == '\0' ||
	    conf->mp == NULL)
		return -EINVAL;
	if (conf->mac != NULL && !rte_is_valid_assigned_ether_addr(conf->mac))
		return -EINVAL;
	rc = ethdev_attach_xdp(port, conf, &pid, &info);
	if (rc < 0)
		return rc;
	if (conf->ip_interface != NULL) {
		rc = ethdev_exc_open(port, conf, pid);
		if (rc < 0) {
			ethdev_release(pid, info.device);
			return rc;
		}
	}

	claimed[pid] = true;
	priv->dev = info.device;
	port->port_id = pid;
	port->caps = (ethdev_tx_by_va(&info, conf->devargs) ? VIA_PORT_CAP_TX_BY_VA : 0) |
		     (ethdev_tx_kick(&info) ? VIA_PORT_CAP_TX_KICK : 0);
	if (strcmp(info.driver_name, "net_memif") == 0) {
		static pthread_once_t once = PTHREAD_ONCE_INIT;

		pthread_once(&once, burst_guard_install);
		priv->guarded = true;
		/* frames are copied between the two processes' memory: nothing
		 * on the way can flip a bit that a CRC would catch */
		port->caps |= VIA_PORT_CAP_INTACT;
		/* a client (memif's default role) connects only at start */
		if (strstr(conf->devargs, "role=server") == NULL)
			port->caps |= VIA_PORT_CAP_RESTART;
	}
	return 0;
}

static void
ethdev_remove(struct via_port *port)
{
	struct ethdev_priv *priv = port->priv;

	if (port->port_id >= RTE_MAX_ETHPORTS)
		return;
	claimed[port->port_id] = false;
	via_exc_close(priv->exc);
	priv->exc = NULL;
	ethdev_release(port->port_id, priv->dev);
	port->port_id = VIA_PORT_ID_NONE;
}

static const struct via_glue_module ethdev_module = {
	.abi_version = VIA_GLUE_ABI_VERSION,
	.name = "ethdev",
	.ops = {
		.probe = ethdev_probe,
		.remove = ethdev_remove,
		.link_get = ethdev_link_get,
		.stats_get = ethdev_stats_get,
		.rx_burst = ethdev_rx_burst,
		.tx_burst = ethdev_tx_burst,
		.needs = ethdev_needs,
	},
	.priv_size = sizeof(struct ethdev_priv),
};

VIA_GLUE_MODULE_REGISTER(ethdev_module)
