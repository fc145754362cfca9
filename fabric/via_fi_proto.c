/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The protocol over connected VIs (docs/design.md, section 16).
 *
 * Every message starts with a vf_hdr. A message of up to eager_max bytes
 * is copied into send slots and sent in fragments of the VI's
 * MaxTransferSize (EAGER, then FRAG); the receiver copies each into the
 * matched receive's buffer, or into a buffer of the unexpected message. A
 * larger message is announced (RTS) with its registered address, and the
 * receiver, once it matches, reads it with RDMA Reads straight into the
 * receive's buffer and answers FIN, which completes the send.
 *
 * VIA drops a message that finds no receive descriptor, and on a reliable
 * level breaks the connection, so a sender sends only what the peer has
 * posted descriptors for: credits, returned in every message's header and,
 * when nothing else goes back, in CREDIT messages. The last credits are
 * kept for FIN and CREDIT (VF_CREDITS_*), so that credits always flow
 * back however full both directions are.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "via_fi.h"

/* ---------------------------------------------------------------------- */
/* Slots and posting */

static struct vf_slot *
vf_slot_get(struct vf_conn *c)
{
	struct vf_slot *s = c->free_slots;

	if (s != NULL) {
		c->free_slots = s->next;
		c->slots_free--;
	}
	return s;
}

void
vf_slot_put(struct vf_conn *c, struct vf_slot *s)
{
	s->req = NULL;
	s->bounce_in = false;
	s->next = c->free_slots;
	c->free_slots = s;
	c->slots_free++;
}

int
vf_conn_post_rx(struct vf_conn *c, unsigned i)
{
	VIP_DESCRIPTOR *d = &c->rx_desc[i];
	VIP_RETURN rc;

	memset(d, 0, sizeof(*d));
	d->CS.Control = VIP_CONTROL_OP_SENDRECV;
	d->CS.SegCount = 1;
	d->CS.Length = (VIP_UINT32)c->mts;
	d->DS[0].Local.Data.Address = c->rx_buf + i * c->mts;
	d->DS[0].Local.Handle = c->mh;
	d->DS[0].Local.Length = (VIP_UINT32)c->mts;
	rc = VipPostRecv(c->vi, d, c->mh);
	if (rc != VIP_SUCCESS)
		return vf_vip_errno(rc);
	c->rx_posted++;
	return 0;
}

static int
vf_post(struct vf_conn *c, struct vf_slot *s)
{
	VIP_RETURN rc = VipPostSend(c->vi, s->desc, c->mh);

	if (rc != VIP_SUCCESS) {
		FI_WARN(&vf_prov, FI_LOG_EP_DATA, "VipPostSend: %d\n", rc);
		vf_slot_put(c, s);
		return vf_vip_errno(rc);
	}
	return 0;
}

/* Send the message in @p s (header first, @p n bytes), with the credits we owe. */
static int
vf_send_msg(struct vf_conn *c, struct vf_slot *s, size_t n)
{
	struct vf_hdr *h = (struct vf_hdr *)(void *)s->buf;
	unsigned give = c->owed > UINT16_MAX ? UINT16_MAX : c->owed;
	VIP_DESCRIPTOR *d = s->desc;
	int ret;

	h->credits = (uint16_t)give;
	h->rsvd = 0;
	memset(d, 0, sizeof(*d));
	d->CS.Control = VIP_CONTROL_OP_SENDRECV;
	d->CS.SegCount = 1;
	d->CS.Length = (VIP_UINT32)n;
	d->DS[0].Local.Data.Address = s->buf;
	d->DS[0].Local.Handle = c->mh;
	d->DS[0].Local.Length = (VIP_UINT32)n;
	ret = vf_post(c, s);
	if (ret == 0) {
		c->owed -= give;
		c->credits--;
	}
	return ret;
}

