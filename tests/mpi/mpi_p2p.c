/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Point-to-point MPI over the "via" libfabric provider (issue 17): every
 * check verifies the data, the status and the order MPI promises, and the
 * program fails (MPI_Abort, exit status 1) at the first difference.
 *
 *   mpi_p2p [-q]       any number of ranks (2 and 4 in tests/mpi/run.sh)
 *
 * Checks, in order: blocking ring; non-blocking exchange with every rank
 * (itself included); MPI_ANY_SOURCE and MPI_ANY_TAG with the source and tag
 * read back from the status; non-overtaking order of many messages with
 * one tag; MPI_Probe / MPI_Iprobe then a receive of the probed size;
 * MPI_Mprobe / MPI_Mrecv; synchronous sends; large and odd-sized messages
 * (eager, rendezvous, and every size around their boundary); a truncated
 * receive (MPI_ERR_TRUNCATE); a cancelled receive.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static int quiet;

#include "mpi_check.h"

/* The byte at offset i of a message from src to dst with seed s. */
static unsigned char
pattern(int src, int dst, int s, size_t i)
{
	return (unsigned char)(src * 131 + dst * 31 + s * 7 + i * 13 + (i >> 8));
}

static void
fill(unsigned char *b, size_t n, int src, int dst, int s)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = pattern(src, dst, s, i);
}

static void
verify(const unsigned char *b, size_t n, int src, int dst, int s, const char *what)
{
	size_t i;

	for (i = 0; i < n; i++)
		CHECK(b[i] == pattern(src, dst, s, i), "%s: byte %zu of %zu from %d: %u, expected %u",
		      what, i, n, src, b[i], pattern(src, dst, s, i));
}

static void
step(const char *name)
{
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0 && !quiet)
		printf("  %s: ok\n", name);
}

static void
ring(void)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	unsigned char out[100], in[100];
	MPI_Status st;
	int n;

	fill(out, sizeof(out), rank, next, 1);
	if (rank % 2 == 0) {
		MPI_Send(out, sizeof(out), MPI_BYTE, next, 11, MPI_COMM_WORLD);
		MPI_Recv(in, sizeof(in), MPI_BYTE, prev, 11, MPI_COMM_WORLD, &st);
	} else {
		MPI_Recv(in, sizeof(in), MPI_BYTE, prev, 11, MPI_COMM_WORLD, &st);
		MPI_Send(out, sizeof(out), MPI_BYTE, next, 11, MPI_COMM_WORLD);
	}
	MPI_Get_count(&st, MPI_BYTE, &n);
	CHECK(n == (int)sizeof(in) && st.MPI_SOURCE == prev && st.MPI_TAG == 11,
	      "ring status: count %d source %d tag %d", n, st.MPI_SOURCE, st.MPI_TAG);
	verify(in, sizeof(in), prev, rank, 1, "ring");
	step("blocking ring");
}

/* Isend/Irecv with every rank, this one too, messages of several sizes. */
static void
exchange(size_t len, int seed)
{
	unsigned char *out = malloc(len * size), *in = malloc(len * size);
	MPI_Request *req = malloc(2 * size * sizeof(*req));
	int p;

	CHECK(out && in && req, "no memory");
	for (p = 0; p < size; p++) {
		fill(out + p * len, len, rank, p, seed);
		MPI_Irecv(in + p * len, (int)len, MPI_BYTE, p, seed, MPI_COMM_WORLD, &req[p]);
	}
	for (p = 0; p < size; p++)
		MPI_Isend(out + p * len, (int)len, MPI_BYTE, p, seed, MPI_COMM_WORLD, &req[size + p]);
	MPI_Waitall(2 * size, req, MPI_STATUSES_IGNORE);
	for (p = 0; p < size; p++)
		verify(in + p * len, len, p, rank, seed, "exchange");
	free(out);
	free(in);
	free(req);
}

