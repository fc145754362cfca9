/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * viad's objects without DPDK or a socket: the id table, the segment arena,
 * protection tags, the translation and protection table (VIA §3.2), CQs,
 * VIs (VIA §5, §9.3) and reclaim when a session ends; what a client hands
 * viad (fds judged by what they are, SysV segments by its credentials,
 * shared objects mapped as far as it may use them) and the limits per user
 * that hold the host (mappings, hugepages, memory).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vipl.h>

#include "test_common.h"
#include "viad.h"

static struct viad d;

static void
viad_init(void)
{
	struct via_nic *nic = &d.nics[0];

	via_conf_defaults(&d.conf);
	d.conf.max_regions = 64;
	d.conf.max_register_bytes = 64ull << 20;
	d.conf.max_vi = 8;
	d.conf.max_cq = 8;
	d.conf.session_shm_bytes = 4ull << 20;
	via_log_set_level("error");
	CHECK_EQ(via_idtab_init(&d.sessions, 16), 0);
	CHECK_EQ(via_idtab_init(&d.ptags, 16), 0);
	CHECK_EQ(via_idtab_init(&d.mrs, d.conf.max_regions), 0);
	CHECK_EQ(via_idtab_init(&d.cqs, d.conf.max_cq), 0);
	CHECK_EQ(via_idtab_init(&d.vis, d.conf.max_vi), 0);
	CHECK_EQ(via_idtab_init(&d.pmems, 16), 0);
	TAILQ_INIT(&d.session_list);
	TAILQ_INIT(&d.users);
	/* one data-path shard, as a viad with one poll lcore */
	d.nb_shards = 1;
	TAILQ_INIT(&d.shards[0].rel_vis);
	strcpy(nic->info.name, "via0");
	nic->loopback = true;
	nic->info.max_transfer_size = 65536;
	nic->info.max_desc_per_queue = 100;   /* rings round up to 128 */
	nic->info.reliability_support = VIP_SERVICE_UNRELIABLE;
	d.nb_nics = 1;
}

static struct via_session *
session(void)
{
	struct via_session *s;

	CHECK_EQ(via_session_new(&d, -1, &s), 0);
	CHECK_EQ(via_session_open(&d, s, "via0"), 0);
	s->pid = getpid();
	/* ordinary memory is copied through it (lib/viad/vipl_nic.c gives it) */
	s->mem_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	CHECK(s->mem_fd >= 0);
	return s;
}

/* Register ordinary memory on the copy path, as VipRegisterMem would
 * (with @p flags: VIA_CTL_MEM_READ_ONLY). */
static int
mr_register_flags(struct via_session *s, uint64_t addr, uint64_t len,
		  const struct via_ctl_mem_attr *attr, uint32_t flags, uint32_t *handle)
{
	struct via_ctl_mem_register_req q = {
		.addr = addr, .len = len, .attr = *attr,
		.placement = VIA_CTL_MEM_COPIED, .reason = VIA_CTL_COPIED_FILE, .flags = flags,
	};

	return via_mr_register(&d, s, &q, handle);
}

static int
mr_register(struct via_session *s, uint64_t addr, uint64_t len,
	    const struct via_ctl_mem_attr *attr, uint32_t *handle)
{
	return mr_register_flags(s, addr, len, attr, 0, handle);
}

static void
test_idtab(void)
{
	struct via_idtab t;
	uint32_t ids[5], id, cur = 0, seen = 0;
	int objs[5];
	unsigned i;

	CHECK_EQ(via_idtab_init(&t, 0), -EINVAL);
	CHECK_EQ(via_idtab_init(&t, VIA_IDTAB_MAX + 1), -EINVAL);
	CHECK_EQ(via_idtab_init(&t, 4), 0);
	CHECK_EQ(via_idtab_alloc(&t, NULL, &id), -EINVAL);
	for (i = 0; i < 4; i++) {
		CHECK_EQ(via_idtab_alloc(&t, &objs[i], &ids[i]), 0);
		CHECK(ids[i] != 0);
		CHECK(via_idtab_lookup(&t, ids[i]) == &objs[i]);
	}
	CHECK_EQ(via_idtab_alloc(&t, &objs[4], &ids[4]), -ENOSPC);
	CHECK_EQ(via_idtab_free(&t, ids[1]), 0);
	CHECK_EQ(via_idtab_free(&t, ids[1]), -ENOENT);
	CHECK(via_idtab_lookup(&t, ids[1]) == NULL);
	/* the slot is reused under a new generation: the old id stays dead */
	CHECK_EQ(via_idtab_alloc(&t, &objs[4], &ids[4]), 0);
	CHECK(ids[4] != ids[1]);
	CHECK(via_idtab_lookup(&t, ids[1]) == NULL);
	CHECK(via_idtab_lookup(&t, ids[4]) == &objs[4]);
	CHECK(via_idtab_lookup(&t, 0) == NULL);
	CHECK(via_idtab_lookup(&t, 0xffffffffu) == NULL);
	while (via_idtab_next(&t, &cur, &id) != NULL)
		seen++;
	CHECK_EQ(seen, 4);
	via_idtab_fini(&t);
}

