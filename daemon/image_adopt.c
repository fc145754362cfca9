/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * viad's objects rebuilt from an upgrade image (image.h; docs/design.md
 * section 18) by the control thread of the new viad, its NICs open, before
 * any poll lcore runs. The parser (image.c) checked the image's shape and
 * references; here each fd is judged again by what it is, as if its client
 * had just passed it (clientfd.c), each mapping is made again, and each
 * table gets back its ids and generations, so that every handle a client
 * holds, every id a peer's frames carry and every stale id refused before
 * stay as they were.
 *
 * Nothing here closes an fd of the image: on a failure the caller rolls
 * back by exec, and the old binary needs every one of them. What was
 * built is left to that exec.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>

#include <vipl.h>

#include "dp/dp.h"
#include "upgrade.h"

/* The adopter's working state: the objects made, by record. */
struct adopt {
	struct viad *d;
	const struct via_image *img;
	const char **why;
	struct via_pmem **pmem_of_ref;   /* [ref - 1]; NULL: not mapped again */
	bool *pmem_read_only;            /* [ref - 1]: mapped again read-only */
};

#define REFUSE(a, text, err) (*(a)->why = (text), (err))

/* Slot index of id @p id of a table of @p t's shape. */
static uint32_t
slot_of(const struct via_idtab *t, uint32_t id)
{
	return (id & ((UINT32_C(1) << t->idx_bits) - 1)) - 1;
}

/* The table @p t as the image has it, @p objs[slot] its objects. */
static int
table_restore(struct adopt *a, struct via_idtab *t, enum via_img_table_kind kind, void **objs)
{
	const struct via_img_table *it = a->img->tables[kind];
	int rc;

	if (it->capacity != t->capacity)
		return REFUSE(a, "a table of another capacity", -EINVAL);
	rc = via_idtab_restore(t, it->nb_slots, a->img->slots[kind], objs);
	return rc != 0 ? REFUSE(a, "a table's ids", rc) : 0;
}

/* An array for table @p kind's objects by slot. */
static void **
slots_new(struct adopt *a, enum via_img_table_kind kind)
{
	return calloc((size_t)a->img->tables[kind]->nb_slots + 1, sizeof(void *));
}

static void
ring_adopt(struct via_ring *r, const struct via_img_ring *o)
{
	r->local = o->local;
	r->cached_peer = o->cached_peer;
	r->corrupt = o->corrupt != 0;
}

static int
users_adopt(struct adopt *a)
{
	const struct via_image *img = a->img;
	uint32_t i;

	if (img->daemon->nb_user_res != VIA_USER_RES_COUNT)
		return REFUSE(a, "another set of per-user resources", -EINVAL);
	for (i = 0; i < img->nb_recs[VIA_IMG_USER]; i++) {
		const struct via_img_user *o = img->recs[VIA_IMG_USER][i].p;
		struct via_user *u = calloc(1, sizeof(*u));

		if (u == NULL)
			return -ENOMEM;
		u->uid = o->uid;
		u->refused = o->refused;
		memcpy(u->used, o->used, sizeof(u->used));
		TAILQ_INSERT_TAIL(&a->d->users, u, link);
	}
	return 0;
}

/* ---- sessions: their fds judged again, their segments mapped again ------------ */

/* A connected Unix stream socket, as accept() gave it. */
static bool
is_client_socket(int fd)
{
	int domain = 0, type = 0;
	socklen_t len = sizeof(int);
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) &&
	       getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && domain == AF_UNIX &&
	       (len = sizeof(int), getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0) &&
	       type == SOCK_STREAM;
}

/* A pidfd: signal 0 reaches its process, or finds it exited. */
static bool
is_pidfd(int fd)
{
	return syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0) == 0 || errno == ESRCH;
}

static int
session_fds(struct adopt *a, struct via_session *s, const struct via_img_session *o)
{
	struct via_fd_info fi;
	const char *why;

	if (!is_client_socket(o->sock) || !is_pidfd(o->pidfd))
		return REFUSE(a, "a session's socket or pidfd is not one", -EINVAL);
	s->sock = o->sock;
	s->pidfd = o->pidfd;
	if (o->share_fd >= 0) {
		via_fd_classify(o->share_fd, &fi);
		if (via_fd_check_share_file(s, &fi, &why) != 0)
			return REFUSE(a, "a session's share file", -EINVAL);
		s->share_fd = o->share_fd;
	}
	if (o->mem_fd >= 0) {
		via_fd_classify(o->mem_fd, &fi);
		if (via_fd_check_proc_mem(s, o->mem_fd, &fi, &why) != 0)
			return REFUSE(a, "a session's /proc/PID/mem", -EINVAL);
		s->mem_fd = o->mem_fd;
	}
	if (o->witness_fd >= 0) {
		via_fd_classify(o->witness_fd, &fi);
		if (via_fd_check_witness(&fi, &why) != 0)
			return REFUSE(a, "a session's exec witness", -EINVAL);
		s->witness_fd = o->witness_fd;
	}
	if (o->in_fd >= 0) {
		/* it came with a request partly read: judged as it was */
		if (via_fd_classify(o->in_fd, &s->in_fd_info) == VIA_FD_REFUSED)
			return REFUSE(a, "an fd of a request partly read", -EINVAL);
		s->in_fd = o->in_fd;
	}
	return 0;
}

