/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file glue.c
 * @brief Ops-table machinery: default (ethdev) slots, module registry,
 *        registration validation, port open/close/start/stop.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "via_glue.h"
#include "glue_internal.h"

RTE_LOG_REGISTER(via_glue_logtype, via.glue, INFO)

/* ------------------------------------------------------------------------ */
/* Default slots: drive the DPDK ethdev port->port_id.                      */
/* ------------------------------------------------------------------------ */

static void
default_remove(struct via_port *port)
{
	RTE_SET_USED(port);
}

static int
default_start(struct via_port *port)
{
	return rte_eth_dev_start(port->port_id);
}

static void
default_stop(struct via_port *port)
{
	int rc = rte_eth_dev_stop(port->port_id);

	if (rc < 0)
		GLUE_LOG(WARNING, "%s: rte_eth_dev_stop(%u): %s", port->name,
			 port->port_id, rte_strerror(-rc));
}

static int
default_mac_addr(struct via_port *port, struct rte_ether_addr *mac)
{
	return rte_eth_macaddr_get(port->port_id, mac);
}

static int
default_mtu_get(struct via_port *port, uint16_t *mtu)
{
	return rte_eth_dev_get_mtu(port->port_id, mtu);
}

static int
default_link_get(struct via_port *port, struct via_port_link *link)
{
	struct rte_eth_link l;
	int rc;

	memset(&l, 0, sizeof(l));
	rc = rte_eth_link_get_nowait(port->port_id, &l);
	if (rc < 0)
		return rc;
	link->up = l.link_status == RTE_ETH_LINK_UP;
	link->speed_mbps = l.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ?
			   0 : l.link_speed;
	return 0;
}

static int
default_stats_get(struct via_port *port, struct via_port_stats *st)
{
	struct rte_eth_stats s;
	int rc;

	rc = rte_eth_stats_get(port->port_id, &s);
	if (rc < 0)
		return rc;
	st->rx_packets = s.ipackets;
	st->tx_packets = s.opackets;
	st->rx_bytes = s.ibytes;
	st->tx_bytes = s.obytes;
	st->rx_errors = s.ierrors;
	st->tx_errors = s.oerrors;
	st->rx_missed = s.imissed + s.rx_nombuf;
	return 0;
}

static uint16_t
default_rx_burst(struct via_port *port, uint16_t q, struct rte_mbuf **pkts,
		 uint16_t n)
{
	return rte_eth_rx_burst(port->port_id, q, pkts, n);
}

static uint16_t
default_tx_burst(struct via_port *port, uint16_t q, struct rte_mbuf **pkts,
		 uint16_t n)
{
	return rte_eth_tx_burst(port->port_id, q, pkts, n);
}

static int
default_needs(const struct via_glue_port_conf *conf, struct via_port_needs *needs)
{
	needs->headroom = 0;
	needs->mtu = conf->mtu != 0 ? conf->mtu : RTE_ETHER_MTU;
	return 0;
}

static const struct via_glue_ops default_ops = {
	.probe = NULL, /* required, no default */
	.remove = default_remove,
	.start = default_start,
	.stop = default_stop,
	.mac_addr = default_mac_addr,
	.mtu_get = default_mtu_get,
	.link_get = default_link_get,
	.stats_get = default_stats_get,
	.needs = default_needs,
	.rx_burst = default_rx_burst,
	.tx_burst = default_tx_burst,
};

const struct via_glue_ops *
via_glue_default_ops(void)
{
	return &default_ops;
}

/* ------------------------------------------------------------------------ */
/* Registry                                                                 */
/* ------------------------------------------------------------------------ */

struct glue_entry {
	char name[VIA_GLUE_NAME_MAX];
	struct via_glue_ops ops;       /* resolved: no NULL slot */
	size_t priv_size;
};

/*
 * Entries are only ever appended and never modified once published, so a
 * pointer to an entry's ops stays valid for the process lifetime.  The lock
 * covers the append and the scan (static initialiser: usable from
 * constructors before rte_eal_init()).
 */
