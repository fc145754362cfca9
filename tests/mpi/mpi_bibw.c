/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bidirectional bandwidth between ranks 0 and 1, as the OSU micro-benchmark
 * suite's osu_bibw does it (issue 27): per iteration each of the two posts
 * WINDOW receives and WINDOW sends to the other, nonblocking, then waits for
 * all of them; every other rank pairs up the same way (2k with 2k + 1), so
 * four ranks make many-to-many traffic.
 *
 *   mpi_bibw [-n ITERS] [-w WINDOW] [-s SIZE]... [-m MIN -M MAX]
 *
 * Sizes: each -s, or the powers of two from MIN to MAX (default 128 KiB to
 * 4 MiB). Every message is validated whole: its bytes depend on the
 * iteration, the sender and its slot, so a stale, torn or misdirected
 * message fails. Messages of one iteration share a buffer per slot only when
 * the window's buffers would pass 64 MiB, and then carry the same bytes. One
 * line per size from rank 0:
 *
 *   size=131072 window=64 iters=20 bibw_MBps=...
 *
 * MB is 10^6 bytes; the figure counts both directions of ranks 0 and 1.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_CAP ((size_t)64 << 20)  /* a window's receive (or send) buffers */

static int rank;

#include "mpi_check.h"

/* The byte at @p i of slot @p slot of iteration @p it sent by @p from. */
static inline unsigned char
pattern(size_t i, int it, int from, int slot)
{
	uint64_t x = (uint64_t)i * 0x9e3779b1u + (uint64_t)it * 131 + (uint64_t)from * 7919 +
		     (uint64_t)slot * 104729;

	return (unsigned char)(x ^ (x >> 13) ^ (x >> 29));
}

static void
fill(unsigned char *b, size_t n, int it, int from, int slot)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = pattern(i, it, from, slot);
}

static void
check(const unsigned char *b, size_t n, int it, int from, int slot, int msg)
{
	size_t i;

	for (i = 0; i < n; i++)
		CHECK(b[i] == pattern(i, it, from, slot),
		      "size %zu iteration %d message %d from rank %d: byte %zu is %u, not %u", n,
		      it, msg, from, i, b[i], pattern(i, it, from, slot));
}

/* Bytes per second both ways between this rank and @p peer. */
static double
bibw(size_t n, int iters, int window, int peer)
{
	int nbuf = (size_t)window * n <= BUF_CAP ? window : (int)(BUF_CAP / n);
	unsigned char *sbuf, *rbuf;
	MPI_Request *req = malloc(2 * window * sizeof(*req));
	double t0 = 0, t = 0;
	int it, w;

	if (nbuf < 1)
		nbuf = 1;
	sbuf = malloc(n * nbuf);
	rbuf = malloc(n * nbuf);
	CHECK(req && sbuf && rbuf, "no memory for %d buffers of %zu bytes", nbuf, n);
	for (it = -1; it < iters; it++) {   /* iteration -1 warms up */
		for (w = 0; w < nbuf; w++) {
			fill(sbuf + (size_t)w * n, n, it, rank, w);
			memset(rbuf + (size_t)w * n, 0, n);
		}
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (w = 0; w < window; w++)
			MPI_Irecv(rbuf + (size_t)(w % nbuf) * n, (int)n, MPI_BYTE, peer, 5,
				  MPI_COMM_WORLD, &req[w]);
		for (w = 0; w < window; w++)
			MPI_Isend(sbuf + (size_t)(w % nbuf) * n, (int)n, MPI_BYTE, peer, 5,
				  MPI_COMM_WORLD, &req[window + w]);
		MPI_Waitall(2 * window, req, MPI_STATUSES_IGNORE);
		if (it >= 0)
			t += MPI_Wtime() - t0;
		for (w = 0; w < nbuf; w++)
			check(rbuf + (size_t)w * n, n, it, peer, w, w);
	}
	free(req);
	free(sbuf);
	free(rbuf);
	return 2.0 * (double)n * window * iters / t;
}

int
main(int argc, char **argv)
{
	size_t sizes[32], min = 128 << 10, max = 4 << 20;
	int nsizes = 0, iters = 20, window = 64, i, s, size;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (strcmp(argv[i], "-w") == 0 && i + 1 < argc)
			window = atoi(argv[++i]);
		else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc && nsizes < 32)
			sizes[nsizes++] = strtoul(argv[++i], NULL, 0);
		else if (strcmp(argv[i], "-m") == 0 && i + 1 < argc)
			min = strtoul(argv[++i], NULL, 0);
		else if (strcmp(argv[i], "-M") == 0 && i + 1 < argc)
			max = strtoul(argv[++i], NULL, 0);
		else
			CHECK(0, "usage: mpi_bibw [-n ITERS] [-w WINDOW] [-s SIZE]... [-m MIN -M MAX]");
	}
	CHECK(size >= 2 && size % 2 == 0 && window > 0 && iters > 0,
	      "an even number of ranks, a window and iterations of 1 or more");
	if (nsizes == 0)
		for (; nsizes < 32 && min <= max && min > 0; min *= 2)
			sizes[nsizes++] = min;
	for (s = 0; s < nsizes; s++) {
		double bw = bibw(sizes[s], iters, window, rank ^ 1);

		if (rank == 0) {
			printf("size=%zu window=%d iters=%d bibw_MBps=%.1f\n", sizes[s], window, iters,
			       bw / 1e6);
			fflush(stdout);
		}
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
