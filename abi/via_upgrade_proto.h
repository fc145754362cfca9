/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The admin socket between `viactl upgrade` and viad (upgrade.c): a Unix
 * SOCK_SEQPACKET socket named VIA_ADMIN_SOCKET in viad's EAL runtime
 * directory, beside the capture socket, mode 0600. Only root may ask: an
 * upgrade runs a program as root.
 *
 *   viactl                                   viad
 *   via_admin_req [+ the new binary's fd] ---->
 *                                             hands over to the new binary
 *                                             across exec (same pid); the
 *                                             viad that then runs, the new
 *                                             one or the old one rolled
 *                                             back, answers on this socket:
 *                                        <--- via_admin_rep
 *
 * The fd is the binary viactl opened (O_PATH will do): viad executes what
 * the asker could open, checked to be a regular executable file owned by
 * root and writable by nobody else. Without one, viad executes the file now
 * at the path it was started from (a package upgrade replaced it). libc
 * only: viactl includes it.
 */
#ifndef VIA_UPGRADE_PROTO_H
#define VIA_UPGRADE_PROTO_H

#include <stdint.h>

/** The socket's name in viad's EAL runtime directory. */
#define VIA_ADMIN_SOCKET "viad_admin.sock"
/** "VIAU" */
#define VIA_ADMIN_MAGIC 0x56494155u
#define VIA_ADMIN_VERSION 1u

/** What a request asks. */
enum via_admin_op {
	VIA_ADMIN_UPGRADE = 1,   /**< hand over to a new binary (the fd, or viad's own path) */
};

/** A request; at most one fd (the new binary) comes with it in SCM_RIGHTS. */
struct via_admin_req {
	uint32_t magic;          /**< VIA_ADMIN_MAGIC */
	uint32_t version;        /**< VIA_ADMIN_VERSION */
	uint32_t op;             /**< enum via_admin_op */
	uint32_t reserved;       /**< 0 */
};
_Static_assert(sizeof(struct via_admin_req) == 16, "via_admin_req is a protocol");

/** How an upgrade ended. */
enum via_admin_result {
	VIA_ADMIN_UPGRADED = 1,  /**< the new binary runs and adopted everything */
	VIA_ADMIN_ROLLED_BACK,   /**< the new binary refused the image: the old one runs again */
	VIA_ADMIN_REFUSED,       /**< nothing was handed over (status says why) */
};

/** The answer, from the viad that runs after the handover. */
struct via_admin_rep {
	uint32_t magic;          /**< VIA_ADMIN_MAGIC */
	uint32_t result;         /**< enum via_admin_result */
	int32_t status;          /**< 0, or -errno (REFUSED) */
	uint32_t image_version;  /**< the version of the image handed over */
	uint64_t blackout_us;    /**< from the data path's stop to its restart */
	uint64_t image_bytes;
	uint32_t sessions;       /**< adopted */
	uint32_t vis;
	uint32_t connections;    /**< Connected VIs among them */
	uint32_t frames;         /**< unacknowledged frames carried over */
	char detail[128];        /**< what refused it, or the binary's version */
};
_Static_assert(sizeof(struct via_admin_rep) == 176, "via_admin_rep is a protocol");

#endif /* VIA_UPGRADE_PROTO_H */
