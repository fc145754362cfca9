/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file glue_internal.h
 * @brief Private to pmd_glue/: logging shared by the glue sources.
 */
#ifndef VIA_GLUE_INTERNAL_H
#define VIA_GLUE_INTERNAL_H

#include <rte_log.h>

/** Log type "via.glue" (registered in glue.c). */
extern int via_glue_logtype;

/** Log with the "via.glue" log type: GLUE_LOG(ERR, "fmt", ...). */
#define GLUE_LOG(level, fmt, ...)					\
	rte_log(RTE_LOG_ ## level, via_glue_logtype,			\
		"via_glue: " fmt "\n", ## __VA_ARGS__)

#endif /* VIA_GLUE_INTERNAL_H */
