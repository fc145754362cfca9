/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The profiling hooks of -finstrument-functions for tests/perf/dp_walk.sh:
 * linked into a viad built with that flag, they write every function entry
 * and exit of the calls made under the root function (the offset in the
 * executable of dp.c's vi_send, in $VIA_WALK_ROOT) to $VIA_WALK_OUT, one
 * line each ("E OFFSET" or "X OFFSET"), and a "B" line at each call of the
 * root. Only the poll lcore runs the root; the hooks are not instrumented.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NO_INSTR __attribute__((no_instrument_function))

void __cyg_profile_func_enter(void *fn, void *site) NO_INSTR;
void __cyg_profile_func_exit(void *fn, void *site) NO_INSTR;

static __thread unsigned depth;   /* calls open under the root on this thread */
static uintptr_t base, root;
static FILE *out;
static int ready;                 /* 0: not yet, 1: tracing, -1: off */

static NO_INSTR int
walk_ready(void *fn)
{
	const char *r = getenv("VIA_WALK_ROOT"), *o = getenv("VIA_WALK_OUT");
	Dl_info info;

	if (r == NULL || o == NULL || dladdr(fn, &info) == 0 || (out = fopen(o, "w")) == NULL)
		return -1;
	base = (uintptr_t)info.dli_fbase;
	root = strtoull(r, NULL, 16);
	return 1;
}

void
__cyg_profile_func_enter(void *fn, void *site)
{
	uintptr_t off;

	(void)site;
	if (ready == 0)
		ready = walk_ready(fn);
	if (ready < 0)
		return;
	off = (uintptr_t)fn - base;
	if (depth == 0) {
		if (off != root)
			return;
		fputs("B\n", out);
	}
	depth++;
	fprintf(out, "E %lx\n", (unsigned long)off);
}

void
__cyg_profile_func_exit(void *fn, void *site)
{
	(void)site;
	if (depth == 0)
		return;
	fprintf(out, "X %lx\n", (unsigned long)((uintptr_t)fn - base));
	if (--depth == 0)
		fflush(out);
}
