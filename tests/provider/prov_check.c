/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * prov_check: what a VIPL provider must do, checked through vipl.h alone
 * (VIA 1.0 §2-§10), for each reliability level its NIC claims. It links
 * libvipl.so, which picks the provider by the NIC name (or VIPL_PROVIDER).
 *
 *   - the NIC: open, query (the minimums of §6.1.1, §3.4, §9.10.4), handles
 *     that are NULL, made up or stale give VIP_INVALID_PARAMETER;
 *   - protection tags and memory registration (§9.5, §9.8.4, §9.8.5);
 *   - VIs and CQs: creation and its attribute errors (§9.3.1), query, set,
 *     destroy (§9.3.2, §9.7);
 *   - connection (§4, §9.4): two VIs of this process (a thread waits and
 *     accepts, the main thread requests), rejection, attribute conflicts
 *     that leave the request valid, timeouts; and across two NICs;
 *   - Send/Receive (§2.3.1) of 0 B to MaxTransferSize with gather and
 *     scatter lists, MaxSegmentsPerDesc segments, immediate data;
 *   - RDMA Write (§2.3.2) with and without immediate data, RDMA Read, and
 *     their protection errors as each level reports them (§2.5 Table 1,
 *     §3.2.2, §9.9.1, §10.2);
 *   - descriptor errors (§10.2: format, local protection, length; a
 *     receive too small; no receive posted) per level;
 *   - completion queues, blocking waits with timeouts (sleeping, §6.4.2),
 *     disconnection (§4.2: flushed descriptors; the peer notices);
 *   - two processes (fork): a server and a client on NICs of their own.
 *
 * Output: "ok N - ..." / "not ok N - ..." lines; exit 0 only if all passed.
 *
 *   prov_check NIC                     everything
 *   prov_check NIC server DISC         the server of the two-process check;
 *                                      prints its address (hex) and waits
 *   prov_check NIC client ADDR DISC    its client, ADDR as the server printed
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <vipl.h>

#define WAIT_MS 10000u  /* what must happen happens well within this */
#define SHORT_MS 50u    /* what must not happen is waited for this long */
#define NDESC 256u      /* descriptor slots */
#define DESC_SEGS 257u  /* segments a slot holds: address + 256 data */
/* a descriptor slot: control segment and DESC_SEGS segments, 64-byte aligned (§6.1) */
#define DESC_SLOT \
	((sizeof(VIP_CONTROL_SEGMENT) + DESC_SEGS * sizeof(VIP_DESCRIPTOR_SEGMENT) + 63) & ~(size_t)63)
#define MAX_ADDR 320u   /* a VIP_NET_ADDRESS with room for host and discriminator */
#define PINGS 100u      /* messages of the two-process check */
#define PING_BUF (65536u + 64u)
/* a receive consumed by an RDMA Write with immediate data (§10.2 bits 18:16, 19) */
#define ST_REMOTE_WRITE_IMM \
	(VIP_STATUS_DONE | VIP_STATUS_OP_REMOTE_RDMA_WRITE | VIP_STATUS_IMMEDIATE)

/* ---- output -------------------------------------------------------------- */

static unsigned nb_tests, nb_failed;

static const char *
ret_name(VIP_RETURN r)
{
	static const char *const names[] = {
		"VIP_SUCCESS", "VIP_NOT_DONE", "VIP_INVALID_PARAMETER", "VIP_ERROR_RESOURCE",
		"VIP_TIMEOUT", "VIP_REJECT", "VIP_INVALID_RELIABILITY_LEVEL", "VIP_INVALID_MTU",
		"VIP_INVALID_QOS", "VIP_INVALID_PTAG", "VIP_INVALID_RDMAREAD", "VIP_DESCRIPTOR_ERROR",
		"VIP_INVALID_STATE", "VIP_ERROR_NAMESERVICE", "VIP_NO_MATCH",
	};

	return (unsigned)r < sizeof(names) / sizeof(names[0]) ? names[r] : "VIP_?";
}

static bool __attribute__((format(printf, 2, 3)))
check(bool cond, const char *fmt, ...)
{
	va_list ap;

	nb_tests++;
	if (!cond)
		nb_failed++;
	printf("%s %u - ", cond ? "ok" : "not ok", nb_tests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	return cond;
}

/* A call's return code is @p want. */
static bool __attribute__((format(printf, 3, 4)))
is(VIP_RETURN got, VIP_RETURN want, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (got == want)
		return check(true, "%s: %s", what, ret_name(want));
	return check(false, "%s: %s, expected %s", what, ret_name(got), ret_name(want));
}

static void __attribute__((format(printf, 1, 2)))
note(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* ---- the NIC, memory, descriptors --------------------------------------------- */

static const char *nic_name;
static VIP_NIC_HANDLE nic;
static VIP_NIC_ATTRIBUTES attr;
static VIP_PROTECTION_HANDLE ptag;

/* A registered buffer. */
struct mem {
	uint8_t *p;
	size_t len;
	VIP_MEM_HANDLE mh;
};

static struct mem descs;   /* NDESC descriptor slots */
static struct mem buf;     /* local buffers: sends gather from, receives scatter into */
static struct mem buf2;    /* more of them */
static struct mem target;  /* RDMA target: EnableRdmaWrite and EnableRdmaRead */
static struct mem closed;  /* no RDMA allowed */
static unsigned next_desc;

/* A buffer of @p len bytes registered on @p n, or p NULL. */
static struct mem
mem_new(VIP_NIC_HANDLE n, VIP_PROTECTION_HANDLE tag, size_t len, VIP_BOOLEAN w, VIP_BOOLEAN r)
{
	VIP_MEM_ATTRIBUTES ma = { .Ptag = tag, .EnableRdmaWrite = w, .EnableRdmaRead = r };
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct mem m = { .len = len };

	m.p = aligned_alloc(page, (len + page - 1) / page * page);
	if (m.p == NULL)
		return m;
	memset(m.p, 0, len);
	if (VipRegisterMem(n, m.p, len, &ma, &m.mh) != VIP_SUCCESS) {
		free(m.p);
		m.p = NULL;
	}
	return m;
}

static void
mem_free(VIP_NIC_HANDLE n, struct mem *m)
{
	if (m->p == NULL)
		return;
	VipDeregisterMem(n, m->p, m->mh);
	free(m->p);
	m->p = NULL;
}

/* A zeroed descriptor slot; slots are reused round robin. */
static VIP_DESCRIPTOR *
desc_new(void)
{
	VIP_DESCRIPTOR *d = (VIP_DESCRIPTOR *)(descs.p + (size_t)(next_desc++ % NDESC) * DESC_SLOT);

	memset(d, 0, DESC_SLOT);
	return d;
}

/* A buffer of a descriptor: address, length, memory handle. */
struct sg {
	void *p;
	uint32_t len;
	VIP_MEM_HANDLE mh;
};

/* A descriptor: @p control, @p imm, an address segment if @p raddr, then @p n data segments. */
static VIP_DESCRIPTOR *
desc_make(uint16_t control, uint32_t imm, const VIP_ADDRESS_SEGMENT *raddr, const struct sg *sg,
	  unsigned n)
{
	VIP_DESCRIPTOR *d = desc_new();
	VIP_DESCRIPTOR_SEGMENT *ds = (VIP_DESCRIPTOR_SEGMENT *)((uint8_t *)d + sizeof(d->CS));
	unsigned i, k = 0;

	d->CS.Control = control;
	d->CS.ImmediateData = imm;
	if (raddr != NULL)
		ds[k++].Remote = *raddr;
	for (i = 0; i < n; i++, k++) {
		ds[k].Local.Data.AddressBits = (uintptr_t)sg[i].p;
		ds[k].Local.Handle = sg[i].mh;
		ds[k].Local.Length = sg[i].len;
		d->CS.Length += sg[i].len;
	}
	d->CS.SegCount = (uint16_t)k;
	return d;
}

/* @p len bytes of @p m from @p off, as @p n segments of uneven sizes. */
static unsigned
split(const struct mem *m, size_t off, uint32_t len, unsigned n, struct sg *sg)
{
	unsigned i;
	uint32_t left = len;

	for (i = 0; i < n; i++) {
		uint32_t take = i == n - 1 ? left : left / (n - i) + (i % 2 ? 1 : 0);

		if (take > left)
			take = left;
		sg[i] = (struct sg){ .p = m->p + off, .len = take, .mh = m->mh };
		off += take;
		left -= take;
	}
	return n;
}

static uint8_t
pattern(size_t i, unsigned k)
{
	return (uint8_t)(i * 131 + k * 7 + 1);
}

static void
fill(uint8_t *p, size_t len, unsigned k)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pattern(i, k);
}

static bool
matches(const uint8_t *p, size_t len, unsigned k)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (p[i] != pattern(i, k))
			return false;
	}
	return true;
}

static bool
all(const uint8_t *p, size_t len, uint8_t v)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (p[i] != v)
			return false;
	}
	return true;
}

/* A handle that carries @p real's provider tag (bits 63:56) and garbage below. */
static void *
forged(void *real, uint64_t low)
{
	return (void *)(((uintptr_t)real & 0xff00000000000000ull) | (low & 0x00ffffffffffffffull));
}

/* ---- asynchronous errors ------------------------------------------------------ */

struct err_rec {
	VIP_ERROR_CODE code;
	VIP_VI_HANDLE vi;
	VIP_ULONG op;
	VIP_DESCRIPTOR *desc;
};

static struct err_rec errs[512];
static unsigned nb_errs;
static pthread_mutex_t errs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t errs_cond = PTHREAD_COND_INITIALIZER;

static void
err_handler(VIP_PVOID ctx, VIP_ERROR_DESCRIPTOR *e)
{
	(void)ctx;
	pthread_mutex_lock(&errs_lock);
	if (nb_errs < sizeof(errs) / sizeof(errs[0]))
		errs[nb_errs++] = (struct err_rec){
			.code = e->ErrorCode, .vi = e->ViHandle, .op = e->OpCode,
			.desc = e->DescriptorPtr,
		};
	pthread_cond_broadcast(&errs_cond);
	pthread_mutex_unlock(&errs_lock);
}

static int
err_find(VIP_ERROR_CODE code, VIP_VI_HANDLE vi)
{
	unsigned i;

	for (i = 0; i < nb_errs; i++) {
		if (errs[i].code == code && (vi == NULL || errs[i].vi == vi))
			return (int)i;
	}
	return -1;
}

/* Wait up to @p ms for error @p code of @p vi (any if NULL) and take it. */
static bool
err_take(VIP_ERROR_CODE code, VIP_VI_HANDLE vi, unsigned ms, struct err_rec *out)
{
	uint64_t deadline = now_ms() + ms;
	int i;

	pthread_mutex_lock(&errs_lock);
	while ((i = err_find(code, vi)) < 0 && now_ms() < deadline) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 5 * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&errs_cond, &errs_lock, &ts);
	}
	if (i >= 0) {
		if (out != NULL)
			*out = errs[i];
		memmove(&errs[i], &errs[i + 1], (nb_errs - (unsigned)i - 1) * sizeof(errs[0]));
		nb_errs--;
	}
	pthread_mutex_unlock(&errs_lock);
	return i >= 0;
}

