/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Poll lcores: the "NIC" of VIA §11. Worker lcore N runs shard N of the
 * data path (dp.c; struct via_shard): receive queue N of every port that
 * has one, its inbox and its VIs, under the shard's lock, dropped between
 * iterations; and the accounting of pollers that sleep.
 *
 * Idle policy (viad.conf poll_mode): busy spins forever; backoff spins for
 * idle_spin_us after the last work, then sleeps idle_sleep_us per empty
 * iteration, so several viads can share a small machine.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "dp.h"

static struct via_poll_stats poll_stats[RTE_MAX_LCORE];

/*
 * One more (@p delta 1) or one fewer (-1) poller asleep: every client's
 * segment says how many (via_abi.h, "Wake-up contract", pairs 1 and 2). Under
 * sleep_lock, so that the last count stored is the true one.
 */
static void
count_asleep(struct viad *d, int delta)
{
	struct via_session *s;
	uint32_t n;

	via_dp_lock(&d->sleep_lock);
	n = d->poller_asleep + (uint32_t)delta;
	__atomic_store_n(&d->poller_asleep, n, __ATOMIC_SEQ_CST);
	TAILQ_FOREACH(s, &d->session_list, link) {
		if (s->opened)
			__atomic_store_n(&((struct via_shm_header *)s->seg.va)->poller_asleep, n,
					 __ATOMIC_SEQ_CST);
	}
	via_dp_unlock(&d->sleep_lock);
}

/*
 * Adaptive polling (NEED_WAKEUP): tell every client one more poller is
 * about to sleep, then look at shard @p me's doorbells and inbox one last
 * time; the orderings are pairs 1 and 2 of via_abi.h's "Wake-up contract". Called with the
 * shard's lock held.
 * @return how long the poller may sleep in microseconds, 0 if there is work
 *         (the sleep then does not happen; end_sleep() all the same)
 */
static uint32_t
prepare_sleep(struct viad *d, struct via_shard *me)
{
	uint32_t us = d->conf.adaptive_timeout_us;
	struct via_session *s;
	unsigned i;

	/* the flags first, then the last look (seq_cst all): a client that
	 * rang after our look sees the count and writes the shared eventfd,
	 * another thread that handed us work sees asleep and writes ours;
	 * the send rings polled without doorbells go back to them first,
	 * and are looked at (pair 6) */
	__atomic_store_n(&me->asleep, 1, __ATOMIC_SEQ_CST);
	count_asleep(d, 1);
	if (via_dp_polled_stop_all(me) || !rte_ring_empty(me->inbox) || via_zc_pending(me))
		return 0;
	for (i = 0; me->index == 0 && i < d->nb_nics; i++) {
		if (!rte_ring_empty(d->nics[i].backlog))
			return 0;
	}
	TAILQ_FOREACH(s, &d->session_list, link) {
		if (!s->opened)
			continue;
		for (i = 0; i < via_bell_summary_words(s->bell_words_live); i++) {
			if (__atomic_load_n(&s->bell_summary[i], __ATOMIC_SEQ_CST) &
			    me->bell_masks[i])
				return 0;
		}
	}
	/* reliable connections keep timers: wake up in time for them */
	if (!TAILQ_EMPTY(&me->rel_vis))
		us = RTE_MIN(us, d->conf.rel_rto_min_us);
	return us;
}

/* The poller of @p me is awake again. */
static void
end_sleep(struct viad *d, struct via_shard *me)
{
	count_asleep(d, -1);
	__atomic_store_n(&me->asleep, 0, __ATOMIC_SEQ_CST);
}

void
via_poll_wake(struct via_shard *sh)
{
	if (__atomic_load_n(&sh->asleep, __ATOMIC_SEQ_CST) != 0)
		eventfd_write(sh->wake_fd, 1);
}

/*
 * Nothing to do for a while: sleep as poll_mode says. Adaptive: until the
 * timeout, a write of the shard's own eventfd (work handed over by another
 * thread) or of the shared one (a client's doorbell, the control thread),
 * which wakes every sleeper.
 */
