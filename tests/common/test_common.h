/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Check macros of the unit tests: one line per failed check with file:line,
 * a summary line, exit status 0 only when every check passed. CHECK and its
 * typed forms count a failure and go on; REQUIRE also returns -1 from the
 * calling function, for a check the following ones depend on.
 */
#ifndef TEST_COMMON_H
#define TEST_COMMON_H

#include <stdio.h>
#include <string.h>

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

/* @p cond evaluated once: it may be the call under test */
#define REQUIRE(cond)                                                                 \
	do {                                                                          \
		test_checks++;                                                        \
		if (!(cond)) {                                                        \
			test_failures++;                                              \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			return -1;                                                    \
		}                                                                     \
	} while (0)

/* an int return code: 0 or a -errno, printed by name */
#define CHECK_RC(expr, want)                                                          \
	do {                                                                          \
		int rc_ = (expr);                                                     \
		test_checks++;                                                        \
		if (rc_ != (want)) {                                                  \
			test_failures++;                                              \
			fprintf(stderr, "FAIL %s:%d: %s = %d (%s), want %d\n",         \
				__FILE__, __LINE__, #expr, rc_,                       \
				rc_ < 0 ? strerror(-rc_) : "ok", (want));             \
		}                                                                     \
	} while (0)

#define CHECK_STR(expr, want)                                                         \
	do {                                                                          \
		const char *got_ = (expr);                                            \
		test_checks++;                                                        \
		if (got_ == NULL || strcmp(got_, (want)) != 0) {                      \
			test_failures++;                                              \
			fprintf(stderr, "FAIL %s:%d: %s = \"%s\", want \"%s\"\n",       \
				__FILE__, __LINE__, #expr, got_ ? got_ : "(null)",    \
				(want));                                              \
		}                                                                     \
	} while (0)

static inline int
test_summary(const char *name)
{
	printf("%s: %u checks, %u failed\n", name, test_checks, test_failures);
	return test_failures == 0 ? 0 : 1;
}

#endif /* TEST_COMMON_H */
