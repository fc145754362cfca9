/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided communication (issue 27, part 6): every rank exposes a window
 * and, in each epoch, puts a block into every other rank's window and gets
 * one back from every other rank; each byte is checked.
 *
 *   mpi_rma [-n ROUNDS] [-s BYTES]
 *
 * Round r, fence to fence: rank i MPI_Puts BYTES of pattern(i, j, r) at
 * offset i * BYTES of rank j's window; after the fence every rank checks
 * what each other rank put, then MPI_Gets block i of every rank j (what i
 * put there) and checks it again; passive target (MPI_Win_lock) does the
 * same once with MPI_Accumulate (MPI_SUM of ones) at the end. Rank 0
 * prints "rma: ROUNDS rounds of BYTES bytes among N ranks: ok" and the
 * time per round.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

#include "mpi_check.h"

static inline unsigned char
pattern(size_t i, int from, int to, int round)
{
	uint64_t x = (uint64_t)i * 2654435761u + (uint64_t)from * 97 + (uint64_t)to * 7919 +
		     (uint64_t)round * 104729;

	return (unsigned char)(x ^ (x >> 11) ^ (x >> 23));
}

int
main(int argc, char **argv)
{
	size_t bytes = 65536, i;
	int rounds = 10, r, j;
	unsigned char *win_buf, *src, *got;
	MPI_Win win;
	double t0, t;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (j = 1; j < argc; j++) {
		if (strcmp(argv[j], "-n") == 0 && j + 1 < argc)
			rounds = atoi(argv[++j]);
		else if (strcmp(argv[j], "-s") == 0 && j + 1 < argc)
			bytes = strtoul(argv[++j], NULL, 0);
		else
			CHECK(0, "usage: mpi_rma [-n ROUNDS] [-s BYTES]");
	}
	CHECK(bytes > 0 && rounds > 0, "rounds and bytes of 1 or more");
	MPI_Alloc_mem((MPI_Aint)(bytes * size), MPI_INFO_NULL, &win_buf);
	src = malloc(bytes * size);
	got = malloc(bytes);
	CHECK(src && got, "no memory");
	memset(win_buf, 0, bytes * size);
	MPI_Win_create(win_buf, (MPI_Aint)(bytes * size), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (r = 0; r < rounds; r++) {
		MPI_Win_fence(0, win);
		for (j = 0; j < size; j++) {
			unsigned char *s = src + (size_t)j * bytes;

			if (j == rank)
				continue;
			for (i = 0; i < bytes; i++)
				s[i] = pattern(i, rank, j, r);
			MPI_Put(s, (int)bytes, MPI_BYTE, j, (MPI_Aint)((size_t)rank * bytes),
				(int)bytes, MPI_BYTE, win);
		}
		MPI_Win_fence(0, win);
		for (j = 0; j < size; j++) {
			const unsigned char *b = win_buf + (size_t)j * bytes;

			if (j == rank)
				continue;
			for (i = 0; i < bytes; i++)
				CHECK(b[i] == pattern(i, j, rank, r),
				      "round %d: byte %zu put by rank %d is %u, not %u", r, i, j, b[i],
				      pattern(i, j, rank, r));
		}
		/* what this rank put at each other rank, read back */
		for (j = 0; j < size; j++) {
			if (j == rank)
				continue;
			memset(got, 0, bytes);
			MPI_Win_fence(0, win);
			MPI_Get(got, (int)bytes, MPI_BYTE, j, (MPI_Aint)((size_t)rank * bytes),
				(int)bytes, MPI_BYTE, win);
			MPI_Win_fence(0, win);
			for (i = 0; i < bytes; i++)
				CHECK(got[i] == pattern(i, rank, j, r),
				      "round %d: byte %zu got back from rank %d is %u, not %u", r, i, j,
				      got[i], pattern(i, rank, j, r));
		}
	}
	MPI_Win_fence(0, win);
	t = MPI_Wtime() - t0;
	/* passive target: every rank adds one to the first int of rank 0 */
	{
		int one = 1, total = 0;

		if (rank == 0)
			memset(win_buf, 0, sizeof(int));
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
		MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win);
		MPI_Win_unlock(0, win);
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank == 0) {
			MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
			memcpy(&total, win_buf, sizeof(int));
			MPI_Win_unlock(0, win);
			CHECK(total == size, "MPI_Accumulate of 1 by %d ranks gave %d", size, total);
		}
	}
	MPI_Win_free(&win);
	MPI_Free_mem(win_buf);
	free(src);
	free(got);
	if (rank == 0) {
		printf("rma: %d rounds of %zu bytes among %d ranks: ok (%.1f us per round)\n",
		       rounds, bytes, size, t * 1e6 / rounds);
		fflush(stdout);
	}
	MPI_Finalize();
	return 0;
}