static void
err_clear(void)
{
	pthread_mutex_lock(&errs_lock);
	nb_errs = 0;
	pthread_mutex_unlock(&errs_lock);
}

/* ---- VIs and connections --------------------------------------------------------- */

struct vi_opts {
	VIP_RELIABILITY_LEVEL level;
	VIP_ULONG mtu;           /* 0: the NIC's MaxTransferSize */
	VIP_BOOLEAN rdma_write;
	VIP_BOOLEAN rdma_read;
	VIP_CQ_HANDLE scq, rcq;
};

static VIP_VI_HANDLE
vi_new(VIP_NIC_HANDLE n, VIP_PROTECTION_HANDLE tag, const struct vi_opts *o)
{
	VIP_VI_ATTRIBUTES va = {
		.ReliabilityLevel = o->level,
		.MaxTransferSize = o->mtu != 0 ? o->mtu : attr.MaxTransferSize,
		.Ptag = tag,
		.EnableRdmaWrite = o->rdma_write,
		.EnableRdmaRead = o->rdma_read,
	};
	VIP_VI_HANDLE vi = NULL;
	VIP_RETURN r = VipCreateVi(n, &va, o->scq, o->rcq, &vi);

	if (r != VIP_SUCCESS)
		check(false, "VipCreateVi: %s", ret_name(r));
	return r == VIP_SUCCESS ? vi : NULL;
}

static VIP_VI_STATE
vi_state(VIP_VI_HANDLE vi)
{
	VIP_VI_ATTRIBUTES va;
	VIP_BOOLEAN se, re;
	VIP_VI_STATE st = (VIP_VI_STATE)-1;

	VipQueryVi(vi, &st, &va, &se, &re);
	return st;
}

/* Wait up to @p ms for @p vi to be in @p want; the state it is in. */
static VIP_VI_STATE
state_wait(VIP_VI_HANDLE vi, VIP_VI_STATE want, unsigned ms)
{
	uint64_t deadline = now_ms() + ms;
	VIP_VI_STATE st;

	while ((st = vi_state(vi)) != want && now_ms() < deadline)
		sleep_ms(2);
	return st;
}

union addr {
	VIP_NET_ADDRESS a;
	uint8_t raw[MAX_ADDR];
};

static void
addr_make(union addr *u, const VIP_UINT8 *host, VIP_UINT16 hlen, const char *disc)
{
	memset(u, 0, sizeof(*u));
	u->a.HostAddressLen = hlen;
	u->a.DiscriminatorLen = (VIP_UINT16)strlen(disc);
	memcpy(u->a.HostAddress, host, hlen);
	memcpy(u->a.HostAddress + hlen, disc, strlen(disc));
}

/* The server side of a connection, on a thread of its own. */
struct acceptor {
	pthread_t thread;
	VIP_NIC_HANDLE nic;
	union addr local, remote;
	VIP_VI_HANDLE vi;       /* accept with it */
	VIP_VI_HANDLE vi2;      /* if the first accept fails, with this one */
	bool reject;
	VIP_RETURN wait_rc, accept_rc, accept2_rc;
	VIP_VI_ATTRIBUTES remote_attr;
	VIP_CONN_HANDLE conn;
};

static void *
acceptor_main(void *arg)
{
	struct acceptor *ac = arg;

	ac->accept_rc = ac->accept2_rc = VIP_NOT_DONE;
	ac->wait_rc = VipConnectWait(ac->nic, &ac->local.a, WAIT_MS, &ac->remote.a,
				     &ac->remote_attr, &ac->conn);
	if (ac->wait_rc != VIP_SUCCESS)
		return NULL;
	if (ac->reject) {
		ac->accept_rc = VipConnectReject(ac->conn);
		return NULL;
	}
	ac->accept_rc = VipConnectAccept(ac->conn, ac->vi);
	if (ac->accept_rc != VIP_SUCCESS && ac->vi2 != NULL)
		ac->accept2_rc = VipConnectAccept(ac->conn, ac->vi2);
	return NULL;
}

static unsigned disc_serial;

/* Start an acceptor on @p n for a fresh discriminator; *srv is its address. */
static void
acceptor_start(struct acceptor *ac, VIP_NIC_HANDLE n, union addr *srv)
{
	VIP_NIC_ATTRIBUTES na;
	char disc[32];

	VipQueryNic(n, &na);
	snprintf(disc, sizeof(disc), "pc-%u-%u", (unsigned)getpid(), ++disc_serial);
	ac->nic = n;
	addr_make(&ac->local, na.LocalNicAddress, na.NicAddressLen, disc);
	*srv = ac->local;
	pthread_create(&ac->thread, NULL, acceptor_main, ac);
}

/* A requester's own address on @p n. */
static void
client_addr(VIP_NIC_HANDLE n, union addr *u)
{
	VIP_NIC_ATTRIBUTES na;
	char disc[32];

	VipQueryNic(n, &na);
	snprintf(disc, sizeof(disc), "cl-%u-%u", (unsigned)getpid(), disc_serial);
	addr_make(u, na.LocalNicAddress, na.NicAddressLen, disc);
}

/* Two connected VIs: a requested (on NIC na), b accepted (on nb). */
struct pair {
	VIP_VI_HANDLE a, b;
	VIP_RELIABILITY_LEVEL level;
};

static bool
pair_connect(struct pair *p, VIP_NIC_HANDLE na, VIP_NIC_HANDLE nb)
{
	struct acceptor ac = { .vi = p->b };
	union addr srv, cli;
	VIP_VI_ATTRIBUTES ra;
	VIP_RETURN r;

	acceptor_start(&ac, nb, &srv);
	client_addr(na, &cli);
	r = VipConnectRequest(p->a, &cli.a, &srv.a, WAIT_MS, &ra);
	pthread_join(ac.thread, NULL);
	if (r != VIP_SUCCESS || ac.wait_rc != VIP_SUCCESS || ac.accept_rc != VIP_SUCCESS) {
		check(false, "connect: request %s, wait %s, accept %s", ret_name(r),
		      ret_name(ac.wait_rc), ret_name(ac.accept_rc));
		return false;
	}
	return true;
}

/* A connected pair of this NIC with options @p oa, @p ob. */
static bool
pair_open(struct pair *p, const struct vi_opts *oa, const struct vi_opts *ob)
{
	p->level = oa->level;
	p->a = vi_new(nic, ptag, oa);
	p->b = vi_new(nic, ptag, ob);
	return p->a != NULL && p->b != NULL && pair_connect(p, nic, nic);
}

/* Dequeue everything completed; flushed ones come after a disconnect. */
static void
drain(VIP_VI_HANDLE vi)
{
	VIP_DESCRIPTOR *d;

	while (VipSendDone(vi, &d) == VIP_SUCCESS)
		;
	while (VipRecvDone(vi, &d) == VIP_SUCCESS)
		;
}

static void
vi_drop(VIP_VI_HANDLE vi)
{
	VIP_RETURN r;

	if (vi == NULL)
		return;
	VipDisconnect(vi);
	drain(vi);
	r = VipDestroyVi(vi);
	if (r != VIP_SUCCESS)
		check(false, "VipDestroyVi after disconnect and drain: %s", ret_name(r));
}

static void
pair_close(struct pair *p)
{
	vi_drop(p->a);
	vi_drop(p->b);
	p->a = p->b = NULL;
}

/* Post @p d on @p vi's send queue (or receive queue if @p recv). */
static bool
post(VIP_VI_HANDLE vi, VIP_DESCRIPTOR *d, bool recv)
{
	VIP_RETURN r = recv ? VipPostRecv(vi, d, descs.mh) : VipPostSend(vi, d, descs.mh);

	if (r != VIP_SUCCESS)
		check(false, "VipPost%s: %s", recv ? "Recv" : "Send", ret_name(r));
	return r == VIP_SUCCESS;
}

/* Wait for the head of a queue of @p vi: it must be @p d. */
static bool
done(VIP_VI_HANDLE vi, bool recv, VIP_DESCRIPTOR *d, const char *what)
{
	VIP_DESCRIPTOR *got = NULL;
	VIP_RETURN r = recv ? VipRecvWait(vi, WAIT_MS, &got) : VipSendWait(vi, WAIT_MS, &got);

	if (r != VIP_SUCCESS || got != d)
		return check(false, "%s: %s completes: %s, descriptor %p (posted %p)", what,
			     recv ? "receive" : "send", ret_name(r), (void *)got, (void *)d);
	return true;
}

/* The head of a queue is @p d, with exactly @p status. */
static bool
done_status(VIP_VI_HANDLE vi, bool recv, VIP_DESCRIPTOR *d, uint32_t status, const char *what)
{
	if (!done(vi, recv, d, what))
		return false;
	return check(d->CS.Status == status, "%s: Status 0x%08x (expected 0x%08x)", what,
		     d->CS.Status, status);
}

/* The head of a queue is @p d, done with error bit(s) @p err among its errors. */
static bool
done_error(VIP_VI_HANDLE vi, bool recv, VIP_DESCRIPTOR *d, uint32_t err, const char *what)
{
	if (!done(vi, recv, d, what))
		return false;
	return check((d->CS.Status & VIP_STATUS_DONE) && (d->CS.Status & err) == err,
		     "%s: Status 0x%08x has DONE and 0x%x", what, d->CS.Status, err);
}

static bool
levels_has(VIP_RELIABILITY_LEVEL l)
{
	return (attr.ReliabilityLevelSupport & l) != 0;
}

static const char *
level_name(VIP_RELIABILITY_LEVEL l)
{
	return l == VIP_SERVICE_UNRELIABLE ? "U"
	       : l == VIP_SERVICE_RELIABLE_DELIVERY ? "RD" : "RR";
}

/* Both ends of a broken connection are in the Error state (§2.5.2, §5.4). */
static void
expect_broken(struct pair *p, const char *what)
{
	VIP_VI_STATE sa = state_wait(p->a, VIP_STATE_ERROR, WAIT_MS);
	VIP_VI_STATE sb = state_wait(p->b, VIP_STATE_ERROR, WAIT_MS);

	check(sa == VIP_STATE_ERROR && sb == VIP_STATE_ERROR,
	      "%s: the connection breaks, both VIs in the Error state (%d, %d)", what, sa, sb);
	err_take(VIP_ERROR_CONN_LOST, p->a, WAIT_MS, NULL);
	err_take(VIP_ERROR_CONN_LOST, p->b, WAIT_MS, NULL);
}

/* One message a -> b of @p len bytes: gathered from @p ns segments, scattered into @p nr. */
static bool
send_one(struct pair *p, uint32_t len, unsigned ns, unsigned nr, bool imm, unsigned k)
{
	struct sg ss[DESC_SEGS], rs[DESC_SEGS];
	VIP_DESCRIPTOR *s, *r;
	char what[96];
	uint32_t rlen = len + 17;
	bool ok;

	snprintf(what, sizeof(what), "%s: %u B, %u gather / %u scatter segments%s",
		 level_name(p->level), len, ns, nr, imm ? ", immediate data" : "");
	memset(buf2.p, 0xee, rlen);
	r = desc_make(0, 0, NULL, rs, split(&buf2, 0, rlen, nr, rs));
	fill(buf.p, len, k);
	s = desc_make(imm ? VIP_CONTROL_IMMEDIATE : 0, 0xabc00000u + k, NULL, ss,
		      split(&buf, 0, len, ns, ss));
	if (!post(p->b, r, true) || !post(p->a, s, false))
		return false;
	ok = done_status(p->a, false, s, VIP_STATUS_DONE | VIP_STATUS_OP_SEND, what) &&
	     check(s->CS.Length == len, "%s: send Length %u", what, s->CS.Length);
	ok = done_status(p->b, true, r, VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE |
				(imm ? VIP_STATUS_IMMEDIATE : 0), what) && ok;
	ok = check(r->CS.Length == len && matches(buf2.p, len, k) &&
		   all(buf2.p + len, rlen - len, 0xee) &&
		   (!imm || r->CS.ImmediateData == 0xabc00000u + k),
		   "%s: Length %u, the data, nothing past it%s", what, r->CS.Length,
		   imm ? ", the immediate data" : "") && ok;
	return ok;
}

