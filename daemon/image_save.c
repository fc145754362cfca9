/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * viad's state written into an upgrade image (image.h; docs/design.md
 * section 18), by the control thread with every poll lcore parked: the
 * tables' ids and generations, users, sessions (their fds by role, a
 * request partly read, the arena), tags, memory, the clients' tables of
 * regions (their place and windows), regions, CQs and VIs
 * (their connection, receive state, transport with its unacknowledged
 * frames copied whole, held completions, RDMA Read answers, the message
 * being framed), then the connection manager's (cm.c) and the reapers'
 * fds. Nothing is changed here: a handover that fails after this leaves
 * viad as it was.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "dp/dp.h"
#include "image.h"
#include "upgrade.h"

_Static_assert(sizeof(struct via_img_extent) == sizeof(struct via_arena_extent),
	       "the image's free extents are the arena's");
_Static_assert(VIA_USER_RES_COUNT <= VIA_IMG_USER_RES_MAX, "room for every per-user resource");
_Static_assert(sizeof(((struct via_img_vi *)0)->answers) / sizeof(struct via_img_answer) ==
		       VIA_MAX_READS, "every RDMA Read answer");
_Static_assert(sizeof(((struct via_img_vi *)0)->idle_errors) / sizeof(struct via_async_error) ==
		       VIA_IDLE_ERRORS, "every kept error");
_Static_assert(VIA_MAX_SHARDS <= 64 && VIA_CONF_MAX_PORTS <= 32, "the parser's bounds");

static void
ring_save(struct via_img_ring *o, const struct via_ring *r)
{
	o->local = r->local;
	o->cached_peer = r->cached_peer;
	o->corrupt = r->corrupt;
}

static void
segs_save(struct via_img_seg *o, const struct via_dp_seg *segs, uint16_t n)
{
	uint16_t i;

	for (i = 0; i < n; i++)
		o[i] = (struct via_img_seg){ .va = segs[i].va, .len = segs[i].len,
					     .handle = segs[i].handle };
}

static void
daemon_save(struct viad *d, struct via_image_buf *ib, int listen_fd)
{
	struct via_img_daemon dm = {
		.nb_nics = d->nb_nics,
		.max_desc_per_queue = d->conf.max_desc_per_queue,
		.max_segments_per_desc = d->conf.max_segments_per_desc,
		.max_discriminator_len = d->conf.max_discriminator_len,
		.max_cq_entries = d->conf.max_cq_entries,
		.listen_fd = listen_fd,
		.wake_fd = d->wake_fd,
		.nb_user_res = VIA_USER_RES_COUNT,
		.mappings = d->mappings,
		.sec_fds_refused = d->sec.fds_refused,
		.sec_bus_errors = d->sec.bus_errors,
		.sec_programs_gone = d->sec.programs_gone,
		.counters = d->counters,
	};
	unsigned lc, i;

	via_cm_save_daemon(d, &dm);
	via_image_fd(ib, listen_fd);
	via_image_fd(ib, d->wake_fd);
	RTE_LCORE_FOREACH(lc) {
		const struct via_poll_stats *st = via_poll_stats_of(lc);
		const uint64_t v[VIA_IMG_PC_COUNT] = {
			st->frames_rx, st->frames_tx, st->frames_dropped, st->frames_corrupt,
			st->frames_unmatched, st->cq_overruns, st->frames_retransmitted,
			st->rto_expiries, st->frames_tx_zero_copy, st->naks_tx, st->naks_rx,
			st->frames_duplicate, st->frames_out_of_order, st->cm_cookies_sent,
			st->cm_requests_refused,
		};

		for (i = 0; i < VIA_IMG_PC_COUNT; i++)
			dm.poll[i] += v[i];
	}
	via_image_append(ib, VIA_IMG_DAEMON, &dm, sizeof(dm), NULL, 0);
	for (i = 0; i < d->nb_nics; i++) {
		const struct via_nic *nic = &d->nics[i];
		struct via_img_nic n = { .mtu = nic->info.mtu, .index = i };

		via_copy_name(n.name, sizeof(n.name), nic->info.name);
		memcpy(n.mac, nic->info.mac, sizeof(n.mac));
		via_image_append(ib, VIA_IMG_NIC, &n, sizeof(n), NULL, 0);
	}
}