static void
test_arena(void)
{
	struct via_arena a;
	uint64_t o1, o2, o3, o4;

	CHECK_EQ(via_arena_init(&a, 64, 64 + 4 * 4096), 0);
	CHECK_EQ(via_arena_alloc(&a, 4096, &o1), 0);
	CHECK_EQ(o1, 64);
	CHECK_EQ(via_arena_alloc(&a, 4096, &o2), 0);
	CHECK_EQ(via_arena_alloc(&a, 4096, &o3), 0);
	CHECK_EQ(via_arena_alloc(&a, 8192, &o4), -ENOMEM);
	CHECK_EQ(via_arena_alloc(&a, 1, &o4), 0);
	CHECK_EQ(o4 % VIA_SHM_ALIGN, 0);
	via_arena_free(&a, o1, 4096);
	via_arena_free(&a, o3, 4096);
	CHECK_EQ(via_arena_alloc(&a, 8192, &o1), -ENOMEM);   /* not adjacent */
	via_arena_free(&a, o2, 4096);                        /* coalesces all three */
	CHECK_EQ(via_arena_alloc(&a, 3 * 4096, &o1), 0);
	CHECK_EQ(o1, 64);
	via_arena_fini(&a);
}

static void
test_ptag_and_mr(void)
{
	struct via_session *s = session(), *other = session();
	struct via_ctl_mem_attr attr = { 0 };
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint32_t tag, tag2, h1, h2, h3;
	uint8_t *buf = aligned_alloc(page, 4 * page);
	uint8_t *ro, *hole;
	int err;

	CHECK_EQ(via_ptag_create(&d, s, &tag), 0);
	CHECK_EQ(via_ptag_create(&d, s, &tag2), 0);
	CHECK(via_ptag_get(&d, other, tag) == NULL);       /* per process */
	CHECK_EQ(via_ptag_destroy(&d, other, tag), -ENOENT);
	attr.ptag = tag;

	/* VIA §3.2.1: any address and length, page granularity */
	CHECK_EQ(mr_register(s, (uintptr_t)buf + 100, 2 * page, &attr, &h1), 0);
	{
		struct via_mr *mr = via_mr_get(&d, s, (uintptr_t)buf + 100, h1);

		CHECK(mr != NULL);
		if (mr != NULL) {
			CHECK_EQ(mr->page_base, (uintptr_t)buf);
			CHECK_EQ(mr->page_len, 3 * page);
			CHECK(mr->writable);
		}
	}
	CHECK_EQ(mr_register(s, (uintptr_t)buf + 100, 2 * page, &attr, &h2), 0);
	CHECK(h1 != h2);                                   /* same range, distinct handles */
	CHECK_EQ(mr_register(s, (uintptr_t)buf, 0, &attr, &h3), -EINVAL);
	CHECK_EQ(mr_register(s, UINT64_MAX - 10, 100, &attr, &h3), -EINVAL);
	/* inside the last page: the bytes do not wrap, their pages do */
	CHECK_EQ(mr_register(s, UINT64_MAX - 4095, 2048, &attr, &h3), -EINVAL);
	attr.ptag = 12345;
	CHECK_EQ(mr_register(s, (uintptr_t)buf, 10, &attr, &h3), -ESRCH);
	attr.ptag = tag;
	attr.rdma_read = 1;                                /* RDMAReadSupport is FALSE */
	CHECK_EQ(mr_register(s, (uintptr_t)buf, 10, &attr, &h3), -EOPNOTSUPP);
	attr.rdma_read = 0;

	/* viad reads nothing about the client: a copied range is what it says,
	 * and each access has the program's own rights (its /proc/self/mem):
	 * an unmapped page fails there */
	hole = mmap(NULL, 2 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(hole + page, page);
	CHECK_EQ(mr_register(s, (uintptr_t)hole, 2 * page, &attr, &h3), 0);
	{
		const struct via_mr *mr = via_mr_get(&d, s, (uintptr_t)hole, h3);
		uint8_t b;

		CHECK(mr != NULL && via_mem_read(s, mr, (uintptr_t)hole, &b, 1) == 0);
		CHECK(mr != NULL && via_mem_read(s, mr, (uintptr_t)hole + page, &b, 1) == -EFAULT);
	}
	CHECK_EQ(via_mr_deregister(&d, s, (uintptr_t)hole, h3), 0);
	/* past the user address space: the kernel's */
	CHECK_EQ(mr_register(s, UINT64_C(0xffff800000000000), page, &attr, &h3), -EINVAL);
	/* a read-only one registers, not writable (VIA §9.5.3) */
	ro = hole;
	CHECK_EQ(mr_register_flags(s, (uintptr_t)ro, page, &attr, VIA_CTL_MEM_READ_ONLY, &h3), 0);
	CHECK(via_mr_check(&d, s, h3, (uintptr_t)ro, 8, tag, VIA_MR_LOCAL_READ, &err) != NULL);
	CHECK(via_mr_check(&d, s, h3, (uintptr_t)ro, 8, tag, VIA_MR_LOCAL_WRITE, &err) == NULL);
	CHECK_EQ(err, -EACCES);
	/* a client that claims pages writable that it may only read, shared:
	 * its own rights refuse the write, the object is unchanged */
	{
		int fd = memfd_create("test-ro", MFD_CLOEXEC), rofd;
		char path[64], c = 'A', got = 0;
		uint8_t *sh = MAP_FAILED;
		uint32_t h4;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		rofd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && ftruncate(fd, (off_t)page) == 0 && pwrite(fd, &c, 1, 0) == 1 &&
		    rofd >= 0)
			sh = mmap(NULL, page, PROT_READ, MAP_SHARED, rofd, 0);
		CHECK(sh != MAP_FAILED);
		CHECK_EQ(mr_register(s, (uintptr_t)sh, page, &attr, &h4), 0);
		CHECK_EQ(via_mem_write(s, via_mr_get(&d, s, (uintptr_t)sh, h4), (uintptr_t)sh,
				       "W", 1), -EFAULT);
		CHECK(pread(fd, &got, 1, 0) == 1 && got == 'A');
		CHECK_EQ(via_mr_deregister(&d, s, (uintptr_t)sh, h4), 0);
		munmap(sh, page);
		close(rofd);
		close(fd);
	}

	/* translation and protection check (VIA §3.2.2) */
	CHECK(via_mr_check(&d, s, h1, (uintptr_t)buf + 100, 2 * page, tag,
			   VIA_MR_LOCAL_WRITE, &err) != NULL);
	CHECK(via_mr_check(&d, s, h1, (uintptr_t)buf + 99, 1, tag, VIA_MR_LOCAL_READ, &err) == NULL);
	CHECK_EQ(err, -ERANGE);
	CHECK(via_mr_check(&d, s, h1, (uintptr_t)buf + 100, 2 * page + 1, tag,
			   VIA_MR_LOCAL_READ, &err) == NULL);
	CHECK_EQ(err, -ERANGE);
	CHECK(via_mr_check(&d, s, h1, (uintptr_t)buf + 100, 1, tag2, VIA_MR_LOCAL_READ, &err) == NULL);
	CHECK_EQ(err, -EACCES);
	CHECK(via_mr_check(&d, s, h1, (uintptr_t)buf + 100, 1, tag, VIA_MR_REMOTE_WRITE, &err) == NULL);
	CHECK_EQ(err, -EACCES);
	CHECK(via_mr_check(&d, other, h1, (uintptr_t)buf + 100, 1, tag, VIA_MR_LOCAL_READ, &err) == NULL);
	CHECK_EQ(err, -ENOENT);

	/* the table's epoch: what the data path found stays good while it
	 * lasts (a message's regions are not looked up again, dp.h); a new
	 * region changes no earlier answer, a handle of the client's table
	 * never has one */
	{
		uint64_t epoch = via_mr_epoch(&d);
		uint32_t h5;

		CHECK(epoch != 0);
		CHECK_EQ(via_mr_epoch_of(&d, h1), epoch);
		CHECK_EQ(via_mr_epoch_of(&d, VIA_TPT_HANDLE | 1), 0);
		CHECK_EQ(mr_register(s, (uintptr_t)buf, page, &attr, &h5), 0);
		CHECK_EQ(via_mr_epoch(&d), epoch);
		CHECK_EQ(via_mr_deregister(&d, s, (uintptr_t)buf, h5), 0);
		CHECK(via_mr_epoch(&d) != epoch);
		epoch = via_mr_epoch(&d);
		CHECK_EQ(via_mr_deregister(&d, s, (uintptr_t)buf, h5), -ENOENT);
		CHECK_EQ(via_mr_epoch(&d), epoch);
	}

	/* attributes change later checks (VIA §9.8.4) and move the tag's refs,
	 * and end the epoch */
	attr.ptag = tag2;
	attr.rdma_write = 1;
	{
		uint64_t epoch = via_mr_epoch(&d);

		CHECK_EQ(via_mr_set_attr(&d, s, (uintptr_t)buf + 100, h1, &attr), 0);
		CHECK(via_mr_epoch(&d) != epoch);
	}
	CHECK(via_mr_check(&d, s, h1, (uintptr_t)buf + 100, 1, tag2, VIA_MR_REMOTE_WRITE, &err) != NULL);
	CHECK_EQ(via_ptag_destroy(&d, s, tag2), -EBUSY);
	CHECK_EQ(via_ptag_destroy(&d, s, tag), -EBUSY);

	/* deregister: exact address and handle; the handle dies */
	CHECK_EQ(via_mr_deregister(&d, s, (uintptr_t)buf, h1), -ENOENT);
	CHECK_EQ(via_mr_deregister(&d, other, (uintptr_t)buf + 100, h1), -ENOENT);
	CHECK_EQ(via_mr_deregister(&d, s, (uintptr_t)buf + 100, h1), 0);
	CHECK(via_mr_check(&d, s, h1, (uintptr_t)buf + 100, 1, tag2, VIA_MR_LOCAL_READ, &err) == NULL);
	CHECK_EQ(err, -ENOENT);
	CHECK_EQ(via_ptag_destroy(&d, s, tag2), 0);

	/* limits: max_register_bytes, then max_regions */
	{
		uint64_t saved = d.conf.max_register_bytes;

		d.conf.max_register_bytes = d.counters.bytes_registered + page;
		CHECK_EQ(mr_register(s, (uintptr_t)buf, 2 * page, &attr, &h3), -ESRCH);
		attr.ptag = tag;
		CHECK_EQ(mr_register(s, (uintptr_t)buf, 2 * page, &attr, &h3), -ENOSPC);
		d.conf.max_register_bytes = saved;
	}
	{
		unsigned n = 0;

		while (mr_register(s, (uintptr_t)buf, 1, &attr, &h3) == 0)
			n++;
		CHECK_EQ(mr_register(s, (uintptr_t)buf, 1, &attr, &h3), -ENOSPC);
		CHECK_EQ(n + 2, d.conf.max_regions);     /* h2, the read-only one, and these */
	}
	via_session_close(&d, other);
	via_session_close(&d, s);
	munmap(ro, page);
	free(buf);
}

