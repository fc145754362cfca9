/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_check: end-to-end data check of one VIA-DPDK topology.
 *
 *   topo_check --server [-D DISC] [options]       wait for one connection, echo
 *   topo_check --client MAC [-D DISC] [options]   connect to MAC/DISC, check echoes
 *   topo_check --loopback [options]               both ends in this process
 *
 * Two checks: send/receive (the default) and, with --rdma on both ends,
 * RDMA Write and RDMA Read.
 *
 * Send/receive: Unreliable Delivery VIs. The client first sends a hello
 * carrying the seed, the largest message size and the frame payload size,
 * then N rounds of W messages (--window, default 1): each of a size
 * (0 .. MaxTransferSize, edge sizes favoured) and content derived from
 * (seed, sequence number), gathered from 1..8 segments of random lengths
 * at random offsets. The server
 * scatters it into 1..8 segments, checks status, length, immediate data,
 * content and that nothing outside the descriptor's segments was written,
 * and echoes the bytes it received; the client checks the echo the same
 * way. The sequence number travels in the immediate data. A message whose
 * echo does not come within the retry interval (200 ms) is resent with a
 * new sequence number; stale messages and echoes are checked and ignored.
 * Exit status 0 only if every message checked matched and every round
 * completed. Buffers: VipDpdkAllocMem provider memory, or malloc'd memory
 * with --heap; both registered with VipRegisterMem.
 *
 * --rdma: Reliable Delivery VIs with EnableRdmaWrite and EnableRdmaRead
 * (VIA §9.10.5; RDMA Read needs a reliable level, §2.5.1). The server also
 * registers a target region (the same kind of memory as its buffers,
 * MaxTransferSize + 4 pages, RDMA Write and Read enabled, §9.10.6) and
 * answers the hello with the region's address, length and memory handle.
 * Round r (of N) writes `size` bytes at `offset` of that region, both
 * derived from (seed, r): sizes 1 .. MaxTransferSize with the edges
 * favoured (1, pages, frame payloads of RDMA Write and Read Response
 * frames, the maximum), offsets crossing a page boundary where the size
 * allows, or at either end of the region or of a page. The client
 * RDMA-Writes content derived from (seed, r) gathered from 1..16 local
 * segments at random offsets (VIA §9.8.2, address segment first, §10.3),
 * then RDMA-Reads the range back into another 1..16-segment scatter list
 * (§9.8.3), half the time posted right behind the write ("RDMA Reads do
 * not pass RDMA Writes", §6.3.1.1), some of those with the queue fence.
 * It checks both completions (Status, Length, FIFO dequeue: §9.8.4,
 * §9.8.5), every byte read, and that no byte outside the scatter segments
 * changed. Every K rounds (--verify-every, and after the last) it sends
 * the server a check request naming the round: the server replays the
 * writes of rounds 0..r on a copy of its region's initial content and
 * compares the whole region (the writes landed there, in place, and
 * nothing else moved), then answers with what it found. Exit status 0 only
 * if every round and every check matched.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <vipl.h>
#include <vipl_dpdk.h>

#include "test_rand.h"

#define MAX_SEGS        8
#define RDMA_SEGS       16         /* --rdma: local segments of an RDMA descriptor */
#define RDMA_DESC_STRIDE 512       /* CS + address segment + 16 DS = 304 */
#define PAGE            4096u
#define RDMA_WAIT_MS    5000       /* an RDMA completion or a check's answer */
#define RINFO_MAGIC     0x4e4f49474552504fULL   /* "OPREGION": the server's answer */
#define RCHECK_LEN      16
#define RDMA_SALT       0x52444d4157524954ULL   /* content of RDMA round r */
#define TINIT_SALT      0x54494e4954524547ULL   /* initial content of the region */
#define HELLO_F_RDMA    1u         /* hello flags: the client runs --rdma */
#define NB_RECV         8          /* receive descriptors kept posted */
#define NB_SEND         8          /* send descriptors: the largest window */
#define GAP_MAX         4095       /* bytes skipped before each segment */
#define DESC_STRIDE     256        /* room per descriptor: CS + 8 DS = 160 */
#define HELLO_LEN       32
#define HELLO_MAGIC     0x4f4c4c45484f504fULL   /* "OPOHELLO" */
#define MIN_TRANSFER    (32u * 1024u)
#define WIRE_HDR_LEN    48u        /* VIA header after Ethernet (daemon/wire.h) */

#define IMM_TYPE_SHIFT  30
#define IMM_SEQ_MASK    0x3fffffffu
#define T_DATA          0u
#define T_HELLO         1u
#define T_RCHECK        2u         /* --rdma: check request and its answer */
#define T_BYE           3u
#define MK_IMM(t, s)    (((uint32_t)(t) << IMM_TYPE_SHIFT) | ((s) & IMM_SEQ_MASK))

enum mode { M_NONE, M_SERVER, M_CLIENT, M_LOOPBACK };

static struct {
	enum mode mode;
	const char *nic;
	const char *disc;
	uint8_t peer_mac[6];
	uint64_t seed;
	bool seed_set;
	unsigned rounds;
	unsigned retry_ms;
	unsigned max_retries;
	unsigned connect_ms;
	unsigned wait_ms;          /* server: VipConnectWait timeout */
	unsigned idle_ms;          /* server: give up after this long without a message */
	unsigned link_ms;
	unsigned window;           /* client: messages in flight per round */
	uint32_t max_size;         /* 0: MaxTransferSize */
	bool heap;
	bool strict_tail;          /* a dirty tail (see canary_check) is a mismatch */
	bool rdma;                 /* RDMA Write/Read check instead of send/receive */
	unsigned verify_every;     /* --rdma: the server checks its region every K rounds */
	int zero_copy;             /* viad sends zero-copy frames: 1 must, 0 must not, -1 either */
	int verbose;
} opt = {
	.nic = "via0",
	.disc = "topo",
	.rounds = 300,
	.retry_ms = 200,
	.max_retries = 50,
	.connect_ms = 10000,
	.wait_ms = 30000,
	.idle_ms = 10000,
	.link_ms = 10000,
	.window = 1,
	.verify_every = 8,
	.zero_copy = -1,
};

/* a --zero-copy expectation failed (print_counters) */
static bool zero_copy_wrong;

/* ---- small helpers ------------------------------------------------------ */

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void __attribute__((format(printf, 2, 3)))
say(const char *who, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&out_lock);
	printf("[%s] ", who);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
}

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void
sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

struct rng {
	uint64_t s;
};

static uint64_t
rnd(struct rng *r)
{
	r->s += 0x9e3779b97f4a7c15ULL;
	return mix64(r->s);
}

static uint32_t
rnd_below(struct rng *r, uint32_t n)
{
	return n == 0 ? 0 : (uint32_t)(rnd(r) % n);
}

/* Content of message @p seq: a keyed stream of 64-bit words. */
static void
pattern_fill(uint8_t *p, uint32_t len, uint64_t seed, uint32_t seq)
{
	uint64_t s = mix64(seed ^ ((uint64_t)seq << 32) ^ 0x5bd1e995u);
	uint32_t i;

	for (i = 0; i < len; i += 8) {
		uint64_t w = mix64(s + i);
		uint32_t n = len - i < 8 ? len - i : 8;

		memcpy(p + i, &w, n);
	}
}

/* Size of message @p seq: edge cases (0, 1, frame boundaries, the maximum)
 * a third of the time, uniform otherwise. */
static uint32_t
msg_size(uint64_t seed, uint32_t seq, uint32_t max, uint32_t chunk)
{
	uint64_t h = mix64(seed * 0x2545f4914f6cdd1dULL ^ seq);
	uint64_t h2 = mix64(h);
	uint32_t s;

	switch (h % 24) {
	case 0:
		return 0;
	case 1:
		return 1 + (uint32_t)(h2 % 16);
	case 2:
		return max;
	case 3:
		return max - (uint32_t)(h2 % 8);
	case 4:
	case 5:
	case 6:
	case 7: {
		uint32_t k = 1 + (uint32_t)(h2 % (max / chunk));

		s = k * chunk + (uint32_t)((h2 >> 32) % 3) - 1;
		return s > max ? max : s;
	}
	default:
		return (uint32_t)(h2 % ((uint64_t)max + 1));
	}
}

static int
parse_mac(const char *s, uint8_t mac[6])
{
	unsigned b[6];
	char tail;
	int i;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
		   &tail) != 6)
		return -1;
	for (i = 0; i < 6; i++) {
		if (b[i] > 255)
			return -1;
		mac[i] = (uint8_t)b[i];
	}
	return 0;
}

static VIP_NET_ADDRESS *
mk_addr(const uint8_t mac[6], const char *disc)
{
	size_t dl = strlen(disc);
	VIP_NET_ADDRESS *a = calloc(1, sizeof(*a) + 6 + 256);

	if (a == NULL) {
		perror("calloc");
		exit(1);
	}
	a->HostAddressLen = 6;
	memcpy(a->HostAddress, mac, 6);
	a->DiscriminatorLen = (VIP_UINT16)dl;
	memcpy(a->HostAddress + 6, disc, dl);
	return a;
}

/* ---- asynchronous errors --------------------------------------------------- */

static uint64_t async_errors[VIP_ERROR_CATASTROPHIC + 1];
static volatile int async_quiet;   /* the test is over: CONN_LOST is expected */

static void
error_handler(VIP_PVOID ctx, VIP_ERROR_DESCRIPTOR *ed)
{
	const char *who = ctx;
	uint64_t n = 0;

	if ((unsigned)ed->ErrorCode <= VIP_ERROR_CATASTROPHIC)
		n = __atomic_add_fetch(&async_errors[ed->ErrorCode], 1, __ATOMIC_RELAXED);
	if (async_quiet && ed->ErrorCode == VIP_ERROR_CONN_LOST)
		return;
	if (n <= 5 || opt.verbose)
		say(who, "asynchronous error %s (VI %p, descriptor %p, op %#lx)%s",
		    VipDpdkErrorCodeString(ed->ErrorCode), ed->ViHandle, (void *)ed->DescriptorPtr,
		    ed->OpCode, n == 5 && !opt.verbose ? " (no more of these printed)" : "");
}

static void
print_async_errors(const char *who)
{
	char buf[512];
	size_t n = 0;
	unsigned i;

	for (i = 0; i <= VIP_ERROR_CATASTROPHIC; i++) {
		uint64_t c = __atomic_load_n(&async_errors[i], __ATOMIC_RELAXED);

		if (c != 0 && n < sizeof(buf))
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, " %s=%" PRIu64,
					      VipDpdkErrorCodeString((VIP_ERROR_CODE)i), c);
	}
	if (n != 0)
		say(who, "asynchronous errors (this process):%s", buf);
}

/* ---- an endpoint: NIC, VI, memory, descriptors --------------------------- */

struct seg {
	uint8_t *ptr;
	uint32_t len;
};

struct dslot {
	VIP_DESCRIPTOR *d;
	size_t dsize;              /* bytes of registered memory at d */
	uint8_t *buf;              /* this descriptor's buffer area */
	size_t len;                /* of buf */
	struct seg segs[RDMA_SEGS];
	unsigned nb_segs;
	uint8_t canary;
};

