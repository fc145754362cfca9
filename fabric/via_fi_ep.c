/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RDM endpoint: the entry points of fi_msg, fi_tagged and fi_rma, the
 * software tag matching (posted and unexpected queues), completions, and
 * the endpoint object itself.
 *
 * Matching follows libfabric's rules: FI_MSG and FI_TAGGED are separate
 * spaces; a receive takes the oldest matching message, a message the
 * oldest matching receive; messages from one peer arrive in the order they
 * were sent (they all travel over one VI, vf_peer::tx), which is
 * FI_ORDER_SAS.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "via_fi.h"

/* ---------------------------------------------------------------------- */
/* Requests and completions */

/* Requests are kept for reuse (up to VF_REQ_POOL): no allocation per
 * operation once the endpoint runs. */
#define VF_REQ_POOL 256

void
vf_req_free(struct vf_req *r)
{
	struct vf_ep *ep = r->ep;

	if (r->reg)
		vf_reg_put(ep->dom, r->reg);
	free(r->owned);
	if (ep->req_pool_len < VF_REQ_POOL) {
		r->link.next = ep->req_pool;
		ep->req_pool = &r->link;
		ep->req_pool_len++;
	} else {
		free(r);
	}
}

/*
 * Report @p r on its CQ (an error always, a success unless the binding is
 * selective and the operation did not ask for it; injects never) and free it.
 */
void
vf_req_complete(struct vf_req *r)
{
	struct vf_ep *ep = r->ep;
	bool rx = r->type == VF_REQ_RECV;
	struct vf_cq *cq = rx ? ep->rx_cq : ep->tx_cq;
	bool selective = rx ? ep->rx_selective : ep->tx_selective;

	if (rx)
		ep->rx_count--;
	else
		ep->tx_count--;
	if (ep->stopping) {
		/* the endpoint is closing: nothing is reported any more */
	} else if (cq == NULL || (r->op_flags & FI_INJECT)) {
		if (r->err)
			FI_WARN(&vf_prov, FI_LOG_EP_DATA, "operation without completion failed: %s\n",
				fi_strerror(r->err));
	} else if (r->err) {
		struct fi_cq_err_entry e = {
			.op_context = r->context,
			.flags = r->cq_flags,
			.len = rx ? r->rlen : 0,
			.buf = rx ? r->buf : NULL,
			.data = rx ? r->data : 0,
			.tag = rx ? r->tag : 0,
			.olen = r->mlen > r->rlen ? r->mlen - r->rlen : 0,
			.err = r->err,
			.prov_errno = r->err,
		};

		if (vf_cq_push_err(cq, &e))
			FI_WARN(&vf_prov, FI_LOG_CQ, "no memory for an error completion\n");
	} else if (!selective || (r->op_flags & FI_COMPLETION)) {
		struct fi_cq_tagged_entry e = {
			.op_context = r->context,
			.flags = r->cq_flags,
			.len = rx ? r->rlen : 0,
			.buf = rx ? r->buf : NULL,
			.data = rx ? r->data : 0,
			.tag = rx ? r->tag : 0,
		};

		if (vf_cq_push(cq, &e, rx ? r->msg_src : FI_ADDR_NOTAVAIL))
			FI_WARN(&vf_prov, FI_LOG_CQ, "no memory for a completion\n");
	}
	vf_req_free(r);
}

static struct vf_req *
vf_req_new(struct vf_ep *ep, enum vf_req_type type, void *context, uint64_t op_flags)
{
	bool rx = type == VF_REQ_RECV;
	struct vf_req *r;

	if (rx ? ep->rx_count >= ep->rx_size : ep->tx_count >= ep->tx_size)
		return NULL;
	if (ep->req_pool != NULL) {
		r = vf_container_of(ep->req_pool, struct vf_req, link);
		ep->req_pool = r->link.next;
		ep->req_pool_len--;
		memset(r, 0, sizeof(*r));
	} else if ((r = calloc(1, sizeof(*r))) == NULL) {
		return NULL;
	}
	vf_list_init(&r->link);
	r->type = type;
	r->ep = ep;
	r->context = context;
	r->op_flags = op_flags;
	r->src = FI_ADDR_UNSPEC;
	r->msg_src = FI_ADDR_NOTAVAIL;
	if (rx)
		ep->rx_count++;
	else
		ep->tx_count++;
	return r;
}

/* ---------------------------------------------------------------------- */
/* Addresses and matching */

fi_addr_t
vf_peer_addr(struct vf_ep *ep, struct vf_peer *p)
{
	if (ep->av == NULL)
		return FI_ADDR_NOTAVAIL;
	if (p->addr_gen != ep->av->gen) {
		p->addr = vf_av_find(ep->av, &p->name);
		p->addr_gen = ep->av->gen;
	}
	return p->addr;
}

/* The peer behind @p addr of the endpoint's AV, or NULL. */
static struct vf_peer *
vf_addr_peer(struct vf_ep *ep, fi_addr_t addr)
{
	const struct vf_name *name;
	struct vf_peer *p;

	if (ep->av == NULL)
		return NULL;
	if (ep->addr_peer_gen != ep->av->gen) {
		memset(ep->addr_peer, 0, ep->addr_peer_len * sizeof(*ep->addr_peer));
		ep->addr_peer_gen = ep->av->gen;
	}
	if (addr < ep->addr_peer_len && ep->addr_peer[addr] != NULL)
		return ep->addr_peer[addr];
	name = vf_av_name(ep->av, addr);
	if (name == NULL)
		return NULL;
	p = vf_peer_get(ep, name);
	if (p == NULL)
		return NULL;
	if (addr >= ep->addr_peer_len) {
		size_t len = ep->addr_peer_len ? ep->addr_peer_len : 64;
		struct vf_peer **a;

		while (len <= addr)
			len *= 2;
		a = realloc(ep->addr_peer, len * sizeof(*a));
		if (a == NULL)
			return p;
		memset(a + ep->addr_peer_len, 0, (len - ep->addr_peer_len) * sizeof(*a));
		ep->addr_peer = a;
		ep->addr_peer_len = len;
	}
	ep->addr_peer[addr] = p;
	return p;
}