static void
test_pmem(void)
{
	struct via_session *s = session();
	struct via_ctl_mem_attr attr = { 0 };
	struct via_pmem *p;
	uint32_t h, id;
	uint8_t *client;
	size_t len;

	CHECK_EQ(via_pmem_alloc(&d, s, 0, &p), -EINVAL);
	CHECK_EQ(via_pmem_alloc(&d, s, d.conf.max_alloc_bytes + 1, &p), -ENOSPC);
	CHECK_EQ(via_pmem_alloc(&d, s, 100000, &p), 0);
	/* p is freed below: what the test needs of it afterwards, kept */
	id = p->id;
	len = p->shm.len;
	/* map it as the client would, elsewhere in the address space */
	client = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, p->shm.fd, 0);
	CHECK(client != MAP_FAILED);
	CHECK_EQ(via_pmem_mapped(&d, s, p->id, 0), -EINVAL);
	CHECK_EQ(via_pmem_mapped(&d, s, p->id, (uintptr_t)client), 0);
	CHECK_EQ(via_pmem_mapped(&d, s, p->id, (uintptr_t)client), -EINVAL);
	CHECK_EQ(via_ptag_create(&d, s, &attr.ptag), 0);
	CHECK_EQ(mr_register(s, (uintptr_t)client + 64, 4096, &attr, &h), 0);
	CHECK(via_mr_get(&d, s, (uintptr_t)client + 64, h)->pmem == p);
	client[64] = 0x5a;                            /* viad sees the client's bytes */
	CHECK_EQ(p->shm.va[64], 0x5a);
	CHECK_EQ(via_pmem_free(&d, s, p->id), -EBUSY);
	CHECK_EQ(via_mr_deregister(&d, s, (uintptr_t)client + 64, h), 0);
	CHECK_EQ(via_pmem_free(&d, s, id), 0);
	CHECK_EQ(via_pmem_free(&d, s, id), -ENOENT);
	munmap(client, len);
	via_session_close(&d, s);
}