/* The session's segment: its memfd mapped again, its arena, doorbells and error queue. */
static int
session_segment(struct adopt *a, struct via_session *s, const struct via_img_session *o)
{
	const struct via_img_extent *e = (const struct via_img_extent *)(o + 1);
	struct via_fd_info fi;
	void *va;

	if (via_fd_classify(o->seg_fd, &fi) != VIA_FD_SHMEM || fi.size < o->seg_len)
		return REFUSE(a, "a session's segment is not its memfd", -EINVAL);
	va = mmap(NULL, o->seg_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, o->seg_fd, 0);
	if (va == MAP_FAILED)
		return REFUSE(a, "a session's segment cannot be mapped", -errno);
	s->seg = (struct via_shm){ .fd = o->seg_fd, .va = va, .len = o->seg_len,
				   .hugepages = o->seg_hugepages };
	s->seg.guard = via_guard_add(va, o->seg_len, s->id, VIA_GUARD_SEGMENT);
	if (via_arena_restore(&s->arena, (const struct via_arena_extent *)e, o->nb_extents) != 0)
		return -ENOMEM;
	s->bell_words = o->bell_words;
	s->bells = (uint64_t *)(s->seg.va + o->bell_off);
	s->bell_summary = s->bells + s->bell_words;
	s->by_bell = calloc((size_t)s->bell_words * 64, sizeof(*s->by_bell));
	s->bell_taken = calloc(s->bell_words, sizeof(*s->bell_taken));
	if (s->by_bell == NULL || s->bell_taken == NULL)
		return -ENOMEM;
	s->errq_sh = (struct via_shm_errq *)(s->seg.va + o->errq_off);
	via_ring_attach(&s->errq, &s->errq_sh->ring, s->errq_sh + 1, VIA_IMG_ERRQ_SLOTS,
			sizeof(struct via_async_error), true);
	ring_adopt(&s->errq, &o->errq);
	s->opened = true;
	return 0;
}

static int
sessions_adopt(struct adopt *a)
{
	struct viad *d = a->d;
	const struct via_image *img = a->img;
	void **objs = slots_new(a, VIA_IMG_T_SESSIONS);
	struct via_user *u;
	uint32_t i;
	int rc = 0;

	if (objs == NULL)
		return -ENOMEM;
	for (i = 0; rc == 0 && i < img->nb_recs[VIA_IMG_SESSION]; i++) {
		const struct via_img_session *o = img->recs[VIA_IMG_SESSION][i].p;
		struct via_session *s = calloc(1, sizeof(*s));

		if (s == NULL) {
			rc = -ENOMEM;
			break;
		}
		*s = (struct via_session){
			.id = o->id, .pid = o->pid, .uid = o->uid,
			.gid = o->gid, .nb_groups = o->nb_groups, .deferred = o->deferred,
			.in_fd_refused = o->in_fd_refused,
			.fd_refusals_logged = o->fd_refusals_logged, .mem_gone_logged = o->mem_gone_logged,
			.copy_fault_logged = o->copy_fault_logged,
			.errq_overflowed = o->errq_overflowed, .in_place_bytes = o->in_place_bytes,
		};
		via_session_init(d, s);
		objs[slot_of(&d->sessions, o->id)] = s;
		memcpy(s->groups, o->groups, o->nb_groups * sizeof(gid_t));
		s->in.hdr = o->in_hdr;
		memcpy(s->in.body, o->in_body, sizeof(s->in.body));
		s->in.got = o->in_got;
		TAILQ_FOREACH(u, &d->users, link) {
			if (u->uid == s->uid)
				s->user = u;
		}
		rc = session_fds(a, s, o);
		if (rc == 0 && o->opened) {
			s->nic = &d->nics[o->nic];
			rc = session_segment(a, s, o);
		}
	}
	if (rc == 0)
		rc = table_restore(a, &d->sessions, VIA_IMG_T_SESSIONS, objs);
	free(objs);
	return rc;
}

/* ---- tags, memory, regions ------------------------------------------------------ */

