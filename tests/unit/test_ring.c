/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for abi/via_ring.h (SPSC ring between untrusted processes).
 *
 * Usage: test_ring [SEED]   (or VIA_TEST_SEED=SEED test_ring)
 * Output is TAP; exit status 0 iff every test passed. The randomized tests
 * print their seed so a failure can be replayed; none of them depends on
 * timing for correctness (waits are sched_yield loops).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_common.h"
#include "test_rand.h"
#include "via_ring.h"

/* Same, from a worker thread: record the failure and stop the thread. */
#define TCHECK(ctx, cond)                                                    \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "# %s:%d: check failed: %s\n",       \
				__FILE__, __LINE__, #cond);                  \
			__atomic_store_n(&(ctx)->failed, true,               \
					 __ATOMIC_RELAXED);                  \
			return NULL;                                         \
		}                                                            \
	} while (0)

static uint64_t g_seed = 0x5eed0f0cafef00dULL;

/* xorshift64*: per-thread stream for burst sizes and pauses. */
static uint64_t
rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

static void *
xaligned_alloc(size_t size)
{
	/* aligned_alloc wants a multiple of the alignment. */
	size = (size + VIA_CACHE_LINE - 1) & ~(size_t)(VIA_CACHE_LINE - 1);
	void *p = aligned_alloc(VIA_CACHE_LINE, size);

	if (p == NULL) {
		perror("aligned_alloc");
		exit(2);
	}
	memset(p, 0, size);
	return p;
}

/* ------------------------------------------------------------------ */
/* 1. parameter validation                                            */

static int
test_attach_errors(void)
{
	static struct via_ring_shared sh;
	static alignas(VIA_CACHE_LINE) uint8_t buf[2 * VIA_CACHE_LINE + 4096];
	struct via_ring r;
	uint8_t *slots = buf + 2 * VIA_CACHE_LINE;
	struct via_ring_shared *mis_sh = (void *)(buf + 8);

	REQUIRE(via_ring_mem_size(8, 16) == 128);
	REQUIRE(via_ring_mem_size(1, 8) == 8);
	REQUIRE(via_ring_mem_size(VIA_RING_MAX_CAPACITY, 8) ==
	      (size_t)VIA_RING_MAX_CAPACITY * 8);
	REQUIRE(via_ring_mem_size(0, 8) == 0);
	REQUIRE(via_ring_mem_size(3, 8) == 0);
	REQUIRE(via_ring_mem_size(VIA_RING_MAX_CAPACITY * 2, 8) == 0);
	REQUIRE(via_ring_mem_size(UINT32_C(1) << 31, 8) == 0);
	REQUIRE(via_ring_mem_size(8, 0) == 0);
	REQUIRE(via_ring_mem_size(8, 12) == 0);

	REQUIRE(via_ring_init_shared(NULL) == -EINVAL);
	REQUIRE(via_ring_init_shared(mis_sh) == -EINVAL);
	REQUIRE(via_ring_init_shared(&sh) == 0);

	REQUIRE(via_ring_attach(NULL, &sh, slots, 8, 8, true) == -EINVAL);
	REQUIRE(via_ring_attach(&r, NULL, slots, 8, 8, true) == -EINVAL);
	REQUIRE(via_ring_attach(&r, &sh, NULL, 8, 8, true) == -EINVAL);
	REQUIRE(via_ring_attach(&r, mis_sh, slots, 8, 8, true) == -EINVAL);
	REQUIRE(via_ring_attach(&r, &sh, slots + 4, 8, 8, false) == -EINVAL);
	REQUIRE(via_ring_attach(&r, &sh, slots, 0, 8, true) == -EINVAL);
	REQUIRE(via_ring_attach(&r, &sh, slots, 6, 8, false) == -EINVAL);
	REQUIRE(via_ring_attach(&r, &sh, slots, UINT32_MAX, 8, true) == -EINVAL);
	REQUIRE(via_ring_attach(&r, &sh, slots, VIA_RING_MAX_CAPACITY * 2, 8,
			      true) == -EINVAL);
	REQUIRE(via_ring_attach(&r, &sh, slots, 8, 0, false) == -EINVAL);
	REQUIRE(via_ring_attach(&r, &sh, slots, 8, 4, true) == -EINVAL);
	REQUIRE(via_ring_attach(&r, &sh, slots, 8, 20, false) == -EINVAL);

	REQUIRE(via_ring_attach(&r, &sh, slots, 8, 8, true) == 0);
	REQUIRE(via_ring_attach(&r, &sh, slots, 1, 4096, false) == 0);
	return 0;
}