static void
test_cq_vi(void)
{
	struct via_session *s = session(), *other = session();
	struct via_ctl_vi_create_req req;
	struct via_cq *cq, *cq2;
	struct via_vi *vi;
	uint32_t tag;

	CHECK_EQ(via_cq_create(&d, s, 0, &cq), -EINVAL);
	CHECK_EQ(via_cq_create(&d, s, d.conf.max_cq_entries + 1, &cq), -ENOSPC);
	CHECK_EQ(via_cq_create(&d, s, 1000, &cq), 0);
	CHECK_EQ(cq->capacity, 1024);
	CHECK_EQ(via_cq_create(&d, other, 16, &cq2), 0);
	CHECK_EQ(via_ptag_create(&d, s, &tag), 0);

	memset(&req, 0, sizeof(req));
	req.attr.reliability = VIP_SERVICE_UNRELIABLE;
	req.attr.max_transfer = 32768;
	req.attr.ptag = tag;
	req.recv_cq = cq->id;

	/* VIA §9.3.1 errors, one attribute at a time */
	req.send_cq = cq2->id;                        /* another session's CQ */
	CHECK_EQ(via_vi_create(&d, s, &req, &vi), -ENOENT);
	req.send_cq = 0;
	req.attr.reliability = 0;
	CHECK_EQ(via_vi_create(&d, s, &req, &vi), -EPROTONOSUPPORT);
	req.attr.reliability = VIP_SERVICE_UNRELIABLE | VIP_SERVICE_RELIABLE_DELIVERY;
	CHECK_EQ(via_vi_create(&d, s, &req, &vi), -EPROTONOSUPPORT);
	req.attr.reliability = VIP_SERVICE_RELIABLE_RECEPTION;     /* not offered */
	CHECK_EQ(via_vi_create(&d, s, &req, &vi), -EPROTONOSUPPORT);
	req.attr.reliability = VIP_SERVICE_UNRELIABLE;
	req.attr.max_transfer = 0;
	CHECK_EQ(via_vi_create(&d, s, &req, &vi), -EMSGSIZE);
	req.attr.max_transfer = 65537;
	CHECK_EQ(via_vi_create(&d, s, &req, &vi), -EMSGSIZE);
	req.attr.max_transfer = 32768;
	req.attr.qos = 1;
	CHECK_EQ(via_vi_create(&d, s, &req, &vi), -EDOM);
	req.attr.qos = 0;
	req.attr.ptag = 999;
	CHECK_EQ(via_vi_create(&d, s, &req, &vi), -ESRCH);
	req.attr.ptag = tag;
	req.attr.rdma_read = 1;
	CHECK_EQ(via_vi_create(&d, s, &req, &vi), -EOPNOTSUPP);
	req.attr.rdma_read = 0;

	CHECK_EQ(via_vi_create(&d, s, &req, &vi), 0);
	CHECK_EQ(vi->state, VIP_STATE_IDLE);                 /* VIA §5.1 */
	CHECK_EQ(vi->wq_capacity, 128);
	CHECK_EQ(cq->refs, 1);
	CHECK_EQ(via_cq_destroy(&d, s, cq->id), -EBUSY);     /* VIA §9.7.2 */
	CHECK_EQ(via_ptag_destroy(&d, s, tag), -EBUSY);      /* VIA §9.5.2 */
	CHECK(via_vi_get(&d, other, vi->id) == NULL);
	CHECK(via_vi_wq_empty(vi, VIA_WQ_SEND) && via_vi_wq_empty(vi, VIA_WQ_RECV));

	/* a descriptor the client posted and viad has not taken: not empty */
	__atomic_store_n(&vi->sh->wq[VIA_WQ_RECV].ring.prod, 1, __ATOMIC_RELEASE);
	CHECK(!via_vi_wq_empty(vi, VIA_WQ_RECV));
	CHECK_EQ(via_vi_destroy(&d, s, vi->id), -EBUSY);     /* VIA §9.3.2 */
	/* garbage from a hostile client reads as not empty, never as a crash */
	__atomic_store_n(&vi->sh->wq[VIA_WQ_RECV].ring.prod, 0x80000000u, __ATOMIC_RELEASE);
	CHECK(!via_vi_wq_empty(vi, VIA_WQ_RECV));
	CHECK_EQ(via_vi_destroy(&d, s, vi->id), -EBUSY);

	/* attributes only while Idle (VIA §9.8.2) */
	req.attr.max_transfer = 1024;
	CHECK_EQ(via_vi_set_attr(&d, s, vi->id, &req.attr), 0);
	CHECK_EQ(vi->attr.max_transfer, 1024);
	req.attr.qos = 7;
	CHECK_EQ(via_vi_set_attr(&d, s, vi->id, &req.attr), -EDOM);
	CHECK_EQ(vi->attr.max_transfer, 1024);
	vi->state = VIP_STATE_CONNECTED;
	req.attr.qos = 0;
	CHECK_EQ(via_vi_set_attr(&d, s, vi->id, &req.attr), -EPERM);
	vi->state = VIP_STATE_IDLE;

	/* the session ends with the VI still holding a posted descriptor */
	{
		uint64_t vis = d.counters.reclaimed_vis, cqs = d.counters.reclaimed_cqs;
		uint64_t tags = d.counters.reclaimed_ptags;

		via_session_close(&d, s);
		CHECK_EQ(d.counters.reclaimed_vis, vis + 1);
		CHECK_EQ(d.counters.reclaimed_cqs, cqs + 1);
		CHECK_EQ(d.counters.reclaimed_ptags, tags + 1);
	}
	via_session_close(&d, other);
	CHECK_EQ(d.cqs.nb_live, 0);
	CHECK_EQ(d.vis.nb_live, 0);
	CHECK_EQ(d.ptags.nb_live, 0);
	CHECK_EQ(d.mrs.nb_live, 0);
	CHECK_EQ(d.counters.bytes_registered, 0);
}

