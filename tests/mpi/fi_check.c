/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What fi_pingpong and Open MPI leave unused of the "via" provider, checked
 * through libfabric's API: two endpoints, each on its own domain (its own
 * viad session), driven by one thread (manual progress: every wait reads
 * both CQs).
 *
 *   fi_check           (FI_PROVIDER_PATH and VIAD_SOCKET as for any run)
 *
 * - tagged send with remote CQ data to a directed receive: tag, data,
 *   length, flags and the source (fi_cq_readfrom) of the completion;
 * - a truncated receive: fi_cq_readerr gives FI_ETRUNC and the overflow;
 * - FI_PEEK | FI_CLAIM, then a receive with FI_CLAIM; FI_PEEK of nothing
 *   gives FI_ENOMSG; fi_cancel of a posted receive gives FI_ECANCELED;
 * - RMA on registered memory: fi_write from unregistered memory, fi_read
 *   into registered and unregistered memory (several MaxTransferSize
 *   chunks), fi_writedata (a completion with the data at the target),
 *   fi_inject_write; every byte compared;
 * - FI_AV_TABLE on one side, FI_AV_MAP on the other;
 * - fi_cq_sread with nothing to come sleeps: the process's CPU time over
 *   a 300 ms wait stays under 100 ms;
 * - an fi_read with a key that names no region completes in error.
 *
 * Exit status 0 when every check passed; the first failure ends it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#define FAIL(...)                                                    \
	do {                                                         \
		fprintf(stderr, "fi_check: %s:%d: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__);                        \
		fputc('\n', stderr);                                 \
		exit(1);                                             \
	} while (0)

#define OK(call)                                                                     \
	do {                                                                         \
		ssize_t ret_ = (call);                                               \
		if (ret_ < 0)                                                        \
			FAIL("%s: %s (%zd)", #call, fi_strerror((int)-ret_), ret_); \
	} while (0)

/* One side: a domain (a session of viad), an endpoint, its CQ and AV. */
struct side {
	struct fid_domain *dom;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	fi_addr_t peer;             /* the other side in this side's AV */
	struct fi_cq_tagged_entry got[16];
	fi_addr_t src[16];
	int ngot;
	struct fi_cq_err_entry err;
	int nerr;
};

static struct side a, b;

/* Read both CQs once: entries and errors collected per side. */
static void
poll_both(void)
{
	struct side *s[2] = { &a, &b };
	int i;

	for (i = 0; i < 2; i++) {
		struct fi_cq_tagged_entry e;
		fi_addr_t src;
		ssize_t n = fi_cq_readfrom(s[i]->cq, &e, 1, &src);

		if (n == 1) {
			if (s[i]->ngot == 16)
				FAIL("too many completions");
			s[i]->src[s[i]->ngot] = src;
			s[i]->got[s[i]->ngot++] = e;
		} else if (n == -FI_EAVAIL) {
			if (s[i]->nerr)
				FAIL("a second error completion");
			OK(fi_cq_readerr(s[i]->cq, &s[i]->err, 0));
			s[i]->nerr = 1;
		} else if (n != -FI_EAGAIN) {
			FAIL("fi_cq_read: %s", fi_strerror((int)-n));
		}
	}
}

/* Until side @p s has @p n completions and @p nerr errors (10 s at most). */
static void
wait_for(struct side *s, int n, int nerr)
{
	time_t until = time(NULL) + 10;

	while (s->ngot < n || s->nerr < nerr) {
		if (time(NULL) > until)
			FAIL("no completion within 10 s (have %d/%d, errors %d/%d)", s->ngot, n,
			     s->nerr, nerr);
		poll_both();
	}
}

static void
reset(void)
{
	a.ngot = b.ngot = 0;
	a.nerr = b.nerr = 0;
}

static struct fi_context *
ctx(int i)
{
	static struct fi_context c[32];

	return &c[i];
}

static void
side_open(struct fid_fabric *fab, struct fi_info *info, struct side *s, enum fi_av_type type)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_UNSPEC };
	struct fi_av_attr av_attr = { .type = type };

	OK(fi_domain(fab, info, &s->dom, NULL));
	OK(fi_cq_open(s->dom, &cq_attr, &s->cq, NULL));
	OK(fi_av_open(s->dom, &av_attr, &s->av, NULL));
	OK(fi_endpoint(s->dom, info, &s->ep, NULL));
	OK(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
	OK(fi_ep_bind(s->ep, &s->av->fid, 0));
	OK(fi_enable(s->ep));
}

static void
tagged(void)
{
	char out[100], in[100], small[10];
	int i;

	for (i = 0; i < 100; i++)
		out[i] = (char)(i * 3);
	reset();
	OK(fi_trecv(b.ep, in, sizeof(in), NULL, b.peer, 0x1234, 0, ctx(0)));
	OK(fi_tsenddata(a.ep, out, sizeof(out), NULL, 0xfeedfacecafe, a.peer, 0x1234, ctx(1)));
	wait_for(&b, 1, 0);
	wait_for(&a, 1, 0);
	if (b.got[0].op_context != ctx(0) || b.got[0].tag != 0x1234 || b.got[0].len != 100 ||
	    b.got[0].data != 0xfeedfacecafe || b.src[0] != b.peer ||
	    (b.got[0].flags & (FI_TAGGED | FI_RECV | FI_REMOTE_CQ_DATA)) !=
		    (FI_TAGGED | FI_RECV | FI_REMOTE_CQ_DATA) || memcmp(in, out, 100))
		FAIL("tagged receive: context %p tag %#lx len %zu data %#lx src %lu flags %#lx",
		     b.got[0].op_context, (unsigned long)b.got[0].tag, b.got[0].len,
		     (unsigned long)b.got[0].data, (unsigned long)b.src[0],
		     (unsigned long)b.got[0].flags);
	if (a.got[0].op_context != ctx(1) || !(a.got[0].flags & FI_SEND))
		FAIL("send completion");
	printf("  tagged send with remote CQ data, directed receive: ok\n");

	reset();
	OK(fi_trecv(b.ep, small, sizeof(small), NULL, FI_ADDR_UNSPEC, 7, 0, ctx(2)));
	OK(fi_tsend(a.ep, out, sizeof(out), NULL, a.peer, 7, ctx(3)));
	wait_for(&b, 0, 1);
	wait_for(&a, 1, 0);
	if (b.err.err != FI_ETRUNC || b.err.olen != 90 || b.err.op_context != ctx(2) ||
	    memcmp(small, out, sizeof(small)))
		FAIL("truncation: err %d olen %zu", b.err.err, b.err.olen);
	printf("  truncated receive (FI_ETRUNC, olen): ok\n");
}

static void
peek_claim_cancel(void)
{
	struct fi_msg_tagged msg = { 0 };
	char out[50] = "claimed message", in[50];
	struct iovec iov = { in, sizeof(in) };
	struct fi_context pc;

	reset();
	OK(fi_tsend(a.ep, out, sizeof(out), NULL, a.peer, 0x77, ctx(4)));
	wait_for(&a, 1, 0);
	msg.tag = 0x77;
	msg.addr = FI_ADDR_UNSPEC;
	msg.context = &pc;
	do {
		reset();
		OK(fi_trecvmsg(b.ep, &msg, FI_PEEK | FI_CLAIM | FI_COMPLETION));
		while (b.ngot == 0 && b.nerr == 0)
			poll_both();
	} while (b.nerr && b.err.err == FI_ENOMSG);
	if (b.ngot != 1 || b.got[0].len != sizeof(out) || b.got[0].tag != 0x77)
		FAIL("peek: %d completions, len %zu", b.ngot, b.ngot ? b.got[0].len : 0);
	reset();
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	OK(fi_trecvmsg(b.ep, &msg, FI_CLAIM | FI_COMPLETION));
	wait_for(&b, 1, 0);
	if (b.got[0].op_context != &pc || strcmp(in, out) != 0)
		FAIL("claimed receive");
	reset();
	msg.msg_iov = NULL;
	msg.iov_count = 0;
	OK(fi_trecvmsg(b.ep, &msg, FI_PEEK | FI_COMPLETION));
	wait_for(&b, 0, 1);
	if (b.err.err != FI_ENOMSG)
		FAIL("peek of nothing: err %d", b.err.err);
	reset();
	OK(fi_trecv(b.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 0x999, 0, ctx(5)));
	OK(fi_cancel(&b.ep->fid, ctx(5)));
	wait_for(&b, 0, 1);
	if (b.err.err != FI_ECANCELED || b.err.op_context != ctx(5))
		FAIL("cancel: err %d", b.err.err);
	printf("  FI_PEEK/FI_CLAIM, FI_ENOMSG, fi_cancel: ok\n");
}

static void
rma(void)
{
	const size_t len = 300000;   /* several MaxTransferSize chunks */
	uint8_t *target = calloc(1, 1 << 20), *src = malloc(len), *back = malloc(len);
	uint8_t *reg = malloc(len);
	struct fid_mr *tmr, *amr;
	uint64_t base, key;
	size_t i;

	for (i = 0; i < len; i++)
		src[i] = (uint8_t)(i * 7 + 1);
	OK(fi_mr_reg(b.dom, target, 1 << 20, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &tmr, NULL));
	OK(fi_mr_reg(a.dom, reg, len, FI_READ | FI_WRITE, 0, 0, 0, &amr, NULL));
	key = fi_mr_key(tmr);
	base = (uintptr_t)target;

	reset();
	OK(fi_write(a.ep, src, len, NULL, a.peer, base + 100, key, ctx(6)));
	wait_for(&a, 1, 0);
	if (memcmp(target + 100, src, len) || target[99] || target[100 + len])
		FAIL("fi_write: the target differs");
	reset();
	OK(fi_read(a.ep, reg, len, fi_mr_desc(amr), a.peer, base + 100, key, ctx(7)));
	OK(fi_read(a.ep, back, len, NULL, a.peer, base + 100, key, ctx(8)));
	wait_for(&a, 2, 0);
	if (memcmp(reg, src, len) || memcmp(back, src, len))
		FAIL("fi_read: the data differs");
	reset();
	OK(fi_writedata(a.ep, src, 5000, NULL, 0xabcdef, a.peer, base + 700000, key, ctx(9)));
	wait_for(&a, 1, 0);
	wait_for(&b, 1, 0);
	if (memcmp(target + 700000, src, 5000) || b.got[0].data != 0xabcdef ||
	    b.got[0].len != 5000 || !(b.got[0].flags & FI_REMOTE_WRITE) ||
	    !(b.got[0].flags & FI_REMOTE_CQ_DATA))
		FAIL("fi_writedata: data %#lx len %zu flags %#lx", (unsigned long)b.got[0].data,
		     b.got[0].len, (unsigned long)b.got[0].flags);
	reset();
	OK(fi_inject_write(a.ep, "inject!", 8, a.peer, base + 900000, key));
	/* an inject has no completion: a read behind it sees its data */
	OK(fi_read(a.ep, back, 8, NULL, a.peer, base + 900000, key, ctx(10)));
	wait_for(&a, 1, 0);
	if (memcmp(back, "inject!", 8) || memcmp(target + 900000, "inject!", 8))
		FAIL("fi_inject_write");
	printf("  RMA: write, read (registered, unregistered), writedata, inject_write: ok\n");

	reset();
	OK(fi_read(a.ep, back, 64, NULL, a.peer, base, key + 12345, ctx(11)));
	wait_for(&a, 0, 1);
	if (a.err.op_context != ctx(11) || a.err.err == 0)
		FAIL("a read with a bad key: err %d", a.err.err);
	printf("  a read with a bad key completes in error (%s): ok\n", fi_strerror(a.err.err));
	OK(fi_close(&tmr->fid));
	OK(fi_close(&amr->fid));
	free(target);
	free(src);
	free(back);
	free(reg);
}

/* CPU time of the whole process: the provider's and the library's
 * threads count too. */
static double
cpu_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void
sread_sleeps(void)
{
	struct fi_cq_tagged_entry e;
	struct timespec t0, t1;
	double cpu0 = cpu_s(), cpu, wall;
	ssize_t n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	n = fi_cq_sread(a.cq, &e, 1, NULL, 300);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cpu = cpu_s() - cpu0;
	wall = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (n != -FI_EAGAIN || wall < 0.29)
		FAIL("fi_cq_sread: %zd after %.3f s", n, wall);
	if (cpu > 0.1)
		FAIL("fi_cq_sread used %.3f s of CPU in %.3f s", cpu, wall);
	printf("  fi_cq_sread sleeps: %.3f s waited, %.3f s of CPU: ok\n", wall, cpu);
}

int
main(void)
{
	struct fi_info *hints = fi_allocinfo(), *info;
	struct fid_fabric *fab;
	char name_a[64], name_b[64];
	size_t la = sizeof(name_a), lb = sizeof(name_b);

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_DIRECTED_RECV;
	hints->mode = FI_CONTEXT;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	hints->fabric_attr->prov_name = strdup("via");
	OK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	OK(fi_fabric(info->fabric_attr, &fab, NULL));
	side_open(fab, info, &a, FI_AV_TABLE);
	side_open(fab, info, &b, FI_AV_MAP);
	OK(fi_getname(&a.ep->fid, name_a, &la));
	OK(fi_getname(&b.ep->fid, name_b, &lb));
	if (fi_av_insert(a.av, name_b, 1, &a.peer, 0, NULL) != 1 ||
	    fi_av_insert(b.av, name_a, 1, &b.peer, 0, NULL) != 1)
		FAIL("fi_av_insert");
	printf("fi_check: %s, domain %s, names of %zu bytes\n", info->fabric_attr->prov_name,
	       info->domain_attr->name, la);
	tagged();
	peek_claim_cancel();
	rma();
	sread_sleeps();
	OK(fi_close(&a.ep->fid));
	OK(fi_close(&b.ep->fid));
	OK(fi_close(&a.av->fid));
	OK(fi_close(&b.av->fid));
	OK(fi_close(&a.cq->fid));
	OK(fi_close(&b.cq->fid));
	OK(fi_close(&a.dom->fid));
	OK(fi_close(&b.dom->fid));
	OK(fi_close(&fab->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
	printf("fi_check: all checks passed\n");
	return 0;
}
