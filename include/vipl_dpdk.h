/*
 * vipl_dpdk.h - VIA-DPDK provider extensions to the VIPL API.
 */
/**
 * @file vipl_dpdk.h
 * @brief Provider-specific extensions of VIA-DPDK (libvipl-dpdk + viad).
 *
 * Applications that use anything declared here are tied to VIA-DPDK; the
 * portable API is in vipl.h, which this header includes.
 *
 * - VipDpdkAllocMem / VipDpdkFreeMem: memory shared with viad, which viad
 *   moves in place (zero copy) once registered with VipRegisterMem.
 * - System management info types for VipQuerySystemManagementInfo:
 *   VIP_DPDK_SMI_COUNTERS and VIP_DPDK_SMI_PORT.
 * - VipDpdkCreateVi: a VI whose work queues carry the descriptors, and small
 *   messages' data, in their ring entries (VIP_DPDK_VI_ATTRIBUTES).
 * - VipDpdkReturnString / VipDpdkErrorCodeString: names of codes for logs.
 */
#ifndef VIPL_DPDK_H
#define VIPL_DPDK_H

#include "vipl.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Version of the VIA-DPDK provider (0xMMMMmmmm: major, minor), as reported
 *  in VIP_NIC_ATTRIBUTES::ProviderVersion. */
#define VIPL_DPDK_PROVIDER_VERSION 0x00010001UL

/** Name of the loopback NIC for VipOpenNic (M-VIA name). */
#define VIPL_DPDK_NIC_LOOPBACK "/dev/via_lo"

/* ---------------------------------------------------------------------- */
/** @name Memory shared with viad */
/**@{*/

/**
 * @brief Allocate memory shared with viad.
 *
 * Length is rounded up to the 2 MiB hugepage size (or to the page size when
 * viad had to fall back to ordinary pages because no hugepages are
 * reserved).  The memory must still be registered with
 * VipRegisterMem before Descriptors or buffers in it are used; regions
 * registered from it are moved by viad in place (zero copy) instead of
 * through cross-memory attach.  Released by VipDpdkFreeMem, or by viad when
 * the NIC is closed or the process dies.
 *
 * @param NicHandle The NIC.
 * @param Length    Number of bytes wanted (> 0).
 * @param Address   Receives the address of the memory (hugepage aligned, or
 *                  page aligned on fall-back).
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The memory was allocated.
 * @retval VIP_INVALID_PARAMETER Invalid NIC handle, NULL Address, or Length 0.
 * @retval VIP_ERROR_RESOURCE    No memory, the per-client limit was reached, or viad is gone.
 */
VIP_RETURN VipDpdkAllocMem(IN VIP_NIC_HANDLE NicHandle,
                           IN VIP_ULONG Length,
                           OUT VIP_PVOID *Address);

/**
 * @brief VipConnectWait (VIA 1.0 §9.4.1) that accepts requests from one
 *        specific remote endpoint only (VIA §4.1: "from any remote endpoint
 *        or a specific remote endpoint").
 *
 * @param NicHandle       The NIC.
 * @param LocalAddr       The local address (its discriminator) to wait on.
 * @param FromAddr        The remote endpoint to accept: its host address
 *                        (HostAddressLen 6) and/or its own discriminator
 *                        (DiscriminatorLen > 0); a part of length 0 matches
 *                        any. NULL behaves as VipConnectWait.
 * @param Timeout         Milliseconds; 0 returns at once; VIP_INFINITE.
 * @param RemoteAddr      Out: the requester's address (room for 6 +
 *                        MaxDiscriminatorLen bytes after the header).
 * @param RemoteViAttribs Out: the requester's VI attributes.
 * @param ConnHandle      Out: the request, for VipConnectAccept/Reject.
 *
 * @retval VIP_SUCCESS           A matching request was found.
 * @retval VIP_TIMEOUT           None arrived within Timeout.
 * @retval VIP_INVALID_PARAMETER A bad handle, NULL pointer, or an address
 *                               longer than the NIC allows.
 * @retval VIP_ERROR_RESOURCE    Out of memory, or viad is gone.
 */
VIP_RETURN VipDpdkConnectWaitFrom(IN VIP_NIC_HANDLE NicHandle, IN VIP_NET_ADDRESS *LocalAddr,
				  IN VIP_NET_ADDRESS *FromAddr, IN VIP_ULONG Timeout,
				  OUT VIP_NET_ADDRESS *RemoteAddr,
				  OUT VIP_VI_ATTRIBUTES *RemoteViAttribs,
				  OUT VIP_CONN_HANDLE *ConnHandle);