/* ------------------------------------------------------------------ */
/* 2. single-threaded fill / drain                                    */

static int
fill_drain(uint32_t cap)
{
	struct via_ring_shared *sh = xaligned_alloc(sizeof(*sh));
	uint64_t *slots = xaligned_alloc(via_ring_mem_size(cap, 16));
	struct via_ring p, c;
	uint64_t e[2];

	REQUIRE(via_ring_init_shared(sh) == 0);
	REQUIRE(via_ring_attach(&p, sh, slots, cap, 16, true) == 0);
	REQUIRE(via_ring_attach(&c, sh, slots, cap, 16, false) == 0);

	REQUIRE(via_ring_avail(&c) == 0);
	REQUIRE(via_ring_dequeue(&c, e) == -EAGAIN);
	REQUIRE(via_ring_free_count(&p) == cap);

	for (uint32_t i = 0; i < cap; i++) {
		e[0] = i;
		e[1] = ~(uint64_t)i;
		REQUIRE(via_ring_enqueue(&p, e) == 0);
	}
	REQUIRE(via_ring_free_count(&p) == 0);
	REQUIRE(via_ring_enqueue(&p, e) == -ENOBUFS);
	REQUIRE(!p.corrupt);
	REQUIRE(sh->prod == cap);

	REQUIRE(via_ring_avail(&c) == cap);
	for (uint32_t i = 0; i < cap; i++) {
		REQUIRE(via_ring_dequeue(&c, e) == 0);
		REQUIRE(e[0] == i && e[1] == ~(uint64_t)i);
	}
	REQUIRE(via_ring_dequeue(&c, e) == -EAGAIN);
	REQUIRE(!c.corrupt);
	REQUIRE(sh->cons == cap);

	/* Burst API: fill half, peek in place, consume partially. */
	uint32_t half = cap > 1 ? cap / 2 : 1;
	REQUIRE(via_ring_free_count(&p) == cap);
	for (uint32_t i = 0; i < half; i++)
		*(uint64_t *)via_ring_slot(&p, i) = 1000 + i;
	REQUIRE(via_ring_avail(&c) == 0); /* not yet published */
	via_ring_produce(&p, half);
	REQUIRE(via_ring_avail(&c) == half);
	for (uint32_t i = 0; i < half; i++)
		REQUIRE(*(const uint64_t *)via_ring_peek(&c, i) == 1000 + i);
	via_ring_consume(&c, half);
	REQUIRE(via_ring_avail(&c) == 0);
	/* The producer's cached view of cons is stale (never too high)
	 * until the ring looks full; then it re-reads (at once if cap 1). */
	REQUIRE(via_ring_free_count(&p) == (half < cap ? cap - half : cap));
	via_ring_produce(&p, cap - half);
	REQUIRE(via_ring_free_count(&p) == half);
	REQUIRE(via_ring_avail(&c) == cap - half);
	via_ring_consume(&c, cap - half);

	/* Re-attach both sides to the live ring: state is picked up. */
	REQUIRE(via_ring_enqueue(&p, e) == 0);
	REQUIRE(via_ring_attach(&p, sh, slots, cap, 16, true) == 0);
	REQUIRE(via_ring_attach(&c, sh, slots, cap, 16, false) == 0);
	REQUIRE(via_ring_free_count(&p) == cap - 1);
	REQUIRE(via_ring_avail(&c) == 1);

	free(slots);
	free(sh);
	return 0;
}