static void
test_nic_names(void)
{
	CHECK(via_nic_by_name(&d, "via0") == &d.nics[0]);
	CHECK(via_nic_by_name(&d, "/dev/via_lo") == &d.nics[0]);
	CHECK(via_nic_by_name(&d, "/dev/via_eth0") == NULL);   /* via0 is the loopback */
	CHECK(via_nic_by_name(&d, "via1") == NULL);
	CHECK(via_nic_by_name(&d, "/dev/via_eth0x") == NULL);
	CHECK(via_nic_by_name(&d, "") == NULL);
}

/* ---- what a client hands viad ------------------------------------------------ */

/* @p fd judged: its kind, and (if @p what is not NULL) the start of its name. */
static void
classified(int fd, enum via_fd_kind kind, const char *what)
{
	struct via_fd_info fi;

	CHECK_EQ(via_fd_classify(fd, &fi), kind);
	CHECK(what == NULL || strstr(fi.what, what) != NULL);
	close(fd);
}

static void
test_client_fds(void)
{
	struct via_session *s = session();
	struct via_fd_info fi;
	const char *why;
	int pipefd[2], sv[2], fd;
	bool w;

	/* only shared memory, viad's /proc and pipes are kept */
	classified(eventfd(0, EFD_CLOEXEC), VIA_FD_REFUSED, "anon_inode:[eventfd]");
	classified(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC), VIA_FD_REFUSED, "a directory");
	classified(open("/dev/zero", O_RDWR | O_CLOEXEC), VIA_FD_REFUSED, "a character device");
	classified(open("/", O_PATH | O_CLOEXEC), VIA_FD_REFUSED, "an O_PATH fd");
	classified(open("/etc/hostname", O_RDONLY | O_CLOEXEC), VIA_FD_REFUSED,
		   "not shared memory");
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	classified(sv[0], VIA_FD_REFUSED, "a socket");
	close(sv[1]);
	CHECK_EQ(pipe2(pipefd, O_CLOEXEC), 0);
	CHECK_EQ(via_fd_classify(pipefd[1], &fi), VIA_FD_PIPE);
	CHECK_EQ(via_fd_check_witness(&fi, &why), -EINVAL);   /* the write end */
	CHECK_EQ(via_fd_classify(pipefd[0], &fi), VIA_FD_PIPE);
	CHECK_EQ(via_fd_check_witness(&fi, &why), 0);
	close(pipefd[0]);
	close(pipefd[1]);

	/* /proc/PID/mem: the connecting process's only */
	fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	CHECK_EQ(via_fd_classify(fd, &fi), VIA_FD_PROC);
	CHECK_EQ(via_fd_check_proc_mem(s, fd, &fi, &why), 0);
	s->pid = getppid();
	CHECK_EQ(via_fd_check_proc_mem(s, fd, &fi, &why), -EINVAL);
	s->pid = getpid();
	close(fd);

	/* the share file: sealed shmem of its size, the client's own */
	fd = memfd_create("test-share", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	CHECK_EQ(ftruncate(fd, (off_t)VIA_SHARE_FILE_SIZE), 0);
	CHECK_EQ(via_fd_classify(fd, &fi), VIA_FD_SHMEM);
	CHECK_EQ(via_fd_check_share_file(s, &fi, &why), -EINVAL);     /* not sealed */
	CHECK_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), 0);
	CHECK_EQ(via_fd_classify(fd, &fi), VIA_FD_SHMEM);
	s->uid = fi.uid + 1;
	CHECK_EQ(via_fd_check_share_file(s, &fi, &why), -EINVAL);     /* another's */
	s->uid = fi.uid;
	CHECK_EQ(via_fd_check_share_file(s, &fi, &why), 0);
	close(fd);
	/* hugetlbfs, where the pool can fail a fault: refused */
	fd = memfd_create("test-huge", MFD_CLOEXEC | MFD_HUGETLB);
	if (fd >= 0) {
		CHECK_EQ(via_fd_classify(fd, &fi), VIA_FD_SHMEM);
		CHECK(fi.hugetlb);
		CHECK_EQ(via_fd_check_object(&fi, 0, 0, &w, &why), -EINVAL);
		close(fd);
	}

	/* an object: mapped with the fd's access, no more */
	fd = memfd_create("test-obj", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	CHECK_EQ(ftruncate(fd, 65536), 0);
	CHECK_EQ(via_fd_classify(fd, &fi), VIA_FD_SHMEM);
	CHECK_EQ(via_fd_check_object(&fi, 0, 4096, &w, &why), -EINVAL);  /* may shrink */
	CHECK_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	CHECK_EQ(via_fd_classify(fd, &fi), VIA_FD_SHMEM);
	CHECK_EQ(via_fd_check_object(&fi, 61440, 8192, &w, &why), -EINVAL); /* past its end */
	CHECK_EQ(via_fd_check_object(&fi, 0, 65536, &w, &why), 0);
	CHECK(w);
	{
		char path[64];
		int ro;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		ro = open(path, O_RDONLY | O_CLOEXEC);
		CHECK_EQ(via_fd_classify(ro, &fi), VIA_FD_SHMEM);
		CHECK_EQ(via_fd_check_object(&fi, 0, 65536, &w, &why), 0);
		CHECK(!w);
		close(ro);
	}
	close(fd);
	via_session_close(&d, s);
}