struct ep {
	const char *who;
	VIP_NIC_HANDLE nic;
	VIP_NIC_ATTRIBUTES na;
	VIP_PROTECTION_HANDLE ptag;
	VIP_VI_HANDLE vi;
	VIP_MEM_HANDLE mh;
	uint8_t *mem;
	size_t mem_len;
	bool mem_pmem;
	uint64_t zc_frames_at_open; /* viad's FramesTxZeroCopy when the NIC was opened */
	bool sends_data;           /* sends, or RDMA Writes: --zero-copy yes applies */
	uint32_t max_transfer;     /* of the VI */
	uint32_t chunk;            /* payload bytes per frame */
	size_t buf_len;
	struct dslot recv[NB_RECV];
	struct dslot send[NB_SEND];
	unsigned nb_send;          /* send slots in use: 1, or the window */
	unsigned send_head, send_tail;  /* posted sends, FIFO over the slots */
	unsigned recv_head;        /* next receive slot to complete (FIFO) */
	uint8_t *scratch;          /* contiguous copy of a message */
	uint8_t *expect;           /* expected content */
	/* --rdma */
	struct dslot rw, rr;       /* client: RDMA Write gather, RDMA Read scatter */
	uint8_t *tmem;             /* server: the target region */
	size_t tlen;
	VIP_MEM_HANDLE tmh;
	bool tmem_pmem, tmem_reg;
	uint8_t *shadow;           /* server: what the target region must hold */
	struct rng rng;
	/* counters */
	uint64_t msgs_rx, msgs_tx, bytes_rx, bytes_tx, stale, mismatches, errors, dirty_tails;
	unsigned mismatch_prints;
};

