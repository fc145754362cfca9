/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cacheline_pingpong: two threads, pinned to two CPUs, bounce a counter in
 * one cache line: the ping thread writes an odd value and spins until the
 * pong thread has answered with the next even one.  One round trip moves
 * the line to the other core and back, which is the floor of one client <->
 * daemon exchange through shared memory (a post seen by viad's poll lcore,
 * a completion seen by the client).  --lines 2 uses one line per direction,
 * as the single-producer single-consumer rings do.
 *
 *   cacheline_pingpong [--cpus A,B] [-n N] [-w N] [--lines 1|2] [--pause] [--json]
 *
 * Times come from the TSC (x86), calibrated against CLOCK_MONOTONIC_RAW, or
 * from clock_gettime() elsewhere.  No DPDK.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HAVE_TSC 1
#define cpu_relax() _mm_pause()
#else
#define HAVE_TSC 0
#define cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

#define LINE 64

struct line {
	_Alignas(LINE) _Atomic uint64_t v;
	char pad[LINE - sizeof(uint64_t)];
};

/* ping and pong lines; with --lines 1 both threads use ping */
static struct line lines[2];
static _Atomic int ready;

static struct {
	int cpu[2];
	uint64_t iters, warmup;
	int nlines;
	bool pause;
	bool json;
} o = { { -1, -1 }, 1000000, 10000, 1, false, false };

static const char *prog = "cacheline_pingpong";

static void
usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: %s [--cpus A,B] [-n N] [-w N] [--lines 1|2] [--pause] [--json]\n"
		"  --cpus A,B   CPUs of the ping and pong threads (default: the first two\n"
		"               this process may run on)\n"
		"  -n N         timed round trips (default 1000000)\n"
		"  -w N         warm-up round trips, not timed (default 10000)\n"
		"  --lines 1|2  one line bounced both ways (default), or one per direction\n"
		"  --pause      spin with the pause instruction (default: plain loads)\n"
		"  --json       one JSON object instead of the table\n",
		prog);
	exit(rc);
}

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t
ticks(void)
{
#if HAVE_TSC
	return __rdtsc();
#else
	return mono_ns();
#endif
}

/* ticks per ns */
static double
calibrate(void)
{
#if HAVE_TSC
	uint64_t n0, n1, t0, t1;

	n0 = mono_ns();
	t0 = ticks();
	do
		n1 = mono_ns();
	while (n1 - n0 < 100 * 1000 * 1000);
	t1 = ticks();
	return (double)(t1 - t0) / (double)(n1 - n0);
#else
	return 1.0;
#endif
}

static void
pin(int cpu)
{
	cpu_set_t set;
	int rc;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (rc != 0) {
		fprintf(stderr, "%s: cannot pin to CPU %d: %s\n", prog, cpu, strerror(rc));
		exit(1);
	}
}

static inline uint64_t
wait_for(_Atomic uint64_t *p, uint64_t want)
{
	uint64_t v;

	if (o.pause)
		while ((v = atomic_load_explicit(p, memory_order_acquire)) != want)
			cpu_relax();
	else
		while ((v = atomic_load_explicit(p, memory_order_acquire)) != want)
			;
	return v;
}

