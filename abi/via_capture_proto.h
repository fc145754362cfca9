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
 *                                    <--- via_capture_rep PROGRESS, twice a second
 *   shutdown(SHUT_WR) to stop early  ---->
 *                                    <--- via_capture_rep DONE: frames, drops
 *
 * viad writes the file through the fd the client opened, so the file is the
 * client's, with its permissions, wherever it can write. One capture runs on
 * a NIC at a time (another client asking for that NIC gets -EBUSY); NICs
 * are captured at once, each by its own client. A filter keeps the VIA
 * frames of one VI, one opcode, one connection, or all of these at once.
 * libc only: viactl includes it.
 */
#ifndef VIA_CAPTURE_PROTO_H
#define VIA_CAPTURE_PROTO_H

#include <stdint.h>

/** The socket's name in viad's EAL runtime directory. */
#define VIA_CAPTURE_SOCKET "viad_capture.sock"
/** "VIAC" */
#define VIA_CAPTURE_MAGIC 0x56494143u
#define VIA_CAPTURE_VERSION 2u
/** The NIC name field, NUL included. */
#define VIA_CAPTURE_NAME_MAX 32

/** What a reply says. */
enum via_capture_rep_kind {
	VIA_CAPTURE_STARTED = 1,  /**< frames are being written; status 0 */
	VIA_CAPTURE_DONE = 2,     /**< the capture ended (count, hang-up, viad stopping) */
	VIA_CAPTURE_ERROR = 3,    /**< the request was refused: status -errno */
	VIA_CAPTURE_PROGRESS = 4, /**< frames written and dropped so far */
};

/** The opcode field of a filter, NUL included. */
#define VIA_CAPTURE_OPCODE_MAX 16

/** The request; one fd (the pcapng output) comes with it in SCM_RIGHTS. */
struct via_capture_req {
	uint32_t magic;           /**< VIA_CAPTURE_MAGIC */
	uint32_t version;         /**< VIA_CAPTURE_VERSION */
	char port[VIA_CAPTURE_NAME_MAX]; /**< NIC name: via0, /dev/via_lo, ... */
	uint64_t count;           /**< frames to write; 0: until the client stops */
	uint32_t snaplen;         /**< bytes kept per frame; 0: whole frames */
	uint32_t reserved;        /**< 0 */
	/* the filter: a frame is kept if it matches every field given */
	uint32_t filter_vi;       /**< from or to this VI id; 0: any */
	uint32_t filter_conn_id;  /**< of this connection id; 0: any */
	/** an opcode by its name in docs/wire-format.md (SEND, ACK, CONN_REQ,
	 *  any case) or its number; "": any */
	char filter_opcode[VIA_CAPTURE_OPCODE_MAX];
};
_Static_assert(sizeof(struct via_capture_req) == 80, "via_capture_req is a protocol");

/** A reply. */
struct via_capture_rep {
	uint32_t magic;           /**< VIA_CAPTURE_MAGIC */
	uint32_t kind;            /**< enum via_capture_rep_kind */
	int32_t status;           /**< 0, or -errno (ERROR; DONE after a write error) */
	uint32_t snaplen;         /**< bytes kept per frame */
	uint64_t frames;          /**< DONE, PROGRESS: frames written */
	uint64_t dropped;         /**< DONE, PROGRESS: frames seen but not kept (no free slot) */
};
_Static_assert(sizeof(struct via_capture_rep) == 32, "via_capture_rep is a protocol");

#endif /* VIA_CAPTURE_PROTO_H */