/* Where an operation to @p dest goes: its peer in the AV, or on an
 * FI_EP_MSG endpoint the one it is connected to. NULL, and *@p err, if
 * none. */
static struct vf_peer *
vf_dest_peer(struct vf_ep *ep, fi_addr_t dest, ssize_t *err)
{
	struct vf_peer *p;

	if (ep->msg) {
		p = ep->msg_connected ? ep->msg_peer : NULL;
		*err = -FI_ENOTCONN;
	} else {
		p = vf_addr_peer(ep, dest);
		*err = -FI_EINVAL;
	}
	return p;
}

static bool
vf_src_ok(struct vf_ep *ep, fi_addr_t want, struct vf_peer *src)
{
	return want == FI_ADDR_UNSPEC || vf_peer_addr(ep, src) == want;
}

/* The oldest posted receive that takes a message from @p src with @p tag. */
struct vf_req *
vf_match_posted(struct vf_ep *ep, bool tagged, struct vf_peer *src, uint64_t tag)
{
	struct vf_list *pos, *tmp;

	vf_list_for_each_safe(pos, tmp, &ep->posted[tagged]) {
		struct vf_req *r = vf_container_of(pos, struct vf_req, link);

		if (tagged && ((r->tag ^ tag) & ~r->ignore))
			continue;
		if (!vf_src_ok(ep, r->src, src))
			continue;
		vf_list_del(&r->link);
		return r;
	}
	return NULL;
}

/* The oldest unclaimed unexpected message for a receive of @p tag/@p ignore. */
static struct vf_unexp *
vf_match_unexp(struct vf_ep *ep, bool tagged, fi_addr_t src, uint64_t tag, uint64_t ignore)
{
	struct vf_list *pos, *tmp;

	vf_list_for_each_safe(pos, tmp, &ep->unexp[tagged]) {
		struct vf_unexp *ux = vf_container_of(pos, struct vf_unexp, link);

		if (ux->claimed)
			continue;
		if (tagged && ((ux->tag ^ tag) & ~ignore))
			continue;
		if (!vf_src_ok(ep, src, ux->peer))
			continue;
		return ux;
	}
	return NULL;
}

void
vf_ux_free(struct vf_unexp *ux)
{
	free(ux->buf);
	free(ux);
}

/* ---------------------------------------------------------------------- */
/* Posting */