static int
test_fill_drain(void)
{
	REQUIRE(fill_drain(1) == 0);
	REQUIRE(fill_drain(8) == 0);
	REQUIRE(fill_drain(1024) == 0);
	return 0;
}

/* ------------------------------------------------------------------ */
/* 3. free-running index wrap-around at 2^32                          */

static int
test_wraparound(void)
{
	const uint32_t cap = 64, start = 0xFFFFFF00u, total = 5000;
	struct via_ring_shared *sh = xaligned_alloc(sizeof(*sh));
	uint64_t *slots = xaligned_alloc(via_ring_mem_size(cap, 8));
	struct via_ring p, c;
	uint64_t rs = mix64(g_seed ^ 3), next_in = 0, next_out = 0, v = 0;

	REQUIRE(via_ring_init_shared(sh) == 0);
	sh->prod = start;
	sh->cons = start;
	REQUIRE(via_ring_attach(&p, sh, slots, cap, 8, true) == 0);
	REQUIRE(via_ring_attach(&c, sh, slots, cap, 8, false) == 0);
	REQUIRE(via_ring_free_count(&p) == cap);
	REQUIRE(via_ring_avail(&c) == 0);

	while (next_out < total) {
		uint32_t k = (uint32_t)(rng_next(&rs) % (cap + 1));

		/* Push up to k: mix the one-element and burst APIs. */
		if (k & 1) {
			while (k-- > 0 && next_in < total &&
			       via_ring_enqueue(&p, &next_in) == 0)
				next_in++;
		} else {
			uint32_t n = via_ring_free_count(&p);

			n = n < k ? n : k;
			if (n > total - next_in)
				n = (uint32_t)(total - next_in);
			for (uint32_t i = 0; i < n; i++)
				*(uint64_t *)via_ring_slot(&p, i) = next_in++;
			via_ring_produce(&p, n);
		}
		REQUIRE(p.local - sh->cons <= cap);

		/* Pop a random amount and check order. */
		k = (uint32_t)(rng_next(&rs) % (cap + 1));
		while (k-- > 0) {
			int rc = via_ring_dequeue(&c, &v);

			if (rc == -EAGAIN)
				break;
			REQUIRE(rc == 0);
			REQUIRE(v == next_out);
			next_out++;
		}
		/* Guarantee progress whatever the random draws. */
		if (next_in == next_out && next_in < total) {
			REQUIRE(via_ring_enqueue(&p, &next_in) == 0);
			next_in++;
		}
	}
	REQUIRE(via_ring_dequeue(&c, &v) == -EAGAIN);
	REQUIRE(!p.corrupt && !c.corrupt);
	/* Both indices really crossed 2^32. */
	REQUIRE(p.local == start + total && p.local < start);
	REQUIRE(c.local == p.local);
	REQUIRE(sh->prod == p.local && sh->cons == c.local);
	/* Exactly cap slots are free after the wrap. */
	for (uint32_t i = 0; i < cap; i++)
		REQUIRE(via_ring_enqueue(&p, &v) == 0);
	REQUIRE(via_ring_enqueue(&p, &v) == -ENOBUFS);

	free(slots);
	free(sh);
	return 0;
}

/* ------------------------------------------------------------------ */
/* 4. randomized two-thread producer/consumer                         */

struct elem {
	uint64_t seq;
	uint64_t payload[2];
	uint64_t csum;
};

static void
elem_make(struct elem *e, uint64_t seq)
{
	e->seq = seq;
	e->payload[0] = mix64(g_seed ^ seq);
	e->payload[1] = mix64(e->payload[0]);
	e->csum = seq ^ e->payload[0] ^ (e->payload[1] * 31) ^ 0xc0ffeeULL;
}

static bool
elem_ok(const struct elem *e, uint64_t seq)
{
	struct elem want;

	elem_make(&want, seq);
	return memcmp(e, &want, sizeof(want)) == 0;
}

struct stress {
	struct via_ring_shared *sh;
	void *slots;
	uint32_t cap;
	uint64_t total;
	bool failed;
	uint64_t full_waits, empty_waits;
};

