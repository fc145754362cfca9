/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The provider's entry point (fi_prov_ini), fi_getinfo, the fabric object
 * and the event queue.
 *
 * fi_getinfo opens the VIA NIC for a moment to read its attributes: what it
 * reports (message and registration limits, the NIC's name) comes from the
 * viad that VIAD_SOCKET names, and no viad means no fi_info at all.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "via_fi.h"

/* Capabilities: primary ones are enabled only when asked for, secondary
 * ones are always reported (fi_getinfo(3), "Capabilities"). */
#define VF_PRIMARY   (FI_MSG | FI_TAGGED | FI_RMA | FI_DIRECTED_RECV)
#define VF_MODIFIERS (FI_READ | FI_WRITE | FI_RECV | FI_SEND | FI_REMOTE_READ | FI_REMOTE_WRITE)
#define VF_SECONDARY (FI_SOURCE | FI_LOCAL_COMM | FI_REMOTE_COMM)
#define VF_CAPS      (VF_PRIMARY | VF_MODIFIERS | VF_SECONDARY)

#define VF_TX_CAPS (FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_WRITE | FI_SEND | \
		    FI_LOCAL_COMM | FI_REMOTE_COMM)
#define VF_RX_CAPS (FI_MSG | FI_TAGGED | FI_RMA | FI_DIRECTED_RECV | FI_RECV | \
		    FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SOURCE | FI_LOCAL_COMM | FI_REMOTE_COMM)

/* The registrations an RMA target needs (FI_MR_BASIC of API 1.4 and before). */
#define VF_MR_RMA (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED)

/* Every bit of the tag is matched; libfabric's "generic" format (every
 * other bit set) is what applications such as Open MPI look for. */
#define VF_TAG_FORMAT 0xaaaaaaaaaaaaaaaaULL

#define VF_MSG_MAX     ((size_t)1 << 30)

/* libfabric's own flag (ofi.h, OFI_CORE_PROV_ONLY): a utility provider asks
 * the core providers what to layer over. ofi_rxm would offer RDM endpoints
 * made of this provider's FI_EP_MSG ones, ahead of its own RDM endpoints,
 * under the name "via;ofi_rxm": applications that ask for "via" would get
 * them. The provider's RDM is native: it declines. */
#define VF_UTIL_ASKS   (1ULL << 59)

/* completion levels we meet: a Reliable Reception send completes once
 * the peer's VI NIC has placed it */
#define VF_TX_OP_FLAGS (FI_COMPLETION | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | \
			FI_DELIVERY_COMPLETE)

uint64_t
vf_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

int
vf_vip_errno(VIP_RETURN rc)
{
	switch (rc) {
	case VIP_SUCCESS: return 0;
	case VIP_NOT_DONE: return -EAGAIN;
	case VIP_TIMEOUT: return -ETIMEDOUT;
	case VIP_REJECT: return -ECONNREFUSED;
	case VIP_NO_MATCH: return -ENXIO;
	case VIP_INVALID_STATE: return -EPERM;
	case VIP_ERROR_RESOURCE: return -ENOMEM;
	case VIP_INVALID_PARAMETER:
	case VIP_INVALID_RELIABILITY_LEVEL:
	case VIP_INVALID_MTU:
	case VIP_INVALID_QOS:
	case VIP_INVALID_PTAG:
	case VIP_INVALID_RDMAREAD:
		return -EINVAL;
	default:
		return -EIO;
	}
}

/* ---------------------------------------------------------------------- */
/* The slots of struct fi_ops an object does not offer */

int
vf_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid;
	(void)bfid;
	(void)flags;
	return -FI_ENOSYS;
}

int
vf_no_control(struct fid *fid, int command, void *arg)
{
	(void)fid;
	(void)command;
	(void)arg;
	return -FI_ENOSYS;
}

int
vf_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{
	(void)fid;
	(void)name;
	(void)flags;
	(void)ops;
	(void)context;
	return -FI_ENOSYS;
}

int
vf_no_tostr(const struct fid *fid, char *buf, size_t len)
{
	(void)fid;
	(void)buf;
	(void)len;
	return -FI_ENOSYS;
}

int
vf_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops, void *context)
{
	(void)fid;
	(void)name;
	(void)flags;
	(void)ops;
	(void)context;
	return -FI_ENOSYS;
}