static int
table_save(struct via_image_buf *ib, enum via_img_table_kind kind, const struct via_idtab *t)
{
	struct via_img_table h = { .table = kind, .capacity = t->capacity, .nb_slots = t->nb_slots };
	uint32_t *ids = malloc(((size_t)t->nb_slots + 1) * sizeof(*ids));

	if (ids == NULL)
		return -ENOMEM;
	via_idtab_ids(t, ids);
	via_image_append(ib, VIA_IMG_TABLE, &h, sizeof(h), ids, (size_t)t->nb_slots * 4);
	free(ids);
	return 0;
}

static void
session_save(struct via_image_buf *ib, const struct via_session *s)
{
	struct via_img_session *o = calloc(1, sizeof(*o));

	if (o == NULL) {
		ib->err = -ENOMEM;
		return;
	}
	*o = (struct via_img_session){
		.id = s->id,
		.nic = s->opened ? s->nic->index : UINT32_MAX,
		.sock = s->sock, .pidfd = s->pidfd, .seg_fd = s->opened ? s->seg.fd : -1,
		.share_fd = s->share_fd, .mem_fd = s->mem_fd, .witness_fd = s->witness_fd,
		.in_fd = s->in_fd,
		.pid = s->pid, .uid = s->uid, .gid = s->gid, .nb_groups = s->nb_groups,
		.deferred = s->deferred,
		.opened = s->opened, .seg_hugepages = s->seg.hugepages,
		.in_fd_refused = s->in_fd_refused, .errq_overflowed = s->errq_overflowed,
		.mem_gone_logged = s->mem_gone_logged, .copy_fault_logged = s->copy_fault_logged,
		.fd_refusals_logged = s->fd_refusals_logged,
		.seg_len = s->opened ? s->seg.len : 0,
		.in_place_bytes = s->in_place_bytes,
		.in_hdr = s->in.hdr,
		.in_got = (uint32_t)s->in.got,
		.nb_extents = s->opened ? s->arena.nb_free : 0,
	};
	via_image_fd(ib, o->sock);
	via_image_fd(ib, o->pidfd);
	via_image_fd(ib, o->seg_fd);
	via_image_fd(ib, o->share_fd);
	via_image_fd(ib, o->mem_fd);
	via_image_fd(ib, o->witness_fd);
	via_image_fd(ib, o->in_fd);
	memcpy(o->in_body, s->in.body, sizeof(o->in_body));
	memcpy(o->groups, s->groups, s->nb_groups * sizeof(gid_t));
	if (s->opened) {
		/* viad's own offsets, never the header's (the client may write it) */
		o->bell_off = (uint32_t)((const uint8_t *)s->bells - s->seg.va);
		o->bell_words = s->bell_words;
		o->errq_off = (uint64_t)((const uint8_t *)s->errq_sh - s->seg.va);
		ring_save(&o->errq, &s->errq);
	}
	via_image_append(ib, VIA_IMG_SESSION, o, sizeof(*o), s->opened ? s->arena.free : NULL,
			 o->nb_extents * sizeof(struct via_img_extent));
	free(o);
}

/* Provider memory and views: numbered in the image for the regions that use them. */
static void
pmem_save(struct via_image_buf *ib, struct via_pmem *p, uint32_t session, uint32_t *ref)
{
	struct via_img_pmem o = {
		.ref = ++*ref, .session = session, .fd = -1, .shmid = -1,
		.hugepages = p->shm.hugepages, .len = p->shm.len, .client_va = p->client_va,
	};

	p->image_ref = o.ref;
	if (!p->view) {
		o.kind = VIA_IMG_PMEM_ALLOC;
		o.id = p->id;
		o.fd = p->shm.fd;
		o.asked = p->asked;
	} else if (!p->object_view) {
		o.kind = VIA_IMG_PMEM_SHARE;
	} else {
		o.kind = p->shm.fd >= 0 ? VIA_IMG_PMEM_OBJECT : VIA_IMG_PMEM_SYSV;
		o.fd = p->shm.fd;
		o.shmid = p->shmid;
		o.offset = p->object_offset;
	}
	via_image_fd(ib, o.fd);
	via_image_append(ib, VIA_IMG_PMEM, &o, sizeof(o), NULL, 0);
}

/* The client's table of regions: its place and its windows (their views saved before). */
static void
tpt_save(struct via_image_buf *ib, const struct via_session *s)
{
	const struct via_tpt *t = s->tpt;
	struct via_img_tpt o = { .session = s->id, .capacity = t->capacity, .off = t->off,
				 .nb_windows = t->nb_windows };
	uint32_t k;

	for (k = 0; k < t->nb_windows; k++)
		o.window_ref[k] = t->windows[k].view->image_ref;
	via_image_append(ib, VIA_IMG_TPT, &o, sizeof(o), NULL, 0);
}

