/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp provider's entry point for libvipl.so (include/vipl_provider.h):
 * VIPL over the kernel's TCP sockets, for hosts without viad or hugepages
 * (docs/provider-tcp.md). The peer-to-peer connection calls, the notify
 * calls and VipQuerySystemManagementInfo are not provided: libvipl.so's
 * defaults answer for them.
 */
#include <vipl_provider.h>

#include "tcp_prov.h"

static const struct vipl_provider_ops tcp_ops = {
	.VipOpenNic = tcp_open_nic,
	.VipCloseNic = tcp_close_nic,
	.VipQueryNic = tcp_query_nic,
	.VipCreatePtag = tcp_create_ptag,
	.VipDestroyPtag = tcp_destroy_ptag,
	.VipRegisterMem = tcp_register_mem,
	.VipDeregisterMem = tcp_deregister_mem,
	.VipQueryMem = tcp_query_mem,
	.VipSetMemAttributes = tcp_set_mem_attributes,
	.VipCreateVi = tcp_create_vi,
	.VipDestroyVi = tcp_destroy_vi,
	.VipQueryVi = tcp_query_vi,
	.VipSetViAttributes = tcp_set_vi_attributes,
	.VipPostSend = tcp_post_send,
	.VipSendDone = tcp_send_done,
	.VipSendWait = tcp_send_wait,
	.VipPostRecv = tcp_post_recv,
	.VipRecvDone = tcp_recv_done,
	.VipRecvWait = tcp_recv_wait,
	.VipCreateCQ = tcp_create_cq,
	.VipDestroyCQ = tcp_destroy_cq,
	.VipResizeCQ = tcp_resize_cq,
	.VipCQDone = tcp_cq_done,
	.VipCQWait = tcp_cq_wait,
	.VipConnectWait = tcp_connect_wait,
	.VipConnectAccept = tcp_connect_accept,
	.VipConnectReject = tcp_connect_reject,
	.VipConnectRequest = tcp_connect_request,
	.VipDisconnect = tcp_disconnect,
	.VipErrorCallback = tcp_error_callback,
	.VipNSInit = tcp_ns_init,
	.VipNSGetHostByName = tcp_ns_get_host_by_name,
	.VipNSGetHostByAddr = tcp_ns_get_host_by_addr,
	.VipNSShutdown = tcp_ns_shutdown,
};

static const struct vipl_provider tcp_provider = {
	.abi_version = VIPL_PROVIDER_ABI_VERSION,
	.name = "tcp",
	.description = "tcp: VIA over the kernel's TCP sockets (no viad, no hugepages)",
	.ops = &tcp_ops,
};

__attribute__((visibility("default"))) const struct vipl_provider *
vipl_provider_entry(uint32_t abi_version, uint8_t handle_tag)
{
	if (abi_version != VIPL_PROVIDER_ABI_VERSION)
		return NULL;
	tcp_handle_tag = handle_tag;
	return &tcp_provider;
}
