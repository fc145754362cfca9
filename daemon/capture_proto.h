/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The capture socket between viactl and viad (capture.c): a Unix
 * SOCK_SEQPACKET socket named VIA_CAPTURE_SOCKET in viad's EAL runtime
 * directory, beside DPDK's dpdk_telemetry.v2, mode 0600: only viad's own
 * user captures, since frames carry every client's data.
 *
 *   client                                viad
 *   via_capture_req + the output fd ---->
 *                                    <--- via_capture_rep STARTED (or an error)
 *                                         pcapng blocks written to the fd
 *   shutdown(SHUT_WR) to stop early  ---->
 *                                    <--- via_capture_rep DONE: frames, drops
 *
 * viad writes the file through the fd the client opened, so the file is the
 * client's, with its permissions, wherever it can write. One capture runs at
 * a time; another client gets -EBUSY. libc only: viactl includes it.
 */
#ifndef VIA_CAPTURE_PROTO_H
#define VIA_CAPTURE_PROTO_H

#include <stdint.h>

/** The socket's name in viad's EAL runtime directory. */
#define VIA_CAPTURE_SOCKET "viad_capture.sock"
/** "VIAC" */
#define VIA_CAPTURE_MAGIC 0x56494143u
#define VIA_CAPTURE_VERSION 1u
/** The NIC name field, NUL included. */
#define VIA_CAPTURE_NAME_MAX 32

/** What a reply says. */
enum via_capture_rep_kind {
	VIA_CAPTURE_STARTED = 1,  /**< frames are being written; status 0 */
	VIA_CAPTURE_DONE = 2,     /**< the capture ended (count, hang-up, viad stopping) */
	VIA_CAPTURE_ERROR = 3,    /**< the request was refused: status -errno */
};

/** The request; one fd (the pcapng output) comes with it in SCM_RIGHTS. */
struct via_capture_req {
	uint32_t magic;           /**< VIA_CAPTURE_MAGIC */
	uint32_t version;         /**< VIA_CAPTURE_VERSION */
	char port[VIA_CAPTURE_NAME_MAX]; /**< NIC name: via0, /dev/via_lo, ... */
	uint64_t count;           /**< frames to write; 0: until the client stops */
	uint32_t snaplen;         /**< bytes kept per frame; 0: whole frames */
	uint32_t reserved;        /**< 0 */
};
_Static_assert(sizeof(struct via_capture_req) == 56, "via_capture_req is a protocol");

/** A reply. */
struct via_capture_rep {
	uint32_t magic;           /**< VIA_CAPTURE_MAGIC */
	uint32_t kind;            /**< enum via_capture_rep_kind */
	int32_t status;           /**< 0, or -errno (ERROR; DONE after a write error) */
	uint32_t snaplen;         /**< bytes kept per frame */
	uint64_t frames;          /**< DONE: frames written */
	uint64_t dropped;         /**< DONE: frames seen but not kept (no free slot) */
};
_Static_assert(sizeof(struct via_capture_rep) == 32, "via_capture_rep is a protocol");

#endif /* VIA_CAPTURE_PROTO_H */
