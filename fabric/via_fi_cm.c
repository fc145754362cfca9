/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connection management of FI_EP_MSG endpoints (issue 27, part 4): viad
 * sessions shared between a passive endpoint and the domain that accepts
 * its requests, the passive endpoint (fi_passive_ep, fi_listen, fi_reject)
 * and the events connections put on an event queue (FI_CONNREQ,
 * FI_CONNECTED, FI_SHUTDOWN, and errors).
 *
 * VIA's VIs are connections, so an FI_EP_MSG endpoint is one VI: the
 * passive endpoint waits (VipConnectWait) on its name's discriminator and
 * reports each request; fi_accept answers it with a VI of the endpoint
 * (VipConnectAccept), fi_connect asks (VipConnectRequest, the endpoint's
 * connector thread). Data then flows as on an RDM endpoint's connection
 * (via_fi_proto.c). VIA's connection requests carry no private data, so
 * neither do fi_connect and fi_accept (paramlen 0).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "via_fi.h"

/* VipConnectWait returns this often to see whether the endpoint closes. */
#define VF_PEP_LISTEN_MS 100

/* ---------------------------------------------------------------------- */
/* Sessions */

static pthread_mutex_t vf_sessions_lock = PTHREAD_MUTEX_INITIALIZER;

static void
vf_async_error(VIP_PVOID context, VIP_ERROR_DESCRIPTOR *e)
{
	(void)context;
	FI_INFO(&vf_prov, FI_LOG_DOMAIN, "VIA asynchronous error %d on VI %p\n", e->ErrorCode,
		e->ViHandle);
}

int
vf_session_open(const char *nic, struct vf_session **out)
{
	struct vf_session *s = calloc(1, sizeof(*s));
	VIP_RETURN rc;

	if (s == NULL)
		return -FI_ENOMEM;
	rc = VipOpenNic(nic, &s->nic);
	if (rc != VIP_SUCCESS) {
		FI_WARN(&vf_prov, FI_LOG_DOMAIN, "VipOpenNic(%s): %d\n", nic, rc);
		free(s);
		return -FI_ENODEV;
	}
	rc = VipQueryNic(s->nic, &s->attr);
	if (rc != VIP_SUCCESS) {
		VipCloseNic(s->nic);
		free(s);
		return vf_vip_errno(rc);
	}
	memcpy(s->mac, s->attr.LocalNicAddress, sizeof(s->mac));
	VipErrorCallback(s->nic, NULL, vf_async_error);
	s->refs = 1;
	*out = s;
	return 0;
}

/* Another user of @p s. */
static struct vf_session *
vf_session_get(struct vf_session *s)
{
	pthread_mutex_lock(&vf_sessions_lock);
	s->refs++;
	pthread_mutex_unlock(&vf_sessions_lock);
	return s;
}

void
vf_session_put(struct vf_session *s)
{
	unsigned left;

	pthread_mutex_lock(&vf_sessions_lock);
	left = --s->refs;
	pthread_mutex_unlock(&vf_sessions_lock);
	if (left == 0) {
		VipCloseNic(s->nic);
		free(s);
	}
}

struct vf_session *
vf_session_of_info(const struct fi_info *info)
{
	const struct vf_connreq *cr;

	if (info == NULL || info->handle == NULL || info->handle->fclass != FI_CLASS_CONNREQ)
		return NULL;
	cr = vf_container_of(info->handle, struct vf_connreq, fid);
	return vf_session_get(cr->pep->sess);
}

/* ---------------------------------------------------------------------- */
/* Events */

static void
vf_eq_push(struct vf_eq *q, uint32_t event, bool error, const void *buf, size_t len)
{
	struct vf_eq_event *ev = malloc(sizeof(*ev) + len);

	if (ev == NULL) {
		FI_WARN(&vf_prov, FI_LOG_EQ, "no memory for a connection event: lost\n");
		return;
	}
	ev->event = event;
	ev->error = error;
	ev->len = len;
	memcpy(ev->buf, buf, len);
	pthread_mutex_lock(&q->lock);
	vf_list_add_tail(&q->events, &ev->link);
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

void
vf_eq_event(struct vf_eq *q, uint32_t event, fid_t fid, struct fi_info *info)
{
	struct fi_eq_cm_entry e = { .fid = fid, .info = info };

	if (q == NULL) {
		fi_freeinfo(info);
		return;
	}
	vf_eq_push(q, event, false, &e, sizeof(e));
}

void
vf_eq_error(struct vf_eq *q, fid_t fid, void *context, int err)
{
	struct fi_eq_err_entry e = {
		.fid = fid, .context = context, .err = err, .prov_errno = err,
	};

	if (q != NULL)
		vf_eq_push(q, FI_CONNECTED, true, &e, sizeof(e));
}

/* ---------------------------------------------------------------------- */
/* Connection requests */

static int
vf_connreq_close(struct fid *fid)
{
	(void)fid;
	return -FI_ENOSYS;  /* fi_accept or fi_reject consumes it */
}

static struct fi_ops vf_connreq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = vf_connreq_close,
	.bind = vf_no_bind,
	.control = vf_no_control,
	.ops_open = vf_no_ops_open,
	.tostr = vf_no_tostr,
	.ops_set = vf_no_ops_set,
};

