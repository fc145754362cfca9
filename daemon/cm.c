/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The connection manager (VIA §4, §5, §9.4). Runs on the control thread
 * only (client calls, timers, and the CM frames the shards hand over
 * through viad.cm_inbox), under every shard's data-path lock.
 *
 * Protocol (docs/wire-format.md): the requester sends CONN_REQ every
 * cm_retry_ms until its timeout; the server's viad keeps an unmatched
 * request in a backlog (refreshed by each retransmission, answered with
 * CONN_NOMATCH) so that a VipConnectWait issued later, even with timeout 0,
 * finds it - for a short grace: after viad.cm_nomatch_grace_ms of
 * CONN_NOMATCH the request fails (VIA §4.1). VipConnectAccept answers
 * CONN_ACCEPT, VipConnectReject CONN_REJECT; a retransmitted request of an
 * accepted or rejected connection gets the same answer again.
 *
 * Connection identifiers (VIA §4.1, §4.2): every attempt gets a fresh
 * 32-bit identifier from a per-boot random base; data frames carry it and
 * are dropped unless it is the VI's current one, so frames of an extinct
 * connection can never reach a new one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <rte_ether.h>
#include <rte_random.h>
#include <rte_ring.h>

#include <vipl.h>

#include "dp.h"
#include "viad.h"
#include "wire.h"

#define CM_RETRY_MS       100   /* CONN_REQ retransmission interval */
#define CM_BACKLOG_MS     1000  /* an unmatched request lives this long after its last copy */
#define CM_MAX_REQS       4096  /* incoming requests held at once */
#define CM_HANDED_OUT_MS  60000 /* an abandoned request's handle stays answerable */
#define CM_RECENT         64    /* remembered rejections */

/*
 * The server side of VIA §4.1: an incoming request is held until a
 * VipConnectWait takes it, then until VipConnectAccept or VipConnectReject
 * answers it (§9.4.1-9.4.3); the requester resends it meanwhile.
 */
enum via_cm_req_state {
	VIA_CM_REQ_BACKLOG,          /* no VipConnectWait has taken it yet */
	VIA_CM_REQ_OFFERED,          /* a VipConnectWait returned its ConnHandle */
};

/* An incoming connection request. */
struct via_cm_req {
	TAILQ_ENTRY(via_cm_req) link;
	uint32_t id;                 /* the ConnHandle's viad id */
	enum via_cm_req_state state;
	struct via_nic *nic;
	struct via_session *owner;   /* OFFERED: whose VipConnectWait took it */
	uint8_t remote_mac[6];
	uint32_t remote_vi;
	uint32_t conn_id;
	struct via_wire_conn info;
	uint64_t expires_ms;
};

/* A VipConnectWait in progress. */
struct via_cm_listener {
	TAILQ_ENTRY(via_cm_listener) link;
	struct via_session *s;
	struct via_nic *nic;
	uint32_t seq;
	struct via_ctl_conn_wait_req req;
	uint64_t deadline_ms;
};

struct via_cm_rejected {
	uint8_t mac[6];
	uint32_t conn_id;
	uint32_t reason;             /**< enum via_wire_reject, sent again with it */
};

struct via_cm {
	struct via_idtab reqs;
	TAILQ_HEAD(, via_cm_req) req_list;
	TAILQ_HEAD(, via_cm_listener) listeners;
	struct via_vi_list requesting; /**< VIs with a request out: the timers walk these */
	struct via_cm_rejected recent[CM_RECENT];
	unsigned recent_next;
};

static void link_down(struct viad *d, struct via_nic *nic);

int
via_cm_init(struct viad *d)
{
	struct via_cm *cm = calloc(1, sizeof(*cm));
	if (cm == NULL || via_idtab_init(&cm->reqs, CM_MAX_REQS) != 0) {
		free(cm);
		return -ENOMEM;
	}
	TAILQ_INIT(&cm->req_list);
	TAILQ_INIT(&cm->listeners);
	TAILQ_INIT(&cm->requesting);
	d->cm = cm;
	d->ev.link_down = link_down;
	return 0;
}

void
via_cm_fini(struct viad *d)
{
	struct via_cm *cm = d->cm;
	struct via_cm_req *r;
	struct via_cm_listener *l;

	if (cm == NULL)
		return;
	while ((r = TAILQ_FIRST(&cm->req_list)) != NULL) {
		TAILQ_REMOVE(&cm->req_list, r, link);
		free(r);
	}
	while ((l = TAILQ_FIRST(&cm->listeners)) != NULL) {
		TAILQ_REMOVE(&cm->listeners, l, link);
		free(l);
	}
	via_idtab_fini(&cm->reqs);
	free(cm);
	d->cm = NULL;
}

/*
 * A connection identifier no one can predict (issue 14): with the peer's MAC
 * and the VI pair it is all that tells a frame of this connection from a
 * forged one (design.md, "Threat model"), and a restarted viad's or an
 * earlier attempt's stale frames must not match (VIA §4.1). 0 means none.
 */
static uint32_t
new_conn_id(void)
{
	uint32_t id = 0;

	while (id == 0)
		if (getrandom(&id, sizeof(id), 0) != sizeof(id))
			id = (uint32_t)rte_rand();
	return id;
}

