/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Minimal check macros for the unit tests: one line per failed check with
 * file:line, a summary line, exit status 0 only when every check passed.
 */
#ifndef TEST_COMMON_H
#define TEST_COMMON_H

#include <stdio.h>

static unsigned test_checks, test_failures;

#define CHECK(cond)                                                                   \
	do {                                                                          \
		test_checks++;                                                        \
		if (!(cond)) {                                                        \
			test_failures++;                                              \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
		}                                                                     \
	} while (0)

#define CHECK_EQ(a, b)                                                                \
	do {                                                                          \
		long long a_ = (long long)(a), b_ = (long long)(b);                   \
		test_checks++;                                                        \
		if (a_ != b_) {                                                       \
			test_failures++;                                              \
			fprintf(stderr, "FAIL %s:%d: %s == %s (%lld != %lld)\n",      \
				__FILE__, __LINE__, #a, #b, a_, b_);                  \
		}                                                                     \
	} while (0)

static inline int
test_summary(const char *name)
{
	printf("%s: %u checks, %u failed\n", name, test_checks, test_failures);
	return test_failures == 0 ? 0 : 1;
}

#endif /* TEST_COMMON_H */
