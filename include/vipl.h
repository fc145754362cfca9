/*
 * vipl.h - VI Provider Library (VIPL) API of VIA-DPDK.
 */
/**
 * @file vipl.h
 * @brief The VIPL API of the Virtual Interface Architecture, version 1.0,
 *        Appendix A (section 9) and the descriptor format of Appendix B
 *        (section 10), as provided by VIA-DPDK.
 *
 * This header declares every function, type, constant and structure of
 * VIA 1.0 Appendix A, together with the additions that the Intel VI
 * Architecture Developer's Guide and the legacy VIPL headers (M-VIA,
 * Giganet cLAN) made to it: the peer-to-peer connection calls
 * (VipConnectPeerRequest / VipConnectPeerDone / VipConnectPeerWait), the
 * name service (VipNS*), the two extra out parameters of VipQueryVi, the
 * return codes after VIP_INVALID_RDMAREAD, the two extra asynchronous error
 * codes, and the ReliabilityLevelSupport / RDMAReadSupport NIC attributes.
 * It is source compatible with legacy VIPL applications: they compile
 * against it unchanged.  Provider-specific extensions live in vipl_dpdk.h;
 * nothing in this header depends on them.
 *
 * @par Provider
 * The functions are implemented by libvipl-dpdk, a user-space library that
 * talks to the viad daemon.  viad owns the DPDK ports, runs the VIA wire
 * protocol and moves the data; the library keeps the descriptor queues in
 * memory shared with viad.  Handles are opaque pointers that are only
 * meaningful inside the process that obtained them.
 *
 * @par NIC names (VipOpenNic)
 * - @c "via0", @c "via1", ... : the VIA NICs configured in viad, in order.
 * - @c "/dev/via_lo" : the loopback NIC (M-VIA name); connects VIs of the
 *   same host without touching a network port.
 * - @c "/dev/via_ethN" : the Nth Ethernet port (M-VIA name), N = 0, 1, ...
 *
 * @par Network addresses (VIP_NET_ADDRESS)
 * The host address is the 6-byte Ethernet MAC address of the remote NIC
 * (VIP_NIC_ATTRIBUTES::NicAddressLen is 6 and LocalNicAddress points to the
 * local MAC).  The discriminator follows the host address in
 * VIP_NET_ADDRESS::HostAddress[]; it is an opaque byte string of
 * DiscriminatorLen bytes, at most VIP_NIC_ATTRIBUTES::MaxDiscriminatorLen
 * (at least 16).  Applications allocate
 * @code sizeof(VIP_NET_ADDRESS) + HostAddressLen + DiscriminatorLen @endcode
 * bytes for an address.
 *
 * @par Conventions that apply to every function
 * - Every function returns VIP_INVALID_PARAMETER for a NULL, destroyed or
 *   wrong-type handle, and for a NULL out pointer.
 * - Every function returns VIP_ERROR_RESOURCE when the viad daemon has gone
 *   away (the NIC is unusable from then on; close it and open it again once
 *   viad is back).
 * - Timeouts are in milliseconds; VIP_INFINITE waits for ever.
 * - A request that is not valid in the current state of the VI (spec
 *   section 5) returns VIP_INVALID_STATE.
 */
#ifndef VIPL_H
#define VIPL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @name Parameter direction markers of the spec's synopses (empty). */
/**@{*/
#ifndef IN
#define IN
#endif
#ifndef OUT
#define OUT
#endif
/**@}*/

/* ---------------------------------------------------------------------- */
/** @name Basic types */
/**@{*/
typedef char           VIP_CHAR;    /**< Character (names). */
typedef unsigned char  VIP_UCHAR;   /**< Unsigned character. */
typedef uint8_t        VIP_UINT8;   /**< Unsigned 8-bit integer. */
typedef uint16_t       VIP_UINT16;  /**< Unsigned 16-bit integer. */
typedef uint32_t       VIP_UINT32;  /**< Unsigned 32-bit integer. */
typedef uint64_t       VIP_UINT64;  /**< Unsigned 64-bit integer. */
typedef short          VIP_SHORT;   /**< Signed short (legacy headers). */
typedef unsigned short VIP_USHORT;  /**< Unsigned short. */
typedef long           VIP_LONG;    /**< Signed long (legacy headers). */
typedef unsigned long  VIP_ULONG;   /**< Unsigned long: sizes, counts, timeouts. */
typedef void          *VIP_PVOID;   /**< Untyped pointer. */
typedef int            VIP_BOOLEAN; /**< Boolean: VIP_TRUE or VIP_FALSE. */
/**@}*/

#define VIP_TRUE  1 /**< Boolean true. */
#define VIP_FALSE 0 /**< Boolean false. */

/** @name Handles (opaque, valid only in the process that obtained them) */
/**@{*/
typedef void      *VIP_NIC_HANDLE;        /**< An open VI NIC (VipOpenNic). */
typedef void      *VIP_VI_HANDLE;         /**< A VI endpoint (VipCreateVi). */
typedef void      *VIP_CQ_HANDLE;         /**< A completion queue (VipCreateCQ). */
typedef void      *VIP_PROTECTION_HANDLE; /**< A protection tag (VipCreatePtag). */
typedef void      *VIP_CONN_HANDLE;       /**< A pending connection request (VipConnectWait). */
typedef VIP_UINT32 VIP_MEM_HANDLE;        /**< A registered memory region (VipRegisterMem). */
/**@}*/

/** Quality of service attribute of a VI (provider specific; VIA-DPDK uses 0). */
typedef VIP_ULONG VIP_QOS;

/** Timeout value meaning "wait for ever". */
#define VIP_INFINITE ((VIP_ULONG)0xFFFFFFFFUL)

/* ---------------------------------------------------------------------- */
/**
 * @brief Return codes of all VIPL functions (VIA 1.0 §9.10.1, extended as
 *        in the legacy VIPL headers).  The order (and thus the values) is
 *        fixed.
 */
typedef enum {
    VIP_SUCCESS,                   /**< The function completed successfully. */
    VIP_NOT_DONE,                  /**< No Descriptors / completion entries are completed on the queue. */
    VIP_INVALID_PARAMETER,         /**< One or more input parameters were invalid. */
    VIP_ERROR_RESOURCE,            /**< Insufficient resources (or viad is gone). */
    VIP_TIMEOUT,                   /**< The request timed out before it could complete. */
    VIP_REJECT,                    /**< A connection request was rejected by the remote end. */
    VIP_INVALID_RELIABILITY_LEVEL, /**< Reliability level attribute invalid, unsupported or mismatched. */
    VIP_INVALID_MTU,               /**< Maximum transfer size attribute invalid, unsupported or mismatched. */
    VIP_INVALID_QOS,               /**< Quality of service attribute invalid, unsupported or mismatched. */
    VIP_INVALID_PTAG,              /**< Protection tag attribute invalid. */
    VIP_INVALID_RDMAREAD,          /**< RDMA Read requested but not supported by the provider. */
    VIP_DESCRIPTOR_ERROR,          /**< A Descriptor error (legacy code). */
    VIP_INVALID_STATE,             /**< The VI is in a state that does not allow the request (spec §5). */
    VIP_ERROR_NAMESERVICE,         /**< The name service could not resolve the name or address. */
    VIP_NO_MATCH                   /**< No matching connection request / listener was found. */
} VIP_RETURN;

/* ---------------------------------------------------------------------- */
/** @name Reliability levels (VIA 1.0 §9.10.5, bit values as in legacy headers) */
/**@{*/
/** Reliability level of a VI: one of the VIP_SERVICE_* bits (a mask of them
 *  in VIP_NIC_ATTRIBUTES::ReliabilityLevelSupport). */
typedef VIP_UINT16 VIP_RELIABILITY_LEVEL;
/** The spec's own spelling in §9.10.5. */
typedef VIP_RELIABILITY_LEVEL VIP_RELIABLITY_LEVEL;

#define VIP_SERVICE_UNRELIABLE         0x01 /**< Unreliable service. */
#define VIP_SERVICE_RELIABLE_DELIVERY  0x02 /**< Reliable delivery. */
#define VIP_SERVICE_RELIABLE_RECEPTION 0x04 /**< Reliable reception. */
/**@}*/

/* ---------------------------------------------------------------------- */
/** @name Descriptors (VIA 1.0 §9.10.2 and Appendix B, §10) */
/**@{*/

struct _VIP_DESCRIPTOR;

/** A 64-bit virtual address field; the pointer occupies the low bytes on a
 *  little-endian host.  Set AddressBits to 0 before storing a pointer on a
 *  32-bit host. */
typedef union {
    VIP_UINT64 AddressBits; /**< The field as a 64-bit integer. */
    VIP_PVOID  Address;     /**< The field as a pointer. */
} VIP_PVOID64;

/** Control segment: the first 32 bytes of every Descriptor (§10.2). */
typedef struct {
    VIP_PVOID64    Next;          /**< Bytes 7:0: next Descriptor on the queue (provider use). */
    VIP_MEM_HANDLE NextHandle;    /**< Bytes 11:8: memory handle of Next (provider use). */
    VIP_UINT16     SegCount;      /**< Bytes 13:12: number of segments after the control segment, address segment included. */
    VIP_UINT16     Control;       /**< Bytes 15:14: VIP_CONTROL_* bits; bits 15:4 must be 0. */
    VIP_UINT32     Reserved;      /**< Bytes 19:16: must be 0. */
    VIP_UINT32     ImmediateData; /**< Bytes 23:20: immediate data (with VIP_CONTROL_IMMEDIATE / VIP_STATUS_IMMEDIATE). */
    VIP_UINT32     Length;        /**< Bytes 27:24: total length; set by the consumer for sends, by the provider on completion. */
    VIP_UINT32     Status;        /**< Bytes 31:28: VIP_STATUS_* bits; must be 0 when posted. */
} VIP_CONTROL_SEGMENT;

