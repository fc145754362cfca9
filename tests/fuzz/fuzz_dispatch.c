/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A hostile client's request stream against viad's objects: the handlers
 * of daemon/ctl.c for every request that touches them (OPEN, ptags, memory
 * registration, provider memory, CQs with resize, VIs), calling the same
 * functions of daemon/ (viad_core) with request bodies straight from the
 * input, then the session's end, which must give everything back.
 *
 * Input: one setup byte (0x1: the client gave its /proc/self/mem, 0x2: its
 * share file, as CLIENT_FD would), then records: one op byte, then the op's
 * request body (via_ctl_body_size() bytes). Op bytes above the control ops
 * are the client's other moves: 0xf0 completions produced on a CQ (as the
 * data path does), 0xf1 a write of the client's own to a CQ's consumer
 * index, 0xf2 an fd passed with the next request, of the kind the next
 * byte picks (memfds sealed or not, read-only, hugetlb, an eventfd, pipe
 * ends, a socket, a directory, /dev/null, /proc/self/mem, an O_PATH fd),
 * taken as daemon/ctl.c takes it (via_fd_classify(): refused kinds, a
 * second fd, one with a request that takes none fail the request). Each
 * request goes through via_ctl_check() with a header built for it, like
 * every request viad reads. CLIENT_FD keeps the fd as ctl.c's handler does,
 * after the same checks (clientfd.c); MEM_REGISTER maps a shared object
 * from the fd or from a SysV id in the body, as an unprivileged user.
 *
 * The client's memory: CLIENT_VA, 1 MiB mapped at a fixed address, so that
 * inputs can name addresses that are there (and others that are not).
 *
 * Properties: no memory error, no leak (libFuzzer's leak check per input),
 * no fd left open once the session ended; every object's bytes lie inside
 * the session segment and no two overlap; registered bytes stay within the
 * limits; a shared object is writable only through an fd open for writing;
 * a share file viad keeps is sealed shmem of its size; a resized CQ keeps
 * its queued entries; when the session ends every table is empty and every
 * counter of what is held is back to zero.
 */
#include "fuzz_common.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <vipl.h>

#include "viad.h"

#define CLIENT_VA   UINT64_C(0x500000000000)
#define CLIENT_LEN  (UINT64_C(1) << 20)
#define OP_PRODUCE  0xf0
#define OP_SCRIBBLE 0xf1
#define OP_FD       0xf2
/* an unprivileged client: SysV ids it names are checked as the kernel would */
#define CLIENT_UID  65534u

static struct viad d;
static long page_size;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct via_nic *nic = &d.nics[0];
	void *va;

	(void)argc;
	(void)argv;
	page_size = sysconf(_SC_PAGESIZE);
	va = mmap((void *)CLIENT_VA, CLIENT_LEN, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	FUZZ_ASSERT(va == (void *)CLIENT_VA);
	/* a read-only page in it: registering it is refused for writing */
	FUZZ_ASSERT(mprotect((uint8_t *)va + CLIENT_LEN - 4096, 4096, PROT_READ) == 0);

	via_conf_defaults(&d.conf);
	d.conf.max_regions = 16;
	d.conf.max_register_bytes = 4ull << 20;
	d.conf.max_in_place_bytes = 2ull << 20;
	d.conf.max_vi = 8;
	d.conf.max_cq = 8;
	d.conf.max_ptags = 8;
	d.conf.max_cq_entries = 1024;
	d.conf.session_shm_bytes = 1ull << 20;
	d.conf.max_alloc_bytes = 4ull << 20;
	via_log_set_level("error");
	TAILQ_INIT(&d.session_list);
	d.nb_shards = 1;
	TAILQ_INIT(&d.shards[0].rel_vis);
	strcpy(nic->info.name, "via0");
	nic->loopback = true;
	nic->d = &d;
	memcpy(nic->info.mac, "\x02\0\0\0\0\0", 6);
	nic->info.mtu = 9000;
	nic->info.max_transfer_size = 65536;
	nic->info.max_desc_per_queue = 64;
	nic->info.max_segments_per_desc = 252;
	nic->info.max_cq = d.conf.max_cq;
	nic->info.max_cq_entries = d.conf.max_cq_entries;
	nic->info.max_vi = d.conf.max_vi;
	nic->info.max_ptags = d.conf.max_ptags;
	nic->info.max_discriminator_len = 64;
	nic->info.reliability_support = VIP_SERVICE_UNRELIABLE | VIP_SERVICE_RELIABLE_DELIVERY |
					VIP_SERVICE_RELIABLE_RECEPTION;
	nic->info.rdma_read_support = 1;
	d.nb_nics = 1;
	return 0;
}

/*
 * Fresh tables for every input: ids carry a generation, and the same input
 * must name the same objects every time it runs.
 */
static void
tables_init(void)
{
	FUZZ_ASSERT(via_idtab_init(&d.sessions, 4) == 0);
	FUZZ_ASSERT(via_idtab_init(&d.ptags, d.conf.max_ptags) == 0);
	FUZZ_ASSERT(via_idtab_init(&d.mrs, d.conf.max_regions) == 0);
	FUZZ_ASSERT(via_idtab_init(&d.cqs, d.conf.max_cq) == 0);
	FUZZ_ASSERT(via_idtab_init(&d.vis, d.conf.max_vi) == 0);
	FUZZ_ASSERT(via_idtab_init(&d.pmems, 16) == 0);
}

static void
tables_fini(void)
{
	via_idtab_fini(&d.sessions);
	via_idtab_fini(&d.ptags);
	via_idtab_fini(&d.mrs);
	via_idtab_fini(&d.cqs);
	via_idtab_fini(&d.vis);
	via_idtab_fini(&d.pmems);
}

/* ---- properties ------------------------------------------------------------ */

struct extent {
	uint64_t off, len;
};

static void
add_extent(struct extent *e, unsigned *n, uint64_t off, uint64_t len)
{
	e[(*n)++] = (struct extent){ off, len };
}

/* Every object in the segment, inside it and apart from the others. */
static void
check_segment(const struct via_session *s)
{
	const struct via_shm_header *h = (const struct via_shm_header *)s->seg.va;
	struct extent e[2 + 2 * 8 + 8];
	const struct via_cq *cq;
	const struct via_vi *vi;
	unsigned n = 0, i, j;

	if (!s->opened)
		return;
	/* from viad's own pointers and sizes, never from the segment */
	add_extent(e, &n, (uint64_t)((const uint8_t *)s->errq_sh - s->seg.va),
		   via_shm_errq_size(s->errq.mask + 1));
	add_extent(e, &n, (uint64_t)((const uint8_t *)s->bells - s->seg.va),
		   ((uint64_t)s->bell_words + via_bell_summary_words(s->bell_words)) * 8);
	TAILQ_FOREACH(cq, &s->cqs, link) {
		add_extent(e, &n, cq->shm_off, cq->shm_len);
		if (cq->shm_len == sizeof(struct via_shm_cq))
			add_extent(e, &n, (uint64_t)(cq->ring.slots - s->seg.va),
				   via_shm_cq_slots_size(cq->capacity));
		else
			FUZZ_ASSERT(cq->ring.slots == (const uint8_t *)(cq->sh + 1));
		FUZZ_ASSERT(cq->ring.mask + 1 == cq->capacity);
	}
	TAILQ_FOREACH(vi, &s->vis, link) {
		add_extent(e, &n, vi->shm_off, vi->shm_len);
		FUZZ_ASSERT((const uint8_t *)vi->sh == s->seg.va + vi->shm_off);
	}
	FUZZ_ASSERT(h->cookie == VIA_SHM_COOKIE);
	for (i = 0; i < n; i++) {
		FUZZ_ASSERT(e[i].off >= sizeof(struct via_shm_header));
		FUZZ_ASSERT(e[i].len > 0 && e[i].off + e[i].len <= s->seg.len);
		for (j = 0; j < i; j++)
			FUZZ_ASSERT(e[i].off + e[i].len <= e[j].off || e[j].off + e[j].len <= e[i].off);
	}
}

static void
check_limits(const struct via_session *s)
{
	FUZZ_ASSERT(d.counters.bytes_registered <= d.conf.max_register_bytes);
	FUZZ_ASSERT(s->in_place_bytes <= d.conf.max_in_place_bytes);
}

/* A region viad maps from a shared object: only as the client may write it. */
static void
check_region(const struct via_session *s, const struct via_ctl_mem_register_req *q,
	     const struct via_mr *mr)
{
	FUZZ_ASSERT(mr->page_len > 0 && mr->page_len <= d.conf.max_register_bytes);
	FUZZ_ASSERT(mr->page_base + mr->page_len > mr->page_base);
	if (mr->pmem != NULL && mr->pmem->object_view && q->placement == VIA_CTL_MEM_OBJECT_FD)
		FUZZ_ASSERT(!mr->writable || s->in_fd_info.accmode == O_RDWR);
	if (q->flags & VIA_CTL_MEM_READ_ONLY)
		FUZZ_ASSERT(!mr->writable);
}

/* ---- fds the client passes ------------------------------------------------- */

enum fd_kind {
	FD_SHARE_FILE, FD_MEMFD_SEALED, FD_MEMFD_READ_ONLY, FD_MEMFD_UNSEALED, FD_HUGETLB,
	FD_EVENTFD, FD_PIPE_READ, FD_PIPE_WRITE, FD_SOCKET, FD_DIRECTORY, FD_DEV_NULL,
	FD_PROC_MEM, FD_PROC_MEM_READ_ONLY, FD_O_PATH, FD_KINDS,
};

/* A memfd of @p len bytes with @p seals (0: none), or -1. */
static int
memfd(unsigned flags, uint64_t len, unsigned seals)
{
	int fd = memfd_create("fuzz-obj", MFD_CLOEXEC | MFD_ALLOW_SEALING | flags);

	if (fd >= 0 && (ftruncate(fd, (off_t)len) != 0 ||
			(seals != 0 && fcntl(fd, F_ADD_SEALS, seals) != 0))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* An fd of kind @p k, or -1 (a hugetlb memfd with no pool). */
static int
make_fd(enum fd_kind k)
{
	int two[2], fd = -1;

	switch (k) {
	case FD_SHARE_FILE:
		return memfd(0, VIA_SHARE_FILE_SIZE, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	case FD_MEMFD_SEALED:
		return memfd(0, CLIENT_LEN, F_SEAL_SHRINK);
	case FD_MEMFD_READ_ONLY: {
		char path[64];
		int rw = memfd(0, CLIENT_LEN, F_SEAL_SHRINK);

		snprintf(path, sizeof(path), "/proc/self/fd/%d", rw);
		fd = rw >= 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
		if (rw >= 0)
			close(rw);
		return fd;
	}
	case FD_MEMFD_UNSEALED:
		return memfd(0, CLIENT_LEN, 0);
	case FD_HUGETLB:
		return memfd(MFD_HUGETLB, 2u << 20, F_SEAL_SHRINK);
	case FD_EVENTFD:
		return eventfd(0, EFD_CLOEXEC);
	case FD_PIPE_READ:
	case FD_PIPE_WRITE:
		if (pipe2(two, O_CLOEXEC) != 0)
			return -1;
		close(two[k == FD_PIPE_READ]);
		return two[k == FD_PIPE_WRITE];
	case FD_SOCKET:
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, two) != 0)
			return -1;
		close(two[1]);
		return two[0];
	case FD_DIRECTORY:
		return open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	case FD_DEV_NULL:
		return open("/dev/null", O_RDWR | O_CLOEXEC);
	case FD_PROC_MEM:
	case FD_PROC_MEM_READ_ONLY:
		return open("/proc/self/mem", (k == FD_PROC_MEM ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	case FD_O_PATH:
		return open("/", O_PATH | O_CLOEXEC);
	case FD_KINDS:
		break;
	}
	return -1;
}

/* An fd arrives with the request being read, taken as ctl.c's fds_take(). */
static void
fd_arrives(struct via_session *s, int fd)
{
	if (s->in_fd >= 0 || s->in_fd_refused) {
		/* a second fd for one request: both refused */
		close(fd);
		if (s->in_fd >= 0)
			close(s->in_fd);
		s->in_fd = -1;
		s->in_fd_refused = true;
		return;
	}
	if (via_fd_classify(fd, &s->in_fd_info) == VIA_FD_REFUSED) {
		close(fd);
		s->in_fd_refused = true;
		return;
	}
	s->in_fd = fd;
}

/* CLIENT_FD, as ctl.c's handler: the checks of clientfd.c, then kept. */
static int
client_fd(struct via_session *s, const struct via_ctl_client_fd_req *q)
{
	const struct via_fd_info *fi = &s->in_fd_info;
	const char *why;
	int *slot, rc = via_client_fd_check(s, q->kind, &slot, &why);

	if (rc != 0)
		return rc;
	if (slot == &s->share_fd)
		FUZZ_ASSERT(fi->kind == VIA_FD_SHMEM && !fi->hugetlb &&
			    fi->size == VIA_SHARE_FILE_SIZE && (fi->seals & F_SEAL_SHRINK));
	*slot = s->in_fd;
	s->in_fd = -1;
	return 0;
}

/* ---- the handlers (daemon/ctl.c) ------------------------------------------- */

static int
handle(struct via_session *s, unsigned op, const uint8_t *req, uint8_t *rep)
{
	int rc;

	if (!s->opened && op != VIA_CTL_OPEN)
		return -ENOTCONN;
	switch (op) {
	case VIA_CTL_OPEN: {
		const struct via_ctl_open_req *q = (const void *)req;
		char name[VIA_CTL_NAME_MAX];

		if (q->abi_version != VIA_ABI_VERSION)
			return -EPROTO;
		memcpy(name, q->nic_name, sizeof(name));
		name[sizeof(name) - 1] = '\0';
		rc = via_session_open(&d, s, name);
		if (rc == 0) {
			/* the fd goes to the client, which closes it here */
			close(s->seg.fd);
			s->seg.fd = -1;
		}
		return rc;
	}
	case VIA_CTL_PTAG_CREATE:
		return via_ptag_create(&d, s, &((struct via_ctl_id *)rep)->id);
	case VIA_CTL_PTAG_DESTROY:
		return via_ptag_destroy(&d, s, ((const struct via_ctl_id *)req)->id);
	case VIA_CTL_MEM_REGISTER: {
		const struct via_ctl_mem_register_req *q = (const void *)req;
		uint32_t handle;

		rc = via_mr_register(&d, s, q, &handle);
		if (rc == 0) {
			struct via_mr *mr = via_mr_get(&d, s, q->addr, handle);

			FUZZ_ASSERT(mr != NULL && mr->len == q->len);
			FUZZ_ASSERT(via_mr_check(&d, s, handle, q->addr, q->len, q->attr.ptag,
						 VIA_MR_LOCAL_READ, &rc) == mr);
			check_region(s, q, mr);
		}
		return rc;
	}
	case VIA_CTL_MEM_DEREGISTER: {
		const struct via_ctl_mem_ref *q = (const void *)req;

		return via_mr_deregister(&d, s, q->addr, q->handle);
	}
	case VIA_CTL_MEM_QUERY: {
		const struct via_ctl_mem_ref *q = (const void *)req;

		return via_mr_get(&d, s, q->addr, q->handle) != NULL ? 0 : -ENOENT;
	}
	case VIA_CTL_MEM_SET_ATTR: {
		const struct via_ctl_mem_set_attr_req *q = (const void *)req;

		return via_mr_set_attr(&d, s, q->ref.addr, q->ref.handle, &q->attr);
	}
	case VIA_CTL_ALLOC: {
		struct via_pmem *p;

		rc = via_pmem_alloc(&d, s, ((const struct via_ctl_alloc_req *)req)->len, &p);
		if (rc == 0) {
			close(p->shm.fd);
			p->shm.fd = -1;
		}
		return rc;
	}
	case VIA_CTL_ALLOC_MAPPED: {
		const struct via_ctl_alloc_mapped_req *q = (const void *)req;

		return via_pmem_mapped(&d, s, q->id, q->client_va);
	}
	case VIA_CTL_FREE:
		return via_pmem_free(&d, s, ((const struct via_ctl_id *)req)->id);
	case VIA_CTL_CQ_CREATE: {
		struct via_cq *cq;

		rc = via_cq_create(&d, s, ((const struct via_ctl_cq_create_req *)req)->entries, &cq);
		if (rc == 0)
			FUZZ_ASSERT(cq->capacity >= ((const struct via_ctl_cq_create_req *)req)->entries);
		return rc;
	}
	case VIA_CTL_CQ_RESIZE: {
		const struct via_ctl_cq_resize_req *q = (const void *)req;
		struct via_cq *cq = via_cq_get(&d, s, q->id);
		struct via_cqe before[1024];
		uint32_t queued = 0, i, cap;
		uint64_t off;

		/* what the client has not consumed, by its own cons */
		if (cq != NULL) {
			queued = cq->ring.local - q->cons;
			for (i = 0; queued <= cq->capacity && i < queued; i++)
				memcpy(&before[i],
				       cq->ring.slots +
					       (size_t)((q->cons + i) & cq->ring.mask) * sizeof(before[0]),
				       sizeof(before[0]));
		}
		rc = via_cq_resize(&d, s, q->id, q->entries, q->cons, &off, &cap);
		if (rc == 0) {
			FUZZ_ASSERT(cq != NULL && queued <= q->entries && cap >= q->entries);
			FUZZ_ASSERT(off + via_shm_cq_slots_size(cap) <= s->seg.len);
			FUZZ_ASSERT(cq->ring.local - q->cons == queued);
			for (i = 0; i < queued; i++)
				FUZZ_ASSERT(memcmp(&before[i],
						   cq->ring.slots + (size_t)((q->cons + i) & (cap - 1)) *
									    sizeof(before[0]),
						   sizeof(before[0])) == 0);
		}
		return rc;
	}
	case VIA_CTL_CQ_DESTROY:
		return via_cq_destroy(&d, s, ((const struct via_ctl_id *)req)->id);
	case VIA_CTL_VI_CREATE: {
		struct via_vi *vi;

		rc = via_vi_create(&d, s, (const void *)req, &vi);
		if (rc == 0) {
			FUZZ_ASSERT(vi->bell < s->bell_words * 64u && s->by_bell[vi->bell] == vi);
			FUZZ_ASSERT(vi->wq[VIA_WQ_SEND].mask + 1 == vi->wq_capacity);
		}
		return rc;
	}
	case VIA_CTL_VI_DESTROY:
		return via_vi_destroy(&d, s, ((const struct via_ctl_id *)req)->id);
	case VIA_CTL_VI_QUERY: {
		struct via_vi *vi = via_vi_get(&d, s, ((const struct via_ctl_id *)req)->id);

		if (vi == NULL)
			return -ENOENT;
		/* the client's indices, whatever they are, answer a bool */
		rc = via_vi_wq_empty(vi, VIA_WQ_SEND) + via_vi_wq_empty(vi, VIA_WQ_RECV);
		return rc >= 0 ? 0 : rc;
	}
	case VIA_CTL_VI_SET_ATTR: {
		const struct via_ctl_vi_set_attr_req *q = (const void *)req;

		return via_vi_set_attr(&d, s, q->id, &q->attr);
	}
	case VIA_CTL_CLIENT_FD:
		return client_fd(s, (const void *)req);
	default:
		/* the connection manager, name service, SMI: not objects */
		return -EOPNOTSUPP;
	}
}

/* The data path produces completions on CQ @p id (dp_comp.c via_dp_complete()). */
static void
produce(struct via_session *s, uint32_t id, uint8_t n)
{
	struct via_cq *cq = via_cq_get(&d, s, id);
	unsigned i;

	if (cq == NULL)
		return;
	for (i = 0; i < n; i++) {
		struct via_cqe e = { .vi_cookie = cq->ring.local, .flags = i & 1 };
		uint32_t before = cq->ring.local;
		int rc = via_ring_enqueue(&cq->ring, &e);

		FUZZ_ASSERT(rc == 0 || rc == -ENOBUFS || rc == -EPIPE);
		FUZZ_ASSERT(cq->ring.local - before == (rc == 0));
		if (rc != 0)
			break;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t setup = fuzz_u8(&in);
	struct via_session *s;
	uint32_t seq = 0, id;
	unsigned steps = 0;
	/* FUZZ_TRACE=1: each request's result on stderr (reading a corpus) */
	const bool trace = getenv("FUZZ_TRACE") != NULL;
	/* the lowest free fd: the same once the session ended, nothing leaked */
	int fds_before = fcntl(0, F_DUPFD_CLOEXEC, 0), rc;

	close(fds_before);
	tables_init();
	FUZZ_ASSERT(via_session_new(&d, -1, &s) == 0);
	s->pid = getpid();
	s->uid = s->gid = CLIENT_UID;
	if (setup & 0x1) {
		s->mem_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
		FUZZ_ASSERT(s->mem_fd >= 0);
	}
	if (setup & 0x2) {
		s->share_fd = make_fd(FD_SHARE_FILE);
		FUZZ_ASSERT(s->share_fd >= 0);
	}

	while (in.left > 0 && steps++ < 64) {
		uint8_t op = fuzz_u8(&in);
		uint8_t req[VIA_CTL_BODY_MAX], rep[VIA_CTL_BODY_MAX];
		struct via_ctl_hdr h;

		if (op == OP_PRODUCE) {
			id = fuzz_u32(&in);
			produce(s, id, fuzz_u8(&in));
			continue;
		}
		if (op == OP_FD) {
			int fd = make_fd((enum fd_kind)(fuzz_u8(&in) % FD_KINDS));

			if (fd >= 0)
				fd_arrives(s, fd);
			continue;
		}
		if (op == OP_SCRIBBLE) {
			struct via_cq *cq;

			id = fuzz_u32(&in);
			cq = via_cq_get(&d, s, id);
			if (cq != NULL)
				__atomic_store_n(&cq->sh->ring.cons, fuzz_u32(&in), __ATOMIC_RELEASE);
			continue;
		}
		op = (uint8_t)(op % VIA_CTL_OP_COUNT);
		via_ctl_hdr_init(&h, op, 0, ++seq, 0);
		if (via_ctl_check(&h, 0) != 0)
			continue;
		FUZZ_ASSERT(h.len <= sizeof(req));
		fuzz_take(&in, req, h.len);
		memset(rep, 0, sizeof(rep));
		/* as ctl.c's dispatch(): an fd with a request that takes none, or
		 * one refused, fails it; the handler keeps it or it goes */
		if (s->in_fd >= 0 && !via_ctl_request_has_fd(op)) {
			close(s->in_fd);
			s->in_fd = -1;
			s->in_fd_refused = true;
		}
		rc = s->in_fd_refused ? -EBADF : handle(s, op, req, rep);
		if (s->in_fd >= 0)
			close(s->in_fd);
		s->in_fd = -1;
		s->in_fd_refused = false;
		if (trace)
			fprintf(stderr, "%s: %d\n", via_ctl_op_name(op), rc);
		FUZZ_ASSERT(rc <= 0);
		check_segment(s);
		check_limits(s);
	}

	via_session_close(&d, s);
	/* everything given back */
	id = 0;
	FUZZ_ASSERT(via_idtab_next(&d.mrs, &id, NULL) == NULL);
	id = 0;
	FUZZ_ASSERT(via_idtab_next(&d.cqs, &id, NULL) == NULL);
	id = 0;
	FUZZ_ASSERT(via_idtab_next(&d.vis, &id, NULL) == NULL);
	id = 0;
	FUZZ_ASSERT(via_idtab_next(&d.ptags, &id, NULL) == NULL);
	id = 0;
	FUZZ_ASSERT(via_idtab_next(&d.pmems, &id, NULL) == NULL);
	FUZZ_ASSERT(d.counters.bytes_registered == 0);
	FUZZ_ASSERT(d.counters.sessions == 0);
	FUZZ_ASSERT(d.shards[0].nb_vis == 0);
	tables_fini();
	/* every fd it passed is closed with the session */
	{
		int fd = fcntl(0, F_DUPFD_CLOEXEC, 0);

		close(fd);
		FUZZ_ASSERT(fd == fds_before);
	}
	return 0;
}
