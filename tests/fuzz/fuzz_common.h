/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers shared by the libFuzzer targets (docs/fuzzing.md): a reader
 * that takes bytes off the input without ever failing, a file the parsers
 * can open by path holding the input, and an assertion that crashes so
 * that libFuzzer records the input.
 */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

/* first in every target: memfd_create and friends */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A property of the code under test does not hold: a crash, with the line. */
#define FUZZ_ASSERT(cond)                                                              \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "FUZZ_ASSERT failed %s:%d: %s\n", __FILE__,    \
				__LINE__, #cond);                                      \
			abort();                                                       \
		}                                                                      \
	} while (0)

/* The input, consumed from the front; past its end every read gives zeros. */
struct fuzz_in {
	const uint8_t *p;
	size_t left;
};

static inline void
fuzz_take(struct fuzz_in *in, void *dst, size_t n)
{
	size_t k = n < in->left ? n : in->left;

	if (k > 0)
		memcpy(dst, in->p, k);
	if (k < n)
		memset((uint8_t *)dst + k, 0, n - k);
	in->p += k;
	in->left -= k;
}

static inline uint8_t
fuzz_u8(struct fuzz_in *in)
{
	uint8_t v;

	fuzz_take(in, &v, sizeof(v));
	return v;
}

static inline uint16_t
fuzz_u16(struct fuzz_in *in)
{
	uint16_t v;

	fuzz_take(in, &v, sizeof(v));
	return v;
}

static inline uint32_t
fuzz_u32(struct fuzz_in *in)
{
	uint32_t v;

	fuzz_take(in, &v, sizeof(v));
	return v;
}

static inline uint64_t
fuzz_u64(struct fuzz_in *in)
{
	uint64_t v;

	fuzz_take(in, &v, sizeof(v));
	return v;
}

/*
 * A memfd the parsers open by name (/proc/self/fd/N): they take a path and
 * read it with stdio, as viad reads its files. One per process, rewritten
 * for every input.
 */
static inline const char *
fuzz_file(const uint8_t *data, size_t size)
{
	static char path[64];
	static int fd = -1;

	if (fd < 0) {
		fd = memfd_create("fuzz-input", MFD_CLOEXEC);
		if (fd < 0) {
			perror("memfd_create");
			abort();
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0 ||
	    (size > 0 && pwrite(fd, data, size, 0) != (ssize_t)size)) {
		perror("fuzz input file");
		abort();
	}
	return path;
}

#endif /* FUZZ_COMMON_H */