static void
idle(struct viad *d, struct via_shard *me)
{
	struct pollfd p[2] = {
		{ .fd = d->wake_fd, .events = POLLIN },
		{ .fd = me->wake_fd, .events = POLLIN },
	};
	bool shared = false;
	struct timespec ts;
	unsigned i;
	uint64_t n;
	uint32_t us;

	if (d->conf.poll_mode == VIA_POLL_BACKOFF) {
		usleep(d->conf.idle_sleep_us);
		return;
	}
	via_dp_lock(&me->lock);
	us = prepare_sleep(d, me);
	via_dp_unlock(&me->lock);
	if (us > 0) {
		/* until a client rings (it writes the eventfd only because it
		 * saw poller_asleep), another shard hands frames over, or the
		 * timeout: port frames, timers */
		ts.tv_sec = us / 1000000;
		ts.tv_nsec = (long)(us % 1000000) * 1000;
		if (ppoll(p, 2, &ts, NULL) > 0) {
			shared = (p[0].revents & POLLIN) && read(d->wake_fd, &n, sizeof(n)) > 0;
			if (p[1].revents & POLLIN)
				(void)!read(me->wake_fd, &n, sizeof(n));
		}
	}
	via_dp_lock(&me->lock);
	end_sleep(d, me);
	via_dp_unlock(&me->lock);
	/*
	 * The shared eventfd is read by one poller, and its write may have
	 * been for a VI of another sleeping shard: that one is woken through
	 * its own eventfd. Passed on through the shared one, the wake-up was
	 * lost to a livelock: the passer, asleep again within its idle spin,
	 * read it back before the sleeper it was for got a CPU, again and
	 * again, until that sleeper's timeout (adaptive_timeout_us).
	 */
	for (i = 0; shared && i < d->nb_shards; i++) {
		if (&d->shards[i] != me)
			via_poll_wake(&d->shards[i]);
	}
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
	/* "via-poll-N": for top -H, and the name tests/lcore_alloc counts
	 * the allocations of (none are allowed from here on: docs/design.md,
	 * "Memory on the poll lcores") */
	{
		char name[16];

		snprintf(name, sizeof(name), "via-poll-%u", me->index);
		pthread_setname_np(pthread_self(), name);
	}
	{
		/* which CPUs it runs on, for whoever places processes beside
		 * viad (viactl cpus says it too) */
		rte_cpuset_t set = rte_lcore_cpuset(rte_lcore_id());
		char cpus[64];
		int cpu, len = 0;

		cpus[0] = '\0';
		for (cpu = 0; cpu < CPU_SETSIZE && len < (int)sizeof(cpus) - 8; cpu++)
			if (CPU_ISSET(cpu, &set))
				len += snprintf(cpus + len, sizeof(cpus) - (size_t)len, "%s%d",
						len ? "," : "", cpu);
		VLOG_INFO("poll lcore %u on CPU %s: shard %u of %u, %s", rte_lcore_id(), cpus,
			  me->index, d->nb_shards,
			  d->conf.poll_mode == VIA_POLL_BUSY ? "busy" :
			  d->conf.poll_mode == VIA_POLL_BACKOFF ? "backoff" : "adaptive");
	}
	while (!__atomic_load_n(&d->stopping, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&d->parked, __ATOMIC_RELAXED)) {
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
via_poll_stats_carry(const struct via_poll_stats *carried)
{
	struct via_poll_stats *st = via_poll_stats_here();

	st->frames_rx += carried->frames_rx;
	st->frames_tx += carried->frames_tx;
	st->frames_dropped += carried->frames_dropped;
	st->frames_corrupt += carried->frames_corrupt;
	st->frames_unmatched += carried->frames_unmatched;
	st->cq_overruns += carried->cq_overruns;
	st->frames_retransmitted += carried->frames_retransmitted;
	st->rto_expiries += carried->rto_expiries;
	st->frames_tx_zero_copy += carried->frames_tx_zero_copy;
	st->naks_tx += carried->naks_tx;
	st->naks_rx += carried->naks_rx;
	st->frames_duplicate += carried->frames_duplicate;
	st->frames_out_of_order += carried->frames_out_of_order;
	st->cm_cookies_sent += carried->cm_cookies_sent;
	st->cm_requests_refused += carried->cm_requests_refused;
}

void
via_poll_stats_sum(struct via_ctl_counters *c)
{
	unsigned lc;

	/* the control thread's too: the frames it sends, what an upgrade carried */
	RTE_LCORE_FOREACH(lc) {
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