/* ---------------------------------------------------------------------- */
/* Parameters: FI_VIA_<NAME> in the environment (fi_info -e lists them) */

static struct vf_params vf_params_now = {
	.eager_max = 65536,
	.rx_depth = 32,
	.tx_depth = 32,
	.connect_ms = 30000,
	.mr_cache_bytes = (size_t)1 << 30,
	.yield_polls = 8,
	.nic = "via0",
};

static void
vf_params_define(void)
{
	fi_param_define(&vf_prov, "nic", FI_PARAM_STRING,
			"VIA NIC (fi_info domain) when the application names none (default: via0)");
	fi_param_define(&vf_prov, "eager_max", FI_PARAM_SIZE_T,
			"largest message sent eagerly, through bounce buffers; larger ones "
			"are read by the receiver with RDMA Read (default: 65536)");
	fi_param_define(&vf_prov, "rx_depth", FI_PARAM_INT,
			"receive buffers per connection, 8..1024 (default: 32)");
	fi_param_define(&vf_prov, "tx_depth", FI_PARAM_INT,
			"send slots per connection, 4..1024 (default: 32)");
	fi_param_define(&vf_prov, "connect_timeout", FI_PARAM_INT,
			"milliseconds to keep trying to connect to a peer (default: 30000)");
	fi_param_define(&vf_prov, "mr_cache", FI_PARAM_SIZE_T,
			"bytes of user memory kept registered for rendezvous, 0 to register "
			"every time (default: 1 GiB)");
	fi_param_define(&vf_prov, "yield_polls", FI_PARAM_INT,
			"empty fi_cq_read calls in a row after which each further one yields "
			"the CPU, 0 never (default: 8)");
}

static void
vf_params_read(void)
{
	struct vf_params *p = &vf_params_now;
	char *s;
	size_t z;
	int i;

	if (fi_param_get_str(&vf_prov, "nic", &s) == 0 && s != NULL && *s != '\0')
		p->nic = s;
	if (fi_param_get_size_t(&vf_prov, "eager_max", &z) == 0)
		p->eager_max = z;
	if (fi_param_get_int(&vf_prov, "rx_depth", &i) == 0 && i >= 8 && i <= 1024)
		p->rx_depth = (unsigned)i;
	if (fi_param_get_int(&vf_prov, "tx_depth", &i) == 0 && i >= 4 && i <= 1024)
		p->tx_depth = (unsigned)i;
	if (fi_param_get_int(&vf_prov, "connect_timeout", &i) == 0 && i > 0)
		p->connect_ms = (unsigned)i;
	if (fi_param_get_size_t(&vf_prov, "mr_cache", &z) == 0)
		p->mr_cache_bytes = z;
	if (fi_param_get_int(&vf_prov, "yield_polls", &i) == 0 && i >= 0)
		p->yield_polls = (unsigned)i;
}

const struct vf_params *
vf_params(void)
{
	return &vf_params_now;
}

/* ---------------------------------------------------------------------- */
/* fi_getinfo */

/* Names fi_getinfo reports: src_addr and dest_addr (NULL: none). */
struct vf_addrs {
	struct vf_name src, dest;
	bool has_src, has_dest;
};

/*
 * What the NIC offers, read through VIPL, and the names a node and a
 * service stand for (via_fi_addr.c): with FI_SOURCE the local one (the
 * node, if any, must be this NIC), else the peer's.
 */