void
vf_connreq_free(struct vf_connreq *cr)
{
	vf_session_put(cr->pep->sess);
	free(cr);
}

/* The fi_info of a request of @p pep from @p peer, handle @p cr. */
static struct fi_info *
vf_connreq_info(struct vf_pep *pep, struct vf_connreq *cr)
{
	struct fi_info *info = fi_dupinfo(pep->info);

	if (info == NULL)
		return NULL;
	free(info->src_addr);
	free(info->dest_addr);
	info->src_addr = malloc(sizeof(pep->name));
	info->dest_addr = malloc(sizeof(cr->peer));
	if (info->src_addr == NULL || info->dest_addr == NULL) {
		fi_freeinfo(info);
		return NULL;
	}
	memcpy(info->src_addr, &pep->name, sizeof(pep->name));
	info->src_addrlen = sizeof(pep->name);
	memcpy(info->dest_addr, &cr->peer, sizeof(cr->peer));
	info->dest_addrlen = sizeof(cr->peer);
	info->handle = &cr->fid;
	return info;
}

/* ---------------------------------------------------------------------- */
/* The passive endpoint */

#define VF_PEP(fid) vf_container_of(fid, struct vf_pep, pep.fid)

/* VIP_NET_ADDRESS of @p n, in @p buf (room for 6 + VF_DISC_LEN bytes). */
static VIP_NET_ADDRESS *
vf_pep_addr(void *buf, const struct vf_name *n)
{
	VIP_NET_ADDRESS *a = buf;

	a->HostAddressLen = sizeof(n->mac);
	a->DiscriminatorLen = VF_DISC_LEN;
	memcpy(a->HostAddress, n->mac, sizeof(n->mac));
	memcpy(a->HostAddress + sizeof(n->mac), (const uint8_t *)n + VF_DISC_OFF, VF_DISC_LEN);
	return a;
}

/* One request: FI_CONNREQ, or refused if it is no endpoint of this provider. */
static void
vf_pep_request(struct vf_pep *pep, VIP_CONN_HANDLE ch, const VIP_NET_ADDRESS *remote,
	       const VIP_VI_ATTRIBUTES *rattr)
{
	struct vf_connreq *cr = calloc(1, sizeof(*cr));
	struct fi_info *info;

	if (cr == NULL || remote->HostAddressLen != 6 || remote->DiscriminatorLen != VF_DISC_LEN) {
		free(cr);
		VipConnectReject(ch);
		return;
	}
	memcpy(cr->peer.mac, remote->HostAddress, 6);
	memcpy((uint8_t *)&cr->peer + VF_DISC_OFF, remote->HostAddress + 6, VF_DISC_LEN);
	if (!vf_name_valid(&cr->peer, sizeof(cr->peer))) {
		free(cr);
		VipConnectReject(ch);
		return;
	}
	cr->fid.fclass = FI_CLASS_CONNREQ;
	cr->fid.ops = &vf_connreq_fi_ops;
	cr->pep = pep;
	cr->ch = ch;
	cr->rattr = *rattr;
	vf_session_get(pep->sess);
	info = vf_connreq_info(pep, cr);
	if (info == NULL) {
		VipConnectReject(ch);
		vf_connreq_free(cr);
		return;
	}
	vf_eq_event(pep->eq, FI_CONNREQ, &pep->pep.fid, info);
}

static void *
vf_pep_listener(void *arg)
{
	struct vf_pep *pep = arg;
	uint8_t lbuf[sizeof(VIP_NET_ADDRESS) + 64], rbuf[sizeof(VIP_NET_ADDRESS) + 6 + 256];
	VIP_NET_ADDRESS *local = vf_pep_addr(lbuf, &pep->name);
	VIP_NET_ADDRESS *remote = (VIP_NET_ADDRESS *)(void *)rbuf;

	while (!__atomic_load_n(&pep->stopping, __ATOMIC_ACQUIRE)) {
		VIP_VI_ATTRIBUTES rattr;
		VIP_CONN_HANDLE ch;
		VIP_RETURN rc;

		rc = VipConnectWait(pep->sess->nic, local, VF_PEP_LISTEN_MS, remote, &rattr, &ch);
		if (rc == VIP_SUCCESS) {
			vf_pep_request(pep, ch, remote, &rattr);
		} else if (rc != VIP_TIMEOUT) {
			FI_WARN_SPARSE(&vf_prov, FI_LOG_EP_CTRL, "VipConnectWait: %d\n", rc);
			nanosleep(&(struct timespec){ 0, VF_PEP_LISTEN_MS * 1000000L }, NULL);
		}
	}
	return NULL;
}