/* ---- the checks ------------------------------------------------------------------ */

static void
test_nic(void)
{
	VIP_NIC_ATTRIBUTES a;
	VIP_NIC_HANDLE bad;
	VIP_RETURN r;

	note("the NIC (§9.2, §9.8.1, §9.10.4)");
	is(VipOpenNic(NULL, &bad), VIP_INVALID_PARAMETER, "VipOpenNic(NULL name)");
	is(VipOpenNic(nic_name, NULL), VIP_INVALID_PARAMETER, "VipOpenNic(NULL handle)");
	r = VipOpenNic(nic_name, &nic);
	if (!is(r, VIP_SUCCESS, "VipOpenNic(%s)", nic_name))
		exit(1);
	is(VipQueryNic(nic, &attr), VIP_SUCCESS, "VipQueryNic");
	is(VipQueryNic(nic, NULL), VIP_INVALID_PARAMETER, "VipQueryNic(NULL attributes)");
	is(VipQueryNic(NULL, &a), VIP_INVALID_PARAMETER, "VipQueryNic(NULL NIC)");
	is(VipQueryNic(forged(nic, 0x00123456789abcull), &a), VIP_INVALID_PARAMETER,
	   "VipQueryNic(a made-up handle of the provider)");
	is(VipQueryNic(forged(nic, (uintptr_t)nic + 1), &a), VIP_INVALID_PARAMETER,
	   "VipQueryNic(the NIC handle + 1)");
	note("%s: address %u B, MaxTransferSize %lu, MaxSegmentsPerDesc %lu, levels 0x%x, "
	     "RDMA Read %d", attr.Name, attr.NicAddressLen, attr.MaxTransferSize,
	     attr.MaxSegmentsPerDesc, attr.ReliabilityLevelSupport, attr.RDMAReadSupport);
	check(attr.NicAddressLen > 0 && attr.NicAddressLen <= 64 && attr.LocalNicAddress != NULL,
	      "a NIC address (%u bytes)", attr.NicAddressLen);
	check(attr.MaxTransferSize >= 32768, "MaxTransferSize %lu >= 32 KiB (§6.1.1.2)",
	      attr.MaxTransferSize);
	check(attr.MaxSegmentsPerDesc >= 252, "MaxSegmentsPerDesc %lu >= 252 (§6.1.1.1)",
	      attr.MaxSegmentsPerDesc);
	check(attr.MaxDiscriminatorLen >= 16, "MaxDiscriminatorLen %u >= 16",
	      attr.MaxDiscriminatorLen);
	check(attr.MaxCQEntries >= 1024, "MaxCQEntries %lu >= 1024 (§3.4)", attr.MaxCQEntries);
	check(attr.MaxPtags >= attr.MaxVI, "MaxPtags %lu >= MaxVI %lu (§3.2.2.1)", attr.MaxPtags,
	      attr.MaxVI);
	check(attr.ReliabilityLevelSupport & VIP_SERVICE_UNRELIABLE,
	      "Unreliable Delivery is supported (§2.5: all NICs)");
	is(VipErrorCallback(nic, NULL, err_handler), VIP_SUCCESS, "VipErrorCallback");
}

static void
test_memory(void)
{
	VIP_PROTECTION_HANDLE t2;
	VIP_MEM_ATTRIBUTES ma = { 0 }, q;
	VIP_MEM_HANDLE mh = 1, mh1;
	uint8_t *p;

	note("protection tags, memory registration (§9.5, §9.8.4, §9.8.5)");
	is(VipCreatePtag(nic, &ptag), VIP_SUCCESS, "VipCreatePtag");
	is(VipCreatePtag(nic, NULL), VIP_INVALID_PARAMETER, "VipCreatePtag(NULL)");
	is(VipCreatePtag(forged(nic, 77), &t2), VIP_INVALID_PARAMETER,
	   "VipCreatePtag on a made-up NIC handle");
	is(VipCreatePtag(nic, &t2), VIP_SUCCESS, "a second tag");
	check(t2 != ptag, "the two tags differ");

	p = aligned_alloc(4096, 8192);
	ma.Ptag = t2;
	is(VipRegisterMem(nic, NULL, 100, &ma, &mh), VIP_INVALID_PARAMETER,
	   "VipRegisterMem(NULL address)");
	is(VipRegisterMem(nic, p, 0, &ma, &mh), VIP_INVALID_PARAMETER,
	   "VipRegisterMem(Length 0) (§9.5.3)");
	is(VipRegisterMem(nic, p, 100, NULL, &mh), VIP_INVALID_PARAMETER,
	   "VipRegisterMem(NULL attributes)");
	ma.Ptag = forged(ptag, (uintptr_t)ptag + 12345);
	is(VipRegisterMem(nic, p, 100, &ma, &mh), VIP_INVALID_PTAG,
	   "VipRegisterMem with a tag that is none");
	ma.Ptag = t2;
	ma.EnableRdmaWrite = VIP_TRUE;
	is(VipRegisterMem(nic, p + 10, 5000, &ma, &mh1), VIP_SUCCESS,
	   "VipRegisterMem, any alignment and length");
	mh = mh1;
	memset(&q, 0xff, sizeof(q));
	is(VipQueryMem(nic, p + 10, mh, &q), VIP_SUCCESS, "VipQueryMem");
	check(q.Ptag == t2 && q.EnableRdmaWrite == VIP_TRUE && q.EnableRdmaRead == VIP_FALSE,
	      "VipQueryMem: the attributes registered");
	is(VipQueryMem(nic, p, mh, &q), VIP_INVALID_PARAMETER, "VipQueryMem at another address");
	is(VipDestroyPtag(nic, t2), VIP_ERROR_RESOURCE,
	   "VipDestroyPtag of a tag a region carries (§9.5.2)");
	ma.Ptag = ptag;
	ma.EnableRdmaWrite = VIP_FALSE;
	ma.EnableRdmaRead = attr.RDMAReadSupport;
	is(VipSetMemAttributes(nic, p + 10, mh, &ma), VIP_SUCCESS, "VipSetMemAttributes");
	is(VipQueryMem(nic, p + 10, mh, &q), VIP_SUCCESS, "VipQueryMem after the change");
	check(q.Ptag == ptag && q.EnableRdmaWrite == VIP_FALSE &&
	      q.EnableRdmaRead == attr.RDMAReadSupport, "the new attributes");
	ma.Ptag = forged(ptag, 999999);
	is(VipSetMemAttributes(nic, p + 10, mh, &ma), VIP_INVALID_PTAG,
	   "VipSetMemAttributes with a tag that is none");
	is(VipDestroyPtag(nic, t2), VIP_SUCCESS, "VipDestroyPtag once the region moved away");
	is(VipDestroyPtag(nic, t2), VIP_INVALID_PARAMETER, "VipDestroyPtag of a destroyed tag");
	ma.Ptag = t2;
	is(VipRegisterMem(nic, p, 100, &ma, &mh), VIP_INVALID_PTAG,
	   "VipRegisterMem with a destroyed tag");
	is(VipRegisterMem(nic, p, 100, &(VIP_MEM_ATTRIBUTES){ .Ptag = ptag }, &mh), VIP_SUCCESS,
	   "a second region over the same pages (§3.2.1: several handles)");
	is(VipDeregisterMem(nic, p, mh + 1000), VIP_INVALID_PARAMETER,
	   "VipDeregisterMem with a handle that is none");
	is(VipDeregisterMem(nic, p + 1, mh), VIP_INVALID_PARAMETER,
	   "VipDeregisterMem at another address");
	is(VipDeregisterMem(forged(nic, 5), p, mh), VIP_INVALID_PARAMETER,
	   "VipDeregisterMem on a made-up NIC handle");
	is(VipDeregisterMem(nic, p, mh), VIP_SUCCESS, "VipDeregisterMem");
	is(VipDeregisterMem(nic, p, mh), VIP_INVALID_PARAMETER, "VipDeregisterMem twice");
	is(VipQueryMem(nic, p, mh, &q), VIP_INVALID_PARAMETER, "VipQueryMem of a region that went");
	is(VipQueryMem(nic, p + 10, 0, &q), VIP_INVALID_PARAMETER, "VipQueryMem with handle 0");
	is(VipQueryMem(nic, p + 10, mh1, &q), VIP_SUCCESS, "the region at p + 10 is still there");
	is(VipDeregisterMem(nic, p + 10, mh1), VIP_SUCCESS, "and goes too");
	free(p);

	/* the buffers of the checks that follow */
	descs = mem_new(nic, ptag, NDESC * DESC_SLOT, VIP_FALSE, VIP_FALSE);
	buf = mem_new(nic, ptag, 2 * attr.MaxTransferSize + 4096, VIP_FALSE, VIP_FALSE);
	buf2 = mem_new(nic, ptag, 2 * attr.MaxTransferSize + 4096, VIP_FALSE, VIP_FALSE);
	target = mem_new(nic, ptag, attr.MaxTransferSize + 4096, VIP_TRUE, attr.RDMAReadSupport);
	closed = mem_new(nic, ptag, 65536, VIP_FALSE, VIP_FALSE);
	if (!check(descs.p && buf.p && buf2.p && target.p && closed.p, "the test's buffers register"))
		exit(1);
}

