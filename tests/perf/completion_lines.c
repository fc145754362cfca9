/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * completion_lines: where should the bytes of a small received message go,
 * into the receive buffer, or into the completion's ring entry for the
 * library to copy at the dequeue (issue 30 part 2)? Two threads, pinned to
 * two CPUs, play the client and viad's poll lcore for one receive at a
 * time, and time the round trip of each way the data can travel, in
 * alternating rounds (this VM's speed moves between runs):
 *
 *   buffer  viad writes SIZE bytes into the client's receive buffer, then
 *           the Status word in the entry; the client sees Done and reads
 *           the buffer (what viad does today).
 *   entry   viad writes the bytes into the entry, in the line after its
 *           Status, then Status; the client sees Done, reads them there and
 *           copies them into its buffer (the receive buffer stays in the
 *           client's cache).
 *
 * The client starts a round trip by writing a request word in a line of
 * its own, as a post does. Both ways move the same number of lines (the
 * bytes' lines and the Status line, each written by viad and read by the
 * client); only the second copies. Nothing but the lines is modelled.
 *
 *   completion_lines [--cpus A,B] [-n N] [-r ROUNDS] [--size BYTES] [--json]
 *
 * Times from the TSC (x86), calibrated against CLOCK_MONOTONIC_RAW.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#define cpu_relax() _mm_pause()
#define now_ticks() __rdtsc()
#else
#define cpu_relax() __asm__ __volatile__("" ::: "memory")
static uint64_t
now_ticks(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif

#define LINE 64
#define MAX_SIZE 256

enum way { WAY_BUFFER, WAY_ENTRY, WAY_COUNT };
static const char *const way_names[WAY_COUNT] = { "buffer", "entry" };

struct line {
	_Alignas(LINE) _Atomic uint32_t v;
};

/* what the two threads share; each field on lines of its own. The entry
 * is laid out as a ring's line entry is: its first line (Status) and the
 * data after it start on a 128-byte boundary (a pair of lines, which some
 * cores fetch together) */
static struct {
	_Alignas(2 * LINE) struct line status;    /* the entry's first line: Status */
	uint8_t entry_data[MAX_SIZE];             /* the entry's lines after it */
	_Alignas(2 * LINE) uint8_t buffer[MAX_SIZE]; /* the client's receive buffer */
	_Alignas(2 * LINE) struct line request;   /* the client's post */
	_Alignas(LINE) _Atomic int way;           /* the round's way, set before it */
	_Atomic int stop;
} sh;
_Static_assert(offsetof(__typeof__(sh), entry_data) == LINE, "the data follow Status's line");

static uint8_t client_copy[MAX_SIZE] __attribute__((aligned(LINE)));

static struct {
	int cpu[2];
	uint64_t iters;
	unsigned rounds;
	uint32_t size;
	bool json;
} o = { { -1, -1 }, 200000, 9, 64, false };

static void
pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0) {
		fprintf(stderr, "completion_lines: cannot pin to CPU %d\n", cpu);
		exit(1);
	}
}

/* viad's side: for each request, the data, then Status (release) */
static void *
poller(void *arg)
{
	uint32_t seen = 0;

	(void)arg;
	pin(o.cpu[1]);
	while (!atomic_load_explicit(&sh.stop, memory_order_relaxed)) {
		uint32_t r = atomic_load_explicit(&sh.request.v, memory_order_acquire);
		uint8_t *dst;

		if (r == seen) {
			cpu_relax();
			continue;
		}
		seen = r;
		dst = atomic_load_explicit(&sh.way, memory_order_relaxed) == WAY_BUFFER ? sh.buffer
											: sh.entry_data;
		memset(dst, (int)(r & 0xff), o.size);
		atomic_store_explicit(&sh.status.v, r, memory_order_release);
	}
	return NULL;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* one round of one way: the p50 round trip in ticks */
static uint64_t
round_p50(enum way w, uint32_t *seq, uint64_t *t)
{
	volatile uint32_t sink = 0;
	uint64_t i;

	atomic_store_explicit(&sh.way, w, memory_order_relaxed);
	for (i = 0; i < o.iters + o.iters / 10; i++) {
		uint32_t r = ++*seq;
		uint64_t t0 = now_ticks();

		atomic_store_explicit(&sh.request.v, r, memory_order_release);
		while (atomic_load_explicit(&sh.status.v, memory_order_acquire) != r)
			cpu_relax();
		if (w == WAY_BUFFER) {
			sink += sh.buffer[0] + sh.buffer[o.size - 1];
		} else {
			/* the library's copy into the receive buffer */
			memcpy(client_copy, sh.entry_data, o.size);
			sink += client_copy[0] + client_copy[o.size - 1];
		}
		if (i >= o.iters / 10)
			t[i - o.iters / 10] = now_ticks() - t0;
	}
	(void)sink;
	qsort(t, o.iters, sizeof(*t), cmp_u64);
	return t[o.iters / 2];
}

static double
ns_per_tick(void)
{
	struct timespec a, b;
	uint64_t t0, t1;

	clock_gettime(CLOCK_MONOTONIC_RAW, &a);
	t0 = now_ticks();
	do
		clock_gettime(CLOCK_MONOTONIC_RAW, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 100000000L);
	t1 = now_ticks();
	return ((b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)(t1 - t0);
}

static void
usage(int rc)
{
	printf("usage: completion_lines [--cpus A,B] [-n N] [-r ROUNDS] [--size BYTES] [--json]\n"
	       "  the round trip of a small receive's completion with its bytes in the\n"
	       "  receive buffer and in the ring entry, in alternating rounds; --size 1..%d\n",
	       MAX_SIZE);
	exit(rc);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cpus", required_argument, NULL, 'c' }, { "size", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	double p50[WAY_COUNT][64], scale;
	uint32_t seq = 0;
	pthread_t th;
	uint64_t *t;
	unsigned r, w;
	int c;

	while ((c = getopt_long(argc, argv, "n:r:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (sscanf(optarg, "%d,%d", &o.cpu[0], &o.cpu[1]) != 2)
				usage(2);
			break;
		case 'n': o.iters = strtoull(optarg, NULL, 10); break;
		case 'r': o.rounds = (unsigned)strtoul(optarg, NULL, 10); break;
		case 's': o.size = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'j': o.json = true; break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (o.iters < 100 || o.rounds == 0 || o.rounds > 64 || o.size == 0 || o.size > MAX_SIZE)
		usage(2);
	t = malloc(o.iters * sizeof(*t));
	if (t == NULL)
		return 1;
	scale = ns_per_tick();
	pin(o.cpu[0]);
	if (pthread_create(&th, NULL, poller, NULL) != 0)
		return 1;
	for (r = 0; r < o.rounds; r++) {
		/* alternate which goes first */
		for (w = 0; w < WAY_COUNT; w++) {
			enum way way = (enum way)((w + r) % WAY_COUNT);

			p50[way][r] = (double)round_p50(way, &seq, t) * scale;
		}
	}
	atomic_store(&sh.stop, 1);
	pthread_join(th, NULL);
	{
		double ratio[64], med[WAY_COUNT];

		for (w = 0; w < WAY_COUNT; w++) {
			double v[64];

			memcpy(v, p50[w], o.rounds * sizeof(double));
			for (r = 0; r < o.rounds; r++)	/* insertion sort: few rounds */
				for (unsigned k = r; k > 0 && v[k] < v[k - 1]; k--) {
					double x = v[k];

					v[k] = v[k - 1];
					v[k - 1] = x;
				}
			med[w] = v[o.rounds / 2];
		}
		for (r = 0; r < o.rounds; r++)
			ratio[r] = p50[WAY_ENTRY][r] / p50[WAY_BUFFER][r];
		for (r = 0; r < o.rounds; r++)
			for (unsigned k = r; k > 0 && ratio[k] < ratio[k - 1]; k--) {
				double x = ratio[k];

				ratio[k] = ratio[k - 1];
				ratio[k - 1] = x;
			}
		if (o.json)
			printf("{\"test\":\"completion_lines\",\"size\":%u,\"rounds\":%u,\"iters\":%llu,"
			       "\"buffer_p50_ns\":%.1f,\"entry_p50_ns\":%.1f,\"entry_over_buffer\":%.3f}\n",
			       o.size, o.rounds, (unsigned long long)o.iters, med[WAY_BUFFER],
			       med[WAY_ENTRY], ratio[o.rounds / 2]);
		else
			printf("%u B, %u rounds of %llu round trips: p50 %s %.1f ns, %s %.1f ns; "
			       "entry/buffer, median of the per-round ratios: %.3f\n", o.size,
			       o.rounds, (unsigned long long)o.iters, way_names[WAY_BUFFER],
			       med[WAY_BUFFER], way_names[WAY_ENTRY], med[WAY_ENTRY],
			       ratio[o.rounds / 2]);
	}
	free(t);
	return 0;
}