static ssize_t
vf_post_send(struct vf_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest,
	     uint64_t tag, uint64_t data, void *context, uint64_t flags, bool tagged)
{
	struct vf_peer *p;
	struct vf_req *r;
	ssize_t ret = 0;

	pthread_mutex_lock(&ep->dom->lock);
	if (!ep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	if ((flags & FI_INJECT) && len > VF_INJECT_MAX) {
		ret = -FI_EINVAL;
		goto out;
	}
	p = vf_dest_peer(ep, dest, &ret);
	if (p == NULL)
		goto out;
	ret = 0;
	if ((flags & FI_INJECT) && vf_inject_now(p, buf, len, tag, data, flags, tagged))
		goto out;
	r = vf_req_new(ep, VF_REQ_SEND, context, flags);
	if (r == NULL) {
		vf_progress(ep);
		ret = -FI_EAGAIN;
		goto out;
	}
	r->peer = p;
	r->cq_flags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
	r->buf = (uint8_t *)(uintptr_t)buf;
	r->len = len;
	r->tag = tag;
	r->data = data;
	r->mr = vf_mr_from_desc(desc, buf, len);
	/* an inject's buffer is the caller's again when this returns */
	if ((flags & FI_INJECT) && len > 0) {
		r->owned = malloc(len);
		if (r->owned == NULL) {
			r->op_flags &= ~(uint64_t)FI_INJECT;
			vf_req_free(r);
			ep->tx_count--;
			ret = -FI_ENOMEM;
			goto out;
		}
		memcpy(r->owned, buf, len);
		r->buf = r->owned;
		r->mr = NULL;
	}
	/* the stack of this thread is never registered (vf_on_own_stack) */
	r->rndv = len > ep->dom->p.eager_max && !(flags & FI_INJECT) &&
		  ((r->mr != NULL && (r->mr->access & FI_REMOTE_READ)) ||
		   !vf_on_own_stack(buf, len));
	if (p->self) {
		vf_self_send(r);
	} else {
		vf_list_add_tail(&p->txq, &r->link);
		vf_peer_push(p);
	}
out:
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

static ssize_t
vf_post_recv(struct vf_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src, uint64_t tag,
	     uint64_t ignore, void *context, uint64_t flags, bool tagged)
{
	struct vf_unexp *ux;
	struct vf_req *r;
	ssize_t ret = 0;

	pthread_mutex_lock(&ep->dom->lock);
	if (!ep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	r = vf_req_new(ep, VF_REQ_RECV, context, flags);
	if (r == NULL) {
		vf_progress(ep);
		ret = -FI_EAGAIN;
		goto out;
	}
	r->cq_flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
	r->buf = buf;
	r->len = len;
	r->mr = vf_mr_from_desc(desc, buf, len);
	r->tag = tag;
	r->ignore = tagged ? ignore : ~(uint64_t)0;
	if (ep->caps & FI_DIRECTED_RECV)
		r->src = src;
	ux = vf_match_unexp(ep, tagged, r->src, tag, r->ignore);
	if (ux != NULL) {
		vf_list_del(&ux->link);
		vf_ux_deliver(r, ux);
	} else {
		vf_list_add_tail(&ep->posted[tagged], &r->link);
	}
out:
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

static ssize_t
vf_post_rma(struct vf_ep *ep, enum vf_req_type type, const void *buf, size_t len, void *desc,
	    fi_addr_t dest, uint64_t addr, uint64_t key, uint64_t data, void *context,
	    uint64_t flags)
{
	struct vf_peer *p;
	struct vf_req *r;
	ssize_t ret = 0;

	pthread_mutex_lock(&ep->dom->lock);
	if (!ep->enabled || !(ep->caps & FI_RMA)) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	if (((flags & FI_INJECT) && len > VF_INJECT_MAX) || key > UINT32_MAX) {
		ret = -FI_EINVAL;
		goto out;
	}
	p = vf_dest_peer(ep, dest, &ret);
	if (p == NULL)
		goto out;
	ret = 0;
	r = vf_req_new(ep, type, context, flags);
	if (r == NULL) {
		vf_progress(ep);
		ret = -FI_EAGAIN;
		goto out;
	}
	r->peer = p;
	r->cq_flags = FI_RMA | (type == VF_REQ_READ ? FI_READ : FI_WRITE);
	r->buf = (uint8_t *)(uintptr_t)buf;
	r->len = len;
	r->mr = vf_mr_from_desc(desc, buf, len);
	r->raddr = addr;
	r->rkey = (uint32_t)key;
	r->data = data;
	if ((flags & FI_INJECT) && len > 0) {
		r->owned = malloc(len);
		if (r->owned == NULL) {
			r->op_flags &= ~(uint64_t)FI_INJECT;
			vf_req_free(r);
			ep->tx_count--;
			ret = -FI_ENOMEM;
			goto out;
		}
		memcpy(r->owned, buf, len);
		r->buf = r->owned;
		r->mr = NULL;
	}
	if (p->self) {
		vf_self_rma(r);
	} else {
		vf_list_add_tail(&p->txq, &r->link);
		vf_peer_push(p);
	}
out:
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

#define VF_EP(fid) vf_container_of(fid, struct vf_ep, ep)

/* fi_msg */

static ssize_t
vf_recv(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src, void *context)
{
	struct vf_ep *ep = VF_EP(fep);

	return vf_post_recv(ep, buf, len, desc, src, 0, 0, context, ep->rx_op_flags, false);
}

static ssize_t
vf_recvv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count, fi_addr_t src,
	 void *context)
{
	if (count > 1)
		return -FI_EINVAL;
	return vf_recv(fep, count ? iov[0].iov_base : NULL, count ? iov[0].iov_len : 0,
		       desc ? desc[0] : NULL, src, context);
}

static ssize_t
vf_recvmsg(struct fid_ep *fep, const struct fi_msg *msg, uint64_t flags)
{
	if (msg->iov_count > 1)
		return -FI_EINVAL;
	return vf_post_recv(VF_EP(fep), msg->iov_count ? msg->msg_iov[0].iov_base : NULL,
			    msg->iov_count ? msg->msg_iov[0].iov_len : 0,
			    msg->desc ? msg->desc[0] : NULL, msg->addr, 0, 0, msg->context, flags,
			    false);
}

static ssize_t
vf_send(struct fid_ep *fep, const void *buf, size_t len, void *desc, fi_addr_t dest,
	void *context)
{
	struct vf_ep *ep = VF_EP(fep);

	return vf_post_send(ep, buf, len, desc, dest, 0, 0, context, ep->tx_op_flags, false);
}

static ssize_t
vf_sendv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count, fi_addr_t dest,
	 void *context)
{
	if (count > 1)
		return -FI_EINVAL;
	return vf_send(fep, count ? iov[0].iov_base : NULL, count ? iov[0].iov_len : 0,
		       desc ? desc[0] : NULL, dest, context);
}

static ssize_t
vf_sendmsg(struct fid_ep *fep, const struct fi_msg *msg, uint64_t flags)
{
	if (msg->iov_count > 1)
		return -FI_EINVAL;
	return vf_post_send(VF_EP(fep), msg->iov_count ? msg->msg_iov[0].iov_base : NULL,
			    msg->iov_count ? msg->msg_iov[0].iov_len : 0,
			    msg->desc ? msg->desc[0] : NULL, msg->addr, 0, msg->data, msg->context,
			    flags, false);
}

static ssize_t
vf_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest)
{
	return vf_post_send(VF_EP(fep), buf, len, NULL, dest, 0, 0, NULL, FI_INJECT, false);
}

static ssize_t
vf_senddata(struct fid_ep *fep, const void *buf, size_t len, void *desc, uint64_t data,
	    fi_addr_t dest, void *context)
{
	struct vf_ep *ep = VF_EP(fep);

	return vf_post_send(ep, buf, len, desc, dest, 0, data, context,
			    ep->tx_op_flags | FI_REMOTE_CQ_DATA, false);
}

static ssize_t
vf_injectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data, fi_addr_t dest)
{
	return vf_post_send(VF_EP(fep), buf, len, NULL, dest, 0, data, NULL,
			    FI_INJECT | FI_REMOTE_CQ_DATA, false);
}

static struct fi_ops_msg vf_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = vf_recv,
	.recvv = vf_recvv,
	.recvmsg = vf_recvmsg,
	.send = vf_send,
	.sendv = vf_sendv,
	.sendmsg = vf_sendmsg,
	.inject = vf_inject,
	.senddata = vf_senddata,
	.injectdata = vf_injectdata,
};

/* fi_tagged */

