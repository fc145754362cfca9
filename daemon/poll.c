/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Poll lcores: the "NIC" of VIA §11. Each worker lcore serves receive queue
 * (worker index) of every port that has one. The VIA transport that turns
 * frames into completions plugs in here (see docs/design.md); until it does,
 * frames that reach viad have no VI to go to and are counted as dropped.
 *
 * Idle policy (viad.conf poll_mode): busy spins forever; backoff spins for
 * idle_spin_us after the last work, then sleeps idle_sleep_us per empty
 * iteration, so several viads can share a small machine.
 */
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "via_glue.h"
#include "viad.h"

#define RX_BURST 32

static struct via_poll_stats poll_stats[RTE_MAX_LCORE];

static unsigned
poll_ports(struct viad *d, uint16_t q, struct via_poll_stats *st)
{
	struct rte_mbuf *pkts[RX_BURST];
	unsigned i, work = 0;

	for (i = 0; i < d->nb_nics; i++) {
		struct via_port *port = d->nics[i].port;
		uint16_t n, k;

		if (q >= via_port_nb_rxq(port))
			continue;
		n = via_port_rx_burst(port, q, pkts, RX_BURST);
		for (k = 0; k < n; k++)
			rte_pktmbuf_free(pkts[k]);
		st->frames_rx += n;
		st->frames_dropped += n;
		work += n;
	}
	return work;
}

int
via_poll_main(void *arg)
{
	struct viad *d = arg;
	struct via_poll_stats *st = &poll_stats[rte_lcore_id()];
	/* queue index = this worker's rank among workers */
	uint16_t q = (uint16_t)(rte_lcore_index((int)rte_lcore_id()) - 1);
	const uint64_t spin = rte_get_timer_hz() / 1000000 * d->conf.idle_spin_us;
	uint64_t last_work = rte_get_timer_cycles();

	VLOG_INFO("poll lcore %u: rx queue %u, %s", rte_lcore_id(), q,
		  d->conf.poll_mode == VIA_POLL_BUSY ? "busy" : "backoff");
	while (!__atomic_load_n(&d->stopping, __ATOMIC_RELAXED)) {
		if (poll_ports(d, q, st) != 0) {
			last_work = rte_get_timer_cycles();
			continue;
		}
		if (d->conf.poll_mode == VIA_POLL_BACKOFF &&
		    rte_get_timer_cycles() - last_work > spin)
			usleep(d->conf.idle_sleep_us);
		else
			rte_pause();
	}
	return 0;
}

void
via_poll_stats_sum(struct via_ctl_counters *c)
{
	unsigned lc;

	RTE_LCORE_FOREACH_WORKER(lc) {
		c->frames_rx += __atomic_load_n(&poll_stats[lc].frames_rx, __ATOMIC_RELAXED);
		c->frames_tx += __atomic_load_n(&poll_stats[lc].frames_tx, __ATOMIC_RELAXED);
		c->frames_dropped += __atomic_load_n(&poll_stats[lc].frames_dropped, __ATOMIC_RELAXED);
	}
}