static int
vf_nic_query(const char *name, VIP_NIC_ATTRIBUTES *attr, const char *node, const char *service,
	     uint64_t flags, struct vf_addrs *addrs)
{
	VIP_NIC_HANDLE nic;
	VIP_RETURN rc;
	int ret = 0;

	rc = VipOpenNic(name, &nic);
	if (rc != VIP_SUCCESS) {
		FI_INFO(&vf_prov, FI_LOG_CORE, "VipOpenNic(%s): %d (no viad, or no such NIC)\n",
			name, rc);
		return -FI_ENODATA;
	}
	rc = VipQueryNic(nic, attr);
	if (rc != VIP_SUCCESS) {
		ret = -FI_ENODATA;
	} else if (node != NULL || service != NULL) {
		bool src = flags & FI_SOURCE;
		struct vf_name *n = src ? &addrs->src : &addrs->dest;

		ret = vf_name_resolve(nic, attr->LocalNicAddress, node, service, n);
		if (ret == 0 && src && memcmp(n->mac, attr->LocalNicAddress, 6) != 0) {
			FI_INFO(&vf_prov, FI_LOG_CORE, "node %s is not NIC %s\n", node, name);
			ret = -FI_ENODATA;
		}
		/* a peer is a node and a service; a local name may lack either */
		if (ret == 0 && !src && (node == NULL || service == NULL))
			ret = -FI_ENODATA;
		if (ret == 0) {
			addrs->has_src |= src;
			addrs->has_dest |= !src;
		}
	}
	VipCloseNic(nic);
	if (ret)
		return ret;
	/* the protocol needs Reliable Reception (completion semantics) and
	 * RDMA Read (rendezvous) */
	if (!(attr->ReliabilityLevelSupport & VIP_SERVICE_RELIABLE_RECEPTION) ||
	    !attr->RDMAReadSupport || attr->MaxTransferSize < 4096) {
		FI_INFO(&vf_prov, FI_LOG_CORE,
			"NIC %s lacks Reliable Reception, RDMA Read or 4 KiB transfers\n", name);
		return -FI_ENODATA;
	}
	return 0;
}

static bool
vf_str_differs(const char *want, const char *have)
{
	return want != NULL && strcmp(want, have) != 0;
}

/* The caps to report for the caps asked for; false if some cannot be had. */
static bool
vf_caps_for(uint64_t want, uint64_t *caps)
{
	uint64_t mods;

	if (want & ~(uint64_t)VF_CAPS)
		return false;
	if (!(want & VF_PRIMARY)) {
		*caps = VF_CAPS;
		return true;
	}
	mods = want & VF_MODIFIERS;
	if (mods == 0)
		mods = VF_MODIFIERS;
	*caps = (want & VF_PRIMARY) | mods | VF_SECONDARY;
	return true;
}

/* mr_mode for @p caps, or -1 if the application's hint cannot be met. */
static int
vf_mr_mode_for(uint32_t version, const struct fi_info *hints, uint64_t caps)
{
	bool rma_target = (caps & FI_RMA) && (caps & (FI_REMOTE_READ | FI_REMOTE_WRITE));
	int need = rma_target ? VF_MR_RMA : 0;
	int user = hints && hints->domain_attr ? hints->domain_attr->mr_mode : FI_MR_UNSPEC;

	if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
		return user == FI_MR_SCALABLE ? -1 : FI_MR_BASIC;
	if (hints == NULL || hints->domain_attr == NULL)
		return need;
	if (user & FI_MR_BASIC)
		return (user & ~FI_MR_BASIC) ? -1 : FI_MR_BASIC;
	if (user & FI_MR_SCALABLE)
		return -1;
	return (user & need) == need ? need : -1;
}

static bool
vf_tx_fits(const struct fi_tx_attr *h, struct fi_tx_attr *t)
{
	if (h == NULL)
		return true;
	if ((h->caps & ~t->caps) || (h->msg_order & ~t->msg_order) ||
	    (h->comp_order & ~t->comp_order) || h->inject_size > t->inject_size ||
	    h->size > t->size || h->iov_limit > t->iov_limit ||
	    h->rma_iov_limit > t->rma_iov_limit || (h->op_flags & ~(uint64_t)VF_TX_OP_FLAGS))
		return false;
	if (h->caps)
		t->caps = h->caps;
	if (h->op_flags)
		t->op_flags = h->op_flags;
	return true;
}

static bool
vf_rx_fits(const struct fi_rx_attr *h, struct fi_rx_attr *r)
{
	if (h == NULL)
		return true;
	if ((h->caps & ~r->caps) || (h->msg_order & ~r->msg_order) ||
	    (h->comp_order & ~r->comp_order) || h->total_buffered_recv > 0 ||
	    h->size > r->size || h->iov_limit > r->iov_limit ||
	    (h->op_flags & ~(uint64_t)FI_COMPLETION))
		return false;
	if (h->caps)
		r->caps = h->caps;
	r->op_flags = h->op_flags;
	return true;
}