static ssize_t
vf_trecv(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src, uint64_t tag,
	 uint64_t ignore, void *context)
{
	struct vf_ep *ep = VF_EP(fep);

	return vf_post_recv(ep, buf, len, desc, src, tag, ignore, context, ep->rx_op_flags, true);
}

static ssize_t
vf_trecvv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count, fi_addr_t src,
	  uint64_t tag, uint64_t ignore, void *context)
{
	if (count > 1)
		return -FI_EINVAL;
	return vf_trecv(fep, count ? iov[0].iov_base : NULL, count ? iov[0].iov_len : 0,
			desc ? desc[0] : NULL, src, tag, ignore, context);
}

/* The completion of a peek (FI_PEEK): the message found, or FI_ENOMSG. */
static void
vf_peek_report(struct vf_ep *ep, const struct fi_msg_tagged *msg, struct vf_unexp *ux)
{
	if (ep->rx_cq == NULL)
		return;
	if (ux == NULL) {
		struct fi_cq_err_entry e = {
			.op_context = msg->context,
			.flags = FI_TAGGED | FI_RECV,
			.tag = msg->tag,
			.err = FI_ENOMSG,
			.prov_errno = FI_ENOMSG,
		};

		vf_cq_push_err(ep->rx_cq, &e);
	} else {
		struct fi_cq_tagged_entry e = {
			.op_context = msg->context,
			.flags = FI_TAGGED | FI_RECV | (ux->has_data ? FI_REMOTE_CQ_DATA : 0),
			.len = ux->len,
			.data = ux->data,
			.tag = ux->tag,
		};

		vf_cq_push(ep->rx_cq, &e, vf_peer_addr(ep, ux->peer));
	}
}

/* Is @p ux still an unexpected message of the endpoint (a claimed one)? */
static bool
vf_ux_listed(struct vf_ep *ep, struct vf_unexp *ux)
{
	struct vf_list *pos, *tmp;

	vf_list_for_each_safe(pos, tmp, &ep->unexp[1])
		if (vf_container_of(pos, struct vf_unexp, link) == ux)
			return true;
	return false;
}

/*
 * FI_PEEK, FI_CLAIM and FI_DISCARD (fi_tagged(3)): a peek reports the
 * oldest matching unexpected message; with FI_CLAIM it is set aside for
 * the caller, and the context (FI_CONTEXT) remembers it for the
 * fi_trecvmsg(FI_CLAIM) that takes it later.
 */
static ssize_t
vf_tpeek(struct vf_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags)
{
	struct fi_context *ctx = msg->context;
	fi_addr_t src = (ep->caps & FI_DIRECTED_RECV) ? msg->addr : FI_ADDR_UNSPEC;
	struct vf_unexp *ux;
	struct vf_req *r;

	if (flags & FI_PEEK) {
		ux = vf_match_unexp(ep, true, src, msg->tag, msg->ignore);
		vf_peek_report(ep, msg, ux);
		if (ux == NULL)
			return 0;
		if (flags & FI_DISCARD) {
			vf_list_del(&ux->link);
			vf_ux_drop(ux);
		} else if (flags & FI_CLAIM) {
			ux->claimed = true;
			ctx->internal[0] = ux;
		}
		return 0;
	}
	/* FI_CLAIM: take the message a peek claimed */
	ux = ctx->internal[0];
	if (ux == NULL || !vf_ux_listed(ep, ux) || !ux->claimed)
		return -FI_EINVAL;
	r = vf_req_new(ep, VF_REQ_RECV, msg->context, flags);
	if (r == NULL)
		return -FI_EAGAIN;
	vf_list_del(&ux->link);
	r->cq_flags = FI_RECV | FI_TAGGED;
	if (flags & FI_DISCARD) {
		r->peer = ux->peer;
		r->msg_src = vf_peer_addr(ep, ux->peer);
		r->tag = ux->tag;
		vf_ux_drop(ux);
		vf_req_complete(r);
		return 0;
	}
	r->buf = msg->iov_count ? msg->msg_iov[0].iov_base : NULL;
	r->len = msg->iov_count ? msg->msg_iov[0].iov_len : 0;
	r->mr = vf_mr_from_desc(msg->desc ? msg->desc[0] : NULL, r->buf, r->len);
	vf_ux_deliver(r, ux);
	return 0;
}

static ssize_t
vf_trecvmsg(struct fid_ep *fep, const struct fi_msg_tagged *msg, uint64_t flags)
{
	struct vf_ep *ep = VF_EP(fep);
	ssize_t ret;

	if (msg->iov_count > 1)
		return -FI_EINVAL;
	if (!(flags & (FI_PEEK | FI_CLAIM)))
		return vf_post_recv(ep, msg->iov_count ? msg->msg_iov[0].iov_base : NULL,
				    msg->iov_count ? msg->msg_iov[0].iov_len : 0,
				    msg->desc ? msg->desc[0] : NULL, msg->addr, msg->tag,
				    msg->ignore, msg->context, flags, true);
	pthread_mutex_lock(&ep->dom->lock);
	if (!ep->enabled) {
		ret = -FI_EOPBADSTATE;
	} else {
		/* a peek looks at what has arrived by now */
		vf_progress(ep);
		ret = vf_tpeek(ep, msg, flags);
	}
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

static ssize_t
vf_tsend(struct fid_ep *fep, const void *buf, size_t len, void *desc, fi_addr_t dest,
	 uint64_t tag, void *context)
{
	struct vf_ep *ep = VF_EP(fep);

	return vf_post_send(ep, buf, len, desc, dest, tag, 0, context, ep->tx_op_flags, true);
}

static ssize_t
vf_tsendv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count, fi_addr_t dest,
	  uint64_t tag, void *context)
{
	if (count > 1)
		return -FI_EINVAL;
	return vf_tsend(fep, count ? iov[0].iov_base : NULL, count ? iov[0].iov_len : 0,
			desc ? desc[0] : NULL, dest, tag, context);
}