static void
test_vi_cq(void)
{
	struct vi_opts o = { .level = VIP_SERVICE_UNRELIABLE };
	VIP_VI_ATTRIBUTES va = { .ReliabilityLevel = VIP_SERVICE_UNRELIABLE,
				 .MaxTransferSize = attr.MaxTransferSize, .Ptag = ptag };
	VIP_VI_ATTRIBUTES qa;
	VIP_VI_HANDLE vi = NULL, v2;
	VIP_CQ_HANDLE cq = NULL, c2;
	VIP_DESCRIPTOR *d;
	VIP_BOOLEAN se, re, rq;
	VIP_VI_STATE st;
	VIP_RETURN r;

	note("VIs and CQs (§9.3, §9.7, §9.8.2, §9.8.3)");
	is(VipCreateVi(nic, NULL, NULL, NULL, &vi), VIP_INVALID_PARAMETER,
	   "VipCreateVi(NULL attributes)");
	is(VipCreateVi(nic, &va, NULL, NULL, NULL), VIP_INVALID_PARAMETER, "VipCreateVi(NULL handle)");
	va.ReliabilityLevel = 0;
	is(VipCreateVi(nic, &va, NULL, NULL, &vi), VIP_INVALID_RELIABILITY_LEVEL, "level 0");
	va.ReliabilityLevel = VIP_SERVICE_UNRELIABLE | VIP_SERVICE_RELIABLE_DELIVERY;
	is(VipCreateVi(nic, &va, NULL, NULL, &vi), VIP_INVALID_RELIABILITY_LEVEL, "two levels");
	if (!levels_has(VIP_SERVICE_RELIABLE_RECEPTION)) {
		va.ReliabilityLevel = VIP_SERVICE_RELIABLE_RECEPTION;
		is(VipCreateVi(nic, &va, NULL, NULL, &vi), VIP_INVALID_RELIABILITY_LEVEL,
		   "Reliable Reception, which the NIC does not claim");
	}
	va.ReliabilityLevel = VIP_SERVICE_UNRELIABLE;
	va.MaxTransferSize = attr.MaxTransferSize + 1;
	is(VipCreateVi(nic, &va, NULL, NULL, &vi), VIP_INVALID_MTU, "MaxTransferSize above the NIC's");
	va.MaxTransferSize = attr.MaxTransferSize;
	va.Ptag = forged(ptag, 4242);
	is(VipCreateVi(nic, &va, NULL, NULL, &vi), VIP_INVALID_PTAG, "a tag that is none");
	va.Ptag = ptag;
	if (!attr.RDMAReadSupport) {
		va.EnableRdmaRead = VIP_TRUE;
		is(VipCreateVi(nic, &va, NULL, NULL, &vi), VIP_INVALID_RDMAREAD,
		   "EnableRdmaRead without RDMA Read support");
		va.EnableRdmaRead = VIP_FALSE;
	}
	is(VipCreateVi(nic, &va, forged(nic, 31337), NULL, &vi), VIP_INVALID_PARAMETER,
	   "a made-up CQ handle");

	is(VipCreateCQ(nic, 0, &cq), VIP_INVALID_PARAMETER, "VipCreateCQ(0 entries)");
	is(VipCreateCQ(nic, 16, NULL), VIP_INVALID_PARAMETER, "VipCreateCQ(NULL handle)");
	is(VipCreateCQ(nic, 16, &cq), VIP_SUCCESS, "VipCreateCQ(16)");
	is(VipCQDone(cq, &v2, &rq), VIP_NOT_DONE, "VipCQDone on an empty CQ");
	is(VipCQWait(cq, SHORT_MS, &v2, &rq), VIP_TIMEOUT, "VipCQWait(%u ms) on an empty CQ", SHORT_MS);
	is(VipCQDone(forged(cq, 3), &v2, &rq), VIP_INVALID_PARAMETER, "VipCQDone(made-up handle)");

	is(VipCreateVi(nic, &va, cq, NULL, &vi), VIP_SUCCESS, "VipCreateVi, send queue on a CQ");
	is(VipQueryVi(vi, &st, &qa, &se, &re), VIP_SUCCESS, "VipQueryVi");
	check(st == VIP_STATE_IDLE && se && re, "a new VI is Idle with empty queues (§5.1)");
	check(qa.ReliabilityLevel == VIP_SERVICE_UNRELIABLE &&
	      qa.MaxTransferSize == attr.MaxTransferSize &&
	      qa.Ptag == ptag && !qa.EnableRdmaWrite && !qa.EnableRdmaRead,
	      "VipQueryVi: the attributes it was created with");
	is(VipSendWait(vi, SHORT_MS, &d), VIP_ERROR_RESOURCE,
	   "VipSendWait on a send queue that completes into a CQ (§9.6.3)");
	is(VipRecvWait(vi, SHORT_MS, &d), VIP_TIMEOUT, "VipRecvWait(%u ms), nothing posted", SHORT_MS);
	is(VipSendDone(vi, &d), VIP_NOT_DONE, "VipSendDone, nothing posted");
	is(VipDestroyCQ(cq), VIP_ERROR_RESOURCE, "VipDestroyCQ while a VI uses it (§9.7.2)");
	is(VipPostSend(vi, NULL, descs.mh), VIP_INVALID_PARAMETER, "VipPostSend(NULL descriptor)");
	va.MaxTransferSize = 4096;
	va.EnableRdmaWrite = VIP_TRUE;
	is(VipSetViAttributes(vi, &va), VIP_SUCCESS, "VipSetViAttributes while Idle");
	VipQueryVi(vi, &st, &qa, &se, &re);
	check(qa.MaxTransferSize == 4096 && qa.EnableRdmaWrite, "the new attributes");
	va.QoS = 12345;
	r = VipSetViAttributes(vi, &va);
	check(r == VIP_INVALID_QOS || r == VIP_SUCCESS, "VipSetViAttributes with a QoS: %s",
	      ret_name(r));
	va.QoS = 0;
	va.MaxTransferSize = 0;
	is(VipSetViAttributes(vi, &va), VIP_INVALID_MTU, "VipSetViAttributes, MaxTransferSize 0");
	va.MaxTransferSize = attr.MaxTransferSize;

	/* a receive posted while Idle stays (§5.1) and blocks the destruction (§9.3.2) */
	d = desc_make(0, 0, NULL, &(struct sg){ buf.p, 64, buf.mh }, 1);
	post(vi, d, true);
	is(VipRecvDone(vi, &d), VIP_NOT_DONE, "a receive posted while Idle is not processed");
	is(VipDestroyVi(vi), VIP_ERROR_RESOURCE, "VipDestroyVi with a receive posted (§9.3.2)");
	is(VipDisconnect(vi), VIP_SUCCESS, "VipDisconnect of an Idle VI");
	is(VipRecvDone(vi, &d), VIP_SUCCESS, "it flushed the receive queue");
	check(d->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR | VIP_STATUS_OP_RECEIVE),
	      "Status 0x%08x: DONE, flushed, receive", d->CS.Status);
	/* a send posted while not Connected completes in error (§5.1, §6.2) */
	d = desc_make(0, 0, NULL, &(struct sg){ buf.p, 64, buf.mh }, 1);
	post(vi, d, false);
	is(VipCQWait(cq, WAIT_MS, &v2, &rq), VIP_SUCCESS, "the CQ has an entry");
	check(v2 == vi && !rq, "for the VI's send queue");
	is(VipSendDone(vi, &d), VIP_SUCCESS, "a send posted to an Idle VI completes");
	check((d->CS.Status & VIP_STATUS_DONE) && (d->CS.Status & VIP_STATUS_ERROR_MASK),
	      "in error (Status 0x%08x)", d->CS.Status);
	is(VipDestroyVi(vi), VIP_SUCCESS, "VipDestroyVi");
	is(VipDestroyVi(vi), VIP_INVALID_PARAMETER, "VipDestroyVi of a destroyed VI");
	is(VipQueryVi(vi, &st, &qa, &se, &re), VIP_INVALID_PARAMETER, "VipQueryVi of a destroyed VI");
	is(VipPostRecv(vi, d, descs.mh), VIP_INVALID_PARAMETER, "VipPostRecv on a destroyed VI");
	is(VipPostSend(forged(vi, 0xdead), d, descs.mh), VIP_INVALID_PARAMETER,
	   "VipPostSend on a made-up VI handle");
	is(VipDestroyCQ(cq), VIP_SUCCESS, "VipDestroyCQ once its VI is gone");
	is(VipCQDone(cq, &v2, &rq), VIP_INVALID_PARAMETER, "VipCQDone on a destroyed CQ");
	is(VipCreateCQ(nic, 4, &c2), VIP_SUCCESS, "another CQ");
	v2 = vi_new(nic, ptag, &o);
	is(VipDestroyVi(v2), VIP_SUCCESS, "a VI without CQs");
	is(VipDestroyCQ(c2), VIP_SUCCESS, "and the CQ");
}

