/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connection management (VIA §4, §9.4): the calls are control requests to
 * viad's connection manager; the blocking ones (VipConnectWait,
 * VipConnectRequest, VipConnectPeerWait) are answered when the connection
 * manager has an answer, while other threads' calls go on (vipl_ctl_call).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vipl_priv.h"

static struct vipl_vi *
vi_get(VIP_VI_HANDLE handle)
{
	return vipl_dpdk_dp_get(handle, VIPL_DPDK_OBJ_VI);
}

static uint32_t
timeout_ms(VIP_ULONG t)
{
	return t >= VIP_INFINITE ? VIA_CTL_INFINITE : (uint32_t)t;
}

/*
 * A VIP_NET_ADDRESS (VIA §9.10.8) as viad takes it, from its two lengths
 * and its bytes: a 6-byte MAC host address (or none: @p host_len 0), then
 * @p disc_len discriminator bytes.
 */
static int
addr_parts_in(const struct vipl_nic *nic, uint16_t host_len, uint16_t disc_len,
	      const uint8_t *bytes, struct via_ctl_addr *out)
{
	memset(out, 0, sizeof(*out));
	if ((host_len != 0 && host_len != sizeof(out->mac)) ||
	    disc_len > nic->info.max_discriminator_len || disc_len > sizeof(out->disc))
		return -EINVAL;
	memcpy(out->mac, bytes, host_len);
	out->disc_len = (uint8_t)disc_len;
	memcpy(out->disc, bytes + host_len, disc_len);
	return 0;
}

/* A VIP_NET_ADDRESS of the usual form (VIP_DPDK_ADDR_FROM is refused). */
static int
addr_in(const struct vipl_nic *nic, const VIP_NET_ADDRESS *a, struct via_ctl_addr *out)
{
	if (a == NULL)
		return -EINVAL;
	return addr_parts_in(nic, a->HostAddressLen, a->DiscriminatorLen, a->HostAddress, out);
}

/*
 * The LocalAddr of a VipConnectWait: the local address and, with
 * VIP_DPDK_ADDR_FROM in its HostAddressLen, the remote VI to accept requests
 * from, right after its discriminator (vipl_dpdk.h): the filter of
 * VipDpdkConnectWaitFrom, through the standard call (VIA §4.3).
 */
static int
wait_addr_in(const struct vipl_nic *nic, const VIP_NET_ADDRESS *a, struct via_ctl_conn_wait_req *req)
{
	const uint8_t *from;
	uint16_t host_len, from_lens[2];
	int rc;

	if (a == NULL || !(a->HostAddressLen & VIP_DPDK_ADDR_FROM))
		return addr_in(nic, a, &req->local);
	host_len = a->HostAddressLen & (uint16_t)~VIP_DPDK_ADDR_FROM;
	rc = addr_parts_in(nic, host_len, a->DiscriminatorLen, a->HostAddress, &req->local);
	if (rc != 0)
		return rc;
	/* no alignment: the lengths are copied out */
	from = a->HostAddress + host_len + a->DiscriminatorLen;
	memcpy(from_lens, from, sizeof(from_lens));
	rc = addr_parts_in(nic, from_lens[0], from_lens[1], from + sizeof(from_lens), &req->filter);
	if (rc != 0)
		return rc;
	req->flags = (from_lens[0] ? VIA_CTL_FILTER_HOST : 0) |
		     (from_lens[1] ? VIA_CTL_FILTER_DISC : 0);
	return 0;
}

static void
addr_out(const struct via_ctl_addr *in, VIP_NET_ADDRESS *a)
{
	a->HostAddressLen = sizeof(in->mac);
	a->DiscriminatorLen = in->disc_len;
	memcpy(a->HostAddress, in->mac, sizeof(in->mac));
	memcpy(a->HostAddress + sizeof(in->mac), in->disc, in->disc_len);
}