static int
ptags_adopt(struct adopt *a)
{
	struct viad *d = a->d;
	const struct via_image *img = a->img;
	void **objs = slots_new(a, VIA_IMG_T_PTAGS);
	uint32_t i;
	int rc;

	if (objs == NULL)
		return -ENOMEM;
	for (i = 0; i < img->nb_recs[VIA_IMG_PTAG]; i++) {
		const struct via_img_ptag *o = img->recs[VIA_IMG_PTAG][i].p;
		struct via_ptag *p = calloc(1, sizeof(*p));

		if (p == NULL) {
			free(objs);
			return -ENOMEM;
		}
		p->id = o->id;
		p->owner = via_idtab_lookup(&d->sessions, o->session);
		TAILQ_INSERT_TAIL(&p->owner->ptags, p, link);
		objs[slot_of(&d->ptags, o->id)] = p;
	}
	rc = table_restore(a, &d->ptags, VIA_IMG_T_PTAGS, objs);
	free(objs);
	return rc;
}

/*
 * Map memory record @p o of session @p s again into @p p: viad's own memfd,
 * a window of the share file, the client's shared memfd or SysV segment as
 * far as its rights allow now. @return 0; -EAGAIN: an object view viad
 * cannot map again (its regions are then copied); else an error
 */
static int
pmem_map(struct adopt *a, struct via_session *s, const struct via_img_pmem *o, struct via_pmem *p,
	 bool *writable)
{
	const char *why = NULL;
	struct via_fd_info fi;
	void *va;
	int rc;

	*writable = true;
	switch (o->kind) {
	case VIA_IMG_PMEM_ALLOC:
		if (via_fd_classify(o->fd, &fi) != VIA_FD_SHMEM || fi.size < o->len)
			return REFUSE(a, "an allocation is not its memfd", -EINVAL);
		va = mmap(NULL, o->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, o->fd, 0);
		if (va == MAP_FAILED)
			return REFUSE(a, "an allocation cannot be mapped", -errno);
		p->shm = (struct via_shm){ .fd = o->fd, .va = va, .len = o->len,
					   .hugepages = o->hugepages };
		return 0;
	case VIA_IMG_PMEM_SHARE:
		/* as via_pmem_view_get: the sparse file, no reserve */
		va = mmap(NULL, o->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
			  s->share_fd, (off_t)o->client_va);
		if (va == MAP_FAILED)
			return REFUSE(a, "a window of a share file cannot be mapped", -errno);
		p->shm = (struct via_shm){ .fd = -1, .va = va, .len = o->len };
		return 0;
	case VIA_IMG_PMEM_OBJECT:
		via_fd_classify(o->fd, &fi);
		rc = via_object_map_fd(o->fd, &fi, o->offset, o->len, &p->shm, writable, &why);
		p->shm.fd = o->fd;
		break;
	default:
		rc = via_sysv_attach(s, o->shmid, o->offset, o->len, &p->shm, writable, &why);
		break;
	}
	if (rc != 0) {
		VLOG_WARN("session %u (pid %d): a shared object it registered cannot be mapped "
			  "again (%s): its regions are copied from now on", s->id, (int)s->pid,
			  why != NULL ? why : "?");
		return -EAGAIN;
	}
	return 0;
}

