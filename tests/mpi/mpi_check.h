/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The checks of tests/mpi's MPI programs: CHECK(cond, fmt, ...) prints the
 * rank, where, and what failed, then aborts the whole job. Each program
 * defines `static int rank` (its MPI_COMM_WORLD rank) before including it.
 */
#ifndef VIA_MPI_CHECK_H
#define VIA_MPI_CHECK_H

#include <mpi.h>
#include <stdio.h>

#define CHECK(cond, ...)                                                              \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                                 \
			fputc('\n', stderr);                                          \
			MPI_Abort(MPI_COMM_WORLD, 1);                                 \
		}                                                                     \
	} while (0)

#endif /* VIA_MPI_CHECK_H */