/* An RDMA Write or Read of @p len bytes between local and remote memory. */
static int
vf_post_rdma(struct vf_conn *c, struct vf_slot *s, uint16_t op, uint64_t raddr, uint32_t rkey,
	     void *local, VIP_MEM_HANDLE lkey, size_t len)
{
	VIP_DESCRIPTOR *d = s->desc;

	memset(d, 0, sizeof(*d));
	d->CS.Control = op;
	d->CS.SegCount = 2;
	d->CS.Length = (VIP_UINT32)len;
	d->DS[0].Remote.Data.AddressBits = raddr;
	d->DS[0].Remote.Handle = rkey;
	d->DS[1].Local.Data.Address = local;
	d->DS[1].Local.Handle = lkey;
	d->DS[1].Local.Length = (VIP_UINT32)len;
	return vf_post(c, s);
}

static struct vf_hdr *
vf_hdr_init(struct vf_slot *s, enum vf_op op)
{
	struct vf_hdr *h = (struct vf_hdr *)(void *)s->buf;

	memset(h, 0, sizeof(*h));
	h->op = (uint8_t)op;
	return h;
}

/* ---------------------------------------------------------------------- */
/* Sending the head of the peer's queue */

/* Fragments of an eager send while credits and slots last; true once all are posted. */
static bool
vf_push_eager(struct vf_conn *c, struct vf_req *r)
{
	const size_t cap = c->mts - sizeof(struct vf_hdr);

	do {
		size_t chunk = r->len - r->posted < cap ? r->len - r->posted : cap;
		struct vf_slot *s;
		struct vf_hdr *h;

		if (c->credits < VF_CREDITS_DATA || (s = vf_slot_get(c)) == NULL)
			return false;
		h = vf_hdr_init(s, r->started ? VF_OP_FRAG : VF_OP_EAGER);
		h->flags = ((r->cq_flags & FI_TAGGED) ? VF_HF_TAGGED : 0) |
			   ((r->op_flags & FI_REMOTE_CQ_DATA) ? VF_HF_DATA : 0);
		h->len = r->len;
		h->tag = r->tag;
		h->data = r->data;
		if (chunk)
			memcpy(h + 1, r->buf + r->posted, chunk);
		if (vf_send_msg(c, s, sizeof(*h) + chunk) != 0)
			return false;
		s->req = r;
		r->inflight++;
		r->posted += chunk;
		r->started = true;
	} while (r->posted < r->len);
	return true;
}

/*
 * An inject that fits one message, to a peer whose VI has credits and a
 * slot and nothing queued before it: copied into the slot and posted at
 * once, with no request (an inject has no completion). False: it takes
 * the ordinary way.
 */
bool
vf_inject_now(struct vf_peer *p, const void *buf, size_t len, uint64_t tag, uint64_t data,
	      uint64_t flags, bool tagged)
{
	struct vf_conn *c = p->tx;
	struct vf_slot *s;
	struct vf_hdr *h;

	if (c == NULL || c->state != VF_CONN_UP || !vf_list_empty(&p->txq) ||
	    len > c->mts - sizeof(*h) || c->credits < VF_CREDITS_DATA ||
	    (s = vf_slot_get(c)) == NULL)
		return false;
	h = vf_hdr_init(s, VF_OP_EAGER);
	h->flags = (tagged ? VF_HF_TAGGED : 0) | ((flags & FI_REMOTE_CQ_DATA) ? VF_HF_DATA : 0);
	h->len = len;
	h->tag = tag;
	h->data = data;
	if (len)
		memcpy(h + 1, buf, len);
	return vf_send_msg(c, s, sizeof(*h) + len) == 0;
}

