/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The VIPL provider interface: what a provider shared object exports so
 * that libvipl.so, the multiplexing layer, can load it and dispatch to it
 * (the M-VIA 2 provider model; docs/design.md, "Providers").
 *
 * An application links `-lvipl` and calls the VIPL of vipl.h. libvipl.so
 * picks a provider per NIC at VipOpenNic (by NIC name, a config file or
 * VIPL_PROVIDER), loads `libvipl-NAME.so` from its provider path, and sends
 * every later call on a handle of that NIC to the same provider. A provider
 * may also be linked directly (`-lvipl-dpdk`): it then exports the VIPL
 * calls itself.
 *
 * The contract:
 * - The provider exports one function, VIPL_PROVIDER_ENTRY_NAME, of type
 *   vipl_provider_entry_fn. libvipl.so calls it once, with its own ABI
 *   version and the handle tag it gave the provider; the provider answers
 *   its description (struct vipl_provider), or NULL if it cannot work with
 *   that ABI. A description whose abi_version differs from libvipl.so's, or
 *   that lacks a required call, is refused with a log line.
 * - Ops are the VIPL calls themselves, same signatures and semantics
 *   (vipl.h, VIA 1.0 §9). Tables start full: a NULL slot of an optional
 *   call gets libvipl.so's default (the list below says which and what it
 *   returns), so a provider overrides only what it offers; a NULL
 *   required slot makes the provider unusable.
 * - Handle tags: every VIP_NIC_HANDLE, VIP_VI_HANDLE, VIP_CQ_HANDLE and
 *   VIP_CONN_HANDLE the provider gives out, returns from a call (VipCQDone,
 *   VipConnectWait, ...) or passes to a callback (notify handlers, error
 *   descriptors) carries the tag in bits 63:56 (VIPL_HANDLE_TAG_SHIFT);
 *   the other bits are the provider's. libvipl.so dispatches on the tag
 *   alone, so no handle is ever translated, and a call with a handle of no
 *   provider gets VIP_INVALID_PARAMETER. A provider linked directly uses
 *   tag 0. Protection tags and memory handles are never dispatched on
 *   (every call that takes one also takes a NIC or VI handle).
 */
#ifndef VIPL_PROVIDER_H
#define VIPL_PROVIDER_H

#include <stdint.h>

#include <vipl.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Bumped on any change to this file's structs, list or rules. */
#define VIPL_PROVIDER_ABI_VERSION 1u

/** Where a provider's handle tag lives in each dispatched handle. */
#define VIPL_HANDLE_TAG_SHIFT 56
/** The tag of @p handle (0: a directly linked provider's, or none). */
#define VIPL_HANDLE_TAG(handle) ((uint8_t)((uintptr_t)(handle) >> VIPL_HANDLE_TAG_SHIFT))

/**
 * Every VIPL call, as X(name, parameters, arguments, required, default):
 * a required call must be in a provider's table; an optional one left NULL
 * gets libvipl.so's default, a function that returns @c default (for the
 * error callback and the name service set-up, VIP_SUCCESS: a provider that
 * raises no asynchronous errors and needs no set-up; otherwise the code
 * VIA §9 gives for what the provider cannot do). VipOpenNic is dispatched
 * on the NIC's name; every other call on its first parameter, a handle.
 */
#define VIPL_PROVIDER_OPEN_CALL(X) \
	X(VipOpenNic, (const VIP_CHAR *DeviceName, VIP_NIC_HANDLE *NicHandle), \
	  (DeviceName, NicHandle), 1, VIP_SUCCESS)