static int
pmems_adopt(struct adopt *a)
{
	struct viad *d = a->d;
	const struct via_image *img = a->img;
	uint32_t n = img->nb_recs[VIA_IMG_PMEM], i;
	void **objs = slots_new(a, VIA_IMG_T_PMEMS);
	int rc = 0;

	a->pmem_of_ref = calloc((size_t)n + 1, sizeof(*a->pmem_of_ref));
	a->pmem_read_only = calloc((size_t)n + 1, sizeof(*a->pmem_read_only));
	if (objs == NULL || a->pmem_of_ref == NULL || a->pmem_read_only == NULL) {
		free(objs);
		return -ENOMEM;
	}
	for (i = 0; rc == 0 && i < n; i++) {
		const struct via_img_pmem *o = img->recs[VIA_IMG_PMEM][i].p;
		struct via_session *s = via_idtab_lookup(&d->sessions, o->session);
		struct via_pmem *p = calloc(1, sizeof(*p));
		bool writable;

		if (p == NULL) {
			rc = -ENOMEM;
			break;
		}
		*p = (struct via_pmem){ .owner = s, .id = o->id, .view = o->kind != VIA_IMG_PMEM_ALLOC,
					.object_view = o->kind >= VIA_IMG_PMEM_OBJECT,
					.asked = o->asked, .client_va = o->client_va,
					.shmid = o->kind == VIA_IMG_PMEM_SYSV ? o->shmid : -1,
					.object_offset = o->offset };
		rc = pmem_map(a, s, o, p, &writable);
		if (rc == -EAGAIN) {
			/* its regions are copied (mrs_adopt): one mapping fewer */
			via_user_uncharge(d, s, VIA_USER_MAPPINGS, 1);
			free(p);
			rc = 0;
			continue;
		}
		if (rc != 0) {
			free(p);
			break;
		}
		/* not writable any more (a seal, a mode): its regions are not either */
		a->pmem_read_only[i] = !writable;
		p->shm.guard = via_guard_add(p->shm.va, p->shm.len, s->id,
					     o->kind == VIA_IMG_PMEM_ALLOC ? VIA_GUARD_ALLOC
					     : o->kind == VIA_IMG_PMEM_SHARE ? VIA_GUARD_VIEW
									     : VIA_GUARD_OBJECT);
		if (o->kind == VIA_IMG_PMEM_ALLOC) {
			TAILQ_INSERT_TAIL(&s->pmems, p, link);
			objs[slot_of(&d->pmems, o->id)] = p;
		} else {
			TAILQ_INSERT_TAIL(&s->views, p, link);
		}
		a->pmem_of_ref[i] = p;
	}
	if (rc == 0)
		rc = table_restore(a, &d->pmems, VIA_IMG_T_PMEMS, objs);
	free(objs);
	return rc;
}

/*
 * The clients' tables of regions: viad's own numbers (the entries' place,
 * the capacity, the windows by index) back, each window its view mapped
 * again and held; the charges came back with the users and sessions.
 * Before the regions: a view only a table holds must not go.
 */
static int
tpts_adopt(struct adopt *a)
{
	struct viad *d = a->d;
	const struct via_image *img = a->img;
	uint32_t i, k;

	for (i = 0; i < img->nb_recs[VIA_IMG_TPT]; i++) {
		const struct via_img_tpt *o = img->recs[VIA_IMG_TPT][i].p;
		struct via_session *s = via_idtab_lookup(&d->sessions, o->session);
		struct via_tpt *t = calloc(1, sizeof(*t));

		if (t == NULL)
			return -ENOMEM;
		t->off = o->off;
		t->capacity = o->capacity;
		t->sh = (const struct via_tpt_entry *)(s->seg.va + o->off);
		s->tpt = t;
		for (k = 0; k < o->nb_windows; k++) {
			struct via_pmem *v = a->pmem_of_ref[o->window_ref[k] - 1];

			/* a share file's view is mapped again or the image refused */
			if (v == NULL)
				return REFUSE(a, "a table of regions' window not mapped again", -EINVAL);
			v->refs++;
			via_mr_table_window_set(s, &t->windows[t->nb_windows++], v);
		}
	}
	return 0;
}

/* A region whose object view could not be mapped again: copied, uncharged as in place. */
static void
mr_copied(struct viad *d, struct via_session *s, struct via_mr *mr)
{
	s->in_place_bytes -= mr->page_len;
	via_user_uncharge(d, s, VIA_USER_IN_PLACE_BYTES, mr->page_len);
}

static int
mrs_adopt(struct adopt *a)
{
	struct viad *d = a->d;
	const struct via_image *img = a->img;
	void **objs = slots_new(a, VIA_IMG_T_MRS);
	struct via_session *s;
	struct via_pmem *p, *pn;
	uint32_t i;
	int rc;

	if (objs == NULL)
		return -ENOMEM;
	for (i = 0; i < img->nb_recs[VIA_IMG_MR]; i++) {
		const struct via_img_mr *o = img->recs[VIA_IMG_MR][i].p;
		struct via_mr *mr = calloc(1, sizeof(*mr));

		if (mr == NULL) {
			free(objs);
			return -ENOMEM;
		}
		s = via_idtab_lookup(&d->sessions, o->session);
		*mr = (struct via_mr){
			.owner = s, .handle = o->handle, .ptag = o->ptag, .addr = o->addr,
			.len = o->len, .page_base = o->page_base, .page_len = o->page_len,
			.rdma_write = o->rdma_write, .rdma_read = o->rdma_read,
			.writable = o->writable,
		};
		if (o->pmem_ref != 0) {
			mr->pmem = a->pmem_of_ref[o->pmem_ref - 1];
			if (mr->pmem == NULL)
				mr_copied(d, s, mr);
			else
				mr->pmem->refs++;
			if (a->pmem_read_only[o->pmem_ref - 1])
				mr->writable = false;
		}
		/* a copied region needs the program's mem fd, as at registration */
		if (mr->pmem == NULL && s->mem_fd < 0) {
			free(mr);
			free(objs);
			return REFUSE(a, "a copied region of a session without a mem fd", -EINVAL);
		}
		via_ptag_get(d, s, mr->ptag)->refs++;
		TAILQ_INSERT_TAIL(&s->mrs, mr, link);
		objs[slot_of(&d->mrs, o->handle)] = mr;
	}
	rc = table_restore(a, &d->mrs, VIA_IMG_T_MRS, objs);
	free(objs);
	/* a view is one region's or a table window's or more: one none uses
	 * would never go */
	TAILQ_FOREACH(s, &d->session_list, link) {
		TAILQ_FOREACH_SAFE(p, &s->views, link, pn) {
			if (p->refs == 0) {
				p->refs = 1;
				via_pmem_view_put(d, s, p);
			}
		}
	}
	return rc;
}

