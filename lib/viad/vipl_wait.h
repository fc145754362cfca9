/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The bounded spin of a waiting thread before it sleeps on a futex
 * (vipl_wait.c): VipSendWait, VipRecvWait, VipCQWait and the notify thread.
 */
#ifndef VIPL_WAIT_H
#define VIPL_WAIT_H

#include <stdbool.h>
#include <stdint.h>

/** One wait's spin; zeroed before the wait first looks at its queue. */
struct vipl_spin {
	uint64_t end;      /**< CLOCK_MONOTONIC ns the spin ends; 0: not begun */
	uint64_t slept;    /**< when this wait first slept after a spin; 0: not */
};

/**
 * Watch the wait word @p word, which held @p seq when the caller last
 * looked at its queue, until it moves (return true: look at the queue
 * again) or this wait's spin is over (return false: sleep, FUTEX_WAIT on
 * @p seq). The first call of a wait starts the spin, for VIPL_WAIT_SPIN_US
 * but at most @p max_ns, or none (VIPL_WAIT_SPIN_US=0, or spins of this
 * thread that keep missing). Once the spin is over a call costs one clock
 * read at most.
 */
bool vipl_spin_wait(struct vipl_spin *s, const uint32_t *word, uint32_t seq, uint64_t max_ns);

/** The wait sleeps now: call before each FUTEX_WAIT. */
void vipl_spin_sleeps(struct vipl_spin *s);

/** The wait got what it waited for: the thread learns whether spinning pays. */
void vipl_spin_done(const struct vipl_spin *s);

#endif
