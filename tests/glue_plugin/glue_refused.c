/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * glue_refused.c: plugins viad must refuse, one per build of this file
 * (run.sh), each with a single defect:
 *
 *   -DREFUSED_NAME='"future"' -DREFUSED_FUTURE_ABI
 *	built for the glue ABI after the installed one;
 *   -DREFUSED_NAME='"noprobe"' -DREFUSED_NO_PROBE
 *	the required slot probe left unset.
 *
 * The module is named after its file (via_glue_<REFUSED_NAME>.so) so that
 * only the defect stands between it and viad.  Its probe would fail: no
 * port must ever open on it.
 */
#include <errno.h>

#include <via_glue.h>

/* __rte_unused: the -DREFUSED_NO_PROBE build leaves it out of the module */
static __rte_unused int
refused_probe(struct via_port *port, const struct via_glue_port_conf *conf)
{
	RTE_SET_USED(port);
	RTE_SET_USED(conf);
	return -ENODEV;
}

static const struct via_glue_module refused_module = {
#ifdef REFUSED_FUTURE_ABI
	.abi_version = VIA_GLUE_ABI_VERSION + 1,
#else
	.abi_version = VIA_GLUE_ABI_VERSION,
#endif
	.name = REFUSED_NAME,
#ifndef REFUSED_NO_PROBE
	.ops.probe = refused_probe,
#endif
};

VIA_GLUE_PLUGIN(refused_module);