static void
test_connect(VIP_RELIABILITY_LEVEL lv)
{
	struct vi_opts o = { .level = lv, .rdma_write = VIP_TRUE };
	struct acceptor ac;
	union addr srv, cli, nowhere;
	struct pair p = { .level = lv };
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;
	VIP_DESCRIPTOR *d[3], *got;
	VIP_VI_HANDLE other = NULL, small;
	const char *L = level_name(lv);
	unsigned i;
	VIP_RETURN r;

	note("%s: connection management (§4, §5, §9.4)", L);
	p.a = vi_new(nic, ptag, &o);
	p.b = vi_new(nic, ptag, &o);
	client_addr(nic, &cli);
	addr_make(&srv, attr.LocalNicAddress, attr.NicAddressLen, "nobody-waits-here");
	is(VipConnectWait(nic, &srv.a, 0, &nowhere.a, &ra, &conn), VIP_TIMEOUT,
	   "%s: VipConnectWait(timeout 0), no request", L);
	is(VipConnectWait(nic, &srv.a, SHORT_MS, &nowhere.a, &ra, &conn), VIP_TIMEOUT,
	   "%s: VipConnectWait(%u ms), no request", L, SHORT_MS);
	is(VipConnectWait(nic, NULL, SHORT_MS, &nowhere.a, &ra, &conn), VIP_INVALID_PARAMETER,
	   "%s: VipConnectWait(NULL address)", L);
	is(VipConnectRequest(p.a, &cli.a, &srv.a, 0, &ra), VIP_TIMEOUT,
	   "%s: VipConnectRequest(timeout 0) (§9.4.4)", L);
	r = VipConnectRequest(p.a, &cli.a, &srv.a, 300, &ra);
	check(r == VIP_TIMEOUT || r == VIP_NO_MATCH,
	      "%s: VipConnectRequest to a discriminator nobody waits on: %s", L, ret_name(r));
	check(vi_state(p.a) == VIP_STATE_IDLE, "%s: the VI is Idle again (§5.2)", L);

	/* rejected (§9.4.3) */
	memset(&ac, 0, sizeof(ac));
	ac.reject = true;
	acceptor_start(&ac, nic, &srv);
	client_addr(nic, &cli);
	r = VipConnectRequest(p.a, &cli.a, &srv.a, WAIT_MS, &ra);
	pthread_join(ac.thread, NULL);
	is(ac.accept_rc, VIP_SUCCESS, "%s: VipConnectReject", L);
	is(r, VIP_REJECT, "%s: the requester is rejected", L);
	check(vi_state(p.a) == VIP_STATE_IDLE, "%s: the rejected VI is Idle", L);
	is(VipConnectAccept(ac.conn, p.b), VIP_INVALID_PARAMETER,
	   "%s: the connection handle is consumed by the rejection", L);

	/* an attribute conflict fails the accept, the request stays (§9.4.2) */
	if (levels_has(VIP_SERVICE_UNRELIABLE) && levels_has(VIP_SERVICE_RELIABLE_DELIVERY)) {
		struct vi_opts oo = o;

		oo.level = lv == VIP_SERVICE_UNRELIABLE ? VIP_SERVICE_RELIABLE_DELIVERY
							: VIP_SERVICE_UNRELIABLE;
		other = vi_new(nic, ptag, &oo);
		memset(&ac, 0, sizeof(ac));
		ac.vi = other;
		ac.vi2 = p.b;
		acceptor_start(&ac, nic, &srv);
		client_addr(nic, &cli);
		r = VipConnectRequest(p.a, &cli.a, &srv.a, WAIT_MS, &ra);
		pthread_join(ac.thread, NULL);
		is(ac.accept_rc, VIP_INVALID_RELIABILITY_LEVEL,
		   "%s: VipConnectAccept with a VI of another level", L);
		is(ac.accept2_rc, VIP_SUCCESS,
		   "%s: then with a matching VI: the request stayed valid", L);
		is(r, VIP_SUCCESS, "%s: VipConnectRequest", L);
		check(vi_state(other) == VIP_STATE_IDLE, "%s: the VI of the failed accept is Idle", L);
		vi_drop(other);
		pair_close(&p);
		p.a = vi_new(nic, ptag, &o);
		p.b = vi_new(nic, ptag, &o);
	}
	{
		struct vi_opts os = o;

		os.mtu = attr.MaxTransferSize / 2;
		small = vi_new(nic, ptag, &os);
		memset(&ac, 0, sizeof(ac));
		ac.vi = small;
		ac.vi2 = p.b;
		acceptor_start(&ac, nic, &srv);
		client_addr(nic, &cli);
		r = VipConnectRequest(p.a, &cli.a, &srv.a, WAIT_MS, &ra);
		pthread_join(ac.thread, NULL);
		is(ac.accept_rc, VIP_INVALID_MTU,
		   "%s: VipConnectAccept with another MaxTransferSize", L);
		is(ac.accept2_rc, VIP_SUCCESS, "%s: then with a matching VI", L);
		is(r, VIP_SUCCESS, "%s: VipConnectRequest", L);
		vi_drop(small);
	}
	check(ac.wait_rc == VIP_SUCCESS && ac.remote.a.HostAddressLen == attr.NicAddressLen &&
	      memcmp(ac.remote.a.HostAddress, attr.LocalNicAddress, attr.NicAddressLen) == 0 &&
	      ac.remote.a.DiscriminatorLen == cli.a.DiscriminatorLen &&
	      memcmp(ac.remote.a.HostAddress + attr.NicAddressLen,
		     cli.a.HostAddress + cli.a.HostAddressLen, cli.a.DiscriminatorLen) == 0,
	      "%s: VipConnectWait gives the requester's address and discriminator", L);
	check(ac.remote_attr.ReliabilityLevel == lv &&
	      ac.remote_attr.MaxTransferSize == attr.MaxTransferSize && ac.remote_attr.EnableRdmaWrite,
	      "%s: and its VI's attributes", L);
	check(ra.ReliabilityLevel == lv && ra.MaxTransferSize == attr.MaxTransferSize &&
	      ra.EnableRdmaWrite && !ra.EnableRdmaRead,
	      "%s: VipConnectRequest gives the accepting VI's attributes", L);
	check(vi_state(p.a) == VIP_STATE_CONNECTED && vi_state(p.b) == VIP_STATE_CONNECTED,
	      "%s: both VIs Connected (§5.3)", L);
	is(VipConnectAccept(ac.conn, p.b), VIP_INVALID_PARAMETER,
	   "%s: the connection handle is consumed by the accept", L);
	is(VipConnectRequest(p.a, &cli.a, &srv.a, WAIT_MS, &ra), VIP_INVALID_STATE,
	   "%s: VipConnectRequest on a Connected VI (§5)", L);
	is(VipDestroyVi(p.a), VIP_ERROR_RESOURCE, "%s: VipDestroyVi of a Connected VI", L);
	{
		VIP_VI_ATTRIBUTES qa;
		VIP_BOOLEAN se, re;
		VIP_VI_STATE st;

		VipQueryVi(p.a, &st, &qa, &se, &re);
		is(VipSetViAttributes(p.a, &qa), VIP_INVALID_STATE,
		   "%s: VipSetViAttributes of a Connected VI (§9.8.2)", L);
	}
	send_one(&p, 100, 1, 1, false, 1);

	/* disconnection flushes what is posted (§4.2, §9.4.5) */
	for (i = 0; i < 3; i++) {
		d[i] = desc_make(0, 0, NULL, &(struct sg){ buf2.p + i * 128, 128, buf2.mh }, 1);
		post(p.b, d[i], true);
	}
	is(VipDisconnect(p.b), VIP_SUCCESS, "%s: VipDisconnect", L);
	check(vi_state(p.b) == VIP_STATE_IDLE, "%s: the VI is Idle after VipDisconnect", L);
	for (i = 0; i < 3; i++) {
		r = VipRecvDone(p.b, &got);
		check(r == VIP_SUCCESS && got == d[i] &&
		      got->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR |
					 VIP_STATUS_OP_RECEIVE),
		      "%s: receive %u flushed, in order (Status 0x%08x)", L, i,
		      r == VIP_SUCCESS ? got->CS.Status : 0);
	}
	is(VipRecvDone(p.b, &got), VIP_NOT_DONE, "%s: nothing more", L);
	check(state_wait(p.a, VIP_STATE_ERROR, WAIT_MS) != VIP_STATE_CONNECTED,
	      "%s: the peer notices: no longer Connected (§4.2)", L);
	err_take(VIP_ERROR_CONN_LOST, p.a, SHORT_MS, NULL);
	d[0] = desc_make(0, 0, NULL, &(struct sg){ buf.p, 8, buf.mh }, 1);
	post(p.a, d[0], false);
	done_error(p.a, false, d[0], 0, "a send on the peer");
	check(d[0]->CS.Status & VIP_STATUS_ERROR_MASK, "%s: completes in error (0x%08x)", L,
	      d[0]->CS.Status);
	pair_close(&p);
	err_clear();
}

static void
test_sendrecv(VIP_RELIABILITY_LEVEL lv)
{
	struct vi_opts o = { .level = lv };
	static const uint32_t sizes[] = { 0, 1, 7, 64, 1000, 4096, 4097, 65535, 65536 };
	struct pair p;
	unsigned i, segs;
	uint32_t len, max = (uint32_t)attr.MaxTransferSize;

	note("%s: Send/Receive (§2.3.1, §6.1.1, §10)", level_name(lv));
	if (!pair_open(&p, &o, &o))
		return;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		if (sizes[i] <= max)
			send_one(&p, sizes[i], 1, 1, false, i);
	}
	send_one(&p, max, 1, 1, false, 20);
	send_one(&p, max, 3, 5, true, 21);
	send_one(&p, max - 1, 2, 1, false, 22);
	send_one(&p, 0, 0, 0, true, 23);
	send_one(&p, 12345, 4, 3, true, 24);
	/* the most segments a descriptor must take (§6.1.1.1: 252 at least) */
	segs = attr.MaxSegmentsPerDesc < DESC_SEGS - 1 ? (unsigned)attr.MaxSegmentsPerDesc
						       : DESC_SEGS - 1;
	len = segs * 3 + 11;
	send_one(&p, len, segs, segs, false, 25);
	/* zero-length segments among the others are valid (§6.1.1.1) */
	{
		struct sg ss[4] = {
			{ buf.p, 0, buf.mh }, { buf.p, 10, buf.mh }, { buf.p + 10, 0, buf.mh },
			{ buf.p + 10, 20, buf.mh },
		};
		VIP_DESCRIPTOR *r = desc_make(0, 0, NULL, &(struct sg){ buf2.p, 100, buf2.mh }, 1);
		VIP_DESCRIPTOR *s = desc_make(0, 0, NULL, ss, 4);

		fill(buf.p, 30, 30);
		post(p.b, r, true);
		post(p.a, s, false);
		done_status(p.a, false, s, VIP_STATUS_DONE | VIP_STATUS_OP_SEND, "zero-length segments");
		done_status(p.b, true, r, VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE,
			    "zero-length segments");
		check(r->CS.Length == 30 && matches(buf2.p, 30, 30), "zero-length segments: the data");
	}
	/* many in flight, both directions, completing in order (§6.3.1.1) */
	{
		VIP_DESCRIPTOR *s[32], *r[32], *got;
		bool order = true;
		unsigned k;

		for (k = 0; k < 32; k++) {
			r[k] = desc_make(0, 0, NULL,
					 &(struct sg){ buf2.p + k * 2048, 2048, buf2.mh }, 1);
			post(p.b, r[k], true);
		}
		for (k = 0; k < 32; k++) {
			fill(buf.p + k * 2048, 1000 + k, 100 + k);
			s[k] = desc_make(VIP_CONTROL_IMMEDIATE, k, NULL,
					 &(struct sg){ buf.p + k * 2048, 1000 + k, buf.mh }, 1);
			post(p.a, s[k], false);
		}
		for (k = 0; k < 32; k++) {
			if (VipRecvWait(p.b, WAIT_MS, &got) != VIP_SUCCESS || got != r[k] ||
			    got->CS.Length != 1000 + k || got->CS.ImmediateData != k ||
			    !matches(buf2.p + k * 2048, 1000 + k, 100 + k))
				order = false;
			if (VipSendWait(p.a, WAIT_MS, &got) != VIP_SUCCESS || got != s[k])
				order = false;
		}
		check(order, "%s: 32 messages in flight arrive whole and in order", level_name(lv));
	}
	pair_close(&p);
}

/* An RDMA Write of @p len bytes at @p off of target, @p imm or not. */
static VIP_DESCRIPTOR *
rdma(uint16_t op, uint16_t imm_ctl, uint32_t imm, void *remote, VIP_MEM_HANDLE rh, const struct sg *sg,
     unsigned n)
{
	VIP_ADDRESS_SEGMENT ra = { .Handle = rh };

	ra.Data.AddressBits = (uintptr_t)remote;
	return desc_make(op | imm_ctl, imm, &ra, sg, n);
}