static void *
stress_producer(void *arg)
{
	struct stress *s = arg;
	struct via_ring r;
	uint64_t rs = mix64(g_seed ^ 41), seq = 0;

	TCHECK(s, via_ring_attach(&r, s->sh, s->slots, s->cap,
				  sizeof(struct elem), true) == 0);
	while (seq < s->total) {
		if (__atomic_load_n(&s->failed, __ATOMIC_RELAXED))
			return NULL;
		uint64_t x = rng_next(&rs);
		uint32_t burst = 1 + (uint32_t)(x % 64);

		if ((x >> 32) % 8 == 0) {
			/* One-element API. */
			struct elem e;

			elem_make(&e, seq);
			int rc = via_ring_enqueue(&r, &e);

			if (rc == -ENOBUFS) {
				s->full_waits++;
				sched_yield();
				continue;
			}
			TCHECK(s, rc == 0);
			seq++;
			continue;
		}
		uint32_t n = via_ring_free_count(&r);

		TCHECK(s, !r.corrupt);
		if (n == 0) {
			s->full_waits++;
			sched_yield();
			continue;
		}
		n = n < burst ? n : burst;
		if (n > s->total - seq)
			n = (uint32_t)(s->total - seq);
		for (uint32_t i = 0; i < n; i++)
			elem_make(via_ring_slot(&r, i), seq + i);
		via_ring_produce(&r, n);
		seq += n;
	}
	return NULL;
}

static void *
stress_consumer(void *arg)
{
	struct stress *s = arg;
	struct via_ring r;
	uint64_t rs = mix64(g_seed ^ 42), seq = 0;
	struct elem e;

	TCHECK(s, via_ring_attach(&r, s->sh, s->slots, s->cap,
				  sizeof(struct elem), false) == 0);
	while (seq < s->total) {
		if (__atomic_load_n(&s->failed, __ATOMIC_RELAXED))
			return NULL;
		uint64_t x = rng_next(&rs);
		uint32_t burst = 1 + (uint32_t)(x % 64);

		if ((x >> 32) % 8 == 0) {
			int rc = via_ring_dequeue(&r, &e);

			if (rc == -EAGAIN) {
				s->empty_waits++;
				sched_yield();
				continue;
			}
			TCHECK(s, rc == 0);
			TCHECK(s, elem_ok(&e, seq));
			seq++;
			continue;
		}
		uint32_t n = via_ring_avail(&r);

		TCHECK(s, !r.corrupt);
		if (n == 0) {
			s->empty_waits++;
			sched_yield();
			continue;
		}
		n = n < burst ? n : burst;
		for (uint32_t i = 0; i < n; i++) {
			/* Copy out, then validate the private copy. */
			memcpy(&e, via_ring_peek(&r, i), sizeof(e));
			TCHECK(s, elem_ok(&e, seq + i));
		}
		via_ring_consume(&r, n);
		seq += n;
	}
	TCHECK(s, via_ring_avail(&r) == 0 && !r.corrupt);
	return NULL;
}

static int
test_stress(void)
{
	struct stress s = {
		.sh = xaligned_alloc(sizeof(struct via_ring_shared)),
		.cap = 256,
		.total = 2000000,
	};
	pthread_t tp, tc;
	struct timespec t0, t1;

	s.slots = xaligned_alloc(via_ring_mem_size(s.cap, sizeof(struct elem)));
	REQUIRE(via_ring_init_shared(s.sh) == 0);
	/* Start near the wrap so the threaded run crosses 2^32 too. */
	s.sh->prod = s.sh->cons = 0xFFFFF000u;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	REQUIRE(pthread_create(&tc, NULL, stress_consumer, &s) == 0);
	REQUIRE(pthread_create(&tp, NULL, stress_producer, &s) == 0);
	REQUIRE(pthread_join(tp, NULL) == 0);
	REQUIRE(pthread_join(tc, NULL) == 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);

	printf("# stress: %" PRIu64 " elems in %.3f s, full waits %" PRIu64
	       ", empty waits %" PRIu64 "\n",
	       s.total,
	       (double)(t1.tv_sec - t0.tv_sec) +
		       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
	       s.full_waits, s.empty_waits);
	REQUIRE(!s.failed);
	REQUIRE(s.sh->prod == (uint32_t)(0xFFFFF000u + s.total));
	REQUIRE(s.sh->cons == s.sh->prod);

	free(s.slots);
	free(s.sh);
	return 0;
}

