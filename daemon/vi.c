/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Virtual interfaces (VIA §2.3, §5, §9.3, §9.8.2-9.8.3). A VI is created
 * Idle (VIA §5.1); its attributes change only while Idle; it is destroyed
 * only when Idle with both work queues drained (VIA §9.3.2).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <vipl.h>

#include "viad.h"

/* VIA §9.10.5 attribute checks, in the order §9.3.1 lists their errors */
static int
vi_attr_check(struct viad *d, struct via_session *s, const struct via_ctl_vi_attr *a)
{
	const struct via_ctl_nic_info *nic = &s->nic->info;

	/* exactly one level, and one this NIC supports */
	if (a->reliability == 0 || (a->reliability & (a->reliability - 1)) != 0 ||
	    (a->reliability & nic->reliability_support) == 0)
		return -EPROTONOSUPPORT;
	if (a->max_transfer == 0 || a->max_transfer > nic->max_transfer_size)
		return -EMSGSIZE;
	/* the reliable levels keep every frame of a message until it is
	 * acknowledged: a message may not outgrow their window (dp_rel.c) */
	if (a->reliability != VIP_SERVICE_UNRELIABLE && nic->mtu > VIA_WIRE_HDR_LEN &&
	    a->max_transfer / (nic->mtu - VIA_WIRE_HDR_LEN) + 1 > VIA_REL_MAX_FRAMES)
		return -EMSGSIZE;
	/* one class of service: best effort */
	if (a->qos != 0)
		return -EDOM;
	if (via_ptag_get(d, s, a->ptag) == NULL)
		return -ESRCH;
	/* §2.5.1 and Table 1: "RDMA Reads are not supported on an Unreliable
	 * VI"; §9.10.1: VIP_INVALID_RDMAREAD when support for RDMA Read is
	 * requested and not there */
	if (a->rdma_read && (!nic->rdma_read_support || a->reliability == VIP_SERVICE_UNRELIABLE))
		return -EOPNOTSUPP;
	if (a->rdma_write > 1 || a->rdma_read > 1)
		return -EINVAL;
	return 0;
}

/*
 * A free doorbell bit for a new VI, in a word of the shard that serves the
 * fewest VIs (the bit decides the shard: via_bell_shard), or of any shard
 * when that one's words of this session are full.
 * @return 0, -ENOSPC (every bit of the session taken)
 */
static int
bell_take(struct viad *d, struct via_session *s, uint32_t *bell)
{
	unsigned want = 0, i, try;
	uint32_t w, b;

	for (i = 1; i < d->nb_shards; i++) {
		if (d->shards[i].nb_vis < d->shards[want].nb_vis)
			want = i;
	}
	/* a word at a time: 16384 VIs are 256 words, not 16384 slots */
	for (try = 0; try < d->nb_shards; try++) {
		unsigned shard = (want + try) % d->nb_shards;

		for (w = shard; w < s->bell_words; w += d->nb_shards) {
			if (~s->bell_taken[w] == 0)
				continue;
			b = (uint32_t)__builtin_ctzll(~s->bell_taken[w]);
			*bell = w * 64 + b;
			return 0;
		}
	}
	return -ENOSPC;
}

int
via_vi_attach_rings(struct via_vi *vi)
{
	unsigned q;
	int rc = 0;

	for (q = 0; q < VIA_WQ_COUNT && rc == 0; q++) {
		void *slots = (uint8_t *)vi->sh + via_shm_vi_slots_off(vi->wq_capacity,
								       vi->entry_size, q);

		rc = via_vi_lines(vi)
			     ? via_ring_attach_seq(&vi->wq[q], &vi->sh->wq[q].ring, slots,
						   vi->wq_capacity, vi->entry_size, false,
						   offsetof(struct via_wqe_line, seq))
			     : via_ring_attach(&vi->wq[q], &vi->sh->wq[q].ring, slots,
					       vi->wq_capacity, vi->entry_size, false);
		vi->completed[q] = vi->wq[q].local;
	}
	return rc;
}

