/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * viad's DPDK telemetry commands (telemetry.c): /viad/info, /viad/config,
 * /viad/ports, /viad/sessions, /viad/session, /viad/vis, /viad/vi,
 * /viad/cqs, /viad/cq, /viad/conns, /viad/counters, /viad/lcores,
 * /viad/hosts and /viad/capture, served on EAL's telemetry socket
 * (RUNTIME/dpdk/INSTANCE/dpdk_telemetry.v2) to dpdk-telemetry.py and viactl.
 */
#ifndef VIA_TELEMETRY_H
#define VIA_TELEMETRY_H

#include "viad.h"

/**
 * Register the commands; call once the NICs, shards and tables exist. When
 * systemd (or the caller) named the runtime directory (RUNTIME_DIRECTORY),
 * EAL's directories in it and the telemetry socket are opened to that
 * directory's group, so that its members query viad as themselves.
 * @return 0, -errno of the first registration that failed
 */
int via_telemetry_init(struct viad *d);

#endif /* VIA_TELEMETRY_H */