static struct glue_entry registry[VIA_GLUE_MAX_MODULES];
static unsigned int nb_registered;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

/* Caller holds registry_lock. */
static const struct glue_entry *
registry_find_locked(const char *name)
{
	unsigned int i;

	for (i = 0; i < nb_registered; i++)
		if (strcmp(registry[i].name, name) == 0)
			return &registry[i];
	return NULL;
}

static const struct glue_entry *
registry_find(const char *name)
{
	const struct glue_entry *e;

	if (name == NULL)
		return NULL;
	pthread_mutex_lock(&registry_lock);
	e = registry_find_locked(name);
	pthread_mutex_unlock(&registry_lock);
	return e;
}

/* Take the module's slot if set, else the default. */
#define MERGE_SLOT(dst, src, slot) \
	((dst)->slot = (src)->slot != NULL ? (src)->slot : default_ops.slot)

int
via_glue_register(const struct via_glue_module *m)
{
	struct glue_entry *e;
	size_t len;
	int rc = 0;

	if (m == NULL)
		return -EINVAL;
	/* before any other field: another version may lay them out otherwise */
	if (m->abi_version != VIA_GLUE_ABI_VERSION)
		return -EPROTO;
	if (m->name == NULL || m->name[0] == '\0' || m->ops.probe == NULL)
		return -EINVAL;
	len = strnlen(m->name, VIA_GLUE_NAME_MAX);
	if (len >= VIA_GLUE_NAME_MAX)
		return -ENAMETOOLONG;

	pthread_mutex_lock(&registry_lock);
	if (registry_find_locked(m->name) != NULL) {
		rc = -EEXIST;
		goto out;
	}
	if (nb_registered >= VIA_GLUE_MAX_MODULES) {
		rc = -ENOSPC;
		goto out;
	}
	e = &registry[nb_registered];
	memset(e, 0, sizeof(*e));
	memcpy(e->name, m->name, len + 1);
	e->priv_size = m->priv_size;
	e->ops.probe = m->ops.probe;
	MERGE_SLOT(&e->ops, &m->ops, remove);
	MERGE_SLOT(&e->ops, &m->ops, start);
	MERGE_SLOT(&e->ops, &m->ops, stop);
	MERGE_SLOT(&e->ops, &m->ops, mac_addr);
	MERGE_SLOT(&e->ops, &m->ops, mtu_get);
	MERGE_SLOT(&e->ops, &m->ops, link_get);
	MERGE_SLOT(&e->ops, &m->ops, stats_get);
	MERGE_SLOT(&e->ops, &m->ops, needs);
	MERGE_SLOT(&e->ops, &m->ops, rx_burst);
	MERGE_SLOT(&e->ops, &m->ops, tx_burst);
	nb_registered++;
out:
	pthread_mutex_unlock(&registry_lock);
	return rc;
}

const struct via_glue_ops *
via_glue_lookup(const char *name)
{
	const struct glue_entry *e = registry_find(name);

	return e != NULL ? &e->ops : NULL;
}

/* ------------------------------------------------------------------------ */
/* Ports                                                                    */
/* ------------------------------------------------------------------------ */

int
via_glue_needs(const char *glue_name, const struct via_glue_port_conf *conf,
	       struct via_port_needs *needs)
{
	const struct glue_entry *e;

	if (glue_name == NULL || conf == NULL || needs == NULL)
		return -EINVAL;
	e = registry_find(glue_name);
	if (e == NULL)
		return -ENOENT;
	return e->ops.needs(conf, needs);
}