/** Address segment: remote buffer of an RDMA operation (§10.3). */
typedef struct {
    VIP_PVOID64    Data;     /**< Remote buffer virtual address. */
    VIP_MEM_HANDLE Handle;   /**< Remote buffer memory handle. */
    VIP_UINT32     Reserved; /**< Must be 0. */
} VIP_ADDRESS_SEGMENT;

/** Data segment: one local buffer of the gather/scatter list (§10.4). */
typedef struct {
    VIP_PVOID64    Data;   /**< Local buffer virtual address. */
    VIP_MEM_HANDLE Handle; /**< Local buffer memory handle. */
    VIP_UINT32     Length; /**< Local buffer length in bytes (0 is valid). */
} VIP_DATA_SEGMENT;

/** A segment after the control segment: an address segment (first segment
 *  of an RDMA Descriptor) or a data segment. */
typedef union {
    VIP_ADDRESS_SEGMENT Remote; /**< Address segment. */
    VIP_DATA_SEGMENT    Local;  /**< Data segment. */
} VIP_DESCRIPTOR_SEGMENT;

/**
 * A Descriptor (legacy layout).  DS[] holds the address segment (RDMA only)
 * followed by the data segments.  For longer gather/scatter lists allocate
 * sizeof(VIP_CONTROL_SEGMENT) + n * sizeof(VIP_DESCRIPTOR_SEGMENT) bytes and
 * index DS[] beyond 2.  Descriptors must lie in registered memory, aligned
 * on VIP_DESCRIPTOR_ALIGNMENT bytes, and be little-endian (§10.1).
 */
typedef struct _VIP_DESCRIPTOR {
    VIP_CONTROL_SEGMENT    CS;    /**< Control segment. */
    VIP_DESCRIPTOR_SEGMENT DS[2]; /**< Address and/or data segments. */
} VIP_DESCRIPTOR;

/** Required alignment of a Descriptor, in bytes. */
#define VIP_DESCRIPTOR_ALIGNMENT 64
/**@}*/

/** @name Control field bits (VIP_CONTROL_SEGMENT::Control, §9.10.2, §10.2) */
/**@{*/
#define VIP_CONTROL_OP_SENDRECV  0x0000 /**< Send (send queue) or Receive (receive queue). */
#define VIP_CONTROL_OP_RDMAWRITE 0x0001 /**< RDMA Write (send queue only). */
#define VIP_CONTROL_OP_RDMAREAD  0x0002 /**< RDMA Read (send queue only, if supported). */
#define VIP_CONTROL_OP_RESERVED  0x0003 /**< Undefined operation: format error. */
#define VIP_CONTROL_OP_MASK      0x0003 /**< Mask of the operation type bits 1:0. */
#define VIP_CONTROL_IMMEDIATE    0x0004 /**< ImmediateData is valid. */
#define VIP_CONTROL_QFENCE       0x0008 /**< Queue fence: wait for earlier RDMA Reads. */
#define VIP_CONTROL_RESERVED     0xFFF0 /**< Reserved bits 15:4: must be 0. */
/**@}*/

/** @name Status field bits (VIP_CONTROL_SEGMENT::Status, §9.10.2, §10.2) */
/**@{*/
#define VIP_STATUS_DONE                 0x00000001 /**< Descriptor completed. */
#define VIP_STATUS_FORMAT_ERROR         0x00000002 /**< Local format error. */
#define VIP_STATUS_PROTECTION_ERROR     0x00000004 /**< Local protection error. */
#define VIP_STATUS_LENGTH_ERROR         0x00000008 /**< Local length error. */
#define VIP_STATUS_PARTIAL_ERROR        0x00000010 /**< Partial packet error. */
#define VIP_STATUS_DESC_FLUSHED_ERROR   0x00000020 /**< Flushed by a disconnect. */
#define VIP_STATUS_TRANSPORT_ERROR      0x00000040 /**< Transport error; the VI is in the Error state. */
#define VIP_STATUS_RDMA_PROT_ERROR      0x00000080 /**< Remote RDMA protection error. */
#define VIP_STATUS_REMOTE_DESC_ERROR    0x00000100 /**< Remote Descriptor error. */
#define VIP_STATUS_ERROR_MASK           0x000001FE /**< All error bits. */
#define VIP_STATUS_OP_SEND              0x00000000 /**< Completed op: Send. */
#define VIP_STATUS_OP_RECEIVE           0x00010000 /**< Completed op: Receive. */
#define VIP_STATUS_OP_RDMA_WRITE        0x00020000 /**< Completed op: RDMA Write. */
#define VIP_STATUS_OP_REMOTE_RDMA_WRITE 0x00030000 /**< Completed op: remote RDMA Write with immediate data consumed this receive. */
#define VIP_STATUS_OP_RDMA_READ         0x00040000 /**< Completed op: RDMA Read. */
#define VIP_STATUS_OP_MASK              0x00070000 /**< Mask of the completed operation code, bits 18:16. */
#define VIP_STATUS_IMMEDIATE            0x00080000 /**< ImmediateData is valid (receive queue). */
#define VIP_STATUS_RESERVED             0xFFF0FE00 /**< Reserved bits, always 0. */
/**@}*/

/* ---------------------------------------------------------------------- */
/** @name Asynchronous errors (VIA 1.0 §9.9.1, §9.10.3) */
/**@{*/

/** Which kind of resource an asynchronous error concerns. */
typedef enum _VIP_RESOURCE_CODE {
    VIP_RESOURCE_NIC,       /**< The NIC. */
    VIP_RESOURCE_VI,        /**< A VI. */
    VIP_RESOURCE_CQ,        /**< A completion queue. */
    VIP_RESOURCE_DESCRIPTOR /**< A Descriptor. */
} VIP_RESOURCE_CODE;

/** The specific asynchronous error. */
typedef enum _VIP_ERROR_CODE {
    VIP_ERROR_POST_DESC,      /**< Address/memory handle of a posted Descriptor was not valid. */
    VIP_ERROR_CONN_LOST,      /**< The connection was lost; the VI is in the Error state. */
    VIP_ERROR_RECVQ_EMPTY,    /**< An incoming packet was dropped: receive queue empty. */
    VIP_ERROR_VI_OVERRUN,     /**< Too many Descriptors posted to a work queue. */
    VIP_ERROR_RDMAW_PROT,     /**< Protection error at the remote end of an RDMA Write. */
    VIP_ERROR_RDMAW_DATA,     /**< Data corruption at the remote end of an RDMA Write. */
    VIP_ERROR_RDMAW_ABORT,    /**< Partial packet at the remote end of an RDMA Write. */
    VIP_ERROR_RDMAR_PROT,     /**< Protection error at the remote end of an RDMA Read. */
    VIP_ERROR_COMP_PROT,      /**< Completion could not be written (Descriptor memory deregistered). */
    VIP_ERROR_RDMA_TRANSPORT, /**< Transport error during an RDMA operation (legacy). */
    VIP_ERROR_CATASTROPHIC    /**< The NIC (or viad) failed; the NIC is unusable (legacy). */
} VIP_ERROR_CODE;

/** Error descriptor passed to the handler registered with VipErrorCallback. */
typedef struct {
    VIP_NIC_HANDLE    NicHandle;     /**< NIC reporting the error. */
    VIP_VI_HANDLE     ViHandle;      /**< VI concerned, or NULL. */
    VIP_CQ_HANDLE     CqHandle;      /**< Completion queue concerned, or NULL. */
    VIP_DESCRIPTOR   *DescriptorPtr; /**< Descriptor concerned, or NULL. */
    VIP_ULONG         OpCode;        /**< Operation in progress: a VIP_STATUS_OP_* value. */
    VIP_RESOURCE_CODE ResourceCode;  /**< Kind of resource concerned. */
    VIP_ERROR_CODE    ErrorCode;     /**< The error. */
} VIP_ERROR_DESCRIPTOR;
/**@}*/

/* ---------------------------------------------------------------------- */
/** @name Attributes, state and addresses (VIA 1.0 §9.10.4 - §9.10.8) */
/**@{*/