static void
test_sysv(void)
{
	struct via_session *s = session();
	struct ipc_perm p = { .uid = 5000, .gid = 6000, .cuid = 5000, .cgid = 6000, .mode = 0640 };
	struct via_shm m;
	const char *why;
	bool w;
	int id;

	/* as ipcperms(): the owner's bits, the group's, the others' */
	s->uid = 5000;
	s->gid = 7000;
	CHECK(via_sysv_allowed(s, &p, false) && via_sysv_allowed(s, &p, true));
	s->uid = 5001;
	CHECK(!via_sysv_allowed(s, &p, false));
	s->groups[0] = 6000;
	s->nb_groups = 1;
	CHECK(via_sysv_allowed(s, &p, false) && !via_sysv_allowed(s, &p, true));
	s->nb_groups = 0;
	p.mode = 0604;
	CHECK(via_sysv_allowed(s, &p, false) && !via_sysv_allowed(s, &p, true));
	s->uid = 0;
	p.mode = 0;
	CHECK(via_sysv_allowed(s, &p, true));

	/* a segment only its owner may use: refused to another user; read-only
	 * to one that may only read */
	id = shmget(IPC_PRIVATE, 65536, IPC_CREAT | 0600);
	CHECK(id >= 0);
	s->uid = getuid() + 1000;
	s->gid = getgid() + 1000;
	CHECK_EQ(via_sysv_attach(s, id, 0, 4096, &m, &w, &why), -EACCES);
	{
		struct shmid_ds ds;

		CHECK_EQ(shmctl(id, IPC_STAT, &ds), 0);
		ds.shm_perm.mode = 0604;
		CHECK_EQ(shmctl(id, IPC_SET, &ds), 0);
	}
	CHECK_EQ(via_sysv_attach(s, id, 4096, 65536, &m, &w, &why), -EINVAL);   /* past it */
	CHECK_EQ(via_sysv_attach(s, id, 4096, 8192, &m, &w, &why), 0);
	CHECK(!w);
	via_shm_destroy(&m);
	s->uid = getuid();
	CHECK_EQ(via_sysv_attach(s, id, 0, 65536, &m, &w, &why), 0);
	CHECK(w);
	via_shm_destroy(&m);
	CHECK_EQ(via_sysv_attach(s, -1, 0, 4096, &m, &w, &why), -EINVAL);
	shmctl(id, IPC_RMID, NULL);
	via_session_close(&d, s);
}