#define CHK(ep, call)                                                                  \
	do {                                                                           \
		VIP_RETURN r_ = (call);                                                \
		if (r_ != VIP_SUCCESS) {                                               \
			say((ep)->who, "FAIL %s: %s", #call, VipDpdkReturnString(r_)); \
			return -1;                                                     \
		}                                                                      \
	} while (0)

static VIP_DATA_SEGMENT *
desc_ds(VIP_DESCRIPTOR *d)
{
	return (VIP_DATA_SEGMENT *)((uint8_t *)d + sizeof(VIP_CONTROL_SEGMENT));
}

static void
print_port(struct ep *e)
{
	VIP_DPDK_PORT_INFO pi;

	if (VipQuerySystemManagementInfo(e->nic, VIP_DPDK_SMI_PORT, &pi) != VIP_SUCCESS)
		return;
	say(e->who, "port %s glue=%s mac=%02x:%02x:%02x:%02x:%02x:%02x mtu=%u link=%s "
	    "rx=%" PRIu64 " tx=%" PRIu64 " rxerr=%" PRIu64 " txerr=%" PRIu64,
	    pi.Name, pi.Glue, pi.Mac[0], pi.Mac[1], pi.Mac[2], pi.Mac[3], pi.Mac[4], pi.Mac[5],
	    pi.Mtu, pi.LinkUp ? "up" : "down", pi.RxPackets, pi.TxPackets, pi.RxErrors,
	    pi.TxErrors);
}

static void
print_counters(struct ep *e)
{
	VIP_DPDK_COUNTERS c;

	if (VipQuerySystemManagementInfo(e->nic, VIP_DPDK_SMI_COUNTERS, &c) != VIP_SUCCESS)
		return;
	say(e->who, "viad counters: frames rx=%" PRIu64 " tx=%" PRIu64 " (zero-copy %" PRIu64
	    ") dropped=%" PRIu64 " corrupt=%" PRIu64 " cq_overruns=%" PRIu64
	    " control_errors=%" PRIu64,
	    c.FramesRx, c.FramesTx, c.FramesTxZeroCopy, c.FramesDropped, c.FramesCorrupt,
	    c.CqOverruns, c.ControlErrors);
	/* an --rdma server only answers Reads: zero-copy in memory only
	 * (design.md section 9), so through a port it may send none */
	if (opt.zero_copy >= 0 && (opt.zero_copy == 0 || e->sends_data) &&
	    (c.FramesTxZeroCopy > e->zc_frames_at_open) != opt.zero_copy) {
		say(e->who, "FAIL: %" PRIu64 " zero-copy frames since this check began, %s",
		    c.FramesTxZeroCopy - e->zc_frames_at_open,
		    opt.zero_copy ? "want some" : "want none");
		zero_copy_wrong = true;
	}
}

static int
wait_link(struct ep *e)
{
	uint64_t deadline = now_us() + (uint64_t)opt.link_ms * 1000u;
	VIP_DPDK_PORT_INFO pi;

	for (;;) {
		VIP_RETURN r = VipQuerySystemManagementInfo(e->nic, VIP_DPDK_SMI_PORT, &pi);

		if (r != VIP_SUCCESS) {
			say(e->who, "VipQuerySystemManagementInfo(PORT): %s",
			    VipDpdkReturnString(r));
			return -1;
		}
		if (pi.LinkUp)
			return 0;
		if (now_us() >= deadline) {
			say(e->who, "FAIL: link of %s still down after %u ms", pi.Name,
			    opt.link_ms);
			return -1;
		}
		sleep_ms(20);
	}
}

/* @p len bytes of memory, zeroed: VipDpdkAllocMem, or the heap with --heap. */
static int
ep_alloc(struct ep *e, size_t len, uint8_t **out, bool *pmem)
{
	void *p;

	if (opt.heap) {
		p = aligned_alloc(PAGE, len);
		if (p == NULL) {
			say(e->who, "FAIL: aligned_alloc(%zu)", len);
			return -1;
		}
		*pmem = false;
	} else {
		CHK(e, VipDpdkAllocMem(e->nic, len, &p));
		*pmem = true;
	}
	memset(p, 0, len);
	*out = p;
	return 0;
}

/*
 * @p server: with --rdma, the end that owns the target region; the other
 * end gets the RDMA descriptors and their local buffers instead.
 */
static int
ep_open(struct ep *e, const char *who, uint64_t rng_seed, bool server)
{
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_VI_ATTRIBUTES va = { 0 };
	size_t desc_area, rbuf_len = 0;
	uint32_t mtu;
	unsigned i;

	memset(e, 0, sizeof(*e));
	e->who = who;
	e->sends_data = !(opt.rdma && server);
	e->rng.s = rng_seed;
	CHK(e, VipOpenNic(opt.nic, &e->nic));
	{
		VIP_DPDK_COUNTERS c;

		CHK(e, VipQuerySystemManagementInfo(e->nic, VIP_DPDK_SMI_COUNTERS, &c));
		e->zc_frames_at_open = c.FramesTxZeroCopy;
	}
	CHK(e, VipErrorCallback(e->nic, (VIP_PVOID)who, error_handler));
	CHK(e, VipQueryNic(e->nic, &e->na));
	if (e->na.NicAddressLen != 6) {
		say(who, "FAIL: NIC address length %u, want 6", e->na.NicAddressLen);
		return -1;
	}
	if (e->na.MaxTransferSize < MIN_TRANSFER) {
		say(who, "FAIL: MaxTransferSize %lu < %u", e->na.MaxTransferSize, MIN_TRANSFER);
		return -1;
	}
	if (e->na.MaxSegmentsPerDesc < MAX_SEGS) {
		say(who, "FAIL: MaxSegmentsPerDesc %lu < %u", e->na.MaxSegmentsPerDesc, MAX_SEGS);
		return -1;
	}
	if (opt.rdma && (!(e->na.ReliabilityLevelSupport & VIP_SERVICE_RELIABLE_DELIVERY) ||
			 !e->na.RDMAReadSupport)) {
		say(who, "FAIL: --rdma needs Reliable Delivery and RDMA Read; the NIC supports "
		    "levels %#x, RDMAReadSupport %d", e->na.ReliabilityLevelSupport,
		    e->na.RDMAReadSupport);
		return -1;
	}
	e->max_transfer = (uint32_t)e->na.MaxTransferSize;
	mtu = (uint32_t)e->na.NativeMTU;
	e->chunk = mtu > WIRE_HDR_LEN + 64 ? mtu - WIRE_HDR_LEN : 1024;
	CHK(e, VipCreatePtag(e->nic, &e->ptag));

	e->buf_len = ((size_t)e->max_transfer + MAX_SEGS * (GAP_MAX + 1) + 4095) & ~(size_t)4095;
	desc_area = 4096;
	/* --rdma: one message at a time each way (Reliable Delivery loses
	 * none), and on the client two RDMA descriptors after the first page */
	e->nb_send = opt.rdma ? 1 : opt.window;
	e->mem_len = desc_area + (NB_RECV + e->nb_send) * e->buf_len;
	if (opt.rdma && !server) {
		desc_area += PAGE;
		rbuf_len = ((size_t)e->max_transfer + RDMA_SEGS * (GAP_MAX + 1) + PAGE - 1) &
			   ~(size_t)(PAGE - 1);
		e->mem_len += PAGE + 2 * rbuf_len;
	}
	if (ep_alloc(e, e->mem_len, &e->mem, &e->mem_pmem) != 0)
		return -1;
	ma.Ptag = e->ptag;
	CHK(e, VipRegisterMem(e->nic, e->mem, e->mem_len, &ma, &e->mh));
	for (i = 0; i < NB_RECV; i++) {
		e->recv[i].d = (VIP_DESCRIPTOR *)(e->mem + (size_t)i * DESC_STRIDE);
		e->recv[i].dsize = DESC_STRIDE;
		e->recv[i].buf = e->mem + desc_area + (size_t)i * e->buf_len;
		e->recv[i].len = e->buf_len;
		e->recv[i].canary = (uint8_t)(0xa5 ^ (i * 0x11));
	}
	for (i = 0; i < e->nb_send; i++) {
		e->send[i].d = (VIP_DESCRIPTOR *)(e->mem + (size_t)(NB_RECV + i) * DESC_STRIDE);
		e->send[i].dsize = DESC_STRIDE;
		e->send[i].buf = e->mem + desc_area + (size_t)(NB_RECV + i) * e->buf_len;
		e->send[i].len = e->buf_len;
	}
	if (rbuf_len != 0) {
		uint8_t *rb = e->mem + desc_area + (size_t)(NB_RECV + e->nb_send) * e->buf_len;

		e->rw.d = (VIP_DESCRIPTOR *)(e->mem + PAGE);
		e->rr.d = (VIP_DESCRIPTOR *)(e->mem + PAGE + RDMA_DESC_STRIDE);
		e->rw.dsize = e->rr.dsize = RDMA_DESC_STRIDE;
		e->rw.buf = rb;
		e->rr.buf = rb + rbuf_len;
		e->rw.len = e->rr.len = rbuf_len;
	}
	e->scratch = malloc(e->max_transfer + 64);
	e->expect = malloc(e->max_transfer + 64);
	if (e->scratch == NULL || e->expect == NULL) {
		say(who, "FAIL: out of memory");
		return -1;
	}
	if (opt.rdma && server) {
		/* the target: room for MaxTransferSize at any offset of a page,
		 * and whole pages on either side; RDMA Write and Read allowed on
		 * the region (§9.10.6) as on the VI below (§9.10.5), same Ptag */
		VIP_MEM_ATTRIBUTES ta = { .Ptag = e->ptag, .EnableRdmaWrite = VIP_TRUE,
					  .EnableRdmaRead = VIP_TRUE };

		e->tlen = (((size_t)e->max_transfer + PAGE - 1) & ~(size_t)(PAGE - 1)) + 4 * PAGE;
		if (ep_alloc(e, e->tlen, &e->tmem, &e->tmem_pmem) != 0)
			return -1;
		CHK(e, VipRegisterMem(e->nic, e->tmem, e->tlen, &ta, &e->tmh));
		e->tmem_reg = true;
		e->shadow = malloc(e->tlen);
		if (e->shadow == NULL) {
			say(who, "FAIL: out of memory");
			return -1;
		}
	}

	va.ReliabilityLevel = opt.rdma ? VIP_SERVICE_RELIABLE_DELIVERY : VIP_SERVICE_UNRELIABLE;
	va.MaxTransferSize = e->max_transfer;
	va.Ptag = e->ptag;
	va.EnableRdmaWrite = opt.rdma ? VIP_TRUE : VIP_FALSE;
	va.EnableRdmaRead = opt.rdma ? VIP_TRUE : VIP_FALSE;
	CHK(e, VipCreateVi(e->nic, &va, NULL, NULL, &e->vi));
	return 0;
}

static void
ep_close(struct ep *e)
{
	VIP_DESCRIPTOR *d;
	VIP_RETURN r;

	if (e->vi != NULL) {
		VipDisconnect(e->vi);
		while (VipRecvDone(e->vi, &d) == VIP_SUCCESS)
			;
		while (VipSendDone(e->vi, &d) == VIP_SUCCESS)
			;
		r = VipDestroyVi(e->vi);
		if (r != VIP_SUCCESS)
			say(e->who, "VipDestroyVi: %s", VipDpdkReturnString(r));
	}
	if (e->mem != NULL && e->nic != NULL) {
		VipDeregisterMem(e->nic, e->mem, e->mh);
		if (e->mem_pmem)
			VipDpdkFreeMem(e->nic, e->mem);
		else
			free(e->mem);
	}
	if (e->tmem != NULL && e->nic != NULL) {
		if (e->tmem_reg)
			VipDeregisterMem(e->nic, e->tmem, e->tmh);
		if (e->tmem_pmem)
			VipDpdkFreeMem(e->nic, e->tmem);
		else
			free(e->tmem);
	}
	free(e->shadow);
	if (e->ptag != NULL)
		VipDestroyPtag(e->nic, e->ptag);
	if (e->nic != NULL)
		VipCloseNic(e->nic);
	free(e->scratch);
	free(e->expect);
}

/*
 * Lay @p total bytes out as @p k segments (a random split, zero-length
 * pieces allowed, §10.4) at random offsets in @p s's buffer and write the
 * descriptor's data segments after its first @p first segments (1: the
 * address segment of an RDMA descriptor, §10.3, left for the caller).
 */
static void
layout_k(struct ep *e, struct dslot *s, uint32_t total, unsigned k, unsigned first)
{
	uint32_t cuts[RDMA_SEGS + 1];
	VIP_DATA_SEGMENT *ds = desc_ds(s->d) + first;
	size_t pos = 0;
	unsigned i, j;

	cuts[0] = 0;
	cuts[k] = total;
	for (i = 1; i < k; i++)
		cuts[i] = rnd_below(&e->rng, total + 1);
	for (i = 1; i < k; i++) {         /* insertion sort of cuts[1..k-1] */
		for (j = i; j > 1 && cuts[j - 1] > cuts[j]; j--) {
			uint32_t t = cuts[j];

			cuts[j] = cuts[j - 1];
			cuts[j - 1] = t;
		}
	}
	memset(s->d, 0, s->dsize);
	s->nb_segs = k;
	for (i = 0; i < k; i++) {
		/* half the segments start right after the previous one */
		if (rnd(&e->rng) & 1)
			pos += rnd_below(&e->rng, GAP_MAX + 1);
		s->segs[i].ptr = s->buf + pos;
		s->segs[i].len = cuts[i + 1] - cuts[i];
		pos += s->segs[i].len;
		ds[i].Data.Address = s->segs[i].ptr;
		ds[i].Handle = e->mh;
		ds[i].Length = s->segs[i].len;
	}
	if (pos > s->len) {
		fprintf(stderr, "topo_check: internal error: layout overflows its buffer\n");
		abort();
	}
	s->d->CS.SegCount = (VIP_UINT16)(k + first);
}

/* A send or receive: 1..8 segments. */
static void
layout(struct ep *e, struct dslot *s, uint32_t total)
{
	layout_k(e, s, total, 1 + rnd_below(&e->rng, MAX_SEGS), 0);
}

static void
describe_layout(struct ep *e, const struct dslot *s, char *buf, size_t len)
{
	size_t n = 0;
	unsigned i;

	for (i = 0; i < s->nb_segs && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s+%zu:%u", i ? " " : "",
				      (size_t)(s->segs[i].ptr - s->buf), s->segs[i].len);
	(void)e;
}

static int
post_recv(struct ep *e, unsigned idx)
{
	struct dslot *s = &e->recv[idx];

	layout(e, s, e->max_transfer);
	memset(s->buf, s->canary, e->buf_len);
	CHK(e, VipPostRecv(e->vi, s->d, e->mh));
	return 0;
}

/* Gather @p len bytes out of @p s's segments into @p out. */
static void
gather(const struct dslot *s, uint8_t *out, uint32_t len)
{
	unsigned i;

	for (i = 0; i < s->nb_segs && len > 0; i++) {
		uint32_t take = s->segs[i].len < len ? s->segs[i].len : len;

		memcpy(out, s->segs[i].ptr, take);
		out += take;
		len -= take;
	}
}

static void
scatter(const struct dslot *s, const uint8_t *in, uint32_t len)
{
	unsigned i;

	for (i = 0; i < s->nb_segs && len > 0; i++) {
		uint32_t take = s->segs[i].len < len ? s->segs[i].len : len;

		memcpy(s->segs[i].ptr, in, take);
		in += take;
		len -= take;
	}
}

/*
 * Bytes of the buffer outside the descriptor's segments must still be
 * canary: returns the offset of the first one that is not, or -1. In
 * *tail, the first byte inside a segment but beyond the message's @p len
 * bytes that is not canary, or -1: a receive descriptor whose message was
 * lost (a frame missing) takes the next message, and the lost one's bytes
 * stay where they were written (Unreliable Delivery; not an error).
 */
static long
canary_check(struct ep *e, const struct dslot *s, uint32_t len, long *tail)
{
	size_t pos = 0, q;
	unsigned i;

	(void)e;
	*tail = -1;
	for (i = 0; i <= s->nb_segs; i++) {
		size_t start = i < s->nb_segs ? (size_t)(s->segs[i].ptr - s->buf) : s->len;
		size_t used;

		for (; pos < start; pos++) {
			if (s->buf[pos] != s->canary)
				return (long)pos;
		}
		if (i == s->nb_segs)
			break;
		used = s->segs[i].len < len ? s->segs[i].len : len;
		len -= (uint32_t)used;
		for (q = start + used; *tail < 0 && q < start + s->segs[i].len; q++) {
			if (s->buf[q] != s->canary)
				*tail = (long)q;
		}
		pos = start + s->segs[i].len;
	}
	return -1;
}

struct msg_info {
	uint32_t type, seq, len;
};

/*
 * Check a completed receive against what (type, seq) must contain.
 * @p got_len bytes are in e->scratch afterwards. Returns 0 if it matched.
 */
static int
check_recv(struct ep *e, const struct dslot *s, const VIP_DESCRIPTOR *d, uint64_t seed,
	   uint32_t max, uint32_t chunk, bool seed_known, struct msg_info *mi)
{
	uint32_t status = d->CS.Status, want_len;
	char lay[256];
	long bad, tail;

	mi->type = d->CS.ImmediateData >> IMM_TYPE_SHIFT;
	mi->seq = d->CS.ImmediateData & IMM_SEQ_MASK;
	mi->len = d->CS.Length;
	describe_layout(e, s, lay, sizeof(lay));
	if (status != (VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE | VIP_STATUS_IMMEDIATE)) {
		say(e->who, "MISMATCH: receive status %#x (want %#x) len %u imm %#x layout [%s]",
		    status, VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE | VIP_STATUS_IMMEDIATE,
		    d->CS.Length, d->CS.ImmediateData, lay);
		return -1;
	}
	if (mi->len > max) {
		say(e->who, "MISMATCH: seq %u: length %u > max %u", mi->seq, mi->len, max);
		return -1;
	}
	gather(s, e->scratch, mi->len);
	switch (mi->type) {
	case T_HELLO:
		want_len = HELLO_LEN;
		break;
	case T_BYE:
		want_len = 0;
		break;
	case T_RCHECK:
		want_len = RCHECK_LEN;
		break;
	case T_DATA:
		if (!seed_known) {
			say(e->who, "MISMATCH: data message seq %u before the hello", mi->seq);
			return -1;
		}
		want_len = msg_size(seed, mi->seq, max, chunk);
		break;
	default:
		say(e->who, "MISMATCH: unknown message type %u (imm %#x)", mi->type,
		    d->CS.ImmediateData);
		return -1;
	}
	if (mi->len != want_len) {
		say(e->who, "MISMATCH: seq %u type %u: length %u, want %u (layout [%s])",
		    mi->seq, mi->type, mi->len, want_len, lay);
		return -1;
	}
	if (mi->type == T_DATA) {
		pattern_fill(e->expect, want_len, seed, mi->seq);
		if (memcmp(e->expect, e->scratch, want_len) != 0) {
			uint32_t i, first = 0, nbad = 0;

			for (i = 0; i < want_len; i++) {
				if (e->expect[i] != e->scratch[i]) {
					if (nbad++ == 0)
						first = i;
				}
			}
			say(e->who, "MISMATCH: seq %u len %u: %u bytes differ, first at %u "
			    "(got %#x want %#x), frame %u of the message, layout [%s]",
			    mi->seq, want_len, nbad, first, e->scratch[first], e->expect[first],
			    first / chunk, lay);
			return -1;
		}
	}
	bad = canary_check(e, s, mi->len, &tail);
	if (bad >= 0) {
		say(e->who, "MISMATCH: seq %u len %u: byte %ld of the buffer, outside the "
		    "descriptor's segments, was written (%#x, canary %#x), layout [%s]", mi->seq,
		    mi->len, bad, s->buf[bad], s->canary, lay);
		return -1;
	}
	if (tail >= 0) {
		if (e->dirty_tails++ < 3 || opt.verbose)
			say(e->who, "note: seq %u len %u: byte %ld of the buffer, in a segment but "
			    "beyond the message, was written (%#x, canary %#x): left by a lost "
			    "message? layout [%s]", mi->seq, mi->len, tail, s->buf[tail], s->canary,
			    lay);
		if (opt.strict_tail)
			return -1;
	}
	return 0;
}

/* Post a send of @p len bytes of @p data with immediate @p imm in the next slot. */
static int
send_post(struct ep *e, const uint8_t *data, uint32_t len, uint32_t imm)
{
	struct dslot *s = &e->send[e->send_tail % e->nb_send];

	if (e->send_tail - e->send_head >= e->nb_send) {
		say(e->who, "FAIL: internal: all %u send slots busy", e->nb_send);
		return -1;
	}
	layout(e, s, len);
	scatter(s, data, len);
	s->d->CS.Control = VIP_CONTROL_IMMEDIATE;
	s->d->CS.ImmediateData = imm;
	s->d->CS.Length = len;
	CHK(e, VipPostSend(e->vi, s->d, e->mh));
	e->send_tail++;
	e->msgs_tx++;
	e->bytes_tx += len;
	return 0;
}

/* Wait for every posted send to complete, in order, each with success. */
static int
send_reap(struct ep *e)
{
	while (e->send_head != e->send_tail) {
		struct dslot *s = &e->send[e->send_head % e->nb_send];
		VIP_DESCRIPTOR *out;
		VIP_RETURN r = VipSendWait(e->vi, 5000, &out);

		if (r != VIP_SUCCESS) {
			say(e->who, "FAIL: VipSendWait: %s", VipDpdkReturnString(r));
			return -1;
		}
		e->send_head++;
		if (out != s->d || out->CS.Status != (VIP_STATUS_DONE | VIP_STATUS_OP_SEND)) {
			say(e->who, "FAIL: send completion status %#x (descriptor %p, posted %p)",
			    out->CS.Status, (void *)out, (void *)s->d);
			return -1;
		}
	}
	return 0;
}

static int
send_msg(struct ep *e, const uint8_t *data, uint32_t len, uint32_t imm)
{
	if (send_post(e, data, len, imm) != 0)
		return -1;
	return send_reap(e);
}

/* Wait up to @p ms for the head receive. 1: got one (slot in *idx), 0: timeout. */
static int
recv_msg(struct ep *e, unsigned ms, VIP_DESCRIPTOR **out, unsigned *idx)
{
	VIP_RETURN r = VipRecvWait(e->vi, ms, out);

	if (r == VIP_TIMEOUT)
		return 0;
	if (r != VIP_SUCCESS) {
		say(e->who, "FAIL: VipRecvWait: %s", VipDpdkReturnString(r));
		return -1;
	}
	*idx = e->recv_head;
	if (*out != e->recv[*idx].d) {
		say(e->who, "FAIL: receive completed out of order: descriptor %p, want %p",
		    (void *)*out, (void *)e->recv[*idx].d);
		return -1;
	}
	e->recv_head = (e->recv_head + 1) % NB_RECV;
	return 1;
}

static int
post_all_recv(struct ep *e)
{
	unsigned i;

	for (i = 0; i < NB_RECV; i++) {
		if (post_recv(e, i) != 0)
			return -1;
	}
	return 0;
}

/* ---- server -------------------------------------------------------------- */

struct hello {
	uint64_t magic;
	uint64_t seed;
	uint32_t max;
	uint32_t chunk;
	uint32_t rounds;
	uint32_t flags;            /* HELLO_F_* (was padding: 0) */
};
_Static_assert(sizeof(struct hello) == HELLO_LEN, "hello layout");

/* Post the receives, wait for one connection request and accept it. */
static int
server_accept(struct ep *e)
{
	VIP_NET_ADDRESS *local = mk_addr(e->na.LocalNicAddress, opt.disc);
	VIP_NET_ADDRESS *remote = mk_addr((const uint8_t[6]){ 0 }, "");
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;
	VIP_RETURN r;
	int rc = -1;

	if (post_all_recv(e) != 0)
		goto out;
	say(e->who, "waiting for a connection on discriminator \"%s\" (%u ms)", opt.disc,
	    opt.wait_ms);
	r = VipConnectWait(e->nic, local, opt.wait_ms, remote, &ra, &conn);
	if (r != VIP_SUCCESS) {
		say(e->who, "FAIL: VipConnectWait: %s", VipDpdkReturnString(r));
		goto out;
	}
	say(e->who, "request from %02x:%02x:%02x:%02x:%02x:%02x disc \"%.*s\" mtu %lu",
	    remote->HostAddress[0], remote->HostAddress[1], remote->HostAddress[2],
	    remote->HostAddress[3], remote->HostAddress[4], remote->HostAddress[5],
	    remote->DiscriminatorLen, (const char *)remote->HostAddress + 6, ra.MaxTransferSize);
	r = VipConnectAccept(conn, e->vi);
	if (r != VIP_SUCCESS) {
		say(e->who, "FAIL: VipConnectAccept: %s", VipDpdkReturnString(r));
		goto out;
	}
	say(e->who, "connected");
	rc = 0;
out:
	free(local);
	free(remote);
	return rc;
}

/*
 * The server's next message: 1 with *@p d and *@p idx; 0 when the client
 * disconnected (*@p peer_gone) or sent nothing for --idle-ms; -1 on an
 * error. *@p last_msg_us is when the last message came.
 */
static int
server_next(struct ep *e, uint64_t *last_msg_us, VIP_DESCRIPTOR **d, unsigned *idx,
	    bool *peer_gone)
{
	for (;;) {
		int got = recv_msg(e, 500, d, idx);

		if (got < 0)
			return -1;
		if (got == 0) {
			if (now_us() - *last_msg_us > (uint64_t)opt.idle_ms * 1000u) {
				say(e->who, "no message for %u ms: giving up waiting", opt.idle_ms);
				return 0;
			}
			continue;
		}
		if ((*d)->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR) {
			*peer_gone = true;          /* the client disconnected */
			return 0;
		}
		*last_msg_us = now_us();
		return 1;
	}
}

static int
run_server(struct ep *e)
{
	uint64_t seed = opt.seed, last_msg_us, t0 = 0;
	uint32_t last_seq = 0, max = 0, chunk = 0;
	bool seed_known = false, got_bye = false, peer_gone = false;
	int rc = 0;

	if (server_accept(e) != 0)
		return -1;
	last_msg_us = now_us();
	for (;;) {
		VIP_DESCRIPTOR *d;
		struct msg_info mi;
		unsigned idx;
		int got = server_next(e, &last_msg_us, &d, &idx, &peer_gone);

		if (got <= 0) {
			rc = got < 0 ? -1 : rc;
			break;
		}
		{
			int bad = check_recv(e, &e->recv[idx], d, seed, max ? max : e->max_transfer,
					     chunk ? chunk : 1, seed_known, &mi);
			uint32_t imm = d->CS.ImmediateData, status = d->CS.Status;

			/* the content is in e->scratch now: the descriptor goes
			 * back at once, so that NB_RECV are posted while we echo */
			if (post_recv(e, idx) != 0) {
				rc = -1;
				break;
			}
			if (bad) {
				e->mismatches++;
				/* echo what arrived all the same: the client sees it too */
				if ((status & VIP_STATUS_ERROR_MASK) == 0 && mi.len <= e->max_transfer &&
				    mi.seq > last_seq) {
					last_seq = mi.seq;
					if (send_msg(e, e->scratch, mi.len, imm) != 0) {
						rc = -1;
						break;
					}
				}
				continue;
			}
			e->msgs_rx++;
			e->bytes_rx += mi.len;
			if (mi.type == T_BYE) {
				got_bye = true;
				break;
			}
			if (mi.seq <= last_seq) {
				e->stale++;        /* a resend overtook it, or a duplicate */
				continue;
			}
			last_seq = mi.seq;
			if (mi.type == T_HELLO) {
				struct hello h;

				memcpy(&h, e->scratch, sizeof(h));
				if (h.magic != HELLO_MAGIC || h.max > e->max_transfer || h.chunk == 0 ||
				    h.max / h.chunk == 0) {
					say(e->who, "MISMATCH: bad hello (magic %#" PRIx64 " max %u "
					    "chunk %u)", h.magic, h.max, h.chunk);
					e->mismatches++;
				} else {
					if (h.flags & HELLO_F_RDMA) {
						say(e->who, "MISMATCH: the client runs --rdma, "
						    "this server does not");
						e->mismatches++;
					}
					if (opt.seed_set && h.seed != opt.seed) {
						say(e->who, "MISMATCH: client seed %#" PRIx64
						    " != --seed %#" PRIx64, h.seed, opt.seed);
						e->mismatches++;
					}
					if (!seed_known)
						say(e->who, "hello: seed %#" PRIx64 " max %u chunk %u "
						    "rounds %u", h.seed, h.max, h.chunk, h.rounds);
					seed = h.seed;
					max = h.max;
					chunk = h.chunk;
					seed_known = true;
					t0 = now_us();
				}
			}
			if (send_msg(e, e->scratch, mi.len, imm) != 0) {
				rc = -1;
				break;
			}
		}
	}
	if (got_bye || peer_gone)
		async_quiet = 1;
	{
		double secs = t0 ? (double)(now_us() - t0) / 1e6 : 0;

		say(e->who, "summary: %" PRIu64 " messages received, %" PRIu64 " echoed, %" PRIu64
		    " bytes in, %" PRIu64 " stale ignored, %" PRIu64 " mismatches, %" PRIu64
		    " dirty tails, end: %s, %.2f s",
		    e->msgs_rx, e->msgs_tx, e->bytes_rx, e->stale, e->mismatches, e->dirty_tails,
		    got_bye ? "bye" : peer_gone ? "peer disconnected" : rc ? "error" : "idle timeout",
		    secs);
	}
	print_port(e);
	print_counters(e);
	print_async_errors(e->who);
	if (rc == 0 && e->mismatches == 0 && e->errors == 0 && seed_known)
		return 0;
	if (!seed_known && rc == 0)
		say(e->who, "FAIL: no hello received");
	return -1;
}

/* ---- client -------------------------------------------------------------- */

static int
u64cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int
client_connect(struct ep *e, const uint8_t mac[6], const char *local_disc)
{
	VIP_NET_ADDRESS *local = mk_addr(e->na.LocalNicAddress, local_disc);
	VIP_NET_ADDRESS *remote = mk_addr(mac, opt.disc);
	uint64_t t0 = now_us(), deadline = t0 + (uint64_t)opt.connect_ms * 1000u;
	VIP_VI_ATTRIBUTES ra;
	unsigned tries = 0;
	VIP_RETURN r;

	for (;;) {
		uint64_t now = now_us();
		unsigned left = now >= deadline ? 0 : (unsigned)((deadline - now) / 1000u);

		if (left == 0) {
			say(e->who, "FAIL: VipConnectRequest to %02x:%02x:%02x:%02x:%02x:%02x/%s: "
			    "%s after %u tries, %u ms", mac[0], mac[1], mac[2], mac[3], mac[4],
			    mac[5], opt.disc, tries ? VipDpdkReturnString(r) : "no time", tries,
			    opt.connect_ms);
			free(local);
			free(remote);
			return -1;
		}
		tries++;
		r = VipConnectRequest(e->vi, local, remote, left < 1000 ? left : 1000, &ra);
		if (r == VIP_SUCCESS)
			break;
		if (r != VIP_NO_MATCH && r != VIP_TIMEOUT && r != VIP_REJECT) {
			say(e->who, "FAIL: VipConnectRequest: %s", VipDpdkReturnString(r));
			free(local);
			free(remote);
			return -1;
		}
		if (opt.verbose)
			say(e->who, "connect try %u: %s", tries, VipDpdkReturnString(r));
		sleep_ms(50);
	}
	say(e->who, "connected to %02x:%02x:%02x:%02x:%02x:%02x/%s after %u tries, %.1f ms "
	    "(remote MaxTransferSize %lu)", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5],
	    opt.disc, tries, (double)(now_us() - t0) / 1000.0, ra.MaxTransferSize);
	free(local);
	free(remote);
	return 0;
}