int
via_vi_create(struct viad *d, struct via_session *s, const struct via_ctl_vi_create_req *req,
	      struct via_vi **out)
{
	struct via_cq *cq[VIA_WQ_COUNT] = { NULL, NULL };
	const uint32_t cq_id[VIA_WQ_COUNT] = { req->send_cq, req->recv_cq };
	struct via_vi *vi;
	unsigned q;
	int rc;

	for (q = 0; q < VIA_WQ_COUNT; q++) {
		if (cq_id[q] != 0 && (cq[q] = via_cq_get(d, s, cq_id[q])) == NULL)
			return -ENOENT;
	}
	rc = vi_attr_check(d, s, &req->attr);
	if (rc != 0)
		return rc;
	/* 16-byte entries, or line entries of the sizes the ABI knows */
	if (req->entry_size != 0 && req->entry_size != sizeof(struct via_wqe) &&
	    !via_wqe_line_size_ok(req->entry_size))
		return -EINVAL;
	vi = calloc(1, sizeof(*vi));
	if (vi == NULL)
		return -ENOMEM;
	rc = bell_take(d, s, &vi->bell);
	if (rc != 0) {
		free(vi);
		return rc;
	}
	vi->attr = req->attr;
	vi->cookie = req->cookie;
	vi->state = VIP_STATE_IDLE;
	vi->wq_capacity = via_pow2_ceil(s->nic->info.max_desc_per_queue);
	vi->entry_size = req->entry_size == 0 ? sizeof(struct via_wqe) : req->entry_size;
	vi->shm_len = via_shm_vi_size(vi->wq_capacity, vi->entry_size);
	if (via_arena_alloc(&s->arena, vi->shm_len, &vi->shm_off) != 0) {
		free(vi);
		return -ENOSPC;
	}
	vi->sh = (struct via_shm_vi *)(s->seg.va + vi->shm_off);
	memset(vi->sh, 0, vi->shm_len);
	rc = via_vi_attach_rings(vi);
	if (rc == 0)
		rc = via_user_charge(d, s, VIA_USER_VIS, 1);
	if (rc == 0 && (rc = via_idtab_alloc(&d->vis, vi, &vi->id)) != 0)
		via_user_uncharge(d, s, VIA_USER_VIS, 1);
	if (rc != 0) {
		via_arena_free(&s->arena, vi->shm_off, vi->shm_len);
		free(vi);
		return rc;
	}
	vi->owner = s;
	via_vi_place(d, vi);
	/* bits left in the word by VIs gone (or by the client) would keep the
	 * new VI's posts from setting the summary bit (via_bell_ring): have
	 * the word taken once */
	if (__atomic_load_n(&s->bells[vi->bell / 64], __ATOMIC_RELAXED) != 0)
		__atomic_fetch_or(&s->bell_summary[vi->bell / 64 / 64], 1ull << (vi->bell / 64 % 64),
				  __ATOMIC_RELEASE);
	for (q = 0; q < VIA_WQ_COUNT; q++) {
		vi->cq[q] = cq[q];
		if (cq[q] != NULL)
			cq[q]->refs++;
	}
	via_ptag_get(d, s, vi->attr.ptag)->refs++;
	TAILQ_INSERT_TAIL(&s->vis, vi, link);
	d->counters.vis_created++;
	*out = vi;
	return 0;
}

void
via_vi_place(struct viad *d, struct via_vi *vi)
{
	struct via_session *s = vi->owner;

	vi->shard = via_bell_shard(d, vi->bell);
	vi->shard->nb_vis++;
	s->by_bell[vi->bell] = vi;
	s->bell_taken[vi->bell / 64] |= 1ull << (vi->bell % 64);
	/* pollers scan words up to here: a session of a few VIs costs one or
	 * two words an iteration, not limits.max_vi / 64 */
	if (vi->bell / 64 + 1 > s->bell_words_live)
		s->bell_words_live = vi->bell / 64 + 1;
}

struct via_vi *
via_vi_get(struct viad *d, struct via_session *s, uint32_t id)
{
	struct via_vi *vi = via_idtab_lookup(&d->vis, id);

	return vi != NULL && vi->owner == s ? vi : NULL;
}