static bool
vf_domain_fits(uint32_t version, const struct fi_info *hints, struct fi_info *fi)
{
	const struct fi_domain_attr *h = hints->domain_attr;
	struct fi_domain_attr *d = fi->domain_attr;
	int mr_mode;

	mr_mode = vf_mr_mode_for(version, hints, fi->caps);
	if (mr_mode < 0)
		return false;
	d->mr_mode = mr_mode;
	if (h == NULL)
		return true;
	if (vf_str_differs(h->name, d->name) || h->data_progress == FI_PROGRESS_AUTO ||
	    h->cq_data_size > d->cq_data_size || (h->caps & ~d->caps) ||
	    h->av_type > FI_AV_TABLE || h->max_ep_tx_ctx > 1 || h->max_ep_rx_ctx > 1 ||
	    h->max_ep_stx_ctx > 0 || h->max_ep_srx_ctx > 0 || h->cntr_cnt > 0 ||
	    h->auth_key_size > 0)
		return false;
	/* FI_THREAD_SAFE serves every threading level; report the one asked */
	if (h->threading != FI_THREAD_UNSPEC)
		d->threading = h->threading;
	/* connections are made by threads of the provider, so control
	 * progresses by itself, which meets a request for manual progress */
	if (h->control_progress != FI_PROGRESS_UNSPEC)
		d->control_progress = h->control_progress;
	if (h->av_type != FI_AV_UNSPEC)
		d->av_type = h->av_type;
	return true;
}

/* Does the provider's @p fi meet @p hints? Narrows @p fi to what was asked. */
static bool
vf_info_fits(uint32_t version, const struct fi_info *hints, struct fi_info *fi)
{
	uint64_t caps;

	if (!vf_caps_for(hints->caps, &caps))
		return false;
	fi->caps = caps;
	fi->tx_attr->caps = caps & VF_TX_CAPS;
	fi->rx_attr->caps = caps & VF_RX_CAPS;
	/* FI_CONTEXT: receives link through the application's context */
	if (!(hints->mode & FI_CONTEXT))
		return false;
	if (hints->addr_format != FI_FORMAT_UNSPEC)
		return false;
	if (fi->ep_attr->type == FI_EP_MSG) {
		if (hints->caps & FI_DIRECTED_RECV)
			return false;
		fi->caps &= ~(uint64_t)FI_DIRECTED_RECV;
		fi->rx_attr->caps &= ~(uint64_t)FI_DIRECTED_RECV;
	}
	if (hints->ep_attr) {
		const struct fi_ep_attr *e = hints->ep_attr;

		if ((e->type != FI_EP_UNSPEC && e->type != fi->ep_attr->type) ||
		    e->tx_ctx_cnt > 1 || e->rx_ctx_cnt > 1 || e->auth_key_size > 0 ||
		    e->max_msg_size > fi->ep_attr->max_msg_size)
			return false;
	}
	if (hints->fabric_attr && vf_str_differs(hints->fabric_attr->name, VF_FABRIC_NAME))
		return false;
	if ((hints->dest_addr != NULL && !vf_name_valid(hints->dest_addr, hints->dest_addrlen)) ||
	    (hints->src_addr != NULL && !vf_name_valid(hints->src_addr, hints->src_addrlen)))
		return false;
	return vf_tx_fits(hints->tx_attr, fi->tx_attr) && vf_rx_fits(hints->rx_attr, fi->rx_attr) &&
	       vf_domain_fits(version, hints, fi);
}