/* The limits that hold the host: a user's mappings and hugepages. */
static void
test_host_limits(void)
{
	struct via_session *s;
	struct via_pmem *p1, *p2;
	uint64_t saved_mappings = d.conf.user_max_mappings;

	d.conf.user_max_mappings = 3;
	d.conf.user_max_hugepage_bytes = 2ull << 20;
	CHECK_EQ(via_session_new(&d, -1, &s), 0);
	s->uid = 4321;
	CHECK_EQ(via_user_attach(&d, s), 0);
	/* the segment is one mapping, and its 4 MiB pass the user's hugepages */
	CHECK_EQ(via_session_open(&d, s, "via0"), 0);
	CHECK(!s->seg.hugepages);
	CHECK_EQ(s->user->used[VIA_USER_MAPPINGS], 1);
	CHECK_EQ(s->user->used[VIA_USER_MEMORY_BYTES], s->seg.len);
	CHECK_EQ(via_pmem_alloc(&d, s, 4096, &p1), 0);
	CHECK_EQ(via_pmem_alloc(&d, s, 4096, &p2), 0);
	CHECK_EQ(s->user->used[VIA_USER_MAPPINGS], 3);
	CHECK_EQ(d.mappings, 3);
	CHECK_EQ(via_pmem_alloc(&d, s, 4096, &p2), -ENOSPC);     /* a 4th mapping */
	CHECK_EQ(via_pmem_free(&d, s, p1->id), 0);
	CHECK_EQ(via_pmem_alloc(&d, s, 4096, &p1), 0);
	via_session_close(&d, s);
	CHECK_EQ(d.mappings, 0);
	d.conf.user_max_mappings = saved_mappings;
	d.conf.user_max_hugepage_bytes = 0;
}

int
main(void)
{
	viad_init();
	test_idtab();
	test_arena();
	test_ptag_and_mr();
	test_pmem();
	test_cq_vi();
	test_nic_names();
	test_client_fds();
	test_sysv();
	test_host_limits();
	return test_summary("test_objects");
}