static ssize_t
vf_tsendmsg(struct fid_ep *fep, const struct fi_msg_tagged *msg, uint64_t flags)
{
	if (msg->iov_count > 1)
		return -FI_EINVAL;
	return vf_post_send(VF_EP(fep), msg->iov_count ? msg->msg_iov[0].iov_base : NULL,
			    msg->iov_count ? msg->msg_iov[0].iov_len : 0,
			    msg->desc ? msg->desc[0] : NULL, msg->addr, msg->tag, msg->data,
			    msg->context, flags, true);
}

static ssize_t
vf_tinject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest, uint64_t tag)
{
	return vf_post_send(VF_EP(fep), buf, len, NULL, dest, tag, 0, NULL, FI_INJECT, true);
}

static ssize_t
vf_tsenddata(struct fid_ep *fep, const void *buf, size_t len, void *desc, uint64_t data,
	     fi_addr_t dest, uint64_t tag, void *context)
{
	struct vf_ep *ep = VF_EP(fep);

	return vf_post_send(ep, buf, len, desc, dest, tag, data, context,
			    ep->tx_op_flags | FI_REMOTE_CQ_DATA, true);
}

static ssize_t
vf_tinjectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data, fi_addr_t dest,
	       uint64_t tag)
{
	return vf_post_send(VF_EP(fep), buf, len, NULL, dest, tag, data, NULL,
			    FI_INJECT | FI_REMOTE_CQ_DATA, true);
}

static struct fi_ops_tagged vf_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = vf_trecv,
	.recvv = vf_trecvv,
	.recvmsg = vf_trecvmsg,
	.send = vf_tsend,
	.sendv = vf_tsendv,
	.sendmsg = vf_tsendmsg,
	.inject = vf_tinject,
	.senddata = vf_tsenddata,
	.injectdata = vf_tinjectdata,
};

/* fi_rma */

/* fi_readv and fi_writev, of one iov entry (the endpoints' iov_limit and
 * rma_iov_limit, via_fi.c). */
static ssize_t
vf_rma_iov(struct fid_ep *fep, enum vf_req_type type, const struct iovec *iov, void **desc,
	   size_t count, fi_addr_t peer, uint64_t addr, uint64_t key, void *context)
{
	struct vf_ep *ep = VF_EP(fep);

	if (count != 1)
		return -FI_EINVAL;
	return vf_post_rma(ep, type, iov[0].iov_base, iov[0].iov_len, desc ? desc[0] : NULL, peer,
			   addr, key, 0, context, ep->tx_op_flags);
}

/* fi_readmsg and fi_writemsg: one local and one remote segment, of one
 * length; remote CQ data goes with a write only. */
static ssize_t
vf_rma_msg(struct fid_ep *fep, enum vf_req_type type, const struct fi_msg_rma *msg,
	   uint64_t flags)
{
	if (msg->iov_count != 1 || msg->rma_iov_count != 1 ||
	    msg->rma_iov[0].len != msg->msg_iov[0].iov_len)
		return -FI_EINVAL;
	return vf_post_rma(VF_EP(fep), type, msg->msg_iov[0].iov_base, msg->msg_iov[0].iov_len,
			   msg->desc ? msg->desc[0] : NULL, msg->addr, msg->rma_iov[0].addr,
			   msg->rma_iov[0].key, type == VF_REQ_WRITE ? msg->data : 0, msg->context,
			   flags);
}

static ssize_t
vf_read(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src, uint64_t addr,
	uint64_t key, void *context)
{
	struct vf_ep *ep = VF_EP(fep);

	return vf_post_rma(ep, VF_REQ_READ, buf, len, desc, src, addr, key, 0, context,
			   ep->tx_op_flags);
}

static ssize_t
vf_readv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count, fi_addr_t src,
	 uint64_t addr, uint64_t key, void *context)
{
	return vf_rma_iov(fep, VF_REQ_READ, iov, desc, count, src, addr, key, context);
}

static ssize_t
vf_readmsg(struct fid_ep *fep, const struct fi_msg_rma *msg, uint64_t flags)
{
	return vf_rma_msg(fep, VF_REQ_READ, msg, flags);
}

static ssize_t
vf_write(struct fid_ep *fep, const void *buf, size_t len, void *desc, fi_addr_t dest,
	 uint64_t addr, uint64_t key, void *context)
{
	struct vf_ep *ep = VF_EP(fep);

	return vf_post_rma(ep, VF_REQ_WRITE, buf, len, desc, dest, addr, key, 0, context,
			   ep->tx_op_flags);
}

static ssize_t
vf_writev(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count, fi_addr_t dest,
	  uint64_t addr, uint64_t key, void *context)
{
	return vf_rma_iov(fep, VF_REQ_WRITE, iov, desc, count, dest, addr, key, context);
}

static ssize_t
vf_writemsg(struct fid_ep *fep, const struct fi_msg_rma *msg, uint64_t flags)
{
	return vf_rma_msg(fep, VF_REQ_WRITE, msg, flags);
}

static ssize_t
vf_rma_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest, uint64_t addr,
	      uint64_t key)
{
	return vf_post_rma(VF_EP(fep), VF_REQ_WRITE, buf, len, NULL, dest, addr, key, 0, NULL,
			   FI_INJECT);
}

