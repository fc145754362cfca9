/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Standard addressing (issue 27, part 4): a node and a service, as
 * applications hand them to fi_getinfo and fi_av_insertsvc, become an
 * endpoint name (struct vf_name).
 *
 * The node is a host name looked up in viad's name service (the hosts
 * file, VipNSGetHostByName: the MAC of the host's VIA NIC), or a MAC
 * written as six hex bytes. The service is a number, like a port: the
 * endpoint that binds it listens on the discriminator 'f' 'i', pid 0,
 * endpoint number SERVICE, which the client derives from the same number;
 * an endpoint without a service gets its own pid and a fresh number.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "via_fi.h"

/* A MAC written as "xx:xx:xx:xx:xx:xx" (or with '-'). */
static bool
vf_mac_parse(const char *s, uint8_t mac[6])
{
	unsigned b[6];
	char sep[5], end;
	int i;

	if (sscanf(s, "%2x%c%2x%c%2x%c%2x%c%2x%c%2x%c", &b[0], &sep[0], &b[1], &sep[1], &b[2],
		   &sep[2], &b[3], &sep[3], &b[4], &sep[4], &b[5], &end) != 11)
		return false;
	for (i = 0; i < 5; i++)
		if (sep[i] != ':' && sep[i] != '-')
			return false;
	for (i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return true;
}

/* The MAC of host @p node, through @p nic's name service. */
static int
vf_node_mac(VIP_NIC_HANDLE nic, const char *node, uint8_t mac[6])
{
	union {
		VIP_NET_ADDRESS a;
		uint8_t bytes[sizeof(VIP_NET_ADDRESS) + 64];
	} u;
	VIP_RETURN rc;

	if (vf_mac_parse(node, mac))
		return 0;
	memset(&u, 0, sizeof(u));
	rc = VipNSInit(nic, NULL);
	if (rc == VIP_SUCCESS)
		rc = VipNSGetHostByName(nic, (VIP_CHAR *)(uintptr_t)node, &u.a, 0);
	if (rc != VIP_SUCCESS || u.a.HostAddressLen != 6) {
		FI_INFO(&vf_prov, FI_LOG_CORE, "node %s: not in viad's name service (%d)\n", node,
			rc);
		return -FI_ENODATA;
	}
	memcpy(mac, u.a.HostAddress, 6);
	return 0;
}

int
vf_service_parse(const char *service, uint32_t *id)
{
	char *end;
	unsigned long v;

	if (service == NULL || *service == '\0')
		return -FI_EINVAL;
	errno = 0;
	v = strtoul(service, &end, 10);
	if (errno != 0 || *end != '\0' || v == 0 || v > UINT32_MAX)
		return -FI_EINVAL;
	*id = (uint32_t)v;
	return 0;
}

int
vf_name_resolve(VIP_NIC_HANDLE nic, const uint8_t own_mac[6], const char *node,
		const char *service, struct vf_name *out)
{
	uint32_t id = 0;
	int ret;

	memset(out, 0, sizeof(*out));
	if (service != NULL && (ret = vf_service_parse(service, &id)) != 0) {
		FI_INFO(&vf_prov, FI_LOG_CORE, "service %s: not a number from 1\n", service);
		return -FI_ENODATA;
	}
	if (node == NULL)
		memcpy(out->mac, own_mac, sizeof(out->mac));
	else if ((ret = vf_node_mac(nic, node, out->mac)) != 0)
		return ret;
	out->magic[0] = VF_NAME_MAGIC0;
	out->magic[1] = VF_NAME_MAGIC1;
	out->pid = 0;
	out->ep_id = id;
	return 0;
}

bool
vf_name_valid(const void *addr, size_t len)
{
	const struct vf_name *n = addr;

	return addr != NULL && len == sizeof(*n) && n->magic[0] == VF_NAME_MAGIC0 &&
	       n->magic[1] == VF_NAME_MAGIC1;
}

void
vf_name_fresh(struct vf_name *n, const uint8_t mac[6])
{
	static uint32_t count;
	struct timespec t;

	memcpy(n->mac, mac, sizeof(n->mac));
	n->magic[0] = VF_NAME_MAGIC0;
	n->magic[1] = VF_NAME_MAGIC1;
	n->pid = (uint32_t)getpid();
	/* unique in the process, and unlikely to repeat for a later process
	 * with the same pid */
	clock_gettime(CLOCK_MONOTONIC, &t);
	n->ep_id = (__atomic_fetch_add(&count, 1, __ATOMIC_RELAXED) & 0xffff) |
		   ((uint32_t)(t.tv_nsec ^ t.tv_sec) << 16);
}