static struct fi_info *
vf_info_new(const char *nic, const VIP_NIC_ATTRIBUTES *attr, enum fi_ep_type type)
{
	struct fi_info *fi = fi_allocinfo();
	size_t msg_max = attr->MaxRegisterBlockBytes;

	if (fi == NULL)
		return NULL;
	if (msg_max > VF_MSG_MAX)
		msg_max = VF_MSG_MAX;
	fi->caps = VF_CAPS;
	fi->mode = FI_CONTEXT;
	fi->addr_format = FI_FORMAT_UNSPEC;

	fi->tx_attr->caps = VF_CAPS & VF_TX_CAPS;
	fi->tx_attr->mode = FI_CONTEXT;
	fi->tx_attr->op_flags = FI_TRANSMIT_COMPLETE;
	fi->tx_attr->msg_order = FI_ORDER_SAS;
	fi->tx_attr->comp_order = FI_ORDER_NONE;
	fi->tx_attr->inject_size = VF_INJECT_MAX;
	fi->tx_attr->size = VF_QUEUE_SIZE;
	fi->tx_attr->iov_limit = 1;
	fi->tx_attr->rma_iov_limit = 1;

	fi->rx_attr->caps = VF_CAPS & VF_RX_CAPS;
	fi->rx_attr->mode = FI_CONTEXT;
	fi->rx_attr->msg_order = FI_ORDER_SAS;
	fi->rx_attr->comp_order = FI_ORDER_NONE;
	fi->rx_attr->size = VF_QUEUE_SIZE;
	fi->rx_attr->iov_limit = 1;

	fi->ep_attr->type = type;
	if (type == FI_EP_MSG) {
		/* a connection has one peer: nothing to direct a receive to */
		fi->caps &= ~(uint64_t)FI_DIRECTED_RECV;
		fi->rx_attr->caps &= ~(uint64_t)FI_DIRECTED_RECV;
	}
	fi->ep_attr->protocol = FI_PROTO_UNSPEC;
	fi->ep_attr->protocol_version = 1;
	fi->ep_attr->max_msg_size = msg_max;
	fi->ep_attr->mem_tag_format = VF_TAG_FORMAT;
	fi->ep_attr->tx_ctx_cnt = 1;
	fi->ep_attr->rx_ctx_cnt = 1;

	fi->domain_attr->name = strdup(nic);
	fi->domain_attr->threading = FI_THREAD_SAFE;
	fi->domain_attr->control_progress = FI_PROGRESS_AUTO;
	fi->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
	fi->domain_attr->av_type = FI_AV_UNSPEC;
	fi->domain_attr->mr_mode = VF_MR_RMA;
	fi->domain_attr->mr_key_size = sizeof(VIP_MEM_HANDLE);
	fi->domain_attr->cq_data_size = sizeof(uint64_t);
	fi->domain_attr->cq_cnt = 256;
	fi->domain_attr->ep_cnt = 256;
	fi->domain_attr->tx_ctx_cnt = 256;
	fi->domain_attr->rx_ctx_cnt = 256;
	fi->domain_attr->max_ep_tx_ctx = 1;
	fi->domain_attr->max_ep_rx_ctx = 1;
	fi->domain_attr->mr_iov_limit = 1;
	fi->domain_attr->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
	fi->domain_attr->mr_cnt = attr->MaxRegisterRegions;

	fi->fabric_attr->name = strdup(VF_FABRIC_NAME);
	fi->fabric_attr->prov_version = VF_PROV_VERSION;
	if (fi->domain_attr->name == NULL || fi->fabric_attr->name == NULL) {
		fi_freeinfo(fi);
		return NULL;
	}
	return fi;
}

static int
vf_addr_dup(void **dst, size_t *dstlen, const void *src, size_t len)
{
	*dst = malloc(len);
	if (*dst == NULL)
		return -FI_ENOMEM;
	memcpy(*dst, src, len);
	*dstlen = len;
	return 0;
}

/* One fi_info of endpoint type @p type for @p hints, or NULL (-@p *ret). */
static struct fi_info *
vf_info_for(uint32_t version, const char *nic, const VIP_NIC_ATTRIBUTES *attr,
	    enum fi_ep_type type, const struct fi_info *hints, const struct vf_addrs *addrs,
	    int *ret)
{
	struct fi_info *fi = vf_info_new(nic, attr, type);

	*ret = -FI_ENOMEM;
	if (fi == NULL)
		return NULL;
	*ret = -FI_ENODATA;
	if (hints == NULL) {
		if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
			fi->domain_attr->mr_mode = FI_MR_BASIC;
	} else if (!vf_info_fits(version, hints, fi)) {
		fi_freeinfo(fi);
		return NULL;
	}
	*ret = -FI_ENOMEM;
	if ((addrs->has_src &&
	     vf_addr_dup(&fi->src_addr, &fi->src_addrlen, &addrs->src, sizeof(addrs->src))) ||
	    (!addrs->has_src && hints && hints->src_addr &&
	     vf_addr_dup(&fi->src_addr, &fi->src_addrlen, hints->src_addr, hints->src_addrlen)) ||
	    (addrs->has_dest &&
	     vf_addr_dup(&fi->dest_addr, &fi->dest_addrlen, &addrs->dest, sizeof(addrs->dest))) ||
	    (!addrs->has_dest && hints && hints->dest_addr &&
	     vf_addr_dup(&fi->dest_addr, &fi->dest_addrlen, hints->dest_addr,
			 hints->dest_addrlen))) {
		fi_freeinfo(fi);
		return NULL;
	}
	*ret = 0;
	return fi;
}