static void
test_rdma_write(VIP_RELIABILITY_LEVEL lv)
{
	struct vi_opts oa = { .level = lv }, ob = { .level = lv, .rdma_write = VIP_TRUE };
	const char *L = level_name(lv);
	uint32_t max = (uint32_t)attr.MaxTransferSize;
	struct sg sg[4];
	struct err_rec e;
	VIP_DESCRIPTOR *d, *r, *got;
	struct pair p;
	int cell;

	note("%s: RDMA Write (§2.3.2, §3.2.2, §10.3)", L);
	if (!pair_open(&p, &oa, &ob))
		return;
	memset(target.p, 0, target.len);
	fill(buf.p, max, 40);
	d = rdma(VIP_CONTROL_OP_RDMAWRITE, 0, 0, target.p + 100, target.mh, sg,
		 split(&buf, 0, max, 4, sg));
	post(p.a, d, false);
	done_status(p.a, false, d, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_WRITE,
		    "RDMA Write of MaxTransferSize, gathered from 4 segments");
	check(d->CS.Length == max, "%s: its Length %u", L, d->CS.Length);
	/* completed "in flight" (Table 1): the bytes land soon after */
	{
		uint64_t deadline = now_ms() + WAIT_MS;

		while (!matches(target.p + 100, max, 40) && now_ms() < deadline)
			sleep_ms(1);
	}
	check(matches(target.p + 100, max, 40) && all(target.p, 100, 0) &&
	      all(target.p + 100 + max, target.len - 100 - max, 0),
	      "%s: the data is in the target, nothing around it", L);
	is(VipRecvDone(p.b, &got), VIP_NOT_DONE,
	   "%s: a Write without immediate data consumed no receive", L);

	/* with immediate data: it consumes a receive, Length 0 (§2.3.2, §10.2) */
	r = desc_make(0, 0, NULL, &(struct sg){ buf2.p, 64, buf2.mh }, 1);
	post(p.b, r, true);
	fill(buf.p, 3000, 42);
	d = rdma(VIP_CONTROL_OP_RDMAWRITE, VIP_CONTROL_IMMEDIATE, 0x5eed, target.p + 7, target.mh,
		 &(struct sg){ buf.p, 3000, buf.mh }, 1);
	post(p.a, d, false);
	done_status(p.a, false, d, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_WRITE,
		    "RDMA Write with immediate data");
	done_status(p.b, true, r, ST_REMOTE_WRITE_IMM,
		    "the receive it consumed");
	check(r->CS.ImmediateData == 0x5eed && r->CS.Length == 0 && matches(target.p + 7, 3000, 42),
	      "%s: immediate data, Length 0, the data in place", L);
	/* 0 bytes, with immediate data */
	r = desc_make(0, 0, NULL, NULL, 0);
	post(p.b, r, true);
	d = rdma(VIP_CONTROL_OP_RDMAWRITE, VIP_CONTROL_IMMEDIATE, 77, target.p, target.mh, NULL, 0);
	post(p.a, d, false);
	done_status(p.a, false, d, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_WRITE, "a 0-byte RDMA Write");
	done_status(p.b, true, r, ST_REMOTE_WRITE_IMM,
		    "its immediate data");
	pair_close(&p);

	/* refused by the target: a handle that is none, a region without
	 * EnableRdmaWrite, a VI without it, a range past the region (§3.2.2, §6.3.2) */
	for (cell = 0; cell < 4; cell++) {
		static const char *const why[] = {
			"a handle that is none", "a region without EnableRdmaWrite",
			"a VI without EnableRdmaWrite", "a range past the region's end",
		};
		uint8_t *to = cell == 1 ? closed.p : target.p + (cell == 3 ? target.len - 10 : 0);
		VIP_MEM_HANDLE th = cell == 0 ? target.mh + 1000 : cell == 1 ? closed.mh : target.mh;
		char what[128];

		snprintf(what, sizeof(what), "%s: RDMA Write refused, %s", L, why[cell]);
		if (!pair_open(&p, &oa, cell == 2 ? &oa : &ob))
			return;
		memset(target.p, 0x33, target.len);
		memset(closed.p, 0x33, closed.len);
		fill(buf.p, 100, 50);
		d = rdma(VIP_CONTROL_OP_RDMAWRITE, 0, 0, to, th, &(struct sg){ buf.p, 100, buf.mh }, 1);
		post(p.a, d, false);
		if (lv == VIP_SERVICE_RELIABLE_RECEPTION) {
			/* completed on the remote end: the error is in the descriptor */
			done_error(p.a, false, d, VIP_STATUS_RDMA_PROT_ERROR, what);
			expect_broken(&p, what);
		} else {
			/* "in flight" when completed (Table 1): reported
			 * asynchronously (§9.9.1 RDMA Write Protection Error) */
			done_status(p.a, false, d, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_WRITE, what);
			check(err_take(VIP_ERROR_RDMAW_PROT, p.a, WAIT_MS, &e) &&
			      e.op == VIP_STATUS_OP_RDMA_WRITE,
			      "%s: VIP_ERROR_RDMAW_PROT at the initiator", what);
			if (lv == VIP_SERVICE_RELIABLE_DELIVERY) {
				expect_broken(&p, what);
			} else {
				/* §2.5.1: Unreliable reports, the connection stays */
				check(vi_state(p.a) == VIP_STATE_CONNECTED &&
				      vi_state(p.b) == VIP_STATE_CONNECTED,
				      "%s: both still Connected (§2.5.1)", what);
				send_one(&p, 33, 1, 1, false, 51);
			}
		}
		check(all(target.p, target.len, 0x33) && all(closed.p, closed.len, 0x33),
		      "%s: no byte moved", what);
		pair_close(&p);
		err_clear();
	}
}

static void
test_rdma_read(VIP_RELIABILITY_LEVEL lv)
{
	struct vi_opts oa = { .level = lv, .rdma_read = attr.RDMAReadSupport },
		       ob = { .level = lv, .rdma_read = attr.RDMAReadSupport };
	const char *L = level_name(lv);
	uint32_t max = (uint32_t)attr.MaxTransferSize;
	VIP_DESCRIPTOR *d;
	struct sg sg[3];
	struct pair p;
	int cell;

	if (!attr.RDMAReadSupport)
		return;
	note("%s: RDMA Read (§2.3.2, §2.5.1, §3.2.2)", L);
	if (!pair_open(&p, &oa, &ob))
		return;
	if (lv == VIP_SERVICE_UNRELIABLE) {
		/* §2.5.1: "Posting an RDMA Read request on an Unreliable VI will
		 * result in a Descriptor format error" */
		d = rdma(VIP_CONTROL_OP_RDMAREAD, 0, 0, target.p, target.mh,
			 &(struct sg){ buf2.p, 10, buf2.mh }, 1);
		post(p.a, d, false);
		done_error(p.a, false, d, VIP_STATUS_FORMAT_ERROR, "U: an RDMA Read");
		pair_close(&p);
		return;
	}
	fill(target.p, target.len, 60);
	memset(buf2.p, 0xee, max + 10);
	d = rdma(VIP_CONTROL_OP_RDMAREAD, VIP_CONTROL_IMMEDIATE, 1, target.p + 5, target.mh, sg,
		 split(&buf2, 0, max, 3, sg));
	post(p.a, d, false);
	done_status(p.a, false, d, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_READ,
		    "RDMA Read of MaxTransferSize, scattered into 3 segments");
	check(d->CS.Length == max && memcmp(buf2.p, target.p + 5, max) == 0 &&
	      all(buf2.p + max, 10, 0xee), "%s: Length %u, the data, nothing past it", L, d->CS.Length);
	/* a 0-byte read, then a fenced send behind a read (§6.3.1.2) */
	d = rdma(VIP_CONTROL_OP_RDMAREAD, 0, 0, target.p, target.mh, NULL, 0);
	post(p.a, d, false);
	done_status(p.a, false, d, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_READ, "a 0-byte RDMA Read");
	{
		VIP_DESCRIPTOR *rd, *s, *r, *got;

		memset(buf2.p, 0, 4096);
		r = desc_make(0, 0, NULL, &(struct sg){ buf2.p + 8192, 64, buf2.mh }, 1);
		post(p.b, r, true);
		rd = rdma(VIP_CONTROL_OP_RDMAREAD, 0, 0, target.p, target.mh,
			  &(struct sg){ buf2.p, 4096, buf2.mh }, 1);
		s = desc_make(VIP_CONTROL_QFENCE, 0, NULL, &(struct sg){ buf.p, 64, buf.mh }, 1);
		post(p.a, rd, false);
		post(p.a, s, false);
		done_status(p.a, false, rd, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_READ, "a read");
		done_status(p.a, false, s, VIP_STATUS_DONE | VIP_STATUS_OP_SEND,
			    "a fenced send behind it");
		check(VipRecvWait(p.b, WAIT_MS, &got) == VIP_SUCCESS && got == r &&
		      memcmp(buf2.p, target.p, 4096) == 0, "%s: both done, the read's data in place", L);
	}
	pair_close(&p);

	for (cell = 0; cell < 3; cell++) {
		static const char *const why[] = {
			"a handle that is none", "a region without EnableRdmaRead",
			"a VI without EnableRdmaRead",
		};
		struct vi_opts no = ob;
		char what[128];

		no.rdma_read = VIP_FALSE;
		snprintf(what, sizeof(what), "%s: RDMA Read refused, %s", L, why[cell]);
		if (!pair_open(&p, &oa, cell == 2 ? &no : &ob))
			return;
		memset(buf2.p, 0x44, 200);
		d = rdma(VIP_CONTROL_OP_RDMAREAD, 0, 0, cell == 1 ? closed.p : target.p,
			 cell == 0 ? target.mh + 999 : cell == 1 ? closed.mh : target.mh,
			 &(struct sg){ buf2.p, 100, buf2.mh }, 1);
		post(p.a, d, false);
		/* §10.2 bit 7: in the descriptor; the connection breaks (§2.5.2) */
		done_error(p.a, false, d, VIP_STATUS_RDMA_PROT_ERROR, what);
		check(all(buf2.p, 200, 0x44), "%s: nothing read", what);
		expect_broken(&p, what);
		pair_close(&p);
		err_clear();
	}
}