/*
 * One round: @p n messages (type, payload) in flight at once, each resent
 * with a fresh sequence number until its echo comes back; every echo is
 * checked. Returns 0, or -1 on a hard error or after too many tries.
 * rtt_us[i]: of message i's attempt that succeeded; *resends counts.
 */
struct pend {
	uint32_t seq, len;
	uint64_t t0;
	unsigned tries;
	bool done;
};

static int
client_round(struct ep *e, uint32_t *next_seq, unsigned n, uint32_t type,
	     const uint8_t *payload, uint32_t fixed_len, uint64_t seed, uint32_t max,
	     uint32_t chunk, uint64_t *rtt_us, unsigned *resends)
{
	struct pend p[NB_SEND];
	unsigned i, left = n;

	memset(p, 0, sizeof(p));
	while (left > 0) {
		uint64_t deadline;

		for (i = 0; i < n; i++) {
			if (p[i].done)
				continue;
			if (p[i].tries++ > opt.max_retries) {
				say(e->who, "FAIL: no echo after %u tries (last seq %u, len %u)",
				    opt.max_retries + 1, p[i].seq, p[i].len);
				return -1;
			}
			if (p[i].tries > 1) {
				(*resends)++;
				if (opt.verbose)
					say(e->who, "seq %u (len %u): no echo within %u ms, resending",
					    p[i].seq, p[i].len, opt.retry_ms);
			}
			p[i].seq = (*next_seq)++ & IMM_SEQ_MASK;
			if (type == T_DATA) {
				p[i].len = msg_size(seed, p[i].seq, max, chunk);
				pattern_fill(e->expect, p[i].len, seed, p[i].seq);
				payload = e->expect;
			} else {
				p[i].len = fixed_len;
			}
			p[i].t0 = now_us();
			if (send_post(e, payload, p[i].len, MK_IMM(type, p[i].seq)) != 0)
				return -1;
		}
		if (send_reap(e) != 0)
			return -1;
		deadline = now_us() + (uint64_t)opt.retry_ms * 1000u;
		while (left > 0) {
			uint64_t now = now_us();
			VIP_DESCRIPTOR *d;
			struct msg_info mi;
			unsigned idx;
			int got;

			if (now >= deadline)
				break;
			got = recv_msg(e, (unsigned)((deadline - now + 999) / 1000u), &d, &idx);
			if (got < 0)
				return -1;
			if (got == 0)
				break;
			if (d->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR) {
				say(e->who, "FAIL: receive flushed (status %#x): the connection is "
				    "gone", d->CS.Status);
				return -1;
			}
			if (check_recv(e, &e->recv[idx], d, seed, max, chunk, true, &mi) != 0) {
				e->mismatches++;
				if (post_recv(e, idx) != 0)
					return -1;
				if (d->CS.Status & VIP_STATUS_ERROR_MASK)
					return -1;   /* the VI is broken: no point going on */
				continue;
			}
			if (type == T_HELLO && mi.type == T_HELLO &&
			    memcmp(e->scratch, payload, HELLO_LEN) != 0) {
				say(e->who, "MISMATCH: hello echo differs");
				e->mismatches++;
			}
			e->msgs_rx++;
			e->bytes_rx += mi.len;
			if (post_recv(e, idx) != 0)
				return -1;
			if (mi.seq >= *next_seq) {
				say(e->who, "MISMATCH: echo of seq %u, never sent (next %u)", mi.seq,
				    *next_seq);
				e->mismatches++;
				continue;
			}
			for (i = 0; i < n; i++) {
				if (!p[i].done && p[i].seq == mi.seq) {
					p[i].done = true;
					rtt_us[i] = now_us() - p[i].t0;
					left--;
					break;
				}
			}
			if (i == n)
				e->stale++;           /* of an attempt resent since */
		}
	}
	return 0;
}