static int
vf_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
	   const struct fi_info *hints, struct fi_info **info)
{
	static const enum fi_ep_type types[] = { FI_EP_RDM, FI_EP_MSG };
	const char *nic = vf_params()->nic;
	struct vf_addrs addrs = { .has_src = false };
	struct fi_info **tail = info;
	VIP_NIC_ATTRIBUTES attr;
	int ret, last = -FI_ENODATA;
	unsigned t;

	*info = NULL;
	if (flags & VF_UTIL_ASKS)
		return -FI_ENODATA;
	if (hints && hints->domain_attr && hints->domain_attr->name)
		nic = hints->domain_attr->name;
	ret = vf_nic_query(nic, &attr, node, service, flags, &addrs);
	if (ret)
		return ret;
	/* RDM first: what an application that names no type gets first */
	for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		struct fi_info *fi = vf_info_for(version, nic, &attr, types[t], hints, &addrs, &ret);

		if (fi == NULL) {
			if (ret != -FI_ENODATA)
				last = ret;
			continue;
		}
		*tail = fi;
		tail = &fi->next;
	}
	return *info != NULL ? 0 : last;
}

/* ---------------------------------------------------------------------- */
/* Event queue: the RDM endpoint reports nothing on it, but applications
 * (fi_pingpong) open one and may write their own events. */

static ssize_t
vf_eq_read_locked(struct vf_eq *q, uint32_t *event, void *buf, size_t len, uint64_t flags)
{
	struct vf_eq_event *ev = vf_list_first(&q->events, struct vf_eq_event, link);
	size_t n;

	if (ev == NULL)
		return -FI_EAGAIN;
	if (ev->error)
		return -FI_EAVAIL;      /* fi_eq_readerr takes it */
	n = ev->len < len ? ev->len : len;
	if (event)
		*event = ev->event;
	memcpy(buf, ev->buf, n);
	if (!(flags & FI_PEEK)) {
		vf_list_del(&ev->link);
		free(ev);
	}
	return (ssize_t)n;
}

static ssize_t
vf_eq_read(struct fid_eq *eq, uint32_t *event, void *buf, size_t len, uint64_t flags)
{
	struct vf_eq *q = vf_container_of(eq, struct vf_eq, eq);
	ssize_t ret;

	pthread_mutex_lock(&q->lock);
	ret = vf_eq_read_locked(q, event, buf, len, flags);
	pthread_mutex_unlock(&q->lock);
	return ret;
}

static ssize_t
vf_eq_readerr(struct fid_eq *eq, struct fi_eq_err_entry *buf, uint64_t flags)
{
	struct vf_eq *q = vf_container_of(eq, struct vf_eq, eq);
	struct vf_eq_event *ev;
	ssize_t ret = -FI_EAGAIN;

	pthread_mutex_lock(&q->lock);
	ev = vf_list_first(&q->events, struct vf_eq_event, link);
	if (ev != NULL && ev->error) {
		memcpy(buf, ev->buf, sizeof(*buf));
		ret = (ssize_t)sizeof(*buf);
		if (!(flags & FI_PEEK)) {
			vf_list_del(&ev->link);
			free(ev);
		}
	}
	pthread_mutex_unlock(&q->lock);
	return ret;
}

static ssize_t
vf_eq_write(struct fid_eq *eq, uint32_t event, const void *buf, size_t len, uint64_t flags)
{
	struct vf_eq *q = vf_container_of(eq, struct vf_eq, eq);
	struct vf_eq_event *ev;

	(void)flags;
	ev = malloc(sizeof(*ev) + len);
	if (ev == NULL)
		return -FI_ENOMEM;
	ev->event = event;
	ev->error = false;
	ev->len = len;
	memcpy(ev->buf, buf, len);
	pthread_mutex_lock(&q->lock);
	vf_list_add_tail(&q->events, &ev->link);
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
	return (ssize_t)len;
}