int
via_port_open(struct via_port **out, const char *glue_name,
	      const struct via_glue_port_conf *conf)
{
	const struct glue_entry *e;
	struct via_port *port;
	size_t name_len, size;
	int socket, rc;

	if (out == NULL || glue_name == NULL || conf == NULL ||
	    conf->name == NULL || conf->name[0] == '\0' ||
	    conf->nb_rxq == 0 || conf->nb_txq == 0)
		return -EINVAL;
	name_len = strnlen(conf->name, VIA_GLUE_NAME_MAX);
	if (name_len >= VIA_GLUE_NAME_MAX)
		return -ENAMETOOLONG;
	e = registry_find(glue_name);
	if (e == NULL)
		return -ENOENT;

	/* port, then the module's private area on its own cache line(s) */
	size = RTE_ALIGN_CEIL(sizeof(*port), RTE_CACHE_LINE_SIZE) +
	       RTE_ALIGN_CEIL(e->priv_size, RTE_CACHE_LINE_SIZE);
	socket = conf->socket_id;
	port = rte_zmalloc_socket("via_port", size, RTE_CACHE_LINE_SIZE,
				  socket);
	if (port == NULL && socket != SOCKET_ID_ANY) {
		socket = SOCKET_ID_ANY;
		port = rte_zmalloc_socket("via_port", size,
					  RTE_CACHE_LINE_SIZE, socket);
	}
	if (port == NULL)
		return -ENOMEM;

	port->ops = &e->ops;
	port->priv = e->priv_size != 0 ?
		     RTE_PTR_ADD(port, RTE_ALIGN_CEIL(sizeof(*port),
						      RTE_CACHE_LINE_SIZE)) :
		     NULL;
	port->port_id = VIA_PORT_ID_NONE;
	port->nb_rxq = conf->nb_rxq;
	port->nb_txq = conf->nb_txq;
	port->socket_id = socket;
	memcpy(port->name, conf->name, name_len + 1);
	strcpy(port->glue, e->name); /* both VIA_GLUE_NAME_MAX */

	rc = port->ops->probe(port, conf);
	if (rc < 0) {
		GLUE_LOG(ERR, "%s: %s probe failed: %s", port->name,
			 port->glue, rte_strerror(-rc));
		rte_free(port);
		return rc;
	}
	if (!rte_eth_dev_is_valid_port(port->port_id) &&
	    (port->ops->rx_burst == default_rx_burst ||
	     port->ops->tx_burst == default_tx_burst)) {
		GLUE_LOG(ERR, "%s: module %s uses the ethdev data path "
			 "but set no valid port_id", port->name, port->glue);
		rc = -EINVAL;
		goto fail_remove;
	}
	rc = port->ops->mac_addr(port, &port->mac);
	if (rc < 0) {
		GLUE_LOG(ERR, "%s: cannot read MAC: %s", port->name,
			 rte_strerror(-rc));
		goto fail_remove;
	}
	rc = port->ops->mtu_get(port, &port->mtu);
	if (rc < 0) {
		GLUE_LOG(ERR, "%s: cannot read MTU: %s", port->name,
			 rte_strerror(-rc));
		goto fail_remove;
	}
	*out = port;
	return 0;

fail_remove:
	port->ops->remove(port);
	rte_free(port);
	return rc;
}

void
via_port_close(struct via_port *port)
{
	if (port == NULL)
		return;
	via_port_stop(port);
	port->ops->remove(port);
	rte_free(port);
}

int
via_port_start(struct via_port *port)
{
	int rc;

	if (port == NULL)
		return -EINVAL;
	if (port->started)
		return 0;
	rc = port->ops->start(port);
	if (rc < 0) {
		GLUE_LOG(ERR, "%s: start failed: %s", port->name,
			 rte_strerror(-rc));
		return rc;
	}
	port->started = true;
	return 0;
}

void
via_port_stop(struct via_port *port)
{
	if (port == NULL || !port->started)
		return;
	port->ops->stop(port);
	port->started = false;
}

int
via_port_link_get(struct via_port *port, struct via_port_link *link)
{
	if (port == NULL || link == NULL)
		return -EINVAL;
	memset(link, 0, sizeof(*link));
	return port->ops->link_get(port, link);
}

int
via_port_stats_get(struct via_port *port, struct via_port_stats *st)
{
	if (port == NULL || st == NULL)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	return port->ops->stats_get(port, st);
}