static void
any_source_any_tag(void)
{
	int msgs = size - 1, got = 0, seen[64] = { 0 };

	CHECK(size <= 64, "too many ranks for this check");
	if (rank == 0) {
		while (got < msgs) {
			unsigned char in[300];
			MPI_Status st;
			int n;

			MPI_Recv(in, sizeof(in), MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
				 &st);
			MPI_Get_count(&st, MPI_BYTE, &n);
			CHECK(st.MPI_SOURCE > 0 && st.MPI_SOURCE < size && !seen[st.MPI_SOURCE],
			      "any source: unexpected source %d", st.MPI_SOURCE);
			CHECK(st.MPI_TAG == 100 + st.MPI_SOURCE && n == 10 * st.MPI_SOURCE,
			      "any tag: tag %d count %d from %d", st.MPI_TAG, n, st.MPI_SOURCE);
			verify(in, (size_t)n, st.MPI_SOURCE, 0, 3, "any source");
			seen[st.MPI_SOURCE] = 1;
			got++;
		}
	} else {
		unsigned char out[300];

		fill(out, (size_t)(10 * rank), rank, 0, 3);
		MPI_Send(out, 10 * rank, MPI_BYTE, 0, 100 + rank, MPI_COMM_WORLD);
	}
	step("MPI_ANY_SOURCE / MPI_ANY_TAG");
}