/** NIC attributes, returned by VipQueryNic (§9.10.4).  Static values. */
typedef struct {
    VIP_CHAR         Name[64];               /**< Symbolic name of the NIC (NUL terminated). */
    VIP_ULONG        HardwareVersion;        /**< Version of the VI hardware. */
    VIP_ULONG        ProviderVersion;        /**< Version of the VI Provider. */
    VIP_UINT16       NicAddressLen;          /**< Length of the NIC address in bytes (6: a MAC). */
    const VIP_UINT8 *LocalNicAddress;        /**< The NIC address (valid while the NIC is open). */
    VIP_BOOLEAN      ThreadSafe;             /**< VIP_TRUE if the provider is thread safe. */
    VIP_UINT16       MaxDiscriminatorLen;    /**< Maximum discriminator length in bytes (>= 16). */
    VIP_ULONG        MaxRegisterBytes;       /**< Maximum number of bytes that can be registered. */
    VIP_ULONG        MaxRegisterRegions;     /**< Maximum number of registered memory regions. */
    VIP_ULONG        MaxRegisterBlockBytes;  /**< Largest contiguous block that can be registered. */
    VIP_ULONG        MaxVI;                  /**< Maximum number of VIs. */
    VIP_ULONG        MaxDescriptorsPerQueue; /**< Maximum Descriptors per work queue. */
    VIP_ULONG        MaxSegmentsPerDesc;     /**< Maximum data segments per Descriptor. */
    VIP_ULONG        MaxCQ;                  /**< Maximum number of completion queues. */
    VIP_ULONG        MaxCQEntries;           /**< Maximum entries per completion queue. */
    VIP_ULONG        MaxTransferSize;        /**< Maximum bytes described by one Descriptor. */
    VIP_ULONG        NativeMTU;              /**< Native MTU of the underlying network. */
    VIP_ULONG        MaxPtags;               /**< Maximum number of protection tags. */
    VIP_RELIABILITY_LEVEL ReliabilityLevelSupport; /**< Mask of the supported VIP_SERVICE_* levels. */
    VIP_BOOLEAN      RDMAReadSupport;        /**< VIP_TRUE if RDMA Read is supported. */
} VIP_NIC_ATTRIBUTES;

/** VI attributes (§9.10.5). */
typedef struct {
    VIP_RELIABILITY_LEVEL ReliabilityLevel; /**< One VIP_SERVICE_* level. */
    VIP_ULONG             MaxTransferSize;  /**< Requested (in) / granted (out) maximum transfer size. */
    VIP_QOS               QoS;              /**< Requested (in) / granted (out) quality of service. */
    VIP_PROTECTION_HANDLE Ptag;             /**< Protection tag of the VI. */
    VIP_BOOLEAN           EnableRdmaWrite;  /**< Accept RDMA Writes from the remote end. */
    VIP_BOOLEAN           EnableRdmaRead;   /**< Accept RDMA Reads from the remote end. */
} VIP_VI_ATTRIBUTES;

/** Memory region attributes (§9.10.6). */
typedef struct {
    VIP_PROTECTION_HANDLE Ptag;            /**< Protection tag of the region. */
    VIP_BOOLEAN           EnableRdmaWrite; /**< Allow RDMA Writes into the region. */
    VIP_BOOLEAN           EnableRdmaRead;  /**< Allow RDMA Reads from the region. */
} VIP_MEM_ATTRIBUTES;

/** VI endpoint state (§9.10.7, §5). */
typedef enum {
    VIP_STATE_IDLE,            /**< Idle: created, or disconnected. */
    VIP_STATE_CONNECTED,       /**< Connected: data flows. */
    VIP_STATE_CONNECT_PENDING, /**< A connection request or accept is in progress. */
    VIP_STATE_ERROR            /**< Error: a transport/hardware error occurred. */
} VIP_VI_STATE;

/**
 * VI network address (§9.10.8).  HostAddress[] holds HostAddressLen bytes of
 * host address (a MAC for VIA-DPDK) followed by DiscriminatorLen bytes of
 * discriminator; allocate sizeof(VIP_NET_ADDRESS) + HostAddressLen +
 * DiscriminatorLen bytes.
 */
typedef struct _VIP_NET_ADDRESS {
    VIP_UINT16 HostAddressLen;   /**< Length of the host address in bytes. */
    VIP_UINT16 DiscriminatorLen; /**< Length of the discriminator in bytes. */
    VIP_UINT8  HostAddress[1];   /**< Host address, then discriminator. */
} VIP_NET_ADDRESS;
/**@}*/

/** @name Callback types (legacy convenience names) */
/**@{*/
/** Handler of VipSendNotify / VipRecvNotify. */
typedef void (*VIP_VI_CALLBACK)(VIP_PVOID Context, VIP_NIC_HANDLE NicHandle,
                                VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *Descriptor);
/** Handler of VipCQNotify. */
typedef void (*VIP_CQ_CALLBACK)(VIP_PVOID Context, VIP_NIC_HANDLE NicHandle,
                                VIP_VI_HANDLE ViHandle, VIP_BOOLEAN RecvQueue);
/** Handler of VipErrorCallback. */
typedef void (*VIP_ERROR_HANDLER)(VIP_PVOID Context, VIP_ERROR_DESCRIPTOR *ErrorDesc);
/**@}*/

