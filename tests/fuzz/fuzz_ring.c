/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A hostile client's shared segment against viad's consumer code.
 *
 * The client owns every byte of its segment and of its registered memory:
 * ring indices, ring slots (struct via_wqe), doorbell and summary words,
 * the consumer indices of its CQs and error queue, and the descriptors
 * the slots point to. The input writes them; then viad's own code runs on
 * them, unchanged: daemon/dp/dp.c and dp_resp.c are included here whole, so
 * their static functions are the ones viad runs (the poller's doorbell scan
 * bells_take() and polled_visit(), and through them vi_visit(), vi_send(), via_req_start(),
 * via_desc_fetch(), via_dp_complete(); recv_take(); via_dp_flush()), over
 * abi/via_ring.h's consumer
 * and producer views. Nothing needs EAL: the VIs are never connected, so
 * no frame is built; what a connected VI does with frames is fuzz_wire's.
 *
 * Set up once: one session of viad on NIC via0, provider memory (64 KiB,
 * client address PMEM_VA) and ordinary memory (CLIENT_VA, copied through
 * /proc/self/mem) registered as four regions of two tags, a share file
 * (SHARE_VA in place) with the client's table of regions (issue 29) over
 * two windows, three entries in it, four VIs (Unreliable with a CQ,
 * Reliable Delivery with RDMA Read and a 4-entry CQ, one of the other tag,
 * and one whose rings hold line entries with 64 bytes of inline data:
 * struct via_wqe_line, issue 30), a snapshot of the segment, the table
 * included. Every input starts from that state again.
 *
 * Input: records of one op byte and its operands (read_op() below).
 *
 * Properties: no memory error and no UB; a ring never reports more than
 * its capacity ready, and once the peer published an impossible index it
 * stays corrupt; a descriptor via_desc_fetch() finds valid has at most
 * max_segments_per_desc segments, each non-empty one in a region of the
 * VI's tag with the access its direction needs, and their lengths add up
 * to the total it reports; the region it returns holds the whole
 * descriptor when viad read it (not one a line entry carries); a VI of
 * line entries never has more completions written than entries taken.
 * Whatever the client wrote in its table, a region via_mr_check() returns
 * for a range is one viad reaches directly only within its own mapping:
 * the range's bytes lie in the window's view.
 */
#include "fuzz_common.h"

/* viad's data path itself, statics included */
#include "dp/dp.c"
#include "dp/dp_resp.c"

#include <fcntl.h>

#define PMEM_VA    UINT64_C(0x510000000000)
#define PMEM_LEN   (64u << 10)
#define CLIENT_VA  UINT64_C(0x500000000000)
#define CLIENT_LEN (64u << 10)          /* + one read-only page after it */
#define SHARE_VA   UINT64_C(0x520000000000)   /* a window's start (1 GiB aligned) */
#define SHARE_LEN  (64u << 10)
#define NB_VIS     4
#define LINE_ENTRY (VIA_WQE_LINE_SIZE + 64)  /* vis[3]: line entries, 64 B inline */
#define NB_MRS     8                     /* viad's five, the table's three */

enum { OP_MEM, OP_SEG, OP_POST, OP_DESC, OP_POLL, OP_RECV, OP_STATE, OP_FLUSH, OP_FETCH,
       OP_EMPTY, OP_TABLE, OP_CHECK, OP_COUNT };

static struct viad vd;
static struct via_session *s;
static struct via_vi *vis[NB_VIS];
static struct via_cq *cqs[2];
static uint32_t handles[NB_MRS];
static uint8_t *pmem;               /* viad's mapping of the provider memory */
static uint8_t *share;              /* the client's in-place memory, at SHARE_VA */
static uint8_t *seg_snapshot;
static size_t seg_used;
static bool trace;                  /* FUZZ_TRACE=1: what each op did, on stderr */

static void
must(int rc)
{
	FUZZ_ASSERT(rc == 0);
}

static uint32_t
mr_add(uint64_t addr, uint64_t len, uint32_t ptag)
{
	struct via_ctl_mem_register_req q = {
		.addr = addr, .len = len, .attr = { .ptag = ptag },
		.placement = VIA_CTL_MEM_COPIED, .reason = VIA_CTL_COPIED_FILE,
	};
	uint32_t h;

	must(via_mr_register(&vd, s, &q, &h));
	return h;
}