/* A rendezvous send: its buffer registered, the RTS posted. */
static bool
vf_push_rts(struct vf_conn *c, struct vf_req *r)
{
	bool app_mr = r->mr != NULL && (r->mr->access & FI_REMOTE_READ);
	struct vf_slot *s;
	struct vf_hdr *h;
	struct vf_rts *rts;

	if (!app_mr && r->reg == NULL && vf_reg_get(c->ep->dom, r->buf, r->len, &r->reg) != 0) {
		r->err = FI_EIO;
		return true;
	}
	if (c->credits < VF_CREDITS_DATA || (s = vf_slot_get(c)) == NULL)
		return false;
	r->cookie = ++c->ep->next_cookie;
	h = vf_hdr_init(s, VF_OP_RTS);
	h->flags = ((r->cq_flags & FI_TAGGED) ? VF_HF_TAGGED : 0) |
		   ((r->op_flags & FI_REMOTE_CQ_DATA) ? VF_HF_DATA : 0);
	h->len = r->len;
	h->tag = r->tag;
	h->data = r->data;
	rts = (struct vf_rts *)(void *)(h + 1);
	rts->addr = (uintptr_t)r->buf;
	rts->cookie = r->cookie;
	rts->key = app_mr ? r->mr->mh : r->reg->mh;
	rts->rsvd = 0;
	if (vf_send_msg(c, s, sizeof(*h) + sizeof(*rts)) != 0)
		return false;
	r->started = true;
	return true;
}

/* fi_write: RDMA Writes (from the app's registration, else through a
 * slot), then the remote CQ data if any. */
static bool
vf_push_write(struct vf_conn *c, struct vf_req *r)
{
	struct vf_slot *s;

	while (r->posted < r->len) {
		size_t chunk = r->len - r->posted < c->mts ? r->len - r->posted : c->mts;
		void *local = r->buf + r->posted;
		VIP_MEM_HANDLE lkey;

		if ((s = vf_slot_get(c)) == NULL)
			return false;
		if (r->mr) {
			lkey = r->mr->mh;
		} else {
			memcpy(s->buf, local, chunk);
			local = s->buf;
			lkey = c->mh;
		}
		if (vf_post_rdma(c, s, VIP_CONTROL_OP_RDMAWRITE, r->raddr + r->posted, r->rkey, local,
				 lkey, chunk) != 0)
			return false;
		s->req = r;
		r->inflight++;
		r->posted += chunk;
		r->started = true;
	}
	if ((r->op_flags & FI_REMOTE_CQ_DATA) && !r->wdata_sent) {
		struct vf_hdr *h;

		if (c->credits < VF_CREDITS_DATA || (s = vf_slot_get(c)) == NULL)
			return false;
		/* after the writes on the same VI: placed before it is seen */
		h = vf_hdr_init(s, VF_OP_WDATA);
		h->len = r->len;
		h->data = r->data;
		if (vf_send_msg(c, s, sizeof(*h)) != 0)
			return false;
		s->req = r;
		r->inflight++;
		r->wdata_sent = true;
		r->started = true;
	}
	return true;
}

/* fi_read: RDMA Reads into the app's registration, else into slots
 * copied out at completion. */
static bool
vf_push_read(struct vf_conn *c, struct vf_req *r)
{
	while (r->posted < r->len) {
		size_t chunk = r->len - r->posted < c->mts ? r->len - r->posted : c->mts;
		struct vf_slot *s = vf_slot_get(c);
		void *local;
		VIP_MEM_HANDLE lkey;

		if (s == NULL)
			return false;
		if (r->mr) {
			local = r->buf + r->posted;
			lkey = r->mr->mh;
		} else {
			local = s->buf;
			lkey = c->mh;
			s->bounce_in = true;
			s->off = r->posted;
			s->len = chunk;
		}
		if (vf_post_rdma(c, s, VIP_CONTROL_OP_RDMAREAD, r->raddr + r->posted, r->rkey, local,
				 lkey, chunk) != 0)
			return false;
		s->req = r;
		r->inflight++;
		r->posted += chunk;
		r->started = true;
	}
	return true;
}