static void
vi_save_conn(struct via_img_vi *o, const struct via_vi_conn *c)
{
	o->conn_id = c->id;
	o->remote_vi = c->remote_vi;
	o->frame_payload = c->frame_payload;
	o->max_transfer = c->max_transfer;
	memcpy(o->remote_mac, c->remote_mac, sizeof(o->remote_mac));
	o->reply_op = c->reply_op;
	o->remote_attr = c->remote_attr;
	o->cm_state = c->cm_state;
	o->result = c->result;
	o->nomatch_since_ms = c->nomatch_since_ms;
	o->heard_ms = c->heard_ms;
	o->deadline_ms = c->deadline_ms;
	o->next_retry_ms = c->next_retry_ms;
	o->cm_cookie = c->cookie;
	o->reply_seq = c->reply_seq;
	o->local = c->local;
	o->remote = c->remote;
}

static void
vi_save_rx_tx(struct via_img_vi *o, const struct via_vi *vi)
{
	const struct via_vi_rx *rx = &vi->rx;
	const struct via_vi_tx *tx = &vi->tx;
	const struct via_vi_rel *r = &vi->rel;
	uint32_t i;

	o->rx_state = rx->state;
	o->rx_msg_id = rx->msg.fs.msg_id;
	o->rx_expected_off = rx->msg.off;
	o->rx_imm = rx->msg.fs.imm;
	o->rx_status = rx->msg.status;
	o->rx_last_msg_id = rx->last_msg_id;
	o->rx_capacity = rx->msg.total;
	o->rx_nb_segs = rx->segs != NULL ? rx->msg.nb_segs : 0;
	o->rx_delivered_any = rx->delivered_any;
	o->rx_wqe = rx->msg.wqe;
	o->win_size = r->win != NULL ? r->win_size : 0;
	o->snd_una = r->snd_una;
	o->snd_nxt = r->snd_nxt;
	o->rcv_nxt = r->rcv_nxt;
	o->rto_us = r->rto_us != 0 ? r->rto_us : 1;
	o->retries = r->retries;
	o->dupacks = r->dupacks;
	o->recovering = r->recovering;
	o->ack_due = r->ack_due;
	o->probing = r->probing;
	o->sq_size = vi->sq.pend != NULL ? vi->sq.size : 0;
	o->sq_head = vi->sq.head;
	o->sq_tail = vi->sq.tail;
	o->sq_reads = vi->sq.reads;
	o->ans_head = vi->answers.head;
	o->ans_tail = vi->answers.tail;
	for (i = 0; i < VIA_MAX_READS; i++) {
		const struct via_rdma_resp *a = &vi->answers.q[i];

		o->answers[i] = (struct via_img_answer){ .va = a->src.va, .handle = a->src.handle,
							 .len = a->src.len, .msg_id = a->msg.fs.msg_id,
							 .seq = a->seq, .sent = a->msg.off };
	}
	o->tx_active = tx->active;
	o->tx_opcode = tx->msg.fs.opcode;
	o->tx_flags = tx->msg.fs.flags;
	o->tx_nb_segs = tx->active ? tx->msg.nb_segs : 0;
	o->tx_imm = tx->msg.fs.imm;
	o->tx_cs_imm = tx->msg.cs_imm;
	o->tx_msg_id = tx->msg.fs.msg_id;
	o->tx_first_seq = tx->msg.first_seq;
	o->tx_total = tx->msg.total;
	o->tx_off = tx->msg.off;
	o->tx_status = tx->msg.status;
	o->tx_rdma_handle = tx->msg.fs.rdma_handle;
	o->tx_rdma_va = tx->msg.fs.rdma_va;
	o->tx_wqe = tx->msg.wqe;
	o->tx_msg_counter = vi->tx_msg_id;
	o->tx_seq = vi->tx_seq;
	o->tx_deficit = vi->tx_deficit;
	o->entry_size = vi->entry_size;
	memcpy(o->completed, vi->completed, sizeof(o->completed));
	memcpy(o->taken, vi->taken, sizeof(o->taken));
}

