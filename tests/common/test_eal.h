/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The EAL of a unit test that drives DPDK ports in-process (test_glue,
 * test_faulty): one lcore, no hugepages, no PCI, and no shared
 * configuration or telemetry socket, so that tests run side by side.
 */
#ifndef TEST_EAL_H
#define TEST_EAL_H

struct rte_mempool;

/**
 * Start the EAL with the arguments above, then @p extra (NULL-terminated,
 * may be NULL), then the program's own arguments; make an mbuf pool.
 * @return the pool, or NULL after a line on stderr (the EAL then cleaned
 *         up); the test exits with status 2 then
 */
struct rte_mempool *test_eal_start(int argc, char **argv, const char *const *extra,
				   const char *pool_name, unsigned int nb_mbuf);

/** Free @p mp and clean the EAL up. */
void test_eal_stop(struct rte_mempool *mp);

#endif /* TEST_EAL_H */
