/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Packet capture (capture.c): the frames a NIC sends and receives, and
 * those that only move in memory between VIs of this viad, written to a
 * pcapng file for Wireshark (tools/wireshark/via.lua). viactl asks for a
 * capture over the capture socket (via_capture_proto.h).
 *
 * Each NIC is captured by one client at a time, NICs at once. The data
 * path calls via_capture() where frames leave for a port or an inbox and
 * where they come from a port. Off, that is one load of a word
 * and one branch that is always taken the same way. On, the lcore copies
 * each frame into a free slot and queues it; a control thread writes the
 * slots to the file. A frame that finds no free slot is counted, never
 * waited for: capture never slows the data path down to the disk's pace.
 */
#ifndef VIA_CAPTURE_H
#define VIA_CAPTURE_H

#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_mbuf.h>

#include "viad.h"

/** Where a captured frame was going. */
enum via_capture_dir {
	VIA_CAPTURE_RX,   /**< received from the port */
	VIA_CAPTURE_TX,   /**< handed to the port (or its backlog) */
	VIA_CAPTURE_MEM,  /**< to the NIC's own address: moved in memory, no port */
};

/** Bit N: NIC N is being captured. Written by the capture thread only. */
extern uint32_t via_capture_nics;

/** Copy @p n frames of @p nic into its capture (via_capture() found its bit set). */
void via_capture_frames(const struct via_nic *nic, struct rte_mbuf *const *pkts, uint16_t n,
			enum via_capture_dir dir);

/**
 * The data path's hook: capture @p n frames of @p nic going @p dir if that
 * NIC is being captured. The caller holds a shard's data-path lock (a poll
 * lcore) or every shard's (the control thread): stopping a capture waits
 * for those locks before it frees what via_capture_frames() uses.
 */
static inline void
via_capture(const struct via_nic *nic, struct rte_mbuf *const *pkts, uint16_t n,
	    enum via_capture_dir dir)
{
	if (unlikely(__atomic_load_n(&via_capture_nics, __ATOMIC_RELAXED) & (1u << nic->index)))
		via_capture_frames(nic, pkts, n, dir);
}

/** A NIC's capture, for telemetry. */
struct via_capture_status {
	bool active;
	char port[VIA_CTL_NAME_MAX];   /**< its NIC */
	uint64_t frames;               /**< frames written (the running or the last capture) */
	uint64_t dropped;              /**< frames not kept: no free slot */
};

/**
 * Open the capture socket in the EAL runtime directory and start the
 * thread that serves it. @return 0, -errno (viad runs on without capture)
 */
int via_capture_init(struct viad *d);
/** Stop a running capture (its client is told), the thread, remove the socket. */
void via_capture_fini(void);
/**
 * The running or last capture of each NIC that was captured, at most
 * @p max into @p st. @return how many
 */
unsigned via_capture_get_status(struct via_capture_status *st, unsigned max);

#endif /* VIA_CAPTURE_H */
