/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdio.h>

#include <rte_common.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include "test_eal.h"

struct rte_mempool *
test_eal_start(int argc, char **argv, const char *const *extra, const char *pool_name,
	       unsigned int nb_mbuf)
{
	static const char *const base[] = {
		"-l", "0", "--no-huge", "-m", "256", "--no-pci", "--no-shconf",
		"--no-telemetry", "--log-level=*:warning",
	};
	char *eal_argv[32];
	int eal_argc = 0, i;
	struct rte_mempool *mp;

	eal_argv[eal_argc++] = argv[0];
	for (i = 0; i < (int)RTE_DIM(base); i++)
		eal_argv[eal_argc++] = (char *)base[i];
	for (i = 0; extra != NULL && extra[i] != NULL && eal_argc < (int)RTE_DIM(eal_argv) - 1;
	     i++)
		eal_argv[eal_argc++] = (char *)extra[i];
	for (i = 1; i < argc && eal_argc < (int)RTE_DIM(eal_argv) - 1; i++)
		eal_argv[eal_argc++] = argv[i];
	eal_argv[eal_argc] = NULL;

	if (rte_eal_init(eal_argc, eal_argv) < 0) {
		fprintf(stderr, "rte_eal_init: %s\n", rte_strerror(rte_errno));
		return NULL;
	}
	mp = rte_pktmbuf_pool_create(pool_name, nb_mbuf, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				     SOCKET_ID_ANY);
	if (mp == NULL) {
		fprintf(stderr, "mbuf pool: %s\n", rte_strerror(rte_errno));
		rte_eal_cleanup();
	}
	return mp;
}

void
test_eal_stop(struct rte_mempool *mp)
{
	rte_mempool_free(mp);
	rte_eal_cleanup();
}
