/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vipl_regbench: what VipRegisterMem and VipDeregisterMem cost on ordinary
 * heap memory (VIA §9.5.3, §9.5.4), per size, with the standard VIPL API.
 *
 *   vipl_regbench [-d NIC] [-n BUFFERS] [-s SIZE,...] [--json]
 *
 * For each size, BUFFERS buffers are allocated with malloc and written
 * once, then timed one call at a time:
 *   register     the first registration of each buffer (its pages were
 *                never registered: the library shares them with viad now);
 *   deregister   the deregistration of each;
 *   re-register  each buffer registered again, as a registration cache
 *                or a program that registers every message does;
 *   re-dereg     and deregistered again.
 * Each phase takes every buffer in turn before the next phase starts, so a
 * buffer's pages are never in a cache of the processor's that the previous
 * call just filled. The table shows p50, p90 and p99 in microseconds; one
 * JSON line per size with --json (tests/perf/bench.sh reads them).
 *
 * Exit status: 0; 1 when a call fails.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vipl_common.h"

enum phase { PH_REGISTER, PH_DEREGISTER, PH_REREGISTER, PH_REDEREG, PH_COUNT };

static const char *const phase_names[PH_COUNT] = {
	[PH_REGISTER] = "register",
	[PH_DEREGISTER] = "deregister",
	[PH_REREGISTER] = "reregister",
	[PH_REDEREG] = "redereg",
};

static void __attribute__((noreturn))
usage(int rc)
{
	fprintf(rc == 0 ? stdout : stderr,
		"usage: vipl_regbench [-d NIC] [-n BUFFERS] [-s SIZE,...] [--json]\n"
		"  -d NIC      the NIC to open (default via0)\n"
		"  -n BUFFERS  buffers per size (default 1000; at most 64 MiB of them)\n"
		"  -s SIZES    bytes, comma separated (default 4096,16384,65536,1048576)\n"
		"  --json      one JSON line per size instead of the table\n");
	exit(rc);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *nic_name = "via0", *size_list = "4096,16384,65536,1048576";
	unsigned max_bufs = 1000;
	bool json = false;
	VIP_NIC_HANDLE nic;
	VIP_MEM_ATTRIBUTES attr = { 0 };
	VIP_RETURN rc;
	char *list, *tok, *save = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "d:n:s:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': nic_name = optarg; break;
		case 'n': max_bufs = (unsigned)strtoul(optarg, NULL, 0); break;
		case 's': size_list = optarg; break;
		case 'j': json = true; break;
		case 'h': usage(0);
		default: usage(2);
		}
	}
	if (optind < argc || max_bufs < 1)
		usage(2);
	rc = VipOpenNic(nic_name, &nic);
	if (rc != VIP_SUCCESS) {
		fprintf(stderr, "vipl_regbench: VipOpenNic(%s) failed: %d (is viad running?)\n",
			nic_name, (int)rc);
		return 1;
	}
	if (VipCreatePtag(nic, &attr.Ptag) != VIP_SUCCESS) {
		fprintf(stderr, "vipl_regbench: VipCreatePtag failed\n");
		return 1;
	}
	attr.EnableRdmaWrite = VIP_TRUE;
	if (!json)
		printf("%10s %6s  %-26s %-26s %-26s %-26s\n", "size", "bufs",
		       "register p50/p90/p99 us", "deregister", "re-register", "re-deregister");
	list = strdup(size_list);
	for (tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		size_t size = strtoull(tok, NULL, 0);
		unsigned n = max_bufs, i;
		uint64_t *t[PH_COUNT];
		struct vc_lat lat[PH_COUNT];
		VIP_MEM_HANDLE *mh;
		char **buf;

		if (size == 0)
			continue;
		if ((uint64_t)n * size > (UINT64_C(64) << 20))
			n = (unsigned)((UINT64_C(64) << 20) / size);
		if (n < 1)
			n = 1;
		buf = calloc(n, sizeof(*buf));
		mh = calloc(n, sizeof(*mh));
		for (int p = 0; p < PH_COUNT; p++)
			t[p] = calloc(n, sizeof(uint64_t));
		for (i = 0; i < n; i++) {
			buf[i] = malloc(size);
			if (buf[i] == NULL) {
				fprintf(stderr, "vipl_regbench: out of memory\n");
				return 1;
			}
			memset(buf[i], (int)i, size);
		}
		for (int p = 0; p < PH_COUNT; p++) {
			for (i = 0; i < n; i++) {
				uint64_t t0 = vc_now_ns();

				if (p == PH_REGISTER || p == PH_REREGISTER)
					rc = VipRegisterMem(nic, buf[i], size, &attr, &mh[i]);
				else
					rc = VipDeregisterMem(nic, buf[i], mh[i]);
				t[p][i] = vc_now_ns() - t0;
				if (rc != VIP_SUCCESS) {
					fprintf(stderr, "vipl_regbench: %s of %zu bytes failed: %d\n",
						phase_names[p], size, (int)rc);
					return 1;
				}
			}
			vc_lat_stats(t[p], n, &lat[p]);
		}
		if (json) {
			printf("{\"test\":\"regbench\",\"size\":%zu,\"buffers\":%u", size, n);
			for (int p = 0; p < PH_COUNT; p++)
				printf(",\"%s_us\":{\"p50\":%.2f,\"p90\":%.2f,\"p99\":%.2f}", phase_names[p],
				       lat[p].p50, lat[p].p90, lat[p].p99);
			printf("}\n");
		} else {
			printf("%10zu %6u ", size, n);
			for (int p = 0; p < PH_COUNT; p++) {
				char cell[32];

				snprintf(cell, sizeof(cell), "%.1f/%.1f/%.1f", lat[p].p50, lat[p].p90,
					 lat[p].p99);
				printf(" %-26s", cell);
			}
			printf("\n");
		}
		fflush(stdout);
		for (i = 0; i < n; i++)
			free(buf[i]);
		for (int p = 0; p < PH_COUNT; p++)
			free(t[p]);
		free(buf);
		free(mh);
	}
	free(list);
	VipDestroyPtag(nic, attr.Ptag);
	VipCloseNic(nic);
	return 0;
}