/* Entry @p idx of the table: [@p addr, + @p len) in window @p window. */
static uint32_t
table_add(uint32_t idx, uint64_t addr, uint64_t len, uint32_t ptag, uint32_t window)
{
	struct via_tpt_entry *e = (struct via_tpt_entry *)&s->tpt->sh[idx];

	*e = (struct via_tpt_entry){ .addr = addr, .len = len, .ptag = ptag, .window = window,
				     .flags = VIA_TPT_RDMA_WRITE | VIA_TPT_RDMA_READ,
				     .handle = VIA_TPT_HANDLE | (7u << 6) | idx };
	return e->handle;
}

static struct via_vi *
vi_add(uint16_t reliability, bool rdma_read, uint32_t ptag, struct via_cq *send_cq,
       struct via_cq *recv_cq, uint32_t cookie, uint32_t entry_size)
{
	struct via_ctl_vi_create_req q = {
		.attr = { .reliability = reliability, .rdma_write = 1, .rdma_read = rdma_read,
			  .max_transfer = 16384, .ptag = ptag },
		.send_cq = send_cq != NULL ? send_cq->id : 0,
		.recv_cq = recv_cq != NULL ? recv_cq->id : 0,
		.cookie = cookie,
		.entry_size = entry_size,
	};
	struct via_vi *vi;

	must(via_vi_create(&vd, s, &q, &vi));
	return vi;
}