static void
test_errors(VIP_RELIABILITY_LEVEL lv)
{
	struct vi_opts o = { .level = lv };
	const char *L = level_name(lv);
	bool unrel = lv == VIP_SERVICE_UNRELIABLE;
	VIP_DESCRIPTOR *s, *r, *got;
	struct err_rec e;
	struct pair p;
	char what[128];

	note("%s: descriptor errors (§2.5, §6.4.1, §9.9.1, §10.2)", L);
	/* a receive too small: LENGTH_ERROR, Length 0 (§6.4.1) */
	snprintf(what, sizeof(what), "%s: a receive too small", L);
	if (!pair_open(&p, &o, &o))
		return;
	r = desc_make(0, 0, NULL, &(struct sg){ buf2.p, 100, buf2.mh }, 1);
	s = desc_make(0, 0, NULL, &(struct sg){ buf.p, 101, buf.mh }, 1);
	post(p.b, r, true);
	post(p.a, s, false);
	done_error(p.b, true, r, VIP_STATUS_LENGTH_ERROR, what);
	check((r->CS.Status & VIP_STATUS_OP_MASK) == VIP_STATUS_OP_RECEIVE,
	      "%s: on the receive op", what);
	if (unrel) {
		done_status(p.a, false, s, VIP_STATUS_DONE | VIP_STATUS_OP_SEND, what);
		check(vi_state(p.a) == VIP_STATE_CONNECTED && vi_state(p.b) == VIP_STATE_CONNECTED,
		      "%s: the connection stays (§2.5.1)", what);
		send_one(&p, 100, 1, 1, false, 70);
	} else {
		expect_broken(&p, what);
	}
	pair_close(&p);
	err_clear();

	/* no receive posted: the message is dropped (§2.3.1, §9.9.1) */
	snprintf(what, sizeof(what), "%s: no receive posted", L);
	if (!pair_open(&p, &o, &o))
		return;
	fill(buf.p, 50, 71);
	s = desc_make(0, 0, NULL, &(struct sg){ buf.p, 50, buf.mh }, 1);
	post(p.a, s, false);
	if (lv == VIP_SERVICE_RELIABLE_RECEPTION)
		done_error(p.a, false, s, VIP_STATUS_REMOTE_DESC_ERROR, what);  /* §10.2 bit 8 */
	else
		done_status(p.a, false, s, VIP_STATUS_DONE | VIP_STATUS_OP_SEND, what);
	check(err_take(VIP_ERROR_RECVQ_EMPTY, p.b, WAIT_MS, &e),
	      "%s: VIP_ERROR_RECVQ_EMPTY at the receiver", what);
	if (unrel) {
		check(vi_state(p.b) == VIP_STATE_CONNECTED, "%s: the connection stays", what);
		/* the next message takes the next receive: the dropped one is gone */
		send_one(&p, 60, 1, 1, false, 72);
	} else {
		expect_broken(&p, what);
	}
	pair_close(&p);
	err_clear();

	if (!unrel)
		return;
	/* the sender's own errors, on Unreliable where they do not break (§2.5.1) */
	if (!pair_open(&p, &o, &o))
		return;
	s = desc_make(0x0010, 0, NULL, &(struct sg){ buf.p, 10, buf.mh }, 1);
	post(p.a, s, false);
	done_error(p.a, false, s, VIP_STATUS_FORMAT_ERROR, "U: a reserved Control bit");
	s = desc_make(VIP_CONTROL_OP_RESERVED, 0, NULL, &(struct sg){ buf.p, 10, buf.mh }, 1);
	post(p.a, s, false);
	done_error(p.a, false, s, VIP_STATUS_FORMAT_ERROR, "U: operation 11b");
	s = desc_make(0, 0, NULL, &(struct sg){ buf.p, 10, buf.mh }, 1);
	s->CS.Reserved = 1;
	post(p.a, s, false);
	done_error(p.a, false, s, VIP_STATUS_FORMAT_ERROR, "U: the Reserved field set");
	s = desc_make(0, 0, NULL, &(struct sg){ buf.p, 10, buf.mh }, 1);
	s->CS.Length = 11;
	post(p.a, s, false);
	done_error(p.a, false, s, VIP_STATUS_LENGTH_ERROR, "U: Length is not the segments' sum");
	s = desc_make(0, 0, NULL, &(struct sg){ buf.p, (uint32_t)attr.MaxTransferSize + 1, buf.mh }, 1);
	post(p.a, s, false);
	done_error(p.a, false, s, VIP_STATUS_LENGTH_ERROR, "U: more than MaxTransferSize");
	s = desc_make(0, 0, NULL, &(struct sg){ buf.p, 10, buf.mh + 777 }, 1);
	post(p.a, s, false);
	done_error(p.a, false, s, VIP_STATUS_PROTECTION_ERROR,
		   "U: a data segment of a handle that is none");
	s = desc_make(0, 0, NULL, &(struct sg){ buf.p + buf.len - 5, 10, buf.mh }, 1);
	post(p.a, s, false);
	done_error(p.a, false, s, VIP_STATUS_PROTECTION_ERROR, "U: a data segment past its region");
	/* a receive is looked at when a message comes for it */
	r = desc_make(VIP_CONTROL_OP_RDMAWRITE, 0, NULL, &(struct sg){ buf2.p, 10, buf2.mh }, 1);
	post(p.b, r, true);
	s = desc_make(0, 0, NULL, &(struct sg){ buf.p, 10, buf.mh }, 1);
	post(p.a, s, false);
	done_error(p.b, true, r, VIP_STATUS_FORMAT_ERROR, "U: an RDMA Write posted as a receive");
	done_status(p.a, false, s, VIP_STATUS_DONE | VIP_STATUS_OP_SEND, "U: the send it met");
	/* a descriptor in memory the handle does not name: §9.9.1 Post Descriptor Error */
	s = desc_make(0, 0, NULL, &(struct sg){ buf.p, 10, buf.mh }, 1);
	check(VipPostSend(p.a, s, descs.mh + 4321) == VIP_SUCCESS &&
	      err_take(VIP_ERROR_POST_DESC, p.a, WAIT_MS, &e),
	      "U: a descriptor with a wrong memory handle: VIP_ERROR_POST_DESC");
	{
		uint64_t deadline = now_ms() + WAIT_MS;
		VIP_RETURN rr;

		while ((rr = VipSendDone(p.a, &got)) == VIP_NOT_DONE && now_ms() < deadline)
			sleep_ms(1);
		check(rr == VIP_SUCCESS && got == s, "U: and it can be dequeued");
	}
	check(vi_state(p.a) == VIP_STATE_CONNECTED, "U: after all that, still Connected");
	send_one(&p, 20, 1, 1, true, 73);
	pair_close(&p);
	err_clear();
}

static void *
late_send(void *arg)
{
	struct pair *p = arg;
	VIP_DESCRIPTOR *s;

	sleep_ms(100);
	fill(buf.p, 500, 80);
	s = desc_make(0, 0, NULL, &(struct sg){ buf.p, 500, buf.mh }, 1);
	post(p->a, s, false);
	return NULL;
}

static long
cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000L +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000L;
}

static void
test_cq_waits(VIP_RELIABILITY_LEVEL lv)
{
	const char *L = level_name(lv);
	VIP_CQ_HANDLE ca, cb;
	struct vi_opts oa = { .level = lv }, ob = { .level = lv };
	VIP_DESCRIPTOR *s, *r, *got;
	VIP_VI_HANDLE which;
	VIP_BOOLEAN rq;
	struct pair p;
	pthread_t t;
	uint64_t t0;
	long c0;
	unsigned k;

	note("%s: completion queues and blocking waits (§2.4, §6.4.2, §9.6)", L);
	/* blocking waits sleep: no CPU while nothing comes (§6.4.1.1) */
	if (!pair_open(&p, &oa, &ob))
		return;
	t0 = now_ms();
	is(VipRecvWait(p.b, SHORT_MS, &got), VIP_TIMEOUT, "%s: VipRecvWait(%u ms), nothing sent", L,
	   SHORT_MS);
	check(now_ms() - t0 >= SHORT_MS - 1, "%s: it waited the timeout (%" PRIu64 " ms)", L,
	      now_ms() - t0);
	r = desc_make(0, 0, NULL, &(struct sg){ buf2.p, 1000, buf2.mh }, 1);
	post(p.b, r, true);
	c0 = cpu_ms();
	is(VipRecvWait(p.b, 500, &got), VIP_TIMEOUT, "%s: VipRecvWait(500 ms), a receive posted", L);
	check(cpu_ms() - c0 < 150, "%s: the process used %ld ms of CPU in those 500 ms", L,
	      cpu_ms() - c0);
	pthread_create(&t, NULL, late_send, &p);
	is(VipRecvWait(p.b, VIP_INFINITE, &got), VIP_SUCCESS,
	   "%s: VipRecvWait(VIP_INFINITE) returns once a send arrives", L);
	check(got == r && r->CS.Length == 500 && matches(buf2.p, 500, 80), "%s: with the data", L);
	pthread_join(t, NULL);
	is(VipSendWait(p.a, WAIT_MS, &got), VIP_SUCCESS, "%s: VipSendWait", L);
	is(VipSendWait(p.a, 0, &got), VIP_TIMEOUT, "%s: VipSendWait(0), nothing posted", L);
	pair_close(&p);

	is(VipCreateCQ(nic, 8, &ca), VIP_SUCCESS, "%s: a CQ for one VI's both queues", L);
	is(VipCreateCQ(nic, 64, &cb), VIP_SUCCESS, "%s: one for the other's receive queue", L);
	oa.scq = oa.rcq = ca;
	ob.rcq = cb;
	if (!pair_open(&p, &oa, &ob))
		return;
	for (k = 0; k < 4; k++) {
		r = desc_make(0, 0, NULL, &(struct sg){ buf2.p + k * 100, 100, buf2.mh }, 1);
		post(p.b, r, true);
	}
	for (k = 0; k < 4; k++) {
		fill(buf.p + k * 100, 100, 90 + k);
		s = desc_make(0, 0, NULL, &(struct sg){ buf.p + k * 100, 100, buf.mh }, 1);
		post(p.a, s, false);
	}
	for (k = 0; k < 4; k++) {
		bool ok = VipCQWait(ca, WAIT_MS, &which, &rq) == VIP_SUCCESS && which == p.a && !rq &&
			  VipSendDone(p.a, &got) == VIP_SUCCESS &&
			  got->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_OP_SEND);

		ok = VipCQWait(cb, WAIT_MS, &which, &rq) == VIP_SUCCESS && which == p.b && rq &&
		     VipRecvDone(p.b, &got) == VIP_SUCCESS && got->CS.Length == 100 &&
		     matches(buf2.p + k * 100, 100, 90 + k) && ok;
		check(ok, "%s: completion %u: CQ entries name the VI and queue; the descriptor "
		      "dequeues", L, k);
	}
	is(VipCQDone(ca, &which, &rq), VIP_NOT_DONE, "%s: VipCQDone: nothing more", L);
	is(VipCQWait(cb, SHORT_MS, &which, &rq), VIP_TIMEOUT, "%s: VipCQWait(%u ms): nothing more", L,
	   SHORT_MS);
	is(VipRecvWait(p.a, SHORT_MS, &got), VIP_ERROR_RESOURCE,
	   "%s: VipRecvWait on a receive queue on a CQ (§9.6.6)", L);
	is(VipSendWait(p.b, SHORT_MS, &got), VIP_TIMEOUT,
	   "%s: VipSendWait on the other's send queue, which has no CQ", L);
	is(VipDestroyCQ(ca), VIP_ERROR_RESOURCE, "%s: VipDestroyCQ while in use", L);
	pair_close(&p);
	is(VipDestroyCQ(ca), VIP_SUCCESS, "%s: VipDestroyCQ", L);
	is(VipDestroyCQ(cb), VIP_SUCCESS, "%s: VipDestroyCQ, the entries of the flush not taken", L);
}

static void
test_two_nics(void)
{
	struct vi_opts o = { .level = VIP_SERVICE_UNRELIABLE };
	VIP_NIC_HANDLE nic2;
	VIP_PROTECTION_HANDLE tag2;
	VIP_NIC_ATTRIBUTES a2;
	struct pair p = { .level = VIP_SERVICE_UNRELIABLE };
	VIP_VI_HANDLE stale;

	note("two NICs of one process");
	if (!is(VipOpenNic(nic_name, &nic2), VIP_SUCCESS, "VipOpenNic(%s) again", nic_name))
		return;
	VipQueryNic(nic2, &a2);
	check(nic2 != nic, "another handle");
	VipCreatePtag(nic2, &tag2);
	is(VipCreateVi(nic2, &(VIP_VI_ATTRIBUTES){ .ReliabilityLevel = VIP_SERVICE_UNRELIABLE,
						    .MaxTransferSize = a2.MaxTransferSize,
						    .Ptag = ptag }, NULL, NULL, &stale),
	   VIP_INVALID_PTAG, "a tag of the other NIC");
	p.a = vi_new(nic, ptag, &o);
	p.b = vi_new(nic2, tag2, &o);
	if (pair_connect(&p, nic, nic2)) {
		/* b's buffers are on nic2: the receive goes through a region of its own */
		struct mem m = mem_new(nic2, tag2, 4096, VIP_FALSE, VIP_FALSE);
		VIP_DESCRIPTOR *r, *s, *got;
		struct mem d2 = mem_new(nic2, tag2, 4096, VIP_FALSE, VIP_FALSE);

		r = (VIP_DESCRIPTOR *)d2.p;
		memset(r, 0, 64);
		r->CS.SegCount = 1;
		r->DS[0].Local.Data.Address = m.p;
		r->DS[0].Local.Handle = m.mh;
		r->DS[0].Local.Length = 4096;
		is(VipPostRecv(p.b, r, d2.mh), VIP_SUCCESS, "a receive on the second NIC");
		fill(buf.p, 3000, 95);
		s = desc_make(0, 0, NULL, &(struct sg){ buf.p, 3000, buf.mh }, 1);
		post(p.a, s, false);
		check(VipRecvWait(p.b, WAIT_MS, &got) == VIP_SUCCESS && got == r &&
		      r->CS.Length == 3000 && matches(m.p, 3000, 95),
		      "a message from a VI of one NIC to a VI of the other");
		VipSendWait(p.a, WAIT_MS, &got);
		VipDisconnect(p.b);
		mem_free(nic2, &m);
		mem_free(nic2, &d2);
	}
	stale = p.b;
	vi_drop(p.a);
	is(VipCloseNic(nic2), VIP_SUCCESS, "VipCloseNic of the second NIC, a VI still on it");
	is(VipQueryNic(nic2, &a2), VIP_INVALID_PARAMETER, "its handle is stale");
	is(VipDestroyVi(stale), VIP_INVALID_PARAMETER, "so is its VI's");
	is(VipCloseNic(nic2), VIP_INVALID_PARAMETER, "VipCloseNic twice");
	err_clear();
}