static void
attr_out(const struct via_ctl_vi_attr *w, VIP_VI_ATTRIBUTES *a)
{
	memset(a, 0, sizeof(*a));
	a->ReliabilityLevel = w->reliability;
	a->MaxTransferSize = w->max_transfer;
	a->QoS = w->qos;
	a->EnableRdmaWrite = w->rdma_write ? VIP_TRUE : VIP_FALSE;
	a->EnableRdmaRead = w->rdma_read ? VIP_TRUE : VIP_FALSE;
	/* the remote tag means nothing here (VIA §3.2.2: tags are local) */
	a->Ptag = NULL;
}

static struct vipl_conn *
conn_get(VIP_CONN_HANDLE handle)
{
	return vipl_dpdk_dp_get(handle, VIPL_DPDK_OBJ_CONN);
}

static void
conn_free(struct vipl_conn *c)
{
	vipl_obj_put(&c->obj);
}

/*
 * A connect call of @p vi returned @p rc (VIA §5.1: the VI left Idle at the
 * call): it failed, and the VI is Idle again, unless it was not Idle to
 * begin with (-EPERM: VIP_INVALID_STATE).
 */
static void
idle_unless_connected(struct vipl_vi *vi, int rc)
{
	if (rc != 0 && rc != -EPERM)
		vipl_vi_idle_again(vi);
}

/*
 * CONN_WAIT of @p req (addresses and filter set): the answer, as a handle.
 * The body of VipConnectWait and VipDpdkConnectWaitFrom: their VIP_RETURN.
 */
static VIP_RETURN
conn_wait(struct vipl_nic *nic, struct via_ctl_conn_wait_req *req, VIP_ULONG Timeout,
	  VIP_NET_ADDRESS *RemoteAddr, VIP_VI_ATTRIBUTES *RemoteViAttribs,
	  VIP_CONN_HANDLE *ConnHandle)
{
	struct via_ctl_conn_wait_rep rep;
	struct vipl_conn *c;
	int rc;

	req->timeout_ms = timeout_ms(Timeout);
	c = vipl_obj_get_zeroed(VIPL_DPDK_OBJ_CONN, sizeof(*c));
	if (c == NULL)
		return VIP_ERROR_RESOURCE;
	rc = vipl_ctl_call(nic, VIA_CTL_CONN_WAIT, req, &rep, NULL);
	if (rc != 0) {
		vipl_obj_put(&c->obj);
		return via_vip_return(rc);
	}
	c->nic = nic;
	c->id = rep.conn;
	addr_out(&rep.remote, RemoteAddr);
	attr_out(&rep.remote_attr, RemoteViAttribs);
	*ConnHandle = vipl_handle_publish(&c->obj);
	return VIP_SUCCESS;
}

VIPL_EXPORT VIP_RETURN
VipDpdkConnectWaitFrom(VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *LocalAddr,
		       VIP_NET_ADDRESS *FromAddr, VIP_ULONG Timeout, VIP_NET_ADDRESS *RemoteAddr,
		       VIP_VI_ATTRIBUTES *RemoteViAttribs, VIP_CONN_HANDLE *ConnHandle)
{
	struct vipl_nic *nic = vipl_nic_get(NicHandle);
	struct via_ctl_conn_wait_req req;

	if (nic == NULL || RemoteAddr == NULL || RemoteViAttribs == NULL || ConnHandle == NULL)
		return VIP_INVALID_PARAMETER;
	memset(&req, 0, sizeof(req));
	if (addr_in(nic, LocalAddr, &req.local) != 0)
		return VIP_INVALID_PARAMETER;
	if (FromAddr != NULL) {
		if (addr_in(nic, FromAddr, &req.filter) != 0)
			return VIP_INVALID_PARAMETER;
		req.flags = (FromAddr->HostAddressLen ? VIA_CTL_FILTER_HOST : 0) |
			    (FromAddr->DiscriminatorLen ? VIA_CTL_FILTER_DISC : 0);
	}
	return conn_wait(nic, &req, Timeout, RemoteAddr, RemoteViAttribs, ConnHandle);
}