/* Post from the head of the peer's queue over @p c, in order. */
static void
vf_push_txq(struct vf_conn *c)
{
	struct vf_peer *p = c->peer;
	struct vf_req *r;

	while ((r = vf_list_first(&p->txq, struct vf_req, link)) != NULL) {
		bool posted;

		if (r->type == VF_REQ_SEND)
			posted = r->rndv ? vf_push_rts(c, r) : vf_push_eager(c, r);
		else if (r->type == VF_REQ_WRITE)
			posted = vf_push_write(c, r);
		else
			posted = vf_push_read(c, r);
		if (!posted)
			return;
		vf_list_del(&r->link);
		if (r->type == VF_REQ_SEND && r->rndv && !r->err) {
			/* completes at its FIN */
			vf_list_add_tail(&p->rndv, &r->link);
		} else {
			r->done_posting = true;
			vf_req_check(r);
		}
	}
}

/* Rendezvous reads of receive @p r (into its buffer, or into slots copied
 * out at completion); true once all are posted. */
static bool
vf_push_reads(struct vf_conn *c, struct vf_req *r)
{
	while (r->posted < r->rlen) {
		size_t chunk = r->rlen - r->posted < c->mts ? r->rlen - r->posted : c->mts;
		struct vf_slot *s = vf_slot_get(c);
		VIP_MEM_HANDLE lkey = c->mh;
		void *local = s ? s->buf : NULL;

		if (s == NULL)
			return false;
		if (r->bounce) {
			s->bounce_in = true;
			s->off = r->posted;
			s->len = chunk;
		} else {
			local = r->buf + r->posted;
			lkey = r->mr ? r->mr->mh : r->reg->mh;
		}
		if (vf_post_rdma(c, s, VIP_CONTROL_OP_RDMAREAD, r->raddr + r->posted, r->rkey,
				 local, lkey, chunk) != 0)
			return false;
		s->req = r;
		r->inflight++;
		r->posted += chunk;
	}
	return true;
}

/*
 * Send what waits on @p c as far as credits and slots allow: FINs first
 * (they complete the peer's sends), then rendezvous reads, then the
 * peer's queue if @p c carries our messages, then a CREDIT if we owe many.
 */
void
vf_conn_push(struct vf_conn *c)
{
	struct vf_list *pos, *tmp;
	struct vf_slot *s;

	if (c->state != VF_CONN_UP)
		return;
	while (!vf_list_empty(&c->fins) && c->credits >= VF_CREDITS_FIN &&
	       (s = vf_slot_get(c)) != NULL) {
		struct vf_fin *f = vf_list_first(&c->fins, struct vf_fin, link);
		struct vf_hdr *h = vf_hdr_init(s, VF_OP_FIN);

		h->data = f->cookie;
		h->len = f->status;
		if (vf_send_msg(c, s, sizeof(*h)) != 0)
			break;
		vf_list_del(&f->link);
		free(f);
	}
	vf_list_for_each_safe(pos, tmp, &c->reads) {
		struct vf_req *r = vf_container_of(pos, struct vf_req, link);

		if (!vf_push_reads(c, r))
			break;
		vf_list_del(&r->link);
		r->done_posting = true;
		vf_req_check(r);
	}
	if (c->peer->tx == c)
		vf_push_txq(c);
	if (c->owed >= c->nrx / 2 && c->credits >= VF_CREDITS_CTRL &&
	    (s = vf_slot_get(c)) != NULL) {
		vf_hdr_init(s, VF_OP_CREDIT);
		vf_send_msg(c, s, sizeof(struct vf_hdr));
	}
}

void
vf_peer_push(struct vf_peer *p)
{
	if (p->tx != NULL)
		vf_conn_push(p->tx);
	else if (!vf_list_empty(&p->txq))
		vf_connect_kick(p);
}

/* A new connection: grant the peer the receives beyond its first credits. */
void
vf_conn_up(struct vf_conn *c)
{
	c->owed += c->nrx - VF_INIT_CREDITS;
	vf_conn_push(c);
}

/* ---------------------------------------------------------------------- */
/* Completion of requests */