#define VIPL_PROVIDER_HANDLE_CALLS(X) \
	X(VipCloseNic, (VIP_NIC_HANDLE NicHandle), (NicHandle), 1, VIP_SUCCESS) \
	X(VipQueryNic, (VIP_NIC_HANDLE NicHandle, VIP_NIC_ATTRIBUTES *Attributes), \
	  (NicHandle, Attributes), 1, VIP_SUCCESS) \
	X(VipCreatePtag, (VIP_NIC_HANDLE NicHandle, VIP_PROTECTION_HANDLE *ProtectionTag), \
	  (NicHandle, ProtectionTag), 1, VIP_SUCCESS) \
	X(VipDestroyPtag, (VIP_NIC_HANDLE NicHandle, VIP_PROTECTION_HANDLE ProtectionTag), \
	  (NicHandle, ProtectionTag), 1, VIP_SUCCESS) \
	X(VipRegisterMem, (VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress, VIP_ULONG Length, \
			   VIP_MEM_ATTRIBUTES *MemAttribs, VIP_MEM_HANDLE *MemoryHandle), \
	  (NicHandle, VirtualAddress, Length, MemAttribs, MemoryHandle), 1, VIP_SUCCESS) \
	X(VipDeregisterMem, (VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress, \
			     VIP_MEM_HANDLE MemoryHandle), \
	  (NicHandle, VirtualAddress, MemoryHandle), 1, VIP_SUCCESS) \
	X(VipQueryMem, (VIP_NIC_HANDLE NicHandle, VIP_PVOID Address, VIP_MEM_HANDLE MemHandle, \
			VIP_MEM_ATTRIBUTES *MemAttribs), \
	  (NicHandle, Address, MemHandle, MemAttribs), 0, VIP_ERROR_RESOURCE) \
	X(VipSetMemAttributes, (VIP_NIC_HANDLE NicHandle, VIP_PVOID Address, \
				VIP_MEM_HANDLE MemHandle, VIP_MEM_ATTRIBUTES *MemAttribs), \
	  (NicHandle, Address, MemHandle, MemAttribs), 0, VIP_ERROR_RESOURCE) \
	X(VipCreateVi, (VIP_NIC_HANDLE NicHandle, VIP_VI_ATTRIBUTES *ViAttribs, \
			VIP_CQ_HANDLE SendCQHandle, VIP_CQ_HANDLE RecvCQHandle, \
			VIP_VI_HANDLE *ViHandle), \
	  (NicHandle, ViAttribs, SendCQHandle, RecvCQHandle, ViHandle), 1, VIP_SUCCESS) \
	X(VipDestroyVi, (VIP_VI_HANDLE ViHandle), (ViHandle), 1, VIP_SUCCESS) \
	X(VipQueryVi, (VIP_VI_HANDLE ViHandle, VIP_VI_STATE *State, VIP_VI_ATTRIBUTES *Attributes, \
		       VIP_BOOLEAN *SendQueueEmpty, VIP_BOOLEAN *RecvQueueEmpty), \
	  (ViHandle, State, Attributes, SendQueueEmpty, RecvQueueEmpty), 1, VIP_SUCCESS) \
	X(VipSetViAttributes, (VIP_VI_HANDLE ViHandle, VIP_VI_ATTRIBUTES *Attributes), \
	  (ViHandle, Attributes), 0, VIP_ERROR_RESOURCE) \
	X(VipPostSend, (VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr, \
			VIP_MEM_HANDLE MemoryHandle), \
	  (ViHandle, DescriptorPtr, MemoryHandle), 1, VIP_SUCCESS) \
	X(VipSendDone, (VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR **DescriptorPtr), \
	  (ViHandle, DescriptorPtr), 1, VIP_SUCCESS) \
	X(VipSendWait, (VIP_VI_HANDLE ViHandle, VIP_ULONG Timeout, VIP_DESCRIPTOR **DescriptorPtr), \
	  (ViHandle, Timeout, DescriptorPtr), 1, VIP_SUCCESS) \
	X(VipPostRecv, (VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr, \
			VIP_MEM_HANDLE MemoryHandle), \
	  (ViHandle, DescriptorPtr, MemoryHandle), 1, VIP_SUCCESS) \
	X(VipRecvDone, (VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR **DescriptorPtr), \
	  (ViHandle, DescriptorPtr), 1, VIP_SUCCESS) \
	X(VipRecvWait, (VIP_VI_HANDLE ViHandle, VIP_ULONG Timeout, VIP_DESCRIPTOR **DescriptorPtr), \
	  (ViHandle, Timeout, DescriptorPtr), 1, VIP_SUCCESS) \
	X(VipSendNotify, (VIP_VI_HANDLE ViHandle, VIP_PVOID Context, VIP_VI_CALLBACK Callback), \
	  (ViHandle, Context, Callback), 0, VIP_ERROR_RESOURCE) \
	X(VipRecvNotify, (VIP_VI_HANDLE ViHandle, VIP_PVOID Context, VIP_VI_CALLBACK Callback), \
	  (ViHandle, Context, Callback), 0, VIP_ERROR_RESOURCE) \
	X(VipCreateCQ, (VIP_NIC_HANDLE NicHandle, VIP_ULONG EntryCount, VIP_CQ_HANDLE *CQHandle), \
	  (NicHandle, EntryCount, CQHandle), 0, VIP_ERROR_RESOURCE) \
	X(VipDestroyCQ, (VIP_CQ_HANDLE CQHandle), (CQHandle), 0, VIP_ERROR_RESOURCE) \
	X(VipResizeCQ, (VIP_CQ_HANDLE CQHandle, VIP_ULONG EntryCount), (CQHandle, EntryCount), 0, VIP_ERROR_RESOURCE) \
	X(VipCQDone, (VIP_CQ_HANDLE CQHandle, VIP_VI_HANDLE *ViHandle, VIP_BOOLEAN *RecvQueue), \
	  (CQHandle, ViHandle, RecvQueue), 0, VIP_ERROR_RESOURCE) \
	X(VipCQWait, (VIP_CQ_HANDLE CQHandle, VIP_ULONG Timeout, VIP_VI_HANDLE *ViHandle, \
		      VIP_BOOLEAN *RecvQueue), \
	  (CQHandle, Timeout, ViHandle, RecvQueue), 0, VIP_ERROR_RESOURCE) \
	X(VipCQNotify, (VIP_CQ_HANDLE CQHandle, VIP_PVOID Context, VIP_CQ_CALLBACK Callback), \
	  (CQHandle, Context, Callback), 0, VIP_ERROR_RESOURCE) \
	X(VipConnectWait, (VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *LocalAddr, VIP_ULONG Timeout, \
			   VIP_NET_ADDRESS *RemoteAddr, VIP_VI_ATTRIBUTES *RemoteViAttribs, \
			   VIP_CONN_HANDLE *ConnHandle), \
	  (NicHandle, LocalAddr, Timeout, RemoteAddr, RemoteViAttribs, ConnHandle), 1, VIP_SUCCESS) \
	X(VipConnectAccept, (VIP_CONN_HANDLE ConnHandle, VIP_VI_HANDLE ViHandle), \
	  (ConnHandle, ViHandle), 1, VIP_SUCCESS) \
	X(VipConnectReject, (VIP_CONN_HANDLE ConnHandle), (ConnHandle), 1, VIP_SUCCESS) \
	X(VipConnectRequest, (VIP_VI_HANDLE ViHandle, VIP_NET_ADDRESS *LocalAddr, \
			      VIP_NET_ADDRESS *RemoteAddr, VIP_ULONG Timeout, \
			      VIP_VI_ATTRIBUTES *RemoteViAttribs), \
	  (ViHandle, LocalAddr, RemoteAddr, Timeout, RemoteViAttribs), 1, VIP_SUCCESS) \
	X(VipDisconnect, (VIP_VI_HANDLE ViHandle), (ViHandle), 1, VIP_SUCCESS) \
	X(VipConnectPeerRequest, (VIP_VI_HANDLE ViHandle, VIP_NET_ADDRESS *LocalAddr, \
				  VIP_NET_ADDRESS *RemoteAddr, VIP_ULONG Timeout), \
	  (ViHandle, LocalAddr, RemoteAddr, Timeout), 0, VIP_ERROR_RESOURCE) \
	X(VipConnectPeerDone, (VIP_VI_HANDLE ViHandle, VIP_VI_ATTRIBUTES *RemoteAttributes), \
	  (ViHandle, RemoteAttributes), 0, VIP_ERROR_RESOURCE) \
	X(VipConnectPeerWait, (VIP_VI_HANDLE ViHandle, VIP_VI_ATTRIBUTES *RemoteAttributes), \
	  (ViHandle, RemoteAttributes), 0, VIP_ERROR_RESOURCE) \
	X(VipQuerySystemManagementInfo, (VIP_NIC_HANDLE NicHandle, VIP_ULONG InfoType, \
					 VIP_PVOID SysManInfo), \
	  (NicHandle, InfoType, SysManInfo), 0, VIP_INVALID_PARAMETER) \
	X(VipErrorCallback, (VIP_NIC_HANDLE NicHandle, VIP_PVOID Context, \
			     VIP_ERROR_HANDLER Handler), \
	  (NicHandle, Context, Handler), 0, VIP_SUCCESS) \
	X(VipNSInit, (VIP_NIC_HANDLE NicHandle, VIP_PVOID NSInitInfo), (NicHandle, NSInitInfo), 0, VIP_SUCCESS) \
	X(VipNSGetHostByName, (VIP_NIC_HANDLE NicHandle, VIP_CHAR *Name, VIP_NET_ADDRESS *Address, \
			       VIP_ULONG NameIndex), \
	  (NicHandle, Name, Address, NameIndex), 0, VIP_ERROR_NAMESERVICE) \
	X(VipNSGetHostByAddr, (VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *Address, VIP_CHAR *Name, \
			       VIP_ULONG *NameLen), \
	  (NicHandle, Address, Name, NameLen), 0, VIP_ERROR_NAMESERVICE) \
	X(VipNSShutdown, (VIP_NIC_HANDLE NicHandle), (NicHandle), 0, VIP_SUCCESS)