static void
attr_to_wire(const struct via_vi *vi, const struct via_ctl_addr *local,
	     const struct via_ctl_addr *remote, struct via_wire_conn *w)
{
	memset(w, 0, sizeof(*w));
	w->reliability = rte_cpu_to_be_16(vi->attr.reliability);
	w->rdma_write = vi->attr.rdma_write;
	w->rdma_read = vi->attr.rdma_read;
	w->max_transfer = rte_cpu_to_be_32(vi->attr.max_transfer);
	w->qos = rte_cpu_to_be_32(vi->attr.qos);
	w->frame_payload = rte_cpu_to_be_16((uint16_t)via_dp_frame_payload(vi->owner->nic));
	if (remote != NULL) {
		w->dst_disc_len = remote->disc_len;
		memcpy(w->dst_disc, remote->disc, remote->disc_len);
	}
	if (local != NULL) {
		w->src_disc_len = local->disc_len;
		memcpy(w->src_disc, local->disc, local->disc_len);
	}
}

static void
attr_from_wire(const struct via_wire_conn *w, struct via_ctl_vi_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->reliability = rte_be_to_cpu_16(w->reliability);
	a->rdma_write = w->rdma_write != 0;
	a->rdma_read = w->rdma_read != 0;
	a->max_transfer = rte_be_to_cpu_32(w->max_transfer);
	a->qos = rte_be_to_cpu_32(w->qos);
}

/*
 * Whether @p vi and a remote VI of attributes @p remote can be connected
 * (§4.1: "Only VIs with the same reliability level can be connected", "The
 * VI Providers must also agree on the MTU"; §9.4.2: the conflicts are the
 * reliability level, the maximum transfer size and the quality of
 * service). Sizes agree on the smaller (conn_transfer): only a remote size
 * of 0 cannot work. @return 0, -EPROTONOSUPPORT, -EMSGSIZE, -EDOM: the
 * VIP_INVALID_RELIABILITY_LEVEL, _MTU and _QOS of vipl_return()
 */
static int
attr_conflict(const struct via_vi *vi, const struct via_ctl_vi_attr *remote)
{
	if (remote->reliability != vi->attr.reliability)
		return -EPROTONOSUPPORT;
	if (remote->max_transfer == 0)
		return -EMSGSIZE;
	if (remote->qos != vi->attr.qos)
		return -EDOM;
	return 0;
}

/* §9.10.5: the MaxTransferSize granted for a connection, the smaller of the
 * two requested, in vi->conn and in the remote attributes returned. */
static void
conn_transfer(struct via_vi *vi)
{
	uint32_t theirs = vi->conn.remote_attr.max_transfer;

	vi->conn.max_transfer = theirs != 0 && theirs < vi->attr.max_transfer ? theirs
									  : vi->attr.max_transfer;
	vi->conn.remote_attr.max_transfer = vi->conn.max_transfer;
}

/* The CONN_REJECT reason (its imm) of an attr_conflict() error, and back. */
static uint32_t
reject_reason(int err)
{
	return err == -EPROTONOSUPPORT ? VIA_REJECT_RELIABILITY
	       : err == -EMSGSIZE ? VIA_REJECT_MTU
	       : err == -EDOM ? VIA_REJECT_QOS
			      : VIA_REJECT_CONSUMER;
}

static int
reject_error(uint32_t reason)
{
	return reason == VIA_REJECT_RELIABILITY ? -EPROTONOSUPPORT
	       : reason == VIA_REJECT_MTU ? -EMSGSIZE
	       : reason == VIA_REJECT_QOS ? -EDOM
					  : -ECONNREFUSED;    /* the consumer, or unknown */
}

/* Whether a request ended with @p err because the other end refused it. */
static bool
refused(int err)
{
	return err == -ECONNREFUSED || err == -EPROTONOSUPPORT || err == -EMSGSIZE || err == -EDOM;
}

/* Frames of this connection carry what the smaller of the two ports takes. */
static void
agree_frame_payload(struct via_vi *vi, const struct via_wire_conn *peer)
{
	uint32_t mine = via_dp_frame_payload(vi->owner->nic);
	uint32_t theirs = rte_be_to_cpu_16(peer->frame_payload);

	vi->conn.frame_payload = theirs != 0 && theirs < mine ? theirs : mine;
}

static bool
disc_eq(uint8_t alen, const uint8_t *a, uint8_t blen, const uint8_t *b)
{
	return alen == blen && memcmp(a, b, alen) == 0;
}

static void
send_cm(struct via_nic *nic, const uint8_t mac[6], uint8_t op, uint16_t flags, uint32_t dst_vi,
	uint32_t src_vi, uint32_t conn_id, const struct via_wire_conn *payload)
{
	via_dp_send_ctrl(nic, mac, op, flags, dst_vi, src_vi, conn_id, payload,
			 payload != NULL ? sizeof(*payload) : 0);
}

static void
send_req(struct via_vi *vi)
{
	struct via_wire_conn w;

	attr_to_wire(vi, &vi->conn.local, &vi->conn.remote, &w);
	send_cm(vi->owner->nic, vi->conn.remote_mac, VIA_OP_CONN_REQ,
		vi->conn.cm_state == VIA_CM_PEER_REQUESTING ? VIA_WF_PEER : 0, 0, vi->id,
		vi->conn.id, &w);
}

static void
send_accept(struct via_vi *vi)
{
	struct via_wire_conn w;

	attr_to_wire(vi, NULL, NULL, &w);
	/* the size granted, not the one asked for (§9.10.5) */
	w.max_transfer = rte_cpu_to_be_32(vi->conn.max_transfer);
	send_cm(vi->owner->nic, vi->conn.remote_mac, VIA_OP_CONN_ACCEPT, 0, vi->conn.remote_vi,
		vi->id, vi->conn.id, &w);
}

/* ---- requester side: VI in Pending Connect ----------------------------- */