/* The held completions, head first. */
static void
sq_save(struct via_image_buf *ib, const struct via_vi *vi)
{
	const struct via_vi_sq *q = &vi->sq;
	struct via_img_seg segs[VIA_IMG_MAX_SEGS];
	uint32_t i;

	for (i = q->head; q->pend != NULL && i != q->tail; i++) {
		const struct via_sq_pending *p = &q->pend[i & (q->size - 1)];
		struct via_img_sq_pend o = {
			.vi = vi->id, .wait = p->wait, .no_desc = p->no_desc,
			.nb_segs = p->segs != NULL ? p->nb_segs : 0,
			.start_seq = p->start_seq, .end_seq = p->end_seq, .msg_id = p->msg_id,
			.len = p->len, .imm = p->imm, .status = p->status, .received = p->received,
			.wqe = p->wqe,
		};

		/* zero copy: the frames it waited for are copied into the image */
		segs_save(segs, p->segs, o.nb_segs);
		via_image_append(ib, VIA_IMG_SQ_PEND, &o, sizeof(o), segs,
				 o.nb_segs * sizeof(struct via_img_seg));
	}
}

/* The unacknowledged frames, whole (zero-copy ones read out of the client's pages). */
static void
frames_save(struct via_image_buf *ib, const struct via_vi *vi)
{
	const struct via_vi_rel *r = &vi->rel;
	uint8_t buf[VIA_IMG_MAX_FRAME];
	unsigned hits;
	uint32_t seq;

	for (seq = r->snd_una; r->win != NULL && seq != r->snd_nxt; seq++) {
		const struct rte_mbuf *m = r->win[seq & (r->win_size - 1)];
		struct via_img_frame o = { .vi = vi->id, .seq = seq, .len = rte_pktmbuf_pkt_len(m) };
		const void *bytes;

		if (o.len > sizeof(buf)) {
			ib->err = -EMSGSIZE;
			return;
		}
		hits = via_guard_hits;
		bytes = rte_pktmbuf_read(m, 0, o.len, buf);
		via_image_append(ib, VIA_IMG_FRAME, &o, sizeof(o), bytes, o.len);
		/* a zero-copy frame whose pages the client took away: guard.c
		 * patched them with zeros and tells the control thread, which
		 * the exec would cut off; the old viad resumes and ends the
		 * session instead */
		if (via_guard_hits != hits) {
			ib->err = -EFAULT;
			return;
		}
	}
}

static void
vi_save(struct via_image_buf *ib, const struct via_vi *vi)
{
	struct via_img_seg segs[2 * VIA_IMG_MAX_SEGS];
	struct via_img_vi *o;
	unsigned q;

	/* frames received behind an RDMA Read not answered yet are parked,
	 * acknowledged as received but not placed (dp_rel.c): the peer has let
	 * them go, and the image does not carry them; the old viad resumes
	 * (a moment later the answer is in and they are placed) */
	if (vi->rel.park_head != vi->rel.park_tail) {
		ib->err = -EBUSY;
		return;
	}
	/* the poll lcores park between iterations, after each wrote the wait
	 * words it owed (dp_comp.c): none is left for the new viad to know of */
	if (vi->owed[VIA_WQ_SEND] != 0 || vi->owed[VIA_WQ_RECV] != 0) {
		ib->err = -EBUSY;
		return;
	}
	o = calloc(1, sizeof(*o));
	if (o == NULL) {
		ib->err = -ENOMEM;
		return;
	}
	*o = (struct via_img_vi){
		.id = vi->id, .session = vi->owner->id, .cookie = vi->cookie, .state = vi->state,
		.attr = vi->attr, .requested_transfer = vi->requested_transfer, .bell = vi->bell,
		.wq_capacity = vi->wq_capacity, .nb_idle_errors = vi->nb_idle_errors,
		.shm_off = vi->shm_off, .shm_len = vi->shm_len,
	};
	for (q = 0; q < VIA_WQ_COUNT; q++) {
		o->cq[q] = vi->cq[q] != NULL ? vi->cq[q]->id : 0;
		ring_save(&o->wq[q], &vi->wq[q]);
	}
	memcpy(o->idle_errors, vi->idle_errors, sizeof(o->idle_errors));
	vi_save_conn(o, &vi->conn);
	vi_save_rx_tx(o, vi);
	segs_save(segs, vi->rx.segs, o->rx_nb_segs);
	segs_save(segs + o->rx_nb_segs, vi->tx.segs, o->tx_nb_segs);
	via_image_append(ib, VIA_IMG_VI, o, sizeof(*o), segs,
			 ((size_t)o->rx_nb_segs + o->tx_nb_segs) * sizeof(struct via_img_seg));
	free(o);
	sq_save(ib, vi);
	frames_save(ib, vi);
}

