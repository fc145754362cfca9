/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The connection manager (VIA §4, §5, §9.4). Runs on the control thread
 * (client calls, timers, and the CM frames the shards hand over through
 * viad.cm_inbox), under every shard's data-path lock; only via_cm_admit()
 * runs on the poll lcores.
 *
 * Protocol (docs/wire-format.md section 7, where the handshake is a table
 * of (state, frame) -> action): a three-way handshake. The requester sends
 * CONN_REQ every CM_RETRY_MS; the server's viad answers a first contact
 * with a cookie of the source MAC (CONN_COOKIE) and keeps nothing until a
 * CONN_REQ carries it back, as SYN cookies do. It then keeps the request in
 * a backlog (answered CONN_NOMATCH) until a VipConnectWait takes it, so
 * that a VipConnectWait issued later, even with timeout 0, finds it - for
 * a short grace: after viad.cm_nomatch_grace_ms of CONN_NOMATCH the
 * request fails (VIA §4.1). VipConnectReject answers CONN_REJECT.
 * VipConnectAccept sends CONN_ACCEPT and waits: the requester, Connected
 * when CONN_ACCEPT arrives, confirms with CONN_ACK (or its first frame of
 * data), and only then is the acceptor Connected and VipConnectAccept
 * successful. A requester that gave up answers a late CONN_ACCEPT with
 * CONN_REJECT (VIA_REJECT_ABANDONED), which fails the accept: accept and
 * give-up exclude each other, and no half-open connection is made. A
 * request or an accept that hears nothing for viad.cm_unreachable_ms fails.
 *
 * Connection identifiers (VIA §4.1, §4.2): every attempt gets a fresh
 * 32-bit identifier from a per-boot random base; data frames carry it and
 * are dropped unless it is the VI's current one, so frames of an extinct
 * connection can never reach a new one.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <rte_ether.h>
#include <rte_random.h>
#include <rte_ring.h>

#include <vipl.h>

#include "dp/dp.h"
#include "upgrade.h"
#include "viad.h"
#include "wire.h"

#define CM_RETRY_MS        100   /* CONN_REQ and CONN_ACCEPT retransmission interval */
#define CM_BACKLOG_MS      1000  /* a request lives this long after its last copy */
#define CM_MAX_REQS        4096  /* incoming requests held at once */
#define CM_REQS_PER_SOURCE 256   /* ... of them from one source MAC */
#define CM_HANDED_OUT_MS   60000 /* an abandoned request's handle stays answerable */
#define CM_REQ_BUCKETS     4096  /* the requests' hash, a power of two */
#define CM_SRC_BUCKETS     1024  /* the sources' hash, a power of two */
#define CM_COOKIE_EPOCH_MS 65536 /* a cookie is good for this, and the next epoch */
#define CM_FLOOD_LOG_MS    10000 /* at most one flood report this often */
#define CM_FLOOD_LOG_MIN   1000  /* cookies in one such interval that make a report */

_Static_assert((CM_REQ_BUCKETS & (CM_REQ_BUCKETS - 1)) == 0, "a power of two");
_Static_assert((CM_SRC_BUCKETS & (CM_SRC_BUCKETS - 1)) == 0, "a power of two");

/*
 * The server side of VIA §4.1: an incoming request, from the copy of
 * CONN_REQ that proved its source (a cookie) until CM_BACKLOG_MS after the
 * last copy once it is answered. Its state says what a copy gets.
 */
enum via_cm_req_state {
	VIA_CM_REQ_BACKLOG,          /* no VipConnectWait has taken it yet */
	VIA_CM_REQ_OFFERED,          /* a VipConnectWait returned its ConnHandle */
	VIA_CM_REQ_ACCEPTING,        /* VipConnectAccept: VI @c vi waits for the CONN_ACK */
	VIA_CM_REQ_ACCEPTED,         /* VI @c vi is Connected */
	VIA_CM_REQ_REJECTED,         /* refused, for @c reason */
	VIA_CM_REQ_VOID,             /* the requester gave up, or the accept expired */
};

/* A source MAC with requests held: the per-source limit's count. */
struct via_cm_source {
	struct via_cm_source *next;  /* in its hash bucket */
	uint8_t mac[6];
	uint32_t nb_reqs;
};