/* A rendezvous receive whose reads are done: FIN to the sender. */
static void
vf_rndv_finish(struct vf_req *r)
{
	struct vf_conn *c = r->conn;

	if (c != NULL && c->state == VF_CONN_UP) {
		struct vf_fin *f = malloc(sizeof(*f));

		if (f != NULL) {
			f->cookie = r->cookie;
			/* truncation is the receiver's business; the sender's
			 * data was read */
			f->status = r->err && r->err != FI_ETRUNC;
			vf_list_add_tail(&c->fins, &f->link);
		}
	}
	vf_req_complete(r);
}

/* Complete @p r if nothing of it is left to post or to complete. */
void
vf_req_check(struct vf_req *r)
{
	if (!r->done_posting || r->inflight > 0)
		return;
	if (r->type == VF_REQ_RECV)
		vf_rndv_finish(r);
	else
		vf_req_complete(r);
}

static int
vf_status_err(uint32_t st)
{
	if (!(st & VIP_STATUS_ERROR_MASK))
		return 0;
	if (st & VIP_STATUS_RDMA_PROT_ERROR)
		return FI_EACCES;
	if (st & VIP_STATUS_LENGTH_ERROR)
		return FI_EMSGSIZE;
	if (st & VIP_STATUS_DESC_FLUSHED_ERROR)
		return FI_ECANCELED;
	return FI_EIO;
}

/* A send-queue descriptor completed. */
static void
vf_tx_done(struct vf_conn *c, struct vf_slot *s)
{
	uint32_t st = s->desc->CS.Status;
	int err = vf_status_err(st);
	struct vf_req *r = s->req;

	if (r != NULL) {
		if (err && !r->err)
			r->err = err;
		else if (!err && s->bounce_in)
			memcpy(r->buf + s->off, s->buf, s->len);
		r->inflight--;
	}
	vf_slot_put(c, s);
	if (r != NULL)
		vf_req_check(r);
	/* a flushed or transport error: the VI is in the Error state */
	if (st & (VIP_STATUS_DESC_FLUSHED_ERROR | VIP_STATUS_TRANSPORT_ERROR)) {
		vf_conn_broken(c);
		return;
	}
	vf_conn_push(c);
}

/* ---------------------------------------------------------------------- */
/* Receiving */

/* What a receive learns when it matches a message. */
static void
vf_recv_matched(struct vf_req *r, struct vf_peer *p, uint64_t tag, uint64_t data, bool has_data,
		size_t len)
{
	r->peer = p;
	r->msg_src = vf_peer_addr(r->ep, p);
	r->tag = tag;
	r->data = data;
	if (has_data)
		r->cq_flags |= FI_REMOTE_CQ_DATA;
	r->mlen = len;
	r->rlen = len < r->len ? len : r->len;
	if (len > r->len)
		r->err = FI_ETRUNC;
}

static struct vf_unexp *
vf_ux_new(struct vf_peer *p, const struct vf_hdr *h)
{
	struct vf_unexp *ux = calloc(1, sizeof(*ux));

	if (ux == NULL)
		return NULL;
	ux->peer = p;
	ux->has_data = h->flags & VF_HF_DATA;
	ux->tag = h->tag;
	ux->data = h->data;
	ux->len = h->len;
	return ux;
}

static int
vf_rx_eager(struct vf_conn *c, const struct vf_hdr *h, const uint8_t *payload, size_t plen)
{
	struct vf_ep *ep = c->ep;
	bool tagged = h->flags & VF_HF_TAGGED;
	struct vf_unexp *ux;
	struct vf_req *r;

	if (c->rx_req || c->rx_ux || plen > h->len)
		return -EPROTO;
	r = vf_match_posted(ep, tagged, c->peer, h->tag);
	if (r != NULL) {
		vf_recv_matched(r, c->peer, h->tag, h->data, h->flags & VF_HF_DATA, h->len);
		if (plen && r->rlen)
			memcpy(r->buf, payload, plen < r->rlen ? plen : r->rlen);
		if (plen < h->len) {
			c->rx_req = r;
			c->rx_off = plen;
			c->rx_len = h->len;
		} else {
			vf_req_complete(r);
		}
		return 0;
	}
	ux = vf_ux_new(c->peer, h);
	if (ux == NULL || (h->len && (ux->buf = malloc(h->len)) == NULL)) {
		free(ux);
		return -ENOMEM;
	}
	if (plen)
		memcpy(ux->buf, payload, plen);
	ux->complete = plen == h->len;
	vf_list_add_tail(&ep->unexp[tagged], &ux->link);
	if (!ux->complete) {
		c->rx_ux = ux;
		c->rx_off = plen;
		c->rx_len = h->len;
	}
	return 0;
}