static void *
pong(void *arg)
{
	_Atomic uint64_t *in = &lines[0].v, *out = &lines[o.nlines - 1].v;
	uint64_t i, total = o.warmup + o.iters;

	(void)arg;
	pin(o.cpu[1]);
	atomic_store(&ready, 1);
	for (i = 0; i < total; i++) {
		wait_for(in, 2 * i + 1);
		atomic_store_explicit(out, 2 * i + 2, memory_order_release);
	}
	return NULL;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double
pct(const uint64_t *s, uint64_t n, unsigned per_mille, double ns_per_tick)
{
	uint64_t r = (n * per_mille + 999) / 1000;

	return (double)s[r < 1 ? 0 : r - 1] * ns_per_tick;
}

static void
parse(int argc, char **argv)
{
	enum { OPT_CPUS = 256, OPT_LINES, OPT_PAUSE, OPT_JSON };
	static const struct option lo[] = {
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "lines", required_argument, NULL, OPT_LINES },
		{ "pause", no_argument, NULL, OPT_PAUSE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "n:w:h", lo, NULL)) != -1) {
		switch (c) {
		case OPT_CPUS:
			errno = 0;
			o.cpu[0] = (int)strtol(optarg, &end, 10);
			if (errno != 0 || end == optarg || *end != ',')
				usage(2);
			optarg = end + 1;
			o.cpu[1] = (int)strtol(optarg, &end, 10);
			if (errno != 0 || end == optarg || *end != '\0' || o.cpu[0] < 0 ||
			    o.cpu[1] < 0 || o.cpu[0] >= CPU_SETSIZE || o.cpu[1] >= CPU_SETSIZE)
				usage(2);
			break;
		case OPT_LINES:
			o.nlines = atoi(optarg);
			if (o.nlines != 1 && o.nlines != 2)
				usage(2);
			break;
		case OPT_PAUSE: o.pause = true; break;
		case OPT_JSON: o.json = true; break;
		case 'n':
		case 'w':
			errno = 0;
			{
				unsigned long long v = strtoull(optarg, &end, 10);

				if (errno != 0 || end == optarg || *end != '\0' || optarg[0] == '-' ||
				    (c == 'n' && v == 0) || v > (1ull << 34))
					usage(2);
				if (c == 'n')
					o.iters = v;
				else
					o.warmup = v;
			}
			break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (optind != argc)
		usage(2);
	if (o.cpu[0] < 0) {
		cpu_set_t set;
		int i, k = 0;

		if (sched_getaffinity(0, sizeof(set), &set) != 0) {
			perror("sched_getaffinity");
			exit(1);
		}
		for (i = 0; i < CPU_SETSIZE && k < 2; i++)
			if (CPU_ISSET(i, &set))
				o.cpu[k++] = i;
		if (k < 2) {
			fprintf(stderr, "%s: needs two CPUs (this process may use %d)\n", prog, k);
			exit(1);
		}
	}
}

int
main(int argc, char **argv)
{
	uint64_t i, t0, t1, total, *rtt;
	_Atomic uint64_t *out, *in;
	double ns_per_tick, sum = 0;
	pthread_t t;
	int rc;

	parse(argc, argv);
	out = &lines[0].v;
	in = &lines[o.nlines - 1].v;
	total = o.warmup + o.iters;
	rtt = malloc(sizeof(*rtt) * o.iters);
	if (rtt == NULL) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	memset(rtt, 0, sizeof(*rtt) * o.iters); /* fault the pages in now */
	pin(o.cpu[0]);
	ns_per_tick = 1.0 / calibrate();
	rc = pthread_create(&t, NULL, pong, NULL);
	if (rc != 0) {
		fprintf(stderr, "%s: pthread_create: %s\n", prog, strerror(rc));
		return 1;
	}
	while (!atomic_load(&ready))
		;
	for (i = 0; i < total; i++) {
		t0 = ticks();
		atomic_store_explicit(out, 2 * i + 1, memory_order_release);
		wait_for(in, 2 * i + 2);
		t1 = ticks();
		if (i >= o.warmup)
			rtt[i - o.warmup] = t1 - t0;
	}
	pthread_join(t, NULL);

	qsort(rtt, o.iters, sizeof(*rtt), cmp_u64);
	for (i = 0; i < o.iters; i++)
		sum += (double)rtt[i];
	{
		double mn = (double)rtt[0] * ns_per_tick, p50 = pct(rtt, o.iters, 500, ns_per_tick),
		       p90 = pct(rtt, o.iters, 900, ns_per_tick),
		       p99 = pct(rtt, o.iters, 990, ns_per_tick),
		       p999 = pct(rtt, o.iters, 999, ns_per_tick),
		       mx = (double)rtt[o.iters - 1] * ns_per_tick,
		       mean = sum / (double)o.iters * ns_per_tick;

		if (o.json)
			printf("{\"test\":\"cacheline_pingpong\",\"cpus\":[%d,%d],\"lines\":%d,"
			       "\"pause\":%s,\"iters\":%llu,\"rtt_ns\":{\"min\":%.1f,\"p50\":%.1f,"
			       "\"p90\":%.1f,\"p99\":%.1f,\"p99.9\":%.1f,\"max\":%.1f,\"mean\":%.1f},"
			       "\"oneway_p50_ns\":%.1f,\"clock\":\"%s\",\"ticks_per_ns\":%.4f}\n",
			       o.cpu[0], o.cpu[1], o.nlines, o.pause ? "true" : "false",
			       (unsigned long long)o.iters, mn, p50, p90, p99, p999, mx, mean,
			       p50 / 2, HAVE_TSC ? "tsc" : "clock_gettime", 1.0 / ns_per_tick);
		else
			printf("# cacheline_pingpong: CPUs %d <-> %d, %d line%s, %s, %s clock "
			       "(%.3f ticks/ns), RTT in ns\n"
			       "%10s %8s %8s %8s %8s %8s %10s %8s\n"
			       "%10llu %8.1f %8.1f %8.1f %8.1f %8.1f %10.1f %8.1f\n",
			       o.cpu[0], o.cpu[1], o.nlines, o.nlines > 1 ? "s" : "",
			       o.pause ? "pause in spins" : "plain spins",
			       HAVE_TSC ? "tsc" : "clock_gettime", 1.0 / ns_per_tick, "iters", "min",
			       "p50", "p90", "p99", "p99.9", "max", "mean",
			       (unsigned long long)o.iters, mn, p50, p90, p99, p999, mx, mean);
	}
	free(rtt);
	return 0;
}