static ssize_t
vf_eq_sread(struct fid_eq *eq, uint32_t *event, void *buf, size_t len, int timeout,
	    uint64_t flags)
{
	struct vf_eq *q = vf_container_of(eq, struct vf_eq, eq);
	struct timespec until;
	ssize_t ret;

	clock_gettime(CLOCK_REALTIME, &until);
	if (timeout >= 0) {
		until.tv_sec += timeout / 1000;
		until.tv_nsec += (long)(timeout % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
	}
	pthread_mutex_lock(&q->lock);
	while ((ret = vf_eq_read_locked(q, event, buf, len, flags)) == -FI_EAGAIN) {
		if (timeout < 0)
			pthread_cond_wait(&q->cond, &q->lock);
		else if (pthread_cond_timedwait(&q->cond, &q->lock, &until) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&q->lock);
	return ret;
}

static const char *
vf_eq_strerror(struct fid_eq *eq, int prov_errno, const void *err_data, char *buf, size_t len)
{
	(void)eq;
	(void)err_data;
	if (buf && len)
		snprintf(buf, len, "%s", fi_strerror(prov_errno));
	return fi_strerror(prov_errno);
}

static int
vf_eq_close(struct fid *fid)
{
	struct vf_eq *q = vf_container_of(fid, struct vf_eq, eq.fid);
	struct vf_list *pos, *tmp;

	vf_list_for_each_safe(pos, tmp, &q->events)
		free(vf_container_of(pos, struct vf_eq_event, link));
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
	free(q);
	return 0;
}

static struct fi_ops vf_eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = vf_eq_close,
	.bind = vf_no_bind,
	.control = vf_no_control,
	.ops_open = vf_no_ops_open,
	.tostr = vf_no_tostr,
	.ops_set = vf_no_ops_set,
};

static struct fi_ops_eq vf_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = vf_eq_read,
	.readerr = vf_eq_readerr,
	.write = vf_eq_write,
	.sread = vf_eq_sread,
	.strerror = vf_eq_strerror,
};

static int
vf_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq, void *context)
{
	struct vf_eq *q;

	(void)fabric;
	if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC)
		return -FI_ENOSYS;
	q = calloc(1, sizeof(*q));
	if (q == NULL)
		return -FI_ENOMEM;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
	vf_list_init(&q->events);
	q->eq.fid.fclass = FI_CLASS_EQ;
	q->eq.fid.context = context;
	q->eq.fid.ops = &vf_eq_fi_ops;
	q->eq.ops = &vf_eq_ops;
	*eq = &q->eq;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Fabric */

static int
vf_fabric_close(struct fid *fid)
{
	free(vf_container_of(fid, struct vf_fabric, fid.fid));
	return 0;
}

static int
vf_domain2(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom,
	   uint64_t flags, void *context)
{
	if (flags)
		return -FI_EBADFLAGS;
	return vf_domain_open(fabric, info, dom, context);
}

static struct fi_ops vf_fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = vf_fabric_close,
	.bind = vf_no_bind,
	.control = vf_no_control,
	.ops_open = vf_no_ops_open,
	.tostr = vf_no_tostr,
	.ops_set = vf_no_ops_set,
};

static int
vf_no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr, struct fid_wait **waitset)
{
	(void)fabric;
	(void)attr;
	(void)waitset;
	return -FI_ENOSYS;
}

static int
vf_no_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	(void)fabric;
	(void)fids;
	(void)count;
	return -FI_ENOSYS;
}

static struct fi_ops_fabric vf_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = vf_domain_open,
	.passive_ep = vf_passive_ep,
	.eq_open = vf_eq_open,
	.wait_open = vf_no_wait_open,
	.trywait = vf_no_trywait,
	.domain2 = vf_domain2,
};

static int
vf_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	struct vf_fabric *f;

	if (strcmp(attr->name, VF_FABRIC_NAME) != 0)
		return -FI_EINVAL;
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return -FI_ENOMEM;
	f->fid.fid.fclass = FI_CLASS_FABRIC;
	f->fid.fid.context = context;
	f->fid.fid.ops = &vf_fabric_fi_ops;
	f->fid.ops = &vf_fabric_ops;
	*fabric = &f->fid;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Provider */

static void
vf_cleanup(void)
{
}

struct fi_provider vf_prov = {
	.name = VF_PROV_NAME,
	.version = VF_PROV_VERSION,
	.fi_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
	.getinfo = vf_getinfo,
	.fabric = vf_fabric_open,
	.cleanup = vf_cleanup,
};

/* what libfabric looks up in lib<name>-fi.so (the macro below defines it) */
struct fi_provider *fi_prov_ini(void);

FI_EXT_INI
{
	vf_params_define();
	vf_params_read();
	return &vf_prov;
}