static void abandon_request(struct viad *d, const uint8_t *mac, uint32_t conn_id,
			    uint32_t remote_vi);

/* Void the server's copy of @p vi's request: a DISC to VI 0; on this very
 * NIC, at once, so that no VipConnectWait can still return it. */
static void
request_abandon(struct viad *d, struct via_vi *vi)
{
	struct via_nic *nic = vi->owner->nic;

	if (memcmp(vi->conn.remote_mac, nic->info.mac, 6) == 0)
		abandon_request(d, nic->info.mac, vi->conn.id, vi->id);
	else
		send_cm(nic, vi->conn.remote_mac, VIA_OP_DISC, 0, 0, vi->id, vi->conn.id, NULL);
}

static const char *const cm_state_names[] = {
	[VIA_CM_IDLE] = "idle",
	[VIA_CM_REQUESTING] = "requesting",
	[VIA_CM_PEER_REQUESTING] = "peer requesting",
	[VIA_CM_PEER_DONE] = "peer done",
};

const char *
via_cm_state_name(enum via_cm_state state)
{
	return (unsigned)state < RTE_DIM(cm_state_names) ? cm_state_names[state] : "?";
}

/* @p vi's requester state becomes @p to; the timers walk the VIs with a request out. */
static void
cm_enter(struct via_cm *cm, struct via_vi *vi, enum via_cm_state to)
{
	bool was = via_cm_requesting(vi);

	vi->conn.cm_state = to;
	if (via_cm_requesting(vi) && !was)
		TAILQ_INSERT_TAIL(&cm->requesting, vi, req_link);
	else if (!via_cm_requesting(vi) && was)
		TAILQ_REMOVE(&cm->requesting, vi, req_link);
}

/* End a pending request of @p vi: connected, or back to Idle with @p err. */
static void
request_done(struct viad *d, struct via_vi *vi, int err)
{
	struct via_vi_conn *c = &vi->conn;
	const bool peer = c->cm_state == VIA_CM_PEER_REQUESTING;

	cm_enter(d->cm, vi, peer ? VIA_CM_PEER_DONE : VIA_CM_IDLE);
	/* VipConnectPeerWait knows only "timed out" (no listener there) */
	if (peer && err == -ENXIO)
		err = -ETIMEDOUT;
	c->result = err;
	if (err == 0) {
		via_vi_set_state(vi, VIP_STATE_CONNECTED, "connection accepted");
	} else {
		/* tell the server its copy of the request is void, so a late
		 * VipConnectAccept answers "timed out" rather than half-open */
		if (!refused(err))
			request_abandon(d, vi);
		via_vi_set_state(vi, VIP_STATE_IDLE,
				 err == -ETIMEDOUT ? "connect timed out"
				 : err == -ENXIO ? "nobody waits for the request"
						 : "connect failed");
		c->id = 0;
	}
	if (c->reply_op != 0) {
		via_ctl_reply(d, vi->owner, c->reply_op, c->reply_seq, err,
			      err == 0 ? &c->remote_attr : NULL);
		/* a failed peer request is answered once */
		if (c->reply_op == VIA_CTL_PEER_WAIT && err != 0)
			cm_enter(d->cm, vi, VIA_CM_IDLE);
		c->reply_op = 0;
	}
}

static int
request_start(struct viad *d, struct via_session *s, const struct via_ctl_conn_request_req *q,
	      bool peer, struct via_vi **out)
{
	struct via_vi *vi = via_vi_get(d, s, q->vi);
	struct via_vi_conn *c;
	uint64_t now = via_now_ms();

	if (vi == NULL)
		return -ENOENT;
	if (q->local.disc_len > s->nic->info.max_discriminator_len ||
	    q->remote.disc_len > s->nic->info.max_discriminator_len ||
	    q->local.disc_len > VIA_WIRE_DISC_MAX || q->remote.disc_len > VIA_WIRE_DISC_MAX)
		return -EINVAL;
	if (vi->state != VIP_STATE_IDLE)
		return -EPERM;                    /* VIA §5: only an Idle VI connects */
	if (q->timeout_ms == 0)
		return -ETIMEDOUT;                /* VIA §9.4.4: "an immediate timeout error" */
	c = &vi->conn;
	cm_enter(d->cm, vi, VIA_CM_IDLE);
	memset(c, 0, sizeof(*c));
	c->id = new_conn_id();
	c->local = q->local;
	c->remote = q->remote;
	memcpy(c->remote_mac, q->remote.mac, 6);
	cm_enter(d->cm, vi, peer ? VIA_CM_PEER_REQUESTING : VIA_CM_REQUESTING);
	c->deadline_ms = q->timeout_ms == VIA_CTL_INFINITE ? UINT64_MAX : now + q->timeout_ms;
	c->next_retry_ms = now + CM_RETRY_MS;
	via_vi_set_state(vi, VIP_STATE_CONNECT_PENDING, peer ? "peer connect" : "connect request");
	send_req(vi);
	*out = vi;
	return 0;
}

int
via_cm_request(struct viad *d, struct via_session *s, const struct via_ctl_conn_request_req *q,
	       uint32_t seq)
{
	struct via_vi *vi;
	int rc = request_start(d, s, q, false, &vi);

	if (rc != 0)
		return rc;
	vi->conn.reply_op = VIA_CTL_CONN_REQUEST;
	vi->conn.reply_seq = seq;
	return VIA_CTL_DEFERRED;
}

int
via_cm_peer_request(struct viad *d, struct via_session *s, const struct via_ctl_conn_request_req *q)
{
	struct via_vi *vi;

	return request_start(d, s, q, true, &vi);
}