/* Messages with the same tag must match in the order they were sent. */
static void
ordering(void)
{
	const int n = 500;
	int i;

	if (rank == 0) {
		for (i = 0; i < n; i++) {
			int v;

			MPI_Recv(&v, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			CHECK(v == i, "order: message %d carried %d", i, v);
		}
	} else if (rank == 1) {
		MPI_Request req[500];

		for (i = 0; i < n; i++) {
			static int vals[500];

			vals[i] = i;
			MPI_Isend(&vals[i], 1, MPI_INT, 0, 5, MPI_COMM_WORLD, &req[i]);
		}
		MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
	}
	step("non-overtaking order");
}

static void
probe(void)
{
	if (rank == 1) {
		unsigned char out[777];

		fill(out, sizeof(out), 1, 0, 4);
		MPI_Send(out, sizeof(out), MPI_BYTE, 0, 42, MPI_COMM_WORLD);
		MPI_Send(out, 333, MPI_BYTE, 0, 43, MPI_COMM_WORLD);
	} else if (rank == 0) {
		unsigned char *in;
		MPI_Status st;
		int n, flag = 0;

		MPI_Probe(1, 42, MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, MPI_BYTE, &n);
		CHECK(n == 777 && st.MPI_SOURCE == 1 && st.MPI_TAG == 42, "probe: count %d", n);
		in = malloc((size_t)n);
		MPI_Recv(in, n, MPI_BYTE, 1, 42, MPI_COMM_WORLD, &st);
		verify(in, (size_t)n, 1, 0, 4, "probe");
		while (!flag)
			MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
		MPI_Get_count(&st, MPI_BYTE, &n);
		CHECK(n == 333 && st.MPI_TAG == 43, "iprobe: count %d tag %d", n, st.MPI_TAG);
		MPI_Recv(in, n, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st);
		verify(in, (size_t)n, 1, 0, 4, "iprobe");
		free(in);
	}
	step("MPI_Probe / MPI_Iprobe");
}

static void
mprobe(size_t len)
{
	if (rank == 1) {
		unsigned char *out = malloc(len);

		fill(out, len, 1, 0, 6);
		MPI_Send(out, (int)len, MPI_BYTE, 0, 44, MPI_COMM_WORLD);
		free(out);
	} else if (rank == 0) {
		unsigned char *in;
		MPI_Message msg;
		MPI_Status st;
		int n;

		MPI_Mprobe(MPI_ANY_SOURCE, 44, MPI_COMM_WORLD, &msg, &st);
		MPI_Get_count(&st, MPI_BYTE, &n);
		CHECK((size_t)n == len && st.MPI_SOURCE == 1, "mprobe: count %d", n);
		in = malloc(len);
		MPI_Mrecv(in, n, MPI_BYTE, &msg, &st);
		verify(in, len, 1, 0, 6, "mrecv");
		free(in);
	}
}

static void
ssend(void)
{
	int v = rank;

	if (rank == 0) {
		int i;

		for (i = 1; i < size; i++) {
			MPI_Recv(&v, 1, MPI_INT, i, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			CHECK(v == i, "ssend: %d from %d", v, i);
		}
	} else {
		MPI_Ssend(&v, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
	}
	step("MPI_Ssend");
}

/* Rank 0 sends to rank 1 one message of each length; rank 1 checks it. */
static void
pair_sizes(const size_t *lens, int n, int seed)
{
	size_t max = 0;
	unsigned char *b;
	int i;

	for (i = 0; i < n; i++)
		if (lens[i] > max)
			max = lens[i];
	b = malloc(max ? max : 1);
	CHECK(b != NULL, "no memory");
	for (i = 0; i < n; i++) {
		if (rank == 0) {
			fill(b, lens[i], 0, 1, seed + i);
			MPI_Send(b, (int)lens[i], MPI_BYTE, 1, 9, MPI_COMM_WORLD);
		} else if (rank == 1) {
			MPI_Status st;
			int got;

			memset(b, 0xee, max);
			MPI_Recv(b, (int)max, MPI_BYTE, 0, 9, MPI_COMM_WORLD, &st);
			MPI_Get_count(&st, MPI_BYTE, &got);
			CHECK((size_t)got == lens[i], "size %zu: received %d bytes", lens[i], got);
			verify(b, lens[i], 0, 1, seed + i, "sizes");
		}
	}
	free(b);
}

static void
large(void)
{
	/* around the eager limit (64 KiB) and a VI's MaxTransferSize, then big */
	static const size_t lens[] = { 0, 1, 31, 32, 4095, 4096, 4097, 65471, 65472, 65473,
				       65535, 65536, 65537, 131071, 131072, 262145, 1048576,
				       3000001, 8 << 20 };

	pair_sizes(lens, (int)(sizeof(lens) / sizeof(lens[0])), 20);
	exchange(1 << 20, 21);
	exchange(100003, 22);
	mprobe(2 << 20);
	step("large and odd-sized messages (eager, rendezvous, Mprobe/Mrecv)");
}

static void
truncation(void)
{
	if (rank == 0) {
		unsigned char out[2000];

		fill(out, sizeof(out), 0, 1, 8);
		MPI_Send(out, sizeof(out), MPI_BYTE, 1, 12, MPI_COMM_WORLD);
		MPI_Send(out, 1, MPI_BYTE, 1, 13, MPI_COMM_WORLD);
	} else if (rank == 1) {
		unsigned char in[1000];
		MPI_Status st;
		int rc, cls;

		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
		rc = MPI_Recv(in, sizeof(in), MPI_BYTE, 0, 12, MPI_COMM_WORLD, &st);
		MPI_Error_class(rc, &cls);
		CHECK(cls == MPI_ERR_TRUNCATE, "truncated receive returned class %d", cls);
		verify(in, sizeof(in), 0, 1, 8, "truncated");
		/* the connection is still good */
		rc = MPI_Recv(in, sizeof(in), MPI_BYTE, 0, 13, MPI_COMM_WORLD, &st);
		CHECK(rc == MPI_SUCCESS && in[0] == pattern(0, 1, 8, 0), "after truncation");
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	}
	step("truncated receive (MPI_ERR_TRUNCATE)");
}

static void
cancel(void)
{
	MPI_Request req;
	MPI_Status st;
	int v, cancelled;

	MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &req);
	MPI_Cancel(&req);
	MPI_Wait(&req, &st);
	MPI_Test_cancelled(&st, &cancelled);
	CHECK(cancelled, "a receive nothing matched was not cancelled");
	step("MPI_Cancel of a receive");
}

int
main(int argc, char **argv)
{
	static const size_t sizes[] = { 0, 8, 4000, 70000 };
	unsigned i;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	quiet = argc > 1 && strcmp(argv[1], "-q") == 0;
	CHECK(size >= 2, "run with 2 ranks or more");
	if (rank == 0 && !quiet)
		printf("mpi_p2p: %d ranks\n", size);
	ring();
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		exchange(sizes[i], 30 + (int)i);
	step("non-blocking exchange with every rank");
	any_source_any_tag();
	ordering();
	probe();
	mprobe(100);
	step("MPI_Mprobe / MPI_Mrecv");
	ssend();
	large();
	truncation();
	cancel();
	if (rank == 0)
		printf("mpi_p2p: all checks passed on %d ranks\n", size);
	MPI_Finalize();
	return 0;
}