static int
cqs_adopt(struct adopt *a)
{
	struct viad *d = a->d;
	const struct via_image *img = a->img;
	void **objs = slots_new(a, VIA_IMG_T_CQS);
	uint32_t i;
	int rc;

	if (objs == NULL)
		return -ENOMEM;
	for (i = 0; i < img->nb_recs[VIA_IMG_CQ]; i++) {
		const struct via_img_cq *o = img->recs[VIA_IMG_CQ][i].p;
		struct via_session *s = via_idtab_lookup(&d->sessions, o->session);
		struct via_cq *cq = calloc(1, sizeof(*cq));

		if (cq == NULL) {
			free(objs);
			return -ENOMEM;
		}
		*cq = (struct via_cq){ .owner = s, .id = o->id, .capacity = o->capacity,
				       .shm_off = o->shm_off, .shm_len = o->shm_len };
		cq->sh = (struct via_shm_cq *)(s->seg.va + o->shm_off);
		via_ring_attach(&cq->ring, &cq->sh->ring, s->seg.va + o->slots_off, o->capacity,
				sizeof(struct via_cqe), true);
		ring_adopt(&cq->ring, &o->ring);
		TAILQ_INSERT_TAIL(&s->cqs, cq, link);
		objs[slot_of(&d->cqs, o->id)] = cq;
	}
	rc = table_restore(a, &d->cqs, VIA_IMG_T_CQS, objs);
	free(objs);
	return rc;
}

/* ---- VIs ---------------------------------------------------------------------- */

/* The @p n segments of @p in into @p out. */
static void
segs_copy(struct via_dp_seg *out, const struct via_img_seg *in, uint16_t n)
{
	uint16_t i;

	for (i = 0; i < n; i++)
		out[i] = (struct via_dp_seg){ .va = in[i].va, .len = in[i].len,
					      .handle = in[i].handle };
}

/*
 * A scatter/gather list of @p room entries holding the @p n of @p in; a
 * list not in use (!@p used) stays NULL, made with the rest of the VI's
 * memory for its connection (vi_adopt). @return 0, -ENOMEM
 */
static int
segs_adopt(struct via_dp_seg **out, const struct via_img_seg *in, uint16_t n, uint32_t room,
	   bool used)
{
	*out = NULL;
	if (!used)
		return 0;
	*out = calloc(room, sizeof(**out));
	if (*out == NULL)
		return -ENOMEM;
	segs_copy(*out, in, n);
	return 0;
}

static void
vi_conn_adopt(struct via_vi *vi, const struct via_img_vi *o)
{
	struct via_vi_conn *c = &vi->conn;

	c->id = o->conn_id;
	memcpy(c->remote_mac, o->remote_mac, sizeof(c->remote_mac));
	c->remote_vi = o->remote_vi;
	c->frame_payload = o->frame_payload;
	c->max_transfer = o->max_transfer;
	c->remote_attr = o->remote_attr;
	c->cm_state = o->cm_state;
	c->result = o->result;
	c->nomatch_since_ms = o->nomatch_since_ms;
	c->heard_ms = o->heard_ms;
	c->cookie = o->cm_cookie;
	c->reply_seq = o->reply_seq;
	c->reply_op = o->reply_op;
	c->deadline_ms = o->deadline_ms;
	c->next_retry_ms = o->next_retry_ms;
	c->local = o->local;
	c->remote = o->remote;
}

