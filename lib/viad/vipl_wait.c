/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The spin before a sleep. VipSendWait, VipRecvWait and VipCQWait block the
 * caller "until a Descriptor is completed" (VIA §9.6.3, §9.6.6, §9.6.8);
 * how is the provider's choice. In the spec's model the NIC interrupts, the
 * Kernel Agent unblocks the thread and "the thread then processes the
 * completion as if it had polled for it" (§6.4.2). Here that interrupt is a
 * FUTEX_WAKE from viad's poll lcore and the sleep a FUTEX_WAIT: two system
 * calls and the wake-up of a thread on another CPU, about 20 us on a KVM
 * guest, where a small message's round trip on one viad is about 1 us. A
 * thread that slept at once would pay that for every message it waits for,
 * and viad's data path would pay the FUTEX_WAKE.
 *
 * So a waiter first watches its wait word, as a poller would, for a
 * bounded time, and sleeps only if nothing came by then. A completion
 * within the spin costs no system call on either side: viad calls
 * FUTEX_WAKE only for a waiter counted in `sleepers`, which a spinner is
 * not. A wait that outlasts the spin has wasted at most the spin, about
 * what the sleep and wake-up it then takes cost anyway; after the spin an
 * idle waiter uses no CPU.
 *
 * Spinning is wrong where the CPU is shared with what the waiter waits for:
 * a viad poll lcore on the waiter's CPU (two viads and two programs on two
 * CPUs, say) cannot produce the completion while the waiter spins, so every
 * spin runs to its end and then the waiter sleeps anyway (measured: 64 B
 * round trip 15 us without a spin, 117 us with a 50 us one). A thread
 * learns that from its own waits: a spin that ran out, followed by a sleep
 * shorter than the spin, means the completion came just after the CPU was
 * given up (or later than the spin by less than it: spinning did not help
 * either). After MISS_LIMIT of these in a row the thread does not spin,
 * but for one probing wait in PROBE_MIN, which finds out whether spinning
 * pays again; each probe that misses too doubles that interval, up to
 * PROBE_MAX, so that probes do not show in the tail of a steady
 * oversubscribed load. Waits that end in a long sleep (an idle queue)
 * teach nothing.
 *
 * VIPL_WAIT_SPIN_US in the environment sets the spin in microseconds, read
 * once by the library; 0 sleeps at once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "vipl_priv.h"
#include "vipl_wait.h"

/* About the cost of a futex sleep and wake-up on another CPU (see above). */
#define SPIN_DEFAULT_US 50
/* VIPL_WAIT_SPIN_US above this is taken for a mistake */
#define SPIN_MAX_US 1000000
/* looks at the word between two clock reads: a pause is some 10 to 140
 * cycles, a vDSO clock read some 50, so the spin overshoots its end by
 * about a microsecond at most and the clock costs a few percent of it */
#define SPIN_CLOCK_EVERY 16
/* missed spins in a row after which a thread stops spinning */
#define MISS_LIMIT 2
/* a thread that stopped spinning still spins in one wait of these */
#define PROBE_MIN 32
#define PROBE_MAX 1024
/* vipl_spin::end of a wait that does not spin: a time long past */
#define SPIN_NONE 1

/* Spin-wait hint: lets the sibling hyperthread run and saves power, and on
 * x86 spares the pipeline flush when the word changes. No system call. */
#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ volatile("yield" ::: "memory")
#else
#define cpu_relax() __asm__ volatile("" ::: "memory")
#endif

static pthread_once_t spin_once = PTHREAD_ONCE_INIT;
static uint64_t spin_ns;

/* this thread's missed spins in a row (up to MISS_LIMIT); once it
 * stopped spinning, the waits it did not spin in since the last probe and
 * how many make the next one */
static __thread unsigned spin_misses, spin_skips, spin_probe_every = PROBE_MIN;

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void
spin_read_env(void)
{
	const char *s = getenv("VIPL_WAIT_SPIN_US");
	/* with one CPU the completion cannot come while this thread spins:
	 * viad needs the CPU it holds */
	unsigned long dflt = sysconf(_SC_NPROCESSORS_ONLN) == 1 ? 0 : SPIN_DEFAULT_US;
	unsigned long us = dflt;
	char *end;

	if (s != NULL) {
		errno = 0;
		us = strtoul(s, &end, 10);
		if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || us > SPIN_MAX_US) {
			vipl_log("VIPL_WAIT_SPIN_US=\"%s\" is not a number of microseconds "
				 "0..%u; waits spin %lu us", s, SPIN_MAX_US, dflt);
			us = dflt;
		}
	}
	spin_ns = (uint64_t)us * 1000;
}

bool
vipl_spin_wait(struct vipl_spin *s, const uint32_t *word, uint32_t seq, uint64_t max_ns)
{
	uint64_t now;
	unsigned i;

	if (s->end == SPIN_NONE)
		return false;
	if (s->end == 0) {
		pthread_once(&spin_once, spin_read_env);
		if (spin_ns == 0 || max_ns == 0 ||
		    (spin_misses == MISS_LIMIT && ++spin_skips < spin_probe_every)) {
			s->end = SPIN_NONE;
			return false;
		}
		spin_skips = 0;
		now = now_ns();
		s->end = now + (spin_ns < max_ns ? spin_ns : max_ns);
	} else {
		now = now_ns();
		if (now >= s->end)
			return false;
	}
	for (i = 1;; i++) {
		/* only a hint that the queue may have changed: the caller
		 * looks at the queue itself, after a seq_cst read of the word */
		if (__atomic_load_n(word, __ATOMIC_RELAXED) != seq)
			return true;
		cpu_relax();
		if (i % SPIN_CLOCK_EVERY == 0 && now_ns() >= s->end)
			return false;
	}
}

void
vipl_spin_sleeps(struct vipl_spin *s)
{
	if (s->end > SPIN_NONE && s->slept == 0)
		s->slept = now_ns();
}

void
vipl_spin_done(const struct vipl_spin *s)
{
	if (s->end <= SPIN_NONE)
		return;         /* it did not spin: nothing learnt */
	if (s->slept == 0) {
		/* it came within the spin */
		spin_misses = 0;
		spin_probe_every = PROBE_MIN;
	} else if (now_ns() - s->slept < spin_ns) {
		if (spin_misses < MISS_LIMIT)
			spin_misses++;
		else if (spin_probe_every < PROBE_MAX)
			spin_probe_every *= 2;  /* a probe missed */
	}
}
