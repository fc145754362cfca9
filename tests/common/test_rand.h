/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seeded pseudo-random numbers for the tests: a failing run prints its seed
 * and replays with it. Not for anything but tests.
 */
#ifndef TEST_RAND_H
#define TEST_RAND_H

#include <stdint.h>

/* splitmix64's output function (Steele, Lea, Flood 2014): a bijection of
 * 64-bit words whose outputs for x, x + 1, ... look independent. */
static inline uint64_t
mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

#endif /* TEST_RAND_H */
