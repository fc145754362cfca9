/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * viad's telemetry socket (telemetry.c), what viactl asks: a Unix
 * SOCK_SEQPACKET socket named VIA_TELEMETRY_SOCKET in viad's EAL runtime
 * directory, mode 0660, group viad.socket_group. It speaks DPDK's telemetry
 * protocol v2 (a greeting {"version", "pid", "max_output_len"}, then one
 * command a message, one JSON reply {"COMMAND": VALUE} each) and serves
 * viad's commands, "/", "/info" and "/help": viad relays each to EAL's own
 * socket (dpdk_telemetry.v2 beside it, mode 0600: root only), telling its
 * commands who asks (SO_PEERCRED), so that a member of the group sees the
 * pids, uids and process names of their own sessions only. libc only:
 * viactl includes it.
 */
#ifndef VIA_TELEMETRY_PROTO_H
#define VIA_TELEMETRY_PROTO_H

/** The socket's name in viad's EAL runtime directory. */
#define VIA_TELEMETRY_SOCKET "viad_telemetry.sock"

#endif /* VIA_TELEMETRY_PROTO_H */
