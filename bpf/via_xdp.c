/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * viad's XDP program for its net_af_xdp ports: frames of the VIA EtherType
 * go to the AF_XDP socket of their receive queue, every other frame to the
 * kernel (XDP_PASS), so that IP, ARP and neighbour discovery keep working
 * on the interface while viad drives it (issue 16; docs/design.md, "VIA and
 * IP on one port").
 *
 * The PMD (DPDK 22.11 net_af_xdp, devarg xdp_prog=) loads the first
 * program of this object, attaches it to the interface and inserts the
 * socket of each of its queues into the map named "xsks_map" at the queue's
 * index; the name is its contract. A queue without a socket yet (or any
 * more) passes its VIA frames to the kernel, which drops them: the
 * redirect's fallback action.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "via_ethertype.h"

/* the PMD's queues: net_af_xdp takes at most as many as the interface has */
#define VIA_XDP_MAX_QUEUES 64

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, VIA_XDP_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

SEC("xdp")
int
via_xdp_split(struct xdp_md *ctx)
{
	const void *data = (const void *)(long)ctx->data;
	const void *end = (const void *)(long)ctx->data_end;
	const struct ethhdr *eth = data;

	if ((const void *)(eth + 1) > end || eth->h_proto != bpf_htons(VIA_ETHERTYPE))
		return XDP_PASS;
	return (int)bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

/* GPL-compatible: the kernel's verifier wants it of programs using maps
 * with some helpers; BSD for the project */
char _license[] SEC("license") = "Dual BSD/GPL";
