/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * viad's DPDK telemetry commands (telemetry.c): /viad/info, /viad/config,
 * /viad/ports, /viad/sessions, /viad/session, /viad/vis, /viad/vi,
 * /viad/cqs, /viad/cq, /viad/conns, /viad/counters, /viad/lcores,
 * /viad/hosts and /viad/capture, served on EAL's telemetry socket
 * (RUNTIME/dpdk/INSTANCE/dpdk_telemetry.v2, root's) to dpdk-telemetry.py,
 * and on viad's own beside it (via_telemetry_proto.h) to viactl.
 */
#ifndef VIA_TELEMETRY_H
#define VIA_TELEMETRY_H

#include "viad.h"

/**
 * Register the commands and open viad's telemetry socket
 * (via_telemetry_proto.h); call once the NICs, shards and tables exist. When
 * systemd (or the caller) named the runtime directory (RUNTIME_DIRECTORY),
 * it, EAL's directories in it and viad's telemetry socket are opened to
 * viad.socket_group, so that its members query viad as themselves; EAL's
 * own socket stays root's.
 * @return 0, -errno (viad runs on without its telemetry socket)
 */
int via_telemetry_init(struct viad *d);

/** Stop the relay thread, close and remove viad's telemetry socket. */
void via_telemetry_fini(void);

#endif /* VIA_TELEMETRY_H */