static int
vf_rx_frag(struct vf_conn *c, const uint8_t *payload, size_t plen)
{
	struct vf_unexp *ux = c->rx_ux;
	struct vf_req *r = c->rx_req;

	if ((r == NULL && ux == NULL) || c->rx_off + plen > c->rx_len)
		return -EPROTO;
	if (r != NULL && c->rx_off < r->rlen)
		memcpy(r->buf + c->rx_off, payload,
		       plen < r->rlen - c->rx_off ? plen : r->rlen - c->rx_off);
	else if (ux != NULL)
		memcpy(ux->buf + c->rx_off, payload, plen);
	c->rx_off += plen;
	if (c->rx_off < c->rx_len)
		return 0;
	c->rx_req = NULL;
	c->rx_ux = NULL;
	if (r != NULL) {
		vf_req_complete(r);
		return 0;
	}
	ux->complete = true;
	if (ux->discard) {
		vf_ux_free(ux);
	} else if (ux->req != NULL) {
		r = ux->req;
		if (r->rlen)
			memcpy(r->buf, ux->buf, r->rlen);
		vf_ux_free(ux);
		vf_req_complete(r);
	}
	return 0;
}

static int
vf_rx_rts(struct vf_conn *c, const struct vf_hdr *h, const struct vf_rts *rts)
{
	struct vf_ep *ep = c->ep;
	bool tagged = h->flags & VF_HF_TAGGED;
	struct vf_unexp *ux;
	struct vf_req *r;

	if (c->rx_req || c->rx_ux)
		return -EPROTO;
	r = vf_match_posted(ep, tagged, c->peer, h->tag);
	if (r != NULL) {
		vf_recv_matched(r, c->peer, h->tag, h->data, h->flags & VF_HF_DATA, h->len);
		vf_rndv_start(r, c->peer, c, rts);
		return 0;
	}
	ux = vf_ux_new(c->peer, h);
	if (ux == NULL)
		return -ENOMEM;
	ux->rndv = true;
	ux->complete = true;
	ux->rts = *rts;
	vf_list_add_tail(&ep->unexp[tagged], &ux->link);
	return 0;
}

static void
vf_rx_fin(struct vf_conn *c, const struct vf_hdr *h)
{
	struct vf_list *pos, *tmp;

	vf_list_for_each_safe(pos, tmp, &c->peer->rndv) {
		struct vf_req *r = vf_container_of(pos, struct vf_req, link);

		if (r->cookie != h->data)
			continue;
		vf_list_del(&r->link);
		if (h->len)
			r->err = FI_EIO;
		vf_req_complete(r);
		return;
	}
}

/* The remote CQ data of an RMA write: an event at the target. */
static void
vf_rx_wdata(struct vf_conn *c, const struct vf_hdr *h)
{
	struct vf_ep *ep = c->ep;
	struct fi_cq_tagged_entry e = {
		.flags = FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
		.len = h->len,
		.data = h->data,
	};

	if (ep->rx_cq != NULL && !ep->stopping)
		vf_cq_push(ep->rx_cq, &e, vf_peer_addr(ep, c->peer));
}