static ssize_t
vf_writedata(struct fid_ep *fep, const void *buf, size_t len, void *desc, uint64_t data,
	     fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	struct vf_ep *ep = VF_EP(fep);

	return vf_post_rma(ep, VF_REQ_WRITE, buf, len, desc, dest, addr, key, data, context,
			   ep->tx_op_flags | FI_REMOTE_CQ_DATA);
}

static ssize_t
vf_rma_injectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data, fi_addr_t dest,
		  uint64_t addr, uint64_t key)
{
	return vf_post_rma(VF_EP(fep), VF_REQ_WRITE, buf, len, NULL, dest, addr, key, data, NULL,
			   FI_INJECT | FI_REMOTE_CQ_DATA);
}

static struct fi_ops_rma vf_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = vf_read,
	.readv = vf_readv,
	.readmsg = vf_readmsg,
	.write = vf_write,
	.writev = vf_writev,
	.writemsg = vf_writemsg,
	.inject = vf_rma_inject,
	.writedata = vf_writedata,
	.injectdata = vf_rma_injectdata,
};

/* ---------------------------------------------------------------------- */
/* fi_ops_ep, fi_ops_cm */

/* A posted receive that nothing matched yet can be cancelled. */
static ssize_t
vf_cancel(fid_t fid, void *context)
{
	struct vf_ep *ep = vf_container_of(fid, struct vf_ep, ep.fid);
	struct vf_list *pos, *tmp;
	int q;

	pthread_mutex_lock(&ep->dom->lock);
	for (q = 0; q < 2; q++) {
		vf_list_for_each_safe(pos, tmp, &ep->posted[q]) {
			struct vf_req *r = vf_container_of(pos, struct vf_req, link);

			if (r->context != context)
				continue;
			vf_list_del(&r->link);
			r->err = FI_ECANCELED;
			vf_req_complete(r);
			pthread_mutex_unlock(&ep->dom->lock);
			return 0;
		}
	}
	pthread_mutex_unlock(&ep->dom->lock);
	return -FI_ENOENT;
}

int
vf_no_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	(void)fid;
	(void)level;
	(void)optname;
	(void)optval;
	(void)optlen;
	return -FI_ENOPROTOOPT;
}

int
vf_no_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	(void)fid;
	(void)level;
	(void)optname;
	(void)optval;
	(void)optlen;
	return -FI_ENOPROTOOPT;
}

static int
vf_no_ctx(struct fid_ep *sep, int index, void *attr, struct fid_ep **ep, void *context)
{
	(void)sep;
	(void)index;
	(void)attr;
	(void)ep;
	(void)context;
	return -FI_ENOSYS;
}

static int
vf_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr, struct fid_ep **ep,
	  void *context)
{
	return vf_no_ctx(sep, index, attr, ep, context);
}

static int
vf_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr, struct fid_ep **ep,
	  void *context)
{
	return vf_no_ctx(sep, index, attr, ep, context);
}

static ssize_t
vf_rx_size_left(struct fid_ep *fep)
{
	struct vf_ep *ep = VF_EP(fep);
	ssize_t n;

	pthread_mutex_lock(&ep->dom->lock);
	n = (ssize_t)(ep->rx_size - ep->rx_count);
	pthread_mutex_unlock(&ep->dom->lock);
	return n;
}

static ssize_t
vf_tx_size_left(struct fid_ep *fep)
{
	struct vf_ep *ep = VF_EP(fep);
	ssize_t n;

	pthread_mutex_lock(&ep->dom->lock);
	n = (ssize_t)(ep->tx_size - ep->tx_count);
	pthread_mutex_unlock(&ep->dom->lock);
	return n;
}

static struct fi_ops_ep vf_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = vf_cancel,
	.getopt = vf_no_getopt,
	.setopt = vf_no_setopt,
	.tx_ctx = vf_tx_ctx,
	.rx_ctx = vf_rx_ctx,
	.rx_size_left = vf_rx_size_left,
	.tx_size_left = vf_tx_size_left,
};

static int
vf_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct vf_ep *ep = vf_container_of(fid, struct vf_ep, ep.fid);
	size_t want = sizeof(ep->name);

	if (*addrlen < want) {
		*addrlen = want;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, &ep->name, want);
	*addrlen = want;
	return 0;
}

static int
vf_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct vf_ep *ep = vf_container_of(fid, struct vf_ep, ep.fid);
	int ret = 0;

	pthread_mutex_lock(&ep->dom->lock);
	if (ep->enabled || !vf_name_valid(addr, addrlen) ||
	    memcmp(((const struct vf_name *)addr)->mac, ep->dom->mac, 6) != 0)
		ret = -FI_EINVAL;
	else
		memcpy(&ep->name, addr, sizeof(ep->name));
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

static int
vf_getpeer(struct fid_ep *fep, void *addr, size_t *addrlen)
{
	struct vf_ep *ep = VF_EP(fep);
	size_t want = sizeof(struct vf_name);
	int ret = 0;

	pthread_mutex_lock(&ep->dom->lock);
	if (!ep->msg || ep->msg_peer == NULL)
		ret = -FI_ENOTCONN;
	else if (*addrlen < want)
		ret = -FI_ETOOSMALL;
	else
		memcpy(addr, &ep->msg_peer->name, want);
	*addrlen = want;
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

/* FI_EP_MSG: ask the peer at @p addr (the connector thread); FI_CONNECTED
 * or an error follows on the endpoint's event queue. */
static int
vf_connect(struct fid_ep *fep, const void *addr, const void *param, size_t paramlen)
{
	struct vf_ep *ep = VF_EP(fep);
	struct vf_peer *p;
	int ret = 0;

	/* VIA's connection requests carry no private data */
	if (paramlen > 0 || !vf_name_valid(addr, sizeof(struct vf_name)))
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->dom->lock);
	if (!ep->msg || !ep->enabled || ep->eq == NULL || ep->msg_peer != NULL) {
		ret = -FI_EOPBADSTATE;
	} else if ((p = vf_peer_get(ep, addr)) == NULL) {
		ret = -FI_ENOMEM;
	} else {
		ep->msg_peer = p;
		vf_connect_kick(p);
	}
	pthread_mutex_unlock(&ep->dom->lock);
	(void)param;
	return ret;
}

