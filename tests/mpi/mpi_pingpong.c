/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI latency and bandwidth between ranks 0 and 1 (other ranks wait).
 *
 *   mpi_pingpong [-n ITERS] [-s SIZE]... [-w WINDOW]
 *
 * For each size (default 8, 65536 and 1048576 bytes): a ping-pong of
 * ITERS round trips (after ITERS/10 unmeasured ones), one-way latency as
 * half the round trip (median and mean), then a stream of messages, WINDOW
 * in flight, answered by one acknowledgement: bandwidth. The first and last
 * byte of every message carry its sequence number, checked on arrival, and
 * the first and last message are checked whole. One line per size:
 *
 *   size=8 iters=10000 lat_p50_us=... lat_mean_us=... bw_MBps=...
 *
 * MB is 10^6 bytes.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank;

#include "mpi_check.h"

static void
stamp(unsigned char *b, size_t n, unsigned seq)
{
	if (n > 0)
		b[0] = (unsigned char)seq;
	if (n > 1)
		b[n - 1] = (unsigned char)(seq >> 8);
}

static void
check_stamp(const unsigned char *b, size_t n, unsigned seq)
{
	CHECK(n == 0 || (b[0] == (unsigned char)seq &&
			 (n == 1 || b[n - 1] == (unsigned char)(seq >> 8))),
	      "message %u of %zu bytes: stamp %u/%u", seq, n, b[0], b[n - 1]);
}

static void
fill(unsigned char *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (unsigned char)(i * 7 + 3);
}

static void
check_fill(const unsigned char *b, size_t n)
{
	size_t i;

	for (i = 1; i + 1 < n; i++)
		CHECK(b[i] == (unsigned char)(i * 7 + 3), "byte %zu of %zu: %u", i, n, b[i]);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Half round trips in microseconds, sorted; rank 0 only. */
static double *
pingpong(unsigned char *buf, size_t n, int iters)
{
	int warm = iters / 10, i, peer = 1 - rank;
	double *lat = rank == 0 ? malloc(iters * sizeof(double)) : NULL;

	for (i = -warm; i < iters; i++) {
		unsigned seq = (unsigned)(i + warm);
		double t0 = MPI_Wtime();

		if (rank == 0) {
			stamp(buf, n, seq);
			MPI_Send(buf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
			MPI_Recv(buf, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			check_stamp(buf, n, seq + 1);
			if (i >= 0)
				lat[i] = (MPI_Wtime() - t0) * 1e6 / 2;
		} else {
			MPI_Recv(buf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			check_stamp(buf, n, seq);
			stamp(buf, n, seq + 1);
			MPI_Send(buf, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
		}
		if (i == -warm || i == iters - 1)
			check_fill(buf, n);
	}
	if (lat)
		qsort(lat, iters, sizeof(double), cmp_double);
	return lat;
}

/* Bytes per second of a stream of @p iters messages, window in flight. */
static double
stream(unsigned char *bufs, size_t n, int iters, int window)
{
	MPI_Request *req = malloc(window * sizeof(*req));
	double t0 = 0;
	int i, ack = 0;

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (i = 0; i < iters; i += window) {
		int w, k = iters - i < window ? iters - i : window;

		for (w = 0; w < k; w++) {
			unsigned char *b = bufs + (size_t)w * n;

			if (rank == 0) {
				stamp(b, n, (unsigned)(i + w));
				MPI_Isend(b, (int)n, MPI_BYTE, 1, 3, MPI_COMM_WORLD, &req[w]);
			} else {
				MPI_Irecv(b, (int)n, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &req[w]);
			}
		}
		MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
		if (rank == 1)
			for (w = 0; w < k; w++)
				check_stamp(bufs + (size_t)w * n, n, (unsigned)(i + w));
	}
	if (rank == 0)
		MPI_Recv(&ack, 1, MPI_INT, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	else
		MPI_Send(&ack, 1, MPI_INT, 0, 4, MPI_COMM_WORLD);
	free(req);
	return (double)n * iters / (MPI_Wtime() - t0);
}

int
main(int argc, char **argv)
{
	size_t sizes[16] = { 8, 65536, 1048576 };
	int nsizes = 0, iters = 0, window = 16, i, s, size;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc && nsizes < 16)
			sizes[nsizes++] = strtoul(argv[++i], NULL, 0);
		else if (strcmp(argv[i], "-w") == 0 && i + 1 < argc)
			window = atoi(argv[++i]);
		else
			CHECK(0, "usage: mpi_pingpong [-n ITERS] [-s SIZE]... [-w WINDOW]");
	}
	if (nsizes == 0)
		nsizes = 3;
	CHECK(size >= 2 && window > 0, "two ranks or more, a window of 1 or more");
	for (s = 0; s < nsizes; s++) {
		size_t n = sizes[s];
		int it = iters ? iters : n >= (1 << 20) ? 200 : n >= 65536 ? 1000 : 10000;
		unsigned char *bufs;
		double *lat = NULL, bw = 0, mean = 0;

		if (rank > 1) {
			/* the three barriers of ranks 0 and 1 below */
			for (i = 0; i < 3; i++)
				MPI_Barrier(MPI_COMM_WORLD);
			continue;
		}
		bufs = malloc((n ? n : 1) * (size_t)window);
		CHECK(bufs != NULL, "no memory");
		for (i = 0; i < window; i++)
			fill(bufs + (size_t)i * n, n);
		lat = pingpong(bufs, n, it);
		MPI_Barrier(MPI_COMM_WORLD);
		bw = stream(bufs, n, it, window);
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank == 0) {
			for (i = 0; i < it; i++)
				mean += lat[i];
			printf("size=%zu iters=%d lat_p50_us=%.2f lat_mean_us=%.2f bw_MBps=%.1f\n", n,
			       it, lat[it / 2], mean / it, bw / 1e6);
			fflush(stdout);
		}
		free(lat);
		free(bufs);
	}
	MPI_Finalize();
	return 0;
}