bool
via_vi_wq_empty(struct via_vi *vi, enum via_wq_kind wq)
{
	/* a hostile producer index reads as "not empty": the VI then stays
	 * until the session ends, which only hurts the client that lied */
	return via_ring_avail(&vi->wq[wq]) == 0 && !vi->wq[wq].corrupt;
}

void
via_vi_free(struct viad *d, struct via_vi *vi)
{
	struct via_session *s = vi->owner;
	unsigned q;

	TAILQ_REMOVE(&s->vis, vi, link);
	if (vi->rel_listed)
		TAILQ_REMOVE(&vi->shard->rel_vis, vi, rel_link);
	if (vi->polled_listed) {
		TAILQ_REMOVE(&vi->shard->polled_vis, vi, polled_link);
		vi->shard->nb_polled--;
	}
	vi->shard->nb_vis--;
	s->by_bell[vi->bell] = NULL;
	s->bell_taken[vi->bell / 64] &= ~(1ull << (vi->bell % 64));
	while (s->bell_words_live > 0 && s->bell_taken[s->bell_words_live - 1] == 0)
		s->bell_words_live--;
	via_idtab_free(&d->vis, vi->id);
	via_user_uncharge(d, s, VIA_USER_VIS, 1);
	for (q = 0; q < VIA_WQ_COUNT; q++) {
		if (vi->cq[q] != NULL)
			vi->cq[q]->refs--;
	}
	via_ptag_get(d, s, vi->attr.ptag)->refs--;
	via_arena_free(&s->arena, vi->shm_off, vi->shm_len);
	free(vi->rx.segs);
	free(vi->tx.segs);
	/* what dp_mem.c made when the VI connected */
	free(vi->rel.win);     /* emptied of frames by via_dp_vi_reset */
	free(vi->rel.park);    /* likewise */
	free(vi->sq.pend);
	free(vi);
}

int
via_vi_destroy(struct viad *d, struct via_session *s, uint32_t id)
{
	struct via_vi *vi = via_vi_get(d, s, id);

	if (vi == NULL)
		return -ENOENT;
	if (vi->state != VIP_STATE_IDLE || !via_vi_wq_empty(vi, VIA_WQ_SEND) ||
	    !via_vi_wq_empty(vi, VIA_WQ_RECV))
		return -EBUSY;
	via_vi_free(d, vi);
	return 0;
}

int
via_vi_set_attr(struct viad *d, struct via_session *s, uint32_t id,
		const struct via_ctl_vi_attr *attr)
{
	struct via_vi *vi = via_vi_get(d, s, id);
	int rc;

	if (vi == NULL)
		return -ENOENT;
	if (vi->state != VIP_STATE_IDLE)
		return -EPERM;
	rc = vi_attr_check(d, s, attr);
	if (rc != 0)
		return rc;
	via_ptag_get(d, s, vi->attr.ptag)->refs--;
	via_ptag_get(d, s, attr->ptag)->refs++;
	vi->attr = *attr;
	return 0;
}

/* ---- the state diagram (VIA §5, Figure 5) ------------------------------- */

static const char *const state_names[] = {
	[VIP_STATE_IDLE] = "Idle",
	[VIP_STATE_CONNECTED] = "Connected",
	[VIP_STATE_CONNECT_PENDING] = "Pending Connect",
	[VIP_STATE_ERROR] = "Error",
};

/* allowed[from] is the set of states reachable from it in one step */
#define BIT(s) (1u << (s))
static const uint8_t allowed[] = {
	/* §5.1: ConnectRequest or ConnectAccept called */
	[VIP_STATE_IDLE] = BIT(VIP_STATE_CONNECT_PENDING),
	/* §5.2: accepted / timeout, reject or Disconnect / transport error */
	[VIP_STATE_CONNECT_PENDING] = BIT(VIP_STATE_CONNECTED) | BIT(VIP_STATE_IDLE) |
				      BIT(VIP_STATE_ERROR),
	/* §5.3: Disconnect / an error */
	[VIP_STATE_CONNECTED] = BIT(VIP_STATE_IDLE) | BIT(VIP_STATE_ERROR),
	/* §5.4: Disconnect */
	[VIP_STATE_ERROR] = BIT(VIP_STATE_IDLE),
};
#undef BIT