#define VIPL_PROVIDER_CALLS(X) VIPL_PROVIDER_OPEN_CALL(X) VIPL_PROVIDER_HANDLE_CALLS(X)

/** A provider's table: one slot per VIPL call, named as the call. */
struct vipl_provider_ops {
#define VIPL_PROVIDER_SLOT_(name, params, args, required, dflt) VIP_RETURN (*name) params;
	VIPL_PROVIDER_CALLS(VIPL_PROVIDER_SLOT_)
#undef VIPL_PROVIDER_SLOT_
};

/** What a provider says of itself. */
struct vipl_provider {
	uint32_t abi_version;              /**< VIPL_PROVIDER_ABI_VERSION it was built with */
	const char *name;                  /**< "dpdk", "tcp", ...: its file is libvipl-NAME.so */
	const char *description;           /**< one line, for logs */
	const struct vipl_provider_ops *ops;
};

/**
 * The one symbol a provider exports for libvipl.so.
 * @param abi_version libvipl.so's VIPL_PROVIDER_ABI_VERSION
 * @param handle_tag  the tag the provider puts in bits 63:56 of its handles (1..255)
 * @return the provider's description (static), or NULL if it cannot serve
 */
typedef const struct vipl_provider *(*vipl_provider_entry_fn)(uint32_t abi_version,
							      uint8_t handle_tag);

#define VIPL_PROVIDER_ENTRY_NAME "vipl_provider_entry"

/** The entry point each provider defines (vipl_provider_entry_fn). */
const struct vipl_provider *vipl_provider_entry(uint32_t abi_version, uint8_t handle_tag);

#ifdef __cplusplus
}
#endif

#endif /* VIPL_PROVIDER_H */