/* The receive state, the message being framed and the Reads answered. */
static int
vi_rx_tx_adopt(struct adopt *a, struct via_vi *vi, const struct via_img_vi *o)
{
	const struct via_img_seg *segs = (const struct via_img_seg *)(o + 1);
	uint32_t room = a->d->conf.max_segments_per_desc, i;
	struct via_vi_rx *rx = &vi->rx;
	struct via_vi_tx *tx = &vi->tx;

	if (o->rx_nb_segs > room || o->tx_nb_segs > room)
		return REFUSE(a, "a descriptor of more segments than max_segments_per_desc",
			      -EINVAL);
	*rx = (struct via_vi_rx){
		.state = o->rx_state, .delivered_any = o->rx_delivered_any,
		.last_msg_id = o->rx_last_msg_id,
		.msg = { .fs = { .msg_id = o->rx_msg_id, .imm = o->rx_imm },
			 .off = o->rx_expected_off, .status = o->rx_status,
			 .total = o->rx_capacity, .wqe = o->rx_wqe, .nb_segs = o->rx_nb_segs },
	};
	if (segs_adopt(&rx->segs, segs, o->rx_nb_segs, room, o->rx_state != VIA_RX_IDLE) != 0)
		return -ENOMEM;
	rx->msg.segs = rx->segs;
	*tx = (struct via_vi_tx){
		.active = o->tx_active, .stale = true,
		.msg = { .fs = { .opcode = o->tx_opcode, .flags = o->tx_flags, .imm = o->tx_imm,
				 .msg_id = o->tx_msg_id, .msg_len = o->tx_total,
				 .rdma_va = o->tx_rdma_va, .rdma_handle = o->tx_rdma_handle },
			 .cs_imm = o->tx_cs_imm, .first_seq = o->tx_first_seq, .total = o->tx_total,
			 .off = o->tx_off, .status = o->tx_status, .wqe = o->tx_wqe,
			 .nb_segs = o->tx_nb_segs, .zero_copy = true },
	};
	if (segs_adopt(&tx->segs, segs + o->rx_nb_segs, o->tx_nb_segs, room, o->tx_active) != 0)
		return -ENOMEM;
	tx->msg.segs = tx->segs;
	vi->answers.head = o->ans_head;
	vi->answers.tail = o->ans_tail;
	for (i = 0; i < VIA_MAX_READS; i++) {
		const struct via_img_answer *x = &o->answers[i];

		struct via_rdma_resp *r = &vi->answers.q[i];

		*r = (struct via_rdma_resp){
			.src = { .va = x->va, .handle = x->handle, .len = x->len }, .seq = x->seq,
		};
		via_resp_answer_init(r, x->msg_id);
		r->msg.off = x->sent;
	}
	vi->tx_msg_id = o->tx_msg_counter;
	vi->tx_seq = o->tx_seq;
	vi->tx_deficit = o->tx_deficit;
	/* a line entry's inline data are framed from its slot (dp.c:vi_send),
	 * the one taken last, at this process's address of the segment */
	if (tx->active && via_vi_lines(vi) && (vi->taken[VIA_WQ_SEND].status & VIA_WQE_INLINE))
		tx->msg.fs.data = (const uint8_t *)via_ring_slot(&vi->wq[VIA_WQ_SEND], UINT32_MAX) +
				  VIA_WQE_LINE_SIZE;
	return 0;
}

/* The held completions, from the records that follow the VI's. */
static int
vi_sq_adopt(struct adopt *a, struct via_vi *vi, const struct via_img_vi *o, uint32_t first)
{
	struct via_vi_sq *q = &vi->sq;
	uint32_t i;

	q->size = o->sq_size;
	q->head = o->sq_head;
	q->tail = o->sq_tail;
	q->reads = o->sq_reads;
	if (q->size == 0)
		return 0;
	q->pend = calloc(q->size, sizeof(*q->pend));
	if (q->pend == NULL)
		return -ENOMEM;
	for (i = 0; i < q->tail - q->head; i++) {
		const struct via_img_sq_pend *x = a->img->recs[VIA_IMG_SQ_PEND][first + i].p;
		struct via_sq_pending *p = &q->pend[(q->head + i) & (q->size - 1)];

		*p = (struct via_sq_pending){
			.wqe = x->wqe, .wait = x->wait, .no_desc = x->no_desc,
			.nb_segs = x->wait == VIA_SQ_READ ? x->nb_segs : 0,
			.start_seq = x->start_seq, .end_seq = x->end_seq, .msg_id = x->msg_id,
			.len = x->len, .imm = x->imm, .status = x->status, .received = x->received,
		};
		if (x->wait != VIA_SQ_READ)
			continue;
		/* a list of its shard's pool, as dp_req.c takes one (dp_mem.c) */
		p->segs = via_read_segs_get(vi->shard);
		if (p->segs == NULL)
			return REFUSE(a, "RDMA Reads waiting for their answer exceed a shard's pool",
				      -ENOMEM);
		segs_copy(p->segs, (const struct via_img_seg *)(x + 1), x->nb_segs);
	}
	return 0;
}