static int
run_client(struct ep *e, const uint8_t mac[6], const char *local_disc)
{
	uint32_t max = e->max_transfer, chunk = e->chunk, next_seq = 1;
	const unsigned w = opt.window;
	uint64_t *rtts = calloc((size_t)opt.rounds * w + NB_SEND, sizeof(uint64_t)), t0;
	uint64_t seed = opt.seed, rtt[NB_SEND];
	unsigned resends = 0, round, done = 0, lost_rounds = 0, nrtt = 0, i;
	struct hello h = { 0 };
	double secs;
	int rc = 0;

	if (rtts == NULL)
		return -1;
	if (opt.max_size != 0 && opt.max_size < max)
		max = opt.max_size;
	if (max / chunk == 0)
		chunk = max;
	if (post_all_recv(e) != 0 || client_connect(e, mac, local_disc) != 0) {
		free(rtts);
		return -1;
	}
	h = (struct hello){ .magic = HELLO_MAGIC, .seed = seed, .max = max, .chunk = chunk,
			    .rounds = opt.rounds };
	if (client_round(e, &next_seq, 1, T_HELLO, (const uint8_t *)&h, HELLO_LEN, seed, max,
			 chunk, rtt, &resends) != 0) {
		say(e->who, "FAIL: hello");
		free(rtts);
		return -1;
	}
	resends = 0;
	t0 = now_us();
	for (round = 0; round < opt.rounds; round++) {
		unsigned before = resends;

		if (client_round(e, &next_seq, w, T_DATA, NULL, 0, seed, max, chunk, rtt,
				 &resends) != 0) {
			rc = -1;
			break;
		}
		if (resends != before) {
			lost_rounds++;
		} else {
			for (i = 0; i < w; i++)
				rtts[nrtt++] = rtt[i];
		}
		done++;
		if (opt.verbose > 1)
			say(e->who, "round %u ok, rtt %" PRIu64 " us", round, rtt[0]);
	}
	secs = (double)(now_us() - t0) / 1e6;
	async_quiet = 1;
	/* bye: the server also stops on our disconnect */
	if (rc == 0)
		send_msg(e, NULL, 0, MK_IMM(T_BYE, next_seq++));
	qsort(rtts, nrtt, sizeof(*rtts), u64cmp);
	say(e->who, "summary: %u/%u rounds of %u message%s completed, %u with a loss (%u resends), "
	    "%" PRIu64 " stale echoes, %" PRIu64 " mismatches, %" PRIu64 " dirty tails; %" PRIu64
	    " bytes each way, %.2f s, %.1f MB/s echoed; rtt us p50 %" PRIu64 " p99 %" PRIu64
	    " max %" PRIu64 " (rounds without loss); seed %#" PRIx64,
	    done, opt.rounds, w, w > 1 ? "s" : "", lost_rounds, resends, e->stale, e->mismatches,
	    e->dirty_tails,
	    e->bytes_rx, secs, secs > 0 ? (double)e->bytes_rx / secs / 1e6 : 0.0,
	    nrtt ? rtts[nrtt / 2] : 0, nrtt ? rtts[(nrtt * 99) / 100] : 0,
	    nrtt ? rtts[nrtt - 1] : 0, seed);
	print_port(e);
	print_counters(e);
	print_async_errors(e->who);
	free(rtts);
	if (rc == 0 && done == opt.rounds && e->mismatches == 0 && e->errors == 0)
		return 0;
	return -1;
}

/* ---- RDMA mode (--rdma) -------------------------------------------------- */

/* The server's answer to an --rdma hello: the target region, for the
 * address segments (§10.3) of the client's RDMA descriptors. */
struct rinfo {
	uint64_t magic;            /* RINFO_MAGIC */
	uint64_t addr;             /* the region's virtual address */
	uint32_t handle;           /* its memory handle */
	uint32_t len;              /* its length: a multiple of PAGE */
	uint32_t max;              /* the hello's largest transfer, confirmed */
	uint32_t pad;
};
_Static_assert(sizeof(struct rinfo) == HELLO_LEN, "rinfo layout");

/* Check request: the round whose write was the last, and where it went. */
struct rcheck_req {
	uint32_t round, off, size, pad;
};
_Static_assert(sizeof(struct rcheck_req) == RCHECK_LEN, "rcheck_req layout");

/* Its answer: bytes of the region that differ, the first, what it held. */
struct rcheck_ans {
	uint32_t round, nbad, first;
	uint8_t got, want;
	uint16_t pad;
};
_Static_assert(sizeof(struct rcheck_ans) == RCHECK_LEN, "rcheck_ans layout");

static uint32_t
nz(uint32_t x)
{
	return x ? x : 1;
}

/*
 * Size of RDMA round @p r: 1 .. @p max, the edges favoured: the first
 * rounds take one each of 1, the maximum, around a page and around a
 * frame; then a third of the time an edge, uniform otherwise. @p chunk is
 * the payload of a frame: an RDMA Read Response frame carries that many
 * bytes of data, an RDMA Write frame 16 less (its RDMA extension,
 * wire-format.md), so both kinds of frame boundary are covered.
 */
static uint32_t
rdma_size(uint64_t seed, uint32_t r, uint32_t max, uint32_t chunk)
{
	const uint32_t wchunk = chunk > 32 ? chunk - 16 : chunk;
	const int64_t fixed[] = { 1, max, PAGE, PAGE + 1, PAGE - 1, (int64_t)max - 1, 2,
				  (int64_t)wchunk + 1, (int64_t)chunk + 1 };
	uint64_t h = mix64(seed * 0x2545f4914f6cdd1dULL ^ r ^ RDMA_SALT), h2 = mix64(h);
	int64_t v, d = (int64_t)((h2 >> 40) % 3) - 1;

	if (r < sizeof(fixed) / sizeof(fixed[0])) {
		v = fixed[r];
	} else {
		switch (h % 24) {
		case 0:
		case 1:
			v = 1 + (int64_t)(h2 % 16);
			break;
		case 2:
			v = max;
			break;
		case 3:
			v = (int64_t)max - (int64_t)(h2 % 8);
			break;
		case 4:
		case 5:
			v = (int64_t)(1 + h2 % nz(max / PAGE)) * PAGE + d;
			break;
		case 6:
		case 7:
			v = (int64_t)(1 + h2 % nz(max / wchunk)) * wchunk + d;
			break;
		case 8:
		case 9:
			v = (int64_t)(1 + h2 % nz(max / chunk)) * chunk + d;
			break;
		default:
			v = 1 + (int64_t)(h2 % max);
			break;
		}
	}
	return v < 1 ? 1 : v > max ? max : (uint32_t)v;
}