static void
seg_extent(uint64_t off, uint64_t len)
{
	if (off + len > seg_used)
		seg_used = off + len;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct via_nic *nic = &vd.nics[0];
	struct via_ctl_mem_table_rep tab;
	uint32_t pt1, pt2, i;
	struct via_pmem *p;
	void *va;
	int fd;

	(void)argc;
	(void)argv;
	trace = getenv("FUZZ_TRACE") != NULL;
	va = mmap((void *)CLIENT_VA, CLIENT_LEN + 4096, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	FUZZ_ASSERT(va == (void *)CLIENT_VA);
	must(mprotect((uint8_t *)va + CLIENT_LEN, 4096, PROT_READ));

	via_conf_defaults(&vd.conf);
	vd.conf.max_vi = 8;
	vd.conf.max_cq = 4;
	vd.conf.max_regions = 8;
	vd.conf.session_shm_bytes = 1u << 20;
	vd.conf.table_regions = 64;
	via_log_set_level("error");
	must(via_idtab_init(&vd.sessions, 2));
	must(via_idtab_init(&vd.ptags, 4));
	must(via_idtab_init(&vd.mrs, vd.conf.max_regions));
	must(via_idtab_init(&vd.cqs, vd.conf.max_cq));
	must(via_idtab_init(&vd.vis, vd.conf.max_vi));
	must(via_idtab_init(&vd.pmems, 2));
	TAILQ_INIT(&vd.session_list);
	vd.nb_shards = 1;
	TAILQ_INIT(&vd.shards[0].rel_vis);
	/* the list a never connected VI's sends are fetched into to be flushed
	 * (dp_mem.c makes it with the shard's pools, which need an EAL) */
	vd.shards[0].flush_segs = calloc(vd.conf.max_segments_per_desc,
					 sizeof(*vd.shards[0].flush_segs));
	if (vd.shards[0].flush_segs == NULL)
		abort();
	/* one shard: every summary bit is its own (main.c bell_masks_init) */
	for (i = 0; i < VIA_BELL_SUMMARY_MAX; i++)
		vd.shards[0].bell_masks[i] = ~UINT64_C(0);
	strcpy(nic->info.name, "via0");
	nic->d = &vd;
	nic->loopback = true;
	nic->info.mtu = 9000;
	nic->info.max_transfer_size = 65536;
	nic->info.max_desc_per_queue = 16;
	nic->info.max_segments_per_desc = 252;
	nic->info.reliability_support = VIP_SERVICE_UNRELIABLE | VIP_SERVICE_RELIABLE_DELIVERY |
					VIP_SERVICE_RELIABLE_RECEPTION;
	nic->info.rdma_read_support = 1;
	vd.nb_nics = 1;

	must(via_session_new(&vd, -1, &s));
	must(via_session_open(&vd, s, "via0"));
	s->pid = getpid();
	s->mem_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	FUZZ_ASSERT(s->mem_fd >= 0);
	must(via_ptag_create(&vd, s, &pt1));
	must(via_ptag_create(&vd, s, &pt2));
	must(via_pmem_alloc(&vd, s, PMEM_LEN, &p));
	must(via_pmem_mapped(&vd, s, p->id, PMEM_VA));
	pmem = p->shm.va;
	handles[0] = mr_add(PMEM_VA, PMEM_LEN, pt1);
	handles[1] = mr_add(PMEM_VA + PMEM_LEN / 2, PMEM_LEN / 4, pt2);
	handles[2] = mr_add(CLIENT_VA, CLIENT_LEN, pt1);
	handles[3] = mr_add(CLIENT_VA + CLIENT_LEN, 4096, pt1);      /* read-only */
	handles[4] = mr_add(PMEM_VA + 4096, 100, pt1);               /* not page-sized */
	/* the share file and the client's table over two windows of it */
	fd = memfd_create("fuzz-share", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	FUZZ_ASSERT(fd >= 0 && ftruncate(fd, (off_t)VIA_SHARE_FILE_SIZE) == 0 &&
		    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0);
	s->share_fd = fd;
	share = mmap((void *)SHARE_VA, SHARE_LEN, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_FIXED_NOREPLACE, fd, (off_t)SHARE_VA);
	FUZZ_ASSERT(share == (void *)SHARE_VA);
	must(via_mr_table_window(&vd, s, SHARE_VA, &tab));
	must(via_mr_table_window(&vd, s, SHARE_VA + (UINT64_C(1) << 30), &tab));
	FUZZ_ASSERT(tab.window == 1 && s->tpt->nb_windows == 2);
	handles[5] = table_add(0, SHARE_VA, SHARE_LEN / 2, pt1, 0);
	handles[6] = table_add(1, SHARE_VA + SHARE_LEN / 2, 4000, pt2, 0);
	handles[7] = table_add(63, SHARE_VA + (UINT64_C(1) << 30) - 4096, 4096, pt1, 0);
	for (i = 0; i < 2; i++)
		must(via_cq_create(&vd, s, i == 0 ? 64 : 4, &cqs[i]));
	vis[0] = vi_add(VIP_SERVICE_UNRELIABLE, false, pt1, cqs[0], cqs[0], 100, 0);
	vis[1] = vi_add(VIP_SERVICE_RELIABLE_DELIVERY, true, pt1, NULL, cqs[1], 101, 0);
	vis[2] = vi_add(VIP_SERVICE_UNRELIABLE, false, pt2, NULL, NULL, 102, 0);
	vis[3] = vi_add(VIP_SERVICE_RELIABLE_DELIVERY, true, pt1, cqs[0], NULL, 103, LINE_ENTRY);

	/* what the client may scribble on: every object of its segment */
	seg_extent(0, sizeof(struct via_shm_header));
	seg_extent((uint64_t)((uint8_t *)s->errq_sh - s->seg.va), via_shm_errq_size(s->errq.mask + 1));
	seg_extent((uint64_t)((uint8_t *)s->bells - s->seg.va),
		   ((uint64_t)s->bell_words + via_bell_summary_words(s->bell_words)) * 8);
	for (i = 0; i < 2; i++)
		seg_extent(cqs[i]->shm_off, cqs[i]->shm_len);
	for (i = 0; i < NB_VIS; i++)
		seg_extent(vis[i]->shm_off, vis[i]->shm_len);
	seg_extent(s->tpt->off, (uint64_t)s->tpt->capacity * sizeof(struct via_tpt_entry));
	seg_snapshot = malloc(seg_used);
	FUZZ_ASSERT(seg_snapshot != NULL);
	memcpy(seg_snapshot, s->seg.va, seg_used);
	return 0;
}

/* Back to the state after set-up: the segment, the memory, viad's views. */
static void
reset(void)
{
	unsigned i;

	memcpy(s->seg.va, seg_snapshot, seg_used);
	memset(pmem, 0, PMEM_LEN);
	memset((void *)CLIENT_VA, 0, CLIENT_LEN);
	memset(share, 0, SHARE_LEN);
	via_ring_attach(&s->errq, &s->errq_sh->ring, s->errq_sh + 1, s->errq.mask + 1,
			sizeof(struct via_async_error), true);
	s->errq_overflowed = false;
	for (i = 0; i < 2; i++)
		via_ring_attach(&cqs[i]->ring, &cqs[i]->sh->ring, cqs[i]->ring.slots,
				cqs[i]->capacity, sizeof(struct via_cqe), true);
	for (i = 0; i < NB_VIS; i++) {
		struct via_vi *vi = vis[i];

		via_dp_vi_reset(vi);
		vi->state = VIP_STATE_IDLE;
		vi->tx_deficit = 0;
		FUZZ_ASSERT(via_vi_attach_rings(vi) == 0);
	}
}

/* A client address: in provider memory, in its ordinary memory, in place
 * (mode 0x40), or any. */
static uint64_t
client_addr(struct fuzz_in *in, uint8_t mode)
{
	if (mode & 0x40)
		return SHARE_VA + fuzz_u16(in) % SHARE_LEN;
	switch (mode & 3) {
	case 0:
		return PMEM_VA + fuzz_u16(in);
	case 1:
		return CLIENT_VA + fuzz_u16(in) % (CLIENT_LEN + 4096);
	case 2:
		return PMEM_VA + PMEM_LEN - fuzz_u8(in);     /* near an end */
	default:
		return fuzz_u64(in);
	}
}

/* A handle: viad's, the table's, any, or any of the table's (mode 0x20). */
static uint32_t
client_handle(struct fuzz_in *in, uint8_t mode)
{
	if (mode & 0x20)
		return VIA_TPT_HANDLE | fuzz_u32(in);
	return (mode & 4) ? fuzz_u32(in) : handles[fuzz_u8(in) % NB_MRS];
}

static void
read_wqe(struct fuzz_in *in, struct via_wqe *w)
{
	uint8_t mode = fuzz_u8(in);

	w->desc_va = client_addr(in, mode);
	w->desc_handle = client_handle(in, mode);
	w->reserved = (mode & 8) ? fuzz_u32(in) : 0;
}

/* A line entry as the client writes it (the library's vipl_dpdk_dp_post_line,
 * or anything): its descriptor's fields, flags and two segments. */
static void
read_line(struct fuzz_in *in, struct via_wqe_line *e)
{
	uint8_t mode, i;
	struct via_wqe w;

	read_wqe(in, &w);
	e->desc_va = w.desc_va;
	e->desc_handle = w.desc_handle;
	mode = fuzz_u8(in);
	e->control = fuzz_u16(in);
	e->seg_count = (mode & 1) ? fuzz_u16(in) : fuzz_u8(in) % (VIA_WQE_LINE_SEGS + 1);
	e->status = (mode & 2) ? fuzz_u32(in)
			       : ((mode & 4) ? VIA_WQE_DESC : 0) | ((mode & 8) ? VIA_WQE_INLINE : 0);
	e->length = (mode & 0x10) ? fuzz_u32(in) : fuzz_u8(in);
	e->imm = fuzz_u32(in);
	for (i = 0; i < VIA_WQE_LINE_SEGS; i++) {
		uint8_t m = fuzz_u8(in);

		e->seg[i].va = client_addr(in, m);
		e->seg[i].handle = client_handle(in, m);
		e->seg[i].len = (m & 8) ? fuzz_u32(in) : fuzz_u8(in);
	}
}

/* Write @p len bytes where the client's address @p va is (if it is its). */
static void
client_write(uint64_t va, const void *src, size_t len)
{
	if (va >= PMEM_VA && va - PMEM_VA < PMEM_LEN) {
		size_t n = RTE_MIN(len, (size_t)(PMEM_LEN - (va - PMEM_VA)));

		memcpy(pmem + (va - PMEM_VA), src, n);
	} else if (va >= CLIENT_VA && va - CLIENT_VA < CLIENT_LEN) {
		size_t n = RTE_MIN(len, (size_t)(CLIENT_LEN - (va - CLIENT_VA)));

		memcpy((void *)(uintptr_t)va, src, n);
	} else if (va >= SHARE_VA && va - SHARE_VA < SHARE_LEN) {
		size_t n = RTE_MIN(len, (size_t)(SHARE_LEN - (va - SHARE_VA)));

		memcpy(share + (va - SHARE_VA), src, n);
	}
}

/* The client writes an entry of its table: anything, or near a real one. */
static void
write_entry(struct fuzz_in *in)
{
	uint8_t mode = fuzz_u8(in);
	uint32_t idx = fuzz_u8(in) % s->tpt->capacity;
	struct via_tpt_entry e = {
		.addr = (mode & 1) ? fuzz_u64(in) : client_addr(in, fuzz_u8(in)),
		.len = (mode & 2) ? fuzz_u64(in) : fuzz_u16(in),
		.ptag = (mode & 4) ? fuzz_u32(in) : 1 + fuzz_u8(in) % 3,
		.window = (mode & 8) ? fuzz_u32(in) : fuzz_u8(in) % 3,
		.flags = fuzz_u8(in),
		.handle = (mode & 0x10) ? fuzz_u32(in) : VIA_TPT_HANDLE | (fuzz_u16(in) << 6) | idx,
	};

	memcpy((void *)&s->tpt->sh[idx], &e, sizeof(e));
}

/* What viad may touch directly of a region it found for [va, va + len):
 * only its own mapping. */
static void
check_direct(const struct via_mr *mr, uint64_t va, uint64_t len)
{
	const uint8_t *p = via_mem_direct(mr, va);

	if (p == NULL)
		return;
	FUZZ_ASSERT(p >= mr->pmem->shm.va && (uint64_t)(p - mr->pmem->shm.va) <= mr->pmem->shm.len &&
		    len <= mr->pmem->shm.len - (uint64_t)(p - mr->pmem->shm.va));
}

/* The library's post (vipl_dpdk_inline.h): slot, producer index, doorbell;
 * on a VI of line entries a line entry (from the input) with its inline
 * bytes and a sequence word, the post's own or any. */
static void
post(struct fuzz_in *in, struct via_vi *vi, enum via_wq_kind q)
{
	struct via_shm_wq *wq = &vi->sh->wq[q];
	uint32_t prod = __atomic_load_n(&wq->ring.prod, __ATOMIC_RELAXED);
	uint8_t *slot = (uint8_t *)vi->sh + via_shm_vi_slots_off(vi->wq_capacity, vi->entry_size, q) +
			(size_t)(prod & (vi->wq_capacity - 1)) * vi->entry_size;
	uint32_t word = vi->bell / 64;

	if (via_vi_lines(vi)) {
		struct via_wqe_line e;
		uint8_t mode = fuzz_u8(in);

		read_line(in, &e);
		e.seq = (mode & 1) ? fuzz_u32(in) : prod + 1;
		memcpy(slot, &e, sizeof(e));
		fuzz_take(in, slot + sizeof(e), vi->entry_size - sizeof(e));
	} else {
		struct via_wqe w;

		read_wqe(in, &w);
		memcpy(slot, &w, sizeof(w));
	}
	__atomic_store_n(&wq->ring.prod, prod + 1, __ATOMIC_RELEASE);
	via_bell_ring(&s->bells[word], UINT64_C(1) << (vi->bell % 64), &s->bell_summary[word / 64],
		      UINT64_C(1) << (word % 64));
}

/* A descriptor as the client writes it: control segment and segments. */
static void
write_desc(struct fuzz_in *in)
{
	uint8_t mode = fuzz_u8(in), nseg, i;
	uint64_t at = client_addr(in, mode);
	struct {
		VIP_CONTROL_SEGMENT cs;
		VIP_DATA_SEGMENT ds[8];
	} desc;

	memset(&desc, 0, sizeof(desc));
	desc.cs.SegCount = fuzz_u16(in);
	desc.cs.Control = fuzz_u16(in);
	desc.cs.Length = fuzz_u32(in);
	desc.cs.ImmediateData = fuzz_u32(in);
	if (mode & 0x10)
		desc.cs.Reserved = fuzz_u32(in);
	nseg = fuzz_u8(in) % 9;
	for (i = 0; i < nseg; i++) {
		uint8_t m = fuzz_u8(in);

		desc.ds[i].Data.AddressBits = client_addr(in, m);
		desc.ds[i].Handle = client_handle(in, m);
		desc.ds[i].Length = (m & 8) ? fuzz_u32(in) : fuzz_u16(in);
	}
	client_write(at, &desc, sizeof(desc.cs) + (size_t)nseg * sizeof(desc.ds[0]));
}

/* via_desc_fetch() on a slot, and what its answer promises. */
static void
fetch(struct via_vi *vi, enum via_wq_kind q, const struct via_wqe *w)
{
	const uint32_t max = s->nic->info.max_segments_per_desc;
	struct via_dp_seg *segs = calloc(max, sizeof(*segs));
	struct via_dp_msg msg = { .wqe = *w, .segs = segs, .nb_segs = 0xffff };
	VIP_CONTROL_SEGMENT cs;
	const struct via_mr *mr;
	uint64_t sum = 0;
	uint16_t nb, i;
	int err;

	FUZZ_ASSERT(segs != NULL);
	mr = via_desc_fetch(&vd, vi, q, &msg, &cs);
	nb = msg.nb_segs;
	if (trace)
		fprintf(stderr, "fetch VI %u q %d: region %s, error %d, %u segments, %u bytes\n",
			vi->id, q, mr != NULL ? "ok" : "none", msg.err, nb, msg.total);
	if (mr == NULL) {
		FUZZ_ASSERT(nb == 0);
		free(segs);
		return;
	}
	/* the region is the descriptor's: of the VI's tag, holding it */
	FUZZ_ASSERT(via_mr_check(&vd, s, w->desc_handle, w->desc_va, sizeof(VIP_CONTROL_SEGMENT),
				 vi->attr.ptag, VIA_MR_LOCAL_READ | VIA_MR_LOCAL_WRITE, &err) == mr);
	check_direct(mr, w->desc_va, sizeof(VIP_CONTROL_SEGMENT));
	if (msg.err == 0) {
		const bool scatter = q == VIA_WQ_RECV ||
				     (cs.Control & VIP_CONTROL_OP_MASK) == VIP_CONTROL_OP_RDMAREAD;
		const unsigned access = scatter ? VIA_MR_LOCAL_WRITE : VIA_MR_LOCAL_READ;

		FUZZ_ASSERT(nb <= max && nb <= cs.SegCount);
		/* one viad read: a line entry carrying it is not */
		FUZZ_ASSERT((via_vi_lines(vi) && (vi->taken[q].status & VIA_WQE_DESC)) ||
			    via_mr_check(&vd, s, w->desc_handle, w->desc_va,
					 sizeof(VIP_CONTROL_SEGMENT) +
					 (uint64_t)cs.SegCount * sizeof(VIP_DATA_SEGMENT),
					 vi->attr.ptag, VIA_MR_LOCAL_READ, &err) == mr);
		for (i = 0; i < nb; i++) {
			sum += segs[i].len;
			if (segs[i].len == 0)
				continue;
			FUZZ_ASSERT(segs[i].mr != NULL);
			FUZZ_ASSERT(via_mr_check(&vd, s, segs[i].handle, segs[i].va, segs[i].len,
						 vi->attr.ptag, access, &err) == segs[i].mr);
			check_direct(segs[i].mr, segs[i].va, segs[i].len);
		}
		FUZZ_ASSERT(sum == msg.total);
	}
	free(segs);
}

/* Ring views after any op: never more ready than capacity; corrupt sticks. */
static void
check_rings(const bool corrupt_before[NB_VIS][VIA_WQ_COUNT])
{
	unsigned i, q;

	for (i = 0; i < NB_VIS; i++) {
		for (q = 0; q < VIA_WQ_COUNT; q++) {
			struct via_ring *r = &vis[i]->wq[q];
			uint32_t ready = via_ring_avail(r);

			FUZZ_ASSERT(ready <= vis[i]->wq_capacity);
			FUZZ_ASSERT(!corrupt_before[i][q] || (r->corrupt && ready == 0));
			/* completions in ring order, none for an entry not taken */
			FUZZ_ASSERT(!via_vi_lines(vis[i]) ||
				    r->local - vis[i]->completed[q] <= vis[i]->wq_capacity);
		}
	}
	for (i = 0; i < 2; i++)
		FUZZ_ASSERT(via_ring_free_count(&cqs[i]->ring) <= cqs[i]->capacity);
	FUZZ_ASSERT(via_ring_free_count(&s->errq) <= s->errq.mask + 1);
}

static void
run_op(struct fuzz_in *in, uint8_t op)
{
	struct via_vi *vi = vis[fuzz_u8(in) % NB_VIS];
	enum via_wq_kind q = (enum via_wq_kind)(fuzz_u8(in) & 1);
	struct via_wqe w;
	uint8_t buf[256], len;
	uint32_t i;

	switch (op % OP_COUNT) {
	case OP_MEM:                    /* the client writes its memory */
		len = fuzz_u8(in);
		fuzz_take(in, buf, len);
		client_write(client_addr(in, fuzz_u8(in)), buf, len);
		break;
	case OP_SEG:                    /* ... or any byte of its segment */
		i = fuzz_u32(in) % (uint32_t)seg_used;
		len = fuzz_u8(in);
		fuzz_take(in, buf, len);
		memcpy(s->seg.va + i, buf, RTE_MIN((size_t)len, seg_used - i));
		break;
	case OP_POST:
		post(in, vi, q);
		break;
	case OP_DESC:
		write_desc(in);
		break;
	case OP_POLL:                   /* the poll lcore's doorbell scan (via_dp_poll) */
		vd.shards[0].iteration++;
		for (i = 0; i < via_bell_summary_words(s->bell_words_live); i++)
			bells_take(&vd, &vd.shards[0], s, i, vd.shards[0].iteration);
		polled_visit(&vd, &vd.shards[0], vd.shards[0].iteration);
		break;
	case OP_RECV:                   /* a message arrived: take a receive descriptor */
		/* frames reach only a VI of a connection, which has its scatter
		 * list (dp_mem.c, made when it connects; its sizing needs the
		 * mbuf pool of an EAL, so made here) */
		if (vi->rx.segs == NULL &&
		    (vi->rx.segs = calloc(vd.conf.max_segments_per_desc, sizeof(*vi->rx.segs))) == NULL)
			abort();
		if (vi->rx.state == VIA_RX_IDLE) {
			int taken = recv_take(&vd, vi);

			FUZZ_ASSERT(taken <= 1);
			if (taken > 0)
				vi->rx.state = VIA_RX_MESSAGE;   /* as rx_begin() */
			if (trace)
				fprintf(stderr, "recv_take VI %u: %d (capacity %u)\n", vi->id, taken,
					vi->rx.msg.total);
		}
		break;
	case OP_STATE:                  /* a connection broke: Error (VIA §5.4) */
		vi->state = (fuzz_u8(in) & 1) ? VIP_STATE_ERROR : VIP_STATE_IDLE;
		break;
	case OP_FLUSH:                  /* VipDisconnect, or Error: everything completes */
		via_dp_flush(&vd, vi);
		FUZZ_ASSERT(vi->rx.state == VIA_RX_IDLE && !vi->tx.active);
		break;
	case OP_FETCH:                  /* a descriptor, as the entry taken last says */
		read_wqe(in, &w);
		if (via_vi_lines(vi))
			read_line(in, &vi->taken[q]);
		fetch(vi, q, &w);
		break;
	case OP_EMPTY:                  /* VI_QUERY, VI_DESTROY */
		(void)via_vi_wq_empty(vi, q);
		break;
	case OP_TABLE:                  /* the client's table of regions */
		write_entry(in);
		break;
	case OP_CHECK: {                /* a segment or an RDMA frame's target */
		uint8_t mode = fuzz_u8(in);
		uint64_t va = client_addr(in, mode), n = (mode & 0x80) ? fuzz_u64(in) : fuzz_u16(in);
		const struct via_mr *mr;
		int err;

		mr = via_mr_check(&vd, s, client_handle(in, mode), va, n, 1 + fuzz_u8(in) % 3,
				  fuzz_u8(in) & 0xf, &err);
		if (mr != NULL)
			check_direct(mr, va, n);
		break;
	}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	bool corrupt[NB_VIS][VIA_WQ_COUNT];
	unsigned steps = 0, i, q;

	reset();
	while (in.left > 0 && steps++ < 256) {
		for (i = 0; i < NB_VIS; i++)
			for (q = 0; q < VIA_WQ_COUNT; q++)
				corrupt[i][q] = vis[i]->wq[q].corrupt;
		run_op(&in, fuzz_u8(&in));
		check_rings(corrupt);
	}
	if (trace)
		fprintf(stderr, "CQ entries %u %u, async errors %u\n", cqs[0]->ring.local,
			cqs[1]->ring.local, s->errq.local);
	return 0;
}
