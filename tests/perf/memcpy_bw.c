/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memcpy_bw: single-core memcpy() bandwidth per copy size, in GB/s (10^9
 * bytes copied per second; each byte is read once and written once).
 *
 *   memcpy_bw [--size LIST] [--cpu N] [--time MS] [--cold] [--json]
 *
 * Hot (default): the same source and destination every time, so sizes up to
 * the caches measure cache bandwidth -- what copying a message that was just
 * written costs.  --cold: each copy uses the next slice of two 64 MiB
 * regions, so sources and destinations come from memory.  No DPDK.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SIZES 64
#define COLD_BYTES (64u << 20)

static const char *prog = "memcpy_bw";

static struct {
	size_t size[MAX_SIZES];
	unsigned nsizes;
	int cpu;
	unsigned time_ms;
	bool cold;
	bool json;
} o = { .cpu = -1, .time_ms = 200 };

/* through a volatile pointer, so the compiler can neither inline nor drop it */
static void *(*volatile copy)(void *, const void *, size_t) = memcpy;

static void
usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: %s [--size LIST] [--cpu N] [--time MS] [--cold] [--json]\n"
		"  --size LIST  copy sizes, comma separated, K/M suffixes (default the powers\n"
		"               of two from 64 to 1M)\n"
		"  --cpu N      pin to CPU N (default: where it starts)\n"
		"  --time MS    time per size (default 200)\n"
		"  --cold       rotate through 64 MiB regions instead of reusing one buffer\n"
		"  --json       one JSON object per size instead of the table\n",
		prog);
	exit(rc);
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static size_t
parse_size(const char *s)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end == 'k' || *end == 'K') {
		v <<= 10;
		end++;
	} else if (*end == 'm' || *end == 'M') {
		v <<= 20;
		end++;
	}
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v == 0 || v > (1ull << 30)) {
		fprintf(stderr, "%s: bad size '%s' (1..1G)\n", prog, s);
		exit(2);
	}
	return (size_t)v;
}

static void
parse(int argc, char **argv)
{
	enum { OPT_SIZE = 256, OPT_CPU, OPT_TIME, OPT_COLD, OPT_JSON };
	static const struct option lo[] = {
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "cpu", required_argument, NULL, OPT_CPU },
		{ "time", required_argument, NULL, OPT_TIME },
		{ "cold", no_argument, NULL, OPT_COLD },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *copyarg, *tok, *save = NULL, *end;
	long v;
	int c;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case OPT_SIZE:
			copyarg = strdup(optarg);
			if (copyarg == NULL)
				exit(1);
			o.nsizes = 0;
			for (tok = strtok_r(copyarg, ",", &save); tok != NULL;
			     tok = strtok_r(NULL, ",", &save)) {
				if (o.nsizes == MAX_SIZES) {
					fprintf(stderr, "%s: more than %d sizes\n", prog, MAX_SIZES);
					exit(2);
				}
				o.size[o.nsizes++] = parse_size(tok);
			}
			free(copyarg);
			break;
		case OPT_CPU:
		case OPT_TIME:
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno != 0 || end == optarg || *end != '\0' || v < 0 ||
			    (c == OPT_CPU && v >= CPU_SETSIZE) || (c == OPT_TIME && (v < 1 || v > 600000)))
				usage(2);
			if (c == OPT_CPU)
				o.cpu = (int)v;
			else
				o.time_ms = (unsigned)v;
			break;
		case OPT_COLD: o.cold = true; break;
		case OPT_JSON: o.json = true; break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (optind != argc)
		usage(2);
	if (o.nsizes == 0) {
		size_t s;

		for (s = 64; s <= (1u << 20); s <<= 1)
			o.size[o.nsizes++] = s;
	}
}

/* copies of size from src to dst, advancing through the regions when cold */
static void
run(char *src, char *dst, size_t region, size_t size, uint64_t n, size_t *off)
{
	uint64_t i;

	for (i = 0; i < n; i++) {
		copy(dst + *off, src + *off, size);
		if (region > size) {
			*off += size;
			if (*off + size > region)
				*off = 0;
		}
	}
	__asm__ __volatile__("" ::: "memory");
}

int
main(int argc, char **argv)
{
	size_t region, max = 0, off = 0;
	unsigned i;
	char *src, *dst;

	parse(argc, argv);
	if (o.cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(o.cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) != 0) {
			fprintf(stderr, "%s: cannot pin to CPU %d: %s\n", prog, o.cpu,
				strerror(errno));
			return 1;
		}
	} else {
		o.cpu = sched_getcpu();
	}
	for (i = 0; i < o.nsizes; i++)
		max = o.size[i] > max ? o.size[i] : max;
	region = o.cold && max < COLD_BYTES ? COLD_BYTES : max;
	/* 4 KiB aligned, like mbuf data and hugepage buffers are in practice */
	src = aligned_alloc(4096, (region + 4095) & ~(size_t)4095);
	dst = aligned_alloc(4096, (region + 4095) & ~(size_t)4095);
	if (src == NULL || dst == NULL) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	memset(src, 0x5a, region);
	memset(dst, 0xa5, region);
	if (!o.json)
		printf("# memcpy_bw: CPU %d, %s, %u ms per size; GB/s = 1e9 bytes copied per s\n"
		       "%10s %14s %10s %10s\n", o.cpu,
		       o.cold ? "cold (64 MiB regions)" : "hot (one buffer)", o.time_ms, "size",
		       "copies", "GB/s", "ns/copy");
	for (i = 0; i < o.nsizes; i++) {
		size_t size = o.size[i];
		uint64_t batch = 1, copies = 0, t0, t, end_at, dt;
		double gbps;

		off = 0;
		/* warm up and find a batch that lasts about a millisecond */
		for (;;) {
			t0 = now_ns();
			run(src, dst, o.cold ? region : size, size, batch, &off);
			dt = now_ns() - t0;
			if (dt >= 1000000 || batch >= (1ull << 40))
				break;
			batch *= 2;
		}
		t0 = now_ns();
		end_at = t0 + (uint64_t)o.time_ms * 1000000u;
		do {
			run(src, dst, o.cold ? region : size, size, batch, &off);
			copies += batch;
			t = now_ns();
		} while (t < end_at);
		dt = t - t0;
		gbps = (double)copies * (double)size / (double)dt;
		if (o.json)
			printf("{\"test\":\"memcpy_bw\",\"size\":%zu,\"cache\":\"%s\",\"copies\":%llu,"
			       "\"seconds\":%.6f,\"GBps\":%.3f,\"ns_per_copy\":%.2f,\"cpu\":%d}\n",
			       size, o.cold ? "cold" : "hot", (unsigned long long)copies,
			       (double)dt / 1e9, gbps, (double)dt / (double)copies, o.cpu);
		else
			printf("%10zu %14llu %10.2f %10.2f\n", size, (unsigned long long)copies, gbps,
			       (double)dt / (double)copies);
		fflush(stdout);
	}
	free(src);
	free(dst);
	return 0;
}
