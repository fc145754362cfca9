/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Peers and connections. An RDM endpoint talks to a peer over a VI it
 * connects on demand, the first time it has something for it (the
 * connector thread, VipConnectRequest), or that the peer connected to it
 * (the listener thread, VipConnectWait on the endpoint's discriminator).
 * When both ends start at once there are two VIs between them; each end
 * sends over the first of them that came up (vf_peer::tx) and receives on
 * both, so its messages still travel in order.
 *
 * The blocking VIPL calls run without the domain lock; a connection is
 * built before it is published under the lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "via_fi.h"

/* One VipConnectRequest waits this long; a peer that is not listening yet
 * is asked again until vf_params::connect_ms has passed. */
#define VF_ATTEMPT_MS 1000
/* VipConnectWait returns this often to see whether the endpoint closes. */
#define VF_LISTEN_MS 100

/* ---------------------------------------------------------------------- */
/* Peers */

static size_t
vf_name_bucket(const struct vf_name *n)
{
	return (n->pid * 31u + n->ep_id * 7u + n->mac[5]) % VF_PEER_HASH;
}

struct vf_peer *
vf_peer_get(struct vf_ep *ep, const struct vf_name *name)
{
	size_t b = vf_name_bucket(name);
	struct vf_peer *p;

	for (p = ep->peer_hash[b]; p != NULL; p = p->hnext)
		if (memcmp(&p->name, name, sizeof(*name)) == 0)
			return p;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	p->ep = ep;
	p->name = *name;
	p->self = memcmp(name, &ep->name, sizeof(*name)) == 0;
	p->addr = FI_ADDR_NOTAVAIL;
	p->addr_gen = UINT64_MAX;   /* looked up at first use */
	vf_list_init(&p->conns);
	vf_list_init(&p->txq);
	vf_list_init(&p->rndv);
	vf_list_init(&p->cjob);
	vf_list_add_tail(&ep->peers, &p->link);
	p->hnext = ep->peer_hash[b];
	ep->peer_hash[b] = p;
	return p;
}

/* Ask the connector thread for a VI to @p p (domain lock held). */
void
vf_connect_kick(struct vf_peer *p)
{
	struct vf_ep *ep = p->ep;

	if (p->connecting || ep->stopping)
		return;
	p->connecting = true;
	p->deadline_ms = vf_now_ms() + ep->dom->p.connect_ms;
	vf_list_add_tail(&ep->cjobs, &p->cjob);
	pthread_cond_signal(&ep->cjob_cond);
}

/* ---------------------------------------------------------------------- */
/* Connections */

static size_t
vf_vi_bucket(VIP_VI_HANDLE vi)
{
	uintptr_t h = (uintptr_t)vi;

	return (h ^ (h >> 17) ^ (h >> 31)) % VF_VI_HASH;
}

struct vf_conn *
vf_conn_lookup(struct vf_ep *ep, VIP_VI_HANDLE vi)
{
	struct vf_conn *c;

	for (c = ep->vi_hash[vf_vi_bucket(vi)]; c != NULL; c = c->hnext)
		if (c->vi == vi)
			return c;
	return NULL;
}

static void
vf_vi_hash_del(struct vf_ep *ep, struct vf_conn *c)
{
	struct vf_conn **link = &ep->vi_hash[vf_vi_bucket(c->vi)];

	while (*link != NULL && *link != c)
		link = &(*link)->hnext;
	if (*link == c)
		*link = c->hnext;
}

/* Undo vf_conn_new and vf_conn_publish (domain lock held). The VI must be
 * disconnected and its descriptors dequeued. */
static void
vf_conn_free(struct vf_conn *c)
{
	struct vf_ep *ep = c->ep;
	struct vf_list *pos, *tmp;
	VIP_RETURN rc;

	if (c->peer != NULL) {
		vf_vi_hash_del(ep, c);
		ep->vcq_need -= c->nslots + c->nrx;
	}
	rc = VipDestroyVi(c->vi);
	if (rc != VIP_SUCCESS)
		FI_WARN(&vf_prov, FI_LOG_EP_CTRL, "VipDestroyVi: %d\n", rc);
	VipDeregisterMem(ep->dom->nic, c->mem, c->mh);
	vf_list_for_each_safe(pos, tmp, &c->fins)
		free(vf_container_of(pos, struct vf_fin, link));
	free(c->slots);
	free(c->mem);
	free(c);
}

/* Free a VI that never carried data: its receives come back flushed. */
static void
vf_conn_drain_free(struct vf_conn *c)
{
	VIP_DESCRIPTOR *d;

	VipDisconnect(c->vi);
	while (VipRecvDone(c->vi, &d) == VIP_SUCCESS)
		;
	vf_conn_free(c);
}

/*
 * A VI with its memory: tx_depth slots and rx_depth receive buffers of
 * @p mts bytes (the VI's MaxTransferSize), descriptors first (64-byte
 * aligned), registered as one region, every receive posted. Made without
 * the domain lock: nothing else sees it until vf_conn_publish.
 */
static struct vf_conn *
vf_conn_new(struct vf_ep *ep, size_t mts)
{
	struct vf_domain *d = ep->dom;
	VIP_MEM_ATTRIBUTES ma = { d->ptag, VIP_FALSE, VIP_FALSE };
	VIP_VI_ATTRIBUTES va = {
		.ReliabilityLevel = VIP_SERVICE_RELIABLE_RECEPTION,
		.MaxTransferSize = mts,
		.Ptag = d->ptag,
		.EnableRdmaWrite = VIP_TRUE,
		.EnableRdmaRead = VIP_TRUE,
	};
	unsigned maxq = (unsigned)d->attr.MaxDescriptorsPerQueue;
	size_t descs, total;
	struct vf_conn *c;
	VIP_RETURN rc;
	unsigned i;

	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->ep = ep;
	c->mts = mts;
	c->nslots = d->p.tx_depth < maxq ? d->p.tx_depth : maxq;
	c->nrx = d->p.rx_depth < maxq ? d->p.rx_depth : maxq;
	c->credits = VF_INIT_CREDITS;
	c->state = VF_CONN_CONNECTING;
	vf_list_init(&c->link);
	vf_list_init(&c->fins);
	vf_list_init(&c->reads);
	descs = ((c->nslots + c->nrx) * sizeof(VIP_DESCRIPTOR) + 4095) & ~(size_t)4095;
	total = descs + (c->nslots + c->nrx) * mts;
	c->mem = aligned_alloc(4096, (total + 4095) & ~(size_t)4095);
	c->slots = calloc(c->nslots, sizeof(*c->slots));
	if (c->mem == NULL || c->slots == NULL)
		goto fail;
	c->mem_len = total;
	memset(c->mem, 0, descs);
	pthread_mutex_lock(&d->lock);
	vf_cache_purge(d, c->mem, c->mem_len);
	pthread_mutex_unlock(&d->lock);
	rc = VipRegisterMem(d->nic, c->mem, c->mem_len, &ma, &c->mh);
	if (rc != VIP_SUCCESS)
		goto fail;
	c->rx_desc = (VIP_DESCRIPTOR *)(void *)(c->mem + c->nslots * sizeof(VIP_DESCRIPTOR));
	c->rx_buf = c->mem + descs + c->nslots * mts;
	for (i = 0; i < c->nslots; i++) {
		c->slots[i].desc = (VIP_DESCRIPTOR *)(void *)(c->mem + i * sizeof(VIP_DESCRIPTOR));
		c->slots[i].buf = c->mem + descs + i * mts;
		c->slots[i].next = i + 1 < c->nslots ? &c->slots[i + 1] : NULL;
	}
	c->free_slots = &c->slots[0];
	c->slots_free = c->nslots;
	rc = VipCreateVi(d->nic, &va, ep->vcq, ep->vcq, &c->vi);
	if (rc != VIP_SUCCESS) {
		VipDeregisterMem(d->nic, c->mem, c->mh);
		goto fail;
	}
	for (i = 0; i < c->nrx; i++)
		if (vf_conn_post_rx(c, i) != 0) {
			vf_conn_drain_free(c);
			return NULL;
		}
	return c;
fail:
	FI_WARN(&vf_prov, FI_LOG_EP_CTRL, "no VI or memory for a connection\n");
	free(c->slots);
	free(c->mem);
	free(c);
	return NULL;
}

/*
 * Make @p c known to the data path (domain lock held): the VIA CQ must
 * hold a completion of every descriptor of every VI (VIA §6.4.1: entries
 * past its size are lost), so it grows first.
 */
static int
vf_conn_publish(struct vf_conn *c, struct vf_peer *p)
{
	struct vf_ep *ep = c->ep;
	unsigned need = ep->vcq_need + c->nslots + c->nrx;
	size_t b;

	if (need > ep->vcq_entries) {
		unsigned n = ep->vcq_entries;
		VIP_RETURN rc;

		while (n < need)
			n *= 2;
		rc = VipResizeCQ(ep->vcq, n);
		if (rc != VIP_SUCCESS)
			return vf_vip_errno(rc);
		ep->vcq_entries = n;
	}
	ep->vcq_need = need;
	c->peer = p;
	b = vf_vi_bucket(c->vi);
	c->hnext = ep->vi_hash[b];
	ep->vi_hash[b] = c;
	return 0;
}

static struct vf_conn *
vf_peer_up_conn(struct vf_peer *p)
{
	struct vf_list *pos, *tmp;

	vf_list_for_each_safe(pos, tmp, &p->conns) {
		struct vf_conn *c = vf_container_of(pos, struct vf_conn, link);

		if (c->state == VF_CONN_UP)
			return c;
	}
	return NULL;
}

/* A receive that cannot finish: its connection is gone. */
static void
vf_recv_fail(struct vf_req *r)
{
	if (!r->err)
		r->err = FI_EIO;
	vf_req_complete(r);
}

/*
 * Take @p c down (domain lock held): disconnect the VI, which completes
 * every descriptor flushed, settle what depended on it, free it. What
 * still waits in the peer's txq unsent goes over another VI, a new one if
 * needed; what was under way fails with @p err (FI_EIO).
 */
void
vf_conn_down(struct vf_conn *c, int err)
{
	struct vf_peer *p = c->peer;
	struct vf_ep *ep = c->ep;
	struct vf_list *pos, *tmp;
	VIP_DESCRIPTOR *d;
	unsigned spins;

	c->state = VF_CONN_DOWN;
	vf_list_del(&c->link);
	if (p->tx == c)
		p->tx = vf_peer_up_conn(p);
	VipDisconnect(c->vi);
	/* viad flushes every descriptor before it answers VipDisconnect; the
	 * wait only guards against a completion still on its way */
	for (spins = 0; spins < 1000; spins++) {
		while (VipSendDone(c->vi, &d) == VIP_SUCCESS) {
			struct vf_slot *s = &c->slots[d - c->slots[0].desc];

			if (s->req) {
				if (!s->req->err)
					s->req->err = err;
				s->req->inflight--;
				vf_req_check(s->req);
			}
			vf_slot_put(c, s);
		}
		while (VipRecvDone(c->vi, &d) == VIP_SUCCESS)
			c->rx_posted--;
		if (c->slots_free == c->nslots && c->rx_posted == 0)
			break;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	if (c->rx_req)
		vf_recv_fail(c->rx_req);
	if (c->rx_ux) {
		struct vf_unexp *ux = c->rx_ux;

		if (ux->req)
			vf_recv_fail(ux->req);
		else if (!ux->discard)
			vf_list_del(&ux->link);
		vf_ux_free(ux);
	}
	vf_list_for_each_safe(pos, tmp, &c->reads) {
		struct vf_req *r = vf_container_of(pos, struct vf_req, link);

		vf_list_del(&r->link);
		r->err = err;
		r->done_posting = true;
		vf_req_check(r);
	}
	/* receives whose reads were all posted learn it from their drained
	 * descriptors above; their FIN has nowhere to go */
	if (vf_peer_up_conn(p) == NULL) {
		vf_list_for_each_safe(pos, tmp, &p->rndv) {
			struct vf_req *r = vf_container_of(pos, struct vf_req, link);

			vf_list_del(&r->link);
			r->err = err;
			vf_req_complete(r);
		}
	}
	/* a message cut in the middle cannot resume on another VI */
	vf_list_for_each_safe(pos, tmp, &p->txq) {
		struct vf_req *r = vf_container_of(pos, struct vf_req, link);

		if (!r->started)
			break;
		vf_list_del(&r->link);
		r->err = err;
		r->done_posting = true;
		vf_req_check(r);
	}
	vf_conn_free(c);
	/* an FI_EP_MSG endpoint connects only when told to */
	if (!ep->stopping && !ep->msg)
		vf_peer_push(p);
}

/*
 * @p c broke under way (flushed or failed descriptors: the peer closed, its
 * viad or the link went, the transport gave up): what was lost on it cannot
 * be told from what was not, so every operation with its peer fails with
 * FI_EIO now - sends queued or under way, rendezvous sends waiting for a
 * FIN, reads, receives directed at the peer and rendezvous messages of it
 * not yet matched - and every other VI to it goes too. Later operations
 * connect anew. Domain lock held.
 */
void
vf_conn_broken(struct vf_conn *c)
{
	struct vf_peer *p = c->peer;
	struct vf_ep *ep = c->ep;
	struct vf_list *pos, *tmp;
	fi_addr_t addr = vf_peer_addr(ep, p);
	int tagged;

	FI_WARN(&vf_prov, FI_LOG_EP_DATA, "connection to a peer broken: its operations fail\n");
	/* first, or the connections' teardown would send them over a new VI */
	vf_list_for_each_safe(pos, tmp, &p->txq) {
		struct vf_req *r = vf_container_of(pos, struct vf_req, link);

		vf_list_del(&r->link);
		r->err = FI_EIO;
		r->done_posting = true;
		vf_req_check(r);
	}
	vf_conn_down(c, FI_EIO);
	while ((c = vf_list_first(&p->conns, struct vf_conn, link)) != NULL)
		vf_conn_down(c, FI_EIO);
	for (tagged = 0; tagged < 2; tagged++) {
		vf_list_for_each_safe(pos, tmp, &ep->posted[tagged]) {
			struct vf_req *r = vf_container_of(pos, struct vf_req, link);

			if (r->src == FI_ADDR_UNSPEC || r->src != addr)
				continue;
			vf_list_del(&r->link);
			vf_recv_fail(r);
		}
		/* their senders failed: nobody answers a read of them */
		vf_list_for_each_safe(pos, tmp, &ep->unexp[tagged]) {
			struct vf_unexp *ux = vf_container_of(pos, struct vf_unexp, link);

			if (ux->peer != p || !ux->rndv || ux->claimed)
				continue;
			vf_list_del(&ux->link);
			vf_ux_free(ux);
		}
	}
	if (ep->msg && ep->msg_connected && !ep->stopping) {
		ep->msg_connected = false;
		vf_eq_event(ep->eq, FI_SHUTDOWN, &ep->ep.fid, NULL);
	}
}

void
vf_msg_shutdown(struct vf_ep *ep)
{
	struct vf_peer *p = ep->msg_peer;
	struct vf_list *pos, *tmp;
	struct vf_conn *c;

	if (p == NULL)
		return;
	ep->msg_connected = false;
	vf_list_for_each_safe(pos, tmp, &p->txq) {
		struct vf_req *r = vf_container_of(pos, struct vf_req, link);

		vf_list_del(&r->link);
		r->err = FI_ECANCELED;
		r->done_posting = true;
		vf_req_check(r);
	}
	while ((c = vf_list_first(&p->conns, struct vf_conn, link)) != NULL)
		vf_conn_down(c, FI_ECANCELED);
}

/* ---------------------------------------------------------------------- */
/* The listener: VipConnectWait on the endpoint's discriminator */

/* VIP_NET_ADDRESS of @p n, in @p buf (room for 6 + VF_DISC_LEN bytes). */
static VIP_NET_ADDRESS *
vf_net_addr(void *buf, const struct vf_name *n)
{
	VIP_NET_ADDRESS *a = buf;

	a->HostAddressLen = sizeof(n->mac);
	a->DiscriminatorLen = VF_DISC_LEN;
	memcpy(a->HostAddress, n->mac, sizeof(n->mac));
	memcpy(a->HostAddress + sizeof(n->mac), (const uint8_t *)n + VF_DISC_OFF, VF_DISC_LEN);
	return a;
}

/* The peer's name from the requester's address, or false if it is no
 * endpoint of this provider. */
static bool
vf_name_from_addr(const VIP_NET_ADDRESS *a, struct vf_name *n)
{
	if (a->HostAddressLen != sizeof(n->mac) || a->DiscriminatorLen != VF_DISC_LEN)
		return false;
	memcpy(n->mac, a->HostAddress, sizeof(n->mac));
	memcpy((uint8_t *)n + VF_DISC_OFF, a->HostAddress + sizeof(n->mac), VF_DISC_LEN);
	return n->magic[0] == VF_NAME_MAGIC0 && n->magic[1] == VF_NAME_MAGIC1;
}

/* The connection is up (domain lock held): it may carry our messages. */
static void
vf_conn_established(struct vf_conn *c)
{
	struct vf_peer *p = c->peer;

	struct vf_ep *ep = c->ep;

	c->state = VF_CONN_UP;
	vf_list_add_tail(&p->conns, &c->link);
	if (p->tx == NULL)
		p->tx = c;
	if (ep->msg && !ep->msg_connected) {
		ep->msg_connected = true;
		vf_eq_event(ep->eq, FI_CONNECTED, &ep->ep.fid, NULL);
	}
	vf_conn_up(c);
	vf_peer_push(p);
}

int
vf_accept_conn(struct vf_ep *ep, VIP_CONN_HANDLE ch, const struct vf_name *name,
	       const VIP_VI_ATTRIBUTES *rattr)
{
	struct vf_domain *d = ep->dom;
	struct vf_conn *c;
	struct vf_peer *p;
	VIP_RETURN rc;

	/* the VI must match the requester's (VIA §4.1) */
	if (rattr->ReliabilityLevel != VIP_SERVICE_RELIABLE_RECEPTION ||
	    rattr->MaxTransferSize < 4096 || rattr->MaxTransferSize > d->attr.MaxTransferSize) {
		FI_WARN(&vf_prov, FI_LOG_EP_CTRL, "refused a connection request\n");
		VipConnectReject(ch);
		return -FI_ECONNREFUSED;
	}
	c = vf_conn_new(ep, rattr->MaxTransferSize);
	if (c == NULL) {
		VipConnectReject(ch);
		return -FI_ENOMEM;
	}
	pthread_mutex_lock(&d->lock);
	p = ep->stopping ? NULL : vf_peer_get(ep, name);
	if (p == NULL || vf_conn_publish(c, p) != 0) {
		vf_conn_drain_free(c);
		pthread_mutex_unlock(&d->lock);
		VipConnectReject(ch);
		return -FI_ENOMEM;
	}
	if (ep->msg)
		ep->msg_peer = p;
	pthread_mutex_unlock(&d->lock);
	rc = VipConnectAccept(ch, c->vi);
	pthread_mutex_lock(&d->lock);
	if (rc == VIP_SUCCESS && !ep->stopping) {
		vf_conn_established(c);
	} else {
		if (rc != VIP_SUCCESS)
			VipConnectReject(ch);
		vf_conn_down(c, FI_EIO);
	}
	pthread_mutex_unlock(&d->lock);
	return rc == VIP_SUCCESS ? 0 : vf_vip_errno(rc);
}

/* The RDM listener's: any requester that is an endpoint of this provider. */
static void
vf_accept_one(struct vf_ep *ep, VIP_CONN_HANDLE ch, const VIP_NET_ADDRESS *remote,
	      const VIP_VI_ATTRIBUTES *rattr)
{
	struct vf_name name;

	if (!vf_name_from_addr(remote, &name)) {
		FI_WARN(&vf_prov, FI_LOG_EP_CTRL, "refused a connection request\n");
		VipConnectReject(ch);
		return;
	}
	vf_accept_conn(ep, ch, &name, rattr);
}

static void *
vf_listener(void *arg)
{
	struct vf_ep *ep = arg;
	struct vf_domain *d = ep->dom;
	uint8_t lbuf[sizeof(VIP_NET_ADDRESS) + 64], rbuf[sizeof(VIP_NET_ADDRESS) + 6 + 256];
	VIP_NET_ADDRESS *local = vf_net_addr(lbuf, &ep->name);
	VIP_NET_ADDRESS *remote = (VIP_NET_ADDRESS *)(void *)rbuf;

	for (;;) {
		VIP_VI_ATTRIBUTES rattr;
		VIP_CONN_HANDLE ch;
		VIP_RETURN rc;
		bool stop;

		pthread_mutex_lock(&d->lock);
		stop = ep->stopping;
		pthread_mutex_unlock(&d->lock);
		if (stop)
			break;
		rc = VipConnectWait(d->nic, local, VF_LISTEN_MS, remote, &rattr, &ch);
		if (rc == VIP_SUCCESS) {
			vf_accept_one(ep, ch, remote, &rattr);
		} else if (rc != VIP_TIMEOUT) {
			/* viad gone or out of resources: do not spin */
			FI_WARN_SPARSE(&vf_prov, FI_LOG_EP_CTRL, "VipConnectWait: %d\n", rc);
			nanosleep(&(struct timespec){ 0, VF_LISTEN_MS * 1000000L }, NULL);
		}
	}
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* The connector: VipConnectRequest to peers with something to send */

static void
vf_connect_fail(struct vf_peer *p, int err)
{
	struct vf_list *pos, *tmp;

	vf_list_for_each_safe(pos, tmp, &p->txq) {
		struct vf_req *r = vf_container_of(pos, struct vf_req, link);

		vf_list_del(&r->link);
		r->err = err;
		r->done_posting = true;
		vf_req_check(r);
	}
}

static void *
vf_connector(void *arg)
{
	struct vf_ep *ep = arg;
	struct vf_domain *d = ep->dom;
	uint8_t lbuf[sizeof(VIP_NET_ADDRESS) + 64], rbuf[sizeof(VIP_NET_ADDRESS) + 64];
	VIP_NET_ADDRESS *local = vf_net_addr(lbuf, &ep->name);

	pthread_mutex_lock(&d->lock);
	for (;;) {
		VIP_NET_ADDRESS *remote;
		VIP_VI_ATTRIBUTES rattr;
		struct vf_conn *c;
		struct vf_peer *p;
		VIP_RETURN rc;
		bool retry;

		while (!ep->stopping && vf_list_empty(&ep->cjobs))
			pthread_cond_wait(&ep->cjob_cond, &d->lock);
		if (ep->stopping)
			break;
		p = vf_list_first(&ep->cjobs, struct vf_peer, cjob);
		vf_list_del(&p->cjob);
		if (vf_peer_up_conn(p) != NULL) {
			p->connecting = false;
			continue;
		}
		remote = vf_net_addr(rbuf, &p->name);
		c = p->pending;
		pthread_mutex_unlock(&d->lock);
		if (c == NULL)
			c = vf_conn_new(ep, d->attr.MaxTransferSize);
		pthread_mutex_lock(&d->lock);
		if (c == NULL) {
			p->connecting = false;
			vf_connect_fail(p, FI_ENOMEM);
			continue;
		}
		if (p->pending == NULL) {
			if (vf_conn_publish(c, p) != 0) {
				vf_conn_drain_free(c);
				p->connecting = false;
				vf_connect_fail(p, FI_ENOMEM);
				continue;
			}
			p->pending = c;
		}
		pthread_mutex_unlock(&d->lock);
		rc = VipConnectRequest(c->vi, local, remote, VF_ATTEMPT_MS, &rattr);
		pthread_mutex_lock(&d->lock);
		if (rc == VIP_SUCCESS && !ep->stopping) {
			p->pending = NULL;
			p->connecting = false;
			vf_conn_established(c);
			continue;
		}
		if (ep->stopping)
			break;
		/* a timeout or no match: the peer is not listening yet */
		retry = (rc == VIP_TIMEOUT || rc == VIP_NO_MATCH) && vf_now_ms() < p->deadline_ms &&
			vf_peer_up_conn(p) == NULL;
		if (retry) {
			vf_list_add_tail(&ep->cjobs, &p->cjob);
			if (rc == VIP_NO_MATCH) {
				/* answered at once: pause before asking again */
				pthread_mutex_unlock(&d->lock);
				nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
				pthread_mutex_lock(&d->lock);
			}
			continue;
		}
		p->pending = NULL;
		p->connecting = false;
		if (vf_peer_up_conn(p) != NULL) {
			/* the peer connected to us meanwhile: send over its VI */
			vf_conn_down(c, FI_EIO);
		} else {
			FI_WARN(&vf_prov, FI_LOG_EP_CTRL, "no connection to a peer: %d\n", rc);
			vf_conn_down(c, FI_EHOSTUNREACH);
			vf_connect_fail(p, FI_EHOSTUNREACH);
			if (ep->msg)
				vf_eq_error(ep->eq, &ep->ep.fid, ep->ep.fid.context,
					    rc == VIP_REJECT ? FI_ECONNREFUSED : FI_ETIMEDOUT);
		}
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

int
vf_conn_start_threads(struct vf_ep *ep)
{
	/* an FI_EP_MSG endpoint is asked through its passive endpoint */
	if (!ep->msg) {
		if (pthread_create(&ep->listener, NULL, vf_listener, ep) != 0)
			return -FI_ENOMEM;
		ep->listens = true;
	}
	if (pthread_create(&ep->connector, NULL, vf_connector, ep) != 0) {
		if (ep->listens) {
			ep->stopping = true;
			pthread_mutex_unlock(&ep->dom->lock);
			pthread_join(ep->listener, NULL);
			pthread_mutex_lock(&ep->dom->lock);
			ep->stopping = false;
			ep->listens = false;
		}
		return -FI_ENOMEM;
	}
	ep->connects = true;
	return 0;
}

/*
 * Stop the threads and take every connection down, quietly: nothing is
 * reported on the CQs once the endpoint closes (vf_req_complete).
 */
void
vf_conn_stop(struct vf_ep *ep)
{
	struct vf_domain *d = ep->dom;
	struct vf_list *pos, *tmp, *cpos, *ctmp;

	pthread_mutex_lock(&d->lock);
	ep->stopping = true;
	pthread_cond_broadcast(&ep->cjob_cond);
	/* a VipConnectRequest in progress returns at once (ECONNABORTED) */
	vf_list_for_each_safe(pos, tmp, &ep->peers) {
		struct vf_peer *p = vf_container_of(pos, struct vf_peer, link);

		if (p->pending)
			VipDisconnect(p->pending->vi);
	}
	pthread_mutex_unlock(&d->lock);
	if (ep->listens)
		pthread_join(ep->listener, NULL);
	if (ep->connects)
		pthread_join(ep->connector, NULL);
	ep->listens = ep->connects = false;
	if (ep->connreq != NULL) {
		/* made from a request it never accepted */
		VipConnectReject(ep->connreq->ch);
		vf_connreq_free(ep->connreq);
		ep->connreq = NULL;
	}
	pthread_mutex_lock(&d->lock);
	vf_list_for_each_safe(pos, tmp, &ep->peers) {
		struct vf_peer *p = vf_container_of(pos, struct vf_peer, link);

		vf_list_for_each_safe(cpos, ctmp, &p->conns)
			vf_conn_down(vf_container_of(cpos, struct vf_conn, link), FI_ECANCELED);
		if (p->pending) {
			vf_conn_down(p->pending, FI_ECANCELED);
			p->pending = NULL;
		}
		vf_list_for_each_safe(cpos, ctmp, &p->txq) {
			struct vf_req *r = vf_container_of(cpos, struct vf_req, link);

			vf_list_del(&r->link);
			vf_req_complete(r);
		}
		vf_list_for_each_safe(cpos, ctmp, &p->rndv) {
			struct vf_req *r = vf_container_of(cpos, struct vf_req, link);

			vf_list_del(&r->link);
			vf_req_complete(r);
		}
		vf_list_del(&p->link);
		free(p);
	}
	pthread_mutex_unlock(&d->lock);
}