static int
vf_rx_msg(struct vf_conn *c, const struct vf_hdr *h, size_t plen)
{
	const uint8_t *payload = (const uint8_t *)(h + 1);

	c->credits += h->credits;
	switch (h->op) {
	case VF_OP_EAGER:
		return vf_rx_eager(c, h, payload, plen);
	case VF_OP_FRAG:
		return vf_rx_frag(c, payload, plen);
	case VF_OP_RTS:
		if (plen < sizeof(struct vf_rts))
			return -EPROTO;
		return vf_rx_rts(c, h, (const struct vf_rts *)(const void *)payload);
	case VF_OP_FIN:
		vf_rx_fin(c, h);
		return 0;
	case VF_OP_CREDIT:
		return 0;
	case VF_OP_WDATA:
		vf_rx_wdata(c, h);
		return 0;
	default:
		return -EPROTO;
	}
}

/* Receive descriptor @p i completed: handle the message, post it again. */
static void
vf_rx(struct vf_conn *c, unsigned i)
{
	VIP_DESCRIPTOR *d = &c->rx_desc[i];
	uint32_t st = d->CS.Status;
	const struct vf_hdr *h = (const struct vf_hdr *)(const void *)(c->rx_buf + i * c->mts);
	int ret;

	c->rx_posted--;
	if (st & VIP_STATUS_ERROR_MASK) {
		/* flushed: the peer went away (or the VI broke) */
		vf_conn_broken(c);
		return;
	}
	if ((st & VIP_STATUS_OP_MASK) != VIP_STATUS_OP_RECEIVE || d->CS.Length < sizeof(*h))
		ret = -EPROTO;
	else
		ret = vf_rx_msg(c, h, d->CS.Length - sizeof(*h));
	if (ret == 0)
		ret = vf_conn_post_rx(c, i);
	if (ret != 0) {
		FI_WARN(&vf_prov, FI_LOG_EP_DATA, "connection dropped: %s\n", fi_strerror(-ret));
		vf_conn_broken(c);
		return;
	}
	c->owed++;
	vf_conn_push(c);
}

void
vf_progress_one(struct vf_ep *ep, VIP_VI_HANDLE vi, VIP_BOOLEAN recvq)
{
	struct vf_conn *c = vf_conn_lookup(ep, vi);
	VIP_DESCRIPTOR *d;

	if (c == NULL)
		return;
	if (recvq) {
		if (VipRecvDone(vi, &d) == VIP_SUCCESS)
			vf_rx(c, (unsigned)(d - c->rx_desc));
	} else if (VipSendDone(vi, &d) == VIP_SUCCESS) {
		vf_tx_done(c, &c->slots[d - c->slots[0].desc]);
	}
}

/* Manual progress: take what the VIA CQ holds (a bounded batch). */
void
vf_progress(struct vf_ep *ep)
{
	VIP_VI_HANDLE vi;
	VIP_BOOLEAN recvq;
	int n;

	if (!ep->enabled)
		return;
	for (n = 0; n < 64 && VipCQDone(ep->vcq, &vi, &recvq) == VIP_SUCCESS; n++)
		vf_progress_one(ep, vi, recvq);
}

/* ---------------------------------------------------------------------- */
/* Rendezvous and unexpected messages */

/*
 * Receive @p r matched a rendezvous message: register its buffer and read
 * the data over @p c (the VI the RTS came on, else the peer's).
 */
void
vf_rndv_start(struct vf_req *r, struct vf_peer *p, struct vf_conn *c, const struct vf_rts *rts)
{
	if (c == NULL)
		c = p->tx;
	r->raddr = rts->addr;
	r->rkey = rts->key;
	r->cookie = rts->cookie;
	r->conn = c;
	r->bounce = r->mr == NULL && vf_on_own_stack(r->buf, r->rlen);
	if (c == NULL || (r->rlen > 0 && r->mr == NULL && !r->bounce &&
			  vf_reg_get(r->ep->dom, r->buf, r->rlen, &r->reg) != 0)) {
		r->err = FI_EIO;
		r->done_posting = true;
		vf_req_check(r);
		return;
	}
	vf_list_add_tail(&c->reads, &r->link);
	vf_conn_push(c);
}