/* VipConnectPeerDone (@p seq 0) and VipConnectPeerWait, by requester state. */
int
via_cm_peer_done(struct viad *d, struct via_session *s, uint32_t vi_id, uint32_t seq,
		 struct via_ctl_vi_attr *attr)
{
	struct via_vi *vi = via_vi_get(d, s, vi_id);
	struct via_vi_conn *c;

	if (vi == NULL)
		return -ENOENT;
	c = &vi->conn;
	switch (c->cm_state) {
	case VIA_CM_PEER_REQUESTING:
		/* still out: PeerDone polls, PeerWait is answered at its end */
		if (seq == 0)
			return -EAGAIN;
		c->reply_op = VIA_CTL_PEER_WAIT;
		c->reply_seq = seq;
		return VIA_CTL_DEFERRED;
	case VIA_CM_PEER_DONE:
		if (c->result == 0) {
			*attr = c->remote_attr;
			return 0;
		}
		/* timed out, refused by the peer, or an attribute conflict
		 * (vipl.h: VIP_INVALID_RELIABILITY_LEVEL, _MTU, _QOS), reported once */
		cm_enter(d->cm, vi, VIA_CM_IDLE);
		return c->result;
	default:
		return -EPERM;                 /* no VipConnectPeerRequest outstanding */
	}
}

/*
 * The server has no VipConnectWait for @p vi's request (CONN_NOMATCH). §4.1:
 * "If the specified remote VI does not exist, is not reachable, is in the
 * wrong state, or its discriminator doesn't match, then the VI Provider
 * will return an error". The server keeps the request in its backlog, so
 * that a VipConnectWait issued just after finds it; the request ends with
 * VIP_NO_MATCH at the first answer viad.cm_nomatch_grace_ms after the first,
 * whatever its Timeout (docs/design.md section 8). A request that a
 * VipConnectWait has gets no such answer. A peer request waits for its
 * peer's request until its Timeout instead.
 */
static void
nomatch(struct viad *d, struct via_vi *vi)
{
	struct via_vi_conn *c = &vi->conn;
	uint64_t now = via_now_ms();

	if (c->nomatch_since_ms == 0)
		c->nomatch_since_ms = now;
	if (now - c->nomatch_since_ms >= d->conf.cm_nomatch_grace_ms)
		request_done(d, vi, -ENXIO);
}
/* ---- server side: requests, listeners, accept and reject ---------------- */

static bool
listener_matches(const struct via_cm_listener *l, const struct via_cm_req *r)
{
	const struct via_ctl_conn_wait_req *q = &l->req;

	if (l->nic != r->nic ||
	    !disc_eq(q->local.disc_len, q->local.disc, r->info.dst_disc_len, r->info.dst_disc))
		return false;
	if ((q->flags & VIA_CTL_FILTER_HOST) && memcmp(q->filter.mac, r->remote_mac, 6) != 0)
		return false;
	if ((q->flags & VIA_CTL_FILTER_DISC) &&
	    !disc_eq(q->filter.disc_len, q->filter.disc, r->info.src_disc_len, r->info.src_disc))
		return false;
	return true;
}

static void
wait_reply_fill(const struct via_cm_req *r, struct via_ctl_conn_wait_rep *rep)
{
	memset(rep, 0, sizeof(*rep));
	memcpy(rep->remote.mac, r->remote_mac, 6);
	rep->remote.disc_len = r->info.src_disc_len;
	memcpy(rep->remote.disc, r->info.src_disc, r->info.src_disc_len);
	attr_from_wire(&r->info, &rep->remote_attr);
	rep->conn = r->id;
}

static void
req_free(struct via_cm *cm, struct via_cm_req *r)
{
	TAILQ_REMOVE(&cm->req_list, r, link);
	via_idtab_free(&cm->reqs, r->id);
	free(r);
}

/* Request @p r goes to session @p s, whose VipConnectWait returns it. */
static void
req_take(struct via_cm_req *r, struct via_session *s)
{
	r->state = VIA_CM_REQ_OFFERED;
	r->owner = s;
}

/* Hand a backlogged request to the first listener that wants it. */
static bool
req_offer(struct viad *d, struct via_cm_req *r)
{
	struct via_cm_listener *l;
	struct via_ctl_conn_wait_rep rep;

	TAILQ_FOREACH(l, &d->cm->listeners, link) {
		if (!listener_matches(l, r))
			continue;
		req_take(r, l->s);
		wait_reply_fill(r, &rep);
		via_ctl_reply(d, l->s, VIA_CTL_CONN_WAIT, l->seq, 0, &rep);
		TAILQ_REMOVE(&d->cm->listeners, l, link);
		free(l);
		return true;
	}
	return false;
}

/* BACKLOG: a listener may have come since; if none, the requester hears
 * that nobody waits (CONN_NOMATCH: it keeps trying for the grace, §4.1). */
static void
req_copy_backlog(struct viad *d, struct via_cm_req *r)
{
	if (!req_offer(d, r))
		send_cm(r->nic, r->remote_mac, VIA_OP_CONN_NOMATCH, 0, r->remote_vi, 0, r->conn_id,
			NULL);
}

/* OFFERED: the consumer decides; its Accept or Reject answers (§9.4.2-9.4.3). */
static void
req_copy_offered(struct viad *d, struct via_cm_req *r)
{
	(void)d;
	(void)r;
}

/*
 * One entry per request state: its name, what a copy of the CONN_REQ (the
 * first one included) does, and how long past its last copy the request
 * stays: an offered one while its handle may still be used (Accept then
 * says it timed out).
 */