VIPL_EXPORT VIP_RETURN
VipConnectWait(VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *LocalAddr, VIP_ULONG Timeout,
	       VIP_NET_ADDRESS *RemoteAddr, VIP_VI_ATTRIBUTES *RemoteViAttribs,
	       VIP_CONN_HANDLE *ConnHandle)
{
	struct vipl_nic *nic = vipl_nic_get(NicHandle);
	struct via_ctl_conn_wait_req req;

	if (nic == NULL || RemoteAddr == NULL || RemoteViAttribs == NULL || ConnHandle == NULL)
		return VIP_INVALID_PARAMETER;
	memset(&req, 0, sizeof(req));
	/* §4.1, §4.3: from any VI, or from one (VIP_DPDK_ADDR_FROM) */
	if (wait_addr_in(nic, LocalAddr, &req) != 0)
		return VIP_INVALID_PARAMETER;
	return conn_wait(nic, &req, Timeout, RemoteAddr, RemoteViAttribs, ConnHandle);
}

VIPL_EXPORT VIP_RETURN
VipConnectAccept(VIP_CONN_HANDLE ConnHandle, VIP_VI_HANDLE ViHandle)
{
	struct vipl_conn *c = conn_get(ConnHandle);
	struct vipl_vi *vi = vi_get(ViHandle);
	struct via_ctl_conn_accept_req req;
	int rc;

	if (c == NULL || vi == NULL || vi->nic != c->nic)
		return VIP_INVALID_PARAMETER;
	req.conn = c->id;
	req.vi = vi->id;
	vipl_vi_connect_called(vi);
	/* answered once the requester confirmed, or refused (viad's
	 * cm_unreachable_ms at most): docs/wire-format.md section 7 */
	rc = vipl_ctl_call(c->nic, VIA_CTL_CONN_ACCEPT, &req, NULL, NULL);
	/* on a conflict of attributes (VIA §9.4.2), or a VI that is not Idle,
	 * the request stays valid; otherwise it is answered for good */
	if (rc != -EPROTONOSUPPORT && rc != -EMSGSIZE && rc != -EDOM && rc != -EPERM)
		conn_free(c);
	idle_unless_connected(vi, rc);
	return via_vip_return(rc);
}

VIPL_EXPORT VIP_RETURN
VipConnectReject(VIP_CONN_HANDLE ConnHandle)
{
	struct vipl_conn *c = conn_get(ConnHandle);
	struct via_ctl_id req = { 0 };
	int rc;

	if (c == NULL)
		return VIP_INVALID_PARAMETER;
	req.id = c->id;
	rc = vipl_ctl_call(c->nic, VIA_CTL_CONN_REJECT, &req, NULL, NULL);
	conn_free(c);
	return via_vip_return(rc);
}

static int
request_fill(struct vipl_vi *vi, VIP_NET_ADDRESS *local, VIP_NET_ADDRESS *remote,
	     VIP_ULONG timeout, struct via_ctl_conn_request_req *req)
{
	memset(req, 0, sizeof(*req));
	if (addr_in(vi->nic, local, &req->local) != 0 || addr_in(vi->nic, remote, &req->remote) != 0 ||
	    remote->HostAddressLen != sizeof(req->remote.mac))
		return -EINVAL;
	/* the local address, if given, is this NIC's */
	if (local->HostAddressLen != 0 &&
	    memcmp(req->local.mac, vi->nic->info.mac, sizeof(req->local.mac)) != 0)
		return -EINVAL;
	req->vi = vi->id;
	req->timeout_ms = timeout_ms(timeout);
	return 0;
}

