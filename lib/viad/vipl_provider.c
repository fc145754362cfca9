/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libvipl-dpdk as a provider of libvipl.so (include/vipl_provider.h): its
 * table is its own VIPL calls, every slot filled, and the tag libvipl.so
 * gives it goes into every handle it makes (vipl_handle.c).
 */
#include <vipl_provider.h>

#include "vipl_priv.h"

static const struct vipl_provider_ops dpdk_ops = {
#define SLOT(name, params, args, required, dflt) .name = name,
	VIPL_PROVIDER_CALLS(SLOT)
#undef SLOT
};

static const struct vipl_provider dpdk_provider = {
	.abi_version = VIPL_PROVIDER_ABI_VERSION,
	.name = "dpdk",
	.description = "viad: VIA over DPDK ports, through the viad daemon",
	.ops = &dpdk_ops,
};

VIPL_EXPORT const struct vipl_provider *
vipl_provider_entry(uint32_t abi_version, uint8_t handle_tag)
{
	if (abi_version != VIPL_PROVIDER_ABI_VERSION)
		return NULL;
	vipl_handle_set_tag(handle_tag);
	return &dpdk_provider;
}
