/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file via_fault.h
 * @brief The fault injector's configuration and counters: the glue module
 *        "faulty" (glue_faulty.c) and whoever configures or reads it.
 *
 * Kept apart from via_glue.h, the header every glue module is written
 * against, because only the fault injector's users need these types.
 * via_glue_port_conf::faults points to a struct via_fault_conf.
 */
#ifndef VIA_FAULT_H
#define VIA_FAULT_H

#include <stdint.h>

#include "via_glue.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Probabilities are in parts per million: 1000000 = always. */
#define VIA_FAULT_PPM_MAX 1000000u

/** Largest via_fault_conf::corrupt_bits. */
#define VIA_FAULT_CORRUPT_BITS_MAX 64

/** Largest via_fault_conf::delay_us (one second: longer is a typo). */
#define VIA_FAULT_DELAY_US_MAX 1000000u

/**
 * Frames one queue can hold delayed, per direction; a frame to delay when
 * the queue is full is dropped and counted in delay_overflow.
 */
#define VIA_FAULT_DELAY_QUEUE 512

/** Length of the VIA header that follows the Ethernet header. */
#define VIA_FAULT_VIA_HDR_LEN 48

/** Where corruption flips bits (offsets from the start of the frame). */
enum via_fault_where {
	VIA_FAULT_WHERE_ANY = 0,     /**< anywhere after the Ethernet header */
	VIA_FAULT_WHERE_HEADER = 1,  /**< in the 48 bytes after it (VIA header) */
	VIA_FAULT_WHERE_PAYLOAD = 2, /**< after those 14 + 48 bytes */
};

/**
 * Fault probabilities of one direction, in parts per million
 * (0..VIA_FAULT_PPM_MAX).  Each frame draws every decision independently,
 * in this order: drop; dup (a copy of the intact frame is sent in its
 * place, the original goes on through the next steps); corrupt; delay;
 * reorder (the frame is held and sent right after the next frame).
 */
struct via_fault_dir_conf {
	uint32_t drop_ppm;
	uint32_t dup_ppm;
	uint32_t reorder_ppm;
	uint32_t corrupt_ppm;
	uint32_t delay_ppm;
};

/** Configuration of a "faulty" port (via_glue_port_conf::faults). */
struct via_fault_conf {
	struct via_fault_dir_conf rx;  /**< applied to frames received */
	struct via_fault_dir_conf tx;  /**< applied to frames transmitted */
	uint32_t delay_us;     /**< how long a delayed frame is held,
				*   0..VIA_FAULT_DELAY_US_MAX; it comes out
				*   on the first burst of its queue and
				*   direction after that time, and never
				*   in the burst that delayed it. */
	uint16_t corrupt_bits; /**< distinct bits flipped per corrupted frame,
				*   1..VIA_FAULT_CORRUPT_BITS_MAX; 0 = 1.
				*   Fewer when the region is smaller. */
	uint8_t corrupt_where; /**< enum via_fault_where */
	uint64_t seed;         /**< PRNG seed; any value, 0 included */
};

/** What the fault injector did in one direction (cumulative). */
struct via_fault_dir_stats {
	uint64_t seen;           /**< frames that entered the injector */
	uint64_t dropped;        /**< dropped by a drop decision */
	uint64_t duplicated;     /**< copies made (one per dup decision) */
	uint64_t reordered;      /**< held frames sent after a later frame */
	uint64_t delayed;        /**< frames put in the delay queue */
	uint64_t corrupted;      /**< frames with bits flipped */
	uint64_t bits_flipped;   /**< total bits flipped */
	uint64_t delay_overflow; /**< delay queue full: frame dropped */
	uint64_t nomem;          /**< no mbuf for a dup or for a private copy
				  *   to corrupt: that fault was skipped */
};

/** Counters of a "faulty" port, see via_port_faults_get(). */
struct via_fault_stats {
	struct via_fault_dir_stats rx;
	struct via_fault_dir_stats tx;
};

/**
 * Read the fault injector's counters of a "faulty" port (summed over its
 * queues).  Safe while other threads burst on the port; each counter is
 * read atomically, the set is not a snapshot.
 *
 * @param p   Port.
 * @param st  Filled on success.
 * @return 0 on success, or
 *   - -EINVAL: @p p or @p st is NULL;
 *   - -ENOTSUP: @p p is not a "faulty" port.
 */
int via_port_faults_get(struct via_port *p, struct via_fault_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* VIA_FAULT_H */
