/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Collectives over the "via" libfabric provider (issue 17): barrier,
 * broadcast from every root, allreduce, reduce, allgather and alltoall at
 * small and large sizes, each result compared with what it must be.
 *
 *   mpi_coll [-q]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static int quiet;

#include "mpi_check.h"

static void
step(const char *name)
{
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0 && !quiet)
		printf("  %s: ok\n", name);
}

/*
 * Barriers interleaved with messages: after barrier k every rank sends k
 * to its right-hand neighbour, which must not see it before its own
 * barrier k, nor any of round k + 1 before barrier k + 1: a receive
 * posted for round k would otherwise match a later round's value.
 */
static void
barrier(void)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size, k;

	for (k = 0; k < 200; k++) {
		MPI_Request req;
		int v = -1, flag;

		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Isend(&k, 1, MPI_INT, next, 77, MPI_COMM_WORLD, &req);
		MPI_Recv(&v, 1, MPI_INT, prev, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Wait(&req, MPI_STATUS_IGNORE);
		CHECK(v == k, "barrier round %d: received round %d", k, v);
		MPI_Iprobe(prev, 77, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
		CHECK(!flag, "barrier round %d: a message of the next round before the barrier", k);
	}
	step("MPI_Barrier (200 rounds)");
}

static void
bcast(void)
{
	static const int lens[] = { 1, 1000, 100000, 2 << 20 };
	unsigned l;
	int root, i;

	for (l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		int *b = malloc(lens[l] * sizeof(int));

		CHECK(b != NULL, "no memory");
		for (root = 0; root < size; root++) {
			for (i = 0; i < lens[l]; i++)
				b[i] = rank == root ? root * 1000003 + i : -1;
			MPI_Bcast(b, lens[l], MPI_INT, root, MPI_COMM_WORLD);
			for (i = 0; i < lens[l]; i++)
				CHECK(b[i] == root * 1000003 + i, "bcast of %d ints from %d: [%d] = %d",
				      lens[l], root, i, b[i]);
		}
		free(b);
	}
	step("MPI_Bcast (every root, 4 B to 8 MiB)");
}

static void
allreduce(void)
{
	static const int lens[] = { 1, 100, 30000, 300000 };
	unsigned l;
	int i;

	for (l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		long *in = malloc(lens[l] * sizeof(long)), *out = malloc(lens[l] * sizeof(long));
		double *din = malloc(lens[l] * sizeof(double)), *dout = malloc(lens[l] * sizeof(double));

		CHECK(in && out && din && dout, "no memory");
		for (i = 0; i < lens[l]; i++) {
			in[i] = (long)rank * i + 1;
			din[i] = (double)((rank * 7 + i) % 13);
		}
		MPI_Allreduce(in, out, lens[l], MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
		MPI_Allreduce(din, dout, lens[l], MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
		for (i = 0; i < lens[l]; i++) {
			long want = (long)i * size * (size - 1) / 2 + size;
			double dmax = 0;
			int r;

			for (r = 0; r < size; r++)
				if ((double)((r * 7 + i) % 13) > dmax)
					dmax = (double)((r * 7 + i) % 13);
			CHECK(out[i] == want, "allreduce sum [%d] = %ld, want %ld", i, out[i], want);
			CHECK(dout[i] == dmax, "allreduce max [%d] = %g, want %g", i, dout[i], dmax);
		}
		free(in);
		free(out);
		free(din);
		free(dout);
	}
	step("MPI_Allreduce (sum, max; 1 to 300000 elements)");
}

static void
reduce_gather(void)
{
	int v = rank + 1, sum = 0, *all = malloc(size * sizeof(int)), i;

	MPI_Reduce(&v, &sum, 1, MPI_INT, MPI_SUM, size - 1, MPI_COMM_WORLD);
	if (rank == size - 1)
		CHECK(sum == size * (size + 1) / 2, "reduce: %d", sum);
	MPI_Allgather(&v, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
	for (i = 0; i < size; i++)
		CHECK(all[i] == i + 1, "allgather [%d] = %d", i, all[i]);
	free(all);
	step("MPI_Reduce, MPI_Allgather");
}

static void
alltoall(void)
{
	static const int lens[] = { 1, 2500, 70000 };
	unsigned l;
	int p, i;

	for (l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		int n = lens[l];
		int *out = malloc((size_t)n * size * sizeof(int));
		int *in = malloc((size_t)n * size * sizeof(int));

		CHECK(out && in, "no memory");
		for (p = 0; p < size; p++)
			for (i = 0; i < n; i++)
				out[p * n + i] = rank * 100000 + p * 1000 + i % 1000;
		MPI_Alltoall(out, n, MPI_INT, in, n, MPI_INT, MPI_COMM_WORLD);
		for (p = 0; p < size; p++)
			for (i = 0; i < n; i++)
				CHECK(in[p * n + i] == p * 100000 + rank * 1000 + i % 1000,
				      "alltoall of %d ints: from %d [%d] = %d", n, p, i, in[p * n + i]);
		free(out);
		free(in);
	}
	step("MPI_Alltoall (4 B to 280 KB per pair)");
}

int
main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	quiet = argc > 1 && strcmp(argv[1], "-q") == 0;
	if (rank == 0 && !quiet)
		printf("mpi_coll: %d ranks\n", size);
	barrier();
	bcast();
	allreduce();
	reduce_gather();
	alltoall();
	if (rank == 0)
		printf("mpi_coll: all checks passed on %d ranks\n", size);
	MPI_Finalize();
	return 0;
}