static int
vf_listen(struct fid_pep *pep)
{
	(void)pep;
	return -FI_ENOSYS;
}

/* FI_EP_MSG: answer the request the endpoint was made from (its fi_info's
 * handle) with its VI; FI_CONNECTED follows on its event queue. */
static int
vf_accept(struct fid_ep *fep, const void *param, size_t paramlen)
{
	struct vf_ep *ep = VF_EP(fep);
	struct vf_connreq *cr;
	int ret;

	(void)param;
	if (paramlen > 0)
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->dom->lock);
	cr = ep->connreq;
	if (!ep->msg || !ep->enabled || ep->eq == NULL || cr == NULL) {
		pthread_mutex_unlock(&ep->dom->lock);
		return -FI_EOPBADSTATE;
	}
	ep->connreq = NULL;
	pthread_mutex_unlock(&ep->dom->lock);
	ret = vf_accept_conn(ep, cr->ch, &cr->peer, &cr->rattr);
	vf_connreq_free(cr);
	return ret;
}

static int
vf_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen)
{
	(void)pep;
	(void)handle;
	(void)param;
	(void)paramlen;
	return -FI_ENOSYS;
}

static int
vf_shutdown(struct fid_ep *fep, uint64_t flags)
{
	struct vf_ep *ep = VF_EP(fep);

	(void)flags;
	if (!ep->msg)
		return -FI_ENOSYS;
	pthread_mutex_lock(&ep->dom->lock);
	vf_msg_shutdown(ep);
	pthread_mutex_unlock(&ep->dom->lock);
	return 0;
}

static int
vf_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc, void *context)
{
	(void)ep;
	(void)addr;
	(void)flags;
	(void)mc;
	(void)context;
	return -FI_ENOSYS;
}

static struct fi_ops_cm vf_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = vf_setname,
	.getname = vf_getname,
	.getpeer = vf_getpeer,
	.connect = vf_connect,
	.listen = vf_listen,
	.accept = vf_accept,
	.reject = vf_reject,
	.shutdown = vf_shutdown,
	.join = vf_join,
};

/* ---------------------------------------------------------------------- */
/* The endpoint object */

static int
vf_ep_bind_cq(struct vf_ep *ep, struct vf_cq *cq, uint64_t flags)
{
	unsigned i;

	if (!(flags & (FI_TRANSMIT | FI_RECV)))
		return -FI_EINVAL;
	for (i = 0; i < cq->neps && cq->eps[i] != ep; i++)
		;
	if (i == cq->neps) {
		if (cq->neps == sizeof(cq->eps) / sizeof(cq->eps[0]))
			return -FI_ENOSPC;
		cq->eps[cq->neps++] = ep;
	}
	if (flags & FI_TRANSMIT) {
		ep->tx_cq = cq;
		ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
	}
	if (flags & FI_RECV) {
		ep->rx_cq = cq;
		ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
	}
	return 0;
}

static int
vf_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct vf_ep *ep = vf_container_of(fid, struct vf_ep, ep.fid);
	int ret = 0;

	pthread_mutex_lock(&ep->dom->lock);
	if (ep->enabled) {
		ret = -FI_EOPBADSTATE;
	} else if (bfid->fclass == FI_CLASS_CQ) {
		ret = vf_ep_bind_cq(ep, vf_container_of(bfid, struct vf_cq, cq.fid), flags);
	} else if (bfid->fclass == FI_CLASS_AV) {
		if (ep->av)
			ret = -FI_EINVAL;
		else {
			ep->av = vf_container_of(bfid, struct vf_av, av.fid);
			ep->av->eps++;
		}
	} else if (bfid->fclass == FI_CLASS_EQ) {
		/* an RDM endpoint reports no connection events */
		if (ep->msg)
			ep->eq = vf_container_of(bfid, struct vf_eq, eq.fid);
	} else if (bfid->fclass == FI_CLASS_CNTR) {
		ret = -FI_ENOSYS;
	} else {
		ret = -FI_EINVAL;
	}
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

static int
vf_ep_enable(struct vf_ep *ep)
{
	VIP_RETURN rc;
	int ret;

	if (ep->enabled)
		return 0;
	if (ep->tx_cq == NULL && ep->rx_cq == NULL)
		return -FI_ENOCQ;
	if (ep->msg ? ep->eq == NULL : ep->av == NULL)
		return ep->msg ? -FI_ENOEQ : -FI_ENOAV;
	ep->vcq_entries = 1024;
	rc = VipCreateCQ(ep->dom->nic, ep->vcq_entries, &ep->vcq);
	if (rc != VIP_SUCCESS)
		return vf_vip_errno(rc);
	ret = vf_conn_start_threads(ep);
	if (ret) {
		VipDestroyCQ(ep->vcq);
		ep->vcq = NULL;
		return ret;
	}
	ep->enabled = true;
	return 0;
}