static const struct {
	const char *name;
	void (*on_copy)(struct viad *d, struct via_cm_req *r);
	uint64_t keep_ms;
} req_states[] = {
	[VIA_CM_REQ_BACKLOG] = { "backlog", req_copy_backlog, 0 },
	[VIA_CM_REQ_OFFERED] = { "offered", req_copy_offered, CM_HANDED_OUT_MS },
};

int
via_cm_wait(struct viad *d, struct via_session *s, const struct via_ctl_conn_wait_req *q,
	    uint32_t seq, struct via_ctl_conn_wait_rep *rep)
{
	struct via_cm *cm = d->cm;
	struct via_cm_listener *l;
	struct via_cm_req *r;

	if (q->local.disc_len > s->nic->info.max_discriminator_len ||
	    q->local.disc_len > VIA_WIRE_DISC_MAX || q->filter.disc_len > VIA_WIRE_DISC_MAX ||
	    (q->flags & ~(VIA_CTL_FILTER_HOST | VIA_CTL_FILTER_DISC)))
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (l == NULL)
		return -ENOMEM;
	l->s = s;
	l->nic = s->nic;
	l->seq = seq;
	l->req = *q;
	l->deadline_ms = q->timeout_ms == VIA_CTL_INFINITE ? UINT64_MAX
							   : via_now_ms() + q->timeout_ms;
	/* a request that arrived before this call (VIA §9.4.1: "if a matching
	 * connection request is not found immediately") */
	TAILQ_FOREACH(r, &cm->req_list, link) {
		/* an expired request is one whose requester gave up */
		if (r->state == VIA_CM_REQ_BACKLOG && r->expires_ms > via_now_ms() &&
		    listener_matches(l, r)) {
			req_take(r, s);
			wait_reply_fill(r, rep);
			free(l);
			return 0;
		}
	}
	if (q->timeout_ms == 0) {
		free(l);
		return -ETIMEDOUT;
	}
	TAILQ_INSERT_TAIL(&cm->listeners, l, link);
	return VIA_CTL_DEFERRED;
}

static struct via_cm_req *
req_get(struct viad *d, struct via_session *s, uint32_t id)
{
	struct via_cm_req *r = via_idtab_lookup(&d->cm->reqs, id);

	return r != NULL && r->state == VIA_CM_REQ_OFFERED && r->owner == s ? r : NULL;
}

int
via_cm_accept(struct viad *d, struct via_session *s, uint32_t conn, uint32_t vi_id)
{
	struct via_cm_req *r = req_get(d, s, conn);
	struct via_vi *vi = via_vi_get(d, s, vi_id);
	struct via_ctl_vi_attr remote;
	int rc;

	if (r == NULL || vi == NULL || r->nic != s->nic)
		return -ENOENT;
	if (vi->state != VIP_STATE_IDLE)
		return -EPERM;
	if (via_now_ms() >= r->expires_ms) {
		/* the requester stopped asking: it gave up (VIA §9.4.4 timeout) */
		req_free(d->cm, r);
		return -ETIMEDOUT;
	}
	/* on a conflict the request stays valid (§9.4.2) */
	attr_from_wire(&r->info, &remote);
	rc = attr_conflict(vi, &remote);
	if (rc != 0)
		return rc;
	memset(&vi->conn, 0, sizeof(vi->conn));
	vi->conn.id = r->conn_id;
	memcpy(vi->conn.remote_mac, r->remote_mac, 6);
	vi->conn.remote_vi = r->remote_vi;
	vi->conn.remote_attr = remote;
	conn_transfer(vi);
	agree_frame_payload(vi, &r->info);
	via_vi_set_state(vi, VIP_STATE_CONNECT_PENDING, "VipConnectAccept");
	d->ev.conn_reset(vi);
	send_accept(vi);
	via_vi_set_state(vi, VIP_STATE_CONNECTED, "connection accepted");
	req_free(d->cm, r);
	return 0;
}

/* Refuse request @p conn_id of VI @p vi at @p mac, for @p reason (in imm),
 * and remember it: a late copy of the request gets the same answer. */
static void
reject_send(struct via_cm *cm, struct via_nic *nic, const uint8_t *mac, uint32_t vi,
	    uint32_t conn_id, uint32_t reason)
{
	struct via_cm_rejected *rec = &cm->recent[cm->recent_next++ % CM_RECENT];

	memcpy(rec->mac, mac, 6);
	rec->conn_id = conn_id;
	rec->reason = reason;
	via_dp_send_xport(nic, mac, VIA_OP_CONN_REJECT, 0, vi, 0, conn_id, 0, reason);
}

static void
reject(struct viad *d, struct via_cm_req *r)
{
	reject_send(d->cm, r->nic, r->remote_mac, r->remote_vi, r->conn_id, VIA_REJECT_CONSUMER);
	req_free(d->cm, r);
}

int
via_cm_reject(struct viad *d, struct via_session *s, uint32_t conn)
{
	struct via_cm_req *r = req_get(d, s, conn);

	if (r == NULL)
		return -ENOENT;
	reject(d, r);
	return 0;
}

/* ---- disconnect (VIA §4.2, §9.4.5) ------------------------------------- */