VIPL_EXPORT VIP_RETURN
VipConnectRequest(VIP_VI_HANDLE ViHandle, VIP_NET_ADDRESS *LocalAddr, VIP_NET_ADDRESS *RemoteAddr,
		  VIP_ULONG Timeout, VIP_VI_ATTRIBUTES *RemoteViAttribs)
{
	struct vipl_vi *vi = vi_get(ViHandle);
	struct via_ctl_conn_request_req req;
	struct via_ctl_vi_attr rep;
	int rc;

	if (vi == NULL || RemoteViAttribs == NULL ||
	    request_fill(vi, LocalAddr, RemoteAddr, Timeout, &req) != 0)
		return VIP_INVALID_PARAMETER;
	vipl_vi_connect_called(vi);
	rc = vipl_ctl_call(vi->nic, VIA_CTL_CONN_REQUEST, &req, &rep, NULL);
	if (rc == 0)
		attr_out(&rep, RemoteViAttribs);
	idle_unless_connected(vi, rc);
	return via_vip_return(rc);
}

VIPL_EXPORT VIP_RETURN
VipDisconnect(VIP_VI_HANDLE ViHandle)
{
	struct vipl_vi *vi = vi_get(ViHandle);
	struct via_ctl_id req = { 0 };
	int rc;

	if (vi == NULL)
		return VIP_INVALID_PARAMETER;
	req.id = vi->id;
	rc = vipl_ctl_call(vi->nic, VIA_CTL_DISCONNECT, &req, NULL, NULL);
	if (rc == 0)
		vipl_vi_idle_again(vi);
	return via_vip_return(rc);
}

VIPL_EXPORT VIP_RETURN
VipConnectPeerRequest(VIP_VI_HANDLE ViHandle, VIP_NET_ADDRESS *LocalAddr,
		      VIP_NET_ADDRESS *RemoteAddr, VIP_ULONG Timeout)
{
	struct vipl_vi *vi = vi_get(ViHandle);
	struct via_ctl_conn_request_req req;
	int rc;

	if (vi == NULL || request_fill(vi, LocalAddr, RemoteAddr, Timeout, &req) != 0)
		return VIP_INVALID_PARAMETER;
	vipl_vi_connect_called(vi);
	rc = vipl_ctl_call(vi->nic, VIA_CTL_PEER_REQUEST, &req, NULL, NULL);
	idle_unless_connected(vi, rc);
	return via_vip_return(rc);
}

/* The body of VipConnectPeerDone and VipConnectPeerWait (@p op): their VIP_RETURN. */
static VIP_RETURN
peer_result(VIP_VI_HANDLE ViHandle, VIP_VI_ATTRIBUTES *RemoteAttributes, unsigned op)
{
	struct vipl_vi *vi = vi_get(ViHandle);
	struct via_ctl_id req = { 0 };
	struct via_ctl_vi_attr rep;
	int rc;

	if (vi == NULL || RemoteAttributes == NULL)
		return VIP_INVALID_PARAMETER;
	req.id = vi->id;
	rc = vipl_ctl_call(vi->nic, op, &req, &rep, NULL);
	if (rc == 0)
		attr_out(&rep, RemoteAttributes);
	/* still out (VIP_NOT_DONE), or no peer request to report */
	else if (rc != -EAGAIN)
		idle_unless_connected(vi, rc);
	return via_vip_return(rc);
}

VIPL_EXPORT VIP_RETURN
VipConnectPeerDone(VIP_VI_HANDLE ViHandle, VIP_VI_ATTRIBUTES *RemoteAttributes)
{
	return peer_result(ViHandle, RemoteAttributes, VIA_CTL_PEER_DONE);
}

VIPL_EXPORT VIP_RETURN
VipConnectPeerWait(VIP_VI_HANDLE ViHandle, VIP_VI_ATTRIBUTES *RemoteAttributes)
{
	return peer_result(ViHandle, RemoteAttributes, VIA_CTL_PEER_WAIT);
}