/* ---------------------------------------------------------------------- */
/* Layout checks: descriptors are shared with viad and are little-endian
 * fixed-layout structures (§10). */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define VIPL_STATIC_ASSERT_(cond, name) static_assert(cond, #name)
#elif !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define VIPL_STATIC_ASSERT_(cond, name) _Static_assert(cond, #name)
#else
#define VIPL_STATIC_ASSERT_(cond, name) \
    typedef char vipl_static_assert_##name[(cond) ? 1 : -1]
#endif

VIPL_STATIC_ASSERT_(sizeof(VIP_PVOID64) == 8, vip_pvoid64_size);
VIPL_STATIC_ASSERT_(sizeof(VIP_CONTROL_SEGMENT) == 32, vip_control_segment_size);
VIPL_STATIC_ASSERT_(sizeof(VIP_ADDRESS_SEGMENT) == 16, vip_address_segment_size);
VIPL_STATIC_ASSERT_(sizeof(VIP_DATA_SEGMENT) == 16, vip_data_segment_size);
VIPL_STATIC_ASSERT_(sizeof(VIP_DESCRIPTOR_SEGMENT) == 16, vip_descriptor_segment_size);
VIPL_STATIC_ASSERT_(sizeof(VIP_DESCRIPTOR) == 64, vip_descriptor_size);
VIPL_STATIC_ASSERT_(offsetof(VIP_CONTROL_SEGMENT, NextHandle) == 8, vip_cs_nexthandle_offset);
VIPL_STATIC_ASSERT_(offsetof(VIP_CONTROL_SEGMENT, SegCount) == 12, vip_cs_segcount_offset);
VIPL_STATIC_ASSERT_(offsetof(VIP_CONTROL_SEGMENT, Control) == 14, vip_cs_control_offset);
VIPL_STATIC_ASSERT_(offsetof(VIP_CONTROL_SEGMENT, ImmediateData) == 20, vip_cs_immediate_offset);
VIPL_STATIC_ASSERT_(offsetof(VIP_CONTROL_SEGMENT, Length) == 24, vip_cs_length_offset);
VIPL_STATIC_ASSERT_(offsetof(VIP_CONTROL_SEGMENT, Status) == 28, vip_cs_status_offset);
VIPL_STATIC_ASSERT_(offsetof(VIP_DATA_SEGMENT, Handle) == 8, vip_ds_handle_offset);
VIPL_STATIC_ASSERT_(offsetof(VIP_DATA_SEGMENT, Length) == 12, vip_ds_length_offset);
VIPL_STATIC_ASSERT_(offsetof(VIP_NET_ADDRESS, HostAddress) == 4, vip_net_address_offset);

/* ====================================================================== */
/*                              Functions                                  */
/* ====================================================================== */

/* ----------------------- 9.2 Hardware connection ---------------------- */

/**
 * @brief Associate the process with a VI NIC and return a NIC handle
 *        (VIA 1.0 §9.2.1).
 *
 * Connects to viad and opens the named NIC.  Names: "via0", "via1", ...,
 * "/dev/via_lo" (loopback) and "/dev/via_ethN" (see the file comment).
 *
 * @param DeviceName Symbolic name of the NIC.
 * @param NicHandle  Receives the NIC handle.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The NIC was opened.
 * @retval VIP_ERROR_RESOURCE    Insufficient resources, or viad is not running.
 * @retval VIP_INVALID_PARAMETER DeviceName is NULL or names no NIC, or NicHandle is NULL.
 */
VIP_RETURN VipOpenNic(IN const VIP_CHAR *DeviceName, OUT VIP_NIC_HANDLE *NicHandle);

/**
 * @brief Remove the association between the process and a NIC
 *        (VIA 1.0 §9.2.2).
 *
 * Resources of the process still open on the NIC (VIs, CQs, protection
 * tags, registered regions, provider memory) are released by viad.
 *
 * @param NicHandle The NIC handle.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The NIC was closed.
 * @retval VIP_INVALID_PARAMETER Invalid NIC handle.
 * @retval VIP_ERROR_RESOURCE    viad is gone (the handle is released anyway).
 */
VIP_RETURN VipCloseNic(IN VIP_NIC_HANDLE NicHandle);

/* ------------------ 9.3 Endpoint creation and destruction ------------- */

/**
 * @brief Create a VI on a NIC (VIA 1.0 §9.3.1).  The new VI is Idle.
 *
 * A work queue associated with a completion queue cannot be waited on with
 * VipSendWait / VipRecvWait.
 *
 * @param NicHandle    The NIC.
 * @param ViAttribs    Initial attributes of the VI.
 * @param SendCQHandle CQ for the send queue, or NULL for none.
 * @param RecvCQHandle CQ for the receive queue, or NULL for none.
 * @param ViHandle     Receives the VI handle.
 * @return One of the following codes.
 * @retval VIP_SUCCESS                   The VI was created.
 * @retval VIP_ERROR_RESOURCE            Insufficient resources (MaxVI reached, no memory, viad gone).
 * @retval VIP_INVALID_PARAMETER         Invalid handle (NIC or a non-NULL CQ, possibly of another NIC), NULL ViAttribs or ViHandle.
 * @retval VIP_INVALID_RELIABILITY_LEVEL Reliability level invalid or not supported.
 * @retval VIP_INVALID_MTU               MaxTransferSize invalid or not supported.
 * @retval VIP_INVALID_QOS               QoS invalid or not supported.
 * @retval VIP_INVALID_PTAG              Ptag invalid (not a tag of this NIC and process).
 * @retval VIP_INVALID_RDMAREAD          EnableRdmaRead requested but RDMA Read is not supported:
 *                                       by the NIC, or on an Unreliable VI (§2.5.1, Table 1).
 */
VIP_RETURN VipCreateVi(IN VIP_NIC_HANDLE NicHandle,
                       IN VIP_VI_ATTRIBUTES *ViAttribs,
                       IN VIP_CQ_HANDLE SendCQHandle,
                       IN VIP_CQ_HANDLE RecvCQHandle,
                       OUT VIP_VI_HANDLE *ViHandle);

/**
 * @brief Destroy a VI (VIA 1.0 §9.3.2).  Only an Idle VI with empty work
 *        queues can be destroyed; the handle is invalid afterwards.
 *
 * @param ViHandle The VI to destroy.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The VI was destroyed.
 * @retval VIP_INVALID_PARAMETER Invalid VI handle.
 * @retval VIP_ERROR_RESOURCE    The VI is not Idle, descriptors are still on its work
 *                               queues (both as VIA §9.3.2 says), or viad is gone.
 */
VIP_RETURN VipDestroyVi(IN VIP_VI_HANDLE ViHandle);

/* ----------------------- 9.4 Connection management -------------------- */

/**
 * @brief Wait for an incoming connection request that matches a local
 *        address (VIA 1.0 §9.4.1).
 *
 * A request matches when it is addressed to this NIC and its discriminator
 * equals the discriminator of LocalAddr.  The request stays pending until
 * VipConnectAccept or VipConnectReject is called on ConnHandle.
 *
 * A request that arrived shortly before the call is found too: viad keeps a
 * request nobody waits for during a grace (viad.cm_nomatch_grace_ms, 500 ms
 * by default), after which the requester's VipConnectRequest fails with
 * VIP_NO_MATCH (VIA §4.1).
 *
 * @par Requests from one remote VI only (VIA §4.1, §4.3)
 * With VIP_DPDK_ADDR_FROM (vipl_dpdk.h) set in LocalAddr->HostAddressLen, the
 * local address is followed, right after its discriminator, by the address
 * of the remote VI whose requests are wanted: its HostAddressLen and
 * DiscriminatorLen (two VIP_UINT16, unaligned), its host address (0 or 6
 * bytes) and its discriminator (the one it gives as its own LocalAddr in
 * VipConnectRequest).  A part of length 0 matches any.  Other requests are
 * not returned, and viad answers them that nobody waits.
 * @code
 * // wait on "server" for the VI "client-7" of the host mac only
 * uint8_t buf[sizeof(VIP_NET_ADDRESS) + 6 + 6 + 4 + 6 + 8];
 * VIP_NET_ADDRESS *a = (VIP_NET_ADDRESS *)buf;
 * VIP_UINT16 from[2] = { 6, 8 };
 * a->HostAddressLen = VIP_DPDK_ADDR_FROM | 6;
 * a->DiscriminatorLen = 6;
 * memcpy(a->HostAddress, my_mac, 6);
 * memcpy(a->HostAddress + 6, "server", 6);
 * memcpy(a->HostAddress + 12, from, sizeof(from));
 * memcpy(a->HostAddress + 16, mac, 6);
 * memcpy(a->HostAddress + 22, "client-7", 8);
 * @endcode
 *
 * @param NicHandle       The NIC.
 * @param LocalAddr       Local address (host address and discriminator) to wait on,
 *                        and with VIP_DPDK_ADDR_FROM the remote VI to wait for.
 * @param Timeout         Milliseconds to wait; 0 returns immediately; VIP_INFINITE waits for ever.
 * @param RemoteAddr      Receives the requester's address; must have room for the
 *                        NIC's address and MaxDiscriminatorLen bytes.
 * @param RemoteViAttribs Receives the attributes of the requesting VI.
 * @param ConnHandle      Receives the connection handle.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           A connection request was found.
 * @retval VIP_TIMEOUT           No matching request arrived within Timeout.
 * @retval VIP_ERROR_RESOURCE    Resource limit, or viad is gone.
 * @retval VIP_INVALID_PARAMETER Invalid handle or address (e.g. discriminator longer than
 *                               MaxDiscriminatorLen), or a NULL out pointer.
 */
VIP_RETURN VipConnectWait(IN VIP_NIC_HANDLE NicHandle,
                          IN VIP_NET_ADDRESS *LocalAddr,
                          IN VIP_ULONG Timeout,
                          OUT VIP_NET_ADDRESS *RemoteAddr,
                          OUT VIP_VI_ATTRIBUTES *RemoteViAttribs,
                          OUT VIP_CONN_HANDLE *ConnHandle);

/**
 * @brief Accept a connection request and bind it to a local Idle VI
 *        (VIA 1.0 §9.4.2).
 *
 * On an attribute conflict the call fails, nothing is sent to the remote
 * end and ConnHandle stays valid: the caller may change the VI's attributes
 * and try again, or reject the request; so it does when the VI is not Idle.
 * Otherwise ConnHandle is consumed.  The maximum transfer sizes are no
 * conflict: the connection is granted the smaller of the two (VIA §4.1,
 * §9.10.5), which VipQueryVi reports at both ends while they are connected.
 *
 * The call returns once the requester has confirmed the connection (a
 * three-way handshake, docs/wire-format.md section 7): the VI is Connected
 * only if the requester's VipConnectRequest succeeds too.  A requester that
 * gave up makes it fail with VIP_TIMEOUT, and so does one that does not
 * confirm within viad.cm_unreachable_ms (3 s by default); the VI is Idle
 * again.  VIP_TIMEOUT is not in §9.4.2's list, which has no code for a
 * request its requester abandoned; it is §9.4.4's for the same event.
 *
 * @param ConnHandle Connection handle from VipConnectWait.
 * @param ViHandle   Local Idle VI.
 * @return One of the following codes.
 * @retval VIP_SUCCESS                   The connection is established; the VI is Connected.
 * @retval VIP_INVALID_PARAMETER         Invalid connection or VI handle (e.g. VI of another NIC).
 * @retval VIP_INVALID_RELIABILITY_LEVEL Reliability level conflicts with the remote VI.
 * @retval VIP_INVALID_MTU               The remote VI asks for a MaxTransferSize of 0.
 * @retval VIP_INVALID_QOS               QoS invalid or conflicts with the remote VI.
 * @retval VIP_INVALID_STATE             The VI is not Idle.
 * @retval VIP_TIMEOUT                   The requester gave up (timed out, or disconnected)
 *                                       before it had the accept, or did not confirm it
 *                                       within viad.cm_unreachable_ms; the VI is Idle.
 * @retval VIP_ERROR_RESOURCE            Resource limit, VipDisconnect of the VI by another
 *                                       thread during the call, or viad is gone.
 */
VIP_RETURN VipConnectAccept(IN VIP_CONN_HANDLE ConnHandle, IN VIP_VI_HANDLE ViHandle);

/**
 * @brief Reject a connection request; the requester's VipConnectRequest
 *        returns VIP_REJECT (VIA 1.0 §9.4.3).  ConnHandle is consumed.
 *
 * @param ConnHandle Connection handle from VipConnectWait.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The request was rejected.
 * @retval VIP_INVALID_PARAMETER Invalid ConnHandle.
 * @retval VIP_ERROR_RESOURCE    viad is gone.
 */
VIP_RETURN VipConnectReject(IN VIP_CONN_HANDLE ConnHandle);

/**
 * @brief Request a connection between a local Idle VI and a remote address
 *        (VIA 1.0 §9.4.4).  The VI is Connect Pending during the call.
 *
 * On success LocalAddr is bound to the VI and the remote VI's attributes
 * are returned, with the MaxTransferSize granted to the connection: the
 * smaller of the two VIs' (VIA §9.10.5).
 *
 * @param ViHandle        Local VI (must be Idle).
 * @param LocalAddr       Local address (host address and discriminator).
 * @param RemoteAddr      Remote address (host address and discriminator).
 * @param Timeout         Milliseconds to wait; VIP_INFINITE waits for ever; 0 is
 *                        invalid and yields an immediate VIP_TIMEOUT.
 * @param RemoteViAttribs Receives the remote VI's attributes.
 * @return One of the following codes.
 * @retval VIP_SUCCESS                   The VI is Connected.
 * @retval VIP_TIMEOUT                   No answer within Timeout (or Timeout was 0); or no
 *                                       viad answered at the remote MAC for
 *                                       viad.cm_unreachable_ms (3 s by default), whatever the
 *                                       Timeout, VIP_INFINITE included (§4.1: an unreachable
 *                                       remote VI is an error; §9.4.4 has no other code for
 *                                       it); the VI is Idle.
 * @retval VIP_ERROR_RESOURCE            Resource limit, VipDisconnect of the VI by another
 *                                       thread during the call, or viad is gone.
 * @retval VIP_INVALID_PARAMETER         Invalid handle or address, or NULL out pointer.
 * @retval VIP_REJECT                    The remote end rejected the request (the spec
 *                                       calls it VIP_REJECTED); the VI is Idle.
 * @retval VIP_NO_MATCH                  The remote NIC answered that no VipConnectWait
 *                                       matches the discriminator, for its grace
 *                                       (viad.cm_nomatch_grace_ms, 500 ms by default) or up to
 *                                       a shorter Timeout: whatever the Timeout, VIP_INFINITE
 *                                       included (legacy code; §4.1 requires an error here;
 *                                       legacy callers retry); the VI is Idle.
 * @retval VIP_INVALID_STATE             The VI is not Idle.
 */
VIP_RETURN VipConnectRequest(IN VIP_VI_HANDLE ViHandle,
                             IN VIP_NET_ADDRESS *LocalAddr,
                             IN VIP_NET_ADDRESS *RemoteAddr,
                             IN VIP_ULONG Timeout,
                             OUT VIP_VI_ATTRIBUTES *RemoteViAttribs);

/**
 * @brief Terminate the connection of a VI (VIA 1.0 §9.4.5, §4.2).
 *
 * Processing stops, every posted Descriptor is completed with
 * VIP_STATUS_DESC_FLUSHED_ERROR and the VI returns to the Idle state.  Valid
 * in the Connected, Connect Pending and Error states, and on an Idle VI
 * (where it flushes the Descriptors posted to the receive queue, §5.1).
 *
 * @param ViHandle The VI.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The VI is Idle.
 * @retval VIP_INVALID_PARAMETER Invalid ViHandle.
 * @retval VIP_ERROR_RESOURCE    viad is gone.
 */
VIP_RETURN VipDisconnect(IN VIP_VI_HANDLE ViHandle);

/**
 * @brief Start a peer-to-peer connection (Intel VI Developer's Guide;
 *        not in VIA 1.0 Appendix A, symmetric variant of §4.1).
 *
 * Both ends call VipConnectPeerRequest with each other's address; viad
 * pairs the two requests.  The call returns at once; completion is
 * obtained with VipConnectPeerDone or VipConnectPeerWait.  The VI is
 * Connect Pending until then.
 *
 * @param ViHandle   Local VI (must be Idle).
 * @param LocalAddr  Local address (host address and discriminator).
 * @param RemoteAddr Remote address (host address and discriminator).
 * @param Timeout    Milliseconds for the whole connection; VIP_INFINITE for ever, as
 *                   long as the peer's viad answers (viad.cm_unreachable_ms); a
 *                   connection whose handshake began before it expires may take up
 *                   to that much longer to finish.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The request was started.
 * @retval VIP_INVALID_PARAMETER Invalid handle or address.
 * @retval VIP_INVALID_STATE     The VI is not Idle.
 * @retval VIP_ERROR_RESOURCE    Resource limit, or viad is gone.
 */
VIP_RETURN VipConnectPeerRequest(IN VIP_VI_HANDLE ViHandle,
                                 IN VIP_NET_ADDRESS *LocalAddr,
                                 IN VIP_NET_ADDRESS *RemoteAddr,
                                 IN VIP_ULONG Timeout);

/**
 * @brief Poll a peer connection started by VipConnectPeerRequest
 *        (Intel VI Developer's Guide).
 *
 * @param ViHandle         The VI.
 * @param RemoteAttributes Receives the remote VI's attributes on success, with the
 *                         MaxTransferSize granted to the connection (VIA §9.10.5).
 * @return One of the following codes.
 * @retval VIP_SUCCESS                   The VI is Connected.
 * @retval VIP_NOT_DONE                  The connection is still pending.
 * @retval VIP_TIMEOUT                   The request's Timeout expired, or no viad answered
 *                                       at the peer's MAC for viad.cm_unreachable_ms; the
 *                                       VI is Idle.
 * @retval VIP_REJECT                    The peer refused the connection; the VI is Idle.
 * @retval VIP_INVALID_RELIABILITY_LEVEL Reliability levels of the two VIs conflict; the VI is Idle.
 * @retval VIP_INVALID_MTU               A VI asks for a MaxTransferSize of 0 (other sizes are no
 *                                       conflict: the smaller is granted); the VI is Idle.
 * @retval VIP_INVALID_QOS               QoS conflict; the VI is Idle.
 * @retval VIP_INVALID_PARAMETER         Invalid handle or NULL RemoteAttributes.
 * @retval VIP_INVALID_STATE             No peer connection request is outstanding on the VI.
 * @retval VIP_ERROR_RESOURCE            viad is gone.
 */
VIP_RETURN VipConnectPeerDone(IN VIP_VI_HANDLE ViHandle,
                              OUT VIP_VI_ATTRIBUTES *RemoteAttributes);

/**
 * @brief Block until a peer connection started by VipConnectPeerRequest
 *        completes (Intel VI Developer's Guide).  The wait is bounded by
 *        the Timeout given to VipConnectPeerRequest.
 *
 * @param ViHandle         The VI.
 * @param RemoteAttributes Receives the remote VI's attributes on success, with the
 *                         MaxTransferSize granted to the connection (VIA §9.10.5).
 * @return One of the following codes.
 * @retval VIP_SUCCESS                   The VI is Connected.
 * @retval VIP_TIMEOUT                   The request's Timeout expired, or no viad answered
 *                                       at the peer's MAC for viad.cm_unreachable_ms; the
 *                                       VI is Idle.
 * @retval VIP_REJECT                    The peer refused the connection; the VI is Idle.
 * @retval VIP_INVALID_RELIABILITY_LEVEL Reliability levels of the two VIs conflict; the VI is Idle.
 * @retval VIP_INVALID_MTU               A VI asks for a MaxTransferSize of 0 (other sizes are no
 *                                       conflict: the smaller is granted); the VI is Idle.
 * @retval VIP_INVALID_QOS               QoS conflict; the VI is Idle.
 * @retval VIP_INVALID_PARAMETER         Invalid handle or NULL RemoteAttributes.
 * @retval VIP_INVALID_STATE             No peer connection request is outstanding on the VI.
 * @retval VIP_ERROR_RESOURCE            viad is gone.
 */
VIP_RETURN VipConnectPeerWait(IN VIP_VI_HANDLE ViHandle,
                              OUT VIP_VI_ATTRIBUTES *RemoteAttributes);

/* ---------------- 9.5 Memory protection and registration -------------- */

/**
 * @brief Create a protection tag (VIA 1.0 §9.5.1).
 *
 * @param NicHandle     The NIC.
 * @param ProtectionTag Receives the new tag.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The tag was created.
 * @retval VIP_ERROR_RESOURCE    MaxPtags reached, or viad is gone.
 * @retval VIP_INVALID_PARAMETER Invalid NIC handle or NULL ProtectionTag.
 */
VIP_RETURN VipCreatePtag(IN VIP_NIC_HANDLE NicHandle,
                         OUT VIP_PROTECTION_HANDLE *ProtectionTag);

/**
 * @brief Destroy a protection tag (VIA 1.0 §9.5.2).
 *
 * @param NicHandle     The NIC the tag was created on.
 * @param ProtectionTag The tag.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The tag was destroyed.
 * @retval VIP_ERROR_RESOURCE    A VI or registered region still uses the tag, or viad is gone.
 * @retval VIP_INVALID_PARAMETER Invalid NIC handle or tag.
 */
VIP_RETURN VipDestroyPtag(IN VIP_NIC_HANDLE NicHandle,
                          IN VIP_PROTECTION_HANDLE ProtectionTag);

/**
 * @brief Register a memory region with a NIC (VIA 1.0 §9.5.3).
 *
 * Any length and alignment is accepted; registration covers whole pages.
 * Descriptors and data buffers must lie in registered memory.  Memory from
 * VipDpdkAllocMem (vipl_dpdk.h) is moved by viad in place; other memory is
 * copied by viad with cross-memory attach.
 *
 * @param NicHandle      The NIC.
 * @param VirtualAddress Start of the region.
 * @param Length         Length in bytes; 0 is invalid.
 * @param MemAttribs     Attributes of the region (Ptag, RDMA enables).
 * @param MemoryHandle   Receives the memory handle (set to 0 on failure).
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The region was registered.
 * @retval VIP_ERROR_RESOURCE    A registration limit (MaxRegisterBytes, MaxRegisterRegions,
 *                               MaxRegisterBlockBytes) was reached, or viad is gone.
 * @retval VIP_INVALID_PARAMETER Invalid NIC handle, NULL VirtualAddress, Length 0, NULL
 *                               MemAttribs or MemoryHandle, or memory not mapped in the process.
 * @retval VIP_INVALID_PTAG      The protection tag is invalid.
 * @retval VIP_INVALID_RDMAREAD  EnableRdmaRead requested but RDMA Read is not supported.
 */
VIP_RETURN VipRegisterMem(IN VIP_NIC_HANDLE NicHandle,
                          IN VIP_PVOID VirtualAddress,
                          IN VIP_ULONG Length,
                          IN VIP_MEM_ATTRIBUTES *MemAttribs,
                          OUT VIP_MEM_HANDLE *MemoryHandle);

/**
 * @brief Deregister a memory region (VIA 1.0 §9.5.4).  The memory's
 *        contents are not altered.
 *
 * @param NicHandle      The NIC that owns the region.
 * @param VirtualAddress The address given to VipRegisterMem.
 * @param MemoryHandle   The handle returned by VipRegisterMem.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The region was deregistered.
 * @retval VIP_INVALID_PARAMETER Invalid NIC handle, or no region with this address and handle.
 * @retval VIP_ERROR_RESOURCE    viad is gone.
 */
VIP_RETURN VipDeregisterMem(IN VIP_NIC_HANDLE NicHandle,
                            IN VIP_PVOID VirtualAddress,
                            IN VIP_MEM_HANDLE MemoryHandle);

/* ---------------- 9.6 Data transfer and completion --------------------- */

/**
 * @brief Post a Descriptor on the tail of a VI's send queue
 *        (VIA 1.0 §9.6.1).  Returns at once.
 *
 * Format, protection and length errors are reported in the Descriptor's
 * Status when it completes; an invalid Descriptor address / memory handle
 * is reported asynchronously (VIP_ERROR_POST_DESC), and too many posted
 * Descriptors as VIP_ERROR_VI_OVERRUN (§9.9.1).  Descriptors posted while
 * the VI is not Connected complete in error (§5).
 *
 * @param ViHandle      The VI.
 * @param DescriptorPtr The Descriptor (in registered memory, 64-byte aligned).
 * @param MemoryHandle  Memory handle of the region holding the Descriptor.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The Descriptor was posted.
 * @retval VIP_INVALID_PARAMETER Invalid VI handle or NULL DescriptorPtr.
 * @retval VIP_ERROR_RESOURCE    viad is gone.
 */
VIP_RETURN VipPostSend(IN VIP_VI_HANDLE ViHandle,
                       IN VIP_DESCRIPTOR *DescriptorPtr,
                       IN VIP_MEM_HANDLE MemoryHandle);

/**
 * @brief Dequeue the head of the send queue if it is complete
 *        (VIA 1.0 §9.6.2).  Also used after VipCQDone / VipCQWait.
 *
 * @param ViHandle      The VI.
 * @param DescriptorPtr Receives the completed Descriptor; undefined unless VIP_SUCCESS.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           A completed Descriptor was dequeued.
 * @retval VIP_NOT_DONE          The queue is empty or its head is not complete.
 * @retval VIP_INVALID_PARAMETER Invalid VI handle or NULL DescriptorPtr.
 * @retval VIP_ERROR_RESOURCE    viad is gone.
 */
VIP_RETURN VipSendDone(IN VIP_VI_HANDLE ViHandle, OUT VIP_DESCRIPTOR **DescriptorPtr);

/**
 * @brief Wait for the head of the send queue to complete and dequeue it
 *        (VIA 1.0 §9.6.3).
 *
 * @param ViHandle      The VI.
 * @param Timeout       Milliseconds to wait; VIP_INFINITE waits for ever.
 * @param DescriptorPtr Receives the completed Descriptor.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           A completed Descriptor was dequeued.
 * @retval VIP_INVALID_PARAMETER Invalid VI handle or NULL DescriptorPtr.
 * @retval VIP_TIMEOUT           No Descriptor completed within Timeout.
 * @retval VIP_ERROR_RESOURCE    The send queue is associated with a CQ (§9.6.3; §9.6.8 names
 *                               VIP_INVALID_PARAMETER for this case), or viad is gone.
 */
VIP_RETURN VipSendWait(IN VIP_VI_HANDLE ViHandle,
                       IN VIP_ULONG Timeout,
                       OUT VIP_DESCRIPTOR **DescriptorPtr);

/**
 * @brief Post a Descriptor on the tail of a VI's receive queue
 *        (VIA 1.0 §9.6.4).  Returns at once.  Receives may be posted in
 *        every state; they are processed once the VI is Connected (§5).
 *
 * @param ViHandle      The VI.
 * @param DescriptorPtr The Descriptor (in registered memory, 64-byte aligned).
 * @param MemoryHandle  Memory handle of the region holding the Descriptor.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The Descriptor was posted.
 * @retval VIP_INVALID_PARAMETER Invalid VI handle or NULL DescriptorPtr.
 * @retval VIP_ERROR_RESOURCE    viad is gone.
 */
VIP_RETURN VipPostRecv(IN VIP_VI_HANDLE ViHandle,
                       IN VIP_DESCRIPTOR *DescriptorPtr,
                       IN VIP_MEM_HANDLE MemoryHandle);

/**
 * @brief Dequeue the head of the receive queue if it is complete
 *        (VIA 1.0 §9.6.5).  Also used after VipCQDone / VipCQWait.
 *
 * @param ViHandle      The VI.
 * @param DescriptorPtr Receives the completed Descriptor; undefined unless VIP_SUCCESS.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           A completed Descriptor was dequeued.
 * @retval VIP_NOT_DONE          The queue is empty or its head is not complete.
 * @retval VIP_INVALID_PARAMETER Invalid VI handle or NULL DescriptorPtr.
 * @retval VIP_ERROR_RESOURCE    viad is gone.
 */
VIP_RETURN VipRecvDone(IN VIP_VI_HANDLE ViHandle, OUT VIP_DESCRIPTOR **DescriptorPtr);

/**
 * @brief Wait for the head of the receive queue to complete and dequeue it
 *        (VIA 1.0 §9.6.6).
 *
 * @param ViHandle      The VI.
 * @param Timeout       Milliseconds to wait; VIP_INFINITE waits for ever.
 * @param DescriptorPtr Receives the completed Descriptor.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           A completed Descriptor was dequeued.
 * @retval VIP_INVALID_PARAMETER Invalid VI handle or NULL DescriptorPtr.
 * @retval VIP_TIMEOUT           No Descriptor completed within Timeout.
 * @retval VIP_ERROR_RESOURCE    The receive queue is associated with a CQ (§9.6.6; §9.6.8
 *                               names VIP_INVALID_PARAMETER for this case), or viad is gone.
 */
VIP_RETURN VipRecvWait(IN VIP_VI_HANDLE ViHandle,
                       IN VIP_ULONG Timeout,
                       OUT VIP_DESCRIPTOR **DescriptorPtr);

/**
 * @brief Poll a completion queue (VIA 1.0 §9.6.7).
 *
 * Dequeues only the completion entry; the Descriptor itself is dequeued
 * with VipSendDone / VipRecvDone, which may find nothing if another thread
 * polls the work queue directly.
 *
 * @param CQHandle  The completion queue.
 * @param ViHandle  Receives the VI of the completion; undefined unless VIP_SUCCESS.
 * @param RecvQueue Receives VIP_TRUE for the receive queue, VIP_FALSE for the send queue.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           A completion entry was dequeued.
 * @retval VIP_NOT_DONE          The completion queue is empty.
 * @retval VIP_INVALID_PARAMETER Invalid CQ handle or NULL out pointer.
 * @retval VIP_ERROR_RESOURCE    viad is gone.
 */
VIP_RETURN VipCQDone(IN VIP_CQ_HANDLE CQHandle,
                     OUT VIP_VI_HANDLE *ViHandle,
                     OUT VIP_BOOLEAN *RecvQueue);

/**
 * @brief Wait for a completion entry on a completion queue and dequeue it
 *        (VIA 1.0 §9.6.8).  See VipCQDone.
 *
 * @param CQHandle  The completion queue.
 * @param Timeout   Milliseconds to wait; VIP_INFINITE waits for ever.
 * @param ViHandle  Receives the VI of the completion.
 * @param RecvQueue Receives VIP_TRUE for the receive queue, VIP_FALSE for the send queue.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           A completion entry was dequeued.
 * @retval VIP_INVALID_PARAMETER Invalid CQ handle or NULL out pointer.
 * @retval VIP_TIMEOUT           No completion entry within Timeout.
 * @retval VIP_ERROR_RESOURCE    viad is gone.
 */
VIP_RETURN VipCQWait(IN VIP_CQ_HANDLE CQHandle,
                     IN VIP_ULONG Timeout,
                     OUT VIP_VI_HANDLE *ViHandle,
                     OUT VIP_BOOLEAN *RecvQueue);

/**
 * @brief Have a handler called for the next completed send Descriptor
 *        (VIA 1.0 §9.6.9).
 *
 * If the Descriptor at the head of the send queue is complete, it is
 * dequeued (as by VipSendDone) and Handler is called with it before
 * VipSendNotify returns, in the calling thread.  Otherwise Handler is called
 * once, on the NIC's notify thread (a thread of the library, started by the
 * first notification that has to wait), with the next Descriptor dequeued
 * there after it completes.  The notify thread sleeps until viad reports a
 * completion on a queue with a pending notification (no polling: it wakes
 * once a second at most otherwise).
 *
 * - One call arms one invocation (§9.6.9: "In order for the Handler to be
 *   invoked multiple times, the function must be called multiple times").
 *   A call while earlier ones are pending on the same queue is not an error:
 *   the registrations wait in order and each takes the next completed
 *   Descriptor; a complete head is then handed on by the notify thread,
 *   in order, rather than in the calling thread.
 * - A call from within a handler (to arm the next one, say) never runs the
 *   new handler in the calling thread: it runs next on the notify thread,
 *   so a queue of completed Descriptors does not recurse.
 * - A Descriptor that another thread dequeues first (VipSendDone,
 *   VipSendWait) is not handed to the handler, which waits for the next.
 * - The notify thread runs one handler at a time; a handler that blocks
 *   holds up the other notifications of the NIC (not its error handler,
 *   which runs on a thread of its own).  A handler may call any VIPL
 *   function but VipCloseNic of its NIC.
 * - VipDestroyVi cancels the pending invocations of the VI: they never
 *   run.  If a handler of the VI is running on the notify thread,
 *   VipDestroyVi returns only once it has returned (a handler may destroy
 *   its own VI).  VipCloseNic cancels every pending invocation of the NIC.
 *
 * @param ViHandle The VI.
 * @param Context  Passed to Handler unchanged.
 * @param Handler  Function to call with the NIC, the VI and the completed
 *                 (dequeued) Descriptor.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The handler was called or armed.
 * @retval VIP_INVALID_PARAMETER Invalid VI handle or NULL Handler.
 * @retval VIP_ERROR_RESOURCE    The send queue is associated with a CQ (use VipCQNotify), no
 *                               memory or thread for the notification, or viad is gone.
 */
VIP_RETURN VipSendNotify(IN VIP_VI_HANDLE ViHandle,
                         IN VIP_PVOID Context,
                         IN void (*Handler)(VIP_PVOID Context,
                                            VIP_NIC_HANDLE NicHandle,
                                            VIP_VI_HANDLE ViHandle,
                                            VIP_DESCRIPTOR *Descriptor));

/**
 * @brief Have a handler called for the next completed receive Descriptor
 *        (VIA 1.0 §9.6.10).  Everything VipSendNotify says holds for the
 *        receive queue (VipRecvDone, VipRecvWait).
 *
 * @param ViHandle The VI.
 * @param Context  Passed to Handler unchanged.
 * @param Handler  Function to call with the NIC, the VI and the completed
 *                 (dequeued) Descriptor.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The handler was called or armed.
 * @retval VIP_INVALID_PARAMETER Invalid VI handle or NULL Handler.
 * @retval VIP_ERROR_RESOURCE    The receive queue is associated with a CQ (use VipCQNotify),
 *                               no memory or thread for the notification, or viad is gone.
 */
VIP_RETURN VipRecvNotify(IN VIP_VI_HANDLE ViHandle,
                         IN VIP_PVOID Context,
                         IN void (*Handler)(VIP_PVOID Context,
                                            VIP_NIC_HANDLE NicHandle,
                                            VIP_VI_HANDLE ViHandle,
                                            VIP_DESCRIPTOR *Descriptor));

/**
 * @brief Have a handler called for the next completion entry of a
 *        completion queue (VIA 1.0 §9.6.11).
 *
 * If the CQ holds an entry, it is dequeued (as by VipCQDone) and Handler is
 * called with its VI and queue before VipCQNotify returns, in the calling
 * thread.  Otherwise Handler is called once, on the NIC's notify thread,
 * with the next entry dequeued there after it arrives.  The Descriptor
 * itself is then dequeued with VipSendDone / VipRecvDone.  Registrations,
 * calls from handlers and entries taken by other threads (VipCQDone,
 * VipCQWait) behave as VipSendNotify describes.
 *
 * VipDestroyCQ cancels the pending invocations of the CQ: they never run.
 * If a handler of the CQ is running on the notify thread, VipDestroyCQ
 * waits until it has returned (before it asks viad, so also when it then
 * fails because VIs are still associated with the CQ; a handler may
 * destroy its own CQ).  Destroying a VI does not cancel the CQ's
 * notifications; entries of a destroyed VI are skipped.
 *
 * @param CQHandle The completion queue.
 * @param Context  Passed to Handler unchanged.
 * @param Handler  Function to call with the NIC, the VI and the queue of the completion
 *                 (RecvQueue VIP_TRUE for the receive queue).
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The handler was called or armed.
 * @retval VIP_INVALID_PARAMETER Invalid CQ handle or NULL Handler.
 * @retval VIP_ERROR_RESOURCE    No memory or thread for the notification, or viad is gone.
 */
VIP_RETURN VipCQNotify(IN VIP_CQ_HANDLE CQHandle,
                       IN VIP_PVOID Context,
                       IN void (*Handler)(VIP_PVOID Context,
                                          VIP_NIC_HANDLE NicHandle,
                                          VIP_VI_HANDLE ViHandle,
                                          VIP_BOOLEAN RecvQueue));

/* ------------------- 9.7 Completion queue management ------------------- */

/**
 * @brief Create a completion queue (VIA 1.0 §9.7.1).
 *
 * The queue holds at least EntryCount entries (viad rounds up to a power of
 * two).  Sizing it is the consumer's job (VIA §6.4.1: "The VI Consumer is
 * responsible for ensuring that a Completion Queue is large enough to hold a
 * Completion Queue entry for each Descriptor that may complete at any given
 * time"): a completion that finds the CQ full loses its entry, with no error
 * reported (§6.4.1 allows it).  The Descriptor itself still completes on its
 * work queue, so VipSendDone / VipRecvDone still dequeue it; only the CQ
 * does not name it.  viad counts lost entries in VIP_DPDK_COUNTERS::CqOverruns
 * (VipQuerySystemManagementInfo, InfoType VIP_DPDK_SMI_COUNTERS).  VipResizeCQ
 * grows a CQ without losing an entry.
 *
 * @param NicHandle  The NIC.
 * @param EntryCount Number of completion entries the queue must hold (1..MaxCQEntries).
 * @param CQHandle   Receives the CQ handle.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The CQ was created.
 * @retval VIP_INVALID_PARAMETER Invalid NIC handle, EntryCount 0, or NULL CQHandle.
 * @retval VIP_ERROR_RESOURCE    Insufficient resources (MaxCQ reached, EntryCount above
 *                               MaxCQEntries, no memory), or viad is gone.
 */
VIP_RETURN VipCreateCQ(IN VIP_NIC_HANDLE NicHandle,
                       IN VIP_ULONG EntryCount,
                       OUT VIP_CQ_HANDLE *CQHandle);

/**
 * @brief Destroy a completion queue (VIA 1.0 §9.7.2).
 *
 * @param CQHandle The completion queue.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The CQ was destroyed.
 * @retval VIP_INVALID_PARAMETER Invalid CQ handle.
 * @retval VIP_ERROR_RESOURCE    Work queues of one or more VIs are still associated with it,
 *                               or viad is gone.
 */
VIP_RETURN VipDestroyCQ(IN VIP_CQ_HANDLE CQHandle);

/**
 * @brief Change the number of entries of a completion queue
 *        (VIA 1.0 §9.7.3, §11.3.14).
 *
 * The CQ may be in use meanwhile, with completions arriving and other
 * threads in VipCQDone, VipCQWait or with a VipCQNotify pending: no entry is
 * lost and none is delivered twice.  viad moves the entries not yet dequeued
 * into the new queue and places every later completion there; the
 * consumers of the CQ wait for the length of the call (one request to
 * viad).  Growing is always possible up to MaxCQEntries while the session's
 * memory lasts; shrinking below the entries the queue holds now fails, and
 * the CQ is then unchanged.  Overruns: see VipCreateCQ.
 *
 * @param CQHandle   The completion queue.
 * @param EntryCount New number of entries (1..MaxCQEntries, and not below the
 *                   number of entries the queue currently holds).
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The CQ was resized.
 * @retval VIP_INVALID_PARAMETER Invalid CQ handle or EntryCount 0.
 * @retval VIP_ERROR_RESOURCE    Insufficient resources (EntryCount above MaxCQEntries or below
 *                               the entries now queued, no memory in the session's segment),
 *                               or viad is gone.
 */
VIP_RETURN VipResizeCQ(IN VIP_CQ_HANDLE CQHandle, IN VIP_ULONG EntryCount);

/* ------------------------ 9.8 Querying information --------------------- */

/**
 * @brief Return the attributes of a NIC (VIA 1.0 §9.8.1, §9.10.4).
 *
 * @param NicHandle  The NIC.
 * @param Attributes Receives the NIC attributes.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The attributes were returned.
 * @retval VIP_INVALID_PARAMETER Invalid NIC handle or NULL Attributes.
 * @retval VIP_ERROR_RESOURCE    viad is gone.
 */
VIP_RETURN VipQueryNic(IN VIP_NIC_HANDLE NicHandle, OUT VIP_NIC_ATTRIBUTES *Attributes);

/**
 * @brief Change the attributes of a VI (VIA 1.0 §9.8.2).  Allowed only
 *        while the VI is Idle.
 *
 * @param ViHandle   The VI.
 * @param Attributes New attributes.
 * @return One of the following codes.
 * @retval VIP_SUCCESS                   The attributes were changed.
 * @retval VIP_INVALID_PARAMETER         Invalid VI handle or NULL Attributes.
 * @retval VIP_INVALID_RELIABILITY_LEVEL Reliability level invalid or not supported.
 * @retval VIP_INVALID_MTU               MaxTransferSize invalid or not supported.
 * @retval VIP_INVALID_QOS               QoS invalid or not supported.
 * @retval VIP_INVALID_PTAG              Ptag invalid.
 * @retval VIP_INVALID_RDMAREAD          EnableRdmaRead requested but not supported (by the NIC,
 *                                       or on an Unreliable VI: §2.5.1, Table 1).
 * @retval VIP_INVALID_STATE             The VI is not Idle.
 * @retval VIP_ERROR_RESOURCE            viad is gone.
 */
VIP_RETURN VipSetViAttributes(IN VIP_VI_HANDLE ViHandle, IN VIP_VI_ATTRIBUTES *Attributes);

/**
 * @brief Return the state and attributes of a VI (VIA 1.0 §9.8.3, with
 *        the two queue-empty out parameters of the Intel VI Developer's
 *        Guide).
 *
 * @param ViHandle     The VI.
 * @param State        Receives the VI state.
 * @param Attributes   Receives the VI attributes (granted values once Connected).
 * @param ViSendQEmpty Receives VIP_TRUE if no Descriptor is on the send queue.
 * @param ViRecvQEmpty Receives VIP_TRUE if no Descriptor is on the receive queue.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The information was returned.
 * @retval VIP_INVALID_PARAMETER Invalid VI handle or NULL out pointer.
 * @retval VIP_ERROR_RESOURCE    viad is gone.
 */
VIP_RETURN VipQueryVi(IN VIP_VI_HANDLE ViHandle,
                      OUT VIP_VI_STATE *State,
                      OUT VIP_VI_ATTRIBUTES *Attributes,
                      OUT VIP_BOOLEAN *ViSendQEmpty,
                      OUT VIP_BOOLEAN *ViRecvQEmpty);

/**
 * @brief Change the attributes of a registered memory region
 *        (VIA 1.0 §9.8.4).  Changing them during a transfer that uses the
 *        region has undefined results.
 *
 * @param NicHandle  The NIC where the region is registered.
 * @param Address    Base address of the region (as given to VipRegisterMem).
 * @param MemHandle  Memory handle of the region.
 * @param MemAttribs New attributes.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The attributes were changed.
 * @retval VIP_INVALID_PARAMETER Invalid NIC handle, memory handle or Address, or NULL MemAttribs.
 * @retval VIP_INVALID_PTAG      The protection tag is invalid.
 * @retval VIP_INVALID_RDMAREAD  EnableRdmaRead requested but not supported.
 * @retval VIP_ERROR_RESOURCE    viad is gone.
 */
VIP_RETURN VipSetMemAttributes(IN VIP_NIC_HANDLE NicHandle,
                               IN VIP_PVOID Address,
                               IN VIP_MEM_HANDLE MemHandle,
                               IN VIP_MEM_ATTRIBUTES *MemAttribs);

/**
 * @brief Return the attributes of a registered memory region
 *        (VIA 1.0 §9.8.5).
 *
 * @param NicHandle  The NIC where the region is registered.
 * @param Address    Base address of the region (as given to VipRegisterMem).
 * @param MemHandle  Memory handle of the region.
 * @param MemAttribs Receives the attributes.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The attributes were returned.
 * @retval VIP_INVALID_PARAMETER Invalid NIC handle, memory handle or Address, or NULL MemAttribs.
 * @retval VIP_ERROR_RESOURCE    viad is gone.
 */
VIP_RETURN VipQueryMem(IN VIP_NIC_HANDLE NicHandle,
                       IN VIP_PVOID Address,
                       IN VIP_MEM_HANDLE MemHandle,
                       OUT VIP_MEM_ATTRIBUTES *MemAttribs);

/**
 * @brief Return provider-specific system management information
 *        (VIA 1.0 §9.8.6).
 *
 * SysManInfo points to a caller-allocated structure whose type depends on
 * InfoType (the spec writes VIP_PVOID *; legacy headers and this one take
 * the structure's address as a VIP_PVOID).  VIA-DPDK's info types are in
 * vipl_dpdk.h: VIP_DPDK_SMI_COUNTERS (VIP_DPDK_COUNTERS) and
 * VIP_DPDK_SMI_PORT (VIP_DPDK_PORT_INFO).
 *
 * @param NicHandle  The NIC.
 * @param InfoType   Which information to return.
 * @param SysManInfo Receives the information.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The information was returned.
 * @retval VIP_INVALID_PARAMETER Invalid NIC handle, unknown InfoType or NULL SysManInfo.
 * @retval VIP_ERROR_RESOURCE    viad is gone.
 */
VIP_RETURN VipQuerySystemManagementInfo(IN VIP_NIC_HANDLE NicHandle,
                                        IN VIP_ULONG InfoType,
                                        OUT VIP_PVOID SysManInfo);

/* --------------------------- 9.9 Error handling ------------------------ */

/**
 * @brief Register the handler of asynchronous errors of a NIC
 *        (VIA 1.0 §9.9.1).
 *
 * Handler is called, from a provider thread, with a VIP_ERROR_DESCRIPTOR
 * for every asynchronous error (VIP_ERROR_* codes).  A NULL Handler
 * restores the default handler, which logs the error (§9.9.1).  An
 * Unreliable VI reports only the errors of its descriptors' own memory
 * (POST_DESC, COMP_PROT), VI_OVERRUN and CONN_LOST (§7.1); the errors of
 * an Idle VI are reported when it is connected (§5.1). When viad goes
 * (killed, or stopped), every VI of the NIC, whatever its state, is
 * reported once with VIP_ERROR_CONN_LOST within about 200 ms (§7: the VI
 * NIC failed): a consumer that only polls learns it so. The NIC's calls
 * return VIP_ERROR_RESOURCE from then on; close it and open it again.
 *
 * @param NicHandle The NIC.
 * @param Context   Passed to Handler unchanged.
 * @param Handler   The handler, or NULL for the default one.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The handler was registered.
 * @retval VIP_INVALID_PARAMETER Invalid NIC handle.
 * @retval VIP_ERROR_RESOURCE    viad is gone.
 */
VIP_RETURN VipErrorCallback(IN VIP_NIC_HANDLE NicHandle,
                            IN VIP_PVOID Context,
                            IN void (*Handler)(VIP_PVOID Context,
                                               VIP_ERROR_DESCRIPTOR *ErrorDesc));

/* -------------- Name service (Intel VI Developer's Guide) -------------- */

/**
 * @brief Initialise the name service of a NIC (Intel VI Developer's Guide;
 *        not in VIA 1.0).  Call it before the other VipNS* functions.
 *
 * @param NicHandle  The NIC.
 * @param NSInitInfo Provider-specific initialisation data; NULL selects the defaults.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The name service is ready.
 * @retval VIP_INVALID_PARAMETER Invalid NIC handle or NSInitInfo.
 * @retval VIP_ERROR_NAMESERVICE The name service could not be initialised.
 * @retval VIP_ERROR_RESOURCE    Insufficient resources, or viad is gone.
 */
VIP_RETURN VipNSInit(IN VIP_NIC_HANDLE NicHandle, IN VIP_PVOID NSInitInfo);

/**
 * @brief Translate a host name into a VI network address (Intel VI
 *        Developer's Guide; not in VIA 1.0).
 *
 * Fills in HostAddressLen and the host address bytes (the MAC of the
 * host's VIA NIC).  The caller then sets DiscriminatorLen and appends the
 * discriminator bytes after the host address.
 *
 * @param NicHandle  The NIC.
 * @param Name       NUL-terminated host name.
 * @param VipAddress Receives the address; must have room for sizeof(VIP_NET_ADDRESS)
 *                   + NicAddressLen bytes at least.
 * @param NameIndex  Which address to return when the name has several (0 = first).
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The address was returned.
 * @retval VIP_ERROR_NAMESERVICE The name is unknown (or has no address at NameIndex).
 * @retval VIP_INVALID_PARAMETER Invalid NIC handle, NULL Name or VipAddress, or the address
 *                               buffer is too small for the host address.
 * @retval VIP_ERROR_RESOURCE    viad is gone.
 */
VIP_RETURN VipNSGetHostByName(IN VIP_NIC_HANDLE NicHandle,
                              IN VIP_CHAR *Name,
                              OUT VIP_NET_ADDRESS *VipAddress,
                              IN VIP_ULONG NameIndex);

/**
 * @brief Translate a VI network address into a host name (Intel VI
 *        Developer's Guide; not in VIA 1.0).  Only the host address part is
 *        used; the discriminator is ignored.
 *
 * @param NicHandle  The NIC.
 * @param VipAddress The address.
 * @param Name       Receives the NUL-terminated host name.
 * @param NameLen    In: size of Name in bytes.  Out: length of the name including the
 *                   terminating NUL (also when the buffer was too small).
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The name was returned.
 * @retval VIP_ERROR_NAMESERVICE No name maps to the address.
 * @retval VIP_ERROR_RESOURCE    *NameLen is too small (*NameLen is set to the required
 *                               length, NUL included), or viad is gone.
 * @retval VIP_INVALID_PARAMETER Invalid NIC handle, NULL VipAddress, Name or NameLen.
 */
VIP_RETURN VipNSGetHostByAddr(IN VIP_NIC_HANDLE NicHandle,
                              IN VIP_NET_ADDRESS *VipAddress,
                              OUT VIP_CHAR *Name,
                              IN OUT VIP_ULONG *NameLen);

/**
 * @brief Shut down the name service of a NIC (Intel VI Developer's Guide;
 *        not in VIA 1.0).
 *
 * @param NicHandle The NIC.
 * @return One of the following codes.
 * @retval VIP_SUCCESS           The name service was shut down.
 * @retval VIP_INVALID_PARAMETER Invalid NIC handle.
 * @retval VIP_ERROR_RESOURCE    viad is gone.
 */
VIP_RETURN VipNSShutdown(IN VIP_NIC_HANDLE NicHandle);

#ifdef __cplusplus
}
#endif

#endif /* VIPL_H */