/* The unacknowledged frames, made mbufs again, in the send window. */
static int
vi_frames_adopt(struct adopt *a, struct via_vi *vi, const struct via_img_vi *o, uint32_t first)
{
	struct via_vi_rel *r = &vi->rel;
	uint32_t i;

	*r = (struct via_vi_rel){
		.win_size = o->win_size, .snd_una = o->snd_una, .snd_nxt = o->snd_nxt,
		.rcv_nxt = o->rcv_nxt, .rto_us = o->rto_us, .retries = o->retries,
		.dupacks = o->dupacks, .recovering = o->recovering, .ack_due = o->ack_due,
		.probing = o->probing, .heard_at = rte_get_timer_cycles(),
	};
	if (r->win_size == 0)
		return 0;
	r->win = calloc(r->win_size, sizeof(*r->win));
	if (r->win == NULL)
		return -ENOMEM;
	for (i = 0; i < r->snd_nxt - r->snd_una; i++) {
		const struct via_img_frame *f = a->img->recs[VIA_IMG_FRAME][first + i].p;
		struct rte_mbuf *m = rte_pktmbuf_alloc(via_nics_pool());
		void *at = m != NULL ? rte_pktmbuf_append(m, (uint16_t)f->len) : NULL;

		if (at == NULL) {
			rte_pktmbuf_free(m);
			return REFUSE(a, "an unacknowledged frame finds no mbuf of its size", -ENOMEM);
		}
		memcpy(at, f + 1, f->len);
		r->win[f->seq & (r->win_size - 1)] = m;
	}
	return 0;
}

static int
vi_adopt(struct adopt *a, const struct via_img_vi *o, uint32_t k, void **objs)
{
	struct viad *d = a->d;
	struct via_session *s = via_idtab_lookup(&d->sessions, o->session);
	struct via_vi *vi = calloc(1, sizeof(*vi));
	unsigned q;
	int rc;

	if (vi == NULL)
		return -ENOMEM;
	*vi = (struct via_vi){
		.owner = s, .id = o->id, .cookie = o->cookie, .state = o->state, .attr = o->attr,
		.requested_transfer = o->requested_transfer, .bell = o->bell,
		.wq_capacity = o->wq_capacity, .entry_size = o->entry_size,
		.shm_off = o->shm_off, .shm_len = o->shm_len,
		.nb_idle_errors = (uint8_t)o->nb_idle_errors,
	};
	/* placed before anything can fail: the caller frees nothing, the
	 * rollback's exec does */
	TAILQ_INSERT_TAIL(&s->vis, vi, link);
	objs[slot_of(&d->vis, o->id)] = vi;
	memcpy(vi->idle_errors, o->idle_errors, sizeof(vi->idle_errors));
	vi->sh = (struct via_shm_vi *)(s->seg.va + o->shm_off);
	if (via_vi_attach_rings(vi) != 0)
		return REFUSE(a, "a VI's rings", -EINVAL);
	memcpy(vi->taken, o->taken, sizeof(vi->taken));
	for (q = 0; q < VIA_WQ_COUNT; q++) {
		ring_adopt(&vi->wq[q], &o->wq[q]);
		vi->completed[q] = o->completed[q];
		vi->cq[q] = o->cq[q] != 0 ? via_cq_get(d, s, o->cq[q]) : NULL;
		if (vi->cq[q] != NULL)
			vi->cq[q]->refs++;
	}
	via_ptag_get(d, s, vi->attr.ptag)->refs++;
	vi_conn_adopt(vi, o);
	/* its shard first: its RDMA Reads' lists come from the shard's pool */
	via_vi_place(d, vi);
	rc = vi_rx_tx_adopt(a, vi, o);
	if (rc == 0)
		rc = vi_sq_adopt(a, vi, o, a->img->vi_sq_first[k]);
	if (rc == 0)
		rc = vi_frames_adopt(a, vi, o, a->img->vi_frame_first[k]);
	/* the rest of its poll lcore's memory for its connection, or the one
	 * it is making (dp/dp_mem.c), as the connection manager makes it */
	if (rc == 0 && vi->state != VIP_STATE_IDLE && via_dp_vi_provision(vi) != 0)
		rc = -ENOMEM;
	if (rc != 0)
		return rc;
	if (vi->state == VIP_STATE_CONNECTED) {
		/* as via_vi_set_state made it: its receives polled, its
		 * transport's timers visited every iteration */
		via_ring_set_polled(&vi->wq[VIA_WQ_RECV], true);
		if (via_rel_level(vi)) {
			TAILQ_INSERT_TAIL(&vi->shard->rel_vis, vi, rel_link);
			vi->rel_listed = true;
		}
	}
	return 0;
}