int
via_cm_disconnect(struct viad *d, struct via_session *s, uint32_t vi_id)
{
	struct via_vi *vi = via_vi_get(d, s, vi_id);

	if (vi == NULL)
		return -ENOENT;
	switch (vi->state) {
	case VIP_STATE_CONNECTED:
		/* tell the peer; should this be lost, the peer learns at its
		 * next transfer, which this viad answers with RESET */
		send_cm(s->nic, vi->conn.remote_mac, VIA_OP_DISC, 0, vi->conn.remote_vi, vi->id,
			vi->conn.id, NULL);
		break;
	case VIP_STATE_CONNECT_PENDING:
		if (via_cm_requesting(vi)) {
			cm_enter(d->cm, vi, VIA_CM_IDLE);
			request_abandon(d, vi);
			if (vi->conn.reply_op != 0)
				via_ctl_reply(d, s, vi->conn.reply_op, vi->conn.reply_seq,
					      -ECONNABORTED, NULL);
		}
		break;
	default:
		break;
	}
	if (vi->state != VIP_STATE_IDLE)
		via_vi_set_state(vi, VIP_STATE_IDLE, "VipDisconnect");
	memset(&vi->conn, 0, sizeof(vi->conn));
	d->ev.conn_ended(d, vi);
	return 0;
}

/* The peer is gone: VIA §5.4 Error state, descriptors flushed, CONN_LOST. */
static void
connection_lost(struct viad *d, struct via_vi *vi, const char *why)
{
	via_vi_set_state(vi, VIP_STATE_ERROR, why);
	d->ev.conn_ended(d, vi);
	via_session_async_error(vi->owner, VIP_ERROR_CONN_LOST, vi->cookie, VIP_RESOURCE_VI, 0, 0);
}

/* The port of @p nic lost its link (via_events::link_down, from nic.c). */
static void
link_down(struct viad *d, struct via_nic *nic)
{
	struct via_session *s;
	struct via_vi *vi;

	/* VIA §7.1: a link failure is reported to every VI it concerns; a
	 * connection over a dead link is a lost connection */
	TAILQ_FOREACH(s, &d->session_list, link) {
		if (s->nic != nic)
			continue;
		TAILQ_FOREACH(vi, &s->vis, link) {
			if (vi->state == VIP_STATE_CONNECTED)
				connection_lost(d, vi, "link down");
		}
	}
}

/* ---- frames from the wire ----------------------------------------------- */

static const struct via_cm_rejected *
was_rejected(struct via_cm *cm, const uint8_t *mac, uint32_t conn_id)
{
	unsigned i;

	for (i = 0; i < CM_RECENT; i++) {
		if (cm->recent[i].conn_id == conn_id && memcmp(cm->recent[i].mac, mac, 6) == 0)
			return &cm->recent[i];
	}
	return NULL;
}

/* An established VI whose acceptance this request duplicates. */
static struct via_vi *
accepted_vi(struct viad *d, struct via_nic *nic, const uint8_t *mac, uint32_t remote_vi,
	    uint32_t conn_id)
{
	struct via_session *s;
	struct via_vi *vi;

	TAILQ_FOREACH(s, &d->session_list, link) {
		if (s->nic != nic)
			continue;
		TAILQ_FOREACH(vi, &s->vis, link) {
			if (vi->state == VIP_STATE_CONNECTED && vi->conn.id == conn_id &&
			    vi->conn.remote_vi == remote_vi &&
			    memcmp(vi->conn.remote_mac, mac, 6) == 0)
				return vi;
		}
	}
	return NULL;
}

/* VipConnectPeerRequest: a local VI requesting the requester (VIA §9.4). */
static struct via_vi *
peer_vi(struct viad *d, struct via_nic *nic, const uint8_t *mac, const struct via_wire_conn *w)
{
	struct via_vi *vi;

	TAILQ_FOREACH(vi, &d->cm->requesting, req_link) {
		const struct via_vi_conn *c = &vi->conn;

		if (vi->owner->nic == nic && c->cm_state == VIA_CM_PEER_REQUESTING &&
		    memcmp(c->remote_mac, mac, 6) == 0 &&
		    disc_eq(c->local.disc_len, c->local.disc, w->dst_disc_len, w->dst_disc) &&
		    disc_eq(c->remote.disc_len, c->remote.disc, w->src_disc_len, w->src_disc))
			return vi;
	}
	return NULL;
}