/**
 * @brief Bit of VIP_NET_ADDRESS::HostAddressLen in the LocalAddr of
 *        VipConnectWait: the address names the remote VI to accept
 *        requests from as well (VIA §4.3: "discrimination of connection
 *        requests from only a specific VI or from any VI").
 *
 * With this bit, HostAddressLen & ~VIP_DPDK_ADDR_FROM (0 or 6) and
 * DiscriminatorLen describe the local address as usual; right after its
 * discriminator, at HostAddress + (HostAddressLen & ~VIP_DPDK_ADDR_FROM) +
 * DiscriminatorLen, with no alignment, follows the remote VI's address in
 * the same form: its HostAddressLen and DiscriminatorLen (two VIP_UINT16 in
 * host byte order), its host address (0 or 6 bytes) and its discriminator.
 * A part of length 0 matches any, as FromAddr of VipDpdkConnectWaitFrom.
 * The application allocates room for both addresses.  VipConnectWait is
 * then VipDpdkConnectWaitFrom with that FromAddr; every other call refuses
 * the bit (VIP_INVALID_PARAMETER).
 */
#define VIP_DPDK_ADDR_FROM 0x8000u

/**
 * @brief Free memory obtained from VipDpdkAllocMem.
 *
 * Regions registered inside it must be deregistered first.
 *
 * @param NicHandle The NIC the memory was allocated on.
 * @param Address   The address VipDpdkAllocMem returned.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The memory was freed (unmapped from the process).
 * @retval VIP_INVALID_PARAMETER Invalid NIC handle, or Address was not returned by
 *                               VipDpdkAllocMem on this NIC (or was already freed).
 * @retval VIP_ERROR_RESOURCE    A registered memory region still lies in the memory, or
 *                               viad is gone.
 */
VIP_RETURN VipDpdkFreeMem(IN VIP_NIC_HANDLE NicHandle, IN VIP_PVOID Address);
/**@}*/

/* ---------------------------------------------------------------------- */
/** @name VIs with descriptors in their ring entries */
/**@{*/

/** Most bytes of data VIP_DPDK_VI_ATTRIBUTES::InlineSize may ask for. */
#define VIP_DPDK_MAX_INLINE 256

/**
 * @brief How a VI's work queues hand descriptors to viad (VipDpdkCreateVi).
 *
 * By default (VipCreateVi) a post puts the descriptor's address in a
 * 16-byte ring entry, and viad reads the descriptor, then the data, from
 * registered memory, and writes the completion into the descriptor: three
 * cache lines that viad reads one after the other, each written last by the
 * program's core.  With EntryDescriptors, each ring entry is a 64-byte
 * cache line that carries the descriptor (control segment and up to two
 * segments: a Send or receive of one or two data segments, an RDMA
 * operation of one), and, for a Send or RDMA Write of at most InlineSize
 * bytes, its data in the lines after it; viad reads them side by side, and
 * writes the completion back into the same entry.  The costs:
 *
 * - Memory: each work queue's ring takes 64 + InlineSize (rounded up to
 *   64) bytes per entry instead of 16 (MaxDescriptorsPerQueue entries;
 *   128 KiB per queue at 1024 entries with InlineSize 64), in the NIC's
 *   shared segment, which VIs of 16-byte entries use 32 KiB of each.
 * - The data of an inlined Send or RDMA Write is read at VipPostSend, as
 *   IBV_SEND_INLINE: the buffers may be reused as soon as it returns. viad
 *   still checks their memory handles (a bad one completes with
 *   VIP_STATUS_PROTECTION_ERROR), but the program reads them first, so an
 *   address it cannot read faults in the program.
 * - A descriptor's Status, Length and ImmediateData are written when the
 *   descriptor is dequeued (VipSendDone, VipRecvDone, VipSendWait,
 *   VipRecvWait), not before: a program that polls Status in the
 *   descriptor instead of calling them waits for ever.
 *
 * Descriptors with more segments take the default path, with their
 * completion in the entry too.
 */
typedef struct {
    VIP_BOOLEAN EntryDescriptors; /**< Ring entries carry the descriptors (64-byte entries). */
    VIP_ULONG   InlineSize;       /**< With EntryDescriptors: bytes of data an entry carries,
                                   *   0 to VIP_DPDK_MAX_INLINE, rounded up to 64; 0 otherwise. */
} VIP_DPDK_VI_ATTRIBUTES;