static int
vis_adopt(struct adopt *a)
{
	struct viad *d = a->d;
	const struct via_image *img = a->img;
	void **objs = slots_new(a, VIA_IMG_T_VIS);
	uint32_t i;
	int rc = 0;

	if (objs == NULL)
		return -ENOMEM;
	for (i = 0; rc == 0 && i < img->nb_recs[VIA_IMG_VI]; i++)
		rc = vi_adopt(a, img->recs[VIA_IMG_VI][i].p, i, objs);
	if (rc == 0)
		rc = table_restore(a, &d->vis, VIA_IMG_T_VIS, objs);
	free(objs);
	return rc;
}

/* ---- the whole ------------------------------------------------------------------- */

/* The NICs opened are the ports the image's connections run on. */
static int
nics_check(struct adopt *a)
{
	const struct via_image *img = a->img;
	uint32_t i;

	if (img->daemon->nb_nics != a->d->nb_nics)
		return REFUSE(a, "another number of NICs", -EINVAL);
	for (i = 0; i < a->d->nb_nics; i++) {
		const struct via_img_nic *n = img->recs[VIA_IMG_NIC][i].p;
		const struct via_nic *nic = &a->d->nics[i];

		if (strcmp(n->name, nic->info.name) != 0 ||
		    memcmp(n->mac, nic->info.mac, sizeof(n->mac)) != 0 || n->mtu != nic->info.mtu)
			return REFUSE(a, "a NIC of another name, MAC or MTU", -EINVAL);
	}
	return 0;
}

static void
counters_adopt(struct viad *d, const struct via_img_daemon *dm)
{
	struct via_poll_stats carried = {
		.frames_rx = dm->poll[VIA_IMG_PC_FRAMES_RX],
		.frames_tx = dm->poll[VIA_IMG_PC_FRAMES_TX],
		.frames_dropped = dm->poll[VIA_IMG_PC_FRAMES_DROPPED],
		.frames_corrupt = dm->poll[VIA_IMG_PC_FRAMES_CORRUPT],
		.frames_unmatched = dm->poll[VIA_IMG_PC_FRAMES_UNMATCHED],
		.cq_overruns = dm->poll[VIA_IMG_PC_CQ_OVERRUNS],
		.frames_retransmitted = dm->poll[VIA_IMG_PC_FRAMES_RETRANSMITTED],
		.rto_expiries = dm->poll[VIA_IMG_PC_RTO_EXPIRIES],
		.frames_tx_zero_copy = dm->poll[VIA_IMG_PC_FRAMES_TX_ZERO_COPY],
		.naks_tx = dm->poll[VIA_IMG_PC_NAKS_TX],
		.naks_rx = dm->poll[VIA_IMG_PC_NAKS_RX],
		.frames_duplicate = dm->poll[VIA_IMG_PC_FRAMES_DUPLICATE],
		.frames_out_of_order = dm->poll[VIA_IMG_PC_FRAMES_OUT_OF_ORDER],
		.cm_cookies_sent = dm->poll[VIA_IMG_PC_CM_COOKIES_SENT],
		.cm_requests_refused = dm->poll[VIA_IMG_PC_CM_REQUESTS_REFUSED],
	};

	d->counters = dm->counters;
	d->mappings = dm->mappings;
	d->sec.fds_refused = dm->sec_fds_refused;
	d->sec.bus_errors = dm->sec_bus_errors;
	d->sec.programs_gone = dm->sec_programs_gone;
	via_poll_stats_carry(&carried);
}

int
via_image_adopt(struct viad *d, const struct via_image *img, const char **why)
{
	struct adopt a = { .d = d, .img = img, .why = why };
	struct timespec ts;
	uint64_t blackout_ms;
	int rc;

	*why = "out of memory";
	clock_gettime(CLOCK_MONOTONIC, &ts);
	blackout_ms = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec -
		       img->hdr->frozen_ns) / 1000000u;
	rc = nics_check(&a);
	if (rc == 0)
		rc = users_adopt(&a);
	if (rc == 0)
		rc = sessions_adopt(&a);
	if (rc == 0)
		rc = ptags_adopt(&a);
	if (rc == 0)
		rc = pmems_adopt(&a);
	if (rc == 0)
		rc = tpts_adopt(&a);
	if (rc == 0)
		rc = mrs_adopt(&a);
	if (rc == 0)
		rc = cqs_adopt(&a);
	if (rc == 0)
		rc = vis_adopt(&a);
	free(a.pmem_of_ref);
	free(a.pmem_read_only);
	if (rc == 0) {
		counters_adopt(d, img->daemon);
		rc = via_cm_adopt(d, img, blackout_ms, why);
	}
	return rc;
}
