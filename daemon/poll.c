/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Poll lcores: the "NIC" of VIA §11. Worker lcore N runs shard N of the
 * data path (dp.c; struct via_shard): receive queue N of every port that
 * has one, its inbox and its VIs, under the shard's lock, dropped between
 * iterations.
 *
 * Idle policy (viad.conf poll_mode): busy spins forever; backoff spins for
 * idle_spin_us after the last work, then sleeps idle_sleep_us per empty
 * iteration, so several viads can share a small machine.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "dp.h"

static struct via_poll_stats poll_stats[RTE_MAX_LCORE];

/* Nothing to do for a while: sleep as poll_mode says. */
static void
idle(struct viad *d, struct via_shard *me)
{
	struct pollfd p = { .fd = d->wake_fd, .events = POLLIN };
	bool woken = false;
	struct timespec ts;
	uint32_t us, others;
	uint64_t n;

	if (d->conf.poll_mode == VIA_POLL_BACKOFF) {
		usleep(d->conf.idle_sleep_us);
		return;
	}
	via_dp_lock(&me->lock);
	us = via_dp_prepare_sleep(d, me);
	via_dp_unlock(&me->lock);
	if (us > 0) {
		/* until a client rings (it writes the eventfd only because it
		 * saw poller_asleep), another shard hands frames over, or the
		 * timeout: port frames, timers */
		ts.tv_sec = us / 1000000;
		ts.tv_nsec = (long)(us % 1000000) * 1000;
		woken = ppoll(&p, 1, &ts, NULL) > 0 && read(d->wake_fd, &n, sizeof(n)) > 0;
	}
	via_dp_lock(&me->lock);
	others = via_dp_end_sleep(d);
	via_dp_unlock(&me->lock);
	/* one eventfd for all: the wake-up may have been for a VI of another
	 * sleeping shard, so pass it on; each passes it once, so every sleeper
	 * wakes and looks at its own doorbells (no lost wake-up) */
	if (woken && others > 0)
		eventfd_write(d->wake_fd, 1);
}

int
via_poll_main(void *arg)
{
	struct viad *d = arg;
	struct via_poll_stats *st = &poll_stats[rte_lcore_id()];
	struct via_shard *me = d->shards;
	const uint64_t spin = rte_get_timer_hz() / 1000000 * d->conf.idle_spin_us;
	uint64_t last_work = rte_get_timer_cycles();

	st->started_at = last_work;
	/* main.c launched this lcore for one shard */
	while (me->lcore != rte_lcore_id())
		me++;
	VLOG_INFO("poll lcore %u: shard %u of %u, %s", rte_lcore_id(), me->index, d->nb_shards,
		  d->conf.poll_mode == VIA_POLL_BUSY ? "busy" :
		  d->conf.poll_mode == VIA_POLL_BACKOFF ? "backoff" : "adaptive");
	while (!__atomic_load_n(&d->stopping, __ATOMIC_RELAXED)) {
		/* one timer read per iteration: the busy share telemetry reports */
		uint64_t start = rte_get_timer_cycles();
		unsigned work;

		via_dp_lock(&me->lock);
		work = via_dp_poll(d, me, st);
		via_dp_unlock(&me->lock);
		st->iterations++;
		if (work != 0) {
			last_work = rte_get_timer_cycles();
			st->busy_iterations++;
			st->busy_cycles += last_work - start;
			continue;
		}
		if (d->conf.poll_mode != VIA_POLL_BUSY && start - last_work > spin)
			idle(d, me);
		else
			rte_pause();
	}
	return 0;
}

const struct via_poll_stats *
via_poll_stats_of(unsigned lcore)
{
	return &poll_stats[lcore];
}

struct via_poll_stats *
via_poll_stats_here(void)
{
	/* the control thread is an EAL lcore too: every caller has an id */
	return &poll_stats[rte_lcore_id()];
}

void
via_poll_stats_sum(struct via_ctl_counters *c)
{
	unsigned lc;

	RTE_LCORE_FOREACH_WORKER(lc) {
		c->frames_rx += __atomic_load_n(&poll_stats[lc].frames_rx, __ATOMIC_RELAXED);
		c->frames_tx += __atomic_load_n(&poll_stats[lc].frames_tx, __ATOMIC_RELAXED);
		c->frames_dropped += __atomic_load_n(&poll_stats[lc].frames_dropped, __ATOMIC_RELAXED);
		c->frames_corrupt += __atomic_load_n(&poll_stats[lc].frames_corrupt, __ATOMIC_RELAXED);
		c->cq_overruns += __atomic_load_n(&poll_stats[lc].cq_overruns, __ATOMIC_RELAXED);
		c->frames_retransmitted += __atomic_load_n(&poll_stats[lc].frames_retransmitted,
							   __ATOMIC_RELAXED);
		c->rto_expiries += __atomic_load_n(&poll_stats[lc].rto_expiries, __ATOMIC_RELAXED);
		c->frames_tx_zero_copy += __atomic_load_n(&poll_stats[lc].frames_tx_zero_copy,
							  __ATOMIC_RELAXED);
	}
}