/* Receive @p r takes unexpected message @p ux (off its list). */
void
vf_ux_deliver(struct vf_req *r, struct vf_unexp *ux)
{
	vf_recv_matched(r, ux->peer, ux->tag, ux->data, ux->has_data, ux->len);
	if (ux->rndv) {
		struct vf_rts rts = ux->rts;

		vf_ux_free(ux);
		vf_rndv_start(r, r->peer, NULL, &rts);
		return;
	}
	if (!ux->complete) {
		/* the rest is still arriving (vf_rx_frag finishes it) */
		ux->req = r;
		return;
	}
	if (r->rlen)
		memcpy(r->buf, ux->buf, r->rlen);
	vf_ux_free(ux);
	vf_req_complete(r);
}

/* FI_DISCARD of unexpected message @p ux (off its list). */
void
vf_ux_drop(struct vf_unexp *ux)
{
	if (ux->rndv && ux->peer->tx != NULL) {
		struct vf_fin *f = malloc(sizeof(*f));

		/* the sender is done with its buffer: nobody will read it */
		if (f != NULL) {
			f->cookie = ux->rts.cookie;
			f->status = 0;
			vf_list_add_tail(&ux->peer->tx->fins, &f->link);
			vf_conn_push(ux->peer->tx);
		}
	}
	if (!ux->complete) {
		ux->discard = true;
		return;
	}
	vf_ux_free(ux);
}

/* ---------------------------------------------------------------------- */
/* Operations on the endpoint itself: no VI, a copy */

void
vf_self_send(struct vf_req *r)
{
	struct vf_ep *ep = r->ep;
	bool tagged = r->cq_flags & FI_TAGGED;
	bool has_data = r->op_flags & FI_REMOTE_CQ_DATA;
	struct vf_req *rr = vf_match_posted(ep, tagged, ep->self, r->tag);

	if (rr != NULL) {
		vf_recv_matched(rr, ep->self, r->tag, r->data, has_data, r->len);
		if (rr->rlen)
			memcpy(rr->buf, r->buf, rr->rlen);
		vf_req_complete(rr);
	} else {
		struct vf_unexp *ux = calloc(1, sizeof(*ux));

		if (ux == NULL || (r->len && (ux->buf = malloc(r->len)) == NULL)) {
			free(ux);
			r->err = FI_ENOMEM;
			vf_req_complete(r);
			return;
		}
		ux->peer = ep->self;
		ux->has_data = has_data;
		ux->tag = r->tag;
		ux->data = r->data;
		ux->len = r->len;
		ux->complete = true;
		if (r->len)
			memcpy(ux->buf, r->buf, r->len);
		vf_list_add_tail(&ep->unexp[tagged], &ux->link);
	}
	vf_req_complete(r);
}

void
vf_self_rma(struct vf_req *r)
{
	struct vf_ep *ep = r->ep;
	struct vf_mr *m = vf_mr_find(ep->dom, r->rkey);
	uint64_t need = r->type == VF_REQ_READ ? FI_REMOTE_READ : FI_REMOTE_WRITE;
	uint8_t *target = (uint8_t *)(uintptr_t)r->raddr;

	if (m == NULL || !(m->access & need) || target < m->addr ||
	    target + r->len > m->addr + m->len) {
		r->err = FI_EACCES;
	} else if (r->type == VF_REQ_READ) {
		memcpy(r->buf, target, r->len);
	} else {
		memcpy(target, r->buf, r->len);
		if ((r->op_flags & FI_REMOTE_CQ_DATA) && ep->rx_cq != NULL) {
			struct fi_cq_tagged_entry e = {
				.flags = FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
				.len = r->len,
				.data = r->data,
			};

			vf_cq_push(ep->rx_cq, &e, vf_peer_addr(ep, ep->self));
		}
	}
	vf_req_complete(r);
}