/**
 * @brief VipCreateVi (VIA 1.0 §9.3.1) with VIA-DPDK's attributes of the
 *        VI's work queues.
 *
 * @param NicHandle    The NIC.
 * @param ViAttribs    The VI's attributes, as VipCreateVi.
 * @param DpdkAttribs  How its work queues hand descriptors to viad.
 * @param SendCQHandle Completion queue of the send queue, or NULL.
 * @param RecvCQHandle Completion queue of the receive queue, or NULL.
 * @param ViHandle     Receives the VI.
 * @return The codes of VipCreateVi, and:
 * @retval VIP_INVALID_PARAMETER DpdkAttribs NULL, InlineSize above
 *                               VIP_DPDK_MAX_INLINE, or InlineSize without
 *                               EntryDescriptors.
 * @retval VIP_ERROR_RESOURCE    The NIC's shared segment has no room for the
 *                               larger rings (viad.conf limits.session_shm_bytes).
 */
VIP_RETURN VipDpdkCreateVi(IN VIP_NIC_HANDLE NicHandle, IN VIP_VI_ATTRIBUTES *ViAttribs,
                           IN const VIP_DPDK_VI_ATTRIBUTES *DpdkAttribs,
                           IN VIP_CQ_HANDLE SendCQHandle, IN VIP_CQ_HANDLE RecvCQHandle,
                           OUT VIP_VI_HANDLE *ViHandle);
/**@}*/

/* ---------------------------------------------------------------------- */
/** @name System management information (VipQuerySystemManagementInfo) */
/**@{*/

/** InfoType: daemon counters; SysManInfo points to a VIP_DPDK_COUNTERS. */
#define VIP_DPDK_SMI_COUNTERS 1
/** InfoType: the NIC's port; SysManInfo points to a VIP_DPDK_PORT_INFO. */
#define VIP_DPDK_SMI_PORT 2

/**
 * @brief Counters of viad (InfoType VIP_DPDK_SMI_COUNTERS).
 *
 * Daemon-wide values, counted since viad started, over all clients and
 * NICs, except where a field says "currently".  Copied verbatim from viad's
 * reply: flat, fixed layout of 64-bit fields (224 bytes).
 */
typedef struct {
    VIP_UINT64 Sessions;            /**< Client sessions currently open (one per VipOpenNic). */
    VIP_UINT64 SessionsClosed;      /**< Client sessions closed, normally or because the client died. */
    VIP_UINT64 VisCreated;          /**< VIs created (VipCreateVi). */
    VIP_UINT64 VisDestroyed;        /**< VIs destroyed (VipDestroyVi), reclaimed ones excluded. */
    VIP_UINT64 CqsCreated;          /**< Completion queues created (VipCreateCQ). */
    VIP_UINT64 CqsDestroyed;        /**< Completion queues destroyed (VipDestroyCQ), reclaimed ones excluded. */
    VIP_UINT64 PtagsCreated;        /**< Protection tags created (VipCreatePtag). */
    VIP_UINT64 PtagsDestroyed;      /**< Protection tags destroyed (VipDestroyPtag), reclaimed ones excluded. */
    VIP_UINT64 RegionsRegistered;   /**< Memory regions registered with viad (VipRegisterMem calls; not the entries a library writes into its session's own table of regions, which viad does not see). */
    VIP_UINT64 RegionsDeregistered; /**< Memory regions deregistered (VipDeregisterMem), reclaimed ones excluded. */
    VIP_UINT64 BytesRegistered;     /**< Bytes currently registered with viad, over all clients (the clients' tables excluded, as above). */
    VIP_UINT64 ReclaimedVis;        /**< VIs freed by viad because their client died or closed the NIC without destroying them. */
    VIP_UINT64 ReclaimedCqs;        /**< Completion queues freed likewise. */
    VIP_UINT64 ReclaimedPtags;      /**< Protection tags freed likewise. */
    VIP_UINT64 ReclaimedRegions;    /**< Registered memory regions freed likewise. */
    VIP_UINT64 ReclaimedAllocs;     /**< VipDpdkAllocMem allocations freed likewise. */
    VIP_UINT64 ClientsDisconnectedForViolation; /**< Clients viad disconnected for breaking the protocol or corrupting shared state. */
    VIP_UINT64 ControlErrors;       /**< Control requests from clients that failed or were malformed. */
    VIP_UINT64 FramesRx;            /**< VIA frames received from the network. */
    VIP_UINT64 FramesTx;            /**< VIA frames transmitted to the network. */
    VIP_UINT64 FramesDropped;       /**< VIA frames dropped (malformed, no such VI, no receive Descriptor, queue full). */
    VIP_UINT64 FramesCorrupt;       /**< Frames whose header or payload CRC32C did not match (counted in FramesDropped too). */
    VIP_UINT64 CqOverruns;          /**< Completion queue entries lost because the CQ was full (VIA 6.4.1). */
    VIP_UINT64 FramesRetransmitted; /**< Frames sent again by the reliable levels (go-back-N). */
    VIP_UINT64 RetransmitTimeouts;  /**< Retransmission timer expiries of the reliable levels. */
    VIP_UINT64 FramesTxZeroCopy;    /**< Frames whose data went straight from the client's pages (provider memory, or ordinary memory registered in place), not copied by viad. */
    VIP_UINT64 RegionsInPlace;      /**< Regions of ordinary memory registered in place: shared with viad, moved with loads and stores. */
    VIP_UINT64 RegionsCopied;       /**< Regions of ordinary memory registered on the copy path (read and written through the client's /proc/self/mem; viad logs why). */
} VIP_DPDK_COUNTERS;