/* ------------------------------------------------------------------ */
/* 5. hostile peer writes garbage indices                             */

static int
test_hostile(void)
{
	const uint32_t cap = 16;
	struct via_ring_shared *sh = xaligned_alloc(sizeof(*sh));
	uint64_t *slots = xaligned_alloc(via_ring_mem_size(cap, 8));
	struct via_ring p, c;
	uint64_t v = 7;

	/* Consumer index ahead of prod: caught on first use after attach,
	 * the producer never trusts the value it finds at attach time. */
	REQUIRE(via_ring_init_shared(sh) == 0);
	sh->cons = 1000;
	REQUIRE(via_ring_attach(&p, sh, slots, cap, 8, true) == 0);
	REQUIRE(via_ring_free_count(&p) == 0);
	REQUIRE(p.corrupt);
	REQUIRE(via_ring_enqueue(&p, &v) == -EPIPE);

	/* Mid-stream: fill, then the consumer jumps far ahead. */
	REQUIRE(via_ring_init_shared(sh) == 0);
	REQUIRE(via_ring_attach(&p, sh, slots, cap, 8, true) == 0);
	for (uint32_t i = 0; i < cap; i++)
		REQUIRE(via_ring_enqueue(&p, &v) == 0);
	REQUIRE(via_ring_enqueue(&p, &v) == -ENOBUFS);
	sh->cons = p.local + 0x10000000u;
	REQUIRE(via_ring_free_count(&p) == 0);
	REQUIRE(p.corrupt);
	REQUIRE(via_ring_enqueue(&p, &v) == -EPIPE);
	/* Sticky: a sane value afterwards does not rehabilitate the peer. */
	sh->cons = p.local;
	REQUIRE(via_ring_free_count(&p) == 0);
	REQUIRE(via_ring_enqueue(&p, &v) == -EPIPE);

	/* Consumer index more than capacity behind prod. */
	REQUIRE(via_ring_init_shared(sh) == 0);
	REQUIRE(via_ring_attach(&p, sh, slots, cap, 8, true) == 0);
	for (uint32_t i = 0; i < cap; i++)
		REQUIRE(via_ring_enqueue(&p, &v) == 0);
	sh->cons = p.local - cap - 1;
	REQUIRE(via_ring_enqueue(&p, &v) == -EPIPE && p.corrupt);

	/* A consumer scribbling on prod cannot steer the producer, which
	 * never re-reads its own index; the next publish overwrites it. */
	REQUIRE(via_ring_init_shared(sh) == 0);
	REQUIRE(via_ring_attach(&p, sh, slots, cap, 8, true) == 0);
	REQUIRE(via_ring_enqueue(&p, &v) == 0);
	sh->prod = 0xdeadbeef;
	REQUIRE(via_ring_enqueue(&p, &v) == 0);
	REQUIRE(sh->prod == 2 && p.local == 2 && !p.corrupt);
	REQUIRE(via_ring_free_count(&p) == cap - 2);

	/* Producer index more than capacity ahead of cons. */
	REQUIRE(via_ring_init_shared(sh) == 0);
	REQUIRE(via_ring_attach(&c, sh, slots, cap, 8, false) == 0);
	sh->prod = cap + 1;
	REQUIRE(via_ring_avail(&c) == 0);
	REQUIRE(c.corrupt);
	REQUIRE(via_ring_dequeue(&c, &v) == -EPIPE);
	sh->prod = 1;
	REQUIRE(via_ring_avail(&c) == 0 && via_ring_dequeue(&c, &v) == -EPIPE);

	/* Producer index moved backwards after a legitimate consume. */
	REQUIRE(via_ring_init_shared(sh) == 0);
	REQUIRE(via_ring_attach(&p, sh, slots, cap, 8, true) == 0);
	REQUIRE(via_ring_attach(&c, sh, slots, cap, 8, false) == 0);
	REQUIRE(via_ring_enqueue(&p, &v) == 0);
	REQUIRE(via_ring_dequeue(&c, &v) == 0);
	sh->prod = 0;
	REQUIRE(via_ring_dequeue(&c, &v) == -EPIPE && c.corrupt);

	/* Exactly full (prod - cons == capacity) is legitimate. */
	REQUIRE(via_ring_init_shared(sh) == 0);
	REQUIRE(via_ring_attach(&c, sh, slots, cap, 8, false) == 0);
	sh->prod = cap;
	REQUIRE(via_ring_avail(&c) == cap && !c.corrupt);

	free(slots);
	free(sh);
	return 0;
}