/* ---- two processes ------------------------------------------------------------------ */

static int
hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/*
 * The server of the two-process check on NIC @p name: writes its address
 * to @p out (hex, one line), accepts one connection on @p disc, echoes
 * PINGS messages, and waits for the client to hang up. @return 0 if all
 * went as it should
 */
static int
peer_server(const char *name, const char *disc, FILE *out)
{
	struct vi_opts o = { .level = VIP_SERVICE_RELIABLE_DELIVERY };
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;
	union addr local, remote;
	VIP_DESCRIPTOR *r, *s, *got;
	VIP_VI_HANDLE vi;
	unsigned i, k, bad = 0;

	nic_name = name;
	if (VipOpenNic(name, &nic) != VIP_SUCCESS || VipQueryNic(nic, &attr) != VIP_SUCCESS ||
	    VipErrorCallback(nic, NULL, err_handler) != VIP_SUCCESS ||
	    VipCreatePtag(nic, &ptag) != VIP_SUCCESS)
		return 1;
	if (!levels_has(o.level))
		o.level = VIP_SERVICE_UNRELIABLE;
	descs = mem_new(nic, ptag, NDESC * DESC_SLOT, VIP_FALSE, VIP_FALSE);
	buf = mem_new(nic, ptag, 2 * PING_BUF, VIP_FALSE, VIP_FALSE);
	vi = vi_new(nic, ptag, &o);
	if (descs.p == NULL || buf.p == NULL || vi == NULL)
		return 1;
	for (i = 0; i < attr.NicAddressLen; i++)
		fprintf(out, "%02x", attr.LocalNicAddress[i]);
	fprintf(out, "\n");
	fflush(out);
	r = desc_make(0, 0, NULL, &(struct sg){ buf.p, PING_BUF, buf.mh }, 1);
	post(vi, r, true);
	addr_make(&local, attr.LocalNicAddress, attr.NicAddressLen, disc);
	if (VipConnectWait(nic, &local.a, WAIT_MS, &remote.a, &ra, &conn) != VIP_SUCCESS ||
	    VipConnectAccept(conn, vi) != VIP_SUCCESS)
		return 1;
	for (k = 0; k < PINGS; k++) {
		uint8_t *in = buf.p + (k % 2) * PING_BUF, *next = buf.p + (k % 2 ? 0 : PING_BUF);
		uint32_t len;

		if (VipRecvWait(vi, WAIT_MS, &got) != VIP_SUCCESS || got != r ||
		    got->CS.Status != (VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE | VIP_STATUS_IMMEDIATE) ||
		    got->CS.ImmediateData != k)
			return 1;
		len = got->CS.Length;
		if (!matches(in, len, k))
			bad++;
		/* the next message may follow the echo at once: its receive
		 * goes first (§2.3.1: receives are the consumer's flow control) */
		r = desc_make(0, 0, NULL, &(struct sg){ next, PING_BUF, buf.mh }, 1);
		post(vi, r, true);
		s = desc_make(VIP_CONTROL_IMMEDIATE, k, NULL, &(struct sg){ in, len, buf.mh }, 1);
		post(vi, s, false);
		if (VipSendWait(vi, WAIT_MS, &got) != VIP_SUCCESS || got != s ||
		    got->CS.Status != (VIP_STATUS_DONE | VIP_STATUS_OP_SEND))
			return 1;
	}
	/* the client hangs up (§4.2: the provider tells us) */
	if (state_wait(vi, VIP_STATE_ERROR, WAIT_MS) == VIP_STATE_CONNECTED)
		return 1;
	VipDisconnect(vi);
	drain(vi);
	if (VipDestroyVi(vi) != VIP_SUCCESS)
		return 1;
	mem_free(nic, &buf);
	mem_free(nic, &descs);
	VipDestroyPtag(nic, ptag);
	return VipCloseNic(nic) == VIP_SUCCESS && bad == 0 ? 0 : 1;
}

/* The client: connects to @p hexaddr, @p disc, and pings. Checks as it goes. */
static void
peer_client(const char *name, const char *hexaddr, const char *disc)
{
	struct vi_opts o = { .level = VIP_SERVICE_RELIABLE_DELIVERY };
	uint8_t host[64];
	union addr srv, cli;
	VIP_VI_ATTRIBUTES ra;
	VIP_DESCRIPTOR *r, *s, *got;
	VIP_VI_HANDLE vi;
	unsigned i, k, good = 0;
	size_t hlen = strlen(hexaddr) / 2;
	VIP_RETURN rc;

	nic_name = name;
	if (!is(VipOpenNic(name, &nic), VIP_SUCCESS, "two processes: the client opens %s", name))
		return;
	VipQueryNic(nic, &attr);
	VipErrorCallback(nic, NULL, err_handler);
	VipCreatePtag(nic, &ptag);
	if (!levels_has(o.level))
		o.level = VIP_SERVICE_UNRELIABLE;
	descs = mem_new(nic, ptag, NDESC * DESC_SLOT, VIP_FALSE, VIP_FALSE);
	buf = mem_new(nic, ptag, PING_BUF, VIP_FALSE, VIP_FALSE);
	buf2 = mem_new(nic, ptag, PING_BUF, VIP_FALSE, VIP_FALSE);
	vi = vi_new(nic, ptag, &o);
	for (i = 0; i < hlen && i < sizeof(host); i++)
		host[i] = (uint8_t)(hexval(hexaddr[2 * i]) * 16 + hexval(hexaddr[2 * i + 1]));
	addr_make(&srv, host, (VIP_UINT16)hlen, disc);
	addr_make(&cli, attr.LocalNicAddress, attr.NicAddressLen, "prov-check-client");
	r = desc_make(0, 0, NULL, &(struct sg){ buf2.p, PING_BUF, buf2.mh }, 1);
	post(vi, r, true);
	/* the server may not wait yet: try again (legacy callers do, §9.4.4) */
	{
		uint64_t deadline = now_ms() + WAIT_MS;

		while ((rc = VipConnectRequest(vi, &cli.a, &srv.a, 1000, &ra)) != VIP_SUCCESS &&
		       (rc == VIP_NO_MATCH || rc == VIP_TIMEOUT) && now_ms() < deadline)
			sleep_ms(20);
	}
	if (!is(rc, VIP_SUCCESS, "two processes: the client connects to the server"))
		return;
	for (k = 0; k < PINGS; k++) {
		uint32_t len = (uint32_t)((k * 7919u) % 65536u);

		fill(buf.p, len, k);
		s = desc_make(VIP_CONTROL_IMMEDIATE, k, NULL, &(struct sg){ buf.p, len, buf.mh }, 1);
		post(vi, s, false);
		if (VipSendWait(vi, WAIT_MS, &got) != VIP_SUCCESS || got != s)
			break;
		if (VipRecvWait(vi, WAIT_MS, &got) != VIP_SUCCESS || got != r ||
		    got->CS.Length != len || got->CS.ImmediateData != k || !matches(buf2.p, len, k))
			break;
		good++;
		r = desc_make(0, 0, NULL, &(struct sg){ buf2.p, PING_BUF, buf2.mh }, 1);
		post(vi, r, true);
	}
	check(good == PINGS, "two processes: %u of %u messages (0..64 KiB) echoed intact", good, PINGS);
	is(VipDisconnect(vi), VIP_SUCCESS, "two processes: the client hangs up");
	drain(vi);
	is(VipDestroyVi(vi), VIP_SUCCESS, "two processes: the client's VI goes");
	mem_free(nic, &buf);
	mem_free(nic, &buf2);
	mem_free(nic, &descs);
	VipDestroyPtag(nic, ptag);
	is(VipCloseNic(nic), VIP_SUCCESS, "two processes: the client closes its NIC");
}

/* The two-process check, forked: no NIC of this process is open now. */
static void
test_two_processes(void)
{
	char line[256], disc[64];
	int fds[2], status;
	FILE *in;
	pid_t pid;

	note("two processes (fork): a server and a client, each on its own NIC");
	snprintf(disc, sizeof(disc), "prov-check-%u", (unsigned)getpid());
	if (pipe(fds) != 0)
		return;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		FILE *out = fdopen(fds[1], "w");

		close(fds[0]);
		_exit(peer_server(nic_name, disc, out));
	}
	close(fds[1]);
	in = fdopen(fds[0], "r");
	if (!check(pid > 0 && in != NULL && fgets(line, sizeof(line), in) != NULL,
		   "two processes: the server's address"))
		return;
	line[strcspn(line, "\n")] = '\0';
	peer_client(nic_name, line, disc);
	fclose(in);
	check(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "two processes: the server saw every message intact and the hang-up");
}

int
main(int argc, char **argv)
{
	static const VIP_RELIABILITY_LEVEL levels[] = {
		VIP_SERVICE_UNRELIABLE, VIP_SERVICE_RELIABLE_DELIVERY, VIP_SERVICE_RELIABLE_RECEPTION,
	};
	unsigned i;

	if (argc < 2 || (argc >= 3 && strcmp(argv[2], "server") == 0 && argc != 4) ||
	    (argc >= 3 && strcmp(argv[2], "client") == 0 && argc != 5)) {
		fprintf(stderr, "usage: prov_check NIC [server DISC | client ADDR DISC]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	nic_name = argv[1];
	if (argc == 4)
		return peer_server(nic_name, argv[3], stdout);
	if (argc == 5) {
		peer_client(nic_name, argv[3], argv[4]);
		printf("# %u checks, %u failed\n", nb_tests, nb_failed);
		return nb_failed == 0 ? 0 : 1;
	}

	test_nic();
	test_memory();
	test_vi_cq();
	for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		if (!levels_has(levels[i]))
			continue;
		test_connect(levels[i]);
		test_sendrecv(levels[i]);
		test_rdma_write(levels[i]);
		test_rdma_read(levels[i]);
		test_errors(levels[i]);
		test_cq_waits(levels[i]);
	}
	test_two_nics();
	mem_free(nic, &descs);
	mem_free(nic, &buf);
	mem_free(nic, &buf2);
	mem_free(nic, &target);
	mem_free(nic, &closed);
	is(VipDestroyPtag(nic, ptag), VIP_SUCCESS, "VipDestroyPtag at the end");
	is(VipCloseNic(nic), VIP_SUCCESS, "VipCloseNic");
	is(VipCloseNic(nic), VIP_INVALID_PARAMETER, "VipCloseNic twice");
	test_two_processes();
	printf("1..%u\n# %u checks, %u failed\n", nb_tests, nb_tests, nb_failed);
	return nb_failed == 0 ? 0 : 1;
}