/* Every session's objects of one kind, in the order the parser wants. */
static void
objects_save(struct viad *d, struct via_image_buf *ib)
{
	struct via_session *s;
	struct via_ptag *pt;
	struct via_pmem *pm;
	struct via_mr *mr;
	struct via_cq *cq;
	struct via_vi *vi;
	uint32_t ref = 0;

	TAILQ_FOREACH(s, &d->session_list, link)
		session_save(ib, s);
	TAILQ_FOREACH(s, &d->session_list, link) {
		TAILQ_FOREACH(pt, &s->ptags, link) {
			struct via_img_ptag o = { .id = pt->id, .session = s->id };

			via_image_append(ib, VIA_IMG_PTAG, &o, sizeof(o), NULL, 0);
		}
	}
	TAILQ_FOREACH(s, &d->session_list, link) {
		TAILQ_FOREACH(pm, &s->pmems, link)
			pmem_save(ib, pm, s->id, &ref);
		TAILQ_FOREACH(pm, &s->views, link)
			pmem_save(ib, pm, s->id, &ref);
	}
	TAILQ_FOREACH(s, &d->session_list, link) {
		if (s->tpt != NULL)
			tpt_save(ib, s);
	}
	TAILQ_FOREACH(s, &d->session_list, link) {
		TAILQ_FOREACH(mr, &s->mrs, link) {
			struct via_img_mr o = {
				.handle = mr->handle, .session = s->id, .ptag = mr->ptag,
				.pmem_ref = mr->pmem != NULL ? mr->pmem->image_ref : 0,
				.addr = mr->addr, .len = mr->len, .page_base = mr->page_base,
				.page_len = mr->page_len, .rdma_write = mr->rdma_write,
				.rdma_read = mr->rdma_read, .writable = mr->writable,
			};

			via_image_append(ib, VIA_IMG_MR, &o, sizeof(o), NULL, 0);
		}
	}
	TAILQ_FOREACH(s, &d->session_list, link) {
		TAILQ_FOREACH(cq, &s->cqs, link) {
			struct via_img_cq o = {
				.id = cq->id, .session = s->id, .capacity = cq->capacity,
				.shm_off = cq->shm_off, .shm_len = cq->shm_len,
				.slots_off = (uint64_t)(cq->ring.slots - s->seg.va),
			};

			ring_save(&o.ring, &cq->ring);
			via_image_append(ib, VIA_IMG_CQ, &o, sizeof(o), NULL, 0);
		}
	}
	TAILQ_FOREACH(s, &d->session_list, link) {
		TAILQ_FOREACH(vi, &s->vis, link)
			vi_save(ib, vi);
	}
}

int
via_image_save(struct viad *d, struct via_image_buf *ib, int listen_fd, const int *reap_fds,
	       uint32_t nb_reap)
{
	const struct {
		enum via_img_table_kind kind;
		const struct via_idtab *t;
	} tables[] = {
		{ VIA_IMG_T_SESSIONS, &d->sessions }, { VIA_IMG_T_PTAGS, &d->ptags },
		{ VIA_IMG_T_MRS, &d->mrs }, { VIA_IMG_T_CQS, &d->cqs }, { VIA_IMG_T_VIS, &d->vis },
		{ VIA_IMG_T_PMEMS, &d->pmems }, { VIA_IMG_T_CM_REQS, via_cm_reqs(d) },
	};
	struct via_user *u;
	unsigned i;

	via_image_begin(ib);
	daemon_save(d, ib, listen_fd);
	for (i = 0; i < RTE_DIM(tables) && ib->err == 0; i++)
		ib->err = table_save(ib, tables[i].kind, tables[i].t);
	TAILQ_FOREACH(u, &d->users, link) {
		struct via_img_user o = { .uid = u->uid, .refused = u->refused };

		memcpy(o.used, u->used, sizeof(u->used));
		via_image_append(ib, VIA_IMG_USER, &o, sizeof(o), NULL, 0);
	}
	objects_save(d, ib);
	via_cm_save(d, ib);
	if (nb_reap > 0) {
		struct via_img_reap o = { .count = nb_reap };

		for (i = 0; i < nb_reap; i++)
			via_image_fd(ib, reap_fds[i]);
		via_image_append(ib, VIA_IMG_REAP, &o, sizeof(o), reap_fds, nb_reap * sizeof(int));
	}
	return ib->err;
}