/* ------------------------------------------------------------------ */
/* 6. slots that publish themselves (a sequence word in each slot)     */

struct seq_slot {
	uint64_t value;
	uint32_t seq;
	uint32_t pad;
};

struct seq_stress {
	struct via_ring_shared *sh;
	struct seq_slot *slots;
	uint32_t cap;
	uint64_t total;
	bool failed;
};

static void *
seq_producer(void *arg)
{
	struct seq_stress *s = arg;
	struct via_ring p;
	uint64_t i;

	TCHECK(s, via_ring_attach_seq(&p, s->sh, s->slots, s->cap, sizeof(struct seq_slot), true,
				      offsetof(struct seq_slot, seq)) == 0);
	for (i = 0; i < s->total; i++) {
		/* the consumer's index bounds reuse here; a work queue's
		 * completions do in the library */
		while (via_ring_free_count(&p) == 0)
			sched_yield();
		((struct seq_slot *)via_ring_slot(&p, 0))->value = i;
		(void)via_ring_produce_seq(&p);
	}
	return NULL;
}

static void *
seq_consumer(void *arg)
{
	struct seq_stress *s = arg;
	struct via_ring c;
	uint64_t i;

	TCHECK(s, via_ring_attach_seq(&c, s->sh, s->slots, s->cap, sizeof(struct seq_slot), false,
				      offsetof(struct seq_slot, seq)) == 0);
	for (i = 0; i < s->total; i++) {
		while (via_ring_avail(&c) == 0)
			sched_yield();
		TCHECK(s, ((const struct seq_slot *)via_ring_peek(&c, 0))->value == i);
		via_ring_consume(&c, 1);
	}
	TCHECK(s, !c.corrupt);
	return NULL;
}