static void
on_conn_req(struct viad *d, struct via_nic *nic, const uint8_t *mac,
	    const struct via_wire_hdr *h, const struct via_wire_conn *w)
{
	uint32_t conn_id = via_wire_conn_id(h), src_vi = via_wire_src_vi(h);
	const struct via_cm_rejected *rec;
	struct via_cm *cm = d->cm;
	struct via_cm_req *r;
	struct via_vi *vi;
	int rc;

	if (w->dst_disc_len > VIA_WIRE_DISC_MAX || w->src_disc_len > VIA_WIRE_DISC_MAX)
		return;
	vi = accepted_vi(d, nic, mac, src_vi, conn_id);
	if (vi != NULL) {
		send_accept(vi);                   /* our CONN_ACCEPT was lost */
		return;
	}
	rec = was_rejected(cm, mac, conn_id);
	if (rec != NULL) {
		via_dp_send_xport(nic, mac, VIA_OP_CONN_REJECT, 0, src_vi, 0, conn_id, 0,
				  rec->reason);
		return;
	}
	if (via_wire_flags(h) & VIA_WF_PEER) {
		vi = peer_vi(d, nic, mac, w);
		if (vi == NULL) {
			send_cm(nic, mac, VIA_OP_CONN_NOMATCH, 0, src_vi, 0, conn_id, NULL);
			return;
		}
		/* both ends request each other; the end with the larger
		 * (MAC, VI) accepts, the other waits for that acceptance */
		{
			int cmp = memcmp(nic->info.mac, mac, 6);

			if (cmp < 0 || (cmp == 0 && vi->id < src_vi))
				return;
		}
		vi->conn.id = conn_id;
		vi->conn.remote_vi = src_vi;
		attr_from_wire(w, &vi->conn.remote_attr);
		agree_frame_payload(vi, w);
		/* both ends learn the conflict: vipl.h VipConnectPeerDone/Wait */
		rc = attr_conflict(vi, &vi->conn.remote_attr);
		if (rc != 0) {
			reject_send(cm, nic, mac, src_vi, conn_id, reject_reason(rc));
			request_done(d, vi, rc);
			return;
		}
		conn_transfer(vi);
		d->ev.conn_reset(vi);
		send_accept(vi);
		request_done(d, vi, 0);
		return;
	}
	TAILQ_FOREACH(r, &cm->req_list, link) {
		if (r->conn_id == conn_id && r->remote_vi == src_vi &&
		    memcmp(r->remote_mac, mac, 6) == 0) {
			r->expires_ms = via_now_ms() + CM_BACKLOG_MS;
			req_states[r->state].on_copy(d, r);
			return;
		}
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL || via_idtab_alloc(&cm->reqs, r, &r->id) != 0) {
		free(r);
		VLOG_WARN("CM: connection request dropped: %u requests pending", cm->reqs.nb_live);
		return;
	}
	r->nic = nic;
	memcpy(r->remote_mac, mac, 6);
	r->remote_vi = src_vi;
	r->conn_id = conn_id;
	r->info = *w;
	r->expires_ms = via_now_ms() + CM_BACKLOG_MS;
	r->state = VIA_CM_REQ_BACKLOG;
	TAILQ_INSERT_TAIL(&cm->req_list, r, link);
	req_states[r->state].on_copy(d, r);
}

/* A requester gave up (DISC to VI 0): its request here is void. */
static void
abandon_request(struct viad *d, const uint8_t *mac, uint32_t conn_id, uint32_t remote_vi)
{
	struct via_cm_req *r;

	TAILQ_FOREACH(r, &d->cm->req_list, link) {
		if (r->conn_id == conn_id && r->remote_vi == remote_vi &&
		    memcmp(r->remote_mac, mac, 6) == 0) {
			r->expires_ms = 0;
			return;
		}
	}
}

/* The VI an answer to a connection request names, if it is its current attempt's. */
static struct via_vi *
answered_vi(struct viad *d, struct via_nic *nic, const uint8_t *mac,
	    const struct via_wire_hdr *h)
{
	struct via_vi *vi = via_idtab_lookup(&d->vis, via_wire_dst_vi(h));

	if (vi == NULL || vi->owner->nic != nic || vi->conn.id != via_wire_conn_id(h) ||
	    memcmp(vi->conn.remote_mac, mac, 6) != 0)
		return NULL;
	return vi;
}

/*
 * VIA_CM_IDLE and VIA_CM_PEER_DONE: no request out, so an answer is a
 * duplicate, or for an extinct attempt (§4.1: "prevent ... the creation of
 * stale or duplicate connections by delayed or duplicate packets").
 */
static void
answer_ignored(struct viad *d __rte_unused, struct via_vi *vi __rte_unused,
	       const struct via_wire_hdr *h __rte_unused,
	       const struct via_wire_conn *w __rte_unused)
{
}

/*
 * The answers both requesting states take alike (§4.1): CONN_ACCEPT
 * connects the VI, on the terms the server sent; CONN_REJECT ends the
 * request with the server's reason. @return whether @p h was one of them
 */
static bool
answer_taken(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h,
	     const struct via_wire_conn *w)
{
	if (h->opcode == VIA_OP_CONN_ACCEPT) {
		vi->conn.remote_vi = via_wire_src_vi(h);
		attr_from_wire(w, &vi->conn.remote_attr);
		conn_transfer(vi);
		agree_frame_payload(vi, w);
		d->ev.conn_reset(vi);
		request_done(d, vi, 0);
		return true;
	}
	if (h->opcode == VIA_OP_CONN_REJECT) {
		request_done(d, vi, reject_error(via_wire_imm(h)));
		return true;
	}
	return false;
}

/*
 * VIA_CM_REQUESTING (VipConnectRequest, §9.4.4): an accept or a refusal
 * ends the request; CONN_NOMATCH too, after the grace (§4.1: "If the
 * specified remote VI does not exist ... return an error"; nomatch()).
 */
static void
answer_requesting(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h,
		  const struct via_wire_conn *w)
{
	if (!answer_taken(d, vi, h, w) && h->opcode == VIA_OP_CONN_NOMATCH)
		nomatch(d, vi);
}

/*
 * VIA_CM_PEER_REQUESTING (VipConnectPeerRequest): as a request, but its
 * peer has no VipConnectWait: CONN_NOMATCH only means the peer has not
 * asked yet, so the request waits for it until its Timeout.
 */
static void
answer_peer_requesting(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h,
		       const struct via_wire_conn *w)
{
	if (!answer_taken(d, vi, h, w) && h->opcode == VIA_OP_CONN_NOMATCH &&
	    vi->conn.nomatch_since_ms == 0)
		vi->conn.nomatch_since_ms = via_now_ms();
}

/* One function per requester state (enum via_cm_state): an answer to a request. */
static void (*const answer_in[])(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h,
				 const struct via_wire_conn *w) = {
	[VIA_CM_IDLE] = answer_ignored,
	[VIA_CM_REQUESTING] = answer_requesting,
	[VIA_CM_PEER_REQUESTING] = answer_peer_requesting,
	[VIA_CM_PEER_DONE] = answer_ignored,
};