/*
 * Offset of RDMA round @p r's @p size bytes in a region of @p tlen bytes
 * (a multiple of PAGE, at least size + 4 pages): mostly across a page
 * boundary (one byte or more on each side; a single byte is the last of a
 * page or the first), else at the start or the end of the region, at the
 * start of a page, or ending at the end of one.
 */
static uint32_t
rdma_offset(uint64_t seed, uint32_t r, uint32_t size, uint32_t tlen)
{
	uint64_t h = mix64(seed ^ ((uint64_t)r << 32) ^ 0x0ff5e70ff5e7ULL), h2 = mix64(h);
	uint32_t room = tlen - size, npages = tlen / PAGE, j, jmin;
	int64_t off;

	switch (h % 16) {
	case 0:
		return 0;
	case 1:
		return room;
	case 2:
		return PAGE * (uint32_t)(h2 % (room / PAGE + 1));
	case 3:
		jmin = (size + PAGE - 1) / PAGE;
		j = jmin + (uint32_t)(h2 % (npages - jmin + 1));
		return j * PAGE - size;
	default:
		/* boundary P, not the region's ends: [off, off + size) holds
		 * P - 1 and P; a range longer than a page crosses one anyway */
		j = 1 + (uint32_t)(h2 % (npages - 1));
		if (size >= 2)
			off = (int64_t)j * PAGE - 1 - (int64_t)((h2 >> 32) % (size - 1));
		else
			off = (int64_t)j * PAGE - 1 + (int64_t)((h2 >> 32) & 1);
		if (off < 0)
			off = 0;
		if (off > room)
			off = room;
		return (uint32_t)off;
	}
}

static void
rdma_plan(uint64_t seed, uint32_t r, uint32_t max, uint32_t chunk, uint32_t tlen, uint32_t *off,
	  uint32_t *size)
{
	*size = rdma_size(seed, r, max, chunk);
	*off = rdma_offset(seed, r, *size, tlen);
}

/* Content of RDMA round @p r. */
static void
rdma_fill(uint8_t *p, uint32_t len, uint64_t seed, uint32_t r)
{
	pattern_fill(p, len, seed ^ RDMA_SALT, r);
}

/* ---- RDMA: the server ---- */

/*
 * Answer a check request: replay the writes of every round up to
 * @p q->round on the copy of the region and compare the whole region.
 */
static void
rdma_verify(struct ep *e, uint64_t seed, uint32_t max, uint32_t chunk, uint32_t rounds,
	    uint32_t *applied, const struct rcheck_req *q, struct rcheck_ans *a)
{
	uint32_t tlen = (uint32_t)e->tlen, off, size, i, in_last = 0;

	memset(a, 0, sizeof(*a));
	a->round = q->round;
	if (q->round >= rounds || q->round + 1 < *applied) {
		say(e->who, "MISMATCH: check of round %u: out of order (rounds %u, %u replayed)",
		    q->round, rounds, *applied);
		e->mismatches++;
		a->nbad = UINT32_MAX;
		return;
	}
	for (; *applied <= q->round; (*applied)++) {
		rdma_plan(seed, *applied, max, chunk, tlen, &off, &size);
		rdma_fill(e->shadow + off, size, seed, *applied);
	}
	rdma_plan(seed, q->round, max, chunk, tlen, &off, &size);
	if (off != q->off || size != q->size) {
		say(e->who, "MISMATCH: round %u: the client wrote %u B at +%u, the plan here says "
		    "%u B at +%u (different builds of topo_check?)", q->round, q->size, q->off,
		    size, off);
		e->mismatches++;
		a->nbad = UINT32_MAX;
		return;
	}
	if (memcmp(e->tmem, e->shadow, tlen) == 0)
		return;
	for (i = 0; i < tlen; i++) {
		if (e->tmem[i] != e->shadow[i]) {
			if (a->nbad++ == 0) {
				a->first = i;
				a->got = e->tmem[i];
				a->want = e->shadow[i];
			}
			in_last += i >= off && i < off + size;
		}
	}
	{
		/* the round that wrote the first bad byte last, if any */
		uint32_t o2, s2, r = q->round + 1;

		while (r-- > 0) {
			rdma_plan(seed, r, max, chunk, tlen, &o2, &s2);
			if (a->first >= o2 && a->first < o2 + s2)
				break;
		}
		say(e->who, "MISMATCH: after round %u: %u bytes of the target region (%u B) differ "
		    "from what rounds 0..%u wrote, %u of them in round %u's range [+%u, +%u); "
		    "first at +%u (page %u +%u): %#x, want %#x", q->round, a->nbad, tlen, q->round,
		    in_last, q->round, off, off + size, a->first, a->first / PAGE, a->first % PAGE,
		    a->got, a->want);
		if (r != UINT32_MAX)
			say(e->who, "  byte +%u was last written by round %u (%u B at +%u, byte %u "
			    "of it)", a->first, r, s2, o2, a->first - o2);
		else
			say(e->who, "  byte +%u was never written: it should still hold its initial "
			    "content", a->first);
	}
	e->mismatches++;
	/* go on from what the region holds: report each corruption once */
	memcpy(e->shadow, e->tmem, tlen);
}

static int
run_rdma_server(struct ep *e)
{
	uint64_t seed = opt.seed, last_msg_us, t0 = 0;
	uint32_t max = 0, chunk = 0, rounds = 0, applied = 0, next_seq = 1, checks = 0;
	bool seed_known = false, got_bye = false, peer_gone = false, checked_last = false;
	int rc = 0;

	if (server_accept(e) != 0)
		return -1;
	say(e->who, "target region %p, %zu B, memory handle %#x, %s memory", (void *)e->tmem,
	    e->tlen, e->tmh, e->tmem_pmem ? "provider" : "heap");
	last_msg_us = now_us();
	for (;;) {
		VIP_DESCRIPTOR *d;
		struct msg_info mi;
		unsigned idx;
		int got = server_next(e, &last_msg_us, &d, &idx, &peer_gone), bad;

		if (got <= 0) {
			rc = got < 0 ? -1 : rc;
			break;
		}
		bad = check_recv(e, &e->recv[idx], d, seed, max ? max : e->max_transfer,
				 chunk ? chunk : 1, seed_known, &mi);
		if (post_recv(e, idx) != 0) {
			rc = -1;
			break;
		}
		if (bad) {
			/* Reliable Delivery: a bad message means a broken provider */
			e->mismatches++;
			rc = -1;
			break;
		}
		e->msgs_rx++;
		e->bytes_rx += mi.len;
		/* Reliable Delivery: every message once, in order (§2.5.2) */
		if (mi.seq != next_seq) {
			say(e->who, "MISMATCH: message seq %u (type %u), want %u", mi.seq, mi.type,
			    next_seq);
			e->mismatches++;
		}
		next_seq = mi.seq + 1;
		if (mi.type == T_BYE) {
			/* answered, so that the client disconnects only once we
			 * expect it (no CONN_LOST report racing the bye) */
			got_bye = true;
			async_quiet = 1;
			if (send_msg(e, NULL, 0, MK_IMM(T_BYE, mi.seq)) != 0)
				rc = -1;
			break;
		}
		if (mi.type == T_HELLO) {
			struct hello h;
			struct rinfo ri = { 0 };

			memcpy(&h, e->scratch, sizeof(h));
			if (seed_known || h.magic != HELLO_MAGIC || !(h.flags & HELLO_F_RDMA) ||
			    h.max == 0 || h.max > e->max_transfer || h.chunk == 0) {
				say(e->who, "MISMATCH: bad hello (%s, magic %#" PRIx64 " flags %#x "
				    "max %u chunk %u)", seed_known ? "a second one" :
				    !(h.flags & HELLO_F_RDMA) ? "the client does not run --rdma" :
				    "bad values", h.magic, h.flags, h.max, h.chunk);
				e->mismatches++;
				rc = -1;
				break;
			}
			if (opt.seed_set && h.seed != opt.seed) {
				say(e->who, "MISMATCH: client seed %#" PRIx64 " != --seed %#" PRIx64,
				    h.seed, opt.seed);
				e->mismatches++;
			}
			seed = h.seed;
			max = h.max;
			chunk = h.chunk;
			rounds = h.rounds;
			seed_known = true;
			say(e->who, "hello: seed %#" PRIx64 " max %u chunk %u rounds %u (RDMA)", seed,
			    max, chunk, rounds);
			/* known initial content: a write or read at a wrong place shows */
			pattern_fill(e->tmem, (uint32_t)e->tlen, seed ^ TINIT_SALT, 0);
			memcpy(e->shadow, e->tmem, e->tlen);
			ri.magic = RINFO_MAGIC;
			ri.addr = (uint64_t)(uintptr_t)e->tmem;
			ri.handle = e->tmh;
			ri.len = (uint32_t)e->tlen;
			ri.max = max;
			t0 = now_us();
			if (send_msg(e, (const uint8_t *)&ri, sizeof(ri), MK_IMM(T_HELLO, mi.seq)) != 0) {
				rc = -1;
				break;
			}
		} else if (mi.type == T_RCHECK && seed_known) {
			struct rcheck_req q;
			struct rcheck_ans a;

			memcpy(&q, e->scratch, sizeof(q));
			rdma_verify(e, seed, max, chunk, rounds, &applied, &q, &a);
			checks++;
			if (opt.verbose > 1 || (opt.verbose && a.nbad != 0))
				say(e->who, "check of round %u: %u bytes differ", q.round, a.nbad);
			if (q.round + 1 == rounds)
				checked_last = true;
			if (send_msg(e, (const uint8_t *)&a, sizeof(a), MK_IMM(T_RCHECK, mi.seq)) != 0) {
				rc = -1;
				break;
			}
		} else {
			say(e->who, "MISMATCH: unexpected message type %u seq %u len %u in --rdma mode",
			    mi.type, mi.seq, mi.len);
			e->mismatches++;
			rc = -1;
			break;
		}
	}
	if (got_bye || peer_gone)
		async_quiet = 1;
	say(e->who, "summary: %" PRIu64 " messages received, %u region checks (rounds 0..%d "
	    "replayed), %" PRIu64 " mismatches, end: %s, %.2f s", e->msgs_rx, checks,
	    (int)applied - 1, e->mismatches,
	    got_bye ? "bye" : peer_gone ? "peer disconnected" : rc ? "error" : "idle timeout",
	    t0 ? (double)(now_us() - t0) / 1e6 : 0.0);
	print_port(e);
	print_counters(e);
	print_async_errors(e->who);
	if (rc != 0 || e->mismatches != 0)
		return -1;
	if (!seed_known) {
		say(e->who, "FAIL: no hello received");
		return -1;
	}
	if (rounds != 0 && !checked_last) {
		say(e->who, "FAIL: the client did not ask for the check of its last round (%u)",
		    rounds - 1);
		return -1;
	}
	return 0;
}

/* ---- RDMA: the client ---- */

struct rdma_stats {
	uint64_t bytes;
	unsigned pipelined, fenced, checks;
};