/**
 * @brief The port behind a NIC (InfoType VIP_DPDK_SMI_PORT).
 *
 * Copied verbatim from viad's reply: fixed layout, 128 bytes.  Strings are
 * NUL terminated.  Packet and byte counts are those of the port (all
 * traffic, VIA and other).
 */
typedef struct {
    VIP_CHAR   Name[32];      /**< Name of the NIC (e.g. "via0"). */
    VIP_CHAR   Glue[32];      /**< The pmd_glue module driving the port: "loopback", or "ethdev" for any DPDK port. */
    VIP_UINT8  Mac[6];        /**< MAC address of the port: the NIC's host address. */
    VIP_UINT16 Mtu;           /**< MTU of the port in bytes. */
    VIP_UINT32 LinkUp;        /**< 1 if the link is up, 0 if it is down. */
    VIP_UINT32 LinkSpeedMbps; /**< Link speed in Mbit/s; 0 if unknown. */
    VIP_UINT64 RxPackets;     /**< Packets received by the port. */
    VIP_UINT64 TxPackets;     /**< Packets transmitted by the port. */
    VIP_UINT64 RxBytes;       /**< Bytes received by the port. */
    VIP_UINT64 TxBytes;       /**< Bytes transmitted by the port. */
    VIP_UINT64 RxErrors;      /**< Receive errors (erroneous or missed packets). */
    VIP_UINT64 TxErrors;      /**< Transmit errors. */
} VIP_DPDK_PORT_INFO;
/**@}*/

/* These structures cross the process boundary (viad -> client). */
VIPL_STATIC_ASSERT_(sizeof(VIP_DPDK_COUNTERS) == 28 * 8, vip_dpdk_counters_size);
VIPL_STATIC_ASSERT_(sizeof(VIP_DPDK_PORT_INFO) == 128, vip_dpdk_port_info_size);
VIPL_STATIC_ASSERT_(offsetof(VIP_DPDK_PORT_INFO, Mac) == 64, vip_dpdk_port_info_mac_offset);
VIPL_STATIC_ASSERT_(offsetof(VIP_DPDK_PORT_INFO, LinkUp) == 72, vip_dpdk_port_info_linkup_offset);
VIPL_STATIC_ASSERT_(offsetof(VIP_DPDK_PORT_INFO, RxPackets) == 80, vip_dpdk_port_info_rx_offset);

/* ---------------------------------------------------------------------- */
/** @name Names of codes, for logging */
/**@{*/

/**
 * @brief Name of a VIP_RETURN code.
 * @param Code The code.
 * @return The enumerator's name (e.g. "VIP_SUCCESS"), or "VIP_UNKNOWN" for a
 *         value that is not a VIP_RETURN code.  Static storage; never NULL.
 */
const char *VipDpdkReturnString(VIP_RETURN Code);

/**
 * @brief Name of an asynchronous error code.
 * @param Code The code.
 * @return The enumerator's name (e.g. "VIP_ERROR_CONN_LOST"), or
 *         "VIP_UNKNOWN" for a value that is not a VIP_ERROR_CODE.  Static
 *         storage; never NULL.
 */
const char *VipDpdkErrorCodeString(VIP_ERROR_CODE Code);
/**@}*/

#ifdef __cplusplus
}
#endif

#endif /* VIPL_DPDK_H */