/* A CM frame from the wire, already validated (dp_net.c). */
static void
cm_input(struct viad *d, struct via_nic *nic, const uint8_t *src_mac,
	 const struct via_wire_hdr *h)
{
	const struct via_wire_conn *w = (const void *)(h + 1);
	struct via_vi *vi;

	switch (h->opcode) {
	case VIA_OP_CONN_REQ:
		on_conn_req(d, nic, src_mac, h, w);
		break;
	case VIA_OP_CONN_ACCEPT:
	case VIA_OP_CONN_REJECT:
	case VIA_OP_CONN_NOMATCH:
		vi = answered_vi(d, nic, src_mac, h);
		if (vi != NULL)
			answer_in[vi->conn.cm_state](d, vi, h, w);
		break;
	case VIA_OP_DISC:
		if (via_wire_dst_vi(h) == 0) {
			abandon_request(d, src_mac, via_wire_conn_id(h), via_wire_src_vi(h));
			break;
		}
		/* fall through */
	case VIA_OP_RESET:
		vi = via_vi_of_frame(d, nic, src_mac, via_wire_dst_vi(h), via_wire_src_vi(h),
				     via_wire_conn_id(h), via_poll_stats_here());
		if (vi != NULL)
			connection_lost(d, vi, h->opcode == VIA_OP_DISC ? "peer disconnected"
									: "peer has no such connection");
		break;
	default:
		break;
	}
}

void
via_dp_cm_input(struct viad *d)
{
	struct rte_mbuf *pkts[VIA_DP_BURST];
	unsigned n, k;

	while ((n = rte_ring_dequeue_burst(d->cm_inbox, (void **)pkts, VIA_DP_BURST, NULL)) > 0) {
		for (k = 0; k < n; k++) {
			const struct rte_ether_hdr *eth =
				rte_pktmbuf_mtod(pkts[k], const struct rte_ether_hdr *);

			cm_input(d, &d->nics[pkts[k]->port], eth->src_addr.addr_bytes,
			 (const struct via_wire_hdr *)(eth + 1));
		}
		rte_pktmbuf_free_bulk(pkts, n);
	}
}

/* ---- timers and teardown ------------------------------------------------- */

static void
min_due(int64_t *due, uint64_t at, uint64_t now)
{
	int64_t in = at <= now ? 0 : (int64_t)(at - now);

	if (at != UINT64_MAX && (*due < 0 || in < *due))
		*due = in;
}

int
via_cm_timers(struct viad *d, uint64_t now)
{
	struct via_cm *cm = d->cm;
	struct via_cm_listener *l, *ln;
	struct via_cm_req *r, *rn;
	struct via_vi *vi, *vn;
	int64_t due = -1;

	/* only the VIs with a request out: the timers cost nothing per idle VI */
	TAILQ_FOREACH_SAFE(vi, &cm->requesting, req_link, vn) {
		struct via_vi_conn *c = &vi->conn;

		if (now >= c->deadline_ms) {
			request_done(d, vi, c->nomatch_since_ms != 0 ? -ENXIO : -ETIMEDOUT);
			continue;
		}
		if (now >= c->next_retry_ms) {
			send_req(vi);
			c->next_retry_ms = now + CM_RETRY_MS;
		}
		min_due(&due, c->next_retry_ms, now);
		min_due(&due, c->deadline_ms, now);
	}
	TAILQ_FOREACH_SAFE(l, &cm->listeners, link, ln) {
		if (now >= l->deadline_ms) {
			via_ctl_reply(d, l->s, VIA_CTL_CONN_WAIT, l->seq, -ETIMEDOUT, NULL);
			TAILQ_REMOVE(&cm->listeners, l, link);
			free(l);
			continue;
		}
		min_due(&due, l->deadline_ms, now);
	}
	TAILQ_FOREACH_SAFE(r, &cm->req_list, link, rn) {
		uint64_t end = r->expires_ms + req_states[r->state].keep_ms;

		if (now >= end) {
			VLOG_DBG("CM: request %u of VI %u (conn_id %#x) expires, %s", r->id,
				 r->remote_vi, r->conn_id, req_states[r->state].name);
			req_free(cm, r);
			continue;
		}
		min_due(&due, end, now);
	}
	return due > INT32_MAX ? INT32_MAX : (int)due;
}

void
via_cm_session_closed(struct viad *d, struct via_session *s)
{
	struct via_cm *cm = d->cm;
	struct via_cm_listener *l, *ln;
	struct via_cm_req *r, *rn;
	struct via_vi *vi;

	TAILQ_FOREACH_SAFE(l, &cm->listeners, link, ln) {
		if (l->s == s) {
			TAILQ_REMOVE(&cm->listeners, l, link);
			free(l);
		}
	}
	/* requests handed to this process and never answered: refuse them */
	TAILQ_FOREACH_SAFE(r, &cm->req_list, link, rn) {
		if (r->state == VIA_CM_REQ_OFFERED && r->owner == s)
			reject(d, r);
	}
	TAILQ_FOREACH(vi, &s->vis, link) {
		if (vi->state == VIP_STATE_CONNECTED)
			send_cm(s->nic, vi->conn.remote_mac, VIA_OP_DISC, 0, vi->conn.remote_vi,
				vi->id, vi->conn.id, NULL);
		/* its VIs are about to be freed */
		cm_enter(cm, vi, VIA_CM_IDLE);
		vi->conn.reply_op = 0;
	}
}