const char *
via_vi_state_name(uint32_t state)
{
	return state < sizeof(state_names) / sizeof(state_names[0]) ? state_names[state] : "?";
}

void
via_vi_async_error(struct via_vi *vi, uint32_t code, uint32_t resource, uint32_t op,
		   uint64_t desc_va)
{
	struct via_async_error *e;

	if (vi->state != VIP_STATE_IDLE) {
		via_session_async_error(vi->owner, code, vi->cookie, resource, op, desc_va);
		return;
	}
	/* §5.1: "Errors that occur while a VI is in the Idle state, which
	 * would normally result in the invocation of the asynchronous error
	 * handling mechanism, are reported when the VI Consumer attempts to
	 * connect the VI" */
	if (vi->nb_idle_errors == VIA_IDLE_ERRORS) {
		VLOG_DBG("VI %u: Idle: asynchronous error %u dropped, %u kept already", vi->id,
			 code, VIA_IDLE_ERRORS);
		return;
	}
	e = &vi->idle_errors[vi->nb_idle_errors++];
	e->code = code;
	e->resource = resource;
	e->op = op;
	e->desc_va = desc_va;
	e->vi_cookie = vi->cookie;
}

int
via_vi_set_state(struct via_vi *vi, uint32_t state, const char *why)
{
	if (vi->state >= sizeof(allowed) || state >= 8 || !(allowed[vi->state] & (1u << state))) {
		VLOG_ERR("VI %u: no transition %s -> %s (%s)", vi->id, via_vi_state_name(vi->state),
			 via_vi_state_name(state), why);
		return -EPERM;
	}
	VLOG_DBG("VI %u: %s -> %s: %s", vi->id, via_vi_state_name(vi->state),
		 via_vi_state_name(state), why);
	/* §9.10.5: MaxTransferSize is the requested size "as input
	 * parameter", the granted one "as output parameter": what VipQueryVi
	 * says and the data path enforces while there is a connection */
	if (state == VIP_STATE_CONNECTED) {
		vi->requested_transfer = vi->attr.max_transfer;
		vi->attr.max_transfer = vi->conn.max_transfer;
	} else if (state == VIP_STATE_IDLE && vi->requested_transfer != 0) {
		vi->attr.max_transfer = vi->requested_transfer;
		vi->requested_transfer = 0;
	}
	/* a Connected VI's receives are taken when a message comes, so their
	 * posts need no doorbell (via_abi.h, "Wake-up contract", pair 6); in
	 * any other state a post may need a visit (§5.4: in Error it completes
	 * in error), so the doorbells are back before the state changes, and
	 * one rings now, from here, for a post that did not ring meanwhile */
	if (state == VIP_STATE_CONNECTED) {
		via_ring_set_polled(&vi->wq[VIA_WQ_RECV], true);
	} else if (vi->state == VIP_STATE_CONNECTED) {
		via_ring_set_polled(&vi->wq[VIA_WQ_RECV], false);
		via_dp_ring_again(vi);
	}
	vi->state = state;
	/* the consumer connects the VI: now the errors of its Idle time (§5.1) */
	if (state == VIP_STATE_CONNECT_PENDING) {
		unsigned i;

		for (i = 0; i < vi->nb_idle_errors; i++) {
			const struct via_async_error *e = &vi->idle_errors[i];

			via_session_async_error(vi->owner, e->code, e->vi_cookie, e->resource, e->op,
						e->desc_va);
		}
		vi->nb_idle_errors = 0;
	}
	/* the shard visits connected reliable VIs every iteration (their
	 * timers and acknowledgments), all others only when a doorbell rings */
	if (state == VIP_STATE_CONNECTED && vi->attr.reliability != VIP_SERVICE_UNRELIABLE &&
	    !vi->rel_listed) {
		TAILQ_INSERT_TAIL(&vi->shard->rel_vis, vi, rel_link);
		vi->rel_listed = true;
	} else if (state != VIP_STATE_CONNECTED && vi->rel_listed) {
		TAILQ_REMOVE(&vi->shard->rel_vis, vi, rel_link);
		vi->rel_listed = false;
	}
	return 0;
}