/* Send one message and wait for its answer: the same type and seq. */
static int
rdma_call(struct ep *e, uint32_t type, uint32_t seq, const void *req, uint32_t len, void *ans,
	  uint32_t ans_len, uint64_t seed, uint32_t max, uint32_t chunk)
{
	VIP_DESCRIPTOR *d;
	struct msg_info mi;
	unsigned idx;
	int got, bad;

	if (send_msg(e, req, len, MK_IMM(type, seq)) != 0)
		return -1;
	got = recv_msg(e, RDMA_WAIT_MS, &d, &idx);
	if (got <= 0) {
		if (got == 0)
			say(e->who, "FAIL: no answer to message type %u seq %u within %u ms", type,
			    seq, RDMA_WAIT_MS);
		return -1;
	}
	bad = check_recv(e, &e->recv[idx], d, seed, max, chunk, true, &mi);
	if (post_recv(e, idx) != 0)
		return -1;
	if (bad) {
		e->mismatches++;
		return -1;
	}
	if (mi.type != type || mi.seq != seq) {
		say(e->who, "MISMATCH: answer of type %u seq %u, want type %u seq %u", mi.type,
		    mi.seq, type, seq);
		e->mismatches++;
		return -1;
	}
	e->msgs_rx++;
	if (ans_len != 0)
		memcpy(ans, e->scratch, ans_len);
	return 0;
}

/* 1..16 local segments: 1..4 half the time, 5..8 or 9..16 a quarter each. */
static unsigned
rdma_nsegs(struct ep *e)
{
	switch (rnd_below(&e->rng, 4)) {
	case 0:
	case 1:
		return 1 + rnd_below(&e->rng, 4);
	case 2:
		return 5 + rnd_below(&e->rng, 4);
	default:
		return 9 + rnd_below(&e->rng, RDMA_SEGS - 8);
	}
}

/* An RDMA descriptor in @p s: the address segment (§10.3), then @p size
 * bytes laid out over 1..16 local segments. */
static void
rdma_desc(struct ep *e, struct dslot *s, uint16_t control, uint64_t raddr, VIP_MEM_HANDLE rh,
	  uint32_t size)
{
	VIP_ADDRESS_SEGMENT *as;

	layout_k(e, s, size, rdma_nsegs(e), 1);
	as = (VIP_ADDRESS_SEGMENT *)desc_ds(s->d);
	as->Data.AddressBits = raddr;
	as->Handle = rh;
	as->Reserved = 0;
	s->d->CS.Control = control;
	s->d->CS.Length = size;
}

/* The next send queue completion must be @p s's, with @p status and @p size. */
static int
rdma_reap(struct ep *e, const struct dslot *s, uint32_t status, uint32_t size, const char *what,
	  uint32_t r, uint32_t off)
{
	VIP_DESCRIPTOR *out;
	VIP_RETURN rv = VipSendWait(e->vi, RDMA_WAIT_MS, &out);
	char lay[512];

	describe_layout(e, s, lay, sizeof(lay));
	if (rv != VIP_SUCCESS) {
		say(e->who, "FAIL: round %u: %s of %u B at +%u: VipSendWait: %s (layout [%s])", r,
		    what, size, off, VipDpdkReturnString(rv), lay);
		return -1;
	}
	/* §6.3.1.1: dequeued in FIFO order, whatever the completion order */
	if (out != s->d) {
		say(e->who, "MISMATCH: round %u: %s: VipSendWait gave descriptor %p, want %p "
		    "(FIFO dequeue)", r, what, (void *)out, (void *)s->d);
		e->mismatches++;
		return -1;
	}
	if (out->CS.Status != status || out->CS.Length != size) {
		say(e->who, "MISMATCH: round %u: %s of %u B at +%u: Status %#x Length %u, want "
		    "Status %#x Length %u (layout [%s])", r, what, size, off, out->CS.Status,
		    out->CS.Length, status, size, lay);
		e->mismatches++;
		return -1;
	}
	return 0;
}

/*
 * Round @p r: RDMA Write the round's content from a gather list to its
 * place in the target region, RDMA Read it back into a scatter list,
 * check both completions and every byte.
 */
static int
rdma_round(struct ep *e, const struct rinfo *ri, uint64_t seed, uint32_t r, uint32_t max,
	   uint32_t chunk, struct rdma_stats *st)
{
	/* half the rounds post the read right behind the write: it must
	 * still see the write (§6.3.1.1, RDMA Reads do not pass RDMA
	 * Writes); a quarter of those with the queue fence (§6.3.1.2) */
	const bool pipe = rnd(&e->rng) & 1, fence = pipe && rnd_below(&e->rng, 4) == 0;
	uint32_t off, size, i;
	long bad, tail;
	char lw[512], lr[512];

	rdma_plan(seed, r, max, chunk, ri->len, &off, &size);
	rdma_fill(e->expect, size, seed, r);
	/* the write gathers its segments; the bytes around them are not the
	 * content, so that gathering a wrong byte shows */
	rdma_desc(e, &e->rw, VIP_CONTROL_OP_RDMAWRITE, ri->addr + off, ri->handle, size);
	memset(e->rw.buf, 0x3c, e->rw.len);
	scatter(&e->rw, e->expect, size);
	/* the read scatters into another layout: its segments hold the
	 * complement of the content (every byte must change), canary
	 * everywhere else (no byte may change) */
	rdma_desc(e, &e->rr, VIP_CONTROL_OP_RDMAREAD | (fence ? VIP_CONTROL_QFENCE : 0),
		  ri->addr + off, ri->handle, size);
	e->rr.canary = (uint8_t)(0xc3 ^ (r * 0x3b));
	memset(e->rr.buf, e->rr.canary, e->rr.len);
	for (i = 0; i < size; i++)
		e->scratch[i] = (uint8_t)~e->expect[i];
	scatter(&e->rr, e->scratch, size);
	describe_layout(e, &e->rw, lw, sizeof(lw));
	describe_layout(e, &e->rr, lr, sizeof(lr));
	if (opt.verbose > 1)
		say(e->who, "round %u: %u B at +%u%s%s, write [%s], read [%s]", r, size, off,
		    pipe ? ", pipelined" : "", fence ? ", fenced" : "", lw, lr);

	CHK(e, VipPostSend(e->vi, e->rw.d, e->mh));
	if (!pipe && rdma_reap(e, &e->rw, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_WRITE, size,
			       "RDMA Write", r, off) != 0)
		return -1;
	CHK(e, VipPostSend(e->vi, e->rr.d, e->mh));
	if (pipe && rdma_reap(e, &e->rw, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_WRITE, size,
			      "RDMA Write", r, off) != 0)
		return -1;
	if (rdma_reap(e, &e->rr, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_READ, size, "RDMA Read", r,
		      off) != 0)
		return -1;
	st->pipelined += pipe;
	st->fenced += fence;
	st->bytes += size;

	gather(&e->rr, e->scratch, size);
	if (memcmp(e->scratch, e->expect, size) != 0) {
		uint32_t first = 0, nbad = 0, seg = 0, in_seg, acc = 0;
		const uint32_t wchunk = chunk > 32 ? chunk - 16 : chunk;

		for (i = 0; i < size; i++) {
			if (e->scratch[i] != e->expect[i] && nbad++ == 0)
				first = i;
		}
		while (seg < e->rr.nb_segs && acc + e->rr.segs[seg].len <= first)
			acc += e->rr.segs[seg++].len;
		in_seg = first - acc;
		say(e->who, "MISMATCH: round %u: %u B at +%u%s%s: %u bytes read back differ, first "
		    "at byte %u (remote +%u, page %u +%u; RDMA Write frame %u, Read Response frame "
		    "%u; scatter segment %u byte %u): %#x, want %#x%s; write layout [%s], read "
		    "layout [%s]", r, size, off, pipe ? " (read right behind the write)" : "",
		    fence ? " (fenced)" : "", nbad, first, off + first, (off + first) / PAGE,
		    (off + first) % PAGE, first / wchunk, first / chunk, seg, in_seg,
		    e->scratch[first], e->expect[first],
		    (e->scratch[first] ^ e->expect[first]) == 0xff ? " (not written by the read)" : "",
		    lw, lr);
		e->mismatches++;
		return -1;
	}
	bad = canary_check(e, &e->rr, size, &tail);
	if (bad >= 0 || tail >= 0) {
		long at = bad >= 0 ? bad : tail;

		say(e->who, "MISMATCH: round %u: %u B at +%u: the RDMA Read wrote byte %ld of its "
		    "buffer, outside its scatter segments (%#x, canary %#x); read layout [%s]", r,
		    size, off, at, e->rr.buf[at], e->rr.canary, lr);
		e->mismatches++;
		return -1;
	}
	return 0;
}

static int
run_rdma_client(struct ep *e, const uint8_t mac[6], const char *local_disc)
{
	uint32_t max = e->max_transfer, chunk = e->chunk, seq = 1, r, done = 0, ksz;
	const unsigned k = opt.verify_every ? opt.verify_every : 1;
	struct rdma_stats st = { 0 };
	uint64_t seed = opt.seed, t0;
	struct hello h = { 0 };
	struct rinfo ri;
	double secs;
	int rc = 0;

	if (opt.max_size != 0 && opt.max_size < max)
		max = opt.max_size;
	if (post_all_recv(e) != 0 || client_connect(e, mac, local_disc) != 0)
		return -1;
	h = (struct hello){ .magic = HELLO_MAGIC, .seed = seed, .max = max, .chunk = chunk,
			    .rounds = opt.rounds, .flags = HELLO_F_RDMA };
	if (rdma_call(e, T_HELLO, seq++, &h, HELLO_LEN, &ri, sizeof(ri), seed, max, chunk) != 0) {
		say(e->who, "FAIL: hello");
		return -1;
	}
	ksz = (max + PAGE - 1) / PAGE * PAGE;
	if (ri.magic != RINFO_MAGIC || ri.max != max || ri.len % PAGE != 0 ||
	    ri.len < ksz + 2 * PAGE) {
		say(e->who, "FAIL: bad answer to the hello (magic %#" PRIx64 ", max %u, region "
		    "%u B; want %u, at least %u B): is the server running --rdma?", ri.magic,
		    ri.max, ri.len, max, ksz + 2 * PAGE);
		return -1;
	}
	say(e->who, "target region %#" PRIx64 ", %u B, handle %#x; %u rounds of 1 .. %u B, "
	    "server check every %u rounds", ri.addr, ri.len, ri.handle, opt.rounds, max, k);
	t0 = now_us();
	for (r = 0; r < opt.rounds; r++) {
		if (rdma_round(e, &ri, seed, r, max, chunk, &st) != 0) {
			rc = -1;
			break;
		}
		done++;
		if ((r + 1) % k == 0 || r + 1 == opt.rounds) {
			struct rcheck_req q = { .round = r };
			struct rcheck_ans a;

			rdma_plan(seed, r, max, chunk, ri.len, &q.off, &q.size);
			if (rdma_call(e, T_RCHECK, seq++, &q, sizeof(q), &a, sizeof(a), seed, max,
				      chunk) != 0) {
				rc = -1;
				break;
			}
			st.checks++;
			if (a.round != r || a.nbad != 0) {
				say(e->who, "MISMATCH: server's check after round %u (answer for round "
				    "%u): %u bytes of its region differ, first at +%u: %#x, want %#x "
				    "(its output says more)", r, a.round, a.nbad, a.first, a.got,
				    a.want);
				e->mismatches++;
				rc = -1;
				break;
			}
		}
	}
	secs = (double)(now_us() - t0) / 1e6;
	/* bye, and its answer: the server stops expecting messages first */
	if (rc == 0 && rdma_call(e, T_BYE, seq++, NULL, 0, NULL, 0, seed, max, chunk) != 0) {
		say(e->who, "FAIL: bye");
		rc = -1;
	}
	async_quiet = 1;
	say(e->who, "summary: %u/%u RDMA rounds (write + read back) completed, %u with the read "
	    "right behind the write (%u fenced), %u server checks, %" PRIu64 " mismatches; "
	    "%" PRIu64 " bytes each way, %.2f s, %.1f MB/s; seed %#" PRIx64, done, opt.rounds,
	    st.pipelined, st.fenced, st.checks, e->mismatches, st.bytes, secs,
	    secs > 0 ? (double)st.bytes / secs / 1e6 : 0.0, seed);
	print_port(e);
	print_counters(e);
	print_async_errors(e->who);
	if (rc == 0 && done == opt.rounds && e->mismatches == 0 && e->errors == 0)
		return 0;
	return -1;
}