static int
vf_ep_control(struct fid *fid, int command, void *arg)
{
	struct vf_ep *ep = vf_container_of(fid, struct vf_ep, ep.fid);
	uint64_t *flags = arg;
	int ret = 0;

	pthread_mutex_lock(&ep->dom->lock);
	switch (command) {
	case FI_ENABLE:
		ret = vf_ep_enable(ep);
		break;
	case FI_GETOPSFLAG:
		*flags = (*flags & FI_TRANSMIT) ? ep->tx_op_flags : ep->rx_op_flags;
		break;
	case FI_SETOPSFLAG:
		if (*flags & FI_TRANSMIT)
			ep->tx_op_flags = *flags & ~(uint64_t)FI_TRANSMIT;
		else
			ep->rx_op_flags = *flags & ~(uint64_t)FI_RECV;
		break;
	default:
		ret = -FI_ENOSYS;
	}
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

static void
vf_cq_unbind(struct vf_cq *cq, struct vf_ep *ep)
{
	unsigned i;

	if (cq == NULL)
		return;
	for (i = 0; i < cq->neps; i++)
		if (cq->eps[i] == ep) {
			cq->eps[i] = cq->eps[--cq->neps];
			return;
		}
}

static int
vf_ep_close(struct fid *fid)
{
	struct vf_ep *ep = vf_container_of(fid, struct vf_ep, ep.fid);
	struct vf_domain *d = ep->dom;
	struct vf_list *pos, *tmp;
	int q;

	/* stops the connection threads and frees every connection and peer */
	vf_conn_stop(ep);
	pthread_mutex_lock(&d->lock);
	for (q = 0; q < 2; q++) {
		vf_list_for_each_safe(pos, tmp, &ep->posted[q])
			vf_req_free(vf_container_of(pos, struct vf_req, link));
		vf_list_for_each_safe(pos, tmp, &ep->unexp[q])
			vf_ux_free(vf_container_of(pos, struct vf_unexp, link));
	}
	vf_cq_unbind(ep->tx_cq, ep);
	if (ep->rx_cq != ep->tx_cq)
		vf_cq_unbind(ep->rx_cq, ep);
	if (ep->av)
		ep->av->eps--;
	/* a thread in fi_cq_sread sleeps in VipCQWait on vcq: it returns
	 * within its slice, and no new one comes now the CQs are unbound */
	while (ep->cq_waiters > 0) {
		pthread_mutex_unlock(&d->lock);
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
		pthread_mutex_lock(&d->lock);
	}
	d->refs--;
	pthread_mutex_unlock(&d->lock);
	if (ep->vcq)
		VipDestroyCQ(ep->vcq);
	pthread_cond_destroy(&ep->cjob_cond);
	while (ep->req_pool != NULL) {
		struct vf_list *next = ep->req_pool->next;

		free(vf_container_of(ep->req_pool, struct vf_req, link));
		ep->req_pool = next;
	}
	free(ep->addr_peer);
	free(ep);
	return 0;
}

static struct fi_ops vf_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = vf_ep_close,
	.bind = vf_ep_bind,
	.control = vf_ep_control,
	.ops_open = vf_no_ops_open,
	.tostr = vf_no_tostr,
	.ops_set = vf_no_ops_set,
};

int
vf_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **epp, void *context)
{
	struct vf_domain *d = vf_container_of(domain, struct vf_domain, fid);
	struct vf_ep *ep;
	int q;

	if (info == NULL || info->ep_attr == NULL ||
	    (info->ep_attr->type != FI_EP_RDM && info->ep_attr->type != FI_EP_MSG))
		return -FI_EINVAL;
	/* a request is accepted with a VI of its own session (via_fi_cm.c) */
	if (info->handle != NULL &&
	    (info->handle->fclass != FI_CLASS_CONNREQ ||
	     vf_container_of(info->handle, struct vf_connreq, fid)->pep->sess != d->sess))
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (ep == NULL)
		return -FI_ENOMEM;
	ep->dom = d;
	ep->caps = info->caps;
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	ep->tx_size = info->tx_attr && info->tx_attr->size ? info->tx_attr->size : VF_QUEUE_SIZE;
	ep->rx_size = info->rx_attr && info->rx_attr->size ? info->rx_attr->size : VF_QUEUE_SIZE;
	ep->msg = info->ep_attr->type == FI_EP_MSG;
	if (info->handle != NULL)
		ep->connreq = vf_container_of(info->handle, struct vf_connreq, fid);
	/* FI_SOURCE: the name of a service (via_fi_addr.c), else its own */
	if (vf_name_valid(info->src_addr, info->src_addrlen) &&
	    ((const struct vf_name *)info->src_addr)->ep_id != 0 && info->handle == NULL) {
		memcpy(&ep->name, info->src_addr, sizeof(ep->name));
		if (memcmp(ep->name.mac, d->mac, 6) != 0) {
			free(ep);
			return -FI_EADDRNOTAVAIL;
		}
	} else {
		vf_name_fresh(&ep->name, d->mac);
	}
	for (q = 0; q < 2; q++) {
		vf_list_init(&ep->posted[q]);
		vf_list_init(&ep->unexp[q]);
	}
	vf_list_init(&ep->peers);
	vf_list_init(&ep->cjobs);
	pthread_cond_init(&ep->cjob_cond, NULL);
	ep->ep.fid.fclass = FI_CLASS_EP;
	ep->ep.fid.context = context;
	ep->ep.fid.ops = &vf_ep_fi_ops;
	ep->ep.ops = &vf_ep_ops;
	ep->ep.cm = &vf_cm_ops;
	ep->ep.msg = &vf_msg_ops;
	ep->ep.tagged = &vf_tagged_ops;
	ep->ep.rma = &vf_rma_ops;
	pthread_mutex_lock(&d->lock);
	ep->self = vf_peer_get(ep, &ep->name);
	if (ep->self == NULL) {
		pthread_mutex_unlock(&d->lock);
		pthread_cond_destroy(&ep->cjob_cond);
		free(ep);
		return -FI_ENOMEM;
	}
	d->refs++;
	pthread_mutex_unlock(&d->lock);
	*epp = &ep->ep;
	return 0;
}