static int
vf_pep_listen(struct fid_pep *fpep)
{
	struct vf_pep *pep = vf_container_of(fpep, struct vf_pep, pep);

	if (pep->listening)
		return 0;
	if (pep->eq == NULL)
		return -FI_ENOEQ;
	if (pthread_create(&pep->listener, NULL, vf_pep_listener, pep) != 0)
		return -FI_ENOMEM;
	pep->listening = true;
	return 0;
}

static int
vf_pep_reject(struct fid_pep *fpep, fid_t handle, const void *param, size_t paramlen)
{
	struct vf_connreq *cr;

	(void)fpep;
	if (handle == NULL || handle->fclass != FI_CLASS_CONNREQ || (param == NULL) != (paramlen == 0))
		return -FI_EINVAL;
	if (paramlen > 0)
		return -FI_EINVAL;      /* VIA's requests carry no private data */
	cr = vf_container_of(handle, struct vf_connreq, fid);
	VipConnectReject(cr->ch);
	vf_connreq_free(cr);
	return 0;
}

static int
vf_pep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct vf_pep *pep = VF_PEP(fid);
	size_t want = sizeof(pep->name);

	if (*addrlen < want) {
		*addrlen = want;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, &pep->name, want);
	*addrlen = want;
	return 0;
}

static int
vf_pep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct vf_pep *pep = VF_PEP(fid);

	if (pep->listening || !vf_name_valid(addr, addrlen) ||
	    memcmp(((const struct vf_name *)addr)->mac, pep->sess->mac, 6) != 0)
		return -FI_EINVAL;
	memcpy(&pep->name, addr, sizeof(pep->name));
	return 0;
}

static int
vf_pep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct vf_pep *pep = VF_PEP(fid);

	(void)flags;
	if (bfid->fclass != FI_CLASS_EQ || pep->listening)
		return -FI_EINVAL;
	pep->eq = vf_container_of(bfid, struct vf_eq, eq.fid);
	return 0;
}

static int
vf_pep_close(struct fid *fid)
{
	struct vf_pep *pep = VF_PEP(fid);

	if (pep->listening) {
		__atomic_store_n(&pep->stopping, true, __ATOMIC_RELEASE);
		pthread_join(pep->listener, NULL);
	}
	vf_session_put(pep->sess);
	fi_freeinfo(pep->info);
	free(pep);
	return 0;
}

static int
vf_pep_no_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen)
{
	(void)ep;
	(void)addr;
	(void)param;
	(void)paramlen;
	return -FI_ENOSYS;
}

static struct fi_ops vf_pep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = vf_pep_close,
	.bind = vf_pep_bind,
	.control = vf_no_control,
	.ops_open = vf_no_ops_open,
	.tostr = vf_no_tostr,
	.ops_set = vf_no_ops_set,
};

static struct fi_ops_cm vf_pep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = vf_pep_setname,
	.getname = vf_pep_getname,
	.connect = vf_pep_no_connect,
	.listen = vf_pep_listen,
	.reject = vf_pep_reject,
};

static struct fi_ops_ep vf_pep_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.getopt = vf_no_getopt,
	.setopt = vf_no_setopt,
};

int
vf_passive_ep(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **out,
	      void *context)
{
	const char *nic = info->domain_attr && info->domain_attr->name ? info->domain_attr->name
									 : vf_params()->nic;
	struct vf_pep *pep;
	int ret;

	(void)fabric;
	if (info->ep_attr == NULL || info->ep_attr->type != FI_EP_MSG)
		return -FI_EINVAL;
	pep = calloc(1, sizeof(*pep));
	if (pep == NULL)
		return -FI_ENOMEM;
	ret = vf_session_open(nic, &pep->sess);
	if (ret) {
		free(pep);
		return ret;
	}
	pep->info = fi_dupinfo(info);
	if (pep->info == NULL) {
		vf_session_put(pep->sess);
		free(pep);
		return -FI_ENOMEM;
	}
	if (vf_name_valid(info->src_addr, info->src_addrlen) &&
	    ((const struct vf_name *)info->src_addr)->ep_id != 0) {
		memcpy(&pep->name, info->src_addr, sizeof(pep->name));
		if (memcmp(pep->name.mac, pep->sess->mac, 6) != 0) {
			vf_pep_close(&pep->pep.fid);
			return -FI_EADDRNOTAVAIL;
		}
	} else {
		vf_name_fresh(&pep->name, pep->sess->mac);
	}
	pep->pep.fid.fclass = FI_CLASS_PEP;
	pep->pep.fid.context = context;
	pep->pep.fid.ops = &vf_pep_fi_ops;
	pep->pep.ops = &vf_pep_ep_ops;
	pep->pep.cm = &vf_pep_cm_ops;
	*out = &pep->pep;
	return 0;
}