static int
test_seq_slots(void)
{
	const uint32_t cap = 8, off = offsetof(struct seq_slot, seq);
	struct via_ring_shared *sh = xaligned_alloc(sizeof(*sh));
	struct seq_slot *slots = xaligned_alloc(via_ring_mem_size(cap, sizeof(*slots)));
	struct seq_stress st = { .sh = sh, .slots = slots, .cap = cap, .total = 1000000 };
	struct via_ring p, c;
	pthread_t tp, tc;
	uint32_t i;

	REQUIRE(via_ring_init_shared(sh) == 0);
	REQUIRE(via_ring_attach_seq(&c, sh, slots, cap, sizeof(*slots), false, 0) == -EINVAL);
	REQUIRE(via_ring_attach_seq(&c, sh, slots, cap, sizeof(*slots), false, 6) == -EINVAL);
	REQUIRE(via_ring_attach_seq(&c, sh, slots, cap, sizeof(*slots), false, 16) == -EINVAL);
	REQUIRE(via_ring_attach_seq(&c, sh, slots, 6, sizeof(*slots), false, off) == -EINVAL);
	REQUIRE(via_ring_attach_seq(&p, sh, slots, cap, sizeof(*slots), true, off) == 0);
	REQUIRE(via_ring_attach_seq(&c, sh, slots, cap, sizeof(*slots), false, off) == 0);

	/* each slot is taken when its own word says so; prod is never read */
	REQUIRE(via_ring_avail(&c) == 0);
	sh->prod = 5;
	REQUIRE(via_ring_avail(&c) == 0 && !c.corrupt);
	sh->prod = 0;
	slots[0].value = 42;
	REQUIRE(via_ring_produce_seq(&p));          /* nobody polls: ring */
	REQUIRE(sh->prod == 1 && slots[0].seq == 1);
	REQUIRE(via_ring_avail(&c) == 1 && ((struct seq_slot *)via_ring_peek(&c, 0))->value == 42);
	via_ring_consume(&c, 1);
	REQUIRE(via_ring_avail(&c) == 0);
	via_ring_set_polled(&c, true);
	REQUIRE(!via_ring_produce_seq(&p));         /* polled: no doorbell */
	via_ring_set_polled(&c, false);
	REQUIRE(via_ring_avail(&c) == 1);
	via_ring_consume(&c, 1);

	/* a hostile producer: an earlier lap's word, a later one's, garbage:
	 * the consumer waits, and is never corrupt */
	slots[2].seq = 3 - cap;
	REQUIRE(via_ring_avail(&c) == 0);
	slots[2].seq = 3 + cap;
	REQUIRE(via_ring_avail(&c) == 0);
	slots[2].seq = 0xdeadbeef;
	REQUIRE(via_ring_avail(&c) == 0 && !c.corrupt);
	slots[2].seq = 3;
	REQUIRE(via_ring_avail(&c) == 1);
	via_ring_consume(&c, 1);

	/* two threads, across 2^32 */
	REQUIRE(via_ring_init_shared(sh) == 0);
	memset(slots, 0, via_ring_mem_size(cap, sizeof(*slots)));
	sh->prod = sh->cons = 0xFFFFF000u;
	for (i = 0; i < cap; i++)            /* as if the last lap had been there */
		slots[(0xFFFFF000u + i) & (cap - 1)].seq = 0xFFFFF000u + i + 1 - cap;
	REQUIRE(pthread_create(&tc, NULL, seq_consumer, &st) == 0);
	REQUIRE(pthread_create(&tp, NULL, seq_producer, &st) == 0);
	REQUIRE(pthread_join(tp, NULL) == 0);
	REQUIRE(pthread_join(tc, NULL) == 0);
	REQUIRE(!st.failed);
	REQUIRE(sh->cons == (uint32_t)(0xFFFFF000u + st.total));
	free(slots);
	free(sh);
	return 0;
}

/* ------------------------------------------------------------------ */

static const struct {
	const char *name;
	int (*fn)(void);
} tests[] = {
	{ "attach/mem_size parameter errors", test_attach_errors },
	{ "single-threaded fill/drain", test_fill_drain },
	{ "index wrap-around at 2^32", test_wraparound },
	{ "randomized two-thread stress", test_stress },
	{ "hostile peer indices", test_hostile },
	{ "slots that publish themselves", test_seq_slots },
};

int
main(int argc, char **argv)
{
	const char *seed_str = argc > 1 ? argv[1] : getenv("VIA_TEST_SEED");
	size_t n = sizeof(tests) / sizeof(tests[0]);
	unsigned passed = 0;

	if (seed_str != NULL && *seed_str != '\0') {
		char *end;

		errno = 0;
		g_seed = strtoull(seed_str, &end, 0);
		if (errno != 0 || *end != '\0') {
			fprintf(stderr, "bad seed '%s'\n", seed_str);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("1..%zu\n# seed=%" PRIu64 " (replay: test_ring %" PRIu64 ")\n",
	       n, g_seed, g_seed);
	for (size_t i = 0; i < n; i++) {
		bool ok = tests[i].fn() == 0;

		passed += ok;
		printf("%sok %zu - %s\n", ok ? "" : "not ", i + 1,
		       tests[i].name);
	}
	printf("# %u/%zu passed\n", passed, n);
	return passed == n ? 0 : 1;
}