/* An incoming connection request. */
struct via_cm_req {
	TAILQ_ENTRY(via_cm_req) link;
	struct via_cm_req *next;     /* in its hash bucket */
	struct via_cm_source *src;
	uint32_t id;                 /* the ConnHandle's viad id */
	enum via_cm_req_state state;
	struct via_nic *nic;
	struct via_session *owner;   /* offered: whose VipConnectWait took it */
	uint8_t remote_mac[6];
	uint32_t remote_vi;
	uint32_t conn_id;
	uint32_t vi;                 /* ACCEPTING, ACCEPTED: the VI that accepted it */
	uint32_t reason;             /* REJECTED: enum via_wire_reject, sent again */
	bool peer_intact;            /* the request said VIA_WF_INTACT */
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

struct via_cm {
	struct via_idtab reqs;
	TAILQ_HEAD(, via_cm_req) req_list;
	struct via_cm_req *req_hash[CM_REQ_BUCKETS];
	struct via_cm_source *src_hash[CM_SRC_BUCKETS];
	TAILQ_HEAD(, via_cm_listener) listeners;
	struct via_vi_list handshakes; /**< VIs in a handshake: the timers walk these */
	/** SipHash key of the cookies and the hashes; set once (via_cm_admit
	 *  reads it on the poll lcores) */
	uint64_t key[2];
	uint64_t flood_next_ms;        /**< the next look at the counters below */
	uint64_t flood_cookies;        /**< cm_cookies_sent at the last look */
	uint64_t flood_refused;        /**< cm_requests_refused at the last look */
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
	TAILQ_INIT(&cm->handshakes);
	/* unpredictable, or a blind host could compute the cookies */
	if (getrandom(cm->key, sizeof(cm->key), 0) != sizeof(cm->key)) {
		cm->key[0] = rte_rand();
		cm->key[1] = rte_rand();
	}
	d->cm = cm;
	d->ev.link_down = link_down;
	return 0;
}

static void req_free(struct via_cm *cm, struct via_cm_req *r);

void
via_cm_fini(struct viad *d)
{
	struct via_cm *cm = d->cm;
	struct via_cm_req *r;
	struct via_cm_listener *l;

	if (cm == NULL)
		return;
	while ((r = TAILQ_FIRST(&cm->req_list)) != NULL)
		req_free(cm, r);
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

/* ---- keyed hashes: cookies, and the tables' buckets ---------------------- */

#define SIP_ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIP_ROUND(v0, v1, v2, v3)                                              \
	do {                                                                     \
		v0 += v1; v1 = SIP_ROTL(v1, 13); v1 ^= v0; v0 = SIP_ROTL(v0, 32); \
		v2 += v3; v3 = SIP_ROTL(v3, 16); v3 ^= v2;                       \
		v0 += v3; v3 = SIP_ROTL(v3, 21); v3 ^= v0;                       \
		v2 += v1; v1 = SIP_ROTL(v1, 17); v1 ^= v2; v2 = SIP_ROTL(v2, 32); \
	} while (0)

/*
 * SipHash-2-4 of @p len (< 256) bytes: a keyed hash whose key a host cannot
 * learn from the cookies of its own MAC, so it cannot compute another's.
 */
static uint64_t
siphash24(const uint64_t key[2], const uint8_t *in, size_t len)
{
	uint64_t v0 = UINT64_C(0x736f6d6570736575) ^ key[0];
	uint64_t v1 = UINT64_C(0x646f72616e646f6d) ^ key[1];
	uint64_t v2 = UINT64_C(0x6c7967656e657261) ^ key[0];
	uint64_t v3 = UINT64_C(0x7465646279746573) ^ key[1];
	uint64_t m, b = (uint64_t)len << 56;
	size_t i, j;

	for (i = 0; i + 8 <= len; i += 8) {
		for (m = 0, j = 0; j < 8; j++)
			m |= (uint64_t)in[i + j] << (8 * j);
		v3 ^= m;
		SIP_ROUND(v0, v1, v2, v3);
		SIP_ROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	for (j = 0; i + j < len; j++)
		b |= (uint64_t)in[i + j] << (8 * j);
	v3 ^= b;
	SIP_ROUND(v0, v1, v2, v3);
	SIP_ROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	for (i = 0; i < 4; i++)
		SIP_ROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

#undef SIP_ROUND
#undef SIP_ROTL

/* The cookie of source @p mac in cookie epoch @p epoch: never 0 (none). */
static uint32_t
cookie_of(const struct via_cm *cm, const uint8_t *mac, uint64_t epoch)
{
	uint8_t in[6 + 8];
	uint32_t c;

	memcpy(in, mac, 6);
	memcpy(in + 6, &epoch, 8);
	c = (uint32_t)siphash24(cm->key, in, sizeof(in));
	return c != 0 ? c : 1;
}

/* Whether @p cookie is @p mac's, of this epoch or the one before. */
static bool
cookie_valid(const struct via_cm *cm, const uint8_t *mac, uint32_t cookie, uint64_t now)
{
	uint64_t epoch = now / CM_COOKIE_EPOCH_MS;

	return cookie != 0 &&
	       (cookie == cookie_of(cm, mac, epoch) ||
		(epoch > 0 && cookie == cookie_of(cm, mac, epoch - 1)));
}

static unsigned
req_bucket(const struct via_cm *cm, const struct via_nic *nic, const uint8_t *mac,
	   uint32_t remote_vi, uint32_t conn_id)
{
	uint8_t in[6 + 2 + 4 + 4];

	memcpy(in, mac, 6);
	memcpy(in + 6, &nic->index, 2);
	memcpy(in + 8, &remote_vi, 4);
	memcpy(in + 12, &conn_id, 4);
	return (unsigned)siphash24(cm->key, in, sizeof(in)) & (CM_REQ_BUCKETS - 1);
}

static unsigned
src_bucket(const struct via_cm *cm, const uint8_t *mac)
{
	return (unsigned)siphash24(cm->key, mac, 6) & (CM_SRC_BUCKETS - 1);
}

/* ---- VI attributes -------------------------------------------------------- */

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
 * VIP_INVALID_RELIABILITY_LEVEL, _MTU and _QOS of via_vip_return()
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

/* VIA_WF_INTACT for the connection frames of a NIC whose port cannot alter
 * frames: its peer may send it data frames without their payload CRC */
static uint16_t
intact_flag(const struct via_nic *nic)
{
	return nic->caps & VIA_PORT_CAP_INTACT ? VIA_WF_INTACT : 0;
}

/* The attributes and terms of a connection to a VI of attributes @p w whose
 * port cannot alter frames if @p peer_intact: if neither can ours, data
 * frames go without their payload CRC (docs/wire-format.md section 3) */
static void
conn_terms(struct via_vi *vi, const struct via_wire_conn *w, bool peer_intact)
{
	attr_from_wire(w, &vi->conn.remote_attr);
	conn_transfer(vi);
	agree_frame_payload(vi, w);
	vi->conn.unsummed = peer_intact && intact_flag(vi->owner->nic) != 0;
}

static bool
disc_eq(uint8_t alen, const uint8_t *a, uint8_t blen, const uint8_t *b)
{
	return alen == blen && memcmp(a, b, alen) == 0;
}

/* ---- frames out ------------------------------------------------------------ */

static void
cm_send(struct via_nic *nic, const uint8_t mac[6], uint8_t op, uint16_t flags, uint32_t dst_vi,
	uint32_t src_vi, uint32_t conn_id, uint32_t imm, const struct via_wire_conn *payload)
{
	struct via_wire_hdr h;

	via_wire_hdr_init(&h, op, flags, dst_vi, src_vi, conn_id);
	via_wire_set_imm(&h, imm);
	via_dp_send_frame(nic, mac, &h, payload, payload != NULL ? sizeof(*payload) : 0);
}

static void
send_req(struct via_vi *vi)
{
	struct via_wire_conn w;

	attr_to_wire(vi, &vi->conn.local, &vi->conn.remote, &w);
	cm_send(vi->owner->nic, vi->conn.remote_mac, VIA_OP_CONN_REQ,
		(vi->conn.cm_state == VIA_CM_PEER_REQUESTING ? VIA_WF_PEER : 0) |
			intact_flag(vi->owner->nic), 0, vi->id,
		vi->conn.id, vi->conn.cookie, &w);
}

static void
send_accept(struct via_vi *vi)
{
	struct via_wire_conn w;

	attr_to_wire(vi, NULL, NULL, &w);
	/* the size granted, not the one asked for (§9.10.5) */
	w.max_transfer = rte_cpu_to_be_32(vi->conn.max_transfer);
	cm_send(vi->owner->nic, vi->conn.remote_mac, VIA_OP_CONN_ACCEPT,
		intact_flag(vi->owner->nic), vi->conn.remote_vi, vi->id, vi->conn.id, 0, &w);
}

/* To the other end of @p vi's connection: it ends (DISC) or is confirmed (CONN_ACK). */
static void
send_to_peer(struct via_vi *vi, uint8_t op)
{
	cm_send(vi->owner->nic, vi->conn.remote_mac, op, 0, vi->conn.remote_vi, vi->id,
		vi->conn.id, 0, NULL);
}

/* ---- requests held (the server side), by (NIC, MAC, VI, conn_id) ----------- */

static struct via_cm_req *
req_find(struct via_cm *cm, const struct via_nic *nic, const uint8_t *mac, uint32_t remote_vi,
	 uint32_t conn_id)
{
	struct via_cm_req *r = cm->req_hash[req_bucket(cm, nic, mac, remote_vi, conn_id)];

	for (; r != NULL; r = r->next) {
		if (r->conn_id == conn_id && r->remote_vi == remote_vi && r->nic == nic &&
		    memcmp(r->remote_mac, mac, 6) == 0)
			return r;
	}
	return NULL;
}

/* The per-source count of @p mac, made if @p make. */
static struct via_cm_source *
source_get(struct via_cm *cm, const uint8_t *mac, bool make)
{
	struct via_cm_source **head = &cm->src_hash[src_bucket(cm, mac)], *src;

	for (src = *head; src != NULL; src = src->next) {
		if (memcmp(src->mac, mac, 6) == 0)
			return src;
	}
	if (!make || (src = calloc(1, sizeof(*src))) == NULL)
		return NULL;
	memcpy(src->mac, mac, 6);
	src->next = *head;
	*head = src;
	return src;
}

static void
source_free(struct via_cm *cm, struct via_cm_source *src)
{
	struct via_cm_source **p;

	for (p = &cm->src_hash[src_bucket(cm, src->mac)]; *p != src; p = &(*p)->next)
		;
	*p = src->next;
	free(src);
}

/*
 * Hold a request from @p mac (a source that proved it receives there), in
 * state @p state. Refused past the per-source or the global limit, so that
 * one host cannot fill the table (counted; via_cm_timers reports it).
 * @return it, or NULL
 */
static struct via_cm_req *
req_new(struct via_cm *cm, struct via_nic *nic, const uint8_t *mac, uint32_t remote_vi,
	uint32_t conn_id, const struct via_wire_conn *w, enum via_cm_req_state state)
{
	struct via_cm_source *src = source_get(cm, mac, true);
	struct via_cm_req *r;
	unsigned b;

	if (src == NULL || src->nb_reqs >= CM_REQS_PER_SOURCE ||
	    (r = calloc(1, sizeof(*r))) == NULL)
		goto refuse;
	if (via_idtab_alloc(&cm->reqs, r, &r->id) != 0) {
		free(r);
		goto refuse;
	}
	src->nb_reqs++;
	r->src = src;
	r->nic = nic;
	memcpy(r->remote_mac, mac, 6);
	r->remote_vi = remote_vi;
	r->conn_id = conn_id;
	r->info = *w;
	r->state = state;
	r->expires_ms = via_now_ms() + CM_BACKLOG_MS;
	b = req_bucket(cm, nic, mac, remote_vi, conn_id);
	r->next = cm->req_hash[b];
	cm->req_hash[b] = r;
	TAILQ_INSERT_TAIL(&cm->req_list, r, link);
	return r;
refuse:
	via_poll_stats_here()->cm_requests_refused++;
	if (src != NULL && src->nb_reqs == 0)
		source_free(cm, src);
	return NULL;
}

static void
req_free(struct via_cm *cm, struct via_cm_req *r)
{
	struct via_cm_req **p = &cm->req_hash[req_bucket(cm, r->nic, r->remote_mac, r->remote_vi,
							 r->conn_id)];

	while (*p != r)
		p = &(*p)->next;
	*p = r->next;
	TAILQ_REMOVE(&cm->req_list, r, link);
	if (--r->src->nb_reqs == 0)
		source_free(cm, r->src);
	via_idtab_free(&cm->reqs, r->id);
	free(r);
}

/* Request @p r is answered for good (@p state): kept a while for late copies. */
static void
req_settle(struct via_cm_req *r, enum via_cm_req_state state)
{
	r->state = state;
	r->expires_ms = via_now_ms() + CM_BACKLOG_MS;
}

/* The request VI @p vi accepts or accepted. */
static struct via_cm_req *
req_of_vi(struct via_cm *cm, const struct via_vi *vi)
{
	struct via_cm_req *r = req_find(cm, vi->owner->nic, vi->conn.remote_mac,
					vi->conn.remote_vi, vi->conn.id);

	return r != NULL && r->vi == vi->id ? r : NULL;
}

/* Refuse request @p conn_id of VI @p vi at @p mac, for @p reason (in imm). */
static void
reject_send(struct via_nic *nic, const uint8_t *mac, uint32_t vi, uint32_t conn_id,
	    uint32_t reason)
{
	cm_send(nic, mac, VIA_OP_CONN_REJECT, 0, vi, 0, conn_id, reason, NULL);
}

/* Refuse @p r (the consumer did, or its process ended); later copies get the same. */
static void
reject(struct via_cm_req *r)
{
	r->reason = VIA_REJECT_CONSUMER;
	req_settle(r, VIA_CM_REQ_REJECTED);
	reject_send(r->nic, r->remote_mac, r->remote_vi, r->conn_id, r->reason);
}

/* ---- handshake states of a VI (enum via_cm_state) -------------------------- */

static const char *const cm_state_names[] = {
	[VIA_CM_IDLE] = "idle",
	[VIA_CM_REQUESTING] = "requesting",
	[VIA_CM_PEER_REQUESTING] = "peer requesting",
	[VIA_CM_ACCEPTING] = "accepting",
	[VIA_CM_PEER_ACCEPTING] = "peer accepting",
	[VIA_CM_PEER_DONE] = "peer done",
};

const char *
via_cm_state_name(enum via_cm_state state)
{
	return (unsigned)state < RTE_DIM(cm_state_names) ? cm_state_names[state] : "?";
}

static bool
accepting(const struct via_vi *vi)
{
	return vi->conn.cm_state == VIA_CM_ACCEPTING || vi->conn.cm_state == VIA_CM_PEER_ACCEPTING;
}

/* @p vi's handshake state becomes @p to; the timers walk the VIs in one. */
static void
cm_enter(struct via_cm *cm, struct via_vi *vi, enum via_cm_state to)
{
	bool was = via_cm_handshaking(vi);

	vi->conn.cm_state = to;
	if (via_cm_handshaking(vi) && !was)
		TAILQ_INSERT_TAIL(&cm->handshakes, vi, req_link);
	else if (!via_cm_handshaking(vi) && was)
		TAILQ_REMOVE(&cm->handshakes, vi, req_link);
}

/* @p vi accepts its connection (set up by the caller): CONN_ACCEPT until it is confirmed. */
static void
accept_start(struct viad *d, struct via_vi *vi, enum via_cm_state state)
{
	uint64_t now = via_now_ms();

	cm_enter(d->cm, vi, state);
	/* however long the consumer's Timeout: a handshake begun is finished
	 * or refused, never left half done */
	vi->conn.deadline_ms = now + d->conf.cm_unreachable_ms;
	vi->conn.next_retry_ms = now + CM_RETRY_MS;
	d->ev.conn_reset(vi);
	send_accept(vi);
}

static void abandon(struct viad *d, struct via_nic *nic, const uint8_t *mac, uint32_t conn_id,
		    uint32_t remote_vi);

/* Void the server's copy of @p vi's request: a DISC to VI 0; on this very
 * NIC, at once, so that no VipConnectWait can still return the request. */
static void
request_abandon(struct viad *d, struct via_vi *vi)
{
	struct via_nic *nic = vi->owner->nic;

	if (memcmp(vi->conn.remote_mac, nic->info.mac, 6) == 0)
		abandon(d, nic, nic->info.mac, vi->conn.id, vi->id);
	else
		cm_send(nic, vi->conn.remote_mac, VIA_OP_DISC, 0, 0, vi->id, vi->conn.id, 0, NULL);
}

/*
 * End @p vi's handshake: Connected (@p err 0), or back to Idle with @p err,
 * the deferred call answered. A requester that did not hear a refusal voids
 * its request at the server; an acceptor's caller has told the requester
 * what it must know.
 */
static void
handshake_end(struct viad *d, struct via_vi *vi, int err)
{
	struct via_vi_conn *c = &vi->conn;
	const bool peer = c->cm_state == VIA_CM_PEER_REQUESTING ||
			  c->cm_state == VIA_CM_PEER_ACCEPTING;
	const bool accepted = accepting(vi);

	cm_enter(d->cm, vi, peer ? VIA_CM_PEER_DONE : VIA_CM_IDLE);
	/* VipConnectPeerWait knows only "timed out" (no listener there) */
	if (peer && err == -ENXIO)
		err = -ETIMEDOUT;
	c->result = err;
	if (err == 0) {
		via_vi_set_state(vi, VIP_STATE_CONNECTED,
				 accepted ? "the requester confirmed" : "connection accepted");
	} else {
		if (!accepted && !refused(err))
			request_abandon(d, vi);
		via_vi_set_state(vi, VIP_STATE_IDLE,
				 err == -ETIMEDOUT ? "connect timed out"
				 : err == -ENXIO ? "nobody waits for the request"
				 : err == -ECONNABORTED ? "VipDisconnect"
						 : "connect failed");
		c->id = 0;
	}
	if (c->reply_op != 0) {
		via_ctl_reply(d, vi->owner, c->reply_op, c->reply_seq, err,
			      err == 0 && c->reply_op != VIA_CTL_CONN_ACCEPT ? &c->remote_attr : NULL);
		/* a failed peer request is answered once */
		if (c->reply_op == VIA_CTL_PEER_WAIT && err != 0)
			cm_enter(d->cm, vi, VIA_CM_IDLE);
		c->reply_op = 0;
	}
}

/* The requester of @p vi's accept refused it (it has no such request): it fails. */
static void
accept_refused(struct viad *d, struct via_vi *vi)
{
	struct via_cm_req *r = req_of_vi(d->cm, vi);

	if (r != NULL)
		req_settle(r, VIA_CM_REQ_VOID);
	/* VIA §9.4.4's timeout of the requester, or its VipDisconnect */
	handshake_end(d, vi, -ETIMEDOUT);
}

/* @p vi's consumer ends its accept (VipDisconnect, its process ended): the
 * requester, Connected or not, hears it ends; its copies get CONN_REJECT. */
static void
accept_withdraw(struct viad *d, struct via_vi *vi)
{
	struct via_cm_req *r = req_of_vi(d->cm, vi);

	send_to_peer(vi, VIA_OP_DISC);
	if (r != NULL) {
		r->reason = VIA_REJECT_CONSUMER;
		req_settle(r, VIA_CM_REQ_REJECTED);
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
	c->heard_ms = now;
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

/* VipConnectPeerDone (@p seq 0) and VipConnectPeerWait, by handshake state. */
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
	case VIA_CM_PEER_ACCEPTING:
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
		handshake_end(d, vi, -ENXIO);
}

/* ---- server side: listeners, Wait, Accept, Reject -------------------------- */

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

/* A copy of the request of @p r arrived: the answer of its state. */

/* BACKLOG: a listener may have come since; if none, the requester hears
 * that nobody waits (CONN_NOMATCH: it keeps trying for the grace, §4.1). */
static void
req_copy_backlog(struct viad *d, struct via_cm_req *r)
{
	if (!req_offer(d, r))
		cm_send(r->nic, r->remote_mac, VIA_OP_CONN_NOMATCH, 0, r->remote_vi, 0, r->conn_id,
			0, NULL);
}

/* OFFERED: the consumer decides (§9.4.2-9.4.3); meanwhile the requester
 * hears that its request is held (CONN_COOKIE), or it would count the
 * server unreachable. */
static void
req_copy_offered(struct viad *d, struct via_cm_req *r)
{
	cm_send(r->nic, r->remote_mac, VIA_OP_CONN_COOKIE, 0, r->remote_vi, 0, r->conn_id,
		cookie_of(d->cm, r->remote_mac, via_now_ms() / CM_COOKIE_EPOCH_MS), NULL);
}

/* ACCEPTING: our CONN_ACCEPT was lost: again. */
static void
req_copy_accepting(struct viad *d, struct via_cm_req *r)
{
	struct via_vi *vi = via_idtab_lookup(&d->vis, r->vi);

	if (vi != NULL && accepting(vi) && vi->conn.id == r->conn_id)
		send_accept(vi);
}

/* REJECTED: the same refusal again. */
static void
req_copy_rejected(struct viad *d, struct via_cm_req *r)
{
	(void)d;
	reject_send(r->nic, r->remote_mac, r->remote_vi, r->conn_id, r->reason);
}

/* ACCEPTED, VOID: a late copy of a request answered for good: nothing. */
static void
req_copy_ignored(struct viad *d, struct via_cm_req *r)
{
	(void)d;
	(void)r;
}

/*
 * One entry per request state: its name, what a copy of the CONN_REQ (the
 * first one included) does, and how long past its last copy the request
 * stays: an offered one while its handle may still be used (Accept then
 * says it timed out); an accepting one while its VI accepts.
 */
static const struct {
	const char *name;
	void (*on_copy)(struct viad *d, struct via_cm_req *r);
	uint64_t keep_ms;
} req_states[] = {
	[VIA_CM_REQ_BACKLOG] = { "backlog", req_copy_backlog, 0 },
	[VIA_CM_REQ_OFFERED] = { "offered", req_copy_offered, CM_HANDED_OUT_MS },
	[VIA_CM_REQ_ACCEPTING] = { "accepting", req_copy_accepting, UINT64_MAX },
	[VIA_CM_REQ_ACCEPTED] = { "accepted", req_copy_ignored, 0 },
	[VIA_CM_REQ_REJECTED] = { "rejected", req_copy_rejected, 0 },
	[VIA_CM_REQ_VOID] = { "void", req_copy_ignored, 0 },
};

/*
 * How long past its expiry @p r stays: a handle given out stays
 * answerable; a refusal outlives its requester's copies, which may all be
 * lost, as its answers may: a requester that hears nothing gives up after
 * cm_unreachable_ms, and must not find the request new again before (found
 * by tests/fuzz/sim_cm.c, seed 5590477).
 */
static uint64_t
req_keep_ms(const struct viad *d, const struct via_cm_req *r)
{
	if (r->state == VIA_CM_REQ_VOID && r->owner != NULL)
		return CM_HANDED_OUT_MS;
	if (r->state == VIA_CM_REQ_REJECTED)
		return d->conf.cm_unreachable_ms;
	return req_states[r->state].keep_ms;
}

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

/* The request of ConnHandle @p id, if @p s may answer it. */
static struct via_cm_req *
req_get(struct viad *d, struct via_session *s, uint32_t id)
{
	struct via_cm_req *r = via_idtab_lookup(&d->cm->reqs, id);

	return r != NULL && r->owner == s &&
	       (r->state == VIA_CM_REQ_OFFERED || r->state == VIA_CM_REQ_VOID) ? r : NULL;
}

int
via_cm_accept(struct viad *d, struct via_session *s, uint32_t conn, uint32_t vi_id, uint32_t seq)
{
	struct via_cm_req *r = req_get(d, s, conn);
	struct via_vi *vi = via_vi_get(d, s, vi_id);
	struct via_ctl_vi_attr remote;
	int rc;

	if (r == NULL || vi == NULL || r->nic != s->nic)
		return -ENOENT;
	if (vi->state != VIP_STATE_IDLE)
		return -EPERM;
	if (r->state == VIA_CM_REQ_VOID || via_now_ms() >= r->expires_ms) {
		/* the requester gave up (VIA §9.4.4 timeout), or stopped asking */
		req_free(d->cm, r);
		return -ETIMEDOUT;
	}
	/* on a conflict the request stays valid (§9.4.2) */
	attr_from_wire(&r->info, &remote);
	rc = attr_conflict(vi, &remote);
	if (rc != 0)
		return rc;
	memset(&vi->conn, 0, sizeof(vi->conn));
	conn_terms(vi, &r->info, r->peer_intact);
	/* the memory of its poll lcore for this connection (dp/dp_mem.c);
	 * §9.4.2 "failed due to a resource limit": the request stays valid */
	rc = via_dp_vi_provision(vi);
	if (rc != 0)
		return rc;
	vi->conn.id = r->conn_id;
	memcpy(vi->conn.remote_mac, r->remote_mac, 6);
	vi->conn.remote_vi = r->remote_vi;
	vi->conn.reply_op = VIA_CTL_CONN_ACCEPT;
	vi->conn.reply_seq = seq;
	r->state = VIA_CM_REQ_ACCEPTING;
	r->vi = vi->id;
	via_vi_set_state(vi, VIP_STATE_CONNECT_PENDING, "VipConnectAccept");
	accept_start(d, vi, VIA_CM_ACCEPTING);
	return VIA_CTL_DEFERRED;
}

int
via_cm_reject(struct viad *d, struct via_session *s, uint32_t conn)
{
	struct via_cm_req *r = req_get(d, s, conn);

	if (r == NULL)
		return -ENOENT;
	/* the requester gave up already: nobody to tell */
	if (r->state == VIA_CM_REQ_VOID)
		req_free(d->cm, r);
	else
		reject(r);
	return 0;
}

/* ---- disconnect (VIA §4.2, §9.4.5) ------------------------------------- */

int
via_cm_disconnect(struct viad *d, struct via_session *s, uint32_t vi_id)
{
	struct via_vi *vi = via_vi_get(d, s, vi_id);

	if (vi == NULL)
		return -ENOENT;
	if (vi->state == VIP_STATE_CONNECTED) {
		/* tell the peer; should this be lost, the peer learns at its
		 * next transfer, which this viad answers with RESET */
		send_to_peer(vi, VIA_OP_DISC);
	} else if (via_cm_handshaking(vi)) {
		if (accepting(vi))
			accept_withdraw(d, vi);
		handshake_end(d, vi, -ECONNABORTED);
	}
	if (vi->state != VIP_STATE_IDLE)
		via_vi_set_state(vi, VIP_STATE_IDLE, "VipDisconnect");
	cm_enter(d->cm, vi, VIA_CM_IDLE);
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

bool
via_cm_admit(struct viad *d, struct via_nic *nic, const struct rte_mbuf *m,
	     struct via_poll_stats *st)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	const struct via_wire_hdr *h = (const struct via_wire_hdr *)(eth + 1);
	uint64_t now;

	if (h->opcode != VIA_OP_CONN_REQ)
		return true;
	now = via_now_ms();
	if (cookie_valid(d->cm, eth->src_addr.addr_bytes, via_wire_imm(h), now))
		return true;
	/* a first contact, or a source that never received what was sent to
	 * it: one frame back, nothing kept, no lock taken */
	st->cm_cookies_sent++;
	cm_send(nic, eth->src_addr.addr_bytes, VIA_OP_CONN_COOKIE, 0, via_wire_src_vi(h), 0,
		via_wire_conn_id(h), cookie_of(d->cm, eth->src_addr.addr_bytes,
					       now / CM_COOKIE_EPOCH_MS), NULL);
	return false;
}

/*
 * VipConnectPeerRequest's VI for a PEER request from @p mac: one requesting
 * its peer at that MAC with the discriminators reversed (VIA §9.4).
 */
static struct via_vi *
peer_vi(struct viad *d, struct via_nic *nic, const uint8_t *mac, const struct via_wire_conn *w)
{
	struct via_vi *vi;

	TAILQ_FOREACH(vi, &d->cm->handshakes, req_link) {
		const struct via_vi_conn *c = &vi->conn;

		if (vi->owner->nic == nic && c->cm_state == VIA_CM_PEER_REQUESTING &&
		    memcmp(c->remote_mac, mac, 6) == 0 &&
		    disc_eq(c->local.disc_len, c->local.disc, w->dst_disc_len, w->dst_disc) &&
		    disc_eq(c->remote.disc_len, c->remote.disc, w->src_disc_len, w->src_disc))
			return vi;
	}
	return NULL;
}

/*
 * A new PEER request from @p mac (VipConnectPeerRequest at both ends). The
 * end that accepts holds it as a server holds a request, so that its
 * copies, and the requester's abandonment, find it, and a late copy cannot
 * connect a later peer request of the same VI (VIA §4.1: no "stale or
 * duplicate connections by delayed or duplicate packets").
 */
static void
on_peer_req(struct viad *d, struct via_nic *nic, const uint8_t *mac,
	    const struct via_wire_hdr *h, const struct via_wire_conn *w)
{
	uint32_t conn_id = via_wire_conn_id(h), src_vi = via_wire_src_vi(h);
	struct via_vi *vi = peer_vi(d, nic, mac, w);
	struct via_ctl_vi_attr remote;
	struct via_cm_req *r;
	int cmp, rc;

	if (vi == NULL) {
		cm_send(nic, mac, VIA_OP_CONN_NOMATCH, 0, src_vi, 0, conn_id, 0, NULL);
		return;
	}
	/* both ends request each other; the end with the larger (MAC, VI)
	 * accepts, the other waits for that acceptance */
	cmp = memcmp(nic->info.mac, mac, 6);
	if (cmp < 0 || (cmp == 0 && vi->id < src_vi))
		return;
	r = req_new(d->cm, nic, mac, src_vi, conn_id, w, VIA_CM_REQ_ACCEPTING);
	if (r == NULL) {
		/* held off: heard, nothing kept; it comes again */
		cm_send(nic, mac, VIA_OP_CONN_COOKIE, 0, src_vi, 0, conn_id, via_wire_imm(h), NULL);
		return;
	}
	r->peer_intact = via_wire_flags(h) & VIA_WF_INTACT;
	/* both ends learn a conflict: vipl.h VipConnectPeerDone/Wait; a copy
	 * of the request gets the same refusal */
	attr_from_wire(w, &remote);
	rc = attr_conflict(vi, &remote);
	if (rc == 0) {
		conn_terms(vi, w, via_wire_flags(h) & VIA_WF_INTACT);
		/* its poll lcore's memory for the connection (dp/dp_mem.c) */
		rc = via_dp_vi_provision(vi);
	}
	if (rc != 0) {
		r->reason = reject_reason(rc);
		req_settle(r, VIA_CM_REQ_REJECTED);
		reject_send(nic, mac, src_vi, conn_id, r->reason);
		handshake_end(d, vi, rc);
		return;
	}
	vi->conn.id = conn_id;
	vi->conn.remote_vi = src_vi;
	r->vi = vi->id;
	accept_start(d, vi, VIA_CM_PEER_ACCEPTING);
}

static void
on_conn_req(struct viad *d, struct via_nic *nic, const uint8_t *mac,
	    const struct via_wire_hdr *h, const struct via_wire_conn *w)
{
	uint32_t conn_id = via_wire_conn_id(h), src_vi = via_wire_src_vi(h);
	struct via_cm *cm = d->cm;
	struct via_cm_req *r;

	if (w->dst_disc_len > VIA_WIRE_DISC_MAX || w->src_disc_len > VIA_WIRE_DISC_MAX)
		return;
	r = req_find(cm, nic, mac, src_vi, conn_id);
	if (r != NULL) {
		r->expires_ms = via_now_ms() + CM_BACKLOG_MS;
		req_states[r->state].on_copy(d, r);
		return;
	}
	if (via_wire_flags(h) & VIA_WF_PEER) {
		on_peer_req(d, nic, mac, h, w);
		return;
	}
	r = req_new(cm, nic, mac, src_vi, conn_id, w, VIA_CM_REQ_BACKLOG);
	if (r == NULL) {
		/* held off: heard, nothing kept; it comes again */
		cm_send(nic, mac, VIA_OP_CONN_COOKIE, 0, src_vi, 0, conn_id, via_wire_imm(h), NULL);
		return;
	}
	r->peer_intact = via_wire_flags(h) & VIA_WF_INTACT;
	req_states[r->state].on_copy(d, r);
}

/* A requester gave up (DISC to VI 0): its request here is void. */
static void
abandon(struct viad *d, struct via_nic *nic, const uint8_t *mac, uint32_t conn_id,
	uint32_t remote_vi)
{
	struct via_cm_req *r = req_find(d->cm, nic, mac, remote_vi, conn_id);
	struct via_vi *vi;

	if (r == NULL)
		return;
	vi = r->state == VIA_CM_REQ_ACCEPTING ? via_idtab_lookup(&d->vis, r->vi) : NULL;
	if (vi != NULL && accepting(vi))
		accept_refused(d, vi);
	else if (r->state == VIA_CM_REQ_BACKLOG || r->state == VIA_CM_REQ_OFFERED)
		req_settle(r, VIA_CM_REQ_VOID);
}

/*
 * The VI in a handshake that frame @p h is for: its current attempt's
 * conn_id from the MAC it deals with (and, accepting, from the VI it
 * accepted). NULL if none.
 */
static struct via_vi *
handshake_vi(struct viad *d, struct via_nic *nic, const uint8_t *mac, const struct via_wire_hdr *h)
{
	struct via_vi *vi = via_idtab_lookup(&d->vis, via_wire_dst_vi(h));

	if (vi == NULL || vi->owner->nic != nic || !via_cm_handshaking(vi) ||
	    vi->conn.id != via_wire_conn_id(h) || memcmp(vi->conn.remote_mac, mac, 6) != 0 ||
	    (accepting(vi) && vi->conn.remote_vi != via_wire_src_vi(h)))
		return NULL;
	return vi;
}

/*
 * The answers both requesting states take alike (§4.1): CONN_ACCEPT
 * connects the VI, on the terms the server sent, and is confirmed
 * (CONN_ACK); CONN_REJECT ends the request with the server's reason;
 * CONN_COOKIE is the server's cookie, to send back (again now if it is new).
 * Every CM frame says the server is there. @return whether @p h was one of them
 */
static bool
answer_taken(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h,
	     const struct via_wire_conn *w)
{
	struct via_vi_conn *c = &vi->conn;

	if (via_wire_ops[h->opcode].flags & VIA_OPF_CM)
		c->heard_ms = via_now_ms();
	switch (h->opcode) {
	case VIA_OP_CONN_ACCEPT:
		c->remote_vi = via_wire_src_vi(h);
		conn_terms(vi, w, via_wire_flags(h) & VIA_WF_INTACT);
		/* its poll lcore's memory for the connection (dp/dp_mem.c);
		 * §9.4.1 "failed due to a resource limit": the server's
		 * accept is voided (handshake_end) */
		if (via_dp_vi_provision(vi) != 0) {
			handshake_end(d, vi, -ENOMEM);
			return true;
		}
		d->ev.conn_reset(vi);
		send_to_peer(vi, VIA_OP_CONN_ACK);
		handshake_end(d, vi, 0);
		return true;
	case VIA_OP_CONN_REJECT:
		handshake_end(d, vi, reject_error(via_wire_imm(h)));
		return true;
	case VIA_OP_CONN_COOKIE:
		if (c->cookie != via_wire_imm(h)) {
			c->cookie = via_wire_imm(h);
			send_req(vi);
			c->next_retry_ms = c->heard_ms + CM_RETRY_MS;
		}
		return true;
	default:
		return false;
	}
}

/*
 * VIA_CM_REQUESTING (VipConnectRequest, §9.4.4): an accept or a refusal
 * ends the request; CONN_NOMATCH too, after the grace (§4.1: "If the
 * specified remote VI does not exist ... return an error"; nomatch()).
 * A DISC is an acceptor that withdrew before this end heard its accept:
 * the next copy of the request hears how it ends.
 */
static void
in_requesting(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h,
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
in_peer_requesting(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h,
		   const struct via_wire_conn *w)
{
	if (!answer_taken(d, vi, h, w) && h->opcode == VIA_OP_CONN_NOMATCH &&
	    vi->conn.nomatch_since_ms == 0)
		vi->conn.nomatch_since_ms = via_now_ms();
}

/*
 * VIA_CM_ACCEPTING and VIA_CM_PEER_ACCEPTING: the requester is Connected
 * once it has the accept, and says so with CONN_ACK or any frame of the
 * connection (its first data, or its DISC: Connected, then disconnected);
 * only then is this VI Connected. CONN_REJECT is a requester that has no
 * such request (it gave up): the accept fails.
 */
static void
in_accepting(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h,
	     const struct via_wire_conn *w)
{
	struct via_cm_req *r;

	(void)w;
	if (h->opcode == VIA_OP_CONN_REJECT) {
		accept_refused(d, vi);
		return;
	}
	if (h->opcode != VIA_OP_CONN_ACK && h->opcode != VIA_OP_DISC &&
	    (via_wire_ops[h->opcode].flags & VIA_OPF_CM))
		return;
	r = req_of_vi(d->cm, vi);
	if (r != NULL)
		req_settle(r, VIA_CM_REQ_ACCEPTED);
	handshake_end(d, vi, 0);
	if (h->opcode == VIA_OP_DISC)
		connection_lost(d, vi, "peer disconnected");
}

/* One function per handshake state (enum via_cm_state): a frame for the VI's attempt. */
static void (*const handshake_in[])(struct viad *d, struct via_vi *vi,
				    const struct via_wire_hdr *h,
				    const struct via_wire_conn *w) = {
	[VIA_CM_REQUESTING] = in_requesting,
	[VIA_CM_PEER_REQUESTING] = in_peer_requesting,
	[VIA_CM_ACCEPTING] = in_accepting,
	[VIA_CM_PEER_ACCEPTING] = in_accepting,
};

/*
 * A frame that is no handshake's (§4.1: "prevent ... the creation of stale
 * or duplicate connections by delayed or duplicate packets"): a duplicate,
 * an extinct attempt's, or an end that no longer has the connection - each
 * answered from what this end has now, so that the two ends agree.
 */
static void
no_handshake(struct viad *d, struct via_nic *nic, const uint8_t *mac, const struct via_wire_hdr *h)
{
	uint32_t dst_vi = via_wire_dst_vi(h), src_vi = via_wire_src_vi(h);
	uint32_t conn_id = via_wire_conn_id(h);
	struct via_vi *vi = via_vi_of_frame(d, nic, mac, dst_vi, src_vi, conn_id,
					    via_poll_stats_here());

	switch (h->opcode) {
	case VIA_OP_CONN_ACCEPT:
		if (vi != NULL)
			send_to_peer(vi, VIA_OP_CONN_ACK);  /* our CONN_ACK was lost */
		else    /* given up (or gone): the accept must fail */
			cm_send(nic, mac, VIA_OP_CONN_REJECT, 0, src_vi, dst_vi, conn_id,
				VIA_REJECT_ABANDONED, NULL);
		break;
	case VIA_OP_CONN_ACK:
		/* a confirmation for a connection this end does not have
		 * (its accept failed): the requester's VI must break */
		if (vi == NULL)
			cm_send(nic, mac, VIA_OP_DISC, 0, src_vi, dst_vi, conn_id, 0, NULL);
		break;
	case VIA_OP_CONN_REJECT:
		/* the requester of an accepted connection has none */
		if (vi != NULL && via_wire_imm(h) == VIA_REJECT_ABANDONED)
			connection_lost(d, vi, "the requester has no such connection");
		break;
	case VIA_OP_DISC:
	case VIA_OP_RESET:
		if (vi != NULL)
			connection_lost(d, vi, h->opcode == VIA_OP_DISC
						       ? "peer disconnected"
						       : "peer has no such connection");
		break;
	default:
		break;
	}
}

/*
 * A frame for the connection manager (dp_net.c checked it), or one of a VI
 * in a handshake (via_cm_wants_frame). @return whether it is data for a
 * Connected VI now: the data path takes it
 */
static bool
cm_input(struct viad *d, struct via_nic *nic, const uint8_t *src_mac,
	 const struct via_wire_hdr *h)
{
	const struct via_wire_conn *w = (const void *)(h + 1);
	struct via_vi *vi;

	if (h->opcode == VIA_OP_CONN_REQ) {
		on_conn_req(d, nic, src_mac, h, w);
		return false;
	}
	if (h->opcode == VIA_OP_DISC && via_wire_dst_vi(h) == 0) {
		abandon(d, nic, src_mac, via_wire_conn_id(h), via_wire_src_vi(h));
		return false;
	}
	vi = handshake_vi(d, nic, src_mac, h);
	if (vi != NULL)
		handshake_in[vi->conn.cm_state](d, vi, h, w);
	else if (via_wire_ops[h->opcode].flags & VIA_OPF_CM)
		no_handshake(d, nic, src_mac, h);
	return !(via_wire_ops[h->opcode].flags & VIA_OPF_CM) &&
	       via_vi_of_frame(d, nic, src_mac, via_wire_dst_vi(h), via_wire_src_vi(h),
			       via_wire_conn_id(h), via_poll_stats_here()) != NULL;
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
			struct via_nic *nic = &d->nics[pkts[k]->port];

			/* data that came before its connection's CONN_ACK
			 * follows it here: all locks held, no frame passes it */
			if (cm_input(d, nic, eth->src_addr.addr_bytes,
				     (const struct via_wire_hdr *)(eth + 1)))
				via_resp_input(d, nic, pkts[k], via_poll_stats_here());
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

/* @p vi's handshake frame (@p send) again, at the retransmission interval;
 * its deadline and the next copy are due. */
static void
resend_due(struct via_vi *vi, void (*send)(struct via_vi *vi), uint64_t now, int64_t *due)
{
	struct via_vi_conn *c = &vi->conn;

	if (now >= c->next_retry_ms) {
		send(vi);
		c->next_retry_ms = now + CM_RETRY_MS;
	}
	min_due(due, c->next_retry_ms, now);
	min_due(due, c->deadline_ms, now);
}

/* A request: its Timeout, the server's silence (cm_unreachable_ms), a copy.
 * @return whether it ended */
static bool
timer_requesting(struct viad *d, struct via_vi *vi, uint64_t now, int64_t *due)
{
	struct via_vi_conn *c = &vi->conn;
	const uint8_t *m = c->remote_mac;

	if (now >= c->deadline_ms) {
		handshake_end(d, vi, c->nomatch_since_ms != 0 ? -ENXIO : -ETIMEDOUT);
		return true;
	}
	/* VIA §4.1: "If the specified remote VI ... is not reachable ... the
	 * VI Provider will return an error" */
	if (now - c->heard_ms >= d->conf.cm_unreachable_ms) {
		VLOG_INFO("VI %u: no viad answered at %02x:%02x:%02x:%02x:%02x:%02x for %u ms "
			  "(cm_unreachable_ms): the request ends", vi->id, m[0], m[1], m[2], m[3],
			  m[4], m[5], d->conf.cm_unreachable_ms);
		handshake_end(d, vi, -ETIMEDOUT);
		return true;
	}
	resend_due(vi, send_req, now, due);
	min_due(due, c->heard_ms + d->conf.cm_unreachable_ms, now);
	return false;
}

/* An accept: unconfirmed for cm_unreachable_ms, it fails; else a copy.
 * @return whether it ended */
static bool
timer_accepting(struct viad *d, struct via_vi *vi, uint64_t now, int64_t *due)
{
	struct via_vi_conn *c = &vi->conn;
	struct via_cm_req *r;

	if (now >= c->deadline_ms) {
		VLOG_INFO("VI %u: the requester did not confirm the accept in %u ms "
			  "(cm_unreachable_ms): it fails", vi->id, d->conf.cm_unreachable_ms);
		/* should the requester be Connected after all, it breaks */
		send_to_peer(vi, VIA_OP_DISC);
		r = req_of_vi(d->cm, vi);
		if (r != NULL)
			req_settle(r, VIA_CM_REQ_VOID);
		handshake_end(d, vi, -ETIMEDOUT);
		return true;
	}
	resend_due(vi, send_accept, now, due);
	return false;
}

/* One function per handshake state: its timers. */
static bool (*const handshake_timer[])(struct viad *d, struct via_vi *vi, uint64_t now,
				       int64_t *due) = {
	[VIA_CM_REQUESTING] = timer_requesting,
	[VIA_CM_PEER_REQUESTING] = timer_requesting,
	[VIA_CM_ACCEPTING] = timer_accepting,
	[VIA_CM_PEER_ACCEPTING] = timer_accepting,
};

/*
 * The forged-request watch: at most every CM_FLOOD_LOG_MS, one line when
 * many requests came from sources that never showed they receive (a flood
 * with forged source MACs costs each a cookie, nothing more), or requests
 * were refused for the limits.
 */
static void
flood_watch(struct viad *d, uint64_t now, int64_t *due)
{
	struct via_cm *cm = d->cm;
	uint64_t cookies = 0, refused_now;
	unsigned i;

	if (now >= cm->flood_next_ms) {
		for (i = 0; i < d->nb_shards; i++)
			cookies += __atomic_load_n(&via_poll_stats_of(d->shards[i].lcore)->
						   cm_cookies_sent, __ATOMIC_RELAXED);
		refused_now = via_poll_stats_here()->cm_requests_refused;
		if (cookies - cm->flood_cookies >= CM_FLOOD_LOG_MIN)
			VLOG_WARN("CM: %" PRIu64 " connection requests in %u s from sources that "
				  "did not show they receive at their MAC (answered with a cookie, "
				  "nothing kept): forged?", cookies - cm->flood_cookies,
				  CM_FLOOD_LOG_MS / 1000);
		if (refused_now != cm->flood_refused)
			VLOG_WARN("CM: %" PRIu64 " connection requests refused in %u s: %u held "
				  "from one source, or %u in all", refused_now - cm->flood_refused,
				  CM_FLOOD_LOG_MS / 1000, CM_REQS_PER_SOURCE, CM_MAX_REQS);
		cm->flood_cookies = cookies;
		cm->flood_refused = refused_now;
		cm->flood_next_ms = now + CM_FLOOD_LOG_MS;
	}
	min_due(due, cm->flood_next_ms, now);
}

int
via_cm_timers(struct viad *d, uint64_t now)
{
	struct via_cm *cm = d->cm;
	struct via_cm_listener *l, *ln;
	struct via_cm_req *r, *rn;
	struct via_vi *vi;
	int64_t due = -1;

	/* only the VIs in a handshake: the timers cost nothing per idle VI.
	 * One that ends may end another (a request to this very NIC voids
	 * its accept): the walk starts again, and what is not due is not done */
again:
	TAILQ_FOREACH(vi, &cm->handshakes, req_link) {
		if (handshake_timer[vi->conn.cm_state](d, vi, now, &due))
			goto again;
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
		uint64_t keep = req_keep_ms(d, r), end;

		if (keep == UINT64_MAX)
			continue;             /* its VI's timer ends it */
		end = r->expires_ms + keep;
		if (now >= end) {
			VLOG_DBG("CM: request %u of VI %u (conn_id %#x) expires, %s", r->id,
				 r->remote_vi, r->conn_id, req_states[r->state].name);
			req_free(cm, r);
			continue;
		}
		min_due(&due, end, now);
	}
	flood_watch(d, now, &due);
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
			reject(r);
		if (r->owner == s)
			r->owner = NULL;
	}
	/* no reply goes to the closed socket, not even for a VI whose
	 * handshake another of its VIs ends below (a request to its own NIC) */
	TAILQ_FOREACH(vi, &s->vis, link)
		vi->conn.reply_op = 0;
	TAILQ_FOREACH(vi, &s->vis, link) {
		if (vi->state == VIP_STATE_CONNECTED)
			send_to_peer(vi, VIA_OP_DISC);
		else if (accepting(vi))
			accept_withdraw(d, vi);
		else if (via_cm_handshaking(vi))
			request_abandon(d, vi);
		/* its VIs are about to be freed */
		cm_enter(cm, vi, VIA_CM_IDLE);
	}
}

/* ---- upgrades (docs/design.md section 18) ------------------------------------ */

const struct via_idtab *
via_cm_reqs(const struct viad *d)
{
	return &d->cm->reqs;
}

void
via_cm_save_daemon(const struct viad *d, struct via_img_daemon *dm)
{
	const struct via_cm *cm = d->cm;

	memcpy(dm->cm_key, cm->key, sizeof(dm->cm_key));
	dm->cm_flood_next_ms = cm->flood_next_ms;
}

void
via_cm_save(struct viad *d, struct via_image_buf *ib)
{
	const struct via_cm *cm = d->cm;
	const struct via_cm_listener *l;
	const struct via_cm_req *r;

	_Static_assert(sizeof(((struct via_img_cm_req *)0)->info) == sizeof(struct via_wire_conn),
		       "the request's attributes, as they came");
	TAILQ_FOREACH(r, &cm->req_list, link) {
		struct via_img_cm_req o = {
			.id = r->id, .state = r->state, .nic = r->nic->index,
			.session = r->owner != NULL ? r->owner->id : 0,
			.remote_vi = r->remote_vi, .conn_id = r->conn_id, .vi = r->vi,
			.reason = r->reason, .expires_ms = r->expires_ms,
		};

		memcpy(o.remote_mac, r->remote_mac, sizeof(o.remote_mac));
		memcpy(o.info, &r->info, sizeof(o.info));
		via_image_append(ib, VIA_IMG_CM_REQ, &o, sizeof(o), NULL, 0);
	}
	TAILQ_FOREACH(l, &cm->listeners, link) {
		struct via_img_cm_listener o = {
			.session = l->s->id, .nic = l->nic->index, .seq = l->seq,
			.deadline_ms = l->deadline_ms, .req = l->req,
		};

		via_image_append(ib, VIA_IMG_CM_LISTENER, &o, sizeof(o), NULL, 0);
	}
}

/* A time that measures silence, moved past the blackout (0 and "never" stay). */
static uint64_t
past_blackout(uint64_t t, uint64_t blackout_ms)
{
	return t == 0 || t == UINT64_MAX ? t : t + blackout_ms;
}

int
via_cm_adopt(struct viad *d, const struct via_image *img, uint64_t blackout_ms, const char **why)
{
	struct via_cm *cm = d->cm;
	void **objs = calloc(img->tables[VIA_IMG_T_CM_REQS]->nb_slots + 1, sizeof(*objs));
	uint32_t i, idx_mask = (UINT32_C(1) << cm->reqs.idx_bits) - 1;
	struct via_session *s;
	struct via_vi *vi;
	int rc;

	if (objs == NULL)
		return -ENOMEM;
	memcpy(cm->key, img->daemon->cm_key, sizeof(cm->key));
	cm->flood_next_ms = img->daemon->cm_flood_next_ms;
	/* the shards' cookie counts start again; the refusals were carried
	 * into the control thread's counters (via_poll_stats_carry) */
	cm->flood_cookies = 0;
	cm->flood_refused = via_poll_stats_here()->cm_requests_refused;
	for (i = 0; i < img->nb_recs[VIA_IMG_CM_REQ]; i++) {
		const struct via_img_cm_req *o = img->recs[VIA_IMG_CM_REQ][i].p;
		struct via_cm_source *src = source_get(cm, o->remote_mac, true);
		struct via_cm_req *r = calloc(1, sizeof(*r));
		unsigned b;

		if (src == NULL || r == NULL) {
			free(r);
			free(objs);
			return -ENOMEM;
		}
		src->nb_reqs++;
		*r = (struct via_cm_req){
			.src = src, .id = o->id, .state = o->state, .nic = &d->nics[o->nic],
			.owner = o->session != 0 ? via_idtab_lookup(&d->sessions, o->session) : NULL,
			.remote_vi = o->remote_vi, .conn_id = o->conn_id, .vi = o->vi,
			.reason = o->reason,
			/* its requester's copies were lost in the blackout, not late */
			.expires_ms = past_blackout(o->expires_ms, blackout_ms),
		};
		memcpy(r->remote_mac, o->remote_mac, sizeof(r->remote_mac));
		memcpy(&r->info, o->info, sizeof(r->info));
		b = req_bucket(cm, r->nic, r->remote_mac, r->remote_vi, r->conn_id);
		r->next = cm->req_hash[b];
		cm->req_hash[b] = r;
		TAILQ_INSERT_TAIL(&cm->req_list, r, link);
		objs[(o->id & idx_mask) - 1] = r;
	}
	rc = via_idtab_restore(&cm->reqs, img->tables[VIA_IMG_T_CM_REQS]->nb_slots,
			       img->slots[VIA_IMG_T_CM_REQS], objs);
	free(objs);
	if (rc != 0) {
		*why = "the connection requests' table";
		return rc;
	}
	for (i = 0; i < img->nb_recs[VIA_IMG_CM_LISTENER]; i++) {
		const struct via_img_cm_listener *o = img->recs[VIA_IMG_CM_LISTENER][i].p;
		struct via_cm_listener *l = calloc(1, sizeof(*l));

		if (l == NULL)
			return -ENOMEM;
		/* a VipConnectWait's own Timeout stands: the blackout is viad's */
		*l = (struct via_cm_listener){
			.s = via_idtab_lookup(&d->sessions, o->session), .nic = &d->nics[o->nic],
			.seq = o->seq, .req = o->req, .deadline_ms = o->deadline_ms,
		};
		TAILQ_INSERT_TAIL(&cm->listeners, l, link);
	}
	/* the handshakes under way: what times the other end's silence moves
	 * past the blackout (an acceptor's deadline is cm_unreachable_ms of it;
	 * a requester's is its consumer's Timeout, which stands), and the next
	 * copy goes at once */
	TAILQ_FOREACH(s, &d->session_list, link) {
		TAILQ_FOREACH(vi, &s->vis, link) {
			struct via_vi_conn *c = &vi->conn;

			if (!via_cm_handshaking(vi))
				continue;
			c->heard_ms = past_blackout(c->heard_ms, blackout_ms);
			c->nomatch_since_ms = past_blackout(c->nomatch_since_ms, blackout_ms);
			if (accepting(vi))
				c->deadline_ms = past_blackout(c->deadline_ms, blackout_ms);
			c->next_retry_ms = via_now_ms();
			TAILQ_INSERT_TAIL(&cm->handshakes, vi, req_link);
		}
	}
	return 0;
}