/* ---- modes --------------------------------------------------------------- */

struct server_arg {
	struct ep e;
	int rc;
};

static void *
server_thread(void *p)
{
	struct server_arg *a = p;

	a->rc = opt.rdma ? run_rdma_server(&a->e) : run_server(&a->e);
	return NULL;
}

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: topo_check --server [-D DISC] [options]\n"
		"       topo_check --client MAC [-D DISC] [options]\n"
		"       topo_check --loopback [options]\n"
		"options:\n"
		"  -D, --disc DISC      server discriminator (default \"topo\")\n"
		"  -n, --rounds N       rounds (default 300)\n"
		"  -w, --window W       client: messages in flight per round, 1..8 (default 1)\n"
		"  -s, --seed SEED      seed of sizes and contents (default: random; printed)\n"
		"      --nic NAME       NIC to open (default via0)\n"
		"      --heap           buffers in malloc'd registered memory (default:\n"
		"                       VipDpdkAllocMem provider memory)\n"
		"      --max-size N     largest message (default MaxTransferSize)\n"
		"      --strict-tail    fail if receive buffer bytes beyond the message were\n"
		"                       written (normal after a lost message)\n"
		"      --rdma           RDMA Write and Read check on Reliable Delivery VIs\n"
		"                       (both ends; --window does not apply)\n"
		"      --verify-every K --rdma: the server checks its whole target region\n"
		"                       every K rounds and after the last (default 8)\n"
		"      --zero-copy yes|no  fail unless viad sent zero-copy frames during the\n"
		"                       check (yes; not asked of an --rdma server, which\n"
		"                       only answers Reads), or unless it sent none (no)\n"
		"      --retry-ms MS    resend a round after MS without echo (default 200)\n"
		"      --max-retries N  resends of one round before failing (default 50)\n"
		"      --connect-ms MS  client: keep trying to connect this long (default 10000)\n"
		"      --wait-ms MS     server: VipConnectWait timeout (default 30000)\n"
		"      --idle-ms MS     server: stop after MS without a message (default 10000)\n"
		"      --link-ms MS     wait this long for the port's link (default 10000)\n"
		"  -v, --verbose        more output (twice: every round)\n"
		"VIAD_SOCKET selects the viad. Exit status 0: every round completed and matched.\n");
}

static int
parse_args(int argc, char **argv)
{
	enum { O_NIC = 256, O_HEAP, O_STRICT, O_MAX, O_RETRY, O_MAXRETRY, O_CONNECT, O_WAIT, O_IDLE, O_LINK,
	       O_RDMA, O_VERIFY, O_ZC };
	static const struct option lo[] = {
		{ "server", no_argument, NULL, 'S' },
		{ "client", required_argument, NULL, 'C' },
		{ "loopback", no_argument, NULL, 'L' },
		{ "disc", required_argument, NULL, 'D' },
		{ "rounds", required_argument, NULL, 'n' },
		{ "window", required_argument, NULL, 'w' },
		{ "seed", required_argument, NULL, 's' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "nic", required_argument, NULL, O_NIC },
		{ "heap", no_argument, NULL, O_HEAP },
		{ "strict-tail", no_argument, NULL, O_STRICT },
		{ "max-size", required_argument, NULL, O_MAX },
		{ "retry-ms", required_argument, NULL, O_RETRY },
		{ "max-retries", required_argument, NULL, O_MAXRETRY },
		{ "connect-ms", required_argument, NULL, O_CONNECT },
		{ "wait-ms", required_argument, NULL, O_WAIT },
		{ "idle-ms", required_argument, NULL, O_IDLE },
		{ "link-ms", required_argument, NULL, O_LINK },
		{ "rdma", no_argument, NULL, O_RDMA },
		{ "verify-every", required_argument, NULL, O_VERIFY },
		{ "zero-copy", required_argument, NULL, O_ZC },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "D:n:s:w:vh", lo, NULL)) != -1) {
		switch (c) {
		case 'S':
			opt.mode = M_SERVER;
			break;
		case 'C':
			opt.mode = M_CLIENT;
			if (parse_mac(optarg, opt.peer_mac) != 0) {
				fprintf(stderr, "topo_check: bad MAC '%s'\n", optarg);
				return -1;
			}
			break;
		case 'L':
			opt.mode = M_LOOPBACK;
			break;
		case 'D':
			opt.disc = optarg;
			break;
		case 'n':
			opt.rounds = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'w':
			opt.window = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 's':
			opt.seed = strtoull(optarg, NULL, 0);
			opt.seed_set = true;
			break;
		case 'v':
			opt.verbose++;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case O_NIC:
			opt.nic = optarg;
			break;
		case O_HEAP:
			opt.heap = true;
			break;
		case O_ZC:
			if (strcmp(optarg, "yes") != 0 && strcmp(optarg, "no") != 0) {
				fprintf(stderr, "topo_check: --zero-copy takes yes or no\n");
				return -1;
			}
			opt.zero_copy = strcmp(optarg, "yes") == 0;
			break;
		case O_STRICT:
			opt.strict_tail = true;
			break;
		case O_MAX:
			opt.max_size = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case O_RETRY:
			opt.retry_ms = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case O_MAXRETRY:
			opt.max_retries = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case O_CONNECT:
			opt.connect_ms = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case O_WAIT:
			opt.wait_ms = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case O_IDLE:
			opt.idle_ms = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case O_LINK:
			opt.link_ms = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case O_RDMA:
			opt.rdma = true;
			break;
		case O_VERIFY:
			opt.verify_every = (unsigned)strtoul(optarg, NULL, 0);
			break;
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind != argc || opt.mode == M_NONE) {
		usage(stderr);
		return -1;
	}
	if (opt.verify_every < 1) {
		fprintf(stderr, "topo_check: --verify-every must be at least 1\n");
		return -1;
	}
	if (opt.window < 1 || opt.window > NB_SEND) {
		fprintf(stderr, "topo_check: --window must be 1..%u\n", NB_SEND);
		return -1;
	}
	if (strlen(opt.disc) == 0 || strlen(opt.disc) > 64 || opt.retry_ms == 0 ||
	    (opt.max_size != 0 && opt.max_size < 2)) {
		fprintf(stderr, "topo_check: bad -D, --retry-ms or --max-size\n");
		return -1;
	}
	if (!opt.seed_set) {
		if (getrandom(&opt.seed, sizeof(opt.seed), 0) != sizeof(opt.seed))
			opt.seed = now_us();
	}
	return 0;
}

int
main(int argc, char **argv)
{
	const char *mode_name;
	struct ep e;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (parse_args(argc, argv) != 0)
		return 2;
	mode_name = opt.mode == M_SERVER ? "server" : opt.mode == M_CLIENT ? "client" : "loopback";
	printf("topo_check %s%s: nic %s, disc \"%s\", %u rounds, %s memory, seed %#" PRIx64
	       "%s, VIAD_SOCKET=%s\n", mode_name, opt.rdma ? " (RDMA)" : "", opt.nic, opt.disc,
	       opt.rounds,
	       opt.heap ? "heap (malloc)" : "provider (VipDpdkAllocMem)", opt.seed,
	       opt.mode == M_SERVER && !opt.seed_set ? " (the client's is used)" : "",
	       getenv("VIAD_SOCKET") ? getenv("VIAD_SOCKET") : "(default)");
	if (opt.mode == M_SERVER) {
		rc = ep_open(&e, "server", opt.seed ^ 0x5e5e5e5eULL, true);
		if (rc == 0)
			rc = wait_link(&e);
		if (rc == 0) {
			print_port(&e);
			rc = opt.rdma ? run_rdma_server(&e) : run_server(&e);
		}
		ep_close(&e);
	} else if (opt.mode == M_CLIENT) {
		char disc[64];

		snprintf(disc, sizeof(disc), "%s-client-%ld", opt.disc, (long)getpid());
		rc = ep_open(&e, "client", opt.seed ^ 0xc1c1c1c1ULL, false);
		if (rc == 0)
			rc = wait_link(&e);
		if (rc == 0) {
			print_port(&e);
			rc = opt.rdma ? run_rdma_client(&e, opt.peer_mac, disc)
				      : run_client(&e, opt.peer_mac, disc);
		}
		ep_close(&e);
	} else {
		static struct server_arg sa;
		pthread_t t;
		char disc[64];

		/* the server gives up soon after the client could have connected */
		if (opt.wait_ms > opt.connect_ms + 5000)
			opt.wait_ms = opt.connect_ms + 5000;
		snprintf(disc, sizeof(disc), "%s-client-%ld", opt.disc, (long)getpid());
		memset(&e, 0, sizeof(e));
		rc = ep_open(&sa.e, "server", opt.seed ^ 0x5e5e5e5eULL, true);
		if (rc == 0)
			rc = ep_open(&e, "client", opt.seed ^ 0xc1c1c1c1ULL, false);
		if (rc == 0)
			rc = wait_link(&e);
		if (rc == 0) {
			print_port(&e);
			if (pthread_create(&t, NULL, server_thread, &sa) != 0) {
				perror("pthread_create");
				return 1;
			}
			rc = opt.rdma ? run_rdma_client(&e, e.na.LocalNicAddress, disc)
				      : run_client(&e, e.na.LocalNicAddress, disc);
			/* the server stops on our disconnect (ep_close) at the latest */
			ep_close(&e);
			pthread_join(t, NULL);
			if (sa.rc != 0)
				rc = -1;
		} else {
			ep_close(&e);
		}
		ep_close(&sa.e);
	}
	if (zero_copy_wrong)
		rc = -1;
	printf("topo_check %s: %s\n", mode_name, rc == 0 ? "PASS" : "FAIL");
	return rc == 0 ? 0 : 1;
}
