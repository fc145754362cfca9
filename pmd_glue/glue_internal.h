/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file glue_internal.h
 * @brief Private to pmd_glue/: logging shared by the glue sources, and the
 *        exception path (glue_exception.c) that the ethdev module drives.
 */
#ifndef VIA_GLUE_INTERNAL_H
#define VIA_GLUE_INTERNAL_H

#include <rte_ether.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "via_glue.h"

/** Log type "via.glue" (registered in glue.c). */
extern int via_glue_logtype;

/** Log with the "via.glue" log type: GLUE_LOG(ERR, "fmt", ...). */
#define GLUE_LOG(level, fmt, ...)					\
	rte_log(RTE_LOG_ ## level, via_glue_logtype,			\
		"via_glue: " fmt "\n", ## __VA_ARGS__)

/** Most kernel frames handed on per call, each way. */
#define VIA_EXC_BURST 32

/** A port's exception path: a kernel interface for its non-VIA frames. */
struct via_exc;

/**
 * Create the kernel interface @p ifname (a net_tap port with @p nb_q queue
 * pairs, MAC @p mac, MTU @p mtu, rx buffers from @p mp) and start it.
 * Control thread.  @return 0, -EINVAL (bad name), -EEXIST (an interface of
 * that name exists), -ENOMEM, net_tap's probe and setup errors.
 */
int via_exc_open(struct via_exc **out, const char *port, const char *ifname,
		 const struct rte_ether_addr *mac, uint16_t mtu, uint16_t nb_q,
		 struct rte_mempool *mp);

/** Close the TAP, which removes the interface.  NULL is a no-op. */
void via_exc_close(struct via_exc *x);

/**
 * Receive side, on the lcore of the port's rx queue @p q: the frames of
 * pkts[0..n) that are not VIA's go to the kernel (or are dropped and
 * counted); the VIA ones stay, in order, at the front.
 * @return how many stay.
 */
uint16_t via_exc_divert(struct via_exc *x, uint16_t q, struct rte_mbuf **pkts, uint16_t n);

/**
 * Transmit side, by the holder of the port's tx queue 0: at most
 * VIA_EXC_BURST frames the kernel sent, into @p pkts.  @return how many.
 */
uint16_t via_exc_from_kernel(struct via_exc *x, struct rte_mbuf **pkts);

/** The port took pkts[0..sent) of the n from via_exc_from_kernel(): count,
 *  and free (as dropped) the others. */
void via_exc_sent(struct via_exc *x, struct rte_mbuf **pkts, uint16_t n, uint16_t sent);

/** Put the port's MAC and MTU back on the interface where they changed
 *  (control thread; a log line each time). */
void via_exc_sync(struct via_exc *x);

/** Fill the ip_* counters of @p st (any thread; relaxed reads). */
void via_exc_stats(const struct via_exc *x, struct via_port_stats *st);

#endif /* VIA_GLUE_INTERNAL_H */
