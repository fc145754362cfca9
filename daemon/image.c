/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The upgrade image's format (image.h): writing records, and the parser
 * that checks an image before anything is built from it. Libc only: the
 * fuzzer (tests/fuzz/fuzz_image.c) links it alone.
 *
 * The parser's promise to image_adopt.c: every record has its exact
 * length; every enum is in range; every id names a slot of its table
 * whose index bits are right, and no slot is claimed twice; every
 * reference (a session, a tag, a CQ, a region's memory) resolves to a
 * record of the same session; every offset and length into a segment or a
 * mapping lies inside it; ring indices are within their capacity; counts
 * of the records that follow a VI are what the VI says; and no fd number
 * is named twice. What it cannot check (that an fd is what its role says,
 * that a mapping can be made) the adopter does, and refuses the image.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "image.h"
#include "via_idtab.h"
#include "via_ring.h"

#include <vipl.h>

/* ---- CRC32C ----------------------------------------------------------------- */

static uint32_t crc_table[256];

static void
crc_init(void)
{
	uint32_t i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[i] = c;
	}
}

uint32_t
via_image_crc(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (crc_table[1] == 0)
		crc_init();
	crc = ~crc;
	while (len-- > 0)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* The image's checksum: everything, its own field taken as 0. */
static uint32_t
image_crc(const uint8_t *buf, size_t len)
{
	const size_t at = offsetof(struct via_image_hdr, crc);
	const uint32_t zero = 0;
	uint32_t c = via_image_crc(0, buf, at);

	c = via_image_crc(c, &zero, sizeof(zero));
	return via_image_crc(c, buf + at + sizeof(zero), len - at - sizeof(zero));
}

/* ---- writing ---------------------------------------------------------------- */

void *
via_image_append(struct via_image_buf *ib, enum via_img_type type, const void *a, size_t fixed,
		 const void *b, size_t var)
{
	size_t len = VIA_ALIGN_UP(fixed + var, (size_t)8);
	size_t need = ib->len + sizeof(struct via_image_rec) + len;
	struct via_image_rec rec = { .type = (uint16_t)type, .len = (uint32_t)len };
	uint8_t *at;

	if (ib->err != 0 || len > UINT32_MAX) {
		ib->err = -ENOMEM;
		return NULL;
	}
	if (need > ib->cap) {
		size_t cap = ib->cap != 0 ? ib->cap : 1 << 16;
		uint8_t *p;

		while (cap < need)
			cap *= 2;
		p = realloc(ib->p, cap);
		if (p == NULL) {
			ib->err = -ENOMEM;
			return NULL;
		}
		ib->p = p;
		ib->cap = cap;
	}
	at = ib->p + ib->len;
	memcpy(at, &rec, sizeof(rec));
	at += sizeof(rec);
	memcpy(at, a, fixed);
	if (var != 0)
		memcpy(at + fixed, b, var);
	memset(at + fixed + var, 0, len - fixed - var);
	ib->len = need;
	ib->nb_records++;
	return at;
}

void
via_image_begin(struct via_image_buf *ib)
{
	memset(ib, 0, sizeof(*ib));
	ib->p = calloc(1, 1 << 16);
	if (ib->p == NULL) {
		ib->err = -ENOMEM;
		return;
	}
	ib->cap = 1 << 16;
	ib->len = sizeof(struct via_image_hdr);
}

void
via_image_fd(struct via_image_buf *ib, int fd)
{
	if (fd < 0 || ib->err != 0)
		return;
	if (ib->nb_fds == ib->cap_fds) {
		uint32_t cap = ib->cap_fds != 0 ? 2 * ib->cap_fds : 256;
		int32_t *n = realloc(ib->fds, cap * sizeof(*n));

		if (n == NULL) {
			ib->err = -ENOMEM;
			return;
		}
		ib->fds = n;
		ib->cap_fds = cap;
	}
	ib->fds[ib->nb_fds++] = fd;
}

void
via_image_buf_free(struct via_image_buf *ib)
{
	free(ib->p);
	free(ib->fds);
	memset(ib, 0, sizeof(*ib));
}

int
via_image_finish(struct via_image_buf *ib, struct via_image_hdr *h)
{
	if (ib->err != 0)
		return ib->err;
	h->magic = VIA_IMAGE_MAGIC;
	h->header_size = sizeof(*h);
	h->total_len = ib->len;
	h->nb_records = ib->nb_records;
	h->crc = 0;
	memcpy(ib->p, h, sizeof(*h));
	h->crc = image_crc(ib->p, ib->len);
	memcpy(ib->p, h, sizeof(*h));
	return 0;
}

/* ---- parsing ---------------------------------------------------------------- */

/* The parser's working state. */
struct parse {
	struct via_image *img;
	const char **why;
	uint32_t idx_bits[VIA_IMG_T_COUNT];
	/* per table slot: 1 + the index of the record that claims it; 0: free */
	uint32_t *claim[VIA_IMG_T_COUNT];
	int32_t *fds;
	size_t nb_fds, cap_fds;
	uint32_t *uids;          /* the USER records' uids, sorted */
	int64_t tpt_session;     /* the session record of the last TPT record; -1: none yet */
};

#define FAIL(p, text) (*(p)->why = (text), -EINVAL)

static uint32_t
bits_for(uint32_t n)
{
	uint32_t b = 1;

	while ((UINT64_C(1) << b) <= n)
		b++;
	return b;
}

static bool
pow2(uint64_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

/* [off, off + len) inside [0, size), without wrapping */
static bool
inside(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

static bool
aligned(uint64_t x, uint64_t a)
{
	return (x & (a - 1)) == 0;
}

/* Remember fd @p fd (-1: none) of the image; all are checked unique at the end. */
static int
fd_add(struct parse *p, int32_t fd, bool required)
{
	if (fd < -1 || (fd == -1 && required))
		return FAIL(p, "an fd number out of range");
	if (fd == -1)
		return 0;
	if (p->nb_fds == p->cap_fds) {
		size_t cap = p->cap_fds ? 2 * p->cap_fds : 256;
		int32_t *n = realloc(p->fds, cap * sizeof(*n));

		if (n == NULL)
			return -ENOMEM;
		p->fds = n;
		p->cap_fds = cap;
	}
	p->fds[p->nb_fds++] = fd;
	return 0;
}

static int
cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/*
 * Record @p rec (index @p n of its type) claims slot id @p id of table @p t.
 * @return 0; -EINVAL (no such slot, wrong generation bits, claimed twice)
 */
static int
claim(struct parse *p, enum via_img_table_kind t, uint32_t id, uint32_t n)
{
	const struct via_img_table *tab = p->img->tables[t];
	uint32_t idx = (id & ((UINT32_C(1) << p->idx_bits[t]) - 1)) - 1;

	if (id == 0 || idx >= tab->nb_slots || p->img->slots[t][idx] != id)
		return FAIL(p, "an id that is no slot of its table");
	if (p->claim[t][idx] != 0)
		return FAIL(p, "two records of one id");
	p->claim[t][idx] = n + 1;
	return 0;
}

/* The record index of type @p type that claimed id @p id of table @p t, or -1. */
static int64_t
lookup(const struct parse *p, enum via_img_table_kind t, uint32_t id)
{
	const struct via_img_table *tab = p->img->tables[t];
	uint32_t idx = (id & ((UINT32_C(1) << p->idx_bits[t]) - 1)) - 1;

	if (id == 0 || idx >= tab->nb_slots || p->img->slots[t][idx] != id ||
	    p->claim[t][idx] == 0)
		return -1;
	return (int64_t)p->claim[t][idx] - 1;
}

static const void *
rec(const struct parse *p, enum via_img_type type, uint32_t i)
{
	return p->img->recs[type][i].p;
}

/* The session record of id @p id, opened if @p opened; NULL (and *why) if none. */
static const struct via_img_session *
session_of(struct parse *p, uint32_t id, bool opened)
{
	int64_t i = lookup(p, VIA_IMG_T_SESSIONS, id);
	const struct via_img_session *s;

	if (i < 0) {
		*p->why = "a record of no session";
		return NULL;
	}
	s = rec(p, VIA_IMG_SESSION, (uint32_t)i);
	if (opened && !s->opened) {
		*p->why = "an object of a session not opened";
		return NULL;
	}
	return s;
}

/* ---- the records, one function each ------------------------------------------ */

static int
check_daemon(struct parse *p, const struct via_img_daemon *dm)
{
	if (dm->nb_nics == 0 || dm->nb_nics > VIA_CONF_MAX_PORTS)
		return FAIL(p, "the number of NICs");
	if (dm->max_desc_per_queue == 0 || dm->max_desc_per_queue > 65536 ||
	    dm->max_segments_per_desc == 0 || dm->max_segments_per_desc > VIA_IMG_MAX_SEGS ||
	    dm->max_discriminator_len > sizeof(((struct via_ctl_addr *)0)->disc) ||
	    dm->max_cq_entries == 0 || dm->max_cq_entries > VIA_RING_MAX_CAPACITY)
		return FAIL(p, "the daemon's limits");
	if (dm->nb_user_res == 0 || dm->nb_user_res > VIA_IMG_USER_RES_MAX)
		return FAIL(p, "the number of per-user resources");
	if (fd_add(p, dm->listen_fd, true) != 0 || fd_add(p, dm->wake_fd, true) != 0)
		return -EINVAL;
	return 0;
}

static int
check_nic(struct parse *p, const struct via_img_nic *n, uint32_t i)
{
	if (n->index != i || memchr(n->name, '\0', sizeof(n->name)) == NULL || n->mtu < 64 ||
	    n->mtu > VIA_IMG_MAX_FRAME - 18)
		return FAIL(p, "a NIC record");
	return 0;
}

static int
check_table(struct parse *p, const struct via_img_table *t, uint32_t len)
{
	const uint32_t *ids = (const uint32_t *)(t + 1);
	uint32_t i, bits;

	if (t->table >= VIA_IMG_T_COUNT || p->img->tables[t->table] != NULL)
		return FAIL(p, "a table twice, or of no kind");
	if (t->capacity == 0 || t->capacity > VIA_IDTAB_MAX || t->nb_slots > t->capacity ||
	    len != sizeof(*t) + VIA_ALIGN_UP((uint64_t)t->nb_slots * 4, 8))
		return FAIL(p, "a table's size");
	bits = bits_for(t->capacity);
	for (i = 0; i < t->nb_slots; i++) {
		if ((ids[i] & ((UINT32_C(1) << bits) - 1)) != i + 1)
			return FAIL(p, "a slot id whose index bits are not its slot's");
	}
	p->img->tables[t->table] = t;
	p->img->slots[t->table] = ids;
	p->idx_bits[t->table] = bits;
	p->claim[t->table] = calloc(t->nb_slots + 1, sizeof(uint32_t));
	return p->claim[t->table] == NULL ? -ENOMEM : 0;
}

static int
check_users(struct parse *p)
{
	uint32_t n = p->img->nb_recs[VIA_IMG_USER], i;

	p->uids = malloc((n + 1) * sizeof(*p->uids));
	if (p->uids == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		p->uids[i] = ((const struct via_img_user *)rec(p, VIA_IMG_USER, i))->uid;
	qsort(p->uids, n, sizeof(*p->uids), cmp_u32);
	for (i = 1; i < n; i++) {
		if (p->uids[i] == p->uids[i - 1])
			return FAIL(p, "two records of one user");
	}
	return 0;
}

static bool
ring_ok(const struct via_img_ring *r, uint32_t capacity, bool producer)
{
	uint32_t used = producer ? r->local - r->cached_peer : r->cached_peer - r->local;

	return used <= capacity && r->corrupt <= 1;
}

static int
check_session(struct parse *p, const struct via_img_session *s, uint32_t len, uint32_t i)
{
	const struct via_img_daemon *dm = p->img->daemon;
	const struct via_img_extent *e = (const struct via_img_extent *)(s + 1);
	uint64_t end = 0;
	uint32_t k;
	int rc;

	if (len != sizeof(*s) + (uint64_t)s->nb_extents * sizeof(*e))
		return FAIL(p, "a session record's length");
	rc = claim(p, VIA_IMG_T_SESSIONS, s->id, i);
	if (rc != 0)
		return rc;
	if (bsearch(&s->uid, p->uids, p->img->nb_recs[VIA_IMG_USER], sizeof(uint32_t),
		    cmp_u32) == NULL)
		return FAIL(p, "a session of no user");
	if (s->nb_groups > 256 || s->opened > 1 || s->seg_hugepages > 1 || s->in_fd_refused > 1 ||
	    s->errq_overflowed > 1 || s->mem_gone_logged > 1 || s->copy_fault_logged > 1)
		return FAIL(p, "a session's flags");
	/* a request partly read: never more than one header and its body */
	if (s->in_got > sizeof(s->in_hdr) + VIA_CTL_BODY_MAX ||
	    (s->in_got >= sizeof(s->in_hdr) &&
	     (s->in_hdr.len > VIA_CTL_BODY_MAX || s->in_got > sizeof(s->in_hdr) + s->in_hdr.len)))
		return FAIL(p, "a session's partly read request");
	if ((rc = fd_add(p, s->sock, true)) != 0 || (rc = fd_add(p, s->pidfd, true)) != 0 ||
	    (rc = fd_add(p, s->seg_fd, s->opened)) != 0 || (rc = fd_add(p, s->share_fd, false)) != 0 ||
	    (rc = fd_add(p, s->mem_fd, false)) != 0 || (rc = fd_add(p, s->witness_fd, false)) != 0 ||
	    (rc = fd_add(p, s->in_fd, false)) != 0)
		return rc;
	if (!s->opened) {
		if (s->nic != UINT32_MAX || s->nb_extents != 0 || s->seg_fd != -1)
			return FAIL(p, "a session not opened, with a NIC or a segment");
		return 0;
	}
	if (s->nic >= dm->nb_nics)
		return FAIL(p, "a session's NIC");
	if (s->seg_len < 4096 || s->seg_len > (UINT64_C(8) << 30) || !aligned(s->seg_len, 4096))
		return FAIL(p, "a session's segment size");
	if (!aligned(s->errq_off, VIA_SHM_ALIGN) ||
	    !inside(s->errq_off, via_shm_errq_size(VIA_IMG_ERRQ_SLOTS), s->seg_len) ||
	    !ring_ok(&s->errq, VIA_IMG_ERRQ_SLOTS, true))
		return FAIL(p, "a session's error queue");
	if (s->bell_words == 0 || s->bell_words > VIA_IDTAB_MAX / 64 || !aligned(s->bell_off, 8) ||
	    !inside(s->bell_off,
		    ((uint64_t)s->bell_words + via_bell_summary_words(s->bell_words)) * 8,
		    s->seg_len))
		return FAIL(p, "a session's doorbells");
	for (k = 0; k < s->nb_extents; k++) {
		if (e[k].len == 0 || !aligned(e[k].off, VIA_SHM_ALIGN) ||
		    !aligned(e[k].len, VIA_SHM_ALIGN) || e[k].off < end ||
		    !inside(e[k].off, e[k].len, s->seg_len))
			return FAIL(p, "a session's free extents");
		end = e[k].off + e[k].len;
	}
	return 0;
}

static int
check_ptag(struct parse *p, const struct via_img_ptag *t, uint32_t i)
{
	int rc = claim(p, VIA_IMG_T_PTAGS, t->id, i);

	if (rc == 0 && session_of(p, t->session, true) == NULL)
		return -EINVAL;
	return rc;
}

/* Whether @p ptag is a tag of session @p session. */
static bool
ptag_of(struct parse *p, uint32_t ptag, uint32_t session)
{
	int64_t i = lookup(p, VIA_IMG_T_PTAGS, ptag);

	return i >= 0 &&
	       ((const struct via_img_ptag *)rec(p, VIA_IMG_PTAG, (uint32_t)i))->session == session;
}

static int
check_pmem(struct parse *p, const struct via_img_pmem *m, uint32_t i)
{
	const struct via_img_session *s = session_of(p, m->session, true);
	int rc;

	if (s == NULL)
		return -EINVAL;
	if (m->ref != i + 1 || m->kind >= VIA_IMG_PMEM_KIND_COUNT || m->hugepages > 1 ||
	    m->len == 0 || m->client_va + m->len < m->client_va)
		return FAIL(p, "a memory record");
	switch (m->kind) {
	case VIA_IMG_PMEM_ALLOC:
		rc = claim(p, VIA_IMG_T_PMEMS, m->id, i);
		if (rc == 0 && (m->asked == 0 || m->asked > m->len || m->offset != 0))
			rc = FAIL(p, "an allocation's sizes");
		return rc != 0 ? rc : fd_add(p, m->fd, true);
	case VIA_IMG_PMEM_SHARE:
		if (m->id != 0 || m->fd != -1 || s->share_fd < 0 || !aligned(m->client_va, 4096) ||
		    !aligned(m->len, 4096) || !inside(m->client_va, m->len, VIA_SHARE_FILE_SIZE))
			return FAIL(p, "a view of the share file");
		return 0;
	case VIA_IMG_PMEM_OBJECT:
		if (m->id != 0 || m->offset + m->len < m->offset)
			return FAIL(p, "a view of a shared object");
		return fd_add(p, m->fd, true);
	default:
		if (m->id != 0 || m->fd != -1 || m->shmid < 0)
			return FAIL(p, "a view of a SysV segment");
		return 0;
	}
}

/*
 * A session's table of regions: once per session, in the segment, its
 * windows distinct views of the session's own share file (what
 * via_mr_check() hands out for the client's entries).
 */
static int
check_tpt(struct parse *p, const struct via_img_tpt *t)
{
	int64_t si = lookup(p, VIA_IMG_T_SESSIONS, t->session);
	const struct via_img_session *s = session_of(p, t->session, true);
	uint32_t k, j;

	if (s == NULL)
		return -EINVAL;
	if (si <= p->tpt_session)
		return FAIL(p, "a session's table of regions twice, or out of order");
	p->tpt_session = si;
	if (s->share_fd < 0)
		return FAIL(p, "a table of regions of a session without a share file");
	if (!pow2(t->capacity) || t->capacity > VIA_IMG_TPT_MAX || !aligned(t->off, VIA_SHM_ALIGN) ||
	    !inside(t->off, (uint64_t)t->capacity * sizeof(struct via_tpt_entry), s->seg_len))
		return FAIL(p, "a table of regions' layout");
	if (t->nb_windows > VIA_TPT_WINDOWS || t->reserved != 0)
		return FAIL(p, "a table of regions' number of windows");
	for (k = 0; k < VIA_TPT_WINDOWS; k++) {
		const struct via_img_pmem *m;

		if (k >= t->nb_windows) {
			if (t->window_ref[k] != 0)
				return FAIL(p, "a table of regions' window past its count");
			continue;
		}
		if (t->window_ref[k] == 0 || t->window_ref[k] > p->img->nb_recs[VIA_IMG_PMEM])
			return FAIL(p, "a table of regions' window of no memory record");
		m = rec(p, VIA_IMG_PMEM, t->window_ref[k] - 1);
		if (m->kind != VIA_IMG_PMEM_SHARE || m->session != t->session)
			return FAIL(p, "a table of regions' window not a view of its share file");
		for (j = 0; j < k; j++) {
			if (t->window_ref[j] == t->window_ref[k])
				return FAIL(p, "a table of regions' window twice");
		}
	}
	return 0;
}

static int
check_mr(struct parse *p, const struct via_img_mr *r, uint32_t i)
{
	int rc = claim(p, VIA_IMG_T_MRS, r->handle, i);
	const struct via_img_pmem *m;

	if (rc != 0)
		return rc;
	if (session_of(p, r->session, true) == NULL)
		return -EINVAL;
	if (!ptag_of(p, r->ptag, r->session))
		return FAIL(p, "a region's tag is not its session's");
	if (r->len == 0 || r->addr + r->len < r->addr || !aligned(r->page_base, 4096) ||
	    !aligned(r->page_len, 4096) || r->page_base + r->page_len < r->page_base ||
	    r->page_base > r->addr || r->page_base + r->page_len < r->addr + r->len ||
	    r->rdma_write > 1 || r->rdma_read > 1 || r->writable > 1)
		return FAIL(p, "a region's range");
	if (r->pmem_ref == 0)
		return 0;
	if (r->pmem_ref > p->img->nb_recs[VIA_IMG_PMEM])
		return FAIL(p, "a region of no memory record");
	m = rec(p, VIA_IMG_PMEM, r->pmem_ref - 1);
	if (m->session != r->session)
		return FAIL(p, "a region in another session's memory");
	/* viad reaches the region at its mapping + (address - client_va):
	 * the whole region must lie in the mapping (via_mem_direct) */
	if (m->kind == VIA_IMG_PMEM_ALLOC
		    ? m->client_va == 0 || r->addr < m->client_va ||
			      !inside(r->addr - m->client_va, r->len, m->len)
		    : r->page_base < m->client_va ||
			      !inside(r->page_base - m->client_va, r->page_len, m->len))
		return FAIL(p, "a region outside its memory");
	return 0;
}

static int
check_cq(struct parse *p, const struct via_img_cq *c, uint32_t i)
{
	const struct via_img_session *s;
	int rc = claim(p, VIA_IMG_T_CQS, c->id, i);

	if (rc != 0)
		return rc;
	s = session_of(p, c->session, true);
	if (s == NULL)
		return -EINVAL;
	if (!pow2(c->capacity) || c->capacity > via_pow2_ceil(p->img->daemon->max_cq_entries) ||
	    !aligned(c->shm_off, VIA_SHM_ALIGN) || c->shm_len < sizeof(struct via_shm_cq) ||
	    !inside(c->shm_off, c->shm_len, s->seg_len) || !aligned(c->slots_off, VIA_SHM_ALIGN) ||
	    !inside(c->slots_off, via_shm_cq_slots_size(c->capacity), s->seg_len) ||
	    !ring_ok(&c->ring, c->capacity, true))
		return FAIL(p, "a CQ's layout or indices");
	return 0;
}

static bool
segs_ok(const struct via_img_seg *segs, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (segs[i].va + segs[i].len < segs[i].va)
			return false;
	}
	return true;
}

static bool
addr_ok(const struct via_ctl_addr *a)
{
	return a->disc_len <= sizeof(a->disc);
}

/* the VI's handshake states (enum via_cm_state): 0 idle .. 5 peer done */
#define IMG_CM_STATES 6
#define IMG_RX_STATES 3
#define IMG_SQ_WAITS 3

static int
check_vi(struct parse *p, const struct via_img_vi *v, uint32_t len, uint32_t i)
{
	const struct via_img_daemon *dm = p->img->daemon;
	const struct via_img_nic *nic;
	const struct via_img_session *s;
	uint32_t q, payload;
	int rc = claim(p, VIA_IMG_T_VIS, v->id, i);

	if (rc != 0)
		return rc;
	if (len != sizeof(*v) + ((uint64_t)v->rx_nb_segs + v->tx_nb_segs) * sizeof(struct via_img_seg))
		return FAIL(p, "a VI record's length");
	s = session_of(p, v->session, true);
	if (s == NULL)
		return -EINVAL;
	nic = p->img->recs[VIA_IMG_NIC][s->nic].p;
	payload = nic->mtu - 48u;
	if (v->state > VIP_STATE_ERROR || v->cm_state >= IMG_CM_STATES)
		return FAIL(p, "a VI's state");
	if (!pow2(v->attr.reliability) || v->attr.reliability > 4 || v->attr.max_transfer == 0 ||
	    v->attr.rdma_write > 1 || v->attr.rdma_read > 1 || !ptag_of(p, v->attr.ptag, v->session))
		return FAIL(p, "a VI's attributes");
	if (v->bell >= (uint64_t)s->bell_words * 64 || v->nb_idle_errors > 8)
		return FAIL(p, "a VI's doorbell or kept errors");
	for (q = 0; q < 2; q++) {
		int64_t c = v->cq[q] != 0 ? lookup(p, VIA_IMG_T_CQS, v->cq[q]) : 0;

		if (c < 0 || (v->cq[q] != 0 &&
			      ((const struct via_img_cq *)rec(p, VIA_IMG_CQ, (uint32_t)c))->session !=
				      v->session))
			return FAIL(p, "a VI's CQ is not its session's");
		if (!ring_ok(&v->wq[q], v->wq_capacity, false))
			return FAIL(p, "a VI's work queue indices");
	}
	if (v->entry_size != sizeof(struct via_wqe) && !via_wqe_line_size_ok(v->entry_size))
		return FAIL(p, "a VI's ring entries");
	if (!pow2(v->wq_capacity) || v->wq_capacity > via_pow2_ceil(dm->max_desc_per_queue) ||
	    !aligned(v->shm_off, VIA_SHM_ALIGN) ||
	    v->shm_len < via_shm_vi_size(v->wq_capacity, v->entry_size) ||
	    !inside(v->shm_off, v->shm_len, s->seg_len))
		return FAIL(p, "a VI's layout");
	/* line entries' completions go in ring order, behind what was taken
	 * (dp_desc.c); 16-byte entries' are the descriptors' (completed unused) */
	for (q = 0; q < 2 && v->entry_size != sizeof(struct via_wqe); q++) {
		if (v->wq[q].local - v->completed[q] > v->wq_capacity)
			return FAIL(p, "a VI's completions written");
	}
	/* a frame may not carry more than the port takes: mbufs are sized so */
	if (v->frame_payload > payload || !addr_ok(&v->local) || !addr_ok(&v->remote) ||
	    (v->reply_op != 0 && v->reply_op != VIA_CTL_CONN_REQUEST &&
	     v->reply_op != VIA_CTL_CONN_ACCEPT && v->reply_op != VIA_CTL_PEER_WAIT))
		return FAIL(p, "a VI's connection");
	/* expected_off is compared with frames' offsets, never used to index:
	 * an RDMA Write's (VIA_RX_WRITE) has no descriptor to bound it */
	if (v->rx_state >= IMG_RX_STATES || v->rx_nb_segs > dm->max_segments_per_desc ||
	    v->rx_delivered_any > 1)
		return FAIL(p, "a VI's receive state");
	if ((v->win_size != 0 && (!pow2(v->win_size) || v->win_size > VIA_IMG_MAX_WINDOW)) ||
	    v->snd_nxt - v->snd_una > v->win_size || v->recovering > 1 || v->ack_due > 1 ||
	    v->probing > 1 || v->rto_us == 0)
		return FAIL(p, "a VI's transport");
	if ((v->sq_size != 0 && (!pow2(v->sq_size) || v->sq_size > VIA_IMG_MAX_WINDOW)) ||
	    v->sq_tail - v->sq_head > v->sq_size || v->sq_reads > v->sq_tail - v->sq_head)
		return FAIL(p, "a VI's held completions");
	if (v->ans_tail - v->ans_head > 16)
		return FAIL(p, "a VI's RDMA Read answers");
	if (v->tx_active > 1 || v->tx_nb_segs > dm->max_segments_per_desc ||
	    v->tx_off > v->tx_total)
		return FAIL(p, "a VI's message being framed");
	if (!segs_ok((const struct via_img_seg *)(v + 1), v->rx_nb_segs + v->tx_nb_segs))
		return FAIL(p, "a VI's data segments");
	return 0;
}

static int
check_sq_pend(struct parse *p, const struct via_img_sq_pend *q, uint32_t len, uint32_t vi)
{
	if (q->vi != vi || q->wait >= IMG_SQ_WAITS || q->no_desc > 1 ||
	    q->nb_segs > p->img->daemon->max_segments_per_desc ||
	    len != sizeof(*q) + (uint64_t)q->nb_segs * sizeof(struct via_img_seg) ||
	    !segs_ok((const struct via_img_seg *)(q + 1), q->nb_segs))
		return FAIL(p, "a held completion");
	return 0;
}

static int
check_frame(struct parse *p, const struct via_img_frame *f, uint32_t len, uint32_t vi,
	    uint32_t seq, uint32_t mtu)
{
	if (f->vi != vi || f->seq != seq || f->len < 14 + 48 || f->len > mtu + 14u ||
	    len != sizeof(*f) + VIA_ALIGN_UP((uint64_t)f->len, 8))
		return FAIL(p, "an unacknowledged frame");
	return 0;
}

/* Every VI's held completions and frames: as many as it says, in order. */
static int
check_vi_followers(struct parse *p)
{
	struct via_image *img = p->img;
	uint32_t i, k, sq = 0, fr = 0;
	int rc;

	for (i = 0; i < img->nb_recs[VIA_IMG_VI]; i++) {
		const struct via_img_vi *v = rec(p, VIA_IMG_VI, i);
		const struct via_img_session *s = session_of(p, v->session, true);
		const struct via_img_nic *nic = img->recs[VIA_IMG_NIC][s->nic].p;
		uint32_t nsq = v->sq_tail - v->sq_head, nfr = v->snd_nxt - v->snd_una;

		if (img->vi_sq_first[i] != sq || img->vi_frame_first[i] != fr ||
		    nsq > img->nb_recs[VIA_IMG_SQ_PEND] - sq || nfr > img->nb_recs[VIA_IMG_FRAME] - fr)
			return FAIL(p, "a VI's held completions or frames are not all there");
		for (k = 0; k < nsq; k++, sq++) {
			rc = check_sq_pend(p, rec(p, VIA_IMG_SQ_PEND, sq),
					   img->recs[VIA_IMG_SQ_PEND][sq].len, v->id);
			if (rc != 0)
				return rc;
		}
		for (k = 0; k < nfr; k++, fr++) {
			rc = check_frame(p, rec(p, VIA_IMG_FRAME, fr), img->recs[VIA_IMG_FRAME][fr].len,
					 v->id, v->snd_una + k, nic->mtu);
			if (rc != 0)
				return rc;
		}
	}
	if (sq != img->nb_recs[VIA_IMG_SQ_PEND] || fr != img->nb_recs[VIA_IMG_FRAME])
		return FAIL(p, "held completions or frames of no VI");
	return 0;
}

/* the incoming requests' states (cm.c, enum via_cm_req_state): 0 .. 5 */
#define IMG_CM_REQ_STATES 6

static int
check_cm_req(struct parse *p, const struct via_img_cm_req *r, uint32_t i)
{
	int rc = claim(p, VIA_IMG_T_CM_REQS, r->id, i);

	if (rc != 0)
		return rc;
	if (r->state >= IMG_CM_REQ_STATES || r->nic >= p->img->daemon->nb_nics ||
	    (r->session != 0 && session_of(p, r->session, true) == NULL))
		return FAIL(p, "an incoming connection request");
	return 0;
}

static int
check_listener(struct parse *p, const struct via_img_cm_listener *l)
{
	if (session_of(p, l->session, true) == NULL)
		return -EINVAL;
	if (l->nic >= p->img->daemon->nb_nics || !addr_ok(&l->req.local) ||
	    !addr_ok(&l->req.filter))
		return FAIL(p, "a VipConnectWait in progress");
	return 0;
}

/* Each session's deferred count is its listeners and its VIs' deferred calls. */
static int
check_deferred(struct parse *p)
{
	struct via_image *img = p->img;
	uint32_t n = img->nb_recs[VIA_IMG_SESSION], i;
	uint32_t *count = calloc(n + 1, sizeof(*count));
	int rc = 0;

	if (count == NULL)
		return -ENOMEM;
	for (i = 0; i < img->nb_recs[VIA_IMG_CM_LISTENER]; i++)
		count[lookup(p, VIA_IMG_T_SESSIONS,
			     ((const struct via_img_cm_listener *)rec(p, VIA_IMG_CM_LISTENER, i))->session)]++;
	for (i = 0; i < img->nb_recs[VIA_IMG_VI]; i++) {
		const struct via_img_vi *v = rec(p, VIA_IMG_VI, i);

		count[lookup(p, VIA_IMG_T_SESSIONS, v->session)] += v->reply_op != 0;
	}
	for (i = 0; i < n; i++) {
		if (count[i] != ((const struct via_img_session *)rec(p, VIA_IMG_SESSION, i))->deferred)
			rc = FAIL(p, "a session's count of deferred requests");
	}
	free(count);
	return rc;
}

/* Every VI's doorbell bit is its own within its session. */
static int
check_bells(struct parse *p)
{
	uint32_t n = p->img->nb_recs[VIA_IMG_VI], i;
	uint64_t *keys = malloc((n + 1) * sizeof(*keys));
	int rc = 0;

	if (keys == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct via_img_vi *v = rec(p, VIA_IMG_VI, i);

		keys[i] = (uint64_t)v->session << 32 | v->bell;
	}
	qsort(keys, n, sizeof(*keys), cmp_u64);
	for (i = 1; i < n; i++) {
		if (keys[i] == keys[i - 1])
			rc = FAIL(p, "two VIs of one doorbell bit");
	}
	free(keys);
	return rc;
}

static int
check_reap(struct parse *p, const struct via_img_reap *r, uint32_t len)
{
	const int32_t *fds = (const int32_t *)(r + 1);
	uint32_t i;
	int rc;

	if (p->img->reap != NULL || len != sizeof(*r) + VIA_ALIGN_UP((uint64_t)r->count * 4, 8))
		return FAIL(p, "the reapers' record");
	for (i = 0; i < r->count; i++) {
		rc = fd_add(p, fds[i], true);
		if (rc != 0)
			return rc;
	}
	p->img->reap = r;
	p->img->reap_fds = fds;
	return 0;
}

/* ---- the whole image ---------------------------------------------------------- */

/* Each type's payload: exactly this long, or (variable) at least. */
static const struct {
	size_t size;
	bool variable;
} rec_shape[VIA_IMG_TYPE_COUNT] = {
	[VIA_IMG_DAEMON] = { sizeof(struct via_img_daemon), false },
	[VIA_IMG_NIC] = { sizeof(struct via_img_nic), false },
	[VIA_IMG_TABLE] = { sizeof(struct via_img_table), true },
	[VIA_IMG_USER] = { sizeof(struct via_img_user), false },
	[VIA_IMG_SESSION] = { sizeof(struct via_img_session), true },
	[VIA_IMG_PTAG] = { sizeof(struct via_img_ptag), false },
	[VIA_IMG_PMEM] = { sizeof(struct via_img_pmem), false },
	[VIA_IMG_TPT] = { sizeof(struct via_img_tpt), false },
	[VIA_IMG_MR] = { sizeof(struct via_img_mr), false },
	[VIA_IMG_CQ] = { sizeof(struct via_img_cq), false },
	[VIA_IMG_VI] = { sizeof(struct via_img_vi), true },
	[VIA_IMG_SQ_PEND] = { sizeof(struct via_img_sq_pend), true },
	[VIA_IMG_FRAME] = { sizeof(struct via_img_frame), true },
	[VIA_IMG_CM_REQ] = { sizeof(struct via_img_cm_req), false },
	[VIA_IMG_CM_LISTENER] = { sizeof(struct via_img_cm_listener), false },
	[VIA_IMG_REAP] = { sizeof(struct via_img_reap), true },
};

int
via_image_check_header(const void *buf, size_t len, const char **why)
{
	const struct via_image_hdr *h = buf;

	if (len < sizeof(*h) || h->magic != VIA_IMAGE_MAGIC || h->header_size != sizeof(*h)) {
		*why = "not an image";
		return -EINVAL;
	}
	if (len > VIA_IMAGE_MAX_BYTES) {
		*why = "an image too large";
		return -E2BIG;
	}
	if (h->total_len != len || image_crc(buf, len) != h->crc) {
		*why = "an image cut short or corrupted (its length or checksum)";
		return -EINVAL;
	}
	return 0;
}

/*
 * The records' headers: lengths, types, their order (the types in
 * ascending order, a VI's held completions and frames right after it).
 * @p fill: set img->recs (else count them only).
 */
static int
walk(struct parse *p, const uint8_t *buf, size_t len, bool fill)
{
	struct via_image *img = p->img;
	uint32_t seen[VIA_IMG_TYPE_COUNT] = { 0 };
	uint16_t prev = 0;
	size_t off = sizeof(struct via_image_hdr);
	uint32_t n = 0;

	while (off < len) {
		struct via_image_rec r;
		uint16_t t;

		if (len - off < sizeof(r))
			return FAIL(p, "a record header cut short");
		memcpy(&r, buf + off, sizeof(r));
		off += sizeof(r);
		t = r.type;
		if (r.reserved != 0 || r.len % 8 != 0 || r.len > len - off)
			return FAIL(p, "a record's length");
		if (t == 0 || t >= VIA_IMG_TYPE_COUNT || r.len < rec_shape[t].size ||
		    (!rec_shape[t].variable && r.len != rec_shape[t].size))
			return FAIL(p, "a record of no type, or of the wrong length");
		if (t < prev && !(t == VIA_IMG_VI && prev <= VIA_IMG_FRAME))
			return FAIL(p, "records out of order");
		if ((t == VIA_IMG_SQ_PEND || t == VIA_IMG_FRAME) && seen[VIA_IMG_VI] == 0)
			return FAIL(p, "a held completion or frame before any VI");
		if ((t == VIA_IMG_DAEMON) != (n == 0))
			return FAIL(p, "the daemon record is not first, or not alone");
		if (fill) {
			if (t == VIA_IMG_VI) {
				img->vi_sq_first[seen[t]] = seen[VIA_IMG_SQ_PEND];
				img->vi_frame_first[seen[t]] = seen[VIA_IMG_FRAME];
			}
			img->recs[t][seen[t]] = (struct via_img_ref){ .p = buf + off, .len = r.len };
		}
		seen[t]++;
		prev = t;
		off += r.len;
		n++;
	}
	if (n != img->hdr->nb_records)
		return FAIL(p, "the number of records");
	if (!fill)
		memcpy(img->nb_recs, seen, sizeof(seen));
	return 0;
}

/* Every record's own checks, then those across records. */
static int
check_all(struct parse *p)
{
	struct via_image *img = p->img;
	uint32_t i, t;
	int rc = 0;

#define EACH(type, call)                                                       \
	for (i = 0; rc == 0 && i < img->nb_recs[type]; i++)                   \
		rc = (call)
#define R(type) (img->recs[type][i].p)
#define L(type) (img->recs[type][i].len)
	if (img->nb_recs[VIA_IMG_DAEMON] != 1)
		return FAIL(p, "no daemon record");
	img->daemon = img->recs[VIA_IMG_DAEMON][0].p;
	rc = check_daemon(p, img->daemon);
	if (rc == 0 && img->nb_recs[VIA_IMG_NIC] != img->daemon->nb_nics)
		rc = FAIL(p, "the NIC records");
	EACH(VIA_IMG_NIC, check_nic(p, R(VIA_IMG_NIC), i));
	EACH(VIA_IMG_TABLE, check_table(p, R(VIA_IMG_TABLE), L(VIA_IMG_TABLE)));
	for (t = 0; rc == 0 && t < VIA_IMG_T_COUNT; t++) {
		if (img->tables[t] == NULL)
			rc = FAIL(p, "a table missing");
	}
	if (rc == 0)
		rc = check_users(p);
	EACH(VIA_IMG_SESSION, check_session(p, R(VIA_IMG_SESSION), L(VIA_IMG_SESSION), i));
	EACH(VIA_IMG_PTAG, check_ptag(p, R(VIA_IMG_PTAG), i));
	EACH(VIA_IMG_PMEM, check_pmem(p, R(VIA_IMG_PMEM), i));
	EACH(VIA_IMG_TPT, check_tpt(p, R(VIA_IMG_TPT)));
	EACH(VIA_IMG_MR, check_mr(p, R(VIA_IMG_MR), i));
	EACH(VIA_IMG_CQ, check_cq(p, R(VIA_IMG_CQ), i));
	EACH(VIA_IMG_VI, check_vi(p, R(VIA_IMG_VI), L(VIA_IMG_VI), i));
	if (rc == 0)
		rc = check_vi_followers(p);
	EACH(VIA_IMG_CM_REQ, check_cm_req(p, R(VIA_IMG_CM_REQ), i));
	EACH(VIA_IMG_CM_LISTENER, check_listener(p, R(VIA_IMG_CM_LISTENER)));
	EACH(VIA_IMG_REAP, check_reap(p, R(VIA_IMG_REAP), L(VIA_IMG_REAP)));
#undef L
#undef R
#undef EACH
	if (rc == 0)
		rc = check_deferred(p);
	if (rc == 0)
		rc = check_bells(p);
	if (rc == 0) {
		qsort(p->fds, p->nb_fds, sizeof(*p->fds), cmp_i32);
		for (i = 1; rc == 0 && i < p->nb_fds; i++) {
			if (p->fds[i] == p->fds[i - 1])
				rc = FAIL(p, "one fd named twice");
		}
	}
	return rc;
}

int
via_image_parse(const void *buf, size_t len, uint32_t version, struct via_image *img,
		const char **why)
{
	struct parse p = { .img = img, .why = why, .tpt_session = -1 };
	uint32_t t;
	int rc;

	memset(img, 0, sizeof(*img));
	*why = NULL;
	rc = via_image_check_header(buf, len, why);
	if (rc != 0)
		return rc;
	img->hdr = buf;
	if (img->hdr->version != version) {
		*why = "an image of another version";
		return -EPROTO;
	}
	if (img->hdr->abi_version != VIA_ABI_VERSION) {
		*why = "an image of clients of another ABI";
		return -EPROTO;
	}
	rc = walk(&p, buf, len, false);
	for (t = 0; rc == 0 && t < VIA_IMG_TYPE_COUNT; t++) {
		img->recs[t] = calloc(img->nb_recs[t] + 1, sizeof(*img->recs[t]));
		if (img->recs[t] == NULL)
			rc = -ENOMEM;
	}
	if (rc == 0) {
		img->vi_sq_first = calloc(img->nb_recs[VIA_IMG_VI] + 1, sizeof(uint32_t));
		img->vi_frame_first = calloc(img->nb_recs[VIA_IMG_VI] + 1, sizeof(uint32_t));
		if (img->vi_sq_first == NULL || img->vi_frame_first == NULL)
			rc = -ENOMEM;
	}
	if (rc == 0)
		rc = walk(&p, buf, len, true);
	if (rc == 0)
		rc = check_all(&p);
	for (t = 0; t < VIA_IMG_T_COUNT; t++)
		free(p.claim[t]);
	img->fds = p.fds;
	img->nb_fds = (uint32_t)p.nb_fds;
	free(p.uids);
	if (rc != 0) {
		if (rc == -ENOMEM)
			*why = "out of memory";
		via_image_free(img);
	}
	return rc;
}

void
via_image_free(struct via_image *img)
{
	uint32_t t;

	for (t = 0; t < VIA_IMG_TYPE_COUNT; t++) {
		free(img->recs[t]);
		img->recs[t] = NULL;
	}
	free(img->vi_sq_first);
	free(img->vi_frame_first);
	free(img->fds);
	img->vi_sq_first = img->vi_frame_first = NULL;
	img->fds = NULL;
	img->nb_fds = 0;
}
